//! Read-side algorithms: point lookup, ordered stepping with an explicit
//! path stack (nodes carry no parent pointers, so nothing needs fixing up
//! after a copy), and gap search.
//!
//! Every function here takes a root that the caller keeps alive (an epoch
//! guard, the writer lock, or `&mut`), and never writes. Leaves and pivots
//! they read never change while reachable; child pointers and gaps may be
//! swapped by a concurrent leaf swap and are read atomically (see
//! `SAFETY.md`).

use crate::node::{
    prefetch_node, run_len, slot_bounds, slot_in, slot_range, Internal, Leaf, NodePtr, INT_SLOTS,
    KIND_LEAF, MAX_HEIGHT,
};
use crate::search::lookup_slot;

/// One entry as read from a leaf: `[first, last]` and the value pointer.
pub(crate) type RawEntry<T> = (u64, u64, *mut T);

#[derive(Clone, Copy, Debug)]
pub(crate) struct Level {
    pub node: NodePtr,
    pub idx: usize,
    pub lo: u64,
    pub hi: u64,
}

const EMPTY_LEVEL: Level = Level {
    node: std::ptr::null_mut(),
    idx: 0,
    lo: 0,
    hi: 0,
};

/// A root-to-leaf path: `lv[0]` is the root, `lv[len - 1]` the leaf, and
/// `idx` at each level the slot taken.
#[derive(Clone, Copy)]
pub(crate) struct Path {
    pub lv: [Level; MAX_HEIGHT],
    pub len: usize,
}

impl Path {
    pub(crate) fn new() -> Self {
        Path {
            lv: [EMPTY_LEVEL; MAX_HEIGHT],
            len: 0,
        }
    }
    pub(crate) fn leaf(&self) -> &Level {
        &self.lv[self.len - 1]
    }
    pub(crate) fn leaf_set_idx(&mut self, idx: usize) {
        self.lv[self.len - 1].idx = idx;
    }
}

/// A root-to-leaf path known to be valid for the version a write starts
/// from (a cursor's, checked against the write generation): what
/// `Txn::store_at` follows.
#[derive(Clone, Copy)]
pub(crate) struct KnownPath(Path);

impl KnownPath {
    /// # Safety
    /// `path` was taken in the current version, and no write has happened
    /// since.
    #[inline]
    pub(crate) unsafe fn new(path: Path) -> Self {
        KnownPath(path)
    }

    #[inline]
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

/// Number of used slots of a node.
///
/// # Safety
/// `p` is a valid node.
#[inline]
pub(crate) unsafe fn count(p: NodePtr) -> usize {
    // SAFETY: caller guarantees validity.
    unsafe { (*p).count as usize }
}

/// # Safety
/// `p` is a valid node.
#[inline]
pub(crate) unsafe fn is_leaf(p: NodePtr) -> bool {
    // SAFETY: caller guarantees validity.
    unsafe { (*p).kind == KIND_LEAF }
}

/// What a root-to-leaf descent does on the way down: the hooks of
/// [`walk`], the one descent every reader and writer uses.
///
/// The walk itself reads each internal node's count, picks a slot
/// ([`Descent::slot`]: by default the pivot search for the walk's index),
/// computes that slot's range, loads the child pointer, and hands all of
/// it to [`Descent::down`], which may record it, prefetch the child, or
/// replace it (the writer's copy-on-write); at the leaf it calls
/// [`Descent::leaf`]. Every hook is inlined, so each use compiles to the
/// loop it would have been written as by hand.
pub(crate) trait Descent {
    /// What the descent returns.
    type Out;

    /// The slot to take in internal node `int` (`n` slots) at depth `d`.
    /// By default the pivot search, which needs no count: unused pivots
    /// are `u64::MAX`, so no index passes the last used slot.
    #[inline(always)]
    fn slot(&self, int: &Internal, n: usize, d: usize, index: u64) -> usize {
        let _ = d;
        let i = slot_in(&int.pivots, index);
        debug_assert!(i < n);
        i
    }

    /// Passes internal `node` at depth `d` (covering `[lo, hi]`) through
    /// slot `i` to `child`, and returns the node to descend into: `child`,
    /// or its replacement (which the hook has linked in its place).
    ///
    /// # Safety
    /// `node` is a valid internal node of a live version, `child` its
    /// child `i`.
    unsafe fn down(
        &mut self,
        node: NodePtr,
        i: usize,
        d: usize,
        lo: u64,
        hi: u64,
        child: NodePtr,
    ) -> NodePtr;

    /// Arrives at `leaf` at depth `d`, covering `[lo, hi]`.
    ///
    /// # Safety
    /// `leaf` is a valid leaf of a live version.
    unsafe fn leaf(self, leaf: NodePtr, d: usize, lo: u64, hi: u64) -> Self::Out;
}

/// The root-to-leaf descent towards `index`, doing on the way what `hooks`
/// says (see [`Descent`]).
///
/// # Safety
/// `root` is a valid, non-null tree that stays alive for the call, and the
/// hooks' own requirements hold (each says what it touches).
#[inline(always)]
pub(crate) unsafe fn walk<D: Descent>(root: NodePtr, index: u64, hooks: D) -> D::Out {
    // SAFETY: forwarded from the caller; the root covers every index.
    unsafe { walk_from(root, 0, u64::MAX, 0, index, hooks) }
}

/// [`walk`] from `node`, at depth `d` and covering `[lo, hi]`, down (the
/// rest of a descent whose upper levels the caller already has).
///
/// # Safety
/// `node` is a valid node of a version that stays alive for the call,
/// covering `[lo, hi]` at depth `d`, and the hooks' own requirements hold.
#[inline(always)]
pub(crate) unsafe fn walk_from<D: Descent>(
    node: NodePtr,
    lo: u64,
    hi: u64,
    d: usize,
    index: u64,
    mut hooks: D,
) -> D::Out {
    let (mut node, mut lo, mut hi, mut d) = (node, lo, hi, d);
    // SAFETY: every pointer followed is a child of a valid node of the same
    // live version (or the replacement a hook linked in its place); a valid
    // tree is at most MAX_HEIGHT deep.
    unsafe {
        loop {
            if is_leaf(node) {
                return hooks.leaf(node, d, lo, hi);
            }
            let (i, s, e, child) = {
                // This borrow ends before `down`, which may write the node.
                let int = &*node.cast::<Internal>();
                let n = int.hdr.count as usize;
                let i = hooks.slot(int, n, d, index);
                let (s, e) = slot_bounds(&int.pivots, i, lo, hi);
                (i, s, e, int.child(i))
            };
            node = hooks.down(node, i, d, lo, hi, child);
            lo = s;
            hi = e;
            d += 1;
        }
    }
}

/// [`walk`] hooks that record the path to `.1`, prefetching each child.
struct Record<'p>(&'p mut Path, u64);

impl Descent for Record<'_> {
    type Out = ();

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
        self.0.lv[d] = Level {
            node,
            idx: i,
            lo,
            hi,
        };
        prefetch_node(child);
        child
    }

    #[inline(always)]
    unsafe fn leaf(self, leaf: NodePtr, d: usize, lo: u64, hi: u64) {
        // SAFETY: a valid leaf (caller); only its count and pivots are
        // read, which are the same for every slot type.
        let leaf_ref = unsafe { &*leaf.cast::<Leaf<u8>>() };
        let n = leaf_ref.hdr.count as usize;
        let idx = slot_in(&leaf_ref.pivots, self.1).min(n - 1);
        self.0.lv[d] = Level {
            node: leaf,
            idx,
            lo,
            hi,
        };
        self.0.len = d + 1;
    }
}

/// Descends from `root` to the leaf slot covering `index`, recording the path.
///
/// # Safety
/// `root` is a valid, non-null tree that stays alive for the call.
pub(crate) unsafe fn descend(root: NodePtr, index: u64, path: &mut Path) {
    // SAFETY: forwarded from the caller.
    unsafe { walk(root, index, Record(path, index)) }
}

/// [`walk`] hooks of a point lookup: prefetch each child, record nothing,
/// return the leaf slot.
struct Lookup<T>(u64, std::marker::PhantomData<fn() -> T>);

impl<T> Descent for Lookup<T> {
    type Out = RawEntry<T>;

    #[inline(always)]
    fn slot(&self, int: &Internal, n: usize, _: usize, index: u64) -> usize {
        let i = lookup_slot(&int.pivots, index);
        debug_assert!(i < n);
        i
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
        prefetch_node(child);
        child
    }

    #[inline(always)]
    unsafe fn leaf(self, leaf: NodePtr, _: usize, lo: u64, hi: u64) -> RawEntry<T> {
        // SAFETY: a valid leaf (caller).
        let leaf = unsafe { &*leaf.cast::<Leaf<T>>() };
        // No count needed (see `slot_bounds`).
        let i = lookup_slot(&leaf.pivots, self.0);
        let (s, e) = slot_bounds(&leaf.pivots, i, lo, hi);
        (s, e, leaf.slot(i))
    }
}

/// The leaf slot covering `index`: its range and value pointer (null for a gap).
///
/// # Safety
/// As [`descend`].
#[inline]
pub(crate) unsafe fn lookup<T>(root: NodePtr, index: u64) -> RawEntry<T> {
    // SAFETY: forwarded from the caller.
    unsafe { walk(root, index, Lookup::<T>(index, std::marker::PhantomData)) }
}

/// The slot the path's leaf level points at.
///
/// # Safety
/// The path is valid for a live version.
#[inline]
pub(crate) unsafe fn path_entry<T>(path: &Path) -> RawEntry<T> {
    let l = path.leaf();
    // SAFETY: the path's leaf is valid.
    unsafe {
        let leaf = &*l.node.cast::<Leaf<T>>();
        let n = leaf.hdr.count as usize;
        let (s, e) = slot_range(&leaf.pivots, n, l.idx, l.lo, l.hi);
        (s, e, leaf.slot(l.idx))
    }
}

/// Moves the path to the next slot in index order; false at the end.
///
/// # Safety
/// The path is valid for a live version.
pub(crate) unsafe fn step_next(path: &mut Path) -> bool {
    let leaf = path.len - 1;
    let l = &mut path.lv[leaf];
    // SAFETY: the path's nodes are valid (caller).
    if l.idx + 1 < unsafe { count(l.node) } {
        l.idx += 1;
        return true;
    }
    // SAFETY: forwarded.
    unsafe { step_next_leaf(path) }
}

/// The common move of [`step_next_leaf`] (all but one in `INT_SLOTS`
/// leaves): to the next child of the leaf's own parent, written out without
/// the general climb's loop, and inlined where an iteration steps. False,
/// with the path unchanged, when the leaf is its parent's last child (or
/// the root).
///
/// # Safety
/// The path is valid for a live version.
#[inline(always)]
pub(crate) unsafe fn step_sibling(path: &mut Path) -> bool {
    let len = path.len;
    if len < 2 {
        return false;
    }
    let (up, leaf) = path.lv[..len].split_at_mut(len - 1);
    let p = &mut up[len - 2];
    // SAFETY: a level above the leaf holds a valid internal node (caller).
    let int = unsafe { &*p.node.cast::<Internal>() };
    // `min`: tells the compiler what the node's invariant says, so the
    // pivot reads below need no bounds check.
    let n = (int.hdr.count as usize).min(INT_SLOTS);
    let i = p.idx + 1;
    if i >= n {
        return false;
    }
    p.idx = i;
    let (lo, hi) = slot_range(&int.pivots, n, i, p.lo, p.hi);
    leaf[0] = Level {
        node: int.child(i),
        idx: 0,
        lo,
        hi,
    };
    // Start fetching the sibling after this one.
    if i + 1 < n {
        prefetch_node(int.child(i + 1));
    }
    true
}

/// Moves the path to the first slot of the next leaf, whatever slot of its
/// leaf it is at (an iteration that has scanned the whole leaf itself
/// comes here directly); false at the end.
///
/// # Safety
/// The path is valid for a live version.
pub(crate) unsafe fn step_next_leaf(path: &mut Path) -> bool {
    // SAFETY: forwarded from the caller.
    if unsafe { step_sibling(path) } {
        return true;
    }
    let len = path.len;
    let lv = &mut path.lv[..len];
    // The lowest level above the leaf with a slot to its right.
    let mut d = len - 1;
    loop {
        if d == 0 {
            return false;
        }
        d -= 1;
        let l = &mut lv[d];
        // SAFETY: every node on the path is valid (caller).
        if l.idx + 1 < unsafe { count(l.node) } {
            l.idx += 1;
            break;
        }
    }
    // Descend leftmost below level d.
    while d + 1 < len {
        let l = lv[d];
        // SAFETY: a level above the leaf holds an internal node, valid
        // (caller), whose children are too.
        let int = unsafe { &*l.node.cast::<Internal>() };
        let n = int.hdr.count as usize;
        let (s, e) = slot_range(&int.pivots, n, l.idx, l.lo, l.hi);
        lv[d + 1] = Level {
            node: int.child(l.idx),
            idx: 0,
            lo: s,
            hi: e,
        };
        // A forward scan will want the following sibling next: start
        // fetching it while this node is being read.
        if l.idx + 1 < n {
            prefetch_node(int.child(l.idx + 1));
        }
        d += 1;
    }
    true
}

/// Moves the path to the previous slot in index order; false at the start.
///
/// # Safety
/// The path is valid for a live version.
pub(crate) unsafe fn step_prev(path: &mut Path) -> bool {
    // SAFETY: every node touched is on the path or a child of one.
    unsafe {
        let mut d = path.len - 1;
        loop {
            if path.lv[d].idx > 0 {
                path.lv[d].idx -= 1;
                break;
            }
            if d == 0 {
                return false;
            }
            d -= 1;
        }
        while d + 1 < path.len {
            let l = path.lv[d];
            let int = &*l.node.cast::<Internal>();
            let n = int.hdr.count as usize;
            let (s, e) = slot_range(&int.pivots, n, l.idx, l.lo, l.hi);
            let child = int.child(l.idx);
            path.lv[d + 1] = Level {
                node: child,
                idx: count(child) - 1,
                lo: s,
                hi: e,
            };
            d += 1;
        }
        true
    }
}

/// Moves forward from the path's slot (inclusive) to the first occupied one.
///
/// # Safety
/// The path is valid for a live version.
pub(crate) unsafe fn seek_occupied_fwd<T>(path: &mut Path) -> Option<RawEntry<T>> {
    // SAFETY: forwarded from the caller.
    unsafe {
        loop {
            let e = path_entry::<T>(path);
            if !e.2.is_null() {
                return Some(e);
            }
            if !step_next(path) {
                return None;
            }
        }
    }
}

/// Moves backward from the path's slot (inclusive) to the first occupied one.
///
/// # Safety
/// The path is valid for a live version.
pub(crate) unsafe fn seek_occupied_back<T>(path: &mut Path) -> Option<RawEntry<T>> {
    // SAFETY: forwarded from the caller.
    unsafe {
        loop {
            let e = path_entry::<T>(path);
            if !e.2.is_null() {
                return Some(e);
            }
            if !step_prev(path) {
                return None;
            }
        }
    }
}

/// First entry with `last >= index`.
///
/// # Safety
/// `root` is null or a valid live tree.
pub(crate) unsafe fn find<T>(root: NodePtr, index: u64) -> Option<RawEntry<T>> {
    if root.is_null() {
        return None;
    }
    let mut path = Path::new();
    // SAFETY: forwarded from the caller.
    unsafe {
        descend(root, index, &mut path);
        seek_occupied_fwd(&mut path)
    }
}

/// Last entry with `first <= index`.
///
/// # Safety
/// `root` is null or a valid live tree.
pub(crate) unsafe fn find_prev<T>(root: NodePtr, index: u64) -> Option<RawEntry<T>> {
    if root.is_null() {
        return None;
    }
    let mut path = Path::new();
    // SAFETY: forwarded from the caller.
    unsafe {
        descend(root, index, &mut path);
        seek_occupied_back(&mut path)
    }
}

/// Lowest `s` in `[min, max_start]` with `[s, s + size - 1]` free, within a
/// subtree covering `[lo, hi]`. Children whose longest free run is shorter
/// than `size` are skipped; only the two children cut by the window's edges
/// can be entered without success, so the search stays O(log n).
///
/// # Safety
/// `node` is a valid live subtree.
pub(crate) unsafe fn gap_low<T>(
    node: NodePtr,
    lo: u64,
    hi: u64,
    min: u64,
    max: u64,
    size: u64,
) -> Option<u64> {
    // SAFETY: children of a valid node are valid.
    unsafe {
        let n = count(node);
        if is_leaf(node) {
            let leaf = &*node.cast::<Leaf<T>>();
            let first = slot_in(&leaf.pivots, min).min(n - 1);
            for i in first..n {
                let (s, e) = slot_range(&leaf.pivots, n, i, lo, hi);
                if s > max {
                    break;
                }
                if leaf.slot(i).is_null() {
                    let s = s.max(min);
                    let e = e.min(max);
                    if s <= e && run_len(s, e) >= size {
                        return Some(s);
                    }
                }
            }
            return None;
        }
        let int = &*node.cast::<Internal>();
        let first = slot_in(&int.pivots, min).min(n - 1);
        for i in first..n {
            let (s, e) = slot_range(&int.pivots, n, i, lo, hi);
            if s > max {
                break;
            }
            if int.gap(i) >= size {
                if let Some(found) = gap_low::<T>(int.child(i), s, e, min, max, size) {
                    return Some(found);
                }
            }
        }
        None
    }
}

/// Highest `s` with `[s, s + size - 1]` free inside `[min, max]`; the mirror
/// image of [`gap_low`].
///
/// # Safety
/// `node` is a valid live subtree.
pub(crate) unsafe fn gap_high<T>(
    node: NodePtr,
    lo: u64,
    hi: u64,
    min: u64,
    max: u64,
    size: u64,
) -> Option<u64> {
    // SAFETY: children of a valid node are valid.
    unsafe {
        let n = count(node);
        if is_leaf(node) {
            let leaf = &*node.cast::<Leaf<T>>();
            let last = slot_in(&leaf.pivots, max).min(n - 1);
            for i in (0..=last).rev() {
                let (s, e) = slot_range(&leaf.pivots, n, i, lo, hi);
                if e < min {
                    break;
                }
                if leaf.slot(i).is_null() {
                    let s = s.max(min);
                    let e = e.min(max);
                    if s <= e && run_len(s, e) >= size {
                        return Some(e - (size - 1));
                    }
                }
            }
            return None;
        }
        let int = &*node.cast::<Internal>();
        let last = slot_in(&int.pivots, max).min(n - 1);
        for i in (0..=last).rev() {
            let (s, e) = slot_range(&int.pivots, n, i, lo, hi);
            if e < min {
                break;
            }
            if int.gap(i) >= size {
                if let Some(found) = gap_high::<T>(int.child(i), s, e, min, max, size) {
                    return Some(found);
                }
            }
        }
        None
    }
}

/// Gap search over a whole version (`root` may be null: all free).
///
/// # Safety
/// `root` is null or a valid live tree.
pub(crate) unsafe fn empty_area<T>(
    root: NodePtr,
    min: u64,
    max: u64,
    size: u64,
    rev: bool,
) -> Option<u64> {
    if root.is_null() {
        return Some(if rev { max - (size - 1) } else { min });
    }
    // SAFETY: forwarded from the caller.
    unsafe {
        if rev {
            gap_high::<T>(root, 0, u64::MAX, min, max, size)
        } else {
            gap_low::<T>(root, 0, u64::MAX, min, max, size)
        }
    }
}
