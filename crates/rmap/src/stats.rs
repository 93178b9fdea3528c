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

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::AtomicU8;

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicU64, AtomicUsize, Ordering, ReadGuard, RwLock, WriteGuard};

/// Where in the address-space code a lock hold comes from: the write sites
/// measured on the 112-core `execl` profile (`vma_link_file`, the unlink of
/// replaced mappings in `mmap_region`, `__split_vma`, the exit unlink batch,
/// fork's `insert_after`), the rmap walk, and everything else.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum CallSite {
    /// Linking a new mapping (`mmap_region` -> `vma_link_file`, exec).
    MmapLink = 0,
    /// Unlinking mappings that a new `mmap` replaces (`MAP_FIXED` over them).
    ReplaceUnlink = 1,
    /// Splitting or merging a mapping (`__split_vma`, `mprotect`'s RELRO split).
    Split = 2,
    /// The exit / `munmap` unlink (batched per file since 2024).
    ExitUnlink = 3,
    /// Fork linking a child's mapping next to its parent's (`dup_mmap`).
    ForkInsertAfter = 4,
    /// An rmap walk (reclaim, migration, truncate).
    Walk = 5,
    /// Anything not declared.
    #[default]
    Other = 6,
}

impl CallSite {
    /// Number of call sites.
    pub const COUNT: usize = 7;

    /// Every call site, in index order.
    pub const ALL: [CallSite; CallSite::COUNT] = [
        CallSite::MmapLink,
        CallSite::ReplaceUnlink,
        CallSite::Split,
        CallSite::ExitUnlink,
        CallSite::ForkInsertAfter,
        CallSite::Walk,
        CallSite::Other,
    ];

    /// A short snake_case name for reports.
    pub fn name(self) -> &'static str {
        match self {
            CallSite::MmapLink => "mmap_link",
            CallSite::ReplaceUnlink => "replace_unlink",
            CallSite::Split => "split",
            CallSite::ExitUnlink => "exit_unlink",
            CallSite::ForkInsertAfter => "fork_insert_after",
            CallSite::Walk => "walk",
            CallSite::Other => "other",
        }
    }

    /// Index in `0..COUNT`.
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    #[inline]
    fn from_bits(b: u8) -> CallSite {
        match b & SITE_MASK {
            0 => CallSite::MmapLink,
            1 => CallSite::ReplaceUnlink,
            2 => CallSite::Split,
            3 => CallSite::ExitUnlink,
            4 => CallSite::ForkInsertAfter,
            5 => CallSite::Walk,
            _ => CallSite::Other,
        }
    }
}

/// Low bits of the thread's context byte: the call site.
const SITE_MASK: u8 = 0x07;
/// High bit of the context byte: this thread is recording lock events.
pub(crate) const RECORDING: u8 = 0x80;
/// The global timing flag's value when on; [`op_ctx`] ORs it with the
/// context byte so that one test covers both switches.
const TIMING: u8 = 0x40;
/// Set in the context byte of every operation that did not take the quiet
/// path ([`op_ctx`]): some thread has declared a call site or recorded, so
/// this operation reads its thread's context byte.
const SITED: u8 = 0x20;
/// The context byte of an operation while no probe of any kind was ever
/// switched on in this process: no call site declared by any thread (so
/// every thread's site is [`CallSite::Other`]), no recording, no timing.
pub(crate) const QUIET: u8 = CallSite::Other as u8;

thread_local! {
    /// The calling thread's call site (low bits) and recording flag.
    static CTX: Cell<u8> = const { Cell::new(CallSite::Other as u8) };
}

#[inline]
pub(crate) fn ctx() -> u8 {
    CTX.with(Cell::get)
}

/// A nonzero number that differs between threads alive at the same time:
/// the address of this thread's context byte (no extra state, and the
/// address is computed anyway on the lock path).
#[cfg(not(loom))]
#[inline]
pub(crate) fn thread_token() -> usize {
    CTX.with(|c| c as *const Cell<u8> as usize)
}

/// Under loom every modelled thread shares one OS thread, so the token is
/// loom's per-thread ticket plus one.
#[cfg(loom)]
pub(crate) fn thread_token() -> usize {
    crate::topology::emulated_thread_id() as usize + 1
}

#[inline]
pub(crate) fn set_recording(on: bool) -> bool {
    if on {
        enable_probe(RECORDED);
    }
    CTX.with(|c| {
        let old = c.get();
        c.set(if on {
            old | RECORDING
        } else {
            old & !RECORDING
        });
        old & RECORDING != 0
    })
}

/// Restores the previous call site when dropped (see [`set_call_site`]).
#[derive(Debug)]
#[must_use = "the call site is restored when the guard drops"]
pub struct CallSiteGuard {
    prev: CallSite,
}

impl Drop for CallSiteGuard {
    fn drop(&mut self) {
        let prev = self.prev as u8;
        CTX.with(|c| c.set((c.get() & !SITE_MASK) | prev));
    }
}

/// Declares that the calling thread's lock holds, until the guard drops,
/// come from `site`. Nests: the guard restores the site that was current.
/// Thread-local; costs one byte store.
pub fn set_call_site(site: CallSite) -> CallSiteGuard {
    enable_probe(SITES);
    CTX.with(|c| {
        let old = c.get();
        c.set((old & !SITE_MASK) | site as u8);
        CallSiteGuard {
            prev: CallSite::from_bits(old),
        }
    })
}

/// The calling thread's current call site.
pub fn call_site() -> CallSite {
    CallSite::from_bits(ctx())
}

/// Which probes this process has switched on, one bit each: [`TIMING`]
/// (on and off with [`set_hold_timing`]), [`SITES`] (set by the first
/// [`set_call_site`] of any thread, never cleared) and [`RECORDED`] (set by
/// the first recording, never cleared). While it is 0, every thread's
/// context byte is [`QUIET`], so an operation need not read it: the
/// per-call-site accounting costs one test of this byte per operation
/// until someone uses it. Not a loom atomic: it is configuration, not part
/// of any protocol.
static PROBES: AtomicU8 = AtomicU8::new(0);
/// [`PROBES`] bit: some thread has declared a call site.
const SITES: u8 = 0x01;
/// [`PROBES`] bit: some thread has recorded lock events.
const RECORDED: u8 = 0x02;

/// Sets a sticky [`PROBES`] bit (no write once it is set, so that threads
/// declaring call sites do not bounce the flag's line between CPUs).
#[inline]
fn enable_probe(bit: u8) {
    // Relaxed: the thread that sets the bit reads it in program order on
    // its next operation, which is the only thread whose context byte the
    // bit concerns (every other thread's byte is still QUIET until it
    // declares a site or records itself, and then sets the bit itself).
    if PROBES.load(std::sync::atomic::Ordering::Relaxed) & bit == 0 {
        PROBES.fetch_or(bit, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Switches hold-time measurement on or off for every thread. While on,
/// every lock hold reads the monotonic clock twice and adds its length to
/// its lock's [`SiteStats::hold_ns`]. Returns the previous setting.
pub fn set_hold_timing(on: bool) -> bool {
    // Relaxed: a configuration flag; a thread that sees the change a little
    // late measures a few holds more or fewer, which is acceptable.
    let old = if on {
        PROBES.fetch_or(TIMING, std::sync::atomic::Ordering::Relaxed)
    } else {
        PROBES.fetch_and(!TIMING, std::sync::atomic::Ordering::Relaxed)
    };
    old & TIMING != 0
}

/// Whether hold timing is on.
#[inline]
pub fn hold_timing() -> bool {
    probes() & TIMING != 0
}

/// The operation's context byte: [`QUIET`] while no probe was ever on,
/// else the calling thread's context byte (call site, recording bit) with
/// the global timing bit and [`SITED`]. Read once per operation.
///
/// Written so that a caller branching on [`is_probed`] gets, on its
/// not-probed side, the constant [`QUIET`]: the compiler sees that the
/// other arm always sets [`SITED`], and drops the thread-local read, the
/// probe tests of every hold and the call-site indexing from the fast path.
#[inline(always)]
pub(crate) fn op_ctx() -> u8 {
    let g = probes();
    if g == 0 {
        QUIET
    } else {
        ctx() | (g & TIMING) | SITED
    }
}

/// True when an operation under context byte `ctx` must take its probed
/// (out-of-line) copy: some probe is on in this process.
#[inline(always)]
pub(crate) fn is_probed(ctx: u8) -> bool {
    ctx & (RECORDING | TIMING | SITED) != 0
}

/// True when a hold under context byte `ctx` is timed or recorded.
#[inline(always)]
fn is_timed_or_recorded(ctx: u8) -> bool {
    ctx & (RECORDING | TIMING) != 0
}

/// Runs one map operation `op(ctx, arg)` with the operation's context
/// byte, read once. The default (quiet) case calls an inlined copy of `op`
/// with the constant [`QUIET`], in which the compiler drops every probe
/// test of every hold; the probed case calls an out-of-line copy.
#[inline(always)]
pub(crate) fn with_op<A, R>(arg: A, op: impl FnOnce(u8, A) -> R + Copy) -> R {
    let c = op_ctx();
    if is_probed(c) {
        probed_op(op, c, arg)
    } else {
        op(QUIET, arg)
    }
}

#[cold]
#[inline(never)]
fn probed_op<A, R>(op: impl FnOnce(u8, A) -> R, c: u8, arg: A) -> R {
    op(c, arg)
}

/// [`PROBES`].
#[inline(always)]
fn probes() -> u8 {
    // Relaxed: see set_hold_timing and enable_probe.
    PROBES.load(std::sync::atomic::Ordering::Relaxed)
}

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
        SLOW_HOLDS.with(|s| s.borrow_mut().push((start, self as *const LockCounters)));
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
    static SLOW_HOLDS: std::cell::RefCell<Vec<(u64, *const LockCounters)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Ends the innermost timed or recorded hold of this thread.
#[cold]
#[inline(never)]
fn end_slow(ctx: u8) {
    let Some((start, counters)) = SLOW_HOLDS.with(|s| s.borrow_mut().pop()) else {
        return;
    };
    let ns = now_ns().saturating_sub(start);
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
