//! Bad input to the `aspace` CLI: every case exits non-zero with a message that
//! starts with "error", and never panics. (Bench cases with valid arguments are in
//! cli.rs.) See docs/bad-input.md.

mod common;
use common::{aspace, tmpdir};

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
    // A soak whose --json cannot be written still reports, then fails.
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
    assert!(err.contains("cannot write"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
