//! A maple tree: an RCU-style B-tree of non-overlapping `u64` ranges with
//! O(log n) gap search, after the Linux kernel's VMA tree (Howlett & Wilcox).
//!
//! ```
//! use maple::MapleTree;
//!
//! let tree = MapleTree::new();
//! tree.store_range(0x1000, 0x1fff, "text").unwrap();
//! tree.insert_range(0x4000, 0x4fff, "data").unwrap();
//! assert_eq!(*tree.load(0x1234).unwrap(), "text");
//! // Lowest free 0x2000-long range at or above 0x1000:
//! assert_eq!(tree.empty_area(0x1000, u64::MAX, 0x2000), Ok(0x2000));
//! // Highest one below 0x8000 (top-down, as mmap places mappings):
//! assert_eq!(tree.empty_area_rev(0, 0x7fff, 0x2000), Ok(0x6000));
//! let snap = tree.reader();
//! let all: Vec<_> = snap.iter().map(|(r, v)| (r, *v)).collect();
//! assert_eq!(all, vec![(0x1000..=0x1fff, "text"), (0x4000..=0x4fff, "data")]);
//! ```
//!
//! See [`MapleTree`] for the concurrency contract. The crate is laid out as
//! a thin public skin over a raw core: `node` (layouts, diagram),
//! `read` (walks, stepping, gap search), `write` (the copy-on-write engine),
//! and `tree` / `cursor` (the safe API).
//!
//! # Reclamation: crossbeam-epoch
//!
//! Replaced nodes and values are freed through `crossbeam-epoch`. `seize`
//! was measured beside it (`cargo bench -p aspace-maple --bench reclaim`,
//! numbers in `BENCHMARKS.md`): readers here pin once per operation and
//! writers retire a handful of nodes per write, so the per-pin and
//! per-retire costs decide, and crossbeam-epoch is the more widely used
//! and reviewed of the two at comparable cost.
//!
//! # Testing under Miri and loom
//!
//! - `cargo +nightly miri test -p aspace-maple --lib --tests` (where a
//!   nightly with the `miri` component is installed); heavy tests shrink
//!   under `cfg(miri)`. `scripts/miri.sh` runs it when miri is present.
//! - `RUSTFLAGS="--cfg loom" cargo test -p aspace-maple --release --test loom`
//!   model-checks the publish/read protocol (`tests/loom.rs`: the real tree
//!   with loom atomics, and a reduced model whose node fields are loom cells).

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod cursor;
mod error;
mod map;
mod node;
mod read;
mod sync;
mod tree;
mod validate;
mod write;

pub use cursor::Cursor;
pub use error::{MapleError, WriteError};
pub use map::{Entries, Fit, Gaps, IndexRange, IntoIter};
pub use tree::{Entry, Iter, MapleTree, MemoryUsage, Reader};

/// Node size in bytes (leaf and internal alike).
pub const NODE_SIZE: usize = node::NODE_BYTES;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
