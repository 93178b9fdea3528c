//! The value-holding public types: an [`Entry`], what a removal returned
//! ([`Removed`]), and the entries of an iteration ([`Entries`]) with the pin
//! they share. Each owns the epoch guard (or a share of one) that keeps its
//! values alive, and is built here, where that guard is pinned before the
//! value is read or retired.

use std::cell::Cell;
use std::fmt;
use std::iter::FusedIterator;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ops::{Deref, RangeInclusive};
use std::ptr::NonNull;

use crossbeam_epoch::{self as epoch, Guard};

use super::{Core, Iter, Writer};
use crate::read::RawEntry;
use crate::value::{Boxed, Cloner, Repr, Slot};
#[allow(unused_imports)] // intra-doc links
use crate::MapleTree;

impl<T, S: Repr<T>> Core<Slot<T, S>> {
    /// The entry containing `index`, under a pin of its own.
    #[inline]
    pub(crate) fn load(&self, index: u64) -> Option<Entry<'_, T, S>> {
        let guard = epoch::pin();
        let root = self.load_root();
        if root.is_null() {
            return None;
        }
        // SAFETY: the guard, pinned before the root was loaded, keeps this
        // version alive.
        let e = unsafe { crate::read::lookup::<Slot<T, S>>(root, index) };
        // SAFETY: the guard keeps the value alive for the Entry's life.
        unsafe { Entry::new(guard, e) }
    }

    /// The first entry ending at or after `index`, under a pin of its own.
    pub(crate) fn find(&self, index: u64) -> Option<Entry<'_, T, S>> {
        let guard = epoch::pin();
        // SAFETY: as in `load`.
        let e = unsafe { crate::read::find::<Slot<T, S>>(self.load_root(), index) }?;
        // SAFETY: as in `load`.
        unsafe { Entry::new(guard, e) }
    }

    /// The last entry starting at or before `index`, under a pin of its own.
    pub(crate) fn find_prev(&self, index: u64) -> Option<Entry<'_, T, S>> {
        let guard = epoch::pin();
        // SAFETY: as in `load`.
        let e = unsafe { crate::read::find_prev::<Slot<T, S>>(self.load_root(), index) }?;
        // SAFETY: as in `load`.
        unsafe { Entry::new(guard, e) }
    }
}

impl<'w, T: Send + Sync + 'static, S: Repr<T>> Writer<'w, Slot<T, S>> {
    /// Removes the whole entry containing `index` in one write and returns
    /// it; the value stays alive while the Entry does.
    pub(crate) fn erase(mut self, index: u64) -> Option<Entry<'w, T, S>> {
        // Pinned before the write retires the value.
        let guard = epoch::pin();
        let e = self.locked().root.lookup_raw(index)?;
        if e.2.is_null() {
            return None;
        }
        self.write(None, |t| t.store(e.0, e.1, None));
        // SAFETY: the value's drop was deferred by the write above (a
        // Writer's write always defers), after this guard was pinned, so it
        // outlives the returned Entry.
        unsafe { Entry::new(guard, e) }
    }

    /// Empties `[first, last]` (valid) in one write and returns what was
    /// removed.
    pub(crate) fn remove_range(
        mut self,
        first: u64,
        last: u64,
        cloner: Cloner<Slot<T, S>>,
    ) -> Removed<'w, T, S> {
        // Pinned before the write retires anything, so the removed values
        // outlive their deferred drop for as long as `Removed` lives.
        let guard = epoch::pin();
        let mut parts = Vec::new();
        let mut it = Iter::<'_, T, S>::new(self.locked().root, first, last);
        while let Some((s, e, v)) = it.next_raw() {
            parts.push((s.max(first), e.min(last), v.cast::<()>()));
        }
        if !parts.is_empty() {
            self.write(Some(cloner), |t| t.store(first, last, None));
        }
        Removed {
            _guard: guard,
            parts,
            _tree: PhantomData,
        }
    }
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

/// What keeps an [`Entry`]'s value alive: its own epoch guard (`load`,
/// `find`, ...), or a reference to the pin shared by the entries of one
/// iteration ([`Entries`]).
pub(crate) enum EntryPin {
    Own(#[allow(dead_code)] Guard),
    Shared(#[allow(dead_code)] SharedPinRef),
}

/// One epoch pin shared by an [`Entries`] iteration and every [`Entry`] it
/// yields, counted by hand, and released when the iterator and the last
/// entry it yielded are all gone.
///
/// The count is kept so that yielding an entry writes nothing shared: the
/// iterator holds [`ITER_SHARE`] references from the start and counts its
/// yields itself; each entry's drop takes one reference away; when the
/// iterator is dropped it gives back its share less one per yielded entry,
/// leaving exactly one reference per entry still alive. An entry so costs
/// the iterator one counter increment and its own drop one decrement: no
/// pin and unpin of its own. The count is a `Cell`: the iterator and its
/// entries are neither `Send` nor `Sync`, so all of them stay on the
/// thread that pinned.
struct SharedPin {
    refs: Cell<usize>,
    _guard: Guard,
}

/// The iterator's share of its [`SharedPin`]: more references than it can
/// ever yield entries, so no entry's drop can bring the count to zero while
/// the iterator lives.
const ITER_SHARE: usize = usize::MAX;

/// A reference to a [`SharedPin`] held by one entry.
pub(crate) struct SharedPinRef(NonNull<SharedPin>);

impl SharedPinRef {
    /// Gives back `n` references; frees the pin when none is left.
    ///
    /// # Safety
    /// The caller holds at least `n` references.
    #[inline]
    unsafe fn release(p: NonNull<SharedPin>, n: usize) {
        // SAFETY: the pin lives while a reference (the caller's) does.
        let refs = unsafe { &(*p.as_ptr()).refs };
        let left = refs.get() - n;
        refs.set(left);
        if left == 0 {
            // SAFETY: the last reference: nobody else can reach the pin.
            unsafe { SharedPinRef::free(p) };
        }
    }

    /// Unpins and frees the pin.
    ///
    /// # Safety
    /// No reference to it remains.
    #[cold]
    #[inline(never)]
    unsafe fn free(p: NonNull<SharedPin>) {
        // SAFETY: forwarded from the caller.
        drop(unsafe { Box::from_raw(p.as_ptr()) });
    }
}

impl Drop for SharedPinRef {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: an entry holds one reference.
        unsafe { SharedPinRef::release(self.0, 1) }
    }
}

/// An iterator over a tree's entries, from [`MapleTree::iter`] or
/// [`MapleTree::range`], or `&tree` in a `for` loop.
///
/// It pins the epoch once, when it is created, and walks the version it
/// found then, with a [`Reader`](crate::Reader)'s contract; the [`Entry`]s it yields share
/// that pin: each entry keeps it, and so its value, alive on its own. An
/// entry may therefore outlive the iterator, and the iterator may be
/// dropped while entries it yielded are still in use; the shared pin is
/// released when the iterator and the last entry it yielded are all gone
/// (until then, memory retired by writers is not reclaimed, as with any
/// [`Entry`]). Entries stay on the thread that iterated: neither the
/// iterator nor an [`Entry`] is `Send`.
pub struct Entries<'a, T: 'a, S: Repr<T> = Boxed> {
    // Iterates the version that `pin` keeps alive: the iterator holds
    // references to the pin until it is dropped, and each value it yields
    // is tied to one before it escapes.
    inner: Iter<'a, T, S>,
    /// The pin shared with the entries, of which this iterator holds
    /// [`ITER_SHARE`] references, `yielded` of them handed to entries.
    pin: NonNull<SharedPin>,
    yielded: usize,
}

impl<'a, T: 'a, S: Repr<T>> Entries<'a, T, S> {
    pub(crate) fn new(core: &'a Core<Slot<T, S>>, first: u64, last: u64) -> Self {
        // The root is loaded under this pin, so the whole version the
        // iteration walks, and every value it yields, stays alive for as
        // long as the pin does.
        let pin = Box::new(SharedPin {
            refs: Cell::new(ITER_SHARE),
            _guard: epoch::pin(),
        });
        // (The root token is made here, under the pin just taken, which the
        // iterator holds until it is dropped.)
        let inner = Iter::new(super::Root::new(core.load_root()), first, last);
        Entries {
            inner,
            pin: NonNull::from(Box::leak(pin)),
            yielded: 0,
        }
    }

    #[inline]
    fn wrap(&mut self, raw: RawEntry<Slot<T, S>>) -> Entry<'a, T, S> {
        // One of the iterator's references passes to the entry. The
        // entries yielded are disjoint ranges of live entries, far fewer
        // than ITER_SHARE.
        self.yielded += 1;
        // SAFETY: a yielded word is never null, and it belongs to the
        // version the pin keeps alive.
        unsafe { Entry::shared(SharedPinRef(self.pin), raw) }
    }
}

impl<T, S: Repr<T>> Drop for Entries<'_, T, S> {
    fn drop(&mut self) {
        // SAFETY: the iterator still holds ITER_SHARE - yielded references.
        unsafe { SharedPinRef::release(self.pin, ITER_SHARE - self.yielded) }
    }
}

impl<'a, T: 'a, S: Repr<T>> Iterator for Entries<'a, T, S> {
    type Item = Entry<'a, T, S>;
    #[inline]
    fn next(&mut self) -> Option<Entry<'a, T, S>> {
        let e = self.inner.next_raw()?;
        Some(self.wrap(e))
    }

    /// The loop of `sum`, `for_each`, `count`, ...: the pin's address stays
    /// in a register, and the common step and the out-of-line one each hand
    /// their entry to `f` directly.
    #[inline]
    fn fold<B, F: FnMut(B, Entry<'a, T, S>) -> B>(mut self, init: B, mut f: F) -> B {
        let pin = self.pin;
        let mut acc = init;
        loop {
            // Each yield is counted before `f` runs, so that a panicking `f`
            // leaves the count right for the drop.
            if let Some(raw) = self.inner.step_fast() {
                self.yielded += 1;
                // SAFETY: as in `wrap`.
                acc = f(acc, unsafe { Entry::shared(SharedPinRef(pin), raw) });
                continue;
            }
            match self.inner.step_slow() {
                Some(raw) => {
                    self.yielded += 1;
                    // SAFETY: as in `wrap`.
                    acc = f(acc, unsafe { Entry::shared(SharedPinRef(pin), raw) });
                }
                None => return acc,
            }
        }
    }
}

impl<'a, T: 'a, S: Repr<T>> DoubleEndedIterator for Entries<'a, T, S> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        let e = self.inner.next_back_raw()?;
        Some(self.wrap(e))
    }
}

impl<'a, T: 'a, S: Repr<T>> FusedIterator for Entries<'a, T, S> {}

impl<T, S: Repr<T>> fmt::Debug for Entries<'_, T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entries").finish_non_exhaustive()
    }
}
