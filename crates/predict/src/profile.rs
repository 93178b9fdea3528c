//! Profiles: what one iteration of a workload (one exec, or one fork + exec
//! + exit) does on each CPU, as recorded from the real code.
//!
//! A profile is a list of steps per CPU slot: `Work` (time outside any
//! reverse-map lock) and `Hold` (one lock acquisition: which lock, the mode,
//! the measured hold time, which call site took it, and how many shared
//! cache lines the critical section writes and reads). Nothing here names a
//! design: a design is whatever its recorded holds are.
//!
//! Times are nanoseconds *on the machine that recorded the profile*, whose
//! speed is [`Profile::recorded_ghz`]; the simulator scales them.

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
    /// Fork's `insert_after` (`dup_mmap`).
    ForkInsertAfter,
    /// An rmap walk (reader).
    Walk,
    /// Anything else.
    Other,
}

impl Site {
    /// Every site, in report order.
    pub const ALL: [Site; 8] = [
        Site::MmapLink,
        Site::ReplaceUnlink,
        Site::Split,
        Site::ProtectSplit,
        Site::ExitUnlink,
        Site::ForkInsertAfter,
        Site::Walk,
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
            Site::ForkInsertAfter => "fork_insert_after",
            Site::Walk => "walk",
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
}

/// One lock (one rwsem) of the profiled code.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LockDesc {
    /// A label for reports (e.g. `libc.so.6#0`).
    pub name: String,
    /// The lock word shares a cache line with data the critical section
    /// writes (the tree root next to the lock): every such write by the
    /// holder also moves the line a spinning waiter polls.
    pub shares_line_with_data: bool,
}

/// One lock acquisition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hold {
    /// Index into [`Profile::locks`].
    pub lock: u32,
    /// The data the critical section touches (a tree, a shard): critical
    /// sections on the same `data` write the same lines. Index of a data
    /// set, global to the profile.
    pub data: u32,
    /// Exclusive (writer) or shared (reader).
    pub write: bool,
    /// The call site.
    pub site: Site,
    /// Measured hold time, single-threaded, lines hot, in recorded ns.
    pub hold_ns: f64,
    /// Shared cache lines of `data` the critical section writes.
    pub lines_written: u32,
    /// Shared cache lines of `data` it only reads.
    pub lines_read: u32,
}

/// One step of an iteration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Step {
    /// Time outside reverse-map locks, in recorded ns.
    Work(f64),
    /// A lock hold.
    Hold(Hold),
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

impl Profile {
    /// Checks the profile: at least one slot, every slot non-empty with
    /// positive total time, every lock index valid, every time finite and
    /// non-negative.
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
                        if h.lines_written > 4096 || h.lines_read > 4096 {
                            return err(format!("slot {}: more than 4096 lines", s.cpu));
                        }
                        h.hold_ns
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

    /// Holds per iteration, summed over slot 0.
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
            }
        }
        (hold, work)
    }

    /// Stretches the work between holds so that one iteration costs
    /// `iteration_ns` (the real kernel's cost, measured on the recording
    /// machine), keeping the holds as recorded: the non-reverse-map work of
    /// a real exec is the calibrated cost minus the model's reverse-map
    /// time. Each slot's work keeps its shape (gaps scale proportionally);
    /// a slot with no work gets one step of it at the end.
    pub fn with_iteration_cost(&self, iteration_ns: f64) -> Result<Profile, ProfileError> {
        if !(iteration_ns.is_finite() && iteration_ns > 0.0) {
            return Err(ProfileError(format!(
                "iteration cost {iteration_ns} ns must be positive"
            )));
        }
        let mut out = self.clone();
        for s in &mut out.slots {
            let hold: f64 = s
                .steps
                .iter()
                .map(|st| match st {
                    Step::Hold(h) => h.hold_ns,
                    Step::Work(_) => 0.0,
                })
                .sum();
            let work: f64 = s
                .steps
                .iter()
                .map(|st| match st {
                    Step::Work(t) => *t,
                    Step::Hold(_) => 0.0,
                })
                .sum();
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

    /// The same iteration with no reverse map: every hold removed, the work
    /// between them kept (the lab bench's `exclude` bound). Simulated, it
    /// is the most this iteration can run at on a machine: what the design
    /// would reach if its reverse map cost nothing and never waited, so its
    /// ratio to the design bounds what any reverse-map design can gain over
    /// it there. Fails for a slot that is all holds.
    pub fn without_holds(&self) -> Result<Profile, ProfileError> {
        let mut out = self.clone();
        out.label = format!("{} without its reverse map", self.label);
        out.locks.clear();
        for s in &mut out.slots {
            s.steps.retain(|st| matches!(st, Step::Work(_)));
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
                shares_line_with_data: false,
            }],
            slots: vec![CpuProfile {
                cpu: 0,
                steps: vec![
                    Step::Work(100.0),
                    Step::Hold(Hold {
                        lock: 0,
                        data: 0,
                        write: true,
                        site: Site::MmapLink,
                        hold_ns: 50.0,
                        lines_written: 2,
                        lines_read: 1,
                    }),
                    Step::Work(300.0),
                ],
            }],
            recorded_ghz: 2.0,
            exit_vmas_per_hold: 0.0,
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
        match (&p.slots[0].steps[0], &p.slots[0].steps[2]) {
            (Step::Work(a), Step::Work(b)) => assert!((b / a - 3.0).abs() < 1e-9),
            _ => panic!("shape changed"),
        }
        assert!(tiny().with_iteration_cost(f64::NAN).is_err());
    }

    #[test]
    fn validation_rejects_bad_profiles() {
        tiny().validate().unwrap();
        let mut p = tiny();
        p.slots[0].steps.push(Step::Hold(Hold {
            lock: 5,
            data: 0,
            write: true,
            site: Site::Other,
            hold_ns: 1.0,
            lines_written: 0,
            lines_read: 0,
        }));
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
    fn without_holds_keeps_the_work_and_nothing_else() {
        let b = tiny().without_holds().unwrap();
        assert_eq!(b.times(), (0.0, 400.0));
        assert_eq!(b.holds_per_iteration(), 0);
        assert!(b.locks.is_empty());
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
        assert_eq!(Site::ALL.iter().map(|s| s.index()).sum::<usize>(), 28);
    }
}
