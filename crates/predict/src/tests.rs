//! The simulator against closed-form results and against the directions any
//! sound model must respect.

use crate::machine::{Latency, Machine};
use crate::profile::{CpuProfile, Hold, LockDesc, Profile, Site, Step};
use crate::sim::{simulate, SimConfig};
use std::collections::BTreeMap;

/// A flat machine: `cpus` cores in one node, no SMT, free line transfers
/// and atomics unless `lat` is given, speed 1 GHz (= the profiles').
fn flat(cpus: u32, lat: f64) -> Machine {
    Machine {
        name: "flat".into(),
        description: "test".into(),
        nodes: 1,
        sockets: 1,
        cores_per_node: cpus,
        smt: 1,
        cores_per_llc: cpus,
        core_ghz: 1.0,
        smt_yield: 1.0,
        latency_ns: Latency {
            same_core: lat,
            same_llc: lat,
            same_node: lat,
            other_node: lat,
            other_socket: lat,
        },
        atomic_rmw_ns: 0.0,
        wake_ns: 1000.0,
        reader_spin_ns: 20_000.0,
        exec_ns: None,
        fork_exec_ns: None,
        self_execl_ns: None,
        sources: BTreeMap::new(),
    }
}

fn hold(lock: u32, data: u32, hold_ns: f64, lines: u32) -> Step {
    Step::Hold(Hold {
        lock,
        data,
        write: true,
        site: Site::MmapLink,
        hold_ns,
        lines_written: lines,
        lines_read: 0,
    })
}

/// Every CPU: work `w`, then one hold of `h` on lock `lock_of(cpu)`.
fn one_lock_profile(
    slots: u32,
    w: f64,
    h: f64,
    lines: u32,
    lock_of: impl Fn(u32) -> u32,
    nlocks: u32,
    shares: bool,
) -> Profile {
    Profile {
        label: "synthetic".into(),
        workload: "execl".into(),
        call_pattern: "synthetic".into(),
        locks: (0..nlocks)
            .map(|i| LockDesc {
                name: format!("l{i}"),
                shares_line_with_data: shares,
            })
            .collect(),
        slots: (0..slots)
            .map(|c| CpuProfile {
                cpu: c,
                steps: vec![Step::Work(w), hold(lock_of(c), lock_of(c), h, lines)],
            })
            .collect(),
        recorded_ghz: 1.0,
        exit_vmas_per_hold: 0.0,
        notes: String::new(),
    }
}

fn run(m: &Machine, p: &Profile, cpus: u32) -> crate::Prediction {
    let mut cfg = SimConfig::new(cpus);
    cfg.duration_ns = 2e7;
    cfg.warmup_ns = 2e6;
    simulate(m, p, &cfg).unwrap()
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

#[test]
fn closed_system_saturates_at_one_over_hold() {
    // Deterministic closed system (machine-repairman): throughput is
    // min(P / (W + H), 1 / H); at saturation each copy waits P*H - W - H.
    let (w, h) = (900.0, 100.0);
    let m = flat(64, 0.0);
    let p = one_lock_profile(64, w, h, 0, |_| 0, 1, false);
    for cpus in [1u32, 2, 4, 8, 10, 16, 32, 64] {
        let r = run(&m, &p, cpus);
        let x = (f64::from(cpus) / (w + h)).min(1.0 / h) * 1e9;
        assert!(close(r.per_s, x, 0.02), "P={cpus}: {} vs {x}", r.per_s);
        if cpus >= 16 {
            let wait = f64::from(cpus) * h - w - h;
            let share = wait / (f64::from(cpus) * h);
            assert!(
                (r.spin_share - share).abs() < 0.02,
                "P={cpus}: spin share {} vs {share}",
                r.spin_share
            );
            assert!(r.contended_pct > 90.0);
        }
    }
}

#[test]
fn the_bound_without_holds_is_never_slower_and_scales_linearly() {
    // One saturated lock (10% of an iteration held): the bound is the same
    // work with no lock, which neither saturates nor waits.
    let (w, h) = (900.0, 100.0);
    let m = flat(64, 5.0);
    let p = one_lock_profile(64, w, h, 2, |_| 0, 1, false);
    let bound = p.without_holds().unwrap();
    let one = run(&m, &bound, 1).per_s;
    for cpus in [1u32, 4, 16, 64] {
        let design = run(&m, &p, cpus);
        let b = run(&m, &bound, cpus);
        assert!(
            b.per_s >= design.per_s,
            "P={cpus}: bound {} < {}",
            b.per_s,
            design.per_s
        );
        assert!(
            close(b.per_s, one * f64::from(cpus), 0.02),
            "P={cpus}: {}",
            b.per_s
        );
        assert_eq!(b.spin_share, 0.0);
    }
    // Saturated at 64 CPUs with free transfers: the design runs at 1/h,
    // the bound at 64/w.
    let free = flat(64, 0.0);
    let ratio = run(&free, &bound, 64).per_s / run(&free, &p, 64).per_s;
    assert!(close(ratio, 64.0 * h / w, 0.05), "bound / design {ratio}");
}

#[test]
fn many_sources_with_random_work_wait_as_md1() {
    // 200 copies, exponential work, deterministic hold: arrivals are nearly
    // Poisson, so the mean queueing delay approaches M/D/1's
    // Wq = rho * H / (2 (1 - rho)). Finite sources make it a little lower.
    let h = 100.0;
    let cpus = 200u32;
    let rho_target = 0.5;
    let w = f64::from(cpus) * h / rho_target - h;
    let m = flat(cpus, 0.0);
    let p = one_lock_profile(cpus, w, h, 0, |_| 0, 1, false);
    let mut cfg = SimConfig::new(cpus);
    cfg.duration_ns = 2e8;
    cfg.warmup_ns = 1e7;
    cfg.random_work = true;
    let r = simulate(&m, &p, &cfg).unwrap();
    let rho = r.per_s * h * 1e-9;
    let wq_md1 = rho * h / (2.0 * (1.0 - rho));
    let acq = r.locks[0].acquisitions as f64;
    let wq = r.locks[0].spin_ns / acq;
    assert!((rho - rho_target).abs() < 0.03, "utilisation {rho}");
    assert!(
        wq <= wq_md1 * 1.05 && wq >= wq_md1 * 0.8,
        "Wq {wq} ns vs M/D/1 {wq_md1} ns"
    );
}

#[test]
fn partitioned_workload_scales_linearly() {
    // Each CPU its own lock and data, lines far apart: no sharing at all.
    let m = flat(64, 200.0);
    let p = one_lock_profile(64, 900.0, 100.0, 4, |c| c, 64, false);
    let one = run(&m, &p, 1).per_s;
    for cpus in [2u32, 8, 32, 64] {
        let r = run(&m, &p, cpus);
        assert!(
            close(r.per_s, one * f64::from(cpus), 0.01),
            "P={cpus}: {} vs {}",
            r.per_s,
            one * f64::from(cpus)
        );
        assert_eq!(r.contended_pct, 0.0);
    }
}

#[test]
fn more_locks_never_slower() {
    let m = Machine::by_name("hygon-384").unwrap();
    for cpus in [2u32, 16, 96, 384] {
        let mut prev = 0.0;
        for nlocks in [1u32, 2, 12, 48] {
            let p = one_lock_profile(384, 2000.0, 300.0, 3, |c| c % nlocks, nlocks, false);
            let r = run(&m, &p, cpus);
            assert!(
                r.per_s >= prev * 0.99,
                "P={cpus}: {nlocks} locks {} < fewer locks {prev}",
                r.per_s
            );
            prev = r.per_s;
        }
    }
}

#[test]
fn padding_never_slower() {
    let m = Machine::by_name("spr-224").unwrap();
    for cpus in [1u32, 8, 64, 224] {
        let shared = one_lock_profile(224, 3000.0, 200.0, 3, |_| 0, 1, true);
        let padded = one_lock_profile(224, 3000.0, 200.0, 3, |_| 0, 1, false);
        let a = run(&m, &shared, cpus).per_s;
        let b = run(&m, &padded, cpus).per_s;
        assert!(b >= a * 0.999, "P={cpus}: padded {b} < shared {a}");
    }
}

#[test]
fn distance_slows_a_contended_lock() {
    // The same contended lock with line transfers costs more across sockets.
    let near = flat(64, 20.0);
    let far = flat(64, 300.0);
    let p = one_lock_profile(64, 1000.0, 100.0, 3, |_| 0, 1, false);
    let a = run(&near, &p, 64).per_s;
    let b = run(&far, &p, 64).per_s;
    assert!(b < a * 0.5, "far {b} vs near {a}");
}

#[test]
fn readers_share_and_writers_exclude() {
    // Readers only: many CPUs hold the lock at once, so a read-only
    // workload is not serialised; the same as writers saturates.
    let m = flat(32, 0.0);
    let mut p = one_lock_profile(32, 100.0, 900.0, 0, |_| 0, 1, false);
    let writers = run(&m, &p, 32).per_s;
    for s in &mut p.slots {
        if let Step::Hold(h) = &mut s.steps[1] {
            h.write = false;
            h.site = Site::Walk;
        }
    }
    let readers = run(&m, &p, 32).per_s;
    assert!(close(writers, 1e9 / 900.0, 0.02), "writers {writers}");
    assert!(
        close(readers, 32.0 * 1e9 / 1000.0, 0.02),
        "readers {readers}"
    );
}

#[test]
fn bad_config_is_an_error() {
    let m = flat(4, 0.0);
    let p = one_lock_profile(4, 10.0, 10.0, 0, |_| 0, 1, false);
    assert!(simulate(&m, &p, &SimConfig::new(0)).is_err());
    assert!(simulate(&m, &p, &SimConfig::new(5)).is_err());
    let mut cfg = SimConfig::new(2);
    cfg.duration_ns = f64::INFINITY;
    assert!(simulate(&m, &p, &cfg).is_err());
}
