//! One module per design. Shared here: `VmaTree`, the interval tree of
//! VMAs that every Linux-derived design uses (one tree node per entry).

pub mod aspace;
pub mod exclude;
pub(crate) mod grouped;
pub mod linux;
pub mod linux_shared_line;
pub mod numa_locks;
pub mod numa_split;
pub mod sharded;
pub(crate) mod shardset;
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
        self.t.release(slot);
    }

    #[inline]
    pub(crate) fn walk(&self, range: Interval, f: &mut dyn FnMut(Interval, VmaId)) {
        if crate::trace::recording() {
            crate::trace::touch_val(self, false);
            self.t.walk_nodes(range.first, range.last, |_, n| {
                crate::trace::touch_val(n, false);
                f(n.interval(), n.payload)
            });
            return;
        }
        self.t
            .walk_nodes(range.first, range.last, |_, n| f(n.interval(), n.payload));
    }

    /// For the event recorder: the header and the live node `slot` written,
    /// its parent written, the rest of the path from the root read.
    pub(crate) fn trace_entry(&self, slot: u32) {
        crate::trace::touch_val(self, true);
        trace_path(&self.t, slot);
    }
}

/// Touches node `slot` and its parent as written and the nodes above as
/// read (a linked node), or only `slot` (an unlinked one).
pub(crate) fn trace_path<P: Copy>(t: &IntervalTree<P>, slot: u32) {
    use crate::interval_tree::NIL;
    let n = t.node(slot);
    crate::trace::touch_val(n, true);
    if !n.in_tree() {
        return;
    }
    let mut p = t.parent_of(slot);
    let mut first = true;
    while p != NIL {
        crate::trace::touch_val(t.node(p), first);
        first = false;
        p = t.parent_of(p);
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::grouped::GroupTree;
    use super::shardset::ShardTree;
    use super::*;
    use crate::interval_tree::IntervalTree;

    /// Drives one slot to its last generation, then frees it: the handle
    /// of every generation stays dead and the slot is never handed out
    /// again, so no handle can come back to life (it did after 2^29
    /// insert/remove cycles when the generation wrapped).
    fn forced_wrap<T: ShardTree>(t: &mut T, set_gen: impl Fn(&mut T, u32, u32)) {
        let iv = Interval { first: 1, last: 5 };
        let (slot, gen0) = t.insert(iv, 1);
        t.remove_checked(slot);
        // The slot is free; pretend it has been reused 2^29 - 2 times.
        set_gen(t, slot, IntervalTree::<u64>::LAST_GEN);
        let (s2, last) = t.insert(iv, 2);
        assert_eq!(s2, slot, "the free slot is reused");
        assert_eq!(last, IntervalTree::<u64>::LAST_GEN);
        t.check(s2, last).unwrap();
        t.remove_checked(s2);
        // Retired: neither the stale handles nor a new entry reuse it.
        assert_eq!(t.check(slot, last), Err(RmapError::UnknownHandle));
        assert_eq!(t.check(slot, gen0), Err(RmapError::UnknownHandle));
        assert_eq!(t.check(slot, 0), Err(RmapError::UnknownHandle));
        let (s3, _) = t.insert(iv, 3);
        assert_ne!(s3, slot, "a retired slot is never reused");
        assert_eq!(t.check(slot, 0), Err(RmapError::UnknownHandle));
        assert_eq!(t.len(), 1);
        let mut seen = Vec::new();
        t.walk(Interval::FULL, &mut |_, v| seen.push(v));
        assert_eq!(seen, vec![3]);
    }

    #[test]
    fn generation_wrap_retires_the_slot() {
        forced_wrap(&mut VmaTree::new(), |t, s, g| t.t.set_gen_for_test(s, g));
        forced_wrap(&mut GroupTree::new(), |t, s, g| t.set_gen_for_test(s, g));
    }
}
