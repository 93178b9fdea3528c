//! Restoring the node invariants after a leaf rewrite: boundary shifts,
//! merges and borrows between siblings, and root collapse.

use super::*;

impl<T> Txn<'_, T> {
    // ----- restoring invariants ---------------------------------------------

    /// Restores invariants 2 and 3 around the leaves covering `a` and `b`
    /// (the ends of the range just written) and around the leaves a boundary
    /// shift touches.
    pub(super) fn normalize(&mut self, a: u64, b: u64) {
        let mut todo = [0u64; 8];
        let mut pending = 2;
        todo[0] = b;
        todo[1] = a;
        let mut path = Path::new();
        while pending > 0 {
            pending -= 1;
            let ix = todo[pending];
            loop {
                if self.root.is_null() {
                    return;
                }
                self.descend_fresh(ix, &mut path);
                let l = *path.leaf();
                // SAFETY: l.node is a fresh leaf.
                let leaf = unsafe { &*l.node.cast::<Leaf<T>>() };
                let n = leaf.hdr.count as usize;
                let last_free = leaf.slot(n - 1).is_null();
                if path.len == 1 {
                    if n == 1 && last_free {
                        self.retire_node(l.node);
                        self.root = ptr::null_mut();
                    }
                    break;
                }
                let rightmost = l.hi == u64::MAX;
                if !rightmost && last_free {
                    if n == 1 {
                        let d = path.len - 1;
                        if !self.rebalance(&mut path, d) {
                            break;
                        }
                    } else {
                        let t = self.shift_boundary(&mut path);
                        // Each pass pops one index and pushes at most one per
                        // boundary shift, and a leaf shifts at most once
                        // before it ends on a value, so a few slots suffice.
                        debug_assert!(pending < todo.len(), "normalize worklist overflow");
                        if pending < todo.len() {
                            todo[pending] = t - 1;
                            pending += 1;
                        }
                    }
                    continue;
                }
                // SAFETY: the parent on the path is a valid fresh node.
                let parent_n = unsafe { count(path.lv[path.len - 2].node) };
                let under = if rightmost {
                    n == 1 && last_free && parent_n > 1
                } else {
                    n < MIN_LEAF
                };
                let d = path.len - 1;
                if under && self.rebalance(&mut path, d) {
                    continue;
                }
                break;
            }
        }
    }

    /// The path's leaf ends in a free run `[t, hi]` but is not rightmost: give
    /// the run to the successor leaf by lowering the pivot that separates them
    /// (in their lowest common ancestor). Returns `t`.
    fn shift_boundary(&mut self, path: &mut Path) -> u64 {
        let d_leaf = path.len - 1;
        let l = path.lv[d_leaf];
        // SAFETY: fresh leaf on the path.
        let leaf = unsafe { &mut *l.node.cast::<Leaf<T>>() };
        let n = leaf.hdr.count as usize;
        debug_assert!(n >= 2 && leaf.slot(n - 1).is_null());
        let t = leaf.pivots[n - 2] + 1;
        let old_hi = l.hi;
        leaf.set_slot(n - 1, ptr::null_mut());
        leaf.pivots[n - 2] = u64::MAX;
        leaf.hdr.count = (n - 1) as u8;
        // (The dropped slot was a gap: the used mask has no bit for it.)
        debug_assert_eq!(leaf.hdr.used >> (n - 1), 0);
        // Lowest ancestor where the leaf's subtree is not the last child.
        let mut d = d_leaf - 1;
        // SAFETY: path nodes are fresh and valid.
        while path.lv[d].idx + 1 == unsafe { count(path.lv[d].node) } {
            d -= 1;
        }
        let anc = path.lv[d];
        // SAFETY: anc.node is a fresh internal node.
        unsafe {
            let int = &mut *anc.node.cast::<Internal>();
            debug_assert_eq!(int.pivots[anc.idx], old_hi);
            int.pivots[anc.idx] = t - 1;
            int.hdr.dirty |= 1 << anc.idx;
        }
        // Path to the successor: the rest of the fresh descent to `t` from
        // `anc` (the levels above are the path's own, already fresh): `t`
        // now lies in the next child of `anc` and, below it, left of every
        // pivot (they are above `old_hi`), so the descent follows the
        // leftmost edge to the successor leaf.
        let mut spath = Path::new();
        spath.lv[..=d].copy_from_slice(&path.lv[..=d]);
        self.descend_fresh_below(&mut spath, d, t, None);
        debug_assert!(spath.lv[d].idx == anc.idx + 1);
        debug_assert_eq!(spath.leaf().idx, 0);
        // SAFETY: the successor leaf is fresh.
        let succ = unsafe { &*spath.leaf().node.cast::<Leaf<T>>() };
        if !succ.slot(0).is_null() {
            let sl = *spath.leaf();
            let sn = succ.hdr.count as usize;
            let mut out = Out::<T>::new();
            out.push(old_hi, ptr::null_mut());
            for i in 0..sn {
                let (_, e) = slot_range(&succ.pivots, sn, i, sl.lo, sl.hi);
                out.push(e, succ.slot(i));
            }
            self.leaf_commit(&mut spath, &out, false);
        }
        t
    }

    /// The node at `path.lv[d]` is underfull (or an all-free leaf): merge it
    /// with a sibling, or borrow from one, then fix the parent in turn.
    fn rebalance(&mut self, path: &mut Path, d: usize) -> bool {
        debug_assert!(d >= 1);
        let par = path.lv[d - 1];
        let pnode = par.node;
        // SAFETY: the parent is fresh and internal; the nodes read are valid.
        let pn = unsafe { count(pnode) };
        if pn < 2 {
            // Cannot happen while invariant 3 holds; refuse rather than loop.
            return false;
        }
        let k = par.idx;
        let j = if k > 0 { k - 1 } else { k };
        // SAFETY: pnode is fresh internal.
        let (a, b, lo_a, mid, hi_b) = unsafe {
            let ca = (*pnode.cast::<Internal>()).child(j);
            let cb = (*pnode.cast::<Internal>()).child(j + 1);
            let a = self.make_fresh(ca);
            let b = self.make_fresh(cb);
            let int = &mut *pnode.cast::<Internal>();
            int.set_child(j, a);
            int.set_child(j + 1, b);
            let (lo_a, mid) = slot_range(&int.pivots, pn, j, par.lo, par.hi);
            let (_, hi_b) = slot_range(&int.pivots, pn, j + 1, par.lo, par.hi);
            (a, b, lo_a, mid, hi_b)
        };
        // SAFETY: a and b are fresh siblings of the same kind.
        let merged = unsafe {
            if (*a).kind == KIND_LEAF {
                let mut out = Out::<T>::new();
                for (node, lo, hi) in [(a, lo_a, mid), (b, mid + 1, hi_b)] {
                    let leaf = &*node.cast::<Leaf<T>>();
                    let n = leaf.hdr.count as usize;
                    for i in 0..n {
                        let (_, e) = slot_range(&leaf.pivots, n, i, lo, hi);
                        out.push(e, leaf.slot(i));
                    }
                }
                if out.n <= LEAF_SLOTS {
                    write_leaf(a, &out, 0, out.n);
                    true
                } else {
                    let m1 = out.split_at(out.n / 2);
                    write_leaf(a, &out, 0, m1);
                    write_leaf(b, &out, m1, out.n);
                    (*pnode.cast::<Internal>()).pivots[j] = out.ends[m1 - 1];
                    false
                }
            } else {
                let mut kids = Kids::of(a);
                kids.append(mid, &Kids::of(b));
                if kids.n <= INT_SLOTS {
                    kids.write(a, 0, kids.n);
                    true
                } else {
                    let m1 = kids.n / 2;
                    kids.write(a, 0, m1);
                    kids.write(b, m1, kids.n);
                    (*pnode.cast::<Internal>()).pivots[j] = kids.pivots[m1 - 1];
                    false
                }
            }
        };
        // SAFETY: pnode is fresh internal.
        unsafe {
            if merged {
                let mut kids = Kids::of(pnode);
                kids.remove(j + 1);
                kids.write(pnode, 0, kids.n);
                self.retire_node(b);
            } else {
                (*pnode).dirty |= (1 << j) | (1 << (j + 1));
            }
        }
        if d - 1 == 0 {
            self.collapse_root();
        } else if merged {
            // SAFETY: pnode is valid.
            let n = unsafe { count(pnode) };
            if par.hi != u64::MAX && n < MIN_INTERNAL {
                self.rebalance(path, d - 1);
            }
        }
        true
    }

    /// A root with a single child gives way to that child.
    fn collapse_root(&mut self) {
        // SAFETY: the root is valid; a one-child internal root is fresh here
        // because rebalance just rewrote it.
        unsafe {
            while !self.root.is_null() && !is_leaf(self.root) && count(self.root) == 1 {
                let old = self.root;
                self.root = (*old.cast::<Internal>()).child(0);
                self.retire_node(old);
            }
        }
    }
}
