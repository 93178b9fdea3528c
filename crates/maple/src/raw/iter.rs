//! The ordered iteration over one version, from either end.

use std::iter::FusedIterator;
use std::marker::PhantomData;
use std::ops::RangeInclusive;
use std::ptr;

use super::Root;
use crate::node::{prefetch_node, slot_range, Internal, Leaf, INT_SLOTS, LEAF_SLOTS};
use crate::read::{descend, path_entry, step_next_leaf, step_prev, Level, Path, RawEntry};
use crate::sync::Ordering;
use crate::value::{Boxed, Repr, Slot};
#[allow(unused_imports)] // intra-doc links
use crate::Reader;

/// Iterator over the entries of a [`Reader`] (or a cursor's version),
/// from either end.
///
/// The two ends never cross: whatever mix of [`next`](Iterator::next) and
/// [`next_back`](DoubleEndedIterator::next_back) is used, and whatever
/// writes run between the calls, the entries yielded from the front are in
/// increasing order, those from the back in decreasing order, and no entry
/// yielded from one end overlaps or passes one yielded from the other. A
/// concurrent write can replace the leaf an end is about to read (a leaf
/// swap keeps the reader's upper levels), so each end checks what it finds
/// against the other end's progress, and the iteration ends where they
/// would overlap (the entries between them that a write replaced were not
/// unchanged throughout the iteration, so the contract does not require
/// them).
pub struct Iter<'s, T, S: Repr<T> = Boxed> {
    front: Path,
    back: Path,
    /// The front's leaf, cached out of `front` so that a step inside a leaf
    /// does not index the path: the leaf, its slot count and last index,
    /// the next slot to look at and the first index of that slot. The
    /// path's leaf level is brought up to date only to move to the next
    /// leaf. `f_n == 0` once the iteration is over.
    f_leaf: *const Leaf<Slot<T, S>>,
    f_n: usize,
    f_hi: u64,
    f_idx: usize,
    f_start: u64,
    /// The bounds of the entry `next_slow` last yielded.
    slow_s: u64,
    slow_e: u64,
    /// The range's first index. Where the front is, [`Iter::lo`], is this
    /// or one past the end of the last entry the front yielded (in a fold,
    /// of the last leaf it scanned whole), whichever is higher: the floor
    /// below when the front has yielded.
    first: u64,
    /// Where the back is: the range's last index, then one below the start
    /// of the last entry the back yielded.
    hi: u64,
    /// No end may yield an entry starting below this: 0 until the front
    /// has yielded (an entry may start before the range), then `lo`.
    lo_floor: u64,
    /// No end may yield an entry ending above this: `u64::MAX` until the
    /// back has yielded, then `hi`.
    hi_ceil: u64,
    done: bool,
    _snap: PhantomData<&'s (T, S)>,
}

impl<'s, T, S: Repr<T>> Iter<'s, T, S> {
    pub(crate) fn new(root: Root<'s, Slot<T, S>>, first: u64, last: u64) -> Self {
        let root = root.ptr();
        let mut it = Iter {
            front: Path::new(),
            back: Path::new(),
            f_leaf: ptr::null(),
            f_n: 0,
            f_hi: 0,
            f_idx: 0,
            f_start: 0,
            slow_s: 0,
            slow_e: 0,
            first,
            hi: last,
            lo_floor: 0,
            hi_ceil: u64::MAX,
            done: true,
            _snap: PhantomData,
        };
        if !root.is_null() && first <= last {
            // SAFETY: the Root token keeps the version alive for 's.
            unsafe {
                descend(root, first, &mut it.front);
                descend(root, last, &mut it.back);
                it.load_front();
            }
            it.done = false;
        }
        it
    }

    /// Fills the front's leaf cache from the path's leaf level.
    ///
    /// # Safety
    /// The front path is valid for the version 's keeps alive.
    unsafe fn load_front(&mut self) {
        let l = *self.front.leaf();
        let leaf = l.node.cast::<Leaf<Slot<T, S>>>();
        self.f_leaf = leaf;
        // SAFETY: the path's leaf is valid (caller).
        unsafe {
            self.f_n = (*leaf).hdr.count as usize;
            self.f_start = if l.idx == 0 {
                l.lo
            } else {
                (*leaf).pivots[l.idx - 1] + 1
            };
        }
        self.f_hi = l.hi;
        self.f_idx = l.idx;
    }

    /// Where the front is: the range's first index, then one past the end
    /// of the last entry the front yielded.
    #[inline]
    fn lo(&self) -> u64 {
        self.first.max(self.lo_floor)
    }

    /// Ends the iteration at both ends.
    #[inline]
    fn finish(&mut self) {
        self.done = true;
        self.f_n = 0;
        self.f_idx = 0;
    }

    /// The front's step in full: every slot of the cached leaf from
    /// `f_idx`, then the next leaves, with the checks against the range and
    /// the back's progress. [`Iter::step_fast`] is only the common case (an
    /// entry inside the range, in the leaf at hand).
    ///
    /// Returns the value word of the entry it yields (its bounds are left
    /// in `slow_s`, `slow_e`), or null at the end: a pointer comes back in a
    /// register, where an `Option` of the entry would be written to memory
    /// and make every inlined step do the same.
    #[inline(never)]
    fn next_slow(&mut self) -> *mut Slot<T, S> {
        // The common way here: the leaf is scanned to its end and ends
        // before the last index wanted. Move to the next leaf as `fold_raw`
        // does, with no check: its entries go through `step_fast`'s checks,
        // and anything those decline through the loop below.
        while self.f_n != 0 && self.f_idx >= self.f_n && self.f_hi < self.hi {
            // SAFETY: the path is valid for the version 's keeps alive.
            if unsafe { !step_next_leaf(&mut self.front) } {
                self.finish();
                return ptr::null_mut();
            }
            // SAFETY: as above.
            unsafe { self.load_front() };
            if let Some((s, e, v)) = self.step_fast() {
                self.slow_s = s;
                self.slow_e = e;
                return v;
            }
        }
        while !self.done {
            // SAFETY: the cached leaf belongs to the version 's keeps alive.
            let leaf = unsafe { &*self.f_leaf };
            while self.f_idx < self.f_n {
                let i = self.f_idx;
                let s = self.f_start;
                let e = if i + 1 < self.f_n {
                    leaf.pivots[i]
                } else {
                    self.f_hi
                };
                let v = leaf.slot(i);
                self.f_idx = i + 1;
                self.f_start = e.wrapping_add(1);
                if v.is_null() {
                    continue;
                }
                if s > self.hi || e > self.hi_ceil {
                    // Past the range, or overlapping what the back yielded
                    // (a write replaced the entries in between).
                    self.finish();
                    return ptr::null_mut();
                }
                if s < self.lo_floor {
                    continue;
                }
                if e >= self.hi {
                    self.finish();
                } else {
                    self.lo_floor = e + 1;
                }
                self.slow_s = s;
                self.slow_e = e;
                return v;
            }
            // SAFETY: the path is valid for the version 's keeps alive.
            if unsafe { step_next_leaf(&mut self.front) } {
                // SAFETY: as above.
                unsafe { self.load_front() };
            } else {
                self.finish();
            }
        }
        ptr::null_mut()
    }

    /// The common step: the next entry of the cached leaf, ending before
    /// the last index still wanted (so it is inside the range, the back
    /// has not passed it, and the iteration goes on), as its range and
    /// (non-null) value word. `None` when the step needs
    /// [`Iter::step_slow`]: anything else, and the move to the next leaf.
    #[inline]
    pub(crate) fn step_fast(&mut self) -> Option<RawEntry<Slot<T, S>>> {
        // A leaf's count is at most LEAF_SLOTS; saying so, and indexing
        // slices of the leaf's `n` slots and `n - 1` stored pivots, lets the
        // compiler drop every bounds check from the loop.
        let n = self.f_n.min(LEAF_SLOTS);
        let mut i = self.f_idx;
        if i < n {
            // SAFETY: the cached leaf belongs to the version 's keeps alive.
            let leaf = unsafe { &*self.f_leaf };
            let slots = leaf.slots(n);
            let pivots = &leaf.pivots[..n - 1];
            let mut s = self.f_start;
            loop {
                // Past the stored pivots: the last slot, ending at the leaf's.
                let e = pivots.get(i).copied().unwrap_or(self.f_hi);
                // Acquire, as `Leaf::slot`: pairs with an exact-fit write's
                // release store of a new value pointer.
                let v = slots[i].load(Ordering::Acquire);
                if !v.is_null() {
                    if e < self.hi && s >= self.lo_floor {
                        self.f_idx = i + 1;
                        self.f_start = e + 1;
                        self.lo_floor = e + 1;
                        return Some((s, e, v));
                    }
                    break;
                }
                i += 1;
                if i == n {
                    break;
                }
                // Not the last slot, so e is a stored pivot below u64::MAX.
                s = e + 1;
            }
            self.f_idx = i;
            self.f_start = s;
        }
        None
    }

    /// Hands every entry still to come from the front to `f`, in order: the
    /// loop of `fold`, `for_each`, `sum` and the like, which consume the
    /// iterator, so the back cannot move while it runs.
    ///
    /// A leaf that ends before the last index wanted, and whose next slot
    /// starts at or above the front's floor, is scanned by a loop with no
    /// check at all: inside one leaf the entries only increase, so none of
    /// them can pass the range's end or fall below the floor (the floor
    /// guards against a leaf that a write swapped in under the front). Any
    /// other leaf (the range's last one, or one found stale) is stepped by
    /// [`Iter::next_slow`], which has every check. After a scanned leaf, the
    /// leaves that follow it under the same parent are taken from the
    /// parent's slots ([`Iter::fold_siblings`]) rather than through the
    /// path, which is updated once per run of them.
    ///
    /// If `f` panics, the iterator's state is left behind at some earlier
    /// entry; callers consume the iterator, so it is only dropped after.
    #[inline]
    pub(crate) fn fold_raw<B>(
        &mut self,
        init: B,
        mut f: impl FnMut(B, RawEntry<Slot<T, S>>) -> B,
    ) -> B {
        let mut acc = init;
        let hi = self.hi;
        loop {
            let n = self.f_n;
            if n == 0 {
                // Finished (`finish` zeroes f_n).
                return acc;
            }
            let i = self.f_idx;
            let lhi = self.f_hi;
            if i < n && lhi < hi && self.f_start >= self.lo_floor {
                // SAFETY: the cached leaf belongs to the version 's keeps
                // alive; n is its slot count.
                let leaf = unsafe { &*self.f_leaf };
                acc = if i == 0 {
                    // The common case, a parent's first leaf: the constant
                    // start lets the scan unroll, as in `fold_siblings`.
                    scan_leaf(leaf, 0, self.f_start, lhi, acc, &mut f)
                } else {
                    scan_leaf(leaf, i, self.f_start, lhi, acc, &mut f)
                };
                self.leaf_scanned();
                // SAFETY: the path is valid for the version 's keeps alive.
                acc = unsafe { self.fold_siblings(acc, &mut f) };
            } else if i < n {
                // The range's last leaf, or one found stale: step by step.
                match self.step_slow() {
                    Some(raw) => acc = f(acc, raw),
                    None => return acc,
                }
                continue;
            }
            // The leaf is done: move to the first slot of the next one.
            // SAFETY: the path is valid for the version 's keeps alive.
            if unsafe { step_next_leaf(&mut self.front) } {
                // SAFETY: as above.
                unsafe { self.load_front() };
            } else {
                self.finish();
                return acc;
            }
        }
    }

    /// After `fold_raw` has scanned the front's leaf to its end: scans the
    /// leaves after it that are children of the same parent, read from the
    /// parent's slots, for as long as each ends before the last index
    /// wanted and starts at or above the front's floor (the conditions of
    /// `fold_raw`'s unchecked scan). The path and the leaf cache are
    /// brought up to date once, for the last leaf scanned, so that the
    /// caller's move to the next leaf starts after it: a leaf costs its
    /// slots and a bounds pair from the parent, not a path update.
    ///
    /// # Safety
    /// The front path is valid for the version 's keeps alive, and the
    /// leaf cache is its leaf, scanned to the end.
    #[inline]
    unsafe fn fold_siblings<B>(
        &mut self,
        mut acc: B,
        f: &mut impl FnMut(B, RawEntry<Slot<T, S>>) -> B,
    ) -> B {
        let len = self.front.len;
        if len < 2 {
            return acc;
        }
        let p = self.front.lv[len - 2];
        // SAFETY: a level above the leaf holds a valid internal node
        // (caller), whose children are valid leaves of the same version.
        let int = unsafe { &*p.node.cast::<Internal>() };
        // `min`: the node's invariant, so that the pivot reads below need no
        // bounds check.
        let pn = (int.hdr.count as usize).min(INT_SLOTS);
        let mut j = p.idx + 1;
        let mut last = None;
        let mut floor = self.lo_floor;
        while j < pn {
            let (lo, lhi) = slot_range(&int.pivots, pn, j, p.lo, p.hi);
            if lhi >= self.hi || lo < floor {
                break;
            }
            let node = int.child(j);
            // Start fetching the leaf two ahead: this loop spends too little
            // on a leaf to hide a miss behind it, so fetching one ahead (as
            // `step_next_leaf` does) leaves it waiting on memory (a fold of
            // 10^6 `XValue` entries: 3.9 ms one ahead, 2.2 ms two ahead,
            // 3.1 ms three ahead, which leaves each parent's first leaves
            // unfetched; 2.8 ms for the leaf-by-leaf path before).
            if j + 2 < pn {
                prefetch_node(int.child(j + 2));
            }
            // SAFETY: as above.
            let leaf = unsafe { &*node.cast::<Leaf<Slot<T, S>>>() };
            acc = scan_leaf(leaf, 0, lo, lhi, acc, f);
            floor = lhi + 1;
            last = Some((node, lo, lhi));
            j += 1;
        }
        if let Some((node, lo, lhi)) = last {
            self.front.lv[len - 2].idx = j - 1;
            self.front.lv[len - 1] = Level {
                node,
                idx: 0,
                lo,
                hi: lhi,
            };
            // SAFETY: the path now ends at the last leaf scanned, a child of
            // a valid node (caller).
            unsafe { self.load_front() };
            self.leaf_scanned();
        }
        acc
    }

    /// Marks the cached leaf as scanned to its end by a fold, which handed
    /// over every entry of it: the floor moves past the leaf's last index
    /// (below `hi`, as the unchecked scans require), not just past its last
    /// entry. Nothing the version the fold walks holds lies between the
    /// two, so only an entry that a write made meanwhile can start there,
    /// and the contract lets the iteration miss those.
    #[inline]
    fn leaf_scanned(&mut self) {
        self.f_idx = self.f_n;
        self.f_start = self.f_hi + 1;
        self.lo_floor = self.f_start;
    }

    /// The step [`Iter::step_fast`] declined: the next entry from the
    /// front, or `None` at the end.
    #[inline]
    pub(crate) fn step_slow(&mut self) -> Option<RawEntry<Slot<T, S>>> {
        let v = self.next_slow();
        (!v.is_null()).then_some((self.slow_s, self.slow_e, v))
    }

    /// The next entry from the front as its range and (non-null) value word.
    #[inline]
    pub(crate) fn next_raw(&mut self) -> Option<RawEntry<Slot<T, S>>> {
        match self.step_fast() {
            Some(x) => Some(x),
            None => self.step_slow(),
        }
    }

    /// The next entry from the back as its range and (non-null) value word.
    pub(crate) fn next_back_raw(&mut self) -> Option<RawEntry<Slot<T, S>>> {
        while !self.done {
            // SAFETY: the path is valid for the version 's keeps alive.
            let (s, e, v) = unsafe { path_entry::<Slot<T, S>>(&self.back) };
            if e < self.lo() || s < self.lo_floor {
                // Before the range, or overlapping what the front yielded.
                self.finish();
                break;
            }
            // SAFETY: as above.
            let more = unsafe { step_prev(&mut self.back) };
            // A slot ending above what the back already passed is stale
            // (the path stepped into a leaf a write swapped in): skip it.
            let stale = e > self.hi_ceil;
            if !v.is_null() && !stale {
                if s <= self.lo() || !more {
                    self.finish();
                } else {
                    self.hi = s - 1;
                    self.hi_ceil = s - 1;
                }
                return Some((s, e, v));
            }
            if !more {
                self.finish();
            }
        }
        None
    }
}

impl<'s, T, S: Repr<T>> Iterator for Iter<'s, T, S> {
    type Item = (RangeInclusive<u64>, S::Ref<'s>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let (s, e, v) = self.next_raw()?;
        // SAFETY: the value lives as long as the version 's keeps alive.
        Some((s..=e, unsafe { S::borrow(v.cast()) }))
    }

    #[inline]
    fn fold<B, F: FnMut(B, Self::Item) -> B>(mut self, init: B, mut f: F) -> B {
        self.fold_raw(init, |acc, (s, e, v)| {
            // SAFETY: as in `next`.
            f(acc, (s..=e, unsafe { S::borrow(v.cast()) }))
        })
    }
}

impl<'s, T, S: Repr<T>> DoubleEndedIterator for Iter<'s, T, S> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let (s, e, v) = self.next_back_raw()?;
        // SAFETY: the value lives as long as the version 's keeps alive.
        Some((s..=e, unsafe { S::borrow(v.cast()) }))
    }
}

impl<T, S: Repr<T>> FusedIterator for Iter<'_, T, S> {}

/// The unchecked scan of a fold ([`Iter::fold_raw`], [`Iter::fold_siblings`]):
/// hands `f` every entry of the leaf's slots `from..`, in order; slot
/// `from` starts at `s` and the leaf ends at `lhi`. The caller has checked
/// that the leaf ends before the last index wanted and that `s` is at or
/// above the floor, so inside the leaf no entry needs a check.
///
/// It reads every slot up to [`LEAF_SLOTS`] without the leaf's count: an
/// unused slot is null and an unused pivot `u64::MAX` (both checked by
/// `validate`), so a slot past the count is skipped as a gap is, and the
/// last used slot ends at its pivot capped at `lhi`. With the count out of
/// the way, a whole leaf (`from` a constant 0) is a loop with a constant
/// trip count, which unrolls completely: a gap costs its slot's load and a
/// test, an entry its two bounds. (Slices of `n` slots and `n - 1` pivots,
/// zipped, cost their lengths' arithmetic and a loop's control on every
/// leaf.)
#[inline(always)]
fn scan_leaf<V, B>(
    leaf: &Leaf<V>,
    from: usize,
    s: u64,
    lhi: u64,
    mut acc: B,
    f: &mut impl FnMut(B, RawEntry<V>) -> B,
) -> B {
    let pivots = &leaf.pivots;
    let mut k = from;
    while k < LEAF_SLOTS {
        let v = leaf.slot(k);
        if !v.is_null() {
            // A used slot after the first starts one past its neighbour's
            // stored pivot (every slot before a used one is used).
            let start = if k == from { s } else { pivots[k - 1] + 1 };
            let e = if k + 1 < LEAF_SLOTS {
                pivots[k].min(lhi)
            } else {
                lhi
            };
            acc = f(acc, (start, e, v));
        }
        k += 1;
    }
    acc
}
