//! What a bench run records: the JSON schema of `--json` and `aspace report`.

use crate::spread::{Spread, Verdict};
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
    /// The commit the `aspace` binary was built from (`git rev-parse HEAD` at build
    /// time), or "unknown" when it was built outside a git checkout.
    pub commit: String,
    /// How the binary was compiled, where it changes what is measured: the
    /// profile, and the CPU it was built for (with AVX2 the maple tree's
    /// point lookups compare a node's pivots at once; see
    /// [`crate::machine::build`]). Empty in results recorded before it was.
    #[serde(default)]
    pub build: String,
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
    /// Reverse-map calls of every kind, counted by mm (each takes the map's lock once).
    pub lock_holds: f64,
    /// VMAs linked.
    pub vmas_linked: f64,
    /// VMAs unlinked.
    #[serde(default)]
    pub vmas_unlinked: f64,
}

/// The lock costs of one call site, per operation, counted by the reverse maps.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct SiteCost {
    /// `mmap_link`, `replace_unlink`, `split`, `exit_unlink`, `fork_insert_after`,
    /// `walk` or `other`.
    pub site: String,
    /// Lock acquisitions per operation at this site.
    pub holds_per_op: f64,
    /// Of all acquisitions at this site, the % that found the lock taken.
    pub contended_pct: f64,
    /// Mean nanoseconds a lock was held per acquisition at this site (0 when
    /// hold timing was off or nothing was held).
    pub mean_hold_ns: f64,
    /// Lock-held nanoseconds per operation at this site.
    pub hold_ns_per_op: f64,
}

/// What the reclaim thread's walks did.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct WalkCost {
    /// Walks per second asked for.
    pub requested_per_sec: f64,
    /// Walks per second done.
    pub achieved_per_sec: f64,
    /// Walks done.
    pub walks: u64,
    /// Median latency of one walk (lock wait included), ns.
    pub p50_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// Set when the design cannot walk (a bound that keeps no reverse map).
    #[serde(default)]
    pub unsupported: Option<String>,
}

/// One sample: one design, one call pattern, one thread count, one repeat.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Run {
    /// `execl` or `shell`.
    pub workload: String,
    /// Reverse-map design name.
    pub design: String,
    /// Worker threads.
    pub threads: usize,
    /// Which repeat of this point (0-based); repeats are interleaved across designs.
    #[serde(default)]
    pub repeat: usize,
    /// More worker threads than the machine has cores (time-slicing, not contention).
    #[serde(default)]
    pub oversubscribed: bool,
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
    /// `ops_per_sec` / that of linux with the same call pattern, thread count and
    /// repeat, when linux ran.
    pub ratio_to_linux: Option<f64>,
    /// How mm called the reverse maps: `per-vma` or `batched`.
    pub call_pattern: String,
    /// What that pattern does at each call site.
    #[serde(default)]
    pub call_pattern_detail: String,
    /// Reverse-map calls per operation, counted by mm.
    pub calls_per_op: CallsPerOp,
    /// Reverse-map lock acquisitions per operation, counted by the maps (walks
    /// excluded when per-site counts are known).
    #[serde(default)]
    pub lock_holds_per_op: f64,
    /// Per call site, counted by the maps.
    #[serde(default)]
    pub sites: Vec<SiteCost>,
    /// The walks, when `--walk-rate` was set.
    #[serde(default)]
    pub walk: Option<WalkCost>,
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
    /// Set for a bound rather than a design (`exclude`: no reverse map at all).
    #[serde(default)]
    pub bound: bool,
    /// Which CPUs the workers ran on (the threads are not pinned); `None`
    /// in results recorded before it was, or with sampling off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
}

/// Where one sample's workers ran: each asked `sched_getcpu` at its first
/// iteration and every `every` iterations after, between iterations
/// (outside every lock hold). See [`crate::workload::placement_of`].
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Placement {
    /// Iterations between two samples of a worker.
    pub every: u64,
    /// Every CPU any worker was seen on, ascending.
    pub cpus: Vec<u32>,
    /// Distinct shards of the design (its own CPU -> shard rule) that the
    /// workers' main CPUs map to; `None` for a design of one lock, or an
    /// emulated topology (whose shards follow the emulated CPU).
    pub shards: Option<u32>,
    /// The same over every CPU any worker was seen on.
    pub shards_seen: Option<u32>,
    /// Per worker, in start order.
    pub threads: Vec<ThreadPlacement>,
}

/// Where one worker ran.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ThreadPlacement {
    /// The CPU it was seen on most (its main CPU; the lower id on a tie).
    pub cpu: u32,
    /// Every CPU it was seen on, ascending.
    pub cpus: Vec<u32>,
    /// Samples taken.
    pub samples: u64,
}

/// One point summarised over its repeats: what the table, the plots and the report
/// show. Recomputed from `runs` by [`Results::analyse`].
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Summary {
    /// `execl` or `shell`.
    pub workload: String,
    /// Design name.
    pub design: String,
    /// `per-vma` or `batched`.
    pub call_pattern: String,
    /// Worker threads.
    pub threads: usize,
    /// More threads than cores.
    pub oversubscribed: bool,
    /// A bound, not a design (`exclude`).
    pub bound: bool,
    /// Operations per second over the repeats.
    pub ops_per_sec: Spread,
    /// Ratios to linux with the same call pattern, paired by repeat.
    pub ratio_to_linux: Option<Spread>,
    /// This point's throughput against linux's with the same call pattern.
    pub vs_linux: Option<Verdict>,
    /// Ratios to linux driven per VMA (today's kernel), paired by repeat: the
    /// ablation table's baseline.
    pub ratio_to_kernel: Option<Spread>,
    /// This point's throughput against linux per VMA.
    pub vs_kernel: Option<Verdict>,
    /// Lock acquisitions per operation, counted by the maps (median).
    pub lock_holds_per_op: f64,
    /// Reverse-map calls per operation, counted by mm (median).
    pub rmap_calls_per_op: f64,
    /// Contended acquisitions, % (over the repeats).
    pub contended_pct: Spread,
    /// Bytes libc's reverse map takes with the residents in it (median).
    pub libc_rmap_bytes: usize,
    /// Per call site, the median of each figure over the repeats.
    pub sites: Vec<SiteCost>,
    /// The walks (medians over the repeats), when `--walk-rate` was set.
    pub walk: Option<WalkCost>,
}

impl Summary {
    /// The series this point belongs to: `design call-pattern`.
    pub fn series_name(&self) -> String {
        format!("{} {}", self.design, self.call_pattern)
    }
}

fn median_of(v: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = v.collect();
    Spread::of(&v).map_or(0.0, |s| s.median)
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
    /// Samples per point.
    #[serde(default)]
    pub repeat: usize,
    /// Call patterns.
    #[serde(default)]
    pub call_patterns: Vec<String>,
    /// Whether lock hold times were measured.
    #[serde(default)]
    pub hold_timing: bool,
    /// Designs.
    pub designs: Vec<String>,
    /// Workloads.
    pub workloads: Vec<String>,
    /// `model`, or `kernel: ` and what each iteration added
    /// (`aspace bench --cost`).
    #[serde(default)]
    pub cost: String,
    /// The designs' locks (`aspace bench --lock`): `parking_lot` or `rwsem`;
    /// empty in files written before the option (parking_lot).
    #[serde(default)]
    pub lock: String,
}

/// Everything `aspace bench --json` writes and `aspace report` reads.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Results {
    /// Where it ran.
    pub machine: Machine,
    /// With what settings.
    #[serde(default)]
    pub config: Config,
    /// Every sample, in the order taken.
    pub runs: Vec<Run>,
    /// Every point over its repeats (recomputed by `aspace report`).
    #[serde(default)]
    pub summary: Vec<Summary>,
    /// USL fits (recomputed by `aspace report`).
    #[serde(default)]
    pub fits: Vec<Fit>,
    /// The predicted curve for this host (`aspace predict`'s simulator), shown
    /// beside the measured one; PREDICTIONS, not measurements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted: Option<crate::predicted::HostPrediction>,
}

/// Why a series has no fit (shown in the reports).
pub const NOT_FITTED: &str =
    "not fitted: needs 3 or more thread counts within the machine's cores (oversubscribed points measure time-slicing, not contention)";

/// Core counts the projections are made for.
pub const PROJECT_TO: [usize; 2] = [112, 384];

impl Results {
    /// Fills `ratio_to_linux` and recomputes `summary` and `fits` from `runs`.
    pub fn analyse(&mut self) {
        for r in &mut self.runs {
            // A JSON written before call patterns were an axis recorded a description
            // in `call_pattern` and no counted holds: keep the description, label the
            // pattern as what it was, and count holds from the acquisitions.
            if r.call_pattern != "per-vma" && r.call_pattern != "batched" {
                if r.call_pattern_detail.is_empty() {
                    r.call_pattern_detail = std::mem::take(&mut r.call_pattern);
                }
                r.call_pattern = "legacy".into();
            }
            if r.lock_holds_per_op == 0.0 && r.ops > 0 {
                r.lock_holds_per_op = r.acquisitions as f64 / r.ops as f64;
            }
        }
        let runs = self.runs.clone();
        let partner = |r: &Run, pattern: &str| {
            runs.iter().find(|l| {
                l.design == "linux"
                    && l.call_pattern == pattern
                    && l.workload == r.workload
                    && l.threads == r.threads
                    && l.repeat == r.repeat
            })
        };
        for r in &mut self.runs {
            r.ratio_to_linux = partner(r, &r.call_pattern)
                .filter(|l| l.ops_per_sec > 0.0)
                .map(|l| r.ops_per_sec / l.ops_per_sec);
        }
        self.summary = self.summarise();
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
                .summary
                .iter()
                .filter(|r| r.workload == w && r.series_name() == d && r.threads <= cores)
                .map(|r| (r.threads as f64, r.ops_per_sec.median))
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

    /// `a` / `b` at one workload and thread count, paired by repeat (each a
    /// (design, call pattern)), with the verdict of those paired ratios
    /// ([`Verdict::paired`]); `None` unless both ran.
    pub fn step(
        &self,
        workload: &str,
        threads: usize,
        a: (&str, &str),
        b: (&str, &str),
    ) -> Option<(Spread, Verdict)> {
        let of = |(d, p): (&str, &str)| {
            self.runs
                .iter()
                .filter(move |r| {
                    r.workload == workload
                        && r.threads == threads
                        && r.design == d
                        && r.call_pattern == p
                })
                .collect::<Vec<_>>()
        };
        let (ra, rb) = (of(a), of(b));
        let ratios: Vec<f64> = ra
            .iter()
            .filter_map(|x| {
                rb.iter()
                    .find(|y| y.repeat == x.repeat && y.ops_per_sec > 0.0)
                    .map(|y| x.ops_per_sec / y.ops_per_sec)
            })
            .collect();
        Some((Spread::of(&ratios)?, Verdict::paired(&ratios)))
    }

    /// The machine's speed in each round (repeat), measured by the workload itself:
    /// the geometric mean, over every point, of its sample in that round divided by
    /// the point's median. 1.0 everywhere on a steady machine; 0.8 means that round
    /// ran 20% slower across the board (other load, frequency). Empty with fewer
    /// than two rounds. Shown so a reader sees how much the load drifted during the
    /// run; the intervals themselves are the plain min-max (see [`crate::spread`]).
    pub fn round_speeds(&self) -> Vec<f64> {
        let rounds = self.runs.iter().map(|r| r.repeat + 1).max().unwrap_or(0);
        if rounds < 2 {
            return Vec::new();
        }
        let mut logs = vec![(0.0f64, 0usize); rounds];
        for s in &self.summary {
            if s.ops_per_sec.median <= 0.0 {
                continue;
            }
            for r in self.runs.iter().filter(|r| {
                r.workload == s.workload
                    && r.design == s.design
                    && r.call_pattern == s.call_pattern
                    && r.threads == s.threads
                    && r.ops_per_sec > 0.0
            }) {
                let e = &mut logs[r.repeat];
                e.0 += (r.ops_per_sec / s.ops_per_sec.median).ln();
                e.1 += 1;
            }
        }
        logs.iter()
            .map(|&(sum, n)| {
                if n > 0 {
                    (sum / n as f64).exp()
                } else {
                    f64::NAN
                }
            })
            .collect()
    }

    /// Whether any series has a USL fit (else there is nothing to project).
    pub fn any_fit(&self) -> bool {
        self.fits.iter().any(|f| f.usl.is_some())
    }

    /// The summaries of every (workload, design, call pattern, threads), in the
    /// order first sampled.
    fn summarise(&self) -> Vec<Summary> {
        type Key = (String, String, String, usize);
        let key = |r: &Run| -> Key {
            (
                r.workload.clone(),
                r.design.clone(),
                r.call_pattern.clone(),
                r.threads,
            )
        };
        let mut keys: Vec<Key> = Vec::new();
        for r in &self.runs {
            let k = key(r);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        let ops = |k: &Key| -> Option<Spread> {
            let v: Vec<f64> = self
                .runs
                .iter()
                .filter(|r| key(r) == *k)
                .map(|r| r.ops_per_sec)
                .collect();
            Spread::of(&v)
        };
        // Paired by repeat: drift between repeats cancels in the ratio.
        let ratios = |k: &Key, pattern: &str| -> Vec<f64> {
            self.runs
                .iter()
                .filter(|r| key(r) == *k)
                .filter_map(|r| {
                    self.runs
                        .iter()
                        .find(|l| {
                            l.design == "linux"
                                && l.call_pattern == pattern
                                && l.workload == r.workload
                                && l.threads == r.threads
                                && l.repeat == r.repeat
                                && l.ops_per_sec > 0.0
                        })
                        .map(|l| r.ops_per_sec / l.ops_per_sec)
                })
                .collect()
        };
        let verdict = |k: &Key, ratios: &[f64], pattern: &str| -> Option<Verdict> {
            if k.1 == "linux" && k.2 == pattern {
                return Some(Verdict::Reference);
            }
            (!ratios.is_empty()).then(|| Verdict::paired(ratios))
        };
        keys.iter()
            .filter_map(|k| {
                let samples: Vec<&Run> = self.runs.iter().filter(|r| key(r) == *k).collect();
                let first = samples.first()?;
                let ops_per_sec = ops(k)?;
                let (to_linux, to_kernel) = (ratios(k, &k.2), ratios(k, "per-vma"));
                let site_names: Vec<String> = {
                    let mut v: Vec<String> = Vec::new();
                    for s in samples.iter().flat_map(|r| &r.sites) {
                        if !v.contains(&s.site) {
                            v.push(s.site.clone());
                        }
                    }
                    v
                };
                let sites = site_names
                    .into_iter()
                    .map(|name| {
                        let of =
                            |f: fn(&SiteCost) -> f64| {
                                median_of(samples.iter().map(|r| {
                                    r.sites.iter().find(|s| s.site == name).map_or(0.0, f)
                                }))
                            };
                        SiteCost {
                            holds_per_op: of(|s| s.holds_per_op),
                            contended_pct: of(|s| s.contended_pct),
                            mean_hold_ns: of(|s| s.mean_hold_ns),
                            hold_ns_per_op: of(|s| s.hold_ns_per_op),
                            site: name,
                        }
                    })
                    .collect();
                let walks: Vec<&WalkCost> =
                    samples.iter().filter_map(|r| r.walk.as_ref()).collect();
                let walk = walks.first().map(|w0| WalkCost {
                    requested_per_sec: w0.requested_per_sec,
                    achieved_per_sec: median_of(walks.iter().map(|w| w.achieved_per_sec)),
                    walks: walks.iter().map(|w| w.walks).sum(),
                    p50_ns: median_of(walks.iter().map(|w| w.p50_ns as f64)) as u64,
                    p99_ns: median_of(walks.iter().map(|w| w.p99_ns as f64)) as u64,
                    unsupported: w0.unsupported.clone(),
                });
                let pcts: Vec<f64> = samples.iter().map(|r| r.contended_pct).collect();
                Some(Summary {
                    workload: k.0.clone(),
                    design: k.1.clone(),
                    call_pattern: k.2.clone(),
                    threads: k.3,
                    oversubscribed: samples.iter().any(|r| r.oversubscribed),
                    bound: first.bound,
                    ratio_to_linux: Spread::of(&to_linux),
                    vs_linux: verdict(k, &to_linux, &k.2),
                    ratio_to_kernel: Spread::of(&to_kernel),
                    vs_kernel: verdict(k, &to_kernel, "per-vma"),
                    ops_per_sec,
                    lock_holds_per_op: median_of(samples.iter().map(|r| r.lock_holds_per_op)),
                    rmap_calls_per_op: median_of(samples.iter().map(|r| r.calls_per_op.lock_holds)),
                    contended_pct: Spread::of(&pcts).unwrap_or_default(),
                    libc_rmap_bytes: median_of(samples.iter().map(|r| r.libc_rmap_bytes as f64))
                        as usize,
                    sites,
                    walk,
                })
            })
            .collect()
    }

    /// The samples of one point (workload, design, call pattern, threads), in
    /// round order.
    pub fn samples(
        &self,
        workload: &str,
        design: &str,
        pattern: &str,
        threads: usize,
    ) -> Vec<&Run> {
        let mut v: Vec<&Run> = self
            .runs
            .iter()
            .filter(|r| {
                r.workload == workload
                    && r.design == design
                    && r.call_pattern == pattern
                    && r.threads == threads
            })
            .collect();
        v.sort_by_key(|r| r.repeat);
        v
    }

    /// (workload, series name) pairs in first-seen order.
    pub fn series(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for r in &self.summary {
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

    /// A results.json from before placements were recorded (the device's
    /// survey) loads, with none; one with a placement keeps it.
    #[test]
    fn old_results_load_and_placements_round_trip() {
        let old = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/results/device-16-survey/bench/results.json"
        ))
        .expect("the device's bench results");
        let r: Results = serde_json::from_str(&old).expect("an old file loads");
        assert!(!r.runs.is_empty());
        assert!(r.runs.iter().all(|r| r.placement.is_none()));
        let text = serde_json::to_string(&r.runs[0]).unwrap();
        assert!(!text.contains("placement"), "none is not written");
        let mut run = r.runs[0].clone();
        run.placement = Some(Placement {
            every: 16,
            cpus: vec![0, 9],
            shards: Some(2),
            shards_seen: Some(2),
            threads: vec![ThreadPlacement {
                cpu: 9,
                cpus: vec![0, 9],
                samples: 5,
            }],
        });
        let back: Run = serde_json::from_str(&serde_json::to_string(&run).unwrap()).unwrap();
        assert_eq!(back.placement, run.placement);
    }

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
                    call_pattern: "per-vma".into(),
                    threads,
                    ops_per_sec,
                    ..Run::default()
                })
                .collect(),
            summary: Vec::new(),
            fits: Vec::new(),
            predicted: None,
        }
    }

    fn sample(design: &str, pattern: &str, repeat: usize, ops_per_sec: f64) -> Run {
        Run {
            workload: "execl".into(),
            design: design.into(),
            call_pattern: pattern.into(),
            threads: 2,
            repeat,
            ops_per_sec,
            ..Run::default()
        }
    }

    /// Six interleaved repeats of three series under a load that swings
    /// between rounds: median and min-max of every point, ratios paired by
    /// repeat, and the verdict from the pairs (the ops/s ranges overlap).
    #[test]
    fn repeats_summarise_with_spread_and_paired_verdicts() {
        let mut r = results(2, &[]);
        let linux = [100.0, 80.0, 90.0, 60.0, 110.0, 70.0];
        let aspace = [1.3, 1.875, 1.5, 1.4, 1.2, 1.6];
        let batched = [1.1, 1.5, 1.11, 0.92, 0.91, 1.07];
        for rep in 0..6 {
            r.runs.push(sample("linux", "per-vma", rep, linux[rep]));
            r.runs
                .push(sample("linux", "batched", rep, linux[rep] * batched[rep]));
            r.runs
                .push(sample("aspace", "per-vma", rep, linux[rep] * aspace[rep]));
        }
        r.analyse();
        assert_eq!(r.summary.len(), 3);
        let get = |d: &str, p: &str| {
            r.summary
                .iter()
                .find(|s| s.design == d && s.call_pattern == p)
                .unwrap()
        };
        let lp = get("linux", "per-vma");
        assert_eq!(
            (
                lp.ops_per_sec.median,
                lp.ops_per_sec.min,
                lp.ops_per_sec.max,
                lp.ops_per_sec.n
            ),
            (85.0, 60.0, 110.0, 6)
        );
        assert_eq!(lp.vs_linux, Some(Verdict::Reference));
        let a = get("aspace", "per-vma");
        assert!(a.ops_per_sec.overlaps(&lp.ops_per_sec));
        let ratio = a.ratio_to_linux.unwrap();
        assert!((ratio.min - 1.2).abs() < 1e-12 && (ratio.max - 1.875).abs() < 1e-12);
        assert!((ratio.median - 1.45).abs() < 1e-12);
        assert_eq!(a.vs_linux, Some(Verdict::Faster));
        // linux batched: above linux per-vma in four rounds of six, a tie.
        let lb = get("linux", "batched");
        assert_eq!(lb.vs_linux, Some(Verdict::Reference));
        assert_eq!(lb.vs_kernel, Some(Verdict::Tie));
        assert!((lb.ratio_to_kernel.unwrap().median - 1.085).abs() < 1e-9);
        // Per-run ratios are paired too.
        assert!(r.runs.iter().all(|x| x.ratio_to_linux.is_some()));
        // Fits use the medians: one point per series, so none.
        assert!(!r.any_fit());
        // Three rounds are too few for a verdict.
        r.runs.retain(|x| x.repeat < 3);
        r.analyse();
        assert_eq!(get_verdict(&r, "aspace"), Some(Verdict::FewRounds));
    }

    fn get_verdict(r: &Results, d: &str) -> Option<Verdict> {
        r.summary
            .iter()
            .find(|s| s.design == d)
            .and_then(|s| s.vs_linux)
    }

    /// Round speeds: a round where every point ran at half its median reads 0.5,
    /// whatever the points' own throughputs.
    #[test]
    fn round_speeds_measure_machine_wide_drift() {
        let mut r = results(2, &[]);
        for (rep, f) in [1.0, 0.5, 1.0, 2.0].into_iter().enumerate() {
            r.runs.push(sample("linux", "per-vma", rep, 100.0 * f));
            r.runs.push(sample("aspace", "per-vma", rep, 3000.0 * f));
        }
        r.analyse();
        let v = r.round_speeds();
        assert_eq!(v.len(), 4);
        // Medians are 100 and 3000 (mean of the middle two of 50, 100, 100, 200).
        for (got, want) in v.iter().zip([1.0, 0.5, 1.0, 2.0]) {
            assert!((got - want).abs() < 1e-12, "{v:?}");
        }
        r.runs.retain(|x| x.repeat == 0);
        r.analyse();
        assert!(r.round_speeds().is_empty());
    }

    /// A JSON from before the call-pattern axis (a description in `call_pattern`,
    /// no counted holds) re-renders with its pattern labelled `legacy`.
    #[test]
    fn legacy_results_are_labelled_not_misread() {
        let mut r = results(2, &[(1, 100.0)]);
        r.runs[0].call_pattern = "exec/mmap: insert x1 per VMA".into();
        r.runs[0].acquisitions = 180;
        r.runs[0].ops = 10;
        r.analyse();
        r.analyse();
        let x = &r.runs[0];
        assert_eq!(x.call_pattern, "legacy");
        assert_eq!(x.call_pattern_detail, "exec/mmap: insert x1 per VMA");
        assert_eq!(x.lock_holds_per_op, 18.0);
        assert_eq!(r.summary[0].call_pattern, "legacy");
    }

    /// A step between two series: paired ratios and their verdict.
    #[test]
    fn steps_pair_by_repeat() {
        let mut r = results(2, &[]);
        for (rep, (a, b)) in [
            (100.0, 50.0),
            (90.0, 60.0),
            (120.0, 55.0),
            (130.0, 60.0),
            (70.0, 35.0),
        ]
        .into_iter()
        .enumerate()
        {
            r.runs.push(sample("aspace", "batched", rep, a));
            r.runs.push(sample("aspace", "per-vma", rep, b));
        }
        let (ratio, v) = r
            .step("execl", 2, ("aspace", "batched"), ("aspace", "per-vma"))
            .unwrap();
        assert_eq!(v, Verdict::Faster);
        assert!((ratio.median - 2.0).abs() < 1e-12 && (ratio.min - 1.5).abs() < 1e-12);
        assert!(r
            .step("execl", 2, ("aspace", "batched"), ("linux", "per-vma"))
            .is_none());
    }

    /// Thread counts above the cores are marked and kept out of the fit.
    #[test]
    fn oversubscribed_points_stay_marked() {
        let mut r = results(2, &[(1, 1.0), (2, 2.0), (4, 2.0)]);
        for x in &mut r.runs {
            x.oversubscribed = x.threads > 2;
        }
        r.analyse();
        let over: Vec<usize> = r
            .summary
            .iter()
            .filter(|s| s.oversubscribed)
            .map(|s| s.threads)
            .collect();
        assert_eq!(over, vec![4]);
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
