//! The write cursor, in the manner of the kernel's `ma_state`.
//!
//! A safe skin: the path it keeps and every read and write through it go
//! through the raw core (`crate::raw`), with the writer access it holds as
//! the proof that the version stays put; the unchecked code is all in the
//! core.

use std::ops::RangeInclusive;

use crate::error::{check_range, MapleError, WriteError};
use crate::mem::BlockPool;
use crate::raw::{Core, EntryPin, Item, Iter, Ref};
use crate::raw::{CursorPath, Exclusive, Found, Locked, Writer};
use crate::value::{clone_slot, Boxed, Cloner, Owned, Repr, Slot};
use crate::write::Txn;
#[allow(unused_imports)] // intra-doc links
use crate::MapleTree;

enum Access<'a, T, S: Repr<T>> {
    /// Holds the writer lock; writes copy-on-write and publish.
    Shared(Writer<'a, Slot<T, S>>),
    /// `&mut MapleTree`: writes in place.
    Exclusive(Exclusive<'a, Slot<T, S>>),
}

impl<T, S: Repr<T>> Access<'_, T, S> {
    /// The current version, kept put by the writer access this holds.
    #[inline]
    fn locked(&self) -> Locked<'_, Slot<T, S>> {
        match self {
            Access::Shared(w) => w.locked(),
            Access::Exclusive(x) => x.locked(),
        }
    }

    fn pool(&mut self) -> &mut BlockPool {
        match self {
            Access::Shared(w) => w.pool(),
            Access::Exclusive(x) => x.pool(),
        }
    }
}

/// An entry as the cursor hands it out.
fn item<T, S: Repr<T>>((s, e, w): Found<'_, Slot<T, S>>) -> Item<'_, T, S> {
    // SAFETY: the word is alive while the cursor is borrowed (the writer
    // lock or `&mut` keeps the version from changing), which the item's
    // lifetime does.
    unsafe { Ref::item(EntryPin::Borrowed, (s, e, w.ptr())) }
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
/// let tree = aspace_maple::MapleTree::new();
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
    access: Access<'a, T, S>,
    index: u64,
    /// The path to `index`, valid while no write has happened since it
    /// was taken.
    pos: CursorPath,
}

impl<'a, T: Send + Sync + 'static, S: Repr<T>> Cursor<'a, T, S> {
    pub(crate) fn shared(core: &'a Core<Slot<T, S>>) -> Self {
        Cursor {
            access: Access::Shared(core.lock()),
            index: 0,
            pos: CursorPath::new(),
        }
    }

    pub(crate) fn exclusive(core: &'a mut Core<Slot<T, S>>) -> Self {
        Cursor {
            access: Access::Exclusive(core.exclusive()),
            index: 0,
            pos: CursorPath::new(),
        }
    }

    /// Moves to `index` and returns the entry containing it, if any.
    pub fn walk(&mut self, index: u64) -> Option<Item<'_, T, S>> {
        self.index = index;
        self.pos.invalidate();
        let (s, e, w) = self.pos.entry(self.access.locked(), index)?;
        w.map(|w| item((s, e, w)))
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
    pub fn next(&mut self) -> Option<Item<'_, T, S>> {
        let f = self.pos.step(self.access.locked(), self.index, true)?;
        self.index = f.0;
        Some(item(f))
    }

    /// Moves to the previous entry before the current position and returns
    /// it; `None` (position unchanged) at the start.
    // Not `Iterator::prev`: the returned reference borrows the cursor (a
    // lending step), which the Iterator trait cannot express.
    #[allow(clippy::should_implement_trait)]
    pub fn prev(&mut self) -> Option<Item<'_, T, S>> {
        let f = self.pos.step(self.access.locked(), self.index, false)?;
        self.index = f.0;
        Some(item(f))
    }

    /// Entries intersecting `[first, last]` in the current version.
    pub fn range(&self, first: u64, last: u64) -> Iter<'_, T, S> {
        Iter::new(self.access.locked().root, first, last)
    }

    /// See [`MapleTree::empty_area`]; also moves the cursor to the result.
    pub fn empty_area(&mut self, min: u64, max: u64, size: u64) -> Result<u64, MapleError> {
        let s = self.access.locked().root.gap(min, max, size, false)?;
        self.index = s;
        self.pos.invalidate();
        Ok(s)
    }

    /// See [`MapleTree::empty_area_rev`]; also moves the cursor to the result.
    pub fn empty_area_rev(&mut self, min: u64, max: u64, size: u64) -> Result<u64, MapleError> {
        let s = self.access.locked().root.gap(min, max, size, true)?;
        self.index = s;
        self.pos.invalidate();
        Ok(s)
    }

    /// Reserves enough nodes that the next store of `[first, last]` through
    /// this cursor allocates no node (its value box aside: see
    /// [`store_range_boxed`](Self::store_range_boxed)). The reservation is
    /// a worst case; what the next write does not use is given back to the
    /// allocator after it, or when the cursor is dropped.
    pub fn preallocate(&mut self, first: u64, last: u64) {
        let need = self.access.locked().root.worst_case_nodes(first, last);
        self.access.pool().reserve(need);
    }

    /// Node allocations so far that preallocation did not cover
    /// (cumulative over the tree's life).
    pub fn unreserved_allocations(&mut self) -> u64 {
        self.access.pool().misses
    }

    /// Free node blocks the writer holds now (for tests and diagnostics).
    #[doc(hidden)]
    pub fn pooled_blocks(&mut self) -> usize {
        self.access.pool().len()
    }

    /// Runs one transaction: in place under `&mut`, else copy-on-write.
    /// Afterwards the pool keeps only its usual few blocks: whatever a
    /// preallocation reserved beyond what the write used goes back.
    fn run<R>(
        &mut self,
        cloner: Option<Cloner<Slot<T, S>>>,
        f: impl FnOnce(&mut Txn<'_, Slot<T, S>>) -> R,
    ) -> R {
        let r = match &mut self.access {
            Access::Shared(w) => w.write(cloner, f),
            Access::Exclusive(x) => x.write(cloner, f),
        };
        self.access.pool().trim();
        r
    }

    /// Stores a value word at `[first, last]` (valid, checked by the
    /// caller), through the cursor's path when it has one.
    fn store_word(
        &mut self,
        first: u64,
        last: u64,
        v: Owned<Slot<T, S>>,
        cloner: Option<Cloner<Slot<T, S>>>,
    ) {
        let known = self.pos.known(self.access.locked());
        self.run(cloner, |t| match &known {
            Some(p) => t.store_at(p, first, last, Some(v)),
            None => t.store(first, last, Some(v)),
        });
        self.index = first;
    }

    /// Stores `value` at `[first, last]`, as [`MapleTree::store_range`].
    pub fn store_range(&mut self, first: u64, last: u64, value: T) -> Result<(), WriteError<T>>
    where
        T: crate::SplitValue,
    {
        if let Err(kind) = check_range(first, last) {
            return Err(WriteError { kind, value });
        }
        self.store_word(
            first,
            last,
            Owned::from_value(value),
            Some(clone_slot::<T, S>),
        );
        Ok(())
    }

    /// Inserts `value` at `[first, last]` if all of it is free.
    pub fn insert_range(&mut self, first: u64, last: u64, value: T) -> Result<(), WriteError<T>> {
        if let Err(kind) = self.access.locked().root.check_insert(first, last) {
            return Err(WriteError { kind, value });
        }
        self.store_word(first, last, Owned::from_value(value), None);
        Ok(())
    }

    /// Erases the entry at the cursor's position. Returns its range; the
    /// value is dropped once no reader can see it.
    pub fn erase(&mut self) -> Option<RangeInclusive<u64>> {
        let (s, e, w) = self.pos.entry(self.access.locked(), self.index)?;
        w?;
        let known = self.pos.known(self.access.locked());
        self.run(None, |t| match &known {
            Some(p) => t.store_at(p, s, e, None),
            None => t.store(s, e, None),
        });
        Some(s..=e)
    }

    /// Exclusive erase handing the value back (used by [`MapleTree::remove`]).
    pub(crate) fn remove_at(mut self, index: u64) -> Option<(RangeInclusive<u64>, T)> {
        let Access::Exclusive(x) = &mut self.access else {
            unreachable!("remove_at on a shared cursor");
        };
        let (s, e, v) = x.remove(index)?;
        x.pool().trim();
        Some((s..=e, v.into_value()))
    }
}

impl<T: crate::SplitValue + Send + Sync + 'static> Cursor<'_, T, Boxed> {
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
        self.store_word(
            first,
            last,
            Owned::from_box(value),
            Some(clone_slot::<T, Boxed>),
        );
        Ok(())
    }
}

impl<T, S: Repr<T>> Drop for Cursor<'_, T, S> {
    /// Gives back a preallocation that no write used.
    fn drop(&mut self) {
        self.access.pool().trim();
    }
}
