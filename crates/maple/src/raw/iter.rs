//! The ordered iteration over one version, from either end.

use std::marker::PhantomData;
use std::ptr;

use super::Root;
use crate::node::{
    bits_set, prefetch_node, slot_in, slot_range, Internal, Leaf, NodePtr, INT_SLOTS, LEAF_SLOTS,
};
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
    /// The front's cursor in its leaf: the state a `for` loop's `next`
    /// reads and writes on every entry. It is kept apart from the rest so
    /// that the compiler keeps it in registers across the loop, and small
    /// (three words) so that it leaves the loop's body registers too:
    /// only the out-of-line step ([`Iter::next_slow`]) and the move to the
    /// next leaf touch the rest ([`Ends`]), by a pointer to the heap, so
    /// no pointer to these fields escapes the loop (`for` loop over 10^5
    /// boxed entries: 57.9 instructions an entry with the state in memory,
    /// 28.3 in registers; `BENCHMARKS.md`).
    fr: Cursor<Slot<T, S>>,
    /// On the heap (a block reused per thread: [`EndsBox`]), so that the
    /// out-of-line step's pointer to it is not a pointer into the
    /// iterator, which would keep the whole iterator, `fr` included, in
    /// memory.
    ends: EndsBox,
    _snap: PhantomData<&'s (T, S)>,
}

/// The front's cursor (see [`Iter::fr`]): its leaf and the used slots
/// that [`Iter::next_raw`]'s unchecked step yields next.
struct Cursor<V> {
    /// The front's leaf ([`Ends::leaf`]).
    leaf: *const Leaf<V>,
    /// The used slots of the leaf that the unchecked step yields next, in
    /// order, one bit each (from the leaf's
    /// [`used`](crate::node::Header::used) mask), above one more bit, the
    /// lowest: the slot the step yielded last, or a placeholder (bit 0)
    /// where it has yielded none in this leaf. The step clears the lowest
    /// bit and takes the new lowest, which it keeps: `m & (m - 1)`, whose
    /// zero test is the clear's own flags, and whose chain from one entry
    /// to the next is two instructions of one cycle (clearing the bit after
    /// taking it, `btr`, is longer: 15-20% on a `for` loop's time, see
    /// `BENCHMARKS.md`). Only the bits above the lowest are queued
    /// ([`Cursor::queued`]), and only where [`Ends::idx`] is [`UNCHECKED`]
    /// (the front's position is then the lowest of them: [`Iter::pos`]);
    /// every queued bit is at least 1 (slot 0's start is the leaf's `lo`,
    /// not a stored pivot), which the step's reads rely on.
    mask: u32,
}

impl<V> Cursor<V> {
    /// The slots queued, one bit each: the mask without its lowest bit.
    #[inline(always)]
    fn queued(&self) -> u32 {
        self.mask & self.mask.wrapping_sub(1)
    }
}

impl<V> Clone for Cursor<V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V> Copy for Cursor<V> {}

/// [`Ends::idx`] where the unchecked step took over the rest of the
/// front's leaf: past every slot (so the checked steps see the leaf as
/// done once the cursor's mask is empty), and the mark that lets
/// [`Iter::next_raw`] move to the parent's next child inline. Set (by
/// [`Ends::allow_fast`]) only for a leaf that ends below the last index
/// wanted (`lhi < Ends::hi`) and whose next slot starts at or above the
/// floor, after the front has yielded: inside such a leaf no entry needs a
/// check (entries only increase within a leaf). The cursor's mask then
/// holds every used slot from there on.
const UNCHECKED: usize = LEAF_SLOTS + 1;

/// What [`Iter::next_slow`] hands back: the front's cursor, what it
/// found, and how many entries the two hold (the cursor's mask's bits,
/// and one for [`Step::Entry`]), for [`Announce::slow`].
type Slow<V> = (Cursor<V>, Step<V>, u32);

/// Told ahead of the entries that [`Iter::next_raw_announced`] yields:
/// each entry it yields other than from the cursor's mask, and each bit it
/// puts into the mask, is announced once, before that entry is yielded.
pub(crate) trait Announce {
    /// `n` entries, at most [`LEAF_SLOTS`], on the move to a sibling leaf
    /// (the leaf's entry count, [`Leaf::entries`]: its first slot's,
    /// yielded at once, and the rest, queued). These moves stay under one
    /// parent: between two calls of [`Announce::slow`] (the move to the
    /// next parent is `next_slow`'s) come at most `INT_SLOTS - 1` of them.
    fn sibling(&mut self, n: u32);
    /// `n` entries, at most `LEAF_SLOTS + 1`, after any other step.
    fn slow(&mut self, n: u32);
    /// `n` entries, at most [`LEAF_SLOTS`], on the move to the first leaf
    /// of the next parent ([`Ends::next_parent_fast`]): as
    /// [`Announce::slow`].
    #[inline(always)]
    fn parent(&mut self, n: u32) {
        self.slow(n)
    }
}

/// Nothing to tell: a [`Reader`]'s iteration.
impl Announce for () {
    #[inline(always)]
    fn sibling(&mut self, _: u32) {}
    #[inline(always)]
    fn slow(&mut self, _: u32) {}
}

/// What [`Iter::next_slow`] found.
enum Step<V> {
    /// The next entry.
    Entry(RawEntry<V>),
    /// Nothing yet: the unchecked step may go on in the front's new leaf.
    Resume,
    /// The end of the iteration from the front.
    End,
}

/// The rest of an iteration's state: the two paths, the front's leaf and
/// each end's bounds.
pub(crate) struct Ends {
    front: Path,
    back: Path,
    /// The front's leaf, the next slot to look at there once the cursor's
    /// mask is empty (or [`UNCHECKED`]), and the first index of that slot,
    /// brought up to date only where the unchecked step hands over to
    /// anything else ([`Ends::settle`]), as that step does not need it.
    /// Once the front has yielded, the front's floor is at least `start`
    /// (see [`Ends::sync_floor`]).
    leaf: NodePtr,
    idx: usize,
    start: u64,
    /// First and last index of the front's leaf, and its slot count (0
    /// once the iteration is over). `next`'s moves to a sibling keep `lhi`
    /// only: while `idx` is [`UNCHECKED`], `lo` and `f_n` may be a leaf
    /// behind until [`Ends::sync_leaf`].
    lo: u64,
    lhi: u64,
    f_n: usize,
    /// The leaf's parent (null for a leaf at the root), the leaf's slot in
    /// it, the parent's child count (at most `INT_SLOTS`; 0 without a
    /// parent) and last index: [`Iter::next_raw`] moves to the parent's
    /// next child from these, without the path, whose two lowest levels
    /// are brought up to date ([`Ends::flush`]) before anything reads it.
    par: *const Internal,
    pidx: usize,
    pn: usize,
    phi: u64,
    /// The parent's next sibling (child `idx + 1` of the grandparent, the
    /// path's level `len - 3`), where the last move to a parent
    /// ([`Ends::next_parent`], [`Ends::next_parent_fast`]) found one; null
    /// otherwise (after a descent or a climb, or at the last parent).
    /// `next`'s moves to the parent's last two children prefetch its first
    /// two leaves (through [`Ends::ahead`]), so that the move to the next
    /// parent does not wait for its first leaf, and that move starts from
    /// it rather than from the path (`BENCHMARKS.md`, sixth pass).
    npar: *const Internal,
    /// The parent's children, then the next parent's first two
    /// ([`Ends::npar`]; null where there is none), so that `next`'s move
    /// to child `j` prefetches `ahead[j + 2]` with no test of where the
    /// parent ends (`j >= 1`, so slots 0 to 2 are neither read nor
    /// filled). Filled by the moves to a new parent in a run of
    /// unchecked steps (`next_parent_fast`, `next_slow`); the first
    /// parent of an iteration, or one after the back moved, keeps what
    /// was there (pointers of an earlier parent or iteration, or null).
    /// Only read for prefetches, which never fault: a stale slot costs a
    /// useless prefetch, and a short range does not pay for the fill.
    ahead: [NodePtr; INT_SLOTS + 2],
    /// `next` may move inline to the parent's children before this one:
    /// past `pidx` only while `idx` is [`UNCHECKED`], and then every child
    /// from `pidx + 1` to it ends below the range's last index
    /// ([`Ends::set_unchecked`]), so the move needs no check of its own.
    sib_end: usize,
    /// While `idx` is [`UNCHECKED`]: the last index of each child of the
    /// parent (`bounds[pidx]` is the front leaf's `lhi`), the parent's
    /// pivots and its end copied once a parent ([`Ends::set_unchecked`]),
    /// so that `next`'s moves neither compute nor store the leaf's bounds.
    bounds: [u64; INT_SLOTS],
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
    /// start is the floor then ([`Ends::sync_floor`]).
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
                leaf: ptr::null_mut(),
                idx: 0,
                start: 0,
                lo: 0,
                lhi: 0,
                f_n: 0,
                par: ptr::null(),
                pidx: 0,
                pn: 0,
                phi: 0,
                npar: ptr::null(),
                ahead: [ptr::null_mut(); INT_SLOTS + 2],
                sib_end: 0,
                bounds: [0; INT_SLOTS],
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
        self.leaf = ptr::null_mut();
        self.idx = 0;
        self.start = 0;
        self.lo = 0;
        self.lhi = 0;
        self.f_n = 0;
        self.par = ptr::null();
        self.pidx = 0;
        self.pn = 0;
        self.phi = 0;
        self.npar = ptr::null();
        self.sib_end = 0;
        self.first = first;
        self.hi = hi;
        self.lo_floor = 0;
        self.hi_ceil = u64::MAX;
        self.front_yielded = false;
        self.done = true;
    }

    /// The front's leaf as a leaf of `V`.
    #[inline(always)]
    fn leaf<V>(&self) -> *const Leaf<V> {
        self.leaf.cast_const().cast()
    }

    /// A cursor on the front's leaf with the given mask.
    #[inline(always)]
    fn cursor<V>(&self, mask: u32) -> Cursor<V> {
        debug_assert!(mask & 1 == 0, "slot 0 is never queued");
        Cursor {
            leaf: self.leaf(),
            // Bit 0, below the queued slots, as the slot last yielded.
            mask: mask | 1,
        }
    }

    /// Fills the front's leaf state from the path's leaf level, with the
    /// unchecked step off (the caller turns it on: [`Ends::allow_fast`]).
    ///
    /// # Safety
    /// The front path is valid for a version that stays alive.
    unsafe fn load_front<V>(&mut self) {
        // SAFETY: forwarded from the caller.
        unsafe {
            self.load_leaf::<V>();
            self.load_parent();
        }
    }

    /// [`Ends::load_front`] without the parent cache, which only `next`
    /// uses: for a fold, which consumes the iterator.
    ///
    /// # Safety
    /// As [`Ends::load_front`].
    unsafe fn load_leaf<V>(&mut self) {
        let l = *self.front.leaf();
        let leaf = l.node.cast::<Leaf<V>>();
        self.leaf = l.node;
        // SAFETY: the path's leaf is valid (caller).
        unsafe {
            self.f_n = (*leaf).hdr.count as usize;
            self.start = if l.idx == 0 {
                l.lo
            } else {
                (*leaf).pivots[l.idx - 1] + 1
            };
        }
        self.lo = l.lo;
        self.lhi = l.hi;
        self.idx = l.idx;
        self.sib_end = 0;
    }

    /// Sets the front's parent cache from the path.
    ///
    /// # Safety
    /// The front path is valid for a version that stays alive.
    unsafe fn load_parent(&mut self) {
        let len = self.front.len;
        // (Found by the first move to the next parent: `Ends::npar`.)
        self.npar = ptr::null();
        if len >= 2 {
            let p = self.front.lv[len - 2];
            self.par = p.node.cast::<Internal>();
            // SAFETY: a level above the leaf holds a valid internal node.
            self.pn = unsafe { (*self.par).hdr.count as usize }.min(INT_SLOTS);
            self.pidx = p.idx;
            self.phi = p.hi;
        } else {
            self.par = ptr::null();
            self.pn = 0;
            self.pidx = 0;
            self.phi = 0;
        }
    }

    /// Moves the front from its leaf, the last child of its parent, to the
    /// first leaf of the parent's next sibling, from the parent cache and
    /// the grandparent's level of the path: the move that `step_next_leaf`
    /// makes in all but one in `INT_SLOTS` of the cases it is left with,
    /// written out with neither a climb nor a round trip through the path.
    /// The path's three lowest levels, the parent cache and the leaf state
    /// end up as [`Ends::load_front`] would leave them, at the new leaf's
    /// slot 0. False, with nothing changed, where the grandparent has no
    /// next child (or the tree is lower than three levels).
    ///
    /// # Safety
    /// The front path's upper levels and the parent cache are valid for a
    /// version that stays alive, and the front's leaf is the parent's
    /// last child (`pidx + 1 >= pn`).
    #[inline(never)]
    unsafe fn next_parent(&mut self) -> bool {
        let len = self.front.len;
        if len < 3 {
            return false;
        }
        debug_assert!(self.pidx + 1 >= self.pn && self.pn != 0);
        let g = self.front.lv[len - 3];
        // SAFETY: a level above the leaf's parent holds a valid internal
        // node (caller).
        let gint = unsafe { &*g.node.cast::<Internal>() };
        // `min`: the node's invariant, so that the reads below need no
        // bounds check.
        let gn = (gint.hdr.count as usize).min(INT_SLOTS);
        let j = g.idx + 1;
        if j >= gn {
            return false;
        }
        // Contiguous with the parent before.
        let plo = self.phi + 1;
        let phi = if j + 1 < gn { gint.pivots[j] } else { g.hi };
        // The parent's next sibling as the last move here read it (the
        // same slot of the same node), which the loads of its first leaf
        // then wait for, rather than for the two loads of the path's
        // level and the node's slot.
        let par = if self.npar.is_null() {
            gint.child(j)
        } else {
            self.npar.cast_mut().cast()
        };
        // SAFETY: a child of a valid node above the leaves' level.
        let pint = unsafe { &*par.cast::<Internal>() };
        let pn = (pint.hdr.count as usize).min(INT_SLOTS);
        let leaf = pint.child(0);
        // Start fetching the two leaves after this one (`next_raw`'s moves
        // fetch two ahead from there on), and the parent after this one.
        if pn > 1 {
            prefetch_node(pint.child(1));
            if pn > 2 {
                prefetch_node(pint.child(2));
            }
        }
        self.npar = if j + 1 < gn {
            let np = gint.child(j + 1);
            prefetch_node(np);
            np.cast::<Internal>()
        } else {
            ptr::null()
        };
        let lhi = if pn > 1 { pint.pivots[0] } else { phi };
        self.front.lv[len - 3].idx = j;
        self.front.lv[len - 2] = Level {
            node: par,
            idx: 0,
            lo: plo,
            hi: phi,
        };
        self.front.lv[len - 1] = Level {
            node: leaf,
            idx: 0,
            lo: plo,
            hi: lhi,
        };
        self.par = pint;
        self.pidx = 0;
        self.pn = pn;
        self.phi = phi;
        self.leaf = leaf;
        self.idx = 0;
        self.start = plo;
        self.lo = plo;
        self.lhi = lhi;
        self.sib_end = 0;
        // SAFETY: a child of a valid node.
        self.f_n = unsafe { (*leaf).count as usize };
        true
    }

    /// `next`'s move from the last child of a parent that ends below the
    /// range's end ([`Ends::sib_end`] `== pn`, so the front's leaf was the
    /// unchecked step's, `idx` [`UNCHECKED`]) to the first leaf of the
    /// parent's next sibling, where that one ends below the range's end
    /// too: [`Ends::next_parent`] and [`Ends::set_unchecked`] in one, with
    /// no check that the common case does not need, so that the next
    /// leaf's entries wait for fewer instructions after the (mispredicted)
    /// end of the parent's run of siblings. Returns the new leaf, whose
    /// state is as `next_slow` leaves it (the path's three lowest levels,
    /// the parent cache, `lo`, `lhi`, `f_n`, the bounds and `sib_end`),
    /// or null, with nothing changed, at the tree's last parent, where the
    /// tree has fewer than three levels, or where the next parent reaches
    /// the range's end (`next_slow` then takes the move). Where the
    /// grandparent has no next child, the next parent is the next
    /// grandparent's first child, found by a climb ([`Ends::climb`]).
    ///
    /// `extern "C"`, so that it cannot unwind (see [`Iter::next_slow`]:
    /// a panic in it, which would be a bug, stops the process), and so
    /// that the caller's loop needs no cleanup path through the call.
    ///
    /// # Safety
    /// The front path's upper levels and the parent cache are valid for a
    /// version that stays alive, and `idx` is [`UNCHECKED`] with
    /// `pidx + 1 == pn == sib_end`.
    #[inline(never)]
    unsafe extern "C" fn next_parent_fast(&mut self) -> NodePtr {
        let guard = AbortOnUnwind;
        // SAFETY: forwarded from the caller.
        let leaf = unsafe { self.next_parent_fast_body() };
        std::mem::forget(guard);
        leaf
    }

    /// [`Ends::next_parent_fast`]'s work.
    ///
    /// # Safety
    /// As [`Ends::next_parent_fast`].
    #[inline(always)]
    unsafe fn next_parent_fast_body(&mut self) -> NodePtr {
        debug_assert!(self.idx == UNCHECKED && self.pidx + 1 == self.pn);
        debug_assert!(self.sib_end == self.pn && self.phi < self.hi);
        let len = self.front.len;
        if len < 3 {
            return ptr::null_mut();
        }
        // SAFETY: `3 <= len <= MAX_HEIGHT` (a path's length), so level
        // `len - 3` exists and holds a valid internal node (caller), as do
        // the levels below it.
        let mut g = unsafe { *self.front.lv.get_unchecked(len - 3) };
        // SAFETY: as above.
        let mut gint = unsafe { &*g.node.cast::<Internal>() };
        // `min`: the node's invariant, so that the reads below need no
        // bounds check.
        let mut gn = (gint.hdr.count as usize).min(INT_SLOTS);
        let mut j = g.idx + 1;
        // The next parent: as the last move to a parent found it (child
        // `j` of the grandparent, so `j < gn`), which its first leaf's
        // loads then wait for, rather than for the loads of the path's
        // level and the node's slot; else (after a climb) from the path;
        // else (the grandparent's last child) child 0 of the next
        // grandparent, found by a climb ([`Ends::climb`]).
        let np = if !self.npar.is_null() {
            debug_assert!(j < gn);
            self.npar
        } else if j < gn {
            // SAFETY: `j < gn <= INT_SLOTS`.
            unsafe { gint.child_unchecked(j) }
                .cast_const()
                .cast::<Internal>()
        } else {
            // SAFETY: forwarded from the caller.
            if unsafe { !self.climb() } {
                return ptr::null_mut();
            }
            // The path's grandparent level is now the next grandparent,
            // at child 0 (the next parent).
            // SAFETY: as above.
            g = unsafe { *self.front.lv.get_unchecked(len - 3) };
            debug_assert_eq!(g.idx, 0);
            // SAFETY: as above.
            gint = unsafe { &*g.node.cast::<Internal>() };
            gn = (gint.hdr.count as usize).min(INT_SLOTS);
            j = 0;
            // SAFETY: `0 < gn` (a node has a child).
            unsafe { gint.child_unchecked(0) }
                .cast_const()
                .cast::<Internal>()
        };
        // SAFETY: `j < gn <= INT_SLOTS`, so pivot `j` exists where
        // `j + 1 < gn` (`INT_SLOTS - 1` pivots).
        let phi = if j + 1 < gn {
            unsafe { *gint.pivots.get_unchecked(j) }
        } else {
            g.hi
        };
        if phi >= self.hi {
            // The range ends in the next parent: `next_slow`'s checks.
            // (Not after a climb: `climb` checked it.)
            return ptr::null_mut();
        }
        // SAFETY: as above.
        unsafe { self.front.lv.get_unchecked_mut(len - 3) }.idx = j;
        // SAFETY: `np` is a node of the version (`Ends::npar`), an
        // internal node, as the grandparent's child.
        let pint = unsafe { &*np };
        let pn = (pint.hdr.count as usize).min(INT_SLOTS);
        debug_assert!(pn >= 1, "a node has a child");
        // SAFETY: `pn >= 1`, so child 0 exists.
        let leaf = unsafe { pint.child_unchecked(0) };
        // The first two leaves were fetched by the moves to the last two
        // children before (`next_raw`, from `Ends::ahead`); the third, and
        // the parent after this one, now. (A child slot past the count
        // holds null or a stale pointer: only a prefetch, which never
        // faults, reads it.)
        // SAFETY: `2 < INT_SLOTS`.
        prefetch_node(unsafe { pint.child_unchecked(2) });
        self.npar = if j + 1 < gn {
            // SAFETY: `j + 1 < gn <= INT_SLOTS`.
            let n = unsafe { gint.child_unchecked(j + 1) };
            prefetch_node(n);
            n.cast::<Internal>()
        } else {
            ptr::null()
        };
        let plo = self.phi + 1;
        // The leaf ends at pivot 0, or with the parent where it is the
        // only child.
        let lhi = if pn > 1 { pint.pivots[0] } else { phi };
        // SAFETY: levels `len - 2` and `len - 1` exist (`len >= 3`).
        unsafe {
            *self.front.lv.get_unchecked_mut(len - 2) = Level {
                node: np.cast_mut().cast(),
                idx: 0,
                lo: plo,
                hi: phi,
            };
            *self.front.lv.get_unchecked_mut(len - 1) = Level {
                node: leaf,
                idx: 0,
                lo: plo,
                hi: lhi,
            };
        }
        self.par = np;
        self.pidx = 0;
        self.pn = pn;
        self.phi = phi;
        self.leaf = leaf;
        self.start = plo;
        self.lo = plo;
        self.lhi = lhi;
        // SAFETY: a child of a valid node.
        self.f_n = unsafe { (*leaf).count as usize };
        // `set_unchecked` for a parent that ends below the range's end.
        self.bounds[..INT_SLOTS - 1].copy_from_slice(&pint.pivots);
        // SAFETY: `1 <= pn <= INT_SLOTS`.
        unsafe { *self.bounds.get_unchecked_mut(pn - 1) = phi };
        self.sib_end = pn;
        // SAFETY: `pint` and `npar` are nodes of the version.
        unsafe { self.fill_ahead(pint) };
        leaf
    }

    /// [`Ends::next_parent_fast`]'s move where the grandparent has no
    /// next child (one parent move in `INT_SLOTS`): climbs the front path
    /// to the lowest level above the grandparent's with a next child,
    /// and takes the path down that child's leftmost children to the
    /// grandparent's level, whose node is then the next parent's parent,
    /// at child 0 (the next parent). The levels below it are left to the
    /// caller. The move `step_next_leaf` makes from the parent's last
    /// leaf, without its return through `next_slow` (on a `for` loop over
    /// 10^5 entries: 375 instructions a move there).
    ///
    /// False, with nothing changed, at the tree's last parent, or where
    /// the next parent reaches the range's end (`next_slow`'s checks then
    /// take the move). Finds the move first ([`Ends::climb_find`]), then
    /// writes the path: no level is written before the move is known to
    /// go ahead.
    ///
    /// # Safety
    /// As [`Ends::next_parent_fast`], and the grandparent has no child
    /// after the path's (`len >= 3`).
    #[cold]
    #[inline(never)]
    unsafe fn climb(&mut self) -> bool {
        let len = self.front.len;
        let top = len - 3;
        // SAFETY: forwarded from the caller.
        let Some((d, i, e)) = (unsafe { self.climb_find() }) else {
            return false;
        };
        if e >= self.hi {
            return false;
        }
        // Level `d` at child `i`, the levels below it at their first
        // child, down to the grandparent's.
        self.front.lv[d].idx = i;
        // SAFETY: level `d` is valid (caller) and has child `i`
        // (`climb_find`).
        let (mut node, mut s, mut e) = unsafe { self.climb_child(d, i) };
        for k in d + 1..=top {
            self.front.lv[k] = Level {
                node,
                idx: 0,
                lo: s,
                hi: e,
            };
            // SAFETY: a child of a node above the leaves' level is an
            // internal node of the version.
            let int = unsafe { &*node.cast::<Internal>() };
            (node, s, e) = first_child(int, s, e);
        }
        true
    }

    /// Where [`Ends::climb`] would take the path from the grandparent's
    /// last child, reading only: the level `d` it climbs to, the child
    /// `i` it takes there, and the last index of the next parent (the
    /// leftmost node two levels above the leaves below that child);
    /// `None` at the tree's last parent.
    ///
    /// # Safety
    /// As [`Ends::next_parent_fast`] (`len >= 3`).
    #[inline(always)]
    unsafe fn climb_find(&self) -> Option<(usize, usize, u64)> {
        let len = self.front.len;
        debug_assert!(len >= 3);
        let top = len - 3;
        // The lowest level above the grandparent's with a next child.
        let mut d = top;
        let i = loop {
            if d == 0 {
                return None;
            }
            d -= 1;
            let l = &self.front.lv[d];
            // SAFETY: a level above the leaf holds a valid internal node
            // of the version (caller).
            let n = unsafe { (*l.node).count as usize }.min(INT_SLOTS);
            if l.idx + 1 < n {
                break l.idx + 1;
            }
        };
        // Down child `i` of level `d`, then the first children, to the
        // parent's level (`len - 2`).
        // SAFETY: level `d` is valid (caller) and has child `i`.
        let (mut node, mut s, mut e) = unsafe { self.climb_child(d, i) };
        for _ in d + 1..top {
            // SAFETY: a child of a node above the leaves' level is an
            // internal node of the version.
            let int = unsafe { &*node.cast::<Internal>() };
            (node, s, e) = first_child(int, s, e);
        }
        // `node` is the next grandparent: its first child's end.
        // SAFETY: as above.
        let (_, s, e) = first_child(unsafe { &*node.cast::<Internal>() }, s, e);
        debug_assert_eq!(s, self.phi.wrapping_add(1), "contiguous parents");
        Some((d, i, e))
    }

    /// Child `i` of the front path's level `d` and the bounds it covers.
    ///
    /// # Safety
    /// Level `d` holds a valid internal node of a version that stays
    /// alive, with more than `i` children.
    #[inline(always)]
    unsafe fn climb_child(&self, d: usize, i: usize) -> (NodePtr, u64, u64) {
        let l = self.front.lv[d];
        // SAFETY: valid (caller).
        let int = unsafe { &*l.node.cast::<Internal>() };
        let n = (int.hdr.count as usize).min(INT_SLOTS);
        debug_assert!(i < n);
        let (s, e) = slot_range(&int.pivots, n, i, l.lo, l.hi);
        (int.child(i), s, e)
    }

    /// Fills [`Ends::ahead`] from `par` (the parent, with `pn` children)
    /// and [`Ends::npar`].
    ///
    /// # Safety
    /// `par` is a valid internal node, `npar` null or one, of a version
    /// that stays alive; `1 <= pn <= INT_SLOTS`.
    #[inline]
    unsafe fn fill_ahead(&mut self, par: &Internal) {
        let pn = self.pn;
        debug_assert!((1..=INT_SLOTS).contains(&pn));
        // From child 3: the moves to a sibling (child `j >= 1`) read
        // `ahead[j + 2]` only, so the first three are never read.
        for i in 3..INT_SLOTS {
            // SAFETY: `i < INT_SLOTS`.
            self.ahead[i] = unsafe { par.child_unchecked(i) };
        }
        let (a, b) = if self.npar.is_null() {
            (ptr::null_mut(), ptr::null_mut())
        } else {
            // SAFETY: `npar` is valid (caller); `0, 1 < INT_SLOTS`.
            unsafe {
                let np = &*self.npar;
                (np.child_unchecked(0), np.child_unchecked(1))
            }
        };
        // SAFETY: `pn + 1 < INT_SLOTS + 2` (caller).
        unsafe {
            *self.ahead.get_unchecked_mut(pn) = a;
            *self.ahead.get_unchecked_mut(pn + 1) = b;
        }
    }

    /// Brings the leaf state up to date after `next`'s moves to a sibling
    /// (which keep only `pidx`, the cursor holding the leaf), where `idx`
    /// is [`UNCHECKED`] and `leaf` has been set from the cursor; anything
    /// that reads the leaf state calls this first.
    ///
    /// # Safety
    /// The front's leaf and the parent cache are valid for a version that
    /// stays alive.
    #[inline]
    unsafe fn sync_leaf(&mut self) {
        debug_assert_eq!(self.idx, UNCHECKED);
        // SAFETY: valid nodes (caller); a moved-to child has `pidx >= 1`,
        // so it starts one past the parent's pivot before it (the others
        // were loaded whole).
        unsafe {
            self.f_n = (*self.leaf).count as usize;
            self.lhi = self.leaf_hi();
            if self.pidx > 0 {
                self.lo = *self.bounds.get_unchecked(self.pidx - 1) + 1;
            }
        }
    }

    /// The last index of the front's leaf while `idx` is [`UNCHECKED`]
    /// (`next`'s moves to a sibling leave `lhi` behind).
    ///
    /// # Safety
    /// `idx` is [`UNCHECKED`] (so `pidx < INT_SLOTS` has its bound).
    #[inline(always)]
    unsafe fn leaf_hi(&self) -> u64 {
        debug_assert!(self.idx == UNCHECKED && self.pidx < self.pn.max(1));
        // SAFETY: `pidx < pn <= INT_SLOTS`, or 0 without a parent. (No
        // bounds check: one that could panic would keep `next`'s
        // computation of an entry's end alive in callers that never use
        // it.)
        unsafe { *self.bounds.get_unchecked(self.pidx) }
    }

    /// Puts the front in the unchecked step's state for its leaf (`idx`
    /// [`UNCHECKED`]): the bound of the inline moves to siblings (how many
    /// of the parent's first children end below the range's last index:
    /// [`Ends::sib_end`]) and the children's bounds ([`Ends::bounds`]).
    ///
    /// # Safety
    /// The parent cache and the leaf state are valid for a version that
    /// stays alive.
    #[inline]
    unsafe fn set_unchecked(&mut self) {
        self.idx = UNCHECKED;
        if self.pn == 0 {
            // A leaf at the root: no sibling.
            self.sib_end = 0;
            self.bounds[0] = self.lhi;
            return;
        }
        // SAFETY: a valid internal node (caller).
        let par = unsafe { &*self.par };
        self.bounds[..INT_SLOTS - 1].copy_from_slice(&par.pivots);
        self.bounds[self.pn - 1] = self.phi;
        debug_assert_eq!(self.bounds[self.pidx], self.lhi, "the leaf's end");
        self.sib_end = if self.phi < self.hi {
            // The whole parent ends below the range's end.
            self.pn
        } else {
            children_below(par, self.pn, self.phi, self.hi)
        };
    }

    /// Puts the front at slot 0 of child `j` of `par` (which has `pn`
    /// children and covers `[plo, phi]`; the child covers `[lo, lhi]`):
    /// the path's two lowest levels, the parent cache and the leaf state,
    /// as [`Ends::load_front`] would leave them.
    ///
    /// # Safety
    /// `par` is a valid internal node of a version that stays alive, the
    /// child at the level below the path's, `j < pn`.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    unsafe fn set_front(
        &mut self,
        par: &Internal,
        pn: usize,
        plo: u64,
        phi: u64,
        j: usize,
        lo: u64,
        lhi: u64,
    ) {
        let len = self.front.len;
        let leaf = par.child(j);
        self.front.lv[len - 2] = Level {
            node: (par as *const Internal).cast_mut().cast(),
            idx: j,
            lo: plo,
            hi: phi,
        };
        self.front.lv[len - 1] = Level {
            node: leaf,
            idx: 0,
            lo,
            hi: lhi,
        };
        self.par = par;
        self.pidx = j;
        self.pn = pn;
        self.phi = phi;
        self.npar = ptr::null();
        self.leaf = leaf;
        self.idx = 0;
        self.start = lo;
        self.lo = lo;
        self.lhi = lhi;
        // SAFETY: a child of a valid node (caller).
        self.f_n = unsafe { (*leaf).count as usize };
        self.sib_end = 0;
    }

    /// Moves the front to slot 0 of the next leaf, with the path, the
    /// parent cache and the leaf state brought up to date; false at the
    /// end.
    ///
    /// # Safety
    /// The front path and the parent cache are valid for a version that
    /// stays alive.
    #[inline]
    unsafe fn next_leaf<V>(&mut self) -> bool {
        // SAFETY: forwarded from the caller.
        unsafe {
            if self.pidx + 1 >= self.pn && self.next_parent() {
                return true;
            }
            self.flush();
            if !step_next_leaf(&mut self.front) {
                return false;
            }
            self.load_front::<V>();
        }
        true
    }

    /// Writes the front's leaf and its slot in the parent (which `next`'s
    /// moves to a sibling may have taken past the path) into the path's
    /// two lowest levels. The cursor's mask is empty (the position is
    /// `idx`).
    #[inline]
    fn flush(&mut self) {
        let len = self.front.len;
        if self.pn != 0 && len >= 2 {
            self.front.lv[len - 2].idx = self.pidx;
            self.front.lv[len - 1] = Level {
                node: self.leaf,
                idx: self.idx.min(self.f_n.saturating_sub(1)),
                lo: self.lo,
                hi: self.lhi,
            };
        }
    }

    /// Sets `start` for slot `idx` of the front's leaf, after steps that
    /// moved `idx` only. The cursor's mask is empty.
    ///
    /// # Safety
    /// The front's leaf belongs to a version that stays alive (or `idx` is
    /// 0 or past the leaf's slots).
    #[inline]
    unsafe fn settle<V>(&mut self) {
        // SAFETY: forwarded from the caller.
        self.start = unsafe { self.slot_start::<V>(self.idx) };
    }

    /// The first index of slot `i` of the front's leaf; one past the leaf
    /// for `i` past its slots.
    ///
    /// # Safety
    /// As [`Ends::settle`], for slot `i`.
    #[inline]
    unsafe fn slot_start<V>(&self, i: usize) -> u64 {
        if i == 0 {
            self.lo
        } else if i >= self.f_n {
            // Past the last slot (unused pivots are `u64::MAX`): one past
            // the leaf, as `leaf_scanned` leaves it.
            self.lhi.wrapping_add(1)
        } else {
            // SAFETY: the leaf is valid (caller); `i - 1 < f_n - 1 <= 14`.
            unsafe { (*self.leaf::<V>()).pivots[i - 1] + 1 }
        }
    }

    /// Turns `next`'s unchecked step on for the rest of the front's leaf
    /// where it is allowed (see [`UNCHECKED`]), and returns its mask (empty
    /// where it is not allowed, or where no used slot is left). The front
    /// is at slot `idx`, with `start` its first index (a checked step's
    /// state).
    ///
    /// # Safety
    /// The front's leaf belongs to a version that stays alive.
    #[inline]
    unsafe fn allow_fast<V>(&mut self) -> u32 {
        debug_assert!(self.idx <= self.f_n);
        if self.front_yielded
            && !self.done
            && self.idx >= 1
            && self.lhi < self.hi
            && self.start >= self.lo_floor
        {
            // Every used slot from `idx` on (`idx <= f_n <= LEAF_SLOTS`).
            // SAFETY: a valid leaf (caller).
            let used = unsafe { (*self.leaf::<V>()).used() };
            let mask = used & !((1u32 << self.idx.min(LEAF_SLOTS)) - 1);
            // SAFETY: as above.
            unsafe { self.set_unchecked() };
            mask
        } else {
            0
        }
    }

    /// Brings the floor up to where the front's steps have taken it: every
    /// slot before the front's has been yielded or was a gap, so once the
    /// front has yielded, nothing that starts below the front's slot start
    /// may be yielded again, by either end.
    #[inline]
    fn sync_floor(&mut self) {
        if self.front_yielded && self.start > self.lo_floor {
            self.lo_floor = self.start;
        }
    }

    /// Ends the iteration at both ends (the caller empties the cursor's
    /// mask).
    #[inline]
    fn finish(&mut self) {
        self.done = true;
        self.f_n = 0;
        self.idx = 0;
        self.sib_end = 0;
    }

    /// The front's step in full: every slot of the front's leaf from
    /// `idx`, then the next leaves, with the checks against the range and
    /// the back's progress. `next`'s unchecked step is only the common
    /// case (an entry of a leaf that ends before the range). The cursor's
    /// mask is empty.
    ///
    /// # Safety
    /// The front path and leaf state are valid for a version that stays
    /// alive.
    unsafe fn step_checked<V>(&mut self) -> Option<RawEntry<V>> {
        self.sync_floor();
        while !self.done {
            // SAFETY: the front's leaf belongs to the live version (caller).
            let leaf = unsafe { &*self.leaf::<V>() };
            let n = self.f_n;
            while self.idx < n {
                let i = self.idx;
                let s = self.start;
                let e = if i + 1 < n { leaf.pivots[i] } else { self.lhi };
                let v = leaf.slot(i);
                self.idx = i + 1;
                self.start = e.wrapping_add(1);
                if v.is_null() {
                    continue;
                }
                if s > self.hi || e > self.hi_ceil {
                    // Past the range, or overlapping what the back yielded
                    // (a write replaced the entries in between).
                    self.finish();
                    return None;
                }
                if s < self.lo_floor {
                    continue;
                }
                if e >= self.hi {
                    self.finish();
                } else {
                    self.lo_floor = e + 1;
                }
                self.front_yielded = true;
                return Some((s, e, v));
            }
            // SAFETY: the path is valid for the live version (caller).
            if unsafe { step_next_leaf(&mut self.front) } {
                // SAFETY: as above.
                unsafe { self.load_front::<V>() };
            } else {
                self.finish();
            }
        }
        None
    }
}

/// Stops the process if dropped: held across a step that must not unwind
/// ([`Iter::next_slow`]), and forgotten at its end.
struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    #[cold]
    fn drop(&mut self) {
        std::process::abort()
    }
}

/// Marks the path that calls it as the unlikely one.
#[cold]
#[inline(always)]
fn cold_path() {}

/// Uses `x` here, at no cost: an empty `asm!` block that takes `x` in a
/// register (and emits nothing but a comment), so that the compiler keeps
/// `x` alive up to this point. Steers one register choice (x86-64 only;
/// elsewhere, and under Miri, which runs no `asm!`, it does nothing).
///
/// Why: the step's `m & (m - 1)` (see [`Cursor::mask`]) is `lea` into a
/// second register, then `and` of the two, an instruction that overwrites
/// one of its operands. LLVM picks the one that has no other use (`m - 1`),
/// and the loop then needs its mask back in the register the loop carries
/// it in: one `mov` an entry (`BENCHMARKS.md`, fifth pass). A use of
/// `m - 1` past the `and`, on the leaf's end path (where the value is dead
/// anyway, and its register is reused at once), makes the `and` overwrite
/// the mask's register instead: the `mov` goes, nothing is added.
#[inline(always)]
fn keep_alive(x: u32) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: the asm block is empty (a comment): it reads and writes no
    // memory, no register other than its input, which it only reads, and
    // keeps the flags and the stack, as its options say.
    unsafe {
        std::arch::asm!("/* {0:e} */", in(reg) x, options(nomem, nostack, preserves_flags))
    };
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = x;
}

/// Child 0 of `int` (which covers `[s, e]`) and the bounds it covers.
#[inline(always)]
fn first_child(int: &Internal, s: u64, e: u64) -> (NodePtr, u64, u64) {
    let e = if int.hdr.count > 1 { int.pivots[0] } else { e };
    (int.child(0), s, e)
}

/// How many of the first children of `par` (`pn >= 1` children, the last
/// ending at `phi`) end below `hi`. The stored pivots increase and the
/// unused ones are `u64::MAX`, so the children before the first pivot at or
/// above `hi` do, and the last child too if the node ends below `hi`.
#[inline]
fn children_below(par: &Internal, pn: usize, phi: u64, hi: u64) -> usize {
    debug_assert!((1..=INT_SLOTS).contains(&pn));
    let c = slot_in(&par.pivots, hi);
    if c + 1 >= pn && phi < hi {
        pn
    } else {
        c.min(pn - 1)
    }
}

impl<'s, T, S: Repr<T>> Iter<'s, T, S> {
    pub(crate) fn new(root: Root<'s, Slot<T, S>>, first: u64, last: u64) -> Self {
        let root = root.ptr();
        let mut ends = EndsBox::new(first, last);
        if !root.is_null() && first <= last {
            // SAFETY: the Root token keeps the version alive for 's.
            unsafe {
                descend(root, first, &mut ends.front);
                descend(root, last, &mut ends.back);
                ends.load_front::<Slot<T, S>>();
            }
            ends.done = false;
        }
        Iter {
            fr: ends.cursor(0),
            ends,
            _snap: PhantomData,
        }
    }

    /// Where the front is: the range's first index, then one past the end
    /// of the last entry the front yielded.
    #[inline]
    fn lo(&self) -> u64 {
        self.ends.first.max(self.ends.lo_floor)
    }

    /// The next slot of the front's leaf to look at: the lowest bit of the
    /// cursor's mask, or [`Ends::idx`] once it is empty (the slots between
    /// `idx` and the mask's lowest bit are gaps).
    #[inline]
    fn pos(&self) -> usize {
        let queued = self.fr.queued();
        if queued != 0 {
            queued.trailing_zeros() as usize
        } else {
            self.ends.idx
        }
    }

    /// Hands the rest of the front's leaf back to the checked steps:
    /// [`Ends::idx`] becomes [`Iter::pos`], the leaf state is brought up to
    /// date, and the cursor's mask empties.
    #[inline]
    fn stop_fast(&mut self) {
        if self.ends.idx == UNCHECKED {
            self.ends.leaf = self.fr.leaf.cast_mut().cast();
            // SAFETY: the front's leaf and parent belong to the version 's
            // keeps alive.
            unsafe { self.ends.sync_leaf() };
            self.ends.idx = self.pos();
            self.ends.sib_end = 0;
        }
        self.fr.mask = 0;
    }

    /// The front's step when `next`'s unchecked step has nothing left: the
    /// move to the next leaf after a leaf the unchecked step took to its
    /// end, and otherwise every slot from `idx` on, then the next leaves,
    /// with the checks against the range and the back's progress
    /// ([`Ends::step_checked`]); the unchecked step is turned on again for
    /// the leaf it stops in where that is allowed. The cursor's mask is
    /// empty.
    ///
    /// Takes the rest of the state by a pointer to the heap and the
    /// cursor's leaf, and hands the cursor back by value, so that no
    /// pointer to the caller's cursor escapes its loop (see [`Iter::fr`]).
    ///
    /// `extern "C"`, so that it cannot unwind (a panic in it, which would
    /// be a bug, stops the process: [`AbortOnUnwind`], and on Rust 1.81 and
    /// later the ABI itself): the caller's loop then has no cleanup path
    /// through this call, so nothing there needs the caller's iterator in
    /// memory. A cleanup path drops the iterator through its address,
    /// which keeps an [`Entries`](super::Entries) (pin pointer and cursor)
    /// in memory, stored and reloaded on every entry of a `for` loop.
    #[inline(never)]
    #[allow(improper_ctypes_definitions)] // called from Rust only
    extern "C" fn next_slow(ends: &mut Ends, leaf: NodePtr) -> Slow<Slot<T, S>> {
        let guard = AbortOnUnwind;
        let r = Self::next_slow_body(ends, leaf);
        std::mem::forget(guard);
        r
    }

    /// [`Iter::next_slow`]'s work.
    #[inline(always)]
    fn next_slow_body(ends: &mut Ends, leaf: NodePtr) -> Slow<Slot<T, S>> {
        if ends.idx == UNCHECKED {
            // (The cursor's leaf: `next_raw`'s moves leave `Ends::leaf`.)
            ends.leaf = leaf;
            // The common way here: the unchecked step took the leaf to its
            // end (so the front has yielded, the iteration is not over and
            // the leaf ends below the range's end). Move on, and let it go
            // on in the next leaf if it may (the first entry there needs
            // no check of its own).
            debug_assert!(ends.front_yielded && !ends.done && ends.lhi < ends.hi);
            // The common move, to the first leaf of the parent's next
            // sibling (`next_raw` moves to the others itself, and here the
            // leaf is its parent's last), with the floor left behind (it is
            // brought up to date wherever it is read: `Ends::sync_floor`).
            // SAFETY (this block's calls): `ends` is an iteration's, whose
            // 's keeps the version it points into alive.
            if !(ends.pidx + 1 >= ends.pn && unsafe { ends.next_parent() }) {
                // SAFETY: as above.
                unsafe { ends.sync_leaf() };
                ends.sib_end = 0;
                ends.idx = ends.f_n;
                ends.start = ends.lhi + 1;
                ends.sync_floor();
                ends.flush();
                // SAFETY: as above.
                if unsafe { !step_next_leaf(&mut ends.front) } {
                    ends.finish();
                    return (ends.cursor(0), Step::End, 0);
                }
                // SAFETY: as above.
                unsafe { ends.load_front::<Slot<T, S>>() };
            }
            if ends.lhi < ends.hi {
                // As `next_raw`'s move to a sibling: the new leaf starts
                // one past the last one, whose entries were all yielded or
                // gaps; its first slot here, the rest unchecked.
                debug_assert!(ends.idx == 0 && ends.lo >= ends.lo_floor);
                let leaf = ends.leaf::<Slot<T, S>>();
                // SAFETY: as above (the parent cache and the leaf state are
                // the new leaf's).
                let (used, entries) = unsafe {
                    ends.set_unchecked();
                    // (Only here and in `next_parent_fast`, the moves
                    // that start a run of siblings in a full iteration;
                    // elsewhere `ahead` may be stale: `Ends::ahead`.)
                    if ends.pn != 0 {
                        ends.fill_ahead(&*ends.par);
                    }
                    ((*leaf).used(), (*leaf).entries())
                };
                let cursor = ends.cursor(used & !1);
                if used & 1 != 0 {
                    // SAFETY: as above; slot 0 holds a value
                    // (`Header::used`).
                    let (v, p0) = unsafe { ((*leaf).slot(0), (*leaf).pivots[0]) };
                    let e = (ends.lo, p0.min(ends.lhi), v);
                    return (cursor, Step::Entry(e), entries);
                }
                return (cursor, Step::Resume, entries);
            }
            // The range's last leaf: step it with every check.
        } else {
            // SAFETY: as above.
            unsafe {
                ends.flush();
                ends.settle::<Slot<T, S>>();
            }
        }
        // SAFETY: as above.
        match unsafe { ends.step_checked::<Slot<T, S>>() } {
            Some(raw) => {
                // SAFETY: as above.
                let mask = unsafe { ends.allow_fast::<Slot<T, S>>() };
                (ends.cursor(mask), Step::Entry(raw), bits_set(mask) + 1)
            }
            None => (ends.cursor(0), Step::End, 0),
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
    /// [`Ends::step_checked`], which has every check. After a scanned leaf,
    /// the leaves that follow it under the same parent are taken from the
    /// parent's slots ([`Iter::fold_parents`]) rather than through the
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
        // The scans below start from `idx` and `start`.
        self.stop_fast();
        let ends = &mut *self.ends;
        ends.flush();
        // SAFETY: the front's leaf belongs to the version 's keeps alive.
        unsafe { ends.settle::<Slot<T, S>>() };
        ends.sync_floor();
        let hi = ends.hi;
        loop {
            let n = ends.f_n;
            if n == 0 {
                // Finished (`finish` zeroes f_n).
                return acc;
            }
            let i = ends.idx;
            let lhi = ends.lhi;
            if i < n && lhi < hi && ends.start >= ends.lo_floor {
                // SAFETY: the front's leaf belongs to the version 's keeps
                // alive; n is its slot count.
                let leaf = unsafe { &*ends.leaf::<Slot<T, S>>() };
                acc = scan_leaf(leaf, i, ends.start, lhi, acc, &mut f);
                Self::leaf_scanned(ends);
                // SAFETY: the path and the parent cache are valid for the
                // version 's keeps alive.
                acc = unsafe { Self::fold_parents(ends, acc, &mut f) };
                // At the range's last leaf, unscanned, or at the last leaf
                // scanned (`idx == f_n`, so the move below comes next).
                continue;
            } else if i < n {
                // The range's last leaf, or one found stale: step by step.
                // SAFETY: the iteration's state, valid for 's.
                match unsafe { ends.step_checked::<Slot<T, S>>() } {
                    Some(raw) => acc = f(acc, raw),
                    None => return acc,
                }
                continue;
            }
            // The leaf is done: move to the first slot of the next one.
            // SAFETY: the path and the parent cache are valid for the
            // version 's keeps alive.
            if unsafe { !ends.next_leaf::<Slot<T, S>>() } {
                ends.finish();
                return acc;
            }
        }
    }

    /// After `fold_raw` has scanned the front's leaf to its end: scans the
    /// leaves after it for as long as each ends before the last index
    /// wanted (the conditions of `fold_raw`'s unchecked scan: they start
    /// where the one before ended, above the floor), the rest of the
    /// parent's children from the parent, then each next parent's, taken
    /// from the grandparent. The path, the parent cache and the leaf state
    /// are brought up to date once, where it stops: at the range's last
    /// leaf, unscanned, for the caller to step with every check, or at the
    /// last leaf scanned, for the caller's move to the next leaf. A leaf
    /// costs its entries and a bound from its parent, a parent its slot in
    /// the grandparent.
    ///
    /// # Safety
    /// The front path and the parent cache are valid for the version 's
    /// keeps alive, and the leaf state is their leaf, scanned to the end.
    #[inline]
    unsafe fn fold_parents<B>(
        ends: &mut Ends,
        mut acc: B,
        f: &mut impl FnMut(B, RawEntry<Slot<T, S>>) -> B,
    ) -> B {
        let len = ends.front.len;
        if len < 2 || ends.pn == 0 {
            return acc;
        }
        // The first leaf to scan starts one past the scanned leaf's end,
        // which the floor is at (`leaf_scanned`) unless it was above it.
        let mut lo = ends.lhi + 1;
        if lo < ends.lo_floor {
            return acc;
        }
        let hi = ends.hi;
        // SAFETY: the parent cache is valid (caller); children and
        // grandparent below are valid nodes of the same version.
        let mut par = unsafe { &*ends.par };
        let mut pn = ends.pn;
        let mut phi = ends.phi;
        let mut plo = ends.front.lv[len - 2].lo;
        let mut j = ends.pidx + 1;
        loop {
            // Children `..end` of the parent end below the range's last
            // index; all but the last of them at their stored pivot.
            let end = if phi < hi {
                pn
            } else {
                children_below(par, pn, phi, hi)
            };
            let inner = end.min(pn - 1);
            while j < inner {
                // SAFETY (the unchecked reads in this loop): `j < inner <
                // pn <= INT_SLOTS`, so child `j` and pivot `j` exist, and
                // child `j + 2` where `j + 2 < pn`.
                let lhi = unsafe { *par.pivots.get_unchecked(j) };
                // Start fetching the leaf two ahead: this loop spends too
                // little on a leaf to hide a miss behind it, so fetching
                // one ahead (as `step_next_leaf` does) leaves it waiting
                // on memory (a fold of 10^6 `XValue` entries: 3.9 ms one
                // ahead, 2.2 ms two ahead, 3.1 ms three ahead, which
                // leaves each parent's first leaves unfetched; 2.8 ms for
                // the leaf-by-leaf path before).
                if j + 2 < pn {
                    prefetch_node(unsafe { par.child_unchecked(j + 2) });
                }
                // SAFETY: as above.
                let leaf = unsafe { &*par.child_unchecked(j).cast::<Leaf<Slot<T, S>>>() };
                acc = scan_leaf(leaf, 0, lo, lhi, acc, f);
                lo = lhi + 1;
                j += 1;
            }
            if end < pn {
                // Child `end` (the front's leaf was before it) is the
                // range's last leaf: left to the checked steps.
                debug_assert_eq!(j, end);
                let lhi = if j + 1 < pn { par.pivots[j] } else { phi };
                // SAFETY: as above.
                unsafe { ends.set_front(par, pn, plo, phi, j, lo, lhi) };
                ends.lo_floor = ends.lo_floor.max(lo);
                return acc;
            }
            if j + 1 == pn {
                // The last child, which ends with the parent.
                // SAFETY: as above.
                let leaf = unsafe { &*par.child_unchecked(j).cast::<Leaf<Slot<T, S>>>() };
                acc = scan_leaf(leaf, 0, lo, phi, acc, f);
                lo = phi + 1;
            }
            // The parent is done: on to its next sibling, if any.
            if len < 3 {
                break;
            }
            let g = &mut ends.front.lv[len - 3];
            // SAFETY: as above.
            let gint = unsafe { &*g.node.cast::<Internal>() };
            // `min`: the node's invariant, so that the reads below need
            // no bounds check.
            let gn = (gint.hdr.count as usize).min(INT_SLOTS);
            let gj = g.idx + 1;
            if gj >= gn {
                break;
            }
            g.idx = gj;
            // Contiguous with the parent before.
            plo = phi + 1;
            phi = if gj + 1 < gn { gint.pivots[gj] } else { g.hi };
            // SAFETY: as above.
            par = unsafe { &*gint.child(gj).cast::<Internal>() };
            pn = (par.hdr.count as usize).min(INT_SLOTS);
            // The loop above fetches from the third child on; the parent
            // after this one is fetched now, for the next time here.
            prefetch_node(par.child(0));
            if pn > 1 {
                prefetch_node(par.child(1));
            }
            if gj + 1 < gn {
                prefetch_node(gint.child(gj + 1));
            }
            j = 0;
        }
        // Every leaf under the last parent is scanned: the front is at its
        // last one, for the caller's move on.
        let last = pn - 1;
        let llo = if last == 0 {
            plo
        } else {
            par.pivots[last - 1] + 1
        };
        // SAFETY: as above.
        unsafe { ends.set_front(par, pn, plo, phi, last, llo, phi) };
        Self::leaf_scanned(ends);
        acc
    }

    /// Marks the front's leaf as scanned to its end by a fold, which
    /// handed over every entry of it: the floor moves past the leaf's last
    /// index (below `hi`, as the unchecked scans require), not just past
    /// its last entry. Nothing the version the fold walks holds lies
    /// between the two, so only an entry that a write made meanwhile can
    /// start there, and the contract lets the iteration miss those.
    #[inline]
    fn leaf_scanned(ends: &mut Ends) {
        ends.idx = ends.f_n;
        ends.start = ends.lhi + 1;
        ends.lo_floor = ends.start;
    }

    /// The next entry from the front as its range and (non-null) value
    /// word.
    ///
    /// The common step is here, inlined into the caller's loop: the next
    /// used slot of a leaf that ends before the range does, where no entry
    /// needs a check (see [`UNCHECKED`]), taken from the cursor's mask; and
    /// the move to the parent's next child when the mask runs out. The
    /// step reads and writes only the cursor, which a `for` loop keeps in
    /// registers; the move reads and writes the rest of the state on the
    /// heap once a leaf; anything else goes to [`Iter::next_slow`].
    #[inline(always)]
    pub(crate) fn next_raw(&mut self) -> Option<RawEntry<Slot<T, S>>> {
        self.next_raw_announced(&mut ())
    }

    /// How many entries the front's unchecked step has queued: the bits of
    /// the cursor's mask, each an entry that [`Iter::next_raw_announced`]
    /// yields without announcing it again.
    #[inline]
    pub(crate) fn queued(&self) -> u32 {
        bits_set(self.fr.queued())
    }

    /// Drops the iterator, its heap block given back out of line: the
    /// caller's loop passes the block's pointer, not its own address (see
    /// [`Iter::fr`]).
    #[inline(always)]
    pub(crate) fn drop_out_of_line(self) {
        #[inline(never)]
        fn give_back(_: EndsBox) {}
        give_back(self.ends);
    }

    /// The entries [`queued`](Iter::queued), one bit each.
    #[inline]
    pub(crate) fn queued_mask(&self) -> u32 {
        self.fr.queued()
    }

    /// Hands the rest of the front's leaf back to the checked steps
    /// ([`Iter::stop_fast`]): nothing stays [`queued`](Iter::queued).
    #[inline]
    pub(crate) fn unqueue(&mut self) {
        self.stop_fast();
    }

    /// [`Iter::next_raw`], announcing the entries it will yield ahead
    /// (see [`Announce`]): before an entry is yielded, it was announced
    /// once, by this call or an earlier one, and where nothing else
    /// touches the cursor's mask, [`Iter::queued`] counts the entries
    /// announced and not yet yielded. A
    /// [`MapleTree::iter`](crate::MapleTree::iter) takes a share of its
    /// pin per entry announced, once a leaf rather than once an entry
    /// (`raw::entry`).
    #[inline(always)]
    pub(crate) fn next_raw_announced(
        &mut self,
        announce: &mut impl Announce,
    ) -> Option<RawEntry<Slot<T, S>>> {
        let mut f = self.fr;
        // The leaf's end: move on until the mask has an entry queued (or
        // an entry or the end comes back otherwise), so that the caller's
        // loop has one way back to its top, through the step below, which
        // keeps that step's code tight.
        let k = loop {
            // The slot yielded last is the lowest bit: the next is the
            // lowest of the rest, kept in its place (see `Cursor::mask`).
            let rest = f.queued();
            if rest != 0 {
                f.mask = rest;
                break rest.trailing_zeros() as usize;
            }
            cold_path();
            // (No cost: it steers the step's registers, see `keep_alive`.)
            keep_alive(f.mask.wrapping_sub(1));
            let ends = &mut *self.ends;
            let j = ends.pidx + 1;
            if j < ends.sib_end {
                // The unchecked step took the leaf to its end (so the front
                // has yielded), and the parent's next child ends below the
                // range's end too (`Ends::sib_end`): the common move, made
                // here from the cached parent. The new leaf's first slot
                // is taken here, the rest from the mask above.
                debug_assert!(ends.idx == UNCHECKED && j < ends.pn);
                // SAFETY: the parent is a valid internal node of the version
                // 's keeps alive, and `1 <= j < pn <= INT_SLOTS`
                // (`Ends::pn`), so child `j` and pivot `j - 1` exist, and
                // `j + 2 < INT_SLOTS + 2`, within `Ends::ahead`.
                let (par, leaf) = unsafe {
                    let par = &*ends.par;
                    // Start fetching the leaf two ahead: a leaf's entries
                    // take too little time to hide a miss on the next one
                    // (as in `fold_parents`); past the parent's end, the
                    // next parent's first two (`Ends::ahead`).
                    prefetch_node(*ends.ahead.get_unchecked(j + 2));
                    (par, par.child_unchecked(j).cast::<Leaf<Slot<T, S>>>())
                };
                // SAFETY: a child of a node of the version.
                let (used, entries) = unsafe { ((*leaf).used(), (*leaf).entries()) };
                // Its entries: slot 0's below, the rest queued in the mask.
                announce.sibling(entries);
                // (The rest of the leaf state waits for `Ends::sync_leaf`;
                // its bounds are in `Ends::bounds`.)
                ends.pidx = j;
                f.leaf = leaf;
                // Slot 0, yielded below, or in its place bit 0 as the
                // placeholder, below the rest (queued).
                f.mask = used | 1;
                if used & 1 != 0 {
                    // Every slot before this leaf was yielded or was a gap,
                    // and the leaf starts one past the last leaf's end.
                    // SAFETY: as above; slot 0 and pivot 0 exist, and slot
                    // 0 holds a value (`Header::used`).
                    let (lo, v, e) = unsafe {
                        (
                            *par.pivots.get_unchecked(j - 1) + 1,
                            (*leaf).slot(0),
                            (*leaf).pivots[0].min(ends.leaf_hi()),
                        )
                    };
                    self.fr = f;
                    return Some((lo, e, v));
                }
                continue;
            }
            if j == ends.sib_end && j == ends.pn {
                // Past the last child of a parent that ends below the
                // range's end: the move to the next parent's first leaf,
                // where it ends below the range's end too (null
                // otherwise, with nothing changed, for `next_slow`).
                // SAFETY: `sib_end` is nonzero only while `idx` is
                // `UNCHECKED` (`Ends::sib_end`), and the front's leaf is
                // the parent's last child; the iteration's version stays
                // alive ('s).
                // (The cursor's leaf is the front's, as `next_slow` would
                // set it, and not kept in a register across the call: its
                // register then stays the new leaf's, which keeps register
                // copies out of the step's loop.)
                ends.leaf = f.leaf.cast_mut().cast();
                let leaf = unsafe { ends.next_parent_fast() };
                f.leaf = ends.leaf::<Slot<T, S>>();
                if !leaf.is_null() {
                    let leaf = leaf.cast_const().cast::<Leaf<Slot<T, S>>>();
                    // SAFETY: a child of a node of the version.
                    let (used, entries) = unsafe { ((*leaf).used(), (*leaf).entries()) };
                    // Its entries, as `next_slow` announces them.
                    announce.parent(entries);
                    f.leaf = leaf;
                    f.mask = used | 1;
                    if used & 1 != 0 {
                        // As in the move to a sibling: the leaf starts at
                        // the parent's start, one past the last leaf's end.
                        // SAFETY: as above; slot 0 holds a value.
                        let (v, e) =
                            unsafe { ((*leaf).slot(0), (*leaf).pivots[0].min(ends.leaf_hi())) };
                        self.fr = f;
                        return Some((ends.lo, e, v));
                    }
                    continue;
                }
            }
            let (nf, step, announced) = Self::next_slow(ends, f.leaf.cast_mut().cast());
            debug_assert_eq!(
                announced,
                nf.queued().count_ones() + u32::from(matches!(step, Step::Entry(_)))
            );
            announce.slow(announced);
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
        };
        debug_assert!(
            self.ends.idx == UNCHECKED && (1..LEAF_SLOTS).contains(&k),
            "Cursor::mask's invariant"
        );
        // SAFETY: the cursor's leaf belongs to the version 's keeps
        // alive, and `1 <= k < LEAF_SLOTS` (see `Cursor::mask`), so
        // slot `k` and pivot `k - 1` exist, and pivot `k` where
        // `k < LEAF_SLOTS - 1`. Slot `k` holds a value: the leaf's
        // used mask says so, and a published leaf's slots keep
        // whether they hold one (`Header::used`).
        let (v, s, e) = unsafe {
            let leaf = &*f.leaf;
            // A used slot starts one past its neighbour's stored
            // pivot and ends at its own, or, as the last used slot
            // (whose pivot is unused, `u64::MAX`, or absent for the
            // last slot), at the leaf's end, which only a caller that
            // uses the entry's end asks for (a stored pivot lies below
            // its node's end, so below `u64::MAX`).
            let lhi = self.ends.leaf_hi();
            let e = if k < LEAF_SLOTS - 1 {
                (*leaf.pivots.get_unchecked(k)).min(lhi)
            } else {
                lhi
            };
            (
                leaf.slot_unchecked(k),
                *leaf.pivots.get_unchecked(k - 1) + 1,
                e,
            )
        };
        debug_assert!(!v.is_null(), "Header::used's invariant");
        self.fr = f;
        Some((s, e, v))
    }

    /// The next entry from the back as its range and (non-null) value word.
    pub(crate) fn next_back_raw(&mut self) -> Option<RawEntry<Slot<T, S>>> {
        let i = self.pos();
        // SAFETY: the front's leaf and parent belong to the version 's
        // keeps alive.
        unsafe {
            if self.ends.idx == UNCHECKED {
                self.ends.leaf = self.fr.leaf.cast_mut().cast();
                self.ends.sync_leaf();
            }
            self.ends.start = self.ends.slot_start::<Slot<T, S>>(i);
        }
        self.ends.sync_floor();
        let r = self.back_step();
        // The back may have moved below the front's leaf end: the front's
        // unchecked step then no longer holds there, nor the moves to
        // siblings that end at or above the back.
        if self.ends.lhi >= self.ends.hi || self.ends.done {
            self.stop_fast();
        } else if self.ends.idx == UNCHECKED {
            // SAFETY: as above.
            unsafe { self.ends.set_unchecked() };
        }
        r
    }

    fn back_step(&mut self) -> Option<RawEntry<Slot<T, S>>> {
        while !self.ends.done {
            // SAFETY: the path is valid for the version 's keeps alive.
            let (s, e, v) = unsafe { path_entry::<Slot<T, S>>(&self.ends.back) };
            if e < self.lo() || s < self.ends.lo_floor {
                // Before the range, or overlapping what the front yielded.
                self.finish();
                break;
            }
            // SAFETY: as above.
            let more = unsafe { step_prev(&mut self.ends.back) };
            // A slot ending above what the back already passed is stale
            // (the path stepped into a leaf a write swapped in): skip it.
            let stale = e > self.ends.hi_ceil;
            if !v.is_null() && !stale {
                if s <= self.lo() || !more {
                    self.finish();
                } else {
                    self.ends.hi = s - 1;
                    self.ends.hi_ceil = s - 1;
                }
                return Some((s, e, v));
            }
            if !more {
                self.finish();
            }
        }
        None
    }

    /// Ends the iteration at both ends.
    fn finish(&mut self) {
        self.ends.finish();
        self.fr.mask = 0;
    }
}

/// The unchecked scan of a fold ([`Iter::fold_raw`], [`Iter::fold_parents`]):
/// hands `f` every entry of the leaf's slots `from..`, in order; slot
/// `from` starts at `s` and the leaf ends at `lhi`. The caller has checked
/// that the leaf ends before the last index wanted and that `s` is at or
/// above the floor, so inside the leaf no entry needs a check.
///
/// It goes from entry to entry by the leaf's used mask
/// ([`Header::used`](crate::node::Header::used)), lowest bit first: an
/// entry costs its bit (find, clear) and its two bounds, a gap nothing.
/// An entry after slot 0 starts one past its neighbour's stored pivot, and
/// the last used slot (whose pivot is unused, `u64::MAX`, or absent for the
/// last slot) ends at `lhi`.
#[inline(always)]
fn scan_leaf<V, B>(
    leaf: &Leaf<V>,
    from: usize,
    s: u64,
    lhi: u64,
    mut acc: B,
    f: &mut impl FnMut(B, RawEntry<V>) -> B,
) -> B {
    debug_assert!(from < LEAF_SLOTS);
    let pivots = &leaf.pivots;
    let mut m = leaf.used() & !((1u32 << from) - 1);
    if from == 0 && m & 1 != 0 {
        m &= !1;
        acc = f(acc, (s, pivots[0].min(lhi), leaf.slot(0)));
    }
    while m != 0 {
        let k = m.trailing_zeros() as usize;
        m &= m - 1;
        debug_assert!((1..LEAF_SLOTS).contains(&k));
        // SAFETY: `1 <= k < LEAF_SLOTS` (bit 0 is handled above, and the
        // mask has `LEAF_SLOTS` bits), so slot `k` and pivot `k - 1` exist,
        // and pivot `k` where `k < LEAF_SLOTS - 1`; slot `k` holds a value
        // (`Header::used`).
        let (v, start, e) = unsafe {
            let e = if k < LEAF_SLOTS - 1 {
                (*pivots.get_unchecked(k)).min(lhi)
            } else {
                lhi
            };
            (leaf.slot_unchecked(k), *pivots.get_unchecked(k - 1) + 1, e)
        };
        debug_assert!(!v.is_null(), "Header::used's invariant");
        acc = f(acc, (start, e, v));
    }
    acc
}
