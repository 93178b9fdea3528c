//! exec / fork / exit / brk / page faults on real binaries, and bad input leaving the
//! address space unchanged.

use mm::error::{EINVAL, ENOENT, ENOEXEC, ENOMEM};
use mm::{Access, CallPattern, Error, Files, MapFlags, Mm, Prot, PAGE_SIZE};
use rmap::{Design, Topology};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn libc(files: &Files) -> Arc<mm::File> {
    files
        .all()
        .into_iter()
        .find(|f| f.path().ends_with("libc.so.6"))
        .expect("libc registered")
}

fn snapshot(mm: &Mm) -> Vec<(u64, u64, Prot)> {
    mm.vmas().iter().map(|v| (v.start, v.end, v.prot)).collect()
}

fn tmp(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aspace-mm-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn exec_fork_exit_keep_rmaps_exact() {
    for design in Design::ALL {
        for pattern in CallPattern::ALL {
            exec_fork_exit(design, pattern);
        }
    }
}

fn exec_fork_exit(design: Design, pattern: CallPattern) {
    let files = Files::new(design, Topology::detect(), pattern);
    let parent = Mm::new(files.clone());
    parent.exec(Path::new("/bin/sleep")).unwrap();
    parent.check_invariants().unwrap();
    let libc = libc(&files);
    let per_process = libc.rmap().len();
    assert!(per_process >= 5, "{design}: libc has {per_process} VMAs");

    let child = parent.fork();
    child.check_invariants().unwrap();
    parent.check_invariants().unwrap();
    assert_eq!(libc.rmap().len(), 2 * per_process);
    // Fork links every child file VMA: one insert_after (one lock hold) each
    // per VMA, as dup_mmap; one batch per file when batched, whatever the design.
    let calls = child.calls();
    let n_files = child
        .vmas()
        .iter()
        .filter_map(|v| v.file().map(|f| Arc::as_ptr(f.0)))
        .collect::<std::collections::HashSet<_>>()
        .len() as u64;
    assert_eq!(calls.linked as usize, child_file_vmas(&child), "{design}");
    match pattern {
        CallPattern::Batched => {
            assert_eq!(calls.insert_after, 0, "{design}");
            assert_eq!(calls.insert_after_batch, n_files, "{design}: {calls:?}");
        }
        CallPattern::PerVma => {
            assert_eq!(
                calls.insert_after as usize,
                child_file_vmas(&child),
                "{design}"
            );
            assert_eq!(calls.insert_after_batch, 0, "{design}");
        }
    }
    assert_eq!(snapshot(&child), snapshot(&parent));

    // The child execs something else: its old mappings go, the new ones come.
    child.exec(Path::new("/bin/sed")).unwrap();
    child.check_invariants().unwrap();
    assert_eq!(
        libc.rmap().len(),
        2 * per_process - per_process + per_process
    );
    child.exit();
    assert!(child.is_empty());
    assert_eq!(libc.rmap().len(), per_process);
    drop(parent);
    assert_eq!(libc.rmap().len(), 0, "{design}: drop unlinks");
}

fn child_file_vmas(mm: &Mm) -> usize {
    mm.vmas().iter().filter(|v| v.file().is_some()).count()
}

#[test]
fn call_pattern_is_the_callers_not_the_designs() {
    for design in [Design::Linux, Design::Aspace] {
        for pattern in CallPattern::ALL {
            let files = Files::new(design, Topology::detect(), pattern);
            let mm = Mm::new(files.clone());
            mm.exec(Path::new("/bin/sleep")).unwrap();
            let c = mm.calls();
            let objects = files
                .program(Path::new("/bin/sleep"))
                .unwrap()
                .files()
                .count() as u64;
            match pattern {
                CallPattern::Batched => {
                    // One batch per file and call of the exec sequence (ld.so maps
                    // each library with several mmaps): at least one per file.
                    assert_eq!(c.insert, 0, "{design}");
                    assert!(c.insert_batch >= objects, "{design}: a batch per file");
                }
                CallPattern::PerVma => {
                    assert_eq!(c.insert_batch, 0, "{design}");
                    assert_eq!(c.insert, c.linked, "{design}: one insert per VMA");
                }
            }
            mm.exit();
            let before = c;
            let c = mm.calls();
            // Exit: each object's file VMAs are contiguous and fewer than 8, so
            // both patterns unlink one run per file here (exec's own overlays
            // and unmaps made the earlier removals).
            assert_eq!(
                c.remove_batch - before.remove_batch,
                objects,
                "{design}: exit, one remove_batch per file"
            );
            assert_eq!(c.remove, 0);
            assert_eq!(c.unlinked, c.linked);
        }
    }
}

#[test]
fn per_vma_unlink_batches_runs_of_at_most_eight() {
    // Ten 1-page VMAs of one file, each with a different protection pattern so
    // they do not merge, then one munmap over all of them.
    for (pattern, holds) in [(CallPattern::PerVma, 2), (CallPattern::Batched, 1)] {
        let files = Files::new(Design::Linux, Topology::detect(), pattern);
        let f = files.register(Path::new("/synthetic/ten"), 64);
        let mm = Mm::new(files.clone());
        let base = 0x10_0000_0000;
        for i in 0..10u64 {
            let prot = if i % 2 == 0 { Prot::R } else { Prot::RW };
            mm.mmap(
                base + i * PAGE_SIZE,
                PAGE_SIZE,
                prot,
                MapFlags {
                    fixed: true,
                    shared: false,
                },
                Some((&f, i)),
            )
            .unwrap();
        }
        assert_eq!(f.rmap().len(), 10);
        let before = mm.calls().remove_batch;
        mm.munmap(base, 10 * PAGE_SIZE).unwrap();
        assert_eq!(mm.calls().remove_batch - before, holds, "{pattern}");
        assert_eq!(f.rmap().len(), 0);
    }
}

#[test]
fn page_faults_respect_protection() {
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let mm = Mm::new(files);
    mm.exec(Path::new("/bin/sleep")).unwrap();
    let vmas = mm.vmas();
    let text = vmas
        .iter()
        .find(|v| v.prot.exec && v.file().is_some())
        .unwrap();
    assert!(mm.page_fault(text.start, Access::Exec).is_ok());
    assert!(matches!(
        mm.page_fault(text.start, Access::Write),
        Err(Error::Fault { .. })
    ));
    let stack = mm::layout::STACK_TOP - 8;
    assert!(mm.page_fault(stack, Access::Write).is_ok());
    assert!(mm.page_fault(0x1000, Access::Read).is_err());
}

#[test]
fn brk_grows_and_shrinks_the_heap() {
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let mm = Mm::new(files);
    mm.exec(Path::new("/bin/sleep")).unwrap();
    let (start, cur) = mm.brk_range();
    assert!(start > 0 && cur > start);
    assert_eq!(mm.brk(cur + 10 * PAGE_SIZE + 5), cur + 10 * PAGE_SIZE + 5);
    assert!(mm.page_fault(cur + 10 * PAGE_SIZE, Access::Write).is_ok());
    let heaps = |mm: &Mm| {
        mm.vmas()
            .iter()
            .filter(|v| matches!(v.backing, mm::Backing::Anon(mm::AnonKind::Heap)))
            .count()
    };
    assert_eq!(heaps(&mm), 1, "grown heap is one VMA");
    assert_eq!(mm.brk(start + PAGE_SIZE), start + PAGE_SIZE);
    assert!(mm.page_fault(start + 2 * PAGE_SIZE, Access::Read).is_err());
    assert_eq!(
        mm.brk(start - PAGE_SIZE),
        start + PAGE_SIZE,
        "below start: refused"
    );
    mm.check_invariants().unwrap();
}

#[test]
fn bad_input_is_an_error_and_changes_nothing() {
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let mm = Mm::new(files.clone());
    mm.exec(Path::new("/bin/sleep")).unwrap();
    let before = snapshot(&mm);
    let libc_len = libc(&files).rmap().len();

    let sleep = std::fs::read("/bin/sleep").unwrap();
    // Text with no `#!` line (a `#!` script execs its interpreter: tests/script.rs).
    let not_elf = tmp("script", b"echo hi\n");
    let truncated = tmp("truncated", &sleep[..sleep.len() / 3]);
    let mut bad_lib = sleep.clone();
    let at = bad_lib
        .windows(10)
        .position(|w| w == b"libc.so.6\0")
        .expect("DT_NEEDED string");
    bad_lib[at + 3] = b'Q';
    let bad_lib = tmp("needs-missing-lib", &bad_lib);

    type Case<'a> = (Box<dyn Fn() -> Result<(), Error> + 'a>, i32);
    let cases: Vec<Case<'_>> = vec![
        (Box::new(|| mm.exec(&not_elf)), ENOEXEC),
        (Box::new(|| mm.exec(&truncated)), ENOEXEC),
        (Box::new(|| mm.exec(&bad_lib)), ENOENT),
        (Box::new(|| mm.exec(Path::new("/no/such/file"))), ENOENT),
        (
            Box::new(|| {
                mm.mmap(0x10001, PAGE_SIZE, Prot::R, fixed(), None)
                    .map(drop)
            }),
            EINVAL,
        ),
        (
            Box::new(|| {
                mm.mmap(0, u64::MAX - 5, Prot::R, MapFlags::default(), None)
                    .map(drop)
            }),
            EINVAL,
        ),
        (
            Box::new(|| {
                mm.mmap(u64::MAX - 0xfff, 2 * PAGE_SIZE, Prot::R, fixed(), None)
                    .map(drop)
            }),
            EINVAL,
        ),
        (
            Box::new(|| mm.mmap(0, 0, Prot::R, MapFlags::default(), None).map(drop)),
            EINVAL,
        ),
        (Box::new(|| mm.munmap(0x10001, PAGE_SIZE)), EINVAL),
        (
            Box::new(|| mm.mprotect(0x10000, PAGE_SIZE, Prot::R)),
            ENOMEM,
        ),
    ];
    for (i, (f, errno)) in cases.iter().enumerate() {
        let e = f().expect_err("bad input must fail");
        assert_eq!(e.errno(), *errno, "case {i}: {e}");
        assert!(!e.to_string().is_empty());
        assert_eq!(snapshot(&mm), before, "case {i} changed the address space");
        assert_eq!(
            libc(&files).rmap().len(),
            libc_len,
            "case {i} changed libc's rmap"
        );
    }
    // munmap of nothing: 0, as the kernel answers, and nothing changed.
    assert_eq!(mm.munmap(0x10000, PAGE_SIZE), Ok(()));
    assert_eq!(snapshot(&mm), before);
    mm.check_invariants().unwrap();
}

fn fixed() -> MapFlags {
    MapFlags {
        fixed: true,
        shared: false,
    }
}

#[test]
fn mprotect_splits_then_merges_back() {
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let mm = Mm::new(files);
    let a = mm
        .mmap(0, 8 * PAGE_SIZE, Prot::R, MapFlags::default(), None)
        .unwrap();
    assert_eq!(mm.len(), 1);
    mm.mprotect(a + 2 * PAGE_SIZE, 2 * PAGE_SIZE, Prot::RX)
        .unwrap();
    assert_eq!(mm.len(), 3);
    mm.mprotect(a + 2 * PAGE_SIZE, 2 * PAGE_SIZE, Prot::R)
        .unwrap();
    assert_eq!(mm.len(), 1, "merged back");
    mm.munmap(a + 3 * PAGE_SIZE, PAGE_SIZE).unwrap();
    assert_eq!(mm.len(), 2, "munmap splits");
    let b = mm
        .mmap(0, PAGE_SIZE, Prot::R, MapFlags::default(), None)
        .unwrap();
    assert_eq!(
        b,
        a + 3 * PAGE_SIZE,
        "top-down: the highest gap that fits is the hole"
    );
    let c = mm
        .mmap(0, 2 * PAGE_SIZE, Prot::R, MapFlags::default(), None)
        .unwrap();
    assert_eq!(c, a - 2 * PAGE_SIZE, "two pages do not fit the hole: below");
}

/// Each reverse-map call is declared at its call site, so the maps' per-site
/// counts say where the lock was taken: link on mmap, unlink of a replaced
/// mapping, split (mprotect / munmap cutting a VMA), exit unlink, fork.
#[test]
fn rmap_calls_are_counted_at_their_call_sites() {
    use rmap::stats::CallSite;
    for pattern in CallPattern::ALL {
        let files = Files::new(Design::Linux, Topology::detect(), pattern);
        let f = files.register(Path::new("/synthetic/sites"), 64);
        let mm = Mm::new(files.clone());
        let holds = |site: CallSite| f.rmap().stats().site(site).holds;
        let fixed = MapFlags {
            fixed: true,
            shared: false,
        };
        let base = 0x10_0000_0000;
        mm.mmap(base, 8 * PAGE_SIZE, Prot::R, fixed, Some((&f, 0)))
            .unwrap();
        assert_eq!(holds(CallSite::MmapLink), 1, "{pattern}");
        // mprotect of the middle: the VMA is cut in three (a split).
        mm.mprotect(base + 2 * PAGE_SIZE, 2 * PAGE_SIZE, Prot::RW)
            .unwrap();
        let split = holds(CallSite::Split);
        assert!(
            split >= 2,
            "{pattern}: unlink + relink of the cut pieces: {split}"
        );
        assert_eq!(holds(CallSite::ReplaceUnlink), 0);
        // MAP_FIXED over the whole middle piece: it is replaced.
        mm.mmap(
            base + 2 * PAGE_SIZE,
            2 * PAGE_SIZE,
            Prot::RX,
            fixed,
            Some((&f, 40)),
        )
        .unwrap();
        assert_eq!(holds(CallSite::ReplaceUnlink), 1, "{pattern}");
        assert_eq!(holds(CallSite::MmapLink), 2, "{pattern}");
        assert_eq!(holds(CallSite::Split), split, "nothing cut: {pattern}");
        // MAP_FIXED over the middle of a VMA (as ld.so overlays its reservation):
        // the replaced piece is unlinked, the two remainders are the split, the new
        // mapping a link on mmap.
        let split_before = holds(CallSite::Split);
        mm.mmap(
            base + 5 * PAGE_SIZE,
            PAGE_SIZE,
            Prot::RX,
            fixed,
            Some((&f, 50)),
        )
        .unwrap();
        assert_eq!(holds(CallSite::MmapLink), 3, "{pattern}");
        assert_eq!(holds(CallSite::ReplaceUnlink), 2, "{pattern}");
        let remainders = match pattern {
            CallPattern::PerVma => 2,
            CallPattern::Batched => 1,
        };
        assert_eq!(
            holds(CallSite::Split),
            split_before + remainders,
            "{pattern}"
        );
        let child = mm.fork();
        let vmas = child_file_vmas(&child) as u64;
        let fork_holds = holds(CallSite::ForkInsertAfter);
        match pattern {
            CallPattern::PerVma => assert_eq!(fork_holds, vmas),
            CallPattern::Batched => assert!(fork_holds >= 1 && fork_holds <= vmas),
        }
        assert_eq!(holds(CallSite::ExitUnlink), 0);
        child.exit();
        assert!(holds(CallSite::ExitUnlink) >= 1, "{pattern}");
        // Every lock hold was declared: nothing fell into Other.
        assert_eq!(holds(CallSite::Other), 0, "{pattern}");
        mm.check_invariants().unwrap();
    }
}

/// Linux 6.12's holds for a `MAP_FIXED` whose new VMA merges with a neighbour. (1)
/// ld.so's overlay of a segment that has its reservation's protection and offset
/// (libc's second read-only segment): the kernel splits the reservation's rest at
/// the segment's end (`vms_gather_munmap_vmas` -> `__split_vma`), unlinks the
/// replaced piece (`vms_clean_up_area`), then grows the rest down over the segment
/// (`vma_merge_new_range` -> `vma_expand` -> `commit_merge`): one split, one
/// replace-unlink, one merge hold (the model's merge is a removal and an insert,
/// two holds, which `aspace predict` makes one for the kernel). (2) A mapping beside a compatible one in a
/// hole: only the merge (`vma_expand` of the neighbour), no split, no link.
#[test]
fn a_map_that_merges_is_split_unlinked_and_merged_as_in_linux() {
    use rmap::stats::CallSite;
    for pattern in CallPattern::ALL {
        let files = Files::new(Design::Linux, Topology::detect(), pattern);
        let f = files.register(Path::new("/synthetic/merge"), 64);
        let mm = Mm::new(files.clone());
        let holds = |site: CallSite| f.rmap().stats().site(site).holds;
        let count = || CallSite::ALL.map(holds);
        let fixed = MapFlags {
            fixed: true,
            shared: false,
        };
        let base = 0x10_0000_0000;
        let page = |n: u64| base + n * PAGE_SIZE;
        // The reservation (pages 0..10, offset 0), then the text over 2..4.
        mm.mmap(base, 10 * PAGE_SIZE, Prot::R, fixed, Some((&f, 0)))
            .unwrap();
        mm.mmap(page(2), 2 * PAGE_SIZE, Prot::RX, fixed, Some((&f, 2)))
            .unwrap();
        let before = count();
        // (1) Read-only data over 4..6 at offset 4: what the reservation's rest
        // (4..10, offset 4) already maps.
        mm.mmap(page(4), 2 * PAGE_SIZE, Prot::R, fixed, Some((&f, 4)))
            .unwrap();
        let after = count();
        let d = |site: CallSite| after[site.index()] - before[site.index()];
        // A merge is a removal and an insert: two calls in either pattern.
        let per_piece = 2;
        assert_eq!(d(CallSite::Split), 1, "the rest's split: {pattern}");
        assert_eq!(d(CallSite::ReplaceUnlink), 1, "the piece: {pattern}");
        assert_eq!(d(CallSite::Merge), per_piece, "{pattern}");
        assert_eq!(d(CallSite::MmapLink), 0, "merged, not linked: {pattern}");
        assert_eq!(f.rmap().len(), 3, "[0,2) [2,4) [4,10): {pattern}");
        let v = mm.find(page(4)).unwrap();
        assert_eq!((v.start, v.end, v.prot), (page(4), page(10), Prot::R));
        // (2) In a hole beside a compatible mapping: the merge only.
        mm.munmap(page(8), 2 * PAGE_SIZE).unwrap();
        let before = count();
        mm.mmap(page(8), PAGE_SIZE, Prot::R, fixed, Some((&f, 8)))
            .unwrap();
        let after = count();
        let d = |site: CallSite| after[site.index()] - before[site.index()];
        assert_eq!(d(CallSite::Merge), per_piece, "{pattern}");
        for site in [
            CallSite::Split,
            CallSite::ReplaceUnlink,
            CallSite::MmapLink,
            CallSite::ExitUnlink,
        ] {
            assert_eq!(d(site), 0, "{site:?}: {pattern}");
        }
        assert_eq!(holds(CallSite::Other), 0, "{pattern}");
        mm.check_invariants().unwrap();
        mm.exit();
        assert_eq!(f.rmap().len(), 0, "{pattern}");
    }
}

/// Lock-free readers while another thread cuts, re-maps (merging) and re-protects
/// VMAs: every `vmas()` is sorted and disjoint, and a page that stays
/// mapped throughout (the middle of a VMA that changes around it) is in every one of
/// them and never faults. A change stores the new VMAs before it clears what they do
/// not cover, so a reader sees the old VMA or the new one there, never a hole. (A
/// stress test: it sees a violation only when the reader runs during a change.)
#[test]
fn lock_free_readers_see_disjoint_vmas_and_no_transient_hole() {
    let mm = Arc::new(Mm::new(Files::new(
        Design::Linux,
        Topology::Os,
        CallPattern::PerVma,
    )));
    let base = 0x7000_0000_0000u64;
    let pages = 64;
    let fixed = MapFlags {
        fixed: true,
        shared: false,
    };
    mm.mmap(base, pages * PAGE_SIZE, Prot::RW, fixed, None)
        .unwrap();
    let kept = base + 32 * PAGE_SIZE;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (mm, stop) = (mm.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut views = 0u64;
            // Relaxed: a stop flag; the join orders everything that matters.
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || views < 100 {
                let v = mm.vmas();
                for w in v.windows(2) {
                    assert!(w[0].end <= w[1].start, "overlap in {v:x?}");
                }
                assert!(v.iter().all(|x| x.start < x.end));
                assert!(
                    v.iter().any(|x| x.start <= kept && kept < x.end),
                    "the kept page vanished: {v:x?}"
                );
                assert_eq!(mm.page_fault(kept, Access::Read), Ok(()));
                views += 1;
            }
            views
        })
    };
    for i in 0..3000u64 {
        // A page somewhere but the kept one: cut out, mapped back (merging again),
        // then its neighbourhood re-protected and back.
        let p = base + ((i * 7) % pages) * PAGE_SIZE;
        if p == kept {
            continue;
        }
        mm.munmap(p, PAGE_SIZE).unwrap();
        mm.mmap(p, PAGE_SIZE, Prot::RW, fixed, None).unwrap();
        let lo = p.max(base + PAGE_SIZE) - PAGE_SIZE;
        let len = (3 * PAGE_SIZE).min(base + pages * PAGE_SIZE - lo);
        // Read-only for a moment: the kept page stays readable.
        mm.mprotect(lo, len, Prot::R).unwrap();
        mm.mprotect(lo, len, Prot::RW).unwrap();
    }
    // Relaxed: see the load.
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(reader.join().unwrap() >= 100);
    mm.check_invariants().unwrap();
}

/// Kernel-shaped split holds (`Files::set_kernel_split_holds`, for `aspace
/// predict`'s kernel cost): Linux 6.12's `__split_vma` inserts the new piece,
/// removes the cut VMA and reinserts it with its new range in one
/// `i_mmap_rwsem` hold (`vma_prepare` / `vma_complete`). With the switch on,
/// each split piece's insert is followed by that remove and reinsert at the
/// split site, and the replaced piece's unlink removes the reinserted entry
/// (the reverse map stays exact: `check_invariants`); off (the lab's own
/// calls), a split is the piece's insert alone. Per VMA (Linux's pattern):
/// the text over the middle of a reservation (two splits), the rodata
/// overlay that merges (one split of the reservation's rest) and a munmap
/// of a tail (one split). Mutants run: `resplit` a no-op (split 2, not 6);
/// the unlink given `old` instead of the reinserted entries (panics: a
/// stale handle); the switch ignored (off gives 6).
#[test]
fn kernel_split_holds_remove_and_reinsert_the_cut_vma() {
    use rmap::stats::CallSite;
    for kernel in [false, true] {
        for pattern in CallPattern::ALL {
            let files = Files::new(Design::Linux, Topology::detect(), pattern);
            files.set_kernel_split_holds(kernel);
            let f = files.register(Path::new("/synthetic/split"), 64);
            let mm = Mm::new(files.clone());
            let holds = |site: CallSite| f.rmap().stats().site(site).holds;
            let count = || CallSite::ALL.map(holds);
            let fixed = MapFlags {
                fixed: true,
                shared: false,
            };
            let base = 0x10_0000_0000;
            let page = |n: u64| base + n * PAGE_SIZE;
            mm.mmap(base, 10 * PAGE_SIZE, Prot::R, fixed, Some((&f, 0)))
                .unwrap();
            // (1) Text over 2..4: split at 2 and at 4.
            let before = count();
            mm.mmap(page(2), 2 * PAGE_SIZE, Prot::RX, fixed, Some((&f, 2)))
                .unwrap();
            let after = count();
            let d = |site: CallSite| after[site.index()] - before[site.index()];
            mm.check_invariants().unwrap();
            assert_eq!(f.rmap().len(), 3, "{kernel} {pattern}");
            assert_eq!(d(CallSite::ReplaceUnlink), 1, "{kernel} {pattern}");
            assert_eq!(d(CallSite::MmapLink), 1, "{kernel} {pattern}");
            let per_vma = pattern == CallPattern::PerVma;
            // Off: one insert per piece (per VMA) or one batch; on: the
            // pieces one by one, each with the cut VMA's remove and insert.
            let splits = match (kernel, per_vma) {
                (false, true) => 2,
                (false, false) => 1,
                (true, _) => 6,
            };
            assert_eq!(d(CallSite::Split), splits, "{kernel} {pattern}");
            // (2) Read-only data over 4..6, merging with the rest 4..10: the
            // rest's split, its cut VMA's remove and insert when on.
            let before = count();
            mm.mmap(page(4), 2 * PAGE_SIZE, Prot::R, fixed, Some((&f, 4)))
                .unwrap();
            let after = count();
            let d = |site: CallSite| after[site.index()] - before[site.index()];
            mm.check_invariants().unwrap();
            assert_eq!(d(CallSite::Split), if kernel { 3 } else { 1 }, "{pattern}");
            assert_eq!(d(CallSite::ReplaceUnlink), 1, "{kernel} {pattern}");
            assert_eq!(d(CallSite::Merge), 2, "{kernel} {pattern}");
            // (3) munmap of the tail 8..10 of 4..10: one split.
            let before = count();
            mm.munmap(page(8), 2 * PAGE_SIZE).unwrap();
            let after = count();
            let d = |site: CallSite| after[site.index()] - before[site.index()];
            mm.check_invariants().unwrap();
            assert_eq!(d(CallSite::Split), if kernel { 3 } else { 1 }, "{pattern}");
            assert_eq!(d(CallSite::ExitUnlink), 1, "{kernel} {pattern}");
            assert_eq!(f.rmap().len(), 3, "[0,2) [2,4) [4,8): {kernel} {pattern}");
            mm.exit();
            assert_eq!(f.rmap().len(), 0, "{kernel} {pattern}");
        }
    }
}

/// `madvise(MADV_DONTFORK)` marks areas `VM_DONTCOPY`: a fork leaves them out of
/// the child (and out of the file's reverse map for the child), keeps the rest, and
/// `MADV_DOFORK` makes them copied again. (A Python `mmap` marked so and then forked:
/// the kernel's child maps had no such area, the model's had.)
#[test]
fn dontfork_areas_stay_out_of_the_child() {
    use mm::Advice;
    for pattern in CallPattern::ALL {
        let files = Files::new(Design::Linux, Topology::Os, pattern);
        let lib = files.register(Path::new("/synthetic/libdontfork.so"), 16);
        let parent = Mm::new(files.clone());
        let shared = MapFlags {
            fixed: true,
            shared: true,
        };
        let anon = parent
            .mmap(0x10_0000, 4 * PAGE_SIZE, Prot::RW, shared, None)
            .unwrap();
        let file = parent
            .mmap(0x20_0000, 2 * PAGE_SIZE, Prot::R, fixed(), Some((&lib, 0)))
            .unwrap();
        let kept = parent
            .mmap(0x30_0000, PAGE_SIZE, Prot::RW, fixed(), None)
            .unwrap();
        parent
            .madvise(anon, 4 * PAGE_SIZE, Advice::DontFork)
            .unwrap();
        parent
            .madvise(file, 2 * PAGE_SIZE, Advice::DontFork)
            .unwrap();
        let child = parent.fork();
        assert!(child.find(anon).is_none() && child.find(file).is_none());
        assert!(child.find(kept).is_some());
        assert_eq!(lib.rmap().len(), 1, "only the parent's mapping of the file");
        child.check_invariants().unwrap();
        // The parent keeps them, marked; DOFORK clears the mark.
        assert!(parent.find(anon).unwrap().flags.dontcopy);
        parent.madvise(file, 2 * PAGE_SIZE, Advice::DoFork).unwrap();
        let second = parent.fork();
        assert!(second.find(file).is_some() && second.find(anon).is_none());
        assert_eq!(lib.rmap().len(), 2);
        second.exit();
        child.exit();
        parent.exit();
        assert_eq!(lib.rmap().len(), 0);
    }
}

/// A fork's child has no lock bits: `dup_mmap` clears them on each copy and keeps
/// the parent's boundaries (so two areas that only their lock bits told apart stay
/// two, merged with nothing), and `mm_init` leaves the child's default flags
/// unlocked, so what it maps after is not locked. The parent keeps its own.
#[test]
fn fork_clears_the_lock_bits_and_keeps_the_boundaries() {
    use mm::mlock::{MCL_CURRENT, MCL_FUTURE};
    for pattern in CallPattern::ALL {
        let files = Files::new(Design::Linux, Topology::Os, pattern);
        let lib = files.register(Path::new("/synthetic/liblocked.so"), 16);
        let parent = Mm::new(files.clone());
        let anon = parent
            .mmap(0x10_0000, 4 * PAGE_SIZE, Prot::RW, fixed(), None)
            .unwrap();
        let file = parent
            .mmap(0x20_0000, 4 * PAGE_SIZE, Prot::R, fixed(), Some((&lib, 0)))
            .unwrap();
        parent.mlock(anon, PAGE_SIZE).unwrap();
        parent.mlock(file + 2 * PAGE_SIZE, 2 * PAGE_SIZE).unwrap();
        parent.mlockall(MCL_FUTURE).unwrap();
        let bounds = |mm: &Mm| -> Vec<(u64, u64, bool)> {
            mm.vmas()
                .iter()
                .map(|v| (v.start, v.end, v.flags.locked))
                .collect()
        };
        let child = parent.fork();
        let want: Vec<(u64, u64, bool)> = bounds(&parent)
            .into_iter()
            .map(|(s, e, _)| (s, e, false))
            .collect();
        assert_eq!(want.len(), 4, "{pattern}");
        assert_eq!(bounds(&child), want, "{pattern}");
        assert!(child.vmas().iter().all(|v| !v.flags.lockonfault));
        assert!(parent.find(anon).unwrap().flags.locked);
        assert!(parent.def_flags().locked && !child.def_flags().locked);
        child.check_invariants().unwrap();
        assert_eq!(lib.rmap().len(), 4, "two areas of the file in each");
        // What the child maps next to an old area is not locked: it merges.
        child
            .mmap(anon + 4 * PAGE_SIZE, PAGE_SIZE, Prot::RW, fixed(), None)
            .unwrap();
        assert_eq!(
            child.find(anon + PAGE_SIZE).unwrap().end,
            anon + 5 * PAGE_SIZE,
            "{pattern}"
        );
        child.check_invariants().unwrap();
        // A grandchild of a child with such boundaries keeps them too.
        let grandchild = child.fork();
        grandchild.check_invariants().unwrap();
        assert_eq!(grandchild.vmas().len(), child.vmas().len());
        // The parent's MCL_CURRENT then makes its own file areas one.
        parent.mlockall(MCL_CURRENT).unwrap();
        assert_eq!(parent.find(file).unwrap().end, file + 4 * PAGE_SIZE);
        parent.check_invariants().unwrap();
        grandchild.exit();
        child.exit();
        parent.exit();
        assert_eq!(lib.rmap().len(), 0);
    }
}

/// An exec gives the process a space whose default flags have no lock bits (a new
/// `mm`): a program that ran `mlockall(MCL_FUTURE)` then exec'd maps unlocked.
#[test]
fn exec_starts_with_unlocked_default_flags() {
    use mm::mlock::MCL_FUTURE;
    let files = Files::new(Design::Linux, Topology::Os, CallPattern::PerVma);
    // In place (Mm::exec) and through a process (a new space).
    let mm = Mm::new(files.clone());
    mm.mlockall(MCL_FUTURE).unwrap();
    mm.exec(Path::new("/bin/true")).unwrap();
    assert!(!mm.def_flags().locked);
    let a = mm
        .mmap(0, PAGE_SIZE, Prot::RW, MapFlags::default(), None)
        .unwrap();
    assert!(!mm.find(a).unwrap().flags.locked);
    let mut p = mm::Process::new(files.clone());
    p.mm().mlockall(MCL_FUTURE).unwrap();
    p.exec(Path::new("/bin/true")).unwrap();
    assert!(!p.mm().def_flags().locked);
    assert!(p.mm().vmas().iter().all(|v| !v.flags.locked));
}
