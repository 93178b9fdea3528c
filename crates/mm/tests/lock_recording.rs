//! A real run of `tests/data/mlock_madvise_flags.c`: `mlock`, `munlock`, `mlock2`
//! (`MLOCK_ONFAULT`, and a bad flag), `MAP_LOCKED`, `mlockall(MCL_FUTURE)` then new
//! areas and a heap growth, a fork whose child maps a page and exits,
//! `mlockall(MCL_CURRENT | MCL_FUTURE)`, `munlockall`, `MADV_RANDOM` /
//! `MADV_SEQUENTIAL` / `MADV_NORMAL` on parts of a file mapping, `MADV_MERGEABLE` /
//! `MADV_UNMERGEABLE` on part of an anonymous one and `MADV_MERGEABLE` on a shared
//! one. Every process's layout must come out of the replay identical, with every
//! call expressed: from the stored recording
//! (`tests/data/mlock-madvise-flags.{strace,maps}`) and from a fresh one
//! ([`common`] says how each is made and checked).

mod common;

use common::CProgram;
use mm::recording::{Check, Recording};
use mm::strace::Call;

const PROGRAM: CProgram = CProgram {
    name: "mlock-madvise-flags",
    source: "mlock_madvise_flags.c",
    processes: 2,
};

/// Each call kind the program makes is in the trace, and replayed.
fn assert_every_call_kind(rec: &Recording, check: &Check) {
    let calls: Vec<&Call> = rec.events.iter().map(|e| &e.call).collect();
    let has = |f: &dyn Fn(&Call) -> bool| calls.iter().any(|c| f(c));
    assert!(has(&|c| matches!(
        c,
        Call::Mlock {
            flags: 0,
            ret: Ok(_),
            ..
        }
    )));
    assert!(has(&|c| matches!(
        c,
        Call::Mlock {
            flags: 1,
            ret: Ok(_),
            ..
        }
    )));
    assert!(has(&|c| matches!(c, Call::Mlock { ret: Err(_), .. })));
    assert!(has(&|c| matches!(c, Call::Munlock { ret: Ok(_), .. })));
    assert!(has(&|c| matches!(
        c,
        Call::Mlockall {
            flags: 2,
            ret: Ok(_)
        }
    )));
    assert!(has(&|c| matches!(
        c,
        Call::Mlockall {
            flags: 3,
            ret: Ok(_)
        }
    )));
    assert!(has(&|c| matches!(c, Call::Munlockall { ret: Ok(_) })));
    assert!(has(
        &|c| matches!(c, Call::Mmap { flags, .. } if flags & mm::strace::map::LOCKED != 0)
    ));
    for advice in [0, 1, 2, 12, 13] {
        assert!(
            has(&|c| matches!(c, Call::Madvise { advice: a, ret: Ok(_), .. } if *a == advice)),
            "advice {advice}"
        );
    }
    assert!(has(&|c| matches!(c, Call::Clone { vm: false, .. })));
    let lock_calls = calls
        .iter()
        .filter(|c| {
            matches!(
                c,
                Call::Mlock { .. }
                    | Call::Munlock { .. }
                    | Call::Mlockall { .. }
                    | Call::Munlockall { .. }
            )
        })
        .count() as u64;
    assert!(check.report.calls > lock_calls);
}

#[test]
fn the_stored_recording_replays_identically() {
    let Some((rec, check)) = PROGRAM.replay_stored(false) else {
        return;
    };
    assert_every_call_kind(&rec, &check);
    // What the lock bits did, in the kernel's maps: the child has the parent's two
    // heap areas (the second grown under MCL_FUTURE), no longer locked but kept
    // apart; the parent, after MCL_CURRENT, one.
    let heaps = |pid: u32| rec.maps[&pid].iter().filter(|l| l.name == "[heap]").count();
    let parent = mm::strace::first_pid(&rec.events).unwrap();
    let child = *rec.maps.keys().find(|&&p| p != parent).unwrap();
    assert_eq!((heaps(parent), heaps(child)), (1, 2));
}

#[test]
fn a_fresh_recording_replays_identically() {
    if let Some((rec, check)) = PROGRAM.record_fresh() {
        assert_every_call_kind(&rec, &check);
    }
}
