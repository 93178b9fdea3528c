//! A recording on disk, as `scripts/record.sh` writes it, replayed and checked process
//! by process.
//!
//! - `OUT.strace`: the trace (`strace -f -y -v -s 131072 -e
//!   trace=memory,process,setrlimit,prlimit64,shmget,unlink,unlinkat,rename,renameat,renameat2`,
//!   ASLR off: the memory calls, the processes, the stack limit that places the mmap
//!   area, System V segments' sizes, and the unlinks that make a mapped file
//!   `(deleted)`), starting with a `# aspace-stack-limit` line and ending with a
//!   `# aspace-file` line per file the run mapped or executed
//!   ([`crate::identity`]);
//! - `OUT.maps/PID.maps`: `/proc/PID/maps` of each process as it called
//!   `exit_group`. A single maps file (the README's gdb recipe) stands for the first
//!   process.
//!
//! [`Recording::check`] replays the trace and compares each recorded process's final
//! layout with the model's, every field of every line ([`crate::maps`]).
//!
//! Reading is bounded: only regular files (a FIFO or device is refused without
//! waiting on it), a trace of at most [`MAX_TRACE_BYTES`], a maps file of at most
//! [`MAX_MAPS_BYTES`].

use crate::maps::{compare_maps, parse_maps, vdso_layout, MapsLine};
use crate::placement::Placement;
use crate::replay::{Replay, Report};
use crate::strace::{self, Call, Event};
use crate::Files;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The largest trace read.
pub const MAX_TRACE_BYTES: u64 = 1 << 30;
/// The largest maps file read.
pub const MAX_MAPS_BYTES: u64 = 64 << 20;

/// A trace and the layouts its processes had at exit.
#[derive(Clone, Debug)]
pub struct Recording {
    /// The parsed trace, in the kernel's order.
    pub events: Vec<Event>,
    /// Each recorded process's `/proc/PID/maps` at exit, by pid.
    pub maps: BTreeMap<u32, Vec<MapsLine>>,
}

/// How one recorded process's final layout compares with the replay's.
#[derive(Clone, Debug)]
pub struct ProcessCheck {
    /// The pid.
    pub pid: u32,
    /// The kernel's lines compared (`[vsyscall]`, outside the model, not counted).
    pub compared: usize,
    /// The differences in words ([`crate::maps::describe_differences`]); a pid the
    /// replay never saw exit gives one entry saying so.
    pub differences: Vec<String>,
    /// What the kernel did for a reason the trace does not show, in words, not
    /// counted as differences: areas it kept apart where the model merged them
    /// ([`crate::maps::kept_apart`]), and a stack grown by page faults
    /// ([`crate::maps::grown_stack`]).
    pub kept_apart: Vec<String>,
    /// Whether the kernel laid this process out at random (a set-id program, or a
    /// process after one: [`Report::randomized`]): its layout is not compared, and
    /// `compared` is 0.
    pub randomized: bool,
}

/// What [`Recording::check`] found.
#[derive(Clone, Debug)]
pub struct Check {
    /// The replay's report (placements, calls not expressed, files changed, ...).
    pub report: Report,
    /// Each recorded process, by pid.
    pub processes: Vec<ProcessCheck>,
}

impl Check {
    /// Whether every recorded process's layout is the model's, line for line (a
    /// randomized one, not compared, counts as no difference).
    pub fn layouts_identical(&self) -> bool {
        self.processes.iter().all(|p| p.differences.is_empty())
    }
}

/// Reads a regular file of at most `max` bytes as text.
fn read_bounded(path: &Path, max: u64) -> Result<String, String> {
    use std::io::Read as _;
    let (file, meta) = crate::elf::open_regular(path).map_err(|e| e.to_string())?;
    if meta.len() > max {
        return Err(format!(
            "{}: {} bytes, more than the {max} read",
            path.display(),
            meta.len()
        ));
    }
    let mut text = String::new();
    file.take(max)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text)
}

impl Recording {
    /// Reads `trace` and the maps at `maps`: a directory of `PID.maps` files, or one
    /// maps file for the trace's first process. Without `maps`, `OUT.maps` beside
    /// `OUT.strace` is used if it exists.
    pub fn load(trace: &Path, maps: Option<&Path>) -> Result<Recording, String> {
        let text = read_bounded(trace, MAX_TRACE_BYTES)?;
        let events = strace::parse(&text).map_err(|e| format!("{}: {e}", trace.display()))?;
        let beside = trace.with_extension("maps");
        let maps_path: Option<PathBuf> = match maps {
            Some(p) => Some(p.to_path_buf()),
            None => beside.exists().then_some(beside),
        };
        let first = strace::first_pid(&events);
        let mut maps = BTreeMap::new();
        let parse = |p: &Path| -> Result<Vec<MapsLine>, String> {
            parse_maps(&read_bounded(p, MAX_MAPS_BYTES)?)
                .ok_or_else(|| format!("{}: not a /proc/PID/maps file", p.display()))
        };
        match maps_path {
            Some(dir) if dir.is_dir() => {
                let entries =
                    std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                for entry in entries {
                    let p = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
                    let pid = p
                        .file_name()
                        .and_then(|n| n.to_str())
                        .and_then(|n| n.strip_suffix(".maps"))
                        .and_then(|n| n.parse::<u32>().ok());
                    if let Some(pid) = pid {
                        maps.insert(pid, parse(&p)?);
                    }
                }
            }
            Some(file) => {
                let pid = first.ok_or("the trace has no pid to give the maps to")?;
                maps.insert(pid, parse(&file)?);
            }
            None => {}
        }
        Ok(Recording { events, maps })
    }

    /// The first process of the trace.
    pub fn first_pid(&self) -> Option<u32> {
        strace::first_pid(&self.events)
    }

    /// The program the first process ran: its first successful `execve`'s path.
    pub fn program(&self) -> Option<&str> {
        self.events.iter().find_map(|e| match &e.call {
            Call::Execve {
                path, ret: Ok(_), ..
            } => Some(path.as_str()),
            _ => None,
        })
    }

    /// Replays the trace into `files` with `placement` and compares each recorded
    /// process's final layout with the model's. The execs lay the vDSO out as the
    /// recorded maps show it (the recording kernel's: [`vdso_layout`], set on
    /// `files`).
    pub fn check(&self, files: Arc<Files>, placement: Placement) -> Check {
        // The kernel that ran the program laid its vDSO out as its maps show.
        if let Some(layout) = self.maps.values().find_map(|m| vdso_layout(m)) {
            files.set_vdso_layout(layout);
        }
        let mut r = Replay::new(files, placement);
        r.run(&self.events);
        let processes = self
            .maps
            .iter()
            .map(|(&pid, real)| {
                if r.randomized(pid) {
                    return ProcessCheck {
                        pid,
                        compared: 0,
                        differences: vec![],
                        kept_apart: vec![],
                        randomized: true,
                    };
                }
                let compared = real.iter().filter(|l| l.name != "[vsyscall]").count();
                let (differences, kept_apart) = match r.exited.get(&pid) {
                    Some(layout) => compare_maps(&layout.maps(), real),
                    None => (
                        vec![format!("pid {pid} did not exit in the replay")],
                        vec![],
                    ),
                };
                ProcessCheck {
                    pid,
                    compared,
                    differences,
                    kept_apart,
                    randomized: false,
                }
            })
            .collect();
        Check {
            report: r.report.clone(),
            processes,
        }
    }
}
