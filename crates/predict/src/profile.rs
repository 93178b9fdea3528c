//! Profiles: what one iteration of a workload (one exec, or one fork + exec
//! + exit) does on each CPU, as recorded from the real code.
//!
//! A profile is a list of steps per CPU slot:
//!
//! * [`Step::Work`]: time on the CPU that touches nothing another CPU
//!   writes;
//! * [`Step::Hold`]: one lock acquisition: which lock, the mode, the call
//!   site, the hold's own time with every line local, and **which cache
//!   lines** the critical section writes and reads (by identity, global to
//!   the profile, so that two holds that touch the same tree node name the
//!   same line);
//! * [`Step::Touch`]: shared lines written or read outside any lock (the
//!   reference counts and counters every exec updates: see the lab's
//!   `predict::kernel`), each costing a transfer when another CPU wrote it
//!   last.
//!
//! Nothing here names a design: a design is whatever its recorded holds
//! and lines are. Times are nanoseconds *on the machine that recorded the
//! profile*, whose speed is [`Profile::recorded_ghz`]; the simulator scales
//! them. A line's transfer costs the target machine's latency, never a
//! recorded time.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Where a lock was taken (the kernel's call sites of `i_mmap_rwsem`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Site {
    /// Linking a new mapping on mmap (`vma_link_file`).
    MmapLink,
    /// Unlinking mappings a `MAP_FIXED` mmap replaces (`mmap_region`).
    ReplaceUnlink,
    /// Splitting a mapping at the edge of a `MAP_FIXED` mmap or a munmap
    /// (`__split_vma` from `vms_gather_munmap_vmas`).
    Split,
    /// Splitting a mapping for `mprotect` (`mprotect_fixup` ->
    /// `__split_vma`: ld.so's RELRO). The kernel's profiles list it apart
    /// from the mmap/munmap splits.
    ProtectSplit,
    /// Unlinking on exit or exec's teardown (`unlink_file_vma_batch`).
    ExitUnlink,
    /// Merging a new or changed mapping with a neighbour (`vma_expand` /
    /// `commit_merge`, from `vma_merge_new_range` or
    /// `vma_merge_existing_range`): its own stack in a kernel profile,
    /// not `__split_vma`.
    Merge,
    /// Fork's `insert_after` (`dup_mmap`).
    ForkInsertAfter,
    /// An rmap walk (reader).
    Walk,
    /// A lock of the rest of the exec (not a reverse map): the kernel's
    /// `pcpu_alloc_mutex` and the like (see [`LockDesc::name`]).
    ExecLock,
    /// Anything else.
    Other,
}

impl Site {
    /// Every site, in report order.
    pub const ALL: [Site; 10] = [
        Site::MmapLink,
        Site::ReplaceUnlink,
        Site::Split,
        Site::ProtectSplit,
        Site::ExitUnlink,
        Site::Merge,
        Site::ForkInsertAfter,
        Site::Walk,
        Site::ExecLock,
        Site::Other,
    ];

    /// The name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Site::MmapLink => "mmap_link",
            Site::ReplaceUnlink => "replace_unlink",
            Site::Split => "split",
            Site::ProtectSplit => "protect_split",
            Site::ExitUnlink => "exit_unlink",
            Site::Merge => "merge",
            Site::ForkInsertAfter => "fork_insert_after",
            Site::Walk => "walk",
            Site::ExecLock => "exec_lock",
            Site::Other => "other",
        }
    }

    /// Index into [`Site::ALL`].
    pub fn index(self) -> usize {
        Site::ALL
            .iter()
            .position(|&s| s == self)
            .unwrap_or(Site::ALL.len() - 1)
    }

    /// True for the reverse map's own call sites (not [`Site::ExecLock`]).
    pub fn is_rmap(self) -> bool {
        self != Site::ExecLock
    }
}

/// How a lock's waiters behave: the lock implementation, which decides
/// what a contended acquisition costs (the simulator's module docs describe
/// each model and where its parameters come from).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LockKind {
    /// Linux's `rw_semaphore` (`kernel/locking/rwsem.c`): writers spin in
    /// the MCS `osq` queue while a writer owns the lock, spin a bounded
    /// time on a reader-owned one, else sleep on the wait queue; a waiter
    /// that has slept 4 ms gets the lock handed to it. Also used for the
    /// kernel's `mutex` (the same optimistic spinning and hand-off).
    KernelRwsem,
    /// `parking_lot::RwLock`, the lab's own lock (what `aspace bench`
    /// measures): a few spins, then `sched_yield`s, then the thread parks
    /// on a futex; an unlock wakes one parked waiter, which must win the
    /// lock again against newcomers, except for a fair hand-off on average
    /// every 0.5 ms.
    ParkingLot,
}

/// What a line is, for reports (where the transfer time went).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LineKind {
    /// A lock's word (`count`/`owner`/`osq` of an rwsem; parking_lot's state).
    LockWord,
    /// The lab's lock counters (not in the kernel).
    Counter,
    /// A tree header or node of a reverse map.
    Tree,
    /// Other state an exec shares: page and dentry reference counts,
    /// inode counters, allocator state.
    ExecShared,
}

impl LineKind {
    /// Every kind, in report order.
    pub const ALL: [LineKind; 4] = [
        LineKind::LockWord,
        LineKind::Counter,
        LineKind::Tree,
        LineKind::ExecShared,
    ];

    /// Index into [`LineKind::ALL`].
    pub fn index(self) -> usize {
        match self {
            LineKind::LockWord => 0,
            LineKind::Counter => 1,
            LineKind::Tree => 2,
            LineKind::ExecShared => 3,
        }
    }

    /// The name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            LineKind::LockWord => "lock_word",
            LineKind::Counter => "counter",
            LineKind::Tree => "tree",
            LineKind::ExecShared => "exec_shared",
        }
    }
}

/// One lock of the profiled code.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LockDesc {
    /// A label for reports (e.g. `libc.so.6#0`, `pcpu_alloc_mutex`).
    pub name: String,
    /// Its implementation.
    pub kind: LockKind,
    /// The line of its word (an index into [`Profile::lines`]). A hold
    /// that also writes this line as data (a tree root beside the lock
    /// word) loses it to every waiter that polls the word.
    pub line: u32,
    /// The line an acquisition writes when its first try fails, before it
    /// blocks: the lab's `contended` counter (`rmap::stats`'s
    /// `acquire_slow`: `try_write`, then on failure the counter, then
    /// `write()`). Added to a model-cost profile by the lab
    /// (`add_contended_counters`); none in a recording or for the kernel.
    /// Used by parking_lot locks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contended_line: Option<u32>,
}

/// One lock acquisition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hold {
    /// Index into [`Profile::locks`].
    pub lock: u32,
    /// Exclusive (writer) or shared (reader).
    pub write: bool,
    /// The call site.
    pub site: Site,
    /// The critical section's own time, single-threaded, every line in
    /// this CPU's cache, in recorded ns.
    pub hold_ns: f64,
    /// Lines the critical section writes (indices into [`Profile::lines`];
    /// the lock word's line is the simulator's own and is not listed).
    pub written: Vec<u32>,
    /// Lines it only reads.
    pub read: Vec<u32>,
    /// The written lines (a subset of `written`) that the critical section
    /// loaded before it wrote them: the nodes on its walk from the root
    /// that the change then wrote. Their loads are part of the walk's
    /// dependent chain (see the simulator's overlap rule). Recorded since
    /// s37 (see [`Profile::loads_recorded`]); empty in older profiles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loaded_first: Vec<u32>,
}

/// Shared lines an iteration updates outside any lock (atomic reference
/// counts, counters): each access is a transfer when another CPU wrote the
/// line last, and a line moves between CPUs one transfer at a time.
///
/// By access kind, as the simulator charges them (`sim/lines.rs`): locked
/// read-modify-writes (`written`: each waits for the memory operations
/// before it, so one after another unless the machine measured
/// `rmw_overlap`), plain stores (`stored`: they retire into the store
/// buffer and their ownership requests overlap, [`crate::Machine::store_overlap`])
/// and plain loads (`read`: charged as a dependent chain).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Touch {
    /// Lines written by locked read-modify-writes (`lock`-prefixed on
    /// x86: atomic increments, `cmpxchg`, a spinlock's acquisition), in
    /// order.
    pub written: Vec<u32>,
    /// Lines read.
    pub read: Vec<u32>,
    /// Lines written by plain stores (no lock prefix: a list's links
    /// under a lock already held), after `written`. Empty in profiles
    /// made before s40.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stored: Vec<u32>,
}

/// One step of an iteration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Step {
    /// Time that touches nothing another CPU writes, in recorded ns.
    Work(f64),
    /// A lock hold.
    Hold(Hold),
    /// Shared lines touched outside locks.
    Touch(Touch),
}

/// What one CPU does per iteration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuProfile {
    /// The CPU id the steps were recorded for (a simulated CPU `c` uses the
    /// slot whose `cpu` is `c`, else slot `c % slots`).
    pub cpu: u32,
    /// The steps, in order; the iteration repeats.
    pub steps: Vec<Step>,
}

impl CpuProfile {
    /// The slot's time outside holds and touches: the sum of its work steps, in recorded ns.
    pub fn work_ns(&self) -> f64 {
        self.steps
            .iter()
            .map(|st| match st {
                Step::Work(t) => *t,
                _ => 0.0,
            })
            .sum()
    }
}

/// A recorded profile of one design and call pattern.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// A label (the design's name); the simulator never reads it.
    pub label: String,
    /// The workload (`execl`, `shell`).
    pub workload: String,
    /// The call pattern, in words.
    pub call_pattern: String,
    /// The locks.
    pub locks: Vec<LockDesc>,
    /// Every line the profile names, by index: what each is.
    pub lines: Vec<LineKind>,
    /// Per-CPU iterations.
    pub slots: Vec<CpuProfile>,
    /// Speed of the recording machine (see [`crate::Machine::core_ghz`]).
    pub recorded_ghz: f64,
    /// How the profile was recorded, in words (for reports).
    #[serde(default)]
    pub notes: String,
    /// VMAs one exit-unlink hold removes on average (measured by the
    /// recorder from the model's own call counts; 0: unknown). Only
    /// `unbatch_exit`-style transforms read it.
    #[serde(default)]
    pub exit_vmas_per_hold: f64,
    /// The work outside the holds lies where the recording found it
    /// between them (recorded since s37: each hold's place in the exec).
    /// False in older profiles, whose work is spread evenly over the gaps.
    #[serde(default)]
    pub work_placed: bool,
    /// Each hold's [`Hold::loaded_first`] was recorded (since s37). False
    /// in older profiles: their written lines say nothing of it.
    #[serde(default)]
    pub loads_recorded: bool,
    /// Each hold writes the line `aspace bench`'s hold timing writes (its
    /// lock's `hold_ns` counters): added to a model-cost profile by the
    /// lab (`add_hold_timing`), since the recorder records lines without
    /// hold timing. False in every recording.
    #[serde(default)]
    pub hold_timing: bool,
}

/// What is wrong with a profile.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileError(pub String);

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProfileError {}

/// The most steps one iteration may have.
pub const MAX_STEPS: usize = 1 << 16;

/// The most lines one profile may name.
pub const MAX_LINES: usize = 1 << 24;

impl Profile {
    /// Checks the profile: at least one slot, every slot non-empty with
    /// positive total time, every lock and line index valid, every time
    /// finite and non-negative.
    pub fn validate(&self) -> Result<(), ProfileError> {
        let err = |s: String| Err(ProfileError(format!("profile {:?}: {s}", self.label)));
        if self.slots.is_empty() {
            return err("no CPU slots".into());
        }
        if !(self.recorded_ghz.is_finite() && self.recorded_ghz > 0.0) {
            return err(format!(
                "recorded_ghz {} must be positive",
                self.recorded_ghz
            ));
        }
        if self.lines.len() > MAX_LINES {
            return err(format!("{} lines (at most {MAX_LINES})", self.lines.len()));
        }
        let nlines = self.lines.len() as u32;
        for (i, l) in self.locks.iter().enumerate() {
            if l.line >= nlines || l.contended_line.is_some_and(|c| c >= nlines) {
                return err(format!("lock {i}: line {} out of range", l.line));
            }
        }
        let lines_ok = |v: &[u32]| v.iter().all(|&l| l < nlines);
        for s in &self.slots {
            if s.steps.is_empty() || s.steps.len() > MAX_STEPS {
                return err(format!(
                    "slot {} has {} steps (1..={MAX_STEPS})",
                    s.cpu,
                    s.steps.len()
                ));
            }
            let mut total = 0.0;
            for st in &s.steps {
                let t = match st {
                    Step::Work(t) => *t,
                    Step::Hold(h) => {
                        if h.lock as usize >= self.locks.len() {
                            return err(format!("slot {}: lock {} out of range", s.cpu, h.lock));
                        }
                        if !lines_ok(&h.written) || !lines_ok(&h.read) {
                            return err(format!("slot {}: a hold's line out of range", s.cpu));
                        }
                        h.hold_ns
                    }
                    Step::Touch(t) => {
                        if !lines_ok(&t.written) || !lines_ok(&t.read) || !lines_ok(&t.stored) {
                            return err(format!("slot {}: a touched line out of range", s.cpu));
                        }
                        0.0
                    }
                };
                if !(t.is_finite() && (0.0..1e10).contains(&t)) {
                    return err(format!("slot {}: time {t} out of range", s.cpu));
                }
                total += t;
            }
            if total <= 0.0 {
                return err(format!("slot {}: an iteration takes no time", s.cpu));
            }
        }
        Ok(())
    }

    /// Holds per iteration, in slot 0.
    pub fn holds_per_iteration(&self) -> usize {
        self.slots[0]
            .steps
            .iter()
            .filter(|s| matches!(s, Step::Hold(_)))
            .count()
    }

    /// Total recorded hold time and work time of slot 0's iteration.
    pub fn times(&self) -> (f64, f64) {
        let mut hold = 0.0;
        let mut work = 0.0;
        for s in &self.slots[0].steps {
            match s {
                Step::Work(t) => work += t,
                Step::Hold(h) => hold += h.hold_ns,
                Step::Touch(_) => {}
            }
        }
        (hold, work)
    }

    /// Mean lines written and read per hold of slot 0 (for reports).
    pub fn lines_per_hold(&self) -> (f64, f64) {
        let (mut w, mut r, mut n) = (0usize, 0usize, 0usize);
        for s in &self.slots[0].steps {
            if let Step::Hold(h) = s {
                w += h.written.len();
                r += h.read.len();
                n += 1;
            }
        }
        if n == 0 {
            (0.0, 0.0)
        } else {
            (w as f64 / n as f64, r as f64 / n as f64)
        }
    }

    /// Stretches the work between holds so that one iteration costs
    /// `iteration_ns` (a real kernel's cost, measured on the recording
    /// machine), keeping the holds and touches as recorded: the
    /// non-reverse-map work of a real exec is the calibrated cost minus the
    /// model's reverse-map time. Each slot's work keeps its shape (gaps
    /// scale proportionally); a slot with no work gets one step of it at
    /// the end.
    pub fn with_iteration_cost(&self, iteration_ns: f64) -> Result<Profile, ProfileError> {
        if !(iteration_ns.is_finite() && iteration_ns > 0.0) {
            return Err(ProfileError(format!(
                "iteration cost {iteration_ns} ns must be positive"
            )));
        }
        let mut out = self.clone();
        for s in &mut out.slots {
            let (mut hold, mut work) = (0.0, 0.0);
            for st in &s.steps {
                match st {
                    Step::Hold(h) => hold += h.hold_ns,
                    Step::Work(t) => work += t,
                    Step::Touch(_) => {}
                }
            }
            let want = (iteration_ns - hold).max(0.0);
            if work > 0.0 {
                let f = want / work;
                for st in &mut s.steps {
                    if let Step::Work(t) = st {
                        *t *= f;
                    }
                }
            } else if want > 0.0 {
                s.steps.push(Step::Work(want));
            }
        }
        Ok(out)
    }

    /// The same iteration with `ns` more work outside the holds, spread
    /// over its work steps in proportion (a slot without work gets one
    /// step): what `aspace bench --cost kernel` adds to the model's exec.
    pub fn with_added_work(&self, ns: f64) -> Result<Profile, ProfileError> {
        if !(ns.is_finite() && ns >= 0.0) {
            return Err(ProfileError(format!(
                "added work {ns} ns must be 0 or more"
            )));
        }
        let mut out = self.clone();
        for s in &mut out.slots {
            let work = s.work_ns();
            if work > 0.0 {
                let f = (work + ns) / work;
                for st in &mut s.steps {
                    if let Step::Work(t) = st {
                        *t *= f;
                    }
                }
            } else if ns > 0.0 {
                s.steps.push(Step::Work(ns));
            }
        }
        Ok(out)
    }

    /// The same iteration with no reverse map: every reverse-map hold
    /// removed, the work, the other shared lines and the other locks
    /// ([`Site::ExecLock`]) kept (the lab bench's `exclude` bound).
    /// Simulated, it is the most this iteration can run at on a machine:
    /// what the design would reach if its reverse map cost nothing and
    /// never waited, limited only by the rest of what the iteration shares.
    /// Fails for a slot that is all reverse-map holds.
    pub fn without_holds(&self) -> Result<Profile, ProfileError> {
        let mut out = self.clone();
        out.label = format!("{} without its reverse map", self.label);
        for s in &mut out.slots {
            s.steps
                .retain(|st| !matches!(st, Step::Hold(h) if h.site.is_rmap()));
        }
        out.validate()?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Profile {
        Profile {
            label: "t".into(),
            workload: "execl".into(),
            call_pattern: "x".into(),
            locks: vec![LockDesc {
                name: "l".into(),
                kind: LockKind::KernelRwsem,
                line: 0,
                contended_line: None,
            }],
            lines: vec![
                LineKind::LockWord,
                LineKind::Tree,
                LineKind::Tree,
                LineKind::ExecShared,
            ],
            slots: vec![CpuProfile {
                cpu: 0,
                steps: vec![
                    Step::Work(100.0),
                    Step::Hold(Hold {
                        lock: 0,
                        write: true,
                        site: Site::MmapLink,
                        hold_ns: 50.0,
                        written: vec![1, 2],
                        read: vec![],
                        loaded_first: vec![],
                    }),
                    Step::Touch(Touch {
                        written: vec![3],
                        read: vec![],
                        stored: vec![],
                    }),
                    Step::Work(300.0),
                ],
            }],
            recorded_ghz: 2.0,
            exit_vmas_per_hold: 0.0,
            work_placed: false,
            loads_recorded: false,
            hold_timing: false,
            notes: String::new(),
        }
    }

    #[test]
    fn iteration_cost_stretches_work_only() {
        let p = tiny().with_iteration_cost(10_050.0).unwrap();
        let (hold, work) = p.times();
        assert_eq!(hold, 50.0);
        assert!((work - 10_000.0).abs() < 1e-6);
        // Shape kept: 1:3.
        match (&p.slots[0].steps[0], &p.slots[0].steps[3]) {
            (Step::Work(a), Step::Work(b)) => assert!((b / a - 3.0).abs() < 1e-9),
            _ => panic!("shape changed"),
        }
        assert!(tiny().with_iteration_cost(f64::NAN).is_err());
    }

    #[test]
    fn added_work_goes_to_the_work_in_proportion() {
        let p = tiny().with_added_work(800.0).unwrap();
        assert_eq!(p.times(), (50.0, 1_200.0), "holds kept, work + 800");
        match (&p.slots[0].steps[0], &p.slots[0].steps[3]) {
            (Step::Work(a), Step::Work(b)) => {
                assert!((a - 300.0).abs() < 1e-9 && (b - 900.0).abs() < 1e-9)
            }
            _ => panic!("shape changed"),
        }
        let mut holds_only = tiny();
        holds_only.slots[0]
            .steps
            .retain(|s| matches!(s, Step::Hold(_)));
        let q = holds_only.with_added_work(800.0).unwrap();
        assert_eq!(q.times(), (50.0, 800.0), "a slot without work gets a step");
        assert_eq!(tiny().with_added_work(0.0).unwrap(), tiny());
        assert!(tiny().with_added_work(-1.0).is_err());
        assert!(tiny().with_added_work(f64::INFINITY).is_err());
    }

    #[test]
    fn validation_rejects_bad_profiles() {
        tiny().validate().unwrap();
        let mut p = tiny();
        p.slots[0].steps.push(Step::Hold(Hold {
            lock: 5,
            write: true,
            site: Site::Other,
            hold_ns: 1.0,
            written: vec![],
            read: vec![],
            loaded_first: vec![],
        }));
        assert!(p.validate().is_err());
        let mut p = tiny();
        p.slots[0].steps.push(Step::Touch(Touch {
            written: vec![99],
            read: vec![],
            stored: vec![],
        }));
        assert!(p.validate().is_err(), "a line out of range");
        let mut p = tiny();
        p.locks[0].line = 7;
        assert!(p.validate().is_err());
        let mut p = tiny();
        p.slots[0].steps[0] = Step::Work(-1.0);
        assert!(p.validate().is_err());
        let mut p = tiny();
        p.slots.clear();
        assert!(p.validate().is_err());
        let mut p = tiny();
        p.slots[0].steps = vec![Step::Work(0.0)];
        assert!(p.validate().is_err());
    }

    #[test]
    fn without_holds_keeps_the_work_and_the_other_shared_state() {
        let mut p = tiny();
        p.slots[0].steps.push(Step::Hold(Hold {
            lock: 0,
            write: true,
            site: Site::ExecLock,
            hold_ns: 7.0,
            written: vec![],
            read: vec![],
            loaded_first: vec![],
        }));
        let b = p.without_holds().unwrap();
        assert_eq!(b.times(), (7.0, 400.0));
        assert_eq!(b.holds_per_iteration(), 1, "the exec's own lock stays");
        assert!(b.slots[0].steps.iter().any(|s| matches!(s, Step::Touch(_))));
        let mut all_holds = tiny();
        all_holds.slots[0]
            .steps
            .retain(|s| matches!(s, Step::Hold(_)));
        assert!(all_holds.without_holds().is_err(), "a slot of holds only");
    }

    #[test]
    fn json_round_trip() {
        let p = tiny();
        let s = serde_json::to_string(&p).unwrap();
        let q: Profile = serde_json::from_str(&s).unwrap();
        assert_eq!(p, q);
        assert_eq!(Site::ALL.iter().map(|s| s.index()).sum::<usize>(), 45);
        assert_eq!(p.lines_per_hold(), (2.0, 0.0));
    }

    #[test]
    fn a_profile_recorded_before_placements_and_loads_still_loads() {
        // An s36 recording's JSON: no `work_placed`, `loads_recorded` or
        // `loaded_first` (its work is spread evenly; its written lines say
        // nothing of the walk's loads).
        let old = r#"{"label":"linux","workload":"execl","call_pattern":"per-vma",
            "locks":[{"name":"map1#0","kind":"ParkingLot","line":0}],
            "lines":["LockWord","Tree","Tree"],
            "slots":[{"cpu":0,"steps":[{"Work":100.0},
              {"Hold":{"lock":0,"write":true,"site":"MmapLink","hold_ns":50.0,"written":[1],"read":[2]}},
              {"Work":100.0}]}],
            "recorded_ghz":1.0,"notes":"","exit_vmas_per_hold":0.0}"#;
        let p: Profile = serde_json::from_str(old).unwrap();
        p.validate().unwrap();
        assert!(!p.work_placed && !p.loads_recorded);
        let Step::Hold(h) = &p.slots[0].steps[1] else {
            panic!("a hold")
        };
        assert!(h.loaded_first.is_empty());
        assert_eq!(p.times(), (50.0, 200.0), "the even spread, as saved");
        // Written back, an empty `loaded_first` is left out: the same text
        // as before for a hold without it.
        let back = serde_json::to_string(&p).unwrap();
        assert!(!back.contains("loaded_first"));
    }
}
