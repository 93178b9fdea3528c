//! `scripts/record.sh` against a process that a thread other than its leader ends,
//! and against a daemon (a process whose parent exits, reparented away from the
//! tracer, as pg_ctl's postmaster is):
//! Go's runtime calls `exit_group` from whichever thread runs `main`'s goroutine, so
//! a script that looked only at each process's leader for the stop at `exit_group`
//! took no maps of a Go program and failed the recording ("no maps of the first
//! process").
//!
//! The traced program is this test binary itself, run again with
//! [`CHILD_ENV`] set: [`child_exits_from_a_thread`] then ends the process from a
//! thread it spawned, while the leader waits in `join`; with over 4 KiB of
//! environment, so that its `[stack]` is a page larger than usual. The recording
//! then replays to the kernel's layout, line for line. Needs strace and setarch
//! (the script's own needs); without strace the test says so and checks nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Set in the re-run test binary: [`child_exits_from_a_thread`] exits from a thread.
const CHILD_ENV: &str = "ASPACE_RECORD_SCRIPT_CHILD";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A fresh directory for test `name`'s recording, or `None` (said) without strace.
fn scratch(name: &str) -> Option<PathBuf> {
    if !have("strace") {
        eprintln!("strace is not installed: scripts/record.sh cannot run here");
        return None;
    }
    let dir = std::env::temp_dir().join(format!("aspace-record-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    Some(dir)
}

/// The recording `out` (`out.strace`, `out.maps/`) replayed and checked.
fn check_recording(out: &Path) -> mm::recording::Check {
    let maps_dir = PathBuf::from(format!("{}.maps", out.display()));
    let rec =
        mm::recording::Recording::load(&out.with_extension("strace"), Some(&maps_dir)).unwrap();
    let files = mm::Files::new(
        rmap::Design::Linux,
        rmap::Topology::detect(),
        mm::CallPattern::PerVma,
    );
    rec.check(files, mm::placement::Placement::LINUX_THP)
}

/// In the re-run binary: a spawned thread ends the whole process with status 0
/// (`exit` ends in `exit_group`) while the leader blocks on the join, never
/// returning. In a normal test run: nothing.
#[test]
fn child_exits_from_a_thread() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let t = std::thread::spawn(|| std::process::exit(0));
    let _ = t.join();
    unreachable!("the thread's exit ends the process");
}

#[test]
fn record_takes_the_maps_of_a_process_that_a_thread_ends() {
    let Some(dir) = scratch("thread-exit") else {
        return;
    };
    let out = dir.join("thread-exit");
    let exe = std::env::current_exe().unwrap();
    let run = Command::new(repo_root().join("scripts/record.sh"))
        .arg(&out)
        .arg(&exe)
        .args(["--exact", "child_exits_from_a_thread", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        // Two seconds at exit_group (the default is 300 ms): time enough for the
        // script's polling to see the stop on a busy machine.
        .env("RECORD_EXIT_HOLD_US", "2000000")
        // Over 4 KiB of environment: the kernel's [stack] is then a page larger
        // than with a small one, which the replay must get from the trace.
        .env("ASPACE_RECORD_SCRIPT_PAD", "x".repeat(5000))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "record.sh failed:\n{stderr}");

    let strace = std::fs::read_to_string(out.with_extension("strace")).unwrap();
    let leader = strace
        .lines()
        .find(|l| !l.starts_with('#'))
        .and_then(|l| l.split_whitespace().next())
        .expect("the trace names its first process")
        .to_owned();
    // The thread that called exit_group is not the leader: the case the script
    // must handle (otherwise this test would not test it).
    let caller = strace
        .lines()
        .find(|l| l.contains("exit_group("))
        .and_then(|l| l.split_whitespace().next())
        .expect("the trace has the exit_group");
    assert_ne!(caller, leader, "exit_group came from the leader:\n{strace}");

    let maps_dir = PathBuf::from(format!("{}.maps", out.display()));
    let maps = std::fs::read_to_string(maps_dir.join(format!("{leader}.maps")))
        .unwrap_or_else(|e| panic!("no maps of process {leader}: {e}\n{stderr}"));
    let layout = mm::maps::parse_maps(&maps).expect("the saved maps parse");
    let exe_name = std::fs::canonicalize(&exe).unwrap();
    assert!(
        maps.contains(&*exe_name.to_string_lossy()),
        "the saved maps are not the traced program's:\n{maps}"
    );
    assert!(!layout.is_empty());

    // And the recording replays to that layout, line for line (the exiting
    // thread's process, its `[stack]` sized from the strings `-v` printed).
    let check = check_recording(&out);
    assert!(
        check.layouts_identical(),
        "{:#?}\n{:#?}",
        check.processes,
        check.report.not_expressed
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A process left running when its parent exits (reparented away from strace, still
/// traced) leaves its maps too: every process of the trace that called
/// `exit_group` has a maps file. (Walking the tracer's descendants missed it.)
#[test]
fn record_takes_the_maps_of_a_process_reparented_away() {
    let Some(dir) = scratch("daemon") else {
        return;
    };
    let out = dir.join("daemon");
    // The subshell outlives the shell that started it, then execs /bin/true.
    let run = Command::new(repo_root().join("scripts/record.sh"))
        .arg(&out)
        .args(["/bin/sh", "-c", "(sleep 0.5; exec /bin/true) & exit 0"])
        .env("RECORD_EXIT_HOLD_US", "2000000")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "record.sh failed:\n{stderr}");
    let strace = std::fs::read_to_string(out.with_extension("strace")).unwrap();
    let exiting: Vec<&str> = strace
        .lines()
        .filter(|l| l.contains(" exit_group("))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    // The shell, the subshell (then /bin/true) and sleep.
    assert!(exiting.len() >= 3, "{strace}");
    let maps_dir = PathBuf::from(format!("{}.maps", out.display()));
    for pid in &exiting {
        assert!(
            maps_dir.join(format!("{pid}.maps")).exists(),
            "no maps of process {pid}, which called exit_group:\n{stderr}"
        );
    }
    let check = check_recording(&out);
    assert_eq!(check.processes.len(), exiting.len());
    assert!(check.layouts_identical(), "{:#?}", check.processes);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A program that runs `/proc/self/exe` (busybox's applets do): the recording
/// identifies the files the run used, never the `/proc` link (which names the
/// executable of whoever looks at it, the script's `stat` then), and replays to the
/// kernel's layout with no file said to have changed.
#[test]
fn record_of_proc_self_exe_names_no_proc_link() {
    let Some(dir) = scratch("self-exe") else {
        return;
    };
    let out = dir.join("self-exe");
    let run = Command::new(repo_root().join("scripts/record.sh"))
        .arg(&out)
        .args(["/bin/sh", "-c", "/proc/self/exe -c /bin/true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "record.sh failed:\n{stderr}");
    let strace = std::fs::read_to_string(out.with_extension("strace")).unwrap();
    assert!(strace.contains("execve(\"/proc/self/exe\""), "{strace}");
    assert!(
        !strace
            .lines()
            .any(|l| l.starts_with("# aspace-file") && l.contains("path=/proc/")),
        "{strace}"
    );
    let check = check_recording(&out);
    assert!(
        check.report.files_changed.is_empty(),
        "{:?}",
        check.report.files_changed
    );
    assert!(check
        .report
        .not_expressed
        .iter()
        .all(|(_, w)| w.starts_with("exit_group")));
    assert!(check.layouts_identical(), "{:#?}", check.processes);
    let _ = std::fs::remove_dir_all(&dir);
}
