//! End-to-end tests of the `aspace` binary.

mod common;
use common::{aspace, tmpdir};

#[test]
fn bench_writes_json_plots_and_report_then_report_rerenders() {
    let out = tmpdir("cli-bench");
    let json = out.join("r.json");
    let o = aspace(&[
        "bench",
        "--designs",
        "linux,aspace",
        "--threads",
        "1,2,3",
        "--duration",
        "150ms",
        "--repeat",
        "2",
        "--resident",
        "50",
        "--walk-rate",
        "100",
        "--workload",
        "execl",
        "--workload",
        "shell",
        "--json",
        json.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stdout.contains("x linux") && stdout.contains("median [min-max]"),
        "{stdout}"
    );
    assert!(stdout.contains("Ablations (execl)"), "{stdout}");
    assert!(
        stdout.contains("batching on aspace (batched / per-vma)"),
        "where the gain comes from: {stdout}"
    );
    assert!(
        stdout.contains("fork + exec"),
        "shell says what it does: {stdout}"
    );
    assert!(
        stderr.contains("Higher ops/s is better") && stderr.contains("interleaved"),
        "explains itself: {stderr}"
    );

    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for k in ["cpu_model", "cores", "nodes", "kernel", "commit"] {
        assert!(v["machine"].get(k).is_some(), "machine.{k}");
    }
    // The commit is the build's own: 40 hex digits, "-dirty" when built from a
    // modified tree (this test runs in a checkout).
    let commit = v["machine"]["commit"].as_str().unwrap();
    let hash = commit.strip_suffix("-dirty").unwrap_or(commit);
    assert!(
        hash.len() == 40 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
        "{commit}"
    );
    // How it was built, which this test shares with the binary (same
    // profile, same RUSTFLAGS).
    let build = v["machine"]["build"].as_str().unwrap();
    assert_eq!(
        build.starts_with("release build"),
        !cfg!(debug_assertions),
        "{build}"
    );
    assert_eq!(
        build.contains("for AVX2 (maple: vector pivot search)"),
        aspace_maple::VECTOR_PIVOT_SEARCH,
        "{build}"
    );
    let cores = v["machine"]["cores"].as_u64().unwrap() as usize;
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(
        runs.len(),
        2 * 2 * 2 * 3 * 2,
        "workloads x designs x call patterns x threads x repeats"
    );
    // Interleaved: every (design, pattern) of a thread count before the next
    // thread count, and every point's first repeat before any second one.
    let first_second = runs.iter().position(|r| r["repeat"] == 1).unwrap();
    assert_eq!(first_second, runs.len() / 2);
    assert_eq!(runs[0]["design"], "linux");
    assert_eq!(runs[1]["design"], "aspace");
    for r in runs {
        for k in [
            "workload",
            "design",
            "threads",
            "repeat",
            "ops_per_sec",
            "contended_pct",
            "call_pattern",
            "call_pattern_detail",
            "lock_holds_per_op",
            "libc_rmap_bytes",
        ] {
            assert!(r.get(k).is_some(), "run.{k} in {r}");
        }
        assert!(r["ops_per_sec"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["resident_libc_vmas"].as_u64().unwrap(), 50 * 5, "{r}");
        let threads = r["threads"].as_u64().unwrap() as usize;
        assert_eq!(
            r["oversubscribed"].as_bool().unwrap(),
            threads > cores,
            "{r}"
        );
        if r["design"] == "linux" {
            assert!((r["ratio_to_linux"].as_f64().unwrap() - 1.0).abs() < 1e-9);
        }
        // Lock holds are counted by the maps: at least one per rmap call.
        let holds = r["lock_holds_per_op"].as_f64().unwrap();
        assert!(
            holds >= r["calls_per_op"]["lock_holds"].as_f64().unwrap(),
            "{r}"
        );
        let walk = &r["walk"];
        assert_eq!(walk["requested_per_sec"].as_f64().unwrap(), 100.0, "{r}");
        // The walker's first walk is at once, so every sample has one, however
        // late the walk thread got the CPU.
        assert!(walk["walks"].as_u64().unwrap() >= 1, "{r}");
        assert!(walk["p99_ns"].as_u64().unwrap() >= walk["p50_ns"].as_u64().unwrap());
        assert!(walk["p50_ns"].as_u64().unwrap() > 0, "{r}");
    }
    let find = |w: &str, d: &str, p: &str| {
        runs.iter()
            .find(|r| r["workload"] == w && r["design"] == d && r["call_pattern"] == p)
            .unwrap_or_else(|| panic!("no {w} {d} {p} run"))
    };
    let calls = |r: &serde_json::Value, k: &str| r["calls_per_op"][k].as_f64().unwrap();
    // The call pattern is the caller's, the same for every design: batched
    // fork links the child's file VMAs with one batch per file (binary,
    // libc, ld.so: at least 3) and none one by one...
    for d in ["linux", "aspace"] {
        let b = find("shell", d, "batched");
        assert!(calls(b, "insert_after_batch") >= 3.0, "{b}");
        assert_eq!(calls(b, "insert_after"), 0.0, "{b}");
        assert!(calls(b, "insert_batch") >= 3.0, "{b}");
        assert_eq!(calls(b, "insert"), 0.0, "{b}");
        // ...while per VMA takes one hold per VMA, as dup_mmap.
        let p = find("shell", d, "per-vma");
        assert!(calls(p, "insert_after") >= 10.0, "{p}");
        assert_eq!(calls(p, "insert_after_batch"), 0.0, "{p}");
        assert_eq!(calls(p, "insert_batch"), 0.0, "{p}");
        assert!(
            calls(p, "lock_holds") > calls(b, "lock_holds"),
            "{p} vs {b}"
        );
        // Per call site, counted by the maps: linux takes one lock per call, so
        // its counts equal mm's; every hold is at a declared site.
        let site = |r: &serde_json::Value, name: &str| {
            r["sites"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["site"] == name)
                .unwrap_or_else(|| panic!("no site {name} in {r}"))
                .clone()
        };
        if d == "linux" {
            let holds = |name: &str| site(p, name)["holds_per_op"].as_f64().unwrap();
            assert!(
                (holds("fork_insert_after") - calls(p, "insert_after")).abs() < 1e-9,
                "{p}"
            );
            // exec replays ld.so's calls: an insert is a link on mmap, or the
            // remainder of a VMA an overlay or an mprotect cut (a split).
            assert!(holds("mmap_link") > 0.0, "{p}");
            assert!(holds("mmap_link") <= calls(p, "insert") + 1e-9, "{p}");
            assert_eq!(holds("other"), 0.0, "{p}");
            assert!(
                site(p, "mmap_link")["mean_hold_ns"].as_f64().unwrap() > 0.0,
                "{p}"
            );
            assert!(holds("walk") > 0.0, "walks counted at their own site: {p}");
        }
        let (pe, be) = (find("execl", d, "per-vma"), find("execl", d, "batched"));
        assert_eq!(calls(pe, "insert_batch"), 0.0);
        assert!(
            pe["lock_holds_per_op"].as_f64().unwrap() > be["lock_holds_per_op"].as_f64().unwrap(),
            "the maps count fewer holds when batched: {pe} vs {be}"
        );
    }
    // One summary per point, with its spread.
    let summary = v["summary"].as_array().unwrap();
    assert_eq!(summary.len(), 2 * 2 * 2 * 3);
    for x in summary {
        let s = &x["ops_per_sec"];
        assert_eq!(s["n"], 2, "{x}");
        let (lo, med, hi) = (
            s["min"].as_f64().unwrap(),
            s["median"].as_f64().unwrap(),
            s["max"].as_f64().unwrap(),
        );
        assert!(lo <= med && med <= hi, "{x}");
        assert!(x["libc_rmap_bytes"].as_u64().unwrap() > 0, "{x}");
        assert!(x.get("vs_linux").is_some() && x.get("ratio_to_kernel").is_some());
    }
    let fitted = v["fits"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| !f["usl"].is_null());
    for f in ["report.html", "execl.svg", "shell.svg"] {
        assert!(out.join(f).exists(), "{f}");
    }
    assert_eq!(
        out.join("execl-projection.svg").exists(),
        fitted,
        "a projection plot only when something was fitted"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("aspace"));
    assert!(
        html.contains(&format!("({build})")),
        "the report says how aspace was built"
    );
    assert!(!html.contains("All designs do the same work"));
    assert!(html.contains("libc rmap bytes") && html.contains("Ablations"));
    assert!(html.contains("fork_insert_after") && html.contains("p99"));
    assert_eq!(html.contains("Projection (USL fit"), fitted);
    // The predicted curve for this host, beside the measured one, labelled.
    assert!(
        html.contains("Predictions for this host") && html.contains("PREDICTED ops/s"),
        "a labelled prediction section"
    );
    assert!(
        v["predicted"]["points"].as_array().is_some_and(|p| p
            .iter()
            .any(|x| x["design"] == "aspace" && x["threads"] == 1)),
        "predicted points in the JSON"
    );
    let svg = std::fs::read_to_string(out.join("execl.svg")).unwrap();
    assert!(svg.contains("min-max"), "error bars are explained");
    if cores < 3 {
        assert!(svg.contains("oversubscribed"), "3 threads on {cores} cores");
    }

    // Re-render from the JSON into a fresh directory.
    let out2 = tmpdir("cli-report");
    let o = aspace(&[
        "report",
        json.to_str().unwrap(),
        "--out",
        out2.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html2 = std::fs::read_to_string(out2.join("report.html")).unwrap();
    assert!(
        html == html2,
        "report must re-render the same page from the JSON"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("x linux"));
}

/// Bad output paths fail before any sample runs (the banner that opens a run is
/// never printed), and so do bad --repeat and --call-pattern values.
#[test]
fn outputs_and_arguments_are_checked_before_the_run() {
    let d = tmpdir("cli-early");
    let file = d.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let cases: Vec<Vec<String>> = vec![
        vec!["--out".into(), file.join("sub").display().to_string()],
        vec!["--json".into(), "/no/such/dir/r.json".into()],
        vec!["--json".into(), d.display().to_string()],
        vec!["--repeat".into(), "0".into()],
        vec!["--repeat".into(), "x".into()],
        vec!["--call-pattern".into(), "sometimes".into()],
    ];
    for extra in cases {
        let out = d.join("out").display().to_string();
        let mut args: Vec<&str> = vec!["bench", "--threads", "1", "--duration", "30s"];
        if extra[0] != "--out" {
            args.extend(["--out", out.as_str()]);
        }
        args.extend(extra.iter().map(String::as_str));
        let o = aspace(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} should fail");
        assert!(err.contains("error"), "{args:?}: {err}");
        assert!(
            !err.contains("aspace bench:"),
            "{args:?} started the run: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_arguments_fail_cleanly() {
    let cases: &[&[&str]] = &[
        &["bench", "--threads", "0"],
        &["bench", "--threads", "x,2"],
        &["bench", "--designs", "nosuch"],
        &["bench", "--duration", "-3"],
        &["bench", "--topology", "banana"],
        &["bench", "--walk-rate", "-1"],
        &["bench", "--workload", "bogus"],
        &["bench", "--binary", "/etc/passwd", "--threads", "1"],
        &["bench", "--binary", "/no/such/file", "--threads", "1"],
        &["report", "/no/such/results.json"],
        &["frobnicate"],
    ];
    for args in cases {
        let o = aspace(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} should fail");
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
        assert!(err.contains("error"), "{args:?}: no clear message: {err}");
    }
    // A JSON file that is not ours.
    let d = tmpdir("cli-badjson");
    let p = d.join("x.json");
    std::fs::write(&p, "{\"hello\": 1}").unwrap();
    let o = aspace(&["report", p.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not an aspace results file"));
}

#[test]
fn short_soak_finds_no_violation_and_reports_memory() {
    let out = tmpdir("cli-soak");
    let json = out.join("soak.json");
    let curve = out.join("rss.tsv");
    let o = aspace(&[
        "soak",
        "--duration",
        "2",
        "--threads",
        "4",
        "--designs",
        "linux,sharded,aspace",
        "--json",
        json.to_str().unwrap(),
        "--curve",
        curve.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("violations: 0"), "{stdout}");
    assert!(stdout.contains("peak RSS (VmHWM)"), "{stdout}");
    assert!(stdout.contains("RSS curve"), "{stdout}");
    assert!(
        stdout.contains("measured bound") && !stdout.contains("KiB/min"),
        "the RSS trend is a measured bound, not an extrapolation: {stdout}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["violations"], 0);
    assert_eq!(
        v["call_patterns"],
        serde_json::json!(["per-vma", "batched", "per-vma"]),
        "patterns alternate over the designs: {v}"
    );
    // Every worker does at least soak::MIN_OPS (256), however slow the machine.
    assert!(v["ops"].as_u64().unwrap() >= 4 * 256, "{v}");
    assert!(v["checks"].as_u64().unwrap() > 0, "{v}");
    for k in ["mmap", "munmap", "mprotect", "fork", "exec", "exit", "walk"] {
        assert!(v["ops_by_kind"][k].as_u64().unwrap() > 0, "no {k} in {v}");
    }
    assert!(v["peak_rss_kib"].as_u64().unwrap() > 0, "{v}");
    let half = v["rss_second_half_kib"].as_array().unwrap();
    assert!(
        half[0].as_u64().unwrap() <= half[1].as_u64().unwrap(),
        "{v}"
    );
    let pts = v["rss_curve"].as_array().unwrap();
    // The start, at least one sample during the run, the end: how many more
    // depends on how often the sampler got the CPU.
    assert!(pts.len() >= 3, "sampled over time: {pts:?}");
    let lines = std::fs::read_to_string(&curve).unwrap();
    assert_eq!(lines.lines().count(), pts.len());
    assert!(lines.lines().all(|l| l.split('\t').count() == 2));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn bench_predicts_every_design_and_leaves_a_bound_out() {
    // A bound (`exclude`) takes no lock: the host prediction skips it and
    // still predicts the designs beside it.
    let out = tmpdir("cli-bench-bound");
    let json = out.join("r.json");
    let o = aspace(&[
        "bench",
        "--designs",
        "linux,exclude",
        "--threads",
        "1",
        "--duration",
        "50ms",
        "--repeat",
        "1",
        "--resident",
        "10",
        "--workload",
        "execl",
        "--json",
        json.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "stderr:\n{stderr}");
    assert!(!stderr.contains("no prediction"), "{stderr}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let points = v["predicted"]["points"]
        .as_array()
        .expect("predicted points");
    assert!(points.iter().any(|x| x["design"] == "linux"), "{points:?}");
    assert!(
        !points.iter().any(|x| x["design"] == "exclude"),
        "{points:?}"
    );
}

/// The survey end to end in its shortest form: two counts, the smallest
/// settings (with a budget far above what they take, so that a slow machine
/// does not hit a part's deadline), the parts that need no prebuilt criterion
/// executable; the maple part without one is recorded as skipped, not fatal.
#[test]
fn a_short_survey_writes_its_folder_and_summary() {
    let out = tmpdir("cli-survey");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/survey/execl.c");
    let o = aspace(&[
        "survey",
        "--max-cpus",
        "2",
        "--budget",
        "600",
        "--scale",
        "0",
        "--parts",
        "machine,execl,bench,maple",
        "--execl-src",
        src.to_str().unwrap(),
        "--maple-bench",
        "/no/such/maple-bench",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The plan comes first.
    assert!(
        stdout.starts_with("aspace survey plan: counts [1, 2]; budget 600 s; settings at 0%"),
        "{stdout}"
    );
    let status = std::fs::read_to_string(out.join("status.tsv")).unwrap();
    for part in ["machine\tok", "execl\tok", "bench\tok", "maple\tskipped"] {
        assert!(status.contains(part), "{part}: {status}");
    }
    let machine = std::fs::read_to_string(out.join("machine.txt")).unwrap();
    assert!(
        machine.contains("## lscpu") && machine.contains("## uname -a"),
        "{machine}"
    );
    // Every (linkage, copies) of the one round, dynamic at least (a static
    // libc may be missing).
    let execl = std::fs::read_to_string(out.join("execl.tsv")).unwrap();
    for p in ["dyn\t1\t1\t", "dyn\t2\t1\t"] {
        assert!(execl.contains(p), "{p}: {execl}");
    }
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains("| copies / threads | kernel execl, dynamic |"),
        "{md}"
    );
    for p in ["1", "2"] {
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("| {p} | ")))
            .unwrap_or_else(|| panic!("no row {p}: {md}"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // Kernel dynamic and bench linux measured; no prediction ran.
        assert_ne!(cells[2], "-", "{row}");
        assert_ne!(cells[5], "-", "{row}");
        assert_eq!(cells[9], "-", "{row}");
    }
    let tsv = std::fs::read_to_string(out.join("summary.tsv")).unwrap();
    assert_eq!(tsv.lines().count(), 3, "{tsv}");
    // Bad arguments fail before anything runs.
    for args in [
        &["survey", "--parts", "bogus"][..],
        &["survey", "--budget", "5"],
        &["survey", "--max-cpus", "0"],
    ] {
        let o = aspace(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("error"),
            "{args:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// Saved profiles keep the locks they were recorded with: `predict
/// --profiles` labels what they hold (rwsem here), in the text, the JSON
/// and the HTML, not the plan's default (parking_lot for --model-cost),
/// and refuses an explicit --lock of another kind.
#[test]
fn saved_rwsem_profiles_are_labelled_rwsem_whatever_the_default() {
    let d = tmpdir("cli-saved-locks");
    let hold = |site: &str| {
        serde_json::json!({"Hold": {"lock": 0, "write": true, "site": site,
            "hold_ns": 300.0, "written": [1], "read": []}})
    };
    let slots: Vec<serde_json::Value> = (0..2)
        .map(|c| {
            serde_json::json!({"cpu": c, "steps": [
                {"Work": 5000.0}, hold("MmapLink"), {"Work": 5000.0}, hold("ExitUnlink")]})
        })
        .collect();
    let profile = serde_json::json!({
        "label": "linux", "workload": "execl", "call_pattern": "per-vma",
        "locks": [{"name": "map0#0", "kind": "KernelRwsem", "line": 0}],
        "lines": ["LockWord", "Tree"],
        "slots": slots,
        "recorded_ghz": 3.0, "notes": "hand-made", "work_placed": true,
        "loads_recorded": true
    });
    std::fs::write(d.join("linux.recorded.json"), profile.to_string()).unwrap();
    let out = d.join("out");
    let run = |lock: &[&str]| {
        let mut args = vec![
            "predict",
            "--machine",
            "device-16",
            "--model-cost",
            "--model-exec-ns",
            "13477",
            "--designs",
            "linux",
            "--cpus",
            "1,2",
            "--seconds",
            "0.02",
            "--profiles",
            d.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend(lock);
        aspace(&args)
    };
    let o = run(&[]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stdout.contains("reverse-map locks: rwsem") && !stdout.contains("parking_lot"),
        "{stdout}"
    );
    assert!(
        stderr.contains("saved profile(s)") && !stderr.contains("recording 1"),
        "{stderr}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("predict.json")).unwrap()).unwrap();
    assert_eq!(v["lock"], "rwsem");
    // Every point says how it reads against its bound (linux: a point).
    assert_eq!(
        v["curves"][0]["readings"],
        serde_json::json!(["point", "point"])
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("reverse-map locks: rwsem"), "{html}");
    let o = run(&["--lock", "parking-lot"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        stderr.contains("--lock parking-lot") && stderr.contains("linux holds rwsem"),
        "{stderr}"
    );
    assert!(run(&["--lock", "rwsem"]).status.success());
    let _ = std::fs::remove_dir_all(&d);
}

/// Output into a pipe its reader closed (`aspace replay ... | head -1`) ends the
/// run quietly, by SIGPIPE as Unix tools end, never a panic (Rust's runtime ignores
/// SIGPIPE, and `println!` panics on the `EPIPE` it then gets).
#[test]
fn a_closed_output_pipe_ends_the_run_without_a_panic() {
    use std::io::Read as _;
    use std::os::unix::process::ExitStatusExt as _;
    use std::process::{Command, Stdio};
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../mm/tests/data");
    let mut child = Command::new(env!("CARGO_BIN_EXE_aspace"))
        .arg("replay")
        .arg(data.join("git-version.strace"))
        .arg("--maps")
        .arg(data.join("git-version.maps"))
        .current_dir(common::work_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The only reader closes the pipe before the run prints: its first line
    // meets a closed pipe, whenever it comes.
    drop(child.stdout.take());
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status:?}: {err}");
}
