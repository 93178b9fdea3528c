//! Internal-node rebuilds: children, separating pivots, gaps and dirty bits
//! of a node being split, merged or given a new child ([`Kids`]).

use super::*;

/// Children, separating pivots, gaps and dirty bits of an internal node
/// being rebuilt: `pivots[i]` separates `children[i]` and `children[i + 1]`.
/// Gaps and dirty bits travel with their child, so the gap refresh at
/// commit revisits only the children that really changed (marking a whole
/// rebuilt node dirty made every split re-read all ten siblings).
pub(super) struct Kids {
    pub(super) children: [NodePtr; 2 * INT_SLOTS + 1],
    pub(super) pivots: [u64; 2 * INT_SLOTS],
    pub(super) gaps: [u64; 2 * INT_SLOTS + 1],
    pub(super) dirty: u32,
    pub(super) n: usize,
}

fn low_bits(n: usize) -> u32 {
    if n >= 32 {
        u32::MAX
    } else {
        (1u32 << n) - 1
    }
}

impl Kids {
    pub(super) fn with(children: &[NodePtr], pivots: &[u64]) -> Self {
        let n = children.len();
        let mut k = Kids {
            children: [ptr::null_mut(); 2 * INT_SLOTS + 1],
            pivots: [u64::MAX; 2 * INT_SLOTS],
            gaps: [0; 2 * INT_SLOTS + 1],
            dirty: low_bits(n),
            n,
        };
        k.children[..n].copy_from_slice(children);
        k.pivots[..n - 1].copy_from_slice(pivots);
        k
    }

    /// # Safety
    /// `p` is a valid internal node.
    pub(super) unsafe fn of(p: NodePtr) -> Self {
        // SAFETY: caller guarantees validity.
        let int = unsafe { &*p.cast::<Internal>() };
        let n = int.hdr.count as usize;
        let children: [NodePtr; INT_SLOTS] = std::array::from_fn(|i| int.child(i));
        let mut k = Kids::with(&children[..n], &int.pivots[..n - 1]);
        for i in 0..n {
            k.gaps[i] = int.gap(i);
        }
        k.dirty = int.hdr.dirty as u32 & low_bits(n);
        k
    }
    pub(super) fn append(&mut self, sep: u64, other: &Kids) {
        self.pivots[self.n - 1] = sep;
        self.children[self.n..self.n + other.n].copy_from_slice(&other.children[..other.n]);
        self.pivots[self.n..self.n + other.n - 1].copy_from_slice(&other.pivots[..other.n - 1]);
        self.gaps[self.n..self.n + other.n].copy_from_slice(&other.gaps[..other.n]);
        self.dirty |= other.dirty << self.n;
        self.n += other.n;
    }
    /// Puts `child` at position `at + 1`, separated from `at` by `sep`; both
    /// become dirty (the split node and its new sibling).
    pub(super) fn insert(&mut self, at: usize, sep: u64, child: NodePtr) {
        self.children.copy_within(at + 1..self.n, at + 2);
        self.children[at + 1] = child;
        self.gaps.copy_within(at + 1..self.n, at + 2);
        if self.n > at + 1 {
            self.pivots.copy_within(at..self.n - 1, at + 1);
        }
        self.pivots[at] = sep;
        let keep = self.dirty & low_bits(at + 1);
        let moved = (self.dirty >> (at + 1)) << (at + 2);
        self.dirty = keep | moved | (1 << at) | (1 << (at + 1));
        self.n += 1;
    }
    /// Removes `children[at]` and the pivot on its left; the left neighbour
    /// (which absorbed it) becomes dirty.
    pub(super) fn remove(&mut self, at: usize) {
        debug_assert!(at > 0);
        self.children.copy_within(at + 1..self.n, at);
        self.gaps.copy_within(at + 1..self.n, at);
        self.pivots.copy_within(at..self.n - 1, at - 1);
        let keep = self.dirty & low_bits(at);
        let moved = (self.dirty >> (at + 1)) << at;
        self.dirty = keep | moved | (1 << (at - 1));
        self.n -= 1;
        self.pivots[self.n - 1] = u64::MAX;
    }
    /// # Safety
    /// `p` is a fresh internal node.
    pub(super) unsafe fn write(&self, p: NodePtr, from: usize, to: usize) {
        // SAFETY: caller guarantees p is writable.
        let int = unsafe { &mut *p.cast::<Internal>() };
        let k = to - from;
        debug_assert!((1..=INT_SLOTS).contains(&k));
        for i in 0..INT_SLOTS {
            int.set_child(
                i,
                if i < k {
                    self.children[from + i]
                } else {
                    ptr::null_mut()
                },
            );
            int.set_gap(i, if i < k { self.gaps[from + i] } else { 0 });
        }
        for i in 0..INT_SLOTS - 1 {
            int.pivots[i] = if i + 1 < k {
                self.pivots[from + i]
            } else {
                u64::MAX
            };
        }
        int.hdr.count = k as u8;
        int.hdr.dirty = ((self.dirty >> from) & low_bits(k)) as u16;
    }
}
