//! The `iter_for` and `iter_full` criterion groups' loops at one size, on
//! structures built as `benches/maple.rs` builds them (the tree and its
//! in-slot twin by `cursor_mut` in order, rangemap by `insert`, `BTreeMap`
//! by `collect`), each run `PASSES` times back to back (so its structure is
//! as warm in the caches as in criterion's loop), the loops taking turns
//! round after round; prints the fastest pass of each in microseconds.
//! The fastest of many short passes is what a busy host still gives
//! steadily; it is not criterion's median, so it is a check between
//! builds and between the peers of one run, not a figure for the targets.
//!
//! ```text
//! cargo build --release -p aspace-maple --example probe_for
//! target/release/examples/probe_for N ROUNDS [PASSES]
//! ```
//!
//! Entries are `[10i, 10i + 4]` with value `i`, as in the benches.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

use aspace_maple::{Inline, MapleTree, XValue};
use rangemap::RangeInclusiveMap;

type Boxed = MapleTree<u64>;
type InSlot = MapleTree<XValue, Inline>;
type Ranges = RangeInclusiveMap<u64, u64>;
type Points = BTreeMap<u64, (u64, u64)>;

struct Peers {
    boxed: Boxed,
    inline: InSlot,
    ranges: Ranges,
    btree: Points,
}

#[inline(never)]
fn for_reader(t: &Boxed) -> u64 {
    let mut acc = 0u64;
    for (r, v) in t.reader().iter() {
        acc = acc.wrapping_add(r.start() ^ *v);
    }
    acc
}

#[inline(never)]
fn for_entries(t: &Boxed) -> u64 {
    let mut acc = 0u64;
    for (r, v) in t {
        acc = acc.wrapping_add(r.start() ^ *v);
    }
    acc
}

#[inline(never)]
fn for_reader_inline(t: &InSlot) -> u64 {
    let mut acc = 0u64;
    for (r, v) in t.reader().iter() {
        acc = acc.wrapping_add(r.start() ^ v.get() as u64);
    }
    acc
}

#[inline(never)]
fn for_entries_inline(t: &InSlot) -> u64 {
    let mut acc = 0u64;
    for (r, v) in t {
        acc = acc.wrapping_add(r.start() ^ v.get() as u64);
    }
    acc
}

#[inline(never)]
fn for_rangemap(m: &Ranges) -> u64 {
    let mut acc = 0u64;
    for (r, v) in m.iter() {
        acc = acc.wrapping_add(r.start() ^ v);
    }
    acc
}

#[inline(never)]
fn for_btreemap(m: &Points) -> u64 {
    let mut acc = 0u64;
    for (f, (_, v)) in m.iter() {
        acc = acc.wrapping_add(f ^ v);
    }
    acc
}

#[inline(never)]
fn fold_reader_inline(t: &InSlot) -> u64 {
    t.reader()
        .iter()
        .map(|(r, v)| r.start() ^ v.get() as u64)
        .fold(0, u64::wrapping_add)
}

#[inline(never)]
fn fold_btreemap(m: &Points) -> u64 {
    m.iter().map(|(f, (_, v))| f ^ v).fold(0, u64::wrapping_add)
}

type Loop = (&'static str, fn(&Peers) -> u64);

const LOOPS: [Loop; 8] = [
    ("iter_for maple (Reader)", |p| for_reader(&p.boxed)),
    ("iter_for maple_entries", |p| for_entries(&p.boxed)),
    ("iter_for maple_inline (Reader)", |p| {
        for_reader_inline(&p.inline)
    }),
    ("iter_for maple_entries_inline", |p| {
        for_entries_inline(&p.inline)
    }),
    ("iter_for rangemap", |p| for_rangemap(&p.ranges)),
    ("iter_for btreemap", |p| for_btreemap(&p.btree)),
    ("iter_full maple_inline", |p| fold_reader_inline(&p.inline)),
    ("iter_full btreemap", |p| fold_btreemap(&p.btree)),
];

fn usage() -> ! {
    eprintln!("usage: probe_for N ROUNDS [PASSES]");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !(3..=4).contains(&args.len()) {
        usage();
    }
    let (Ok(n), Ok(rounds)) = (args[1].parse::<u64>(), args[2].parse::<u32>()) else {
        usage()
    };
    let passes = match args.get(3).map(|p| p.parse::<u32>()) {
        None => 10,
        Some(Ok(p)) if p > 0 => p,
        Some(_) => usage(),
    };
    if n == 0 || n as usize > XValue::MAX || n.checked_mul(10).is_none() {
        usage();
    }
    let first = |i: u64| 10 * i;
    let last = |i: u64| 10 * i + 4;
    let mut boxed = MapleTree::new();
    {
        let mut c = boxed.cursor_mut();
        for i in 0..n {
            c.store_range(first(i), last(i), i).expect("first <= last");
        }
    }
    let mut inline = MapleTree::new_inline();
    {
        let mut c = inline.cursor_mut();
        for i in 0..n {
            let v = XValue::new(i as usize).expect("n <= XValue::MAX");
            c.store_range(first(i), last(i), v).expect("first <= last");
        }
    }
    let mut ranges = RangeInclusiveMap::new();
    for i in 0..n {
        ranges.insert(first(i)..=last(i), i);
    }
    let btree: Points = (0..n).map(|i| (first(i), (last(i), i))).collect();
    let peers = Peers {
        boxed,
        inline,
        ranges,
        btree,
    };
    // Every loop computes the same sum.
    let sums: Vec<u64> = LOOPS.iter().map(|(_, f)| f(&peers)).collect();
    assert!(
        sums.iter().all(|&s| s == sums[0]),
        "loops disagree: {sums:?}"
    );
    let mut best = [f64::INFINITY; LOOPS.len()];
    for _ in 0..rounds {
        for (k, (_, f)) in LOOPS.iter().enumerate() {
            for _ in 0..passes {
                let t0 = Instant::now();
                black_box(f(black_box(&peers)));
                best[k] = best[k].min(t0.elapsed().as_secs_f64() * 1e6);
            }
        }
    }
    for (k, (name, _)) in LOOPS.iter().enumerate() {
        println!("{name:32} {:9.1} us", best[k]);
    }
}
