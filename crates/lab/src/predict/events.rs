//! Recorded lock holds and the design-agnostic transforms the recorder
//! applies to them before they become a profile: which system call made
//! each hold, un-nesting outer locks, merging a split's holds, pooling
//! times over slots, correcting recorded times by plain ones.
//!
//! The only place that knows the recorder's interface is [`record`] and the
//! [`Event`] mirror of its event type: switching recorders is this file.

use mm::{Files, Mm, Program};
use predict::Site;
use rmap::trace::LineTouch;
use std::collections::HashMap;

/// One lock hold (mirrors `rmap::trace::LockEvent`).
#[derive(Clone, Debug, PartialEq)]
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
    /// Each distinct line the hold touched, the lock word's first.
    pub lines: Vec<LineTouch>,
    /// Where in its iteration the hold fell ([`place`]); `None` where not
    /// known (the work outside holds is then spread evenly, as before s37).
    pub placed: Option<Placement>,
}

impl Event {
    /// Sets [`Event::lines_written`] and [`Event::lines_read`] from
    /// [`Event::lines`], after a change to those lines (merged holds,
    /// renamed nodes).
    pub fn recount_lines(&mut self) {
        self.lines_written = self.lines.iter().filter(|l| l.written).count() as u32;
        self.lines_read = self.lines.len() as u32 - self.lines_written;
    }
}

/// Where a hold fell in an iteration, ns from the iteration's start, as
/// [`place`] measures it (`rmap::stats::place_holds`: plain iterations,
/// hold timing only).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Placement {
    /// To the hold's first acquisition attempt.
    pub start_ns: f64,
    /// To the hold's release.
    pub end_ns: f64,
    /// The whole iteration.
    pub iteration_ns: f64,
    /// One clock read, taken off every gap between two stamps (each gap
    /// holds about one).
    pub clock_ns: f64,
}

/// Runs `iteration` `n` times on this thread with its holds placed
/// (`rmap::stats::place_holds`) and returns, for the runs with the most
/// common number of holds, each hold's placement: the median over those
/// runs at its position (a run preempted in one gap moves only that run's
/// stamps). Empty when no run had a hold.
pub fn place(n: usize, mut iteration: impl FnMut()) -> Vec<Placement> {
    let runs: Vec<rmap::stats::Placed> = (0..n)
        .map(|_| rmap::stats::place_holds(&mut iteration).1)
        .collect();
    let Some(len) = most_common_len(runs.iter().map(|r| r.holds.len())) else {
        return Vec::new();
    };
    let kept: Vec<&rmap::stats::Placed> = runs.iter().filter(|r| r.holds.len() == len).collect();
    let med =
        |f: &dyn Fn(&rmap::stats::Placed) -> f64| median_of(kept.iter().map(|r| f(r)).collect());
    let iteration_ns = med(&|r| r.elapsed_ns as f64);
    let clock_ns = med(&|r| r.clock_ns as f64);
    (0..len)
        .map(|i| Placement {
            start_ns: med(&|r| r.holds[i].0 as f64),
            end_ns: med(&|r| r.holds[i].1 as f64),
            iteration_ns,
            clock_ns,
        })
        .collect()
}

/// The per-field median of `v`'s placements, or `None` if any is missing.
fn median_placement(v: impl Iterator<Item = Option<Placement>>) -> Option<Placement> {
    let v: Vec<Placement> = v.collect::<Option<_>>()?;
    if v.is_empty() {
        return None;
    }
    let m = |f: fn(&Placement) -> f64| median_of(v.iter().map(f).collect());
    Some(Placement {
        start_ns: m(|p| p.start_ns),
        end_ns: m(|p| p.end_ns),
        iteration_ns: m(|p| p.iteration_ns),
        clock_ns: m(|p| p.clock_ns),
    })
}

/// The exec's work outside its holds, by gap: entry `i` the work before
/// `events[i]`, the last entry the work after the last hold, as recorded
/// ([`Event::placed`]), in the timeline's ns; `None` when some hold has no
/// placement or the recording found no work outside the holds.
///
/// `events` in the order the profile runs them ([`unnest`]ed: an outer
/// hold before the inner holds it enclosed). A gap is the time from the
/// latest release so far to the next hold's acquisition attempt, less one
/// clock read (0 when that hold began inside an earlier one, as an inner
/// hold does).
pub fn recorded_gaps(events: &[Event]) -> Option<Vec<f64>> {
    let mut gaps = Vec::with_capacity(events.len() + 1);
    let mut cursor = 0.0f64;
    let mut iteration = 0.0f64;
    let mut clock = 0.0f64;
    for e in events {
        let p = e.placed?;
        gaps.push((p.start_ns - cursor - p.clock_ns).max(0.0));
        cursor = cursor.max(p.end_ns);
        iteration = iteration.max(p.iteration_ns);
        clock = p.clock_ns;
    }
    gaps.push((iteration - cursor - clock).max(0.0));
    (gaps.iter().sum::<f64>() > 0.0).then_some(gaps)
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
        C::Merge => Site::Merge,
    }
}

pub(super) fn call_site(s: Site) -> rmap::stats::CallSite {
    use rmap::stats::CallSite as C;
    match s {
        Site::MmapLink => C::MmapLink,
        Site::ReplaceUnlink => C::ReplaceUnlink,
        Site::Split | Site::ProtectSplit => C::Split,
        Site::ExitUnlink => C::ExitUnlink,
        Site::ForkInsertAfter => C::ForkInsertAfter,
        Site::Walk => C::Walk,
        Site::Merge => C::Merge,
        Site::ExecLock | Site::Other => C::Other,
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
    rmap::trace::record_lines(work)
        .1
        .into_iter()
        .map(|h| {
            let e = h.event;
            Event {
                map: e.map,
                shard: e.shard,
                write: e.write,
                site: site_of(e.site),
                hold_ns: e.hold_ns,
                lines_written: e.lines_written,
                lines_read: e.lines_read,
                lock_line_data: e.lock_line_written_as_data,
                call: NO_CALL,
                lines: h.lines,
                placed: None,
            }
        })
        .collect()
}

/// The most common of `lens` (the larger on a tie), `None` when empty:
/// the number of holds of the runs kept as typical ([`summarise`],
/// [`place`]).
fn most_common_len(lens: impl Iterator<Item = usize>) -> Option<usize> {
    let mut counts: HashMap<usize, usize> = HashMap::new();
    for l in lens {
        *counts.entry(l).or_insert(0) += 1;
    }
    counts
        .into_iter()
        .max_by_key(|&(l, c)| (c, l))
        .map(|(l, _)| l)
}

/// The median (the upper one of an even count).
pub fn median_of(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One typical iteration from several recorded ones: the runs with the
/// most common number of holds; each hold's time and placement the median
/// over those runs at its position; its lines those of the last such run
/// (the most recent state of the shared trees); the total the median
/// total.
pub fn summarise(runs: Vec<(f64, Vec<Event>)>) -> (f64, Vec<Event>) {
    let Some(len) = most_common_len(runs.iter().map(|(_, e)| e.len())) else {
        return (0.0, Vec::new());
    };
    let kept: Vec<&(f64, Vec<Event>)> = runs.iter().filter(|r| r.1.len() == len).collect();
    let total = median_of(kept.iter().map(|r| r.0).collect());
    let events = (0..len)
        .map(|i| {
            let mut e = kept[kept.len() - 1].1[i].clone();
            e.hold_ns = median_of(kept.iter().map(|r| r.1[i].hold_ns as f64).collect()) as u64;
            e.placed = median_placement(kept.iter().map(|r| r.1[i].placed));
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
            out.push(e.clone());
            continue;
        }
        let mut k = out.len();
        let mut inner = 0u64;
        while k > 0 && out[k - 1].map == e.map && out[k - 1].shard != u32::MAX {
            k -= 1;
            inner += out[k].hold_ns;
        }
        let mut own = e.clone();
        own.hold_ns = e.hold_ns.saturating_sub(inner);
        out.insert(k, own);
    }
    out
}

/// Merges each run of consecutive split holds (`Split` or `ProtectSplit`)
/// or merge holds (`Merge`) of one lock (same map, shard and mode) made by
/// one system call ([`Event::call`]) into one hold: their times add, their
/// lines are the union (written where any wrote), their line counts the
/// union's.
///
/// The kernel's `__split_vma` removes the VMA and inserts its pieces under
/// one `i_mmap_rwsem` hold, and `commit_merge` removes the VMAs a merge
/// absorbs and inserts the grown one under one hold; the reverse-map
/// interface has no such call, so the model's split or merge is a removal
/// plus one insert per piece, consecutive holds of one lock with nothing
/// between them (`mm`'s `replace` docs).
/// Each extra hold would pay the lock's and the tree's line transfers again
/// and queue again. Holds of two different system calls are never merged:
/// the trailing remainder insert of one `MAP_FIXED` mmap and the leading
/// removal of the next call are two holds in the kernel too. When the
/// calls are not known ([`NO_CALL`] on both), consecutive split holds merge
/// as if made by one call. Design-agnostic: it looks only at call sites,
/// system calls and lock identities.
pub fn coalesce_splits(events: &[Event]) -> Vec<Event> {
    let is_split = |s: Site| matches!(s, Site::Split | Site::ProtectSplit | Site::Merge);
    let mut out: Vec<Event> = Vec::with_capacity(events.len());
    for e in events {
        if let Some(last) = out.last_mut() {
            if is_split(e.site)
                && last.site == e.site
                && last.call == e.call
                && (last.map, last.shard, last.write) == (e.map, e.shard, e.write)
            {
                last.hold_ns += e.hold_ns;
                last.lock_line_data |= e.lock_line_data;
                // One hold from the first's start to the last's end.
                last.placed = match (last.placed, e.placed) {
                    (Some(a), Some(b)) => Some(Placement {
                        end_ns: a.end_ns.max(b.end_ns),
                        ..a
                    }),
                    _ => None,
                };
                merge_lines(&mut last.lines, &e.lines);
                last.recount_lines();
                continue;
            }
        }
        out.push(e.clone());
    }
    out
}

/// Adds `more` to `lines` (each line once, written where either wrote it;
/// `lines`' first entry, the lock word, stays first). A node slot freed by
/// the first hold and allocated by a later one is the later one's new
/// entry (allocated, not freed).
fn merge_lines(lines: &mut Vec<LineTouch>, more: &[LineTouch]) {
    for m in more {
        match lines.iter_mut().find(|l| l.line == m.line) {
            Some(l) => {
                // Written for the kernel where either wrote it and did not
                // keep its kernel counterpart.
                let kernel_writes = |t: &LineTouch| t.written && !t.kernel_keeps;
                let kw = kernel_writes(l) || kernel_writes(m);
                l.written |= m.written;
                l.kernel_keeps = l.written && !kw;
                if m.allocated {
                    l.allocated = true;
                    l.freed = false;
                } else if m.freed && !l.allocated {
                    l.freed = true;
                }
            }
            None => lines.push(*m),
        }
    }
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

/// Pools the times of slots whose iterations have the same shape (the
/// same holds in order: site, mode, outer or not, system call): each
/// hold's time and placement become the median over those slots of its
/// own at that position, and each slot's iteration time the median of
/// theirs.
///
/// Every slot ran the same code on this host's few CPUs; the emulated CPU
/// chooses only which lock (shard) each hold takes, and shards of one
/// design hold trees of about the same size. What differs between two
/// slots' times is this host's noise (preemption, the other tenants' cache
/// traffic), which a slot's few iterations cannot average out: one slot
/// per CPU of a 384-CPU machine gets only a handful. Pooled over hundreds
/// of slots, the times are stable from one recording to the next. Lock and
/// line identities stay each slot's own.
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
        let holds: Vec<u64> = (0..n)
            .map(|k| median_of(idx.iter().map(|&i| slots[i].2[k].hold_ns as f64).collect()) as u64)
            .collect();
        let placed: Vec<Option<Placement>> = (0..n)
            .map(|k| median_placement(idx.iter().map(|&i| slots[i].2[k].placed)))
            .collect();
        for &i in idx {
            slots[i].1 = total;
            for ((e, &h), &p) in slots[i].2.iter_mut().zip(&holds).zip(&placed) {
                e.hold_ns = h;
                e.placed = p;
            }
        }
    }
}

/// An exclusive hold on `(map, shard)` at `site` for tests: 3 lines
/// written, 2 read, no line identities, no system call.
#[cfg(test)]
pub(crate) fn test_event(map: u32, shard: u32, site: Site, hold: u64) -> Event {
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
        lines: Vec::new(),
        placed: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mm::CallPattern;
    use rmap::{Design, Topology};
    use std::path::Path;

    use super::test_event as ev;

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

    /// A kernel-cost recording's split holds (`Files::set_kernel_split_holds`,
    /// Linux 6.12 `__split_vma`: insert the piece, remove and reinsert the
    /// cut VMA in one hold) stay one hold per split after
    /// [`coalesce_splits`], two for a map over a VMA's middle as in the
    /// kernel, each touching more lines than the piece's insert alone.
    /// Mutant run: the pieces' splits done back to back before the link
    /// (the kernel's order: split, split, unlink, link) coalesces them into
    /// one hold.
    #[test]
    fn kernel_split_holds_stay_one_hold_per_split() {
        use mm::{MapFlags, Mm, Prot, PAGE_SIZE};
        let holds = |kernel: bool| {
            let files = Files::new(Design::Linux, Topology::Os, CallPattern::PerVma);
            files.set_kernel_split_holds(kernel);
            let f = files.register(Path::new("/synthetic/split"), 64);
            let mm = Mm::new(files.clone());
            let fixed = MapFlags {
                fixed: true,
                shared: false,
            };
            let base = 0x10_0000_0000;
            mm.mmap(base, 10 * PAGE_SIZE, Prot::R, fixed, Some((&f, 0)))
                .unwrap();
            let evs = record(|| {
                mm.mmap(
                    base + 2 * PAGE_SIZE,
                    2 * PAGE_SIZE,
                    Prot::RX,
                    fixed,
                    Some((&f, 2)),
                )
                .unwrap();
            });
            coalesce_splits(&evs)
        };
        let sites = |h: &[Event]| h.iter().map(|e| e.site).collect::<Vec<_>>();
        let model = holds(false);
        let kernel = holds(true);
        use Site::*;
        assert_eq!(sites(&model), [ReplaceUnlink, Split, MmapLink, Split]);
        assert_eq!(sites(&kernel), [Split, MmapLink, Split, ReplaceUnlink]);
        let split_lines = |h: &[Event]| {
            h.iter()
                .filter(|e| e.site == Split)
                .map(|e| e.lines.len())
                .collect::<Vec<_>>()
        };
        for (k, m) in split_lines(&kernel).into_iter().zip(split_lines(&model)) {
            assert!(k > m, "kernel split hold {k} lines, model {m}");
        }
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
        let out = unnest(&[other.clone(), inner.clone(), outer]);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0], other);
        assert_eq!((out[1].shard, out[1].hold_ns), (u32::MAX, 30));
        assert_eq!(out[2], inner);
    }
}
