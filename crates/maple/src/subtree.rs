//! Whole subtrees: freeing one (a tree dropped or cleared) and copying one
//! whole nodes first (`dup`, the fork path). Kept apart from `node.rs`, which
//! describes nodes and reads them, because these allocate and free blocks
//! (`mem.rs`), which itself builds on the node layout.

use std::marker::PhantomData;
use std::ptr;

use crate::mem::{alloc_block, free_block, Arena};
use crate::node::{copy_node, Internal, Leaf, NodePtr, KIND_LEAF, LEAF_SLOTS};
use crate::value::SlotOps;

/// Drops every value and frees every node of a subtree, each node given to
/// `release` (the tree's [`Recycler::release`](crate::mem::Recycler::release),
/// which keeps a dup arena's blocks out of the thread cache).
///
/// # Safety
/// The subtree is unreachable by anyone else and every value word in it
/// is owned by it; `release` frees a block of this tree.
pub(crate) unsafe fn free_subtree<T: SlotOps>(p: NodePtr, release: &impl Fn(NodePtr)) -> usize {
    // SAFETY: forwarded from the caller.
    unsafe { free_nodes::<T>(p, true, release) }
}

/// [`free_subtree`], dropping the values only where `values` says.
///
/// # Safety
/// As [`free_subtree`]; with `values`, every value word is owned by the
/// subtree.
unsafe fn free_nodes<T: SlotOps>(p: NodePtr, values: bool, release: &impl Fn(NodePtr)) -> usize {
    if p.is_null() {
        return 0;
    }
    let mut freed = 1;
    // SAFETY: p is a valid node owned by the caller.
    unsafe {
        if (*p).kind == KIND_LEAF {
            let leaf = &*p.cast::<Leaf<T>>();
            if values {
                for i in 0..leaf.hdr.count as usize {
                    let v = leaf.slot(i);
                    if !v.is_null() {
                        T::drop_word(v);
                    }
                }
            }
        } else {
            let node = &*p.cast::<Internal>();
            for i in 0..node.hdr.count as usize {
                freed += free_nodes::<T>(node.child(i), values, release);
            }
        }
        release(p);
    }
    freed
}

/// Copies a subtree for `dup` (the fork path), after the kernel's
/// `mas_dup_build`: every node is copied whole into a block of one
/// allocation sized for the source ([`Arena`]), depth first, and each
/// copied internal node is then pointed at its children's copies. Values
/// are visited only if they must be cloned: with `clone` `None` (values
/// whose word may simply be copied, as an inline integer's), a leaf costs
/// one 256-byte copy; otherwise each copied leaf's words are replaced with
/// `clone(word)` (kept where the clone is the same word, as an inline
/// `Arc`'s is once its count has gone up).
///
/// `nodes` is the source's node count, which sizes the arena; should the
/// copy need more, the rest come from [`alloc_block`]. Returns the copy's
/// root, its node count, and the arena its blocks come from (which the
/// copy's tree must own: see [`Arena`]).
///
/// Unwind-safe: if a `clone` panics, the values cloned so far are dropped
/// exactly once, the words still shared with the source are not, every
/// block is freed, and the source is untouched.
///
/// # Safety
/// `p` is a valid subtree that no one writes during the call (the writer
/// lock is held); `clone` clones a live word of it.
pub(crate) unsafe fn dup_subtree<T: SlotOps>(
    p: NodePtr,
    nodes: usize,
    clone: Option<impl FnMut(*mut T) -> *mut T>,
) -> (NodePtr, usize, Option<Arena>) {
    if p.is_null() {
        return (ptr::null_mut(), 0, None);
    }
    let mut arena = Arena::new(nodes);
    let mut copied = 0;
    let mut next_block = || {
        copied += 1;
        arena
            .as_mut()
            .and_then(Arena::next)
            .unwrap_or_else(alloc_block)
    };
    // SAFETY: p is valid and unchanging for the call (caller).
    let root = unsafe { copy_nodes::<T>(p, &mut next_block) };
    if let Some(mut clone) = clone {
        let release = |b: NodePtr| {
            if !arena.as_ref().is_some_and(|a| a.contains(b)) {
                // SAFETY: a block of the copy, unreachable by anyone else.
                unsafe { free_block(b) }
            }
        };
        let mut guard = Cloning::<T, _> {
            root,
            leaves: 0,
            slots: 0,
            release: &release,
            _values: PhantomData,
        };
        // SAFETY: the copy is ours; its words are the source's, alive.
        unsafe { clone_values(root, &mut guard, &mut clone) };
        std::mem::forget(guard);
    }
    (root, copied, arena)
}

/// Copies the subtree at `p` node by node, whole, into blocks from
/// `next_block`, and points each copied internal node at its copied
/// children. The copied leaves hold the source's value words.
///
/// # Safety
/// `p` is a valid subtree that no one writes during the call.
unsafe fn copy_nodes<T>(p: NodePtr, next_block: &mut impl FnMut() -> NodePtr) -> NodePtr {
    let q = next_block();
    // SAFETY: p is valid (caller); q is a fresh block no one else sees.
    unsafe {
        copy_node::<T>(p, q);
        if (*p).kind != KIND_LEAF {
            let src = &*p.cast::<Internal>();
            let dst = &*q.cast::<Internal>();
            for i in 0..src.hdr.count as usize {
                dst.set_child(i, copy_nodes::<T>(src.child(i), next_block));
            }
        }
    }
    q
}

/// How far [`clone_values`] got: leaves `..leaves` (in depth-first order)
/// hold clones, and so do slots `..slots` of the next leaf; every other
/// word is still the source's. Dropped only if a clone panics: it drops
/// the clones and frees the copy's nodes.
struct Cloning<'r, T: SlotOps, R: Fn(NodePtr)> {
    root: NodePtr,
    leaves: usize,
    slots: usize,
    release: &'r R,
    _values: PhantomData<T>,
}

impl<T: SlotOps, R: Fn(NodePtr)> Drop for Cloning<'_, T, R> {
    fn drop(&mut self) {
        /// Drops the clones in leaves `..leaves` and slots `..slots` of the
        /// next; `seen` counts the leaves passed.
        ///
        /// # Safety
        /// As for the guard's drop below.
        unsafe fn drop_clones<T: SlotOps>(
            p: NodePtr,
            seen: &mut usize,
            leaves: usize,
            slots: usize,
        ) {
            // SAFETY: p is a node of the copy (caller).
            unsafe {
                if (*p).kind == KIND_LEAF {
                    let upto = match (*seen).cmp(&leaves) {
                        std::cmp::Ordering::Less => LEAF_SLOTS,
                        std::cmp::Ordering::Equal => slots,
                        std::cmp::Ordering::Greater => 0,
                    };
                    let leaf = &*p.cast::<Leaf<T>>();
                    for i in 0..upto.min(leaf.hdr.count as usize) {
                        let v = leaf.slot(i);
                        if !v.is_null() {
                            T::drop_word(v);
                        }
                    }
                    *seen += 1;
                } else {
                    let node = &*p.cast::<Internal>();
                    for i in 0..node.hdr.count as usize {
                        drop_clones::<T>(node.child(i), seen, leaves, slots);
                    }
                }
            }
        }
        // SAFETY: the copy is unreachable by anyone else; the words counted
        // as cloned are owned by it, the others are the source's and are
        // left alone; its nodes are freed once, without their values.
        unsafe {
            drop_clones::<T>(self.root, &mut 0, self.leaves, self.slots);
            free_nodes::<T>(self.root, false, self.release);
        }
    }
}

/// Replaces every value word of the copy at `p` with its clone, in
/// depth-first leaf order, keeping `guard` up to date.
///
/// # Safety
/// `p` is a node of a copy made by [`copy_nodes`] that no one else sees,
/// whose words not yet cloned are the live source's.
unsafe fn clone_values<T: SlotOps, R: Fn(NodePtr)>(
    p: NodePtr,
    guard: &mut Cloning<'_, T, R>,
    clone: &mut impl FnMut(*mut T) -> *mut T,
) {
    // SAFETY: p is a node of the copy (caller).
    unsafe {
        if (*p).kind == KIND_LEAF {
            let leaf = &*p.cast::<Leaf<T>>();
            for i in 0..(leaf.hdr.count as usize).min(LEAF_SLOTS) {
                guard.slots = i;
                let v = leaf.slot(i);
                if !v.is_null() {
                    let c = clone(v);
                    if c != v {
                        leaf.set_slot(i, c);
                    }
                }
            }
            guard.leaves += 1;
            guard.slots = 0;
        } else {
            let node = &*p.cast::<Internal>();
            for i in 0..node.hdr.count as usize {
                clone_values::<T, R>(node.child(i), guard, clone);
            }
        }
    }
}
