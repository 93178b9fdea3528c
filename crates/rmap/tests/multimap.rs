//! `IntervalMultimap` against a `Vec` kept in the documented iteration
//! order: by `(first, last)`, ties in insertion order, an `insert_after`
//! child right after its parent.

use proptest::prelude::*;
use rmap::{Handle, Interval, IntervalMultimap, RmapError};

/// The reference: entries in iteration order.
#[derive(Default)]
struct Model {
    v: Vec<(Interval, Handle, u64)>,
}

impl Model {
    fn key(iv: Interval) -> (u64, u64) {
        (iv.first, iv.last)
    }
    fn insert(&mut self, iv: Interval, h: Handle, val: u64) {
        // After every entry whose key is <= iv's.
        let pos = self.v.partition_point(|e| Self::key(e.0) <= Self::key(iv));
        self.v.insert(pos, (iv, h, val));
    }
    fn insert_after(&mut self, parent: Handle, iv: Interval, h: Handle, val: u64) {
        let p = self.v.iter().position(|e| e.1 == parent).unwrap();
        if self.v[p].0 == iv {
            self.v.insert(p + 1, (iv, h, val));
        } else {
            self.insert(iv, h, val);
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u64, u64),
    InsertAfter(usize, bool, u64, u64),
    Remove(usize),
    RemoveStale(usize),
    Query(u64, u64),
    Mutate(usize),
}

fn op() -> impl Strategy<Value = Op> {
    // Few distinct intervals, so groups of identical ones form.
    let a = 0u64..12;
    prop_oneof![
        4 => (a.clone(), 0u64..4).prop_map(|(a, l)| Op::Insert(a, a + l)),
        2 => (any::<usize>(), any::<bool>(), a.clone(), 0u64..4)
            .prop_map(|(k, s, a, l)| Op::InsertAfter(k, s, a, a + l)),
        3 => any::<usize>().prop_map(Op::Remove),
        1 => any::<usize>().prop_map(Op::RemoveStale),
        2 => (0u64..20, 0u64..20).prop_map(|(a, b)| Op::Query(a, b)),
        1 => any::<usize>().prop_map(Op::Mutate),
    ]
}

proptest! {
    // Miri: 2 cases of up to 60 ops (interpreted, each op is ~1,000x slower).
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 2 } else { ProptestConfig::default().cases },
        // Miri's isolation refuses the getcwd that the regression file needs.
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        ..ProptestConfig::default()
    })]
    #[test]
    fn model_vs_vec(ops in proptest::collection::vec(op(), if cfg!(miri) { 1..60 } else { 1..250 })) {
        let mut m: IntervalMultimap<u64> = IntervalMultimap::new();
        let mut model = Model::default();
        let mut dead: Vec<Handle> = Vec::new();
        let mut next = 0u64;
        for op in ops {
            match op {
                Op::Insert(a, b) => {
                    let iv = Interval::new(a, b).unwrap();
                    next += 1;
                    let h = m.insert(iv, next).unwrap();
                    model.insert(iv, h, next);
                }
                Op::InsertAfter(k, same, a, b) => {
                    if model.v.is_empty() {
                        continue;
                    }
                    let (piv, parent, _) = model.v[k % model.v.len()];
                    let iv = if same { piv } else { Interval::new(a, b).unwrap() };
                    next += 1;
                    let h = m.insert_after(parent, iv, next).unwrap();
                    model.insert_after(parent, iv, h, next);
                }
                Op::Remove(k) => {
                    if model.v.is_empty() {
                        continue;
                    }
                    let (_, h, val) = model.v.remove(k % model.v.len());
                    prop_assert_eq!(m.remove(h), Ok(val));
                    dead.push(h);
                }
                Op::RemoveStale(k) => {
                    if dead.is_empty() {
                        continue;
                    }
                    let h = dead[k % dead.len()];
                    prop_assert_eq!(m.remove(h), Err(RmapError::UnknownHandle));
                    prop_assert!(m.get(h).is_none());
                    prop_assert!(m.insert_after(h, Interval::new(0, 0).unwrap(), 0).is_err());
                }
                Op::Query(a, b) => {
                    let r = Interval { first: a, last: b };
                    let got: Vec<_> = m.overlapping(r).map(|(iv, h, v)| (iv, h, *v)).collect();
                    let want: Vec<_> = model
                        .v
                        .iter()
                        .copied()
                        .filter(|e| a <= b && e.0.overlaps(&r))
                        .collect();
                    prop_assert_eq!(got, want);
                }
                Op::Mutate(k) => {
                    if model.v.is_empty() {
                        continue;
                    }
                    let i = k % model.v.len();
                    let h = model.v[i].1;
                    *m.get_mut(h).unwrap() += 1000;
                    model.v[i].2 += 1000;
                    prop_assert_eq!(m.interval(h), Some(model.v[i].0));
                }
            }
            prop_assert_eq!(m.len(), model.v.len());
        }
        // The whole order, unsorted.
        let all: Vec<_> = m.iter().map(|(iv, h, v)| (iv, h, *v)).collect();
        prop_assert_eq!(all, model.v.clone());
    }
}

#[test]
fn bad_input_is_an_error_and_changes_nothing() {
    let mut m = IntervalMultimap::new();
    let h = m.insert(Interval::new(1, 2).unwrap(), "a").unwrap();
    assert!(matches!(
        m.insert(Interval { first: 3, last: 1 }, "b"),
        Err(RmapError::InvertedInterval { first: 3, last: 1 })
    ));
    let mut other = IntervalMultimap::new();
    let oh = other.insert(Interval::new(1, 2).unwrap(), "x").unwrap();
    assert_eq!(m.remove(oh), Err(RmapError::ForeignHandle));
    assert_eq!(
        m.insert_after(oh, Interval::new(1, 2).unwrap(), "c"),
        Err(RmapError::ForeignHandle)
    );
    assert_eq!(m.get(oh), None);
    assert_eq!(m.overlapping(Interval { first: 5, last: 0 }).len(), 0);
    assert_eq!(m.len(), 1);
    assert_eq!(m.remove(h), Ok("a"));
    assert!(m.is_empty());
    assert!(m.memory_bytes() >= std::mem::size_of::<IntervalMultimap<&str>>());
}

#[test]
fn many_identical_intervals_remove_one_chosen() {
    let mut m = IntervalMultimap::new();
    let iv = Interval::new(100, 200).unwrap();
    // Miri: 300 entries (interpreted, each insert is ~1,000x slower).
    let n: u32 = if cfg!(miri) { 300 } else { 10_000 };
    let hs: Vec<Handle> = (0..n).map(|i| m.insert(iv, i).unwrap()).collect();
    assert_eq!(m.remove(hs[n as usize / 2]), Ok(n / 2));
    assert_eq!(m.remove(hs[0]), Ok(0));
    let left: Vec<u32> = m.iter().map(|(_, _, v)| *v).collect();
    assert_eq!(left.len(), n as usize - 2);
    assert_eq!(left[0], 1);
    assert!(!left.contains(&(n / 2)));
    assert!(left.windows(2).all(|w| w[0] < w[1]), "insertion order kept");
}
