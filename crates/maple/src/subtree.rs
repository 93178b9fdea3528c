//! Whole subtrees: freeing one (a tree dropped or cleared) and copying one
//! node by node (`dup`, the fork path). Kept apart from `node.rs`, which
//! describes nodes and reads them, because these allocate and free blocks
//! (`mem.rs`), which itself builds on the node layout.

use std::ptr;

use crate::mem::{alloc_block, free_block};
use crate::node::{init_internal, init_leaf, Internal, Leaf, NodePtr, KIND_LEAF};
use crate::value::{Cloner, SlotOps};

/// Drops every value and frees every node of a subtree.
///
/// # Safety
/// The subtree is unreachable by anyone else and every value word in it
/// is owned by it.
pub(crate) unsafe fn free_subtree<T: SlotOps>(p: NodePtr) -> usize {
    if p.is_null() {
        return 0;
    }
    // SAFETY: p is a valid node owned by the caller.
    let mut freed = 1;
    unsafe {
        if (*p).kind == KIND_LEAF {
            let leaf = &*p.cast::<Leaf<T>>();
            for i in 0..leaf.hdr.count as usize {
                let v = leaf.slot(i);
                if !v.is_null() {
                    T::drop_word(v);
                }
            }
        } else {
            let node = &*p.cast::<Internal>();
            for i in 0..node.hdr.count as usize {
                freed += free_subtree::<T>(node.child(i));
            }
        }
        free_block(p);
    }
    freed
}

/// Copies a subtree node by node, cloning each value word with `clone`
/// (the fork path): a new box for a boxed value, a reference count for an
/// inline `Arc`, a copy for an inline integer. Returns the new root and the
/// number of nodes allocated.
///
/// Unwind-safe: if a `clone` panics, everything built so far (cloned
/// values and copied nodes) is dropped exactly once as the panic unwinds,
/// and the source subtree is untouched.
///
/// # Safety
/// `p` is a valid subtree that stays alive for the call; `clone` is the
/// tree's cloner for its kind `T`.
pub(crate) unsafe fn dup_subtree<T: SlotOps>(p: NodePtr, clone: Cloner<T>) -> (NodePtr, usize) {
    if p.is_null() {
        return (ptr::null_mut(), 0);
    }
    // SAFETY: p is valid for the call (caller).
    if unsafe { (*p).kind } == KIND_LEAF {
        // SAFETY: as above.
        unsafe { dup_leaf::<T>(p, clone) }
    } else {
        // SAFETY: as above.
        unsafe { dup_internal::<T>(p, clone) }
    }
}

/// A copy under construction: on unwind, drops the first `done` slots
/// (values or subtrees already copied) and frees the block. Forgotten once
/// the copy is complete.
struct PartialCopy<T: SlotOps> {
    node: NodePtr,
    done: usize,
    _values: std::marker::PhantomData<T>,
}

impl<T: SlotOps> PartialCopy<T> {
    /// A copy into `node`, a fresh block whose slots own nothing yet.
    fn new(node: NodePtr) -> Self {
        PartialCopy {
            node,
            done: 0,
            _values: std::marker::PhantomData,
        }
    }
}

impl<T: SlotOps> Drop for PartialCopy<T> {
    fn drop(&mut self) {
        // SAFETY: the block is ours and unreachable; its first `done` slots
        // hold values / subtrees this copy owns, the rest are not owned
        // (they were nulled before the copy started).
        unsafe {
            if (*self.node).kind == KIND_LEAF {
                let leaf = &*self.node.cast::<Leaf<T>>();
                for i in 0..self.done {
                    let v = leaf.slot(i);
                    if !v.is_null() {
                        T::drop_word(v);
                    }
                }
            } else {
                let node = &*self.node.cast::<Internal>();
                for i in 0..self.done {
                    free_subtree::<T>(node.child(i));
                }
            }
            free_block(self.node);
        }
    }
}

/// # Safety
/// `p` is a valid leaf that stays alive for the call.
unsafe fn dup_leaf<T: SlotOps>(p: NodePtr, clone: Cloner<T>) -> (NodePtr, usize) {
    let q = alloc_block();
    // SAFETY: p is a valid leaf; q is a fresh block, initialised as an
    // empty leaf before anything else touches it.
    let src = unsafe {
        init_leaf::<T>(q, 0);
        let src = &*p.cast::<Leaf<T>>();
        let leaf = &mut *q.cast::<Leaf<T>>();
        leaf.hdr.count = src.hdr.count;
        leaf.pivots = src.pivots;
        src
    };
    let n = src.hdr.count as usize;
    let mut guard = PartialCopy::<T>::new(q);
    for i in 0..n {
        let v = src.slot(i);
        if !v.is_null() {
            // SAFETY: v is a live value word of the source tree.
            let copy = unsafe { clone(v) };
            // SAFETY: q is our block.
            unsafe { (*q.cast::<Leaf<T>>()).set_slot(i, copy) };
        }
        guard.done = i + 1;
    }
    std::mem::forget(guard);
    (q, 1)
}

/// # Safety
/// `p` is a valid internal node that stays alive for the call.
unsafe fn dup_internal<T: SlotOps>(p: NodePtr, clone: Cloner<T>) -> (NodePtr, usize) {
    let q = alloc_block();
    // SAFETY: as in dup_leaf: q starts as an empty internal node (no
    // children, so the guard frees nothing below it).
    let src = unsafe {
        init_internal(q, 0);
        let src = &*p.cast::<Internal>();
        let node = &mut *q.cast::<Internal>();
        node.hdr.count = src.hdr.count;
        node.pivots = src.pivots;
        for i in 0..src.hdr.count as usize {
            node.set_gap(i, src.gap(i));
        }
        src
    };
    let n = src.hdr.count as usize;
    let mut guard = PartialCopy::<T>::new(q);
    let mut nodes = 1;
    for i in 0..n {
        // SAFETY: children of a valid node are valid.
        let (d, k) = unsafe { dup_subtree::<T>(src.child(i), clone) };
        // SAFETY: q is our block.
        unsafe { (*q.cast::<Internal>()).set_child(i, d) };
        nodes += k;
        guard.done = i + 1;
    }
    std::mem::forget(guard);
    (q, nodes)
}
