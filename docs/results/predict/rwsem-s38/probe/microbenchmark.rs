use predict::*;
fn main() {
    let m = Machine::by_name("hygon-384").unwrap();
    let p = Profile {
        label: "rwsem microbenchmark".into(),
        workload: "lock".into(),
        call_pattern: "-".into(),
        locks: vec![LockDesc { name: "rwsem".into(), kind: LockKind::KernelRwsem, line: 0 }],
        lines: vec![LineKind::LockWord, LineKind::Tree],
        slots: vec![CpuProfile {
            cpu: 0,
            steps: vec![
                Step::Work(50.0),
                Step::Hold(Hold { lock: 0, write: true, site: Site::Other, hold_ns: 20.0, written: vec![1], read: vec![], loaded_first: vec![] }),
            ],
        }],
        recorded_ghz: m.core_ghz,
        notes: String::new(),
        exit_vmas_per_hold: 0.0,
        work_placed: false,
        loads_recorded: false,
    };
    let mut first = 0.0;
    for n in [1u32, 2, 4, 8, 16, 32, 64, 128, 192, 240, 384] {
        let mut cfg = SimConfig::new(n);
        cfg.duration_ns = 2e7;
        cfg.warmup_ns = 2e6;
        cfg.packed = true;
        cfg.work_jitter = 0.2;
        let r = simulate(&m, &p, &cfg).unwrap();
        if n == 4 { first = r.per_s; }
        println!("{n:4} {:6.3} M/s  x4/x={:5.2} cont {:5.1}% spin {:.2} sleep {:.3} hold {:.3} lines {:?}", r.per_s / 1e6, if first > 0.0 { first / r.per_s } else { 0.0 }, r.contended_pct, r.spin_share, r.wait_share - r.spin_share, r.hold_share, r.lines.iter().map(|l| (l.kind.clone(), (l.transfer_ns / r.per_s / 1e-9 / 1e0).round())).collect::<Vec<_>>());
    }
}
