//! The ordered iteration over one version, from either end.

use std::iter::FusedIterator;
use std::marker::PhantomData;
use std::ptr;

use super::entry::{EntryPin, Item, Ref};
use super::Root;
use crate::node::{prefetch_node, slot_range, Internal, Leaf, INT_SLOTS, LEAF_SLOTS};
use crate::read::{descend, path_entry, step_next_leaf, step_prev, Level, Path, RawEntry};
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
    /// Where the front is in its leaf: the state a `for` loop's `next`
    /// reads and writes on every entry. It is kept apart from the rest so
    /// that the compiler keeps it in registers across the loop: the
    /// out-of-line step ([`Iter::next_slow`]) takes its fields as values
    /// and hands it back, and only the rest of the iterator ([`Ends`]) is
    /// passed by reference, so no pointer to these fields escapes the loop
    /// (`for` loop over 10^5 boxed entries: 57.9 instructions an entry
    /// with the state in memory, 28.3 in registers; `BENCHMARKS.md`).
    fr: Front<Slot<T, S>>,
    /// On the heap (a block reused per thread: [`EndsBox`]), so that the
    /// out-of-line step's pointer to it is not a pointer into the
    /// iterator, which would keep the whole iterator, `fr` included, in
    /// memory.
    ends: EndsBox,
    _snap: PhantomData<&'s (T, S)>,
}

/// The front's leaf (see [`Iter::fr`]): the leaf, the next slot to look
/// at and the first index of that slot, the leaf's bounds, how far the
/// unchecked step may go, and the leaf's parent.
struct Front<V> {
    leaf: *const Leaf<V>,
    idx: usize,
    /// [`Iter::next_raw`]'s unchecked step takes slots `idx..stop` of the
    /// leaf. Set past `idx` only for a leaf that ends below the last index
    /// wanted (`lhi < Ends::hi`) and whose slot `idx` starts at or above
    /// the floor, after the front has yielded: inside such a leaf no entry
    /// needs a check (entries only increase within a leaf). `stop <= idx`
    /// sends every step to [`Iter::next_slow`]. Where `stop > idx`, also
    /// `1 <= idx` and `stop <= LEAF_SLOTS - 1` (the last slot has no pivot
    /// of its own), which the unchecked step's reads rely on.
    stop: usize,
    /// First index of slot `idx`, brought up to date only where the
    /// unchecked step hands over to anything else ([`Front::settle`]), as
    /// that step does not need it. Once the front has yielded, the front's
    /// floor is at least this (see [`Ends::sync_floor`]).
    start: u64,
    /// First and last index of the leaf.
    lo: u64,
    lhi: u64,
    /// The leaf's parent (null for a leaf at the root), the leaf's slot in
    /// it, the parent's child count (at most `INT_SLOTS`; 0 without a
    /// parent) and last index: [`Iter::next_raw`] moves to the parent's
    /// next child from these, without the path, whose two lowest levels
    /// are brought up to date ([`Ends::flush`]) before anything reads it.
    par: *const Internal,
    pidx: usize,
    pn: usize,
    phi: u64,
}

impl<V> Front<V> {
    /// Sets `start` for slot `idx` of a leaf of `n` slots, after unchecked
    /// steps that moved `idx` only.
    ///
    /// # Safety
    /// `leaf` is valid (or `idx` is 0 or at least `n`).
    #[inline]
    unsafe fn settle(&mut self, n: usize) {
        self.start = if self.idx == 0 {
            self.lo
        } else if self.idx >= n {
            // Past the last slot (unused pivots are `u64::MAX`): one past
            // the leaf, as `leaf_scanned` leaves it.
            self.lhi.wrapping_add(1)
        } else {
            // SAFETY: `leaf` is valid (caller); `idx - 1 < n - 1 <= 14`.
            unsafe { (*self.leaf).pivots[self.idx - 1] + 1 }
        };
    }
}

/// What [`Iter::next_slow`] hands back: the front's leaf state, and what
/// it found.
type Slow<V> = (Front<V>, Step<V>);

/// What [`Iter::next_slow`] found.
enum Step<V> {
    /// The next entry.
    Entry(RawEntry<V>),
    /// Nothing yet: the unchecked step may go on in the front's new leaf.
    Resume,
    /// The end of the iteration from the front.
    End,
}

impl<V> Clone for Front<V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V> Copy for Front<V> {}

/// The rest of an iteration's state: the two paths and each end's bounds.
pub(crate) struct Ends {
    front: Path,
    back: Path,
    /// Slot count of the front's leaf; 0 once the iteration is over.
    f_n: usize,
    /// The range's first index. Where the front is, [`Iter::lo`], is this
    /// or one past the end of the last entry the front yielded (in a fold,
    /// of the last leaf it scanned whole), whichever is higher: the floor
    /// below when the front has yielded.
    first: u64,
    /// Where the back is: the range's last index, then one below the start
    /// of the last entry the back yielded.
    hi: u64,
    /// No end may yield an entry starting below this: 0 until the front
    /// has yielded (an entry may start before the range), then `lo`. While
    /// `next`'s unchecked step runs it is not updated: the front's slot
    /// start is the floor then ([`Iter::sync_floor`]).
    lo_floor: u64,
    /// No end may yield an entry ending above this: `u64::MAX` until the
    /// back has yielded, then `hi`.
    hi_ceil: u64,
    /// The front has yielded an entry (so its slot start is a floor).
    front_yielded: bool,
    done: bool,
}

/// An iteration's [`Ends`] on the heap. The block is taken from, and given
/// back to, a one-block cache per thread, so that an iteration does not
/// allocate (a 2 KiB block is past the sizes glibc's per-thread cache
/// keeps).
pub(crate) struct EndsBox(std::mem::ManuallyDrop<Box<Ends>>);

thread_local! {
    static SPARE_ENDS: std::cell::Cell<Option<Box<Ends>>> = const { std::cell::Cell::new(None) };
}

impl EndsBox {
    fn new(first: u64, hi: u64) -> Self {
        let spare = SPARE_ENDS.try_with(|c| c.take()).ok().flatten();
        let mut b = match spare {
            Some(b) => b,
            None => Box::new(Ends {
                front: Path::new(),
                back: Path::new(),
                f_n: 0,
                first,
                hi,
                lo_floor: 0,
                hi_ceil: u64::MAX,
                front_yielded: false,
                done: true,
            }),
        };
        b.reset(first, hi);
        EndsBox(std::mem::ManuallyDrop::new(b))
    }
}

impl Drop for EndsBox {
    // Inlined, so that dropping an iterator passes the box, not the
    // iterator's address, to anything out of line (that address escaping
    // would keep the iterator in memory: see [`Iter::fr`]).
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `self.0` is not used again.
        let b = unsafe { std::mem::ManuallyDrop::take(&mut self.0) };
        // Kept for the thread's next iteration (one that was kept drops
        // here); freed if the thread is exiting.
        let _ = SPARE_ENDS.try_with(|c| c.set(Some(b)));
    }
}

impl std::ops::Deref for EndsBox {
    type Target = Ends;
    #[inline]
    fn deref(&self) -> &Ends {
        &self.0
    }
}

impl std::ops::DerefMut for EndsBox {
    #[inline]
    fn deref_mut(&mut self) -> &mut Ends {
        &mut self.0
    }
}

impl Ends {
    /// An iteration that is over (nothing to walk).
    fn reset(&mut self, first: u64, hi: u64) {
        // The paths' levels are written by the descents before they are
        // read; only their lengths start over.
        self.front.len = 0;
        self.back.len = 0;
        self.f_n = 0;
        self.first = first;
        self.hi = hi;
        self.lo_floor = 0;
        self.hi_ceil = u64::MAX;
        self.front_yielded = false;
        self.done = true;
    }

    /// Fills the front's leaf state from the path's leaf level, with the
    /// unchecked step off (the caller turns it on: [`Ends::allow_fast`]).
    ///
    /// # Safety
    /// The front path is valid for a version that stays alive.
    unsafe fn load_front<V>(&mut self, fr: &mut Front<V>) {
        // SAFETY: forwarded from the caller.
        unsafe {
            self.load_leaf(fr);
            self.load_parent(fr);
        }
    }

    /// [`Ends::load_front`] without the parent cache, which only `next`
    /// uses: for a fold, which consumes the iterator.
    ///
    /// # Safety
    /// As [`Ends::load_front`].
    unsafe fn load_leaf<V>(&mut self, fr: &mut Front<V>) {
        let l = *self.front.leaf();
        let leaf = l.node.cast::<Leaf<V>>();
        fr.leaf = leaf;
        // SAFETY: the path's leaf is valid (caller).
        unsafe {
            self.f_n = (*leaf).hdr.count as usize;
            fr.start = if l.idx == 0 {
                l.lo
            } else {
                (*leaf).pivots[l.idx - 1] + 1
            };
        }
        fr.lo = l.lo;
        fr.lhi = l.hi;
        fr.idx = l.idx;
        fr.stop = 0;
    }

    /// Sets the front's parent cache from the path.
    ///
    /// # Safety
    /// The front path is valid for a version that stays alive.
    unsafe fn load_parent<V>(&self, fr: &mut Front<V>) {
        let len = self.front.len;
        if len >= 2 {
            let p = self.front.lv[len - 2];
            fr.par = p.node.cast::<Internal>();
            // SAFETY: a level above the leaf holds a valid internal node.
            fr.pn = unsafe { (*fr.par).hdr.count as usize }.min(INT_SLOTS);
            fr.pidx = p.idx;
            fr.phi = p.hi;
        } else {
            fr.par = ptr::null();
            fr.pn = 0;
            fr.pidx = 0;
            fr.phi = 0;
        }
    }

    /// Writes the front's leaf and its slot in the parent (which the
    /// unchecked step may have moved past the path) into the path's two
    /// lowest levels.
    #[inline]
    fn flush<V>(&mut self, fr: &Front<V>) {
        let len = self.front.len;
        if fr.pn != 0 && len >= 2 {
            self.front.lv[len - 2].idx = fr.pidx;
            self.front.lv[len - 1] = Level {
                node: fr.leaf.cast_mut().cast(),
                idx: fr.idx.min(self.f_n.saturating_sub(1)),
                lo: fr.lo,
                hi: fr.lhi,
            };
        }
    }

    /// Turns `next`'s unchecked step on for the rest of the front's leaf
    /// where it is allowed (see [`Front::stop`]), off elsewhere.
    #[inline]
    fn allow_fast<V>(&self, fr: &mut Front<V>) {
        fr.stop = if self.front_yielded
            && !self.done
            && fr.idx >= 1
            && fr.lhi < self.hi
            && fr.start >= self.lo_floor
        {
            self.f_n.min(LEAF_SLOTS - 1)
        } else {
            0
        };
    }

    /// Brings the floor up to where the front's unchecked steps have taken
    /// it: every slot before the front's has been yielded or was a gap, so
    /// once the front has yielded, nothing that starts below the front's
    /// slot start may be yielded again, by either end.
    #[inline]
    fn sync_floor<V>(&mut self, fr: &Front<V>) {
        if self.front_yielded && fr.start > self.lo_floor {
            self.lo_floor = fr.start;
        }
    }

    /// Ends the iteration at both ends.
    #[inline]
    fn finish<V>(&mut self, fr: &mut Front<V>) {
        self.done = true;
        self.f_n = 0;
        fr.idx = 0;
        fr.stop = 0;
    }

    /// The front's step in full: every slot of the cached leaf from
    /// `fr.idx`, then the next leaves, with the checks against the range
    /// and the back's progress. `next`'s unchecked step is only the common
    /// case (an entry of a leaf that ends before the range).
    ///
    /// # Safety
    /// The front path and leaf state are valid for a version that stays
    /// alive.
    unsafe fn step_checked<V>(&mut self, fr: &mut Front<V>) -> Option<RawEntry<V>> {
        self.sync_floor(fr);
        while !self.done {
            // SAFETY: the cached leaf belongs to the live version (caller).
            let leaf = unsafe { &*fr.leaf };
            let n = self.f_n;
            while fr.idx < n {
                let i = fr.idx;
                let s = fr.start;
                let e = if i + 1 < n { leaf.pivots[i] } else { fr.lhi };
                let v = leaf.slot(i);
                fr.idx = i + 1;
                fr.start = e.wrapping_add(1);
                if v.is_null() {
                    continue;
                }
                if s > self.hi || e > self.hi_ceil {
                    // Past the range, or overlapping what the back yielded
                    // (a write replaced the entries in between).
                    self.finish(fr);
                    return None;
                }
                if s < self.lo_floor {
                    continue;
                }
                if e >= self.hi {
                    self.finish(fr);
                } else {
                    self.lo_floor = e + 1;
                }
                self.front_yielded = true;
                return Some((s, e, v));
            }
            // SAFETY: the path is valid for the live version (caller).
            if unsafe { step_next_leaf(&mut self.front) } {
                // SAFETY: as above.
                unsafe { self.load_front(fr) };
            } else {
                self.finish(fr);
            }
        }
        None
    }
}

impl<'s, T, S: Repr<T>> Iter<'s, T, S> {
    pub(crate) fn new(root: Root<'s, Slot<T, S>>, first: u64, last: u64) -> Self {
        let root = root.ptr();
        let mut it = Iter {
            fr: Front {
                leaf: ptr::null(),
                idx: 0,
                stop: 0,
                start: 0,
                lo: 0,
                lhi: 0,
                par: ptr::null(),
                pidx: 0,
                pn: 0,
                phi: 0,
            },
            ends: EndsBox::new(first, last),
            _snap: PhantomData,
        };
        if !root.is_null() && first <= last {
            // SAFETY: the Root token keeps the version alive for 's.
            unsafe {
                descend(root, first, &mut it.ends.front);
                descend(root, last, &mut it.ends.back);
                it.ends.load_front(&mut it.fr);
            }
            it.ends.done = false;
        }
        it
    }

    /// Where the front is: the range's first index, then one past the end
    /// of the last entry the front yielded.
    #[inline]
    fn lo(&self) -> u64 {
        self.ends.first.max(self.ends.lo_floor)
    }

    /// The front's step when `next`'s unchecked step declines: the move
    /// to the next leaf after a leaf the unchecked step took to its end,
    /// and otherwise every slot from `idx` on, then the next leaves, with
    /// the checks against the range and the back's progress
    /// ([`Ends::step_checked`]); the unchecked step is turned on again for
    /// the leaf it stops in where that is allowed.
    ///
    /// Takes the front's leaf state as values and hands it back with what
    /// it found, so that no pointer to it escapes the caller's loop (a
    /// struct passed by value goes by a pointer to the caller's copy, which
    /// would keep it in memory: see [`Iter::fr`]).
    #[inline(never)]
    fn next_slow(
        ends: &mut Ends,
        leaf: *const Leaf<Slot<T, S>>,
        idx: usize,
        lo: u64,
        lhi: u64,
    ) -> Slow<Slot<T, S>> {
        let mut fr = Front {
            leaf,
            idx,
            stop: 0,
            start: 0,
            lo,
            lhi,
            par: ptr::null(),
            pidx: 0,
            pn: 0,
            phi: 0,
        };
        // SAFETY (this block's calls): `ends` and the leaf state are an
        // iteration's, whose 's keeps the version they point into alive
        // (the only caller is `next_raw`, which has flushed the leaf state
        // into the path).
        unsafe {
            fr.settle(ends.f_n);
            ends.load_parent(&mut fr);
        }
        if ends.front_yielded && !ends.done && fr.idx >= ends.f_n && lhi < ends.hi {
            // The common way here: the unchecked step took the leaf to its
            // end. Move on, and let it go on in the next leaf if it may
            // (the first entry there needs no check of its own).
            ends.sync_floor(&fr);
            // SAFETY: as above.
            if unsafe { !step_next_leaf(&mut ends.front) } {
                ends.finish(&mut fr);
                return (fr, Step::End);
            }
            // SAFETY: as above.
            unsafe { ends.load_front(&mut fr) };
            if fr.idx == 0 && fr.lhi < ends.hi {
                // As `next_raw`'s move to a sibling: the leaf's first slot
                // here, the rest unchecked.
                // SAFETY: as above.
                let (v, p0) = unsafe { ((*fr.leaf).slot(0), (*fr.leaf).pivots[0]) };
                fr.idx = 1;
                // SAFETY: as above.
                unsafe { fr.settle(ends.f_n) };
                ends.allow_fast(&mut fr);
                if !v.is_null() {
                    return (fr, Step::Entry((fr.lo, p0.min(fr.lhi), v)));
                }
            } else {
                ends.allow_fast(&mut fr);
            }
            if fr.stop > fr.idx {
                return (fr, Step::Resume);
            }
        }
        // SAFETY: as above.
        match unsafe { ends.step_checked(&mut fr) } {
            Some(raw) => {
                ends.allow_fast(&mut fr);
                (fr, Step::Entry(raw))
            }
            None => (fr, Step::End),
        }
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
    /// [`Iter::step_checked`], which has every check. After a scanned leaf,
    /// the leaves that follow it under the same parent are taken from the
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
        self.ends.flush(&self.fr);
        // SAFETY: the front's leaf belongs to the version 's keeps alive.
        unsafe { self.fr.settle(self.ends.f_n) };
        self.ends.sync_floor(&self.fr);
        let hi = self.ends.hi;
        loop {
            let n = self.ends.f_n;
            if n == 0 {
                // Finished (`finish` zeroes f_n).
                return acc;
            }
            let i = self.fr.idx;
            let lhi = self.fr.lhi;
            if i < n && lhi < hi && self.fr.start >= self.ends.lo_floor {
                // SAFETY: the cached leaf belongs to the version 's keeps
                // alive; n is its slot count.
                let leaf = unsafe { &*self.fr.leaf };
                acc = if i == 0 {
                    // The common case, a parent's first leaf: the constant
                    // start lets the scan unroll, as in `fold_siblings`.
                    scan_leaf(leaf, 0, self.fr.start, lhi, acc, &mut f)
                } else {
                    scan_leaf(leaf, i, self.fr.start, lhi, acc, &mut f)
                };
                self.leaf_scanned();
                // SAFETY: the path is valid for the version 's keeps alive.
                acc = unsafe { self.fold_siblings(acc, &mut f) };
            } else if i < n {
                // The range's last leaf, or one found stale: step by step.
                // SAFETY: the iteration's state, valid for 's.
                match unsafe { self.ends.step_checked(&mut self.fr) } {
                    Some(raw) => acc = f(acc, raw),
                    None => return acc,
                }
                continue;
            }
            // The leaf is done: move to the first slot of the next one.
            // SAFETY: the path is valid for the version 's keeps alive.
            if unsafe { step_next_leaf(&mut self.ends.front) } {
                // SAFETY: as above.
                unsafe { self.ends.load_leaf(&mut self.fr) };
            } else {
                self.ends.finish(&mut self.fr);
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
        let len = self.ends.front.len;
        if len < 2 {
            return acc;
        }
        let p = self.ends.front.lv[len - 2];
        // SAFETY: a level above the leaf holds a valid internal node
        // (caller), whose children are valid leaves of the same version.
        let int = unsafe { &*p.node.cast::<Internal>() };
        // `min`: the node's invariant, so that the pivot reads below need no
        // bounds check.
        let pn = (int.hdr.count as usize).min(INT_SLOTS);
        let mut j = p.idx + 1;
        let mut last = None;
        let mut floor = self.ends.lo_floor;
        while j < pn {
            let (lo, lhi) = slot_range(&int.pivots, pn, j, p.lo, p.hi);
            if lhi >= self.ends.hi || lo < floor {
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
            self.ends.front.lv[len - 2].idx = j - 1;
            self.ends.front.lv[len - 1] = Level {
                node,
                idx: 0,
                lo,
                hi: lhi,
            };
            // SAFETY: the path now ends at the last leaf scanned, a child of
            // a valid node (caller).
            unsafe { self.ends.load_leaf(&mut self.fr) };
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
        self.fr.idx = self.ends.f_n;
        self.fr.start = self.fr.lhi + 1;
        self.ends.lo_floor = self.fr.start;
    }

    /// The next entry from the front as its range and (non-null) value
    /// word.
    ///
    /// The common step is here, inlined into the caller's loop: the next
    /// used slot of a leaf that ends before the range does, where no entry
    /// needs a check (see [`Front::stop`]). It reads and writes only the
    /// front's leaf state, which a `for` loop keeps in registers; anything
    /// else goes to [`Iter::next_slow`].
    #[inline(always)]
    pub(crate) fn next_raw(&mut self) -> Option<RawEntry<Slot<T, S>>> {
        let mut f = self.fr;
        loop {
            while f.idx < f.stop {
                let k = f.idx;
                debug_assert!(k >= 1 && f.stop < LEAF_SLOTS, "Front::stop's invariant");
                // SAFETY: the cached leaf belongs to the version 's keeps
                // alive; `1 <= k < stop <= LEAF_SLOTS - 1` (see
                // `Front::stop`), so slot `k` and pivots `k - 1` and `k`
                // exist.
                let (v, leaf) = unsafe { ((*f.leaf).slot_unchecked(k), &*f.leaf) };
                f.idx = k + 1;
                if !v.is_null() {
                    // A used slot starts one past its neighbour's stored
                    // pivot and ends at its own, or, as the last used slot
                    // (whose pivot is unused, `u64::MAX`), at the leaf's end.
                    // SAFETY: as above.
                    let (s, e) = unsafe {
                        (
                            *leaf.pivots.get_unchecked(k - 1) + 1,
                            *leaf.pivots.get_unchecked(k),
                        )
                    };
                    self.fr = f;
                    return Some((s, e.min(f.lhi), v));
                }
            }
            if f.stop != 0 && f.idx >= self.ends.f_n && f.pidx + 1 < f.pn {
                // The unchecked step took the leaf to its end (so the front
                // has yielded, and the leaf ended below the range's end).
                // The common move, to the parent's next child, is made
                // here from the cached parent; the first slot of a leaf
                // that ends below the range too is taken here as well, and
                // the rest by the loop above.
                let j = f.pidx + 1;
                // SAFETY: the parent is a valid internal node of the version
                // 's keeps alive, and `j < pn <= INT_SLOTS` (`Front::pn`),
                // so child `j` exists, and pivot `j` where `j + 1 < pn`.
                let (node, lhi) = unsafe {
                    let par = &*f.par;
                    let lhi = if j + 1 < f.pn {
                        *par.pivots.get_unchecked(j)
                    } else {
                        f.phi
                    };
                    (par.child_unchecked(j), lhi)
                };
                if j + 1 < f.pn {
                    // SAFETY: as above, `j + 1 < pn`.
                    prefetch_node(unsafe { (*f.par).child_unchecked(j + 1) });
                }
                let leaf = node.cast::<Leaf<Slot<T, S>>>();
                // SAFETY: a child of a node of the version.
                let (n, v, p0) = unsafe {
                    let r = &*leaf;
                    (r.hdr.count as usize, r.slot(0), r.pivots[0])
                };
                self.ends.f_n = n;
                // Contiguous with the leaf before, under the same parent.
                let lo = f.lhi + 1;
                f.leaf = leaf;
                f.pidx = j;
                f.lo = lo;
                f.lhi = lhi;
                f.idx = 0;
                f.stop = 0;
                if lhi < self.ends.hi {
                    // Every slot before this leaf was yielded or was a gap,
                    // and the leaf's entries start at or above `lo`, one
                    // past the last leaf's end.
                    f.idx = 1;
                    f.stop = n.min(LEAF_SLOTS - 1);
                    if !v.is_null() {
                        self.fr = f;
                        return Some((lo, p0.min(lhi), v));
                    }
                    continue;
                }
                // The range's last leaf: stepped with every check.
            }
            self.ends.flush(&f);
            let (nf, step) = Self::next_slow(&mut self.ends, f.leaf, f.idx, f.lo, f.lhi);
            f = nf;
            match step {
                Step::Entry(raw) => {
                    self.fr = f;
                    return Some(raw);
                }
                Step::Resume => {}
                Step::End => {
                    self.fr = f;
                    return None;
                }
            }
        }
    }

    /// The next entry from the back as its range and (non-null) value word.
    pub(crate) fn next_back_raw(&mut self) -> Option<RawEntry<Slot<T, S>>> {
        // SAFETY: the front's leaf belongs to the version 's keeps alive.
        unsafe { self.fr.settle(self.ends.f_n) };
        self.ends.sync_floor(&self.fr);
        let r = self.back_step();
        // The back may have moved below the front's leaf end: the front's
        // unchecked step then no longer holds there.
        if self.fr.lhi >= self.ends.hi || self.ends.done {
            self.fr.stop = 0;
        }
        r
    }

    fn back_step(&mut self) -> Option<RawEntry<Slot<T, S>>> {
        while !self.ends.done {
            // SAFETY: the path is valid for the version 's keeps alive.
            let (s, e, v) = unsafe { path_entry::<Slot<T, S>>(&self.ends.back) };
            if e < self.lo() || s < self.ends.lo_floor {
                // Before the range, or overlapping what the front yielded.
                self.ends.finish(&mut self.fr);
                break;
            }
            // SAFETY: as above.
            let more = unsafe { step_prev(&mut self.ends.back) };
            // A slot ending above what the back already passed is stale
            // (the path stepped into a leaf a write swapped in): skip it.
            let stale = e > self.ends.hi_ceil;
            if !v.is_null() && !stale {
                if s <= self.lo() || !more {
                    self.ends.finish(&mut self.fr);
                } else {
                    self.ends.hi = s - 1;
                    self.ends.hi_ceil = s - 1;
                }
                return Some((s, e, v));
            }
            if !more {
                self.ends.finish(&mut self.fr);
            }
        }
        None
    }
}

impl<'s, T, S: Repr<T>> Iterator for Iter<'s, T, S> {
    type Item = Item<'s, T, S>;

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let raw = self.next_raw()?;
        // SAFETY: the value lives as long as the version 's keeps alive
        // (the Reader's pin, which 's borrows).
        Some(unsafe { Ref::item(EntryPin::Borrowed, raw) })
    }

    #[inline]
    fn fold<B, F: FnMut(B, Self::Item) -> B>(mut self, init: B, mut f: F) -> B {
        self.fold_raw(init, |acc, raw| {
            // SAFETY: as in `next`.
            f(acc, unsafe { Ref::item(EntryPin::Borrowed, raw) })
        })
    }
}

impl<'s, T, S: Repr<T>> DoubleEndedIterator for Iter<'s, T, S> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let raw = self.next_back_raw()?;
        // SAFETY: as in `next`.
        Some(unsafe { Ref::item(EntryPin::Borrowed, raw) })
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
