//! The discrete-event simulator: P CPUs of a [`Machine`] run a [`Profile`]'s
//! iterations, contending for rwsems and moving cache lines.
//!
//! # What is modelled
//!
//! * **CPUs.** `P` copies run on the CPUs [`Machine::placement`] picks (nodes,
//!   then caches, then SMT siblings). Recorded times are scaled by
//!   `profile.recorded_ghz / machine.core_ghz`, and by `2 / smt_yield` on a
//!   core whose sibling is also used. One copy per CPU: no preemption, no
//!   oversubscription, no scheduler.
//! * **Locks** behave like the kernel's rwsem. A writer that finds the lock
//!   free takes it (stealing past sleepers, as the optimistic-spin path
//!   does). Otherwise it spins (burning its CPU) while the owner is a
//!   writer, queued in arrival order (the kernel's MCS `osq`); on a
//!   reader-owned lock it spins at most `reader_spin_ns`, then sleeps. At
//!   release the first spinner gets the lock; with no spinner, the first
//!   sleeper is woken and the lock handed off to it (reserved during the
//!   `wake_ns` wake-up; a run of readers at the head is woken together);
//!   handing the lock to a spinner costs one line transfer to signal it
//!   (the osq's MCS node) before its acquire. A
//!   sleeper that has waited 4 ms (`RWSEM_WAIT_TIMEOUT`) gets the hand-off
//!   ahead of spinners. Readers never spin; a reader that finds a writer,
//!   a reservation or a sleeper queued goes to sleep.
//! * **Cache lines.** Each lock word is one line; each data set (tree,
//!   shard) has lines numbered from 0; a hold writes its first
//!   `lines_written` lines and reads the next `lines_read`. A line's
//!   transfer costs the [`Machine::latency`] between the CPU that last wrote
//!   it and the CPU that now needs it; a reader keeps a shared copy until
//!   the next write. Acquire and release cost the lock line's transfer (an
//!   uncontended atomic's own cost is inside the recorded hold times, so
//!   `atomic_rmw_ns` describes the machine but is not added); a hand-off
//!   therefore keeps the lock unavailable
//!   for the transfer to the next owner, which is what makes a lock slower
//!   the farther apart its users are. When the lock word shares a line with
//!   written data and a waiter spins on it, each hold pays one more
//!   transfer (the spinner's poll stole the line).
//!
//!   Whether a lock word shares its line with written data is recorded
//!   from the real code (`rmap::trace` reports a hold that writes the lock
//!   word's line as data; [`crate::LockDesc::shares_line_with_data`]).
//!
//! # What is not modelled
//!
//! * **Other shared lines of a real exec.** Every exec of a dynamically
//!   linked binary also writes lines that every other copy writes: the
//!   reference counts and `_mapcount` of libc's and ld.so's page-cache folios
//!   (each fault that maps them, each unmap at exit), the dentry and
//!   `struct file` references of the path walk and `open` of each library,
//!   the inode's `i_writecount`/`i_mmap_writable` where they change, the
//!   `mm` and page-table allocations (per-CPU caches, mostly local), and the
//!   global counters of the memory cgroup. These are atomics on lines, not
//!   locks: each costs a line transfer when another CPU wrote it last, and
//!   a line can move only so many times a second, so together they set a
//!   ceiling that every design shares. The simulator has no such lines, so
//!   once a design's reverse map stops being the bottleneck its curve rises
//!   to `CPUs x SMT yield / exec cost`: ratios between an uncontended design
//!   and a collapsed one (numa_locks / linux on 384 CPUs) come out larger
//!   than the kernel's, and no design can be predicted to beat another that
//!   is already uncontended (aspace / numa_locks stays about 1).
//! * Other global locks, memory bandwidth, interrupts, frequency changes
//!   with load, the exact osq/MCS hand-off costs, and rwsem lock-stealing
//!   heuristics beyond those above. Work outside the locks scales
//!   perfectly.
//! * A split is one hold of the kernel's `__split_vma` only because the
//!   recorder merges the model's consecutive split holds of one lock made
//!   by one system call; a lock held across several reverse-map calls is
//!   otherwise not modelled (an outer lock is taken and released around
//!   nothing).
//! * **Why the spin share can stay below the kernel's.** The rwsem above
//!   is the kernel's as documented (writers spin on a running writer owner
//!   in osq order, bounded spinning on reader owners, sleep with a wake-up,
//!   hand-off after 4 ms, lock stealing by a writer that finds it free).
//!   With one copy per CPU every owner runs, so every waiting writer spins,
//!   as in the kernel; what sets the spin share is then the ratio of the
//!   lock's serial time per exec (hold times plus line transfers) to the
//!   work outside it. The recorded holds under-count that serial time
//!   (lines: only the path and the entry's parent are counted written, no
//!   rotation or augmented-maximum update; the kernel's split hold removes
//!   and inserts twice, the model's one insert; a `MAP_FIXED` that merges
//!   with its neighbour is three kernel holds and one of the model's), and
//!   the work outside it is the host's calibrated exec cost scaled only by
//!   clock, which a server core may do in half the time. Either makes the
//!   simulated spin share lower than the kernel's, and no rwsem setting
//!   would fix that without fitting.
//!
//! # Speed
//!
//! Every event is one step of one CPU. The queue is a binary heap of
//! integer keys (the bits of a non-negative `f64` order as the number
//! does) whose top is replaced in place when the handler schedules the
//! CPU's next step; line states are flat arrays (last writer, a count of
//! shared copies, one bit per CPU) so that writing a line nobody shares
//! costs no scan, and reads are clipped to the lines some hold writes (a
//! line nobody writes never costs a transfer). Nothing is allocated per
//! event.

use crate::machine::{Machine, MachineError, Place};
use crate::profile::{Profile, ProfileError, Site, Step};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::fmt;

/// How long to simulate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimConfig {
    /// Copies (one per CPU).
    pub cpus: u32,
    /// Measured simulated time, ns.
    pub duration_ns: f64,
    /// Simulated time before measuring, ns.
    pub warmup_ns: f64,
    /// Seed of the start offsets (and of random work, when on).
    pub seed: u64,
    /// Draw each work step from an exponential distribution with the
    /// recorded mean instead of taking it as recorded (for queueing tests).
    pub random_work: bool,
    /// Otherwise, stretch each work step by a factor uniform in
    /// `[1 - j, 1 + j]` (0: exactly as recorded). A little jitter keeps
    /// copies from locking into one phase, as no real machine does.
    pub work_jitter: f64,
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
    /// CPU time spinning for it, ns.
    pub spin_ns: f64,
    /// Time asleep waiting for it, ns.
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
    /// Contended acquisitions / acquisitions, percent.
    pub contended_pct: f64,
    /// Per lock (only locks acquired in the window).
    pub locks: Vec<LockResult>,
    /// Per call site (only sites seen).
    pub sites: Vec<SiteResult>,
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

/// Time a sleeper waits before it gets the hand-off ahead of spinners.
const HANDOFF_TIMEOUT_NS: f64 = 4e6;
const NONE: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct CHold {
    lock: u32,
    write: bool,
    site: u8,
    hold_ns: f64,
    w_first: u32,
    w_end: u32,
    r_end: u32,
}

#[derive(Clone, Copy)]
enum CStep {
    Work(f64),
    Hold(CHold),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum CpuState {
    Running,
    Holding,
    Spinning,
    Sleeping,
    Waking,
}

struct Cpu {
    place: Place,
    scale: f64,
    slot: usize,
    step: usize,
    state: CpuState,
    wait_start: f64,
    gen: u32,
    iterations: u64,
}

/// A cache line: its last writer, and how many CPUs hold a shared copy
/// (their bits are in [`Sim::sharers`], `words` per line, so that a write to
/// a line nobody shares costs no scan).
#[derive(Clone, Copy)]
struct Line {
    last_writer: u32,
    nsharers: u32,
}

struct LockSt {
    writer: u32,
    readers: u32,
    reserved: bool,
    spinners: VecDeque<u32>,
    sleepers: VecDeque<u32>,
    line: u32,
    shares: bool,
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

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Done,
    SpinTimeout,
    Wake,
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
/// every comparison is an integer compare; ties go to the lower CPU.
///
/// The loop [`Queue::take`]s the earliest event, leaving its key on top
/// while the event is handled: the handler's first push replaces that key
/// in place (one sift down, instead of a pop's and a push's), and
/// [`Queue::done`] pops it if the handler pushed nothing.
struct Queue {
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    /// The events, two slots per CPU: `2c` for its running step (`Done`,
    /// `Wake`), `2c + 1` for a spin timeout (a newer one only replaces one
    /// its `gen` already made stale; the old key is skipped).
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

    /// The earliest event; its key stays on top until a push or `done`.
    fn take(&mut self) -> Option<Ev> {
        self.done();
        loop {
            let &Reverse((bits, slot)) = self.heap.peek()?;
            let e = self.ev[slot as usize];
            if e.t.to_bits() == bits {
                self.held = true;
                return Some(e);
            }
            // A spin timeout whose slot a newer one took.
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
    cpus: Vec<Cpu>,
    locks: Vec<LockSt>,
    lines: Vec<Line>,
    /// Shared-copy bits: line `l`'s are `sharers[l * words..(l + 1) * words]`.
    sharers: Vec<u64>,
    words: usize,
    heap: Queue,
    lock_acc: Vec<Acc>,
    site_acc: Vec<Acc>,
    rng: u64,
    random_work: bool,
    work_jitter: f64,
    events: u64,
}

impl<'a> Sim<'a> {
    fn rand01(&mut self) -> f64 {
        // xorshift64*: enough for start offsets and exponential draws.
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
        if from == NONE || from == to {
            return 0.0;
        }
        let a = &self.cpus[from as usize].place;
        let b = &self.cpus[to as usize].place;
        self.m.latency(Machine::distance(a, b))
    }

    /// Cost for `c` to write line `l`, and the line now owned by `c`.
    fn write_line(&mut self, c: u32, l: u32) -> f64 {
        let line = self.lines[l as usize];
        let mut cost = if line.last_writer != c {
            self.transfer(line.last_writer, c)
        } else {
            0.0
        };
        if line.nsharers > 0 {
            // The copy another sharer holds must be invalidated: the
            // first other sharer's distance stands for them all.
            let w = (c / 64) as usize;
            let own = 1u64 << (c % 64);
            let base = l as usize * self.words;
            let mut other = NONE;
            for (i, &bits) in self.sharers[base..base + self.words].iter().enumerate() {
                let bits = if i == w { bits & !own } else { bits };
                if bits != 0 {
                    other = i as u32 * 64 + bits.trailing_zeros();
                    break;
                }
            }
            if other != NONE {
                cost = cost.max(self.transfer(other, c));
            }
            self.sharers[base..base + self.words].fill(0);
        }
        self.lines[l as usize] = Line {
            last_writer: c,
            nsharers: 0,
        };
        cost
    }

    fn read_line(&mut self, c: u32, l: u32) -> f64 {
        let line = self.lines[l as usize];
        if line.last_writer == c || line.last_writer == NONE {
            // Never written by another CPU: nothing to fetch.
            return 0.0;
        }
        let i = l as usize * self.words + (c / 64) as usize;
        let bit = 1u64 << (c % 64);
        if self.sharers[i] & bit != 0 {
            return 0.0;
        }
        self.sharers[i] |= bit;
        self.lines[l as usize].nsharers += 1;
        self.transfer(line.last_writer, c)
    }

    fn cur_hold(&self, c: u32) -> CHold {
        let cpu = &self.cpus[c as usize];
        match self.steps[cpu.slot][cpu.step] {
            CStep::Hold(h) => h,
            CStep::Work(_) => unreachable!("cur_hold on a work step"),
        }
    }

    /// `c` gets the lock of its current hold at `t`; schedules the release.
    fn grant(&mut self, c: u32, t: f64) {
        let h = self.cur_hold(c);
        let li = h.lock as usize;
        {
            let cpu = &mut self.cpus[c as usize];
            let waited = t - cpu.wait_start;
            match cpu.state {
                CpuState::Spinning => {
                    self.lock_acc[li].spin += waited;
                    self.site_acc[h.site as usize].spin += waited;
                }
                CpuState::Waking => {
                    self.lock_acc[li].sleep += waited;
                    self.site_acc[h.site as usize].sleep += waited;
                }
                _ => {}
            }
            cpu.state = CpuState::Holding;
            cpu.gen = cpu.gen.wrapping_add(1);
        }
        // A reader was counted in `readers` when admitted (or woken).
        if h.write {
            self.locks[li].writer = c;
        }
        let lock_line = self.locks[li].line;
        // Acquire and release: the lock word's line, if another CPU wrote
        // it last. The atomics' own cost on a local line is already inside
        // the recorded times (they were measured with the lock taken).
        let mut cost = self.write_line(c, lock_line);
        for l in h.w_first..h.w_end {
            cost += self.write_line(c, l);
        }
        for l in h.w_end..h.r_end {
            cost += self.read_line(c, l);
        }
        if self.locks[li].shares && h.w_end > h.w_first {
            if let Some(&s) = self.locks[li].spinners.front() {
                cost += self.transfer(s, c);
            }
        }
        let dur = h.hold_ns * self.cpus[c as usize].scale + cost;
        self.lock_acc[li].hold += dur;
        self.site_acc[h.site as usize].hold += dur;
        self.push(t + dur, c, Kind::Done);
    }

    fn lock_free_for_writer(&self, li: usize) -> bool {
        let l = &self.locks[li];
        l.writer == NONE && l.readers == 0 && !l.reserved
    }

    fn try_acquire(&mut self, c: u32, t: f64) {
        let h = self.cur_hold(c);
        let li = h.lock as usize;
        self.lock_acc[li].acq += 1;
        self.site_acc[h.site as usize].acq += 1;
        if h.write {
            if self.lock_free_for_writer(li) {
                self.grant(c, t);
                return;
            }
            self.lock_acc[li].contended += 1;
            self.site_acc[h.site as usize].contended += 1;
            let reader_owned = self.locks[li].writer == NONE && self.locks[li].readers > 0;
            let cpu = &mut self.cpus[c as usize];
            cpu.state = CpuState::Spinning;
            cpu.wait_start = t;
            self.locks[li].spinners.push_back(c);
            if reader_owned {
                self.push(t + self.m.reader_spin_ns, c, Kind::SpinTimeout);
            }
        } else {
            let l = &self.locks[li];
            if l.writer == NONE && !l.reserved && l.sleepers.is_empty() {
                self.locks[li].readers += 1;
                self.grant(c, t);
                return;
            }
            self.lock_acc[li].contended += 1;
            self.site_acc[h.site as usize].contended += 1;
            let cpu = &mut self.cpus[c as usize];
            cpu.state = CpuState::Sleeping;
            cpu.wait_start = t;
            self.locks[li].sleepers.push_back(c);
        }
    }

    fn release(&mut self, c: u32, li: usize, write: bool, t: f64) {
        {
            let l = &mut self.locks[li];
            if write {
                l.writer = NONE;
            } else {
                l.readers -= 1;
            }
            if l.writer != NONE || l.readers > 0 || l.reserved {
                return;
            }
        }
        let sleeper_first = self.locks[li]
            .sleepers
            .front()
            .is_some_and(|&s| t - self.cpus[s as usize].wait_start >= HANDOFF_TIMEOUT_NS);
        if !sleeper_first {
            if let Some(s) = self.locks[li].spinners.pop_front() {
                // The osq is an MCS queue: the head learns it is next by a
                // write to its queue node, one more line moved from the
                // releaser before the head's own acquire.
                let signal = self.transfer(c, s);
                self.grant(s, t + signal);
                return;
            }
        }
        if self.locks[li].sleepers.is_empty() {
            return;
        }
        // Wake the head: one writer, or every reader up to the first writer.
        let wake = self.m.wake_ns;
        let head = *self.locks[li].sleepers.front().expect("non-empty");
        let head_writes = self.cur_hold(head).write;
        self.locks[li].reserved = head_writes;
        while let Some(&s) = self.locks[li].sleepers.front() {
            let writes = self.cur_hold(s).write;
            if writes != head_writes {
                break;
            }
            self.locks[li].sleepers.pop_front();
            if !writes {
                self.locks[li].readers += 1;
            }
            let cpu = &mut self.cpus[s as usize];
            cpu.state = CpuState::Waking;
            self.push(t + wake, s, Kind::Wake);
            if writes {
                break;
            }
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
                    let h = self.cur_hold(c);
                    self.release(c, h.lock as usize, h.write, t);
                }
                self.advance(c, t);
            }
            Kind::SpinTimeout => {
                let cpu = &self.cpus[c as usize];
                if cpu.gen != ev.gen || cpu.state != CpuState::Spinning {
                    return;
                }
                let h = self.cur_hold(c);
                let li = h.lock as usize;
                let l = &self.locks[li];
                if !(l.writer == NONE && l.readers > 0) {
                    return; // No longer reader-owned: keep spinning.
                }
                let waited = t - self.cpus[c as usize].wait_start;
                self.lock_acc[li].spin += waited;
                self.site_acc[h.site as usize].spin += waited;
                self.locks[li].spinners.retain(|&s| s != c);
                self.locks[li].sleepers.push_back(c);
                let cpu = &mut self.cpus[c as usize];
                cpu.state = CpuState::Sleeping;
                cpu.wait_start = t;
            }
            Kind::Wake => {
                let h = self.cur_hold(c);
                if h.write {
                    self.locks[h.lock as usize].reserved = false;
                }
                self.grant(c, t);
            }
        }
    }

    fn snapshot(&self) -> (Vec<Acc>, Vec<Acc>, u64) {
        (
            self.lock_acc.clone(),
            self.site_acc.clone(),
            self.cpus.iter().map(|c| c.iterations).sum(),
        )
    }
}

/// Compiles `profile`, then simulates `cfg.cpus` copies of it on `m`.
pub fn simulate(m: &Machine, profile: &Profile, cfg: &SimConfig) -> Result<Prediction, SimError> {
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

    // Lines: one per lock word, then each data set's lines.
    let nlocks = profile.locks.len();
    let mut data_lines: HashMap<u32, u32> = HashMap::new();
    for s in &profile.slots {
        for st in &s.steps {
            if let Step::Hold(h) = st {
                let n = data_lines.entry(h.data).or_insert(0);
                *n = (*n).max(h.lines_written + h.lines_read);
            }
        }
    }
    let mut data_base: HashMap<u32, u32> = HashMap::new();
    let mut next = nlocks as u32;
    let mut keys: Vec<u32> = data_lines.keys().copied().collect();
    keys.sort_unstable();
    for d in keys {
        data_base.insert(d, next);
        next += data_lines[&d];
    }
    let words = m.cpus().div_ceil(64) as usize;
    let lines = vec![
        Line {
            last_writer: NONE,
            nsharers: 0,
        };
        next as usize
    ];
    // A line no hold ever writes never costs a transfer (its first read
    // finds no writer): reads are clipped to the lines some hold writes.
    let mut data_written: HashMap<u32, u32> = HashMap::new();
    for s in &profile.slots {
        for st in &s.steps {
            if let Step::Hold(h) = st {
                let n = data_written.entry(h.data).or_insert(0);
                *n = (*n).max(h.lines_written);
            }
        }
    }

    let steps: Vec<Vec<CStep>> = profile
        .slots
        .iter()
        .map(|s| {
            s.steps
                .iter()
                .map(|st| match st {
                    Step::Work(t) => CStep::Work(*t),
                    Step::Hold(h) => {
                        let base = data_base[&h.data];
                        let w_end = base + h.lines_written;
                        let r_end = (w_end + h.lines_read).min(base + data_written[&h.data]);
                        CStep::Hold(CHold {
                            lock: h.lock,
                            write: h.write,
                            site: h.site.index() as u8,
                            hold_ns: h.hold_ns,
                            w_first: base,
                            w_end,
                            r_end: r_end.max(w_end),
                        })
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

    let used = m.placement(cfg.cpus);
    let mut core_users: HashMap<u32, u32> = HashMap::new();
    for &c in &used {
        *core_users.entry(m.place(c).core).or_insert(0) += 1;
    }
    let base_scale = profile.recorded_ghz / m.core_ghz;
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
                gen: 0,
                iterations: 0,
            }
        })
        .collect();
    let locks: Vec<LockSt> = profile
        .locks
        .iter()
        .enumerate()
        .map(|(i, l)| LockSt {
            writer: NONE,
            readers: 0,
            reserved: false,
            spinners: VecDeque::new(),
            sleepers: VecDeque::new(),
            line: i as u32,
            shares: l.shares_line_with_data,
        })
        .collect();
    let mut sim = Sim {
        m,
        steps,
        cpus,
        locks,
        lines,
        sharers: vec![0; next as usize * words],
        words,
        heap: Queue::new(cfg.cpus as usize),
        lock_acc: vec![Acc::default(); nlocks],
        site_acc: vec![Acc::default(); Site::ALL.len()],
        rng: cfg.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
        random_work: cfg.random_work,
        work_jitter: cfg.work_jitter,
        events: 0,
    };
    // Start each copy at a random point of its first work step, so that
    // copies do not run in lock-step.
    for c in 0..cfg.cpus {
        let (slot, scale) = (sim.cpus[c as usize].slot, sim.cpus[c as usize].scale);
        let iter_ns: f64 = sim.steps[slot]
            .iter()
            .map(|s| match s {
                CStep::Work(t) => *t,
                CStep::Hold(h) => h.hold_ns,
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
        }
        if ev.t >= end {
            break;
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
    let acq: u64 = locks.iter().map(|l| l.acquisitions).sum();
    let cont: u64 = locks.iter().map(|l| l.contended).sum();
    let spin: f64 = locks.iter().map(|l| l.spin_ns).sum();
    let sleep: f64 = locks.iter().map(|l| l.sleep_ns).sum();
    let hold: f64 = locks.iter().map(|l| l.hold_ns).sum();
    Ok(Prediction {
        cpus: cfg.cpus,
        per_s: iters as f64 / (cfg.duration_ns * 1e-9),
        spin_share: spin / total_cpu,
        wait_share: (spin + sleep) / total_cpu,
        hold_share: hold / total_cpu,
        contended_pct: if acq == 0 {
            0.0
        } else {
            100.0 * cont as f64 / acq as f64
        },
        locks,
        sites,
        events: sim.events,
    })
}
