//! Leaf rewrites: a leaf's new slots worked out before anything changes
//! ([`LeafPlan`]), and written into a fresh block ([`write_leaf`]).

use super::*;

/// A small fixed-capacity list of `(end, value)` slots being rebuilt.
pub(super) struct Out<T> {
    pub(super) ends: [u64; OUT_CAP],
    pub(super) vals: [*mut T; OUT_CAP],
    pub(super) n: usize,
}

impl<T> Out<T> {
    pub(super) fn new() -> Self {
        Out {
            ends: [0; OUT_CAP],
            vals: [ptr::null_mut(); OUT_CAP],
            n: 0,
        }
    }
    /// Appends a slot, merging it into the previous one when both are gaps.
    pub(super) fn push(&mut self, end: u64, v: *mut T) {
        if v.is_null() && self.n > 0 && self.vals[self.n - 1].is_null() {
            self.ends[self.n - 1] = end;
            return;
        }
        self.ends[self.n] = end;
        self.vals[self.n] = v;
        self.n += 1;
    }
    /// A split point near `want` whose left part ends on a value, so that
    /// the left node ends on an occupied index (invariant 2). No two gaps are
    /// adjacent, so stepping back once always lands on a value.
    pub(super) fn split_at(&self, want: usize) -> usize {
        let m = want.clamp(1, self.n - 1);
        if self.vals[m - 1].is_null() && m > 1 {
            m - 1
        } else {
            m
        }
    }
}

/// A leaf rewrite worked out before anything is changed: the new slots,
/// the values it drops, and where a value must be cloned.
pub(super) struct LeafPlan<T> {
    pub(super) out: Out<T>,
    pub(super) retire: [*mut T; LEAF_SLOTS],
    pub(super) n_retire: usize,
    /// Slot of `out` holding the right part of an entry cut in two; it
    /// still points at the original value until the clone is made.
    pub(super) clone_at: Option<usize>,
    /// Whether the new entry went into the leaf's last slot (append).
    pub(super) appended_last: bool,
}

impl<T> LeafPlan<T> {
    /// Plans the rewrite of `[a, b]` (inside the leaf `l`) to `v`.
    pub(super) fn new(leaf: &Leaf<T>, l: Level, a: u64, b: u64, v: *mut T) -> Self {
        let n = leaf.hdr.count as usize;
        let mut plan = LeafPlan {
            out: Out::new(),
            retire: [ptr::null_mut(); LEAF_SLOTS],
            n_retire: 0,
            clone_at: None,
            appended_last: false,
        };
        let out = &mut plan.out;
        let mut placed = false;
        for i in 0..n {
            let (s, e) = slot_range(&leaf.pivots, n, i, l.lo, l.hi);
            let p = leaf.slot(i);
            if e < a {
                out.push(e, p);
                continue;
            }
            if s > b {
                if !placed {
                    out.push(b, v);
                    placed = true;
                }
                out.push(e, p);
                continue;
            }
            let mut kept = false;
            if s < a {
                out.push(a - 1, p);
                kept = true;
            }
            if !placed {
                out.push(b, v);
                placed = true;
                plan.appended_last = i + 1 == n;
            }
            if e > b {
                out.push(e, p);
                if kept && !p.is_null() {
                    plan.clone_at = Some(out.n - 1);
                }
                kept = true;
            }
            if !kept && !p.is_null() {
                plan.retire[plan.n_retire] = p;
                plan.n_retire += 1;
            }
        }
        plan
    }

    /// Whether the rewritten leaf (if it fits) breaks invariant 2 or 3.
    pub(super) fn needs_normalize(&self, is_root: bool, rightmost: bool) -> bool {
        let m = self.out.n;
        let last_free = self.out.vals[m - 1].is_null();
        if is_root || rightmost {
            m == 1 && last_free
        } else {
            last_free || m < MIN_LEAF
        }
    }
}

/// Writes slots `[from, to)` of `out` into a leaf block.
///
/// # Safety
/// `p` is a fresh (writable) leaf.
pub(super) unsafe fn write_leaf<T>(p: NodePtr, out: &Out<T>, from: usize, to: usize) {
    // SAFETY: caller guarantees p is a writable leaf.
    let leaf = unsafe { &mut *p.cast::<Leaf<T>>() };
    let k = to - from;
    debug_assert!((1..=LEAF_SLOTS).contains(&k));
    for i in 0..LEAF_SLOTS {
        leaf.set_slot(
            i,
            if i < k {
                out.vals[from + i]
            } else {
                ptr::null_mut()
            },
        );
    }
    for i in 0..LEAF_SLOTS - 1 {
        leaf.pivots[i] = if i + 1 < k {
            out.ends[from + i]
        } else {
            u64::MAX
        };
    }
    leaf.hdr.count = k as u8;
    leaf.hdr.set_used(used_mask(&out.vals[from..to]));
}
