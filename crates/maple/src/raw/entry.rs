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

use crate::epoch::{self, Guard};

use super::{Core, Iter, Writer};
use crate::read::RawEntry;
use crate::value::{Boxed, Cloner, Repr, Slot};
#[allow(unused_imports)] // intra-doc links
use crate::MapleTree;

impl<T, S: Repr<T>> Core<Slot<T, S>> {
    /// The entry containing `index`, under a pin of its own.
    #[inline(always)]
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
        let guard = epoch::pin_fenced();
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
        let guard = epoch::pin_fenced();
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
/// `holders` counts the iterator and each entry alive (and, for a moment,
/// the hold an entry is about to be made with); whoever brings it to zero
/// unpins. The hold for an entry is taken at the very start of the call
/// that yields it (`next`, `next_back`), or, inside `fold`, right after
/// `f` returns for the entry before. So when an entry is dropped at the
/// end of a loop body (`for e in tree.iter()`, `sum`, `for_each` ...), its
/// decrement is followed by the next hold's increment with nothing read in
/// between, and the compiler can fold the pair away: it knows the count is
/// at least two when the entry is made (the iterator and the hold), so that
/// drop is never the last. In a fold it does, and such an entry costs
/// nothing over a [`Reader`](crate::Reader)'s item; in a `for` loop a
/// load, a subtraction and two stores of the count are left, about 5
/// instructions an entry (callgrind: `benches/api_overhead.rs`). An entry
/// that escapes (kept in a `Vec`, say) pays one increment and one
/// decrement.
///
/// The count is a `Cell`: the iterator and its entries are neither `Send`
/// nor `Sync`, so all of them stay on the thread that pinned. It is a
/// `u64` even where `usize` is narrower, and an increment at `u64::MAX`
/// aborts, as `Rc`'s does, so entries leaked with `mem::forget` cannot
/// wrap it.
#[repr(C)]
struct SharedPin {
    holders: Cell<u64>,
    _guard: Guard,
    /// Frees the allocation this header begins ([`IterPin`], whose type
    /// the entries do not know).
    free: unsafe fn(NonNull<SharedPin>),
}

/// The allocation of one iteration: the pin its entries share, then the
/// iterator's own state. The state lives here, not in [`Entries`], so
/// that `Entries` is one pointer that the compiler keeps in a register
/// (a 2 KiB iterator on the caller's stack, whose address the out-of-line
/// steps take, is kept in memory, and then the pin's address is reloaded
/// after every entry's drop, which stops the count's increment and
/// decrement from folding). The state is dead once the iterator is
/// dropped, and freed with the pin.
#[repr(C)]
struct IterPin<'a, T: 'a, S: Repr<T>> {
    pin: SharedPin,
    iter: Iter<'a, T, S>,
}

/// [`SharedPin::free`] for an [`IterPin`] of these types.
///
/// # Safety
/// `p` begins a leaked `Box<IterPin<'a, T, S>>` nobody else can reach.
unsafe fn free_iter_pin<'a, T: 'a, S: Repr<T>>(p: NonNull<SharedPin>) {
    // SAFETY: guaranteed by the caller; `pin` is the first field of the
    // `repr(C)` IterPin, so the header's address is the allocation's.
    drop(unsafe { Box::from_raw(p.as_ptr().cast::<IterPin<'a, T, S>>()) });
}

/// A reference to a [`SharedPin`] held by one entry.
pub(crate) struct SharedPinRef(NonNull<SharedPin>);

impl SharedPinRef {
    /// Adds a holder: a hold for the entry about to be made.
    ///
    /// # Safety
    /// The caller holds a reference to `p`.
    #[inline]
    unsafe fn hold(p: NonNull<SharedPin>) {
        // SAFETY: the pin lives while the caller's reference does.
        let holders = unsafe { &(*p.as_ptr()).holders };
        let n = holders.get();
        if n == u64::MAX {
            // Only entries leaked by the quintillion get here; as `Rc`
            // does, stop rather than let the count wrap.
            std::process::abort();
        }
        holders.set(n + 1);
    }

    /// Tells the compiler that `p` has at least two holders (the caller's
    /// and the hold just taken for an entry), so that the drop of the
    /// entry made with the second cannot be the last.
    ///
    /// # Safety
    /// It is so.
    #[inline]
    unsafe fn assume_two(p: NonNull<SharedPin>) {
        // SAFETY: the pin lives while the caller's reference does.
        if unsafe { (*p.as_ptr()).holders.get() } < 2 {
            // SAFETY: guaranteed by the caller.
            unsafe { std::hint::unreachable_unchecked() }
        }
    }

    /// Takes one holder away; unpins and frees the pin when none is left.
    ///
    /// # Safety
    /// The caller is a holder of `p` and gives that up.
    #[inline]
    unsafe fn release(p: NonNull<SharedPin>) {
        // SAFETY: the pin lives while a holder (the caller) does.
        let holders = unsafe { &(*p.as_ptr()).holders };
        let left = holders.get() - 1;
        if left == 0 {
            // SAFETY: the last holder: nobody else can reach the pin.
            unsafe { SharedPinRef::free(p) };
        } else {
            // Stored only here, so that where a hold is taken right after
            // (the next entry's), this store is dead on every path and
            // goes, even before the compiler has seen that this branch is
            // the only one taken.
            holders.set(left);
        }
    }

    /// Unpins and frees the pin.
    ///
    /// # Safety
    /// No reference to it remains.
    #[cold]
    #[inline(never)]
    unsafe fn free(p: NonNull<SharedPin>) {
        // SAFETY: the header is alive until now; its `free` matches the
        // allocation (set where it was made); nobody can reach it after.
        unsafe { ((*p.as_ptr()).free)(p) }
    }
}

impl Drop for SharedPinRef {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: an entry is one holder.
        unsafe { SharedPinRef::release(self.0) }
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
    /// The pin shared with the entries, of which the iterator is one
    /// holder, and the iteration's state after it. The iteration walks
    /// the version the pin keeps alive, and each value it yields is tied
    /// to a hold on the pin before it escapes.
    pin: NonNull<IterPin<'a, T, S>>,
}

impl<'a, T: 'a, S: Repr<T>> Entries<'a, T, S> {
    pub(crate) fn new(core: &'a Core<Slot<T, S>>, first: u64, last: u64) -> Self {
        // The root is loaded under this pin, so the whole version the
        // iteration walks, and every value it yields, stays alive for as
        // long as the pin does.
        let guard = epoch::pin();
        // (The root token is made here, under the pin just taken, which
        // the iteration holds until the iterator and its entries are gone.)
        let iter = Iter::new(super::Root::new(core.load_root()), first, last);
        let pin = Box::new(IterPin {
            pin: SharedPin {
                holders: Cell::new(1),
                _guard: guard,
                free: free_iter_pin::<'a, T, S>,
            },
            iter,
        });
        Entries {
            pin: NonNull::from(Box::leak(pin)),
        }
    }

    /// The header the entries point to.
    #[inline]
    fn header(&self) -> NonNull<SharedPin> {
        // `pin` is the first field of the repr(C) IterPin.
        self.pin.cast()
    }

    /// The iteration's state.
    #[inline]
    fn inner(&mut self) -> &mut Iter<'a, T, S> {
        // SAFETY: the allocation lives while the iterator (a holder) does,
        // and only the iterator touches this field (entries use only the
        // header), so the borrow is unique for as long as `&mut self`.
        unsafe { &mut (*self.pin.as_ptr()).iter }
    }

    /// Takes a hold for the entry about to be made. `next`, `next_back`
    /// and `fold`'s loop take it first thing, before they read the tree,
    /// so that the drop of the entry yielded last (at the end of a loop's
    /// body) and this increment are adjacent with nothing read in between,
    /// and the compiler folds the pair (see [`SharedPin`]).
    #[inline]
    fn hold(&self) {
        // SAFETY: the iterator is a holder.
        unsafe { SharedPinRef::hold(self.header()) };
    }

    /// Makes the entry for `raw` (or gives the hold back if there is none)
    /// with the hold just taken.
    #[inline]
    fn with_hold(&self, raw: Option<RawEntry<Slot<T, S>>>) -> Option<Entry<'a, T, S>> {
        match raw {
            // SAFETY: the iterator and the hold are two holders; the hold
            // passes to the entry; a yielded word is never null and belongs
            // to the version the pin keeps alive.
            Some(raw) => unsafe {
                SharedPinRef::assume_two(self.header());
                Some(Entry::shared(SharedPinRef(self.header()), raw))
            },
            None => {
                // SAFETY: the hold is the caller's, and unused.
                unsafe { SharedPinRef::release(self.header()) };
                None
            }
        }
    }
}

impl<T, S: Repr<T>> Drop for Entries<'_, T, S> {
    fn drop(&mut self) {
        // SAFETY: the iterator is a holder until now.
        unsafe { SharedPinRef::release(self.header()) }
    }
}

impl<'a, T: 'a, S: Repr<T>> Iterator for Entries<'a, T, S> {
    type Item = Entry<'a, T, S>;
    #[inline]
    fn next(&mut self) -> Option<Entry<'a, T, S>> {
        self.hold();
        let raw = self.inner().next_raw();
        self.with_hold(raw)
    }

    /// The loop of `sum`, `for_each`, `count`, ...: [`Iter`]'s leaf-at-a-time
    /// loop, each entry handed to `f` as it is made, with a hold taken
    /// before the loop or right after `f` returned for the entry before.
    /// If `f` panics, its entry has the hold, none is left over, and the
    /// iterator's drop gives back the iterator's own.
    #[inline]
    fn fold<B, F: FnMut(B, Entry<'a, T, S>) -> B>(mut self, init: B, mut f: F) -> B {
        let pin = self.header();
        self.hold();
        let acc = self.inner().fold_raw(init, |acc, raw| {
            // SAFETY: the iterator and the hold are two holders.
            unsafe { SharedPinRef::assume_two(pin) };
            // SAFETY: the hold passes to the entry; a yielded word is never
            // null and belongs to the version the pin keeps alive.
            let acc = f(acc, unsafe { Entry::shared(SharedPinRef(pin), raw) });
            // The next entry's hold. SAFETY: the iterator is a holder.
            unsafe { SharedPinRef::hold(pin) };
            acc
        });
        // SAFETY: the hold taken after the last entry, unused.
        unsafe { SharedPinRef::release(pin) };
        acc
    }
}

impl<'a, T: 'a, S: Repr<T>> DoubleEndedIterator for Entries<'a, T, S> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        self.hold();
        let raw = self.inner().next_back_raw();
        self.with_hold(raw)
    }
}

impl<'a, T: 'a, S: Repr<T>> FusedIterator for Entries<'a, T, S> {}

impl<T, S: Repr<T>> fmt::Debug for Entries<'_, T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entries").finish_non_exhaustive()
    }
}
