//! mremap, MAP_FIXED_NOREPLACE, madvise flags, merge-changing mmap flags and the
//! huge-page placement rule, checked on concrete cases (the model-based test in
//! `model.rs` covers random sequences).

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
