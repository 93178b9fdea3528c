//! Bad input to every public function of mm, one test per input class (the table
//! is docs/bad-input.md). Each returns its documented error, never panics, and a
//! failed call leaves the address space and the reverse maps exactly as they were.

use mm::elf::ElfImage;
use mm::layout::{MMAP_BASE, MMAP_MIN_ADDR, TASK_SIZE};
use mm::ldso::{LoadPlan, SearchPath};
use mm::{Access, CallPattern, Error, Files, MapFlags, Mm, Prot, PAGE_SIZE};
use rmap::{Design, Topology};
use std::path::Path;
use std::sync::Arc;

fn setup(design: Design) -> (Arc<Files>, Mm) {
    let files = Files::new(design, Topology::Os, CallPattern::PerVma);
    let mm = Mm::new(files.clone());
    let f = files.register(Path::new("/bad/file"), 16);
    mm.mmap(0, 4 * PAGE_SIZE, Prot::RW, MapFlags::default(), None)
        .unwrap();
    mm.mmap(
        0,
        3 * PAGE_SIZE,
        Prot::R,
        MapFlags::default(),
        Some((&f, 2)),
    )
    .unwrap();
    (files, mm)
}

fn shape(mm: &Mm) -> Vec<(u64, u64, Prot, Option<u64>)> {
    mm.vmas()
        .iter()
        .map(|v| (v.start, v.end, v.prot, v.rmap_id()))
        .collect()
}

/// Runs `f`, which must fail with an error satisfying `ok`, and checks that nothing
/// changed.
fn refused(mm: &Mm, what: &str, f: impl FnOnce() -> Result<(), Error>, ok: fn(&Error) -> bool) {
    let before = shape(mm);
    let e = f().expect_err(what);
    assert!(ok(&e), "{what}: {e:?}");
    assert!(e.errno() > 0 && !e.to_string().is_empty());
    assert_eq!(shape(mm), before, "{what} changed the address space");
    mm.check_invariants().unwrap();
}

fn invalid(e: &Error) -> bool {
    matches!(e, Error::Invalid { .. })
}

#[test]
fn bad_ranges_are_einval() {
    for d in [Design::Linux, Design::Aspace] {
        let (files, mm) = setup(d);
        let f = files.register(Path::new("/bad/file"), 16);
        let fixed = MapFlags {
            fixed: true,
            shared: false,
        };
        let a = MMAP_MIN_ADDR;
        let cases: Vec<(&str, u64, u64)> = vec![
            ("zero length", a, 0),
            ("unaligned address", a + 1, PAGE_SIZE),
            ("length overflows", a, u64::MAX),
            ("range overflows", !(PAGE_SIZE - 1), PAGE_SIZE),
            ("past TASK_SIZE", TASK_SIZE, PAGE_SIZE),
            ("straddles TASK_SIZE", TASK_SIZE - PAGE_SIZE, 2 * PAGE_SIZE),
        ];
        for (what, addr, len) in cases {
            refused(
                &mm,
                what,
                || mm.mmap(addr, len, Prot::RW, fixed, None).map(drop),
                invalid,
            );
            refused(&mm, what, || mm.munmap(addr, len), invalid);
            if len == 0 {
                // `do_mprotect_pkey` and `do_madvise` return 0 for an empty range at
                // an aligned address; munmap and mmap refuse it.
                let before = shape(&mm);
                mm.mprotect(addr, len, Prot::R).unwrap();
                mm.madvise(addr, len, mm::Advice::DontFork).unwrap();
                assert_eq!(shape(&mm), before);
                continue;
            }
            refused(&mm, what, || mm.mprotect(addr, len, Prot::R), invalid);
            refused(
                &mm,
                what,
                || mm.madvise(addr, len, mm::Advice::DontFork),
                |e| {
                    // Past the user space there is nothing mapped to advise (ENOMEM
                    // in the kernel, which walks no VMA there).
                    invalid(e) || matches!(e, Error::NotMapped { .. })
                },
            );
        }
        refused(
            &mm,
            "unaligned, empty",
            || mm.mprotect(a + 1, 0, Prot::R),
            invalid,
        );
        refused(
            &mm,
            "unaligned, empty",
            || mm.madvise(a + 1, 0, mm::Advice::DontFork),
            invalid,
        );
        let nofix = MapFlags::default();
        refused(
            &mm,
            "zero length",
            || mm.mmap(0, 0, Prot::RW, nofix, None).map(drop),
            invalid,
        );
        refused(
            &mm,
            "len overflow",
            || mm.mmap(0, u64::MAX, Prot::RW, nofix, None).map(drop),
            invalid,
        );
        refused(
            &mm,
            "fixed below mmap_min_addr",
            || mm.mmap(0, PAGE_SIZE, Prot::RW, fixed, None).map(drop),
            invalid,
        );
        refused(
            &mm,
            "file offset overflows",
            || {
                mm.mmap(0, 2 * PAGE_SIZE, Prot::R, nofix, Some((&f, u64::MAX)))
                    .map(drop)
            },
            invalid,
        );
    }
}

#[test]
fn no_room_and_not_mapped_are_enomem() {
    let (_files, mm) = setup(Design::Sharded);
    refused(
        &mm,
        "bigger than the address space",
        || {
            mm.mmap(0, TASK_SIZE, Prot::RW, MapFlags::default(), None)
                .map(drop)
        },
        |e| matches!(e, Error::NoSpace { .. }),
    );
    let hole = MMAP_MIN_ADDR + 64 * PAGE_SIZE;
    let not_mapped = |e: &Error| matches!(e, Error::NotMapped { .. });
    // munmap of a hole: the kernel answers 0 and nothing changes.
    let before = mm.vmas().len();
    assert_eq!(mm.munmap(hole, PAGE_SIZE), Ok(()));
    assert_eq!(mm.vmas().len(), before);
    mm.check_invariants().unwrap();
    refused(
        &mm,
        "mprotect of a hole",
        || mm.mprotect(hole, PAGE_SIZE, Prot::R),
        not_mapped,
    );
    // mprotect over a mapped page and a hole: all or nothing.
    let top = mm.vmas().last().unwrap().end;
    refused(
        &mm,
        "mprotect across a hole",
        || mm.mprotect(top - PAGE_SIZE, 2 * PAGE_SIZE, Prot::NONE),
        not_mapped,
    );
}

#[test]
fn brk_refusals_return_the_old_break() {
    let (_files, mm) = setup(Design::Linux);
    // Before exec there is no heap: any request returns the old break (0).
    let before = shape(&mm);
    for to in [0, 1, PAGE_SIZE, u64::MAX, MMAP_BASE] {
        assert_eq!(mm.brk(to), 0);
    }
    assert_eq!(shape(&mm), before);
    if mm.exec(Path::new("/bin/true")).is_err() {
        return; // No /bin/true on this machine: the rest needs a heap.
    }
    let (start, cur) = mm.brk_range();
    let before = shape(&mm);
    for to in [
        0,
        start - 1,
        u64::MAX,
        u64::MAX - 1,
        MMAP_BASE + PAGE_SIZE,
        TASK_SIZE,
    ] {
        assert_eq!(mm.brk(to), cur, "brk({to:#x})");
        assert_eq!(shape(&mm), before, "brk({to:#x}) changed the address space");
    }
    // Growing into another mapping is refused.
    let next = mm.vmas().into_iter().find(|v| v.start >= cur).unwrap();
    assert_eq!(mm.brk(next.end), cur);
    // Shrinking to the start is allowed and empties the heap.
    assert_eq!(mm.brk(start), start);
    mm.check_invariants().unwrap();
}

#[test]
fn bad_executables_fail_before_anything_changes() {
    let (files, mm) = setup(Design::Aspace);
    let dir = std::env::temp_dir().join(format!("mm-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let garbage = dir.join("garbage");
    std::fs::write(&garbage, b"\x7fELF\x02\x01\x01garbage that is not a header").unwrap();
    let empty = dir.join("empty");
    std::fs::write(&empty, b"").unwrap();
    // Text with no `#!` line: execve answers ENOEXEC (only a shell would run it).
    // A `#!` script execs its interpreter: tests/script.rs.
    let text = dir.join("script");
    std::fs::write(&text, b"echo hi\n").unwrap();
    for p in [
        Path::new("/no/such/file"),
        Path::new(""),
        dir.as_path(),
        garbage.as_path(),
        empty.as_path(),
        text.as_path(),
    ] {
        refused(
            &mm,
            &format!("exec {}", p.display()),
            || mm.exec(p),
            |_| true,
        );
        assert!(files.program(p).is_err());
        assert!(ElfImage::load(p).is_err());
        assert!(LoadPlan::resolve(p, &SearchPath::default()).is_err());
    }
    // Every truncation of a real ELF header is an error, never a panic.
    if let Ok(bytes) = std::fs::read("/bin/true") {
        for cut in (0..bytes.len().min(4096)).step_by(7) {
            let _ = ElfImage::parse(Path::new("/bin/true"), &bytes[..cut]);
        }
        // And so is every single-byte corruption of its first 128 bytes.
        for i in 0..128.min(bytes.len()) {
            let mut b = bytes.clone();
            b[i] ^= 0xff;
            let _ = ElfImage::parse(Path::new("/bin/true"), &b);
        }
    }
    assert!(files.open(Path::new("/no/such/file")).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn faults_outside_mappings_or_rights() {
    let (_files, mm) = setup(Design::NumaLocks);
    let ro = mm.vmas().into_iter().find(|v| v.prot == Prot::R).unwrap();
    for (addr, acc) in [
        (0, Access::Read),
        (u64::MAX, Access::Read),
        (TASK_SIZE, Access::Write),
        (ro.start, Access::Write),
        (ro.start, Access::Exec),
    ] {
        assert_eq!(mm.page_fault(addr, acc), Err(Error::Fault { addr }));
    }
    assert_eq!(mm.page_fault(ro.start, Access::Read), Ok(()));
    assert!(mm.find(u64::MAX).is_none());
}

#[test]
fn odd_but_valid_inputs() {
    let files = Files::new(Design::NumaSplit, Topology::Os, CallPattern::PerVma);
    // A zero-page file, and a mapping past its end (Linux allows it; access would
    // SIGBUS), are accepted and linked.
    let f = files.register(Path::new("/bad/empty"), 0);
    let mm = Mm::new(files.clone());
    let at = mm
        .mmap(
            0,
            2 * PAGE_SIZE,
            Prot::R,
            MapFlags::default(),
            Some((&f, 1 << 40)),
        )
        .unwrap();
    assert_eq!(f.rmap().len(), 1);
    // An unaligned length rounds up; prot NONE is fine; exit twice is fine.
    mm.mprotect(at, 1, Prot::NONE).unwrap();
    mm.munmap(at, 1).unwrap();
    mm.exit();
    mm.exit();
    assert!(mm.is_empty() && f.rmap().is_empty());
    assert_eq!(Prot::from_maps("r"), None);
    assert_eq!(Prot::from_maps(""), None);
    assert_eq!(Prot::from_maps("rw-p"), Some(Prot::RW));
    mm.check_invariants().unwrap();
}

/// Recordings on disk: a directory, a FIFO or `/dev/zero` as the trace or the maps,
/// a trace too big, garbage maps, a bad `# aspace-file` line. Each is an error naming
/// the file (and line), at once: a FIFO is never opened for reading.
#[test]
fn bad_recordings_are_errors_that_name_the_file() {
    use mm::recording::Recording;
    let dir = std::env::temp_dir().join(format!("aspace-bad-rec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.strace");
    std::fs::write(
        &good,
        "1 munmap(0x10000, 4096) = 0\n1 +++ exited with 0 +++\n",
    )
    .unwrap();
    let fifo = dir.join("fifo");
    let have_fifo = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    let mut traces = vec![
        dir.clone(),
        Path::new("/dev/zero").to_path_buf(),
        dir.join("missing"),
    ];
    if have_fifo {
        traces.push(fifo.clone());
    } else {
        eprintln!("mkfifo unavailable: FIFO case skipped");
    }
    for t in &traces {
        let e = Recording::load(t, None).unwrap_err();
        assert!(e.contains(&t.display().to_string()), "{t:?}: {e}");
    }
    let mut maps = vec![Path::new("/dev/zero").to_path_buf(), good.clone()];
    if have_fifo {
        maps.push(fifo.clone());
    }
    for m in &maps {
        let e = Recording::load(&good, Some(m)).unwrap_err();
        assert!(e.contains(&m.display().to_string()), "{m:?}: {e}");
    }
    // A maps directory whose PID.maps is garbage.
    let maps_dir = dir.join("maps");
    std::fs::create_dir_all(&maps_dir).unwrap();
    std::fs::write(maps_dir.join("1.maps"), "not maps\n").unwrap();
    let e = Recording::load(&good, Some(&maps_dir)).unwrap_err();
    assert!(
        e.contains("1.maps") && e.contains("not a /proc/PID/maps file"),
        "{e}"
    );
    // A broken identity record: the trace's line is named.
    let bad = dir.join("bad.strace");
    std::fs::write(
        &bad,
        "1 munmap(0x10000, 4096) = 0\n# aspace-file size=1 path=/x\n",
    )
    .unwrap();
    let e = Recording::load(&bad, None).unwrap_err();
    assert!(e.contains("line 2") && e.contains("aspace-file"), "{e}");
    // A good one loads, with no maps beside it.
    let rec = Recording::load(&good, None).unwrap();
    assert_eq!((rec.events.len(), rec.maps.len()), (2, 0));
    std::fs::remove_dir_all(&dir).unwrap();
}
