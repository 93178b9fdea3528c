//! The pivot search of a point lookup, with a vector form for CPUs built
//! for AVX2.
//!
//! A node's pivot search answers "how many pivots lie below `index`" (see
//! [`crate::node::slot_in`]). The portable form is a branchless binary
//! search: four dependent steps of load, compare and conditional move for a
//! leaf's 15 pivots or an internal node's 9, so a six-level descent (10^5
//! entries) is a chain of 24 of them. With AVX2 every pivot is compared at
//! once: a leaf's pivots load as four 256-bit vectors and an internal
//! node's as three, each compares against the key in one instruction, and
//! the count of lanes below the key is the answer. The loads do not depend
//! on each other, so a level costs one load latency and a few cycles
//! instead of four of each.
//!
//! ```text
//!   leaf pivots  p0 p1 p2 p3 | p4 p5 p6 p7 | p8 p9 p10 p11 | p11 p12 p13 p14
//!   below key    1  1  1  1  | 1  1  0  0  | 0  0  0   0   | 0   0   0   0
//!   mask bits    0..4          4..8          8..12           11..15
//! ```
//!
//! The last vector overlaps the one before it instead of reading past the
//! array: the shared lane compares the same pivot, so its bit is OR-ed in
//! twice to the same effect, and the count is the popcount of the mask.
//!
//! The vector form is chosen at compile time, where the target has AVX2
//! and POPCNT (`-C target-cpu=native` on any x86-64 CPU since 2013, or
//! `-C target-cpu=x86-64-v3`). Choosing at run time was measured and
//! rejected: code compiled for AVX2 cannot be inlined into code compiled
//! for the baseline CPU, so the lookup becomes a call that computes the
//! entry's bounds even for callers that never read them, and a load went
//! from 189 to 240-313 instructions (callgrind), more than the search
//! saves. See BENCHMARKS.md, "A vector pivot search".

/// Whether the vector form is compiled in: the condition on `vector` below.
pub(crate) const VECTOR: bool = cfg!(all(
    target_arch = "x86_64",
    target_feature = "avx2",
    target_feature = "popcnt",
    not(miri)
));

/// Where the vector form is compiled in (see the module doc).
#[cfg(all(
    target_arch = "x86_64",
    target_feature = "avx2",
    target_feature = "popcnt",
    not(miri)
))]
mod vector {
    use std::arch::x86_64::{
        __m256i, _mm256_castsi256_pd, _mm256_cmpgt_epi64, _mm256_loadu_si256, _mm256_movemask_pd,
        _mm256_set1_epi64x, _mm256_xor_si256,
    };

    /// The number of `pivots` below `index` for the two node shapes (15
    /// pivots in a leaf, 9 in an internal node); `None` for any other `N`.
    #[inline(always)]
    pub(super) fn count_below<const N: usize>(pivots: &[u64; N], index: u64) -> Option<usize> {
        if N != 15 && N != 9 {
            return None;
        }
        let p = pivots.as_ptr();
        // SAFETY: the target has AVX2 (the module's cfg), which the
        // intrinsics need (before Rust 1.87 they are unsafe to call even
        // then), and each load reads lanes inside `pivots` (see `lanes`).
        unsafe {
            // Unsigned order through the signed compare AVX2 has: flipping
            // the top bit of both sides maps the one onto the other.
            let flip = _mm256_set1_epi64x(i64::MIN);
            let key = _mm256_xor_si256(_mm256_set1_epi64x(index as i64), flip);
            // Bits `at..at + 4` of the mask: pivots `at..at + 4` lie below
            // `index`. Called only with `at + 4 <= N` (the node's shape
            // picks the offsets), so the four lanes lie inside `pivots`;
            // the load needs no alignment.
            let lanes = |at: usize| -> u32 {
                debug_assert!(at + 4 <= N);
                let v = _mm256_loadu_si256(p.add(at).cast::<__m256i>());
                let lt = _mm256_cmpgt_epi64(key, _mm256_xor_si256(v, flip));
                (_mm256_movemask_pd(_mm256_castsi256_pd(lt)) as u32) << at
            };
            let mask = if N == 15 {
                lanes(0) | lanes(4) | lanes(8) | lanes(11)
            } else {
                lanes(0) | lanes(4) | lanes(5)
            };
            Some(mask.count_ones() as usize)
        }
    }
}

/// The slot of a node's `pivots` covering `index`: the number of pivots
/// below it, as [`crate::node::slot_in`] computes, by the vector count
/// where it is compiled in.
#[inline(always)]
pub(crate) fn lookup_slot<const N: usize>(pivots: &[u64; N], index: u64) -> usize {
    #[cfg(all(
        target_arch = "x86_64",
        target_feature = "avx2",
        target_feature = "popcnt",
        not(miri)
    ))]
    if let Some(i) = vector::count_below(pivots, index) {
        return i;
    }
    crate::node::slot_in(pivots, index)
}

#[cfg(test)]
mod tests {
    use super::lookup_slot;
    use crate::node::slot_in;

    /// Every number of used pivots (the rest `u64::MAX`), pivots near both
    /// ends of the key space and across the top bit (where a signed
    /// compare would go wrong), and keys at, beside and between them: the
    /// lookup's search (the vector count where it is compiled in) equals
    /// the binary search and the definition.
    fn agree<const N: usize>() {
        let bases = [0u64, 7, 1 << 40, (1 << 63) - 20, 1 << 63, u64::MAX - 60];
        for used in 0..=N {
            for &base in &bases {
                let mut pivots = [u64::MAX; N];
                for (i, p) in pivots.iter_mut().enumerate().take(used) {
                    *p = base.saturating_add(3 * i as u64);
                }
                let mut keys = vec![0, 1, u64::MAX, u64::MAX - 1, 1 << 63, (1 << 63) - 1];
                for &p in &pivots[..used] {
                    keys.extend([p.wrapping_sub(1), p, p.wrapping_add(1), p.wrapping_add(2)]);
                }
                for &k in &keys {
                    let want = pivots.iter().filter(|&&p| p < k).count();
                    assert_eq!(
                        lookup_slot(&pivots, k),
                        want,
                        "N {N} used {used} base {base} key {k}"
                    );
                    assert_eq!(slot_in(&pivots, k), want);
                }
            }
        }
    }

    #[test]
    fn lookup_search_counts_pivots_below_in_leaves() {
        agree::<15>();
    }

    #[test]
    fn lookup_search_counts_pivots_below_in_internal_nodes() {
        agree::<9>();
    }

    #[test]
    fn lookup_search_on_other_shapes_is_the_binary_search() {
        let pivots = [2u64, 4, 6, u64::MAX];
        for k in 0..10 {
            assert_eq!(lookup_slot(&pivots, k), slot_in(&pivots, k));
        }
    }
}
