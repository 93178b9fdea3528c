//! Bad input to the `aspace` CLI: every case exits non-zero with a message that
//! starts with "error", and never panics. (Bench cases with valid arguments are in
//! cli.rs.) See docs/bad-input.md.
//!
//! The rows of issue 29's table each have a test below that also checks the
//! command ends (a hang is killed and fails the test, see
//! [`common::aspace_bounded`]) and stays under 100 MB of memory.

mod common;
use common::{aspace, aspace_bounded, tmpdir, Bounded};
use std::path::{Path, PathBuf};

fn fails_cleanly(args: &[&str]) {
    let o = aspace(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{args:?} should fail");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert!(err.contains("error"), "{args:?}: no clear message: {err}");
}

#[test]
fn soak_arguments_out_of_range() {
    for args in [
        &["soak", "--duration", "0"][..],
        &["soak", "--duration", "-5"],
        &["soak", "--duration", "NaN"],
        &["soak", "--duration", "inf"],
        &["soak", "--duration", "1e300"],
        &["soak", "--duration", "ten"],
        &["soak", "--threads", "0"],
        &["soak", "--threads", "99999"],
        &["soak", "--threads", "-1"],
        &["soak", "--designs", ""],
        &["soak", "--designs", "linux,bogus"],
        &["soak", "--designs", "linux,exclude"],
        &["soak", "--binary", "/no/such/binary"],
        &["soak", "--binary", "/etc/hostname"],
        &["soak", "--seed", "x"],
    ] {
        fails_cleanly(args);
    }
}

#[test]
fn bench_arguments_out_of_range() {
    for args in [
        &["bench", "--duration", "2h"][..],
        &["bench", "--duration", "0ms"],
        &["bench", "--duration", "NaN"],
        &["bench", "--threads", ","],
        &["bench", "--threads", "5000"],
        &["bench", "--threads", "18446744073709551616"],
        &["bench", "--resident", "1000000", "--threads", "1"],
        &["bench", "--walk-rate", "NaN"],
        &["bench", "--walk-rate", "inf"],
        &["bench", "--topology", "0x0"],
        &["bench", "--topology", "99999999999x2"],
        &["bench", "--designs", ",,"],
    ] {
        fails_cleanly(args);
    }
}

/// A static-pie program maps no shared library, so `aspace bench` refuses it by name
/// (before any run); ld.so run as the program is one on every glibc system.
#[test]
fn bench_refuses_a_program_that_maps_no_library() {
    let ldso = ["/lib64/ld-linux-x86-64.so.2", "/sbin/ldconfig"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    let Some(prog) = ldso else {
        eprintln!("no static-pie program on this machine; skipping");
        return;
    };
    let out = tmpdir("static-bench");
    let o = aspace(&["bench", "--binary", prog, "--out", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "bench of {prog} should fail");
    assert!(err.contains("static-pie"), "{prog}: {err}");
    assert!(!out.join("results.json").exists());
}

#[test]
fn report_rejects_bad_files() {
    let d = tmpdir("bad-report");
    let cases: [(&str, &[u8]); 5] = [
        ("empty.json", b""),
        ("truncated.json", b"{\"machine\": {\"cpu_model\": \"x\""),
        ("binary.json", &[0xff, 0xfe, 0x00, 0x01, 0x80]),
        ("array.json", b"[1, 2, 3]"),
        (
            "wrong-types.json",
            b"{\"machine\": 1, \"config\": \"x\", \"runs\": 5}",
        ),
    ];
    for (name, bytes) in cases {
        let p = d.join(name);
        std::fs::write(&p, bytes).unwrap();
        fails_cleanly(&["report", p.to_str().unwrap()]);
    }
    // A directory where a file is expected.
    fails_cleanly(&["report", d.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn unwritable_outputs_are_errors() {
    // A soak whose --json cannot be written fails before it runs.
    let o = aspace(&[
        "soak",
        "--duration",
        "200ms",
        "--threads",
        "1",
        "--designs",
        "linux",
        "--json",
        "/no/such/dir/soak.json",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("--json: cannot write"), "{err}");
    assert!(!err.contains("aspace soak:"), "the soak ran first: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// The most memory a refusal may take.
const MAX_RSS_KIB: u64 = 100 * 1000;

/// Runs `args` (in `cwd`): it must end, exit 2 with "error:" and `wanted` in
/// its message, not panic, and stay under [`MAX_RSS_KIB`].
fn refused(args: &[&str], cwd: Option<&Path>, wanted: &str) -> Bounded {
    let b = aspace_bounded(args, cwd);
    assert_eq!(b.code, Some(2), "{args:?}: {b:?}");
    assert!(b.stderr.contains("error:"), "{args:?}: {b:?}");
    assert!(
        b.stderr.contains(wanted),
        "{args:?}: wanted {wanted:?}: {b:?}"
    );
    assert!(!b.stderr.contains("panicked"), "{args:?}: {b:?}");
    assert!(
        b.max_rss_kib < MAX_RSS_KIB,
        "{args:?}: {} KiB",
        b.max_rss_kib
    );
    b
}

/// A FIFO at `path` (no writer ever opens it: reading it would block).
fn fifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

fn trace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../mm/tests/data/git-version.strace")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn replay_of_dev_zero_is_refused_unread() {
    refused(
        &["replay", "/dev/zero"],
        None,
        "/dev/zero is a character device",
    );
}

#[test]
fn report_of_dev_zero_is_refused_unread() {
    refused(
        &["report", "/dev/zero"],
        None,
        "/dev/zero is a character device",
    );
}

#[test]
fn fifos_are_refused_without_opening_them() {
    let d = tmpdir("fifo-inputs");
    let f = d.join("fifo");
    fifo(&f);
    refused(&["replay", s(&f)], None, "is a FIFO");
    refused(&["report", s(&f)], None, "is a FIFO");
    refused(
        &["predict", "--machine", s(&f), "--model-cost"],
        None,
        "is a FIFO",
    );
    refused(
        &[
            "predict",
            "--machine",
            "device-16",
            "--model-cost",
            "--host",
            s(&f),
        ],
        None,
        "is a FIFO",
    );
    refused(&["replay", s(&trace()), "--maps", s(&f)], None, "--maps: ");
    refused(
        &[
            "bench",
            "--threads",
            "1",
            "--predict-host",
            s(&f),
            "--out",
            s(&d.join("o")),
        ],
        None,
        "--predict-host: ",
    );
    // An output that is a FIFO would block its writer: refused too.
    refused(
        &["soak", "--duration", "1", "--json", s(&f)],
        None,
        "--json: ",
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Files larger than the command's cap are refused from their size, before
/// a byte is read (sparse: they take no disk).
#[test]
fn huge_inputs_are_refused_from_their_size() {
    let d = tmpdir("huge-inputs");
    let big = d.join("big");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(10 << 30)
        .unwrap();
    refused(&["report", s(&big)], None, "more than the 64.0 MiB");
    refused(&["replay", s(&big)], None, "more than the 256.0 MiB");
    refused(
        &["replay", s(&trace()), "--maps", s(&big)],
        None,
        "more than the 16.0 MiB",
    );
    refused(
        &["predict", "--machine", s(&big), "--model-cost"],
        None,
        "more than the 1.0 MiB",
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn predict_out_is_checked_before_the_work() {
    let b = refused(
        &[
            "predict",
            "--machine",
            "device-16",
            "--model-cost",
            "--out",
            "/proc/x",
        ],
        None,
        "--out: cannot create /proc/x",
    );
    assert!(!b.stderr.contains("recording"), "{b:?}");
    let d = tmpdir("predict-json");
    refused(
        &[
            "predict",
            "--machine",
            "device-16",
            "--model-cost",
            "--out",
            s(&d),
            "--json",
            "/proc/x/p.json",
        ],
        None,
        "--json: cannot write /proc/x/p.json",
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn calibrate_out_is_checked_before_measuring() {
    let b = refused(
        &["calibrate", "--out", "/proc/x/host.json"],
        None,
        "--out: cannot create /proc/x",
    );
    assert!(b.stdout.is_empty(), "measured before checking: {b:?}");
}

/// `calibrate --binary script.sh` finds the file in the current directory,
/// as `bench --binary` does (not on the PATH, which has no such program):
/// the script, which leaves a mark each time it runs, is run by the fork +
/// exec loop. (The calibration may still refuse a loaded host for what it
/// measures later, the wake-up of a parked thread: that is not this test's
/// business, so only a refusal naming the binary fails it.)
#[test]
fn calibrate_binary_resolves_as_bench_does() {
    use std::os::unix::fs::PermissionsExt as _;
    let d = tmpdir("calibrate-binary");
    let script = d.join("script.sh");
    std::fs::write(&script, "#!/bin/sh\n: > ran\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let b = aspace_bounded(
        &[
            "calibrate",
            "--binary",
            "script.sh",
            "--scale",
            "0.01",
            // This checks the path, not whether the host is quiet.
            "--busy-ok",
            "--out",
            "host.json",
        ],
        Some(&d),
    );
    assert!(d.join("ran").is_file(), "script.sh never ran: {b:?}");
    assert!(!b.stderr.contains("panicked"), "{b:?}");
    if b.code == Some(0) {
        assert!(d.join("host.json").is_file(), "{b:?}");
    } else {
        assert!(
            !b.stderr.contains("script.sh") && !b.stderr.contains("--binary"),
            "{b:?}"
        );
    }
    // A name that is nowhere is still an error naming the option.
    refused(
        &["calibrate", "--binary", "no-such.sh", "--out", "h.json"],
        Some(&d),
        "--binary: ",
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_bad_predict_host_fails_the_bench_before_it_runs() {
    let d = tmpdir("predict-host");
    let garbage = d.join("garbage.json");
    std::fs::write(&garbage, "garbage").unwrap();
    let out = d.join("out");
    let b = refused(
        &[
            "bench",
            "--threads",
            "1",
            "--predict-host",
            s(&garbage),
            "--out",
            s(&out),
        ],
        None,
        "--predict-host: ",
    );
    assert!(
        !b.stderr.contains("aspace bench:"),
        "the run started: {b:?}"
    );
    assert!(!out.join("results.json").exists());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn soak_json_is_checked_before_the_run() {
    let b = refused(
        &["soak", "--duration", "2", "--json", "/proc/x/s.json"],
        None,
        "--json: cannot write /proc/x/s.json",
    );
    assert!(
        !b.stderr.contains("aspace soak:"),
        "the soak started: {b:?}"
    );
    refused(
        &["soak", "--duration", "2", "--curve", "/proc/x/c.tsv"],
        None,
        "--curve: cannot write /proc/x/c.tsv",
    );
}

#[test]
fn a_zero_duration_gets_the_range() {
    refused(
        &["bench", "--duration", "0"],
        None,
        "more than 0 s and at most 1 hour",
    );
}

#[test]
fn negative_numbers_get_range_errors() {
    refused(
        &["bench", "--duration", "-1"],
        None,
        "more than 0 s and at most 1 hour",
    );
    refused(
        &["bench", "--walk-rate", "-5"],
        None,
        "not a number from 0 to 1000000",
    );
    refused(&["predict", "--seconds", "-1"], None, "--seconds: -1");
    refused(
        &["predict", "--model-cost", "--model-exec-ns", "-1"],
        None,
        "--model-exec-ns: -1",
    );
    for (v, shown) in [
        ("-1", "-1"),
        ("0", "0"),
        ("NaN", "NaN"),
        ("inf", "inf"),
        ("999", "999"),
        ("2e9", "2000000000"),
    ] {
        refused(
            &["predict", "--exec-ns", v],
            None,
            &format!("--exec-ns: {shown} must be a time per iteration in [1000, 1e9] ns"),
        );
    }
    refused(
        &["predict", "--profiles", "/no/such/folder"],
        None,
        "--profiles: /no/such/folder is not a folder",
    );
    let dir = common::tmpdir("bad-model-share");
    let f = dir.join("share.json");
    std::fs::write(
        &f,
        r#"{"source":"t","lines":[{"what":"l","write_visits":1.0,"read_visits":0.0}],"execs":[[[0.5,3,1]]]}"#,
    )
    .unwrap();
    refused(
        &[
            "predict",
            "--model-cost",
            "--model-share",
            s(&f),
            "--cpus",
            "1",
        ],
        None,
        "a touch at 0.5 of line 3",
    );
    refused(
        &["predict", "--model-cost", "--exec-ns", "400000"],
        None,
        "--exec-ns: the real kernel's cost of an iteration is not used with --model-cost",
    );
    refused(
        &["bench", "--repeat", "-2"],
        None,
        "not a whole number from 1 to 100",
    );
    refused(
        &["bench", "--resident", "-1"],
        None,
        "not a whole number from 0 to 100000",
    );
    refused(
        &["soak", "--threads", "-3"],
        None,
        "not a whole number from 1 to 4096",
    );
    refused(&["calibrate", "--scale", "-1"], None, "--scale: -1");
    for args in [
        &["bench", "--threads", "-1"][..],
        &["soak", "--duration", "-5"],
        &["replay", "x", "--repeat", "-1"],
    ] {
        refused(args, None, "error");
    }
}

#[test]
fn overlap_from_a_calibration_without_the_item_is_refused() {
    // The device's survey calibration predates the overlap measurement.
    let old = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/results/device-16-survey/calib.json"
    );
    refused(
        &[
            "predict",
            "--machine",
            "device-16",
            "--overlap",
            "--overlap-from",
            old,
        ],
        None,
        "has no line_overlap or rmw_overlap",
    );
    refused(
        &["predict", "--serial", "--overlap-from", old],
        None,
        "cannot be used with",
    );
}

#[test]
fn replay_refuses_zero_repeats_and_an_empty_maps_file() {
    refused(
        &["replay", s(&trace()), "--repeat", "0"],
        None,
        "not a whole number from 1 to 1000",
    );
    let d = tmpdir("empty-maps");
    let empty = d.join("empty.maps");
    std::fs::write(&empty, "").unwrap();
    refused(
        &["replay", s(&trace()), "--maps", s(&empty)],
        None,
        "holds no mapping",
    );
    // The same through a directory holding PID.maps.
    let pid = std::fs::read_to_string(trace())
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    std::fs::write(d.join(format!("{pid}.maps")), "").unwrap();
    refused(
        &["replay", s(&trace()), "--maps", s(&d)],
        None,
        "holds no mapping",
    );
    let _ = std::fs::remove_dir_all(&d);
}
