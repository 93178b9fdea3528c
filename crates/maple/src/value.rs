//! How a value lives in a leaf slot: boxed ([`Boxed`], the default) or in
//! the slot word itself ([`Inline`], for pointer-like values that implement
//! [`InlineValue`]).
//!
//! A leaf slot is one machine word, read and written atomically (an
//! exact-fit write replaces it with one release store while readers load
//! it). [`Boxed`] puts any `T` in a `Box` and stores the box's pointer.
//! [`Inline`] stores the word a value turns itself into
//! ([`InlineValue::into_word`]): an `Arc`'s or a `Box`'s pointer, a
//! `&'static` reference, or a small integer encoded as the kernel's
//! `xa_mk_value` encodes one. The tree owns each stored word as it owned
//! the box: it turns the word back into the value
//! ([`InlineValue::from_word`]) exactly once, to drop it or hand it back.
//!
//! # What readers get
//!
//! A reader never holds a reference into a slot (a concurrent exact-fit
//! store into it would be a data race). It copies the word with one
//! acquire load and hands out [`InlineValue::borrow`] of that copy: for an
//! `Arc`, a [`ValueRef`] (a bitwise copy of the `Arc` that is never
//! dropped, so it dereferences to the `Arc` and `.clone()` gives an owned
//! `Arc`), for a `Box<U>` a `&U` (never a second `Box`), for a `&'static U`
//! a [`ValueRef`] of it, for an [`XValue`] a [`ValueRef`] of it. What the
//! borrow points to stays alive while the reader's epoch guard is pinned:
//! a replaced or erased word is turned back into its value and dropped
//! only after every guard pinned before its removal is gone, exactly as a
//! replaced box is freed.

use crate::boxes::Home;
use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::ptr::{self, NonNull};
use std::sync::Arc;

/// A value that can live in a tree's slot word itself, without a box: the
/// tree's [`Inline`] representation (`MapleTree<T, Inline>`). After the
/// kernel Rust bindings' `ForeignOwnable`: the value turns into one
/// non-null word and back, and can be borrowed from the word.
///
/// Implemented for `Arc<U>`, `Box<U>`, `&'static U` and [`XValue`] (and
/// `u32`, on 64-bit targets).
///
/// ```
/// use std::sync::Arc;
/// use aspace_maple::{Inline, MapleTree};
///
/// let tree: MapleTree<Arc<String>, Inline> = MapleTree::new_inline();
/// tree.insert(0..10, Arc::new("a".to_string())).unwrap();
/// let e = tree.load(3).unwrap();
/// let owned: Arc<String> = (*e).clone(); // a reference count, no copy
/// assert_eq!(*owned, "a");
/// assert_eq!(Arc::strong_count(&owned), 2);
/// ```
///
/// # Safety
///
/// An implementation promises, for every word `w = v.into_word()`:
/// - `w` is not null and [`from_word`](Self::from_word)`(w)` gives back `v`
///   (the tree calls it at most once per word it stored, to drop the value
///   or hand it back, and never after that uses `w` again);
/// - until then, [`borrow`](Self::borrow)`(w)` may be called any number of
///   times, from any threads, concurrently with each other and with
///   [`clone_word`](Self::clone_word)`(w)`, and each borrow stays valid for
///   its lifetime `'a` provided the value is not dropped within `'a`. A
///   borrow must not assume it is the only access to the value (no `&mut`,
///   no second `Box` to the same memory), and must not hold any reference
///   to the slot the word was loaded from: it is built from a copy of the
///   word;
/// - `clone_word(w)` returns the word of a clone of the value (a new word
///   the tree then owns), reading the value only through shared access;
/// - if `WORD_IS_COPY` is `true`, `w` itself is such a word: the tree may
///   hold `w` twice (in two trees) and call `from_word` on each, without
///   calling `clone_word`; and a borrow does not depend on the value being
///   alive: it stays valid for its whole lifetime `'a` even after the
///   tree's value was dropped (the word owns nothing, as an integer or a
///   `&'static` does), so the items of an iteration
///   ([`MapleTree::iter`](crate::MapleTree::iter)) keep no pin for it.
///
/// The tree calls `from_word` for the final drop only after every borrow
/// of the word has ended (epoch-based reclamation), so a borrow may read
/// the value's memory for as long as it lives.
pub unsafe trait InlineValue: Sized {
    /// What a reader gets for a stored value: a shared view built from a
    /// copy of the slot word.
    type Borrowed<'a>: Deref
    where
        Self: 'a;

    /// Whether a copy of the word is a clone of the value, with nothing
    /// to count or allocate (a `Copy` value held in the word itself, or a
    /// `&'static` reference): then [`dup`](crate::MapleTree::dup) copies
    /// each leaf whole and never visits its values, and the items of
    /// [`MapleTree::iter`](crate::MapleTree::iter) hold no share of its
    /// pin. `false` unless an implementation promises it (see the trait's
    /// safety section).
    #[doc(hidden)]
    const WORD_IS_COPY: bool = false;

    /// The value as one non-null word, owned by the caller from now on.
    fn into_word(self) -> NonNull<()>;

    /// The value back from its word.
    ///
    /// # Safety
    /// `word` came from [`into_word`](Self::into_word) and was not turned
    /// back before; no borrow of it outlives this call.
    unsafe fn from_word(word: NonNull<()>) -> Self;

    /// A shared view of the value behind `word`.
    ///
    /// # Safety
    /// `word` came from [`into_word`](Self::into_word) and the value is
    /// not dropped during `'a`.
    unsafe fn borrow<'a>(word: NonNull<()>) -> Self::Borrowed<'a>;

    /// The word of a clone of the value behind `word`. The default clones
    /// a bitwise copy of the value that is never dropped; an implementation
    /// for which such a copy is unsound (`Box`) overrides it.
    ///
    /// # Safety
    /// As [`borrow`](Self::borrow), for the duration of the call.
    unsafe fn clone_word(word: NonNull<()>) -> NonNull<()>
    where
        Self: Clone,
    {
        // SAFETY: the caller guarantees the value is alive; the copy is
        // never dropped, so the value keeps exactly one owner (the tree),
        // and Clone reads it through a shared reference only. Sound for
        // every implementation that does not override this (their values
        // may be duplicated bitwise as long as only one copy is dropped).
        let copy = ManuallyDrop::new(unsafe { Self::from_word(word) });
        Self::into_word((*copy).clone())
    }
}

/// A borrowed value of an [`Inline`] tree: a bitwise copy of the stored
/// value that is never dropped, valid for `'a` (while the epoch guard of
/// the read that produced it is pinned). It dereferences to the value, so
/// `(*v).clone()`, or `v.clone()` where `T` has no method `clone` of its
/// own, clones the value itself (for an `Arc`, a reference count).
///
/// Not `Clone`: a copy of the view is `&*v`.
pub struct ValueRef<'a, T> {
    copy: ManuallyDrop<T>,
    _life: PhantomData<&'a T>,
}

impl<T> ValueRef<'_, T> {
    /// # Safety
    /// `copy` is a bitwise copy of a value the tree owns that stays alive
    /// for `'a`, and duplicating `T` bitwise is sound as long as only one
    /// copy is ever dropped (true of `Arc`, `&'static` and `Copy` types).
    unsafe fn new(copy: T) -> Self {
        ValueRef {
            copy: ManuallyDrop::new(copy),
            _life: PhantomData,
        }
    }
}

impl<T> Deref for ValueRef<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.copy
    }
}

impl<T: fmt::Debug> fmt::Debug for ValueRef<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: fmt::Display> fmt::Display for ValueRef<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: PartialEq> PartialEq for ValueRef<'_, T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Eq> Eq for ValueRef<'_, T> {}

// SAFETY: an Arc's word is `Arc::into_raw`, a pointer to the shared value;
// `from_word` is `Arc::from_raw`. A borrow is a bitwise copy of the Arc that
// is never dropped: it holds no reference to the slot, only the pointer to
// the ArcInner, which the tree's own reference keeps alive for `'a`; Arc
// gives shared access only, so many copies may coexist.
unsafe impl<U: Send + Sync> InlineValue for Arc<U> {
    type Borrowed<'a>
        = ValueRef<'a, Arc<U>>
    where
        U: 'a;

    #[inline]
    fn into_word(self) -> NonNull<()> {
        // SAFETY: Arc::into_raw never returns null.
        unsafe { NonNull::new_unchecked(Arc::into_raw(self).cast_mut().cast()) }
    }

    #[inline]
    unsafe fn from_word(word: NonNull<()>) -> Self {
        // SAFETY: word came from Arc::into_raw and is turned back once.
        unsafe { Arc::from_raw(word.as_ptr().cast::<U>()) }
    }

    #[inline]
    unsafe fn borrow<'a>(word: NonNull<()>) -> ValueRef<'a, Arc<U>> {
        // SAFETY: see the impl's comment; the copy is never dropped.
        unsafe { ValueRef::new(Arc::from_raw(word.as_ptr().cast::<U>())) }
    }

    #[inline]
    unsafe fn clone_word(word: NonNull<()>) -> NonNull<()> {
        // SAFETY: the value is alive (caller): one more strong reference,
        // owned by the returned word (the same pointer).
        unsafe { Arc::increment_strong_count(word.as_ptr().cast::<U>()) };
        word
    }
}

// SAFETY: a Box's word is `Box::into_raw`; `from_word` is `Box::from_raw`,
// called once. A borrow is a `&U` made from the raw pointer, never a Box,
// so no second unique owner of the memory is ever materialised while
// readers hold shared references to it; clone_word clones through that
// `&U` into a new Box.
unsafe impl<U: Send + Sync> InlineValue for Box<U> {
    type Borrowed<'a>
        = &'a U
    where
        U: 'a;

    #[inline]
    fn into_word(self) -> NonNull<()> {
        // SAFETY: Box::into_raw never returns null.
        unsafe { NonNull::new_unchecked(Box::into_raw(self).cast()) }
    }

    #[inline]
    unsafe fn from_word(word: NonNull<()>) -> Self {
        // SAFETY: word came from Box::into_raw and is turned back once.
        unsafe { Box::from_raw(word.as_ptr().cast::<U>()) }
    }

    #[inline]
    unsafe fn borrow<'a>(word: NonNull<()>) -> &'a U {
        // SAFETY: the box is alive for 'a (caller) and only shared
        // references to it exist while it is stored.
        unsafe { &*word.as_ptr().cast::<U>() }
    }

    unsafe fn clone_word(word: NonNull<()>) -> NonNull<()>
    where
        Self: Clone,
    {
        // `Box<U>: Clone` does not let this generic body name `U: Clone`,
        // so the clone goes through `<Box<U> as Clone>::clone` on a
        // reference to a local word holding the box's bits (a Box<U> of
        // Sized U is guaranteed to be represented as the pointer that
        // `Box::into_raw` returns). Only a `&Box<U>` is created, never a
        // Box value, so nothing retags the memory as uniquely owned; Clone
        // for Box reads the pointee through a shared reference.
        let bits: *mut U = word.as_ptr().cast();
        // SAFETY: as explained above; the value is alive (caller).
        #[allow(clippy::borrowed_box)] // the point: a reference, not a Box
        let as_box: &Box<U> = unsafe { &*(ptr::addr_of!(bits).cast::<Box<U>>()) };
        Self::into_word(as_box.clone())
    }
}

// SAFETY: the word is the reference itself; nothing is owned, so from_word
// and a borrow (a copy of the reference) are always valid.
unsafe impl<U: Sync + 'static> InlineValue for &'static U {
    type Borrowed<'a> = ValueRef<'a, &'static U>;

    // A copy of the value is a copy of its word.
    const WORD_IS_COPY: bool = true;

    #[inline]
    fn into_word(self) -> NonNull<()> {
        NonNull::from(self).cast()
    }

    #[inline]
    unsafe fn from_word(word: NonNull<()>) -> Self {
        // SAFETY: word came from a &'static U.
        unsafe { &*word.as_ptr().cast::<U>() }
    }

    #[inline]
    unsafe fn borrow<'a>(word: NonNull<()>) -> ValueRef<'a, &'static U> {
        // SAFETY: a shared reference may be copied freely.
        unsafe { ValueRef::new(Self::from_word(word)) }
    }
}

/// A small integer stored in the slot word itself, encoded as the kernel's
/// `xa_mk_value` encodes one (`v << 1 | 1`: never null, no allocation):
/// at most [`XValue::MAX`] (`usize::MAX >> 1`).
///
/// ```
/// use aspace_maple::{Inline, MapleTree, XValue};
///
/// let tree: MapleTree<XValue, Inline> = MapleTree::new_inline();
/// tree.insert(0..10, XValue::new(7).unwrap()).unwrap();
/// assert_eq!(tree.load(5).map(|e| e.get()), Some(7));
/// assert!(XValue::new(usize::MAX).is_none());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct XValue(usize);

impl XValue {
    /// The largest value that fits: `usize::MAX >> 1`.
    pub const MAX: usize = usize::MAX >> 1;

    /// `v` as an inline value; `None` above [`XValue::MAX`].
    #[inline]
    pub const fn new(v: usize) -> Option<Self> {
        if v <= Self::MAX {
            Some(XValue(v))
        } else {
            None
        }
    }

    /// The integer.
    #[inline]
    pub const fn get(self) -> usize {
        self.0
    }
}

// SAFETY: the word is `v << 1 | 1` (never null; no provenance, nothing
// owned); from_word and a borrow (a copy of the integer) are always valid.
unsafe impl InlineValue for XValue {
    type Borrowed<'a> = ValueRef<'a, XValue>;

    // A copy of the value is a copy of its word.
    const WORD_IS_COPY: bool = true;

    #[inline]
    fn into_word(self) -> NonNull<()> {
        // An integer-to-pointer cast (no provenance: never dereferenced;
        // `ptr::without_provenance_mut` is newer than the crate's MSRV).
        let word = ((self.0 << 1) | 1) as *mut ();
        // SAFETY: the low bit is set, so the word is not null; `self.0 <=
        // usize::MAX >> 1`, so the shift loses nothing.
        unsafe { NonNull::new_unchecked(word) }
    }

    #[inline]
    unsafe fn from_word(word: NonNull<()>) -> Self {
        XValue(word.as_ptr() as usize >> 1)
    }

    #[inline]
    unsafe fn borrow<'a>(word: NonNull<()>) -> ValueRef<'a, XValue> {
        // SAFETY: XValue is Copy.
        unsafe { ValueRef::new(Self::from_word(word)) }
    }
}

// SAFETY: as for XValue: a u32 always fits in a 64-bit word beside the tag.
#[cfg(target_pointer_width = "64")]
unsafe impl InlineValue for u32 {
    type Borrowed<'a> = ValueRef<'a, u32>;

    // A copy of the value is a copy of its word.
    const WORD_IS_COPY: bool = true;

    #[inline]
    fn into_word(self) -> NonNull<()> {
        let word = (((self as usize) << 1) | 1) as *mut ();
        // SAFETY: low bit set: not null.
        unsafe { NonNull::new_unchecked(word) }
    }

    #[inline]
    unsafe fn from_word(word: NonNull<()>) -> Self {
        (word.as_ptr() as usize >> 1) as u32
    }

    #[inline]
    unsafe fn borrow<'a>(word: NonNull<()>) -> ValueRef<'a, u32> {
        // SAFETY: u32 is Copy.
        unsafe { ValueRef::new(Self::from_word(word)) }
    }
}

/// A value that a write may cut in two: `Clone`, for the right-hand part of
/// an entry split by a store into its middle. Implemented for every `Clone`
/// type; it exists for the compile error, which names the ways out where
/// `T` is not `Clone` (a value holding a `Mutex`, say): store an `Arc<T>`
/// (an `Arc` is `Clone` whatever it holds, and cloning it counts a
/// reference), or write with [`try_insert`](crate::MapleTree::try_insert) /
/// [`insert_range`](crate::MapleTree::insert_range), which never split an
/// entry and need no `Clone`.
///
/// The writes that need it: [`insert`](crate::MapleTree::insert) /
/// [`store_range`](crate::MapleTree::store_range) /
/// [`store`](crate::MapleTree::store), [`punch_hole`](crate::MapleTree::punch_hole) /
/// [`remove_range`](crate::MapleTree::remove_range), `collect` and
/// `extend`, and a [`Cursor`](crate::Cursor)'s `store_range`.
///
/// ```compile_fail,E0277
/// use std::sync::Mutex;
///
/// let tree = aspace_maple::MapleTree::new();
/// tree.insert(0..=9, Mutex::new(0)).unwrap(); // error: `Mutex<i32>` cannot be split
/// ```
///
/// ```
/// use std::sync::{Arc, Mutex};
///
/// let shared = aspace_maple::MapleTree::new();
/// shared.insert(0..=9, Arc::new(Mutex::new(0))).unwrap(); // cloned by a count
/// shared.insert(3..=4, Arc::new(Mutex::new(1))).unwrap(); // splits [0, 9]
/// let plain = aspace_maple::MapleTree::new();
/// plain.try_insert(20..=29, Mutex::new(1)).unwrap(); // never splits: no `Clone`
/// *plain.get(25).unwrap().lock().unwrap() += 1;
/// assert_eq!(*plain.get(20).unwrap().lock().unwrap(), 2);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be split: this write may cut an entry in two, and the right part needs a clone of the value",
    label = "needs `{Self}: Clone`",
    note = "store an `Arc<{Self}>` instead (an `Arc` is `Clone` whatever it holds, and a clone counts a reference), or use `try_insert` / `insert_range`, which never split an entry and need no `Clone`"
)]
pub trait SplitValue: Clone {}

impl<T: Clone> SplitValue for T {}

mod sealed {
    pub trait Sealed {}
}

/// How a tree stores its values: [`Boxed`] (the default: any `T`, one box
/// per value) or [`Inline`] (a `T:` [`InlineValue`] in the slot word).
/// Sealed: the two are the only implementations.
///
/// The methods are the tree's internal plumbing (hidden from the docs).
pub trait Repr<T>: sealed::Sealed + Sized + 'static {
    /// What readers get for a stored value: `&'a T` for [`Boxed`],
    /// [`InlineValue::Borrowed`] for [`Inline`].
    type Ref<'a>: Deref
    where
        T: 'a;

    /// Bytes each stored value occupies outside the node (for
    /// [`MemoryUsage`](crate::MemoryUsage)).
    #[doc(hidden)]
    const OUT_OF_LINE_BYTES: usize;

    /// Whether the word is a box that the thread pools recycle
    /// (`boxes.rs`).
    #[doc(hidden)]
    const POOLED_BOX: bool;

    /// Whether a copy of a stored word is a clone of its value
    /// ([`InlineValue::WORD_IS_COPY`]; never for a box).
    #[doc(hidden)]
    const WORD_IS_COPY: bool;

    #[doc(hidden)]
    fn into_word(v: T) -> *mut ();

    /// # Safety
    /// `w` came from `into_word` and is turned back once.
    #[doc(hidden)]
    unsafe fn from_word(w: *mut ()) -> T;

    /// # Safety
    /// `w` came from `into_word` and stays alive for `'a`.
    #[doc(hidden)]
    unsafe fn borrow<'a>(w: *mut ()) -> Self::Ref<'a>
    where
        T: 'a;

    /// # Safety
    /// `w` came from `into_word` and is alive for the call.
    #[doc(hidden)]
    unsafe fn clone_word(w: *mut ()) -> *mut ()
    where
        T: Clone;
}

/// The default representation: each value in its own `Box`, the slot
/// holding the box's pointer. Works for every `T`; readers get `&T`.
///
/// The boxes of values the tree replaces or removes are not freed but
/// given back, after readers are done with them, to a pool of the thread
/// that wrote them, and reused by its next writes: a value a reader
/// retired on the writer's behalf never goes through the allocator's
/// cross-thread `free`. Each thread keeps at most a few thousand free
/// boxes (at most 256 KiB of large ones) per value size, of up to four
/// sizes; zero-sized values take no box.
#[derive(Clone, Copy, Debug, Default)]
pub struct Boxed;

/// Values in the slot word itself, for `T:` [`InlineValue`] (`Arc`, `Box`,
/// `&'static`, [`XValue`]): no allocation per stored value, and
/// [`dup`](crate::MapleTree::dup) clones an `Arc` by a reference count.
/// Readers get [`InlineValue::Borrowed`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Inline;

impl sealed::Sealed for Boxed {}
impl sealed::Sealed for Inline {}

impl<T> Repr<T> for Boxed {
    type Ref<'a>
        = &'a T
    where
        T: 'a;

    const OUT_OF_LINE_BYTES: usize = std::mem::size_of::<T>();

    const POOLED_BOX: bool = true;

    const WORD_IS_COPY: bool = false;

    #[inline]
    fn into_word(v: T) -> *mut () {
        crate::boxes::boxed(v).cast()
    }

    #[inline]
    unsafe fn from_word(w: *mut ()) -> T {
        // SAFETY: w is a box pointer turned back once (caller).
        *unsafe { Box::from_raw(w.cast::<T>()) }
    }

    #[inline]
    unsafe fn borrow<'a>(w: *mut ()) -> &'a T
    where
        T: 'a,
    {
        // SAFETY: the box is alive for 'a (caller) and shared while stored.
        unsafe { &*w.cast::<T>() }
    }

    #[inline]
    unsafe fn clone_word(w: *mut ()) -> *mut ()
    where
        T: Clone,
    {
        // SAFETY: as in borrow, for the call. A plain box: clones come in
        // bursts (`dup`, a split), which a thread's pool does not hold.
        Box::into_raw(Box::new(unsafe { (*w.cast::<T>()).clone() })).cast()
    }
}

impl<T: InlineValue + 'static> Repr<T> for Inline {
    type Ref<'a>
        = T::Borrowed<'a>
    where
        T: 'a;

    const OUT_OF_LINE_BYTES: usize = 0;

    const POOLED_BOX: bool = false;

    const WORD_IS_COPY: bool = T::WORD_IS_COPY;

    #[inline]
    fn into_word(v: T) -> *mut () {
        v.into_word().as_ptr()
    }

    #[inline]
    unsafe fn from_word(w: *mut ()) -> T {
        // SAFETY: forwarded (caller); a stored word is never null.
        unsafe { T::from_word(NonNull::new_unchecked(w)) }
    }

    #[inline]
    unsafe fn borrow<'a>(w: *mut ()) -> T::Borrowed<'a>
    where
        T: 'a,
    {
        // SAFETY: forwarded (caller); a stored word is never null.
        unsafe { T::borrow(NonNull::new_unchecked(w)) }
    }

    #[inline]
    unsafe fn clone_word(w: *mut ()) -> *mut ()
    where
        T: Clone,
    {
        // SAFETY: forwarded (caller); a stored word is never null.
        unsafe { T::clone_word(NonNull::new_unchecked(w)).as_ptr() }
    }
}

/// The slot kind of a tree of `T` stored as `S`: a slot holds a
/// `*mut Slot<T, S>`, an opaque word (never dereferenced as a `Slot`). The
/// tree's engine (nodes, reads, writes) is generic over the kind, and calls
/// back through [`SlotOps`] to drop or clone a word.
pub(crate) struct Slot<T, S>(PhantomData<(T, fn() -> S)>);

/// What the engine needs to do with a stored word.
pub(crate) trait SlotOps {
    /// Drops the value behind `w`.
    ///
    /// # Safety
    /// `w` is a stored word no one can read any more; it is dropped once.
    unsafe fn drop_word(w: *mut Self);

    /// This thread's pool to give the words it retires back to (see
    /// `boxes.rs`); `None` for words that are not pooled boxes.
    #[inline]
    fn home() -> Option<&'static Home> {
        None
    }

    /// Drops the value behind `w` after its grace period, giving a pooled
    /// box back to `home` (from [`SlotOps::home`] of the thread that
    /// retired it).
    ///
    /// # Safety
    /// As [`SlotOps::drop_word`].
    #[inline]
    unsafe fn retire_word(w: *mut Self, home: Option<&'static Home>) {
        let _ = home;
        // SAFETY: forwarded (caller).
        unsafe { Self::drop_word(w) }
    }
}

impl<T, S: Repr<T>> SlotOps for Slot<T, S> {
    #[inline]
    unsafe fn drop_word(w: *mut Self) {
        // SAFETY: forwarded (caller).
        drop(unsafe { S::from_word(w.cast()) });
    }

    #[inline]
    fn home() -> Option<&'static Home> {
        if S::POOLED_BOX {
            crate::boxes::home(std::alloc::Layout::new::<T>())
        } else {
            None
        }
    }

    #[inline]
    unsafe fn retire_word(w: *mut Self, home: Option<&'static Home>) {
        if S::POOLED_BOX {
            // SAFETY: a `Boxed` word is a `Box<T>` pointer (`into_word`,
            // `from_box`), given up by the caller.
            unsafe { crate::boxes::retire::<T>(w.cast(), home) }
        } else {
            // SAFETY: forwarded (caller).
            unsafe { Self::drop_word(w) }
        }
    }
}

/// Clones the value behind a stored word into a new word (the engine's
/// cloner for a store that splits an entry, and `dup`).
///
/// # Safety
/// `w` is a live stored word of a tree of `T` stored as `S`.
pub(crate) unsafe fn clone_slot<T: Clone, S: Repr<T>>(w: *mut Slot<T, S>) -> *mut Slot<T, S> {
    // SAFETY: forwarded (caller).
    unsafe { S::clone_word(w.cast()).cast() }
}

/// The cloner an engine write takes (`None`: the write cannot split).
pub(crate) type Cloner<K> = unsafe fn(*mut K) -> *mut K;

impl<T> Owned<Slot<T, Boxed>> {
    /// The word of a boxed value (the `Boxed` representation's word is the
    /// box pointer), owned.
    #[inline]
    pub(crate) fn from_box(b: Box<T>) -> Self {
        // SAFETY: a box pointer is never null; the box's ownership passes
        // to the word.
        unsafe { Owned(NonNull::new_unchecked(Box::into_raw(b).cast())) }
    }
}

/// A value word the caller owns outright (unlinked, and no reader can hold
/// it): turned back into its value with [`Owned::into_value`].
pub(crate) struct Owned<V>(NonNull<V>);

impl<V> Owned<V> {
    /// # Safety
    /// `p` is a non-null value word nobody else owns or can reach.
    pub(crate) unsafe fn new(p: *mut V) -> Option<Self> {
        NonNull::new(p).map(Owned)
    }

    pub(crate) fn ptr(&self) -> *mut V {
        self.0.as_ptr()
    }

    /// The word, its ownership passing to the caller (`None`: null, a free
    /// slot's word).
    #[inline]
    pub(crate) fn into_raw_or_null(v: Option<Self>) -> *mut V {
        match v {
            Some(o) => o.0.as_ptr(),
            None => ptr::null_mut(),
        }
    }
}

impl<T, S: Repr<T>> Owned<Slot<T, S>> {
    /// The word of a value, owned (to store it).
    #[inline]
    pub(crate) fn from_value(v: T) -> Self {
        // SAFETY: a word `into_word` just made: never null, and the value's
        // only owner.
        unsafe { Owned(NonNull::new_unchecked(S::into_word(v).cast())) }
    }

    /// The value.
    pub(crate) fn into_value(self) -> T {
        // SAFETY: the word is owned by self alone.
        unsafe { S::from_word(self.0.as_ptr().cast()) }
    }
}
