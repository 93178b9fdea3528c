//! Records profiles from the real code: the model's exec loop (or fork,
//! exec and exit), every reverse-map lock hold recorded by `rmap::trace`
//! with the cache lines it touched, by identity.
//!
//! One thread per CPU of the target machine (the maps built for its
//! emulated topology, so that each thread's holds go to the shards its CPU
//! would use). The threads take turns, one iteration each, round after
//! round, all on the same shared trees: each slot's holds meet the trees as
//! the other CPUs' iterations left them, so the nodes a neighbour's insert
//! rotated are on this slot's path with the neighbour's identity, as on a
//! machine where the copies run at once. Which of those lines cost a
//! transfer, and when, is the simulator's business: the profile lists
//! only which lines each hold touches. Hold times and the iteration's CPU
//! time come from plain iterations run back to back on each thread (every
//! line in its cache), never from the turns.

use super::events::{
    call_site, coalesce_splits, correct_holds, label_calls, median_of, place, pool_times, record,
    recorded_gaps, step_holds, summarise, unnest, Event, Placement,
};
use crate::model_exec::thread_cpu_ns;
use mm::{CallPattern, Files, Mm, Program};
use predict::{CpuProfile, Hold, LineKind, LockDesc, LockKind, Machine, Profile, Site, Step};
use rmap::{Design, Topology};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// Whose costs a profile stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cost {
    /// The model as `aspace bench` runs it: parking_lot locks, the lab's
    /// lock counters, every call into a reverse map one hold (a split is a
    /// removal and an insert per piece).
    Model,
    /// The kernel: rwsems, no lab counters, a split one hold (as
    /// `__split_vma`).
    Kernel,
}

/// What to record.
#[derive(Clone, Debug)]
pub struct RecordConfig {
    /// The design.
    pub design: Design,
    /// The call pattern.
    pub pattern: CallPattern,
    /// `execl` (exec replaces the image) or `shell` (fork, exec, exit).
    pub shell: bool,
    /// The binary.
    pub binary: std::path::PathBuf,
    /// Resident processes keeping the maps populated.
    pub resident: usize,
    /// Rounds of recorded iterations (each slot's median is kept).
    pub iterations: usize,
    /// Contended warm-up before recording (threads, time), so that a
    /// design that adapts under contention is recorded adapted.
    pub warmup: (usize, Duration),
    /// Each CPU execs its own copy of the binary (a file, and so a reverse
    /// map, of its own), the interpreter and libraries shared: the
    /// exit-batching benchmark's setting ("binaries are separate, but the
    /// loader is shared"). Otherwise every CPU execs the same file, as
    /// UnixBench does.
    pub own_binary: bool,
    /// Model or kernel costs.
    pub cost: Cost,
    /// The locks' kind in the profile (the model's recorded holds can be
    /// simulated under either lock: `aspace bench --lock`).
    pub lock: LockKind,
    /// Staggered turns (the default since session s39): with more than
    /// one slot of the exec loop, a turn is one part of an exec and the
    /// slots are spread over its parts (see `take_turns`). `false`: one
    /// whole exec a turn, as before (kept to compare the two).
    pub stagger: bool,
    /// The model cost with kernel-shaped splits (the cut VMA removed and
    /// reinserted in the split's hold, [`Files::set_kernel_split_holds`]),
    /// as `aspace bench --cost kernel` runs the model; the kernel cost
    /// always has them ([`registry`]).
    pub kernel_splits: bool,
}

/// The process that runs the loop. For `shell` it is the forking shell,
/// which has the program (libc, ld.so and its binary) mapped, as UnixBench's
/// `sh` has: each fork then copies those file VMAs (`dup_mmap` links each
/// child VMA into its file's tree, one `i_mmap_rwsem` hold each) and the
/// child's exec tears the copies down before mapping the new image. An
/// empty parent would fork nothing and make a shell iteration an execl.
fn looper(files: &std::sync::Arc<Files>, shell: bool, prog: &Program) -> Mm {
    let mm = Mm::new(files.clone());
    if shell {
        mm.exec_program(prog);
    }
    mm
}

fn iteration(shell: bool, mm: &Mm, prog: &Program) {
    if shell {
        let child = mm.fork();
        child.exec_program(prog);
        child.exit();
    } else {
        mm.exec_program(prog);
    }
}

/// One link and one unlink of a one-page VMA `id` on `f`'s map (two holds
/// of its lock, through the maps' own interface, as any design has it):
/// the warm-up's unit of lock traffic.
fn link_unlink(f: &mm::File, id: u64) {
    if let Ok(h) = f.rmap().insert(
        rmap::Interval::new(0, 0).unwrap_or(rmap::Interval::FULL),
        id,
    ) {
        let _ = f.rmap().remove(h);
    }
}

/// Turns [`alternate`] makes (about 10 ms on an idle 2-vCPU host)...
const ALTERNATE_TURNS: usize = 20_000;
/// ... or the longest it runs, on a host too busy to run both at once.
const ALTERNATE_MAX: Duration = Duration::from_secs(3);
/// Phases [`alternate`] is repeated at most, on a host too busy to make
/// its turns in one (each at most [`ALTERNATE_MAX`]).
const ALTERNATE_TRIES: usize = 10;
/// Spins while waiting for the turn before giving the CPU away (tens of
/// microseconds): a thread that yields at once, on a busy host, gives its
/// time slice to another process every time its partner is not running,
/// and the two then almost never run together (8-28 turns in 20 ms beside
/// two Miri processes, against tens of thousands alone).
const ALTERNATE_SPINS: u32 = 1 << 14;

/// The warm-up's last phase: two threads, alone, pass a turn back and
/// forth [`ALTERNATE_TURNS`] times (at most for [`ALTERNATE_MAX`]), each
/// making one link and one unlink on every file of `shared` at its turn;
/// returns the turns made and the time they took.
///
/// Consecutive holds of each shared file's lock then come from two threads
/// well under a microsecond apart, as on a many-CPU machine, where they
/// come from different CPUs millions of times a second. The contended
/// warm-up's threads hand a lock from one to the other quickly only when
/// the host runs two of them at once and the waiter spins rather than
/// parks (a parked waiter's wake-up takes longer than a many-CPU machine's
/// holds are apart).
///
/// Measured with aspace on the 2-vCPU host, `/etc/ld.so.cache` (which
/// every exec maps and unmaps) stayed on its central lock in 10 of 10
/// recordings while the warm-up's bursts covered only the ELF objects, in
/// 4 of 6 once they covered every mapped file, and in none of 6 with this
/// phase; a recording that kept it central predicted aspace at 0.84 of
/// numa_locks on 384 CPUs, one that did not 1.01. Beside two Miri
/// processes (load average 4.6), a phase that waited only 64 spins before
/// yielding left every file central (4 locks); waiting
/// [`ALTERNATE_SPINS`], 3 of 3 recordings adapted every shared file, their
/// 20,000 hand-overs taking 110-167 ms. The profile's notes give the
/// hand-overs made, and say so when the host could not make them all.
///
/// Files that each CPU maps alone (`own_binary`'s executables) are not
/// shared, so not alternated. A design that does not adapt only gets some
/// thousands of holds more, before the residents are rebuilt.
fn alternate(shared: &[&std::sync::Arc<mm::File>]) -> (usize, Duration) {
    let start = std::time::Instant::now();
    if shared.is_empty() {
        return (0, Duration::ZERO);
    }
    let stop = AtomicBool::new(false);
    // The turn's holder: turns made so far, even for side 0, odd for side 1.
    let turn = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for side in 0..2usize {
            let (turn, stop) = (&turn, &stop);
            s.spawn(move || {
                let _site = rmap::stats::set_call_site(rmap::stats::CallSite::Other);
                let id = u64::MAX - (1 << 20) - side as u64;
                let mut spins = 0u32;
                // Relaxed: a stop flag.
                while !stop.load(Ordering::Relaxed) {
                    // Acquire: pairs with the other side's Release hand-over
                    // (nothing is published through it but the turn).
                    let t = turn.load(Ordering::Acquire);
                    if t % 2 != side {
                        spins += 1;
                        if spins % ALTERNATE_SPINS == 0 {
                            std::thread::yield_now();
                        } else {
                            std::hint::spin_loop();
                        }
                        continue;
                    }
                    for f in shared {
                        link_unlink(f, id);
                    }
                    // Release: see the Acquire above.
                    turn.store(t + 1, Ordering::Release);
                }
            });
        }
        // Relaxed: the count is only a progress gauge here.
        while turn.load(Ordering::Relaxed) < ALTERNATE_TURNS && start.elapsed() < ALTERNATE_MAX {
            std::thread::sleep(Duration::from_millis(2));
        }
        // Relaxed: a stop flag.
        stop.store(true, Ordering::Relaxed);
    });
    // Relaxed: both sides have been joined.
    (turn.load(Ordering::Relaxed), start.elapsed())
}

/// Unrecorded rounds of turns before the recorded ones: the first leaves
/// every slot's image in the trees, the second meets them interleaved.
const WARM_ROUNDS: usize = 2;

/// What one slot's thread measured.
struct SlotRecord {
    cpu: u32,
    plain_ns: f64,
    plain_hold: Vec<f64>,
    /// Where each hold of a plain iteration fell ([`place`]).
    placed: Vec<Placement>,
    /// The split pieces' maple-tree stores of as many plain iterations
    /// again ([`mm::split_stores`]).
    split_stores: mm::split_stores::SplitStores,
    runs: Vec<(f64, Vec<Event>)>,
}

/// Records a profile with one slot per CPU of `m` (see the module docs).
/// Times are this host's; the caller sets `recorded_ghz`.
pub fn record_profile(m: &Machine, cfg: &RecordConfig) -> Result<Profile, String> {
    let topo = Topology::Emulated {
        nodes: m.nodes,
        cpus_per_node: m.cpus_per_node(),
    };
    let files = registry(cfg, topo.clone());
    let prog = files
        .program(&cfg.binary)
        .map_err(|e| format!("cannot exec {}: {e}", cfg.binary.display()))?;
    // CPU `k`'s program: the shared one, or (`own_binary`) a copy whose
    // executable is registered under a path of its own.
    let program_for = |k: usize| -> Result<std::sync::Arc<Program>, String> {
        if !cfg.own_binary {
            return Ok(prog.clone());
        }
        let mut plan = prog.plan().clone();
        let mut exe = (*plan.exe).clone();
        let mut path = exe.path.clone().into_os_string();
        path.push(format!(" (copy {k})"));
        exe.path = path.into();
        plan.exe = std::sync::Arc::new(exe);
        Program::new(&files, plan)
            .map(std::sync::Arc::new)
            .map_err(|e| format!("cannot plan a copy of {}: {e}", cfg.binary.display()))
    };
    let populate = || -> Vec<Mm> {
        populate(&files, &prog, &topo, cfg.resident, cfg.cost == Cost::Kernel)
            .into_iter()
            .map(|(_, r)| r)
            .collect()
    };
    let mut residents = populate();
    let (wt, wd) = cfg.warmup;
    let mut warm = (0u64, 0u64);
    let mut alternated = (0usize, Duration::ZERO);
    if wt > 0 && !wd.is_zero() {
        let stop = AtomicBool::new(false);
        let warm_progs = (0..wt).map(program_for).collect::<Result<Vec<_>, _>>()?;
        // The files every CPU maps: those two warm-up programs' execs share.
        let shared: Vec<&std::sync::Arc<mm::File>> = match warm_progs.as_slice() {
            [a, b, ..] => {
                let theirs = b.mapped_files();
                a.mapped_files()
                    .into_iter()
                    .filter(|f| theirs.iter().any(|g| std::sync::Arc::ptr_eq(f, g)))
                    .collect()
            }
            _ => Vec::new(),
        };
        // Every file the shared program's exec maps: the walkers' files and
        // the ones whose locks the warm-up counts.
        let prog_files = prog.mapped_files();
        std::thread::scope(|s| {
            for (i, prog) in warm_progs.iter().enumerate() {
                let (files, stop) = (&files, &stop);
                s.spawn(move || {
                    let prog = &**prog;
                    let mm = looper(files, cfg.shell, prog);
                    let mapped = prog.mapped_files();
                    // Relaxed: a stop flag; nothing is published through it.
                    while !stop.load(Ordering::Relaxed) {
                        iteration(cfg.shell, &mm, prog);
                        // On a many-CPU machine consecutive holds of a lock
                        // come from different CPUs, millions of times a
                        // second. An iteration holds each file's lock only a
                        // few times, so two threads that run at once for a
                        // moment rarely alternate holds fast enough; a burst
                        // of one-VMA links and unlinks on every file the
                        // exec maps (the maps' own interface, as any
                        // design has it) makes any moment two threads share
                        // the CPUs a moment of many-CPU lock traffic.
                        for f in &mapped {
                            let _site = rmap::stats::set_call_site(rmap::stats::CallSite::Other);
                            for k in 0..16u64 {
                                link_unlink(f, u64::MAX - 1024 * i as u64 - k);
                            }
                        }
                    }
                });
            }
            // A slow reclaim-style walker on every file the exec maps:
            // each stable walk stalls 1 ms inside (as a walk preempted or
            // waiting on I/O does), so the modifiers above meet held locks
            // as they would on a many-CPU machine, even on a small host.
            // Between walks it rests 2 ms: a walker that is almost always
            // inside a walk would also keep the modifiers from ever running
            // back to back, the lock moving between CPUs at a many-CPU rate,
            // which is the other thing a design may adapt to.
            for &f in &prog_files {
                let stop = &stop;
                s.spawn(move || {
                    let mut n = 0usize;
                    // Relaxed: a stop flag.
                    while !stop.load(Ordering::Relaxed) {
                        let mut first = true;
                        f.rmap().walk(rmap::Interval::FULL, &mut |_, _| {
                            if first {
                                first = false;
                                std::thread::sleep(Duration::from_micros(1000));
                            }
                            n += 1;
                        });
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    n
                });
            }
            // At least `wd`; then up to 30 rounds of 100 ms more, until the
            // warm-up has seen at least 1000 contended acquisitions (the
            // walker stalls modifiers 1 ms in 3) and the maps' lock count
            // (shards over every file the exec maps) has not changed for
            // 500 ms: a design that adapts file by file is recorded once
            // every file it will adapt has.
            let start = files.lock_stats();
            let locks = || -> u64 {
                prog_files
                    .iter()
                    .map(|f| u64::from(f.rmap().stats().shards))
                    .sum()
            };
            std::thread::sleep(wd);
            let (mut seen, mut still) = (locks(), 0);
            for _ in 0..30 {
                let now = locks();
                if now == seen {
                    still += 1;
                } else {
                    (seen, still) = (now, 0);
                }
                if still >= 5 && files.lock_stats().contended - start.contended >= 1000 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            stop.store(true, Ordering::Relaxed);
            let now = files.lock_stats();
            warm = (
                now.acquisitions - start.acquisitions,
                now.contended - start.contended,
            );
        });
        // On a busy host a phase gets through only some of its turns
        // before its time is up: phases are repeated until the turns add
        // up (a retry, not a silently different recording); a recording
        // still short of them carries the caveat in its notes.
        for _ in 0..ALTERNATE_TRIES {
            let (n, d) = alternate(&shared);
            alternated = (alternated.0 + n, alternated.1 + d);
            if alternated.0 >= ALTERNATE_TURNS || shared.is_empty() {
                break;
            }
        }
        if std::env::var_os("ASPACE_PREDICT_DEBUG").is_some() {
            eprintln!("{}: after warm-up {:?}", cfg.design, files.lock_stats());
        }
    }
    // The residents exit and exec again, in order, on this one thread: the
    // trees the recording meets are then built by the same sequence of
    // operations every time, not left in whatever state the warm-up's
    // threads happened to leave them. A design keeps what it adapted.
    drop(residents);
    residents = populate();
    let exec_steps = step_holds(&files, &prog);
    let n = m.cpus() as usize;
    let progs: Vec<std::sync::Arc<Program>> = (0..n).map(program_for).collect::<Result<_, _>>()?;
    let slot_steps: Vec<_> = if cfg.own_binary {
        progs.iter().map(|p| step_holds(&files, p)).collect()
    } else {
        Vec::new()
    };
    let records = take_turns(&files, &topo, &progs, cfg)?;
    // The kernel's split holds also store the split piece into the
    // process's tree (see [`split_store_ns`]); the model's holds are its
    // own code's.
    let own = match cfg.cost {
        Cost::Kernel => {
            let mut seen = std::collections::HashSet::new();
            let kept: Vec<&mm::split_stores::SplitStores> = records
                .iter()
                .filter(|r| seen.insert(r.cpu))
                .map(|r| &r.split_stores)
                .collect();
            OwnWork {
                store_ns: split_store_ns(&kept),
                anon_vma_ns: anon_vma_update_ns(),
            }
        }
        Cost::Model => OwnWork::default(),
    };
    let mut recorded: Vec<(u32, f64, Vec<Event>)> = Vec::new();
    let mut labelled = 0usize;
    let mut carried_over = 0usize;
    let mut seen = std::collections::HashSet::new();
    for (k, r) in records.into_iter().enumerate() {
        if !seen.insert(r.cpu) {
            continue;
        }
        let (_, mut events) = summarise(r.runs);
        // The plain iterations' placements, hold by hold, where they made
        // the same holds as the recorded ones (else the work is spread
        // evenly).
        if r.placed.len() == events.len() {
            for (e, p) in events.iter_mut().zip(&r.placed) {
                e.placed = Some(*p);
            }
        }
        if std::env::var_os("ASPACE_PREDICT_DEBUG").is_some() {
            // The timeline (placements): the iteration's length on it and
            // its time between holds, beside the plain iteration's.
            let gaps = recorded_gaps(&unnest(&events)).map_or(0.0, |g| g.iter().sum::<f64>());
            eprintln!(
                "slot {}: plain {:.0} ns, plain holds {:.0} ns, recorded holds {:.0} ns; timeline {:.0} ns, {:.0} ns of it between holds",
                r.cpu,
                r.plain_ns,
                r.plain_hold.iter().sum::<f64>(),
                events.iter().map(|e| e.hold_ns as f64).sum::<f64>(),
                events.first().and_then(|e| e.placed).map_or(0.0, |p| p.iteration_ns),
                gaps
            );
        }
        correct_holds(&mut events, &r.plain_hold);
        if events.is_empty() {
            return Err(format!(
                "design {}: an iteration recorded no lock hold (is rmap's recorder compiled in?)",
                cfg.design
            ));
        }
        let steps = if cfg.own_binary {
            &slot_steps[k]
        } else {
            &exec_steps
        };
        labelled += usize::from(label_calls(&mut events, steps));
        if cfg.cost == Cost::Model {
            carried_over += own_nodes_carried_over(&mut events);
        }
        recorded.push((r.cpu, r.plain_ns, events));
    }
    pool_times(&mut recorded);
    // Every hold placed (`steps_of` then puts the work where the plain
    // iterations did it).
    let work_placed = recorded
        .iter()
        .all(|(_, _, ev)| ev.iter().all(|e| e.placed.is_some()));
    let mut table = Lines::default();
    let mut locks: HashMap<(u32, u32), u32> = HashMap::new();
    let mut names: Vec<LockDesc> = Vec::new();
    let mut slots: Vec<CpuProfile> = recorded
        .iter()
        .map(|(cpu, total, events)| CpuProfile {
            cpu: *cpu,
            steps: steps_of(
                events, *total, cfg.cost, own, &mut locks, &mut names, &mut table,
            ),
        })
        .collect();
    for l in &mut names {
        l.kind = cfg.lock;
    }
    let slots_n = slots.len();
    // VMAs per exit-unlink hold, from the model's own call counts: exit
    // one process that has exec'd the program.
    let exit_vmas_per_hold = {
        let probe = Mm::new(files.clone());
        probe.exec_program(&prog);
        let c0 = probe.calls();
        probe.exit();
        let c1 = probe.calls();
        let holds = (c1.remove + c1.remove_batch).saturating_sub(c0.remove + c0.remove_batch);
        if holds == 0 {
            0.0
        } else {
            c1.unlinked.saturating_sub(c0.unlinked) as f64 / holds as f64
        }
    };
    drop(residents);
    slots.sort_by_key(|s| s.cpu);
    let p = Profile {
        label: cfg.design.name().to_owned(),
        workload: if cfg.shell { "shell" } else { "execl" }.into(),
        call_pattern: cfg.pattern.name().to_owned(),
        locks: names,
        lines: table.kinds,
        slots,
        recorded_ghz: 1.0,
        exit_vmas_per_hold,
        work_placed,
        // `rmap::trace` says of each written line whether the hold loaded
        // it first (`LineTouch::loaded_first`).
        loads_recorded: true,
        hold_timing: false,
        notes: format!(
            "{}contended warm-up: {} of {} acquisitions contended ({:.1}%, links and unlinks of the warm-up's bursts included); {} hand-overs between two threads in {:.0} ms{}; {} locks seen while recording; {} slots took turns ({} recorded rounds); system calls known in {} of {} slots{}",
            if cfg.cost == Cost::Kernel {
                format!(
                    "each split of a map or munmap also removes the cut VMA from the design's reverse map and reinserts it with its new range (Linux 6.12's __split_vma: 3 interval-tree operations in its hold); each split or merge hold also holds one maple-tree store of a split piece or merged VMA, {:.0} ns (the model's own store, timed here: Linux 6.12's __split_vma and commit_merge store inside their i_mmap_rwsem hold), an mprotect split also the anon_vma's lock and its one-entry tree's remove and insert, {:.0} ns (linux's map of one entry, timed here); ",
                    own.store_ns, own.anon_vma_ns
                )
            } else {
                String::new()
            },
            warm.1,
            warm.0,
            100.0 * warm.1 as f64 / warm.0.max(1) as f64,
            alternated.0,
            alternated.1.as_secs_f64() * 1e3,
            if alternated.0 > 0 && alternated.0 < ALTERNATE_TURNS {
                " (host too busy for many-CPU lock traffic even after retries: an adaptive design may be recorded unadapted)"
            } else {
                ""
            },
            locks.len(),
            n,
            cfg.iterations.max(1),
            labelled,
            slots_n,
            if carried_over > 0 {
                format!(
                    "; {carried_over} tree nodes a teardown freed given the identities of the nodes its slot made and kept (each slot's iteration a loop of its own)"
                )
            } else {
                String::new()
            },
        ),
    };
    p.validate().map_err(|e| e.to_string())?;
    Ok(p)
}

/// `n` resident processes that exec `prog` and stay, each with the node
/// of `topo` it exec'd on.
///
/// `spread` (the kernel's cost): the residents are the other processes of
/// a busy machine, which run on every CPU of it; the split patch's cover
/// letter: "the i_mmap tree for libc.so can have over 6000 VMAs, all the
/// VMAs can be in different NUMA node". Resident `i` then execs from a
/// thread of its own, the threads started one after another, so that the
/// emulated topology ([`Topology::current_cpu`]: consecutive threads on
/// consecutive nodes, then CPUs) puts consecutive residents on
/// consecutive nodes: a design that files a VMA by its CPU's node or
/// shard (`numa_split`, `numa_locks`, `sharded`, `aspace`) holds the
/// residents' VMAs in all of its trees, a 1/nodes share each (at most
/// `ceil(n / nodes)` a node, even when other threads take tickets
/// meanwhile), as the patched kernel's sibling trees would. A design of one tree gets the
/// same inserts in the same order either way.
///
/// Otherwise (the model's cost) they exec on this thread, as `aspace
/// bench`'s main thread builds them before it starts the workers (all in
/// the tree of that thread's node or group): what that bench runs.
fn populate(
    files: &std::sync::Arc<Files>,
    prog: &std::sync::Arc<Program>,
    topo: &Topology,
    n: usize,
    spread: bool,
) -> Vec<(u32, Mm)> {
    let one = || {
        let r = Mm::new(files.clone());
        r.exec_program(prog);
        (topo.current_node(), r)
    };
    if !spread {
        return (0..n).map(|_| one()).collect();
    }
    // A thread's emulated CPU is a process-wide ticket, so threads that
    // other code starts meanwhile (tests run side by side) can take some
    // of the tickets: a thread whose node already has its share does not
    // exec, and another is started, so that the shares stay even. After
    // `64 * n` refusals (other threads taking nearly every ticket) any
    // node is taken.
    let nodes = topo.nodes().max(1) as usize;
    let share = n.div_ceil(nodes);
    let mut per_node = vec![0usize; nodes];
    let mut out = Vec::with_capacity(n);
    let mut refused = 0usize;
    std::thread::scope(|s| {
        while out.len() < n {
            let take_any = refused >= 64 * n;
            let full: Vec<bool> = per_node.iter().map(|&k| k >= share).collect();
            let got = s
                .spawn(move || {
                    let node = topo.current_node() as usize;
                    (take_any || !full.get(node).copied().unwrap_or(false)).then(one)
                })
                .join()
                .expect("a resident's exec panicked");
            match got {
                Some((node, mm)) => {
                    if let Some(k) = per_node.get_mut(node as usize) {
                        *k += 1;
                    }
                    out.push((node, mm));
                }
                None => refused += 1,
            }
        }
    });
    out
}

/// The recording's files. For the kernel cost each split of a file VMA by
/// a map or unmap also removes the cut VMA and reinserts it with its new
/// range inside the split's hold, as Linux 6.12's `__split_vma` does
/// (`vma_prepare`/`vma_complete`: `__vma_link_file(new)`,
/// `vma_interval_tree_remove(vma)`, `vma_interval_tree_insert(vma)`), in the
/// recorded design's own structure ([`Files::set_kernel_split_holds`]); the
/// model cost keeps the lab's own calls (one insert per split piece) unless
/// `kernel_splits` (the bench's `--cost kernel`) asks for the kernel's.
fn registry(cfg: &RecordConfig, topo: Topology) -> std::sync::Arc<Files> {
    let files = Files::new(cfg.design, topo, cfg.pattern);
    files.set_kernel_split_holds(cfg.cost == Cost::Kernel || cfg.kernel_splits);
    files
}

/// Runs one thread per program (one per CPU of the target), each first
/// measuring plain iterations back to back on its own, then taking turns
/// with the others: [`WARM_ROUNDS`] unrecorded rounds, then
/// `cfg.iterations` recorded ones. Returns each thread's measurements, in
/// thread order.
///
/// **Staggered turns** (an exec loop with more than one slot): a turn is
/// one part of an exec, not a whole one. Each exec is cut into as many
/// parts as there are slots ([`mm::Mm::exec_program_part`]) and slot `k`
/// runs `k` parts ahead of slot 0, so whenever a slot's hold runs, the
/// other slots' processes are in the middle of their own execs, one at
/// each point of it, as the bench's threads are (every thread is always
/// somewhere in an exec): a hold meets the trees with the other execs'
/// half-built images in them. This matters for the interval tree's
/// augmented maxima: an exec's first mapping of a library reserves the
/// whole span, whose end lies past every resident mapping's, so alone it
/// raises `max_last` on its whole path from the root and its later
/// splits and replacement lower it again (about 20 written lines a hold
/// on libc's tree); with other execs' reservations in the tree the
/// raise stops where one of theirs already holds the value
/// (`IntervalTree::link_and_augment`, `propagate`). Whole-exec turns
/// (before session s39) left the other slots' images finished, so every
/// such hold wrote its whole path. A slot's recorded exec is its parts
/// from a part 0 on, the events concatenated. The fork-exec-exit loop
/// keeps whole turns.
fn take_turns(
    files: &std::sync::Arc<Files>,
    topo: &Topology,
    progs: &[std::sync::Arc<Program>],
    cfg: &RecordConfig,
) -> Result<Vec<SlotRecord>, String> {
    let n = progs.len();
    let recorded_rounds = cfg.iterations.max(1);
    // Turn 0: each thread's plain iterations, one thread after the other.
    // Staggered turns: an exec in one part per slot (see above); the
    // recorded execs start at a part 0, at most `parts` turns after the
    // warm-up.
    let parts = if !cfg.stagger || cfg.shell || n < 2 {
        1
    } else {
        n
    };
    let rounds = if parts > 1 {
        1 + (WARM_ROUNDS + recorded_rounds + 1) * parts
    } else {
        1 + WARM_ROUNDS + recorded_rounds
    };
    // Plain iterations per slot: enough for a stable median on small
    // machines, a handful on big ones (pooled over slots afterwards).
    let plain = cfg.iterations.max(400 / n.max(1)).clamp(1, 101);
    const NOT_STARTED: usize = usize::MAX;
    let turn = AtomicUsize::new(NOT_STARTED);
    let failed = AtomicBool::new(false);
    let handles: Vec<OnceLock<std::thread::Thread>> = (0..n).map(|_| OnceLock::new()).collect();
    let registered = AtomicUsize::new(0);
    let out = std::thread::scope(|s| {
        let workers: Vec<_> = (0..n)
            .map(|k| {
                let (turn, failed, handles, registered) = (&turn, &failed, &handles, &registered);
                let prog = &progs[k];
                s.spawn(move || -> Option<SlotRecord> {
                    let cpu = topo.current_cpu();
                    let _ = handles[k].set(std::thread::current());
                    // SeqCst: the registration count is read by the
                    // coordinator before it starts the turns.
                    registered.fetch_add(1, Ordering::SeqCst);
                    let mut rec = SlotRecord {
                        cpu,
                        plain_ns: 0.0,
                        plain_hold: Vec::new(),
                        placed: Vec::new(),
                        split_stores: Default::default(),
                        runs: Vec::new(),
                    };
                    let mut mm: Option<Mm> = None;
                    // The exec part this slot runs next, and the recorded
                    // exec being put together from its parts.
                    let mut part = k % parts;
                    let mut pending: Option<(f64, Vec<Event>)> = None;
                    let mut recorded = 0;
                    for round in 0..rounds {
                        let mine = round * n + k;
                        // Acquire: pairs with the Release hand-over below, so
                        // that this turn sees the trees as the last one left
                        // them (the maps' own locks order them anyway).
                        while turn.load(Ordering::Acquire) != mine {
                            std::thread::park_timeout(Duration::from_millis(50));
                        }
                        if !failed.load(Ordering::Relaxed) {
                            let work =
                                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                    let mm =
                                        mm.get_or_insert_with(|| looper(files, cfg.shell, prog));
                                    if round == 0 {
                                        measure_plain(files, mm, prog, cfg.shell, plain, &mut rec);
                                        if parts > 1 {
                                            // Start `k` parts into an exec.
                                            for p in 0..part {
                                                mm.exec_program_part(prog, p, parts);
                                            }
                                        }
                                    } else if parts > 1 {
                                        // Staggered: one part a turn.
                                        let warm = round <= WARM_ROUNDS * parts;
                                        if part == 0 && !warm && recorded < recorded_rounds {
                                            pending = Some((0.0, Vec::new()));
                                        }
                                        if let Some((ns, ev)) = pending.as_mut() {
                                            let t = thread_cpu_ns();
                                            let e =
                                                record(|| mm.exec_program_part(prog, part, parts));
                                            *ns += thread_cpu_ns() - t;
                                            ev.extend(e);
                                        } else {
                                            mm.exec_program_part(prog, part, parts);
                                        }
                                        part = (part + 1) % parts;
                                        if part == 0 {
                                            if let Some(run) = pending.take() {
                                                rec.runs.push(run);
                                                recorded += 1;
                                            }
                                        }
                                    } else if round > WARM_ROUNDS {
                                        let t = thread_cpu_ns();
                                        let ev = record(|| iteration(cfg.shell, mm, prog));
                                        rec.runs.push((thread_cpu_ns() - t, ev));
                                    } else {
                                        iteration(cfg.shell, mm, prog);
                                    }
                                }));
                            if work.is_err() {
                                // Relaxed: a flag; the turn hand-over orders it.
                                failed.store(true, Ordering::Relaxed);
                            }
                        }
                        // Release: see the Acquire above.
                        turn.store(mine + 1, Ordering::Release);
                        if let Some(h) = handles[(k + 1) % n].get() {
                            h.unpark();
                        }
                    }
                    if let Some(mm) = mm {
                        mm.exit();
                    }
                    Some(rec)
                })
            })
            .collect();
        // SeqCst: see the workers' registration.
        while registered.load(Ordering::SeqCst) < n {
            std::thread::sleep(Duration::from_millis(1));
        }
        turn.store(0, Ordering::Release);
        if let Some(h) = handles[0].get() {
            h.unpark();
        }
        workers
            .into_iter()
            .map(|w| w.join().ok().flatten())
            .collect::<Option<Vec<SlotRecord>>>()
    });
    if failed.load(Ordering::Relaxed) {
        return Err("a recording thread panicked".into());
    }
    out.ok_or_else(|| "a recording thread panicked".into())
}

/// The least CPU time a slot's thread runs plain iterations before timing
/// them, ns.
const PLAIN_WARM_NS: f64 = 5e6;
/// The least CPU time of timed plain iterations per slot, ns.
const PLAIN_MEASURE_NS: f64 = 3e6;

/// A slot's plain iterations, back to back with the maps' own hold timing
/// on: their CPU time is the iteration's, their hold times per call site
/// correct the recorded ones (recording adds its own cost inside each
/// hold).
fn measure_plain(
    files: &std::sync::Arc<Files>,
    mm: &Mm,
    prog: &Program,
    shell: bool,
    n: usize,
    rec: &mut SlotRecord,
) {
    // Warm: at least PLAIN_WARM of this thread's CPU time first. A thread
    // that has just been given its turn runs on a core that may have been
    // idle (a lower clock until it ramps up, cold caches, an allocator
    // heap still growing): its first iterations are slower than the same
    // loop's steady state, which is what the bench measures.
    let t0 = thread_cpu_ns();
    let mut warm = 0;
    while warm < 2 || thread_cpu_ns() - t0 < PLAIN_WARM_NS {
        iteration(shell, mm, prog);
        warm += 1;
    }
    let was = rmap::stats::set_hold_timing(true);
    let mut stats = vec![files.lock_stats()];
    let t1 = thread_cpu_ns();
    let mut plain: Vec<f64> = Vec::with_capacity(n);
    while plain.len() < n || thread_cpu_ns() - t1 < PLAIN_MEASURE_NS {
        let t = thread_cpu_ns();
        iteration(shell, mm, prog);
        plain.push(thread_cpu_ns() - t);
        // Outside the timed span: the maps' counters after each iteration.
        stats.push(files.lock_stats());
    }
    let n = plain.len();
    rmap::stats::set_hold_timing(was);
    rec.plain_hold = plain_site_holds(&stats);
    rec.plain_ns = median_of(plain);
    // Where each hold falls: as many plain iterations again, each with
    // its holds' clock stamps kept (hold timing only: nothing recorded).
    rec.placed = place(n, || iteration(shell, mm, prog));
    // The split pieces' tree stores, timed alone (as many iterations
    // again, nothing else timed): the kernel cost puts one into each split
    // hold ([`split_store_ns`]).
    for _ in 0..n {
        let ((), s) = mm::split_stores::time_split_stores(|| iteration(shell, mm, prog));
        rec.split_stores.count += s.count;
        rec.split_stores.ns += s.ns;
    }
}

/// Each call site's hold time of a typical plain iteration, ns, in
/// [`Site::ALL`] order: the median over iterations of the site's held time
/// in each (`stats`: the maps' counters before the first iteration and
/// after each). The same statistic as the iteration's own time (the median
/// of the plain iterations' CPU times). Held time is wall-clock: one
/// preemption inside one hold (milliseconds on a loaded host) added to a
/// mean over the few hundred iterations of 3 ms put several microseconds
/// into that site's every hold (8x the plain linux iteration's holds in
/// one recording on this host), moving time from the work to the holds
/// and a design's 2-CPU point with it (the 2-thread host rows of two
/// validations minutes apart: docs/results/predict/bistable-s39/).
fn plain_site_holds(stats: &[rmap::LockStats]) -> Vec<f64> {
    Site::ALL
        .iter()
        .map(|&site| {
            let i = call_site(site).index();
            let per_iteration: Vec<f64> = stats
                .windows(2)
                .map(|w| {
                    w[1].per_site[i]
                        .hold_ns
                        .saturating_sub(w[0].per_site[i].hold_ns) as f64
                })
                .collect();
            if per_iteration.is_empty() {
                0.0
            } else {
                median_of(per_iteration)
            }
        })
        .collect()
}

/// The time of one maple-tree store of a split piece, ns: the median over
/// slots of each slot's mean ([`mm::split_stores`]); 0 when no slot stored
/// one. Linux 6.12 stores the VMA `__split_vma` creates (and the one
/// `commit_merge` grows) into the process's tree with the file's
/// `i_mmap_rwsem` still held (`vma_iter_store` between `vma_prepare()` and
/// `vma_complete()`, its nodes allocated before the lock); the model
/// stores after its reverse-map calls, outside every hold. Only the
/// process's own lines: the same cost in every design and on every node.
fn split_store_ns(slots: &[&mm::split_stores::SplitStores]) -> f64 {
    let means: Vec<f64> = slots
        .iter()
        .filter(|s| s.count > 0)
        .map(|s| s.mean_ns())
        .collect();
    if means.is_empty() {
        0.0
    } else {
        median_of(means)
    }
}

/// The time of one remove and one insert on a reverse map of one entry
/// (`Design::Linux`, this thread alone, every line in its cache), ns: the
/// median over 9 runs of 256. A stand-in for what Linux 6.12's split
/// does inside its `i_mmap_rwsem` hold when the VMA has an `anon_vma`
/// (`vma_prepare()` / `vma_complete()`: `anon_vma_lock_write`, then
/// `anon_vma_interval_tree_pre_update_vma` and `_post_update_vma`, each
/// chain entry removed from and put back into its anon_vma's interval
/// tree, then the unlock). An exec'd process's data VMA has one chain
/// entry in an anon_vma of its own by the time ld.so's `mprotect` makes
/// its RELRO read-only (relocation has written it), so this is the
/// process's own lines only. The stand-in takes the lock twice where the
/// kernel takes it once (an uncontended lock round trip more).
fn anon_vma_update_ns() -> f64 {
    let m = Design::Linux.build(&Topology::Os);
    let iv = rmap::Interval::new(0, 0).unwrap_or(rmap::Interval::FULL);
    let Ok(mut h) = m.insert(iv, 1) else {
        return 0.0;
    };
    const ROUNDS: u32 = 256;
    let mut runs: Vec<f64> = Vec::with_capacity(9);
    for _ in 0..9 {
        let t0 = std::time::Instant::now();
        for _ in 0..ROUNDS {
            if m.remove(h).is_err() {
                return 0.0;
            }
            match m.insert(iv, 1) {
                Ok(n) => h = n,
                Err(_) => return 0.0,
            }
        }
        runs.push(t0.elapsed().as_nanos() as f64 / f64::from(ROUNDS));
    }
    let _ = m.remove(h);
    median_of(runs)
}

/// Work a kernel split hold does on the process's own lines that the
/// model's holds lack (host ns; see [`steps_of`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct OwnWork {
    /// One store of a split piece into the process's maple tree
    /// ([`split_store_ns`]): every split hold.
    store_ns: f64,
    /// The anon_vma's lock and its chain entry's remove and insert
    /// ([`anon_vma_update_ns`]): mprotect's split holds.
    anon_vma_ns: f64,
}

/// Makes a slot's recorded iteration a loop of its own for the model cost:
/// the tree nodes its holds free that it did not make in the iteration
/// (the previous image's, freed by the exec's teardown, `ExitUnlink`) are
/// given, in order, the identities of the nodes it makes in the iteration
/// and keeps (the new image's, which the next exec's teardown frees), per
/// map and shard; returns how many were renamed.
///
/// The recorder's trees keep their nodes in an arena whose free list every
/// slot shares: in the recorded round the nodes a slot's teardown frees
/// are the ones it made a round before, and the next slots' links take
/// them over. Replayed as they were recorded, a slot's every teardown
/// would free nodes the other slots made (whoever took them over in the
/// recording), each a transfer in every iteration. On the bench a
/// thread's teardown frees its own previous image, whose nodes it made
/// itself one exec before (their lines are another CPU's only where
/// another thread's change wrote them since, which the renamed identity
/// keeps: the other slots' recorded touches of it). A node made and freed
/// within the iteration (an `munmap`ed mapping) is already its own; what
/// the two lists do not pair (they differ only when the images differ)
/// stays as recorded. A line of a hold that already names the new
/// identity is merged into it.
fn own_nodes_carried_over(events: &mut [Event]) -> usize {
    use std::collections::HashSet;
    let mut made: HashMap<(u32, u32), HashSet<usize>> = HashMap::new();
    // Nodes made in the iteration and still live, in order of making.
    let mut kept: HashMap<(u32, u32), Vec<usize>> = HashMap::new();
    // (event, line) of each node freed that the iteration did not make.
    let mut carried: HashMap<(u32, u32), Vec<(usize, usize)>> = HashMap::new();
    for (ei, e) in events.iter().enumerate() {
        let key = (e.map, e.shard);
        for (li, l) in e.lines.iter().enumerate() {
            if !l.is_node() {
                continue;
            }
            if l.allocated {
                made.entry(key).or_default().insert(l.line);
                kept.entry(key).or_default().push(l.line);
            } else if l.freed {
                if made.get(&key).is_some_and(|m| m.contains(&l.line)) {
                    if let Some(k) = kept.get_mut(&key) {
                        k.retain(|&x| x != l.line);
                    }
                } else {
                    carried.entry(key).or_default().push((ei, li));
                }
            }
        }
    }
    let mut renamed = 0;
    let mut touched_events = Vec::new();
    for (key, freed) in &carried {
        let Some(new) = kept.get(key) else {
            continue;
        };
        for (&(ei, li), &id) in freed.iter().zip(new) {
            events[ei].lines[li].line = id;
            touched_events.push(ei);
            renamed += 1;
        }
    }
    touched_events.sort_unstable();
    touched_events.dedup();
    for ei in touched_events {
        let e = &mut events[ei];
        let mut merged: Vec<rmap::trace::LineTouch> = Vec::with_capacity(e.lines.len());
        for l in &e.lines {
            match merged.iter_mut().find(|m| m.line == l.line) {
                Some(m) => {
                    m.loaded_first &= l.loaded_first;
                    m.written |= l.written;
                    m.freed |= l.freed;
                }
                None => merged.push(*l),
            }
        }
        e.lines = merged;
        e.recount_lines();
    }
    renamed
}

/// The profile's lines: each recorded line identity once, with its kind.
#[derive(Default)]
struct Lines {
    ids: HashMap<usize, u32>,
    kinds: Vec<LineKind>,
}

impl Lines {
    fn id(&mut self, line: usize, kind: LineKind) -> u32 {
        let kinds = &mut self.kinds;
        *self.ids.entry(line).or_insert_with(|| {
            kinds.push(kind);
            (kinds.len() - 1) as u32
        })
    }

    /// A line no recorded identity names (touched only where it is made).
    fn fresh(&mut self, kind: LineKind) -> u32 {
        self.kinds.push(kind);
        (self.kinds.len() - 1) as u32
    }
}

/// Builds one slot's steps from an iteration's events (see [`unnest`] and,
/// for the kernel, [`coalesce_splits`]) and its total time. The work
/// outside the holds (the total less the holds) lies where the plain
/// iterations did it: each gap gets the share of it that the gap had in
/// their placements ([`recorded_gaps`], [`place`]), so the exec's bursts
/// of holds (one system call's) stay bursts; only the placements' shape
/// counts, the total is the plain iterations' CPU time, as before. Events
/// without a placement (a recorder before s37) get the work spread evenly
/// over the gaps. Lock `(map, shard)`
/// becomes one [`LockDesc`] (a parking_lot lock for the model, an rwsem
/// for the kernel), its word the hold's first line; the kernel has no lab
/// counters, so their lines are left out of its holds.
///
/// For the kernel, each split or merge hold (`Split`, `ProtectSplit`,
/// `Merge`, after [`coalesce_splits`]: one per `__split_vma` or
/// `commit_merge`) also holds
/// `own.store_ns`, one store of a split piece into the process's own
/// maple tree ([`split_store_ns`]), taken off the work outside the holds
/// (the plain iterations' total had it there); an mprotect split
/// (`ProtectSplit`, ld.so's RELRO) also `own.anon_vma_ns`, the anon_vma
/// update ([`anon_vma_update_ns`]), added (the model has no anon_vma, so
/// its iteration never did it). No line is added: both write only the
/// process's own. The model's holds keep their own code.
fn steps_of(
    events: &[Event],
    total_ns: f64,
    cost: Cost,
    own: OwnWork,
    locks: &mut HashMap<(u32, u32), u32>,
    names: &mut Vec<LockDesc>,
    table: &mut Lines,
) -> Vec<Step> {
    let events = match cost {
        Cost::Model => unnest(events),
        Cost::Kernel => coalesce_splits(&unnest(events)),
    };
    // (moved from the work into the hold, added to the hold)
    let own = |e: &Event| -> (f64, f64) {
        match (cost, e.site) {
            // `commit_merge` stores the grown VMA inside its hold too.
            (Cost::Kernel, Site::Split | Site::Merge) => (own.store_ns, 0.0),
            (Cost::Kernel, Site::ProtectSplit) => (own.store_ns, own.anon_vma_ns),
            _ => (0.0, 0.0),
        }
    };
    let hold: f64 = events.iter().map(|e| e.hold_ns as f64 + own(e).0).sum();
    let work = (total_ns - hold).max(0.0);
    let gaps: Vec<f64> = match recorded_gaps(&events) {
        Some(g) => {
            let sum: f64 = g.iter().sum();
            g.iter().map(|x| x * work / sum).collect()
        }
        None => vec![work / (events.len() + 1) as f64; events.len() + 1],
    };
    let mut steps = Vec::with_capacity(2 * events.len() + 1);
    for (e, &gap) in events.iter().zip(&gaps) {
        steps.push(Step::Work(gap));
        let n = locks.len() as u32;
        let word = e.lines.first().map(|l| l.line);
        let lock = *locks.entry((e.map, e.shard)).or_insert_with(|| {
            let line = match word {
                Some(w) => table.id(w, LineKind::LockWord),
                // No line recorded: a word of its own.
                None => table.id(usize::MAX - names.len(), LineKind::LockWord),
            };
            names.push(LockDesc {
                name: if e.shard == u32::MAX {
                    format!("map{}#outer", e.map)
                } else {
                    format!("map{}#{}", e.map, e.shard)
                },
                kind: match cost {
                    Cost::Model => LockKind::ParkingLot,
                    Cost::Kernel => LockKind::KernelRwsem,
                },
                line,
                contended_line: None,
            });
            n
        });
        let mut written = Vec::new();
        let mut read = Vec::new();
        let mut loaded_first = Vec::new();
        for l in e.lines.iter().skip(1) {
            if l.is_counter() && cost == Cost::Kernel {
                continue;
            }
            // The kernel's erase writes nothing of the node it erases (the
            // VMA is freed after the lock); the arena's free-list write is
            // the lab's own.
            if l.freed && cost == Cost::Kernel {
                continue;
            }
            let kind = if l.is_counter() {
                LineKind::Counter
            } else {
                LineKind::Tree
            };
            // The kernel's new VMA comes from its CPU's slab and was filled
            // by that CPU before the lock (`vm_area_dup`): a line of its
            // own, not the arena slot another thread freed.
            let id = if l.allocated && cost == Cost::Kernel {
                table.fresh(LineKind::Tree)
            } else {
                table.id(l.line, kind)
            };
            // A tree header whose kernel counterpart (`rb_root_cached`)
            // the change kept: the kernel only reads it.
            let kernel_reads = l.kernel_keeps && cost == Cost::Kernel;
            if l.written && !kernel_reads {
                written.push(id);
                if l.loaded_first {
                    loaded_first.push(id);
                }
            } else {
                read.push(id);
            }
        }
        if e.lock_line_data {
            written.push(names[lock as usize].line);
        }
        steps.push(Step::Hold(Hold {
            lock,
            write: e.write,
            site: e.site,
            hold_ns: e.hold_ns as f64 + own(e).0 + own(e).1,
            written,
            read,
            loaded_first,
        }));
    }
    steps.push(Step::Work(gaps[events.len()]));
    steps
}

/// The profile with every exit-unlink hold on a map split into one hold
/// per VMA it unlinks (the exit path before 2024's batching): `k` =
/// [`Profile::exit_vmas_per_hold`] rounded when the recorder measured it,
/// else links on that map in the iteration / exit holds on it; each piece
/// holds `1/k` of the time and reads and writes every `k`-th of the lines
/// the batch read and wrote: a removal starts at its own node and touches
/// the nodes around what it changes (`rmap`'s `VmaTree::trace_removed`;
/// Linux's `rb_erase_augmented` is the same), with no search from the
/// root, so the batch's lines are its removals' together, reads as well
/// as writes. Design-agnostic.
pub fn unbatch_exit(p: &Profile) -> Profile {
    let mut out = p.clone();
    for s in &mut out.slots {
        let mut links: HashMap<u32, usize> = HashMap::new();
        let mut exits: HashMap<u32, usize> = HashMap::new();
        for st in &s.steps {
            if let Step::Hold(h) = st {
                match h.site {
                    Site::MmapLink => *links.entry(h.lock).or_insert(0) += 1,
                    Site::ExitUnlink => *exits.entry(h.lock).or_insert(0) += 1,
                    _ => {}
                }
            }
        }
        let mut steps = Vec::with_capacity(s.steps.len() * 2);
        for st in s.steps.drain(..) {
            match st {
                Step::Hold(h) if h.site == Site::ExitUnlink => {
                    let k = if p.exit_vmas_per_hold >= 1.0 {
                        p.exit_vmas_per_hold.round() as usize
                    } else {
                        links.get(&h.lock).copied().unwrap_or(1)
                            / exits.get(&h.lock).copied().unwrap_or(1).max(1)
                    }
                    .clamp(1, 64);
                    for i in 0..k {
                        if i > 0 {
                            steps.push(Step::Work(0.0));
                        }
                        // Each piece removes one VMA: its share of the
                        // nodes the batch read and wrote.
                        let share = |lines: &[u32]| -> Vec<u32> {
                            lines
                                .iter()
                                .enumerate()
                                .filter(|(j, _)| j % k == i)
                                .map(|(_, &l)| l)
                                .collect()
                        };
                        let mut piece = h.clone();
                        piece.hold_ns = h.hold_ns / k as f64;
                        piece.written = share(&h.written);
                        piece.read = share(&h.read);
                        piece.loaded_first.retain(|l| piece.written.contains(l));
                        steps.push(Step::Hold(piece));
                    }
                }
                other => steps.push(other),
            }
        }
        s.steps = steps;
    }
    out.call_pattern = format!("{} (exit unbatched)", p.call_pattern);
    out
}

/// True when `path` can be exec'd by the model.
pub fn check(binary: &Path) -> Result<(), String> {
    Files::new(Design::Linux, Topology::Os, CallPattern::PerVma)
        .program(binary)
        .map(drop)
        .map_err(|e| format!("cannot exec {}: {e}", binary.display()))
}

/// A small recording of `/bin/true` for tests: per-VMA calls, not a
/// shell, 4 resident processes, one iteration, no warm-up, one shared
/// binary, staggered turns. Tests change a field with struct update.
#[cfg(test)]
pub(crate) fn small_true_config(design: Design, cost: Cost, lock: LockKind) -> RecordConfig {
    RecordConfig {
        design,
        pattern: CallPattern::PerVma,
        shell: false,
        binary: "/bin/true".into(),
        resident: 4,
        iterations: 1,
        warmup: (0, Duration::ZERO),
        own_binary: false,
        cost,
        lock,
        stagger: true,
        kernel_splits: false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::events::test_event as ev;
    use super::*;

    #[test]
    fn own_binaries_give_each_cpu_a_lock_of_its_own_for_the_executable() {
        if check(Path::new("/bin/true")).is_err() {
            eprintln!("skipped: the model cannot exec /bin/true here");
            return;
        }
        let m = Machine::by_name("device-16").expect("built-in machine");
        let record = |own_binary| {
            record_profile(
                &m,
                &RecordConfig {
                    own_binary,
                    ..small_true_config(Design::Linux, Cost::Kernel, LockKind::KernelRwsem)
                },
            )
            .expect("a profile")
        };
        let locks_of = |p: &Profile, slot: usize| -> std::collections::BTreeSet<u32> {
            p.slots[slot]
                .steps
                .iter()
                .filter_map(|s| match s {
                    Step::Hold(h) => Some(h.lock),
                    _ => None,
                })
                .collect()
        };
        let holds = |p: &Profile, slot: usize| {
            p.slots[slot]
                .steps
                .iter()
                .filter(|s| matches!(s, Step::Hold(_)))
                .count()
        };
        let shared = record(false);
        let own = record(true);
        let n = m.cpus() as usize;
        assert_eq!(shared.slots.len(), n);
        assert_eq!(own.slots.len(), n);
        // Linux: one lock per file. The copies' n locks replace the one
        // executable's; the libraries' stay shared.
        assert_eq!(own.locks.len(), shared.locks.len() + n - 1);
        let libs: std::collections::BTreeSet<u32> = (0..n)
            .map(|i| locks_of(&own, i))
            .reduce(|a, b| &a & &b)
            .unwrap();
        assert_eq!(libs.len(), locks_of(&shared, 0).len() - 1);
        for i in 0..n {
            assert_eq!(locks_of(&shared, i), locks_of(&shared, 0));
            assert_eq!(locks_of(&own, i).len(), libs.len() + 1, "slot {i}");
            assert_eq!(holds(&own, i), holds(&shared, i), "the same exec, slot {i}");
        }
    }

    /// The kernel's residents exec on every node in turn, so that a design
    /// of one tree per node holds them in all of its trees; the model's
    /// exec on the recording's own thread, as the bench's do (mutant:
    /// `spread` ignored, every resident on one node, leaves 3 of the 4
    /// nodes' trees without residents; mutant s41-tickets: every started
    /// thread execs, whatever its node, gives uneven shares while another
    /// thread takes tickets, as it did when tests ran side by side).
    #[test]
    fn kernel_residents_exec_on_every_node_the_models_on_one() {
        if check(Path::new("/bin/true")).is_err() {
            eprintln!("skipped: the model cannot exec /bin/true here");
            return;
        }
        let topo = Topology::Emulated {
            nodes: 4,
            cpus_per_node: 2,
        };
        let files = Files::new(Design::NumaSplit, topo.clone(), CallPattern::PerVma);
        let prog = files.program(Path::new("/bin/true")).expect("a program");
        let per_node = |spread| {
            let mut n = [0usize; 4];
            for (node, _) in populate(&files, &prog, &topo, 12, spread) {
                n[node as usize] += 1;
            }
            n
        };
        assert_eq!(per_node(true), [3, 3, 3, 3]);
        // Even while other threads take emulated CPU tickets (as other
        // tests do, side by side): the shares stay even.
        let stop = std::sync::atomic::AtomicBool::new(false);
        let noisy = std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let t = topo.clone();
                    std::thread::spawn(move || t.current_cpu())
                        .join()
                        .expect("a ticket");
                }
            });
            let n = per_node(true);
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            n
        });
        assert_eq!(noisy, [3, 3, 3, 3]);
        let one = per_node(false);
        assert_eq!(one.iter().filter(|&&k| k > 0).count(), 1, "{one:?}");
        assert_eq!(one.iter().sum::<usize>(), 12);
    }

    /// Staggered turns: each slot's holds meet the other slots' execs half
    /// done. libc's first mapping reserves the whole span, past every
    /// finished image's end, so with whole-exec turns each of its later
    /// replacements lowers the augmented maximum on its whole path from
    /// the root; with the other execs' reservations in the tree the change
    /// stops below theirs. The same exec, the same holds, fewer tree lines
    /// written by libc's replacements (mutant: staggering off, `parts` 1,
    /// leaves as many lines as whole turns).
    #[test]
    fn staggered_turns_meet_other_execs_half_done_and_write_less_of_the_path() {
        if check(Path::new("/bin/true")).is_err() {
            eprintln!("skipped: the model cannot exec /bin/true here");
            return;
        }
        let m = Machine::by_name("device-16").expect("built-in machine");
        let record = |stagger| {
            record_profile(
                &m,
                &RecordConfig {
                    stagger,
                    ..small_true_config(Design::Linux, Cost::Model, LockKind::ParkingLot)
                },
            )
            .expect("a profile")
        };
        // Per exec: (holds, tree lines written) of the call site on the lock
        // with the most holds (libc's).
        let written = |p: &Profile, site: Site| {
            let mut per_lock: HashMap<u32, (usize, usize)> = HashMap::new();
            for s in &p.slots {
                for st in &s.steps {
                    if let Step::Hold(h) = st {
                        let e = per_lock.entry(h.lock).or_default();
                        if h.site == site {
                            e.0 += 1;
                            e.1 += h
                                .written
                                .iter()
                                .filter(|&&l| p.lines[l as usize] == LineKind::Tree)
                                .count();
                        }
                    }
                }
            }
            per_lock.into_values().max().expect("holds")
        };
        let whole = record(false);
        let stag = record(true);
        let holds = |p: &Profile| -> Vec<usize> {
            p.slots
                .iter()
                .map(|s| {
                    s.steps
                        .iter()
                        .filter(|s| matches!(s, Step::Hold(_)))
                        .count()
                })
                .collect()
        };
        assert_eq!(holds(&whole), holds(&stag), "the same execs");
        let (wn, ww) = written(&whole, Site::ReplaceUnlink);
        let (sn, sw) = written(&stag, Site::ReplaceUnlink);
        assert_eq!(wn, sn);
        assert!(wn > 0, "libc's mapping is replaced in every exec");
        assert!(
            4 * sw < 3 * ww,
            "staggered: {sw} tree lines written in {sn} replacements, whole turns {ww}"
        );
    }

    /// Only a kernel-cost recording's splits, and a model-cost one's for
    /// the bench's `--cost kernel` (`kernel_splits`), remove and reinsert
    /// the cut VMA ([`registry`]). Mutants run: the switch on for both
    /// costs, off for both; `kernel_splits` ignored (s40).
    #[test]
    fn only_kernel_cost_recordings_make_kernel_split_holds() {
        let cfg = |cost| RecordConfig {
            resident: 0,
            ..small_true_config(Design::Linux, cost, LockKind::KernelRwsem)
        };
        assert!(registry(&cfg(Cost::Kernel), Topology::Os).kernel_split_holds());
        assert!(!registry(&cfg(Cost::Model), Topology::Os).kernel_split_holds());
        let bench_kernel = RecordConfig {
            kernel_splits: true,
            ..cfg(Cost::Model)
        };
        assert!(registry(&bench_kernel, Topology::Os).kernel_split_holds());
    }

    /// The warm-up's hand-over phase: every turn it counts made one link
    /// and one unlink on every shared file (two holds of each file's lock),
    /// no turn's work is left uncounted, and the maps end as they began.
    #[test]
    fn the_warm_up_hand_over_counts_its_turns_and_leaves_the_maps_as_they_were() {
        if check(Path::new("/bin/true")).is_err() {
            eprintln!("skipped: the model cannot exec /bin/true here");
            return;
        }
        assert_eq!(alternate(&[]), (0, Duration::ZERO), "nothing shared");
        let files = std::sync::Arc::new(Files::new(
            Design::Linux,
            rmap::Topology::Os,
            CallPattern::PerVma,
        ));
        let prog = files.program(Path::new("/bin/true")).expect("a program");
        // One process keeps the program mapped, as the residents do.
        let resident = looper(&files, false, &prog);
        let shared = prog.mapped_files();
        assert!(!shared.is_empty());
        let lens: Vec<usize> = shared.iter().map(|f| f.rmap().len()).collect();
        let before = files.lock_stats().acquisitions;
        let (turns, took) = alternate(&shared);
        let after = files.lock_stats().acquisitions;
        assert!(turns > 0, "two threads on one host make some turns");
        assert!(
            turns >= ALTERNATE_TURNS || took >= ALTERNATE_MAX,
            "it stops at its turns or at its time: {turns} turns in {took:?}"
        );
        assert_eq!(
            after - before,
            2 * (turns * shared.len()) as u64,
            "each counted turn: one link and one unlink per shared file, nothing else"
        );
        let now: Vec<usize> = shared.iter().map(|f| f.rmap().len()).collect();
        assert_eq!(now, lens, "every link was unlinked");
        resident.exit();
    }

    #[test]
    fn a_shell_iteration_forks_a_process_that_maps_the_program() {
        let files = Files::new(Design::Linux, Topology::Os, CallPattern::PerVma);
        let Ok(prog) = files.program(Path::new("/bin/true")) else {
            eprintln!("skipped: the model cannot exec /bin/true here");
            return;
        };
        let count = |shell: bool, site: Site| {
            let mm = looper(&files, shell, &prog);
            iteration(shell, &mm, &prog);
            let ev = record(|| iteration(shell, &mm, &prog));
            ev.iter().filter(|e| e.site == site).count()
        };
        let file_vmas = {
            let mm = looper(&files, true, &prog);
            mm.vmas().iter().filter(|v| v.file().is_some()).count()
        };
        assert!(file_vmas >= 3);
        // One insert-after per file VMA of the parent, none for execl.
        assert_eq!(count(true, Site::ForkInsertAfter), file_vmas);
        assert_eq!(count(false, Site::ForkInsertAfter), 0);
        // The shell's child tears its copy down at exec and exits: more
        // exit unlinks than execl's one teardown.
        assert!(count(true, Site::ExitUnlink) > count(false, Site::ExitUnlink));
    }

    fn lines(word: usize, rest: &[(usize, bool)]) -> Vec<rmap::trace::LineTouch> {
        std::iter::once(rmap::trace::LineTouch {
            line: word,
            written: true,
            loaded_first: false,
            allocated: false,
            freed: false,
            kernel_keeps: false,
        })
        .chain(rest.iter().map(|&(line, written)| rmap::trace::LineTouch {
            line,
            written,
            loaded_first: !written,
            allocated: false,
            freed: false,
            kernel_keeps: false,
        }))
        .collect()
    }

    #[test]
    fn steps_interleave_work_and_holds_with_their_lines() {
        let mut locks = HashMap::new();
        let mut names = Vec::new();
        let mut table = Lines::default();
        let mut evs = vec![
            ev(1, 0, Site::MmapLink, 100),
            ev(2, 0, Site::MmapLink, 50),
            ev(1, 0, Site::ExitUnlink, 50),
        ];
        evs[0].lines = lines(10, &[(100, true), (101, false)]);
        evs[1].lines = lines(20, &[(100, false)]);
        evs[2].lines = lines(10, &[(101, true), (102, false)]);
        let st = steps_of(
            &evs,
            1000.0,
            Cost::Model,
            OwnWork::default(),
            &mut locks,
            &mut names,
            &mut table,
        );
        assert_eq!(st.len(), 7);
        assert_eq!(names.len(), 2);
        assert!(names.iter().all(|l| l.kind == LockKind::ParkingLot));
        let work: f64 = st
            .iter()
            .map(|s| if let Step::Work(t) = s { *t } else { 0.0 })
            .sum();
        assert!((work - 800.0).abs() < 1e-9);
        let holds: Vec<&Hold> = st
            .iter()
            .filter_map(|s| if let Step::Hold(h) = s { Some(h) } else { None })
            .collect();
        // One identity per recorded line: holds 0 and 1 share line 100,
        // holds 0 and 2 line 101 (and their lock word).
        assert_eq!(holds[0].written, holds[1].read);
        assert_eq!(holds[0].read, holds[2].written);
        assert_eq!(names[0].line, names[holds[2].lock as usize].line);
        assert_ne!(names[0].line, names[1].line);
        assert_eq!(table.kinds.len(), 5);
        assert_eq!(table.kinds[names[0].line as usize], LineKind::LockWord);
    }

    #[test]
    fn the_kernel_cost_drops_freed_slots_and_gives_new_entries_their_own_line() {
        // Hold 0 (one thread) removes node 100: the arena writes its slot
        // (freed). Hold 1 (another thread) reuses that slot for its new
        // entry (allocated) and writes node 101, which hold 0 also wrote.
        let mut evs = vec![
            ev(1, 0, Site::ExitUnlink, 100),
            ev(1, 0, Site::MmapLink, 100),
            ev(1, 0, Site::MmapLink, 100),
        ];
        evs[0].lines = lines(10, &[(100, true), (101, true)]);
        evs[0].lines[1].freed = true;
        evs[1].lines = lines(10, &[(100, true), (101, true), (7, true)]);
        evs[1].lines[1].allocated = true;
        // Line 7: a tree header whose kernel counterpart the insert kept.
        evs[1].lines[3].kernel_keeps = true;
        // A later hold's walk reads the slot by its arena identity.
        evs[2].lines = lines(10, &[(100, false)]);
        let holds = |cost: Cost| -> Vec<Hold> {
            steps_of(
                &evs,
                1000.0,
                cost,
                OwnWork::default(),
                &mut HashMap::new(),
                &mut Vec::new(),
                &mut Lines::default(),
            )
            .into_iter()
            .filter_map(|s| if let Step::Hold(h) = s { Some(h) } else { None })
            .collect()
        };
        // The lab's own code: the slot is one line, written by both.
        let m = holds(Cost::Model);
        assert_eq!(m[0].written, m[1].written[..2]);
        assert_eq!(m[1].written.len(), 3, "the header written");
        // The kernel: the erase writes nothing of the erased node, and the
        // new VMA is a line of its own (its CPU's slab object), while the
        // rebalanced node 101 stays shared.
        let k = holds(Cost::Kernel);
        assert_eq!(k[0].written.len(), 1, "the freed slot is not written");
        assert_eq!(k[1].written.len(), 2);
        assert_eq!(k[1].read.len(), 1, "the kept header only read");
        assert!(k[1].written.contains(&k[0].written[0]), "node 101 shared");
        let new = k[1].written.iter().find(|l| !k[0].written.contains(l));
        assert!(new.is_some(), "the new entry has a line of its own");
        assert!(
            !k[1].written.contains(&k[2].read[0]),
            "not the arena slot's line"
        );
    }

    /// Steps of `evs` (model cost, 1000 ns an iteration) and their work
    /// steps.
    fn work_of(evs: &[Event]) -> (Vec<Step>, Vec<f64>) {
        let st = steps_of(
            evs,
            1000.0,
            Cost::Model,
            OwnWork::default(),
            &mut HashMap::new(),
            &mut Vec::new(),
            &mut Lines::default(),
        );
        let w = st
            .iter()
            .filter_map(|s| {
                if let Step::Work(t) = s {
                    Some(*t)
                } else {
                    None
                }
            })
            .collect();
        (st, w)
    }

    #[test]
    fn recorded_bursts_place_the_work_where_the_recording_found_it() {
        // Four holds of 50 ns: all the work first (a 600 ns stretch), then
        // two bursts of two holds 20 ns apart with 100 ns between them, on
        // a timeline of 1000 ns (recording's own length: only its shape
        // counts).
        let at = |start: f64| Placement {
            start_ns: start,
            end_ns: start + 50.0,
            iteration_ns: 1000.0,
            clock_ns: 0.0,
        };
        let mut evs: Vec<Event> = (0..4).map(|i| ev(1, i, Site::MmapLink, 50)).collect();
        for (e, s) in evs.iter_mut().zip([600.0, 670.0, 820.0, 890.0]) {
            e.placed = Some(at(s));
        }
        let (placed, work) = work_of(&evs);
        // Gaps on the timeline: 600, 20, 100, 20, and 60 after the last
        // hold (800 in all), scaled to the 800 ns of work outside holds.
        let want = [600.0, 20.0, 100.0, 20.0, 60.0];
        assert_eq!(work.len(), want.len());
        for (w, x) in work.iter().zip(want) {
            assert!((w - x).abs() < 1e-9, "{work:?}");
        }
        // The same holds without placements (an old recorder): even.
        for e in &mut evs {
            e.placed = None;
        }
        let (even, work) = work_of(&evs);
        assert!(work.iter().all(|&w| (w - 160.0).abs() < 1e-9), "{work:?}");
        assert_ne!(placed, even, "a burst is not an even spread");
        // Same holds, same order; only the work moved.
        let holds = |st: &[Step]| -> Vec<Hold> {
            st.iter()
                .filter_map(|s| {
                    if let Step::Hold(h) = s {
                        Some(h.clone())
                    } else {
                        None
                    }
                })
                .collect()
        };
        assert_eq!(holds(&placed), holds(&even));
        // A timeline twice as long with the same shape: the same steps.
        for (e, s) in evs.iter_mut().zip([600.0, 670.0, 820.0, 890.0]) {
            e.placed = Some(Placement {
                start_ns: 2.0 * s,
                end_ns: 2.0 * s + 100.0,
                iteration_ns: 2000.0,
                clock_ns: 0.0,
            });
        }
        assert_eq!(work_of(&evs).0, placed);
    }

    #[test]
    fn a_written_line_the_hold_loaded_first_is_kept_as_such() {
        let mut e = ev(1, 0, Site::MmapLink, 100);
        e.lines = lines(10, &[(100, true), (101, true), (102, false)]);
        e.lines[1].loaded_first = true; // 100: walked, then written
        let (st, _) = work_of(std::slice::from_ref(&e));
        let Step::Hold(h) = &st[1] else {
            panic!("expected a hold")
        };
        assert_eq!(h.written.len(), 2);
        assert_eq!(h.loaded_first, vec![h.written[0]]);
    }

    /// One plain iteration whose split hold was preempted for 3 ms (as on
    /// a loaded host) leaves the site's typical hold time as the other
    /// iterations give it; a mean over the iterations (the rule before)
    /// would put 30 us into every iteration's split holds.
    #[test]
    fn a_preempted_plain_hold_does_not_move_its_sites_hold_time() {
        let split = call_site(Site::Split).index();
        let link = call_site(Site::MmapLink).index();
        let mut stats = vec![rmap::LockStats::default()];
        for k in 0..100u64 {
            let mut s = *stats.last().unwrap();
            s.per_site[split].hold_ns += if k == 37 { 3_000_000 } else { 900 + k % 3 };
            s.per_site[link].hold_ns += 400;
            stats.push(s);
        }
        let got = plain_site_holds(&stats);
        let at = |site: Site| got[Site::ALL.iter().position(|&x| x == site).unwrap()];
        assert_eq!(at(Site::MmapLink), 400.0);
        assert!(
            (900.0..=902.0).contains(&at(Site::Split)),
            "{}",
            at(Site::Split)
        );
        assert_eq!(at(Site::Walk), 0.0);
        // No iteration measured: nothing to correct by.
        assert!(plain_site_holds(&stats[..1]).iter().all(|&x| x == 0.0));
    }

    #[test]
    fn kernel_holds_leave_out_the_lab_counters() {
        let rec = rmap::trace::record_lines(|| {
            let m = Design::Linux.build(&Topology::Os);
            let _s = rmap::stats::set_call_site(rmap::stats::CallSite::MmapLink);
            m.insert(rmap::Interval::new(0, 9).unwrap(), 1).unwrap();
        });
        let mut e = ev(1, 0, Site::MmapLink, 100);
        e.lines = rec.1[0].lines.clone();
        assert!(e.lines.iter().any(|l| l.is_counter()));
        let count = |cost| {
            let mut t = Lines::default();
            let st = steps_of(
                std::slice::from_ref(&e),
                1000.0,
                cost,
                OwnWork::default(),
                &mut HashMap::new(),
                &mut Vec::new(),
                &mut t,
            );
            let n = match &st[1] {
                Step::Hold(h) => h.written.len() + h.read.len(),
                _ => panic!("expected a hold"),
            };
            (
                n,
                t.kinds.iter().filter(|&&k| k == LineKind::Counter).count(),
            )
        };
        let (model, model_counters) = count(Cost::Model);
        let (kernel, kernel_counters) = count(Cost::Kernel);
        assert!(model_counters > 0);
        assert_eq!(kernel_counters, 0);
        assert_eq!(model, kernel + model_counters);
    }

    /// The kernel's split holds (one per `__split_vma`, after coalescing)
    /// hold one store of the split piece into the process's tree (its
    /// time moves from the work into the hold: the iteration's total is
    /// kept), an mprotect split also the anon_vma update (added: the model
    /// never did it); no line is added and no other hold changes. The
    /// model's holds are its own code's. Mutants: `steps_of` without the
    /// store in the hold (`own(e).0` left out of `hold_ns`: the split
    /// holds stay 100 and 60 ns), or without the anon_vma update
    /// (`own(e).1`: the mprotect split 85 ns, not 95): each fails here.
    /// A merge (`commit_merge`) is one hold with the grown VMA's store, as
    /// a split: mutants `Site::Merge` left out of `coalesce_splits` (6
    /// holds, not 5) or out of the store (`Merge` 50 ns, not 75) fail.
    #[test]
    fn kernel_split_holds_hold_the_split_pieces_tree_store_and_the_anon_vma_update() {
        let mut evs = vec![
            ev(1, 0, Site::ReplaceUnlink, 100),
            ev(1, 0, Site::Split, 60),
            ev(1, 0, Site::Split, 40),
            ev(1, 0, Site::MmapLink, 80),
            ev(1, 0, Site::ProtectSplit, 60),
            ev(1, 0, Site::Merge, 30),
            ev(1, 0, Site::Merge, 20),
        ];
        for (k, e) in evs.iter_mut().enumerate() {
            e.lines = lines(10, &[(100 + k, true)]);
        }
        // The two consecutive split holds are one system call's, and so are
        // the merge's removal and insert (`commit_merge`: one hold).
        evs[1].call = 3;
        evs[2].call = 3;
        evs[5].call = 4;
        evs[6].call = 4;
        let steps = |cost, own| {
            steps_of(
                &evs,
                2000.0,
                cost,
                own,
                &mut HashMap::new(),
                &mut Vec::new(),
                &mut Lines::default(),
            )
        };
        let holds = |st: &[Step]| -> Vec<(Site, f64, usize)> {
            st.iter()
                .filter_map(|s| match s {
                    Step::Hold(h) => Some((h.site, h.hold_ns, h.written.len() + h.read.len())),
                    _ => None,
                })
                .collect()
        };
        let work = |st: &[Step]| -> f64 {
            st.iter()
                .map(|s| if let Step::Work(t) = s { *t } else { 0.0 })
                .sum()
        };
        let own = OwnWork {
            store_ns: 25.0,
            anon_vma_ns: 10.0,
        };
        let without = steps(Cost::Kernel, OwnWork::default());
        let with = steps(Cost::Kernel, own);
        let (h0, h1) = (holds(&without), holds(&with));
        assert_eq!(h0.len(), 5, "the split holds of one call merged: {h0:?}");
        assert_eq!(h0[1], (Site::Split, 100.0, 2));
        assert_eq!(h0[4], (Site::Merge, 50.0, 2), "one merge hold");
        assert_eq!(h1[1], (Site::Split, 125.0, 2), "one store per merged hold");
        assert_eq!(h1[3], (Site::ProtectSplit, 95.0, 1), "store and anon_vma");
        assert_eq!(h1[4], (Site::Merge, 75.0, 2), "commit_merge's store");
        assert_eq!((h1[0], h1[2]), (h0[0], h0[2]), "other holds unchanged");
        // The stores move out of the work; the anon_vma update is new.
        assert!((work(&without) - work(&with) - 75.0).abs() < 1e-9);
        let total = |st: &[Step]| work(st) + holds(st).iter().map(|h| h.1).sum::<f64>();
        assert!((total(&with) - total(&without) - 10.0).abs() < 1e-9);
        // The model's holds: its own code, whatever the kernel's cost.
        assert_eq!(
            steps(Cost::Model, own),
            steps(Cost::Model, OwnWork::default())
        );
        // The store's time: the slots' means' median; none stored, none.
        let st = |count, ns| mm::split_stores::SplitStores { count, ns };
        let (a, b, c, none) = (st(2, 100.0), st(4, 120.0), st(1, 90.0), st(0, 0.0));
        assert_eq!(split_store_ns(&[&a, &b, &c, &none]), 50.0);
        assert_eq!(split_store_ns(&[&none]), 0.0);
        // The anon_vma stand-in is timed: some ns, not a constant.
        let t = anon_vma_update_ns();
        assert!(t > 0.0 && t.is_finite(), "{t}");
    }

    /// A slot's teardown frees last iteration's nodes; the iteration then
    /// makes nodes (one of them freed again by an munmap). The nodes the
    /// teardown freed take, in order, the identities of the nodes the
    /// iteration made and kept, on the same map only; the munmap's free
    /// (of a node made in the iteration) and the other map's stay.
    #[test]
    fn a_teardown_frees_the_nodes_its_slot_made_and_kept() {
        let node = |x: usize| (1usize << (usize::BITS - 1)) | x;
        let touch =
            |line: usize, written: bool, allocated: bool, freed: bool| rmap::trace::LineTouch {
                line: node(line),
                written,
                loaded_first: !allocated,
                allocated,
                freed,
                kernel_keeps: false,
            };
        let with = |mut e: Event, t: Vec<rmap::trace::LineTouch>| {
            // The lock word first (not a node).
            e.lines = lines(e.map as usize, &[]);
            e.lines.extend(t);
            e.recount_lines();
            e
        };
        let mut evs = vec![
            // The teardown: frees 1 and 2 (last iteration's), reads 5 (a
            // node this iteration makes later, another slot's now).
            with(
                ev(1, 0, Site::ExitUnlink, 100),
                vec![
                    touch(1, true, false, true),
                    touch(2, true, false, true),
                    touch(5, false, false, false),
                ],
            ),
            // Another map's teardown: nothing made there, stays.
            with(
                ev(2, 0, Site::ExitUnlink, 100),
                vec![touch(9, true, false, true)],
            ),
            with(
                ev(1, 0, Site::MmapLink, 100),
                vec![touch(4, true, true, false)],
            ),
            with(
                ev(1, 0, Site::MmapLink, 100),
                vec![touch(7, true, true, false)],
            ),
            // An munmap frees 7, made in this iteration: its own already.
            with(
                ev(1, 0, Site::ExitUnlink, 100),
                vec![touch(7, true, false, true)],
            ),
            with(
                ev(1, 0, Site::MmapLink, 100),
                vec![touch(5, true, true, false)],
            ),
        ];
        assert_eq!(own_nodes_carried_over(&mut evs), 2);
        let ids = |e: &Event| -> Vec<(usize, bool)> {
            e.lines[1..]
                .iter()
                .map(|l| (l.line & !node(0), l.written))
                .collect()
        };
        // 1 -> 4, 2 -> 5 (merged with the read of 5: written).
        assert_eq!(ids(&evs[0]), vec![(4, true), (5, true)]);
        assert_eq!((evs[0].lines_written, evs[0].lines_read), (3, 0));
        assert_eq!(ids(&evs[1]), vec![(9, true)]);
        assert_eq!(ids(&evs[4]), vec![(7, true)]);
        // Nothing to pair with: nothing renamed.
        let mut alone = vec![evs[1].clone()];
        assert_eq!(own_nodes_carried_over(&mut alone), 0);
    }

    #[test]
    fn unbatching_exit_splits_by_links() {
        let mut locks = HashMap::new();
        let mut names = Vec::new();
        let mut evs = vec![ev(1, 0, Site::ExitUnlink, 500)];
        evs[0].lines = lines(
            1,
            &(0..10)
                .map(|i| (100 + i, true))
                .chain((200..205).map(|i| (i, false)))
                .collect::<Vec<_>>(),
        );
        evs.extend((0..5).map(|_| ev(1, 0, Site::MmapLink, 100)));
        let p = Profile {
            label: "x".into(),
            workload: "execl".into(),
            call_pattern: "per-vma".into(),
            slots: vec![CpuProfile {
                cpu: 0,
                steps: steps_of(
                    &evs,
                    5000.0,
                    Cost::Kernel,
                    OwnWork::default(),
                    &mut locks,
                    &mut names,
                    &mut Lines::default(),
                ),
            }],
            locks: names,
            lines: vec![LineKind::LockWord],
            recorded_ghz: 1.0,
            notes: String::new(),
            exit_vmas_per_hold: 0.0,
            work_placed: false,
            loads_recorded: false,
            hold_timing: false,
        };
        let q = unbatch_exit(&p);
        let exits: Vec<f64> = q.slots[0]
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Hold(h) if h.site == Site::ExitUnlink => Some(h.hold_ns),
                _ => None,
            })
            .collect();
        assert_eq!(exits, vec![100.0; 5]);
        assert_eq!(p.times().0, q.times().0);
        // The batch's written and read lines are shared out, each once (a
        // removal touches the nodes around its own change, no path from the
        // root that every piece would walk).
        let pieces: Vec<&Hold> = q.slots[0]
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Hold(h) if h.site == Site::ExitUnlink => Some(h),
                _ => None,
            })
            .collect();
        let batch = p.slots[0]
            .steps
            .iter()
            .find_map(|s| match s {
                Step::Hold(h) if h.site == Site::ExitUnlink => Some(h),
                _ => None,
            })
            .unwrap();
        let shared_out = |of: fn(&Hold) -> &Vec<u32>| {
            let mut all: Vec<u32> = pieces.iter().flat_map(|h| of(h).clone()).collect();
            all.sort_unstable();
            let mut want = of(batch).clone();
            want.sort_unstable();
            assert_eq!(all, want);
        };
        shared_out(|h| &h.written);
        shared_out(|h| &h.read);
        assert_eq!(batch.read.len(), 5);
        assert!(pieces
            .iter()
            .all(|h| h.written.len() == 2 && h.read.len() == 1));
    }
}
