//! Rendering: the terminal tables, the SVG plots and the HTML report.
//!
//! Every throughput and ratio is shown as `median [min-max]` over the repeats; a
//! design is called faster or slower than linux only when the spreads do not overlap
//! (see [`crate::spread`]). Nothing here claims more than the JSON holds: sentences
//! about the run are built from what it recorded.
//!
//! The plots are hand-written SVG: lines, min-max error bars, an oversubscribed band
//! and 1-2-5 ticks are a few dozen lines here, fewer than a plotting crate's setup,
//! and they add no dependency to the build.

use crate::html::{esc, table, STYLE};
use crate::results::{Results, Summary, NOT_FITTED, PROJECT_TO};
use crate::spread::{disjoint_chance, show, Spread, Verdict};
use std::fmt::Write as _;

const COLORS: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
    "#7f7f7f", "#bcbd22",
];

/// The call sites, in the order the tables show them.
pub const SITES: [&str; 7] = [
    "mmap_link",
    "replace_unlink",
    "split",
    "exit_unlink",
    "fork_insert_after",
    "walk",
    "other",
];

fn fmt_rate(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e4 {
        format!("{:.1}k", x / 1e3)
    } else if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

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

/// Everything printed after a bench and by `aspace report`.
pub fn text(r: &Results) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n{}\n\
         Verdict against linux with the same call pattern: + faster, - slower (spreads apart), ~ tie (spreads overlap).\n\
         * = more threads than this machine's {} cores (oversubscribed: time-slicing, not contention).",
        interval_sentence(r),
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
                show(&x.ops_per_sec, fmt_rate),
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
        "\nAblations ({w}): x linux per-vma (today's kernel), median [min-max]; + faster, - slower, ~ tie"
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
        "\nWhere the gain comes from ({w}): each step's ratio, paired by repeat; + faster, - slower, ~ tie"
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

// ------------------------------------------------------------------------ plots

struct Series {
    name: String,
    color: &'static str,
    dashed: bool,
    /// (threads, spread)
    points: Vec<(f64, Spread)>,
    usl: Option<crate::usl::Usl>,
}

fn series(r: &Results, workload: &str) -> Vec<Series> {
    let mut designs: Vec<String> = Vec::new();
    for x in &r.summary {
        if !designs.contains(&x.design) {
            designs.push(x.design.clone());
        }
    }
    r.series()
        .into_iter()
        .filter(|(w, _)| w == workload)
        .map(|(w, name)| {
            let pts: Vec<&Summary> = r
                .summary
                .iter()
                .filter(|x| x.workload == w && x.series_name() == name)
                .collect();
            let design = pts.first().map_or("", |x| x.design.as_str());
            let ci = designs.iter().position(|d| d == design).unwrap_or(0);
            Series {
                dashed: pts.first().is_some_and(|x| x.call_pattern == "batched"),
                points: pts
                    .iter()
                    .map(|x| (x.threads as f64, x.ops_per_sec))
                    .collect(),
                usl: r
                    .fits
                    .iter()
                    .find(|f| f.workload == w && f.design == name)
                    .and_then(|f| f.usl),
                color: COLORS[ci % COLORS.len()],
                name,
            }
        })
        .collect()
}

/// Tick values for an axis from 0 to `max`: 4 to 8 steps of 1, 2 or 5 x 10^k.
pub fn nice_ticks(max: f64) -> Vec<f64> {
    if !(max.is_finite() && max > 0.0) {
        return vec![0.0, 1.0];
    }
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|&st| max / st <= 8.0)
        .unwrap_or(10.0 * mag);
    let mut v = Vec::new();
    let mut k = 0.0;
    while k * step <= max * (1.0 + 1e-9) {
        v.push(k * step);
        k += 1.0;
    }
    if *v.last().unwrap_or(&0.0) < max {
        v.push(k * step);
    }
    v
}

/// An SVG plot of throughput against threads: one line per design and call pattern
/// (batched dashed), each point its median with a min-max error bar, oversubscribed
/// thread counts shaded. With `projection`, the x axis runs to the largest projection
/// core count and only the fitted USL curves are drawn, labelled as projections;
/// call it only when [`Results::any_fit`].
pub fn svg(r: &Results, workload: &str, projection: bool) -> String {
    let ser = series(r, workload);
    let (w, h) = (860.0, 480.0);
    let (l, rt, t, b) = (80.0, 260.0, 40.0, 50.0);
    let measured_max = ser
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(1.0, f64::max);
    let xmax = if projection {
        PROJECT_TO[PROJECT_TO.len() - 1] as f64
    } else {
        measured_max + 0.5
    };
    let xmin = if projection { 0.0 } else { 0.5 };
    let curve = |s: &Series, n: f64| s.usl.map(|u| u.at(n));
    let mut ymax: f64 = 1.0;
    for s in &ser {
        for p in &s.points {
            ymax = ymax.max(p.1.max);
        }
        if projection {
            for i in 1..=200 {
                if let Some(y) = curve(s, xmax * i as f64 / 200.0) {
                    ymax = ymax.max(y);
                }
            }
        }
    }
    let yticks = nice_ticks(ymax * 1.05);
    let ytop = *yticks.last().unwrap_or(&ymax);
    let px = |x: f64| l + (w - l - rt) * (x - xmin) / (xmax - xmin);
    let py = |y: f64| h - b - (h - t - b) * y / ytop;
    let mut o = String::new();
    let title = if projection {
        format!("{workload}: USL PROJECTION to {xmax:.0} cores (not measured)")
    } else {
        format!("{workload}: throughput vs threads (median, bars: min-max)")
    };
    let _ = write!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12"><rect width="{w}" height="{h}" fill="white"/><text x="{}" y="22" font-size="15" text-anchor="middle">{}</text>"#,
        (w - rt + l) / 2.0,
        esc(&title)
    );
    // Oversubscribed region.
    let cores = r.machine.cores as f64;
    if !projection && cores > 0.0 && measured_max > cores {
        let x0 = px(cores + 0.5);
        let _ = write!(
            o,
            r##"<rect x="{x0:.1}" y="{t}" width="{:.1}" height="{}" fill="#f4f4f4"/><text x="{:.1}" y="{}" fill="#777" text-anchor="middle">oversubscribed (&gt; {cores:.0} cores)</text>"##,
            px(xmax) - x0,
            h - t - b,
            (x0 + px(xmax)) / 2.0,
            t + 14.0
        );
    }
    let _ = write!(
        o,
        r#"<line x1="{l}" y1="{0}" x2="{1}" y2="{0}" stroke="black"/><line x1="{l}" y1="{t}" x2="{l}" y2="{0}" stroke="black"/>"#,
        h - b,
        w - rt
    );
    for y in &yticks {
        let _ = write!(
            o,
            r##"<line x1="{l}" y1="{0:.1}" x2="{1}" y2="{0:.1}" stroke="#ddd"/><text x="{2}" y="{3:.1}" text-anchor="end">{4}</text>"##,
            py(*y),
            w - rt,
            l - 6.0,
            py(*y) + 4.0,
            fmt_rate(*y)
        );
    }
    let xticks: Vec<f64> = if projection {
        vec![1.0, 64.0, 112.0, 192.0, 256.0, 384.0]
    } else {
        let mut v: Vec<f64> = ser
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    };
    for x in xticks {
        let _ = write!(
            o,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{x:.0}</text>"#,
            px(x),
            h - b + 16.0
        );
    }
    let _ = write!(
        o,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text><text transform="translate(18 {}) rotate(-90)" text-anchor="middle">{}/s</text>"#,
        (w - rt + l) / 2.0,
        h - 12.0,
        if projection {
            "cores (projected)"
        } else {
            "worker threads"
        },
        (h - b + t) / 2.0,
        if workload == "shell" {
            "fork+exec+exit"
        } else {
            "exec+exit"
        }
    );
    let nser = ser.len().max(1) as f64;
    for (i, s) in ser.iter().enumerate() {
        let dash = if s.dashed || projection {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        // Spread the series a little along x so error bars do not hide each other.
        let jitter = if projection {
            0.0
        } else {
            0.3 * ((i as f64 + 0.5) / nser - 0.5)
        };
        if projection {
            let pts: Vec<String> = (1..=200)
                .filter_map(|k| {
                    let n = 1.0 + (xmax - 1.0) * k as f64 / 200.0;
                    curve(s, n).map(|y| format!("{:.1},{:.1}", px(n), py(y)))
                })
                .collect();
            if !pts.is_empty() {
                let _ = write!(
                    o,
                    r#"<polyline fill="none" stroke="{}" stroke-width="2"{dash} points="{}"/>"#,
                    s.color,
                    pts.join(" ")
                );
            }
        } else {
            let pts: Vec<String> = s
                .points
                .iter()
                .map(|p| format!("{:.1},{:.1}", px(p.0 + jitter), py(p.1.median)))
                .collect();
            let _ = write!(
                o,
                r#"<polyline fill="none" stroke="{}" stroke-width="2"{dash} points="{}"/>"#,
                s.color,
                pts.join(" ")
            );
        }
        for (x, sp) in &s.points {
            let cx = px(x + jitter);
            if !projection && sp.n > 1 {
                let _ = write!(
                    o,
                    r#"<line x1="{cx:.1}" y1="{:.1}" x2="{cx:.1}" y2="{:.1}" stroke="{}" stroke-width="1.5"/><line x1="{:.1}" y1="{1:.1}" x2="{:.1}" y2="{1:.1}" stroke="{2}"/><line x1="{3:.1}" y1="{0:.1}" x2="{4:.1}" y2="{0:.1}" stroke="{2}"/>"#,
                    py(sp.min),
                    py(sp.max),
                    s.color,
                    cx - 3.0,
                    cx + 3.0
                );
            }
            let _ = write!(
                o,
                r#"<circle cx="{cx:.1}" cy="{:.1}" r="3.5" fill="{}"><title>{} {} threads: {} /s (measured; median [min-max] of {})</title></circle>"#,
                py(sp.median),
                s.color,
                esc(&s.name),
                x,
                show(sp, fmt_rate),
                sp.n
            );
        }
        let ly = t + 17.0 * i as f64 + 10.0;
        let _ = write!(
            o,
            r#"<line x1="{0}" y1="{ly}" x2="{1}" y2="{ly}" stroke="{2}" stroke-width="3"{dash}/><text x="{3}" y="{4}">{5}</text>"#,
            w - rt + 12.0,
            w - rt + 36.0,
            s.color,
            w - rt + 42.0,
            ly + 4.0,
            esc(&s.name)
        );
    }
    let note = if projection {
        "dashes: USL fit of the medians"
    } else {
        "solid: per-vma; dashed: batched"
    };
    let _ = write!(
        o,
        r##"<text x="{}" y="{}" fill="#555">{note}</text>"##,
        w - rt + 12.0,
        t + 17.0 * nser + 24.0,
    );
    o.push_str("</svg>");
    o
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
<p>What ran, on the address-space model, with <b>{res}</b> resident processes keeping libc's reverse map at \
{libc} VMAs:</p><ul>{what}</ul>\
<p>Every design ran the same workload; how <code>mm</code> calls the reverse maps (the call pattern) is a \
separate axis, listed below, and each row says which one it used. {interval} &ldquo;x linux&rdquo; is the ratio to the \
<code>linux</code> design (the kernel's i_mmap interval tree under one rwsem) with the same call pattern, \
thread count and repeat; a design is called faster or slower only when the two spreads do not overlap, \
otherwise it is a tie. Lock holds are counted by the reverse maps; rmap calls by <code>mm</code>. \
Thread counts above the machine's {cores} cores are oversubscribed (marked *): they measure time-slicing. \
Lock hold times were {timing}.</p>\
<p>Machine: {cpu}, {cores} CPUs, {nodes} NUMA node(s), kernel {kernel}; <code>aspace</code> built from commit \
<code>{commit}</code> ({build}). Binary <code>{bin}</code>, {dur} s per sample, topology {topo}, reclaim walks asked {walk}/s.</p>",
        res = r.runs.first().map_or(0, |x| x.resident),
        libc = r.runs.first().map_or(0, |x| x.resident_libc_vmas),
        what = what.join(""),
        interval = esc(&interval_sentence(r)),
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
        let _ = write!(o, "<h2>{}</h2>{}", esc(w), svg(r, w, false));
        let rows: Vec<Vec<String>> = r
            .summary
            .iter()
            .filter(|x| &x.workload == w)
            .map(|x| {
                vec![
                    design_label(x),
                    x.call_pattern.clone(),
                    format!("{}{}", x.threads, if x.oversubscribed { "*" } else { "" }),
                    show(&x.ops_per_sec, fmt_rate),
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
                svg(r, w, true)
            );
        }
    }
    let _ = write!(o, "<h2>Memory</h2><pre>{}</pre>", esc(&memory_text(r)));
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

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(nice_ticks(10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = nice_ticks(73_400.0);
        assert_eq!(t.first(), Some(&0.0));
        assert!(*t.last().unwrap() >= 73_400.0);
        assert!(t.len() >= 4 && t.len() <= 10, "{t:?}");
        let step = t[1] - t[0];
        assert!([1e4, 2e4, 5e4].contains(&step), "{t:?}");
        assert_eq!(nice_ticks(0.0), vec![0.0, 1.0]);
    }
}
