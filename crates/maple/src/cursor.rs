//! The write cursor, in the manner of the kernel's `ma_state`.

use std::ops::RangeInclusive;
use std::ptr;

use parking_lot::MutexGuard;

use crate::error::{check_range, MapleError, WriteError};
use crate::node::NodePtr;
use crate::read::{
    self, descend, path_entry, seek_occupied_back, seek_occupied_fwd, step_next, step_prev, Path,
    RawEntry,
};
use crate::tree::{check_insert, gap_search, Core, Iter, MapleTree};
use crate::value::{clone_slot, Boxed, Cloner, Repr, Slot};
use crate::write::{height, leaves_spanned, worst_case_nodes, Txn, WriterState};

enum Access<'a, T, S: Repr<T>> {
    /// Holds the writer lock; writes copy-on-write and publish.
    Shared(MutexGuard<'a, WriterState<Slot<T, S>>>),
    /// `&mut MapleTree`: writes in place.
    Exclusive(&'a mut WriterState<Slot<T, S>>),
}

/// A positioned write cursor.
///
/// It keeps its position (an index, and the path to it) between calls, so
/// stepping with [`next`](Self::next) / [`prev`](Self::prev) costs O(1)
/// amortised. Every write through it is published before the call returns.
///
/// From [`MapleTree::cursor`] it holds the writer lock for its whole life:
/// concurrent readers keep running and see each write atomically, other
/// writers block. From [`MapleTree::cursor_mut`] it has the tree to itself.
///
/// References returned by its reads borrow the cursor, so they end before
/// the next write through it.
///
/// ```
/// let tree = maple::MapleTree::new();
/// let mut c = tree.cursor(); // holds the writer lock
/// c.preallocate(0x1000, 0x1fff); // the store below allocates no node
/// c.store_range(0x1000, 0x1fff, "a").unwrap();
/// c.store_range(0x3000, 0x3fff, "b").unwrap();
/// assert_eq!(c.walk(0x1000).map(|(r, _)| r), Some(0x1000..=0x1fff));
/// assert_eq!(c.next().map(|(_, v)| *v), Some("b"));
/// assert_eq!(c.empty_area(0, u64::MAX, 0x1000), Ok(0));
/// drop(c);
/// assert_eq!(tree.len(), 2);
/// ```
pub struct Cursor<'a, T, S: Repr<T> = Boxed> {
    core: &'a Core,
    tree_ptr: *const MapleTree<T, S>,
    access: Access<'a, T, S>,
    index: u64,
    path: Path,
    /// Whether `path` points into the current version at `index`.
    valid: bool,
}

impl<'a, T: Send + Sync + 'static, S: Repr<T>> Cursor<'a, T, S> {
    pub(crate) fn shared(tree: &'a MapleTree<T, S>) -> Self {
        let guard = tree.writer.lock();
        Cursor {
            core: &tree.core,
            tree_ptr: tree,
            access: Access::Shared(guard),
            index: 0,
            path: Path::new(),
            valid: false,
        }
    }

    pub(crate) fn exclusive(tree: &'a mut MapleTree<T, S>) -> Self {
        let tree_ptr: *const MapleTree<T, S> = tree;
        let MapleTree { core, writer, .. } = tree;
        Cursor {
            core,
            tree_ptr,
            access: Access::Exclusive(writer.get_mut()),
            index: 0,
            path: Path::new(),
            valid: false,
        }
    }

    fn root(&self) -> NodePtr {
        self.core.writer_root()
    }

    fn item(&self, e: RawEntry<Slot<T, S>>) -> Option<(RangeInclusive<u64>, S::Ref<'_>)> {
        // SAFETY: the cursor excludes other writers, so the value lives at
        // least until this cursor's next write (which needs &mut self).
        (!e.2.is_null()).then(|| (e.0..=e.1, unsafe { S::borrow(e.2.cast()) }))
    }

    fn ensure_path(&mut self) -> bool {
        let root = self.root();
        if root.is_null() {
            self.valid = false;
            return false;
        }
        if !self.valid {
            // SAFETY: the current version is kept alive by the lock / &mut.
            unsafe { descend(root, self.index, &mut self.path) };
            self.valid = true;
        }
        true
    }

    /// Moves to `index` and returns the entry containing it, if any.
    pub fn walk(&mut self, index: u64) -> Option<(RangeInclusive<u64>, S::Ref<'_>)> {
        self.index = index;
        self.valid = false;
        if !self.ensure_path() {
            return None;
        }
        // SAFETY: the path is valid for the current version.
        let e = unsafe { path_entry::<Slot<T, S>>(&self.path) };
        self.item(e)
    }

    /// The cursor's position.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// Moves to the next entry after the current position and returns it;
    /// `None` (position unchanged) at the end.
    // Not `Iterator::next`: the returned reference borrows the cursor (a
    // lending step), which the Iterator trait cannot express.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<(RangeInclusive<u64>, S::Ref<'_>)> {
        if !self.ensure_path() {
            return None;
        }
        let saved = self.path;
        // SAFETY: the path is valid for the current version.
        let found = unsafe {
            step_next(&mut self.path) && seek_occupied_fwd::<Slot<T, S>>(&mut self.path).is_some()
        };
        if !found {
            self.path = saved;
            return None;
        }
        // SAFETY: as above.
        let e = unsafe { path_entry::<Slot<T, S>>(&self.path) };
        self.index = e.0;
        self.item(e)
    }

    /// Moves to the previous entry before the current position and returns
    /// it; `None` (position unchanged) at the start.
    // Not `Iterator::prev`: the returned reference borrows the cursor (a
    // lending step), which the Iterator trait cannot express.
    #[allow(clippy::should_implement_trait)]
    pub fn prev(&mut self) -> Option<(RangeInclusive<u64>, S::Ref<'_>)> {
        if !self.ensure_path() {
            return None;
        }
        let saved = self.path;
        // SAFETY: the path is valid for the current version.
        let found = unsafe {
            step_prev(&mut self.path) && seek_occupied_back::<Slot<T, S>>(&mut self.path).is_some()
        };
        if !found {
            self.path = saved;
            return None;
        }
        // SAFETY: as above.
        let e = unsafe { path_entry::<Slot<T, S>>(&self.path) };
        self.index = e.0;
        self.item(e)
    }

    /// Entries intersecting `[first, last]` in the current version.
    pub fn range(&self, first: u64, last: u64) -> Iter<'_, T, S> {
        Iter::new(self.root(), first, last)
    }

    /// See [`MapleTree::empty_area`]; also moves the cursor to the result.
    pub fn empty_area(&mut self, min: u64, max: u64, size: u64) -> Result<u64, MapleError> {
        let s = gap_search::<Slot<T, S>>(self.root(), min, max, size, false)?;
        self.index = s;
        self.valid = false;
        Ok(s)
    }

    /// See [`MapleTree::empty_area_rev`]; also moves the cursor to the result.
    pub fn empty_area_rev(&mut self, min: u64, max: u64, size: u64) -> Result<u64, MapleError> {
        let s = gap_search::<Slot<T, S>>(self.root(), min, max, size, true)?;
        self.index = s;
        self.valid = false;
        Ok(s)
    }

    /// Reserves enough nodes that the next store of `[first, last]` through
    /// this cursor allocates no node (its value box aside: see
    /// [`store_range_boxed`](Self::store_range_boxed)). The reservation is
    /// a worst case; what the next write does not use is given back to the
    /// allocator after it, or when the cursor is dropped.
    pub fn preallocate(&mut self, first: u64, last: u64) {
        let root = self.root();
        // SAFETY: the current version is kept alive by the lock / &mut.
        let need =
            unsafe { worst_case_nodes(height(root), leaves_spanned(root, first, last.max(first))) };
        self.state().pool.reserve(need);
    }

    /// Node allocations so far that preallocation did not cover
    /// (cumulative over the tree's life).
    pub fn unreserved_allocations(&mut self) -> u64 {
        self.state().pool.misses
    }

    /// Free node blocks the writer holds now (for tests and diagnostics).
    #[doc(hidden)]
    pub fn pooled_blocks(&mut self) -> usize {
        self.state().pool.len()
    }

    /// The cursor's path, when it is valid for the current version.
    fn known_path(&self) -> Option<Path> {
        (self.valid && !self.root().is_null()).then_some(self.path)
    }

    fn state(&mut self) -> &mut WriterState<Slot<T, S>> {
        match &mut self.access {
            Access::Shared(g) => g,
            Access::Exclusive(s) => s,
        }
    }

    /// Runs one transaction: in place under `&mut`, else copy-on-write.
    /// Afterwards the pool keeps only its usual few blocks: whatever a
    /// preallocation reserved beyond what the write used goes back.
    fn run<R>(
        &mut self,
        cloner: Option<Cloner<Slot<T, S>>>,
        f: impl FnOnce(&mut Txn<'_, Slot<T, S>>) -> R,
    ) -> R {
        let r = self.run_txn(cloner, f);
        self.state().pool.trim();
        r
    }

    fn run_txn<R>(
        &mut self,
        cloner: Option<Cloner<Slot<T, S>>>,
        f: impl FnOnce(&mut Txn<'_, Slot<T, S>>) -> R,
    ) -> R {
        self.valid = false;
        match &mut self.access {
            Access::Shared(st) => {
                // SAFETY: tree_ptr came from the &'a MapleTree this cursor borrows.
                let tree = unsafe { &*self.tree_ptr };
                tree.write_locked(st, cloner, f)
            }
            Access::Exclusive(st) => {
                let mut txn = Txn::new(st, self.core.writer_root(), true, cloner);
                let r = f(&mut txn);
                // Relaxed is enough: &mut excludes every other thread.
                let c = txn.commit(
                    |root| self.core.root.0.store(root, crate::sync::Ordering::Relaxed),
                    None,
                );
                self.core.apply(&c);
                r
            }
        }
    }

    /// Stores a value word at `[first, last]` (valid, checked by the caller).
    fn store_word(&mut self, first: u64, last: u64, v: *mut Slot<T, S>)
    where
        T: Clone,
    {
        let known = self.known_path();
        self.run(Some(clone_slot::<T, S>), |t| match &known {
            Some(p) => t.store_at(p, first, last, v),
            None => t.store(first, last, v),
        });
        self.index = first;
    }

    /// Stores `value` at `[first, last]`, as [`MapleTree::store_range`].
    pub fn store_range(&mut self, first: u64, last: u64, value: T) -> Result<(), WriteError<T>>
    where
        T: Clone,
    {
        if let Err(kind) = check_range(first, last) {
            return Err(WriteError { kind, value });
        }
        self.store_word(first, last, S::into_word(value).cast());
        Ok(())
    }

    /// Inserts `value` at `[first, last]` if all of it is free.
    pub fn insert_range(&mut self, first: u64, last: u64, value: T) -> Result<(), WriteError<T>> {
        if let Err(kind) = check_insert(self.root(), first, last) {
            return Err(WriteError { kind, value });
        }
        let v = S::into_word(value).cast();
        let known = self.known_path();
        self.run(None, |t| match &known {
            Some(p) => t.store_at(p, first, last, v),
            None => t.store(first, last, v),
        });
        self.index = first;
        Ok(())
    }

    /// Erases the entry at the cursor's position. Returns its range; the
    /// value is dropped once no reader can see it.
    pub fn erase(&mut self) -> Option<RangeInclusive<u64>> {
        let root = self.root();
        if root.is_null() {
            return None;
        }
        self.ensure_path();
        // SAFETY: the path is valid for the current version.
        let (s, e, v) = unsafe { path_entry::<Slot<T, S>>(&self.path) };
        if v.is_null() {
            return None;
        }
        let known = self.path;
        self.run(None, |t| t.store_at(&known, s, e, ptr::null_mut()));
        Some(s..=e)
    }

    /// Exclusive erase handing the value back (used by [`MapleTree::remove`]).
    pub(crate) fn remove_at(mut self, index: u64) -> Option<(RangeInclusive<u64>, T)> {
        debug_assert!(matches!(self.access, Access::Exclusive(_)));
        let root = self.root();
        if root.is_null() {
            return None;
        }
        // SAFETY: &mut tree: the version is ours.
        let (s, e, v) = unsafe { read::lookup::<Slot<T, S>>(root, index) };
        if v.is_null() {
            return None;
        }
        let taken = self.run(None, |t| {
            t.store(s, e, ptr::null_mut());
            t.take_retired_value()
        });
        debug_assert_eq!(taken, Some(v));
        // SAFETY: the value was unlinked and taken out of the retire list,
        // so this is its only owner.
        taken.map(|p| (s..=e, unsafe { S::from_word(p.cast()) }))
    }
}

impl<T: Clone + Send + Sync + 'static> Cursor<'_, T, Boxed> {
    /// Stores an already boxed value at `[first, last]` (see
    /// [`MapleTree::store_range`]). After [`preallocate`](Self::preallocate)
    /// this allocates nothing. (An [`Inline`](crate::Inline) tree allocates
    /// nothing per value in any case.)
    pub fn store_range_boxed(
        &mut self,
        first: u64,
        last: u64,
        value: Box<T>,
    ) -> Result<(), WriteError<Box<T>>> {
        if let Err(kind) = check_range(first, last) {
            return Err(WriteError { kind, value });
        }
        // The Boxed representation's word is the box pointer.
        self.store_word(first, last, Box::into_raw(value).cast());
        Ok(())
    }
}

impl<T, S: Repr<T>> Drop for Cursor<'_, T, S> {
    /// Gives back a preallocation that no write used.
    fn drop(&mut self) {
        match &mut self.access {
            Access::Shared(st) => st.pool.trim(),
            Access::Exclusive(st) => st.pool.trim(),
        }
    }
}
