//! `exclude`: a bound, not a design. The file keeps no reverse map at all.
//!
//! This is the reference ceiling of a 2026 proposal that exempted `libc.so`
//! and `ld.so` from `i_mmap` altogether: no lock, no tree, nothing shared is
//! written when a mapping comes or goes, at the price of every operation
//! that needs the reverse map (reclaim of the file's pages, migration,
//! truncate, `unmap_mapping_range`). It shows how fast exec/fork/exit churn
//! could be if the reverse map cost nothing; no real design can beat it.
//!
//! # Contract (a documented subset of [`ReverseMap`])
//!
//! * Inserts validate their interval and return a fresh handle; they store
//!   nothing and write nothing shared (the handle's number comes from a
//!   thread-local counter).
//! * Removals accept any handle of this map ([`RmapError::ForeignHandle`]
//!   for another map's); they cannot tell a stale or duplicated handle from
//!   a live one, so they never return [`RmapError::UnknownHandle`].
//! * [`try_walk`](crate::ReverseMap::try_walk) returns
//!   [`RmapError::NotTracked`]: the bound cannot answer. [`walk`](crate::ReverseMap::walk)
//!   (which has no error channel) reports nothing.
//! * [`len`](crate::ReverseMap::len) is 0; [`stats`](crate::ReverseMap::stats)
//!   counts no lock (there is none) and 0 shards.
//! * Thread-to-shard mapping: none.
//!
//! # Memory
//!
//! The struct: one map id.

use std::cell::Cell;

use crate::{Design, Handle, Interval, LockStats, ReverseMap, RmapError, VmaId};

/// See the module docs.
#[derive(Debug)]
pub struct Exclude {
    id: u32,
}

impl Exclude {
    /// A map that keeps nothing.
    pub fn new() -> Self {
        Exclude {
            id: crate::next_map_id(),
        }
    }

    /// A handle no other call on this thread has returned.
    fn fresh(&self) -> Handle {
        thread_local!(static NEXT: Cell<u64> = const { Cell::new(0) });
        let n = NEXT.with(|c| {
            let n = c.get();
            c.set(n.wrapping_add(1));
            n
        });
        Handle::new(self.id, 0, n as u32, (n >> 32) as u32)
    }

    fn check_map(&self, h: Handle) -> Result<(), RmapError> {
        if h.map() == self.id {
            Ok(())
        } else {
            Err(RmapError::ForeignHandle)
        }
    }
}

impl Default for Exclude {
    fn default() -> Self {
        Self::new()
    }
}

impl ReverseMap for Exclude {
    fn design(&self) -> Design {
        Design::Exclude
    }

    fn insert(&self, iv: Interval, _vma: VmaId) -> Result<Handle, RmapError> {
        iv.validate()?;
        Ok(self.fresh())
    }

    fn insert_after(&self, parent: Handle, iv: Interval, _vma: VmaId) -> Result<Handle, RmapError> {
        iv.validate()?;
        self.check_map(parent)?;
        Ok(self.fresh())
    }

    /// Any handle of this map passes (the bound cannot tell).
    fn check_handle(&self, h: Handle) -> Result<(), RmapError> {
        self.check_map(h)
    }

    fn remove(&self, h: Handle) -> Result<(), RmapError> {
        self.check_map(h)
    }

    fn insert_batch(
        &self,
        items: &[(Interval, VmaId)],
        out: &mut Vec<Handle>,
    ) -> Result<(), RmapError> {
        crate::precheck_items(items)?;
        out.extend(items.iter().map(|_| self.fresh()));
        Ok(())
    }

    fn insert_after_batch(
        &self,
        items: &[(Handle, Interval, VmaId)],
        out: &mut Vec<Handle>,
    ) -> Result<(), RmapError> {
        for &(p, iv, _) in items {
            iv.validate()?;
            self.check_map(p)?;
        }
        out.extend(items.iter().map(|_| self.fresh()));
        Ok(())
    }

    fn remove_batch(&self, handles: &[Handle]) -> Result<(), RmapError> {
        handles.iter().try_for_each(|&h| self.check_map(h))
    }

    /// Reports nothing: the bound keeps no entries (use `try_walk`, which
    /// says so).
    fn walk(&self, _range: Interval, _f: &mut dyn FnMut(Interval, VmaId)) {}

    fn try_walk(
        &self,
        _range: Interval,
        _f: &mut dyn FnMut(Interval, VmaId),
    ) -> Result<(), RmapError> {
        Err(RmapError::NotTracked)
    }

    fn len(&self) -> usize {
        0
    }

    fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
    }

    fn stats(&self) -> LockStats {
        LockStats::default()
    }
}
