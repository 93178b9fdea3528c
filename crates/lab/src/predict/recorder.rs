//! Records profiles from the real code: an instrumented single-threaded run
//! of the model's exec (or fork + exec + exit) loop, every reverse-map lock
//! hold recorded by `rmap::trace`.
//!
//! The only place that knows the recorder's interface is [`record`] and the
//! [`Event`] mirror of its event type: switching recorders is this file.

use mm::{CallPattern, Files, Mm, Program};
use predict::{CpuProfile, Hold, LockDesc, Machine, Profile, Site, Step};
use rmap::{Design, Topology};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// One lock hold (mirrors `rmap::trace::LockEvent`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Event {
    /// Map id.
    pub map: u32,
    /// Shard (`u32::MAX`: an outer lock).
    pub shard: u32,
    /// Exclusive.
    pub write: bool,
    /// Call site.
    pub site: Site,
    /// Hold time, ns.
    pub hold_ns: u64,
    /// Distinct shared lines written (lock word included).
    pub lines_written: u32,
    /// Distinct shared lines only read.
    pub lines_read: u32,
}

fn site_of(s: rmap::stats::CallSite) -> Site {
    use rmap::stats::CallSite as C;
    match s {
        C::MmapLink => Site::MmapLink,
        C::ReplaceUnlink => Site::ReplaceUnlink,
        C::Split => Site::Split,
        C::ExitUnlink => Site::ExitUnlink,
        C::ForkInsertAfter => Site::ForkInsertAfter,
        C::Walk => Site::Walk,
        C::Other => Site::Other,
    }
}

/// Runs `work` on this thread with its lock holds recorded (`rmap::trace`).
pub fn record(work: impl FnOnce()) -> Vec<Event> {
    rmap::trace::record(work)
        .into_iter()
        .map(|e| Event {
            map: e.map,
            shard: e.shard,
            write: e.write,
            site: site_of(e.site),
            hold_ns: e.hold_ns,
            lines_written: e.lines_written,
            lines_read: e.lines_read,
        })
        .collect()
}

/// What to record.
#[derive(Clone, Debug)]
pub struct RecordConfig {
    /// The design.
    pub design: Design,
    /// The call pattern.
    pub pattern: CallPattern,
    /// `execl` (exec replaces the image) or `shell` (fork, exec, exit).
    pub shell: bool,
    /// The binary.
    pub binary: std::path::PathBuf,
    /// Resident processes keeping the maps populated.
    pub resident: usize,
    /// Iterations recorded per slot (the median one is kept).
    pub iterations: usize,
    /// Contended warm-up before recording (threads, time), so that a
    /// design that adapts under contention is recorded adapted.
    pub warmup: (usize, Duration),
}

fn iteration(shell: bool, mm: &Mm, prog: &Program) {
    if shell {
        let child = mm.fork();
        child.exec_program(prog);
        child.exit();
    } else {
        mm.exec_program(prog);
    }
}

/// Builds one slot's steps from an iteration's events and its total time:
/// the work outside the holds is spread evenly over the gaps.
pub fn steps_of(
    events: &[Event],
    total_ns: f64,
    locks: &mut HashMap<(u32, u32), u32>,
    names: &mut Vec<LockDesc>,
) -> Vec<Step> {
    let hold: f64 = events.iter().map(|e| e.hold_ns as f64).sum();
    let gap = (total_ns - hold).max(0.0) / (events.len() + 1) as f64;
    let mut steps = Vec::with_capacity(2 * events.len() + 1);
    for e in events {
        steps.push(Step::Work(gap));
        let n = locks.len() as u32;
        let lock = *locks.entry((e.map, e.shard)).or_insert_with(|| {
            names.push(LockDesc {
                name: if e.shard == u32::MAX {
                    format!("map{}#outer", e.map)
                } else {
                    format!("map{}#{}", e.map, e.shard)
                },
                shares_line_with_data: false,
            });
            n
        });
        steps.push(Step::Hold(Hold {
            lock,
            data: lock,
            write: e.write,
            site: e.site,
            hold_ns: e.hold_ns as f64,
            // The lock word is the simulator's own line.
            lines_written: e.lines_written.saturating_sub(1),
            lines_read: e.lines_read,
        }));
    }
    steps.push(Step::Work(gap));
    steps
}

/// Records a profile with one slot per CPU of `m` (the maps built for `m`'s
/// emulated topology, so that each slot's holds go to the shards its CPU
/// would use). Times are this host's; the caller sets `recorded_ghz`.
pub fn record_profile(m: &Machine, cfg: &RecordConfig) -> Result<Profile, String> {
    let topo = Topology::Emulated {
        nodes: m.nodes,
        cpus_per_node: m.cpus_per_node(),
    };
    let files = Files::new(cfg.design, topo.clone(), cfg.pattern);
    let prog = files
        .program(&cfg.binary)
        .map_err(|e| format!("cannot exec {}: {e}", cfg.binary.display()))?;
    let residents: Vec<Mm> = (0..cfg.resident)
        .map(|_| {
            let r = Mm::new(files.clone());
            r.exec_program(&prog);
            r
        })
        .collect();
    let (wt, wd) = cfg.warmup;
    if wt > 0 && !wd.is_zero() {
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            for _ in 0..wt {
                let (files, prog, stop) = (&files, &prog, &stop);
                s.spawn(move || {
                    let mm = Mm::new(files.clone());
                    // Relaxed: a stop flag; nothing is published through it.
                    while !stop.load(Ordering::Relaxed) {
                        iteration(cfg.shell, &mm, prog);
                    }
                });
            }
            // A reclaim-style walker on every file the program maps: its
            // stable walks hold each map's lock(s) for a long time, so the
            // modifiers above meet a held lock even on a small, loaded host.
            for f in prog.files() {
                let stop = &stop;
                s.spawn(move || {
                    let mut n = 0usize;
                    // Relaxed: a stop flag.
                    while !stop.load(Ordering::Relaxed) {
                        f.rmap().walk(rmap::Interval::FULL, &mut |_, _| n += 1);
                    }
                    n
                });
            }
            std::thread::sleep(wd);
            stop.store(true, Ordering::Relaxed);
        });
        if std::env::var_os("ASPACE_PREDICT_DEBUG").is_some() {
            eprintln!("{}: after warm-up {:?}", cfg.design, files.lock_stats());
        }
    }
    let mut locks: HashMap<(u32, u32), u32> = HashMap::new();
    let mut names: Vec<LockDesc> = Vec::new();
    let mut slots: Vec<CpuProfile> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    // One thread per CPU of the machine, one after the other: each gets the
    // next emulated CPU, so `m.cpus()` threads cover every CPU once.
    for _ in 0..m.cpus() {
        let (cpu, runs) = std::thread::scope(|s| {
            s.spawn(|| {
                let cpu = topo.current_cpu();
                let mm = Mm::new(files.clone());
                for _ in 0..2 {
                    iteration(cfg.shell, &mm, &prog);
                }
                let runs: Vec<(f64, Vec<Event>)> = (0..cfg.iterations.max(1))
                    .map(|_| {
                        let t = Instant::now();
                        let ev = record(|| iteration(cfg.shell, &mm, &prog));
                        (t.elapsed().as_nanos() as f64, ev)
                    })
                    .collect();
                mm.exit();
                (cpu, runs)
            })
            .join()
            .map_err(|_| "a recording thread panicked".to_string())
        })?;
        if !seen.insert(cpu) {
            continue;
        }
        let mut runs = runs;
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (total, events) = &runs[runs.len() / 2];
        if events.is_empty() {
            return Err(format!(
                "design {}: an iteration recorded no lock hold (is rmap's recorder compiled in?)",
                cfg.design
            ));
        }
        slots.push(CpuProfile {
            cpu,
            steps: steps_of(events, *total, &mut locks, &mut names),
        });
    }
    drop(residents);
    slots.sort_by_key(|s| s.cpu);
    let p = Profile {
        label: cfg.design.name().to_owned(),
        workload: if cfg.shell { "shell" } else { "execl" }.into(),
        call_pattern: cfg.pattern.name().to_owned(),
        locks: names,
        slots,
        recorded_ghz: 1.0,
    };
    p.validate().map_err(|e| e.to_string())?;
    Ok(p)
}

/// The profile with every exit-unlink hold on a map split into one hold
/// per VMA it unlinks (the exit path before 2024's batching): `k` = links on
/// that map in the iteration / exit holds on it; each piece holds `1/k` of
/// the time and writes the same lines. Design-agnostic.
pub fn unbatch_exit(p: &Profile) -> Profile {
    let mut out = p.clone();
    for s in &mut out.slots {
        let mut links: HashMap<u32, usize> = HashMap::new();
        let mut exits: HashMap<u32, usize> = HashMap::new();
        for st in &s.steps {
            if let Step::Hold(h) = st {
                match h.site {
                    Site::MmapLink => *links.entry(h.lock).or_insert(0) += 1,
                    Site::ExitUnlink => *exits.entry(h.lock).or_insert(0) += 1,
                    _ => {}
                }
            }
        }
        let mut steps = Vec::with_capacity(s.steps.len() * 2);
        for st in s.steps.drain(..) {
            match st {
                Step::Hold(h) if h.site == Site::ExitUnlink => {
                    let k = (links.get(&h.lock).copied().unwrap_or(1)
                        / exits.get(&h.lock).copied().unwrap_or(1).max(1))
                    .max(1);
                    for i in 0..k {
                        if i > 0 {
                            steps.push(Step::Work(0.0));
                        }
                        let mut piece = h.clone();
                        piece.hold_ns = h.hold_ns / k as f64;
                        steps.push(Step::Hold(piece));
                    }
                }
                other => steps.push(other),
            }
        }
        s.steps = steps;
    }
    out.call_pattern = format!("{} (exit unbatched)", p.call_pattern);
    out
}

/// True when `path` can be exec'd by the model.
pub fn check(binary: &Path) -> Result<(), String> {
    Files::new(Design::Linux, Topology::Os, CallPattern::PerVma)
        .program(binary)
        .map(drop)
        .map_err(|e| format!("cannot exec {}: {e}", binary.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(map: u32, shard: u32, site: Site, hold: u64) -> Event {
        Event {
            map,
            shard,
            write: true,
            site,
            hold_ns: hold,
            lines_written: 3,
            lines_read: 2,
        }
    }

    #[test]
    fn steps_interleave_work_and_holds() {
        let mut locks = HashMap::new();
        let mut names = Vec::new();
        let evs = [
            ev(1, 0, Site::MmapLink, 100),
            ev(2, 0, Site::MmapLink, 50),
            ev(1, 0, Site::ExitUnlink, 50),
        ];
        let st = steps_of(&evs, 1000.0, &mut locks, &mut names);
        assert_eq!(st.len(), 7);
        assert_eq!(names.len(), 2);
        let work: f64 = st
            .iter()
            .map(|s| if let Step::Work(t) = s { *t } else { 0.0 })
            .sum();
        assert!((work - 800.0).abs() < 1e-9);
        match &st[1] {
            Step::Hold(h) => {
                assert_eq!(h.lines_written, 2);
                assert_eq!(h.lines_read, 2);
            }
            _ => panic!("expected a hold"),
        }
    }

    #[test]
    fn unbatching_exit_splits_by_links() {
        let mut locks = HashMap::new();
        let mut names = Vec::new();
        let mut evs = vec![ev(1, 0, Site::ExitUnlink, 500)];
        evs.extend((0..5).map(|_| ev(1, 0, Site::MmapLink, 100)));
        let p = Profile {
            label: "x".into(),
            workload: "execl".into(),
            call_pattern: "per-vma".into(),
            slots: vec![CpuProfile {
                cpu: 0,
                steps: steps_of(&evs, 5000.0, &mut locks, &mut names),
            }],
            locks: names,
            recorded_ghz: 1.0,
        };
        let q = unbatch_exit(&p);
        let exits: Vec<f64> = q.slots[0]
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Hold(h) if h.site == Site::ExitUnlink => Some(h.hold_ns),
                _ => None,
            })
            .collect();
        assert_eq!(exits, vec![100.0; 5]);
        assert_eq!(p.times().0, q.times().0);
    }
}
