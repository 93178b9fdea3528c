//! The value boxes of a [`Boxed`](crate::Boxed) tree: taken from a pool of
//! the writing thread, and given back to that pool when a write's retired
//! value has outlived its grace period.
//!
//! # Why
//!
//! crossbeam-epoch, which the tree used until stop 22, ran a deferred
//! function on whichever thread collected: often a reader, or the writer of
//! another tree. A retired value's box was then freed by a thread that did
//! not allocate it, which glibc serves
//! through the owning arena's lock: measured, about a tenth of a reader's
//! time beside a writer, and a fifth of the cycles of two threads each
//! writing its own tree (BENCHMARKS.md, "Why boxed values miss"). Here the
//! box goes back to the thread whose write retired it, to be reused by
//! that thread's next write, and the allocator sees neither.
//!
//! # Layout
//!
//! ```text
//!  writer thread W (thread-local Pools)          any thread X (deferred drop)
//!  +--------------------------------------+      drop the value in place, then:
//!  | class: layout, home ----------------+-+-->  X is W: push on W's free list
//!  |        free list: Vec of boxes      | |     else:  gather in X's batch of 32,
//!  |        (no atomics)                 | |            CAS-push it on W's Home
//!  +--------------------------------------+ |
//!         ^ take(): pop the free list;     v
//!         | empty: swap `incoming` once   Home (leaked, 128-byte aligned):
//!         +------------------------------ a stack of batches, one per class
//! ```
//!
//! A thread has a class per value layout it writes (at most
//! [`CLASSES`](pooled::CLASSES); a further layout is boxed by the allocator
//! as before). Each class has a free list (a `Vec` of box pointers, used
//! without atomics) and a [`Home`]: the stack of batches other threads
//! push, which the owner takes whole with one swap when its list runs dry.
//! Pushes from many threads and a take-all swap by one owner need no ABA
//! protection: nothing is ever popped singly from the shared stack. Boxes
//! are listed beside them, never linked through them: a thread that gives
//! back another's box does not write it, so its line stays where the owner,
//! who writes the next value into it, last had it; and a value of any size
//! (not zero) can be pooled.
//!
//! # Cost and memory
//!
//! Per stored value: a thread-local lookup and a pop (instead of `malloc`).
//! Per retired value: its drop, then a push on the free list when the
//! writer collects its own garbage, or a slot in a batch when another
//! thread does, and per 32 of those one allocation of a batch (freed by the
//! owner) and one CAS on the home's line (instead of a local or a
//! cross-arena `free` per box). Per thread and layout: at most 4096 boxes,
//! or 256 KiB of them for large values (at least 16), on the free list,
//! about as many on the home's stack, and [`CHAIN`](pooled::CHAIN) in a
//! batch being gathered; beyond that a box goes back to the allocator.
//! Homes are never freed: when a thread exits, its lists are freed, its
//! batch pushed, and its homes return to a registry, where the next thread
//! to write that layout adopts them (with whatever is still on their
//! stacks), so the memory kept is bounded by the number of threads alive at
//! once.
//!
//! Boxes are allocated and freed with `Layout::new::<T>()`, exactly as
//! `Box<T>` does, so a pooled box may still be freed as a `Box` (a value
//! taken out of the tree) and a user's `Box` may end in a pool.
//!
//! Under `cfg(loom)` every value is a plain `Box` (loom's atomics cannot
//! outlive one model run, and homes are never freed).

use std::alloc::Layout;
use std::ptr;

#[cfg(not(loom))]
pub(crate) use pooled::{home, Home};
#[cfg(loom)]
pub(crate) type Home = ();

/// This thread's home for `layout`: none under loom.
#[cfg(loom)]
pub(crate) fn home(_: Layout) -> Option<&'static Home> {
    None
}

/// Whether values of `T` go through the pools: any `T` that `Box`
/// allocates for (not a zero-sized one).
#[inline(always)]
const fn pooled<T>() -> bool {
    cfg!(not(loom)) && std::mem::size_of::<T>() > 0
}

/// Boxes `v`: a pooled box of this thread, else the allocator's.
#[inline]
pub(crate) fn boxed<T>(v: T) -> *mut T {
    #[cfg(not(loom))]
    if pooled::<T>() {
        let p = pooled::take(Layout::new::<T>()).cast::<T>();
        // SAFETY: a free block of T's layout, owned by this call.
        unsafe { p.write(v) };
        return p;
    }
    Box::into_raw(Box::new(v))
}

/// Drops the value in the box `p` and gives the box back to the pool of
/// `home`'s thread (or to the thread running this, if it is that thread).
///
/// # Safety
/// `p` is a box of `T` (from [`boxed`], or any `Box<T>`) no one else can
/// reach any more; it is given up here.
#[inline]
pub(crate) unsafe fn retire<T>(p: *mut T, home: Option<&'static Home>) {
    if !pooled::<T>() {
        let _ = home;
        // SAFETY: a box of T given up (caller).
        drop(unsafe { Box::from_raw(p) });
        return;
    }
    // SAFETY: the value is alive and unreachable (caller); dropped once.
    // If its drop panics the box is leaked, never reused.
    unsafe { ptr::drop_in_place(p) };
    #[cfg(not(loom))]
    // SAFETY: `p` is now a free block of T's layout, owned here.
    unsafe {
        pooled::give_back(p.cast(), Layout::new::<T>(), home)
    };
}

#[cfg(not(loom))]
mod pooled {
    use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
    use std::cell::UnsafeCell;
    use std::ptr;
    use std::sync::Mutex;

    use crate::sync::{AtomicPtr, AtomicUsize, Ordering};

    /// Value layouts a thread pools at most.
    pub(super) const CLASSES: usize = 4;
    /// Free boxes a class keeps on its free list at most, for small values.
    pub(super) const KEEP: usize = 4096;
    /// Bytes a class keeps on its free list at most: large values keep
    /// fewer boxes (at least [`KEEP_MIN`]).
    pub(super) const KEEP_BYTES: usize = 256 << 10;
    /// Free boxes a class may always keep, however large its values.
    pub(super) const KEEP_MIN: usize = 16;
    /// Boxes of `layout` a free list, and a home's stack, keep at most.
    #[inline]
    pub(super) fn keep(layout: Layout) -> usize {
        (KEEP_BYTES / layout.size().max(1)).clamp(KEEP_MIN, KEEP)
    }
    /// Boxes a thread gathers for another thread's home before it pushes
    /// them as one [`Batch`] with one CAS. A thread that collects another's
    /// garbage (a reader beside a writer, two writers of two trees) would
    /// otherwise move the home's line once per box.
    pub(super) const CHAIN: usize = 32;

    /// Where other threads give back boxes of one layout to the thread
    /// that owns this home: a stack of [`Batch`]es. On lines of its own
    /// (two, against the adjacent-line prefetcher): pushing threads and the
    /// owner share nothing else.
    #[repr(align(128))]
    pub(crate) struct Home {
        layout: Layout,
        /// Boxes the stack takes from other threads before they free to
        /// the allocator instead ([`keep`]; approximate: the count is reset
        /// when the stack is taken).
        pending_max: usize,
        incoming: AtomicPtr<Batch>,
        pending: AtomicUsize,
    }

    impl Home {
        /// Whether no batch waits on the stack (for tests).
        #[cfg(test)]
        pub(super) fn is_empty(&self) -> bool {
            // Relaxed: the tests read it after joining the pushers.
            self.incoming.load(Ordering::Relaxed).is_null()
        }
    }

    /// Boxes given back by another thread, listed beside them rather than
    /// linked through them: the giving thread never writes a box (its line
    /// was last written by the owner, who will write it again to reuse it).
    struct Batch {
        next: *mut Batch,
        len: usize,
        boxes: [*mut u8; CHAIN],
    }

    /// Every home ever made (leaked: deferred drops may give back to a home
    /// after its thread is gone), and whether a thread owns it.
    static REGISTRY: Mutex<Vec<(&'static Home, bool)>> = Mutex::new(Vec::new());

    struct Class {
        /// The home's layout, copied here: finding the class must not read
        /// the home's line, which other threads write.
        layout: Layout,
        home: &'static Home,
        /// Free boxes, last given back first (its lines the warmest).
        free: Vec<*mut u8>,
        /// The most `free` keeps ([`keep`]).
        keep: usize,
    }

    /// Boxes on their way to another thread's home.
    struct Outgoing {
        home: &'static Home,
        len: usize,
        boxes: [*mut u8; CHAIN],
    }

    impl Outgoing {
        fn one(home: &'static Home, p: *mut u8) -> Outgoing {
            let mut boxes = [ptr::null_mut(); CHAIN];
            boxes[0] = p;
            Outgoing {
                home,
                len: 1,
                boxes,
            }
        }
    }

    struct Pools {
        classes: [Option<Class>; CLASSES],
        out: Option<Outgoing>,
    }

    thread_local! {
        static POOLS: UnsafeCell<Pools> = const {
            UnsafeCell::new(Pools { classes: [const { None }; CLASSES], out: None })
        };
    }

    /// Runs `f` on this thread's pools (`None` while the thread's locals
    /// are being destroyed). `f` runs no user code, so the access is never
    /// reentered.
    #[inline]
    fn with_pools<R>(f: impl FnOnce(&mut Pools) -> R) -> Option<R> {
        // SAFETY: the cell is this thread's, and no caller's `f` calls back
        // in here (they only move free boxes and allocate), so the borrow
        // is unique.
        POOLS.try_with(|p| f(unsafe { &mut *p.get() })).ok()
    }

    impl Pools {
        #[inline]
        fn class(&mut self, layout: Layout) -> Option<&mut Class> {
            self.classes
                .iter_mut()
                .flatten()
                .find(|c| c.layout == layout)
        }

        /// Adopts a home for `layout` in a free class, if there is one.
        #[cold]
        fn adopt_class(&mut self, layout: Layout) -> Option<&mut Class> {
            let slot = self.classes.iter_mut().find(|c| c.is_none())?;
            Some(slot.insert(Class {
                layout,
                home: adopt(layout),
                free: Vec::new(),
                keep: keep(layout),
            }))
        }
    }

    impl Drop for Pools {
        fn drop(&mut self) {
            if let Some(o) = self.out.take() {
                // SAFETY: the gathered boxes are this thread's to give.
                unsafe { push_batch(o) };
            }
            for c in self.classes.iter_mut().flatten() {
                for &p in &c.free {
                    // SAFETY: a free box of the class's layout, from the
                    // global allocator, owned by the list; freed once.
                    unsafe { dealloc(p, c.layout) };
                }
                release(c.home);
            }
        }
    }

    /// A home for `layout` nobody owns, or a new one.
    #[cold]
    fn adopt(layout: Layout) -> &'static Home {
        let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = reg.iter_mut().find(|e| !e.1 && e.0.layout == layout) {
            e.1 = true;
            return e.0;
        }
        let home: &'static Home = Box::leak(Box::new(Home {
            layout,
            pending_max: keep(layout),
            incoming: AtomicPtr::new(ptr::null_mut()),
            pending: AtomicUsize::new(0),
        }));
        reg.push((home, true));
        home
    }

    /// Gives up ownership of `home` (its thread is exiting).
    #[cold]
    fn release(home: &'static Home) {
        let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = reg.iter_mut().find(|e| ptr::eq(e.0, home)) {
            e.1 = false;
        }
    }

    /// This thread's home for `layout`, if it has one (a writer that has
    /// stored a value of this layout has).
    #[inline]
    pub(crate) fn home(layout: Layout) -> Option<&'static Home> {
        with_pools(|p| p.class(layout).map(|c| c.home)).flatten()
    }

    /// A free box of `layout`: this thread's, else the allocator's.
    #[inline]
    pub(super) fn take(layout: Layout) -> *mut u8 {
        let p = with_pools(|pools| {
            if let Some(c) = pools.class(layout) {
                if let Some(p) = c.free.pop() {
                    return Some(p);
                }
                refill(c);
                return c.free.pop();
            }
            pools.adopt_class(layout)?.free.pop()
        })
        .flatten();
        p.unwrap_or_else(|| {
            // SAFETY: pooled layouts have a non-zero size.
            let p = unsafe { alloc(layout) };
            if p.is_null() {
                handle_alloc_error(layout);
            }
            p
        })
    }

    /// Moves what other threads gave back onto the private list.
    #[inline(never)]
    fn refill(c: &mut Class) {
        // Relaxed: only whether a swap is worth its locked instruction;
        // the swap synchronises.
        if c.home.incoming.load(Ordering::Relaxed).is_null() {
            return;
        }
        // Acquire: pairs with the pushers' release, so the batches (and
        // the boxes they list, emptied before they were given) are seen.
        let mut b = c.home.incoming.swap(ptr::null_mut(), Ordering::Acquire);
        // Relaxed: the count only bounds the stack, roughly.
        c.home.pending.store(0, Ordering::Relaxed);
        while !b.is_null() {
            // SAFETY: every batch on the stack is a leaked `Box<Batch>`
            // (push_batch), now owned here alone: the swap took the stack.
            let batch = unsafe { Box::from_raw(b) };
            b = batch.next;
            for &p in &batch.boxes[..batch.len] {
                if c.free.len() < c.keep {
                    c.free.push(p);
                } else {
                    // SAFETY: a free box of the home's layout, from the
                    // global allocator, given to this thread.
                    unsafe { dealloc(p, c.layout) };
                }
            }
        }
    }

    /// Pushes gathered boxes on their home's stack as one batch, or frees
    /// them if the stack holds enough.
    ///
    /// # Safety
    /// The first `o.len` boxes are free boxes of the home's layout, from the
    /// global allocator, owned by the caller.
    unsafe fn push_batch(o: Outgoing) {
        let h = o.home;
        // Relaxed: a bound, not a synchronisation.
        if h.pending.load(Ordering::Relaxed) >= h.pending_max {
            for &p in &o.boxes[..o.len] {
                // SAFETY: caller; each box freed once.
                unsafe { dealloc(p, h.layout) };
            }
            return;
        }
        // Relaxed: the count is a bound only.
        h.pending.fetch_add(o.len, Ordering::Relaxed);
        let b = Box::into_raw(Box::new(Batch {
            next: ptr::null_mut(),
            len: o.len,
            boxes: o.boxes,
        }));
        // Relaxed load: the CAS below checks it.
        let mut head = h.incoming.load(Ordering::Relaxed);
        loop {
            // SAFETY: the batch is ours until the CAS publishes it.
            unsafe { (*b).next = head };
            // Release on success: the owner's swap (acquire) then sees the
            // batch. Relaxed on failure: only retried.
            match h
                .incoming
                .compare_exchange_weak(head, b, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(now) => head = now,
            }
        }
    }

    /// Gives the free box `p` of `layout` back: to this thread's private
    /// list if it is `home`'s thread (or `home` is `None` and this thread
    /// pools the layout), else to a batch for `home`'s stack (pushed every
    /// [`CHAIN`] boxes), else (no home, or enough kept) to the allocator.
    ///
    /// # Safety
    /// `p` is a free box of `layout`, owned by the caller, from the global
    /// allocator; `home` (if any) is a home of `layout`.
    pub(super) unsafe fn give_back(p: *mut u8, layout: Layout, home: Option<&'static Home>) {
        let done = with_pools(|pools| {
            if let Some(c) = pools.class(layout) {
                if home.map_or(true, |h| ptr::eq(h, c.home)) {
                    if c.free.len() < c.keep {
                        c.free.push(p);
                    } else {
                        // SAFETY: caller.
                        unsafe { dealloc(p, layout) };
                    }
                    return true;
                }
            }
            let Some(h) = home else { return false };
            let full = match &mut pools.out {
                Some(o) if ptr::eq(o.home, h) => {
                    o.boxes[o.len] = p;
                    o.len += 1;
                    o.len == CHAIN
                }
                out => {
                    if let Some(o) = out.replace(Outgoing::one(h, p)) {
                        // SAFETY: the gathered boxes are ours to give.
                        unsafe { push_batch(o) };
                    }
                    false
                }
            };
            if full {
                if let Some(o) = pools.out.take() {
                    // SAFETY: as above.
                    unsafe { push_batch(o) };
                }
            }
            true
        })
        .unwrap_or(false);
        if done {
            return;
        }
        match home {
            // This thread's locals are gone: a batch of one.
            // SAFETY: the box is the caller's.
            Some(h) => unsafe { push_batch(Outgoing::one(h, p)) },
            // SAFETY: a box of `layout` from the global allocator (caller).
            None => unsafe { dealloc(p, layout) },
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::pooled::{give_back, home, take, CHAIN, KEEP};
    use std::alloc::Layout;

    /// A layout of its own per test, so tests running side by side never
    /// share a class or a home.
    fn layout(size: usize) -> Layout {
        Layout::from_size_align(size, 8).unwrap()
    }

    #[test]
    fn a_block_given_back_on_its_thread_is_taken_next() {
        let l = layout(40);
        let p = take(l);
        let h = home(l).expect("taking adopts a home");
        // SAFETY: p is a free block of l from take.
        unsafe { give_back(p, l, Some(h)) };
        assert_eq!(take(l), p, "the private list is LIFO");
        // SAFETY: as above; no home: still this thread's class.
        unsafe { give_back(p, l, None) };
        assert_eq!(take(l), p);
        // SAFETY: p came from the global allocator with l.
        unsafe { std::alloc::dealloc(p, l) };
    }

    #[test]
    fn a_block_given_back_by_another_thread_reaches_its_home() {
        let l = layout(48);
        let p = take(l);
        let h = home(l).unwrap();
        let addr = p as usize;
        std::thread::spawn(move || {
            // SAFETY: the block is handed to this thread whole.
            unsafe { give_back(addr as *mut u8, l, Some(h)) };
            // The chain is pushed when this thread's locals are dropped.
        })
        .join()
        .unwrap();
        assert_eq!(take(l) as usize, addr, "the owner swaps its stack in");
        // SAFETY: as in the test above.
        unsafe { std::alloc::dealloc(addr as *mut u8, l) };
    }

    #[test]
    fn another_threads_blocks_are_pushed_a_chain_at_a_time() {
        let l = layout(56);
        let blocks: Vec<usize> = (0..CHAIN).map(|_| take(l) as usize).collect();
        let h = home(l).unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let giver = {
            let blocks = blocks.clone();
            std::thread::spawn(move || {
                for &b in &blocks {
                    // SAFETY: each block is handed over whole.
                    unsafe { give_back(b as *mut u8, l, Some(h)) };
                }
                done_tx.send(()).unwrap();
                // Stay alive (locals not yet dropped) until told.
                rx.recv().unwrap();
            })
        };
        done_rx.recv().unwrap();
        // The giver is alive: only a full chain can have been pushed.
        let mut got: Vec<usize> = (0..CHAIN).map(|_| take(l) as usize).collect();
        tx.send(()).unwrap();
        giver.join().unwrap();
        got.sort_unstable();
        let mut want = blocks;
        want.sort_unstable();
        assert_eq!(got, want, "the chain of {CHAIN} arrived whole");
        for b in got {
            // SAFETY: as above.
            unsafe { std::alloc::dealloc(b as *mut u8, l) };
        }
    }

    #[test]
    fn the_private_list_keeps_at_most_keep_blocks() {
        let l = layout(64);
        let blocks: Vec<*mut u8> = (0..KEEP + 3).map(|_| take(l)).collect();
        let h = home(l).unwrap();
        for &b in &blocks {
            // SAFETY: free blocks of l, given back once.
            unsafe { give_back(b, l, Some(h)) };
        }
        // The last three went to the allocator, not to the home's stack:
        // KEEP come back, in reverse, and then the pool is empty.
        let again: Vec<*mut u8> = (0..KEEP).map(|_| take(l)).collect();
        assert_eq!(again.first(), Some(&blocks[KEEP - 1]));
        assert_eq!(again.last(), Some(&blocks[0]));
        assert!(h.is_empty(), "nothing went to the home's stack");
        for b in again {
            // SAFETY: as above.
            unsafe { std::alloc::dealloc(b, l) };
        }
    }

    #[test]
    fn large_values_keep_fewer_boxes() {
        use super::pooled::{keep, KEEP_BYTES, KEEP_MIN};
        assert_eq!(keep(layout(64)), KEEP);
        assert_eq!(keep(layout(4096)), KEEP_BYTES / 4096);
        assert_eq!(keep(layout(1 << 20)), KEEP_MIN);
        let l = layout(4096);
        let n = keep(l);
        let blocks: Vec<*mut u8> = (0..n + 2).map(|_| take(l)).collect();
        let h = home(l).unwrap();
        for &b in &blocks {
            // SAFETY: free blocks of l, given back once.
            unsafe { give_back(b, l, Some(h)) };
        }
        let again: Vec<*mut u8> = (0..n).map(|_| take(l)).collect();
        assert_eq!(
            again.first(),
            Some(&blocks[n - 1]),
            "the bound is {n} boxes"
        );
        for b in again {
            // SAFETY: as above.
            unsafe { std::alloc::dealloc(b, l) };
        }
    }

    #[test]
    fn a_home_outlives_its_thread_and_is_adopted_by_the_next() {
        let l = layout(72);
        // A thread that takes a block (adopting a home) and exits: its home.
        let home_of_a_thread = || {
            std::thread::spawn(move || {
                let p = take(l);
                // SAFETY: as above.
                unsafe { std::alloc::dealloc(p, l) };
                home(l).unwrap() as *const _ as usize
            })
            .join()
            .unwrap()
        };
        let first = home_of_a_thread();
        assert_eq!(
            home_of_a_thread(),
            first,
            "the exited thread's home is reused"
        );
    }
}
