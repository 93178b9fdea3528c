//! The workloads: UnixBench `execl` and `shell` on the address-space model.
//!
//! One point = one design at one thread count:
//! 1. a fresh file registry of that design; the binary resolved once (ld.so's work);
//! 2. `resident` processes exec the binary and stay, so libc's and ld.so's reverse
//!    maps hold `5 x resident` identical intervals each, as on a busy machine;
//! 3. `threads` workers loop for `duration` (each at least once, so a sample of a
//!    loaded machine never reads 0): exec the binary, take a few page faults
//!    (entry point, libc text, stack, heap), exit (execl); or fork a parent, exec in
//!    the child, fault, exit (shell);
//! 4. optionally a reclaim thread walks libc's reverse map at `walk_rate` per second
//!    (one page each, the stable walk; the first walk at once, so every sample
//!    has one);
//! 5. lock statistics are the delta over the measured interval;
//! 6. every [`Point::placement_every`] iterations (and at the first) each
//!    worker asks which CPU it runs on (`sched_getcpu`, the vDSO: no system
//!    call), between iterations, outside every lock hold; the run records
//!    the CPUs each thread was seen on ([`Placement`]), since the threads
//!    are not pinned and a sharded design's rate depends on how many of its
//!    CPU groups the scheduler spread them over.
//!
//! With [`KernelCost`] (`aspace bench --cost kernel`), each iteration also
//! does what a real exec costs beyond the model: it spins for the rest of
//! the real exec's calibrated CPU time, and touches the exec's other shared
//! lines (the pages, dentries and inodes of the files it maps, the kernel's
//! global allocator, binfmt, page-table list and credential lines, the
//! memory cgroup's counter) as real atomics on lines every worker shares,
//! each at the place of the exec where Linux 6.12 touches it: the lines and
//! places are [`crate::predict::kernel::PhaseLines`], the very list the
//! prediction places in its profiles (exec start, the old image's unmap
//! before its exit unlinks, its release after them, the new image's faults
//! spread over the spin). Each split of a file VMA also removes and
//! reinserts the cut VMA in its file's reverse map, inside the split's
//! hold, as the kernel's `__split_vma` does
//! ([`Files::set_kernel_split_holds`], as the prediction's recordings of
//! this cost have it). The reverse maps are the model's; everything else
//! an exec does is there in time and in shared lines, so that each design
//! is measured under the kernel's conditions.

use crate::model_exec::{fault_plan, model_exec_ns, thread_cpu_ns};
use crate::results::{CallsPerOp, Placement, Run, SiteCost, ThreadPlacement, WalkCost};
use mm::{Access, CallPattern, Files, Linkage, Mm, Program, RmapCalls};
use rmap::stats::{set_call_site, CallSite};
use rmap::{Design, Interval, Topology};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The two UnixBench-like workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// exec -> faults -> exit, in a loop (UnixBench execl).
    Execl,
    /// fork -> exec in the child -> faults -> child exits (UnixBench shell scripts).
    Shell,
}

impl Workload {
    /// The JSON name.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Execl => "execl",
            Workload::Shell => "shell",
        }
    }
}

/// One point's settings.
#[derive(Clone, Debug)]
pub struct Point {
    /// Which workload.
    pub workload: Workload,
    /// Which design.
    pub design: Design,
    /// How mm calls the reverse maps.
    pub pattern: CallPattern,
    /// Worker threads.
    pub threads: usize,
    /// Which repeat of this point (0-based).
    pub repeat: usize,
    /// More worker threads than the machine's cores.
    pub oversubscribed: bool,
    /// Measured time.
    pub duration: Duration,
    /// Resident processes.
    pub resident: usize,
    /// Reclaim walks per second (0 = none).
    pub walk_rate: f64,
    /// Topology the designs are built for.
    pub topology: Topology,
    /// Its name for the JSON.
    pub topology_name: String,
    /// The binary.
    pub binary: PathBuf,
    /// The rest of a real exec's cost, for `--cost kernel` (None: the
    /// model's own cost).
    pub kernel: Option<Arc<KernelCost>>,
    /// The designs' locks for this point (`aspace bench --lock`).
    pub lock: rmap::LockImpl,
    /// Ask each worker's CPU every this many iterations (and at the first);
    /// 0: never, and the run records no placement. [`PLACEMENT_EVERY`] by
    /// default.
    pub placement_every: u64,
}

/// Iterations between two "which CPU am I on" samples of a worker: one
/// `sched_getcpu` (tens of ns, the vDSO) per 16 iterations of tens of us
/// each is below 0.01% of a worker's time; often enough that a thread the
/// scheduler moves within a one-second sample is seen on both CPUs.
pub const PLACEMENT_EVERY: u64 = 16;

/// The CPUs one worker was seen on, with how many samples each.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpusSeen(Vec<(u32, u64)>);

impl CpusSeen {
    /// One more sample on `cpu`.
    #[inline]
    pub fn note(&mut self, cpu: u32) {
        match self.0.iter_mut().find(|(c, _)| *c == cpu) {
            Some((_, n)) => *n += 1,
            None => self.0.push((cpu, 1)),
        }
    }

    /// The thread's summary: its CPUs sorted, the one seen most (the lower
    /// id on a tie) and the samples. `None` when never sampled.
    pub fn summary(&self) -> Option<ThreadPlacement> {
        let &(cpu, _) = self
            .0
            .iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))?;
        let mut cpus: Vec<u32> = self.0.iter().map(|&(c, _)| c).collect();
        cpus.sort_unstable();
        Some(ThreadPlacement {
            cpu,
            cpus,
            samples: self.0.iter().map(|&(_, n)| n).sum(),
        })
    }
}

/// A point's [`Placement`] from its workers' samples: the CPUs used, and
/// for a design of several locks how many of its shards the threads'
/// main CPUs (and any CPU they were seen on) map to, by the design's own
/// rule ([`Design::shard_of_cpu`]). Shards are counted only on the
/// operating system's topology: on an emulated one the design picks its
/// shard from the emulated CPU, not the one the thread ran on.
pub fn placement_of(
    design: Design,
    topology: &Topology,
    every: u64,
    seen: &[CpusSeen],
) -> Option<Placement> {
    let threads: Vec<ThreadPlacement> = seen.iter().filter_map(CpusSeen::summary).collect();
    if every == 0 || threads.is_empty() {
        return None;
    }
    let mut cpus: Vec<u32> = threads.iter().flat_map(|t| t.cpus.clone()).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let count = |list: &mut dyn Iterator<Item = u32>| -> Option<u32> {
        if *topology != Topology::Os {
            return None;
        }
        let mut shards: Vec<u32> = list
            .map(|c| design.shard_of_cpu(topology, c))
            .collect::<Option<_>>()?;
        shards.sort_unstable();
        shards.dedup();
        Some(shards.len() as u32)
    };
    let shards = count(&mut threads.iter().map(|t| t.cpu));
    let shards_seen = count(&mut cpus.iter().copied());
    Some(Placement {
        every,
        cpus,
        shards,
        shards_seen,
        threads,
    })
}

/// What each iteration adds under `--cost kernel`: the rest of a real
/// exec's CPU time, spun, and its other shared lines, written (see the
/// module docs).
pub struct KernelCost {
    /// The real exec's CPU time, ns (calibrated).
    pub exec_ns: f64,
    /// The model's own iteration without a reverse map, ns (measured at
    /// start-up on one thread).
    pub model_ns: f64,
    /// Spun per iteration on one busy CPU: `exec_ns - model_ns` (at least 0).
    pub spin_ns: f64,
    /// The calibration's per-CPU speed with several CPUs busy: with `P`
    /// workers the spin lasts `spin_ns / speed_at(P)`, as the rest of a
    /// real exec slows when its core's sibling, the power budget or memory
    /// are shared (a spin that only watches the clock would not). Empty:
    /// not measured, every count spins `spin_ns`.
    pub speed: predict::Machine,
    /// Where each figure came from.
    pub source: String,
    lines: Vec<PaddedLine>,
    /// The lines one iteration touches, by phase of the exec.
    touches: crate::predict::kernel::PhaseLines,
}

impl std::fmt::Debug for KernelCost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelCost")
            .field("exec_ns", &self.exec_ns)
            .field("model_ns", &self.model_ns)
            .field("spin_ns", &self.spin_ns)
            .field("speed_by_cpus", &self.speed.speed_by_cpus)
            .field("lines", &self.lines.len())
            .field("touches", &self.touches)
            .finish()
    }
}

/// One shared line (128 bytes, so that no two share a prefetched pair).
#[repr(align(128))]
#[derive(Default)]
struct PaddedLine(std::sync::atomic::AtomicU64);

/// The spin is split in this many pieces per iteration, the map phase's
/// touches between them (a new image's faults are spread over a real
/// exec), as the prediction places them.
const SPIN_CHUNKS: usize = crate::predict::kernel::MAP_CHUNKS;

impl KernelCost {
    /// Measures what it needs: `exec_ns` from `calibration` (an `aspace
    /// calibrate` file with `exec_ns`) or, without one, a quick measurement
    /// of the binary's fork + exec + wait minus fork + exit; the model's own
    /// cost from a single-threaded run of the `exclude` design; the exec's
    /// shared lines from one run of the binary under ptrace.
    pub fn measure(
        binary: &Path,
        calibration: Option<&predict::Machine>,
        exec_ns: Option<f64>,
    ) -> Result<KernelCost, String> {
        let given = exec_ns.map(|ns| (ns, "given by --exec-ns".to_owned()));
        let (exec_ns, exec_source) = match given.or_else(|| {
            calibration
                .and_then(|m| m.exec_ns)
                .map(|ns| (ns, "the calibration file's exec_ns".to_owned()))
        }) {
            Some(x) => x,
            None => (
                crate::calibrate::exec_cost_ns(binary, 100)?,
                format!(
                    "measured now: fork+exec+wait minus fork+exit+wait of {}, medians of 5 batches of 100",
                    binary.display()
                ),
            ),
        };
        let model_ns = model_exec_ns(binary)?;
        let share = crate::predict::kernel::measure_exec(binary, &[])?;
        let touches = crate::predict::kernel::PhaseLines::of(&share);
        let lines_n = touches.lines;
        let touches_n =
            touches.start.len() + touches.unmap.len() + touches.release.len() + touches.map.len();
        // The calibration's speed curve, on a machine of this host's CPUs.
        let mut speed = crate::predict::host_without_calibration();
        speed.speed_by_cpus = calibration
            .map(|m| m.speed_by_cpus.clone())
            .unwrap_or_default();
        let cpus = speed.cpus();
        speed.speed_by_cpus.retain(|p| p.cpus <= cpus);
        let slows = if speed.speed_by_cpus.is_empty() {
            "the same spin at every thread count (no per-CPU speed measured)".to_owned()
        } else {
            format!(
                "the spin stretched by 1 / the calibration's per-CPU speed with that many CPUs busy ({})",
                speed
                    .speed_by_cpus
                    .iter()
                    .map(|p| format!("{} CPUs {:.2}", p.cpus, p.speed))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        Ok(KernelCost {
            exec_ns,
            model_ns,
            spin_ns: (exec_ns - model_ns).max(0.0),
            speed,
            source: format!(
                "real exec {:.0} us ({exec_source}); the model's own {:.1} us (exclude, one thread, median); {slows}; {} shared-line touches per exec over {} lines, at 4 places in it (exec start, the old image's unmap, its release after the exit unlinks, the new image's faults; Linux 6.12's code, kernel.rs) ({}); kernel-shaped splits (the cut VMA removed and reinserted in the split's hold)",
                exec_ns / 1e3,
                model_ns / 1e3,
                touches_n,
                lines_n,
                share.source
            ),
            lines: (0..lines_n).map(|_| PaddedLine::default()).collect(),
            touches,
        })
    }

    /// The spin per iteration with `threads` workers, ns.
    pub fn spin_at(&self, threads: usize) -> f64 {
        let busy = u32::try_from(threads)
            .unwrap_or(u32::MAX)
            .min(self.speed.cpus());
        self.spin_ns / self.speed.speed_at(busy.max(1)).max(0.01)
    }

    /// The new image's part of one iteration: `spin_ns` of this thread's
    /// CPU time spun (see [`KernelCost::spin_at`]) in [`SPIN_CHUNKS`]
    /// pieces, each followed by its chunk of the map phase's touches.
    ///
    /// CPU time, not wall-clock time: `exec_ns` is the real exec's CPU time,
    /// and a real exec's work takes longer on the wall clock whenever its
    /// CPU is taken away (preemption, interrupts, another process on a
    /// shared host), while a spin to a wall-clock deadline would not. On
    /// the 2-vCPU development host at load 4.7 the wall-clock spin ran
    /// `linux` 1.16x the real execl at one copy and 1.12x at two
    /// (docs/results/predict/README.md, "--cost kernel on this host").
    fn run_map(&self, spin_ns: f64) {
        let spin = spin_ns / SPIN_CHUNKS as f64;
        let mut chunks = self.touches.map_chunks(SPIN_CHUNKS);
        for _ in 0..SPIN_CHUNKS {
            let until = thread_cpu_ns() + spin;
            // The thread's CPU clock is a system call: read it every 64
            // pauses (a microsecond or two), well inside a chunk.
            while thread_cpu_ns() < until {
                for _ in 0..64 {
                    std::hint::spin_loop();
                }
            }
            if let Some(c) = chunks.next() {
                self.touch(c);
            }
        }
    }

    /// The old image's teardown and the next exec's start: the exec-start
    /// touches, the unmap's, `exit` (the model's exit unlinks), the
    /// release's. With [`KernelCost::run_map`] after the next exec, the
    /// cyclic order of the prediction's phases (start, unmap, release,
    /// map).
    fn run_exit(&self, exit: impl FnOnce()) {
        self.touch(&self.touches.start);
        self.touch(&self.touches.unmap);
        exit();
        self.touch(&self.touches.release);
    }

    /// One touch of each line: an atomic add on it.
    fn touch(&self, lines: &[u32]) {
        for &l in lines {
            // Relaxed: a stand-in for the kernel's reference counts; only
            // the line's movement matters.
            self.lines[l as usize].0.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Resolves `binary` once to check it before a sweep: a clear error for a missing,
/// non-ELF or truncated file or a missing library. Returns how it is linked.
pub fn check_binary(binary: &Path) -> Result<Linkage, String> {
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    files
        .program(binary)
        .map(|p| p.linkage())
        .map_err(|e| format!("cannot exec {}: {e}", binary.display()))
}

/// [`check_binary`], and refuses a program that maps no shared library: a static or
/// static-pie binary has no libc or ld.so mapping, so its execs never meet in a
/// file's reverse map and cannot show the contention the benchmark measures.
pub fn check_bench_binary(binary: &Path) -> Result<(), String> {
    match check_binary(binary)? {
        Linkage::Dynamic => Ok(()),
        other => Err(format!(
            "{} is a {} program: it maps no libc or ld.so, so its execs share no \
             file's reverse map and cannot show the contention `aspace bench` measures; \
             choose a dynamically linked binary (the default is /bin/true)",
            binary.display(),
            other.name()
        )),
    }
}

/// Runs one point; `tick` is called about every 100 ms with the fraction done.
pub fn run_point(p: &Point, tick: &dyn Fn(f64)) -> Result<Run, String> {
    // For the whole point: a design that adapts makes locks as it runs.
    let was = rmap::set_lock_impl(p.lock);
    let run = run_point_locked(p, tick);
    rmap::set_lock_impl(was);
    run
}

/// A point's file registry: its design, topology and call pattern; with
/// the kernel's cost, kernel-shaped splits (see the module docs), as
/// `aspace predict` records that cost (`RecordConfig::kernel_splits`).
fn registry(p: &Point) -> Arc<Files> {
    let files = Files::new(p.design, p.topology.clone(), p.pattern);
    files.set_kernel_split_holds(p.kernel.is_some());
    files
}

fn run_point_locked(p: &Point, tick: &dyn Fn(f64)) -> Result<Run, String> {
    let files = registry(p);
    let prog: Arc<Program> = files
        .program(&p.binary)
        .map_err(|e| format!("cannot exec {}: {e}", p.binary.display()))?;
    let residents: Vec<Mm> = (0..p.resident)
        .map(|_| {
            let m = Mm::new(files.clone());
            m.exec_program(&prog);
            m
        })
        .collect();
    let probe = Mm::new(files.clone());
    probe.exec_program(&prog);
    let faults = fault_plan(&probe);
    drop(probe);
    let libc = prog
        .files()
        .find(|f| f.path().file_name().is_some_and(|n| n == "libc.so.6"))
        .or_else(|| prog.files().last())
        .cloned()
        .ok_or("the binary maps no file")?;
    let resident_libc_vmas = libc.rmap().len();
    let libc_rmap_bytes = libc.rmap().memory_bytes();
    let libc_pages = libc.pages().max(1);

    let stop = AtomicBool::new(false);
    let before = files.lock_stats();
    let start = Instant::now();
    let (ops, calls, elapsed, latencies, seen) = std::thread::scope(|s| {
        let workers: Vec<_> = (0..p.threads)
            .map(|_| {
                let (files, prog, stop, faults) = (&files, &prog, &stop, &faults);
                let kernel = p.kernel.as_deref();
                let kernel = kernel.map(|k| (k, k.spin_at(p.threads)));
                let every = p.placement_every;
                s.spawn(move || worker(p.workload, files, prog, stop, faults, kernel, every))
            })
            .collect();
        let walker = (p.walk_rate > 0.0).then(|| {
            let (stop, libc) = (&stop, &libc);
            let period = Duration::from_secs_f64(1.0 / p.walk_rate);
            s.spawn(move || {
                let _site = set_call_site(CallSite::Walk);
                let mut latencies_ns: Vec<u64> = Vec::new();
                let mut unsupported = None;
                let mut next = Instant::now();
                let mut page = 0u64;
                // The first walk at once, the next ones paced: every sample
                // has at least one walk, however late this thread starts.
                let mut first = true;
                // Relaxed: a stop flag; no data is published through it.
                while first || !stop.load(Ordering::Relaxed) {
                    if std::mem::take(&mut first) {
                        next = Instant::now();
                    } else {
                        next += period;
                    }
                    if let Some(d) = next.checked_duration_since(Instant::now()) {
                        std::thread::sleep(d.min(Duration::from_millis(50)));
                        if Instant::now() < next {
                            continue;
                        }
                    }
                    page = (page + 7919) % libc_pages;
                    let iv = Interval::new(page, page).expect("one page");
                    let mut n = 0u64;
                    let t0 = Instant::now();
                    if let Err(e) = libc.rmap().try_walk(iv, &mut |_, _| n += 1) {
                        // A bound that keeps no reverse map cannot answer.
                        unsupported = Some(e.to_string());
                        break;
                    }
                    latencies_ns.push(t0.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64);
                    std::hint::black_box(n);
                }
                (latencies_ns, unsupported)
            })
        });
        while start.elapsed() < p.duration {
            tick(start.elapsed().as_secs_f64() / p.duration.as_secs_f64());
            std::thread::sleep(
                (p.duration - start.elapsed().min(p.duration)).min(Duration::from_millis(100)),
            );
        }
        // Relaxed: a stop flag; no data is published through it.
        stop.store(true, Ordering::Relaxed);
        let mut ops = 0u64;
        let mut calls = RmapCalls::default();
        let mut seen = Vec::with_capacity(workers.len());
        for w in workers {
            let (n, c, cpus) = w.join().expect("worker thread panicked");
            ops += n;
            calls.add(&c);
            seen.push(cpus);
        }
        let elapsed = start.elapsed();
        let latencies = walker.map(|w| w.join().expect("walk thread panicked"));
        (ops, calls, elapsed, latencies, seen)
    });
    tick(1.0);
    let after = files.lock_stats();
    drop(residents);
    let acquisitions = after.acquisitions.saturating_sub(before.acquisitions);
    let contended = after.contended.saturating_sub(before.contended);
    let secs = elapsed.as_secs_f64();
    let per = |x: u64| if ops > 0 { x as f64 / ops as f64 } else { 0.0 };
    let walk = latencies.map(|(mut l, unsupported)| {
        l.sort_unstable();
        let pct = |q: f64| {
            if l.is_empty() {
                0
            } else {
                l[((l.len() - 1) as f64 * q).round() as usize]
            }
        };
        WalkCost {
            requested_per_sec: p.walk_rate,
            achieved_per_sec: l.len() as f64 / secs,
            walks: l.len() as u64,
            p50_ns: pct(0.5),
            p99_ns: pct(0.99),
            unsupported,
        }
    });
    let sites: Vec<SiteCost> = CallSite::ALL
        .iter()
        .map(|&site| {
            let (a, b) = (before.site(site), after.site(site));
            let holds = b.holds.saturating_sub(a.holds);
            let contended = b.contended.saturating_sub(a.contended);
            let hold_ns = b.hold_ns.saturating_sub(a.hold_ns);
            SiteCost {
                site: site.name().to_owned(),
                holds_per_op: per(holds),
                contended_pct: if holds > 0 {
                    100.0 * contended as f64 / holds as f64
                } else {
                    0.0
                },
                mean_hold_ns: if holds > 0 {
                    hold_ns as f64 / holds as f64
                } else {
                    0.0
                },
                hold_ns_per_op: per(hold_ns),
            }
        })
        .collect();
    let walk_holds = after
        .site(CallSite::Walk)
        .holds
        .saturating_sub(before.site(CallSite::Walk).holds);
    Ok(Run {
        workload: p.workload.name().into(),
        design: p.design.name().into(),
        threads: p.threads,
        repeat: p.repeat,
        oversubscribed: p.oversubscribed,
        ops_per_sec: ops as f64 / secs,
        contended_pct: if acquisitions > 0 {
            100.0 * contended as f64 / acquisitions as f64
        } else {
            0.0
        },
        acquisitions,
        contended,
        ops,
        seconds: secs,
        ratio_to_linux: None,
        call_pattern: p.pattern.name().into(),
        call_pattern_detail: p.pattern.describe().into(),
        calls_per_op: CallsPerOp {
            insert: per(calls.insert),
            insert_batch: per(calls.insert_batch),
            insert_after: per(calls.insert_after),
            insert_after_batch: per(calls.insert_after_batch),
            remove: per(calls.remove),
            remove_batch: per(calls.remove_batch),
            lock_holds: per(calls.lock_holds()),
            vmas_linked: per(calls.linked),
            vmas_unlinked: per(calls.unlinked),
        },
        lock_holds_per_op: per(acquisitions.saturating_sub(walk_holds)),
        sites,
        resident: p.resident,
        resident_libc_vmas,
        walks_per_sec: walk.as_ref().map_or(0.0, |w| w.achieved_per_sec),
        walk,
        topology: p.topology_name.clone(),
        libc_rmap_bytes,
        bound: p.design.is_bound(),
        placement: placement_of(p.design, &p.topology, p.placement_every, &seen),
    })
}

fn worker(
    workload: Workload,
    files: &Arc<Files>,
    prog: &Arc<Program>,
    stop: &AtomicBool,
    faults: &[(u64, Access)],
    kernel: Option<(&KernelCost, f64)>,
    every: u64,
) -> (u64, RmapCalls, CpusSeen) {
    let mut ops = 0u64;
    let mut calls = RmapCalls::default();
    let mut seen = CpusSeen::default();
    // Between iterations, outside every lock hold: the first iteration's
    // CPU, then every `every`-th.
    let mut sample = |ops: u64| {
        if every > 0 && (ops - 1) % every == 0 {
            seen.note(Topology::Os.current_cpu());
        }
    };
    let fault_all = |mm: &Mm| {
        for &(addr, access) in faults {
            // The layout is deterministic, so these always hit; a miss would be a
            // model bug, counted by nothing but visible in the tests.
            let _ = std::hint::black_box(mm.page_fault(addr, access));
        }
    };
    match workload {
        Workload::Execl => {
            let mm = Mm::new(files.clone());
            // At least one operation, however late the thread starts: a
            // sample never reads 0 ops/s on a loaded machine.
            loop {
                mm.exec_program(prog);
                fault_all(&mm);
                match kernel {
                    Some((k, spin_ns)) => {
                        k.run_map(spin_ns);
                        k.run_exit(|| mm.exit());
                    }
                    None => mm.exit(),
                }
                ops += 1;
                sample(ops);
                // Relaxed: a stop flag; no data is published through it.
                if stop.load(Ordering::Relaxed) {
                    break;
                }
            }
            calls.add(&mm.calls());
        }
        Workload::Shell => {
            let parent = Mm::new(files.clone());
            parent.exec_program(prog);
            // At least one operation, as for execl.
            loop {
                let child = parent.fork();
                child.exec_program(prog);
                fault_all(&child);
                match kernel {
                    Some((k, spin_ns)) => {
                        k.run_map(spin_ns);
                        k.run_exit(|| child.exit());
                    }
                    None => child.exit(),
                }
                calls.add(&child.calls());
                ops += 1;
                sample(ops);
                // Relaxed: a stop flag; no data is published through it.
                if stop.load(Ordering::Relaxed) {
                    break;
                }
            }
            // The parent's own exec and exit run inside the measured interval and
            // the maps count them, so mm's counts include them too.
            parent.exit();
            calls.add(&parent.calls());
        }
    }
    (ops, calls, seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(speed_by_cpus: Vec<predict::SpeedPoint>) -> KernelCost {
        let mut speed = predict::Machine::by_name("device-16").expect("built in");
        speed.speed_by_cpus = speed_by_cpus;
        KernelCost {
            exec_ns: 400_000.0,
            model_ns: 20_000.0,
            spin_ns: 380_000.0,
            speed,
            source: String::new(),
            lines: Vec::new(),
            touches: crate::predict::kernel::PhaseLines::default(),
        }
    }

    /// A point of this host running /bin/true with `kernel`.
    fn true_point(kernel: Option<Arc<KernelCost>>) -> Point {
        Point {
            workload: Workload::Execl,
            design: Design::Linux,
            pattern: CallPattern::PerVma,
            threads: 1,
            repeat: 0,
            oversubscribed: false,
            duration: Duration::from_millis(120),
            resident: 0,
            walk_rate: 0.0,
            topology: Topology::Os,
            topology_name: "os".into(),
            binary: "/bin/true".into(),
            kernel,
            lock: rmap::LockImpl::Rwsem,
            placement_every: 1,
        }
    }

    /// `--cost kernel` splits as the kernel does, as the prediction records
    /// that cost; the model's cost keeps the lab's own calls. Mutant run:
    /// the switch left off (s40).
    #[test]
    fn the_kernel_cost_bench_splits_as_the_kernel_does() {
        let kernel = Arc::new(cost(Vec::new()));
        assert!(registry(&true_point(Some(kernel))).kernel_split_holds());
        assert!(!registry(&true_point(None)).kernel_split_holds());
    }

    /// The bench touches the exec's other shared lines where the prediction
    /// places them: one iteration (`run_map` after the exec, then
    /// `run_exit` around the model's exit) touches each line as often as
    /// a predicted slot's iteration does, and, as in the prediction, the
    /// start and unmap touches come before the exit's unlinks and the
    /// release touches after them. Mutants run: the release touched before
    /// the exit; the start phase left out; the map phase's chunks cut at 7
    /// (a touch lost) (s40).
    #[test]
    fn the_bench_touches_the_lines_the_prediction_places_at_the_same_places() {
        let mut share = crate::predict::kernel::tests::share();
        // Enough map-phase touches for all 8 chunks.
        share.files[1].pages = 200;
        let touches = crate::predict::kernel::PhaseLines::of(&share);
        assert_eq!(touches.map_chunks(SPIN_CHUNKS).count(), SPIN_CHUNKS);
        let mut k = cost(Vec::new());
        k.lines = (0..touches.lines).map(|_| PaddedLine::default()).collect();
        k.touches = touches;
        let counts = |k: &KernelCost| -> Vec<u64> {
            k.lines
                .iter()
                .map(|l| l.0.load(Ordering::Relaxed))
                .collect()
        };
        k.run_map(0.0);
        let after_map = counts(&k);
        let mut at_exit = Vec::new();
        k.run_exit(|| at_exit = counts(&k));
        let after = counts(&k);
        // The prediction: a recorded iteration (exit unlink, work, link,
        // work) with the same share added; its lines after the profile's own.
        let p = crate::predict::kernel::tests::profile_with_teardown(1);
        let base = p.lines.len();
        let out = crate::predict::kernel::add_exec_share(&p, &share, false);
        let steps = &out.slots[0].steps;
        let exit_at = steps
            .iter()
            .position(
                |s| matches!(s, predict::Step::Hold(h) if h.site == predict::Site::ExitUnlink),
            )
            .unwrap();
        let n = after.len();
        let mut before_exit = vec![0u64; n];
        let mut after_exit = vec![0u64; n];
        for (i, s) in steps.iter().enumerate() {
            if let predict::Step::Touch(t) = s {
                // Locked updates and plain stores alike: the bench writes both.
                for &l in t.written.iter().chain(&t.stored) {
                    let c = if i < exit_at {
                        &mut before_exit
                    } else {
                        &mut after_exit
                    };
                    c[l as usize - base] += 1;
                }
            }
        }
        assert_eq!(out.lines.len(), base + n, "the same lines");
        // Cyclic order start, unmap, [exit], release, map: before the exit
        // the prediction has start and unmap, the bench has them after map.
        let bench_before: Vec<u64> = at_exit.iter().zip(&after_map).map(|(e, m)| e - m).collect();
        let bench_after: Vec<u64> = after
            .iter()
            .zip(&at_exit)
            .zip(&after_map)
            .map(|((a, e), m)| a - e + m)
            .collect();
        assert_eq!(bench_before, before_exit);
        assert_eq!(bench_after, after_exit);
        assert!(bench_before.iter().sum::<u64>() > 0 && bench_after.iter().sum::<u64>() > 0);
    }

    /// `bench --lock`: a point's maps take its lock for the whole run (seen
    /// from the progress callback, which runs inside it), and the setting
    /// before it is restored after.
    #[test]
    fn a_point_runs_under_its_lock_and_restores_the_previous_one() {
        if crate::predict::recorder::check(std::path::Path::new("/bin/true")).is_err() {
            eprintln!("skipped: the model cannot exec /bin/true here");
            return;
        }
        let before = rmap::lock_impl();
        let other = match before {
            rmap::LockImpl::Rwsem => rmap::LockImpl::ParkingLot,
            rmap::LockImpl::ParkingLot => rmap::LockImpl::Rwsem,
        };
        let p = Point {
            lock: other,
            ..true_point(None)
        };
        let seen = std::sync::Mutex::new(Vec::new());
        let run = run_point(&p, &|_| seen.lock().unwrap().push(rmap::lock_impl()))
            .expect("the point runs");
        assert!(run.ops > 0);
        // Sampled at every iteration (placement_every 1): one thread, as
        // many samples as iterations, on CPUs this machine has.
        let pl = run.placement.as_ref().expect("a placement");
        assert_eq!(pl.threads.len(), 1);
        assert_eq!(pl.threads[0].samples, run.ops);
        assert!(pl.threads[0].cpus.contains(&pl.threads[0].cpu));
        assert_eq!(pl.cpus, pl.threads[0].cpus);
        assert_eq!(pl.shards, None, "linux has one lock");
        assert!(pl.cpus.iter().all(|&c| c < Topology::Os.cpus()));
        let seen = seen.into_inner().unwrap();
        assert!(!seen.is_empty(), "the callback ran");
        assert!(
            seen.iter().all(|&l| l == other),
            "{seen:?}, wanted {other:?}"
        );
        assert_eq!(rmap::lock_impl(), before, "restored");
    }

    /// The placement summary: main CPU the most seen, shards by the
    /// design's own rule, none on an emulated topology or with sampling
    /// off.
    #[test]
    fn placements_count_the_designs_shards() {
        let seen = |cpus: &[u32]| {
            let mut s = CpusSeen::default();
            for &c in cpus {
                s.note(c);
            }
            s
        };
        let threads = [seen(&[1, 9, 9]), seen(&[2, 2, 3]), seen(&[4])];
        let os = Topology::Os;
        let p = placement_of(Design::Sharded, &os, 16, &threads).unwrap();
        assert_eq!(
            p.threads.iter().map(|t| t.cpu).collect::<Vec<_>>(),
            vec![9, 2, 4]
        );
        assert_eq!(p.cpus, vec![1, 2, 3, 4, 9]);
        assert_eq!(p.threads[0].samples, 3);
        if os.cpus() >= 10 {
            assert_eq!(p.shards, Some(2), "CPU 9 is in the second group of 8");
        } else {
            assert_eq!(p.shards, Some(1), "one group of 8 covers this host");
        }
        assert_eq!(p.shards, p.shards_seen);
        assert_eq!(
            placement_of(Design::Linux, &os, 16, &threads)
                .unwrap()
                .shards,
            None
        );
        let emulated: Topology = "2x8".parse().unwrap();
        assert_eq!(
            placement_of(Design::Sharded, &emulated, 16, &threads)
                .unwrap()
                .shards,
            None
        );
        assert!(placement_of(Design::Sharded, &os, 0, &threads).is_none());
        assert!(placement_of(Design::Sharded, &os, 16, &[CpusSeen::default()]).is_none());
    }

    #[test]
    fn kernel_spin_stretches_with_the_calibrated_speed() {
        let point = |cpus, speed| predict::SpeedPoint { cpus, speed };
        let k = cost(vec![point(2, 0.5), point(16, 0.8)]);
        assert_eq!(k.spin_at(1), 380_000.0, "one CPU busy runs at full speed");
        assert_eq!(k.spin_at(2), 760_000.0, "half speed: twice the spin");
        assert!((k.spin_at(16) - 475_000.0).abs() < 1e-6);
        assert_eq!(k.spin_at(64), k.spin_at(16), "more threads than CPUs");
        assert_eq!(k.spin_at(0), k.spin_at(1));
        let flat = cost(Vec::new());
        assert_eq!(flat.spin_at(16), 380_000.0, "no speed measured: no stretch");
    }
}
