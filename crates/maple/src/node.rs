//! Node layouts and the raw helpers every algorithm shares.
//!
//! # Layout
//!
//! Every node is one 256-byte, 64-byte-aligned block (four cache lines), so
//! leaves and internal nodes share one allocation size and one free list.
//! A node covers an implicit index range `[lo, hi]` handed down by its
//! parent; the root covers `[0, u64::MAX]`. Slot `i` covers
//! `(pivot[i-1], pivot[i]]`, the first slot starts at `lo` and the last used
//! slot ends at `hi`, so the last used slot's pivot is never stored. Unused
//! pivots hold `u64::MAX`, which lets the slot search count "pivots below
//! the index" over the whole fixed array without looking at `count`.
//!
//! ```text
//! Leaf (16 slots, 15 pivots) = 8 + 15*8 + 16*8 = 256 bytes
//! +--------+----------+----------+-----+-----------+---------+---------+-----+----------+
//! | header | pivot[0] | pivot[1] | ... | pivot[14] | slot[0] | slot[1] | ... | slot[15] |
//! +--------+----------+----------+-----+-----------+---------+---------+-----+----------+
//!   slot[i]: a value's word (a box pointer, or the value itself for an
//!            inline representation: see `value.rs`), or null for a free
//!            range ("gap"); atomic, because an exact-fit write replaces it
//!            in place
//!
//! Internal / allocation-range node (10 children, 9 pivots, 10 gaps) = 240 -> 256 bytes
//! +--------+-----------+----------+-----------+-----------+-----------+-----+------------+
//! | header | pivot[0..9] (72)     | child[0..10] (80)     | gap[0..10] (80)   | pad (16)   |
//! +--------+-----------+----------+-----------+-----------+-----------+-----+------------+
//!   gap[i]: the longest free run inside child i's range (for gap search)
//!
//! header (8 bytes): kind u8 | count u8 | flags u8 | entries u8 | dirty u16 | used u16
//!   used (leaves): bit i set when slot[i] holds a value, so that iteration
//!   goes from entry to entry without testing the gaps
//! ```
//!
//! # Invariants
//!
//! 1. Within a leaf, no two adjacent slots are both null (free runs merge).
//! 2. Every node except those on the rightmost path (`hi == u64::MAX`) ends on
//!    an occupied index: its last slot, or its last child's last slot, holds a
//!    value. So a free run never crosses a node boundary, and `gap[i]` sees
//!    every free run whole: gap search is exact.
//! 3. All leaves are at the same depth. Nodes off the rightmost path hold at
//!    least [`MIN_LEAF`] slots / [`MIN_INTERNAL`] children; the root holds at
//!    least two children or is a leaf.
//! 4. A node reachable from the published root is never written again
//!    (copy-on-write); only the write in progress mutates nodes it allocated
//!    itself (flag [`FRESH`]) or, under `&mut`, any node.

use std::ptr;

use crate::sync::{AtomicPtr, AtomicU64, Ordering};

pub(crate) const LEAF_SLOTS: usize = 16;
pub(crate) const INT_SLOTS: usize = 10;
pub(crate) const NODE_BYTES: usize = 256;
/// Fewest slots a leaf off the rightmost path may hold.
pub(crate) const MIN_LEAF: usize = 5;
/// Fewest children an internal node off the rightmost path may hold.
pub(crate) const MIN_INTERNAL: usize = 4;
/// Deepest tree possible: a non-root node off the rightmost path has at
/// least [`MIN_INTERNAL`] children, so height 32 would need 4^30 leaves.
pub(crate) const MAX_HEIGHT: usize = 32;

pub(crate) const KIND_LEAF: u8 = 0;
pub(crate) const KIND_INTERNAL: u8 = 1;
/// Allocated by the write in progress: not yet visible to readers.
pub(crate) const FRESH: u8 = 1;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Header {
    pub kind: u8,
    pub count: u8,
    pub flags: u8,
    /// Leaves: the number of bits set in [`Header::used`] (the slots that
    /// hold a value), set with it ([`Header::set_used`]); 0 for internal
    /// nodes. What a `tree.iter()` takes in one step on entering a leaf
    /// (a share of its pin for each entry to come: `raw::entry`), where a
    /// count of the mask's bits would cost a dozen instructions on a CPU
    /// without `popcnt`.
    pub entries: u8,
    /// Internal nodes: children whose `gap` must be recomputed before the
    /// write publishes. Only ever non-zero on a fresh node.
    pub dirty: u16,
    /// Leaves: bit `i` is set exactly when slot `i` holds a value (is not
    /// null); 0 for internal nodes. Written with the slots by whoever
    /// writes the leaf before it is published (or under `&mut`); the one
    /// write to a published leaf, an exact fit, replaces a value with a
    /// value and leaves it as it is. Iteration takes a leaf's entries from
    /// it ([`Leaf::used`]); `validate` checks it against the slots.
    pub used: u16,
}

pub(crate) type NodePtr = *mut Header;

#[repr(C, align(64))]
pub(crate) struct Leaf<T> {
    pub hdr: Header,
    pub pivots: [u64; LEAF_SLOTS - 1],
    /// Atomic because a write that replaces exactly one entry's value
    /// (same bounds) stores the new value pointer into the live leaf.
    slots: [AtomicPtr<T>; LEAF_SLOTS],
}

impl<T> Leaf<T> {
    /// Value pointer of slot `i` (null: free). Acquire pairs with the
    /// release store of an exact-fit write ([`Leaf::set_slot`]): a reader
    /// that sees the new pointer sees the value it points to.
    #[inline]
    pub(crate) fn slot(&self, i: usize) -> *mut T {
        self.slots[i].load(Ordering::Acquire)
    }

    /// [`Leaf::slot`] without the bounds check, for a loop whose bound the
    /// compiler cannot see.
    ///
    /// # Safety
    /// `i < LEAF_SLOTS`.
    #[inline(always)]
    pub(crate) unsafe fn slot_unchecked(&self, i: usize) -> *mut T {
        // SAFETY: in bounds (caller). Acquire: as `slot`.
        unsafe { self.slots.get_unchecked(i) }.load(Ordering::Acquire)
    }

    /// Sets slot `i`. Release: the value behind the pointer is visible to a
    /// reader that loads it (the only ordering an in-place replacement
    /// needs; on a fresh leaf nobody reads it yet and the publish of the
    /// leaf orders it). A write that changes whether the slot holds a value
    /// also brings [`Header::used`] up to date.
    #[inline]
    pub(crate) fn set_slot(&self, i: usize, p: *mut T) {
        self.slots[i].store(p, Ordering::Release);
    }

    /// [`Leaf::set_slot`] without the bounds check, for a loop whose
    /// bound the compiler cannot see.
    ///
    /// # Safety
    /// `i < LEAF_SLOTS`.
    #[inline(always)]
    pub(crate) unsafe fn set_slot_unchecked(&self, i: usize, p: *mut T) {
        // SAFETY: in bounds (caller). Release: as `set_slot`.
        unsafe { self.slots.get_unchecked(i) }.store(p, Ordering::Release);
    }

    /// The slots that hold a value, as a mask ([`Header::used`]).
    #[inline(always)]
    pub(crate) fn used(&self) -> u32 {
        u32::from(self.hdr.used)
    }

    /// The number of slots that hold a value ([`Header::entries`]).
    #[inline(always)]
    pub(crate) fn entries(&self) -> u32 {
        u32::from(self.hdr.entries)
    }
}

/// The [`Header::used`] mask of the first slots of a leaf, from their
/// words: bit `i` for `words[i]` not null.
#[inline]
pub(crate) fn used_mask<T>(words: &[*mut T]) -> u16 {
    debug_assert!(words.len() <= LEAF_SLOTS);
    let mut m = 0u16;
    for (i, w) in words.iter().enumerate() {
        m |= u16::from(!w.is_null()) << i;
    }
    m
}

#[repr(C, align(64))]
pub(crate) struct Internal {
    pub hdr: Header,
    pub pivots: [u64; INT_SLOTS - 1],
    /// Before `gaps`: a lookup reads pivots and children only, so they share
    /// the first three cache lines. Atomic because a write that replaces a
    /// single leaf swaps it in place (see `write.rs`).
    children: [AtomicPtr<Header>; INT_SLOTS],
    /// Atomic because the leaf swap above updates the gaps of live nodes.
    gaps: [AtomicU64; INT_SLOTS],
}

impl Internal {
    /// Child `i`. Acquire pairs with the release store of an in-place leaf
    /// swap ([`Internal::set_child`]): the new leaf's contents are visible.
    #[inline]
    pub(crate) fn child(&self, i: usize) -> NodePtr {
        self.children[i].load(Ordering::Acquire)
    }

    /// [`Internal::child`] without the bounds check, for a loop whose
    /// bound the compiler cannot see.
    ///
    /// # Safety
    /// `i < INT_SLOTS`.
    #[inline(always)]
    pub(crate) unsafe fn child_unchecked(&self, i: usize) -> NodePtr {
        // SAFETY: in bounds (caller). Acquire: as `child`.
        unsafe { self.children.get_unchecked(i) }.load(Ordering::Acquire)
    }

    /// Sets child `i`. Release: a reader that sees the pointer sees the
    /// child's contents (the only ordering an in-place swap needs; on a
    /// fresh node nobody reads it yet and the root's publish orders it).
    #[inline]
    pub(crate) fn set_child(&self, i: usize, p: NodePtr) {
        self.children[i].store(p, Ordering::Release);
    }

    /// Longest free run under child `i`. Relaxed: gaps only steer the gap
    /// search, which checks the leaf it reaches; a stale gap can make a
    /// concurrent search miss a fit, never return an occupied range.
    #[inline]
    pub(crate) fn gap(&self, i: usize) -> u64 {
        self.gaps[i].load(Ordering::Relaxed)
    }

    /// Sets the gap of child `i` (Relaxed: see [`Internal::gap`]).
    #[inline]
    pub(crate) fn set_gap(&self, i: usize, g: u64) {
        self.gaps[i].store(g, Ordering::Relaxed);
    }
}

#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<Leaf<u8>>() == NODE_BYTES);
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<Internal>() == NODE_BYTES);
// (Under loom the atomics are larger; `mem.rs` checks that a node still
// fits its block.)
const _: () = assert!(std::mem::align_of::<Internal>() == 64);

/// The number of bits set in each byte.
static BITS_SET: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = (i as u32).count_ones() as u8;
        i += 1;
    }
    t
};

/// The number of bits set in a leaf's slot mask (`m < 2^LEAF_SLOTS`), by
/// two lookups: `count_ones` is a dozen instructions on a CPU without
/// `popcnt` (the default target).
#[inline(always)]
pub(crate) fn bits_set(m: u32) -> u32 {
    debug_assert!(m >> LEAF_SLOTS == 0);
    u32::from(BITS_SET[(m & 0xff) as usize]) + u32::from(BITS_SET[(m >> 8 & 0xff) as usize])
}

impl Header {
    /// Sets a leaf's [`Header::used`] mask and its count of entries
    /// ([`Header::entries`]).
    #[inline]
    pub(crate) fn set_used(&mut self, used: u16) {
        self.used = used;
        // (`count_ones` would be 1-2% of an insert.)
        self.entries = bits_set(u32::from(used)) as u8;
    }

    pub(crate) fn new(kind: u8) -> Self {
        Header {
            kind,
            count: 0,
            flags: 0,
            entries: 0,
            dirty: 0,
            used: 0,
        }
    }
}

/// Writes an empty leaf into a block.
///
/// # Safety
/// `p` is a valid, writable node block.
pub(crate) unsafe fn init_leaf<T>(p: NodePtr, flags: u8) {
    let mut hdr = Header::new(KIND_LEAF);
    hdr.flags = flags;
    // SAFETY: p is a writable 256-byte block aligned for Leaf<T>.
    unsafe {
        ptr::write(
            p.cast::<Leaf<T>>(),
            Leaf {
                hdr,
                pivots: [u64::MAX; LEAF_SLOTS - 1],
                slots: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            },
        )
    }
}

/// Writes an empty internal node into a block.
///
/// # Safety
/// `p` is a valid, writable node block.
pub(crate) unsafe fn init_internal(p: NodePtr, flags: u8) {
    let mut hdr = Header::new(KIND_INTERNAL);
    hdr.flags = flags;
    // SAFETY: p is a writable 256-byte block aligned for Internal.
    unsafe {
        ptr::write(
            p.cast::<Internal>(),
            Internal {
                hdr,
                pivots: [u64::MAX; INT_SLOTS - 1],
                children: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
                gaps: std::array::from_fn(|_| AtomicU64::new(0)),
            },
        )
    }
}

/// Copies node `p` into the block `q` (copy-on-write). The copy's flags
/// and dirty bits are cleared.
///
/// # Safety
/// `p` is a valid node; `q` is a writable block no one else can see.
#[cfg_attr(not(loom), allow(clippy::extra_unused_type_parameters))]
pub(crate) unsafe fn copy_node<T>(p: NodePtr, q: NodePtr) {
    // SAFETY: forwarded from the caller.
    unsafe {
        #[cfg(not(loom))]
        ptr::copy_nonoverlapping(p.cast::<u8>(), q.cast::<u8>(), NODE_BYTES);
        // Loom's atomics are handles to model state: copy field by field.
        #[cfg(loom)]
        if (*p).kind == KIND_LEAF {
            init_leaf::<T>(q, 0);
            let (src, dst) = (&*p.cast::<Leaf<T>>(), &mut *q.cast::<Leaf<T>>());
            dst.hdr = src.hdr;
            dst.pivots = src.pivots;
            for i in 0..LEAF_SLOTS {
                dst.set_slot(i, src.slot(i));
            }
        } else {
            init_internal(q, 0);
            let (src, dst) = (&*p.cast::<Internal>(), &mut *q.cast::<Internal>());
            dst.hdr = src.hdr;
            dst.pivots = src.pivots;
            for i in 0..INT_SLOTS {
                dst.set_child(i, src.child(i));
                dst.set_gap(i, src.gap(i));
            }
        }
        (*q).flags = 0;
        (*q).dirty = 0;
    }
}

/// Starts fetching all four cache lines of a node whose pointer was just
/// read, so that a descent waits about one memory latency per level rather
/// than one per line it touches (pivots, then the child or value pointer).
#[inline(always)]
pub(crate) fn prefetch_node(p: NodePtr) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let b = p.cast::<i8>();
        // SAFETY: prefetching is a hint that never faults or reads memory
        // architecturally; wrapping_add keeps the address computation
        // defined even for a dangling pointer.
        unsafe {
            _mm_prefetch(b, _MM_HINT_T0);
            _mm_prefetch(b.wrapping_add(64), _MM_HINT_T0);
            _mm_prefetch(b.wrapping_add(128), _MM_HINT_T0);
            _mm_prefetch(b.wrapping_add(192), _MM_HINT_T0);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Index of the slot covering `index`: the number of stored pivots below it.
/// Pivots are sorted and unused ones are `u64::MAX`, so this is a lower
/// bound over the whole fixed array, with no dependence on `count`. It is a
/// branchless binary search over the `N + 1` possible answers: a first
/// compare that leaves a power-of-two window ending at `N` or starting at
/// 0, then halvings of it, so `ceil(log2(N + 1))` compares in all (4 for
/// 15 or 9 pivots, each a conditional move). The baseline x86-64 target
/// has no 64-bit vector compare, and the scalar count over 15 pivots cost
/// about 60 instructions a level (callgrind).
#[inline]
pub(crate) fn slot_in<const N: usize>(pivots: &[u64; N], index: u64) -> usize {
    // Answers lie in 0..=N; `w` is the window, a power of two with
    // `N + 1 <= 2 * w` (constants: the loop unrolls).
    let m = N + 1;
    let mut w = m.next_power_of_two() / 2;
    // Invariant: the answer lies in `base..base + w`; `pivots[k] < index`
    // exactly when the answer exceeds `k`.
    let mut base = if pivots[m - w - 1] < index { m - w } else { 0 };
    while w > 1 {
        w /= 2;
        if pivots[base + w - 1] < index {
            base += w;
        }
    }
    base
}

/// `[lo, hi]` of slot `i` of a node covering `[lo, hi]`, from its pivots
/// alone: a stored pivot lies below `hi` and an unused one is `u64::MAX`
/// (both checked by `validate`), so the slot's end is its pivot capped at
/// `hi`, and the node's count is not needed (a descent then never loads
/// it). `i` is at most `P`, as [`slot_in`] returns.
#[inline(always)]
pub(crate) fn slot_bounds<const P: usize>(
    pivots: &[u64; P],
    i: usize,
    lo: u64,
    hi: u64,
) -> (u64, u64) {
    let s = if i == 0 { lo } else { pivots[i - 1] + 1 };
    let e = if i < P { pivots[i].min(hi) } else { hi };
    (s, e)
}

/// `[lo, hi]` of slot `i` in a node covering `[lo, hi]` with `count` slots.
#[inline]
pub(crate) fn slot_range(pivots: &[u64], count: usize, i: usize, lo: u64, hi: u64) -> (u64, u64) {
    let s = if i == 0 { lo } else { pivots[i - 1] + 1 };
    let e = if i + 1 == count { hi } else { pivots[i] };
    (s, e)
}

/// Number of indices in `[s, e]`, saturating at `u64::MAX` for the full space.
#[inline]
pub(crate) fn run_len(s: u64, e: u64) -> u64 {
    (e - s).saturating_add(1)
}

/// Longest free run in a leaf covering `[lo, hi]`.
///
/// # Safety
/// `leaf` is a valid leaf.
pub(crate) unsafe fn leaf_gap<T>(leaf: *const Leaf<T>, lo: u64, hi: u64) -> u64 {
    // SAFETY: caller guarantees validity; a reachable leaf is never written.
    let leaf = unsafe { &*leaf };
    let n = leaf.hdr.count as usize;
    let mut best = 0;
    for i in 0..n {
        if leaf.slot(i).is_null() {
            let (s, e) = slot_range(&leaf.pivots, n, i, lo, hi);
            best = best.max(run_len(s, e));
        }
    }
    best
}

/// Longest free run under an internal node (from its children's gaps).
pub(crate) fn internal_gap(node: &Internal) -> u64 {
    (0..node.hdr.count as usize)
        .map(|i| node.gap(i))
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::{slot_bounds, slot_in, slot_range};

    #[test]
    fn slot_bounds_match_slot_range() {
        // Every used count of a 15-pivot and a 9-pivot node covering
        // [lo, hi], every slot: the count-free bounds equal the counted ones.
        for (lo, hi) in [(0, u64::MAX), (100, 1000), (5, 5 + 200)] {
            for n in 1..=16usize {
                let mut p15 = [u64::MAX; 15];
                for (i, p) in p15.iter_mut().enumerate().take(n - 1) {
                    *p = lo + 10 * (i as u64 + 1);
                }
                for i in 0..n {
                    assert_eq!(
                        slot_bounds(&p15, i, lo, hi),
                        slot_range(&p15, n, i, lo, hi),
                        "n {n} i {i}"
                    );
                }
                if n <= 10 {
                    let mut p9 = [u64::MAX; 9];
                    p9[..n - 1].copy_from_slice(&p15[..n - 1]);
                    for i in 0..n {
                        assert_eq!(slot_bounds(&p9, i, lo, hi), slot_range(&p9, n, i, lo, hi));
                    }
                }
            }
        }
    }

    #[test]
    fn slot_in_counts_pivots_below() {
        for n in 0..=15usize {
            let mut pivots = [u64::MAX; 15];
            for (i, p) in pivots.iter_mut().enumerate().take(n) {
                *p = 10 * (i as u64 + 1);
            }
            for index in [0, 1, 9, 10, 11, 55, 149, 150, 151, u64::MAX - 1, u64::MAX] {
                let want = pivots.iter().filter(|&&p| p < index).count();
                assert_eq!(slot_in(&pivots, index), want, "n {n} index {index}");
            }
        }
        let mut nine = [u64::MAX; 9];
        nine[..4].copy_from_slice(&[3, 7, 8, 20]);
        for index in 0..30 {
            assert_eq!(
                slot_in(&nine, index),
                nine.iter().filter(|&&p| p < index).count()
            );
        }
    }
}
