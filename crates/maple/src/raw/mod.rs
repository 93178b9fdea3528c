//! The raw core under the safe skin (`tree.rs`, `cursor.rs`, `map.rs`), as
//! crossbeam-skiplist's `base.rs` sits under its `map.rs`.
//!
//! Everything that dereferences a node or a value word lives in the core
//! (this module, `read`, `node`, `write`, `mem`, `value`) and is reached
//! from the skin only through operations that take the proof that what
//! they touch is alive:
//!
//! - a [`Root`] is a version's root together with a lifetime for which the
//!   version stays alive. It is made only from an epoch guard ([`Pinned`]:
//!   the guard pins before the root is loaded) or from a borrow of the
//!   writer's access ([`Writer::locked`] under the writer lock,
//!   [`Exclusive::locked`] under `&mut`: the holder is the only writer, so
//!   the version cannot change while it is borrowed). Reads on a `Root`
//!   ([`Root::lookup`], [`Root::find`], [`Root::gap`], [`Iter`]) are safe
//!   functions;
//! - a [`Word`] is a non-null value word alive for the same lifetime;
//! - a [`Ref`] (an [`Entry`]'s value, every iterator's item) owns the guard
//!   (or a share of one) that keeps its value alive, or borrows what does
//!   (a [`Reader`](crate::Reader), a [`Removed`], a cursor), and is built
//!   here, where the guard is pinned before the value is read or retired;
//! - writes go through a [`Writer`] (the lock held) or an [`Exclusive`]
//!   (`&mut`), which pair the writer state with its tree; they take the
//!   stored value as an [`Owned`] word made from a value;
//! - a cursor's saved path ([`CursorPath`]) is stamped with the write
//!   generation it was taken in and used only while no write has happened
//!   since (`WriterState::gen`), as a [`KnownPath`].
//!
//! `SAFETY.md` (section 0) describes the boundary, the rest of it the
//! protocol these rest on.

use std::marker::PhantomData;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use crate::epoch::{self, Guard};
use parking_lot::{Mutex, MutexGuard};

use crate::error::{check_range, check_window, MapleError};
use crate::mem::BlockPool;
use crate::node::{Header, NodePtr};
use crate::read::{self, KnownPath, Path, RawEntry};
use crate::subtree::{dup_subtree, free_subtree};
use crate::sync::{AtomicPtr, AtomicUsize, Ordering};
use crate::value::{Cloner, Owned, SlotOps};
use crate::write::{height, leaves_spanned, worst_case_nodes, Committed, Txn, WriterState};

mod entry;
mod iter;

pub(crate) use entry::EntryPin;
pub use entry::{Entries, Entry, Item, Ref, Removed};
pub use iter::Iter;

/// The published root, alone on its cache line: every read loads it, so a
/// line the writer also dirtied on every write (the counters, once beside
/// it) made each concurrent read miss.
#[repr(align(64))]
struct RootLine(AtomicPtr<Header>);

/// Statistics the writer updates; readers of `len()` only.
#[repr(align(64))]
struct Counters {
    len: AtomicUsize,
    nodes: AtomicUsize,
}

/// The part of the tree readers touch: the published root, and the
/// counters. `V` is the slot type (`Slot<T, S>`) of the nodes it owns.
struct Head<V> {
    root: RootLine,
    counters: Counters,
    _v: PhantomData<fn() -> V>,
}

impl<V> Head<V> {
    /// The root for a reader. Acquire pairs with the writer's release store
    /// in [`Head::publish`], so every node reachable from it is fully
    /// initialised before the reader looks at it.
    #[inline]
    fn load_root(&self) -> NodePtr {
        self.root.0.load(Ordering::Acquire)
    }

    /// The root for the writer, who holds the writer lock or `&mut`: the lock
    /// acquisition (or exclusivity) already orders it after the last publish.
    #[inline]
    fn writer_root(&self) -> NodePtr {
        self.root.0.load(Ordering::Relaxed)
    }

    /// Publishes a new version with a single release store: the one point at
    /// which a write becomes visible.
    #[inline]
    fn publish(&self, root: NodePtr) {
        // A write that swapped a leaf in place keeps the root: storing it
        // again would only invalidate every reader's copy of the line.
        if self.root.0.load(Ordering::Relaxed) != root {
            self.root.0.store(root, Ordering::Release);
        }
    }

    #[inline]
    fn apply(&self, c: &Committed) {
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

    /// The current version for the writer holding `st`.
    #[inline]
    fn locked<'w>(&self, st: &'w WriterState<V>) -> Locked<'w, V> {
        Locked {
            root: Root::new(self.writer_root()),
            gen: st.gen(),
        }
    }
}

/// A tree's core: what readers touch ([`Head`]) and the writer state behind
/// the writer lock. Every write goes through a [`Writer`] (the lock held)
/// or an [`Exclusive`] (`&mut`), which pair the two by construction.
pub(crate) struct Core<V> {
    head: Head<V>,
    writer: Mutex<WriterState<V>>,
}

impl<V> Core<V> {
    /// An empty tree's core; `st` its (new) writer state.
    pub(crate) fn new(st: WriterState<V>) -> Self {
        Core {
            head: Head {
                root: RootLine(AtomicPtr::new(ptr::null_mut())),
                counters: Counters {
                    len: AtomicUsize::new(0),
                    nodes: AtomicUsize::new(0),
                },
                _v: PhantomData,
            },
            writer: Mutex::new(st),
        }
    }

    /// Takes the writer lock (blocking while another writer holds it).
    #[inline]
    pub(crate) fn lock(&self) -> Writer<'_, V> {
        Writer {
            head: &self.head,
            st: self.writer.lock(),
        }
    }

    /// The writer's access under `&mut`: no reader, no other writer.
    #[inline]
    pub(crate) fn exclusive(&mut self) -> Exclusive<'_, V> {
        Exclusive {
            head: &self.head,
            st: self.writer.get_mut(),
        }
    }

    /// Number of entries (exact when no write is in flight).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        // Relaxed: a statistic; see Head::apply.
        self.head.counters.len.load(Ordering::Relaxed)
    }

    /// Nodes in the current version (exact when no write is in flight).
    pub(crate) fn nodes(&self) -> usize {
        // Relaxed: a statistic; see Head::apply.
        self.head.counters.nodes.load(Ordering::Relaxed)
    }

    /// The root for a reader (see [`Head::load_root`]).
    #[inline]
    fn load_root(&self) -> NodePtr {
        self.head.load_root()
    }
}

impl<V: SlotOps> Core<V> {
    /// Frees every node and value of the current version and empties the
    /// tree: `&mut` leaves no reader or writer.
    pub(crate) fn free_all(&mut self) {
        let head = &self.head;
        // Relaxed: exclusive access.
        let root = head.root.0.load(Ordering::Relaxed);
        head.root.0.store(ptr::null_mut(), Ordering::Relaxed);
        let recycler = self.writer.get_mut().pool.recycler();
        // SAFETY: &mut self: no reader or writer remains, and the tree owns
        // every node and value of its current version.
        unsafe { free_subtree::<V>(root, &|b| recycler.release(b)) };
    }
}

/// The writer lock held: writes copy-on-write and publish.
pub(crate) struct Writer<'a, V> {
    head: &'a Head<V>,
    st: MutexGuard<'a, WriterState<V>>,
}

/// `&mut` access to the tree: writes in place.
pub(crate) struct Exclusive<'a, V> {
    head: &'a Head<V>,
    st: &'a mut WriterState<V>,
}

impl<V> Writer<'_, V> {
    /// The current version, which cannot change while it is borrowed from
    /// the lock holder.
    #[inline]
    pub(crate) fn locked(&self) -> Locked<'_, V> {
        self.head.locked(&self.st)
    }

    /// The writer state (its node pool).
    #[inline]
    pub(crate) fn pool(&mut self) -> &mut BlockPool {
        &mut self.st.pool
    }
}

impl<V> Exclusive<'_, V> {
    /// The current version, which cannot change while it is borrowed.
    #[inline]
    pub(crate) fn locked(&self) -> Locked<'_, V> {
        self.head.locked(self.st)
    }

    /// The writer state (its node pool).
    #[inline]
    pub(crate) fn pool(&mut self) -> &mut BlockPool {
        &mut self.st.pool
    }
}

impl<V: SlotOps + Send + 'static> Writer<'_, V> {
    /// Runs one write transaction, copy-on-write, and publishes it.
    /// Replaced nodes and values are retired through the epoch, after the
    /// publish.
    #[inline]
    pub(crate) fn write<R>(
        &mut self,
        cloner: Option<Cloner<V>>,
        f: impl FnOnce(&mut Txn<'_, V>) -> R,
    ) -> R {
        let guard = epoch::pin_fenced();
        let head = self.head;
        let mut txn = Txn::new(&mut self.st, head.writer_root(), false, cloner);
        let r = f(&mut txn);
        let c = txn.commit(|root| head.publish(root), Some(&guard));
        head.apply(&c);
        r
    }

    /// Removes every entry. Readers still holding the old version keep it
    /// until they unpin; it is then freed in one deferred pass.
    pub(crate) fn clear(&mut self) {
        let guard = epoch::pin_fenced();
        self.st.bump_gen();
        let head = self.head;
        let old = head.writer_root();
        head.publish(ptr::null_mut());
        // Relaxed: statistics, written by the writer only.
        head.counters.len.store(0, Ordering::Relaxed);
        head.counters.nodes.store(0, Ordering::Relaxed);
        if !old.is_null() {
            let old = SendNode(old);
            // The blocks go where the tree's writes send theirs (a dup
            // arena's stay in it, which the recycler keeps alive).
            let recycler = Arc::clone(self.st.pool.recycler());
            // SAFETY: old is unlinked; the deferred pass runs after every
            // reader pinned before the publish has unpinned, and the values
            // it drops are Send (`V: Send`).
            unsafe {
                self.st.defer(&guard, move || {
                    let old = old;
                    free_subtree::<V>(old.0, &|b| recycler.release(b));
                })
            };
        }
    }
}

impl<V: SlotOps> Writer<'_, V> {
    /// Copies the current version into the empty tree `dst` (whose
    /// previous, empty, version is replaced), whole nodes first (see
    /// [`dup_subtree`]): with `clone` `None` the value words are copied as
    /// they are, else each is replaced with `clone(word)`. The copy's nodes
    /// come from one allocation, which `dst`'s pool owns from now on.
    pub(crate) fn dup_into(&self, clone: Option<impl FnMut(*mut V) -> *mut V>, dst: &mut Core<V>) {
        let at = self.locked();
        // Relaxed: a statistic, exact under the lock.
        let nodes = self.head.counters.nodes.load(Ordering::Relaxed);
        // SAFETY: the lock keeps this version alive and unchanged; `clone`
        // clones a live word of it.
        let (copy, nodes, arena) = unsafe { dup_subtree::<V>(at.root.ptr, nodes, clone) };
        dst.free_all();
        // The copy's blocks belong to `dst`'s recycler (see `Arena`).
        dst.writer.get_mut().pool = BlockPool::with_arena(arena);
        let head = &dst.head;
        // Relaxed: `&mut dst`, not shared.
        head.root.0.store(copy, Ordering::Relaxed);
        head.counters.len.store(
            self.head.counters.len.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        head.counters.nodes.store(nodes, Ordering::Relaxed);
    }
}

impl<V: SlotOps + Send + 'static> Exclusive<'_, V> {
    /// Runs one write transaction in place, freeing what it replaces at
    /// once.
    #[inline]
    pub(crate) fn write<R>(
        &mut self,
        cloner: Option<Cloner<V>>,
        f: impl FnOnce(&mut Txn<'_, V>) -> R,
    ) -> R {
        let head = self.head;
        let mut txn = Txn::new(self.st, head.writer_root(), true, cloner);
        let r = f(&mut txn);
        // Relaxed is enough: &mut excludes every other thread.
        let c = txn.commit(|root| head.root.0.store(root, Ordering::Relaxed), None);
        head.apply(&c);
        r
    }

    /// Removes the entry containing `index`: its bounds and the value, now
    /// owned by the caller.
    pub(crate) fn remove(&mut self, index: u64) -> Option<(u64, u64, Owned<V>)> {
        let (s, e, w) = self.locked().root.lookup(index)?;
        let v = w.ptr();
        let taken = self.write(None, |t| {
            t.store(s, e, None);
            t.take_retired_value()
        });
        debug_assert_eq!(taken.as_ref().map(Owned::ptr), Some(v));
        taken.map(|o| (s, e, o))
    }
}

struct SendNode(NodePtr);
// SAFETY: carries an unlinked subtree (values T: Send) to the deferred free.
unsafe impl Send for SendNode {}

/// A version's root, alive for `'a` (see the module documentation for how
/// one is made). Null for an empty tree.
pub(crate) struct Root<'a, V> {
    ptr: NodePtr,
    _alive: PhantomData<&'a ()>,
    _v: PhantomData<fn() -> V>,
}

impl<V> Clone for Root<'_, V> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}
impl<V> Copy for Root<'_, V> {}

/// A non-null value word alive for `'a`.
pub(crate) struct Word<'a, V> {
    ptr: NonNull<V>,
    _alive: PhantomData<&'a ()>,
}

impl<V> Clone for Word<'_, V> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}
impl<V> Copy for Word<'_, V> {}

impl<'a, V> Word<'a, V> {
    /// # Safety
    /// `p` is null or a value word alive for `'a`.
    #[inline]
    unsafe fn new(p: *mut V) -> Option<Self> {
        NonNull::new(p).map(|ptr| Word {
            ptr,
            _alive: PhantomData,
        })
    }

    /// The word itself (to compare, or to hand to a write as an identity).
    #[inline]
    pub(crate) fn ptr(self) -> *mut V {
        self.ptr.as_ptr()
    }
}

/// An entry found in a version: its bounds and its value word.
pub(crate) type Found<'a, V> = (u64, u64, Word<'a, V>);

impl<'a, V> Root<'a, V> {
    #[inline]
    fn new(ptr: NodePtr) -> Self {
        Root {
            ptr,
            _alive: PhantomData,
            _v: PhantomData,
        }
    }

    /// The root node (for the structural validation and the write engine,
    /// which take it as their starting point).
    #[inline]
    pub(crate) fn ptr(self) -> NodePtr {
        self.ptr
    }

    /// Whether the version is empty.
    #[inline]
    pub(crate) fn is_null(self) -> bool {
        self.ptr.is_null()
    }

    /// The slot covering `index`: its bounds and value word (`None` for a
    /// gap, or an empty tree).
    #[inline]
    pub(crate) fn lookup(self, index: u64) -> Option<Found<'a, V>> {
        if self.ptr.is_null() {
            return None;
        }
        // SAFETY: the version is alive for 'a (how the Root was made).
        let (s, e, v) = unsafe { read::lookup::<V>(self.ptr, index) };
        // SAFETY: a word of the same version.
        unsafe { Word::new(v) }.map(|w| (s, e, w))
    }

    /// The slot covering `index`, gap or entry, as a raw entry (null value
    /// for a gap); `None` for an empty tree.
    #[inline]
    fn lookup_raw(self, index: u64) -> Option<RawEntry<V>> {
        // SAFETY: the version is alive for 'a.
        (!self.ptr.is_null()).then(|| unsafe { read::lookup::<V>(self.ptr, index) })
    }

    /// The first entry ending at or after `index`.
    #[inline]
    pub(crate) fn find(self, index: u64) -> Option<Found<'a, V>> {
        // SAFETY: the version is alive for 'a.
        let (s, e, v) = unsafe { read::find::<V>(self.ptr, index) }?;
        // SAFETY: a word of the same version.
        unsafe { Word::new(v) }.map(|w| (s, e, w))
    }

    /// The last entry starting at or before `index`.
    #[inline]
    pub(crate) fn find_prev(self, index: u64) -> Option<Found<'a, V>> {
        // SAFETY: the version is alive for 'a.
        let (s, e, v) = unsafe { read::find_prev::<V>(self.ptr, index) }?;
        // SAFETY: a word of the same version.
        unsafe { Word::new(v) }.map(|w| (s, e, w))
    }

    /// Validated gap search: the lowest (`rev`: highest) start `s` in
    /// `[min, max]` with `[s, s + size - 1]` free.
    pub(crate) fn gap(self, min: u64, max: u64, size: u64, rev: bool) -> Result<u64, MapleError> {
        check_window(min, max, size)?;
        // SAFETY: the version is alive for 'a.
        unsafe { read::empty_area::<V>(self.ptr, min, max, size, rev) }.ok_or(MapleError::NoSpace {
            min,
            max,
            size,
        })
    }

    /// Checks that `[first, last]` is a valid, entirely free range.
    pub(crate) fn check_insert(self, first: u64, last: u64) -> Result<(), MapleError> {
        check_range(first, last)?;
        // A free run is one slot: no two gaps are adjacent in a leaf, and
        // none runs past a node's end off the rightmost path (invariants 1
        // and 2, `node.rs`). So the range is free exactly when the slot
        // covering `first` is a gap that reaches `last`: one walk down, as
        // a lookup makes, where looking for the next entry would keep a
        // path and step to the next leaf.
        match self.lookup_raw(first) {
            Some((_, e, v)) if !v.is_null() || e < last => {
                Err(MapleError::Occupied { first, last })
            }
            _ => Ok(()),
        }
    }

    /// Worst-case node allocations of one store of `[first, last]`.
    pub(crate) fn worst_case_nodes(self, first: u64, last: u64) -> usize {
        // SAFETY: the version is alive for 'a.
        unsafe {
            worst_case_nodes(
                height(self.ptr),
                leaves_spanned(self.ptr, first, last.max(first)),
            )
        }
    }
}

/// The writer's view of the current version: its [`Root`] and the write
/// generation it belongs to.
#[derive(Clone, Copy)]
pub(crate) struct Locked<'w, V> {
    pub(crate) root: Root<'w, V>,
    gen: u64,
}

/// A cursor's saved root-to-leaf path, valid while no write has happened
/// since it was taken (it is stamped with the write generation).
#[derive(Clone, Copy)]
pub(crate) struct CursorPath {
    path: Path,
    /// The generation the path was taken in; `None`: no path.
    gen: Option<u64>,
}

impl CursorPath {
    pub(crate) fn new() -> Self {
        CursorPath {
            path: Path::new(),
            gen: None,
        }
    }

    /// Forgets the path (the cursor moved).
    #[inline]
    pub(crate) fn invalidate(&mut self) {
        self.gen = None;
    }

    /// The path, when it is valid for `at` (and the tree is not empty).
    #[inline]
    pub(crate) fn known<V>(&self, at: Locked<'_, V>) -> Option<KnownPath> {
        // SAFETY: the path was taken in generation `at.gen`, the current
        // one: no write since.
        (self.gen == Some(at.gen) && !at.root.is_null())
            .then(|| unsafe { KnownPath::new(self.path) })
    }

    /// Makes the path valid for `at` at `index` (descending only when it is
    /// not); false for an empty tree.
    #[inline]
    fn ensure<V>(&mut self, at: Locked<'_, V>, index: u64) -> bool {
        if at.root.is_null() {
            self.gen = None;
            return false;
        }
        if self.gen != Some(at.gen) {
            // SAFETY: the version is alive while `at` is.
            unsafe { read::descend(at.root.ptr, index, &mut self.path) };
            self.gen = Some(at.gen);
        }
        true
    }

    /// The slot the path (made valid at `index`) points at: bounds and
    /// value word, `None` for a gap; `None` too for an empty tree.
    #[inline]
    pub(crate) fn entry<'w, V>(
        &mut self,
        at: Locked<'w, V>,
        index: u64,
    ) -> Option<(u64, u64, Option<Word<'w, V>>)> {
        if !self.ensure(at, index) {
            return None;
        }
        // SAFETY: the path is valid for the version, alive for 'w.
        let (s, e, v) = unsafe { read::path_entry::<V>(&self.path) };
        // SAFETY: a word of that version.
        Some((s, e, unsafe { Word::new(v) }))
    }

    /// Moves to the next (`fwd`) or previous entry after the path's slot
    /// (made valid at `index`) and returns it; `None`, the path unchanged,
    /// at the end.
    #[inline]
    pub(crate) fn step<'w, V>(
        &mut self,
        at: Locked<'w, V>,
        index: u64,
        fwd: bool,
    ) -> Option<Found<'w, V>> {
        if !self.ensure(at, index) {
            return None;
        }
        let saved = self.path;
        // SAFETY: the path is valid for the version, alive for 'w.
        let found = unsafe {
            if fwd {
                read::step_next(&mut self.path)
                    && read::seek_occupied_fwd::<V>(&mut self.path).is_some()
            } else {
                read::step_prev(&mut self.path)
                    && read::seek_occupied_back::<V>(&mut self.path).is_some()
            }
        };
        if !found {
            self.path = saved;
            return None;
        }
        // SAFETY: as above.
        let (s, e, v) = unsafe { read::path_entry::<V>(&self.path) };
        // SAFETY: a word of that version (non-null: an occupied slot).
        unsafe { Word::new(v) }.map(|w| (s, e, w))
    }
}

/// Loom only: see `MapleTree::loom_reclaim`.
#[cfg(loom)]
impl<T, S: crate::value::Repr<T>> crate::MapleTree<T, S> {
    /// Loom only: runs the deferred work (recycling, value drops) of the
    /// writes completed so far, now, as the epoch collector would once no
    /// reader remains. Lets a model race the recycling against the writer.
    ///
    /// # Safety
    /// No reader may still hold anything a completed write replaced.
    #[doc(hidden)]
    pub unsafe fn loom_reclaim(&self) {
        let work = std::mem::take(&mut *self.loom_deferred.lock().unwrap());
        for f in work {
            f();
        }
    }
}

/// A read-side section's pin: an epoch guard and the root loaded under it.
pub(crate) struct Pinned<V> {
    guard: Guard,
    root: NodePtr,
    _v: PhantomData<fn() -> V>,
}

impl<V> Pinned<V> {
    /// Pins, then loads the current root.
    #[inline]
    pub(crate) fn new(core: &Core<V>) -> Self {
        let guard = epoch::pin();
        let root = core.load_root();
        Pinned {
            guard,
            root,
            _v: PhantomData,
        }
    }

    /// The version loaded at creation, alive while the pin is.
    #[inline]
    pub(crate) fn root(&self) -> Root<'_, V> {
        let _ = &self.guard;
        Root::new(self.root)
    }
}
