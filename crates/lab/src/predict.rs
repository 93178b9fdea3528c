//! `aspace predict`: what each design does on a machine of many CPUs,
//! predicted from profiles recorded here and a machine description.
//!
//! 1. For each design, a profile is recorded from the real code (see
//!    [`recorder`]): one slot per CPU of the target machine, the maps built
//!    for the target's topology.
//! 2. Each iteration is stretched to the real kernel's exec cost measured
//!    by `aspace calibrate` (the non-reverse-map work of a real exec is the
//!    calibrated cost minus the model's reverse-map time), and the
//!    simulator scales it by the target's per-core speed.
//! 3. `predict::simulate` runs every design at every CPU count.
//!
//! Everything printed is labelled a PREDICTION, with the validation error
//! (docs/results/predict/) beside it: the table, `predict.json`,
//! `predict.svg`, and `report.html`, the "Predictions" section of the HTML
//! report ([`host::predict_section`]). `aspace bench` records and simulates
//! its own host the same way and puts the predicted curve beside the
//! measured one ([`host::predict_for_bench`], [`host::bench_section`]).
//!
//! What the model lacks, and how each published figure compares, is in
//! `docs/results/predict/README.md` and the simulator's module docs.

pub mod events;
pub mod host;
pub mod kernel;
pub mod recorder;
pub mod validate;

use mm::CallPattern;
use predict::{simulate, Machine, Prediction, Profile, SimConfig};
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
    /// With --validate: an `aspace bench` results.json measured on this
    /// host, to compare the 1- and 2-thread predictions with.
    #[arg(long)]
    pub measured: Option<PathBuf>,
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
    /// Also write each recorded profile here as `<design>.profile.json`
    /// (input of `predict`'s `simbench` example, for profiling the simulator).
    #[arg(long)]
    pub save_profiles: Option<PathBuf>,
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
    /// Where the validation errors are.
    pub validation: String,
    /// The validation's comparisons, where the file was found.
    pub validation_checks: Vec<validate::Check>,
    /// The curves.
    pub curves: Vec<Curve>,
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

/// The note printed beside every prediction.
pub const VALIDATION_NOTE: &str = "validation against every published figure: docs/results/predict/validation.md (aspace predict --validate)";

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
    /// Simulated seconds.
    pub seconds: f64,
    /// The recording's least warm-up ([`WARMUP`] for other machines).
    pub warmup: Duration,
    /// Each CPU execs its own copy of the binary, the libraries shared
    /// (see [`recorder::RecordConfig::own_binary`]).
    pub own_binary: bool,
    /// The real kernel's cost of one iteration on the *target*, ns, where
    /// known (its own calibration, or `--exec-ns`); otherwise the host's
    /// calibrated cost is scaled by clock.
    pub target_iteration_ns: Option<f64>,
    /// What a real exec of the binary maps (measured once, on first use).
    exec_share: std::sync::OnceLock<Result<kernel::ExecShare, String>>,
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
            seconds,
            warmup: WARMUP,
            own_binary: false,
            target_iteration_ns,
            exec_share: std::sync::OnceLock::new(),
        }
    }

    /// The real cost of one iteration, in the host's ns (the profile's
    /// unit): the target's own figure converted by clock, else the host's.
    pub fn real_iteration_ns(&self) -> Option<f64> {
        if let Some(t) = self.target_iteration_ns {
            return Some(t * self.machine.core_ghz / self.host.core_ghz);
        }
        if self.shell {
            self.host.fork_exec_ns
        } else {
            self.host.exec_ns
        }
    }

    /// What a real exec of the binary maps ([`kernel::measure_exec`]).
    pub fn exec_share(&self) -> Result<&kernel::ExecShare, String> {
        self.exec_share
            .get_or_init(|| kernel::measure_exec(&self.binary, &[]))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Records `design`'s profile for this plan's machine; for the kernel
    /// (unless `model_cost`), scaled to the real iteration cost and with
    /// the exec's other shared lines added ([`kernel::add_exec_share`]).
    pub fn profile(&self, design: Design, pattern: CallPattern) -> Result<Profile, String> {
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
        };
        let mut p = recorder::record_profile(&self.machine, &cfg)?;
        p.recorded_ghz = self.host.core_ghz;
        if !self.model_cost {
            let real = self.real_iteration_ns().ok_or(
                "the host calibration has no exec cost: run aspace calibrate, or pass --model-cost",
            )?;
            p = p.with_iteration_cost(real).map_err(|e| e.to_string())?;
            p = kernel::add_exec_share(&p, self.exec_share()?, self.own_binary);
        }
        Ok(p)
    }
}

/// Simulates every (profile, CPU count) pair on `m`, on all host CPUs.
pub fn simulate_all(
    m: &Machine,
    profiles: &[Profile],
    cpus: &[u32],
    seconds: f64,
) -> Result<Vec<Vec<Prediction>>, String> {
    let jobs: Vec<(usize, usize)> = (0..profiles.len())
        .flat_map(|p| (0..cpus.len()).map(move |c| (p, c)))
        .collect();
    let out: Mutex<Vec<Vec<Option<Prediction>>>> =
        Mutex::new(vec![vec![None; cpus.len()]; profiles.len()]);
    let next = AtomicUsize::new(0);
    let err: Mutex<Option<String>> = Mutex::new(None);
    let workers = crate::machine::nproc().clamp(1, 16);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                // Relaxed: a work counter; results go through the mutex.
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(p, c)) = jobs.get(i) else { break };
                let mut cfg = SimConfig::new(cpus[c]);
                cfg.duration_ns = seconds * 1e9;
                cfg.warmup_ns = (seconds * 5e7).min(5e7);
                cfg.work_jitter = WORK_JITTER;
                match simulate(m, &profiles[p], &cfg) {
                    Ok(r) => out.lock().unwrap_or_else(|e| e.into_inner())[p][c] = Some(r),
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
        .map(|v| v.into_iter().flatten().collect())
        .collect())
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

/// The prediction table.
pub fn table(o: &PredictOutput) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nPREDICTION (simulated, not measured) for {} ({}), workload {}, {:.0} us per iteration on the host\n{}",
        o.machine.name,
        o.machine.description,
        o.workload,
        o.iteration_ns / 1e3,
        VALIDATION_NOTE
    );
    let _ = writeln!(
        s,
        "{:<18} {:>5} {:>10} {:>8} {:>7} {:>7} {:>10}  wait by call site (% of CPU time)",
        "design", "cpus", "execs/s", "x linux", "spin%", "wait%", "contended",
    );
    let linux = o.curves.iter().find(|c| c.design == "linux");
    let notes: String = o
        .curves
        .iter()
        .map(|c| {
            format!(
                "  {}: {} holds/iteration, {:.0} ns of reverse-map time on the host; {}\n",
                c.design, c.holds_per_iteration, c.model_rmap_ns, c.profile_notes
            )
        })
        .collect();
    for c in &o.curves {
        for p in &c.points {
            let (ratio, sites) = point_cells(linux, p, o.seconds);
            let _ = writeln!(
                s,
                "{:<18} {:>5} {:>10} {:>8} {:>6.1}% {:>6.1}% {:>9.1}%  {}",
                c.design,
                p.cpus,
                rate(p.per_s),
                ratio,
                100.0 * p.spin_share,
                100.0 * p.wait_share,
                p.contended_pct,
                sites
            );
        }
    }
    let _ = write!(s, "profiles:\n{notes}");
    if o.validation_checks.is_empty() {
        let _ = writeln!(s, "validation: none found (run aspace predict --validate)");
    } else {
        let met = o.validation_checks.iter().filter(|c| c.met).count();
        let _ = writeln!(
            s,
            "validation of these predictions against published figures: {met} of {} targets met",
            o.validation_checks.len()
        );
        for c in &o.validation_checks {
            let err = c
                .error
                .map_or_else(|| "-".to_owned(), |e| format!("{e:+.1}"));
            let _ = writeln!(
                s,
                "  {} ({}): published {}, predicted {:.3}, error {err}{}",
                c.what,
                c.setting,
                c.published,
                c.predicted,
                if c.met { "" } else { "  NOT MET" }
            );
        }
    }
    s
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
pub fn run(a: PredictArgs) -> Result<(), String> {
    if a.validate {
        return validate::run(&a);
    }
    let m = machine_arg(&a.machine)?;
    let pattern = pattern_arg(&a.call_pattern)?;
    let cpus = cpus_arg(a.cpus.as_deref(), &m)?;
    let designs = match &a.designs {
        Some(s) => crate::parse_designs(s)?,
        None => Design::ALL.to_vec(),
    };
    let shell = match a.workload.as_str() {
        "execl" => false,
        "shell" => true,
        w => return Err(format!("--workload: {w:?} is not execl or shell")),
    };
    if !(a.seconds.is_finite() && a.seconds > 0.0 && a.seconds <= 100.0) {
        return Err(format!("--seconds: {} must be in (0, 100]", a.seconds));
    }
    if a.resident > 100_000 {
        return Err(format!("--resident: {} is more than 100000", a.resident));
    }
    recorder::check(&a.binary)?;
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
    eprintln!(
        "aspace predict: recording {} profile(s) ({} slots each), then simulating {} CPU counts on {}",
        designs.len(),
        m.cpus(),
        cpus.len(),
        m.name
    );
    let profiles: Vec<Profile> = designs
        .iter()
        .map(|&d| plan.profile(d, pattern))
        .collect::<Result<_, _>>()?;
    if let Some(dir) = &a.save_profiles {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        for p in &profiles {
            let f = dir.join(format!("{}.profile.json", p.label));
            let text = serde_json::to_string(p).map_err(|e| e.to_string())?;
            std::fs::write(&f, text).map_err(|e| format!("cannot write {}: {e}", f.display()))?;
        }
    }
    let t0 = std::time::Instant::now();
    let preds = simulate_all(&m, &profiles, &cpus, a.seconds)?;
    eprintln!(
        "aspace predict: simulation took {:.1} s wall ({} points)",
        t0.elapsed().as_secs_f64(),
        profiles.len() * cpus.len()
    );
    let curves: Vec<Curve> = profiles
        .iter()
        .zip(preds)
        .map(|(p, points)| Curve {
            design: p.label.clone(),
            call_pattern: p.call_pattern.clone(),
            holds_per_iteration: p.holds_per_iteration(),
            model_rmap_ns: p.times().0,
            profile_notes: p.notes.clone(),
            points,
        })
        .collect();
    let out = PredictOutput {
        kind: "PREDICTION (simulated, not measured)".into(),
        machine: m,
        host,
        workload: a.workload.clone(),
        iteration_ns: if a.model_cost {
            profiles.first().map_or(0.0, |p| p.times().0 + p.times().1)
        } else {
            plan.real_iteration_ns().unwrap_or(0.0)
        },
        seconds: a.seconds,
        validation: VALIDATION_NOTE.into(),
        validation_checks: host::load_checks(&a.validation),
        curves,
    };
    print!("{}", table(&out));
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

/// A predicted point's cells as the text and HTML tables print them: its ratio
/// to `linux` at the same CPU count ("-" when linux has no such point), and the
/// wait by call site ("site share%" for each site that waited, as % of CPU time).
pub(crate) fn point_cells(linux: Option<&Curve>, p: &Prediction, seconds: f64) -> (String, String) {
    let ratio = linux
        .and_then(|l| l.points.iter().find(|q| q.cpus == p.cpus))
        .filter(|q| q.per_s > 0.0)
        .map_or_else(|| "-".into(), |q| format!("{:.2}", p.per_s / q.per_s));
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
    (ratio, sites.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
