//! `linux`: Linux's `i_mmap` today.
//!
//! The same augmented red-black interval tree as
//! [`linux_shared_line`](super::linux_shared_line), but the reader-writer
//! lock sits on its own cache line, away from the tree root (Lipeng Zhu,
//! "fs: move i_mmap_rwsem to its own cache line", v6.5: +5.3%), and exit
//! removes all of a process's VMAs of one file under one lock hold (the 2024
//! exit-path batching, +4% execs/s at ~20 cores, "only a stopgap").
//!
//! # Contract
//!
//! * Modifiers take the lock exclusive; they are linearizable.
//! * [`ReverseMap::walk`](crate::ReverseMap::walk) takes it shared: a stable
//!   snapshot; modifiers block meanwhile. `walk_concurrent` is the same walk.
//! * Batches take one lock hold.
//! * Thread-to-shard mapping: none, one shard.
//!
//! # Memory
//!
//! The struct (lock line, tree-header line, counters line: 384 bytes plus
//! the id, rounded to the 128-byte alignment) plus 48 bytes per arena slot.

use crossbeam_utils::CachePadded;

use super::single::single_tree_map;
use super::VmaTree;
use crate::stats::{LockCounters, PaddedCounters};
use crate::sync::RwLock;
use crate::Design;

/// See the module docs.
#[derive(Debug)]
pub struct Linux {
    /// The lock word on its own line; the padded tree header starts on the next.
    inner: CachePadded<RwLock<CachePadded<VmaTree>>>,
    counters: PaddedCounters,
    id: u32,
}

impl Linux {
    /// An empty map.
    pub fn new() -> Self {
        let id = crate::next_map_id();
        Linux {
            inner: CachePadded::new(RwLock::new(CachePadded::new(VmaTree::new()))),
            counters: CachePadded::new(LockCounters::new(id, 0)),
            id,
        }
    }

    #[inline]
    fn lock(&self) -> &RwLock<CachePadded<VmaTree>> {
        &self.inner
    }
}

impl Default for Linux {
    fn default() -> Self {
        Self::new()
    }
}

single_tree_map!(Linux, Design::Linux);
