//! `aspace predict --validate`: every published figure of the issue against
//! its prediction, with the error; written as a table (validation.md) and
//! JSON. The machines are the built-in descriptions, chosen before this
//! comparison and never fitted to it.

use super::{recorder, simulate_all, Plan, PredictArgs};
pub use crate::predicted::Check;
use mm::CallPattern;
use predict::{Machine, Prediction, Profile};
use rmap::Design;
use std::fmt::Write as _;
use std::path::Path;

fn ratio_check(
    what: &str,
    setting: &str,
    published: &str,
    value: Option<f64>,
    predicted: f64,
    (lo, hi): (f64, f64),
    target: &str,
) -> Check {
    Check {
        what: what.into(),
        setting: setting.into(),
        published: published.into(),
        published_value: value,
        predicted,
        target: target.into(),
        error: value.map(|v| 100.0 * (predicted - v) / v),
        met: predicted >= lo && predicted <= hi,
    }
}

fn share_check(what: &str, setting: &str, published: f64, predicted: f64, tol: f64) -> Check {
    Check {
        what: what.into(),
        setting: setting.into(),
        published: format!("{published:.1}%"),
        published_value: Some(published),
        predicted,
        target: format!("within {tol:.0} points"),
        error: Some(predicted - published),
        met: (predicted - published).abs() <= tol,
    }
}

struct Point {
    machine: Machine,
    plan: Plan,
    /// [`PredictArgs::overlap`].
    overlap: bool,
}

impl Point {
    fn new(name: &str, host: &Machine, a: &PredictArgs, shell: bool) -> Point {
        let machine = Machine::by_name(name).expect("built-in machine");
        Point {
            plan: Plan::new(
                machine.clone(),
                host.clone(),
                shell,
                a.binary.clone(),
                a.resident,
                false,
                a.seconds,
            ),
            machine,
            overlap: a.overlap(),
        }
    }

    /// [`Point::run`] after `warmup_s` simulated seconds of warm-up
    /// ([`crate::predict::simulate_all_warm`]).
    fn run_warm(
        &self,
        profiles: &[Profile],
        cpus: u32,
        warmup_s: f64,
    ) -> Result<Vec<Prediction>, String> {
        self.simulate(profiles, cpus, Some(warmup_s))
    }

    fn run(&self, profiles: &[Profile], cpus: u32) -> Result<Vec<Prediction>, String> {
        self.simulate(profiles, cpus, None)
    }

    /// Each profile's point at `cpus`, after `warmup_s` of warm-up where
    /// given, else the default.
    fn simulate(
        &self,
        profiles: &[Profile],
        cpus: u32,
        warmup_s: Option<f64>,
    ) -> Result<Vec<Prediction>, String> {
        // The published machines have no overlap factors: every transfer
        // serial, with or without --serial.
        let (m, secs) = (&self.machine, self.plan.seconds);
        let points = match warmup_s {
            Some(w) => {
                crate::predict::simulate_all_warm(m, profiles, &[cpus], secs, w, self.overlap)?
            }
            None => simulate_all(m, profiles, &[cpus], secs, self.overlap)?,
        };
        Ok(points.into_iter().map(|mut v| v.remove(0)).collect())
    }

    /// Execs/s of `profile`'s iteration with no reverse map at `cpus`
    /// ([`Profile::without_holds`]): no design can run faster than this.
    fn bound(&self, profile: &Profile, cpus: u32) -> Result<f64, String> {
        let free = profile.without_holds().map_err(|e| e.to_string())?;
        Ok(self.run(&[free], cpus)?[0].per_s)
    }
}

/// A target's words with the bound beside it: how far any design could
/// go past `base` at this point (`bound / base`).
fn with_bound(target: &str, bound: f64, base: &str) -> String {
    format!("{target}; no design passes {bound:.3} here ({base} without its reverse map)")
}

fn per_s(p: &[Prediction], i: usize) -> f64 {
    p[i].per_s
}

fn site_share(p: &Prediction, site: &str, seconds: f64) -> f64 {
    let total = f64::from(p.cpus) * seconds * 1e9;
    p.sites
        .iter()
        .filter(|s| s.site == site)
        .map(|s| 100.0 * s.spin_ns / total)
        .sum()
}

/// Measured ops/s per (design, threads) in an `aspace bench` results file
/// (execl, per-vma): the median over repeats.
fn measured(file: &Path) -> Result<Vec<(String, usize, f64)>, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", file.display()))?;
    let runs = v
        .get("runs")
        .and_then(|r| r.as_array())
        .ok_or_else(|| format!("{} has no runs", file.display()))?;
    let mut by: std::collections::BTreeMap<(String, usize), Vec<f64>> = Default::default();
    for r in runs {
        if r.get("workload").and_then(|w| w.as_str()) != Some("execl")
            || !r
                .get("call_pattern")
                .and_then(|w| w.as_str())
                .map_or(true, |p| p == "per-vma")
        {
            continue;
        }
        let (Some(d), Some(t), Some(x)) = (
            r.get("design").and_then(|d| d.as_str()),
            r.get("threads").and_then(|t| t.as_u64()),
            r.get("ops_per_sec").and_then(|x| x.as_f64()),
        ) else {
            continue;
        };
        by.entry((d.to_owned(), t as usize)).or_default().push(x);
    }
    Ok(by
        .into_iter()
        .map(|((d, t), mut v)| {
            v.sort_by(f64::total_cmp);
            (d, t, v[v.len() / 2])
        })
        .collect())
}

fn note(notes: &mut Vec<String>, machine: &str, profiles: &[Profile]) {
    for p in profiles {
        notes.push(format!(
            "{machine} {} ({} holds per iteration): {}",
            p.label,
            p.holds_per_iteration(),
            p.notes
        ));
    }
}

/// Runs every comparison; `notes` gets how each profile was recorded.
pub fn checks(
    a: &PredictArgs,
    host: &Machine,
    notes: &mut Vec<String>,
) -> Result<Vec<Check>, String> {
    let mut out = Vec::new();
    let per_vma = CallPattern::PerVma;
    let secs = a.seconds;

    // 1. 384 CPUs, 12 nodes, execl x384.
    let p = Point::new("hygon-384", host, a, false);
    let ds = [
        Design::Linux,
        Design::NumaSplit,
        Design::NumaLocks,
        Design::Aspace,
    ];
    let profiles: Vec<Profile> = ds
        .iter()
        .map(|&d| p.plan.profile(d, per_vma))
        .collect::<Result<_, _>>()?;
    note(notes, "hygon-384", &profiles);
    let r = p.run(&profiles, 384)?;
    let set = "hygon-384, execl x384, per-vma";
    out.push(ratio_check(
        "numa_split / linux",
        set,
        "1.77 (+77%)",
        Some(1.77),
        per_s(&r, 1) / per_s(&r, 0),
        (1.50, 2.04),
        "[1.50, 2.04]",
    ));
    out.push(ratio_check(
        "numa_locks / linux",
        set,
        "over 5 (\"over 400%\")",
        Some(5.0),
        per_s(&r, 2) / per_s(&r, 0),
        (4.25, f64::INFINITY),
        ">= 4.25",
    ));
    out.push(ratio_check(
        "numa_locks / numa_split (ordering)",
        set,
        "> 1 (v2 beats v1)",
        None,
        per_s(&r, 2) / per_s(&r, 1),
        (1.0, f64::INFINITY),
        "> 1",
    ));
    let bound = p.bound(&profiles[2], 384)? / per_s(&r, 2);
    out.push(ratio_check(
        "aspace / numa_locks (our target)",
        set,
        "-",
        None,
        per_s(&r, 3) / per_s(&r, 2),
        (2.0, f64::INFINITY),
        &with_bound(">= 2", bound, "numa_locks"),
    ));

    // 2. 112C/224T, shell scripts: padding. The effect (+5.3%) is smaller
    // than the drift between recordings, and part of that drift followed
    // the recording order: in one validation the design recorded second
    // came out about 12% ahead (1.129 and 1.131 with linux second, 0.900
    // with linux first), in another about 5%, in two others not at all
    // (idle host; 0.87-1.13 over seven single recordings before). So the
    // pair is recorded once in each order and the two rounds' ratios are
    // combined by their geometric mean, which cancels an order effect that
    // scales the ratio either way; the rest of the drift remains.
    let p = Point::new("spr-224", host, a, true);
    let mut ratios = Vec::new();
    for round in 0..PAIR_ROUNDS {
        // Even rounds record linux second, odd rounds first; the profiles
        // are then [linux_shared_line, linux] either way.
        let linux_second = round % 2 == 0;
        let profiles = if linux_second {
            let shared = p.plan.profile(Design::LinuxSharedLine, per_vma)?;
            vec![shared, p.plan.profile(Design::Linux, per_vma)?]
        } else {
            let linux = p.plan.profile(Design::Linux, per_vma)?;
            vec![p.plan.profile(Design::LinuxSharedLine, per_vma)?, linux]
        };
        if round == 0 {
            note(notes, "spr-224 shell", &profiles);
        }
        let r = p.run(&profiles, 224)?;
        ratios.push(per_s(&r, 1) / per_s(&r, 0));
    }
    notes.push(format!(
        "spr-224 shell: linux / linux_shared_line per round (linux recorded second, then first) {}; their geometric mean is kept",
        ratios
            .iter()
            .map(|x| format!("{x:.3}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    out.push(ratio_check(
        "linux / linux_shared_line",
        "spr-224, shell x224, per-vma",
        "1.053 (+5.3%)",
        Some(1.053),
        geometric_mean(&ratios),
        (1.00, 1.12),
        "[1.00, 1.12]",
    ));

    // 3. 112 cores one node, execl x220: the profile.
    let p = Point::new("emr-112", host, a, false);
    let profiles: Vec<Profile> = [Design::Linux, Design::Aspace]
        .iter()
        .map(|&d| p.plan.profile(d, per_vma))
        .collect::<Result<_, _>>()?;
    note(notes, "emr-112", &profiles);
    let r = p.run(&profiles, 220)?;
    let set = "emr-112, execl x220, per-vma";
    out.push(share_check(
        "linux: rwsem spinning, % of cycles",
        set,
        91.5,
        100.0 * r[0].spin_share,
        10.0,
    ));
    for (site, name, v) in [
        ("mmap_link", "link on mmap", 24.7),
        ("replace_unlink", "unlink of replaced mappings", 24.8),
        ("split", "split on mmap/munmap", 18.5),
        ("protect_split", "mprotect (RELRO) split", 6.1),
        ("exit_unlink", "exit unlink batch", 6.2),
    ] {
        out.push(share_check(
            &format!("linux: spinning from {name}, % of cycles"),
            set,
            v,
            site_share(&r[0], site, secs),
            8.0,
        ));
    }
    let bound = p.bound(&profiles[0], 220)? / per_s(&r, 0);
    out.push(ratio_check(
        "aspace / linux (our target)",
        set,
        "-",
        None,
        per_s(&r, 1) / per_s(&r, 0),
        (5.0, f64::INFINITY),
        &with_bound(">= 5", bound, "linux"),
    ));

    // 4. ~20 cores: exit batching. The published benchmark (doexec, one
    // process per CPU re-exec'ing itself) "makes sure binaries are
    // separate, but the loader is shared": each CPU execs its own copy.
    let mut p = Point::new("spr-224", host, a, false);
    p.plan.own_binary = true;
    let batched = p.plan.profile(Design::Linux, per_vma)?;
    note(notes, "spr-224 execl", std::slice::from_ref(&batched));
    let unbatched = recorder::unbatch_exit(&batched);
    // A second of warm-up: the batched profile's 20 copies can stay in a
    // slow state from their common start for most of a second (after the
    // default 50 ms it ran at 20.1k-24.0k execs/s over seeds 1-6 of one
    // recording, the ratio 1.08-1.29; after 1 s, 23.7k-24.1k and
    // 1.27-1.31: docs/results/predict/exit-s40/). The row compares two
    // rates a few per cent apart, so the start's transient is most of its
    // spread.
    let r = p.run_warm(&[unbatched, batched], 20, 1.0)?;
    out.push(ratio_check(
        "exit batched / exit one hold per VMA (linux)",
        "spr-224, execl x20 (own binaries), per-vma",
        "1.04 (+4%)",
        Some(1.04),
        per_s(&r, 1) / per_s(&r, 0),
        (1.04 * 0.85, 1.04 * 1.15),
        "[0.88, 1.20], and > 1",
    ));
    if let Some(c) = out.last_mut() {
        c.met &= c.predicted > 1.0;
    }

    // 5. A write-heavy rwsem microbenchmark: writers only, threads pinned
    // in CPU order, each taking the lock around a one-line critical
    // section with little work between. Published: it loses about 11x
    // from 4 to 240 threads (on the benchmark's own machine, which is not
    // one of ours): the shape is checked, on the 384-CPU machine.
    let x = rwsem_microbenchmark(secs)?;
    let at = |n: u32| x.iter().find(|p| p.0 == n).map_or(f64::NAN, |p| p.1);
    notes.push(rwsem_note(&x));
    let falls = at(16) < at(4) && at(64) < at(16) && at(240) < at(64);
    out.push(ratio_check(
        "rwsem writers: throughput at 4 / at 240 threads (collapse)",
        "hygon-384, write-heavy rwsem microbenchmark, pinned",
        "about 11 (loses 11x from 4 to 240 threads, on its own machine)",
        None,
        at(4) / at(240),
        (3.0, f64::INFINITY),
        ">= 3, falling at every step 4, 16, 64, 240",
    ));
    if let Some(c) = out.last_mut() {
        c.met &= falls;
    }

    // 6. This machine, 1 and 2 threads, against a measured bench.
    if let Some(file) = &a.measured {
        let meas = measured(file)?;
        let mut hm = host.clone();
        hm.name = "host".into();
        let plan = Plan::new(
            hm.clone(),
            host.clone(),
            false,
            a.binary.clone(),
            a.resident,
            true,
            secs,
        );
        let designs = Design::ALL;
        let rounds = interleaved_profiles(&plan, &designs, per_vma, HOST_ROUNDS)?;
        let threads: Vec<u32> = [1u32, 2].into_iter().filter(|&t| t <= hm.cpus()).collect();
        // Every round's recording simulated (see [`HOST_ROUNDS`]).
        let flat: Vec<Profile> = rounds.iter().flatten().cloned().collect();
        let sims = simulate_all(&hm, &flat, &threads, secs, a.overlap())?;
        let per_round: Vec<Vec<Vec<f64>>> = rounds
            .iter()
            .scan(0usize, |at, r| {
                let v: Vec<Vec<f64>> = (0..threads.len())
                    .map(|ti| (*at..*at + r.len()).map(|k| sims[k][ti].per_s).collect())
                    .collect();
                *at += r.len();
                Some(v)
            })
            .collect();
        for (ti, &t) in threads.iter().enumerate() {
            notes.push(round_spread(&designs, &per_round, ti, t));
        }
        // A design's ratio to linux in each round (recorded within seconds
        // of each other, so a change of the host's load between rounds
        // cancels); the row is the median of the rounds' ratios.
        let ratio =
            |di: usize, li: usize, ti: usize| round_ratio(&per_round[di][ti], &per_round[li][ti]);
        let li = designs
            .iter()
            .position(|&d| d == Design::Linux)
            .unwrap_or(0);
        for (ti, &t) in threads.iter().enumerate() {
            let m_linux = meas
                .iter()
                .find(|(d, th, _)| d == "linux" && *th == t as usize)
                .map(|x| x.2);
            for (di, d) in designs.iter().enumerate() {
                if di == li {
                    continue;
                }
                let m_d = meas
                    .iter()
                    .find(|(n, th, _)| n == d.name() && *th == t as usize)
                    .map(|x| x.2);
                let (Some(ml), Some(md)) = (m_linux, m_d) else {
                    continue;
                };
                let measured_ratio = md / ml;
                let pred = ratio(di, li, ti);
                out.push(ratio_check(
                    &format!("{} / linux", d.name()),
                    &format!("this host, {t} thread(s), model exec cost"),
                    &format!("measured {measured_ratio:.3}"),
                    Some(measured_ratio),
                    pred,
                    (measured_ratio * 0.8, measured_ratio * 1.2),
                    "within 20%",
                ));
            }
        }
    }
    Ok(out)
}

/// The rwsem microbenchmark's critical section, ns (it writes one shared
/// line). ASSUMED: the published benchmark's code is not in this
/// repository, so its hold and think times are not known here. They set
/// the depth of the collapse the model can show: each grant costs 4-5
/// transfers at every size, whose time grows 8.6x from 4 to 240 pinned
/// CPUs of hygon-384, and these 70 ns of hold and work at 4 threads are
/// why the row reads about 6x rather than that (`docs/results/predict/rwsem-s40/`).
const RWSEM_BENCH_HOLD_NS: f64 = 20.0;
/// The rwsem microbenchmark's work between acquisitions, ns. ASSUMED, as
/// [`RWSEM_BENCH_HOLD_NS`].
const RWSEM_BENCH_WORK_NS: f64 = 50.0;

/// The validation's note on the rwsem microbenchmark: its rates and its
/// assumed hold and think times, so that the output says which figures
/// have no source.
fn rwsem_note(rates: &[(u32, f64)]) -> String {
    format!(
        "rwsem microbenchmark (hygon-384, writers only, pinned in order; ASSUMED, not the published benchmark's own: {RWSEM_BENCH_HOLD_NS} ns critical section writing one line, {RWSEM_BENCH_WORK_NS} ns between): {}",
        rates
            .iter()
            .map(|(n, v)| format!("{n} threads {:.2}M/s", v / 1e6))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The rwsem microbenchmark of [`checks`] (section 5): a synthetic
/// profile, not a recording: every thread takes one rwsem for writing
/// around a critical section that writes one shared line
/// ([`RWSEM_BENCH_HOLD_NS`]), with [`RWSEM_BENCH_WORK_NS`] of work between,
/// on hygon-384 with threads pinned in CPU order. Returns (threads,
/// acquisitions per second).
fn rwsem_microbenchmark(seconds: f64) -> Result<Vec<(u32, f64)>, String> {
    use predict::{CpuProfile, Hold, LineKind, LockDesc, LockKind, SimConfig, Site, Step};
    let m = Machine::by_name("hygon-384").expect("built-in machine");
    let p = Profile {
        label: "rwsem microbenchmark".into(),
        workload: "lock".into(),
        call_pattern: "-".into(),
        locks: vec![LockDesc {
            name: "rwsem".into(),
            kind: LockKind::KernelRwsem,
            line: 0,
            contended_line: None,
        }],
        lines: vec![LineKind::LockWord, LineKind::Tree],
        slots: vec![CpuProfile {
            cpu: 0,
            steps: vec![
                Step::Work(RWSEM_BENCH_WORK_NS),
                Step::Hold(Hold {
                    lock: 0,
                    write: true,
                    site: Site::Other,
                    hold_ns: RWSEM_BENCH_HOLD_NS,
                    written: vec![1],
                    read: vec![],
                    loaded_first: vec![],
                }),
            ],
        }],
        recorded_ghz: m.core_ghz,
        notes: String::new(),
        exit_vmas_per_hold: 0.0,
        work_placed: false,
        loads_recorded: false,
        hold_timing: false,
    };
    [4u32, 16, 64, 240]
        .iter()
        .map(|&n| {
            let mut cfg = SimConfig::new(n);
            cfg.duration_ns = (seconds * 2e7).clamp(2e6, 2e8);
            cfg.warmup_ns = cfg.duration_ns / 10.0;
            cfg.packed = true;
            cfg.work_jitter = super::WORK_JITTER;
            predict::simulate(&m, &p, &cfg)
                .map(|r| (n, r.per_s))
                .map_err(|e| e.to_string())
        })
        .collect()
}

/// Rounds of the padding pair (section 2 of [`checks`]): one in each
/// recording order.
const PAIR_ROUNDS: usize = 2;

/// The geometric mean of positive ratios (NaN for none): each ratio counts
/// alike, whichever side of 1 it is on.
fn geometric_mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// Recordings of each design for the host rows, each simulated. These rows
/// use the model's own exec cost, so a design's whole iteration time comes
/// from its recording, and a disturbance of the host during one design's
/// recording (seconds long on this VM) moved every ratio to `linux` by
/// 25-30% at once when `linux` was the one hit (2 of 5 validations on an
/// idle host). And the 2-CPU simulation of one clean recording is a sharp
/// function of its step times: one work step of linux's iteration 1270 ns
/// in one recording where others had 700 put linux's 2-CPU point at 77.6k
/// instead of 101k (the same at six seeds and with the work jitter up to
/// 0.8: docs/results/predict/bistable-s39/). So each point is the median
/// of the rounds' ratios (each round's design over that round's linux), not
/// the ratio of one kept recording of each.
const HOST_ROUNDS: usize = 3;

/// Records every design `rounds` times, in rounds over all of them (A B C,
/// A B C, ...), so that a disturbance of the host falls on one recording of
/// several designs rather than on every recording of one. Returns each
/// design's recordings, in `designs` order.
fn interleaved_profiles(
    plan: &Plan,
    designs: &[Design],
    pattern: CallPattern,
    rounds: usize,
) -> Result<Vec<Vec<Profile>>, String> {
    let mut recs: Vec<Vec<Profile>> = vec![Vec::new(); designs.len()];
    for _ in 0..rounds.max(1) {
        for (i, &d) in designs.iter().enumerate() {
            recs[i].push(plan.profile(d, pattern)?);
        }
    }
    Ok(recs)
}

/// The median of the rounds' rates or ratios (the lower middle one of an
/// even count; NaN for none).
fn median_rate(rates: &[f64]) -> f64 {
    let mut v = rates.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(f64::NAN)
}

/// The median over rounds of a design's rate over linux's in the same
/// round (`design[k] / linux[k]`).
fn round_ratio(design: &[f64], linux: &[f64]) -> f64 {
    let r: Vec<f64> = design.iter().zip(linux).map(|(d, l)| d / l).collect();
    median_rate(&r)
}

/// A note with every design's simulated rate per recorded round at `t`
/// threads (index `ti`) and the spread of the rounds (largest over
/// smallest), flagged where it passes 10%: the host rows' answer is the
/// median, and a wide spread says the recordings (or the simulation of
/// them) disagree.
fn round_spread(designs: &[Design], per_round: &[Vec<Vec<f64>>], ti: usize, t: u32) -> String {
    let parts: Vec<String> = designs
        .iter()
        .zip(per_round)
        .map(|(d, r)| {
            let v = &r[ti];
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(0.0, f64::max);
            let spread = hi / lo - 1.0;
            format!(
                "{} {} (spread {:.0}%{})",
                d.name(),
                v.iter()
                    .map(|x| format!("{:.1}k", x / 1e3))
                    .collect::<Vec<_>>()
                    .join(" / "),
                spread * 100.0,
                if spread > 0.10 {
                    ", RECORDINGS DISAGREE"
                } else {
                    ""
                }
            )
        })
        .collect();
    format!(
        "this host, {t} thread(s), PREDICTED execs/s per recorded round (each row: the median of the rounds' ratios to linux): {}",
        parts.join("; ")
    )
}

/// The validation table as Markdown.
pub fn markdown(checks: &[Check], notes: &[String], host: &Machine, a: &PredictArgs) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# aspace predict: validation against the published figures\n\n\
         PREDICTIONS (simulated, not measured) of `aspace predict --validate`, compared with the\n\
         published kernel results of the issue. Machines: the built-in descriptions in\n\
         `crates/predict/machines/` (chosen before this comparison, never fitted). Host\n\
         calibration: {} ({:.0} us per execl, {:.0} us per fork+exec+wait). Binary {},\n\
         {} resident processes, {} simulated s per point.\n",
        host.description,
        host.exec_ns.unwrap_or(0.0) / 1e3,
        host.fork_exec_ns.unwrap_or(0.0) / 1e3,
        a.binary.display(),
        a.resident,
        a.seconds
    );
    let _ = writeln!(
        s,
        "| what | setting | published | predicted | error | target | met |\n|---|---|---|---|---|---|---|"
    );
    for c in checks {
        let err = match c.error {
            Some(e) if c.published.ends_with('%') => format!("{e:+.1} points"),
            Some(e) => format!("{e:+.1}%"),
            None => "-".into(),
        };
        let pred = if c.published.ends_with('%') {
            format!("{:.1}%", c.predicted)
        } else {
            format!("{:.3}", c.predicted)
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            c.what,
            c.setting,
            c.published,
            pred,
            err,
            c.target,
            if c.met { "yes" } else { "**no**" }
        );
    }
    let met = checks.iter().filter(|c| c.met).count();
    let _ = writeln!(s, "\n{met} of {} targets met.", checks.len());
    if !notes.is_empty() {
        let _ = writeln!(s, "\nHow each profile was recorded (the published rows):\n");
        for n in notes {
            let _ = writeln!(s, "- {n}");
        }
    }
    s
}

/// Today's date, UTC, as `YYYY-MM-DD`.
fn utc_date() -> String {
    date_of(unix_now_s())
}

/// Seconds since 1970-01-01 UTC now (0 for a clock set before it).
pub(crate) fn unix_now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The UTC date of `secs` since 1970-01-01 as `YYYY-MM-DD`.
pub(crate) fn date_of(secs: u64) -> String {
    let (y, m, d) = civil_date((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The proleptic Gregorian date of `days` since 1970-01-01: days are
/// counted in 400-year eras of 146,097 days from 0000-03-01, so that the
/// leap day ends each year of the era's arithmetic.
fn civil_date(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `aspace predict --validate`.
pub fn run(a: &PredictArgs) -> Result<(), String> {
    recorder::check(&a.binary)?;
    let busy = super::busy_gate(a.busy_ok)?;
    let mut host = super::host_arg(a.host.as_deref(), &a.binary)?;
    super::overlap_arg(a, &mut host)?;
    let mut notes = super::caveats(busy, &[]);
    let checks = checks(a, &host, &mut notes)?;
    let md = markdown(&checks, &notes, &host, a);
    print!("{md}");
    std::fs::create_dir_all(&a.out)
        .map_err(|e| format!("cannot create {}: {e}", a.out.display()))?;
    let p = a.out.join("validation.md");
    std::fs::write(&p, &md).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    let j = a
        .json
        .clone()
        .unwrap_or_else(|| a.out.join("validation.json"));
    let stored = crate::predicted::StoredValidation {
        date: utc_date(),
        commit: env!("ASPACE_BUILD_COMMIT").to_owned(),
        host: host.description.clone(),
        checks,
    };
    let text = serde_json::to_string_pretty(&stored).map_err(|e| e.to_string())?;
    std::fs::write(&j, text + "\n").map_err(|e| format!("cannot write {}: {e}", j.display()))?;
    println!("\nWrote {} and {}.", p.display(), j.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The rwsem row's note names its hold and think times as assumed
    /// (they have no source), with the rates.
    #[test]
    fn the_rwsem_note_says_its_times_are_assumed() {
        let n = super::rwsem_note(&[(4, 5.88e6), (240, 0.96e6)]);
        assert!(n.contains("ASSUMED"), "{n}");
        assert!(
            n.contains("20 ns critical section") && n.contains("50 ns between"),
            "{n}"
        );
        assert!(n.contains("4 threads 5.88M/s, 240 threads 0.96M/s"), "{n}");
    }

    use super::*;
    use crate::predict::{simulate_all, Plan};

    /// The published orderings hold in the predictions (directions only,
    /// not the figures): on the 384-CPU 12-node machine, splitting the tree
    /// per node beats one tree, and a lock per node beats both.
    #[test]
    fn dates_are_civil() {
        assert_eq!(civil_date(0), (1970, 1, 1));
        assert_eq!(civil_date(59), (1970, 3, 1));
        assert_eq!(civil_date(11_016), (2000, 2, 29));
        assert_eq!(civil_date(20_784), (2026, 11, 27));
        assert_eq!(utc_date().len(), 10);
    }

    #[test]
    fn published_orderings_hold() {
        let m = Machine::by_name("hygon-384").unwrap();
        let mut host = crate::predict::host_without_calibration();
        host.exec_ns = Some(700_000.0);
        let mut plan = Plan::new(m.clone(), host, false, "/bin/true".into(), 1200, false, 0.2);
        plan.warmup = std::time::Duration::from_millis(300);
        let profiles: Vec<Profile> = [Design::Linux, Design::NumaSplit, Design::NumaLocks]
            .iter()
            .map(|&d| plan.profile(d, CallPattern::PerVma).unwrap())
            .collect();
        let r = simulate_all(&m, &profiles, &[384], 0.2, false).unwrap();
        let (linux, split, locks) = (r[0][0].per_s, r[1][0].per_s, r[2][0].per_s);
        assert!(split > linux, "numa_split {split} <= linux {linux}");
        assert!(locks > split, "numa_locks {locks} <= numa_split {split}");
        assert!(r[0][0].spin_share > r[2][0].spin_share);
        // No design passes its own iteration without a reverse map.
        let free: Vec<Profile> = profiles
            .iter()
            .map(|p| p.without_holds().unwrap())
            .collect();
        let b = simulate_all(&m, &free, &[384], 0.2, false).unwrap();
        for (d, f) in r.iter().zip(&b) {
            assert!(
                f[0].per_s >= d[0].per_s,
                "{} > its bound {}",
                d[0].per_s,
                f[0].per_s
            );
        }
    }

    /// A ratio and its inverse combine to 1 (an order effect that scales
    /// the ratio up in one order and down in the other cancels).
    #[test]
    fn geometric_mean_cancels_a_symmetric_bias() {
        let g = geometric_mean(&[1.25, 0.8]);
        assert!((g - 1.0).abs() < 1e-12, "{g}");
        let g = geometric_mean(&[1.053 * 1.12, 1.053 / 1.12]);
        assert!((g - 1.053).abs() < 1e-9, "{g}");
        assert!(geometric_mean(&[]).is_nan());
    }

    /// The host rows' point is the median of the rounds' rates, whatever
    /// their order: one round in another regime (or disturbed) is never
    /// the answer; an even count takes the lower middle one.
    #[test]
    fn the_median_round_is_the_answer() {
        for order in [[0, 1, 2], [2, 0, 1], [1, 2, 0], [2, 1, 0]] {
            let rates = [77.6e3, 100.3e3, 101.9e3];
            let v: Vec<f64> = order.iter().map(|&i| rates[i]).collect();
            assert_eq!(median_rate(&v), 100.3e3, "order {order:?}");
        }
        assert_eq!(median_rate(&[30e3, 9e3]), 9e3);
        assert_eq!(median_rate(&[5.0]), 5.0);
        assert!(median_rate(&[]).is_nan());
    }

    /// A change of the host's speed between rounds (every design x1.5 in
    /// rounds 2 and 3) cancels in the per-round ratios, and one round of
    /// linux in its slow regime (x0.776, as 77.6k against 100k) is not the
    /// answer, where the ratio of the rounds' medians would be 1.42.
    #[test]
    fn the_ratio_is_taken_within_each_round() {
        let linux = [100e3, 150e3, 150e3 * 0.776];
        let design = [110e3, 165e3, 165e3];
        assert!((round_ratio(&design, &linux) - 1.1).abs() < 1e-9);
        assert!(median_rate(&design) / median_rate(&linux) > 1.4);
    }

    /// The rounds' note names each round's rate and flags a spread over
    /// 10%, and only that.
    #[test]
    fn a_wide_spread_of_rounds_is_flagged() {
        let d = [Design::Linux, Design::Aspace];
        let per_round = vec![
            vec![vec![90e3, 91e3, 92e3], vec![77.6e3, 100.3e3, 101.9e3]],
            vec![vec![70e3, 71e3, 70.5e3], vec![140e3, 141e3, 142e3]],
        ];
        let one = round_spread(&d, &per_round, 0, 1);
        assert!(!one.contains("DISAGREE"), "{one}");
        let two = round_spread(&d, &per_round, 1, 2);
        assert!(
            two.contains("linux 77.6k / 100.3k / 101.9k (spread 31%, RECORDINGS DISAGREE"),
            "{two}"
        );
        assert!(
            two.contains("aspace 140.0k / 141.0k / 142.0k (spread 1%)"),
            "{two}"
        );
    }
}
