//! Loom models of the `aspace` design's promotion and of the distributed
//! (inverted) outer lock, plus the `sharded` design's outer rwlock. Run:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p aspace-rmap --release --test loom
//! ```
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use rmap::designs::aspace::Aspace;
use rmap::designs::sharded::Sharded;
use rmap::{Interval, ReverseMap, Topology};

fn iv(a: u64, b: u64) -> Interval {
    Interval::new(a, b).unwrap()
}

/// Checks `f` under loom and asserts that more than one interleaving was
/// explored (so a model that silently ran once cannot pass).
fn model(f: impl Fn() + Sync + Send + 'static) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let runs = std::sync::Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(2);
    }
    b.check(move || {
        r.fetch_add(1, Ordering::Relaxed);
        f()
    });
    let n = runs.load(Ordering::Relaxed);
    assert!(n > 1, "loom explored only {n} execution(s)");
}

/// Promotion racing a modifier: the central handle stays valid, no entry is
/// lost or duplicated, and the map ends sharded.
#[test]
fn promotion_races_modifier() {
    model(|| {
        let a = Arc::new(Aspace::new(Topology::Emulated {
            nodes: 1,
            cpus_per_node: 2,
        }));
        let h0 = a.insert(iv(1, 2), 0).unwrap();
        let a2 = a.clone();
        let t = thread::spawn(move || {
            let h = a2.insert(iv(1, 2), 1).unwrap();
            a2.remove(h0).unwrap();
            h
        });
        a.promote();
        let h1 = t.join().unwrap();
        assert!(a.is_promoted());
        assert_eq!(a.len(), 1);
        let mut seen = vec![];
        a.walk(Interval::FULL, &mut |_, v| seen.push(v));
        assert_eq!(seen, vec![1]);
        a.remove(h1).unwrap();
        assert!(a.remove(h0).is_err());
        assert!(a.is_empty());
    });
}

/// Handoff-driven promotion: the second thread to take the central lock
/// hands it off (the threshold is 1 handoff under loom), so the map
/// promotes, exactly once, in every interleaving; concurrent inserts all
/// land exactly once.
#[test]
fn contended_insert_promotes_at_most_once() {
    model(|| {
        let a = Arc::new(Aspace::new(Topology::Emulated {
            nodes: 1,
            cpus_per_node: 2,
        }));
        let a2 = a.clone();
        let t = thread::spawn(move || a2.insert(iv(3, 4), 1).unwrap());
        let h = a.insert(iv(3, 4), 2).unwrap();
        let h2 = t.join().unwrap();
        assert!(a.is_promoted(), "two holders hand off: the map promotes");
        assert_eq!(a.promotions(), 1);
        assert_eq!(a.len(), 2);
        let mut n = 0;
        a.walk(Interval::FULL, &mut |_, _| n += 1);
        assert_eq!(n, 2);
        a.remove_batch(&[h, h2]).unwrap();
        assert!(a.is_empty());
    });
}

/// The distributed outer lock: a batch removal spanning two shards is
/// all-or-nothing to a stable walk.
#[test]
fn aspace_stable_walk_sees_cross_shard_batch_atomically() {
    model(|| {
        let a = Arc::new(Aspace::new(Topology::Emulated {
            nodes: 1,
            cpus_per_node: 2,
        }));
        a.promote();
        let h0 = a.insert(iv(1, 1), 10).unwrap();
        let a2 = a.clone();
        // Another thread gets the other emulated CPU, hence the other shard.
        let h1 = thread::spawn(move || a2.insert(iv(1, 1), 11).unwrap())
            .join()
            .unwrap();
        assert_ne!(
            h0.shard(),
            h1.shard(),
            "the two threads use different shards"
        );
        let a3 = a.clone();
        let remover = thread::spawn(move || a3.remove_batch(&[h0, h1]).unwrap());
        let mut n = 0;
        a.walk(Interval::FULL, &mut |_, _| n += 1);
        assert!(n == 0 || n == 2, "a stable walk saw half a batch: {n}");
        remover.join().unwrap();
        assert!(a.is_empty());
    });
}

/// The `sharded` design's inverted outer rwlock: same property.
#[test]
fn sharded_outer_lock_excludes_modifiers() {
    model(|| {
        let s = Arc::new(Sharded::new(Topology::Emulated {
            nodes: 2,
            cpus_per_node: 8,
        }));
        assert_eq!(s.stats().shards, 2);
        let h0 = s.insert_on_shard(0, iv(1, 1), 10).unwrap();
        let h1 = s.insert_on_shard(1, iv(1, 1), 11).unwrap();
        let s3 = s.clone();
        let remover = thread::spawn(move || s3.remove_batch(&[h0, h1]).unwrap());
        let mut n = 0;
        s.walk(Interval::FULL, &mut |_, _| n += 1);
        assert!(n == 0 || n == 2, "a stable walk saw half a batch: {n}");
        remover.join().unwrap();
        assert!(s.is_empty());
    });
}
