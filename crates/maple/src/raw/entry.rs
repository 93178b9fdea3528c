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

use super::iter::Announce;
use super::{Core, Iter, Writer};
use crate::node::{INT_SLOTS, LEAF_SLOTS};
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

/// A reference to a stored value, as every lookup and iteration hands one
/// out: the `V` of the `(range, V)` pairs that every iterator yields
/// ([`MapleTree::iter`], a [`Reader`](crate::Reader)'s, [`Removed::iter`]),
/// and the value of an [`Entry`]. It dereferences to the value: `T` for a
/// [`Boxed`] tree, the target of
/// [`InlineValue::Borrowed`](crate::InlineValue::Borrowed) for an
/// [`Inline`](crate::Inline) one (an inline `Arc<U>` dereferences to the
/// `Arc<U>`, through a never-dropped copy of it). So `*v` copies a `Copy`
/// value and `v.clone()` clones it, as with a `&T`.
///
/// What keeps the value alive is what it came from: a [`Reader`](crate::Reader)'s
/// pin (then it borrows the reader, and costs nothing to make or drop), the
/// pin an iteration of [`MapleTree::iter`] shares with its items (one held
/// share of it), or a pin of its own ([`MapleTree::get`] and the other
/// point lookups). While it lives, memory that writers retire is not
/// reclaimed. Not `Send`.
pub struct Ref<'a, T: 'a, S: Repr<T> = Boxed> {
    /// The borrowed value, valid while `_pin` pins, never handed out for
    /// longer than a borrow of the `Ref`. Always initialised; held in a
    /// `MaybeUninit` so that it is opaque to the aliasing model: a
    /// reference (`&T`, the `Boxed` view) kept in a plain field would be
    /// retagged and protected for the whole call whenever the `Ref` is
    /// passed by value (to `drop`, say), and the guard unpins inside that
    /// call, after which the value may be freed while still protected (the
    /// hazard `std::cell::Ref` avoids by holding a `NonNull`). Dropped in
    /// `Drop`, before the pin.
    value: MaybeUninit<S::Ref<'a>>,
    _pin: EntryPin,
}

impl<'a, T: 'a, S: Repr<T>> Drop for Ref<'a, T, S> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `value` is always initialised and dropped only here; the
        // pin (dropped after this, with the fields) still pins.
        unsafe { self.value.assume_init_drop() }
    }
}

impl<'a, T: 'a, S: Repr<T>> Ref<'a, T, S> {
    /// # Safety
    /// `v` is a non-null value word that `pin` keeps alive for `'a` (or,
    /// for [`EntryPin::Borrowed`], that the caller's borrow of a pin keeps
    /// alive for `'a`).
    #[inline]
    pub(crate) unsafe fn new(pin: EntryPin, v: *mut Slot<T, S>) -> Self {
        Ref {
            // SAFETY: the pin keeps the value alive for as long as the
            // borrow is reachable (caller).
            value: MaybeUninit::new(unsafe { S::borrow(v.cast()) }),
            _pin: pin,
        }
    }

    /// The pair an iterator yields for a raw entry, under `pin`.
    ///
    /// # Safety
    /// As [`Ref::new`].
    #[inline]
    pub(crate) unsafe fn item(pin: EntryPin, (s, e, v): RawEntry<Slot<T, S>>) -> Item<'a, T, S> {
        // SAFETY: forwarded from the caller.
        (s..=e, unsafe { Ref::new(pin, v) })
    }
}

/// What every iterator over a tree's entries yields: the entry's range and
/// a [`Ref`] to its value.
pub type Item<'a, T, S = Boxed> = (RangeInclusive<u64>, Ref<'a, T, S>);

impl<'a, T: 'a, S: Repr<T>> Deref for Ref<'a, T, S> {
    type Target = <S::Ref<'a> as Deref>::Target;
    #[inline]
    fn deref(&self) -> &Self::Target {
        // SAFETY: always initialised (see the field).
        unsafe { self.value.assume_init_ref() }
    }
}

impl<'a, T: 'a, S: Repr<T>> fmt::Debug for Ref<'a, T, S>
where
    S::Ref<'a>: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: always initialised (see the field).
        unsafe { self.value.assume_init_ref() }.fmt(f)
    }
}

impl<'a, T: 'a, S: Repr<T>> fmt::Display for Ref<'a, T, S>
where
    S::Ref<'a>: fmt::Display,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: always initialised (see the field).
        unsafe { self.value.assume_init_ref() }.fmt(f)
    }
}

impl<'a, T: 'a, S: Repr<T>> PartialEq for Ref<'a, T, S>
where
    S::Ref<'a>: PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        // SAFETY: always initialised (see the field).
        unsafe { self.value.assume_init_ref() == other.value.assume_init_ref() }
    }
}

/// An entry read from the tree: its range and a [`Ref`] to its value,
/// which it dereferences to. What the point lookups return
/// ([`get`](MapleTree::get), [`load`](MapleTree::load), ...) and what a
/// removal through `&self` hands back ([`remove`](MapleTree::remove),
/// [`erase`](MapleTree::erase)); [`into_parts`](Entry::into_parts) gives the
/// `(range, value)` pair that every iterator yields.
///
/// The value stays valid even if a writer removes or replaces the entry
/// meanwhile (see [`Ref`] for what keeps it alive). Not `Send`.
pub struct Entry<'a, T: 'a, S: Repr<T> = Boxed> {
    first: u64,
    last: u64,
    value: Ref<'a, T, S>,
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
            // SAFETY: the guard, moved into the Ref, keeps the value alive
            // (caller).
            value: unsafe { Ref::new(EntryPin::Own(guard), v) },
        })
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
    /// The value (see [`Ref`] for what it is).
    pub fn value(&self) -> &<S::Ref<'a> as Deref>::Target {
        &self.value
    }
    /// The entry as the `(range, value)` pair that iterators yield.
    ///
    /// ```
    /// let tree = aspace_maple::MapleTree::new();
    /// tree.try_insert(10..=19, 'a').unwrap();
    /// let (range, v) = tree.get(15).unwrap().into_parts();
    /// assert_eq!((range, *v), (10..=19, 'a'));
    /// ```
    pub fn into_parts(self) -> Item<'a, T, S> {
        (self.first..=self.last, self.value)
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
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Item<'_, T, S>> + '_ {
        self.parts.iter().map(|&(s, e, v)| {
            // SAFETY: the guard held by self, borrowed for the items' life,
            // delays the value's reclamation (pinned before the removal
            // retired it).
            unsafe { Ref::item(EntryPin::Borrowed, (s, e, v.cast())) }
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

/// What keeps a [`Ref`]'s value alive: its own epoch guard (`load`,
/// `find`, ...), a reference to the pin shared by the items of one
/// iteration ([`Entries`]), or nothing of its own: a pin that the `Ref`'s
/// lifetime borrows (a [`Reader`](crate::Reader)'s, a [`Removed`]'s).
pub(crate) enum EntryPin {
    Own(#[allow(dead_code)] Guard),
    Shared(#[allow(dead_code)] SharedPinRef),
    Borrowed,
}

/// One epoch pin shared by an [`Entries`] iteration and every [`Ref`] it
/// yields, counted by hand, and released when the iterator and the last
/// item it yielded are all gone.
///
/// `holders` counts the iterator, each `Ref` alive, and each entry the
/// iterator has queued to yield next from its front's leaf
/// ([`Iter::queued`]); whoever brings it to zero unpins. A queued entry's
/// hold passes to its item when it is yielded, so `next` takes its holds
/// a leaf at a time: one addition of the leaf's entry count as the front
/// enters a leaf ([`Iter::next_raw_announced`]), none per item. What an
/// item costs is its drop's decrement; when it is dropped inside a loop's
/// body (`for (r, v) in tree.iter()`), the compiler knows it is not the
/// last (the count was at least two when the item was made: the iterator
/// and the item's hold), so that is one decrement in memory and no test.
/// The holds still queued are given back wherever the mask is emptied
/// otherwise (`next_back`, `fold`, the iterator's drop). Inside `fold`,
/// each item's hold is taken right after `f` returns for the item before,
/// so that the drop of an item consumed in `f` and the next hold meet
/// with nothing read in between, and the compiler folds the pair away.
/// An item that escapes (kept in a `Vec`, say) keeps its hold until it is
/// dropped.
///
/// The count is a `Cell`: the iterator and its items are neither `Send`
/// nor `Sync`, so all of them stay on the thread that pinned. It is a
/// `u64` even where `usize` is narrower, and an increment past
/// `u64::MAX` aborts, as `Rc`'s does, so items leaked with `mem::forget`
/// cannot wrap it.
struct SharedPin {
    holders: Cell<u64>,
    _guard: Guard,
}

/// The most holders that a checked hold leaves on a [`SharedPin`]; the
/// unchecked holds of `next`'s moves to sibling leaves stay far below
/// `u64::MAX` from there ([`SharedPinRef::hold_sibling`]).
const HOLDERS_CHECKED: u64 = u64::MAX / 2;

/// Announces the entries that `next` will yield by taking their holds
/// ([`Iter::next_raw_announced`]).
struct Holds(NonNull<SharedPin>);

impl Announce for Holds {
    #[inline(always)]
    fn sibling(&mut self, n: u32) {
        // SAFETY: the iterator, which announces, is a holder; `Announce`
        // bounds `n` and the moves between two `slow` calls.
        unsafe { SharedPinRef::hold_sibling(self.0, n) }
    }
    #[inline]
    fn slow(&mut self, n: u32) {
        // SAFETY: the iterator, which announces, is a holder.
        unsafe { SharedPinRef::hold_n(self.0, n) }
    }
    #[inline(always)]
    fn parent(&mut self, n: u32) {
        // The pin's address through `black_box`, so that the compiler
        // reloads the count here rather than keep it in a register from
        // the `for` loop's item drops, which would split each drop's
        // `dec` of the count in memory into a load, a `dec` and a store
        // (`BENCHMARKS.md`, sixth pass).
        // SAFETY: as in `slow`.
        unsafe { SharedPinRef::hold_n(std::hint::black_box(self.0), n) }
    }
}

/// Stops the process where a [`SharedPin`]'s count would pass its bound.
///
/// `extern "C"`, which cannot unwind, so that the compiler knows the holds
/// taken inside a `for` loop cannot unwind either: a call to
/// `std::process::abort` itself counts as one that might, and its cleanup
/// path kept the iterator (its cursor and pin pointer) in memory, stored
/// and reloaded on every entry (17.10 instructions an entry of a `for`
/// loop over `tree.iter()` before, see `BENCHMARKS.md`).
#[cold]
#[inline(never)]
extern "C" fn holders_overflow() -> ! {
    std::process::abort()
}

/// A reference to a [`SharedPin`] held by one [`Ref`].
pub(crate) struct SharedPinRef(NonNull<SharedPin>);

impl SharedPinRef {
    /// Adds a holder: a hold for the item about to be made, inside a
    /// `fold`, which consumes the iterator, so that no unchecked hold
    /// follows ([`SharedPinRef::hold_sibling`]): it stops the process only
    /// rather than let the count wrap, a test that the compiler drops
    /// where the item before was dropped just before (the count was at
    /// least two when it was made, so at most `u64::MAX - 1` after).
    ///
    /// # Safety
    /// The caller holds a reference to `p`.
    #[inline]
    unsafe fn hold_in_fold(p: NonNull<SharedPin>) {
        // SAFETY: the pin lives while the caller's reference does.
        let holders = unsafe { &(*p.as_ptr()).holders };
        let n = holders.get();
        if n == u64::MAX {
            // Only items leaked by the quintillion get here; as `Rc`
            // does, stop rather than let the count wrap.
            holders_overflow();
        }
        holders.set(n + 1);
    }

    /// Adds `n` holders: holds for items to be made. Stops the process
    /// rather than let the count pass [`HOLDERS_CHECKED`].
    ///
    /// # Safety
    /// The caller holds a reference to `p`.
    #[inline]
    unsafe fn hold_n(p: NonNull<SharedPin>, n: u32) {
        // SAFETY: the pin lives while the caller's reference does.
        let holders = unsafe { &(*p.as_ptr()).holders };
        let m = holders.get() + u64::from(n);
        if m > HOLDERS_CHECKED {
            // Only items leaked by the quintillion get here; as `Rc`
            // does, stop rather than let the count wrap.
            holders_overflow();
        }
        holders.set(m);
    }

    /// Adds the holds for a sibling leaf's `n` entries, unchecked: the
    /// count starts at one and is at most [`HOLDERS_CHECKED`] after every
    /// checked [`hold_n`](SharedPinRef::hold_n); between two of those,
    /// `next` announces at most `INT_SLOTS - 1` sibling leaves of at most
    /// `LEAF_SLOTS` entries ([`Announce`]), so it cannot wrap. (The only
    /// other holds, [`hold_in_fold`](SharedPinRef::hold_in_fold)'s, come
    /// once the iterator is consumed, when no sibling hold follows.)
    ///
    /// # Safety
    /// The caller holds a reference to `p`; `n <= LEAF_SLOTS`, announced
    /// as [`Announce::sibling`] says.
    #[inline(always)]
    unsafe fn hold_sibling(p: NonNull<SharedPin>, n: u32) {
        // SAFETY: the pin lives while the caller's reference does.
        let holders = unsafe { &(*p.as_ptr()).holders };
        debug_assert!(holders.get() < HOLDERS_CHECKED + (INT_SLOTS * LEAF_SLOTS) as u64);
        holders.set(holders.get() + u64::from(n));
    }

    /// Tells the compiler that `p` has at least two holders (the caller's
    /// and the hold just taken for an item), so that the drop of the item
    /// made with the second cannot be the last.
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
        // SAFETY: forwarded.
        unsafe { SharedPinRef::release_n(p, 1) }
    }

    /// Takes `n` holders away; unpins and frees the pin when none is left.
    ///
    /// # Safety
    /// The caller has `n` holds on `p` and gives them up.
    #[inline]
    unsafe fn release_n(p: NonNull<SharedPin>, n: u32) {
        // SAFETY: the pin lives while a holder (the caller) does.
        let holders = unsafe { &(*p.as_ptr()).holders };
        let left = holders.get() - u64::from(n);
        if left == 0 {
            // SAFETY: the last holder: nobody else can reach the pin.
            unsafe { SharedPinRef::free(p) };
        } else {
            // Stored only here, so that where a hold is taken right after
            // (the next item's, in `fold`), this store is dead on every
            // path and goes, even before the compiler has seen that this
            // branch is the only one taken.
            holders.set(left);
        }
    }

    /// The iterator's drop: takes its hold away, and those of the `queued`
    /// entries (one a bit).
    ///
    /// # Safety
    /// The caller is the iterator, and holds one hold a bit of `queued`.
    #[inline(always)]
    unsafe fn release_iterator(p: NonNull<SharedPin>, queued: u32) {
        // SAFETY: forwarded.
        unsafe { SharedPinRef::release_n(p, 1 + crate::node::bits_set(queued)) }
    }

    /// Unpins and frees the pin.
    ///
    /// # Safety
    /// No reference to it remains.
    #[cold]
    #[inline(never)]
    unsafe fn free(p: NonNull<SharedPin>) {
        // SAFETY: allocated as a Box in `Entries::new`; nobody can reach it
        // after.
        drop(unsafe { Box::from_raw(p.as_ptr()) });
    }
}

impl Drop for SharedPinRef {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: a Ref is one holder.
        unsafe { SharedPinRef::release(self.0) }
    }
}

/// An iterator over a tree's entries, from [`MapleTree::iter`] or
/// [`MapleTree::range`], or `&tree` in a `for` loop: `(range, value)`
/// pairs, as every iterator over entries yields ([`Item`]).
///
/// It pins the epoch once, when it is created, and walks the version it
/// found then, with a [`Reader`](crate::Reader)'s contract; the [`Ref`]s it
/// yields share that pin: each keeps it, and so its value, alive on its
/// own. An item may therefore outlive the iterator, and the iterator may be
/// dropped while items it yielded are still in use; the shared pin is
/// released when the iterator and the last item it yielded are all gone
/// (until then, memory retired by writers is not reclaimed). Items stay on
/// the thread that iterated: neither the iterator nor a [`Ref`] is `Send`.
///
/// Where the values are plain words in the slot (an
/// [`Inline`](crate::Inline) tree of [`XValue`](crate::XValue), `u32` or
/// `&'static U`: [`InlineValue`](crate::InlineValue)'s `WORD_IS_COPY`),
/// an item's value is a copy of its word, valid without any pin: the items
/// then share nothing, the pin goes with the iterator, and a `for` loop
/// costs what one over a [`Reader`](crate::Reader) does.
pub struct Entries<'a, T: 'a, S: Repr<T> = Boxed> {
    /// The pin shared with the items, of which the iterator is one holder.
    /// The iteration walks the version the pin keeps alive, and each value
    /// it yields is tied to a hold on the pin before it escapes.
    pin: NonNull<SharedPin>,
    /// Dropped in `Drop`, out of line, after the pin's count.
    iter: std::mem::ManuallyDrop<Iter<'a, T, S>>,
}

impl<'a, T: 'a, S: Repr<T>> Entries<'a, T, S> {
    /// Whether the items hold a share of the pin. Not where the value is
    /// a plain word ([`Repr::WORD_IS_COPY`]: an in-slot integer or
    /// `&'static`): its [`Ref`] is a copy of the word, valid for `'a`
    /// whether or not the value stays in the tree (the trait's promise,
    /// [`InlineValue`](crate::InlineValue)), so it needs no pin, and
    /// its drop does nothing, as a [`Reader`](crate::Reader)'s item's
    /// (`BENCHMARKS.md`, s40). The iterator still pins the version it
    /// walks, until it is dropped.
    const HOLDS: bool = !S::WORD_IS_COPY;

    // Inlined, so that the iterator is made in the caller's registers
    // rather than written through a pointer to the caller's frame, which
    // kept it in memory there (its cursor stored on every entry of a `for`
    // loop).
    #[inline(always)]
    pub(crate) fn new(core: &'a Core<Slot<T, S>>, first: u64, last: u64) -> Self {
        // The root is loaded under this pin, so the whole version the
        // iteration walks, and every value it yields, stays alive for as
        // long as the pin does.
        let guard = epoch::pin();
        // (The root token is made here, under the pin just taken, which
        // the iteration holds until the iterator and its items are gone.)
        let iter = Iter::new(super::Root::new(core.load_root()), first, last);
        let pin = Box::new(SharedPin {
            holders: Cell::new(1),
            _guard: guard,
        });
        Entries {
            pin: NonNull::from(Box::leak(pin)),
            iter: std::mem::ManuallyDrop::new(iter),
        }
    }

    /// Takes a hold for the item that `next_back` is about to make (the
    /// front's holds are taken a leaf at a time, and `fold`'s with
    /// [`SharedPinRef::hold_in_fold`]).
    #[inline]
    fn hold(&self) {
        if Self::HOLDS {
            // SAFETY: the iterator is a holder.
            unsafe { SharedPinRef::hold_n(self.pin, 1) };
        }
    }

    /// Brings the holds for the front's queued entries to what
    /// [`Iter::queued`] says now, from `before`, what it said when they
    /// last matched: a call that empties or refills the front's mask other
    /// than `next`'s steps (`next_back`'s) calls this after.
    #[inline]
    fn requeue(&self, before: u32) {
        if !Self::HOLDS {
            return;
        }
        let after = self.iter.queued();
        if after > before {
            // SAFETY: the iterator is a holder.
            unsafe { SharedPinRef::hold_n(self.pin, after - before) };
        } else if after < before {
            // SAFETY: the iterator holds one hold per entry queued before.
            unsafe { SharedPinRef::release_n(self.pin, before - after) };
        }
    }

    /// Makes the item for `raw` (or gives the hold back if there is none)
    /// with the hold just taken.
    #[inline]
    fn with_hold(&self, raw: Option<RawEntry<Slot<T, S>>>) -> Option<Item<'a, T, S>> {
        match raw {
            // SAFETY: the hold passes to the item.
            Some(raw) => Some(unsafe { self.item(raw) }),
            None => {
                if Self::HOLDS {
                    // SAFETY: the hold is the caller's, and unused.
                    unsafe { SharedPinRef::release(self.pin) };
                }
                None
            }
        }
    }

    /// Makes the item for `raw` with a hold the caller has.
    ///
    /// # Safety
    /// Where the items hold ([`Entries::HOLDS`]), the caller has a hold on
    /// the pin, besides the iterator's, and gives it to the item; `raw`
    /// was yielded by the iteration.
    #[inline(always)]
    unsafe fn item(&self, raw: RawEntry<Slot<T, S>>) -> Item<'a, T, S> {
        // SAFETY: forwarded.
        unsafe { Self::item_under(self.pin, raw) }
    }

    /// [`Entries::item`] from the pin's pointer (for `fold`'s closure).
    ///
    /// # Safety
    /// As [`Entries::item`], for the iteration of `pin`.
    #[inline(always)]
    unsafe fn item_under(pin: NonNull<SharedPin>, raw: RawEntry<Slot<T, S>>) -> Item<'a, T, S> {
        if Self::HOLDS {
            // SAFETY: the iterator and the hold are two holders; a
            // yielded word is never null and belongs to the version the
            // pin keeps alive.
            unsafe {
                SharedPinRef::assume_two(pin);
                Ref::item(EntryPin::Shared(SharedPinRef(pin)), raw)
            }
        } else {
            // SAFETY: a yielded word is never null; it is a plain word
            // (`WORD_IS_COPY`), whose borrow stays valid for `'a` without
            // a pin (`InlineValue`'s safety section).
            unsafe { Ref::item(EntryPin::Borrowed, raw) }
        }
    }
}

impl<T, S: Repr<T>> Drop for Entries<'_, T, S> {
    /// Inlined, with the heap block's give-back out of line, so that the
    /// drop is small enough to be inlined where it is called and the
    /// iterator's address does not escape the caller's loop (see
    /// [`Iter`]'s `fr`; with the block's give-back inline, a `for` loop
    /// stored its cursor every entry: 20.6 instructions an entry against
    /// 17.1).
    #[inline(always)]
    fn drop(&mut self) {
        // The iterator's hold, and where the items hold, one per entry its
        // front has queued.
        let queued = if Self::HOLDS {
            self.iter.queued_mask()
        } else {
            0
        };
        // SAFETY: the iterator is a holder until now, and holds one hold
        // per bit of `queued`.
        unsafe { SharedPinRef::release_iterator(self.pin, queued) }
        // SAFETY: `iter` is not used again.
        unsafe { std::mem::ManuallyDrop::take(&mut self.iter) }.drop_out_of_line();
    }
}

impl<'a, T: 'a, S: Repr<T>> Iterator for Entries<'a, T, S> {
    type Item = Item<'a, T, S>;
    // An entry queued in the front's leaf, whose hold was taken with the
    // leaf's (see `SharedPin`), or a step that takes the holds for what it
    // yields and queues.
    #[inline(always)]
    fn next(&mut self) -> Option<Item<'a, T, S>> {
        // The holds announced are the entries', each passed to its item
        // when it is yielded (or given back when the queue is emptied);
        // none where the items hold none.
        let raw = if Self::HOLDS {
            self.iter.next_raw_announced(&mut Holds(self.pin))
        } else {
            self.iter.next_raw()
        };
        // SAFETY: every entry yielded was announced, and its hold is
        // passed to the item.
        raw.map(|raw| unsafe { self.item(raw) })
    }

    /// The loop of `sum`, `for_each`, `count`, ...: [`Iter`]'s leaf-at-a-time
    /// loop, each item handed to `f` as it is made, with a hold taken
    /// before the loop or right after `f` returned for the item before.
    /// If `f` panics, its item has the hold, none is left over, and the
    /// iterator's drop gives back the iterator's own.
    #[inline]
    fn fold<B, F: FnMut(B, Item<'a, T, S>) -> B>(mut self, init: B, mut f: F) -> B {
        let pin = self.pin;
        if !Self::HOLDS {
            return self.iter.fold_raw(init, |acc, raw| {
                // SAFETY: items need no hold (`Entries::HOLDS`).
                f(acc, unsafe { Self::item_under(pin, raw) })
            });
        }
        // The fold takes its entries one by one, from the checked steps
        // and its own scans: give back the holds of those queued.
        let queued = self.iter.queued();
        self.iter.unqueue();
        self.requeue(queued);
        // SAFETY: the iterator is a holder.
        unsafe { SharedPinRef::hold_in_fold(pin) };
        let acc = self.iter.fold_raw(init, |acc, raw| {
            // SAFETY: the iterator and the hold are two holders.
            unsafe { SharedPinRef::assume_two(pin) };
            // SAFETY: the hold passes to the item; a yielded word is never
            // null and belongs to the version the pin keeps alive.
            let acc = f(acc, unsafe {
                Ref::item(EntryPin::Shared(SharedPinRef(pin)), raw)
            });
            // The next item's hold. SAFETY: the iterator is a holder.
            unsafe { SharedPinRef::hold_in_fold(pin) };
            acc
        });
        // SAFETY: the hold taken after the last item, unused.
        unsafe { SharedPinRef::release(pin) };
        acc
    }
}

impl<'a, T: 'a, S: Repr<T>> DoubleEndedIterator for Entries<'a, T, S> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        // The back's step may empty the front's queue (where it reaches
        // the front's leaf): the holds follow it.
        let queued = self.iter.queued();
        self.hold();
        let raw = self.iter.next_back_raw();
        self.requeue(queued);
        self.with_hold(raw)
    }
}

impl<'a, T: 'a, S: Repr<T>> FusedIterator for Entries<'a, T, S> {}

impl<T, S: Repr<T>> fmt::Debug for Entries<'_, T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entries").finish_non_exhaustive()
    }
}

// A `Reader`'s iterator ([`Iter`], `raw::iter`) yields the items defined
// here; its `Iterator` impls live here, so that `raw::iter` depends on
// nothing in this module (this module builds `Entries` on `Iter`).
impl<'s, T, S: Repr<T>> Iterator for Iter<'s, T, S> {
    type Item = Item<'s, T, S>;

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let raw = self.next_raw()?;
        // SAFETY: the value lives as long as the version 's keeps alive
        // (the Reader's pin, which 's borrows).
        Some(unsafe { Ref::item(EntryPin::Borrowed, raw) })
    }

    #[inline]
    fn fold<B, F: FnMut(B, Self::Item) -> B>(mut self, init: B, mut f: F) -> B {
        self.fold_raw(init, |acc, raw| {
            // SAFETY: as in `next`.
            f(acc, unsafe { Ref::item(EntryPin::Borrowed, raw) })
        })
    }
}

impl<'s, T, S: Repr<T>> DoubleEndedIterator for Iter<'s, T, S> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let raw = self.next_back_raw()?;
        // SAFETY: as in `next`.
        Some(unsafe { Ref::item(EntryPin::Borrowed, raw) })
    }
}

impl<T, S: Repr<T>> FusedIterator for Iter<'_, T, S> {}
