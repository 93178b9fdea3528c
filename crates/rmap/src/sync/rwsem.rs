//! A reader-writer lock that waits the way Linux's `rw_semaphore` does
//! (`kernel/locking/rwsem.c`, 6.x), for measuring the designs under the
//! kernel's lock behaviour in user space (`aspace bench --lock rwsem`).
//! Written from the kernel's documented behaviour, not from its code.
//!
//! * **Fast paths.** A writer takes a free lock with one `cmpxchg`; a reader
//!   adds its count unless a writer holds the lock (readers take it past
//!   sleeping writers, as the kernel's reader lock stealing does).
//! * **Writers spin while the owner runs** (the kernel's `osq` optimistic
//!   spinning): spinners queue in an MCS queue, each polling a flag of its
//!   own; only the queue's head polls the lock word, and when it takes the
//!   lock it makes the next spinner head with one write to that spinner's
//!   node. So a release under contention costs one line transfer to the
//!   head, not a wake-up. A user-space thread cannot ask whether the owner
//!   is on a CPU, as the kernel does: a writer-owned lock is spun on for at
//!   most [`OWNER_SPIN`] (a hold that long means its owner was descheduled,
//!   on a busy host), a reader-owned one for at most [`READER_SPIN`] (the
//!   kernel's bounded spin on readers); then the writer sleeps.
//! * **Sleepers** wait in FIFO order on a queue keyed by the lock's address
//!   (`parking_lot_core`'s buckets stand for the kernel's `wait_list` and
//!   `wait_lock`). A release that finds sleepers wakes the first writer
//!   alone, or the readers at the front up to the first writer, granting
//!   the readers their counts as it wakes them. A woken writer competes
//!   again (and spins), unless it has waited [`HANDOFF_AFTER`] (the
//!   kernel's `RWSEM_WAIT_TIMEOUT`): then the release hands it the lock
//!   directly, so no newcomer can take it first.
//!
//! Not modelled: the kernel's reader-owner bookkeeping, `vcpu_is_preempted`
//! and `need_resched` checks (replaced by the spin bounds above). A woken
//! writer that loses re-queues at the back (the kernel keeps its place);
//! its wait still counts from its first sleep, so the hand-off bound holds.
//!
//! # Memory
//! 16 bytes: the count word and the spinners' queue tail.

use parking_lot::lock_api::{GuardSend, RawRwLock};
use parking_lot_core::{FilterOp, ParkResult, ParkToken, UnparkResult, UnparkToken};
use std::cell::Cell;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A writer holds the lock.
const WRITER: u64 = 1;
/// Threads sleep on the lock's queue: a release must look at it.
const WAITERS: u64 = 1 << 1;
/// One reader's share; the readers' count is `count >> 8`.
const READER: u64 = 1 << 8;
const READERS: u64 = !(READER - 1);

/// The longest a writer spins on a writer-owned lock before it sleeps.
pub const OWNER_SPIN: Duration = Duration::from_micros(50);
/// The longest a writer spins on a reader-owned lock before it sleeps
/// (the kernel bounds this spin at up to 25 us).
pub const READER_SPIN: Duration = Duration::from_micros(20);
/// A sleeping writer that has waited this long is handed the lock by the
/// next release (`RWSEM_WAIT_TIMEOUT`, 4 ms in the kernel).
pub const HANDOFF_AFTER: Duration = Duration::from_millis(4);
/// A queued spinner that is not yet the head yields its CPU after this
/// long, so that a descheduled head (on a busy or oversubscribed host) can
/// run.
const QUEUED_YIELD_AFTER: Duration = Duration::from_micros(50);

/// Park tokens carry the sleeper's first sleep, in microseconds since
/// [`epoch`], shifted left by one, with bit 0 set for a writer.
const TOKEN_WRITER: usize = 1;
/// Unpark tokens: the waker made the woken thread an owner.
const HANDED: UnparkToken = UnparkToken(1);
/// Unpark tokens: try again.
const RETRY: UnparkToken = UnparkToken(0);

fn epoch() -> Instant {
    static E: OnceLock<Instant> = OnceLock::new();
    *E.get_or_init(Instant::now)
}

fn stamp_us() -> usize {
    epoch().elapsed().as_micros() as usize
}

/// One spinner's place in a lock's MCS queue. A thread spins on at most
/// one lock at a time, so one node per thread serves every lock.
struct OsqNode {
    next: AtomicPtr<OsqNode>,
    /// Set by the predecessor when this node becomes the head.
    head: AtomicBool,
}

thread_local! {
    static NODE: OsqNode = const {
        OsqNode {
            next: AtomicPtr::new(ptr::null_mut()),
            head: AtomicBool::new(false),
        }
    };
    /// Spins of the current wait (for checking the clock only now and then).
    static POLLS: Cell<u32> = const { Cell::new(0) };
}

/// The raw lock (see the module docs).
#[derive(Debug)]
pub struct RawRwsem {
    count: AtomicU64,
    /// The MCS queue's tail: the last spinner to join.
    osq: AtomicPtr<OsqNode>,
}

impl RawRwsem {
    /// An unlocked lock.
    pub const fn new() -> RawRwsem {
        RawRwsem {
            count: AtomicU64::new(0),
            osq: AtomicPtr::new(ptr::null_mut()),
        }
    }

    fn key(&self) -> usize {
        self as *const RawRwsem as usize
    }

    /// A writer's attempt that does not queue: takes the lock if nobody
    /// holds it (sleepers or not).
    fn try_write(&self) -> bool {
        // Relaxed: the Acquire cmpxchg below is what orders the hold.
        let mut c = self.count.load(Ordering::Relaxed);
        loop {
            if c & (WRITER | READERS) != 0 {
                return false;
            }
            // Acquire on success: the hold sees the previous owner's writes
            // (its Release unlock). Relaxed on failure: nothing is read.
            match self.count.compare_exchange_weak(
                c,
                c | WRITER,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(x) => c = x,
            }
        }
    }

    /// A reader's attempt: takes a share unless a writer holds the lock.
    fn try_read(&self) -> bool {
        // Relaxed: the Acquire cmpxchg below orders the hold.
        let mut c = self.count.load(Ordering::Relaxed);
        loop {
            if c & WRITER != 0 {
                return false;
            }
            // Acquire: as in `try_write`.
            match self.count.compare_exchange_weak(
                c,
                c + READER,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(x) => c = x,
            }
        }
    }

    /// Optimistic spinning: joins the spinners' queue, and as its head
    /// polls the lock until it takes it or gives up (see the module docs).
    fn spin_for_write(&self) -> bool {
        NODE.with(|node| {
            // Relaxed: the node is published by the AcqRel swap below.
            node.next.store(ptr::null_mut(), Ordering::Relaxed);
            node.head.store(false, Ordering::Relaxed);
            let me = node as *const OsqNode as *mut OsqNode;
            // AcqRel: Release publishes this node's reset fields to the
            // predecessor that links to it; Acquire makes the predecessor's
            // node valid to write.
            let prev = self.osq.swap(me, Ordering::AcqRel);
            if !prev.is_null() {
                // SAFETY: a node in the queue stays valid until its thread
                // leaves the queue, which it does only after it has seen
                // its `next` set (below, in `osq_leave`) or has swapped
                // itself out of the tail, which `prev` still is not (we
                // replaced it as the tail). Release: publishes the link.
                unsafe { (*prev).next.store(me, Ordering::Release) };
                let start = Instant::now();
                let mut polls = 0u32;
                // Acquire: pairs with the predecessor's Release hand-over.
                while !node.head.load(Ordering::Acquire) {
                    polls = polls.wrapping_add(1);
                    if polls % 64 == 0 && start.elapsed() > QUEUED_YIELD_AFTER {
                        std::thread::yield_now();
                    } else {
                        std::hint::spin_loop();
                    }
                }
            }
            let got = self.spin_as_head();
            self.osq_leave(node, me);
            got
        })
    }

    /// The queue's head polls the lock word (loads, then one `cmpxchg`
    /// when it reads free), within the spin bounds.
    fn spin_as_head(&self) -> bool {
        let start = Instant::now();
        POLLS.with(|p| p.set(0));
        loop {
            // Relaxed: a poll; the cmpxchg in `try_write` orders the hold.
            let c = self.count.load(Ordering::Relaxed);
            if c & (WRITER | READERS) == 0 {
                if self.try_write() {
                    return true;
                }
                continue;
            }
            let n = POLLS.with(|p| {
                let n = p.get().wrapping_add(1);
                p.set(n);
                n
            });
            if n % 32 == 0 {
                let limit = if c & WRITER != 0 {
                    OWNER_SPIN
                } else {
                    READER_SPIN
                };
                if start.elapsed() > limit {
                    return false;
                }
            }
            std::hint::spin_loop();
        }
    }

    /// Leaves the queue as its head: makes the next spinner head, or
    /// empties the queue.
    fn osq_leave(&self, node: &OsqNode, me: *mut OsqNode) {
        // Acquire: the successor's node, once read, is valid to write.
        let mut next = node.next.load(Ordering::Acquire);
        if next.is_null() {
            // AcqRel on success: the queue is empty again; Acquire on
            // failure: a successor swapped in and will link to us.
            if self
                .osq
                .compare_exchange(me, ptr::null_mut(), Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return;
            }
            // A successor is linking itself: wait for its store.
            loop {
                // Acquire: pairs with the successor's Release link.
                next = node.next.load(Ordering::Acquire);
                if !next.is_null() {
                    break;
                }
                std::hint::spin_loop();
            }
        }
        // SAFETY: `next` is in the queue behind us and waits on its `head`
        // flag, so its node is valid. Release: what this head did (its
        // hold, if it took the lock) is visible to the next one.
        unsafe { (*next).head.store(true, Ordering::Release) };
    }

    fn lock_exclusive_slow(&self) {
        let since = stamp_us();
        loop {
            if self.try_write() || self.spin_for_write() {
                return;
            }
            if self.sleep((since << 1) | TOKEN_WRITER, true) {
                return;
            }
        }
    }

    fn lock_shared_slow(&self) {
        let since = stamp_us();
        loop {
            if self.try_read() {
                return;
            }
            if self.sleep(since << 1, false) {
                return;
            }
        }
    }

    /// Sleeps on the lock's queue unless it became available; returns true
    /// when the waker made this thread an owner.
    fn sleep(&self, token: usize, write: bool) -> bool {
        let validate = || loop {
            // Relaxed: ordered by the bucket lock this runs under (every
            // release that must wake takes it) and the cmpxchg below.
            let c = self.count.load(Ordering::Relaxed);
            let busy = if write {
                c & (WRITER | READERS) != 0
            } else {
                c & WRITER != 0
            };
            if !busy {
                return false;
            }
            if c & WAITERS != 0 {
                return true;
            }
            // Relaxed: the flag is read by releases, which take the bucket
            // lock before acting on it.
            if self
                .count
                .compare_exchange_weak(c, c | WAITERS, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return true;
            }
        };
        // SAFETY: the key is this lock's address, used by no other
        // primitive; `validate` does not panic or call into parking_lot;
        // the other callbacks do nothing.
        let r = unsafe {
            parking_lot_core::park(
                self.key(),
                validate,
                || {},
                |_, _| {},
                ParkToken(token),
                None,
            )
        };
        // An owner made by the waker: its Release cmpxchg, done before the
        // unpark, happens-before this return (the bucket lock orders them).
        matches!(r, ParkResult::Unparked(t) if t == HANDED)
    }

    /// A release that found sleepers (`writer`: the releaser was the
    /// writer, else the last reader): under the queue's lock, wakes the
    /// first writer or the readers in front of it, and releases the lock,
    /// or hands it to the woken (see the module docs).
    fn unlock_slow(&self, writer: bool) {
        let now = stamp_us();
        // Filled in by the filter, read by the callback (both run under
        // the queue's lock, one after the other).
        let readers = Cell::new(0u64);
        let woke_writer = Cell::new(false);
        let handoff = Cell::new(false);
        let filter = |t: ParkToken| {
            if woke_writer.get() {
                return FilterOp::Stop;
            }
            if t.0 & TOKEN_WRITER != 0 {
                if readers.get() > 0 {
                    return FilterOp::Stop;
                }
                woke_writer.set(true);
                let waited = Duration::from_micros(now.saturating_sub(t.0 >> 1) as u64);
                handoff.set(waited >= HANDOFF_AFTER);
                return FilterOp::Unpark;
            }
            readers.set(readers.get() + 1);
            FilterOp::Unpark
        };
        let callback = |r: UnparkResult| {
            // Relaxed: the cmpxchg below decides.
            let mut c = self.count.load(Ordering::Relaxed);
            loop {
                let mut new = if writer { c & !WRITER } else { c - READER };
                let mut token = RETRY;
                if r.unparked_threads > 0 {
                    let free = new & (WRITER | READERS) == 0;
                    if woke_writer.get() && handoff.get() && free {
                        new |= WRITER;
                        token = HANDED;
                    } else if readers.get() > 0 {
                        new += readers.get() * READER;
                        token = HANDED;
                    }
                }
                if !r.have_more_threads {
                    new &= !WAITERS;
                }
                // Release: the hold's writes are visible to the next owner
                // (the woken one or a newcomer's Acquire).
                match self
                    .count
                    .compare_exchange_weak(c, new, Ordering::Release, Ordering::Relaxed)
                {
                    Ok(_) => return token,
                    Err(x) => c = x,
                }
            }
        };
        // SAFETY: the key is this lock's address; neither closure panics
        // or calls into parking_lot.
        unsafe { parking_lot_core::unpark_filter(self.key(), filter, callback) };
    }
}

impl Default for RawRwsem {
    fn default() -> RawRwsem {
        RawRwsem::new()
    }
}

// SAFETY: `lock_exclusive` and `try_lock_exclusive` return with the writer
// bit set by this thread and no reader counted; `lock_shared` and
// `try_lock_shared` with a reader counted and no writer; the unlocks undo
// exactly that (or hand it to a woken thread that then owns it).
unsafe impl RawRwLock for RawRwsem {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawRwsem = RawRwsem::new();
    type GuardMarker = GuardSend;

    #[inline]
    fn lock_shared(&self) {
        if !self.try_read() {
            self.lock_shared_slow();
        }
    }

    #[inline]
    fn try_lock_shared(&self) -> bool {
        self.try_read()
    }

    #[inline]
    unsafe fn unlock_shared(&self) {
        // Relaxed: the Release cmpxchg below orders the hold.
        let mut c = self.count.load(Ordering::Relaxed);
        loop {
            if c & WAITERS != 0 && c & READERS == READER {
                // The last reader with sleepers: release and wake.
                return self.unlock_slow(false);
            }
            // Release: the hold's reads happen before a writer's Acquire.
            match self.count.compare_exchange_weak(
                c,
                c - READER,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(x) => c = x,
            }
        }
    }

    #[inline]
    fn lock_exclusive(&self) {
        // Acquire: the hold sees the previous owner's writes.
        if self
            .count
            .compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_exclusive_slow();
        }
    }

    #[inline]
    fn try_lock_exclusive(&self) -> bool {
        self.try_write()
    }

    #[inline]
    unsafe fn unlock_exclusive(&self) {
        // Release: the hold's writes happen before the next owner's Acquire.
        if self
            .count
            .compare_exchange(WRITER, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            self.unlock_slow(true);
        }
    }

    fn is_locked(&self) -> bool {
        // Relaxed: a snapshot.
        self.count.load(Ordering::Relaxed) & (WRITER | READERS) != 0
    }

    fn is_locked_exclusive(&self) -> bool {
        // Relaxed: a snapshot.
        self.count.load(Ordering::Relaxed) & WRITER != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::lock_api::RwLock;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    type Lock<T> = RwLock<RawRwsem, T>;

    #[test]
    fn writers_exclude_each_other_and_readers() {
        // Each writer increments a plain counter in two halves with a
        // check between; a reader sees both halves equal.
        let lock = Arc::new(Lock::new((0u64, 0u64)));
        let inside = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..6)
            .map(|i| {
                let (lock, inside) = (lock.clone(), inside.clone());
                std::thread::spawn(move || {
                    for k in 0..20_000u64 {
                        if i % 3 == 2 && k % 4 == 0 {
                            let g = lock.read();
                            assert_eq!(g.0, g.1, "a reader saw a half-done write");
                            continue;
                        }
                        let mut g = lock.write();
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two writers");
                        g.0 += 1;
                        std::hint::spin_loop();
                        g.1 += 1;
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let g = lock.read();
        let writes = 4 * 20_000 + 2 * 15_000;
        assert_eq!(*g, (writes, writes));
        assert_eq!(lock.raw_count(), READER, "only this reader holds it");
    }

    trait RawCount {
        fn raw_count(&self) -> u64;
    }

    impl<T> RawCount for Lock<T> {
        fn raw_count(&self) -> u64 {
            // SAFETY: reads the raw lock's word only; the lock's state is
            // not changed.
            unsafe { self.raw() }.count.load(Ordering::SeqCst)
        }
    }

    #[test]
    fn readers_share_and_try_locks_say_no_when_held() {
        let lock = Lock::new(5);
        let a = lock.read();
        let b = lock.read();
        assert_eq!(*a + *b, 10);
        assert!(lock.try_write().is_none(), "readers hold it");
        assert!(lock.try_read().is_some());
        drop((a, b));
        let w = lock.try_write().expect("free");
        assert!(lock.try_read().is_none() && lock.try_write().is_none());
        drop(w);
        assert_eq!(lock.raw_count(), 0);
    }

    #[test]
    fn a_sleeping_writer_is_woken_and_gets_the_lock() {
        // A reader holds the lock longer than any spin bound: the writer
        // must sleep, and the reader's release must wake it.
        let lock = Arc::new(Lock::new(0u32));
        let r = lock.read();
        let got = Arc::new(AtomicBool::new(false));
        let t = {
            let (lock, got) = (lock.clone(), got.clone());
            std::thread::spawn(move || {
                *lock.write() += 1;
                got.store(true, Ordering::SeqCst);
            })
        };
        // Until the writer has gone to sleep (WAITERS set), or a minute.
        let start = Instant::now();
        while lock.raw_count() & WAITERS == 0 && start.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_ne!(lock.raw_count() & WAITERS, 0, "the writer never slept");
        assert!(
            !got.load(Ordering::SeqCst),
            "a writer took a read-held lock"
        );
        drop(r);
        t.join().unwrap();
        assert_eq!(*lock.read(), 1);
        assert_eq!(lock.raw_count() & WAITERS, 0, "no sleeper is left");
    }

    #[test]
    fn a_writer_that_waited_past_the_handoff_time_is_handed_the_lock() {
        // The releaser hands the lock to a sleeper that waited 4 ms: the
        // lock is never free in between, so a try_write in the releasing
        // thread's next instant fails until the sleeper has released.
        let lock = Arc::new(Lock::new(Vec::<u32>::new()));
        let w = lock.write();
        let t = {
            let lock = lock.clone();
            std::thread::spawn(move || lock.write().push(1))
        };
        let start = Instant::now();
        while lock.raw_count() & WAITERS == 0 && start.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(HANDOFF_AFTER + Duration::from_millis(1));
        drop(w);
        // The hand-off left the writer bit set for the sleeper: this
        // thread cannot barge in before it has pushed.
        let mine = lock.write();
        assert_eq!(*mine, vec![1], "the sleeper held the lock first");
        drop(mine);
        t.join().unwrap();
    }
}
