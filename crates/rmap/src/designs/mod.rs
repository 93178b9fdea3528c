//! One module per design, each built from shared parts (the private
//! `parts` module): a tree (`VmaTree` here, the interval tree of VMAs with
//! one node per entry, or the group tree of `aspace`), a locking policy
//! (one lock over one or more trees; one lock per shard, with or without an
//! inverted outer lock; `aspace`'s promotion from the first to the second),
//! a thread-to-shard rule (none, the NUMA node, groups of 8 CPUs, CPUs
//! spread over the shards) and one handle resolver. A design module holds
//! its documentation and names its composition:
//!
//! | design | trees | locking | thread -> shard |
//! |---|---|---|---|
//! | `linux_shared_line` | one `VmaTree`, header beside the lock word | one lock | - |
//! | `linux` | one `VmaTree`, header on the next line | one lock | - |
//! | `numa_split` | one `VmaTree` per node | one lock | node |
//! | `numa_locks` | one `VmaTree` per node | one lock per shard | node |
//! | `sharded` | one `VmaTree` per 8 CPUs | inverted outer lock + one per shard | cpu / 8 |
//! | `aspace` | group tree | one lock, promoted to one per shard | cpu * shards / cpus |
//! | `aspace_central` | group tree | one lock, never promoted | - |
//! | `exclude` | none | none | - |

pub mod aspace;
pub mod exclude;
pub(crate) mod grouped;
pub mod linux;
pub mod linux_shared_line;
pub mod numa_locks;
pub mod numa_split;
mod parts;
pub mod sharded;
pub(crate) mod shardset;

use crate::interval_tree::IntervalTree;
use crate::{Interval, RmapError, VmaId};

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
    #[inline(always)]
    pub(crate) fn insert(&mut self, iv: Interval, vma: VmaId) -> (u32, u32) {
        self.t.insert_gen(iv, vma)
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
        let (i, new_gen) = self.t.alloc_gen(iv, vma);
        if self.t.node(slot).interval() == iv {
            self.t.link_after(slot, i);
        } else {
            self.t.link(i);
        }
        Ok((i, new_gen))
    }

    /// Removes live entry `(slot, gen)`; [`RmapError::UnknownHandle`] when
    /// it names none (one bounds check for the check and the removal).
    #[inline(always)]
    pub(crate) fn remove(&mut self, slot: u32, gen: u32) -> Result<(), RmapError> {
        // Every live slot of a VmaTree is linked (insert links it, removal
        // unlinks and frees it under one lock hold).
        if self.t.remove_linked(slot, gen) {
            Ok(())
        } else {
            Err(RmapError::UnknownHandle)
        }
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
                crate::trace::touch_node(n, false);
                f(n.interval(), n.payload)
            });
            return;
        }
        self.t
            .walk_nodes(range.first, range.last, |_, n| f(n.interval(), n.payload));
    }

    /// For the event recorder: the header written, the live node `slot`
    /// and the path from the root to it read (the nodes a change wrote are
    /// added by [`VmaTree::trace_changed`]).
    #[cold]
    #[inline(never)]
    pub(crate) fn trace_entry(&self, slot: u32) {
        crate::trace::touch_val(self, true);
        trace_path(&self.t, slot);
    }

    /// For the event recorder, before removing live entry `slot`: the
    /// header written and the entry read. A removal starts at the entry
    /// its handle names and follows parent links up (`unlink_core`,
    /// `propagate`): it does not search from the root, so the path above
    /// what it changes is not its (Linux 6.12's `vma_interval_tree_remove`,
    /// `rb_erase_augmented_cached`, is the same). The nodes around the
    /// change are added by [`VmaTree::trace_removed`].
    #[cold]
    #[inline(never)]
    pub(crate) fn trace_removal(&self, slot: u32) {
        crate::trace::touch_val(self, true);
        crate::trace::touch_node(self.t.node(slot), false);
    }

    /// For the event recorder, after a removal: the nodes it loaded around
    /// what it changed ([`crate::trace::touch_loaded_around_changes`]),
    /// then, as [`VmaTree::trace_changed`], every node it wrote.
    #[cold]
    pub(crate) fn trace_removed(&self, before: crate::trace::Snapshot) {
        crate::trace::touch_loaded_around_changes(
            &before,
            self.t.nodes(),
            IntervalTree::<VmaId>::link_slots,
            IntervalTree::<VmaId>::differs_beyond_parent,
        );
        self.trace_changed(before);
    }

    /// For the event recorder: a copy of the arena before a change.
    #[cold]
    pub(crate) fn trace_snapshot(&self) -> crate::trace::Snapshot {
        let (root, leftmost) = self.t.root_and_leftmost();
        crate::trace::snapshot(self.t.nodes()).with_key((u64::from(root), u64::from(leftmost)))
    }

    /// For the event recorder: every node the change since `before` wrote.
    #[cold]
    pub(crate) fn trace_changed(&self, before: crate::trace::Snapshot) {
        let key = self.t.root_and_leftmost();
        let kept = before.key() == Some((u64::from(key.0), u64::from(key.1)));
        crate::trace::touch_changed(before, self.t.nodes(), |n| n.is_live());
        // The kernel's header (`rb_root_cached`: the root and the leftmost
        // node) is written only when one of them changes; this header's
        // other fields (arena, free list, count) are the lab's own.
        crate::trace::header_changed(self, !kept);
    }
}

/// Touches node `slot` and, for a linked node, every node above it as read
/// (the path a search from the root walks).
pub(crate) fn trace_path<P: Copy, K: crate::interval_tree::KeyOrder>(
    t: &IntervalTree<P, K>,
    slot: u32,
) {
    use crate::interval_tree::NIL;
    let n = t.node(slot);
    crate::trace::touch_node(n, false);
    if !n.in_tree() {
        return;
    }
    let mut p = t.parent_of(slot);
    while p != NIL {
        crate::trace::touch_node(t.node(p), false);
        p = t.parent_of(p);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::grouped::GroupTree;
    use super::shardset::ShardTree;
    use super::*;
    use crate::interval_tree::IntervalTree;

    /// `Design::shard_of_cpu` answers what each design's own rule picks on
    /// a thread running on that CPU (emulated 2 nodes of 8 CPUs: threads
    /// are dealt CPUs round-robin, so 16 threads see every CPU).
    #[test]
    fn shard_of_cpu_is_the_designs_own_rule() {
        use super::parts::{ByCpuGroup, ByNode, ShardRule, SpreadCpus};
        use crate::{Design, Topology};
        let t: Topology = "2x8".parse().unwrap();
        let seen: Vec<(u32, usize, usize, usize)> = (0..16)
            .map(|_| {
                let t = t.clone();
                std::thread::spawn(move || {
                    let aspace_shards = aspace::shard_count(t.cpus()) as usize;
                    (
                        t.current_cpu(),
                        ByCpuGroup::<{ sharded::CPUS_PER_SHARD }>.pick(&t, 2),
                        ByNode.pick(&t, 2),
                        SpreadCpus.pick(&t, aspace_shards),
                    )
                })
                .join()
                .unwrap()
            })
            .collect();
        for (cpu, group, node, spread) in seen {
            let of = |d: Design| d.shard_of_cpu(&t, cpu).map(|s| s as usize);
            assert_eq!(of(Design::Sharded), Some(group), "cpu {cpu}");
            assert_eq!(of(Design::NumaLocks), Some(node), "cpu {cpu}");
            assert_eq!(of(Design::NumaSplit), Some(node), "cpu {cpu}");
            assert_eq!(of(Design::Aspace), Some(spread), "cpu {cpu}");
            assert_eq!(of(Design::Linux), None);
        }
        assert_eq!(Design::Sharded.shard_of_cpu(&t, 7), Some(0));
        assert_eq!(Design::Sharded.shard_of_cpu(&t, 8), Some(1));
    }

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

    /// A removal starts at the node its handle names and follows parent
    /// links: the recorder charges it the nodes around its change, not
    /// the path from the root an insert walks. 4096 entries inserted in a
    /// scrambled order, every one ending at the same page (no maximum
    /// above a removed node's parent changes): 64 inserts read their paths
    /// (11 nodes on average); 64 removals (every 64th entry) read half as
    /// many (their rebalancing's siblings and the nodes whose maxima they
    /// recheck), fewer than 3/4 of the inserts', and load every node they
    /// write before writing it, through `remove` and `remove_batch` alike.
    #[test]
    fn a_removal_reads_around_its_change_not_the_path_from_the_root() {
        use crate::{Design, Topology};
        let m = Design::Linux.build(&Topology::Os);
        let iv = |i: u64| Interval::new(i, 1 << 20).unwrap();
        // Inserted in a scrambled order (an odd multiplier permutes 0..4096).
        let handles: Vec<_> = (0..4096u64)
            .map(|i| {
                m.insert(iv(i.wrapping_mul(2_654_435_761) % 4096), i)
                    .unwrap()
            })
            .collect();
        // 64 more inserts, spread over the keys: each reads its path.
        let ins_read = (0..64u64)
            .map(|i| {
                let (_, ins) = crate::trace::record_lines(|| m.insert(iv(i * 64 + 31), i).unwrap());
                f64::from(ins[0].event.lines_read)
            })
            .sum::<f64>()
            / 64.0;
        assert!(ins_read >= 11.0, "an insert reads its path: {ins_read:.1}");
        let (mut read, mut written, mut n) = (0u32, 0u32, 0u32);
        // Every other one through `remove_batch`: both removals by handle.
        for (k, &h) in handles.iter().step_by(64).enumerate() {
            let (_, rm) = crate::trace::record_lines(|| {
                if k % 2 == 1 {
                    m.remove_batch(&[h]).unwrap()
                } else {
                    m.remove(h).unwrap()
                }
            });
            assert_eq!(rm.len(), 1);
            let e = &rm[0];
            read += e.event.lines_read;
            written += e.event.lines_written;
            n += 1;
            assert!(
                e.lines
                    .iter()
                    .filter(|l| l.is_node() && l.written)
                    .all(|l| l.loaded_first),
                "a removal loads each node before it writes it"
            );
        }
        let (read, written) = (
            f64::from(read) / f64::from(n),
            f64::from(written) / f64::from(n),
        );
        assert!(
            read < 0.75 * ins_read,
            "a removal reads {read:.1} lines, an insert {ins_read:.1}"
        );
        assert!(
            read >= 1.0 && written >= 3.0,
            "{read:.1} read, {written:.1} written"
        );
    }
}
