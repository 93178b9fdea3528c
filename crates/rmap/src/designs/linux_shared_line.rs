//! `linux_shared_line`: Linux's `i_mmap` before 2023.
//!
//! One augmented red-black interval tree of every VMA
//! (the private `interval_tree` module), under one reader-writer lock that shares a
//! cache line with the tree root, as `struct address_space` laid out
//! `i_mmap` and `i_mmap_rwsem` side by side until Lipeng Zhu's patch "fs:
//! move i_mmap_rwsem to its own cache line" (v6.5, +5.3% on UnixBench shell
//! scripts, 112C/224T Sapphire Rapids): every modifier spinning on the lock
//! word bounced the line the tree root lives on.
//!
//! # Contract
//!
//! * Modifiers take the lock exclusive; they are linearizable.
//! * [`ReverseMap::walk`](crate::ReverseMap::walk) takes it shared: a stable
//!   snapshot; modifiers block meanwhile. `walk_concurrent` is the same walk.
//! * Batches take one lock hold (the kernel of that era took one per VMA;
//!   the churn runner with `batch: false` reproduces that).
//! * Thread-to-shard mapping: none, one shard.
//!
//! # Memory
//!
//! The struct (lock + tree header on one 128-byte padded line, counters on
//! another) plus 48 bytes per arena slot (capacity).

use super::parts::{Composed, One, SingleLock};
use super::VmaTree;
use crate::{Design, Topology};

/// See the module docs.
#[derive(Debug)]
pub struct LinuxSharedLine(SingleLock<VmaTree, One>);

impl LinuxSharedLine {
    /// An empty map.
    pub fn new() -> Self {
        LinuxSharedLine(SingleLock::new(Design::LinuxSharedLine, Topology::Os))
    }
}

impl Default for LinuxSharedLine {
    fn default() -> Self {
        Self::new()
    }
}

impl Composed for LinuxSharedLine {
    type Core = SingleLock<VmaTree, One>;
    #[inline]
    fn core(&self) -> &Self::Core {
        &self.0
    }
}
