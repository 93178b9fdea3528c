//! `mremap`: shrink, grow in place, move (`MREMAP_MAYMOVE`, `MREMAP_FIXED`), with
//! the moved file VMAs relinked in their files' reverse maps.

use crate::layout::TASK_SIZE;
use crate::placement::{self, Placement};
use crate::{align_up, Error, Mm, Vma, Why, PAGE_SIZE};

/// `mremap` flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MremapFlags {
    /// `MREMAP_MAYMOVE`: the kernel may move the mapping if it cannot grow in place.
    pub may_move: bool,
    /// `MREMAP_FIXED`: move to `new_addr`, replacing whatever is there (needs
    /// `may_move`).
    pub fixed: bool,
    /// `MREMAP_DONTUNMAP` (needs `may_move` and `new_len == old_len`): the pages
    /// move to a new area and the old range stays mapped, empty, and unlocked;
    /// `new_addr` is a hint unless `fixed`.
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
    /// - `MREMAP_DONTUNMAP` (with `MREMAP_MAYMOVE` and `new_len == old_len`): the
    ///   piece is copied to a new area (at `new_addr` with `MREMAP_FIXED`, else where
    ///   `new_addr` as a hint allows) and the old range stays mapped; the lock bits
    ///   of the area it is in are cleared (the whole area's, as Linux 6.18 does).
    /// - `old_len == 0` on a shared mapping: a second mapping of `new_len` bytes of
    ///   the same object, from the page at `old_addr` (the "duplicate shm area"
    ///   case); the old one stays.
    ///
    /// Errors (nothing changed): `Invalid` for unaligned or overflowing ranges,
    /// `new_len == 0`, `MREMAP_FIXED` without `MREMAP_MAYMOVE`, `MREMAP_DONTUNMAP`
    /// without it or with a length change, overlapping old and new ranges,
    /// `old_len == 0` on a private mapping, a part of a special mapping
    /// ([`crate::Vma::is_special`]) or a new range cutting one;
    /// `Fault` when no VMA contains `old_addr`, the old range runs past its VMA, or
    /// a special mapping would grow (`EFAULT`);
    /// `NoSpace` when the mapping cannot grow in place and may not move, or no gap
    /// fits (`ENOMEM`); `Sealed` (`EPERM`) for a sealed mapping or a fixed target
    /// over one ([`crate::seal`]).
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
        if flags.fixed && !flags.may_move {
            return inval("MREMAP_FIXED without MREMAP_MAYMOVE");
        }
        // Compared before the lengths are rounded up, as the kernel does.
        if flags.dont_unmap && (!flags.may_move || old_len != new_len) {
            return inval("MREMAP_DONTUNMAP without MREMAP_MAYMOVE, or with a new length");
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
        let old_end = match old_addr.checked_add(old_len) {
            Some(e) if e <= TASK_SIZE => e,
            _ => return inval("old range beyond the user address space"),
        };
        // `mremap_to` (a fixed target or MREMAP_DONTUNMAP) checks `new_addr` even
        // when it is only a hint.
        if flags.fixed || flags.dont_unmap {
            if new_addr % PAGE_SIZE != 0 {
                return inval("new address not page aligned");
            }
            let new_end = match new_addr.checked_add(new_len) {
                Some(e) if e <= TASK_SIZE => e,
                _ => return inval("new range beyond the user address space"),
            };
            if flags.fixed && new_addr < crate::layout::MMAP_MIN_ADDR {
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
        if vma.flags.sealed {
            return Err(Error::Sealed {
                start: old_addr,
                len: old_len,
            });
        }
        if old_len == 0 && !vma.flags.shared {
            // `vma_to_resize`: a copy of private memory would share nothing with it.
            return inval("old_len 0 duplicates only a shared mapping");
        }
        if vma.is_special() {
            // VM_DONTEXPAND: no growing (EFAULT); and no piece of it moves or goes.
            if flags.dont_unmap {
                return inval("MREMAP_DONTUNMAP of a special mapping ([vdso], [vvar])");
            }
            if new_len > old_len {
                return Err(Error::Fault { addr: old_addr });
            }
            if old_addr != vma.start || old_end != vma.end || new_len != old_len {
                return inval("would split a special mapping ([vdso], [vvar])");
            }
        }
        if flags.fixed {
            self.refuse_special_split(&st, new_addr, new_addr + new_len, |_| true)?;
            self.refuse_sealed_unmap(&mut st, new_addr, new_addr + new_len)?;
        }
        if !flags.fixed && !flags.dont_unmap && new_len <= old_len {
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
        // From here the piece [old_addr, old_addr + keep) of `vma` stays or moves
        // (with old_len 0: none of it; a new mapping of the same object is made).
        let keep = old_len.min(new_len);
        if old_addr + keep > vma.end {
            return Err(Error::Fault { addr: old_addr });
        }
        if !flags.fixed && !flags.dont_unmap {
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
                // Only MREMAP_DONTUNMAP passes the caller's address on as a hint.
                hint: if flags.dont_unmap { new_addr } else { 0 },
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
        let moved = Vma {
            start: target,
            end: target + new_len,
            prot: vma.prot,
            flags: vma.flags,
            backing: shift_backing(&vma, old_addr),
            link: None,
        };
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
        if flags.dont_unmap {
            // The old range stays mapped (its pages moved away), and the lock
            // bits come off the whole area it is in: Linux 6.18 clears them on
            // the VMA without splitting it first, as a recorded C program shows
            // (6.12's `move_vma` split a locked VMA at the range first).
            // The flags change in place: no merge with a neighbour they match now.
            if vma.flags.locked {
                let mut stays = vma.slice(vma.start, vma.end);
                stays.flags.locked = false;
                stays.flags.lockonfault = false;
                self.replace_in_place(&mut st, &vma, vec![stays]);
            }
        } else if old_len > 0 {
            self.replace(
                &mut st,
                old_addr,
                old_end,
                Vec::new(),
                Why::Unmap,
                (old_addr, old_end),
            );
        }
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
