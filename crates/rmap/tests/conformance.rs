//! One conformance suite, run against every design (and against `aspace`
//! both centralised and promoted, and with an emulated 3-node topology so
//! that handles span shards).

use std::sync::Arc;

use proptest::prelude::*;
use rmap::designs::aspace::Aspace;
use rmap::{Design, Handle, Interval, ReverseMap, RmapError, Topology, VmaId};

/// Every map under test, with a label.
fn subjects() -> Vec<(String, Arc<dyn ReverseMap>)> {
    let emu = Topology::Emulated {
        nodes: 3,
        cpus_per_node: 4,
    };
    let mut v: Vec<(String, Arc<dyn ReverseMap>)> = Vec::new();
    for d in Design::ALL {
        v.push((format!("{d}/os"), d.build_arc(&Topology::Os)));
        v.push((format!("{d}/3x4"), d.build_arc(&emu)));
    }
    let a = Aspace::new(emu);
    a.promote();
    assert!(a.is_promoted());
    v.push(("aspace/3x4/promoted".into(), Arc::new(a)));
    v
}

fn iv(a: u64, b: u64) -> Interval {
    Interval::new(a, b).unwrap()
}

fn collect(m: &dyn ReverseMap, r: Interval, concurrent: bool) -> Vec<(Interval, VmaId)> {
    let mut out = Vec::new();
    if concurrent {
        m.walk_concurrent(r, &mut |i, v| out.push((i, v)));
    } else {
        m.walk(r, &mut |i, v| out.push((i, v)));
    }
    out.sort_unstable();
    out
}

fn expect(model: &[(Handle, Interval, VmaId)], r: Interval) -> Vec<(Interval, VmaId)> {
    let mut out: Vec<_> = model
        .iter()
        .filter(|e| e.1.overlaps(&r))
        .map(|e| (e.1, e.2))
        .collect();
    out.sort_unstable();
    out
}

/// Runs `f` on a fresh thread (so an emulated topology gives it another CPU).
fn elsewhere<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| s.spawn(f).join().unwrap())
}

#[derive(Clone, Debug)]
enum Op {
    Insert(Interval, bool),
    InsertAfter(usize, bool),
    Remove(usize),
    RemoveStale(usize),
    InsertBatch(Vec<Interval>),
    RemoveBatch(Vec<usize>),
    BadBatch(Vec<usize>),
    Walk(Interval, bool),
    Inverted(u64, u64),
}

fn interval() -> impl Strategy<Value = Interval> {
    prop_oneof![
        8 => (0u64..60, 0u64..25).prop_map(|(a, l)| Interval { first: a, last: a + l }),
        1 => (0u64..4).prop_map(|k| Interval { first: u64::MAX - k, last: u64::MAX }),
        1 => Just(Interval { first: 0, last: 0 }),
        1 => Just(Interval { first: 5, last: 30 }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (interval(), any::<u8>()).prop_map(|(i, t)| Op::Insert(i, t % 4 == 0)),
        3 => (any::<usize>(), any::<bool>()).prop_map(|(k, same)| Op::InsertAfter(k, same)),
        8 => any::<usize>().prop_map(Op::Remove),
        1 => any::<usize>().prop_map(Op::RemoveStale),
        2 => proptest::collection::vec(interval(), 0..6).prop_map(Op::InsertBatch),
        2 => proptest::collection::vec(any::<usize>(), 0..6).prop_map(Op::RemoveBatch),
        1 => proptest::collection::vec(any::<usize>(), 1..4).prop_map(Op::BadBatch),
        3 => (prop_oneof![interval(), Just(Interval::FULL), (0u64..90, 0u64..90).prop_map(|(a, l)| Interval { first: a, last: a + l })], any::<bool>())
            .prop_map(|(i, c)| Op::Walk(i, c)),
        1 => (1u64..100, 0u64..100).prop_map(|(a, d)| Op::Inverted(a + d, d.min(a + d - 1))),
    ]
}

fn run_model(m: &dyn ReverseMap, ops: &[Op]) {
    let mut model: Vec<(Handle, Interval, VmaId)> = Vec::new();
    let mut dead: Vec<Handle> = Vec::new();
    let mut next: VmaId = 0;
    for op in ops {
        match op {
            Op::Insert(i, away) => {
                next += 1;
                let h = if *away {
                    elsewhere(|| m.insert(*i, next))
                } else {
                    m.insert(*i, next)
                }
                .unwrap();
                model.push((h, *i, next));
            }
            Op::InsertAfter(k, same) => {
                if model.is_empty() {
                    continue;
                }
                let (p, piv, _) = model[k % model.len()];
                let i = if *same {
                    piv
                } else {
                    iv(piv.first / 2, piv.last)
                };
                next += 1;
                let h = m.insert_after(p, i, next).unwrap();
                model.push((h, i, next));
            }
            Op::Remove(k) => {
                if model.is_empty() {
                    continue;
                }
                let (h, _, _) = model.swap_remove(k % model.len());
                m.remove(h).unwrap();
                dead.push(h);
            }
            Op::RemoveStale(k) => {
                if dead.is_empty() {
                    continue;
                }
                let h = dead[k % dead.len()];
                assert_eq!(m.remove(h), Err(RmapError::UnknownHandle));
                assert_eq!(
                    m.insert_after(h, iv(1, 2), 0),
                    Err(RmapError::UnknownHandle)
                );
            }
            Op::InsertBatch(ivs) => {
                let items: Vec<_> = ivs
                    .iter()
                    .map(|&i| {
                        next += 1;
                        (i, next)
                    })
                    .collect();
                let mut out = vec![];
                m.insert_batch(&items, &mut out).unwrap();
                assert_eq!(out.len(), items.len());
                for (h, (i, v)) in out.into_iter().zip(items) {
                    model.push((h, i, v));
                }
            }
            Op::RemoveBatch(ks) => {
                let mut hs = Vec::new();
                for k in ks {
                    if model.is_empty() {
                        break;
                    }
                    hs.push(model.swap_remove(k % model.len()).0);
                }
                m.remove_batch(&hs).unwrap();
                dead.extend(hs);
            }
            Op::BadBatch(ks) => {
                // Live handles plus one dead or duplicated: nothing removed.
                let mut hs: Vec<Handle> = ks
                    .iter()
                    .filter(|_| !model.is_empty())
                    .map(|k| model[k % model.len()].0)
                    .collect();
                if let Some(d) = dead.last() {
                    hs.push(*d);
                } else if let Some(h) = hs.first().copied() {
                    hs.push(h);
                } else {
                    continue;
                }
                assert_eq!(m.remove_batch(&hs), Err(RmapError::UnknownHandle));
            }
            Op::Walk(r, c) => {
                assert_eq!(collect(m, *r, *c), expect(&model, *r), "walk {r:?}");
            }
            Op::Inverted(a, b) => {
                let bad = Interval {
                    first: *a,
                    last: *b,
                };
                assert!(matches!(
                    m.insert(bad, 1),
                    Err(RmapError::InvertedInterval { .. })
                ));
                let mut out = vec![];
                assert!(m
                    .insert_batch(&[(iv(0, 1), 1), (bad, 2)], &mut out)
                    .is_err());
                assert!(out.is_empty());
            }
        }
        assert_eq!(m.len(), model.len());
    }
    assert_eq!(
        collect(m, Interval::FULL, false),
        expect(&model, Interval::FULL)
    );
    // Drain: every remaining handle removes once.
    let hs: Vec<Handle> = model.iter().map(|e| e.0).collect();
    for (i, h) in hs.iter().enumerate() {
        if i % 2 == 0 {
            m.remove(*h).unwrap();
        }
    }
    let odd: Vec<Handle> = hs.iter().skip(1).step_by(2).copied().collect();
    m.remove_batch(&odd).unwrap();
    assert!(m.is_empty());
    assert!(collect(m, Interval::FULL, false).is_empty());
}

proptest! {
    // 15 subjects x 96 cases x ~200 ops: ~10^4 random ops per subject.
    // Miri: 2 cases of 20-60 ops (each op is ~1,000x slower interpreted).
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 2 } else { 96 },
        max_shrink_iters: 2000,
        // Miri's isolation refuses the getcwd that the regression file needs.
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        ..ProptestConfig::default()
    })]
    #[test]
    fn model_vs_vec(ops in proptest::collection::vec(op(), if cfg!(miri) { 20..60 } else { 100..300 })) {
        for (_, m) in subjects() {
            run_model(&*m, &ops);
        }
    }
}

#[test]
fn empty_map() {
    for (name, m) in subjects() {
        assert!(m.is_empty(), "{name}");
        assert!(collect(&*m, Interval::FULL, false).is_empty());
        assert!(collect(&*m, Interval::FULL, true).is_empty());
        assert!(m.memory_bytes() >= std::mem::size_of::<usize>());
        assert!(m.stats().shards >= 1);
        m.remove_batch(&[]).unwrap();
        let mut out = vec![];
        m.insert_batch(&[], &mut out).unwrap();
        assert!(out.is_empty() && m.is_empty());
    }
}

#[test]
fn single_entry() {
    for (name, m) in subjects() {
        let h = m.insert(iv(10, 20), 7).unwrap();
        assert_eq!(m.len(), 1, "{name}");
        assert_eq!(collect(&*m, iv(20, 30), false), vec![(iv(10, 20), 7)]);
        assert_eq!(collect(&*m, iv(0, 10), true), vec![(iv(10, 20), 7)]);
        assert!(collect(&*m, iv(21, 30), false).is_empty());
        assert!(collect(&*m, iv(0, 9), false).is_empty());
        m.remove(h).unwrap();
        assert!(m.is_empty());
        assert_eq!(m.remove(h), Err(RmapError::UnknownHandle));
    }
}

#[test]
fn ten_thousand_identical() {
    // Miri: 64 entries of one interval in each of the 15 maps (200 cost minutes).
    let n: u64 = if cfg!(miri) { 64 } else { 10_000 };
    for (name, m) in subjects() {
        let i = iv(0x28, 0x1ad);
        let mut hs: Vec<Handle> = (0..n).map(|v| m.insert(i, v).unwrap()).collect();
        hs.push(m.insert_after(hs[17], i, n).unwrap());
        assert_eq!(m.len() as u64, n + 1, "{name}");
        let got = collect(&*m, iv(0x100, 0x100), false);
        assert_eq!(got.len() as u64, n + 1);
        assert_eq!(got, (0..=n).map(|v| (i, v)).collect::<Vec<_>>());
        // Remove in a scrambled order: heads and members alike.
        let mut order: Vec<usize> = (0..hs.len()).collect();
        let mut x = 12345u64;
        for k in (1..order.len()).rev() {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            order.swap(k, (x >> 33) as usize % (k + 1));
        }
        let (a, b) = order.split_at(order.len() / 2);
        for &k in a {
            m.remove(hs[k]).unwrap();
        }
        assert_eq!(collect(&*m, Interval::FULL, true).len(), b.len());
        let rest: Vec<Handle> = b.iter().map(|&k| hs[k]).collect();
        m.remove_batch(&rest).unwrap();
        assert!(m.is_empty());
        assert_eq!(m.remove(hs[0]), Err(RmapError::UnknownHandle));
    }
}

#[test]
fn extremes() {
    for (name, m) in subjects() {
        let a = m.insert(iv(0, 0), 1).unwrap();
        let b = m.insert(iv(u64::MAX, u64::MAX), 2).unwrap();
        let c = m.insert(Interval::FULL, 3).unwrap();
        let _d = m.insert(iv(u64::MAX - 1, u64::MAX), 4).unwrap();
        assert_eq!(collect(&*m, iv(0, 0), false).len(), 2, "{name}");
        assert_eq!(collect(&*m, iv(u64::MAX, u64::MAX), false).len(), 3);
        assert_eq!(collect(&*m, Interval::FULL, false).len(), 4);
        assert_eq!(
            collect(&*m, iv(1, u64::MAX - 2), false),
            vec![(Interval::FULL, 3)]
        );
        m.remove_batch(&[a, b, c]).unwrap();
        assert_eq!(
            collect(&*m, Interval::FULL, false),
            vec![(iv(u64::MAX - 1, u64::MAX), 4)]
        );
    }
}

#[test]
fn bad_input() {
    let other = Design::Linux.build(&Topology::Os);
    let foreign = other.insert(iv(1, 2), 9).unwrap();
    for (name, m) in subjects() {
        assert_eq!(
            Interval::new(5, 4),
            Err(RmapError::InvertedInterval { first: 5, last: 4 })
        );
        let inv = Interval { first: 5, last: 4 };
        assert_eq!(
            m.insert(inv, 1),
            Err(RmapError::InvertedInterval { first: 5, last: 4 }),
            "{name}"
        );
        let h = m.insert(iv(1, 3), 1).unwrap();
        let h2 = m.insert(iv(1, 3), 2).unwrap();
        assert_eq!(
            m.insert_after(h, inv, 3),
            Err(RmapError::InvertedInterval { first: 5, last: 4 })
        );
        assert_eq!(m.remove(foreign), Err(RmapError::ForeignHandle));
        assert_eq!(
            m.insert_after(foreign, iv(1, 2), 3),
            Err(RmapError::ForeignHandle)
        );
        assert_eq!(m.remove_batch(&[h, foreign]), Err(RmapError::ForeignHandle));
        assert_eq!(m.remove_batch(&[h, h2, h]), Err(RmapError::UnknownHandle));
        assert_eq!(m.len(), 2, "failed batches remove nothing");
        let mut out = vec![];
        assert!(m
            .insert_batch(&[(iv(0, 1), 1), (inv, 2)], &mut out)
            .is_err());
        assert!(out.is_empty());
        assert_eq!(m.len(), 2, "failed batches insert nothing");
        // An inverted walk range sees nothing and does not panic.
        assert!(collect(&*m, inv, false).is_empty());
        m.remove(h).unwrap();
        assert_eq!(m.remove(h), Err(RmapError::UnknownHandle));
        assert_eq!(m.remove_batch(&[h2, h]), Err(RmapError::UnknownHandle));
        assert_eq!(
            m.insert_after(h, iv(1, 3), 5),
            Err(RmapError::UnknownHandle)
        );
        assert_eq!(collect(&*m, Interval::FULL, false), vec![(iv(1, 3), 2)]);
        // The slot is reused; the old handle still does not alias it.
        let h3 = m.insert(iv(1, 3), 6).unwrap();
        assert_eq!(m.remove(h), Err(RmapError::UnknownHandle));
        m.remove_batch(&[h2, h3]).unwrap();
        assert!(m.is_empty());
        assert!(!RmapError::UnknownHandle.to_string().is_empty());
    }
}

#[test]
fn names_round_trip() {
    for d in Design::EVERY {
        assert_eq!(d.name().parse::<Design>().unwrap(), d);
        assert_eq!(d.to_string(), d.name());
        assert_eq!(d.build(&Topology::Os).design(), d);
    }
    let e = "btree".parse::<Design>().unwrap_err().to_string();
    assert!(
        e.contains("aspace") && e.contains("linux_shared_line"),
        "{e}"
    );
}

#[test]
fn memory_target_five_mappings() {
    let ivs = rmap::bench::libc_like_intervals();
    let linux = Design::Linux.build(&Topology::Os);
    let aspace = Design::Aspace.build(&Topology::Os);
    for (k, i) in ivs.iter().enumerate() {
        linux.insert(*i, k as u64).unwrap();
        aspace.insert(*i, k as u64).unwrap();
    }
    println!(
        "5 mappings: aspace {} B, linux {} B",
        aspace.memory_bytes(),
        linux.memory_bytes()
    );
    assert!(
        aspace.memory_bytes() <= linux.memory_bytes() + 64,
        "aspace {} vs linux {}",
        aspace.memory_bytes(),
        linux.memory_bytes()
    );
}

/// Fork's batch: every child lands next to its parent; a batch with one
/// bad parent changes nothing, in every design.
#[test]
fn insert_after_batch_all_or_nothing() {
    for (name, m) in subjects() {
        let m = &*m;
        let a = elsewhere(|| m.insert(iv(0, 9), 1).unwrap());
        let b = m.insert(iv(20, 29), 2).unwrap();
        let mut out = Vec::new();
        m.insert_after_batch(&[(a, iv(0, 9), 11), (b, iv(20, 29), 12)], &mut out)
            .unwrap();
        assert_eq!(out.len(), 2, "{name}");
        assert_eq!(m.len(), 4, "{name}");
        let mut all = collect(m, Interval::FULL, false);
        all.sort();
        assert_eq!(
            all,
            vec![
                (iv(0, 9), 1),
                (iv(0, 9), 11),
                (iv(20, 29), 2),
                (iv(20, 29), 12)
            ],
            "{name}"
        );
        // A removed parent in the middle of a batch: nothing is inserted.
        m.remove(out[0]).unwrap();
        let dead = out[0];
        let mut more = Vec::new();
        let r = m.insert_after_batch(
            &[(a, iv(0, 9), 21), (dead, iv(0, 9), 22), (b, iv(20, 29), 23)],
            &mut more,
        );
        assert_eq!(r, Err(RmapError::UnknownHandle), "{name}");
        assert!(more.is_empty(), "{name}");
        assert_eq!(m.len(), 3, "{name}: a failed batch left entries behind");
        // An inverted interval is refused before anything happens.
        let r = m.insert_after_batch(&[(a, Interval { first: 5, last: 1 }, 31)], &mut more);
        assert!(
            matches!(r, Err(RmapError::InvertedInterval { .. })),
            "{name}"
        );
        assert_eq!(m.len(), 3, "{name}");
        for h in [a, b, out[1]] {
            m.remove(h).unwrap();
        }
        assert!(m.is_empty(), "{name}");
    }
}

/// Walk order, unsorted: `insert_after` puts the child right after its
/// parent (the kernel's `vma_interval_tree_insert_after`), so a later child
/// of the same parent comes between the parent and the earlier child.
#[test]
fn insert_after_lands_right_after_parent() {
    for (name, m) in subjects() {
        let m = &*m;
        let same = iv(5, 50);
        let p1 = m.insert(same, 1).unwrap();
        let p2 = m.insert(same, 2).unwrap();
        let _p3 = m.insert(same, 3).unwrap();
        m.insert_after(p1, same, 11).unwrap();
        m.insert_after(p2, same, 12).unwrap();
        m.insert_after(p1, same, 13).unwrap();
        let mut batch = Vec::new();
        m.insert_after_batch(&[(p2, same, 22), (p1, same, 21)], &mut batch)
            .unwrap();
        let mut order = Vec::new();
        m.walk(Interval::FULL, &mut |_, v| order.push(v));
        let pos = |v: VmaId| order.iter().position(|&x| x == v).unwrap();
        assert_eq!(order.len(), 8, "{name}: {order:?}");
        // p1's children, newest first, right after it.
        assert_eq!(pos(21), pos(1) + 1, "{name}: {order:?}");
        assert_eq!(pos(13), pos(21) + 1, "{name}: {order:?}");
        assert_eq!(pos(11), pos(13) + 1, "{name}: {order:?}");
        assert_eq!(pos(22), pos(2) + 1, "{name}: {order:?}");
        assert_eq!(pos(12), pos(22) + 1, "{name}: {order:?}");
    }
}

/// A map that forwards everything to a design except `insert_after_batch`,
/// so that the trait's default implementation is what runs.
struct DefaultBatch(Box<dyn ReverseMap>);

impl ReverseMap for DefaultBatch {
    fn design(&self) -> Design {
        self.0.design()
    }
    fn insert(&self, iv: Interval, vma: VmaId) -> Result<Handle, RmapError> {
        self.0.insert(iv, vma)
    }
    fn insert_after(&self, p: Handle, iv: Interval, vma: VmaId) -> Result<Handle, RmapError> {
        self.0.insert_after(p, iv, vma)
    }
    fn check_handle(&self, h: Handle) -> Result<(), RmapError> {
        self.0.check_handle(h)
    }
    fn remove(&self, h: Handle) -> Result<(), RmapError> {
        self.0.remove(h)
    }
    fn insert_batch(
        &self,
        items: &[(Interval, VmaId)],
        out: &mut Vec<Handle>,
    ) -> Result<(), RmapError> {
        self.0.insert_batch(items, out)
    }
    fn remove_batch(&self, handles: &[Handle]) -> Result<(), RmapError> {
        self.0.remove_batch(handles)
    }
    fn walk(&self, range: Interval, f: &mut dyn FnMut(Interval, VmaId)) {
        self.0.walk(range, f)
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn memory_bytes(&self) -> usize {
        self.0.memory_bytes()
    }
    fn stats(&self) -> rmap::LockStats {
        self.0.stats()
    }
}

/// The trait's default `insert_after_batch` checks every parent before it
/// inserts anything: a dead parent last in the batch leaves no entry and
/// takes no write hold.
#[test]
fn default_insert_after_batch_validates_first() {
    for d in Design::ALL {
        let m = DefaultBatch(d.build(&Topology::Os));
        let a = m.insert(iv(0, 9), 1).unwrap();
        let dead = m.insert(iv(0, 9), 2).unwrap();
        m.remove(dead).unwrap();
        let before = m.len();
        let mut out = Vec::new();
        let r = m.insert_after_batch(
            &[(a, iv(0, 9), 3), (a, iv(0, 9), 4), (dead, iv(0, 9), 5)],
            &mut out,
        );
        assert_eq!(r, Err(RmapError::UnknownHandle), "{d}");
        assert!(out.is_empty(), "{d}");
        assert_eq!(m.len(), before, "{d}");
        let other = Design::Linux.build(&Topology::Os);
        let foreign = other.insert(iv(0, 9), 9).unwrap();
        assert_eq!(
            m.insert_after_batch(&[(a, iv(0, 9), 3), (foreign, iv(0, 9), 6)], &mut out),
            Err(RmapError::ForeignHandle),
            "{d}"
        );
        assert_eq!(m.len(), before, "{d}");
        m.insert_after_batch(&[(a, iv(0, 9), 3), (a, iv(0, 9), 4)], &mut out)
            .unwrap();
        assert_eq!(out.len(), 2, "{d}");
        assert_eq!(m.len(), before + 2, "{d}");
        let mut order = Vec::new();
        m.walk(Interval::FULL, &mut |_, v| order.push(v));
        assert_eq!(order, vec![1, 4, 3], "{d}");
    }
}
