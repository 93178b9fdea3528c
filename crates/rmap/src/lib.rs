//! File reverse maps (`i_mmap`): the Linux baseline, every proposed design,
//! and aspace's own, behind one trait.
//!
//! A reverse map holds, for one file, every mapping (VMA) of it: entries are
//! an inclusive page-offset [`Interval`] plus an opaque [`VmaId`]. Many
//! entries share identical intervals (every process maps `libc.so` at the
//! same offsets). Writers are `mmap`/`fork` ([`ReverseMap::insert`],
//! [`ReverseMap::insert_after`]) and `munmap`/exit ([`ReverseMap::remove`],
//! [`ReverseMap::remove_batch`]); readers are rmap walks
//! ([`ReverseMap::walk`]) that need the set stable while they run.
//!
//! # Designs
//!
//! | [`Design`] | module | structure |
//! |---|---|---|
//! | `linux_shared_line` | [`designs::linux_shared_line`] | one interval tree, one rwlock on the tree root's cache line (Linux < 6.5) |
//! | `linux` | [`designs::linux`] | the same, lock on its own line, batched removal (Linux today) |
//! | `numa_split` | [`designs::numa_split`] | one tree per NUMA node, one lock |
//! | `numa_locks` | [`designs::numa_locks`] | one tree and one lock per NUMA node |
//! | `sharded` | [`designs::sharded`] | one shard per 8 CPUs, inverted outer rwlock |
//! | `aspace` | [`designs::aspace`] | this crate's own: grouped identical intervals, centralised until contended, then per-CPU-group shards with a distributed outer lock |
//! | `aspace_central` | [`designs::aspace`] | ablation: `aspace`'s grouped tree under its one lock, never promoted |
//! | `exclude` | [`designs::exclude`] | a bound, not a design: the file keeps no reverse map (walks cannot be answered) |
//!
//! Every design is `Send + Sync`; each module's doc states its concurrency
//! contract, its memory cost, and how it maps a thread to a shard.
//!
//! # Beyond files: a general interval multimap
//!
//! [`IntervalMultimap<V>`] is the `aspace` design's group tree on its own,
//! single-threaded, with any value type: identical intervals coexist, one
//! chosen entry is removed through its handle in O(1), overlap queries,
//! insert-after ordering.
//!
//! ```
//! use rmap::{Interval, IntervalMultimap};
//!
//! // Sensor alarms over time windows (seconds); two alarms share a window.
//! let mut alarms = IntervalMultimap::new();
//! let hot = alarms.insert(Interval::new(10, 20)?, "temperature")?;
//! alarms.insert(Interval::new(10, 20)?, "pressure")?;
//! alarms.insert(Interval::new(30, 40)?, "humidity")?;
//! // Acknowledge one of the two identical windows.
//! alarms.remove(hot)?;
//! let at_15: Vec<_> = alarms.overlapping(Interval::new(15, 15)?).map(|(_, _, v)| *v).collect();
//! assert_eq!(at_15, ["pressure"]);
//! # Ok::<(), rmap::RmapError>(())
//! ```
//!
//! # Handles
//!
//! [`Handle`]s are `Copy` and name one entry of one map: the issuing map's
//! id, the shard, the arena slot and the slot's generation. A handle that was
//! already removed yields [`RmapError::UnknownHandle`]; a handle from another
//! map yields [`RmapError::ForeignHandle`]. Neither panics nor corrupts.
//!
//! # Testing
//!
//! ```text
//! cargo test -p aspace-rmap --release
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p aspace-rmap --release --test loom
//! ```
//!
//! The second command model-checks the `aspace` design's promotion and its
//! distributed outer lock, using loom's atomics and locks through the crate's
//! `sync` module.
//!
//! `scripts/miri.sh` runs every unit and integration test under Miri (where
//! a nightly toolchain has it). Miri refuses the `/sys` reads and the
//! `sched_getcpu` call of [`Topology::Os`], so under `cfg(miri)` it stands
//! for a synthetic machine of 2 nodes of 2 CPUs ([`topology`]).
//!
//! # Benchmarks
//!
//! `cargo bench -p aspace-rmap` (criterion), and the reusable churn runner in
//! [`bench`](mod@bench); results are in `crates/rmap/BENCHMARKS.md`.

#![warn(missing_docs)]

pub mod bench;
pub mod designs;
pub(crate) mod interval_tree;
pub mod multimap;
mod probe;
pub mod stats;
pub(crate) mod sync;
pub mod topology;
pub mod trace;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

pub use multimap::IntervalMultimap;
pub use stats::{CallSite, LockStats};
pub use topology::Topology;

/// Which lock the maps made from now on take (every design's locks: trees,
/// shards, outer locks). Correctness does not depend on it; how waiting
/// threads behave under contention does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum LockImpl {
    /// `parking_lot::RwLock` (the default): a few spins and yields, then
    /// the waiter parks; a release wakes a parked waiter, which must win
    /// the lock again.
    ParkingLot = 0,
    /// A lock that waits as Linux's `rw_semaphore` does: writers spin in an
    /// MCS queue while the lock is held (only the queue's head polls the
    /// lock word), then sleep; a sleeper that waited 4 ms is handed the
    /// lock. For measuring the designs under the kernel's lock behaviour.
    Rwsem = 1,
}

impl LockImpl {
    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            LockImpl::ParkingLot => "parking_lot",
            LockImpl::Rwsem => "rwsem",
        }
    }
}

/// Sets the lock every map made from now on takes; returns the previous
/// setting. Maps already made keep theirs. Under `cfg(loom)` every lock is
/// loom's.
pub fn set_lock_impl(l: LockImpl) -> LockImpl {
    sync::set_lock_impl(l)
}

/// The lock maps made now take ([`set_lock_impl`]).
pub fn lock_impl() -> LockImpl {
    sync::lock_impl()
}

/// The bare interval tree, for the instruction-count harness only.
#[doc(hidden)]
pub use interval_tree::bare as __bare_interval_tree;

/// This crate's README, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct CrateReadmeDoctests;

/// Opaque id of a VMA (the mapping), chosen by the caller.
pub type VmaId = u64;

/// Inclusive page-offset interval `[first, last]`.
///
/// Construct with [`Interval::new`], which rejects `first > last`. The fields
/// are public, so every map operation validates its intervals again and
/// returns [`RmapError::InvertedInterval`] for an inverted one.
///
/// ```
/// use rmap::{Interval, RmapError};
///
/// let text = Interval::new(0, 0x1f)?;
/// assert!(text.overlaps(&Interval::new(0x1f, 0x40)?)); // shares page 0x1f
/// assert!(!text.overlaps(&Interval::new(0x20, 0x40)?));
/// assert!(Interval::FULL.overlaps(&text));
/// assert_eq!(
///     Interval::new(9, 3),
///     Err(RmapError::InvertedInterval { first: 9, last: 3 })
/// );
/// # Ok::<(), RmapError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Interval {
    /// First page offset (inclusive).
    pub first: u64,
    /// Last page offset (inclusive).
    pub last: u64,
}

impl Interval {
    /// `[first, last]`, or [`RmapError::InvertedInterval`] when `first > last`.
    pub fn new(first: u64, last: u64) -> Result<Interval, RmapError> {
        if first > last {
            Err(RmapError::InvertedInterval { first, last })
        } else {
            Ok(Interval { first, last })
        }
    }

    /// The whole page-offset space `[0, u64::MAX]`.
    pub const FULL: Interval = Interval {
        first: 0,
        last: u64::MAX,
    };

    /// True when the two intervals share at least one page offset.
    #[inline]
    pub fn overlaps(&self, other: &Interval) -> bool {
        self.first <= other.last && other.first <= self.last
    }

    #[inline]
    pub(crate) fn validate(self) -> Result<Interval, RmapError> {
        Interval::new(self.first, self.last)
    }
}

/// Opaque handle to one entry, returned by insert. `Copy`; carries the id of
/// the map that issued it so that a foreign handle is detected.
///
/// A handle names one entry even among identical intervals, so removing it
/// removes exactly that entry; using it again afterwards, or on another
/// map, is an error and changes nothing.
///
/// ```
/// use rmap::{Design, Interval, RmapError, Topology};
///
/// let libc = Design::Linux.build(&Topology::Os);
/// let iv = Interval::new(0, 0x1c)?;
/// // Two processes map the same pages: identical intervals, distinct handles.
/// let a = libc.insert(iv, 1)?;
/// let b = libc.insert(iv, 2)?;
/// assert_ne!(a, b);
/// libc.remove(a)?; // exactly process 1's entry
/// assert_eq!(libc.remove(a), Err(RmapError::UnknownHandle)); // stale now
/// let other = Design::Linux.build(&Topology::Os);
/// assert_eq!(other.remove(b), Err(RmapError::ForeignHandle));
/// let mut left = Vec::new();
/// libc.walk(iv, &mut |_, id| left.push(id));
/// assert_eq!(left, [2]);
/// # Ok::<(), RmapError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Handle {
    map: u32,
    shard: u32,
    slot: u32,
    gen: u32,
}

impl Handle {
    #[inline]
    pub(crate) fn new(map: u32, shard: u32, slot: u32, gen: u32) -> Handle {
        Handle {
            map,
            shard,
            slot,
            gen,
        }
    }
    #[inline]
    pub(crate) fn map(self) -> u32 {
        self.map
    }
    /// The shard (independently locked part) the entry lives in: 0 for a
    /// single-lock map; for the NUMA designs the node; for the sharded
    /// designs the shard index.
    #[inline]
    pub fn shard(self) -> u32 {
        self.shard
    }
    #[inline]
    pub(crate) fn slot(self) -> u32 {
        self.slot
    }
    #[inline]
    pub(crate) fn gen(self) -> u32 {
        self.gen
    }
}

/// What a map operation can reject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RmapError {
    /// `first > last`.
    InvertedInterval {
        /// The interval's first offset.
        first: u64,
        /// The interval's last offset.
        last: u64,
    },
    /// The handle names no live entry of this map (already removed).
    UnknownHandle,
    /// The handle was issued by another map.
    ForeignHandle,
    /// The map keeps no reverse map (the `exclude` bound): it cannot say
    /// which entries overlap a range.
    NotTracked,
}

impl fmt::Display for RmapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RmapError::InvertedInterval { first, last } => {
                write!(f, "inverted interval [{first:#x}, {last:#x}]: first > last")
            }
            RmapError::UnknownHandle => {
                f.write_str("handle names no live entry of this map (removed already?)")
            }
            RmapError::ForeignHandle => f.write_str("handle was issued by another map"),
            RmapError::NotTracked => f.write_str(
                "this map keeps no reverse map (the exclude bound) and cannot answer a walk",
            ),
        }
    }
}

impl std::error::Error for RmapError {}

/// A file's reverse map. See the crate docs and each design's module docs
/// for the concurrency contract each implementation gives.
///
/// The calls an address-space model makes, in one example: `exec` links a
/// program's mappings of the file, `fork` links the child's copies right
/// after the parent's, an rmap walk finds every mapping of a page, `exit`
/// unlinks.
///
/// ```
/// use rmap::{Design, Interval, ReverseMap, Topology};
///
/// let map = Design::Sharded.build_arc(&Topology::Emulated { nodes: 2, cpus_per_node: 8 });
/// // exec: a program's two mappings of the file, linked in one lock hold.
/// let segs = [(Interval::new(0, 0x27)?, 10), (Interval::new(0x28, 0x1a0)?, 11)];
/// let mut parent = Vec::new();
/// map.insert_batch(&segs, &mut parent)?;
/// // fork: the child's copies (ids + 100) go right after the parent's.
/// let items: Vec<_> = parent.iter().zip(&segs).map(|(&h, &(iv, id))| (h, iv, id + 100)).collect();
/// let mut child = Vec::new();
/// map.insert_after_batch(&items, &mut child)?;
/// assert_eq!(map.len(), 4);
/// // An rmap walk over one page: every mapping of it, each once.
/// let mut ids = Vec::new();
/// map.walk(Interval::new(0x30, 0x30)?, &mut |_, id| ids.push(id));
/// ids.sort_unstable();
/// assert_eq!(ids, [11, 111]);
/// // exit: the child's mappings unlinked in one hold.
/// map.remove_batch(&child)?;
/// assert_eq!(map.len(), 2);
/// # Ok::<(), rmap::RmapError>(())
/// ```
pub trait ReverseMap: Send + Sync {
    /// Which design this is.
    fn design(&self) -> Design;
    /// Adds `(iv, vma)`; the handle removes it later.
    fn insert(&self, iv: Interval, vma: VmaId) -> Result<Handle, RmapError>;
    /// Adds `(iv, vma)` next to `parent` (fork). When `iv` differs from the
    /// parent's interval the entry is inserted at its ordinary place.
    fn insert_after(&self, parent: Handle, iv: Interval, vma: VmaId) -> Result<Handle, RmapError>;
    /// Removes one entry.
    fn remove(&self, h: Handle) -> Result<(), RmapError>;
    /// One lock hold where the design has locks. All-or-nothing on error.
    /// Appends the new handles to `out` in the order of `items`.
    fn insert_batch(
        &self,
        items: &[(Interval, VmaId)],
        out: &mut Vec<Handle>,
    ) -> Result<(), RmapError>;
    /// `Ok` when `h` names a live entry of this map; the error
    /// [`ReverseMap::remove`] would return otherwise. Takes the entry's
    /// lock shared (counted as a hold).
    fn check_handle(&self, h: Handle) -> Result<(), RmapError>;
    /// Fork's batch: `insert_after` for each `(parent, iv, vma)`, appending
    /// the new handles to `out` in order. All-or-nothing: every interval and
    /// every parent is validated before anything is inserted.
    ///
    /// Every design in this crate overrides it with one lock hold per batch
    /// (one per involved shard), the batched call pattern; a caller that
    /// wants Linux's `dup_mmap` pattern (one hold per VMA) calls
    /// [`ReverseMap::insert_after`] per item. This default, for other
    /// implementations, validates every item first, then inserts one at a
    /// time; if a parent vanished meanwhile (the caller broke the contract
    /// that parents stay live), it removes what it inserted and returns the
    /// insert's error, or the rollback's if that failed too.
    fn insert_after_batch(
        &self,
        items: &[(Handle, Interval, VmaId)],
        out: &mut Vec<Handle>,
    ) -> Result<(), RmapError> {
        for &(parent, iv, _) in items {
            iv.validate()?;
            self.check_handle(parent)?;
        }
        let start = out.len();
        for &(parent, iv, vma) in items {
            match self.insert_after(parent, iv, vma) {
                Ok(h) => out.push(h),
                Err(e) => {
                    // Undo what this batch inserted, so nothing is half done.
                    let added: Vec<Handle> = out.drain(start..).collect();
                    self.remove_batch(&added)?;
                    return Err(e);
                }
            }
        }
        Ok(())
    }
    /// One lock hold where the design has locks. Validates every handle first
    /// (a handle twice in one batch is [`RmapError::UnknownHandle`]): all-or-nothing.
    fn remove_batch(&self, handles: &[Handle]) -> Result<(), RmapError>;
    /// Stable walk: `f` sees every entry overlapping `range` exactly once; no
    /// insert or remove runs meanwhile. `f` must not call back into this map
    /// except for [`ReverseMap::len`] (which never locks); doing so may deadlock.
    fn walk(&self, range: Interval, f: &mut dyn FnMut(Interval, VmaId));
    /// [`ReverseMap::walk`] that says when the map cannot answer: the
    /// `exclude` bound returns [`RmapError::NotTracked`]; every design
    /// walks and returns `Ok`.
    fn try_walk(
        &self,
        range: Interval,
        f: &mut dyn FnMut(Interval, VmaId),
    ) -> Result<(), RmapError> {
        self.walk(range, f);
        Ok(())
    }
    /// Cheaper walk with a weaker contract (documented per design); default = walk.
    fn walk_concurrent(&self, range: Interval, f: &mut dyn FnMut(Interval, VmaId)) {
        self.walk(range, f)
    }
    /// Entries now. Never takes a lock; exact when no modifier is running.
    fn len(&self) -> usize;
    /// `len() == 0`.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes this file's map occupies now: the map's own struct plus the
    /// capacity of every heap structure it owns.
    fn memory_bytes(&self) -> usize;
    /// Lock acquisitions, contended acquisitions, and shards now.
    fn stats(&self) -> LockStats;
}

/// The reverse-map designs this crate implements, from the Linux baselines
/// to the proposals on the kernel lists and this crate's own. Each builds a
/// [`ReverseMap`]; [`Design::ALL`] lists them baseline first.
///
/// ```
/// use rmap::{Design, Interval, Topology};
///
/// let d: Design = "aspace".parse().unwrap();
/// assert_eq!(d, Design::Aspace);
/// let map = d.build_arc(&Topology::Emulated { nodes: 2, cpus_per_node: 4 });
/// let h = map.insert(Interval { first: 0, last: 0x25 }, 7).unwrap();
/// let mut seen = Vec::new();
/// map.walk(Interval { first: 0x10, last: 0x10 }, &mut |_, id| seen.push(id));
/// assert_eq!(seen, [7]);
/// map.remove(h).unwrap();
/// assert!(map.is_empty());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Design {
    /// Linux before 2023: rwlock and tree root on one cache line.
    LinuxSharedLine,
    /// Linux today: lock on its own line, batched removal.
    Linux,
    /// One tree per NUMA node under one lock.
    NumaSplit,
    /// One tree and one lock per NUMA node.
    NumaLocks,
    /// Shards per 8 CPUs under an inverted outer lock.
    Sharded,
    /// Starts as one central tree and lock (no cost on files that are never
    /// contended) and promotes itself to per-node shards once contention is
    /// seen.
    Aspace,
    /// Ablation of `aspace`: grouped identical intervals under one lock that
    /// never promotes (grouping without sharding).
    AspaceCentral,
    /// A bound, not a design: the file keeps no reverse map at all (the
    /// reference ceiling a 2026 proposal used for `libc.so` and `ld.so`).
    /// Inserts and removes share nothing; walks cannot be answered
    /// ([`RmapError::NotTracked`] from [`ReverseMap::try_walk`]).
    Exclude,
}

impl Design {
    /// Every design that keeps a reverse map, baseline first (ablations
    /// included; the `exclude` bound is in [`Design::BOUNDS`]).
    pub const ALL: [Design; 7] = [
        Design::LinuxSharedLine,
        Design::Linux,
        Design::NumaSplit,
        Design::NumaLocks,
        Design::Sharded,
        Design::Aspace,
        Design::AspaceCentral,
    ];

    /// Reference bounds that are not designs: they keep no reverse map.
    pub const BOUNDS: [Design; 1] = [Design::Exclude];

    /// [`Design::ALL`] followed by [`Design::BOUNDS`].
    pub const EVERY: [Design; 8] = [
        Design::LinuxSharedLine,
        Design::Linux,
        Design::NumaSplit,
        Design::NumaLocks,
        Design::Sharded,
        Design::Aspace,
        Design::AspaceCentral,
        Design::Exclude,
    ];

    /// True for a bound that is not a design (`exclude`): it keeps no
    /// reverse map, so it cannot answer walks.
    pub fn is_bound(self) -> bool {
        matches!(self, Design::Exclude)
    }

    /// The design's name (also its module name).
    pub fn name(self) -> &'static str {
        match self {
            Design::LinuxSharedLine => "linux_shared_line",
            Design::Linux => "linux",
            Design::NumaSplit => "numa_split",
            Design::NumaLocks => "numa_locks",
            Design::Sharded => "sharded",
            Design::Aspace => "aspace",
            Design::AspaceCentral => "aspace_central",
            Design::Exclude => "exclude",
        }
    }

    /// The shard (lock group) a thread running on CPU `cpu` uses in this
    /// design built for `topo`, by the design's own rule: `sharded`'s
    /// `cpu / 8` group, the NUMA designs' node, `aspace`'s shard once
    /// promoted (`cpu * shards / cpus`). `None` for a design of one lock
    /// (`linux`, `linux_shared_line`, `aspace_central`) and for the
    /// `exclude` bound. Lets a bench say how many shards its threads
    /// covered from the CPUs they ran on.
    pub fn shard_of_cpu(self, topo: &Topology, cpu: u32) -> Option<u32> {
        let cpus = topo.cpus().max(1);
        let cpu = cpu % cpus;
        match self {
            Design::Sharded => {
                let per = designs::sharded::CPUS_PER_SHARD;
                Some((cpu / per) % cpus.div_ceil(per).max(1))
            }
            Design::NumaSplit | Design::NumaLocks => Some(topo.node_of(cpu)),
            Design::Aspace => {
                let shards = u64::from(designs::aspace::shard_count(cpus));
                Some(((u64::from(cpu) * shards / u64::from(cpus)).min(shards - 1)) as u32)
            }
            Design::LinuxSharedLine | Design::Linux | Design::AspaceCentral | Design::Exclude => {
                None
            }
        }
    }

    /// A new, empty map of this design.
    pub fn build(self, topo: &Topology) -> Box<dyn ReverseMap> {
        match self {
            Design::LinuxSharedLine => Box::new(designs::linux_shared_line::LinuxSharedLine::new()),
            Design::Linux => Box::new(designs::linux::Linux::new()),
            Design::NumaSplit => Box::new(designs::numa_split::NumaSplit::new(topo.clone())),
            Design::NumaLocks => Box::new(designs::numa_locks::NumaLocks::new(topo.clone())),
            Design::Sharded => Box::new(designs::sharded::Sharded::new(topo.clone())),
            Design::Aspace => Box::new(designs::aspace::Aspace::new(topo.clone())),
            Design::AspaceCentral => Box::new(designs::aspace::Aspace::new_central(topo.clone())),
            Design::Exclude => Box::new(designs::exclude::Exclude::new()),
        }
    }

    /// Like [`Design::build`], shareable across threads.
    pub fn build_arc(self, topo: &Topology) -> Arc<dyn ReverseMap> {
        Arc::from(self.build(topo))
    }
}

impl fmt::Display for Design {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of [`Design::from_str`]: names the valid designs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownDesign(pub String);

impl fmt::Display for UnknownDesign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown design {:?}; valid designs: ", self.0)?;
        for (i, d) in Design::EVERY.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(d.name())?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownDesign {}

impl FromStr for Design {
    type Err = UnknownDesign;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Design::EVERY
            .into_iter()
            .find(|d| d.name() == s.trim())
            .ok_or_else(|| UnknownDesign(s.to_string()))
    }
}

/// A fresh map id (never 0), so that handles of different maps differ.
pub(crate) fn next_map_id() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(1);
    // Relaxed: only uniqueness matters.
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    if id == 0 {
        NEXT.fetch_add(1, Ordering::Relaxed)
    } else {
        id
    }
}

/// Checks a batch of handles for foreign ones and duplicates.
pub(crate) fn precheck_batch(map: u32, handles: &[Handle]) -> Result<(), RmapError> {
    if handles.iter().any(|h| h.map != map) {
        return Err(RmapError::ForeignHandle);
    }
    let dup = if handles.len() <= 16 {
        handles
            .iter()
            .enumerate()
            .any(|(i, h)| handles[..i].contains(h))
    } else {
        let mut v: Vec<(u32, u32)> = handles.iter().map(|h| (h.shard, h.slot)).collect();
        v.sort_unstable();
        v.windows(2).any(|w| w[0] == w[1])
    };
    if dup {
        Err(RmapError::UnknownHandle)
    } else {
        Ok(())
    }
}

/// Validates every interval of a batch.
pub(crate) fn precheck_items(items: &[(Interval, VmaId)]) -> Result<(), RmapError> {
    for (iv, _) in items {
        iv.validate()?;
    }
    Ok(())
}
