//! The in-leaf fast path: a store whose range lies inside one leaf and whose
//! rewrite fits that leaf without breaking an invariant (no split, no
//! underflow, no free run at the end of a leaf off the rightmost path).
//!
//! Most writes are of this kind: an exact overwrite, a split of an entry
//! (one slot becomes three), the restore of those three into one, an insert
//! into a free run, most erases. They are done here without the general
//! machinery (no [`LeafPlan`] built through a 34-slot buffer, no path
//! recorded, no dirty marks, no gap refresh at commit):
//!
//! - one descent that remembers only the internal nodes and the child index
//!   taken at each (a [`Trail`]);
//! - the slots replaced by the store are spliced out of the leaf and the
//!   (at most three) new ones spliced in, moving only the slots after them;
//!   under `&mut` in the live leaf, under `&self` in a copy that is then
//!   swapped into the parent with one release store (or published as the
//!   new root when the root is this leaf);
//! - the gaps above the leaf are revisited only when the store touched a
//!   free slot (a store that replaces values by values cannot change a gap),
//!   and then only until one does not change.
//!
//! An exact overwrite (the store covers exactly one entry) is the first
//! case: the slot's value pointer is replaced with one release store in the
//! live leaf, under `&self` too.
//!
//! The result is slot for slot what [`LeafPlan`] and [`write_leaf`] build
//! for the same store (the general path), which `tests/model.rs` checks
//! through the structural validation.

use std::mem::MaybeUninit;

use super::*;
use crate::node::MAX_HEIGHT;
use crate::read::{walk, Descent};

/// The internal nodes on the way down to a leaf and the child index taken
/// at each: `(node(d), idx(d))` for `d` in `0..depth`, the root first. Not
/// initialised beyond what a descent wrote (a store pays for the levels it
/// walks, not for [`MAX_HEIGHT`]).
pub(super) struct Trail {
    node: [MaybeUninit<NodePtr>; MAX_HEIGHT],
    idx: [MaybeUninit<usize>; MAX_HEIGHT],
}

impl Trail {
    pub(super) fn new() -> Self {
        Trail {
            node: [MaybeUninit::uninit(); MAX_HEIGHT],
            idx: [MaybeUninit::uninit(); MAX_HEIGHT],
        }
    }

    /// # Safety
    /// `d` is below the depth of the descent that filled the trail.
    #[inline]
    pub(super) unsafe fn get(&self, d: usize) -> (NodePtr, usize) {
        // SAFETY: levels below the depth were written by the descent.
        unsafe { (self.node[d].assume_init(), self.idx[d].assume_init()) }
    }
}

/// [`walk`] hooks that remember only the internal nodes and the child
/// index taken at each, in a [`Trail`]; the walk returns the leaf, its
/// bounds and the number of internal levels above it.
struct ToTrail<'t>(&'t mut Trail);

impl Descent for ToTrail<'_> {
    type Out = (NodePtr, u64, u64, usize);

    #[inline(always)]
    unsafe fn down(
        &mut self,
        node: NodePtr,
        i: usize,
        d: usize,
        _: u64,
        _: u64,
        child: NodePtr,
    ) -> NodePtr {
        self.0.node[d] = MaybeUninit::new(node);
        self.0.idx[d] = MaybeUninit::new(i);
        child
    }

    #[inline(always)]
    unsafe fn leaf(self, leaf: NodePtr, d: usize, lo: u64, hi: u64) -> Self::Out {
        (leaf, lo, hi, d)
    }
}

/// Descends from `root` to the leaf covering `index`. Returns the leaf, its
/// bounds and the number of internal levels above it, which `trail` now
/// holds.
///
/// # Safety
/// `root` is a valid, non-null tree that stays alive for the call.
#[inline]
pub(super) unsafe fn leaf_trail(
    root: NodePtr,
    index: u64,
    trail: &mut Trail,
) -> (NodePtr, u64, u64, usize) {
    // SAFETY: forwarded from the caller; the hooks only record.
    unsafe { walk(root, index, ToTrail(trail)) }
}

/// Up to three slots that replace a run of a leaf's slots: the kept left
/// part of the first entry cut, the stored range, the kept right part of
/// the last entry cut.
struct Mid<T> {
    ends: [u64; 3],
    vals: [*mut T; 3],
    k: usize,
}

impl<T> Mid<T> {
    #[inline]
    fn push(&mut self, end: u64, v: *mut T) {
        self.ends[self.k] = end;
        self.vals[self.k] = v;
        self.k += 1;
    }
}

/// Replaces slots `x0..=x1` of a leaf of `n` slots with `mid`, in place,
/// leaving `m` slots. Moves only the slots after `x1`, in the direction
/// that never overwrites one not yet moved; unused slots end null and unused
/// pivots `u64::MAX`, as [`write_leaf`] leaves them.
///
/// # Safety
/// Nobody else reads or writes the leaf meanwhile (`&mut`, or a private
/// copy).
#[inline]
unsafe fn splice<T>(leaf: &mut Leaf<T>, n: usize, x0: usize, x1: usize, mid: &Mid<T>, m: usize) {
    // What the unchecked accesses below rely on (`x0 <= x1` and `k <= 3`
    // hold by construction: `Mid` has room for three).
    assert!(n <= LEAF_SLOTS && m <= LEAF_SLOTS && x1 < n);
    debug_assert!(x0 <= x1 && mid.k <= 3);
    let to = x0 + mid.k; // new position of old slot x1 + 1
    let from = x1 + 1;
    debug_assert_eq!(m + from, n + to);
    // SAFETY (the unchecked accesses below): old slots lie below `n` and
    // new ones below `m` (`m - to == n - from`), both at most LEAF_SLOTS
    // (asserted above); a pivot is touched only for a slot that is not
    // the last of its leaf, so below `LEAF_SLOTS - 1`; `mid` holds `k`
    // slots. The bounds checks these replace were not optimised away, and
    // cost about a third of a splice (callgrind).
    unsafe {
        let piv = leaf.pivots.as_mut_ptr();
        if to > from {
            for x in (from..n).rev() {
                let y = x + (to - from);
                leaf.set_slot_unchecked(y, leaf.slot_unchecked(x));
                if x + 1 < n {
                    *piv.add(y) = *piv.add(x);
                }
            }
        } else if to < from {
            for x in from..n {
                let y = x - (from - to);
                leaf.set_slot_unchecked(y, leaf.slot_unchecked(x));
                if x + 1 < n {
                    *piv.add(y) = *piv.add(x);
                }
            }
        }
        for t in 0..mid.k {
            let y = x0 + t;
            leaf.set_slot_unchecked(y, *mid.vals.get_unchecked(t));
            if y + 1 < m {
                *piv.add(y) = *mid.ends.get_unchecked(t);
            }
        }
        for y in m..n {
            leaf.set_slot_unchecked(y, ptr::null_mut());
        }
        for y in m.saturating_sub(1)..n.saturating_sub(1) {
            *piv.add(y) = u64::MAX;
        }
    }
    leaf.hdr.count = m as u8;
    // The used mask moves as the slots did: the slots before `x0` stay, the
    // middle's take `x0..to`, and those from `from` on move to `to` on.
    let old = u32::from(leaf.hdr.used);
    let kept = old & ((1u32 << x0) - 1);
    // (`vals` past `k` stay null, so all three can be read.)
    let [v0, v1, v2] = mid.vals;
    let middle =
        (u32::from(!v0.is_null()) | u32::from(!v1.is_null()) << 1 | u32::from(!v2.is_null()) << 2)
            << x0;
    let moved = (old >> from) << to;
    leaf.hdr.set_used((kept | middle | moved) as u16);
    debug_assert_eq!(
        leaf.hdr.used,
        used_mask(&std::array::from_fn::<_, LEAF_SLOTS, _>(|i| leaf.slot(i))),
        "splice's used mask"
    );
}

impl<T> Txn<'_, T> {
    /// The fast path for a store of `[a, b]` to `v` (null: free) inside the
    /// leaf `leaf_p` covering `[lo, hi]` (`lo <= a <= b <= hi`), which hangs
    /// below `depth` internal levels that `anc(d)` names (`(node, child
    /// index)`, the root first). Returns false, having changed nothing, when
    /// the store needs the general path: the rewrite does not fit the leaf,
    /// or leaves it underfull or ending in a free run off the rightmost path,
    /// or (impossible through the public API) needs a clone and has no
    /// cloner.
    ///
    /// Only for the first store of a write (no node made fresh yet): every
    /// node reached is then live (or, under `&mut`, private).
    ///
    /// # Safety
    /// `leaf_p` and the `anc` levels are a root-to-leaf path of the working
    /// version, which is the published one (or exclusively owned).
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn leaf_fast(
        &mut self,
        leaf_p: NodePtr,
        lo: u64,
        hi: u64,
        depth: usize,
        anc: impl Fn(usize) -> (NodePtr, usize),
        a: u64,
        b: u64,
        v: *mut T,
    ) -> bool
    where
        T: SlotOps,
    {
        debug_assert!(lo <= a && a <= b && b <= hi);
        // ----- plan (reads only) -----
        // SAFETY: a valid leaf (caller); this shared borrow ends before any
        // write below.
        let leaf = unsafe { &*leaf_p.cast::<Leaf<T>>() };
        let n = leaf.hdr.count as usize;
        let piv = &leaf.pivots;
        let i = slot_in(piv, a).min(n - 1);
        let s_i = if i == 0 { lo } else { piv[i - 1] + 1 };
        let e_i = if i + 1 == n { hi } else { piv[i] };
        let vi = leaf.slot(i);
        if s_i == a && e_i == b && !vi.is_null() && !v.is_null() {
            // The exact fit: one value for another, same bounds. No node is
            // copied and no gap changes; a reader sees the old value or the
            // new one, each for the same range (release store, see
            // `Leaf::set_slot`).
            leaf.set_slot(i, v);
            self.retire_value(vi);
            self.len_delta += 1;
            return true;
        }
        let j = if b <= e_i {
            i
        } else {
            slot_in(piv, b).min(n - 1)
        };
        let e_j = if j + 1 == n { hi } else { piv[j] };
        let vj = leaf.slot(j);
        let left = s_i < a;
        let right = e_j > b;
        let free = v.is_null();
        // Slots x0..=x1 are replaced. A stored free range absorbs free
        // neighbours (invariant 1: no two adjacent free slots).
        let (mut x0, mut x1) = (i, j);
        let mut mid = Mid {
            ends: [0; 3],
            vals: [ptr::null_mut(); 3],
            k: 0,
        };
        if left {
            if !(free && vi.is_null()) {
                mid.push(a - 1, vi);
            }
        } else if free && i > 0 && leaf.slot(i - 1).is_null() {
            x0 = i - 1;
        }
        let mut mid_end = b;
        let mut right_piece = false;
        if right {
            if free && vj.is_null() {
                mid_end = e_j;
            } else {
                right_piece = true;
            }
        } else if free && j + 1 < n && leaf.slot(j + 1).is_null() {
            x1 = j + 1;
            mid_end = if j + 2 == n { hi } else { piv[j + 1] };
        }
        mid.push(mid_end, v);
        if right_piece {
            mid.push(e_j, vj);
        }
        let m = n - (x1 - x0 + 1) + mid.k;
        if m > LEAF_SLOTS {
            return false;
        }
        let last = if x1 + 1 == n {
            mid.vals[mid.k - 1]
        } else {
            leaf.slot(n - 1)
        };
        let ok = if depth == 0 || hi == u64::MAX {
            !(m == 1 && last.is_null())
        } else {
            !last.is_null() && m >= MIN_LEAF
        };
        if !ok {
            return false;
        }
        // One entry cut in two keeps its value on the left and a clone on
        // the right.
        let clone = i == j && left && right && !vi.is_null();
        if clone {
            let Some(cloner) = self.cloner else {
                return false;
            };
            // Made before anything changes: a panicking clone leaves the
            // tree as it was (and drops `v`, which it never received).
            // SAFETY: vi is a live value word of the tree; v is the store's.
            mid.vals[mid.k - 1] = unsafe { clone_or_free(cloner, vi, v, ptr::null_mut()) };
            self.len_delta += 1;
        }
        // ----- commit to the fast path: effects on values -----
        let mut touched_free = free;
        for x in i..=j {
            let p = leaf.slot(x);
            if p.is_null() {
                touched_free = true;
            } else if !((x == i && left) || (x == j && right)) {
                self.retire_value(p);
            }
        }
        if !free {
            self.len_delta += 1;
        }
        // ----- write -----
        let dst = if self.exclusive {
            leaf_p
        } else {
            let q = self.take_block();
            // SAFETY: q is a new block nobody else sees until it is linked
            // below; the leaf is valid.
            unsafe { copy_node::<T>(leaf_p, q) };
            q
        };
        // SAFETY: dst is the leaf itself under `&mut` (no reader, and the
        // shared borrow above is no longer used), else a private copy.
        unsafe {
            splice(&mut *dst.cast::<Leaf<T>>(), n, x0, x1, &mid, m);
        }
        if !self.exclusive {
            if depth == 0 {
                // The root is this leaf: commit publishes the copy.
                self.root = dst;
            } else {
                let (p, pi) = anc(depth - 1);
                // SAFETY: the parent is a live internal node; the release
                // store publishes the complete copy (see
                // `Internal::set_child`).
                unsafe { (*p.cast::<Internal>()).set_child(pi, dst) };
            }
            self.retire_node(leaf_p);
        }
        // ----- gaps, upward, only if a free slot was touched -----
        if touched_free && depth > 0 {
            // SAFETY: dst is a valid leaf covering [lo, hi]; the ancestors
            // are valid internal nodes whose gaps the writer alone updates.
            unsafe {
                let mut g = leaf_gap(dst.cast::<Leaf<T>>(), lo, hi);
                for d in (0..depth).rev() {
                    let (p, pi) = anc(d);
                    let int = &*p.cast::<Internal>();
                    if int.gap(pi) == g {
                        break;
                    }
                    int.set_gap(pi, g);
                    g = internal_gap(int);
                }
            }
        }
        true
    }
}
