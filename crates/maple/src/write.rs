//! The write engine: one [`Txn`] per tree operation.
//!
//! The common write changes one leaf without moving its bounds:
//! [`Txn::try_swap_leaf`] builds the new leaf privately and swaps it into
//! its parent with one release store. Every other write descends making
//! each node on its path *fresh* (a private copy, flag [`FRESH`]), changes
//! fresh nodes in place, then [`Txn::commit`] recomputes the gaps of the
//! nodes it dirtied and publishes the new root with one release store.
//! Either way a reader sees each leaf whole, old or new, and replaced nodes
//! and values are retired through the epoch collector. Under `&mut`
//! (exclusive mode) there are no readers, so every node counts as fresh and
//! nothing is copied.
//!
//! Every operation reduces to [`Txn::store`] of `[a, b]` to a value or to
//! null. When `[a, b]` lies in one leaf (the common case) that is one leaf
//! rewrite; otherwise the range is first cleared leaf by leaf and then
//! filled, all inside the same transaction.
//!
//! After a rewrite, [`Txn::normalize`] restores the node invariants:
//! a node off the rightmost path that now ends in a free run hands that run
//! to its successor leaf by moving one pivot in the lowest common ancestor
//! ([`Txn::shift_boundary`]); an underfull node merges with, or borrows from,
//! a sibling ([`Txn::rebalance`]); a root with one child collapses.

use std::ptr;

use crossbeam_epoch::Guard;

use crate::mem::{free_block, BlockPool};
use crate::node::{
    init_internal, init_leaf, internal_gap, leaf_gap, slot_in, slot_range, Internal, Leaf, NodePtr,
    FRESH, INT_SLOTS, KIND_LEAF, LEAF_SLOTS, MIN_INTERNAL, MIN_LEAF, NODE_BYTES,
};
use crate::read::{count, descend, is_leaf, Level, Path};

/// Flag of a fresh node that this write also retired.
const DEAD: u8 = 2;
/// Room for the concatenation of two full leaves plus a prepended gap.
const OUT_CAP: usize = 2 * LEAF_SLOTS + 2;

/// State kept between writes under the writer lock, so that steady-state
/// writes reuse these buffers instead of allocating.
pub(crate) struct WriterState<T> {
    /// Nodes this write allocated (their FRESH flag is cleared at commit).
    fresh: Vec<NodePtr>,
    retired_nodes: Vec<NodePtr>,
    retired_values: Vec<*mut T>,
    /// The tree's free node blocks and recycler (see `mem.rs`).
    pub(crate) pool: BlockPool,
    /// Under loom, deferred work waits here until the tree is dropped (no
    /// reader can remain then): crossbeam-epoch would run it outside the
    /// loom execution that owns its atomics.
    #[cfg(loom)]
    deferred: Vec<Box<dyn FnOnce() + Send>>,
}

// SAFETY: the raw pointers are owned node blocks and boxed values of the tree;
// the state is only touched by the writer holding the lock (or `&mut`).
unsafe impl<T: Send> Send for WriterState<T> {}

impl<T> WriterState<T> {
    pub(crate) fn new() -> Self {
        WriterState {
            fresh: Vec::new(),
            retired_nodes: Vec::new(),
            retired_values: Vec::new(),
            pool: BlockPool::new(),
            #[cfg(loom)]
            deferred: Vec::new(),
        }
    }

    /// Forgets a write that unwound (a panicking `T::clone`) before commit:
    /// its fresh nodes were never published and are freed; its retired
    /// nodes and values are still part of the published tree and are kept.
    fn recover(&mut self) {
        for p in self.fresh.drain(..) {
            // SAFETY: fresh nodes were never reachable from a published root.
            unsafe { free_block(p) };
        }
        self.retired_nodes.clear();
        self.retired_values.clear();
    }

    /// Runs `f` once no reader pinned before now can still be pinned.
    ///
    /// # Safety
    /// As `crossbeam_epoch::Guard::defer_unchecked`.
    unsafe fn defer(&mut self, guard: &Guard, f: impl FnOnce() + Send + 'static) {
        #[cfg(not(loom))]
        // SAFETY: forwarded from the caller.
        unsafe {
            guard.defer_unchecked(f)
        };
        #[cfg(loom)]
        {
            let _ = guard;
            self.deferred.push(Box::new(f));
        }
    }
}

#[cfg(loom)]
impl<T> Drop for WriterState<T> {
    fn drop(&mut self) {
        for f in self.deferred.drain(..) {
            f();
        }
    }
}

/// A small fixed-capacity list of `(end, value)` slots being rebuilt.
struct Out<T> {
    ends: [u64; OUT_CAP],
    vals: [*mut T; OUT_CAP],
    n: usize,
}

impl<T> Out<T> {
    fn new() -> Self {
        Out {
            ends: [0; OUT_CAP],
            vals: [ptr::null_mut(); OUT_CAP],
            n: 0,
        }
    }
    /// Appends a slot, merging it into the previous one when both are gaps.
    fn push(&mut self, end: u64, v: *mut T) {
        if v.is_null() && self.n > 0 && self.vals[self.n - 1].is_null() {
            self.ends[self.n - 1] = end;
            return;
        }
        self.ends[self.n] = end;
        self.vals[self.n] = v;
        self.n += 1;
    }
    /// A split point near `want` whose left part ends on a value, so that
    /// the left node ends on an occupied index (invariant 2). No two gaps are
    /// adjacent, so stepping back once always lands on a value.
    fn split_at(&self, want: usize) -> usize {
        let m = want.clamp(1, self.n - 1);
        if self.vals[m - 1].is_null() && m > 1 {
            m - 1
        } else {
            m
        }
    }
}

/// A leaf rewrite worked out before anything is changed: the new slots,
/// the values it drops, and where a value must be cloned.
struct LeafPlan<T> {
    out: Out<T>,
    retire: [*mut T; LEAF_SLOTS],
    n_retire: usize,
    /// Slot of `out` holding the right part of an entry cut in two; it
    /// still points at the original value until the clone is made.
    clone_at: Option<usize>,
    /// Whether the new entry went into the leaf's last slot (append).
    appended_last: bool,
}

impl<T> LeafPlan<T> {
    /// Plans the rewrite of `[a, b]` (inside the leaf `l`) to `v`.
    fn new(leaf: &Leaf<T>, l: Level, a: u64, b: u64, v: *mut T) -> Self {
        let n = leaf.hdr.count as usize;
        let mut plan = LeafPlan {
            out: Out::new(),
            retire: [ptr::null_mut(); LEAF_SLOTS],
            n_retire: 0,
            clone_at: None,
            appended_last: false,
        };
        let out = &mut plan.out;
        let mut placed = false;
        for i in 0..n {
            let (s, e) = slot_range(&leaf.pivots, n, i, l.lo, l.hi);
            let p = leaf.slots[i];
            if e < a {
                out.push(e, p);
                continue;
            }
            if s > b {
                if !placed {
                    out.push(b, v);
                    placed = true;
                }
                out.push(e, p);
                continue;
            }
            let mut kept = false;
            if s < a {
                out.push(a - 1, p);
                kept = true;
            }
            if !placed {
                out.push(b, v);
                placed = true;
                plan.appended_last = i + 1 == n;
            }
            if e > b {
                out.push(e, p);
                if kept && !p.is_null() {
                    plan.clone_at = Some(out.n - 1);
                }
                kept = true;
            }
            if !kept && !p.is_null() {
                plan.retire[plan.n_retire] = p;
                plan.n_retire += 1;
            }
        }
        plan
    }

    /// Whether the rewritten leaf (if it fits) breaks invariant 2 or 3.
    fn needs_normalize(&self, is_root: bool, rightmost: bool) -> bool {
        let m = self.out.n;
        let last_free = self.out.vals[m - 1].is_null();
        if is_root || rightmost {
            m == 1 && last_free
        } else {
            last_free || m < MIN_LEAF
        }
    }
}

/// Writes slots `[from, to)` of `out` into a leaf block.
///
/// # Safety
/// `p` is a fresh (writable) leaf.
unsafe fn write_leaf<T>(p: NodePtr, out: &Out<T>, from: usize, to: usize) {
    // SAFETY: caller guarantees p is a writable leaf.
    let leaf = unsafe { &mut *p.cast::<Leaf<T>>() };
    let k = to - from;
    debug_assert!((1..=LEAF_SLOTS).contains(&k));
    for i in 0..LEAF_SLOTS {
        leaf.slots[i] = if i < k {
            out.vals[from + i]
        } else {
            ptr::null_mut()
        };
    }
    for i in 0..LEAF_SLOTS - 1 {
        leaf.pivots[i] = if i + 1 < k {
            out.ends[from + i]
        } else {
            u64::MAX
        };
    }
    leaf.hdr.count = k as u8;
}

/// Children, separating pivots, gaps and dirty bits of an internal node
/// being rebuilt: `pivots[i]` separates `children[i]` and `children[i + 1]`.
/// Gaps and dirty bits travel with their child, so the gap refresh at
/// commit revisits only the children that really changed (marking a whole
/// rebuilt node dirty made every split re-read all ten siblings).
struct Kids {
    children: [NodePtr; 2 * INT_SLOTS + 1],
    pivots: [u64; 2 * INT_SLOTS],
    gaps: [u64; 2 * INT_SLOTS + 1],
    dirty: u32,
    n: usize,
}

fn low_bits(n: usize) -> u32 {
    if n >= 32 {
        u32::MAX
    } else {
        (1u32 << n) - 1
    }
}

impl Kids {
    fn with(children: &[NodePtr], pivots: &[u64]) -> Self {
        let n = children.len();
        let mut k = Kids {
            children: [ptr::null_mut(); 2 * INT_SLOTS + 1],
            pivots: [u64::MAX; 2 * INT_SLOTS],
            gaps: [0; 2 * INT_SLOTS + 1],
            dirty: low_bits(n),
            n,
        };
        k.children[..n].copy_from_slice(children);
        k.pivots[..n - 1].copy_from_slice(pivots);
        k
    }

    /// # Safety
    /// `p` is a valid internal node.
    unsafe fn of(p: NodePtr) -> Self {
        // SAFETY: caller guarantees validity.
        let int = unsafe { &*p.cast::<Internal>() };
        let n = int.hdr.count as usize;
        let children: [NodePtr; INT_SLOTS] = std::array::from_fn(|i| int.child(i));
        let mut k = Kids::with(&children[..n], &int.pivots[..n - 1]);
        for i in 0..n {
            k.gaps[i] = int.gap(i);
        }
        k.dirty = int.hdr.dirty as u32 & low_bits(n);
        k
    }
    fn append(&mut self, sep: u64, other: &Kids) {
        self.pivots[self.n - 1] = sep;
        self.children[self.n..self.n + other.n].copy_from_slice(&other.children[..other.n]);
        self.pivots[self.n..self.n + other.n - 1].copy_from_slice(&other.pivots[..other.n - 1]);
        self.gaps[self.n..self.n + other.n].copy_from_slice(&other.gaps[..other.n]);
        self.dirty |= other.dirty << self.n;
        self.n += other.n;
    }
    /// Puts `child` at position `at + 1`, separated from `at` by `sep`; both
    /// become dirty (the split node and its new sibling).
    fn insert(&mut self, at: usize, sep: u64, child: NodePtr) {
        self.children.copy_within(at + 1..self.n, at + 2);
        self.children[at + 1] = child;
        self.gaps.copy_within(at + 1..self.n, at + 2);
        if self.n > at + 1 {
            self.pivots.copy_within(at..self.n - 1, at + 1);
        }
        self.pivots[at] = sep;
        let keep = self.dirty & low_bits(at + 1);
        let moved = (self.dirty >> (at + 1)) << (at + 2);
        self.dirty = keep | moved | (1 << at) | (1 << (at + 1));
        self.n += 1;
    }
    /// Removes `children[at]` and the pivot on its left; the left neighbour
    /// (which absorbed it) becomes dirty.
    fn remove(&mut self, at: usize) {
        debug_assert!(at > 0);
        self.children.copy_within(at + 1..self.n, at);
        self.gaps.copy_within(at + 1..self.n, at);
        self.pivots.copy_within(at..self.n - 1, at - 1);
        let keep = self.dirty & low_bits(at);
        let moved = (self.dirty >> (at + 1)) << at;
        self.dirty = keep | moved | (1 << (at - 1));
        self.n -= 1;
        self.pivots[self.n - 1] = u64::MAX;
    }
    /// # Safety
    /// `p` is a fresh internal node.
    unsafe fn write(&self, p: NodePtr, from: usize, to: usize) {
        // SAFETY: caller guarantees p is writable.
        let int = unsafe { &mut *p.cast::<Internal>() };
        let k = to - from;
        debug_assert!((1..=INT_SLOTS).contains(&k));
        for i in 0..INT_SLOTS {
            int.set_child(
                i,
                if i < k {
                    self.children[from + i]
                } else {
                    ptr::null_mut()
                },
            );
            int.set_gap(i, if i < k { self.gaps[from + i] } else { 0 });
        }
        for i in 0..INT_SLOTS - 1 {
            int.pivots[i] = if i + 1 < k {
                self.pivots[from + i]
            } else {
                u64::MAX
            };
        }
        int.hdr.count = k as u8;
        int.hdr.dirty = ((self.dirty >> from) & low_bits(k)) as u16;
    }
}

/// What a finished write hands back to the tree.
pub(crate) struct Committed {
    pub len_delta: isize,
    pub nodes_delta: isize,
}

/// One write operation in progress.
pub(crate) struct Txn<'s, T> {
    st: &'s mut WriterState<T>,
    /// The working root: the published one until the first copy.
    pub(crate) root: NodePtr,
    exclusive: bool,
    len_delta: isize,
    nodes_delta: isize,
    /// Clones a value when a store splits an entry in two; `None` for the
    /// operations that cannot split (insert into free space, erase).
    cloner: Option<fn(&T) -> T>,
}

/// Raw pointers that may cross to the thread running deferred functions.
struct SendPtr<P>(P);
// SAFETY: used only to move batches of retired node blocks and boxed values
// (T: Send, enforced by the tree's bounds) into epoch-deferred destructors.
unsafe impl<P> Send for SendPtr<P> {}

impl<'s, T> Txn<'s, T> {
    pub(crate) fn new(
        st: &'s mut WriterState<T>,
        root: NodePtr,
        exclusive: bool,
        cloner: Option<fn(&T) -> T>,
    ) -> Self {
        st.recover();
        Txn {
            st,
            root,
            exclusive,
            len_delta: 0,
            nodes_delta: 0,
            cloner,
        }
    }

    // ----- allocation and copy-on-write -------------------------------------

    fn alloc(&mut self) -> NodePtr {
        let p = self.take_block();
        if !self.exclusive {
            self.st.fresh.push(p);
        }
        p
    }

    /// A node block from the preallocated pool, else the allocator. Not
    /// tracked as fresh: [`Txn::alloc`] does that, while the leaf swap
    /// publishes its block itself.
    fn take_block(&mut self) -> NodePtr {
        self.nodes_delta += 1;
        self.st.pool.block()
    }

    fn flags(&self) -> u8 {
        if self.exclusive {
            0
        } else {
            FRESH
        }
    }

    fn new_leaf(&mut self) -> NodePtr {
        let p = self.alloc();
        // SAFETY: p is a new block.
        unsafe { init_leaf::<T>(p, self.flags()) };
        p
    }

    fn new_internal(&mut self) -> NodePtr {
        let p = self.alloc();
        // SAFETY: p is a new block.
        unsafe { init_internal(p, self.flags()) };
        p
    }

    /// A writable version of `p`: `p` itself if this write may change it,
    /// else a copy (and `p` is retired).
    fn make_fresh(&mut self, p: NodePtr) -> NodePtr {
        // SAFETY: p is a valid node of the working version.
        if self.exclusive || unsafe { (*p).flags } & FRESH != 0 {
            return p;
        }
        let q = self.alloc();
        // SAFETY: p is valid for reads of one node, q is a new block; readers
        // never see q before commit publishes it.
        unsafe {
            ptr::copy_nonoverlapping(p.cast::<u8>(), q.cast::<u8>(), NODE_BYTES);
            (*q).flags = FRESH;
            (*q).dirty = 0;
        }
        self.retire_node(p);
        q
    }

    fn retire_node(&mut self, p: NodePtr) {
        self.nodes_delta -= 1;
        self.st.retired_nodes.push(p);
    }

    fn retire_value(&mut self, v: *mut T) {
        self.len_delta -= 1;
        self.st.retired_values.push(v);
    }

    /// Takes back the most recently retired value (erase through `&mut`).
    pub(crate) fn take_retired_value(&mut self) -> Option<*mut T> {
        self.st.retired_values.pop()
    }

    /// Descends to the leaf covering `index`, making every node on the way
    /// fresh and marking each taken child dirty for the gap refresh.
    fn descend_fresh(&mut self, index: u64, path: &mut Path) {
        self.root = self.make_fresh(self.root);
        let (mut node, mut lo, mut hi) = (self.root, 0u64, u64::MAX);
        path.len = 0;
        loop {
            // SAFETY: node is fresh and valid; children are valid nodes.
            unsafe {
                let n = count(node);
                if is_leaf(node) {
                    let leaf = &*node.cast::<Leaf<T>>();
                    let i = slot_in(&leaf.pivots, index).min(n - 1);
                    path.lv[path.len] = Level {
                        node,
                        idx: i,
                        lo,
                        hi,
                    };
                    path.len += 1;
                    return;
                }
                let i = slot_in(&(*node.cast::<Internal>()).pivots, index).min(n - 1);
                let child = (*node.cast::<Internal>()).child(i);
                crate::node::prefetch_node(child);
                let child = self.make_fresh(child);
                let int = &mut *node.cast::<Internal>();
                int.set_child(i, child);
                int.hdr.dirty |= 1 << i;
                path.lv[path.len] = Level {
                    node,
                    idx: i,
                    lo,
                    hi,
                };
                path.len += 1;
                let (s, e) = slot_range(&int.pivots, n, i, lo, hi);
                lo = s;
                hi = e;
                node = child;
            }
        }
    }

    /// Like [`Txn::descend_fresh`], but follows a path already known (a
    /// cursor's) instead of searching pivots: the cursor's write does not
    /// walk again from the root. Under copy-on-write the nodes along the
    /// path are still copied; under `&mut` they are used as they are.
    fn descend_fresh_along(&mut self, known: &Path, path: &mut Path) {
        *path = *known;
        self.root = self.make_fresh(self.root);
        path.lv[0].node = self.root;
        for d in 0..path.len - 1 {
            let l = path.lv[d];
            // SAFETY: l.node is fresh; the known path was taken in the current
            // version, so its child index is in range.
            unsafe {
                let child = self.make_fresh((*l.node.cast::<Internal>()).child(l.idx));
                let int = &mut *l.node.cast::<Internal>();
                int.set_child(l.idx, child);
                int.hdr.dirty |= 1 << l.idx;
                path.lv[d + 1].node = child;
            }
        }
    }

    /// [`Txn::store`] through a cursor's path: when `[a, b]` lies inside the
    /// path's leaf, the leaf is reached without a search from the root.
    pub(crate) fn store_at(&mut self, known: &Path, a: u64, b: u64, v: *mut T) {
        if self.root.is_null() || known.len == 0 {
            return self.store(a, b, v);
        }
        let l = *known.leaf();
        if a < l.lo || b > l.hi {
            return self.store(a, b, v);
        }
        if self.try_swap_leaf(Some(known), a, b, v) {
            return;
        }
        let mut path = Path::new();
        self.descend_fresh_along(known, &mut path);
        let idx = {
            // SAFETY: the leaf is fresh and valid.
            let leaf = unsafe { &*path.leaf().node.cast::<Leaf<T>>() };
            slot_in(&leaf.pivots, a).min(leaf.hdr.count as usize - 1)
        };
        path.leaf_set_idx(idx);
        if self.leaf_write(&mut path, a, b, v) {
            self.normalize(a, b);
        }
    }

    // ----- the store ---------------------------------------------------------

    /// Makes every index of `[a, b]` map to `v` (null: free). The caller has
    /// checked `a <= b`.
    pub(crate) fn store(&mut self, a: u64, b: u64, v: *mut T) {
        if self.root.is_null() {
            if v.is_null() {
                return;
            }
            let mut out = Out::new();
            if a > 0 {
                out.push(a - 1, ptr::null_mut());
            }
            out.push(b, v);
            if b < u64::MAX {
                out.push(u64::MAX, ptr::null_mut());
            }
            let leaf = self.new_leaf();
            // SAFETY: leaf is new; out holds 1..=3 slots.
            unsafe { write_leaf(leaf, &out, 0, out.n) };
            self.root = leaf;
            self.len_delta += 1;
            return;
        }
        if self.try_swap_leaf(None, a, b, v) {
            return;
        }
        let mut path = Path::new();
        self.descend_fresh(a, &mut path);
        if b <= path.leaf().hi {
            if self.leaf_write(&mut path, a, b, v) {
                self.normalize(a, b);
            }
            return;
        }
        // The range spans leaves: clear it leaf by leaf, then fill it. After
        // the clear, [a, b] is one free run, so it lies inside one leaf.
        let mut pos = a;
        loop {
            self.descend_fresh(pos, &mut path);
            let end = b.min(path.leaf().hi);
            if self.leaf_write(&mut path, pos, end, ptr::null_mut()) {
                self.normalize(pos, end);
            }
            if end == b {
                break;
            }
            pos = end + 1;
            if self.root.is_null() {
                break;
            }
        }
        if !v.is_null() {
            if self.root.is_null() {
                self.store(a, b, v);
                return;
            }
            self.descend_fresh(a, &mut path);
            debug_assert!(b <= path.leaf().hi, "a free run crossed a node boundary");
            if self.leaf_write(&mut path, a, b, v) {
                self.normalize(a, b);
            }
        }
    }

    /// Rewrites `[a, b]` (inside the path's leaf) to `v`. Returns whether the
    /// leaf may now break an invariant that [`Txn::normalize`] must restore.
    fn leaf_write(&mut self, path: &mut Path, a: u64, b: u64, v: *mut T) -> bool {
        let l = *path.leaf();
        // SAFETY: the path's leaf is fresh.
        let leaf = unsafe { &*l.node.cast::<Leaf<T>>() };
        let mut plan = LeafPlan::new(leaf, l, a, b, v);
        self.apply_values(&mut plan, v);
        let rightmost = l.hi == u64::MAX;
        let split = self.leaf_commit(path, &plan.out, rightmost && plan.appended_last);
        let last_free = plan.out.vals[plan.out.n - 1].is_null();
        if split {
            // The last slot of `out` ends the right half.
            return !rightmost && last_free;
        }
        plan.needs_normalize(path.len == 1, rightmost)
    }

    /// Carries out a plan's effects on values: retires the values it drops,
    /// clones the value of an entry it cuts in two, counts the new entry.
    fn apply_values(&mut self, plan: &mut LeafPlan<T>, v: *mut T) {
        for i in 0..plan.n_retire {
            self.retire_value(plan.retire[i]);
        }
        if let Some(at) = plan.clone_at {
            let clone = self.cloner.unwrap_or_else(|| {
                // Only store_range (T: Clone) can cut an entry in the middle.
                unreachable!("entry split without a cloner")
            });
            // SAFETY: the slot holds a live value owned by the tree.
            let copy = clone(unsafe { &*plan.out.vals[at] });
            plan.out.vals[at] = Box::into_raw(Box::new(copy));
            self.len_delta += 1;
        }
        if !v.is_null() {
            self.len_delta += 1;
        }
    }

    /// The common write, done without copying the path: when `[a, b]` lies
    /// in one leaf whose rewrite fits and needs no rebalancing, the leaf is
    /// copied and swapped into its (live) parent with one release store, and
    /// the gaps above it are updated in place. Readers see the old leaf or
    /// the new one; the root and inner nodes stay as they are, so a reader's
    /// cached upper levels stay valid (path copying made every concurrent
    /// read miss on them). Returns false, having changed nothing, when the
    /// write needs the general path.
    ///
    /// `known` is a path into the current version that reaches the leaf
    /// holding `a` (a cursor's); without it the leaf is found from the root.
    fn try_swap_leaf(&mut self, known: Option<&Path>, a: u64, b: u64, v: *mut T) -> bool {
        let root = self.root;
        // SAFETY: root is the published version's root, kept alive by the
        // writer lock; the descent only reads, and a known path was taken in
        // this same version.
        unsafe {
            if self.exclusive || (*root).flags & FRESH != 0 || is_leaf(root) {
                return false;
            }
            let mut path = Path::new();
            match known {
                Some(k) => path = *k,
                None => descend(root, a, &mut path),
            }
            let l = *path.leaf();
            if b > l.hi {
                return false;
            }
            let leaf = &*l.node.cast::<Leaf<T>>();
            let mut plan = LeafPlan::new(leaf, l, a, b, v);
            if plan.out.n > LEAF_SLOTS || plan.needs_normalize(false, l.hi == u64::MAX) {
                return false;
            }
            self.apply_values(&mut plan, v);
            let new = self.take_block();
            init_leaf::<T>(new, 0);
            write_leaf(new, &plan.out, 0, plan.out.n);
            let parent = path.lv[path.len - 2];
            (*parent.node.cast::<Internal>()).set_child(parent.idx, new);
            self.retire_node(l.node);
            // Gaps upward, in place, until one does not change.
            let mut g = leaf_gap(new.cast::<Leaf<T>>(), l.lo, l.hi);
            for d in (0..path.len - 1).rev() {
                let lv = path.lv[d];
                let int = &*lv.node.cast::<Internal>();
                if int.gap(lv.idx) == g {
                    break;
                }
                int.set_gap(lv.idx, g);
                g = internal_gap(int);
            }
        }
        true
    }

    /// Writes `out` into the path's leaf, splitting it in two when it does not
    /// fit. Returns whether it split. `append` packs the left half full, for
    /// ascending inserts at the end of the tree.
    fn leaf_commit(&mut self, path: &mut Path, out: &Out<T>, append: bool) -> bool {
        let node = path.leaf().node;
        let m = out.n;
        if m <= LEAF_SLOTS {
            // SAFETY: node is fresh.
            unsafe { write_leaf(node, out, 0, m) };
            return false;
        }
        let want = if append {
            if out.vals[m - 1].is_null() {
                m - 2
            } else {
                m - 1
            }
        } else {
            m.div_ceil(2)
        };
        let m1 = out.split_at(want.min(LEAF_SLOTS));
        let right = self.new_leaf();
        // SAFETY: node is fresh, right is new; both halves hold 1..=16 slots.
        unsafe {
            write_leaf(node, out, 0, m1);
            write_leaf(right, out, m1, m);
        }
        let level = path.len - 1;
        self.insert_child(path, level, out.ends[m1 - 1], right);
        true
    }

    /// The node at `path.lv[level]` was split: `right` follows it, separated
    /// by pivot `sep`. Inserts `right` into the parent, splitting upward.
    fn insert_child(&mut self, path: &Path, level: usize, sep: u64, right: NodePtr) {
        if level == 0 {
            let root = self.new_internal();
            let kids = Kids::with(&[self.root, right], &[sep]);
            // SAFETY: root is new.
            unsafe { kids.write(root, 0, 2) };
            self.root = root;
            return;
        }
        let parent = path.lv[level - 1];
        // SAFETY: the parent on a fresh path is fresh.
        let mut kids = unsafe { Kids::of(parent.node) };
        kids.insert(parent.idx, sep, right);
        if kids.n <= INT_SLOTS {
            // SAFETY: parent is fresh.
            unsafe { kids.write(parent.node, 0, kids.n) };
            return;
        }
        let append = parent.hi == u64::MAX && parent.idx + 2 == kids.n;
        let m1 = if append {
            INT_SLOTS
        } else {
            kids.n.div_ceil(2)
        };
        let sibling = self.new_internal();
        // SAFETY: parent is fresh, sibling is new.
        unsafe {
            kids.write(parent.node, 0, m1);
            kids.write(sibling, m1, kids.n);
        }
        self.insert_child(path, level - 1, kids.pivots[m1 - 1], sibling);
    }

    // ----- restoring invariants ---------------------------------------------

    /// Restores invariants 2 and 3 around the leaves covering `a` and `b`
    /// (the ends of the range just written) and around the leaves a boundary
    /// shift touches.
    fn normalize(&mut self, a: u64, b: u64) {
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
                let last_free = leaf.slots[n - 1].is_null();
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
        debug_assert!(n >= 2 && leaf.slots[n - 1].is_null());
        let t = leaf.pivots[n - 2] + 1;
        let old_hi = l.hi;
        leaf.slots[n - 1] = ptr::null_mut();
        leaf.pivots[n - 2] = u64::MAX;
        leaf.hdr.count = (n - 1) as u8;
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
        // Path to the successor: down the leftmost edge of the next child.
        let mut spath = Path::new();
        spath.lv[..=d].copy_from_slice(&path.lv[..=d]);
        spath.lv[d].idx = anc.idx + 1;
        spath.len = d + 1;
        let mut lvl = d;
        loop {
            let cur = spath.lv[lvl];
            // SAFETY: cur.node is fresh internal; its children are valid.
            unsafe {
                let int = &mut *cur.node.cast::<Internal>();
                let n = int.hdr.count as usize;
                let child = self.make_fresh(int.child(cur.idx));
                int.set_child(cur.idx, child);
                int.hdr.dirty |= 1 << cur.idx;
                let (s, e) = slot_range(&int.pivots, n, cur.idx, cur.lo, cur.hi);
                spath.lv[lvl + 1] = Level {
                    node: child,
                    idx: 0,
                    lo: s,
                    hi: e,
                };
                spath.len = lvl + 2;
                lvl += 1;
                if is_leaf(child) {
                    break;
                }
            }
        }
        // SAFETY: the successor leaf is fresh.
        let succ = unsafe { &*spath.leaf().node.cast::<Leaf<T>>() };
        if !succ.slots[0].is_null() {
            let sl = *spath.leaf();
            let sn = succ.hdr.count as usize;
            let mut out = Out::<T>::new();
            out.push(old_hi, ptr::null_mut());
            for i in 0..sn {
                let (_, e) = slot_range(&succ.pivots, sn, i, sl.lo, sl.hi);
                out.push(e, succ.slots[i]);
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
                        out.push(e, leaf.slots[i]);
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

    // ----- commit --------------------------------------------------------------

    /// Recomputes the gaps of dirty children below `node`; returns its gap.
    ///
    /// # Safety
    /// `node` is valid; only fresh nodes have dirty bits.
    unsafe fn refresh(node: NodePtr, lo: u64, hi: u64) -> u64 {
        // SAFETY: forwarded; writes go only to nodes with dirty bits (fresh).
        unsafe {
            if is_leaf(node) {
                return leaf_gap(node.cast::<Leaf<T>>(), lo, hi);
            }
            let int = &mut *node.cast::<Internal>();
            if int.hdr.dirty != 0 {
                let n = int.hdr.count as usize;
                for i in 0..n {
                    if int.hdr.dirty & (1 << i) != 0 {
                        let (s, e) = slot_range(&int.pivots, n, i, lo, hi);
                        int.set_gap(i, Self::refresh(int.child(i), s, e));
                    }
                }
                int.hdr.dirty = 0;
            }
            internal_gap(int)
        }
    }

    /// Publishes the working root and retires what it replaced. `guard` is
    /// `None` in exclusive mode, where retired memory is freed at once.
    pub(crate) fn commit(self, publish: impl FnOnce(NodePtr), guard: Option<&Guard>) -> Committed
    where
        T: Send + 'static,
    {
        if !self.root.is_null() {
            // SAFETY: the working root is valid and only fresh nodes are dirty.
            unsafe { Self::refresh(self.root, 0, u64::MAX) };
        }
        let st = self.st;
        // Fresh nodes retired inside this write were never visible: mark them
        // so they are freed at once below instead of deferred. Mark before
        // the FRESH flags are cleared.
        if !self.exclusive {
            for &p in &st.retired_nodes {
                // SAFETY: retired nodes stay allocated until after publish.
                unsafe {
                    if (*p).flags & FRESH != 0 {
                        (*p).flags = DEAD;
                    }
                }
            }
            for &p in &st.fresh {
                // SAFETY: fresh nodes are allocated and not yet visible.
                unsafe {
                    if (*p).flags == FRESH {
                        (*p).flags = 0;
                    }
                }
            }
        }
        st.fresh.clear();
        publish(self.root);
        match guard {
            Some(guard) => {
                // Free the never-published nodes now; retire the rest as one
                // deferred batch per write. crossbeam-epoch runs deferred
                // functions at a pace tied to pins (a few per pin), so one
                // batch per write keeps reclamation ahead of a busy writer,
                // where one deferred call per node fell behind.
                // Never-published nodes go straight back to the pool; the
                // rest are listed in retire-list blocks and handed to
                // writers after the grace period (see `node::RetireList`).
                let mut retired = std::mem::take(&mut st.retired_nodes);
                retired.retain(|&p| {
                    // SAFETY: retired nodes stay allocated until handed on here.
                    if unsafe { (*p).flags } == DEAD {
                        // SAFETY: never published, so unreachable.
                        unsafe { st.pool.keep(p) };
                        false
                    } else {
                        true
                    }
                });
                // SAFETY: every listed node is unlinked from the new version;
                // readers that still hold the old one are pinned, so the
                // recycling below waits for them.
                let batch = unsafe { st.pool.list_retired(retired.drain(..)) };
                st.retired_nodes = retired;
                if let Some(batch) = batch {
                    // SAFETY: as above.
                    unsafe {
                        st.defer(guard, move || {
                            let batch = batch;
                            batch.recycle();
                        })
                    };
                }
                if !st.retired_values.is_empty() {
                    let batch = SendPtr(std::mem::take(&mut st.retired_values));
                    // SAFETY: as above; each value is owned by the tree alone.
                    unsafe {
                        st.defer(guard, move || {
                            let batch = batch;
                            for v in batch.0 {
                                drop(Box::from_raw(v));
                            }
                        })
                    };
                }
            }
            None => {
                let retired = std::mem::take(&mut st.retired_nodes);
                for &p in &retired {
                    // SAFETY: exclusive mode: no reader can hold p; reuse it.
                    unsafe { st.pool.keep(p) };
                }
                st.retired_nodes = retired;
                st.retired_nodes.clear();
                for v in st.retired_values.drain(..) {
                    // SAFETY: exclusive mode: no reader can hold v.
                    drop(unsafe { Box::from_raw(v) });
                }
            }
        }
        Committed {
            len_delta: self.len_delta,
            nodes_delta: self.nodes_delta,
        }
    }
}

/// Worst-case node allocations for one store that touches `leaves` leaves in
/// a tree of `height` levels: a path copy, a split cascade and a boundary
/// shift (path copy + split cascade) per leaf, plus the fill.
pub(crate) fn worst_case_nodes(height: usize, leaves: usize) -> usize {
    (leaves + 1) * (4 * height + 4)
}

/// Height of a tree (0 when empty).
///
/// # Safety
/// `root` is null or valid.
pub(crate) unsafe fn height(root: NodePtr) -> usize {
    let mut h = 0;
    let mut p = root;
    // SAFETY: following first children of a valid tree.
    unsafe {
        while !p.is_null() {
            h += 1;
            if is_leaf(p) {
                break;
            }
            p = (*p.cast::<Internal>()).child(0);
        }
    }
    h
}

/// Number of leaves overlapping `[a, b]` (for preallocation).
///
/// # Safety
/// `root` is null or valid.
pub(crate) unsafe fn leaves_spanned(root: NodePtr, a: u64, b: u64) -> usize {
    if root.is_null() {
        return 1;
    }
    let mut path = Path::new();
    let mut leaves = 1;
    // SAFETY: forwarded.
    unsafe {
        descend(root, a, &mut path);
        while path.leaf().hi < b && leaves < 1 << 20 {
            let next = path.leaf().hi + 1;
            descend(root, next, &mut path);
            leaves += 1;
        }
    }
    leaves
}
