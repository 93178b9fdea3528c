//! One module per design. Shared here: `VmaTree`, the interval tree of
//! VMAs that every Linux-derived design uses (one tree node per entry).

pub mod aspace;
mod grouped;
pub mod linux;
pub mod linux_shared_line;
pub mod numa_locks;
pub mod numa_split;
pub mod sharded;
mod shardset;
mod single;

use crate::interval_tree::IntervalTree;
use crate::{Handle, Interval, RmapError, VmaId};

/// One interval tree of VMAs, one node per entry (the kernel's `i_mmap`).
#[derive(Debug, Default)]
pub(crate) struct VmaTree {
    t: IntervalTree<VmaId>,
}

impl VmaTree {
    pub(crate) const fn new() -> Self {
        VmaTree {
            t: IntervalTree::new(),
        }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.t.live()
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.t.heap_bytes()
    }

    pub(crate) fn reserve(&mut self, n: usize) {
        self.t.reserve(n);
    }

    /// Inserts; returns (slot, generation). `iv` must be validated.
    #[inline]
    pub(crate) fn insert(&mut self, iv: Interval, vma: VmaId) -> (u32, u32) {
        let i = self.t.alloc(iv, vma);
        self.t.link(i);
        (i, self.t.gen(i))
    }

    /// Validates `(slot, gen)`.
    #[inline]
    pub(crate) fn check(&self, slot: u32, gen: u32) -> Result<(), RmapError> {
        if self.t.is_live(slot, gen) {
            Ok(())
        } else {
            Err(RmapError::UnknownHandle)
        }
    }

    /// Inserts `(iv, vma)` right after the live node `(slot, gen)` when the
    /// intervals are equal (the kernel's `vma_interval_tree_insert_after`),
    /// else at its ordinary place.
    pub(crate) fn insert_after(
        &mut self,
        slot: u32,
        gen: u32,
        iv: Interval,
        vma: VmaId,
    ) -> Result<(u32, u32), RmapError> {
        self.check(slot, gen)?;
        let i = self.t.alloc(iv, vma);
        if self.t.node(slot).interval() == iv {
            self.t.link_after(slot, i);
        } else {
            self.t.link(i);
        }
        Ok((i, self.t.gen(i)))
    }

    /// Removes a node that [`VmaTree::check`] accepted.
    #[inline]
    pub(crate) fn remove_checked(&mut self, slot: u32) {
        self.t.unlink(slot);
        self.t.free(slot);
    }

    #[inline]
    pub(crate) fn remove(&mut self, slot: u32, gen: u32) -> Result<(), RmapError> {
        self.check(slot, gen)?;
        self.remove_checked(slot);
        Ok(())
    }

    #[inline]
    pub(crate) fn walk(&self, range: Interval, f: &mut dyn FnMut(Interval, VmaId)) {
        self.t
            .walk_nodes(range.first, range.last, |_, n| f(n.interval(), n.payload));
    }
}

/// Removes a batch from one tree: validate all, then remove all.
pub(crate) fn tree_remove_batch(t: &mut VmaTree, handles: &[Handle]) -> Result<(), RmapError> {
    for h in handles {
        t.check(h.slot(), h.gen())?;
    }
    for h in handles {
        t.remove_checked(h.slot());
    }
    Ok(())
}
