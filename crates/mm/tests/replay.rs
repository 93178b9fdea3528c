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

use mm::placement::Placement;
use mm::replay::{diff_maps, model_maps, parse_maps, Replay};
use mm::strace;
use mm::{CallPattern, Files};
use rmap::{Design, Topology};

fn data(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn replay(trace: &str, maps: &str, design: Design) -> (Replay, Vec<String>) {
    let events = strace::parse(&data(trace)).unwrap();
    let files = Files::new(design, Topology::detect(), CallPattern::PerVma);
    let mut r = Replay::new(files, Placement::LINUX_THP);
    r.run(&events);
    let pid = events[0].pid;
    let real = parse_maps(&data(maps)).unwrap();
    let model = model_maps(&r.exited[&pid]);
    let (only_model, only_real) = diff_maps(&model, &real);
    let mut diffs = Vec::new();
    for l in only_model {
        diffs.push(format!(
            "model only: {:x}-{:x} {:?} {} {:x}",
            l.0, l.1, l.2, l.3, l.4
        ));
    }
    for l in only_real {
        diffs.push(format!(
            "kernel only: {:x}-{:x} {:?} {} {:x}",
            l.0, l.1, l.2, l.3, l.4
        ));
    }
    (r, diffs)
}

#[test]
fn shipped_traces_replay() {
    for (trace, maps) in [
        ("git-version.strace", "git-version.maps"),
        ("python3-import-json.strace", "python3-import-json.maps"),
        // The long one: ~2,300 calls of one process (mmap, munmap, mremap, brk).
        ("python3-alloc-loop.strace", "python3-alloc-loop.maps"),
    ] {
        for design in [Design::Linux, Design::Aspace] {
            let (r, diffs) = replay(trace, maps, design);
            let rep = &r.report;
            eprintln!(
                "{trace} {design:?}: {} calls, {} events, placed {}/{} at the kernel's address, {:.2} lock holds/call",
                rep.calls, rep.events, rep.placed_same, rep.placed, rep.lock_holds_per_call()
            );
            for m in &rep.misplaced {
                eprintln!(
                    "  misplaced line {}: kernel {:#x} model {:#x} len {:#x}",
                    m.0, m.1, m.2, m.3
                );
            }
            for n in &rep.not_expressed {
                eprintln!("  not expressed line {}: {}", n.0, n.1);
            }
            for d in &rep.result_differs {
                eprintln!("  result differs line {}: {}", d.0, d.1);
            }
            for d in &diffs {
                eprintln!("  {d}");
            }
            assert!(rep.calls > 20);
            // Placement: every non-fixed mmap at the kernel's address.
            assert_eq!(rep.placed_same, rep.placed, "{trace}");
            assert!(rep.result_differs.is_empty(), "{trace}");
            // Only exit_group is outside the model (it is an exit, not a memory call).
            assert!(rep
                .not_expressed
                .iter()
                .all(|(_, w)| w.starts_with("exit_group")));
            // Final layout: identical VMA for VMA (start, end, protection, file,
            // offset), after diff_maps' two listed normalisations.
            assert!(diffs.is_empty(), "{trace}: {diffs:#?}");
        }
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
    assert_eq!(model_maps(&mm.vmas()).len(), real.len() - 1);
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
/// call kind, forks, threads, execs of a real binary and of a missing one): the
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
            let line = match next(11) {
                0 => format!("mmap(NULL, {len}, {prot}, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = {:#x}", a),
                1 => format!("mmap({a:#x}, {len}, {prot}, MAP_PRIVATE|MAP_FIXED, 3</usr/lib/x86_64-linux-gnu/libc.so.6>, {}) = {a:#x}", next(8) * 4096),
                2 => format!("mmap({a:#x}, {len}, {prot}, MAP_PRIVATE|MAP_ANONYMOUS|MAP_FIXED_NOREPLACE|MAP_NORESERVE, -1, 0) = {a:#x}"),
                3 => format!("munmap({a:#x}, {len}) = 0"),
                4 => format!("mprotect({a:#x}, {len}, {prot}) = 0"),
                5 => format!("mremap({a:#x}, {len}, {}, MREMAP_MAYMOVE) = {a:#x}", (1 + next(24)) * 4096),
                6 => format!("mremap({a:#x}, {len}, {}, MREMAP_MAYMOVE|MREMAP_FIXED, {:#x}) = 0", (1 + next(8)) * 4096, base + next(64) * 4096),
                7 => format!("madvise({a:#x}, {len}, {}) = 0", ["MADV_DONTFORK", "MADV_HUGEPAGE", "MADV_DONTNEED", "MADV_RANDOM"][next(4) as usize]),
                8 => format!("brk({:#x}) = 0", next(3) * 0x5555_5560_0000),
                9 if pids.len() < 6 => {
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
