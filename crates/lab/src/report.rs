//! Rendering: the terminal table, the SVG plots and the HTML report.

use crate::results::{Fit, Results, Run, PROJECT_TO};
use std::fmt::Write as _;

const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
];

fn fmt_rate(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e4 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

fn runs_of<'a>(r: &'a Results, w: &'a str, d: &'a str) -> impl Iterator<Item = &'a Run> {
    r.runs
        .iter()
        .filter(move |x| x.workload == w && x.series_name() == d)
}

/// The plain-text table printed after a bench and by `aspace report`.
pub fn table(r: &Results) -> String {
    let mut s = String::new();
    let mut workloads: Vec<&str> = r.runs.iter().map(|x| x.workload.as_str()).collect();
    workloads.dedup();
    for w in workloads {
        let _ = writeln!(
            s,
            "\n{w}: operations/s per design and thread count (x linux = ratio to the linux design at the same thread count)"
        );
        let _ = writeln!(
            s,
            "{:<18} {:>7} {:>10} {:>8} {:>12} {:>10} {:>11}",
            "design", "threads", "ops/s", "x linux", "lock acq/op", "contended", "lock holds"
        );
        for (wl, d) in r.series() {
            if wl != w {
                continue;
            }
            for x in runs_of(r, &wl, &d) {
                let ratio = x
                    .ratio_to_linux
                    .map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
                let acq = if x.ops > 0 {
                    x.acquisitions as f64 / x.ops as f64
                } else {
                    0.0
                };
                let _ = writeln!(
                    s,
                    "{:<18} {:>7} {:>10} {:>8} {:>12.1} {:>9.1}% {:>11.1}",
                    x.design,
                    x.threads,
                    fmt_rate(x.ops_per_sec),
                    ratio,
                    acq,
                    x.contended_pct,
                    x.calls_per_op.lock_holds
                );
            }
        }
    }
    s
}

/// The USL fits and projections, as text.
pub fn fits_text(r: &Results) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nUSL fit X(N) = lambda*N / (1 + sigma*(N-1) + kappa*N*(N-1)), and PROJECTIONS (not measurements) to {} cores:",
        PROJECT_TO.map(|n| n.to_string()).join(" and ")
    );
    let _ = writeln!(
        s,
        "{:<8} {:<18} {:>10} {:>9} {:>10} {:>9} {:>10} {:>14} {:>14}",
        "workload",
        "design",
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
                    "{:<8} {:<18} {:>10} {:>9.4} {:>10.6} {:>8.1}% {:>10} {:>14} {:>14}",
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
                let _ = writeln!(s, "{:<8} {:<18} (not fitted)", f.workload, f.design);
            }
        }
    }
    if r.fits.iter().any(|f| f.usl.is_none()) {
        let _ = writeln!(s, "{}", crate::results::NOT_FITTED);
    }
    s
}

struct Series {
    name: String,
    color: &'static str,
    points: Vec<(f64, f64)>,
    fit: Option<Fit>,
}

fn series(r: &Results, workload: &str) -> Vec<Series> {
    r.series()
        .into_iter()
        .filter(|(w, _)| w == workload)
        .enumerate()
        .map(|(i, (w, d))| Series {
            points: runs_of(r, &w, &d)
                .map(|x| (x.threads as f64, x.ops_per_sec))
                .collect(),
            fit: r
                .fits
                .iter()
                .find(|f| f.workload == w && f.design == d)
                .cloned(),
            name: d,
            color: COLORS[i % COLORS.len()],
        })
        .collect()
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An SVG line plot of throughput against threads, one line per design. With
/// `projection`, the x axis runs to the largest projection core count and only the
/// fitted USL curves are drawn (dashed), labelled as projections.
pub fn svg(r: &Results, workload: &str, projection: bool) -> String {
    let (w, h) = (760.0, 440.0);
    let (l, rt, t, b) = (80.0, 180.0, 40.0, 50.0);
    let ser = series(r, workload);
    let xmax = if projection {
        PROJECT_TO[PROJECT_TO.len() - 1] as f64
    } else {
        ser.iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .fold(1.0, f64::max)
    };
    let curve = |s: &Series, n: f64| s.fit.as_ref().and_then(|f| f.usl).map(|u| u.at(n));
    let mut ymax: f64 = 1.0;
    for s in &ser {
        for p in &s.points {
            ymax = ymax.max(p.1);
        }
        if projection {
            for i in 1..=200 {
                if let Some(y) = curve(s, xmax * i as f64 / 200.0) {
                    ymax = ymax.max(y);
                }
            }
        }
    }
    ymax *= 1.1;
    let px = |x: f64| l + (w - l - rt) * x / xmax;
    let py = |y: f64| h - b - (h - t - b) * y / ymax;
    let mut o = String::new();
    let title = if projection {
        format!("{workload}: USL PROJECTION to {xmax:.0} cores (not measured)")
    } else {
        format!("{workload}: measured throughput vs threads")
    };
    let _ = write!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12"><rect width="{w}" height="{h}" fill="white"/><text x="{}" y="22" font-size="15" text-anchor="middle">{}</text>"#,
        (w - rt + l) / 2.0,
        esc(&title)
    );
    // Axes and ticks.
    let _ = write!(
        o,
        r#"<line x1="{l}" y1="{}" x2="{}" y2="{}" stroke="black"/><line x1="{l}" y1="{t}" x2="{l}" y2="{}" stroke="black"/>"#,
        h - b,
        w - rt,
        h - b,
        h - b
    );
    for i in 0..=5 {
        let y = ymax * i as f64 / 5.0;
        let _ = write!(
            o,
            r##"<line x1="{l}" y1="{0}" x2="{1}" y2="{0}" stroke="#ddd"/><text x="{2}" y="{3}" text-anchor="end">{4}</text>"##,
            py(y),
            w - rt,
            l - 6.0,
            py(y) + 4.0,
            fmt_rate(y)
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
            r#"<text x="{}" y="{}" text-anchor="middle">{x:.0}</text>"#,
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
            "fork+exec"
        } else {
            "execs"
        }
    );
    for (i, s) in ser.iter().enumerate() {
        let dash = if projection {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
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
                .map(|p| format!("{:.1},{:.1}", px(p.0), py(p.1)))
                .collect();
            let _ = write!(
                o,
                r#"<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>"#,
                s.color,
                pts.join(" ")
            );
        }
        for p in &s.points {
            let _ = write!(
                o,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{}"><title>{} {} threads: {:.0}/s (measured)</title></circle>"#,
                px(p.0),
                py(p.1),
                s.color,
                esc(&s.name),
                p.0,
                p.1
            );
        }
        let ly = t + 18.0 * i as f64 + 10.0;
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
    if projection {
        let fitted = ser
            .iter()
            .any(|s| s.fit.as_ref().is_some_and(|f| f.usl.is_some()));
        let _ = write!(
            o,
            r##"<text x="{}" y="{}" fill="#555">dots: measured</text><text x="{}" y="{}" fill="#555">{}</text>"##,
            w - rt + 12.0,
            t + 18.0 * ser.len() as f64 + 24.0,
            w - rt + 12.0,
            t + 18.0 * ser.len() as f64 + 40.0,
            if fitted {
                "dashes: USL fit"
            } else {
                "no USL fit: see report"
            }
        );
    }
    o.push_str("</svg>");
    o
}

/// The self-contained HTML report: explanation, plots, table, fits, machine.
pub fn html(r: &Results) -> String {
    let mut o = String::new();
    let m = &r.machine;
    let _ = write!(
        o,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>aspace bench report</title>\
<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em}}\
table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}\
th{{background:#f3f3f3}}td:first-child,th:first-child{{text-align:left}}.proj{{color:#a00}}</style></head><body>\
<h1>aspace bench: reverse-map designs under exec churn</h1>\
<p>Each point runs UnixBench-style <b>execl</b> (exec a real binary, take a few page faults, exit) or \
<b>shell</b> (fork, exec in the child, exit) on the address-space model, with <b>{res}</b> resident processes \
keeping libc's reverse map at about {libc} VMAs. All designs do the same work in the same run; \
&ldquo;x linux&rdquo; is the ratio to the <code>linux</code> design (the kernel's i_mmap interval tree under one rwsem) \
at the same thread count. Lock figures count reverse-map lock acquisitions; contended = found taken.</p>\
<p>Machine: {cpu}, {cores} CPUs, {nodes} NUMA node(s), kernel {kernel}, commit <code>{commit}</code>. \
Binary <code>{bin}</code>, {dur} s per point, topology {topo}, reclaim walks {walk}/s.</p>",
        res = r.runs.first().map_or(0, |x| x.resident),
        libc = r.runs.first().map_or(0, |x| x.resident_libc_vmas),
        cpu = esc(&m.cpu_model),
        cores = m.cores,
        nodes = m.nodes,
        kernel = esc(&m.kernel),
        commit = esc(&m.commit),
        bin = esc(&r.config.binary),
        dur = r.config.duration_s,
        topo = esc(&r.config.topology),
        walk = r.config.walk_rate,
    );
    let mut workloads: Vec<String> = r.runs.iter().map(|x| x.workload.clone()).collect();
    workloads.dedup();
    for w in &workloads {
        let _ = write!(o, "<h2>{}</h2>{}", esc(w), svg(r, w, false));
        o.push_str("<table><tr><th>design</th><th>threads</th><th>ops/s</th><th>x linux</th><th>lock acquisitions</th><th>contended %</th><th>lock holds / op</th><th>calls per op</th></tr>");
        for x in r.runs.iter().filter(|x| &x.workload == w) {
            let c = &x.calls_per_op;
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{:.0}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>insert {:.1}, batch {:.1}, insert_after {:.1}, insert_after_batch {:.1}, remove_batch {:.1}</td></tr>",
                esc(&x.design),
                x.threads,
                x.ops_per_sec,
                x.ratio_to_linux.map_or("-".into(), |v| format!("{v:.2}")),
                x.acquisitions,
                x.contended_pct,
                c.lock_holds,
                c.insert,
                c.insert_batch,
                c.insert_after,
                c.insert_after_batch,
                c.remove_batch
            );
        }
        o.push_str("</table>");
        let _ = write!(
            o,
            "<h3 class=\"proj\">Projection (USL fit, not measured)</h3>{}",
            svg(r, w, true)
        );
    }
    o.push_str("<h2>USL fits and projections</h2><p class=\"proj\">Projections extrapolate the fitted curve far beyond the measured thread counts: read them as the shape the measured points imply, not as measurements.</p><table><tr><th>workload</th><th>design</th><th>lambda (1-thread ops/s)</th><th>sigma</th><th>kappa</th><th>fit error (RMS %)</th>");
    for n in PROJECT_TO {
        let _ = write!(o, "<th class=\"proj\">projected {n} cores</th>");
    }
    o.push_str("</tr>");
    for f in &r.fits {
        match f.usl {
            Some(u) => {
                let _ = write!(
                    o,
                    "<tr><td>{}</td><td>{}</td><td>{:.0}</td><td>{:.4}</td><td>{:.6}</td><td>{:.1}</td>",
                    esc(&f.workload),
                    esc(&f.design),
                    u.lambda,
                    u.sigma,
                    u.kappa,
                    u.rms_error_pct
                );
                for (_, y) in &f.projections {
                    let _ = write!(o, "<td class=\"proj\">{y:.0}</td>");
                }
                o.push_str("</tr>");
            }
            None => {
                let _ = write!(
                    o,
                    "<tr><td>{}</td><td>{}</td><td colspan=\"{}\">{}</td></tr>",
                    esc(&f.workload),
                    esc(&f.design),
                    4 + PROJECT_TO.len(),
                    esc(crate::results::NOT_FITTED)
                );
            }
        }
    }
    o.push_str("</table><h2>Call patterns</h2><table><tr><th>design</th><th>how mm drives its reverse map</th></tr>");
    let mut seen: Vec<&str> = Vec::new();
    for x in &r.runs {
        if !seen.contains(&x.design.as_str()) {
            seen.push(&x.design);
            let _ = write!(
                o,
                "<tr><td>{}</td><td style=\"text-align:left\">{}</td></tr>",
                esc(&x.design),
                esc(&x.call_pattern)
            );
        }
    }
    o.push_str("</table></body></html>\n");
    o
}
