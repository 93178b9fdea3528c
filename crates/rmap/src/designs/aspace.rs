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
//!   the map starts as one lock and one tree on one cache line, and
//!   promotes itself (once, never back) to shards on either of two signals
//!   of contention, both counted on its exclusive holds:
//!   - *waits*, holds whose `try_lock` failed before the blocking lock:
//!     [`PROMOTE_WAITS`] of them within a period of [`PROMOTE_WAIT_PERIOD`]
//!     *contended* holds (holds that waited or handed off, below) promote.
//!     Counted in events, not time, so the rule reads the
//!     same on real cores, an overcommitted VM or an emulator (the kernel
//!     port's lock_stat runs under QEMU TCG, where the rate rule below
//!     never fires). The constants come from costs, as ski rental (see
//!     [`PROMOTE_WAITS`]).
//!   - *handoffs*, holds taken by a different thread than the previous
//!     one, which is when the lock word and tree header lines move between
//!     CPUs (at 2 threads the line moves on every acquisition while
//!     `try_lock` almost never fails): [`PROMOTE_HANDOFFS`] within
//!     [`PROMOTE_WINDOW_NS`] promote.
//!
//!   Both counts restart (a period of contended holds, a window of time),
//!   so a long uncontended history cannot veto a promotion (the ratio rule
//!   that came first could: BENCHMARKS.md). A single thread never waits
//!   and never hands off, so it never promotes; its cost is one compare of
//!   a thread token per hold, and it writes nothing (only contended holds
//!   are counted). The constants are internal, not knobs.
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
//! Central: the struct (lock word, tree header, the promotion rule's counts
//! and mode pointer on one padded line; the per-call-site counters on two
//! more; the topology and id on a fourth: 512 bytes) plus 56 bytes per arena
//! slot.
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
//! while the lock is handed between CPUs at a high rate, or waited for;
//! those are exactly the signals on which aspace stops using the central
//! line ([`PROMOTE_HANDOFFS`] handoffs within [`PROMOTE_WINDOW_NS`], or
//! [`PROMOTE_WAITS`] waits within [`PROMOTE_WAIT_PERIOD`] contended
//! holds), after which the line is only read (the mode pointer). Until then
//! the map is, by that measure, not hot, and one line per hold is cheaper
//! than two: the uncontended hold touches the lock word and the header, and
//! reads the rule's last holder, in one line, and the memory target above
//! keeps its margin. What the shared
//! line costs in the short time before promotion is part of the "promoted
//! after" time measured by `--example promo` (BENCHMARKS.md).

use crossbeam_utils::CachePadded;

use super::grouped::GroupTree;
use super::parts::{resolve_map, resolve_shard, ShardRule, SpreadCpus};
use super::shardset::{ShardSet, ShardTree};
use crate::stats::{Held, LockCounters, PaddedCounters};
use crate::sync::{AtomicPtr, AtomicU32, Ordering, ReadGuard, RwLock, WriteGuard};
use crate::{Design, Handle, Interval, LockStats, ReverseMap, RmapError, Topology, VmaId};

/// Promotion on waits: this many exclusive holds of the central lock that
/// could not be taken at once (the `try_lock` before the blocking lock
/// failed) within one period of [`PROMOTE_WAIT_PERIOD`] contended holds
/// promote the map. The same constant as the kernel port's
/// `ASPACE_PROMOTE_WAITS`.
///
/// Ski rental: each wait pays rent, at least a sleep and a wake-up (2.8 us:
/// `wake_ns` 2,761 calibrated on the 16-core Xeon,
/// `shared/measurements/device-16-2026-11-27/calib.json`), or a spin as
/// long as the hold waited out; promotion is the purchase, paid once: the
/// shards (a padded line each, for the map's life), the move of the tree
/// under the lock (the kernel moves every VMA, one grouped-tree insert
/// each: about 120 instructions by the callgrind count of BENCHMARKS.md,
/// 44 ns at the Xeon's 2.74 GHz), and a lock per shard on every stable walk
/// after. Buy once the rent paid reaches the price: 16 waits are 44 us, the
/// price of moving about 1,000 VMAs (200 processes mapping libc's five
/// segments). A smaller file overpays at most those 16 waits, once; a
/// larger one is bought early, where each wait queues behind many holders
/// and costs more than one wake-up. Not fitted to any measurement of this
/// rule.
#[cfg(not(loom))]
pub const PROMOTE_WAITS: u32 = 16;
/// Promotion on waits (1 under loom, so that the models reach promotion).
#[cfg(loom)]
pub const PROMOTE_WAITS: u32 = 1;
/// ... counted over periods of this many *contended* exclusive holds (the
/// kernel's `ASPACE_HOLDS_BITS`, 2^16): holds that waited or were a
/// handoff (a different thread than the previous holder). A hold by the
/// previous holder's thread that did not wait is not counted at all, so
/// the uncontended hold writes nothing. The period forgets only waits that
/// are rare next to the handoffs: a map that waits less than once in
/// `PROMOTE_WAIT_PERIOD / PROMOTE_WAITS` (4,096) contended holds never
/// promotes, and its rent is then under 1 ns per handoff (2.8 us / 4,096),
/// small beside the cache line transfer every handoff pays anyway, while
/// shards would cost memory for good and a lock each per walk. Uncontended
/// holds do not dilute the waits: a map that hands off rarely but waits on
/// most handoffs promotes at its [`PROMOTE_WAITS`]-th wait, when the rent
/// paid has reached the price, however long that took. A count over a
/// period, not a ratio since creation, so history cannot veto it.
pub const PROMOTE_WAIT_PERIOD: u32 = 1 << 16;
// `Heat::holds` is a u16 that wraps at the period's end.
const _: () = assert!(PROMOTE_WAIT_PERIOD == 1 << u16::BITS);

/// Promotion on handoffs: this many *handoffs* (an exclusive hold whose
/// thread differs from the previous holder's: the lock word and tree header
/// lines moved between CPUs) ...
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

/// What the central lock protects: the tree, and the promotion rule's
/// counts (only written under the exclusive lock, so plain fields).
#[derive(Debug, Default)]
struct CentralData {
    tree: GroupTree,
    hot: Heat,
}

/// The promotion rule's state: the recent-handoff window and the waits of
/// the current period of contended holds.
#[derive(Debug, Default)]
struct Heat {
    /// Token of the last exclusive holder's thread (0: none yet).
    last: usize,
    /// Handoffs in the current window.
    count: u32,
    /// Monotonic ns of the window's first handoff.
    since: u64,
    /// Contended exclusive holds (waited or handed off) in the current
    /// period, modulo [`PROMOTE_WAIT_PERIOD`] (2^16, the range of a
    /// `u16`): 0 again begins a new period.
    holds: u16,
    /// Holds of the current period that waited.
    waits: u32,
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
                    hot: Heat::default(),
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

    /// Counts an exclusive hold of the central lock by the thread with
    /// token `me` that did not wait. The uncontended case (the same thread
    /// as last time) is one compare and writes nothing; a handoff, or the
    /// map's first hold, goes to [`Aspace::contention`]. A hold that waited
    /// was counted before, by [`Aspace::waited`] on the blocking path,
    /// which also made `me` the last holder, so it stops at the compare.
    #[inline(always)]
    fn note_hold(&self, d: &mut CentralData, me: usize) {
        if d.hot.last != me {
            self.contention(d, me, false);
        }
    }

    /// The hold just taken by the thread with token `me` had to wait (its
    /// `try_write` failed): counts it. Called on the blocking path only,
    /// so the uncontended hold never tests for a wait.
    #[cold]
    #[inline(never)]
    fn waited(&self, d: &mut CentralData, me: usize) {
        self.contention(d, me, true);
    }

    /// The thread with token `me` holds the central lock exclusively, and
    /// its hold `waited`, or is a handoff, or is the map's first: the only
    /// holds that come here. A hold that waited or handed off is a
    /// contended hold: it advances the period (the
    /// [`PROMOTE_WAIT_PERIOD`]-th begins a new one, which its own wait
    /// then counts in). Counts the wait and the handoff, and promotes at
    /// the [`PROMOTE_WAITS`]-th wait of the period or when the handoff
    /// window has enough. Out of line: a single-threaded map gets here
    /// once.
    #[cold]
    #[inline(never)]
    fn contention(&self, d: &mut CentralData, me: usize, waited: bool) {
        let handoff = d.hot.last != 0 && d.hot.last != me;
        d.hot.last = me;
        if !self.promotes || !(waited || handoff) {
            return;
        }
        d.hot.holds = d.hot.holds.wrapping_add(1);
        if d.hot.holds == 0 {
            // PROMOTE_WAIT_PERIOD contended holds: a new period.
            d.hot.waits = 0;
        }
        if waited {
            d.hot.waits += 1;
            if d.hot.waits >= PROMOTE_WAITS {
                self.promote_locked(d);
                return;
            }
        }
        if !handoff {
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
            // Only when the try failed: a wait, counted here so that the
            // uncontended hold never tests for one.
            || {
                let mut g = lock.write();
                self.waited(&mut g, crate::stats::thread_token());
                g
            },
            (lock as *const RwLock<CentralData>).cast(),
            true,
        );
        self.note_hold(&mut g, crate::stats::thread_token());
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
                    g.trace_removal(h.slot());
                    Some(g.trace_snapshot())
                } else {
                    None
                };
                g.remove(h.slot(), h.gen())?;
                if let Some(snap) = snap {
                    g.trace_removed(snap);
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
                            g.trace_removal(h.slot());
                            Some(g.trace_snapshot())
                        } else {
                            None
                        };
                        g.remove_checked(h.slot());
                        if let Some(snap) = snap {
                            g.trace_removed(snap);
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
                self.note_hold(&mut g, token);
            }
        }

        /// One exclusive hold of the central lock by this thread, counted
        /// as if it had `waited` (the lock taken directly, so the rule
        /// sees only what the test says).
        fn hold_waiting(&self, waited: bool) {
            self.hold_by(crate::stats::thread_token(), waited);
        }

        /// One exclusive hold of the central lock as if by the thread with
        /// `token`, counted as write_mode() counts it, as if it had
        /// `waited`. The handoff window is then emptied, so that the
        /// handoff rate rule (tested above) never fires and a test sees
        /// the waits rule alone.
        fn hold_by(&self, token: usize, waited: bool) {
            let mut g = self.central.lock.write();
            if waited {
                self.waited(&mut g, token);
            }
            self.note_hold(&mut g, token);
            g.hot.count = 0;
        }

        /// Contended holds in the current period.
        fn period_holds(&self) -> usize {
            self.central.lock.read().hot.holds as usize
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

    /// Real waits promote: the test holds the central lock while a worker
    /// thread's insert finds it taken (its failed try is counted before it
    /// blocks), PROMOTE_WAITS times. One worker, so no handoffs but its
    /// first: the waits alone promote, at the PROMOTE_WAITS-th.
    #[test]
    fn waits_promote() {
        let a = Aspace::new(Topology::Os);
        let (go, jobs) = std::sync::mpsc::channel::<u64>();
        let (done_tx, done) = std::sync::mpsc::channel::<()>();
        std::thread::scope(|s| {
            s.spawn(|| {
                for v in jobs {
                    a.insert(iv(), v).unwrap();
                    done_tx.send(()).unwrap();
                }
            });
            for v in 0..u64::from(PROMOTE_WAITS) {
                assert!(!a.is_promoted(), "promoted after {v} waits");
                let held = a.central.lock.write();
                let before = a.stats().contended;
                go.send(v).unwrap();
                // The worker's try failed once the count moves; it is then
                // blocked on (or about to take) the lock we hold.
                while a.stats().contended == before {
                    std::thread::yield_now();
                }
                drop(held);
                done.recv().unwrap();
            }
            drop(go);
        });
        assert!(a.is_promoted());
        assert_eq!(a.promotions(), 1);
        assert_eq!(a.len(), PROMOTE_WAITS as usize);
    }

    /// Waits promote at the PROMOTE_WAITS-th within one period of
    /// contended holds, whatever the history; fewer per period never do,
    /// however many periods pass. The contended holds here are handoffs
    /// between two tokens (the rate rule held off by `hold_by`).
    #[test]
    #[cfg_attr(miri, ignore = "2^16 holds per period: too slow interpreted")]
    fn rare_waits_do_not_promote() {
        let period = PROMOTE_WAIT_PERIOD as usize;
        let a = Aspace::new(Topology::Os);
        let mut k = 0usize;
        let mut hand_off = |a: &Aspace, waited: bool| {
            a.hold_by(1 + k % 2, waited);
            k += 1;
        };
        hand_off(&a, false); // the first hold: no handoff yet
        assert_eq!(a.period_holds(), 0);
        // Waits every `every` handoffs: at most PROMOTE_WAITS - 1 in any
        // run of PROMOTE_WAIT_PERIOD contended holds, for three periods.
        let every = period / (PROMOTE_WAITS as usize - 1) + 1;
        for n in 0..3 * period {
            hand_off(&a, n % every == every - 1);
        }
        assert!(!a.is_promoted());
        assert_eq!(a.period_holds(), 0, "every handoff was counted");
        // Straddling a period's end: PROMOTE_WAITS - 1 waits at the end of
        // one period, the last as the first hold of the next.
        while a.period_holds() != period - PROMOTE_WAITS as usize {
            hand_off(&a, false);
        }
        for _ in 1..PROMOTE_WAITS {
            hand_off(&a, true);
        }
        assert_eq!(a.period_holds(), period - 1);
        assert!(!a.is_promoted());
        hand_off(&a, true);
        assert_eq!(a.period_holds(), 0, "a new period began");
        assert!(!a.is_promoted());
        // Then PROMOTE_WAITS waits in one period promote, exactly once.
        for _ in 2..PROMOTE_WAITS {
            hand_off(&a, true);
        }
        assert!(!a.is_promoted());
        hand_off(&a, true);
        assert!(a.is_promoted());
        assert_eq!(a.promotions(), 1);
    }

    /// Uncontended holds are not counted: they neither end a period nor
    /// dilute the waits. One thread that waits once every two periods'
    /// worth of uncontended holds promotes at its PROMOTE_WAITS-th wait;
    /// a rule that counted every hold would have forgotten the waits.
    #[test]
    #[cfg_attr(miri, ignore = "2^16 holds per period: too slow interpreted")]
    fn uncontended_holds_do_not_dilute_waits() {
        let a = Aspace::new(Topology::Os);
        for w in 1..=PROMOTE_WAITS as usize {
            for _ in 0..2 * PROMOTE_WAIT_PERIOD {
                a.hold_waiting(false);
            }
            assert!(!a.is_promoted(), "promoted after {} waits", w - 1);
            a.hold_waiting(true);
            if !a.is_promoted() {
                assert_eq!(a.period_holds(), w, "only the waits are counted");
            }
        }
        assert!(a.is_promoted());
        assert_eq!(a.promotions(), 1);
    }

    /// One thread that never waits holds for many periods, counts nothing
    /// (the uncontended hold writes nothing) and never promotes, and the
    /// waits rule is off in the central ablation.
    #[test]
    #[cfg_attr(miri, ignore = "2^16 holds per period: too slow interpreted")]
    fn holds_without_waits_do_not_promote() {
        let a = Aspace::new(Topology::Os);
        for _ in 0..4 * PROMOTE_WAIT_PERIOD + 7 {
            a.hold_waiting(false);
        }
        assert!(!a.is_promoted());
        assert_eq!(a.period_holds(), 0);
        let c = Aspace::new_central(Topology::Os);
        for _ in 0..2 * PROMOTE_WAITS {
            c.hold_waiting(true);
        }
        assert!(!c.is_promoted());
    }
}
