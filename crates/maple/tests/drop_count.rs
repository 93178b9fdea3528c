//! A counting `Drop` type proves that every value is dropped exactly once on
//! every path: overwrite, trim, split (the clone), erase, clear, remove, dup,
//! refused writes, and `Drop` of the tree, through both the shared `&self`
//! path and the exclusive `&mut` path.
//!
//! Every value carries a serial number; creation (including `Clone`) adds it
//! to a live set, `Drop` removes it and counts a double drop if it was not
//! there. Shared-path drops are deferred through crossbeam-epoch, so the
//! checks flush the epoch until the live set is what the tree should hold.
//! Each test has its own counters, so the tests can run in parallel.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use aspace_maple::MapleTree;

struct Counters {
    next: AtomicU64,
    created: AtomicUsize,
    dropped: AtomicUsize,
    double_drops: AtomicUsize,
    live: Mutex<HashSet<u64>>,
    /// Clones that may still succeed; the next one panics at zero. Relaxed
    /// throughout: only the thread running `dup` reads and writes it.
    clones_left: AtomicU64,
}

impl Counters {
    fn leak() -> &'static Counters {
        Box::leak(Box::new(Counters {
            next: AtomicU64::new(1),
            created: AtomicUsize::new(0),
            dropped: AtomicUsize::new(0),
            double_drops: AtomicUsize::new(0),
            live: Mutex::new(HashSet::new()),
            clones_left: AtomicU64::new(u64::MAX),
        }))
    }

    fn make(&'static self, tag: u64) -> Tracked {
        let serial = self.next.fetch_add(1, Ordering::Relaxed);
        self.created.fetch_add(1, Ordering::Relaxed);
        self.live.lock().unwrap().insert(serial);
        Tracked {
            serial,
            tag,
            c: self,
        }
    }

    fn live(&self) -> HashSet<u64> {
        self.live.lock().unwrap().clone()
    }

    fn is_live(&self, serial: u64) -> bool {
        self.live.lock().unwrap().contains(&serial)
    }
}

/// A value that records its identity (`serial`, unique per instance, clones
/// included) and what it stands for (`tag`, shared by clones).
struct Tracked {
    serial: u64,
    tag: u64,
    c: &'static Counters,
}

impl Clone for Tracked {
    fn clone(&self) -> Self {
        let left = self.c.clones_left.load(Ordering::Relaxed);
        if left == 0 {
            panic!("clone budget exhausted (deliberate)");
        }
        self.c.clones_left.store(left - 1, Ordering::Relaxed);
        self.c.make(self.tag)
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.c.dropped.fetch_add(1, Ordering::Relaxed);
        if !self.c.live.lock().unwrap().remove(&self.serial) {
            self.c.double_drops.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Flushes deferred destruction until the live set equals `want`, or fails.
/// Also checks that nothing was dropped twice.
#[track_caller]
fn settle(c: &Counters, want: &HashSet<u64>) {
    // At least a minute of 1 ms sleeps before calling it a leak: readers of
    // the tests beside this one may stay pinned that long on a loaded
    // machine. A hang guard, not a timing bound.
    let rounds = if cfg!(miri) { 50 } else { 60_000 };
    for round in 0..rounds {
        let live = c.live();
        assert_eq!(
            c.double_drops.load(Ordering::Relaxed),
            0,
            "a value was dropped twice"
        );
        assert!(
            want.is_subset(&live),
            "dropped too early: {:?}",
            want.difference(&live).collect::<Vec<_>>()
        );
        if live == *want {
            return;
        }
        aspace_maple::flush_retired();
        if round > 2 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let live = c.live();
    panic!(
        "never dropped after {rounds} flushes: {:?} (created {}, dropped {})",
        live.difference(want).collect::<Vec<_>>(),
        c.created.load(Ordering::Relaxed),
        c.dropped.load(Ordering::Relaxed)
    );
}

/// The serials the tree holds now, checking that each is still live.
fn held(t: &MapleTree<Tracked>) -> HashSet<u64> {
    let snap = t.reader();
    let mut s = HashSet::new();
    for (_, v) in snap.iter() {
        assert!(v.c.is_live(v.serial), "the tree holds a dropped value");
        assert!(s.insert(v.serial), "one instance stored twice");
    }
    s
}

#[test]
fn shared_path_every_operation() {
    let c = Counters::leak();
    let t = MapleTree::new();
    let none = HashSet::new();

    // overwrite the same range
    t.store_range(0, 9, c.make(1)).unwrap();
    t.store_range(0, 9, c.make(2)).unwrap();
    settle(c, &held(&t));
    assert_eq!(t.len(), 1);

    // trim: store over the left part, the right part, then split inside
    t.store_range(0, 3, c.make(3)).unwrap();
    t.store_range(8, 12, c.make(4)).unwrap();
    t.store_range(5, 5, c.make(5)).unwrap(); // splits [4,7] into [4,4] and [6,7]
    assert_eq!(t.len(), 5);
    let h = held(&t);
    assert_eq!(h.len(), 5, "the split remnant must be its own clone");
    settle(c, &h);

    // a store covering several entries drops them all
    t.store_range(0, 100, c.make(6)).unwrap();
    settle(c, &held(&t));
    assert_eq!(t.len(), 1);

    // refused writes give the value back; dropping it is the caller's job
    let e = t.insert_range(5, 6, c.make(7)).unwrap_err();
    assert_eq!(e.value.tag, 7);
    drop(e);
    let e = t.store_range(6, 5, c.make(8)).unwrap_err();
    let v = e.into_value();
    assert!(c.is_live(v.serial));
    drop(v);
    let e = t.alloc_range(0, 100, 1, c.make(9)).unwrap_err();
    drop(e);
    settle(c, &held(&t));

    // erase: the Entry keeps the value alive until it is dropped
    let serial = t.load(50).unwrap().serial;
    let e = t.erase(50).unwrap();
    assert_eq!(e.serial, serial);
    assert!(c.is_live(serial));
    drop(e);
    settle(c, &none);
    assert!(t.is_empty());

    // alloc, insert, then clear
    for i in 0..40 {
        t.alloc_range(0, u64::MAX, 3, c.make(100 + i)).unwrap();
        t.try_insert(1000 + i, c.make(200 + i)).unwrap();
    }
    assert_eq!(t.len(), 80);
    settle(c, &held(&t));
    t.clear();
    settle(c, &none);

    // dup copies (clones) every value; both trees drop their own
    for i in 0..100 {
        t.store_range(i * 10, i * 10 + 5, c.make(300 + i)).unwrap();
    }
    let d = t.dup();
    let d2 = d.clone();
    let (ht, hd, hd2) = (held(&t), held(&d), held(&d2));
    assert!(
        ht.is_disjoint(&hd) && hd.is_disjoint(&hd2),
        "dup must clone values"
    );
    let all: HashSet<u64> = ht.iter().chain(&hd).chain(&hd2).copied().collect();
    settle(c, &all);
    drop(d);
    settle(c, &ht.union(&hd2).copied().collect());
    t.store_range(0, 10_000, c.make(400)).unwrap();
    drop(t);
    settle(c, &hd2);
    drop(d2);
    settle(c, &none);
    assert_eq!(
        c.created.load(Ordering::Relaxed),
        c.dropped.load(Ordering::Relaxed)
    );
}

#[test]
fn shared_cursor_path() {
    let c = Counters::leak();
    let t = MapleTree::new();
    {
        let mut cur = t.cursor();
        for i in 0..50 {
            cur.store_range(i * 4, i * 4 + 2, c.make(i)).unwrap();
        }
        cur.walk(21);
        cur.store_range(21, 21, c.make(1000)).unwrap(); // split [20,22]
        cur.walk(40);
        assert_eq!(cur.erase(), Some(40..=42));
        cur.preallocate(100, 150);
        cur.store_range(100, 150, c.make(1001)).unwrap();
        let e = cur.insert_range(100, 100, c.make(1002)).unwrap_err();
        drop(e);
    }
    assert_eq!(t.len(), 50 + 2 - 1 - 13 + 1);
    settle(c, &held(&t));
    drop(t);
    settle(c, &HashSet::new());
}

#[test]
fn exclusive_path_every_operation() {
    let c = Counters::leak();
    let mut t = MapleTree::new();
    {
        let mut cur = t.cursor_mut();
        for i in 0..200 {
            cur.store_range(i * 4, i * 4 + 2, c.make(i)).unwrap();
        }
        cur.store_range(1, 1, c.make(1000)).unwrap(); // split [0,2]
        cur.store_range(10, 30, c.make(1001)).unwrap(); // trim + cover
        cur.walk(400);
        assert_eq!(cur.erase(), Some(400..=402));
        cur.next();
        assert_eq!(cur.erase(), Some(404..=406));
        let e = cur.insert_range(500, 500, c.make(1002)).unwrap_err();
        drop(e);
        cur.insert_range(403, 403, c.make(1003)).unwrap();
    }
    settle(c, &held(&t));
    // remove hands the value over: it is live until we drop it
    let (r, v) = t.take(600).unwrap();
    assert_eq!(r, 600..=602);
    assert!(c.is_live(v.serial));
    let mut want = held(&t);
    want.insert(v.serial);
    settle(c, &want);
    drop(v);
    settle(c, &held(&t));
    // exclusive writes after shared ones, then clear and drop
    t.store_range(0, 100, c.make(2000)).unwrap();
    t.cursor_mut().store_range(50, 60, c.make(2001)).unwrap();
    settle(c, &held(&t));
    t.clear();
    settle(c, &HashSet::new());
    for i in 0..300 {
        t.cursor_mut().store_range(i, i, c.make(i)).unwrap();
    }
    drop(t);
    settle(c, &HashSet::new());
    assert_eq!(
        c.created.load(Ordering::Relaxed),
        c.dropped.load(Ordering::Relaxed)
    );
}

/// `dup` and `Clone` whose `T::clone` panics part way: the values cloned so
/// far and the copied nodes are dropped exactly once while the panic
/// unwinds, and the source tree is untouched.
#[test]
fn dup_with_a_panicking_clone_drops_the_partial_copy() {
    let c = Counters::leak();
    let t = MapleTree::new();
    let n: u64 = if cfg!(miri) { 60 } else { 2_000 };
    for i in 0..n {
        t.store_range(i * 4, i * 4 + 2, c.make(i)).unwrap();
    }
    settle(c, &held(&t));
    let before = held(&t);
    let budgets: &[u64] = if cfg!(miri) {
        &[0, 1, 17, 59]
    } else {
        &[0, 1, 15, 16, 17, 150, 500, 1_999]
    };
    for (k, &budget) in budgets.iter().enumerate() {
        c.clones_left.store(budget, Ordering::Relaxed);
        let created = c.created.load(Ordering::Relaxed);
        let r = std::panic::catch_unwind(|| if k % 2 == 0 { t.dup() } else { t.clone() });
        assert!(
            r.is_err(),
            "clone budget {budget}: the copy should have panicked"
        );
        c.clones_left.store(u64::MAX, Ordering::Relaxed);
        assert_eq!(
            c.created.load(Ordering::Relaxed) - created,
            budget as usize,
            "clones made before the panic"
        );
        // Every clone made before the panic is gone, once; the source holds
        // exactly what it held.
        settle(c, &before);
        assert_eq!(held(&t), before);
        assert_eq!(t.len(), n as usize);
        t.validate().unwrap();
    }
    // The tree still copies and drops normally afterwards.
    let copy = t.dup();
    assert_eq!(copy.len(), n as usize);
    drop(copy);
    drop(t);
    settle(c, &HashSet::new());
    assert_eq!(
        c.created.load(Ordering::Relaxed),
        c.dropped.load(Ordering::Relaxed)
    );
}

/// `remove_range` retires the covered values (alive while the `Removed`
/// lives, dropped once after), keeps trimmed ones in the tree, and clones
/// the right part of a split entry.
#[test]
fn remove_range_drops_each_removed_value_once() {
    let c = Counters::leak();
    let t = MapleTree::new();
    for i in 0..300 {
        t.store_range(i * 10, i * 10 + 9, c.make(i)).unwrap();
    }
    let removed = t.remove_range(105, 1_004).unwrap();
    assert_eq!(removed.len(), 91);
    let serials: Vec<u64> = removed.iter().map(|(_, v)| v.serial).collect();
    assert!(serials.iter().all(|&s| c.is_live(s)));
    let mut want = held(&t);
    want.extend(serials.iter().copied());
    settle(c, &want);
    drop(removed);
    settle(c, &held(&t));
    // A split: [2000, 2009] loses [2003, 2005]; the right part is a clone.
    let removed = t.remove_range(2_003, 2_005).unwrap();
    assert_eq!(
        removed.iter().next().map(|(r, v)| (r, v.tag)),
        Some((2_003..=2_005, 200))
    );
    drop(removed);
    assert_eq!(t.load(2_006).map(|e| e.tag), Some(200));
    assert_eq!(t.load(2_002).map(|e| e.tag), Some(200));
    settle(c, &held(&t));
    drop(t);
    settle(c, &HashSet::new());
}

/// splitmix64
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n
    }
}

/// Random mixes of every writing operation, shared and exclusive, with the
/// live set checked against the tree along the way.
#[test]
fn random_mix() {
    let c = Counters::leak();
    let mut t = MapleTree::new();
    let mut rng = Rng(42);
    let steps = if cfg!(miri) { 300 } else { 20_000 };
    for step in 0..steps {
        let f = rng.below(2_000);
        let wide = rng.below(8) == 0;
        let l = f + rng.below(if wide { 300 } else { 6 });
        match rng.below(10) {
            0..=2 => t.store_range(f, l, c.make(step)).unwrap(),
            3 => t.cursor_mut().store_range(f, l, c.make(step)).unwrap(),
            4 => drop(t.insert_range(f, l, c.make(step))),
            5 => drop(t.erase(f)),
            6 => drop(t.remove(f)),
            7 => {
                let mut cur = t.cursor();
                cur.walk(f);
                cur.erase();
                cur.next();
                cur.erase();
            }
            8 => drop(t.alloc_range_rev(0, 2_500, 1 + rng.below(4), c.make(step))),
            _ => {
                if rng.below(50) == 0 {
                    let d = t.dup();
                    t = d;
                } else if rng.below(100) == 0 {
                    t.clear();
                }
            }
        }
        if step % 1000 == 999 {
            settle(c, &held(&t));
        }
    }
    settle(c, &held(&t));
    drop(t);
    settle(c, &HashSet::new());
    assert_eq!(
        c.created.load(Ordering::Relaxed),
        c.dropped.load(Ordering::Relaxed)
    );
}

/// A reader held across writes keeps the old values alive; once it is
/// gone they are dropped.
#[test]
fn reader_delays_but_does_not_leak() {
    let c = Counters::leak();
    let t = MapleTree::new();
    for i in 0..100 {
        t.store_range(i * 2, i * 2, c.make(i)).unwrap();
    }
    let before = held(&t);
    let snap = t.reader();
    t.store_range(0, 1_000, c.make(1000)).unwrap();
    // everything the reader can see must still be alive
    for i in 0..100 {
        assert!(c.is_live(snap.load(i * 2).unwrap().1.serial));
    }
    let mut want = held(&t);
    want.extend(&before);
    assert!(want.is_subset(&c.live()));
    drop(snap);
    settle(c, &held(&t));
    drop(t);
    settle(c, &HashSet::new());
}

/// The entries of `tree.iter()` share the iteration's one pin: each keeps
/// its value alive after the iterator is gone and after a writer replaced
/// it, whatever the order in which they and the iterator are dropped (and
/// when the loop consuming them panics); once the last of them is gone the
/// replaced values are reclaimed, so the pin was released exactly then.
#[test]
fn iteration_entries_share_one_pin_released_by_the_last() {
    let c = Counters::leak();
    let t = MapleTree::new();
    let fill = |round: u64| {
        for i in 0..200 {
            t.store_range(i * 4, i * 4 + 1, c.make(round * 1_000 + i))
                .unwrap();
        }
    };
    fill(0);
    for round in 0..5u64 {
        let mut it = t.iter();
        let mut kept = Vec::new();
        for k in 0..60 {
            let e = if k % 3 == 0 {
                it.next_back()
            } else {
                it.next()
            };
            let e = e.expect("200 entries");
            if k % 2 == 0 {
                kept.push(e);
            }
        }
        match round {
            // The iterator goes first, before the write.
            0 => drop(it),
            // The rest consumed by a fold, keeping every fifth.
            1 => it.enumerate().for_each(|(k, e)| {
                if k % 5 == 0 {
                    kept.push(e)
                }
            }),
            // A consuming loop that panics with entries stashed.
            2 => {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    it.for_each(|e| {
                        kept.push(e);
                        if kept.len() == 40 {
                            panic!("deliberate");
                        }
                    })
                }));
                assert!(r.is_err());
            }
            // A consuming loop that panics before it stashes the entry it
            // was given: that entry's hold goes back as the panic unwinds.
            3 => {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    it.for_each(|e| {
                        if kept.len() == 40 {
                            panic!("deliberate");
                        }
                        kept.push(e);
                    })
                }));
                assert!(r.is_err());
            }
            // The iterator outlives the write and the first drops.
            _ => {
                kept.truncate(10);
                t.store_range(0, 100_000, c.make(9_999)).unwrap();
                drop(kept.pop());
                assert!(it.next().is_some());
                drop(it);
            }
        }
        t.store_range(0, 100_000, c.make(10_000 + round)).unwrap();
        for e in &kept {
            assert!(c.is_live(e.1.serial), "a kept entry's value was dropped");
            assert_eq!(e.1.tag / 1_000, round, "the entry's own value");
        }
        // Drop in an order that is neither the yield order nor its reverse.
        let mut order: Vec<usize> = (0..kept.len()).collect();
        order.sort_by_key(|&k| (k * 7919) % kept.len().max(1));
        let mut slots: Vec<Option<_>> = kept.into_iter().map(Some).collect();
        for k in order {
            drop(slots[k].take());
        }
        // Everything replaced is reclaimed: no pin is left behind.
        settle(c, &held(&t));
        t.clear();
        settle(c, &HashSet::new());
        fill(round + 1);
    }
    drop(t);
    settle(c, &HashSet::new());
}

/// `tree.iter()`'s `next` takes the holds on its pin a leaf at a time, for
/// the entries it will yield from that leaf: stopped anywhere in a leaf
/// (or between leaves, or at the end), by dropping the iterator, by a
/// `next_back` that reaches the front's leaf, or by a fold, every entry
/// yielded keeps its value alive past a write that replaces it, and once
/// the entries and the iterator are gone nothing stays pinned (the holds
/// queued for the rest of the leaf were given back, no more and no less).
#[test]
fn iteration_holds_taken_a_leaf_at_a_time_are_given_back() {
    let c = Counters::leak();
    let t = MapleTree::new();
    let fill = |round: u64| {
        // Entries with gaps between them (half a leaf's slots are gaps).
        for i in 0..120 {
            t.store_range(i * 4, i * 4 + 1, c.make(round * 1_000 + i))
                .unwrap();
        }
    };
    let stops: &[usize] = if cfg!(miri) {
        &[0, 3, 8, 120]
    } else {
        &[0, 1, 2, 3, 5, 7, 8, 9, 13, 16, 17, 40, 63, 64, 65, 119, 120]
    };
    let mut round = 0u64;
    fill(round);
    for &stop in stops {
        for how in 0..4 {
            let mut it = t.iter();
            let mut kept: Vec<_> = it.by_ref().take(stop).collect();
            match how {
                // Dropped where it stopped.
                0 => drop(it),
                // The back walks into the front's leaf (or stops at once).
                1 => {
                    kept.extend(it.by_ref().rev().take(200));
                    assert_eq!(kept.len(), 120, "every entry once");
                    assert!(it.next().is_none());
                    drop(it);
                }
                // A fold takes the rest, keeping every third.
                2 => it.enumerate().for_each(|(k, e)| {
                    if k % 3 == 0 {
                        kept.push(e);
                    }
                }),
                // One step from the back, then the front again.
                _ => {
                    kept.extend(it.next_back());
                    kept.extend(it.next());
                    drop(it);
                }
            }
            t.store_range(0, 100_000, c.make(100_000 + round)).unwrap();
            for (r, v) in &kept {
                assert!(c.is_live(v.serial), "a kept entry's value was dropped");
                assert_eq!((v.tag / 1_000, v.tag % 1_000 * 4), (round, *r.start()));
            }
            // The last half first, then the rest.
            let rest = kept.split_off(kept.len() / 2);
            drop(rest);
            drop(kept);
            settle(c, &held(&t));
            t.clear();
            settle(c, &HashSet::new());
            round += 1;
            fill(round);
        }
    }
    drop(t);
    settle(c, &HashSet::new());
}

/// The items of `tree.iter()` over plain in-slot words (`XValue`) keep no
/// pin: their values are copies of the words. The iterator pins the
/// version it walks while it lives (a boxed value that a writer replaces
/// meanwhile is not reclaimed), and once it is dropped, items it yielded
/// and that are still alive hold nothing back: the replaced value is
/// reclaimed while they live, and they still read their own values.
#[test]
fn plain_word_items_do_not_hold_the_pin_after_their_iterator() {
    use aspace_maple::{Inline, XValue};
    let c = Counters::leak();
    let t = MapleTree::new();
    t.store_range(0, 9, c.make(1)).unwrap();
    let x: MapleTree<XValue, Inline> = MapleTree::new_inline();
    for i in 0..100u64 {
        x.store_range(i * 4, i * 4 + 1, XValue::new(i as usize).unwrap())
            .unwrap();
    }
    let old = held(&t);
    let mut it = x.iter();
    let kept: Vec<_> = it.by_ref().take(9).collect();
    // The iterator's pin holds back the replaced value.
    t.store_range(0, 9, c.make(2)).unwrap();
    for _ in 0..20 {
        aspace_maple::flush_retired();
    }
    assert!(old.is_subset(&c.live()), "reclaimed under a live iterator");
    assert_eq!(it.next().map(|(r, v)| (r, v.get())), Some((36..=37, 9)));
    drop(it);
    // The items alone do not: the replaced value goes.
    settle(c, &held(&t));
    let got: Vec<_> = kept.iter().map(|(r, v)| (*r.start(), v.get())).collect();
    let want: Vec<_> = (0..9).map(|i| (i * 4, i as usize)).collect();
    assert_eq!(got, want);
    // And a fold's items, kept past the fold, neither.
    let kept2: Vec<_> = x.iter().skip(90).collect();
    t.store_range(0, 9, c.make(3)).unwrap();
    settle(c, &held(&t));
    assert_eq!(kept2.len(), 10);
    assert_eq!(kept2[9].1.get(), 99);
    drop((kept, kept2));
    drop(t);
    settle(c, &HashSet::new());
}

/// Iterations that overlap on one thread (here of two trees): an entry of
/// either keeps its value alive after both iterators are gone, a writer
/// replaced everything and the other's entry was dropped (whichever goes
/// first), and the replaced values are reclaimed once the last entry of
/// either is dropped: no pin is released early or left behind.
#[test]
fn overlapping_iterations_release_the_pin_with_their_last_entry() {
    let c = Counters::leak();
    let t = MapleTree::new();
    let u = MapleTree::new();
    for i in 0..100 {
        t.store_range(i * 2, i * 2, c.make(i)).unwrap();
        u.store_range(i * 2, i * 2, c.make(500 + i)).unwrap();
    }
    for order in 0..2 {
        let mut a = t.iter();
        let first = a.next().expect("100 entries");
        let mut b = u.iter();
        let from_b = b.nth(10).expect("100 entries");
        drop(a);
        // Consume the rest of b, keeping nothing of it.
        assert_eq!(b.count(), 89);
        t.store_range(0, 1_000, c.make(10_000 + order)).unwrap();
        u.store_range(0, 1_000, c.make(20_000 + order)).unwrap();
        assert!(c.is_live(first.1.serial) && c.is_live(from_b.1.serial));
        // The first iteration's entry goes last in one round, first in
        // the other; either way nothing is reclaimed before both are gone.
        let (early, late) = if order == 0 {
            (from_b, first)
        } else {
            (first, from_b)
        };
        let late_serial = late.1.serial;
        drop(early);
        for _ in 0..20 {
            aspace_maple::flush_retired();
        }
        assert!(c.is_live(late_serial), "reclaimed under a live entry");
        drop(late);
        let mut want = held(&t);
        want.extend(held(&u));
        settle(c, &want);
        // Refill so that the next round has entries to replace.
        t.clear();
        u.clear();
        for i in 0..100 {
            t.store_range(i * 2, i * 2, c.make(1_000 + i)).unwrap();
            u.store_range(i * 2, i * 2, c.make(1_500 + i)).unwrap();
        }
    }
    drop((t, u));
    settle(c, &HashSet::new());
}
