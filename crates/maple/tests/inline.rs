//! Values stored in the slot word itself (`MapleTree<T, Inline>`): every
//! operation keeps each value owned exactly once (counted by drops and by
//! `Arc` strong counts), `dup` clones an `Arc` by a reference count with no
//! allocation per entry, `Box` values are cloned and handed back whole, and
//! readers beside an exact-fit writer see whole values.
//!
//! Small enough for Miri (`scripts/miri.sh`, or
//! `cargo +nightly miri test -p aspace-maple --test inline`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aspace_maple::{Inline, MapleTree, XValue};

// ---------------------------------------------------------------------------
// Allocation counting (this thread only, so parallel tests do not interfere)
// ---------------------------------------------------------------------------

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; the counter is a plain
// thread-local cell with a const initialiser (no allocation, no
// destructor), so counting cannot recurse into the allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> usize {
    ALLOCS.with(|c| c.get())
}

// ---------------------------------------------------------------------------
// Values that count their drops
// ---------------------------------------------------------------------------

/// Drops per serial, shared by the values of one test.
#[derive(Default, Debug)]
struct Drops {
    by_serial: Mutex<HashMap<u64, usize>>,
    created: AtomicUsize,
    clone_budget: AtomicUsize,
}

impl Drops {
    fn leak() -> &'static Drops {
        let d: &'static Drops = Box::leak(Box::default());
        d.clone_budget.store(usize::MAX, Ordering::Relaxed);
        d
    }
    fn make(&'static self, serial: u64) -> P {
        self.created.fetch_add(1, Ordering::Relaxed);
        P {
            serial,
            drops: self,
        }
    }
    fn dropped(&self, serial: u64) -> usize {
        self.by_serial
            .lock()
            .unwrap()
            .get(&serial)
            .copied()
            .unwrap_or(0)
    }
    fn total(&self) -> usize {
        self.by_serial.lock().unwrap().values().sum()
    }
    fn assert_no_double_drop(&self) {
        for (s, &n) in self.by_serial.lock().unwrap().iter() {
            assert!(n <= 1, "value {s} dropped {n} times");
        }
    }
}

/// A payload that records its drop.
#[derive(Debug)]
struct P {
    serial: u64,
    drops: &'static Drops,
}

impl Drop for P {
    fn drop(&mut self) {
        *self
            .drops
            .by_serial
            .lock()
            .unwrap()
            .entry(self.serial)
            .or_insert(0) += 1;
    }
}

impl PartialEq for P {
    fn eq(&self, o: &Self) -> bool {
        self.serial == o.serial
    }
}

/// Clones get fresh serials, `serial % 1_000_000` still the original's; a
/// clone budget lets a test make `clone` panic part way.
impl Clone for P {
    fn clone(&self) -> Self {
        let left = self.drops.clone_budget.load(Ordering::Relaxed);
        assert!(left > 0, "clone budget exhausted (intended panic)");
        self.drops.clone_budget.store(left - 1, Ordering::Relaxed);
        let k = self.drops.created.load(Ordering::Relaxed) as u64 + 1;
        self.drops.make(self.serial % 1_000_000 + 1_000_000 * k)
    }
}

/// Runs deferred destruction until `done()` holds, or fails.
#[track_caller]
fn settle(done: impl Fn() -> bool) {
    // At least a minute of 1 ms sleeps before calling it a leak: readers of
    // the tests beside this one may stay pinned that long on a loaded
    // machine. A hang guard, not a timing bound.
    let rounds = if cfg!(miri) { 50 } else { 60_000 };
    for round in 0..rounds {
        if done() {
            return;
        }
        aspace_maple::flush_retired();
        if round > 2 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    assert!(done(), "deferred drops never ran");
}

fn n(small: u64, big: u64) -> u64 {
    if cfg!(miri) {
        small
    } else {
        big
    }
}

// ---------------------------------------------------------------------------
// Arc values
// ---------------------------------------------------------------------------

/// Every write path with `Arc` values: the tree holds exactly one strong
/// reference per entry it stores, gives each back exactly once, and a
/// split clones by a reference count (the same allocation in both parts).
#[test]
fn arc_values_are_owned_once_through_every_operation() {
    let d = Drops::leak();
    let count = n(40, 400);
    let arcs: Vec<Arc<P>> = (0..count).map(|serial| Arc::new(d.make(serial))).collect();
    let t: MapleTree<Arc<P>, Inline> = MapleTree::new_inline();
    for (i, a) in arcs.iter().enumerate() {
        let i = i as u64;
        t.insert_range(i * 10, i * 10 + 7, a.clone()).unwrap();
    }
    assert!(arcs.iter().all(|a| Arc::strong_count(a) == 2));
    assert_eq!(t.memory_usage().value_bytes, 0);
    t.validate().unwrap();

    // Readers get the Arc itself (a never-dropped copy): the same pointer,
    // and a clone is a new strong reference.
    {
        let e = t.load(35).unwrap();
        assert_eq!(e.range(), 30..=37);
        assert!(Arc::ptr_eq(&e, &arcs[3]));
        let owned: Arc<P> = (*e).clone();
        assert_eq!(Arc::strong_count(&arcs[3]), 3);
        drop(owned);
        let r = t.reader();
        let (range, v) = r.load(45).unwrap();
        assert_eq!(range, 40..=47);
        assert_eq!(v.serial, 4);
        let all: Vec<u64> = r.iter().map(|(_, v)| v.serial).collect();
        assert_eq!(all, (0..count).collect::<Vec<_>>());
    }
    assert_eq!(Arc::strong_count(&arcs[3]), 2);

    // Exact-fit overwrite of entry 0 with entry 1's Arc: entry 0's Arc is
    // released (after the grace period), entry 1's gains one.
    t.store_range(0, 7, arcs[1].clone()).unwrap();
    settle(|| Arc::strong_count(&arcs[0]) == 1);
    assert_eq!(Arc::strong_count(&arcs[1]), 3);

    // A store into the middle of entry 2 splits it: both outer parts hold
    // the same Arc (a reference count, not a new P).
    t.store_range(22, 23, arcs[5].clone()).unwrap();
    assert_eq!(Arc::strong_count(&arcs[2]), 3);
    assert!(Arc::ptr_eq(&t.load(20).unwrap(), &t.load(25).unwrap()));
    assert_eq!(t.load(22).unwrap().serial, 5);
    t.validate().unwrap();

    // Erase hands an Entry that keeps the value readable; the tree's
    // reference is released after.
    {
        let e = t.erase(33).unwrap();
        assert_eq!(e.serial, 3);
    }
    settle(|| Arc::strong_count(&arcs[3]) == 1);

    // remove_range over entries 4..=6 (and part of entry 7): removed whole
    // entries are released, the trimmed one kept, and to_vec clones.
    {
        let removed = t.remove_range(40, 73).unwrap();
        let got: Vec<_> = removed.iter().map(|(r, v)| (r, v.serial)).collect();
        assert_eq!(
            got,
            [(40..=47, 4), (50..=57, 5), (60..=67, 6), (70..=73, 7)]
        );
        let copies = removed.to_vec();
        assert!(Arc::ptr_eq(&copies[0].1, &arcs[4]));
    }
    settle(|| Arc::strong_count(&arcs[4]) == 1 && Arc::strong_count(&arcs[6]) == 1);
    assert_eq!(Arc::strong_count(&arcs[7]), 2); // [74, 77] still holds it
    assert_eq!(Arc::strong_count(&arcs[5]), 2); // [22, 23] still holds it

    // dup: one more strong reference per entry, no new P.
    let before: Vec<usize> = arcs.iter().map(Arc::strong_count).collect();
    let copy = t.dup();
    copy.validate().unwrap();
    let after: Vec<usize> = arcs.iter().map(Arc::strong_count).collect();
    let entries_of = |k: usize| {
        t.reader()
            .iter()
            .filter(|(_, v)| Arc::ptr_eq(v, &arcs[k]))
            .count()
    };
    for k in 0..arcs.len() {
        assert_eq!(after[k], before[k] + entries_of(k), "arc {k}");
    }
    assert_eq!(copy, t);

    // Exclusive paths: take hands the Arc back, into_iter too.
    let mut copy = copy;
    let (r, v) = copy.take(85).unwrap();
    assert_eq!((r, v.serial), (80..=87, 8));
    drop(v);
    let first = copy.first().unwrap().first();
    let (r, v) = copy.take(first).unwrap();
    assert_eq!((r, v.serial), (0..=7, 1));
    {
        let mut c = copy.cursor_mut();
        c.store_range(90, 97, arcs[0].clone()).unwrap(); // exact fit, in place
        c.insert_range(1_000_000, 1_000_001, arcs[0].clone())
            .unwrap();
    }
    assert_eq!(Arc::strong_count(&arcs[0]), 3);
    let collected: Vec<_> = copy.into_iter().map(|(r, v)| (r, v.serial)).collect();
    assert_eq!(collected.last(), Some(&(1_000_000..=1_000_001, 0)));

    drop(v);
    t.clear();
    settle(|| arcs.iter().all(|a| Arc::strong_count(a) == 1));
    drop(t);
    assert_eq!(d.total(), 0, "no P dropped while referenced");
    drop(arcs);
    assert_eq!(d.total(), count as usize);
    d.assert_no_double_drop();
}

/// `dup` of an inline `Arc` tree allocates node blocks only: no allocation
/// per entry (a boxed tree allocates one box per entry).
#[test]
fn dup_of_arc_values_allocates_no_box_per_entry() {
    let count = n(300, 20_000);
    let t: MapleTree<Arc<u64>, Inline> = MapleTree::new_inline();
    let boxed: MapleTree<Arc<u64>> = MapleTree::new();
    for i in 0..count {
        let a = Arc::new(i);
        t.store_range(i * 2, i * 2, a.clone()).unwrap();
        boxed.store_range(i * 2, i * 2, a).unwrap();
    }
    let nodes = t.memory_usage().nodes;
    let a0 = allocs();
    let copy = t.dup();
    let inline_allocs = allocs() - a0;
    let a0 = allocs();
    let boxed_copy = boxed.dup();
    let boxed_allocs = allocs() - a0;
    assert!(
        inline_allocs <= nodes + 8,
        "inline dup: {inline_allocs} allocations for {nodes} nodes, {count} entries"
    );
    assert!(
        boxed_allocs >= count as usize,
        "the boxed dup boxes each value"
    );
    assert_eq!(copy.len(), count as usize);
    let r = copy.reader();
    for (k, (range, v)) in r.iter().enumerate() {
        assert_eq!((range, **v), (k as u64 * 2..=k as u64 * 2, k as u64));
        assert_eq!(Arc::strong_count(&v), 4); // t, boxed, copy, boxed_copy
    }
    drop(r);
    drop(boxed_copy);
    drop(copy);
    let e = t.load(0).unwrap();
    assert_eq!(Arc::strong_count(&e), 2);
}

/// A store through `&self` or a shared cursor that fits an entry exactly
/// replaces the word with one store; readers on other threads load and
/// clone the Arcs meanwhile and always see a whole value of that entry.
#[test]
fn readers_beside_exact_fit_arc_writes() {
    let count = n(16, 1_024);
    let writes = n(60, 50_000);
    let t: Arc<MapleTree<Arc<[u64; 4]>, Inline>> = Arc::new(MapleTree::new_inline());
    fn mk(x: u64) -> Arc<[u64; 4]> {
        Arc::new([x, !x, x ^ 0x5a5a, x.wrapping_mul(7)])
    }
    fn ok(v: &[u64; 4]) -> bool {
        *v == *mk(v[0])
    }
    for i in 0..count {
        t.store_range(i * 16, i * 16 + 9, mk(i)).unwrap();
    }
    let nodes = t.memory_usage().nodes;
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2u64)
        .map(|r| {
            let (t, stop) = (t.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut seed = r + 1;
                let mut kept = Vec::new();
                let mut checks = 0u64;
                // Relaxed: a stop flag; the join orders everything.
                while !stop.load(Ordering::Relaxed) || checks < 4 {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    let i = (seed >> 33) % count;
                    let e = t.load(i * 16 + (seed & 7)).expect("entry vanished");
                    assert_eq!(e.range(), i * 16..=i * 16 + 9);
                    assert!(ok(&e), "torn value {:?}", **e);
                    assert_eq!(e[0] % count, i);
                    if checks % 8 == 0 {
                        // Keep an owned clone past the guard.
                        kept.push((*e).clone());
                        kept.truncate(4);
                    }
                    checks += 1;
                }
                assert!(kept.iter().all(|v| ok(v)));
            })
        })
        .collect();
    for w in 0..writes {
        let i = w % count;
        let x = i + count * (w / count + 1);
        if w % 2 == 0 {
            t.store_range(i * 16, i * 16 + 9, mk(x)).unwrap();
        } else {
            let mut c = t.cursor();
            c.store_range(i * 16, i * 16 + 9, mk(x)).unwrap();
        }
    }
    // Relaxed: see above.
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(t.memory_usage().nodes, nodes, "exact fits copy no node");
    t.validate().unwrap();
}

// ---------------------------------------------------------------------------
// Box, &'static, XValue, u32
// ---------------------------------------------------------------------------

/// `Box` values: readers get `&U`; a split clones `U` into a new box; dup
/// clones each; remove hands the box back; a panicking clone in dup
/// unwinds with everything dropped once and the source untouched.
#[test]
fn box_values() {
    let d = Drops::leak();
    let count = n(40, 500);
    let mut t: MapleTree<Box<P>, Inline> = MapleTree::new_inline();
    for serial in 0..count {
        t.insert_range(serial * 4, serial * 4 + 2, Box::new(d.make(serial)))
            .unwrap();
    }
    assert_eq!(t.load(5).unwrap().serial, 1);
    {
        let r = t.reader();
        let (range, v) = r.load(9).unwrap();
        let v: &P = &v;
        assert_eq!((range, v.serial), (8..=10, 2));
    }
    // Split entry 1 ([4, 6]) at 5: the right part is a clone.
    t.store_range(5, 5, Box::new(d.make(50_000))).unwrap();
    assert_eq!(t.load(4).unwrap().serial, 1);
    let right = t.load(6).unwrap().serial;
    assert!(right > 1_000_000 && right % 1_000_000 == 1, "a clone of 1");
    // Exact-fit overwrite drops the old box after the grace period.
    t.store_range(0, 2, Box::new(d.make(60_000))).unwrap();
    settle(|| d.dropped(0) == 1);
    // dup with a clone that panics part way.
    let before: BTreeMap<u64, u64> = t
        .reader()
        .iter()
        .map(|(r, v)| (*r.start(), v.serial))
        .collect();
    let budgets: &[usize] = if cfg!(miri) {
        &[0, 7]
    } else {
        &[0, 1, 17, 100]
    };
    for &budget in budgets {
        let dropped = d.total();
        d.clone_budget.store(budget, Ordering::Relaxed);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.dup()));
        d.clone_budget.store(usize::MAX, Ordering::Relaxed);
        assert!(r.is_err());
        // The `budget` clones made before the panic were dropped.
        assert_eq!(d.total() - dropped, budget);
        let now: BTreeMap<u64, u64> = t
            .reader()
            .iter()
            .map(|(r, v)| (*r.start(), v.serial))
            .collect();
        assert_eq!(now, before);
        t.validate().unwrap();
    }
    let copy = t.dup();
    assert_eq!(copy.len(), t.len());
    let copied = copy.load(6).unwrap().serial;
    assert!(
        copied != right && copied % 1_000_000 == 1,
        "a clone of the clone"
    );
    let (r, b) = t.take(8).unwrap();
    assert_eq!((r, b.serial), (8..=10, 2));
    drop(b);
    assert_eq!(d.dropped(2), 1);
    drop(copy);
    drop(t);
    settle(|| d.total() == d.created.load(Ordering::Relaxed));
    d.assert_no_double_drop();
}

#[derive(Debug, PartialEq)]
struct Name(&'static str);

static NAMES: [Name; 4] = [Name("text"), Name("data"), Name("bss"), Name("heap")];

/// `&'static` references, `XValue`s and `u32`s live in the word itself.
#[test]
fn static_refs_and_integers() {
    let t: MapleTree<&'static Name, Inline> = MapleTree::new_inline();
    for (i, s) in NAMES.iter().enumerate() {
        t.insert(i as u64 * 10..i as u64 * 10 + 5, s).unwrap();
    }
    t.insert(12..13, &NAMES[3]).unwrap(); // splits "data": copies the reference
    let all: Vec<&str> = t.iter().map(|(_, v)| v.0).collect();
    assert_eq!(all, ["text", "data", "heap", "data", "bss", "heap"]);
    assert_eq!(format!("{:?}", t.dup()), format!("{t:?}"));

    let x: MapleTree<XValue, Inline> = MapleTree::new_inline();
    for i in 0..n(50, 2_000) as usize {
        let v = XValue::new(i * 3).unwrap();
        x.store_range(i as u64 * 2, i as u64 * 2 + 1, v).unwrap();
    }
    x.store_range(0, 1, XValue::new(XValue::MAX).unwrap())
        .unwrap();
    assert_eq!(x.load(1).map(|e| e.get()), Some(XValue::MAX));
    assert_eq!(x.load(7).map(|e| e.get()), Some(9));
    let y = x.dup();
    assert_eq!(x, y);
    assert_eq!(y.erase(7).map(|e| e.get()), Some(9));
    assert!(XValue::new(XValue::MAX + 1).is_none());

    let mut u: MapleTree<u32, Inline> = MapleTree::new_inline();
    u.store_range(5, 9, u32::MAX).unwrap();
    u.store_range(7, 7, 0).unwrap();
    let got: Vec<_> = u.reader().iter().map(|(r, v)| (r, *v)).collect();
    assert_eq!(got, [(5..=6, u32::MAX), (7..=7, 0), (8..=9, u32::MAX)]);
    assert_eq!(u.take(8), Some((8..=9, u32::MAX)));
}
