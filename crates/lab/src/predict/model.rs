//! The lines the model's own exec shares outside its reverse maps, for
//! model-cost profiles (what `aspace bench` runs): every exec clones and
//! drops `Arc<File>`s (the reference count sits on one line with the
//! file's other fields, which every reverse-map call reads) and reads the
//! maple tree's global epoch, which any thread advancing it writes.
//!
//! Recorded on this host with valgrind's lackey by
//! `scripts/model-shared-lines.sh`: two threads, each with its own address
//! space, exec `/bin/true` in turns (no reverse map: `exclude`), and every
//! memory access of the measured execs is traced; a line both threads
//! write, each at least a quarter as often as the other, is shared. Its
//! accesses are grouped into visits (accesses fewer than 64 memory
//! accesses apart are one visit: another CPU cannot take the line and give
//! it back faster than that), and a visit with a write is a write. The
//! result, `model_shared.json` beside this file, is built into the binary;
//! re-record it when `mm`, `maple` or `rmap`'s call paths change.
//!
//! [`trace_hook`] is the traced program (`aspace __model-trace`).

use predict::{LineKind, Profile, Step, Touch};
use serde::{Deserialize, Serialize};

/// One shared line of the model's exec.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SharedLine {
    /// What it is (`file /usr/lib/.../libc.so.6`, or `global` and its
    /// address).
    pub what: String,
    /// Visits per exec that write it.
    pub write_visits: f64,
    /// Visits per exec that only read it.
    pub read_visits: f64,
}

/// The recording.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelShare {
    /// How and where it was recorded.
    pub source: String,
    /// The lines.
    pub lines: Vec<SharedLine>,
    /// Every measured exec's touches of the lines, in order: `(place,
    /// line, write)`, the place being the touch's index over the exec's
    /// memory accesses (0..1), the line an index into `lines`, write 1
    /// when the touch stores. Empty in a recording made before they were
    /// kept: the visits are then spread evenly.
    #[serde(default)]
    pub execs: Vec<Vec<(f64, usize, u8)>>,
}

/// The recording built into this binary.
pub fn recorded() -> Result<ModelShare, String> {
    let s: ModelShare = serde_json::from_str(include_str!("model_shared.json"))
        .map_err(|e| format!("model_shared.json: {e}"))?;
    s.check().map_err(|e| format!("model_shared.json: {e}"))?;
    Ok(s)
}

/// A recording in a file (`--model-share`), checked: every touch names one
/// of its lines, at a place in 0..1.
pub fn load(path: &std::path::Path) -> Result<ModelShare, String> {
    let text = crate::input::read_text(path, "--model-share", crate::input::RESULTS_CAP)?;
    let s: ModelShare = serde_json::from_str(&text).map_err(|e| {
        format!(
            "--model-share: {} is not a model_shared.json: {e}",
            path.display()
        )
    })?;
    s.check()
        .map_err(|e| format!("--model-share: {}: {e}", path.display()))?;
    Ok(s)
}

impl ModelShare {
    /// Every count finite and non-negative, every touch on a line of
    /// `lines` at a place in 0..1.
    pub fn check(&self) -> Result<(), String> {
        for l in &self.lines {
            if !(l.write_visits.is_finite()
                && l.read_visits.is_finite()
                && l.write_visits >= 0.0
                && l.read_visits >= 0.0)
            {
                return Err(format!("{}: visit counts must be finite and >= 0", l.what));
            }
        }
        for (i, e) in self.execs.iter().enumerate() {
            for &(at, line, _) in e {
                if !(0.0..=1.0).contains(&at) || line >= self.lines.len() {
                    return Err(format!(
                        "exec {i}: a touch at {at} of line {line} (places are in 0..1, lines 0..{})",
                        self.lines.len()
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Adds the model's other shared lines to a model-cost profile: each
/// visit (rounded per line) is a [`Step::Touch`] of its own, the visits of
/// all lines interleaved and spread evenly over the slot's work (a work
/// step is split where visits fall inside it), the same lines for every
/// slot. A visit is an access another CPU can take the line away between
/// (see the module docs), so two visits are never merged into one touch:
/// a line written thirty times an exec moves up to thirty times an exec.
pub fn add_model_share(p: &Profile, share: &ModelShare) -> Profile {
    let mut out = p.clone();
    let first = out.lines.len() as u32;
    // (place, line, write) per visit, each line's visits spread over the
    // order: the old recordings' way, without the execs' own places.
    let mut even: Vec<(f64, u32, bool)> = Vec::new();
    for l in &share.lines {
        out.lines.push(LineKind::ExecShared);
        let id = (out.lines.len() - 1) as u32;
        for (n, write) in [(l.write_visits, true), (l.read_visits, false)] {
            let n = n.round() as usize;
            for k in 0..n {
                even.push(((k as f64 + 0.5) / n as f64, id, write));
            }
        }
    }
    even.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Each slot runs one measured exec's touches where that exec made
    // them (slot i the exec i modulo their number: the execs differ, an
    // exec that advanced the epoch touches more).
    let recorded: Vec<Vec<(f64, u32, bool)>> = share
        .execs
        .iter()
        .map(|e| {
            e.iter()
                .filter(|&&(_, l, _)| l < share.lines.len())
                .map(|&(at, l, w)| (at.clamp(0.0, 1.0), first + l as u32, w != 0))
                .collect()
        })
        .collect();
    for (i, s) in out.slots.iter_mut().enumerate() {
        let visits = if recorded.is_empty() {
            &even
        } else {
            &recorded[i % recorded.len()]
        };
        let work = s.work_ns();
        let touch = |&(_, l, w): &(f64, u32, bool)| {
            Step::Touch(Touch {
                written: if w { vec![l] } else { vec![] },
                read: if w { vec![] } else { vec![l] },
                stored: vec![],
            })
        };
        if work <= 0.0 {
            s.steps.extend(visits.iter().map(touch));
            continue;
        }
        let mut steps = Vec::with_capacity(s.steps.len() + 2 * visits.len());
        let mut next = visits.iter().peekable();
        let mut done = 0.0;
        for st in s.steps.drain(..) {
            let Step::Work(t) = st else {
                steps.push(st);
                continue;
            };
            // The visits whose place (a share of the work) falls in this
            // step, each after its share of the step.
            let end = done + t;
            let mut at = done;
            while let Some(v) = next.peek() {
                let place = v.0 * work;
                if place > end && end < work {
                    break;
                }
                let place = place.min(end);
                if place > at {
                    steps.push(Step::Work(place - at));
                    at = place;
                }
                steps.push(touch(v));
                next.next();
            }
            if end > at {
                steps.push(Step::Work(end - at));
            }
            done = end;
        }
        steps.extend(next.map(touch));
        s.steps = steps;
    }
    out.notes = format!(
        "{}; the model's other shared lines added ({})",
        out.notes, share.source
    );
    out
}

/// Adds to a model-cost profile the line that `aspace bench`'s hold timing
/// writes inside every hold: the bench times each hold unless run with
/// `--no-hold-timing` (the device's survey and `bench`'s default do), and
/// the timed hold's end (`rmap::stats`'s `end_slow`, before the guard
/// drops) adds the hold's length to its lock's `hold_ns` counters, a line
/// of their own in `LockCounters` (`holds`, `contended` and `hold_ns` are
/// each eight `u64`s, one 64-byte line each, the struct `CachePadded`).
/// Every holder of the lock writes that line, so under contention each
/// hold takes it from the holder before: one transfer inside the hold,
/// which the line recording (made without hold timing: its holds write
/// the `holds` and `len` lines only) leaves out. One new
/// [`LineKind::Counter`] line per lock, written last by each of its
/// holds (after the hold's own stores, as in `end_slow`); a profile that
/// already has it (a recording made with hold timing) is left as it is
/// ([`Profile::hold_timing`]).
pub fn add_hold_timing(p: &Profile) -> Profile {
    let mut out = p.clone();
    if out.hold_timing {
        return out;
    }
    let first = out.lines.len() as u32;
    out.lines
        .extend(std::iter::repeat(LineKind::Counter).take(out.locks.len()));
    for s in &mut out.slots {
        for st in &mut s.steps {
            if let Step::Hold(h) = st {
                h.written.push(first + h.lock);
            }
        }
    }
    out.hold_timing = true;
    out.notes = format!(
        "{}; the bench's hold timing added (one hold_ns counter line per lock, written in each hold)",
        out.notes
    );
    out
}

/// Gives each lock of a model-cost profile the line that `aspace bench`'s
/// lock wrapper writes when a first try fails: `rmap::stats`'s
/// `acquire_slow` calls `try_lock`, and on failure adds to the lock's
/// `contended` counters (their own line in the `CachePadded`
/// `LockCounters`) before it calls the blocking `lock()`. Every thread
/// whose try fails writes it, so under contention each failure takes it
/// from the one before; with parked threads the try fails on a free lock
/// too (the parked bit), and the lock stays free meanwhile. The recorder
/// records uncontended holds, so the line is not in a recording. One new
/// [`LineKind::Counter`] line per lock without one
/// ([`predict::LockDesc::contended_line`]).
pub fn add_contended_counters(p: &Profile) -> Profile {
    let mut out = p.clone();
    let mut added = 0;
    for i in 0..out.locks.len() {
        if out.locks[i].contended_line.is_none() {
            out.lines.push(LineKind::Counter);
            out.locks[i].contended_line = Some((out.lines.len() - 1) as u32);
            added += 1;
        }
    }
    if added > 0 {
        out.notes = format!(
            "{}; the bench's contended counters added (one line per lock, written by a failed first try)",
            out.notes
        );
    }
    out
}

/// The traced program: if started as `aspace __model-trace BINARY`, two
/// threads with an address space each exec `BINARY` in turns (design
/// `exclude`), the last ten execs of each between marker stores; prints
/// the marker's and each mapped file's object address on stderr, and
/// exits. Otherwise returns.
pub fn trace_hook() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::mpsc;
    static MARK: AtomicU64 = AtomicU64::new(0);
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new("__model-trace")) {
        return;
    }
    let binary = std::path::PathBuf::from(args.next().unwrap_or_else(|| "/bin/true".into()));
    let files = mm::Files::new(
        rmap::Design::Exclude,
        rmap::Topology::Os,
        mm::CallPattern::PerVma,
    );
    let Ok(prog) = files.program(&binary) else {
        eprintln!("cannot exec {}", binary.display());
        std::process::exit(2);
    };
    eprintln!("MARK {:x}", &MARK as *const AtomicU64 as usize);
    for f in prog.files() {
        // The Arc's counts sit two words before the object.
        let inner = std::sync::Arc::as_ptr(f) as usize - 16;
        eprintln!("FILE {:x} {}", inner / 64, f.path().display());
    }
    let (to_b, from_a) = mpsc::channel::<u64>();
    let (to_a, from_b) = mpsc::channel::<u64>();
    let (fb, pb) = (files.clone(), prog.clone());
    let b = std::thread::spawn(move || {
        let m = mm::Mm::new(fb);
        while let Ok(i) = from_a.recv() {
            if i >= 20 {
                MARK.store(1, Ordering::SeqCst);
            }
            m.exec_program(&pb);
            if i >= 20 {
                MARK.store(0, Ordering::SeqCst);
            }
            if to_a.send(i).is_err() {
                break;
            }
        }
        m.exit();
    });
    let m = mm::Mm::new(files.clone());
    for i in 0..30u64 {
        if i >= 20 {
            MARK.store(1, Ordering::SeqCst);
        }
        m.exec_program(&prog);
        if i >= 20 {
            MARK.store(0, Ordering::SeqCst);
        }
        if to_b.send(i).is_err() || from_b.recv().is_err() {
            break;
        }
    }
    drop(to_b);
    let _ = b.join();
    m.exit();
    std::process::exit(0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recording_is_built_in_and_adds_shared_lines() {
        let share = recorded().expect("a valid built-in recording");
        assert!(!share.lines.is_empty());
        assert!(share.lines.iter().any(|l| l.what.contains("libc")));
        let p = Profile {
            label: "t".into(),
            workload: "execl".into(),
            call_pattern: "per-vma".into(),
            locks: vec![],
            lines: vec![],
            slots: (0..2)
                .map(|c| predict::CpuProfile {
                    cpu: c,
                    steps: vec![Step::Work(100.0), Step::Work(100.0)],
                })
                .collect(),
            recorded_ghz: 1.0,
            notes: String::new(),
            exit_vmas_per_hold: 0.0,
            work_placed: false,
            loads_recorded: false,
            hold_timing: false,
        };
        let touches_of = |q: &Profile, slot: usize| -> Vec<Touch> {
            q.slots[slot]
                .steps
                .iter()
                .filter_map(|s| match s {
                    Step::Touch(t) => Some(t.clone()),
                    _ => None,
                })
                .collect()
        };
        // The built-in recording keeps each exec's own touches: slot i runs
        // exec i, each touch where the exec made it.
        assert!(share.execs.len() >= 2, "the execs' touches are recorded");
        let q = add_model_share(&p, &share);
        q.validate().unwrap();
        assert_eq!(q.lines.len(), share.lines.len());
        for slot in 0..2 {
            let t = touches_of(&q, slot);
            let e = &share.execs[slot];
            assert_eq!(t.len(), e.len(), "one touch per recorded touch");
            for (t, &(_, line, w)) in t.iter().zip(e) {
                let (want_w, want_r) = if w != 0 {
                    (vec![line as u32], vec![])
                } else {
                    (vec![], vec![line as u32])
                };
                assert_eq!((&t.written, &t.read), (&want_w, &want_r));
            }
        }
        // Placed by the recorded places: the first touch of exec 0 comes
        // after its share of the slot's 200 ns of work.
        let before: f64 = q.slots[0]
            .steps
            .iter()
            .take_while(|s| !matches!(s, Step::Touch(_)))
            .map(|s| match s {
                Step::Work(w) => *w,
                _ => 0.0,
            })
            .sum();
        assert!((before - share.execs[0][0].0 * 200.0).abs() < 1e-6);
        assert_eq!(q.times(), p.times(), "no time added");

        // A recording without the execs: every line's visits spread evenly.
        let old = ModelShare {
            execs: vec![],
            ..share.clone()
        };
        let q = add_model_share(&p, &old);
        q.validate().unwrap();
        let want: f64 = old
            .lines
            .iter()
            .map(|l| l.write_visits.round() + l.read_visits.round())
            .sum();
        let touches = touches_of(&q, 0);
        assert_eq!(touches.len() as f64, want);
        assert_eq!(touches_of(&q, 1).len(), touches.len());
        // Every visit is a touch of its own (two visits of one line in one
        // touch would move the line once), spread between work.
        assert!(touches.iter().all(|t| t.written.len() + t.read.len() == 1));
        let works = q.slots[0]
            .steps
            .iter()
            .filter(|s| matches!(s, Step::Work(w) if *w > 0.0))
            .count();
        assert!(
            works as f64 > want / 2.0,
            "visits spread over the work: {works} pieces"
        );
        assert_eq!(q.times(), p.times(), "no time added");
    }

    /// Two locks, `slots` slots; slot `c` holds lock `c % 2` for 200 ns
    /// (writing one tree line of its lock) after 300 ns of work.
    fn two_lock_profile(slots: u32) -> Profile {
        Profile {
            label: "t".into(),
            workload: "execl".into(),
            call_pattern: "per-vma".into(),
            locks: (0..2)
                .map(|i| predict::LockDesc {
                    name: format!("map{i}#0"),
                    kind: predict::LockKind::ParkingLot,
                    line: i,
                    contended_line: None,
                })
                .collect(),
            lines: vec![
                LineKind::LockWord,
                LineKind::LockWord,
                LineKind::Tree,
                LineKind::Tree,
            ],
            slots: (0..slots)
                .map(|c| predict::CpuProfile {
                    cpu: c,
                    steps: vec![
                        Step::Work(300.0),
                        Step::Hold(predict::Hold {
                            lock: c % 2,
                            write: true,
                            site: predict::Site::MmapLink,
                            hold_ns: 200.0,
                            written: vec![2 + c % 2],
                            read: vec![],
                            loaded_first: vec![],
                        }),
                    ],
                })
                .collect(),
            recorded_ghz: 1.0,
            notes: String::new(),
            exit_vmas_per_hold: 0.0,
            work_placed: false,
            loads_recorded: false,
            hold_timing: false,
        }
    }

    #[test]
    fn the_bench_s_hold_timing_writes_one_counter_line_per_lock_in_each_hold() {
        // `aspace bench` times every hold: its end adds the length to the
        // lock's `hold_ns` line, which every holder of that lock writes.
        let p = two_lock_profile(4);
        let q = add_hold_timing(&p);
        q.validate().unwrap();
        assert!(q.hold_timing && !p.hold_timing);
        assert_eq!(q.lines.len(), p.lines.len() + 2, "one line per lock");
        assert!(q.lines[4..].iter().all(|&k| k == LineKind::Counter));
        for s in &q.slots {
            for st in &s.steps {
                if let Step::Hold(h) = st {
                    // Its own lock's line, written last (after the hold's
                    // stores, as `end_slow` does).
                    assert_eq!(h.written.last(), Some(&(4 + h.lock)));
                    assert_eq!(h.written.len(), 2);
                }
            }
        }
        assert_eq!(q.times(), p.times(), "no time added");
        assert_eq!(add_hold_timing(&q), q, "added once");

        // Four copies on a machine whose lines take 100 ns to move: each
        // lock's two holders hand its counter line to each other, so a
        // hold lasts longer and fewer iterations run.
        let mut m = predict::Machine::by_name("device-16").unwrap();
        m.core_ghz = 1.0;
        m.latency_ns = predict::Latency {
            same_core: 100.0,
            same_llc: 100.0,
            same_node: 100.0,
            other_node: 100.0,
            other_socket: 100.0,
        };
        let mut cfg = predict::SimConfig::new(4);
        cfg.duration_ns = 1e7;
        cfg.warmup_ns = 1e6;
        let hold = |p: &Profile| {
            let r = predict::simulate(&m, p, &cfg).unwrap();
            let l = &r.locks[0];
            (l.hold_ns / l.acquisitions as f64, r.per_s)
        };
        let (untimed, untimed_rate) = hold(&p);
        let (timed, timed_rate) = hold(&q);
        assert!(
            timed >= untimed + 50.0,
            "timed {timed} ns vs untimed {untimed} ns"
        );
        assert!(timed_rate < untimed_rate);
    }

    #[test]
    fn each_lock_gets_its_own_contended_counter_line_once() {
        // `acquire_slow` writes the failing lock's own `contended` line.
        let p = two_lock_profile(4);
        let q = add_contended_counters(&p);
        q.validate().unwrap();
        let lines: Vec<u32> = q.locks.iter().map(|l| l.contended_line.unwrap()).collect();
        assert_eq!(lines, vec![4, 5], "one new line per lock, each its own");
        assert!(q.lines[4..].iter().all(|&k| k == LineKind::Counter));
        assert_eq!(q.slots, p.slots, "the holds are unchanged");
        assert_eq!(add_contended_counters(&q), q, "added once");
    }
}
