//! The atomics the publish protocol uses, swapped for loom's under `cfg(loom)`
//! so that `tests/loom.rs` model-checks the same code paths (as crossbeam does
//! with `crossbeam_loom`).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
