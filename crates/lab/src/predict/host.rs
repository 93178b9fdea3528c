//! Predictions in the HTML reports: the "Predictions" section that
//! `aspace predict --out DIR` writes (`DIR/report.html`), and the predicted
//! curve for this host that `aspace bench` puts beside its measured one.
//!
//! Every figure here is labelled a PREDICTION, with the validation errors
//! (`docs/results/predict/validation.json`, as `aspace predict --validate`
//! writes it) beside it.

use super::{rate, simulate_all, Plan, PredictOutput, VALIDATION_NOTE};
use crate::html::{esc, table};
use crate::predicted::Check;
pub use crate::predicted::{HostPoint, HostPrediction, KIND};
use crate::results::Results;
use mm::CallPattern;
use predict::Machine;
use rmap::Design;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

/// Reads the stored validation file (as `--validate` writes it, or the
/// bare list of checks older files hold): its checks and its label
/// ([`crate::predicted::StoredValidation::label`]); none when absent or
/// unreadable.
pub fn load_checks(path: &Path) -> (Vec<Check>, String) {
    match crate::predicted::StoredValidation::load(path) {
        Some(v) => {
            let label = v.label(path);
            (v.checks, label)
        }
        None => (Vec::new(), String::new()),
    }
}

/// What `aspace bench` predicts for its own run.
#[derive(Clone, Debug)]
pub struct BenchPlan<'a> {
    /// `aspace calibrate`'s host file; `None`: the default description
    /// ([`super::host_without_calibration`]: the OS's CPU count, nominal
    /// latencies of a 16-core server).
    pub host_file: Option<&'a Path>,
    /// The binary.
    pub binary: &'a Path,
    /// Resident processes.
    pub resident: usize,
    /// Workloads by name (`execl`, `shell`).
    pub workloads: Vec<String>,
    /// Designs.
    pub designs: Vec<Design>,
    /// Call patterns.
    pub patterns: Vec<CallPattern>,
    /// Thread counts.
    pub threads: Vec<usize>,
    /// The validation file.
    pub validation: &'a Path,
}

/// Records every (workload, design, pattern) on the host and simulates the
/// bench's thread counts, with the model's own exec cost (the bench runs
/// the model, not the kernel).
pub fn predict_for_bench(b: &BenchPlan<'_>) -> Result<HostPrediction, String> {
    let (mut host, source) = match b.host_file {
        Some(p) => (
            Machine::load(p).map_err(|e| e.to_string())?,
            format!("aspace calibrate's description {}", p.display()),
        ),
        None => (
            super::host_without_calibration(),
            "default: this host's CPU count with the nominal latencies and wake-up of the \
             built-in 16-core machine (aspace bench --predict-host FILE uses a calibration)"
                .to_owned(),
        ),
    };
    host.name = "host".into();
    let max = host.cpus() as usize;
    let threads: Vec<u32> = b
        .threads
        .iter()
        .filter(|&&t| t >= 1 && t <= max)
        .map(|&t| t as u32)
        .collect();
    let mut points = Vec::new();
    if !threads.is_empty() {
        for w in &b.workloads {
            let mut plan = Plan::new(
                host.clone(),
                host.clone(),
                w == "shell",
                b.binary.to_path_buf(),
                b.resident,
                true,
                1.0,
            );
            // The bench predicts this host, where a design adapts or not
            // as it does in the bench itself: a short warm-up.
            plan.warmup = Duration::from_millis(300);
            // A bound (`exclude`) takes no reverse-map lock: there is nothing to
            // record or simulate, so it has no predicted curve.
            let designs: Vec<Design> = b
                .designs
                .iter()
                .copied()
                .filter(|d| !d.is_bound())
                .collect();
            for &pattern in &b.patterns {
                let profiles = designs
                    .iter()
                    .map(|&d| plan.profile(d, pattern))
                    .collect::<Result<Vec<_>, _>>()?;
                // The bench's own prediction keeps every transfer serial
                // (`aspace predict` overlaps them where the calibration has the
                // factors, unless `--serial`).
                let preds = simulate_all(&host, &profiles, &threads, 1.0, false)?;
                for (d, curve) in designs.iter().zip(preds) {
                    for p in curve {
                        points.push(HostPoint {
                            workload: w.clone(),
                            design: d.name().to_owned(),
                            call_pattern: pattern.name().to_owned(),
                            threads: p.cpus as usize,
                            per_s: p.per_s,
                            contended_pct: p.contended_pct,
                        });
                    }
                }
            }
        }
    }
    let (validation_checks, validation_label) = load_checks(b.validation);
    Ok(HostPrediction {
        kind: KIND.into(),
        machine: format!("{} ({} CPUs)", host.description, host.cpus()),
        source,
        note: "each design's profile recorded here from the model's own code, simulated with \
               the model's own iteration cost (the bench measures the model, not the kernel); \
               one copy per CPU, so thread counts above the host's CPUs are not predicted; \
               bounds that take no lock (exclude) are not simulated"
            .into(),
        points,
        validation_checks,
        validation_label,
    })
}

/// The stored validation's table (every published figure and this host's
/// 1-2 thread ratios against their predictions, with the errors), under a
/// heading that says it is stored, not this run's.
pub fn checks_html(checks: &[Check]) -> String {
    if checks.is_empty() {
        return format!(
            "<p>No validation found beside these predictions: run <code>aspace predict \
             --validate</code> ({}).</p>",
            esc(VALIDATION_NOTE)
        );
    }
    let met = checks.iter().filter(|c| c.met).count();
    let rows: Vec<Vec<String>> = checks
        .iter()
        .map(|c| {
            let share = c.published.ends_with('%');
            vec![
                c.what.clone(),
                c.setting.clone(),
                c.published.clone(),
                if share {
                    format!("{:.1}%", c.predicted)
                } else {
                    format!("{:.3}", c.predicted)
                },
                match c.error {
                    Some(e) if share => format!("{e:+.1} points"),
                    Some(e) => format!("{e:+.1}%"),
                    None => "-".into(),
                },
                c.target.clone(),
                if c.met { "yes" } else { "no" }.into(),
            ]
        })
        .collect();
    format!(
        "<h3>Stored validation, not this run: predicted against published and measured ({met} of {} targets met)</h3>{}",
        checks.len(),
        table(
            &rows,
            &[
                "what",
                "setting",
                "published / measured",
                "predicted",
                "error",
                "target",
                "met"
            ]
        )
    )
}

/// The "Predictions" section of `aspace predict --out DIR`'s report: this
/// run's figures only, each labelled PREDICTED (ratios beside the bound's,
/// AT MOST, a design at its bound as "at least"), the caveats of this run
/// (a busy recording host), and the stored validation labelled as stored,
/// with its date and commit.
pub fn predict_section(o: &PredictOutput) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<section id=\"predictions\"><h2 class=\"proj\">Predictions: {} ({}) &mdash; {}</h2>\
         <p class=\"proj\">Every figure in this section is simulated by <code>aspace predict</code>, \
         not measured: profiles recorded from the model's code on this host, a machine description \
         with its sources, and the simulator of <code>crates/predict</code>. Workload {}, {} cost, \
         {:.0} us per iteration on the host.</p>",
        esc(&o.machine.name),
        esc(&o.machine.description),
        KIND,
        esc(&o.workload),
        esc(&o.cost),
        o.iteration_ns / 1e3,
    );
    if !o.locks.is_empty() {
        let _ = write!(
            s,
            "<p class=\"proj\">Locks, as the simulated profiles hold them: {}. {}.</p>",
            esc(&o.locks.join("; ")),
            esc(&o.scale)
        );
    } else if !o.lock.is_empty() {
        let _ = write!(
            s,
            "<p class=\"proj\">Locks: {}. {}.</p>",
            esc(&o.lock),
            esc(&o.scale)
        );
    }
    for c in &o.caveats {
        let _ = write!(
            s,
            "<p class=\"proj\"><strong>Caveat:</strong> {}</p>",
            esc(c)
        );
    }
    for p in &o.placement {
        let _ = write!(s, "<p class=\"proj\">{}</p>", esc(p));
    }
    s.push_str(&super::svg(o));
    let linux = o.curves.iter().find(|c| c.design == "linux");
    let mut rows = Vec::new();
    for c in &o.curves {
        for p in &c.points {
            let cells = super::point_cells(linux, c, p, o.seconds);
            rows.push(vec![
                c.design.clone(),
                p.cpus.to_string(),
                rate(p.per_s),
                cells.ratio,
                cells.bound,
                format!("{:.1}", 100.0 * p.spin_share),
                format!("{:.1}", 100.0 * p.wait_share),
                format!("{:.1}", p.contended_pct),
                cells.sites,
            ]);
        }
    }
    s.push_str(&table(
        &rows,
        &[
            "design",
            "CPUs",
            "predicted execs/s",
            "x linux (PREDICTED)",
            "bound x linux (AT MOST)",
            "spin %",
            "wait %",
            "contended %",
            "wait by call site (% of CPU time)",
        ],
    ));
    let _ = write!(
        s,
        "<p class=\"proj\">{} The bound (the same iterations with every reverse-map hold removed) \
         is an upper limit, not a forecast.</p>",
        esc(&super::reading_rule())
    );
    for u in super::unranked(o) {
        let _ = write!(s, "<p class=\"proj\">{}</p>", esc(&u));
    }
    if !o.assumptions.is_empty() {
        s.push_str("<p>Assumed (not measured on this machine):</p><ul>");
        for a in &o.assumptions {
            let _ = write!(s, "<li>{}</li>", esc(a));
        }
        s.push_str("</ul>");
    }
    match &o.stored_validation {
        Some(v) => {
            let _ = write!(
                s,
                "<h3>Stored validation, not this run</h3><p>{}. Its figures are those of that \
                 run, not the ones above.</p>",
                esc(&v.label(Path::new(&o.validation)))
            );
            s.push_str(&checks_html(&v.checks));
        }
        None => {
            let _ = write!(
                s,
                "<p>No stored validation found ({}).</p>",
                esc(VALIDATION_NOTE)
            );
        }
    }
    s.push_str("</section>");
    s
}

/// A whole page holding [`predict_section`].
pub fn predict_page(o: &PredictOutput) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>aspace predict: {}</title>\
<style>{}</style></head><body>\
<h1>aspace predict (PREDICTIONS, not measurements)</h1>{}</body></html>\n",
        esc(&o.machine.name),
        crate::html::STYLE,
        predict_section(o)
    )
}

/// Measured medians over repeats: (design, pattern, threads) -> ops/s.
fn measured(r: &Results, w: &str) -> Vec<(String, String, usize, f64)> {
    let mut by: std::collections::BTreeMap<(String, String, usize), Vec<f64>> = Default::default();
    for x in r.runs.iter().filter(|x| x.workload == w) {
        by.entry((x.design.clone(), x.call_pattern.clone(), x.threads))
            .or_default()
            .push(x.ops_per_sec);
    }
    by.into_iter()
        .map(|((d, p, t), mut v)| {
            v.sort_by(f64::total_cmp);
            let n = v.len();
            let med = if n % 2 == 1 {
                v[n / 2]
            } else {
                (v[n / 2 - 1] + v[n / 2]) / 2.0
            };
            (d, p, t, med)
        })
        .collect()
}

/// Measured (solid) and predicted (dashed) ops/s against threads, in the
/// bench report's own layout and colours ([`crate::plot::bench`]).
fn bench_svg(r: &Results, hp: &HostPrediction, w: &str) -> String {
    crate::plot::bench(r, w, Some(hp))
}

/// The bench report's "Predictions" section: the predicted curve for this
/// host beside the measured one, labelled, with the validation errors.
pub fn bench_section(r: &Results, hp: Option<&HostPrediction>) -> String {
    let Some(hp) = hp else {
        return String::from(
            "<section id=\"predictions\"><h2 class=\"proj\">Predictions</h2><p>No prediction \
             for this run (bench --no-predict, or a results file from before predictions).</p></section>",
        );
    };
    let mut s = format!(
        "<section id=\"predictions\"><h2 class=\"proj\">Predictions for this host: {KIND}</h2>\
         <p class=\"proj\">Dashed lines and the &ldquo;predicted&rdquo; column are simulated by \
         <code>aspace predict</code>'s simulator on {} ({}), not measured; {}. Solid lines are the \
         measured medians above.</p>",
        esc(&hp.machine),
        esc(&hp.source),
        esc(&hp.note)
    );
    let mut ws: Vec<&str> = hp.points.iter().map(|p| p.workload.as_str()).collect();
    ws.dedup();
    for w in ws {
        let _ = write!(s, "<h3>{}</h3>{}", esc(w), bench_svg(r, hp, w));
        let meas = measured(r, w);
        let rows: Vec<Vec<String>> = hp
            .points
            .iter()
            .filter(|p| p.workload == w)
            .map(|p| {
                let m = meas
                    .iter()
                    .find(|x| x.0 == p.design && x.1 == p.call_pattern && x.2 == p.threads)
                    .map(|x| x.3);
                vec![
                    p.design.clone(),
                    p.call_pattern.clone(),
                    p.threads.to_string(),
                    m.map_or("-".into(), rate),
                    rate(p.per_s),
                    m.filter(|&m| m > 0.0).map_or("-".into(), |m| {
                        format!("{:+.1}%", 100.0 * (p.per_s - m) / m)
                    }),
                ]
            })
            .collect();
        s.push_str(&table(
            &rows,
            &[
                "design",
                "pattern",
                "threads",
                "measured ops/s",
                "PREDICTED ops/s",
                "predicted vs measured",
            ],
        ));
    }
    if !hp.validation_label.is_empty() {
        let _ = write!(
            s,
            "<p>{}. Its figures are those of that run, not this bench's.</p>",
            esc(&hp.validation_label)
        );
    }
    s.push_str(&checks_html(&hp.validation_checks));
    s.push_str("</section>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stored validation is read in the format `--validate` writes
    /// (an object with date, commit and checks; the bench's report found
    /// none in it before) and in the older bare list, labelled stored.
    #[test]
    fn the_stored_validation_is_read_in_both_formats_and_labelled() {
        let d = std::env::temp_dir().join(format!("s39-checks-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let check = Check {
            what: "w".into(),
            setting: "s".into(),
            published: "1".into(),
            published_value: Some(1.0),
            predicted: 1.0,
            target: "t".into(),
            error: Some(0.0),
            met: true,
        };
        let new = d.join("new.json");
        let stored = crate::predicted::StoredValidation {
            date: "2026-11-28".into(),
            commit: "abc".into(),
            host: "h".into(),
            checks: vec![check.clone()],
        };
        std::fs::write(&new, serde_json::to_string(&stored).unwrap()).unwrap();
        let (checks, label) = load_checks(&new);
        assert_eq!(checks, vec![check.clone()]);
        assert!(
            label.starts_with("STORED validation, not this run") && label.contains("abc"),
            "{label}"
        );
        let old = d.join("old.json");
        std::fs::write(&old, serde_json::to_string(&vec![check.clone()]).unwrap()).unwrap();
        assert_eq!(load_checks(&old).0, vec![check]);
        assert!(load_checks(&d.join("none.json")).0.is_empty());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn bench_section_labels_predictions_and_errors() {
        let r: Results = serde_json::from_str(
            r#"{"machine":{"cpu_model":"x","cores":2,"nodes":1,"kernel":"k","commit":"c","timestamp":0},
                "runs":[]}"#,
        )
        .unwrap();
        let none = bench_section(&r, None);
        assert!(none.contains("No prediction"));
        let hp = HostPrediction {
            kind: KIND.into(),
            machine: "m".into(),
            source: "s".into(),
            note: "n".into(),
            points: vec![HostPoint {
                workload: "execl".into(),
                design: "linux".into(),
                call_pattern: "per-vma".into(),
                threads: 1,
                per_s: 1234.0,
                contended_pct: 0.0,
            }],
            validation_checks: vec![Check {
                what: "numa_split / linux".into(),
                setting: "s".into(),
                published: "1.77".into(),
                published_value: Some(1.77),
                predicted: 1.5,
                target: "t".into(),
                error: Some(-15.3),
                met: false,
            }],
            validation_label:
                "STORED validation, not this run: v.json (made 2026-11-28 by commit abc)".into(),
        };
        let s = bench_section(&r, Some(&hp));
        assert!(
            s.contains("Stored validation, not this run: predicted against"),
            "{s}"
        );
        assert!(s.contains("made 2026-11-28 by commit abc"), "{s}");
        assert!(
            !s.contains("<h3>Validation"),
            "never headed as this run's: {s}"
        );
        assert!(s.contains(KIND));
        assert!(s.contains("PREDICTED"));
        assert!(s.contains("1234"));
        assert!(s.contains("-15.3%"));
        assert!(s.contains("0 of 1 targets met"));
    }
}
