//! The in-leaf fast path of the write engine (`src/write/fast.rs`): stores
//! that split an entry, restore it, trim it, fill or cut a free run, erase
//! an entry or punch a hole, each inside one leaf, through `&self`, a shared
//! cursor and an exclusive cursor. Every step is checked against a
//! `BTreeMap` model and by the structural validation (pivots, fill, no
//! adjacent gaps, every internal gap equal to the longest free run below
//! it), so a splice that misplaced a slot or a pivot, or a gap not carried
//! up, fails here.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use aspace_maple::MapleTree;

mod common;
use common::Rng;

/// `first -> (last, value)`.
#[derive(Default, Clone, Debug)]
struct Model(BTreeMap<u64, (u64, u64)>);

impl Model {
    /// Frees `[f, l]`, trimming or splitting entries that cross it.
    fn clear(&mut self, f: u64, l: u64) {
        let hit: Vec<(u64, (u64, u64))> = self
            .0
            .range(..=l)
            .rev()
            .take_while(|(_, &(e, _))| e >= f)
            .map(|(&s, &x)| (s, x))
            .collect();
        for (s, (e, v)) in hit {
            self.0.remove(&s);
            if s < f {
                self.0.insert(s, (f - 1, v));
            }
            if e > l {
                self.0.insert(l + 1, (e, v));
            }
        }
    }
    fn store(&mut self, f: u64, l: u64, v: u64) {
        self.clear(f, l);
        self.0.insert(f, (l, v));
    }
    fn containing(&self, i: u64) -> Option<(u64, u64, u64)> {
        let (&s, &(e, v)) = self.0.range(..=i).next_back()?;
        (e >= i).then_some((s, e, v))
    }
    fn entries(&self) -> Vec<(u64, u64, u64)> {
        self.0.iter().map(|(&s, &(e, v))| (s, e, v)).collect()
    }
    /// Lowest free `[s, s + size - 1]` inside `[min, u64::MAX]`.
    fn empty_area(&self, min: u64, size: u64) -> Option<u64> {
        let mut at = min;
        for (&s, &(e, _)) in self.0.range(..) {
            if e < at {
                continue;
            }
            if s > at && s - at >= size {
                return Some(at);
            }
            at = at.max(e.checked_add(1)?);
        }
        (u64::MAX - at >= size - 1).then_some(at)
    }
}

#[derive(Clone, Copy, Debug)]
enum Mode {
    Shared,
    SharedCursor,
    Exclusive,
}

fn check(t: &MapleTree<u64>, m: &Model, what: &str) {
    if let Err(e) = t.validate() {
        panic!("{what}: invalid tree: {e}");
    }
    let got: Vec<(u64, u64, u64)> = t
        .reader()
        .iter()
        .map(|(r, v)| (*r.start(), *r.end(), *v))
        .collect();
    assert_eq!(got, m.entries(), "{what}: entries");
    assert_eq!(t.len(), m.0.len(), "{what}: len");
}

/// One random store that usually stays inside one leaf of a tree of
/// entries `[10i, 10i + 4]`: a split, a restore, a trim, a fill of a gap,
/// part of a gap, an erase (a free store over one entry), a punched hole,
/// or now and then a wider store that takes the general path.
fn pick(r: &mut Rng, n: u64) -> (u64, u64, bool) {
    let k = r.below(n);
    let base = 10 * k;
    match r.below(12) {
        0 | 1 => {
            let x = base + 1 + r.below(3);
            (x, x, true) // split one entry in three
        }
        2 | 3 => (base, base + 4, true), // restore / exact fit
        4 => (base, base + 1 + r.below(3), true), // trim from the left
        5 => (base + 1 + r.below(4), base + 4, true), // trim from the right
        6 => (base + 5, base + 9, true), // fill a whole gap
        7 => {
            let x = base + 5 + r.below(5);
            (x, x, true) // cut a gap in (up to) three
        }
        8 => (base, base + 4, false), // erase one entry
        9 => {
            let x = base + 1 + r.below(3);
            (x, x, false) // punch a hole in an entry
        }
        10 => (base + 3, base + 6 + r.below(10), true), // across an entry's end
        _ => (base, base + 10 * (1 + r.below(30)), r.below(2) == 0), // wide
    }
}

fn run(mode: Mode, n: u64, steps: u64, seed: u64) {
    let mut t = MapleTree::new();
    let mut m = Model::default();
    {
        let mut c = t.cursor_mut();
        for i in 0..n {
            c.store_range(10 * i, 10 * i + 4, i).unwrap();
            m.store(10 * i, 10 * i + 4, i);
        }
    }
    check(&t, &m, "built");
    let mut r = Rng(seed);
    let mut v = 1_000_000u64;
    for step in 0..steps {
        let (f, l, value) = pick(&mut r, n);
        v += 1;
        let what = format!("{mode:?} step {step}: store [{f}, {l}] value {value}");
        match (mode, value) {
            (Mode::Shared, true) => t.store_range(f, l, v).unwrap(),
            (Mode::Shared, false) => drop(t.remove_range(f, l).unwrap()),
            (Mode::SharedCursor, true) => {
                let mut c = t.cursor();
                // Half the time through the cursor's known path.
                if step % 2 == 0 {
                    c.walk(f);
                }
                c.store_range(f, l, v).unwrap();
            }
            (Mode::SharedCursor, false) => drop(t.remove_range(f, l).unwrap()),
            (Mode::Exclusive, true) => {
                let mut c = t.cursor_mut();
                if step % 2 == 0 {
                    c.walk(f);
                }
                c.store_range(f, l, v).unwrap();
            }
            (Mode::Exclusive, false) => {
                // An exact entry: the exclusive erase through the cursor,
                // else a hole punched through &self.
                if m.containing(f).is_some_and(|(s, e, _)| s == f && e == l) {
                    let mut c = t.cursor_mut();
                    c.walk(f);
                    assert_eq!(c.erase(), Some(f..=l), "{what}");
                } else {
                    drop(t.remove_range(f, l).unwrap());
                }
            }
        }
        if value {
            m.store(f, l, v);
        } else {
            m.clear(f, l);
        }
        check(&t, &m, &what);
        // Gap search agrees with the model (the gaps carried up).
        let probe = r.below(10 * n + 20);
        let size = 1 + r.below(12);
        assert_eq!(
            t.empty_area(probe, u64::MAX, size).ok(),
            m.empty_area(probe, size),
            "{what}: empty_area({probe}, size {size})"
        );
    }
}

#[test]
fn splits_and_restores_inside_leaves_match_the_model() {
    let (n, steps) = if cfg!(miri) { (60, 60) } else { (2_000, 6_000) };
    for (k, mode) in [Mode::Shared, Mode::SharedCursor, Mode::Exclusive]
        .into_iter()
        .enumerate()
    {
        run(mode, n, steps, 11 + k as u64);
        // A small tree: the root is a leaf, or two levels.
        run(mode, 6, steps / 4, 101 + k as u64);
        run(mode, 40, steps / 4, 201 + k as u64);
    }
}

/// Splitting every entry of a leaf in turn fills the leaf (the fast path
/// while it fits, then the general path splits the leaf); restoring them
/// empties it again. Checked at every step.
#[test]
fn split_until_the_leaf_overflows_then_restore() {
    // Miri: 100 entries and 20 split (still 60 slots' worth: leaves
    // overflow); every step is validated and compared, which is what costs.
    let (n, split) = if cfg!(miri) {
        (100u64, 20..40u64)
    } else {
        (200, 40..80)
    };
    for exclusive in [false, true] {
        let mut t = MapleTree::new();
        let mut m = Model::default();
        for i in 0..n {
            t.store_range(10 * i, 10 * i + 8, i).unwrap();
            m.store(10 * i, 10 * i + 8, i);
        }
        let mut v = 1_000u64;
        for i in split.clone() {
            for x in [10 * i + 2, 10 * i + 6] {
                v += 1;
                if exclusive {
                    t.cursor_mut().store_range(x, x, v).unwrap();
                } else {
                    t.store_range(x, x, v).unwrap();
                }
                m.store(x, x, v);
                check(&t, &m, &format!("split at {x} (exclusive {exclusive})"));
            }
        }
        for i in split.clone() {
            v += 1;
            if exclusive {
                t.cursor_mut().store_range(10 * i, 10 * i + 8, v).unwrap();
            } else {
                t.store_range(10 * i, 10 * i + 8, v).unwrap();
            }
            m.store(10 * i, 10 * i + 8, v);
            check(&t, &m, &format!("restore {i} (exclusive {exclusive})"));
        }
    }
}

static CLONES_LEFT: AtomicU64 = AtomicU64::new(u64::MAX);
/// `Fragile` values alive (made minus dropped).
static LIVE: AtomicI64 = AtomicI64::new(0);

/// A value whose clone panics once the budget runs out.
#[derive(Debug, PartialEq)]
struct Fragile(u64);

impl Fragile {
    fn new(x: u64) -> Self {
        // Relaxed: test-local counters; only this test makes Fragiles.
        LIVE.fetch_add(1, Ordering::Relaxed);
        Fragile(x)
    }
}

impl Clone for Fragile {
    fn clone(&self) -> Self {
        // Relaxed: as above.
        if CLONES_LEFT.fetch_sub(1, Ordering::Relaxed) == 0 {
            panic!("clone refused (deliberate)");
        }
        Fragile::new(self.0)
    }
}

impl Drop for Fragile {
    fn drop(&mut self) {
        // Relaxed: as above.
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A split whose clone panics leaves the tree exactly as it was, through
/// `&self` and `&mut`, leaks nothing (the value being stored is dropped),
/// and the tree stays usable. Entries with gaps leave room in the leaf
/// (the fast path); adjacent entries built in order fill leaves to 15 of
/// 16 slots, so the split's two extra slots take the general path.
#[test]
fn a_panicking_clone_in_a_split_changes_nothing() {
    // Miri: 120 entries (the split lands in the middle either way).
    let n: u64 = if cfg!(miri) { 120 } else { 500 };
    let at = 10 * (n / 2) + 2;
    for (exclusive, last) in [(false, 4), (true, 4), (false, 9), (true, 9)] {
        let mut t = MapleTree::new();
        for i in 0..n {
            t.store_range(10 * i, 10 * i + last, Fragile::new(i))
                .unwrap();
        }
        let before: Vec<_> = t.reader().iter().map(|(r, v)| (r, v.0)).collect();
        CLONES_LEFT.store(0, Ordering::Relaxed);
        let r = catch_unwind(AssertUnwindSafe(|| {
            if exclusive {
                t.cursor_mut().store_range(at, at, Fragile::new(9)).unwrap();
            } else {
                t.store_range(at, at, Fragile::new(9)).unwrap();
            }
        }));
        CLONES_LEFT.store(u64::MAX, Ordering::Relaxed);
        assert!(r.is_err(), "the clone should have panicked");
        let after: Vec<_> = t.reader().iter().map(|(r, v)| (r, v.0)).collect();
        assert_eq!(after, before, "exclusive {exclusive}, last {last}");
        t.validate().unwrap();
        // Nothing leaked: only the tree's n values are alive (the
        // exclusive path frees at once; the shared one retired nothing).
        assert_eq!(
            LIVE.load(Ordering::Relaxed),
            n as i64,
            "exclusive {exclusive}, last {last}"
        );
        // Usable afterwards: the same split now succeeds.
        t.store_range(at, at, Fragile::new(9)).unwrap();
        assert_eq!(t.load(at + 1).map(|e| e.0), Some(n / 2));
        assert_eq!(t.load(at).map(|e| e.0), Some(9));
        assert_eq!(t.len() as u64, n + 2);
        t.validate().unwrap();
        drop(t);
    }
    // Every value the test made is gone once the trees are (the shared
    // path's replaced values after their grace period).
    // At least a minute before calling it a leak (readers of the tests
    // beside this one may stay pinned that long on a loaded machine).
    for _ in 0..60_000 {
        if LIVE.load(Ordering::Relaxed) == 0 {
            return;
        }
        aspace_maple::flush_retired();
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!("{} values leaked", LIVE.load(Ordering::Relaxed));
}
