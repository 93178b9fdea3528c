//! The `mmap` flags beyond [`MapFlags`](crate::MapFlags) and the `madvise` advice that changes VMA
//! flags (and with them, merging); `Mm::change_flags`, the flag change of a range
//! that `madvise` and `mlock` ([`crate::mlock`]) share.

use crate::placement::Placement;
use crate::{Error, Mm, Prot, State, VmFlags, Vma, Why, PAGE_SIZE};

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
    /// `MAP_32BIT`: placed below 2 GiB ([`crate::placement::LOW_WINDOW`]).
    pub low32: bool,
    /// `MAP_LOCKED`: `VM_LOCKED` (`calc_vm_flag_bits`), as after an `mlock` of the
    /// new area.
    pub locked: bool,
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
    /// The VMA flags a new mapping with protection `prot` gets (before `do_mmap` adds
    /// the space's default flags: see [`Mm::def_flags`]).
    pub fn vm_flags(&self, prot: Prot) -> VmFlags {
        let noreserve = self.noreserve || self.droppable;
        VmFlags {
            shared: self.shared,
            account: !self.shared && prot.write && !noreserve,
            noreserve,
            nohugepage: self.stack,
            locked: self.locked,
            wipeonfork: self.droppable,
            dontdump: self.droppable,
            droppable: self.droppable,
            ..VmFlags::default()
        }
    }
}

/// `madvise` advice. Only the ones that change VMA flags change the model; the
/// others (`MADV_WILLNEED`, `MADV_COLD`, ...) touch pages only and are
/// [`Advice::PagesOnly`], or [`Advice::Discard`], [`Advice::Free`] and
/// [`Advice::Remove`], which some areas refuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advice {
    /// `MADV_NORMAL`: clear `VM_RAND_READ` and `VM_SEQ_READ`.
    Normal,
    /// `MADV_RANDOM`: set `VM_RAND_READ`, clear `VM_SEQ_READ`.
    Random,
    /// `MADV_SEQUENTIAL`: set `VM_SEQ_READ`, clear `VM_RAND_READ`.
    Sequential,
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
    /// `MADV_MERGEABLE` (`ksm_madvise`): set `VM_MERGEABLE` on each area KSM can
    /// handle; a shared or special one ([`Vma::is_special`]; in the kernel also
    /// `VM_PFNMAP`, `VM_IO`, `VM_HUGETLB`, `VM_MIXEDMAP`: `vma_ksm_compatible`) is left
    /// as it is, without error. (A kernel without `CONFIG_KSM` answers `EINVAL`.)
    Mergeable,
    /// `MADV_UNMERGEABLE`: clear `VM_MERGEABLE`.
    Unmergeable,
    /// `MADV_DONTNEED`: about pages, but refused (`EINVAL`) on a `VM_LOCKED` or
    /// `VM_PFNMAP` area (`[vvar]`, `[vvar_vclock]`: `madvise_dontneed_free_valid_vma`).
    /// Changes nothing.
    Discard,
    /// `MADV_FREE`: as [`Advice::Discard`], and only on private anonymous memory
    /// (`madvise_free_single_vma`: `EINVAL` on a file's or shared memory).
    Free,
    /// `MADV_REMOVE` (`madvise_remove`): `EINVAL` on a locked area or one without a
    /// file (private anonymous memory), `EACCES` on one not shared. (The kernel also
    /// wants `VM_MAYWRITE`, which follows the descriptor's open mode, not in a
    /// trace: not checked.) Changes nothing.
    Remove,
    /// `MADV_GUARD_INSTALL` (Linux >= 6.13): makes the range's pages fault, in the
    /// page tables, without a VMA of its own (the maps show no split); refused
    /// (`EINVAL`) on a locked or special area ([`Vma::is_special`]; in the kernel
    /// also `VM_PFNMAP`, `VM_IO`, `VM_MIXEDMAP` and hugetlb). Changes no VMA.
    GuardInstall,
    /// `MADV_GUARD_REMOVE`: undoes [`Advice::GuardInstall`]; refused on a special
    /// area, allowed on a locked one. Changes no VMA.
    GuardRemove,
    /// Advice about pages, not VMAs: checked for a mapped range, changes nothing.
    PagesOnly,
}

impl Advice {
    /// The advice for Linux's `MADV_*` number, `None` if the model cannot express it
    /// (numbers Linux 6.12 does not have, but for the guard advice of 6.13, and
    /// `MADV_HWPOISON`/`MADV_SOFT_OFFLINE`).
    pub fn from_linux(n: u64) -> Option<Advice> {
        Some(match n {
            0 => Advice::Normal,
            1 => Advice::Random,
            2 => Advice::Sequential,
            4 => Advice::Discard,
            8 => Advice::Free,
            9 => Advice::Remove,
            3 | 20..=25 => Advice::PagesOnly,
            12 => Advice::Mergeable,
            13 => Advice::Unmergeable,
            14 => Advice::HugePage,
            15 => Advice::NoHugePage,
            16 => Advice::DontDump,
            17 => Advice::DoDump,
            18 => Advice::WipeOnFork,
            19 => Advice::KeepOnFork,
            10 => Advice::DontFork,
            11 => Advice::DoFork,
            102 => Advice::GuardInstall,
            103 => Advice::GuardRemove,
            _ => return None,
        })
    }

    /// The flags `v` has after this advice (`madvise_vma_behavior`), or `Invalid`
    /// (`EINVAL`) if the advice does not apply to it.
    fn apply(self, v: &Vma) -> Result<VmFlags, Error> {
        let mut f = v.flags;
        // `can_modify_vma_madv`: sealed read-only anonymous memory keeps its pages.
        let discards = matches!(
            self,
            Advice::Discard | Advice::Free | Advice::Remove | Advice::DontFork | Advice::WipeOnFork
        );
        if discards && f.sealed && v.file().is_none() && !v.prot.write {
            return Err(Error::Sealed {
                start: v.start,
                len: v.len(),
            });
        }
        match self {
            Advice::Normal => (f.rand_read, f.seq_read) = (false, false),
            Advice::Random => (f.rand_read, f.seq_read) = (true, false),
            Advice::Sequential => (f.rand_read, f.seq_read) = (false, true),
            Advice::HugePage => (f.hugepage, f.nohugepage) = (true, false),
            Advice::NoHugePage => (f.hugepage, f.nohugepage) = (false, true),
            Advice::DontFork => f.dontcopy = true,
            Advice::DoFork => f.dontcopy = false,
            Advice::DontDump => f.dontdump = true,
            // A droppable area stays out of core dumps and forks (`madvise_vma_behavior`).
            Advice::DoDump | Advice::KeepOnFork if f.droppable => {
                return Err(Error::Invalid {
                    what: "MADV_DODUMP/MADV_KEEPONFORK on MAP_DROPPABLE memory",
                })
            }
            Advice::DoDump => f.dontdump = false,
            Advice::WipeOnFork if v.file().is_some() || f.shared => {
                return Err(Error::Invalid {
                    what: "advice does not apply to this mapping",
                })
            }
            Advice::WipeOnFork => f.wipeonfork = true,
            Advice::KeepOnFork => f.wipeonfork = false,
            // `vma_ksm_compatible`: KSM leaves shared and special memory alone.
            Advice::Mergeable if f.shared || v.is_special() => {}
            Advice::Mergeable => f.mergeable = true,
            Advice::Unmergeable => f.mergeable = false,
            Advice::Discard | Advice::Free | Advice::Remove if f.locked => {
                return Err(Error::Invalid {
                    what: "MADV_DONTNEED/MADV_FREE/MADV_REMOVE on a locked area",
                })
            }
            Advice::Discard | Advice::Free if v.is_pfnmap() => {
                return Err(Error::Invalid {
                    what: "MADV_DONTNEED/MADV_FREE on a VM_PFNMAP area",
                })
            }
            Advice::Free if v.file().is_some() || f.shared => {
                return Err(Error::Invalid {
                    what: "MADV_FREE of memory other than private anonymous",
                })
            }
            Advice::Remove if v.file().is_none() || !f.shared => {
                return Err(Error::Invalid {
                    what: "MADV_REMOVE of memory other than a shared file's",
                })
            }
            // `is_valid_guard_vma`: the answers Linux 6.18 gave a recorded C program.
            Advice::GuardInstall if f.locked || v.is_special() => {
                return Err(Error::Invalid {
                    what: "MADV_GUARD_INSTALL on a locked or special area",
                })
            }
            Advice::GuardRemove if v.is_special() => {
                return Err(Error::Invalid {
                    what: "MADV_GUARD_REMOVE on a special area",
                })
            }
            Advice::Discard
            | Advice::Free
            | Advice::Remove
            | Advice::GuardInstall
            | Advice::GuardRemove
            | Advice::PagesOnly => {}
        }
        Ok(f)
    }
}

impl Mm {
    /// `madvise(start, len, advice)`: sets the VMA flags `advice` names on every page
    /// of the range, splitting VMAs at its edges and merging the result with
    /// compatible neighbours, as `madvise_update_vma` does (the flag change `mlock`
    /// shares).
    /// Errors (nothing changed): `Invalid` for a bad range, an advice that does not
    /// apply to a VMA in it, or a change that would cut a special mapping
    /// ([`crate::Vma::is_special`]), `NotMapped` if a page of the range is unmapped
    /// (Linux applies the advice to the mapped parts and then returns `ENOMEM`; the
    /// model changes nothing). A length of 0 at an aligned address is `Ok` and changes
    /// nothing (`do_madvise`).
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
        if Self::empty_range(start, len)? {
            return Ok(());
        }
        let end = Self::check_range(start, len)?;
        debug_assert_eq!(start % PAGE_SIZE, 0);
        self.change_flags(start, end, |v| advice.apply(v))
    }

    /// Gives each VMA of `[start, end)` (page aligned) the flags `new` returns for it,
    /// splitting the VMAs that stick out of the range where their flags change and
    /// merging each changed piece with compatible neighbours: the kernel's walk of
    /// `madvise_walk_vmas` / `apply_vma_lock_flags` with `vma_modify_flags` on each
    /// VMA whose flags change (one that keeps its flags is not touched). Errors
    /// (nothing changed): the first error `new` returns, in address order; else
    /// `NotMapped` if a page of the range is unmapped (Linux changes the VMAs before
    /// the hole, or, for `madvise`, all the mapped ones, then fails with `ENOMEM`;
    /// the model changes nothing); `Invalid` if a change would cut a special
    /// mapping (`special_mapping_split`).
    pub(crate) fn change_flags(
        &self,
        start: u64,
        end: u64,
        new: impl Fn(&Vma) -> Result<VmFlags, Error>,
    ) -> Result<(), Error> {
        let mut st = self.state.lock();
        let mut pieces = Vec::new();
        let mut at = start;
        let mut hole = false;
        for v in self.overlapping(start, end) {
            hole |= v.start > at;
            let flags = new(&v)?;
            let mut p = v.slice(v.start.max(start), v.end.min(end));
            let changed = flags != v.flags;
            p.flags = flags;
            at = p.end;
            pieces.push((p, changed));
        }
        if hole || at < end {
            return Err(Error::NotMapped {
                start,
                len: end - start,
            });
        }
        if pieces.iter().any(|(_, changed)| *changed) {
            self.refuse_special_split(&st, start, end, |v| new(v).is_ok_and(|f| f != v.flags))?;
            self.place_changed(&mut st, pieces);
        }
        Ok(())
    }

    /// Places each run of adjacent changed pieces of `pieces` (sorted VMA pieces,
    /// each with whether its flags changed) with [`Why::Protect`], merging it with
    /// its neighbours; the unchanged pieces stay as they are.
    pub(crate) fn place_changed(&self, st: &mut State, pieces: Vec<(Vma, bool)>) {
        let mut run: Vec<Vma> = Vec::new();
        for (p, changed) in pieces {
            let run_ends = !changed || run.last().is_some_and(|l| l.end != p.start);
            if run_ends && !run.is_empty() {
                self.place(st, std::mem::take(&mut run), Why::Protect);
            }
            if changed {
                run.push(p);
            }
        }
        if !run.is_empty() {
            self.place(st, run, Why::Protect);
        }
    }
}
