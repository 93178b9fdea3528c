//! [`GroupTree`]: an interval tree of *distinct* intervals, each node heading
//! a group of the entries that share its interval (the `aspace` design).
//!
//! Every entry owns one arena slot (so handles stay valid and O(1) to
//! resolve). The slot of one member of each group, the *head*, is linked
//! into the augmented red-black tree; all members of a group, head included,
//! form a circular doubly linked list through `next`/`prev`:
//!
//! ```text
//!   tree of distinct intervals        group of [0x28, 0x1ad]
//!          [0x28,0x1ad]* ----------> head <-> m1 <-> m2 <-> ... <-> m1199
//!          /          \               ^                              |
//!   [0,0x27]*     [0x1ae,0x205]*      +------------------------------+
//! ```
//!
//! * insert: find the group in O(log distinct); append to its circle, O(1).
//!   A new distinct interval is linked into the tree, O(log distinct).
//! * remove through the handle: unlink from the circle, O(1). When the head
//!   leaves a non-empty group, the next member takes its place in the tree
//!   ([`IntervalTree::replace`], O(1), no rebalancing). Only the last member
//!   of a group costs a tree removal, O(log distinct).
//! * walk: the tree walk over distinct intervals, then each group's circle.
//!
//! A slot is 56 bytes (48 for [`super::VmaTree`]): the tree fields are unused
//! in non-head members, which buys O(1) head replacement and one arena.

use crate::interval_tree::{ByInterval, IntervalTree, NIL};
use crate::{Interval, RmapError, VmaId};

/// A group member's payload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Member {
    vma: VmaId,
    next: u32,
    prev: u32,
}

/// See the module docs.
///
/// # The member invariant
///
/// Whenever no method of `GroupTree` is running, the `next` and `prev` of
/// every slot of the arena, live or free, are arena indices
/// (`< nodes.len()`): a slot gets `NIL` in both only inside `insert_new` and
/// `insert_after`, which link it into a circle (indices) before anything
/// that can panic or return; links are only ever set to indices of slots
/// (the new one, or values read from other links); freeing a slot keeps
/// its links; and the arena never shrinks. The member-list updates
/// therefore index unchecked.
#[derive(Debug, Default)]
pub(crate) struct GroupTree {
    /// Ordered by `(first, last)`: `insert` finds a group by exact interval.
    t: IntervalTree<Member, ByInterval>,
}

impl GroupTree {
    pub(crate) const fn new() -> Self {
        GroupTree {
            t: IntervalTree::new(),
        }
    }

    /// Sets a free slot's generation (tests that force a wrap-around).
    #[cfg(test)]
    pub(crate) fn set_gen_for_test(&mut self, i: u32, gen: u32) {
        self.t.set_gen_for_test(i, gen)
    }

    /// Calls `f(interval, slot)` for every entry overlapping `range`: groups
    /// in key order, each group's members in circle order (the head first).
    pub(crate) fn walk_slots(&self, range: Interval, mut f: impl FnMut(Interval, u32)) {
        let t = &self.t;
        t.walk_nodes(range.first, range.last, |head, n| {
            let iv = n.interval();
            f(iv, head);
            let mut m = n.payload.next;
            while m != head {
                f(iv, m);
                m = t.node(m).payload.next;
            }
        });
    }

    /// The generation of live slot `slot`.
    pub(crate) fn gen_of(&self, slot: u32) -> u32 {
        self.t.gen(slot)
    }

    /// The interval of live slot `slot`.
    pub(crate) fn interval_of(&self, slot: u32) -> Interval {
        self.t.node(slot).interval()
    }

    /// Links slot `i` into the circle right after `after`.
    ///
    /// # Safety
    /// `after` and `i` are arena indices (`after` a live member); the member
    /// invariant holds for every slot but `i`.
    #[inline(always)]
    unsafe fn link_member_after(&mut self, after: u32, i: u32) {
        // SAFETY: `after` and `i` by the precondition; `next` is `after`'s
        // link, an index by the member invariant.
        unsafe {
            let next = self.t.node_unchecked(after).payload.next;
            {
                let m = &mut self.t.node_unchecked_mut(i).payload;
                m.prev = after;
                m.next = next;
            }
            self.t.node_unchecked_mut(after).payload.next = i;
            self.t.node_unchecked_mut(next).payload.prev = i;
        }
    }

    #[inline(always)]
    fn insert_new(&mut self, iv: Interval, vma: VmaId) -> (u32, u32) {
        // Find first, so that nothing can panic between the allocation and
        // the linking (the member invariant).
        let head = self.t.find_exact(iv);
        let (i, gen) = self.t.alloc_gen(
            iv,
            Member {
                vma,
                next: NIL,
                prev: NIL,
            },
        );
        match head {
            Some(head) => {
                // Append at the tail (just before the head).
                // SAFETY: `head` is a linked node's index (find_exact reads
                // it from the tree's links), `i` the slot just allocated;
                // `tail` is `head`'s link, an index by the member invariant.
                unsafe {
                    let tail = self.t.node_unchecked(head).payload.prev;
                    self.link_member_after(tail, i);
                }
            }
            None => {
                let m = &mut self.t.node_mut(i).payload;
                m.next = i;
                m.prev = i;
                self.t.link(i);
            }
        }
        (i, gen)
    }
}

impl super::shardset::ShardTree for GroupTree {
    #[inline]
    fn insert(&mut self, iv: Interval, vma: VmaId) -> (u32, u32) {
        self.insert_new(iv, vma)
    }

    fn insert_after(
        &mut self,
        slot: u32,
        gen: u32,
        iv: Interval,
        vma: VmaId,
    ) -> Result<(u32, u32), RmapError> {
        self.check(slot, gen)?;
        let (i, gen) = if self.t.node(slot).interval() == iv {
            let (i, gen) = self.t.alloc_gen(
                iv,
                Member {
                    vma,
                    next: NIL,
                    prev: NIL,
                },
            );
            // SAFETY: `slot` is live (checked above), `i` just allocated.
            unsafe { self.link_member_after(slot, i) };
            (i, gen)
        } else {
            self.insert_new(iv, vma)
        };
        Ok((i, gen))
    }

    #[inline]
    fn check(&self, slot: u32, gen: u32) -> Result<(), RmapError> {
        if self.t.is_live(slot, gen) {
            Ok(())
        } else {
            Err(RmapError::UnknownHandle)
        }
    }

    /// `check` and `remove_checked` with one bounds check, and the
    /// neighbours' links updated unchecked (the member invariant).
    #[inline(always)]
    fn remove(&mut self, i: u32, gen: u32) -> Result<(), RmapError> {
        let Some(n) = self.t.live_node(i, gen) else {
            return Err(RmapError::UnknownHandle);
        };
        let n = *n;
        let Member { next, prev, .. } = n.payload;
        if next == i {
            // Sole member: it is the head; the group leaves the tree.
            self.t.unlink(i);
        } else {
            // SAFETY: `next` and `prev` are indices (the member invariant).
            unsafe {
                self.t.node_unchecked_mut(prev).payload.next = next;
                self.t.node_unchecked_mut(next).payload.prev = prev;
            }
            if n.in_tree() {
                self.t.replace(i, next);
            }
        }
        // SAFETY: `live_node` found slot `i`, so `i < nodes.len()`.
        unsafe { self.t.release_at(i) };
        Ok(())
    }

    // Always inlined: out of line, the call, its register saves and the
    // re-check of `i` that the caller's `check` already did cost 15
    // instructions per removal (callgrind churn: aspace 1480 -> 1405 per op).
    #[inline(always)]
    fn remove_checked(&mut self, i: u32) {
        let n = *self.t.node(i);
        let Member { next, prev, .. } = n.payload;
        if next == i {
            // Sole member: it is the head; the group leaves the tree.
            self.t.unlink(i);
        } else {
            self.t.node_mut(prev).payload.next = next;
            self.t.node_mut(next).payload.prev = prev;
            if n.in_tree() {
                self.t.replace(i, next);
            }
        }
        self.t.release(i);
    }

    // Out of line: inlined into the callers, its member loop lost a
    // register (callgrind: one more instruction per walked member).
    #[inline(never)]
    fn walk(&self, range: Interval, f: &mut dyn FnMut(Interval, VmaId)) {
        let t = &self.t;
        if crate::trace::recording() {
            crate::trace::touch_val(self, false);
            t.walk_nodes(range.first, range.last, |head, n| {
                let iv = n.interval();
                crate::trace::touch_node(n, false);
                f(iv, n.payload.vma);
                let mut m = n.payload.next;
                while m != head {
                    let mn = t.node(m);
                    crate::trace::touch_node(mn, false);
                    f(iv, mn.payload.vma);
                    m = mn.payload.next;
                }
            });
            return;
        }
        t.walk_nodes(range.first, range.last, |head, n| {
            let iv = n.interval();
            f(iv, n.payload.vma);
            let mut m = n.payload.next;
            while m != head {
                let mn = t.node(m);
                f(iv, mn.payload.vma);
                m = mn.payload.next;
            }
        });
    }

    #[inline]
    fn len(&self) -> usize {
        self.t.live()
    }

    fn heap_bytes(&self) -> usize {
        self.t.heap_bytes()
    }

    fn reserve(&mut self, n: usize) {
        self.t.reserve(n)
    }

    #[cold]
    #[inline(never)]
    fn trace_entry(&self, slot: u32) {
        crate::trace::touch_val(self, true);
        let n = self.t.node(slot);
        crate::trace::touch_node(n, false);
        if n.payload.next != NIL {
            crate::trace::touch_node(self.t.node(n.payload.next), false);
            crate::trace::touch_node(self.t.node(n.payload.prev), false);
        }
        if let Some(head) = self.t.find_exact(n.interval()) {
            super::trace_path(&self.t, head);
        }
    }

    fn trace_snapshot(&self) -> crate::trace::Snapshot {
        crate::trace::snapshot(self.t.nodes())
    }

    fn trace_changed(&self, before: crate::trace::Snapshot) {
        crate::trace::touch_changed(before, self.t.nodes(), |n| n.is_live());
    }
}

#[cfg(test)]
mod tests {
    use super::super::shardset::ShardTree;
    use super::*;

    #[test]
    fn groups_and_heads() {
        let mut g = GroupTree::new();
        let a = Interval {
            first: 10,
            last: 20,
        };
        let b = Interval {
            first: 15,
            last: 30,
        };
        let mut hs = Vec::new();
        for v in 0..50u64 {
            hs.push(g.insert(if v % 2 == 0 { a } else { b }, v));
        }
        let (s, gen) = hs[0];
        let child = g.insert_after(s, gen, a, 100).unwrap();
        hs.push(child);
        // Remove heads first: exercises replace().
        for &(s, gen) in &hs {
            g.check(s, gen).unwrap();
            g.remove_checked(s);
            assert!(g.check(s, gen).is_err());
            let mut seen = 0;
            g.walk(
                Interval {
                    first: 0,
                    last: 100,
                },
                &mut |_, _| seen += 1,
            );
            assert_eq!(seen, g.len());
            g.t.check();
        }
        assert_eq!(g.len(), 0);
    }
}
