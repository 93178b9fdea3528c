//! Bad input to every public function of maple, one test per input class (the
//! table is docs/bad-input.md). Each returns its documented error (handing the
//! value back) or a documented empty result, never panics, and a refused call
//! leaves the tree exactly as it was.

use aspace_maple::{MapleError, MapleTree};

fn contents(t: &MapleTree<u32>) -> Vec<(u64, u64, u32)> {
    t.reader()
        .iter()
        .map(|(r, v)| (*r.start(), *r.end(), *v))
        .collect()
}

fn sample() -> MapleTree<u32> {
    let t = MapleTree::new();
    for i in 0..100u64 {
        t.insert_range(i * 10, i * 10 + 4, i as u32).unwrap();
    }
    t.insert_range(u64::MAX - 1, u64::MAX, 1000).unwrap();
    t
}

#[test]
fn inverted_ranges_hand_the_value_back() {
    let mut t = sample();
    let before = contents(&t);
    let inv = MapleError::InvertedRange { first: 7, last: 3 };
    let e = t.store_range(7, 3, 1).unwrap_err();
    assert_eq!((e.kind, e.into_value()), (inv, 1));
    let e = t.insert_range(7, 3, 2).unwrap_err();
    assert_eq!((e.kind, e.value), (inv, 2));
    let e = t.insert_range(u64::MAX, 0, 3).unwrap_err();
    assert_eq!(
        e.kind,
        MapleError::InvertedRange {
            first: u64::MAX,
            last: 0
        }
    );
    {
        let mut c = t.cursor();
        assert_eq!(c.store_range(7, 3, 4).unwrap_err().value, 4);
        assert_eq!(c.insert_range(7, 3, 5).unwrap_err().value, 5);
        assert_eq!(
            *c.store_range_boxed(7, 3, Box::new(6)).unwrap_err().value,
            6
        );
        // Preallocating for an inverted range is harmless.
        c.preallocate(7, 3);
    }
    {
        let mut c = t.cursor_mut();
        assert_eq!(c.store_range(7, 3, 4).unwrap_err().kind, inv);
        assert_eq!(c.insert_range(7, 3, 5).unwrap_err().kind, inv);
    }
    assert_eq!(contents(&t), before);
    t.validate().unwrap();
    let err: MapleError = t.store_range(2, 1, 0).unwrap_err().into();
    assert!(!err.to_string().is_empty());
}

#[test]
fn occupied_inserts_hand_the_value_back() {
    let t = sample();
    let before = contents(&t);
    for (f, l) in [
        (0, 0),
        (4, 4),
        (3, 12),
        (0, u64::MAX),
        (u64::MAX, u64::MAX),
        (990, 995),
    ] {
        let e = t.insert_range(f, l, 77).unwrap_err();
        assert_eq!(
            e.kind,
            MapleError::Occupied { first: f, last: l },
            "[{f}, {l}]"
        );
        assert_eq!(e.value, 77);
        assert_eq!(t.try_insert(f, 78).unwrap_err().value, 78);
        assert!(t.cursor().insert_range(f, l, 79).is_err());
    }
    assert_eq!(contents(&t), before);
}

#[test]
fn bad_gap_requests() {
    let t = sample();
    let before = contents(&t);
    let snap_t = sample();
    let snap = snap_t.reader();
    let mut owned = sample();
    type Search<'a> = Box<dyn Fn(u64, u64, u64) -> Result<u64, MapleError> + 'a>;
    let searches: Vec<Search> = vec![
        Box::new(|a, b, s| t.empty_area(a, b, s)),
        Box::new(|a, b, s| t.empty_area_rev(a, b, s)),
        Box::new(|a, b, s| snap.empty_area(a, b, s)),
        Box::new(|a, b, s| snap.empty_area_rev(a, b, s)),
        Box::new(|a, b, s| t.alloc_range(a, b, s, 9).map_err(|e| e.kind)),
        Box::new(|a, b, s| t.alloc_range_rev(a, b, s, 9).map_err(|e| e.kind)),
    ];
    for s in &searches {
        assert_eq!(s(0, 100, 0), Err(MapleError::ZeroSize));
        assert_eq!(
            s(50, 10, 1),
            Err(MapleError::InvertedBounds { min: 50, max: 10 })
        );
        // Bigger than the window, including sizes whose end would pass u64::MAX.
        for (min, max, size) in [
            (0, 3, 5),
            (5, 6, 3),
            (1, u64::MAX, u64::MAX),
            (u64::MAX, u64::MAX, 2),
        ] {
            assert_eq!(
                s(min, max, size),
                Err(MapleError::NoSpace { min, max, size })
            );
        }
        // A window that is completely full.
        assert_eq!(
            s(0, 4, 1),
            Err(MapleError::NoSpace {
                min: 0,
                max: 4,
                size: 1
            })
        );
    }
    drop(searches);
    {
        let mut c = owned.cursor_mut();
        assert_eq!(c.empty_area(0, 1, 0), Err(MapleError::ZeroSize));
        assert_eq!(
            c.empty_area_rev(9, 1, 1),
            Err(MapleError::InvertedBounds { min: 9, max: 1 })
        );
        assert_eq!(c.index(), 0, "a failed search does not move the cursor");
    }
    assert_eq!(contents(&t), before);
    t.validate().unwrap();
}

#[test]
fn whole_space_and_extreme_indices() {
    let t: MapleTree<u32> = MapleTree::new();
    // The full space fits in an empty tree: size u64::MAX at 0 (or 1), and
    // [0, u64::MAX] can be stored.
    assert_eq!(t.empty_area(0, u64::MAX, u64::MAX), Ok(0));
    assert_eq!(t.empty_area_rev(0, u64::MAX, u64::MAX), Ok(1));
    assert_eq!(t.alloc_range(0, u64::MAX, u64::MAX, 1).unwrap(), 0);
    assert_eq!(t.load(u64::MAX - 1).unwrap().range(), 0..=u64::MAX - 1);
    assert!(t.load(u64::MAX).is_none());
    t.try_insert(u64::MAX, 2).unwrap();
    assert_eq!(
        t.empty_area(0, u64::MAX, 1),
        Err(MapleError::NoSpace {
            min: 0,
            max: u64::MAX,
            size: 1
        })
    );
    t.store_range(0, u64::MAX, 3).unwrap();
    assert_eq!(t.len(), 1);
    assert_eq!(t.find(u64::MAX).unwrap().range(), 0..=u64::MAX);
    assert_eq!(t.prev(0).unwrap().range(), 0..=u64::MAX);
    // Splitting the whole-space entry at both ends.
    t.store(0, 4).unwrap();
    t.store(u64::MAX, 5).unwrap();
    assert_eq!(
        contents(&t),
        vec![(0, 0, 4), (1, u64::MAX - 1, 3), (u64::MAX, u64::MAX, 5)]
    );
    t.validate().unwrap();
}

#[test]
fn reads_and_erases_of_nothing() {
    let mut t: MapleTree<u32> = MapleTree::new();
    assert!(t.load(0).is_none() && t.load(u64::MAX).is_none());
    assert!(t.find(0).is_none() && t.prev(u64::MAX).is_none());
    assert!(t.erase(5).is_none());
    assert!(t.remove(5).is_none());
    assert!(t.take(5).is_none());
    t.clear();
    let snap = t.reader();
    assert!(snap.iter().next().is_none() && snap.iter().next_back().is_none());
    assert_eq!(snap.len(), 0);
    drop(snap);
    {
        let mut c = t.cursor();
        assert!(c.walk(3).is_none());
        assert!(c.next().is_none() && c.prev().is_none());
        assert!(c.erase().is_none());
        assert_eq!(c.index(), 3);
    }
    let t = sample();
    let before = contents(&t);
    // Holes, past the last entry, before the first.
    for i in [5, 9, 995, 1_000_000, u64::MAX - 2] {
        assert!(t.load(i).is_none(), "{i}");
        assert!(t.erase(i).is_none(), "{i}");
    }
    assert_eq!(t.find(u64::MAX).unwrap().first(), u64::MAX - 1);
    assert!(t.prev(u64::MAX - 2).is_some());
    // An inverted iteration range is empty, from both ends.
    let snap = t.reader();
    assert!(snap.range(10, 5).next().is_none());
    assert!(snap.range(u64::MAX, 0).next_back().is_none());
    assert_eq!(contents(&t), before);
}

#[test]
fn cursor_at_the_ends() {
    let t = sample();
    let mut c = t.cursor();
    c.walk(0);
    assert!(c.prev().is_none(), "nothing before the first entry");
    assert_eq!(c.index(), 0);
    c.walk(u64::MAX);
    assert!(c.next().is_none(), "nothing after the last entry");
    assert_eq!(c.index(), u64::MAX);
    assert_eq!(c.erase(), Some(u64::MAX - 1..=u64::MAX));
    assert!(c.erase().is_none(), "erasing twice finds nothing");
    drop(c);
    t.validate().unwrap();
}
