//! The model's own exec iteration, measured alone: exec the binary, take
//! the faults a fresh process takes, no reverse map (`Design::Exclude`).
//!
//! `aspace calibrate` stores its cost as a machine's `model_exec_ns`; the
//! predictor times the same loop on its host to scale a recording to a
//! machine; the bench's workers fault on the same plan. It sits below all
//! three so that none of them imports another for it.

use std::path::Path;
use std::sync::Arc;

use mm::{Access, CallPattern, Files, Mm};
use rmap::{Design, Topology};

/// The model's own execl iteration (exec, faults, exit) without a reverse
/// map, ns of thread CPU time: the median of 7 batches on one thread
/// (`aspace calibrate`'s `model_exec_ns`, and the bench's and predictor's
/// measure of the same loop on their host).
pub fn model_exec_ns(binary: &Path) -> Result<f64, String> {
    let files = Files::new(Design::Exclude, Topology::detect(), CallPattern::PerVma);
    let prog = files
        .program(binary)
        .map_err(|e| format!("cannot exec {}: {e}", binary.display()))?;
    let mm = Mm::new(files.clone());
    mm.exec_program(&prog);
    let faults = fault_plan(&mm);
    let one = || {
        mm.exec_program(&prog);
        for &(addr, access) in &faults {
            let _ = std::hint::black_box(mm.page_fault(addr, access));
        }
    };
    for _ in 0..50 {
        one();
    }
    let mut v: Vec<f64> = (0..7)
        .map(|_| {
            let t = thread_cpu_ns();
            for _ in 0..100 {
                one();
            }
            (thread_cpu_ns() - t) / 100.0
        })
        .collect();
    mm.exit();
    v.sort_by(f64::total_cmp);
    Ok(v[v.len() / 2])
}

/// Addresses a freshly exec'd process faults on: (address, access).
pub(crate) fn fault_plan(mm: &Mm) -> Vec<(u64, Access)> {
    let vmas = mm.vmas();
    let mut out = Vec::new();
    // The first executable page of each file: the entry point, ld.so, libc.
    let mut seen: Vec<*const mm::File> = Vec::new();
    for v in &vmas {
        if let Some((f, _)) = v.file() {
            if v.prot.exec && !seen.contains(&Arc::as_ptr(f)) {
                seen.push(Arc::as_ptr(f));
                out.push((v.start, Access::Exec));
            }
        }
    }
    out.push((mm::layout::STACK_TOP - 8, Access::Write));
    let (start, brk) = mm.brk_range();
    if brk > start {
        out.push((start, Access::Write));
    }
    out
}

/// CPU time of the calling thread, ns: unlike wall time, it leaves out the
/// time other processes on a loaded host take the CPU away.
pub(crate) fn thread_cpu_ns() -> f64 {
    // SAFETY: timespec is plain data; clock_gettime writes one through the
    // valid pointer.
    let ts = unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
        ts
    };
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}
