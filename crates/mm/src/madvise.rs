//! The `mmap` flags beyond [`MapFlags`](crate::MapFlags) and the `madvise` advice that changes VMA
//! flags (and with them, merging).

use crate::placement::Placement;
use crate::{Error, Mm, Prot, VmFlags, Why, PAGE_SIZE};

/// Every `mmap` flag the model understands, with the placement policy to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmapOptions {
    /// `MAP_FIXED`: map at `addr`, replacing whatever is there.
    pub fixed: bool,
    /// `MAP_FIXED_NOREPLACE`: map at `addr`, `EEXIST` if anything is there.
    pub fixed_noreplace: bool,
    /// `MAP_SHARED` (else `MAP_PRIVATE`).
    pub shared: bool,
    /// `MAP_NORESERVE`: a private writable mapping gets no `VM_ACCOUNT`.
    pub noreserve: bool,
    /// `MAP_STACK`: `VM_NOHUGEPAGE` (Linux >= 6.7).
    pub stack: bool,
    /// `MAP_DROPPABLE` (the map type 0x08, anonymous only): `VM_DROPPABLE`, with
    /// `VM_NORESERVE`, `VM_WIPEONFORK` and `VM_DONTDUMP` (`do_mmap`: droppable
    /// pages are neither reserved, nor copied by fork, nor dumped).
    pub droppable: bool,
    /// Where a non-fixed mapping goes.
    pub placement: Placement,
}

impl From<crate::MapFlags> for MmapOptions {
    fn from(f: crate::MapFlags) -> MmapOptions {
        MmapOptions {
            fixed: f.fixed,
            shared: f.shared,
            ..MmapOptions::default()
        }
    }
}

impl MmapOptions {
    /// The VMA flags a new mapping with protection `prot` gets.
    pub fn vm_flags(&self, prot: Prot) -> VmFlags {
        let noreserve = self.noreserve || self.droppable;
        VmFlags {
            shared: self.shared,
            account: !self.shared && prot.write && !noreserve,
            noreserve,
            nohugepage: self.stack,
            wipeonfork: self.droppable,
            dontdump: self.droppable,
            droppable: self.droppable,
            ..VmFlags::default()
        }
    }
}

/// `madvise` advice. Only the ones that change VMA flags change the model; the
/// others (`MADV_DONTNEED`, `MADV_FREE`, `MADV_WILLNEED`, ...) touch pages only and
/// are [`Advice::PagesOnly`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advice {
    /// `MADV_HUGEPAGE`: set `VM_HUGEPAGE`, clear `VM_NOHUGEPAGE`.
    HugePage,
    /// `MADV_NOHUGEPAGE`: set `VM_NOHUGEPAGE`, clear `VM_HUGEPAGE`.
    NoHugePage,
    /// `MADV_DONTFORK`: set `VM_DONTCOPY`.
    DontFork,
    /// `MADV_DOFORK`: clear `VM_DONTCOPY`.
    DoFork,
    /// `MADV_DONTDUMP`: set `VM_DONTDUMP`.
    DontDump,
    /// `MADV_DODUMP`: clear `VM_DONTDUMP`.
    DoDump,
    /// `MADV_WIPEONFORK` (private anonymous only).
    WipeOnFork,
    /// `MADV_KEEPONFORK`.
    KeepOnFork,
    /// Advice about pages, not VMAs: checked for a mapped range, changes nothing.
    PagesOnly,
}

impl Advice {
    /// The advice for Linux's `MADV_*` number, `None` if the model cannot express it
    /// (`MADV_RANDOM`/`MADV_SEQUENTIAL` and `MADV_MERGEABLE`, whose VMA flags the model
    /// lacks, and the rest).
    pub fn from_linux(n: u64) -> Option<Advice> {
        Some(match n {
            0 | 3 | 4 | 8 | 9 | 20..=25 => Advice::PagesOnly,
            14 => Advice::HugePage,
            15 => Advice::NoHugePage,
            16 => Advice::DontDump,
            17 => Advice::DoDump,
            18 => Advice::WipeOnFork,
            19 => Advice::KeepOnFork,
            10 => Advice::DontFork,
            11 => Advice::DoFork,
            _ => return None,
        })
    }

    /// The flags after this advice, or `None` if it does not apply to this VMA
    /// (`EINVAL`).
    fn apply(self, f: VmFlags, anon_private: bool) -> Option<VmFlags> {
        let mut f = f;
        match self {
            Advice::HugePage => (f.hugepage, f.nohugepage) = (true, false),
            Advice::NoHugePage => (f.hugepage, f.nohugepage) = (false, true),
            Advice::DontFork => f.dontcopy = true,
            Advice::DoFork => f.dontcopy = false,
            Advice::DontDump => f.dontdump = true,
            // A droppable area stays out of core dumps and forks (`madvise_vma_behavior`).
            Advice::DoDump | Advice::KeepOnFork if f.droppable => return None,
            Advice::DoDump => f.dontdump = false,
            Advice::WipeOnFork if !anon_private => return None,
            Advice::WipeOnFork => f.wipeonfork = true,
            Advice::KeepOnFork => f.wipeonfork = false,
            Advice::PagesOnly => {}
        }
        Some(f)
    }
}

impl Mm {
    /// `madvise(start, len, advice)`: sets the VMA flags `advice` names on every page
    /// of the range, splitting VMAs at its edges and merging the result with
    /// compatible neighbours, as `madvise_update_vma` does. Errors (nothing changed):
    /// `Invalid` for a bad range, an advice that does not apply to a VMA in it, or a
    /// change that would cut a special mapping ([`crate::Vma::is_special`]),
    /// `NotMapped` if a page of the range is unmapped (Linux applies the advice to
    /// the mapped parts and then returns `ENOMEM`; the model changes nothing).
    ///
    /// ```
    /// use mm::{Advice, CallPattern, Files, MapFlags, Mm, Prot, PAGE_SIZE};
    /// use rmap::{Design, Topology};
    ///
    /// let mm = Mm::new(Files::new(Design::Linux, Topology::Os, CallPattern::PerVma));
    /// let a = mm.mmap(0, 4 * PAGE_SIZE, Prot::RW, MapFlags::default(), None)?;
    /// mm.madvise(a, 2 * PAGE_SIZE, Advice::DontFork)?;
    /// assert_eq!(mm.vmas().len(), 2); // split at the advised range's edge
    /// assert!(mm.find(a).unwrap().flags.dontcopy);
    /// assert!(!mm.find(a + 2 * PAGE_SIZE).unwrap().flags.dontcopy);
    /// assert!(mm.madvise(a, 64 * PAGE_SIZE, Advice::DoFork).is_err()); // runs past the mapping
    /// # Ok::<(), mm::Error>(())
    /// ```
    pub fn madvise(&self, start: u64, len: u64, advice: Advice) -> Result<(), Error> {
        let end = Self::check_range(start, len)?;
        let mut st = self.state.lock();
        let mut pieces = Vec::new();
        let mut changed = false;
        let mut at = start;
        for v in self.overlapping(start, end) {
            if v.start > at {
                break;
            }
            let anon_private = v.file().is_none() && !v.flags.shared;
            let flags = advice.apply(v.flags, anon_private).ok_or(Error::Invalid {
                what: "advice does not apply to this mapping",
            })?;
            changed |= flags != v.flags;
            let mut p = v.slice(v.start.max(start), v.end.min(end));
            p.flags = flags;
            at = p.end;
            pieces.push(p);
        }
        if at < end {
            return Err(Error::NotMapped {
                start,
                len: end - start,
            });
        }
        if changed {
            self.refuse_special_split(&st, start, end, |v| {
                advice.apply(v.flags, false) != Some(v.flags)
            })?;
            self.place(&mut st, pieces, Why::Protect);
        }
        debug_assert_eq!(start % PAGE_SIZE, 0);
        Ok(())
    }
}
