//! mremap, MAP_FIXED_NOREPLACE, madvise flags, the lock flags (mlock, mlock2,
//! munlock, mlockall, munlockall, MAP_LOCKED, brk under MCL_FUTURE), merge-changing
//! mmap flags and the huge-page placement rule, checked on concrete cases (the
//! model-based test in `model.rs` covers random sequences; fork's and exec's clearing
//! of the lock bits is in `process.rs`).

use mm::layout::{MMAP_BASE, MMAP_MIN_ADDR};
use mm::placement::PMD_SIZE;
use mm::{
    Advice, CallPattern, Error, Files, Mm, MmapOptions, MremapFlags, Placement, Prot, PAGE_SIZE,
};
use rmap::{Design, Topology};
use std::path::Path;

fn setup() -> (std::sync::Arc<Files>, Mm) {
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let mm = Mm::new(files.clone());
    (files, mm)
}

fn opts() -> MmapOptions {
    MmapOptions::default()
}

#[test]
fn moved_file_vma_is_relinked_at_its_new_place() {
    let runs = [Design::Linux, Design::Aspace, Design::Sharded]
        .into_iter()
        .flat_map(|d| CallPattern::ALL.into_iter().map(move |p| (d, p)));
    for (design, pattern) in runs {
        let files = Files::new(design, Topology::detect(), pattern);
        let mm = Mm::new(files.clone());
        let f = files.register(Path::new("/remap/f"), 64);
        let a = mm
            .mmap_with(0, 4 * PAGE_SIZE, Prot::R, opts(), Some((&f, 3)))
            .unwrap();
        // Block growth in place.
        mm.mmap_with(
            a + 4 * PAGE_SIZE,
            PAGE_SIZE,
            Prot::RW,
            MmapOptions {
                fixed: true,
                ..opts()
            },
            None,
        )
        .unwrap();
        let id_before = mm.find(a).unwrap().rmap_id().unwrap();
        let may_move = MremapFlags {
            may_move: true,
            ..Default::default()
        };
        let b = mm
            .mremap(
                a,
                4 * PAGE_SIZE,
                8 * PAGE_SIZE,
                may_move,
                0,
                Placement::TOP_DOWN,
            )
            .unwrap();
        assert_ne!(a, b);
        assert!(mm.find(a).is_none());
        let moved = mm.find(b).unwrap();
        assert_eq!((moved.start, moved.end), (b, b + 8 * PAGE_SIZE));
        assert_eq!(moved.file().unwrap().1, 3);
        assert_ne!(moved.rmap_id().unwrap(), id_before);
        assert_eq!(f.rmap().len(), 1);
        mm.check_invariants().unwrap();
        mm.exit();
        assert_eq!(f.rmap().len(), 0);
    }
}

#[test]
fn grow_in_place_shrink_and_refusals() {
    let (_files, mm) = setup();
    let a = mm
        .mmap_with(0, 2 * PAGE_SIZE, Prot::RW, opts(), None)
        .unwrap();
    // Free pages above? top-down put it at the top, so make room below instead:
    let b = mm
        .mmap_with(0, 2 * PAGE_SIZE, Prot::RW, opts(), None)
        .unwrap();
    assert_eq!(b + 2 * PAGE_SIZE, a); // merged with a
    mm.munmap(a, 2 * PAGE_SIZE).unwrap();
    let no_move = MremapFlags::default();
    assert_eq!(
        mm.mremap(
            b,
            2 * PAGE_SIZE,
            4 * PAGE_SIZE,
            no_move,
            0,
            Placement::TOP_DOWN
        ),
        Ok(b)
    );
    assert_eq!(mm.find(b).unwrap().end, b + 4 * PAGE_SIZE);
    assert_eq!(
        mm.mremap(b, 4 * PAGE_SIZE, PAGE_SIZE, no_move, 0, Placement::TOP_DOWN),
        Ok(b)
    );
    assert_eq!(mm.find(b).unwrap().end, b + PAGE_SIZE);
    let before = mm.vmas().len();
    // Blocked growth without MAYMOVE: ENOMEM, nothing changed.
    mm.mmap_with(
        b + PAGE_SIZE,
        PAGE_SIZE,
        Prot::R,
        MmapOptions {
            fixed: true,
            ..opts()
        },
        None,
    )
    .unwrap();
    let n = mm.vmas().len();
    let r = mm.mremap(b, PAGE_SIZE, 2 * PAGE_SIZE, no_move, 0, Placement::TOP_DOWN);
    assert!(matches!(r, Err(Error::NoSpace { .. })), "{r:?}");
    assert_eq!(mm.vmas().len(), n);
    assert!(n > before);
    // No VMA at the address: EFAULT.
    let hole = MMAP_MIN_ADDR + 16 * PAGE_SIZE;
    let r = mm.mremap(
        hole,
        PAGE_SIZE,
        2 * PAGE_SIZE,
        no_move,
        0,
        Placement::TOP_DOWN,
    );
    assert_eq!(r, Err(Error::Fault { addr: hole }));
    // FIXED without MAYMOVE, overlapping FIXED: EINVAL.
    let fixed_only = MremapFlags {
        fixed: true,
        ..Default::default()
    };
    assert_eq!(
        mm.mremap(
            b,
            PAGE_SIZE,
            PAGE_SIZE,
            fixed_only,
            hole,
            Placement::TOP_DOWN
        )
        .unwrap_err()
        .errno(),
        22
    );
    let both = MremapFlags {
        fixed: true,
        may_move: true,
        dont_unmap: false,
    };
    assert_eq!(
        mm.mremap(
            b,
            PAGE_SIZE,
            2 * PAGE_SIZE,
            both,
            b - PAGE_SIZE,
            Placement::TOP_DOWN
        )
        .unwrap_err()
        .errno(),
        22
    );
    assert_eq!(
        mm.mremap(b, PAGE_SIZE, 2 * PAGE_SIZE, both, hole, Placement::TOP_DOWN),
        Ok(hole)
    );
    assert!(mm.find(b).is_none());
    mm.check_invariants().unwrap();
}

#[test]
fn fixed_noreplace_refuses_to_replace() {
    let (_files, mm) = setup();
    let a = mm
        .mmap_with(0, 4 * PAGE_SIZE, Prot::RW, opts(), None)
        .unwrap();
    let before: Vec<_> = mm.vmas().iter().map(|v| (v.start, v.end, v.prot)).collect();
    let nr = MmapOptions {
        fixed_noreplace: true,
        ..opts()
    };
    let r = mm.mmap_with(a + PAGE_SIZE, PAGE_SIZE, Prot::R, nr, None);
    assert_eq!(r.unwrap_err().errno(), 17);
    let after: Vec<_> = mm.vmas().iter().map(|v| (v.start, v.end, v.prot)).collect();
    assert_eq!(before, after);
    assert_eq!(
        mm.mmap_with(a - PAGE_SIZE, PAGE_SIZE, Prot::R, nr, None),
        Ok(a - PAGE_SIZE)
    );
}

#[test]
fn noreserve_and_stack_keep_areas_apart() {
    let (_files, mm) = setup();
    let fixed = MmapOptions {
        fixed: true,
        ..opts()
    };
    let base = MMAP_MIN_ADDR + 256 * PAGE_SIZE;
    mm.mmap_with(base, PAGE_SIZE, Prot::RW, fixed, None)
        .unwrap();
    mm.mmap_with(
        base + PAGE_SIZE,
        PAGE_SIZE,
        Prot::RW,
        MmapOptions {
            noreserve: true,
            ..fixed
        },
        None,
    )
    .unwrap();
    mm.mmap_with(
        base + 2 * PAGE_SIZE,
        PAGE_SIZE,
        Prot::RW,
        MmapOptions {
            stack: true,
            ..fixed
        },
        None,
    )
    .unwrap();
    mm.mmap_with(base + 3 * PAGE_SIZE, PAGE_SIZE, Prot::RW, fixed, None)
        .unwrap();
    assert_eq!(mm.vmas().len(), 4);
    // NORESERVE stays unaccounted through mprotect; madvise(NOHUGEPAGE) on the last
    // page makes it mergeable with the MAP_STACK one.
    mm.mprotect(base + PAGE_SIZE, PAGE_SIZE, Prot::R).unwrap();
    mm.mprotect(base + PAGE_SIZE, PAGE_SIZE, Prot::RW).unwrap();
    assert!(!mm.find(base + PAGE_SIZE).unwrap().flags.account);
    mm.madvise(base + 3 * PAGE_SIZE, PAGE_SIZE, Advice::NoHugePage)
        .unwrap();
    assert_eq!(mm.vmas().len(), 3);
    mm.madvise(base, 4 * PAGE_SIZE, Advice::DontFork).unwrap();
    assert!(mm.vmas().iter().all(|v| v.flags.dontcopy));
    assert_eq!(
        mm.madvise(base, 8 * PAGE_SIZE, Advice::DoFork)
            .unwrap_err()
            .errno(),
        12
    );
    assert!(
        mm.vmas().iter().all(|v| v.flags.dontcopy),
        "error changed state"
    );
    mm.check_invariants().unwrap();
}

#[test]
fn huge_page_alignment_follows_the_kernel_rule() {
    let (files, mm) = setup();
    let thp = MmapOptions {
        placement: Placement::LINUX_THP,
        ..opts()
    };
    // Anonymous, length a multiple of 2 MiB: padded search, aligned start.
    let a = mm.mmap_with(0, 4 * PMD_SIZE, Prot::RW, thp, None).unwrap();
    assert_eq!(a % PMD_SIZE, 0);
    assert!(a + 4 * PMD_SIZE <= MMAP_BASE);
    // Anonymous, not a multiple: plain top-down, right below.
    let b = mm
        .mmap_with(0, PMD_SIZE + PAGE_SIZE, Prot::RW, thp, None)
        .unwrap();
    assert_eq!(b + PMD_SIZE + PAGE_SIZE, a);
    // A file range holding an aligned 2 MiB block: addr ≡ offset (mod 2 MiB).
    let f = files.register(Path::new("/thp/big"), 4 * PMD_SIZE / PAGE_SIZE);
    let c = mm
        .mmap_with(0, 3 * PMD_SIZE, Prot::R, thp, Some((&f, 3)))
        .unwrap();
    assert_eq!((c - 3 * PAGE_SIZE) % PMD_SIZE, 0);
    // Too small a file range: plain top-down.
    let d = mm
        .mmap_with(0, PMD_SIZE, Prot::R, thp, Some((&f, 3)))
        .unwrap();
    assert_eq!(d + PMD_SIZE, c);
    // The same requests with the top-down policy are not aligned.
    let e = mm
        .mmap_with(0, 2 * PMD_SIZE, Prot::RW, opts(), None)
        .unwrap();
    assert_eq!(e + 2 * PMD_SIZE, d);
    mm.check_invariants().unwrap();
}

/// Addresses a small C program got from Linux 6.18 (x86-64, THP `madvise`, libc.so.6
/// on ext4, `setarch -R`), for requests made in this order below a mapped area
/// ending at 0x7ffff7c00000: the policy must give the same ones.
#[test]
fn thp_policy_reproduces_recorded_kernel_addresses() {
    let (files, mm) = setup();
    let top = 0x7fff_f7c0_0000;
    let fixed = MmapOptions {
        fixed: true,
        ..opts()
    };
    mm.mmap_with(top, MMAP_BASE - top, Prot::R, fixed, None)
        .unwrap();
    let thp = MmapOptions {
        placement: Placement::LINUX_THP,
        ..opts()
    };
    let mib = 1 << 20;
    let anon = |len, o: MmapOptions| mm.mmap_with(0, len, Prot::RW, o, None).unwrap();
    assert_eq!(anon(4 * mib, thp), 0x7fff_f780_0000);
    assert_eq!(anon(4 * mib + PAGE_SIZE, thp), 0x7fff_f73f_f000);
    // MAP_STACK (VM_NOHUGEPAGE) is still aligned on this kernel.
    assert_eq!(
        anon(4 * mib, MmapOptions { stack: true, ..thp }),
        0x7fff_f6e0_0000
    );
    assert_eq!(
        anon(
            4 * mib,
            MmapOptions {
                noreserve: true,
                ..thp
            }
        ),
        0x7fff_f6a0_0000
    );
    // (the C program's 4 MiB MAP_SHARED|MAP_ANONYMOUS went to 0x7ffff6600000, which
    // is also plain top-down here)
    assert_eq!(
        anon(
            4 * mib,
            MmapOptions {
                shared: true,
                ..thp
            }
        ),
        0x7fff_f660_0000
    );
    let libc = files.register(Path::new("/thp/libc.so.6"), 1926232 / PAGE_SIZE + 1);
    let file = |off| {
        mm.mmap_with(0, 2 * mib + 8192, Prot::R, thp, Some((&libc, off)))
            .unwrap()
    };
    assert_eq!(file(0), 0x7fff_f620_0000);
    assert_eq!(file(1), 0x7fff_f5ff_e000);
    mm.check_invariants().unwrap();
}

/// The layout as (start, end, locked) triples.
fn locks(mm: &Mm) -> Vec<(u64, u64, bool)> {
    mm.vmas()
        .iter()
        .map(|v| (v.start, v.end, v.flags.locked))
        .collect()
}

fn fixed() -> MmapOptions {
    MmapOptions {
        fixed: true,
        ..opts()
    }
}

const AT: u64 = MMAP_MIN_ADDR + 256 * PAGE_SIZE;

/// `mlock` of part of an area splits it (the start rounded down to its page, the
/// length grown by the offset and rounded up, as `do_mlock` does); `munlock` of the
/// whole merges it back; `mlock2(MLOCK_ONFAULT)` adds `VM_LOCKONFAULT`, which a plain
/// `mlock` over it takes away again.
#[test]
fn partial_mlock_splits_and_munlock_merges_back() {
    use mm::mlock::MLOCK_ONFAULT;
    let (_files, mm) = setup();
    let p = PAGE_SIZE;
    mm.mmap_with(AT, 8 * p, Prot::RW, fixed(), None).unwrap();
    // [AT + 2p + 100, + 2p) covers the pages 2, 3 and 4.
    mm.mlock(AT + 2 * p + 100, 2 * p).unwrap();
    assert_eq!(
        locks(&mm),
        [
            (AT, AT + 2 * p, false),
            (AT + 2 * p, AT + 5 * p, true),
            (AT + 5 * p, AT + 8 * p, false)
        ]
    );
    mm.mlock2(AT + 4 * p, 2 * p, MLOCK_ONFAULT).unwrap();
    let onfault: Vec<bool> = mm.vmas().iter().map(|v| v.flags.lockonfault).collect();
    assert_eq!(onfault, [false, false, true, false]);
    mm.mlock(AT + 2 * p, 4 * p).unwrap();
    assert_eq!(
        locks(&mm),
        [
            (AT, AT + 2 * p, false),
            (AT + 2 * p, AT + 6 * p, true),
            (AT + 6 * p, AT + 8 * p, false)
        ]
    );
    assert!(mm.vmas().iter().all(|v| !v.flags.lockonfault));
    mm.check_invariants().unwrap();
    mm.munlock(AT, 8 * p).unwrap();
    assert_eq!(locks(&mm), [(AT, AT + 8 * p, false)]);
    // An empty range is accepted and changes nothing.
    mm.mlock(AT, 0).unwrap();
    assert_eq!(locks(&mm), [(AT, AT + 8 * p, false)]);
    mm.check_invariants().unwrap();
}

/// A locked area and a new unlocked mapping next to it stay two areas; unlocking the
/// old one merges them.
#[test]
fn a_locked_area_does_not_merge_with_a_new_neighbour() {
    let (_files, mm) = setup();
    let p = PAGE_SIZE;
    mm.mmap_with(AT, 2 * p, Prot::RW, fixed(), None).unwrap();
    mm.mlock(AT, 2 * p).unwrap();
    mm.mmap_with(AT + 2 * p, 2 * p, Prot::RW, fixed(), None)
        .unwrap();
    assert_eq!(
        locks(&mm),
        [(AT, AT + 2 * p, true), (AT + 2 * p, AT + 4 * p, false)]
    );
    mm.munlock(AT, p).unwrap();
    assert_eq!(
        locks(&mm),
        [
            (AT, AT + p, false),
            (AT + p, AT + 2 * p, true),
            (AT + 2 * p, AT + 4 * p, false)
        ]
    );
    mm.munlock(AT + p, p).unwrap();
    assert_eq!(locks(&mm), [(AT, AT + 4 * p, false)]);
    mm.check_invariants().unwrap();
}

/// `mmap(MAP_LOCKED)` gives `VM_LOCKED`: apart from a plain neighbour until that one
/// is locked too.
#[test]
fn map_locked_gives_a_locked_area() {
    let (_files, mm) = setup();
    let p = PAGE_SIZE;
    let locked = MmapOptions {
        locked: true,
        ..fixed()
    };
    mm.mmap_with(AT, p, Prot::RW, locked, None).unwrap();
    mm.mmap_with(AT + p, p, Prot::RW, fixed(), None).unwrap();
    assert_eq!(
        locks(&mm),
        [(AT, AT + p, true), (AT + p, AT + 2 * p, false)]
    );
    mm.mlock(AT + p, p).unwrap();
    assert_eq!(locks(&mm), [(AT, AT + 2 * p, true)]);
    mm.check_invariants().unwrap();
}

/// After `mlockall(MCL_FUTURE)` two new adjacent anonymous mappings are both locked
/// and merge with each other, not with the older unlocked area they touch (which
/// `MCL_FUTURE` alone leaves unlocked).
#[test]
fn mlockall_future_locks_later_mappings_only() {
    use mm::mlock::MCL_FUTURE;
    let (_files, mm) = setup();
    let p = PAGE_SIZE;
    let old = mm.mmap_with(0, 2 * p, Prot::RW, opts(), None).unwrap();
    mm.mlockall(MCL_FUTURE).unwrap();
    assert!(mm.def_flags().locked && !mm.def_flags().lockonfault);
    let a = mm.mmap_with(0, p, Prot::RW, opts(), None).unwrap();
    let b = mm.mmap_with(0, p, Prot::RW, opts(), None).unwrap();
    assert_eq!((b + p, a + p), (a, old), "top-down, each below the last");
    assert_eq!(locks(&mm), [(b, a + p, true), (old, old + 2 * p, false)]);
    mm.check_invariants().unwrap();
}

/// `mlockall(MCL_CURRENT)` locks every area but the vdso's special ones (which
/// `mlock_fixup` leaves alone), merges only the neighbours that its lock makes
/// alike, and leaves the default flags unlocked.
#[test]
fn mlockall_current_locks_every_area_but_special_ones() {
    use mm::mlock::MCL_CURRENT;
    let (files, mm) = setup();
    mm.exec(Path::new("/bin/true")).unwrap();
    let p = PAGE_SIZE;
    let f = files.register(Path::new("/lock/f"), 8);
    // A file area whose first half is locked: two areas that MCL_CURRENT makes one.
    mm.mmap_with(AT, 4 * p, Prot::R, fixed(), Some((&f, 0)))
        .unwrap();
    mm.mlock(AT, 2 * p).unwrap();
    let before = mm.vmas();
    mm.mlockall(MCL_CURRENT).unwrap();
    let after = mm.vmas();
    assert_eq!(
        after.len(),
        before.len() - 1,
        "only the file's two halves merge"
    );
    assert_eq!(
        after.iter().find(|v| v.start == AT).map(|v| v.end),
        Some(AT + 4 * p)
    );
    assert!(after.iter().any(|v| v.is_special()));
    for v in &after {
        assert_eq!(v.flags.locked, !v.is_special(), "{v:?}");
    }
    assert!(!mm.def_flags().locked);
    // A mapping made now is not locked.
    let n = mm.mmap_with(0, p, Prot::RW, opts(), None).unwrap();
    assert!(!mm.find(n).unwrap().flags.locked);
    // mlock over a range holding a special mapping: the others locked, it left
    // alone, no error.
    mm.munlockall();
    let vdso = after.iter().find(|v| v.is_special()).unwrap().clone();
    mm.mlock(vdso.start, vdso.len()).unwrap();
    assert!(!mm.find(vdso.start).unwrap().flags.locked);
    mm.check_invariants().unwrap();
}

/// `munlockall()` clears the lock bits of every area and of the default flags: what
/// is mapped after merges with unlocked neighbours again.
#[test]
fn munlockall_unlocks_everything_and_every_later_mapping() {
    use mm::mlock::{MCL_CURRENT, MCL_FUTURE, MCL_ONFAULT};
    let (_files, mm) = setup();
    let p = PAGE_SIZE;
    mm.mmap_with(AT, p, Prot::RW, fixed(), None).unwrap();
    mm.mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT).unwrap();
    assert!(mm.def_flags().lockonfault);
    let v = mm.find(AT).unwrap();
    assert!(v.flags.locked && v.flags.lockonfault);
    mm.mmap_with(AT + 2 * p, p, Prot::RW, fixed(), None)
        .unwrap();
    mm.munlockall();
    assert_eq!(mm.def_flags(), mm::VmFlags::default());
    assert!(mm
        .vmas()
        .iter()
        .all(|v| !v.flags.locked && !v.flags.lockonfault));
    mm.mmap_with(AT + p, p, Prot::RW, fixed(), None).unwrap();
    assert_eq!(locks(&mm), [(AT, AT + 3 * p, false)]);
    mm.check_invariants().unwrap();
}

/// A heap grown after `mlockall(MCL_FUTURE)` is locked (`do_brk_flags` takes the
/// default flags) and so a second `[heap]` area, which later growth extends;
/// `munlockall` merges the two.
#[test]
fn brk_under_mlockall_future_grows_a_locked_heap() {
    use mm::mlock::MCL_FUTURE;
    let (_files, mm) = setup();
    mm.exec(Path::new("/bin/true")).unwrap();
    let p = PAGE_SIZE;
    // The exec left the initial heap [start, end).
    let (start, end) = mm.brk_range();
    assert!(end > start);
    mm.mlockall(MCL_FUTURE).unwrap();
    assert_eq!(mm.brk(end + 2 * p), end + 2 * p);
    assert_eq!(mm.brk(end + 3 * p), end + 3 * p);
    let heap: Vec<(u64, u64, bool)> = mm
        .vmas()
        .iter()
        .filter(|v| matches!(v.backing, mm::Backing::Anon(mm::AnonKind::Heap)))
        .map(|v| (v.start, v.end, v.flags.locked))
        .collect();
    assert_eq!(heap, [(start, end, false), (end, end + 3 * p, true)]);
    mm.check_invariants().unwrap();
    mm.munlockall();
    let heaps = mm
        .vmas()
        .iter()
        .filter(|v| matches!(v.backing, mm::Backing::Anon(mm::AnonKind::Heap)))
        .count();
    assert_eq!(heaps, 1);
    mm.check_invariants().unwrap();
}

/// Bad arguments are `EINVAL` and change nothing: `mlock2` flags other than
/// `MLOCK_ONFAULT`, `mlockall(0)`, `mlockall(MCL_ONFAULT)` alone, unknown `MCL_*`
/// bits. A hole in the range is `ENOMEM` and changes nothing (the model's convention;
/// the kernel locks the areas before the hole).
#[test]
fn bad_lock_calls_are_errors_and_change_nothing() {
    use mm::mlock::{MCL_CURRENT, MCL_FUTURE, MCL_ONFAULT};
    let (_files, mm) = setup();
    let p = PAGE_SIZE;
    mm.mmap_with(AT, 2 * p, Prot::RW, fixed(), None).unwrap();
    mm.mmap_with(AT + 3 * p, 2 * p, Prot::RW, fixed(), None)
        .unwrap();
    let before = locks(&mm);
    let inval = |r: Result<(), Error>| {
        let e = r.unwrap_err();
        assert!(matches!(e, Error::Invalid { .. }), "{e:?}");
        assert_eq!(e.errno(), 22);
    };
    inval(mm.mlock2(AT, p, 2));
    inval(mm.mlockall(0));
    inval(mm.mlockall(MCL_ONFAULT));
    inval(mm.mlockall(MCL_CURRENT | 8));
    assert_eq!(locks(&mm), before);
    assert_eq!(mm.def_flags(), mm::VmFlags::default());
    for r in [
        mm.mlock(AT + p, 3 * p),
        mm.munlock(AT, 5 * p),
        mm.madvise(AT, 5 * p, Advice::Random),
    ] {
        let e = r.unwrap_err();
        assert!(matches!(e, Error::NotMapped { .. }), "{e:?}");
        assert_eq!(e.errno(), 12);
    }
    assert_eq!(locks(&mm), before);
    assert!(mm.vmas().iter().all(|v| !v.flags.rand_read));
    // MCL_FUTURE | MCL_ONFAULT is fine.
    mm.mlockall(MCL_FUTURE | MCL_ONFAULT).unwrap();
    mm.check_invariants().unwrap();
}

/// `MADV_RANDOM` / `MADV_SEQUENTIAL` set `VM_RAND_READ` / `VM_SEQ_READ` (each
/// clearing the other) on part of a file area, splitting it; `MADV_NORMAL` clears
/// both and the pieces merge back.
#[test]
fn read_advice_splits_a_file_area_and_normal_merges_it_back() {
    let (files, mm) = setup();
    let p = PAGE_SIZE;
    let f = files.register(Path::new("/advice/f"), 8);
    mm.mmap_with(AT, 8 * p, Prot::R, fixed(), Some((&f, 0)))
        .unwrap();
    mm.madvise(AT + 2 * p, 2 * p, Advice::Random).unwrap();
    mm.madvise(AT + 3 * p, 3 * p, Advice::Sequential).unwrap();
    let read: Vec<(u64, u64, bool, bool)> = mm
        .vmas()
        .iter()
        .map(|v| (v.start, v.end, v.flags.rand_read, v.flags.seq_read))
        .collect();
    assert_eq!(
        read,
        [
            (AT, AT + 2 * p, false, false),
            (AT + 2 * p, AT + 3 * p, true, false),
            (AT + 3 * p, AT + 6 * p, false, true),
            (AT + 6 * p, AT + 8 * p, false, false)
        ]
    );
    assert_eq!(f.rmap().len(), 4);
    mm.check_invariants().unwrap();
    mm.madvise(AT, 8 * p, Advice::Normal).unwrap();
    assert_eq!(mm.vmas().len(), 1);
    assert_eq!(f.rmap().len(), 1);
    mm.check_invariants().unwrap();
}

/// `MADV_MERGEABLE` marks private areas `VM_MERGEABLE` (splitting them) and leaves
/// shared ones as they are without error (`ksm_madvise`); `MADV_UNMERGEABLE` clears
/// the mark.
#[test]
fn mergeable_advice_marks_private_areas_only() {
    let (_files, mm) = setup();
    let p = PAGE_SIZE;
    let shared = MmapOptions {
        shared: true,
        ..fixed()
    };
    mm.mmap_with(AT, 4 * p, Prot::RW, shared, None).unwrap();
    mm.madvise(AT + p, p, Advice::Mergeable).unwrap();
    assert_eq!(mm.vmas().len(), 1);
    assert!(!mm.find(AT + p).unwrap().flags.mergeable);
    let private = AT + 8 * p;
    mm.mmap_with(private, 4 * p, Prot::RW, fixed(), None)
        .unwrap();
    mm.madvise(private + p, 2 * p, Advice::Mergeable).unwrap();
    let marks: Vec<bool> = mm.vmas()[1..].iter().map(|v| v.flags.mergeable).collect();
    assert_eq!(marks, [false, true, false]);
    mm.madvise(private, 4 * p, Advice::Unmergeable).unwrap();
    assert_eq!(mm.vmas().len(), 2);
    mm.check_invariants().unwrap();
}

/// `MADV_DONTNEED` (and `MADV_FREE`, `MADV_REMOVE`) on a locked area is `EINVAL`
/// (`madvise_dontneed_free_valid_vma`); `MADV_DONTNEED_LOCKED` is allowed.
#[test]
fn discarding_a_locked_area_is_refused() {
    let (_files, mm) = setup();
    let p = PAGE_SIZE;
    mm.mmap_with(AT, 2 * p, Prot::RW, fixed(), None).unwrap();
    let dontneed = Advice::from_linux(4).unwrap();
    mm.madvise(AT, 2 * p, dontneed).unwrap();
    mm.mlock(AT + p, p).unwrap();
    for n in [4, 8, 9] {
        let e = mm
            .madvise(AT, 2 * p, Advice::from_linux(n).unwrap())
            .unwrap_err();
        assert_eq!(e.errno(), 22, "advice {n}");
    }
    mm.madvise(AT, 2 * p, Advice::from_linux(24).unwrap())
        .unwrap();
}

/// `MAP_DROPPABLE` memory is never locked (`vma_supports_mlock`): `mlock` leaves it
/// alone without error, a new droppable area gets no lock bits from
/// `mlockall(MCL_FUTURE)`, and `MAP_LOCKED` with it is refused (`do_mmap`).
#[test]
fn droppable_memory_is_never_locked() {
    use mm::mlock::MCL_FUTURE;
    let (_files, mm) = setup();
    let p = PAGE_SIZE;
    let drop = MmapOptions {
        droppable: true,
        ..opts()
    };
    let d = mm.mmap_with(0, 2 * p, Prot::RW, drop, None).unwrap();
    mm.mlock(d, 2 * p).unwrap();
    assert_eq!(locks(&mm), [(d, d + 2 * p, false)]);
    mm.mlockall(MCL_FUTURE).unwrap();
    let e = mm.mmap_with(0, p, Prot::RW, drop, None).unwrap();
    let plain = mm.mmap_with(0, p, Prot::RW, opts(), None).unwrap();
    assert_eq!(
        locks(&mm),
        [(plain, plain + p, true), (e, d + 2 * p, false)],
        "the new droppable page merged with the old, unlocked"
    );
    let locked = MmapOptions {
        locked: true,
        ..drop
    };
    assert!(mm.mmap_with(0, p, Prot::RW, locked, None).is_err());
    assert_eq!(mm.vmas().len(), 2);
    mm.check_invariants().unwrap();
}

fn dont_unmap() -> MremapFlags {
    MremapFlags {
        may_move: true,
        dont_unmap: true,
        ..Default::default()
    }
}

/// `MREMAP_DONTUNMAP` copies the range to a new area and leaves the old one mapped
/// as it was; from a locked area, the whole area loses its lock bits in place, kept
/// apart from the unlocked neighbours it now matches (Linux 6.18 neither splits it
/// nor merges it). A length change, no `MREMAP_MAYMOVE`, or a special mapping is
/// refused, with nothing changed.
#[test]
fn dont_unmap_copies_and_leaves_the_old_range_mapped() {
    let (_files, mm) = setup();
    let p = PAGE_SIZE;
    mm.mmap_with(AT, 16 * p, Prot::RW, fixed(), None).unwrap();
    let to = mm
        .mremap(AT, 2 * p, 2 * p, dont_unmap(), 0, Placement::default())
        .unwrap();
    assert!(to >= AT + 16 * p, "top-down search, above the low area");
    assert_eq!(mm.find(to).unwrap().len(), 2 * p);
    assert_eq!(mm.find(AT).unwrap().end, AT + 16 * p, "the old range stays");
    // A free hint is taken.
    let hint = AT + 128 * p;
    let got = mm.mremap(AT + 4 * p, p, p, dont_unmap(), hint, Placement::default());
    assert_eq!(got, Ok(hint));
    // A fixed target in a reserve replaces that part of it.
    let reserve = AT + 64 * p;
    mm.mmap_with(reserve, 8 * p, Prot::NONE, fixed(), None)
        .unwrap();
    let fixed_to = MremapFlags {
        fixed: true,
        ..dont_unmap()
    };
    let got = mm
        .mremap(
            AT + 2 * p,
            2 * p,
            2 * p,
            fixed_to,
            reserve + 2 * p,
            Placement::default(),
        )
        .unwrap();
    assert_eq!(got, reserve + 2 * p);
    assert_eq!(mm.find(reserve + 2 * p).unwrap().prot, Prot::RW);
    assert_eq!(mm.find(reserve).unwrap().prot, Prot::NONE);
    // From the middle of a locked area: all of it unlocked, nothing merged.
    mm.mlock(AT + 8 * p, 4 * p).unwrap();
    mm.mremap(
        AT + 9 * p,
        2 * p,
        2 * p,
        dont_unmap(),
        0,
        Placement::default(),
    )
    .unwrap();
    let low: Vec<_> = locks(&mm)
        .into_iter()
        .filter(|&(s, _, _)| s < AT + 16 * p)
        .collect();
    assert_eq!(
        low,
        [
            (AT, AT + 8 * p, false),
            (AT + 8 * p, AT + 12 * p, false),
            (AT + 12 * p, AT + 16 * p, false)
        ]
    );
    mm.check_invariants().unwrap();
    // Refusals.
    let before = locks(&mm);
    let resize = mm.mremap(AT, 2 * p, 4 * p, dont_unmap(), 0, Placement::default());
    assert_eq!(resize.unwrap_err().errno(), 22);
    let no_move = MremapFlags {
        may_move: false,
        ..dont_unmap()
    };
    let stays = mm.mremap(AT, 2 * p, 2 * p, no_move, 0, Placement::default());
    assert_eq!(stays.unwrap_err().errno(), 22);
    let unaligned_hint = mm.mremap(AT, 2 * p, 2 * p, dont_unmap(), 1, Placement::default());
    assert_eq!(unaligned_hint.unwrap_err().errno(), 22);
    assert_eq!(locks(&mm), before);
}

/// `old_len` 0 maps a shared object a second time, from the page at the old
/// address, and leaves the first mapping; it is refused for private memory
/// (EINVAL), and without `MREMAP_MAYMOVE` there is nowhere to put it (ENOMEM).
#[test]
fn old_len_zero_maps_a_shared_object_again() {
    let (files, mm) = setup();
    let p = PAGE_SIZE;
    let f = files.register(Path::new("/remap/shared"), 16);
    let shared = MmapOptions {
        shared: true,
        ..fixed()
    };
    mm.mmap_with(AT, 4 * p, Prot::R, shared, Some((&f, 0)))
        .unwrap();
    let may_move = MremapFlags {
        may_move: true,
        ..Default::default()
    };
    let b = mm
        .mremap(AT + p, 0, 3 * p, may_move, 0, Placement::default())
        .unwrap();
    let copy = mm.find(b).unwrap();
    assert_eq!((copy.start, copy.end), (b, b + 3 * p));
    assert!(copy.flags.shared);
    let (file, pgoff) = copy.file().unwrap();
    assert!(std::sync::Arc::ptr_eq(file, &f));
    assert_eq!(pgoff, 1);
    assert_eq!(mm.find(AT).unwrap().len(), 4 * p, "the first stays");
    assert_eq!(f.rmap().len(), 2, "both in the file's reverse map");
    let no_move = mm.mremap(AT, 0, p, MremapFlags::default(), 0, Placement::default());
    assert_eq!(no_move.unwrap_err().errno(), 12);
    let private = AT + 32 * p;
    mm.mmap_with(private, 2 * p, Prot::RW, fixed(), None)
        .unwrap();
    let before = mm.vmas().len();
    let refused = mm.mremap(private, 0, p, may_move, 0, Placement::default());
    assert_eq!(refused.unwrap_err().errno(), 22);
    assert_eq!(mm.vmas().len(), before);
    mm.check_invariants().unwrap();
}

/// A protection key set by `pkey_mprotect` splits the area and keeps the piece
/// apart from neighbours with the default key, though their protection matches;
/// a plain `mprotect` keeps each area's key, and key -1 is a plain `mprotect`.
/// A key outside x86-64's 16 is refused, with nothing changed.
#[test]
fn a_protection_key_keeps_areas_apart_and_mprotect_keeps_it() {
    let (_files, mm) = setup();
    let p = PAGE_SIZE;
    mm.mmap_with(AT, 4 * p, Prot::RW, fixed(), None).unwrap();
    mm.pkey_mprotect(AT + p, p, Prot::RW, None, 3).unwrap();
    let keys = |mm: &Mm| -> Vec<(u64, u64, u8)> {
        mm.vmas()
            .iter()
            .map(|v| (v.start - AT, v.end - AT, v.flags.pkey))
            .collect()
    };
    assert_eq!(keys(&mm), [(0, p, 0), (p, 2 * p, 3), (2 * p, 4 * p, 0)]);
    mm.mprotect(AT, 4 * p, Prot::R).unwrap();
    assert_eq!(keys(&mm), [(0, p, 0), (p, 2 * p, 3), (2 * p, 4 * p, 0)]);
    mm.pkey_mprotect(AT + p, p, Prot::R, None, 0).unwrap();
    assert_eq!(keys(&mm), [(0, 4 * p, 0)]);
    mm.pkey_mprotect(AT, p, Prot::RW, None, -1).unwrap();
    assert_eq!(mm.vmas().len(), 2);
    let refused = mm.pkey_mprotect(AT, p, Prot::R, None, 16);
    assert_eq!(refused.unwrap_err().errno(), 22);
    assert_eq!(mm.find(AT).unwrap().prot, Prot::RW);
    mm.check_invariants().unwrap();
}

/// An unmap refused by a seal (`EPERM`) leaves what the kernel's leaves: the
/// unsealed area it starts in split at its start, the two pieces kept apart
/// though they could merge (a seam the invariants accept), nothing unmapped. A
/// later change over that boundary merges them again.
#[test]
fn an_unmap_refused_by_a_seal_leaves_the_first_area_split() {
    let (_files, mm) = setup();
    let p = PAGE_SIZE;
    mm.mmap_with(AT, 4 * p, Prot::RW, fixed(), None).unwrap();
    mm.mseal(AT + 2 * p, p, 0).unwrap();
    let refused = mm.munmap(AT + p, 2 * p);
    assert_eq!(refused.unwrap_err().errno(), 1);
    let starts: Vec<u64> = mm.vmas().iter().map(|v| v.start - AT).collect();
    assert_eq!(starts, [0, p, 2 * p, 3 * p]);
    mm.check_invariants().unwrap();
    mm.mprotect(AT, 2 * p, Prot::R).unwrap();
    let starts: Vec<u64> = mm.vmas().iter().map(|v| v.start - AT).collect();
    assert_eq!(starts, [0, 2 * p, 3 * p]);
    mm.check_invariants().unwrap();
}
