//! `aspace`: this crate's own design. Grouped identical intervals, centralised while
//! uncontended, promoted to per-CPU-group shards under a distributed outer
//! lock once contention is seen.
//!
//! # Where it comes from
//!
//! Every idea is from the `i_mmap` discussion gathered in DOMAIN.md:
//! * "a better data structure than an rbtree of identical intervals"
//!   (Guzik: "it may be the lock-protected cost can go way down with merely
//!   a better data structure"): a `GroupTree` (private module `grouped`) keeps one
//!   tree node per *distinct* interval and hangs identical ones off it in a
//!   circular list. With libc's 6000 entries in 5 distinct intervals, insert
//!   searches a 5-node tree and remove unlinks from a list in O(1) through
//!   the handle, with no rebalancing.
//! * "must not cost memory on the millions of files that are never
//!   contended, must not slow the uncontended path, and needs no knob":
//!   the map starts as one lock and one tree on one cache line, and watches
//!   *handoffs*: exclusive holds taken by a different thread than the
//!   previous one, which is when the lock word and tree header lines move
//!   between CPUs (a failed `try_lock` is one, but at 2 threads the line
//!   moves on every acquisition while `try_lock` almost never fails). Once
//!   [`PROMOTE_HANDOFFS`] handoffs fall within [`PROMOTE_WINDOW_NS`] (a
//!   recent window: a long uncontended history cannot veto it), the map
//!   promotes itself (once, never back) to shards. A single thread never
//!   hands off, so it never promotes, and its only cost is one compare of
//!   a thread token per hold. Both constants are internal, not knobs.
//! * "shards per group of cores (about 8 CPUs each)", helping one-node
//!   machines too: see the mapping below.
//! * The outer lock with inverted meaning (modifiers shared, stable walk
//!   exclusive) is *distributed*: each shard's own lock is the modifier's
//!   "shared" hold, and a stable walk takes the "exclusive" side by
//!   read-locking every shard in ascending order (the local/global, or
//!   big-reader, lock pattern: Linux's old `lglock`/`brlock`). A modifier
//!   therefore writes only its own shard's line: no shared reader count
//!   bounces between CPUs, which is what Guzik predicted would limit the
//!   single outer rwlock of [`sharded`](super::sharded).
//! * Batches: `insert_batch` and `remove_batch` take one lock hold (one
//!   per involved shard, ascending, for a removal spanning shards).
//!
//! # Promotion
//!
//! ```text
//!   central (shard 0 implied)                       sharded
//!   +--------------------------------+   promote   +------------+------------+--
//!   | RwLock<GroupTree> | sharded=0  |  ========>  | shard 0    | shard 1    | ..
//!   +--------------------------------+  (under the | (old tree) | (empty)    |
//!                                        central    +------------+------------+--
//!                                        write lock)
//! ```
//!
//! The promoter holds the central write lock, moves the tree into shard 0
//! of a new `ShardSet` (slots and generations unchanged, so every handle
//! issued so far stays valid: central handles name shard 0), and publishes
//! the set with a Release store. Every operation first loads the pointer
//! (Acquire); one that saw null and then acquired the central lock re-checks
//! it under the lock and, if set, goes to the shards instead. The set lives
//! until the map is dropped, so a reference to it never dangles.
//!
//! # Contract
//!
//! * Modifiers are linearizable (one lock, or one shard lock; a removal
//!   batch spanning shards holds all involved shard locks at once).
//! * [`walk`](crate::ReverseMap::walk): stable snapshot. Central: the
//!   central read lock. Sharded: every shard's read lock, held together;
//!   all modifiers block meanwhile.
//! * [`walk_concurrent`](crate::ReverseMap::walk_concurrent): central: as
//!   `walk`. Sharded: one shard's read lock at a time, so modifiers of other
//!   shards proceed; each shard's part is a snapshot taken at a different
//!   moment. An entry present for the whole walk is seen exactly once; one
//!   removed before it began is never seen; one inserted or removed during
//!   it may or may not be.
//! * Thread-to-shard mapping: with `cpus` CPUs there are `cpus` shards up
//!   to 8 CPUs, else `max(8, ceil(cpus / 8))`; CPU `c` (from
//!   [`Topology::current_cpu`]) uses shard `c * shards / cpus`, so
//!   neighbouring CPUs share. `insert_after` goes to the parent's shard,
//!   removals to the handle's.
//!
//! # Memory
//!
//! Central: the struct (lock word, tree header, handoff window and mode
//! pointer on one padded line; the per-call-site counters on two more; the
//! topology and id on a fourth: 512 bytes) plus 56 bytes per arena slot.
//! [`linux`](super::linux)'s struct is 640 bytes (a line for the lock, a
//! line for the tree header, the same counters); with 5 mappings aspace
//! takes 960 bytes and linux 1,024, so the target "at most `linux` + 64
//! bytes" holds with room to spare (`memory_target_five_mappings` asserts
//! it). After promotion, add one padded shard (lock, counters, tree
//! header: 256 bytes) per CPU group plus its arena.
//!
//! ## Why the central lock word and tree header share a line
//!
//! That is the layout `linux_shared_line` models as Linux's mistake, and it
//! is one here on purpose. The mistake costs only while other CPUs spin on
//! the lock word as the holder writes the tree header beside it, that is
//! while the lock is handed between CPUs at a high rate; that is exactly
//! the signal on which aspace stops using the central line (after
//! [`PROMOTE_HANDOFFS`] handoffs within [`PROMOTE_WINDOW_NS`]), after which
//! the line is only read (the mode pointer). Until then the map is, by that
//! measure, not hot, and one line per hold is cheaper than two: the
//! uncontended hold touches the lock word, the header and the window in
//! one line, and the memory target above keeps its margin. What the shared
//! line costs in the short time before promotion is part of the "promoted
//! after" time measured by `--example promo` (BENCHMARKS.md).

use crossbeam_utils::CachePadded;

use super::grouped::GroupTree;
use super::parts::{resolve_map, resolve_shard, ShardRule, SpreadCpus};
use super::shardset::{ShardSet, ShardTree};
use crate::stats::{Held, LockCounters, PaddedCounters};
use crate::sync::{AtomicPtr, AtomicU32, Ordering, ReadGuard, RwLock, WriteGuard};
use crate::{Design, Handle, Interval, LockStats, ReverseMap, RmapError, Topology, VmaId};

/// Promotion needs this many *handoffs* (an exclusive hold whose thread
/// differs from the previous holder's: the lock word and tree header lines
/// moved between CPUs) ...
#[cfg(not(loom))]
pub const PROMOTE_HANDOFFS: u32 = 64;
/// Promotion needs this many handoffs (1 under loom, so that the models
/// reach promotion) ...
#[cfg(loom)]
pub const PROMOTE_HANDOFFS: u32 = 1;
/// ... within this many nanoseconds of the first of them: a rate of at
/// least 200,000 handoffs a second. The window restarts when it runs out,
/// so only recent acquisitions count and no amount of history can veto a
/// promotion. A file mapped by many processes at an ordinary rate (each
/// exec a handoff) stays far below the rate; one thread never hands off.
///
/// Measured (`--example promo`): see `crates/rmap/BENCHMARKS.md`.
#[cfg(not(miri))]
pub const PROMOTE_WINDOW_NS: u64 = 320_000;
/// The window under Miri: its clock is virtual and advances 5 us per
/// interpreted basic block, so one handoff takes about 2 ms of it and 64
/// never fit in 320 us. 10 s of the virtual clock keeps the rule's meaning
/// (a burst of handoffs promotes, slow ones spread past the window do not).
#[cfg(miri)]
pub const PROMOTE_WINDOW_NS: u64 = 10_000_000_000;

type Shards = ShardSet<GroupTree>;

/// What the central lock protects: the tree, and the handoff window (only
/// written under the exclusive lock, so plain fields).
#[derive(Debug, Default)]
struct CentralData {
    tree: GroupTree,
    hot: Handoffs,
}

/// The recent-handoff window.
#[derive(Debug, Default)]
struct Handoffs {
    /// Token of the last exclusive holder's thread (0: none yet).
    last: usize,
    /// Handoffs in the current window.
    count: u32,
    /// Monotonic ns of the window's first handoff.
    since: u64,
}

impl std::ops::Deref for CentralData {
    type Target = GroupTree;
    #[inline]
    fn deref(&self) -> &GroupTree {
        &self.tree
    }
}

impl std::ops::DerefMut for CentralData {
    #[inline]
    fn deref_mut(&mut self) -> &mut GroupTree {
        &mut self.tree
    }
}

#[derive(Debug)]
struct Central {
    lock: RwLock<CentralData>,
    /// Null while centralised; the shard set once promoted (never freed
    /// before the map).
    sharded: AtomicPtr<Shards>,
}

/// See the module docs.
#[derive(Debug)]
pub struct Aspace {
    central: CachePadded<Central>,
    counters: PaddedCounters,
    topo: Topology,
    id: u32,
    /// False for the `aspace_central` ablation: never promotes.
    promotes: bool,
    /// Times the map promoted itself (0 or 1; counted to test "once").
    promotions: AtomicU32,
}

enum Mode<'a, G> {
    Central(G),
    Sharded(&'a Shards),
}

/// Shards for `cpus` CPUs.
pub fn shard_count(cpus: u32) -> u32 {
    let cpus = cpus.max(1);
    if cpus <= 8 {
        cpus
    } else {
        cpus.div_ceil(8).max(8)
    }
}

impl Aspace {
    /// An empty, centralised map.
    pub fn new(topo: Topology) -> Self {
        Self::build(topo, true)
    }

    /// The `aspace_central` ablation: the same grouped tree under the same
    /// one lock, but it never promotes (so it shows what grouping alone
    /// gives, without sharding). [`Aspace::promote`] does nothing on it.
    pub fn new_central(topo: Topology) -> Self {
        Self::build(topo, false)
    }

    fn build(topo: Topology, promotes: bool) -> Self {
        let id = crate::next_map_id();
        Aspace {
            central: CachePadded::new(Central {
                lock: RwLock::new(CentralData {
                    tree: GroupTree::new(),
                    hot: Handoffs::default(),
                }),
                sharded: AtomicPtr::new(std::ptr::null_mut()),
            }),
            counters: CachePadded::new(LockCounters::new(id, 0)),
            topo,
            id,
            promotes,
            promotions: AtomicU32::new(0),
        }
    }

    /// True once the map has promoted itself to shards.
    pub fn is_promoted(&self) -> bool {
        self.promoted().is_some()
    }

    /// Promotes now (tests and experiments; the map does this by itself
    /// under contention). Idempotent.
    pub fn promote(&self) {
        if !self.promotes {
            return;
        }
        if let Mode::Central(mut g) = self.write_mode(crate::stats::op_ctx()) {
            self.promote_locked(&mut g);
        }
    }

    #[inline]
    fn deref_set(&self, p: *mut Shards) -> Option<&Shards> {
        if p.is_null() {
            None
        } else {
            // SAFETY: a non-null pointer was published once by
            // promote_locked from Box::into_raw, after the set was fully
            // built; it is freed only in Drop, which needs `&mut self`, so
            // it outlives this `&self` borrow. The set is Sync.
            Some(unsafe { &*p })
        }
    }

    #[inline]
    fn promoted(&self) -> Option<&Shards> {
        // Acquire: pairs with the Release store in promote_locked, so the
        // shard set's contents are visible before we use them.
        self.deref_set(self.central.sharded.load(Ordering::Acquire))
    }

    #[inline]
    fn promoted_under_lock(&self) -> Option<&Shards> {
        // Relaxed suffices: we hold the central lock, and the promoter
        // stored the pointer before releasing that lock, so the lock's
        // release/acquire already orders the store (and the set's
        // initialisation) before this load.
        self.deref_set(self.central.sharded.load(Ordering::Relaxed))
    }

    /// How many times the map promoted itself: 0 or 1.
    pub fn promotions(&self) -> u32 {
        // Relaxed: a statistic.
        self.promotions.load(Ordering::Relaxed)
    }

    /// Notes that the thread with token `me` holds the central lock
    /// exclusively; promotes when the handoffs of the recent window say the
    /// lock's lines are hot. Out of line: a single-threaded map never gets
    /// here (its holder never changes).
    #[cold]
    #[inline(never)]
    fn handoff(&self, d: &mut CentralData, me: usize) {
        let first = d.hot.last == 0;
        d.hot.last = me;
        if first || !self.promotes {
            return;
        }
        let now = crate::stats::now_ns();
        if d.hot.count == 0 || now.saturating_sub(d.hot.since) > PROMOTE_WINDOW_NS {
            // A new window starts with this handoff.
            d.hot.count = 0;
            d.hot.since = now;
        }
        d.hot.count += 1;
        if d.hot.count >= PROMOTE_HANDOFFS {
            self.promote_locked(d);
        }
    }

    /// With the central write lock held and the map centralised.
    fn promote_locked(&self, g: &mut CentralData) {
        if self.promoted_under_lock().is_some() || !self.promotes {
            return;
        }
        let n = shard_count(self.topo.cpus()) as usize;
        let set = Box::new(ShardSet::with_first(
            self.id,
            n,
            std::mem::take(&mut g.tree),
        ));
        self.counters.set_len(0);
        // Relaxed: a statistic; the promotion itself is published below.
        self.promotions.fetch_add(1, Ordering::Relaxed);
        // Release: publishes the fully built set (see promoted()).
        self.central
            .sharded
            .store(Box::into_raw(set), Ordering::Release);
    }

    /// For a modifier: the central write guard, or the shards.
    #[inline(always)]
    fn write_mode(&self, c: u8) -> Mode<'_, Held<'_, WriteGuard<'_, CentralData>>> {
        if let Some(s) = self.promoted() {
            return Mode::Sharded(s);
        }
        let lock = &self.central.lock;
        let mut g = self.counters.acquire_in(
            c,
            || lock.try_write(),
            || lock.write(),
            (lock as *const RwLock<CentralData>).cast(),
            true,
        );
        let me = crate::stats::thread_token();
        if g.hot.last != me {
            self.handoff(&mut g, me);
        }
        match self.promoted_under_lock() {
            Some(s) => Mode::Sharded(s),
            None => Mode::Central(g),
        }
    }

    /// For a walker: the central read guard, or the shards.
    #[inline]
    fn read_mode(&self, c: u8) -> Mode<'_, Held<'_, ReadGuard<'_, CentralData>>> {
        if let Some(s) = self.promoted() {
            return Mode::Sharded(s);
        }
        let g = self.counters.read_in(&self.central.lock, c);
        match self.promoted_under_lock() {
            Some(s) => Mode::Sharded(s),
            None => Mode::Central(g),
        }
    }

    #[inline]
    fn my_shard(&self, s: &Shards) -> usize {
        SpreadCpus.pick(&self.topo, s.count())
    }

    /// `insert` under context byte `c`. Split by hand rather than through
    /// `stats::with_op`, whose closure captures the arguments: the compiler
    /// stored them to the stack on every call for the cold probed path.
    #[inline(always)]
    fn insert_in(&self, c: u8, iv: Interval, vma: VmaId) -> Result<Handle, RmapError> {
        let iv = iv.validate()?;
        match self.write_mode(c) {
            Mode::Central(mut g) => {
                let snap = g.recording().then(|| g.trace_snapshot());
                let (slot, gen) = g.insert(iv, vma);
                if let Some(snap) = snap {
                    g.trace_entry(slot);
                    g.trace_changed(snap);
                }
                self.counters.set_len(g.len());
                Ok(Handle::new(self.id, 0, slot, gen))
            }
            Mode::Sharded(s) => Ok(s.insert(c, self.id, self.my_shard(s), iv, vma)),
        }
    }

    /// `insert` when timed or recorded.
    #[cold]
    #[inline(never)]
    fn insert_probed(&self, c: u8, iv: Interval, vma: VmaId) -> Result<Handle, RmapError> {
        self.insert_in(c, iv, vma)
    }

    /// `remove` under context byte `c` (split like `insert_in`).
    #[inline(always)]
    fn remove_in(&self, c: u8, h: Handle) -> Result<(), RmapError> {
        self.check_map(h)?;
        match self.write_mode(c) {
            Mode::Central(mut g) => {
                resolve_shard(h, 1)?;
                let snap = if g.recording() {
                    g.check(h.slot(), h.gen())?;
                    g.trace_entry(h.slot());
                    Some(g.trace_snapshot())
                } else {
                    None
                };
                g.remove(h.slot(), h.gen())?;
                if let Some(snap) = snap {
                    g.trace_changed(snap);
                }
                self.counters.set_len(g.len());
                Ok(())
            }
            Mode::Sharded(s) => s.remove(c, h),
        }
    }

    /// `remove` when timed or recorded.
    #[cold]
    #[inline(never)]
    fn remove_probed(&self, c: u8, h: Handle) -> Result<(), RmapError> {
        self.remove_in(c, h)
    }

    /// The map part of the resolver, before any lock; the shard part
    /// depends on the mode.
    #[inline]
    fn check_map(&self, h: Handle) -> Result<(), RmapError> {
        resolve_map(self.id, h)
    }
}

impl Drop for Aspace {
    fn drop(&mut self) {
        // Acquire pairs with the Release publish in promote_locked (with &mut self any ordering would do).
        let p = self.central.sharded.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: p came from Box::into_raw in promote_locked and is
            // freed only here; `&mut self` proves no borrow of it remains.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

impl ReverseMap for Aspace {
    fn design(&self) -> Design {
        if self.promotes {
            Design::Aspace
        } else {
            Design::AspaceCentral
        }
    }

    #[inline]
    fn insert(&self, iv: Interval, vma: VmaId) -> Result<Handle, RmapError> {
        let c = crate::stats::op_ctx();
        if crate::stats::is_probed(c) {
            return self.insert_probed(c, iv, vma);
        }
        self.insert_in(crate::stats::QUIET, iv, vma)
    }

    fn insert_after(&self, parent: Handle, iv: Interval, vma: VmaId) -> Result<Handle, RmapError> {
        crate::stats::with_op((), move |c, ()| {
            let iv = iv.validate()?;
            self.check_map(parent)?;
            match self.write_mode(c) {
                Mode::Central(mut g) => {
                    resolve_shard(parent, 1)?;
                    let snap = g.recording().then(|| g.trace_snapshot());
                    let (slot, gen) = g.insert_after(parent.slot(), parent.gen(), iv, vma)?;
                    if let Some(snap) = snap {
                        g.trace_entry(slot);
                        g.trace_changed(snap);
                    }
                    self.counters.set_len(g.len());
                    Ok(Handle::new(self.id, 0, slot, gen))
                }
                Mode::Sharded(s) => s.insert_after(c, parent, iv, vma),
            }
        })
    }

    fn check_handle(&self, h: Handle) -> Result<(), RmapError> {
        crate::stats::with_op((), move |c, ()| {
            self.check_map(h)?;
            match self.read_mode(c) {
                Mode::Central(g) => {
                    resolve_shard(h, 1)?;
                    g.check(h.slot(), h.gen())
                }
                Mode::Sharded(s) => s.check(h),
            }
        })
    }

    #[inline]
    fn remove(&self, h: Handle) -> Result<(), RmapError> {
        let c = crate::stats::op_ctx();
        if crate::stats::is_probed(c) {
            return self.remove_probed(c, h);
        }
        self.remove_in(crate::stats::QUIET, h)
    }

    fn insert_batch(
        &self,
        items: &[(Interval, VmaId)],
        out: &mut Vec<Handle>,
    ) -> Result<(), RmapError> {
        crate::stats::with_op(out, move |c, out| {
            crate::precheck_items(items)?;
            match self.write_mode(c) {
                Mode::Central(mut g) => {
                    out.reserve(items.len());
                    g.reserve(items.len());
                    let rec = g.recording();
                    for &(iv, vma) in items {
                        let snap = rec.then(|| g.trace_snapshot());
                        let (slot, gen) = g.insert(iv, vma);
                        if let Some(snap) = snap {
                            g.trace_entry(slot);
                            g.trace_changed(snap);
                        }
                        out.push(Handle::new(self.id, 0, slot, gen));
                    }
                    self.counters.set_len(g.len());
                }
                Mode::Sharded(s) => s.insert_batch(c, self.id, self.my_shard(s), items, out),
            }
            Ok(())
        })
    }

    /// One lock hold for the whole batch (one per involved shard, ascending,
    /// once promoted); every parent is validated before anything is inserted.
    fn insert_after_batch(
        &self,
        items: &[(Handle, Interval, VmaId)],
        out: &mut Vec<Handle>,
    ) -> Result<(), RmapError> {
        crate::stats::with_op(out, move |c, out| {
            for &(parent, iv, _) in items {
                iv.validate()?;
                self.check_map(parent)?;
            }
            match self.write_mode(c) {
                Mode::Central(mut g) => {
                    for &(parent, _, _) in items {
                        resolve_shard(parent, 1)?;
                        g.check(parent.slot(), parent.gen())?;
                    }
                    out.reserve(items.len());
                    g.reserve(items.len());
                    let rec = g.recording();
                    for &(parent, iv, vma) in items {
                        let snap = rec.then(|| g.trace_snapshot());
                        let (slot, gen) = g.insert_after(parent.slot(), parent.gen(), iv, vma)?;
                        if let Some(snap) = snap {
                            g.trace_entry(slot);
                            g.trace_changed(snap);
                        }
                        out.push(Handle::new(self.id, 0, slot, gen));
                    }
                    self.counters.set_len(g.len());
                    Ok(())
                }
                Mode::Sharded(s) => s.insert_after_batch(c, items, out),
            }
        })
    }

    fn remove_batch(&self, handles: &[Handle]) -> Result<(), RmapError> {
        crate::stats::with_op((), move |c, ()| {
            crate::precheck_batch(self.id, handles)?;
            match self.write_mode(c) {
                Mode::Central(mut g) => {
                    for h in handles {
                        resolve_shard(*h, 1)?;
                        g.check(h.slot(), h.gen())?;
                    }
                    let rec = g.recording();
                    for h in handles {
                        let snap = if rec {
                            g.trace_entry(h.slot());
                            Some(g.trace_snapshot())
                        } else {
                            None
                        };
                        g.remove_checked(h.slot());
                        if let Some(snap) = snap {
                            g.trace_changed(snap);
                        }
                    }
                    self.counters.set_len(g.len());
                    Ok(())
                }
                Mode::Sharded(s) => s.remove_batch(c, handles),
            }
        })
    }

    fn walk(&self, range: Interval, f: &mut dyn FnMut(Interval, VmaId)) {
        crate::stats::with_op(f, move |c, f| {
            if range.first > range.last {
                return;
            }
            match self.read_mode(c) {
                Mode::Central(g) => g.walk(range, f),
                Mode::Sharded(s) => s.walk_stable(range, f),
            }
        })
    }

    fn walk_concurrent(&self, range: Interval, f: &mut dyn FnMut(Interval, VmaId)) {
        crate::stats::with_op(f, move |c, f| {
            if range.first > range.last {
                return;
            }
            match self.read_mode(c) {
                Mode::Central(g) => g.walk(range, f),
                Mode::Sharded(s) => s.walk_each(range, f),
            }
        })
    }

    fn len(&self) -> usize {
        self.counters.len() + self.promoted().map_or(0, Shards::len)
    }

    fn memory_bytes(&self) -> usize {
        let central = self.central.lock.read().heap_bytes();
        let sharded = self
            .promoted()
            .map_or(0, |s| std::mem::size_of::<Shards>() + s.heap_bytes());
        std::mem::size_of::<Self>() + central + sharded
    }

    fn stats(&self) -> LockStats {
        let mut st = LockStats::default();
        st.add(&self.counters);
        match self.promoted() {
            Some(s) => s.add_stats(&mut st),
            None => st.shards = 1,
        }
        st
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    impl Aspace {
        /// Takes the central lock as if from the thread with `token`.
        fn hold_as(&self, token: usize) {
            if let Mode::Central(mut g) = self.write_mode(crate::stats::op_ctx()) {
                if g.hot.last != token {
                    self.handoff(&mut g, token);
                }
            }
        }
    }

    fn iv() -> Interval {
        Interval { first: 3, last: 9 }
    }

    #[test]
    fn one_thread_never_promotes() {
        // Miri: 300 rounds (each costs ~30 ms interpreted), still several
        // times the handoffs a promotion needs.
        let rounds: u64 = if cfg!(miri) { 300 } else { 200_000 };
        let a = Aspace::new(Topology::Os);
        for v in 0..rounds {
            let h = a.insert(iv(), v).unwrap();
            a.remove(h).unwrap();
        }
        assert!(!a.is_promoted());
        assert_eq!(a.promotions(), 0);
        assert_eq!(a.stats().acquisitions, 2 * rounds);
    }

    /// History cannot veto: after a long uncontended run, a burst of
    /// handoffs promotes. (Each attempt is 2 * PROMOTE_HANDOFFS holds in a
    /// tight loop, far inside the window unless the thread is preempted
    /// for longer than it; the retries make that harmless.)
    #[test]
    fn handoffs_promote_after_long_history() {
        // Miri: a shorter history, still several times the handoffs a
        // promotion needs (each round costs ~30 ms interpreted).
        let history: u64 = if cfg!(miri) { 300 } else { 1_000_000 };
        let a = Aspace::new(Topology::Os);
        for v in 0..history {
            let h = a.insert(iv(), v).unwrap();
            a.remove(h).unwrap();
        }
        let kept = a.insert(iv(), 7).unwrap();
        assert!(!a.is_promoted());
        for _attempt in 0..1000 {
            for _ in 0..PROMOTE_HANDOFFS {
                a.hold_as(1);
                a.hold_as(2);
            }
            if a.is_promoted() {
                break;
            }
        }
        assert!(a.is_promoted());
        assert_eq!(a.promotions(), 1);
        // Handles from before the promotion still work.
        a.remove(kept).unwrap();
        assert!(a.is_empty());
    }

    /// Handoffs spread thinner than the window never promote (each window
    /// restarts): a file used by many processes at an ordinary rate.
    #[test]
    fn slow_handoffs_do_not_promote() {
        let a = Aspace::new(Topology::Os);
        for k in 0..(3 * PROMOTE_HANDOFFS as usize) {
            a.hold_as(1 + k % 2);
            // Sleeping past the window between handoffs is always too slow.
            std::thread::sleep(Duration::from_nanos(PROMOTE_WINDOW_NS + 50_000));
        }
        assert!(!a.is_promoted());
    }

    #[test]
    fn central_ablation_ignores_handoffs() {
        let a = Aspace::new_central(Topology::Os);
        for _ in 0..(4 * PROMOTE_HANDOFFS) {
            a.hold_as(1);
            a.hold_as(2);
        }
        assert!(!a.is_promoted());
        assert_eq!(a.design(), Design::AspaceCentral);
    }
}
