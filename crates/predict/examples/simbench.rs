//! Times the simulator alone: every profile given x CPU counts 1, 2, 4, ...
//! up to the machine's x one simulated second, on one thread.
//!
//! ```text
//! aspace predict --machine hygon-384 --save-profiles /tmp/prof ...
//! cargo run --release -p aspace-predict --example simbench -- hygon-384 /tmp/prof/*.profile.json
//! ```

use predict::{simulate, Machine, Profile, SimConfig};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(name) = args.next() else {
        eprintln!("usage: simbench MACHINE PROFILE.json...");
        std::process::exit(2);
    };
    let Some(m) = Machine::by_name(&name) else {
        eprintln!("simbench: no built-in machine {name:?}");
        std::process::exit(2);
    };
    let mut cpus: Vec<u32> = std::iter::successors(Some(1u32), |n| Some(n * 2))
        .take_while(|&n| n <= m.cpus())
        .collect();
    if cpus.last() != Some(&m.cpus()) {
        cpus.push(m.cpus());
    }
    let start = Instant::now();
    let mut events = 0;
    for f in args {
        let text = match std::fs::read_to_string(&f) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("simbench: cannot read {f}: {e}");
                std::process::exit(1);
            }
        };
        let p: Profile = match serde_json::from_str(&text) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("simbench: {f}: {e}");
                std::process::exit(1);
            }
        };
        let t = Instant::now();
        for &c in &cpus {
            let mut cfg = SimConfig::new(c);
            cfg.work_jitter = 0.2;
            match simulate(&m, &p, &cfg) {
                Ok(r) => {
                    events += r.events;
                    println!(
                        "{:<16} {:>4} cpus {:>10.0}/s spin {:>5.1}% {:>9} events",
                        p.label,
                        c,
                        r.per_s,
                        100.0 * r.spin_share,
                        r.events
                    );
                }
                Err(e) => {
                    eprintln!("simbench: {e}");
                    std::process::exit(1);
                }
            }
        }
        println!("{}: {:.2} s", p.label, t.elapsed().as_secs_f64());
    }
    let s = start.elapsed().as_secs_f64();
    println!(
        "total {s:.2} s, {events} events, {:.1} M events/s",
        events as f64 / s / 1e6
    );
}
