//! [`IntervalMultimap`]: the `aspace` design's group tree as a general,
//! single-threaded interval multimap with any value type.
//!
//! Identical intervals coexist (one tree node per *distinct* interval, the
//! entries that share it in a circular list), one chosen entry is removed
//! through its [`Handle`] in O(1) (O(log d) when it is the last of its
//! interval, d = distinct intervals), overlap queries run in
//! O(log d + k), and [`IntervalMultimap::insert_after`] places an entry
//! right after another one of the same interval.
//!
//! The concurrent designs ([`crate::Design`]) keep a `u64` payload
//! ([`crate::VmaId`]); to use them with other values, store the values in a
//! table of your own and keep its index as the payload.

use crate::designs::grouped::GroupTree;
use crate::designs::shardset::ShardTree;
use crate::{Handle, Interval, RmapError};

/// A multimap from inclusive `u64` intervals to values of type `V`, where
/// any number of entries may share an interval.
///
/// Not synchronised: `&mut self` to modify (wrap it in a lock to share it,
/// or use a concurrent [`crate::Design`] with `u64` payloads). `Send`/`Sync`
/// when `V` is.
///
/// Iteration order (of [`IntervalMultimap::overlapping`] and
/// [`IntervalMultimap::iter`]): by `(first, last)`; among entries of one
/// interval, in insertion order, except that an entry inserted with
/// [`IntervalMultimap::insert_after`] comes right after its parent.
///
/// Memory: 56 bytes per slot of the tree's arena plus `size_of::<Option<V>>()`
/// per slot of the value table (capacities, not lengths); slots of removed
/// entries are reused.
///
/// # Example
///
/// ```
/// use rmap::{Interval, IntervalMultimap};
///
/// // Meeting-room bookings, in minutes since midnight: two meetings share
/// // the 9:00-10:00 slot, one runs over lunch.
/// let mut rooms = IntervalMultimap::new();
/// let standup = rooms.insert(Interval::new(540, 599)?, "standup, room A")?;
/// let review = rooms.insert(Interval::new(540, 599)?, "review, room B")?;
/// rooms.insert(Interval::new(720, 780)?, "lunch talk, room A")?;
///
/// // Who is busy at 9:30?
/// let busy: Vec<&str> = rooms.overlapping(Interval::new(570, 570)?).map(|(_, _, v)| *v).collect();
/// assert_eq!(busy, ["standup, room A", "review, room B"]);
///
/// // Cancel exactly one of the two identical slots, by handle.
/// assert_eq!(rooms.remove(standup)?, "standup, room A");
/// assert_eq!(rooms.remove(standup), Err(rmap::RmapError::UnknownHandle));
/// assert_eq!(rooms.len(), 2);
/// assert_eq!(rooms.get(review), Some(&"review, room B"));
/// # Ok::<(), rmap::RmapError>(())
/// ```
#[derive(Debug)]
pub struct IntervalMultimap<V> {
    tree: GroupTree,
    /// Indexed by the tree's slot; `Some` exactly for live entries.
    values: Vec<Option<V>>,
    id: u32,
}

impl<V> Default for IntervalMultimap<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> IntervalMultimap<V> {
    /// An empty multimap (allocates nothing).
    pub fn new() -> Self {
        IntervalMultimap {
            tree: GroupTree::new(),
            values: Vec::new(),
            id: crate::next_map_id(),
        }
    }

    /// Entries.
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    /// `len() == 0`.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn store(&mut self, slot: u32, v: V) {
        let i = slot as usize;
        if i >= self.values.len() {
            self.values.resize_with(i + 1, || None);
        }
        self.values[i] = Some(v);
    }

    fn handle(&self, slot: u32, gen: u32) -> Handle {
        Handle::new(self.id, 0, slot, gen)
    }

    fn check(&self, h: Handle) -> Result<(), RmapError> {
        if h.map() != self.id {
            return Err(RmapError::ForeignHandle);
        }
        if h.shard() != 0 {
            return Err(RmapError::UnknownHandle);
        }
        self.tree.check(h.slot(), h.gen())
    }

    /// Adds `(iv, v)`; returns the handle that names this entry.
    /// [`RmapError::InvertedInterval`] when `iv.first > iv.last` (nothing is
    /// stored).
    pub fn insert(&mut self, iv: Interval, v: V) -> Result<Handle, RmapError> {
        let iv = iv.validate()?;
        let (slot, gen) = self.tree.insert(iv, 0);
        self.store(slot, v);
        Ok(self.handle(slot, gen))
    }

    /// Adds `(iv, v)` right after `parent` in iteration order when `iv`
    /// equals the parent's interval, else at its ordinary place. The
    /// parent must be a live entry of this map.
    pub fn insert_after(
        &mut self,
        parent: Handle,
        iv: Interval,
        v: V,
    ) -> Result<Handle, RmapError> {
        let iv = iv.validate()?;
        self.check(parent)?;
        let (slot, gen) = self.tree.insert_after(parent.slot(), parent.gen(), iv, 0)?;
        self.store(slot, v);
        Ok(self.handle(slot, gen))
    }

    /// Removes the entry `h` names and returns its value. O(1) unless it is
    /// the last entry of its interval. A removed handle stays invalid for
    /// the map's life ([`RmapError::UnknownHandle`]); another map's handle
    /// is [`RmapError::ForeignHandle`].
    pub fn remove(&mut self, h: Handle) -> Result<V, RmapError> {
        self.check(h)?;
        self.tree.remove_checked(h.slot());
        self.values[h.slot() as usize]
            .take()
            .ok_or(RmapError::UnknownHandle)
    }

    /// The value of entry `h`, if live.
    pub fn get(&self, h: Handle) -> Option<&V> {
        self.check(h).ok()?;
        self.values.get(h.slot() as usize)?.as_ref()
    }

    /// The value of entry `h`, if live, mutably.
    pub fn get_mut(&mut self, h: Handle) -> Option<&mut V> {
        self.check(h).ok()?;
        self.values.get_mut(h.slot() as usize)?.as_mut()
    }

    /// The interval of entry `h`, if live.
    pub fn interval(&self, h: Handle) -> Option<Interval> {
        self.check(h).ok()?;
        Some(self.tree.interval_of(h.slot()))
    }

    /// True when `h` names a live entry of this map.
    pub fn contains(&self, h: Handle) -> bool {
        self.check(h).is_ok()
    }

    /// Every entry whose interval overlaps `range` (an inverted range
    /// overlaps nothing), in iteration order, as `(interval, handle, value)`.
    /// Collects the matches first: O(log d + k) time, O(k) memory.
    pub fn overlapping(
        &self,
        range: Interval,
    ) -> impl ExactSizeIterator<Item = (Interval, Handle, &V)> + '_ {
        let mut hits: Vec<(Interval, u32)> = Vec::new();
        if range.first <= range.last {
            self.tree
                .walk_slots(range, |iv, slot| hits.push((iv, slot)));
        }
        hits.into_iter().map(move |(iv, slot)| {
            let h = Handle::new(self.id, 0, slot, self.tree.gen_of(slot));
            let v = self.values[slot as usize]
                .as_ref()
                .expect("a slot in the tree holds a value");
            (iv, h, v)
        })
    }

    /// Every entry, in iteration order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (Interval, Handle, &V)> + '_ {
        self.overlapping(Interval::FULL)
    }

    /// Bytes this map occupies: the struct plus the capacity of its arena
    /// and value table.
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.tree.heap_bytes()
            + self.values.capacity() * std::mem::size_of::<Option<V>>()
    }
}
