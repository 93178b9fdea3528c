//! Multi-thread stress: one writer stores, inserts, allocates and erases while
//! readers check the concurrency contract.
//!
//! Layout of the key space: `SEGMENTS` segments of `SEG` indices. Each segment
//! starts with a fixed entry `[base, base + FIXED - 1]` inserted before the
//! readers start and never touched again; the rest of the segment is the
//! writer's. So fixed and churned entries share nodes, and every copy-on-write
//! of a node must carry the fixed entries along. A second, untouched region
//! far above holds more fixed entries.
//!
//! Each value records the range it was stored with and a generation; a trim
//! or split only ever shrinks an entry, so a reader checks that every entry
//! lies inside the range its value names.
//!
//! Runs for about 3 seconds; set `ASPACE_STRESS_SECS` to run longer.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aspace_maple::{MapleError, MapleTree};

mod common;
use common::Rng;

const SEG: u64 = 1024;
const FIXED: u64 = 8;
const SEGMENTS: u64 = if cfg!(miri) { 4 } else { 512 };
const FAR: u64 = 1 << 40;
const FAR_COUNT: u64 = if cfg!(miri) { 4 } else { 64 };
const READERS: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Val {
    first: u64,
    last: u64,
    generation: u64,
}

fn fixed_ranges() -> Vec<RangeInclusive<u64>> {
    let near = (0..SEGMENTS).map(|k| k * SEG..=k * SEG + FIXED - 1);
    let far = (0..FAR_COUNT).map(|j| FAR + j * 16..=FAR + j * 16 + 3);
    near.chain(far).collect()
}

fn is_fixed_index(i: u64) -> bool {
    if i < SEGMENTS * SEG {
        i % SEG < FIXED
    } else {
        (FAR..FAR + FAR_COUNT * 16).contains(&i) && (i - FAR) % 16 < 4
    }
}

fn fixed_containing(i: u64) -> Option<RangeInclusive<u64>> {
    if !is_fixed_index(i) {
        return None;
    }
    if i < SEGMENTS * SEG {
        let b = i - i % SEG;
        Some(b..=b + FIXED - 1)
    } else {
        let b = i - (i - FAR) % 16;
        Some(b..=b + 3)
    }
}

/// The writer's part of the segment holding `i`, if `i` is in one.
fn writer_region(i: u64) -> Option<RangeInclusive<u64>> {
    (i < SEGMENTS * SEG && i % SEG >= FIXED).then(|| {
        let b = i - i % SEG;
        b + FIXED..=b + SEG - 1
    })
}

/// The invariant every entry must satisfy in any view.
#[track_caller]
fn check_entry(r: &RangeInclusive<u64>, v: &Val) {
    assert!(r.start() <= r.end(), "inverted entry {r:?}");
    assert!(
        v.first <= *r.start() && *r.end() <= v.last,
        "entry {r:?} holds value {v:?} stored for another range"
    );
    if v.generation == 0 {
        assert_eq!(*r, v.first..=v.last, "fixed entry changed");
        assert_eq!(fixed_containing(*r.start()), Some(r.clone()));
    } else {
        let w = writer_region(*r.start()).expect("writer entry outside the writer's regions");
        assert!(
            w.contains(r.end()),
            "writer entry {r:?} crosses its segment"
        );
    }
}

fn duration() -> Duration {
    let secs: f64 = std::env::var("ASPACE_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    Duration::from_secs_f64(secs)
}

/// The writer's own model of the tree, to check the final state.
struct Model(BTreeMap<u64, (u64, Val)>);

impl Model {
    fn store(&mut self, f: u64, l: u64, v: Val) {
        let over: Vec<u64> = self
            .0
            .range(..=l)
            .rev()
            .take_while(|(_, &(el, _))| el >= f)
            .map(|(&k, _)| k)
            .collect();
        for k in over {
            let (el, ev) = self.0.remove(&k).unwrap();
            if k < f {
                self.0.insert(k, (f - 1, ev));
            }
            if el > l {
                self.0.insert(l + 1, (el, ev));
            }
        }
        self.0.insert(f, (l, v));
    }

    fn containing(&self, i: u64) -> Option<(u64, u64)> {
        let (&f, &(l, _)) = self.0.range(..=i).next_back()?;
        (l >= i).then_some((f, l))
    }

    fn free(&self, f: u64, l: u64) -> bool {
        self.containing(f).is_none() && self.0.range(f..=l).next().is_none()
    }
}

fn writer(tree: &MapleTree<Val>, stop: &AtomicBool, ops: &AtomicU64, seed: u64) -> Model {
    let mut rng = Rng(seed);
    let mut model = Model(BTreeMap::new());
    for r in fixed_ranges() {
        model.0.insert(
            *r.start(),
            (
                *r.end(),
                Val {
                    first: *r.start(),
                    last: *r.end(),
                    generation: 0,
                },
            ),
        );
    }
    let mut generation = 0;
    let max_ops = if cfg!(miri) { 300 } else { u64::MAX };
    let mut n = 0;
    // At least one write however late this thread starts: the test checks
    // that work was done, which a loaded machine must not be able to miss.
    while n == 0 || (!stop.load(Ordering::Relaxed) && n < max_ops) {
        n += 1;
        generation += 1;
        let seg = rng.below(SEGMENTS) * SEG;
        let (wf, wl) = (seg + FIXED, seg + SEG - 1);
        let f = wf + rng.below(SEG - FIXED);
        let len = if rng.below(10) == 0 {
            rng.below(300)
        } else {
            rng.below(8)
        };
        let l = (f + len).min(wl);
        let v = Val {
            first: f,
            last: l,
            generation,
        };
        match rng.below(12) {
            0..=3 => {
                tree.store_range(f, l, v).unwrap();
                model.store(f, l, v);
            }
            4 => {
                let free = model.free(f, l);
                match tree.insert_range(f, l, v) {
                    Ok(()) => {
                        assert!(free, "insert_range({f}, {l}) over an occupied range");
                        model.store(f, l, v);
                    }
                    Err(e) => {
                        assert!(
                            !free,
                            "insert_range({f}, {l}) refused a free range: {:?}",
                            e.kind
                        );
                        assert!(matches!(e.kind, MapleError::Occupied { .. }));
                    }
                }
            }
            5..=7 => {
                let want = model.containing(f);
                let got = tree.erase(f).map(|e| (e.first(), e.last()));
                assert_eq!(got, want, "erase({f})");
                if let Some((ef, _)) = want {
                    model.0.remove(&ef);
                }
            }
            8 => {
                let size = 1 + rng.below(16);
                let rev = rng.below(2) == 0;
                // the value names the whole window: the real range is only known afterwards
                let val = Val {
                    first: wf,
                    last: wl,
                    generation,
                };
                let got = if rev {
                    tree.alloc_range_rev(wf, wl, size, val)
                } else {
                    tree.alloc_range(wf, wl, size, val)
                };
                match got {
                    Ok(s) => {
                        assert!(s >= wf && s + size - 1 <= wl);
                        assert!(
                            model.free(s, s + size - 1),
                            "alloc_range gave an occupied range"
                        );
                        model.store(s, s + size - 1, val);
                    }
                    Err(e) => assert!(matches!(e.kind, MapleError::NoSpace { .. })),
                }
            }
            9 => {
                // cursor: walk, then erase the next few writer entries in the segment
                let mut c = tree.cursor();
                c.walk(f);
                for _ in 0..3 {
                    let Some((r, val)) = c.next().map(|(r, v)| (r, *v)) else {
                        break;
                    };
                    if val.generation == 0 || !(wf..=wl).contains(r.start()) {
                        break;
                    }
                    assert_eq!(c.erase(), Some(r.clone()));
                    assert_eq!(model.0.remove(r.start()).map(|(l, _)| l), Some(*r.end()));
                }
            }
            10 => {
                let mut c = tree.cursor();
                c.preallocate(f, l);
                c.store_range(f, l, v).unwrap();
                model.store(f, l, v);
            }
            _ => {
                // wipe the writer's part of the segment
                tree.store_range(
                    wf,
                    wl,
                    Val {
                        first: wf,
                        last: wl,
                        generation,
                    },
                )
                .unwrap();
                tree.erase(wf);
                let keys: Vec<u64> = model.0.range(wf..=wl).map(|(&k, _)| k).collect();
                for k in keys {
                    model.0.remove(&k);
                }
            }
        }
        ops.fetch_add(1, Ordering::Relaxed);
    }
    model
}

/// What one reader pass checks. Returns the number of checks made.
fn reader(tree: &MapleTree<Val>, stop: &AtomicBool, seed: u64) -> u64 {
    let mut rng = Rng(seed);
    let fixed = fixed_ranges();
    let mut checks = 0;
    let max_rounds = if cfg!(miri) { 20 } else { u64::MAX };
    let mut round = 0;
    // At least one round however late this thread starts (as the writer).
    while round == 0 || (!stop.load(Ordering::Relaxed) && round < max_rounds) {
        round += 1;
        // 1. random loads
        for _ in 0..64 {
            let i = if rng.below(8) == 0 {
                FAR + rng.below(FAR_COUNT * 16)
            } else {
                rng.below(SEGMENTS * SEG)
            };
            match tree.load(i) {
                Some(e) => {
                    assert!(e.range().contains(&i), "load({i}) gave {:?}", e.range());
                    check_entry(&e.range(), e.value());
                }
                None => assert!(!is_fixed_index(i), "load({i}) lost a fixed entry"),
            }
            if let Some(fr) = fixed_containing(i) {
                let p = tree.prev(*fr.end()).expect("prev lost a fixed entry");
                assert_eq!(p.range(), fr);
                let f = tree.find(*fr.start()).expect("find lost a fixed entry");
                assert_eq!(f.range(), fr);
            }
            checks += 1;
        }
        // 2. a read view: each pass is ordered, disjoint and complete for the
        //    entries that never change. Writes may land between passes (the
        //    view is an RCU read-side section, not an isolated snapshot),
        //    so the passes are checked against the contract, not each other.
        let snap = tree.reader();
        let check_pass = |pass: &[(RangeInclusive<u64>, Val)], what: &str| {
            let mut fixed_seen = 0;
            for w in pass.windows(2) {
                assert!(
                    *w[1].0.start() > *w[0].0.end(),
                    "{what}: not increasing / overlapping at {:?} then {:?}",
                    w[0].0,
                    w[1].0
                );
            }
            for (r, v) in pass {
                check_entry(r, v);
                if v.generation == 0 {
                    fixed_seen += 1;
                }
            }
            assert_eq!(fixed_seen, fixed.len(), "{what} missed fixed entries");
        };
        let all: Vec<(RangeInclusive<u64>, Val)> = snap.iter().map(|(r, v)| (r, *v)).collect();
        check_pass(&all, "forward iteration");
        // The same pass consumed by `fold`, which scans whole leaves and takes
        // the leaves after the first from their parent's slots while the
        // writer swaps leaves under it; and by the tree's own iterator.
        let folded = snap.iter().fold(Vec::new(), |mut acc, (r, v)| {
            acc.push((r, *v));
            acc
        });
        check_pass(&folded, "folded iteration");
        let mut entries = Vec::new();
        tree.iter().for_each(|(r, v)| entries.push((r, *v)));
        check_pass(&entries, "folded tree.iter()");
        let mut back: Vec<(RangeInclusive<u64>, Val)> =
            snap.iter().rev().map(|(r, v)| (r, *v)).collect();
        back.reverse();
        check_pass(&back, "reverse iteration");
        // 3. gap search in the view: inside the window, and clear of every
        //    entry that never changes (the writer may fill it right after).
        for _ in 0..4 {
            let seg = rng.below(SEGMENTS) * SEG;
            let (min, max) = (seg + rng.below(SEG / 2), seg + SEG / 2 + rng.below(SEG / 2));
            let size = 1 + rng.below(24);
            for s in [
                snap.empty_area(min, max, size),
                snap.empty_area_rev(min, max, size),
            ]
            .into_iter()
            .flatten()
            {
                assert!(
                    s >= min && s + (size - 1) <= max,
                    "gap [{s}, +{size}) outside [{min}, {max}]"
                );
                for f in &fixed {
                    assert!(
                        s + (size - 1) < *f.start() || s > *f.end(),
                        "gap [{s}, +{size}) overlaps fixed {f:?}"
                    );
                }
            }
            checks += 2;
        }
        // a range read is ordered, stays in its bounds and holds every fixed
        // entry of the segment
        let seg = rng.below(SEGMENTS) * SEG;
        let part: Vec<(RangeInclusive<u64>, Val)> = snap
            .range(seg, seg + SEG - 1)
            .map(|(r, v)| (r, *v))
            .collect();
        for w in part.windows(2) {
            assert!(*w[1].0.start() > *w[0].0.end(), "range read not increasing");
        }
        for (r, _) in &part {
            assert!(
                *r.start() < seg + SEG && *r.end() >= seg,
                "range read out of bounds: {r:?}"
            );
        }
        let fixed_in_seg = fixed
            .iter()
            .filter(|f| *f.start() >= seg && *f.end() < seg + SEG)
            .count();
        assert_eq!(
            part.iter().filter(|(_, v)| v.generation == 0).count(),
            fixed_in_seg,
            "range read missed fixed entries"
        );
        drop(snap);
        // 4. a walk with find() outside any snapshot: moves on, sees every fixed entry
        let mut i = 0u64;
        let mut fixed_seen = 0;
        let mut last_end: Option<u64> = None;
        while let Some(e) = tree.find(i) {
            // (an entry stored meanwhile may start before i: only its end must move on)
            assert!(e.last() >= i, "find({i}) gave {:?}", e.range());
            if let Some(p) = last_end {
                assert!(e.last() > p, "find walk went backwards");
            }
            check_entry(&e.range(), e.value());
            if e.value().generation == 0 {
                fixed_seen += 1;
            }
            last_end = Some(e.last());
            match e.last().checked_add(1) {
                Some(n) => i = n,
                None => break,
            }
        }
        assert_eq!(
            fixed_seen,
            fixed.len(),
            "a find() walk missed fixed entries"
        );
        // 5. a live gap search result is at least inside the window and not fixed
        let seg = rng.below(SEGMENTS) * SEG;
        if let Ok(s) = tree.empty_area(seg, seg + SEG - 1, 4) {
            assert!(
                s >= seg + FIXED && s + 3 < seg + SEG,
                "empty_area returned a fixed range"
            );
        }
        checks += all.len() as u64;
    }
    checks
}

#[test]
fn readers_beside_one_writer() {
    let tree = Arc::new(MapleTree::new());
    for r in fixed_ranges() {
        tree.insert_range(
            *r.start(),
            *r.end(),
            Val {
                first: *r.start(),
                last: *r.end(),
                generation: 0,
            },
        )
        .unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..READERS)
        .map(|k| {
            let (tree, stop) = (tree.clone(), stop.clone());
            std::thread::spawn(move || reader(&tree, &stop, 1000 + k as u64))
        })
        .collect();
    let w = {
        let (tree, stop, ops) = (tree.clone(), stop.clone(), ops.clone());
        std::thread::spawn(move || writer(&tree, &stop, &ops, 7))
    };
    let start = Instant::now();
    let limit = duration();
    while start.elapsed() < limit && !w.is_finished() && !readers.iter().any(|r| r.is_finished()) {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    let model = w.join().expect("writer failed");
    let checks: Vec<u64> = readers
        .into_iter()
        .map(|r| r.join().expect("reader failed"))
        .collect();
    let ops = ops.load(Ordering::Relaxed);
    eprintln!(
        "stress: {ops} writes, reader checks {checks:?} in {:?}",
        start.elapsed()
    );
    assert!(ops > 0 && checks.iter().all(|&c| c > 0), "no work was done");
    // the final tree is exactly what the writer's model says
    let got: Vec<(u64, u64, Val)> = tree
        .reader()
        .iter()
        .map(|(r, v)| (*r.start(), *r.end(), *v))
        .collect();
    let want: Vec<(u64, u64, Val)> = model.0.iter().map(|(&f, &(l, v))| (f, l, v)).collect();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "final tree differs from the writer's model");
    assert_eq!(tree.len(), want.len());
}

/// Readers on a tree whose writer keeps replacing the same few entries (so the
/// same nodes are copied and retired over and over): a load returns an entry
/// of one layout or the other (possibly trimmed by the store in progress),
/// and a snapshot always covers the hot range exactly.
#[test]
fn hot_spot_loads_see_old_or_new() {
    let tree = Arc::new(MapleTree::new());
    let stop = Arc::new(AtomicBool::new(false));
    // entries [0,9] [10,19] ... [150,159]; the writer alternates two layouts
    let layout_a: Vec<(u64, u64)> = (0..16).map(|i| (i * 10, i * 10 + 9)).collect();
    let layout_b: Vec<(u64, u64)> = (0..32).map(|i| (i * 5, i * 5 + 4)).collect();
    for &(f, l) in &layout_a {
        tree.store_range(
            f,
            l,
            Val {
                first: f,
                last: l,
                generation: 1,
            },
        )
        .unwrap();
    }
    let readers: Vec<_> = (0..2)
        .map(|k| {
            let (tree, stop) = (tree.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(k);
                let mut n = 0u64;
                let max = if cfg!(miri) { 200 } else { u64::MAX };
                while !stop.load(Ordering::Relaxed) && n < max {
                    let i = rng.below(160);
                    let e = tree.load(i).expect("the hot range is always fully covered");
                    let v = *e.value();
                    assert!(
                        v.first <= e.first() && e.last() <= v.last,
                        "load({i}) gave {:?} holding a value for {:?}",
                        e.range(),
                        v.first..=v.last
                    );
                    assert!(e.range().contains(&i));
                    let w = if v.generation % 2 == 1 { 10 } else { 5 };
                    assert_eq!(v.last - v.first + 1, w, "entry from neither layout");
                    let snap = tree.reader();
                    let widths: Vec<u64> =
                        snap.iter().map(|(r, _)| r.end() - r.start() + 1).collect();
                    assert_eq!(
                        widths.iter().sum::<u64>(),
                        160,
                        "snapshot does not cover the hot range"
                    );
                    n += 1;
                }
                n
            })
        })
        .collect();
    let start = Instant::now();
    let limit = duration().min(Duration::from_secs(1));
    let mut generation = 1;
    let rounds = if cfg!(miri) { 10 } else { u64::MAX };
    let mut r = 0;
    while start.elapsed() < limit && r < rounds {
        r += 1;
        generation += 1;
        let layout = if generation % 2 == 1 {
            &layout_a
        } else {
            &layout_b
        };
        for &(f, l) in layout {
            tree.store_range(
                f,
                l,
                Val {
                    first: f,
                    last: l,
                    generation,
                },
            )
            .unwrap();
        }
        // after a whole layout is written, a read sees only that layout
        let e = tree.load(0).unwrap();
        assert_eq!(e.value().generation, generation);
    }
    stop.store(true, Ordering::Relaxed);
    for h in readers {
        assert!(h.join().expect("reader failed") > 0);
    }
}

/// A value that checks itself. A box reused while a reader still held it
/// would be rewritten (by the next value stored, or by a free list's link
/// in its first word) and fail the check or change under the reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sealed {
    word: u64,
    check: u64,
}

impl Sealed {
    fn new(word: u64) -> Sealed {
        Sealed { word, check: !word }
    }

    fn valid(&self) -> bool {
        self.check == !self.word
    }
}

/// Exact overwrites retire a box per write, which goes back to the
/// writer's pool after its grace period (often run by a reader). An entry
/// held across many of the writer's overwrites must keep its value intact:
/// a box is reused only once no reader can hold it.
#[test]
fn held_entries_outlive_the_recycling_of_their_boxes() {
    const KEYS: u64 = 8;
    let tree = Arc::new(MapleTree::new());
    for k in 0..KEYS {
        tree.store_range(k * 10, k * 10 + 4, Sealed::new(k))
            .unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|seed| {
            let (tree, stop) = (tree.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut rng = Rng(seed + 7);
                let (mut holds, mut seen_new) = (0u64, 0u64);
                let max = if cfg!(miri) { 30 } else { u64::MAX };
                while !stop.load(Ordering::Relaxed) && holds < max {
                    let k = rng.below(KEYS);
                    let held = tree.get(k * 10).expect("every key is always stored");
                    let v = *held;
                    assert!(v.valid(), "torn value {v:?}");
                    // Other loads (each pins and unpins, and so collects,
                    // running the writer's deferred drops here) while the
                    // held entry lives.
                    for _ in 0..if cfg!(miri) { 3 } else { 64 } {
                        let other = tree.get(rng.below(KEYS) * 10).unwrap();
                        assert!(other.valid(), "torn value {:?}", *other);
                        if other.word >= KEYS {
                            seen_new += 1;
                        }
                    }
                    assert_eq!(*held, v, "a held entry's value changed");
                    holds += 1;
                }
                (holds, seen_new)
            })
        })
        .collect();
    let start = Instant::now();
    let limit = duration().min(Duration::from_secs(1));
    let rounds = if cfg!(miri) { 200 } else { u64::MAX };
    let mut word = KEYS;
    // Under Miri a fixed number of writes, whatever the (slow) clock says.
    while (cfg!(miri) || start.elapsed() < limit) && word - KEYS < rounds {
        let k = word % KEYS;
        tree.store_range(k * 10, k * 10 + 4, Sealed::new(word))
            .unwrap();
        word += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        let (holds, seen_new) = r.join().unwrap();
        assert!(holds > 0, "a reader held no entry");
        if !cfg!(miri) {
            assert!(seen_new > 0, "a reader never saw the writer's values");
        }
    }
    assert!(word - KEYS > 100, "the writer barely ran");
    for k in 0..KEYS {
        assert!(tree.get(k * 10).unwrap().valid());
    }
}
