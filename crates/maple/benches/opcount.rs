//! A driver for instruction counts per operation (`scripts/callgrind-maple.sh`)
//! and for a wall-clock scaling check of independent trees.
//!
//! `opcount <op> <n> [iters]` builds a tree of `n` entries `[10i, 10i + 4]`
//! (value `i`; a free gap of 5 after each), then runs `iters` operations
//! inside a function named `measure_<op>`, which callgrind counts alone
//! (`--toggle-collect='*measure_*'`). Keys come from a fixed-seed splitmix64,
//! so every run does the same work.
//!
//! `opcount threads <k> <ops>`: `k` threads, each overwriting random entries
//! of its own tree of 10^5 entries, `ops` writes per thread; prints writes/s
//! (wall clock: only meaningful on an idle machine, or A/B in one run).
//! Values are boxed `u64`s (an allocation and a deferred free per write);
//! `threads_inline` stores `XValue`s in the slot word instead, so only the
//! tree's own memory layer is in the loop. `opcount control <k> <ops>` is
//! the machine's own scaling: each thread updates a private 4 MB array.
//!
//! `opcount read_beside[_inline] <n> <ms>`: one reader's random-hit loads on
//! a tree of `n` entries for `ms` milliseconds, alone and then beside a
//! writer overwriting random entries; boxed `u64` values or `XValue`s in
//! the slot word.

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use aspace_maple::{Inline, MapleTree, Repr, XValue};

/// splitmix64
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn first(i: u64) -> u64 {
    10 * i
}
fn last(i: u64) -> u64 {
    10 * i + 4
}

fn build(n: u64) -> MapleTree<u64> {
    let mut t = MapleTree::new();
    {
        let mut c = t.cursor_mut();
        for i in 0..n {
            c.store_range(first(i), last(i), i).unwrap();
        }
    }
    t
}

fn build_arc<S: Repr<Arc<u64>>>(n: u64) -> MapleTree<Arc<u64>, S> {
    let mut t = MapleTree::default();
    {
        let mut c = t.cursor_mut();
        for i in 0..n {
            c.store_range(first(i), last(i), Arc::new(i)).unwrap();
        }
    }
    t
}

fn keys(n: u64, iters: u64) -> Vec<u64> {
    let mut r = Rng(0x5eed);
    (0..iters).map(|_| r.below(n)).collect()
}

#[inline(never)]
fn measure_load(t: &MapleTree<u64>, ks: &[u64]) {
    for &k in ks {
        black_box(t.load(first(k) + 2).map(|e| *e));
    }
}

#[inline(never)]
fn measure_reader_load(t: &MapleTree<u64>, ks: &[u64]) {
    let r = t.reader();
    for &k in ks {
        black_box(r.load(first(k) + 2).map(|(_, v)| *v));
    }
}

#[inline(never)]
fn measure_overwrite_shared(t: &MapleTree<u64>, ks: &[u64]) {
    for &k in ks {
        t.store_range(first(k), last(k), k + 1).unwrap();
    }
}

fn build_xvalue(n: u64) -> MapleTree<XValue, Inline> {
    let mut t = MapleTree::new_inline();
    {
        let mut c = t.cursor_mut();
        for i in 0..n {
            c.store_range(first(i), last(i), xv(i)).unwrap();
        }
    }
    t
}

fn xv(i: u64) -> XValue {
    XValue::new(i as usize).expect("small keys")
}

/// Integers in the slot word (`Inline`): the store allocates nothing, as
/// the kernel's store of an existing pointer.
#[inline(never)]
fn measure_overwrite_shared_xvalue(t: &MapleTree<XValue, Inline>, ks: &[u64]) {
    for &k in ks {
        t.store_range(first(k), last(k), xv(k + 1)).unwrap();
    }
}

#[inline(never)]
fn measure_overwrite_mut_xvalue(t: &mut MapleTree<XValue, Inline>, ks: &[u64]) {
    let mut c = t.cursor_mut();
    for &k in ks {
        c.store_range(first(k), last(k), xv(k + 1)).unwrap();
    }
}

/// `load` of an inline `Arc` (as `mm` reads its VMAs).
#[inline(never)]
fn measure_load_arc_inline(t: &MapleTree<Arc<u64>, Inline>, ks: &[u64]) {
    for &k in ks {
        black_box(t.load(first(k) + 2).map(|e| **e));
    }
}

#[inline(never)]
fn measure_overwrite_mut(t: &mut MapleTree<u64>, ks: &[u64]) {
    let mut c = t.cursor_mut();
    for &k in ks {
        c.store_range(first(k), last(k), k + 1).unwrap();
    }
}

#[inline(never)]
fn measure_split_restore_mut(t: &mut MapleTree<u64>, ks: &[u64]) {
    let mut c = t.cursor_mut();
    for &k in ks {
        c.store_range(first(k) + 2, first(k) + 2, 0).unwrap();
        c.store_range(first(k), last(k), k).unwrap();
    }
}

#[inline(never)]
fn measure_split_restore_shared(t: &MapleTree<u64>, ks: &[u64]) {
    for &k in ks {
        t.store_range(first(k) + 2, first(k) + 2, 0).unwrap();
        t.store_range(first(k), last(k), k).unwrap();
    }
}

#[inline(never)]
fn measure_insert(t: &MapleTree<u64>, ks: &[u64]) {
    // Into the free gap after each entry: [10k + 5, 10k + 9].
    for &k in ks {
        let _ = black_box(t.insert_range(first(k) + 5, first(k) + 9, k));
    }
}

/// A short range query through `tree.range` (the three entries that meet
/// `[10k, 10k + 25]`), stepped by a `for` loop: what an iteration costs
/// to set up and tear down beside its steps.
#[inline(never)]
fn measure_range_short(t: &MapleTree<u64>, ks: &[u64]) {
    for &k in ks {
        let mut acc = 0u64;
        for (r, v) in t.range(first(k)..=first(k) + 25) {
            acc = acc.wrapping_add(r.start() ^ *v);
        }
        black_box(acc);
    }
}

#[inline(never)]
fn measure_erase(t: &MapleTree<u64>, ks: &[u64]) {
    for &k in ks {
        black_box(t.erase(first(k)).is_some());
    }
}

#[inline(never)]
fn measure_empty_area(t: &MapleTree<u64>, ks: &[u64], rev: bool) {
    for &k in ks {
        let r = if rev {
            t.empty_area_rev(0, first(k) + 9, 5)
        } else {
            t.empty_area(first(k), u64::MAX, 5)
        };
        black_box(r.ok());
    }
}

#[inline(never)]
fn measure_iter(t: &MapleTree<u64>, rounds: u64) {
    let r = t.reader();
    for _ in 0..rounds {
        let mut s = 0u64;
        for (_, v) in r.iter() {
            s = s.wrapping_add(*v);
        }
        black_box(s);
    }
}

/// As `measure_iter`, consumed by a fold (`sum`), which scans a leaf at a
/// time, where a `for` loop steps with `next`.
#[inline(never)]
fn measure_iter_fold(t: &MapleTree<u64>, rounds: u64) {
    let r = t.reader();
    for _ in 0..rounds {
        black_box(r.iter().map(|(_, v)| *v).fold(0u64, u64::wrapping_add));
    }
}

/// The iteration rows of the README's table: a `for` loop and a fold over
/// every entry, summing `start ^ value` (the criterion groups' work), with
/// boxed `u64` values and with `XValue`s in the slot word, through a
/// `Reader` and through `tree.iter()`; and the same loops over rangemap and
/// `BTreeMap` as references. `measure_` names keep callgrind's count to the
/// loops (the structures are built outside).
mod scans {
    use super::*;
    use rangemap::RangeInclusiveMap;
    use std::collections::BTreeMap;

    pub fn boxed(n: u64) -> MapleTree<u64> {
        build(n)
    }
    pub fn inline(n: u64) -> MapleTree<XValue, Inline> {
        build_xvalue(n)
    }
    pub fn rangemap(n: u64) -> RangeInclusiveMap<u64, u64> {
        (0..n).map(|i| (first(i)..=last(i), i)).collect()
    }
    pub fn btreemap(n: u64) -> BTreeMap<u64, (u64, u64)> {
        (0..n).map(|i| (first(i), (last(i), i))).collect()
    }

    #[inline(never)]
    pub fn measure_for_boxed(t: &MapleTree<u64>, rounds: u64) {
        for _ in 0..rounds {
            let mut acc = 0u64;
            for (r, v) in t.reader().iter() {
                acc = acc.wrapping_add(r.start() ^ *v);
            }
            black_box(acc);
        }
    }
    #[inline(never)]
    pub fn measure_fold_boxed(t: &MapleTree<u64>, rounds: u64) {
        for _ in 0..rounds {
            black_box(
                t.reader()
                    .iter()
                    .map(|(r, v)| r.start() ^ *v)
                    .fold(0, u64::wrapping_add),
            );
        }
    }
    #[inline(never)]
    pub fn measure_for_inline(t: &MapleTree<XValue, Inline>, rounds: u64) {
        for _ in 0..rounds {
            let mut acc = 0u64;
            for (r, v) in t.reader().iter() {
                acc = acc.wrapping_add(r.start() ^ v.get() as u64);
            }
            black_box(acc);
        }
    }
    #[inline(never)]
    pub fn measure_fold_inline(t: &MapleTree<XValue, Inline>, rounds: u64) {
        for _ in 0..rounds {
            black_box(
                t.reader()
                    .iter()
                    .map(|(r, v)| r.start() ^ v.get() as u64)
                    .fold(0, u64::wrapping_add),
            );
        }
    }
    #[inline(never)]
    pub fn measure_for_entries(t: &MapleTree<u64>, rounds: u64) {
        for _ in 0..rounds {
            let mut acc = 0u64;
            for (r, v) in t.iter() {
                acc = acc.wrapping_add(r.start() ^ *v);
            }
            black_box(acc);
        }
    }
    #[inline(never)]
    pub fn measure_fold_entries(t: &MapleTree<u64>, rounds: u64) {
        for _ in 0..rounds {
            black_box(
                t.iter()
                    .map(|(r, v)| r.start() ^ *v)
                    .fold(0, u64::wrapping_add),
            );
        }
    }
    #[inline(never)]
    pub fn measure_for_entries_inline(t: &MapleTree<XValue, Inline>, rounds: u64) {
        for _ in 0..rounds {
            let mut acc = 0u64;
            for (r, v) in t.iter() {
                acc = acc.wrapping_add(r.start() ^ v.get() as u64);
            }
            black_box(acc);
        }
    }
    #[inline(never)]
    pub fn measure_fold_entries_inline(t: &MapleTree<XValue, Inline>, rounds: u64) {
        for _ in 0..rounds {
            black_box(
                t.iter()
                    .map(|(r, v)| r.start() ^ v.get() as u64)
                    .fold(0, u64::wrapping_add),
            );
        }
    }
    #[inline(never)]
    pub fn measure_for_rangemap(m: &RangeInclusiveMap<u64, u64>, rounds: u64) {
        for _ in 0..rounds {
            let mut acc = 0u64;
            for (r, v) in m.iter() {
                acc = acc.wrapping_add(r.start() ^ v);
            }
            black_box(acc);
        }
    }
    #[inline(never)]
    pub fn measure_fold_rangemap(m: &RangeInclusiveMap<u64, u64>, rounds: u64) {
        for _ in 0..rounds {
            black_box(
                m.iter()
                    .map(|(r, v)| r.start() ^ v)
                    .fold(0, u64::wrapping_add),
            );
        }
    }
    #[inline(never)]
    pub fn measure_for_btreemap(m: &BTreeMap<u64, (u64, u64)>, rounds: u64) {
        for _ in 0..rounds {
            let mut acc = 0u64;
            for (f, (_, v)) in m.iter() {
                acc = acc.wrapping_add(f ^ v);
            }
            black_box(acc);
        }
    }
    #[inline(never)]
    pub fn measure_fold_btreemap(m: &BTreeMap<u64, (u64, u64)>, rounds: u64) {
        for _ in 0..rounds {
            black_box(m.iter().map(|(f, (_, v))| f ^ v).fold(0, u64::wrapping_add));
        }
    }
}

/// The copies are dropped by the caller, outside the count.
#[inline(never)]
fn measure_dup<T: Clone + Send + Sync + 'static, S: Repr<T>>(
    t: &MapleTree<T, S>,
    rounds: u64,
) -> Vec<MapleTree<T, S>> {
    (0..rounds).map(|_| black_box(t.dup())).collect()
}

/// Which values the scaling check stores: boxed `u64` (an allocation per
/// write and a deferred free, so the allocator is in the loop) or
/// `XValue`s in the slot word (the tree's own machinery alone).
#[derive(Clone, Copy)]
enum Values {
    Boxed,
    Inline,
}

/// The machine's own scaling, as a control for `threads`: `k` threads, each
/// updating random words of a private 4 MB array (the size of a tree of
/// 10^5 entries), `ops` updates each; prints updates/s in all.
fn control(k: usize, ops: u64) {
    let go = Arc::new(Barrier::new(k));
    let hs: Vec<_> = (0..k)
        .map(|j| {
            let go = Arc::clone(&go);
            std::thread::spawn(move || {
                let mut words = vec![0u64; 4 << 17];
                let mut r = Rng(j as u64 + 1);
                start_together(&go);
                let t0 = Instant::now();
                for i in 0..ops {
                    let w = r.below(words.len() as u64) as usize;
                    words[w] = words[w].wrapping_add(i);
                }
                black_box(&words);
                t0.elapsed()
            })
        })
        .collect();
    let total: f64 = hs
        .into_iter()
        .map(|h| ops as f64 / h.join().unwrap().as_secs_f64())
        .sum();
    println!("control {k}: {total:.0} updates/s in all");
}

/// One reader's random-hit loads on a tree of `n` entries for `ms`
/// milliseconds, alone and then beside a writer overwriting random entries
/// without pause; prints ns per read for both.
fn read_beside(n: u64, ms: u64, values: Values) {
    fn run<T: Clone + Send + Sync + 'static, S: Repr<T>>(
        t: Arc<MapleTree<T, S>>,
        n: u64,
        ms: u64,
        writer: bool,
        mk: fn(u64) -> T,
        read: fn(&MapleTree<T, S>, u64) -> u64,
    ) -> f64 {
        use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
        let stop = Arc::new(AtomicBool::new(false));
        let w = writer.then(|| {
            let (t, stop) = (t.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut r = Rng(99);
                // Relaxed: a stop flag; nothing is published through it.
                while !stop.load(Relaxed) {
                    for _ in 0..64 {
                        let i = r.below(n);
                        t.store_range(first(i), last(i), mk(i)).unwrap();
                    }
                }
            })
        });
        let mut r = Rng(7);
        let keys: Vec<u64> = (0..4096).map(|_| first(r.below(n)) + 2).collect();
        let (mut reads, mut sum) = (0u64, 0u64);
        let t0 = Instant::now();
        while t0.elapsed().as_millis() < ms as u128 {
            for &k in &keys {
                sum = sum.wrapping_add(read(&t, k));
            }
            reads += keys.len() as u64;
        }
        let ns = t0.elapsed().as_nanos() as f64 / reads as f64;
        black_box(sum);
        stop.store(true, Relaxed);
        if let Some(w) = w {
            w.join().unwrap();
        }
        ns
    }
    let (alone, beside) = match values {
        Values::Boxed => {
            let t = Arc::new(build(n));
            let rd: fn(&MapleTree<u64>, u64) -> u64 = |t, k| *t.load(k).unwrap();
            (
                run(t.clone(), n, ms, false, |i| i, rd),
                run(t, n, ms, true, |i| i, rd),
            )
        }
        Values::Inline => {
            let t = Arc::new(build_xvalue(n));
            let rd: fn(&MapleTree<XValue, Inline>, u64) -> u64 =
                |t, k| t.load(k).unwrap().get() as u64;
            (
                run(t.clone(), n, ms, false, xv, rd),
                run(t, n, ms, true, xv, rd),
            )
        }
    };
    println!(
        "read_beside n={n}: alone {alone:.1} ns, beside a writer {beside:.1} ns ({:.2}x)",
        alone / beside
    );
}

/// Waits until every thread of the run has reached `start` (so that no
/// thread's timed loop runs while another is still setting up, alone on
/// the machine), then until the wall-clock time in `OPCOUNT_START_AT_MS`
/// (milliseconds since the Unix epoch), if set: `scripts/scaling-maple.sh`
/// gives two processes the same time, so that their loops begin together
/// as two threads' do at the barrier.
fn start_together(start: &Barrier) {
    start.wait();
    let Some(at) = std::env::var("OPCOUNT_START_AT_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return;
    };
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(at);
    if let Ok(left) = at.duration_since(std::time::SystemTime::now()) {
        std::thread::sleep(left);
    }
}

/// Overwrites `ops` random entries of `t` (exact bounds, value `mk(i)`)
/// once the run's threads start together ([`start_together`]); returns the
/// loop's time.
fn timed_overwrites<T: Clone + Send + Sync + 'static, S: Repr<T>>(
    t: &MapleTree<T, S>,
    ops: u64,
    mut r: Rng,
    mk: fn(u64) -> T,
    start: &Barrier,
) -> std::time::Duration {
    let n = t.len() as u64;
    start_together(start);
    let t0 = Instant::now();
    for _ in 0..ops {
        let i = r.below(n);
        t.store_range(first(i), last(i), mk(i)).unwrap();
    }
    t0.elapsed()
}

fn threads(k: usize, ops: u64, values: Values) {
    let start = Instant::now();
    let go = Arc::new(Barrier::new(k));
    let hs: Vec<_> = (0..k)
        .map(|j| {
            let go = Arc::clone(&go);
            std::thread::spawn(move || {
                let r = Rng(j as u64 + 1);
                match values {
                    Values::Boxed => timed_overwrites(&build(100_000), ops, r, |i| i, &go),
                    Values::Inline => timed_overwrites(&build_xvalue(100_000), ops, r, xv, &go),
                }
            })
        })
        .collect();
    let per: Vec<f64> = hs
        .into_iter()
        .map(|h| ops as f64 / h.join().unwrap().as_secs_f64())
        .collect();
    let total: f64 = per.iter().sum();
    println!(
        "threads {k}: {:.0} writes/s in all ({:?} per thread), wall {:?}",
        total,
        per.iter().map(|x| *x as u64).collect::<Vec<_>>(),
        start.elapsed()
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.is_empty() {
        eprintln!("usage: opcount <op> <n> [iters] | opcount threads[_inline]|control <k> <ops> | opcount read_beside[_inline] <n> <ms>");
        return;
    }
    let op = args[0].as_str();
    let n: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let iters: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    match op {
        "threads" => return threads(n as usize, iters, Values::Boxed),
        "threads_inline" => return threads(n as usize, iters, Values::Inline),
        "control" => return control(n as usize, iters),
        "read_beside" => return read_beside(n, iters, Values::Boxed),
        "read_beside_inline" => return read_beside(n, iters, Values::Inline),
        _ => {}
    }
    let ks = keys(n, iters);
    match op {
        "load" => measure_load(&build(n), &ks),
        "range_short" => measure_range_short(&build(n), &ks),
        "reader_load" => measure_reader_load(&build(n), &ks),
        "overwrite_shared" => measure_overwrite_shared(&build(n), &ks),
        "overwrite_mut" => measure_overwrite_mut(&mut build(n), &ks),
        "overwrite_shared_xvalue" => measure_overwrite_shared_xvalue(&build_xvalue(n), &ks),
        "overwrite_mut_xvalue" => measure_overwrite_mut_xvalue(&mut build_xvalue(n), &ks),
        "load_arc_inline" => measure_load_arc_inline(&build_arc::<Inline>(n), &ks),
        "split_restore_mut" => measure_split_restore_mut(&mut build(n), &ks),
        "split_restore_shared" => measure_split_restore_shared(&build(n), &ks),
        "insert" => {
            // Distinct gaps, so every insert succeeds.
            let mut r = Rng(0x5eed);
            let mut ks: Vec<u64> = (0..n).collect();
            for i in (1..ks.len()).rev() {
                ks.swap(i, r.below(i as u64 + 1) as usize);
            }
            ks.truncate(iters as usize);
            measure_insert(&build(n), &ks)
        }
        "erase" => {
            let mut r = Rng(0x5eed);
            let mut ks: Vec<u64> = (0..n).collect();
            for i in (1..ks.len()).rev() {
                ks.swap(i, r.below(i as u64 + 1) as usize);
            }
            ks.truncate(iters as usize);
            measure_erase(&build(n), &ks)
        }
        "empty_area" => measure_empty_area(&build(n), &ks, false),
        "empty_area_rev" => measure_empty_area(&build(n), &ks, true),
        "iter" => measure_iter(&build(n), iters),
        "iter_fold" => measure_iter_fold(&build(n), iters),
        "dup_arc" => drop(measure_dup(&build_arc::<aspace_maple::Boxed>(n), iters)),
        // Arc values in the slot word (`Inline`): dup clones each by a
        // reference count.
        "dup_arc_inline" => drop(measure_dup(&build_arc::<Inline>(n), iters)),
        "dup_u64" => drop(measure_dup(&build(n), iters)),
        "dup_xvalue" => drop(measure_dup(&build_xvalue(n), iters)),
        "for_boxed" => scans::measure_for_boxed(&scans::boxed(n), iters),
        "fold_boxed" => scans::measure_fold_boxed(&scans::boxed(n), iters),
        "for_inline" => scans::measure_for_inline(&scans::inline(n), iters),
        "fold_inline" => scans::measure_fold_inline(&scans::inline(n), iters),
        "for_entries" => scans::measure_for_entries(&scans::boxed(n), iters),
        "fold_entries" => scans::measure_fold_entries(&scans::boxed(n), iters),
        "for_entries_inline" => scans::measure_for_entries_inline(&scans::inline(n), iters),
        "fold_entries_inline" => scans::measure_fold_entries_inline(&scans::inline(n), iters),
        "for_rangemap" => scans::measure_for_rangemap(&scans::rangemap(n), iters),
        "fold_rangemap" => scans::measure_fold_rangemap(&scans::rangemap(n), iters),
        "for_btreemap" => scans::measure_for_btreemap(&scans::btreemap(n), iters),
        "fold_btreemap" => scans::measure_fold_btreemap(&scans::btreemap(n), iters),
        _ => eprintln!("unknown op {op}"),
    }
}
