//! A maple tree: an RCU-style B-tree of non-overlapping `u64` ranges with
//! O(log n) gap search, after the Linux kernel's VMA tree (Howlett & Wilcox).
//!
//! ```
//! use aspace_maple::MapleTree;
//!
//! let tree = MapleTree::new();
//! tree.store_range(0x1000, 0x1fff, "text").unwrap();
//! tree.insert_range(0x4000, 0x4fff, "data").unwrap();
//! assert_eq!(*tree.load(0x1234).unwrap(), "text");
//! // Lowest free 0x2000-long range at or above 0x1000:
//! assert_eq!(tree.empty_area(0x1000, u64::MAX, 0x2000), Ok(0x2000));
//! // Highest one below 0x8000 (top-down, as mmap places mappings):
//! assert_eq!(tree.empty_area_rev(0, 0x7fff, 0x2000), Ok(0x6000));
//! let snap = tree.reader();
//! let all: Vec<_> = snap.iter().map(|(r, v)| (r, *v)).collect();
//! assert_eq!(all, vec![(0x1000..=0x1fff, "text"), (0x4000..=0x4fff, "data")]);
//! ```
//!
//! See [`MapleTree`] for the concurrency contract. The crate is laid out as
//! a thin public skin over a raw core: `node` (layouts, diagram), `mem`
//! (node memory: block pool, per-tree recycling), `subtree` (freeing and
//! copying whole subtrees), `read` (walks, stepping, gap search), `search`
//! (a point lookup's pivot search), `write` (the copy-on-write engine),
//! `tree` / `cursor` (the kernel-style API) and `map` (the idiomatic one).
//!
//! # Two vocabularies
//!
//! Kernel developers think in `load` / `store_range` / `erase` /
//! `empty_area`; Rust users reach for `get` / `insert` / `remove` / `iter`
//! with range arguments. Both are here, on the same tree, with the same
//! concurrency contract and cost (the idiomatic calls are inlined
//! wrappers). One shape throughout: every iterator over entries (a tree's,
//! a [`Reader`]'s, a [`Removed`]'s, a [`Cursor`]'s steps) yields the same
//! [`Item`], a `(RangeInclusive<u64>, `[`Ref`]`)` pair whose [`Ref`]
//! dereferences to the value, as a `BTreeMap`'s `(&K, &V)` does; a point
//! lookup returns an [`Entry`], the same range and [`Ref`] in one (its
//! [`into_parts`](Entry::into_parts) is the pair). Ranges come in as any
//! std range (`a..=b` reads as what comes out) and go out as
//! `RangeInclusive<u64>`, which, unlike `a..b`, can end at `u64::MAX`.
//! Every write but the owning ones works through `&self`, so a tree
//! behind an `Arc` is written from any thread.
//!
//! Iteration streams: a `for` loop keeps its place in registers and steps
//! a leaf without checks, taking its entries from the leaf's mask of used
//! slots (14.8 instructions an entry at 10^5, boxed `u64`, summing
//! `start ^ value`; 16.2 through `tree.iter()`, whose items may outlive
//! it, and which takes its pin's holds for them once a leaf; none for
//! plain words in the slot, such as [`XValue`], whose items need no pin:
//! 15.8 there, as through a [`Reader`]), and a consuming adapter (`fold`,
//! `for_each`, `sum`, `collect`, ...) scans a whole leaf at a time (14.5).
//! `BENCHMARKS.md` has the figures.
//!
//! | idiomatic (`BTreeMap` / rangemap style) | kernel-style | Linux |
//! |---|---|---|
//! | [`get(i)`](MapleTree::get), [`get_key_value(i)`](MapleTree::get_key_value) | [`load(i)`](MapleTree::load) | `mtree_load` |
//! | [`insert(a..=b, v)`](MapleTree::insert) (replaces) | [`store_range(a, b, v)`](MapleTree::store_range) | `mtree_store_range` |
//! | [`try_insert(a..=b, v)`](MapleTree::try_insert) (fails if occupied) | [`insert_range(a, b, v)`](MapleTree::insert_range) | `mtree_insert_range` |
//! | [`remove(i)`](MapleTree::remove) (`&self`, returns the [`Entry`]); [`take(i)`](MapleTree::take) (`&mut`, returns the value) | [`erase(i)`](MapleTree::erase) | `mtree_erase` |
//! | [`punch_hole(a..=b)`](MapleTree::punch_hole) | [`remove_range(a, b)`](MapleTree::remove_range) | store `NULL` over a range |
//! | [`iter()`](MapleTree::iter), [`range(a..=b)`](MapleTree::range) / [`overlapping`](MapleTree::overlapping), [`keys()`](MapleTree::keys), [`values()`](MapleTree::values), `for (r, v) in &tree` | [`reader()`](MapleTree::reader)`.iter()`, [`Reader::range(a, b)`](Reader::range) | `mt_for_each` |
//! | [`first_key_value()`](MapleTree::first_key_value), [`last_key_value()`](MapleTree::last_key_value), [`first()`](MapleTree::first), [`last()`](MapleTree::last) | [`find(0)`](MapleTree::find), [`prev(u64::MAX)`](MapleTree::prev) | `mt_find`, `mt_prev` |
//! | [`pop_first()`](MapleTree::pop_first), [`pop_last()`](MapleTree::pop_last) (`&self`) | `find` + `erase` under one lock | |
//! | [`gaps(range)`](MapleTree::gaps) | repeated [`empty_area(lo, hi, 1)`](MapleTree::empty_area) | `mas_empty_area` |
//! | [`empty_area_aligned(range, size, align, fit)`](MapleTree::empty_area_aligned) | [`empty_area`](MapleTree::empty_area) / [`empty_area_rev`](MapleTree::empty_area_rev) (no alignment) | `mas_empty_area(_rev)` |
//! | [`alloc_aligned(range, size, align, fit, v)`](MapleTree::alloc_aligned) | [`alloc_range`](MapleTree::alloc_range) / [`alloc_range_rev`](MapleTree::alloc_range_rev) | `mtree_alloc_(r)range` |
//! | `collect()`, [`extend`](Extend::extend), `into_iter()`, `==`, `{:?}` | [`cursor_mut()`](MapleTree::cursor_mut) stores, [`dup`](MapleTree::dup) | `__mt_dup` |
//!
//! A value needs `Clone` only where a write may cut an entry in two (the
//! right part gets a clone): [`insert`](MapleTree::insert),
//! [`punch_hole`](MapleTree::punch_hole) and their kernel-style names,
//! `collect` and `extend` ask for [`SplitValue`] (every `Clone` type),
//! whose compile error names the ways out: an `Arc<T>`, or
//! [`try_insert`](MapleTree::try_insert), which never splits. `dup` and
//! `Clone` clone every value, as a `BTreeMap`'s `clone` does.
//!
//! ```
//! use std::sync::Mutex;
//! use aspace_maple::MapleTree;
//!
//! // A BTreeMap-style map of ranges to values that are not `Clone`.
//! let slots: MapleTree<Mutex<Vec<u8>>> = MapleTree::new();
//! slots.try_insert(0x1000..=0x1fff, Mutex::new(vec![1])).unwrap();
//! slots.try_insert(0x4000..=0x4fff, Mutex::new(vec![2])).unwrap();
//! slots.get(0x1234).unwrap().lock().unwrap().push(3);
//! for (range, v) in &slots {
//!     println!("{range:x?}: {:?}", v.lock().unwrap());
//! }
//! let (range, v) = slots.get_key_value(0x1800).unwrap();
//! assert_eq!((range, v.lock().unwrap().len()), (0x1000..=0x1fff, 2));
//! let gone = slots.remove(0x4000).unwrap(); // through `&self`
//! assert_eq!(gone.range(), 0x4000..=0x4fff);
//! ```
//!
//! Range arguments are anything [`IndexRange`]: one `u64` or any std range
//! of `u64`; a range that holds no index (`5..5`) is refused with
//! [`MapleError::EmptyRange`], never a panic.
//!
//! ```
//! use aspace_maple::MapleTree;
//!
//! let tree: MapleTree<&str> = [(0x1000..=0x1fff, "text"), (0x4000..=0x4fff, "data")]
//!     .into_iter()
//!     .collect();
//! assert_eq!(tree.get(0x1234).map(|e| *e), Some("text"));
//! tree.insert(0x1800..=0x1fff, "rodata").unwrap(); // trims "text"
//! let names: Vec<_> = tree.iter().map(|(_, v)| *v).collect();
//! assert_eq!(names, ["text", "rodata", "data"]);
//! let holes: Vec<_> = tree.gaps(0x1000..0x6000).collect();
//! assert_eq!(holes, [0x2000..=0x3fff, 0x5000..=0x5fff]);
//! ```
//!
//! # Against the peers
//!
//! | capability | rangemap | `BTreeMap` | scc `TreeIndex` | crossbeam `SkipMap` | Linux maple | here |
//! |---|---|---|---|---|---|---|
//! | point lookup | `get` | `get` | `peek` | `get` | `mtree_load` | `get` / `load` |
//! | insert, replacing | `insert` | `insert` | (fails) | `insert` | `mtree_store_range` | `insert` / `store_range` |
//! | insert, failing if occupied | - | `try_insert` (unstable) | `insert` | `get_or_insert` | `mtree_insert_range` | `try_insert` / `insert_range` |
//! | remove one entry | `remove(range)` | `remove` | `remove` | `remove` | `mtree_erase` | `remove` (`&self`) / `erase`; `take` (`&mut`, owned) |
//! | punch a hole in a range | `remove(range)` | - | - | - | store `NULL` over a range | `punch_hole` / `remove_range` |
//! | ordered iteration, both ends | yes | yes | forward | yes | `mas_next`/`mas_prev` | `iter()`, `.rev()`, `Reader::iter` |
//! | range / overlap query | `overlapping`, `overlaps` | `range` | `range` | `range` | `mt_for_each` | `range` / `overlapping`, `overlaps` |
//! | first / last / pop | - | `first_key_value`, `pop_first` | - | `front`, `pop_front` | `mt_find` | `first_key_value`, `last_key_value`, `first`, `last`, `pop_first`, `pop_last` (`&self`) |
//! | gaps iterator | `gaps` (O(n) seek) | - | - | - | - | `gaps`, O(log n) per gap |
//! | gap search by size, both fits | - | - | - | - | `mas_empty_area(_rev)` | `empty_area(_rev)` |
//! | aligned allocation | - | - | - | - | - | `empty_area_aligned`, `alloc_aligned` |
//! | readers beside writers | no (`&mut`) | no (`&mut`) | lock-free | lock-free | RCU | lock-free readers, one writer at a time |
//! | concurrent writers | no | no | yes | yes | no (one lock) | no: writers serialise on one lock, as the kernel's do |
//! | `get_mut`, `iter_mut`, entry API | `get_mut` asked (#85-#87) | yes | - | - | - | not provided: values are shared with lock-free readers, so they are immutable once stored; store a new value, or put interior mutability (atomics, a lock) in `T` |
//! | coalescing equal neighbours | yes | - | - | - | - | not done: entries keep their identity (two adjacent mappings of one file stay two VMAs); merge explicitly |
//! | `Index` operator | - | panics on a miss | - | - | - | not provided: it must panic on a miss, and no call here panics on input |
//! | `FromIterator`, `Extend`, `IntoIterator`, `Debug`, `PartialEq`/`Eq` | yes | yes | partly | yes | - | yes |
//! | `Hash`, `Ord` | yes | yes | - | - | - | not provided: no use seen for a concurrent map's hash; compare `iter()` sequences |
//! | whole-tree copy | `Clone` | `Clone` | `Clone` | - | `__mt_dup` | `dup` / `Clone`: whole nodes into one allocation, then child pointers |
//! | write without allocating | - | - | - | - | `mas_preallocate` | [`Cursor::preallocate`] |
//! | identical intervals coexisting (multimap) | - | - | - | - | (interval tree) | the `aspace-rmap` crate |
//! | `serde` | feature | yes | feature | - | - | feature `serde` |
//! | `no_std` + `alloc` | yes | yes | - | (epoch: `alloc`) | kernel | no: see below |
//!
//! # Values: boxed, or in the slot word
//!
//! A leaf slot is one atomic word. `MapleTree<T>` (that is,
//! `MapleTree<T, `[`Boxed`]`>`) boxes each value and stores the box's
//! pointer: any `T` works, and readers get `&T`. Pointer-like values can
//! instead live in the slot word itself, `MapleTree<T, `[`Inline`]`>`, for
//! `T:` [`InlineValue`] (after the kernel Rust bindings' `ForeignOwnable`):
//! `Arc<U>`, `Box<U>`, `&'static U`, and small integers ([`XValue`], `u32`)
//! encoded as the kernel's `xa_mk_value` does. Then a store allocates
//! nothing for the value, an overwrite frees nothing but the old value
//! itself, and [`dup`](MapleTree::dup) clones an `Arc` by one reference
//! count per entry and copies an integer's leaf whole, without visiting
//! its values (with boxed values, each entry costs a new box).
//!
//! What a [`Ref`] holds is the representation's [`Repr::Ref`]: `&T` for
//! [`Boxed`]; for [`Inline`], [`InlineValue::Borrowed`], built from a copy
//! of the slot word (never a reference into the slot, which an exact-fit
//! write may store into concurrently): a [`ValueRef`] that dereferences to
//! the stored `Arc` (or `&'static U`, or integer) through a never-dropped
//! copy of it, or `&U` for a `Box<U>`. A [`Ref`] and an [`Entry`]
//! dereference to the same thing. Everything else, the API and the concurrency contract, is
//! the same; `SAFETY.md` has the argument.
//!
//! ```
//! use std::sync::Arc;
//! use aspace_maple::{Inline, MapleTree};
//!
//! #[derive(Debug, PartialEq)]
//! struct Vma { name: &'static str }
//!
//! let tree: MapleTree<Arc<Vma>, Inline> = MapleTree::new_inline();
//! tree.insert(0x1000..=0x2fff, Arc::new(Vma { name: "text" })).unwrap();
//! tree.insert(0x2000..=0x27ff, Arc::new(Vma { name: "hole" })).unwrap(); // splits "text"
//! let e = tree.load(0x1234).unwrap();
//! assert_eq!(e.name, "text"); // Entry -> Arc<Vma> -> Vma
//! let text: Arc<Vma> = (*e).clone(); // a reference count, no copy
//! assert_eq!(Arc::strong_count(&text), 3); // both parts of the split, and `text`
//! let child = tree.dup(); // one reference count per entry, no allocation per entry
//! let names: Vec<_> = child.reader().iter().map(|(_, v)| v.name).collect();
//! assert_eq!(names, ["text", "hole", "text"]);
//! ```
//!
//! The default representation stays [`Boxed`], so `MapleTree<T>` and code
//! written for it are unchanged. [`MapleTree::new`] makes a boxed tree;
//! [`MapleTree::new_inline`] (or `Default`) an inline one.
//!
//! # `no_std`
//!
//! Not supported, for a reason in the reclamation scheme: every lock-free
//! read pins through a thread-local record of the crate's epoch, and the
//! epoch keeps each thread's retired memory in thread-local storage too,
//! so it needs `std`. A `no_std` tree would own an explicit collector and
//! take the caller's per-thread handle on every read
//! (`tree.reader_with(&handle)`), and its writer lock would need a
//! `no_std` mutex in place of `parking_lot`. That is an API of its own,
//! not a feature flag over this one.
//!
//! # Features
//!
//! - `serde`: `Serialize` / `Deserialize` for `MapleTree<T>`, as a sequence of
//!   `(first, last, value)` triples; deserializing refuses inverted or
//!   overlapping ranges with an error.
//!
//! # Building for the CPU
//!
//! Built for a target with AVX2 (`-C target-cpu=native` on x86-64 CPUs
//! since 2013, or `-C target-cpu=x86-64-v3`), a point lookup compares a
//! node's pivots all at once instead of by binary search: at 10^5 entries
//! `load` takes 176-181 instructions instead of 189 (`native` on a Zen
//! core, `x86-64-v3`), a [`Reader`]'s load 140-145 instead of 155, and a
//! hot `Reader` load about 12% less time. The default build
//! assumes only the baseline x86-64 CPU and uses the binary search; the
//! choice is made at compile time, because a lookup compiled for AVX2
//! cannot be inlined into baseline code, and the call then costs more than
//! the search saves.
//!
//! # Reclamation: an epoch with a fence-free pin
//!
//! Replaced nodes and values are freed through the crate's own epoch-based
//! reclamation (private module `epoch`), which replaced crossbeam-epoch for
//! two measured reasons (`BENCHMARKS.md`):
//!
//! - **A reader's pin has no fence.** Where Linux's `membarrier(2)` is
//!   available, a reader publishes its epoch with a plain store, and the
//!   thread that advances the epoch (a writer, rarely) issues one
//!   `MEMBARRIER_CMD_PRIVATE_EXPEDITED` for both sides, as the kernel's
//!   RCU does with its grace periods. A hot `load` lost a locked
//!   instruction: the cost of a pin and an `Entry` over a `Reader`'s
//!   lookup went from 4.0-4.9 ns to 2.3-2.8 ns (10^5 entries).
//! - **Retired memory stays with the thread that retired it.** A writer's
//!   deferred functions wait in its own bags and run on its own thread;
//!   nothing is queued in a structure shared by the process. Two threads
//!   writing two trees went from 1.26-1.41x one thread's writes to
//!   1.73-1.82x, and reads beside a writer from 0.73x to 0.84-0.98x of
//!   reads alone (10^5).
//!
//! Writers pin with a fence (a write's work dwarfs it), so a program that
//! only writes never pays for a membarrier; readers pay one fenced pin per
//! membarrier. Set `ASPACE_MAPLE_EPOCH=fenced` in the environment (before
//! the first read) to pin with a fence everywhere and never issue a
//! membarrier, as on systems without it: on a machine where many threads
//! read hot and others write, each membarrier interrupts every running
//! thread of the process. [`flush_retired`] frees, as far as readers allow,
//! what the calling thread retired.
//!
//! What the epoch hands back is not freed but reused: replaced nodes go to
//! the tree's recycler for its writer, and a [`Boxed`] tree's replaced
//! values' boxes go to a pool of the thread that wrote them. Deferred work
//! runs on the thread that retired it (or, once that thread has exited, on
//! the next thread to advance the epoch), so no reader frees a writer's
//! memory and no line is shared with unrelated trees.
//!
//! # Testing under Miri and loom
//!
//! - `cargo +nightly miri test -p aspace-maple --lib --tests` (where a
//!   nightly with the `miri` component is installed); heavy tests shrink
//!   under `cfg(miri)`. `scripts/miri.sh` runs it when miri is present.
//! - `RUSTFLAGS="--cfg loom" cargo test -p aspace-maple --release --test loom`
//!   model-checks the publish/read protocol, the leaf swap, the exact fit and
//!   node recycling (`tests/loom.rs`: the real tree with every atomic a loom
//!   atomic, and a reduced model whose node fields are loom cells).
//! - `RUSTFLAGS="--cfg loom" cargo test -p aspace-maple --release --lib epoch::models`
//!   model-checks the epoch's fenced protocol: pins, deferral, advancing,
//!   collection and a thread's exit (the fence-free pin rests on
//!   `membarrier`, which loom cannot model).

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod boxes;
mod cursor;
mod epoch;
mod error;
mod map;
mod mem;
mod node;
mod raw;
mod read;
mod search;
#[cfg(feature = "serde")]
mod serde_impl;
mod subtree;
mod sync;
mod tree;
mod validate;
mod value;
mod write;

pub use cursor::Cursor;
pub use error::{MapleError, WriteError};
pub use map::{Entries, Fit, Gaps, IndexRange, IntoIter};
pub use tree::{Entry, Item, Iter, MapleTree, MemoryUsage, Reader, Ref, Removed};
pub use value::{Boxed, Inline, InlineValue, Repr, SplitValue, ValueRef, XValue};

/// Frees, as far as readers allow, the memory that this thread's writes
/// retired and that threads which have exited left behind.
///
/// Writes to a shared tree do not free what they replace: they defer it
/// until every reader that could still see it has finished, and the thread
/// that wrote frees it on a later write (see the crate's "Reclamation"
/// section). A thread that stops writing keeps up to a few thousand such
/// batches until it writes again or exits; call this to free them now,
/// for instance before measuring memory or counting drops. What a reader
/// still pinned on another thread may see is kept.
///
/// ```
/// use std::sync::Arc;
/// use aspace_maple::MapleTree;
///
/// let v = Arc::new(());
/// let tree = MapleTree::new();
/// tree.insert(0..=9, v.clone()).unwrap();
/// tree.insert(0..=9, Arc::new(())).unwrap(); // `v`'s clone is retired, not yet dropped
/// aspace_maple::flush_retired(); // no reader is pinned: it is dropped now
/// assert_eq!(Arc::strong_count(&v), 1);
/// ```
pub fn flush_retired() {
    epoch::flush();
}

/// Node size in bytes (leaf and internal alike).
pub const NODE_SIZE: usize = node::NODE_BYTES;

/// Whether this build's point lookups compare a node's pivots with AVX2
/// (see "Building for the CPU" above): true where the crate was compiled
/// for a target with AVX2 and POPCNT, false for the baseline CPU's binary
/// search. For tools that record how their figures were obtained.
pub const VECTOR_PIVOT_SEARCH: bool = search::VECTOR;

/// This crate's README, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct CrateReadmeDoctests;
