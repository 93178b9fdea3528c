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
//! members the operation visits. Interval-tree nodes are counted along the
//! path from the root to the entry (read) plus the entry and its parent
//! (written); the nodes a rebalancing rotates or recolours, and the
//! ancestors whose cached maximum changes, are not counted, so for the
//! Linux-derived designs `lines_written` is a lower bound.
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

use crate::stats::CallSite;

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

const LINE: usize = 64;

struct Pending {
    event: LockEvent,
    /// (line address, written)
    touched: Vec<(usize, bool)>,
}

#[derive(Default)]
struct Recorder {
    events: Vec<LockEvent>,
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
    /// Puts the outer recording state back, also when `work` unwinds.
    struct Restore {
        was: bool,
        saved: Option<Vec<LockEvent>>,
    }
    impl Drop for Restore {
        fn drop(&mut self) {
            crate::stats::set_recording(self.was);
            if let Some(saved) = self.saved.take() {
                REC.with(|r| r.borrow_mut().events = saved);
            }
        }
    }
    let saved = REC.with(|r| std::mem::take(&mut r.borrow_mut().events));
    let was = crate::stats::set_recording(true);
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
        p.touched.sort_unstable();
        p.touched.dedup();
        let mut written = 0u32;
        let mut read = 0u32;
        let mut i = 0;
        while i < p.touched.len() {
            let line = p.touched[i].0;
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
        }
        p.event.hold_ns = hold_ns;
        p.event.lines_written = written;
        p.event.lines_read = read;
        r.events.push(p.event);
    });
}

/// True when the calling thread records.
#[inline]
pub(crate) fn recording() -> bool {
    crate::stats::ctx() & crate::stats::RECORDING != 0
}

/// Notes that the innermost open hold touched `[ptr, ptr + len)`.
pub(crate) fn touch(ptr: *const u8, len: usize, write: bool) {
    let a = ptr as usize;
    let first = a / LINE;
    let last = (a + len.max(1) - 1) / LINE;
    REC.with(|r| {
        if let Some(p) = r.borrow_mut().stack.last_mut() {
            for l in first..=last {
                p.touched.push((l, write));
            }
        }
    });
}

/// [`touch`] for a value.
#[inline]
pub(crate) fn touch_val<T>(v: &T, write: bool) {
    touch((v as *const T).cast(), std::mem::size_of::<T>(), write);
}
