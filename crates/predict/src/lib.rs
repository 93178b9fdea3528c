//! `aspace predict`'s engine: predicts what a reverse-map design does on a
//! machine of many CPUs from a profile recorded on a small one.
//!
//! * [`machine`]: machine descriptions (nodes, SMT, caches, line-transfer
//!   latencies by distance, lock costs), each number with its public source;
//!   the built-in ones are in `machines/*.json`.
//! * [`profile`]: what one iteration (one exec) does per CPU: work, and
//!   lock holds with their call site, mode, hold time and shared lines.
//! * [`sim`]: the discrete-event simulator of CPUs, rwsems and cache lines;
//!   its module docs say what is modelled and what is not.
//!
//! Nothing here names a design: a design enters only through the holds
//! recorded from its code.
//!
//! # Concurrency
//! Everything is plain data and single-threaded; [`sim::simulate`] is a pure
//! function of its arguments (deterministic for a given seed), so callers
//! may run simulations on several threads at once.

#![warn(missing_docs)]

pub mod machine;
pub mod profile;
pub mod sim;

#[cfg(test)]
mod tests;

pub use machine::{Cost, Latency, Machine, MachineError, SpeedPoint};
pub use profile::{
    CpuProfile, Hold, LineKind, LockDesc, LockKind, Profile, ProfileError, Site, Step, Touch,
};
pub use sim::{simulate, LineResult, LockResult, Prediction, SimConfig, SimError, SiteResult};
