//! An iteration driven one way and then another, at every point: `next`
//! for a while, then a fold (`for_each`), `next_back`, or `next` again
//! after a step from the back, over trees of one to four levels and over
//! ranges that start and end inside leaves, against the entries the tree
//! was built from. A `for` loop's step goes from entry to entry of a leaf
//! by its used mask and moves to the next leaf and the next parent without
//! its path; this checks each hand-over between that step and the checked
//! steps, the fold and the back, wherever it falls (first or last slot of
//! a leaf, first or last child of a parent).
//!
//! Sizes shrink under Miri.

mod common;

use std::ops::RangeInclusive;

use aspace_maple::{Inline, MapleTree, XValue};
use common::Rng;

type Ent = (RangeInclusive<u64>, u64);

/// `n` entries of 1 to 4 indices each, with a free run of 0 to 3 indices
/// after each (0: the next entry is adjacent), built in a shuffled order;
/// value `i` for the `i`-th entry. Returns the tree, the same entries in an
/// inline-value tree, and the entries in order.
fn build(n: u64, seed: u64) -> (MapleTree<u64>, MapleTree<XValue, Inline>, Vec<Ent>) {
    let mut rng = Rng(seed);
    let mut want = Vec::new();
    let mut at = rng.below(4);
    for i in 0..n {
        let len = 1 + rng.below(4);
        want.push((at..=at + len - 1, i));
        at += len + rng.below(4);
    }
    let mut order: Vec<usize> = (0..want.len()).collect();
    rng.shuffle(&mut order);
    let tree = MapleTree::new();
    let inline = MapleTree::new_inline();
    for &k in &order {
        let (r, v) = &want[k];
        tree.insert_range(*r.start(), *r.end(), *v).unwrap();
        let x = XValue::new(*v as usize).unwrap();
        inline.insert_range(*r.start(), *r.end(), x).unwrap();
    }
    tree.validate().unwrap();
    inline.validate().unwrap();
    (tree, inline, want)
}

/// The entries of `want` that intersect `[a, b]`.
fn within(want: &[Ent], a: u64, b: u64) -> Vec<Ent> {
    want.iter()
        .filter(|(r, _)| *r.start() <= b && *r.end() >= a)
        .cloned()
        .collect()
}

/// Ranges to walk: all of it, and some that start and end inside entries,
/// inside gaps and past either end (fewer for the largest trees).
fn ranges(want: &[Ent], rng: &mut Rng) -> Vec<(u64, u64)> {
    let end = want.last().map_or(10, |(r, _)| *r.end() + 3);
    let mut out = vec![(0, u64::MAX), (0, end)];
    let more = if want.len() > 1_000 { 2 } else { 4 };
    for _ in 0..more {
        let a = rng.below(end + 1);
        let b = a + rng.below(end + 1 - a);
        out.push((a, b));
    }
    out
}

/// Which switch points to try for `len` entries: every one for small
/// iterations, else about 120 of them (about 20 under Miri).
fn points(len: usize) -> impl Iterator<Item = usize> {
    // An odd stride: across the run it falls on every slot of a leaf and
    // on the first and last child of a parent.
    let stride = if cfg!(miri) {
        (len / 20) | 1
    } else if len <= 300 {
        1
    } else {
        (len / 120) | 1
    };
    (0..=len).step_by(stride).chain([len])
}

fn sizes() -> &'static [u64] {
    if cfg!(miri) {
        &[0, 1, 30, 120]
    } else {
        // (6,000 entries make four levels.)
        &[0, 1, 7, 40, 300, 2_000, 6_000]
    }
}

/// `next` for `k` entries, then the rest by a fold; `next` for `k`, then
/// alternately from the back and the front; each compared with `want`.
fn check<I>(mk: impl Fn() -> I, want: &[Ent], what: &str)
where
    I: DoubleEndedIterator<Item = Ent>,
{
    for k in points(want.len()) {
        let mut it = mk();
        let front: Vec<Ent> = it.by_ref().take(k).collect();
        assert_eq!(front, want[..k], "{what}: the first {k} by next");
        let mut rest = Vec::new();
        it.for_each(|e| {
            // (An iteration that yields too much fails here, not by
            // running out of memory.)
            assert!(
                rest.len() < want.len() - k,
                "{what}: the fold after {k} yields too much"
            );
            rest.push(e);
        });
        assert_eq!(rest, want[k..], "{what}: folded after {k} by next");

        let mut it = mk();
        let mut got_front: Vec<Ent> = it.by_ref().take(k).collect();
        let mut got_back = Vec::new();
        loop {
            assert!(
                got_front.len() + got_back.len() <= want.len(),
                "{what}: {k} by next, then both ends yield too much"
            );
            let b = it.next_back();
            let f = it.next();
            let done = b.is_none() && f.is_none();
            got_back.extend(b);
            got_front.extend(f);
            if done {
                break;
            }
        }
        got_back.reverse();
        got_front.extend(got_back);
        assert_eq!(got_front, want, "{what}: {k} by next, then both ends");
        assert!(
            it.next().is_none() && it.next_back().is_none(),
            "{what}: fused"
        );
    }
    // Every entry by `next`, with a fold of nothing after it.
    let mut it = mk();
    let all: Vec<Ent> = it.by_ref().take(want.len() + 1).collect();
    assert_eq!(all, want, "{what}: by next");
    assert_eq!(it.fold(0, |n, _| n + 1), 0, "{what}: fold after the end");
}

#[test]
fn next_then_fold_or_back_at_every_point() {
    for (s, &n) in sizes().iter().enumerate() {
        let (tree, inline, want) = build(n, 1 + s as u64);
        let mut rng = Rng(100 + s as u64);
        for (a, b) in ranges(&want, &mut rng) {
            let w = within(&want, a, b);
            let what = format!("n {n} range [{a}, {b}]");
            let reader = tree.reader();
            check(
                || reader.range(a, b).map(|(r, v)| (r, *v)),
                &w,
                &format!("{what}, reader"),
            );
            check(
                || tree.range(a..=b).map(|(r, v)| (r, *v)),
                &w,
                &format!("{what}, tree.range"),
            );
            let ir = inline.reader();
            check(
                || ir.range(a, b).map(|(r, v)| (r, v.get() as u64)),
                &w,
                &format!("{what}, inline"),
            );
            // `tree.range` over plain in-slot words, whose items hold no
            // share of the pin (`Entries`).
            check(
                || inline.range(a..=b).map(|(r, v)| (r, v.get() as u64)),
                &w,
                &format!("{what}, inline tree.range"),
            );
        }
    }
}

/// The same switches while another thread keeps storing entries again
/// with their own bounds and values (exact fits: a live leaf's slot gets a
/// new box in place, and whether it holds a value does not change): every
/// entry is unchanged throughout, so every switch must see all of them.
#[test]
fn switches_beside_a_writer() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let n = if cfg!(miri) { 60 } else { 3_000 };
    let (tree, _, want) = build(n, 7);
    let stop = AtomicBool::new(false);
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let mut rng = Rng(9);
            while !stop.load(Ordering::Relaxed) {
                let (r, v) = &want[rng.below(want.len() as u64) as usize];
                tree.store_range(*r.start(), *r.end(), *v).unwrap();
            }
        });
        let rounds = if cfg!(miri) { 2 } else { 30 };
        let mut rng = Rng(11);
        for _ in 0..rounds {
            let k = rng.below(want.len() as u64 + 1) as usize;
            let reader = tree.reader();
            let mut it = reader.iter().map(|(r, v)| (r, *v));
            let mut got: Vec<Ent> = it.by_ref().take(k).collect();
            if rng.below(2) == 0 {
                it.for_each(|e| got.push(e));
            } else {
                let mut back = Vec::new();
                while let Some(e) = it.next_back() {
                    back.push(e);
                    if let Some(e) = it.next() {
                        got.push(e);
                    }
                }
                back.reverse();
                got.extend(back);
            }
            assert_eq!(got, want, "switch after {k}");
        }
        stop.store(true, Ordering::Relaxed);
    });
}

/// Trees built in order, small enough for Miri: entries of 5 indices
/// with a free run of 5 after each (seven entries a leaf, slot 0 a gap,
/// ten leaves a parent: four levels), and entries with no gap between
/// them (each leaf starts with an entry, whose start is the parent's).
/// A `for` loop moves from parent to parent by `next`'s own move
/// (`next_parent_fast`, from the parent found by the move before, or from
/// the path after a climb to the next grandparent, of one level in the
/// four-level trees, of one or two in the five-level one), and hands over
/// to `next_slow` where the range ends in the next parent (also where a
/// climb finds that); with the switches of `check` at about 120 points.
/// (Under Miri: the four-level tree of 800 entries and a smaller one of
/// three levels, the whole range, and the `for` loops only.)
#[test]
fn switches_across_parents() {
    let layouts: &[(u64, u64)] = if cfg!(miri) {
        // (800: four levels, one climb past the grandparent's end.)
        &[(800, 10), (500, 5)]
    } else {
        // (12,000 and 40,000: five levels, so that a move from the last
        // parent of a great-grandparent climbs two levels; the 40,000,
        // with no gaps, have three great-grandparents, so that one such
        // climb lands below one that is not the last, and leaves end with
        // an entry, whose end is the leaf's: a bound that a climb wrote
        // wrong shows in the entries.)
        &[(800, 10), (1_600, 5), (12_000, 10), (40_000, 5)]
    };
    for &(n, stride) in layouts {
        let want: Vec<Ent> = (0..n).map(|i| (stride * i..=stride * i + 4, i)).collect();
        let mut tree = MapleTree::new();
        let mut inline = MapleTree::new_inline();
        {
            let mut c = tree.cursor_mut();
            for (r, v) in &want {
                c.store_range(*r.start(), *r.end(), *v).unwrap();
            }
            let mut c = inline.cursor_mut();
            for (r, v) in &want {
                let x = XValue::new(*v as usize).unwrap();
                c.store_range(*r.start(), *r.end(), x).unwrap();
            }
        }
        tree.validate().unwrap();
        inline.validate().unwrap();
        // Whole, and from and to inside entries 2 and 300 (in the fifth
        // parent of the first layout), 0 and 660, 123 and 745 (in the
        // second grandparent of the first layout).
        let at = |i: u64| stride * i + 3;
        // In the five-level layout: to inside the first parent of the
        // second great-grandparent (entries 7,000 to 7,069), where the
        // climb finds the range's end, and from before that climb.
        let ranges = [
            (0, u64::MAX),
            (at(2), at(300)),
            (0, at(660)),
            (at(123), at(745)),
            (0, at(7_030)),
            (at(6_900), at(7_200)),
        ];
        let take = match (cfg!(miri), n > 7_200) {
            (true, _) => 1,
            (false, false) => 4,
            (false, true) => 6,
        };
        for &(a, b) in &ranges[..take] {
            let w = within(&want, a, b);
            let what = format!("{n} in order, stride {stride}, range [{a}, {b}]");
            let mut got = Vec::new();
            for (r, v) in tree.range(a..=b) {
                assert!(
                    got.len() < w.len(),
                    "{what}: for over tree.range yields too much"
                );
                got.push((r, *v));
            }
            assert_eq!(got, w, "{what}: for over tree.range");
            let reader = inline.reader();
            let mut got = Vec::new();
            for (r, v) in reader.range(a, b) {
                assert!(
                    got.len() < w.len(),
                    "{what}: for over a reader yields too much"
                );
                got.push((r, v.get() as u64));
            }
            assert_eq!(got, w, "{what}: for over an inline reader");
            if cfg!(miri) {
                continue;
            }
            check(
                || tree.range(a..=b).map(|(r, v)| (r, *v)),
                &w,
                &format!("{what}, tree.range"),
            );
            let ir = inline.reader();
            check(
                || ir.range(a, b).map(|(r, v)| (r, v.get() as u64)),
                &w,
                &format!("{what}, inline"),
            );
        }
    }
}
