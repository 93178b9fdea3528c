//! A real run of `tests/data/seal_bind_key.c`: `pkey_mprotect` (key -1, and an
//! unallocated key refused), `mbind` (bind, interleave, preferred without nodes,
//! a range over two areas, a node the machine lacks, and `MPOL_DEFAULT` merging
//! areas back), `mseal` (done, over two areas, empty, with bad flags) and every
//! change a sealed
//! area refuses (`munmap`, `mprotect`, `mremap` of it and onto it, `MAP_FIXED`
//! over it, discarding advice on sealed read-only memory, a `brk` shrink), then a
//! fork whose child finds the seal too. Every process's layout must come out of the
//! replay identical, with every call expressed and with the kernel's result: from
//! the stored recording (`tests/data/seal-bind-key.{strace,maps}`) and from a fresh
//! one ([`common`] says how each is made and checked).

mod common;

use common::CProgram;
use mm::recording::Recording;
use mm::strace::Call;

const PROGRAM: CProgram = CProgram {
    name: "seal-bind-key",
    source: "seal_bind_key.c",
    processes: 2,
};

/// Each kind of call the program makes is in the trace, done and refused.
fn assert_every_case(rec: &Recording) {
    let calls: Vec<&Call> = rec.events.iter().map(|e| &e.call).collect();
    let has = |f: &dyn Fn(&Call) -> bool| calls.iter().any(|c| f(c));
    for ok in [true, false] {
        assert!(has(
            &|c| matches!(c, Call::Mseal { ret, .. } if ret.is_ok() == ok)
        ));
        assert!(has(
            &|c| matches!(c, Call::Mbind { ret, .. } if ret.is_ok() == ok)
        ));
    }
    assert!(has(&|c| matches!(
        c,
        Call::Mprotect {
            pkey: -1,
            ret: Ok(_),
            ..
        }
    )));
    assert!(has(&|c| matches!(
        c,
        Call::Mprotect {
            pkey: 1,
            ret: Err(_),
            ..
        }
    )));
    let eperm = |c: &Call| match c {
        Call::Munmap { ret, .. }
        | Call::Mprotect { ret, .. }
        | Call::Mremap { ret, .. }
        | Call::Mmap { ret, .. }
        | Call::Madvise { ret, .. } => ret.as_ref().is_err_and(|e| e.as_str() == "EPERM"),
        _ => false,
    };
    let refusals = calls.iter().filter(|c| eperm(c)).count();
    assert!(refusals >= 9, "{refusals} calls refused with EPERM");
}

#[test]
fn the_stored_recording_replays_identically() {
    let Some((rec, _)) = PROGRAM.replay_stored(false) else {
        return;
    };
    assert_every_case(&rec);
}

/// Whether the running kernel is at least `major.minor`.
fn kernel_at_least(major: u32, minor: u32) -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release.trim().split(['.', '-']);
    let mut next = || {
        parts
            .next()
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(0)
    };
    (next(), next()) >= (major, minor)
}

#[test]
fn a_fresh_recording_replays_identically() {
    if !kernel_at_least(6, 10) {
        eprintln!("this kernel has no mseal (Linux >= 6.10): nothing recorded");
        return;
    }
    if let Some((rec, _)) = PROGRAM.record_fresh() {
        assert_every_case(&rec);
    }
}
