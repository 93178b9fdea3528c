//! Instrumentation: the time this thread's address-space changes spend
//! storing split pieces into the process's own maple tree.
//!
//! Linux 6.12's `__split_vma` and `commit_merge` store the VMA they create
//! or grow into the process's maple tree (`vma_iter_store`, its nodes
//! allocated beforehand) between `vma_prepare()` and `vma_complete()`,
//! with the file's `i_mmap_rwsem` held for write. The model does the
//! reverse-map calls first and its tree writes after them, outside every
//! reverse-map hold ([`crate::Mm`]'s `replace`), so a recorded hold has no
//! such store in it. `aspace predict`'s kernel cost puts one back into each
//! split hold: it needs the time of the model's store of a split piece (a
//! VMA left over from a cut, or grown by a merge: the entries linked at the
//! split and merge call sites), which [`time_split_stores`] measures.
//!
//! Off by default: one thread-local test per stored VMA.

use std::cell::Cell;
use std::time::Instant;

thread_local! {
    /// `Some` while [`time_split_stores`] runs on this thread.
    static TIMED: Cell<Option<SplitStores>> = const { Cell::new(None) };
}

/// Split pieces stored and the time their stores took.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SplitStores {
    /// Stores of split pieces.
    pub count: u64,
    /// Their time, ns (each store timed alone: two clock reads around it,
    /// as a reverse map times a hold).
    pub ns: f64,
}

impl SplitStores {
    /// The mean time of one store, ns (0 without stores).
    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.ns / self.count as f64
        }
    }
}

/// Runs `work` on this thread with its split pieces' tree stores timed;
/// returns its value and what they took. Nests: an inner call's stores are
/// its own, not the outer one's.
pub fn time_split_stores<R>(work: impl FnOnce() -> R) -> (R, SplitStores) {
    /// Restores the outer state, also when `work` unwinds.
    struct Restore(Option<SplitStores>);
    impl Drop for Restore {
        fn drop(&mut self) {
            TIMED.set(self.0);
        }
    }
    let restore = Restore(TIMED.replace(Some(SplitStores::default())));
    let out = work();
    let got = TIMED.get().unwrap_or_default();
    drop(restore);
    (out, got)
}

/// Runs `store` (the tree store of one VMA); times it when `split` and
/// [`time_split_stores`] is running on this thread.
#[inline]
pub(crate) fn store<R>(split: bool, store: impl FnOnce() -> R) -> R {
    match TIMED.get() {
        Some(mut t) if split => {
            let t0 = Instant::now();
            let out = store();
            t.ns += t0.elapsed().as_nanos() as f64;
            t.count += 1;
            TIMED.set(Some(t));
            out
        }
        _ => store(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CallPattern, Files, MapFlags, Mm, Prot, PAGE_SIZE};
    use rmap::{Design, Topology};

    fn file_mm() -> (Mm, std::sync::Arc<crate::File>) {
        let files = Files::new(Design::Linux, Topology::Os, CallPattern::PerVma);
        let f = files.register(std::path::Path::new("/synthetic/libsplit.so"), 64);
        (Mm::new(files), f)
    }

    #[test]
    fn a_cut_stores_its_remainders_as_split_pieces_and_a_plain_map_none() {
        let (mm, f) = file_mm();
        let ((), plain) = time_split_stores(|| {
            mm.mmap(
                0x10_0000,
                16 * PAGE_SIZE,
                Prot::R,
                MapFlags::default(),
                Some((&f, 0)),
            )
            .map(drop)
            .unwrap()
        });
        assert_eq!(plain.count, 0, "a new mapping in a gap is no split");
        let at = mm.vmas()[0].start;
        // munmap of the middle: two remainders, each stored once.
        let ((), cut) = time_split_stores(|| mm.munmap(at + 4 * PAGE_SIZE, 4 * PAGE_SIZE).unwrap());
        assert_eq!(cut.count, 2);
        assert!(cut.ns > 0.0 && cut.mean_ns() > 0.0);
        // Not timed outside, and nested calls keep their own.
        let ((), outer) = time_split_stores(|| {
            let ((), inner) = time_split_stores(|| {
                mm.mprotect(at, PAGE_SIZE, Prot::RW).unwrap();
            });
            assert_eq!(inner.count, 2, "the changed piece and the remainder");
        });
        assert_eq!(outer.count, 0);
        mm.mprotect(at + PAGE_SIZE, PAGE_SIZE, Prot::RW).unwrap();
        mm.exit();
    }
}
