//! Replays the two shipped real traces (tests/data, recorded as the README says) and
//! compares the final layout with the `/proc/PID/maps` taken at exit.

use mm::placement::Placement;
use mm::replay::{diff_maps, model_maps, parse_maps, Replay};
use mm::strace;
use mm::Files;
use rmap::{Design, Topology};

fn data(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn replay(trace: &str, maps: &str, design: Design) -> (Replay, Vec<String>) {
    let events = strace::parse(&data(trace)).unwrap();
    let files = Files::new(design, Topology::detect());
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

#[test]
fn a_replay_can_start_from_recorded_maps() {
    let files = Files::new(Design::Linux, Topology::detect());
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
