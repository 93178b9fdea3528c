//! The write engine: one [`Txn`] per tree operation.
//!
//! The common write changes one leaf without moving its bounds
//! ([`Txn::leaf_fast`], in `fast.rs`): an exact fit replaces one value
//! pointer in the live leaf; any other rewrite that fits the leaf is
//! spliced into a private copy that is swapped into its parent with one
//! release store (under `&mut`, into the leaf itself). Every other write
//! descends making
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
//!
//! Split by job: this module holds the writer state, the transaction and
//! the store paths; `fast` the in-leaf fast path (exact fit, splice, leaf
//! swap); `leaf` the general leaf rewrite, `internal` the internal-node
//! rebuild, `rebalance` the invariant restoration, `commit` the gap
//! refresh, publish and retirement.

use std::ptr;

use crate::epoch::Guard;

use crate::mem::BlockPool;
use crate::node::{
    copy_node, init_internal, init_leaf, internal_gap, leaf_gap, slot_in, slot_range, used_mask,
    Internal, Leaf, NodePtr, FRESH, INT_SLOTS, KIND_LEAF, LEAF_SLOTS, MIN_INTERNAL, MIN_LEAF,
};
use crate::read::{count, descend, is_leaf, walk, walk_from, Descent, KnownPath, Level, Path};
use crate::value::{Cloner, Owned, SlotOps};

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
    /// The write generation: advanced by every write (each [`Txn`], and
    /// `clear`), so that a path saved by a cursor is used only in the
    /// version it was taken in (`raw::CursorPath`).
    gen: u64,
    /// Under loom, deferred work waits here until the tree is dropped (no
    /// reader can remain then) or a model runs it (`MapleTree::loom_reclaim`):
    /// the epoch would run it outside the loom execution that owns its
    /// atomics.
    #[cfg(loom)]
    pub(crate) deferred: LoomDeferred,
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
            gen: 0,
            #[cfg(loom)]
            deferred: Default::default(),
        }
    }

    /// The write generation (see the field).
    #[inline]
    pub(crate) fn gen(&self) -> u64 {
        self.gen
    }

    /// Advances the write generation: every saved path becomes stale.
    #[inline]
    pub(crate) fn bump_gen(&mut self) {
        self.gen = self.gen.wrapping_add(1);
    }

    /// Forgets a write that unwound (a panicking `T::clone`) before commit:
    /// its fresh nodes were never published and are freed; its retired
    /// nodes and values are still part of the published tree and are kept.
    fn recover(&mut self) {
        for p in self.fresh.drain(..) {
            // SAFETY: fresh nodes were never reachable from a published root.
            unsafe { self.pool.keep(p) };
        }
        self.retired_nodes.clear();
        self.retired_values.clear();
    }

    /// Runs `f` once no reader pinned before now can still be pinned.
    ///
    /// # Safety
    /// As `epoch::Guard::defer_unchecked`.
    pub(crate) unsafe fn defer(&mut self, guard: &Guard, f: impl FnOnce() + Send + 'static) {
        #[cfg(not(loom))]
        // SAFETY: forwarded from the caller.
        unsafe {
            guard.defer_unchecked(f)
        };
        #[cfg(loom)]
        {
            let _ = guard;
            self.deferred.lock().unwrap().push(Box::new(f));
        }
    }
}

/// Deferred work under loom, shared by the writer and the tree (a loom
/// mutex, so a model may run it from another thread).
#[cfg(loom)]
pub(crate) type LoomDeferred = std::sync::Arc<loom::sync::Mutex<Vec<Box<dyn FnOnce() + Send>>>>;

#[cfg(loom)]
impl<T> Drop for WriterState<T> {
    fn drop(&mut self) {
        let work = std::mem::take(&mut *self.deferred.lock().unwrap());
        for f in work {
            f();
        }
    }
}

mod commit;
mod fast;
mod internal;
mod leaf;
mod rebalance;

use internal::Kids;
use leaf::{write_leaf, LeafPlan, Out};

/// What a finished write hands back to the tree.
pub(crate) struct Committed {
    pub len_delta: isize,
    pub nodes_delta: isize,
}

/// One write operation in progress.
pub(crate) struct Txn<'s, T> {
    st: &'s mut WriterState<T>,
    /// The working root: the published one until the first copy.
    root: NodePtr,
    exclusive: bool,
    len_delta: isize,
    nodes_delta: isize,
    /// Clones a value when a store splits an entry in two; `None` for the
    /// operations that cannot split (insert into free space, erase).
    cloner: Option<Cloner<T>>,
    /// Whether every store of this write so far took the fast path
    /// ([`Txn::leaf_fast`]: an exact fit or a rewrite inside one leaf), which
    /// marks nothing dirty and makes no node fresh. Commit then has no gap
    /// to refresh, and the next store may take the fast path too.
    only_exact_fits: bool,
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
        cloner: Option<Cloner<T>>,
    ) -> Self {
        st.recover();
        st.bump_gen();
        Txn {
            st,
            root,
            exclusive,
            len_delta: 0,
            nodes_delta: 0,
            cloner,
            only_exact_fits: true,
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
            copy_node::<T>(p, q);
            (*q).flags = FRESH;
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

    /// Takes back the most recently retired value (erase through `&mut`):
    /// the write's own, since under `&mut` no reader can hold it. `None`
    /// in a copy-on-write write, whose retired values readers may still see.
    pub(crate) fn take_retired_value(&mut self) -> Option<Owned<T>> {
        if !self.exclusive {
            return None;
        }
        let v = self.st.retired_values.pop()?;
        // SAFETY: the value was unlinked by this exclusive write (no reader
        // exists) and is no longer on the retire list: nobody else owns it.
        unsafe { Owned::new(v) }
    }

    /// Descends to the leaf covering `index`, making every node on the way
    /// fresh and marking each taken child dirty for the gap refresh.
    fn descend_fresh(&mut self, index: u64, path: &mut Path) {
        self.root = self.make_fresh(self.root);
        // SAFETY: the working root is fresh and valid; the hooks make each
        // child fresh before the walk enters it.
        unsafe {
            walk(
                self.root,
                index,
                Fresh {
                    txn: self,
                    path,
                    along: None,
                    index,
                },
            )
        }
    }

    /// The rest of a fresh descent below level `d` of `path`, whose levels
    /// `..=d` are fresh and valid (their `idx` at `d` and below is
    /// overwritten): to `index`, or along the slots `along` names.
    fn descend_fresh_below(&mut self, path: &mut Path, d: usize, index: u64, along: Option<&Path>) {
        let l = path.lv[d];
        // SAFETY: l.node is fresh and valid, covering [l.lo, l.hi] at depth
        // d; the hooks make each child fresh before the walk enters it.
        unsafe {
            walk_from(
                l.node,
                l.lo,
                l.hi,
                d,
                index,
                Fresh {
                    txn: self,
                    path,
                    along,
                    index,
                },
            )
        }
    }

    /// Like [`Txn::descend_fresh`], but follows a path already known (a
    /// cursor's) instead of searching pivots: the cursor's write does not
    /// walk again from the root. Under copy-on-write the nodes along the
    /// path are still copied; under `&mut` they are used as they are.
    fn descend_fresh_along(&mut self, known: &Path, path: &mut Path) {
        self.root = self.make_fresh(self.root);
        let index = known.leaf().lo;
        // SAFETY: as in `descend_fresh`; the known path was taken in the
        // current version, so each of its child indices is in range.
        unsafe {
            walk(
                self.root,
                index,
                Fresh {
                    txn: self,
                    path,
                    along: Some(known),
                    index,
                },
            )
        }
    }

    /// [`Txn::store`] through a cursor's path (valid for the version this
    /// write starts from: [`KnownPath`]): when `[a, b]` lies inside the
    /// path's leaf, the leaf is reached without a search from the root.
    #[inline]
    pub(crate) fn store_at(&mut self, known: &KnownPath, a: u64, b: u64, v: Option<Owned<T>>)
    where
        T: SlotOps,
    {
        self.store_at_raw(known.path(), a, b, Owned::into_raw_or_null(v));
    }

    /// [`Txn::store_at`] of a word (null: free) through a path valid for
    /// the version this write started from.
    fn store_at_raw(&mut self, known: &Path, a: u64, b: u64, v: *mut T)
    where
        T: SlotOps,
    {
        if self.root.is_null() || known.len == 0 {
            return self.store_raw(a, b, v);
        }
        let l = *known.leaf();
        if a < l.lo || b > l.hi {
            return self.store_raw(a, b, v);
        }
        // SAFETY: the known path was taken in the working version, which no
        // store of this write has changed yet (only_exact_fits).
        if self.only_exact_fits
            && unsafe {
                self.leaf_fast(
                    l.node,
                    l.lo,
                    l.hi,
                    known.len - 1,
                    |d| (known.lv[d].node, known.lv[d].idx),
                    a,
                    b,
                    v,
                )
            }
        {
            return;
        }
        self.only_exact_fits = false;
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

    /// Makes every index of `[a, b]` map to `v` (`None`: free), which the
    /// write takes over. The caller has checked `a <= b`.
    #[inline]
    pub(crate) fn store(&mut self, a: u64, b: u64, v: Option<Owned<T>>)
    where
        T: SlotOps,
    {
        self.store_raw(a, b, Owned::into_raw_or_null(v));
    }

    /// [`Txn::store`] of a word the write owns (null: free).
    fn store_raw(&mut self, a: u64, b: u64, v: *mut T)
    where
        T: SlotOps,
    {
        // The fast path first: one descent, then an exact fit or a rewrite
        // inside the leaf (see `fast.rs`). Only while no store of this write
        // has taken the general path, so every node reached is live (or,
        // under `&mut`, ours) and none is dirty.
        if !self.root.is_null() && self.only_exact_fits {
            let mut trail = fast::Trail::new();
            // SAFETY: the working root is valid; the descent only reads.
            let (leaf, lo, hi, depth) = unsafe { fast::leaf_trail(self.root, a, &mut trail) };
            // SAFETY: leaf and trail are a root-to-leaf path of the working
            // version; `get` is only called below `depth`.
            if b <= hi && unsafe { self.leaf_fast(leaf, lo, hi, depth, |d| trail.get(d), a, b, v) }
            {
                return;
            }
        }
        self.only_exact_fits = false;
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
                self.store_raw(a, b, v);
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
    fn leaf_write(&mut self, path: &mut Path, a: u64, b: u64, v: *mut T) -> bool
    where
        T: SlotOps,
    {
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
    fn apply_values(&mut self, plan: &mut LeafPlan<T>, v: *mut T)
    where
        T: SlotOps,
    {
        for i in 0..plan.n_retire {
            self.retire_value(plan.retire[i]);
        }
        if let Some(at) = plan.clone_at {
            let clone = self.cloner.unwrap_or_else(|| {
                // Only store_range (T: Clone) can cut an entry in the middle.
                unreachable!("entry split without a cloner")
            });
            // Under `&mut` the descent marked live nodes dirty (their gaps
            // are still right: nothing is written before this clone); a
            // panicking clone clears the marks on its way out.
            let marked = if self.exclusive {
                self.root
            } else {
                ptr::null_mut()
            };
            // SAFETY: the slot holds a live value word owned by the tree.
            plan.out.vals[at] = unsafe { clone_or_free::<T>(clone, plan.out.vals[at], v, marked) };
            self.len_delta += 1;
        }
        if !v.is_null() {
            self.len_delta += 1;
        }
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
}

/// [`walk`] hooks of the writer's general descent: each child on the way
/// is made fresh (copied, unless this write already owns it), linked into
/// its fresh parent and marked dirty, and the path is recorded. `along`:
/// take the slots of this known path instead of searching pivots.
struct Fresh<'t, 's, 'p, T> {
    txn: &'t mut Txn<'s, T>,
    path: &'p mut Path,
    along: Option<&'p Path>,
    index: u64,
}

impl<T> Descent for Fresh<'_, '_, '_, T> {
    type Out = ();

    #[inline(always)]
    fn slot(&self, int: &Internal, n: usize, d: usize, index: u64) -> usize {
        match self.along {
            Some(k) => k.lv[d].idx,
            None => slot_in(&int.pivots, index).min(n - 1),
        }
    }

    #[inline(always)]
    unsafe fn down(
        &mut self,
        node: NodePtr,
        i: usize,
        d: usize,
        lo: u64,
        hi: u64,
        child: NodePtr,
    ) -> NodePtr {
        if self.along.is_none() {
            crate::node::prefetch_node(child);
        }
        let child = self.txn.make_fresh(child);
        // SAFETY: node is fresh (the root was made fresh before the walk,
        // every other node by this hook), so this write may change it.
        unsafe {
            let int = &mut *node.cast::<Internal>();
            int.set_child(i, child);
            int.hdr.dirty |= 1 << i;
        }
        self.path.lv[d] = Level {
            node,
            idx: i,
            lo,
            hi,
        };
        child
    }

    #[inline(always)]
    unsafe fn leaf(self, leaf: NodePtr, d: usize, lo: u64, hi: u64) {
        let idx = match self.along {
            Some(k) => k.lv[d].idx,
            None => {
                // SAFETY: a valid leaf (caller); only its count and pivots
                // are read.
                let l = unsafe { &*leaf.cast::<Leaf<T>>() };
                slot_in(&l.pivots, self.index).min(l.hdr.count as usize - 1)
            }
        };
        self.path.lv[d] = Level {
            node: leaf,
            idx,
            lo,
            hi,
        };
        self.path.len = d + 1;
    }
}

/// `clone(src)`, a new word. If the clone panics: drops `v` (null:
/// nothing), the new value of the store in progress, and clears the dirty
/// marks of the live tree under `marked` (null: none; a `&mut` write's
/// root). A clone is only ever made before the store places `v` in any
/// node or writes any node, so on that unwind the write, which owns `v`, is
/// the only one that can drop it, and once the marks are cleared the tree
/// is as it was.
///
/// # Safety
/// `src` is a live stored word of the tree; `v` is null or a word the
/// store owns; `marked` is null or the root of a tree this write holds
/// exclusively.
unsafe fn clone_or_free<T: SlotOps>(
    clone: Cloner<T>,
    src: *mut T,
    v: *mut T,
    marked: NodePtr,
) -> *mut T {
    struct OnUnwind<T: SlotOps>(*mut T, NodePtr);
    impl<T: SlotOps> Drop for OnUnwind<T> {
        fn drop(&mut self) {
            if !self.0.is_null() {
                // SAFETY: reached only while unwinding out of `clone`: the
                // word was never placed in the tree, and the write owns it.
                unsafe { T::drop_word(self.0) };
            }
            if !self.1.is_null() {
                // SAFETY: an exclusively held, valid tree whose only dirty
                // marks are this write's, over gaps it has not changed.
                unsafe { Txn::<T>::refresh(self.1, 0, u64::MAX) };
            }
        }
    }
    let guard = OnUnwind(v, marked);
    // SAFETY: forwarded from the caller.
    let copy = unsafe { clone(src) };
    std::mem::forget(guard);
    copy
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
    /// [`walk`] hooks down the leftmost edge, counting levels.
    struct Leftmost;
    impl Descent for Leftmost {
        type Out = usize;
        #[inline(always)]
        fn slot(&self, _: &Internal, _: usize, _: usize, _: u64) -> usize {
            0
        }
        #[inline(always)]
        unsafe fn down(
            &mut self,
            _: NodePtr,
            _: usize,
            _: usize,
            _: u64,
            _: u64,
            child: NodePtr,
        ) -> NodePtr {
            child
        }
        #[inline(always)]
        unsafe fn leaf(self, _: NodePtr, d: usize, _: u64, _: u64) -> usize {
            d + 1
        }
    }
    if root.is_null() {
        return 0;
    }
    // SAFETY: a valid tree (caller); the hooks only count.
    unsafe { walk(root, 0, Leftmost) }
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
