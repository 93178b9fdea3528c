//! A set of independently locked shards, shared by `numa_locks`, `sharded`
//! and `aspace` (after promotion).
//!
//! Each shard is one tree under one reader-writer lock, with the lock's
//! counters on the same padded cache line as the lock word: only that
//! shard's lock holders write the line, so counting adds no shared line.
//!
//! Multi-shard operations (a batch removal whose handles span shards, the
//! stable walk) lock the shards they need in ascending index order, so they
//! cannot deadlock with each other or with single-shard modifiers.

use crossbeam_utils::CachePadded;

use crate::stats::{Held, LockCounters};
use crate::sync::{RwLock, WriteGuard};
use crate::{Handle, Interval, LockStats, RmapError, VmaId};

/// What a shard holds: [`super::VmaTree`] or [`super::grouped::GroupTree`].
pub(crate) trait ShardTree: Default + Send + Sync {
    /// Inserts a validated interval; returns (slot, generation).
    fn insert(&mut self, iv: Interval, vma: VmaId) -> (u32, u32);
    /// Inserts next to live entry `(slot, gen)`.
    fn insert_after(
        &mut self,
        slot: u32,
        gen: u32,
        iv: Interval,
        vma: VmaId,
    ) -> Result<(u32, u32), RmapError>;
    /// Validates `(slot, gen)`.
    fn check(&self, slot: u32, gen: u32) -> Result<(), RmapError>;
    /// Removes an entry that `check` accepted.
    fn remove_checked(&mut self, slot: u32);
    /// `check`, then `remove_checked`.
    #[inline(always)]
    fn remove(&mut self, slot: u32, gen: u32) -> Result<(), RmapError> {
        self.check(slot, gen)?;
        self.remove_checked(slot);
        Ok(())
    }
    /// Calls `f` for every entry overlapping `range`.
    fn walk(&self, range: Interval, f: &mut dyn FnMut(Interval, VmaId));
    /// Entries.
    fn len(&self) -> usize;
    /// Heap bytes (capacity).
    fn heap_bytes(&self) -> usize;
    /// Room for `n` more entries.
    fn reserve(&mut self, n: usize);
    /// For the event recorder: the lines an insert or removal of live
    /// entry `slot` touches (call before a removal, after an insert).
    fn trace_entry(&self, slot: u32);
    /// For the event recorder: the lines a removal of live entry `slot`
    /// loads before it changes anything (call before the removal; by
    /// default [`ShardTree::trace_entry`]'s) ...
    fn trace_removal(&self, slot: u32) {
        self.trace_entry(slot)
    }
    /// ... and after it, what it loaded around its change and what it
    /// wrote (by default [`ShardTree::trace_changed`]'s).
    fn trace_removed(&self, before: crate::trace::Snapshot) {
        self.trace_changed(before)
    }
    /// For the event recorder: a copy of the tree's arena, taken before a
    /// change ...
    fn trace_snapshot(&self) -> crate::trace::Snapshot;
    /// ... and every node that change wrote, touched as written.
    fn trace_changed(&self, before: crate::trace::Snapshot);
}

impl ShardTree for super::VmaTree {
    #[inline(always)]
    fn insert(&mut self, iv: Interval, vma: VmaId) -> (u32, u32) {
        super::VmaTree::insert(self, iv, vma)
    }
    fn insert_after(
        &mut self,
        slot: u32,
        gen: u32,
        iv: Interval,
        vma: VmaId,
    ) -> Result<(u32, u32), RmapError> {
        super::VmaTree::insert_after(self, slot, gen, iv, vma)
    }
    #[inline]
    fn check(&self, slot: u32, gen: u32) -> Result<(), RmapError> {
        super::VmaTree::check(self, slot, gen)
    }
    #[inline]
    fn remove_checked(&mut self, slot: u32) {
        super::VmaTree::remove_checked(self, slot)
    }
    #[inline(always)]
    fn remove(&mut self, slot: u32, gen: u32) -> Result<(), RmapError> {
        super::VmaTree::remove(self, slot, gen)
    }
    fn walk(&self, range: Interval, f: &mut dyn FnMut(Interval, VmaId)) {
        super::VmaTree::walk(self, range, f)
    }
    #[inline]
    fn len(&self) -> usize {
        super::VmaTree::len(self)
    }
    fn heap_bytes(&self) -> usize {
        super::VmaTree::heap_bytes(self)
    }
    fn reserve(&mut self, n: usize) {
        super::VmaTree::reserve(self, n)
    }
    fn trace_entry(&self, slot: u32) {
        super::VmaTree::trace_entry(self, slot)
    }
    fn trace_snapshot(&self) -> crate::trace::Snapshot {
        super::VmaTree::trace_snapshot(self)
    }
    fn trace_changed(&self, before: crate::trace::Snapshot) {
        super::VmaTree::trace_changed(self, before)
    }
    fn trace_removal(&self, slot: u32) {
        super::VmaTree::trace_removal(self, slot)
    }
    fn trace_removed(&self, before: crate::trace::Snapshot) {
        super::VmaTree::trace_removed(self, before)
    }
}

/// Guards of several locks, released in the reverse order of acquisition
/// (the hold-timing stack in `stats` pairs holds last-in, first-out).
pub(crate) struct Lifo<G>(Vec<G>);

impl<G> std::ops::Deref for Lifo<G> {
    type Target = Vec<G>;
    fn deref(&self) -> &Vec<G> {
        &self.0
    }
}

impl<G> std::ops::DerefMut for Lifo<G> {
    fn deref_mut(&mut self) -> &mut Vec<G> {
        &mut self.0
    }
}

impl<G> Drop for Lifo<G> {
    fn drop(&mut self) {
        while self.0.pop().is_some() {}
    }
}

/// One shard: lock word, counters and tree header on one padded line.
#[derive(Debug)]
pub(crate) struct Shard<T> {
    pub(crate) lock: RwLock<T>,
    pub(crate) counters: LockCounters,
}

/// The shards.
#[derive(Debug)]
pub(crate) struct ShardSet<T> {
    shards: Box<[CachePadded<Shard<T>>]>,
}

impl<T: ShardTree> ShardSet<T> {
    /// `n` empty shards (at least one); shard 0 starts as `first`.
    pub(crate) fn with_first(map: u32, n: usize, first: T) -> Self {
        let n = n.max(1);
        let mut v = Vec::with_capacity(n);
        let first_len = first.len();
        v.push(CachePadded::new(Shard {
            lock: RwLock::new(first),
            counters: LockCounters::new(map, 0),
        }));
        v[0].counters.set_len(first_len);
        for i in 1..n {
            v.push(CachePadded::new(Shard {
                lock: RwLock::new(T::default()),
                counters: LockCounters::new(map, i as u32),
            }));
        }
        ShardSet {
            shards: v.into_boxed_slice(),
        }
    }

    pub(crate) fn new(map: u32, n: usize) -> Self {
        Self::with_first(map, n, T::default())
    }

    #[inline]
    pub(crate) fn count(&self) -> usize {
        self.shards.len()
    }

    #[inline]
    fn shard(&self, h: Handle) -> Result<&Shard<T>, RmapError> {
        self.shards
            .get(h.shard() as usize)
            .map(|s| &**s)
            .ok_or(RmapError::UnknownHandle)
    }

    /// Inserts into shard `s` (taken modulo the shard count).
    #[inline(always)]
    pub(crate) fn insert(&self, c: u8, map: u32, s: usize, iv: Interval, vma: VmaId) -> Handle {
        let n = self.shards.len();
        // The rules pick `s < n`: no division on that path.
        let s = if s < n { s } else { s % n };
        let sh = &self.shards[s];
        let mut t = sh.counters.write_in(&sh.lock, c);
        let snap = t.recording().then(|| t.trace_snapshot());
        let (slot, gen) = t.insert(iv, vma);
        if let Some(snap) = snap {
            t.trace_entry(slot);
            t.trace_changed(snap);
        }
        sh.counters.set_len(t.len());
        Handle::new(map, s as u32, slot, gen)
    }

    /// Inserts next to `parent`, in the parent's shard. The map id of
    /// `parent` must have been checked.
    #[inline(always)]
    pub(crate) fn insert_after(
        &self,
        c: u8,
        parent: Handle,
        iv: Interval,
        vma: VmaId,
    ) -> Result<Handle, RmapError> {
        let sh = self.shard(parent)?;
        let mut t = sh.counters.write_in(&sh.lock, c);
        let snap = t.recording().then(|| t.trace_snapshot());
        let (slot, gen) = t.insert_after(parent.slot(), parent.gen(), iv, vma)?;
        if let Some(snap) = snap {
            t.trace_entry(slot);
            t.trace_changed(snap);
        }
        sh.counters.set_len(t.len());
        Ok(Handle::new(parent.map(), parent.shard(), slot, gen))
    }

    /// Validates `h` (map id already checked) under its shard's read lock.
    pub(crate) fn check(&self, h: Handle) -> Result<(), RmapError> {
        let sh = self.shard(h)?;
        let t = sh.counters.read(&sh.lock);
        t.check(h.slot(), h.gen())
    }

    /// Removes `h` (map id already checked).
    #[inline(always)]
    pub(crate) fn remove(&self, c: u8, h: Handle) -> Result<(), RmapError> {
        let sh = self.shard(h)?;
        let mut t = sh.counters.write_in(&sh.lock, c);
        let snap = if t.recording() {
            t.check(h.slot(), h.gen())?;
            t.trace_removal(h.slot());
            Some(t.trace_snapshot())
        } else {
            None
        };
        t.remove(h.slot(), h.gen())?;
        if let Some(snap) = snap {
            t.trace_removed(snap);
        }
        sh.counters.set_len(t.len());
        Ok(())
    }

    /// Inserts validated `items` into shard `s` under one lock hold.
    #[inline(always)]
    pub(crate) fn insert_batch(
        &self,
        c: u8,
        map: u32,
        s: usize,
        items: &[(Interval, VmaId)],
        out: &mut Vec<Handle>,
    ) {
        let s = s % self.shards.len();
        let sh = &self.shards[s];
        out.reserve(items.len());
        let mut t = sh.counters.write_in(&sh.lock, c);
        let rec = t.recording();
        t.reserve(items.len());
        for &(iv, vma) in items {
            let snap = rec.then(|| t.trace_snapshot());
            let (slot, gen) = t.insert(iv, vma);
            if let Some(snap) = snap {
                t.trace_entry(slot);
                t.trace_changed(snap);
            }
            out.push(Handle::new(map, s as u32, slot, gen));
        }
        sh.counters.set_len(t.len());
    }

    /// Removes `handles` (prechecked for map id and duplicates): one hold of
    /// each shard involved, taken in ascending order; validates all first.
    #[inline(always)]
    pub(crate) fn remove_batch(&self, c: u8, handles: &[Handle]) -> Result<(), RmapError> {
        let Some(first) = handles.first() else {
            return Ok(());
        };
        if handles
            .iter()
            .any(|h| h.shard() as usize >= self.shards.len())
        {
            return Err(RmapError::UnknownHandle);
        }
        if handles.iter().all(|h| h.shard() == first.shard()) {
            let sh = &self.shards[first.shard() as usize];
            let mut t = sh.counters.write_in(&sh.lock, c);
            for h in handles {
                t.check(h.slot(), h.gen())?;
            }
            let rec = t.recording();
            for h in handles {
                let snap = if rec {
                    t.trace_removal(h.slot());
                    Some(t.trace_snapshot())
                } else {
                    None
                };
                t.remove_checked(h.slot());
                if let Some(snap) = snap {
                    t.trace_removed(snap);
                }
            }
            sh.counters.set_len(t.len());
            return Ok(());
        }
        let (ids, mut guards) = self.lock_shards(c, handles.iter().map(|h| h.shard()));
        let pos = |h: &Handle| ids.binary_search(&h.shard()).unwrap_or(0);
        for h in handles {
            guards[pos(h)].check(h.slot(), h.gen())?;
        }
        let rec = crate::trace::recording();
        for h in handles {
            let snap = if rec {
                guards[pos(h)].trace_removal(h.slot());
                Some(guards[pos(h)].trace_snapshot())
            } else {
                None
            };
            guards[pos(h)].remove_checked(h.slot());
            if let Some(snap) = snap {
                guards[pos(h)].trace_removed(snap);
            }
        }
        for (g, &s) in guards.iter().zip(&ids) {
            self.shards[s as usize].counters.set_len(g.len());
        }
        Ok(())
    }

    /// Write-locks each distinct shard in `shards` (all in range), in
    /// ascending order: the order every multi-shard operation takes, so two
    /// of them never deadlock. Returns the sorted ids and their guards.
    #[allow(clippy::type_complexity)]
    fn lock_shards(
        &self,
        c: u8,
        shards: impl Iterator<Item = u32>,
    ) -> (Vec<u32>, Lifo<Held<'_, WriteGuard<'_, T>>>) {
        let mut ids: Vec<u32> = shards.collect();
        ids.sort_unstable();
        ids.dedup();
        let guards: Vec<_> = ids
            .iter()
            .map(|&s| {
                let sh = &self.shards[s as usize];
                sh.counters.write_in(&sh.lock, c)
            })
            .collect();
        (ids, Lifo(guards))
    }

    /// `insert_after` for every item (map ids already checked), each in its
    /// parent's shard: one hold of each shard involved, taken in ascending
    /// order; validates every parent first.
    pub(crate) fn insert_after_batch(
        &self,
        c: u8,
        items: &[(Handle, Interval, VmaId)],
        out: &mut Vec<Handle>,
    ) -> Result<(), RmapError> {
        if items
            .iter()
            .any(|(p, _, _)| p.shard() as usize >= self.shards.len())
        {
            return Err(RmapError::UnknownHandle);
        }
        let (ids, mut guards) = self.lock_shards(c, items.iter().map(|(p, _, _)| p.shard()));
        let pos = |p: &Handle| ids.binary_search(&p.shard()).unwrap_or(0);
        for (p, _, _) in items {
            guards[pos(p)].check(p.slot(), p.gen())?;
        }
        out.reserve(items.len());
        let rec = crate::trace::recording();
        for &(p, iv, vma) in items {
            let snap = rec.then(|| guards[pos(&p)].trace_snapshot());
            let (slot, gen) = guards[pos(&p)].insert_after(p.slot(), p.gen(), iv, vma)?;
            if let Some(snap) = snap {
                guards[pos(&p)].trace_entry(slot);
                guards[pos(&p)].trace_changed(snap);
            }
            out.push(Handle::new(p.map(), p.shard(), slot, gen));
        }
        for (g, &s) in guards.iter().zip(&ids) {
            self.shards[s as usize].counters.set_len(g.len());
        }
        Ok(())
    }

    /// Stable walk: read-locks every shard in ascending order, holds them
    /// all, walks, releases.
    pub(crate) fn walk_stable(&self, range: Interval, f: &mut dyn FnMut(Interval, VmaId)) {
        let guards = Lifo(
            self.shards
                .iter()
                .map(|sh| sh.counters.read(&sh.lock))
                .collect(),
        );
        for g in guards.iter() {
            g.walk(range, f);
        }
    }

    /// Per-shard walk: one shard's read lock at a time.
    pub(crate) fn walk_each(&self, range: Interval, f: &mut dyn FnMut(Interval, VmaId)) {
        for sh in self.shards.iter() {
            let g = sh.counters.read(&sh.lock);
            g.walk(range, f);
        }
    }

    /// Walks with no lock taken: the caller excludes every modifier some
    /// other way (holds the outer lock exclusive). Takes each shard's read
    /// lock only to reach the data; those are uncontended then.
    pub(crate) fn walk_excluded(&self, range: Interval, f: &mut dyn FnMut(Interval, VmaId)) {
        for sh in self.shards.iter() {
            let g = sh.lock.read();
            g.walk(range, f);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.counters.len()).sum()
    }

    /// The shard array plus every tree's heap.
    pub(crate) fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.shards)
            + self
                .shards
                .iter()
                .map(|s| s.lock.read().heap_bytes())
                .sum::<usize>()
    }

    pub(crate) fn add_stats(&self, s: &mut LockStats) {
        for sh in self.shards.iter() {
            s.add(&sh.counters);
        }
        s.shards += self.shards.len() as u32;
    }
}
