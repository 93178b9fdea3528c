//! Churn comparison table: every design at 1, 2 and 4 threads (and more
//! where given), ops/s and the ratio to `linux`, from one run.
//!
//! `cargo run --release -p aspace-rmap --example churn -- [millis] [threads...]`

use std::time::Duration;

use rmap::bench::{churn, ChurnConfig};
use rmap::{Design, Topology};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ms: u64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let mut threads: Vec<usize> = args.iter().skip(1).filter_map(|s| s.parse().ok()).collect();
    if threads.is_empty() {
        threads = vec![1, 2, 4];
    }
    let topology = std::env::var("TOPOLOGY")
        .ok()
        .map(|s| Topology::parse(&s).expect("TOPOLOGY: NODESxCPUS, e.g. 12x32"))
        .unwrap_or_default();
    let walk_hz: f64 = std::env::var("WALK_HZ")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    print!("| design |");
    for t in &threads {
        print!(" {t}t ops/s | {t}t vs linux |");
    }
    println!(
        " contended/acq ({}t) | shards |",
        threads[threads.len() - 1]
    );
    print!("|---|");
    for _ in &threads {
        print!("---:|---:|");
    }
    println!("---:|---:|");
    let mut rows = Vec::new();
    for d in Design::ALL {
        let mut row = Vec::new();
        for &t in &threads {
            let cfg = ChurnConfig {
                threads: t,
                duration: Duration::from_millis(ms),
                walk_rate_hz: walk_hz,
                topology: topology.clone(),
                ..ChurnConfig::default()
            };
            row.push(churn(d, &cfg).expect("a valid configuration"));
        }
        rows.push((d, row));
    }
    let linux: Vec<f64> = rows
        .iter()
        .find(|r| r.0 == Design::Linux)
        .map(|r| r.1.iter().map(|x| x.ops_per_sec).collect())
        .unwrap_or_default();
    for (d, row) in &rows {
        print!("| {d} |");
        for (k, r) in row.iter().enumerate() {
            print!(" {:.0} | {:.2}x |", r.ops_per_sec, r.ops_per_sec / linux[k]);
        }
        let last = &row[row.len() - 1];
        println!(
            " {}/{} | {} |",
            last.stats.contended, last.stats.acquisitions, last.stats.shards
        );
    }
}
