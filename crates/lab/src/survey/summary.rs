//! The survey's summary: one table of the real kernel's execs/s against the
//! bench's `linux` and the predictions at every count, the parts' status, and
//! maple's criterion medians, built from whatever files the folder holds (a
//! part that did not run leaves its columns as "-").

use super::{Plan, Status};
use crate::plot::rate;
use crate::results::Results;
use crate::spread::Spread;
use std::fmt::Write as _;
use std::path::Path;

/// (execs, execs/s) from the execl program's line
/// `copies P seconds S execs N per_s X`.
pub fn parse_execl(out: &str) -> Option<(u64, f64)> {
    let line = out.lines().find(|l| l.starts_with("copies "))?;
    let w: Vec<&str> = line.split_whitespace().collect();
    let field = |k: &str| w.iter().position(|x| *x == k).and_then(|i| w.get(i + 1));
    Some((field("execs")?.parse().ok()?, field("per_s")?.parse().ok()?))
}

/// execl.tsv: (linkage, copies) -> execs/s of every round.
fn execl_rows(out: &Path) -> Vec<(String, usize, f64)> {
    let text = std::fs::read_to_string(out.join("execl.tsv")).unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Some((
                f.first()?.to_string(),
                f.get(1)?.parse().ok()?,
                f.get(5)?.parse().ok()?,
            ))
        })
        .collect()
}

fn execl_at(rows: &[(String, usize, f64)], linkage: &str, p: usize) -> Option<Spread> {
    let v: Vec<f64> = rows
        .iter()
        .filter(|r| r.0 == linkage && r.1 == p)
        .map(|r| r.2)
        .collect();
    Spread::of(&v)
}

/// A bench's results, analysed; `None` when absent or unreadable.
fn bench(out: &Path, dir: &str) -> Option<Results> {
    let text = std::fs::read_to_string(out.join(dir).join("results.json")).ok()?;
    let mut r: Results = serde_json::from_str(&text).ok()?;
    r.analyse();
    Some(r)
}

fn bench_at(r: Option<&Results>, design: &str, p: usize) -> Option<Spread> {
    r?.summary
        .iter()
        .find(|x| x.design == design && x.call_pattern == "per-vma" && x.threads == p)
        .map(|x| x.ops_per_sec)
}

/// A prediction's `linux` curve, cpus -> per second, read loosely (only
/// `curves[].design`, `curves[].points[].cpus` and `.per_s`), so that a
/// predictor that adds fields still reads.
fn predicted(out: &Path, dir: &str) -> Vec<(usize, f64)> {
    let Ok(text) = std::fs::read_to_string(out.join(dir).join("predict.json")) else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Vec::new();
    };
    v["curves"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["design"] == "linux")
        .flat_map(|c| c["points"].as_array().into_iter().flatten())
        .filter_map(|p| Some((p["cpus"].as_u64()? as usize, p["per_s"].as_f64()?)))
        .collect()
}

fn shown(s: Option<Spread>) -> String {
    match s {
        None => "-".into(),
        Some(s) if s.n < 2 => rate(s.median),
        Some(s) => format!("{} [{}-{}]", rate(s.median), rate(s.min), rate(s.max)),
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "-".into(),
    }
}

/// maple/criterion.txt: (benchmark, median time as printed).
fn criterion(out: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(out.join("maple").join("criterion.txt")).unwrap_or_default();
    let mut v = Vec::new();
    let mut last = String::new();
    for l in text.lines() {
        let t = l.trim();
        if let Some(i) = t.find("time:") {
            let name = t[..i].trim();
            let name = if name.is_empty() {
                last.clone()
            } else {
                name.to_owned()
            };
            // time:   [low median high]
            let inner = t[i + 5..]
                .trim()
                .trim_start_matches('[')
                .trim_end_matches(']');
            let w: Vec<&str> = inner.split_whitespace().collect();
            if w.len() >= 4 {
                v.push((name, format!("{} {}", w[2], w[3])));
            }
        } else if !t.is_empty() && !t.starts_with("Benchmarking") && !t.contains(':') {
            last = t.to_owned();
        }
    }
    v
}

/// The summary as markdown, and its table as TSV.
pub fn build(out: &Path, plan: &Plan, statuses: &[Status], budget: f64) -> (String, String) {
    let m = crate::machine::describe();
    let rows = execl_rows(out);
    let (b, bk) = (bench(out, "bench"), bench(out, "bench-kernel"));
    let (pk, pm) = (
        predicted(out, "predict-kernel"),
        predicted(out, "predict-model"),
    );
    let at = |v: &[(usize, f64)], p: usize| v.iter().find(|x| x.0 == p).map(|x| x.1);
    let mut md = format!(
        "# aspace survey: {}, {} CPUs, {} NUMA node(s), Linux {}\n\n\
         aspace {} ({}); budget {budget:.0} s, settings at {:.0}% of the full ones (plan.txt). \
         machine.txt has lscpu, uname, the NUMA nodes, the load and the compiler.\n\n\
         ## The real kernel against the lab and the predictor: execl, execs/s\n\n",
        m.cpu_model,
        m.cores,
        m.nodes,
        m.kernel,
        m.commit,
        m.build,
        100.0 * plan.scale
    );
    let head = [
        "copies / threads",
        "kernel execl, dynamic",
        "x 1 copy",
        "kernel execl, static",
        "bench linux (model cost)",
        "bench aspace (model cost)",
        "bench linux (--cost kernel)",
        "bench (--cost kernel) / kernel dynamic",
        "PREDICTED linux, kernel cost",
        "predicted / kernel dynamic",
        "PREDICTED linux, model cost",
        "predicted / bench linux",
    ];
    let _ = writeln!(md, "| {} |", head.join(" | "));
    let _ = writeln!(md, "|{}", "---:|".repeat(head.len()));
    let mut tsv = String::from(
        "count\tkernel_dyn\tkernel_static\tbench_linux_model\tbench_aspace_model\tbench_linux_kernel_cost\tpredicted_linux_kernel_cost\tpredicted_linux_model_cost\n",
    );
    let dyn1 = execl_at(&rows, "dyn", 1).map(|s| s.median);
    let med = |s: Option<Spread>| s.map(|x| x.median);
    for &p in &plan.counts {
        let (kd, ks) = (execl_at(&rows, "dyn", p), execl_at(&rows, "static", p));
        let (bl, ba) = (
            bench_at(b.as_ref(), "linux", p),
            bench_at(b.as_ref(), "aspace", p),
        );
        let bkl = bench_at(bk.as_ref(), "linux", p);
        let (ppk, ppm) = (at(&pk, p), at(&pm, p));
        let cells = [
            p.to_string(),
            shown(kd),
            ratio(med(kd), dyn1),
            shown(ks),
            shown(bl),
            shown(ba),
            shown(bkl),
            ratio(med(bkl), med(kd)),
            ppk.map_or("-".into(), rate),
            ratio(ppk, med(kd)),
            ppm.map_or("-".into(), rate),
            ratio(ppm, med(bl)),
        ];
        let _ = writeln!(md, "| {} |", cells.join(" | "));
        let num = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.1}"));
        let _ = writeln!(
            tsv,
            "{p}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            num(med(kd)),
            num(med(ks)),
            num(med(bl)),
            num(med(ba)),
            num(med(bkl)),
            num(ppk),
            num(ppm)
        );
    }
    let _ = write!(
        md,
        "\nKernel columns: `execl.c` (scripts/survey/execl.c), every copy re-execing itself for {} s, \
         median [min-max] of {} round(s) (execl.tsv); `x 1 copy` is the dynamic median over one \
         copy's. Bench columns: `aspace bench` on the address-space model, per-vma calls, median \
         [min-max] of its samples (bench/, bench-kernel/); `--cost kernel` adds a real exec's \
         other work and shared lines to each model exec, so its `linux` should follow the kernel's \
         dynamic curve (the ratio beside it). PREDICTED columns: `aspace predict \
         --machine calib.json --host calib.json` (predict-kernel/, and --model-cost in \
         predict-model/, with --measured bench/results.json: each bench point runs on the CPUs \
         the bench's threads ran on, its log says which are recorded and which assumed): \
         simulated, not measured; the ratio columns are the check of the \
         predictions against this machine's measurements. \"-\": the part did not run or wrote \
         nothing for that count (see Parts).\n\n## Parts\n\n| part | status | seconds | detail |\n|---|---|---:|---|\n",
        super::fmt_s(plan.execl_seconds),
        plan.execl_rounds
    );
    for s in statuses {
        let _ = writeln!(
            md,
            "| {} | {} | {:.0} | {} |",
            s.part,
            s.status,
            s.seconds,
            s.detail.replace('|', "/")
        );
    }
    let c = criterion(out);
    if !c.is_empty() {
        let _ = write!(
            md,
            "\n## maple, criterion at 10^5 entries (maple/criterion.txt): median time\n\n| benchmark | time |\n|---|---:|\n"
        );
        for (name, t) in c {
            let _ = writeln!(md, "| {name} | {t} |");
        }
    }
    (md, tsv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn execl_lines_and_criterion_output_parse() {
        assert_eq!(
            parse_execl("copies 16 seconds 2.000 execs 57321 per_s 28660.5\n"),
            Some((57321, 28660.5))
        );
        assert_eq!(parse_execl("execl: 1 of 2 copies failed\n"), None);
        let d = std::env::temp_dir().join(format!("aspace-survey-sum-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("maple")).unwrap();
        std::fs::write(
            d.join("maple/criterion.txt"),
            "memory n=1000 adjacent: 75 nodes\nBenchmarking load/maple/100000\n\
             load/maple/100000       time:   [44.934 µs 47.529 µs 50.863 µs]\n\
             load_hot_drawn/maple/100000\n                        time:   [2.5806 ms 2.7129 ms 2.8822 ms]\n",
        )
        .unwrap();
        assert_eq!(
            criterion(&d),
            [
                ("load/maple/100000".to_owned(), "47.529 µs".to_owned()),
                (
                    "load_hot_drawn/maple/100000".to_owned(),
                    "2.7129 ms".to_owned()
                )
            ]
        );
        std::fs::write(
            d.join("execl.tsv"),
            "linkage\tcopies\tround\tseconds\texecs\tper_s\ndyn\t1\t1\t2\t4392\t2196.0\n\
             dyn\t1\t2\t2\t4716\t2358.0\nstatic\t1\t1\t2\t9718\t4859.0\ndyn\t2\t1\t2\t9466\t4733.0\n",
        )
        .unwrap();
        let plan = Plan::at(&[1, 2], &["execl".to_owned()], 1.0, 420.0);
        let (md, tsv) = build(&d, &plan, &[], 420.0);
        assert!(
            md.contains("| 1 | 2277 [2196-2358] | 1.00x | 4859 | - |"),
            "{md}"
        );
        assert!(md.contains("| 2 | 4733 | 2.08x | - |"), "{md}");
        assert!(
            tsv.lines()
                .nth(1)
                .unwrap()
                .starts_with("1\t2277.0\t4859.0\t\t"),
            "{tsv}"
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
