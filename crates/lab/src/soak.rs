//! `aspace soak`: a long randomized run that looks for broken invariants and for
//! memory that grows without bound.
//!
//! Worker threads (spread over the designs, each design with its own file registry
//! shared by its workers) keep a few processes each and apply random `mmap`,
//! `munmap`, `mprotect`, `brk`, `fork`, `exec`, `exit` and process drops to them,
//! and walk the shared files' reverse maps with both walks. At intervals each
//! worker checks its processes ([`mm::Mm::check_invariants`]: no overlap, each file
//! VMA in its own file's reverse map exactly once and in no other), and each walk
//! checks the walk contract for the worker's own entries, which no other thread
//! changes: every one overlapping the range is seen exactly once, nothing of its
//! that is gone is seen, and nothing outside the range is reported. At the end,
//! with every process gone, every reverse map must be empty. A sampler records
//! resident memory over time, so that reclamation (maple nodes and values freed
//! through the maple crate's epoch, rmap slots reused) can be seen to stay bounded.

use mm::layout::{MMAP_BASE, MMAP_MIN_ADDR};
use mm::{CallPattern, File, Files, MapFlags, Mm, Program, Prot, PAGE_SIZE};
use rmap::{Design, Interval, Topology, VmaId};
use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What to run.
#[derive(Clone, Debug)]
pub struct SoakConfig {
    /// Wall-clock length of the run.
    pub duration: Duration,
    /// Worker threads in all (spread round-robin over `designs`).
    pub threads: usize,
    /// The designs under test.
    pub designs: Vec<Design>,
    /// Base seed of the workers' random streams.
    pub seed: u64,
    /// The binary `exec` loads (real ELF files); `None` runs without exec.
    pub binary: Option<std::path::PathBuf>,
}

/// What a soak found.
#[derive(Clone, Debug, Serialize)]
pub struct SoakReport {
    /// Seconds the workers ran.
    pub duration_s: f64,
    /// Worker threads.
    pub threads: usize,
    /// Design names.
    pub designs: Vec<String>,
    /// The call pattern each design's processes used, in the order of `designs`
    /// (they alternate, so a soak exercises both).
    pub call_patterns: Vec<String>,
    /// Base seed.
    pub seed: u64,
    /// Operations done, in all.
    pub ops: u64,
    /// Operations by kind.
    pub ops_by_kind: HashMap<String, u64>,
    /// Invariant checks and walk-contract checks done.
    pub checks: u64,
    /// Violations found (must be 0).
    pub violations: u64,
    /// The first few violations, described.
    pub violation_samples: Vec<String>,
    /// Peak resident set (VmHWM), KiB.
    pub peak_rss_kib: u64,
    /// (seconds since start, VmRSS KiB) samples.
    pub rss_curve: Vec<(f64, u64)>,
    /// RSS at the end of the first quarter of the run and at its end, KiB, and the
    /// least-squares slope of the second half of the curve, KiB per minute.
    pub rss_quarter_kib: u64,
    /// See `rss_quarter_kib`.
    pub rss_end_kib: u64,
    /// See `rss_quarter_kib`. A description of the curve, for comparing runs; not a
    /// prediction of what a longer run would do.
    pub rss_slope_kib_per_min: f64,
    /// The lowest and highest RSS sampled in the second half of the run, KiB: the
    /// measured bound on how much resident memory moved once the run had warmed up.
    pub rss_second_half_kib: (u64, u64),
    /// Seconds the second half spans.
    pub rss_second_half_s: f64,
}

const KINDS: [&str; 10] = [
    "mmap", "munmap", "mprotect", "brk", "fork", "exec", "exit", "drop", "walk", "check",
];

/// Reads a `Vm*:` line of /proc/self/status in KiB (0 where unavailable).
pub fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field)?.strip_prefix(':').map(str::to_owned))
        })
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

struct Shared {
    stop: AtomicBool,
    ops: [AtomicU64; KINDS.len()],
    checks: AtomicU64,
    violations: AtomicU64,
    samples: Mutex<Vec<String>>,
}

impl Shared {
    fn violation(&self, what: String) {
        // Relaxed: a statistic, read after the threads are joined (join orders it).
        self.violations.fetch_add(1, Ordering::Relaxed);
        let mut s = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        if s.len() < 20 {
            s.push(what);
        }
    }
}

/// xorshift64*: small, fast, reproducible per seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

struct World {
    design: Design,
    files: Arc<Files>,
    synth: Vec<Arc<File>>,
    prog: Option<Arc<Program>>,
}

fn prot(bits: u64) -> Prot {
    Prot::new(bits & 1 != 0, bits & 2 != 0, bits & 4 != 0)
}

/// Checks the walk contract for the entries of `own` in `file`'s map over `range`.
fn check_walk(
    sh: &Shared,
    w: &World,
    own: &[Mm],
    file: &Arc<File>,
    range: Interval,
    concurrent: bool,
) {
    let mut want: HashMap<VmaId, Interval> = HashMap::new();
    for mm in own {
        for v in mm.vmas() {
            if let (Some((f, pgoff)), Some(id)) = (v.file(), v.rmap_id()) {
                let iv = Interval {
                    first: pgoff,
                    last: pgoff + v.pages() - 1,
                };
                if Arc::ptr_eq(f, file) && iv.overlaps(&range) {
                    want.insert(id, iv);
                }
            }
        }
    }
    let mut seen: HashMap<VmaId, u32> = HashMap::new();
    let mut bad = None;
    let mut f = |iv: Interval, id: VmaId| {
        if !iv.overlaps(&range) {
            bad = Some(format!("walk of {range:?} reported {iv:?} outside it"));
        }
        if own.iter().any(|m| m.owns(id)) {
            *seen.entry(id).or_default() += 1;
            if want.get(&id) != Some(&iv) {
                bad = Some(format!("walk reported {id} {iv:?}, not a live VMA of ours"));
            }
        }
    };
    if concurrent {
        file.rmap().walk_concurrent(range, &mut f);
    } else {
        file.rmap().walk(range, &mut f);
    }
    if bad.is_none() {
        if let Some((id, _)) = want.iter().find(|(id, _)| seen.get(id) != Some(&1)) {
            bad = Some(format!(
                "walk saw our entry {id} {} times, not once",
                seen.get(id).copied().unwrap_or(0)
            ));
        }
    }
    // Relaxed: a statistic, read after the threads are joined (join orders it).
    sh.checks.fetch_add(1, Ordering::Relaxed);
    if let Some(b) = bad {
        sh.violation(format!(
            "{}: {} ({}): {b}",
            w.design,
            file.path().display(),
            if concurrent {
                "walk_concurrent"
            } else {
                "walk"
            }
        ));
    }
}

/// The operations every worker does even if the duration ends first, so a
/// soak on a starved machine still checks something: four invariant checks a
/// worker, and every kind of operation, each drawn with chance 2% or more an
/// operation (exit, the rarest), missing from 4 workers' 1024 with chance
/// below 0.98^1024 = 1e-9 (and the draws are seeded: a given binary gives
/// the same ones every run).
pub const MIN_OPS: u64 = 256;

fn worker(sh: &Shared, w: &World, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut own: Vec<Mm> = Vec::new();
    let mut n = 0u64;
    // At least MIN_OPS operations, however late the thread starts, so that
    // a soak on a loaded machine still checks something of every kind.
    // Relaxed: a stop flag; no data is published through it.
    while n < MIN_OPS || !sh.stop.load(Ordering::Relaxed) {
        n += 1;
        if own.is_empty() || (own.len() < 4 && rng.below(8) == 0) {
            let mm = Mm::new(w.files.clone());
            if let Some(p) = &w.prog {
                mm.exec_program(p);
            }
            own.push(mm);
        }
        let i = rng.below(own.len() as u64) as usize;
        let mm = &own[i];
        let page = |r: &mut Rng| MMAP_BASE - (r.below(2048) + 1) * PAGE_SIZE;
        let kind = match rng.below(100) {
            0..=24 => {
                let len = (rng.below(16) + 1) * PAGE_SIZE;
                let fixed = rng.below(3) == 0;
                let addr = if rng.below(2) == 0 {
                    page(&mut rng)
                } else {
                    MMAP_MIN_ADDR + rng.below(512) * PAGE_SIZE
                };
                let file = if rng.below(3) > 0 {
                    let f = &w.synth[rng.below(w.synth.len() as u64) as usize];
                    Some((f, rng.below(240)))
                } else {
                    None
                };
                let flags = MapFlags {
                    fixed,
                    shared: rng.below(4) == 0,
                };
                let _ = mm.mmap(addr, len, prot(rng.next()), flags, file);
                0
            }
            25..=44 => {
                let at = match mm.vmas().get(rng.below(64) as usize) {
                    Some(v) if rng.below(4) > 0 => v.start + rng.below(v.pages()) * PAGE_SIZE,
                    _ => page(&mut rng),
                };
                let _ = mm.munmap(at, (rng.below(8) + 1) * PAGE_SIZE);
                1
            }
            45..=64 => {
                let at = match mm.vmas().get(rng.below(64) as usize) {
                    Some(v) => v.start + rng.below(v.pages()) * PAGE_SIZE,
                    None => page(&mut rng),
                };
                let _ = mm.mprotect(at, (rng.below(4) + 1) * PAGE_SIZE, prot(rng.next()));
                2
            }
            65..=69 => {
                let (start, cur) = mm.brk_range();
                let to = if rng.below(2) == 0 {
                    cur + rng.below(64) * PAGE_SIZE
                } else {
                    start + rng.below(64) * PAGE_SIZE
                };
                mm.brk(to);
                3
            }
            70..=74 => {
                let child = mm.fork();
                if own.len() < 6 {
                    own.push(child);
                }
                4
            }
            75..=77 => {
                if let Some(p) = &w.prog {
                    mm.exec_program(p);
                }
                5
            }
            78..=79 => {
                mm.exit();
                6
            }
            80..=82 => {
                own.swap_remove(i);
                7
            }
            _ => {
                let f = &w.synth[rng.below(w.synth.len() as u64) as usize];
                let first = rng.below(256);
                let range = Interval {
                    first,
                    last: first + rng.below(64),
                };
                check_walk(sh, w, &own, f, range, rng.below(2) == 0);
                8
            }
        };
        // Relaxed: a statistic, read after the threads are joined (join orders it).
        sh.ops[kind].fetch_add(1, Ordering::Relaxed);
        if n % 64 == 0 {
            for mm in &own {
                // Relaxed: a statistic, read after the threads are joined (join orders it).
                sh.checks.fetch_add(1, Ordering::Relaxed);
                if let Err(e) = mm.check_invariants() {
                    sh.violation(format!("{}: process {}: {e}", w.design, mm.id()));
                }
            }
            // Relaxed: a statistic, read after the threads are joined (join orders it).
            sh.ops[9].fetch_add(1, Ordering::Relaxed);
        }
    }
    for mm in &own {
        if let Err(e) = mm.check_invariants() {
            sh.violation(format!("{}: process {} at the end: {e}", w.design, mm.id()));
        }
    }
}

/// Least-squares slope of `pts`, in y units per x unit.
fn slope(pts: &[(f64, u64)]) -> f64 {
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return 0.0;
    }
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1 as f64).sum::<f64>() / n;
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 as f64 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx == 0.0 {
        0.0
    } else {
        sxy / sxx
    }
}

/// Runs a soak; `tick` is called about once per RSS sample with the fraction done.
pub fn run(cfg: &SoakConfig, tick: &dyn Fn(f64)) -> SoakReport {
    let topo = Topology::detect();
    let worlds: Vec<World> = cfg
        .designs
        .iter()
        .enumerate()
        .map(|(i, &design)| {
            // Alternate the call patterns so a soak exercises both.
            let pattern = CallPattern::ALL[i % CallPattern::ALL.len()];
            let files = Files::new(design, topo.clone(), pattern);
            let synth = (0..4)
                .map(|i| files.register(Path::new(&format!("/soak/file{i}")), 256))
                .collect();
            let prog = cfg.binary.as_deref().and_then(|b| files.program(b).ok());
            World {
                design,
                files,
                synth,
                prog,
            }
        })
        .collect();
    let sh = Shared {
        stop: AtomicBool::new(false),
        ops: Default::default(),
        checks: AtomicU64::new(0),
        violations: AtomicU64::new(0),
        samples: Mutex::new(Vec::new()),
    };
    let start = Instant::now();
    // About 120 samples over the run, at least 100 ms apart.
    let every = (cfg.duration / 120).max(Duration::from_millis(100));
    let mut curve = vec![(0.0, status_kib("VmRSS"))];
    std::thread::scope(|s| {
        for t in 0..cfg.threads {
            let (sh, w) = (&sh, &worlds[t % worlds.len()]);
            let seed = cfg.seed.wrapping_add(t as u64);
            s.spawn(move || worker(sh, w, seed));
        }
        while start.elapsed() < cfg.duration {
            std::thread::sleep(every.min(cfg.duration.saturating_sub(start.elapsed())));
            curve.push((start.elapsed().as_secs_f64(), status_kib("VmRSS")));
            tick(start.elapsed().as_secs_f64() / cfg.duration.as_secs_f64());
        }
        // Relaxed: a stop flag; no data is published through it.
        sh.stop.store(true, Ordering::Relaxed);
    });
    let ran = start.elapsed().as_secs_f64();
    // Every process is gone: every reverse map must be empty.
    for w in &worlds {
        for f in w.files.all() {
            sh.checks.fetch_add(1, Ordering::Relaxed);
            if !f.rmap().is_empty() {
                sh.violation(format!(
                    "{}: {} keeps {} entries after every process exited",
                    w.design,
                    f.path().display(),
                    f.rmap().len()
                ));
            }
        }
    }
    curve.push((start.elapsed().as_secs_f64(), status_kib("VmRSS")));
    let ops_by_kind: HashMap<String, u64> = KINDS
        .iter()
        .zip(&sh.ops)
        // Relaxed: a statistic, read after the threads are joined (join orders it).
        .map(|(k, n)| ((*k).to_owned(), n.load(Ordering::Relaxed)))
        .collect();
    let quarter = curve.iter().find(|p| p.0 >= ran / 4.0).map_or(0, |p| p.1);
    let half: Vec<(f64, u64)> = curve.iter().copied().filter(|p| p.0 >= ran / 2.0).collect();
    SoakReport {
        duration_s: ran,
        threads: cfg.threads,
        designs: cfg.designs.iter().map(|d| d.name().to_owned()).collect(),
        call_patterns: worlds
            .iter()
            .map(|w| w.files.call_pattern().name().to_owned())
            .collect(),
        seed: cfg.seed,
        ops: ops_by_kind.values().sum(),
        ops_by_kind,
        // Relaxed: a statistic, read after the threads are joined (join orders it).
        checks: sh.checks.load(Ordering::Relaxed),
        violations: sh.violations.load(Ordering::Relaxed),
        violation_samples: sh.samples.into_inner().unwrap_or_else(|e| e.into_inner()),
        peak_rss_kib: status_kib("VmHWM"),
        rss_quarter_kib: quarter,
        rss_end_kib: curve.last().map_or(0, |p| p.1),
        rss_slope_kib_per_min: slope(&half) * 60.0,
        rss_second_half_kib: (
            half.iter().map(|p| p.1).min().unwrap_or(0),
            half.iter().map(|p| p.1).max().unwrap_or(0),
        ),
        rss_second_half_s: half.last().map_or(0.0, |l| l.0) - half.first().map_or(0.0, |f| f.0),
        rss_curve: curve,
    }
}

/// The report as text: the RSS curve, then the totals.
pub fn text(r: &SoakReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "RSS curve (seconds, VmRSS KiB):");
    for (t, kib) in &r.rss_curve {
        let _ = writeln!(s, "  {t:8.2}  {kib:>9}");
    }
    let mut kinds: Vec<_> = r.ops_by_kind.iter().collect();
    kinds.sort();
    let _ = writeln!(
        s,
        "\noperations: {} in {:.1} s ({:.0}/s) on {} threads over {}",
        r.ops,
        r.duration_s,
        r.ops as f64 / r.duration_s.max(1e-9),
        r.threads,
        r.designs
            .iter()
            .zip(&r.call_patterns)
            .map(|(d, p)| format!("{d} ({p})"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let by: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let _ = writeln!(s, "  by kind: {}", by.join(", "));
    let _ = writeln!(s, "invariant and walk checks: {}", r.checks);
    let _ = writeln!(s, "violations: {}", r.violations);
    for v in &r.violation_samples {
        let _ = writeln!(s, "  VIOLATION: {v}");
    }
    let _ = writeln!(s, "peak RSS (VmHWM): {} KiB", r.peak_rss_kib);
    let (lo, hi) = r.rss_second_half_kib;
    let _ = writeln!(
        s,
        "RSS: {} KiB at 1/4 of the run, {} KiB at the end; over the second half ({:.1} s) it stayed \
         between {lo} and {hi} KiB, a measured bound of {} KiB on its movement in this run \
         (not an extrapolation to longer runs)",
        r.rss_quarter_kib,
        r.rss_end_kib,
        r.rss_second_half_s,
        hi - lo
    );
    s
}
