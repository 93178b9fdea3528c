//! Differential fuzzing of the maple tree against a `BTreeMap` reference.
//!
//! Every input is a sequence of operations over one of two key spaces: a
//! small one (0..96, so ranges collide, split and merge constantly) and a
//! large one (the whole `u64` space with bias towards 0, `u64::MAX` and
//! page-sized keys). After each operation the tree must agree with the model
//! and `MapleTree::validate` (every structural invariant) must pass. Values
//! are boxed so the address sanitizer sees any double drop or use after free.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use aspace_maple::{MapleError, MapleTree};
use std::collections::{BTreeMap, VecDeque};

#[derive(Clone, Debug, PartialEq, Eq)]
struct Val(Box<u32>);

/// A range: `first = key(a)`; `last` is either `first + len` or a second
/// key (which may lie below `first`: an inverted, refused range).
#[derive(Arbitrary, Clone, Copy, Debug)]
struct R {
    a: u64,
    len: u16,
    last: Option<u64>,
}

#[derive(Arbitrary, Clone, Copy, Debug)]
struct Gap {
    min: u64,
    max: u64,
    size: u64,
    rev: bool,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Store(R, u32),
    Insert(R, u32),
    Erase(u64),
    Remove(u64),
    RemoveRange(R),
    /// store over exactly the bounds of the model's `k % len`-th entry (the
    /// exact-fit write), through `&self` or a shared cursor
    Overwrite {
        k: u64,
        v: u32,
        cursor: bool,
    },
    Load(u64),
    Find(u64),
    Prev(u64),
    Iter {
        lo: u64,
        hi: u64,
        pattern: u32,
    },
    EmptyArea(Gap),
    Alloc(Gap, u32),
    Fill {
        start: u64,
        count: u8,
        stride: u8,
    },
    Clear,
    Dup {
        keep_copy: bool,
    },
    Cursor {
        exclusive: bool,
        ops: Vec<COp>,
    },
    /// One reader's range iteration stepped from both ends, with writes
    /// through the tree between the steps.
    IterWrites {
        lo: u64,
        hi: u64,
        steps: Vec<IStep>,
    },
}

#[derive(Arbitrary, Debug)]
enum IStep {
    Front,
    Back,
    Store(R, u32),
    Erase(u64),
}

#[derive(Arbitrary, Debug)]
enum COp {
    Walk(u64),
    Next,
    Prev,
    Store(R, u32),
    Insert(R, u32),
    Erase,
    EmptyArea(Gap),
    PreallocatedStore(R, u32),
}

#[derive(Arbitrary, Debug)]
struct Input {
    large: bool,
    ops: Vec<Op>,
}

struct Keys {
    large: bool,
}

impl Keys {
    fn key(&self, raw: u64) -> u64 {
        if !self.large {
            return raw % 96;
        }
        match raw & 3 {
            0 => u64::MAX - (raw >> 2) % 64,
            1 => (raw >> 2) % 64,
            2 => ((raw >> 2) % 4096) << 12,
            _ => raw,
        }
    }

    fn range(&self, r: R) -> (u64, u64) {
        let first = self.key(r.a);
        let last = match r.last {
            Some(l) => self.key(l),
            None if self.large => first.saturating_add(u64::from(r.len)),
            None => first.saturating_add(u64::from(r.len % 8)),
        };
        (first, last)
    }

    fn gap(&self, g: Gap) -> (u64, u64, u64) {
        let size = if self.large {
            match g.size & 3 {
                0 => (g.size >> 2) % 0x4000,
                1 => g.size >> 2,
                _ => ((g.size >> 2) % 16) << 12,
            }
        } else {
            g.size % 48
        };
        (self.key(g.min), self.key(g.max), size)
    }
}

type Item = (u64, u64, u32);

/// The reference: first -> (last, value), never overlapping.
#[derive(Default, Clone)]
struct Model {
    m: BTreeMap<u64, (u64, u32)>,
}

impl Model {
    fn load(&self, i: u64) -> Option<Item> {
        self.m
            .range(..=i)
            .next_back()
            .filter(|(_, (e, _))| *e >= i)
            .map(|(s, (e, v))| (*s, *e, *v))
    }

    fn find(&self, i: u64) -> Option<Item> {
        self.load(i)
            .or_else(|| self.m.range(i..).next().map(|(s, (e, v))| (*s, *e, *v)))
    }

    fn prev(&self, i: u64) -> Option<Item> {
        self.m
            .range(..=i)
            .next_back()
            .map(|(s, (e, v))| (*s, *e, *v))
    }

    fn overlapping(&self, f: u64, l: u64) -> Vec<Item> {
        if f > l {
            return Vec::new();
        }
        let mut v: Vec<Item> = self
            .m
            .range(..=l)
            .rev()
            .take_while(|(_, (e, _))| *e >= f)
            .map(|(s, (e, v))| (*s, *e, *v))
            .collect();
        v.reverse();
        v
    }

    fn store(&mut self, f: u64, l: u64, v: u32) {
        for (s, e, old) in self.overlapping(f, l) {
            self.m.remove(&s);
            if s < f {
                self.m.insert(s, (f - 1, old));
            }
            if e > l {
                self.m.insert(l + 1, (e, old));
            }
        }
        self.m.insert(f, (l, v));
    }

    fn insert(&mut self, f: u64, l: u64, v: u32) -> Result<(), MapleError> {
        if f > l {
            return Err(MapleError::InvertedRange { first: f, last: l });
        }
        if !self.overlapping(f, l).is_empty() {
            return Err(MapleError::Occupied { first: f, last: l });
        }
        self.m.insert(f, (l, v));
        Ok(())
    }

    fn erase(&mut self, i: u64) -> Option<Item> {
        let e = self.load(i)?;
        self.m.remove(&e.0);
        Some(e)
    }

    fn gap(&self, min: u64, max: u64, size: u64, rev: bool) -> Result<u64, MapleError> {
        if size == 0 {
            return Err(MapleError::ZeroSize);
        }
        if min > max {
            return Err(MapleError::InvertedBounds { min, max });
        }
        let mut gaps = Vec::new();
        let mut at = Some(min);
        for (s, e, _) in self.overlapping(min, max) {
            if let Some(a) = at {
                if s > a {
                    gaps.push((a, s - 1));
                }
            }
            at = e.checked_add(1);
        }
        if let Some(a) = at {
            if a <= max {
                gaps.push((a, max));
            }
        }
        let fits = |&&(a, b): &&(u64, u64)| b - a >= size - 1;
        let hit = if rev {
            gaps.iter().rev().find(fits).map(|&(_, b)| b - (size - 1))
        } else {
            gaps.iter().find(fits).map(|&(a, _)| a)
        };
        hit.ok_or(MapleError::NoSpace { min, max, size })
    }

    fn all(&self) -> Vec<Item> {
        self.m.iter().map(|(s, (e, v))| (*s, *e, *v)).collect()
    }
}

fn item(e: Option<aspace_maple::Item<'_, Val>>) -> Option<Item> {
    e.map(|(r, v)| (*r.start(), *r.end(), *v.0))
}

fn check_contents(tree: &MapleTree<Val>, model: &Model) {
    assert_eq!(tree.len(), model.m.len(), "len");
    assert_eq!(
        tree.memory_usage().entries,
        model.m.len(),
        "memory_usage.entries"
    );
    let snap = tree.reader();
    let got: Vec<Item> = snap
        .iter()
        .map(|(r, v)| item(Some((r, v))).unwrap())
        .collect();
    assert_eq!(got, model.all(), "iteration");
    if let Err(e) = tree.validate() {
        panic!("invalid tree: {e}");
    }
}

fn run_cursor(
    tree: &mut MapleTree<Val>,
    model: &mut Model,
    keys: &Keys,
    exclusive: bool,
    ops: &[COp],
) {
    let mut c = if exclusive {
        tree.cursor_mut()
    } else {
        tree.cursor()
    };
    // The model's idea of the cursor's position.
    let mut pos = 0u64;
    for op in ops.iter().take(32) {
        match *op {
            COp::Walk(i) => {
                let i = keys.key(i);
                pos = i;
                assert_eq!(item(c.walk(i)), model.load(i), "cursor walk {i}");
            }
            COp::Next => {
                let want = model
                    .m
                    .range(pos..)
                    .find(|(s, _)| **s > pos)
                    .map(|(s, (e, v))| (*s, *e, *v));
                assert_eq!(item(c.next()), want, "cursor next from {pos}");
                if let Some(w) = want {
                    pos = w.0;
                }
            }
            COp::Prev => {
                let want = model
                    .m
                    .range(..=pos)
                    .rev()
                    .find(|(_, (e, _))| *e < pos)
                    .map(|(s, (e, v))| (*s, *e, *v));
                assert_eq!(item(c.prev()), want, "cursor prev from {pos}");
                if let Some(w) = want {
                    pos = w.0;
                }
            }
            COp::Store(r, v) | COp::PreallocatedStore(r, v) => {
                let (f, l) = keys.range(r);
                let pre = matches!(op, COp::PreallocatedStore(..));
                let before = if pre {
                    c.preallocate(f, l);
                    Some(c.unreserved_allocations())
                } else {
                    None
                };
                let got = c.store_range(f, l, Val(Box::new(v)));
                if f > l {
                    let e = got.unwrap_err();
                    assert_eq!(e.kind, MapleError::InvertedRange { first: f, last: l });
                    assert_eq!(*e.value.0, v, "value handed back");
                } else {
                    got.unwrap();
                    model.store(f, l, v);
                    pos = f;
                    if let Some(b) = before {
                        assert_eq!(
                            c.unreserved_allocations(),
                            b,
                            "preallocated store of [{f}, {l}] allocated a node"
                        );
                    }
                }
                assert_eq!(c.index(), pos);
            }
            COp::Insert(r, v) => {
                let (f, l) = keys.range(r);
                let want = model.insert(f, l, v);
                match c.insert_range(f, l, Val(Box::new(v))) {
                    Ok(()) => {
                        assert_eq!(want, Ok(()), "cursor insert [{f}, {l}]");
                        pos = f;
                    }
                    Err(e) => {
                        assert_eq!(Err(e.kind), want, "cursor insert [{f}, {l}]");
                        assert_eq!(*e.value.0, v);
                    }
                }
                assert_eq!(c.index(), pos);
            }
            COp::Erase => {
                let want = model.erase(pos).map(|(s, e, _)| s..=e);
                assert_eq!(c.erase(), want, "cursor erase at {pos}");
            }
            COp::EmptyArea(g) => {
                let (min, max, size) = keys.gap(g);
                let want = model.gap(min, max, size, g.rev);
                let got = if g.rev {
                    c.empty_area_rev(min, max, size)
                } else {
                    c.empty_area(min, max, size)
                };
                assert_eq!(
                    got, want,
                    "cursor empty_area({min}, {max}, {size}, rev={})",
                    g.rev
                );
                if let Ok(s) = got {
                    pos = s;
                }
                assert_eq!(c.index(), pos);
            }
        }
    }
}

/// Checks the iteration contract with writes between the steps: the front
/// yields in increasing order, the back in decreasing order, the two never
/// overlap, every yielded entry existed at some moment since the reader
/// began, and once the iteration ends every entry unchanged throughout it
/// was yielded.
fn iter_writes(
    tree: &MapleTree<Val>,
    model: &mut Model,
    keys: &Keys,
    lo: u64,
    hi: u64,
    steps: &[IStep],
) {
    use std::collections::HashSet;
    let (lo, hi) = (
        keys.key(lo).min(keys.key(hi)),
        keys.key(lo).max(keys.key(hi)),
    );
    let snap = tree.reader();
    let mut it = snap.range(lo, hi);
    let mut seen: HashSet<Item> = model.all().into_iter().collect();
    let mut unchanged = seen.clone();
    let (mut front, mut back): (Vec<Item>, Vec<Item>) = (Vec::new(), Vec::new());
    let mut ended = false;
    let check = |e: Item, is_front: bool, front: &[Item], back: &[Item], seen: &HashSet<Item>| {
        assert!(e.0 <= hi && e.1 >= lo, "{e:?} outside [{lo}, {hi}]");
        assert!(
            seen.contains(&e),
            "{e:?} never existed since the reader began"
        );
        let (own, other) = if is_front {
            (front, back)
        } else {
            (back, front)
        };
        if let Some(p) = own.last() {
            let ok = if is_front { p.1 < e.0 } else { e.1 < p.0 };
            assert!(ok, "{e:?} out of order after {p:?}");
        }
        if let Some(o) = other.last() {
            let ok = if is_front { e.1 < o.0 } else { o.1 < e.0 };
            assert!(ok, "{e:?} overlaps {o:?} from the other end");
        }
    };
    for step in steps.iter().take(64) {
        match *step {
            IStep::Front | IStep::Back => {
                let is_front = matches!(step, IStep::Front);
                let got = if is_front { it.next() } else { it.next_back() };
                match item(got) {
                    None => ended = true,
                    Some(e) => {
                        check(e, is_front, &front, &back, &seen);
                        if is_front {
                            front.push(e);
                        } else {
                            back.push(e);
                        }
                    }
                }
            }
            IStep::Store(r, v) => {
                let (f, l) = keys.range(r);
                if f <= l {
                    tree.store_range(f, l, Val(Box::new(v))).unwrap();
                    model.store(f, l, v);
                }
            }
            IStep::Erase(i) => {
                let i = keys.key(i);
                let got = tree.erase(i).map(|e| (e.first(), e.last(), *e.value().0));
                assert_eq!(got, model.erase(i), "erase {i} during iteration");
            }
        }
        let now: HashSet<Item> = model.all().into_iter().collect();
        unchanged.retain(|e| now.contains(e));
        seen.extend(now);
    }
    if !ended {
        while let Some(e) = item(it.next()) {
            check(e, true, &front, &back, &seen);
            front.push(e);
        }
    }
    let yielded: HashSet<Item> = front.into_iter().chain(back).collect();
    for e in unchanged.iter().filter(|e| e.0 <= hi && e.1 >= lo) {
        assert!(
            yielded.contains(e),
            "{e:?} unchanged throughout but not yielded"
        );
    }
}

fn run(input: Input) {
    let keys = Keys { large: input.large };
    let mut tree: MapleTree<Val> = MapleTree::new();
    let mut model = Model::default();
    for op in input.ops.iter().take(256) {
        match *op {
            Op::Store(r, v) => {
                let (f, l) = keys.range(r);
                match tree.store_range(f, l, Val(Box::new(v))) {
                    Ok(()) => {
                        assert!(f <= l);
                        model.store(f, l, v);
                    }
                    Err(e) => {
                        assert_eq!(e.kind, MapleError::InvertedRange { first: f, last: l });
                        assert_eq!(e.into_value(), Val(Box::new(v)));
                    }
                }
            }
            Op::Insert(r, v) => {
                let (f, l) = keys.range(r);
                let want = model.insert(f, l, v);
                let got = tree.insert_range(f, l, Val(Box::new(v)));
                assert_eq!(got.map_err(|e| e.kind), want, "insert [{f}, {l}]");
            }
            Op::Erase(i) => {
                let i = keys.key(i);
                let got = tree.erase(i).map(|e| (e.first(), e.last(), *e.value().0));
                assert_eq!(got, model.erase(i), "erase {i}");
            }
            Op::Remove(i) => {
                let i = keys.key(i);
                let got = tree.take(i).map(|(r, v)| (*r.start(), *r.end(), *v.0));
                assert_eq!(got, model.erase(i), "remove {i}");
            }
            Op::RemoveRange(r) => {
                let (f, l) = keys.range(r);
                match tree.remove_range(f, l) {
                    Ok(removed) => {
                        let got: Vec<Item> = removed
                            .iter()
                            .map(|(r, v)| (*r.start(), *r.end(), *v.0))
                            .collect();
                        let want: Vec<Item> = model
                            .overlapping(f, l)
                            .into_iter()
                            .map(|(s, e, v)| (s.max(f), e.min(l), v))
                            .collect();
                        assert_eq!(got, want, "remove_range [{f}, {l}]");
                        for (s, e, old) in model.overlapping(f, l) {
                            model.m.remove(&s);
                            if s < f {
                                model.m.insert(s, (f - 1, old));
                            }
                            if e > l {
                                model.m.insert(l + 1, (e, old));
                            }
                        }
                    }
                    Err(e) => assert_eq!(e, MapleError::InvertedRange { first: f, last: l }),
                }
            }
            Op::Overwrite { k, v, cursor } => {
                if !model.m.is_empty() {
                    let at = (k % model.m.len() as u64) as usize;
                    let (&f, &(l, _)) = model.m.iter().nth(at).unwrap();
                    let nodes = tree.memory_usage().nodes;
                    if cursor {
                        let mut c = tree.cursor();
                        c.walk(f);
                        c.store_range(f, l, Val(Box::new(v))).unwrap();
                    } else {
                        tree.store_range(f, l, Val(Box::new(v))).unwrap();
                    }
                    model.store(f, l, v);
                    assert_eq!(
                        tree.memory_usage().nodes,
                        nodes,
                        "exact overwrite [{f}, {l}]"
                    );
                }
            }
            Op::Load(i) => {
                let i = keys.key(i);
                let got = tree.load(i).map(|e| (e.first(), e.last(), *e.0));
                assert_eq!(got, model.load(i), "load {i}");
                assert_eq!(
                    item(tree.reader().load(i)),
                    model.load(i),
                    "snapshot load {i}"
                );
            }
            Op::Find(i) => {
                let i = keys.key(i);
                let got = tree.find(i).map(|e| (e.first(), e.last(), *e.value().0));
                assert_eq!(got, model.find(i), "find {i}");
                assert_eq!(
                    item(tree.reader().find(i)),
                    model.find(i),
                    "snapshot find {i}"
                );
            }
            Op::Prev(i) => {
                let i = keys.key(i);
                let got = tree
                    .prev(i)
                    .map(|e| (*e.range().start(), e.last(), *e.value().0));
                assert_eq!(got, model.prev(i), "prev {i}");
                assert_eq!(
                    item(tree.reader().prev(i)),
                    model.prev(i),
                    "snapshot prev {i}"
                );
            }
            Op::Iter { lo, hi, pattern } => {
                let (lo, hi) = (keys.key(lo), keys.key(hi));
                let snap = tree.reader();
                let mut want: VecDeque<Item> = model.overlapping(lo, hi).into();
                let mut it = snap.range(lo, hi);
                let mut bits = pattern;
                loop {
                    let back = bits & 1 == 1;
                    bits = bits.rotate_right(1);
                    let (got, exp) = if back {
                        (item(it.next_back()), want.pop_back())
                    } else {
                        (item(it.next()), want.pop_front())
                    };
                    assert_eq!(got, exp, "range({lo}, {hi}) stepping {pattern:#x}");
                    if got.is_none() {
                        break;
                    }
                }
                assert!(it.next().is_none() && it.next_back().is_none(), "fused");
                let back: Vec<Item> = snap
                    .iter()
                    .rev()
                    .map(|(r, v)| item(Some((r, v))).unwrap())
                    .collect();
                let mut all = model.all();
                all.reverse();
                assert_eq!(back, all, "reverse iteration");
                assert_eq!(snap.len(), model.m.len());
                assert_eq!(snap.is_empty(), model.m.is_empty());
            }
            Op::EmptyArea(g) => {
                let (min, max, size) = keys.gap(g);
                let want = model.gap(min, max, size, g.rev);
                let (got, snap) = if g.rev {
                    (
                        tree.empty_area_rev(min, max, size),
                        tree.reader().empty_area_rev(min, max, size),
                    )
                } else {
                    (
                        tree.empty_area(min, max, size),
                        tree.reader().empty_area(min, max, size),
                    )
                };
                assert_eq!(got, want, "empty_area({min}, {max}, {size}, rev={})", g.rev);
                assert_eq!(snap, want, "snapshot empty_area");
            }
            Op::Alloc(g, v) => {
                let (min, max, size) = keys.gap(g);
                let want = model.gap(min, max, size, g.rev);
                let got = if g.rev {
                    tree.alloc_range_rev(min, max, size, Val(Box::new(v)))
                } else {
                    tree.alloc_range(min, max, size, Val(Box::new(v)))
                };
                match got {
                    Ok(s) => {
                        assert_eq!(Ok(s), want, "alloc({min}, {max}, {size}, rev={})", g.rev);
                        model.store(s, s + (size - 1), v);
                    }
                    Err(e) => {
                        assert_eq!(
                            Err(e.kind),
                            want,
                            "alloc({min}, {max}, {size}, rev={})",
                            g.rev
                        );
                        assert_eq!(*e.value.0, v);
                    }
                }
            }
            Op::Fill {
                start,
                count,
                stride,
            } => {
                let base = keys.key(start);
                let step = u64::from(stride) + 1;
                for k in 0..u64::from(count) * 2 {
                    let Some(f) = base.checked_add(k * step) else {
                        break;
                    };
                    let l = f.saturating_add(u64::from(stride / 2));
                    tree.store_range(f, l, Val(Box::new(k as u32))).unwrap();
                    model.store(f, l, k as u32);
                }
            }
            Op::Clear => {
                tree.clear();
                model.m.clear();
                assert!(tree.is_empty());
            }
            Op::Dup { keep_copy } => {
                let copy = tree.dup();
                check_contents(&copy, &model);
                if keep_copy {
                    tree = copy;
                }
            }
            Op::Cursor { exclusive, ref ops } => {
                run_cursor(&mut tree, &mut model, &keys, exclusive, ops)
            }
            Op::IterWrites { lo, hi, ref steps } => {
                iter_writes(&tree, &mut model, &keys, lo, hi, steps)
            }
        }
        check_contents(&tree, &model);
    }
}

fuzz_target!(|input: Input| run(input));
