//! Folds of the same entries held three ways: boxed `u64` values
//! (`MapleTree<u64>`), integers in the slot word
//! (`MapleTree<XValue, Inline>`), and rangemap's `RangeInclusiveMap<u64,
//! u64>` (the iteration target's peer, built before any fold runs, as
//! `benches/maple.rs` builds its peers); prints the fastest fold of each,
//! the three taking turns in every round, so that a noisy host slows them
//! alike.
//!
//! ```text
//! cargo build --release -p aspace-maple --example probe_iter
//! target/release/examples/probe_iter both|boxed|inline N ROUNDS
//! PATTERN=random target/release/examples/probe_iter both 100000 300
//! ```
//!
//! Entries are 5 indices long. By default a gap of 5 follows each (the
//! layout of `benches/maple.rs`, a slot pattern the branch predictor
//! learns); `PATTERN=random` puts a gap after an entry with probability 1/2.
//! For instruction counts, run it under
//! `valgrind --tool=callgrind --toggle-collect='*measure_*'`.

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

fn usage() -> ! {
    eprintln!("usage: probe_iter both|boxed|inline|rangemap N ROUNDS");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        usage();
    }
    let which = args[1].as_str();
    if !["both", "boxed", "inline", "rangemap"].contains(&which) {
        usage();
    }
    let (Ok(n), Ok(rounds)) = (args[2].parse::<usize>(), args[3].parse::<u32>()) else {
        usage()
    };
    if n > XValue::MAX || (n as u64).checked_mul(10).is_none() {
        usage();
    }
    let random = std::env::var("PATTERN").is_ok_and(|p| p == "random");
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
    for (i, &s) in starts.iter().enumerate() {
        ranges.insert(s..=s + 4, i as u64);
    }
    const NAMES: [&str; 3] = ["boxed", "inline", "rangemap"];
    let mut best = [f64::INFINITY; 3];
    for _ in 0..rounds {
        for (k, name) in NAMES.into_iter().enumerate() {
            if which != "both" && which != name {
                continue;
            }
            let t0 = Instant::now();
            let x = match k {
                0 => measure_boxed(&boxed),
                1 => measure_inline(&inline),
                _ => measure_rangemap(&ranges),
            };
            black_box(x);
            best[k] = best[k].min(t0.elapsed().as_secs_f64() * 1e6);
        }
    }
    for (k, name) in NAMES.into_iter().enumerate() {
        if best[k].is_finite() {
            println!("{name}: {:.1} us per fold of {n}", best[k]);
        }
    }
    if best[0].is_finite() && best[2].is_finite() {
        println!(
            "rangemap / boxed {:.2}x, rangemap / inline {:.2}x",
            best[2] / best[0],
            best[2] / best[1]
        );
    }
}
