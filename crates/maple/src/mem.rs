//! Node memory: allocation, the writer's block pool, and the recycling of
//! retired nodes, all scoped to one tree (or one thread), never to the
//! process.
//!
//! # Where a node block comes from and goes to
//!
//! ```text
//!            alloc_block()                         free_block()
//!  allocator ------------> thread cache (<= 2048) <------------ writer, exclusive mode,
//!      ^                        |                               tree drop, pool surplus
//!      |                        v
//!      |                 BlockPool.blocks (per tree, <= POOL_MAX kept between writes)
//!      |                        |  ^
//!      |        write: block()  |  | refill: take() (one swap)
//!      |                        v  |
//!      |                  the write's nodes      Recycler (per tree, one cache line)
//!      |                        |                       ^
//!      |                        v  retire               | push(): one CAS, after the
//!      |                 RetireList blocks --epoch----->  grace period (any thread)
//!      +-- trim(): surplus of a preallocation goes straight back
//! ```
//!
//! - **Thread cache** ([`alloc_block`] / [`free_block`]): up to
//!   [`CACHE_BLOCKS`] free blocks per thread, because 64-byte-aligned
//!   allocation takes glibc's slow `memalign` path. Per thread: no line is
//!   shared.
//! - **Block pool** ([`BlockPool`], one per tree, under the writer lock):
//!   blocks the tree's writer uses first, including preallocated ones.
//!   Between writes it keeps at most [`POOL_MAX`] blocks; a preallocation
//!   may make it larger for one write, and [`BlockPool::trim`] (after each
//!   cursor write and when a cursor is dropped) returns the surplus to the
//!   allocator.
//! - **Recycler** ([`Recycler`], one per tree, on its own cache line): nodes
//!   a write replaced are listed in retire-list blocks; after the epoch's
//!   grace period the whole chain is pushed onto the tree's recycler with one
//!   CAS, and the tree's writer takes everything with one swap when its pool
//!   runs dry. Only threads retiring this tree's nodes and this tree's
//!   writer touch the line: unrelated trees share nothing (before this
//!   module, one process-wide stack took every tree's garbage).
//!
//! # Cost
//!
//! Per write through `&self`: at most one deferred function for nodes (it
//! holds an `Arc` of the recycler: one increment now, one decrement when it
//! runs) and one for values; one CAS on the tree's recycler line when the
//! grace period ends; one swap of it when the writer refills. Retire lists
//! are node blocks themselves, taken from the pool (one per 30 retired
//! nodes). A write under `&mut` retires nothing: its blocks go straight back
//! to the pool. Per tree: the recycler (one 64-byte line plus the `Arc`
//! header) and at most `POOL_MAX` pooled blocks (16 KiB) between writes,
//! plus blocks waiting for their grace period.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr;
use std::sync::Arc;

use crate::node::{Header, NodePtr, NODE_BYTES};
use crate::sync::{AtomicPtr, Ordering};

/// Size of a node block: a node. Under loom, whose atomics are larger
/// handles, a block is bigger so that the same node types fit.
#[cfg(not(loom))]
pub(crate) const BLOCK_BYTES: usize = NODE_BYTES;
#[cfg(loom)]
pub(crate) const BLOCK_BYTES: usize = 4 * NODE_BYTES;
// Under loom a node must still fit its block (node.rs checks the exact
// size in other builds).
#[cfg(loom)]
const _: () = assert!(std::mem::size_of::<crate::node::Leaf<u8>>() <= BLOCK_BYTES);
#[cfg(loom)]
const _: () = assert!(std::mem::size_of::<crate::node::Internal>() <= BLOCK_BYTES);

pub(crate) fn node_layout() -> Layout {
    // BLOCK_BYTES (a multiple of 256) and 64 are a valid size/alignment pair.
    Layout::from_size_align(BLOCK_BYTES, 64).unwrap_or_else(|_| unreachable!())
}

// ----- per-thread block cache ------------------------------------------------

/// Node blocks kept per thread for reuse. Writers allocate and free a few
/// nodes per write (copy-on-write), and 64-byte-aligned allocation goes
/// through glibc's slow `memalign` path: recycling blocks took the
/// allocator from about half of a sequential store's instructions to a few
/// percent (callgrind, see BENCHMARKS.md).
struct BlockCache(Vec<NodePtr>);

/// Blocks a thread keeps at most (512 KiB). Deferred frees run in bursts
/// (every bag that expired, at each advance; with crossbeam-epoch, up to 8
/// bags of 64 batches every 128 pins), so the cache must absorb a burst for
/// the writer to reuse it: with 256 blocks two thirds of node allocations
/// still missed (measured with crossbeam-epoch).
const CACHE_BLOCKS: usize = 2048;

impl Drop for BlockCache {
    fn drop(&mut self) {
        for &p in &self.0 {
            // SAFETY: cached blocks are unused allocations of `node_layout`.
            unsafe { dealloc(p.cast(), node_layout()) };
        }
    }
}

thread_local! {
    static CACHE: std::cell::RefCell<BlockCache> = const { std::cell::RefCell::new(BlockCache(Vec::new())) };
}

/// Allocates one uninitialised node block: the thread cache, else the
/// allocator.
pub(crate) fn alloc_block() -> NodePtr {
    let cached = CACHE
        .try_with(|c| c.try_borrow_mut().ok().and_then(|mut c| c.0.pop()))
        .ok()
        .flatten();
    if let Some(p) = cached {
        return p;
    }
    alloc_fresh()
}

fn alloc_fresh() -> NodePtr {
    let layout = node_layout();
    // SAFETY: the layout has a non-zero size.
    let p = unsafe { alloc(layout) };
    if p.is_null() {
        handle_alloc_error(layout);
    }
    p.cast()
}

/// Frees a node block without touching the values it points to: into the
/// thread cache, else to the allocator.
///
/// # Safety
/// `p` came from [`alloc_block`] and nothing will read it again.
pub(crate) unsafe fn free_block(p: NodePtr) {
    #[cfg(debug_assertions)]
    live_arenas::check_not_in_arena(p as usize);
    let kept = CACHE
        .try_with(|c| match c.try_borrow_mut() {
            Ok(mut c) if c.0.len() < CACHE_BLOCKS => {
                c.0.push(p);
                true
            }
            _ => false,
        })
        .unwrap_or(false);
    if !kept {
        // SAFETY: guaranteed by the caller; same layout as the allocation.
        unsafe { release_block(p) }
    }
}

/// Returns a block to the allocator, bypassing the thread cache.
///
/// # Safety
/// As [`free_block`].
unsafe fn release_block(p: NodePtr) {
    #[cfg(debug_assertions)]
    live_arenas::check_not_in_arena(p as usize);
    // SAFETY: guaranteed by the caller; same layout as the allocation.
    unsafe { dealloc(p.cast(), node_layout()) }
}

// ----- a dup's nodes: one allocation ---------------------------------------------

/// The node blocks of one [`dup`](crate::MapleTree::dup): a single
/// allocation of as many blocks as the source tree has nodes, handed out
/// in order while the copy is built. Allocating each of 10^5 entries'
/// 16 thousand nodes on its own went through glibc's `memalign` path at
/// about 660 instructions a node, three quarters of a `dup`.
///
/// Its blocks belong to the tree that was built into it for good: the
/// tree's writes reuse them like any other block, and a block that leaves
/// the tree (a pool's surplus, a dropped version) is not freed but only
/// forgotten ([`Recycler::owns`]), so none ever reaches a thread cache or
/// the allocator on its own. The whole allocation is freed with the tree's
/// [`Recycler`], once the tree is dropped and every grace period of its
/// writes has passed. So a copy keeps its initial node memory until it is
/// dropped, and a copy that is rewritten allocates beside it: at most the
/// source's size more than the same tree built by writes.
pub(crate) struct Arena {
    base: NodePtr,
    blocks: usize,
    /// Blocks handed out so far.
    used: usize,
}

// SAFETY: the arena is plain memory owned by one tree; its blocks are
// reached only through that tree's nodes and pool.
unsafe impl Send for Arena {}
// SAFETY: shared access reads only `base` and `blocks` (membership).
unsafe impl Sync for Arena {}

impl Arena {
    /// An arena of `blocks` node blocks (`None` for 0).
    pub(crate) fn new(blocks: usize) -> Option<Self> {
        if blocks == 0 {
            return None;
        }
        let layout = Self::layout(blocks);
        // SAFETY: the layout has a non-zero size.
        let base = unsafe { alloc(layout) };
        if base.is_null() {
            handle_alloc_error(layout);
        }
        #[cfg(debug_assertions)]
        live_arenas::add(base as usize, blocks * BLOCK_BYTES);
        Some(Arena {
            base: base.cast(),
            blocks,
            used: 0,
        })
    }

    fn layout(blocks: usize) -> Layout {
        let size = blocks
            .checked_mul(BLOCK_BYTES)
            .expect("a tree's node count times the block size fits in memory");
        // A multiple of the block size, aligned as one block is.
        Layout::from_size_align(size, node_layout().align()).unwrap_or_else(|_| unreachable!())
    }

    /// The next unused block, or `None` when all are used.
    #[inline]
    pub(crate) fn next(&mut self) -> Option<NodePtr> {
        if self.used == self.blocks {
            return None;
        }
        // In bounds: `used < blocks`.
        let p = self.base.cast::<u8>().wrapping_add(self.used * BLOCK_BYTES);
        self.used += 1;
        Some(p.cast())
    }

    /// Whether `p` is one of this arena's blocks.
    #[inline]
    pub(crate) fn contains(&self, p: NodePtr) -> bool {
        (p as usize).wrapping_sub(self.base as usize) < self.blocks * BLOCK_BYTES
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        #[cfg(debug_assertions)]
        live_arenas::remove(self.base as usize);
        // SAFETY: allocated in `new` with this layout; its blocks are
        // unreachable (see the type's documentation).
        unsafe { dealloc(self.base.cast(), Self::layout(self.blocks)) };
    }
}

/// In debug builds (tests, Miri), the address ranges of every live arena,
/// so that a block of one that reaches the thread cache or the allocator
/// on its own is caught where it happens rather than as a double free.
#[cfg(debug_assertions)]
mod live_arenas {
    use std::sync::Mutex;

    static LIVE: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

    pub(super) fn add(base: usize, len: usize) {
        LIVE.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((base, len));
    }

    pub(super) fn remove(base: usize) {
        let mut l = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        l.retain(|&(b, _)| b != base);
    }

    /// Panics if `p` lies in a live arena.
    pub(super) fn check_not_in_arena(p: usize) {
        let l = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        assert!(
            !l.iter().any(|&(b, len)| p.wrapping_sub(b) < len),
            "a block of a dup's arena was freed on its own"
        );
    }
}

// ----- retire lists and the per-tree recycler ----------------------------------

/// Most node pointers a [`RetireList`] block holds.
const RETIRE_LIST_CAP: usize = 30;

/// A node-sized block listing node blocks that one write retired. After
/// the grace period the whole chain is pushed, with one CAS, onto the
/// tree's [`Recycler`]. The thread that runs the deferred function (the
/// writer that retired them, or, for a thread that exited, whichever
/// thread advances next; with crossbeam-epoch, often a reader) touches
/// only these list blocks and the recycler, never the retired nodes, and
/// frees nothing: with glibc, readers freeing the writer's blocks
/// serialised on malloc's arena lock (reads beside a writer fell to 0.05x
/// of reads alone).
#[repr(C, align(64))]
struct RetireList {
    next: NodePtr,
    count: usize,
    blocks: [NodePtr; RETIRE_LIST_CAP],
}

const _: () = assert!(std::mem::size_of::<RetireList>() == NODE_BYTES);

/// The stack of retire lists whose grace period has passed, one per tree,
/// alone on its cache line. Shared (through an `Arc`) by the tree's writer
/// and the deferred functions of its writes, which may outlive the tree:
/// the last owner frees whatever is still on it.
#[repr(align(64))]
pub(crate) struct Recycler {
    head: AtomicPtr<Header>,
    /// The blocks the tree was built into by `dup`, freed with the
    /// recycler (after every block on the stack that is not the arena's).
    arena: Option<Arena>,
}

impl Recycler {
    fn new(arena: Option<Arena>) -> Self {
        Recycler {
            head: AtomicPtr::new(ptr::null_mut()),
            arena,
        }
    }

    /// Whether `b` is a block of the tree's dup arena, which is freed only
    /// whole.
    #[inline]
    pub(crate) fn owns(&self, b: NodePtr) -> bool {
        self.arena.as_ref().is_some_and(|a| a.contains(b))
    }

    /// Gives up a block that leaves the tree: into the thread cache (or
    /// the allocator), except a block of the tree's arena, which is only
    /// forgotten.
    ///
    /// # Safety
    /// As [`free_block`]: `b` belongs to this tree and nothing will read
    /// it again.
    #[inline]
    pub(crate) unsafe fn release(&self, b: NodePtr) {
        if !self.owns(b) {
            // SAFETY: forwarded from the caller; not an arena block.
            unsafe { free_block(b) }
        }
    }

    /// Pushes a chain of retire lists.
    ///
    /// # Safety
    /// No reader can reach any block in the chain or listed in it (its
    /// grace period is over), and the caller gives the chain up.
    unsafe fn push(&self, chain: NodePtr) {
        let mut tail = chain;
        // SAFETY: the chain's lists are owned by the caller.
        unsafe {
            while !(*tail.cast::<RetireList>()).next.is_null() {
                tail = (*tail.cast::<RetireList>()).next;
            }
        }
        // Relaxed: only a hint for the first CAS, which re-reads on failure.
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // SAFETY: tail is ours until the CAS publishes the chain.
            unsafe { (*tail.cast::<RetireList>()).next = head };
            // Release: the links and the lists' contents are visible to the
            // writer whose Acquire swap takes the chain. Relaxed on failure:
            // nothing is read through the value but the next attempt's link.
            match self
                .head
                .compare_exchange_weak(head, chain, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(h) => head = h,
            }
        }
    }

    /// Takes every recycled block: calls `take` for each (the lists' entries
    /// and the list blocks themselves). Taking the whole stack with one swap
    /// leaves no ABA window.
    fn take(&self, mut take: impl FnMut(NodePtr)) {
        // Relaxed pre-check: an empty stack (the common case) costs a load,
        // not a write to the shared line.
        if self.head.load(Ordering::Relaxed).is_null() {
            return;
        }
        // Acquire pairs with the Release CAS in `push`.
        let mut l = self.head.swap(ptr::null_mut(), Ordering::Acquire);
        while !l.is_null() {
            // SAFETY: the swap made the whole chain ours.
            let list = unsafe { &*l.cast::<RetireList>() };
            let next = list.next;
            for &b in &list.blocks[..list.count] {
                take(b);
            }
            take(l);
            l = next;
        }
    }
}

impl Drop for Recycler {
    fn drop(&mut self) {
        // Straight to the allocator: the last owner may be any thread (the
        // last deferred function of a dropped tree), whose cache should not
        // fill with another thread's blocks.
        let arena = self.arena.take();
        self.take(|b| {
            if !arena.as_ref().is_some_and(|a| a.contains(b)) {
                // SAFETY: the last owner: every block on the stack is
                // unreachable.
                unsafe { release_block(b) }
            }
        });
        // The arena goes last: nothing in it is reachable any more.
        drop(arena);
    }
}

/// Retired node blocks of one write, listed and waiting for their grace
/// period; [`RetiredNodes::recycle`] hands them to the tree's recycler.
pub(crate) struct RetiredNodes {
    chain: NodePtr,
    recycler: Arc<Recycler>,
}

// SAFETY: carries list blocks (plain memory owned by the batch) and an Arc
// of a Sync recycler to the thread running deferred functions.
unsafe impl Send for RetiredNodes {}

impl RetiredNodes {
    /// # Safety
    /// The grace period of every listed block is over.
    pub(crate) unsafe fn recycle(self) {
        // SAFETY: forwarded from the caller; the chain is ours.
        unsafe { self.recycler.push(self.chain) }
    }
}

// ----- the writer's block pool ------------------------------------------------

/// Most free node blocks a tree keeps for its writer between writes
/// (16 KiB): small, because a program may hold thousands of trees (one per
/// process in `aspace-mm`). A preallocation may exceed it until
/// [`BlockPool::trim`].
pub(crate) const POOL_MAX: usize = 64;

/// The free blocks of one tree's writer (touched under the writer lock or
/// `&mut` only), and the tree's recycler.
pub(crate) struct BlockPool {
    blocks: Vec<NodePtr>,
    recycler: Arc<Recycler>,
    /// Node allocations that the pool could not serve (for tests and stats).
    pub(crate) misses: u64,
}

// SAFETY: the pointers are unused node blocks owned by the pool.
unsafe impl Send for BlockPool {}

impl BlockPool {
    pub(crate) fn new() -> Self {
        Self::with_arena(None)
    }

    /// A pool for a tree built into `arena` (see [`Arena`]).
    pub(crate) fn with_arena(arena: Option<Arena>) -> Self {
        BlockPool {
            blocks: Vec::new(),
            recycler: Arc::new(Recycler::new(arena)),
            misses: 0,
        }
    }

    /// The tree's recycler, which also decides where a block leaving the
    /// tree goes ([`Recycler::release`]).
    pub(crate) fn recycler(&self) -> &Arc<Recycler> {
        &self.recycler
    }

    /// Blocks held now.
    pub(crate) fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Makes sure at least `n` blocks are held (preallocation).
    pub(crate) fn reserve(&mut self, n: usize) {
        if self.blocks.len() < n {
            self.refill();
        }
        while self.blocks.len() < n {
            self.blocks.push(alloc_block());
        }
    }

    /// Moves recycled blocks into the pool, keeping at most [`POOL_MAX`].
    fn refill(&mut self) {
        let blocks = &mut self.blocks;
        let recycler = &*self.recycler;
        recycler.take(|b| {
            if blocks.len() < POOL_MAX {
                blocks.push(b);
            } else {
                // SAFETY: a recycled block is unreachable and ours now.
                unsafe { recycler.release(b) };
            }
        });
    }

    /// A free block: the pool, then recycled blocks, then the allocator.
    pub(crate) fn block(&mut self) -> NodePtr {
        if self.blocks.is_empty() {
            self.refill();
        }
        match self.blocks.pop() {
            Some(p) => p,
            None => {
                self.misses += 1;
                alloc_block()
            }
        }
    }

    /// Keeps a block the writer no longer needs.
    ///
    /// # Safety
    /// `b` is an unreachable block from [`alloc_block`].
    pub(crate) unsafe fn keep(&mut self, b: NodePtr) {
        if self.blocks.len() < POOL_MAX {
            self.blocks.push(b);
        } else {
            // SAFETY: the caller hands over an unreachable block.
            unsafe { self.recycler.release(b) };
        }
    }

    /// Gives the surplus of a preallocation back: keeps [`POOL_MAX`] blocks
    /// and returns the rest straight to the allocator (not to the thread
    /// cache, so the memory really goes back).
    pub(crate) fn trim(&mut self) {
        if self.blocks.len() <= POOL_MAX {
            return;
        }
        let surplus = self.blocks.len() - POOL_MAX;
        for p in self.blocks.drain(POOL_MAX..) {
            if !self.recycler.owns(p) {
                // SAFETY: pool blocks are unused allocations owned by the
                // pool (and not the arena's).
                unsafe { release_block(p) };
            }
        }
        self.blocks.shrink_to(POOL_MAX);
        if surplus >= TRIM_RETURN_BLOCKS {
            return_free_memory();
        }
    }

    /// Lists the blocks of `retired` in retire-list blocks (taken from this
    /// pool) for recycling after the grace period.
    ///
    /// # Safety
    /// Every block is unlinked from the published version and used by no
    /// one but the readers that may still hold the old version.
    pub(crate) unsafe fn list_retired(
        &mut self,
        retired: impl Iterator<Item = NodePtr>,
    ) -> Option<RetiredNodes> {
        let mut chain: NodePtr = ptr::null_mut();
        for p in retired {
            // SAFETY: chain is null or a list this call built.
            let full = chain.is_null()
                || unsafe { (*chain.cast::<RetireList>()).count } == RETIRE_LIST_CAP;
            if full {
                let list = self.block();
                // SAFETY: list is a free block of node size and alignment.
                unsafe {
                    ptr::write(
                        list.cast::<RetireList>(),
                        RetireList {
                            next: chain,
                            count: 0,
                            blocks: [ptr::null_mut(); RETIRE_LIST_CAP],
                        },
                    )
                };
                chain = list;
            }
            // SAFETY: chain is a list this call owns, not full.
            unsafe {
                let l = &mut *chain.cast::<RetireList>();
                l.blocks[l.count] = p;
                l.count += 1;
            }
        }
        (!chain.is_null()).then(|| RetiredNodes {
            chain,
            recycler: Arc::clone(&self.recycler),
        })
    }
}

/// A trim that frees at least this many blocks (1 MiB) also asks the C
/// allocator to return free memory to the system.
const TRIM_RETURN_BLOCKS: usize = 4096;

/// Asks glibc's malloc to give free memory back to the system. Freed node
/// blocks of a non-main arena are otherwise kept: measured, dropping an
/// unused `preallocate(0, u64::MAX)` over 200 k entries (800 k blocks)
/// left resident memory 246 MiB above where it started until this call
/// (then within 1% of it; see BENCHMARKS.md). A no-op elsewhere, and
/// harmless where Rust's global allocator is not malloc (the call only
/// walks glibc's own arenas).
fn return_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu", not(miri)))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::os::raw::c_int;
        }
        // SAFETY: malloc_trim has no preconditions; it only releases
        // memory that malloc holds free.
        unsafe { malloc_trim(0) };
    }
}

impl Drop for BlockPool {
    fn drop(&mut self) {
        for &p in &self.blocks {
            // SAFETY: pool blocks are unused blocks owned by the pool.
            unsafe { self.recycler.release(p) };
        }
    }
}
