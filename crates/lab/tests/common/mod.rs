//! Helpers shared by the CLI test files.

#![allow(dead_code)] // Each test file uses its own part of this module.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs the built `aspace` binary with `args`, in a directory of this test
/// process's own (never the source tree, whose changes would make cargo
/// rebuild the lab: its build script watches the tree to tell a dirty build).
pub fn aspace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_aspace"))
        .args(args)
        .current_dir(work_dir())
        .output()
        .expect("run aspace")
}

/// The working directory of the commands the tests run (created once).
pub fn work_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("aspace-test-{}-cwd", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A fresh, empty temporary directory named after this process and `name`.
pub fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("aspace-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// What a bounded run of `aspace` did.
#[derive(Debug)]
pub struct Bounded {
    /// The exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Standard output, lossily decoded.
    pub stdout: String,
    /// Standard error, lossily decoded.
    pub stderr: String,
    /// The child's peak resident memory (`ru_maxrss`), KiB.
    pub max_rss_kib: u64,
}

/// How long a bounded run may take before it counts as hung and is killed:
/// far above what a refusal takes on any machine (milliseconds), so it is a
/// hang detector, not a timing assertion.
pub const HANG: Duration = Duration::from_secs(60);

/// Runs `aspace args` in `cwd` ([`work_dir`] when `None`), with no input,
/// kills it if it is still running after [`HANG`] and fails the test, and
/// returns its outputs and peak memory (from `wait4`).
// The child is reaped by `wait4` (which std's `wait` cannot be: it returns no
// resource usage), never by `Child::wait`.
#[allow(clippy::zombie_processes)]
pub fn aspace_bounded(args: &[&str], cwd: Option<&Path>) -> Bounded {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_aspace"));
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.current_dir(cwd.map_or_else(work_dir, Path::to_path_buf));
    let mut child = cmd.spawn().expect("spawn aspace");
    let pid = child.id() as libc::pid_t;
    let drain = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            String::from_utf8_lossy(&v).into_owned()
        })
    };
    let out = drain(child.stdout.take().map(|x| Box::new(x) as _));
    let err = drain(child.stderr.take().map(|x| Box::new(x) as _));
    let start = Instant::now();
    let (status, usage) = loop {
        let mut status = 0;
        // SAFETY: rusage is plain data that wait4 fills in.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `pid` is our own child, not yet reaped; both pointers are
        // valid for the call.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break (status, usage);
        }
        assert_eq!(r, 0, "wait4 failed: {}", std::io::Error::last_os_error());
        if start.elapsed() > HANG {
            // SAFETY: signalling our own unreaped child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("aspace {args:?} still running after {HANG:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Bounded {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        max_rss_kib: usage.ru_maxrss as u64,
    }
}
