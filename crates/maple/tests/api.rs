//! Model-based tests of the idiomatic layer (`get`, `insert`, `try_insert`,
//! `overlaps`, `punch_hole`, `first`/`last`, `iter`/`range` both ways, `gaps` both ways,
//! `empty_area_aligned` / `alloc_aligned` in both fits, `FromIterator`,
//! `pop_first`/`pop_last`, `Extend`, both `IntoIterator`s, `PartialEq`): random operation sequences
//! against a `BTreeMap` of non-overlapping ranges, and the aligned searches
//! against a brute-force scan of every aligned start.
//!
//! `ASPACE_API_CASES` raises the number of cases.

use std::collections::BTreeMap;
use std::ops::{Bound, RangeInclusive};

use aspace_maple::{Fit, IndexRange, MapleError, MapleTree};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// `first -> (last, value)`.
#[derive(Clone, Debug, Default)]
struct Model(BTreeMap<u64, (u64, u64)>);

type Ent = (RangeInclusive<u64>, u64);

impl Model {
    fn entries(&self) -> Vec<Ent> {
        self.0.iter().map(|(&f, &(l, v))| (f..=l, v)).collect()
    }
    fn get(&self, i: u64) -> Option<Ent> {
        let (&f, &(l, v)) = self.0.range(..=i).next_back()?;
        (l >= i).then_some((f..=l, v))
    }
    fn intersecting(&self, a: u64, b: u64) -> Vec<Ent> {
        self.entries()
            .into_iter()
            .filter(|(r, _)| *r.start() <= b && *r.end() >= a)
            .collect()
    }
    fn free(&self, a: u64, b: u64) -> bool {
        self.intersecting(a, b).is_empty()
    }
    fn store(&mut self, a: u64, b: u64, v: u64) {
        for (r, ev) in self.intersecting(a, b) {
            self.0.remove(r.start());
            if *r.start() < a {
                self.0.insert(*r.start(), (a - 1, ev));
            }
            if *r.end() > b {
                self.0.insert(b + 1, (*r.end(), ev));
            }
        }
        self.0.insert(a, (b, v));
    }
    /// The free runs inside `[lo, hi]`, clipped.
    fn gaps(&self, lo: u64, hi: u64) -> Vec<RangeInclusive<u64>> {
        let mut out = Vec::new();
        let mut next = Some(lo);
        for (r, _) in self.intersecting(lo, hi) {
            if let Some(n) = next {
                if *r.start() > n {
                    out.push(n..=*r.start() - 1);
                }
            }
            next = r.end().checked_add(1);
        }
        if let Some(n) = next {
            if n <= hi {
                out.push(n..=hi);
            }
        }
        out
    }
    /// Brute force: every aligned start in the window, in fit order.
    fn aligned(&self, min: u64, max: u64, size: u64, align: u64, fit: Fit) -> Option<u64> {
        let last_start = max.checked_sub(size - 1)?;
        let starts: Vec<u64> = (min..=last_start).filter(|s| s % align == 0).collect();
        let ok = |s: &&u64| self.free(**s, **s + size - 1);
        match fit {
            Fit::Lowest => starts.iter().find(ok).copied(),
            Fit::Highest => starts.iter().rev().find(ok).copied(),
        }
    }
}

/// One of the Rust range forms, to exercise every `IndexRange` impl.
#[derive(Clone, Debug)]
enum R {
    Index(u64),
    HalfOpen(u64, u64),
    Inclusive(u64, u64),
    From(u64),
    To(u64),
    ToInclusive(u64),
    Full,
    Bounds(Bound<u64>, Bound<u64>),
}

impl R {
    fn call<X>(&self, f: impl FnOnce(&dyn Fn() -> Option<(u64, u64)>) -> X) -> X {
        f(&|| self.bounds())
    }
    fn bounds(&self) -> Option<(u64, u64)> {
        match *self {
            R::Index(i) => i.bounds(),
            R::HalfOpen(a, b) => (a..b).bounds(),
            R::Inclusive(a, b) => (a..=b).bounds(),
            R::From(a) => (a..).bounds(),
            R::To(b) => (..b).bounds(),
            R::ToInclusive(b) => (..=b).bounds(),
            R::Full => (..).bounds(),
            R::Bounds(a, b) => (a, b).bounds(),
        }
    }
    /// The expected bounds, computed independently of the trait.
    fn model(&self) -> Option<(u64, u64)> {
        let (a, b) = match *self {
            R::Index(i) => (i as i128, i as i128),
            R::HalfOpen(a, b) => (a as i128, b as i128 - 1),
            R::Inclusive(a, b) => (a as i128, b as i128),
            R::From(a) => (a as i128, u64::MAX as i128),
            R::To(b) => (0, b as i128 - 1),
            R::ToInclusive(b) => (0, b as i128),
            R::Full => (0, u64::MAX as i128),
            R::Bounds(a, b) => {
                let a = match a {
                    Bound::Included(x) => x as i128,
                    Bound::Excluded(x) => x as i128 + 1,
                    Bound::Unbounded => 0,
                };
                let b = match b {
                    Bound::Included(x) => x as i128,
                    Bound::Excluded(x) => x as i128 - 1,
                    Bound::Unbounded => u64::MAX as i128,
                };
                (a, b)
            }
        };
        (a <= b && a <= u64::MAX as i128 && b >= 0).then_some((a as u64, b as u64))
    }
}

/// Calls `f` with the concrete Rust range type `r` stands for.
macro_rules! with_range {
    ($r:expr, |$x:ident| $body:expr) => {
        match $r.clone() {
            R::Index($x) => $body,
            R::HalfOpen(a, b) => {
                let $x = a..b;
                $body
            }
            R::Inclusive(a, b) => {
                let $x = a..=b;
                $body
            }
            R::From(a) => {
                let $x = a..;
                $body
            }
            R::To(b) => {
                let $x = ..b;
                $body
            }
            R::ToInclusive(b) => {
                let $x = ..=b;
                $body
            }
            R::Full => {
                let $x = ..;
                $body
            }
            R::Bounds(a, b) => {
                let $x = (a, b);
                $body
            }
        }
    };
}

/// Keys in a small space (0..300) so ranges collide, plus the extremes.
fn key() -> impl Strategy<Value = u64> {
    prop_oneof![8 => 0u64..300, 1 => Just(0u64), 1 => Just(u64::MAX), 1 => (u64::MAX - 3)..=u64::MAX]
}

fn bound() -> impl Strategy<Value = Bound<u64>> {
    prop_oneof![
        key().prop_map(Bound::Included),
        key().prop_map(Bound::Excluded),
        Just(Bound::Unbounded)
    ]
}

fn any_range() -> impl Strategy<Value = R> {
    prop_oneof![
        1 => key().prop_map(R::Index),
        1 => (key(), key()).prop_map(|(a, b)| R::HalfOpen(a, b)),
        4 => (0u64..300, 0u64..40).prop_map(|(a, l)| R::Inclusive(a, a + l)),
        // Edges on or next to multiples of 8, where aligned fits are tight.
        3 => (0u64..40, 1u64..6, prop::sample::select(vec![0u64, 1, 7]), any::<bool>())
            .prop_map(|(a, l, d, e)| {
                let s = a * 8 + d;
                R::Inclusive(s, s + l * 8 - 1 + e as u64)
            }),
        1 => (key(), key()).prop_map(|(a, b)| R::Inclusive(a, b)),
        1 => key().prop_map(R::From),
        1 => key().prop_map(R::To),
        1 => key().prop_map(R::ToInclusive),
        1 => Just(R::Full),
        1 => (bound(), bound()).prop_map(|(a, b)| R::Bounds(a, b)),
    ]
}

/// A window small enough for the brute-force aligned scan.
fn small_window() -> impl Strategy<Value = R> {
    prop_oneof![
        (0u64..320, 0u64..320).prop_map(|(a, b)| R::Inclusive(a, b)),
        (0u64..320, 0u64..320).prop_map(|(a, b)| R::HalfOpen(a, b)),
        (0u64..320).prop_map(R::To),
    ]
}

#[derive(Clone, Debug)]
enum Op {
    Insert(R, u64),
    TryInsert(R, u64),
    Get(u64),
    Overlaps(R),
    Range(R, u8),
    Gaps(R, u8),
    Aligned(R, u64, u32, bool),
    Alloc(R, u64, u32, bool),
    Remove(u64),
    Punch(R),
    Pop(bool),
    Extend(Vec<(R, u64)>),
    Eq,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (any_range(), any::<u64>()).prop_map(|(r, v)| Op::Insert(r, v)),
        3 => (any_range(), any::<u64>()).prop_map(|(r, v)| Op::TryInsert(r, v)),
        2 => key().prop_map(Op::Get),
        2 => any_range().prop_map(Op::Overlaps),
        2 => (any_range(), any::<u8>()).prop_map(|(r, m)| Op::Range(r, m)),
        3 => (any_range(), any::<u8>()).prop_map(|(r, m)| Op::Gaps(r, m)),
        3 => (small_window(), 0u64..48, 0u32..7, any::<bool>())
            .prop_map(|(r, s, a, h)| Op::Aligned(r, s, a, h)),
        2 => (small_window(), 0u64..48, 0u32..7, any::<bool>())
            .prop_map(|(r, s, a, h)| Op::Alloc(r, s, a, h)),
        2 => key().prop_map(Op::Remove),
        1 => any::<bool>().prop_map(Op::Pop),
        3 => any_range().prop_map(Op::Punch),
        1 => prop::collection::vec((any_range(), any::<u64>()), 0..4).prop_map(Op::Extend),
        1 => Just(Op::Eq),
    ]
}

fn ents<'a>(it: impl Iterator<Item = aspace_maple::Item<'a, u64>>) -> Vec<Ent> {
    it.map(|(r, v)| (r, *v)).collect()
}

/// Takes `mask`'s bits as a schedule of front (0) / back (1) steps, and
/// checks the mixed sequence against the model list.
fn mixed<I: DoubleEndedIterator>(mut it: I, want: &[I::Item], mask: u8)
where
    I::Item: PartialEq + std::fmt::Debug,
{
    let (mut lo, mut hi) = (0usize, want.len());
    let mut bit = 0;
    loop {
        let back = mask >> (bit % 8) & 1 == 1;
        bit += 1;
        let got = if back { it.next_back() } else { it.next() };
        if lo == hi {
            assert_eq!(got, None, "exhausted");
            assert!(it.next().is_none() && it.next_back().is_none(), "fused");
            return;
        }
        if back {
            hi -= 1;
            assert_eq!(got.as_ref(), Some(&want[hi]), "next_back");
        } else {
            assert_eq!(got.as_ref(), Some(&want[lo]), "next");
            lo += 1;
        }
    }
}

fn apply(tree: &mut MapleTree<u64>, model: &mut Model, op: &Op) {
    match op {
        Op::Insert(r, v) => {
            let got = with_range!(r, |x| tree.insert(x, *v));
            match r.model() {
                Some((a, b)) => {
                    assert!(got.is_ok(), "insert {r:?}");
                    model.store(a, b, *v);
                }
                None => {
                    let e = got.unwrap_err();
                    assert_eq!((e.kind, e.value), (MapleError::EmptyRange, *v));
                }
            }
        }
        Op::TryInsert(r, v) => {
            let got = with_range!(r, |x| tree.try_insert(x, *v));
            match r.model() {
                Some((a, b)) if model.free(a, b) => {
                    assert!(got.is_ok(), "try_insert {r:?}");
                    model.store(a, b, *v);
                }
                Some((a, b)) => {
                    let e = got.unwrap_err();
                    assert_eq!(e.kind, MapleError::Occupied { first: a, last: b });
                    assert_eq!(e.value, *v);
                }
                None => assert_eq!(got.unwrap_err().kind, MapleError::EmptyRange),
            }
        }
        Op::Get(i) => {
            assert_eq!(tree.get(*i).map(|e| (e.range(), *e)), model.get(*i));
            assert_eq!(tree.contains_key(*i), model.get(*i).is_some());
        }
        Op::Overlaps(r) => {
            let want = r.model().is_some_and(|(a, b)| !model.free(a, b));
            assert_eq!(with_range!(r, |x| tree.overlaps(x)), want, "{r:?}");
        }
        Op::Range(r, mask) => {
            let want = match r.model() {
                Some((a, b)) => model.intersecting(a, b),
                None => vec![],
            };
            assert_eq!(ents(with_range!(r, |x| tree.range(x))), want);
            let got_back: Vec<Ent> = ents(with_range!(r, |x| tree.range(x)).rev());
            assert_eq!(got_back, want.iter().rev().cloned().collect::<Vec<_>>());
            let it = with_range!(r, |x| tree.range(x)).map(|(r, v)| (r, *v));
            mixed(it, &want, *mask);
        }
        Op::Gaps(r, mask) => {
            let want = match r.model() {
                Some((a, b)) => model.gaps(a, b),
                None => vec![],
            };
            let got: Vec<_> = with_range!(r, |x| tree.gaps(x)).collect();
            assert_eq!(got, want, "gaps {r:?}");
            let mut back: Vec<_> = with_range!(r, |x| tree.gaps(x)).rev().collect();
            back.reverse();
            assert_eq!(back, want, "gaps rev {r:?}");
            mixed(with_range!(r, |x| tree.gaps(x)), &want, *mask);
        }
        Op::Aligned(r, size, a, high) => {
            let (align, fit) = (1u64 << a, if *high { Fit::Highest } else { Fit::Lowest });
            let got = with_range!(r, |x| tree.empty_area_aligned(x, *size, align, fit));
            check_aligned(model, r, *size, align, fit, got);
        }
        Op::Alloc(r, size, a, high) => {
            let (align, fit) = (1u64 << a, if *high { Fit::Highest } else { Fit::Lowest });
            let v = 0xa110c;
            let got = with_range!(r, |x| tree.alloc_aligned(x, *size, align, fit, v));
            let got_start = got.as_ref().map(|s| *s).map_err(|e| e.kind);
            if let Err(e) = &got {
                assert_eq!(e.value, v, "value handed back");
            }
            check_aligned(model, r, *size, align, fit, got_start);
            if let Ok(s) = got {
                model.store(s, s + size - 1, v);
            }
        }
        Op::Remove(i) => {
            let want = model.get(*i);
            assert_eq!(tree.remove(*i).map(|e| (e.range(), *e)), want);
            if let Some((r, _)) = want {
                model.0.remove(r.start());
            }
        }
        Op::Punch(r) => {
            let got = with_range!(r, |x| tree.punch_hole(x)).map(|rm| rm.to_vec());
            match r.model() {
                Some((a, b)) => {
                    let want: Vec<Ent> = model
                        .intersecting(a, b)
                        .into_iter()
                        .map(|(er, v)| ((*er.start()).max(a)..=(*er.end()).min(b), v))
                        .collect();
                    assert_eq!(got, Ok(want), "punch_hole {r:?}");
                    model.store(a, b, 0);
                    model.0.remove(&a);
                }
                None => assert_eq!(got, Err(MapleError::EmptyRange)),
            }
        }
        Op::Pop(back) => {
            let want = if *back {
                model.entries().last().cloned()
            } else {
                model.entries().first().cloned()
            };
            let got = if *back {
                tree.pop_last()
            } else {
                tree.pop_first()
            }
            .map(|e| (e.range(), *e));
            assert_eq!(got, want, "pop (back: {back})");
            if let Some((r, _)) = want {
                model.0.remove(r.start());
            }
        }
        Op::Extend(pairs) => {
            let mut conv: Vec<(RangeInclusive<u64>, u64)> = Vec::new();
            for (r, v) in pairs {
                // Empty ranges are skipped by extend: pass them through as
                // an inverted inclusive range, which also holds no index.
                let rr = match r.model() {
                    Some((a, b)) => {
                        model.store(a, b, *v);
                        a..=b
                    }
                    None => RangeInclusive::new(1, 0),
                };
                conv.push((rr, *v));
            }
            tree.extend(conv);
        }
        Op::Eq => {
            let copy = tree.dup();
            assert!(*tree == copy);
            let rebuilt: MapleTree<u64> = model.entries().into_iter().collect();
            assert!(*tree == rebuilt, "FromIterator of the model's entries");
            if let Some((r, v)) = model.entries().first().cloned() {
                copy.insert(r.clone(), v.wrapping_add(1)).unwrap();
                assert!(*tree != copy, "a changed value compares unequal");
            }
        }
    }
}

fn check_aligned(
    model: &Model,
    r: &R,
    size: u64,
    align: u64,
    fit: Fit,
    got: Result<u64, MapleError>,
) {
    let Some((min, max)) = r.model() else {
        assert_eq!(got, Err(MapleError::EmptyRange));
        return;
    };
    if size == 0 {
        assert_eq!(got, Err(MapleError::ZeroSize));
        return;
    }
    match model.aligned(min, max, size, align, fit) {
        Some(s) => assert_eq!(
            got,
            Ok(s),
            "{fit:?} size {size} align {align} in [{min}, {max}]"
        ),
        None => assert_eq!(
            got,
            Err(MapleError::NoSpace { min, max, size }),
            "{fit:?} size {size} align {align} in [{min}, {max}]"
        ),
    }
}

fn check_all(tree: &MapleTree<u64>, model: &Model) {
    let want = model.entries();
    assert_eq!(ents(tree.iter()), want);
    assert_eq!(
        tree.into_iter().map(|(r, v)| (r, *v)).collect::<Vec<_>>(),
        want
    );
    assert_eq!(tree.first().map(|e| (e.range(), *e)), want.first().cloned());
    assert_eq!(tree.last().map(|e| (e.range(), *e)), want.last().cloned());
    assert_eq!(tree.len(), want.len());
}

fn cases() -> u32 {
    std::env::var("ASPACE_API_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if cfg!(miri) { 2 } else { 256 })
}

#[test]
fn idiomatic_layer_matches_the_model() {
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let len = if cfg!(miri) { 10 } else { 60 };
    runner
        .run(&prop::collection::vec(op(), 1..len), |ops| {
            let mut tree = MapleTree::new();
            let mut model = Model::default();
            for op in &ops {
                apply(&mut tree, &mut model, op);
                check_all(&tree, &model);
            }
            let owned: Vec<Ent> = tree.dup().into_iter().collect();
            assert_eq!(owned, model.entries(), "IntoIterator for MapleTree");
            let mut back: Vec<Ent> = tree.into_iter().rev().collect();
            back.reverse();
            assert_eq!(back, model.entries(), "IntoIterator, from the back");
            Ok(())
        })
        .unwrap();
}

#[test]
fn index_range_forms() {
    let mut runner = TestRunner::new(Config {
        cases: cases() * 4,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&any_range(), |r| {
            prop_assert_eq!(r.call(|f| f()), r.model());
            Ok(())
        })
        .unwrap();
}

#[test]
fn aligned_fit_that_ends_on_an_entry_is_refused() {
    let tree = MapleTree::new();
    tree.insert(0..=0x7ff, 0).unwrap();
    tree.insert(0x1fff..=0x3000, 1).unwrap();
    // [0x1000, 0x1fff] would end on the entry at 0x1fff.
    let got = tree.empty_area_aligned(.., 0x1000, 0x1000, Fit::Lowest);
    assert_eq!(got, Ok(0x4000));
    let got = tree.empty_area_aligned(..=0x2ffe, 0x800, 0x800, Fit::Highest);
    assert_eq!(got, Ok(0x1000));
    tree.insert(0x800..=0x800, 2).unwrap();
    // Now [0x1000, 0x17ff] is the only aligned fit of 0x800 below 0x1fff.
    let got = tree.empty_area_aligned(..0x1fff, 0x800, 0x800, Fit::Highest);
    assert_eq!(got, Ok(0x1000));
    let got = tree.empty_area_aligned(0x801..0x1fff, 0x800, 0x800, Fit::Lowest);
    assert_eq!(got, Ok(0x1000));

    // Top-down: the run [0x1001, 0x1fff] holds 0x100 indices but no start
    // aligned to 0x1000 (0x1000 itself is the end of the entry below).
    let t = MapleTree::new();
    t.insert(0x800..=0x1000, 0).unwrap();
    t.insert(0x2000..=0x2fff, 1).unwrap();
    let got = t.empty_area_aligned(..0x2000, 0x100, 0x1000, Fit::Highest);
    assert_eq!(got, Ok(0));
}

#[test]
fn aligned_search_at_the_top_of_the_space() {
    let tree = MapleTree::new();
    tree.insert(u64::MAX - 0xfff..=u64::MAX, 1).unwrap();
    let top = tree.empty_area_aligned(.., 0x1000, 0x1000, Fit::Highest);
    assert_eq!(top, Ok(u64::MAX - 0x1fff));
    // A run whose aligned start would overflow: none found, no panic.
    let t2 = MapleTree::new();
    t2.insert(0..=u64::MAX - 2, 0).unwrap();
    assert_eq!(
        t2.empty_area_aligned(.., 1, 1 << 63, Fit::Lowest),
        Err(MapleError::NoSpace {
            min: 0,
            max: u64::MAX,
            size: 1
        })
    );
    assert_eq!(
        t2.empty_area_aligned(.., 1, 3, Fit::Lowest),
        Err(MapleError::BadAlignment { align: 3 })
    );
    assert_eq!(t2.gaps(..).collect::<Vec<_>>(), [u64::MAX - 1..=u64::MAX]);
}

#[test]
fn entries_outlive_their_iterator_beside_writes() {
    let tree: MapleTree<String> = (0..64u64)
        .map(|i| (i * 4..=i * 4 + 1, i.to_string()))
        .collect();
    let kept: Vec<_> = tree.iter().collect();
    tree.insert(.., "gone".to_string()).unwrap();
    // Every entry still reads its old value: each holds its own pin.
    for (i, e) in kept.iter().enumerate() {
        assert_eq!(*e.1, i.to_string());
    }
    assert_eq!(tree.len(), 1);
}
