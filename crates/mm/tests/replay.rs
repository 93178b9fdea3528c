//! Replays the shipped real traces (tests/data, recorded as the README says) and
//! compares the final layout with the `/proc/PID/maps` taken at exit.
//!
//! `python3-alloc-loop` is a long trace (one process, ~2,300 memory calls, a third
//! of them `mremap`), recorded from `python3-alloc-loop.py` in that directory with a
//! fixed environment so the strace run and the gdb run allocate alike (`long.py` is
//! a copy of `python3-alloc-loop.py`):
//!
//! ```sh
//! E="PYTHONHASHSEED=0 GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072"
//! env -i $E setarch -R strace -f -y -e trace=memory,process \
//!     -o python3-alloc-loop.strace /usr/bin/python3 -S long.py
//! env -i $E gdb -nx -q -batch -ex 'set startup-with-shell off' \
//!     -ex 'catch syscall exit_group' -ex run -ex 'python import gdb; \
//!     open("python3-alloc-loop.maps","w").write(open("/proc/%d/maps" % \
//!     gdb.selected_inferior().pid).read())' --args /usr/bin/python3 -S long.py
//! ```

//!
//! `sh-two-commands` and `make-posix-spawn` were recorded with `scripts/record.sh`
//! (every process's maps at its `exit_group`, and the identity of each file the run
//! mapped at the end of the trace):
//!
//! ```sh
//! scripts/record.sh sh-two-commands sh -c '/bin/true; /usr/bin/env true'
//! printf 'all:\n\t/bin/true\n\t/usr/bin/env true\n' > Makefile   # GNU make 4.3
//! scripts/record.sh make-posix-spawn make -s -f Makefile
//! ```
//!
//! The shell runs each command in a `vfork` child, make through glibc's
//! `posix_spawn` (`clone3(CLONE_VM|CLONE_VFORK)`); both children `execve` in the
//! parent's address space, which must come out of it untouched.

use mm::maps::{diff_maps, parse_maps};
use mm::placement::Placement;
use mm::recording::{Check, Recording};
use mm::replay::Replay;
use mm::strace;
use mm::{CallPattern, Files};
use rmap::{Design, Topology};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn data(name: &str) -> String {
    std::fs::read_to_string(path(name)).unwrap()
}

/// Where the model would place `call` (a placing call of pid 7 without its result,
/// `mmap(...)` or `shmat(...)`) after the trace lines `before`, in a process started
/// from `git-version.maps`: read from its miss when the trace says 0x10000.
fn model_choice(files: &Arc<Files>, before: &str, call: &str) -> u64 {
    let mut r = Replay::new(files.clone(), Placement::LINUX_THP);
    r.start_from_maps(7, &data("git-version.maps")).unwrap();
    let text = format!("{before}7 {call} = 0x10000\n");
    let rep = r.run(&strace::parse(&text).unwrap()).clone();
    rep.misplaced.last().expect("a miss at 0x10000").2
}

/// Replays `rec` and checks what every shipped recording must give: every non-fixed
/// `mmap` at the kernel's address, every result as recorded, nothing the model
/// cannot express but `exit_group`, and each recorded process's final layout
/// identical line for line. A file replaced since the recording (a package upgrade on
/// this machine) is reported and shows as a device and inode difference: that is
/// the only difference allowed, and only for a file the check says changed.
fn check_all(name: &str, rec: &Recording, design: Design, pattern: CallPattern) -> Check {
    let files = Files::new(design, Topology::detect(), pattern);
    let check = rec.check(files, Placement::LINUX_THP);
    let rep = &check.report;
    eprintln!(
        "{name} {design:?} {pattern}: {} calls, {} events, placed {}/{} at the kernel's address, \
         {:.2} lock holds/call, {} processes compared ({} VMAs)",
        rep.calls,
        rep.events,
        rep.placed_same,
        rep.placed,
        rep.lock_holds_per_call(),
        check.processes.len(),
        check.processes.iter().map(|p| p.compared).sum::<usize>()
    );
    for (line, what) in &rep.files_changed {
        eprintln!("  line {line}: {what}");
    }
    assert!(rep.calls > 20, "{name}");
    assert_eq!(rep.placed_same, rep.placed, "{name}: {:x?}", rep.misplaced);
    assert!(
        rep.result_differs.is_empty(),
        "{name}: {:?}",
        rep.result_differs
    );
    assert!(
        rep.not_expressed
            .iter()
            .all(|(_, w)| w.starts_with("exit_group")),
        "{name}: {:?}",
        rep.not_expressed
    );
    assert!(!check.processes.is_empty(), "{name}: no maps compared");
    for p in &check.processes {
        for d in &p.differences {
            eprintln!("  pid {}: {d}", p.pid);
            // "file F changed since it was recorded: device and inode THEN in the
            // recorded maps, NOW now (range)": allowed only if F really is another
            // file now.
            let changed = d.strip_prefix("file ").and_then(|rest| {
                let (file, ids) =
                    rest.split_once(" changed since it was recorded: device and inode ")?;
                Some((file, ids.split_once(" in the recorded maps")?.0))
            });
            let Some((file, then)) = changed else {
                panic!("{name}: pid {} differs: {:#?}", p.pid, p.differences);
            };
            let now = mm::FileId::of(&std::fs::metadata(file).unwrap());
            assert_ne!(then, now.to_string(), "{name}: {file} is the recorded file");
        }
    }
    check
}

#[test]
fn shipped_traces_replay() {
    for (trace, maps) in [
        ("git-version.strace", "git-version.maps"),
        ("python3-import-json.strace", "python3-import-json.maps"),
        // The long one: ~2,300 calls of one process (mmap, munmap, mremap, brk).
        ("python3-alloc-loop.strace", "python3-alloc-loop.maps"),
    ] {
        let rec = Recording::load(&path(trace), Some(&path(maps))).unwrap();
        for design in [Design::Linux, Design::Aspace] {
            check_all(
                trace.trim_end_matches(".strace"),
                &rec,
                design,
                CallPattern::PerVma,
            );
        }
    }
}

/// The two recordings of programs that spawn children through a shared address
/// space: every process's layout identical, the parent's included.
#[test]
fn vfork_and_posix_spawn_recordings_replay_to_every_processs_layout() {
    for name in ["sh-two-commands", "make-posix-spawn"] {
        let rec = Recording::load(&path(&format!("{name}.strace")), None).unwrap();
        // The parent, its two children: three layouts each.
        assert_eq!(rec.maps.len(), 3, "{name}");
        for design in [Design::Linux, Design::Aspace] {
            for pattern in CallPattern::ALL {
                let check = check_all(name, &rec, design, pattern);
                assert_eq!(
                    check.report.events,
                    rec.events
                        .iter()
                        .filter(|e| !e.call.is_memory()
                            && !matches!(e.call, strace::Call::RecordedFile(_)))
                        .count() as u64
                );
            }
        }
    }
}

/// strace often prints `<... vfork resumed> = PID` after lines of the child: moved
/// there in a real trace, the vfork still happens before the child's first call, and
/// every layout stays identical. Without the reordering, the child's calls would run
/// in a space of its own and its exec would leave the parent's untouched only by
/// luck; its `mmap`s before the result line would be lost with it.
#[test]
fn a_vfork_result_printed_late_changes_nothing() {
    for (name, clone) in [
        ("sh-two-commands", "vfork resumed>"),
        ("make-posix-spawn", "clone3 resumed>"),
    ] {
        let text = data(&format!("{name}.strace"));
        let lines: Vec<&str> = text.lines().collect();
        let at = lines.iter().position(|l| l.contains(clone)).unwrap();
        let child = lines[at].rsplit("= ").next().unwrap().trim().to_string();
        // The result printed after the child's execve result and its next 5 lines;
        // the parent's lines meanwhile (its wait4 starting) move after it with it.
        let is_child = |l: &str| l.split_whitespace().next() == Some(child.as_str());
        let exec_done = (at..lines.len())
            .find(|&i| is_child(lines[i]) && lines[i].contains("execve resumed"))
            .unwrap();
        let mut to = exec_done + 1;
        let mut seen = 0;
        while seen < 5 {
            seen += usize::from(is_child(lines[to]));
            to += 1;
        }
        let (moved_child, moved_parent): (Vec<&str>, Vec<&str>) =
            lines[at + 1..to].iter().partition(|l| is_child(l));
        let mut late: Vec<&str> = lines[..at].to_vec();
        late.extend(moved_child);
        late.push(lines[at]);
        late.extend(moved_parent);
        late.extend(&lines[to..]);
        assert_eq!(late.len(), lines.len());
        let dir = std::env::temp_dir().join(format!("aspace-late-vfork-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let trace = dir.join(format!("{name}.strace"));
        std::fs::write(&trace, late.join("\n") + "\n").unwrap();
        let rec = Recording::load(&trace, Some(&path(&format!("{name}.maps")))).unwrap();
        check_all(name, &rec, Design::Linux, CallPattern::PerVma);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// `sh -c '/bin/true; python3 -c "<start and join a thread>"'`: fork, execve in the
/// child, a CLONE_VM thread with its MAP_STACK stack and glibc's 128 MiB
/// MAP_NORESERVE arena reservation, trimmed with munmap.
#[test]
fn fork_exec_and_thread_trace_replays_with_every_placement_right() {
    let events = strace::parse(&data("sh-fork-exec-thread.strace")).unwrap();
    for design in [Design::Linux, Design::Aspace] {
        let files = Files::new(design, Topology::detect(), CallPattern::PerVma);
        let mut r = Replay::new(files, Placement::LINUX_THP);
        let rep = r.run(&events).clone();
        assert!(rep.calls > 50 && rep.events >= 8, "{rep:?}");
        assert_eq!(rep.placed_same, rep.placed, "{:x?}", rep.misplaced);
        assert!(rep.result_differs.is_empty(), "{:?}", rep.result_differs);
        assert!(rep.not_expressed.is_empty(), "{:?}", rep.not_expressed);
        // With the top-down policy the huge-page-aligned arena is missed.
        let files = Files::new(design, Topology::detect(), CallPattern::PerVma);
        let mut r = Replay::new(files, Placement::TOP_DOWN);
        assert!(r.run(&events).placed_same < rep.placed);
    }
}

#[test]
fn a_replay_can_start_from_recorded_maps() {
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let mut r = Replay::new(files.clone(), Placement::LINUX_THP);
    let text = data("git-version.maps");
    r.start_from_maps(7, &text).unwrap();
    let mm = r.mm(7).unwrap().clone();
    mm.check_invariants().unwrap();
    let real = parse_maps(&text).unwrap();
    // Every line kept as it was, except [vsyscall] (outside the model).
    let (only_model, only_real) = diff_maps(&mm.layout().maps(), &real);
    assert!(
        only_model.is_empty() && only_real.is_empty(),
        "{only_model:?} {only_real:?}"
    );
    let (heap_start, heap_end) = (0x5555_5590_5000, 0x5555_5592_6000);
    assert_eq!(mm.brk_range(), (heap_start, heap_end));
    // brk grows the heap from there; calls after it replay on this state.
    assert_eq!(mm.brk(heap_end + 0x1000), heap_end + 0x1000);
    let events = strace::parse("7 munmap(0x7ffff7fb7000, 4096) = 0\n").unwrap();
    r.run(&events);
    assert!(r.report.result_differs.is_empty());
    assert!(mm.find(0x7fff_f7fb_7000).is_none());
    mm.check_invariants().unwrap();
    // Bad input: overlapping lines are an error, nothing built.
    let bad = "1000-3000 r--p 0 0:0 0\n2000-4000 r--p 0 0:0 0\n";
    assert!(r.start_from_maps(8, bad).is_err());
    assert!(r.mm(8).is_none());
}

/// Random but well-formed traces (addresses and lengths from a small window, every
/// call kind, the lock calls included, forks, threads, execs of a real binary and of
/// a missing one): the
/// replay never panics and every address space keeps its invariants.
#[test]
fn random_traces_replay_without_panics_and_keep_invariants() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let base = 0x7fff_f000_0000u64;
    for round in 0..40 {
        let mut text = String::from("1 execve(\"/bin/true\", [\"true\"], 0x0) = 0\n");
        let mut pids = vec![1u32];
        let mut next_pid = 2u32;
        for _ in 0..150 {
            let pid = pids[next(pids.len() as u64) as usize];
            let a = base + next(64) * 4096;
            let len = (1 + next(16)) * 4096 - next(2) * 100;
            let prot = [
                "PROT_READ",
                "PROT_READ|PROT_WRITE",
                "PROT_NONE",
                "PROT_READ|PROT_EXEC",
            ][next(4) as usize];
            let line = match next(12) {
                0 => format!("mmap(NULL, {len}, {prot}, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = {:#x}", a),
                1 => format!("mmap({a:#x}, {len}, {prot}, MAP_PRIVATE|MAP_FIXED, 3</usr/lib/x86_64-linux-gnu/libc.so.6>, {}) = {a:#x}", next(8) * 4096),
                2 => format!("mmap({a:#x}, {len}, {prot}, MAP_PRIVATE|MAP_ANONYMOUS|MAP_FIXED_NOREPLACE|MAP_NORESERVE, -1, 0) = {a:#x}"),
                3 => format!("munmap({a:#x}, {len}) = 0"),
                4 => format!("mprotect({a:#x}, {len}, {prot}) = 0"),
                5 => format!("mremap({a:#x}, {len}, {}, MREMAP_MAYMOVE) = {a:#x}", (1 + next(24)) * 4096),
                6 => format!("mremap({a:#x}, {len}, {}, MREMAP_MAYMOVE|MREMAP_FIXED, {:#x}) = 0", (1 + next(8)) * 4096, base + next(64) * 4096),
                7 => format!("madvise({a:#x}, {len}, {}) = 0", ["MADV_DONTFORK", "MADV_HUGEPAGE", "MADV_DONTNEED", "MADV_RANDOM", "MADV_SEQUENTIAL", "MADV_NORMAL", "MADV_MERGEABLE"][next(7) as usize]),
                8 => format!("brk({:#x}) = 0", next(3) * 0x5555_5560_0000),
                9 => match next(5) {
                    0 => format!("mlock({a:#x}, {len}) = 0"),
                    1 => format!("mlock2({a:#x}, {len}, MLOCK_ONFAULT) = 0"),
                    2 => format!("munlock({a:#x}, {len}) = 0"),
                    3 => format!("mlockall({}) = 0", ["MCL_CURRENT", "MCL_FUTURE", "MCL_CURRENT|MCL_FUTURE|MCL_ONFAULT"][next(3) as usize]),
                    _ => "munlockall() = 0".to_string(),
                },
                10 if pids.len() < 6 => {
                    let child = next_pid;
                    next_pid += 1;
                    pids.push(child);
                    let vm = if next(2) == 0 { "CLONE_VM|" } else { "" };
                    format!("clone(child_stack=NULL, flags={vm}SIGCHLD) = {child}")
                }
                _ => format!("execve(\"{}\", [], 0x0) = 0", ["/bin/true", "/no/such/prog"][next(2) as usize]),
            };
            text.push_str(&format!("{pid} {line}\n"));
        }
        let events = strace::parse(&text).unwrap_or_else(|e| panic!("round {round}: {e}"));
        let files = Files::new(Design::Aspace, Topology::detect(), CallPattern::Batched);
        let mut r = Replay::new(files.clone(), Placement::LINUX_THP);
        r.run(&events);
        for pid in &pids {
            if let Some(mm) = r.mm(*pid) {
                mm.check_invariants()
                    .unwrap_or_else(|e| panic!("round {round} pid {pid}: {e}"));
            }
        }
        assert!(r.report.calls > 0);
        drop(r);
        assert!(
            files.all().iter().all(|f| f.rmap().is_empty()),
            "round {round}: rmap entries left"
        );
    }
}

/// A file upgraded since the recording is reported as such, by the trace's
/// `# aspace-file` records and by the maps' device and inode, not left to show as a
/// layout a few pages off.
#[test]
fn a_file_changed_since_the_recording_is_named() {
    let name = "sh-two-commands";
    let text = data(&format!("{name}.strace"));
    let dash = "path=/usr/bin/dash";
    assert!(text.contains(dash), "the shell's identity is recorded");
    // The record says the shell was one byte longer and of another build.
    let doctored: String = text
        .lines()
        .map(|l| {
            if !l.ends_with(dash) {
                return l.to_string();
            }
            let size: u64 = l
                .split("size=")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            let l = l.replacen(&format!("size={size}"), &format!("size={}", size + 1), 1);
            let id = l
                .split("build-id=")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .to_string();
            l.replacen(&id, &"0".repeat(id.len()), 1)
        })
        .collect::<Vec<_>>()
        .join("\n");
    // And the maps of the parent show another inode for it.
    let dir = std::env::temp_dir().join(format!("aspace-changed-{}", std::process::id()));
    let maps_dir = dir.join(format!("{name}.maps"));
    std::fs::create_dir_all(&maps_dir).unwrap();
    let trace = dir.join(format!("{name}.strace"));
    std::fs::write(&trace, doctored).unwrap();
    let rec = Recording::load(&path(&format!("{name}.strace")), None).unwrap();
    let parent = rec.first_pid().unwrap();
    for entry in std::fs::read_dir(path(&format!("{name}.maps"))).unwrap() {
        let p = entry.unwrap().path();
        let mut maps = std::fs::read_to_string(&p).unwrap();
        if p.file_name().unwrap() == format!("{parent}.maps").as_str() {
            let line = maps
                .lines()
                .find(|l| l.ends_with("/usr/bin/dash"))
                .unwrap()
                .to_string();
            let ino = line.split_whitespace().nth(4).unwrap();
            maps = maps.replace(&line, &line.replacen(&format!(" {ino} "), " 1 ", 1));
        }
        std::fs::write(maps_dir.join(p.file_name().unwrap()), maps).unwrap();
    }
    let rec = Recording::load(&trace, None).unwrap();
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let check = rec.check(files, Placement::LINUX_THP);
    let reported: Vec<&str> = check
        .report
        .files_changed
        .iter()
        .map(|(_, w)| w.as_str())
        .collect();
    let size_now = std::fs::metadata("/usr/bin/dash").unwrap().len();
    let said = reported
        .iter()
        .find(|w| w.starts_with("file /usr/bin/dash changed since it was recorded: "))
        .unwrap_or_else(|| panic!("{reported:#?}"));
    assert!(
        said.contains(&format!("size {} then, {size_now} now", size_now + 1)),
        "{said}"
    );
    assert!(said.contains("build-id 0000"), "{said}");
    let p = check.processes.iter().find(|p| p.pid == parent).unwrap();
    assert_eq!(p.differences.len(), 1, "{:#?}", p.differences);
    let d = &p.differences[0];
    assert!(
        d.starts_with("file /usr/bin/dash changed since it was recorded: device and inode ")
            && d.contains(" 1 in the recorded maps"),
        "{d}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A thread's `execve` takes the leader's pid (`<pid changed to ...>`, `+++
/// superseded by execve ...+++`): the pid goes on with the new image, and the old
/// space, which no process uses any more, is torn down.
#[test]
fn an_execve_from_a_thread_takes_over_the_process() {
    let t = "\
7 execve(\"/bin/sh\", [\"sh\"], 0x7f /* 3 vars */) = 0
7 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7ffff7fc0000
7 clone3({flags=CLONE_VM|CLONE_THREAD, exit_signal=0} => {parent_tid=[8]}, 88) = 8
8 execve(\"/bin/true\", [\"true\"], 0x7f /* 3 vars */ <pid changed to 7 ...>
7 +++ superseded by execve in pid 8 +++
7 <... execve resumed>) = 0
7 exit_group(0) = ?
7 +++ exited with 0 +++
";
    let events = strace::parse(t).unwrap();
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let mut r = Replay::new(files.clone(), Placement::LINUX_THP);
    r.run(&events);
    assert!(r.report.result_differs.is_empty() && r.mm(8).is_none());
    let maps = r.exited[&7].maps();
    assert!(maps.iter().any(|l| l.name.ends_with("/true")), "{maps:#?}");
    assert!(!maps.iter().any(|l| l.name.ends_with("/dash")), "{maps:#?}");
    assert!(
        files.all().iter().all(|f| f.rmap().is_empty()),
        "the old space is gone"
    );
}

/// A file the trace maps that no longer exists (unlinked since, as a POSIX
/// semaphore is at once) is named as the kernel names it then: `PATH (deleted)`.
#[test]
fn a_file_gone_since_it_was_mapped_is_deleted_in_the_maps() {
    let t = "\
7 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED, 3</dev/shm/sem.aspace-gone>, 0) = 0x7ffff7fb4000
7 +++ exited with 0 +++
";
    let events = strace::parse(t).unwrap();
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let mut r = Replay::new(files, Placement::LINUX_THP);
    r.run(&events);
    let real = parse_maps(
        "7ffff7fb4000-7ffff7fb5000 rw-s 00000000 00:1b 5  /dev/shm/sem.aspace-gone (deleted)\n",
    )
    .unwrap();
    assert_eq!(diff_maps(&r.exited[&7].maps(), &real), (vec![], vec![]));
}

/// Shared anonymous memory (`MAP_SHARED|MAP_ANONYMOUS`, what python's `mmap.mmap(-1,
/// n)` makes) is a shmem object of its own, as Linux maps it: it takes its place, so
/// the mappings after it land where the kernel put them, and the maps name it
/// `/dev/zero (deleted)`; two of them side by side stay two areas.
#[test]
fn shared_anonymous_memory_is_a_shmem_object_of_its_own() {
    let t = "\
7 mmap(NULL, 1048576, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS, -1, 0) = 0x7ffff7eff000
7 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS, -1, 0) = 0x7ffff7efd000
7 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7ffff7efb000
7 +++ exited with 0 +++
";
    let events = strace::parse(t).unwrap();
    let files = Files::new(Design::Aspace, Topology::detect(), CallPattern::Batched);
    let mut r = Replay::new(files.clone(), Placement::LINUX_THP);
    let mm_before_exit = {
        let events = &events[..3];
        let mut r = Replay::new(files.clone(), Placement::LINUX_THP);
        r.run(events);
        let mm = r.mm(7).unwrap().clone();
        mm.check_invariants().unwrap();
        // In address order: the private mapping, then the two shmem objects.
        let vmas = mm.vmas();
        assert!(vmas[0].file().is_none() && vmas[1..].iter().all(|v| v.file().is_some()));
        mm.vmas().len()
    };
    assert_eq!(mm_before_exit, 3);
    let rep = r.run(&events).clone();
    assert!(rep.not_expressed.is_empty(), "{:?}", rep.not_expressed);
    assert_eq!(
        (rep.placed_same, rep.placed),
        (3, 3),
        "{:x?}",
        rep.misplaced
    );
    let real = parse_maps(
        "7ffff7efb000-7ffff7efd000 rw-p 00000000 00:00 0\n\
         7ffff7efd000-7ffff7eff000 rw-s 00000000 00:01 2051 /dev/zero (deleted)\n\
         7ffff7eff000-7ffff7fff000 rw-s 00000000 00:01 2050 /dev/zero (deleted)\n",
    )
    .unwrap();
    assert_eq!(diff_maps(&r.exited[&7].maps(), &real), (vec![], vec![]));
}

/// A thread killed in a call (the leader's `execve` ends it) has no result: strace
/// prints `= ?`. The model does the call, and compares nothing (rustup's proxy: a
/// thread's `munmap` of its arena as the leader execs rustc). A known result that
/// differs still counts.
#[test]
fn a_call_the_thread_died_in_has_no_result_to_compare() {
    let t = "\
7 execve(\"/bin/sh\", [\"sh\"], 0x7f /* 3 vars */) = 0
7 mmap(NULL, 65536, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7ffff7f00000
7 clone3({flags=CLONE_VM|CLONE_THREAD, exit_signal=0} => {parent_tid=[8]}, 88) = 8
8 munmap(0x7ffff7f00000, 65536 <unfinished ...>
7 mprotect(0x7ffff7f00000, 4096, PROT_READ <unfinished ...>
7 <... mprotect resumed>) = ?
7 execve(\"/bin/true\", [\"true\"], 0x7f /* 3 vars */ <unfinished ...>
8 <... munmap resumed>) = ?
8 +++ exited with 0 +++
7 <... execve resumed>) = 0
7 munmap(0x10000, 4096) = -1 EINVAL (Invalid argument)
7 exit_group(0) = ?
7 +++ exited with 0 +++
";
    let events = strace::parse(t).unwrap();
    assert!(events.iter().any(|e| matches!(
        &e.call,
        strace::Call::Munmap { ret, .. } if strace::result_unknown(ret)
    )));
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let mut r = Replay::new(files, Placement::LINUX_THP);
    r.run(&events);
    // Only the last munmap differs: its EINVAL (made up for the test) against the
    // model's success (an aligned range with nothing mapped: nothing to do).
    let lines: Vec<usize> = r.report.result_differs.iter().map(|d| d.0).collect();
    assert_eq!(lines, vec![11], "{:?}", r.report.result_differs);
}

/// A JVM commits its heap in 64 KiB `MAP_FIXED` pieces, out of order. A piece
/// written before its neighbours were mapped has its own `anon_vma` (from the write
/// fault, which strace does not record), and the kernel will not merge two pieces
/// with different ones: its maps keep them apart where the model has one area. The
/// check says so, and does not count it as a difference; a split the maps do show
/// (another permission) still is one.
#[test]
fn areas_the_kernel_kept_apart_for_unseen_faults_are_not_differences() {
    let t = "\
7 mmap(0x7fff70040000, 65536, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x7fff70040000
7 mmap(0x7fff70000000, 65536, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x7fff70000000
7 mmap(0x7fff70010000, 196608, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x7fff70010000
7 mmap(0x7fff70050000, 65536, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x7fff70050000
7 exit_group(0) = ?
7 +++ exited with 0 +++
";
    // As Linux 6.18 showed the JVM's heap (java1 recording, 2026-11-29).
    let kernel = "\
7fff70000000-7fff70040000 rw-p 00000000 00:00 0
7fff70040000-7fff70060000 rw-p 00000000 00:00 0
";
    let rec = |maps: &str| mm::recording::Recording {
        events: strace::parse(t).unwrap(),
        maps: [(7, parse_maps(maps).unwrap())].into_iter().collect(),
    };
    let files = || Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let check = rec(kernel).check(files(), Placement::LINUX_THP);
    let p = &check.processes[0];
    assert!(check.layouts_identical(), "{:#?}", p.differences);
    assert_eq!(p.kept_apart.len(), 1, "{:#?}", p.kept_apart);
    assert!(
        p.kept_apart[0].contains("7fff70000000-7fff70060000 is 2 areas"),
        "{}",
        p.kept_apart[0]
    );
    // The second piece read-only: a difference the maps show, named as one.
    let other = kernel.replace("7fff70060000 rw-p", "7fff70060000 r--p");
    let check = rec(&other).check(files(), Placement::LINUX_THP);
    let p = &check.processes[0];
    assert!(!check.layouts_identical() && p.kept_apart.is_empty());
    assert_eq!(p.differences.len(), 3, "{:#?}", p.differences);
}

/// strace 6.1 prints the fd of an unlinked file (a memfd's) as
/// `3</memfd:x>(deleted)`: the trace parses, and the mapping is the file's, named
/// ` (deleted)` in the model's maps as in the kernel's.
#[test]
fn a_memfd_mapping_parses_and_is_named_deleted() {
    let t = "\
7 mmap(NULL, 1048576, PROT_READ|PROT_WRITE, MAP_SHARED, 3</memfd:x>(deleted), 0) = 0x7ffff7070000
7 exit_group(0) = ?
7 +++ exited with 0 +++
";
    let events = strace::parse(t).unwrap();
    assert!(matches!(
        &events[0].call,
        strace::Call::Mmap { file: Some((path, 0)), .. } if path == "/memfd:x"
    ));
    let kernel = "7ffff7070000-7ffff7170000 rw-s 00000000 00:01 1037 /memfd:x (deleted)\n";
    let rec = mm::recording::Recording {
        events,
        maps: [(7, parse_maps(kernel).unwrap())].into_iter().collect(),
    };
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let check = rec.check(files, Placement::LINUX_THP);
    assert!(check.layouts_identical(), "{:#?}", check.processes);
    assert!(check.report.result_differs.is_empty());
}

/// The initial `[stack]` holds the exec's strings (path, environment, arguments)
/// below its top, then 128 KiB: over 4,088 bytes of strings it is a page larger
/// (rustc's `cc`, `collect2` and `ld` children: 0x22000 in Linux 6.18's maps). The
/// replay sizes it where strace printed every string (`-v`, a large `-s`), and
/// keeps one page of strings where it did not, or for a script.
#[test]
fn the_initial_stack_holds_the_exec_strings_the_trace_shows() {
    let stack_of = |t: &str| {
        let events = strace::parse(t).unwrap();
        let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
        let mut r = Replay::new(files, Placement::LINUX_THP);
        r.run(&events);
        assert!(
            r.report.not_expressed.is_empty(),
            "{:?}",
            r.report.not_expressed
        );
        let maps = r.exited[&7].maps();
        let s = maps
            .iter()
            .find(|l| l.name == "[stack]")
            .expect("a [stack]");
        s.end - s.start
    };
    let exec = |argv: &str, envp: &str| {
        format!(
            "7 execve(\"/bin/true\", {argv}, {envp}) = 0\n7 exit_group(0) = ?\n7 +++ exited with 0 +++\n"
        )
    };
    // 10 + 5 + 4,100 bytes of strings: two pages.
    let long = format!("[\"X={}\"]", "y".repeat(4097));
    assert_eq!(stack_of(&exec("[\"true\"]", &long)), 0x22000);
    // 4,070 bytes (+8 at the top): one page.
    let fits = format!("[\"X={}\"]", "y".repeat(4052));
    assert_eq!(stack_of(&exec("[\"true\"]", &fits)), mm::layout::STACK_SIZE);
    // strace without -v: the environment is a count, the strings unknown.
    assert_eq!(
        stack_of(&exec("[\"true\"]", "0x7ffd /* 41 vars */")),
        mm::layout::STACK_SIZE
    );
    // A string cut at strace's -s: unknown too.
    let cut = format!("[\"X={}\"...]", "y".repeat(4097));
    assert_eq!(stack_of(&exec("[\"true\"]", &cut)), mm::layout::STACK_SIZE);
    // A script: binfmt_script swaps argv[0] for its interpreter line, not counted.
    let dir = std::env::temp_dir().join(format!("aspace-stack-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("s");
    std::fs::write(&script, "#!/bin/true\n").unwrap();
    let t = exec("[\"s\"]", &long).replace("/bin/true", &script.display().to_string());
    assert_eq!(stack_of(&t), mm::layout::STACK_SIZE);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An unlimited stack limit, set by the shell before it runs `/bin/true` twice
/// (recorded with `scripts/record.sh`, which traces `setrlimit`/`prlimit64` and
/// writes the starting limit first):
///
/// ```sh
/// env -i PATH=/usr/bin:/bin scripts/record.sh bash-stack-unlimited \
///     bash -c 'ulimit -s unlimited; /bin/true; /bin/true'
/// ```
///
/// The kernel then keeps 5/6 of the address space free below the stack: each exec
/// after it, in the shell's forked child (which inherits the limit) and in the
/// shell's own last exec, maps ld.so and the rest top-down from 0x155555556000. Every
/// layout and placement identical; without the limit calls the model would place
/// them below the default base, and the layouts differ.
#[test]
fn a_stack_limit_moves_the_mmap_base_of_later_execs() {
    let name = "bash-stack-unlimited";
    let rec = Recording::load(&path(&format!("{name}.strace")), None).unwrap();
    assert_eq!(rec.maps.len(), 2, "the forked child and the shell");
    for design in [Design::Linux, Design::Aspace] {
        let check = check_all(name, &rec, design, CallPattern::PerVma);
        for p in &check.processes {
            assert!(p.differences.is_empty(), "{:#?}", p.differences);
        }
    }
    for maps in rec.maps.values() {
        let ldso_end = maps
            .iter()
            .filter(|l| l.name.contains("ld-linux"))
            .map(|l| l.end)
            .max();
        assert_eq!(ldso_end, Some(mm::layout::mmap_base(None)));
    }
    // The same trace without the shell's prlimit64 that lifts the limit.
    let text = data(&format!("{name}.strace"));
    assert!(text.contains("RLIMIT_STACK, {rlim_cur=RLIM64_INFINITY"));
    let kept: String = text
        .lines()
        .filter(|l| !l.contains("RLIMIT_STACK, {"))
        .map(|l| format!("{l}\n"))
        .collect();
    let blind = Recording {
        events: strace::parse(&kept).unwrap(),
        maps: rec.maps.clone(),
    };
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let check = blind.check(files, Placement::LINUX_THP);
    assert!(check.processes.iter().all(|p| !p.differences.is_empty()));
}

/// The lock calls and the flag advice replay: a successful one changes the areas
/// as the kernel did, one that failed in the trace is not done (the kernel's
/// `RLIMIT_MEMLOCK`, or a kernel without KSM: nothing the model knows), one the
/// model refuses where the kernel did it is a difference; the memory class's calls
/// that change no area (`mincore`, `msync`) are events.
#[test]
fn lock_calls_and_flag_advice_follow_the_recorded_result() {
    let t = "\
7 mmap(0x7fff70000000, 65536, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x7fff70000000
7 mlock(0x7fff70004010, 8192) = 0
7 mlock(0x7fff70000000, 65536) = -1 ENOMEM (Cannot allocate memory)
7 mlockall(MCL_FUTURE) = 0
7 mmap(0x7fff70010000, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x7fff70010000
7 mlock2(0x7fff70000000, 4096, 0x4) = -1 EINVAL (Invalid argument)
7 munlock(0x7fff70020000, 4096) = 0
7 madvise(0x7fff70000000, 4096, MADV_MERGEABLE) = -1 EINVAL (Invalid argument)
7 madvise(0x7fff70001000, 4096, MADV_RANDOM) = 0
7 mincore(0x7fff70000000, 4096, [1]) = 0
7 msync(0x7fff70000000, 4096, MS_SYNC) = 0
";
    let events = strace::parse(t).unwrap();
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let mut r = Replay::new(files, Placement::LINUX_THP);
    r.run(&events);
    assert!(
        r.report.not_expressed.is_empty(),
        "{:?}",
        r.report.not_expressed
    );
    assert_eq!((r.report.calls, r.report.events), (9, 2));
    // The munlock of nothing mapped: the model's ENOMEM against the kernel's 0
    // (made up for the test).
    let lines: Vec<usize> = r.report.result_differs.iter().map(|d| d.0).collect();
    assert_eq!(lines, [7], "{:?}", r.report.result_differs);
    let base = 0x7fff_7000_0000u64;
    let got: Vec<(u64, u64, bool, bool, bool)> = r
        .mm(7)
        .unwrap()
        .vmas()
        .iter()
        .map(|v| {
            let f = v.flags;
            (
                v.start - base,
                v.end - base,
                f.locked,
                f.rand_read,
                f.mergeable,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (0, 0x1000, false, false, false),
            (0x1000, 0x2000, false, true, false),
            (0x2000, 0x4000, false, false, false),
            // 8,192 bytes from 0x...4010: three pages.
            (0x4000, 0x7000, true, false, false),
            (0x7000, 0x10000, false, false, false),
            // Mapped under MCL_FUTURE.
            (0x10000, 0x11000, true, false, false),
        ]
    );
}

/// Two threads' non-fixed mmaps in the kernel at once (a Go runtime's, recorded):
/// strace prints them as they finish, which need not be the order they took the
/// address space's lock. The replay takes the order the kernel's addresses show;
/// calls that did not overlap keep the trace's order, and a miss stays a miss.
#[test]
fn overlapping_mmaps_of_two_threads_replay_in_the_kernels_order() {
    let maps = data("git-version.maps");
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let anon = "mmap(NULL, 65536, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0";
    // The model's first and second choices for such a mapping.
    let first = model_choice(&files, "", &format!("{anon})"));
    let second = model_choice(
        &files,
        &format!("7 {anon}) = {first:#x}\n"),
        &format!("{anon})"),
    );
    assert_ne!(first, second);
    let thread = "7 clone(child_stack=0x7ffff7800000, flags=CLONE_VM|CLONE_FS|CLONE_FILES|\
                  CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM) = 8\n";
    let replay = |text: String| {
        let mut r = Replay::new(files.clone(), Placement::LINUX_THP);
        r.start_from_maps(7, &maps).unwrap();
        let rep = r.run(&strace::parse(&text).unwrap()).clone();
        let mm = r.mm(7).unwrap().clone();
        mm.check_invariants().unwrap();
        assert!(mm.find(first).is_some() && mm.find(second).is_some());
        assert!(rep.result_differs.is_empty(), "{:?}", rep.result_differs);
        (rep.placed, rep.placed_same)
    };
    // Thread 8 took the lock first: the kernel gave it the first choice, though
    // strace printed pid 7's call first.
    let overlapping = format!(
        "{thread}7 {anon} <unfinished ...>\n8 {anon} <unfinished ...>\n\
         7 <... mmap resumed>) = {second:#x}\n8 <... mmap resumed>) = {first:#x}\n"
    );
    assert_eq!(replay(overlapping), (2, 2));
    // The same results one after the other: pid 7's call is a miss.
    let apart = format!("{thread}7 {anon}) = {second:#x}\n8 {anon}) = {first:#x}\n");
    assert_eq!(replay(apart), (2, 1));
}

/// `MAP_DROPPABLE` (glibc >= 2.41's and Go >= 1.24's vDSO `getrandom` states; strace
/// 6.1 prints the map type as `0x8 /* MAP_??? */`): private anonymous memory whose
/// VMA flags (droppable, no reserve, wiped on fork, not dumped) keep it apart from a
/// plain neighbour, and which refuses `MADV_DODUMP` and `MADV_KEEPONFORK`.
#[test]
fn droppable_memory_parses_and_stays_apart_from_plain_memory() {
    let maps = data("git-version.maps");
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let plain = "mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0)";
    let drop = "mmap(NULL, 4096, PROT_READ|PROT_WRITE, 0x8 /* MAP_??? */|MAP_ANONYMOUS, -1, 0)";
    // The model's choice for a page of anonymous memory.
    let top = model_choice(&files, "", plain);
    let below = top - 4096;
    let replay = |first: &str, rest: &str| {
        let mut r = Replay::new(files.clone(), Placement::LINUX_THP);
        r.start_from_maps(7, &maps).unwrap();
        let text = format!("7 {first} = {top:#x}\n7 {plain} = {below:#x}\n{rest}");
        let rep = r.run(&strace::parse(&text).unwrap()).clone();
        assert_eq!(
            (rep.placed, rep.placed_same),
            (2, 2),
            "{:x?}",
            rep.misplaced
        );
        assert!(rep.result_differs.is_empty(), "{:?}", rep.result_differs);
        assert!(rep.not_expressed.is_empty(), "{:?}", rep.not_expressed);
        let mm = r.mm(7).unwrap().clone();
        mm.check_invariants().unwrap();
        mm.layout()
            .maps()
            .iter()
            .filter(|l| l.start >= below && l.end <= top + 4096)
            .count()
    };
    // Two plain pages merge; a droppable one stays its own area.
    assert_eq!(replay(plain, ""), 1);
    let refused = format!(
        "7 madvise({top:#x}, 4096, MADV_DODUMP) = -1 EINVAL (Invalid argument)\n\
         7 madvise({top:#x}, 4096, MADV_KEEPONFORK) = -1 EINVAL (Invalid argument)\n\
         7 madvise({below:#x}, 4096, MADV_DODUMP) = 0\n"
    );
    assert_eq!(replay(drop, &refused), 2);
    // Droppable file memory does not exist.
    let mm = mm::Mm::new(files.clone());
    let lib = files.register(std::path::Path::new("/lib/x.so"), 4);
    let opts = mm::MmapOptions {
        droppable: true,
        ..Default::default()
    };
    assert!(mm
        .mmap_with(0, 4096, mm::Prot::RW, opts, Some((&lib, 0)))
        .is_err());
    assert!(mm.vmas().is_empty());
}

/// A shared mapping of /dev/zero is shared anonymous memory (`/dev/zero (deleted)`
/// in the maps), a private one a mapping of the device; an io_uring's rings are a
/// file of no file system (`anon_inode:[io_uring]`), not a deleted one. As this
/// machine's kernel showed them for a recorded C program.
#[test]
fn dev_zero_and_anonymous_inodes_are_named_as_the_kernel_names_them() {
    let maps = data("git-version.maps");
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let mut r = Replay::new(files, Placement::LINUX_THP);
    r.start_from_maps(7, &maps).unwrap();
    let rw = "PROT_READ|PROT_WRITE";
    let text = format!(
        "7 mmap(0x7fff00000000, 8192, {rw}, MAP_SHARED|MAP_FIXED, 3</dev/zero>, 0) = 0x7fff00000000\n\
         7 mmap(0x7fff00010000, 8192, {rw}, MAP_PRIVATE|MAP_FIXED, 3</dev/zero>, 0) = 0x7fff00010000\n\
         7 mmap(0x7fff00020000, 4096, {rw}, MAP_SHARED|MAP_FIXED|MAP_POPULATE, \
         4<anon_inode:[io_uring]>, 0) = 0x7fff00020000\n"
    );
    r.run(&strace::parse(&text).unwrap());
    assert!(r.report.result_differs.is_empty() && r.report.not_expressed.is_empty());
    let mm = r.mm(7).unwrap().clone();
    mm.check_invariants().unwrap();
    let name = |at: u64| {
        let l = mm.layout().maps();
        let l = l.iter().find(|l| l.start == at).expect("mapped");
        l.to_string()
            .split_whitespace()
            .skip(5)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(name(0x7fff_0000_0000), "/dev/zero (deleted)");
    assert_eq!(name(0x7fff_0001_0000), "/dev/zero");
    assert_eq!(name(0x7fff_0002_0000), "anon_inode:[io_uring]");
}

/// A call the model cannot express that the kernel refused changed nothing: it is
/// replayed, not reported (PostgreSQL asks for huge pages first, and gets ENOMEM
/// where none are reserved). One the kernel made is still reported.
#[test]
fn a_refused_huge_page_mapping_changes_nothing() {
    let maps = data("git-version.maps");
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let huge =
        "mmap(NULL, 16777216, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_ANONYMOUS|MAP_HUGETLB, -1, 0)";
    let run = |ret: &str| {
        let mut r = Replay::new(files.clone(), Placement::LINUX_THP);
        r.start_from_maps(7, &maps).unwrap();
        let before = r.mm(7).unwrap().layout().maps();
        r.run(&strace::parse(&format!("7 {huge} = {ret}\n")).unwrap());
        let after = r.mm(7).unwrap().layout().maps();
        assert_eq!(before, after);
        (r.report.calls, r.report.not_expressed.len())
    };
    assert_eq!(run("-1 ENOMEM (Cannot allocate memory)"), (1, 0));
    assert_eq!(run("0x7fffe0000000"), (1, 1));
}

/// System V shared memory: `shmget` gives the segment's size, each `shmat` maps all
/// of it shared (read-only with `SHM_RDONLY`) where the kernel chose, as the model
/// would; `shmdt` unmaps the one attached there. An id no `shmget` of the trace
/// made cannot be expressed; a `shmdt` where none is attached fails in both.
#[test]
fn system_v_segments_attach_and_detach() {
    let maps = data("git-version.maps");
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let get = "7 shmget(IPC_PRIVATE, 65536, IPC_CREAT|0600) = 6\n";
    // The model's choices for two attaches.
    let attach = "shmat(6, NULL, 0)";
    let first = model_choice(&files, get, attach);
    let second = model_choice(&files, &format!("{get}7 {attach} = {first:#x}\n"), attach);
    assert_eq!(first - second, 65536);

    let mut r = Replay::new(files, Placement::LINUX_THP);
    r.start_from_maps(7, &maps).unwrap();
    let text = format!(
        "{get}7 shmat(6, NULL, 0) = {first:#x}\n7 shmat(6, NULL, SHM_RDONLY) = {second:#x}\n\
         7 shmdt({second:#x}) = 0\n7 shmdt(0x7fff00000000) = -1 EINVAL (Invalid argument)\n\
         7 shmat(9, NULL, 0) = 0x7fff00000000\n"
    );
    let rep = r.run(&strace::parse(&text).unwrap()).clone();
    assert_eq!(
        (rep.placed, rep.placed_same),
        (2, 2),
        "{:x?}",
        rep.misplaced
    );
    assert!(rep.result_differs.is_empty(), "{:?}", rep.result_differs);
    assert_eq!(rep.not_expressed.len(), 1, "{:?}", rep.not_expressed);
    assert!(rep.not_expressed[0].1.contains("segment 9"));
    let mm = r.mm(7).unwrap().clone();
    mm.check_invariants().unwrap();
    let layout = mm.layout().maps();
    let seg = layout.iter().find(|l| l.start == first).expect("attached");
    assert_eq!(seg.end, first + 65536);
    assert!(seg.to_string().contains("rw-s"), "{seg}");
    assert!(
        seg.to_string().ends_with("/SYSV00000000 (deleted)"),
        "{seg}"
    );
    assert!(mm.find(second).is_none(), "detached");
}

/// A mapped file's name unlinked during the run (PostgreSQL's dynamic shared memory
/// segment, removed at shutdown after its backends exit): each process's maps
/// show it `(deleted)` only if it exited after the `unlink`, though no such file
/// exists when the replay runs. One that strace's `-y` already showed unlinked
/// when it was mapped is `(deleted)` from the start.
#[test]
fn a_file_unlinked_during_the_run_is_deleted_from_that_call_on() {
    let maps = data("git-version.maps");
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let gone = format!("/dev/shm/aspace-test-gone-{}", std::process::id());
    let rw = "PROT_READ|PROT_WRITE, MAP_SHARED|MAP_FIXED";
    let text = format!(
        "7 mmap(0x7fff00000000, 8192, {rw}, 3<{gone}>, 0) = 0x7fff00000000\n\
         7 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD) = 8\n\
         8 exit_group(0) = ?\n8 +++ exited with 0 +++\n\
         7 unlinkat(3</dev/shm>, \"nothing\", 0) = -1 ENOENT (No such file or directory)\n\
         7 unlink(\"{gone}\") = 0\n\
         7 mmap(0x7fff00010000, 4096, {rw}, 4</tmp/aspace-tmp-{0}>(deleted), 0) = 0x7fff00010000\n\
         7 exit_group(0) = ?\n7 +++ exited with 0 +++\n",
        std::process::id()
    );
    let name = |layout: &mm::maps::Layout, at: u64| {
        let l = layout.maps();
        let l = l
            .iter()
            .find(|l| l.start == at)
            .expect("mapped")
            .to_string();
        l.split_whitespace().skip(5).collect::<Vec<_>>().join(" ")
    };
    let mut r = Replay::new(files, Placement::LINUX_THP);
    r.start_from_maps(7, &maps).unwrap();
    let rep = r.run(&strace::parse(&text).unwrap()).clone();
    assert!(rep.result_differs.is_empty() && rep.not_expressed.is_empty());
    assert_eq!(name(&r.exited[&8], 0x7fff_0000_0000), gone);
    assert_eq!(
        name(&r.exited[&7], 0x7fff_0000_0000),
        format!("{gone} (deleted)")
    );
    let tmp = format!("/tmp/aspace-tmp-{} (deleted)", std::process::id());
    assert_eq!(name(&r.exited[&7], 0x7fff_0001_0000), tmp);
}

/// `MAP_32BIT` (x86-64): bottom-up first fit from 1 GiB, below 2 GiB, with 2 MiB
/// lengths huge-page aligned; a hint is honoured only inside that limit. The
/// addresses are the ones Linux 6.18 gave a C program making these calls (run with
/// `setarch -R`, recorded with `scripts/record.sh`).
#[test]
fn map_32bit_goes_bottom_up_below_two_gib() {
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let mut r = Replay::new(files, Placement::LINUX_THP);
    r.start_from_maps(7, &data("git-version.maps")).unwrap();
    let f = "MAP_PRIVATE|MAP_ANONYMOUS|MAP_32BIT, -1, 0";
    let text = format!(
        "7 mmap(NULL, 4096, PROT_READ|PROT_WRITE, {f}) = 0x40000000\n\
         7 mmap(NULL, 8192, PROT_READ, {f}) = 0x40001000\n\
         7 mmap(NULL, 2097152, PROT_READ|PROT_WRITE, {f}) = 0x40200000\n\
         7 mmap(0x7fff00000000, 4096, PROT_READ|PROT_WRITE, {f}) = 0x40003000\n\
         7 mmap(0x50000000, 4096, PROT_READ|PROT_WRITE, {f}) = 0x50000000\n\
         7 munmap(0x40000000, 4096) = 0\n\
         7 mmap(NULL, 4096, PROT_READ|PROT_WRITE, {f}) = 0x40000000\n"
    );
    let rep = r.run(&strace::parse(&text).unwrap()).clone();
    assert_eq!(
        (rep.placed, rep.placed_same),
        (6, 6),
        "{:x?}",
        rep.misplaced
    );
    assert!(rep.result_differs.is_empty(), "{:?}", rep.result_differs);
    r.mm(7).unwrap().check_invariants().unwrap();
}

/// The page advice some areas refuse, with Linux 6.18's answers to a C program
/// making these calls (recorded with `scripts/record.sh`): `MADV_FREE` only on
/// private anonymous memory, `MADV_DONTNEED` not on `[vvar]` (`VM_PFNMAP`) but on
/// `[vdso]` and a file, `MADV_REMOVE` only on shared memory (`EINVAL` without a
/// file, `EACCES` on a private file mapping).
#[test]
fn page_advice_is_refused_where_the_kernel_refuses_it() {
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let mut r = Replay::new(files, Placement::LINUX_THP);
    r.start_from_maps(7, &data("git-version.maps")).unwrap();
    let (file, shared, anon) = (
        0x7fff_0000_0000u64,
        0x7fff_0001_0000u64,
        0x7fff_0002_0000u64,
    );
    let (vdso, vvar) = (0x7fff_f7fc_8000u64, 0x7fff_f7fc_4000u64);
    let m = |at: u64, rest: &str| format!("7 mmap({at:#x}, 4096, {rest}) = {at:#x}\n");
    let a = |at: u64, adv: &str, ret: &str| format!("7 madvise({at:#x}, 4096, {adv}) = {ret}\n");
    let einval = "-1 EINVAL (Invalid argument)";
    let text = [
        m(
            file,
            "PROT_READ, MAP_PRIVATE|MAP_FIXED, 3</usr/bin/true>, 0",
        ),
        m(
            shared,
            "PROT_READ|PROT_WRITE, MAP_SHARED|MAP_FIXED|MAP_ANONYMOUS, -1, 0",
        ),
        m(
            anon,
            "PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0",
        ),
        a(file, "MADV_FREE", einval),
        a(shared, "MADV_FREE", einval),
        a(anon, "MADV_FREE", "0"),
        a(vdso, "MADV_DONTNEED", "0"),
        a(vvar, "MADV_DONTNEED", einval),
        a(anon, "MADV_REMOVE", einval),
        a(file, "MADV_REMOVE", "-1 EACCES (Permission denied)"),
        a(shared, "MADV_REMOVE", "0"),
        a(file, "MADV_DONTNEED", "0"),
    ]
    .concat();
    let rep = r.run(&strace::parse(&text).unwrap()).clone();
    assert_eq!(rep.calls, 12);
    assert!(rep.result_differs.is_empty(), "{:?}", rep.result_differs);
    assert!(rep.not_expressed.is_empty(), "{:?}", rep.not_expressed);
}

/// `execve("/proc/self/exe")` (busybox running an applet, a program re-executing
/// itself) runs the caller's executable, and `/proc/PID/exe` that pid's: never the
/// replaying program's. A fork's child has its parent's executable; a pid the
/// model has no exec of cannot be expressed.
#[test]
fn proc_self_exe_is_the_callers_executable() {
    let t = "\
7 execve(\"/bin/sh\", [\"sh\"], 0x7f /* 3 vars */) = 0
7 clone(child_stack=NULL, flags=SIGCHLD) = 8
8 execve(\"/proc/self/exe\", [\"sh\", \"-c\", \"x\"], 0x7f /* 3 vars */) = 0
8 exit_group(0) = ?
8 +++ exited with 0 +++
7 clone(child_stack=NULL, flags=SIGCHLD) = 9
9 execve(\"/bin/true\", [\"true\"], 0x7f /* 3 vars */) = 0
7 clone(child_stack=NULL, flags=SIGCHLD) = 10
10 execve(\"/proc/9/exe\", [\"true\"], 0x7f /* 3 vars */) = 0
10 exit_group(0) = ?
10 +++ exited with 0 +++
9 exit_group(0) = ?
9 +++ exited with 0 +++
7 execve(\"/proc/12/exe\", [\"x\"], 0x7f /* 3 vars */) = 0
7 exit_group(0) = ?
7 +++ exited with 0 +++
";
    let events = strace::parse(t).unwrap();
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let mut r = Replay::new(files, Placement::LINUX_THP);
    r.run(&events);
    let names = |pid: u32| -> Vec<String> {
        r.exited[&pid]
            .maps()
            .iter()
            .map(|l| l.name.clone())
            .collect()
    };
    let sh = std::fs::canonicalize("/bin/sh").unwrap();
    let sh = sh.to_str().unwrap();
    assert!(names(8).iter().any(|n| n == sh), "{:#?}", names(8));
    assert_eq!(names(8), names(7), "the child ran its parent's program");
    assert!(
        names(10).iter().any(|n| n.ends_with("/true")),
        "{:#?}",
        names(10)
    );
    assert!(!names(10).iter().any(|n| n == sh));
    let exe = std::env::current_exe().unwrap();
    let me = exe.file_name().unwrap().to_str().unwrap();
    assert!(
        !names(8).iter().any(|n| n.ends_with(me)),
        "not the test binary"
    );
    // Pid 12 never ran here: not expressed, and the image stays.
    let [(_, why)] = &r.report.not_expressed[..] else {
        panic!("{:?}", r.report.not_expressed)
    };
    assert!(why.contains("/proc/12/exe"), "{why}");
    assert!(r.report.result_differs.is_empty());
}

/// `MADV_GUARD_INSTALL` and `MADV_GUARD_REMOVE` (Linux >= 6.13), as strace 6.1
/// prints them (`0x66 /* MADV_??? */`) and as a newer one names them: no VMA
/// changes (the kernel's maps show no split), installing is refused on a locked
/// area and on `[vdso]`, removing only on `[vdso]`, and a range over a hole is
/// `ENOMEM`, each as Linux 6.18 answered a C program.
#[test]
fn guard_advice_changes_no_area_and_is_refused_where_the_kernel_refuses_it() {
    let exec = "7 execve(\"/bin/true\", [\"true\"], 0x7f /* 3 vars */) = 0\n";
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let vdso_of = |r: &Replay| {
        let vmas = r.mm(7).unwrap().vmas();
        let vdso = vmas
            .iter()
            .find(|v| matches!(v.backing, mm::Backing::Anon(mm::AnonKind::Vdso)));
        vdso.map(|v| v.start).unwrap()
    };
    let mut r = Replay::new(files.clone(), Placement::LINUX_THP);
    r.run(&strace::parse(exec).unwrap());
    let vdso = vdso_of(&r);
    let t = exec.to_string()
        + "\
7 mmap(0x7fff70000000, 32768, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x7fff70000000
7 mlock(0x7fff70006000, 4096) = 0
7 madvise(0x7fff70001000, 4096, 0x66 /* MADV_??? */) = 0
7 madvise(0x7fff70001000, 4096, MADV_GUARD_REMOVE) = 0
7 madvise(0x7fff70002000, 8192, MADV_GUARD_INSTALL) = 0
7 madvise(0x7fff70006000, 4096, MADV_GUARD_INSTALL) = -1 EINVAL (Invalid argument)
7 madvise(0x7fff70006000, 4096, 0x67 /* MADV_??? */) = 0
7 madvise(0x7fff70005000, 8192, MADV_GUARD_INSTALL) = -1 EINVAL (Invalid argument)
7 madvise(0x7fff70007000, 8192, MADV_GUARD_INSTALL) = -1 ENOMEM (Cannot allocate memory)
7 madvise(VDSO, 4096, MADV_GUARD_INSTALL) = -1 EINVAL (Invalid argument)
7 madvise(VDSO, 4096, MADV_GUARD_REMOVE) = -1 EINVAL (Invalid argument)
";
    let events = strace::parse(&t.replace("VDSO", &format!("{vdso:#x}"))).unwrap();
    let mut r = Replay::new(files, Placement::LINUX_THP);
    r.run(&events);
    let rep = &r.report;
    assert!(rep.not_expressed.is_empty(), "{:?}", rep.not_expressed);
    assert!(rep.result_differs.is_empty(), "{:?}", rep.result_differs);
    assert_eq!(rep.calls, 11);
    assert_eq!(vdso_of(&r), vdso, "[vdso] stays");
    let mm = r.mm(7).unwrap();
    let base = 0x7fff_7000_0000u64;
    let ours: Vec<(u64, u64, bool)> = mm
        .vmas()
        .iter()
        .filter(|v| v.start >= base && v.end <= base + 0x8000)
        .map(|v| (v.start - base, v.end - base, v.flags.locked))
        .collect();
    assert_eq!(
        ours,
        [
            (0, 0x6000, false),
            (0x6000, 0x7000, true),
            (0x7000, 0x8000, false)
        ]
    );
}

/// Every `0x...` number of `text` in `[low, vvar)` moved up by `by`: a trace's
/// addresses below the vDSO, as a kernel whose vDSO areas are `by` bytes smaller
/// would have placed them (everything below goes top-down from there).
fn shift_hex_below(text: &str, low: u64, vvar: u64, by: u64) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("0x") {
        out.push_str(&rest[..i + 2]);
        rest = &rest[i + 2..];
        let n = rest
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(rest.len());
        match u64::from_str_radix(&rest[..n], 16) {
            Ok(v) if (low..vvar).contains(&v) => out.push_str(&format!("{:x}", v + by)),
            _ => out.push_str(&rest[..n]),
        }
        rest = &rest[n..];
    }
    out + rest
}

/// A recording from a kernel before 6.13, whose vDSO has no `[vvar_vclock]` (its
/// `[vvar]` of 4 pages holds the clock pages, `[vdso]` 2): made from the shipped
/// `sh-two-commands` recording (Linux 6.18) by moving every area below the vDSO up
/// the 2 pages the smaller vDSO leaves free (none of them is huge-page aligned),
/// as such a kernel places them. The replay takes the layout from the recorded maps
/// and gives every process's layout and every placement as recorded; with this
/// machine's layout, every placement below the vDSO would be 2 pages low.
#[test]
fn a_recording_from_a_kernel_before_6_13_replays_with_its_vdso_layout() {
    let name = "sh-two-commands";
    let dir = std::env::temp_dir().join(format!("aspace-vdso-6-8-{}", std::process::id()));
    let maps_dir = dir.join(format!("{name}.maps"));
    std::fs::create_dir_all(&maps_dir).unwrap();
    let (low, by) = (0x7f00_0000_0000u64, 2 * mm::PAGE_SIZE);
    let mut vvar = None;
    for entry in std::fs::read_dir(path(&format!("{name}.maps"))).unwrap() {
        let p = entry.unwrap().path();
        let lines = parse_maps(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let start = lines.iter().find(|l| l.name == "[vvar]").unwrap().start;
        assert_eq!(
            *vvar.get_or_insert(start),
            start,
            "one vDSO place (ASLR off)"
        );
        let mut text = String::new();
        for l in &lines {
            let shift = |a: u64| {
                if (low..=start).contains(&a) {
                    a + by
                } else {
                    a
                }
            };
            let (s, e) = match l.name.as_str() {
                "[vvar_vclock]" => continue,
                "[vvar]" => (l.start + by, l.end + by),
                _ => (shift(l.start), shift(l.end)),
            };
            let id = l.file_id.map_or("00:00 0".to_string(), |f| f.to_string());
            text += &format!(
                "{s:x}-{e:x} {} {:08x} {id} {}\n",
                l.perms(),
                l.offset,
                l.name
            );
        }
        std::fs::write(maps_dir.join(p.file_name().unwrap()), text).unwrap();
    }
    let trace = shift_hex_below(&data(&format!("{name}.strace")), low, vvar.unwrap(), by);
    let strace_path = dir.join(format!("{name}.strace"));
    std::fs::write(&strace_path, trace).unwrap();
    let rec = Recording::load(&strace_path, Some(&maps_dir)).unwrap();
    let layout = rec.maps.values().find_map(|m| mm::maps::vdso_layout(m));
    assert_eq!(layout, Some(mm::layout::VdsoLayout::LINUX_5_6));
    let check = check_all(
        "sh-two-commands, as Linux 6.8",
        &rec,
        Design::Linux,
        CallPattern::PerVma,
    );
    assert!(check.report.placed >= 20);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A set-id program runs with ASLR on even in a recording made with it off
/// (`PER_CLEAR_ON_SETID`), and so does everything it and its children run after:
/// their placements, results and layouts are not compared but named, and the
/// same program without the set-id bit is compared as usual.
#[test]
fn a_set_id_program_is_laid_out_at_random_and_not_compared() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = std::env::temp_dir().join(format!("aspace-setid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prog = dir.join("setid-true");
    std::fs::copy("/bin/true", &prog).unwrap();
    // Random places, as the kernel chose them for the set-id run.
    let trace = |path: &Path| {
        format!(
            "\
7 execve(\"{p}\", [\"t\"], 0x7f /* 3 vars */) = 0
7 brk(NULL) = 0x56545ca33000
7 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f472e682000
7 munmap(0x7f472e682000, 8192) = 0
7 clone(child_stack=NULL, flags=SIGCHLD) = 8
8 execve(\"/bin/true\", [\"true\"], 0x7f /* 3 vars */) = 0
8 mmap(NULL, 8192, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x7f1a2b3c4000
8 exit_group(0) = ?
8 +++ exited with 0 +++
7 exit_group(0) = ?
7 +++ exited with 0 +++
",
            p = path.display()
        )
    };
    let replay = |mode: u32| {
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(mode)).unwrap();
        // A registry of its own: one keeps a program as it was when first planned.
        let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
        let mut r = Replay::new(files, Placement::LINUX_THP);
        r.run(&strace::parse(&trace(&prog)).unwrap());
        r
    };
    let r = replay(0o4755);
    assert!(r.randomized(7) && r.randomized(8), "the child too");
    let rep = &r.report;
    assert_eq!(rep.randomized.len(), 1, "{:?}", rep.randomized);
    assert!(rep.randomized[0].1.contains("set-id"));
    assert_eq!((rep.placed, rep.result_differs.len()), (0, 0));
    assert_eq!(rep.calls, 4);
    let r = replay(0o755);
    assert!(!r.randomized(7) && !r.randomized(8));
    assert!(r.report.randomized.is_empty());
    assert_eq!(r.report.placed, 2);
    assert_eq!(
        r.report.placed_same, 0,
        "the random places are not the model's"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The trace `t` replayed (Linux's design), every result the kernel's.
fn replay_with_the_kernels_results(t: &str) -> Replay {
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let mut r = Replay::new(files, Placement::LINUX_THP);
    r.run(&strace::parse(t).unwrap());
    let differs = &r.report.result_differs;
    assert!(differs.is_empty(), "{differs:?}");
    r
}

/// A call whose thread died in it (`= ?`) is done, as the kernel may have done it,
/// for the flag calls that skip a refused call too: `MADV_MERGEABLE`, `mbind`,
/// `pkey_mprotect`. Refused (an errno), they are not done.
#[test]
fn flag_calls_a_thread_died_in_are_done_and_refused_ones_not() {
    let run = |ret: &str| {
        let t = format!(
            "\
7 mmap(0x7fff70000000, 32768, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x7fff70000000
7 madvise(0x7fff70001000, 4096, MADV_MERGEABLE) = {ret}
7 mbind(0x7fff70003000, 4096, MPOL_BIND, [0x00000000000001], 64, 0) = {ret}
7 pkey_mprotect(0x7fff70005000, 4096, PROT_READ|PROT_WRITE, 2) = {ret}
"
        );
        let r = replay_with_the_kernels_results(&t);
        r.mm(7).unwrap().vmas().len()
    };
    assert_eq!(run("?"), 7, "each flag call split off its page");
    assert_eq!(run("-1 EINVAL (Invalid argument)"), 1);
}

/// Calls the kernel refused for an argument it does not know either (an advice
/// number or an `mremap` flag of no kernel: EINVAL) changed nothing and are
/// expressed as such; the same calls done by a newer kernel are calls the model
/// cannot express. `mprotect` refuses a protection bit it does not know (Linux
/// 6.18 answered 0x10 so), not `PROT_SEM`.
#[test]
fn refused_unknown_advice_and_mremap_flags_change_nothing() {
    let run = |ret: &str| {
        let t = format!(
            "\
7 mmap(0x7fff70000000, 16384, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x7fff70000000
7 madvise(0x7fff70000000, 4096, 0x7f /* MADV_??? */) = {ret}
7 mremap(0x7fff70000000, 4096, 8192, MREMAP_MAYMOVE|0x10) = {ret}
7 mprotect(0x7fff70000000, 4096, PROT_READ|0x10 /* PROT_??? */) = -1 EINVAL (Invalid argument)
7 mprotect(0x7fff70001000, 4096, PROT_READ|0x8 /* PROT_SEM */) = 0
"
        );
        let r = replay_with_the_kernels_results(&t);
        let vmas = r.mm(7).unwrap().vmas().len();
        (r.report.not_expressed.len(), vmas)
    };
    assert_eq!(
        run("-1 EINVAL (Invalid argument)"),
        (0, 3),
        "PROT_SEM's page split off"
    );
    assert_eq!(run("0x7fff70000000").0, 2);
}
