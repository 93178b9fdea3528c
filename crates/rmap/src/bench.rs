//! The churn runner: exec/exit-like churn on one file's reverse map, reused
//! by the lab.
//!
//! `threads` threads each repeatedly map one "process" (insert the 5
//! segments of a libc-like file, [`libc_like_intervals`]) and unmap it
//! (remove the 5 entries), on top of `resident_processes` processes mapped
//! before the run starts. With `batch`, a process's 5 entries go in with
//! one [`ReverseMap::insert_batch`] and out with one
//! [`ReverseMap::remove_batch`] (Linux since the 2024 exit batching); without,
//! one call per entry. An optional walker thread walks the whole of one
//! segment `walk_rate_hz` times a second (a stable walk).
//!
//! One *op* is one process mapped and unmapped: 5 inserts and 5 removes.
//! Inserts run under [`CallSite::MmapLink`], removals under
//! [`CallSite::ExitUnlink`] and the walker under [`CallSite::Walk`], so the
//! result's [`LockStats::per_site`] splits the holds.
//!
//! ```
//! use rmap::bench::{churn_on, ChurnConfig};
//! use rmap::{Design, ReverseMap, Topology};
//! use std::time::Duration;
//!
//! let cfg = ChurnConfig {
//!     threads: 2,
//!     duration: Duration::from_millis(20),
//!     resident_processes: 100,
//!     ..ChurnConfig::default()
//! };
//! let map = Design::Aspace.build_arc(&Topology::Os);
//! let r = churn_on(map.clone(), &cfg).unwrap();
//! // Every process the threads mapped was unmapped again: the residents remain.
//! assert_eq!(map.len(), 100 * 5);
//! println!("{}: {:.0} processes mapped and unmapped per second", r.design, r.ops_per_sec);
//! ```

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use crate::stats::{set_call_site, CallSite};
use crate::{Design, Handle, Interval, LockStats, ReverseMap, RmapError, Topology, VmaId};

/// The five segments of a libc-like shared object, in page offsets: r--
/// ELF header and rodata, r-x text, r-- rodata, r-- RELRO, rw- data. (The
/// sizes follow glibc 2.3x on x86-64.)
pub fn libc_like_intervals() -> [Interval; 5] {
    [
        Interval {
            first: 0,
            last: 0x27,
        },
        Interval {
            first: 0x28,
            last: 0x1ad,
        },
        Interval {
            first: 0x1ae,
            last: 0x205,
        },
        Interval {
            first: 0x206,
            last: 0x209,
        },
        Interval {
            first: 0x20a,
            last: 0x20b,
        },
    ]
}

/// What to run.
#[derive(Clone, Debug)]
pub struct ChurnConfig {
    /// Churning threads.
    pub threads: usize,
    /// How long to run.
    pub duration: Duration,
    /// Processes mapped (5 entries each) before the run, left in place.
    pub resident_processes: usize,
    /// Stable walks per second by one extra walker thread; 0 for none.
    pub walk_rate_hz: f64,
    /// Thread-to-CPU mapping handed to the map.
    pub topology: Topology,
    /// Insert and remove a process's entries with one batch call each.
    pub batch: bool,
    /// The segments one process maps.
    pub intervals: Vec<Interval>,
}

impl Default for ChurnConfig {
    fn default() -> Self {
        ChurnConfig {
            threads: 1,
            duration: Duration::from_millis(500),
            resident_processes: 1200,
            walk_rate_hz: 0.0,
            topology: Topology::Os,
            batch: true,
            intervals: libc_like_intervals().to_vec(),
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug)]
pub struct ChurnResult {
    /// The design run.
    pub design: Design,
    /// Churning threads.
    pub threads: usize,
    /// Processes mapped and unmapped (each 5 inserts + 5 removes).
    pub ops: u64,
    /// `ops` per second of wall time.
    pub ops_per_sec: f64,
    /// Walks completed.
    pub walks: u64,
    /// Entries visited by walks.
    pub walked_entries: u64,
    /// Lock counters at the end (including the resident setup).
    pub stats: LockStats,
    /// `memory_bytes()` at the end.
    pub memory_bytes: usize,
    /// Wall time of the run.
    pub elapsed: Duration,
}

/// Maps the resident processes of `cfg` into `map`. An inverted interval
/// in `cfg` is skipped (it cannot be inserted); [`churn`] refuses it first.
pub fn populate(map: &dyn ReverseMap, cfg: &ChurnConfig) -> Vec<Handle> {
    let mut hs = Vec::with_capacity(cfg.resident_processes * cfg.intervals.len());
    let mut vma: VmaId = 1 << 48;
    for _ in 0..cfg.resident_processes {
        for &iv in &cfg.intervals {
            if let Ok(h) = map.insert(iv, vma) {
                hs.push(h);
            }
            vma += 1;
        }
    }
    hs
}

/// One churn iteration: map and unmap one process.
///
/// # Panics
///
/// If `intervals` holds an inverted interval, or `map` loses a handle it
/// just issued. This is the benchmarks' inner loop, so it checks nothing
/// up front: validate the intervals once with [`ChurnConfig::validate`].
#[inline]
pub fn churn_once(
    map: &dyn ReverseMap,
    intervals: &[Interval],
    batch: bool,
    vma_base: VmaId,
    items: &mut Vec<(Interval, VmaId)>,
    hs: &mut Vec<Handle>,
) {
    hs.clear();
    if batch {
        items.clear();
        items.extend(
            intervals
                .iter()
                .enumerate()
                .map(|(i, &iv)| (iv, vma_base + i as u64)),
        );
        {
            let _site = set_call_site(CallSite::MmapLink);
            map.insert_batch(items, hs).expect("valid intervals");
        }
        let _site = set_call_site(CallSite::ExitUnlink);
        map.remove_batch(hs).expect("live handles");
    } else {
        {
            let _site = set_call_site(CallSite::MmapLink);
            for (i, &iv) in intervals.iter().enumerate() {
                hs.push(map.insert(iv, vma_base + i as u64).expect("valid interval"));
            }
        }
        let _site = set_call_site(CallSite::ExitUnlink);
        for &h in hs.iter() {
            map.remove(h).expect("live handle");
        }
    }
}

/// Why a churn configuration was refused.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum ChurnError {
    /// One of `intervals` is inverted.
    Interval(RmapError),
    /// `walk_rate_hz` is negative or not a number.
    WalkRate(f64),
}

impl std::fmt::Display for ChurnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChurnError::Interval(e) => write!(f, "churn interval: {e}"),
            ChurnError::WalkRate(r) => write!(f, "walk rate {r} Hz: must be a number >= 0"),
        }
    }
}

impl std::error::Error for ChurnError {}

impl ChurnConfig {
    /// Checks the configuration: every interval valid, a walk rate that is
    /// a number and not negative (a tiny rate means at most one walk a run).
    pub fn validate(&self) -> Result<(), ChurnError> {
        for iv in &self.intervals {
            iv.validate().map_err(ChurnError::Interval)?;
        }
        if self.walk_rate_hz.is_nan() || self.walk_rate_hz < 0.0 {
            return Err(ChurnError::WalkRate(self.walk_rate_hz));
        }
        Ok(())
    }
}

/// Runs the churn of `cfg` on a fresh map of `design`.
pub fn churn(design: Design, cfg: &ChurnConfig) -> Result<ChurnResult, ChurnError> {
    cfg.validate()?;
    let map: Arc<dyn ReverseMap> = design.build_arc(&cfg.topology);
    churn_on(map, cfg)
}

/// Runs the churn of `cfg` on `map` (after populating it).
pub fn churn_on(map: Arc<dyn ReverseMap>, cfg: &ChurnConfig) -> Result<ChurnResult, ChurnError> {
    cfg.validate()?;
    let _resident = populate(&*map, cfg);
    let threads = cfg.threads.max(1);
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let walks = Arc::new(AtomicU64::new(0));
    let walked = Arc::new(AtomicU64::new(0));
    let walker = cfg.walk_rate_hz > 0.0;
    let barrier = Arc::new(Barrier::new(threads + 1 + usize::from(walker)));
    let mut joins = Vec::new();
    for t in 0..threads {
        let (map, stop, ops, barrier) = (map.clone(), stop.clone(), ops.clone(), barrier.clone());
        let intervals = cfg.intervals.clone();
        let batch = cfg.batch;
        joins.push(std::thread::spawn(move || {
            let mut items = Vec::with_capacity(intervals.len());
            let mut hs = Vec::with_capacity(intervals.len());
            let mut n: u64 = 0;
            let base = (t as u64 + 1) << 40;
            barrier.wait();
            // Relaxed: the flag only ends the loop; no data rides on it.
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..16 {
                    churn_once(&*map, &intervals, batch, base + n * 8, &mut items, &mut hs);
                    n += 1;
                }
            }
            ops.fetch_add(n, Ordering::Relaxed);
        }));
    }
    if walker {
        let (map, stop, walks, walked, barrier) = (
            map.clone(),
            stop.clone(),
            walks.clone(),
            walked.clone(),
            barrier.clone(),
        );
        // A rate so small that its period overflows a Duration walks once.
        let period = Duration::try_from_secs_f64(1.0 / cfg.walk_rate_hz)
            .unwrap_or(cfg.duration)
            .min(cfg.duration.max(Duration::from_millis(1)));
        let range = cfg.intervals.first().copied().unwrap_or(Interval::FULL);
        joins.push(std::thread::spawn(move || {
            barrier.wait();
            let mut next = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                let mut k = 0u64;
                let _site = set_call_site(CallSite::Walk);
                map.walk(range, &mut |_, _| k += 1);
                // Relaxed: a statistic, read after the threads are joined (join orders it).
                walks.fetch_add(1, Ordering::Relaxed);
                walked.fetch_add(k, Ordering::Relaxed);
                // Sleep until the next walk is due, in slices of at most
                // 50 ms so that a stop is seen promptly; a walk that ran
                // late starts the schedule again from now (no burst).
                next += period;
                loop {
                    // Relaxed: a stop flag; no data is published through it.
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let now = Instant::now();
                    if next <= now {
                        next = now;
                        break;
                    }
                    std::thread::sleep((next - now).min(Duration::from_millis(50)));
                }
            }
        }));
    }
    barrier.wait();
    let start = Instant::now();
    std::thread::sleep(cfg.duration);
    // Relaxed: a stop flag; no data is published through it.
    stop.store(true, Ordering::Relaxed);
    for j in joins {
        j.join().expect("churn thread panicked");
    }
    let elapsed = start.elapsed();
    // Relaxed: a statistic, read after the threads are joined (join orders it).
    let ops = ops.load(Ordering::Relaxed);
    Ok(ChurnResult {
        design: map.design(),
        threads,
        ops,
        ops_per_sec: ops as f64 / elapsed.as_secs_f64(),
        // Relaxed: a statistic, read after the threads are joined (join orders it).
        walks: walks.load(Ordering::Relaxed),
        walked_entries: walked.load(Ordering::Relaxed),
        stats: map.stats(),
        memory_bytes: map.memory_bytes(),
        elapsed,
    })
}

/// Runs `ops_per_thread` churn iterations on each of `threads` threads
/// against `map` and returns the wall time (for criterion's `iter_custom`).
pub fn churn_fixed(
    map: &Arc<dyn ReverseMap>,
    threads: usize,
    ops_per_thread: u64,
    batch: bool,
) -> Duration {
    let threads = threads.max(1);
    let barrier = Arc::new(Barrier::new(threads + 1));
    let intervals = libc_like_intervals();
    let joins: Vec<_> = (0..threads)
        .map(|t| {
            let (map, barrier) = (map.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut items = Vec::with_capacity(5);
                let mut hs = Vec::with_capacity(5);
                let base = (t as u64 + 1) << 40;
                barrier.wait();
                for n in 0..ops_per_thread {
                    churn_once(&*map, &intervals, batch, base + n * 8, &mut items, &mut hs);
                }
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    for j in joins {
        j.join().expect("churn thread panicked");
    }
    start.elapsed()
}
