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
