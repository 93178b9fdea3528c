//! `aspace replay`: a recorded run (`strace -f -y -e trace=memory,process`) replayed
//! through the model with each design, with the report of `mm::replay`.

use crate::input;
use mm::maps::{compare_maps, vdso_layout};
use mm::placement::Placement;
use mm::replay::{parse_maps, Replay};
use mm::{strace, CallPattern, Files};
use rmap::{Design, Topology};
use std::path::{Path, PathBuf};

/// What `aspace replay` was asked.
pub struct ReplayConfig {
    pub trace: PathBuf,
    pub designs: Vec<Design>,
    pub patterns: Vec<CallPattern>,
    pub maps: Option<PathBuf>,
    pub json: Option<PathBuf>,
    pub placement: Placement,
    pub repeat: u32,
}

/// Replays the trace and prints the report; `Ok(false)` when the final layout
/// differs from the recorded maps.
pub fn run(cfg: &ReplayConfig) -> Result<bool, String> {
    if cfg.repeat == 0 {
        return Err("--repeat: 0 replays measure nothing; give 1 or more".into());
    }
    if let Some(p) = &cfg.json {
        input::check_output_file(p, "--json", false)?;
    }
    let text = input::read_text(&cfg.trace, "the trace", input::TRACE_CAP)?;
    let events = strace::parse(&text).map_err(|e| format!("{}: {e}", cfg.trace.display()))?;
    let first_pid = strace::first_pid(&events).ok_or("the trace has no calls")?;
    let real = match &cfg.maps {
        Some(p) => Some(maps_for(p, first_pid)?),
        None => None,
    };
    let mut same = true;
    let mut json = Vec::new();
    let runs = cfg
        .designs
        .iter()
        .flat_map(|&d| cfg.patterns.iter().map(move |&p| (d, p)));
    for (design, pattern) in runs {
        let files = Files::new(design, Topology::detect(), pattern);
        // The recording kernel's vDSO layout, where its maps show it.
        if let Some(layout) = real.as_deref().and_then(vdso_layout) {
            files.set_vdso_layout(layout);
        }
        let mut r = Replay::new(files, cfg.placement);
        // A first run resolves the programs and files (reads ELF headers); the timed
        // runs replay into the warm registry.
        r.run(&events);
        let speed = timed_runs(&mut r, &events, cfg.repeat);
        let rep = &r.report;
        println!(
            "{design} ({pattern}): {} memory calls, {} process events; placed {}/{} at the kernel's address; \
             {:.2} rmap lock holds/call; {} not expressed; {} results differ; \
             {:.2} M calls/CPU-s with each run's execs and exits, {:.2} M memory calls/CPU-s without them",
            rep.calls,
            rep.events,
            rep.placed_same,
            rep.placed,
            rep.lock_holds_per_call(),
            rep.not_expressed.len(),
            rep.result_differs.len(),
            speed.all_per_s / 1e6,
            speed.memory_per_s / 1e6,
        );
        for (line, why) in &rep.not_expressed {
            println!("  line {line}: could not express: {why}");
        }
        for (line, what) in &rep.result_differs {
            println!("  line {line}: result differs: {what}");
        }
        for (line, k, m, len) in &rep.misplaced {
            println!("  line {line}: mmap of {len:#x}: kernel {k:#x}, model {m:#x}");
        }
        for (line, what) in &rep.files_changed {
            println!("  line {line}: {what}");
        }
        for (line, what) in &rep.randomized {
            println!("  line {line}: {what}");
        }
        let mut diffs = Vec::new();
        let mut apart = Vec::new();
        if real.is_some() && r.randomized(first_pid) {
            println!(
                "  final layout of pid {first_pid}: laid out at random by the kernel, not compared"
            );
        } else if let Some(real) = &real {
            match r.exited.get(&first_pid) {
                None => diffs.push(format!("pid {first_pid} did not exit in the trace")),
                Some(v) => (diffs, apart) = compare_maps(&v.maps(), real),
            }
            for d in &apart {
                println!("  not a difference: {d}");
            }
            if diffs.is_empty() {
                let but = if apart.is_empty() {
                    ""
                } else {
                    " (but for what the trace cannot show, above)"
                };
                println!("  final layout of pid {first_pid}: identical to the recorded maps{but}");
            } else {
                same = false;
                for d in &diffs {
                    println!("  {d}");
                }
            }
        }
        json.push(serde_json::json!({
            "design": design.to_string(),
            "call_pattern": pattern.name(),
            "call_pattern_detail": pattern.describe(),
            "calls": rep.calls,
            "events": rep.events,
            "placed": rep.placed,
            "placed_same": rep.placed_same,
            "lock_holds": rep.rmap.lock_holds(),
            "lock_holds_per_call": rep.lock_holds_per_call(),
            "not_expressed": rep.not_expressed,
            "result_differs": rep.result_differs,
            "misplaced": rep.misplaced,
            "files_changed": rep.files_changed,
            "randomized": rep.randomized,
            "layout_differences": diffs,
            "kept_apart": apart,
            "calls_per_s": speed.all_per_s,
            "memory_calls_per_s": speed.memory_per_s,
            "repeat": cfg.repeat,
        }));
    }
    if let Some(p) = &cfg.json {
        let text = serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?;
        std::fs::write(p, text + "\n").map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    Ok(same)
}

/// Replay speed over the timed runs, per second of the replaying thread's CPU time
/// (`CLOCK_THREAD_CPUTIME_ID`: on a loaded host the time other processes take the
/// CPU away does not count; one core).
struct Speed {
    /// Memory calls and process events per second of the whole replay: each run's
    /// execve (the kernel's part of the image), forks, exits and the teardown of its
    /// address spaces included.
    all_per_s: f64,
    /// Memory calls per second of the time spent in them alone: what a long trace
    /// (many calls per exec) approaches.
    memory_per_s: f64,
}

/// CPU time of the calling thread, ns.
fn thread_cpu_ns() -> u64 {
    // SAFETY: timespec is plain data; clock_gettime writes one through the valid
    // pointer.
    let ts = unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
        ts
    };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Replays `events` `repeat` times into `r` (each run after a reset, which tears
/// down the previous run's address spaces: their exit), timing the process events
/// and the resets apart from the memory calls. Leaves the last run's report in `r`.
fn timed_runs(r: &mut Replay, events: &[mm::strace::Event], repeat: u32) -> Speed {
    let mut process = 0;
    let start = thread_cpu_ns();
    for _ in 0..repeat {
        let t = thread_cpu_ns();
        timed_reset(r);
        process += thread_cpu_ns() - t;
        for e in events {
            if e.call.is_memory() {
                timed_memory_call(r, e);
            } else {
                let t = thread_cpu_ns();
                timed_process_event(r, e);
                process += thread_cpu_ns() - t;
            }
        }
    }
    let total = thread_cpu_ns() - start;
    r.finish();
    let runs = f64::from(repeat);
    let rep = &r.report;
    let secs = |ns: u64| ns.max(1) as f64 / 1e9;
    Speed {
        all_per_s: (rep.calls + rep.events) as f64 * runs / secs(total),
        memory_per_s: rep.calls as f64 * runs / secs(total.saturating_sub(process)),
    }
}

// The timed loop's three kinds of work, each its own function so that callgrind
// counts them apart (`valgrind --tool=callgrind --toggle-collect='*timed_memory_call*'`;
// the README's replay section shows the commands).

/// One memory call of a timed run.
#[inline(never)]
fn timed_memory_call(r: &mut Replay, e: &mm::strace::Event) {
    r.step(e);
}

/// One process event (clone, execve, exit) of a timed run.
#[inline(never)]
fn timed_process_event(r: &mut Replay, e: &mm::strace::Event) {
    // black_box: different code from timed_memory_call, so the linker does not fold
    // the two into one symbol.
    r.step(std::hint::black_box(e));
}

/// The teardown of the previous run's address spaces.
#[inline(never)]
fn timed_reset(r: &mut Replay) {
    r.reset();
}

/// The recorded maps: `path` itself, or `path/PID.maps` for a directory; an
/// empty file is refused (comparing with it would report every mapping as the
/// model's alone).
fn maps_for(path: &Path, pid: u32) -> Result<Vec<mm::replay::MapsLine>, String> {
    let file = if path.is_dir() {
        path.join(format!("{pid}.maps"))
    } else {
        path.to_path_buf()
    };
    let text = input::read_text(&file, "--maps", input::MAPS_CAP)?;
    let lines = parse_maps(&text)
        .ok_or_else(|| format!("--maps: {} is not a /proc/PID/maps file", file.display()))?;
    if lines.is_empty() {
        return Err(format!(
            "--maps: {} holds no mapping (a process's maps at exit list at least its executable)",
            file.display()
        ));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../mm/tests/data")
            .join(name)
    }

    #[test]
    fn shipped_trace_replays_to_the_recorded_layout_and_bad_input_is_an_error() {
        let json = std::env::temp_dir().join(format!("aspace-replay-{}.json", std::process::id()));
        let mut cfg = ReplayConfig {
            trace: data("git-version.strace"),
            designs: vec![Design::Linux, Design::Aspace],
            patterns: CallPattern::ALL.to_vec(),
            maps: Some(data("git-version.maps")),
            json: Some(json.clone()),
            placement: Placement::LINUX_THP,
            repeat: 2,
        };
        assert_eq!(run(&cfg), Ok(true));
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v[0]["placed"], v[0]["placed_same"]);
        // Both speeds reported: with each run's execs and exits, and without.
        let all = v[0]["calls_per_s"].as_f64().unwrap();
        let memory = v[0]["memory_calls_per_s"].as_f64().unwrap();
        assert!(all > 0.0 && memory > 0.0, "{all} {memory}");
        // Every design ran with every pattern, and each run says which.
        let runs = v.as_array().unwrap();
        assert_eq!(runs.len(), 4);
        assert_eq!(runs[0]["call_pattern"], "per-vma");
        assert_eq!(runs[1]["call_pattern"], "batched");
        std::fs::remove_file(&json).unwrap();
        // The python maps are not git's layout: a difference, exit status 1.
        cfg.json = None;
        cfg.maps = Some(data("python3-import-json.maps"));
        assert_eq!(run(&cfg), Ok(false));
        cfg.trace = data("git-version.maps");
        assert!(run(&cfg).unwrap_err().contains("line 1"));
    }

    /// A `scripts/record.sh` recording opens with the recorder's note of the stack
    /// limit (an event of pid 0): `--maps DIR` still compares the first process.
    #[test]
    fn a_recording_that_opens_with_the_stack_limit_compares_its_first_process() {
        let cfg = ReplayConfig {
            trace: data("bash-stack-unlimited.strace"),
            designs: vec![Design::Linux],
            patterns: vec![CallPattern::PerVma],
            maps: Some(data("bash-stack-unlimited.maps")),
            json: None,
            placement: Placement::LINUX_THP,
            repeat: 1,
        };
        assert_eq!(run(&cfg), Ok(true));
    }
}
