//! T threads churn inserts and removes while walkers check the walk
//! contract, for every design. The work is bounded by counts (churn rounds
//! per thread, walks), never by time, so the result does not depend on how
//! loaded the machine is or how fast the interpreter (Miri) runs; every
//! walk asserts:
//! * an entry present for the whole walk is visited exactly once;
//! * an entry removed before the walk began is never visited;
//! * during a stable walk nothing changes (`len()` is constant, and equals
//!   the number of entries a full walk visits).

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use rmap::designs::aspace::Aspace;
use rmap::{Design, Interval, ReverseMap, Topology};

const CHURNERS: usize = 3;
/// Resident processes (5 entries each, never removed).
#[cfg(not(miri))]
const RESIDENT: u64 = 300;
#[cfg(miri)]
const RESIDENT: u64 = 8;
/// Insert/remove rounds per churning thread.
#[cfg(not(miri))]
const ROUNDS: u64 = 2_000;
#[cfg(miri)]
const ROUNDS: u64 = 3;
/// Walks at least this many times, and on until every churner is done.
#[cfg(not(miri))]
const MIN_WALKS: u64 = 16;
#[cfg(miri)]
const MIN_WALKS: u64 = 2;

fn ivs() -> [Interval; 5] {
    rmap::bench::libc_like_intervals()
}

fn check(m: Arc<dyn ReverseMap>, label: &str) {
    // Resident entries: ids 0..5*RESIDENT, never removed.
    for p in 0..RESIDENT {
        for (k, iv) in ivs().iter().enumerate() {
            m.insert(*iv, p * 5 + k as u64).unwrap();
        }
    }
    // Counts churners still running; the walker walks until it reaches 0.
    let running = Arc::new(AtomicUsize::new(CHURNERS));
    // removed_upto[t]: every id of thread t with counter < this was removed.
    let removed_upto: Arc<Vec<AtomicU64>> =
        Arc::new((0..CHURNERS).map(|_| AtomicU64::new(0)).collect());
    let mut joins = Vec::new();
    for t in 0..CHURNERS {
        let (m, running, removed_upto) = (m.clone(), running.clone(), removed_upto.clone());
        joins.push(std::thread::spawn(move || {
            let base = (t as u64 + 1) << 40;
            let mut n = 0u64;
            let mut hs = Vec::new();
            while n < ROUNDS {
                hs.clear();
                let items: Vec<_> = ivs()
                    .iter()
                    .enumerate()
                    .map(|(k, iv)| (*iv, base + n * 8 + k as u64))
                    .collect();
                if n % 2 == 0 {
                    m.insert_batch(&items, &mut hs).unwrap();
                } else {
                    for &(iv, v) in &items {
                        hs.push(m.insert(iv, v).unwrap());
                    }
                }
                if n % 3 == 0 {
                    // A fork: child next to the parent, removed with it.
                    let c = m.insert_after(hs[1], ivs()[1], base + n * 8 + 5).unwrap();
                    hs.push(c);
                }
                if n % 2 == 1 {
                    m.remove_batch(&hs).unwrap();
                } else {
                    for h in &hs {
                        m.remove(*h).unwrap();
                    }
                }
                n += 1;
                // SeqCst: the walker's snapshot of this must order after
                // the removals above (they are done when this is seen).
                removed_upto[t].store(n, Ordering::SeqCst);
            }
            // Relaxed: only ends the walker's loop; join() orders the rest.
            running.fetch_sub(1, Ordering::Relaxed);
        }));
    }
    let mut walks = 0u64;
    // Relaxed: a loop condition; what a walk checks is ordered by SeqCst above.
    while walks < MIN_WALKS || running.load(Ordering::Relaxed) > 0 {
        for concurrent in [false, true] {
            let snap: Vec<u64> = removed_upto
                .iter()
                .map(|a| a.load(Ordering::SeqCst))
                .collect();
            let mut seen = HashSet::new();
            let mut count = 0usize;
            let mut lens = HashSet::new();
            let range = if walks % 2 == 0 {
                Interval::FULL
            } else {
                ivs()[1]
            };
            let mut f = |_: Interval, v: u64| {
                count += 1;
                assert!(seen.insert(v), "{label}: {v:#x} visited twice");
                if v >= 1 << 40 {
                    let t = ((v >> 40) - 1) as usize;
                    let n = (v & ((1 << 40) - 1)) / 8;
                    assert!(
                        n >= snap[t],
                        "{label}: {v:#x} was removed before the walk began"
                    );
                }
                if !concurrent {
                    lens.insert(m.len());
                }
            };
            if concurrent {
                m.walk_concurrent(range, &mut f);
            } else {
                m.walk(range, &mut f);
            }
            let per = if range == Interval::FULL { 5 } else { 1 };
            let resident = (0..RESIDENT * 5)
                .filter(|v| per == 5 || v % 5 == 1)
                .filter(|v| seen.contains(v))
                .count();
            assert_eq!(
                resident as u64,
                RESIDENT * per,
                "{label}: a resident entry was missed"
            );
            if !concurrent {
                assert_eq!(
                    lens.len(),
                    1,
                    "{label}: len changed during a stable walk: {lens:?}"
                );
                if range == Interval::FULL {
                    assert_eq!(
                        lens.into_iter().next(),
                        Some(count),
                        "{label}: a stable full walk saw len() entries"
                    );
                }
            }
            walks += 1;
        }
    }
    for j in joins {
        j.join().unwrap();
    }
    // Every churned entry was removed again: only the residents remain, and
    // a final stable walk sees exactly them.
    assert_eq!(m.len() as u64, RESIDENT * 5, "{label}");
    let mut left = HashSet::new();
    m.walk(Interval::FULL, &mut |_, v| {
        assert!(left.insert(v), "{label}: {v:#x} visited twice");
    });
    assert_eq!(left, (0..RESIDENT * 5).collect(), "{label}: final set");
}

#[test]
fn churn_with_walkers_every_design() {
    for d in Design::ALL {
        check(d.build_arc(&Topology::Os), &format!("{d}/os"));
        check(
            d.build_arc(&Topology::Emulated {
                nodes: 4,
                cpus_per_node: 4,
            }),
            &format!("{d}/4x4"),
        );
    }
}

/// The same churn on every design with the rwsem-like locks
/// (`aspace bench --lock rwsem`): maps made while the setting is on keep
/// those locks (their spinning, sleeping and hand-off paths all run here).
#[test]
fn churn_with_walkers_every_design_on_rwsem_locks() {
    let was = rmap::set_lock_impl(rmap::LockImpl::Rwsem);
    let maps: Vec<(Arc<dyn ReverseMap>, String)> = Design::ALL
        .iter()
        .flat_map(|d| {
            [
                (d.build_arc(&Topology::Os), format!("{d}/os/rwsem")),
                (
                    d.build_arc(&Topology::Emulated {
                        nodes: 4,
                        cpus_per_node: 4,
                    }),
                    format!("{d}/4x4/rwsem"),
                ),
            ]
        })
        .collect();
    rmap::set_lock_impl(was);
    for (m, label) in maps {
        check(m, &label);
    }
}

#[test]
fn aspace_promoted_churn() {
    let a = Aspace::new(Topology::Emulated {
        nodes: 2,
        cpus_per_node: 2,
    });
    a.promote();
    check(Arc::new(a), "aspace/promoted");
}

#[test]
fn aspace_promotes_under_contention_and_keeps_handles() {
    // Handles taken while central must stay valid after promotion.
    let a = Arc::new(Aspace::new(Topology::Emulated {
        nodes: 1,
        cpus_per_node: 4,
    }));
    let early: Vec<_> = (0..100).map(|v| a.insert(ivs()[0], v).unwrap()).collect();
    // Bounded by count: a machine that never contends (one core, Miri)
    // stops after this many rounds and promotes by hand below.
    let rounds: u64 = if cfg!(miri) { 20 } else { 200_000 };
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let a = a.clone();
            std::thread::spawn(move || {
                let mut n = 0;
                while !a.is_promoted() && n < rounds {
                    let h = a.insert(ivs()[2], (t << 40) + n).unwrap();
                    a.remove(h).unwrap();
                    n += 1;
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    if !a.is_promoted() {
        // A 1-core machine may never contend; force it and still check handles.
        a.promote();
    }
    assert_eq!(a.len(), 100);
    a.remove_batch(&early[..50]).unwrap();
    for h in &early[50..] {
        a.remove(*h).unwrap();
    }
    assert!(a.is_empty());
    assert!(a.stats().shards >= 1);
}
