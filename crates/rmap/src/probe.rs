//! The calling thread's probe context: which [`CallSite`] its lock holds
//! come from, whether it records lock events, and the process-wide switches
//! (hold timing, "some probe was ever used") that decide whether a map
//! operation takes its quiet path.
//!
//! [`crate::stats`] (the counters) and [`crate::trace`] (the recorder) both
//! read this context; neither needs the other's internals for it, so it
//! lives here, below both. The public items are re-exported from
//! [`crate::stats`], where users have always found them.
//!
//! # Concurrency
//!
//! The call site and the recording bit are per thread (a thread-local
//! byte); the timing switch and the sticky probe bits are one relaxed
//! global byte that reaches other threads at their next map operation.

use std::cell::Cell;
use std::sync::atomic::AtomicU8;
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
    /// Splitting a mapping (`__split_vma`, `mprotect`'s RELRO split).
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
    /// Merging a mapping with a neighbour (`vma_expand` / `commit_merge`
    /// from `vma_merge_new_range` or `vma_merge_existing_range`): not
    /// `__split_vma`, so a kernel profile lists it apart from the splits.
    Merge = 7,
}

impl CallSite {
    /// Number of call sites.
    pub const COUNT: usize = 8;

    /// Every call site, in index order.
    pub const ALL: [CallSite; CallSite::COUNT] = [
        CallSite::MmapLink,
        CallSite::ReplaceUnlink,
        CallSite::Split,
        CallSite::ExitUnlink,
        CallSite::ForkInsertAfter,
        CallSite::Walk,
        CallSite::Other,
        CallSite::Merge,
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
            CallSite::Merge => "merge",
        }
    }

    /// Index in `0..COUNT`.
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    #[inline]
    pub(crate) fn from_bits(b: u8) -> CallSite {
        match b & SITE_MASK {
            0 => CallSite::MmapLink,
            1 => CallSite::ReplaceUnlink,
            2 => CallSite::Split,
            3 => CallSite::ExitUnlink,
            4 => CallSite::ForkInsertAfter,
            5 => CallSite::Walk,
            7 => CallSite::Merge,
            _ => CallSite::Other,
        }
    }
}

/// Low bits of the thread's context byte: the call site.
pub(crate) const SITE_MASK: u8 = 0x07;
/// High bit of the context byte: this thread is recording lock events.
pub(crate) const RECORDING: u8 = 0x80;
/// The global timing flag's value when on; [`op_ctx`] ORs it with the
/// context byte so that one test covers both switches.
pub(crate) const TIMING: u8 = 0x40;
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
/// its lock's [`SiteStats::hold_ns`](crate::stats::SiteStats::hold_ns). Returns the previous setting.
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
pub(crate) fn is_timed_or_recorded(ctx: u8) -> bool {
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
