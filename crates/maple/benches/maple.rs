//! The maple tree against its peers, at N = 10^3, 10^4, 10^5 and 10^6.
//!
//! Peers in every group: `rangemap::RangeInclusiveMap` (distinct values, so it
//! never coalesces) and std `BTreeMap` keyed by start (a point-key baseline);
//! for concurrent reads, `RwLock<RangeInclusiveMap>` and `scc::TreeIndex`.
//! The scan groups also run the tree with its values in the slot word
//! (`maple_inline`: `XValue`s, no box per value).
//!
//! Entries are `[10i, 10i + 4]` with value `i`, so every entry is followed by
//! a gap of 5. `ASPACE_BENCH_MAX_N` caps N (for a quick run), e.g.
//! `ASPACE_BENCH_MAX_N=10000 cargo bench -p aspace-maple --bench maple`.
//! Throughput is per element, so criterion's "thrpt" reads as operations/s.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use aspace_maple::{Inline, MapleTree, XValue};
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput};
use rangemap::RangeInclusiveMap;

const SIZES: [u64; 4] = [1_000, 10_000, 100_000, 1_000_000];
/// Operations per measured iteration for the per-operation groups.
const BATCH: u64 = 1_000;

fn sizes() -> Vec<u64> {
    let cap = std::env::var("ASPACE_BENCH_MAX_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(u64::MAX);
    SIZES.into_iter().filter(|&n| n <= cap).collect()
}

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

    fn shuffled(&mut self, n: u64) -> Vec<u64> {
        let mut v: Vec<u64> = (0..n).collect();
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
        v
    }
}

fn first(i: u64) -> u64 {
    i * 10
}

fn last(i: u64) -> u64 {
    i * 10 + 4
}

fn build_maple(n: u64) -> MapleTree<u64> {
    let mut t = MapleTree::new();
    {
        let mut c = t.cursor_mut();
        for i in 0..n {
            c.store_range(first(i), last(i), i).unwrap();
        }
    }
    t
}

fn build_rangemap(n: u64) -> RangeInclusiveMap<u64, u64> {
    let mut m = RangeInclusiveMap::new();
    for i in 0..n {
        m.insert(first(i)..=last(i), i);
    }
    m
}

/// The tree, rangemap and the point-keyed `BTreeMap`, for one N.
type Peers = (
    MapleTree<u64>,
    RangeInclusiveMap<u64, u64>,
    BTreeMap<u64, (u64, u64)>,
);

/// The three peers of a comparison group, each built on its own fresh memory.
///
/// Built together before any is measured and dropped together after: a
/// structure built into the memory another has just freed gets its nodes
/// scattered through the other's holes: iterating a rangemap of 10^5 built
/// that way took 187.6 us, built on fresh memory 139-158 us, while the tree,
/// always built first, always had fresh memory. See BENCHMARKS.md, "Peers
/// on fresh memory".
fn build_peers(n: u64) -> Peers {
    (build_maple(n), build_rangemap(n), build_btree(n))
}

/// `first -> (last, value)`
fn build_btree(n: u64) -> BTreeMap<u64, (u64, u64)> {
    (0..n).map(|i| (first(i), (last(i), i))).collect()
}

fn btree_load(m: &BTreeMap<u64, (u64, u64)>, k: u64) -> Option<u64> {
    let (_, &(l, v)) = m.range(..=k).next_back()?;
    (l >= k).then_some(v)
}

/// Random indices inside entries.
fn hit_keys(n: u64, count: u64, seed: u64) -> Vec<u64> {
    let mut rng = Rng(seed);
    (0..count)
        .map(|_| first(rng.below(n)) + rng.below(5))
        .collect()
}

fn group<'a>(
    c: &'a mut Criterion,
    name: &str,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10);
    g
}

fn bench_store(c: &mut Criterion) {
    for (name, random) in [("store_seq", false), ("store_rand", true)] {
        let mut g = group(c, name);
        for n in sizes() {
            let order: Vec<u64> = if random {
                Rng(n).shuffled(n)
            } else {
                (0..n).collect()
            };
            g.throughput(Throughput::Elements(n));
            g.bench_with_input(BenchmarkId::new("maple", n), &order, |b, order| {
                b.iter_with_large_drop(|| {
                    let t = MapleTree::new();
                    for &i in order {
                        t.store_range(first(i), last(i), i).unwrap();
                    }
                    t
                })
            });
            g.bench_with_input(
                BenchmarkId::new("maple_cursor_mut", n),
                &order,
                |b, order| {
                    b.iter_with_large_drop(|| {
                        let mut t = MapleTree::new();
                        {
                            let mut c = t.cursor_mut();
                            for &i in order {
                                c.store_range(first(i), last(i), i).unwrap();
                            }
                        }
                        t
                    })
                },
            );
            g.bench_with_input(BenchmarkId::new("rangemap", n), &order, |b, order| {
                b.iter_with_large_drop(|| {
                    let mut m = RangeInclusiveMap::new();
                    for &i in order {
                        m.insert(first(i)..=last(i), i);
                    }
                    m
                })
            });
            g.bench_with_input(BenchmarkId::new("btreemap", n), &order, |b, order| {
                b.iter_with_large_drop(|| {
                    let mut m = BTreeMap::new();
                    for &i in order {
                        m.insert(first(i), (last(i), i));
                    }
                    m
                })
            });
        }
        g.finish();
    }
}

/// Overwrites of existing entries at random (each store replaces one entry
/// and trims nothing), per operation, on a tree of N.
fn bench_overwrite(c: &mut Criterion) {
    let mut g = group(c, "store_rand_overwrite");
    for n in sizes() {
        let keys: Vec<u64> = {
            let mut r = Rng(n + 1);
            (0..BATCH).map(|_| r.below(n)).collect()
        };
        g.throughput(Throughput::Elements(BATCH));
        // Every peer built before any is measured (see `build_peers`).
        let (t, mut m, mut bt) = build_peers(n);
        let mut t_mut = build_maple(n);
        g.bench_function(BenchmarkId::new("maple", n), |b| {
            b.iter(|| {
                for &i in &keys {
                    t.store_range(first(i), last(i), i + 1).unwrap();
                }
            })
        });
        g.bench_function(BenchmarkId::new("maple_cursor_mut", n), |b| {
            b.iter(|| {
                let mut c = t_mut.cursor_mut();
                for &i in &keys {
                    c.store_range(first(i), last(i), i + 1).unwrap();
                }
            })
        });
        g.bench_function(BenchmarkId::new("rangemap", n), |b| {
            b.iter(|| {
                for &i in &keys {
                    // alternate values so that the map really changes
                    m.insert(first(i)..=last(i), i + 1);
                }
            })
        });
        g.bench_function(BenchmarkId::new("btreemap", n), |b| {
            b.iter(|| {
                for &i in &keys {
                    bt.insert(first(i), (last(i), i + 1));
                }
            })
        });
    }
    g.finish();
}

fn bench_load(c: &mut Criterion) {
    load_group(c, "load", |n| hit_keys(n, BATCH, n + 2));
    // The same 1,000 keys (so the same cache-hot paths), 2^16 lookups a pass
    // drawn from them at random. Repeated in one fixed order, as in `load`,
    // the 1,000 lookups form a sequence short enough for the branch
    // predictor to learn: a search that branches on every key comparison
    // (rangemap's, `BTreeMap`'s) then predicts every branch, which no real
    // stream of lookups allows. Drawn at random, the paths are as hot and
    // the branches are not learnable; both groups are reported.
    load_group(c, "load_hot_drawn", |n| {
        let hot = hit_keys(n, BATCH, n + 2);
        let mut rng = Rng(n + 5);
        (0..COLD_BATCH)
            .map(|_| hot[rng.below(BATCH) as usize])
            .collect()
    });
    // 2^16 random keys a pass: at 10^5 and 10^6 entries the paths no
    // longer stay in cache between passes, as in the kernel's own
    // random-hit load figures (367 ns at 10^6).
    load_group(c, "load_cold", |n| hit_keys(n, COLD_BATCH, n + 2));
}

/// Keys a pass of the cold-cache load group.
const COLD_BATCH: u64 = 1 << 16;

fn load_group(c: &mut Criterion, name: &str, keys_for: impl Fn(u64) -> Vec<u64>) {
    let mut g = group(c, name);
    for n in sizes() {
        let keys = keys_for(n);
        g.throughput(Throughput::Elements(keys.len() as u64));
        let (t, m, bt) = build_peers(n);
        g.bench_function(BenchmarkId::new("maple", n), |b| {
            b.iter(|| {
                let mut sum = 0;
                for &k in &keys {
                    sum += *t.load(k).unwrap();
                }
                sum
            })
        });
        g.bench_function(BenchmarkId::new("maple_reader", n), |b| {
            b.iter(|| {
                let s = t.reader();
                let mut sum = 0;
                for &k in &keys {
                    sum += *s.load(k).unwrap().1;
                }
                sum
            })
        });
        g.bench_function(BenchmarkId::new("rangemap", n), |b| {
            b.iter(|| {
                let mut sum = 0;
                for &k in &keys {
                    sum += *m.get(&k).unwrap();
                }
                sum
            })
        });
        g.bench_function(BenchmarkId::new("btreemap", n), |b| {
            b.iter(|| {
                let mut sum = 0;
                for &k in &keys {
                    sum += btree_load(&bt, k).unwrap();
                }
                sum
            })
        });
    }
    g.finish();
}

fn bench_erase(c: &mut Criterion) {
    let mut g = group(c, "erase_rand");
    for n in sizes() {
        let count = BATCH.min(n);
        let victims: Vec<u64> = Rng(n + 3)
            .shuffled(n)
            .into_iter()
            .take(count as usize)
            .collect();
        g.throughput(Throughput::Elements(count));
        let base = build_maple(n);
        g.bench_function(BenchmarkId::new("maple", n), |b| {
            b.iter_batched(
                || base.dup(),
                |t| {
                    for &i in &victims {
                        black_box(t.erase(first(i) + 2).unwrap().first());
                    }
                    t
                },
                BatchSize::PerIteration,
            )
        });
        g.bench_function(BenchmarkId::new("maple_remove", n), |b| {
            b.iter_batched(
                || base.dup(),
                |mut t| {
                    for &i in &victims {
                        black_box(t.take(first(i) + 2).unwrap());
                    }
                    t
                },
                BatchSize::PerIteration,
            )
        });
        drop(base);
        let base = build_rangemap(n);
        g.bench_function(BenchmarkId::new("rangemap", n), |b| {
            b.iter_batched(
                || base.clone(),
                |mut m| {
                    for &i in &victims {
                        // find the entry containing the index, then remove it whole
                        let r = m.get_key_value(&(first(i) + 2)).unwrap().0.clone();
                        m.remove(r);
                    }
                    m
                },
                BatchSize::PerIteration,
            )
        });
        drop(base);
        let base = build_btree(n);
        g.bench_function(BenchmarkId::new("btreemap", n), |b| {
            b.iter_batched(
                || base.clone(),
                |mut m| {
                    for &i in &victims {
                        let k = first(i) + 2;
                        let (&f, _) = m.range(..=k).next_back().unwrap();
                        black_box(m.remove(&f));
                    }
                    m
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

/// The peers of a scan, and the tree again with its values in the slot
/// word (`XValue`s, as the kernel stores `xa_mk_value` integers): the same
/// entries, read without the box that `MapleTree<u64>` puts each value in.
type ScanPeers = (Peers, MapleTree<XValue, Inline>);

/// One whole-structure scan of each peer, named as in the group.
type Scan = (&'static str, fn(&ScanPeers) -> u64);

fn build_maple_inline(n: u64) -> MapleTree<XValue, Inline> {
    let mut t = MapleTree::new_inline();
    {
        let mut c = t.cursor_mut();
        for i in 0..n {
            let v = XValue::new(i as usize).expect("bench sizes fit in 63 bits");
            c.store_range(first(i), last(i), v).unwrap();
        }
    }
    t
}

/// A group that runs each of `scans` over every peer of each size, built
/// fresh for the size (`build_peers`, then the inline tree), one element
/// per entry.
fn scan_group(c: &mut Criterion, name: &str, scans: &[Scan]) {
    let mut g = group(c, name);
    for n in sizes() {
        g.throughput(Throughput::Elements(n));
        let peers = (build_peers(n), build_maple_inline(n));
        for &(id, scan) in scans {
            g.bench_function(BenchmarkId::new(id, n), |b| b.iter(|| scan(&peers)));
        }
    }
    g.finish();
}

fn bench_iter(c: &mut Criterion) {
    // Consumed by `fold`, which the tree runs a leaf at a time.
    scan_group(
        c,
        "iter_full",
        &[
            ("maple", |((t, _, _), _)| {
                t.reader()
                    .iter()
                    .map(|(r, v)| r.start() ^ *v)
                    .fold(0, u64::wrapping_add)
            }),
            ("maple_inline", |(_, t)| {
                t.reader()
                    .iter()
                    .map(|(r, v)| r.start() ^ v.get() as u64)
                    .fold(0, u64::wrapping_add)
            }),
            ("rangemap", |((_, m, _), _)| {
                m.iter()
                    .map(|(r, v)| r.start() ^ *v)
                    .fold(0, u64::wrapping_add)
            }),
            ("btreemap", |((_, _, bt), _)| {
                bt.iter()
                    .map(|(f, (_, v))| f ^ v)
                    .fold(0, u64::wrapping_add)
            }),
        ],
    );
    // The same scan stepped by a `for` loop (`next` per entry), as much
    // user code iterates: the tree keeps its state between calls here.
    scan_group(
        c,
        "iter_for",
        &[
            ("maple", |((t, _, _), _)| {
                let mut acc = 0u64;
                for (r, v) in t.reader().iter() {
                    acc = acc.wrapping_add(r.start() ^ *v);
                }
                acc
            }),
            ("maple_entries", |((t, _, _), _)| {
                let mut acc = 0u64;
                for (r, v) in t {
                    acc = acc.wrapping_add(r.start() ^ *v);
                }
                acc
            }),
            ("maple_inline", |(_, t)| {
                let mut acc = 0u64;
                for (r, v) in t.reader().iter() {
                    acc = acc.wrapping_add(r.start() ^ v.get() as u64);
                }
                acc
            }),
            ("maple_entries_inline", |(_, t)| {
                let mut acc = 0u64;
                for (r, v) in t {
                    acc = acc.wrapping_add(r.start() ^ v.get() as u64);
                }
                acc
            }),
            ("rangemap", |((_, m, _), _)| {
                let mut acc = 0u64;
                for (r, v) in m.iter() {
                    acc = acc.wrapping_add(r.start() ^ v);
                }
                acc
            }),
            ("btreemap", |((_, _, bt), _)| {
                let mut acc = 0u64;
                for (f, (_, v)) in bt.iter() {
                    acc = acc.wrapping_add(f ^ v);
                }
                acc
            }),
        ],
    );
}

/// The gap: entries `[10i, 10i + 4]` leave gaps of 5; entry `3n/4` is
/// removed, leaving the only gap of 15, which a search for 15 must find.
fn bench_empty_area(c: &mut Criterion) {
    let mut g = group(c, "empty_area");
    for n in sizes() {
        let hole = 3 * n / 4;
        let want = last(hole - 1) + 1;
        g.throughput(Throughput::Elements(1));
        let (t, mut m, mut bt) = build_peers(n);
        t.erase(first(hole)).unwrap();
        assert_eq!(t.empty_area(0, u64::MAX, 15), Ok(want));
        g.bench_function(BenchmarkId::new("maple", n), |b| {
            b.iter(|| t.empty_area(black_box(0), u64::MAX, black_box(15)).unwrap())
        });
        g.bench_function(BenchmarkId::new("maple_rev", n), |b| {
            b.iter(|| {
                t.empty_area_rev(black_box(0), last(n - 1), black_box(15))
                    .unwrap()
            })
        });
        m.remove(first(hole)..=last(hole));
        let scan = |m: &RangeInclusiveMap<u64, u64>| {
            m.gaps(&(0..=u64::MAX))
                .find(|gap| gap.end() - gap.start() >= 14)
                .map(|gap| *gap.start())
        };
        assert_eq!(scan(&m), Some(want));
        g.bench_function(BenchmarkId::new("rangemap_gaps_scan", n), |b| {
            b.iter(|| scan(black_box(&m)).unwrap())
        });
        bt.remove(&first(hole));
        let scan = |m: &BTreeMap<u64, (u64, u64)>| {
            let mut next = 0u64;
            for (&f, &(l, _)) in m {
                if f > next && f - next >= 15 {
                    return Some(next);
                }
                next = l + 1;
            }
            Some(next)
        };
        assert_eq!(scan(&bt), Some(want));
        g.bench_function(BenchmarkId::new("btreemap_scan", n), |b| {
            b.iter(|| scan(black_box(&bt)).unwrap())
        });
    }
    g.finish();
}

fn bench_dup(c: &mut Criterion) {
    let mut g = group(c, "dup");
    for n in sizes() {
        g.throughput(Throughput::Elements(n));
        let (t, m, bt) = build_peers(n);
        g.bench_function(BenchmarkId::new("maple_dup", n), |b| {
            b.iter_with_large_drop(|| t.dup())
        });
        // The one-by-one copies read the entries into a Vec first: inserting
        // while a Reader is held would keep every retired node pinned.
        g.bench_function(BenchmarkId::new("maple_insert_one_by_one", n), |b| {
            b.iter_with_large_drop(|| {
                let all: Vec<(u64, u64, u64)> = t
                    .reader()
                    .iter()
                    .map(|(r, v)| (*r.start(), *r.end(), *v))
                    .collect();
                let copy = MapleTree::new();
                for (f, l, v) in all {
                    copy.store_range(f, l, v).unwrap();
                }
                copy
            })
        });
        g.bench_function(BenchmarkId::new("maple_cursor_mut_one_by_one", n), |b| {
            b.iter_with_large_drop(|| {
                let all: Vec<(u64, u64, u64)> = t
                    .reader()
                    .iter()
                    .map(|(r, v)| (*r.start(), *r.end(), *v))
                    .collect();
                let mut copy = MapleTree::new();
                {
                    let mut c = copy.cursor_mut();
                    for (f, l, v) in all {
                        c.store_range(f, l, v).unwrap();
                    }
                }
                copy
            })
        });
        g.bench_function(BenchmarkId::new("rangemap_clone", n), |b| {
            b.iter_with_large_drop(|| m.clone())
        });
        g.bench_function(BenchmarkId::new("btreemap_clone", n), |b| {
            b.iter_with_large_drop(|| bt.clone())
        });
    }
    g.finish();
}

// ---------------------------------------------------------------------------
// Concurrent reads: one reader alone, and the same reader beside one writer
// storing continuously.
// ---------------------------------------------------------------------------

/// A structure the concurrency bench can drive.
trait Shared: Send + Sync + 'static {
    fn read(&self, k: u64) -> u64;
    fn write(&self, i: u64, v: u64);
}

impl Shared for MapleTree<u64> {
    fn read(&self, k: u64) -> u64 {
        self.load(k).map_or(0, |e| *e)
    }
    fn write(&self, i: u64, v: u64) {
        self.store_range(first(i), last(i), v).unwrap();
    }
}

impl Shared for RwLock<RangeInclusiveMap<u64, u64>> {
    fn read(&self, k: u64) -> u64 {
        self.read().unwrap().get(&k).copied().unwrap_or(0)
    }
    fn write(&self, i: u64, v: u64) {
        self.write().unwrap().insert(first(i)..=last(i), v);
    }
}

/// `scc::TreeIndex` keyed by an entry's last index, holding `(first, value)`:
/// the entry containing `k` is the first with `last >= k`.
struct SccRanges(scc::TreeIndex<u64, (u64, u64)>);

impl Shared for SccRanges {
    fn read(&self, k: u64) -> u64 {
        let guard = scc::ebr::Guard::new();
        match self.0.range(k.., &guard).next() {
            Some((_, &(f, v))) if f <= k => v,
            _ => 0,
        }
    }
    fn write(&self, i: u64, v: u64) {
        // a store of the same range: replace the entry
        self.0.remove(&last(i));
        let _ = self.0.insert(last(i), (first(i), v));
    }
}

/// Measures `iters` random-hit reads on this thread, with a writer thread
/// running meanwhile when `writer` is set (its write count goes to `writes`).
fn read_beside<S: Shared>(
    s: &Arc<S>,
    n: u64,
    writer: bool,
    name: &str,
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
) {
    let keys = hit_keys(n, 4096, n + 5);
    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicU64::new(0));
    let handle = writer.then(|| {
        let (s, stop, writes) = (s.clone(), stop.clone(), writes.clone());
        std::thread::spawn(move || {
            let mut rng = Rng(99);
            let mut v = n;
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..64 {
                    v += 1;
                    s.write(rng.below(n), v);
                }
                writes.fetch_add(64, Ordering::Relaxed);
            }
        })
    });
    let id = BenchmarkId::new(
        format!("{name}/{}", if writer { "with_writer" } else { "alone" }),
        n,
    );
    let started = Instant::now();
    c.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let t = Instant::now();
            let mut sum = 0u64;
            for j in 0..iters {
                sum = sum.wrapping_add(s.read(keys[(j % 4096) as usize]));
            }
            black_box(sum);
            t.elapsed()
        })
    });
    stop.store(true, Ordering::Relaxed);
    if let Some(h) = handle {
        h.join().unwrap();
        let secs = started.elapsed().as_secs_f64();
        eprintln!(
            "  ({name} n={n}: writer stored {:.0}/s during the measurement)",
            writes.load(Ordering::Relaxed) as f64 / secs
        );
    }
}

fn bench_concurrent(c: &mut Criterion) {
    let mut g = group(c, "concurrent_read");
    g.throughput(Throughput::Elements(1));
    for n in sizes().into_iter().filter(|&n| n >= 10_000) {
        // Every peer is built before any is measured (see `build_peers`).
        let t = Arc::new(build_maple(n));
        let m = Arc::new(RwLock::new(build_rangemap(n)));
        let s = SccRanges(scc::TreeIndex::new());
        for i in 0..n {
            s.0.insert(last(i), (first(i), i)).unwrap();
        }
        let s = Arc::new(s);
        read_beside(&t, n, false, "maple", &mut g);
        read_beside(&t, n, true, "maple", &mut g);
        read_beside(&m, n, false, "rwlock_rangemap", &mut g);
        read_beside(&m, n, true, "rwlock_rangemap", &mut g);
        read_beside(&s, n, false, "scc_treeindex", &mut g);
        read_beside(&s, n, true, "scc_treeindex", &mut g);
    }
    g.finish();
}

/// The tree's own memory accounting for sequential ranges: the bench layout
/// (`[10i, 10i + 4]`, a gap after every entry, so each entry costs two
/// slots) and adjacent ranges (`[10i, 10i + 9]`, no gaps).
fn memory_report() {
    for n in sizes() {
        let mut t = MapleTree::new();
        {
            let mut c = t.cursor_mut();
            for i in 0..n {
                c.store_range(i * 10, i * 10 + 9, i).unwrap();
            }
        }
        let u = t.memory_usage();
        println!(
            "memory n={n} adjacent: {} nodes, {:.2} node bytes/entry",
            u.nodes,
            u.node_bytes as f64 / n as f64
        );
    }
    for n in sizes() {
        let t = build_maple(n);
        let u = t.memory_usage();
        let shared = MapleTree::new();
        for i in 0..n {
            shared.store_range(first(i), last(i), i).unwrap();
        }
        let s = shared.memory_usage();
        println!(
            "memory n={n}: cursor_mut build {} nodes, {:.2} node bytes/entry (+{} value bytes/entry); \
             shared build {} nodes, {:.2} node bytes/entry",
            u.nodes,
            u.node_bytes as f64 / n as f64,
            u.value_bytes as u64 / n,
            s.nodes,
            s.node_bytes as f64 / n as f64,
        );
    }
}

fn main() {
    // The accounting is printed first on every run (not for `--list`).
    if !std::env::args().any(|a| a == "--list") {
        memory_report();
    }
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    bench_store(&mut c);
    bench_overwrite(&mut c);
    bench_load(&mut c);
    bench_erase(&mut c);
    bench_iter(&mut c);
    bench_empty_area(&mut c);
    bench_dup(&mut c);
    bench_concurrent(&mut c);
    c.final_summary();
}
