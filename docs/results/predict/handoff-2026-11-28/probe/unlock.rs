use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn pin(cpu: usize) {
    unsafe {
        let mut s: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut s);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &s);
    }
}
fn spin_ns(base: Instant, ns: u64) {
    let until = base.elapsed().as_nanos() as u64 + ns;
    while (base.elapsed().as_nanos() as u64) < until {
        std::hint::spin_loop();
    }
}
fn main() {
    let args: Vec<u64> = std::env::args().skip(1).map(|a| a.parse().unwrap()).collect();
    let threads = args[0] as usize;
    let hold = args[1];
    let gap = args[2];
    let ms = args[3];
    let cpus = std::thread::available_parallelism().unwrap().get();
    let lock = Arc::new(RwLock::new(0u64));
    let stop = Arc::new(AtomicBool::new(false));
    let base = Instant::now();
    let mut hs = Vec::new();
    for i in 0..threads {
        let (lock, stop) = (lock.clone(), stop.clone());
        hs.push(std::thread::spawn(move || {
            pin(i % cpus);
            let mut unl: Vec<u64> = Vec::with_capacity(1 << 20);
            let mut holds = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut g = lock.write();
                *g += 1;
                spin_ns(base, hold);
                let t0 = base.elapsed().as_nanos() as u64;
                drop(g);
                let t1 = base.elapsed().as_nanos() as u64;
                unl.push(t1 - t0);
                holds += 1;
                spin_ns(base, gap);
            }
            (holds, unl)
        }));
    }
    std::thread::sleep(Duration::from_millis(ms));
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    let mut holds = 0;
    for h in hs {
        let (n, u) = h.join().unwrap();
        holds += n;
        all.extend(u);
    }
    all.sort();
    let slow: Vec<u64> = all.iter().copied().filter(|&x| x > 300).collect();
    let mean = |v: &[u64]| v.iter().sum::<u64>() as f64 / v.len().max(1) as f64;
    let q = |v: &[u64], p: f64| v.get(((v.len() as f64 - 1.0) * p) as usize).copied().unwrap_or(0);
    let period = ms as f64 * 1e6 / holds as f64;
    println!("threads {threads} hold {hold} gap {gap}: holds/s {:.0}, ns/hold {:.0} (idle {:.0}), slow unlocks {:.1}%: mean {:.0} p10 {} p50 {} p90 {} p99 {}",
        holds as f64 / (ms as f64 / 1e3), period, period - hold as f64, 100.0 * slow.len() as f64 / all.len() as f64,
        mean(&slow), q(&slow, 0.1), q(&slow, 0.5), q(&slow, 0.9), q(&slow, 0.99));
}
