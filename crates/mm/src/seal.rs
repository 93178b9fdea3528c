//! `mseal` (Linux >= 6.10, `mm/mseal.c`): memory whose mapping cannot change any
//! more. A sealed area (`VM_SEALED`, [`VmFlags::sealed`]) refuses with `EPERM`
//! ([`Error::Sealed`]) a `munmap`, a `MAP_FIXED` mapping over it, a `brk`
//! shrinking over it, an `mremap` of it or onto it, an `mprotect`, and, where it is
//! private anonymous memory that is not writable, the advice that would throw its
//! pages away (`MADV_DONTNEED`, `MADV_FREE`, `MADV_REMOVE`, `MADV_DONTFORK`,
//! `MADV_WIPEONFORK`). Nothing changes then, but for one thing the kernel leaves:
//! an unmap (`munmap`, `MAP_FIXED`, a fixed `mremap`'s target) that starts inside
//! an unsealed area and reaches a sealed one has split that area at its start
//! first. It stays sealed until the process exits or execs; a fork's child
//! inherits the seal. (Linux 6.18's answers to a recorded C program.)
//!
//! The flag splits areas and keeps a sealed area apart from an unsealed neighbour,
//! so `/proc/PID/maps` shows it.
//!
//! ```
//! use mm::{CallPattern, Files, MapFlags, Mm, Prot, PAGE_SIZE};
//! use rmap::{Design, Topology};
//!
//! let mm = Mm::new(Files::new(Design::Linux, Topology::Os, CallPattern::PerVma));
//! let a = mm.mmap(0, 4 * PAGE_SIZE, Prot::RW, MapFlags::default(), None)?;
//! mm.mseal(a + PAGE_SIZE, PAGE_SIZE, 0)?;
//! assert_eq!(mm.vmas().len(), 3);
//! assert_eq!(mm.munmap(a, 4 * PAGE_SIZE).unwrap_err().errno(), 1); // EPERM
//! mm.munmap(a + 2 * PAGE_SIZE, 2 * PAGE_SIZE)?; // beside it: fine
//! assert_eq!(mm.vmas().len(), 2);
//! # Ok::<(), mm::Error>(())
//! ```

use crate::{Error, Mm, State, VmFlags};

impl Mm {
    /// `mseal(start, len, flags)`: seals every area of the range, splitting those
    /// that stick out. Errors (nothing changed): `Invalid` for flags other than 0
    /// or a bad range, `NotMapped` when a page of the range is not mapped
    /// (`ENOMEM`); a length of 0 at an aligned address is `Ok`.
    pub fn mseal(&self, start: u64, len: u64, flags: u64) -> Result<(), Error> {
        if flags != 0 {
            return Err(Error::Invalid {
                what: "mseal flags other than 0",
            });
        }
        if Self::empty_range(start, len)? {
            return Ok(());
        }
        let end = Self::check_range(start, len)?;
        self.change_flags(start, end, |v| {
            Ok(VmFlags {
                sealed: true,
                ..v.flags
            })
        })
    }

    /// [`Mm::refuse_sealed`] for an unmap of `[start, end)` (`munmap`, a
    /// `MAP_FIXED` mapping, a fixed `mremap`'s target), which leaves what the
    /// kernel's does when it finds a sealed area: `vms_gather_munmap_vmas` has
    /// already split the first area at `start` if that one is not sealed, and the
    /// split stays (its two pieces kept apart, though they could merge).
    pub(crate) fn refuse_sealed_unmap(
        &self,
        st: &mut State,
        start: u64,
        end: u64,
    ) -> Result<(), Error> {
        let refused = self.refuse_sealed(start, end);
        if refused.is_err() {
            let first = self.overlapping(start, end).into_iter().next();
            if let Some(v) = first.filter(|v| !v.flags.sealed && v.start < start) {
                let pieces = vec![v.slice(v.start, start), v.slice(start, v.end)];
                self.replace_in_place(st, &v, pieces);
            }
        }
        refused
    }

    /// `Sealed` (`EPERM`) if an area in `[start, end)` is sealed: the check every
    /// change of a mapping makes first (`can_modify_mm`).
    pub(crate) fn refuse_sealed(&self, start: u64, end: u64) -> Result<(), Error> {
        if self.overlapping(start, end).iter().any(|v| v.flags.sealed) {
            return Err(Error::Sealed {
                start,
                len: end - start,
            });
        }
        Ok(())
    }
}
