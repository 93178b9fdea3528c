//! Differential fuzzing of every reverse-map design against a `Vec` model:
//! inserts (here and from another thread, so an emulated topology puts them
//! on another node), `insert_after`, removes, batches (including refused,
//! all-or-nothing ones), walks of both kinds, stale, duplicated, foreign
//! handles and inverted intervals.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use rmap::designs::aspace::Aspace;
use rmap::{Design, Handle, Interval, ReverseMap, RmapError, Topology, VmaId};

#[derive(Arbitrary, Clone, Copy, Debug)]
struct Iv {
    a: u64,
    len: u8,
    raw_last: Option<u64>,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Insert(Iv, bool),
    InsertAfter(u16, bool),
    Remove(u16),
    RemoveStale(u16),
    InsertBatch(Vec<Iv>),
    RemoveBatch(Vec<u16>),
    BadBatch(Vec<u16>),
    Walk(Iv, bool),
    Foreign,
}

#[derive(Arbitrary, Debug)]
struct Input {
    design: u8,
    emulated: bool,
    promote: bool,
    large: bool,
    ops: Vec<Op>,
}

struct Space {
    large: bool,
}

impl Space {
    fn key(&self, raw: u64) -> u64 {
        if !self.large {
            return raw % 64;
        }
        match raw & 3 {
            0 => u64::MAX - (raw >> 2) % 16,
            1 => (raw >> 2) % 16,
            _ => raw,
        }
    }

    /// A raw interval: may be inverted (first > last) when `raw_last` is set.
    fn raw(&self, iv: Iv) -> Interval {
        let first = self.key(iv.a);
        let last = match iv.raw_last {
            Some(l) => self.key(l),
            None => first.saturating_add(u64::from(iv.len % 16)),
        };
        Interval { first, last }
    }
}

fn collect(m: &dyn ReverseMap, r: Interval, concurrent: bool) -> Vec<(Interval, VmaId)> {
    let mut out = Vec::new();
    let mut f = |i, v| out.push((i, v));
    if concurrent {
        m.walk_concurrent(r, &mut f);
    } else {
        m.walk(r, &mut f);
    }
    out.sort_unstable();
    out
}

fn expect(model: &[(Handle, Interval, VmaId)], r: Interval) -> Vec<(Interval, VmaId)> {
    if r.first > r.last {
        return Vec::new();
    }
    let mut out: Vec<_> = model
        .iter()
        .filter(|e| e.1.overlaps(&r))
        .map(|e| (e.1, e.2))
        .collect();
    out.sort_unstable();
    out
}

fn inverted(iv: Interval) -> Result<(), RmapError> {
    Interval::new(iv.first, iv.last).map(|_| ())
}

fn run(input: Input) {
    let design = Design::ALL[usize::from(input.design) % Design::ALL.len()];
    let topo = if input.emulated {
        Topology::Emulated {
            nodes: 3,
            cpus_per_node: 2,
        }
    } else {
        Topology::Os
    };
    let m: Box<dyn ReverseMap> = if design == Design::Aspace && input.promote {
        let a = Aspace::new(topo.clone());
        a.promote();
        Box::new(a)
    } else {
        design.build(&topo)
    };
    let m = &*m;
    let sp = Space { large: input.large };
    let mut model: Vec<(Handle, Interval, VmaId)> = Vec::new();
    let mut dead: Vec<Handle> = Vec::new();
    let mut next: VmaId = 0;
    let mut spawned = 0;
    for op in input.ops.iter().take(200) {
        match op {
            Op::Insert(iv, away) => {
                let iv = sp.raw(*iv);
                next += 1;
                let got = if *away && spawned < 8 {
                    spawned += 1;
                    std::thread::scope(|s| s.spawn(|| m.insert(iv, next)).join().unwrap())
                } else {
                    m.insert(iv, next)
                };
                match got {
                    Ok(h) => {
                        assert_eq!(inverted(iv), Ok(()));
                        model.push((h, iv, next));
                    }
                    Err(e) => assert_eq!(Err(e), inverted(iv), "{design}: insert {iv:?}"),
                }
            }
            Op::InsertAfter(k, same) => {
                if model.is_empty() {
                    continue;
                }
                let (p, piv, _) = model[usize::from(*k) % model.len()];
                let iv = if *same {
                    piv
                } else {
                    Interval {
                        first: piv.first / 2,
                        last: piv.last,
                    }
                };
                next += 1;
                let h = m.insert_after(p, iv, next).unwrap();
                model.push((h, iv, next));
            }
            Op::Remove(k) => {
                if model.is_empty() {
                    continue;
                }
                let (h, _, _) = model.swap_remove(usize::from(*k) % model.len());
                m.remove(h).unwrap();
                dead.push(h);
            }
            Op::RemoveStale(k) => {
                if dead.is_empty() {
                    continue;
                }
                let h = dead[usize::from(*k) % dead.len()];
                assert_eq!(m.remove(h), Err(RmapError::UnknownHandle), "{design}");
                assert_eq!(
                    m.insert_after(h, Interval { first: 1, last: 2 }, 0),
                    Err(RmapError::UnknownHandle),
                    "{design}"
                );
            }
            Op::InsertBatch(ivs) => {
                let items: Vec<(Interval, VmaId)> = ivs
                    .iter()
                    .take(32)
                    .map(|&i| {
                        next += 1;
                        (sp.raw(i), next)
                    })
                    .collect();
                let want = items.iter().try_for_each(|(i, _)| inverted(*i));
                let mut out = Vec::new();
                let got = m.insert_batch(&items, &mut out);
                assert_eq!(got, want, "{design}: insert_batch");
                if got.is_ok() {
                    assert_eq!(out.len(), items.len());
                    for (h, (i, v)) in out.into_iter().zip(items) {
                        model.push((h, i, v));
                    }
                } else {
                    assert!(
                        out.is_empty(),
                        "{design}: a refused batch hands out no handle"
                    );
                }
            }
            Op::RemoveBatch(ks) => {
                let mut hs = Vec::new();
                for k in ks.iter().take(32) {
                    if model.is_empty() {
                        break;
                    }
                    hs.push(model.swap_remove(usize::from(*k) % model.len()).0);
                }
                m.remove_batch(&hs).unwrap();
                dead.extend(hs);
            }
            Op::BadBatch(ks) => {
                let mut hs: Vec<Handle> = ks
                    .iter()
                    .take(32)
                    .filter(|_| !model.is_empty())
                    .map(|k| model[usize::from(*k) % model.len()].0)
                    .collect();
                if let Some(d) = dead.last() {
                    hs.insert(hs.len() / 2, *d);
                } else if let Some(h) = hs.first().copied() {
                    hs.push(h);
                } else {
                    continue;
                }
                assert_eq!(
                    m.remove_batch(&hs),
                    Err(RmapError::UnknownHandle),
                    "{design}"
                );
            }
            Op::Walk(r, concurrent) => {
                let r = sp.raw(*r);
                assert_eq!(
                    collect(m, r, *concurrent),
                    expect(&model, r),
                    "{design}: walk {r:?}"
                );
            }
            Op::Foreign => {
                let other = design.build(&topo);
                let f = other.insert(Interval { first: 0, last: 1 }, 1).unwrap();
                assert_eq!(m.remove(f), Err(RmapError::ForeignHandle), "{design}");
                assert_eq!(
                    m.insert_after(f, Interval { first: 0, last: 1 }, 2),
                    Err(RmapError::ForeignHandle)
                );
                let mut hs: Vec<Handle> = model.iter().take(3).map(|e| e.0).collect();
                hs.push(f);
                assert_eq!(
                    m.remove_batch(&hs),
                    Err(RmapError::ForeignHandle),
                    "{design}"
                );
            }
        }
        assert_eq!(m.len(), model.len(), "{design}: len");
        assert_eq!(m.is_empty(), model.is_empty());
    }
    assert_eq!(
        collect(m, Interval::FULL, false),
        expect(&model, Interval::FULL)
    );
    let hs: Vec<Handle> = model.iter().map(|e| e.0).collect();
    m.remove_batch(&hs).unwrap();
    assert!(m.is_empty(), "{design}: drained");
    assert!(collect(m, Interval::FULL, true).is_empty());
}

fuzz_target!(|input: Input| run(input));
