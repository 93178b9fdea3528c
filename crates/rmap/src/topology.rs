//! Which CPU and NUMA node the calling thread runs on.
//!
//! [`Topology::Os`] asks the kernel: `sched_getcpu(3)` (the vDSO, no system
//! call) for the CPU, and for the node the same CPU looked up in a table
//! read once from `/sys/devices/system/node/node<N>/cpulist`, so every
//! design pays the same for "where am I" (no design makes a `getcpu(2)`
//! system call); one node where sysfs is absent. [`Topology::Emulated`] numbers threads in the order of their
//! first call and deals them out round-robin over the nodes: thread `k`
//! runs on node `k % nodes`, on that node's CPU `(k / nodes) % cpus_per_node`
//! (so node = cpu / cpus_per_node). Consecutive threads land on different
//! nodes, which is what exercises the NUMA designs on a one-node machine
//! with a handful of threads; dealing CPU ids in order would put the first
//! `cpus_per_node` threads all on node 0.
//!
//! Under Miri (`cfg(miri)`), which refuses both the `/sys` reads (isolation)
//! and the `sched_getcpu` foreign call, [`Topology::Os`] is a synthetic
//! machine of 2 nodes of 2 CPUs each: a thread's CPU comes from the same
//! per-thread counter as [`Topology::Emulated`] (thread `k` on node `k % 2`,
//! CPU `(k % 2) * 2 + (k / 2) % 2`), so the NUMA and sharded designs still
//! spread threads over more than one node and shard when Miri checks them.

use std::str::FromStr;
use std::sync::OnceLock;

/// How threads map to CPUs and NUMA nodes.
///
/// ```
/// use rmap::Topology;
///
/// // An emulated 2-node machine with 4 CPUs per node.
/// let t: Topology = "2x4".parse()?;
/// assert_eq!((t.nodes(), t.cpus()), (2, 8));
/// assert_eq!(t.to_string(), "2x4");
/// // A thread gets its CPU at its first call; its node follows from it.
/// let (cpu, node) = (t.current_cpu(), t.current_node());
/// assert!(cpu < 8 && node == cpu / 4);
/// assert!("0x4".parse::<Topology>().is_err());
/// // The machine's own topology.
/// let os = Topology::detect();
/// assert!(os.current_cpu() < os.cpus() && os.current_node() < os.nodes());
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Topology {
    /// Ask the operating system (under Miri: a synthetic machine of 2
    /// nodes of 2 CPUs, see the [module docs](crate::topology)).
    #[default]
    Os,
    /// `nodes` nodes of `cpus_per_node` CPUs each; threads get CPU ids
    /// round-robin at their first use. A zero in either field counts as 1,
    /// and the counts are capped at [`MAX_EMULATED_CPUS`] (designs allocate
    /// per node and per CPU group); [`Topology::parse`] rejects all three.
    Emulated {
        /// NUMA nodes.
        nodes: u32,
        /// CPUs per node.
        cpus_per_node: u32,
    },
}

/// The most CPUs (and nodes) an emulated topology has: designs keep state
/// per node and per CPU group, so an absurd topology would exhaust memory.
pub const MAX_EMULATED_CPUS: u32 = 1 << 16;

/// Under Miri: the nodes of the synthetic machine [`Topology::Os`] stands for.
#[cfg(miri)]
const MIRI_NODES: u32 = 2;
/// Under Miri: CPUs per node of the synthetic machine.
#[cfg(miri)]
const MIRI_CPUS_PER_NODE: u32 = 2;

#[cfg(miri)]
fn os_nodes() -> u32 {
    MIRI_NODES
}

#[cfg(miri)]
fn os_cpus() -> u32 {
    MIRI_NODES * MIRI_CPUS_PER_NODE
}

/// Under Miri: the calling thread's CPU on the synthetic machine, dealt out
/// as [`Topology::Emulated`] deals them (round-robin over the nodes).
#[cfg(miri)]
fn os_cpu() -> u32 {
    let k = emulated_thread_id();
    (k % MIRI_NODES) * MIRI_CPUS_PER_NODE + (k / MIRI_NODES) % MIRI_CPUS_PER_NODE
}

/// Under Miri: CPU -> node of the synthetic machine (CPUs numbered node by
/// node).
#[cfg(miri)]
fn cpu_nodes() -> &'static [u32] {
    static MAP: OnceLock<Vec<u32>> = OnceLock::new();
    MAP.get_or_init(|| (0..os_cpus()).map(|c| c / MIRI_CPUS_PER_NODE).collect())
}

#[cfg(not(miri))]
fn os_nodes() -> u32 {
    static NODES: OnceLock<u32> = OnceLock::new();
    *NODES.get_or_init(|| {
        let Ok(dir) = std::fs::read_dir("/sys/devices/system/node") else {
            return 1;
        };
        let n = dir
            .filter_map(|e| e.ok())
            .filter(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.strip_prefix("node").is_some_and(|rest| {
                    !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit())
                })
            })
            .count() as u32;
        n.max(1)
    })
}

#[cfg(not(miri))]
fn os_cpus() -> u32 {
    static CPUS: OnceLock<u32> = OnceLock::new();
    *CPUS.get_or_init(|| {
        // SAFETY: sysconf has no preconditions; it returns -1 on error.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
        if n > 0 {
            n as u32
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
        }
    })
}

#[cfg(not(miri))]
fn os_cpu() -> u32 {
    // SAFETY: sched_getcpu has no preconditions; it returns -1 on error.
    let c = unsafe { libc::sched_getcpu() };
    if c < 0 {
        0
    } else {
        c as u32
    }
}

/// CPU -> node, read once from `/sys/devices/system/node/node<N>/cpulist`
/// (CPUs not listed, or no sysfs: node 0). Lets every design find its node
/// from the vDSO's `sched_getcpu` instead of a `getcpu` system call.
#[cfg(not(miri))]
fn cpu_nodes() -> &'static [u32] {
    static MAP: OnceLock<Vec<u32>> = OnceLock::new();
    MAP.get_or_init(|| {
        let mut map = vec![0u32; os_cpus() as usize];
        let Ok(dir) = std::fs::read_dir("/sys/devices/system/node") else {
            return map;
        };
        for e in dir.filter_map(|e| e.ok()) {
            let name = e.file_name();
            let Some(node) = name
                .to_str()
                .and_then(|n| n.strip_prefix("node"))
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(list) = std::fs::read_to_string(e.path().join("cpulist")) else {
                continue;
            };
            for cpu in parse_cpulist(&list) {
                if let Some(slot) = map.get_mut(cpu as usize) {
                    *slot = node;
                }
            }
        }
        map
    })
}

/// Parses a sysfs CPU list such as `"0-3,8,10-11"`; malformed parts are
/// skipped.
#[cfg_attr(miri, allow(dead_code))]
fn parse_cpulist(s: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
            if a <= b && b - a < MAX_EMULATED_CPUS * 64 {
                out.extend(a..=b);
            }
        }
    }
    out
}

#[inline]
fn os_node() -> u32 {
    let cpu = os_cpu() as usize;
    cpu_nodes().get(cpu).copied().unwrap_or(0)
}

#[cfg(not(loom))]
pub(crate) fn emulated_thread_id() -> u32 {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    thread_local!(static ID: Cell<Option<u32>> = const { Cell::new(None) });
    ID.with(|id| match id.get() {
        Some(i) => i,
        None => {
            // Relaxed: only uniqueness of the ticket matters.
            let i = NEXT.fetch_add(1, Ordering::Relaxed);
            id.set(Some(i));
            i
        }
    })
}

#[cfg(loom)]
pub(crate) fn emulated_thread_id() -> u32 {
    use loom::sync::atomic::{AtomicU32, Ordering};
    use std::cell::Cell;
    loom::lazy_static! { static ref NEXT: AtomicU32 = AtomicU32::new(0); }
    loom::thread_local!(static ID: Cell<Option<u32>> = Cell::new(None));
    ID.with(|id| match id.get() {
        Some(i) => i,
        None => {
            // Relaxed: only uniqueness of the ticket matters.
            let i = NEXT.fetch_add(1, Ordering::Relaxed);
            id.set(Some(i));
            i
        }
    })
}

impl Topology {
    /// The operating system's topology.
    pub fn detect() -> Topology {
        Topology::Os
    }

    /// Parses `"os"` or `"NxM"` (N nodes of M CPUs, e.g. `"12x32"`).
    pub fn parse(s: &str) -> Result<Topology, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("os") {
            return Ok(Topology::Os);
        }
        let (n, c) = s.split_once(['x', 'X']).ok_or_else(|| {
            format!("topology {s:?}: expected \"os\" or NODESxCPUS_PER_NODE such as \"12x32\"")
        })?;
        let nodes: u32 = n
            .trim()
            .parse()
            .map_err(|e| format!("topology {s:?}: nodes: {e}"))?;
        let cpus_per_node: u32 = c
            .trim()
            .parse()
            .map_err(|e| format!("topology {s:?}: cpus per node: {e}"))?;
        if nodes == 0 || cpus_per_node == 0 {
            return Err(format!(
                "topology {s:?}: nodes and cpus per node must be at least 1"
            ));
        }
        if nodes
            .checked_mul(cpus_per_node)
            .map_or(true, |n| n > MAX_EMULATED_CPUS)
        {
            return Err(format!(
                "topology {s:?}: at most {MAX_EMULATED_CPUS} CPUs can be emulated"
            ));
        }
        Ok(Topology::Emulated {
            nodes,
            cpus_per_node,
        })
    }

    /// Number of NUMA nodes (at least 1).
    pub fn nodes(&self) -> u32 {
        match self {
            Topology::Os => os_nodes(),
            Topology::Emulated { nodes, .. } => (*nodes).clamp(1, MAX_EMULATED_CPUS),
        }
    }

    /// Number of CPUs (at least 1); CPU ids are below it.
    pub fn cpus(&self) -> u32 {
        match self {
            Topology::Os => os_cpus(),
            Topology::Emulated {
                nodes,
                cpus_per_node,
            } => (*nodes)
                .max(1)
                .saturating_mul((*cpus_per_node).max(1))
                .min(MAX_EMULATED_CPUS),
        }
    }

    /// The calling thread's CPU, in `0..cpus()`.
    #[inline]
    pub fn current_cpu(&self) -> u32 {
        match self {
            Topology::Os => os_cpu() % os_cpus(),
            Topology::Emulated { cpus_per_node, .. } => {
                let (nodes, per) = (self.nodes(), (*cpus_per_node).max(1));
                let k = emulated_thread_id();
                let cpu = (k % nodes) as u64 * per as u64 + ((k / nodes) % per) as u64;
                // Below nodes * per, which cpus() caps only above 2^16.
                (cpu as u32).min(self.cpus() - 1)
            }
        }
    }

    /// The NUMA node of CPU `cpu` (a CPU id of this topology; ids past
    /// [`Topology::cpus`] wrap as [`Topology::current_cpu`]'s do): what
    /// [`Topology::current_node`] answers for a thread running on it.
    pub fn node_of(&self, cpu: u32) -> u32 {
        match self {
            Topology::Os => {
                if os_nodes() == 1 {
                    0
                } else {
                    let cpu = (cpu % os_cpus()) as usize;
                    cpu_nodes().get(cpu).copied().unwrap_or(0) % os_nodes()
                }
            }
            Topology::Emulated { cpus_per_node, .. } => {
                ((cpu % self.cpus()) / (*cpus_per_node).max(1)).min(self.nodes() - 1)
            }
        }
    }

    /// The calling thread's NUMA node, in `0..nodes()`.
    #[inline]
    pub fn current_node(&self) -> u32 {
        match self {
            Topology::Os => {
                if os_nodes() == 1 {
                    0
                } else {
                    os_node() % os_nodes()
                }
            }
            Topology::Emulated { cpus_per_node, .. } => {
                (self.current_cpu() / (*cpus_per_node).max(1)).min(self.nodes() - 1)
            }
        }
    }
}

impl FromStr for Topology {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Topology::parse(s)
    }
}

impl std::fmt::Display for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Topology::Os => f.write_str("os"),
            Topology::Emulated {
                nodes,
                cpus_per_node,
            } => write!(f, "{nodes}x{cpus_per_node}"),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn cpulists() {
        assert_eq!(parse_cpulist("0-3,8,10-11\n"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpulist(""), Vec::<u32>::new());
        assert_eq!(parse_cpulist("5-2,x,7"), vec![7]);
        assert!(cpu_nodes()
            .iter()
            .all(|&n| n < os_nodes().max(1) || os_nodes() == 1));
    }

    #[test]
    fn parse_and_emulate() {
        assert_eq!(
            Topology::parse("12x32").unwrap(),
            Topology::Emulated {
                nodes: 12,
                cpus_per_node: 32
            }
        );
        assert_eq!(Topology::parse("os").unwrap(), Topology::Os);
        assert!(Topology::parse("0x4").is_err());
        assert!(Topology::parse("banana").is_err());
        let t = Topology::parse("3x2").unwrap();
        assert_eq!(t.cpus(), 6);
        let cpus: Vec<u32> = (0..6)
            .map(|_| {
                let t = t.clone();
                std::thread::spawn(move || (t.current_cpu(), t.current_node()))
                    .join()
                    .unwrap()
            })
            .map(|(c, n)| {
                assert_eq!(n, c / 2);
                c
            })
            .collect();
        let mut sorted = cpus.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert!(sorted.len() >= 2, "round-robin spreads threads: {cpus:?}");
        let os = Topology::detect();
        assert!(os.current_cpu() < os.cpus());
        assert!(os.current_node() < os.nodes());
    }
}
