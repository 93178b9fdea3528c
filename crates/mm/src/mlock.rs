//! `mlock`, `mlock2`, `munlock`, `mlockall` and `munlockall` (Linux 6.12
//! `mm/mlock.c`): the lock bits of VMAs (`VM_LOCKED`, `VM_LOCKONFAULT`:
//! [`VmFlags::locked`], [`VmFlags::lockonfault`]) and of the space's default flags
//! (`mm->def_flags`, which `mlockall(MCL_FUTURE)` sets and every later `mmap` and
//! `brk` growth takes: [`Mm::def_flags`]).
//!
//! The lock bits are VMA flags like the others: locking part of an area splits it,
//! and a locked area does not merge with an unlocked neighbour, so `/proc/PID/maps`
//! shows them. What locking does to pages (faulting them in, keeping them in RAM)
//! the model has no use for, and `RLIMIT_MEMLOCK` is not modelled: a replay follows
//! the recorded result ([`crate::replay`]).
//!
//! ```
//! use mm::mlock::{MCL_CURRENT, MCL_FUTURE};
//! use mm::{CallPattern, Files, MapFlags, Mm, Prot, PAGE_SIZE};
//! use rmap::{Design, Topology};
//!
//! let mm = Mm::new(Files::new(Design::Linux, Topology::Os, CallPattern::PerVma));
//! let a = mm.mmap(0, 4 * PAGE_SIZE, Prot::RW, MapFlags::default(), None)?;
//! mm.mlock(a + PAGE_SIZE, PAGE_SIZE)?;
//! assert_eq!(mm.vmas().len(), 3); // unlocked, locked, unlocked
//! mm.munlock(a, 4 * PAGE_SIZE)?;
//! assert_eq!(mm.vmas().len(), 1); // merged again
//! mm.mlockall(MCL_CURRENT | MCL_FUTURE)?;
//! assert!(mm.def_flags().locked && mm.find(a).unwrap().flags.locked);
//! mm.munlockall();
//! assert!(!mm.def_flags().locked && !mm.find(a).unwrap().flags.locked);
//! # Ok::<(), mm::Error>(())
//! ```

use crate::{align_up, Error, Mm, VmFlags, Vma, PAGE_SIZE};

/// `mlock2`'s `MLOCK_ONFAULT`: lock pages as they fault in (`VM_LOCKONFAULT`).
pub const MLOCK_ONFAULT: u64 = 1;
/// `mlockall`'s `MCL_CURRENT`: lock every area mapped now.
pub const MCL_CURRENT: u64 = 1;
/// `mlockall`'s `MCL_FUTURE`: lock every area mapped from now on.
pub const MCL_FUTURE: u64 = 2;
/// `mlockall`'s `MCL_ONFAULT`: with the others, lock pages as they fault in.
pub const MCL_ONFAULT: u64 = 4;

/// The lock bits `VM_LOCKED`, plus `VM_LOCKONFAULT` if `onfault`.
fn locked(onfault: bool) -> VmFlags {
    VmFlags {
        locked: true,
        lockonfault: onfault,
        ..VmFlags::default()
    }
}

/// The page range an `mlock(start, len)` covers: `start` rounded down to its page,
/// the length grown by the offset in that page and rounded up (`do_mlock`,
/// `munlock`); `None` for an empty range, which the kernel accepts and leaves
/// alone. A range that overflows is `Invalid` (`EINVAL`, `apply_vma_lock_flags`'s
/// `end < start`).
fn lock_range(start: u64, len: u64) -> Result<Option<(u64, u64)>, Error> {
    let off = start % PAGE_SIZE;
    let len = len
        .checked_add(off)
        .and_then(align_up)
        .ok_or(Error::Invalid {
            what: "length overflows",
        })?;
    let start = start - off;
    let end = start.checked_add(len).ok_or(Error::Invalid {
        what: "range overflows",
    })?;
    Ok((len != 0).then_some((start, end)))
}

/// `v`'s flags with the lock bits of `lock`, or as they are where
/// `vma_supports_mlock` says no ([`Vma::supports_mlock`]): `mlock_fixup` leaves such
/// an area alone, without error.
fn lock_if_supported(v: &Vma, lock: VmFlags) -> VmFlags {
    if v.supports_mlock() {
        v.flags.with_lock(lock)
    } else {
        v.flags
    }
}

impl Mm {
    /// The space's default flags (`mm->def_flags`), which every new mapping and
    /// `brk` growth gets: the lock bits of the last `mlockall` with `MCL_FUTURE`
    /// (cleared by one without it, by `munlockall`, and in a new space: a fork's
    /// child, an exec).
    pub fn def_flags(&self) -> VmFlags {
        self.state.lock().def_flags
    }

    /// `mlock(start, len)`: `mlock2` without flags.
    pub fn mlock(&self, start: u64, len: u64) -> Result<(), Error> {
        self.mlock2(start, len, 0)
    }

    /// `mlock2(start, len, flags)`: sets `VM_LOCKED` (and `VM_LOCKONFAULT` with
    /// `MLOCK_ONFAULT`, else clears it) on every page of the range (`start` rounded
    /// down to its page, the length grown by the offset in that page and rounded up,
    /// as `do_mlock` does), splitting areas at its edges and merging the result with
    /// compatible neighbours (`apply_vma_lock_flags` -> `mlock_fixup` ->
    /// `vma_modify_flags`). A special mapping or `MAP_DROPPABLE` memory
    /// ([`Vma::supports_mlock`]) in the range is left as it is, without error. An empty range
    /// changes nothing. Errors (nothing changed):
    /// `Invalid` for flags other than `MLOCK_ONFAULT` or an overflowing range,
    /// `NotMapped` if a page of the range is unmapped (Linux locks the areas before
    /// the hole, then fails with `ENOMEM`; the model changes nothing, as its
    /// [`Mm::madvise`] does).
    pub fn mlock2(&self, start: u64, len: u64, flags: u64) -> Result<(), Error> {
        if flags & !MLOCK_ONFAULT != 0 {
            return Err(Error::Invalid {
                what: "mlock2 flags other than MLOCK_ONFAULT",
            });
        }
        self.set_lock(start, len, locked(flags & MLOCK_ONFAULT != 0))
    }

    /// `munlock(start, len)`: clears the lock bits of every page of the range, as
    /// [`Mm::mlock2`] sets them (same range rule, same errors but for the flags).
    pub fn munlock(&self, start: u64, len: u64) -> Result<(), Error> {
        self.set_lock(start, len, VmFlags::default())
    }

    /// `mlockall(flags)`: with `MCL_FUTURE`, every later mapping gets `VM_LOCKED`
    /// (and `VM_LOCKONFAULT` with `MCL_ONFAULT`) through the default flags, without
    /// it the default flags lose their lock bits; with `MCL_CURRENT`, every area
    /// mapped now gets those lock bits (special ones excepted, as [`Mm::mlock2`]),
    /// merging where that makes neighbours alike (`apply_mlockall_flags`). Without
    /// `MCL_CURRENT` the areas keep their lock bits. Errors (nothing changed):
    /// `Invalid` for no flags, unknown flags, or `MCL_ONFAULT` alone.
    ///
    /// ```
    /// use mm::mlock::{MCL_FUTURE, MCL_ONFAULT};
    /// use mm::{CallPattern, Files, MapFlags, Mm, Prot, PAGE_SIZE};
    /// use rmap::{Design, Topology};
    ///
    /// let mm = Mm::new(Files::new(Design::Linux, Topology::Os, CallPattern::PerVma));
    /// let old = mm.mmap(0, PAGE_SIZE, Prot::RW, MapFlags::default(), None)?;
    /// mm.mlockall(MCL_FUTURE | MCL_ONFAULT)?;
    /// let new = mm.mmap(0, PAGE_SIZE, Prot::RW, MapFlags::default(), None)?;
    /// assert_eq!(new + PAGE_SIZE, old); // adjacent, but not merged:
    /// assert_eq!(mm.vmas().len(), 2);
    /// assert!(mm.find(new).unwrap().flags.lockonfault);
    /// assert!(!mm.find(old).unwrap().flags.locked);
    /// assert!(mm.mlockall(MCL_ONFAULT).is_err());
    /// # Ok::<(), mm::Error>(())
    /// ```
    pub fn mlockall(&self, flags: u64) -> Result<(), Error> {
        if flags == 0 || flags & !(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0 {
            return Err(Error::Invalid {
                what: "mlockall flags none or unknown",
            });
        }
        if flags == MCL_ONFAULT {
            return Err(Error::Invalid {
                what: "mlockall(MCL_ONFAULT) without MCL_CURRENT or MCL_FUTURE",
            });
        }
        let lock = locked(flags & MCL_ONFAULT != 0);
        let future = if flags & MCL_FUTURE != 0 {
            lock
        } else {
            VmFlags::default()
        };
        self.apply_mlockall(future, (flags & MCL_CURRENT != 0).then_some(lock));
        Ok(())
    }

    /// `munlockall()`: clears the lock bits of the default flags and of every area
    /// (`apply_mlockall_flags(0)`). Cannot fail.
    pub fn munlockall(&self) {
        self.apply_mlockall(VmFlags::default(), Some(VmFlags::default()));
    }

    /// Sets the default flags' lock bits to `future`'s and, if `current` is given,
    /// every non-special area's to its.
    fn apply_mlockall(&self, future: VmFlags, current: Option<VmFlags>) {
        let mut st = self.state.lock();
        st.def_flags = st.def_flags.with_lock(future);
        let Some(lock) = current else { return };
        let pieces: Vec<(Vma, bool)> = self
            .tree
            .reader()
            .iter()
            .map(|(_, v)| {
                let mut p = v.slice(v.start, v.end);
                p.flags = lock_if_supported(&v, lock);
                let changed = p.flags != v.flags;
                (p, changed)
            })
            .collect();
        self.place_changed(&mut st, pieces);
    }

    /// Gives every non-special area of `mlock(start, len)`'s range the lock bits of
    /// `lock` ([`Mm::change_flags`]).
    fn set_lock(&self, start: u64, len: u64, lock: VmFlags) -> Result<(), Error> {
        let Some((start, end)) = lock_range(start, len)? else {
            return Ok(());
        };
        self.change_flags(start, end, |v| Ok(lock_if_supported(v, lock)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_range_rounds_out_to_pages() {
        assert_eq!(lock_range(0x1234, 1).unwrap(), Some((0x1000, 0x2000)));
        // The offset in the page counts: 0xfff bytes from 0x1001 reach 0x2000.
        assert_eq!(lock_range(0x1001, 0xfff).unwrap(), Some((0x1000, 0x2000)));
        assert_eq!(lock_range(0x1001, 0x1000).unwrap(), Some((0x1000, 0x3000)));
        assert_eq!(lock_range(0x1000, 0).unwrap(), None);
        assert!(lock_range(0x1000, u64::MAX).is_err());
        assert!(lock_range(!0xfff, 0x2000).is_err());
    }
}
