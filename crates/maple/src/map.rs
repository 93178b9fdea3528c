//! The idiomatic layer: `BTreeMap`-style names, range arguments, and the
//! standard conversion traits, over the kernel-style calls.
//!
//! Every method here is a thin wrapper over the kernel-style API on
//! [`MapleTree`] (`load`, `store_range`, `insert_range`, `find`, `prev`, a
//! [`Reader`]), so both vocabularies have the same concurrency contract and
//! cost; the table is in the crate documentation.

use std::fmt;
use std::iter::FusedIterator;
use std::ops::{Bound, Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

use crate::error::{MapleError, WriteError};
use crate::tree::{Entry, Item, MapleTree, Reader, Removed};
use crate::value::{Boxed, Repr, SplitValue};

pub use crate::raw::Entries;

mod sealed {
    pub trait Sealed {}
}

/// A set of contiguous indices named the way Rust names them: one `u64`, or
/// any range of `u64` (`a..b`, `a..=b`, `a..`, `..b`, `..=b`, `..`, or a
/// pair of [`Bound`]s).
///
/// ```
/// use aspace_maple::IndexRange;
///
/// assert_eq!(7u64.bounds(), Some((7, 7)));
/// assert_eq!((0x1000..0x2000u64).bounds(), Some((0x1000, 0x1fff)));
/// assert_eq!((5..=9u64).bounds(), Some((5, 9)));
/// assert_eq!((..).bounds(), Some((0, u64::MAX)));
/// assert_eq!((5..5u64).bounds(), None); // holds no index
/// ```
pub trait IndexRange: sealed::Sealed {
    /// `Some((first, last))`, inclusive, or `None` when the range holds no
    /// index.
    fn bounds(&self) -> Option<(u64, u64)>;
}

fn from_bounds(start: Bound<&u64>, end: Bound<&u64>) -> Option<(u64, u64)> {
    let first = match start {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1)?,
        Bound::Unbounded => 0,
    };
    let last = match end {
        Bound::Included(&e) => e,
        Bound::Excluded(&e) => e.checked_sub(1)?,
        Bound::Unbounded => u64::MAX,
    };
    (first <= last).then_some((first, last))
}

macro_rules! index_range {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl IndexRange for $t {
            #[inline]
            fn bounds(&self) -> Option<(u64, u64)> {
                use std::ops::RangeBounds;
                from_bounds(self.start_bound(), self.end_bound())
            }
        }
    )*};
}

index_range!(
    Range<u64>,
    RangeInclusive<u64>,
    RangeFrom<u64>,
    RangeTo<u64>,
    RangeToInclusive<u64>,
    RangeFull,
    (Bound<u64>, Bound<u64>)
);

impl sealed::Sealed for u64 {}
impl IndexRange for u64 {
    #[inline]
    fn bounds(&self) -> Option<(u64, u64)> {
        Some((*self, *self))
    }
}

#[inline]
fn bounds_or_err(r: &impl IndexRange) -> Result<(u64, u64), MapleError> {
    r.bounds().ok_or(MapleError::EmptyRange)
}

/// Which fit an aligned gap search or allocation takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Fit {
    /// The lowest start that fits (first fit, bottom-up).
    #[default]
    Lowest,
    /// The highest start that fits (last fit, top-down, as `mmap` places
    /// mappings).
    Highest,
}

impl<T, S: Repr<T>> MapleTree<T, S> {
    /// The entry containing `index`, as [`BTreeMap::get`] returns the value
    /// for a key (the kernel-style name is [`load`](Self::load)). The
    /// [`Entry`] dereferences to the value and knows its range. Lock-free.
    ///
    /// ```
    /// let tree = aspace_maple::MapleTree::new();
    /// tree.insert(10..20, 'a').unwrap();
    /// assert_eq!(tree.get(15).map(|e| *e), Some('a'));
    /// assert_eq!(tree.get(15).unwrap().range(), 10..=19);
    /// assert!(tree.get(20).is_none());
    /// ```
    ///
    /// [`BTreeMap::get`]: std::collections::BTreeMap::get
    #[inline]
    pub fn get(&self, index: u64) -> Option<Entry<'_, T, S>> {
        self.load(index)
    }

    /// The entry containing `index` as a `(range, value)` pair, the item
    /// every iterator yields (rangemap's and `BTreeMap`'s
    /// `get_key_value`). Lock-free.
    ///
    /// ```
    /// let tree = aspace_maple::MapleTree::new();
    /// tree.insert(10..=19, 'a').unwrap();
    /// let (range, v) = tree.get_key_value(15).unwrap();
    /// assert_eq!((range, *v), (10..=19, 'a'));
    /// ```
    #[inline]
    pub fn get_key_value(&self, index: u64) -> Option<Item<'_, T, S>> {
        self.load(index).map(Entry::into_parts)
    }

    /// Whether an entry contains `index`. Lock-free.
    #[inline]
    pub fn contains_key(&self, index: u64) -> bool {
        self.reader().load(index).is_some()
    }

    /// Whether any entry intersects `range`. Lock-free, O(log n).
    ///
    /// ```
    /// let tree = aspace_maple::MapleTree::new();
    /// tree.insert(10..20, ()).unwrap();
    /// assert!(tree.overlaps(19..=30));
    /// assert!(!tree.overlaps(20..30));
    /// ```
    pub fn overlaps(&self, range: impl IndexRange) -> bool {
        match range.bounds() {
            Some((a, b)) => self.reader().find(a).is_some_and(|(r, _)| *r.start() <= b),
            None => false,
        }
    }

    /// The entry with the lowest range. Lock-free.
    pub fn first(&self) -> Option<Entry<'_, T, S>> {
        self.find(0)
    }

    /// The entry with the highest range. Lock-free.
    pub fn last(&self) -> Option<Entry<'_, T, S>> {
        self.prev(u64::MAX)
    }

    /// The lowest entry as a `(range, value)` pair (`BTreeMap`'s name).
    /// Lock-free.
    pub fn first_key_value(&self) -> Option<Item<'_, T, S>> {
        self.first().map(Entry::into_parts)
    }

    /// The highest entry as a `(range, value)` pair (`BTreeMap`'s name).
    /// Lock-free.
    pub fn last_key_value(&self) -> Option<Item<'_, T, S>> {
        self.last().map(Entry::into_parts)
    }

    /// Every entry in increasing order (also from the back, with `.rev()`).
    /// Each yielded [`Entry`] keeps its value alive on its own, so entries
    /// may outlive the iterator, in any order (see [`Entries`]: the
    /// iteration pins once, and the pin goes with the last of the iterator
    /// and its entries).
    ///
    /// Lock-free; what it sees is the contract of a [`Reader`]'s iteration
    /// (it walks the version it found when created). It yields what every
    /// iterator here yields, `(range, value)` pairs ([`Item`]). Consumed by
    /// `fold`, `for_each`, `sum` and the like it costs what a [`Reader`]'s
    /// iteration does (an item dropped inside the closure keeps no count);
    /// stepped by a `for` loop, it takes the holds for a leaf's items when
    /// it enters the leaf, and an item's drop gives its hold back (one
    /// decrement; see `BENCHMARKS.md` for the instructions). Where the
    /// items need not outlive the loop, a `for` loop over a [`Reader`]'s
    /// iteration (`tree.reader().iter()`) has no such decrement: its items
    /// borrow the reader's pin. Where the values are plain words in the
    /// slot ([`XValue`](crate::XValue), `u32`, `&'static U` in an
    /// [`Inline`](crate::Inline) tree), the items hold nothing either:
    /// each is a copy of its word, valid without a pin, so they cost what
    /// a [`Reader`]'s do, and once the iterator is dropped they hold back
    /// no reclamation.
    ///
    /// ```
    /// let tree: aspace_maple::MapleTree<&str> = [(0..=9, "a"), (20..=29, "b")].into_iter().collect();
    /// let all: Vec<_> = tree.iter().map(|(r, v)| (r, *v)).collect();
    /// assert_eq!(all, [(0..=9, "a"), (20..=29, "b")]);
    /// let (range, last) = tree.iter().next_back().unwrap();
    /// assert_eq!((range, *last), (20..=29, "b"));
    /// ```
    pub fn iter(&self) -> Entries<'_, T, S> {
        Entries::new(&self.core, 0, u64::MAX)
    }

    /// Entries intersecting `range`, in increasing order (also from the
    /// back). An entry that straddles an end of `range` is yielded whole.
    ///
    /// ```
    /// let tree: aspace_maple::MapleTree<u32> = (0..10u64).map(|i| (i * 10..=i * 10 + 4, i as u32)).collect();
    /// let hit: Vec<u32> = tree.range(33..=52).map(|(_, v)| *v).collect();
    /// assert_eq!(hit, [3, 4, 5]);
    /// assert_eq!(tree.range(5..=9).count(), 0); // a gap
    /// ```
    pub fn range(&self, range: impl IndexRange) -> Entries<'_, T, S> {
        match range.bounds() {
            Some((a, b)) => Entries::new(&self.core, a, b),
            None => Entries::new(&self.core, 1, 0),
        }
    }

    /// The ranges of every entry, in increasing order (also from the
    /// back): [`iter`](Self::iter) without the values, as
    /// [`BTreeMap::keys`] is.
    ///
    /// ```
    /// let tree: aspace_maple::MapleTree<u8> = [(0..=9, 1), (20..=29, 2)].into_iter().collect();
    /// assert_eq!(tree.keys().collect::<Vec<_>>(), [0..=9, 20..=29]);
    /// assert_eq!(tree.values().map(|v| *v).sum::<u8>(), 3);
    /// ```
    ///
    /// [`BTreeMap::keys`]: std::collections::BTreeMap::keys
    pub fn keys(
        &self,
    ) -> impl DoubleEndedIterator<Item = RangeInclusive<u64>> + FusedIterator + '_ {
        self.iter().map(|(r, _)| r)
    }

    /// The values of every entry in increasing order of their ranges
    /// (also from the back), each a [`Ref`](crate::Ref):
    /// [`iter`](Self::iter) without the ranges, as [`BTreeMap::values`] is.
    ///
    /// [`BTreeMap::values`]: std::collections::BTreeMap::values
    pub fn values(
        &self,
    ) -> impl DoubleEndedIterator<Item = crate::Ref<'_, T, S>> + FusedIterator + '_ {
        self.iter().map(|(_, v)| v)
    }

    /// The entries that intersect `range`: [`range`](Self::range) under
    /// rangemap's name.
    ///
    /// ```
    /// let tree: aspace_maple::MapleTree<u8> = [(0..=9, 1), (20..=29, 2)].into_iter().collect();
    /// let hit: Vec<u8> = tree.overlapping(5..=24).map(|(_, v)| *v).collect();
    /// assert_eq!(hit, [1, 2]);
    /// ```
    #[inline]
    pub fn overlapping(&self, range: impl IndexRange) -> Entries<'_, T, S> {
        self.range(range)
    }

    /// The free ranges within `range`, in increasing order (also from the
    /// back), each clipped to `range`. Each step seeks in O(log n) through
    /// the tree's gap metadata, however many entries lie between two gaps.
    /// Lock-free; the iterator holds a [`Reader`].
    ///
    /// ```
    /// let tree = aspace_maple::MapleTree::new();
    /// tree.insert(10..20, ()).unwrap();
    /// tree.insert(30..40, ()).unwrap();
    /// let gaps: Vec<_> = tree.gaps(0..50).collect();
    /// assert_eq!(gaps, [0..=9, 20..=29, 40..=49]);
    /// assert_eq!(tree.gaps(15..35).next(), Some(20..=29));
    /// assert_eq!(tree.gaps(..).next_back(), Some(40..=u64::MAX));
    /// ```
    pub fn gaps(&self, range: impl IndexRange) -> Gaps<'_, T, S> {
        let (lo, hi, done) = match range.bounds() {
            Some((a, b)) => (a, b, false),
            None => (1, 0, true),
        };
        Gaps {
            reader: self.reader(),
            lo,
            hi,
            done,
        }
    }

    /// The start of a free run of `size` indices inside `range` whose start
    /// is a multiple of `align` (a power of two; 1 for none), the lowest or
    /// highest such start as `fit` says. Exact: if an aligned fit exists in
    /// `range`, it is found.
    ///
    /// Cost: O(log n) for each free run of at least `size` indices that the
    /// alignment rules out before the answer; O(log n) in all when every
    /// free run of `size` or more also holds an aligned fit (always true
    /// for `align == 1`). Lock-free; the contract of
    /// [`empty_area`](Self::empty_area).
    ///
    /// ```
    /// use aspace_maple::{Fit, MapleTree};
    ///
    /// let tree = MapleTree::new();
    /// tree.insert(0x0000..0x1800, "a").unwrap();
    /// tree.insert(0x3000..0x4000, "b").unwrap();
    /// // 0x1000 indices aligned to 0x1000: [0x1800, 0x3000) is free but
    /// // holds only [0x2000, 0x3000) aligned.
    /// assert_eq!(tree.empty_area_aligned(.., 0x1000, 0x1000, Fit::Lowest), Ok(0x2000));
    /// assert_eq!(tree.empty_area_aligned(..0x4000, 0x1000, 0x1000, Fit::Highest), Ok(0x2000));
    /// // 0x2000 indices do not fit below 0x4000 at all:
    /// assert!(tree.empty_area_aligned(..0x4000, 0x2000, 0x1000, Fit::Lowest).is_err());
    /// // 0x1000 indices aligned to 0x2000:
    /// assert_eq!(tree.empty_area_aligned(.., 0x1000, 0x2000, Fit::Lowest), Ok(0x2000));
    /// ```
    pub fn empty_area_aligned(
        &self,
        range: impl IndexRange,
        size: u64,
        align: u64,
        fit: Fit,
    ) -> Result<u64, MapleError> {
        let (min, max) = bounds_or_err(&range)?;
        aligned_fit(&mut ReaderSpace(&self.reader()), min, max, size, align, fit)
    }
}

impl<T: Send + Sync + 'static, S: Repr<T>> MapleTree<T, S> {
    /// Inserts `value` at `range` only if every index there is free; else
    /// fails with [`MapleError::Occupied`] and hands `value` back, as
    /// [`BTreeMap::try_insert`] (unstable) does. The kernel-style name is
    /// [`insert_range`](Self::insert_range).
    ///
    /// ```
    /// let tree = aspace_maple::MapleTree::new();
    /// tree.try_insert(0..10, "a").unwrap();
    /// let refused = tree.try_insert(5, "b").unwrap_err();
    /// assert_eq!(refused.value, "b");
    /// assert_eq!(*tree.get(5).unwrap(), "a");
    /// ```
    ///
    /// [`BTreeMap::try_insert`]: std::collections::BTreeMap
    pub fn try_insert(&self, range: impl IndexRange, value: T) -> Result<(), WriteError<T>> {
        match range.bounds() {
            Some((a, b)) => self.insert_range(a, b, value),
            None => Err(WriteError {
                kind: MapleError::EmptyRange,
                value,
            }),
        }
    }

    /// Allocates `size` indices inside `range` at a start aligned to `align`
    /// (see [`empty_area_aligned`](Self::empty_area_aligned)), stores
    /// `value` there and returns the start. Search and store happen under
    /// the writer lock, so the fit is exact even beside other writers: what
    /// a guest-physical or MMIO allocator needs.
    ///
    /// ```
    /// use aspace_maple::{Fit, MapleTree};
    ///
    /// let mmio = MapleTree::new();
    /// mmio.insert(0xd000_0000..0xd000_1000, "uart").unwrap();
    /// let bar = mmio.alloc_aligned(0xd000_0000..0xe000_0000, 0x10_0000, 0x10_0000, Fit::Lowest, "bar0");
    /// assert_eq!(bar.unwrap(), 0xd010_0000);
    /// let top = mmio.alloc_aligned(0xd000_0000..0xe000_0000, 0x1000, 0x1000, Fit::Highest, "top");
    /// assert_eq!(top.unwrap(), 0xdfff_f000);
    /// ```
    pub fn alloc_aligned(
        &self,
        range: impl IndexRange,
        size: u64,
        align: u64,
        fit: Fit,
        value: T,
    ) -> Result<u64, WriteError<T>> {
        let (min, max) = match range.bounds() {
            Some(b) => b,
            None => {
                return Err(WriteError {
                    kind: MapleError::EmptyRange,
                    value,
                })
            }
        };
        let mut cursor = self.cursor();
        match aligned_fit(&mut CursorSpace(&mut cursor), min, max, size, align, fit) {
            Ok(s) => cursor.insert_range(s, s + (size - 1), value).map(|()| s),
            Err(kind) => Err(WriteError { kind, value }),
        }
    }
}

impl<T: Send + Sync + 'static, S: Repr<T>> MapleTree<T, S> {
    /// Removes the entry containing `index` in one write through `&self`,
    /// as [`BTreeMap::remove`] removes a key, and returns it: the value
    /// stays alive while the [`Entry`] does (readers may still see it), and
    /// is dropped once it and every reader that could see it are gone. The
    /// kernel-style name is [`erase`](Self::erase); with `&mut`,
    /// [`take`](Self::take) hands the value back owned.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let tree = Arc::new(aspace_maple::MapleTree::new());
    /// tree.try_insert(0..=9, 'a').unwrap();
    /// let e = tree.remove(5).unwrap(); // through the Arc
    /// assert_eq!((e.range(), *e), (0..=9, 'a'));
    /// assert!(tree.remove(5).is_none());
    /// ```
    ///
    /// [`BTreeMap::remove`]: std::collections::BTreeMap::remove
    #[inline]
    pub fn remove(&self, index: u64) -> Option<Entry<'_, T, S>> {
        self.erase(index)
    }

    /// Removes the lowest entry, in one write through `&self`, and returns
    /// it (see [`remove`](Self::remove)).
    ///
    /// ```
    /// let tree: aspace_maple::MapleTree<u8> = [(5..=6, 1), (0..=1, 0)].into_iter().collect();
    /// assert_eq!(tree.pop_first().map(|e| (e.range(), *e)), Some((0..=1, 0)));
    /// assert_eq!(tree.pop_last().map(|e| (e.range(), *e)), Some((5..=6, 1)));
    /// assert!(tree.pop_first().is_none());
    /// ```
    pub fn pop_first(&self) -> Option<Entry<'_, T, S>> {
        let w = self.core.lock();
        let (first, _, _) = w.locked().root.find(0)?;
        w.erase(first)
    }

    /// Removes the highest entry, in one write through `&self`, and returns
    /// it (see [`remove`](Self::remove)).
    pub fn pop_last(&self) -> Option<Entry<'_, T, S>> {
        let w = self.core.lock();
        let (first, _, _) = w.locked().root.find_prev(u64::MAX)?;
        w.erase(first)
    }
}

impl<T: SplitValue + Send + Sync + 'static, S: Repr<T>> MapleTree<T, S> {
    /// Makes every index in `range` map to `value`, replacing whatever was
    /// there, as [`BTreeMap::insert`] replaces a key's value. Entries that
    /// stick out of `range` keep their outside part (an entry spanning all
    /// of `range` is split; its right part gets a clone of its value).
    /// Fails only on a range that holds no index
    /// ([`MapleError::EmptyRange`]), handing `value` back. The kernel-style
    /// name is [`store_range`](Self::store_range); the replaced values are
    /// dropped once no reader can see them.
    ///
    /// ```
    /// let tree = aspace_maple::MapleTree::new();
    /// tree.insert(0..=99, 'a').unwrap();
    /// tree.insert(40..=59, 'b').unwrap(); // splits 'a'
    /// let all: Vec<_> = tree.iter().map(|(r, v)| (r, *v)).collect();
    /// assert_eq!(all, [(0..=39, 'a'), (40..=59, 'b'), (60..=99, 'a')]);
    /// assert!(tree.insert(7..7, 'c').is_err()); // holds no index
    /// ```
    ///
    /// [`BTreeMap::insert`]: std::collections::BTreeMap::insert
    #[inline]
    pub fn insert(&self, range: impl IndexRange, value: T) -> Result<(), WriteError<T>> {
        match range.bounds() {
            Some((a, b)) => self.store_range(a, b, value),
            None => Err(WriteError {
                kind: MapleError::EmptyRange,
                value,
            }),
        }
    }
}

impl<T: SplitValue + Send + Sync + 'static, S: Repr<T>> MapleTree<T, S> {
    /// Empties every index in `range`, trimming entries that cross its
    /// edges and splitting one that spans it (what `rangemap`'s
    /// `remove(range)` does; the kernel-style name is
    /// [`remove_range`](Self::remove_range), the kernel's a store of `NULL`
    /// over the range). One write: readers see all of it or none. Returns
    /// what was removed, clipped to `range`; fails only on a range that
    /// holds no index.
    ///
    /// ```
    /// let tree: aspace_maple::MapleTree<char> = [(0..=99, 'a'), (100..=199, 'b')].into_iter().collect();
    /// let removed = tree.punch_hole(50..=149).unwrap();
    /// assert_eq!(removed.to_vec(), [(50..=99, 'a'), (100..=149, 'b')]);
    /// drop(removed);
    /// let left: Vec<_> = tree.iter().map(|(r, v)| (r, *v)).collect();
    /// assert_eq!(left, [(0..=49, 'a'), (150..=199, 'b')]);
    /// ```
    #[inline]
    pub fn punch_hole(&self, range: impl IndexRange) -> Result<Removed<'_, T, S>, MapleError> {
        let (a, b) = bounds_or_err(&range)?;
        self.remove_range(a, b)
    }
}

impl<'a, T: 'a, S: Repr<T>> IntoIterator for &'a MapleTree<T, S> {
    type Item = Item<'a, T, S>;
    type IntoIter = Entries<'a, T, S>;
    /// ```
    /// let tree: aspace_maple::MapleTree<u8> = [(0..=0, 1), (5..=9, 2)].into_iter().collect();
    /// let mut sum = 0;
    /// for (range, v) in &tree {
    ///     sum += *v as u64 * (range.end() - range.start() + 1);
    /// }
    /// assert_eq!(sum, 11);
    /// ```
    fn into_iter(self) -> Entries<'a, T, S> {
        self.iter()
    }
}

/// The free ranges of a tree within bounds: see [`MapleTree::gaps`].
pub struct Gaps<'a, T, S: Repr<T> = Boxed> {
    reader: Reader<'a, T, S>,
    /// Lowest index the front may still yield / highest for the back.
    lo: u64,
    hi: u64,
    done: bool,
}

impl<T, S: Repr<T>> Iterator for Gaps<'_, T, S> {
    type Item = RangeInclusive<u64>;

    fn next(&mut self) -> Option<RangeInclusive<u64>> {
        if self.done {
            return None;
        }
        // The lowest free index in [lo, hi], through the gap metadata.
        let Ok(start) = self.reader.empty_area(self.lo, self.hi, 1) else {
            self.done = true;
            return None;
        };
        // `start` is free, so the first entry ending at or after it starts
        // after it: the run ends just before that entry.
        let end = match self.reader.find(start) {
            Some((r, _)) if *r.start() <= self.hi => *r.start() - 1,
            _ => self.hi,
        };
        if end >= self.hi {
            self.done = true;
        } else {
            self.lo = end + 1;
        }
        Some(start..=end)
    }
}

impl<T, S: Repr<T>> DoubleEndedIterator for Gaps<'_, T, S> {
    fn next_back(&mut self) -> Option<RangeInclusive<u64>> {
        if self.done {
            return None;
        }
        let Ok(end) = self.reader.empty_area_rev(self.lo, self.hi, 1) else {
            self.done = true;
            return None;
        };
        // `end` is free, so the last entry starting at or before it ends
        // before it.
        let start = match self.reader.prev(end) {
            Some((r, _)) if *r.end() >= self.lo => *r.end() + 1,
            _ => self.lo,
        };
        if start <= self.lo {
            self.done = true;
        } else {
            self.hi = start - 1;
        }
        Some(start..=end)
    }
}

impl<T, S: Repr<T>> FusedIterator for Gaps<'_, T, S> {}

impl<T, S: Repr<T>> fmt::Debug for Gaps<'_, T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gaps")
            .field("lo", &self.lo)
            .field("hi", &self.hi)
            .field("done", &self.done)
            .finish()
    }
}

/// What the aligned search needs of a version: the unaligned O(log n) fit,
/// and the entries beside a free index.
trait Space {
    fn fit(&mut self, min: u64, max: u64, size: u64, fit: Fit) -> Result<u64, MapleError>;
    /// The first entry ending at or after `i`: `(first, last)`.
    fn next_used(&mut self, i: u64) -> Option<(u64, u64)>;
    /// The last entry starting at or before `i`.
    fn prev_used(&mut self, i: u64) -> Option<(u64, u64)>;
}

struct ReaderSpace<'r, 'a, T, S: Repr<T>>(&'r Reader<'a, T, S>);

impl<T, S: Repr<T>> Space for ReaderSpace<'_, '_, T, S> {
    fn fit(&mut self, min: u64, max: u64, size: u64, fit: Fit) -> Result<u64, MapleError> {
        match fit {
            Fit::Lowest => self.0.empty_area(min, max, size),
            Fit::Highest => self.0.empty_area_rev(min, max, size),
        }
    }
    fn next_used(&mut self, i: u64) -> Option<(u64, u64)> {
        self.0.find(i).map(|(r, _)| (*r.start(), *r.end()))
    }
    fn prev_used(&mut self, i: u64) -> Option<(u64, u64)> {
        self.0.prev(i).map(|(r, _)| (*r.start(), *r.end()))
    }
}

struct CursorSpace<'c, 'a, T, S: Repr<T>>(&'c mut crate::Cursor<'a, T, S>);

impl<T: Send + Sync + 'static, S: Repr<T>> Space for CursorSpace<'_, '_, T, S> {
    fn fit(&mut self, min: u64, max: u64, size: u64, fit: Fit) -> Result<u64, MapleError> {
        match fit {
            Fit::Lowest => self.0.empty_area(min, max, size),
            Fit::Highest => self.0.empty_area_rev(min, max, size),
        }
    }
    fn next_used(&mut self, i: u64) -> Option<(u64, u64)> {
        self.0
            .range(i, u64::MAX)
            .next()
            .map(|(r, _)| (*r.start(), *r.end()))
    }
    fn prev_used(&mut self, i: u64) -> Option<(u64, u64)> {
        self.0
            .range(0, i)
            .next_back()
            .map(|(r, _)| (*r.start(), *r.end()))
    }
}

/// The exact aligned fit: visits, in fit order, each free run that holds
/// `size` indices (one O(log n) gap search each) until one holds an aligned
/// start.
fn aligned_fit(
    sp: &mut impl Space,
    min: u64,
    max: u64,
    size: u64,
    align: u64,
    fit: Fit,
) -> Result<u64, MapleError> {
    if !align.is_power_of_two() {
        return Err(MapleError::BadAlignment { align });
    }
    // Validates size and window (ZeroSize, InvertedBounds, NoSpace).
    let first = sp.fit(min, max, size, fit)?;
    let no_space = MapleError::NoSpace { min, max, size };
    let mask = align - 1;
    let mut g = first;
    match fit {
        Fit::Lowest => loop {
            // `g` is the lowest fit at or above the window's current start,
            // so it is where its free run starts (clipped to the window);
            // the run ends before the next entry.
            let run_end = match sp.next_used(g) {
                Some((f, _)) => (f - 1).min(max),
                None => max,
            };
            if let Some(a) = g.checked_add(mask).map(|x| x & !mask) {
                if a <= run_end && run_end - a >= size - 1 {
                    return Ok(a);
                }
            }
            // Skip this run and the entry after it.
            let next = match sp.next_used(g) {
                Some((_, l)) if l < max => l + 1,
                _ => return Err(no_space),
            };
            g = sp.fit(next, max, size, fit).map_err(|_| no_space)?;
        },
        Fit::Highest => loop {
            // `g` is the highest fit at or below the window's current end:
            // `[g, g + size - 1]` is free, and so is every aligned start
            // between the run's start and `g`.
            let run_start = match sp.prev_used(g) {
                Some((_, l)) => (l + 1).max(min),
                None => min,
            };
            let a = g & !mask;
            if a >= run_start {
                return Ok(a);
            }
            let next = match sp.prev_used(g) {
                Some((f, _)) if f > min => f - 1,
                _ => return Err(no_space),
            };
            g = sp.fit(min, next, size, fit).map_err(|_| no_space)?;
        },
    }
}

impl<T: SplitValue + Send + Sync + 'static, S: Repr<T>, R: IndexRange> FromIterator<(R, T)>
    for MapleTree<T, S>
{
    /// Builds a tree by [`insert`](MapleTree::insert)ing each pair in order
    /// (a later range replaces what it overlaps, as collecting into a
    /// `BTreeMap` keeps the last value of a key). Pairs whose range holds no
    /// index store nothing. Builds with exclusive access: no lock, no copy.
    ///
    /// ```
    /// let tree: aspace_maple::MapleTree<char> = [(0..10, 'a'), (5..15, 'b')].into_iter().collect();
    /// assert_eq!(tree.get(4).map(|e| *e), Some('a'));
    /// assert_eq!(tree.get(5).map(|e| *e), Some('b'));
    /// ```
    fn from_iter<I: IntoIterator<Item = (R, T)>>(iter: I) -> Self {
        let mut tree = MapleTree::default();
        tree.extend(iter);
        tree
    }
}

impl<T: SplitValue + Send + Sync + 'static, S: Repr<T>, R: IndexRange> Extend<(R, T)>
    for MapleTree<T, S>
{
    /// [`insert`](MapleTree::insert)s each pair in order, through an
    /// exclusive cursor (no lock, no copy-on-write). Pairs whose range holds
    /// no index store nothing.
    ///
    /// ```
    /// let mut tree = aspace_maple::MapleTree::new();
    /// tree.extend([(0..=9, 1u8), (20..=29, 2)]);
    /// assert_eq!(tree.len(), 2);
    /// ```
    fn extend<I: IntoIterator<Item = (R, T)>>(&mut self, iter: I) {
        let mut c = self.cursor_mut();
        for (r, v) in iter {
            if let Some((a, b)) = r.bounds() {
                // Cannot fail: the range is valid.
                let _ = c.store_range(a, b, v);
            }
        }
    }
}

/// An owning iterator over a tree's entries, in increasing order (also from
/// the back): `(range, value)` pairs. From `tree.into_iter()`.
pub struct IntoIter<T: Send + Sync + 'static, S: Repr<T> = Boxed> {
    tree: MapleTree<T, S>,
}

impl<T: Send + Sync + 'static, S: Repr<T>> Iterator for IntoIter<T, S> {
    type Item = (RangeInclusive<u64>, T);
    fn next(&mut self) -> Option<Self::Item> {
        let first = self.tree.find(0)?.first();
        self.tree.take(first)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.tree.len(), Some(self.tree.len()))
    }
}

impl<T: Send + Sync + 'static, S: Repr<T>> DoubleEndedIterator for IntoIter<T, S> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let first = self.tree.prev(u64::MAX)?.first();
        self.tree.take(first)
    }
}

impl<T: Send + Sync + 'static, S: Repr<T>> ExactSizeIterator for IntoIter<T, S> {}
impl<T: Send + Sync + 'static, S: Repr<T>> FusedIterator for IntoIter<T, S> {}

impl<T: Send + Sync + 'static, S: Repr<T>> IntoIterator for MapleTree<T, S> {
    type Item = (RangeInclusive<u64>, T);
    type IntoIter = IntoIter<T, S>;
    /// Moves the entries out, lowest first (O(log n) each).
    ///
    /// ```
    /// let tree: aspace_maple::MapleTree<String> = [(1..=2, "x".to_string())].into_iter().collect();
    /// let v: Vec<_> = tree.into_iter().collect();
    /// assert_eq!(v, [(1..=2, "x".to_string())]);
    /// ```
    fn into_iter(self) -> IntoIter<T, S> {
        IntoIter { tree: self }
    }
}

impl<T, S: Repr<T>> PartialEq for MapleTree<T, S>
where
    for<'x> S::Ref<'x>: PartialEq,
{
    /// Two trees are equal when they hold the same entries: the same ranges
    /// with equal values (`[0, 4] -> a, [5, 9] -> a` differs from
    /// `[0, 9] -> a`, as two `BTreeMap`s with different keys do).
    ///
    /// ```
    /// let a: aspace_maple::MapleTree<u8> = [(0..10, 1)].into_iter().collect();
    /// let b = a.clone();
    /// assert_eq!(a, b);
    /// b.insert(3, 2).unwrap();
    /// assert_ne!(a, b);
    /// ```
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (self.reader(), other.reader());
        a.iter().eq(b.iter())
    }
}

impl<T, S: Repr<T>> Eq for MapleTree<T, S> where for<'x> S::Ref<'x>: Eq {}
