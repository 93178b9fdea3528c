//! An arena-backed augmented red-black interval tree, written for this crate.
//!
//! This is the structure behind the kernel's `i_mmap` (an `rb_root_cached` of
//! VMAs keyed by `vm_pgoff`, each node caching the largest `last` of its
//! subtree). The algorithms are the textbook ones (CLRS ch. 13 and 14.3,
//! "augmenting data structures"); the code is our own.
//!
//! # Layout
//!
//! Nodes live in one `Vec` (the arena). Callers name a slot by its `u32`
//! index; inside, the links (`left`, `right`, `parent`, `root`, the free list)
//! hold the slot's *word offset* in the arena (`index * size_of::<Node>() / 8`,
//! a "ref"), so that following a link is one scaled address (`base + ref * 8`)
//! with no multiply; `NIL` (`u32::MAX`) means "none" in both. A slot
//! can be allocated first
//! ([`IntervalTree::alloc_gen`]) and linked into the tree separately
//! ([`IntervalTree::link`]; [`IntervalTree::insert_gen`] does both at once),
//! so that a design can keep slots *outside* the
//! tree (the `aspace` design hangs the members of a group of identical
//! intervals off one linked node). Freed slots go on a free list of indices
//! threaded through `max_last` (not a link), and each slot carries a
//! generation so that a stale handle is detected instead of aliasing a new
//! entry.
//!
//! ```text
//!  Node<P> (48 bytes with P = u64, 56 with P = 16 bytes)
//!  +-------+------+----------+------+-------+--------+------------------+---------+
//!  | first | last | max_last | left | right | parent | meta             | payload |
//!  |  u64  | u64  |   u64    | u32  |  u32  |  u32   | red|live|tree|gen|    P    |
//!  +-------+------+----------+------+-------+--------+------------------+---------+
//! ```
//!
//! # Order
//!
//! The key order is a type parameter ([`KeyOrder`]). [`ByStart`], the
//! default, is the kernel's: nodes are ordered by `first` alone, and a node
//! goes to the right of every node with the same `first` (so equal intervals
//! keep their insertion order, and [`IntervalTree::link_after`] puts a node
//! right after its parent entry). [`ByInterval`] orders by `(first, last)`
//! (equal keys to the right again) and is what
//! [`IntervalTree::find_exact`] needs; the `aspace` group tree uses it.
//! `max_last` is the largest `last` in the node's subtree.
//!
//! # The arena invariant
//!
//! Every link (`root`, and the `left`, `right` and `parent` of every slot,
//! free ones included) holds `NIL` or the ref of a
//! slot `< nodes.len()` (`index * WORDS`, `index < nodes.len()`). This holds
//! whatever the caller does (a slot handed in the wrong state corrupts the
//! tree's shape, never memory), because the arena never shrinks and a link is
//! only ever written with `NIL`, a value read from another link, or the ref
//! of an index that the entry point (`link`, `link_after`, `unlink`,
//! `replace`, `free`) has bounds-checked. No address depends on the tree's
//! shape either: every link is compared with `NIL` before it is followed,
//! either by the algorithm itself or, where the red-black invariants rule
//! `NIL` out, by a check that panics (`expect_node`). The slot states each
//! entry point expects are checked in debug builds. The hot paths (descent, rebalancing, augmented
//! propagation, walk) therefore address the arena unchecked with any
//! non-`NIL` value read from a link; each such place says so. `alloc` refuses
//! to grow the arena past the last index whose ref fits below `NIL` (more
//! than 600 million slots, tens of GiB).
//!
//! # Augmented propagation
//!
//! After an insert, `max_last` is raised on the path upward only while it is
//! below the new `last`. After a removal it is recomputed upward from the
//! lowest node whose subtree changed, and stops at the first node whose value
//! did not change (its ancestors' values were computed from that same
//! value). When a node with two children is removed, its successor takes its
//! place *and its old `max_last`* (the value its parent saw); the path from
//! the successor's old parent up to the successor is recomputed first, then
//! the successor and its ancestors, each leg stopping early.
//!
//! # Costs
//!
//! `link`/`unlink` are O(log n); `alloc`/`free`/`replace` are O(1); a walk is
//! O(log n + k) for k reported nodes. Memory is `capacity * size_of::<Node<P>>()`.
//! Instruction counts against the kernel's own tree: `crates/rmap/BENCHMARKS.md`
//! (`scripts/callgrind-rmap.sh`).

use std::fmt;
use std::marker::PhantomData;

use crate::Interval;

/// "No node".
pub(crate) const NIL: u32 = u32::MAX;

const RED: u32 = 1 << 31;
const LIVE: u32 = 1 << 30;
const IN_TREE: u32 = 1 << 29;
const GEN_MASK: u32 = IN_TREE - 1;

/// `r`, a link that the red-black invariants say is not NIL. A NIL here
/// means a caller broke a slot-state precondition (checked in debug builds)
/// and corrupted the tree's shape; it panics instead of addressing outside
/// the arena.
#[inline(always)]
fn expect_node(r: u32) -> u32 {
    if r == NIL {
        corrupted();
    }
    r
}

#[cold]
#[inline(never)]
fn corrupted() -> ! {
    panic!("interval tree corrupted: a link the red-black invariants require is NIL")
}

/// The order in which [`IntervalTree::link`] places a node.
pub(crate) trait KeyOrder: fmt::Debug {
    /// True when a node with interval `[kf, kl]` goes before (left of) `n`.
    /// Must be a strict weak order consistent with `first`: a node never goes
    /// before one with a smaller `first`.
    fn before<P>(kf: u64, kl: u64, n: &Node<P>) -> bool;
}

/// The kernel's order: by `first` alone, equal starts in insertion order.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ByStart;

impl KeyOrder for ByStart {
    #[inline(always)]
    fn before<P>(kf: u64, _kl: u64, n: &Node<P>) -> bool {
        kf < n.first
    }
}

/// By `(first, last)`, equal intervals in insertion order; allows
/// [`IntervalTree::find_exact`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ByInterval;

impl KeyOrder for ByInterval {
    #[inline(always)]
    fn before<P>(kf: u64, kl: u64, n: &Node<P>) -> bool {
        kf < n.first || (kf == n.first && kl < n.last)
    }
}

/// One arena slot.
#[derive(Clone, Copy, Debug, PartialEq)]
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
    /// The slot is allocated (not on the free list).
    #[inline]
    pub(crate) fn is_live(&self) -> bool {
        self.meta & LIVE != 0
    }
    #[inline]
    pub(crate) fn in_tree(&self) -> bool {
        self.meta & IN_TREE != 0
    }
}

/// The tree. Not synchronised: every design wraps it in its own locks.
pub(crate) struct IntervalTree<P, K: KeyOrder = ByStart> {
    nodes: Vec<Node<P>>,
    /// The root's ref, NIL when empty.
    root: u32,
    /// Head of the free list (an index), NIL when empty.
    free: u32,
    /// Number of allocated (live) slots.
    live: u32,
    order: PhantomData<K>,
}

impl<P: fmt::Debug, K: KeyOrder> fmt::Debug for IntervalTree<P, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntervalTree")
            .field("order", &std::any::type_name::<K>())
            .field("nodes", &self.nodes)
            .field("root", &self.root)
            .field("free", &self.free)
            .field("live", &self.live)
            .finish()
    }
}

impl<P: Copy, K: KeyOrder> Default for IntervalTree<P, K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: Copy, K: KeyOrder> IntervalTree<P, K> {
    pub(crate) const fn new() -> Self {
        IntervalTree {
            nodes: Vec::new(),
            root: NIL,
            free: NIL,
            live: 0,
            order: PhantomData,
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

    /// The arena (for the event recorder's before/after comparison).
    pub(crate) fn nodes(&self) -> &[Node<P>] {
        &self.nodes
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

    /// Live slot `i` of generation `gen`, or `None` (one bounds check).
    #[inline(always)]
    pub(crate) fn live_node(&self, i: u32, gen: u32) -> Option<&Node<P>> {
        match self.nodes.get(i as usize) {
            Some(n) if n.meta & LIVE != 0 && n.meta & GEN_MASK == gen => Some(n),
            _ => None,
        }
    }

    /// Slot `i`, unchecked.
    ///
    /// # Safety
    /// `i < nodes.len()`.
    #[inline(always)]
    pub(crate) unsafe fn node_unchecked(&self, i: u32) -> &Node<P> {
        debug_assert!((i as usize) < self.nodes.len());
        // SAFETY: by the precondition.
        unsafe { self.nodes.get_unchecked(i as usize) }
    }

    /// Slot `i`, unchecked, mutably.
    ///
    /// # Safety
    /// `i < nodes.len()`.
    #[inline(always)]
    pub(crate) unsafe fn node_unchecked_mut(&mut self, i: u32) -> &mut Node<P> {
        debug_assert!((i as usize) < self.nodes.len());
        // SAFETY: by the precondition.
        unsafe { self.nodes.get_unchecked_mut(i as usize) }
    }

    /// True when `i` names a live slot of generation `gen`.
    #[inline]
    pub(crate) fn is_live(&self, i: u32, gen: u32) -> bool {
        match self.nodes.get(i as usize) {
            Some(n) => n.meta & LIVE != 0 && n.meta & GEN_MASK == gen,
            None => false,
        }
    }

    /// [`IntervalTree::alloc_gen`]'s slot only (the tests).
    #[cfg(test)]
    pub(crate) fn alloc(&mut self, iv: Interval, payload: P) -> u32 {
        self.alloc_gen(iv, payload).0
    }

    /// Allocates a slot (not linked into the tree). O(1) amortised. Returns
    /// the slot and its generation (known here; read back after linking it
    /// would cost a second bounds check).
    ///
    /// # Panics
    ///
    /// When the arena already holds [`IntervalTree::MAX_SLOTS`] slots (more
    /// than 600 million; the memory runs out first).
    #[inline(always)]
    pub(crate) fn alloc_gen(&mut self, iv: Interval, payload: P) -> (u32, u32) {
        self.alloc_with(iv, payload, NIL, 0)
    }

    /// [`IntervalTree::alloc_gen`] writing `parent` as the slot's parent
    /// link and `flags` (of `RED | IN_TREE`) into its meta: the caller
    /// links it under `parent` at once.
    #[inline(always)]
    fn alloc_with(&mut self, iv: Interval, payload: P, parent: u32, flags: u32) -> (u32, u32) {
        if self.free != NIL {
            self.live += 1;
            let i = self.free;
            // Checked: the free list is threaded through a non-link field.
            let n = &mut self.nodes[i as usize];
            let next_free = n.max_last as u32;
            let gen = n.meta & GEN_MASK;
            *n = Node {
                first: iv.first,
                last: iv.last,
                max_last: iv.last,
                left: NIL,
                right: NIL,
                parent,
                meta: LIVE | flags | gen,
                payload,
            };
            self.free = next_free;
            (i, gen)
        } else {
            assert!(
                self.nodes.len() < Self::MAX_SLOTS as usize,
                "interval tree arena full ({} slots)",
                Self::MAX_SLOTS
            );
            self.live += 1;
            let i = self.nodes.len() as u32;
            self.nodes.push(Node {
                first: iv.first,
                last: iv.last,
                max_last: iv.last,
                left: NIL,
                right: NIL,
                parent,
                meta: LIVE | flags,
                payload,
            });
            (i, 0)
        }
    }

    /// Frees a live slot that is not in the tree; bumps its generation.
    #[cfg(test)]
    pub(crate) fn free(&mut self, i: u32) {
        let free = self.free;
        let n = &mut self.nodes[i as usize];
        debug_assert!(
            n.meta & (LIVE | IN_TREE) == LIVE,
            "free: slot not live or still linked"
        );
        n.meta = (n.meta.wrapping_add(1)) & GEN_MASK;
        // A free slot's `max_last` holds the next free index (not a link).
        n.max_last = u64::from(free);
        self.free = i;
        self.live -= 1;
    }

    // ----- unchecked access ----------------------------------------------

    /// Words (8 bytes) per slot: a slot's ref is `index * WORDS`.
    const WORDS: u32 = {
        let size = std::mem::size_of::<Node<P>>();
        // Node holds u64 fields: its size is a non-zero multiple of 8.
        assert!(size % 8 == 0 && size >= 8);
        (size / 8) as u32
    };

    /// Slots beyond this index would have a ref that does not fit below NIL.
    const MAX_SLOTS: u32 = (NIL - 1) / Self::WORDS;

    /// The ref of slot `i` (which the caller has bounds-checked).
    #[inline(always)]
    fn ref_of(i: u32) -> u32 {
        i * Self::WORDS
    }

    /// `WORDS = odd << WORDS_SHIFT`.
    const WORDS_SHIFT: u32 = Self::WORDS.trailing_zeros();

    /// The inverse of `WORDS >> WORDS_SHIFT` (odd) modulo 2^32.
    const WORDS_ODD_INVERSE: u32 = {
        let odd = Self::WORDS >> Self::WORDS_SHIFT;
        // Newton's iteration doubles the correct low bits each step; `odd` is
        // its own inverse modulo 8 (3 bits), so 4 steps give 48 >= 32.
        let mut x = odd;
        let mut k = 0;
        while k < 4 {
            x = x.wrapping_mul(2u32.wrapping_sub(odd.wrapping_mul(x)));
            k += 1;
        }
        assert!(odd.wrapping_mul(x) == 1);
        x
    };

    /// The slot index of ref `r` (a multiple of `WORDS`): an exact division,
    /// done as a shift and a multiplication by the modular inverse.
    #[inline(always)]
    fn slot_of(r: u32) -> u32 {
        debug_assert!(r % Self::WORDS == 0);
        (r >> Self::WORDS_SHIFT).wrapping_mul(Self::WORDS_ODD_INVERSE)
    }

    /// The slot with ref `r`, unchecked.
    ///
    /// # Safety
    ///
    /// `r` is the ref of a slot `< self.nodes.len()`: a non-`NIL` value read
    /// from a link, or the ref of an index the entry point bounds-checked
    /// (the arena invariant).
    #[inline(always)]
    unsafe fn at(&self, r: u32) -> &Node<P> {
        debug_assert!(r % Self::WORDS == 0 && ((r / Self::WORDS) as usize) < self.nodes.len());
        // SAFETY: `r = i * WORDS` with `i < len` (the caller's guarantee), so
        // the address is that of element `i`, in bounds and aligned.
        unsafe {
            &*self
                .nodes
                .as_ptr()
                .cast::<u64>()
                .add(r as usize)
                .cast::<Node<P>>()
        }
    }

    /// Mutable [`IntervalTree::at`].
    ///
    /// # Safety
    ///
    /// As for [`IntervalTree::at`].
    #[inline(always)]
    unsafe fn at_mut(&mut self, r: u32) -> &mut Node<P> {
        debug_assert!(r % Self::WORDS == 0 && ((r / Self::WORDS) as usize) < self.nodes.len());
        // SAFETY: as in `at`; `&mut self` makes the reference unique.
        unsafe {
            &mut *self
                .nodes
                .as_mut_ptr()
                .cast::<u64>()
                .add(r as usize)
                .cast::<Node<P>>()
        }
    }

    // The helpers below all take indices with the precondition of `at`
    // (`red` also accepts NIL).

    /// # Safety
    /// As for [`IntervalTree::at`].
    #[inline(always)]
    unsafe fn left(&self, i: u32) -> u32 {
        // SAFETY: forwarded precondition.
        unsafe { self.at(i).left }
    }
    /// # Safety
    /// As for [`IntervalTree::at`].
    #[inline(always)]
    unsafe fn right(&self, i: u32) -> u32 {
        // SAFETY: forwarded precondition.
        unsafe { self.at(i).right }
    }
    /// # Safety
    /// As for [`IntervalTree::at`].
    #[inline(always)]
    unsafe fn parent(&self, i: u32) -> u32 {
        // SAFETY: forwarded precondition.
        unsafe { self.at(i).parent }
    }
    /// # Safety
    /// `i` is NIL or as for [`IntervalTree::at`].
    #[inline(always)]
    unsafe fn red(&self, i: u32) -> bool {
        // SAFETY: `i` is not NIL here; forwarded precondition.
        i != NIL && unsafe { self.at(i).is_red() }
    }
    /// # Safety
    /// As for [`IntervalTree::at`].
    #[inline(always)]
    unsafe fn set_red(&mut self, i: u32, red: bool) {
        // SAFETY: forwarded precondition.
        let n = unsafe { self.at_mut(i) };
        if red {
            n.meta |= RED;
        } else {
            n.meta &= !RED;
        }
    }

    /// Colours `i` black; a no-op on NIL.
    ///
    /// # Safety
    /// `i` is NIL or as for [`IntervalTree::at`].
    #[inline(always)]
    unsafe fn set_black_or_nil(&mut self, i: u32) {
        if i != NIL {
            // SAFETY: `i` is not NIL; forwarded precondition.
            unsafe { self.at_mut(i).meta &= !RED };
        }
    }

    /// `max_last` of `i`'s subtree, recomputed from `i`'s own `last` and its
    /// children's `max_last`.
    ///
    /// # Safety
    /// As for [`IntervalTree::at`].
    #[inline(always)]
    unsafe fn computed_max(&self, i: u32) -> u64 {
        // SAFETY: `i` by the precondition; the children are links, each
        // dereferenced only when not NIL.
        unsafe {
            let n = self.at(i);
            let mut m = n.last;
            if n.left != NIL {
                m = m.max(self.at(n.left).max_last);
            }
            if n.right != NIL {
                m = m.max(self.at(n.right).max_last);
            }
            m
        }
    }

    /// Makes `new` take `old`'s place under `parent` (or as root).
    ///
    /// # Safety
    /// `parent` is NIL or as for [`IntervalTree::at`].
    #[inline(always)]
    unsafe fn replace_child(&mut self, parent: u32, old: u32, new: u32) {
        if parent == NIL {
            self.root = new;
        } else {
            // SAFETY: `parent` is not NIL; forwarded precondition.
            let p = unsafe { self.at_mut(parent) };
            if p.left == old {
                p.left = new;
            } else {
                p.right = new;
            }
        }
    }

    /// Rotates `x` down to the left; its right child `y` takes its place and
    /// its `max_last` (the subtree's maximum does not change).
    ///
    /// # Safety
    /// `x` as for [`IntervalTree::at`] (a NIL right link panics).
    unsafe fn rotate_left(&mut self, x: u32) {
        // SAFETY: `x` by the precondition; `y` is its right link, checked not
        // NIL; `yl` and `xp` are links, dereferenced only when not NIL.
        unsafe {
            let y = expect_node(self.right(x));
            let yl = self.left(y);
            let xp = self.parent(x);
            let xmax = self.at(x).max_last;
            self.at_mut(x).right = yl;
            if yl != NIL {
                self.at_mut(yl).parent = x;
            }
            self.replace_child(xp, x, y);
            let yn = self.at_mut(y);
            yn.parent = xp;
            yn.left = x;
            yn.max_last = xmax;
            self.at_mut(x).parent = y;
            self.at_mut(x).max_last = self.computed_max(x);
        }
    }

    /// Mirror of [`IntervalTree::rotate_left`].
    ///
    /// # Safety
    /// `x` as for [`IntervalTree::at`] (a NIL left link panics).
    unsafe fn rotate_right(&mut self, x: u32) {
        // SAFETY: as in `rotate_left`, mirrored.
        unsafe {
            let y = expect_node(self.left(x));
            let yr = self.right(y);
            let xp = self.parent(x);
            let xmax = self.at(x).max_last;
            self.at_mut(x).left = yr;
            if yr != NIL {
                self.at_mut(yr).parent = x;
            }
            self.replace_child(xp, x, y);
            let yn = self.at_mut(y);
            yn.parent = xp;
            yn.right = x;
            yn.max_last = xmax;
            self.at_mut(x).parent = y;
            self.at_mut(x).max_last = self.computed_max(x);
        }
    }

    // ----- insertion -----------------------------------------------------

    /// Links allocated slot `z` into the tree by key order `K` (equal keys to
    /// the right).
    #[inline]
    pub(crate) fn link(&mut self, z: u32) {
        let (kf, kl) = {
            let n = &self.nodes[z as usize];
            debug_assert!(
                n.meta & (LIVE | IN_TREE) == LIVE,
                "link: slot not live or linked"
            );
            (n.first, n.last)
        };
        // SAFETY: `z` was bounds-checked above; `(kf, kl)` are its keys.
        unsafe { self.link_ref(Self::ref_of(z), kf, kl) }
    }

    /// Allocates a slot for `(iv, payload)` and links it (`alloc_gen` then
    /// `link`, without reading back and bounds-checking the new slot).
    ///
    /// The descent runs first; the new slot is then written once, already
    /// hanging under its parent (red, linked), and only the parent's child
    /// link, the augmented values above it and the rebalancing remain.
    #[inline(always)]
    pub(crate) fn insert_gen(&mut self, iv: Interval, payload: P) -> (u32, u32) {
        let (parent, as_left) = self.descend(iv.first, iv.last);
        let (i, gen) = self.alloc_with(iv, payload, parent, RED | IN_TREE);
        let z = Self::ref_of(i);
        // SAFETY: `z` is the ref of the slot `alloc_with` just wrote (an
        // arena index); `parent` is NIL or a non-NIL link; the slot already
        // holds NIL children, `parent`, `max_last == last`, red and linked.
        unsafe {
            self.link_and_augment(z, parent, as_left, iv.last);
            // A red node under a black parent breaks nothing.
            if self.red(parent) || parent == NIL {
                self.insert_fixup(z);
            }
        }
        (i, gen)
    }

    /// Where a node with keys `(kf, kl)` goes: its parent (`NIL` for an
    /// empty tree) and whether it is the parent's left child.
    #[inline(always)]
    fn descend(&self, kf: u64, kl: u64) -> (u32, bool) {
        let mut cur = self.root;
        if cur == NIL {
            return (NIL, false);
        }
        // Each step is one key compare and one link load (the kernel's
        // descent compares the start only, and so does `ByStart`). Unrolled
        // by two so that the parent and the child alternate between two
        // variables instead of being copied.
        loop {
            // SAFETY: `cur` is a non-NIL link (root or a child link).
            let n = unsafe { self.at(cur) };
            let next = if K::before(kf, kl, n) {
                if n.left == NIL {
                    return (cur, true);
                }
                n.left
            } else {
                if n.right == NIL {
                    return (cur, false);
                }
                n.right
            };
            // SAFETY: `next` is a non-NIL child link.
            let n = unsafe { self.at(next) };
            cur = if K::before(kf, kl, n) {
                if n.left == NIL {
                    return (next, true);
                }
                n.left
            } else {
                if n.right == NIL {
                    return (next, false);
                }
                n.right
            };
        }
    }

    /// [`IntervalTree::link`] of the slot whose ref is `z`.
    ///
    /// # Safety
    /// `z` is the ref of a slot `< nodes.len()` that is live and not linked,
    /// with keys `(kf, kl)`.
    #[inline(always)]
    unsafe fn link_ref(&mut self, z: u32, kf: u64, kl: u64) {
        let (parent, go_left) = self.descend(kf, kl);
        // SAFETY: `z` is a slot's ref by the precondition; `parent` is NIL
        // or a non-NIL link.
        unsafe { self.attach(z, parent, go_left) };
    }

    /// Links `z` immediately after `parent_node` in key order (fork's
    /// `insert_after`). The caller guarantees `z`'s key equals `parent_node`'s.
    pub(crate) fn link_after(&mut self, parent_node: u32, z: u32) {
        let p = &self.nodes[parent_node as usize];
        debug_assert!(p.in_tree(), "link_after: parent slot not linked");
        let r = p.right;
        let zn = &self.nodes[z as usize];
        debug_assert!(
            zn.meta & (LIVE | IN_TREE) == LIVE,
            "link_after: slot not live or linked"
        );
        let (parent_node, z) = (Self::ref_of(parent_node), Self::ref_of(z));
        // SAFETY: `parent_node` and `z` are refs of indices bounds-checked
        // above; `r` and the left links followed from it are non-NIL links.
        unsafe {
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
    }

    /// Hangs `z` (allocated, not in the tree) under `parent` (in the tree, or
    /// NIL for an empty tree), raises `max_last` above it and rebalances.
    ///
    /// # Safety
    /// `z` as for [`IntervalTree::at`]; `parent` NIL or as for it.
    unsafe fn attach(&mut self, z: u32, parent: u32, as_left: bool) {
        // SAFETY: `z` and `parent` by the precondition; `p` walks parent
        // links, dereferenced only when not NIL.
        unsafe {
            let n = self.at_mut(z);
            n.left = NIL;
            n.right = NIL;
            n.parent = parent;
            n.max_last = n.last;
            n.meta |= RED | IN_TREE;
            let last = n.last;
            self.link_and_augment(z, parent, as_left, last);
            self.insert_fixup(z);
        }
    }

    /// Makes `z` the root (`parent == NIL`) or `parent`'s left or right
    /// child, then raises `max_last` along the path above it until it covers
    /// `last` (z's own `last`). Leaves colours to the caller.
    ///
    /// # Safety
    /// `z` as for [`IntervalTree::at`]; `parent` NIL or as for it.
    #[inline(always)]
    unsafe fn link_and_augment(&mut self, z: u32, parent: u32, as_left: bool, last: u64) {
        // SAFETY: `parent` by the precondition; `p` walks parent links,
        // dereferenced only when not NIL.
        unsafe {
            if parent == NIL {
                self.root = z;
                return;
            }
            let pn = self.at_mut(parent);
            if as_left {
                pn.left = z;
            } else {
                pn.right = z;
            }
            let mut p = parent;
            while p != NIL {
                let pn = self.at_mut(p);
                if pn.max_last >= last {
                    break;
                }
                pn.max_last = last;
                p = pn.parent;
            }
        }
    }

    /// Restores the red-black properties after `z` was attached red.
    ///
    /// # Safety
    /// `z` as for [`IntervalTree::at`].
    unsafe fn insert_fixup(&mut self, mut z: u32) {
        // SAFETY: `z` by the precondition; every other index is a link read
        // on the way and dereferenced only when not NIL: `p` is red (`red`
        // is false for NIL), `g` is checked (a red node is never the root,
        // so a valid tree never trips it), `u` is red where dereferenced,
        // and the rotations check the child they lift.
        unsafe {
            loop {
                let p = self.parent(z);
                if !self.red(p) {
                    break;
                }
                let g = expect_node(self.parent(p));
                let gn = self.at(g);
                if p == gn.left {
                    let u = gn.right;
                    if self.red(u) {
                        self.set_red(p, false);
                        self.set_red(u, false);
                        self.set_red(g, true);
                        z = g;
                    } else {
                        let mut p = p;
                        if z == self.right(p) {
                            self.rotate_left(p);
                            p = z;
                        }
                        self.set_red(p, false);
                        self.set_red(g, true);
                        self.rotate_right(g);
                        break;
                    }
                } else {
                    let u = gn.left;
                    if self.red(u) {
                        self.set_red(p, false);
                        self.set_red(u, false);
                        self.set_red(g, true);
                        z = g;
                    } else {
                        let mut p = p;
                        if z == self.left(p) {
                            self.rotate_right(p);
                            p = z;
                        }
                        self.set_red(p, false);
                        self.set_red(g, true);
                        self.rotate_left(g);
                        break;
                    }
                }
            }
            let root = self.root;
            self.set_black_or_nil(root);
        }
    }

    // ----- removal -------------------------------------------------------

    /// Puts `new` (a live slot outside the tree) in linked node `old`'s place.
    /// Both must have the same key. O(1). `old` leaves the tree (still live).
    pub(crate) fn replace(&mut self, old: u32, new: u32) {
        let o = self.nodes[old as usize];
        debug_assert!(o.in_tree(), "replace: slot not linked");
        {
            let n = &mut self.nodes[new as usize];
            debug_assert!(
                n.meta & (LIVE | IN_TREE) == LIVE,
                "replace: slot not live or linked"
            );
            debug_assert_eq!((n.first, n.last), (o.first, o.last));
            n.left = o.left;
            n.right = o.right;
            n.parent = o.parent;
            n.max_last = o.max_last;
            n.meta = (n.meta & !RED) | (o.meta & RED) | IN_TREE;
        }
        let (old_ref, new_ref) = (Self::ref_of(old), Self::ref_of(new));
        // SAFETY: `o`'s links are links, dereferenced only when not NIL.
        unsafe {
            self.replace_child(o.parent, old_ref, new_ref);
            if o.left != NIL {
                self.at_mut(o.left).parent = new_ref;
            }
            if o.right != NIL {
                self.at_mut(o.right).parent = new_ref;
            }
        }
        let on = &mut self.nodes[old as usize];
        on.meta &= !(IN_TREE | RED);
        on.left = NIL;
        on.right = NIL;
        on.parent = NIL;
    }

    /// Recomputes `max_last` from `i` upward, stopping before `stop` or at
    /// the first node whose value did not change. Every node below the
    /// changed path must already hold its exact value.
    ///
    /// # Safety
    /// `i` NIL or as for [`IntervalTree::at`].
    #[inline(always)]
    unsafe fn propagate(&mut self, mut i: u32, stop: u32) {
        while i != stop && i != NIL {
            // SAFETY: `i` is not NIL: the caller's index or a parent link.
            unsafe {
                let m = self.computed_max(i);
                let n = self.at_mut(i);
                if n.max_last == m {
                    return;
                }
                n.max_last = m;
                i = n.parent;
            }
        }
    }

    /// Takes linked node `z` out of the tree (the slot stays live).
    pub(crate) fn unlink(&mut self, z: u32) {
        assert!((z as usize) < self.nodes.len(), "unlink: slot out of range");
        // SAFETY: `z` was bounds-checked just above.
        unsafe { self.unlink_at(z) }
    }

    /// Unlinks and frees (or retires, see [`IntervalTree::release`]) the
    /// live, linked slot `i` of generation `gen`, with one bounds check;
    /// `false` (and nothing changed) when `(i, gen)` names no such slot.
    /// `gen` is a generation this tree handed out (at most `GEN_MASK`).
    #[inline(always)]
    pub(crate) fn remove_linked(&mut self, i: u32, gen: u32) -> bool {
        debug_assert!(gen <= GEN_MASK);
        match self.nodes.get(i as usize) {
            // Every bit but the colour: live, linked, of generation `gen`.
            Some(n) if n.meta & !RED == LIVE | IN_TREE | gen => {}
            _ => return false,
        }
        let free = self.free;
        // SAFETY: `i < nodes.len()`, checked just above; the arena never
        // shrinks, so it still holds after the unlink.
        unsafe {
            self.unlink_core(i);
            // Unlinked and released in one write of the slot (what
            // `unlink_at`'s tail and `release_at` do, knowing the slot's
            // generation is `gen`): no links, not red, not linked, and
            // either retired at the last generation or freed with the next.
            let n = self.nodes.get_unchecked_mut(i as usize);
            n.left = NIL;
            n.right = NIL;
            n.parent = NIL;
            if gen == GEN_MASK {
                n.meta = GEN_MASK;
            } else {
                n.meta = gen + 1;
                n.max_last = u64::from(free);
                self.free = i;
            }
        }
        self.live -= 1;
        true
    }

    /// [`IntervalTree::unlink`] without the bounds check.
    ///
    /// # Safety
    /// `zi < nodes.len()`.
    #[inline(always)]
    unsafe fn unlink_at(&mut self, zi: u32) {
        // SAFETY: forwarded precondition.
        unsafe { self.unlink_core(zi) };
        // SAFETY: `zi < nodes.len()` by the precondition.
        let zn = unsafe { self.nodes.get_unchecked_mut(zi as usize) };
        zn.meta &= !(IN_TREE | RED);
        zn.left = NIL;
        zn.right = NIL;
        zn.parent = NIL;
    }

    /// [`IntervalTree::unlink_at`] but for the slot's own fields: the tree
    /// no longer reaches `zi`, whose links, colour and `IN_TREE` bit are
    /// stale until the caller rewrites them.
    ///
    /// # Safety
    /// `zi < nodes.len()`.
    #[inline(always)]
    unsafe fn unlink_core(&mut self, zi: u32) {
        let (zl, zr, zp, zmax, zred) = {
            // SAFETY: `zi < nodes.len()` by the precondition.
            let n = unsafe { self.nodes.get_unchecked(zi as usize) };
            debug_assert!(n.in_tree(), "unlink: slot not linked");
            (n.left, n.right, n.parent, n.max_last, n.is_red())
        };
        let z = Self::ref_of(zi);
        let removed_red;
        let x;
        let xp;
        // SAFETY: every ref dereferenced below is `z` (of an index
        // bounds-checked above) or a non-NIL value read from a link: `zl`,
        // `zr` (both non-NIL in the second branch), `y` (found from `zr`
        // along left links), `xp` (`y`, or `y`'s parent, checked), `x` only
        // when not NIL; `zp` goes to `replace_child`/`propagate`, which
        // accept NIL.
        unsafe {
            if zl == NIL || zr == NIL {
                x = if zl == NIL { zr } else { zl };
                xp = zp;
                removed_red = zred;
                self.replace_child(xp, z, x);
                if x != NIL {
                    self.at_mut(x).parent = xp;
                }
                // xp's subtree lost z; everything below xp is unchanged.
                self.propagate(xp, NIL);
            } else {
                // y: z's in-order successor, which has no left child.
                let mut y = zr;
                loop {
                    let l = self.left(y);
                    if l == NIL {
                        break;
                    }
                    y = l;
                }
                let yn = self.at(y);
                removed_red = yn.is_red();
                x = yn.right;
                if y == zr {
                    xp = y;
                } else {
                    // y is below zr, so it has a parent (checked all the same).
                    xp = expect_node(yn.parent);
                    // y is the leftmost node under zr and not zr: a left child.
                    self.at_mut(xp).left = x;
                    if x != NIL {
                        self.at_mut(x).parent = xp;
                    }
                    self.at_mut(y).right = zr;
                    self.at_mut(zr).parent = y;
                }
                self.replace_child(zp, z, y);
                let yn = self.at_mut(y);
                yn.parent = zp;
                yn.left = zl;
                yn.meta = (yn.meta & !RED) | if zred { RED } else { 0 };
                // y stands where z stood: it takes the value z's parent saw.
                yn.max_last = zmax;
                self.at_mut(zl).parent = y;
                if y != zr {
                    // The path from y's old parent up to (not including) y
                    // lost y.
                    self.propagate(xp, y);
                }
                // y's subtree lost z: from y up.
                self.propagate(y, NIL);
            }
            if !removed_red {
                self.delete_fixup(x, xp);
            }
        }
    }

    /// Restores the red-black properties after a black node left `x`'s
    /// place under `xp`.
    ///
    /// # Safety
    /// `x` and `xp` NIL or as for [`IntervalTree::at`].
    unsafe fn delete_fixup(&mut self, mut x: u32, mut xp: u32) {
        // SAFETY: every index is a parameter or a link read on the way, and
        // is dereferenced only when not NIL: `xp` and the sibling `w` are
        // checked (while x, doubly black, is not the root, a valid tree gives
        // it a parent, and a sibling whose side holds at least one black
        // node); `x` is read only through `red`, which accepts NIL, and
        // compared; `w`'s children only through `red` or `set_black_or_nil`,
        // which accept NIL; the rotations check the child they lift.
        unsafe {
            while x != self.root && !self.red(x) {
                xp = expect_node(xp);
                if x == self.left(xp) {
                    let mut w = expect_node(self.right(xp));
                    if self.red(w) {
                        self.set_red(w, false);
                        self.set_red(xp, true);
                        self.rotate_left(xp);
                        w = expect_node(self.right(xp));
                    }
                    if !self.red(self.left(w)) && !self.red(self.right(w)) {
                        self.set_red(w, true);
                        x = xp;
                        xp = self.parent(x);
                    } else {
                        if !self.red(self.right(w)) {
                            let wl = self.left(w);
                            self.set_black_or_nil(wl);
                            self.set_red(w, true);
                            self.rotate_right(w);
                            w = expect_node(self.right(xp));
                        }
                        let pred = self.red(xp);
                        self.set_red(w, pred);
                        self.set_red(xp, false);
                        let wr = self.right(w);
                        self.set_black_or_nil(wr);
                        self.rotate_left(xp);
                        x = self.root;
                        break;
                    }
                } else {
                    let mut w = expect_node(self.left(xp));
                    if self.red(w) {
                        self.set_red(w, false);
                        self.set_red(xp, true);
                        self.rotate_right(xp);
                        w = expect_node(self.left(xp));
                    }
                    if !self.red(self.left(w)) && !self.red(self.right(w)) {
                        self.set_red(w, true);
                        x = xp;
                        xp = self.parent(x);
                    } else {
                        if !self.red(self.left(w)) {
                            let wr = self.right(w);
                            self.set_black_or_nil(wr);
                            self.set_red(w, true);
                            self.rotate_left(w);
                            w = expect_node(self.left(xp));
                        }
                        let pred = self.red(xp);
                        self.set_red(w, pred);
                        self.set_red(xp, false);
                        let wl = self.left(w);
                        self.set_black_or_nil(wl);
                        self.rotate_right(xp);
                        x = self.root;
                        break;
                    }
                }
            }
            self.set_black_or_nil(x);
        }
    }

    // ----- walk ----------------------------------------------------------

    /// Calls `f(node_index)` for every linked node overlapping `[a, b]`, in
    /// key order. O(log n + k).
    #[inline]
    pub(crate) fn walk_nodes(&self, a: u64, b: u64, mut f: impl FnMut(u32, &Node<P>)) {
        // The stack holds the ancestors of `cur` whose left subtree is being
        // visited: at most the tree's height, which for a red-black tree is
        // at most 2*log2(n+1) <= 64 for n < 2^32. Indexing it modulo 64 needs
        // no bounds check and stays memory-safe even if that bound failed.
        const DEPTH: usize = 64;
        let mut stack = [NIL; DEPTH];
        let mut sp = 0usize;
        let mut cur = self.root;
        loop {
            while cur != NIL {
                // SAFETY: `cur` is `root` or a child link of a slot in the
                // tree, not NIL: in bounds by the arena invariant.
                let n = unsafe { self.at(cur) };
                if n.max_last < a {
                    break;
                }
                if n.left == NIL {
                    // Nothing before it in key order below it: visit it now
                    // rather than push and pop it (about half the nodes of a
                    // walk are leaves; this saves each of them the stack).
                    if n.first > b {
                        return;
                    }
                    if n.last >= a {
                        f(Self::slot_of(cur), n);
                    }
                    cur = n.right;
                    continue;
                }
                stack[sp % DEPTH] = cur;
                sp += 1;
                cur = n.left;
            }
            if sp == 0 {
                return;
            }
            sp -= 1;
            let i = stack[sp % DEPTH];
            // SAFETY: `i` was pushed above as a non-NIL `cur`: in bounds.
            let n = unsafe { self.at(i) };
            if n.first > b {
                // Every later node in key order starts after b too.
                return;
            }
            if n.last >= a {
                f(Self::slot_of(i), n);
            }
            cur = n.right;
        }
    }

    /// Checks the red-black, order, parent-link and augmentation invariants
    /// (tests only); returns the number of linked nodes.
    #[cfg(test)]
    pub(crate) fn check(&self) -> usize {
        /// Returns (black height, exact subtree maximum); appends in order.
        fn rec<P: Copy, K: KeyOrder>(
            t: &IntervalTree<P, K>,
            i: u32,
            parent: u32,
            order: &mut Vec<u32>,
        ) -> (u32, u64) {
            if i == NIL {
                return (1, 0);
            }
            let slot = IntervalTree::<P, K>::slot_of;
            let n = *t.node(slot(i));
            assert!(n.in_tree(), "linked node not marked in the tree");
            assert_eq!(n.parent, parent, "parent link");
            if n.is_red() {
                let red = |c: u32| c != NIL && t.node(slot(c)).is_red();
                assert!(!red(n.left) && !red(n.right), "red-red");
            }
            let (bl, ml) = rec(t, n.left, i, order);
            order.push(slot(i));
            let (br, mr) = rec(t, n.right, i, order);
            assert_eq!(bl, br, "black height");
            let m = n.last.max(ml).max(mr);
            assert_eq!(m, n.max_last, "augment: max_last of {i}");
            (bl + u32::from(!n.is_red()), m)
        }
        if self.root != NIL {
            assert!(!self.node(Self::slot_of(self.root)).is_red(), "red root");
        }
        let mut order = Vec::new();
        rec(self, self.root, NIL, &mut order);
        for w in order.windows(2) {
            let (a, b) = (self.node(w[0]), self.node(w[1]));
            assert!(!K::before(b.first, b.last, a), "key order");
        }
        order.len()
    }

    /// The linked nodes in key order (tests only).
    #[cfg(test)]
    pub(crate) fn in_order(&self) -> Vec<u32> {
        let mut out = Vec::new();
        self.walk_nodes(0, u64::MAX, |i, _| out.push(i));
        out
    }
}

impl<P: Copy> IntervalTree<P, ByInterval> {
    /// Finds a linked node whose interval is exactly `iv`. O(log n).
    pub(crate) fn find_exact(&self, iv: Interval) -> Option<u32> {
        let mut cur = self.root;
        while cur != NIL {
            // SAFETY: `cur` is a non-NIL link (root or a child link).
            let n = unsafe { self.at(cur) };
            if n.first == iv.first && n.last == iv.last {
                return Some(Self::slot_of(cur));
            }
            cur = if ByInterval::before(iv.first, iv.last, n) {
                n.left
            } else {
                n.right
            };
        }
        None
    }
}

/// The bare tree of the Linux-derived designs (one node per entry, kernel
/// order), without lock, handle or counters: what the instruction-count
/// harness (`examples/icount.rs`, `scripts/callgrind-rmap.sh`) compares with
/// the kernel's own `mm/interval_tree.c`. Not part of the crate's API.
#[doc(hidden)]
pub mod bare {
    use super::IntervalTree;
    use crate::Interval;

    /// See the module docs. Not synchronised.
    #[derive(Debug, Default)]
    pub struct BareTree(IntervalTree<u64>);

    impl BareTree {
        /// An empty tree.
        pub fn new() -> Self {
            BareTree(IntervalTree::new())
        }

        /// Inserts `[first, last]` (`first <= last`, else nothing is
        /// inserted and `None` comes back); returns its slot.
        #[inline]
        pub fn insert(&mut self, first: u64, last: u64, payload: u64) -> Option<u32> {
            let iv = Interval::new(first, last).ok()?;
            Some(self.0.insert_gen(iv, payload).0)
        }

        /// Removes the entry in `slot`; false when it holds none.
        #[inline]
        pub fn remove(&mut self, slot: u32) -> bool {
            match self.0.nodes.get(slot as usize) {
                Some(n) if n.in_tree() => {
                    let gen = n.meta & super::GEN_MASK;
                    self.0.remove_linked(slot, gen)
                }
                _ => false,
            }
        }

        /// Calls `f(payload)` for every entry overlapping `[a, b]`, in order.
        #[inline]
        pub fn walk(&self, a: u64, b: u64, mut f: impl FnMut(u64)) {
            self.0.walk_nodes(a, b, |_, n| f(n.payload));
        }

        /// Entries held.
        pub fn len(&self) -> usize {
            self.0.live()
        }

        /// True when empty.
        pub fn is_empty(&self) -> bool {
            self.0.live() == 0
        }
    }
}

/// Methods added for the designs (generation retirement, the event
/// recorder); kept apart from the tree algorithm above.
impl<P: Copy, K: KeyOrder> IntervalTree<P, K> {
    /// Frees a live slot that is not in the tree (bumps its generation and
    /// puts it on the free list), except that a slot whose generation is the
    /// last one is *retired*
    /// instead: it is never reused, so no generation ever repeats and a
    /// removed handle can never name a live entry again. A retired slot
    /// costs its arena bytes for the tree's life: one slot per 2^29 frees of
    /// that slot.
    #[inline]
    pub(crate) fn release(&mut self, i: u32) {
        assert!(
            (i as usize) < self.nodes.len(),
            "release: slot out of range"
        );
        // SAFETY: `i` was bounds-checked just above.
        unsafe { self.release_at(i) }
    }

    /// [`IntervalTree::release`] without the bounds check.
    ///
    /// # Safety
    /// `i < nodes.len()`.
    #[inline(always)]
    pub(crate) unsafe fn release_at(&mut self, i: u32) {
        let free = self.free;
        // SAFETY: `i < nodes.len()` by the precondition.
        let n = unsafe { self.nodes.get_unchecked_mut(i as usize) };
        debug_assert!(n.meta & (LIVE | IN_TREE) == LIVE);
        if n.meta & GEN_MASK == GEN_MASK {
            // Not live, not on the free list: dead for good.
            n.meta = GEN_MASK;
        } else {
            // As `free`: bump the generation, push on the free list (a free
            // slot's `max_last` holds the next free index, not a link).
            n.meta = (n.meta.wrapping_add(1)) & GEN_MASK;
            n.max_last = u64::from(free);
            self.free = i;
        }
        self.live -= 1;
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

    /// The root's slot and the leftmost (first in order) node's slot, `NIL`
    /// when empty: what the kernel's `rb_root_cached` holds. O(log n).
    pub(crate) fn root_and_leftmost(&self) -> (u32, u32) {
        if self.root == NIL {
            return (NIL, NIL);
        }
        let mut i = Self::slot_of(self.root);
        while self.nodes[i as usize].left != NIL {
            i = Self::slot_of(self.nodes[i as usize].left);
        }
        (Self::slot_of(self.root), i)
    }

    /// For the event recorder: node `n`'s parent, left and right child as
    /// slots (`NIL` where it has none), or `None` when `n` is not linked.
    /// `n` may come from a copy of the arena: only its links are read.
    pub(crate) fn link_slots(n: &Node<P>) -> Option<[u32; 3]> {
        if !n.in_tree() {
            return None;
        }
        let slot = |r: u32| if r == NIL { NIL } else { Self::slot_of(r) };
        Some([slot(n.parent), slot(n.left), slot(n.right)])
    }

    /// For the event recorder: `a` and `b` (one slot before and after a
    /// change) differ in more than the parent link: a node whose children,
    /// colour, maximum or state the change rewrote, not one it only
    /// re-parented.
    pub(crate) fn differs_beyond_parent(a: &Node<P>, b: &Node<P>) -> bool
    where
        P: PartialEq,
    {
        Node {
            parent: b.parent,
            ..*a
        } != *b
    }

    /// The parent slot of linked node `i` (`NIL` at the root).
    #[inline]
    pub(crate) fn parent_of(&self, i: u32) -> u32 {
        let r = self.nodes[i as usize].parent;
        if r == NIL {
            NIL
        } else {
            Self::slot_of(r)
        }
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
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// The reference: the linked slots as a `Vec` in the order the tree must
    /// hold them (key order `K`, equal keys in insertion order, `link_after`
    /// right behind its parent entry).
    struct Model {
        order: Vec<(u32, u32, Interval)>,
    }

    impl Model {
        /// Where `link` must put `v`: after every entry it does not sort before.
        fn link_pos<K: KeyOrder>(&self, v: Interval) -> usize {
            let probe = |m: &(u32, u32, Interval)| Node {
                first: m.2.first,
                last: m.2.last,
                max_last: 0,
                left: NIL,
                right: NIL,
                parent: NIL,
                meta: 0,
                payload: (),
            };
            self.order
                .iter()
                .rposition(|m| !K::before(v.first, v.last, &probe(m)))
                .map_or(0, |p| p + 1)
        }
    }

    /// Random link / link_after / unlink / replace against the model; the
    /// walks are compared in order (no sorting), and every invariant,
    /// `max_last` above all, is checked after every step.
    fn random_against_model<K: KeyOrder>(seed: u64, steps: u32, key_space: u64, max_len: u64) {
        let mut t: IntervalTree<u64, K> = IntervalTree::new();
        let mut model = Model { order: Vec::new() };
        let mut rng = Rng(seed);
        for step in 0..steps {
            let r = rng.below(16);
            if model.order.is_empty() || r < 7 {
                let a = rng.below(key_space);
                let v = iv(a, a + rng.below(max_len));
                let p = model.link_pos::<K>(v);
                let i = if r < 3 {
                    // The fused path the designs take.
                    let (i, g) = t.insert_gen(v, u64::from(step));
                    assert_eq!(g, t.gen(i));
                    i
                } else {
                    let i = t.alloc(v, u64::from(step));
                    t.link(i);
                    i
                };
                model.order.insert(p, (i, t.gen(i), v));
            } else if r < 10 {
                // link_after an existing entry with the same interval.
                let k = rng.below(model.order.len() as u64) as usize;
                let (parent, _, v) = model.order[k];
                let i = t.alloc(v, u64::from(step));
                t.link_after(parent, i);
                model.order.insert(k + 1, (i, t.gen(i), v));
            } else if r < 11 {
                // replace a linked node by a fresh slot with the same key.
                let k = rng.below(model.order.len() as u64) as usize;
                let (old, g, v) = model.order[k];
                assert!(t.is_live(old, g));
                let new = t.alloc(v, u64::from(step));
                t.replace(old, new);
                t.free(old);
                assert!(!t.is_live(old, g));
                model.order[k] = (new, t.gen(new), v);
            } else {
                let k = rng.below(model.order.len() as u64) as usize;
                let (i, g, _) = model.order.remove(k);
                assert!(t.is_live(i, g));
                if r < 13 {
                    // The fused path the designs take; a stale or wrong
                    // generation changes nothing.
                    assert!(!t.remove_linked(i, g.wrapping_sub(1) & GEN_MASK));
                    assert!(t.remove_linked(i, g));
                    assert!(!t.remove_linked(i, g));
                } else {
                    t.unlink(i);
                    t.free(i);
                }
                assert!(!t.is_live(i, g));
            }
            assert_eq!(t.check(), model.order.len(), "step {step}");
            assert_eq!(t.live(), model.order.len());
            let all: Vec<u32> = model.order.iter().map(|m| m.0).collect();
            assert_eq!(t.in_order(), all, "order after step {step}");
            if step % 8 == 0 {
                let a = rng.below(key_space + max_len);
                let b = a + rng.below(max_len);
                let mut got: Vec<u32> = Vec::new();
                t.walk_nodes(a, b, |i, n| {
                    assert_eq!(t.node(i).interval(), n.interval());
                    got.push(i);
                });
                let want: Vec<u32> = model
                    .order
                    .iter()
                    .filter(|(_, _, v)| v.first <= b && v.last >= a)
                    .map(|m| m.0)
                    .collect();
                assert_eq!(got, want, "walk [{a}, {b}] after step {step}");
            }
        }
        // Drain: every removal keeps the invariants down to the empty tree.
        while !model.order.is_empty() {
            let k = rng.below(model.order.len() as u64) as usize;
            let (i, _, _) = model.order.remove(k);
            t.unlink(i);
            t.free(i);
            assert_eq!(t.check(), model.order.len());
        }
        assert_eq!(t.live(), 0);
    }

    /// Model steps per run: fewer under Miri, which checks every unchecked
    /// access of the tree.
    const STEPS: u32 = if cfg!(miri) { 120 } else { 4000 };

    #[test]
    fn by_start_against_model() {
        // Dense keys, varied lengths: many equal starts with different
        // lasts, so a removed node is often its subtree's strict maximum.
        random_against_model::<ByStart>(0x9e37_79b9_7f4a_7c15, STEPS, 40, 60);
        random_against_model::<ByStart>(0x2545_f491_4f6c_dd1d, STEPS, 400, 8);
    }

    #[test]
    fn by_interval_against_model() {
        random_against_model::<ByInterval>(0x9e37_79b9_7f4a_7c15, STEPS, 40, 60);
        random_against_model::<ByInterval>(0x2545_f491_4f6c_dd1d, STEPS, 400, 8);
    }

    #[test]
    fn identical_intervals_churn() {
        // The rmap workload: thousands of identical intervals per segment,
        // churned at the end of each run (where early-stop propagation and
        // the successor's inherited maximum matter).
        let segs = [
            iv(0, 0x25),
            iv(0x26, 0x17b),
            iv(0x17c, 0x1ce),
            iv(0x1cf, 0x1d2),
        ];
        let procs: u64 = if cfg!(miri) { 20 } else { 300 };
        let mut t: IntervalTree<u64> = IntervalTree::new();
        let mut resident = Vec::new();
        for p in 0..procs {
            for &s in &segs {
                let i = t.alloc(s, p);
                t.link(i);
                resident.push(i);
            }
        }
        let mut rng = Rng(7);
        for round in 0..procs {
            let mut mine = Vec::new();
            for &s in &segs {
                let i = t.alloc(s, 1000 + round);
                t.link(i);
                mine.push(i);
            }
            // Remove one resident entry too, from anywhere, and put it back.
            let k = rng.below(resident.len() as u64) as usize;
            let r = resident[k];
            let v = t.node(r).interval();
            t.unlink(r);
            t.free(r);
            let i = t.alloc(v, 5000 + round);
            t.link(i);
            resident[k] = i;
            for i in mine {
                t.unlink(i);
                t.free(i);
            }
            assert_eq!(t.check(), resident.len());
        }
        let mut hits = 0;
        t.walk_nodes(0x10, 0x10, |_, n| {
            assert_eq!(n.interval(), segs[0]);
            hits += 1;
        });
        assert_eq!(hits, procs);
    }

    #[test]
    fn removing_the_strict_maximum_with_a_deep_successor() {
        // z holds its subtree's strict maximum and has two children, and its
        // successor lies deeper than its right child. After unlink, the path
        // from the successor's old parent keeps its value (early stop), yet
        // the successor, which inherited z's maximum, must drop it.
        let mut exercised = 0;
        for big in 0..64u64 {
            let mut t: IntervalTree<u64> = IntervalTree::new();
            let mut slots = Vec::new();
            for k in 0..64u64 {
                let last = if k == big { 1000 } else { k * 5 + 2 };
                let i = t.alloc(iv(k * 5, last), k);
                t.link(i);
                slots.push(i);
            }
            let z = slots[big as usize];
            let n = *t.node(z);
            if n.left == NIL
                || n.right == NIL
                || t.node(IntervalTree::<u64>::slot_of(n.right)).left == NIL
            {
                continue;
            }
            exercised += 1;
            t.unlink(z);
            t.free(z);
            assert_eq!(t.check(), 63);
            let mut got = 0;
            t.walk_nodes(500, 600, |_, _| got += 1);
            assert_eq!(got, 0, "a walk past every remaining interval");
        }
        assert!(exercised > 0, "no node had the shape under test");
    }

    fn refs_round_trip<P: Copy>() {
        type T<P> = IntervalTree<P>;
        let words = T::<P>::WORDS;
        assert_eq!(words as usize * 8, std::mem::size_of::<Node<P>>());
        let max = T::<P>::MAX_SLOTS;
        assert!(u64::from(max) * u64::from(words) < u64::from(NIL));
        for i in (0..5000).chain(max - 5000..=max) {
            assert_eq!(
                T::<P>::slot_of(T::<P>::ref_of(i)),
                i,
                "slot {i}, {words} words"
            );
        }
    }

    #[test]
    fn refs_round_trip_for_every_node_size() {
        refs_round_trip::<()>(); // 5 words
        refs_round_trip::<u64>(); // 6
        refs_round_trip::<[u32; 4]>(); // 7
        refs_round_trip::<[u64; 2]>(); // 8
        refs_round_trip::<[u64; 6]>(); // 12
    }

    #[test]
    fn find_exact_by_interval() {
        let mut t: IntervalTree<u64, ByInterval> = IntervalTree::new();
        let mut slots = Vec::new();
        for k in 0..200u64 {
            let i = t.alloc(iv(k % 10, k % 10 + k % 7), k);
            t.link(i);
            slots.push(i);
        }
        t.check();
        for a in 0..10 {
            for len in 0..8 {
                let found = t.find_exact(iv(a, a + len));
                let exists = (0..200u64).any(|k| k % 10 == a && k % 7 == len);
                assert_eq!(found.is_some(), exists, "[{a}, {}]", a + len);
                if let Some(i) = found {
                    assert_eq!(t.node(i).interval(), iv(a, a + len));
                }
            }
        }
    }
}
