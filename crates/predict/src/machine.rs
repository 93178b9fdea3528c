//! Machine descriptions: CPUs, NUMA nodes, SMT, caches, line-transfer
//! latencies and lock costs, each number with its public source.
//!
//! CPU numbering (the simulator's and `rmap`'s emulated topology agree on
//! the node): CPU `c` is on node `c / cpus_per_node`; within a node, local
//! id `l = c % cpus_per_node` is hardware thread `l / cores_per_node` of the
//! node's physical core `l % cores_per_node` (Linux on x86 numbers every
//! core's first thread before the siblings). Global core
//! `g = node * cores_per_node + core`; its last-level cache is
//! `g / cores_per_llc` and its socket `g / (cores / sockets)`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// Cache-line transfer latency (one line moved from the CPU that last wrote
/// it to the CPU that now needs it), by distance, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Between the two hardware threads of one core.
    pub same_core: f64,
    /// Between cores that share a last-level cache.
    pub same_llc: f64,
    /// Between cores of one NUMA node but different last-level caches.
    pub same_node: f64,
    /// Between NUMA nodes of one socket.
    pub other_node: f64,
    /// Between sockets.
    pub other_socket: f64,
}

/// One machine. Plain data; `validate` checks it before a simulation uses it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Short name (`hygon-384`, `host`, ...).
    pub name: String,
    /// What it is, in words.
    pub description: String,
    /// NUMA nodes.
    pub nodes: u32,
    /// Sockets (packages); may be more than `nodes` when the firmware
    /// interleaves memory over sockets (one node spanning two sockets).
    pub sockets: u32,
    /// Physical cores per NUMA node.
    pub cores_per_node: u32,
    /// Hardware threads per core (1 or 2).
    pub smt: u32,
    /// Physical cores sharing one last-level cache.
    pub cores_per_llc: u32,
    /// Per-core speed: sustained all-core clock in GHz (times an IPC factor
    /// where the source gives one). Work recorded on the host is scaled by
    /// `host.core_ghz / machine.core_ghz`.
    pub core_ghz: f64,
    /// Throughput of one core with both hardware threads busy, relative to
    /// one thread alone (e.g. 1.25): each sibling then runs at
    /// `smt_yield / 2` of the core's speed.
    pub smt_yield: f64,
    /// Line-transfer latencies.
    pub latency_ns: Latency,
    /// An uncontended atomic read-modify-write on a line already in this
    /// CPU's cache (lock acquire or release fast path).
    pub atomic_rmw_ns: f64,
    /// From a sleeping rwsem waiter being woken to it running (the
    /// scheduler's wake-up path plus a context switch).
    pub wake_ns: f64,
    /// How long a writer spins on a reader-owned rwsem before sleeping.
    pub reader_spin_ns: f64,
    /// The real kernel's cost of one `execl` of the calibrated binary on
    /// one core of this machine, where measured (`aspace calibrate`).
    #[serde(default)]
    pub exec_ns: Option<f64>,
    /// The real kernel's fork + exec + wait cost, where measured.
    #[serde(default)]
    pub fork_exec_ns: Option<f64>,
    /// The lab binary re-execing itself (UnixBench execl's loop), where
    /// measured.
    #[serde(default)]
    pub self_execl_ns: Option<f64>,
    /// The model's own exec loop without a reverse map (`exclude`: exec,
    /// faults, exit) on one thread of this machine, CPU ns per iteration,
    /// where measured (`aspace calibrate`). The same loop timed on the
    /// recording host gives the speed of the model's code here over there,
    /// which scales recorded times (instead of the clocks' ratio).
    #[serde(default)]
    pub model_exec_ns: Option<f64>,
    /// The binary `model_exec_ns` exec'd (its path on the calibrated
    /// machine): the recording host times the same one where it has it.
    #[serde(default)]
    pub model_exec_binary: Option<String>,
    /// One `pause` (Rust's `spin_loop` hint), where measured: what a
    /// spinning waiter's back-off costs ([`Machine::pause`]).
    #[serde(default)]
    pub pause_ns: Option<f64>,
    /// One `sched_yield` with nothing else to run, where measured
    /// ([`Machine::yield_cost`]).
    #[serde(default)]
    pub yield_ns: Option<f64>,
    /// What waking a sleeping thread costs the waker (a futex wake system
    /// call that finds a sleeper: the kernel's wake-up path and the
    /// inter-processor interrupt it sends), where measured
    /// ([`Machine::futex_wake`]).
    #[serde(default)]
    pub futex_wake_ns: Option<f64>,
    /// What an unlock that wakes a parked thread costs the unlocker under
    /// load, where measured (`aspace calibrate`'s hand-off item): the
    /// real `parking_lot` write unlock's slow path (its bucket, the queue
    /// walk, the fair-timeout clock read, the futex wake system call)
    /// timed around the unlock while a thread on every CPU contends for
    /// the lock and parks, median of the unlocks that woke a thread. The
    /// idle-machine [`Machine::futex_wake_ns`] sees one waiter on a quiet
    /// machine; this one sees the wake-ups a contended lock makes. `None`
    /// (every description before it was measured): the simulator charges
    /// `futex_wake_ns` as before ([`Machine::unlock_wake`]).
    #[serde(default)]
    pub unlock_wake_ns: Option<f64>,
    /// One read of the monotonic clock on one CPU, where measured
    /// (`aspace calibrate`'s clock item: `Instant::now` back to back,
    /// which on Linux is the vDSO's `clock_gettime(CLOCK_MONOTONIC)`, the
    /// call `aspace bench`'s hold timing makes; its cost depends on the
    /// clocksource: `tsc` reads the counter in user space, `kvm-clock`
    /// adds the hypervisor's page, a clocksource without a vDSO read
    /// makes it a system call). The simulator charges it where the code
    /// reads the clock inside a lock's held time: the bench's timed holds
    /// ([`crate::Profile::hold_timing`]) and a `parking_lot` unlock that
    /// wakes a parked thread (its fair-timeout check). `None` (every
    /// description before it was measured): nothing is charged, as before.
    #[serde(default)]
    pub clock_read_ns: Option<f64>,
    /// Per-CPU speed of private work (no shared line) with `cpus` CPUs busy
    /// at once, relative to one CPU alone, where measured: below 1 when
    /// the CPUs share a core's pipeline (SMT siblings, possibly hidden by a
    /// hypervisor), a power or thermal budget, or memory bandwidth. Sorted
    /// by `cpus`; empty: every CPU keeps its speed ([`Machine::speed_at`]).
    #[serde(default)]
    pub speed_by_cpus: Vec<SpeedPoint>,
    /// Memory-level parallelism of independent stores, where measured: the
    /// cost of each further transfer in a run of stores to lines other CPUs
    /// wrote (addresses known in advance), as a fraction of one transfer in
    /// a dependent chain (1: one after another). `None` (every description
    /// before it was measured): the simulator charges every line serially
    /// ([`Machine::line_overlap`]).
    #[serde(default)]
    pub line_overlap: Option<f64>,
    /// The same for locked read-modify-writes (`lock add`) of independent
    /// lines, where measured ([`Machine::rmw_overlap`]).
    #[serde(default)]
    pub rmw_overlap: Option<f64>,
    /// L1 data cache misses one core keeps in flight at once (its line-fill
    /// buffers), where the CPU model's documentation gives it (a fact of
    /// the architecture, with its source in `sources`, not a measurement):
    /// the bound on how far independent plain stores' transfers overlap
    /// where `line_overlap` was not measured ([`Machine::store_overlap`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miss_slots: Option<u32>,
    /// The share of the machine's CPU time other work took while it was
    /// measured (0..1), where known: a calibration on a busy host times
    /// the scheduler as much as the hardware.
    #[serde(default)]
    pub busy_share: Option<f64>,
    /// Field name -> the public source (or the measurement) of its value.
    pub sources: BTreeMap<String, String>,
}

/// Per-CPU speed with some CPUs busy (see [`Machine::speed_by_cpus`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpeedPoint {
    /// CPUs running private work at once.
    pub cpus: u32,
    /// Their mean speed relative to one CPU alone (0 < speed <= about 1).
    pub speed: f64,
}

/// A cost the simulator needs that a machine description may lack, with
/// where the value came from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cost {
    /// Nanoseconds.
    pub ns: f64,
    /// `None`: measured (in the description, with its source); else the
    /// documented assumption used instead.
    pub assumed: Option<&'static str>,
}

/// A memory-level-parallelism factor (see [`Machine::line_overlap`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Overlap {
    /// Each further independent transfer costs this share of a serial one
    /// (0 < factor <= 1).
    pub factor: f64,
    /// `None`: measured; else the assumption used instead.
    pub assumed: Option<&'static str>,
}

impl Overlap {
    fn of(v: Option<f64>, assumed: &'static str) -> Overlap {
        match v {
            Some(f) => Overlap {
                factor: f.clamp(1e-3, 1.0),
                assumed: None,
            },
            None => Overlap {
                factor: 1.0,
                assumed: Some(assumed),
            },
        }
    }

    /// Transfers overlap at all (a factor below 1).
    pub fn overlaps(&self) -> bool {
        self.factor < 1.0
    }
}

/// `pause` latency assumed when not measured: 140 cycles, Intel's figure
/// for Skylake-SP and later server cores (Intel 64 and IA-32
/// Architectures Optimization Reference Manual, "Pause latency in
/// Skylake microarchitecture").
pub const ASSUMED_PAUSE_CYCLES: f64 = 140.0;
/// `sched_yield` cost assumed when not measured, ns: a system call and a
/// pass through the scheduler that finds nothing else to run (lmbench's
/// null system call plus a context-switch decision, about 0.5 us).
pub const ASSUMED_YIELD_NS: f64 = 500.0;
/// The waker's cost of a futex wake that finds a sleeper, assumed when not
/// measured, ns: half the description's wake-up latency (the waker's
/// system call and interrupt; the rest is the wakee's way back to a CPU).
pub const ASSUMED_FUTEX_WAKE_SHARE: f64 = 0.5;

/// What is wrong with a machine description.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineError(pub String);

impl fmt::Display for MachineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MachineError {}

/// The most CPUs a machine may have (the simulator keeps per-CPU bitsets).
pub const MAX_CPUS: u32 = 4096;

/// Where two CPUs are relative to each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Distance {
    /// The same CPU.
    Same,
    /// SMT siblings.
    Core,
    /// Same last-level cache.
    Llc,
    /// Same node.
    Node,
    /// Same socket, other node.
    OtherNode,
    /// Other socket.
    OtherSocket,
}

/// Where one CPU is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// NUMA node.
    pub node: u32,
    /// Global physical core.
    pub core: u32,
    /// Hardware thread within the core.
    pub thread: u32,
    /// Last-level cache.
    pub llc: u32,
    /// Socket.
    pub socket: u32,
}

impl Machine {
    /// Every hardware thread.
    pub fn cpus(&self) -> u32 {
        self.nodes * self.cores_per_node * self.smt
    }

    /// Hardware threads per node.
    pub fn cpus_per_node(&self) -> u32 {
        self.cores_per_node * self.smt
    }

    /// Physical cores.
    pub fn cores(&self) -> u32 {
        self.nodes * self.cores_per_node
    }

    /// Checks every field: counts at least 1 and consistent, times finite
    /// and non-negative, speed positive.
    pub fn validate(&self) -> Result<(), MachineError> {
        let err = |s: String| Err(MachineError(format!("machine {:?}: {s}", self.name)));
        for (n, v) in [
            ("nodes", self.nodes),
            ("sockets", self.sockets),
            ("cores_per_node", self.cores_per_node),
            ("smt", self.smt),
            ("cores_per_llc", self.cores_per_llc),
        ] {
            if v == 0 {
                return err(format!("{n} must be at least 1"));
            }
        }
        let cpus = u64::from(self.nodes) * u64::from(self.cores_per_node) * u64::from(self.smt);
        if cpus > u64::from(MAX_CPUS) {
            return err(format!("{cpus} CPUs is more than {MAX_CPUS}"));
        }
        if self.smt > 2 {
            return err("smt must be 1 or 2".into());
        }
        if self.cores() % self.sockets != 0 {
            return err(format!(
                "{} cores do not divide over {} sockets",
                self.cores(),
                self.sockets
            ));
        }
        if !(self.core_ghz.is_finite() && self.core_ghz > 0.0 && self.core_ghz < 100.0) {
            return err(format!("core_ghz {} must be in (0, 100)", self.core_ghz));
        }
        if !(self.smt_yield.is_finite() && self.smt_yield >= 1.0 && self.smt_yield <= 2.0) {
            return err(format!("smt_yield {} must be in [1, 2]", self.smt_yield));
        }
        let l = self.latency_ns;
        for (n, v) in [
            ("latency_ns.same_core", l.same_core),
            ("latency_ns.same_llc", l.same_llc),
            ("latency_ns.same_node", l.same_node),
            ("latency_ns.other_node", l.other_node),
            ("latency_ns.other_socket", l.other_socket),
            ("atomic_rmw_ns", self.atomic_rmw_ns),
            ("wake_ns", self.wake_ns),
            ("reader_spin_ns", self.reader_spin_ns),
        ] {
            if !(v.is_finite() && (0.0..=1e7).contains(&v)) {
                return err(format!("{n} {v} must be between 0 and 1e7 ns"));
            }
        }
        for (n, v) in [
            ("exec_ns", self.exec_ns),
            ("fork_exec_ns", self.fork_exec_ns),
            ("self_execl_ns", self.self_execl_ns),
            ("model_exec_ns", self.model_exec_ns),
            ("pause_ns", self.pause_ns),
            ("yield_ns", self.yield_ns),
            ("futex_wake_ns", self.futex_wake_ns),
            ("unlock_wake_ns", self.unlock_wake_ns),
            ("clock_read_ns", self.clock_read_ns),
        ] {
            if let Some(v) = v {
                if !(v.is_finite() && v > 0.0 && v < 1e10) {
                    return err(format!("{n} {v} must be in (0, 1e10) ns"));
                }
            }
        }
        for (n, v) in [
            ("line_overlap", self.line_overlap),
            ("rmw_overlap", self.rmw_overlap),
        ] {
            if let Some(v) = v {
                if !(v.is_finite() && v > 0.0 && v <= 2.0) {
                    return err(format!("{n} {v} must be in (0, 2]"));
                }
            }
        }
        if let Some(k) = self.miss_slots {
            if !(1..=1024).contains(&k) {
                return err(format!("miss_slots {k} must be in 1..=1024"));
            }
        }
        let mut last = 0;
        for p in &self.speed_by_cpus {
            if p.cpus <= last || p.cpus > self.cpus() {
                return err(format!(
                    "speed_by_cpus: CPU counts must rise within 1..={}",
                    self.cpus()
                ));
            }
            if !(p.speed.is_finite() && p.speed > 0.0 && p.speed <= 2.0) {
                return err(format!(
                    "speed_by_cpus: speed {} must be in (0, 2]",
                    p.speed
                ));
            }
            last = p.cpus;
        }
        Ok(())
    }

    /// One `pause`: measured, or [`ASSUMED_PAUSE_CYCLES`] at this
    /// machine's clock.
    pub fn pause(&self) -> Cost {
        match self.pause_ns {
            Some(ns) => Cost { ns, assumed: None },
            None => Cost {
                ns: ASSUMED_PAUSE_CYCLES / self.core_ghz,
                assumed: Some(
                    "pause: 140 cycles (Intel's Skylake-SP and later figure), not measured",
                ),
            },
        }
    }

    /// One `sched_yield`: measured, or [`ASSUMED_YIELD_NS`].
    pub fn yield_cost(&self) -> Cost {
        match self.yield_ns {
            Some(ns) => Cost { ns, assumed: None },
            None => Cost {
                ns: ASSUMED_YIELD_NS,
                assumed: Some(
                    "sched_yield: 0.5 us (a system call and a scheduler pass), not measured",
                ),
            },
        }
    }

    /// The waker's cost of a wake-up: measured, or
    /// [`ASSUMED_FUTEX_WAKE_SHARE`] of [`Machine::wake_ns`].
    pub fn futex_wake(&self) -> Cost {
        match self.futex_wake_ns {
            Some(ns) => Cost { ns, assumed: None },
            None => Cost {
                ns: ASSUMED_FUTEX_WAKE_SHARE * self.wake_ns,
                assumed: Some("the waker's share of a wake-up: half of wake_ns, not measured"),
            },
        }
    }

    /// What a `parking_lot` unlock that wakes a parked thread costs the
    /// unlocker after it released the lock: the hand-off item measured
    /// under load ([`Machine::unlock_wake_ns`]), or else
    /// [`Machine::futex_wake`] (one waiter, quiet machine; the charge
    /// before the item existed). The measured item also contains the
    /// bucket and the queue walk, which the simulator charges line by
    /// line before the release: those few transfers are counted twice
    /// (about 0.1 us against the item's microseconds).
    pub fn unlock_wake(&self) -> Cost {
        match self.unlock_wake_ns {
            Some(ns) => Cost { ns, assumed: None },
            None => {
                let f = self.futex_wake();
                Cost {
                    ns: f.ns,
                    assumed: Some(f.assumed.unwrap_or(
                        "the unlocker's wake-up under load: not measured, futex_wake_ns (one waiter, quiet machine) taken",
                    )),
                }
            }
        }
    }

    /// What the unlocker of a `parking_lot` unlock that wakes a parked
    /// thread pays after the release ([`Machine::unlock_wake`]), less the
    /// fair-timeout clock read where the simulator charges that read
    /// before the release instead: the measured hand-off
    /// ([`Machine::unlock_wake_ns`]) timed the whole unlock, clock read
    /// included, so with [`Machine::clock_read_ns`] also measured the read
    /// moves from after the release to inside the held time (at least 0).
    /// The idle `futex_wake` (std's `unpark`, no clock read) and every
    /// description without the clock item are charged as before.
    pub fn unlock_wake_after_release(&self) -> Cost {
        let w = self.unlock_wake();
        match (self.unlock_wake_ns, self.clock_read_ns) {
            (Some(_), Some(clock)) => Cost {
                ns: (w.ns - clock).max(0.0),
                assumed: None,
            },
            _ => w,
        }
    }

    /// The cost of each further independent line transfer of one CPU
    /// (stores), as a fraction of a serial one: measured
    /// ([`Machine::line_overlap`], at most 1), or 1 (serial, the charge
    /// before it was measured) with the assumption named.
    pub fn line_overlap(&self) -> Overlap {
        Overlap::of(
            self.line_overlap,
            "line overlap: not measured, every transfer serial (1)",
        )
    }

    /// [`Machine::line_overlap`] for locked read-modify-writes.
    pub fn rmw_overlap(&self) -> Overlap {
        Overlap::of(
            self.rmw_overlap,
            "RMW overlap: not measured, every transfer serial (1)",
        )
    }

    /// The cost of each further transfer of a run of plain stores to
    /// independent lines (a touch's `stored` lines): the measured
    /// [`Machine::line_overlap`] (the calibration's stores timed to the
    /// fence that drains them are exactly such a run); else, where the
    /// description documents the core's [`Machine::miss_slots`], `1 /
    /// miss_slots` (the store buffer hands the ownership requests to that
    /// many fill buffers at once: n transfers of latency L take about
    /// L + (n - 1) L / slots); else 1 (serial).
    pub fn store_overlap(&self) -> Overlap {
        match (self.line_overlap, self.miss_slots) {
            (None, Some(k)) if k > 0 => Overlap {
                factor: 1.0 / f64::from(k),
                assumed: Some(
                    "store overlap: not measured, 1 / the core's documented fill buffers (miss_slots)",
                ),
            },
            _ => Overlap::of(
                self.line_overlap,
                "store overlap: not measured, every transfer serial (1)",
            ),
        }
    }

    /// Per-CPU speed of private work with `busy` CPUs running, relative to
    /// one alone: linear between the measured points of
    /// [`Machine::speed_by_cpus`] (1 at one CPU, the last point's speed
    /// beyond it); 1 when nothing was measured.
    pub fn speed_at(&self, busy: u32) -> f64 {
        let pts = &self.speed_by_cpus;
        if pts.is_empty() {
            return 1.0;
        }
        let mut prev = SpeedPoint {
            cpus: 1,
            speed: 1.0,
        };
        for &p in pts {
            if busy <= p.cpus {
                if p.cpus == prev.cpus {
                    return p.speed;
                }
                let f = f64::from(busy.saturating_sub(prev.cpus)) / f64::from(p.cpus - prev.cpus);
                return prev.speed + f * (p.speed - prev.speed);
            }
            prev = p;
        }
        prev.speed
    }

    /// Where CPU `cpu` is (see the module docs for the numbering).
    pub fn place(&self, cpu: u32) -> Place {
        let cpn = self.cpus_per_node();
        let node = cpu / cpn;
        let l = cpu % cpn;
        let thread = l / self.cores_per_node;
        let core = node * self.cores_per_node + l % self.cores_per_node;
        let cores_per_socket = (self.cores() / self.sockets).max(1);
        Place {
            node,
            core,
            thread,
            llc: core / self.cores_per_llc,
            socket: core / cores_per_socket,
        }
    }

    /// How far apart two places are.
    pub fn distance(a: &Place, b: &Place) -> Distance {
        if a.core == b.core {
            if a.thread == b.thread {
                Distance::Same
            } else {
                Distance::Core
            }
        } else if a.llc == b.llc {
            Distance::Llc
        } else if a.node == b.node {
            Distance::Node
        } else if a.socket == b.socket {
            Distance::OtherNode
        } else {
            Distance::OtherSocket
        }
    }

    /// The transfer latency of one line over `d`.
    pub fn latency(&self, d: Distance) -> f64 {
        let l = &self.latency_ns;
        match d {
            Distance::Same => 0.0,
            Distance::Core => l.same_core,
            Distance::Llc => l.same_llc,
            Distance::Node => l.same_node,
            Distance::OtherNode => l.other_node,
            Distance::OtherSocket => l.other_socket,
        }
    }

    /// The CPUs `n` copies of a benchmark run on, in the order the
    /// scheduler fills an idle machine: spread over nodes first, then over
    /// last-level caches, one thread per physical core before any SMT
    /// sibling. `n` is capped at [`Machine::cpus`].
    pub fn placement(&self, n: u32) -> Vec<u32> {
        let n = n.min(self.cpus());
        let cpn = self.cpus_per_node();
        let llcs_per_node = self.cores_per_node.div_ceil(self.cores_per_llc).max(1);
        let mut order = Vec::with_capacity(self.cpus() as usize);
        for thread in 0..self.smt {
            for j in 0..self.cores_per_llc {
                for llc in 0..llcs_per_node {
                    let core = llc * self.cores_per_llc + j;
                    if core >= self.cores_per_node {
                        continue;
                    }
                    for node in 0..self.nodes {
                        order.push(node * cpn + thread * self.cores_per_node + core);
                    }
                }
            }
        }
        order.truncate(n as usize);
        order
    }

    /// One last-level cache holds every CPU (one node, every core of it in
    /// one cache): where unpinned threads go is then Linux's scan for an
    /// idle CPU inside that cache ([`Machine::placement_from`]).
    pub fn single_llc(&self) -> bool {
        self.nodes == 1 && self.cores_per_llc >= self.cores_per_node
    }

    /// The CPUs `n` unpinned copies run on in a machine of one last-level
    /// cache when the scheduler's scan begins at CPU `first`: `first`,
    /// `first + 1`, ... wrapping at [`Machine::cpus`] (the kernel's
    /// `select_idle_cpu()` walks the cache's CPUs with
    /// `for_each_cpu_wrap()` from the one after the waker's and takes the
    /// first idle one, so threads started one after another by one thread
    /// land on consecutive CPUs; where that thread ran is anybody's).
    /// SMT siblings, where the machine has them, come after every core, as
    /// in [`Machine::placement`]. `n` is capped at [`Machine::cpus`].
    pub fn placement_from(&self, first: u32, n: u32) -> Vec<u32> {
        let n = n.min(self.cpus());
        let cores = self.cores_per_node.max(1);
        let mut order = Vec::with_capacity(self.cpus() as usize);
        for thread in 0..self.smt {
            for k in 0..cores {
                order.push(thread * cores + (first + k) % cores);
            }
        }
        order.truncate(n as usize);
        order
    }

    /// The CPUs `n` copies pinned in order run on, as a lock microbenchmark
    /// binds its threads: every core of node 0 (in order, so that the
    /// first copies share a last-level cache), then node 1's, and so on,
    /// SMT siblings after every physical core. `n` is capped at
    /// [`Machine::cpus`].
    pub fn placement_packed(&self, n: u32) -> Vec<u32> {
        let n = n.min(self.cpus());
        let cpn = self.cpus_per_node();
        let mut order = Vec::with_capacity(self.cpus() as usize);
        for thread in 0..self.smt {
            for node in 0..self.nodes {
                for core in 0..self.cores_per_node {
                    order.push(node * cpn + thread * self.cores_per_node + core);
                }
            }
        }
        order.truncate(n as usize);
        order
    }

    /// Reads a machine description from a JSON file and validates it.
    pub fn load(path: &Path) -> Result<Machine, MachineError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| MachineError(format!("cannot read {}: {e}", path.display())))?;
        Machine::from_json(&text).map_err(|e| MachineError(format!("{}: {}", path.display(), e.0)))
    }

    /// Parses and validates a machine description.
    pub fn from_json(text: &str) -> Result<Machine, MachineError> {
        let m: Machine = serde_json::from_str(text)
            .map_err(|e| MachineError(format!("not a machine description: {e}")))?;
        m.validate()?;
        Ok(m)
    }

    /// The descriptions shipped with the crate (`machines/*.json`), chosen
    /// before any prediction was compared with a published result.
    pub fn builtin() -> Vec<Machine> {
        BUILTIN
            .iter()
            .map(|(name, text)| {
                Machine::from_json(text)
                    .unwrap_or_else(|e| panic!("built-in machine {name} is invalid: {e}"))
            })
            .collect()
    }

    /// A built-in machine by name.
    pub fn by_name(name: &str) -> Option<Machine> {
        Machine::builtin().into_iter().find(|m| m.name == name)
    }
}

const BUILTIN: [(&str, &str); 4] = [
    ("hygon-384", include_str!("../machines/hygon-384.json")),
    ("spr-224", include_str!("../machines/spr-224.json")),
    ("emr-112", include_str!("../machines/emr-112.json")),
    ("device-16", include_str!("../machines/device-16.json")),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_machines_are_valid_and_sourced() {
        let ms = Machine::builtin();
        assert_eq!(ms.len(), 4);
        for m in &ms {
            m.validate().unwrap();
            for field in [
                "nodes",
                "sockets",
                "cores_per_node",
                "smt",
                "cores_per_llc",
                "core_ghz",
                "smt_yield",
                "latency_ns",
                "atomic_rmw_ns",
                "wake_ns",
                "reader_spin_ns",
            ] {
                assert!(
                    m.sources.get(field).is_some_and(|s| !s.trim().is_empty()),
                    "{}: no source for {field}",
                    m.name
                );
            }
        }
        assert_eq!(Machine::by_name("hygon-384").unwrap().cpus(), 384);
        assert_eq!(Machine::by_name("hygon-384").unwrap().nodes, 12);
        assert_eq!(Machine::by_name("spr-224").unwrap().cpus(), 224);
        assert_eq!(Machine::by_name("emr-112").unwrap().cores(), 112);
        assert_eq!(Machine::by_name("emr-112").unwrap().nodes, 1);
    }

    #[test]
    fn placement_spreads_nodes_then_cores_then_siblings() {
        let m = Machine::by_name("hygon-384").unwrap();
        let p = m.placement(384);
        let mut sorted = p.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 384, "every CPU once");
        let first12: Vec<u32> = p[..12].iter().map(|&c| m.place(c).node).collect();
        assert_eq!(first12, (0..12).collect::<Vec<_>>());
        // No SMT sibling before every physical core has a thread.
        assert!(p[..192].iter().all(|&c| m.place(c).thread == 0));
        assert!(p[192..].iter().all(|&c| m.place(c).thread == 1));
        // Packed: one cache, then one node, then the next node.
        let q = m.placement_packed(384);
        let mut sorted = q.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 384);
        assert!(q[..4].iter().all(|&c| m.place(c).llc == m.place(q[0]).llc));
        assert!(q[..16].iter().all(|&c| m.place(c).node == 0));
        assert_eq!(m.place(q[16]).node, 1);
        assert!(q[..192].iter().all(|&c| m.place(c).thread == 0));
    }

    #[test]
    fn distances_follow_the_hierarchy() {
        let m = Machine::by_name("hygon-384").unwrap();
        let a = m.place(0);
        assert_eq!(Machine::distance(&a, &m.place(0)), Distance::Same);
        assert_eq!(Machine::distance(&a, &m.place(16)), Distance::Core);
        assert_eq!(Machine::distance(&a, &m.place(1)), Distance::Llc);
        assert_eq!(Machine::distance(&a, &m.place(32)), Distance::OtherNode);
        assert_eq!(Machine::distance(&a, &m.place(383)), Distance::OtherSocket);
        let l = m.latency_ns;
        assert!(l.same_core <= l.same_llc && l.same_llc <= l.same_node);
        assert!(l.same_node <= l.other_node && l.other_node <= l.other_socket);
    }

    #[test]
    fn bad_descriptions_are_errors() {
        let mut m = Machine::by_name("spr-224").unwrap();
        m.nodes = 0;
        assert!(m.validate().is_err());
        let mut m = Machine::by_name("spr-224").unwrap();
        m.latency_ns.other_socket = f64::NAN;
        assert!(m.validate().is_err());
        let mut m = Machine::by_name("spr-224").unwrap();
        m.sockets = 3;
        assert!(m.validate().is_err());
        assert!(Machine::from_json("{").is_err());
        assert!(Machine::from_json("{\"name\": 1}").is_err());
    }
}
