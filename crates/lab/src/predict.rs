//! `aspace predict`: what each design does on a machine of many CPUs,
//! predicted from profiles recorded here and a machine description.
//!
//! 1. For each design, a profile is recorded from the real code
//!    ([`recorder`]): one thread per CPU of the target, the maps built for
//!    its topology, the threads taking turns on the same trees; every lock
//!    hold with the cache lines it touches, by identity ([`events`]).
//! 2. Kernel cost (the default): locks are Linux's rwsem, a split is one
//!    hold, each iteration is stretched to the real exec's cost (the
//!    target's own calibration, `--exec-ns`, or the host's scaled by
//!    clock), and the rest of what a real exec shares is added
//!    ([`kernel`]). Model cost (`--model-cost`): the model as `aspace bench`
//!    runs it, parking_lot locks and the model's own shared lines
//!    ([`model`]).
//! 3. `predict::simulate` runs every design, and each design's
//!    no-reverse-map bound, at every CPU count.
//!
//! Everything printed is labelled: PREDICTED figures, the bound AT MOST, a
//! design at its bound "at least"; the stored validation
//! (docs/results/predict/validation.json) as STORED, with its date and
//! commit; the caveats of this run (a busy recording host) in the terminal
//! and in `report.html` ([`host::predict_section`]). A busy host is refused
//! before recording unless `--busy-ok` ([`busy_gate`]). `aspace bench`
//! records and simulates its own host and puts the predicted curve beside
//! the measured one ([`host::predict_for_bench`], [`host::bench_section`]).
//!
//! What the model lacks, and how each published figure and the 16-core
//! machine compare, is in `docs/results/predict/README.md` and the
//! simulator's module docs.

pub mod compare;
pub mod events;
pub mod host;
pub mod kernel;
pub mod model;
pub mod recorder;
pub mod validate;

use mm::CallPattern;
use predict::{LockKind, Machine, Prediction, Profile, SimConfig};
use rmap::Design;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// `aspace predict`'s arguments.
#[derive(clap::Args, Debug)]
pub struct PredictArgs {
    /// A built-in machine (hygon-384, spr-224, emr-112, device-16) or a JSON
    /// file (as written by `aspace calibrate`).
    #[arg(long, default_value = "hygon-384")]
    pub machine: String,
    /// Comma-separated designs (default: all).
    #[arg(long)]
    pub designs: Option<String>,
    /// per-vma (Linux 6.12's calls) or batched.
    #[arg(long, default_value = "per-vma")]
    pub call_pattern: String,
    /// Comma-separated CPU counts (default: 1, 2, 4, ... up to the machine's).
    #[arg(long)]
    pub cpus: Option<String>,
    /// execl (exec replaces the image) or shell (fork + exec + exit).
    #[arg(long, default_value = "execl")]
    pub workload: String,
    /// The host calibration (`aspace calibrate --out`); without it, a quick
    /// calibration is run first.
    #[arg(long)]
    pub host: Option<PathBuf>,
    /// The binary the model execs (and the calibration measured).
    #[arg(long, default_value = "/bin/true")]
    pub binary: PathBuf,
    /// Simulated seconds per point.
    #[arg(long, default_value_t = 1.0)]
    pub seconds: f64,
    /// Resident processes keeping libc's map populated while recording.
    #[arg(long, default_value_t = 1200)]
    pub resident: usize,
    /// Use the model's own exec cost (no calibration): predicts `aspace
    /// bench` on the model rather than the kernel.
    #[arg(long)]
    pub model_cost: bool,
    /// With --model-cost: each iteration also does the rest of a real exec
    /// (its CPU time and shared lines), as `aspace bench --cost kernel`
    /// runs the model: predicts that bench.
    #[arg(long, requires = "model_cost")]
    pub kernel_work: bool,
    /// With --model-cost: the designs' locks, as `aspace bench --lock`:
    /// rwsem or parking-lot (default: parking-lot, rwsem with
    /// --kernel-work, as the bench's defaults).
    #[arg(long, requires = "model_cost", value_parser = ["rwsem", "parking-lot"])]
    pub lock: Option<String>,
    /// Write every figure to this JSON file (default: OUT/predict.json).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Directory for predict.json and predict.svg (with --validate:
    /// validation.md and validation.json).
    #[arg(long, default_value = "aspace-predict")]
    pub out: PathBuf,
    /// Instead of one machine: predict every published figure (all built-in
    /// machines) and compare, writing the validation table.
    #[arg(long)]
    pub validate: bool,
    /// Measurements to set the prediction beside (PREDICTED / measured per
    /// design and CPU count): an `aspace bench` results.json, or an `aspace
    /// survey` execl.tsv (the real kernel's execl, set beside `linux`).
    /// With --validate: a bench results.json measured on this host, for the
    /// 1- and 2-thread checks.
    #[arg(long)]
    pub measured: Option<PathBuf>,
    /// With --measured: compare this stored prediction (a predict.json)
    /// instead of making one (nothing is recorded or simulated).
    #[arg(long)]
    pub from: Option<PathBuf>,
    /// The validation to print beside the predictions (as written by
    /// --validate).
    #[arg(long, default_value = DEFAULT_VALIDATION)]
    pub validation: PathBuf,
    /// The real kernel's cost of one iteration of the binary on the target
    /// machine, ns, where measured there (e.g. one copy of the execl loop);
    /// default: the target description's own `exec_ns`, else the host's
    /// scaled by clock.
    #[arg(long)]
    pub exec_ns: Option<f64>,
    /// With --model-cost: the model's own exec without a reverse map on the
    /// target, ns per iteration on one thread, where measured there (e.g.
    /// 1e9 over the execs/s of `aspace bench --designs exclude --threads 1`
    /// there); default: the target description's `model_exec_ns` (`aspace
    /// calibrate` measures it). The same loop is timed here, and the ratio
    /// scales the times recorded here to the target.
    #[arg(long, requires = "model_cost")]
    pub model_exec_ns: Option<f64>,
    /// Record even when other work keeps this host busy (the output then
    /// says so); without it a busy host is waited for, then refused.
    #[arg(long)]
    pub busy_ok: bool,
    /// Also write each recorded profile here as `<design>.profile.json`
    /// (as simulated: input of `predict`'s `simbench` example, for profiling
    /// the simulator) and `<design>.recorded.json` (as recorded and scaled,
    /// before the exec's other shared lines are added: input of
    /// `--profiles`).
    #[arg(long)]
    pub save_profiles: Option<PathBuf>,
    /// Simulate the profiles recorded by an earlier run (its
    /// `--save-profiles` folder's `<design>.recorded.json`) instead of
    /// recording: the same recordings under a changed model or machine,
    /// without the recording's noise. The other shared lines are added as
    /// in a recording run.
    #[arg(long)]
    pub profiles: Option<PathBuf>,
    /// With --model-cost: the model's other shared lines from this file (as
    /// `scripts/model-shared-lines.sh` writes it) instead of the recording
    /// built into this binary.
    #[arg(long)]
    pub model_share: Option<PathBuf>,
    /// Require that line transfers a CPU makes independently (a hold's
    /// written lines that it did not load first, a touch's locked updates)
    /// overlap by the simulated machine's calibrated factors (`line_overlap`,
    /// `rmw_overlap` of `aspace calibrate`, or `--overlap-from`'s): refused
    /// where the machine has neither. Overlap is the default wherever the
    /// factors exist; without this flag a description without them stays
    /// serial, and says so.
    #[arg(long, conflicts_with = "serial")]
    pub overlap: bool,
    /// Charge every line transfer serially, one at a time, even where the
    /// machine's calibration has overlap factors: an upper bound on what
    /// the transfers cost (so a lower bound on throughput).
    #[arg(long)]
    pub serial: bool,
    /// Take the overlap factors from this calibration instead (a stand-in
    /// where the target's own calibration lacks them: the output names the
    /// file and its host).
    #[arg(long, conflicts_with = "serial")]
    pub overlap_from: Option<PathBuf>,
}

impl PredictArgs {
    /// Whether line transfers overlap by the machine's factors
    /// ([`SimConfig::overlap`], set on every simulation of the run by
    /// [`simulate_all`]): unless `--serial`. On a machine without the
    /// factors it changes nothing.
    pub fn overlap(&self) -> bool {
        !self.serial
    }
}

/// Applies `--overlap-from` to the simulated machine `m`: its factors are
/// replaced by that calibration's, and the sources say so. Whether they
/// are used at all is [`PredictArgs::overlap`] (passed to [`simulate_all`]).
/// An explicit `--overlap` on a machine left without either factor is
/// refused: it asks for what cannot be done.
pub fn overlap_arg(a: &PredictArgs, m: &mut Machine) -> Result<(), String> {
    if let Some(f) = &a.overlap_from {
        let from = Machine::load(f).map_err(|e| e.to_string())?;
        if from.line_overlap.is_none() && from.rmw_overlap.is_none() {
            return Err(format!(
                "--overlap-from: {} has no line_overlap or rmw_overlap (calibrated before they were measured)",
                f.display()
            ));
        }
        m.line_overlap = from.line_overlap;
        m.rmw_overlap = from.rmw_overlap;
        for k in ["line_overlap", "rmw_overlap"] {
            let src = from.sources.get(k).cloned().unwrap_or_default();
            m.sources.insert(
                k.into(),
                format!(
                    "STAND-IN, not measured on this machine: from {} ({}): {src}",
                    f.display(),
                    from.description
                ),
            );
        }
    }
    if a.overlap && m.line_overlap.is_none() && m.rmw_overlap.is_none() {
        return Err(format!(
            "--overlap: {}'s description has no calibrated line_overlap or rmw_overlap, so its line transfers would be charged one at a time: give --overlap-from a calibration that has them (the output names it a stand-in), or drop --overlap (overlap is the default wherever the factors exist)",
            m.name
        ));
    }
    Ok(())
}

/// One design's predicted curve.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Curve {
    /// Design name.
    pub design: String,
    /// Call pattern.
    pub call_pattern: String,
    /// Locks acquired per iteration (slot 0).
    pub holds_per_iteration: usize,
    /// Model reverse-map time per iteration, recorded ns.
    pub model_rmap_ns: f64,
    /// How the profile was recorded.
    pub profile_notes: String,
    /// Points, by CPU count.
    pub points: Vec<Prediction>,
    /// The no-reverse-map bound at each point (the same iteration with
    /// every reverse-map hold removed, simulated): the most any
    /// reverse-map design can reach there, execs/s.
    #[serde(default)]
    pub bound_per_s: Vec<f64>,
    /// How each point reads against its bound ([`Curve::reading`]), by
    /// point. Empty in predictions written before it was.
    #[serde(default)]
    pub readings: Vec<Reading>,
}

impl Curve {
    /// The bound at `cpus`, where simulated.
    pub fn bound_at(&self, cpus: u32) -> Option<f64> {
        self.points
            .iter()
            .position(|p| p.cpus == cpus)
            .and_then(|i| self.bound_per_s.get(i).copied())
    }

    /// How the point of `per_s` at `cpus` reads against the design's
    /// bound there. Two tests, each against [`AT_BOUND`] with the band
    /// [`RUN_TO_RUN`] around it: the point's share of its bound, and the
    /// bound's own scaling (its rate over `cpus` times its one-CPU rate:
    /// a bound that scales nearly linearly does not say that other shared
    /// state limits anything; one CPU alone is limited by its own work).
    /// [`Reading::AtBound`] when both are clearly on the bound's side,
    /// [`Reading::Point`] when either is clearly on the other,
    /// [`Reading::NearBound`] otherwise. Without a bound at `cpus`: a
    /// point; without one at 1 CPU the bound counts as sublinear beyond
    /// one CPU.
    pub fn reading(&self, cpus: u32, per_s: f64) -> Reading {
        use std::cmp::Ordering::{Greater, Less};
        let Some(b) = self.bound_at(cpus).filter(|&b| b > 0.0) else {
            return Reading::Point;
        };
        let share = against(per_s / b, AT_BOUND);
        let linear = match self.bound_at(1).filter(|&one| one > 0.0) {
            Some(one) => against(b / (one * f64::from(cpus)), AT_BOUND),
            None if cpus > 1 => Less,
            None => Greater,
        };
        match (share, linear) {
            (Less, _) | (_, Greater) => Reading::Point,
            (Greater, Less) => Reading::AtBound,
            _ => Reading::NearBound,
        }
    }
}

/// A design whose prediction comes within this share of its no-reverse-map
/// bound (while the bound itself stays below this share of linear
/// scaling) is limited by the rest of what the iteration shares, not by
/// its reverse map: its figure is reported as "at least" (beyond the band
/// [`RUN_TO_RUN`] around it; see [`Curve::reading`]).
pub const AT_BOUND: f64 = 0.9;

/// How much two runs of one command may differ: issue 26's target for
/// `aspace predict --machine hygon-384` run twice on a busy host (the
/// ratios within 5%; measured: within 1.2% in s38's pair, 3.3% and 4.2%
/// in earlier pairs, README "Stability on a busy host"). A figure within
/// this factor of a threshold of [`Curve::reading`] (at or above
/// `line / (1 + RUN_TO_RUN)`, below `line * (1 + RUN_TO_RUN)`) may fall on
/// either side of it in another run, so it is read as near, never
/// decided by the threshold alone.
pub const RUN_TO_RUN: f64 = 0.05;

/// Where `x` lies against `line`, with the band [`RUN_TO_RUN`]: `Less`
/// below `line / (1 + RUN_TO_RUN)`, `Greater` at or above
/// `line * (1 + RUN_TO_RUN)`, `Equal` (near) between.
fn against(x: f64, line: f64) -> std::cmp::Ordering {
    if x >= line * (1.0 + RUN_TO_RUN) {
        std::cmp::Ordering::Greater
    } else if x < line / (1.0 + RUN_TO_RUN) {
        std::cmp::Ordering::Less
    } else {
        std::cmp::Ordering::Equal
    }
}

/// How a design's predicted point reads against its no-reverse-map bound
/// ([`Curve::reading`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reading {
    /// A prediction: the reverse map limits the design there.
    Point,
    /// Within the band of a threshold: which of the reverse map and the
    /// rest of what an exec shares limits it is not decided; printed as
    /// the point, labelled "near bound" (an "at least" if the rest does).
    NearBound,
    /// Limited by the rest of what an exec shares: "at least", not a
    /// point.
    AtBound,
}

/// What `aspace predict` writes.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PredictOutput {
    /// Always "PREDICTION (simulated, not measured)".
    pub kind: String,
    /// The machine.
    pub machine: Machine,
    /// The host calibration used.
    pub host: Machine,
    /// The workload.
    pub workload: String,
    /// Iteration cost on the host, ns (calibrated real exec, or the model's).
    pub iteration_ns: f64,
    /// Simulated seconds per point.
    pub seconds: f64,
    /// `kernel` (the real exec's cost and shared lines, rwsems), `model`
    /// (the model's own cost: what `aspace bench` measures) or
    /// `bench-kernel` (what `aspace bench --cost kernel` measures).
    #[serde(default)]
    pub cost: String,
    /// The kind of the profiles' reverse-map locks (`rwsem`,
    /// `parking_lot`, or both joined by `+` where designs differ), read
    /// from the simulated profiles themselves ([`lock_labels`]), never from
    /// `--lock` (which saved profiles do not follow).
    #[serde(default)]
    pub lock: String,
    /// The locks the simulated profiles hold, in words, one line per role:
    /// the reverse map's, then the exec's other locks ([`lock_labels`]).
    /// Empty in predictions written before it was.
    #[serde(default)]
    pub locks: Vec<String>,
    /// How recorded times were scaled to the target ([`Scale`]).
    #[serde(default)]
    pub scale: String,
    /// What may make these figures differ from another run's: a busy
    /// recording host, an adaptive design recorded unadapted. Empty when
    /// nothing is known to.
    #[serde(default)]
    pub caveats: Vec<String>,
    /// Costs the machine description did not measure and the documented
    /// values used instead.
    #[serde(default)]
    pub assumptions: Vec<String>,
    /// Where the stored validation is.
    pub validation: String,
    /// The stored validation (not this run's), where the file was found.
    #[serde(default)]
    pub stored_validation: Option<crate::predicted::StoredValidation>,
    /// The curves.
    pub curves: Vec<Curve>,
    /// Where the copies ran in the simulation: "placement: assumed, ..."
    /// (the built-in placement), then one "placement: recorded by the
    /// bench ..." line per point simulated on the CPUs a `--measured`
    /// results.json recorded. Empty in predictions written before it was.
    #[serde(default)]
    pub placement: Vec<String>,
}

impl PredictOutput {
    /// Every CPU count that some curve has a point at, ascending, once.
    pub fn cpu_counts(&self) -> Vec<u32> {
        let mut cpus: Vec<u32> = self
            .curves
            .iter()
            .flat_map(|c| c.points.iter().map(|p| p.cpus))
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        cpus
    }
}

/// The built-in placement of `cpus` copies on `m`, in words.
pub fn assumed_placement(m: &Machine) -> String {
    if m.single_llc() {
        let from: Vec<String> = [1u32, m.cpus()]
            .iter()
            .map(|&c| {
                let copies = if c == 1 { "copy" } else { "copies" };
                format!("{c} {copies} from CPU {}", first_cpus(m, c)[0])
            })
            .collect();
        format!(
            "placement: assumed, the scheduler's scan for an idle CPU in one last-level cache: consecutive CPUs from the one after the starting thread's ({}, Machine::placement_from); not the CPUs a bench's unpinned threads ran on",
            from.join("; ")
        )
    } else {
        "placement: assumed, Machine::placement (nodes first, then last-level caches, then cores, SMT siblings last); not the CPUs a bench's unpinned threads ran on".into()
    }
}

/// The least warm-up before recording a profile for another machine: 8
/// threads for at least 2 s (and until the maps' lock count is stable),
/// because a design that adapts needs moments
/// of many-CPU lock traffic (two threads running at once), which a loaded
/// host with few CPUs gives only now and then (at 1 s an adapting design
/// adapted in about half the runs on a 2-vCPU host with load average 15).
pub const WARMUP: Duration = Duration::from_millis(2000);

/// Each work step of a prediction is stretched by a factor uniform in
/// `1 +- WORK_JITTER`: real execs vary, and without jitter copies can lock
/// into one phase and never meet (or always meet) at a lock.
pub const WORK_JITTER: f64 = 0.2;

/// Where `aspace predict --validate` keeps its comparisons (relative to the
/// repository root).
pub const DEFAULT_VALIDATION: &str = "docs/results/predict/validation.json";

/// Where the stored validation is described, for notes beside a
/// prediction.
pub const VALIDATION_NOTE: &str = "stored validation against every published figure: docs/results/predict/validation.md (aspace predict --validate makes a new one)";

/// Resolves `--machine`: a built-in name or a JSON file.
pub fn machine_arg(s: &str) -> Result<Machine, String> {
    if let Some(m) = Machine::by_name(s) {
        return Ok(m);
    }
    let p = Path::new(s);
    if p.exists() {
        return Machine::load(p).map_err(|e| e.to_string());
    }
    let names: Vec<String> = Machine::builtin().into_iter().map(|m| m.name).collect();
    Err(format!(
        "--machine: {s:?} is neither a built-in machine ({}) nor a file",
        names.join(", ")
    ))
}

/// Parses `--call-pattern`.
pub fn pattern_arg(s: &str) -> Result<CallPattern, String> {
    CallPattern::ALL
        .into_iter()
        .find(|p| p.name() == s.trim())
        .ok_or_else(|| format!("--call-pattern: {s:?} is not per-vma or batched"))
}

/// Parses `--cpus` against the machine.
pub fn cpus_arg(s: Option<&str>, m: &Machine) -> Result<Vec<u32>, String> {
    let max = m.cpus();
    let Some(s) = s else {
        let mut v: Vec<u32> = std::iter::successors(Some(1u32), |n| Some(n * 2))
            .take_while(|&n| n <= max)
            .collect();
        if v.last() != Some(&max) {
            v.push(max);
        }
        return Ok(v);
    };
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let n: u32 = part
            .parse()
            .map_err(|_| format!("--cpus: {part:?} is not a CPU count"))?;
        if n == 0 || n > max {
            return Err(format!("--cpus: {n} is outside 1..={max} ({})", m.name));
        }
        if !v.contains(&n) {
            v.push(n);
        }
    }
    if v.is_empty() {
        return Err("--cpus: give at least one CPU count".into());
    }
    v.sort_unstable();
    Ok(v)
}

/// The host description: loaded, or a quick calibration.
pub fn host_arg(host: Option<&Path>, binary: &Path) -> Result<Machine, String> {
    match host {
        Some(p) => Machine::load(p).map_err(|e| e.to_string()),
        None => {
            eprintln!("aspace predict: no --host calibration given; running a quick one (aspace calibrate does a fuller one)");
            crate::calibrate::calibrate(&crate::calibrate::CalibrateConfig {
                binary: binary.to_path_buf(),
                scale: 0.25,
                self_exe: crate::calibrate::own_exe()?,
                speed: false,
            })
        }
    }
}

/// How the recording host's times become the target's: recorded ns times
/// `factor` are the target's ns.
#[derive(Clone, Debug, PartialEq)]
pub struct Scale {
    /// Target ns per recorded ns.
    pub factor: f64,
    /// Where it came from, in words.
    pub source: String,
}

/// Settings shared by recording and simulation.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Target machine.
    pub machine: Machine,
    /// Host calibration.
    pub host: Machine,
    /// Shell (fork + exec + exit) rather than execl.
    pub shell: bool,
    /// The binary.
    pub binary: PathBuf,
    /// Resident processes.
    pub resident: usize,
    /// Keep the model's own iteration cost.
    pub model_cost: bool,
    /// With `model_cost`: also each iteration's rest of a real exec (its
    /// CPU time and shared lines), as `aspace bench --cost kernel` runs it.
    pub kernel_work: bool,
    /// With `model_cost`: the designs' locks (default: parking_lot's for
    /// the model, the rwsem-like lock with `kernel_work`, as the bench's
    /// defaults).
    pub lock: Option<LockKind>,
    /// Simulated seconds.
    pub seconds: f64,
    /// The recording's least warm-up ([`WARMUP`] for other machines).
    pub warmup: Duration,
    /// Each CPU execs its own copy of the binary, the libraries shared
    /// (see [`recorder::RecordConfig::own_binary`]).
    pub own_binary: bool,
    /// The real kernel's cost of one iteration on the *target*, ns, where
    /// known (its own calibration, or `--exec-ns`); otherwise the host's
    /// calibrated cost is scaled.
    pub target_iteration_ns: Option<f64>,
    /// The host's own speed, measured where the plan needs it (so that a
    /// missing `--host` does not leave a nominal clock): `Some` once set.
    pub measure_host: bool,
    /// The model's other shared lines (`--model-share`; default: the
    /// recording built into this binary, [`model::recorded`]).
    pub model_share: Option<model::ModelShare>,
    /// What a real exec of the binary maps (measured once, on first use).
    exec_share: std::sync::OnceLock<Result<kernel::ExecShare, String>>,
    /// The scale (measured once, on first use).
    scale: std::sync::OnceLock<Result<Scale, String>>,
}

impl Plan {
    /// A plan with the usual settings: [`WARMUP`], one shared binary, and
    /// the target's own calibrated iteration cost where it has one.
    pub fn new(
        machine: Machine,
        host: Machine,
        shell: bool,
        binary: PathBuf,
        resident: usize,
        model_cost: bool,
        seconds: f64,
    ) -> Plan {
        let target_iteration_ns = if shell {
            machine.fork_exec_ns
        } else {
            machine.exec_ns
        };
        Plan {
            machine,
            host,
            shell,
            binary,
            resident,
            model_cost,
            kernel_work: false,
            lock: None,
            seconds,
            warmup: WARMUP,
            own_binary: false,
            target_iteration_ns,
            measure_host: false,
            model_share: None,
            exec_share: std::sync::OnceLock::new(),
            scale: std::sync::OnceLock::new(),
        }
    }

    /// How recorded times become the target's ([`Scale`]): where the
    /// target's calibration timed the model's own exec without a reverse
    /// map (`model_exec_ns`), the same loop is timed here and their ratio
    /// is the speed of the model's code there over here; otherwise the
    /// clocks' ratio (the host's from its calibration, or measured now
    /// with `measure_host`).
    pub fn scale(&self) -> Result<&Scale, String> {
        self.scale
            .get_or_init(|| {
                if let Some(t) = self.machine.model_exec_ns {
                    let bin = self
                        .machine
                        .model_exec_binary
                        .as_deref()
                        .map(Path::new)
                        .filter(|b| b.exists())
                        .unwrap_or(&self.binary);
                    let here = crate::model_exec::model_exec_ns(bin)?;
                    return Ok(Scale {
                        factor: t / here,
                        source: format!(
                            "the model's exec of {} without a reverse map: {:.1} us on {} (its calibration), {:.1} us here (measured now, one thread, CPU time)",
                            bin.display(),
                            t / 1e3,
                            self.machine.name,
                            here / 1e3
                        ),
                    });
                }
                let (host_ghz, how) = match self
                    .measure_host
                    .then(|| crate::calibrate::measured_ghz(0.25))
                    .flatten()
                {
                    Some((g, _)) => (g, "measured now"),
                    None => (self.host.core_ghz, "its calibration"),
                };
                Ok(Scale {
                    factor: host_ghz / self.machine.core_ghz,
                    source: format!(
                        "clocks: {:.2} GHz here ({how}) over {:.2} GHz on {} ({} has no model_exec_ns: aspace calibrate measures it)",
                        host_ghz, self.machine.core_ghz, self.machine.name, self.machine.name
                    ),
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The real cost of one iteration, in the host's ns (the profile's
    /// unit): the target's own figure converted by [`Plan::scale`], else
    /// the host's.
    pub fn real_iteration_ns(&self) -> Option<f64> {
        if let Some(t) = self.target_iteration_ns {
            let f = self.scale().map_or(1.0, |s| s.factor);
            return Some(t / f);
        }
        if self.shell {
            self.host.fork_exec_ns
        } else {
            self.host.exec_ns
        }
    }

    /// Whether [`Plan::finish`] adds a real exec's other shared lines (the
    /// kernel cost, and the model's with `kernel_work`): [`Plan::exec_share`].
    pub fn needs_exec_share(&self) -> bool {
        !self.model_cost || self.kernel_work
    }

    /// Uses `share` as what a real exec of the binary maps, instead of
    /// measuring it ([`Plan::exec_share`]): the measurement saved with
    /// `--profiles`. Fails once the plan has measured or been given one.
    pub fn use_exec_share(&self, share: kernel::ExecShare) -> Result<(), String> {
        self.exec_share
            .set(Ok(share))
            .map_err(|_| "the exec's shared lines were already measured".to_string())
    }

    /// What a real exec of the binary maps ([`kernel::measure_exec`], on
    /// first use, unless [`Plan::use_exec_share`] gave it).
    pub fn exec_share(&self) -> Result<&kernel::ExecShare, String> {
        self.exec_share
            .get_or_init(|| kernel::measure_exec(&self.binary, &[]))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The cost this plan predicts, as `aspace predict` names it.
    pub fn cost_name(&self) -> &'static str {
        match (self.model_cost, self.kernel_work) {
            (false, _) => "kernel",
            (true, false) => "model",
            (true, true) => "bench-kernel",
        }
    }

    /// The locks the profiles get.
    pub fn lock_kind(&self) -> LockKind {
        match (self.model_cost, self.kernel_work) {
            (false, _) => LockKind::KernelRwsem,
            (true, false) => self.lock.unwrap_or(LockKind::ParkingLot),
            (true, true) => self.lock.unwrap_or(LockKind::KernelRwsem),
        }
    }

    /// Records `design`'s profile for this plan's machine; for the kernel
    /// (unless `model_cost`), scaled to the real iteration cost and with
    /// the exec's other shared lines added ([`kernel::add_exec_share`]);
    /// for the model, with its own shared lines ([`model::add_model_share`])
    /// and, with `kernel_work`, the rest of a real exec as the bench adds
    /// it.
    pub fn profile(&self, design: Design, pattern: CallPattern) -> Result<Profile, String> {
        let p = self.record(design, pattern)?;
        self.finish(p)
    }

    /// Records `design`'s profile as the recorder gives it, with its times
    /// scaled to the target (`recorded_ghz`), nothing added.
    pub fn record(&self, design: Design, pattern: CallPattern) -> Result<Profile, String> {
        let cfg = recorder::RecordConfig {
            design,
            pattern,
            shell: self.shell,
            binary: self.binary.clone(),
            resident: self.resident,
            iterations: 3,
            warmup: (8, self.warmup),
            own_binary: self.own_binary,
            cost: if self.model_cost {
                recorder::Cost::Model
            } else {
                recorder::Cost::Kernel
            },
            lock: self.lock_kind(),
            stagger: true,
            // As `aspace bench --cost kernel` runs the model.
            kernel_splits: self.model_cost && self.kernel_work,
        };
        let mut p = recorder::record_profile(&self.machine, &cfg)?;
        let scale = self.scale()?.factor;
        p.recorded_ghz = self.machine.core_ghz * scale;
        Ok(p)
    }

    /// Adds to a [`Plan::record`]ed profile what this plan's cost adds:
    /// the model's own shared lines, or the real exec's cost and its other
    /// shared lines.
    pub fn finish(&self, mut p: Profile) -> Result<Profile, String> {
        if self.model_cost {
            let share = match &self.model_share {
                Some(s) => s.clone(),
                None => model::recorded()?,
            };
            p = model::add_model_share(&p, &share);
            p = model::add_hold_timing(&p);
            p = model::add_contended_counters(&p);
            if self.kernel_work {
                // As the bench: the real exec's CPU time beyond the model's
                // own exec without a reverse map, spun, and its shared lines.
                let real = self.real_iteration_ns().ok_or(
                    "the host calibration has no exec cost: run aspace calibrate, or pass --exec-ns",
                )?;
                let own = crate::model_exec::model_exec_ns(&self.binary)?;
                p = p
                    .with_added_work((real - own).max(0.0))
                    .map_err(|e| e.to_string())?;
                p = kernel::add_exec_share(&p, self.exec_share()?, self.own_binary);
            }
        } else {
            let real = self.real_iteration_ns().ok_or(
                "the host calibration has no exec cost: run aspace calibrate, or pass --model-cost",
            )?;
            p = p.with_iteration_cost(real).map_err(|e| e.to_string())?;
            p = kernel::add_exec_share(&p, self.exec_share()?, self.own_binary);
        }
        Ok(p)
    }
}

/// The CPUs where the scheduler's scan for idle CPUs begins for `cpus`
/// unpinned copies on `m` ([`predict::SimConfig::first_cpu`]): on a machine
/// of one last-level cache whose CPUs the copies do not all fill, the CPU
/// after the one of the thread that built the shared state and starts the
/// copies (Linux's `select_idle_cpu()` scans from the waker's CPU + 1). In
/// a recording that thread is CPU 0: the recorder's main thread builds the
/// residents with the model's cost (for a design that groups CPUs, in CPU
/// 0's group; with the kernel's they exec all over the machine:
/// `recorder::populate`) before the slots run, as the bench's main thread
/// builds them on its own CPU before it starts the workers. Elsewhere the
/// placement's own (0).
pub fn first_cpus(m: &Machine, cpus: u32) -> Vec<u32> {
    if m.single_llc() && cpus < m.cpus() {
        vec![1 % m.cores_per_node.max(1)]
    } else {
        vec![0]
    }
}

/// Simulates every (profile, CPU count) pair on `m`, on all host CPUs,
/// from the starting CPU [`first_cpus`] gives. Where it gives several, each
/// start gets an equal share of the simulated time and the point is the
/// run of the median rate (as the bench's median sample comes from one
/// placement).
///
/// `overlap` is [`PredictArgs::overlap`] ([`SimConfig::overlap`]: the machine's
/// calibrated overlap factors are used); it changes nothing on a machine
/// without them. The one place the switch reaches the simulator.
pub fn simulate_all(
    m: &Machine,
    profiles: &[Profile],
    cpus: &[u32],
    seconds: f64,
    overlap: bool,
) -> Result<Vec<Vec<Prediction>>, String> {
    simulate_all_placed(m, profiles, cpus, seconds, overlap, &|_, _| None)
}

/// [`simulate_all`], except that where `placed(profile index, cpus)`
/// gives CPUs (a placement a bench recorded, [`compare::placements`]),
/// that point's copies run on them ([`predict::simulate_placed`]), one run
/// of the whole simulated time, instead of on the built-in placement.
pub fn simulate_all_placed(
    m: &Machine,
    profiles: &[Profile],
    cpus: &[u32],
    seconds: f64,
    overlap: bool,
    placed: &(dyn Fn(usize, u32) -> Option<Vec<u32>> + Sync),
) -> Result<Vec<Vec<Prediction>>, String> {
    simulate_points(m, profiles, cpus, seconds, None, overlap, placed)
}

/// [`simulate_all`] with `warmup_s` simulated seconds before each point's
/// measured time instead of the default (a twentieth of `seconds`, at most
/// 50 ms): for a point that leaves its start slowly. All copies start
/// together, and a contended lock's queue can stay in a slow state from
/// that start for a good part of a second before the work's jitter breaks
/// it up (the validation's exit-batching row: `linux` at 20 CPUs of
/// spr-224 measured 20.1k-24.0k execs/s over seeds 1-6 of one recording
/// after 50 ms, 23.7k-24.1k after 1 s: docs/results/predict/exit-s40/).
pub fn simulate_all_warm(
    m: &Machine,
    profiles: &[Profile],
    cpus: &[u32],
    seconds: f64,
    warmup_s: f64,
    overlap: bool,
) -> Result<Vec<Vec<Prediction>>, String> {
    simulate_points(
        m,
        profiles,
        cpus,
        seconds,
        Some(warmup_s * 1e9),
        overlap,
        &|_, _| None,
    )
}

fn simulate_points(
    m: &Machine,
    profiles: &[Profile],
    cpus: &[u32],
    seconds: f64,
    warmup_ns: Option<f64>,
    overlap: bool,
    placed: &(dyn Fn(usize, u32) -> Option<Vec<u32>> + Sync),
) -> Result<Vec<Vec<Prediction>>, String> {
    type Job = (usize, usize, u32, usize, Option<Vec<u32>>);
    let jobs: Vec<Job> = (0..profiles.len())
        .flat_map(|p| {
            (0..cpus.len()).flat_map(move |c| -> Vec<Job> {
                if let Some(on) = placed(p, cpus[c]) {
                    return vec![(p, c, 0, 1, Some(on))];
                }
                let starts = first_cpus(m, cpus[c]);
                let n = starts.len();
                starts.into_iter().map(|f| (p, c, f, n, None)).collect()
            })
        })
        .collect();
    type Runs = Vec<Vec<Vec<Prediction>>>;
    let out: Mutex<Runs> = Mutex::new(vec![vec![Vec::new(); cpus.len()]; profiles.len()]);
    let next = AtomicUsize::new(0);
    let err: Mutex<Option<String>> = Mutex::new(None);
    let workers = crate::machine::nproc().clamp(1, 16);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                // Relaxed: a work counter; results go through the mutex.
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((p, c, first, n, on)) = jobs.get(i) else {
                    break;
                };
                let (p, c, first, n) = (*p, *c, *first, *n);
                let mut cfg = SimConfig::new(cpus[c]);
                cfg.duration_ns = seconds * 1e9 / n as f64;
                cfg.warmup_ns = warmup_ns.unwrap_or((seconds * 5e7).min(5e7));
                cfg.work_jitter = WORK_JITTER;
                cfg.first_cpu = first;
                cfg.overlap = overlap;
                match predict::simulate_placed(m, &profiles[p], &cfg, on.as_deref()) {
                    Ok(r) => out.lock().unwrap_or_else(|e| e.into_inner())[p][c].push(r),
                    Err(e) => *err.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string()),
                }
            });
        }
    });
    if let Some(e) = err.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    Ok(out
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|v| v.into_iter().filter_map(median_run).collect())
        .collect())
}

/// The run of the median rate (the lower of the two middle ones), with
/// every run's events.
fn median_run(mut runs: Vec<Prediction>) -> Option<Prediction> {
    let events: u64 = runs.iter().map(|r| r.events).sum();
    runs.sort_by(|a, b| a.per_s.total_cmp(&b.per_s));
    let mut r = runs.get(runs.len().saturating_sub(1) / 2)?.clone();
    r.events = events;
    Some(r)
}

fn rate(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e4 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// The prediction table: every figure labelled PREDICTED, each design's
/// ratio to linux beside the bound's (AT MOST), a design at its bound
/// reported as "at least" (limited by other shared state); the caveats;
/// and the stored validation labelled as stored.
pub fn table(o: &PredictOutput) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nPREDICTION (simulated, not measured) for {} ({}), workload {}, {} cost, {:.0} us per iteration on the host",
        o.machine.name, o.machine.description, o.workload, o.cost, o.iteration_ns / 1e3,
    );
    if !o.locks.is_empty() {
        let _ = writeln!(
            s,
            "locks, as the profiles hold them: {}",
            o.locks.join("; ")
        );
        let _ = writeln!(s, "{}", o.scale);
    } else if !o.lock.is_empty() {
        let _ = writeln!(s, "locks: {}; {}", o.lock, o.scale);
    }
    for c in &o.caveats {
        let _ = writeln!(s, "CAVEAT: {c}");
    }
    for p in &o.placement {
        let _ = writeln!(s, "{p}");
    }
    let _ = writeln!(
        s,
        "{:<16} {:>5} {:>10} {:>24} {:>14} {:>6} {:>6} {:>6}  wait by call site (% of CPU time)",
        "design",
        "cpus",
        "execs/s",
        "x linux (PREDICTED)",
        "bound x linux",
        "spin%",
        "wait%",
        "cont%",
    );
    let linux = o.curves.iter().find(|c| c.design == "linux");
    for c in &o.curves {
        for p in &c.points {
            let cells = point_cells(linux, c, p, o.seconds);
            let _ = writeln!(
                s,
                "{:<16} {:>5} {:>10} {:>24} {:>14} {:>5.1}% {:>5.1}% {:>5.1}%  {}",
                c.design,
                p.cpus,
                rate(p.per_s),
                cells.ratio,
                cells.bound,
                100.0 * p.spin_share,
                100.0 * p.wait_share,
                p.contended_pct,
                cells.sites
            );
        }
    }
    let _ = writeln!(
        s,
        "x linux: the design's predicted execs/s over linux's at the same CPU count; {} \
         bound x linux: AT MOST, the no-reverse-map bound over linux (no design can pass it).",
        reading_rule()
    );
    for u in unranked(o) {
        let _ = writeln!(s, "{u}");
    }
    let _ = writeln!(s, "profiles:");
    for c in &o.curves {
        let _ = writeln!(
            s,
            "  {}: {} holds/iteration, {:.0} ns of reverse-map time on the host; {}",
            c.design, c.holds_per_iteration, c.model_rmap_ns, c.profile_notes
        );
    }
    for a in &o.assumptions {
        let _ = writeln!(s, "assumed: {a}");
    }
    match &o.stored_validation {
        None => {
            let _ = writeln!(
                s,
                "stored validation: none found (aspace predict --validate writes one)"
            );
        }
        Some(v) => {
            let _ = writeln!(s, "{}", v.label(Path::new(&o.validation)));
        }
    }
    s
}

/// The CPU counts where two or more designs (linux aside) are at or near
/// their bounds, in words: their order there is not a ranking (each is
/// "at least" its figure, or undecided), for the text and the HTML. Read
/// from the same [`Curve::reading`] as the cells.
pub fn unranked(o: &PredictOutput) -> Vec<String> {
    let cpus = o.cpu_counts();
    let mut out = Vec::new();
    for n in cpus {
        let mut at = Vec::new();
        let mut near = Vec::new();
        for c in o.curves.iter().filter(|c| c.design != "linux") {
            let Some(p) = c.points.iter().find(|p| p.cpus == n) else {
                continue;
            };
            match c.reading(n, p.per_s) {
                Reading::AtBound => at.push(c.design.as_str()),
                Reading::NearBound => near.push(c.design.as_str()),
                Reading::Point => {}
            }
        }
        if at.len() + near.len() < 2 {
            continue;
        }
        let mut who = Vec::new();
        if !at.is_empty() {
            who.push(format!("{} at the bound", at.join(", ")));
        }
        if !near.is_empty() {
            who.push(format!("{} near the bound", near.join(", ")));
        }
        out.push(format!(
            "at {n} CPUs, {}: their order is not a ranking (each is at least its figure, or not decided)",
            who.join(", ")
        ));
    }
    out
}

/// The rule of [`Curve::reading`] in words, for the text and the HTML.
pub fn reading_rule() -> String {
    let lo = 100.0 * AT_BOUND / (1.0 + RUN_TO_RUN);
    let hi = 100.0 * AT_BOUND * (1.0 + RUN_TO_RUN);
    format!(
        "\">= r, at bound\": the design reaches {hi:.1}% or more of its no-reverse-map bound there, \
         and the bound itself stays under {lo:.1}% of linear scaling, so the rest of what an exec \
         shares limits it: at least r, not a point. \
         \"r, near bound\": the share of the bound, or the bound's share of linear scaling, lies \
         within {:.0}% of the {:.0}% line ({lo:.1}-{hi:.1}%), as far as two runs of one command may \
         differ: whether the reverse map or the rest limits the design is not decided; r is the \
         simulated point, and at least r if the rest limits it. A plain r is a point.",
        100.0 * RUN_TO_RUN,
        100.0 * AT_BOUND
    )
}

/// Throughput against CPUs per design, labelled as a prediction: small
/// multiples of at most four designs beside linux (grey), on a log-2 CPU axis
/// ([`crate::plot`]).
pub fn svg(o: &PredictOutput) -> String {
    use crate::plot::{chunk, render, Figure, Kind, Line, Pt, COLORS, REFERENCE};
    let line = |c: &Curve, color: &'static str, reference: bool| Line {
        label: format!("{} {}", c.design, c.call_pattern),
        color,
        kind: Kind::Predicted,
        reference,
        points: c
            .points
            .iter()
            .map(|p| Pt {
                x: f64::from(p.cpus),
                y: p.per_s,
                note: format!(
                    "{} at {} CPUs: {} execs/s PREDICTED",
                    c.design,
                    p.cpus,
                    rate(p.per_s)
                ),
                ..Pt::default()
            })
            .collect(),
    };
    let linux = o.curves.iter().find(|c| c.design == "linux");
    let reference = linux.map(|c| line(c, REFERENCE, true));
    let others: Vec<Line> = o
        .curves
        .iter()
        .filter(|c| c.design != "linux" || reference.is_none())
        .enumerate()
        .map(|(i, c)| line(c, COLORS[i % COLORS.len()], false))
        .collect();
    let panels = chunk(others, reference.as_ref(), 4, |g| {
        g.iter()
            .map(|l| l.label.split(' ').next().unwrap_or("").to_owned())
            .collect::<Vec<_>>()
            .join(", ")
    });
    render(&Figure {
        title: format!(
            "PREDICTION: {} {} execs/s vs CPUs (simulated, not measured)",
            o.machine.name, o.workload
        ),
        notes: vec![
            "Dashed, hollow markers: predicted by the simulator. Grey: linux, in every panel for reference."
                .into(),
        ],
        x_label: "CPUs (copies), log scale".into(),
        y_label: "execs/s".into(),
        shade_above: None,
        panels,
        columns: 0,
    }) + "\n"
}

/// Runs `aspace predict`.
/// The numeric arguments' ranges, checked before anything runs: each bad
/// value gets an error naming its flag, the value and the range.
pub fn check_numbers(a: &PredictArgs) -> Result<(), String> {
    for (flag, v) in [
        ("--exec-ns", a.exec_ns),
        ("--model-exec-ns", a.model_exec_ns),
    ] {
        if let Some(ns) = v {
            if !(ns.is_finite() && (1e3..=1e9).contains(&ns)) {
                return Err(format!(
                    "{flag}: {ns} must be a time per iteration in [1000, 1e9] ns (1 us to 1 s)"
                ));
            }
        }
    }
    if a.exec_ns.is_some() && a.model_cost && !a.kernel_work {
        return Err(
            "--exec-ns: the real kernel's cost of an iteration is not used with --model-cost (without --kernel-work): give --model-exec-ns for the model's own exec"
                .into(),
        );
    }
    if !(a.seconds.is_finite() && a.seconds > 0.0 && a.seconds <= 100.0) {
        return Err(format!("--seconds: {} must be in (0, 100]", a.seconds));
    }
    if a.resident > 100_000 {
        return Err(format!("--resident: {} is more than 100000", a.resident));
    }
    Ok(())
}

pub fn run(a: PredictArgs) -> Result<(), String> {
    check_numbers(&a)?;
    if a.validate {
        return validate::run(&a);
    }
    if let Some(from) = &a.from {
        let measured = a
            .measured
            .as_deref()
            .ok_or("--from compares a stored prediction: give the measurements with --measured")?;
        let text = crate::input::read_text(from, "--from", crate::input::RESULTS_CAP)?;
        let o: PredictOutput = serde_json::from_str(&text)
            .map_err(|e| format!("--from: {} is not a predict.json: {e}", from.display()))?;
        let pattern = o
            .curves
            .first()
            .map_or("per-vma", |c| c.call_pattern.as_str());
        let m = compare::load(measured, pattern)?;
        print!("{}", compare::table(&o, &m, measured));
        return Ok(());
    }
    let mut m = machine_arg(&a.machine)?;
    overlap_arg(&a, &mut m)?;
    if let Some(ns) = a.model_exec_ns {
        m.model_exec_ns = Some(ns);
        // Timed here with --binary, as given for the target.
        m.model_exec_binary = None;
        m.sources.insert(
            "model_exec_ns".into(),
            format!(
                "given by --model-exec-ns ({ns:.0} ns), of {}",
                a.binary.display()
            ),
        );
    }
    let pattern = pattern_arg(&a.call_pattern)?;
    let cpus = cpus_arg(a.cpus.as_deref(), &m)?;
    let model_share = match &a.model_share {
        Some(_) if !a.model_cost => {
            return Err("--model-share: the model's shared lines apply with --model-cost".into())
        }
        Some(f) => Some(model::load(f)?),
        None => None,
    };
    // Read before the work, so that a bad file fails at once.
    let measured = match &a.measured {
        Some(p) => Some((p, compare::load(p, pattern.name())?)),
        None => None,
    };
    // Where the bench recorded its threads' CPUs (on a machine no larger
    // than this one), those points are simulated on them.
    let bench_placed = match &a.measured {
        Some(p) => compare::load_placements(p, pattern.name(), &a.workload)?,
        None => Default::default(),
    };
    type AtPoint = std::collections::BTreeMap<(String, u32), compare::RecordedPlacement>;
    let (recorded_at, too_big): (AtPoint, AtPoint) = bench_placed
        .at
        .into_iter()
        .partition(|(_, r)| r.cpus.iter().all(|&c| c < m.cpus()));
    let too_big: Vec<String> = too_big
        .iter()
        .map(|((d, t), r)| format!("{d} at {t}: CPUs {:?}", r.cpus))
        .collect();
    let designs = match &a.designs {
        Some(s) => crate::parse_designs(s)?,
        None => Design::ALL.to_vec(),
    };
    let shell = match a.workload.as_str() {
        "execl" => false,
        "shell" => true,
        w => return Err(format!("--workload: {w:?} is not execl or shell")),
    };
    recorder::check(&a.binary)?;
    // Nothing is recorded from saved profiles: the host's load does not
    // enter (their own recording's caveats are in their notes).
    let busy = if a.profiles.is_some() {
        None
    } else {
        busy_gate(a.busy_ok)?
    };
    let host = if a.model_cost {
        match &a.host {
            Some(p) => Machine::load(p).map_err(|e| e.to_string())?,
            None => host_without_calibration(),
        }
    } else {
        host_arg(a.host.as_deref(), &a.binary)?
    };
    let mut plan = Plan::new(
        m.clone(),
        host.clone(),
        shell,
        a.binary.clone(),
        a.resident,
        a.model_cost,
        a.seconds,
    );
    if let Some(ns) = a.exec_ns {
        plan.target_iteration_ns = Some(ns);
    }
    plan.kernel_work = a.kernel_work;
    plan.model_share = model_share;
    plan.lock = a.lock.as_deref().map(|l| {
        if l == "rwsem" {
            LockKind::KernelRwsem
        } else {
            LockKind::ParkingLot
        }
    });
    // Without a host calibration the host's clock is measured, never
    // taken as a nominal one.
    plan.measure_host = a.host.is_none();
    // Saved profiles carry their own scale (`recorded_ghz`): no hold is
    // recorded or timed here. What `Plan::finish` adds for a real exec
    // comes from the exec's measurement saved with them
    // (`use_saved_exec_share`); a folder saved before s40 has none and it
    // is measured again (its count of shared lines varies from run to
    // run); with --kernel-work the model's own exec is timed again: the
    // output says so.
    let scale = match &a.profiles {
        Some(dir) => Scale {
            factor: 1.0,
            source: format!(
                "as saved in {} (each profile's recorded_ghz), no hold recorded or timed here{}",
                dir.display(),
                use_saved_exec_share(&plan, dir, &a.binary)?
            ),
        },
        None => plan.scale()?.clone(),
    };
    eprintln!(
        "aspace predict: recorded times x {:.3} ({})",
        scale.factor, scale.source
    );
    match &a.profiles {
        Some(dir) => eprintln!(
            "aspace predict: reading {} saved profile(s) from {} (nothing recorded), then simulating {} CPU counts on {}",
            designs.len(),
            dir.display(),
            cpus.len(),
            m.name
        ),
        None => eprintln!(
            "aspace predict: recording {} profile(s) ({} slots each), then simulating {} CPU counts on {}",
            designs.len(),
            m.cpus(),
            cpus.len(),
            m.name
        ),
    }
    let recorded: Vec<Profile> = designs
        .iter()
        .map(|&d| match &a.profiles {
            Some(dir) => load_recorded(dir, d),
            None => plan.record(d, pattern),
        })
        .collect::<Result<_, _>>()?;
    // A recording on a busy host says so in each profile's notes, so that
    // its saved profiles still say so when simulated again (`caveats`).
    let recorded: Vec<Profile> = match busy.filter(|&b| b > crate::calibrate::BUSY_SHARE) {
        Some(b) if a.profiles.is_none() => recorded
            .into_iter()
            .map(|mut p| {
                p.notes = format!(
                    "{}; {BUSY_NOTE} (other work took {:.0}% of its CPU time, --busy-ok)",
                    p.notes,
                    100.0 * b
                );
                p
            })
            .collect(),
        _ => recorded,
    };
    if let Some(dir) = &a.profiles {
        // An explicit --lock only (`plan.lock`: None without one).
        check_saved_locks(a.lock.as_deref().zip(plan.lock), dir, &recorded)?;
    }
    let profiles: Vec<Profile> = recorded
        .iter()
        .map(|p| plan.finish(p.clone()))
        .collect::<Result<_, _>>()?;
    if let Some(dir) = &a.save_profiles {
        save_profiles(dir, &plan, &profiles, &recorded)?;
    }
    let t0 = std::time::Instant::now();
    let on = |label: &str, n: u32| {
        recorded_at
            .get(&(label.to_owned(), n))
            .map(|r| r.cpus.clone())
    };
    let preds = simulate_all_placed(&m, &profiles, &cpus, a.seconds, a.overlap(), &|p, n| {
        on(&profiles[p].label, n)
    })?;
    // A profile that is all holds has no bound (nothing is left without
    // them): its curve gets none.
    let bound_of: Vec<Option<Profile>> = profiles.iter().map(|p| p.without_holds().ok()).collect();
    let bound_profiles: Vec<Profile> = bound_of.iter().flatten().cloned().collect();
    // The bound of a design runs where the design ran.
    let bound_design: Vec<&str> = profiles
        .iter()
        .zip(&bound_of)
        .filter(|(_, b)| b.is_some())
        .map(|(p, _)| p.label.as_str())
        .collect();
    let mut simulated = simulate_all_placed(
        &m,
        &bound_profiles,
        &cpus,
        a.seconds,
        a.overlap(),
        &|p, n| on(bound_design[p], n),
    )?
    .into_iter();
    let bounds: Vec<Vec<Prediction>> = bound_of
        .iter()
        .map(|b| match b {
            Some(_) => simulated.next().unwrap_or_default(),
            None => Vec::new(),
        })
        .collect();
    eprintln!(
        "aspace predict: simulation took {:.1} s wall ({} points and their bounds)",
        t0.elapsed().as_secs_f64(),
        profiles.len() * cpus.len()
    );
    let curves: Vec<Curve> = profiles
        .iter()
        .zip(preds)
        .zip(bounds)
        .map(|((p, points), bound)| Curve {
            design: p.label.clone(),
            call_pattern: p.call_pattern.clone(),
            holds_per_iteration: p.holds_per_iteration(),
            model_rmap_ns: p.times().0,
            profile_notes: p.notes.clone(),
            points,
            bound_per_s: bound.iter().map(|b| b.per_s).collect(),
            readings: Vec::new(),
        })
        .map(|mut c| {
            c.readings = c
                .points
                .iter()
                .map(|p| match c.design.as_str() {
                    "linux" => Reading::Point,
                    _ => c.reading(p.cpus, p.per_s),
                })
                .collect();
            c
        })
        .collect();
    let mut placement = vec![assumed_placement(&m)];
    if !recorded_at.is_empty() || !bench_placed.shared.is_empty() {
        placement[0] = format!("{} (every point not listed below)", placement[0]);
    }
    for ((d, t), r) in &recorded_at {
        if profiles.iter().any(|p| &p.label == d) && cpus.contains(t) {
            placement.push(format!(
                "placement of {d} at {t} CPUs: recorded by the bench ({}, repeat {} of {} samples with a placement, the median: {} execs/s): CPUs {:?}{}",
                a.measured.as_deref().map_or(String::new(), |p| p.display().to_string()),
                r.repeat,
                r.samples,
                rate(r.per_s),
                r.cpus,
                r.shards.map_or(String::new(), |s| format!(", {s} of the design's shards")),
            ));
        }
    }
    for ((d, t), seen) in &bench_placed.shared {
        if profiles.iter().any(|p| &p.label == d) && cpus.contains(t) {
            placement.push(format!(
                "placement of {d} at {t} CPUs: recorded, but the median sample's {t} threads ran on CPUs {seen:?} (time-sliced, fewer CPUs than threads): one copy per CPU cannot stand for it, assumed instead"
            ));
        }
    }
    for t in &too_big {
        placement.push(format!(
            "placement of {t}: recorded, but on CPUs this machine ({} CPUs) does not have: assumed instead",
            m.cpus()
        ));
    }
    let m_for_notes = m.clone();
    // What the simulated profiles hold, whatever --lock said.
    let (lock_word, lock_lines) = lock_labels(&profiles);
    let out = PredictOutput {
        kind: "PREDICTION (simulated, not measured)".into(),
        machine: m,
        host,
        workload: a.workload.clone(),
        iteration_ns: if a.model_cost && !a.kernel_work {
            profiles.first().map_or(0.0, |p| p.times().0 + p.times().1)
        } else {
            plan.real_iteration_ns().unwrap_or(0.0)
        },
        seconds: a.seconds,
        cost: plan.cost_name().into(),
        lock: lock_word,
        locks: lock_lines,
        scale: format!("recorded times x {:.3}: {}", scale.factor, scale.source),
        caveats: caveats(busy, &profiles),
        assumptions: assumptions(&m_for_notes, &profiles, a.overlap()),
        validation: a.validation.display().to_string(),
        stored_validation: crate::predicted::StoredValidation::load(&a.validation),
        curves,
        placement,
    };
    print!("{}", table(&out));
    if let Some((p, measured)) = &measured {
        print!("{}", compare::table(&out, measured, p));
    }
    std::fs::create_dir_all(&a.out)
        .map_err(|e| format!("cannot create {}: {e}", a.out.display()))?;
    let json = a.json.clone().unwrap_or_else(|| a.out.join("predict.json"));
    let text = serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?;
    std::fs::write(&json, text + "\n")
        .map_err(|e| format!("cannot write {}: {e}", json.display()))?;
    let svg_path = a.out.join("predict.svg");
    std::fs::write(&svg_path, svg(&out))
        .map_err(|e| format!("cannot write {}: {e}", svg_path.display()))?;
    let html_path = a.out.join("report.html");
    std::fs::write(&html_path, host::predict_page(&out))
        .map_err(|e| format!("cannot write {}: {e}", html_path.display()))?;
    println!(
        "\nWrote {}, {} and {} (PREDICTIONS, not measurements).",
        json.display(),
        svg_path.display(),
        html_path.display()
    );
    Ok(())
}

/// Writes a `--save-profiles` folder: each profile as simulated
/// (`<design>.profile.json`) and as recorded (`<design>.recorded.json`,
/// what `--profiles` reads), and, where the plan's cost adds a real exec's
/// other shared lines, the exec's measurement they were finished with
/// ([`kernel::SAVED_EXEC_SHARE`], what `--profiles` uses again).
fn save_profiles(
    dir: &Path,
    plan: &Plan,
    profiles: &[Profile],
    recorded: &[Profile],
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for (name, list) in [("profile", profiles), ("recorded", recorded)] {
        for p in list {
            let f = dir.join(format!("{}.{name}.json", p.label));
            let text = serde_json::to_string(p).map_err(|e| e.to_string())?;
            std::fs::write(&f, text).map_err(|e| format!("cannot write {}: {e}", f.display()))?;
        }
    }
    // An earlier measurement left in the folder is not these profiles'.
    if plan.needs_exec_share() {
        kernel::save_exec_share(dir, plan.exec_share()?)
    } else {
        let _ = std::fs::remove_file(dir.join(kernel::SAVED_EXEC_SHARE));
        Ok(())
    }
}

/// For a `--profiles` run whose cost adds a real exec's other shared lines
/// ([`Plan::needs_exec_share`]): gives `plan` the exec's measurement saved
/// in `dir` ([`kernel::load_exec_share`]), so that two runs from one folder
/// simulate the same profiles; the words for the scale's source. A folder
/// without one (saved before session s40) gets the program measured again
/// here, said on stderr and in the output (two such runs can differ); a
/// saved measurement of another program than `--binary` is refused.
fn use_saved_exec_share(plan: &Plan, dir: &Path, binary: &Path) -> Result<String, String> {
    if !plan.needs_exec_share() {
        return Ok(String::new());
    }
    let own = if plan.kernel_work {
        ", and the model's own exec is timed again here"
    } else {
        ""
    };
    let saved = dir.join(kernel::SAVED_EXEC_SHARE);
    match kernel::load_exec_share(dir)? {
        Some(share) => {
            let same = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
            if same(&share.program) != same(binary) {
                return Err(format!(
                    "--profiles: {} measured {}, not --binary {}: pass --binary {} (the program those profiles were recorded for), or record again",
                    saved.display(),
                    share.program.display(),
                    binary.display(),
                    share.program.display()
                ));
            }
            let words = format!(
                "; the real exec's other shared lines as saved in {} ({} on {}, {}: {} files, {} private pages; not measured again){own}",
                saved.display(),
                share.source,
                share.host,
                share.measured_utc(),
                share.files.len(),
                share.private_pages
            );
            plan.use_exec_share(share)?;
            Ok(words)
        }
        None => {
            eprintln!(
                "aspace predict: {} has no {} (saved before session s40): measuring {} again here; its count of shared lines can differ from run to run, so two runs from this folder can differ. Record again with --save-profiles to keep one measurement with the profiles.",
                dir.display(),
                kernel::SAVED_EXEC_SHARE,
                binary.display()
            );
            Ok(format!(
                "; the real exec's other shared lines are MEASURED AGAIN here ({} has no {}, saved before session s40: {} under ptrace, whose count can differ from run to run; record again with --save-profiles to keep one){own}",
                dir.display(),
                kernel::SAVED_EXEC_SHARE,
                binary.display()
            ))
        }
    }
}

/// Reads `design`'s profile as an earlier run recorded it (`--profiles`).
fn load_recorded(dir: &Path, design: Design) -> Result<Profile, String> {
    let f = dir.join(format!("{}.recorded.json", design.name()));
    let text = crate::input::read_text(&f, "--profiles", crate::input::RESULTS_CAP)?;
    let p: Profile = serde_json::from_str(&text)
        .map_err(|e| format!("--profiles: {} is not a recorded profile: {e}", f.display()))?;
    p.validate()
        .map_err(|e| format!("--profiles: {}: {e}", f.display()))?;
    if p.label != design.name() {
        return Err(format!(
            "--profiles: {} holds design {:?}, not {}",
            f.display(),
            p.label,
            design.name()
        ));
    }
    Ok(p)
}

/// Checks that this host is quiet enough to record on: waits up to three
/// checks 2 s apart while other work takes more than
/// [`crate::calibrate::BUSY_SHARE`] of its CPU time, then refuses, unless
/// `busy_ok` (the output then carries a caveat). Returns the share seen.
pub fn busy_gate(busy_ok: bool) -> Result<Option<f64>, String> {
    let (share, quiet) = crate::calibrate::wait_for_quiet(if busy_ok { 1 } else { 3 });
    refuse_busy(share, quiet, busy_ok)?;
    Ok(share)
}

/// [`busy_gate`]'s decision: a host that stayed busy is refused unless
/// `busy_ok`.
fn refuse_busy(share: Option<f64>, quiet: bool, busy_ok: bool) -> Result<(), String> {
    if !quiet && !busy_ok {
        return Err(format!(
            "this host is busy: other work takes {:.0}% of its CPU time (above {:.0}%), and a recording on a busy host gives other hold and exec times, and may leave an adaptive design unadapted, so the answer would differ from a quiet run's; stop the other work and run again, or pass --busy-ok to record anyway (the output then says so)",
            100.0 * share.unwrap_or(1.0),
            100.0 * crate::calibrate::BUSY_SHARE
        ));
    }
    Ok(())
}

/// The host as the model sees it, without a calibration: the OS's CPU and
/// node counts and a nominal clock (used with `--model-cost`, where only
/// ratios between the host's own figures matter).
pub fn host_without_calibration() -> Machine {
    let mut m = Machine::by_name("device-16").expect("built-in");
    let cpus = crate::machine::nproc() as u32;
    m.name = "host".into();
    m.description = "this host, uncalibrated (nominal latencies)".into();
    m.cores_per_node = cpus.max(1);
    m.cores_per_llc = cpus.max(1);
    m
}

/// A predicted point's cells, as the text and HTML tables print them.
pub(crate) struct Cells {
    /// The ratio to linux at the same CPU count (PREDICTED), ">= r, at
    /// bound" when the design is at its bound, "r, near bound" near it
    /// ([`Curve::reading`]), "-" when linux has no such point.
    pub ratio: String,
    /// The bound's ratio to linux (AT MOST), "-" when not simulated.
    pub bound: String,
    /// The wait by call site ("site share%", % of CPU time).
    pub sites: String,
}

/// The cells of design `c`'s point `p` (see [`Cells`]).
pub(crate) fn point_cells(linux: Option<&Curve>, c: &Curve, p: &Prediction, seconds: f64) -> Cells {
    let lin = linux
        .and_then(|l| l.points.iter().find(|q| q.cpus == p.cpus))
        .filter(|q| q.per_s > 0.0)
        .map(|q| q.per_s);
    let bound = c.bound_at(p.cpus);
    // linux is the reference (1.00), never read against its bound.
    let reading = if c.design == "linux" {
        Reading::Point
    } else {
        c.reading(p.cpus, p.per_s)
    };
    let ratio = match (lin, reading) {
        (None, _) => "-".into(),
        (Some(l), Reading::AtBound) => format!(">= {:.2}, at bound", p.per_s / l),
        (Some(l), Reading::NearBound) => format!("{:.2}, near bound", p.per_s / l),
        (Some(l), Reading::Point) => format!("{:.2}", p.per_s / l),
    };
    let bound = match (lin, bound) {
        (Some(l), Some(b)) => format!("<= {:.2}", b / l),
        _ => "-".into(),
    };
    let total = f64::from(p.cpus) * 1e9 * seconds;
    let sites: Vec<String> = p
        .sites
        .iter()
        .filter(|x| x.spin_ns + x.sleep_ns > 0.0)
        .map(|x| {
            format!(
                "{} {:.1}",
                x.site,
                100.0 * (x.spin_ns + x.sleep_ns) / total.max(1.0)
            )
        })
        .collect();
    Cells {
        ratio,
        bound,
        sites: sites.join(", "),
    }
}

/// The words a recording on a busy host leaves in each profile's notes.
pub const BUSY_NOTE: &str = "recorded on a busy host";

/// What may make a run's figures differ from another's, from the
/// recording host's busy share and the profiles' notes.
pub fn caveats(busy: Option<f64>, profiles: &[Profile]) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(b) = busy.filter(|&b| b > crate::calibrate::BUSY_SHARE) {
        out.push(format!(
            "recorded on a busy host (other work took {:.0}% of its CPU time, --busy-ok): hold and exec times are this host's under load",
            100.0 * b
        ));
    } else {
        // Saved profiles (`--profiles`): their own recording's load, as
        // their notes say.
        let busy_saved: Vec<&str> = profiles
            .iter()
            .filter(|p| p.notes.contains(BUSY_NOTE))
            .map(|p| p.label.as_str())
            .collect();
        if !busy_saved.is_empty() {
            out.push(format!(
                "{}: {BUSY_NOTE}, as the saved profiles' notes say: hold and exec times are that host's under load",
                busy_saved.join(", ")
            ));
        }
    }
    for p in profiles {
        if p.notes.contains("host too busy") {
            out.push(format!(
                "{}: the host was too busy for many-CPU lock traffic while recording, so an adaptive design may be recorded unadapted",
                p.label
            ));
        }
    }
    out
}

/// A lock kind's name in the output (as `aspace bench --lock` spells the
/// bench's own: `rwsem`, `parking_lot`).
pub fn kind_name(k: LockKind) -> &'static str {
    match k {
        LockKind::KernelRwsem => "rwsem",
        LockKind::ParkingLot => "parking_lot",
    }
}

/// [`held_kinds`]: per role (reverse map, the rest of the exec), each
/// kind held with its locks' names.
type HeldKinds = [Vec<(LockKind, Vec<String>)>; 2];

/// The kinds of the locks `p`'s holds take, apart by role: those of the
/// reverse map ([`predict::Site::is_rmap`]) and those of the rest of the
/// exec (`Site::ExecLock`), each kind with the locks' names. A lock no
/// hold takes is in neither.
fn held_kinds(p: &Profile) -> HeldKinds {
    let mut out: HeldKinds = [Vec::new(), Vec::new()];
    for st in p.slots.iter().flat_map(|s| &s.steps) {
        let predict::Step::Hold(h) = st else { continue };
        let Some(l) = p.locks.get(h.lock as usize) else {
            continue;
        };
        let role = &mut out[usize::from(!h.site.is_rmap())];
        let i = match role.iter().position(|(k, _)| *k == l.kind) {
            Some(i) => i,
            None => {
                role.push((l.kind, Vec::new()));
                role.len() - 1
            }
        };
        if !role[i].1.contains(&l.name) {
            role[i].1.push(l.name.clone());
        }
    }
    out
}

/// The locks `profiles` hold, read from the profiles (never from the
/// plan's `--lock`: saved profiles keep the locks they were recorded
/// with): the reverse-map locks' kind for [`PredictOutput::lock`] (kinds
/// joined by `+` where designs differ), and one line per role for
/// [`PredictOutput::locks`]: the reverse map's kinds, each with the designs
/// that hold it, then the exec's other locks (each kind with its locks'
/// names), or that none is simulated as a lock.
pub fn lock_labels(profiles: &[Profile]) -> (String, Vec<String>) {
    let kinds: Vec<HeldKinds> = profiles.iter().map(held_kinds).collect();
    let mut lines = Vec::new();
    let mut words = Vec::new();
    for (role, what) in [(0, "reverse-map locks"), (1, "the exec's other locks")] {
        // Each kind, in order of first appearance, with the designs (and
        // for the exec's locks, the names) that hold it.
        let mut by_kind: Vec<(LockKind, Vec<&str>, Vec<&str>)> = Vec::new();
        for (p, k) in profiles.iter().zip(&kinds) {
            for (kind, names) in &k[role] {
                let i = match by_kind.iter().position(|(x, _, _)| x == kind) {
                    Some(i) => i,
                    None => {
                        by_kind.push((*kind, Vec::new(), Vec::new()));
                        by_kind.len() - 1
                    }
                };
                by_kind[i].1.push(p.label.as_str());
                for n in names {
                    if !by_kind[i].2.contains(&n.as_str()) {
                        by_kind[i].2.push(n.as_str());
                    }
                }
            }
        }
        if role == 0 {
            words = by_kind.iter().map(|(k, _, _)| kind_name(*k)).collect();
        }
        if by_kind.is_empty() {
            lines.push(if role == 0 {
                format!("{what}: none held in the profiles")
            } else {
                format!(
                    "{what}: none simulated as a lock (the rest of what an exec shares enters as shared lines only)"
                )
            });
            continue;
        }
        let every = |designs: &[&str]| designs.len() == profiles.len();
        let parts: Vec<String> = by_kind
            .iter()
            .map(|(k, designs, names)| {
                let whose = if every(designs) && by_kind.len() == 1 {
                    "every design".to_owned()
                } else {
                    designs.join(", ")
                };
                if role == 0 {
                    format!("{} ({whose})", kind_name(*k))
                } else {
                    format!("{} ({}; {whose})", kind_name(*k), names.join(", "))
                }
            })
            .collect();
        lines.push(format!("{what}: {}", parts.join("; ")));
    }
    (words.join("+"), lines)
}

/// With `--profiles`, an explicit `--lock` must be what the saved
/// profiles' reverse-map locks are: the lock is chosen when recording (the
/// model runs with it), and nothing is recorded from saved profiles.
/// `lock` is the flag's value as given and its kind.
fn check_saved_locks(
    lock: Option<(&str, LockKind)>,
    dir: &Path,
    recorded: &[Profile],
) -> Result<(), String> {
    let Some((flag, want)) = lock else {
        return Ok(());
    };
    let other: Vec<String> = recorded
        .iter()
        .filter_map(|p| {
            let [rmap, _] = held_kinds(p);
            let kinds: Vec<&str> = rmap
                .iter()
                .filter(|(k, _)| *k != want)
                .map(|(k, _)| kind_name(*k))
                .collect();
            (!kinds.is_empty()).then(|| format!("{} holds {}", p.label, kinds.join(", ")))
        })
        .collect();
    if other.is_empty() {
        return Ok(());
    }
    Err(format!(
        "--lock {flag}: the saved profiles in {} were recorded with other reverse-map locks ({}); the lock is chosen when recording, and --profiles records nothing: drop --lock, or record again with it",
        dir.display(),
        other.join("; ")
    ))
}

/// The costs `m` did not measure that a simulation of `profiles` uses,
/// with the documented values taken instead.
pub fn assumptions(m: &Machine, profiles: &[Profile], overlap: bool) -> Vec<String> {
    let mut out = Vec::new();
    let parking = profiles.iter().any(|p| {
        p.locks
            .iter()
            .any(|l| l.kind == ::predict::LockKind::ParkingLot)
    });
    if parking {
        for c in [m.pause(), m.yield_cost(), m.futex_wake()] {
            if let Some(a) = c.assumed {
                out.push(a.to_owned());
            }
        }
        out.push(clock_rule(m));
    }
    if m.speed_by_cpus.is_empty() {
        out.push(format!(
            "{}: no per-CPU speed with many CPUs busy was measured (speed_by_cpus): every CPU keeps its one-CPU speed",
            m.name
        ));
    }
    out.push(transfer_rule(m, overlap, profiles));
    out.push(work_placement(profiles));
    out
}

/// How the clock reads inside a lock's held time (the bench's hold
/// timing, parking_lot's fair-timeout check) were charged, for the
/// output: not at all without the machine's `clock_read_ns`, else that
/// cost with its source (a stand-in named as such).
fn clock_rule(m: &Machine) -> String {
    match m.clock_read_ns {
        None => format!(
            "{}: no clock read measured (clock_read_ns): the clock reads inside a lock's held time (the bench's hold timing, parking_lot's fair-timeout check) are not charged",
            m.name
        ),
        Some(ns) => format!(
            "clock reads inside a lock's held time (the bench's timed holds, parking_lot's fair-timeout check): {ns:.1} ns a read ({})",
            m.sources
                .get("clock_read_ns")
                .map_or("no source", String::as_str)
        ),
    }
}

/// Where the profiles put an exec's work between its holds, for the
/// output: as recorded (s37 on), or spread evenly (older recordings).
fn work_placement(profiles: &[Profile]) -> String {
    let placed: Vec<&str> = profiles
        .iter()
        .filter(|p| p.work_placed)
        .map(|p| p.label.as_str())
        .collect();
    if placed.len() == profiles.len() {
        "work between holds: where the recording found it (each hold's place in the exec, recorded)"
            .into()
    } else if placed.is_empty() {
        "work between holds: spread evenly over the gaps (recorded before holds were placed)".into()
    } else {
        format!(
            "work between holds: where the recording found it for {}; spread evenly for the others (recorded before holds were placed)",
            placed.join(", ")
        )
    }
}

/// How this run charges line transfers, for the output: serial, or the
/// overlap factors with their sources (which say STAND-IN where
/// `--overlap-from` supplied them) and which written lines stay in a
/// hold's chain (those its walk loaded first, where `profiles` recorded
/// them; otherwise none, a lower bound).
fn transfer_rule(m: &Machine, overlap: bool, profiles: &[Profile]) -> String {
    if m.line_overlap.is_none() && m.rmw_overlap.is_none() {
        let stores = match m.miss_slots {
            Some(k) if overlap => format!(
                "; a touch's plain stores overlap by 1/{k}, the core's documented fill buffers ({})",
                m.sources.get("miss_slots").map_or("no source", String::as_str)
            ),
            _ => String::new(),
        };
        return format!("line transfers: serial, one at a time (the machine's description has no calibrated line_overlap / rmw_overlap: an upper bound on what they cost; locked updates wait for the memory operations before them){stores}");
    }
    if !overlap {
        return "line transfers: serial, one at a time (--serial: the machine's line_overlap / rmw_overlap unused; an upper bound on what they cost)".into();
    }
    let f = |v: Option<f64>, k: &str| match v {
        Some(v) => format!(
            "{k} {v:.3} ({})",
            m.sources.get(k).map_or("no source", String::as_str)
        ),
        None => format!("{k}: none, serial"),
    };
    let old: Vec<&str> = profiles
        .iter()
        .filter(|p| !p.loads_recorded)
        .map(|p| p.label.as_str())
        .collect();
    let loads = if old.is_empty() {
        "; a hold's written lines that its walk loaded first stay in its serial chain (recorded)"
            .to_owned()
    } else {
        format!(
            "; a hold's written lines that its walk loaded first stay in its serial chain, as recorded, except in {} (recorded before the loads were: every written line overlaps, a lower bound)",
            old.join(", ")
        )
    };
    format!(
        "line transfers overlap by the machine's calibrated factors (the default; --serial charges them one at a time): {}; {}{loads}",
        f(m.line_overlap, "line_overlap"),
        f(m.rmw_overlap, "rmw_overlap")
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use predict::Step;

    /// A kernel-cost plan for device-16 whose real iteration is given
    /// (nothing timed on this host).
    fn kernel_plan(binary: &str) -> Plan {
        let m = Machine::by_name("device-16").unwrap();
        let mut host = host_without_calibration();
        host.exec_ns = Some(400_000.0);
        let mut plan = Plan::new(m, host, false, binary.into(), 0, false, 0.05);
        plan.target_iteration_ns = Some(400_000.0);
        plan
    }

    /// A recorded iteration as the recorder gives it: an exit unlink, work,
    /// an mmap link, work; two slots.
    fn recorded_profile() -> Profile {
        let mut p = kernel::tests::profile_with_teardown(2);
        p.label = "linux".into();
        p
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("s40-repro-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// `--save-profiles` keeps the exec's measurement and `--profiles`
    /// uses it: two runs from one folder finish the same profiles and
    /// predict the same rates, from the saved measurement, not a new one.
    /// The saved measurement is of /bin/true with made-up page counts (800
    /// pages of libc), which no run of /bin/true maps: a loader that
    /// measured again would finish different profiles. Mutants run: the
    /// loader ignoring the saved file (`load_exec_share` -> `Ok(None)`);
    /// `save_profiles` not writing it (s40).
    #[test]
    fn saved_profiles_predict_the_same_twice_from_the_saved_exec_measurement() {
        let dir = scratch("saved");
        let mut share = kernel::tests::share();
        share.files[0].path = "/bin/true".into();
        share.files[1].pages = 800;
        share.program = "/bin/true".into();
        share.measured_unix_s = 1_795_000_000;
        let saving = kernel_plan("/bin/true");
        saving.use_exec_share(share.clone()).unwrap();
        let recorded = vec![recorded_profile()];
        let profiles: Vec<Profile> = recorded
            .iter()
            .map(|p| saving.finish(p.clone()))
            .collect::<Result<_, _>>()
            .unwrap();
        save_profiles(&dir, &saving, &profiles, &recorded).unwrap();
        let run = || {
            let plan = kernel_plan("/bin/true");
            let words = use_saved_exec_share(&plan, &dir, Path::new("/bin/true")).unwrap();
            assert!(words.contains("as saved in"), "{words}");
            assert!(words.contains("2026-11-18"), "{words}");
            assert_eq!(plan.exec_share().unwrap(), &share, "the saved one");
            let p = load_recorded(&dir, Design::Linux).unwrap();
            let p = plan.finish(p).unwrap();
            let m = plan.machine.clone();
            let r = simulate_all(&m, std::slice::from_ref(&p), &[1, 2], 0.05, false).unwrap();
            (p, r[0].iter().map(|x| x.per_s).collect::<Vec<f64>>())
        };
        let (a, ra) = run();
        let (b, rb) = run();
        assert_eq!(a, b, "the same profile twice");
        assert_eq!(a, profiles[0], "the profile the saving run simulated");
        assert_eq!(ra, rb, "the same predictions twice");
        // 800 pages of libc: its 3 touches each are in the profile.
        let touches: usize = a.slots[0]
            .steps
            .iter()
            .map(|s| match s {
                Step::Touch(t) => t.written.len() + t.stored.len(),
                _ => 0,
            })
            .sum();
        assert_eq!(touches, kernel::exec_touches(&share).0.len());
        assert!(touches > 3 * 800);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A folder saved before s40 (no exec measurement) is measured again,
    /// and the words say so; a saved measurement of another program than
    /// --binary is refused with the program to pass; a model-cost plan
    /// needs none and saves none.
    #[test]
    fn an_old_folder_is_measured_again_and_said_so_and_another_program_is_refused() {
        let dir = scratch("old");
        std::fs::create_dir_all(&dir).unwrap();
        let plan = kernel_plan("/bin/true");
        let words = use_saved_exec_share(&plan, &dir, Path::new("/bin/true")).unwrap();
        assert!(words.contains("MEASURED AGAIN"), "{words}");
        assert!(words.contains("--save-profiles"), "{words}");
        let mut share = kernel::tests::share();
        share.program = "/x/other".into();
        kernel::save_exec_share(&dir, &share).unwrap();
        let e = use_saved_exec_share(&kernel_plan("/bin/true"), &dir, Path::new("/bin/true"))
            .unwrap_err();
        assert!(e.contains("pass --binary /x/other"), "{e}");
        std::fs::write(dir.join(kernel::SAVED_EXEC_SHARE), "{").unwrap();
        let e = use_saved_exec_share(&kernel_plan("/bin/true"), &dir, Path::new("/bin/true"))
            .unwrap_err();
        assert!(e.contains("not a saved exec measurement"), "{e}");
        let mut model = kernel_plan("/bin/true");
        model.model_cost = true;
        assert_eq!(
            use_saved_exec_share(&model, &dir, Path::new("/x")).unwrap(),
            ""
        );
        save_profiles(&dir, &model, &[], &[]).unwrap();
        assert!(
            !dir.join(kernel::SAVED_EXEC_SHARE).exists(),
            "a stale one removed"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A prediction of `per_s` at `cpus` with no breakdown (also used by `compare`'s tests).
    pub(crate) fn point(cpus: u32, per_s: f64) -> Prediction {
        Prediction {
            cpus,
            per_s,
            spin_share: 0.0,
            wait_share: 0.0,
            hold_share: 0.0,
            transfer_share: 0.0,
            contended_pct: 0.0,
            locks: vec![],
            sites: vec![],
            lines: vec![],
            hold_lines: vec![],
            events: 0,
        }
    }

    fn curve(design: &str, per_s: f64, bound: f64) -> Curve {
        Curve {
            design: design.into(),
            call_pattern: "per-vma".into(),
            holds_per_iteration: 38,
            model_rmap_ns: 1000.0,
            profile_notes: String::new(),
            points: vec![point(16, per_s)],
            bound_per_s: vec![bound],
            readings: Vec::new(),
        }
    }

    /// The output says how transfers were charged: serial without factors;
    /// with them, each factor and its source (a stand-in named as such).
    #[test]
    fn the_output_names_the_transfer_rule_and_a_stand_in() {
        let mut m = Machine::by_name("device-16").unwrap();
        let mut p = Profile {
            label: "new".into(),
            workload: "execl".into(),
            call_pattern: "per-vma".into(),
            locks: Vec::new(),
            lines: Vec::new(),
            slots: Vec::new(),
            recorded_ghz: 1.0,
            notes: String::new(),
            exit_vmas_per_hold: 0.0,
            work_placed: true,
            loads_recorded: true,
            hold_timing: false,
        };
        let new = [p.clone()];
        assert!(transfer_rule(&m, true, &new).starts_with("line transfers: serial"));
        m.line_overlap = Some(0.033);
        m.sources.insert(
            "line_overlap".into(),
            "STAND-IN, not measured on this machine: from h.json".into(),
        );
        // The one switch: factors present, --serial, serial.
        let off = transfer_rule(&m, false, &new);
        assert!(
            off.starts_with("line transfers: serial") && off.contains("unused"),
            "{off}"
        );
        let r = transfer_rule(&m, true, &new);
        assert!(r.contains("line_overlap 0.033 (STAND-IN"), "{r}");
        assert!(r.contains("rmw_overlap: none, serial"), "{r}");
        assert!(
            r.contains("loaded first stay in its serial chain (recorded)"),
            "{r}"
        );
        // A profile recorded before the loads were: named, a lower bound.
        p.loads_recorded = false;
        p.label = "old".into();
        let t = transfer_rule(&m, true, &[new[0].clone(), p]);
        assert!(
            t.contains("except in old") && t.contains("lower bound"),
            "{t}"
        );
    }

    /// Overlap is the default, `--serial` turns it off, and the two
    /// (and `--serial` with a stand-in's factors) cannot be asked at once.
    #[test]
    fn transfers_overlap_by_default_and_serial_turns_it_off() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            a: PredictArgs,
        }
        let parse = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("predict").chain(args.iter().copied()))
                .map(|c| c.a.overlap())
        };
        assert!(parse(&[]).unwrap(), "overlap by default");
        assert!(parse(&["--overlap"]).unwrap(), "--overlap still accepted");
        assert!(!parse(&["--serial"]).unwrap());
        assert!(parse(&["--serial", "--overlap"]).is_err());
        assert!(parse(&["--serial", "--overlap-from", "x.json"]).is_err());
        assert!(parse(&["--overlap-from", "x.json"]).unwrap());
    }

    /// `--overlap` asks for the calibrated overlap: refused on a machine
    /// without either factor (every built-in), accepted where it has one,
    /// its own or `--overlap-from`'s; without the flag nothing is refused.
    #[test]
    fn an_explicit_overlap_needs_the_factors() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            a: PredictArgs,
        }
        let args = |v: &[&str]| {
            Cli::try_parse_from(std::iter::once("predict").chain(v.iter().copied()))
                .unwrap()
                .a
        };
        let bare = Machine::by_name("hygon-384").unwrap();
        let e = overlap_arg(&args(&["--overlap"]), &mut bare.clone()).unwrap_err();
        assert!(
            e.contains("--overlap: hygon-384") && e.contains("--overlap-from"),
            "{e}"
        );
        assert!(overlap_arg(&args(&[]), &mut bare.clone()).is_ok());
        for (line, rmw) in [(Some(0.03), None), (None, Some(0.02))] {
            let mut m = bare.clone();
            m.line_overlap = line;
            m.rmw_overlap = rmw;
            assert!(overlap_arg(&args(&["--overlap"]), &mut m).is_ok());
        }
        // A stand-in's factors count.
        let d = std::env::temp_dir().join(format!("s39-overlap-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("calib.json");
        let mut from = Machine::by_name("device-16").unwrap();
        from.line_overlap = Some(0.033);
        std::fs::write(&f, serde_json::to_string(&from).unwrap()).unwrap();
        let mut m = bare.clone();
        let a = args(&["--overlap", "--overlap-from", f.to_str().unwrap()]);
        assert!(overlap_arg(&a, &mut m).is_ok());
        assert_eq!(m.line_overlap, Some(0.033));
        let _ = std::fs::remove_dir_all(&d);
    }

    /// The output says whether the clock reads inside held time were
    /// charged, and at what cost from where (a stand-in named as such).
    #[test]
    fn the_output_names_the_clock_read_and_a_stand_in() {
        let mut m = Machine::by_name("device-16").unwrap();
        assert!(clock_rule(&m).contains("not charged"), "{}", clock_rule(&m));
        m.clock_read_ns = Some(21.0);
        m.sources.insert(
            "clock_read_ns".into(),
            "STAND-IN, NOT MEASURED ON THIS MACHINE: from h.json".into(),
        );
        let r = clock_rule(&m);
        assert!(r.contains("21.0 ns a read (STAND-IN"), "{r}");
        assert!(!r.contains("not charged"), "{r}");
    }

    /// One answer per page: this run's figures labelled as predictions,
    /// a design at its bound as "at least", the bound as "at most", the
    /// busy caveat in the text and the HTML, and the stored validation
    /// labelled as stored with its date and commit, never as this run.
    #[test]
    fn the_output_labels_predictions_bounds_caveats_and_stored_validation() {
        let m = Machine::by_name("device-16").unwrap();
        let stored = crate::predicted::StoredValidation {
            date: "2026-11-27".into(),
            commit: "abc1234".into(),
            host: "a test host".into(),
            checks: vec![],
        };
        let o = PredictOutput {
            kind: "PREDICTION (simulated, not measured)".into(),
            machine: m.clone(),
            host: m.clone(),
            workload: "execl".into(),
            iteration_ns: 20_000.0,
            seconds: 1.0,
            cost: "model".into(),
            lock: String::new(),
            locks: Vec::new(),
            scale: String::new(),
            caveats: caveats(Some(0.6), &[]),
            assumptions: assumptions(&m, &[], false),
            validation: DEFAULT_VALIDATION.into(),
            stored_validation: Some(stored),
            curves: vec![
                curve("linux", 20_000.0, 300_000.0),
                curve("aspace", 290_000.0, 300_000.0),
                curve("sharded", 60_000.0, 300_000.0),
            ],
            placement: vec![assumed_placement(&m)],
        };
        let text = table(&o);
        assert!(text.contains("PREDICTION (simulated, not measured)"));
        assert!(
            text.contains("placement: assumed, the scheduler's scan"),
            "the placement is labelled: {text}"
        );
        assert!(text.contains(">= 14.50, at bound"), "{text}");
        assert!(text.contains("3.00") && !text.contains(">= 3.00"));
        assert!(text.contains("<= 15.00"), "the bound, at most");
        assert!(text.contains("CAVEAT: recorded on a busy host"));
        assert!(text.contains("assumed: line transfers: serial"), "{text}");
        assert!(text.contains("STORED validation, not this run"));
        assert!(text.contains("2026-11-27") && text.contains("abc1234"));
        assert!(!text.contains("validation of these predictions"));
        let html = host::predict_page(&o);
        assert!(html.contains("Caveat:</strong> recorded on a busy host"));
        assert!(html.contains("Stored validation, not this run"));
        assert!(html.contains("2026-11-27") && html.contains("abc1234"));
        assert!(html.contains("&gt;= 14.50, at bound") || html.contains(">= 14.50, at bound"));
    }

    /// A profile `label` whose slot takes reverse-map lock 0 of `rmap`'s
    /// kind, and, with `exec`, the exec's own lock 1 of that kind.
    fn locked(label: &str, rmap: LockKind, exec: Option<LockKind>) -> Profile {
        let hold = |lock: u32, site: predict::Site| {
            predict::Step::Hold(predict::Hold {
                lock,
                write: true,
                site,
                hold_ns: 100.0,
                written: vec![],
                read: vec![],
                loaded_first: vec![],
            })
        };
        let mut locks = vec![predict::LockDesc {
            name: "map0#0".into(),
            kind: rmap,
            line: 0,
            contended_line: None,
        }];
        let mut steps = vec![predict::Step::Work(500.0), hold(0, predict::Site::MmapLink)];
        if let Some(k) = exec {
            locks.push(predict::LockDesc {
                name: "pcpu_alloc_mutex".into(),
                kind: k,
                line: 1,
                contended_line: None,
            });
            steps.push(hold(1, predict::Site::ExecLock));
        }
        Profile {
            label: label.into(),
            workload: "execl".into(),
            call_pattern: "per-vma".into(),
            locks,
            lines: vec![predict::LineKind::LockWord, predict::LineKind::LockWord],
            slots: vec![predict::CpuProfile { cpu: 0, steps }],
            recorded_ghz: 3.0,
            notes: String::new(),
            exit_vmas_per_hold: 0.0,
            work_placed: true,
            loads_recorded: true,
            hold_timing: false,
        }
    }

    /// The output's locks come from the profiles, by role: saved rwsem
    /// recordings say rwsem whatever the plan's default; designs that
    /// differ are named apart; the exec's own locks are labelled as such,
    /// with their own kind.
    #[test]
    fn the_locks_are_labelled_from_the_profiles_by_role_and_kind() {
        let rw = LockKind::KernelRwsem;
        let pl = LockKind::ParkingLot;
        let (word, lines) =
            lock_labels(&[locked("linux", rw, None), locked("numa_split", rw, None)]);
        assert_eq!(word, "rwsem");
        assert_eq!(lines[0], "reverse-map locks: rwsem (every design)");
        assert!(
            lines[1].starts_with("the exec's other locks: none simulated"),
            "{lines:?}"
        );
        let (word, lines) = lock_labels(&[locked("linux", rw, None), locked("sharded", pl, None)]);
        assert_eq!(word, "rwsem+parking_lot");
        assert_eq!(
            lines[0],
            "reverse-map locks: rwsem (linux); parking_lot (sharded)"
        );
        // The model's parking_lot reverse map beside the kernel's mutex.
        let (word, lines) =
            lock_labels(&[locked("linux", pl, Some(rw)), locked("aspace", pl, None)]);
        assert_eq!(
            word, "parking_lot",
            "the exec's lock is not the reverse map's"
        );
        assert_eq!(lines[0], "reverse-map locks: parking_lot (every design)");
        assert_eq!(
            lines[1],
            "the exec's other locks: rwsem (pcpu_alloc_mutex; linux)"
        );
        // A lock no hold takes is not reported.
        let mut idle = locked("linux", rw, None);
        idle.locks.push(predict::LockDesc {
            name: "unused".into(),
            kind: pl,
            line: 1,
            contended_line: None,
        });
        assert_eq!(lock_labels(&[idle]).0, "rwsem");
        // The text and the HTML print them.
        let m = Machine::by_name("device-16").unwrap();
        let (lock, locks) = lock_labels(&[locked("linux", rw, None)]);
        let o = PredictOutput {
            kind: "PREDICTION (simulated, not measured)".into(),
            machine: m.clone(),
            host: m.clone(),
            workload: "execl".into(),
            iteration_ns: 20_000.0,
            seconds: 1.0,
            cost: "model".into(),
            lock,
            locks,
            scale: "recorded times x 1.000: as saved".into(),
            caveats: vec![],
            assumptions: vec![],
            validation: DEFAULT_VALIDATION.into(),
            stored_validation: None,
            curves: vec![curve("linux", 20_000.0, 300_000.0)],
            placement: vec![],
        };
        let text = table(&o);
        assert!(
            text.contains(
                "locks, as the profiles hold them: reverse-map locks: rwsem (every design)"
            ),
            "{text}"
        );
        assert!(!text.contains("parking_lot"), "{text}");
        let html = host::predict_page(&o);
        assert!(
            html.contains("reverse-map locks: rwsem (every design)"),
            "{html}"
        );
    }

    /// With saved profiles, an explicit `--lock` of another kind is refused
    /// (it would not be simulated), the same kind or none is accepted.
    #[test]
    fn an_explicit_lock_must_match_the_saved_profiles() {
        let rw = LockKind::KernelRwsem;
        let saved = [locked("linux", rw, Some(LockKind::ParkingLot))];
        let dir = Path::new("saved");
        let e = check_saved_locks(Some(("parking-lot", LockKind::ParkingLot)), dir, &saved)
            .unwrap_err();
        assert!(
            e.contains("--lock parking-lot") && e.contains("linux holds rwsem"),
            "{e}"
        );
        assert!(
            check_saved_locks(Some(("rwsem", rw)), dir, &saved).is_ok(),
            "the exec's lock does not count"
        );
        assert!(check_saved_locks(None, dir, &saved).is_ok());
    }

    /// A design's curve at 1 and `cpus` CPUs: its bound `one` at 1 CPU
    /// and `bound` at `cpus`, its point there `share` of the bound.
    fn curve_at(cpus: u32, one: f64, bound: f64, share: f64) -> Curve {
        Curve {
            design: "sharded".into(),
            call_pattern: "per-vma".into(),
            holds_per_iteration: 38,
            model_rmap_ns: 1000.0,
            profile_notes: String::new(),
            points: vec![point(1, 0.9 * one), point(cpus, share * bound)],
            bound_per_s: vec![one, bound],
            readings: Vec::new(),
        }
    }

    /// The reading at and around its thresholds: the point's share of its
    /// bound (a bound at 10% of linear scaling: clearly sublinear), and
    /// the bound's own scaling (a point at 99% of its bound).
    #[test]
    fn a_point_near_its_bound_is_read_the_same_on_either_side_of_90_percent() {
        let (lo, hi) = (AT_BOUND / (1.0 + RUN_TO_RUN), AT_BOUND * (1.0 + RUN_TO_RUN));
        assert!((lo - 0.857).abs() < 1e-3 && (hi - 0.945).abs() < 1e-9);
        let at = |share: f64| {
            let c = curve_at(96, 1000.0, 9600.0, share);
            c.reading(96, share * 9600.0)
        };
        let eps = 1e-9;
        for (share, want) in [
            (0.5, Reading::Point),
            (lo * (1.0 - eps), Reading::Point),
            (lo * (1.0 + eps), Reading::NearBound),
            // s38's pair: sharded at 96 at 89.9% and 90.3% of its bound.
            (0.899, Reading::NearBound),
            (0.903, Reading::NearBound),
            (hi * (1.0 - eps), Reading::NearBound),
            (hi * (1.0 + eps), Reading::AtBound),
            (1.0, Reading::AtBound),
        ] {
            assert_eq!(at(share), want, "at {share} of the bound");
        }
        // The bound's scaling, the point at 99% of it: at 96 CPUs the
        // bound is `lin` of 96 times its one-CPU rate.
        let scaled = |lin: f64| {
            let c = curve_at(96, 1000.0, lin * 96_000.0, 0.99);
            c.reading(96, 0.99 * lin * 96_000.0)
        };
        for (lin, want) in [
            (0.5, Reading::AtBound),
            (lo * (1.0 - eps), Reading::AtBound),
            (lo * (1.0 + eps), Reading::NearBound),
            (hi * (1.0 - eps), Reading::NearBound),
            (hi * (1.0 + eps), Reading::Point),
            (1.0, Reading::Point),
        ] {
            assert_eq!(scaled(lin), want, "a bound at {lin} of linear");
        }
        // Far below the bound, a near-linear bound does not matter: a point.
        let c = curve_at(96, 1000.0, 0.9 * 96_000.0, 0.5);
        assert_eq!(c.reading(96, 0.5 * 0.9 * 96_000.0), Reading::Point);
        // One CPU (its bound is its own one-CPU rate), no bound, a zero
        // bound: points. No one-CPU bound: sublinear beyond one CPU.
        let c = curve_at(96, 1000.0, 9600.0, 1.0);
        assert_eq!(c.reading(1, 1000.0), Reading::Point);
        assert_eq!(c.reading(48, 1e6), Reading::Point, "no bound at 48");
        let mut z = c.clone();
        z.bound_per_s[1] = 0.0;
        assert_eq!(z.reading(96, 9600.0), Reading::Point);
        let mut no_one = c.clone();
        no_one.points.remove(0);
        no_one.bound_per_s.remove(0);
        assert_eq!(no_one.reading(96, 9600.0), Reading::AtBound);
        let mut alone = no_one.clone();
        alone.points[0].cpus = 1;
        assert_eq!(alone.reading(1, 9600.0), Reading::Point);
    }

    /// The cells: "at bound" as "at least", "near bound" beside the point,
    /// a plain point; linux (the reference) never read against its bound;
    /// the legend gives the band.
    #[test]
    fn the_cells_say_how_each_point_reads() {
        let linux = curve("linux", 10_000.0, 10_500.0);
        let cell = |share: f64| {
            let mut c = curve("sharded", share * 132_500.0, 132_500.0);
            c.design = "sharded".into();
            point_cells(Some(&linux), &c, &c.points[0].clone(), 1.0).ratio
        };
        assert_eq!(cell(0.899), "11.91, near bound");
        assert_eq!(cell(0.903), "11.96, near bound");
        assert_eq!(cell(0.99), ">= 13.12, at bound");
        assert_eq!(cell(0.5), "6.62");
        let lin = point_cells(Some(&linux), &linux, &linux.points[0].clone(), 1.0);
        assert_eq!(
            lin.ratio, "1.00",
            "linux at 95% of its bound is the reference"
        );
        assert_eq!(lin.bound, "<= 1.05");
        // Two designs at or near their bounds at one CPU count: not ranked.
        let o = PredictOutput {
            kind: String::new(),
            machine: Machine::by_name("device-16").unwrap(),
            host: Machine::by_name("device-16").unwrap(),
            workload: "execl".into(),
            iteration_ns: 1.0,
            seconds: 1.0,
            cost: "model".into(),
            lock: String::new(),
            locks: vec![],
            scale: String::new(),
            caveats: vec![],
            assumptions: vec![],
            validation: String::new(),
            stored_validation: None,
            curves: vec![
                linux.clone(),
                curve("aspace", 132_000.0, 132_500.0),
                curve("sharded", 0.9 * 132_500.0, 132_500.0),
            ],
            placement: vec![],
        };
        assert_eq!(
            unranked(&o),
            vec!["at 16 CPUs, aspace at the bound, sharded near the bound: their order is not a ranking (each is at least its figure, or not decided)".to_owned()]
        );
        assert!(table(&o).contains("their order is not a ranking"));
        assert!(host::predict_page(&o).contains("their order is not a ranking"));
        let mut one = o.clone();
        one.curves[2] = curve("sharded", 0.5 * 132_500.0, 132_500.0);
        assert!(
            unranked(&one).is_empty(),
            "one design at its bound: nothing to rank"
        );
        let rule = reading_rule();
        assert!(
            rule.contains("94.5% or more") && rule.contains("85.7-94.5%"),
            "{rule}"
        );
    }

    /// A busy recording's profiles carry the note; simulated again from
    /// them, the output still says the host was busy (once, naming the
    /// designs), and says so of a warm-up the host was too busy for.
    #[test]
    fn saved_profiles_say_their_recording_host_was_busy() {
        let mut busy = locked("linux", LockKind::KernelRwsem, None);
        busy.notes =
            format!("warm-up; {BUSY_NOTE} (other work took 40% of its CPU time, --busy-ok)");
        let quiet = locked("aspace", LockKind::KernelRwsem, None);
        let c = caveats(None, &[busy.clone(), quiet.clone()]);
        assert_eq!(c.len(), 1, "{c:?}");
        assert!(
            c[0].starts_with("linux: recorded on a busy host, as the saved"),
            "{c:?}"
        );
        let c = caveats(Some(0.4), std::slice::from_ref(&busy));
        assert_eq!(c.len(), 1, "the recording run says it once: {c:?}");
        assert!(c[0].contains("40%"), "{c:?}");
        assert!(caveats(None, std::slice::from_ref(&quiet)).is_empty());
        let mut unadapted = quiet;
        unadapted.notes = "warm-up: host too busy for the hand-over".into();
        let c = caveats(None, &[unadapted]);
        assert!(c[0].starts_with("aspace: the host was too busy"), "{c:?}");
    }

    /// A `--profiles` run says what it measures again here: nothing for
    /// the model's cost; for the bench's kernel cost (`--kernel-work`), the
    /// model's own exec (timed again), the exec's shared lines as saved.
    #[test]
    fn saved_profiles_say_what_is_measured_again() {
        let dir = scratch("words");
        std::fs::create_dir_all(&dir).unwrap();
        let mut share = kernel::tests::share();
        share.program = "/bin/true".into();
        kernel::save_exec_share(&dir, &share).unwrap();
        let b = Path::new("/bin/true");
        let mut model = kernel_plan("/bin/true");
        model.model_cost = true;
        assert_eq!(use_saved_exec_share(&model, &dir, b).unwrap(), "");
        model.kernel_work = true;
        let k = use_saved_exec_share(&model, &dir, b).unwrap();
        assert!(k.contains("model's own exec is timed again"), "{k}");
        assert!(
            k.contains("as saved in") && !k.contains("MEASURED AGAIN"),
            "{k}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_busy_host_is_refused_unless_allowed() {
        let e = refuse_busy(Some(0.7), false, false).unwrap_err();
        assert!(e.contains("busy") && e.contains("--busy-ok"), "{e}");
        assert!(refuse_busy(Some(0.7), false, true).is_ok());
        assert!(refuse_busy(Some(0.01), true, false).is_ok());
        assert!(
            caveats(Some(0.01), &[]).is_empty(),
            "a quiet host: no caveat"
        );
    }

    #[test]
    fn args_parse_and_reject() {
        let m = Machine::by_name("hygon-384").unwrap();
        assert_eq!(
            cpus_arg(None, &m).unwrap(),
            vec![1, 2, 4, 8, 16, 32, 64, 128, 256, 384]
        );
        assert_eq!(cpus_arg(Some("4, 2,4"), &m).unwrap(), vec![2, 4]);
        assert!(cpus_arg(Some("0"), &m).is_err());
        assert!(cpus_arg(Some("385"), &m).is_err());
        assert!(cpus_arg(Some("x"), &m).is_err());
        assert!(machine_arg("nope-machine").is_err());
        assert_eq!(machine_arg("emr-112").unwrap().name, "emr-112");
        assert!(pattern_arg("batched").is_ok());
        assert!(pattern_arg("sometimes").is_err());
    }

    /// A bench run of `design` at `threads` with a recorded placement per
    /// sample (main CPUs) as results.json has it.
    fn placed_runs(design: &str, samples: &[(f64, &[u32])]) -> String {
        let runs: Vec<String> = samples
            .iter()
            .enumerate()
            .map(|(i, (per_s, cpus))| {
                let threads: Vec<String> = cpus
                    .iter()
                    .map(|c| format!(r#"{{"cpu":{c},"cpus":[{c}],"samples":9}}"#))
                    .collect();
                format!(
                    r#"{{"workload":"execl","design":"{design}","threads":{},"repeat":{i},"ops_per_sec":{per_s},"call_pattern":"per-vma","placement":{{"every":16,"cpus":[],"shards":null,"shards_seen":null,"threads":[{}]}}}}"#,
                    cpus.len(),
                    threads.join(",")
                )
            })
            .collect();
        format!(r#"{{"runs":[{}],"summary":[]}}"#, runs.join(","))
    }

    /// `--measured`: a sharded point whose median sample ran on two of its
    /// 8-CPU groups is predicted from those CPUs, not from the one group
    /// another sample used; a file without placements (an old one: the
    /// device's survey) changes nothing, to the event.
    #[test]
    fn a_recorded_two_shard_placement_moves_shardeds_point() {
        if recorder::check(Path::new("/bin/true")).is_err() {
            eprintln!("skipped: the model cannot exec /bin/true here");
            return;
        }
        let m = Machine::by_name("device-16").unwrap();
        let p = recorder::record_profile(
            &m,
            &recorder::small_true_config(
                Design::Sharded,
                recorder::Cost::Model,
                LockKind::ParkingLot,
            ),
        )
        .expect("a sharded profile");
        let profiles = vec![p];
        let one: &[u32] = &[0, 1, 2, 3, 4, 5, 6, 7];
        let two: &[u32] = &[0, 1, 2, 3, 8, 9, 10, 11];
        let at = |text: &str| {
            let rec = compare::placements(text, "per-vma", "execl").unwrap();
            let label = profiles[0].label.clone();
            simulate_all_placed(&m, &profiles, &[8], 0.05, false, &|_, n| {
                rec.at.get(&(label.clone(), n)).map(|r| r.cpus.clone())
            })
            .unwrap()[0][0]
                .clone()
        };
        // The median of three samples (by rate) is the middle one.
        let two_median = placed_runs("sharded", &[(30e3, one), (60e3, two), (90e3, one)]);
        let one_median = placed_runs("sharded", &[(30e3, two), (60e3, one), (90e3, two)]);
        let rec = compare::placements(&two_median, "per-vma", "execl").unwrap();
        assert_eq!(rec.at[&("sharded".to_owned(), 8)].cpus, two.to_vec());
        assert_eq!(rec.at[&("sharded".to_owned(), 8)].repeat, 1);
        let (on_two, on_one) = (at(&two_median), at(&one_median));
        assert!(
            on_two.per_s > on_one.per_s * 1.02,
            "two shards {} execs/s, one shard {}",
            on_two.per_s,
            on_one.per_s
        );
        // An old results.json (no placement) gives exactly today's answer.
        let old = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/results/device-16-survey/bench/results.json"
        ))
        .expect("the device's bench results");
        assert_eq!(
            compare::placements(&old, "per-vma", "execl").unwrap(),
            compare::Placements::default()
        );
        let today = simulate_all(&m, &profiles, &[8], 0.05, false).unwrap();
        assert_eq!(at(&old), today[0][0], "identical prediction");
        assert!(compare::parse_bench(&old, "per-vma").is_ok());
    }

    /// Threads of the median sample that shared a main CPU take another
    /// CPU they were seen on; a point with none left stays assumed.
    #[test]
    fn shared_main_cpus_take_another_seen_cpu_or_stay_assumed() {
        let run = |threads: &str| {
            format!(
                r#"{{"runs":[{{"workload":"execl","design":"sharded","threads":2,"ops_per_sec":1.0,"call_pattern":"per-vma","placement":{{"every":16,"cpus":[],"shards":1,"shards_seen":1,"threads":[{threads}]}}}}]}}"#
            )
        };
        let moved = run(r#"{"cpu":3,"cpus":[3]},{"cpu":3,"cpus":[3,5]}"#);
        let r = compare::placements(&moved, "per-vma", "execl").unwrap();
        assert_eq!(r.at[&("sharded".to_owned(), 2)].cpus, vec![3, 5]);
        assert_eq!(r.at[&("sharded".to_owned(), 2)].shards, Some(1));
        let stuck = run(r#"{"cpu":3,"cpus":[3]},{"cpu":3,"cpus":[3]}"#);
        let stuck = compare::placements(&stuck, "per-vma", "execl").unwrap();
        assert!(stuck.at.is_empty());
        assert_eq!(stuck.shared[&("sharded".to_owned(), 2)], vec![3]);
        assert_eq!(
            compare::placements(&moved, "batched", "execl").unwrap(),
            compare::Placements::default()
        );
        assert!(compare::placements(&run(r#"{"cpus":[3]}"#), "per-vma", "execl").is_err());
    }
}
