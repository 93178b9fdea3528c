//! What a bench run records: the JSON schema of `--json` and `aspace report`.

use crate::usl::Usl;
use serde::{Deserialize, Serialize};

/// The machine the figures were measured on.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Machine {
    /// `model name` from /proc/cpuinfo.
    pub cpu_model: String,
    /// CPUs this process may run on.
    pub cores: usize,
    /// NUMA nodes the OS reports.
    pub nodes: usize,
    /// Kernel release.
    pub kernel: String,
    /// `git rev-parse HEAD` of the working directory, or "unknown".
    pub commit: String,
    /// Seconds since the Unix epoch when the run started.
    pub timestamp: u64,
}

/// Reverse-map calls per operation (exec+faults+exit, or fork+exec+exit).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct CallsPerOp {
    /// `insert` calls.
    pub insert: f64,
    /// `insert_batch` calls.
    pub insert_batch: f64,
    /// `insert_after` calls.
    pub insert_after: f64,
    /// `insert_after_batch` calls.
    #[serde(default)]
    pub insert_after_batch: f64,
    /// `remove` calls.
    pub remove: f64,
    /// `remove_batch` calls.
    pub remove_batch: f64,
    /// Reverse-map lock holds (all calls).
    pub lock_holds: f64,
    /// VMAs linked.
    pub vmas_linked: f64,
}

/// One measured point: one design at one thread count.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Run {
    /// `execl` or `shell`.
    pub workload: String,
    /// Reverse-map design name.
    pub design: String,
    /// Worker threads.
    pub threads: usize,
    /// Operations (execs) per second, all workers together.
    pub ops_per_sec: f64,
    /// Reverse-map lock acquisitions that found the lock taken, in %.
    pub contended_pct: f64,
    /// Reverse-map lock acquisitions during the measured interval.
    pub acquisitions: u64,
    /// Of those, contended.
    pub contended: u64,
    /// Operations completed.
    pub ops: u64,
    /// Measured seconds.
    pub seconds: f64,
    /// `ops_per_sec` / linux's at the same thread count, when linux ran.
    pub ratio_to_linux: Option<f64>,
    /// How mm called the reverse maps: `per-vma` or `batched`.
    pub call_pattern: String,
    /// What that pattern does at each call site.
    #[serde(default)]
    pub call_pattern_detail: String,
    /// Reverse-map calls per operation, measured.
    pub calls_per_op: CallsPerOp,
    /// Resident processes that map the binary, libc and ld.so.
    pub resident: usize,
    /// VMAs in libc's reverse map while the workers ran (residents only).
    pub resident_libc_vmas: usize,
    /// Reverse-map walks the reclaim thread did per second.
    pub walks_per_sec: f64,
    /// Emulated topology or "os".
    pub topology: String,
    /// Bytes libc's reverse map takes with the residents in it.
    pub libc_rmap_bytes: usize,
}

impl Run {
    /// The series this run belongs to: `design` plus ` batched` when batched.
    pub fn series_name(&self) -> String {
        if self.call_pattern.is_empty() {
            self.design.clone()
        } else {
            format!("{} {}", self.design, self.call_pattern)
        }
    }
}

/// A USL fit of one design's curve, with projections.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Fit {
    /// Workload.
    pub workload: String,
    /// Design.
    pub design: String,
    /// The fitted parameters and error, from the points with at most as many
    /// threads as the machine has cores; `None` with fewer than 3 of those.
    pub usl: Option<Usl>,
    /// (cores, projected ops/s): projections, NOT measurements.
    pub projections: Vec<(usize, f64)>,
}

/// The bench settings.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Config {
    /// The binary each worker execs.
    pub binary: String,
    /// Seconds per point.
    pub duration_s: f64,
    /// Resident processes.
    pub resident: usize,
    /// Requested walk rate (walks/s).
    pub walk_rate: f64,
    /// Topology.
    pub topology: String,
    /// Thread counts.
    pub threads: Vec<usize>,
    /// Designs.
    pub designs: Vec<String>,
    /// Workloads.
    pub workloads: Vec<String>,
}

/// Everything `aspace bench --json` writes and `aspace report` reads.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Results {
    /// Where it ran.
    pub machine: Machine,
    /// With what settings.
    #[serde(default)]
    pub config: Config,
    /// Every measured point.
    pub runs: Vec<Run>,
    /// USL fits (recomputed by `aspace report`).
    #[serde(default)]
    pub fits: Vec<Fit>,
}

/// Why a series has no fit (shown in the reports).
pub const NOT_FITTED: &str =
    "not fitted: needs 3 or more thread counts within the machine's cores (oversubscribed points measure time-slicing, not contention)";

/// Core counts the projections are made for.
pub const PROJECT_TO: [usize; 2] = [112, 384];

impl Results {
    /// Fills `ratio_to_linux` and recomputes `fits` from `runs`.
    pub fn analyse(&mut self) {
        let runs = self.runs.clone();
        for r in &mut self.runs {
            r.ratio_to_linux = runs
                .iter()
                .find(|l| {
                    l.design == "linux"
                        && l.call_pattern == r.call_pattern
                        && l.workload == r.workload
                        && l.threads == r.threads
                })
                .filter(|l| l.ops_per_sec > 0.0)
                .map(|l| r.ops_per_sec / l.ops_per_sec);
        }
        self.fits.clear();
        // Only thread counts the machine can run at once: past its cores the
        // curve measures time-slicing, not contention, and a USL fit to it
        // projects nonsense. (0 cores: an old JSON without it; use all.)
        let cores = if self.machine.cores == 0 {
            usize::MAX
        } else {
            self.machine.cores
        };
        for (w, d) in self.series() {
            let pts: Vec<(f64, f64)> = self
                .runs
                .iter()
                .filter(|r| r.workload == w && r.series_name() == d && r.threads <= cores)
                .map(|r| (r.threads as f64, r.ops_per_sec))
                .collect();
            let usl = crate::usl::fit(&pts);
            let projections = usl
                .map(|u| PROJECT_TO.iter().map(|&n| (n, u.at(n as f64))).collect())
                .unwrap_or_default();
            self.fits.push(Fit {
                workload: w,
                design: d,
                usl,
                projections,
            });
        }
    }

    /// (workload, series name) pairs in first-seen order.
    pub fn series(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for r in &self.runs {
            let k = (r.workload.clone(), r.series_name());
            if !out.contains(&k) {
                out.push(k);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(cores: usize, points: &[(usize, f64)]) -> Results {
        Results {
            machine: Machine {
                cores,
                ..Machine::default()
            },
            config: Config::default(),
            runs: points
                .iter()
                .map(|&(threads, ops_per_sec)| Run {
                    workload: "execl".into(),
                    design: "linux".into(),
                    threads,
                    ops_per_sec,
                    ..Run::default()
                })
                .collect(),
            fits: Vec::new(),
        }
    }

    /// Oversubscribed points (more threads than cores) never enter the
    /// fit: with fewer than three points left there is no fit at all.
    #[test]
    fn fit_uses_only_points_within_the_cores() {
        // Perfect linear scaling to 4 cores, then a collapse at 8 threads
        // on 4 cores (time-slicing).
        let pts = [(1, 100.0), (2, 200.0), (3, 300.0), (4, 400.0), (8, 50.0)];
        let mut r = results(4, &pts);
        r.analyse();
        let u = r.fits[0].usl.expect("4 points within the cores");
        assert!(
            u.sigma < 1e-3 && u.kappa < 1e-3,
            "{u:?}: the 8-thread point leaked in"
        );
        let mut r = results(2, &pts);
        r.analyse();
        assert!(r.fits[0].usl.is_none() && r.fits[0].projections.is_empty());
        // An old JSON with no core count keeps every point.
        let mut r = results(0, &pts[..3]);
        r.analyse();
        assert!(r.fits[0].usl.is_some());
    }
}
