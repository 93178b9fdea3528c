//! Experiment: does `aspace` promote once a map with a long uncontended
//! history becomes hot, and how fast, compared with a fresh map?
//!
//! For each of "fresh" and "history" (`HISTORY` uncontended single-thread
//! central acquisitions first, default 20 M), 4 threads churn (batched, as
//! the exit path does) for `millis`; a watcher thread notes when the map
//! promotes. A third row, the control, runs the same single-thread phase
//! on another map and then churns a fresh one. Rows are interleaved
//! (fresh, history, control, fresh, ...) so load on the machine hits all
//! alike. Also: 1 thread never promotes.
//!
//! `cargo run --release -p aspace-rmap --example promo -- [millis] [rounds]`

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmap::bench::{churn_on, libc_like_intervals, ChurnConfig};
use rmap::designs::aspace::Aspace;
use rmap::{ReverseMap, Topology};

fn with_history(n: u64) -> Aspace {
    let a = Aspace::new(Topology::Os);
    let iv = libc_like_intervals()[1];
    // One insert and one remove: two central acquisitions per round.
    for v in 0..n / 2 {
        let h = a.insert(iv, v).expect("valid");
        a.remove(h).expect("live");
    }
    assert!(!a.is_promoted(), "one thread never promotes");
    a
}

fn run(a: Arc<Aspace>, cfg: &ChurnConfig) -> (f64, Option<Duration>, u64) {
    let done = Arc::new(AtomicBool::new(false));
    let (a2, d2) = (a.clone(), done.clone());
    let start = Instant::now();
    let watcher = std::thread::spawn(move || {
        // Relaxed: the flag only ends the loop.
        while !d2.load(Ordering::Relaxed) {
            if a2.is_promoted() {
                return Some(start.elapsed());
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        None
    });
    let r = churn_on(a.clone() as Arc<dyn ReverseMap>, cfg).expect("a valid configuration");
    done.store(true, Ordering::Relaxed);
    let when = watcher.join().expect("watcher");
    (r.ops_per_sec, when, r.stats.contended)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let ms: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let rounds: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2);
    let history: u64 = std::env::var("HISTORY")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000_000);
    let cfg = ChurnConfig {
        threads: 4,
        duration: Duration::from_millis(ms),
        ..ChurnConfig::default()
    };
    let one = ChurnConfig {
        threads: 1,
        ..cfg.clone()
    };
    let single = Arc::new(Aspace::new(Topology::Os));
    let (ops1, when1, _) = run(single.clone(), &one);
    println!(
        "1 thread: {ops1:.0} ops/s, promoted: {} (rule: {} waits within {} holds, or {} handoffs in {} ns)",
        when1.is_some(),
        rmap::designs::aspace::PROMOTE_WAITS,
        rmap::designs::aspace::PROMOTE_WAIT_PERIOD,
        rmap::designs::aspace::PROMOTE_HANDOFFS,
        rmap::designs::aspace::PROMOTE_WINDOW_NS
    );
    println!("| map | 4t ops/s | promoted after | contended |");
    println!("|---|---:|---:|---:|");
    for _ in 0..rounds {
        for row in [Row::Fresh, Row::History, Row::BusyThenFresh] {
            let a = match row {
                Row::Fresh => Aspace::new(Topology::Os),
                Row::History => with_history(history),
                Row::BusyThenFresh => {
                    // The same single-thread work right before, on a map
                    // that is then dropped: separates "this map has
                    // history" from "this process just ran a long
                    // single-threaded phase" (scheduler, caches).
                    drop(with_history(history));
                    Aspace::new(Topology::Os)
                }
            };
            let (ops, when, contended) = run(Arc::new(a), &cfg);
            let name = match row {
                Row::Fresh => "fresh".to_string(),
                Row::History => format!("{history} acquisitions of history"),
                Row::BusyThenFresh => format!("fresh, after {history} on another map"),
            };
            println!(
                "| {name} | {ops:.0} | {} | {contended} |",
                when.map_or("never".into(), |d| format!(
                    "{:.1} ms",
                    d.as_secs_f64() * 1e3
                ))
            );
        }
    }
}

/// The rows of one round, run in this order.
#[derive(Clone, Copy)]
enum Row {
    /// A map created just now.
    Fresh,
    /// A map with `HISTORY` single-thread acquisitions.
    History,
    /// The same single-thread phase on another map, then a fresh one.
    BusyThenFresh,
}
