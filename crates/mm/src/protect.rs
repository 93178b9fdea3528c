//! `mprotect` (Linux 6.12 `mm/mprotect.c`, `do_mprotect_pkey`), with and without
//! the direction bits `PROT_GROWSDOWN` and `PROT_GROWSUP`.
//!
//! A direction bit stretches the range to the whole of the growable area it
//! falls in: with `PROT_GROWSDOWN` the change starts at the area's first page, so
//! a program can change its whole stack knowing only the page its stack pointer is
//! on. glibc's ld.so does exactly that when it loads a library that asks for an
//! executable stack (`PT_GNU_STACK` with `PF_X`): `_dl_make_stack_executable`
//! calls `mprotect(page, 4096, PROT_READ|PROT_WRITE|PROT_EXEC|PROT_GROWSDOWN)` on
//! the page that holds `__libc_stack_end`, and the whole `[stack]` becomes `rwxp`.
//!
//! The only area that grows down here is the stack an exec sets up
//! ([`AnonKind::Stack`], `VM_GROWSDOWN`); every piece an
//! `mprotect` splits from it keeps the flag, as on Linux. x86-64 has no area that
//! grows up (`VM_GROWSUP` is 0 there), so `PROT_GROWSUP` is always refused.
//!
//! ```
//! use mm::{CallPattern, Files, Grows, MapFlags, Mm, Prot, PAGE_SIZE};
//! use rmap::{Design, Topology};
//!
//! let mm = Mm::new(Files::new(Design::Linux, Topology::Os, CallPattern::PerVma));
//! let a = mm.mmap(0, 4 * PAGE_SIZE, Prot::RW, MapFlags::default(), None)?;
//! // Not a stack: refused (EINVAL), nothing changed.
//! let e = mm.mprotect_grows(a + PAGE_SIZE, PAGE_SIZE, Prot::R, Grows::Down);
//! assert_eq!(e.unwrap_err().errno(), 22);
//! assert_eq!(mm.vmas().len(), 1);
//! # Ok::<(), mm::Error>(())
//! ```

use crate::{AnonKind, Backing, Error, Mm, Prot, State, Why};

/// A direction bit of `mprotect`'s protection argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grows {
    /// `PROT_GROWSDOWN` (`0x01000000`): the change reaches down to the first page of
    /// the grows-down area the range starts in.
    Down,
    /// `PROT_GROWSUP` (`0x02000000`): the change reaches up to the end of a grows-up
    /// area; there is none on x86-64.
    Up,
}

impl Grows {
    /// `PROT_GROWSDOWN`.
    pub const PROT_GROWSDOWN: u64 = 0x0100_0000;
    /// `PROT_GROWSUP`.
    pub const PROT_GROWSUP: u64 = 0x0200_0000;
}

impl Mm {
    /// `mprotect(start, len, prot)`: splits the VMAs at the range's edges, changes
    /// their protection, and merges the result with compatible neighbours. Errors
    /// (nothing changed): `Invalid` for a bad range or a change that would cut a
    /// special mapping ([`crate::Vma::is_special`]), `NotMapped` if any page of the
    /// range is unmapped, `Sealed` if an area of it is sealed ([`crate::seal`]). A
    /// length of 0 at an aligned address changes nothing and is `Ok`, as
    /// `do_mprotect_pkey` returns 0 for it.
    pub fn mprotect(&self, start: u64, len: u64, prot: Prot) -> Result<(), Error> {
        self.pkey_mprotect(start, len, prot, None, -1)
    }

    /// `mprotect(start, len, prot | PROT_GROWSDOWN)` or `| PROT_GROWSUP`: as
    /// [`Mm::mprotect`], but with [`Grows::Down`] the range starts at the first page
    /// of the first area it reaches, which must be a stack (`VM_GROWSDOWN`), and
    /// [`Grows::Up`] is refused on every area (x86-64 has none that grows up).
    ///
    /// Errors, in `do_mprotect_pkey`'s order: `Invalid` for an unaligned address;
    /// `Ok` with nothing changed for a length of 0; `NotMapped` when no area meets
    /// the range (and, for [`Grows::Up`], when the range starts in a hole); then
    /// `Invalid` when the area does not grow that way; then [`Mm::mprotect`]'s.
    pub fn mprotect_grows(
        &self,
        start: u64,
        len: u64,
        prot: Prot,
        grows: Grows,
    ) -> Result<(), Error> {
        self.pkey_mprotect(start, len, prot, Some(grows), -1)
    }

    /// `pkey_mprotect(start, len, prot [| PROT_GROWS*], pkey)`: as
    /// [`Mm::mprotect_grows`] (`grows`) or [`Mm::mprotect`] (`None`), and with a
    /// `pkey` of 0 to 15 the areas take that protection key ([`VmFlags::pkey`],
    /// which keeps them apart from areas with another); with -1 each keeps its own,
    /// as `mprotect` does. Which keys `pkey_alloc` handed out is not modelled (a
    /// replay follows the recorded result), nor x86's execute-only key for
    /// `PROT_EXEC` alone on a machine with protection keys. Errors: `Invalid` for a
    /// key outside -1..=15 (x86-64 has 16), then as [`Mm::mprotect_grows`].
    ///
    /// [`VmFlags::pkey`]: crate::VmFlags::pkey
    pub fn pkey_mprotect(
        &self,
        start: u64,
        len: u64,
        prot: Prot,
        grows: Option<Grows>,
        pkey: i32,
    ) -> Result<(), Error> {
        if Self::empty_range(start, len)? {
            return Ok(());
        }
        let end = Self::check_range(start, len)?;
        let pkey = match pkey {
            -1 => None,
            0..=15 => Some(pkey as u8),
            _ => {
                return Err(Error::Invalid {
                    what: "protection key outside -1..=15",
                })
            }
        };
        let mut st = self.state.lock();
        let not_mapped = Error::NotMapped {
            start,
            len: end - start,
        };
        let start = match grows {
            None => start,
            Some(grows) => {
                let Some(first) = self.overlapping(start, end).into_iter().next() else {
                    return Err(not_mapped);
                };
                match grows {
                    Grows::Down if matches!(first.backing, Backing::Anon(AnonKind::Stack)) => {
                        first.start
                    }
                    Grows::Down => {
                        return Err(Error::Invalid {
                            what: "PROT_GROWSDOWN on an area that does not grow down",
                        })
                    }
                    Grows::Up if first.start > start => return Err(not_mapped),
                    Grows::Up => {
                        return Err(Error::Invalid {
                            what: "PROT_GROWSUP (no area grows up on x86-64)",
                        })
                    }
                }
            }
        };
        self.protect(&mut st, start, end, prot, pkey)
    }

    /// The change of [`Mm::pkey_mprotect`] over `[start, end)`, checked and made
    /// under the writer's lock `st`.
    fn protect(
        &self,
        st: &mut State,
        start: u64,
        end: u64,
        prot: Prot,
        pkey: Option<u8>,
    ) -> Result<(), Error> {
        let mut pieces = Vec::new();
        let mut at = start;
        for v in self.overlapping(start, end) {
            if v.start > at {
                break;
            }
            let mut p = v.slice(v.start.max(start), v.end.min(end));
            p.prot = prot;
            p.flags.account |= !p.flags.shared && prot.write && !p.flags.noreserve;
            if let Some(key) = pkey {
                p.flags.pkey = key;
            }
            at = p.end;
            pieces.push((p.clone(), v.prot == prot && v.flags == p.flags));
        }
        if at < end {
            return Err(Error::NotMapped {
                start,
                len: end - start,
            });
        }
        self.refuse_sealed(start, end)?;
        if pieces.iter().all(|(_, same)| *same) {
            return Ok(());
        }
        self.refuse_special_split(st, start, end, |v| v.prot != prot)?;
        self.place(
            st,
            pieces.into_iter().map(|(p, _)| p).collect(),
            Why::Protect,
        );
        Ok(())
    }
}
