//! `mremap`: shrink, grow in place, move (`MREMAP_MAYMOVE`, `MREMAP_FIXED`), with
//! the moved file VMAs relinked in their files' reverse maps.

use crate::layout::TASK_SIZE;
use crate::placement::{self, Placement};
use crate::{align_up, Error, Mm, Why, PAGE_SIZE};

/// `mremap` flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MremapFlags {
    /// `MREMAP_MAYMOVE`: the kernel may move the mapping if it cannot grow in place.
    pub may_move: bool,
    /// `MREMAP_FIXED`: move to `new_addr`, replacing whatever is there (needs
    /// `may_move`).
    pub fixed: bool,
    /// `MREMAP_DONTUNMAP`: not modelled (`Invalid`).
    pub dont_unmap: bool,
}

impl Mm {
    /// `mremap(old_addr, old_len, new_len, flags, new_addr)`, placing a moved mapping
    /// with `placement`. Returns the mapping's new start.
    ///
    /// - `new_len <= old_len` without `MREMAP_FIXED`: the tail
    ///   `[old_addr + new_len, old_addr + old_len)` is unmapped, the start returned.
    /// - Growing: `[old_addr, old_addr + old_len)` must lie in one VMA; if it ends at
    ///   the VMA's end and the pages after it are free, the VMA grows in place
    ///   (merging with a compatible next VMA); else, with `MREMAP_MAYMOVE`, the piece
    ///   moves to a new area (the kernel's `get_unmapped_area`, huge-page alignment
    ///   per `placement`) with its protection, flags and file offset, and the old range
    ///   is unmapped. A moved file VMA leaves its old reverse-map entry and gets a new
    ///   one.
    /// - `MREMAP_FIXED`: `[new_addr, new_addr + new_len)` is unmapped first, then the
    ///   piece moves there.
    ///
    /// Errors (nothing changed): `Invalid` for unaligned or overflowing ranges,
    /// `new_len == 0`, `MREMAP_FIXED` without `MREMAP_MAYMOVE`, overlapping old and new
    /// ranges, `old_len == 0` and `MREMAP_DONTUNMAP` (not modelled), a part of a
    /// special mapping ([`crate::Vma::is_special`]) or a new range cutting one;
    /// `Fault` when no VMA contains `old_addr`, the old range runs past its VMA, or
    /// a special mapping would grow (`EFAULT`);
    /// `NoSpace` when the mapping cannot grow in place and may not move, or no gap
    /// fits (`ENOMEM`).
    ///
    /// ```
    /// use mm::{CallPattern, Files, MapFlags, MremapFlags, Mm, Placement, Prot, PAGE_SIZE};
    /// use rmap::{Design, Topology};
    ///
    /// let mm = Mm::new(Files::new(Design::Linux, Topology::Os, CallPattern::PerVma));
    /// let a = mm.mmap(0, 2 * PAGE_SIZE, Prot::RW, MapFlags::default(), None)?;
    /// // Shrinking unmaps the tail.
    /// let same = mm.mremap(a, 2 * PAGE_SIZE, PAGE_SIZE, MremapFlags::default(), 0, Placement::default())?;
    /// assert_eq!(same, a);
    /// assert!(mm.find(a + PAGE_SIZE).is_none());
    /// // Growing to 8 pages, allowed to move.
    /// let may_move = MremapFlags { may_move: true, ..MremapFlags::default() };
    /// let b = mm.mremap(a, PAGE_SIZE, 8 * PAGE_SIZE, may_move, 0, Placement::default())?;
    /// assert_eq!(mm.find(b).unwrap().len(), 8 * PAGE_SIZE);
    /// assert_eq!(mm.vmas().len(), 1);
    /// # Ok::<(), mm::Error>(())
    /// ```
    pub fn mremap(
        &self,
        old_addr: u64,
        old_len: u64,
        new_len: u64,
        flags: MremapFlags,
        new_addr: u64,
        placement: Placement,
    ) -> Result<u64, Error> {
        let inval = |what| Err(Error::Invalid { what });
        if flags.dont_unmap {
            return inval("MREMAP_DONTUNMAP is not modelled");
        }
        if flags.fixed && !flags.may_move {
            return inval("MREMAP_FIXED without MREMAP_MAYMOVE");
        }
        if old_addr % PAGE_SIZE != 0 {
            return inval("address not page aligned");
        }
        let (Some(old_len), Some(new_len)) = (align_up(old_len), align_up(new_len)) else {
            return inval("length overflows");
        };
        if new_len == 0 {
            return inval("zero new length");
        }
        if old_len == 0 {
            return inval("old_len 0 (duplicating a shared mapping) is not modelled");
        }
        let old_end = match old_addr.checked_add(old_len) {
            Some(e) if e <= TASK_SIZE => e,
            _ => return inval("old range beyond the user address space"),
        };
        if flags.fixed {
            if new_addr % PAGE_SIZE != 0 {
                return inval("new address not page aligned");
            }
            let new_end = match new_addr.checked_add(new_len) {
                Some(e) if e <= TASK_SIZE => e,
                _ => return inval("new range beyond the user address space"),
            };
            if new_addr < crate::layout::MMAP_MIN_ADDR {
                return inval("new address below mmap_min_addr");
            }
            if new_addr < old_end && old_addr < new_end {
                return inval("old and new ranges overlap");
            }
        }
        let mut st = self.state.lock();
        let Some(vma) = self.tree.load(old_addr).map(|e| e.value().clone()) else {
            return Err(Error::Fault { addr: old_addr });
        };
        if vma.is_special() {
            // VM_DONTEXPAND: no growing (EFAULT); and no piece of it moves or goes.
            if new_len > old_len {
                return Err(Error::Fault { addr: old_addr });
            }
            if old_addr != vma.start || old_end != vma.end || new_len != old_len {
                return inval("would split a special mapping ([vdso], [vvar])");
            }
        }
        if flags.fixed {
            self.refuse_special_split(&st, new_addr, new_addr + new_len, |_| true)?;
        }
        if !flags.fixed && new_len <= old_len {
            if new_len < old_len {
                self.replace(
                    &mut st,
                    old_addr + new_len,
                    old_end,
                    Vec::new(),
                    Why::Unmap,
                    (old_addr + new_len, old_end),
                );
            }
            return Ok(old_addr);
        }
        // From here the piece [old_addr, old_addr + keep) of `vma` stays or moves.
        let keep = old_len.min(new_len);
        if old_addr + keep > vma.end {
            return Err(Error::Fault { addr: old_addr });
        }
        if !flags.fixed {
            let grow_end = old_addr.checked_add(new_len).filter(|&e| e <= TASK_SIZE);
            if let Some(grow_end) = grow_end {
                if old_end == vma.end && !self.occupied(old_end, grow_end) {
                    let mut ext = vma.slice(vma.start, vma.end);
                    ext.start = old_end;
                    ext.end = grow_end;
                    ext.backing = shift_backing(&vma, old_end);
                    self.place(&mut st, vec![ext], Why::Map);
                    return Ok(old_addr);
                }
            }
            if !flags.may_move {
                return Err(Error::NoSpace { len: new_len });
            }
        }
        let target = if flags.fixed {
            new_addr
        } else {
            let req = placement::Request {
                top: st.mmap_base,
                hint: 0,
                len: new_len,
                pgoff: vma
                    .file()
                    .map(|(_, p)| p + (old_addr - vma.start) / PAGE_SIZE),
                shared: vma.flags.shared,
                nohugepage: vma.flags.nohugepage,
                // (`MAP_32BIT` leaves no mark on the VMA: a move goes anywhere.)
                low: false,
            };
            placement::unmapped_area(&self.tree, req, placement)?
        };
        let mut moved = vma.slice(old_addr, old_addr + keep);
        moved.backing = shift_backing(&vma, old_addr);
        moved.start = target;
        moved.end = target + new_len;
        if flags.fixed {
            self.replace(
                &mut st,
                target,
                target + new_len,
                Vec::new(),
                Why::Unmap,
                (target, target + new_len),
            );
        }
        self.replace(
            &mut st,
            old_addr,
            old_end,
            Vec::new(),
            Why::Unmap,
            (old_addr, old_end),
        );
        self.place(&mut st, vec![moved], Why::Map);
        Ok(target)
    }
}

/// The backing of `vma`'s page at `addr` (the file offset moved along).
fn shift_backing(vma: &crate::Vma, addr: u64) -> crate::Backing {
    match &vma.backing {
        crate::Backing::File { file, pgoff } => crate::Backing::File {
            file: file.clone(),
            pgoff: pgoff + (addr - vma.start) / PAGE_SIZE,
        },
        b => b.clone(),
    }
}
