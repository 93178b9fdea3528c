//! The parts every design is built from, so that a design module says only
//! what is particular to it:
//!
//! * a **tree** ([`ShardTree`]: the interval tree of VMAs, one node per
//!   entry, or the group tree of distinct intervals);
//! * a **locking policy**: [`SingleLock`] (one reader-writer lock over one
//!   or more trees, the layout of the trees chosen by a [`TreeSet`]) or
//!   [`Partitioned`] (one lock per shard, optionally under an [`Outer`]
//!   lock with inverted meaning); `aspace` adds promotion from the first to
//!   the second;
//! * a **thread-to-shard rule** ([`ShardRule`]);
//! * and **one resolver** ([`resolve`]) that turns a handle into a shard
//!   index or the error every design reports for it.
//!
//! A public design type wraps one composition and names it ([`Composed`]);
//! the one generic `ReverseMap` implementation below forwards to it.

use std::fmt::Debug;

use crossbeam_utils::CachePadded;

use super::shardset::{ShardSet, ShardTree};
use super::VmaTree;
use crate::stats::{Held, LockCounters, PaddedCounters};
use crate::sync::{ReadGuard, RwLock};
use crate::{Design, Handle, Interval, LockStats, ReverseMap, RmapError, Topology, VmaId};

/// The one handle check: `h` must come from map `map` and name one of
/// `shards` shards; the slot and generation are the tree's to check.
#[inline]
pub(crate) fn resolve(map: u32, h: Handle, shards: usize) -> Result<usize, RmapError> {
    resolve_map(map, h)?;
    resolve_shard(h, shards)
}

/// The map part of [`resolve`], for a design that checks it before taking
/// a lock and the shard once it knows how many there are.
#[inline]
pub(crate) fn resolve_map(map: u32, h: Handle) -> Result<(), RmapError> {
    if h.map() == map {
        Ok(())
    } else {
        Err(RmapError::ForeignHandle)
    }
}

/// The shard part of [`resolve`].
#[inline]
pub(crate) fn resolve_shard(h: Handle, shards: usize) -> Result<usize, RmapError> {
    if (h.shard() as usize) < shards {
        Ok(h.shard() as usize)
    } else {
        Err(RmapError::UnknownHandle)
    }
}

/// How the calling thread picks the shard (or tree) a new entry goes to.
pub(crate) trait ShardRule: Default + Debug + Send + Sync {
    /// A shard in `0..shards` (`shards >= 1`).
    fn pick(&self, topo: &Topology, shards: usize) -> usize;
}

/// Everything in shard 0 (single-tree designs).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct One;

impl ShardRule for One {
    #[inline]
    fn pick(&self, _: &Topology, _: usize) -> usize {
        0
    }
}

/// The calling thread's NUMA node.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ByNode;

impl ShardRule for ByNode {
    #[inline]
    fn pick(&self, topo: &Topology, shards: usize) -> usize {
        topo.current_node() as usize % shards
    }
}

/// `cpu / CPUS`: consecutive groups of `CPUS` CPUs.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ByCpuGroup<const CPUS: u32>;

impl<const CPUS: u32> ShardRule for ByCpuGroup<CPUS> {
    #[inline]
    fn pick(&self, topo: &Topology, shards: usize) -> usize {
        (topo.current_cpu() / CPUS.max(1)) as usize % shards
    }
}

/// `cpu * shards / cpus`: the CPUs spread evenly over the shards, so
/// neighbouring CPUs share one.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SpreadCpus;

impl ShardRule for SpreadCpus {
    #[inline]
    fn pick(&self, topo: &Topology, shards: usize) -> usize {
        let cpus = topo.cpus().max(1) as u64;
        let cpu = topo.current_cpu() as u64;
        ((cpu * shards as u64 / cpus) as usize).min(shards - 1)
    }
}

/// The trees under a [`SingleLock`] and how they sit relative to the lock
/// word.
pub(crate) trait TreeSet: Debug + Send + Sync {
    /// The tree type.
    type Tree: ShardTree;
    /// An empty set for `topo`.
    fn build(topo: &Topology) -> Self;
    /// Trees (at least 1).
    fn count(&self) -> usize;
    /// Tree `i < count()`.
    fn tree(&self, i: usize) -> &Self::Tree;
    /// Tree `i < count()`, mutably.
    fn tree_mut(&mut self, i: usize) -> &mut Self::Tree;
    /// True when the set is one tree (so `total` is one load).
    const ONE: bool = false;
    /// Entries in every tree.
    fn total(&self) -> usize {
        (0..self.count()).map(|i| self.tree(i).len()).sum()
    }
    /// Heap bytes of the set and its trees.
    fn heap_bytes(&self) -> usize {
        (0..self.count()).map(|i| self.tree(i).heap_bytes()).sum()
    }
}

/// One tree whose header shares the lock word's cache line.
impl TreeSet for VmaTree {
    type Tree = VmaTree;
    const ONE: bool = true;
    fn build(_: &Topology) -> Self {
        VmaTree::new()
    }
    #[inline]
    fn count(&self) -> usize {
        1
    }
    #[inline]
    fn tree(&self, _: usize) -> &VmaTree {
        self
    }
    #[inline]
    fn tree_mut(&mut self, _: usize) -> &mut VmaTree {
        self
    }
    #[inline]
    fn total(&self) -> usize {
        self.len()
    }
}

/// One tree whose header starts on the line after the lock word.
impl TreeSet for CachePadded<VmaTree> {
    type Tree = VmaTree;
    const ONE: bool = true;
    fn build(_: &Topology) -> Self {
        CachePadded::new(VmaTree::new())
    }
    #[inline]
    fn count(&self) -> usize {
        1
    }
    #[inline]
    fn tree(&self, _: usize) -> &VmaTree {
        self
    }
    #[inline]
    fn tree_mut(&mut self, _: usize) -> &mut VmaTree {
        self
    }
    #[inline]
    fn total(&self) -> usize {
        self.len()
    }
}

/// One tree per NUMA node.
impl TreeSet for Box<[VmaTree]> {
    type Tree = VmaTree;
    fn build(topo: &Topology) -> Self {
        (0..topo.nodes().max(1)).map(|_| VmaTree::new()).collect()
    }
    #[inline]
    fn count(&self) -> usize {
        self.len()
    }
    #[inline]
    fn tree(&self, i: usize) -> &VmaTree {
        &self[i]
    }
    #[inline]
    fn tree_mut(&mut self, i: usize) -> &mut VmaTree {
        &mut self[i]
    }
    fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&**self) + self.iter().map(VmaTree::heap_bytes).sum::<usize>()
    }
}

/// One reader-writer lock over a [`TreeSet`]: modifiers exclusive, walks
/// shared; the lock word on its own padded line (with whatever of the set
/// fits beside it), the counters on their own lines.
#[derive(Debug)]
pub(crate) struct SingleLock<S, R> {
    lock: CachePadded<RwLock<S>>,
    counters: PaddedCounters,
    topo: Topology,
    id: u32,
    /// `S::count()`, fixed at construction (read without the lock).
    trees: u32,
    design: Design,
    rule: R,
}

impl<S: TreeSet, R: ShardRule> SingleLock<S, R> {
    pub(crate) fn new(design: Design, topo: Topology) -> Self {
        let id = crate::next_map_id();
        let set = S::build(&topo);
        SingleLock {
            trees: set.count() as u32,
            lock: CachePadded::new(RwLock::new(set)),
            counters: CachePadded::new(LockCounters::new(id, 0)),
            topo,
            id,
            design,
            rule: R::default(),
        }
    }
}

// `insert` and `remove` split by hand rather than through `stats::with_op`: its closure
// captures the arguments, and the compiler stored them to the stack on every
// call for the cold probed path.
impl<S: TreeSet, R: ShardRule> SingleLock<S, R> {
    /// `insert` under context byte `c` (inlined: the default path, where
    /// the compiler knows the probe bits are clear).
    #[inline(always)]
    fn insert_in(&self, c: u8, iv: Interval, vma: VmaId) -> Result<Handle, RmapError> {
        let iv = iv.validate()?;
        let s = self.rule.pick(&self.topo, self.trees as usize);
        let mut g = self.counters.write_in(&self.lock, c);

        let rec = g.recording();
        let t = g.tree_mut(s);
        let snap = rec.then(|| t.trace_snapshot());
        let (slot, gen) = t.insert(iv, vma);
        if let Some(snap) = snap {
            t.trace_entry(slot);
            t.trace_changed(snap);
        }
        self.count_len(&g, 1);
        Ok(Handle::new(self.id, s as u32, slot, gen))
    }

    /// `insert` when timed or recorded.
    #[cold]
    #[inline(never)]
    fn insert_probed(&self, c: u8, iv: Interval, vma: VmaId) -> Result<Handle, RmapError> {
        self.insert_in(c, iv, vma)
    }

    /// Updates the lock-free entry count after one insert (`+1`) or removal
    /// (`-1`) under the exclusive hold `g`: one tree's count is read back;
    /// several trees' would be a sum, so the count is stepped instead.
    #[inline(always)]
    fn count_len(&self, g: &S, step: isize) {
        if S::ONE {
            self.counters.set_len(g.total());
        } else {
            self.counters
                .set_len(self.counters.len().wrapping_add_signed(step));
        }
    }

    /// `remove` under context byte `c` (split like `insert_in`).
    #[inline(always)]
    fn remove_in(&self, c: u8, h: Handle) -> Result<(), RmapError> {
        let mut g = self.counters.write_in(&self.lock, c);
        let s = resolve(self.id, h, g.count())?;
        let rec = g.recording();
        let t = g.tree_mut(s);
        let snap = if rec {
            t.check(h.slot(), h.gen())?;
            t.trace_removal(h.slot());
            Some(t.trace_snapshot())
        } else {
            None
        };
        t.remove(h.slot(), h.gen())?;
        if let Some(snap) = snap {
            t.trace_removed(snap);
        }
        self.count_len(&g, -1);
        Ok(())
    }

    /// `remove` when timed or recorded.
    #[cold]
    #[inline(never)]
    fn remove_probed(&self, c: u8, h: Handle) -> Result<(), RmapError> {
        self.remove_in(c, h)
    }
}

impl<S: TreeSet, R: ShardRule> ReverseMap for SingleLock<S, R> {
    fn design(&self) -> Design {
        self.design
    }

    #[inline]
    fn insert(&self, iv: Interval, vma: VmaId) -> Result<Handle, RmapError> {
        let c = crate::stats::op_ctx();
        if crate::stats::is_probed(c) {
            return self.insert_probed(c, iv, vma);
        }
        self.insert_in(crate::stats::QUIET, iv, vma)
    }

    fn insert_after(&self, parent: Handle, iv: Interval, vma: VmaId) -> Result<Handle, RmapError> {
        crate::stats::with_op((), move |c, ()| {
            let iv = iv.validate()?;
            let mut g = self.counters.write_in(&self.lock, c);
            let s = resolve(self.id, parent, g.count())?;
            let rec = g.recording();
            let t = g.tree_mut(s);
            let snap = rec.then(|| t.trace_snapshot());
            let (slot, gen) = t.insert_after(parent.slot(), parent.gen(), iv, vma)?;
            if let Some(snap) = snap {
                t.trace_entry(slot);
                t.trace_changed(snap);
            }
            self.counters.set_len(g.total());
            Ok(Handle::new(self.id, s as u32, slot, gen))
        })
    }

    fn check_handle(&self, h: Handle) -> Result<(), RmapError> {
        crate::stats::with_op((), move |c, ()| {
            let g = self.counters.read_in(&self.lock, c);
            let s = resolve(self.id, h, g.count())?;
            g.tree(s).check(h.slot(), h.gen())
        })
    }

    #[inline]
    fn remove(&self, h: Handle) -> Result<(), RmapError> {
        let c = crate::stats::op_ctx();
        if crate::stats::is_probed(c) {
            return self.remove_probed(c, h);
        }
        self.remove_in(crate::stats::QUIET, h)
    }

    fn insert_batch(
        &self,
        items: &[(Interval, VmaId)],
        out: &mut Vec<Handle>,
    ) -> Result<(), RmapError> {
        crate::stats::with_op(out, move |c, out| {
            crate::precheck_items(items)?;
            out.reserve(items.len());
            let s = self.rule.pick(&self.topo, self.trees as usize);
            let mut g = self.counters.write_in(&self.lock, c);
            let rec = g.recording();
            let t = g.tree_mut(s);
            t.reserve(items.len());
            for &(iv, vma) in items {
                let snap = rec.then(|| t.trace_snapshot());
                let (slot, gen) = t.insert(iv, vma);
                if let Some(snap) = snap {
                    t.trace_entry(slot);
                    t.trace_changed(snap);
                }
                out.push(Handle::new(self.id, s as u32, slot, gen));
            }
            self.counters.set_len(g.total());
            Ok(())
        })
    }

    /// One lock hold; every parent is checked before anything is inserted.
    fn insert_after_batch(
        &self,
        items: &[(Handle, Interval, VmaId)],
        out: &mut Vec<Handle>,
    ) -> Result<(), RmapError> {
        crate::stats::with_op(out, move |c, out| {
            for &(_, iv, _) in items {
                iv.validate()?;
            }
            out.reserve(items.len());
            let mut g = self.counters.write_in(&self.lock, c);
            for &(p, _, _) in items {
                let s = resolve(self.id, p, g.count())?;
                g.tree(s).check(p.slot(), p.gen())?;
            }
            let rec = g.recording();
            for &(p, iv, vma) in items {
                let s = p.shard() as usize;
                let snap = rec.then(|| g.tree(s).trace_snapshot());
                let (slot, gen) = g.tree_mut(s).insert_after(p.slot(), p.gen(), iv, vma)?;
                if let Some(snap) = snap {
                    g.tree(s).trace_entry(slot);
                    g.tree(s).trace_changed(snap);
                }
                out.push(Handle::new(self.id, s as u32, slot, gen));
            }
            self.counters.set_len(g.total());
            Ok(())
        })
    }

    /// One lock hold; every handle is checked before anything is removed.
    fn remove_batch(&self, handles: &[Handle]) -> Result<(), RmapError> {
        crate::stats::with_op((), move |c, ()| {
            crate::precheck_batch(self.id, handles)?;
            let mut g = self.counters.write_in(&self.lock, c);
            for &h in handles {
                let s = resolve(self.id, h, g.count())?;
                g.tree(s).check(h.slot(), h.gen())?;
            }
            let rec = g.recording();
            for &h in handles {
                let t = g.tree_mut(h.shard() as usize);
                let snap = if rec {
                    t.trace_removal(h.slot());
                    Some(t.trace_snapshot())
                } else {
                    None
                };
                t.remove_checked(h.slot());
                if let Some(snap) = snap {
                    t.trace_removed(snap);
                }
            }
            self.counters.set_len(g.total());
            Ok(())
        })
    }

    fn walk(&self, range: Interval, f: &mut dyn FnMut(Interval, VmaId)) {
        crate::stats::with_op(f, move |c, f| {
            if range.first > range.last {
                return;
            }
            let g = self.counters.read_in(&self.lock, c);
            for s in 0..g.count() {
                g.tree(s).walk(range, f);
            }
        })
    }

    fn len(&self) -> usize {
        self.counters.len()
    }

    fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.lock.read().heap_bytes()
    }

    fn stats(&self) -> LockStats {
        let mut s = LockStats {
            shards: 1,
            ..Default::default()
        };
        s.add(&self.counters);
        s
    }
}

/// A lock taken before a shard's lock, or none.
pub(crate) trait Outer: Debug + Send + Sync {
    /// What a modifier holds while it works in its shard.
    type Hold<'a>
    where
        Self: 'a;
    /// A lock for map `map`.
    fn new(map: u32) -> Self;
    /// Taken by every modifier before its shard lock (`c`: the
    /// operation's context byte).
    fn enter(&self, c: u8) -> Self::Hold<'_>;
    /// A stable walk over `shards`.
    fn walk_stable<T: ShardTree>(
        &self,
        c: u8,
        shards: &ShardSet<T>,
        range: Interval,
        f: &mut dyn FnMut(Interval, VmaId),
    );
    /// Adds the outer lock's counters.
    fn add_stats(&self, s: &mut LockStats);
}

/// No outer lock: a stable walk read-locks every shard, ascending, and
/// holds them all (`numa_locks`).
#[derive(Debug)]
pub(crate) struct NoOuter;

impl Outer for NoOuter {
    type Hold<'a> = ();
    fn new(_: u32) -> Self {
        NoOuter
    }
    #[inline(always)]
    fn enter(&self, _: u8) {}
    fn walk_stable<T: ShardTree>(
        &self,
        _: u8,
        shards: &ShardSet<T>,
        range: Interval,
        f: &mut dyn FnMut(Interval, VmaId),
    ) {
        shards.walk_stable(range, f)
    }
    fn add_stats(&self, _: &mut LockStats) {}
}

/// An outer reader-writer lock with inverted meaning: modifiers take it
/// shared, a stable walk exclusive (`sharded`). Its word and counters sit on
/// their own padded lines.
#[derive(Debug)]
pub(crate) struct InvertedRw {
    lock: CachePadded<RwLock<()>>,
    counters: PaddedCounters,
}

impl Outer for InvertedRw {
    type Hold<'a> = Held<'a, ReadGuard<'a, ()>>;
    fn new(map: u32) -> Self {
        InvertedRw {
            lock: CachePadded::new(RwLock::new(())),
            counters: CachePadded::new(LockCounters::new(map, u32::MAX)),
        }
    }
    #[inline(always)]
    fn enter(&self, c: u8) -> Self::Hold<'_> {
        self.counters.read_in(&self.lock, c)
    }
    fn walk_stable<T: ShardTree>(
        &self,
        c: u8,
        shards: &ShardSet<T>,
        range: Interval,
        f: &mut dyn FnMut(Interval, VmaId),
    ) {
        let _o = self.counters.write_in(&self.lock, c);
        shards.walk_excluded(range, f);
    }
    fn add_stats(&self, s: &mut LockStats) {
        s.add(&self.counters);
    }
}

/// One lock per shard ([`ShardSet`]), an [`Outer`] lock before it, and a
/// [`ShardRule`] for inserts; `insert_after` goes to the parent's shard,
/// removals to the handle's.
#[derive(Debug)]
pub(crate) struct Partitioned<O, R> {
    outer: O,
    shards: ShardSet<VmaTree>,
    topo: Topology,
    id: u32,
    design: Design,
    rule: R,
}

impl<O: Outer, R: ShardRule> Partitioned<O, R> {
    pub(crate) fn new(design: Design, topo: Topology, shards: usize) -> Self {
        let id = crate::next_map_id();
        Partitioned {
            outer: O::new(id),
            shards: ShardSet::new(id, shards),
            topo,
            id,
            design,
            rule: R::default(),
        }
    }

    /// Inserts into shard `shard % shards` regardless of the rule.
    pub(crate) fn insert_on_shard(
        &self,
        shard: usize,
        iv: Interval,
        vma: VmaId,
    ) -> Result<Handle, RmapError> {
        let iv = iv.validate()?;
        let c = crate::stats::op_ctx();
        let _o = self.outer.enter(c);
        Ok(self.shards.insert(c, self.id, shard, iv, vma))
    }

    fn check_map(&self, h: Handle) -> Result<(), RmapError> {
        resolve(self.id, h, self.shards.count()).map(|_| ())
    }
}

// `insert` and `remove` split by hand, as for `SingleLock`.
impl<O: Outer, R: ShardRule> Partitioned<O, R> {
    #[inline(always)]
    fn insert_in(&self, c: u8, iv: Interval, vma: VmaId) -> Result<Handle, RmapError> {
        let iv = iv.validate()?;
        let s = self.rule.pick(&self.topo, self.shards.count());
        let _o = self.outer.enter(c);
        Ok(self.shards.insert(c, self.id, s, iv, vma))
    }

    /// `insert` when timed or recorded.
    #[cold]
    #[inline(never)]
    fn insert_probed(&self, c: u8, iv: Interval, vma: VmaId) -> Result<Handle, RmapError> {
        self.insert_in(c, iv, vma)
    }

    #[inline(always)]
    fn remove_in(&self, c: u8, h: Handle) -> Result<(), RmapError> {
        // The map here; the shard index once, by `ShardSet::remove`.
        resolve_map(self.id, h)?;
        let _o = self.outer.enter(c);
        self.shards.remove(c, h)
    }

    /// `remove` when timed or recorded.
    #[cold]
    #[inline(never)]
    fn remove_probed(&self, c: u8, h: Handle) -> Result<(), RmapError> {
        self.remove_in(c, h)
    }
}

impl<O: Outer, R: ShardRule> ReverseMap for Partitioned<O, R> {
    fn design(&self) -> Design {
        self.design
    }

    fn insert(&self, iv: Interval, vma: VmaId) -> Result<Handle, RmapError> {
        let c = crate::stats::op_ctx();
        if crate::stats::is_probed(c) {
            return self.insert_probed(c, iv, vma);
        }
        self.insert_in(crate::stats::QUIET, iv, vma)
    }

    fn insert_after(&self, parent: Handle, iv: Interval, vma: VmaId) -> Result<Handle, RmapError> {
        crate::stats::with_op((), move |c, ()| {
            let iv = iv.validate()?;
            self.check_map(parent)?;
            let _o = self.outer.enter(c);
            self.shards.insert_after(c, parent, iv, vma)
        })
    }

    fn check_handle(&self, h: Handle) -> Result<(), RmapError> {
        self.check_map(h)?;
        self.shards.check(h)
    }

    fn remove(&self, h: Handle) -> Result<(), RmapError> {
        let c = crate::stats::op_ctx();
        if crate::stats::is_probed(c) {
            return self.remove_probed(c, h);
        }
        self.remove_in(crate::stats::QUIET, h)
    }

    fn insert_batch(
        &self,
        items: &[(Interval, VmaId)],
        out: &mut Vec<Handle>,
    ) -> Result<(), RmapError> {
        crate::stats::with_op(out, move |c, out| {
            crate::precheck_items(items)?;
            let s = self.rule.pick(&self.topo, self.shards.count());
            let _o = self.outer.enter(c);
            self.shards.insert_batch(c, self.id, s, items, out);
            Ok(())
        })
    }

    fn insert_after_batch(
        &self,
        items: &[(Handle, Interval, VmaId)],
        out: &mut Vec<Handle>,
    ) -> Result<(), RmapError> {
        crate::stats::with_op(out, move |c, out| {
            for &(p, iv, _) in items {
                iv.validate()?;
                self.check_map(p)?;
            }
            let _o = self.outer.enter(c);
            self.shards.insert_after_batch(c, items, out)
        })
    }

    fn remove_batch(&self, handles: &[Handle]) -> Result<(), RmapError> {
        crate::stats::with_op((), move |c, ()| {
            crate::precheck_batch(self.id, handles)?;
            let _o = self.outer.enter(c);
            self.shards.remove_batch(c, handles)
        })
    }

    fn walk(&self, range: Interval, f: &mut dyn FnMut(Interval, VmaId)) {
        crate::stats::with_op(f, move |c, f| {
            if range.first <= range.last {
                self.outer.walk_stable(c, &self.shards, range, f);
            }
        })
    }

    fn walk_concurrent(&self, range: Interval, f: &mut dyn FnMut(Interval, VmaId)) {
        if range.first <= range.last {
            self.shards.walk_each(range, f);
        }
    }

    fn len(&self) -> usize {
        self.shards.len()
    }

    fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.shards.heap_bytes()
    }

    fn stats(&self) -> LockStats {
        let mut s = LockStats::default();
        self.outer.add_stats(&mut s);
        self.shards.add_stats(&mut s);
        s
    }
}

/// A public design type that is one composition of the parts above.
pub(crate) trait Composed: Send + Sync {
    /// The composition.
    type Core: ReverseMap;
    /// It.
    fn core(&self) -> &Self::Core;
}

/// Every composed design is the reverse map its composition is.
impl<T: Composed> ReverseMap for T {
    fn design(&self) -> Design {
        self.core().design()
    }
    #[inline]
    fn insert(&self, iv: Interval, vma: VmaId) -> Result<Handle, RmapError> {
        self.core().insert(iv, vma)
    }
    fn insert_after(&self, p: Handle, iv: Interval, vma: VmaId) -> Result<Handle, RmapError> {
        self.core().insert_after(p, iv, vma)
    }
    fn check_handle(&self, h: Handle) -> Result<(), RmapError> {
        self.core().check_handle(h)
    }
    #[inline]
    fn remove(&self, h: Handle) -> Result<(), RmapError> {
        self.core().remove(h)
    }
    fn insert_batch(
        &self,
        items: &[(Interval, VmaId)],
        out: &mut Vec<Handle>,
    ) -> Result<(), RmapError> {
        self.core().insert_batch(items, out)
    }
    fn insert_after_batch(
        &self,
        items: &[(Handle, Interval, VmaId)],
        out: &mut Vec<Handle>,
    ) -> Result<(), RmapError> {
        self.core().insert_after_batch(items, out)
    }
    fn remove_batch(&self, handles: &[Handle]) -> Result<(), RmapError> {
        self.core().remove_batch(handles)
    }
    fn walk(&self, range: Interval, f: &mut dyn FnMut(Interval, VmaId)) {
        self.core().walk(range, f)
    }
    fn walk_concurrent(&self, range: Interval, f: &mut dyn FnMut(Interval, VmaId)) {
        self.core().walk_concurrent(range, f)
    }
    fn try_walk(
        &self,
        range: Interval,
        f: &mut dyn FnMut(Interval, VmaId),
    ) -> Result<(), RmapError> {
        self.core().try_walk(range, f)
    }
    fn len(&self) -> usize {
        self.core().len()
    }
    fn memory_bytes(&self) -> usize {
        // The wrapper is the core plus nothing (a newtype).
        self.core().memory_bytes()
    }
    fn stats(&self) -> LockStats {
        self.core().stats()
    }
}
