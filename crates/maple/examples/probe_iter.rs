//! Folds (or `for` loops) over the same entries held four ways: boxed
//! `u64` values (`MapleTree<u64>`), integers in the slot word
//! (`MapleTree<XValue, Inline>`), rangemap's `RangeInclusiveMap<u64, u64>`
//! and a `BTreeMap<u64, (u64, u64)>` from first index to last index and
//! value (the iteration targets' peers, built before any loop runs, as
//! `benches/maple.rs` builds its peers); prints the fastest pass of each,
//! the four taking turns in every round, so that a noisy host slows them
//! alike.
//!
//! ```text
//! cargo build --release -p aspace-maple --example probe_iter
//! target/release/examples/probe_iter all|boxed|inline|rangemap|btreemap N ROUNDS
//! PATTERN=random target/release/examples/probe_iter all 100000 300
//! LOOP=for target/release/examples/probe_iter all 100000 300
//! ```
//!
//! Entries are 5 indices long. By default a gap of 5 follows each (the
//! layout of `benches/maple.rs`, a slot pattern the branch predictor
//! learns); `PATTERN=random` puts a gap after an entry with probability 1/2.
//! `LOOP=for` sums with a `for` loop (the iterator's `next`) instead of a
//! fold, over a `Reader`; `LOOP=entries` with a `for` loop over the tree
//! itself (`tree.iter()`, whose items hold a share of its pin). `all` (or `both`, its old name) runs all four.
//! For instruction counts, run it under
//! `valgrind --tool=callgrind --toggle-collect='*measure_*'`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

use aspace_maple::{Inline, MapleTree, XValue};
use rangemap::RangeInclusiveMap;

#[inline(never)]
fn measure_boxed(t: &MapleTree<u64>) -> u64 {
    t.reader()
        .iter()
        .map(|(r, v)| r.start() ^ *v)
        .fold(0, u64::wrapping_add)
}

#[inline(never)]
fn measure_inline(t: &MapleTree<XValue, Inline>) -> u64 {
    t.reader()
        .iter()
        .map(|(r, v)| r.start() ^ v.get() as u64)
        .fold(0, u64::wrapping_add)
}

#[inline(never)]
fn measure_rangemap(m: &RangeInclusiveMap<u64, u64>) -> u64 {
    m.iter()
        .map(|(r, v)| r.start() ^ *v)
        .fold(0, u64::wrapping_add)
}

#[inline(never)]
fn measure_btreemap(m: &BTreeMap<u64, (u64, u64)>) -> u64 {
    m.iter().map(|(f, (_, v))| f ^ v).fold(0, u64::wrapping_add)
}

#[inline(never)]
fn measure_for_boxed(t: &MapleTree<u64>) -> u64 {
    let mut acc = 0u64;
    for (r, v) in t.reader().iter() {
        acc = acc.wrapping_add(r.start() ^ *v);
    }
    acc
}

#[inline(never)]
fn measure_for_inline(t: &MapleTree<XValue, Inline>) -> u64 {
    let mut acc = 0u64;
    for (r, v) in t.reader().iter() {
        acc = acc.wrapping_add(r.start() ^ v.get() as u64);
    }
    acc
}

#[inline(never)]
fn measure_entries_boxed(t: &MapleTree<u64>) -> u64 {
    let mut acc = 0u64;
    for (r, v) in t {
        acc = acc.wrapping_add(r.start() ^ *v);
    }
    acc
}

#[inline(never)]
fn measure_entries_inline(t: &MapleTree<XValue, Inline>) -> u64 {
    let mut acc = 0u64;
    for (r, v) in t {
        acc = acc.wrapping_add(r.start() ^ v.get() as u64);
    }
    acc
}

#[inline(never)]
fn measure_for_rangemap(m: &RangeInclusiveMap<u64, u64>) -> u64 {
    let mut acc = 0u64;
    for (r, v) in m.iter() {
        acc = acc.wrapping_add(r.start() ^ v);
    }
    acc
}

#[inline(never)]
fn measure_for_btreemap(m: &BTreeMap<u64, (u64, u64)>) -> u64 {
    let mut acc = 0u64;
    for (f, (_, v)) in m.iter() {
        acc = acc.wrapping_add(f ^ v);
    }
    acc
}

fn usage() -> ! {
    eprintln!(
        "usage: [LOOP=fold|for|entries] probe_iter all|boxed|inline|rangemap|btreemap N ROUNDS"
    );
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        usage();
    }
    let which = args[1].as_str();
    if !["all", "both", "boxed", "inline", "rangemap", "btreemap"].contains(&which) {
        usage();
    }
    let (Ok(n), Ok(rounds)) = (args[2].parse::<usize>(), args[3].parse::<u32>()) else {
        usage()
    };
    if n > XValue::MAX || (n as u64).checked_mul(10).is_none() {
        usage();
    }
    let random = std::env::var("PATTERN").is_ok_and(|p| p == "random");
    // 0: fold, 1: `for` loop over a `Reader`, 2: `for` loop over
    // `tree.iter()` (the peers' `for` loops for both).
    let pass_kind = match std::env::var("LOOP").as_deref() {
        Ok("for") => 1,
        Ok("entries") => 2,
        Ok("fold") | Err(_) => 0,
        Ok(_) => usage(),
    };
    // xorshift64: the same pattern every run.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut starts = Vec::with_capacity(n);
    let mut at = 0u64;
    for _ in 0..n {
        starts.push(at);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        at += if !random || x & 1 == 1 { 10 } else { 5 };
    }
    let mut boxed: MapleTree<u64> = MapleTree::new();
    let mut inline: MapleTree<XValue, Inline> = MapleTree::new_inline();
    {
        let mut c = boxed.cursor_mut();
        for (i, &s) in starts.iter().enumerate() {
            c.store_range(s, s + 4, i as u64).expect("s <= s + 4");
        }
    }
    {
        let mut c = inline.cursor_mut();
        for (i, &s) in starts.iter().enumerate() {
            let v = XValue::new(i).expect("n <= XValue::MAX");
            c.store_range(s, s + 4, v).expect("s <= s + 4");
        }
    }
    let mut ranges = RangeInclusiveMap::new();
    let mut btree = BTreeMap::new();
    for (i, &s) in starts.iter().enumerate() {
        ranges.insert(s..=s + 4, i as u64);
        btree.insert(s, (s + 4, i as u64));
    }
    const NAMES: [&str; 4] = ["boxed", "inline", "rangemap", "btreemap"];
    let mut best = [f64::INFINITY; 4];
    for _ in 0..rounds {
        for (k, name) in NAMES.into_iter().enumerate() {
            if which != "all" && which != "both" && which != name {
                continue;
            }
            let t0 = Instant::now();
            let x = match (k, pass_kind) {
                (0, 0) => measure_boxed(&boxed),
                (1, 0) => measure_inline(&inline),
                (2, 0) => measure_rangemap(&ranges),
                (_, 0) => measure_btreemap(&btree),
                (0, 1) => measure_for_boxed(&boxed),
                (1, 1) => measure_for_inline(&inline),
                (0, _) => measure_entries_boxed(&boxed),
                (1, _) => measure_entries_inline(&inline),
                (2, _) => measure_for_rangemap(&ranges),
                (_, _) => measure_for_btreemap(&btree),
            };
            black_box(x);
            best[k] = best[k].min(t0.elapsed().as_secs_f64() * 1e6);
        }
    }
    for (k, name) in NAMES.into_iter().enumerate() {
        if best[k].is_finite() {
            let pass = match (pass_kind, k) {
                (0, _) => "fold",
                (2, 0 | 1) => "for loop over tree.iter()",
                _ => "for loop",
            };
            println!("{name}: {:.1} us per {pass} of {n}", best[k]);
        }
    }
    if best.iter().all(|b| b.is_finite()) {
        println!(
            "rangemap / boxed {:.2}x, rangemap / inline {:.2}x, \
             btreemap / boxed {:.2}x, btreemap / inline {:.2}x",
            best[2] / best[0],
            best[2] / best[1],
            best[3] / best[0],
            best[3] / best[1]
        );
    }
}
