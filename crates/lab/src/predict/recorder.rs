//! Records profiles from the real code: an instrumented single-threaded run
//! of the model's exec (or fork + exec + exit) loop, every reverse-map lock
//! hold recorded by `rmap::trace`.
//!
//! The only place that knows the recorder's interface is [`record`] and the
//! [`Event`] mirror of its event type: switching recorders is this file.

use mm::{CallPattern, Files, Mm, Program};
use predict::{CpuProfile, Hold, LockDesc, Machine, Profile, Site, Step};
use rmap::{Design, Topology};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// One lock hold (mirrors `rmap::trace::LockEvent`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Event {
    /// Map id.
    pub map: u32,
    /// Shard (`u32::MAX`: an outer lock).
    pub shard: u32,
    /// Exclusive.
    pub write: bool,
    /// Call site.
    pub site: Site,
    /// Hold time, ns.
    pub hold_ns: u64,
    /// Distinct shared lines written (lock word included).
    pub lines_written: u32,
    /// Distinct shared lines only read.
    pub lines_read: u32,
    /// The lock word's line was also written as data during the hold.
    pub lock_line_data: bool,
    /// Which step of the exec sequence (one system call) made this hold
    /// ([`label_calls`]); [`NO_CALL`] when not known.
    pub call: u32,
}

/// [`Event::call`] of a hold whose system call is not known.
pub const NO_CALL: u32 = u32::MAX;

fn site_of(s: rmap::stats::CallSite) -> Site {
    use rmap::stats::CallSite as C;
    match s {
        C::MmapLink => Site::MmapLink,
        C::ReplaceUnlink => Site::ReplaceUnlink,
        C::Split => Site::Split,
        C::ExitUnlink => Site::ExitUnlink,
        C::ForkInsertAfter => Site::ForkInsertAfter,
        C::Walk => Site::Walk,
        C::Other => Site::Other,
    }
}

fn call_site(s: Site) -> rmap::stats::CallSite {
    use rmap::stats::CallSite as C;
    match s {
        Site::MmapLink => C::MmapLink,
        Site::ReplaceUnlink => C::ReplaceUnlink,
        Site::Split | Site::ProtectSplit => C::Split,
        Site::ExitUnlink => C::ExitUnlink,
        Site::ForkInsertAfter => C::ForkInsertAfter,
        Site::Walk => C::Walk,
        Site::Other => C::Other,
    }
}

/// Scales each recorded hold so that, per call site, the holds of one
/// iteration sum to `plain_hold[site index]`, the hold time the maps
/// measured without recording (clamped to 5%..100% of the recorded time:
/// recording only adds time inside a hold, so a plain figure above the
/// recorded one is noise, a hold preempted on a loaded host;
/// a site without a plain measurement keeps its recorded times).
pub fn correct_holds(events: &mut [Event], plain_hold: &[f64]) {
    // Sites that the maps time as one (a split for mmap and for mprotect)
    // are corrected together, by the maps' one figure.
    let mut done = Vec::new();
    for (i, &site) in Site::ALL.iter().enumerate() {
        let key = call_site(site);
        if done.contains(&key) {
            continue;
        }
        done.push(key);
        let rec: f64 = events
            .iter()
            .filter(|e| call_site(e.site) == key)
            .map(|e| e.hold_ns as f64)
            .sum();
        let Some(&plain) = plain_hold.get(i) else {
            continue;
        };
        if rec <= 0.0 || plain <= 0.0 {
            continue;
        }
        let f = (plain / rec).clamp(0.05, 1.0);
        for e in events.iter_mut().filter(|e| call_site(e.site) == key) {
            e.hold_ns = (e.hold_ns as f64 * f).round() as u64;
        }
    }
}

/// Runs `work` on this thread with its lock holds recorded (`rmap::trace`).
pub fn record(work: impl FnOnce()) -> Vec<Event> {
    rmap::trace::record(work)
        .into_iter()
        .map(|e| Event {
            map: e.map,
            shard: e.shard,
            write: e.write,
            site: site_of(e.site),
            hold_ns: e.hold_ns,
            lines_written: e.lines_written,
            lines_read: e.lines_read,
            lock_line_data: e.lock_line_written_as_data,
            call: NO_CALL,
        })
        .collect()
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
    /// Iterations recorded per slot (the median one is kept).
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

/// CPU time of the calling thread, ns: unlike wall time, it leaves out the
/// time other processes on a loaded host take the CPU away.
fn thread_cpu_ns() -> f64 {
    // SAFETY: timespec is plain data; clock_gettime writes one through the
    // valid pointer.
    let ts = unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
        ts
    };
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

fn median_of(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One typical iteration from several recorded ones: the runs with the
/// most common number of holds; each hold's time and line counts the median
/// over those runs at its position; the total the median total.
pub fn summarise(runs: Vec<(f64, Vec<Event>)>) -> (f64, Vec<Event>) {
    let mut counts: HashMap<usize, usize> = HashMap::new();
    for (_, e) in &runs {
        *counts.entry(e.len()).or_insert(0) += 1;
    }
    let Some(len) = counts
        .iter()
        .max_by_key(|&(l, c)| (*c, *l))
        .map(|(&l, _)| l)
    else {
        return (0.0, Vec::new());
    };
    let kept: Vec<&(f64, Vec<Event>)> = runs.iter().filter(|r| r.1.len() == len).collect();
    let total = median_of(kept.iter().map(|r| r.0).collect());
    let events = (0..len)
        .map(|i| {
            let mut e = kept[0].1[i];
            e.hold_ns = median_of(kept.iter().map(|r| r.1[i].hold_ns as f64).collect()) as u64;
            e.lines_written = median_of(
                kept.iter()
                    .map(|r| f64::from(r.1[i].lines_written))
                    .collect(),
            ) as u32;
            e.lines_read =
                median_of(kept.iter().map(|r| f64::from(r.1[i].lines_read)).collect()) as u32;
            e
        })
        .collect();
    (total, events)
}

/// Un-nests outer-lock holds. `rmap::trace` lists holds in the order they
/// end, so an outer lock (shard `u32::MAX`) comes after the inner holds it
/// enclosed and its time includes theirs. The simulator does not nest
/// locks: the outer hold is moved before the inner holds of the same map
/// just before it and keeps only its own time (outer minus inner), so it
/// is taken and released around nothing. For an outer lock taken shared by
/// modifiers (its purpose) this keeps its real cost, the shared line of
/// its reader count; it leaves out that the outer lock stays held.
pub fn unnest(events: &[Event]) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::with_capacity(events.len());
    for e in events {
        if e.shard != u32::MAX {
            out.push(*e);
            continue;
        }
        let mut k = out.len();
        let mut inner = 0u64;
        while k > 0 && out[k - 1].map == e.map && out[k - 1].shard != u32::MAX {
            k -= 1;
            inner += out[k].hold_ns;
        }
        let mut own = *e;
        own.hold_ns = e.hold_ns.saturating_sub(inner);
        out.insert(k, own);
    }
    out
}

/// Merges each run of consecutive split holds (`Split` or `ProtectSplit`)
/// of one lock (same map, shard and mode) made by one system call
/// ([`Event::call`]) into one hold: their times add, their line counts are
/// the largest of the run (the same tree path).
///
/// The kernel's `__split_vma` removes the VMA and inserts its pieces under
/// one `i_mmap_rwsem` hold; the reverse-map interface has no such call, so
/// the model's split is a removal plus one insert per piece, consecutive
/// holds of one lock with nothing between them (`mm`'s `replace` docs).
/// Each extra hold would pay the lock's and the tree's line transfers again
/// and queue again. Holds of two different system calls are never merged:
/// the trailing remainder insert of one `MAP_FIXED` mmap and the leading
/// removal of the next call are two holds in the kernel too. When the
/// calls are not known ([`NO_CALL`] on both), consecutive split holds merge
/// as if made by one call. Design-agnostic: it looks only at call sites,
/// system calls and lock identities.
pub fn coalesce_splits(events: &[Event]) -> Vec<Event> {
    let is_split = |s: Site| matches!(s, Site::Split | Site::ProtectSplit);
    let mut out: Vec<Event> = Vec::with_capacity(events.len());
    for e in events {
        if let Some(last) = out.last_mut() {
            if is_split(e.site)
                && last.site == e.site
                && last.call == e.call
                && (last.map, last.shard, last.write) == (e.map, e.shard, e.write)
            {
                last.hold_ns += e.hold_ns;
                last.lines_written = last.lines_written.max(e.lines_written);
                last.lines_read = last.lines_read.max(e.lines_read);
                last.lock_line_data |= e.lock_line_data;
                continue;
            }
        }
        out.push(*e);
    }
    out
}

/// The holds one exec step makes: (map, outer lock, site) of each, in order.
type StepHolds = Vec<(u32, bool, Site)>;

/// What each step of `prog`'s exec sequence does to the reverse maps:
/// per step, whether it is an `mprotect`, and the holds it makes, recorded
/// by running the steps one by one, each as its system call
/// (`mmap(MAP_FIXED)`, `mprotect`, `munmap` at the planned addresses), on a
/// fresh address space. [`label_calls`] uses them to tell which system call
/// made each hold of a recorded exec.
pub fn step_holds(files: &std::sync::Arc<Files>, prog: &Program) -> Vec<(bool, StepHolds)> {
    let mm = Mm::new(files.clone());
    let key = |e: &Event| (e.map, e.shard == u32::MAX, e.site);
    let out = prog
        .steps()
        .iter()
        .map(|step| {
            let ev = record(|| {
                // Errors cannot happen for a planned, checked sequence; one
                // that did would show as a mismatch in `label_calls`.
                let _ = match step {
                    mm::ExecStep::Map {
                        start,
                        end,
                        prot,
                        backing,
                        ..
                    } => {
                        let opts = mm::MmapOptions {
                            fixed: true,
                            ..Default::default()
                        };
                        let file = match backing {
                            mm::Backing::File { file, pgoff } => Some((file, *pgoff)),
                            mm::Backing::Anon(_) => None,
                        };
                        mm.mmap_with(*start, end - start, *prot, opts, file)
                            .map(drop)
                    }
                    mm::ExecStep::Protect {
                        start, end, prot, ..
                    } => mm.mprotect(*start, end - start, *prot),
                    mm::ExecStep::Unmap { start, end, .. } => mm.munmap(*start, end - start),
                };
            });
            (
                matches!(step, mm::ExecStep::Protect { .. }),
                ev.iter().map(key).collect(),
            )
        })
        .collect();
    mm.exit();
    out
}

/// Sets [`Event::call`] of the holds of one recorded iteration that the exec
/// sequence made (the last stretch of `events` whose holds are, in order,
/// those of `steps`, see [`step_holds`]) to the index of the step that made
/// them, and relabels the `Split` holds of an `mprotect` as
/// `ProtectSplit`. Returns false (nothing changed) when no stretch matches.
pub fn label_calls(events: &mut [Event], steps: &[(bool, StepHolds)]) -> bool {
    let want: Vec<(u32, (u32, bool, Site), bool)> = steps
        .iter()
        .enumerate()
        .flat_map(|(i, (protect, hs))| hs.iter().map(move |&h| (i as u32, h, *protect)))
        .collect();
    if want.is_empty() || want.len() > events.len() {
        return false;
    }
    let key = |e: &Event| (e.map, e.shard == u32::MAX, e.site);
    let Some(at) = (0..=events.len() - want.len()).rev().find(|&p| {
        events[p..p + want.len()]
            .iter()
            .zip(&want)
            .all(|(e, w)| key(e) == w.1)
    }) else {
        return false;
    };
    for (e, &(call, _, protect)) in events[at..].iter_mut().zip(&want) {
        e.call = call;
        if protect && e.site == Site::Split {
            e.site = Site::ProtectSplit;
        }
    }
    true
}

/// Pools the times and line counts of slots whose iterations have the same
/// shape (the same holds in order: site, mode, outer or not, system call):
/// each hold's time becomes the median over those slots of its time at that
/// position, each slot's iteration time the median of theirs, and each
/// hold's line counts the mean over those slots, rounded up or down from
/// slot to slot so that the slots' sum keeps the mean (the lines are whole
/// numbers).
///
/// Every slot ran the same code on this host's few CPUs; the emulated CPU
/// chooses only which lock (shard) each hold takes, and shards of one
/// design hold trees of about the same size. What differs between two
/// slots' times is this host's noise (preemption, the other tenants' cache
/// traffic), and between their line counts the chance path of each insert
/// (a rebalance or not), which a slot's few iterations cannot average out:
/// one slot per CPU of a 384-CPU machine gets only a handful. At 384 CPUs
/// a written line is a remote transfer on the critical path, so one line
/// more or less per hold moved a whole prediction by several percent.
/// Pooled over hundreds of slots, both are stable from one recording to the
/// next. Lock identities stay each slot's own.
pub fn pool_times(slots: &mut [(u32, f64, Vec<Event>)]) {
    type Shape = Vec<(Site, bool, bool, u32)>;
    let shape = |ev: &[Event]| -> Shape {
        ev.iter()
            .map(|e| (e.site, e.write, e.shard == u32::MAX, e.call))
            .collect()
    };
    let mut groups: HashMap<Shape, Vec<usize>> = HashMap::new();
    for (i, s) in slots.iter().enumerate() {
        groups.entry(shape(&s.2)).or_default().push(i);
    }
    for idx in groups.values() {
        let total = median_of(idx.iter().map(|&i| slots[i].1).collect());
        let n = slots[idx[0]].2.len();
        let m = idx.len() as f64;
        let holds: Vec<(u64, f64, f64)> = (0..n)
            .map(|k| {
                let h = median_of(idx.iter().map(|&i| slots[i].2[k].hold_ns as f64).collect());
                let w = idx
                    .iter()
                    .map(|&i| f64::from(slots[i].2[k].lines_written))
                    .sum::<f64>()
                    / m;
                let r = idx
                    .iter()
                    .map(|&i| f64::from(slots[i].2[k].lines_read))
                    .sum::<f64>()
                    / m;
                (h as u64, w, r)
            })
            .collect();
        for (j, &i) in idx.iter().enumerate() {
            slots[i].1 = total;
            // Evenly spaced offsets in (0, 1): over the group, floor(mean +
            // offset) averages to the mean.
            let u = (j as f64 + 0.5) / m;
            for (e, &(h, w, r)) in slots[i].2.iter_mut().zip(&holds) {
                e.hold_ns = h;
                e.lines_written = (w + u).floor() as u32;
                e.lines_read = (r + u).floor() as u32;
            }
        }
    }
}

/// Builds one slot's steps from an iteration's events (see [`unnest`] and
/// [`coalesce_splits`]) and its total time: the work outside the holds is
/// spread evenly over the gaps.
pub fn steps_of(
    events: &[Event],
    total_ns: f64,
    locks: &mut HashMap<(u32, u32), u32>,
    names: &mut Vec<LockDesc>,
) -> Vec<Step> {
    let events = coalesce_splits(&unnest(events));
    let hold: f64 = events.iter().map(|e| e.hold_ns as f64).sum();
    let gap = (total_ns - hold).max(0.0) / (events.len() + 1) as f64;
    let mut steps = Vec::with_capacity(2 * events.len() + 1);
    for e in &events {
        steps.push(Step::Work(gap));
        let n = locks.len() as u32;
        let lock = *locks.entry((e.map, e.shard)).or_insert_with(|| {
            names.push(LockDesc {
                name: if e.shard == u32::MAX {
                    format!("map{}#outer", e.map)
                } else {
                    format!("map{}#{}", e.map, e.shard)
                },
                shares_line_with_data: false,
            });
            n
        });
        if e.lock_line_data {
            names[lock as usize].shares_line_with_data = true;
        }
        steps.push(Step::Hold(Hold {
            lock,
            data: lock,
            write: e.write,
            site: e.site,
            hold_ns: e.hold_ns as f64,
            // The lock word is the simulator's own line.
            lines_written: e.lines_written.saturating_sub(1),
            lines_read: e.lines_read,
        }));
    }
    steps.push(Step::Work(gap));
    steps
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

/// Records a profile with one slot per CPU of `m` (the maps built for `m`'s
/// emulated topology, so that each slot's holds go to the shards its CPU
/// would use). Times are this host's; the caller sets `recorded_ghz`.
pub fn record_profile(m: &Machine, cfg: &RecordConfig) -> Result<Profile, String> {
    let topo = Topology::Emulated {
        nodes: m.nodes,
        cpus_per_node: m.cpus_per_node(),
    };
    let files = Files::new(cfg.design, topo.clone(), cfg.pattern);
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
        (0..cfg.resident)
            .map(|_| {
                let r = Mm::new(files.clone());
                r.exec_program(&prog);
                r
            })
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
        alternated = alternate(&shared);
        if std::env::var_os("ASPACE_PREDICT_DEBUG").is_some() {
            eprintln!("{}: after warm-up {:?}", cfg.design, files.lock_stats());
        }
    }
    // The residents exit and exec again, in order, on this one thread: the
    // trees the recording meets are then built by the same sequence of
    // operations every time, not left in whatever state the warm-up's
    // threads happened to leave them (which moved a 384-CPU prediction by
    // over 10% between recordings). A design keeps what it adapted.
    drop(residents);
    residents = populate();
    let exec_steps = step_holds(&files, &prog);
    let mut recorded: Vec<(u32, f64, Vec<Event>)> = Vec::new();
    let mut labelled = 0usize;
    let mut seen = std::collections::HashSet::new();
    // One thread per CPU of the machine, one after the other: each gets the
    // next emulated CPU, so `m.cpus()` threads cover every CPU once.
    for slot in 0..m.cpus() as usize {
        // One resident re-execs before each slot, so that each slot meets
        // the shared trees in another state. On the target machine hundreds
        // of copies exec at once and each hold meets a tree that the others
        // keep changing; a recording on one frozen tree (one slot's holds
        // leave it as they found it) gets that one state's paths, and which
        // state the warm-up left differed from recording to recording (a
        // libc hold's written lines moved by a few in all, the 384-CPU
        // prediction by over 10%). [`pool_times`] then averages the line
        // counts over the slots' states.
        if !residents.is_empty() {
            residents[slot % residents.len()].exec_program(&prog);
        }
        let own = program_for(slot)?;
        let own_steps;
        let slot_steps = if cfg.own_binary {
            own_steps = step_holds(&files, &own);
            &own_steps
        } else {
            &exec_steps
        };
        let (cpu, runs, plain_ns, plain_hold) = std::thread::scope(|s| {
            s.spawn(|| {
                let prog = &*own;
                let cpu = topo.current_cpu();
                let mm = looper(&files, cfg.shell, prog);
                for _ in 0..2 {
                    iteration(cfg.shell, &mm, prog);
                }
                let n = cfg.iterations.max(400 / m.cpus() as usize).clamp(1, 101);
                // Recorded and plain iterations interleaved: the holds come
                // from the recorded ones, the iteration's CPU time from the
                // plain ones (recording adds its own cost inside each hold).
                // Plain iterations first, with the maps' own hold timing on:
                // their CPU time is the iteration's, their hold times per call
                // site correct the recorded ones (recording adds its own cost
                // inside each hold).
                let was = rmap::stats::set_hold_timing(true);
                let before = files.lock_stats();
                let plain: Vec<f64> = (0..n)
                    .map(|_| {
                        let t = thread_cpu_ns();
                        iteration(cfg.shell, &mm, prog);
                        thread_cpu_ns() - t
                    })
                    .collect();
                let after = files.lock_stats();
                rmap::stats::set_hold_timing(was);
                let plain_hold: Vec<f64> = Site::ALL
                    .iter()
                    .map(|&site| {
                        let i = call_site(site).index();
                        (after.per_site[i].hold_ns - before.per_site[i].hold_ns) as f64 / n as f64
                    })
                    .collect();
                let runs: Vec<(f64, Vec<Event>)> = (0..n)
                    .map(|_| {
                        let t = thread_cpu_ns();
                        let ev = record(|| iteration(cfg.shell, &mm, prog));
                        (thread_cpu_ns() - t, ev)
                    })
                    .collect();
                mm.exit();
                (cpu, runs, median_of(plain), plain_hold)
            })
            .join()
            .map_err(|_| "a recording thread panicked".to_string())
        })?;
        if !seen.insert(cpu) {
            continue;
        }
        let (_, mut events) = summarise(runs);
        correct_holds(&mut events, &plain_hold);
        if events.is_empty() {
            return Err(format!(
                "design {}: an iteration recorded no lock hold (is rmap's recorder compiled in?)",
                cfg.design
            ));
        }
        labelled += usize::from(label_calls(&mut events, slot_steps));
        recorded.push((cpu, plain_ns, events));
    }
    pool_times(&mut recorded);
    let mut locks: HashMap<(u32, u32), u32> = HashMap::new();
    let mut names: Vec<LockDesc> = Vec::new();
    let mut slots: Vec<CpuProfile> = recorded
        .iter()
        .map(|(cpu, total, events)| CpuProfile {
            cpu: *cpu,
            steps: steps_of(events, *total, &mut locks, &mut names),
        })
        .collect();
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
        slots,
        recorded_ghz: 1.0,
        exit_vmas_per_hold,
        notes: format!(
            "contended warm-up: {} of {} acquisitions contended ({:.1}%, links and unlinks of the warm-up's bursts included); {} hand-overs between two threads in {:.0} ms{}; {} locks seen while recording; system calls known in {} of {} slots",
            warm.1,
            warm.0,
            100.0 * warm.1 as f64 / warm.0.max(1) as f64,
            alternated.0,
            alternated.1.as_secs_f64() * 1e3,
            if alternated.0 > 0 && alternated.0 < ALTERNATE_TURNS {
                " (host too busy for many-CPU lock traffic: an adaptive design may be recorded unadapted)"
            } else {
                ""
            },
            locks.len(),
            labelled,
            slots_n,
        ),
    };
    p.validate().map_err(|e| e.to_string())?;
    Ok(p)
}

/// The profile with every exit-unlink hold on a map split into one hold
/// per VMA it unlinks (the exit path before 2024's batching): `k` =
/// [`Profile::exit_vmas_per_hold`] rounded when the recorder measured it,
/// else links on that map in the iteration / exit holds on it; each piece
/// holds `1/k` of the time and writes the same lines. Design-agnostic.
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
                        let mut piece = h.clone();
                        piece.hold_ns = h.hold_ns / k as f64;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(map: u32, shard: u32, site: Site, hold: u64) -> Event {
        Event {
            map,
            shard,
            write: true,
            site,
            hold_ns: hold,
            lines_written: 3,
            lines_read: 2,
            lock_line_data: false,
            call: NO_CALL,
        }
    }

    #[test]
    fn a_lock_word_beside_written_data_is_seen() {
        use rmap::stats::{set_call_site, CallSite};
        use rmap::Interval;
        // A tree that holds entries: inserting writes the tree's header.
        for (d, want) in [(Design::Linux, false), (Design::LinuxSharedLine, true)] {
            let m = d.build(&Topology::Os);
            for i in 0..8 {
                m.insert(Interval::new(i, i + 9).unwrap(), i).unwrap();
            }
            let ev = record(|| {
                let _s = set_call_site(CallSite::MmapLink);
                m.insert(Interval::new(0, 9).unwrap(), 99).unwrap();
            });
            assert_eq!(ev.len(), 1);
            assert_eq!(ev[0].lock_line_data, want, "{d}");
        }
    }

    #[test]
    fn consecutive_splits_of_one_lock_merge() {
        let evs = [
            ev(1, 0, Site::MmapLink, 100),
            ev(1, 0, Site::Split, 10),
            ev(1, 0, Site::Split, 20),
            ev(2, 0, Site::Split, 5),
            ev(1, 0, Site::Split, 30),
            ev(1, 0, Site::ReplaceUnlink, 7),
            ev(1, 0, Site::Split, 40),
        ];
        let out = coalesce_splits(&evs);
        let shape: Vec<(u32, Site, u64)> = out.iter().map(|e| (e.map, e.site, e.hold_ns)).collect();
        assert_eq!(
            shape,
            vec![
                (1, Site::MmapLink, 100),
                (1, Site::Split, 30),
                (2, Site::Split, 5),
                (1, Site::Split, 30),
                (1, Site::ReplaceUnlink, 7),
                (1, Site::Split, 40),
            ]
        );
    }

    #[test]
    fn splits_of_two_system_calls_stay_two_holds() {
        let at = |mut e: Event, call: u32| {
            e.call = call;
            e
        };
        let evs = [
            at(ev(1, 0, Site::ReplaceUnlink, 7), 0),
            at(ev(1, 0, Site::Split, 10), 0),
            at(ev(1, 0, Site::Split, 20), 1),
            at(ev(1, 0, Site::Split, 30), 1),
            at(ev(1, 0, Site::ProtectSplit, 40), 2),
            at(ev(1, 0, Site::ProtectSplit, 50), 2),
        ];
        let out = coalesce_splits(&evs);
        let shape: Vec<(Site, u64, u32)> =
            out.iter().map(|e| (e.site, e.hold_ns, e.call)).collect();
        assert_eq!(
            shape,
            vec![
                (Site::ReplaceUnlink, 7, 0),
                (Site::Split, 10, 0),
                (Site::Split, 50, 1),
                (Site::ProtectSplit, 90, 2),
            ]
        );
    }

    #[test]
    fn an_exec_is_labelled_by_system_call() {
        let files = Files::new(Design::Linux, Topology::Os, CallPattern::PerVma);
        let Ok(prog) = files.program(Path::new("/bin/true")) else {
            eprintln!("skipped: the model cannot exec /bin/true here");
            return;
        };
        let steps = step_holds(&files, &prog);
        let mm = Mm::new(files.clone());
        mm.exec_program(&prog);
        let mut ev = record(|| mm.exec_program(&prog));
        let teardown = ev.len() - steps.iter().map(|s| s.1.len()).sum::<usize>();
        assert!(label_calls(&mut ev, &steps));
        // The old image's teardown comes first and belongs to no step.
        assert!(ev[..teardown].iter().all(|e| e.call == NO_CALL));
        assert!(ev[..teardown].iter().all(|e| e.site == Site::ExitUnlink));
        for (i, (protect, holds)) in steps.iter().enumerate() {
            let mine: Vec<&Event> = ev.iter().filter(|e| e.call == i as u32).collect();
            assert_eq!(mine.len(), holds.len(), "step {i}");
            if *protect {
                assert!(
                    mine.iter().all(|e| e.site == Site::ProtectSplit),
                    "step {i}"
                );
            } else {
                assert!(
                    mine.iter().all(|e| e.site != Site::ProtectSplit),
                    "step {i}"
                );
            }
        }
        // After merging, an mprotect of part of one VMA is one hold (one
        // `__split_vma`), as in the kernel.
        let merged = coalesce_splits(&ev);
        for (i, (protect, holds)) in steps.iter().enumerate() {
            if *protect && !holds.is_empty() {
                let n = merged.iter().filter(|e| e.call == i as u32).count();
                assert_eq!(n, 1, "mprotect step {i}");
            }
        }
        // An unlabelled run does not match.
        assert!(!label_calls(&mut ev[..1], &steps));
    }

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
                    design: Design::Linux,
                    pattern: CallPattern::PerVma,
                    shell: false,
                    binary: "/bin/true".into(),
                    resident: 4,
                    iterations: 1,
                    warmup: (0, Duration::ZERO),
                    own_binary,
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
                    Step::Work(_) => None,
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

    #[test]
    fn pooled_lines_keep_the_mean() {
        let slot = |w: u32| {
            let mut e = ev(1, 0, Site::MmapLink, 10);
            e.lines_written = w;
            (0, 1.0, vec![e])
        };
        // Mean 4.25 over 4 slots.
        let mut slots = vec![slot(4), slot(5), slot(4), slot(4)];
        pool_times(&mut slots);
        let w: Vec<u32> = slots.iter().map(|s| s.2[0].lines_written).collect();
        assert_eq!(w.iter().sum::<u32>(), 17);
        assert!(w.iter().all(|&x| x == 4 || x == 5));
    }

    #[test]
    fn pooled_times_are_medians_over_slots_of_one_shape() {
        let slot = |t: f64, h: u64| {
            (
                0,
                t,
                vec![ev(1, 0, Site::MmapLink, h), ev(1, 0, Site::ExitUnlink, h)],
            )
        };
        let mut slots = vec![slot(100.0, 10), slot(300.0, 50), slot(200.0, 20)];
        slots.push((9, 1000.0, vec![ev(2, 0, Site::Split, 999)]));
        pool_times(&mut slots);
        for s in &slots[..3] {
            assert_eq!(s.1, 200.0);
            assert_eq!(s.2[0].hold_ns, 20);
            assert_eq!(s.2[1].hold_ns, 20);
        }
        // Lines: every slot had 3 written, 2 read.
        assert!(slots[..3]
            .iter()
            .all(|s| s.2[0].lines_written == 3 && s.2[0].lines_read == 2));
        assert_eq!(
            (slots[3].1, slots[3].2[0].hold_ns),
            (1000.0, 999),
            "its own shape"
        );
    }

    #[test]
    fn steps_interleave_work_and_holds() {
        let mut locks = HashMap::new();
        let mut names = Vec::new();
        let evs = [
            ev(1, 0, Site::MmapLink, 100),
            ev(2, 0, Site::MmapLink, 50),
            ev(1, 0, Site::ExitUnlink, 50),
        ];
        let st = steps_of(&evs, 1000.0, &mut locks, &mut names);
        assert_eq!(st.len(), 7);
        assert_eq!(names.len(), 2);
        let work: f64 = st
            .iter()
            .map(|s| if let Step::Work(t) = s { *t } else { 0.0 })
            .sum();
        assert!((work - 800.0).abs() < 1e-9);
        match &st[1] {
            Step::Hold(h) => {
                assert_eq!(h.lines_written, 2);
                assert_eq!(h.lines_read, 2);
            }
            _ => panic!("expected a hold"),
        }
    }

    #[test]
    fn summary_takes_medians_of_the_common_shape() {
        let run = |t: f64, h: u64| {
            (
                t,
                vec![
                    ev(1, 0, Site::MmapLink, h),
                    ev(1, 0, Site::ExitUnlink, 2 * h),
                ],
            )
        };
        let mut runs = vec![run(100.0, 10), run(300.0, 30), run(200.0, 20)];
        runs.push((5000.0, vec![ev(1, 0, Site::MmapLink, 999)]));
        let (total, events) = summarise(runs);
        assert_eq!(total, 200.0);
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].hold_ns, 20);
        assert_eq!(events[1].hold_ns, 40);
        assert_eq!(events[1].site, Site::ExitUnlink);
    }

    #[test]
    fn hold_correction_is_per_site() {
        let mut evs = vec![
            ev(1, 0, Site::MmapLink, 100),
            ev(1, 0, Site::MmapLink, 300),
            ev(1, 0, Site::ExitUnlink, 100),
        ];
        let mut plain = vec![0.0; Site::ALL.len()];
        plain[Site::MmapLink.index()] = 200.0;
        correct_holds(&mut evs, &plain);
        assert_eq!(evs[0].hold_ns, 50);
        assert_eq!(evs[1].hold_ns, 150);
        assert_eq!(evs[2].hold_ns, 100, "no plain figure: unchanged");
    }

    #[test]
    fn outer_holds_are_unnested() {
        let inner = ev(7, 3, Site::MmapLink, 100);
        let outer = ev(7, u32::MAX, Site::MmapLink, 130);
        let other = ev(8, 0, Site::ExitUnlink, 50);
        let out = unnest(&[other, inner, outer]);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0], other);
        assert_eq!((out[1].shard, out[1].hold_ns), (u32::MAX, 30));
        assert_eq!(out[2], inner);
    }

    #[test]
    fn unbatching_exit_splits_by_links() {
        let mut locks = HashMap::new();
        let mut names = Vec::new();
        let mut evs = vec![ev(1, 0, Site::ExitUnlink, 500)];
        evs.extend((0..5).map(|_| ev(1, 0, Site::MmapLink, 100)));
        let p = Profile {
            label: "x".into(),
            workload: "execl".into(),
            call_pattern: "per-vma".into(),
            slots: vec![CpuProfile {
                cpu: 0,
                steps: steps_of(&evs, 5000.0, &mut locks, &mut names),
            }],
            locks: names,
            recorded_ghz: 1.0,
            notes: String::new(),
            exit_vmas_per_hold: 0.0,
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
    }
}
