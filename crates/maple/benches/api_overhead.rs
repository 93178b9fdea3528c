//! The idiomatic layer's cost against the kernel-style calls it wraps, in
//! instructions (callgrind), and the gaps iterator's seek.
//!
//! `api_overhead <op> <n> [iters]` builds a tree of `n` entries
//! `[10i, 10i + 4]` (a free gap of 5 after each), then runs `iters`
//! operations inside `measure_<op>`, which callgrind counts alone:
//!
//! ```sh
//! cargo bench -p aspace-maple --bench api_overhead --no-run
//! valgrind --tool=callgrind --toggle-collect='*measure_*' \
//!     target/release/deps/api_overhead-* get 1000000 100000
//! ```
//!
//! Pairs: `load`/`get`, `store_range`/`insert`, `insert_range`/`try_insert`
//! (refused: occupied), `reader_iter`/`tree_iter` (a full scan per
//! iteration, consumed by `sum`, i.e. `fold`), `reader_iter_next`/
//! `tree_iter_next` (the same stepped with `next`, as a `for` loop does),
//! `empty_area`/`gaps_seek` (the first gap at or past a random
//! index). Keys come from a fixed-seed splitmix64.

use std::hint::black_box;
use std::time::Instant;

use aspace_maple::MapleTree;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn build(n: u64) -> MapleTree<u64> {
    (0..n).map(|i| (10 * i..=10 * i + 4, i)).collect()
}

macro_rules! measure {
    ($name:ident, |$t:ident, $i:ident| $body:expr) => {
        #[inline(never)]
        fn $name($t: &MapleTree<u64>, n: u64, iters: u64) -> u64 {
            let mut rng = Rng(42);
            let mut acc = 0u64;
            for _ in 0..iters {
                let $i = rng.next() % n;
                acc = acc.wrapping_add($body);
            }
            acc
        }
    };
}

measure!(measure_load, |t, i| t.load(10 * i + 2).map_or(0, |e| *e));
measure!(measure_get, |t, i| t.get(10 * i + 2).map_or(0, |e| *e));
measure!(measure_store_range, |t, i| {
    t.store_range(10 * i, 10 * i + 4, i).unwrap();
    i
});
measure!(measure_insert, |t, i| {
    t.insert(10 * i..=10 * i + 4, i).unwrap();
    i
});
measure!(measure_insert_range, |t, i| t
    .insert_range(10 * i, 10 * i + 1, i)
    .unwrap_err()
    .value);
measure!(measure_try_insert, |t, i| t
    .try_insert(10 * i..=10 * i + 1, i)
    .unwrap_err()
    .value);
measure!(measure_empty_area, |t, i| t
    .empty_area(10 * i, u64::MAX, 1)
    .unwrap());
measure!(measure_gaps_seek, |t, i| *t
    .gaps(10 * i..)
    .next()
    .unwrap()
    .start());

#[inline(never)]
fn measure_reader_iter(t: &MapleTree<u64>, _n: u64, iters: u64) -> u64 {
    let mut acc = 0u64;
    for _ in 0..iters {
        let r = t.reader();
        acc = acc.wrapping_add(r.iter().map(|(_, v)| *v).sum::<u64>());
    }
    acc
}

#[inline(never)]
fn measure_tree_iter(t: &MapleTree<u64>, _n: u64, iters: u64) -> u64 {
    let mut acc = 0u64;
    for _ in 0..iters {
        acc = acc.wrapping_add(t.iter().map(|(_, v)| *v).sum::<u64>());
    }
    acc
}

/// As `measure_reader_iter`, stepping with `next` (a `for` loop) rather
/// than `fold` (`sum`).
#[inline(never)]
fn measure_reader_iter_next(t: &MapleTree<u64>, _n: u64, iters: u64) -> u64 {
    let mut acc = 0u64;
    for _ in 0..iters {
        let r = t.reader();
        for (_, v) in r.iter() {
            acc = acc.wrapping_add(*v);
        }
    }
    acc
}

/// As `measure_tree_iter`, stepping with `next`.
#[inline(never)]
fn measure_tree_iter_next(t: &MapleTree<u64>, _n: u64, iters: u64) -> u64 {
    let mut acc = 0u64;
    for _ in 0..iters {
        for (_, v) in t.iter() {
            acc = acc.wrapping_add(*v);
        }
    }
    acc
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // `cargo bench` passes `--bench`: run a quick pass of every pair.
    if args.len() < 3 || args[1].starts_with("--") {
        for op in [
            "load",
            "get",
            "store_range",
            "insert",
            "empty_area",
            "gaps_seek",
        ] {
            run(op, 100_000, 100_000);
        }
        return;
    }
    let n: u64 = args[2].parse().expect("n");
    let iters: u64 = args.get(3).map_or(100_000, |s| s.parse().expect("iters"));
    run(&args[1], n, iters);
}

fn run(op: &str, n: u64, iters: u64) {
    let t = build(n);
    let f: fn(&MapleTree<u64>, u64, u64) -> u64 = match op {
        "load" => measure_load,
        "get" => measure_get,
        "store_range" => measure_store_range,
        "insert" => measure_insert,
        "insert_range" => measure_insert_range,
        "try_insert" => measure_try_insert,
        "empty_area" => measure_empty_area,
        "gaps_seek" => measure_gaps_seek,
        "reader_iter" => measure_reader_iter,
        "tree_iter" => measure_tree_iter,
        "reader_iter_next" => measure_reader_iter_next,
        "tree_iter_next" => measure_tree_iter_next,
        _ => panic!("unknown op {op}"),
    };
    let t0 = Instant::now();
    let r = black_box(f(&t, n, iters));
    let ns = t0.elapsed().as_nanos() as f64 / iters as f64;
    println!("{op} n={n} iters={iters}: {ns:.0} ns/op (wall clock, loaded machine) [{r}]");
}
