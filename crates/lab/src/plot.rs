//! Plots a person can read: small multiples of throughput against CPU count.
//!
//! Every figure the lab draws (the bench's measured curves, its predicted
//! curves, the USL projections, `aspace predict`'s page) goes through
//! [`render`], so they look and read alike:
//!
//! - CPU or thread counts on a log-2 axis (1, 2, 4, ... 384 spread evenly, so
//!   the small counts a 2-core host measures are not squeezed into a corner);
//! - at most [`MAX_LINES`] lines a panel; more series become more panels
//!   (small multiples) on one shared y scale, so panels compare at a glance;
//! - measured lines solid with filled markers and min-max bars, predicted or
//!   projected lines dashed with hollow markers, and the legend of every
//!   panel draws each line as it is drawn;
//! - outlier samples (see [`crate::spread::is_outlier`]) drawn apart, in red,
//!   and left out of the bars and of the y scale (one beyond the scale is an
//!   arrow at the top edge with its value);
//! - a y axis from 0 whose labels share one unit and precision (0, 5k, 10k).
//!
//! Hand-written SVG: a few hundred lines here against a plotting crate's
//! dependency tree, and the output is a plain file any browser opens.

use crate::html::esc;
use crate::predicted::HostPrediction;
use crate::results::{Results, PROJECT_TO};
use crate::spread::{is_outlier, show, Spread};
use std::fmt::Write as _;

/// The most lines one panel holds; callers split series into panels of at
/// most this many.
pub const MAX_LINES: usize = 6;

/// Line colours, in order: blue, orange, green, purple, brown, pink, olive,
/// cyan (Tableau 10 without its red, which marks outliers, and its grey,
/// which marks references).
pub const COLORS: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf",
];

/// The colour of reference lines (linux in a panel about another design).
pub const REFERENCE: &str = "#7f7f7f";

const OUTLIER: &str = "#d62728";

/// How a line was obtained, which sets how it is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Measured: solid, filled markers, min-max bars.
    Measured,
    /// Predicted by the simulator: dashed, hollow markers.
    Predicted,
    /// Projected by a fitted curve: dotted, no markers.
    Projected,
}

/// One point of a line.
#[derive(Clone, Debug, Default)]
pub struct Pt {
    /// Threads or CPUs (> 0: the axis is logarithmic).
    pub x: f64,
    /// The value drawn (a median, a prediction).
    pub y: f64,
    /// The bar's ends (the samples that are not outliers), when there is a
    /// spread.
    pub bar: Option<(f64, f64)>,
    /// Samples flagged as outliers, drawn apart.
    pub outliers: Vec<f64>,
    /// The tooltip.
    pub note: String,
}

/// One line.
#[derive(Clone, Debug)]
pub struct Line {
    /// The legend entry.
    pub label: String,
    /// Its colour.
    pub color: &'static str,
    /// Measured, predicted or projected.
    pub kind: Kind,
    /// Thinner and behind the others: a reference for comparison.
    pub reference: bool,
    /// Its points (any order; drawn sorted by x).
    pub points: Vec<Pt>,
}

/// One panel: a title and at most [`MAX_LINES`] lines.
#[derive(Clone, Debug)]
pub struct Panel {
    /// Shown above the panel.
    pub title: String,
    /// The lines.
    pub lines: Vec<Line>,
}

/// A figure: panels in a grid on one shared pair of axes.
#[derive(Clone, Debug, Default)]
pub struct Figure {
    /// Shown above every panel.
    pub title: String,
    /// Lines of explanation under the title (what solid, dashed and red mean).
    pub notes: Vec<String>,
    /// The x axis (e.g. "worker threads, log scale").
    pub x_label: String,
    /// The y axis (e.g. "execs/s").
    pub y_label: String,
    /// Shade x above this value (the oversubscribed thread counts), with the
    /// shade's label.
    pub shade_above: Option<(f64, String)>,
    /// The panels.
    pub panels: Vec<Panel>,
    /// Panels per row (0: two, or one when there is one panel).
    pub columns: usize,
}

const PANEL_W: f64 = 440.0;
const PLOT_H: f64 = 180.0;
const LEFT: f64 = 62.0;
const RIGHT: f64 = 14.0;
const PANEL_TOP: f64 = 24.0;
const AXIS_BELOW: f64 = 36.0;
const LEGEND_ROW: f64 = 16.0;
const LEGEND_COLS: usize = 2;

/// A value formatted for an axis whose ticks are `step` apart: one unit (k,
/// M) and one precision for every label, so "0" and "20k" sit together,
/// never "0.00" beside "20.0k".
pub fn tick_label(v: f64, step: f64, top: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let (unit, suffix) = if top >= 1e6 {
        (1e6, "M")
    } else if top >= 1e4 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    // As many decimals as the step needs to be exact (2.5k: one).
    let rel = step / unit;
    let decimals = (0..6)
        .find(|&d| {
            let scaled = rel * 10f64.powi(d);
            (scaled - scaled.round()).abs() < 1e-6 * scaled.max(1.0)
        })
        .unwrap_or(6) as usize;
    format!("{:.*}{suffix}", decimals, v / unit)
}

/// A rate as every table and label of the lab shows it: 1.23M, 45.6k, 789,
/// 0.12.
pub fn rate(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Tick values from 0 to at least `max`: 4 to 8 steps of 1, 2 or 5 x 10^k.
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

/// The labelled ticks of a log-2 axis over `[lo, hi]`: `hi` itself (the
/// largest count, often the point of the plot: 384), the powers of two, then
/// the other values in `data` (e.g. 3, 12, 224), each kept only where it
/// leaves `min_px` to its neighbours at `px_per_doubling`.
pub fn log2_ticks(lo: f64, hi: f64, data: &[f64], px_per_doubling: f64, min_px: f64) -> Vec<f64> {
    let mut cands: Vec<f64> = vec![hi];
    let mut p = 1.0;
    while p <= hi * (1.0 + 1e-9) {
        if p >= lo * (1.0 - 1e-9) && (p - hi).abs() > 1e-9 {
            cands.push(p);
        }
        p *= 2.0;
    }
    for &d in data {
        if d > 0.0 && !cands.iter().any(|&c| (c - d).abs() < 1e-9) {
            cands.push(d);
        }
    }
    let mut kept: Vec<f64> = Vec::new();
    for c in cands {
        let far = kept
            .iter()
            .all(|&k| (c.log2() - k.log2()).abs() * px_per_doubling >= min_px);
        if far {
            kept.push(c);
        }
    }
    kept.sort_by(f64::total_cmp);
    kept
}

/// `text` in lines of at most `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        if !cur.is_empty() && cur.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

fn x_value(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

/// The SVG of `f`.
pub fn render(f: &Figure) -> String {
    let cols = match f.columns {
        0 => f.panels.len().clamp(1, 2),
        c => c.min(f.panels.len().max(1)),
    };
    let rows = f.panels.len().div_ceil(cols).max(1);
    let legend_rows = f
        .panels
        .iter()
        .map(|p| p.lines.len().div_ceil(LEGEND_COLS))
        .max()
        .unwrap_or(0);
    let panel_h = PANEL_TOP + PLOT_H + AXIS_BELOW + LEGEND_ROW * legend_rows as f64 + 10.0;
    let width = PANEL_W * cols as f64;
    // About 6.4 px a character at 12 px sans-serif.
    let notes: Vec<String> = f
        .notes
        .iter()
        .flat_map(|n| wrap(n, ((width - 16.0) / 6.4) as usize))
        .collect();
    let head = 28.0 + 15.0 * notes.len() as f64 + 6.0;
    let height = head + panel_h * rows as f64;

    // Shared scales: every point, bar and in-range value of every panel.
    let xs: Vec<f64> = f
        .panels
        .iter()
        .flat_map(|p| &p.lines)
        .flat_map(|l| &l.points)
        .map(|p| p.x)
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    let (xlo, xhi) = xs.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| {
        (lo.min(x), hi.max(x))
    });
    let (xlo, xhi) = if xs.is_empty() {
        (1.0, 2.0)
    } else {
        (xlo, xhi.max(xlo * 2.0))
    };
    let ymax = f
        .panels
        .iter()
        .flat_map(|p| &p.lines)
        .flat_map(|l| &l.points)
        .flat_map(|p| [Some(p.y), p.bar.map(|b| b.1)])
        .flatten()
        .filter(|y| y.is_finite())
        .fold(0.0f64, f64::max);
    let yticks = nice_ticks(ymax * 1.05);
    let ytop = *yticks.last().unwrap_or(&1.0);
    let ystep = if yticks.len() > 1 {
        yticks[1] - yticks[0]
    } else {
        ytop
    };
    let plot_w = PANEL_W - LEFT - RIGHT;
    // Half a doubling of room at each end.
    let (l0, l1) = (xlo.log2() - 0.35, xhi.log2() + 0.35);
    let per_doubling = plot_w / (l1 - l0);
    let mut data_x: Vec<f64> = xs.clone();
    data_x.sort_by(f64::total_cmp);
    data_x.dedup();
    let xticks = log2_ticks(xlo, xhi, &data_x, per_doubling, 24.0);

    let mut o = String::new();
    let _ = write!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11"><rect width="{width}" height="{height}" fill="white"/><text x="8" y="19" font-size="15" font-weight="bold">{}</text>"#,
        esc(&f.title)
    );
    for (i, n) in notes.iter().enumerate() {
        let _ = write!(
            o,
            r##"<text x="8" y="{:.0}" fill="#444" font-size="12">{}</text>"##,
            36.0 + 15.0 * i as f64,
            esc(n)
        );
    }
    for (k, panel) in f.panels.iter().enumerate() {
        let ox = PANEL_W * (k % cols) as f64;
        let oy = head + panel_h * (k / cols) as f64;
        let (top, bottom) = (oy + PANEL_TOP, oy + PANEL_TOP + PLOT_H);
        let (left, right) = (ox + LEFT, ox + LEFT + plot_w);
        let px = |x: f64| left + (x.log2() - l0) * per_doubling;
        let py = |y: f64| bottom - PLOT_H * (y / ytop).clamp(0.0, 1.0);
        let _ = write!(
            o,
            r#"<text x="{:.1}" y="{:.1}" font-size="13" text-anchor="middle">{}</text>"#,
            (left + right) / 2.0,
            oy + 16.0,
            esc(&panel.title)
        );
        if let Some((above, label)) = &f.shade_above {
            // From halfway between the last value within and the first above.
            if let Some(&next) = data_x.iter().find(|&&x| x > *above) {
                let within = data_x.iter().rev().find(|&&x| x <= *above).copied();
                let x0 = within.map_or(left, |w| (px(w) + px(next)) / 2.0);
                let _ = write!(
                    o,
                    r##"<rect x="{x0:.1}" y="{top:.1}" width="{:.1}" height="{PLOT_H}" fill="#f1f1f1"/><text x="{:.1}" y="{:.1}" fill="#888" text-anchor="end" font-size="10">{}</text>"##,
                    right - x0,
                    right - 3.0,
                    top + 11.0,
                    esc(label)
                );
            }
        }
        for y in &yticks {
            let _ = write!(
                o,
                r##"<line x1="{left:.1}" y1="{0:.1}" x2="{right:.1}" y2="{0:.1}" stroke="#e4e4e4"/><text x="{1:.1}" y="{2:.1}" text-anchor="end">{3}</text>"##,
                py(*y),
                left - 5.0,
                py(*y) + 4.0,
                tick_label(*y, ystep, ytop)
            );
        }
        for x in &xticks {
            let _ = write!(
                o,
                r##"<line x1="{0:.1}" y1="{top:.1}" x2="{0:.1}" y2="{bottom:.1}" stroke="#f0f0f0"/><text x="{0:.1}" y="{1:.1}" text-anchor="middle">{2}</text>"##,
                px(*x),
                bottom + 14.0,
                x_value(*x)
            );
        }
        let _ = write!(
            o,
            r##"<line x1="{left:.1}" y1="{bottom:.1}" x2="{right:.1}" y2="{bottom:.1}" stroke="black"/><line x1="{left:.1}" y1="{top:.1}" x2="{left:.1}" y2="{bottom:.1}" stroke="black"/><text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#333">{}</text><text transform="translate({:.1} {:.1}) rotate(-90)" text-anchor="middle" fill="#333">{}</text>"##,
            (left + right) / 2.0,
            bottom + 29.0,
            esc(&f.x_label),
            ox + 13.0,
            (top + bottom) / 2.0,
            esc(&f.y_label)
        );
        // References first, so the panel's own lines are drawn over them.
        let mut order: Vec<&Line> = panel.lines.iter().filter(|l| l.reference).collect();
        order.extend(panel.lines.iter().filter(|l| !l.reference));
        for line in order {
            draw_line(&mut o, line, &px, &py, ytop, top);
        }
        for (i, line) in panel.lines.iter().enumerate() {
            let lx = ox + 10.0 + (i % LEGEND_COLS) as f64 * (PANEL_W - 20.0) / LEGEND_COLS as f64;
            let ly = bottom + AXIS_BELOW + 6.0 + LEGEND_ROW * (i / LEGEND_COLS) as f64;
            let _ = write!(
                o,
                r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{}" stroke-width="{}"{}/>"#,
                lx + 26.0,
                line.color,
                width_of(line),
                dash_of(line.kind)
            );
            if line.kind != Kind::Projected {
                marker(&mut o, line, lx + 13.0, ly, "");
            }
            let _ = write!(
                o,
                r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
                lx + 31.0,
                ly + 4.0,
                esc(&line.label)
            );
        }
    }
    o.push_str("</svg>");
    o
}

fn dash_of(k: Kind) -> &'static str {
    match k {
        Kind::Measured => "",
        Kind::Predicted => r#" stroke-dasharray="7 4""#,
        Kind::Projected => r#" stroke-dasharray="2 3""#,
    }
}

fn width_of(l: &Line) -> f64 {
    if l.reference {
        1.5
    } else {
        2.2
    }
}

/// A point's marker: filled for a measurement, hollow for a prediction.
fn marker(o: &mut String, l: &Line, x: f64, y: f64, title: &str) {
    let fill = if l.kind == Kind::Measured {
        l.color
    } else {
        "white"
    };
    let r = if l.reference { 2.5 } else { 3.5 };
    let _ = write!(
        o,
        r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{fill}" stroke="{}" stroke-width="1.5">{title}</circle>"#,
        l.color
    );
}

fn draw_line(
    o: &mut String,
    l: &Line,
    px: &dyn Fn(f64) -> f64,
    py: &dyn Fn(f64) -> f64,
    ytop: f64,
    top: f64,
) {
    let mut pts: Vec<&Pt> = l
        .points
        .iter()
        .filter(|p| p.x > 0.0 && p.y.is_finite())
        .collect();
    pts.sort_by(|a, b| a.x.total_cmp(&b.x));
    let path: Vec<String> = pts
        .iter()
        .map(|p| format!("{:.1},{:.1}", px(p.x), py(p.y)))
        .collect();
    let _ = write!(
        o,
        r#"<polyline fill="none" stroke="{}" stroke-width="{}"{} points="{}"/>"#,
        l.color,
        width_of(l),
        dash_of(l.kind),
        path.join(" ")
    );
    for p in pts {
        let cx = px(p.x);
        if let Some((lo, hi)) = p.bar {
            let _ = write!(
                o,
                r#"<line x1="{cx:.1}" y1="{:.1}" x2="{cx:.1}" y2="{:.1}" stroke="{}" stroke-width="1.2"/>"#,
                py(lo),
                py(hi),
                l.color
            );
        }
        if l.kind != Kind::Projected {
            let title = format!("<title>{}</title>", esc(&p.note));
            marker(o, l, cx, py(p.y), &title);
        }
        for &s in &p.outliers {
            let note = format!(
                "<title>{} at {}: outlier sample {} (median {})</title>",
                esc(&l.label),
                x_value(p.x),
                rate(s),
                rate(p.y)
            );
            if s > ytop {
                let _ = write!(
                    o,
                    r#"<path d="M{0:.1},{1:.1} l-4,7 h8 z" fill="{OUTLIER}">{note}</path><text x="{2:.1}" y="{3:.1}" fill="{OUTLIER}" font-size="9">{4}</text>"#,
                    cx,
                    top + 1.0,
                    cx + 5.0,
                    top + 8.0,
                    rate(s)
                );
            } else {
                let _ = write!(
                    o,
                    r#"<circle cx="{cx:.1}" cy="{:.1}" r="4.5" fill="none" stroke="{OUTLIER}" stroke-width="1.5">{note}</circle>"#,
                    py(s)
                );
            }
        }
    }
}

/// Splits `lines` into panels of at most `per_panel` (capped at
/// [`MAX_LINES`] less the reference) lines, each panel led by a copy of
/// `reference` when given; panel `i` is titled by `title(i, lines)`.
pub fn chunk(
    lines: Vec<Line>,
    reference: Option<&Line>,
    per_panel: usize,
    title: impl Fn(&[Line]) -> String,
) -> Vec<Panel> {
    let room = per_panel
        .min(MAX_LINES - usize::from(reference.is_some()))
        .max(1);
    let groups = lines.len().div_ceil(room).max(1);
    // Even groups: 7 lines at 5 a panel become 4 + 3, not 5 + 2.
    let size = lines.len().div_ceil(groups).max(1);
    let mut out = Vec::new();
    let mut it = lines.into_iter().peekable();
    while it.peek().is_some() {
        let group: Vec<Line> = it.by_ref().take(size).collect();
        let mut ls: Vec<Line> = reference.into_iter().cloned().collect();
        let t = title(&group);
        ls.extend(group);
        out.push(Panel {
            title: t,
            lines: ls,
        });
    }
    out
}

// ------------------------------------------------------------ the lab's figures

/// What one operation of workload `w` is, for the y axis.
fn per_s(w: &str) -> &'static str {
    if w == "shell" {
        "fork+exec+exit /s"
    } else {
        "exec+exit /s"
    }
}

/// The designs of `w` in first-seen order, each with its call patterns.
fn designs_of(r: &Results, w: &str) -> Vec<(String, bool, Vec<String>)> {
    let mut v: Vec<(String, bool, Vec<String>)> = Vec::new();
    for x in r.summary.iter().filter(|x| x.workload == w) {
        match v.iter_mut().find(|d| d.0 == x.design) {
            Some(d) if !d.2.contains(&x.call_pattern) => d.2.push(x.call_pattern.clone()),
            Some(_) => {}
            None => v.push((x.design.clone(), x.bound, vec![x.call_pattern.clone()])),
        }
    }
    v
}

/// The patterns of `w` in first-seen order: each keeps one colour in every
/// panel.
fn patterns_of(r: &Results, w: &str) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for x in r.summary.iter().filter(|x| x.workload == w) {
        if !v.contains(&x.call_pattern) {
            v.push(x.call_pattern.clone());
        }
    }
    v
}

/// The measured line of one (design, pattern): medians, bars over the
/// samples that are not outliers, outliers apart.
fn measured_line(
    r: &Results,
    w: &str,
    d: &str,
    p: &str,
    label: String,
    color: &'static str,
) -> Line {
    let points = r
        .summary
        .iter()
        .filter(|x| x.workload == w && x.design == d && x.call_pattern == p)
        .map(|x| {
            let med = x.ops_per_sec.median;
            let samples = r.samples(w, d, p, x.threads);
            let (out, kept): (Vec<f64>, Vec<f64>) = samples
                .iter()
                .map(|s| s.ops_per_sec)
                .partition(|&v| is_outlier(v, med));
            let bar = Spread::of(&kept)
                .filter(|s| s.n > 1)
                .map(|s| (s.min, s.max));
            Pt {
                x: x.threads as f64,
                y: med,
                bar,
                note: format!(
                    "{d} {p}, {} threads{}: {} /s, median [min-max] of {} samples (measured){}",
                    x.threads,
                    if x.oversubscribed {
                        " (oversubscribed)"
                    } else {
                        ""
                    },
                    show(&x.ops_per_sec, rate),
                    x.ops_per_sec.n,
                    if out.is_empty() {
                        String::new()
                    } else {
                        format!("; {} outlier(s)", out.len())
                    }
                ),
                outliers: out,
            }
        })
        .collect();
    Line {
        label,
        color,
        kind: Kind::Measured,
        reference: false,
        points,
    }
}

/// `aspace bench`'s figure of workload `w`: one panel per design, each with
/// its call patterns (a colour each, the same in every panel) and today's
/// kernel (linux per-vma, grey) for reference; with `predicted`, each
/// pattern's predicted curve dashed beside its measured one.
pub fn bench(r: &Results, w: &str, predicted: Option<&HostPrediction>) -> String {
    let patterns = patterns_of(r, w);
    let color = |p: &str| COLORS[patterns.iter().position(|x| x == p).unwrap_or(0) % COLORS.len()];
    let has_kernel = r
        .summary
        .iter()
        .any(|x| x.workload == w && x.design == "linux" && x.call_pattern == "per-vma");
    let mut panels = Vec::new();
    for (d, bound, ps) in designs_of(r, w) {
        let mut lines = Vec::new();
        if has_kernel && d != "linux" {
            let mut k = measured_line(
                r,
                w,
                "linux",
                "per-vma",
                "kernel (linux per-vma)".into(),
                REFERENCE,
            );
            k.reference = true;
            for p in &mut k.points {
                p.bar = None;
                p.outliers.clear();
            }
            lines.push(k);
        }
        for p in &ps {
            lines.push(measured_line(
                r,
                w,
                &d,
                p,
                format!("{p}, measured"),
                color(p),
            ));
            if let Some(hp) = predicted {
                let pts: Vec<Pt> = hp
                    .points
                    .iter()
                    .filter(|x| x.workload == w && x.design == d && &x.call_pattern == p)
                    .map(|x| Pt {
                        x: x.threads as f64,
                        y: x.per_s,
                        note: format!(
                            "{d} {p}, {} threads: {} /s PREDICTED (simulated, not measured)",
                            x.threads,
                            rate(x.per_s)
                        ),
                        ..Pt::default()
                    })
                    .collect();
                if !pts.is_empty() {
                    lines.push(Line {
                        label: format!("{p}, PREDICTED"),
                        color: color(p),
                        kind: Kind::Predicted,
                        reference: false,
                        points: pts,
                    });
                }
            }
        }
        panels.push(Panel {
            title: if bound {
                format!("{d} (a bound, not a design)")
            } else {
                d
            },
            lines,
        });
    }
    let mut notes = vec![format!(
        "Solid: measured, median of each point's samples, bars min-max{}. Grey: today's kernel (linux per-vma) in every panel.",
        if predicted.is_some() {
            "; dashed, hollow: PREDICTED by the simulator (not measured)"
        } else {
            ""
        }
    )];
    notes.push(
        "Red rings (arrows above the scale): outlier samples, below half or above twice their point's median; the bars leave them out."
            .into(),
    );
    let cores = r.machine.cores;
    render(&Figure {
        title: format!(
            "{w}: throughput against threads{}",
            if predicted.is_some() {
                ", measured and PREDICTED"
            } else {
                ""
            }
        ),
        notes,
        x_label: "worker threads (log scale)".into(),
        y_label: per_s(w).into(),
        shade_above: (cores > 0)
            .then(|| (cores as f64, format!("oversubscribed (> {cores} cores)"))),
        panels,
        columns: 0,
    })
}

/// The USL projections of workload `w` to [`PROJECT_TO`] cores: one panel
/// per design, each fitted curve dotted over its measured medians. Call it
/// only when a series of `w` was fitted.
pub fn projection(r: &Results, w: &str) -> String {
    let patterns = patterns_of(r, w);
    let color = |p: &str| COLORS[patterns.iter().position(|x| x == p).unwrap_or(0) % COLORS.len()];
    let top = PROJECT_TO[PROJECT_TO.len() - 1] as f64;
    let mut panels = Vec::new();
    for (d, bound, ps) in designs_of(r, w) {
        let mut lines = Vec::new();
        for p in &ps {
            let name = format!("{d} {p}");
            let Some(u) = r
                .fits
                .iter()
                .find(|f| f.workload == w && f.design == name)
                .and_then(|f| f.usl)
            else {
                continue;
            };
            let mut m = measured_line(r, w, &d, p, format!("{p}, measured"), color(p));
            for x in &mut m.points {
                x.bar = None;
                x.outliers.clear();
            }
            // Four points a doubling from 1 to the top.
            let steps = (4.0 * top.log2()).ceil() as i32;
            let pts: Vec<Pt> = (0..=steps)
                .map(|k| {
                    let n = 2f64.powf(f64::from(k) / 4.0).min(top);
                    Pt {
                        x: n,
                        y: u.at(n),
                        ..Pt::default()
                    }
                })
                .collect();
            lines.push(m);
            lines.push(Line {
                label: format!("{p}, USL PROJECTION"),
                color: color(p),
                kind: Kind::Projected,
                reference: false,
                points: pts,
            });
        }
        if !lines.is_empty() {
            panels.push(Panel {
                title: if bound { format!("{d} (a bound)") } else { d },
                lines,
            });
        }
    }
    render(&Figure {
        title: format!("{w}: USL PROJECTION to {top:.0} cores (not measured)"),
        notes: vec![
            "Dotted: the Universal Scalability Law fitted to the measured medians (dots) within the cores, extrapolated: the shape they imply, not a measurement.".into(),
        ],
        x_label: "cores (log scale)".into(),
        y_label: per_s(w).into(),
        shade_above: None,
        panels,
        columns: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(label: &str, kind: Kind, pts: &[(f64, f64)]) -> Line {
        Line {
            label: label.into(),
            color: COLORS[0],
            kind,
            reference: false,
            points: pts
                .iter()
                .map(|&(x, y)| Pt {
                    x,
                    y,
                    ..Pt::default()
                })
                .collect(),
        }
    }

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

    #[test]
    fn axis_labels_share_one_unit_and_precision() {
        let t = nice_ticks(23_000.0);
        let labels: Vec<String> = t
            .iter()
            .map(|&v| tick_label(v, t[1] - t[0], 25_000.0))
            .collect();
        assert_eq!(labels, ["0", "5k", "10k", "15k", "20k", "25k"]);
        assert_eq!(tick_label(2_500.0, 2_500.0, 12_500.0), "2.5k");
        assert_eq!(tick_label(0.4, 0.2, 1.0), "0.4");
        assert_eq!(tick_label(3e6, 1e6, 5e6), "3M");
    }

    #[test]
    fn log2_axis_labels_powers_of_two_and_spaced_data() {
        // 1..384 at 40 px a doubling: 384 first, then every power of two
        // but 256 (0.58 doublings = 23 px from 384: closer than 24 px), and
        // 112 is too close to 128.
        let t = log2_ticks(1.0, 384.0, &[1.0, 2.0, 4.0, 112.0, 384.0], 40.0, 24.0);
        assert_eq!(t, [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 384.0]);
        // A bench's 1, 2, 3, 4 at 100 px a doubling: 3 fits between 2 and 4.
        let t = log2_ticks(1.0, 4.0, &[1.0, 2.0, 3.0, 4.0], 100.0, 24.0);
        assert_eq!(t, [1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn chunks_hold_at_most_the_cap_with_the_reference() {
        let lines: Vec<Line> = (0..8)
            .map(|i| line(&format!("d{i}"), Kind::Predicted, &[(1.0, 1.0)]))
            .collect();
        let r = line("linux", Kind::Predicted, &[(1.0, 1.0)]);
        let panels = chunk(lines, Some(&r), 4, |g| g[0].label.clone());
        assert_eq!(panels.len(), 2);
        for p in &panels {
            assert!(
                p.lines.len() <= MAX_LINES && p.lines.len() == 5,
                "{}",
                p.lines.len()
            );
            assert_eq!(p.lines[0].label, "linux");
        }
        assert_eq!(panels[1].title, "d4");
    }

    #[test]
    fn render_draws_kinds_legends_and_outliers() {
        let mut m = line("measured", Kind::Measured, &[(1.0, 100.0), (2.0, 180.0)]);
        m.points[1].bar = Some((170.0, 190.0));
        m.points[1].outliers = vec![20.0, 5_000.0];
        let p = line("predicted", Kind::Predicted, &[(1.0, 110.0), (2.0, 200.0)]);
        let f = Figure {
            title: "t".into(),
            x_label: "threads (log scale)".into(),
            y_label: "execs/s".into(),
            panels: vec![Panel {
                title: "panel".into(),
                lines: vec![m, p],
            }],
            ..Figure::default()
        };
        let s = render(&f);
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        // The dashed predicted line, in the plot and in the legend.
        assert_eq!(s.matches("stroke-dasharray=\"7 4\"").count(), 2, "{s}");
        // The outlier below the scale is a ring, the one above an arrow with
        // its value; neither stretched the y axis (top tick 250).
        assert_eq!(s.matches(OUTLIER).count(), 2 + 1, "{s}");
        assert!(s.contains(">5000<"), "{s}");
        assert!(s.contains(">250<") && !s.contains(">6000<"), "{s}");
        assert!(s.contains("threads (log scale)") && s.contains("execs/s"));
    }
}
