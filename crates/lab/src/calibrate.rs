//! `aspace calibrate`: measures the host and writes a machine description
//! (`predict::Machine`) for `aspace predict --machine FILE`.
//!
//! * The real kernel's exec cost: a single copy of UnixBench `execl` (one
//!   process re-execs itself with a counter, no fork; here the lab binary's
//!   hidden `__execl N` subcommand), and a fork + exec + wait loop of the
//!   chosen binary.
//! * A cache line's transfer latency between two CPUs (ping-pong on one
//!   atomic, half the round trip), and an uncontended atomic RMW.
//! * A sleeping waiter's wake-up (mutex + condvar ping-pong, half the round
//!   trip).
//! * CPUs and nodes from the OS; the clock from `/proc/cpuinfo`.
//!
//! Exec costs are CPU time (getrusage), the median of 5 batches; the
//! latency microbenchmarks are wall time, the fastest of many short batches. On a
//! loaded host (or a VM whose vCPUs are descheduled) they are still noisy;
//! the file says how each figure was taken.

use predict::{Latency, Machine};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// The hidden subcommand's name: `aspace __execl N` re-execs itself N times.
pub const EXECL_ARG: &str = "__execl";

/// If this process was started as `aspace __execl N`, re-exec with `N - 1`
/// (exit at 0) and never return; otherwise return. Called first thing in
/// `main`, before any argument parsing, so that one iteration costs what a
/// small program's exec costs.
pub fn execl_hook() {
    let mut args = std::env::args_os();
    let _ = args.next();
    if args.next().as_deref() != Some(std::ffi::OsStr::new(EXECL_ARG)) {
        return;
    }
    let n: u64 = args
        .next()
        .and_then(|s| s.to_str().and_then(|s| s.parse().ok()))
        .unwrap_or(0);
    if n == 0 {
        std::process::exit(0);
    }
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(_) => std::process::exit(3),
    };
    let (Ok(path), Ok(a1), Ok(a2)) = (
        CString::new(exe.as_os_str().as_encoded_bytes()),
        CString::new(EXECL_ARG),
        CString::new((n - 1).to_string()),
    ) else {
        std::process::exit(3);
    };
    let argv = [path.as_ptr(), a1.as_ptr(), a2.as_ptr(), std::ptr::null()];
    // SAFETY: every pointer in argv is a NUL-terminated string that lives
    // until execv returns (it only returns on failure), and argv ends with
    // a null pointer, as execv(3) requires.
    unsafe {
        libc::execv(path.as_ptr(), argv.as_ptr());
    }
    std::process::exit(3);
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn minimum(v: Vec<f64>) -> f64 {
    v.into_iter().fold(f64::INFINITY, f64::min)
}

/// CPU time (user + system) used so far by this process (`RUSAGE_SELF`) or
/// by its waited-for children (`RUSAGE_CHILDREN`), ns. CPU time rather than
/// wall time, so that other load on the host inflates it less.
fn cpu_ns(who: libc::c_int) -> f64 {
    // SAFETY: rusage is plain data; getrusage writes one through the valid
    // pointer and has no other preconditions.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 * 1e9 + t.tv_usec as f64 * 1e3;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// CPU ns per exec of the lab binary re-execing itself (UnixBench execl,
/// one copy): the children's CPU time over the loop.
fn execl_ns(exe: &Path, iterations: u64, batches: usize) -> Result<f64, String> {
    let mut v = Vec::new();
    for _ in 0..batches {
        let t = cpu_ns(libc::RUSAGE_CHILDREN);
        let st = Command::new(exe)
            .args([EXECL_ARG, &iterations.to_string()])
            .status()
            .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
        if !st.success() {
            return Err(format!("the execl loop failed: {st}"));
        }
        v.push((cpu_ns(libc::RUSAGE_CHILDREN) - t) / (iterations + 1) as f64);
    }
    Ok(median(v))
}

/// CPU ns per fork + exec + wait of `binary` (no arguments): the parent's
/// and the children's CPU time over the loop.
fn fork_exec_ns(binary: &Path, iterations: u64, batches: usize) -> Result<f64, String> {
    let mut v = Vec::new();
    for _ in 0..batches {
        let t = cpu_ns(libc::RUSAGE_CHILDREN) + cpu_ns(libc::RUSAGE_SELF);
        for _ in 0..iterations {
            Command::new(binary)
                .status()
                .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
        }
        let now = cpu_ns(libc::RUSAGE_CHILDREN) + cpu_ns(libc::RUSAGE_SELF);
        v.push((now - t) / iterations as f64);
    }
    Ok(median(v))
}

/// CPU ns per fork + `_exit` + wait (no exec): subtracted from the fork +
/// exec + wait loop, it leaves the cost of exec'ing the binary and tearing
/// the old image down, which is one `execl` iteration of that binary.
fn fork_only_ns(iterations: u64, batches: usize) -> Result<f64, String> {
    let mut v = Vec::new();
    for _ in 0..batches {
        let t = cpu_ns(libc::RUSAGE_CHILDREN) + cpu_ns(libc::RUSAGE_SELF);
        for _ in 0..iterations {
            // SAFETY: the child calls only the async-signal-safe _exit; the
            // parent waits for that child's pid with a valid status pointer.
            let ok = unsafe {
                let pid = libc::fork();
                if pid == 0 {
                    libc::_exit(0);
                }
                let mut status = 0;
                pid > 0 && libc::waitpid(pid, &mut status, 0) == pid
            };
            if !ok {
                return Err("fork failed".into());
            }
        }
        let now = cpu_ns(libc::RUSAGE_CHILDREN) + cpu_ns(libc::RUSAGE_SELF);
        v.push((now - t) / iterations as f64);
    }
    Ok(median(v))
}

fn pin(cpu: usize) -> bool {
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET write inside it and
    // sched_setaffinity reads sizeof(cpu_set_t) bytes from a valid pointer.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// One-way cache-line transfer latency between CPUs `a` and `b`, ns (half a
/// ping-pong round trip), or None with one CPU.
fn ping_pong_ns(a: usize, b: usize, rounds: u64, batches: usize) -> Option<f64> {
    if a == b {
        return None;
    }
    let mut v = Vec::new();
    for _ in 0..batches {
        let flag = Arc::new(crossbeam_line::Padded::default());
        let f2 = flag.clone();
        // Twice the rounds, timed from the middle: the first half waits for
        // the new thread to start, move to its CPU and reach its loop (tens
        // of microseconds to a millisecond on a VM, which counted against
        // the rounds before: 48-470 ns for the same pair of CPUs).
        let total = 2 * rounds;
        let t = std::thread::spawn(move || {
            pin(b);
            for i in 0..total {
                // Acquire/Release: each side publishes its turn and must see
                // the other's before writing; nothing else is shared.
                while f2.0.load(Ordering::Acquire) != 2 * i + 1 {
                    std::hint::spin_loop();
                }
                f2.0.store(2 * i + 2, Ordering::Release);
            }
        });
        pin(a);
        let mut start = Instant::now();
        for i in 0..total {
            if i == rounds {
                start = Instant::now();
            }
            flag.0.store(2 * i + 1, Ordering::Release);
            while flag.0.load(Ordering::Acquire) != 2 * i + 2 {
                std::hint::spin_loop();
            }
        }
        let el = start.elapsed().as_nanos() as f64;
        t.join().ok()?;
        v.push(el / rounds as f64 / 2.0);
    }
    Some(minimum(v))
}

mod crossbeam_line {
    use std::sync::atomic::AtomicU64;
    /// One atomic on its own 128-byte block (no false sharing with anything).
    #[repr(align(128))]
    #[derive(Default)]
    pub struct Padded(pub AtomicU64);
}

/// ns per uncontended `fetch_add` on a line this CPU owns.
fn atomic_rmw_ns(ops: u64, batches: usize) -> f64 {
    let a = AtomicU64::new(0);
    let mut v = Vec::new();
    for _ in 0..batches {
        let t = Instant::now();
        for _ in 0..ops {
            // SeqCst: the lock fast path is a full-barrier LOCK-prefixed RMW.
            std::hint::black_box(&a).fetch_add(1, Ordering::SeqCst);
        }
        v.push(t.elapsed().as_nanos() as f64 / ops as f64);
    }
    minimum(v)
}

/// A sleeping thread's wake-up: half of a mutex + condvar round trip, ns.
fn wake_ns(rounds: u64, batches: usize) -> f64 {
    let mut v = Vec::new();
    for _ in 0..batches {
        let pair = Arc::new((Mutex::new(0u64), Condvar::new()));
        let p2 = pair.clone();
        let t = std::thread::spawn(move || {
            let (m, c) = &*p2;
            let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
            for i in 0..rounds {
                while *g != 2 * i + 1 {
                    g = c.wait(g).unwrap_or_else(|e| e.into_inner());
                }
                *g += 1;
                c.notify_one();
            }
        });
        let (m, c) = &*pair;
        let start = Instant::now();
        let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
        for i in 0..rounds {
            *g = 2 * i + 1;
            c.notify_one();
            while *g != 2 * i + 2 {
                g = c.wait(g).unwrap_or_else(|e| e.into_inner());
            }
        }
        drop(g);
        let el = start.elapsed().as_nanos() as f64;
        let _ = t.join();
        v.push(el / rounds as f64 / 2.0);
    }
    minimum(v)
}

/// The clock the calling core runs at, GHz, measured: a chain of dependent
/// register adds retires one add per cycle on every x86-64 core, so the
/// chain's length over its time is the clock. The best of 5 runs of about
/// 50 ms (a run that was descheduled or shared its core only reads slower).
/// Under a hypervisor, `/proc/cpuinfo`'s `cpu MHz` is the nominal clock the
/// hypervisor reports (2596 on the development VM, whose cores run at
/// 4.06-4.14 GHz by this measure), and the host's speed is what scales the
/// real exec cost to a target machine's clock.
#[cfg(target_arch = "x86_64")]
fn measured_ghz(scale: f64) -> Option<f64> {
    /// Dependent adds per loop trip (the loop's own counter runs beside).
    const CHAIN: u64 = 16;
    let trips = ((10_000_000.0 * scale) as u64).max(1_000);
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let mut x: u64 = 1;
        let start = Instant::now();
        for _ in 0..trips {
            // SAFETY: register-only arithmetic on `x`: no memory is
            // touched, no flag or register other than `x` is read or kept.
            unsafe {
                std::arch::asm!(
                    "add {x}, {x}", "add {x}, {x}", "add {x}, {x}", "add {x}, {x}",
                    "add {x}, {x}", "add {x}, {x}", "add {x}, {x}", "add {x}, {x}",
                    "add {x}, {x}", "add {x}, {x}", "add {x}, {x}", "add {x}, {x}",
                    "add {x}, {x}", "add {x}, {x}", "add {x}, {x}", "add {x}, {x}",
                    x = inout(reg) x,
                    options(nomem, nostack),
                );
            }
        }
        let ns = start.elapsed().as_nanos() as f64;
        std::hint::black_box(x);
        best = best.min(ns);
    }
    let ghz = (trips * CHAIN) as f64 / best;
    (ghz.is_finite() && ghz > 0.1).then_some(ghz)
}

#[cfg(not(target_arch = "x86_64"))]
fn measured_ghz(_scale: f64) -> Option<f64> {
    None
}

fn cpu_mhz() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let v: Vec<f64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("cpu MHz"))
        .filter_map(|l| l.split_once(':'))
        .filter_map(|(_, v)| v.trim().parse().ok())
        .collect();
    if v.is_empty() {
        None
    } else {
        Some(v.iter().sum::<f64>() / v.len() as f64)
    }
}

/// What `aspace calibrate` measures, how much of it.
pub struct CalibrateConfig {
    /// The binary for the fork + exec + wait loop.
    pub binary: std::path::PathBuf,
    /// Scale of every loop (1 = the default sizes; tests use less).
    pub scale: f64,
    /// The lab binary, which re-execs itself through [`execl_hook`].
    pub self_exe: std::path::PathBuf,
}

/// Measures the host; the description is named `host`.
pub fn calibrate(cfg: &CalibrateConfig) -> Result<Machine, String> {
    let n = |x: f64| ((x * cfg.scale).ceil() as u64).max(2);
    let cpus = crate::machine::nproc() as u32;
    let desc = crate::machine::describe();
    let nodes = (desc.nodes as u32).clamp(1, cpus);
    let self_execl = execl_ns(&cfg.self_exe, n(2000.0), 5)?;
    let fork_exec = fork_exec_ns(&cfg.binary, n(500.0), 5)?;
    let fork_only = fork_only_ns(n(500.0), 5)?;
    let exec = (fork_exec - fork_only).max(fork_exec * 0.5);
    // Many short batches, the fastest kept: on a loaded host (or a VM whose
    // vCPUs are descheduled) only a batch during which both threads ran
    // throughout measures the hardware rather than the scheduler.
    let pp = ping_pong_ns(0, 1.min(cpus as usize - 1), 2_000, n(200.0) as usize);
    let rmw = atomic_rmw_ns(n(5_000_000.0), 5);
    let wake = wake_ns(200, n(100.0) as usize);
    let clock = measured_ghz(cfg.scale);
    let ghz = clock.or_else(|| cpu_mhz().map(|m| m / 1000.0));
    let line = pp.unwrap_or(0.0);
    let mut sources = BTreeMap::new();
    let measured = |s: &str| format!("measured by aspace calibrate on {}: {s}", desc.cpu_model);
    sources.insert(
        "nodes".into(),
        measured("/sys/devices/system/node/node* count"),
    );
    sources.insert("sockets".into(), "taken as 1 (not measured)".into());
    sources.insert(
        "cores_per_node".into(),
        measured("available_parallelism / nodes; each CPU taken as a core"),
    );
    sources.insert(
        "smt".into(),
        "taken as 1: the host's CPUs are taken as cores".into(),
    );
    sources.insert(
        "cores_per_llc".into(),
        "taken as every core of a node".into(),
    );
    sources.insert(
        "core_ghz".into(),
        match (clock, ghz) {
            (Some(_), _) => measured(
                "the running clock of one core: a chain of dependent register adds (one a cycle), best of 5 runs",
            ),
            (None, Some(_)) => measured("mean 'cpu MHz' of /proc/cpuinfo"),
            (None, None) => "no clock measured and no 'cpu MHz' in /proc/cpuinfo: 2.5 assumed".into(),
        },
    );
    sources.insert("smt_yield".into(), "no SMT: 1.0".into());
    sources.insert(
        "latency_ns".into(),
        match pp {
            Some(_) => measured(
                "half the round trip of an atomic ping-pong between CPUs 0 and 1 (fastest of many 2000-round batches), for every distance",
            ),
            None => "one CPU: no transfer measured (0)".into(),
        },
    );
    sources.insert(
        "atomic_rmw_ns".into(),
        measured("uncontended SeqCst fetch_add loop (fastest of 5)"),
    );
    sources.insert(
        "wake_ns".into(),
        measured("half a mutex+condvar round trip between two threads (fastest of many 200-round batches)"),
    );
    sources.insert(
        "reader_spin_ns".into(),
        "Linux rwsem writer spin bound on a reader-owned lock (up to 25 us); 20 us taken".into(),
    );
    sources.insert(
        "exec_ns".into(),
        measured(&format!(
            "one execl iteration of {}: CPU ns of fork+exec+wait minus fork+_exit+wait ({:.0} ns), medians of 5",
            cfg.binary.display(),
            fork_only
        )),
    );
    sources.insert(
        "self_execl_ns".into(),
        measured("the lab binary re-execs itself with a counter (UnixBench execl, one copy), CPU ns (user+sys, getrusage) per exec, median of 5"),
    );
    sources.insert(
        "fork_exec_ns".into(),
        measured(&format!(
            "fork + exec + wait of {}, CPU ns (user+sys of parent and children) per iteration, median of 5",
            cfg.binary.display()
        )),
    );
    let m = Machine {
        name: "host".into(),
        description: format!(
            "this host ({}, {} CPUs, {} node(s), kernel {}), calibrated",
            desc.cpu_model, cpus, nodes, desc.kernel
        ),
        nodes,
        sockets: 1,
        cores_per_node: (cpus / nodes).max(1),
        smt: 1,
        cores_per_llc: (cpus / nodes).max(1),
        core_ghz: ghz.filter(|g| g.is_finite() && *g > 0.1).unwrap_or(2.5),
        smt_yield: 1.0,
        latency_ns: Latency {
            same_core: line,
            same_llc: line,
            same_node: line,
            other_node: line,
            other_socket: line,
        },
        atomic_rmw_ns: rmw,
        wake_ns: wake,
        reader_spin_ns: 20_000.0,
        exec_ns: Some(exec),
        fork_exec_ns: Some(fork_exec),
        self_execl_ns: Some(self_execl),
        pause_ns: None,
        yield_ns: None,
        futex_wake_ns: None,
        speed_by_cpus: Vec::new(),
        sources,
    };
    m.validate().map_err(|e| e.to_string())?;
    Ok(m)
}

/// The calibration as a short text.
pub fn text(m: &Machine) -> String {
    format!(
        "host: {} CPUs, {} node(s), {:.2} GHz\n\
         execl of the lab binary (one copy, re-exec loop): {:.0} us CPU/exec = {:.0} execs/s per core\n\
         execl iteration of the chosen binary (fork+exec+wait - fork): {:.0} us CPU\n\
         fork + exec + wait of the chosen binary: {:.0} us CPU/iteration\n\
         cache-line transfer (ping-pong): {:.0} ns\n\
         uncontended atomic RMW:          {:.1} ns\n\
         wake-up of a sleeping thread:    {:.0} ns\n",
        m.cpus(),
        m.nodes,
        m.core_ghz,
        m.self_execl_ns.unwrap_or(0.0) / 1e3,
        1e9 / m.self_execl_ns.unwrap_or(f64::INFINITY),
        m.exec_ns.unwrap_or(0.0) / 1e3,
        m.fork_exec_ns.unwrap_or(0.0) / 1e3,
        m.latency_ns.same_llc,
        m.atomic_rmw_ns,
        m.wake_ns,
    )
}

/// `aspace calibrate`'s arguments.
#[derive(clap::Args, Debug)]
pub struct CalibrateArgs {
    /// The binary for the fork + exec + wait loop (the one predictions exec).
    #[arg(long, default_value = "/bin/true")]
    pub binary: std::path::PathBuf,
    /// Where to write the machine description.
    #[arg(long, default_value = "aspace-results/host.json")]
    pub out: std::path::PathBuf,
    /// Scale of every measuring loop (1 = default sizes).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
}

/// This binary's path.
pub fn own_exe() -> Result<std::path::PathBuf, String> {
    std::env::current_exe().map_err(|e| format!("cannot find own binary: {e}"))
}

/// Runs `aspace calibrate`.
pub fn run(a: CalibrateArgs) -> Result<(), String> {
    if !(a.scale.is_finite() && a.scale > 0.0 && a.scale <= 100.0) {
        return Err(format!("--scale: {} must be in (0, 100]", a.scale));
    }
    if !a.binary.is_file() {
        return Err(format!("--binary: {} is not a file", a.binary.display()));
    }
    let m = calibrate(&CalibrateConfig {
        binary: a.binary.clone(),
        scale: a.scale,
        self_exe: own_exe()?,
    })?;
    print!("{}", text(&m));
    if let Some(dir) = a.out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let json = serde_json::to_string_pretty(&m).map_err(|e| e.to_string())?;
    std::fs::write(&a.out, json + "\n")
        .map_err(|e| format!("cannot write {}: {e}", a.out.display()))?;
    println!(
        "Wrote {} (use it with aspace predict --host {} or --machine {}).",
        a.out.display(),
        a.out.display(),
        a.out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_calibration_is_a_valid_machine() {
        // The unit-test harness is not the lab binary; cargo builds that
        // next to the deps directory for the integration tests.
        let exe = std::env::current_exe().unwrap();
        let lab = exe
            .parent()
            .and_then(Path::parent)
            .map(|d| d.join("aspace"))
            .filter(|p| p.is_file())
            .expect("cargo test builds target/<profile>/aspace for the integration tests");
        let m = calibrate(&CalibrateConfig {
            binary: "/bin/true".into(),
            scale: 0.01,
            self_exe: lab,
        })
        .unwrap();
        m.validate().unwrap();
        assert_eq!(m.name, "host");
        assert!(m.exec_ns.unwrap() > 1_000.0, "an exec takes more than 1 us");
        assert!(m.fork_exec_ns.unwrap() > m.atomic_rmw_ns);
        assert!(m.atomic_rmw_ns > 0.0 && m.atomic_rmw_ns < 1_000.0);
        let back = Machine::from_json(&serde_json::to_string(&m).unwrap()).unwrap();
        assert_eq!(back, m);
    }

    /// The measured clock is a clock a core can run at (a chain that the
    /// compiler shortened, or a timer in the wrong unit, would read far
    /// outside).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_clock_is_measured() {
        let ghz = measured_ghz(0.1).expect("x86-64 measures its clock");
        assert!((0.3..8.0).contains(&ghz), "{ghz} GHz");
    }
}
