//! Rendering: the terminal tables, the SVG plots and the HTML report.
//!
//! Every throughput and ratio is shown as `median [min-max]` over the repeats; a
//! design is called faster or slower than linux from its ratios paired by round
//! ([`crate::spread::Verdict::paired`], whose rule every report prints). Both the
//! terminal and the HTML open with what the run found ([`findings`]). Nothing
//! here claims more than the JSON holds: sentences about the run are built from
//! what it recorded. The plots are drawn by [`crate::plot`].

use crate::html::{esc, table, STYLE};
use crate::plot::rate as fmt_rate;
use crate::results::{Results, Summary, NOT_FITTED, PROJECT_TO};
use crate::spread::{disjoint_chance, is_outlier, show, verdict_rule, Verdict, MIN_ROUNDS};
use std::fmt::Write as _;

/// The call sites, in the order the tables show them.
pub const SITES: [&str; 8] = [
    "mmap_link",
    "replace_unlink",
    "split",
    "merge",
    "exit_unlink",
    "fork_insert_after",
    "walk",
    "other",
];

fn fmt_ratio(x: f64) -> String {
    format!("{x:.2}")
}

fn fmt_ns(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.1}ms", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}us", x / 1e3)
    } else {
        format!("{x:.0}ns")
    }
}

fn fmt_bytes(b: usize) -> String {
    if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    } else if b >= 1 << 10 {
        format!("{:.1} KiB", b as f64 / 1024.0)
    } else {
        format!("{b} B")
    }
}

/// One character per verdict for the compact tables.
fn mark(v: Option<Verdict>) -> &'static str {
    match v {
        Some(Verdict::Faster) => "+",
        Some(Verdict::Slower) => "-",
        Some(Verdict::Tie) => "~",
        Some(Verdict::FewRounds) => "?",
        _ => "",
    }
}

/// What a (design, call pattern) row isolates, for the ablation table.
pub fn ablation_label(design: &str, pattern: &str) -> &'static str {
    match (design, pattern) {
        ("linux", "per-vma") => "today's kernel (reference)",
        ("linux", "batched") => "batching alone",
        ("linux_shared_line", _) => "linux with lock and tree on one line (6.12 layout)",
        ("numa_split", _) => "split tree per node, one lock (v1)",
        ("numa_locks", _) => "split tree and lock per node (v2)",
        ("sharded", _) => "sharding without grouping",
        ("aspace_central", _) => "grouping identical intervals only (never promotes)",
        ("aspace", "per-vma") => "aspace without batching",
        ("aspace", "batched") => "aspace: grouping + promotion + batching",
        ("exclude", _) => "BOUND: no reverse map at all (cannot walk)",
        _ => "",
    }
}

/// The design's name, with " (bound)" for a bound that is not a design.
fn design_label(x: &Summary) -> String {
    if x.bound {
        format!("{} (bound)", x.design)
    } else {
        x.design.clone()
    }
}

fn workloads(r: &Results) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for x in &r.summary {
        if !v.contains(&x.workload) {
            v.push(x.workload.clone());
        }
    }
    v
}

fn thread_counts(r: &Results, w: &str) -> Vec<usize> {
    let mut v: Vec<usize> = r
        .summary
        .iter()
        .filter(|x| x.workload == w)
        .map(|x| x.threads)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// (design, pattern) rows in first-seen order.
fn rows(r: &Results, w: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = Vec::new();
    for x in r.summary.iter().filter(|x| x.workload == w) {
        let k = (x.design.clone(), x.call_pattern.clone());
        if !v.contains(&k) {
            v.push(k);
        }
    }
    v
}

fn find<'a>(r: &'a Results, w: &str, d: &str, p: &str, t: usize) -> Option<&'a Summary> {
    r.summary
        .iter()
        .find(|x| x.workload == w && x.design == d && x.call_pattern == p && x.threads == t)
}

/// The thread count the per-site table shows: the largest within the cores, else the
/// smallest measured.
fn site_threads(r: &Results, w: &str) -> Option<usize> {
    let ts = thread_counts(r, w);
    let cores = if r.machine.cores == 0 {
        usize::MAX
    } else {
        r.machine.cores
    };
    ts.iter()
        .copied()
        .filter(|&t| t <= cores)
        .max()
        .or_else(|| ts.first().copied())
}

fn workload_sentence(w: &str) -> &'static str {
    match w {
        "execl" => "execl: each worker execs the binary, takes a few page faults and exits (no fork), like UnixBench execl",
        "shell" => "shell: each worker forks a parent, execs the binary in the child, faults, and exits the child: fork + exec + exit, like UnixBench shell scripts",
        _ => "",
    }
}

/// What the interval of every figure is, and how often two runs' intervals would
/// miss each other if nothing but sampling noise told them apart.
fn interval_sentence(r: &Results) -> String {
    // The samples per point the runs hold (an old JSON may lack `config.repeat`).
    let n = r
        .runs
        .iter()
        .map(|x| x.repeat + 1)
        .max()
        .unwrap_or(1)
        .max(r.config.repeat);
    if n < 2 {
        return "Every figure: one sample per point (--repeat 1): no spread, no verdict.".into();
    }
    format!(
        "Every figure: median [min-max] of {n} samples per point ({} s each), one per round, \
         rounds run one after another so each point's samples span the whole run.\n\
         If two runs' samples came from one distribution, their ranges would miss each other \
         {:.1}% of the time (2/C({},{n})); load that shifts between runs can still move them apart.",
        r.config.duration_s,
        100.0 * disjoint_chance(n, n),
        2 * n
    ) + &drift_sentence(r)
}

/// The load drift this run saw, measured by the workload: each round's speed
/// relative to the points' medians.
fn drift_sentence(r: &Results) -> String {
    let v = r.round_speeds();
    if v.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = v.iter().map(|x| format!("{x:.2}")).collect();
    format!(
        "\nLoad drift in this run: each round's speed over every point (1 = the points' medians): {}.\n\
         Absolute ops/s move with the machine's load; a ratio pairs each sample with linux's in the same round.",
        shown.join(" ")
    )
}

/// Rounds (samples per point) the run holds.
fn rounds(r: &Results) -> usize {
    r.runs.iter().map(|x| x.repeat + 1).max().unwrap_or(0)
}

/// The samples of the summary's point that are outliers: (round, ops/s).
fn outlier_samples(r: &Results, x: &Summary) -> Vec<(usize, f64)> {
    r.samples(&x.workload, &x.design, &x.call_pattern, x.threads)
        .into_iter()
        .filter(|s| is_outlier(s.ops_per_sec, x.ops_per_sec.median))
        .map(|s| (s.repeat, s.ops_per_sec))
        .collect()
}

/// "!" when a sample of the point, or one of its paired ratios to linux, is an
/// outlier.
fn flag(r: &Results, x: &Summary) -> &'static str {
    let ratio_out = x.ratio_to_linux.is_some_and(|m| {
        r.samples(&x.workload, &x.design, &x.call_pattern, x.threads)
            .iter()
            .filter_map(|s| s.ratio_to_linux)
            .any(|v| is_outlier(v, m.median))
    });
    if ratio_out || !outlier_samples(r, x).is_empty() {
        "!"
    } else {
        ""
    }
}

/// The outlier samples of the run, one line each (at most 12, then a count).
fn outliers_text(r: &Results) -> String {
    let mut lines = Vec::new();
    for x in &r.summary {
        for (round, v) in outlier_samples(r, x) {
            lines.push(format!(
                "{} {} {} {} thr, round {}: {} /s against a median of {}",
                x.workload,
                design_label(x),
                x.call_pattern,
                x.threads,
                round + 1,
                fmt_rate(v),
                fmt_rate(x.ops_per_sec.median)
            ));
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    let n = lines.len();
    let mut s = format!(
        "\nOutlier samples (below half or above twice their point's median; ! in the tables, \
         apart from the bars in the plots), {n} of {}:\n",
        r.runs.len()
    );
    for l in lines.iter().take(12) {
        let _ = writeln!(s, "  {l}");
    }
    if n > 12 {
        let _ = writeln!(
            s,
            "  ... and {} more (results.json has every sample)",
            n - 12
        );
    }
    s
}

/// `median [min-max]` of a ratio with an x.
fn ratio_shown(v: &crate::spread::Spread) -> String {
    format!(
        "{}x [{}-{}]",
        fmt_ratio(v.median),
        fmt_ratio(v.min),
        fmt_ratio(v.max)
    )
}

/// What the run found, in a few sentences a kernel developer can act on: per
/// workload, at the largest thread count within the machine's CPUs, which
/// designs beat today's kernel (linux per-vma) beyond noise by the paired rule
/// and by how much, which lose, and how far the bound without a reverse map
/// is; "nothing differs beyond noise on this machine" when that is the answer.
pub fn findings(r: &Results) -> Vec<String> {
    let mut out = Vec::new();
    let n = rounds(r);
    let cores = r.machine.cores;
    if n < MIN_ROUNDS {
        out.push(format!(
            "With {n} round(s) per point no design can be called faster or slower than another: \
             the paired rule needs {MIN_ROUNDS} (the default --repeat is 6). The figures below are \
             the measurements, without verdicts."
        ));
        for w in workloads(r) {
            out.extend(extremes(r, &w, cores));
        }
    } else {
        for w in workloads(r) {
            out.push(workload_finding(r, &w, cores));
        }
    }
    let outliers: usize = r.summary.iter().map(|x| outlier_samples(r, x).len()).sum();
    if outliers > 0 {
        out.push(format!(
            "{outliers} of {} samples are outliers (below half or above twice their point's \
             median, marked !): the machine's load swung during the run; a paired verdict needs \
             every round on one side, so an outlier round can block a verdict but not make one.",
            r.runs.len()
        ));
    }
    if (1..=4).contains(&cores) {
        out.push(format!(
            "This machine has {cores} CPUs, so at most {cores} execs meet at the reverse map's lock \
             at once: differences that need many cores do not show here (aspace predict \
             estimates them for a machine described to it)."
        ));
    }
    out
}

/// Without verdicts (too few rounds): the designs with the largest and the
/// smallest median ratio to today's kernel at the largest thread count within
/// the cores, as measured.
fn extremes(r: &Results, w: &str, cores: usize) -> Option<String> {
    let t = site_threads(r, w)?;
    let mut at: Vec<(&Summary, crate::spread::Spread)> = r
        .summary
        .iter()
        .filter(|x| x.workload == w && x.threads == t && !x.bound)
        .filter(|x| !(x.design == "linux" && x.call_pattern == "per-vma"))
        .filter_map(|x| x.ratio_to_kernel.map(|v| (x, v)))
        .collect();
    at.sort_by(|a, b| b.1.median.total_cmp(&a.1.median));
    let (hi, lo) = (at.first()?, at.last()?);
    let within = if cores > 0 && t <= cores {
        format!(" (the most this {cores}-CPU machine runs at once)")
    } else {
        String::new()
    };
    Some(format!(
        "{w}, {t} thread(s){within}, as measured, without a verdict: the largest ratio to today's \
         kernel (linux per-vma) is {} {}'s {}, the smallest {} {}'s {} (median [min-max] over the \
         rounds, each paired with linux's).",
        hi.0.design,
        hi.0.call_pattern,
        ratio_shown(&hi.1),
        lo.0.design,
        lo.0.call_pattern,
        ratio_shown(&lo.1)
    ))
}

fn workload_finding(r: &Results, w: &str, cores: usize) -> String {
    let has_kernel = r
        .summary
        .iter()
        .any(|x| x.workload == w && x.design == "linux" && x.call_pattern == "per-vma");
    if !has_kernel {
        return format!(
            "{w}: linux per-vma (today's kernel) did not run, so no design is judged against it; \
             see the tables for the ratios to linux with the same call pattern."
        );
    }
    let Some(t) = site_threads(r, w) else {
        return format!("{w}: nothing was measured.");
    };
    let judged = |x: &&Summary| {
        x.workload == w && !x.bound && !(x.design == "linux" && x.call_pattern == "per-vma")
    };
    let at: Vec<&Summary> = r
        .summary
        .iter()
        .filter(|x| x.threads == t)
        .filter(judged)
        .collect();
    let by = |v: Verdict| {
        let mut list: Vec<&Summary> = at
            .iter()
            .copied()
            .filter(|x| x.vs_kernel == Some(v))
            .collect();
        list.sort_by(|a, b| {
            let m = |x: &Summary| x.ratio_to_kernel.map_or(1.0, |s| s.median);
            m(b).total_cmp(&m(a))
        });
        list
    };
    let (faster, slower) = (by(Verdict::Faster), by(Verdict::Slower));
    let ties = at.len() - faster.len() - slower.len();
    let within = if cores > 0 && t <= cores {
        format!(" (the most this {cores}-CPU machine runs at once)")
    } else {
        String::new()
    };
    let name = |x: &Summary| format!("{} {}", x.design, x.call_pattern);
    let ratio = |x: &Summary| x.ratio_to_kernel.map_or("-".into(), |s| ratio_shown(&s));
    let short_list = |v: &[&Summary]| {
        v.iter()
            .map(|x| {
                format!(
                    "{} {}x",
                    name(x),
                    x.ratio_to_kernel
                        .map_or("-".into(), |s| fmt_ratio(s.median))
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut s = format!("{w}, {t} thread(s){within}: ");
    if faster.is_empty() && slower.is_empty() {
        let elsewhere = r
            .summary
            .iter()
            .filter(judged)
            .filter(|x| matches!(x.vs_kernel, Some(Verdict::Faster | Verdict::Slower)))
            .count();
        if elsewhere == 0 {
            let _ = write!(
                s,
                "nothing differs beyond noise on this machine: every design ties today's kernel \
                 (linux per-vma) at every thread count"
            );
        } else {
            let _ = write!(
                s,
                "nothing differs from today's kernel (linux per-vma) beyond noise; {elsewhere} \
                 point(s) at other thread counts do (the ablation table)"
            );
        }
    } else if let Some(best) = faster.first() {
        let _ = write!(
            s,
            "{} is the fastest, {} today's kernel (linux per-vma), faster in every one of {} rounds",
            name(best),
            ratio(best),
            best.ratio_to_kernel.map_or(0, |x| x.n)
        );
        if faster.len() > 1 {
            let _ = write!(s, "; also faster: {}", short_list(&faster[1..]));
        }
        if !slower.is_empty() {
            let _ = write!(s, "; slower: {}", short_list(&slower));
        }
        if ties > 0 {
            let _ = write!(s, "; {ties} other(s) tie");
        }
    } else {
        let _ = write!(
            s,
            "no design beats today's kernel (linux per-vma) beyond noise; slower: {}",
            short_list(&slower)
        );
        if ties > 0 {
            let _ = write!(s, "; {ties} other(s) tie");
        }
    }
    s.push('.');
    if let Some(b) = r
        .summary
        .iter()
        .filter(|x| x.workload == w && x.threads == t && x.bound)
        .filter_map(|x| x.ratio_to_kernel.map(|v| (x, v)))
        .max_by(|a, b| a.1.median.total_cmp(&b.1.median))
    {
        let _ = write!(
            s,
            " Without any reverse map ({}, a bound, not a design) the model measured {}x today's kernel: \
             the headroom a reverse-map design has on this machine.",
            name(b.0),
            fmt_ratio(b.1.median)
        );
    }
    s
}

/// Everything printed after a bench and by `aspace report`.
pub fn text(r: &Results) -> String {
    let mut s = String::from("\nWhat this run found:\n");
    for f in findings(r) {
        let _ = writeln!(s, "  {f}");
    }
    let _ = writeln!(
        s,
        "\n{}\n\
         Verdicts against linux with the same call pattern (+ faster, - slower, ~ tie, ? too few rounds): {}.\n\
         ! = an outlier sample or paired ratio (listed at the end). \
         * = more threads than this machine's {} cores (oversubscribed: time-slicing, not contention).",
        interval_sentence(r),
        verdict_rule(rounds(r)),
        r.machine.cores
    );
    for w in workloads(r) {
        let _ = writeln!(s, "\n{}", workload_sentence(&w));
        let _ = writeln!(
            s,
            "{:<18} {:<8} {:>4}  {:>26} {:>20} {:>8} {:>8} {:>10} {:>11}",
            "design",
            "pattern",
            "thr",
            "ops/s",
            "x linux",
            "holds/op",
            "calls/op",
            "contended",
            "libc rmap"
        );
        for x in r.summary.iter().filter(|x| x.workload == w) {
            let ratio = if x.vs_linux == Some(Verdict::Reference) {
                "ref".to_owned()
            } else {
                x.ratio_to_linux.as_ref().map_or_else(
                    || "-".to_owned(),
                    |v| format!("{}{}", show(v, fmt_ratio), mark(x.vs_linux)),
                )
            };
            let _ = writeln!(
                s,
                "{:<18} {:<8} {:>3}{}  {:>26} {:>20} {:>8.1} {:>8.1} {:>9.1}% {:>11}",
                design_label(x),
                x.call_pattern,
                x.threads,
                if x.oversubscribed { "*" } else { " " },
                format!("{}{}", show(&x.ops_per_sec, fmt_rate), flag(r, x)),
                ratio,
                x.lock_holds_per_op,
                x.rmap_calls_per_op,
                x.contended_pct.median,
                fmt_bytes(x.libc_rmap_bytes),
            );
        }
        s.push_str(&ablation_text(r, &w));
        s.push_str(&steps_text(r, &w));
        s.push_str(&sites_text(r, &w));
        s.push_str(&walk_text(r, &w));
    }
    s.push_str(&memory_text(r));
    s.push_str(&fits_text(r));
    s.push_str(&outliers_text(r));
    s
}

fn ablation_text(r: &Results, w: &str) -> String {
    let mut s = String::new();
    let ts = thread_counts(r, w);
    let has_kernel = r
        .summary
        .iter()
        .any(|x| x.workload == w && x.design == "linux" && x.call_pattern == "per-vma");
    if !has_kernel {
        let _ = writeln!(
            s,
            "\n(ablations: linux per-vma did not run, so there is no common baseline)"
        );
        return s;
    }
    let _ = writeln!(
        s,
        "\nAblations ({w}): x linux per-vma (today's kernel), median [min-max] of the paired ratios; + faster, - slower, ~ tie, ? too few rounds"
    );
    let _ = write!(s, "{:<18} {:<8} {:<52}", "design", "pattern", "isolates");
    for t in &ts {
        let _ = write!(
            s,
            " {:>18}",
            format!("{t} thr{}", if oversub(r, *t) { "*" } else { "" })
        );
    }
    s.push('\n');
    for (d, p) in ablation_order(rows(r, w)) {
        let _ = write!(s, "{d:<18} {p:<8} {:<52}", ablation_label(&d, &p));
        for &t in &ts {
            let cell = find(r, w, &d, &p, t).map_or_else(String::new, |x| {
                if x.design == "linux" && x.call_pattern == "per-vma" {
                    "1 (ref)".to_owned()
                } else {
                    x.ratio_to_kernel.as_ref().map_or_else(
                        || "-".to_owned(),
                        |v| format!("{}{}", show(v, fmt_ratio), mark(x.vs_kernel)),
                    )
                }
            });
            let _ = write!(s, " {cell:>18}");
        }
        s.push('\n');
    }
    s
}

/// Where the headline's gain comes from: each idea added on top of the previous
/// one, as a ratio paired by repeat.
/// A (design, call pattern) series.
type SeriesKey = (&'static str, &'static str);

const STEPS: [(&str, SeriesKey, SeriesKey); 5] = [
    (
        "batching alone (linux batched / per-vma)",
        ("linux", "batched"),
        ("linux", "per-vma"),
    ),
    (
        "grouping (aspace_central / linux, per-vma)",
        ("aspace_central", "per-vma"),
        ("linux", "per-vma"),
    ),
    (
        "promotion (aspace / aspace_central, per-vma)",
        ("aspace", "per-vma"),
        ("aspace_central", "per-vma"),
    ),
    (
        "batching on aspace (batched / per-vma)",
        ("aspace", "batched"),
        ("aspace", "per-vma"),
    ),
    (
        "headroom to the bound (exclude / aspace, batched)",
        ("exclude", "batched"),
        ("aspace", "batched"),
    ),
];

fn steps_text(r: &Results, w: &str) -> String {
    let mut s = String::new();
    let ts = thread_counts(r, w);
    let rows: Vec<(&str, Vec<String>)> = STEPS
        .iter()
        .filter_map(|&(label, a, b)| {
            let cells: Vec<String> = ts
                .iter()
                .map(|&t| {
                    r.step(w, t, a, b).map_or("-".to_owned(), |(v, verdict)| {
                        format!("{}{}", show(&v, fmt_ratio), mark(Some(verdict)))
                    })
                })
                .collect();
            cells.iter().any(|c| c != "-").then_some((label, cells))
        })
        .collect();
    if rows.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "\nWhere the gain comes from ({w}): each step's ratio, paired by repeat; + faster, - slower, ~ tie, ? too few rounds"
    );
    let _ = write!(s, "{:<52}", "step");
    for t in &ts {
        let _ = write!(
            s,
            " {:>18}",
            format!("{t} thr{}", if oversub(r, *t) { "*" } else { "" })
        );
    }
    s.push('\n');
    for (label, cells) in rows {
        let _ = write!(s, "{label:<52}");
        for c in cells {
            let _ = write!(s, " {c:>18}");
        }
        s.push('\n');
    }
    s
}

fn oversub(r: &Results, t: usize) -> bool {
    r.machine.cores != 0 && t > r.machine.cores
}

/// Rows in the ablation table's order: the reference, batching alone, the other
/// designs, aspace's ablations, aspace, then the bound.
fn ablation_order(mut v: Vec<(String, String)>) -> Vec<(String, String)> {
    let rank = |d: &str, p: &str| match (d, p) {
        ("linux", "per-vma") => 0,
        ("linux", _) => 1,
        ("aspace_central", _) => 7,
        ("aspace", "per-vma") => 8,
        ("aspace", _) => 9,
        ("exclude", _) => 10,
        _ => 5,
    };
    v.sort_by_key(|(d, p)| rank(d, p));
    v
}

fn sites_text(r: &Results, w: &str) -> String {
    match site_threads(r, w) {
        Some(t) => sites_text_at(r, w, t),
        None => String::new(),
    }
}

/// The per-call-site table of one thread count.
fn sites_text_at(r: &Results, w: &str, t: usize) -> String {
    let mut s = String::new();
    let any = r
        .summary
        .iter()
        .any(|x| x.workload == w && !x.sites.is_empty());
    if !any {
        let _ = writeln!(
            s,
            "\nPer call site ({w}): not recorded (this build's reverse maps do not count per call site)"
        );
        return s;
    }
    let _ = writeln!(
        s,
        "\nPer call site ({w}, {t} thread(s){}): lock holds per op / mean hold time, counted by the maps",
        if oversub(r, t) { ", oversubscribed" } else { "" }
    );
    let _ = write!(s, "{:<18} {:<8}", "design", "pattern");
    for site in SITES {
        let _ = write!(s, " {site:>18}");
    }
    s.push('\n');
    for (d, p) in rows(r, w) {
        let Some(x) = find(r, w, &d, &p, t) else {
            continue;
        };
        let _ = write!(s, "{d:<18} {p:<8}");
        for site in SITES {
            let cell = x.sites.iter().find(|c| c.site == site).map_or_else(
                || "-".to_owned(),
                |c| {
                    if c.holds_per_op == 0.0 {
                        "0".to_owned()
                    } else {
                        format!("{:.2} / {}", c.holds_per_op, fmt_ns(c.mean_hold_ns))
                    }
                },
            );
            let _ = write!(s, " {cell:>18}");
        }
        s.push('\n');
    }
    s
}

fn walk_text(r: &Results, w: &str) -> String {
    let mut s = String::new();
    if !r
        .summary
        .iter()
        .any(|x| x.workload == w && x.walk.is_some())
    {
        return s;
    }
    let _ = writeln!(
        s,
        "\nReclaim walks of libc ({w}): rate asked / achieved, latency p50 / p99 (lock wait included)"
    );
    for x in r.summary.iter().filter(|x| x.workload == w) {
        let Some(k) = &x.walk else { continue };
        let detail = match &k.unsupported {
            Some(why) => format!("cannot walk: {why}"),
            None => format!(
                "{:.0}/s of {:.0}/s, p50 {}, p99 {}",
                k.achieved_per_sec,
                k.requested_per_sec,
                fmt_ns(k.p50_ns as f64),
                fmt_ns(k.p99_ns as f64)
            ),
        };
        let _ = writeln!(
            s,
            "{:<18} {:<8} {:>3}{}  {detail}",
            x.design,
            x.call_pattern,
            x.threads,
            if x.oversubscribed { "*" } else { " " }
        );
    }
    s
}

fn memory_text(r: &Results) -> String {
    let mut s = String::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    let _ = writeln!(
        s,
        "\nMemory: libc's reverse map with the residents in it (median over samples), vs linux with the same call pattern"
    );
    for x in &r.summary {
        let k = (x.design.clone(), x.call_pattern.clone());
        if seen.contains(&k) {
            continue;
        }
        seen.push(k);
        let linux = r
            .summary
            .iter()
            .find(|l| l.design == "linux" && l.call_pattern == x.call_pattern)
            .map(|l| l.libc_rmap_bytes);
        let vs = match linux {
            Some(l) if l > 0 && x.design != "linux" => format!(
                " ({:+.1}% vs linux)",
                100.0 * (x.libc_rmap_bytes as f64 / l as f64 - 1.0)
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "{:<18} {:<8} {:>10} B{vs}",
            x.design, x.call_pattern, x.libc_rmap_bytes
        );
    }
    s
}

/// The USL fits and projections, as text; one line saying so when nothing was fitted.
pub fn fits_text(r: &Results) -> String {
    let mut s = String::new();
    if !r.any_fit() {
        let _ = writeln!(s, "\nNo USL fit, so no projection: {NOT_FITTED}.");
        return s;
    }
    let _ = writeln!(
        s,
        "\nUSL fit X(N) = lambda*N / (1 + sigma*(N-1) + kappa*N*(N-1)) of the medians, and PROJECTIONS (not measurements) to {} cores:",
        PROJECT_TO.map(|n| n.to_string()).join(" and ")
    );
    let _ = writeln!(
        s,
        "{:<8} {:<26} {:>10} {:>9} {:>10} {:>9} {:>10} {:>14} {:>14}",
        "workload",
        "series",
        "lambda",
        "sigma",
        "kappa",
        "fit err",
        "peak N",
        "proj. 112",
        "proj. 384"
    );
    for f in &r.fits {
        match f.usl {
            Some(u) => {
                let p = |n: usize| {
                    f.projections
                        .iter()
                        .find(|x| x.0 == n)
                        .map_or("-".into(), |x| fmt_rate(x.1))
                };
                let _ = writeln!(
                    s,
                    "{:<8} {:<26} {:>10} {:>9.4} {:>10.6} {:>8.1}% {:>10} {:>14} {:>14}",
                    f.workload,
                    f.design,
                    fmt_rate(u.lambda),
                    u.sigma,
                    u.kappa,
                    u.rms_error_pct,
                    u.peak().map_or("none".into(), |n| format!("{n:.0}")),
                    p(112),
                    p(384)
                );
            }
            None => {
                let _ = writeln!(s, "{:<8} {:<26} (not fitted)", f.workload, f.design);
            }
        }
    }
    if r.fits.iter().any(|f| f.usl.is_none()) {
        let _ = writeln!(s, "{NOT_FITTED}");
    }
    s
}

// ------------------------------------------------------------------------- html

/// The self-contained HTML report: what ran, plots, tables, fits, machine.
pub fn html(r: &Results) -> String {
    let mut o = String::new();
    let m = &r.machine;
    let ws = workloads(r);
    let what: Vec<String> = ws
        .iter()
        .map(|w| format!("<li>{}</li>", esc(workload_sentence(w))))
        .collect();
    // (pattern, what it did, the designs that ran with it)
    let mut patterns: Vec<(String, String, Vec<String>)> = Vec::new();
    for x in &r.runs {
        match patterns
            .iter_mut()
            .find(|p| p.0 == x.call_pattern && p.1 == x.call_pattern_detail)
        {
            Some(p) if !p.2.contains(&x.design) => p.2.push(x.design.clone()),
            Some(_) => {}
            None => patterns.push((
                x.call_pattern.clone(),
                x.call_pattern_detail.clone(),
                vec![x.design.clone()],
            )),
        }
    }
    let _ = write!(
        o,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>aspace bench report</title>\
<style>{STYLE}</style></head><body>\
<h1>aspace bench: reverse-map designs under exec churn</h1>\
<div class=\"finding\"><h2>What this run found</h2>{found}</div>\
<p>What ran, on the address-space model, with <b>{res}</b> resident processes keeping libc's reverse map at \
{libc} VMAs:</p><ul>{what}</ul>\
<p>Every design ran the same workload; how <code>mm</code> calls the reverse maps (the call pattern) is a \
separate axis, listed below, and each row says which one it used. {interval} &ldquo;x linux&rdquo; is the ratio to the \
<code>linux</code> design (the kernel's i_mmap interval tree under one rwsem) with the same call pattern, \
thread count and repeat. Verdicts: {rule}. A sample or ratio marked ! is an outlier (below half or above \
twice its point's median). Lock holds are counted by the reverse maps; rmap calls by <code>mm</code>. \
Thread counts above the machine's {cores} cores are oversubscribed (marked *): they measure time-slicing. \
Lock hold times were {timing}.</p>\
<p>Machine: {cpu}, {cores} CPUs, {nodes} NUMA node(s), kernel {kernel}; <code>aspace</code> built from commit \
<code>{commit}</code> ({build}). Binary <code>{bin}</code>, {dur} s per sample, topology {topo}, reclaim walks asked {walk}/s.</p>",
        res = r.runs.first().map_or(0, |x| x.resident),
        libc = r.runs.first().map_or(0, |x| x.resident_libc_vmas),
        what = what.join(""),
        interval = esc(&interval_sentence(r)),
        found = findings(r)
            .iter()
            .map(|f| format!("<p>{}</p>", esc(f)))
            .collect::<String>(),
        rule = esc(&verdict_rule(rounds(r))),
        cpu = esc(&m.cpu_model),
        cores = m.cores,
        nodes = m.nodes,
        kernel = esc(&m.kernel),
        commit = esc(&m.commit),
        build = if m.build.is_empty() {
            "build not recorded".into()
        } else {
            esc(&m.build)
        },
        bin = esc(&r.config.binary),
        dur = r.config.duration_s,
        topo = esc(&r.config.topology),
        walk = r.config.walk_rate,
        timing = if r.config.hold_timing {
            "measured (two clock reads per lock hold, in every design alike)"
        } else {
            "not measured (per-site hold times read 0)"
        },
    );
    o.push_str("<h2>Call patterns</h2>");
    o.push_str(&table(
        &patterns
            .iter()
            .map(|(n, d, ds)| vec![n.clone(), ds.join(", "), d.clone()])
            .collect::<Vec<_>>(),
        &["pattern", "designs", "what mm did at each call site"],
    ));
    if patterns.iter().any(|p| p.0 == "legacy") {
        o.push_str(
            "<p>legacy: written by an aspace from before the call pattern was an axis; the \
             descriptions are as that version recorded them, unchecked, and its fork \
             description was wrong for <code>aspace</code>, which forked with one \
             <code>insert_after_batch</code> per file. It counted no holds per call site.</p>",
        );
    }
    for w in &ws {
        let _ = write!(o, "<h2>{}</h2>{}", esc(w), crate::plot::bench(r, w, None));
        let rows: Vec<Vec<String>> = r
            .summary
            .iter()
            .filter(|x| &x.workload == w)
            .map(|x| {
                vec![
                    design_label(x),
                    x.call_pattern.clone(),
                    format!("{}{}", x.threads, if x.oversubscribed { "*" } else { "" }),
                    format!("{}{}", show(&x.ops_per_sec, fmt_rate), flag(r, x)),
                    if x.vs_linux == Some(Verdict::Reference) {
                        "ref".into()
                    } else {
                        x.ratio_to_linux
                            .as_ref()
                            .map_or("-".into(), |v| show(v, fmt_ratio))
                    },
                    x.vs_linux.map_or("-".into(), |v| v.to_string()),
                    format!("{:.1}", x.lock_holds_per_op),
                    format!("{:.1}", x.rmap_calls_per_op),
                    format!("{:.1}", x.contended_pct.median),
                    fmt_bytes(x.libc_rmap_bytes),
                ]
            })
            .collect();
        o.push_str(&table(
            &rows,
            &[
                "design",
                "pattern",
                "threads",
                "ops/s",
                "x linux",
                "vs linux",
                "lock holds / op",
                "rmap calls / op",
                "contended %",
                "libc rmap bytes",
            ],
        ));
        let _ = write!(
            o,
            "<h3>Ablations</h3><pre>{}{}</pre>",
            esc(&ablation_text(r, w)),
            esc(&steps_text(r, w))
        );
        let _ = write!(
            o,
            "<h3>Per call site</h3><pre>{}</pre>",
            esc(&if r
                .summary
                .iter()
                .any(|x| &x.workload == w && !x.sites.is_empty())
            {
                thread_counts(r, w)
                    .into_iter()
                    .map(|t| sites_text_at(r, w, t))
                    .collect::<String>()
            } else {
                sites_text(r, w)
            })
        );
        let wt = walk_text(r, w);
        if !wt.is_empty() {
            let _ = write!(o, "<h3>Walks</h3><pre>{}</pre>", esc(&wt));
        }
        if r.fits.iter().any(|f| &f.workload == w && f.usl.is_some()) {
            let _ = write!(
                o,
                "<h3 class=\"proj\">Projection (USL fit, not measured)</h3>{}",
                crate::plot::projection(r, w)
            );
        }
    }
    let _ = write!(o, "<h2>Memory</h2><pre>{}</pre>", esc(&memory_text(r)));
    let out = outliers_text(r);
    if !out.is_empty() {
        let _ = write!(o, "<h2>Outliers</h2><pre>{}</pre>", esc(out.trim_start()));
    }
    o.push_str("<h2>USL fits and projections</h2>");
    if !r.any_fit() {
        let _ = write!(o, "<p>No fit, no projection: {}.</p>", esc(NOT_FITTED));
    } else {
        o.push_str("<p class=\"proj\">Projections extrapolate the fitted curve far beyond the measured thread counts: read them as the shape the measured points imply, not as measurements.</p>");
        let _ = write!(o, "<pre>{}</pre>", esc(&fits_text(r)));
    }
    o.push_str(&crate::predict::host::bench_section(
        r,
        r.predicted.as_ref(),
    ));
    o.push_str("</body></html>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Machine, Run};

    /// Six rounds on a 2-core machine at 1 and 2 threads: linux per-vma, and
    /// `others` as (design, pattern, ratio to linux in each round).
    fn run_of(others: &[(&str, &str, [f64; 6])], linux: [f64; 6]) -> Results {
        let mut runs = Vec::new();
        for threads in [1, 2] {
            for rep in 0..6 {
                let base = linux[rep] * threads as f64;
                let mut push = |d: &str, p: &str, ops: f64| {
                    runs.push(Run {
                        workload: "execl".into(),
                        design: d.into(),
                        call_pattern: p.into(),
                        threads,
                        repeat: rep,
                        ops_per_sec: ops,
                        bound: d == "exclude",
                        ..Run::default()
                    })
                };
                push("linux", "per-vma", base);
                for (d, p, ratio) in others {
                    push(d, p, base * ratio[rep]);
                }
            }
        }
        let mut r = Results {
            machine: Machine {
                cores: 2,
                ..Machine::default()
            },
            config: Default::default(),
            runs,
            summary: Vec::new(),
            fits: Vec::new(),
            predicted: None,
        };
        r.analyse();
        r
    }

    const SWING: [f64; 6] = [40e3, 20e3, 35e3, 45e3, 25e3, 30e3];

    #[test]
    fn findings_name_the_winner_the_losers_and_the_bound() {
        let r = run_of(
            &[
                ("aspace", "batched", [1.15, 1.3, 1.41, 1.41, 1.6, 2.29]),
                ("sharded", "per-vma", [0.8, 0.9, 0.85, 0.7, 0.9, 0.88]),
                (
                    "numa_locks",
                    "per-vma",
                    [1.02, 0.97, 1.01, 0.99, 1.03, 0.98],
                ),
                ("exclude", "per-vma", [2.0, 2.1, 1.9, 2.2, 2.0, 2.05]),
            ],
            SWING,
        );
        let f = findings(&r);
        let first = &f[0];
        assert!(
            first.starts_with("execl, 2 thread(s) (the most this 2-CPU machine runs at once): aspace batched is the fastest, 1.41x [1.15-2.29]"),
            "{first}"
        );
        assert!(first.contains("slower: sharded per-vma 0.86x"), "{first}");
        assert!(first.contains("1 other(s) tie"), "{first}");
        assert!(first.contains("exclude per-vma, a bound"), "{first}");
        // The terminal and the HTML open with it.
        assert!(text(&r).starts_with("\nWhat this run found:\n  execl, 2 thread(s)"));
        assert!(html(&r).contains("<h2>What this run found</h2><p>execl, 2 thread(s)"));
    }

    #[test]
    fn findings_say_when_nothing_differs() {
        let r = run_of(
            &[
                ("aspace", "per-vma", [1.1, 0.9, 1.05, 0.95, 1.2, 0.97]),
                ("sharded", "per-vma", [1.02, 0.97, 1.01, 0.99, 1.03, 0.98]),
            ],
            SWING,
        );
        assert!(
            findings(&r)[0].contains("nothing differs beyond noise on this machine"),
            "{:?}",
            findings(&r)
        );
        // Three rounds: no verdicts at all, and it says so.
        let mut few = r.clone();
        few.runs.retain(|x| x.repeat < 3);
        few.analyse();
        let f = findings(&few);
        assert!(
            f[0].contains("no design can be called faster or slower"),
            "{f:?}"
        );
        assert!(
            f[1].contains("without a verdict: the largest ratio to today's kernel (linux per-vma) is aspace per-vma's"),
            "{f:?}"
        );
    }

    /// A sample far below its point's median (45.68 ops/s among 20k) is
    /// flagged in the table and listed, with the ratios it distorts.
    #[test]
    fn outliers_are_flagged_and_listed() {
        let mut r = run_of(&[("aspace", "per-vma", [1.2; 6])], SWING);
        for x in &mut r.runs {
            if x.design == "linux" && x.threads == 2 && x.repeat == 3 {
                x.ops_per_sec = 45.68;
            }
        }
        r.analyse();
        let t = text(&r);
        let lx = r
            .summary
            .iter()
            .find(|x| x.design == "linux" && x.threads == 2)
            .unwrap();
        assert_eq!(flag(&r, lx), "!");
        let ax = r
            .summary
            .iter()
            .find(|x| x.design == "aspace" && x.threads == 2)
            .unwrap();
        assert_eq!(flag(&r, ax), "!", "its ratio of that round is an outlier");
        assert!(
            t.contains("execl linux per-vma 2 thr, round 4: 45.68 /s"),
            "{t}"
        );
        assert!(findings(&r)
            .iter()
            .any(|f| f.starts_with("1 of 24 samples are outliers")));
    }
}
