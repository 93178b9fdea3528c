//! What the tree pays per operation for memory reclamation, crossbeam-epoch
//! against seize:
//!
//! - `pin`: enter and leave a critical section (every read pins once);
//! - `retire_256`: retire one 256-byte node (allocation included) while a
//!   guard is held (a write retires the nodes it replaced), 64 per pin;
//! - `write_like`: pin, retire 3 nodes, unpin (a store that copies a
//!   three-level path).
//!
//! `cargo bench -p aspace-maple --bench reclaim`

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput};
use crossbeam_epoch::{self as epoch, Owned};
use seize::{reclaim, Collector, Guard as _};

/// A node-sized allocation, as the tree retires.
#[repr(C, align(64))]
struct Node([u64; 32]);

fn node() -> Node {
    Node([7; 32])
}

fn bench_pin(c: &mut Criterion) {
    let mut g = c.benchmark_group("reclaim_pin");
    g.throughput(Throughput::Elements(1));
    g.bench_function("crossbeam_epoch", |b| {
        b.iter(|| drop(black_box(epoch::pin())))
    });
    let collector = Collector::new();
    g.bench_function("seize", |b| b.iter(|| drop(black_box(collector.enter()))));
    // nested pins (an Entry alive while another read runs)
    let outer = epoch::pin();
    g.bench_function("crossbeam_epoch_nested", |b| {
        b.iter(|| drop(black_box(epoch::pin())))
    });
    drop(outer);
    g.finish();
}

fn bench_retire(c: &mut Criterion) {
    let mut g = c.benchmark_group("reclaim_retire_256");
    g.throughput(Throughput::Elements(64));
    assert_eq!(std::mem::size_of::<Node>(), 256);
    g.bench_function("crossbeam_epoch", |b| {
        b.iter(|| {
            let guard = epoch::pin();
            for _ in 0..64 {
                let p = Owned::new(node()).into_shared(&guard);
                // SAFETY: p was never published; nobody else can reach it.
                unsafe { guard.defer_destroy(p) };
            }
        })
    });
    let collector = Collector::new();
    g.bench_function("seize", |b| {
        b.iter(|| {
            let guard = collector.enter();
            for _ in 0..64 {
                let p = Box::into_raw(Box::new(node()));
                // SAFETY: p came from Box::into_raw and was never shared.
                unsafe { guard.defer_retire(p, reclaim::boxed::<Node>) };
            }
        })
    });
    g.finish();
}

fn bench_write_like(c: &mut Criterion) {
    let mut g = c.benchmark_group("reclaim_write_like");
    g.throughput(Throughput::Elements(1));
    for nodes in [1u64, 3] {
        g.bench_function(BenchmarkId::new("crossbeam_epoch", nodes), |b| {
            b.iter(|| {
                let guard = epoch::pin();
                for _ in 0..nodes {
                    let p = Owned::new(node()).into_shared(&guard);
                    // SAFETY: as above.
                    unsafe { guard.defer_destroy(p) };
                }
            })
        });
        let collector = Collector::new();
        g.bench_function(BenchmarkId::new("seize", nodes), |b| {
            b.iter(|| {
                let guard = collector.enter();
                for _ in 0..nodes {
                    let p = Box::into_raw(Box::new(node()));
                    // SAFETY: as above.
                    unsafe { guard.defer_retire(p, reclaim::boxed::<Node>) };
                }
            })
        });
    }
    g.finish();
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    bench_pin(&mut c);
    bench_retire(&mut c);
    bench_write_like(&mut c);
    c.final_summary();
}
