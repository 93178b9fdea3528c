//! A full structural check of the tree, for tests and fuzzing.

use crate::node::{
    leaf_gap, slot_range, used_mask, Internal, Leaf, NodePtr, INT_SLOTS, KIND_LEAF, LEAF_SLOTS,
    MIN_INTERNAL, MIN_LEAF,
};
use crate::tree::MapleTree;

struct Walk {
    leaf_depth: Option<usize>,
    entries: usize,
    nodes: usize,
}

/// Checks the subtree at `p` covering `[lo, hi]`; returns its longest gap.
///
/// # Safety
/// `p` is a valid live subtree.
unsafe fn check<T>(
    p: NodePtr,
    lo: u64,
    hi: u64,
    depth: usize,
    is_root: bool,
    w: &mut Walk,
) -> Result<u64, String> {
    // SAFETY: forwarded from the caller.
    let hdr = unsafe { *p };
    w.nodes += 1;
    if hdr.flags != 0
        || hdr.dirty != 0
        || (hdr.kind != KIND_LEAF && (hdr.used != 0 || hdr.entries != 0))
    {
        return Err(format!(
            "node at depth {depth} has flags {} dirty {:#x} used {:#x} entries {}",
            hdr.flags, hdr.dirty, hdr.used, hdr.entries
        ));
    }
    let n = hdr.count as usize;
    let rightmost = hi == u64::MAX;
    if hdr.kind == KIND_LEAF {
        // SAFETY: a leaf.
        let leaf = unsafe { &*p.cast::<Leaf<T>>() };
        if n == 0 || n > LEAF_SLOTS {
            return Err(format!("leaf count {n}"));
        }
        match w.leaf_depth {
            None => w.leaf_depth = Some(depth),
            Some(d) if d != depth => return Err(format!("leaves at depths {d} and {depth}")),
            _ => {}
        }
        check_pivots(&leaf.pivots, n, lo, hi)?;
        for i in 0..n {
            if leaf.slot(i).is_null() {
                if i > 0 && leaf.slot(i - 1).is_null() {
                    return Err(format!(
                        "adjacent gaps at slots {} and {i} of leaf [{lo:#x}, {hi:#x}]",
                        i - 1
                    ));
                }
            } else {
                w.entries += 1;
            }
        }
        for i in n..LEAF_SLOTS {
            if !leaf.slot(i).is_null() {
                return Err(format!("unused slot {i} not null"));
            }
        }
        let used = used_mask(&std::array::from_fn::<_, LEAF_SLOTS, _>(|i| leaf.slot(i)));
        if hdr.used != used {
            return Err(format!(
                "leaf [{lo:#x}, {hi:#x}] used mask {:#06x}, slots in use {used:#06x}",
                hdr.used
            ));
        }
        if u32::from(hdr.entries) != used.count_ones() {
            return Err(format!(
                "leaf [{lo:#x}, {hi:#x}] counts {} entries, holds {}",
                hdr.entries,
                used.count_ones()
            ));
        }
        if !rightmost && leaf.slot(n - 1).is_null() {
            return Err(format!(
                "leaf [{lo:#x}, {hi:#x}] off the rightmost path ends in a gap"
            ));
        }
        if !is_root && !rightmost && n < MIN_LEAF {
            return Err(format!("leaf [{lo:#x}, {hi:#x}] underfull: {n}"));
        }
        if is_root && n == 1 && leaf.slot(0).is_null() {
            return Err("root leaf is a single gap".into());
        }
        // SAFETY: a valid leaf.
        return Ok(unsafe { leaf_gap(leaf, lo, hi) });
    }
    // SAFETY: an internal node.
    let int = unsafe { &*p.cast::<Internal>() };
    if n == 0 || n > INT_SLOTS {
        return Err(format!("internal count {n}"));
    }
    if is_root && n < 2 {
        return Err("internal root with one child".into());
    }
    if !is_root && !rightmost && n < MIN_INTERNAL {
        return Err(format!("internal [{lo:#x}, {hi:#x}] underfull: {n}"));
    }
    check_pivots(&int.pivots, n, lo, hi)?;
    let mut best = 0;
    for i in 0..n {
        let (s, e) = slot_range(&int.pivots, n, i, lo, hi);
        // SAFETY: children of a valid node.
        let g = unsafe { check::<T>(int.child(i), s, e, depth + 1, false, w)? };
        if g != int.gap(i) {
            return Err(format!(
                "gap of child {i} of [{lo:#x}, {hi:#x}] is {} but stored {}",
                g,
                int.gap(i)
            ));
        }
        best = best.max(g);
    }
    Ok(best)
}

fn check_pivots(pivots: &[u64], n: usize, lo: u64, hi: u64) -> Result<(), String> {
    let mut prev: Option<u64> = None;
    for (i, &p) in pivots.iter().enumerate() {
        if i + 1 < n {
            if p < lo || p >= hi || prev.is_some_and(|q| p <= q) {
                return Err(format!(
                    "pivot {i} = {p:#x} out of order in [{lo:#x}, {hi:#x}]"
                ));
            }
            prev = Some(p);
        } else if p != u64::MAX {
            return Err(format!("unused pivot {i} = {p:#x}"));
        }
    }
    Ok(())
}

impl<T, S: crate::value::Repr<T>> MapleTree<T, S> {
    /// Checks every structural invariant of the current version (node
    /// layout, pivot order, gaps, occupancy, depth, counters). For tests and
    /// fuzzing; O(n). Call it with no write in flight.
    #[doc(hidden)]
    pub fn validate(&self) -> Result<(), String> {
        let snap = self.reader();
        let root = snap.root_ptr();
        let mut w = Walk {
            leaf_depth: None,
            entries: 0,
            nodes: 0,
        };
        if !root.is_null() {
            // SAFETY: the reader's guard keeps the nodes alive; no write runs
            // meanwhile (the caller's contract).
            unsafe { check::<crate::value::Slot<T, S>>(root, 0, u64::MAX, 0, true, &mut w)? };
        }
        if w.entries != self.len() {
            return Err(format!(
                "len() = {} but {} entries stored",
                self.len(),
                w.entries
            ));
        }
        let nodes = self.memory_usage().nodes;
        if w.nodes != nodes {
            return Err(format!(
                "node count {} but {} nodes reachable",
                nodes, w.nodes
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Reference: first -> (last, value), non-overlapping.
    #[derive(Default)]
    struct Model(BTreeMap<u64, (u64, u64)>);

    impl Model {
        fn clear_range(&mut self, a: u64, b: u64) {
            let hits: Vec<_> = self
                .0
                .range(..=b)
                .filter(|(_, (l, _))| *l >= a)
                .map(|(&f, &(l, v))| (f, l, v))
                .collect();
            for (f, l, v) in hits {
                self.0.remove(&f);
                if f < a {
                    self.0.insert(f, (a - 1, v));
                }
                if l > b {
                    self.0.insert(b + 1, (l, v));
                }
            }
        }
        fn store(&mut self, a: u64, b: u64, v: u64) {
            self.clear_range(a, b);
            self.0.insert(a, (b, v));
        }
        fn load(&self, i: u64) -> Option<(u64, u64, u64)> {
            self.0
                .range(..=i)
                .next_back()
                .filter(|(_, (l, _))| *l >= i)
                .map(|(&f, &(l, v))| (f, l, v))
        }
        fn free(&self, a: u64, b: u64) -> bool {
            !self.0.range(..=b).any(|(_, (l, _))| *l >= a)
        }
        fn gap_low(&self, min: u64, max: u64, size: u64) -> Option<u64> {
            let mut s = min;
            loop {
                let e = s.checked_add(size - 1)?;
                if e > max {
                    return None;
                }
                match self.0.range(..=e).next_back().filter(|(_, (l, _))| *l >= s) {
                    None => return Some(s),
                    Some((_, (l, _))) => s = l.checked_add(1)?,
                }
            }
        }
        fn gap_high(&self, min: u64, max: u64, size: u64) -> Option<u64> {
            let mut e = max;
            loop {
                let s = e.checked_sub(size - 1)?;
                if s < min {
                    return None;
                }
                match self.0.range(..=e).next_back().filter(|(_, (l, _))| *l >= s) {
                    None => return Some(s),
                    Some((&f, _)) => e = f.checked_sub(1)?,
                }
            }
        }
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn run(seed: u64, space: u64, ops: usize, exclusive: bool) {
        let mut rng = Rng(seed);
        let mut tree = MapleTree::<u64>::new();
        let mut model = Model::default();
        for step in 0..ops {
            let a = rng.below(space);
            let len = if rng.below(4) == 0 {
                rng.below(space / 4 + 1)
            } else {
                rng.below(4)
            };
            let b = (a + len).min(space - 1);
            let v = rng.next();
            match rng.below(10) {
                0..=3 => {
                    if exclusive {
                        tree.cursor_mut().store_range(a, b, v).unwrap();
                    } else if step % 2 == 0 {
                        // Through a positioned shared cursor: the store reuses
                        // the cursor's path (leaf swap without a new descent).
                        let mut c = tree.cursor();
                        c.walk(a);
                        c.store_range(a, b, v).unwrap();
                    } else {
                        tree.store_range(a, b, v).unwrap();
                    }
                    model.store(a, b, v);
                }
                4..=5 => {
                    let ok = model.free(a, b);
                    let r = tree.insert_range(a, b, v);
                    assert_eq!(r.is_ok(), ok, "step {step}: insert [{a}, {b}]");
                    if ok {
                        model.store(a, b, v);
                    }
                }
                6..=7 => {
                    let m = model.load(a);
                    let got = if exclusive {
                        tree.take(a).map(|(r, v)| (*r.start(), *r.end(), v))
                    } else {
                        tree.erase(a).map(|e| (e.first(), e.last(), *e.value()))
                    };
                    assert_eq!(got, m, "step {step}: erase {a}");
                    if let Some((f, _, _)) = m {
                        model.0.remove(&f);
                    }
                }
                _ => {
                    let size = rng.below(space / 8 + 1) + 1;
                    let (min, max) = (a.min(b), space - 1);
                    let lo = tree.empty_area(min, max, size).ok();
                    assert_eq!(
                        lo,
                        model.gap_low(min, max, size),
                        "step {step}: gap low {min} {max} {size}"
                    );
                    let hi = tree.empty_area_rev(min, max, size).ok();
                    assert_eq!(
                        hi,
                        model.gap_high(min, max, size),
                        "step {step}: gap high {min} {max} {size}"
                    );
                }
            }
            if let Err(e) = tree.validate() {
                panic!("step {step}: invalid tree: {e}");
            }
            let probe = rng.below(space);
            let got = tree.load(probe).map(|e| (e.first(), e.last(), *e.value()));
            assert_eq!(got, model.load(probe), "step {step}: load {probe}");
            if step % 64 == 0 {
                let snap = tree.reader();
                let all: Vec<_> = snap
                    .iter()
                    .map(|(r, v)| (*r.start(), *r.end(), *v))
                    .collect();
                let want: Vec<_> = model.0.iter().map(|(&f, &(l, v))| (f, l, v)).collect();
                assert_eq!(all, want, "step {step}: iteration");
                let mut back: Vec<_> = snap
                    .iter()
                    .rev()
                    .map(|(r, v)| (*r.start(), *r.end(), *v))
                    .collect();
                back.reverse();
                assert_eq!(back, want, "step {step}: reverse iteration");
            }
        }
    }

    fn seeds(default: u64) -> u64 {
        std::env::var("MAPLE_SEEDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    }

    #[test]
    fn random_small_space() {
        let (seeds, ops) = if cfg!(miri) {
            (3, 150)
        } else {
            (seeds(40), 2000)
        };
        for seed in 1..seeds {
            run(seed * 7919, 64, ops, seed % 2 == 0);
        }
    }

    #[test]
    fn random_large_space() {
        // Under Miri (about 10^4 times slower) fewer, shorter runs: both
        // access paths (seed 1 exclusive, seed 2 shared), each still deep
        // enough for internal nodes. 200 operations: validate() after each
        // makes the cost quadratic (400 took ~2 CPU-minutes).
        let (seeds, ops) = if cfg!(miri) {
            (3, 200)
        } else {
            (seeds(10), 6000)
        };
        for seed in 1..seeds {
            run(seed * 104_729, 5000, ops, seed % 2 == 1);
        }
    }

    #[test]
    fn sequential_packs_leaves() {
        // Under Miri 1,000 entries: still three levels (67 leaves), and
        // enough that the packing ratio is measured, not the root's share.
        let n: u64 = if cfg!(miri) { 1_000 } else { 100_000 };
        let tree = MapleTree::<u64>::new();
        for i in 0..n {
            tree.store_range(i * 10, i * 10 + 9, i).unwrap();
        }
        tree.validate().unwrap();
        let m = tree.memory_usage();
        assert!(m.node_bytes_per_entry() < 20.0, "{m:?}");
        for i in (0..n).step_by(997) {
            assert_eq!(*tree.load(i * 10 + 5).unwrap(), i);
        }
    }
}
