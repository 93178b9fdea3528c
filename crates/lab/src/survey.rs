//! `aspace survey`: everything the project wants to know about a machine, in
//! one command and one folder, within a stated time budget.
//!
//! Parts, in this order (each a child process with its own log and a
//! deadline; a part that fails or runs out of time is recorded and the
//! survey goes on):
//!
//! 1. `machine`: `lscpu`, `uname -a`, `nproc`, the NUMA nodes, memory, the
//!    load, the C compiler, and how this `aspace` was built (machine.txt);
//! 2. `execl`: the real kernel's exec path, the C program `execl.c`
//!    (`scripts/survey/execl.c`) built dynamically and statically linked, at
//!    every copy count, interleaved by round (execl.tsv);
//! 3. `bench`: `aspace bench` at every thread count, every design, per-vma
//!    calls, the model's own exec cost (bench/); its results.json records,
//!    per sample, the CPUs each (unpinned) worker ran on (`placement`);
//! 4. `calibrate`: `aspace calibrate` (calib.json);
//! 5. `predict`: `aspace predict` for this machine from that calibration,
//!    with the kernel's exec cost and with the model's (predict-kernel/,
//!    predict-model/): PREDICTIONS, checked here against parts 2 and 3;
//!    the model's with `--measured bench/results.json`, so that each point
//!    the bench recorded runs on the CPUs the bench's threads ran on;
//! 6. `bench-kernel`: `aspace bench --cost kernel` where this binary has
//!    that option (found in `aspace bench --help`), else recorded as absent;
//! 7. `maple`: maple's wall-clock criterion groups `load`, `load_hot_drawn`,
//!    `iter_full`, `iter_for`, `concurrent_read` at 10^5 entries, run by the
//!    bench executable `--maple-bench` names (maple/criterion.txt).
//!
//! The copy and thread counts are 1, 2, 4, ... below `--max-cpus` (default:
//! this machine's CPUs) and `--max-cpus` itself. The plan (every part's
//! settings and estimated time, scaled so the total fits `--budget`) is
//! printed and written first; after each part, `summary.md` and
//! `summary.tsv` are written again from whatever files exist, so a survey
//! stopped at any point leaves a usable folder. `summary.md` holds the one
//! table this is for: the real kernel's execs/s against the bench's `linux`
//! and the predictions, at every count, then each part's status.

mod summary;

use crate::input;
use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `aspace survey`'s arguments.
#[derive(clap::Args, Debug)]
pub struct SurveyArgs {
    /// The folder for every result (created; files are written as each part
    /// ends).
    #[arg(long, default_value = "aspace-survey")]
    pub out: PathBuf,
    /// The largest copy and thread count, 1 to 4096 (default: this machine's
    /// CPUs); the counts are 1, 2, 4, ... below it, and it.
    #[arg(long, value_parser = crate::count_in::<usize>(1, 4096))]
    pub max_cpus: Option<usize>,
    /// Wall-clock seconds for the whole survey, 10 to 86400 (default 420, 7
    /// minutes): every part's durations are scaled to fit, and a part that
    /// would start after the budget is skipped.
    #[arg(long, default_value_t = 420.0, value_parser = crate::rate_in(10.0, 86_400.0))]
    pub budget: f64,
    /// The settings' scale, 0 to 1 (1: the full settings), instead of the
    /// largest that fits the budget.
    #[arg(long, value_parser = crate::rate_in(0.0, 1.0))]
    pub scale: Option<f64>,
    /// The C source of the execl program (default: `execl.c` beside this
    /// binary, else `scripts/survey/execl.c` under the current directory).
    #[arg(long)]
    pub execl_src: Option<PathBuf>,
    /// maple's criterion bench executable (default: `maple-bench` beside this
    /// binary; without one the `maple` part is recorded as skipped).
    #[arg(long)]
    pub maple_bench: Option<PathBuf>,
    /// The C compiler.
    #[arg(long, default_value = "cc")]
    pub cc: String,
    /// The parts to run, comma-separated (default: all): machine, execl,
    /// bench, calibrate, predict, bench-kernel, maple.
    #[arg(long)]
    pub parts: Option<String>,
    /// Print the plan and stop.
    #[arg(long)]
    pub dry_run: bool,
}

/// The survey's parts, in the order they run.
pub const PARTS: [&str; 7] = [
    "machine",
    "execl",
    "bench",
    "calibrate",
    "predict",
    "bench-kernel",
    "maple",
];

/// The designs the bench runs (its default: every design, the ablation and
/// the bound); counted for the time estimate.
const BENCH_DESIGNS: f64 = 8.0;
/// The designs `aspace predict` records by default (every design, no bound).
const PREDICT_DESIGNS: f64 = 7.0;
/// The designs predicted when every design would not fit: today's kernel, the
/// published per-node split and this project's own.
pub const PREDICT_FEW: &str = "linux,numa_locks,aspace";
/// The share of the budget the predictions may take: the simulation's cost
/// grows with the CPU count, and the measurements come first.
const PREDICT_SHARE: f64 = 0.3;
/// maple's criterion benchmarks the filter selects (23 at 10^5 entries).
const MAPLE_BENCHMARKS: f64 = 23.0;
/// The criterion filter: the five groups at 10^5 entries.
pub const MAPLE_FILTER: &str =
    "^(load|load_hot_drawn|iter_full|iter_for|concurrent_read)/.*/100000$";

/// What the survey will do: the counts and every part's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Copy and thread counts.
    pub counts: Vec<usize>,
    /// The scale applied to the full settings (1 = the settings of the
    /// 16-core measurements of 2026-11-27).
    pub scale: f64,
    /// Seconds per execl run, and rounds of every (linkage, copies).
    pub execl_seconds: f64,
    /// Rounds of execl.
    pub execl_rounds: usize,
    /// Seconds per bench sample.
    pub bench_duration: f64,
    /// Bench repeats.
    pub bench_repeat: usize,
    /// `aspace calibrate --scale`.
    pub calibrate_scale: f64,
    /// `aspace predict --seconds`.
    pub predict_seconds: f64,
    /// `aspace predict --designs` (`None`: every design).
    pub predict_designs: Option<&'static str>,
    /// Criterion warm-up and measurement seconds.
    pub maple_warm_up: f64,
    /// Criterion measurement seconds.
    pub maple_measure: f64,
    /// (part, estimated seconds), for the parts that run.
    pub estimates: Vec<(String, f64)>,
}

/// 1, 2, 4, ... below `max`, then `max`; where `max` is itself a power of
/// two of 16 or more, also three quarters of it (12 of 16, 96 of 128): a
/// point between the last two, near the top where the curves bend.
pub fn counts(max: usize) -> Vec<usize> {
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |n| n.checked_mul(2))
        .take_while(|&n| n < max)
        .collect();
    if max >= 16 && max.is_power_of_two() {
        v.push(max / 4 * 3);
    }
    v.push(max.max(1));
    v
}

impl Plan {
    /// The plan for `counts` and `parts` at `scale` (1 = full settings), the
    /// predictions held to [`PREDICT_SHARE`] of `budget`.
    fn at(counts: &[usize], parts: &[String], scale: f64, budget: f64) -> Plan {
        let s = scale.clamp(0.0, 1.0);
        // Settings rounded as they are printed and passed on.
        let round = |x: f64, step: f64| (x / step).round() * step;
        let execl_seconds = round((2.0 * s).max(0.3), 0.01);
        let execl_rounds = if s >= 0.3 { 2 } else { 1 };
        let bench_duration = round((0.25 * s).max(0.05), 0.001);
        let bench_repeat = if s >= 0.6 {
            3
        } else if s >= 0.3 {
            2
        } else {
            1
        };
        let calibrate_scale = round(s.max(0.1), 0.01);
        let cpu_sum: f64 = counts.iter().map(|&c| c as f64).sum();
        // Two runs (kernel and model cost), each recording every design for
        // about 3.5 s and simulating a CPU-second of one design in about 0.15 s.
        let predict_cost = |designs: f64, secs: f64| 2.0 * designs * (3.5 + cpu_sum * secs * 0.15);
        let cap = PREDICT_SHARE * budget;
        let mut predict_seconds = round((0.5 * s).max(0.05), 0.01);
        let mut predict_designs = None;
        if predict_cost(PREDICT_DESIGNS, predict_seconds) > cap {
            predict_designs = Some(PREDICT_FEW);
            let few = PREDICT_FEW.split(',').count() as f64;
            let room = (cap / (2.0 * few) - 3.5) / (cpu_sum * 0.15);
            predict_seconds = round(predict_seconds.min(room).max(0.02), 0.01);
        }
        let predict_n = if predict_designs.is_some() {
            PREDICT_FEW.split(',').count() as f64
        } else {
            PREDICT_DESIGNS
        };
        let (maple_warm_up, maple_measure) =
            (round(s.max(0.2), 0.01), round((2.0 * s).max(0.3), 0.01));
        let n = counts.len() as f64;
        // Seconds, from runs on a 2-core host (conservative for bigger ones):
        // an execl run is its window plus 0.15 s of start-up and 0.5 ms a copy;
        // a bench sample its duration plus about 0.08 s of set-up (the
        // resident processes); calibrate 5 s and 25 s at scale 1 (30 s on a
        // loaded 2-core host); a criterion
        // benchmark takes its warm-up
        // and measurement plus 0.5 s of analysis, after 3 s of maple's
        // memory report.
        let estimate = |part: &str| -> f64 {
            match part {
                "machine" => 2.0,
                "execl" => {
                    2.0 + 2.0
                        * execl_rounds as f64
                        * counts
                            .iter()
                            .map(|&c| execl_seconds + 0.15 + 0.0005 * c as f64)
                            .sum::<f64>()
                }
                "bench" | "bench-kernel" => {
                    1.0 + BENCH_DESIGNS * n * bench_repeat as f64 * (bench_duration + 0.08)
                }
                "calibrate" => 5.0 + 25.0 * calibrate_scale,
                "predict" => predict_cost(predict_n, predict_seconds),
                "maple" => 3.0 + MAPLE_BENCHMARKS * (maple_warm_up + maple_measure + 0.5),
                _ => 0.0,
            }
        };
        Plan {
            counts: counts.to_vec(),
            scale: s,
            execl_seconds,
            execl_rounds,
            bench_duration,
            bench_repeat,
            calibrate_scale,
            predict_seconds,
            predict_designs,
            maple_warm_up,
            maple_measure,
            estimates: parts.iter().map(|p| (p.clone(), estimate(p))).collect(),
        }
    }

    /// The estimated seconds of every part together.
    pub fn total(&self) -> f64 {
        self.estimates.iter().map(|e| e.1).sum()
    }

    /// The largest scale (at most 1) whose estimate fits 90% of `budget`
    /// seconds (the rest is slack for what the estimates miss); the smallest
    /// settings when even they do not fit.
    pub fn fit(counts: &[usize], parts: &[String], budget: f64) -> Plan {
        let target = 0.9 * budget;
        let full = Plan::at(counts, parts, 1.0, budget);
        if full.total() <= target {
            return full;
        }
        let (mut lo, mut hi) = (0.0, 1.0);
        for _ in 0..40 {
            let mid = (lo + hi) / 2.0;
            if Plan::at(counts, parts, mid, budget).total() <= target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Plan::at(counts, parts, lo, budget)
    }

    /// The plan in words, as printed and written to plan.txt.
    pub fn text(&self, budget: f64) -> String {
        let mut s = format!(
            "aspace survey plan: counts {:?}; budget {budget:.0} s; settings at {:.0}% of the full ones \
             (2 s x 2 rounds of execl, 250 ms x 3 repeats of bench, calibrate scale 1, \
             predict 0.5 s, criterion 1 s + 2 s)\n",
            self.counts,
            100.0 * self.scale
        );
        let detail = |p: &str| match p {
            "machine" => "lscpu, uname, nproc, NUMA nodes, memory, load, compiler".to_owned(),
            "execl" => format!(
                "real kernel, execl.c dynamic and static, {} s per run, {} round(s)",
                fmt_s(self.execl_seconds),
                self.execl_rounds
            ),
            "bench" => format!(
                "aspace bench, every design, per-vma, model cost, {} ms x {} repeat(s)",
                (self.bench_duration * 1e3).round(),
                self.bench_repeat
            ),
            "calibrate" => format!("aspace calibrate --scale {}", fmt_s(self.calibrate_scale)),
            "predict" => format!(
                "aspace predict for this machine, kernel and model cost, --seconds {}, designs: {}",
                fmt_s(self.predict_seconds),
                self.predict_designs.unwrap_or("all")
            ),
            "bench-kernel" => format!(
                "aspace bench --cost kernel (where supported), as bench, {} ms x {}",
                (self.bench_duration * 1e3).round(),
                self.bench_repeat
            ),
            "maple" => format!(
                "maple criterion groups at 10^5, warm-up {} s, measurement {} s",
                fmt_s(self.maple_warm_up),
                fmt_s(self.maple_measure)
            ),
            _ => String::new(),
        };
        for (p, e) in &self.estimates {
            s.push_str(&format!("  {p:<13} about {:>4.0} s  {}\n", e, detail(p)));
        }
        s.push_str(&format!(
            "  {:<13} about {:>4.0} s (estimates from a 2-core host; each part is stopped at twice its estimate plus 20 s, and at the budget plus 15 s)\n",
            "total",
            self.total()
        ));
        s
    }
}

fn fmt_s(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The outcome of one part, as status.tsv and the summary record it.
#[derive(Clone, Debug, PartialEq)]
pub struct Status {
    /// The part.
    pub part: String,
    /// ok, failed, timed out, skipped.
    pub status: String,
    /// Wall seconds it took.
    pub seconds: f64,
    /// Why, or what it wrote.
    pub detail: String,
}

/// A file beside this binary, if there is one.
fn beside_exe(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let p = exe.parent()?.join(name);
    p.is_file().then_some(p)
}

/// Runs the survey.
pub fn run(a: SurveyArgs) -> Result<(), String> {
    let budget = a.budget;
    let max = a.max_cpus.unwrap_or_else(crate::machine::nproc);
    let parts: Vec<String> = match &a.parts {
        None => PARTS.iter().map(|p| (*p).to_owned()).collect(),
        Some(s) => {
            let mut v = Vec::new();
            for p in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                if !PARTS.contains(&p) {
                    return Err(format!("--parts: `{p}` is not one of {}", PARTS.join(", ")));
                }
                if !v.iter().any(|x: &String| x == p) {
                    v.push(p.to_owned());
                }
            }
            if v.is_empty() {
                return Err("--parts: give at least one part".into());
            }
            // In the survey's own order.
            v.sort_by_key(|p| PARTS.iter().position(|x| x == p));
            v
        }
    };
    let plan = match a.scale {
        Some(s) => Plan::at(&counts(max), &parts, s, budget),
        None => Plan::fit(&counts(max), &parts, budget),
    };
    let text = plan.text(budget);
    print!("{text}");
    if plan.total() > budget {
        println!(
            "warning: even the smallest settings need about {:.0} s, more than the budget of {budget:.0} s; \
             the parts that would start after it are skipped",
            plan.total()
        );
    }
    if a.dry_run {
        return Ok(());
    }
    input::check_output_dir(&a.out, "--out")?;
    std::fs::create_dir_all(&a.out)
        .map_err(|e| format!("--out: cannot create {}: {e}", a.out.display()))?;
    let src = a
        .execl_src
        .clone()
        .or_else(|| beside_exe("execl.c"))
        .unwrap_or_else(|| PathBuf::from("scripts/survey/execl.c"));
    // The maple part runs its bench from inside the output folder, so every
    // path it is given must not depend on the current directory.
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let maple = a
        .maple_bench
        .as_deref()
        .map(absolute)
        .or_else(|| beside_exe("maple-bench"));
    std::fs::write(a.out.join("plan.txt"), &text)
        .map_err(|e| format!("cannot write {}: {e}", a.out.join("plan.txt").display()))?;
    let mut s = Survey {
        out: absolute(&a.out),
        plan,
        budget,
        start: Instant::now(),
        statuses: Vec::new(),
        exe: crate::calibrate::own_exe()?,
    };
    for part in &parts {
        let t0 = Instant::now();
        let est = s.estimate(part);
        let left = budget - s.start.elapsed().as_secs_f64();
        let res = if left < est.min(5.0) {
            Err(Outcome::Skipped(format!(
                "{:.0} s of the budget left, the part needs about {est:.0} s",
                left.max(0.0)
            )))
        } else {
            // Twice the estimate, but never more than 15 s past the budget.
            let deadline = Duration::from_secs_f64((2.0 * est + 20.0).min(left + 15.0).max(5.0));
            match part.as_str() {
                "machine" => s.machine(&a.cc),
                "execl" => s.execl(&src, &a.cc, deadline),
                "bench" => s.bench("bench", &[], deadline),
                "calibrate" => s.calibrate(deadline),
                "predict" => s.predict(deadline),
                "bench-kernel" => s.bench_kernel(deadline),
                "maple" => s.maple(maple.as_deref(), deadline),
                _ => unreachable!("parts are checked above"),
            }
        };
        let (status, detail) = match res {
            Ok(d) => ("ok", d),
            Err(Outcome::Failed(d)) => ("failed", d),
            Err(Outcome::TimedOut(d)) => ("timed out", d),
            Err(Outcome::Skipped(d)) => ("skipped", d),
        };
        let st = Status {
            part: part.clone(),
            status: status.into(),
            seconds: t0.elapsed().as_secs_f64(),
            detail,
        };
        println!(
            "aspace survey: {} {} in {:.0} s{}",
            st.part,
            st.status,
            st.seconds,
            if st.detail.is_empty() {
                String::new()
            } else {
                format!(": {}", st.detail)
            }
        );
        s.statuses.push(st);
        s.write_summary();
    }
    println!(
        "aspace survey: done in {:.0} s; {} holds the summary table",
        s.start.elapsed().as_secs_f64(),
        a.out.join("summary.md").display()
    );
    Ok(())
}

/// Why a part did not succeed.
enum Outcome {
    Failed(String),
    TimedOut(String),
    Skipped(String),
}

struct Survey {
    out: PathBuf,
    plan: Plan,
    budget: f64,
    start: Instant,
    statuses: Vec<Status>,
    exe: PathBuf,
}

/// Runs `cmd` (its own process group) with stdout and stderr appended to
/// `log`, killing the group at `deadline`; the stdout text is returned.
fn run_logged(mut cmd: Command, log: &Path, deadline: Duration) -> Result<String, Outcome> {
    let stdout_path = log.with_extension("out");
    let out = std::fs::File::create(&stdout_path)
        .map_err(|e| Outcome::Failed(format!("cannot write {}: {e}", stdout_path.display())))?;
    let err = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| Outcome::Failed(format!("cannot write {}: {e}", log.display())))?;
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| Outcome::Failed(format!("cannot run {what}: {e}")))?;
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) => {}
            Err(e) => return Err(Outcome::Failed(format!("{what}: {e}"))),
        }
        if t0.elapsed() > deadline {
            // SAFETY: signals the process group of our own child (its id is
            // the group's, from process_group(0)).
            unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
            let _ = child.wait();
            keep_output(&stdout_path, log);
            return Err(Outcome::TimedOut(format!(
                "stopped after {:.0} s; what it wrote is kept ({})",
                deadline.as_secs_f64(),
                log.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = keep_output(&stdout_path, log);
    if status.success() {
        Ok(text)
    } else {
        let tail: Vec<String> = std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .rev()
            .filter(|l| !l.trim().is_empty())
            .take(2)
            .map(str::to_owned)
            .collect();
        Err(Outcome::Failed(format!(
            "{status}: {}",
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        )))
    }
}

/// Appends the standard output a child left in `stdout_path` to `log`, after
/// whatever went to its standard error, removes the file and returns the text.
fn keep_output(stdout_path: &Path, log: &Path) -> String {
    let text = std::fs::read_to_string(stdout_path).unwrap_or_default();
    if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(log) {
        let _ = f.write_all(text.as_bytes());
    }
    let _ = std::fs::remove_file(stdout_path);
    text
}

/// `sh -c cmd`, its output or the reason it gave none.
fn shell(cmd: &str) -> String {
    let mut c = Command::new("sh");
    c.args(["-c", cmd]);
    match c.stdin(Stdio::null()).output() {
        Ok(o) => {
            let mut t = String::from_utf8_lossy(&o.stdout).into_owned();
            t.push_str(&String::from_utf8_lossy(&o.stderr));
            t
        }
        Err(e) => format!("(cannot run sh: {e})\n"),
    }
}

impl Survey {
    fn estimate(&self, part: &str) -> f64 {
        self.plan
            .estimates
            .iter()
            .find(|e| e.0 == part)
            .map_or(0.0, |e| e.1)
    }

    fn counts_arg(&self) -> String {
        self.plan
            .counts
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    fn aspace(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.exe);
        c.args(args);
        c
    }

    fn write_summary(&self) {
        let (md, tsv) = summary::build(&self.out, &self.plan, &self.statuses, self.budget);
        // A summary that cannot be written is reported, not fatal: the
        // part's own files stand.
        for (name, text) in [("summary.md", md), ("summary.tsv", tsv)] {
            let p = self.out.join(name);
            if let Err(e) = std::fs::write(&p, text) {
                eprintln!("aspace survey: cannot write {}: {e}", p.display());
            }
        }
        let mut st = String::from("part\tstatus\tseconds\tdetail\n");
        for s in &self.statuses {
            st.push_str(&format!(
                "{}\t{}\t{:.1}\t{}\n",
                s.part,
                s.status,
                s.seconds,
                s.detail.replace(['\t', '\n'], " ")
            ));
        }
        let _ = std::fs::write(self.out.join("status.tsv"), st);
    }

    fn machine(&self, cc: &str) -> Result<String, Outcome> {
        let m = crate::machine::describe();
        let mut t = format!(
            "# aspace survey: the machine\n\naspace {} built from {} ({})\nCPU: {}; {} CPUs; {} NUMA node(s); kernel {}\n",
            env!("CARGO_PKG_VERSION"),
            m.commit,
            m.build,
            m.cpu_model,
            m.cores,
            m.nodes,
            m.kernel
        );
        for (title, cmd) in [
            ("date -u", "date -u"),
            ("uname -a", "uname -a"),
            ("nproc", "nproc"),
            ("lscpu", "lscpu"),
            (
                "NUMA",
                "numactl --hardware 2>/dev/null || for n in /sys/devices/system/node/node*; do \
                 echo \"$(basename $n): cpus $(cat $n/cpulist)\"; done",
            ),
            ("memory", "head -3 /proc/meminfo"),
            ("load", "cat /proc/loadavg"),
            (
                "transparent huge pages",
                "cat /sys/kernel/mm/transparent_hugepage/enabled",
            ),
            ("C library", "ldd --version 2>&1 | head -1"),
            ("C compiler", &format!("{cc} --version 2>&1 | head -1")),
        ] {
            t.push_str(&format!("\n## {title}\n\n{}", shell(cmd)));
        }
        let p = self.out.join("machine.txt");
        std::fs::write(&p, t)
            .map_err(|e| Outcome::Failed(format!("cannot write {}: {e}", p.display())))?;
        Ok("machine.txt".into())
    }

    fn execl(&self, src: &Path, cc: &str, deadline: Duration) -> Result<String, Outcome> {
        let t0 = Instant::now();
        let bin = self.out.join("bin");
        std::fs::create_dir_all(&bin)
            .map_err(|e| Outcome::Failed(format!("cannot create {}: {e}", bin.display())))?;
        if !src.is_file() {
            return Err(Outcome::Failed(format!(
                "no execl source at {} (--execl-src)",
                src.display()
            )));
        }
        let log = self.out.join("execl.log");
        let mut built = Vec::new();
        let mut notes = Vec::new();
        for (linkage, flags) in [("dyn", &[][..]), ("static", &["-static"][..])] {
            let exe = bin.join(format!("execl-{linkage}"));
            let mut c = Command::new(cc);
            c.args(["-O2", "-o"]).arg(&exe).arg(src).args(flags);
            match run_logged(c, &log, Duration::from_secs(60)) {
                Ok(_) => built.push((linkage, exe)),
                Err(Outcome::Failed(e) | Outcome::TimedOut(e) | Outcome::Skipped(e)) => {
                    notes.push(format!("{linkage} build failed: {e}"));
                }
            }
        }
        if built.is_empty() {
            return Err(Outcome::Failed(notes.join("; ")));
        }
        let tsv = self.out.join("execl.tsv");
        let mut f = std::fs::File::create(&tsv)
            .map_err(|e| Outcome::Failed(format!("cannot write {}: {e}", tsv.display())))?;
        let _ = writeln!(f, "linkage\tcopies\tround\tseconds\texecs\tper_s");
        let mut failures = 0;
        // Round by round, every (copies, linkage) in each: drift hits all alike.
        for round in 1..=self.plan.execl_rounds {
            for &p in &self.plan.counts {
                for (linkage, exe) in &built {
                    let left = deadline.saturating_sub(t0.elapsed());
                    if left.is_zero() {
                        return Err(Outcome::TimedOut(format!(
                            "stopped at round {round}, {p} copies; the rows before are in execl.tsv"
                        )));
                    }
                    let mut c = Command::new(exe);
                    c.arg(p.to_string()).arg(fmt_s(self.plan.execl_seconds));
                    let budget =
                        Duration::from_secs_f64(self.plan.execl_seconds * 3.0 + 10.0).min(left);
                    match run_logged(c, &log, budget) {
                        Ok(out) => match summary::parse_execl(&out) {
                            Some((execs, per_s)) => {
                                let _ = writeln!(
                                    f,
                                    "{linkage}\t{p}\t{round}\t{}\t{execs}\t{per_s:.1}",
                                    fmt_s(self.plan.execl_seconds)
                                );
                                let _ = f.flush();
                            }
                            None => failures += 1,
                        },
                        Err(_) => failures += 1,
                    }
                }
            }
        }
        notes.push(format!(
            "execl.tsv{}",
            if failures > 0 {
                format!(", {failures} run(s) failed (execl.log)")
            } else {
                String::new()
            }
        ));
        if failures > 0 && failures == self.plan.execl_rounds * self.plan.counts.len() * built.len()
        {
            return Err(Outcome::Failed(notes.join("; ")));
        }
        Ok(notes.join("; "))
    }

    fn bench(&self, dir: &str, extra: &[&str], deadline: Duration) -> Result<String, Outcome> {
        let out = self.out.join(dir);
        let counts = self.counts_arg();
        let dur = format!("{}ms", (self.plan.bench_duration * 1e3).round());
        let rep = self.plan.bench_repeat.to_string();
        let mut args = vec![
            "bench",
            "--workload",
            "execl",
            "--call-pattern",
            "per-vma",
            "--threads",
            &counts,
            "--duration",
            &dur,
            "--repeat",
            &rep,
            "--no-predict",
            "--out",
        ];
        let out_s = out.display().to_string();
        args.push(&out_s);
        args.extend_from_slice(extra);
        run_logged(
            self.aspace(&args),
            &self.out.join(format!("{dir}.log")),
            deadline,
        )?;
        Ok(format!("{dir}/results.json, {dir}/report.html"))
    }

    /// `aspace SUB --help`: the options this binary's subcommand has.
    fn help(&self, sub: &str) -> String {
        self.aspace(&[sub, "--help"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    fn bench_kernel(&self, deadline: Duration) -> Result<String, Outcome> {
        let help = self.help("bench");
        if !help.contains("--cost") {
            return Err(Outcome::Skipped(
                "this aspace has no `bench --cost` (aspace bench --help)".into(),
            ));
        }
        let calib = self.out.join("calib.json").display().to_string();
        let mut extra = vec!["--cost", "kernel"];
        // Where the bench takes a host calibration, the one just measured.
        if help.contains("--predict-host") && self.out.join("calib.json").is_file() {
            extra.extend(["--predict-host", &calib]);
        }
        self.bench("bench-kernel", &extra, deadline)
    }

    fn calibrate(&self, deadline: Duration) -> Result<String, Outcome> {
        let out = self.out.join("calib.json").display().to_string();
        let scale = fmt_s(self.plan.calibrate_scale);
        let args = ["calibrate", "--scale", &scale, "--out", &out];
        match run_logged(
            self.aspace(&args),
            &self.out.join("calibrate.log"),
            deadline,
        ) {
            Ok(_) => Ok("calib.json".into()),
            // A survey is often the one chance on a borrowed machine: where
            // calibrate refuses a busy host, record it anyway, once, with
            // the load written into the file and the summary saying so,
            // rather than leave the predictions without a calibration.
            Err(Outcome::Failed(d)) if d.contains("host is busy") => {
                let mut busy_ok = args.to_vec();
                busy_ok.push("--busy-ok");
                run_logged(
                    self.aspace(&busy_ok),
                    &self.out.join("calibrate-busy-ok.log"),
                    deadline,
                )?;
                Ok(
                    "calib.json, recorded with --busy-ok after calibrate refused a busy \
                    host (calibrate.log); its figures time a loaded machine"
                        .into(),
                )
            }
            Err(e) => Err(e),
        }
    }

    fn predict(&self, deadline: Duration) -> Result<String, Outcome> {
        let calib = self.out.join("calib.json");
        if !calib.is_file() {
            return Err(Outcome::Skipped(
                "no calib.json (the calibrate part did not run)".into(),
            ));
        }
        let t0 = Instant::now();
        let calib = calib.display().to_string();
        let counts = self.counts_arg();
        let secs = fmt_s(self.plan.predict_seconds);
        let busy_ok = self.help("predict").contains("--busy-ok");
        let mut done = Vec::new();
        let mut failed = Vec::new();
        for (dir, extra) in [
            ("predict-kernel", &[][..]),
            ("predict-model", &["--model-cost"][..]),
        ] {
            let out = self.out.join(dir).display().to_string();
            let mut args = vec![
                "predict",
                "--machine",
                &calib,
                "--host",
                &calib,
                "--cpus",
                &counts,
                "--seconds",
                &secs,
                "--out",
                &out,
            ];
            args.extend_from_slice(extra);
            // The model-cost prediction is the bench's: where the bench
            // part wrote its results (with the CPUs its unpinned threads
            // ran on), each point is simulated on those CPUs and set
            // beside the measured median.
            let measured = self.out.join("bench").join("results.json");
            let measured_s = measured.display().to_string();
            if dir == "predict-model"
                && measured.is_file()
                && self.help("predict").contains("--measured")
            {
                args.extend(["--measured", &measured_s]);
            }
            if let Some(d) = self.plan.predict_designs {
                args.extend(["--designs", d]);
            }
            // As for calibrate: the survey records the host as it is.
            if busy_ok {
                args.push("--busy-ok");
            }
            // Each run gets half of the part's time, the second what is left.
            let left = deadline.saturating_sub(t0.elapsed());
            let mine = if done.is_empty() && failed.is_empty() {
                left / 2
            } else {
                left
            };
            match run_logged(
                self.aspace(&args),
                &self.out.join(format!("{dir}.log")),
                mine,
            ) {
                Ok(_) => done.push(format!("{dir}/predict.json")),
                Err(Outcome::Failed(e) | Outcome::TimedOut(e) | Outcome::Skipped(e)) => {
                    failed.push(format!("{dir}: {e}"));
                }
            }
        }
        if done.is_empty() {
            return Err(Outcome::Failed(failed.join("; ")));
        }
        done.extend(failed);
        Ok(done.join("; "))
    }

    fn maple(&self, bench: Option<&Path>, deadline: Duration) -> Result<String, Outcome> {
        let Some(bench) = bench.filter(|b| b.is_file()) else {
            return Err(Outcome::Skipped(
                "no maple bench executable (--maple-bench, or maple-bench beside aspace: scripts/survey.sh --pack puts it there)"
                    .into(),
            ));
        };
        let dir = self.out.join("maple");
        std::fs::create_dir_all(&dir)
            .map_err(|e| Outcome::Failed(format!("cannot create {}: {e}", dir.display())))?;
        let mut c = Command::new(bench);
        c.current_dir(&dir)
            .env("CRITERION_HOME", dir.join("criterion-data"))
            .args([
                "--bench",
                MAPLE_FILTER,
                "--warm-up-time",
                &fmt_s(self.plan.maple_warm_up),
                "--measurement-time",
                &fmt_s(self.plan.maple_measure),
            ]);
        let log = self.out.join("maple.log");
        let p = dir.join("criterion.txt");
        let write = |text: &str| {
            std::fs::write(&p, text)
                .map_err(|e| Outcome::Failed(format!("cannot write {}: {e}", p.display())))
        };
        match run_logged(c, &log, deadline) {
            Ok(text) => {
                write(&text)?;
                Ok("maple/criterion.txt".into())
            }
            Err(Outcome::TimedOut(d)) => {
                // The benchmarks that finished are in the log: keep them.
                write(&std::fs::read_to_string(&log).unwrap_or_default())?;
                Err(Outcome::TimedOut(format!(
                    "{d}; the benchmarks it finished are in maple/criterion.txt"
                )))
            }
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<String> {
        PARTS.iter().map(|p| (*p).to_owned()).collect()
    }

    #[test]
    fn counts_are_powers_of_two_and_the_top() {
        assert_eq!(counts(1), [1]);
        assert_eq!(counts(2), [1, 2]);
        assert_eq!(counts(4), [1, 2, 4]);
        assert_eq!(counts(16), [1, 2, 4, 8, 12, 16]);
        assert_eq!(counts(12), [1, 2, 4, 8, 12]);
        assert_eq!(counts(384), [1, 2, 4, 8, 16, 32, 64, 128, 256, 384]);
    }

    #[test]
    fn the_plan_fits_the_budget_and_keeps_full_settings_when_it_can() {
        // 16 CPUs in 7 minutes: the full settings fit.
        let p = Plan::fit(&counts(16), &all(), 420.0);
        assert_eq!(p.scale, 1.0);
        assert!(p.total() <= 0.9 * 420.0, "{}", p.text(420.0));
        assert_eq!(
            (p.execl_seconds, p.execl_rounds, p.bench_repeat),
            (2.0, 2, 3)
        );
        // 384 CPUs in the same 7 minutes: scaled down to fit.
        let p = Plan::fit(&counts(384), &all(), 420.0);
        assert!(
            p.scale < 1.0 && p.total() <= 0.9 * 420.0,
            "{}",
            p.text(420.0)
        );
        // A short test budget: the smallest settings, which may not fit.
        let p = Plan::fit(&counts(2), &all(), 10.0);
        assert_eq!(p.scale, 0.0);
        assert_eq!(p.execl_rounds, 1);
        // Fewer parts, more time for each.
        let some = vec!["execl".to_owned()];
        assert_eq!(Plan::fit(&counts(384), &some, 420.0).scale, 1.0);
        let t = Plan::fit(&counts(16), &all(), 420.0).text(420.0);
        assert!(t.contains("execl") && t.contains("total"), "{t}");
    }
}
