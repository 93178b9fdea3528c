//! `aspace`: the lab. `aspace bench` reproduces UnixBench execl / shell-scripts
//! address-space churn on the model and compares reverse-map designs; `aspace report`
//! re-renders a saved run; `aspace soak` is a long randomized run that checks the
//! model's invariants and tracks resident memory.

mod calibrate;
mod html;
mod input;
mod machine;
mod model_exec;
mod plot;
mod predict;
mod predicted;
mod replay;
mod report;
mod results;
mod soak;
mod spread;
mod survey;
mod usl;
mod workload;

/// The lab measures the reverse map inside a model that allocates on every
/// exec (VMAs, tree nodes, values). With glibc's malloc, frees of memory
/// another thread allocated (epoch-deferred frees, dropped VMAs) serialise
/// on arena locks and took ~40% of the cycles at 2 threads, hiding the
/// designs' differences; mimalloc's per-thread free lists do not. The
/// library crates keep the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use mm::CallPattern;
use results::{Config, Results};
use rmap::{Design, Topology};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use workload::{Point, Workload};

/// Address-space metadata lab: exec/fork/exit churn against reverse-map designs.
#[derive(Parser, Debug)]
#[command(name = "aspace", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run UnixBench-like exec churn on the address-space model, every design at every
    /// thread count, and write a table, JSON, SVG plots and an HTML report.
    #[command(allow_negative_numbers = true)]
    Bench(BenchArgs),
    /// Re-render the table, plots and HTML report from a saved JSON file.
    #[command(allow_negative_numbers = true)]
    Report {
        /// The JSON written by `aspace bench --json` (at most 64 MiB).
        file: PathBuf,
        /// Directory for report.html and the SVGs (default: next to the JSON).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Many threads do random mmap/munmap/mprotect/brk/fork/exec/exit and rmap walks
    /// on every design, checking invariants at intervals; prints operations done,
    /// violations (the exit status is 1 if any), peak RSS and the RSS curve.
    #[command(allow_negative_numbers = true)]
    Soak(SoakArgs),
    /// Measure this host (real exec cost, line transfer, atomics, wake-up) and write
    /// a machine description for `aspace predict`.
    #[command(allow_negative_numbers = true)]
    Calibrate(calibrate::CalibrateArgs),
    /// PREDICT every design's execs/s at many CPUs on a described machine, by
    /// simulating profiles recorded from the real code; --validate compares with
    /// every published figure.
    #[command(allow_negative_numbers = true)]
    Predict(predict::PredictArgs),
    /// Replay a recorded run (`strace -f -y -e trace=memory,process -o FILE`) through
    /// the model with each design; report placement, lock holds and the final layout.
    #[command(allow_negative_numbers = true)]
    Replay(ReplayArgs),
    /// Survey this machine in one command, within a time budget: the real kernel's
    /// execl at 1..N copies (dynamic and static), the bench at 1..N threads, calibrate,
    /// predict, maple's criterion groups; one folder, one summary table.
    #[command(allow_negative_numbers = true)]
    Survey(survey::SurveyArgs),
}

#[derive(clap::Args, Debug)]
struct ReplayArgs {
    /// The strace output (a regular file of at most 256 MiB).
    file: PathBuf,
    /// Comma-separated designs (default: all).
    #[arg(long)]
    designs: Option<String>,
    /// `/proc/PID/maps` taken at exit (a file of at most 16 MiB, or a directory
    /// holding PID.maps).
    #[arg(long)]
    maps: Option<PathBuf>,
    /// Write the report as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// How mm calls the reverse maps: per-vma, batched, or both (as `aspace bench`).
    #[arg(long, value_enum, default_value_t = PatternArg::Both)]
    call_pattern: PatternArg,
    /// Placement policy: `thp` (the kernel's, with 2 MiB alignment) or `top-down`.
    #[arg(long, default_value = "thp")]
    placement: String,
    /// Replay the trace this many times per design (for a speed figure), 1 to 1000.
    #[arg(long, default_value_t = 1, value_parser = count_in::<u32>(1, 1000))]
    repeat: u32,
}

#[derive(clap::Args, Debug)]
struct SoakArgs {
    /// How long to run: seconds, or with a unit ("500ms", "30s").
    #[arg(long, default_value = "30")]
    duration: String,
    /// Worker threads in all, spread over the designs, 1 to 4096 (default: 2 per
    /// design).
    #[arg(long, value_parser = count_in::<usize>(1, 4096))]
    threads: Option<usize>,
    /// Comma-separated designs (default: all).
    #[arg(long)]
    designs: Option<String>,
    /// Base seed of the workers' random streams.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The binary exec loads; "none" to soak without exec.
    #[arg(long, default_value = "/bin/true")]
    binary: String,
    /// Also write the whole report (with the RSS curve) as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Also write the RSS curve here, one `seconds<TAB>KiB` line per sample.
    #[arg(long)]
    curve: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
struct BenchArgs {
    /// execl = exec -> faults -> exit; shell = fork -> exec -> exit. Repeatable.
    #[arg(long, value_enum, default_values_t = [Workload::Execl])]
    workload: Vec<Workload>,
    /// Comma-separated designs (default: all, with the ablation aspace_central and
    /// the bound exclude): linux_shared_line, linux, numa_split, numa_locks, sharded,
    /// aspace, aspace_central, exclude.
    #[arg(long)]
    designs: Option<String>,
    /// Do not time lock holds (per-call-site hold times read as 0). Timing reads the
    /// clock twice per lock hold, in every design alike.
    #[arg(long)]
    no_hold_timing: bool,
    /// Each worker asks which CPU it runs on (sched_getcpu, between iterations,
    /// outside every lock hold) at its first iteration and every this many after;
    /// results.json records the CPUs per thread and sample (`placement`). 0: off.
    #[arg(long, default_value_t = workload::PLACEMENT_EVERY, value_parser = count_in::<u64>(0, 1_000_000))]
    placement_every: u64,
    /// How mm calls the reverse maps: per-vma (Linux 6.12: one call per VMA on link
    /// and fork, unlink batched per run of one file's VMAs), batched (one call per file
    /// and call site per operation), or both. Lock holds are counted by the maps.
    #[arg(long, value_enum, default_value_t = PatternArg::Both)]
    call_pattern: PatternArg,
    /// Comma-separated thread counts, e.g. "1,2,4" (default: 1 to 2 x nproc).
    #[arg(long)]
    threads: Option<String>,
    /// Measured time per sample: seconds, or with a unit ("250ms", "2s"). A default
    /// run (every design, both call patterns, 1 to 2 x nproc threads, 6 repeats: 384
    /// samples on 2 cores) measures for 96 s plus about 50 ms of setup CPU per sample,
    /// about 2 minutes on idle cores; other load stretches the setup.
    #[arg(long, default_value = "250ms")]
    duration: String,
    /// Samples per point, one per round: each round runs every workload, thread
    /// count, design and call pattern once, so a point's samples span the whole run
    /// and drift hits all designs alike. Every figure is the median and min-max of
    /// its samples; two runs' ranges would miss each other with chance 2/C(2N,N) if
    /// only sampling noise told them apart (10% at 3, 0.2% at 6), and a difference
    /// inside the ranges is a tie.
    #[arg(long, default_value_t = 6, value_parser = count_in::<usize>(1, 100))]
    repeat: usize,
    /// Resident processes mapping the binary, libc and ld.so, 0 to 100000 (default:
    /// enough for 6000 VMAs in libc's reverse map).
    #[arg(long, value_parser = count_in::<usize>(0, 100_000))]
    resident: Option<usize>,
    /// Reclaim-style rmap walks of libc per second, 0 (none) to 1000000; the report
    /// gives the rate achieved and the walks' p50/p99 latency.
    #[arg(long, default_value_t = 0.0, value_parser = rate_in(0.0, 1e6))]
    walk_rate: f64,
    /// Emulated topology NODESxCPUS (e.g. 12x32); default: the OS's.
    #[arg(long)]
    topology: Option<String>,
    /// Write every figure to this JSON file (default: OUT/results.json).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Directory for results.json, report.html and the SVG plots.
    #[arg(long, default_value = "aspace-results")]
    out: PathBuf,
    /// The binary each worker execs (a dynamically linked ELF file).
    #[arg(long, default_value = "/bin/true")]
    binary: PathBuf,
    /// Do not put the predicted curve for this host beside the measured one (the
    /// prediction records each design's profile first: a few seconds per design).
    #[arg(long)]
    no_predict: bool,
    /// The host description for the predicted curve (`aspace calibrate --out`, at
    /// most 1 MiB), read before the run; default: this host's CPU count with the
    /// built-in 16-core machine's latencies. With `--cost kernel`, its `exec_ns`
    /// is the real exec's cost.
    #[arg(long)]
    predict_host: Option<PathBuf>,
    /// model: each iteration costs what the model's exec costs; kernel: each
    /// iteration also spins for the rest of a real exec of the binary (its
    /// calibrated CPU time), touches the exec's other shared lines (pages,
    /// dentries, inodes, allocator, credential and memory-cgroup lines) at
    /// the 4 places of an exec where Linux touches them, as `aspace predict`
    /// places them, and splits a file VMA as the kernel does (the cut VMA
    /// removed and reinserted), so every design is measured under the
    /// kernel's conditions.
    #[arg(long, value_enum, default_value_t = CostArg::Model)]
    cost: CostArg,
    /// The designs' locks: rwsem (waits as Linux's rw_semaphore does: writers
    /// spin in an MCS queue while the lock is held, then sleep) or
    /// parking-lot (parking_lot's RwLock: a few spins, then park). Default:
    /// rwsem with --cost kernel, parking-lot with --cost model.
    #[arg(long, value_enum)]
    lock: Option<LockArg>,
    /// With --cost kernel: the real exec's CPU time of the binary on this
    /// machine, ns (e.g. one copy of the real execl loop); default: the
    /// --predict-host calibration's exec_ns, else measured at start.
    #[arg(long, value_parser = rate_in(1.0, 1e9))]
    exec_ns: Option<f64>,
}

/// `--lock`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum LockArg {
    /// Waits as Linux's rw_semaphore does.
    Rwsem,
    /// parking_lot's RwLock.
    ParkingLot,
}

/// The designs' locks for `bench`: `--lock` where given, else the
/// kernel's rwsem-like lock with `--cost kernel` and parking_lot's with
/// `--cost model`.
fn lock_for(lock: Option<LockArg>, cost: CostArg) -> rmap::LockImpl {
    match (lock, cost) {
        (Some(LockArg::Rwsem), _) | (None, CostArg::Kernel) => rmap::LockImpl::Rwsem,
        (Some(LockArg::ParkingLot), _) | (None, CostArg::Model) => rmap::LockImpl::ParkingLot,
    }
}

/// `--cost`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum CostArg {
    /// The model's own exec cost.
    Model,
    /// A real exec's cost and shared lines around the model's exec.
    Kernel,
}

/// `--call-pattern`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PatternArg {
    /// One reverse-map call per VMA on link and fork (Linux 6.12).
    PerVma,
    /// One reverse-map call per file and call site per operation.
    Batched,
    /// Both, side by side.
    Both,
}

impl PatternArg {
    fn patterns(self) -> Vec<CallPattern> {
        match self {
            PatternArg::PerVma => vec![CallPattern::PerVma],
            PatternArg::Batched => vec![CallPattern::Batched],
            PatternArg::Both => CallPattern::ALL.to_vec(),
        }
    }
}

/// A clap value parser for a whole number from `lo` to `hi`: "-1" or "x" gets
/// the range in its message, not "invalid digit".
fn count_in<T>(
    lo: u64,
    hi: u64,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<u64>,
{
    move |s: &str| {
        let bad = || format!("`{s}` is not a whole number from {lo} to {hi}");
        let v: i128 = s.trim().parse().map_err(|_| bad())?;
        if v < i128::from(lo) || v > i128::from(hi) {
            return Err(bad());
        }
        T::try_from(v as u64).map_err(|_| bad())
    }
}

/// A clap value parser for a number from `lo` to `hi` (no NaN, no infinity).
fn rate_in(
    lo: f64,
    hi: f64,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let v: f64 = s
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not a number from {lo} to {hi}"))?;
        if !(v.is_finite() && v >= lo && v <= hi) {
            return Err(format!("`{s}` is not a number from {lo} to {hi}"));
        }
        Ok(v)
    }
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, scale) = if let Some(v) = s.strip_suffix("ms") {
        (v, 1e-3)
    } else if let Some(v) = s.strip_suffix('s') {
        (v, 1.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("--duration: `{s}` is not a time (try 2, 2s or 500ms)"))?;
    let secs = v * scale;
    if !(secs.is_finite() && secs > 0.0 && secs <= 3600.0) {
        return Err(format!(
            "--duration: `{s}` is out of range: give more than 0 s and at most 1 hour (3600 s)"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn parse_threads(s: &str) -> Result<Vec<usize>, String> {
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let n: usize = part
            .parse()
            .map_err(|_| format!("--threads: `{part}` is not a thread count (e.g. 1,2,4)"))?;
        if n == 0 || n > 4096 {
            return Err(format!("--threads: {n} is out of range 1..=4096"));
        }
        if !v.contains(&n) {
            v.push(n);
        }
    }
    if v.is_empty() {
        return Err("--threads: give at least one thread count, e.g. 1,2,4".into());
    }
    Ok(v)
}

fn default_threads(nproc: usize) -> Vec<usize> {
    let max = 2 * nproc;
    if max <= 8 {
        return (1..=max).collect();
    }
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |n| Some(n * 2))
        .take_while(|&n| n <= max)
        .collect();
    v.extend([nproc, max]);
    v.sort_unstable();
    v.dedup();
    v
}

fn parse_designs(s: &str) -> Result<Vec<Design>, String> {
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let d: Design = part.parse().map_err(|e| format!("--designs: {e}"))?;
        if !v.contains(&d) {
            v.push(d);
        }
    }
    if v.is_empty() {
        return Err("--designs: give at least one design".into());
    }
    Ok(v)
}

fn write_outputs(r: &Results, out: &Path, json: Option<&Path>) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    if let Some(json) = json {
        let text = serde_json::to_string_pretty(r).map_err(|e| e.to_string())?;
        std::fs::write(json, text + "\n")
            .map_err(|e| format!("cannot write {}: {e}", json.display()))?;
    }
    let mut workloads: Vec<&str> = r.runs.iter().map(|x| x.workload.as_str()).collect();
    workloads.dedup();
    for w in workloads {
        for (proj, suffix) in [(false, ""), (true, "-projection")] {
            if proj && !r.fits.iter().any(|f| f.workload == w && f.usl.is_some()) {
                continue;
            }
            let p = out.join(format!("{w}{suffix}.svg"));
            let svg = if proj {
                plot::projection(r, w)
            } else {
                plot::bench(r, w, r.predicted.as_ref())
            };
            std::fs::write(&p, svg).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
        }
    }
    let p = out.join("report.html");
    std::fs::write(&p, report::html(r)).map_err(|e| format!("cannot write {}: {e}", p.display()))
}

/// Checks before a run that `out` can hold files and that `json` can be written, so
/// that a bad path fails at once rather than after the run. Leaves `out` created and
/// `json` untouched (or absent, if it was).
fn check_outputs(out: &Path, json: &Path) -> Result<(), String> {
    input::check_output_dir(out, "--out")?;
    // A file inside `--out` (the default) gets its directory with it.
    input::check_output_file(json, "--json", json.starts_with(out))
}

/// Reads and checks a machine or host description (`what` names the option),
/// refusing at once what is not a regular file of at most 1 MiB.
fn machine_file(path: &Path, what: &str) -> Result<::predict::Machine, String> {
    let text = input::read_text(path, what, input::MACHINE_CAP)?;
    ::predict::Machine::from_json(&text).map_err(|e| format!("{what}: {}: {e}", path.display()))
}

/// The samples of a bench in the order they run: for each repeat, for each workload,
/// for each thread count, every (design, pattern). Drift over the run therefore hits
/// every design alike.
fn schedule(
    repeat: usize,
    workloads: &[Workload],
    threads: &[usize],
    pairs: &[(Design, CallPattern)],
) -> Vec<(usize, Workload, usize, Design, CallPattern)> {
    let mut v = Vec::new();
    for r in 0..repeat {
        for &w in workloads {
            for &t in threads {
                for &(d, p) in pairs {
                    v.push((r, w, t, d, p));
                }
            }
        }
    }
    v
}

fn bench(a: BenchArgs) -> Result<(), String> {
    let duration = parse_duration(&a.duration)?;
    let nproc = machine::nproc();
    let threads = match &a.threads {
        Some(s) => parse_threads(s)?,
        None => default_threads(nproc),
    };
    let designs = match &a.designs {
        Some(s) => parse_designs(s)?,
        None => Design::EVERY.to_vec(),
    };
    let (topology, topology_name) = match &a.topology {
        Some(s) => (
            Topology::parse(s).map_err(|e| format!("--topology: {e}"))?,
            s.clone(),
        ),
        None => (Topology::detect(), "os".to_owned()),
    };
    // Five libc VMAs per process: r--, r-x, r--, RELRO r--, rw-.
    let resident = a.resident.unwrap_or(6000 / 5);
    let json = a.json.clone().unwrap_or_else(|| a.out.join("results.json"));
    check_outputs(&a.out, &json)?;
    if let (Some(p), false) = (&a.predict_host, a.no_predict) {
        machine_file(p, "--predict-host")?;
    }
    workload::check_bench_binary(&a.binary)?;
    let kernel = match a.cost {
        CostArg::Model => None,
        CostArg::Kernel => {
            let cal = match &a.predict_host {
                Some(p) => Some(machine_file(p, "--predict-host")?),
                None => None,
            };
            eprintln!(
                "aspace bench --cost kernel: measuring the real exec's cost and shared lines ..."
            );
            let k = workload::KernelCost::measure(&a.binary, cal.as_ref(), a.exec_ns)?;
            eprintln!("aspace bench --cost kernel: {}", k.source);
            Some(std::sync::Arc::new(k))
        }
    };
    let lock = lock_for(a.lock, a.cost);
    let mut workloads = a.workload.clone();
    workloads.dedup();
    let patterns = a.call_pattern.patterns();
    let mut pairs = Vec::new();
    for &pattern in &patterns {
        for &d in &designs {
            pairs.push((d, pattern));
        }
    }
    let points: Vec<Point> = schedule(a.repeat, &workloads, &threads, &pairs)
        .into_iter()
        .map(|(repeat, w, t, d, pattern)| Point {
            workload: w,
            design: d,
            pattern,
            threads: t,
            repeat,
            oversubscribed: t > nproc,
            duration,
            resident,
            walk_rate: a.walk_rate,
            topology: topology.clone(),
            topology_name: topology_name.clone(),
            binary: a.binary.clone(),
            kernel: kernel.clone(),
            lock,
            placement_every: a.placement_every,
        })
        .collect();
    let total = points.len() as f64 * duration.as_secs_f64();
    let what: Vec<&str> = workloads
        .iter()
        .map(|w| match w {
            Workload::Execl => "execl: each worker thread execs the binary, faults, exits (no fork)",
            Workload::Shell => "shell: each worker thread forks a parent, execs the binary in the child, faults, exits the child",
        })
        .collect();
    eprintln!(
        "aspace bench: {} samples = {} workload(s) x {} design(s) x {} call pattern(s) x threads {:?} x {} repeat(s),
         {:.2} s each (plus setup), about {:.0} s of measurement; repeats are interleaved across designs.
         {}
         Binary {}; {} resident processes keep libc's reverse map at ~{} VMAs, as on a busy machine.
         Higher ops/s is better; \"x linux\" compares with the linux design (one interval tree under one
         rwsem) under the same call pattern, thread count and repeat. Thread counts above {} (this machine's
         cores) are marked oversubscribed. Lock hold times per call site are {}.",
        points.len(),
        workloads.len(),
        designs.len(),
        patterns.len(),
        threads,
        a.repeat,
        duration.as_secs_f64(),
        total,
        what.join("\n"),
        a.binary.display(),
        resident,
        resident * 5,
        nproc,
        if a.no_hold_timing {
            "not measured (--no-hold-timing)"
        } else {
            "measured (two clock reads per hold, every design alike; --no-hold-timing turns it off)"
        },
    );
    rmap::stats::set_hold_timing(!a.no_hold_timing);
    let bar = ProgressBar::new((total * 10.0).ceil() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} ds  eta {eta}  {msg}")
            .map_err(|e| e.to_string())?,
    );
    let mut runs = Vec::new();
    for (i, p) in points.iter().enumerate() {
        bar.set_message(format!(
            "{} {} {} x{} #{}",
            p.workload.name(),
            p.design.name(),
            p.pattern.name(),
            p.threads,
            p.repeat + 1
        ));
        let base = i as f64 * duration.as_secs_f64() * 10.0;
        let d10 = duration.as_secs_f64() * 10.0;
        let run = workload::run_point(p, &|f| bar.set_position((base + f * d10) as u64))?;
        runs.push(run);
    }
    bar.finish_and_clear();
    let mut r = Results {
        machine: machine::describe(),
        config: Config {
            binary: a.binary.display().to_string(),
            duration_s: duration.as_secs_f64(),
            resident,
            walk_rate: a.walk_rate,
            topology: topology_name,
            threads,
            repeat: a.repeat,
            hold_timing: !a.no_hold_timing,
            call_patterns: patterns.iter().map(|p| p.name().to_owned()).collect(),
            designs: designs.iter().map(|d| d.name().to_owned()).collect(),
            workloads: workloads.iter().map(|w| w.name().to_owned()).collect(),
            cost: match &kernel {
                None => "model".into(),
                Some(k) => format!("kernel: {}", k.source),
            },
            lock: lock.name().into(),
        },
        runs,
        summary: Vec::new(),
        fits: Vec::new(),
        predicted: None,
    };
    r.analyse();
    if !a.no_predict {
        r.predicted = bench_prediction(&a, &designs, &patterns, &workloads, resident);
    }
    print!("{}", report::text(&r));
    write_outputs(&r, &a.out, Some(&json))?;
    println!(
        "\nWrote {} (every sample and summary), {}/report.html and the SVG plots in {}.\n\
         Re-render later with: {} report {}",
        json.display(),
        a.out.display(),
        a.out.display(),
        invocation(),
        json.display()
    );
    Ok(())
}

/// How to run this binary again, for the hints it prints: `aspace` when it
/// was installed (on the PATH), the `cargo run` line when it runs from a
/// cargo target directory, else its own path.
fn invocation() -> String {
    let Ok(exe) = std::env::current_exe() else {
        return "aspace".into();
    };
    let in_target = exe
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|d| d == "release" || d == "debug")
        && exe
            .ancestors()
            .nth(2)
            .and_then(Path::file_name)
            .is_some_and(|t| t == "target");
    let on_path = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("aspace") == exe));
    if on_path {
        "aspace".into()
    } else if in_target {
        let profile = if cfg!(debug_assertions) {
            ""
        } else {
            " --release"
        };
        format!("cargo run{profile} -p aspace-lab --")
    } else {
        exe.display().to_string()
    }
}

/// The predicted curve for this host (`aspace bench` without `--no-predict`). A
/// prediction that cannot be made is reported and left out: the measurement stands.
fn bench_prediction(
    a: &BenchArgs,
    designs: &[Design],
    patterns: &[CallPattern],
    workloads: &[Workload],
    resident: usize,
) -> Option<predicted::HostPrediction> {
    eprintln!("aspace bench: predicting this host's curves (PREDICTION; --no-predict skips it)");
    let plan = predict::host::BenchPlan {
        host_file: a.predict_host.as_deref(),
        binary: &a.binary,
        resident,
        workloads: workloads.iter().map(|w| w.name().to_owned()).collect(),
        designs: designs.to_vec(),
        patterns: patterns.to_vec(),
        threads: a.threads.as_deref().map_or_else(
            || default_threads(machine::nproc()),
            |s| parse_threads(s).unwrap_or_default(),
        ),
        validation: Path::new(predict::DEFAULT_VALIDATION),
    };
    match predict::host::predict_for_bench(&plan) {
        Ok(p) => Some(p),
        Err(e) => {
            eprintln!("aspace bench: no prediction: {e}");
            None
        }
    }
}

fn report_cmd(file: &Path, out: Option<PathBuf>) -> Result<(), String> {
    let out = out.unwrap_or_else(|| {
        file.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    });
    let text = input::read_text(file, "the results file", input::RESULTS_CAP)?;
    let mut r: Results = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not an aspace results file: {e}", file.display()))?;
    input::check_output_dir(&out, "--out")?;
    r.analyse();
    print!("{}", report::text(&r));
    write_outputs(&r, &out, None)?;
    println!("\nWrote {}/report.html and the SVG plots.", out.display());
    Ok(())
}

fn soak_cmd(a: SoakArgs) -> Result<bool, String> {
    let duration = parse_soak_duration(&a.duration)?;
    let designs = match &a.designs {
        Some(s) => parse_designs(s)?,
        None => Design::ALL.to_vec(),
    };
    if let Some(b) = designs.iter().find(|d| d.is_bound()) {
        return Err(format!(
            "--designs: {b} is a bound that keeps no reverse map; a soak checks reverse maps"
        ));
    }
    let threads = a.threads.unwrap_or(2 * designs.len());
    if let Some(p) = &a.json {
        input::check_output_file(p, "--json", false)?;
    }
    if let Some(p) = &a.curve {
        input::check_output_file(p, "--curve", false)?;
    }
    let binary = if a.binary == "none" {
        None
    } else {
        let b = PathBuf::from(&a.binary);
        let linkage = workload::check_binary(&b)?;
        let how = match linkage {
            mm::Linkage::Dynamic => "dynamically linked",
            mm::Linkage::Static => "statically linked",
            mm::Linkage::StaticPie => "statically linked (static-pie)",
        };
        eprintln!("soak: {} is {how}", b.display());
        Some(b)
    };
    eprintln!(
        "aspace soak: {:.0} s, {threads} threads over {} design(s); checking invariants as it goes.",
        duration.as_secs_f64(),
        designs.len()
    );
    let cfg = soak::SoakConfig {
        duration,
        threads,
        designs,
        seed: a.seed,
        binary,
    };
    let r = soak::run(&cfg, &|_| {});
    print!("{}", soak::text(&r));
    if let Some(p) = &a.json {
        let text = serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?;
        std::fs::write(p, text + "\n").map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    if let Some(p) = &a.curve {
        let text: String = r
            .rss_curve
            .iter()
            .map(|(t, k)| format!("{t:.2}\t{k}\n"))
            .collect();
        std::fs::write(p, text).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    Ok(r.violations == 0)
}

/// A soak may run for up to a day.
fn parse_soak_duration(s: &str) -> Result<Duration, String> {
    let d = s.trim();
    if let Ok(secs) = d.trim_end_matches('s').trim().parse::<f64>() {
        if !d.ends_with("ms") && secs.is_finite() && secs > 3600.0 && secs <= 86400.0 {
            return Ok(Duration::from_secs_f64(secs));
        }
    }
    parse_duration(s)
}

/// `aspace calibrate`'s paths, checked and resolved before it measures: the
/// output can be written (its directory is created), and `--binary` is
/// resolved as `aspace bench` resolves it (a relative path from the current
/// directory, not from `PATH`) and must be a program the model can load.
fn calibrate_checked(mut a: calibrate::CalibrateArgs) -> Result<calibrate::CalibrateArgs, String> {
    input::check_output_file(&a.out, "--out", true)?;
    workload::check_binary(&a.binary).map_err(|e| format!("--binary: {e}"))?;
    a.binary = std::fs::canonicalize(&a.binary)
        .map_err(|e| format!("--binary: {}: {e}", a.binary.display()))?;
    Ok(a)
}

/// `aspace predict`'s files, checked before it records or simulates: every
/// input file is read as [`input::read_text`] reads (a FIFO or a device is
/// refused at once) and parsed, and every output can be written.
fn predict_checked(a: &predict::PredictArgs) -> Result<(), String> {
    input::check_output_dir(&a.out, "--out")?;
    let json = a.json.clone().unwrap_or_else(|| a.out.join("predict.json"));
    input::check_output_file(&json, "--json", json.starts_with(&a.out))?;
    if let Some(d) = &a.save_profiles {
        input::check_output_dir(d, "--save-profiles")?;
    }
    if let Some(d) = &a.profiles {
        if !d.is_dir() {
            return Err(format!(
                "--profiles: {} is not a folder (give an earlier run's --save-profiles folder)",
                d.display()
            ));
        }
    }
    if !a.validate && ::predict::Machine::by_name(&a.machine).is_none() {
        let p = Path::new(&a.machine);
        if std::fs::symlink_metadata(p).is_ok() {
            machine_file(p, "--machine")?;
        }
    }
    if let Some(p) = &a.host {
        machine_file(p, "--host")?;
    }
    if let Some(p) = a.measured.as_ref().filter(|p| {
        // A survey's execl.tsv is read by the comparison itself.
        a.validate || !p.extension().is_some_and(|e| e == "tsv")
    }) {
        let text = input::read_text(p, "--measured", input::RESULTS_CAP)?;
        serde_json::from_str::<Results>(&text).map_err(|e| {
            format!(
                "--measured: {} is not an aspace results file: {e}",
                p.display()
            )
        })?;
    }
    Ok(())
}

fn replay_cmd(a: ReplayArgs) -> Result<bool, String> {
    let placement = match a.placement.as_str() {
        "thp" => mm::Placement::LINUX_THP,
        "top-down" => mm::Placement::TOP_DOWN,
        p => return Err(format!("--placement: {p:?} is not thp or top-down")),
    };
    replay::run(&replay::ReplayConfig {
        trace: a.file,
        designs: match &a.designs {
            Some(s) => parse_designs(s)?,
            None => Design::ALL.to_vec(),
        },
        patterns: a.call_pattern.patterns(),
        maps: a.maps,
        json: a.json,
        placement,
        repeat: a.repeat,
    })
}

/// Gives SIGPIPE its default action back (Rust's runtime ignores it, so that a
/// write to a closed pipe is an `EPIPE` error, on which `println!` panics):
/// `aspace replay ... | head` then ends quietly when `head` has read its lines, as
/// any Unix tool does. Nothing here writes to a pipe whose reader may have gone
/// and needs the error (calibrate's pipe is read to the end while its writers
/// live), and children get the default action at exec anyway.
fn default_sigpipe() {
    // SAFETY: signal(2) with a valid signal number and the default action; the
    // first thing main does, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    default_sigpipe();
    calibrate::execl_hook();
    predict::model::trace_hook();
    let cli = Cli::parse();
    let res = match cli.cmd {
        Cmd::Bench(a) => bench(a),
        Cmd::Report { file, out } => report_cmd(&file, out),
        Cmd::Calibrate(a) => calibrate_checked(a).and_then(calibrate::run),
        Cmd::Predict(a) => predict_checked(&a).and_then(|()| predict::run(a)),
        Cmd::Survey(a) => survey::run(a),
        Cmd::Replay(a) => match replay_cmd(a) {
            Ok(true) => Ok(()),
            Ok(false) => return ExitCode::from(1),
            Err(e) => Err(e),
        },
        Cmd::Soak(a) => match soak_cmd(a) {
            Ok(true) => Ok(()),
            Ok(false) => {
                eprintln!("aspace soak: invariant violations found");
                return ExitCode::from(1);
            }
            Err(e) => Err(e),
        },
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every (design, pattern) of a thread count runs before the next thread count,
    /// and every point's n-th sample before any (n+1)-th: drift hits all alike.
    #[test]
    fn samples_are_interleaved() {
        let pairs = [
            (Design::Linux, CallPattern::PerVma),
            (Design::Aspace, CallPattern::PerVma),
            (Design::Linux, CallPattern::Batched),
        ];
        let s = schedule(2, &[Workload::Execl], &[1, 2], &pairs);
        assert_eq!(s.len(), 2 * 2 * 3);
        let key = |x: &(usize, Workload, usize, Design, CallPattern)| (x.0, x.2, x.3, x.4);
        let got: Vec<_> = s.iter().map(key).collect();
        let mut want = Vec::new();
        for r in 0..2 {
            for t in [1, 2] {
                for (d, p) in pairs {
                    want.push((r, t, d, p));
                }
            }
        }
        assert_eq!(got, want);
        assert_eq!(PatternArg::Both.patterns(), CallPattern::ALL.to_vec());
    }

    #[test]
    fn args_parse_and_reject() {
        assert_eq!(parse_threads("1, 2,4,2").unwrap(), vec![1, 2, 4]);
        assert!(parse_threads("0").is_err());
        assert!(parse_threads("a").is_err());
        assert!(parse_threads("").is_err());
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert!(parse_duration("-1").is_err());
        assert!(parse_duration("abc").is_err());
        assert_eq!(default_threads(2), vec![1, 2, 3, 4]);
        assert_eq!(default_threads(16), vec![1, 2, 4, 8, 16, 32]);
        assert!(parse_designs("linux,nope").is_err());
        assert_eq!(parse_designs("exclude").unwrap(), vec![Design::Exclude]);
        assert_eq!(parse_designs("aspace").unwrap(), vec![Design::Aspace]);
    }

    #[test]
    fn bench_lock_is_the_flag_else_the_costs_default() {
        use rmap::LockImpl::{ParkingLot, Rwsem};
        assert_eq!(lock_for(None, CostArg::Model), ParkingLot);
        assert_eq!(lock_for(None, CostArg::Kernel), Rwsem);
        assert_eq!(lock_for(Some(LockArg::Rwsem), CostArg::Model), Rwsem);
        assert_eq!(
            lock_for(Some(LockArg::ParkingLot), CostArg::Kernel),
            ParkingLot
        );
        assert_eq!(lock_for(Some(LockArg::Rwsem), CostArg::Kernel), Rwsem);
        assert_eq!(
            lock_for(Some(LockArg::ParkingLot), CostArg::Model),
            ParkingLot
        );
    }
}
