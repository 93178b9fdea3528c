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

use super::parts::{Composed, One, SingleLock};
use super::VmaTree;
use crate::{Design, Topology};

/// The lock word on its own line; the padded tree header starts on the next.
type Core = SingleLock<CachePadded<VmaTree>, One>;

/// See the module docs.
#[derive(Debug)]
pub struct Linux(Core);

impl Linux {
    /// An empty map.
    pub fn new() -> Self {
        Linux(SingleLock::new(Design::Linux, Topology::Os))
    }
}

impl Default for Linux {
    fn default() -> Self {
        Self::new()
    }
}

impl Composed for Linux {
    type Core = Core;
    #[inline]
    fn core(&self) -> &Core {
        &self.0
    }
}
