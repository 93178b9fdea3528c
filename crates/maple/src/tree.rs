//! The public tree type and its read views.

use std::fmt;
use std::iter::FusedIterator;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ops::{Deref, RangeInclusive};
use std::ptr;

use crossbeam_epoch::{self as epoch, Guard};
use parking_lot::Mutex;

use crate::cursor::Cursor;
use crate::error::{check_range, check_window, MapleError, WriteError};
use crate::map::{EntryPin, SharedPinRef};
use crate::node::{dup_subtree, free_subtree, Leaf, NodePtr, NODE_BYTES};
use crate::read::{self, descend, path_entry, step_next, step_prev, Path, RawEntry};
use crate::sync::{AtomicPtr, AtomicUsize, Ordering};
use crate::value::{clone_slot, Boxed, Cloner, Repr, Slot};
use crate::write::{Committed, Txn, WriterState};

/// The published root, alone on its cache line: every read loads it, so a
/// line the writer also dirtied on every write (the counters, once beside
/// it) made each concurrent read miss.
#[repr(align(64))]
pub(crate) struct RootLine(pub(crate) AtomicPtr<crate::node::Header>);

/// Statistics the writer updates; readers of `len()` only.
#[repr(align(64))]
pub(crate) struct Counters {
    pub(crate) len: AtomicUsize,
    pub(crate) nodes: AtomicUsize,
}

/// The part of the tree readers touch: the published root, and the counters.
pub(crate) struct Core {
    pub(crate) root: RootLine,
    pub(crate) counters: Counters,
}

impl Core {
    /// The root for a reader. Acquire pairs with the writer's release store
    /// in [`Core::publish`], so every node reachable from it is fully
    /// initialised before the reader looks at it.
    #[inline]
    pub(crate) fn load_root(&self) -> NodePtr {
        self.root.0.load(Ordering::Acquire)
    }

    /// The root for the writer, who holds the writer lock or `&mut`: the lock
    /// acquisition (or exclusivity) already orders it after the last publish.
    #[inline]
    pub(crate) fn writer_root(&self) -> NodePtr {
        self.root.0.load(Ordering::Relaxed)
    }

    /// Publishes a new version with a single release store: the one point at
    /// which a write becomes visible.
    #[inline]
    pub(crate) fn publish(&self, root: NodePtr) {
        // A write that swapped a leaf in place keeps the root: storing it
        // again would only invalidate every reader's copy of the line.
        if self.root.0.load(Ordering::Relaxed) != root {
            self.root.0.store(root, Ordering::Release);
        }
    }

    pub(crate) fn apply(&self, c: &Committed) {
        // Relaxed: the counters are statistics, exact only when no write is
        // in flight; they are written by the single writer only.
        let c2 = &self.counters;
        if c.len_delta != 0 {
            let len = c2.len.load(Ordering::Relaxed) as isize + c.len_delta;
            c2.len.store(len.max(0) as usize, Ordering::Relaxed);
        }
        if c.nodes_delta != 0 {
            let nodes = c2.nodes.load(Ordering::Relaxed) as isize + c.nodes_delta;
            c2.nodes.store(nodes.max(0) as usize, Ordering::Relaxed);
        }
    }
}

/// A maple tree: a B-tree mapping non-overlapping ranges `[first, last]` of
/// `u64` indices to values of type `T`, with gap search, built for many
/// readers beside one writer.
///
/// # Concurrency contract
///
/// - **Readers** ([`load`](Self::load), [`find`](Self::find),
///   [`prev`](Self::prev), everything on a [`Reader`], the gap searches)
///   are lock-free and never block: they pin an epoch (`crossbeam-epoch`)
///   and walk the tree without locks, as RCU readers do. A lookup is
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
/// on another thread. [`store_range`](Self::store_range) also needs
/// `T: Clone`, because storing into the middle of an entry splits it in
/// two and the right-hand part gets a clone.
///
/// # Representation
///
/// `S` says how a value sits in its slot: [`Boxed`] (the default: any `T`,
/// in a box of its own; readers get `&T`) or [`Inline`](crate::Inline)
/// (`T:` [`InlineValue`](crate::InlineValue), such as `Arc<U>`, in the slot
/// word itself; readers get [`InlineValue::Borrowed`](crate::InlineValue::Borrowed)).
/// See the crate documentation, "Values: boxed, or in the slot word".
pub struct MapleTree<T, S: Repr<T> = Boxed> {
    pub(crate) core: Core,
    pub(crate) writer: Mutex<WriterState<Slot<T, S>>>,
    /// The writer's deferred work, reachable without the writer lock.
    #[cfg(loom)]
    loom_deferred: crate::write::LoomDeferred,
    _owns: PhantomData<(Box<T>, S)>,
}

// SAFETY: the tree owns its nodes and values (boxed or inline words);
// moving it moves T values.
unsafe impl<T: Send, S: Repr<T>> Send for MapleTree<T, S> {}
// SAFETY: shared access hands out &T to many threads (T: Sync) and lets any
// thread insert or drop values (T: Send); the node protocol is synchronised
// by the root's release/acquire and the writer mutex.
unsafe impl<T: Send + Sync, S: Repr<T>> Sync for MapleTree<T, S> {}

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
    /// let tree = maple::MapleTree::new_inline();
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
            core: Core {
                root: RootLine(AtomicPtr::new(ptr::null_mut())),
                counters: Counters {
                    len: AtomicUsize::new(0),
                    nodes: AtomicUsize::new(0),
                },
            },
            writer: Mutex::new(state),
            #[cfg(loom)]
            loom_deferred,
            _owns: PhantomData,
        }
    }

    /// Number of entries (exact when no write is in flight).
    pub fn len(&self) -> usize {
        // Relaxed: a statistic; see Core::apply.
        self.core.counters.len.load(Ordering::Relaxed)
    }

    /// Whether the tree holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Nodes, bytes and entries of the current version.
    pub fn memory_usage(&self) -> MemoryUsage {
        // Relaxed: statistics.
        let nodes = self.core.counters.nodes.load(Ordering::Relaxed);
        let entries = self.len();
        MemoryUsage {
            nodes,
            node_bytes: nodes * NODE_BYTES,
            entries,
            value_bytes: entries * S::OUT_OF_LINE_BYTES,
        }
    }

    /// The entry containing `index`. Lock-free.
    pub fn load(&self, index: u64) -> Option<Entry<'_, T, S>> {
        let guard = epoch::pin();
        let root = self.core.load_root();
        if root.is_null() {
            return None;
        }
        // SAFETY: the guard keeps this version alive.
        let (s, e, v) = unsafe { read::lookup::<Slot<T, S>>(root, index) };
        // SAFETY: the guard keeps the value alive for the Entry's life.
        unsafe { Entry::new(guard, (s, e, v)) }
    }

    /// The first entry ending at or after `index`. Lock-free.
    pub fn find(&self, index: u64) -> Option<Entry<'_, T, S>> {
        let guard = epoch::pin();
        // SAFETY: the guard keeps this version alive.
        let e = unsafe { read::find::<Slot<T, S>>(self.core.load_root(), index) }?;
        // SAFETY: the guard keeps the value alive for the Entry's life.
        unsafe { Entry::new(guard, e) }
    }

    /// The last entry starting at or before `index`. Lock-free.
    pub fn prev(&self, index: u64) -> Option<Entry<'_, T, S>> {
        let guard = epoch::pin();
        // SAFETY: the guard keeps this version alive.
        let e = unsafe { read::find_prev::<Slot<T, S>>(self.core.load_root(), index) }?;
        // SAFETY: the guard keeps the value alive for the Entry's life.
        unsafe { Entry::new(guard, e) }
    }

    /// A read-side section for several reads or an iteration. Lock-free.
    pub fn reader(&self) -> Reader<'_, T, S> {
        let guard = epoch::pin();
        let root = self.core.load_root();
        Reader {
            guard,
            root,
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
        let mut st = self.writer.lock();
        self.write_locked(&mut st, cloner, f)
    }

    pub(crate) fn write_locked<R>(
        &self,
        st: &mut WriterState<Slot<T, S>>,
        cloner: Option<Cloner<Slot<T, S>>>,
        f: impl FnOnce(&mut Txn<'_, Slot<T, S>>) -> R,
    ) -> R {
        let guard = epoch::pin();
        let mut txn = Txn::new(st, self.core.writer_root(), false, cloner);
        let r = f(&mut txn);
        let c = txn.commit(|root| self.core.publish(root), Some(&guard));
        self.core.apply(&c);
        r
    }

    /// Inserts `value` at `[first, last]` if every index there is free.
    /// Fails with [`MapleError::Occupied`] (handing the value back) otherwise.
    pub fn insert_range(&self, first: u64, last: u64, value: T) -> Result<(), WriteError<T>> {
        let mut st = self.writer.lock();
        if let Err(kind) = check_insert(self.core.writer_root(), first, last) {
            return Err(WriteError { kind, value });
        }
        let v = S::into_word(value).cast();
        self.write_locked(&mut st, None, |t| t.store(first, last, v));
        Ok(())
    }

    /// Removes the whole entry containing `index` and returns it. The value
    /// is dropped once the returned [`Entry`] and every reader that could
    /// see it are gone.
    pub fn erase(&self, index: u64) -> Option<Entry<'_, T, S>> {
        let guard = epoch::pin();
        let mut st = self.writer.lock();
        let root = self.core.writer_root();
        if root.is_null() {
            return None;
        }
        // SAFETY: the writer lock keeps the working version alive.
        let (s, e, v) = unsafe { read::lookup::<Slot<T, S>>(root, index) };
        if v.is_null() {
            return None;
        }
        self.write_locked(&mut st, None, |t| t.store(s, e, ptr::null_mut()));
        // SAFETY: the value's drop was deferred after this guard was
        // pinned, so it outlives the returned Entry.
        unsafe { Entry::new(guard, (s, e, v)) }
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
        let mut st = self.writer.lock();
        let s = match gap_search::<Slot<T, S>>(self.core.writer_root(), min, max, size, rev) {
            Ok(s) => s,
            Err(kind) => return Err(WriteError { kind, value }),
        };
        let v = S::into_word(value).cast();
        self.write_locked(&mut st, None, |t| t.store(s, s + (size - 1), v));
        Ok(s)
    }

    /// Removes every entry. Readers still holding the old version keep it
    /// until they unpin; it is then freed in one deferred pass.
    pub fn clear(&self) {
        let st = self.writer.lock();
        let guard = epoch::pin();
        let old = self.core.writer_root();
        self.core.publish(ptr::null_mut());
        // Relaxed: statistics, written by the writer only.
        self.core.counters.len.store(0, Ordering::Relaxed);
        self.core.counters.nodes.store(0, Ordering::Relaxed);
        drop(st);
        if !old.is_null() {
            let old = SendNode(old);
            // SAFETY: old is unlinked; the deferred pass runs after every
            // reader pinned before the publish has unpinned.
            unsafe {
                guard.defer_unchecked(move || {
                    let old = old;
                    free_subtree::<Slot<T, S>>(old.0);
                })
            };
        }
    }

    /// A write cursor. Holds the writer lock until dropped (readers keep
    /// running; other writers wait).
    pub fn cursor(&self) -> Cursor<'_, T, S> {
        Cursor::shared(self)
    }

    /// A write cursor over exclusive access: no lock, no copy-on-write.
    pub fn cursor_mut(&mut self) -> Cursor<'_, T, S> {
        Cursor::exclusive(self)
    }

    /// Loom only: runs the deferred work (recycling, value drops) of the
    /// writes completed so far, now, as the epoch collector would once no
    /// reader remains. Lets a model race the recycling against the writer.
    ///
    /// # Safety
    /// No reader may still hold anything a completed write replaced.
    #[cfg(loom)]
    #[doc(hidden)]
    pub unsafe fn loom_reclaim(&self) {
        let work = std::mem::take(&mut *self.loom_deferred.lock().unwrap());
        for f in work {
            f();
        }
    }

    /// Free node blocks the writer keeps for reuse (for tests and
    /// diagnostics; takes the writer lock).
    #[doc(hidden)]
    pub fn pooled_blocks(&self) -> usize {
        self.writer.lock().pool.len()
    }

    /// Removes the entry containing `index` and returns its range and value.
    pub fn remove(&mut self, index: u64) -> Option<(RangeInclusive<u64>, T)> {
        self.cursor_mut().remove_at(index)
    }
}

impl<T: Clone + Send + Sync + 'static, S: Repr<T>> MapleTree<T, S> {
    /// Makes every index in `[first, last]` map to `value`. Parts of older
    /// entries outside the range survive, trimmed; an entry spanning the
    /// whole range is split, and its right part gets a clone of its value.
    pub fn store_range(&self, first: u64, last: u64, value: T) -> Result<(), WriteError<T>> {
        if let Err(kind) = check_range(first, last) {
            return Err(WriteError { kind, value });
        }
        let v = S::into_word(value).cast();
        self.write(Some(clone_slot::<T, S>), |t| t.store(first, last, v));
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
        // Pinned before the write retires anything, so the removed values
        // outlive their deferred drop for as long as `Removed` lives.
        let guard = epoch::pin();
        let mut st = self.writer.lock();
        let root = self.core.writer_root();
        let mut parts = Vec::new();
        let mut it = Iter::<'_, T, S>::new(root, first, last);
        while let Some((s, e, v)) = it.next_raw() {
            let r = s..=e;
            parts.push((
                (*r.start()).max(first),
                (*r.end()).min(last),
                v.cast::<()>(),
            ));
        }
        if !parts.is_empty() {
            self.write_locked(&mut st, Some(clone_slot::<T, S>), |t| {
                t.store(first, last, ptr::null_mut())
            });
        }
        drop(st);
        Ok(Removed {
            _guard: guard,
            parts,
            _tree: PhantomData,
        })
    }

    /// Copies the tree node by node (the fork path), cloning every value.
    /// Takes the writer lock for the copy; readers keep running.
    pub fn dup(&self) -> Self {
        let st = self.writer.lock();
        let root = self.core.writer_root();
        // SAFETY: the writer lock keeps this version alive and unchanged.
        let (copy, nodes) = unsafe { dup_subtree::<Slot<T, S>>(root, clone_slot::<T, S>) };
        let len = self.len();
        drop(st);
        let tree = Self::empty();
        tree.core.publish(copy);
        // Relaxed: the new tree is not shared yet.
        tree.core.counters.len.store(len, Ordering::Relaxed);
        tree.core.counters.nodes.store(nodes, Ordering::Relaxed);
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
        // Relaxed: exclusive access.
        let root = self.core.root.0.load(Ordering::Relaxed);
        // SAFETY: &mut self: no reader or writer remains, and the tree owns
        // every node and value of its current version.
        unsafe { free_subtree::<Slot<T, S>>(root) };
    }
}

struct SendNode(NodePtr);
// SAFETY: carries an unlinked subtree (values T: Send) to the deferred free.
unsafe impl Send for SendNode {}

/// Checks that `[first, last]` is a valid, entirely free range.
pub(crate) fn check_insert(root: NodePtr, first: u64, last: u64) -> Result<(), MapleError> {
    check_range(first, last)?;
    // SAFETY: the caller holds the writer lock or &mut: root is live.
    if let Some((s, _, _)) = unsafe { read::find::<u8>(root, first) } {
        if s <= last {
            return Err(MapleError::Occupied { first, last });
        }
    }
    Ok(())
}

/// Validated gap search on a live version.
pub(crate) fn gap_search<T>(
    root: NodePtr,
    min: u64,
    max: u64,
    size: u64,
    rev: bool,
) -> Result<u64, MapleError> {
    check_window(min, max, size)?;
    // SAFETY: the caller keeps root alive (guard, lock or &mut).
    unsafe { read::empty_area::<T>(root, min, max, size, rev) }.ok_or(MapleError::NoSpace {
        min,
        max,
        size,
    })
}

/// An entry read from the tree: its range and a reference to its value.
///
/// It holds an epoch pin (its own, or, for the entries of
/// [`MapleTree::iter`], one shared with the iteration that yielded it), so
/// the value stays valid even if a writer removes or replaces the entry
/// meanwhile; while it lives, memory retired by writers is not reclaimed.
/// Not `Send`.
///
/// It dereferences to the value: `T` for a [`Boxed`] tree, the target of
/// [`InlineValue::Borrowed`](crate::InlineValue::Borrowed) for an
/// [`Inline`](crate::Inline) one (an inline `Arc<U>` entry dereferences to
/// the `Arc<U>`, through a never-dropped copy of it).
pub struct Entry<'a, T: 'a, S: Repr<T> = Boxed> {
    first: u64,
    last: u64,
    /// The borrowed value, valid while `_guard` pins, never handed out for
    /// longer than a borrow of the Entry. Always initialised; held in a
    /// `MaybeUninit` so that it is opaque to the aliasing model: a
    /// reference (`&T`, the `Boxed` view) kept in a plain field would be
    /// retagged and protected for the whole call whenever the Entry is
    /// passed by value (to `drop`, say), and the guard unpins inside that
    /// call, after which the value may be freed while still protected (the
    /// hazard `std::cell::Ref` avoids by holding a `NonNull`). Dropped in
    /// `Drop`, before the guard.
    value: MaybeUninit<S::Ref<'a>>,
    _pin: EntryPin,
}

impl<'a, T: 'a, S: Repr<T>> Drop for Entry<'a, T, S> {
    fn drop(&mut self) {
        // SAFETY: `value` is always initialised and dropped only here; the
        // guard (dropped after this, with the fields) still pins.
        unsafe { self.value.assume_init_drop() }
    }
}

impl<'a, T: 'a, S: Repr<T>> Entry<'a, T, S> {
    /// # Safety
    /// `v` is null or a value word that `guard` keeps alive (it was read
    /// from a version `guard` pins, or its drop was deferred after `guard`
    /// was pinned).
    pub(crate) unsafe fn new(guard: Guard, (first, last, v): RawEntry<Slot<T, S>>) -> Option<Self> {
        if v.is_null() {
            return None;
        }
        Some(Entry {
            first,
            last,
            // SAFETY: the guard, moved into the Entry, keeps the value alive
            // for as long as the borrow is reachable (caller).
            value: MaybeUninit::new(unsafe { S::borrow(v.cast()) }),
            _pin: EntryPin::Own(guard),
        })
    }

    /// An entry of an iteration, kept alive by the iteration's shared pin.
    ///
    /// # Safety
    /// `v` is a non-null value word that `pin` keeps alive.
    #[inline]
    pub(crate) unsafe fn shared(pin: SharedPinRef, (first, last, v): RawEntry<Slot<T, S>>) -> Self {
        Entry {
            first,
            last,
            // SAFETY: the pin, moved into the Entry, keeps the value alive
            // for as long as the borrow is reachable (caller).
            value: MaybeUninit::new(unsafe { S::borrow(v.cast()) }),
            _pin: EntryPin::Shared(pin),
        }
    }
    /// First index of the entry.
    pub fn first(&self) -> u64 {
        self.first
    }
    /// Last index of the entry (inclusive).
    pub fn last(&self) -> u64 {
        self.last
    }
    /// `first..=last`.
    pub fn range(&self) -> RangeInclusive<u64> {
        self.first..=self.last
    }
    /// The value (see the type's documentation for what it is).
    pub fn value(&self) -> &<S::Ref<'a> as Deref>::Target {
        // SAFETY: always initialised (see the field).
        unsafe { self.value.assume_init_ref() }
    }
}

impl<'a, T: 'a, S: Repr<T>> Deref for Entry<'a, T, S> {
    type Target = <S::Ref<'a> as Deref>::Target;
    fn deref(&self) -> &Self::Target {
        self.value()
    }
}

impl<'a, T: 'a, S: Repr<T>> fmt::Debug for Entry<'a, T, S>
where
    <S::Ref<'a> as Deref>::Target: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("range", &self.range())
            .field("value", &self.value())
            .finish()
    }
}

/// What [`MapleTree::remove_range`] removed: for each entry that intersected
/// the range, the freed part of its range and a reference to its value.
///
/// It holds an epoch guard, so the values stay valid while it lives (and
/// memory retired by writers meanwhile is not reclaimed: keep it short).
/// Not `Send`.
pub struct Removed<'a, T, S: Repr<T> = Boxed> {
    _guard: Guard,
    /// Each part's freed range and value word (kept alive by `_guard`).
    parts: Vec<(u64, u64, *mut ())>,
    _tree: PhantomData<&'a (T, S)>,
}

impl<T, S: Repr<T>> Removed<'_, T, S> {
    /// Number of entries the removal touched.
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// Whether the range held no entry (nothing was written).
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// The freed part of each touched entry's range and its value, in
    /// increasing order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (RangeInclusive<u64>, S::Ref<'_>)> + '_ {
        self.parts.iter().map(|&(s, e, v)| {
            // SAFETY: the guard held by self delays the value's reclamation
            // (pinned before the removal retired it).
            (s..=e, unsafe { S::borrow(v) })
        })
    }

    /// The freed ranges with clones of their values.
    pub fn to_vec(&self) -> Vec<(RangeInclusive<u64>, T)>
    where
        T: Clone,
    {
        self.parts
            .iter()
            .map(|&(s, e, v)| {
                // SAFETY: as in iter; the clone is a new word owned here,
                // turned back into a value at once.
                (s..=e, unsafe { S::from_word(S::clone_word(v)) })
            })
            .collect()
    }
}

impl<T, S: Repr<T>> fmt::Debug for Removed<'_, T, S>
where
    for<'x> S::Ref<'x>: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
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
/// let tree = maple::MapleTree::new();
/// tree.insert(0..10, 'a').unwrap();
/// tree.insert(20..30, 'b').unwrap();
/// let r = tree.reader(); // one pin for several reads
/// assert_eq!(r.load(5).map(|(_, v)| *v), Some('a'));
/// assert_eq!(r.find(10).map(|(range, _)| range), Some(20..=29));
/// let back: Vec<char> = r.iter().rev().map(|(_, v)| *v).collect();
/// assert_eq!(back, ['b', 'a']);
/// ```
pub struct Reader<'a, T, S: Repr<T> = Boxed> {
    guard: Guard,
    root: NodePtr,
    _tree: PhantomData<&'a MapleTree<T, S>>,
}

impl<'a, T, S: Repr<T>> Reader<'a, T, S> {
    pub(crate) fn root_ptr(&self) -> NodePtr {
        self.root
    }

    fn item(&self, e: RawEntry<Slot<T, S>>) -> Option<(RangeInclusive<u64>, S::Ref<'_>)> {
        // SAFETY: the reader's guard keeps the value alive for &self.
        (!e.2.is_null()).then(|| (e.0..=e.1, unsafe { S::borrow(e.2.cast()) }))
    }

    /// The entry containing `index`.
    pub fn load(&self, index: u64) -> Option<(RangeInclusive<u64>, S::Ref<'_>)> {
        if self.root.is_null() {
            return None;
        }
        // SAFETY: the guard keeps the version alive.
        self.item(unsafe { read::lookup::<Slot<T, S>>(self.root, index) })
    }

    /// The first entry ending at or after `index`.
    pub fn find(&self, index: u64) -> Option<(RangeInclusive<u64>, S::Ref<'_>)> {
        // SAFETY: the guard keeps the version alive.
        self.item(unsafe { read::find::<Slot<T, S>>(self.root, index) }?)
    }

    /// The last entry starting at or before `index`.
    pub fn prev(&self, index: u64) -> Option<(RangeInclusive<u64>, S::Ref<'_>)> {
        // SAFETY: the guard keeps the version alive.
        self.item(unsafe { read::find_prev::<Slot<T, S>>(self.root, index) }?)
    }

    /// All entries in increasing order (also from the back).
    pub fn iter(&self) -> Iter<'_, T, S> {
        self.range(0, u64::MAX)
    }

    /// Entries intersecting `[first, last]`, in increasing order. An empty
    /// iterator when `first > last`.
    pub fn range(&self, first: u64, last: u64) -> Iter<'_, T, S> {
        Iter::new(self.root, first, last)
    }

    /// Entries, counted by iterating: O(n).
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Whether the tree was empty when this section began.
    pub fn is_empty(&self) -> bool {
        self.root.is_null()
    }

    /// See [`MapleTree::empty_area`].
    pub fn empty_area(&self, min: u64, max: u64, size: u64) -> Result<u64, MapleError> {
        let _ = &self.guard;
        gap_search::<Slot<T, S>>(self.root, min, max, size, false)
    }

    /// See [`MapleTree::empty_area_rev`].
    pub fn empty_area_rev(&self, min: u64, max: u64, size: u64) -> Result<u64, MapleError> {
        gap_search::<Slot<T, S>>(self.root, min, max, size, true)
    }
}

impl<'s, T, S: Repr<T>> IntoIterator for &'s Reader<'_, T, S> {
    type Item = (RangeInclusive<u64>, S::Ref<'s>);
    type IntoIter = Iter<'s, T, S>;
    fn into_iter(self) -> Iter<'s, T, S> {
        self.iter()
    }
}

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
    /// Where the front is: the range's first index, then one past the end
    /// of the last entry the front yielded.
    lo: u64,
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
    pub(crate) fn new(root: NodePtr, first: u64, last: u64) -> Self {
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
            lo: first,
            hi: last,
            lo_floor: 0,
            hi_ceil: u64::MAX,
            done: true,
            _snap: PhantomData,
        };
        if !root.is_null() && first <= last {
            // SAFETY: the owner of 's keeps root alive.
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
                    self.lo = e + 1;
                    self.lo_floor = e + 1;
                }
                self.slow_s = s;
                self.slow_e = e;
                return v;
            }
            self.front.leaf_set_idx(self.f_n - 1);
            // SAFETY: the path is valid for the version 's keeps alive.
            if unsafe { step_next(&mut self.front) } {
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
        let n = self.f_n;
        let mut i = self.f_idx;
        if i < n {
            // SAFETY: the cached leaf belongs to the version 's keeps alive.
            let leaf = unsafe { &*self.f_leaf };
            let mut s = self.f_start;
            loop {
                let e = if i + 1 < n { leaf.pivots[i] } else { self.f_hi };
                let v = leaf.slot(i);
                if !v.is_null() {
                    if e < self.hi && s >= self.lo_floor {
                        self.f_idx = i + 1;
                        self.f_start = e + 1;
                        self.lo = e + 1;
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
            if e < self.lo || s < self.lo_floor {
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
                if s <= self.lo || !more {
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
}

impl<'s, T, S: Repr<T>> DoubleEndedIterator for Iter<'s, T, S> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let (s, e, v) = self.next_back_raw()?;
        // SAFETY: the value lives as long as the version 's keeps alive.
        Some((s..=e, unsafe { S::borrow(v.cast()) }))
    }
}

impl<T, S: Repr<T>> FusedIterator for Iter<'_, T, S> {}
