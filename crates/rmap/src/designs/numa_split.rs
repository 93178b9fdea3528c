//! `numa_split`: one interval tree per NUMA node, still under one lock.
//!
//! This is the first version of Huang Shijie's "mm: split the file's i_mmap
//! tree for NUMA" (April 2026): on a 12-node, 384-CPU Hygon server the
//! `i_mmap_rwsem` of `libc.so`/`ld.so` was the wall of UnixBench `execl`;
//! giving each node its own sibling tree (so each tree is smaller and its
//! nodes stay node-local) gave +77%. Mateusz Guzik's review: the lock is
//! unchanged, so this "still does not scale", and it does nothing for
//! single-node machines with many cores.
//!
//! # Contract
//!
//! * Every operation takes the one lock (exclusive for modifiers, shared
//!   for walks), so modifiers are linearizable and
//!   [`walk`](crate::ReverseMap::walk) is a stable snapshot; modifiers block
//!   meanwhile. `walk_concurrent` is the same walk.
//! * Thread-to-tree mapping: an insert goes to the tree of
//!   [`Topology::current_node`]; `insert_after` goes to the parent's tree;
//!   a removal goes to the tree its handle names.
//!
//! # Memory
//!
//! The struct (lock line, counters line), one 40-byte tree header per node,
//! and 48 bytes per arena slot.

use super::parts::{ByNode, Composed, SingleLock};
use super::VmaTree;
use crate::{Design, Topology};

/// One lock over one tree per node.
type Core = SingleLock<Box<[VmaTree]>, ByNode>;

/// See the module docs.
#[derive(Debug)]
pub struct NumaSplit(Core);

impl NumaSplit {
    /// An empty map with one tree per node of `topo`.
    pub fn new(topo: Topology) -> Self {
        NumaSplit(SingleLock::new(Design::NumaSplit, topo))
    }
}

impl Composed for NumaSplit {
    type Core = Core;
    #[inline]
    fn core(&self) -> &Core {
        &self.0
    }
}
