//! Lock counters, per call site.
//!
//! Every design counts, for each of its locks, the holds and the contended
//! acquisitions (a failed `try_lock` before blocking counts once), split by
//! the [`CallSite`] the calling thread declared with [`set_call_site`]. The
//! counters of one lock sit together on their own cache lines
//! ([`CachePadded`]) so that counting never false-shares with the data the
//! lock protects; sharded designs keep one such block per shard, so counting
//! adds no shared line to a modifier.
//!
//! Hold times are measured only while [`set_hold_timing`] is on (a relaxed
//! global flag). Every map operation first tests one global byte that says
//! whether any probe was ever used in this process: a declared call site
//! (the first [`set_call_site`] of any thread sets it for good), a
//! recording, or timing. Until then every thread's call site is
//! [`CallSite::Other`], so the operation counts its holds there without
//! reading its thread's context byte (the quiet path: one test, a constant
//! counter index, no clock). Once a probe is in use, operations take an
//! out-of-line copy that reads the context byte once and counts per site,
//! exactly as informative. The cost is measured in
//! `crates/rmap/BENCHMARKS.md` ("Lock-hold accounting cost").
//!
//! # Concurrency
//!
//! Counters are relaxed atomics: [`crate::ReverseMap::stats`] may run at any
//! time and sees recent, not necessarily simultaneous, values. The call
//! site and the recording switch are per thread; the timing switch is
//! global and reaches other threads at their next map operation; so does
//! the sticky "a probe is in use" byte, which only the thread that declares
//! a site or records needs to see at once (it set the byte itself).
//!
//! # Example
//!
//! ```
//! use rmap::stats::{set_call_site, CallSite};
//! use rmap::{Design, Interval, ReverseMap, Topology};
//!
//! let m = Design::Linux.build(&Topology::Os);
//! {
//!     let _site = set_call_site(CallSite::MmapLink);
//!     m.insert(Interval::new(0, 9).unwrap(), 1).unwrap();
//! }
//! let st = m.stats();
//! assert_eq!(st.site(CallSite::MmapLink).holds, 1);
//! assert_eq!(st.acquisitions, 1);
//! ```

use std::marker::PhantomData;

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicU64, AtomicUsize, Ordering, ReadGuard, RwLock, WriteGuard};

pub use crate::probe::{
    call_site, hold_timing, set_call_site, set_hold_timing, CallSite, CallSiteGuard,
};
pub(crate) use crate::probe::{
    is_probed, is_timed_or_recorded, op_ctx, thread_token, with_op, QUIET, RECORDING, SITE_MASK,
    TIMING,
};

/// Monotonic nanoseconds, never 0 (0 means "not measured").
#[inline]
pub(crate) fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through the valid pointer we
    // pass; CLOCK_MONOTONIC always exists on Linux (vDSO, no system call).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
        | 1
}

/// Counters of one lock, per call site, plus the entry count of what it
/// protects (so that `len()` never takes a lock) and the lock's identity
/// (map id and shard) for the event recorder.
#[derive(Debug)]
pub(crate) struct LockCounters {
    /// Indexed by the context byte's site bits (8 entries so that the
    /// index needs only a mask; entry 7 is never used).
    holds: [AtomicU64; SLOTS],
    contended: [AtomicU64; SLOTS],
    hold_ns: [AtomicU64; SLOTS],
    len: AtomicUsize,
    map: u32,
    shard: u32,
}

const SLOTS: usize = SITE_MASK as usize + 1;

/// [`LockCounters`] on cache lines of their own.
pub(crate) type PaddedCounters = CachePadded<LockCounters>;

impl Default for LockCounters {
    fn default() -> Self {
        LockCounters::new(0, 0)
    }
}

impl LockCounters {
    /// Counters of the lock of shard `shard` of map `map`.
    pub(crate) fn new(map: u32, shard: u32) -> Self {
        LockCounters {
            holds: std::array::from_fn(|_| AtomicU64::new(0)),
            contended: std::array::from_fn(|_| AtomicU64::new(0)),
            hold_ns: std::array::from_fn(|_| AtomicU64::new(0)),
            len: AtomicUsize::new(0),
            map,
            shard,
        }
    }

    // Relaxed everywhere below: the counters are statistics; nothing is
    // published through them and readers accept any recent value. `len` is
    // only written while the lock it describes is held exclusively, so the
    // lock's own acquire/release orders it against the data it counts.

    /// Counts one hold; `write`: the lock is held exclusively.
    #[inline(always)]
    pub(crate) fn acquired(&self, ctx: u8, write: bool) {
        let holds = &self.holds[(ctx & SITE_MASK) as usize];
        if write {
            // Only exclusive holders of the counted lock write this counter
            // this way, and consecutive exclusive holders are ordered by the
            // lock's own acquire/release, so a plain load and store loses no
            // count and needs no locked read-modify-write. Shared holders
            // (below) may run concurrently with each other and keep the RMW;
            // they never overlap an exclusive holder. Relaxed atomics (not a
            // plain integer) because `add_to` reads the counters concurrently.
            holds.store(holds.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        } else {
            holds.fetch_add(1, Ordering::Relaxed);
        }
    }
    #[inline]
    pub(crate) fn contended(&self, ctx: u8) {
        self.contended[(ctx & SITE_MASK) as usize].fetch_add(1, Ordering::Relaxed);
    }
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }
    /// Call only with the counted lock held exclusively.
    #[inline]
    pub(crate) fn set_len(&self, n: usize) {
        self.len.store(n, Ordering::Relaxed);
    }

    /// Acquires a lock through `try_lock` (no wait) or `lock` (blocking),
    /// counting the hold for the thread's call site and a failed try as
    /// contended. `lock_word` is the lock's address (for the recorder).
    ///
    /// The default path tests one thread-local byte and one global flag;
    /// timing and recording take the out-of-line [`LockCounters::acquire_slow`].
    #[inline(always)]
    pub(crate) fn acquire<G>(
        &self,
        try_lock: impl FnOnce() -> Option<G>,
        lock: impl FnOnce() -> G,
        lock_word: *const u8,
        write: bool,
    ) -> Held<'_, G> {
        self.acquire_in(op_ctx(), try_lock, lock, lock_word, write)
    }

    /// [`LockCounters::acquire`] with the context byte read by the caller
    /// ([`op_ctx`]) once per operation: where the caller has branched on
    /// [`is_probed`] and inlined this, the compiler drops every probe test.
    #[inline(always)]
    pub(crate) fn acquire_in<G>(
        &self,
        ctx: u8,
        try_lock: impl FnOnce() -> Option<G>,
        lock: impl FnOnce() -> G,
        lock_word: *const u8,
        write: bool,
    ) -> Held<'_, G> {
        if is_timed_or_recorded(ctx) {
            return self.acquire_slow(ctx, try_lock, lock, lock_word, write);
        }
        let guard = match try_lock() {
            Some(g) => g,
            None => {
                self.contended(ctx);
                lock()
            }
        };
        self.acquired(ctx, write);
        Held {
            guard,
            ctx,
            counters: PhantomData,
        }
    }

    #[cold]
    #[inline(never)]
    fn acquire_slow<G>(
        &self,
        ctx: u8,
        try_lock: impl FnOnce() -> Option<G>,
        lock: impl FnOnce() -> G,
        lock_word: *const u8,
        write: bool,
    ) -> Held<'_, G> {
        let t0 = now_ns();
        let guard = match try_lock() {
            Some(g) => g,
            None => {
                self.contended(ctx);
                lock()
            }
        };
        self.acquired(ctx, write);
        let start = now_ns();
        SLOW_HOLDS.with(|s| {
            s.borrow_mut()
                .push((t0, start, self as *const LockCounters))
        });
        if ctx & RECORDING != 0 {
            crate::trace::push_pending(crate::trace::LockEvent {
                map: self.map,
                shard: self.shard,
                write,
                site: CallSite::from_bits(ctx),
                hold_ns: 0,
                wait_ns: start.saturating_sub(t0),
                lines_written: 0,
                lines_read: 0,
                lock_line_written_as_data: false,
            });
            // Acquiring a reader-writer lock writes its word either way, and
            // the hold counter beside it; an exclusive hold also stores the
            // entry count, and a timed one adds its time (each on a line of
            // its own). The counters are the lab's instrumentation, not the
            // kernel's: they are marked as such (`LineTouch::is_counter`).
            crate::trace::touch(lock_word, 8, true);
            crate::trace::touch_counter((self as *const Self).cast(), true);
            if write {
                crate::trace::touch_counter((&self.len as *const AtomicUsize).cast(), true);
            }
            if ctx & TIMING != 0 {
                crate::trace::touch_counter(self.hold_ns.as_ptr().cast(), true);
            }
        }
        Held {
            guard,
            ctx,
            counters: PhantomData,
        }
    }

    /// Write-locks `lock` under the operation's context byte `ctx`
    /// ([`with_op`]), counting the hold and a failed try first.
    #[inline(always)]
    pub(crate) fn write_in<'a, T>(
        &'a self,
        lock: &'a RwLock<T>,
        ctx: u8,
    ) -> Held<'a, WriteGuard<'a, T>> {
        self.acquire_in(
            ctx,
            || lock.try_write(),
            || lock.write(),
            (lock as *const RwLock<T>).cast(),
            true,
        )
    }

    /// [`LockCounters::read`] with the operation's context byte.
    #[inline(always)]
    pub(crate) fn read_in<'a, T>(
        &'a self,
        lock: &'a RwLock<T>,
        ctx: u8,
    ) -> Held<'a, ReadGuard<'a, T>> {
        self.acquire_in(
            ctx,
            || lock.try_read(),
            || lock.read(),
            (lock as *const RwLock<T>).cast(),
            false,
        )
    }

    /// Read-locks `lock`, counting the hold and a failed try first.
    #[inline(always)]
    pub(crate) fn read<'a, T>(&'a self, lock: &'a RwLock<T>) -> Held<'a, ReadGuard<'a, T>> {
        self.acquire(
            || lock.try_read(),
            || lock.read(),
            (lock as *const RwLock<T>).cast(),
            false,
        )
    }

    /// Adds this lock's counters to `s`.
    pub(crate) fn add_to(&self, s: &mut LockStats) {
        for i in 0..CallSite::COUNT {
            let site = &mut s.per_site[i];
            let h = self.holds[i].load(Ordering::Relaxed);
            let c = self.contended[i].load(Ordering::Relaxed);
            site.holds += h;
            site.contended += c;
            site.hold_ns += self.hold_ns[i].load(Ordering::Relaxed);
            s.acquisitions += h;
            s.contended += c;
        }
    }
}

/// A counted lock hold: the lock guard plus what ending the hold needs.
/// Derefs to the guard's target.
pub(crate) struct Held<'a, G> {
    guard: G,
    /// The context byte at acquisition, with the timing bit.
    ctx: u8,
    /// The counters outlive the hold (a timed hold finds them through
    /// `SLOW_HOLDS`; the default path needs no pointer, so it stores none).
    counters: PhantomData<&'a LockCounters>,
}

thread_local! {
    /// Start time and counters of this thread's timed or recorded holds,
    /// innermost last (holds nest: `sharded`'s outer lock, then a shard's;
    /// guards drop in reverse order of acquisition).
    static SLOW_HOLDS: std::cell::RefCell<Vec<(u64, u64, *const LockCounters)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

thread_local! {
    /// [`place_holds`] runs on this thread: each timed hold's first
    /// acquisition attempt and release go to [`PLACES`].
    static PLACING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// (first acquisition attempt, release), absolute ns, in the order the
    /// holds ended.
    static PLACES: std::cell::RefCell<Vec<(u64, u64)>> =
        const { std::cell::RefCell::new(Vec::new()) };
    /// The cost of one clock read on this thread, ns (0: not measured yet).
    static CLOCK_NS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Where the lock holds of one run of [`place_holds`]'s closure fell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    /// Each hold's first acquisition attempt and its release, ns from the
    /// run's start, in the order the holds ended (as `trace::record`
    /// lists them).
    pub holds: Vec<(u64, u64)>,
    /// The whole run, ns.
    pub elapsed_ns: u64,
    /// The cost of one clock read on this thread, ns: each gap between two
    /// stamps holds about one read (a stamp is taken inside its read), for
    /// the caller to take off.
    pub clock_ns: u64,
}

/// The cost of one read of the hold timing's clock on this thread: the
/// median of nine runs of 64 back-to-back reads, per read (at least 1 ns).
fn clock_cost_ns() -> u64 {
    let c = CLOCK_NS.get();
    if c != 0 {
        return c;
    }
    let mut runs: Vec<u64> = (0..9)
        .map(|_| {
            let t0 = now_ns();
            let mut last = t0;
            for _ in 0..64 {
                last = std::hint::black_box(now_ns());
            }
            last.saturating_sub(t0) / 64
        })
        .collect();
    runs.sort_unstable();
    let c = runs[runs.len() / 2].max(1);
    CLOCK_NS.set(c);
    c
}

/// Runs `work` with hold timing on (see [`set_hold_timing`]; restored
/// after) and returns, besides its value, where each of this thread's lock
/// holds fell in the run: the clock reads the timing makes anyway (before
/// the first acquisition attempt, at the release), kept per hold. Nothing
/// else is recorded (no lines, no arena copies, unlike `trace::record`),
/// so the time between two holds is the code's own plus the timing's few
/// instructions and one clock read ([`Placed::clock_ns`]). The timing
/// switch is global: other threads' holds are timed meanwhile, not placed.
pub fn place_holds<R>(work: impl FnOnce() -> R) -> (R, Placed) {
    /// Stops placing, also when `work` unwinds.
    struct Stop(bool);
    impl Drop for Stop {
        fn drop(&mut self) {
            PLACING.set(false);
            set_hold_timing(self.0);
        }
    }
    let clock_ns = clock_cost_ns();
    PLACES.with(|p| p.borrow_mut().clear());
    let stop = Stop(set_hold_timing(true));
    PLACING.set(true);
    let origin = now_ns();
    let out = work();
    let end = now_ns();
    drop(stop);
    let holds = PLACES.with(|p| {
        p.borrow_mut()
            .drain(..)
            .map(|(a, b)| (a.saturating_sub(origin), b.saturating_sub(origin)))
            .collect()
    });
    (
        out,
        Placed {
            holds,
            elapsed_ns: end.saturating_sub(origin),
            clock_ns,
        },
    )
}

/// Ends the innermost timed or recorded hold of this thread.
#[cold]
#[inline(never)]
fn end_slow(ctx: u8) {
    let Some((began, start, counters)) = SLOW_HOLDS.with(|s| s.borrow_mut().pop()) else {
        return;
    };
    let end = now_ns();
    let ns = end.saturating_sub(start);
    if PLACING.get() {
        PLACES.with(|p| p.borrow_mut().push((began, end)));
    }
    if ctx & TIMING != 0 {
        // SAFETY: the pointer was pushed by acquire_slow from a
        // `&'a LockCounters` whose Held<'a, _> is being dropped now: crate
        // code releases holds last-in, first-out (nested holds by scope,
        // several shards' guards through `Lifo`), so the entry on top is
        // this hold's and its counters are still borrowed, hence alive.
        let c = unsafe { &*counters };
        c.hold_ns[(ctx & SITE_MASK) as usize].fetch_add(ns, Ordering::Relaxed);
    }
    if ctx & RECORDING != 0 {
        crate::trace::finish_pending(ns);
    }
}

impl<G> Held<'_, G> {
    /// True when this hold is being recorded (lines should be counted).
    #[inline]
    pub(crate) fn recording(&self) -> bool {
        self.ctx & RECORDING != 0
    }
}

impl<G: std::ops::Deref> std::ops::Deref for Held<'_, G> {
    type Target = G::Target;
    #[inline]
    fn deref(&self) -> &G::Target {
        &self.guard
    }
}

impl<G: std::ops::DerefMut> std::ops::DerefMut for Held<'_, G> {
    #[inline]
    fn deref_mut(&mut self) -> &mut G::Target {
        &mut self.guard
    }
}

impl<G> Drop for Held<'_, G> {
    #[inline]
    fn drop(&mut self) {
        // The lock guard drops after this body, so the measured hold ends a
        // few instructions before the release: close enough.
        if self.ctx & (RECORDING | TIMING) != 0 {
            end_slow(self.ctx);
        }
    }
}

/// Holds, contended acquisitions and hold time of one call site.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SiteStats {
    /// Lock holds (shared or exclusive).
    pub holds: u64,
    /// Holds whose acquisition found the lock taken.
    pub contended: u64,
    /// Nanoseconds the lock was held, summed; counted only while
    /// [`set_hold_timing`] is on.
    pub hold_ns: u64,
}

/// Lock counters of one map, summed over its locks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockStats {
    /// Lock acquisitions (shared or exclusive), every site.
    pub acquisitions: u64,
    /// Acquisitions that found the lock taken (a failed try before blocking).
    pub contended: u64,
    /// Shards (independently locked parts) the map has now.
    pub shards: u32,
    /// The same split by [`CallSite`] (index [`CallSite::index`]).
    pub per_site: [SiteStats; CallSite::COUNT],
}

impl LockStats {
    pub(crate) fn add(&mut self, c: &LockCounters) {
        c.add_to(self);
    }

    /// The counters of one call site.
    pub fn site(&self, site: CallSite) -> SiteStats {
        self.per_site[site.index()]
    }

    /// Adds `other`'s counts to these (shards: the larger of the two).
    pub fn merge(&mut self, other: &LockStats) {
        self.acquisitions += other.acquisitions;
        self.contended += other.contended;
        self.shards = self.shards.max(other.shards);
        for (a, b) in self.per_site.iter_mut().zip(&other.per_site) {
            a.holds += b.holds;
            a.contended += b.contended;
            a.hold_ns += b.hold_ns;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Design, Interval, Topology};

    #[test]
    fn place_holds_stamps_each_hold_in_order_and_leaves_the_code_s_time_between() {
        let m = Design::Sharded.build(&Topology::Os);
        let pause = std::time::Duration::from_millis(1);
        let ops = || {
            let _s = set_call_site(CallSite::MmapLink);
            m.insert(Interval::new(0, 9).unwrap(), 1).unwrap();
            m.insert(Interval::new(5, 19).unwrap(), 2).unwrap();
            std::thread::sleep(pause);
            m.insert(Interval::new(7, 29).unwrap(), 3).unwrap();
        };
        let was = hold_timing();
        let (_, p) = place_holds(ops);
        assert_eq!(hold_timing(), was, "timing restored");
        // The same holds as the recorder sees, in the same order (sharded:
        // an outer lock around each shard's).
        let traced = crate::trace::record(|| {
            let _s = set_call_site(CallSite::MmapLink);
            m.insert(Interval::new(40, 49).unwrap(), 4).unwrap();
            m.insert(Interval::new(45, 59).unwrap(), 5).unwrap();
            m.insert(Interval::new(47, 69).unwrap(), 6).unwrap();
        });
        assert_eq!(p.holds.len(), traced.len());
        assert!(p.clock_ns >= 1);
        for (i, &(a, b)) in p.holds.iter().enumerate() {
            assert!(a <= b && b <= p.elapsed_ns, "hold {i}: {a}..{b}");
        }
        // Each insert's holds end before the next insert's begin; the
        // sleep lies between the second insert's last hold and the
        // third's first.
        let per = p.holds.len() / 3;
        let second_end = p.holds[2 * per - 1].1;
        let third_start = p.holds[2 * per..].iter().map(|h| h.0).min().unwrap();
        assert!(third_start >= second_end + pause.as_nanos() as u64);
        // Nothing is placed outside a run.
        let (_, q) = place_holds(|| ());
        assert!(q.holds.is_empty());
    }
}
