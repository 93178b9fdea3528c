// Throwaway probe (s38): the exit-batching row's two profiles simulated
// from one saved profile, so that two builds of the simulator see the same input.
use predict::*;
use std::collections::HashMap;

fn unbatch_exit(p: &Profile) -> Profile {
    let mut out = p.clone();
    for s in &mut out.slots {
        let mut links: HashMap<u32, usize> = HashMap::new();
        let mut exits: HashMap<u32, usize> = HashMap::new();
        for st in &s.steps {
            if let Step::Hold(h) = st {
                match h.site {
                    Site::MmapLink => *links.entry(h.lock).or_insert(0) += 1,
                    Site::ExitUnlink => *exits.entry(h.lock).or_insert(0) += 1,
                    _ => {}
                }
            }
        }
        let mut steps = Vec::new();
        for st in s.steps.drain(..) {
            match st {
                Step::Hold(h) if h.site == Site::ExitUnlink => {
                    let k = if p.exit_vmas_per_hold >= 1.0 {
                        p.exit_vmas_per_hold.round() as usize
                    } else {
                        links.get(&h.lock).copied().unwrap_or(1)
                            / exits.get(&h.lock).copied().unwrap_or(1).max(1)
                    }
                    .clamp(1, 64);
                    for i in 0..k {
                        if i > 0 { steps.push(Step::Work(0.0)); }
                        let mut piece = h.clone();
                        piece.hold_ns = h.hold_ns / k as f64;
                        piece.written = h.written.iter().enumerate().filter(|(j, _)| j % k == i).map(|(_, &l)| l).collect();
                        steps.push(Step::Hold(piece));
                    }
                }
                other => steps.push(other),
            }
        }
        s.steps = steps;
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut p: Profile = serde_json::from_str(&std::fs::read_to_string(&args[1]).unwrap()).unwrap();
    if args.len() > 4 { for l in &mut p.locks { l.kind = LockKind::KernelRwsem; } }
    let m = Machine::by_name(&args[2]).unwrap();
    let cpus: u32 = args[3].parse().unwrap();
    let u = unbatch_exit(&p);
    let mut rates = vec![];
    for (name, prof) in [("unbatched", &u), ("batched", &p)] {
        let mut cfg = SimConfig::new(cpus);
        cfg.duration_ns = 1e9;
        cfg.warmup_ns = 5e7;
        cfg.work_jitter = 0.2;
        let r = simulate(&m, prof, &cfg).unwrap();
        println!("{name}: {:.1} execs/s, spin {:.3}, kinds {:?}", r.per_s, r.spin_share, p.locks.iter().map(|l| l.kind).take(2).collect::<Vec<_>>());
        rates.push(r.per_s);
    }
    println!("batched / unbatched = {:.4}", rates[1] / rates[0]);
}
