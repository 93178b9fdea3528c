//! Criterion benches: every design in the same group, so the output is a
//! comparison. Single-thread figures run against 6000 resident libc-like
//! entries (5 distinct intervals x 1200 processes).
//!
//! `cargo bench -p aspace-rmap -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use rmap::bench::{churn_fixed, churn_once, libc_like_intervals, populate, ChurnConfig};
use rmap::{Design, Interval, ReverseMap, Topology};

/// A design's map with 6000 resident entries, and their handles.
type Resident = (Arc<dyn ReverseMap>, Vec<rmap::Handle>);

fn resident(d: Design) -> Resident {
    let m = d.build_arc(&Topology::Os);
    let hs = populate(&*m, &ChurnConfig::default());
    assert_eq!(m.len(), 6000);
    (m, hs)
}

/// Every design's resident map, all built before any is measured: a map
/// built into the memory the previous design's map had just freed gets its
/// nodes scattered through those holes, while the first design in the
/// order always had fresh memory. They stay alive until the group ends, so
/// no design's allocations land in another's freed memory while measured.
fn all_resident() -> Vec<(Design, Resident)> {
    Design::ALL.iter().map(|&d| (d, resident(d))).collect()
}

fn single_thread(c: &mut Criterion) {
    let ivs = libc_like_intervals();
    for batch in [true, false] {
        let name = if batch {
            "insert_remove_5_batch"
        } else {
            "insert_remove_5_single"
        };
        let mut g = c.benchmark_group(name);
        let built = all_resident();
        for (d, (m, _hs)) in &built {
            let (d, m) = (*d, Arc::clone(m));
            let mut items = Vec::new();
            let mut out = Vec::new();
            let mut n = 0u64;
            g.bench_function(BenchmarkId::from_parameter(d), |b| {
                b.iter(|| {
                    n += 8;
                    churn_once(&*m, &ivs, batch, n, &mut items, &mut out);
                })
            });
        }
        g.finish();
    }

    let mut g = c.benchmark_group("insert_after_remove");
    let built = all_resident();
    for (d, (m, hs)) in &built {
        let (d, m) = (*d, Arc::clone(m));
        let parent = hs[6 * 5 + 1];
        let mut n = 0u64;
        g.bench_function(BenchmarkId::from_parameter(d), |b| {
            b.iter(|| {
                n += 1;
                let h = m.insert_after(parent, ivs[1], n).unwrap();
                m.remove(h).unwrap();
            })
        });
    }
    g.finish();

    for (name, range) in [
        ("walk_one_interval_1200", ivs[1]),
        ("walk_all_6000", Interval::FULL),
    ] {
        let mut g = c.benchmark_group(name);
        let built = all_resident();
        for (d, (m, _hs)) in &built {
            let (d, m) = (*d, Arc::clone(m));
            g.bench_function(BenchmarkId::from_parameter(d), |b| {
                b.iter(|| {
                    let mut k = 0u64;
                    m.walk(black_box(range), &mut |_, v| k = k.wrapping_add(v));
                    k
                })
            });
        }
        g.finish();
    }
}

fn churn(c: &mut Criterion) {
    for threads in [1usize, 2, 4] {
        let mut g = c.benchmark_group(format!("churn_{threads}t"));
        g.sample_size(10);
        let built = all_resident();
        for (d, (m, _hs)) in &built {
            let (d, m) = (*d, Arc::clone(m));
            g.bench_function(BenchmarkId::from_parameter(d), |b| {
                b.iter_custom(|iters| {
                    churn_fixed(&m, threads, iters.div_ceil(threads as u64).max(1), true)
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, single_thread, churn);
criterion_main!(benches);
