//! Experiment: `aspace` centralised vs forced-promoted, at 1, 2, 4 threads.
//!
//! `cargo run --release -p aspace-rmap --example promo -- [millis]`

use std::sync::Arc;
use std::time::Duration;

use rmap::bench::{churn_on, ChurnConfig};
use rmap::designs::aspace::Aspace;
use rmap::Topology;

fn main() {
    let ms: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    for t in [1usize, 2, 4] {
        let cfg = ChurnConfig {
            threads: t,
            duration: Duration::from_millis(ms),
            ..ChurnConfig::default()
        };
        let central =
            churn_on(Arc::new(Aspace::new(Topology::Os)), &cfg).expect("a valid configuration");
        let a = Aspace::new(Topology::Os);
        a.promote();
        let promoted = churn_on(Arc::new(a), &cfg).expect("a valid configuration");
        println!(
            "{t}t: adaptive {:.0} ops/s ({} shards, {}/{} contended), promoted {:.0} ops/s ({} shards)",
            central.ops_per_sec,
            central.stats.shards,
            central.stats.contended,
            central.stats.acquisitions,
            promoted.ops_per_sec,
            promoted.stats.shards
        );
    }
}
