//! An opt-in, thread-local recorder of lock holds, for models that predict
//! many-core behaviour from one core (critical-section lengths and the
//! shared cache lines each critical section touches).
//!
//! [`record`] runs a closure with recording switched on for the calling
//! thread and returns one [`LockEvent`] per lock hold the closure made on
//! any map, in the order the holds ended (an inner hold of a nested pair,
//! such as a shard lock under an outer lock, ends first). Other threads are
//! not recorded. When the thread does not record, a map operation pays one
//! test of a thread-local byte for it (shared with the timing switch; see
//! [`crate::stats`]).
//!
//! Holds nest (`sharded` takes its outer lock, then a shard's); the
//! recorder pairs each end with the innermost open hold, which is right
//! because the crate releases holds last-in, first-out.
//!
//! # Lines
//!
//! `lines_written` and `lines_read` count the distinct 64-byte cache lines
//! the critical section wrote and read (a written line is not counted again
//! as read), as the design's code reports them while recording: the lock
//! word and the lock's counters (written by every acquisition, shared or
//! exclusive), the tree header, and the tree nodes, group heads and group
//! members the operation visits. A tree node counts as lines of its own
//! (`ceil(size / 64)`, shared with no other node: see `touch_node`), so
//! the count does not depend on where the arena put it; the lock word, the
//! counters and the header count by address, so a design that puts its lock
//! beside its data shares that line. Interval-tree nodes are counted along the
//! path from the root to the entry (read) plus the entry and its parent
//! (written); the nodes a rebalancing rotates or recolours, and the
//! ancestors whose cached maximum changes, are not counted, so for the
//! Linux-derived designs `lines_written` is a lower bound.
//!
//! [`record_lines`] also returns, for each hold, the identities of the lines
//! it touched ([`LineTouch`]), so that a cache model can tell which lines
//! two holds share: a model that follows each line's last writer charges a
//! transfer only where another CPU wrote the line last.
//!
//! A removal by handle does not search from the root (it starts at the
//! node its handle names and follows parent links), so it records the
//! node and the nodes around what it changed
//! (`touch_loaded_around_changes`: the written nodes, the children,
//! parent and sibling the fix-up reads), not the root path (s40).
//!
//! Where a design changes a tree, the nodes the change wrote are found by
//! comparing the tree's arena before and after it (a copy taken only while
//! recording, `Snapshot`): rotations, recolourings and the augmented
//! maxima a rebalance updates count as written, so `lines_written` is exact
//! for the tree's nodes, not a lower bound.
//!
//! Each [`LineTouch`] also says what the kernel would do with it where the
//! lab's code differs: a node slot the change allocated
//! ([`LineTouch::allocated`]: the kernel's new VMA is its own CPU's) or
//! freed ([`LineTouch::freed`]: the kernel's erase does not write the
//! erased node), and a tree header whose kernel counterpart, the root and
//! the leftmost node, the change kept ([`LineTouch::kernel_keeps`]). The
//! counts above stay the lab's; a kernel-cost model applies the flags.
//!
//! # Example
//!
//! ```
//! use rmap::stats::CallSite;
//! use rmap::{Design, Interval, ReverseMap, Topology};
//!
//! let m = Design::Aspace.build(&Topology::Os);
//! let events = rmap::trace::record(|| {
//!     let _site = rmap::stats::set_call_site(CallSite::MmapLink);
//!     m.insert(Interval::new(0, 9).unwrap(), 1).unwrap();
//! });
//! assert_eq!(events.len(), 1);
//! assert!(events[0].write);
//! assert_eq!(events[0].site, CallSite::MmapLink);
//! assert!(events[0].lines_written >= 2);
//! ```

use std::cell::RefCell;

use crate::probe::CallSite;

/// One lock hold, as recorded by [`record`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockEvent {
    /// Id of the map whose lock it was (unique per map in this process).
    pub map: u32,
    /// The shard whose lock it was (0 for a single-lock design; the outer
    /// lock of `sharded` reports `u32::MAX`).
    pub shard: u32,
    /// Exclusive (true) or shared hold.
    pub write: bool,
    /// The call site the thread had declared.
    pub site: CallSite,
    /// Nanoseconds from acquisition to release.
    pub hold_ns: u64,
    /// Nanoseconds from the first acquisition attempt to acquisition.
    pub wait_ns: u64,
    /// Distinct shared cache lines written while held (see the module docs).
    pub lines_written: u32,
    /// Distinct shared cache lines only read while held.
    pub lines_read: u32,
    /// The lock word's line was also written as data while held (a tree
    /// header or root beside the lock word): a waiter polling the lock word
    /// then takes away a line the holder writes.
    pub lock_line_written_as_data: bool,
}

/// One line a recorded hold touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LineTouch {
    /// The line's identity, unique in this process while the memory it
    /// names lives: a 64-byte line's address / 64, or (high bit set) a tree
    /// node's own line (see `touch_node`). A tree arena that grows moves
    /// its nodes, which then get new identities.
    pub line: usize,
    /// The hold wrote the line (else it only read it).
    pub written: bool,
    /// The hold's first touch of the line was a read. For a written line:
    /// the hold loaded it before it stored to it, as a walk from the root
    /// loads the nodes on its path that the change then writes (its
    /// address came from the load before, so the load is part of the
    /// walk's dependent chain). False for a line first written: the lock
    /// word, the lab's counters, a node the change wrote without the walk
    /// having read it (a new entry, a rotated sibling). Always true for a
    /// line only read.
    pub loaded_first: bool,
    /// A tree node whose slot the hold's change allocated (free or not yet
    /// in the arena before it): the new entry. The kernel's counterpart is
    /// a VMA its own CPU allocated and filled before it took the lock.
    pub allocated: bool,
    /// A tree node whose slot the hold's change freed (live before it,
    /// free after): the arena wrote its free-list link and generation. The
    /// kernel's erase writes nothing of the node it erases (it is freed
    /// after the lock).
    pub freed: bool,
    /// A tree header the lab's code wrote (its arena, free list and
    /// count) whose kernel counterpart, `rb_root_cached` (the root and the
    /// leftmost node), the hold's changes left as they were: the kernel
    /// only reads that line. False for every line of a design that does
    /// not report it.
    pub kernel_keeps: bool,
}

impl LineTouch {
    /// A tree node's line (see `touch_node`).
    pub fn is_node(&self) -> bool {
        self.line & NODE_LINE != 0
    }

    /// A line of the lab's own lock counters (holds, entry count, hold
    /// time), which the kernel's lock does not have.
    pub fn is_counter(&self) -> bool {
        self.line & NODE_LINE == 0 && self.line & COUNTER_LINE != 0
    }
}

/// A recorded hold and the distinct lines it touched (the lock word's line
/// first), as [`record_lines`] returns them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TracedHold {
    /// The hold.
    pub event: LockEvent,
    /// Each distinct line once (written if any touch wrote it): the lock
    /// word's line first, then in order of identity.
    pub lines: Vec<LineTouch>,
}

const LINE: usize = 64;

struct Pending {
    event: LockEvent,
    /// (line address, written), in the order of the touches.
    touched: Vec<(usize, bool)>,
    /// Node lines the hold's changes allocated / freed (see
    /// [`LineTouch::allocated`]).
    allocated: Vec<usize>,
    freed: Vec<usize>,
    /// Header lines whose kernel counterpart a change kept / changed (see
    /// [`LineTouch::kernel_keeps`]).
    header_kept: Vec<usize>,
    header_changed: Vec<usize>,
    /// Time the recorder itself spent inside the hold (arena copies and
    /// comparisons), taken off the hold's time.
    overhead_ns: u64,
}

#[derive(Default)]
struct Recorder {
    events: Vec<TracedHold>,
    stack: Vec<Pending>,
}

thread_local! {
    static REC: RefCell<Recorder> = RefCell::new(Recorder::default());
}

/// Runs `work` with this thread's lock holds recorded; returns the events.
/// Nests: an inner `record` takes the events of its own closure only.
pub fn record<R>(work: impl FnOnce() -> R) -> Vec<LockEvent> {
    record_with(work).1
}

/// Like [`record`], also returning the closure's value.
pub fn record_with<R>(work: impl FnOnce() -> R) -> (R, Vec<LockEvent>) {
    let (out, holds) = record_lines(work);
    (out, holds.into_iter().map(|h| h.event).collect())
}

/// Like [`record_with`], each hold with the lines it touched.
pub fn record_lines<R>(work: impl FnOnce() -> R) -> (R, Vec<TracedHold>) {
    /// Puts the outer recording state back, also when `work` unwinds.
    struct Restore {
        was: bool,
        saved: Option<Vec<TracedHold>>,
    }
    impl Drop for Restore {
        fn drop(&mut self) {
            crate::probe::set_recording(self.was);
            if let Some(saved) = self.saved.take() {
                REC.with(|r| r.borrow_mut().events = saved);
            }
        }
    }
    let saved = REC.with(|r| std::mem::take(&mut r.borrow_mut().events));
    let was = crate::probe::set_recording(true);
    let mut restore = Restore {
        was,
        saved: Some(saved),
    };
    let out = work();
    let saved = restore.saved.take().unwrap_or_default();
    let mine = REC.with(|r| std::mem::replace(&mut r.borrow_mut().events, saved));
    drop(restore);
    (out, mine)
}

/// Opens the event of a hold that just began.
pub(crate) fn push_pending(event: LockEvent) {
    REC.with(|r| {
        r.borrow_mut().stack.push(Pending {
            event,
            touched: Vec::new(),
            allocated: Vec::new(),
            freed: Vec::new(),
            header_kept: Vec::new(),
            header_changed: Vec::new(),
            overhead_ns: 0,
        })
    });
}

/// Closes the innermost open event with its hold time.
pub(crate) fn finish_pending(hold_ns: u64) {
    REC.with(|r| {
        let mut r = r.borrow_mut();
        let Some(mut p) = r.stack.pop() else {
            return;
        };
        // The hold's first touch is its lock word (see `stats`), the second
        // the lock's counters; a later write to the lock word's line is data.
        if let Some(&(lock_line, _)) = p.touched.first() {
            p.event.lock_line_written_as_data =
                p.touched.iter().skip(2).any(|&(l, w)| w && l == lock_line);
        }
        let lock_line = p.touched.first().map(|&(l, _)| l);
        // Stable: each line's touches stay in the order they were made, so
        // the first of a line's run is its first touch.
        p.touched.sort_by_key(|&(l, _)| l);
        let mut written = 0u32;
        let mut read = 0u32;
        let mut lines = Vec::with_capacity(p.touched.len());
        let mut i = 0;
        while i < p.touched.len() {
            let line = p.touched[i].0;
            let loaded_first = !p.touched[i].1;
            let mut w = false;
            while i < p.touched.len() && p.touched[i].0 == line {
                w |= p.touched[i].1;
                i += 1;
            }
            if w {
                written += 1;
            } else {
                read += 1;
            }
            lines.push(LineTouch {
                line,
                written: w,
                loaded_first,
                allocated: p.allocated.contains(&line),
                freed: p.freed.contains(&line),
                kernel_keeps: w
                    && p.header_kept.contains(&line)
                    && !p.header_changed.contains(&line),
            });
        }
        if let Some(k) = lock_line.and_then(|l| lines.iter().position(|t| t.line == l)) {
            lines[..=k].rotate_right(1);
        }
        p.event.hold_ns = hold_ns.saturating_sub(p.overhead_ns);
        p.event.lines_written = written;
        p.event.lines_read = read;
        r.events.push(TracedHold {
            event: p.event,
            lines,
        });
    });
}

/// True when the calling thread records.
#[inline]
pub(crate) fn recording() -> bool {
    crate::probe::ctx() & crate::probe::RECORDING != 0
}

/// Notes that the innermost open hold touched the lines `ids` (if a hold
/// is open).
fn note_lines(ids: impl Iterator<Item = usize>, write: bool) {
    REC.with(|r| {
        if let Some(p) = r.borrow_mut().stack.last_mut() {
            p.touched.extend(ids.map(|l| (l, write)));
        }
    });
}

/// Notes that the innermost open hold touched `[ptr, ptr + len)`.
pub(crate) fn touch(ptr: *const u8, len: usize, write: bool) {
    let a = ptr as usize;
    let first = a / LINE;
    let last = (a + len.max(1) - 1) / LINE;
    note_lines(first..=last, write);
}

/// Marks the line ids of [`touch_counter`] (an address divided by [`LINE`]
/// is below this bit too).
const COUNTER_LINE: usize = 1 << (usize::BITS - 2);

/// Notes that the innermost open hold touched the lab's lock counter at
/// `ptr` (one line, marked as a counter: see [`LineTouch::is_counter`]).
pub(crate) fn touch_counter(ptr: *const u8, write: bool) {
    note_lines(std::iter::once(COUNTER_LINE | (ptr as usize / LINE)), write);
}

/// [`touch`] for a value.
#[inline]
pub(crate) fn touch_val<T>(v: &T, write: bool) {
    touch((v as *const T).cast(), std::mem::size_of::<T>(), write);
}

/// Marks the line ids of [`touch_node`], which never collide with a
/// physical line's (an address divided by [`LINE`] is below this bit).
const NODE_LINE: usize = 1 << (usize::BITS - 1);

/// Notes that the innermost open hold touched the tree node `v`, counted
/// as lines of its own: `ceil(size / 64)` of them, shared with no other
/// node, wherever the node lies.
///
/// Nodes sit in an arena at `index * size` bytes, so a node of 48 bytes
/// spans one line or two and shares lines with its neighbours depending on
/// its index, and which indices a path meets depends on the order of the
/// inserts and removals before it (the warm-up's threads). Counted by
/// address, one design's holds wrote 88 lines a slot in two recordings and
/// 112 in a third, with the same hold times, which moved its 224-CPU
/// prediction by a third. Counted per node, as if each node were
/// line-aligned (a cache-aligned slab object), the count is what the
/// operation does, not where the allocator put it.
#[inline]
pub(crate) fn touch_node<T>(v: &T, write: bool) {
    let a = (v as *const T) as usize;
    let lines = std::mem::size_of::<T>().max(1).div_ceil(LINE);
    // Nodes do not overlap, so `a + k` for k below the node's size names
    // each of its lines once.
    note_lines((0..lines).map(|k| NODE_LINE | (a + k)), write);
}

/// A copy of a tree arena's nodes, taken before a recorded change (see
/// [`snapshot`] and [`touch_changed`]), and optionally a key of its
/// header's state ([`Snapshot::with_key`]). Recording only: it costs a
/// copy of the arena.
pub(crate) struct Snapshot(Box<dyn std::any::Any>, Option<(u64, u64)>);

impl Snapshot {
    /// The snapshot with `key`, what the tree's header held before the
    /// change (the designs' trees: root and leftmost node).
    pub(crate) fn with_key(mut self, key: (u64, u64)) -> Snapshot {
        self.1 = Some(key);
        self
    }

    /// The key given to [`Snapshot::with_key`], if any.
    pub(crate) fn key(&self) -> Option<(u64, u64)> {
        self.1
    }
}

/// Notes, for the innermost open hold, whether a change changed the
/// kernel counterpart of the tree header `v` (see
/// [`LineTouch::kernel_keeps`]); `v`'s lines by address, as
/// [`touch_val`] counts them.
#[cold]
pub(crate) fn header_changed<T>(v: &T, changed: bool) {
    let a = (v as *const T) as usize;
    let first = a / LINE;
    let last = (a + std::mem::size_of::<T>().max(1) - 1) / LINE;
    REC.with(|r| {
        if let Some(p) = r.borrow_mut().stack.last_mut() {
            let to = if changed {
                &mut p.header_changed
            } else {
                &mut p.header_kept
            };
            to.extend(first..=last);
        }
    });
}

/// Adds the time since `start` to the recorder overhead of every open
/// hold (an outer lock's time includes its inner holds'), taken off their
/// times.
fn overhead_since(start: std::time::Instant) {
    let ns = start.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
    REC.with(|r| {
        for p in r.borrow_mut().stack.iter_mut() {
            p.overhead_ns += ns;
        }
    });
}

/// Copies `nodes` (a tree's arena) for [`touch_changed`]. Its time does
/// not count in the hold's.
#[cold]
pub(crate) fn snapshot<T: Copy + 'static>(nodes: &[T]) -> Snapshot {
    let start = std::time::Instant::now();
    let s = Snapshot(Box::new(nodes.to_vec()), None);
    overhead_since(start);
    s
}

/// Notes every node of `nodes` that differs from its copy in `before` (or
/// is new) as written by the innermost open hold: what the change between
/// the two wrote, rotations and recolourings included. A snapshot of
/// another node type touches nothing. Its time does not count in the
/// hold's. `live` tells an allocated slot from a free one: a node free
/// (or absent) before and live after is noted as allocated, one live
/// before and free after as freed ([`LineTouch::allocated`],
/// [`LineTouch::freed`]).
#[cold]
pub(crate) fn touch_changed<T: Copy + PartialEq + 'static>(
    before: Snapshot,
    nodes: &[T],
    live: impl Fn(&T) -> bool,
) {
    let start = std::time::Instant::now();
    let Ok(old) = before.0.downcast::<Vec<T>>() else {
        return;
    };
    for (i, n) in nodes.iter().enumerate() {
        let was = old.get(i);
        if was != Some(n) {
            touch_node(n, true);
            let was_live = was.is_some_and(&live);
            let marked = match (was_live, live(n)) {
                (false, true) => Some(true),
                (true, false) => Some(false),
                _ => None,
            };
            if let Some(allocated) = marked {
                let a = (n as *const T) as usize;
                let lines = std::mem::size_of::<T>().max(1).div_ceil(LINE);
                REC.with(|r| {
                    if let Some(p) = r.borrow_mut().stack.last_mut() {
                        let to = if allocated {
                            &mut p.allocated
                        } else {
                            &mut p.freed
                        };
                        to.extend((0..lines).map(|k| NODE_LINE | (a + k)));
                    }
                });
            }
        }
    }
    drop(old);
    overhead_since(start);
}

/// For a removal found by its handle (no search from the root): notes as
/// read, for the innermost open hold, the nodes the change must have
/// loaded, before [`touch_changed`] notes what it wrote. `links` gives a
/// node's parent, left and right child as slots (`None` when it is not
/// linked), `rewrote(before, after)` whether a changed slot changed in
/// more than its parent link; both are read in the arena before the
/// change (`before`) and after it (`nodes`). Loaded: every node the
/// change wrote that was linked before (it followed a link to it and read
/// it first), and, for every node it rewrote (children, colour, maximum,
/// state: not one it only re-parented), that node's children, its parent
/// and the parent's children. This is what an unlink of a node with
/// parent links reads: the augmented maximum recomputed from each
/// rewritten node's children, then checked on its parent (where the walk
/// up stops: the first parent whose value stays, and its other child),
/// the rebalancing's sibling and its children (the sibling is recoloured
/// or rotated: rewritten), the successor it moves (rewritten) and that
/// successor's old parent. It misses a node of the successor's search
/// between two the change left alone (that search is short: the
/// successor's subtree's left spine). Its time does not count in the
/// hold's.
#[cold]
pub(crate) fn touch_loaded_around_changes<T: Copy + PartialEq + 'static>(
    before: &Snapshot,
    nodes: &[T],
    links: impl Fn(&T) -> Option<[u32; 3]>,
    rewrote: impl Fn(&T, &T) -> bool,
) {
    let start = std::time::Instant::now();
    let Some(old) = before.0.downcast_ref::<Vec<T>>() else {
        return;
    };
    let nil = crate::interval_tree::NIL;
    let mut loaded = std::collections::BTreeSet::new();
    for (c, n) in nodes.iter().enumerate() {
        let was = old.get(c);
        if was == Some(n) {
            continue;
        }
        if let Some(w) = was {
            if links(w).is_some() {
                loaded.insert(c);
            }
        }
        if was.is_some_and(|w| !rewrote(w, n)) {
            continue;
        }
        for arena in [&old[..], nodes] {
            let Some([p, l, r]) = arena.get(c).and_then(&links) else {
                continue;
            };
            let parent = arena.get(p as usize).and_then(&links);
            let [_, pl, pr] = parent.unwrap_or([nil; 3]);
            for i in [l, r, p, pl, pr] {
                if i != nil {
                    loaded.insert(i as usize);
                }
            }
        }
    }
    for i in loaded {
        if let Some(n) = nodes.get(i) {
            touch_node(n, false);
        }
    }
    overhead_since(start);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node of the linux designs' arena size (48 bytes).
    #[allow(dead_code)]
    struct Node48([u64; 6]);

    /// Opens one write hold for the touches that follow (closed by
    /// `finish_pending`).
    fn open_hold() {
        push_pending(LockEvent {
            map: 0,
            shard: 0,
            write: true,
            site: CallSite::MmapLink,
            hold_ns: 0,
            wait_ns: 0,
            lines_written: 0,
            lines_read: 0,
            lock_line_written_as_data: false,
        });
    }

    /// The (written, read) lines of one hold that runs `touches`.
    fn lines_of(touches: impl FnOnce()) -> (u32, u32) {
        open_hold();
        touches();
        finish_pending(0);
        let e = REC
            .with(|r| r.borrow_mut().events.pop())
            .expect("one event");
        assert_eq!(
            e.lines.iter().filter(|l| l.written).count() as u32,
            e.event.lines_written
        );
        (e.event.lines_written, e.event.lines_read)
    }

    #[test]
    fn a_node_counts_the_same_lines_wherever_the_arena_put_it() {
        let arena: Vec<Node48> = (0..16).map(|_| Node48([0; 6])).collect();
        let mut by_address = std::collections::BTreeSet::new();
        for i in 0..15 {
            // Per node: one line for a node, two for two neighbours, one
            // written and one read for a written node under a read one.
            assert_eq!(lines_of(|| touch_node(&arena[i], true)), (1, 0), "node {i}");
            assert_eq!(
                lines_of(|| {
                    touch_node(&arena[i], true);
                    touch_node(&arena[i + 1], true);
                }),
                (2, 0),
                "nodes {i} and {}",
                i + 1
            );
            assert_eq!(
                lines_of(|| {
                    touch_node(&arena[i], true);
                    touch_node(&arena[i + 1], false);
                }),
                (1, 1)
            );
            // Touching a node twice counts it once, written if either was.
            assert_eq!(
                lines_of(|| {
                    touch_node(&arena[i], false);
                    touch_node(&arena[i], true);
                }),
                (1, 0)
            );
            by_address.insert(lines_of(|| touch_val(&arena[i], true)));
        }
        // By address, the same node is one line or two depending on its
        // index: what per-node counting removes.
        assert!(by_address.contains(&(1, 0)) && by_address.contains(&(2, 0)));
    }

    #[test]
    fn a_written_line_says_whether_the_hold_loaded_it_first() {
        let arena: Vec<Node48> = (0..4).map(|_| Node48([0; 6])).collect();
        open_hold();
        // The walk loads 0, 1 and 2; the change writes 1 and 3 (3 never
        // loaded: a new entry), then 0 again as read.
        touch_node(&arena[0], false);
        touch_node(&arena[1], false);
        touch_node(&arena[2], false);
        touch_node(&arena[3], true);
        touch_node(&arena[1], true);
        touch_node(&arena[0], false);
        finish_pending(0);
        let e = REC
            .with(|r| r.borrow_mut().events.pop())
            .expect("one event");
        let of = |i: usize| {
            let id = NODE_LINE | (&arena[i] as *const Node48 as usize);
            let t = e.lines.iter().find(|t| t.line == id).expect("touched");
            (t.written, t.loaded_first)
        };
        assert_eq!(of(0), (false, true));
        assert_eq!(of(1), (true, true), "loaded by the walk, then written");
        assert_eq!(of(2), (false, true));
        assert_eq!(of(3), (true, false), "written without a load first");
    }

    #[test]
    fn a_change_says_which_node_it_allocated_and_which_it_freed() {
        use crate::{Design, Interval, Topology};
        let m = Design::Linux.build(&Topology::Os);
        let iv = Interval::new(0, 9).unwrap();
        let h: Vec<_> = (0..8).map(|v| m.insert(iv, v).unwrap()).collect();
        let ((), rem) = record_lines(|| m.remove(h[3]).unwrap());
        let ((), ins) = record_lines(|| {
            m.insert(iv, 9).unwrap();
        });
        let flagged = |holds: &[TracedHold], f: fn(&LineTouch) -> bool| -> Vec<usize> {
            holds[0]
                .lines
                .iter()
                .filter(|l| f(l))
                .map(|l| l.line)
                .collect()
        };
        let freed = flagged(&rem, |l| l.freed);
        assert_eq!(freed.len(), 1, "the removal frees one node");
        assert!(flagged(&rem, |l| l.allocated).is_empty());
        // The insert reuses the freed slot for its new entry.
        assert_eq!(flagged(&ins, |l| l.allocated), freed);
        assert!(flagged(&ins, |l| l.freed).is_empty());
        // Every flagged line is a written node.
        for l in rem[0].lines.iter().chain(&ins[0].lines) {
            if l.allocated || l.freed {
                assert!(l.written && l.is_node());
            }
        }
        // The header (lines by address, after the lock word): written by
        // the lab's code every time; its kernel counterpart (root and
        // leftmost) kept by an insert to the right of equal intervals,
        // changed by the first insert into an empty tree.
        let header = |h: &TracedHold| -> Vec<LineTouch> {
            h.lines[1..]
                .iter()
                .filter(|l| !l.is_node() && !l.is_counter() && l.written)
                .copied()
                .collect()
        };
        let kept = header(&ins[0]);
        assert!(!kept.is_empty());
        assert!(kept.iter().all(|l| l.kernel_keeps), "{kept:?}");
        let empty = Design::Linux.build(&Topology::Os);
        let ((), first) = record_lines(|| {
            empty.insert(iv, 0).unwrap();
        });
        let changed = header(&first[0]);
        assert!(!changed.is_empty());
        assert!(changed.iter().all(|l| !l.kernel_keeps), "{changed:?}");
    }

    #[test]
    fn node_lines_and_address_lines_never_merge() {
        let arena: Vec<Node48> = (0..2).map(|_| Node48([0; 6])).collect();
        // The same memory counted once as a node and once by address: two
        // kinds of line, never one.
        let (w, r) = lines_of(|| {
            touch_node(&arena[0], true);
            touch((&arena[0] as *const Node48).cast(), 8, true);
        });
        assert_eq!((w, r), (2, 0));
    }
}
