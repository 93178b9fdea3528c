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
}

/// The recording built into this binary.
pub fn recorded() -> Result<ModelShare, String> {
    serde_json::from_str(include_str!("model_shared.json"))
        .map_err(|e| format!("model_shared.json: {e}"))
}

/// Adds the model's other shared lines to a model-cost profile: each
/// slot's iteration gets its visits (rounded) as [`Step::Touch`]es spread
/// over its work, the same lines for every slot.
pub fn add_model_share(p: &Profile, share: &ModelShare) -> Profile {
    let mut out = p.clone();
    let mut writes = Vec::new();
    let mut reads = Vec::new();
    for l in &share.lines {
        out.lines.push(LineKind::ExecShared);
        let id = (out.lines.len() - 1) as u32;
        writes.extend(std::iter::repeat(id).take(l.write_visits.round() as usize));
        reads.extend(std::iter::repeat(id).take(l.read_visits.round() as usize));
    }
    const CHUNKS: usize = 8;
    for s in &mut out.slots {
        let work_at: Vec<usize> = s
            .steps
            .iter()
            .enumerate()
            .filter(|(_, st)| matches!(st, Step::Work(_)))
            .map(|(i, _)| i)
            .collect();
        let chunks = CHUNKS.min(work_at.len().max(1));
        let mut inserts: Vec<(usize, Touch)> = (0..chunks)
            .map(|k| {
                let part = |v: &[u32]| -> Vec<u32> {
                    v.iter()
                        .enumerate()
                        .filter(|(j, _)| j % chunks == k)
                        .map(|(_, &l)| l)
                        .collect()
                };
                let at = work_at
                    .get(k * work_at.len() / chunks)
                    .map_or(s.steps.len(), |&i| i + 1);
                (
                    at,
                    Touch {
                        written: part(&writes),
                        read: part(&reads),
                    },
                )
            })
            .collect();
        inserts.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
        for (at, t) in inserts {
            let at = at.min(s.steps.len());
            s.steps.insert(at, Step::Touch(t));
        }
    }
    out.notes = format!(
        "{}; the model's other shared lines added ({})",
        out.notes, share.source
    );
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
        };
        let q = add_model_share(&p, &share);
        q.validate().unwrap();
        let touched = |slot: usize| -> usize {
            q.slots[slot]
                .steps
                .iter()
                .map(|s| match s {
                    Step::Touch(t) => t.written.len() + t.read.len(),
                    _ => 0,
                })
                .sum()
        };
        let want: f64 = share
            .lines
            .iter()
            .map(|l| l.write_visits.round() + l.read_visits.round())
            .sum();
        assert_eq!(touched(0) as f64, want);
        assert_eq!(touched(0), touched(1));
        assert_eq!(q.times(), p.times(), "no time added");
    }
}
