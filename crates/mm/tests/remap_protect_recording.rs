//! A real run of `tests/data/remap_protect.c`: `mremap` with `MREMAP_DONTUNMAP`
//! (to where the search puts it, to a hint strace does not print, to a fixed place,
//! from a locked area, and refused with a length change or without
//! `MREMAP_MAYMOVE`), `mremap` with `old_len` 0 (a second mapping of a shared file
//! and of shared anonymous memory; refused for private memory, and without
//! `MREMAP_MAYMOVE`), and `mprotect` with `PROT_GROWSDOWN` (the whole stack, from a
//! page or from its gap; refused on other memory), `PROT_GROWSUP` and both (always
//! refused on x86-64). Every process's layout must come out of the replay
//! identical, with every call expressed and with the kernel's result: from the
//! stored recording (`tests/data/remap-protect.{strace,maps}`) and from a fresh one
//! ([`common`] says how each is made and checked).

mod common;

use common::CProgram;
use mm::recording::Recording;
use mm::strace::Call;

const PROGRAM: CProgram = CProgram {
    name: "remap-protect",
    source: "remap_protect.c",
    processes: 1,
};

const DONTUNMAP: u64 = 4;
const FIXED: u64 = 2;
const GROWSDOWN: u64 = mm::Grows::PROT_GROWSDOWN;
const GROWSUP: u64 = mm::Grows::PROT_GROWSUP;

/// Each case the program makes is in the trace.
fn assert_every_case(rec: &Recording) {
    let calls: Vec<&Call> = rec.events.iter().map(|e| &e.call).collect();
    let has = |f: &dyn Fn(&Call) -> bool| calls.iter().any(|c| f(c));
    let remap = |flags_in: u64, old_zero: bool, ok: bool| {
        has(&|c| {
            matches!(c, Call::Mremap { flags, old_len, ret, .. }
                if flags & flags_in == flags_in && (*old_len == 0) == old_zero
                    && ret.is_ok() == ok)
        })
    };
    assert!(remap(DONTUNMAP, false, true), "MREMAP_DONTUNMAP done");
    assert!(remap(DONTUNMAP | FIXED, false, true), "to a fixed place");
    assert!(remap(DONTUNMAP, false, false), "refused");
    // strace leaves out the hint of a MREMAP_DONTUNMAP without MREMAP_FIXED.
    assert!(has(
        &|c| matches!(c, Call::Mremap { flags, new_addr: None, ret: Ok(_), .. }
        if *flags == DONTUNMAP | 1)
    ));
    assert!(remap(0, true, true), "old_len 0 done");
    assert!(remap(FIXED, true, true), "old_len 0 to a fixed place");
    assert!(remap(0, true, false), "old_len 0 refused");
    let protect = |bits: u64, ok: bool| {
        has(&|c| {
            matches!(c, Call::Mprotect { prot, ret, .. }
                if prot & (GROWSDOWN | GROWSUP) == bits && ret.is_ok() == ok)
        })
    };
    assert!(protect(GROWSDOWN, true));
    assert!(protect(GROWSDOWN, false));
    assert!(protect(GROWSUP, false));
    assert!(protect(GROWSDOWN | GROWSUP, false));
}

#[test]
fn the_stored_recording_replays_identically() {
    // The DONTUNMAP copy lands next to its source, which the kernel keeps apart
    // from it (a page-fault matter the trace does not show).
    let Some((rec, _)) = PROGRAM.replay_stored(true) else {
        return;
    };
    assert_every_case(&rec);
    // What the last PROT_GROWSDOWN did, in the kernel's maps: the whole stack rwx.
    let pid = mm::strace::first_pid(&rec.events).unwrap();
    let stack: Vec<_> = rec.maps[&pid]
        .iter()
        .filter(|l| l.name == "[stack]")
        .collect();
    assert_eq!(stack.len(), 1);
    assert_eq!(stack[0].perms(), "rwxp");
}

#[test]
fn a_fresh_recording_replays_identically() {
    if let Some((rec, _)) = PROGRAM.record_fresh() {
        assert_every_case(&rec);
    }
}
