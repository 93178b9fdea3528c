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
        stdout.contains("x linux") && stdout.contains("PROJECTIONS"),
        "{stdout}"
    );
    assert!(
        stderr.contains("Higher ops/s is better"),
        "explains itself: {stderr}"
    );

    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for k in ["cpu_model", "cores", "nodes", "kernel", "commit"] {
        assert!(v["machine"].get(k).is_some(), "machine.{k}");
    }
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(
        runs.len(),
        2 * 2 * 2 * 3,
        "workloads x designs x call patterns x threads"
    );
    for r in runs {
        for k in [
            "workload",
            "design",
            "threads",
            "ops_per_sec",
            "contended_pct",
            "call_pattern",
        ] {
            assert!(r.get(k).is_some(), "run.{k} in {r}");
        }
        assert!(r["ops_per_sec"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["resident_libc_vmas"].as_u64().unwrap(), 50 * 5, "{r}");
        if r["design"] == "linux" {
            assert!((r["ratio_to_linux"].as_f64().unwrap() - 1.0).abs() < 1e-9);
        }
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
        assert_eq!(calls(find("execl", d, "per-vma"), "insert_batch"), 0.0);
    }
    assert_eq!(v["fits"].as_array().unwrap().len(), 8);

    for f in [
        "report.html",
        "execl.svg",
        "shell.svg",
        "execl-projection.svg",
    ] {
        assert!(out.join(f).exists(), "{f}");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("not measured") && html.contains("aspace"));

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
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["violations"], 0);
    assert!(v["ops"].as_u64().unwrap() > 100, "{v}");
    assert!(v["checks"].as_u64().unwrap() > 0, "{v}");
    for k in ["mmap", "munmap", "mprotect", "fork", "exec", "exit", "walk"] {
        assert!(v["ops_by_kind"][k].as_u64().unwrap() > 0, "no {k} in {v}");
    }
    assert!(v["peak_rss_kib"].as_u64().unwrap() > 0, "{v}");
    let pts = v["rss_curve"].as_array().unwrap();
    assert!(pts.len() >= 10, "sampled over time: {pts:?}");
    let lines = std::fs::read_to_string(&curve).unwrap();
    assert_eq!(lines.lines().count(), pts.len());
    assert!(lines.lines().all(|l| l.split('\t').count() == 2));
    let _ = std::fs::remove_dir_all(&out);
}
