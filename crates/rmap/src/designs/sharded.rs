//! `sharded`: one shard per group of about 8 CPUs, under an outer lock with
//! inverted meaning.
//!
//! This is what the reviewers of the NUMA split proposed (Mateusz Guzik,
//! April 2026): partition "per some core count (not just by numa
//! awareness)", and where something needs a fully stable state, "another rw
//! lock can be slapped around this, creating locking order read lock ->
//! per-subset write lock"; the consumer that needs stability write-locks
//! it. He predicted it "will suffer scalability due to the read locking":
//! every modifier still writes the outer lock's one shared word.
//!
//! # Contract
//!
//! * A modifier takes the outer lock shared, then its shard's lock
//!   exclusive (a batch removal spanning shards locks each, ascending);
//!   linearizable.
//! * [`walk`](crate::ReverseMap::walk) takes the outer lock exclusive: no
//!   modifier is inside, so the walk is a stable snapshot; all modifiers
//!   block meanwhile.
//! * [`walk_concurrent`](crate::ReverseMap::walk_concurrent) skips the outer
//!   lock and read-locks one shard at a time: per-shard snapshots taken at
//!   different moments (as in `numa_locks`).
//! * Thread-to-shard mapping: shard = [`Topology::current_cpu`] / 8, with
//!   `ceil(cpus / 8)` shards; `insert_after` goes to the parent's shard,
//!   removals to the handle's.
//!
//! # Memory
//!
//! The struct (outer lock and its counters on one padded line), one
//! 128-byte padded shard per 8 CPUs, and 48 bytes per arena slot.

use super::parts::{ByCpuGroup, Composed, InvertedRw, Partitioned};
use crate::{Design, Handle, Interval, RmapError, Topology, VmaId};

/// CPUs per shard.
pub const CPUS_PER_SHARD: u32 = 8;

/// One lock per 8 CPUs under an inverted outer rwlock.
type Core = Partitioned<InvertedRw, ByCpuGroup<CPUS_PER_SHARD>>;

/// See the module docs.
#[derive(Debug)]
pub struct Sharded(Core);

impl Sharded {
    /// An empty map with `ceil(cpus / 8)` shards.
    pub fn new(topo: Topology) -> Self {
        let n = topo.cpus().div_ceil(CPUS_PER_SHARD).max(1) as usize;
        Sharded(Partitioned::new(Design::Sharded, topo, n))
    }

    /// Inserts into shard `shard % shards` regardless of the calling CPU
    /// (for models and tests that need entries in given shards).
    #[doc(hidden)]
    pub fn insert_on_shard(
        &self,
        shard: usize,
        iv: Interval,
        vma: VmaId,
    ) -> Result<Handle, RmapError> {
        self.0.insert_on_shard(shard, iv, vma)
    }
}

impl Composed for Sharded {
    type Core = Core;
    #[inline]
    fn core(&self) -> &Core {
        &self.0
    }
}
