//! A C program in `tests/data`, its stored recording, and a fresh one: what the
//! recorded-program tests (`lock_recording.rs`, `remap_protect_recording.rs`)
//! share.
//!
//! Each program's stored recording (`tests/data/NAME.{strace,maps}`, Linux 6.18,
//! made as the C file's header says) names the program by its path on the
//! recording machine, `/tmp/aspace-NAME-00000000/NAME`.
//! [`CProgram::replay_stored`] builds the program with `cc` into a directory whose
//! path has the same length (so the exec's strings, which size the `[stack]`, keep
//! theirs), and replays the recording with the path changed to it, provided `cc`
//! built the recorded binary (the same ELF build-id); otherwise it says why and
//! checks nothing. [`CProgram::record_fresh`] records a run with
//! `scripts/record.sh` and replays it, where strace is installed (it says so and
//! checks nothing where it is not).

use mm::identity::{FileIdentity, RECORD_PREFIX};
use mm::placement::Placement;
use mm::recording::{Check, Recording};
use mm::{CallPattern, Files};
use rmap::{Design, Topology};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A recorded C program of `tests/data`.
pub struct CProgram {
    /// The program's name, and its recording's (`tests/data/NAME.strace`).
    pub name: &'static str,
    /// Its source in `tests/data`.
    pub source: &'static str,
    /// How many processes it runs (each leaves its maps).
    pub processes: usize,
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

impl CProgram {
    /// The directory the stored recording's program was in.
    fn recorded_dir(&self) -> String {
        format!("/tmp/aspace-{}-00000000", self.name)
    }

    /// Builds the program into `dir` (made here) as the recording's was built:
    /// `cc -O2 -s`, from a copy of the source in `dir`. `Err` says why not.
    fn build(&self, dir: &Path) -> Result<PathBuf, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::copy(data(self.source), dir.join(self.source)).map_err(|e| e.to_string())?;
        let out = Command::new("cc")
            .current_dir(dir)
            .args(["-O2", "-s", "-o", self.name, self.source])
            .output()
            .map_err(|e| format!("cc: {e}"))?;
        if !out.status.success() {
            return Err(format!("cc: {}", String::from_utf8_lossy(&out.stderr)));
        }
        Ok(dir.join(self.name))
    }

    /// Replays `rec` (Linux and aspace designs) and checks what it must give: every
    /// call expressed and with the kernel's result, every placement the kernel's,
    /// every process's layout identical but for `changed` (a file that is another
    /// one now, by device and inode). Returns the last check.
    /// `kept_apart`: whether areas the kernel kept apart for page faults the trace
    /// does not show may be.
    fn check(&self, rec: &Recording, changed: Option<&Path>, kept_apart: bool) -> Check {
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
            assert_eq!(check.processes.len(), self.processes, "processes with maps");
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

    /// The stored recording, replayed against the program built here; `None` (and
    /// why, on stderr) where `cc` cannot build it or builds another binary.
    /// `kept_apart` as for [`CProgram::check`] (of areas that land where they were
    /// recorded).
    pub fn replay_stored(&self, kept_apart: bool) -> Option<(Recording, Check)> {
        let recorded_dir = self.recorded_dir();
        let dir = PathBuf::from(format!(
            "/tmp/aspace-{}-{:08x}",
            self.name,
            std::process::id()
        ));
        assert_eq!(dir.as_os_str().len(), recorded_dir.len());
        let gone = |why: String| {
            eprintln!("{why}: the recording is not replayed");
            let _ = std::fs::remove_dir_all(&dir);
            None
        };
        let exe = match self.build(&dir) {
            Ok(exe) => exe,
            Err(why) => return gone(format!("the program could not be built ({why})")),
        };
        let trace = std::fs::read_to_string(data(&format!("{}.strace", self.name))).unwrap();
        // The recorded program's identity, and the one cc built now.
        let recorded = trace
            .lines()
            .filter(|l| l.starts_with(RECORD_PREFIX))
            .map(|l| FileIdentity::parse_record(l).unwrap())
            .find(|(path, _)| *path == format!("{recorded_dir}/{}", self.name))
            .expect("the trace records the program's identity")
            .1;
        let now = FileIdentity::of(&exe).unwrap();
        if recorded.build_id.is_none() || now.build_id != recorded.build_id {
            return gone(format!(
                "cc built another program than the recorded one (build-id {:02x?}, \
                 recorded {:02x?}: another compiler?)",
                now.build_id, recorded.build_id
            ));
        }
        // The recording, its program's path now the one just built.
        let here = dir.to_str().unwrap();
        let out = dir.join(self.name).with_extension("strace");
        std::fs::write(&out, trace.replace(&recorded_dir, here)).unwrap();
        let maps_dir = dir.join(format!("{}.maps", self.name));
        std::fs::create_dir_all(&maps_dir).unwrap();
        for entry in std::fs::read_dir(data(&format!("{}.maps", self.name))).unwrap() {
            let p = entry.unwrap().path();
            let text = std::fs::read_to_string(&p).unwrap();
            std::fs::write(
                maps_dir.join(p.file_name().unwrap()),
                text.replace(&recorded_dir, here),
            )
            .unwrap();
        }
        let rec = Recording::load(&out, Some(&maps_dir)).unwrap();
        // The binary is the recorded one, but not the same file (device and inode).
        let check = self.check(&rec, Some(&exe), kept_apart);
        std::fs::remove_dir_all(&dir).unwrap();
        Some((rec, check))
    }

    /// A run recorded here with `scripts/record.sh` and replayed (areas kept apart
    /// for page faults allowed: they land elsewhere on another machine); `None`
    /// (and why, on stderr) where strace or `cc` is missing.
    pub fn record_fresh(&self) -> Option<(Recording, Check)> {
        let have_strace = Command::new("strace")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !have_strace {
            eprintln!("strace is not installed: scripts/record.sh cannot run here");
            return None;
        }
        let dir =
            std::env::temp_dir().join(format!("aspace-{}-fresh-{}", self.name, std::process::id()));
        let exe = match self.build(&dir) {
            Ok(exe) => exe,
            Err(why) => {
                eprintln!("the program could not be built ({why}): nothing recorded");
                let _ = std::fs::remove_dir_all(&dir);
                return None;
            }
        };
        let out = dir.join("rec");
        let run =
            Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/record.sh"))
                .arg(&out)
                .arg(&exe)
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .output()
                .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(0), "record.sh failed:\n{stderr}");
        let rec = Recording::load(&out.with_extension("strace"), None).unwrap();
        let check = self.check(&rec, None, true);
        std::fs::remove_dir_all(&dir).unwrap();
        Some((rec, check))
    }
}
