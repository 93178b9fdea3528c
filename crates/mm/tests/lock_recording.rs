//! A real run of `tests/data/mlock_madvise_flags.c`: `mlock`, `munlock`, `mlock2`
//! (`MLOCK_ONFAULT`, and a bad flag), `MAP_LOCKED`, `mlockall(MCL_FUTURE)` then new
//! areas and a heap growth, a fork whose child maps a page and exits,
//! `mlockall(MCL_CURRENT | MCL_FUTURE)`, `munlockall`, `MADV_RANDOM` /
//! `MADV_SEQUENTIAL` / `MADV_NORMAL` on parts of a file mapping, `MADV_MERGEABLE` /
//! `MADV_UNMERGEABLE` on part of an anonymous one and `MADV_MERGEABLE` on a shared
//! one. Every process's layout must come out of the replay identical, with every
//! call expressed.
//!
//! The recording (`tests/data/mlock-madvise-flags.{strace,maps}`, Linux 6.18, made
//! as the C file's header says) names the program by its path on the recording
//! machine, `/tmp/aspace-mlock-madvise-flags-00000000/mlock-madvise-flags`. The
//! first test builds the program with `cc` into a directory whose path has the same
//! length (so the exec's strings, which size the `[stack]`, keep theirs), and
//! replays the recording with the path changed to it, provided `cc` built the
//! recorded binary (the same ELF build-id); otherwise it says why and checks
//! nothing. The second records a fresh run with `scripts/record.sh` and replays it,
//! where strace is installed (it says so and checks nothing where it is not).

use mm::identity::{FileIdentity, RECORD_PREFIX};
use mm::placement::Placement;
use mm::recording::{Check, Recording};
use mm::strace::Call;
use mm::{CallPattern, Files};
use rmap::{Design, Topology};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory the stored recording's program was in.
const RECORDED_DIR: &str = "/tmp/aspace-mlock-madvise-flags-00000000";
/// The program's name, and the recording's.
const NAME: &str = "mlock-madvise-flags";

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// Builds the C program into `dir` (made here) as the recording's was built:
/// `cc -O2 -s`, from a copy of the source in `dir`. `Err` says why not.
fn build(dir: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let src = "mlock_madvise_flags.c";
    std::fs::copy(data(src), dir.join(src)).map_err(|e| e.to_string())?;
    let out = Command::new("cc")
        .current_dir(dir)
        .args(["-O2", "-s", "-o", NAME, src])
        .output()
        .map_err(|e| format!("cc: {e}"))?;
    if !out.status.success() {
        return Err(format!("cc: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(dir.join(NAME))
}

/// Replays `rec` (Linux and aspace designs) and checks what it must give: every
/// call expressed and with the kernel's result, every placement the kernel's, every
/// process's layout identical but for `changed` (a file that is another one now,
/// by device and inode). Returns the last check.
/// `kept_apart`: whether areas the kernel kept apart for page faults the trace does
/// not show may be (the stored recording has none; a fresh one on another machine,
/// whose areas land elsewhere, might).
fn check(rec: &Recording, changed: Option<&Path>, kept_apart: bool) -> Check {
    let mut last = None;
    for design in [Design::Linux, Design::Aspace] {
        let files = Files::new(design, Topology::detect(), CallPattern::PerVma);
        let check = rec.check(files, Placement::LINUX_THP);
        let rep = &check.report;
        assert!(
            rep.not_expressed
                .iter()
                .all(|(_, w)| w.starts_with("exit_group")),
            "{:?}",
            rep.not_expressed
        );
        assert!(rep.result_differs.is_empty(), "{:?}", rep.result_differs);
        assert_eq!(rep.placed_same, rep.placed, "{:x?}", rep.misplaced);
        assert_eq!(check.processes.len(), 2, "the program and its child");
        for p in &check.processes {
            assert!(kept_apart || p.kept_apart.is_empty(), "{:#?}", p.kept_apart);
            for d in &p.differences {
                let same_file_now_another = changed.is_some_and(|c| {
                    d.starts_with(&format!(
                        "file {} changed since it was recorded: device and inode",
                        c.display()
                    ))
                });
                assert!(same_file_now_another, "pid {}: {:#?}", p.pid, p.differences);
            }
        }
        last = Some(check);
    }
    last.expect("two designs")
}

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
    let dir = PathBuf::from(format!(
        "/tmp/aspace-mlock-madvise-flags-{:08x}",
        std::process::id()
    ));
    assert_eq!(dir.as_os_str().len(), RECORDED_DIR.len());
    let exe = match build(&dir) {
        Ok(exe) => exe,
        Err(why) => {
            eprintln!("the program could not be built ({why}): the recording is not replayed");
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
    };
    let trace = std::fs::read_to_string(data(&format!("{NAME}.strace"))).unwrap();
    // The recorded program's identity, and the one cc built now.
    let recorded = trace
        .lines()
        .filter(|l| l.starts_with(RECORD_PREFIX))
        .map(|l| FileIdentity::parse_record(l).unwrap())
        .find(|(path, _)| *path == format!("{RECORDED_DIR}/{NAME}"))
        .expect("the trace records the program's identity")
        .1;
    let now = FileIdentity::of(&exe).unwrap();
    if recorded.build_id.is_none() || now.build_id != recorded.build_id {
        eprintln!(
            "cc built another program than the recorded one (build-id {:02x?}, recorded \
             {:02x?}: another compiler?): the recording is not replayed",
            now.build_id, recorded.build_id
        );
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    // The recording, its program's path now the one just built.
    let here = dir.to_str().unwrap();
    let out = dir.join(NAME).with_extension("strace");
    std::fs::write(&out, trace.replace(RECORDED_DIR, here)).unwrap();
    let maps_dir = dir.join(format!("{NAME}.maps"));
    std::fs::create_dir_all(&maps_dir).unwrap();
    for entry in std::fs::read_dir(data(&format!("{NAME}.maps"))).unwrap() {
        let p = entry.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(
            maps_dir.join(p.file_name().unwrap()),
            text.replace(RECORDED_DIR, here),
        )
        .unwrap();
    }
    let rec = Recording::load(&out, Some(&maps_dir)).unwrap();
    // The binary is the recorded one, but not the same file (device and inode).
    let check = check(&rec, Some(&exe), false);
    assert_every_call_kind(&rec, &check);
    // What the lock bits did, in the kernel's maps: the child has the parent's two
    // heap areas (the second grown under MCL_FUTURE), no longer locked but kept
    // apart; the parent, after MCL_CURRENT, one.
    let heaps = |pid: u32| rec.maps[&pid].iter().filter(|l| l.name == "[heap]").count();
    let parent = mm::strace::first_pid(&rec.events).unwrap();
    let child = *rec.maps.keys().find(|&&p| p != parent).unwrap();
    assert_eq!((heaps(parent), heaps(child)), (1, 2));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_fresh_recording_replays_identically() {
    let have_strace = Command::new("strace")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_strace {
        eprintln!("strace is not installed: scripts/record.sh cannot run here");
        return;
    }
    let dir = std::env::temp_dir().join(format!("aspace-lock-recording-{}", std::process::id()));
    let exe = match build(&dir) {
        Ok(exe) => exe,
        Err(why) => {
            eprintln!("the program could not be built ({why}): nothing recorded");
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }
    };
    let out = dir.join("rec");
    let run = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/record.sh"))
        .arg(&out)
        .arg(&exe)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "record.sh failed:\n{stderr}");
    let rec = Recording::load(&out.with_extension("strace"), None).unwrap();
    let check = check(&rec, None, true);
    assert_every_call_kind(&rec, &check);
    std::fs::remove_dir_all(&dir).unwrap();
}
