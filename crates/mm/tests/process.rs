//! exec / fork / exit / brk / page faults on real binaries, and bad input leaving the
//! address space unchanged.

use mm::error::{EINVAL, ENOENT, ENOEXEC, ENOMEM};
use mm::{Access, Error, Files, MapFlags, Mm, Prot, PAGE_SIZE};
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
        let files = Files::new(design, Topology::detect());
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
        // Fork links every child file VMA: one insert_after (one lock hold)
        // each for the Linux-derived designs, as dup_mmap; one batch per
        // file for aspace.
        let calls = child.calls();
        assert_eq!(calls.linked as usize, child_file_vmas(&child), "{design}");
        if design == Design::Aspace {
            assert_eq!(calls.insert_after, 0, "{design}");
            assert!(calls.insert_after_batch >= 3, "{design}: {calls:?}");
            assert!((calls.insert_after_batch as usize) < child_file_vmas(&child));
        } else {
            assert_eq!(
                calls.insert_after as usize,
                child_file_vmas(&child),
                "{design}"
            );
            assert_eq!(calls.insert_after_batch, 0, "{design}");
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
}

fn child_file_vmas(mm: &Mm) -> usize {
    mm.vmas().iter().filter(|v| v.file().is_some()).count()
}

#[test]
fn call_pattern_follows_the_design() {
    for (design, batched) in [(Design::Linux, false), (Design::Aspace, true)] {
        let files = Files::new(design, Topology::detect());
        let mm = Mm::new(files.clone());
        mm.exec(Path::new("/bin/sleep")).unwrap();
        let c = mm.calls();
        let objects = files
            .program(Path::new("/bin/sleep"))
            .unwrap()
            .files()
            .count() as u64;
        if batched {
            assert_eq!(c.insert, 0);
            assert_eq!(c.insert_batch, objects, "one batch per file");
        } else {
            assert_eq!(c.insert_batch, 0);
            assert_eq!(c.insert, c.linked, "one insert per VMA");
        }
        mm.exit();
        let c = mm.calls();
        assert_eq!(c.remove_batch, objects, "exit: one remove_batch per file");
        assert_eq!(c.remove, 0);
        assert_eq!(c.unlinked, c.linked);
    }
}

#[test]
fn page_faults_respect_protection() {
    let files = Files::new(Design::Linux, Topology::detect());
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
    let files = Files::new(Design::Linux, Topology::detect());
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
    let files = Files::new(Design::Linux, Topology::detect());
    let mm = Mm::new(files.clone());
    mm.exec(Path::new("/bin/sleep")).unwrap();
    let before = snapshot(&mm);
    let libc_len = libc(&files).rmap().len();

    let sleep = std::fs::read("/bin/sleep").unwrap();
    let not_elf = tmp("script", b"#!/bin/sh\necho hi\n");
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
    let files = Files::new(Design::Linux, Topology::detect());
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
