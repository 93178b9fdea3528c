use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
fn pin(cpu: usize) {
    unsafe {
        let mut s: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut s);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &s);
    }
}
fn main() {
    let sleep_us: u64 = std::env::args().nth(1).unwrap().parse().unwrap();
    let rounds: u64 = std::env::args().nth(2).unwrap().parse().unwrap();
    let base = Instant::now();
    let asleep = Arc::new(AtomicU64::new(0));
    let woke = Arc::new(AtomicU64::new(0));
    let woke_at = Arc::new(AtomicU64::new(0));
    let (a2, w2, t2) = (asleep.clone(), woke.clone(), woke_at.clone());
    let waiter = std::thread::spawn(move || {
        pin(1);
        for i in 1..=rounds {
            a2.store(i, Ordering::Release);
            loop {
                std::thread::park();
                if w2.load(Ordering::Acquire) == i { break; }
            }
            t2.store(base.elapsed().as_nanos() as u64 | 1, Ordering::Release);
            while t2.load(Ordering::Acquire) != 0 { std::hint::spin_loop(); }
        }
    });
    pin(0);
    let (mut cost, mut lat) = (vec![], vec![]);
    for i in 1..=rounds {
        while asleep.load(Ordering::Acquire) != i { std::hint::spin_loop(); }
        let until = Instant::now() + std::time::Duration::from_nanos(sleep_us * 1000 / 1);
        while Instant::now() < until { std::hint::spin_loop(); }
        woke.store(i, Ordering::Release);
        let t0 = base.elapsed().as_nanos() as u64;
        waiter.thread().unpark();
        let t1 = base.elapsed().as_nanos() as u64;
        let t2 = loop { let v = woke_at.load(Ordering::Acquire); if v != 0 { break v; } };
        woke_at.store(0, Ordering::Release);
        cost.push(t1 - t0); lat.push(t2 - t0);
    }
    waiter.join().unwrap();
    cost.sort(); lat.sort();
    let q = |v: &Vec<u64>, p: f64| v[((v.len() - 1) as f64 * p) as usize];
    let mean = |v: &Vec<u64>| v.iter().sum::<u64>() as f64 / v.len() as f64;
    println!("sleep {sleep_us} us: unpark cost p10 {} p50 {} p90 {} mean {:.0}; wake p10 {} p50 {} p90 {} mean {:.0}",
        q(&cost,0.1), q(&cost,0.5), q(&cost,0.9), mean(&cost), q(&lat,0.1), q(&lat,0.5), q(&lat,0.9), mean(&lat));
}
