//! `aspace calibrate`: measures the host and writes a machine description
//! (`predict::Machine`) for `aspace predict --machine FILE`.
//!
//! * The real kernel's exec cost: a single copy of UnixBench `execl` (one
//!   process re-execs itself with a counter, no fork; here the lab binary's
//!   hidden `__execl N` subcommand), and a fork + exec + wait loop of the
//!   chosen binary.
//! * A cache line's transfer latency between two CPUs (ping-pong on one
//!   atomic, half the round trip), and an uncontended atomic RMW.
//! * How far one CPU's transfers of independent lines overlap (stores and
//!   locked RMWs to lines another CPU just wrote, against a pointer chase
//!   through the same lines): `line_overlap`, `rmw_overlap`.
//! * A sleeping waiter's wake-up (mutex + condvar ping-pong, half the round
//!   trip).
//! * The hand-off under load: what a `parking_lot` write unlock that wakes
//!   a parked thread costs the unlocker while a thread on every CPU
//!   contends for the lock (`unlock_wake_ns`).
//! * One read of the monotonic clock (`clock_read_ns`): `Instant::now`
//!   back to back, the call the bench's hold timing and parking_lot's
//!   fair-timeout check make inside a lock's held time; the clocksource
//!   it went through is written beside it.
//! * CPUs and nodes from the OS; the clock from `/proc/cpuinfo`.
//!
//! Exec costs are CPU time (getrusage), the median of 5 batches; the
//! latency microbenchmarks are wall time, the fastest of many short batches. On a
//! loaded host (or a VM whose vCPUs are descheduled) they are still noisy;
//! the file says how each figure was taken.

use predict::{Latency, Machine, SpeedPoint};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The hidden subcommand's name: `aspace __execl N` re-execs itself N times.
pub const EXECL_ARG: &str = "__execl";

/// If this process was started as `aspace __execl N`, re-exec with `N - 1`
/// (exit at 0) and never return; otherwise return. Called first thing in
/// `main`, before any argument parsing, so that one iteration costs what a
/// small program's exec costs.
pub fn execl_hook() {
    let mut args = std::env::args_os();
    let _ = args.next();
    if args.next().as_deref() != Some(std::ffi::OsStr::new(EXECL_ARG)) {
        return;
    }
    let n: u64 = args
        .next()
        .and_then(|s| s.to_str().and_then(|s| s.parse().ok()))
        .unwrap_or(0);
    if n == 0 {
        std::process::exit(0);
    }
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(_) => std::process::exit(3),
    };
    let (Ok(path), Ok(a1), Ok(a2)) = (
        CString::new(exe.as_os_str().as_encoded_bytes()),
        CString::new(EXECL_ARG),
        CString::new((n - 1).to_string()),
    ) else {
        std::process::exit(3);
    };
    let argv = [path.as_ptr(), a1.as_ptr(), a2.as_ptr(), std::ptr::null()];
    // SAFETY: every pointer in argv is a NUL-terminated string that lives
    // until execv returns (it only returns on failure), and argv ends with
    // a null pointer, as execv(3) requires.
    unsafe {
        libc::execv(path.as_ptr(), argv.as_ptr());
    }
    std::process::exit(3);
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn minimum(v: Vec<f64>) -> f64 {
    v.into_iter().fold(f64::INFINITY, f64::min)
}

/// CPU time (user + system) used so far by this process (`RUSAGE_SELF`) or
/// by its waited-for children (`RUSAGE_CHILDREN`), ns. CPU time rather than
/// wall time, so that other load on the host inflates it less.
fn cpu_ns(who: libc::c_int) -> f64 {
    // SAFETY: rusage is plain data; getrusage writes one through the valid
    // pointer and has no other preconditions.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 * 1e9 + t.tv_usec as f64 * 1e3;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// CPU ns per exec of the lab binary re-execing itself (UnixBench execl,
/// one copy): the children's CPU time over the loop.
fn execl_ns(exe: &Path, iterations: u64, batches: usize) -> Result<f64, String> {
    let mut v = Vec::new();
    for _ in 0..batches {
        let t = cpu_ns(libc::RUSAGE_CHILDREN);
        let st = Command::new(exe)
            .args([EXECL_ARG, &iterations.to_string()])
            .status()
            .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
        if !st.success() {
            return Err(format!("the execl loop failed: {st}"));
        }
        v.push((cpu_ns(libc::RUSAGE_CHILDREN) - t) / (iterations + 1) as f64);
    }
    Ok(median(v))
}

/// CPU ns per fork + exec + wait of `binary` (no arguments): the parent's
/// and the children's CPU time over the loop.
fn fork_exec_ns(binary: &Path, iterations: u64, batches: usize) -> Result<f64, String> {
    let mut v = Vec::new();
    for _ in 0..batches {
        let t = cpu_ns(libc::RUSAGE_CHILDREN) + cpu_ns(libc::RUSAGE_SELF);
        for _ in 0..iterations {
            Command::new(binary)
                .status()
                .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
        }
        let now = cpu_ns(libc::RUSAGE_CHILDREN) + cpu_ns(libc::RUSAGE_SELF);
        v.push((now - t) / iterations as f64);
    }
    Ok(median(v))
}

/// CPU ns per fork + `_exit` + wait (no exec): subtracted from the fork +
/// exec + wait loop, it leaves the cost of exec'ing the binary and tearing
/// the old image down, which is one `execl` iteration of that binary.
fn fork_only_ns(iterations: u64, batches: usize) -> Result<f64, String> {
    let mut v = Vec::new();
    for _ in 0..batches {
        let t = cpu_ns(libc::RUSAGE_CHILDREN) + cpu_ns(libc::RUSAGE_SELF);
        for _ in 0..iterations {
            // SAFETY: the child calls only the async-signal-safe _exit; the
            // parent waits for that child's pid with a valid status pointer.
            let ok = unsafe {
                let pid = libc::fork();
                if pid == 0 {
                    libc::_exit(0);
                }
                let mut status = 0;
                pid > 0 && libc::waitpid(pid, &mut status, 0) == pid
            };
            if !ok {
                return Err("fork failed".into());
            }
        }
        let now = cpu_ns(libc::RUSAGE_CHILDREN) + cpu_ns(libc::RUSAGE_SELF);
        v.push((now - t) / iterations as f64);
    }
    Ok(median(v))
}

/// The calling thread's CPU affinity, to be put back after measurements
/// that pin it ([`restore_affinity`]).
fn affinity() -> Option<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most
    // sizeof(cpu_set_t) bytes into it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        (libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0)
            .then_some(set)
    }
}

/// Puts back an affinity [`affinity`] read.
fn restore_affinity(set: &Option<libc::cpu_set_t>) {
    if let Some(set) = set {
        // SAFETY: reads sizeof(cpu_set_t) bytes from a valid set.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set);
        }
    }
}

/// CPU ns of one execl iteration of `binary` on this host: fork + exec +
/// wait minus fork + `_exit` + wait, medians of 5 batches of `iterations`
/// (what [`calibrate`] records as `exec_ns`).
pub fn exec_cost_ns(binary: &Path, iterations: u64) -> Result<f64, String> {
    let fork_exec = fork_exec_ns(binary, iterations, 5)?;
    let fork_only = fork_only_ns(iterations, 5)?;
    Ok((fork_exec - fork_only).max(fork_exec * 0.5))
}

fn pin(cpu: usize) -> bool {
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET write inside it and
    // sched_setaffinity reads sizeof(cpu_set_t) bytes from a valid pointer.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// One-way cache-line transfer latency between CPUs `a` and `b`, ns (half a
/// ping-pong round trip), or None with one CPU.
fn ping_pong_ns(a: usize, b: usize, rounds: u64, batches: usize) -> Option<f64> {
    if a == b {
        return None;
    }
    let mut v = Vec::new();
    for _ in 0..batches {
        let flag = Arc::new(crossbeam_line::Padded::default());
        let f2 = flag.clone();
        // Twice the rounds, timed from the middle: the first half waits for
        // the new thread to start, move to its CPU and reach its loop (tens
        // of microseconds to a millisecond on a VM, which counted against
        // the rounds before: 48-470 ns for the same pair of CPUs).
        let total = 2 * rounds;
        let t = std::thread::spawn(move || {
            pin(b);
            for i in 0..total {
                // Acquire/Release: each side publishes its turn and must see
                // the other's before writing; nothing else is shared.
                while f2.0.load(Ordering::Acquire) != 2 * i + 1 {
                    std::hint::spin_loop();
                }
                f2.0.store(2 * i + 2, Ordering::Release);
            }
        });
        pin(a);
        let mut start = Instant::now();
        for i in 0..total {
            if i == rounds {
                start = Instant::now();
            }
            flag.0.store(2 * i + 1, Ordering::Release);
            while flag.0.load(Ordering::Acquire) != 2 * i + 2 {
                std::hint::spin_loop();
            }
        }
        let el = start.elapsed().as_nanos() as f64;
        t.join().ok()?;
        v.push(el / rounds as f64 / 2.0);
    }
    Some(minimum(v))
}

mod crossbeam_line {
    use std::sync::atomic::AtomicU64;
    /// One atomic on its own 128-byte block (no false sharing with anything).
    #[repr(align(128))]
    #[derive(Default)]
    pub struct Padded(pub AtomicU64);
}

/// Lines of the overlap measurement ([`line_overlap`]).
const OVERLAP_LINES: usize = 32;

/// One line of the overlap measurement, on a 128-byte block of its own (the
/// adjacent-line prefetcher pairs 64-byte lines; nothing else shares it).
#[repr(align(128))]
#[derive(Default)]
struct OverlapLine(AtomicU64);

/// What [`line_overlap`] measured, per line, ns: the extra time over the
/// same accesses to lines the measuring CPU already owns.
#[derive(Clone, Copy, Debug)]
struct Overlap {
    /// A pointer chase: each load's address comes from the line before.
    dependent: f64,
    /// Plain stores to the same lines, addresses known in advance, in the
    /// same order; timed to the fence that waits for all of them.
    stores: f64,
    /// Locked `fetch_add`s to the same lines, addresses known in advance.
    rmws: f64,
}

/// How far one CPU's transfers of independent lines overlap (memory-level
/// parallelism): CPU `a` writes [`OVERLAP_LINES`] lines, then CPU `b`
/// (a) follows them as a linked list in a random order (each load's address
/// is the value the previous load returned: one transfer after another),
/// (b) stores to them in the same order from an index it holds locally, or
/// (c) `fetch_add`s them so. Each is timed again at once, the lines now
/// `b`'s own, and the difference over the lines is the transfer's share;
/// the median over `rounds` rounds (a round per access kind in turn).
/// None with one CPU or when a chase moved nothing measurable.
fn line_overlap(a: usize, b: usize, rounds: usize) -> Option<Overlap> {
    if a == b {
        return None;
    }
    let k = OVERLAP_LINES;
    // A random cyclic order (xorshift, fixed seed): line order[i] links to
    // order[i + 1].
    let mut order: Vec<usize> = (0..k).collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in (1..k).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let mut next = vec![0u64; k];
    for i in 0..k {
        next[order[i]] = order[(i + 1) % k] as u64;
    }
    let lines: Arc<Vec<OverlapLine>> = Arc::new((0..k).map(|_| OverlapLine::default()).collect());
    let flag = Arc::new(crossbeam_line::Padded::default());
    let (l2, f2) = (lines.clone(), flag.clone());
    let writer = std::thread::spawn(move || {
        pin(a);
        for r in 0..rounds as u64 + 1 {
            // Acquire: b's accesses of the previous round are done.
            while f2.0.load(Ordering::Acquire) != 2 * r {
                if f2.0.load(Ordering::Relaxed) == u64::MAX {
                    return;
                }
                std::hint::spin_loop();
            }
            for (i, l) in l2.iter().enumerate() {
                // Relaxed: the flag's Release below publishes these stores.
                l.0.store(next[i], Ordering::Relaxed);
            }
            f2.0.store(2 * r + 1, Ordering::Release);
        }
    });
    pin(b);
    let timed = |kind: usize| -> f64 {
        let t = Instant::now();
        match kind {
            0 => {
                let mut at = order[0];
                for _ in 0..k {
                    // Relaxed: the value is the next address; the chase's
                    // order is its data dependence, not a fence.
                    at = lines[at].0.load(Ordering::Relaxed) as usize;
                }
                std::hint::black_box(at);
            }
            1 => {
                for &i in &order {
                    // Relaxed stores; the SeqCst fence below waits for all
                    // of them to reach the cache (an `mfence` drains the
                    // store buffer, so every line must have been taken).
                    lines[i].0.store(i as u64 ^ 1, Ordering::Relaxed);
                }
                std::sync::atomic::fence(Ordering::SeqCst);
            }
            _ => {
                for &i in &order {
                    // Relaxed: a locked add on x86 whatever the ordering;
                    // what is timed is the transfer each one needs. An add
                    // of 1, not 0: LLVM may lower an idempotent RMW to a
                    // fenced load, which would not take the line.
                    lines[i].0.fetch_add(1, Ordering::Relaxed);
                }
                std::sync::atomic::fence(Ordering::SeqCst);
            }
        }
        t.elapsed().as_nanos() as f64
    };
    let mut per = [Vec::new(), Vec::new(), Vec::new()];
    for r in 0..rounds as u64 {
        let mut spins = 0u64;
        while flag.0.load(Ordering::Acquire) != 2 * r + 1 {
            std::hint::spin_loop();
            spins += 1;
            if spins > 2_000_000_000 {
                flag.0.store(u64::MAX, Ordering::Relaxed);
                let _ = writer.join();
                return None;
            }
        }
        let kind = (r % 3) as usize;
        let remote = timed(kind);
        let local = timed(kind);
        // The stores overwrote the links; the writer rewrites them before
        // the next round.
        per[kind].push((remote - local) / k as f64);
        flag.0.store(2 * r + 2, Ordering::Release);
    }
    writer.join().ok()?;
    let [dep, st, rmw] = per.map(median);
    (dep > 0.5).then_some(Overlap {
        dependent: dep,
        stores: st.max(0.0),
        rmws: rmw.max(0.0),
    })
}

/// ns per uncontended `fetch_add` on a line this CPU owns.
fn atomic_rmw_ns(ops: u64, batches: usize) -> f64 {
    let a = AtomicU64::new(0);
    minimum(ns_per_call(batches, ops, || {
        // SeqCst: the lock fast path is a full-barrier LOCK-prefixed RMW.
        std::hint::black_box(&a).fetch_add(1, Ordering::SeqCst);
    }))
}

/// ns per call of `op`, timed in `batches` batches of `n` back-to-back
/// calls: one figure per batch (the caller keeps the fastest or the
/// median).
fn ns_per_call(batches: usize, n: u64, mut op: impl FnMut()) -> Vec<f64> {
    (0..batches)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..n {
                op();
            }
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .collect()
}

/// The clock the calling core runs at, GHz, measured: a chain of dependent
/// register adds retires one add per cycle on every x86-64 core, so the
/// chain's length over its time is the clock.
///
/// Many short runs (about 0.25 ms each at scale 1), the fastest kept: a run
/// that was preempted, or whose core's other hardware thread was busy with
/// another tenant's work, only reads slower, and on a loaded host a short
/// run is far more likely than a long one to fall in a quiet moment (one
/// 50 ms run read 1.73 GHz busy and 3.0 quiet on the same VM; see
/// `docs/results/predict/README.md` for this method's spread). Returns the
/// clock and the spread between the fastest run and the tenth fastest, a
/// measure of how steady the core was.
///
/// Under a hypervisor, `/proc/cpuinfo`'s `cpu MHz` is the nominal clock the
/// hypervisor reports (2596 on the development VM, whose cores run at
/// 4.06-4.14 GHz by this measure), and the host's speed is what scales the
/// real exec cost to a target machine's clock.
#[cfg(target_arch = "x86_64")]
pub(crate) fn measured_ghz(scale: f64) -> Option<(f64, f64)> {
    /// Dependent adds per loop trip (the loop's own counter runs beside).
    const CHAIN: u64 = 16;
    let runs = ((400.0 * scale.sqrt()) as usize).clamp(20, 2000);
    let trips: u64 = 50_000;
    let mut ghz: Vec<f64> = Vec::with_capacity(runs);
    for _ in 0..runs {
        let mut x: u64 = 1;
        let start = Instant::now();
        for _ in 0..trips {
            // SAFETY: register-only arithmetic on `x`: no memory is
            // touched, no flag or register other than `x` is read or kept.
            unsafe {
                std::arch::asm!(
                    "add {x}, {x}", "add {x}, {x}", "add {x}, {x}", "add {x}, {x}",
                    "add {x}, {x}", "add {x}, {x}", "add {x}, {x}", "add {x}, {x}",
                    "add {x}, {x}", "add {x}, {x}", "add {x}, {x}", "add {x}, {x}",
                    "add {x}, {x}", "add {x}, {x}", "add {x}, {x}", "add {x}, {x}",
                    x = inout(reg) x,
                    options(nomem, nostack),
                );
            }
        }
        let ns = start.elapsed().as_nanos() as f64;
        std::hint::black_box(x);
        if ns > 0.0 {
            ghz.push((trips * CHAIN) as f64 / ns);
        }
    }
    ghz.sort_by(|a, b| b.total_cmp(a));
    let best = *ghz.first()?;
    let tenth = ghz[(ghz.len() / 10).min(ghz.len() - 1)];
    (best.is_finite() && best > 0.1).then_some((best, (best - tenth) / best))
}

#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn measured_ghz(_scale: f64) -> Option<(f64, f64)> {
    None
}

/// ns per `pause` (`spin_loop`): the fastest of several batches.
fn pause_ns(scale: f64) -> f64 {
    let n = ((200_000.0 * scale) as u64).max(1_000);
    minimum(ns_per_call(5, n, std::hint::spin_loop))
}

/// ns per read of the monotonic clock: `Instant::now` in a loop, each
/// result kept (`black_box`), the fastest of 7 batches. On Linux
/// `Instant::now` is `clock_gettime(CLOCK_MONOTONIC)` through the vDSO,
/// the same call as `rmap::stats`'s hold timing (`now_ns`, called through
/// `libc`) and parking_lot_core's `FairTimeout::should_timeout`; what it
/// costs depends on the clocksource ([`clocksource`]). Back-to-back reads
/// may overlap a little in the pipeline where the vDSO does not order its
/// counter read; the fastest batch is the least a read costs, as the
/// other items' fastest batches are.
fn clock_read_ns(scale: f64) -> f64 {
    let n = ((100_000.0 * scale) as u64).max(1_000);
    minimum(ns_per_call(7, n, || {
        std::hint::black_box(Instant::now());
    }))
}

/// The kernel's current clocksource (`tsc`, `kvm-clock`, `hpet`, ...), where
/// `/sys` says.
fn clocksource() -> Option<String> {
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// ns per `sched_yield` with nothing else to run here: the median of
/// several batches (a batch during which another task ran reads slower).
fn yield_ns(scale: f64) -> f64 {
    let n = ((20_000.0 * scale) as u64).max(200);
    median(ns_per_call(7, n, std::thread::yield_now))
}

/// A parked thread's wake-up as a lock waiter sees it, on CPUs 0 and 1:
/// the waiter parks (a futex sleep) and stays asleep about 100 us (a lock
/// waiter behind a queue of holders), then the other thread unparks it.
/// Returns the medians of (the waker's cost of the unpark call, the time
/// from the unpark call to the waiter running again), ns; None with one
/// CPU.
fn park_wake_ns(cpus: usize, rounds: usize) -> Option<(f64, f64)> {
    if cpus < 2 {
        return None;
    }
    let base = Instant::now();
    // The round the waiter is parked for, the round the waker released,
    // and the waiter's wake-up time (ns since `base`, 0: not yet).
    let asleep = Arc::new(AtomicU64::new(0));
    let woke = Arc::new(AtomicU64::new(0));
    let woke_at = Arc::new(AtomicU64::new(0));
    let (a2, w2, t2) = (asleep.clone(), woke.clone(), woke_at.clone());
    let waiter = std::thread::spawn(move || {
        pin(1);
        for i in 1..=rounds as u64 {
            // Release: publishes that round `i` is about to park.
            a2.store(i, Ordering::Release);
            loop {
                std::thread::park();
                // Acquire: pairs with the waker's Release store of `i`.
                if w2.load(Ordering::Acquire) == i {
                    break;
                }
            }
            // Release: the waker reads this round's wake-up time.
            t2.store(base.elapsed().as_nanos() as u64 | 1, Ordering::Release);
            // Acquire: wait until the waker has read it.
            while t2.load(Ordering::Acquire) != 0 {
                std::hint::spin_loop();
            }
        }
    });
    pin(0);
    let mut cost = Vec::with_capacity(rounds);
    let mut latency = Vec::with_capacity(rounds);
    for i in 1..=rounds as u64 {
        // Acquire: pairs with the waiter's Release store of `i`.
        while asleep.load(Ordering::Acquire) != i {
            std::hint::spin_loop();
        }
        spin_for(std::time::Duration::from_micros(100));
        // Release: the round number the waiter checks after waking.
        woke.store(i, Ordering::Release);
        let t0 = base.elapsed().as_nanos() as u64;
        waiter.thread().unpark();
        let t1 = base.elapsed().as_nanos() as u64;
        let t2 = loop {
            // Acquire: pairs with the waiter's Release of its wake time.
            let v = woke_at.load(Ordering::Acquire);
            if v != 0 {
                break v;
            }
            std::hint::spin_loop();
        };
        // Release: lets the waiter go on to the next round.
        woke_at.store(0, Ordering::Release);
        cost.push(t1.saturating_sub(t0) as f64);
        latency.push(t2.saturating_sub(t0) as f64);
    }
    waiter.join().ok()?;
    Some((median(cost), median(latency)))
}

/// The hand-off under load: one thread on each of the first `cpus` CPUs
/// (at most 64, at least 2) takes a `parking_lot::RwLock` for writing (the
/// lab's lock), holds it `HANDOFF_HOLD_NS` (long enough that waiters run
/// through `SpinWait` and park, on any number of CPUs), times its unlock
/// (the guard's drop), works `HANDOFF_GAP_NS` and comes back, for `run`.
/// An unlock that finds the parked bit walks the bucket's queue, reads the
/// clock for the fair timeout and makes a futex wake system call; one
/// without it is a single `cmpxchg`. The unlocks longer than `threshold_ns`
/// (half the idle wake-up's unpark cost, measured before: a slow path
/// that woke nobody costs a bucket and an atomic, far below it) are taken
/// as those that woke a thread. Returns (their median, their share of all
/// unlocks, how many), or None with one CPU or too few such unlocks.
fn unlock_wake_ns(
    cpus: usize,
    run: std::time::Duration,
    threshold_ns: f64,
) -> Option<(f64, f64, usize)> {
    let threads = cpus.min(64);
    if threads < 2 {
        return None;
    }
    let lock = Arc::new(parking_lot::RwLock::new(0u64));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let base = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|i| {
            let (lock, stop) = (lock.clone(), stop.clone());
            std::thread::spawn(move || {
                pin(i);
                let mut unlocks = Vec::with_capacity(1 << 16);
                // Relaxed: a stop flag; nothing is published through it.
                while !stop.load(Ordering::Relaxed) {
                    let mut g = lock.write();
                    *g += 1;
                    spin_for(std::time::Duration::from_nanos(HANDOFF_HOLD_NS));
                    let t0 = base.elapsed().as_nanos() as u64;
                    drop(g);
                    let t1 = base.elapsed().as_nanos() as u64;
                    unlocks.push((t1 - t0) as f64);
                    spin_for(std::time::Duration::from_nanos(HANDOFF_GAP_NS));
                }
                unlocks
            })
        })
        .collect();
    std::thread::sleep(run);
    // Relaxed: see above.
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    for w in workers {
        all.extend(w.join().ok()?);
    }
    let total = all.len();
    let woke: Vec<f64> = all.into_iter().filter(|&ns| ns > threshold_ns).collect();
    if woke.len() < 10 {
        return None;
    }
    let n = woke.len();
    Some((median(woke), n as f64 / total as f64, n))
}

/// Busy-waits `d` on this CPU (no sleep: the thread stays on it).
fn spin_for(d: std::time::Duration) {
    let until = Instant::now() + d;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// The hand-off item's hold, ns: longer than `SpinWait`'s spinning (three
/// short pause loops and seven `sched_yield`s, a few us) on any machine
/// measured so far, so that waiters park.
const HANDOFF_HOLD_NS: u64 = 10_000;
/// The hand-off item's work between holds, ns.
const HANDOFF_GAP_NS: u64 = 2_000;

/// Transfer latency over the host's CPU pairs: half a ping-pong round trip
/// between CPU 0 and each other CPU (at most 32 of them), each pair's
/// fastest batch. Returns the mean, the lowest and the highest, or None
/// with one CPU.
fn pair_latency_ns(cpus: usize, batches: usize) -> Option<(f64, f64, f64)> {
    let others: Vec<usize> = (1..cpus).take(32).collect();
    let v: Vec<f64> = others
        .iter()
        .filter_map(|&b| ping_pong_ns(0, b, 2_000, batches))
        .collect();
    if v.is_empty() {
        return None;
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(0.0, f64::max);
    Some((mean, lo, hi))
}

/// Per-CPU speed of private work with `k` CPUs busy, relative to one, for
/// `k` = 1, 2, 4, ... up to every CPU: `k` processes (forked, so that
/// nothing is shared, not even the allocator or the maple tree's epoch),
/// each running the model's exec loop of `binary` on a file registry of its
/// own (no reverse map: `exclude`), all started together; the mean of
/// their exec rates over the single process's. What it sees: SMT siblings
/// (also those a hypervisor hides), the power and thermal budget, memory
/// bandwidth; what it cannot: anything two CPUs share, which the predictor
/// models line by line.
fn speed_by_cpus(binary: &Path, cpus: usize, scale: f64) -> Result<Vec<SpeedPoint>, String> {
    let mut counts: Vec<usize> = std::iter::successors(Some(1usize), |n| Some(n * 2))
        .take_while(|&n| n < cpus)
        .collect();
    counts.push(cpus);
    counts.dedup();
    let run_ms = (300.0 * scale).clamp(20.0, 2_000.0);
    let mut rate_at = Vec::new();
    for &k in &counts {
        // The best of three rounds: a round disturbed by other work reads
        // slower.
        let mut best = 0.0f64;
        for _ in 0..3 {
            best = best.max(private_exec_rate(binary, k, run_ms)?);
        }
        rate_at.push((k, best));
    }
    let one = rate_at[0].1;
    if one <= 0.0 {
        return Err("the private exec loop ran no iteration".into());
    }
    Ok(rate_at
        .into_iter()
        .filter(|&(k, _)| k > 1)
        .map(|(k, r)| SpeedPoint {
            cpus: k as u32,
            speed: (r / one).clamp(0.01, 2.0),
        })
        .collect())
}

/// Mean execs per second of `k` forked processes, each running the model's
/// exec loop on its own registry for `run_ms` after a common start.
fn private_exec_rate(binary: &Path, k: usize, run_ms: f64) -> Result<f64, String> {
    use mm::{CallPattern, Files, Mm};
    // Resolve the program once here, so that each child only execs.
    let files = Files::new(
        rmap::Design::Exclude,
        rmap::Topology::Os,
        CallPattern::PerVma,
    );
    files
        .program(binary)
        .map_err(|e| format!("cannot exec {}: {e}", binary.display()))?;
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err("pipe failed".into());
    }
    let start_at = Instant::now() + std::time::Duration::from_millis(50);
    let mut pids = Vec::new();
    for cpu in 0..k {
        // SAFETY: the child runs only this function's loop and then
        // _exit(2)s (no unwinding into the parent's frames, no atexit);
        // this process has no other thread at this point of calibrate.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err("fork failed".into());
        }
        if pid == 0 {
            pin(cpu);
            let files = Files::new(
                rmap::Design::Exclude,
                rmap::Topology::Os,
                CallPattern::PerVma,
            );
            let n = files.program(binary).map_or(0u64, |prog| {
                let mm = Mm::new(files.clone());
                for _ in 0..20 {
                    mm.exec_program(&prog);
                }
                while Instant::now() < start_at {
                    std::hint::spin_loop();
                }
                let until = start_at + std::time::Duration::from_secs_f64(run_ms / 1e3);
                let mut n = 0u64;
                // At least one: a child a loaded host starts after `until`
                // must not read as a machine that runs nothing.
                while n == 0 || Instant::now() < until {
                    mm.exec_program(&prog);
                    n += 1;
                }
                n
            });
            let bytes = n.to_le_bytes();
            // SAFETY: writes 8 bytes from a live buffer to the pipe, then
            // leaves the process without running any destructor.
            unsafe {
                libc::write(fds[1], bytes.as_ptr().cast(), 8);
                libc::_exit(0);
            }
        }
        pids.push(pid);
    }
    // SAFETY: the parent's copy of the write end is not used again.
    unsafe { libc::close(fds[1]) };
    let mut total = 0u64;
    for _ in 0..k {
        let mut b = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a live 8-byte buffer.
        let r = unsafe { libc::read(fds[0], b.as_mut_ptr().cast(), 8) };
        if r == 8 {
            total += u64::from_le_bytes(b);
        }
    }
    for pid in pids {
        let mut status = 0;
        // SAFETY: waits for a child of this process with a valid pointer.
        unsafe { libc::waitpid(pid, &mut status, 0) };
    }
    // SAFETY: closes the read end, which nothing else uses.
    unsafe { libc::close(fds[0]) };
    Ok(total as f64 / k as f64 / (run_ms / 1e3))
}

/// The share of this host's CPU time that other work took over `window`
/// (0..1), from `/proc/stat`: every CPU's time that was not idle (time a
/// hypervisor stole counts as taken). This process sleeps meanwhile, so
/// what it measures is everybody else. None where `/proc/stat` cannot be
/// read.
pub fn busy_share(window: std::time::Duration) -> Option<f64> {
    fn sample() -> Option<(u64, u64)> {
        let text = std::fs::read_to_string("/proc/stat").ok()?;
        let line = text.lines().find(|l| l.starts_with("cpu "))?;
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|x| x.parse().ok())
            .collect();
        if v.len() < 5 {
            return None;
        }
        // user nice system idle iowait irq softirq steal (guest is in user)
        let total: u64 = v.iter().take(8).sum();
        let idle = v[3] + v[4];
        Some((total, idle))
    }
    let (t0, i0) = sample()?;
    std::thread::sleep(window);
    let (t1, i1) = sample()?;
    let dt = t1.saturating_sub(t0);
    if dt == 0 {
        return None;
    }
    Some(1.0 - (i1.saturating_sub(i0)) as f64 / dt as f64)
}

/// Above this share of CPU time taken by other work, the host is busy: a
/// measurement then times the scheduler, not the hardware.
pub const BUSY_SHARE: f64 = 0.15;

/// Waits for the host to be quiet: up to `tries` checks of
/// [`busy_share`] over 0.5 s, 2 s apart. Returns the last share seen and
/// whether it was below [`BUSY_SHARE`].
pub fn wait_for_quiet(tries: usize) -> (Option<f64>, bool) {
    let mut last = None;
    for i in 0..tries.max(1) {
        if i > 0 {
            std::thread::sleep(std::time::Duration::from_secs(2));
        }
        last = busy_share(std::time::Duration::from_millis(500));
        match last {
            Some(b) if b > BUSY_SHARE => continue,
            _ => return (last, true),
        }
    }
    (last, false)
}

fn cpu_mhz() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let v: Vec<f64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("cpu MHz"))
        .filter_map(|l| l.split_once(':'))
        .filter_map(|(_, v)| v.trim().parse().ok())
        .collect();
    if v.is_empty() {
        None
    } else {
        Some(v.iter().sum::<f64>() / v.len() as f64)
    }
}

/// What `aspace calibrate` measures, how much of it.
pub struct CalibrateConfig {
    /// The binary for the fork + exec + wait loop.
    pub binary: std::path::PathBuf,
    /// Scale of every loop (1 = the default sizes; tests use less).
    pub scale: f64,
    /// The lab binary, which re-execs itself through [`execl_hook`].
    pub self_exe: std::path::PathBuf,
    /// Also measure [`Machine::speed_by_cpus`] (a few seconds: every CPU
    /// busy with private work).
    pub speed: bool,
}

/// Measures the host; the description is named `host`. The share of CPU
/// time other work took during the measurements is in
/// `sources["busy"]` (see [`busy_share`]).
pub fn calibrate(cfg: &CalibrateConfig) -> Result<Machine, String> {
    let n = |x: f64| ((x * cfg.scale).ceil() as u64).max(2);
    let cpus = crate::machine::nproc() as u32;
    let desc = crate::machine::describe();
    let nodes = (desc.nodes as u32).clamp(1, cpus);
    let busy_before = busy_share(std::time::Duration::from_millis(200));
    // The latency and wake-up measurements pin this thread; each is
    // followed by putting its affinity back.
    let all_cpus = affinity();
    let self_execl = execl_ns(&cfg.self_exe, n(2000.0), 5)?;
    let fork_exec = fork_exec_ns(&cfg.binary, n(500.0), 5)?;
    let fork_only = fork_only_ns(n(500.0), 5)?;
    let exec = (fork_exec - fork_only).max(fork_exec * 0.5);
    let model_exec = crate::model_exec::model_exec_ns(&cfg.binary)?;
    // Many short batches, the fastest kept: on a loaded host (or a VM whose
    // vCPUs are descheduled) only a batch during which both threads ran
    // throughout measures the hardware rather than the scheduler.
    let pairs = pair_latency_ns(cpus as usize, n(50.0) as usize);
    restore_affinity(&all_cpus);
    let overlap = if cpus > 1 {
        line_overlap(0, 1, n(600.0).max(30) as usize)
    } else {
        None
    };
    restore_affinity(&all_cpus);
    let rmw = atomic_rmw_ns(n(5_000_000.0), 5);
    let wake = park_wake_ns(cpus as usize, n(200.0) as usize);
    restore_affinity(&all_cpus);
    let handoff = wake.and_then(|w| {
        unlock_wake_ns(
            cpus as usize,
            std::time::Duration::from_secs_f64((0.5 * cfg.scale).clamp(0.05, 5.0)),
            0.5 * w.0,
        )
    });
    let pause = pause_ns(cfg.scale);
    let yield_cost = yield_ns(cfg.scale);
    let clock_read = clock_read_ns(cfg.scale);
    let speed = if cfg.speed {
        speed_by_cpus(&cfg.binary, cpus as usize, cfg.scale)?
    } else {
        Vec::new()
    };
    restore_affinity(&all_cpus);
    let clock = measured_ghz(cfg.scale);
    let ghz = clock.map(|c| c.0).or_else(|| cpu_mhz().map(|m| m / 1000.0));
    let busy_after = busy_share(std::time::Duration::from_millis(200));
    let line = pairs.map_or(0.0, |p| p.0);
    let mut sources = BTreeMap::new();
    let measured = |s: &str| format!("measured by aspace calibrate on {}: {s}", desc.cpu_model);
    sources.insert(
        "nodes".into(),
        measured("/sys/devices/system/node/node* count"),
    );
    sources.insert("sockets".into(), "taken as 1 (not measured)".into());
    sources.insert(
        "cores_per_node".into(),
        measured("available_parallelism / nodes; each CPU taken as a core"),
    );
    sources.insert(
        "smt".into(),
        "taken as 1: the host's CPUs are taken as cores (what SMT costs is in speed_by_cpus)"
            .into(),
    );
    sources.insert(
        "cores_per_llc".into(),
        "taken as every core of a node".into(),
    );
    sources.insert(
        "core_ghz".into(),
        match (clock, ghz) {
            (Some((_, spread)), _) => measured(&format!(
                "the running clock of one core: a chain of dependent register adds (one a cycle), the fastest of many 0.25 ms runs (the tenth fastest {:.1}% slower)",
                100.0 * spread
            )),
            (None, Some(_)) => measured("mean 'cpu MHz' of /proc/cpuinfo"),
            (None, None) => "no clock measured and no 'cpu MHz' in /proc/cpuinfo: 2.5 assumed".into(),
        },
    );
    sources.insert("smt_yield".into(), "no SMT: 1.0".into());
    sources.insert(
        "latency_ns".into(),
        match pairs {
            Some((mean, lo, hi)) => measured(&format!(
                "half the round trip of an atomic ping-pong between CPU 0 and each other CPU (up to 32; each pair's fastest of many 2000-round batches): mean {mean:.1} ns (pairs {lo:.1}-{hi:.1}), taken for every distance"
            )),
            None => "one CPU: no transfer measured (0)".into(),
        },
    );
    sources.insert(
        "atomic_rmw_ns".into(),
        measured("uncontended SeqCst fetch_add loop (fastest of 5)"),
    );
    if let Some(o) = overlap {
        let how = format!(
            "CPU 1 accesses {OVERLAP_LINES} lines (one per 128 bytes) just written by CPU 0, in a random order, each kind timed again at once on the lines it now owns and the difference taken, median of the rounds: a pointer chase (each load's address loaded from the line before) {:.1} ns a line, stores with addresses known in advance (to the fence that waits for them) {:.1} ns, locked fetch_adds {:.1} ns",
            o.dependent, o.stores, o.rmws
        );
        sources.insert(
            "line_overlap".into(),
            measured(&format!("the stores' cost a line over the chase's ({how})")),
        );
        sources.insert(
            "rmw_overlap".into(),
            measured(&format!(
                "the fetch_adds' cost a line over the chase's ({how})"
            )),
        );
    }
    sources.insert(
        "wake_ns".into(),
        match wake {
            Some(_) => measured("a thread parked on a futex for about 100 us (as a lock waiter) is unparked from another CPU: median time from the unpark call to the waiter running"),
            None => "one CPU: not measured; 20 us taken".into(),
        },
    );
    sources.insert(
        "futex_wake_ns".into(),
        match wake {
            Some(_) => {
                measured("the same wake-ups: median time the waker spends in the unpark call")
            }
            None => "one CPU: not measured".into(),
        },
    );
    sources.insert(
        "unlock_wake_ns".into(),
        match handoff {
            Some((_, share, count)) => measured(&format!(
                "the hand-off under load: a thread on each of {} CPUs takes a parking_lot::RwLock for writing, holds it {} us, unlocks, works {} us, again; median time in the unlocks longer than half the unpark cost above (those that woke a parked thread: {count}, {:.0}% of all unlocks)",
                cpus.min(64),
                HANDOFF_HOLD_NS / 1000,
                HANDOFF_GAP_NS / 1000,
                100.0 * share
            )),
            None => "not measured (one CPU, or too few unlocks woke a thread): the simulator takes futex_wake_ns".into(),
        },
    );
    sources.insert(
        "clock_read_ns".into(),
        measured(&format!(
            "one read of the monotonic clock: Instant::now (clock_gettime(CLOCK_MONOTONIC) through the vDSO, as the bench's hold timing and parking_lot's fair-timeout check read it) in a loop, fastest of 7 batches; clocksource {}",
            clocksource().unwrap_or_else(|| "unknown".into())
        )),
    );
    sources.insert(
        "pause_ns".into(),
        measured("a loop of spin_loop hints (pause), fastest of 5"),
    );
    sources.insert(
        "yield_ns".into(),
        measured("a loop of sched_yield with nothing else to run here, median of 7 batches"),
    );
    if cfg.speed {
        sources.insert(
            "speed_by_cpus".into(),
            measured(&format!(
                "k forked processes (k = 1, 2, 4, ..., {cpus}), each running the model's exec loop of {} on a registry of its own (no reverse map, nothing shared), started together: their mean exec rate over one process's, the best of 3 rounds",
                cfg.binary.display()
            )),
        );
    }
    sources.insert(
        "reader_spin_ns".into(),
        "Linux rwsem writer spin bound on a reader-owned lock (up to 25 us); 20 us taken".into(),
    );
    sources.insert(
        "exec_ns".into(),
        measured(&format!(
            "one execl iteration of {}: CPU ns of fork+exec+wait minus fork+_exit+wait ({:.0} ns), medians of 5",
            cfg.binary.display(),
            fork_only
        )),
    );
    sources.insert(
        "model_exec_ns".into(),
        measured(&format!(
            "the model's exec loop of {} without a reverse map (exclude: exec, faults, exit) on one thread, thread CPU ns per iteration, median of 7 batches of 100 after 50",
            cfg.binary.display()
        )),
    );
    sources.insert(
        "self_execl_ns".into(),
        measured("the lab binary re-execs itself with a counter (UnixBench execl, one copy), CPU ns (user+sys, getrusage) per exec, median of 5"),
    );
    sources.insert(
        "fork_exec_ns".into(),
        measured(&format!(
            "fork + exec + wait of {}, CPU ns (user+sys of parent and children) per iteration, median of 5",
            cfg.binary.display()
        )),
    );
    let busy = match (busy_before, busy_after) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    sources.insert(
        "busy".into(),
        match busy {
            Some(b) => format!(
                "other work took {:.0}% of this host's CPU time around the calibration ({} when above {:.0}%)",
                100.0 * b,
                if b > BUSY_SHARE { "BUSY: the figures time the scheduler as much as the hardware" } else { "quiet" },
                100.0 * BUSY_SHARE
            ),
            None => "not known (/proc/stat unreadable)".into(),
        },
    );
    let m = Machine {
        name: "host".into(),
        description: format!(
            "this host ({}, {} CPUs, {} node(s), kernel {}), calibrated",
            desc.cpu_model, cpus, nodes, desc.kernel
        ),
        nodes,
        sockets: 1,
        cores_per_node: (cpus / nodes).max(1),
        smt: 1,
        cores_per_llc: (cpus / nodes).max(1),
        core_ghz: ghz.filter(|g| g.is_finite() && *g > 0.1).unwrap_or(2.5),
        smt_yield: 1.0,
        latency_ns: Latency {
            same_core: line,
            same_llc: line,
            same_node: line,
            other_node: line,
            other_socket: line,
        },
        atomic_rmw_ns: rmw,
        wake_ns: wake.map_or(20_000.0, |w| w.1.max(1.0)),
        reader_spin_ns: 20_000.0,
        exec_ns: Some(exec),
        fork_exec_ns: Some(fork_exec),
        self_execl_ns: Some(self_execl),
        model_exec_ns: Some(model_exec),
        model_exec_binary: Some(cfg.binary.display().to_string()),
        pause_ns: Some(pause.max(0.01)),
        yield_ns: Some(yield_cost.max(1.0)),
        futex_wake_ns: wake.map(|w| w.0.max(1.0)),
        unlock_wake_ns: handoff.map(|h| h.0.max(1.0)),
        clock_read_ns: Some(clock_read.max(0.1)),
        speed_by_cpus: speed,
        line_overlap: overlap.map(|o| (o.stores / o.dependent).clamp(0.01, 2.0)),
        rmw_overlap: overlap.map(|o| (o.rmws / o.dependent).clamp(0.01, 2.0)),
        miss_slots: None,
        busy_share: busy,
        sources,
    };
    m.validate().map_err(|e| e.to_string())?;
    Ok(m)
}

/// The calibration as a short text.
pub fn text(m: &Machine) -> String {
    let speed: Vec<String> = m
        .speed_by_cpus
        .iter()
        .map(|p| format!("{} CPUs {:.2}", p.cpus, p.speed))
        .collect();
    format!(
        "host: {} CPUs, {} node(s), {:.2} GHz\n\
         execl of the lab binary (one copy, re-exec loop): {:.0} us CPU/exec = {:.0} execs/s per core\n\
         execl iteration of the chosen binary (fork+exec+wait - fork): {:.0} us CPU\n\
         fork + exec + wait of the chosen binary: {:.0} us CPU/iteration\n\
         the model's exec without a reverse map, one thread: {}\n\
         cache-line transfer (ping-pong):  {:.0} ns\n\
         independent transfers (stores / locked RMWs), each over a dependent one: {} / {}\n\
         uncontended atomic RMW:           {:.1} ns\n\
         pause / sched_yield:              {:.1} / {:.0} ns\n\
         wake-up of a parked thread:       {:.0} ns (the waker's unpark: {:.0} ns)\n\
         the unlocker's wake-up under load: {}\n\
         one clock read (Instant::now):    {}\n\
         per-CPU speed with k CPUs busy:   {}\n\
         other work during calibration:    {}\n",
        m.cpus(),
        m.nodes,
        m.core_ghz,
        m.self_execl_ns.unwrap_or(0.0) / 1e3,
        1e9 / m.self_execl_ns.unwrap_or(f64::INFINITY),
        m.exec_ns.unwrap_or(0.0) / 1e3,
        m.fork_exec_ns.unwrap_or(0.0) / 1e3,
        m.model_exec_ns
            .map_or("not measured".to_owned(), |ns| format!("{:.1} us CPU/iteration", ns / 1e3)),
        m.latency_ns.same_llc,
        m.line_overlap
            .map_or("not measured".to_owned(), |f| format!("{f:.2}")),
        m.rmw_overlap
            .map_or("not measured".to_owned(), |f| format!("{f:.2}")),
        m.atomic_rmw_ns,
        m.pause().ns,
        m.yield_cost().ns,
        m.wake_ns,
        m.futex_wake().ns,
        m.unlock_wake_ns
            .map_or("not measured".to_owned(), |ns| format!("{ns:.0} ns")),
        m.clock_read_ns
            .map_or("not measured".to_owned(), |ns| format!("{ns:.1} ns")),
        if speed.is_empty() {
            "not measured".to_owned()
        } else {
            speed.join(", ")
        },
        m.busy_share
            .map_or("not known".to_owned(), |b| format!("{:.0}% of the CPU time", 100.0 * b)),
    )
}

/// `aspace calibrate`'s arguments.
#[derive(clap::Args, Debug)]
pub struct CalibrateArgs {
    /// The binary for the fork + exec + wait loop (the one predictions exec).
    #[arg(long, default_value = "/bin/true")]
    pub binary: std::path::PathBuf,
    /// Where to write the machine description.
    #[arg(long, default_value = "aspace-results/host.json")]
    pub out: std::path::PathBuf,
    /// Scale of every measuring loop (1 = default sizes).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Calibrate even when other work keeps the host busy (the file then
    /// says how busy it was); without it a busy host is refused.
    #[arg(long)]
    pub busy_ok: bool,
    /// Leave out the per-CPU speed with every CPU busy (a few seconds).
    #[arg(long)]
    pub no_speed: bool,
}

/// This binary's path.
pub fn own_exe() -> Result<std::path::PathBuf, String> {
    std::env::current_exe().map_err(|e| format!("cannot find own binary: {e}"))
}

/// Runs `aspace calibrate`.
pub fn run(a: CalibrateArgs) -> Result<(), String> {
    if !(a.scale.is_finite() && a.scale > 0.0 && a.scale <= 100.0) {
        return Err(format!("--scale: {} must be in (0, 100]", a.scale));
    }
    if !a.binary.is_file() {
        return Err(format!("--binary: {} is not a file", a.binary.display()));
    }
    let refuse = |share: f64| {
        format!(
            "the host is busy: other work took {:.0}% of its CPU time (above {:.0}%), so a calibration would time the scheduler rather than the hardware and differ from one run to the next; stop the other work and run it again, or pass --busy-ok to record it anyway (the file then says how busy the host was)",
            100.0 * share,
            100.0 * BUSY_SHARE
        )
    };
    let (share, quiet) = wait_for_quiet(if a.busy_ok { 1 } else { 3 });
    if !quiet && !a.busy_ok {
        return Err(refuse(share.unwrap_or(1.0)));
    }
    let m = calibrate(&CalibrateConfig {
        binary: a.binary.clone(),
        scale: a.scale,
        self_exe: own_exe()?,
        speed: !a.no_speed,
    })?;
    if let Some(b) = m.busy_share.filter(|&b| b > BUSY_SHARE) {
        if !a.busy_ok {
            return Err(refuse(b));
        }
        eprintln!(
            "aspace calibrate: WARNING: the host was busy ({:.0}% of its CPU time taken by other work); recorded as such",
            100.0 * b
        );
    }
    print!("{}", text(&m));
    if let Some(dir) = a.out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let json = serde_json::to_string_pretty(&m).map_err(|e| e.to_string())?;
    std::fs::write(&a.out, json + "\n")
        .map_err(|e| format!("cannot write {}: {e}", a.out.display()))?;
    println!(
        "Wrote {} (use it with aspace predict --host {} or --machine {}).",
        a.out.display(),
        a.out.display(),
        a.out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_calibration_is_a_valid_machine() {
        // The unit-test harness is not the lab binary; cargo builds that
        // next to the deps directory for the integration tests.
        let exe = std::env::current_exe().unwrap();
        let lab = exe
            .parent()
            .and_then(Path::parent)
            .map(|d| d.join("aspace"))
            .filter(|p| p.is_file())
            .expect("cargo test builds target/<profile>/aspace for the integration tests");
        let m = match calibrate(&CalibrateConfig {
            binary: "/bin/true".into(),
            scale: 0.01,
            self_exe: lab,
            speed: true,
        }) {
            Ok(m) => m,
            // On a loaded host a measured wait can leave the range a
            // machine file allows (a 10 ms wake-up median was seen at load
            // 11): calibrate must then refuse with the value named, never
            // write an invalid machine. Any other error fails the test.
            Err(e) if e.contains("_ns") && e.contains("must be") => {
                eprintln!("calibration refused on this host, as it should be: {e}");
                return;
            }
            Err(e) => panic!("calibrate: {e}"),
        };
        m.validate().unwrap();
        assert_eq!(m.name, "host");
        assert!(m.exec_ns.unwrap() > 1_000.0, "an exec takes more than 1 us");
        assert!(m.fork_exec_ns.unwrap() > m.atomic_rmw_ns);
        assert!(m.atomic_rmw_ns > 0.0 && m.atomic_rmw_ns < 1_000.0);
        // The clock item is always measured, with the clocksource named.
        assert!(m.clock_read_ns.is_some_and(|ns| ns > 0.0));
        assert!(m.sources["clock_read_ns"].contains("clocksource"));
        let back = Machine::from_json(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
    }

    /// A read of the monotonic clock costs something and returns: a loop
    /// the compiler emptied would read 0, a unit slip (us, cycles) 1000x.
    #[test]
    fn a_clock_read_is_measured_in_ns() {
        let ns = clock_read_ns(0.01);
        assert!(ns > 0.0 && ns.is_finite(), "{ns} ns");
        assert!(ns < 1e6, "{ns} ns for one clock_gettime");
    }

    /// The measured clock is a clock a core can run at (a chain that the
    /// compiler shortened, or a timer in the wrong unit, would read far
    /// outside).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_clock_is_measured() {
        let (ghz, _) = measured_ghz(0.1).expect("x86-64 measures its clock");
        assert!((0.3..8.0).contains(&ghz), "{ghz} GHz");
    }
}
