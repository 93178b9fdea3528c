//! The public tree type and its read views.
//!
//! The safe skin over the raw core (`crate::raw`): every method here
//! reaches nodes and values only through the core's operations, which take
//! the guard or the writer access that keeps what they touch alive; the
//! unchecked code is all in the core.

use std::fmt;
use std::marker::PhantomData;
use std::ops::RangeInclusive;

use crate::cursor::Cursor;
use crate::error::{check_range, MapleError, WriteError};
use crate::node::{NodePtr, NODE_BYTES};
use crate::raw::{Core, EntryPin, Pinned};
use crate::value::{clone_slot, Boxed, Cloner, Owned, Repr, Slot, SplitValue};
use crate::write::{Txn, WriterState};

pub use crate::raw::{Entry, Item, Iter, Ref, Removed};

/// A maple tree: a B-tree mapping non-overlapping ranges `[first, last]` of
/// `u64` indices to values of type `T`, with gap search, built for many
/// readers beside one writer.
///
/// # Concurrency contract
///
/// - **Readers** ([`load`](Self::load), [`find`](Self::find),
///   [`prev`](Self::prev), everything on a [`Reader`], the gap searches)
///   are lock-free and never block: they pin an epoch (a plain store to
///   the thread's own line where `membarrier(2)` is available) and walk the tree without locks, as RCU readers do. A lookup is
///   linearizable: it returns the value from before or after any concurrent
///   write covering that index, never a mix, and never a torn node.
///   An iteration runs on a [`Reader`] and starts from the root that the
///   `Reader` loaded when it was created. It yields entries from the front
///   in increasing order and from the back in decreasing order, and no two
///   entries it yields overlap, however `next` and `next_back` are mixed
///   and whatever writes run between them. It yields every entry that
///   existed unchanged from the `Reader`'s creation to the end of the
///   iteration, and each entry it yields existed at some moment between the
///   `Reader`'s creation and the step that yielded it: so an entry erased
///   after the `Reader` was created, even before the iteration began, may
///   still be yielded, and a write made during the iteration may or may not
///   be seen. A concurrent gap
///   search returns a range that was free at some moment during the call;
///   it is the lowest (highest) fit when no write runs meanwhile, and always
///   under the writer lock ([`alloc_range`](Self::alloc_range), a
///   [`Cursor`]).
/// - **Writers** (`store_range`, `insert_range`, `erase`, `remove_range`,
///   `alloc_range`, `clear`, and a [`Cursor`] from [`cursor`](Self::cursor))
///   serialise on an internal mutex, which they may block on. A store over
///   exactly one existing entry's bounds replaces that slot's value pointer
///   with one atomic store (no node copied, no gap touched). A write that changes one leaf
///   without moving its bounds (most writes) copies that leaf and swaps it
///   into its parent with one atomic store, then updates the gaps above it
///   in place; a write that splits, merges or moves a boundary copies every
///   node it changes from the root down and publishes the new root with one
///   atomic store. Either store is the write's linearization point. Replaced
///   nodes and values are freed once every reader that could see them has
///   unpinned.
/// - **`&mut` access** ([`cursor_mut`](Self::cursor_mut),
///   [`remove`](Self::remove)) takes no lock, copies nothing and frees at once.
///
/// # Memory
///
/// Nodes are 256 bytes: a leaf holds up to 16 slots, where a gap between
/// entries also takes a slot; each value is boxed (one allocation of
/// `size_of::<T>()`). Ascending inserts pack leaves to 15 of 16 slots, so
/// contiguous ranges cost about 18 bytes of nodes per entry
/// ([`memory_usage`](Self::memory_usage)). A reader that stays pinned (a
/// long-lived [`Entry`] or [`Reader`]) delays the reclamation of every
/// node replaced meanwhile.
///
/// Node memory is scoped to the tree: replaced nodes are recycled into this
/// tree's own pool after their grace period (no line is shared with other
/// trees), the pool keeps at most 64 free blocks (16 KiB) between writes,
/// and a cursor's preallocation beyond what its next write uses is given
/// back after that write or when the cursor is dropped. Reclamation costs a
/// write through `&self` one epoch pin, at most two deferred functions (one
/// for nodes, one for values) and, after the grace period, one CAS on the
/// tree's recycler; a write under `&mut` defers nothing. An exact overwrite
/// (same bounds) retires only the old value.
///
/// # Unwind safety
///
/// A panic in `T::clone` loses nothing and leaks nothing. In
/// [`store_range`](Self::store_range) (which clones when it cuts an entry in
/// two) the write is abandoned before it publishes, so the tree is as it was
/// before the call. In [`dup`](Self::dup) / `Clone`, every value cloned and
/// every node copied before the panic is dropped exactly once as the panic
/// unwinds, and the source tree is untouched. The writer lock does not
/// poison, so the tree stays usable after the panic is caught. Hence the tree
/// is [`UnwindSafe`](std::panic::UnwindSafe) and
/// [`RefUnwindSafe`](std::panic::RefUnwindSafe) when `T` is.
///
/// # Value requirements
///
/// Writes through `&self` need `T: Send + Sync + 'static`: readers on other
/// threads borrow values, and replaced values are dropped later, possibly
/// on another thread. [`store_range`](Self::store_range) and the other
/// writes that may cut an entry in two also need `T: Clone` (through
/// [`SplitValue`]): the right-hand part gets a clone. A
/// value that cannot be cloned goes in an `Arc`, or is written with
/// [`insert_range`](Self::insert_range) /
/// [`try_insert`](Self::try_insert), which never split.
///
/// # Representation
///
/// `S` says how a value sits in its slot: [`Boxed`] (the default: any `T`,
/// in a box of its own; readers get `&T`) or [`Inline`](crate::Inline)
/// (`T:` [`InlineValue`](crate::InlineValue), such as `Arc<U>`, in the slot
/// word itself; readers get [`InlineValue::Borrowed`](crate::InlineValue::Borrowed)).
/// See the crate documentation, "Values: boxed, or in the slot word".
pub struct MapleTree<T, S: Repr<T> = Boxed> {
    pub(crate) core: Core<Slot<T, S>>,
    /// The writer's deferred work, reachable without the writer lock.
    #[cfg(loom)]
    pub(crate) loom_deferred: crate::write::LoomDeferred,
    /// The tree owns its values: `Send` when `T` is, `Sync` when `T` is
    /// `Send + Sync` (the writer state, behind the mutex, adds `T: Send`):
    /// shared access hands out `&T` to many threads and lets any thread
    /// insert or drop values.
    _owns: PhantomData<Box<T>>,
    /// The representation is a marker only.
    _repr: PhantomData<fn() -> S>,
}

// Unwind safety: see "Unwind safety" on MapleTree: no operation leaves a
// broken invariant behind when `T::clone` panics, and the lock does not
// poison.
impl<T: std::panic::RefUnwindSafe, S: Repr<T>> std::panic::RefUnwindSafe for MapleTree<T, S> {}
impl<T: std::panic::UnwindSafe, S: Repr<T>> std::panic::UnwindSafe for MapleTree<T, S> {}

/// What the tree occupies, from its own accounting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryUsage {
    /// Nodes in the current version.
    pub nodes: usize,
    /// `nodes * 256`.
    pub node_bytes: usize,
    /// Entries stored.
    pub entries: usize,
    /// `entries * size_of::<T>()`: the boxed values (allocator overhead not
    /// included); 0 for an [`Inline`](crate::Inline) tree, whose values live
    /// in the slots (what an inline `Arc` or `Box` points to is not counted).
    pub value_bytes: usize,
}

impl MemoryUsage {
    /// Node bytes per entry: the structure's own overhead.
    pub fn node_bytes_per_entry(&self) -> f64 {
        if self.entries == 0 {
            0.0
        } else {
            self.node_bytes as f64 / self.entries as f64
        }
    }
}

impl<T> MapleTree<T> {
    /// An empty tree (values boxed: the default representation). Allocates
    /// nothing until the first store. For values stored in the slot word
    /// itself see [`new_inline`](MapleTree::new_inline); any
    /// representation also has [`Default`].
    pub fn new() -> Self {
        Self::empty()
    }
}

impl<T: crate::InlineValue + 'static> MapleTree<T, crate::Inline> {
    /// An empty tree whose values live in the slot words themselves (see
    /// [`Inline`](crate::Inline)): no allocation per value, and
    /// [`dup`](Self::dup) of `Arc` values costs a reference count each.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let tree = aspace_maple::MapleTree::new_inline();
    /// tree.insert(0x1000..0x2000, Arc::new("text")).unwrap();
    /// let child = tree.dup(); // clones the Arc: no allocation per entry
    /// let e = child.load(0x1234).unwrap();
    /// assert_eq!(**e, "text");
    /// assert_eq!(Arc::strong_count(&*e), 2); // one reference per tree
    /// ```
    pub fn new_inline() -> Self {
        Self::empty()
    }
}

impl<T, S: Repr<T>> MapleTree<T, S> {
    /// An empty tree of any representation. Allocates nothing.
    pub(crate) fn empty() -> Self {
        let state = WriterState::new();
        #[cfg(loom)]
        let loom_deferred = state.deferred.clone();
        MapleTree {
            core: Core::new(state),
            #[cfg(loom)]
            loom_deferred,
            _owns: PhantomData,
            _repr: PhantomData,
        }
    }

    /// Number of entries (exact when no write is in flight).
    pub fn len(&self) -> usize {
        self.core.len()
    }

    /// Whether the tree holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Nodes, bytes and entries of the current version.
    pub fn memory_usage(&self) -> MemoryUsage {
        let nodes = self.core.nodes();
        let entries = self.len();
        MemoryUsage {
            nodes,
            node_bytes: nodes * NODE_BYTES,
            entries,
            value_bytes: entries * S::OUT_OF_LINE_BYTES,
        }
    }

    /// The entry containing `index`. Lock-free.
    #[inline]
    pub fn load(&self, index: u64) -> Option<Entry<'_, T, S>> {
        self.core.load(index)
    }

    /// The first entry ending at or after `index`. Lock-free.
    pub fn find(&self, index: u64) -> Option<Entry<'_, T, S>> {
        self.core.find(index)
    }

    /// The last entry starting at or before `index`. Lock-free.
    pub fn prev(&self, index: u64) -> Option<Entry<'_, T, S>> {
        self.core.find_prev(index)
    }

    /// A read-side section for several reads or an iteration. Lock-free.
    pub fn reader(&self) -> Reader<'_, T, S> {
        Reader {
            pin: Pinned::new(&self.core),
            _tree: PhantomData,
        }
    }

    /// Lowest start `s` with `[s, s + size - 1]` free and inside `[min, max]`.
    /// O(log n), lock-free.
    pub fn empty_area(&self, min: u64, max: u64, size: u64) -> Result<u64, MapleError> {
        self.reader().empty_area(min, max, size)
    }

    /// Highest such start (top-down placement, as `mmap` does). O(log n).
    pub fn empty_area_rev(&self, min: u64, max: u64, size: u64) -> Result<u64, MapleError> {
        self.reader().empty_area_rev(min, max, size)
    }
}

impl<T: Send + Sync + 'static, S: Repr<T>> MapleTree<T, S> {
    /// Runs one write transaction under the writer lock and publishes it.
    pub(crate) fn write<R>(
        &self,
        cloner: Option<Cloner<Slot<T, S>>>,
        f: impl FnOnce(&mut Txn<'_, Slot<T, S>>) -> R,
    ) -> R {
        self.core.lock().write(cloner, f)
    }

    /// Inserts `value` at `[first, last]` if every index there is free.
    /// Fails with [`MapleError::Occupied`] (handing the value back) otherwise.
    pub fn insert_range(&self, first: u64, last: u64, value: T) -> Result<(), WriteError<T>> {
        let mut w = self.core.lock();
        if let Err(kind) = w.locked().root.check_insert(first, last) {
            return Err(WriteError { kind, value });
        }
        let v = Owned::from_value(value);
        w.write(None, |t| t.store(first, last, Some(v)));
        Ok(())
    }

    /// Removes the whole entry containing `index` and returns it. The value
    /// is dropped once the returned [`Entry`] and every reader that could
    /// see it are gone.
    pub fn erase(&self, index: u64) -> Option<Entry<'_, T, S>> {
        self.core.lock().erase(index)
    }

    /// Finds the lowest free `[s, s + size - 1]` in `[min, max]`, stores
    /// `value` there, and returns `s`.
    pub fn alloc_range(
        &self,
        min: u64,
        max: u64,
        size: u64,
        value: T,
    ) -> Result<u64, WriteError<T>> {
        self.alloc_impl(min, max, size, value, false)
    }

    /// As [`alloc_range`](Self::alloc_range), taking the highest fit.
    pub fn alloc_range_rev(
        &self,
        min: u64,
        max: u64,
        size: u64,
        value: T,
    ) -> Result<u64, WriteError<T>> {
        self.alloc_impl(min, max, size, value, true)
    }

    fn alloc_impl(
        &self,
        min: u64,
        max: u64,
        size: u64,
        value: T,
        rev: bool,
    ) -> Result<u64, WriteError<T>> {
        let mut w = self.core.lock();
        let s = match w.locked().root.gap(min, max, size, rev) {
            Ok(s) => s,
            Err(kind) => return Err(WriteError { kind, value }),
        };
        let v = Owned::from_value(value);
        w.write(None, |t| t.store(s, s + (size - 1), Some(v)));
        Ok(s)
    }

    /// Removes every entry. Readers still holding the old version keep it
    /// until they unpin; it is then freed in one deferred pass.
    pub fn clear(&self) {
        self.core.lock().clear();
    }

    /// A write cursor. Holds the writer lock until dropped (readers keep
    /// running; other writers wait).
    pub fn cursor(&self) -> Cursor<'_, T, S> {
        Cursor::shared(&self.core)
    }

    /// A write cursor over exclusive access: no lock, no copy-on-write.
    pub fn cursor_mut(&mut self) -> Cursor<'_, T, S> {
        Cursor::exclusive(&mut self.core)
    }

    /// Free node blocks the writer keeps for reuse (for tests and
    /// diagnostics; takes the writer lock).
    #[doc(hidden)]
    pub fn pooled_blocks(&self) -> usize {
        self.core.lock().pool().len()
    }

    /// Removes the entry containing `index` and returns its range and
    /// value, owned (exclusive access: no lock, freed at once). Through
    /// `&self`, [`remove`](Self::remove) returns the entry instead, whose
    /// value lives until no reader can see it.
    ///
    /// ```
    /// let mut tree = aspace_maple::MapleTree::new();
    /// tree.try_insert(0..=9, String::from("a")).unwrap();
    /// assert_eq!(tree.take(5), Some((0..=9, String::from("a"))));
    /// assert_eq!(tree.take(5), None);
    /// ```
    pub fn take(&mut self, index: u64) -> Option<(RangeInclusive<u64>, T)> {
        self.cursor_mut().remove_at(index)
    }
}

impl<T: SplitValue + Send + Sync + 'static, S: Repr<T>> MapleTree<T, S> {
    /// Makes every index in `[first, last]` map to `value`. Parts of older
    /// entries outside the range survive, trimmed; an entry spanning the
    /// whole range is split, and its right part gets a clone of its value.
    pub fn store_range(&self, first: u64, last: u64, value: T) -> Result<(), WriteError<T>> {
        if let Err(kind) = check_range(first, last) {
            return Err(WriteError { kind, value });
        }
        let v = Owned::from_value(value);
        self.write(Some(clone_slot::<T, S>), |t| t.store(first, last, Some(v)));
        Ok(())
    }

    /// [`store_range`](Self::store_range) of the single index `index`.
    pub fn store(&self, index: u64, value: T) -> Result<(), WriteError<T>> {
        self.store_range(index, index, value)
    }

    /// Makes every index in `[first, last]` free (the kernel's store of
    /// `NULL` over a range): entries inside the range are removed, an entry
    /// crossing one end is trimmed to the part outside, and an entry
    /// spanning the whole range is split in two (its right part gets a
    /// clone of the value, hence `T: Clone`). One write: concurrent readers
    /// see all of it or none of it.
    ///
    /// Returns what was removed: for each entry that intersected
    /// `[first, last]`, in increasing order, the part of its range that was
    /// freed (clipped to `[first, last]`) and its value. The values are
    /// borrowed: like an [`Entry`], the [`Removed`] holds an epoch guard, so
    /// removed values are dropped once it and every reader that could see
    /// them are gone (a trimmed entry's value stays in the tree). Fails only
    /// on an inverted range, changing nothing.
    pub fn remove_range(&self, first: u64, last: u64) -> Result<Removed<'_, T, S>, MapleError> {
        check_range(first, last)?;
        Ok(self
            .core
            .lock()
            .remove_range(first, last, clone_slot::<T, S>))
    }
}

impl<T: Clone + Send + Sync + 'static, S: Repr<T>> MapleTree<T, S> {
    /// Copies the tree (the fork path), cloning every value: whole nodes
    /// into one allocation, then child pointers, with values visited only
    /// where they must be cloned (none for inline integers, a reference
    /// count each for inline `Arc`s). Takes the writer lock for the copy;
    /// readers keep running. The copy keeps that allocation until it is
    /// dropped (see `BENCHMARKS.md`, "dup").
    pub fn dup(&self) -> Self {
        let mut tree = Self::empty();
        self.core
            .lock()
            .dup_into(clone_words::<T, S>(), &mut tree.core);
        tree
    }
}

impl<T, S: Repr<T>> Default for MapleTree<T, S> {
    fn default() -> Self {
        Self::empty()
    }
}

impl<T: Clone + Send + Sync + 'static, S: Repr<T>> Clone for MapleTree<T, S> {
    fn clone(&self) -> Self {
        self.dup()
    }
}

impl<T, S: Repr<T>> fmt::Debug for MapleTree<T, S>
where
    for<'x> S::Ref<'x>: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let snap = self.reader();
        f.debug_map().entries(snap.iter()).finish()
    }
}

impl<T, S: Repr<T>> Drop for MapleTree<T, S> {
    fn drop(&mut self) {
        self.core.free_all();
    }
}

/// A read-side section: lock-free reads sharing one pinned epoch guard.
///
/// Everything read through it stays valid while it lives. It loads the
/// tree's root once, when it is created, and every read through it starts
/// there. It is not an isolated snapshot: a write that swaps a leaf in place
/// (see [`MapleTree`]) is visible through the old root too, so writes that
/// complete while it is in use may be seen by later reads through it, each
/// leaf whole, old or new; a write that publishes a new root is not.
///
/// An iteration ([`iter`](Self::iter), [`range`](Self::range)) yields
/// entries from the front in increasing order and from the back in
/// decreasing order, and no two entries it yields overlap, however `next`
/// and `next_back` are mixed and whatever writes run between them. It
/// yields every entry that existed unchanged from the `Reader`'s creation
/// to the end of the iteration, and each entry it yields existed at some
/// moment between the `Reader`'s creation and the step that yielded it: so
/// an entry erased after the `Reader` was created, even before the
/// iteration began, may still be yielded, and a write made during the
/// iteration may or may not be seen. (The same words are in
/// [`MapleTree`]'s contract.)
///
/// Holding it keeps everything replaced meanwhile from being reclaimed, so
/// keep it short. Not `Send`.
///
/// ```
/// let tree = aspace_maple::MapleTree::new();
/// tree.insert(0..10, 'a').unwrap();
/// tree.insert(20..30, 'b').unwrap();
/// let r = tree.reader(); // one pin for several reads
/// assert_eq!(r.load(5).map(|(_, v)| *v), Some('a'));
/// assert_eq!(r.find(10).map(|(range, _)| range), Some(20..=29));
/// let back: Vec<char> = r.iter().rev().map(|(_, v)| *v).collect();
/// assert_eq!(back, ['b', 'a']);
/// ```
pub struct Reader<'a, T, S: Repr<T> = Boxed> {
    pin: Pinned<Slot<T, S>>,
    _tree: PhantomData<&'a MapleTree<T, S>>,
}

impl<'a, T, S: Repr<T>> Reader<'a, T, S> {
    pub(crate) fn root_ptr(&self) -> NodePtr {
        self.pin.root().ptr()
    }

    /// The entry containing `index`.
    #[inline]
    pub fn load(&self, index: u64) -> Option<Item<'_, T, S>> {
        let (s, e, w) = self.pin.root().lookup(index)?;
        Some(reader_item(s, e, w.ptr()))
    }

    /// The first entry ending at or after `index`.
    pub fn find(&self, index: u64) -> Option<Item<'_, T, S>> {
        let (s, e, w) = self.pin.root().find(index)?;
        Some(reader_item(s, e, w.ptr()))
    }

    /// The last entry starting at or before `index`.
    pub fn prev(&self, index: u64) -> Option<Item<'_, T, S>> {
        let (s, e, w) = self.pin.root().find_prev(index)?;
        Some(reader_item(s, e, w.ptr()))
    }

    /// All entries in increasing order (also from the back).
    pub fn iter(&self) -> Iter<'_, T, S> {
        self.range(0, u64::MAX)
    }

    /// Entries intersecting `[first, last]`, in increasing order. An empty
    /// iterator when `first > last`.
    pub fn range(&self, first: u64, last: u64) -> Iter<'_, T, S> {
        Iter::new(self.pin.root(), first, last)
    }

    /// Entries, counted by iterating: O(n).
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Whether the tree was empty when this section began.
    pub fn is_empty(&self) -> bool {
        self.pin.root().is_null()
    }

    /// See [`MapleTree::empty_area`].
    pub fn empty_area(&self, min: u64, max: u64, size: u64) -> Result<u64, MapleError> {
        self.pin.root().gap(min, max, size, false)
    }

    /// See [`MapleTree::empty_area_rev`].
    pub fn empty_area_rev(&self, min: u64, max: u64, size: u64) -> Result<u64, MapleError> {
        self.pin.root().gap(min, max, size, true)
    }
}

impl<'s, T, S: Repr<T>> IntoIterator for &'s Reader<'_, T, S> {
    type Item = Item<'s, T, S>;
    type IntoIter = Iter<'s, T, S>;
    fn into_iter(self) -> Iter<'s, T, S> {
        self.iter()
    }
}

/// What `dup` does with each value word: nothing where the word may simply
/// be copied ([`Repr::WORD_IS_COPY`]: inline integers and `&'static`
/// references), else replace it with a clone's (an inline `Arc`'s is the
/// same word, after one more reference is counted).
fn clone_words<T: Clone, S: Repr<T>>() -> Option<impl FnMut(*mut Slot<T, S>) -> *mut Slot<T, S>> {
    // SAFETY (the closure's): `dup_into` calls it with live words of the
    // source version, which the writer lock keeps alive.
    let clone = |w| unsafe { clone_slot::<T, S>(w) };
    (!S::WORD_IS_COPY).then_some(clone)
}

/// The item for a value word that a [`Reader`]'s lookup found: it borrows
/// the reader's pin.
#[inline(always)]
fn reader_item<'r, T, S: Repr<T>>(s: u64, e: u64, w: *mut Slot<T, S>) -> Item<'r, T, S> {
    // SAFETY: `w` is a live word of the version the Reader's pin keeps
    // alive, and the item borrows the Reader for 'r.
    unsafe { crate::raw::Ref::item(EntryPin::Borrowed, (s, e, w)) }
}
