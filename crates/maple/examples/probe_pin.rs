//! What a fence-free pin would buy `load`: hot lookups (1,000 keys in one
//! repeated order, the `load` group's workload) through `MapleTree::load`
//! (an epoch pin per call: crossbeam-epoch's until stop 22, the crate's
//! own since), through one `Reader` (no pin per call), through one
//! `Reader` plus a simulated asymmetric-fence pin per call (a
//! thread-local record's epoch stored with no fence, as a reader of an
//! epoch scheme whose reclaimer issues membarrier would), through a new
//! `Reader` per lookup (`tree.reader().load(k)`), and rangemap. Prints the
//! fastest pass of each, per lookup.
//!
//! ```text
//! cargo build --release -p aspace-maple --example probe_pin
//! target/release/examples/probe_pin [N (100000)] [ROUNDS (2000)]
//! ```
//!
//! The simulated pin protects nothing (no reclaimer reads its record): it
//! measures only what such a pin costs a reader, to size what replacing
//! crossbeam-epoch's pin (a `lock cmpxchg` per outermost pin) would gain.

use std::cell::Cell;
use std::hint::black_box;
use std::sync::atomic::{compiler_fence, AtomicU64, Ordering};
use std::time::Instant;

use aspace_maple::MapleTree;
use rangemap::RangeInclusiveMap;

static GLOBAL_EPOCH: AtomicU64 = AtomicU64::new(2);

struct Local {
    epoch: AtomicU64,
    guards: Cell<usize>,
}

thread_local! {
    static LOCAL: &'static Local = Box::leak(Box::new(Local {
        epoch: AtomicU64::new(0),
        guards: Cell::new(0),
    }));
}

#[inline(always)]
fn light_pin() {
    LOCAL.with(|l| {
        let g = l.guards.get();
        if g == 0 {
            l.epoch
                .store(GLOBAL_EPOCH.load(Ordering::Relaxed) | 1, Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
        }
        l.guards.set(g + 1);
    })
}

#[inline(always)]
fn light_unpin() {
    LOCAL.with(|l| {
        let g = l.guards.get() - 1;
        l.guards.set(g);
        if g == 0 {
            compiler_fence(Ordering::SeqCst);
            l.epoch.store(0, Ordering::Release);
        }
    })
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let rounds: u32 = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let mut m = RangeInclusiveMap::new();
    for i in 0..n {
        m.insert(i * 10..=i * 10 + 4, i);
    }
    let mut t: MapleTree<u64> = MapleTree::new();
    {
        let mut c = t.cursor_mut();
        for i in 0..n {
            c.store_range(i * 10, i * 10 + 4, i).unwrap();
        }
    }
    let mut x = n + 2;
    let keys: Vec<u64> = (0..1000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n) * 10 + (x >> 32) % 5
        })
        .collect();
    let mut best = [f64::INFINITY; 5];
    for _ in 0..rounds {
        for (k, best) in best.iter_mut().enumerate() {
            let t0 = Instant::now();
            let mut sum = 0u64;
            match k {
                0 => {
                    for &key in &keys {
                        sum += *t.load(key).unwrap();
                    }
                }
                1 => {
                    let r = t.reader();
                    for &key in &keys {
                        sum += *r.load(key).unwrap().1;
                    }
                }
                2 => {
                    let r = t.reader();
                    for &key in &keys {
                        light_pin();
                        sum += *r.load(key).unwrap().1;
                        light_unpin();
                    }
                }
                3 => {
                    for &key in &keys {
                        sum += *m.get(&key).unwrap();
                    }
                }
                _ => {
                    for &key in &keys {
                        sum += *t.reader().load(key).unwrap().1;
                    }
                }
            }
            black_box(sum);
            *best = best.min(t0.elapsed().as_secs_f64() * 1e9 / keys.len() as f64);
        }
    }
    println!(
        "n={n}: load {:.1} ns, reader {:.1} ns, reader+light pin {:.1} ns, rangemap {:.1} ns; rangemap/load {:.2}x, rangemap/(reader+light) {:.2}x",
        best[0], best[1], best[2], best[3], best[3] / best[0], best[3] / best[2]
    );
    println!("reader per key {:.1} ns", best[4]);
}
