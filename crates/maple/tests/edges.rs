//! Unit tests for the edges: the extreme indices, adjacent and nested ranges,
//! splits, the last entry, trees of 1, 16, 17 and 10^5 entries, every bad
//! input, gap search fits, and the memory accounting.

use std::ops::RangeInclusive;

use aspace_maple::{MapleError, MapleTree, WriteError};

mod common;
use common::Rng;

const MAX: u64 = u64::MAX;

fn entries<T: Clone + Send + Sync + 'static>(t: &MapleTree<T>) -> Vec<(RangeInclusive<u64>, T)> {
    t.reader().iter().map(|(r, v)| (r, v.clone())).collect()
}

fn load<T: Clone + Send + Sync + 'static>(
    t: &MapleTree<T>,
    i: u64,
) -> Option<(RangeInclusive<u64>, T)> {
    t.load(i).map(|e| (e.range(), e.value().clone()))
}

fn find<T: Clone + Send + Sync + 'static>(
    t: &MapleTree<T>,
    i: u64,
) -> Option<(RangeInclusive<u64>, T)> {
    t.find(i).map(|e| (e.range(), e.value().clone()))
}

fn prev<T: Clone + Send + Sync + 'static>(
    t: &MapleTree<T>,
    i: u64,
) -> Option<(RangeInclusive<u64>, T)> {
    t.prev(i).map(|e| (e.range(), e.value().clone()))
}

#[test]
fn send_sync_default() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<MapleTree<u64>>();
    assert_send_sync::<MapleTree<String>>();
    assert_send_sync::<MapleTree<std::sync::Arc<u64>, aspace_maple::Inline>>();
    let t: MapleTree<u64> = MapleTree::default();
    assert!(t.is_empty());
    assert_eq!(t.len(), 0);
}

#[test]
fn empty_tree() {
    let t: MapleTree<u64> = MapleTree::new();
    for i in [0, 1, 1 << 63, MAX - 1, MAX] {
        assert!(t.load(i).is_none());
        assert!(t.find(i).is_none());
        assert!(t.prev(i).is_none());
        assert!(t.erase(i).is_none());
    }
    assert!(t.reader().iter().next().is_none());
    assert!(t.reader().iter().next_back().is_none());
    assert!(t.reader().range(0, MAX).next().is_none());
    assert_eq!(t.reader().len(), 0);
    // Gap search on an empty tree: the whole space is free.
    assert_eq!(t.empty_area(0, MAX, 1), Ok(0));
    assert_eq!(t.empty_area_rev(0, MAX, 1), Ok(MAX));
    assert_eq!(t.empty_area(0, MAX, MAX), Ok(0));
    assert_eq!(t.empty_area_rev(0, MAX, MAX), Ok(1));
    assert_eq!(t.empty_area(100, 200, 101), Ok(100));
    assert_eq!(t.empty_area_rev(100, 200, 101), Ok(100));
    assert_eq!(t.empty_area(100, 200, 10), Ok(100));
    assert_eq!(t.empty_area_rev(100, 200, 10), Ok(191));
    assert_eq!(t.empty_area(MAX, MAX, 1), Ok(MAX));
    assert_eq!(t.empty_area_rev(0, 0, 1), Ok(0));
    let mut t = t;
    assert!(t.remove(5).is_none());
    let mut c = t.cursor_mut();
    assert!(c.walk(5).is_none());
    assert!(c.next().is_none());
    assert!(c.walk(5).is_none());
    assert!(c.prev().is_none());
    assert!(c.erase().is_none());
    drop(c);
    assert_eq!(t.memory_usage().entries, 0);
}

#[test]
fn index_zero() {
    let t = MapleTree::new();
    t.store_range(0, 0, 7u64).unwrap();
    assert_eq!(t.len(), 1);
    assert_eq!(load(&t, 0), Some((0..=0, 7)));
    assert_eq!(load(&t, 1), None);
    assert_eq!(find(&t, 0), Some((0..=0, 7)));
    assert_eq!(find(&t, 1), None);
    assert_eq!(prev(&t, 0), Some((0..=0, 7)));
    assert_eq!(prev(&t, MAX), Some((0..=0, 7)));
    assert_eq!(t.empty_area(0, MAX, 1), Ok(1));
    assert_eq!(t.empty_area(0, MAX, MAX), Ok(1));
    assert_eq!(t.empty_area_rev(0, MAX, MAX), Ok(1));
    assert_eq!(
        t.empty_area(0, 0, 1),
        Err(MapleError::NoSpace {
            min: 0,
            max: 0,
            size: 1
        })
    );
    assert_eq!(
        t.try_insert(0, 1).unwrap_err().kind,
        MapleError::Occupied { first: 0, last: 0 }
    );
    assert_eq!(t.erase(0).map(|e| (e.range(), *e)), Some((0..=0, 7)));
    assert!(t.is_empty());
}

#[test]
fn index_max() {
    let t = MapleTree::new();
    t.store_range(MAX, MAX, 9u64).unwrap();
    assert_eq!(t.len(), 1);
    assert_eq!(load(&t, MAX), Some((MAX..=MAX, 9)));
    assert_eq!(load(&t, MAX - 1), None);
    assert_eq!(find(&t, 0), Some((MAX..=MAX, 9)));
    assert_eq!(find(&t, MAX), Some((MAX..=MAX, 9)));
    assert_eq!(prev(&t, MAX), Some((MAX..=MAX, 9)));
    assert_eq!(prev(&t, MAX - 1), None);
    assert_eq!(t.empty_area_rev(0, MAX, 1), Ok(MAX - 1));
    assert_eq!(t.empty_area(0, MAX, MAX), Ok(0));
    assert_eq!(t.empty_area_rev(0, MAX, MAX), Ok(0));
    assert_eq!(
        t.empty_area(MAX, MAX, 1),
        Err(MapleError::NoSpace {
            min: MAX,
            max: MAX,
            size: 1
        })
    );
    // both ends taken: nothing of size MAX fits any more
    t.try_insert(0, 1).unwrap();
    assert_eq!(
        t.empty_area(0, MAX, MAX),
        Err(MapleError::NoSpace {
            min: 0,
            max: MAX,
            size: MAX
        })
    );
    assert_eq!(t.empty_area(0, MAX, MAX - 1), Ok(1));
    assert_eq!(t.empty_area_rev(0, MAX, MAX - 1), Ok(1));
    assert_eq!(
        t.alloc_range_rev(0, MAX, 1, 3).map_err(|e| e.kind),
        Ok(MAX - 1)
    );
    assert_eq!(load(&t, MAX - 1), Some((MAX - 1..=MAX - 1, 3)));
    assert_eq!(
        entries(&t),
        vec![(0..=0, 1), (MAX - 1..=MAX - 1, 3), (MAX..=MAX, 9)]
    );
    let snap = t.reader();
    assert_eq!(
        snap.iter().next_back().map(|(r, v)| (r, *v)),
        Some((MAX..=MAX, 9))
    );
    assert_eq!(
        snap.range(MAX, MAX)
            .map(|(r, v)| (r, *v))
            .collect::<Vec<_>>(),
        vec![(MAX..=MAX, 9)]
    );
    drop(snap);
    let mut t = t;
    let mut c = t.cursor_mut();
    assert_eq!(c.walk(MAX).map(|(r, v)| (r, *v)), Some((MAX..=MAX, 9)));
    assert!(c.next().is_none(), "nothing after u64::MAX");
    drop(c);
    assert_eq!(t.take(MAX), Some((MAX..=MAX, 9)));
    assert_eq!(t.len(), 2);
}

#[test]
fn whole_space() {
    let t = MapleTree::new();
    t.store_range(0, MAX, 1u64).unwrap();
    assert_eq!(t.len(), 1);
    for i in [0, 1, 1 << 40, MAX - 1, MAX] {
        assert_eq!(load(&t, i), Some((0..=MAX, 1)));
    }
    assert_eq!(
        t.empty_area(0, MAX, 1),
        Err(MapleError::NoSpace {
            min: 0,
            max: MAX,
            size: 1
        })
    );
    assert_eq!(
        t.empty_area_rev(0, MAX, 1),
        Err(MapleError::NoSpace {
            min: 0,
            max: MAX,
            size: 1
        })
    );
    let e = t.insert_range(5, 6, 2).unwrap_err();
    assert!(matches!(e.kind, MapleError::Occupied { .. }));
    assert_eq!(e.into_value(), 2);
    // a store inside splits the whole-space entry into three
    t.store(1 << 40, 2).unwrap();
    assert_eq!(
        entries(&t),
        vec![
            (0..=(1 << 40) - 1, 1),
            (1 << 40..=1 << 40, 2),
            ((1 << 40) + 1..=MAX, 1)
        ]
    );
    // store at both ends trims
    t.store(0, 3).unwrap();
    t.store(MAX, 4).unwrap();
    assert_eq!(
        entries(&t),
        vec![
            (0..=0, 3),
            (1..=(1 << 40) - 1, 1),
            (1 << 40..=1 << 40, 2),
            ((1 << 40) + 1..=MAX - 1, 1),
            (MAX..=MAX, 4)
        ]
    );
    // and a whole-space store replaces everything
    t.store_range(0, MAX, 5).unwrap();
    assert_eq!(entries(&t), vec![(0..=MAX, 5)]);
    assert_eq!(t.erase(12345).map(|e| e.range()), Some(0..=MAX));
    assert!(t.is_empty());
    assert_eq!(t.empty_area(0, MAX, MAX), Ok(0));
}

#[test]
fn adjacent_ranges() {
    let t = MapleTree::new();
    t.insert_range(10, 19, 1u64).unwrap();
    t.insert_range(30, 39, 3).unwrap();
    t.insert_range(20, 29, 2).unwrap();
    assert_eq!(entries(&t), vec![(10..=19, 1), (20..=29, 2), (30..=39, 3)]);
    for (i, want) in [
        (9, None),
        (10, Some(1)),
        (19, Some(1)),
        (20, Some(2)),
        (29, Some(2)),
        (30, Some(3)),
        (39, Some(3)),
        (40, None),
    ] {
        assert_eq!(load(&t, i).map(|e| e.1), want, "load({i})");
    }
    assert_eq!(find(&t, 0), Some((10..=19, 1)));
    assert_eq!(find(&t, 20), Some((20..=29, 2)));
    assert_eq!(find(&t, 40), None);
    assert_eq!(prev(&t, 9), None);
    assert_eq!(prev(&t, 19), Some((10..=19, 1)));
    assert_eq!(prev(&t, 1000), Some((30..=39, 3)));
    // no gap between them
    assert_eq!(
        t.empty_area(10, 39, 1),
        Err(MapleError::NoSpace {
            min: 10,
            max: 39,
            size: 1
        })
    );
    assert_eq!(t.empty_area(5, 45, 6), Ok(40));
    assert_eq!(t.empty_area_rev(5, 45, 5), Ok(41));
    assert_eq!(t.empty_area_rev(5, 45, 6), Ok(40));
    // inserting one index into an adjacent range fails, at either edge
    for i in [10, 19, 20, 29, 30, 39] {
        assert!(matches!(
            t.try_insert(i, 0).unwrap_err().kind,
            MapleError::Occupied { .. }
        ));
    }
    assert!(matches!(
        t.insert_range(0, 10, 0).unwrap_err().kind,
        MapleError::Occupied { .. }
    ));
    assert!(matches!(
        t.insert_range(39, 50, 0).unwrap_err().kind,
        MapleError::Occupied { .. }
    ));
    t.insert_range(0, 9, 0).unwrap();
    t.insert_range(40, 50, 4).unwrap();
    assert_eq!(t.len(), 5);
    // a store exactly over a middle entry replaces it without touching the neighbours
    t.store_range(20, 29, 22).unwrap();
    assert_eq!(
        entries(&t),
        vec![
            (0..=9, 0),
            (10..=19, 1),
            (20..=29, 22),
            (30..=39, 3),
            (40..=50, 4)
        ]
    );
    // a store spanning parts of three entries
    t.store_range(15, 35, 5).unwrap();
    assert_eq!(
        entries(&t),
        vec![
            (0..=9, 0),
            (10..=14, 1),
            (15..=35, 5),
            (36..=39, 3),
            (40..=50, 4)
        ]
    );
}

#[test]
fn nested_ranges_and_split() {
    let t = MapleTree::new();
    t.store_range(0, 99, String::from("outer")).unwrap();
    t.store_range(10, 19, String::from("inner")).unwrap();
    assert_eq!(
        entries(&t),
        vec![
            (0..=9, "outer".to_string()),
            (10..=19, "inner".to_string()),
            (20..=99, "outer".to_string())
        ]
    );
    assert_eq!(t.len(), 3);
    // nested again, inside the right remnant
    t.store_range(50, 50, String::from("x")).unwrap();
    assert_eq!(t.len(), 5);
    assert_eq!(load(&t, 49).unwrap(), (20..=49, "outer".to_string()));
    assert_eq!(load(&t, 51).unwrap(), (51..=99, "outer".to_string()));
    // a store that swallows nested entries whole
    t.store_range(5, 60, String::from("big")).unwrap();
    assert_eq!(
        entries(&t),
        vec![
            (0..=4, "outer".to_string()),
            (5..=60, "big".to_string()),
            (61..=99, "outer".to_string())
        ]
    );
    // split at the very edges: first index and last index of an entry
    t.store(5, String::from("l")).unwrap();
    t.store(60, String::from("r")).unwrap();
    assert_eq!(
        entries(&t).into_iter().map(|(r, _)| r).collect::<Vec<_>>(),
        vec![0..=4, 5..=5, 6..=59, 60..=60, 61..=99]
    );
    // erase removes the whole entry containing the index, not just the index
    assert_eq!(t.erase(30).map(|e| e.range()), Some(6..=59));
    assert_eq!(load(&t, 6), None);
    assert_eq!(load(&t, 59), None);
    assert_eq!(t.len(), 4);
    assert_eq!(t.empty_area(0, 1000, 54), Ok(6));
    assert_eq!(t.empty_area(0, 1000, 55), Ok(100));
}

#[test]
fn erase_last_entry() {
    for (f, l) in [(0, 0), (5, 10), (MAX, MAX), (0, MAX)] {
        let mut t = MapleTree::new();
        t.store_range(f, l, 1u64).unwrap();
        assert_eq!(t.erase(l).map(|e| e.range()), Some(f..=l));
        assert!(t.is_empty());
        assert_eq!(t.len(), 0);
        assert!(t.load(f).is_none());
        assert!(t.find(0).is_none());
        assert!(t.prev(MAX).is_none());
        assert!(t.reader().iter().next().is_none());
        assert_eq!(t.empty_area(0, MAX, MAX), Ok(0));
        // and the tree is usable again
        t.insert_range(f, l, 2).unwrap();
        assert_eq!(t.take(f), Some((f..=l, 2)));
        assert!(t.is_empty());
        t.insert_range(f, l, 3).unwrap();
        assert_eq!(t.len(), 1);
        let mut c = t.cursor_mut();
        c.walk(f);
        assert_eq!(c.erase(), Some(f..=l));
        drop(c);
        assert!(t.is_empty());
        assert!(t.reader().iter().next_back().is_none());
    }
}

/// Builds a tree of `n` ranges `[3i, 3i+1]` (value `i`), leaving index `3i+2`
/// free, in the given insertion order, and checks every entry and gap.
fn sized_tree(n: u64, order: &[u64], exclusive: bool) {
    let mut t = MapleTree::new();
    for (k, &i) in order.iter().enumerate() {
        if exclusive && k % 2 == 1 {
            t.cursor_mut().store_range(3 * i, 3 * i + 1, i).unwrap();
        } else {
            t.store_range(3 * i, 3 * i + 1, i).unwrap();
        }
    }
    assert_eq!(t.len() as u64, n);
    for i in 0..n {
        assert_eq!(
            load(&t, 3 * i),
            Some((3 * i..=3 * i + 1, i)),
            "load({})",
            3 * i
        );
        assert_eq!(load(&t, 3 * i + 1), Some((3 * i..=3 * i + 1, i)));
        assert_eq!(load(&t, 3 * i + 2), None, "gap at {}", 3 * i + 2);
        assert_eq!(
            find(&t, 3 * i + 2).map(|e| e.1),
            (i + 1 < n).then_some(i + 1)
        );
        assert_eq!(prev(&t, 3 * i + 2).map(|e| e.1), Some(i));
    }
    let all = entries(&t);
    assert_eq!(all.len() as u64, n);
    assert!(all
        .iter()
        .enumerate()
        .all(|(k, (r, v))| *v == k as u64 && *r == (3 * k as u64..=3 * k as u64 + 1)));
    let back: Vec<u64> = t.reader().iter().rev().map(|(_, v)| *v).collect();
    assert!(back.iter().rev().copied().eq(0..n));
    assert_eq!(t.reader().range(3, 3 * n).count() as u64, n - 1);
    // gaps: every third index is a 1-gap; the first 2-gap is after the last entry
    assert_eq!(t.empty_area(0, MAX, 1), Ok(2));
    assert_eq!(t.empty_area(4, MAX, 1), Ok(if n >= 2 { 5 } else { 4 }));
    assert_eq!(t.empty_area(0, MAX, 2), Ok(3 * n - 1));
    if n >= 2 {
        assert_eq!(t.empty_area_rev(0, 3 * n - 2, 1), Ok(3 * n - 4));
    }
    assert_eq!(
        t.empty_area_rev(0, 3 * n - 2, 2),
        Err(MapleError::NoSpace {
            min: 0,
            max: 3 * n - 2,
            size: 2
        })
    );
    assert_eq!(t.empty_area_rev(0, MAX, 1), Ok(MAX));
    let usage = t.memory_usage();
    assert_eq!(usage.entries as u64, n);
    assert!(usage.nodes > 0);
    assert_eq!(usage.node_bytes, usage.nodes * 256);
    assert!(
        usage.nodes as u64 >= n.div_ceil(16),
        "{usage:?}: a node holds at most 16 entries"
    );
    assert!(
        usage.nodes as u64 <= n.max(2),
        "{usage:?}: more nodes than entries"
    );
    // a copy is equal
    assert_eq!(entries(&t.dup()), all);
    // erase in a shuffled order, checking the neighbours survive
    let mut rng = Rng(n);
    let mut del: Vec<u64> = (0..n).collect();
    rng.shuffle(&mut del);
    for (k, &i) in del.iter().enumerate() {
        let idx = 3 * i + (k as u64 % 2);
        if k % 3 == 0 {
            assert_eq!(t.take(idx), Some((3 * i..=3 * i + 1, i)));
        } else {
            assert_eq!(
                t.erase(idx).map(|e| (e.range(), *e)),
                Some((3 * i..=3 * i + 1, i))
            );
        }
        assert_eq!(t.len() as u64, n - 1 - k as u64);
        if i > 0 && k % 7 == 0 {
            let left = load(&t, 3 * i - 3);
            assert!(left.is_none() || left == Some((3 * i - 3..=3 * i - 2, i - 1)));
        }
    }
    assert!(t.is_empty());
    assert!(t.reader().iter().next().is_none());
    assert_eq!(t.empty_area(0, MAX, MAX), Ok(0));
}

fn sizes() -> Vec<u64> {
    if cfg!(miri) {
        // 120 entries and their gaps still make a tree of internal nodes;
        // 200 cost ~2.5 CPU-minutes over the two tests that use these.
        vec![1, 16, 17, 120]
    } else {
        vec![1, 2, 15, 16, 17, 160, 161, 1_000, 100_000]
    }
}

#[test]
fn trees_sequential() {
    for n in sizes() {
        let order: Vec<u64> = (0..n).collect();
        sized_tree(n, &order, false);
        sized_tree(n, &order, true);
    }
}

#[test]
fn trees_reverse_and_random() {
    for n in sizes() {
        let order: Vec<u64> = (0..n).rev().collect();
        sized_tree(n, &order, false);
        let mut order: Vec<u64> = (0..n).collect();
        Rng(n * 31).shuffle(&mut order);
        sized_tree(n, &order, false);
        sized_tree(n, &order, true);
    }
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let mut t = MapleTree::new();
    t.store_range(10, 19, String::from("a")).unwrap();
    t.store_range(40, 49, String::from("b")).unwrap();
    let before = entries(&t);
    let same = |t: &MapleTree<String>| assert_eq!(entries(t), before);
    let val = || String::from("value");

    // first > last
    let e: WriteError<String> = t.store_range(5, 4, val()).unwrap_err();
    assert_eq!(e.kind, MapleError::InvertedRange { first: 5, last: 4 });
    assert_eq!(e.value, "value");
    same(&t);
    let e = t.insert_range(MAX, 0, val()).unwrap_err();
    assert_eq!(
        e.kind,
        MapleError::InvertedRange {
            first: MAX,
            last: 0
        }
    );
    assert_eq!(e.into_value(), "value");
    // inverted and overlapping an entry: still the inverted error
    let e = t.insert_range(19, 10, val()).unwrap_err();
    assert_eq!(
        e.kind,
        MapleError::InvertedRange {
            first: 19,
            last: 10
        }
    );
    same(&t);

    // size == 0
    assert_eq!(t.empty_area(0, 100, 0), Err(MapleError::ZeroSize));
    assert_eq!(t.empty_area_rev(0, 100, 0), Err(MapleError::ZeroSize));
    let e = t.alloc_range(0, 100, 0, val()).unwrap_err();
    assert_eq!((e.kind, e.value.as_str()), (MapleError::ZeroSize, "value"));
    let e = t.alloc_range_rev(0, 100, 0, val()).unwrap_err();
    assert_eq!(e.kind, MapleError::ZeroSize);
    same(&t);

    // min > max
    assert_eq!(
        t.empty_area(100, 0, 1),
        Err(MapleError::InvertedBounds { min: 100, max: 0 })
    );
    assert_eq!(
        t.empty_area_rev(MAX, 0, 1),
        Err(MapleError::InvertedBounds { min: MAX, max: 0 })
    );
    let e = t.alloc_range(100, 0, 1, val()).unwrap_err();
    assert_eq!(e.kind, MapleError::InvertedBounds { min: 100, max: 0 });
    let e = t.alloc_range_rev(100, 0, 1, val()).unwrap_err();
    assert_eq!(e.kind, MapleError::InvertedBounds { min: 100, max: 0 });
    same(&t);

    // a size that cannot fit: larger than the window, or running past u64::MAX
    assert_eq!(
        t.empty_area(100, 109, 11),
        Err(MapleError::NoSpace {
            min: 100,
            max: 109,
            size: 11
        })
    );
    assert_eq!(t.empty_area(100, 109, 10), Ok(100));
    assert_eq!(
        t.empty_area(5, MAX, MAX),
        Err(MapleError::NoSpace {
            min: 5,
            max: MAX,
            size: MAX
        })
    );
    assert_eq!(
        t.empty_area_rev(MAX - 3, MAX, 5),
        Err(MapleError::NoSpace {
            min: MAX - 3,
            max: MAX,
            size: 5
        })
    );
    assert_eq!(t.empty_area_rev(MAX - 3, MAX, 4), Ok(MAX - 3));
    let e = t.alloc_range(MAX, MAX, 2, val()).unwrap_err();
    assert_eq!(
        e.kind,
        MapleError::NoSpace {
            min: MAX,
            max: MAX,
            size: 2
        }
    );
    // the window is large enough but occupied
    assert_eq!(t.empty_area(10, 49, 1), Ok(20));
    assert_eq!(
        t.empty_area(10, 49, 21),
        Err(MapleError::NoSpace {
            min: 10,
            max: 49,
            size: 21
        })
    );
    let e = t.alloc_range_rev(10, 49, 21, val()).unwrap_err();
    assert_eq!(
        e.kind,
        MapleError::NoSpace {
            min: 10,
            max: 49,
            size: 21
        }
    );
    assert_eq!(e.value, "value");
    same(&t);

    // occupied
    for (f, l) in [
        (10, 10),
        (19, 19),
        (0, 10),
        (19, 25),
        (5, 45),
        (0, MAX),
        (12, 13),
    ] {
        let e = t.insert_range(f, l, val()).unwrap_err();
        assert!(
            matches!(e.kind, MapleError::Occupied { .. }),
            "[{f}, {l}]: {:?}",
            e.kind
        );
        assert_eq!(e.value, "value");
        same(&t);
    }
    assert!(matches!(
        t.try_insert(45, val()).unwrap_err().kind,
        MapleError::Occupied { .. }
    ));
    same(&t);

    // the same through cursors
    {
        let mut c = t.cursor();
        let e = c.store_range(9, 8, val()).unwrap_err();
        assert_eq!(e.kind, MapleError::InvertedRange { first: 9, last: 8 });
        assert_eq!(e.value, "value");
        let e = c.insert_range(15, 15, val()).unwrap_err();
        assert!(matches!(e.kind, MapleError::Occupied { .. }));
        assert_eq!(c.empty_area(0, 10, 0), Err(MapleError::ZeroSize));
        assert_eq!(
            c.empty_area_rev(10, 0, 1),
            Err(MapleError::InvertedBounds { min: 10, max: 0 })
        );
    }
    same(&t);
    {
        let mut c = t.cursor_mut();
        let e = c.insert_range(9, 8, val()).unwrap_err();
        assert_eq!(e.kind, MapleError::InvertedRange { first: 9, last: 8 });
        let e = c.insert_range(0, 10, val()).unwrap_err();
        assert!(matches!(e.kind, MapleError::Occupied { .. }));
        assert_eq!(e.value, "value");
        assert_eq!(
            c.empty_area(0, 5, 7),
            Err(MapleError::NoSpace {
                min: 0,
                max: 5,
                size: 7
            })
        );
    }
    same(&t);
    assert_eq!(t.len(), 2);
}

#[test]
fn errors_are_std_errors() {
    let all = [
        MapleError::InvertedRange { first: 2, last: 1 },
        MapleError::ZeroSize,
        MapleError::InvertedBounds { min: 2, max: 1 },
        MapleError::NoSpace {
            min: 0,
            max: 1,
            size: 3,
        },
        MapleError::Occupied { first: 0, last: 0 },
    ];
    for e in all {
        let dynerr: &dyn std::error::Error = &e;
        assert!(!dynerr.to_string().is_empty());
    }
    let t = MapleTree::new();
    t.try_insert(1, 5u64).unwrap();
    let w = t.try_insert(1, 6u64).unwrap_err();
    let dynerr: &dyn std::error::Error = &w;
    assert!(dynerr.source().is_some());
    assert!(!format!("{w:?}").is_empty());
    let kind: MapleError = w.into();
    assert!(matches!(kind, MapleError::Occupied { .. }));
}

#[test]
fn gap_search_exact_fits() {
    // entries at [0,9] [13,19] [25,29] [33,39] [45,MAX-10] [MAX-6,MAX]: gaps of
    // 3 at 10, 5 at 20, 3 at 30, 5 at 40, 3 at MAX-9
    let t = MapleTree::new();
    for (f, l) in [
        (0, 9),
        (13, 19),
        (25, 29),
        (33, 39),
        (45, MAX - 10),
        (MAX - 6, MAX),
    ] {
        t.insert_range(f, l, f).unwrap();
    }
    assert_eq!(t.empty_area(0, MAX, 1), Ok(10));
    assert_eq!(t.empty_area(0, MAX, 3), Ok(10));
    assert_eq!(t.empty_area(0, MAX, 4), Ok(20));
    assert_eq!(t.empty_area(0, MAX, 5), Ok(20));
    assert_eq!(
        t.empty_area(0, MAX, 6),
        Err(MapleError::NoSpace {
            min: 0,
            max: MAX,
            size: 6
        })
    );
    assert_eq!(t.empty_area_rev(0, MAX, 1), Ok(MAX - 7));
    assert_eq!(t.empty_area_rev(0, MAX, 3), Ok(MAX - 9));
    assert_eq!(t.empty_area_rev(0, MAX, 4), Ok(41));
    assert_eq!(t.empty_area_rev(0, MAX, 5), Ok(40));
    assert_eq!(t.empty_area_rev(0, 44, 5), Ok(40));
    assert_eq!(t.empty_area_rev(0, 43, 5), Ok(20));
    assert_eq!(t.empty_area_rev(0, 43, 4), Ok(40));
    // the window clips gaps
    assert_eq!(t.empty_area(11, MAX, 3), Ok(20));
    assert_eq!(t.empty_area(11, MAX, 2), Ok(11));
    assert_eq!(t.empty_area(21, 24, 4), Ok(21));
    assert_eq!(
        t.empty_area(21, 24, 5),
        Err(MapleError::NoSpace {
            min: 21,
            max: 24,
            size: 5
        })
    );
    assert_eq!(t.empty_area_rev(20, 23, 4), Ok(20));
    assert_eq!(t.empty_area_rev(0, 31, 3), Ok(20 + 2));
    assert_eq!(t.empty_area_rev(0, 12, 3), Ok(10));
    assert_eq!(
        t.empty_area(0, 9, 1),
        Err(MapleError::NoSpace {
            min: 0,
            max: 9,
            size: 1
        })
    );
    // alloc takes the fits in order
    assert_eq!(t.alloc_range(0, MAX, 3, 1).map_err(|e| e.kind), Ok(10));
    assert_eq!(t.alloc_range(0, MAX, 3, 2).map_err(|e| e.kind), Ok(20));
    assert_eq!(t.alloc_range(0, MAX, 3, 3).map_err(|e| e.kind), Ok(30));
    assert_eq!(
        t.alloc_range_rev(0, MAX, 3, 4).map_err(|e| e.kind),
        Ok(MAX - 9)
    );
    assert_eq!(t.alloc_range_rev(0, MAX, 3, 5).map_err(|e| e.kind), Ok(42));
    assert_eq!(load(&t, 44), Some((42..=44, 5)));
    assert_eq!(t.alloc_range(0, MAX, 2, 6).map_err(|e| e.kind), Ok(23));
    assert_eq!(t.alloc_range(0, MAX, 2, 7).map_err(|e| e.kind), Ok(40));
    assert_eq!(
        t.empty_area(0, MAX, 1),
        Err(MapleError::NoSpace {
            min: 0,
            max: MAX,
            size: 1
        })
    );
    assert_eq!(t.len(), 13);
}

/// Gap search across many nodes: the gap that fits is far from the root's
/// first and last child, so the internal gap bookkeeping must be right.
#[test]
fn gap_search_deep() {
    let n: u64 = if cfg!(miri) { 300 } else { 20_000 };
    let t = MapleTree::new();
    for i in 0..n {
        t.store_range(i * 10, i * 10 + 8, i).unwrap(); // one free index every 10
    }
    assert_eq!(t.empty_area(0, n * 10, 2), Ok(n * 10 - 1));
    // open one wide gap in the middle and check both directions find it
    let mid = n / 2;
    for i in mid..mid + 3 {
        t.erase(i * 10).unwrap();
    }
    assert_eq!(t.empty_area(0, MAX, 2), Ok(mid * 10 - 1));
    assert_eq!(t.empty_area(0, MAX, 31), Ok(mid * 10 - 1));
    assert_eq!(t.empty_area(0, MAX, 32), Ok(n * 10 - 1));
    assert_eq!(t.empty_area_rev(0, n * 10 - 2, 2), Ok(mid * 10 + 28));
    assert_eq!(t.empty_area_rev(0, n * 10 - 2, 31), Ok(mid * 10 - 1));
    // fill it again in place; the gap must disappear from the bookkeeping
    t.store_range(mid * 10 - 1, mid * 10 + 29, 0).unwrap();
    assert_eq!(
        t.empty_area(0, n * 10 - 2, 2),
        Err(MapleError::NoSpace {
            min: 0,
            max: n * 10 - 2,
            size: 2
        })
    );
    // and erasing the last entry of a node frees exactly its range
    let k = n / 3;
    t.erase(k * 10).unwrap();
    assert_eq!(t.empty_area(0, MAX, 2), Ok(k * 10 - 1));
    assert_eq!(t.empty_area(0, MAX, 11), Ok(k * 10 - 1));
    assert_eq!(t.empty_area(0, MAX, 12), Ok(n * 10 - 1));
}

#[test]
fn entry_outlives_erase() {
    let t = MapleTree::new();
    t.store_range(0, 9, String::from("kept alive")).unwrap();
    let e = t.load(5).unwrap();
    let removed = t.erase(5).unwrap();
    t.store_range(0, 100, String::from("new")).unwrap();
    t.clear();
    assert_eq!(e.value(), "kept alive");
    assert_eq!(&*removed, "kept alive");
    assert_eq!(removed.range(), 0..=9);
    assert!(format!("{e:?}").contains("kept alive"));
}

/// A `Reader` is an RCU read-side section, not an isolated snapshot: a
/// write that completes while it is held may or may not be seen, but every
/// read sees each entry either before or after each write, never a mix,
/// and what it hands out stays alive.
#[test]
fn reader_sees_each_write_whole() {
    let t = MapleTree::new();
    for i in 0..100u64 {
        t.insert_range(i * 2, i * 2, i).unwrap();
    }
    let r = t.reader();
    let before: Vec<(u64, u64)> = r.iter().map(|(k, v)| (*k.start(), *v)).collect();
    t.store_range(10, 10, 999).unwrap(); // one leaf: swapped in place
    t.store_range(100, 1000, 7).unwrap(); // many leaves: path copy
    t.erase(0);
    // each index reads its old or its new entry
    for i in 0..200u64 {
        let got = r.load(i).map(|(k, v)| (k, *v));
        let old = (i % 2 == 0).then_some((i..=i, i / 2));
        let new = if i == 0 {
            None
        } else if i == 10 {
            Some((10..=10, 999))
        } else if i >= 100 {
            Some((100..=1000, 7))
        } else {
            old.clone()
        };
        assert!(
            got == old || got == new,
            "load({i}) = {got:?}: neither {old:?} nor {new:?}"
        );
    }
    // iteration stays ordered and non-overlapping, and yields every entry
    // that no write touched
    let pass: Vec<(u64, u64, u64)> = r.iter().map(|(k, v)| (*k.start(), *k.end(), *v)).collect();
    for w in pass.windows(2) {
        assert!(w[1].0 > w[0].1, "{pass:?}");
    }
    for &(k, v) in &before {
        if k != 0 && k != 10 && k < 100 {
            assert!(pass.contains(&(k, k, v)), "untouched entry {k} missing");
        }
    }
    drop(r);
    // a new reader sees every write
    let r = t.reader();
    assert_eq!(r.load(10).map(|(r, v)| (r, *v)), Some((10..=10, 999)));
    assert_eq!(r.load(500).map(|(r, v)| (r, *v)), Some((100..=1000, 7)));
    assert_eq!(r.load(0), None);
    // 100 entries, 0 erased, 100..=198 (50 entries) replaced by one
    assert_eq!(t.len(), 100 - 1 - 50 + 1);
}

#[test]
fn cursor_walk_next_prev() {
    let mut t = MapleTree::new();
    for i in 0..50u64 {
        t.insert_range(i * 10, i * 10 + 4, i).unwrap();
    }
    let mut c = t.cursor_mut();
    assert_eq!(c.walk(7).map(|(r, v)| (r, *v)), None);
    assert_eq!(c.next().map(|(r, v)| (r, *v)), Some((10..=14, 1)));
    assert_eq!(c.next().map(|(r, v)| (r, *v)), Some((20..=24, 2)));
    assert_eq!(c.prev().map(|(r, v)| (r, *v)), Some((10..=14, 1)));
    assert_eq!(c.prev().map(|(r, v)| (r, *v)), Some((0..=4, 0)));
    assert!(c.prev().is_none());
    assert_eq!(c.walk(493).map(|(r, v)| (r, *v)), Some((490..=494, 49)));
    assert!(c.next().is_none());
    // walk then erase the entry and its successor, without walking again
    c.walk(102);
    assert_eq!(c.erase(), Some(100..=104));
    assert_eq!(c.next().map(|(r, v)| (r, *v)), Some((110..=114, 11)));
    assert_eq!(c.erase(), Some(110..=114));
    drop(c);
    assert_eq!(t.len(), 48);
    assert!(t.load(100).is_none() && t.load(110).is_none());
    // the shared cursor sees the same tree and writes publish at once
    let c = t.cursor();
    drop(c);
    let mut c = t.cursor();
    c.walk(0);
    c.store_range(100, 114, 7).unwrap();
    c.preallocate(200, 260);
    c.store_range(200, 260, 8).unwrap();
    drop(c);
    assert_eq!(load(&t, 105), Some((100..=114, 7)));
    assert_eq!(load(&t, 230), Some((200..=260, 8)));
    assert_eq!(load(&t, 264), Some((261..=264, 26)));
    assert_eq!(t.len(), 48 + 2 - 6);
}

/// A copy's nodes come from one allocation that only the copy owns (its
/// blocks never go to a thread cache or the allocator on their own; debug
/// builds check this at every free). Rewriting the copy through every kind
/// of write (exact fits, splits, removals of long spans that free many
/// nodes, `&mut` writes that free at once, a preallocation given back,
/// `clear`) and dropping it keeps it equal to a model and owns every value
/// once.
#[test]
fn a_copy_owns_its_nodes_through_every_write() {
    use std::collections::BTreeMap;
    use std::sync::Arc;
    let n: u64 = if cfg!(miri) { 300 } else { 20_000 };
    let v = Arc::new(0u8);
    let src = MapleTree::new();
    for i in 0..n {
        src.store_range(i * 10, i * 10 + 4, v.clone()).unwrap();
    }
    let mut copy = src.dup();
    drop(src);
    let mut model: BTreeMap<u64, u64> = (0..n).map(|i| (i * 10, i * 10 + 4)).collect();
    let mut rng = Rng(7);
    let check = |t: &MapleTree<Arc<u8>>, m: &BTreeMap<u64, u64>| {
        t.validate().unwrap();
        let got: Vec<_> = t.reader().iter().map(|(r, _)| r).collect();
        let want: Vec<_> = m.iter().map(|(&a, &b)| a..=b).collect();
        assert!(got == want, "the copy's entries differ from the model");
    };
    for round in 0..4u64 {
        for _ in 0..n / 4 {
            let i = rng.below(n);
            match rng.below(3) {
                // An exact fit.
                0 if model.get(&(i * 10)) == Some(&(i * 10 + 4)) => {
                    copy.store_range(i * 10, i * 10 + 4, v.clone()).unwrap();
                }
                // A split: the entry's middle index.
                1 if model.get(&(i * 10)) == Some(&(i * 10 + 4)) => {
                    copy.store_range(i * 10 + 2, i * 10 + 2, v.clone()).unwrap();
                    model.insert(i * 10, i * 10 + 1);
                    model.insert(i * 10 + 2, i * 10 + 2);
                    model.insert(i * 10 + 3, i * 10 + 4);
                }
                _ => {
                    // The whole entry containing the index goes.
                    let k = i * 10;
                    let hit = model.range(..=k).next_back().filter(|(_, &e)| e >= k);
                    let want = hit.map(|(&s, &e)| s..=e);
                    let gone = copy.erase(k).map(|e| e.range());
                    assert_eq!(gone, want);
                    if let Some(r) = gone {
                        model.remove(r.start());
                    }
                }
            }
        }
        // A long span removed at once frees many nodes (past the pool).
        let a = rng.below(n / 2) * 10;
        let b = a + n * 2;
        drop(copy.remove_range(a, b).unwrap());
        let inside: Vec<u64> = model
            .range(..=b)
            .filter(|(_, &e)| e >= a)
            .map(|(&s, _)| s)
            .collect();
        for s in inside {
            let e = model.remove(&s).unwrap();
            if s < a {
                model.insert(s, a - 1);
            }
            if e > b {
                model.insert(b + 1, e);
            }
        }
        // Writes under `&mut` free what they replace at once: one value
        // over a long span frees many nodes (past the pool), then a few
        // stores past the end.
        let a = rng.below(n / 2) * 10;
        let b = a + n * 2;
        copy.cursor_mut().store_range(a, b, v.clone()).unwrap();
        let inside: Vec<u64> = model
            .range(..=b)
            .filter(|(_, &e)| e >= a)
            .map(|(&s, _)| s)
            .collect();
        for s in inside {
            let e = model.remove(&s).unwrap();
            if s < a {
                model.insert(s, a - 1);
            }
            if e > b {
                model.insert(b + 1, e);
            }
        }
        model.insert(a, b);
        {
            let mut c = copy.cursor_mut();
            for k in 0..50 {
                let f = (n + round * 100 + k) * 10;
                c.store_range(f, f + 4, v.clone()).unwrap();
                model.insert(f, f + 4);
            }
        }
        // A preallocation beyond what the write uses is given back.
        {
            let mut c = copy.cursor();
            c.preallocate(0, u64::MAX);
        }
        check(&copy, &model);
    }
    copy.clear();
    model.clear();
    copy.store_range(5, 9, v.clone()).unwrap();
    model.insert(5, 9);
    check(&copy, &model);
    drop(copy);
    // Other tests' readers, pinned on other threads, may hold the grace
    // period back for a while.
    // At least a minute of 1 ms sleeps: a hang guard, not a timing bound.
    let rounds = if cfg!(miri) { 50 } else { 60_000 };
    for _ in 0..rounds {
        aspace_maple::flush_retired();
        if Arc::strong_count(&v) == 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(Arc::strong_count(&v), 1, "every value dropped once");
}

#[test]
fn dup_and_clone_are_deep() {
    let n: u64 = if cfg!(miri) { 200 } else { 10_000 };
    let t = MapleTree::new();
    for i in 0..n {
        t.store_range(i * 2, i * 2, format!("v{i}")).unwrap();
    }
    let d = t.dup();
    let c = t.clone();
    t.store_range(0, n, String::from("over")).unwrap();
    t.clear();
    assert_eq!(d.len() as u64, n);
    assert_eq!(c.len() as u64, n);
    for i in (0..n).step_by(7) {
        assert_eq!(load(&d, i * 2), Some((i * 2..=i * 2, format!("v{i}"))));
        assert_eq!(load(&c, i * 2 + 1), None);
    }
    assert_eq!(entries(&d), entries(&c));
    assert_eq!(d.empty_area(0, MAX, 2), Ok(n * 2 - 1));
    assert_eq!(d.memory_usage().entries as u64, n);
    let empty: MapleTree<String> = MapleTree::new();
    assert!(empty.dup().is_empty());
}

#[test]
fn memory_usage_is_sane() {
    let t = MapleTree::new();
    let empty = t.memory_usage();
    assert_eq!(empty.entries, 0);
    assert_eq!(empty.node_bytes, empty.nodes * 256);
    t.store(5, 1u64).unwrap();
    let one = t.memory_usage();
    assert_eq!(one.entries, 1);
    assert!(one.nodes >= 1);
    assert_eq!(one.node_bytes, one.nodes * 256);
    let n: u64 = if cfg!(miri) { 500 } else { 100_000 };
    for i in 0..n {
        t.store(i * 2 + 10, i).unwrap();
    }
    let u = t.memory_usage();
    assert_eq!(u.entries as u64, n + 1);
    assert_eq!(u.node_bytes, u.nodes * 256);
    assert!(u.nodes as u64 >= (n + 1).div_ceil(16));
    assert!((u.nodes as u64) < n, "{u:?}");
    // value_bytes counts at least the inline values
    assert!(
        u.value_bytes as u64 >= (n + 1) * std::mem::size_of::<u64>() as u64 || u.value_bytes == 0,
        "{u:?}"
    );
    t.clear();
    assert_eq!(t.memory_usage().entries, 0);
    eprintln!(
        "memory: {} sequential point entries -> {} nodes, {:.1} node bytes/entry",
        n + 1,
        u.nodes,
        u.node_bytes as f64 / (n + 1) as f64
    );
}

/// After `preallocate`, a boxed store through the cursor allocates no node.
#[test]
fn preallocated_store_allocates_no_node() {
    let mut t = MapleTree::new();
    // Miri: 400 entries (keys up to 1,600), so both stores below still
    // span many leaves.
    let n: u64 = if cfg!(miri) { 400 } else { 1_000 };
    for i in 0..n {
        t.store_range(i * 4, i * 4 + 1, i).unwrap();
    }
    for exclusive in [false, true] {
        let (f, l) = if exclusive {
            (1_001, 2_050)
        } else {
            (17, 1_000)
        };
        let mut shared_t = None;
        let mut c = if exclusive {
            t.cursor_mut()
        } else {
            shared_t = Some(t.dup());
            shared_t.as_ref().unwrap().cursor()
        };
        let before = c.unreserved_allocations();
        c.preallocate(f, l);
        c.store_range_boxed(f, l, Box::new(7)).unwrap();
        assert_eq!(
            c.unreserved_allocations(),
            before,
            "a preallocated store allocated (exclusive {exclusive})"
        );
        assert_eq!(c.walk(f + 3).map(|(r, v)| (r, *v)), Some((f..=l, 7)));
        drop(c);
        drop(shared_t);
    }
    assert_eq!(load(&t, 1_001), Some((1_001..=2_050, 7)));
    assert_eq!(load(&t, 1_000), Some((1_000..=1_000, 250)));
    assert_eq!(load(&t, 2_051), None);
    let e = t
        .cursor_mut()
        .store_range_boxed(5, 4, Box::new(1))
        .unwrap_err();
    assert_eq!(e.kind, MapleError::InvertedRange { first: 5, last: 4 });
    assert_eq!(*e.value, 1);
}
