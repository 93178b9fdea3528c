//! The atomics, fences and locks of the publish protocol and of the epoch,
//! swapped for loom's under `cfg(loom)` (where the epoch's mode is fixed, so
//! it needs no `AtomicU8`) so that `tests/loom.rs` and the
//! epoch's own models model-check the same code paths (as crossbeam does
//! with `crossbeam_loom`).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering,
};
#[cfg(loom)]
pub(crate) use loom::sync::Mutex;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;
