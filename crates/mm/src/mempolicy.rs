//! `mbind` (Linux 6.12 `mm/mempolicy.c`): an area's own NUMA memory policy
//! ([`MemPolicy`], `vma->vm_policy`). Areas with different policies do not merge, so
//! binding part of an area splits it in `/proc/PID/maps`, and `MPOL_DEFAULT`
//! (no policy of its own) lets it merge back. Where the pages go is not modelled,
//! nor which nodes a machine has: a replay follows the recorded result.
//!
//! ```
//! use mm::{CallPattern, Files, MapFlags, MemPolicy, Mm, Prot, PAGE_SIZE};
//! use rmap::{Design, Topology};
//!
//! let mm = Mm::new(Files::new(Design::Linux, Topology::Os, CallPattern::PerVma));
//! let a = mm.mmap(0, 4 * PAGE_SIZE, Prot::RW, MapFlags::default(), None)?;
//! let bind_node_0 = MemPolicy::new(2, 1); // MPOL_BIND, node 0
//! mm.mbind(a + PAGE_SIZE, PAGE_SIZE, bind_node_0)?;
//! assert_eq!(mm.vmas().len(), 3);
//! mm.mbind(a, 4 * PAGE_SIZE, MemPolicy::default())?; // MPOL_DEFAULT
//! assert_eq!(mm.vmas().len(), 1);
//! # Ok::<(), mm::Error>(())
//! ```

use crate::{Error, MemPolicy, Mm, VmFlags};

impl Mm {
    /// `mbind(start, len, mode, nodes, ...)` with the policy it makes
    /// ([`MemPolicy::new`]): every area of the range takes it, split at the range's
    /// edges and merged with neighbours of the same policy. Errors (nothing
    /// changed): `Invalid` for an unaligned start or a bad length, `Fault`
    /// (`EFAULT`) when a page of the range is not mapped; a length of 0 is `Ok`.
    pub fn mbind(&self, start: u64, len: u64, policy: MemPolicy) -> Result<(), Error> {
        if Self::empty_range(start, len)? {
            return Ok(());
        }
        let end = Self::check_range(start, len)?;
        let set = |v: &crate::Vma| Ok(VmFlags { policy, ..v.flags });
        match self.change_flags(start, end, set) {
            Err(Error::NotMapped { .. }) => Err(Error::Fault { addr: start }),
            r => r,
        }
    }
}
