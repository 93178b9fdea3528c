//! Loom models of the publish/read protocol.
//!
//! Run with
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p aspace-maple --release --test loom`
//! (a separate target dir keeps the loom build from invalidating the normal one).
//!
//! Two kinds of model:
//!
//! 1. The real tree (`aspace_maple::MapleTree`): under `cfg(loom)` every atomic of
//!    the crate (root, counters, child pointers, gaps, value slots, the
//!    recycler) is a loom atomic, so loom explores every interleaving of a
//!    writer's publish, leaf swap or exact fit with a reader's walk (one
//!    leaf; one leaf splitting into a root and two leaves; a two-level tree
//!    with a leaf swap and an exact fit; a tree emptied), and of the
//!    recycling of retired blocks with the writer's reuse of them. Pivots
//!    and counts are plain memory the crate never mutates after
//!    publication.
//! 2. A reduced copy of the protocol with every node field in a loom
//!    `UnsafeCell`: the writer copies a leaf, fills it, and publishes it with
//!    one Release store; readers Acquire-load and read the fields. Loom's
//!    cell tracking reports any read of a field not ordered after its write,
//!    which the real tree cannot show (its node memory is not loom-tracked).
//!    Freeing is deferred until every reader has finished, as an epoch would.
#![cfg(loom)]

use loom::sync::atomic::{AtomicPtr, Ordering};
use loom::sync::Arc;
use loom::thread;

use aspace_maple::MapleTree;

fn entry(t: &MapleTree<u64>, i: u64) -> Option<(u64, u64, u64)> {
    t.load(i).map(|e| (e.first(), e.last(), *e))
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    // Node fields (child pointers, gaps, value slots) are loom atomics too,
    // so one execution of a write makes hundreds of atomic accesses.
    b.max_branches = 100_000;
    b.check(f);
}

/// A store that splits an entry, racing a reader: each load sees the entry
/// from before the store or after it, never a mix.
#[test]
fn split_store_vs_load() {
    model(|| {
        let t = Arc::new(MapleTree::new());
        t.store_range(0, 9, 1u64).unwrap();
        let r = {
            let t = t.clone();
            thread::spawn(move || {
                let a = entry(&t, 5);
                assert!(a == Some((0, 9, 1)) || a == Some((5, 5, 2)), "{a:?}");
                let b = entry(&t, 7);
                assert!(b == Some((0, 9, 1)) || b == Some((6, 9, 1)), "{b:?}");
                // once the reader has seen the new version it never sees the old one
                if a == Some((5, 5, 2)) {
                    assert_eq!(b, Some((6, 9, 1)));
                }
                let snap = t.reader();
                let all: Vec<(u64, u64, u64)> = snap
                    .iter()
                    .map(|(r, v)| (*r.start(), *r.end(), *v))
                    .collect();
                assert!(
                    all == vec![(0, 9, 1)] || all == vec![(0, 4, 1), (5, 5, 2), (6, 9, 1)],
                    "{all:?}"
                );
                assert_eq!(snap.len(), all.len());
            })
        };
        t.store_range(5, 5, 2).unwrap();
        r.join().unwrap();
        assert_eq!(entry(&t, 3), Some((0, 4, 1)));
        assert_eq!(t.len(), 3);
    });
}

/// The writer fills a leaf past its 16 slots, so the root splits into an
/// internal node over two leaves; the reader still finds every old entry.
#[test]
fn root_split_vs_reader() {
    model(|| {
        let t = Arc::new(MapleTree::new());
        for i in 0..16u64 {
            t.try_insert(i * 2, i).unwrap();
        }
        let r = {
            let t = t.clone();
            thread::spawn(move || {
                assert_eq!(entry(&t, 30), Some((30, 30, 15)));
                assert_eq!(entry(&t, 0), Some((0, 0, 0)));
                let snap = t.reader();
                let n = snap.iter().count();
                assert!(n == 16 || n == 17 || n == 18, "{n}");
                let olds = snap
                    .iter()
                    .filter(|(r, v)| *r.start() == **v * 2 && **v < 16)
                    .count();
                assert_eq!(olds, 16, "an old entry went missing during the split");
                // A Reader is not a snapshot: a leaf swap completed after
                // the iteration may be seen by the gap search. Once the
                // iteration saw insert(1), though, later reads see it too
                // (the child pointer is read with acquire; coherence).
                let saw_one = snap.iter().any(|(r, _)| *r.start() == 1);
                let gap = snap.empty_area(0, 40, 1);
                if saw_one {
                    assert_eq!(gap, Ok(3), "insert(1) seen, then lost");
                } else {
                    assert!(gap == Ok(1) || gap == Ok(3), "{gap:?}");
                }
            })
        };
        t.try_insert(1, 100).unwrap();
        t.try_insert(33, 101).unwrap();
        r.join().unwrap();
        assert_eq!(t.len(), 18);
        assert_eq!(entry(&t, 1), Some((1, 1, 100)));
    });
}

/// Erasing the only entry (the root becomes empty) against a reader holding
/// an `Entry`: the value stays readable after the erase.
#[test]
fn erase_last_vs_reader() {
    model(|| {
        let t = Arc::new(MapleTree::new());
        t.store_range(10, 20, 7u64).unwrap();
        let r = {
            let t = t.clone();
            thread::spawn(move || {
                if let Some(e) = t.load(15) {
                    assert_eq!((e.first(), e.last()), (10, 20));
                    thread::yield_now();
                    assert_eq!(*e, 7);
                }
                let f = t.find(0).map(|e| *e);
                assert!(f.is_none() || f == Some(7));
            })
        };
        let gone = t.erase(12).map(|e| *e);
        assert_eq!(gone, Some(7));
        r.join().unwrap();
        assert!(t.is_empty());
    });
}

/// A two-level tree (a root over leaves): a reader races a leaf swap (a
/// store inside one leaf that keeps its bounds: the new leaf is published
/// by one release store of the parent's child pointer) and an exact fit
/// (one release store of a value slot). Each load sees a whole version of
/// the leaf, and once it has seen a write it never sees the value before.
#[test]
fn two_level_leaf_swap_and_exact_fit_vs_reader() {
    model(|| {
        let t = Arc::new(MapleTree::new());
        // 12 entries with a gap after each: 25 slots, two leaves under a root.
        for i in 0..12u64 {
            t.store_range(i * 10, i * 10 + 4, i).unwrap();
        }
        let r = {
            let t = t.clone();
            thread::spawn(move || {
                let a = entry(&t, 22);
                assert!(
                    a == Some((20, 24, 2)) || a == Some((20, 22, 100)) || a == Some((20, 22, 200)),
                    "{a:?}"
                );
                let b = entry(&t, 21);
                match a {
                    Some((20, 22, 100)) => {
                        assert!(
                            b == Some((20, 22, 100)) || b == Some((20, 22, 200)),
                            "{b:?}"
                        )
                    }
                    Some((20, 22, 200)) => assert_eq!(b, Some((20, 22, 200))),
                    _ => {}
                }
                let c = entry(&t, 23);
                assert!(c == Some((20, 24, 2)) || c == Some((23, 24, 2)), "{c:?}");
            })
        };
        // Leaf swap: [20, 22] cut out of [20, 24] inside the first leaf.
        t.store_range(20, 22, 100).unwrap();
        // Exact fit: the same bounds again.
        t.store_range(20, 22, 200).unwrap();
        r.join().unwrap();
        assert_eq!(entry(&t, 21), Some((20, 22, 200)));
        assert_eq!(entry(&t, 24), Some((23, 24, 2)));
        t.validate().unwrap();
    });
}

/// The recycle path: a reclaimer thread runs the deferred work of completed
/// writes (pushing their retire lists onto the tree's recycler with a
/// release CAS) while the writer keeps writing, taking recycled blocks with
/// an acquire swap when its pool runs dry and reusing them as nodes. No
/// reader exists, so recycling early is allowed. Every block reused must be
/// one nobody else uses: the tree stays valid with the right contents.
#[test]
fn recycle_races_the_writer() {
    model(|| {
        let t = Arc::new(MapleTree::new());
        for i in 0..12u64 {
            t.store_range(i * 10, i * 10 + 4, i).unwrap();
        }
        t.store_range(50, 52, 50).unwrap();
        let reclaimer = {
            let t = t.clone();
            // SAFETY: no reader in this model.
            thread::spawn(move || unsafe { t.loom_reclaim() })
        };
        t.store_range(60, 62, 60).unwrap();
        t.store_range(70, 72, 70).unwrap();
        reclaimer.join().unwrap();
        // SAFETY: as above.
        unsafe { t.loom_reclaim() };
        t.store_range(80, 82, 80).unwrap();
        for (i, want) in [(51, 50), (61, 60), (71, 70), (81, 80), (93, 9), (110, 11)] {
            assert_eq!(t.load(i).map(|e| *e), Some(want), "load({i})");
        }
        assert_eq!(t.len(), 12 + 4);
        t.validate().unwrap();
    });
}

// ---------------------------------------------------------------------------
// The reduced protocol, with loom-tracked node memory.
// ---------------------------------------------------------------------------

mod reduced {
    use loom::cell::UnsafeCell;

    /// A leaf of two ranges: `pivot` splits it, `vals` hold a generation each.
    pub struct Leaf {
        pub pivot: UnsafeCell<u64>,
        pub vals: [UnsafeCell<u64>; 2],
    }

    impl Leaf {
        pub fn new(pivot: u64, a: u64, b: u64) -> *mut Leaf {
            Box::into_raw(Box::new(Leaf {
                pivot: UnsafeCell::new(pivot),
                vals: [UnsafeCell::new(a), UnsafeCell::new(b)],
            }))
        }
    }
}

/// A writer copies the leaf, changes the copy, and publishes it with one
/// Release store; the reader Acquire-loads and must see a whole version:
/// `(pivot, a, b)` is one of the versions written, and later loads never go
/// back to an older version.
#[test]
fn reduced_copy_on_write_publish() {
    use reduced::Leaf;
    model(|| {
        let root = Arc::new(AtomicPtr::new(Leaf::new(10, 1, 1)));
        let r = {
            let root = root.clone();
            thread::spawn(move || {
                let mut seen = 0;
                for _ in 0..2 {
                    let p = root.load(Ordering::Acquire);
                    // SAFETY: nodes are freed only after the reader is joined.
                    let leaf = unsafe { &*p };
                    let pivot = leaf.pivot.with(|x| unsafe { *x });
                    let a = leaf.vals[0].with(|x| unsafe { *x });
                    let b = leaf.vals[1].with(|x| unsafe { *x });
                    let version = match (pivot, a, b) {
                        (10, 1, 1) => 1,
                        (5, 1, 2) => 2,
                        (5, 3, 2) => 3,
                        v => panic!("torn node {v:?}"),
                    };
                    assert!(
                        version >= seen,
                        "went back from version {seen} to {version}"
                    );
                    seen = version;
                }
            })
        };
        let mut retired = Vec::new();
        for (pivot, a, b) in [(5, 1, 2), (5, 3, 2)] {
            let old = root.load(Ordering::Relaxed); // only the writer stores
            let new = Leaf::new(0, 0, 0);
            // SAFETY: `new` is not published yet: this thread owns it.
            unsafe {
                (*new).pivot.with_mut(|x| *x = pivot);
                (*new).vals[0].with_mut(|x| *x = a);
                (*new).vals[1].with_mut(|x| *x = b);
            }
            root.store(new, Ordering::Release);
            retired.push(old);
        }
        r.join().unwrap();
        // the grace period is over: free the replaced versions and the last one
        retired.push(root.load(Ordering::Relaxed));
        for p in retired {
            // SAFETY: every reader has finished; each pointer came from Box::into_raw once.
            drop(unsafe { Box::from_raw(p) });
        }
    });
}
