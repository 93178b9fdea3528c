//! The discrete-event simulator: P CPUs of a [`Machine`] run a [`Profile`]'s
//! iterations, contending for locks and moving cache lines.
//!
//! Every cost below is a recorded time (scaled to the target's clock), a
//! number from the machine description (each with its source, measured by
//! `aspace calibrate` where the machine is one's own), or one of the
//! documented assumptions [`Machine::pause`], [`Machine::yield_cost`] and
//! [`Machine::futex_wake`] use where a description has no measurement.
//! Nothing is fitted to a result.
//!
//! # What is modelled
//!
//! * **CPUs.** `P` copies run on the CPUs [`Machine::placement`] picks (nodes,
//!   then caches, then SMT siblings), or, for a benchmark that pins its
//!   threads, those of [`Machine::placement_packed`]; on a machine of one
//!   last-level cache, the `P` CPUs from [`SimConfig::first_cpu`] on
//!   ([`Machine::placement_from`], where Linux's scan for an idle CPU puts
//!   unpinned threads). Recorded times are scaled by
//!   `profile.recorded_ghz / machine.core_ghz`, by `2 / smt_yield` on a
//!   core whose sibling is also used, and by `1 / speed_at(P)`
//!   ([`Machine::speed_at`]: the measured per-CPU speed of private work
//!   with `P` CPUs busy). One copy per CPU: no preemption, no
//!   oversubscription.
//! * **Cache lines** (`sim/lines.rs`): every line a hold or a [`crate::Touch`]
//!   names by identity keeps its last writer and its sharers; an access
//!   costs the latency from the CPU that has the line to the one that
//!   wants it ([`Machine::latency`] by distance), and a line moves one
//!   transfer at a time. A hold's time is its recorded time plus its lines'
//!   transfers, so the same code holds its lock longer the more of its
//!   lines other CPUs wrote since (the tree nodes a neighbour's insert
//!   rotated): nothing about contention is recorded, it follows from which
//!   lines the holds share.
//! * **Locks**, by [`crate::LockKind`]: each acquisition and release writes
//!   the lock word's line (a transfer when another CPU had it), and a
//!   failed attempt takes the line too, so that a lock that many CPUs try
//!   at once releases more slowly.
//!   * Linux's rwsem (`sim/rwsem.rs`): the fast path steals a free lock; a
//!     writer that finds a writer owner spins in the MCS `osq` queue (only
//!     its head polls the lock, holding a copy of its line that every
//!     other write invalidates and the head re-reads; it reads the line
//!     before its `cmpxchg`; each CPU's MCS node is a line: a join writes
//!     its own and its predecessor's, and the new owner's `osq_unlock`
//!     writes its own and its successor's before its critical section); a
//!     writer that finds readers spins while the head's `reader_spin_ns`
//!     lasts, then every spinner sleeps on the wait queue and later
//!     writers do not spin until a writer owns the lock; with waiters
//!     queued every unlock runs `rwsem_wake` (the first waiter's lines; a
//!     wake-up only for a sleeper: the waker pays [`Machine::futex_wake`]
//!     per task, the wakee runs `wake_ns` later; a reader phase wakes
//!     every queued reader), a woken writer that has waited 4 ms
//!     (`RWSEM_WAIT_TIMEOUT`) gets the lock handed to it and spins on the
//!     owner. Readers never spin; they share the lock unless a writer owns
//!     it, a hand-off is pending, or waiters are queued while other
//!     readers hold it.
//!   * `parking_lot::RwLock` (`sim/parking.rs`, the lab's own lock): an attempt
//!     takes a free lock even past parked threads; a failed one spins
//!     `2, 4, 8` pauses, then yields seven times, re-reading the lock word
//!     each time, but only while no thread is parked; then it parks (a
//!     futex sleep). An unlock with parked threads wakes the first writer
//!     (or the readers before it): the unlocker pays the wake, the wakee
//!     runs `wake_ns` later and competes again, except that on average
//!     every 0.5 ms (parking_lot's `FairTimeout`: a random 0-1 ms) the
//!     unlock hands the lock to the wakee and it stays held while it wakes.
//! * **A lock word beside written data.** A hold that writes its lock
//!   word's line as data (a tree root next to the lock) while a waiter
//!   polls the word loses the line to the poller and pays a transfer to
//!   take it back; so does one whose line another CPU takes during the
//!   hold with no poller at the grant (a parking_lot arrival's `cmpxchg`,
//!   a parker's `validate` load: session s38), at most
//!   `LOCK_LINE_TOUCHES` (2) times a hold; a theft after the hold's last
//!   touch is the release's own transfer.
//! * **The lab's lock wrapper** (`rmap::stats`, model-cost profiles only:
//!   [`crate::LockDesc::contended_line`]): a parking_lot acquisition
//!   whose first try fails writes the lock's `contended` counter line
//!   before `lock()` tries again (session s38); meanwhile a free lock with
//!   parked threads stays free. The bench's hold timing writes a counter
//!   line in each hold: the lab adds it to the holds' lines.
//! * **Clock reads inside the held time** (session s38, only on a machine
//!   with [`Machine::clock_read_ns`]): a hold of a profile whose holds the
//!   bench timed ([`crate::Profile::hold_timing`]) is one read longer,
//!   moved from the work outside the holds (the recorded hold holds about
//!   one of the timing's two reads inside the lock, the recorded
//!   iteration both); a parking_lot unlock that unparks a thread reads
//!   the clock before it releases (`sim/parking.rs`).
//! * **Other shared state** ([`crate::Step::Touch`], and locks of
//!   [`crate::Site::ExecLock`]): the rest of what an iteration shares, as
//!   the recorder describes it, costs by the same line model and locks.
//!
//! # What is not modelled
//!
//! * Preemption, interrupts, oversubscription, frequency changes other
//!   than [`Machine::speed_by_cpus`], memory bandwidth beyond it, the
//!   hypervisor (a vCPU that is descheduled while it holds a lock).
//! * A core's memory-level parallelism, unless [`SimConfig::overlap`] is
//!   set and the machine has the calibrated factors: a hold's line
//!   transfers are then charged one after another (see `sim/lines.rs`).
//! * Whether a parking_lot waiter's polling reads delay the owner beyond
//!   the one transfer above (the rwsem's polling head is modelled); what
//!   the rwsem model leaves out is listed in `sim/rwsem.rs`.
//! * `parking_lot`'s writer waiting for readers to leave after it took the
//!   writer bit: a writer here takes the lock only when no reader holds it.
//!
//! # Speed
//!
//! Every event is one step of one CPU. The queue is a binary heap of
//! integer keys (the bits of a non-negative `f64` order as the number
//! does) whose top is replaced in place when the handler schedules the
//! CPU's next step; line states are flat arrays; nothing is allocated per
//! event.

mod lines;
mod parking;
mod rwsem;

use crate::machine::{Machine, MachineError, Place};
use crate::profile::{LineKind, LockKind, Profile, ProfileError, Site, Step};
use lines::Lines;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::fmt;

/// A hold that writes its lock word's line as data touches it this many
/// times after its acquisition: a tree header beside the lock word
/// (`aspace`'s central lock, `linux_shared_line`) is read where the walk
/// starts (the root) and written where the arena allocates or frees a
/// slot (`IntervalTree`'s `free` and `live`, `crates/rmap/src/interval_tree.rs`);
/// `aspace`'s promotion rule's last holder, on the same line, is read and
/// written just before the walk.
const LOCK_LINE_TOUCHES: u32 = 2;

/// How long to simulate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimConfig {
    /// Copies (one per CPU).
    pub cpus: u32,
    /// Measured simulated time, ns.
    pub duration_ns: f64,
    /// Simulated time before measuring, ns.
    pub warmup_ns: f64,
    /// Seed of the start offsets, the jitter and parking_lot's fair
    /// hand-off times.
    pub seed: u64,
    /// Draw each work step from an exponential distribution with the
    /// recorded mean instead of taking it as recorded (for queueing tests).
    pub random_work: bool,
    /// Otherwise, stretch each work step by a factor uniform in
    /// `[1 - j, 1 + j]` (0: exactly as recorded). A little jitter keeps
    /// copies from locking into one phase, as no real machine does.
    pub work_jitter: f64,
    /// Copies pinned in CPU order ([`Machine::placement_packed`], as lock
    /// microbenchmarks bind their threads) instead of spread as the
    /// scheduler places processes ([`Machine::placement`]).
    pub packed: bool,
    /// Unpinned copies on a machine of one last-level cache: the hardware
    /// CPU where the scheduler's scan for idle CPUs begins; the copies run
    /// on the `cpus` CPUs from it on, wrapping (see
    /// [`Machine::placement_from`]). Ignored when packed or on a machine of
    /// several caches.
    pub first_cpu: u32,
    /// Overlap the transfers of lines a CPU touches independently, by the
    /// machine's measured factors ([`Machine::line_overlap`] for a hold's
    /// written lines, [`Machine::rmw_overlap`] for a touch's locked
    /// updates, [`Machine::store_overlap`] for its plain stores, which
    /// also overlaps by the documented `miss_slots` where `line_overlap`
    /// was not measured): see
    /// `sim/lines.rs` for which lines are taken as independent (a hold's
    /// written lines that it loaded first, [`crate::Hold::loaded_first`],
    /// stay in its serial chain). Off, or on a description without the
    /// factors, every transfer is serial (the charge before they were
    /// measured), and the answer is the same.
    pub overlap: bool,
}

impl SimConfig {
    /// `cpus` copies, one simulated second after 50 ms of warm-up.
    pub fn new(cpus: u32) -> SimConfig {
        SimConfig {
            cpus,
            duration_ns: 1e9,
            warmup_ns: 5e7,
            seed: 1,
            random_work: false,
            work_jitter: 0.0,
            packed: false,
            first_cpu: 0,
            overlap: false,
        }
    }
}

/// One lock's share of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LockResult {
    /// The lock's name.
    pub name: String,
    /// Acquisitions.
    pub acquisitions: u64,
    /// Acquisitions that found the lock unavailable.
    pub contended: u64,
    /// CPU time holding it (including line transfers), ns.
    pub hold_ns: f64,
    /// CPU time spinning (or yielding) for it, ns.
    pub spin_ns: f64,
    /// Time asleep waiting for it (and waking), ns.
    pub sleep_ns: f64,
}

/// One call site's share of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SiteResult {
    /// The site.
    pub site: String,
    /// Acquisitions.
    pub acquisitions: u64,
    /// Holding time, ns.
    pub hold_ns: f64,
    /// Spinning time, ns.
    pub spin_ns: f64,
    /// Sleeping time, ns.
    pub sleep_ns: f64,
}

/// Where line-transfer time went, by kind of line.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LineResult {
    /// [`LineKind::name`].
    pub kind: String,
    /// CPU time waiting for lines of this kind (transfers and the queue
    /// for a busy line), ns.
    pub transfer_ns: f64,
}

/// A diagnostic: the line accesses one call site's holds made inside
/// their critical sections (the hold's recorded lines, not the lock
/// word's hand-over, which the lock models charge), by kind of line and
/// read or write, after the warm-up.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HoldLines {
    /// The call site ([`Site::name`]).
    pub site: String,
    /// [`LineKind::name`].
    pub kind: String,
    /// Written (else only read).
    pub write: bool,
    /// Accesses made.
    pub accesses: u64,
    /// Accesses that paid a transfer: for a read, the line was written by
    /// another CPU since this CPU's last copy; for a write, another CPU
    /// wrote it last or holds a copy.
    pub charged: u64,
    /// Their CPU time (transfers and the queue for a busy line; an
    /// overlapped write's share as charged), ns.
    pub ns: f64,
    /// Holds of the site that began in the window (to divide by).
    pub holds: u64,
}

/// The outcome of one simulation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// Copies.
    pub cpus: u32,
    /// Iterations (execs) per second.
    pub per_s: f64,
    /// Share of all CPU time spent spinning on a lock (0..1).
    pub spin_share: f64,
    /// Share of all CPU time waiting, spinning or asleep (0..1).
    pub wait_share: f64,
    /// Share of all CPU time holding a lock (0..1).
    pub hold_share: f64,
    /// Share of all CPU time waiting for cache lines, inside holds and out
    /// (0..1).
    #[serde(default)]
    pub transfer_share: f64,
    /// Contended acquisitions / acquisitions, percent.
    pub contended_pct: f64,
    /// Per lock (only locks acquired in the window).
    pub locks: Vec<LockResult>,
    /// Per call site (only sites seen).
    pub sites: Vec<SiteResult>,
    /// Per kind of line (only kinds that cost time).
    #[serde(default)]
    pub lines: Vec<LineResult>,
    /// A diagnostic: per call site, kind of line and read or write, the
    /// line accesses inside holds (only those made).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hold_lines: Vec<HoldLines>,
    /// Events processed (for the speed budget).
    pub events: u64,
}

/// What keeps a simulation from running.
#[derive(Clone, Debug, PartialEq)]
pub enum SimError {
    /// The machine description is invalid.
    Machine(MachineError),
    /// The profile is invalid.
    Profile(ProfileError),
    /// The configuration is invalid.
    Config(String),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Machine(e) => e.fmt(f),
            SimError::Profile(e) => e.fmt(f),
            SimError::Config(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for SimError {}

pub(crate) const NONE: u32 = u32::MAX;

/// [`Sim::in_site`] outside a hold's lines.
const NO_SITE: u8 = u8::MAX;

/// [`Sim::hold_acc`]'s index of a site's accesses of a kind of line.
fn hold_acc_index(site: u8, kind: u8, write: bool) -> usize {
    (site as usize * LineKind::ALL.len() + kind as usize) * 2 + usize::from(write)
}

/// A compiled hold: lines as ranges of [`Sim::line_ids`].
#[derive(Clone, Copy)]
struct CHold {
    lock: u32,
    write: bool,
    site: u8,
    hold_ns: f64,
    /// `line_ids[w_first..w_end]` written, `[w_end..r_end]` read. With
    /// overlap, `[w_first..w_loaded]` are the written lines the hold
    /// loaded first (its chain's), the rest of the written ones after them.
    w_first: u32,
    w_loaded: u32,
    w_end: u32,
    r_end: u32,
    /// The hold writes its lock word's line as data.
    writes_lock_line: bool,
}

#[derive(Clone, Copy)]
enum CStep {
    Work(f64),
    Hold(CHold),
    /// `line_ids[first..w_end]` locked updates, `[w_end..s_end]` plain
    /// stores, `[s_end..r_end]` loads.
    Touch {
        first: u32,
        w_end: u32,
        s_end: u32,
        r_end: u32,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum CpuState {
    Running,
    Holding,
    /// The hold is over and the release waits for the lock word's line;
    /// the lock stays held until the release takes effect.
    Releasing,
    Spinning,
    Sleeping,
    Waking,
    /// parking_lot: the first try failed and the lab's wrapper is adding
    /// to its `contended` counter before `lock()` tries again.
    Counting,
}

struct Cpu {
    place: Place,
    scale: f64,
    slot: usize,
    step: usize,
    state: CpuState,
    /// When the current acquisition first failed (or began waiting).
    wait_start: f64,
    /// When it went to sleep (negative: it has not).
    slept_at: f64,
    /// The current acquisition was counted as contended.
    contended: bool,
    gen: u32,
    iterations: u64,
    /// parking_lot: the `SpinWait` counter of the current acquisition.
    spins: u32,
    /// rwsem: when this `osq` spinner learned it is the head.
    osq_ready: f64,
    /// When this CPU's last store that it did not wait for (an
    /// `osq_unlock`'s store to its successor's node) completes: its next
    /// locked instruction (the release) waits for it (x86 drains the store
    /// buffer before a locked instruction).
    store_done: f64,
    /// parking_lot: a fair unlock handed this waker the lock.
    handed: bool,
    /// parking_lot: this releaser has walked the parking queue (its
    /// bucket and `ThreadData` lines are paid); the lock word is released
    /// when its `Release` event comes.
    unpark_walked: bool,
    /// While holding: when the hold's `Done` event is due.
    done_at: f64,
    /// While holding a lock whose word's line the hold writes as data:
    /// how many times the hold has taken that line back.
    took_line_back: u32,
}

/// One lock's state (the fields each model uses are in its module).
struct LockSt {
    kind: LockKind,
    line: u32,
    writer: u32,
    readers: u32,
    /// rwsem: spinning writers, head first.
    osq: VecDeque<u32>,
    /// rwsem: sleeping waiters; parking_lot: parked threads, in order.
    waitq: VecDeque<u32>,
    /// rwsem: the waiter the lock is handed off to; parking_lot: the
    /// writer (or [`HANDED_READERS`]) a fair unlock handed it to.
    handoff: u32,
    /// rwsem: a woken first waiter that spins on the owner.
    first_spinner: u32,
    /// rwsem: `RWSEM_NONSPINNABLE` in `owner`: set by an `osq` head that
    /// spun past `rwsem_rspin_threshold` on readers; while set, writers
    /// do not spin (see `sim/rwsem.rs`).
    nonspinnable: bool,
    /// parking_lot: threads in the spin phase (they poll the word).
    pollers: u32,
    /// parking_lot: the last thread that began to spin.
    last_poller: u32,
    /// parking_lot: the next time an unlock is fair.
    next_fair: f64,
    /// parking_lot: the line of the lock's parking bucket.
    bucket_line: u32,
    /// parking_lot: when the bucket's own lock (a `WordLock`, held while
    /// a thread parks or an unlocker walks the queue) is next free.
    bucket_free_at: f64,
    /// parking_lot: `PARKED_BIT` on the lock word (set by a thread about
    /// to park, cleared by the unlock that empties the queue; see
    /// `sim/parking.rs`).
    parked_bit: bool,
    /// The line a failed first try writes before blocking (the lab's
    /// `contended` counter; [`crate::LockDesc::contended_line`]), or
    /// [`NONE`].
    contended_line: u32,
}

#[derive(Clone, Default)]
struct Acc {
    acq: u64,
    contended: u64,
    hold: f64,
    spin: f64,
    sleep: f64,
}

impl Acc {
    fn minus(&self, o: &Acc) -> Acc {
        Acc {
            acq: self.acq - o.acq,
            contended: self.contended - o.contended,
            hold: self.hold - o.hold,
            spin: self.spin - o.spin,
            sleep: self.sleep - o.sleep,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// The CPU's current step (work, touch, hold) ends.
    Done,
    /// The CPU tries its lock again (a spinner's next poll, a woken
    /// waiter, an `osq` head that saw the release).
    Attempt,
    /// An rwsem writer stops spinning on a reader-owned lock.
    SpinTimeout,
    /// A new rwsem `osq` head starts polling the lock (its first read of
    /// `owner`, made when it happens rather than ahead of time).
    Poll,
    /// A releasing CPU has the lock word's line: the release takes effect.
    Release,
}

#[derive(Clone, Copy)]
struct Ev {
    t: f64,
    cpu: u32,
    kind: Kind,
    gen: u32,
}

/// The event queue: a binary heap of `(time, slot)` keys packed in
/// integers (a non-negative `f64`'s bits order as the number does), so that
/// every comparison is an integer compare; ties go to the lower slot.
///
/// The loop [`Queue::take`]s the earliest event, leaving its key on top
/// while the event is handled: the handler's first push replaces that key
/// in place (one sift down, instead of a pop's and a push's), and
/// [`Queue::done`] pops it if the handler pushed nothing.
struct Queue {
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    /// The events, two slots per CPU: `2c` for its running step (`Done`,
    /// `Attempt`), `2c + 1` for a spin timeout. A newer event in a slot
    /// replaces the older one, whose key is then skipped.
    ev: Vec<Ev>,
    /// The top key is the event being handled.
    held: bool,
}

impl Queue {
    fn new(cpus: usize) -> Queue {
        Queue {
            heap: BinaryHeap::with_capacity(2 * cpus),
            ev: vec![
                Ev {
                    t: 0.0,
                    cpu: NONE,
                    kind: Kind::Done,
                    gen: 0,
                };
                2 * cpus
            ],
            held: false,
        }
    }

    fn push(&mut self, e: Ev) {
        let slot = 2 * e.cpu + u32::from(e.kind == Kind::SpinTimeout);
        self.ev[slot as usize] = e;
        let key = Reverse((e.t.to_bits(), slot));
        if self.held {
            self.held = false;
            if let Some(mut top) = self.heap.peek_mut() {
                *top = key;
                return;
            }
        }
        self.heap.push(key);
    }

    /// Removes the pending event of `cpu`'s running slot (its key is
    /// skipped when it comes up).
    fn cancel(&mut self, cpu: u32) {
        self.ev[2 * cpu as usize].cpu = NONE;
    }

    /// The earliest event; its key stays on top until a push or `done`.
    fn take(&mut self) -> Option<Ev> {
        self.done();
        loop {
            let &Reverse((bits, slot)) = self.heap.peek()?;
            let e = self.ev[slot as usize];
            if e.cpu != NONE && e.t.to_bits() == bits {
                self.held = true;
                // A slot's event is handled once.
                self.ev[slot as usize].cpu = NONE;
                return Some(e);
            }
            // Stale: replaced or cancelled.
            self.heap.pop();
        }
    }

    /// Pops the handled event's key if no push replaced it.
    fn done(&mut self) {
        if self.held {
            self.held = false;
            self.heap.pop();
        }
    }
}

struct Sim<'a> {
    m: &'a Machine,
    steps: Vec<Vec<CStep>>,
    /// Every hold's and touch's lines, back to back.
    line_ids: Vec<u32>,
    line_kind: Vec<u8>,
    cpus: Vec<Cpu>,
    locks: Vec<LockSt>,
    lines: Lines,
    heap: Queue,
    lock_acc: Vec<Acc>,
    site_acc: Vec<Acc>,
    kind_ns: [f64; 4],
    /// The call site whose hold's lines are being accessed ([`NO_SITE`]
    /// outside them), for [`Sim::hold_acc`].
    in_site: u8,
    /// Per (site, kind, write): accesses, charged, ns (see [`HoldLines`]).
    hold_acc: Vec<(u64, u64, f64)>,
    rng: u64,
    random_work: bool,
    work_jitter: f64,
    events: u64,
    /// Costs of the lock models, ns.
    pause_ns: f64,
    yield_ns: f64,
    futex_wake_ns: f64,
    /// One clock read ([`Machine::clock_read_ns`], 0 where not measured):
    /// a parking_lot unlock that wakes a thread reads the clock before its
    /// callback releases the lock.
    clock_read_ns: f64,
    /// parking_lot: the unlocker's cost of a wake-up after the release
    /// ([`Machine::unlock_wake_after_release`]).
    unlock_wake_ns: f64,
    /// Each further independent transfer's share of a serial one: a hold's
    /// written lines, a touch's written lines (1: serial).
    hold_overlap: f64,
    touch_overlap: f64,
    /// A touch's plain stores ([`Machine::store_overlap`]; 1: serial).
    store_overlap: f64,
    /// parking_lot: each simulated CPU's thread's `ThreadData` line (the
    /// parking queue's links, its park and unpark tokens); empty without
    /// parking_lot locks.
    td_line: Vec<u32>,
    /// rwsem: each simulated CPU's `osq` MCS node (`osq_node`, one
    /// cache-aligned per-CPU line holding `next`, `prev` and `locked`),
    /// written by the CPU as it joins, by the CPU that queues behind it
    /// (`prev->next`) and by the one that makes it head (`locked`); empty
    /// without rwsem locks.
    osq_line: Vec<u32>,
    /// rwsem: each simulated CPU's `struct rwsem_waiter` (on its stack
    /// while it waits: `list`, `task`, `type`), written by the waiter as it
    /// queues, by the waiter queued behind it (`list_add_tail`) and by the
    /// waker (`smp_store_release(&waiter->task, NULL)` for a reader);
    /// empty without rwsem locks.
    wait_line: Vec<u32>,
    /// rwsem: each simulated CPU's task's wake-up fields (`wake_q`,
    /// `usage`, `pi_lock`, `__state`), written by a waker's `wake_q_add`
    /// and `try_to_wake_up`; empty without rwsem locks.
    task_line: Vec<u32>,
}

impl<'a> Sim<'a> {
    fn rand01(&mut self) -> f64 {
        // xorshift64*: enough for start offsets and draws.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let x = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d);
        ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn push(&mut self, t: f64, cpu: u32, kind: Kind) {
        let gen = self.cpus[cpu as usize].gen;
        self.heap.push(Ev { t, cpu, kind, gen });
    }

    fn transfer(&self, from: u32, to: u32) -> f64 {
        if from == NONE || to == NONE || from == to {
            return 0.0;
        }
        let a = &self.cpus[from as usize].place;
        let b = &self.cpus[to as usize].place;
        self.m.latency(Machine::distance(a, b))
    }

    /// CPU `c` accesses line `l` at `t`; returns when it has it, and
    /// charges the wait to the line's kind.
    fn access(&mut self, c: u32, l: u32, write: bool, t: f64) -> f64 {
        let (places, m) = (&self.cpus, self.m);
        let lat = |a: u32, b: u32| transfer_ns(m, places, a, b);
        let done = self.lines.access(c, l, write, t, &lat);
        let kind = self.line_kind[l as usize];
        if done > t {
            self.kind_ns[kind as usize] += done - t;
        }
        if self.in_site != NO_SITE {
            let a = &mut self.hold_acc[hold_acc_index(self.in_site, kind, write)];
            a.0 += 1;
            if done > t {
                a.1 += 1;
                a.2 += done - t;
            }
        }
        done
    }

    /// CPU `c` accesses the lines `line_ids[first..end]` one after another
    /// from `t` (each waits for the one before: the serial charge); returns
    /// when it has the last.
    fn access_chain(&mut self, c: u32, first: u32, end: u32, write: bool, t: f64) -> f64 {
        let mut at = t;
        for i in first..end {
            let l = self.line_ids[i as usize];
            at = self.access(c, l, write, at);
        }
        at
    }

    /// CPU `c` writes the lines `line_ids[first..end]` from `t`, their
    /// transfers overlapping: each is requested at `t` (and queues behind
    /// its line's current transfer as in [`Lines::access`]); the longest
    /// wait counts in full and every other one at `factor` of itself (the
    /// calibrated cost of a further independent transfer over a dependent
    /// one). Returns when the last is done; each line's kind is charged
    /// its share. `factor` 1 would charge the sum of the waits, as a
    /// serial chain does when no line queues.
    fn access_overlapped(&mut self, c: u32, first: u32, end: u32, t: f64, factor: f64) -> f64 {
        let (places, m) = (&self.cpus, self.m);
        let lat = |a: u32, b: u32| transfer_ns(m, places, a, b);
        let (mut sum, mut max) = (0.0f64, 0.0f64);
        let mut by_kind = [0.0f64; 4];
        let mut charged = [0u64; 4];
        for i in first..end {
            let l = self.line_ids[i as usize];
            let wait = self.lines.access(c, l, true, t, &lat) - t;
            let kind = self.line_kind[l as usize];
            if self.in_site != NO_SITE {
                self.hold_acc[hold_acc_index(self.in_site, kind, true)].0 += 1;
            }
            sum += wait;
            max = max.max(wait);
            by_kind[kind as usize] += wait;
            charged[kind as usize] += u64::from(wait > 0.0);
        }
        if sum <= 0.0 {
            return t;
        }
        let total = max + factor * (sum - max);
        for (k, w) in by_kind.iter().enumerate() {
            self.kind_ns[k] += w * total / sum;
            if self.in_site != NO_SITE {
                let a = &mut self.hold_acc[hold_acc_index(self.in_site, k as u8, true)];
                a.1 += charged[k];
                a.2 += w * total / sum;
            }
        }
        t + total
    }

    fn cur_hold(&self, c: u32) -> CHold {
        let cpu = &self.cpus[c as usize];
        match self.steps[cpu.slot][cpu.step] {
            CStep::Hold(h) => h,
            _ => unreachable!("cur_hold on a step that is not a hold"),
        }
    }

    /// Counts a failed attempt of `c`'s acquisition once, and starts its
    /// wait clock.
    fn note_contended(&mut self, c: u32, t: f64) {
        let h = self.cur_hold(c);
        let cpu = &mut self.cpus[c as usize];
        if !cpu.contended {
            cpu.contended = true;
            cpu.wait_start = t;
            self.lock_acc[h.lock as usize].contended += 1;
            self.site_acc[h.site as usize].contended += 1;
        }
    }

    /// `c` stops polling its lock (it got it or sleeps).
    fn stop_polling(&mut self, c: u32) {
        if self.cpus[c as usize].state == CpuState::Spinning {
            let li = self.cur_hold(c).lock as usize;
            let l = &mut self.locks[li];
            l.pollers = l.pollers.saturating_sub(1);
        }
    }

    /// `c` goes to sleep waiting for its lock at `t`.
    fn sleep(&mut self, c: u32, t: f64) {
        self.stop_polling(c);
        let cpu = &mut self.cpus[c as usize];
        cpu.state = CpuState::Sleeping;
        if cpu.slept_at < 0.0 {
            cpu.slept_at = t;
        }
        cpu.gen = cpu.gen.wrapping_add(1);
        self.heap.cancel(c);
    }

    /// `c`, asleep on its lock, is woken at `t` (the waker's call): it runs
    /// again, and tries its lock, `wake_ns` later.
    fn wake(&mut self, c: u32, t: f64) {
        let cpu = &mut self.cpus[c as usize];
        cpu.state = CpuState::Waking;
        cpu.gen = cpu.gen.wrapping_add(1);
        self.push(t + self.m.wake_ns, c, Kind::Attempt);
    }

    /// `c` has its lock from `t` (the lock word already written): charges
    /// the wait, runs the critical section with its lines, schedules the
    /// release.
    fn grant(&mut self, c: u32, t: f64) {
        let h = self.cur_hold(c);
        let li = h.lock as usize;
        self.stop_polling(c);
        {
            let cpu = &mut self.cpus[c as usize];
            if cpu.contended {
                let (spin, sleep) = if cpu.slept_at >= 0.0 {
                    (cpu.slept_at - cpu.wait_start, t - cpu.slept_at)
                } else {
                    (t - cpu.wait_start, 0.0)
                };
                self.lock_acc[li].spin += spin;
                self.site_acc[h.site as usize].spin += spin;
                self.lock_acc[li].sleep += sleep;
                self.site_acc[h.site as usize].sleep += sleep;
            }
            cpu.state = CpuState::Holding;
            cpu.gen = cpu.gen.wrapping_add(1);
        }
        if h.write {
            self.locks[li].writer = c;
        }
        self.in_site = h.site;
        let mut at = if self.hold_overlap < 1.0 {
            // The walk from the root, each address loaded from the line
            // before: serial. Its lines are those only read and the written
            // ones it loaded before writing them (taken for writing at
            // their load). Then the other writes, whose addresses the hold
            // has: overlapping (see `sim/lines.rs`).
            let at = self.access_chain(c, h.w_end, h.r_end, false, t);
            let at = self.access_chain(c, h.w_first, h.w_loaded, true, at);
            self.access_overlapped(c, h.w_loaded, h.w_end, at, self.hold_overlap)
        } else {
            let at = self.access_chain(c, h.w_first, h.w_end, true, t);
            self.access_chain(c, h.w_end, h.r_end, false, at)
        };
        self.in_site = NO_SITE;
        self.cpus[c as usize].took_line_back = 0;
        if h.writes_lock_line {
            // A poller took the lock word's line after the hold wrote it:
            // the hold's next write to it takes it back.
            if let Some(p) = self.poller(li) {
                at += self.transfer(p, c);
                self.cpus[c as usize].took_line_back = 1;
            }
        }
        let dur = at - t + h.hold_ns * self.cpus[c as usize].scale;
        self.lock_acc[li].hold += dur;
        self.site_acc[h.site as usize].hold += dur;
        self.cpus[c as usize].done_at = t + dur;
        self.push(t + dur, c, Kind::Done);
    }

    /// Another CPU took lock `li`'s word line at `t` (an attempt, a
    /// parker's `validate`) while `h` holds the lock for writing. A hold
    /// that writes the word's line as data (a tree header beside the
    /// lock word: `aspace`'s central lock, `linux_shared_line`) touches it
    /// again after the theft, and that touch takes the line back: one
    /// transfer more in the hold, at most [`LOCK_LINE_TOUCHES`] times a
    /// hold (the poller's charge in [`Sim::grant`] counts as one; a theft
    /// after the hold's last touch is the release's own transfer, which
    /// the `Done` handler charges). The line is the holder's again from
    /// then on (a second theft before the holder's next touch is charged
    /// as another: an upper bound where thefts come in bursts).
    fn lock_line_taken(&mut self, li: usize, t: f64) {
        let h = self.locks[li].writer;
        if h == NONE {
            return;
        }
        let cpu = &self.cpus[h as usize];
        if cpu.state != CpuState::Holding
            || cpu.took_line_back >= LOCK_LINE_TOUCHES
            || t >= cpu.done_at
        {
            return;
        }
        if !self.cur_hold(h).writes_lock_line {
            return;
        }
        let line = self.locks[li].line;
        let back = self.access(h, line, true, t);
        let extra = back - t;
        let site = self.cur_hold(h).site as usize;
        let cpu = &mut self.cpus[h as usize];
        cpu.took_line_back += 1;
        if extra <= 0.0 {
            return;
        }
        cpu.done_at += extra;
        let done = cpu.done_at;
        self.lock_acc[li].hold += extra;
        self.site_acc[site].hold += extra;
        self.push(done, h, Kind::Done);
    }

    /// A waiter that polls lock `li`'s word, if any.
    fn poller(&self, li: usize) -> Option<u32> {
        let l = &self.locks[li];
        match l.kind {
            LockKind::KernelRwsem => l.osq.front().copied(),
            LockKind::ParkingLot => {
                (l.pollers > 0 && l.last_poller != NONE).then_some(l.last_poller)
            }
        }
    }

    /// `c` starts an acquisition of its current hold at `t`.
    fn try_acquire(&mut self, c: u32, t: f64) {
        let h = self.cur_hold(c);
        self.lock_acc[h.lock as usize].acq += 1;
        self.site_acc[h.site as usize].acq += 1;
        let cpu = &mut self.cpus[c as usize];
        cpu.contended = false;
        cpu.slept_at = -1.0;
        cpu.spins = 0;
        cpu.wait_start = t;
        self.attempt(c, t);
    }

    fn attempt(&mut self, c: u32, t: f64) {
        let li = self.cur_hold(c).lock as usize;
        match self.locks[li].kind {
            LockKind::KernelRwsem => self.rwsem_attempt(c, t),
            LockKind::ParkingLot => self.parking_attempt(c, t),
        }
    }

    /// `c` releases its current hold's lock at `t`, when it has the lock
    /// word's line (the caller took it); returns when `c` can go on (after
    /// the release's own cost and any wake-up it makes), or `None` when the
    /// release takes effect later (a `Release` event is pending).
    fn release(&mut self, c: u32, t: f64) -> Option<f64> {
        let h = self.cur_hold(c);
        let li = h.lock as usize;
        match self.locks[li].kind {
            LockKind::KernelRwsem => Some(self.rwsem_release(c, li, h.write, t)),
            LockKind::ParkingLot => self.parking_release(c, li, h.write, t),
        }
    }

    fn start_step(&mut self, c: u32, t: f64) {
        let (slot, step) = {
            let cpu = &self.cpus[c as usize];
            (cpu.slot, cpu.step)
        };
        match self.steps[slot][step] {
            CStep::Work(ns) => {
                let mut d = ns * self.cpus[c as usize].scale;
                if self.random_work && d > 0.0 {
                    d *= -self.rand01().ln();
                } else if self.work_jitter > 0.0 {
                    d *= 1.0 + self.work_jitter * (2.0 * self.rand01() - 1.0);
                }
                self.cpus[c as usize].state = CpuState::Running;
                self.push(t + d, c, Kind::Done);
            }
            CStep::Touch {
                first,
                w_end,
                s_end,
                r_end,
            } => {
                // Locked updates: each waits for the memory operations
                // before it (one after another), unless the machine
                // measured how far they overlap.
                let at = if self.touch_overlap < 1.0 {
                    self.access_overlapped(c, first, w_end, t, self.touch_overlap)
                } else {
                    self.access_chain(c, first, w_end, true, t)
                };
                // Plain stores after them: their ownership requests leave
                // the store buffer together.
                let at = if self.store_overlap < 1.0 {
                    self.access_overlapped(c, w_end, s_end, at, self.store_overlap)
                } else {
                    self.access_chain(c, w_end, s_end, true, at)
                };
                let at = self.access_chain(c, s_end, r_end, false, at);
                self.cpus[c as usize].state = CpuState::Running;
                self.push(at, c, Kind::Done);
            }
            CStep::Hold(_) => self.try_acquire(c, t),
        }
    }

    fn advance(&mut self, c: u32, t: f64) {
        let cpu = &mut self.cpus[c as usize];
        cpu.step += 1;
        if cpu.step == self.steps[cpu.slot].len() {
            cpu.step = 0;
            cpu.iterations += 1;
        }
        self.start_step(c, t);
    }

    fn handle(&mut self, ev: Ev) {
        let c = ev.cpu;
        let t = ev.t;
        match ev.kind {
            Kind::Done => {
                if self.cpus[c as usize].state == CpuState::Holding {
                    // The release's atomic needs the lock word's line: until
                    // it has it (another CPU's failed attempt or poll may
                    // have taken it), the lock is still held.
                    let h = self.cur_hold(c);
                    let li = h.lock as usize;
                    let drained = t.max(self.cpus[c as usize].store_done);
                    let got = self.access(c, self.locks[li].line, true, drained);
                    if got > t {
                        self.lock_acc[li].hold += got - t;
                        self.site_acc[h.site as usize].hold += got - t;
                        self.cpus[c as usize].state = CpuState::Releasing;
                        self.push(got, c, Kind::Release);
                        return;
                    }
                    if let Some(next) = self.release(c, t) {
                        self.advance(c, next);
                    }
                } else {
                    self.advance(c, t);
                }
            }
            Kind::Release => {
                if let Some(next) = self.release(c, t) {
                    self.advance(c, next);
                }
            }
            Kind::Attempt => {
                let st = self.cpus[c as usize].state;
                if matches!(
                    st,
                    CpuState::Spinning | CpuState::Waking | CpuState::Counting
                ) {
                    self.attempt(c, t);
                }
            }
            Kind::Poll => {
                if self.cpus[c as usize].state == CpuState::Spinning {
                    self.rwsem_poll(c, t);
                }
            }
            Kind::SpinTimeout => {
                let cpu = &self.cpus[c as usize];
                if cpu.gen != ev.gen || cpu.state != CpuState::Spinning {
                    return;
                }
                self.rwsem_spin_timeout(c, t);
            }
        }
    }

    fn snapshot(&self) -> (Vec<Acc>, Vec<Acc>, u64, [f64; 4]) {
        (
            self.lock_acc.clone(),
            self.site_acc.clone(),
            self.cpus.iter().map(|c| c.iterations).sum(),
            self.kind_ns,
        )
    }
}

/// Compiles `profile`, then simulates `cfg.cpus` copies of it on `m`.
///
/// Pure and deterministic for a given seed: callers may run simulations on
/// several threads at once.
pub fn simulate(m: &Machine, profile: &Profile, cfg: &SimConfig) -> Result<Prediction, SimError> {
    simulate_placed(m, profile, cfg, None)
}

/// [`simulate`] with the copies on the given hardware CPUs (one copy each,
/// distinct, below [`Machine::cpus`]; `cfg.cpus` must be their count)
/// instead of a built-in placement: where a bench recorded which CPUs its
/// unpinned threads ran on (`aspace predict --measured`). `None`: the
/// built-in placement, as [`simulate`].
pub fn simulate_placed(
    m: &Machine,
    profile: &Profile,
    cfg: &SimConfig,
    on: Option<&[u32]>,
) -> Result<Prediction, SimError> {
    if let Some(on) = on {
        let mut sorted = on.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != on.len()
            || on.len() != cfg.cpus as usize
            || on.iter().any(|&c| c >= m.cpus())
        {
            return Err(SimError::Config(format!(
                "placement {on:?}: {} distinct CPUs below {} wanted",
                cfg.cpus,
                m.cpus()
            )));
        }
    }
    m.validate().map_err(SimError::Machine)?;
    profile.validate().map_err(SimError::Profile)?;
    if cfg.cpus == 0 || cfg.cpus > m.cpus() {
        return Err(SimError::Config(format!(
            "{} copies on a machine of {} CPUs (1..={})",
            cfg.cpus,
            m.cpus(),
            m.cpus()
        )));
    }
    if !(cfg.duration_ns.is_finite()
        && cfg.duration_ns > 0.0
        && cfg.warmup_ns.is_finite()
        && cfg.warmup_ns >= 0.0
        && cfg.duration_ns + cfg.warmup_ns <= 1e12
        && (0.0..1.0).contains(&cfg.work_jitter))
    {
        return Err(SimError::Config(
            "duration and warm-up must be finite, duration positive, both at most 1000 s; jitter in [0, 1)".into(),
        ));
    }

    // Each further independent write of a hold costs this share of a
    // serial one (1: serial; see `sim/lines.rs`).
    let hold_overlap = if cfg.overlap {
        m.line_overlap().factor
    } else {
        1.0
    };
    let base_scale = profile.recorded_ghz / m.core_ghz / m.speed_at(cfg.cpus);
    // The bench's timed holds read the clock inside the held time
    // (`rmap::stats`: `start` just after the acquisition, `end` just
    // before the release); the recorded hold (`end - start`) contains
    // about one of the two reads, the recorded iteration (the plain
    // iterations' total) all of them, so the other one sits in the work
    // outside the holds. With the machine's clock read measured, each
    // hold of such a profile gets one read more (in recorded ns: scaled
    // below like the hold) and the slot's work as much less, in
    // proportion over its work steps (at most all of it).
    let timed_read = match (profile.hold_timing, m.clock_read_ns) {
        (true, Some(ns)) if base_scale > 0.0 => ns / base_scale,
        _ => 0.0,
    };
    // Lines: the profile's, then one parking bucket per parking_lot lock.
    let mut line_kind: Vec<u8> = profile.lines.iter().map(|k| k.index() as u8).collect();
    let mut line_ids: Vec<u32> = Vec::new();
    let steps: Vec<Vec<CStep>> = profile
        .slots
        .iter()
        .map(|s| {
            let work_left = if timed_read > 0.0 {
                let holds = s
                    .steps
                    .iter()
                    .filter(|st| matches!(st, Step::Hold(_)))
                    .count() as f64;
                let work = s.work_ns();
                if work > 0.0 {
                    (work - holds * timed_read).max(0.0) / work
                } else {
                    1.0
                }
            } else {
                1.0
            };
            s.steps
                .iter()
                .map(|st| match st {
                    Step::Work(t) => CStep::Work(*t * work_left),
                    Step::Hold(h) => {
                        let lock_line = profile.locks[h.lock as usize].line;
                        let w_first = line_ids.len() as u32;
                        let written = || h.written.iter().filter(|&&l| l != lock_line);
                        let w_loaded = if hold_overlap < 1.0 {
                            // The written lines the walk loaded first, then
                            // the others (the overlap's two groups).
                            let loaded = |l: &u32| h.loaded_first.contains(l);
                            line_ids.extend(written().filter(|l| loaded(l)));
                            let w_loaded = line_ids.len() as u32;
                            line_ids.extend(written().filter(|l| !loaded(l)));
                            w_loaded
                        } else {
                            // Serial: the recording's order.
                            line_ids.extend(written());
                            line_ids.len() as u32
                        };
                        let w_end = line_ids.len() as u32;
                        line_ids.extend(h.read.iter().filter(|&&l| l != lock_line));
                        CHold {
                            lock: h.lock,
                            write: h.write,
                            site: h.site.index() as u8,
                            hold_ns: h.hold_ns + timed_read,
                            w_first,
                            w_loaded,
                            w_end,
                            r_end: line_ids.len() as u32,
                            writes_lock_line: h.written.contains(&lock_line),
                        }
                        .into()
                    }
                    Step::Touch(tc) => {
                        let first = line_ids.len() as u32;
                        line_ids.extend(&tc.written);
                        let w_end = line_ids.len() as u32;
                        line_ids.extend(&tc.stored);
                        let s_end = line_ids.len() as u32;
                        line_ids.extend(&tc.read);
                        CStep::Touch {
                            first,
                            w_end,
                            s_end,
                            r_end: line_ids.len() as u32,
                        }
                    }
                })
                .collect()
        })
        .collect();
    let slot_of: HashMap<u32, usize> = profile
        .slots
        .iter()
        .enumerate()
        .map(|(i, s)| (s.cpu, i))
        .collect();

    let used = if let Some(on) = on {
        on.to_vec()
    } else if cfg.packed {
        m.placement_packed(cfg.cpus)
    } else if m.single_llc() {
        m.placement_from(cfg.first_cpu, cfg.cpus)
    } else {
        m.placement(cfg.cpus)
    };
    let mut core_users: HashMap<u32, u32> = HashMap::new();
    for &c in &used {
        *core_users.entry(m.place(c).core).or_insert(0) += 1;
    }
    // Simulated CPU i runs on hardware CPU used[i]; index CPUs by position.
    let cpus: Vec<Cpu> = used
        .iter()
        .map(|&hw| {
            let place = m.place(hw);
            let smt = if core_users[&place.core] > 1 {
                2.0 / m.smt_yield
            } else {
                1.0
            };
            Cpu {
                place,
                scale: base_scale * smt,
                slot: slot_of
                    .get(&hw)
                    .copied()
                    .unwrap_or(hw as usize % profile.slots.len()),
                step: 0,
                state: CpuState::Running,
                wait_start: 0.0,
                slept_at: -1.0,
                contended: false,
                gen: 0,
                iterations: 0,
                spins: 0,
                osq_ready: 0.0,
                store_done: 0.0,
                handed: false,
                unpark_walked: false,
                done_at: 0.0,
                took_line_back: 0,
            }
        })
        .collect();
    let locks: Vec<LockSt> = profile
        .locks
        .iter()
        .map(|l| {
            let bucket_line = if l.kind == LockKind::ParkingLot {
                line_kind.push(LineKind::LockWord.index() as u8);
                (line_kind.len() - 1) as u32
            } else {
                NONE
            };
            LockSt {
                kind: l.kind,
                line: l.line,
                writer: NONE,
                readers: 0,
                osq: VecDeque::new(),
                waitq: VecDeque::new(),
                handoff: NONE,
                first_spinner: NONE,
                nonspinnable: false,
                pollers: 0,
                last_poller: NONE,
                next_fair: 0.0,
                bucket_line,
                bucket_free_at: 0.0,
                parked_bit: false,
                contended_line: l.contended_line.unwrap_or(NONE),
            }
        })
        .collect();
    let nlocks = locks.len();
    // parking_lot's parking queue links each parked thread's `ThreadData`
    // (parking_lot_core): a line per thread, written by the thread as it
    // parks and by whoever parks behind it or unparks it.
    let td_line: Vec<u32> = if locks.iter().any(|l| l.kind == LockKind::ParkingLot) {
        (0..cfg.cpus)
            .map(|_| {
                line_kind.push(LineKind::LockWord.index() as u8);
                (line_kind.len() - 1) as u32
            })
            .collect()
    } else {
        Vec::new()
    };
    // Linux's `osq_node` is per CPU (kernel/locking/osq_lock.c,
    // DEFINE_PER_CPU_SHARED_ALIGNED): a line per CPU, shared by every
    // rwsem it spins on.
    let has_rwsem = locks.iter().any(|l| l.kind == LockKind::KernelRwsem);
    let mut per_cpu_lines = |wanted: bool| -> Vec<u32> {
        if !wanted {
            return Vec::new();
        }
        (0..cfg.cpus)
            .map(|_| {
                line_kind.push(LineKind::LockWord.index() as u8);
                (line_kind.len() - 1) as u32
            })
            .collect()
    };
    let osq_line = per_cpu_lines(has_rwsem);
    let wait_line = per_cpu_lines(has_rwsem);
    let task_line = per_cpu_lines(has_rwsem);
    let mut sim = Sim {
        m,
        steps,
        line_ids,
        lines: Lines::new(line_kind.len(), cfg.cpus as usize),
        line_kind,
        cpus,
        locks,
        heap: Queue::new(cfg.cpus as usize),
        lock_acc: vec![Acc::default(); nlocks],
        site_acc: vec![Acc::default(); Site::ALL.len()],
        kind_ns: [0.0; 4],
        in_site: NO_SITE,
        hold_acc: vec![(0, 0, 0.0); Site::ALL.len() * LineKind::ALL.len() * 2],
        rng: cfg.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
        random_work: cfg.random_work,
        work_jitter: cfg.work_jitter,
        events: 0,
        pause_ns: m.pause().ns,
        yield_ns: m.yield_cost().ns,
        futex_wake_ns: m.futex_wake().ns,
        clock_read_ns: m.clock_read_ns.unwrap_or(0.0),
        unlock_wake_ns: m.unlock_wake_after_release().ns,
        hold_overlap,
        touch_overlap: if cfg.overlap {
            m.rmw_overlap().factor
        } else {
            1.0
        },
        store_overlap: if cfg.overlap {
            m.store_overlap().factor
        } else {
            1.0
        },
        td_line,
        osq_line,
        wait_line,
        task_line,
    };
    for li in 0..nlocks {
        let first = sim.rand01() * parking::FAIR_TIMEOUT_MAX_NS;
        sim.locks[li].next_fair = first;
    }
    // Start each copy at a random point of its first iteration, so that
    // copies do not run in lock-step.
    for c in 0..cfg.cpus {
        let (slot, scale) = (sim.cpus[c as usize].slot, sim.cpus[c as usize].scale);
        let iter_ns: f64 = sim.steps[slot]
            .iter()
            .map(|s| match s {
                CStep::Work(t) => *t,
                CStep::Hold(h) => h.hold_ns,
                CStep::Touch { .. } => 0.0,
            })
            .sum::<f64>()
            * scale;
        let off = sim.rand01() * iter_ns;
        sim.start_step(c, off);
    }
    let end_warm = cfg.warmup_ns;
    let end = cfg.warmup_ns + cfg.duration_ns;
    let mut before = None;
    while let Some(ev) = sim.heap.take() {
        if before.is_none() && ev.t >= end_warm {
            before = Some(sim.snapshot());
            sim.hold_acc.fill((0, 0, 0.0));
        }
        if ev.t >= end {
            break;
        }
        if ev.gen != sim.cpus[ev.cpu as usize].gen && !matches!(ev.kind, Kind::Done | Kind::Release)
        {
            // A stale attempt or timeout of an acquisition that moved on.
            continue;
        }
        sim.events += 1;
        sim.handle(ev);
    }
    let before = before.unwrap_or_else(|| sim.snapshot());
    let after = sim.snapshot();
    let iters = after.2 - before.2;
    let total_cpu = cfg.duration_ns * f64::from(cfg.cpus);
    let locks: Vec<LockResult> = after
        .0
        .iter()
        .zip(&before.0)
        .enumerate()
        .map(|(i, (a, b))| {
            let d = a.minus(b);
            LockResult {
                name: profile.locks[i].name.clone(),
                acquisitions: d.acq,
                contended: d.contended,
                hold_ns: d.hold,
                spin_ns: d.spin,
                sleep_ns: d.sleep,
            }
        })
        .filter(|l| l.acquisitions > 0)
        .collect();
    let sites: Vec<SiteResult> = after
        .1
        .iter()
        .zip(&before.1)
        .enumerate()
        .map(|(i, (a, b))| {
            let d = a.minus(b);
            SiteResult {
                site: Site::ALL[i].name().to_owned(),
                acquisitions: d.acq,
                hold_ns: d.hold,
                spin_ns: d.spin,
                sleep_ns: d.sleep,
            }
        })
        .filter(|s| s.acquisitions > 0)
        .collect();
    let lines: Vec<LineResult> = LineKind::ALL
        .iter()
        .map(|k| LineResult {
            kind: k.name().to_owned(),
            transfer_ns: after.3[k.index()] - before.3[k.index()],
        })
        .filter(|l| l.transfer_ns > 0.0)
        .collect();
    let mut hold_lines = Vec::new();
    for (si, site) in Site::ALL.iter().enumerate() {
        for k in LineKind::ALL {
            for write in [false, true] {
                let (accesses, charged, ns) =
                    sim.hold_acc[hold_acc_index(si as u8, k.index() as u8, write)];
                if accesses > 0 {
                    hold_lines.push(HoldLines {
                        site: site.name().to_owned(),
                        kind: k.name().to_owned(),
                        write,
                        accesses,
                        charged,
                        ns,
                        holds: after.1[si].acq - before.1[si].acq,
                    });
                }
            }
        }
    }
    let acq: u64 = locks.iter().map(|l| l.acquisitions).sum();
    let cont: u64 = locks.iter().map(|l| l.contended).sum();
    let spin: f64 = locks.iter().map(|l| l.spin_ns).sum();
    let sleep: f64 = locks.iter().map(|l| l.sleep_ns).sum();
    let hold: f64 = locks.iter().map(|l| l.hold_ns).sum();
    let transfer: f64 = lines.iter().map(|l| l.transfer_ns).sum();
    Ok(Prediction {
        cpus: cfg.cpus,
        per_s: iters as f64 / (cfg.duration_ns * 1e-9),
        spin_share: spin / total_cpu,
        wait_share: (spin + sleep) / total_cpu,
        hold_share: hold / total_cpu,
        transfer_share: transfer / total_cpu,
        contended_pct: if acq == 0 {
            0.0
        } else {
            100.0 * cont as f64 / acq as f64
        },
        locks,
        sites,
        lines,
        hold_lines,
        events: sim.events,
    })
}

impl From<CHold> for CStep {
    fn from(h: CHold) -> CStep {
        CStep::Hold(h)
    }
}

/// The transfer latency of a line from CPU `a`'s cache to CPU `b`'s on
/// `m` (0 for the same CPU).
fn transfer_ns(m: &Machine, cpus: &[Cpu], a: u32, b: u32) -> f64 {
    if a == b {
        0.0
    } else {
        m.latency(Machine::distance(
            &cpus[a as usize].place,
            &cpus[b as usize].place,
        ))
    }
}
