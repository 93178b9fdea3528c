//! `aspace predict`'s engine: predicts what a reverse-map design does on a
//! machine of many CPUs from a profile recorded on a small one.
//!
//! * [`machine`]: machine descriptions (nodes, SMT, caches, line-transfer
//!   latencies by distance, lock and wake-up costs, per-CPU speed with many
//!   CPUs busy), each number with its source; the built-in ones are in
//!   `machines/*.json`, a host's own is written by `aspace calibrate`.
//! * [`profile`]: what one iteration (one exec) does per CPU: work, lock
//!   holds with the cache lines each touches (by identity), and the other
//!   shared lines it writes outside any lock.
//! * [`sim`]: the discrete-event simulator of CPUs, cache lines and locks
//!   (Linux's rwsem, parking_lot's RwLock); its module docs say what is
//!   modelled and what is not.
//!
//! Nothing here names a design: a design enters only through the holds and
//! lines recorded from its code.
//!
//! # Where every number comes from
//!
//! | input | source |
//! |---|---|
//! | hold and work times | the profile: recorded from the real code on the recording host, in its ns, scaled by `recorded_ghz / core_ghz` |
//! | which lines a hold touches | the profile: recorded by identity (`rmap::trace`) |
//! | line-transfer latency by distance | [`Machine::latency_ns`]: measured by `aspace calibrate` (ping-pong) or a cited public figure |
//! | per-CPU speed with `P` CPUs busy | [`Machine::speed_by_cpus`]: measured by `aspace calibrate`; 1 where not measured (listed as an assumption) |
//! | wake-up latency, the waker's cost, `pause`, `sched_yield` | [`Machine::wake_ns`], [`Machine::futex_wake`], [`Machine::pause`], [`Machine::yield_cost`]: measured by `aspace calibrate`, else the documented assumptions [`machine::ASSUMED_PAUSE_CYCLES`], [`machine::ASSUMED_YIELD_NS`], [`machine::ASSUMED_FUTEX_WAKE_SHARE`] |
//! | how far one CPU's transfers of independent lines overlap | [`Machine::line_overlap`] (stores), [`Machine::rmw_overlap`] (locked RMWs): measured by `aspace calibrate`, used only with [`SimConfig::overlap`]; 1 (serial) where not measured |
//! | rwsem spin bound on readers, hand-off timeout | [`Machine::reader_spin_ns`] (the kernel's bound), `RWSEM_WAIT_TIMEOUT` (4 ms, the kernel's) |
//! | parking_lot's spin counts and fair-unlock interval | parking_lot 0.12's own constants (2, 4, 8 pauses; 7 yields; 0-1 ms) |
//!
//! Nothing is fitted to a measured or published result.
//!
//! # Concurrency
//! Everything is plain data and single-threaded; [`sim::simulate`] is a pure
//! function of its arguments (deterministic for a given seed), so callers
//! may run simulations on several threads at once. A simulation allocates
//! its state once (per line, per CPU, per lock) and nothing per event.

#![warn(missing_docs)]

pub mod machine;
pub mod profile;
pub mod sim;

#[cfg(test)]
mod tests;

pub use machine::{Cost, Latency, Machine, MachineError, Overlap, SpeedPoint};
pub use profile::{
    CpuProfile, Hold, LineKind, LockDesc, LockKind, Profile, ProfileError, Site, Step, Touch,
};
pub use sim::{
    simulate, simulate_placed, HoldLines, LineResult, LockResult, Prediction, SimConfig, SimError,
    SiteResult,
};
