//! An arena-backed augmented red-black interval tree, written for this crate.
//!
//! This is the structure behind the kernel's `i_mmap` (an `rb_root_cached` of
//! VMAs keyed by `vm_pgoff`, each node caching the largest `last` of its
//! subtree). The algorithms are the textbook ones (CLRS ch. 13 and 14.3,
//! "augmenting data structures"); the code is our own.
//!
//! # Layout
//!
//! Nodes live in one `Vec` (the arena) and refer to each other by `u32`
//! index, `NIL` (`u32::MAX`) meaning "none". A slot is allocated first
//! ([`IntervalTree::alloc`]) and linked into the tree separately
//! ([`IntervalTree::link`]), so that a design can keep slots *outside* the
//! tree (the `aspace` design hangs the members of a group of identical
//! intervals off one linked node). Freed slots go on a free list threaded
//! through `left`, and each slot carries a generation so that a stale handle
//! is detected instead of aliasing a new entry.
//!
//! ```text
//!  Node<P> (48 bytes with P = u64, 56 with P = 16 bytes)
//!  +-------+------+----------+------+-------+--------+------------------+---------+
//!  | first | last | max_last | left | right | parent | meta             | payload |
//!  |  u64  | u64  |   u64    | u32  |  u32  |  u32   | red|live|tree|gen|    P    |
//!  +-------+------+----------+------+-------+--------+------------------+---------+
//! ```
//!
//! Keys are `(first, last)`; equal keys go to the right on insert, as in the
//! kernel. `max_last` is the largest `last` in the node's subtree.
//!
//! # Costs
//!
//! `link`/`unlink` are O(log n); `alloc`/`free`/`replace` are O(1); a walk is
//! O(log n + k) for k reported nodes. Memory is `capacity * size_of::<Node<P>>()`.

use crate::Interval;

/// "No node".
pub(crate) const NIL: u32 = u32::MAX;

const RED: u32 = 1 << 31;
const LIVE: u32 = 1 << 30;
const IN_TREE: u32 = 1 << 29;
const GEN_MASK: u32 = IN_TREE - 1;

/// One arena slot.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node<P> {
    pub(crate) first: u64,
    pub(crate) last: u64,
    max_last: u64,
    left: u32,
    right: u32,
    parent: u32,
    meta: u32,
    pub(crate) payload: P,
}

impl<P> Node<P> {
    #[inline]
    pub(crate) fn interval(&self) -> Interval {
        Interval {
            first: self.first,
            last: self.last,
        }
    }
    #[inline]
    fn is_red(&self) -> bool {
        self.meta & RED != 0
    }
    #[inline]
    pub(crate) fn in_tree(&self) -> bool {
        self.meta & IN_TREE != 0
    }
}

/// The tree. Not synchronised: every design wraps it in its own locks.
#[derive(Debug)]
pub(crate) struct IntervalTree<P> {
    nodes: Vec<Node<P>>,
    root: u32,
    free: u32,
    /// Number of allocated (live) slots.
    live: u32,
}

impl<P: Copy> Default for IntervalTree<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: Copy> IntervalTree<P> {
    pub(crate) const fn new() -> Self {
        IntervalTree {
            nodes: Vec::new(),
            root: NIL,
            free: NIL,
            live: 0,
        }
    }

    /// Live slots (in the tree or not).
    #[inline]
    pub(crate) fn live(&self) -> usize {
        self.live as usize
    }

    /// Heap bytes held by the arena (capacity, not length).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node<P>>()
    }

    /// Reserves room for `n` more slots.
    pub(crate) fn reserve(&mut self, n: usize) {
        let free_slots = self.nodes.len() - self.live as usize;
        if n > free_slots {
            self.nodes.reserve(n - free_slots);
        }
    }

    #[inline]
    pub(crate) fn node(&self, i: u32) -> &Node<P> {
        &self.nodes[i as usize]
    }

    #[inline]
    pub(crate) fn node_mut(&mut self, i: u32) -> &mut Node<P> {
        &mut self.nodes[i as usize]
    }

    /// The generation of a live slot (what a handle records).
    #[inline]
    pub(crate) fn gen(&self, i: u32) -> u32 {
        self.nodes[i as usize].meta & GEN_MASK
    }

    /// True when `i` names a live slot of generation `gen`.
    #[inline]
    pub(crate) fn is_live(&self, i: u32, gen: u32) -> bool {
        match self.nodes.get(i as usize) {
            Some(n) => n.meta & LIVE != 0 && n.meta & GEN_MASK == gen,
            None => false,
        }
    }

    /// Allocates a slot (not linked into the tree). O(1) amortised.
    pub(crate) fn alloc(&mut self, iv: Interval, payload: P) -> u32 {
        self.live += 1;
        if self.free != NIL {
            let i = self.free;
            let n = &mut self.nodes[i as usize];
            self.free = n.left;
            let gen = n.meta & GEN_MASK;
            *n = Node {
                first: iv.first,
                last: iv.last,
                max_last: iv.last,
                left: NIL,
                right: NIL,
                parent: NIL,
                meta: LIVE | gen,
                payload,
            };
            i
        } else {
            let i = self.nodes.len() as u32;
            self.nodes.push(Node {
                first: iv.first,
                last: iv.last,
                max_last: iv.last,
                left: NIL,
                right: NIL,
                parent: NIL,
                meta: LIVE,
                payload,
            });
            i
        }
    }

    /// Frees a live slot that is not in the tree; bumps its generation.
    pub(crate) fn free(&mut self, i: u32) {
        let free = self.free;
        let n = &mut self.nodes[i as usize];
        debug_assert!(n.meta & LIVE != 0 && n.meta & IN_TREE == 0);
        n.meta = (n.meta.wrapping_add(1)) & GEN_MASK;
        n.left = free;
        self.free = i;
        self.live -= 1;
    }

    // ----- small helpers -------------------------------------------------

    #[inline]
    fn left(&self, i: u32) -> u32 {
        self.nodes[i as usize].left
    }
    #[inline]
    fn right(&self, i: u32) -> u32 {
        self.nodes[i as usize].right
    }
    #[inline]
    fn parent(&self, i: u32) -> u32 {
        self.nodes[i as usize].parent
    }
    #[inline]
    fn red(&self, i: u32) -> bool {
        i != NIL && self.nodes[i as usize].is_red()
    }
    #[inline]
    fn set_red(&mut self, i: u32, red: bool) {
        let n = &mut self.nodes[i as usize];
        if red {
            n.meta |= RED;
        } else {
            n.meta &= !RED;
        }
    }
    #[inline]
    fn max_of(&self, i: u32) -> u64 {
        if i == NIL {
            0
        } else {
            self.nodes[i as usize].max_last
        }
    }
    #[inline]
    fn recompute(&mut self, i: u32) {
        let n = &self.nodes[i as usize];
        let m = n.last.max(self.max_of(n.left)).max(self.max_of(n.right));
        self.nodes[i as usize].max_last = m;
    }

    /// Makes `new` take `old`'s place under `old`'s parent (or as root).
    #[inline]
    fn replace_child(&mut self, parent: u32, old: u32, new: u32) {
        if parent == NIL {
            self.root = new;
        } else if self.left(parent) == old {
            self.nodes[parent as usize].left = new;
        } else {
            self.nodes[parent as usize].right = new;
        }
    }

    fn rotate_left(&mut self, x: u32) {
        let y = self.right(x);
        let yl = self.left(y);
        let xp = self.parent(x);
        self.nodes[x as usize].right = yl;
        if yl != NIL {
            self.nodes[yl as usize].parent = x;
        }
        self.nodes[y as usize].parent = xp;
        self.replace_child(xp, x, y);
        self.nodes[y as usize].left = x;
        self.nodes[x as usize].parent = y;
        // The subtree's maximum does not change; y now roots it.
        self.nodes[y as usize].max_last = self.nodes[x as usize].max_last;
        self.recompute(x);
    }

    fn rotate_right(&mut self, x: u32) {
        let y = self.left(x);
        let yr = self.right(y);
        let xp = self.parent(x);
        self.nodes[x as usize].left = yr;
        if yr != NIL {
            self.nodes[yr as usize].parent = x;
        }
        self.nodes[y as usize].parent = xp;
        self.replace_child(xp, x, y);
        self.nodes[y as usize].right = x;
        self.nodes[x as usize].parent = y;
        self.nodes[y as usize].max_last = self.nodes[x as usize].max_last;
        self.recompute(x);
    }

    #[inline]
    fn key_less(a: (u64, u64), b: (u64, u64)) -> bool {
        a < b
    }

    // ----- insertion -----------------------------------------------------

    /// Links allocated slot `z` into the tree by key (equal keys to the right).
    pub(crate) fn link(&mut self, z: u32) {
        let key = {
            let n = &self.nodes[z as usize];
            (n.first, n.last)
        };
        let mut parent = NIL;
        let mut cur = self.root;
        let mut go_left = false;
        while cur != NIL {
            parent = cur;
            let n = &self.nodes[cur as usize];
            go_left = Self::key_less(key, (n.first, n.last));
            cur = if go_left { n.left } else { n.right };
        }
        self.attach(z, parent, go_left);
    }

    /// Links `z` immediately after `parent_node` in key order (fork's
    /// `insert_after`). The caller guarantees `z`'s key equals `parent_node`'s.
    pub(crate) fn link_after(&mut self, parent_node: u32, z: u32) {
        debug_assert!(self.nodes[parent_node as usize].in_tree());
        let r = self.right(parent_node);
        if r == NIL {
            self.attach(z, parent_node, false);
        } else {
            let mut q = r;
            while self.left(q) != NIL {
                q = self.left(q);
            }
            self.attach(z, q, true);
        }
    }

    fn attach(&mut self, z: u32, parent: u32, as_left: bool) {
        {
            let n = &mut self.nodes[z as usize];
            n.left = NIL;
            n.right = NIL;
            n.parent = parent;
            n.max_last = n.last;
            n.meta |= RED | IN_TREE;
        }
        if parent == NIL {
            self.root = z;
        } else if as_left {
            self.nodes[parent as usize].left = z;
        } else {
            self.nodes[parent as usize].right = z;
        }
        // Augment: raise max_last along the path until it already covers z.
        let last = self.nodes[z as usize].last;
        let mut p = parent;
        while p != NIL && self.nodes[p as usize].max_last < last {
            self.nodes[p as usize].max_last = last;
            p = self.parent(p);
        }
        self.insert_fixup(z);
    }

    fn insert_fixup(&mut self, mut z: u32) {
        loop {
            let p = self.parent(z);
            if !self.red(p) {
                break;
            }
            // p is red, so it is not the root and has a parent.
            let g = self.parent(p);
            if p == self.left(g) {
                let u = self.right(g);
                if self.red(u) {
                    self.set_red(p, false);
                    self.set_red(u, false);
                    self.set_red(g, true);
                    z = g;
                } else {
                    if z == self.right(p) {
                        z = p;
                        self.rotate_left(z);
                    }
                    let p = self.parent(z);
                    let g = self.parent(p);
                    self.set_red(p, false);
                    self.set_red(g, true);
                    self.rotate_right(g);
                }
            } else {
                let u = self.left(g);
                if self.red(u) {
                    self.set_red(p, false);
                    self.set_red(u, false);
                    self.set_red(g, true);
                    z = g;
                } else {
                    if z == self.left(p) {
                        z = p;
                        self.rotate_right(z);
                    }
                    let p = self.parent(z);
                    let g = self.parent(p);
                    self.set_red(p, false);
                    self.set_red(g, true);
                    self.rotate_left(g);
                }
            }
        }
        let root = self.root;
        self.set_red(root, false);
    }

    // ----- lookup --------------------------------------------------------

    /// Finds a linked node whose key is exactly `iv`.
    pub(crate) fn find_exact(&self, iv: Interval) -> Option<u32> {
        let key = (iv.first, iv.last);
        let mut cur = self.root;
        while cur != NIL {
            let n = &self.nodes[cur as usize];
            let k = (n.first, n.last);
            if key == k {
                return Some(cur);
            }
            cur = if key < k { n.left } else { n.right };
        }
        None
    }

    // ----- removal -------------------------------------------------------

    /// Puts `new` (a live slot outside the tree) in linked node `old`'s place.
    /// Both must have the same key. O(1). `old` leaves the tree (still live).
    pub(crate) fn replace(&mut self, old: u32, new: u32) {
        let o = self.nodes[old as usize];
        debug_assert!(o.in_tree());
        {
            let n = &mut self.nodes[new as usize];
            debug_assert_eq!((n.first, n.last), (o.first, o.last));
            n.left = o.left;
            n.right = o.right;
            n.parent = o.parent;
            n.max_last = o.max_last;
            n.meta = (n.meta & !RED) | (o.meta & RED) | IN_TREE;
        }
        self.replace_child(o.parent, old, new);
        if o.left != NIL {
            self.nodes[o.left as usize].parent = new;
        }
        if o.right != NIL {
            self.nodes[o.right as usize].parent = new;
        }
        let on = &mut self.nodes[old as usize];
        on.meta &= !(IN_TREE | RED);
        on.left = NIL;
        on.right = NIL;
        on.parent = NIL;
    }

    /// Takes linked node `z` out of the tree (the slot stays live).
    pub(crate) fn unlink(&mut self, z: u32) {
        debug_assert!(self.nodes[z as usize].in_tree());
        let zl = self.left(z);
        let zr = self.right(z);
        let removed_red;
        let x;
        let xp;
        if zl == NIL || zr == NIL {
            x = if zl == NIL { zr } else { zl };
            xp = self.parent(z);
            removed_red = self.red(z);
            self.replace_child(xp, z, x);
            if x != NIL {
                self.nodes[x as usize].parent = xp;
            }
        } else {
            // y: z's in-order successor, which has no left child.
            let mut y = zr;
            while self.left(y) != NIL {
                y = self.left(y);
            }
            removed_red = self.red(y);
            x = self.right(y);
            if self.parent(y) == z {
                xp = y;
            } else {
                xp = self.parent(y);
                self.replace_child(xp, y, x);
                if x != NIL {
                    self.nodes[x as usize].parent = xp;
                }
                self.nodes[y as usize].right = zr;
                self.nodes[zr as usize].parent = y;
            }
            let zp = self.parent(z);
            self.replace_child(zp, z, y);
            self.nodes[y as usize].parent = zp;
            self.nodes[y as usize].left = zl;
            self.nodes[zl as usize].parent = y;
            let zred = self.red(z);
            self.set_red(y, zred);
        }
        // Augment: every node from xp to the root may have lost z's (or y's
        // old) `last`; y itself sits on that path. Recompute them all.
        let mut p = xp;
        while p != NIL {
            self.recompute(p);
            p = self.parent(p);
        }
        if !removed_red {
            self.delete_fixup(x, xp);
        }
        let zn = &mut self.nodes[z as usize];
        zn.meta &= !(IN_TREE | RED);
        zn.left = NIL;
        zn.right = NIL;
        zn.parent = NIL;
    }

    fn delete_fixup(&mut self, mut x: u32, mut xp: u32) {
        while x != self.root && !self.red(x) {
            if x == self.left(xp) {
                let mut w = self.right(xp);
                if self.red(w) {
                    self.set_red(w, false);
                    self.set_red(xp, true);
                    self.rotate_left(xp);
                    w = self.right(xp);
                }
                if !self.red(self.left(w)) && !self.red(self.right(w)) {
                    self.set_red(w, true);
                    x = xp;
                    xp = self.parent(x);
                } else {
                    if !self.red(self.right(w)) {
                        let wl = self.left(w);
                        self.set_red(wl, false);
                        self.set_red(w, true);
                        self.rotate_right(w);
                        w = self.right(xp);
                    }
                    let pred = self.red(xp);
                    self.set_red(w, pred);
                    self.set_red(xp, false);
                    let wr = self.right(w);
                    self.set_red(wr, false);
                    self.rotate_left(xp);
                    x = self.root;
                    break;
                }
            } else {
                let mut w = self.left(xp);
                if self.red(w) {
                    self.set_red(w, false);
                    self.set_red(xp, true);
                    self.rotate_right(xp);
                    w = self.left(xp);
                }
                if !self.red(self.left(w)) && !self.red(self.right(w)) {
                    self.set_red(w, true);
                    x = xp;
                    xp = self.parent(x);
                } else {
                    if !self.red(self.left(w)) {
                        let wr = self.right(w);
                        self.set_red(wr, false);
                        self.set_red(w, true);
                        self.rotate_left(w);
                        w = self.left(xp);
                    }
                    let pred = self.red(xp);
                    self.set_red(w, pred);
                    self.set_red(xp, false);
                    let wl = self.left(w);
                    self.set_red(wl, false);
                    self.rotate_right(xp);
                    x = self.root;
                    break;
                }
            }
        }
        if x != NIL {
            self.set_red(x, false);
        }
    }

    // ----- walk ----------------------------------------------------------

    /// Calls `f(node_index)` for every linked node overlapping `[a, b]`, in
    /// key order. O(log n + k).
    #[inline]
    pub(crate) fn walk_nodes(&self, a: u64, b: u64, mut f: impl FnMut(u32, &Node<P>)) {
        // Red-black height is at most 2*log2(n+1) <= 64 for n < 2^32.
        let mut stack = [NIL; 64];
        let mut sp = 0usize;
        let mut cur = self.root;
        loop {
            while cur != NIL {
                let n = &self.nodes[cur as usize];
                if n.max_last < a {
                    break;
                }
                stack[sp] = cur;
                sp += 1;
                cur = n.left;
            }
            if sp == 0 {
                return;
            }
            sp -= 1;
            let i = stack[sp];
            let n = &self.nodes[i as usize];
            if n.first > b {
                // Every later node in key order starts after b too.
                return;
            }
            if n.last >= a {
                f(i, n);
            }
            cur = n.right;
        }
    }

    /// Checks the red-black and augmentation invariants (tests only).
    #[cfg(test)]
    pub(crate) fn check(&self) -> usize {
        fn rec<P: Copy>(
            t: &IntervalTree<P>,
            i: u32,
            lo: (u64, u64),
            count: &mut usize,
        ) -> (u32, u64) {
            if i == NIL {
                return (1, 0);
            }
            *count += 1;
            let n = t.node(i);
            assert!(n.in_tree());
            assert!((n.first, n.last) >= lo, "order");
            if n.is_red() {
                assert!(!t.red(n.left) && !t.red(n.right), "red-red");
            }
            if n.left != NIL {
                assert_eq!(t.parent(n.left), i);
                assert!((t.node(n.left).first, t.node(n.left).last) <= (n.first, n.last));
            }
            if n.right != NIL {
                assert_eq!(t.parent(n.right), i);
            }
            let (bl, ml) = rec(t, n.left, lo, count);
            let (br, mr) = rec(t, n.right, (n.first, n.last), count);
            assert_eq!(bl, br, "black height");
            let m = n.last.max(ml).max(mr);
            assert_eq!(m, n.max_last, "augment");
            (bl + u32::from(!n.is_red()), m)
        }
        let mut count = 0;
        if self.root != NIL {
            assert_eq!(self.parent(self.root), NIL);
            assert!(!self.red(self.root));
        }
        rec(self, self.root, (0, 0), &mut count);
        count
    }
}

/// Methods added for the designs (generation retirement, the event
/// recorder); kept apart from the tree algorithm above.
impl<P: Copy> IntervalTree<P> {
    /// Frees a live slot that is not in the tree, like [`IntervalTree::free`],
    /// except that a slot whose generation is the last one is *retired*
    /// instead: it is never reused, so no generation ever repeats and a
    /// removed handle can never name a live entry again. A retired slot
    /// costs its arena bytes for the tree's life: one slot per 2^29 frees of
    /// that slot.
    #[inline]
    pub(crate) fn release(&mut self, i: u32) {
        if self.nodes[i as usize].meta & GEN_MASK == GEN_MASK {
            let n = &mut self.nodes[i as usize];
            debug_assert!(n.meta & LIVE != 0 && n.meta & IN_TREE == 0);
            // Not live, not on the free list: dead for good.
            n.meta = GEN_MASK;
            n.left = NIL;
            self.live -= 1;
        } else {
            self.free(i);
        }
    }

    /// The largest generation a slot can have.
    #[cfg(test)]
    pub(crate) const LAST_GEN: u32 = GEN_MASK;

    /// Sets the generation of slot `i` (tests that force a wrap-around).
    #[cfg(test)]
    pub(crate) fn set_gen_for_test(&mut self, i: u32, gen: u32) {
        let n = &mut self.nodes[i as usize];
        n.meta = (n.meta & !GEN_MASK) | (gen & GEN_MASK);
    }

    /// The parent of linked node `i` (`NIL` at the root).
    #[inline]
    pub(crate) fn parent_of(&self, i: u32) -> u32 {
        self.nodes[i as usize].parent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(a: u64, b: u64) -> Interval {
        Interval { first: a, last: b }
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    #[test]
    fn random_against_vec() {
        let mut t: IntervalTree<u64> = IntervalTree::new();
        let mut model: Vec<(u32, u32, Interval)> = Vec::new();
        let mut rng = Rng(0x9e3779b97f4a7c15);
        for step in 0..20_000u64 {
            let r = rng.next();
            if model.is_empty() || r % 3 != 0 {
                let a = rng.next() % 200;
                let b = a + rng.next() % 50;
                let i = t.alloc(iv(a, b), step);
                if r % 7 == 0 && !model.is_empty() {
                    // link_after an existing node with the same key.
                    let (p, _, piv) = model[(rng.next() as usize) % model.len()];
                    t.node_mut(i).first = piv.first;
                    t.node_mut(i).last = piv.last;
                    t.link_after(p, i);
                    model.push((i, t.gen(i), piv));
                } else {
                    t.link(i);
                    model.push((i, t.gen(i), iv(a, b)));
                }
            } else {
                let k = (rng.next() as usize) % model.len();
                let (i, g, _) = model.swap_remove(k);
                assert!(t.is_live(i, g));
                t.unlink(i);
                t.free(i);
                assert!(!t.is_live(i, g));
            }
            if step % 512 == 0 {
                assert_eq!(t.check(), model.len());
                let a = rng.next() % 260;
                let b = a + rng.next() % 40;
                let mut got: Vec<u32> = Vec::new();
                t.walk_nodes(a, b, |i, _| got.push(i));
                let mut want: Vec<u32> = model
                    .iter()
                    .filter(|(_, _, v)| v.first <= b && v.last >= a)
                    .map(|m| m.0)
                    .collect();
                got.sort_unstable();
                want.sort_unstable();
                assert_eq!(got, want);
            }
        }
        assert_eq!(t.check(), model.len());
    }

    #[test]
    fn replace_keeps_invariants() {
        let mut t: IntervalTree<u64> = IntervalTree::new();
        let mut nodes = Vec::new();
        for k in 0..100u64 {
            let i = t.alloc(iv(k, k + 3), k);
            t.link(i);
            nodes.push(i);
        }
        for (k, &old) in nodes.iter().enumerate() {
            let k = k as u64;
            let new = t.alloc(iv(k, k + 3), 1000 + k);
            t.replace(old, new);
            t.free(old);
        }
        assert_eq!(t.check(), 100);
    }
}
