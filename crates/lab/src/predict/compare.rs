//! A prediction beside the measurements it predicts: `aspace predict
//! --measured FILE` (after a prediction, or with `--from predict.json`
//! instead of one) prints PREDICTED / measured for every design and CPU
//! count both have.
//!
//! What it reads:
//! * an `aspace bench` results.json: each design's median execs/s per
//!   thread count (the prediction's call pattern); the prediction's
//!   no-reverse-map bound is set beside the bench's `exclude` row;
//! * an `aspace survey` `execl.tsv` (the real kernel's execl): the median
//!   execs/s per copy count, dynamic and static; the prediction's `linux`
//!   curve is set beside both (the binary predicted says which applies).
//!
//! Only a ratio is computed here; nothing is fitted, and the measurements
//! are the check of the prediction, never an input of it.

use super::PredictOutput;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Measured execs/s: row name -> CPU count -> median.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measured {
    /// What was measured, in words (for the table's title).
    pub what: String,
    /// `true` for the real kernel's execl (rows `dyn`, `static`), `false`
    /// for a bench (rows are designs).
    pub kernel: bool,
    /// The rows.
    pub rows: BTreeMap<String, BTreeMap<u32, f64>>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Reads a bench results.json (its per-point medians for `pattern`) or a
/// survey execl.tsv (medians over rounds).
pub fn load(path: &Path, pattern: &str) -> Result<Measured, String> {
    let text = crate::input::read_text(path, "--measured", crate::input::RESULTS_CAP)?;
    if path.extension().is_some_and(|e| e == "tsv") {
        parse_execl_tsv(&text).map_err(|e| format!("--measured: {}: {e}", path.display()))
    } else {
        parse_bench(&text, pattern).map_err(|e| format!("--measured: {}: {e}", path.display()))
    }
}

/// The medians of a survey's `execl.tsv` (`linkage copies round seconds
/// execs per_s`, tab-separated, a header line).
pub fn parse_execl_tsv(text: &str) -> Result<Measured, String> {
    let mut samples: BTreeMap<String, BTreeMap<u32, Vec<f64>>> = BTreeMap::new();
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines
        .next()
        .ok_or("empty file")?
        .split('\t')
        .map(str::trim)
        .collect();
    let col = |name: &str| {
        header.iter().position(|h| *h == name).ok_or(format!(
            "no {name:?} column (an execl.tsv of aspace survey has linkage, copies and per_s)"
        ))
    };
    let (li, ci, pi) = (col("linkage")?, col("copies")?, col("per_s")?);
    for (n, l) in lines.enumerate() {
        let f: Vec<&str> = l.split('\t').map(str::trim).collect();
        let bad = || format!("line {}: {l:?} is not linkage, copies and a rate", n + 2);
        let linkage = f.get(li).ok_or_else(bad)?;
        let copies: u32 = f.get(ci).and_then(|s| s.parse().ok()).ok_or_else(bad)?;
        let rate: f64 = f.get(pi).and_then(|s| s.parse().ok()).ok_or_else(bad)?;
        if !(rate.is_finite() && rate >= 0.0) || copies == 0 {
            return Err(bad());
        }
        samples
            .entry((*linkage).to_owned())
            .or_default()
            .entry(copies)
            .or_default()
            .push(rate);
    }
    if samples.is_empty() {
        return Err("no measurement in it".into());
    }
    Ok(Measured {
        what: "the real kernel's execl (aspace survey's execl.tsv), median of its rounds".into(),
        kernel: true,
        rows: samples
            .into_iter()
            .map(|(k, v)| (k, v.into_iter().map(|(c, s)| (c, median(s))).collect()))
            .collect(),
    })
}

/// The per-point medians of an `aspace bench` results.json for `pattern`.
pub fn parse_bench(text: &str, pattern: &str) -> Result<Measured, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not a results file: {e}"))?;
    let summary = v["summary"]
        .as_array()
        .ok_or("no summary (not an aspace bench results.json)")?;
    let mut rows: BTreeMap<String, BTreeMap<u32, f64>> = BTreeMap::new();
    for s in summary {
        if s["call_pattern"].as_str().unwrap_or("per-vma") != pattern {
            continue;
        }
        let (Some(d), Some(t), Some(m)) = (
            s["design"].as_str(),
            s["threads"].as_u64(),
            s["ops_per_sec"]["median"].as_f64(),
        ) else {
            continue;
        };
        rows.entry(d.to_owned())
            .or_default()
            .insert(u32::try_from(t).unwrap_or(u32::MAX), m);
    }
    if rows.is_empty() {
        return Err(format!("no {pattern} point in it"));
    }
    let cost = v["config"]["cost"].as_str().unwrap_or("model");
    let lock = v["config"]["lock"].as_str().unwrap_or("parking_lot");
    Ok(Measured {
        what: format!(
            "aspace bench ({} cost, {} locks), median execs/s",
            cost.split(':').next().unwrap_or(cost),
            lock
        ),
        kernel: false,
        rows,
    })
}

/// Where a bench recorded that one point's threads ran: the CPUs of its
/// median sample (by execs/s, the lower of the two middle ones, as
/// [`super::simulate_all`] takes the median run), one per thread (its main
/// CPU, the one it was seen on most).
///
/// Why the median sample's and not each sample's: the figure the
/// prediction is set beside is the median sample's rate, and that rate came
/// from that sample's placement; simulating every sample's would cost a
/// simulation per repeat for a point whose median the table then takes.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedPlacement {
    /// One distinct CPU per thread, in thread order.
    pub cpus: Vec<u32>,
    /// The sample's repeat (0-based).
    pub repeat: usize,
    /// Its measured execs/s.
    pub per_s: f64,
    /// The design's shards those CPUs cover, as the bench counted them.
    pub shards: Option<u32>,
    /// Samples of the point that recorded a placement.
    pub samples: usize,
}

/// What a bench results.json recorded of its threads' CPUs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Placements {
    /// Per (design, threads): the median sample's CPUs, one per thread.
    pub at: BTreeMap<(String, u32), RecordedPlacement>,
    /// Points whose median sample had threads on fewer distinct CPUs than
    /// threads (time-sliced: one copy per CPU cannot stand for them), with
    /// the CPUs they were seen on.
    pub shared: BTreeMap<(String, u32), Vec<u32>>,
}

/// The placements a bench results.json recorded, per (design, threads) of
/// `pattern` and `workload`; none for a file recorded before placements
/// were (or a survey's execl.tsv). A point whose median sample's threads
/// shared a main CPU takes, for each thread after the first on a CPU,
/// another CPU it was seen on; where none is left the point goes to
/// [`Placements::shared`] (its placement stays assumed).
pub fn placements(text: &str, pattern: &str, workload: &str) -> Result<Placements, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not a results file: {e}"))?;
    type Sample = (f64, usize, Vec<(u32, Vec<u32>)>, Option<u32>);
    let mut points: BTreeMap<(String, u32), Vec<Sample>> = BTreeMap::new();
    for r in v["runs"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        if r["call_pattern"].as_str().unwrap_or("per-vma") != pattern
            || r["workload"].as_str().unwrap_or("execl") != workload
        {
            continue;
        }
        let (Some(d), Some(t), Some(per_s), Some(threads)) = (
            r["design"].as_str(),
            r["threads"].as_u64(),
            r["ops_per_sec"].as_f64(),
            r["placement"]["threads"].as_array(),
        ) else {
            continue;
        };
        let cpu = |x: &serde_json::Value| x.as_u64().and_then(|c| u32::try_from(c).ok());
        let threads: Option<Vec<(u32, Vec<u32>)>> = threads
            .iter()
            .map(|th| {
                let main = cpu(&th["cpu"])?;
                let seen = th["cpus"]
                    .as_array()
                    .map(|a| a.iter().filter_map(cpu).collect())
                    .unwrap_or_default();
                Some((main, seen))
            })
            .collect();
        let Some(threads) = threads else {
            return Err(format!(
                "{d} at {t} threads: a placement without a CPU per thread"
            ));
        };
        let shards = r["placement"]["shards"]
            .as_u64()
            .and_then(|s| u32::try_from(s).ok());
        let repeat = r["repeat"].as_u64().unwrap_or(0) as usize;
        points
            .entry((d.to_owned(), u32::try_from(t).unwrap_or(u32::MAX)))
            .or_default()
            .push((per_s, repeat, threads, shards));
    }
    let mut out = Placements::default();
    for (key, mut samples) in points {
        let n = samples.len();
        samples.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (per_s, repeat, threads, shards) = samples.swap_remove((n - 1) / 2);
        let mut cpus: Vec<u32> = Vec::with_capacity(threads.len());
        for (main, seen) in &threads {
            let pick = std::iter::once(main)
                .chain(seen)
                .find(|c| !cpus.contains(c))
                .copied();
            match pick {
                Some(c) => cpus.push(c),
                None => break,
            }
        }
        if cpus.len() < threads.len() || cpus.is_empty() {
            let mut seen: Vec<u32> = threads.iter().flat_map(|(_, s)| s.clone()).collect();
            seen.sort_unstable();
            seen.dedup();
            out.shared.insert(key, seen);
        } else {
            out.at.insert(
                key,
                RecordedPlacement {
                    cpus,
                    repeat,
                    per_s,
                    shards,
                    samples: n,
                },
            );
        }
    }
    Ok(out)
}

/// [`placements`] of a `--measured` file (none for an execl.tsv).
pub fn load_placements(path: &Path, pattern: &str, workload: &str) -> Result<Placements, String> {
    if path.extension().is_some_and(|e| e == "tsv") {
        return Ok(Placements::default());
    }
    let text = crate::input::read_text(path, "--measured", crate::input::RESULTS_CAP)?;
    placements(&text, pattern, workload).map_err(|e| format!("--measured: {}: {e}", path.display()))
}

/// One row of ratios: PREDICTED / measured at each of `cpus` (None where
/// either is missing).
fn ratios(
    pred: &[(u32, f64)],
    meas: Option<&BTreeMap<u32, f64>>,
    cpus: &[u32],
) -> Vec<Option<f64>> {
    cpus.iter()
        .map(|c| {
            let p = pred.iter().find(|(k, _)| k == c)?.1;
            let m = *meas?.get(c)?;
            (m > 0.0).then(|| p / m)
        })
        .collect()
}

/// The comparison table: one row per predicted design (and its bound
/// against the bench's `exclude`), or `linux` against the kernel's
/// dynamic and static curves; each cell PREDICTED / measured.
pub fn table(o: &PredictOutput, m: &Measured, source: &Path) -> String {
    let cpus = o.cpu_counts();
    let mut rows: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    for c in &o.curves {
        let pred: Vec<(u32, f64)> = c.points.iter().map(|p| (p.cpus, p.per_s)).collect();
        if m.kernel {
            if c.design != "linux" {
                continue;
            }
            for (k, row) in &m.rows {
                rows.push((
                    format!("linux / kernel {k}"),
                    ratios(&pred, Some(row), &cpus),
                ));
            }
            continue;
        }
        rows.push((
            c.design.clone(),
            ratios(&pred, m.rows.get(&c.design), &cpus),
        ));
        if !c.bound_per_s.is_empty() && m.rows.contains_key("exclude") {
            let bound: Vec<(u32, f64)> = c
                .points
                .iter()
                .zip(&c.bound_per_s)
                .map(|(p, &b)| (p.cpus, b))
                .collect();
            rows.push((
                format!("  {} bound / exclude", c.design),
                ratios(&bound, m.rows.get("exclude"), &cpus),
            ));
        }
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nPREDICTED / measured, {} {} cost prediction for {} against {} ({}):",
        o.workload,
        if o.cost.is_empty() { "?" } else { &o.cost },
        o.machine.name,
        source.display(),
        m.what
    );
    let _ = write!(s, "{:<34}", "cpus");
    for c in &cpus {
        let _ = write!(s, " {c:>6}");
    }
    let _ = writeln!(s);
    let mut worst: Option<f64> = None;
    for (name, r) in &rows {
        let _ = write!(s, "{name:<34}");
        for x in r {
            match x {
                Some(v) => {
                    let _ = write!(s, " {v:>6.2}");
                    if !name.starts_with(' ') {
                        let err = (v - 1.0).abs();
                        worst = Some(worst.map_or(err, |w: f64| w.max(err)));
                    }
                }
                None => {
                    let _ = write!(s, " {:>6}", "-");
                }
            }
        }
        let _ = writeln!(s);
    }
    if let Some(w) = worst {
        let _ = writeln!(
            s,
            "largest error of a design's point: {:.0}% (1.00 = the prediction equals the median measured; a bound row is an AT MOST figure set beside the bench's no-reverse-map design)",
            100.0 * w
        );
    } else {
        let _ = writeln!(s, "no CPU count is in both");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::tests::point;
    use crate::predict::Curve;
    use predict::Machine;

    fn output(curves: Vec<Curve>) -> PredictOutput {
        let m = Machine::by_name("device-16").unwrap();
        PredictOutput {
            kind: "PREDICTION (simulated, not measured)".into(),
            machine: m.clone(),
            host: m,
            workload: "execl".into(),
            iteration_ns: 1.0,
            seconds: 1.0,
            cost: "model".into(),
            lock: String::new(),
            locks: Vec::new(),
            scale: String::new(),
            caveats: vec![],
            assumptions: vec![],
            validation: String::new(),
            stored_validation: None,
            curves,
            placement: vec![],
        }
    }

    fn curve(design: &str, pts: &[(u32, f64)], bound: &[f64]) -> Curve {
        Curve {
            design: design.into(),
            call_pattern: "per-vma".into(),
            holds_per_iteration: 38,
            model_rmap_ns: 0.0,
            profile_notes: String::new(),
            points: pts.iter().map(|&(c, r)| point(c, r)).collect(),
            bound_per_s: bound.to_vec(),
            readings: Vec::new(),
        }
    }

    #[test]
    fn a_bench_file_gives_each_design_its_ratio_and_the_bound_meets_exclude() {
        let bench = r#"{"config":{"cost":"kernel: spin","lock":"rwsem"},"summary":[
            {"design":"linux","call_pattern":"per-vma","threads":1,"ops_per_sec":{"median":100.0}},
            {"design":"linux","call_pattern":"per-vma","threads":4,"ops_per_sec":{"median":200.0}},
            {"design":"linux","call_pattern":"batched","threads":4,"ops_per_sec":{"median":999.0}},
            {"design":"exclude","call_pattern":"per-vma","threads":4,"ops_per_sec":{"median":400.0}}]}"#;
        let m = parse_bench(bench, "per-vma").unwrap();
        assert_eq!(m.rows["linux"][&4], 200.0, "the batched point is left out");
        assert!(m.what.contains("kernel cost") && m.what.contains("rwsem"));
        let o = output(vec![curve(
            "linux",
            &[(1, 50.0), (4, 300.0)],
            &[60.0, 600.0],
        )]);
        let t = table(&o, &m, Path::new("r.json"));
        assert!(t.contains("0.50") && t.contains("1.50"), "{t}");
        assert!(
            t.contains("linux bound / exclude") && t.contains("1.50"),
            "{t}"
        );
        assert!(t.contains("largest error of a design's point: 50%"), "{t}");
        assert!(parse_bench(bench, "both").is_err());
        assert!(parse_bench("{}", "per-vma").is_err());
    }

    #[test]
    fn an_execl_table_gives_medians_per_linkage_and_is_set_beside_linux() {
        let tsv = "linkage\tcopies\tround\tseconds\texecs\tper_s\n\
                   dyn\t1\t1\t2\t4000\t2000\n\
                   dyn\t1\t2\t2\t4400\t2200\n\
                   dyn\t1\t3\t2\t4200\t2100\n\
                   static\t1\t1\t2\t8000\t4000\n";
        let m = parse_execl_tsv(tsv).unwrap();
        assert_eq!(m.rows["dyn"][&1], 2100.0);
        assert_eq!(m.rows["static"][&1], 4000.0);
        let o = output(vec![
            curve("linux", &[(1, 2100.0)], &[]),
            curve("aspace", &[(1, 9999.0)], &[]),
        ]);
        let t = table(&o, &m, Path::new("execl.tsv"));
        assert!(
            t.contains("linux / kernel dyn") && t.contains("1.00"),
            "{t}"
        );
        assert!(
            t.contains("linux / kernel static") && t.contains("0.53"),
            "{t}"
        );
        assert!(
            !t.lines().any(|l| l.starts_with("aspace")),
            "only linux is the kernel: {t}"
        );
        assert!(parse_execl_tsv("linkage\tcopies\tper_s\ndyn\tx\t1\n").is_err());
        assert!(parse_execl_tsv("a\tb\n").is_err());
    }
}
