//! Epoch-based reclamation with a fence-free read-side pin.
//!
//! A reader *pins* before it loads the root and *unpins* when it is done; a
//! writer *defers* freeing what it unlinked until every reader that could
//! still hold it has unpinned. This is the scheme crossbeam-epoch
//! implements, with two changes, each measured (`BENCHMARKS.md`, stop 22):
//!
//! - **A fence-free pin for readers.** crossbeam's pin publishes its epoch
//!   with a locked instruction (a full barrier, about 7 ns of a 31 ns hot
//!   `load`). Here a reader publishes it with a plain store, and the thread
//!   that advances the epoch pays for both sides with `membarrier(2)`'s
//!   `MEMBARRIER_CMD_PRIVATE_EXPEDITED`, which makes every running thread
//!   of the process execute a full barrier before it returns. The kernel's
//!   RCU and liburcu's "memb" flavour make the same trade.
//! - **Garbage stays with the thread that made it.** Deferred functions go
//!   to a thread-local bag and are run by that thread, two advances later.
//!   crossbeam's bags go to a queue shared by the process and are run by
//!   whichever thread pins next: two threads writing two unrelated trees
//!   shared its lines (1.41x one thread's writes; 1.82x here).
//!
//! A membarrier interrupts every other running thread of the process, so
//! only readers pin fence-free: writers pin with a fence (their work dwarfs
//! it), and an advance issues a membarrier only when some thread has pinned
//! fence-free since the last one. Each participant has a `light` flag: a
//! reader sets it with one fenced pin, then pins fence-free while it stays
//! set; an advancer that finds flags set clears them and issues the
//! membarrier. Threads that only write never draw one.
//!
//! ```text
//!   reader, flag set (every pin)           advancer (rarely; one at a time)
//!   if light:                              e = EPOCH; fence
//!     e = EPOCH (Acquire)                  for each participant:
//!     state = e | PINNED (plain store)       if light: light = 0; owed
//!     compiler fence                       if owed: membarrier()
//!     if light: done  <- else fenced pin   for each participant:
//!   root = tree.root (Acquire)               pinned at an older epoch?
//!   ... read nodes ...                         -> give up
//!   state = 0 (Release)                    fence(Acquire); EPOCH = e + 2
//! ```
//!
//! Why it holds. A node `X` is unlinked by a writer that then reads the
//! epoch `s` (after a full fence) and seals `X` with it; `X` is freed once
//! the epoch is `s + 4`, so after an advance from `s + 2`, which started
//! after the unlink was visible to every thread. Take a reader `R` that
//! reached `X` before the unlink. It recorded an epoch `p <= s` (it read the
//! epoch, with Acquire, before its loads of the tree), so the advance from
//! `s + 2` fails if it sees `R`'s pin. It does:
//! - if `R` pinned with a fence: the advancer's fence and `R`'s pair up, as
//!   in crossbeam (either the advancer sees the pin, or `R`'s loads after
//!   its fence see the unlink and never reach `X`);
//! - if `R` pinned fence-free: its second load of `light` saw the flag set.
//!   The membarrier of the advance that clears the flag lands in `R` at a
//!   point `F`. If `F` is after that load, it is after the pin's store,
//!   which is visible to that advance and every later one (advances run one
//!   at a time, so a later one starts after this membarrier returned). If
//!   `F` were before that load, the load would have seen the flag cleared.
//!   And while the flag stays set, every advance, the one from `s + 2`
//!   included, clears it and issues a membarrier of its own.
//!
//! `R`'s unpin is a Release store and the advancer's scan ends with an
//! Acquire fence, so `R`'s reads happen before the free.
//!
//! Where `membarrier` is missing (not Linux, a kernel older than 4.14, a
//! seccomp filter, Miri), or `ASPACE_MAPLE_EPOCH=fenced` is set in the
//! environment before the first pin, every pin is fenced (a locked
//! exchange on x86, as crossbeam's) and no flag is ever set: the classic
//! scheme. The mode is chosen once per process, before any pin.
//!
//! Its atomics, fences and lock come from `crate::sync`. Under `cfg(loom)`
//! its globals are loom's lazily made statics (fresh in every execution) and
//! its thread state a loom thread local; the mode is fixed to fenced (loom
//! cannot model `membarrier`), advances are not paced (time is not part of
//! a model), and a bag holds two functions. The models at the end of this
//! file then check the fenced protocol itself: pins, deferral, sealing,
//! advancing, collection, and a thread's exit with bags and a record to
//! hand on. The tree's models (`tests/loom.rs`) pin through it too, but
//! run the tree's deferred work themselves (`write::LoomDeferred`).
//!
//! # Costs
//!
//! - pin: a thread-local access, two loads of this thread's flag, a load of
//!   the shared epoch (a line written only by advances), a store to this
//!   thread's own line; one fenced pin per reader per membarrier. Unpin: a
//!   store. Nested pins only count.
//! - defer: a push onto a thread-local bag (no allocation for closures of up
//!   to four words). Every 64 deferred functions the bag is sealed with the
//!   epoch (one fence); the thread advances at its next outermost unpin,
//!   at most as often as keeps its time advancing under 1% of its time, or
//!   at once when it holds more than [`FORCE_SEALED`] sealed bags.
//! - advance: a scan of the registered threads, and, when a reader pinned
//!   fence-free since the last one, one `membarrier` (about 0.2 µs with no
//!   other thread running, 7-13 µs with one on this 2-vCPU VM, where each
//!   IPI exits to the hypervisor).
//! - per thread: one 128-byte participant record, reused after the thread
//!   exits. A thread that exits hands what it still holds to a global list
//!   that the next advancing thread frees.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::mem::{self, MaybeUninit};
use std::ptr;
use std::sync::atomic::compiler_fence;
#[cfg(not(loom))]
use std::sync::Once;
use std::time::{Duration, Instant};

#[cfg(not(loom))]
use crate::sync::AtomicU8;
use crate::sync::{fence, AtomicBool, AtomicPtr, AtomicUsize, Mutex, Ordering};

/// Deferred functions per bag (two under loom, so that a model seals one).
const BAG_CAP: usize = if cfg!(loom) { 2 } else { 64 };
/// Sealed bags a thread may hold before it advances regardless of pacing.
pub(crate) const FORCE_SEALED: usize = 160;
/// Epochs step by two: the low bit of a participant's state marks a pin.
const PINNED: usize = 1;
const STEP: usize = 2;
/// A sealed bag is freed once the epoch is this far past its seal.
const GRACE: usize = 2 * STEP;
/// The share of a thread's time its advances may take (1 in `PACE`).
const PACE: u32 = 100;
/// Bounds on the wait between two paced advances.
const PACE_MIN: Duration = Duration::from_micros(5);
const PACE_MAX: Duration = Duration::from_millis(10);

/// Declares the epoch's globals: plain statics, or under loom lazily made
/// ones that every execution of a model makes afresh.
macro_rules! globals {
    ($($(#[$doc:meta])* static $name:ident: $t:ty = $init:expr;)*) => {
        $(
            #[cfg(not(loom))]
            $(#[$doc])*
            static $name: $t = $init;
        )*
        #[cfg(loom)]
        loom::lazy_static! {
            $($(#[$doc])* static ref $name: $t = $init;)*
        }
    };
}

globals! {
    /// The global epoch: even, advanced by [`STEP`].
    static EPOCH: AtomicUsize = AtomicUsize::new(0);
    /// Held by the one thread advancing. Serialising advances matters: one
    /// that finds every `light` flag clear may skip the membarrier only
    /// because the advance that cleared them has already issued its own.
    static ADVANCING: AtomicBool = AtomicBool::new(false);
    /// Every participant record ever made (a push-only list; records are
    /// reused, never freed).
    static REGISTRY: AtomicPtr<Participant> = AtomicPtr::new(ptr::null_mut());
    /// Bags left by threads that exited (or deferred while their
    /// thread-local storage was gone), freed by whichever thread advances
    /// next.
    static ORPHANS: Mutex<Vec<Sealed>> = Mutex::new(Vec::new());
    /// `ORPHANS.len()`, readable without the lock.
    static ORPHAN_COUNT: AtomicUsize = AtomicUsize::new(0);
}

// ---------------------------------------------------------------- the mode

#[cfg(not(loom))]
const UNDECIDED: u8 = 0;
const FENCED: u8 = 1;
const MEMBARRIER: u8 = 2;
#[cfg(not(loom))]
static MODE: AtomicU8 = AtomicU8::new(UNDECIDED);
#[cfg(not(loom))]
static DECIDE: Once = Once::new();

/// How pins and advances are ordered under loom: fenced (loom cannot
/// model a membarrier's barrier in other threads).
#[cfg(loom)]
#[inline]
fn mode() -> u8 {
    FENCED
}

/// How pins and advances are ordered in this process, decided on first use.
#[cfg(not(loom))]
#[inline]
fn mode() -> u8 {
    // Relaxed: MODE goes from UNDECIDED to one value, once, and never
    // changes again; a thread that sees UNDECIDED takes the `Once`, which
    // orders it after the decision.
    let m = MODE.load(Ordering::Relaxed);
    if m != UNDECIDED {
        return m;
    }
    decide()
}

#[cfg(not(loom))]
#[cold]
fn decide() -> u8 {
    DECIDE.call_once(|| {
        let forced = std::env::var_os("ASPACE_MAPLE_EPOCH").is_some_and(|v| v == "fenced");
        let m = if !forced && membarrier::register() {
            MEMBARRIER
        } else {
            FENCED
        };
        // Relaxed: see `mode`; the registration above completed first in
        // this thread, and other threads read MODE only after `call_once`
        // returned or after seeing this value, which the Once publishes.
        MODE.store(m, Ordering::Relaxed);
    });
    MODE.load(Ordering::Relaxed)
}

#[cfg(all(target_os = "linux", not(miri), not(loom)))]
mod membarrier {
    //! `membarrier(2)`, private expedited.
    const CMD_QUERY: libc::c_long = 0;
    const CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
    const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

    fn call(cmd: libc::c_long) -> libc::c_long {
        // SAFETY: membarrier takes (cmd, flags, cpu_id) integers and touches
        // no memory of ours; an unknown command fails with EINVAL.
        unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                cmd,
                0 as libc::c_long,
                0 as libc::c_long,
            )
        }
    }

    /// Registers the process for private expedited barriers; `false` if the
    /// kernel lacks them or refuses.
    pub(super) fn register() -> bool {
        let cmds = call(CMD_QUERY);
        cmds >= 0
            && cmds & CMD_PRIVATE_EXPEDITED != 0
            && cmds & CMD_REGISTER_PRIVATE_EXPEDITED != 0
            && call(CMD_REGISTER_PRIVATE_EXPEDITED) == 0
    }

    /// One barrier on every running thread of the process.
    pub(super) fn expedited() -> bool {
        if call(CMD_PRIVATE_EXPEDITED) == 0 {
            return true;
        }
        // A forked child starts unregistered: register and try once more.
        call(CMD_REGISTER_PRIVATE_EXPEDITED) == 0 && call(CMD_PRIVATE_EXPEDITED) == 0
    }
}

#[cfg(not(all(target_os = "linux", not(miri), not(loom))))]
mod membarrier {
    #[cfg_attr(loom, allow(dead_code))] // the mode is fixed under loom
    pub(super) fn register() -> bool {
        false
    }
    pub(super) fn expedited() -> bool {
        false
    }
}

// ------------------------------------------------------------ participants

/// One thread's published state: `epoch | PINNED` while pinned, `0` when not.
/// On its own 128-byte line so that pins never share a line with another
/// thread's (adjacent-line prefetch pairs 64-byte lines on x86).
#[repr(align(128))]
struct Participant {
    state: AtomicUsize,
    /// Set by the thread (with a fenced pin) when it starts pinning without
    /// a fence; cleared by an advancer, which then owes the process a
    /// membarrier. A thread that only writes never sets it, so advancing
    /// beside it costs no IPI.
    light: AtomicBool,
    in_use: AtomicBool,
    next: AtomicPtr<Participant>,
}

impl Participant {
    /// A free record, or a new one pushed onto the registry.
    fn acquire() -> &'static Participant {
        let free = records().find(|r| {
            // Acquire on success: the previous owner's last unpin (Release)
            // is ordered before this thread's first pin.
            !r.in_use.load(Ordering::Relaxed)
                && r.in_use
                    .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
        });
        if let Some(r) = free {
            return r;
        }
        let r: &'static Participant = Box::leak(Box::new(Participant {
            state: AtomicUsize::new(0),
            light: AtomicBool::new(false),
            in_use: AtomicBool::new(true),
            next: AtomicPtr::new(ptr::null_mut()),
        }));
        // Relaxed load: the CAS below validates it.
        let mut head = REGISTRY.load(Ordering::Relaxed);
        loop {
            // Relaxed: published by the Release CAS that follows.
            r.next.store(head, Ordering::Relaxed);
            // Release: publishes `next` and the initial fields with the
            // record; the release sequence of the head's CASes carries every
            // earlier record too.
            match REGISTRY.compare_exchange_weak(
                head,
                r as *const _ as *mut _,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return r,
                Err(h) => head = h,
            }
        }
    }

    /// Hands the record back for another thread (it must be unpinned).
    fn release(&self) {
        // Relaxed: ordered before the next owner's first pin by `in_use`;
        // a stale `true` would only cost an advancer a membarrier.
        self.light.store(false, Ordering::Relaxed);
        // Release: this thread's last unpin is ordered before the next
        // owner's Acquire in `acquire`.
        self.in_use.store(false, Ordering::Release);
    }

    /// Publishes a pin at the current epoch, in this process's mode.
    #[inline]
    fn pin(&self) {
        if mode() == MEMBARRIER {
            self.pin_light();
        } else {
            self.pin_fenced();
        }
    }

    /// A reader's pin in the membarrier mode: fence-free while `light` is
    /// set; the first pin after an advancer cleared it is fenced and sets
    /// it again.
    #[inline(always)]
    fn pin_light(&self) {
        // Relaxed (both loads of the flag): what orders them is where the
        // advancer's membarrier lands in this sequence (see the module doc).
        if self.light.load(Ordering::Relaxed) {
            // Acquire: the loads of the tree that follow cannot be
            // performed before this one, so the epoch recorded is at most
            // the one current when the reader first reached any node.
            let e = EPOCH.load(Ordering::Acquire);
            // Relaxed + compiler fence: the advancer's membarrier provides
            // the hardware barrier between this store and the loads after
            // it; the compiler must still keep them in order.
            self.state.store(e | PINNED, Ordering::Relaxed);
            compiler_fence(Ordering::SeqCst);
            // Still set: any membarrier that cleared it landed after this
            // load, so after the store above, which it made visible.
            if self.light.load(Ordering::Relaxed) {
                return;
            }
        }
        self.pin_first_light();
    }

    #[inline(never)]
    fn pin_first_light(&self) {
        // Relaxed: the full barrier of the fenced pin that follows orders it
        // before every later load, as an advancer's fence orders its read.
        self.light.store(true, Ordering::Relaxed);
        self.pin_fenced();
    }

    /// The classic pin: the fenced mode's, and a writer's in either mode
    /// (out of line: its locked store dwarfs a call, and the fence-free
    /// path stays small enough to inline).
    #[inline(never)]
    fn pin_fenced(&self) {
        // Acquire: as in `pin_light`.
        let e = EPOCH.load(Ordering::Acquire);
        full_fence_store(&self.state, e | PINNED);
    }

    #[inline]
    fn unpin(&self) {
        // Release: every read of the pinned section happens before an
        // advancer that sees this store (it ends its scan with an Acquire
        // fence) lets the memory go.
        self.state.store(0, Ordering::Release);
    }
}

/// Stores `v` with a full barrier after it.
#[inline]
fn full_fence_store(a: &AtomicUsize, v: usize) {
    #[cfg(all(any(target_arch = "x86", target_arch = "x86_64"), not(miri), not(loom)))]
    {
        // A locked exchange is a full barrier on x86 and costs a quarter of
        // `mfence` (4.5 ns against 18 ns in a loop on this machine).
        a.swap(v, Ordering::SeqCst);
    }
    // (Also under loom, which models SeqCst fences but not SeqCst accesses.)
    #[cfg(not(all(any(target_arch = "x86", target_arch = "x86_64"), not(miri), not(loom))))]
    {
        // Relaxed: the SeqCst fence that follows orders it.
        a.store(v, Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }
}

/// The registry's records, oldest last.
fn records() -> impl Iterator<Item = &'static Participant> {
    // Acquire: pairs with the Release push in `Participant::acquire`, so a
    // record's fields (and those of every record after it) are initialised
    // when seen.
    let mut p = REGISTRY.load(Ordering::Acquire);
    std::iter::from_fn(move || {
        // SAFETY: registry records are leaked, never freed.
        let r = unsafe { p.as_ref() }?;
        // Relaxed: `next` is written once, before the record's Release
        // push, which the Acquire load of the head ordered before this.
        p = r.next.load(Ordering::Relaxed);
        Some(r)
    })
}

/// Tries to move the epoch one step. Fails while any thread is pinned at
/// an older epoch, or when a membarrier owed cannot be issued.
fn try_advance() -> bool {
    // A compare-exchange, not a swap: a failed try writes nothing (a swap
    // writes `true` over the holder's flag, which loom, whose modification
    // order is partial, may then read after the holder's release forever).
    // Acquire on success: this advance starts after the previous one
    // ended, its membarrier included (see `ADVANCING`); Relaxed on failure:
    // nothing is read.
    if ADVANCING
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return false;
    }
    let advanced = advance_locked();
    // Release: pairs with the Acquire above.
    ADVANCING.store(false, Ordering::Release);
    advanced
}

fn advance_locked() -> bool {
    // Relaxed: validated by the CAS at the end.
    let e = EPOCH.load(Ordering::Relaxed);
    // Pairs with every fenced pin (the classic scheme), and orders the
    // `light` flags read below after those pins' stores of them.
    fence(Ordering::SeqCst);
    if mode() == MEMBARRIER {
        let mut light = false;
        for r in records() {
            // Relaxed: ordered by the fence above and the membarrier below.
            if r.light.load(Ordering::Relaxed) {
                r.light.store(false, Ordering::Relaxed);
                light = true;
            }
        }
        if light && !membarrier::expedited() {
            // Uncovered light pins may be in flight: no advance, and every
            // thread stays owed a membarrier.
            for r in records() {
                // Relaxed: as above.
                r.light.store(true, Ordering::Relaxed);
            }
            return false;
        }
    }
    for r in records() {
        // Relaxed: the fence or membarrier before and the Acquire fence
        // after order this scan (see the module doc).
        let s = r.state.load(Ordering::Relaxed);
        if s & PINNED != 0 && s & !PINNED != e {
            return false;
        }
    }
    fence(Ordering::Acquire);
    // Release: a collector that reads the new epoch (Acquire) is ordered
    // after the unpins this scan saw.
    EPOCH
        .compare_exchange(
            e,
            e.wrapping_add(STEP),
            Ordering::Release,
            Ordering::Relaxed,
        )
        .is_ok()
}

/// The epoch to seal a bag with: read after a full fence, so every unlink
/// the bag's functions clean up after is visible before it.
fn seal_epoch() -> usize {
    fence(Ordering::SeqCst);
    // Relaxed: ordered by the fence above.
    EPOCH.load(Ordering::Relaxed)
}

/// Whether a bag sealed at `sealed` may run now that the epoch is `now`.
#[inline]
fn expired(sealed: usize, now: usize) -> bool {
    now.wrapping_sub(sealed) >= GRACE
}

// ---------------------------------------------------------------- deferred

/// Words a deferred closure may capture and still be stored inline.
const INLINE_WORDS: usize = 4;
type Inline = MaybeUninit<[usize; INLINE_WORDS]>;

/// A type-erased `FnOnce() + Send`, stored inline when small. Dropping one
/// unrun leaks what it captured (it is only dropped unrun at process exit).
struct Deferred {
    call: unsafe fn(*mut Inline),
    data: Inline,
}

// SAFETY: built only from `Send` closures (see `new`).
unsafe impl Send for Deferred {}

impl Deferred {
    #[inline]
    fn new<F: FnOnce() + Send + 'static>(f: F) -> Self {
        let mut data = Inline::uninit();
        if mem::size_of::<F>() <= mem::size_of::<Inline>()
            && mem::align_of::<F>() <= mem::align_of::<Inline>()
        {
            /// Runs the closure stored in place.
            unsafe fn call_inline<F: FnOnce()>(data: *mut Inline) {
                // SAFETY: `data` holds an `F` written by `new` and read once.
                let f = unsafe { ptr::read(data.cast::<F>()) };
                f();
            }
            // SAFETY: `F` fits in `data` in size and alignment (checked).
            unsafe { ptr::write(data.as_mut_ptr().cast::<F>(), f) };
            Deferred {
                call: call_inline::<F>,
                data,
            }
        } else {
            /// Runs the boxed closure whose pointer is stored in place.
            unsafe fn call_boxed<F: FnOnce()>(data: *mut Inline) {
                // SAFETY: `data` holds a `Box<F>`'s pointer, read once.
                let f = unsafe { Box::from_raw(ptr::read(data.cast::<*mut F>())) };
                f();
            }
            let b = Box::into_raw(Box::new(f));
            // SAFETY: a pointer fits in `data`.
            unsafe { ptr::write(data.as_mut_ptr().cast::<*mut F>(), b) };
            Deferred {
                call: call_boxed::<F>,
                data,
            }
        }
    }

    fn run(mut self) {
        // SAFETY: `call` matches what `new` stored, and `self` is consumed,
        // so it runs once.
        unsafe { (self.call)(&mut self.data) }
    }
}

/// A full bag and the epoch it was sealed at.
struct Sealed {
    epoch: usize,
    items: Vec<Deferred>,
}

impl Sealed {
    /// Runs every function; hands back the emptied vector for reuse.
    fn run(mut self) -> Vec<Deferred> {
        for d in self.items.drain(..) {
            d.run();
        }
        self.items
    }
}

// -------------------------------------------------------------- the thread

/// [`Local::after_unpin`]: a bag was sealed while pinned.
const AFTER_ADVANCE: u8 = 1;
/// [`Local::after_unpin`]: the thread-local storage was destroyed while
/// guards were alive; the last guard gives the record back.
const AFTER_DYING: u8 = 2;

/// A thread's reclamation state.
struct Local {
    /// This thread's record; null until its first pin.
    participant: Cell<*const Participant>,
    /// Guards alive on this thread (nested pins only count).
    guards: Cell<usize>,
    /// `participant` is set and the process pins without a fence: the
    /// outermost pin's fast path.
    fence_free: Cell<bool>,
    /// Work for the outermost unpin ([`AFTER_ADVANCE`], [`AFTER_DYING`]).
    after_unpin: Cell<u8>,
    bag: RefCell<Vec<Deferred>>,
    /// An emptied bag's vector, for the next bag.
    spare: RefCell<Vec<Deferred>>,
    sealed: RefCell<VecDeque<Sealed>>,
    /// Before this, a sealing thread does not advance (pacing, see the
    /// module doc); `None`: no advance yet.
    next_advance: Cell<Option<Instant>>,
}

#[cfg(not(loom))]
thread_local! {
    static LOCAL: Local = const { Local::new() };
}
#[cfg(loom)]
loom::thread_local! {
    static LOCAL: Local = Local::new();
}

impl Local {
    const fn new() -> Local {
        Local {
            participant: Cell::new(ptr::null()),
            guards: Cell::new(0),
            fence_free: Cell::new(false),
            after_unpin: Cell::new(0),
            bag: RefCell::new(Vec::new()),
            spare: RefCell::new(Vec::new()),
            sealed: RefCell::new(VecDeque::new()),
            next_advance: Cell::new(None),
        }
    }

    /// Counts a guard; `outermost` publishes the pin when there was none.
    #[inline(always)]
    fn enter(&self, outermost: impl FnOnce(&Self)) -> Guard {
        let n = self.guards.get();
        if n == 0 {
            outermost(self);
        }
        self.guards.set(n + 1);
        Guard {
            local: self,
            orphan: ptr::null(),
        }
    }

    #[inline(always)]
    fn pin(&self) -> Guard {
        self.enter(|l| {
            if l.fence_free.get() {
                // SAFETY: `fence_free` is set only once `participant` is;
                // records are never freed.
                unsafe { &*l.participant.get() }.pin_light();
            } else {
                l.pin_slow();
            }
        })
    }

    /// The first pin of this thread, or any pin in the fenced mode.
    #[inline(never)]
    fn pin_slow(&self) {
        self.record().pin();
    }

    /// This thread's record, registered on first use.
    #[inline]
    fn record(&self) -> &'static Participant {
        let mut p = self.participant.get();
        if p.is_null() {
            p = Participant::acquire();
            self.participant.set(p);
            self.fence_free.set(mode() == MEMBARRIER);
        }
        // SAFETY: records are never freed.
        unsafe { &*p }
    }

    /// A writer's pin: fenced, and never sets the `light` flag.
    #[inline]
    fn pin_fenced(&self) -> Guard {
        self.enter(|l| l.record().pin_fenced())
    }

    #[inline(always)]
    fn unpin(&self) {
        let n = self.guards.get() - 1;
        self.guards.set(n);
        if n == 0 {
            // SAFETY: set by the pin this unpin ends; records are never freed.
            let p = unsafe { &*self.participant.get() };
            p.unpin();
            let work = self.after_unpin.get();
            if work != 0 {
                self.after_unpin(work);
            }
        }
    }

    /// What the outermost unpin found to do: advance and collect (a bag was
    /// sealed while pinned: advancing then would wait on this thread's own
    /// pin, which may be older than the epoch), or give the record back (the
    /// thread's storage is gone).
    #[inline(never)]
    fn after_unpin(&self, work: u8) {
        self.after_unpin.set(0);
        if work & AFTER_DYING != 0 {
            self.give_back_record();
            return;
        }
        if work & AFTER_ADVANCE != 0 {
            self.maybe_advance();
        }
    }

    /// Hands this thread's (registered, unpinned) record back for reuse.
    fn give_back_record(&self) {
        // SAFETY: registered (caller); records are never freed.
        let p = unsafe { &*self.participant.get() };
        self.participant.set(ptr::null());
        self.fence_free.set(false);
        p.release();
    }

    #[inline]
    fn defer<F: FnOnce() + Send + 'static>(&self, f: F) {
        let full = {
            let mut bag = self.bag.borrow_mut();
            bag.push(Deferred::new(f));
            bag.len() >= BAG_CAP
        };
        if full {
            self.bag_full();
        }
    }

    /// Seals the bag now and leaves the advance to the outermost unpin (a
    /// deferral always happens under a guard of this thread's).
    #[inline(never)]
    fn bag_full(&self) {
        self.seal();
        self.after_unpin.set(self.after_unpin.get() | AFTER_ADVANCE);
    }

    /// Seals the current bag, if it holds anything, and starts the next in
    /// a vector kept from a bag already run (no allocation in steady state).
    fn seal(&self) {
        let mut bag = self.bag.borrow_mut();
        if bag.is_empty() {
            return;
        }
        let mut next = mem::take(&mut *self.spare.borrow_mut());
        if next.capacity() == 0 {
            next.reserve_exact(BAG_CAP);
        }
        let items = mem::replace(&mut *bag, next);
        drop(bag);
        let epoch = seal_epoch();
        self.sealed.borrow_mut().push_back(Sealed { epoch, items });
    }

    /// Advances if pacing allows (or too much is held), then frees what has
    /// expired.
    fn maybe_advance(&self) {
        let held = self.sealed.borrow().len();
        let now = Instant::now();
        // Under loom every sealing advances: a model has no clock.
        let due = cfg!(loom)
            || match self.next_advance.get() {
                Some(t) => now >= t,
                None => true,
            };
        if due || held > FORCE_SEALED {
            try_advance();
            let spent = now.elapsed();
            let wait = (spent * PACE).clamp(PACE_MIN, PACE_MAX);
            self.next_advance.set(Some(now + wait));
        }
        self.collect();
    }

    /// Runs every sealed bag of this thread (and every orphan) that has
    /// expired. No borrow is held while a deferred function runs: it may
    /// pin or defer again.
    fn collect(&self) {
        // Acquire: pairs with the advancing CAS (see `try_advance`).
        let now = EPOCH.load(Ordering::Acquire);
        loop {
            let next = {
                let mut sealed = self.sealed.borrow_mut();
                match sealed.front() {
                    Some(b) if expired(b.epoch, now) => sealed.pop_front(),
                    _ => None,
                }
            };
            match next {
                Some(b) => {
                    let v = b.run();
                    let mut spare = self.spare.borrow_mut();
                    if spare.capacity() == 0 {
                        *spare = v;
                    }
                }
                None => break,
            }
        }
        collect_orphans(now);
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        self.seal();
        let sealed = mem::take(&mut *self.sealed.borrow_mut());
        if !sealed.is_empty() {
            orphan(sealed);
        }
        if self.participant.get().is_null() {
            return;
        }
        if self.guards.get() == 0 {
            self.give_back_record();
        } else {
            self.after_unpin.set(AFTER_DYING);
        }
    }
}

/// Leaves sealed bags for whichever thread advances next.
fn orphan(bags: impl IntoIterator<Item = Sealed>) {
    let mut orphans = ORPHANS.lock().unwrap_or_else(|e| e.into_inner());
    orphans.extend(bags);
    // Relaxed: a hint that spares the lock; the lock orders the bags.
    ORPHAN_COUNT.store(orphans.len(), Ordering::Relaxed);
}

/// Runs the orphaned bags that have expired by epoch `now`.
fn collect_orphans(now: usize) {
    // Relaxed: a hint; a bag missed here is found by a later collection.
    if ORPHAN_COUNT.load(Ordering::Relaxed) == 0 {
        return;
    }
    let ready: Vec<Sealed> = {
        let Ok(mut orphans) = ORPHANS.try_lock() else {
            return;
        };
        let (ready, keep) = mem::take(&mut *orphans)
            .into_iter()
            .partition(|b| expired(b.epoch, now));
        *orphans = keep;
        // Relaxed: see `orphan`.
        ORPHAN_COUNT.store(orphans.len(), Ordering::Relaxed);
        ready
    };
    for b in ready {
        drop(b.run());
    }
}

// ------------------------------------------------------------------ guards

/// A pin: while it lives, nothing deferred after it was taken is run.
/// Not `Send`: it is this thread's.
pub(crate) struct Guard {
    /// This thread's state; null for a guard pinned without it.
    local: *const Local,
    /// The record of a guard pinned without thread-local storage (during
    /// thread exit): given back when the guard drops.
    orphan: *const Participant,
}

/// Pins the current thread.
#[inline(always)]
pub(crate) fn pin() -> Guard {
    LOCAL.try_with(|l| l.pin()).unwrap_or_else(|_| pin_orphan())
}

/// Pins the current thread for a write: with a fence, so that a thread that
/// only writes never draws a membarrier's IPI to the other threads (a
/// write's work dwarfs the fence; a hot reader's does not).
#[inline]
pub(crate) fn pin_fenced() -> Guard {
    LOCAL
        .try_with(|l| l.pin_fenced())
        .unwrap_or_else(|_| pin_orphan())
}

/// A pin taken while this thread's storage is being destroyed.
#[cold]
fn pin_orphan() -> Guard {
    let p = Participant::acquire();
    p.pin();
    Guard {
        local: ptr::null(),
        orphan: p,
    }
}

impl Guard {
    /// Runs `f` once no thread pinned before now can still be pinned.
    ///
    /// # Safety
    /// `f` may free memory that readers reached only through links unlinked
    /// before this call; it must not free anything still reachable.
    #[inline]
    // Under loom the tree's writes defer through `write::LoomDeferred`; only
    // the epoch's own models call this.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) unsafe fn defer_unchecked<F: FnOnce() + Send + 'static>(&self, f: F) {
        if self.local.is_null() {
            let items = vec![Deferred::new(f)];
            orphan([Sealed {
                epoch: seal_epoch(),
                items,
            }]);
        } else {
            // SAFETY: a guard with a `local` is this thread's and lives
            // shorter than the thread's storage (see `Local::drop`).
            unsafe { &*self.local }.defer(f);
        }
    }
}

impl Drop for Guard {
    #[inline(always)]
    fn drop(&mut self) {
        if !self.local.is_null() {
            // SAFETY: as in `defer_unchecked`.
            unsafe { &*self.local }.unpin();
        } else if !self.orphan.is_null() {
            // SAFETY: records are never freed.
            let p = unsafe { &*self.orphan };
            p.unpin();
            p.release();
        }
    }
}

/// Seals what this thread deferred and frees everything no reader can still
/// reach: this thread's bags and those of exited threads. Advances the epoch
/// up to twice, ignoring pacing; bags are kept while another thread stays
/// pinned at an older epoch.
pub(crate) fn flush() {
    let _ = LOCAL.try_with(|l| {
        l.seal();
        if l.guards.get() == 0 {
            // Two steps: the last bag sealed needs both.
            try_advance();
            try_advance();
        } else {
            try_advance();
        }
        l.collect();
    });
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;

    /// Flushes until `done` holds: other tests of this binary pin too, and
    /// a pinned thread holds the epoch back for a moment.
    #[track_caller]
    fn settle(done: impl Fn() -> bool) {
        for round in 0..2_000 {
            if done() {
                return;
            }
            flush();
            if round > 2 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        assert!(done(), "deferred functions never ran");
    }

    fn state() -> usize {
        drop(pin()); // registers this thread
                     // SAFETY: registered above; records are never freed.
        LOCAL.with(|l| {
            unsafe { &*l.participant.get() }
                .state
                .load(Ordering::Relaxed)
        })
    }

    #[test]
    fn pins_nest_and_unpin_last() {
        let a = pin();
        let s = state();
        assert_eq!(s & PINNED, PINNED);
        let b = pin();
        assert_eq!(state(), s, "a nested pin republishes nothing");
        drop(a);
        assert_eq!(state(), s, "still pinned by b");
        drop(b);
        assert_eq!(state(), 0);
    }

    #[test]
    fn deferred_waits_for_a_reader_pinned_before_it() {
        let ran = Arc::new(AtomicUsize::new(0));
        let (pinned_tx, pinned_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let reader = std::thread::spawn(move || {
            let g = pin();
            pinned_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            drop(g);
        });
        pinned_rx.recv().unwrap();
        {
            let g = pin();
            let r = ran.clone();
            // SAFETY: frees nothing.
            unsafe {
                g.defer_unchecked(move || {
                    r.fetch_add(1, Ordering::Relaxed);
                })
            };
        }
        for _ in 0..4 {
            flush();
        }
        assert_eq!(ran.load(Ordering::Relaxed), 0, "ran under a reader's pin");
        go_tx.send(()).unwrap();
        reader.join().unwrap();
        settle(|| ran.load(Ordering::Relaxed) == 1);
    }

    #[test]
    fn large_and_small_closures_each_run_once() {
        let hits = Arc::new(AtomicUsize::new(0));
        let big = [7u64; 16];
        {
            let g = pin();
            for i in 0..3 * BAG_CAP {
                let h = hits.clone();
                if i % 2 == 0 {
                    // SAFETY: frees nothing.
                    unsafe {
                        g.defer_unchecked(move || {
                            h.fetch_add(1, Ordering::Relaxed);
                        })
                    };
                } else {
                    // SAFETY: frees nothing.
                    unsafe {
                        g.defer_unchecked(move || {
                            let add = big.iter().sum::<u64>() as usize / 112;
                            h.fetch_add(add, Ordering::Relaxed);
                        })
                    };
                }
            }
        }
        settle(|| hits.load(Ordering::Relaxed) == 3 * BAG_CAP);
        assert_eq!(Arc::strong_count(&hits), 1, "every closure was dropped");
    }

    #[test]
    fn an_exited_threads_bags_are_freed_by_another() {
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        std::thread::spawn(move || {
            let g = pin();
            for _ in 0..5 {
                let h = h.clone();
                // SAFETY: frees nothing.
                unsafe {
                    g.defer_unchecked(move || {
                        h.fetch_add(1, Ordering::Relaxed);
                    })
                };
            }
        })
        .join()
        .unwrap();
        settle(|| hits.load(Ordering::Relaxed) == 5);
    }

    /// Readers check that nothing they can reach has been retired: each
    /// object carries a `retired` flag that its deferred function sets (in
    /// place of freeing it, which would make the check itself undefined).
    #[test]
    fn no_reader_sees_a_retired_object() {
        struct Obj {
            retired: AtomicBool,
            value: AtomicU64,
        }
        let (rounds, readers, hold) = if cfg!(miri) {
            (60, 2, 3)
        } else {
            (20_000, 2, 50)
        };
        let slot = Arc::new(AtomicPtr::new(Box::into_raw(Box::new(Obj {
            retired: AtomicBool::new(false),
            value: AtomicU64::new(0),
        }))));
        let stop = Arc::new(AtomicBool::new(false));
        let seen_bad = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..readers)
            .map(|_| {
                let (slot, stop, bad) = (slot.clone(), stop.clone(), seen_bad.clone());
                std::thread::spawn(move || {
                    let mut reads = 0u64;
                    let mut last = 0;
                    while !stop.load(Ordering::Relaxed) || reads < 10 {
                        let g = pin();
                        let p = slot.load(Ordering::Acquire);
                        // SAFETY: objects are never freed (see the test doc).
                        let o = unsafe { &*p };
                        let v = o.value.load(Ordering::Relaxed);
                        // Hold the pin a while, so that a grace period
                        // that ended too early is caught in the act.
                        for _ in 0..hold {
                            if o.retired.load(Ordering::Acquire) {
                                bad.fetch_add(1, Ordering::Relaxed);
                            }
                            std::hint::spin_loop();
                        }
                        assert!(v >= last, "the slot went back in time");
                        last = v;
                        drop(g);
                        reads += 1;
                    }
                })
            })
            .collect();
        let mut retired = Vec::new();
        for i in 1..=rounds {
            let g = pin();
            let new = Box::into_raw(Box::new(Obj {
                retired: AtomicBool::new(false),
                value: AtomicU64::new(i),
            }));
            let old = slot.swap(new, Ordering::AcqRel);
            retired.push(old as usize);
            let old = old as usize;
            // SAFETY: the object is only flagged, never freed here.
            unsafe {
                g.defer_unchecked(move || {
                    (*(old as *const Obj))
                        .retired
                        .store(true, Ordering::Release);
                })
            };
            drop(g);
            if i % 8 == 0 {
                // Advance as often as possible: the readers' pins are short.
                flush();
            }
        }
        stop.store(true, Ordering::Relaxed);
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(
            seen_bad.load(Ordering::Relaxed),
            0,
            "a reader saw a retired object"
        );
        settle(|| {
            retired
                .iter()
                // SAFETY: never freed until below.
                .all(|&p| {
                    unsafe { &*(p as *const Obj) }
                        .retired
                        .load(Ordering::Acquire)
                })
        });
        for p in retired {
            // SAFETY: allocated above, no reader left.
            drop(unsafe { Box::from_raw(p as *mut Obj) });
        }
        // SAFETY: the last object, no reader left.
        drop(unsafe { Box::from_raw(slot.load(Ordering::Relaxed)) });
    }

    /// Runs `no_reader_sees_a_retired_object` again in a child process with
    /// the fenced pin forced, so both pin protocols are exercised where
    /// `membarrier` is available.
    #[test]
    #[cfg(not(miri))]
    fn fenced_mode_in_a_child_process() {
        if std::env::var_os("ASPACE_MAPLE_EPOCH").is_some() {
            return;
        }
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .args([
                "--exact",
                "epoch::tests::no_reader_sees_a_retired_object",
                "--test-threads=1",
            ])
            .env("ASPACE_MAPLE_EPOCH", "fenced")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("1 passed"), "{text}");
    }
}

/// Loom models of the fenced protocol (under loom the mode is fenced, a bag
/// holds two functions and every sealing advances; see the module doc):
///
/// ```sh
/// LOOM_MAX_PREEMPTIONS=2 RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
///     cargo test --release -p aspace-maple --lib epoch::models
/// ```
///
/// Each object's deferred function poisons it by writing its loom cell, so
/// loom reports the free as a race unless it happens after every read of a
/// reader that reached the object, and the readers also check the value.
#[cfg(all(test, loom))]
mod models {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;
    use loom::thread;

    const POISON: u64 = u64::MAX;

    /// An object readers reach through a slot.
    struct Obj(UnsafeCell<u64>);

    fn obj(v: u64) -> usize {
        Box::into_raw(Box::new(Obj(UnsafeCell::new(v)))) as usize
    }

    /// Reads an object reached under a pin.
    fn read(p: usize) -> u64 {
        // SAFETY: objects are freed only at the end of a model, after every
        // thread that reads them has ended.
        let o = unsafe { &*(p as *const Obj) };
        // SAFETY: the cell holds a `u64`; a write racing this read (a
        // poisoning not ordered after it) is what loom reports.
        o.0.with(|v| unsafe { *v })
    }

    /// Defers the poisoning of `p` (and counts it in `ran`) under `g`.
    fn retire(g: &Guard, p: usize, ran: &Arc<AtomicUsize>) {
        let ran = ran.clone();
        // SAFETY: `p` was unlinked before this call; the function only
        // poisons it, and the memory is freed after the model's threads end.
        unsafe {
            g.defer_unchecked(move || {
                (*(p as *const Obj)).0.with_mut(|v| *v = POISON);
                ran.fetch_add(1, Ordering::Relaxed);
            })
        };
    }

    fn free(ps: impl IntoIterator<Item = usize>) {
        for p in ps {
            // SAFETY: made by `obj`, freed once, no thread left to read it.
            drop(unsafe { Box::from_raw(p as *mut Obj) });
        }
    }

    /// Flushes until `want` deferred functions have run, once no reader
    /// is left. Not one flush: std's join returns after the thread's
    /// storage is destroyed (pthread_join waits for it), but loom's
    /// returns once the closure has and runs the destructor, which orphans
    /// the thread's bags, later; and loom, which does not make a store
    /// visible eventually, may then give the orphan count's `Relaxed`
    /// hint its old value forever. Each round therefore takes the lock
    /// the destructor took, which orders its store before the flush's
    /// load. A protocol that never runs a function fails the model at
    /// loom's branch bound.
    fn settle(ran: &AtomicUsize, want: usize) {
        while ran.load(Ordering::Relaxed) < want {
            drop(ORPHANS.lock().unwrap());
            flush();
            thread::yield_now();
        }
        assert_eq!(ran.load(Ordering::Relaxed), want, "ran twice");
    }

    fn model(f: impl Fn() + Sync + Send + 'static) {
        let mut b = loom::model::Builder::new();
        if b.preemption_bound.is_none() {
            b.preemption_bound = Some(2);
        }
        b.check(f);
    }

    /// A reader pins, loads the slot and reads the object, while a writer
    /// replaces it, retires it (the bag of two fills, is sealed, and the
    /// unpin advances and collects) and flushes. Whatever the interleaving,
    /// the reader reads a live object, and the poisoning happens after its
    /// read (loom's cell tracking), or the reader never reached it.
    #[test]
    fn a_pinned_reader_keeps_what_it_reached() {
        model(|| {
            let (a, b, spare) = (obj(1), obj(2), obj(0));
            let slot = Arc::new(AtomicUsize::new(a));
            let ran = Arc::new(AtomicUsize::new(0));
            let reader = {
                let slot = slot.clone();
                thread::spawn(move || {
                    let g = pin();
                    let v = read(slot.load(Ordering::Acquire));
                    assert!(v == 1 || v == 2, "read {v}: a retired object");
                    drop(g);
                })
            };
            let old = slot.swap(b, Ordering::AcqRel);
            {
                let g = pin_fenced();
                retire(&g, old, &ran);
                // A second function (on an object no reader reaches)
                // fills the bag: sealed now, advanced and collected at
                // the unpin.
                retire(&g, spare, &ran);
            }
            flush();
            reader.join().unwrap();
            settle(&ran, 2);
            assert_eq!(read(slot.load(Ordering::Relaxed)), 2);
            free([a, b, spare]);
        });
    }

    /// A thread retires an object and exits with its bag unsealed: its
    /// storage's destructor seals the bag and leaves it with the orphans,
    /// and a reader pinned on the main thread throughout keeps the object;
    /// once the reader unpins, the main thread's flush runs the orphan.
    #[test]
    fn an_exited_threads_bag_waits_for_readers_then_runs() {
        model(|| {
            let (a, b) = (obj(1), obj(2));
            let slot = Arc::new(AtomicUsize::new(a));
            let ran = Arc::new(AtomicUsize::new(0));
            let g = pin();
            let p = slot.load(Ordering::Acquire);
            let writer = {
                let (slot, ran) = (slot.clone(), ran.clone());
                thread::spawn(move || {
                    let old = slot.swap(b, Ordering::AcqRel);
                    let g = pin_fenced();
                    retire(&g, old, &ran);
                })
            };
            flush();
            assert_eq!(read(p), 1, "the object was retired under a pin");
            drop(g);
            writer.join().unwrap();
            settle(&ran, 1);
            free([a, b]);
        });
    }

    /// Two writers retire into their own bags while a reader pins twice
    /// (nested): nothing either writer retired after the reader reached it
    /// is poisoned before the reader's outer unpin.
    #[test]
    fn two_writers_and_a_nested_reader() {
        model(|| {
            let objs = [obj(1), obj(2), obj(3)];
            let slot = Arc::new(AtomicUsize::new(objs[0]));
            let ran = Arc::new(AtomicUsize::new(0));
            let writers: Vec<_> = [objs[1], objs[2]]
                .into_iter()
                .map(|new| {
                    let (slot, ran) = (slot.clone(), ran.clone());
                    thread::spawn(move || {
                        let old = slot.swap(new, Ordering::AcqRel);
                        let g = pin_fenced();
                        retire(&g, old, &ran);
                        drop(g);
                        flush();
                    })
                })
                .collect();
            let outer = pin();
            let first = read(slot.load(Ordering::Acquire));
            let inner = pin();
            let second = read(slot.load(Ordering::Acquire));
            drop(inner);
            assert!((1..=3).contains(&first) && (1..=3).contains(&second));
            drop(outer);
            for w in writers {
                w.join().unwrap();
            }
            settle(&ran, 2);
            free(objs);
        });
    }
}
