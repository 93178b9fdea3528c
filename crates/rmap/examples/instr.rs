//! Single-thread instruction-count probe for callgrind: `OPS` churn ops (map
//! and unmap one libc-like process: 5 inserts, 5 removes, one lock hold
//! each) on one design's map with 1200 processes resident.
//!
//! ```text
//! cargo build --release -p aspace-rmap --example instr
//! valgrind --tool=callgrind --toggle-collect='*churn_ops*' \
//!     target/release/examples/instr aspace 10000
//! ```
//! Instructions per op = the collected total / OPS.

use rmap::bench::libc_like_intervals;
use rmap::{Design, Handle, ReverseMap, Topology};

#[inline(never)]
fn churn_ops(m: &dyn ReverseMap, ops: u64) {
    let ivs = libc_like_intervals();
    let mut hs: [Option<Handle>; 5] = [None; 5];
    for op in 0..ops {
        for (k, iv) in ivs.iter().enumerate() {
            hs[k] = Some(m.insert(*iv, op * 8 + k as u64).expect("valid"));
        }
        for h in hs.iter_mut() {
            m.remove(h.take().expect("inserted")).expect("live");
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let design: Design = args
        .next()
        .unwrap_or_else(|| "aspace".into())
        .parse()
        .expect("a design name");
    let ops: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let m = design.build(&Topology::Os);
    for p in 0..1200u64 {
        for (k, iv) in libc_like_intervals().iter().enumerate() {
            m.insert(*iv, (1 << 40) + p * 8 + k as u64).expect("valid");
        }
    }
    churn_ops(&*m, ops);
    println!("{design}: {} entries", m.len());
}
