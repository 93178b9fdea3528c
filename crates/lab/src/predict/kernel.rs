//! The rest of what a real exec shares, beside the reverse map: the lines
//! every copy of an exec loop writes, as [`predict::Step::Touch`]es of a
//! kernel-cost profile and as real atomics in `aspace bench --cost kernel`.
//!
//! Measured on this host, for the binary being exec'd
//! ([`measure_exec`]): the binary is run under `ptrace` and stopped as it
//! exits, and `/proc/PID/smaps` gives, for each file it maps, the pages
//! that were mapped (`Rss`), and its anonymous pages and page tables. From
//! the kernel's code (6.x), each exec then writes:
//!
//! | line | writes per exec | why |
//! |---|---|---|
//! | one per mapped page of a file | 2 | `folio_add_file_rmap_ptes` at the fault that maps it, `folio_remove_rmap_ptes` when the old image is torn down: the page's `_mapcount` and its folio's counts (one 64-byte `struct page` each) |
//! | the file's dentry | 2 | `dget` when it is opened (`path_openat`'s final `lockref`), `dput` at close or teardown |
//! | the file's inode | 2 | the binary's `i_writecount` (`exe_file_deny_write_access` and its allow); a library's open takes and drops its own inode reference |
//! | `binfmt_lock` | 2 | `search_binary_handler`'s `read_lock` / `read_unlock` |
//! | `pcpu_alloc_mutex` | 4 | the new mm's per-CPU counters (`rss_stat`) and its `mm_cid`: two allocations, each a lock and an unlock |
//! | `pcpu_lock` | 8 | the same two allocations and their two frees when the old mm goes |
//! | the zone's `lock` | 2 per 63 pages | the page allocator's per-CPU lists refill and drain in batches (`pcp->batch`, 63 by default) for the exec's anonymous pages and page tables |
//! | the memory cgroup's `page_counter` | 2 per 64 pages | charges and uncharges go through a per-CPU stock of 64 pages (`MEMCG_CHARGE_BATCH`) |
//!
//! Each write is a transfer when another CPU wrote the line last; a lock's
//! own hold time is not modelled (its line is). Libraries and their pages
//! are shared by every copy; with `own_binary` the executable's lines are
//! each CPU's own. These counts come from reading the kernel; the page
//! counts from this host's smaps, which for the same binary and C library
//! are what any machine maps.

use predict::{LineKind, Profile, Step, Touch};
use std::ffi::CString;
use std::path::{Path, PathBuf};

/// One file an exec maps.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MappedFile {
    /// Its path, as smaps names it.
    pub path: PathBuf,
    /// Pages mapped from it at exit (smaps `Rss`, summed over its mappings).
    pub pages: u64,
    /// The executable itself (its inode's `i_writecount` is written).
    pub executable: bool,
}

/// What one exec of a binary maps, measured on this host.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ExecShare {
    /// Files mapped.
    pub files: Vec<MappedFile>,
    /// Anonymous pages (smaps `Anonymous`) plus page-table pages
    /// (`VmPTE`): what the page allocator and the memory cgroup hand out.
    pub private_pages: u64,
    /// How it was measured.
    pub source: String,
}

/// Writes per exec to a file's lines and the global ones (see the module
/// docs).
const PAGE_WRITES: usize = 2;
const DENTRY_WRITES: usize = 2;
const INODE_WRITES: usize = 2;
const BINFMT_WRITES: usize = 2;
const PCPU_MUTEX_WRITES: usize = 4;
const PCPU_LOCK_WRITES: usize = 8;
/// Pages per zone-lock acquisition (`pcp->batch`) and per memory-cgroup
/// charge (`MEMCG_CHARGE_BATCH`).
const PCP_BATCH: u64 = 63;
const MEMCG_BATCH: u64 = 64;

/// Runs `binary` with `args` under `ptrace`, stops it as it exits, and
/// reads what it mapped from `/proc/PID/smaps` and `/proc/PID/status`.
pub fn measure_exec(binary: &Path, args: &[&str]) -> Result<ExecShare, String> {
    let path = CString::new(binary.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("{}: a path with a NUL byte", binary.display()))?;
    let cargs: Vec<CString> = std::iter::once(Ok(path.clone()))
        .chain(args.iter().map(|a| CString::new(*a)))
        .collect::<Result<_, _>>()
        .map_err(|_| "an argument with a NUL byte".to_string())?;
    let mut argv: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
    argv.push(std::ptr::null());
    // SAFETY: the child calls only async-signal-safe functions (ptrace,
    // open, dup2, execv, _exit) before exec; argv is NUL-terminated and
    // lives until execv; the parent waits for that child only.
    let pid = unsafe {
        let pid = libc::fork();
        if pid == 0 {
            libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0);
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
            if null >= 0 {
                libc::dup2(null, 1);
                libc::dup2(null, 2);
            }
            libc::execv(path.as_ptr(), argv.as_ptr());
            libc::_exit(127);
        }
        pid
    };
    if pid < 0 {
        return Err("fork failed".into());
    }
    let wait = || -> Result<i32, String> {
        let mut status = 0;
        // SAFETY: waits for our child with a valid status pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r != pid {
            return Err("waitpid failed".into());
        }
        Ok(status)
    };
    // The stop at exec.
    let status = wait()?;
    if !libc::WIFSTOPPED(status) {
        return Err(format!("{} did not start", binary.display()));
    }
    // SAFETY: ptrace requests on our stopped tracee with plain integer
    // arguments.
    unsafe {
        libc::ptrace(
            libc::PTRACE_SETOPTIONS,
            pid,
            0,
            libc::PTRACE_O_TRACEEXIT as libc::c_long,
        );
        libc::ptrace(libc::PTRACE_CONT, pid, 0, 0);
    }
    let mut share = None;
    loop {
        let status = wait()?;
        if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
            break;
        }
        if libc::WIFSTOPPED(status) && (status >> 16) == libc::PTRACE_EVENT_EXIT {
            share = Some(read_maps(pid, binary));
        }
        let sig = if libc::WIFSTOPPED(status) && (status >> 8) & 0xff != libc::SIGTRAP {
            (status >> 8) & 0xff
        } else {
            0
        };
        // SAFETY: as above; forwards a signal the tracee received.
        unsafe { libc::ptrace(libc::PTRACE_CONT, pid, 0, sig as libc::c_long) };
    }
    share.unwrap_or_else(|| {
        Err(format!(
            "{} exited before it could be measured",
            binary.display()
        ))
    })
}

fn read_maps(pid: i32, binary: &Path) -> Result<ExecShare, String> {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps"))
        .map_err(|e| format!("cannot read smaps: {e}"))?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let exe = std::fs::canonicalize(binary).unwrap_or_else(|_| binary.to_path_buf());
    let mut files: Vec<MappedFile> = Vec::new();
    let mut current: Option<PathBuf> = None;
    let mut anon_kb = 0u64;
    for line in smaps.lines() {
        let mut parts = line.split_whitespace();
        let first = parts.next().unwrap_or("");
        if first.contains('-') && first.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-') {
            // A mapping's header: range perms offset dev inode [path].
            let path = line
                .split_whitespace()
                .nth(5)
                .filter(|p| p.starts_with('/'));
            current = path.map(PathBuf::from);
            continue;
        }
        let mut kb = || {
            parts
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        match first {
            "Rss:" => {
                if let Some(p) = &current {
                    let pages = kb() / 4;
                    match files.iter_mut().find(|f| &f.path == p) {
                        Some(f) => f.pages += pages,
                        None => files.push(MappedFile {
                            executable: std::fs::canonicalize(p).is_ok_and(|c| c == exe),
                            path: p.clone(),
                            pages,
                        }),
                    }
                }
            }
            "Anonymous:" => anon_kb += kb(),
            _ => {}
        }
    }
    let pte_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmPTE:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    Ok(ExecShare {
        files,
        private_pages: anon_kb / 4 + pte_kb / 4,
        source: format!(
            "{} run under ptrace on this host, stopped at exit: /proc/PID/smaps Rss per file, Anonymous, VmPTE",
            binary.display()
        ),
    })
}

/// The lines one exec writes, in order, as indices from 0 (each file's
/// pages, dentry and inode, then the globals; see the module docs): what
/// `aspace bench --cost kernel` writes, the same lines every copy shares.
pub fn exec_writes(share: &ExecShare) -> Vec<u32> {
    let mut next = 0u32;
    let mut line = || {
        next += 1;
        next - 1
    };
    let mut out = Vec::new();
    for f in &share.files {
        for _ in 0..f.pages {
            let l = line();
            out.extend(std::iter::repeat(l).take(PAGE_WRITES));
        }
        let d = line();
        out.extend(std::iter::repeat(d).take(DENTRY_WRITES));
        let i = line();
        out.extend(std::iter::repeat(i).take(INODE_WRITES));
    }
    for writes in global_writes(share) {
        let l = line();
        out.extend(std::iter::repeat(l).take(writes));
    }
    out
}

/// Writes per exec to each global line: `binfmt_lock`,
/// `pcpu_alloc_mutex`, `pcpu_lock`, the zone lock, the memcg counter.
fn global_writes(share: &ExecShare) -> [usize; 5] {
    [
        BINFMT_WRITES,
        PCPU_MUTEX_WRITES,
        PCPU_LOCK_WRITES,
        2 * share.private_pages.div_ceil(PCP_BATCH) as usize,
        2 * share.private_pages.div_ceil(MEMCG_BATCH) as usize,
    ]
}

/// Adds the exec's other shared lines to a kernel-cost profile: each
/// slot's iteration gets [`Step::Touch`]es spread over its work (a mapped
/// page is written when it is faulted in and when the next exec tears the
/// image down). With `own_binary`, each slot's executable lines are its
/// own.
pub fn add_exec_share(p: &Profile, share: &ExecShare, own_binary: bool) -> Profile {
    let mut out = p.clone();
    let new_line = |out: &mut Profile| -> u32 {
        out.lines.push(LineKind::ExecShared);
        (out.lines.len() - 1) as u32
    };
    // Shared lines: each library's pages, dentry and inode; the globals.
    let mut shared_writes: Vec<u32> = Vec::new();
    let file_lines = |out: &mut Profile, f: &MappedFile, into: &mut Vec<u32>| {
        for _ in 0..f.pages {
            let l = new_line(out);
            into.extend(std::iter::repeat(l).take(PAGE_WRITES));
        }
        let d = new_line(out);
        into.extend(std::iter::repeat(d).take(DENTRY_WRITES));
        let i = new_line(out);
        into.extend(std::iter::repeat(i).take(INODE_WRITES));
    };
    for f in share.files.iter().filter(|f| !(own_binary && f.executable)) {
        file_lines(&mut out, f, &mut shared_writes);
    }
    for writes in global_writes(share) {
        let l = new_line(&mut out);
        shared_writes.extend(std::iter::repeat(l).take(writes));
    }
    let exe: Option<&MappedFile> = share.files.iter().find(|f| f.executable);
    // Each slot's own executable: its pages, dentry and inode.
    let own_lines: Vec<Vec<u32>> = (0..out.slots.len())
        .map(|_| match (own_binary, exe) {
            (true, Some(f)) => (0..f.pages + 2).map(|_| new_line(&mut out)).collect(),
            _ => Vec::new(),
        })
        .collect();
    for (s, own) in out.slots.iter_mut().zip(own_lines) {
        let mut writes = shared_writes.clone();
        for l in own {
            // Pages, dentry and inode alike: two writes each.
            writes.extend([l, l]);
        }
        spread_touches(&mut s.steps, writes);
    }
    out.notes = format!(
        "{}; the exec's other shared lines added: {} per exec ({})",
        out.notes,
        shared_writes.len(),
        share.source
    );
    out
}

/// Splits `writes` into chunks placed after evenly spaced work steps.
fn spread_touches(steps: &mut Vec<Step>, writes: Vec<u32>) {
    const CHUNKS: usize = 8;
    let work_at: Vec<usize> = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s, Step::Work(_)))
        .map(|(i, _)| i)
        .collect();
    if writes.is_empty() {
        return;
    }
    let chunks = CHUNKS.min(work_at.len().max(1));
    let per = writes.len().div_ceil(chunks);
    let mut inserts: Vec<(usize, Vec<u32>)> = writes
        .chunks(per)
        .enumerate()
        .map(|(k, c)| {
            let at = work_at
                .get(k * work_at.len() / chunks)
                .map_or(steps.len(), |&i| i + 1);
            (at, c.to_vec())
        })
        .collect();
    // Insert from the back so that earlier positions stay valid.
    inserts.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    for (at, w) in inserts {
        steps.insert(
            at.min(steps.len()),
            Step::Touch(Touch {
                written: w,
                read: Vec::new(),
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use predict::{CpuProfile, Hold, LockDesc, LockKind, Site};

    #[test]
    fn a_real_exec_maps_its_binary_and_libraries() {
        let Ok(share) = measure_exec(Path::new("/bin/true"), &[]) else {
            eprintln!("skipped: ptrace is not allowed here");
            return;
        };
        let exe = share.files.iter().filter(|f| f.executable).count();
        assert_eq!(exe, 1, "{share:?}");
        assert!(share
            .files
            .iter()
            .any(|f| f.path.to_string_lossy().contains("libc.so")));
        assert!(share.files.iter().all(|f| f.pages > 0 || !f.executable));
        assert!(share.private_pages > 0);
    }

    fn profile(slots: u32) -> Profile {
        Profile {
            label: "t".into(),
            workload: "execl".into(),
            call_pattern: "per-vma".into(),
            locks: vec![LockDesc {
                name: "libc".into(),
                kind: LockKind::KernelRwsem,
                line: 0,
                contended_line: None,
            }],
            lines: vec![LineKind::LockWord],
            slots: (0..slots)
                .map(|c| CpuProfile {
                    cpu: c,
                    steps: vec![
                        Step::Work(100.0),
                        Step::Hold(Hold {
                            lock: 0,
                            write: true,
                            site: Site::MmapLink,
                            hold_ns: 10.0,
                            written: vec![],
                            read: vec![],
                            loaded_first: vec![],
                        }),
                        Step::Work(100.0),
                    ],
                })
                .collect(),
            recorded_ghz: 1.0,
            notes: String::new(),
            exit_vmas_per_hold: 0.0,
            work_placed: false,
            loads_recorded: false,
            hold_timing: false,
        }
    }

    #[test]
    fn shared_pages_are_shared_and_own_binaries_are_not() {
        let share = ExecShare {
            files: vec![
                MappedFile {
                    path: "/x/exe".into(),
                    pages: 3,
                    executable: true,
                },
                MappedFile {
                    path: "/x/libc".into(),
                    pages: 10,
                    executable: false,
                },
            ],
            private_pages: 100,
            source: "test".into(),
        };
        let lines_of = |p: &Profile, slot: usize| -> Vec<u32> {
            p.slots[slot]
                .steps
                .iter()
                .filter_map(|s| match s {
                    Step::Touch(t) => Some(t.written.clone()),
                    _ => None,
                })
                .flatten()
                .collect()
        };
        let shared = add_exec_share(&profile(2), &share, false);
        shared.validate().unwrap();
        assert_eq!(lines_of(&shared, 0), lines_of(&shared, 1));
        // 13 pages x 2, 2 files x (dentry 2 + inode 2), globals 2+4+8+4+4.
        assert_eq!(lines_of(&shared, 0).len(), 26 + 8 + 22);
        assert_eq!(shared.times(), profile(2).times(), "no time added");
        let own = add_exec_share(&profile(2), &share, true);
        own.validate().unwrap();
        let (a, b) = (lines_of(&own, 0), lines_of(&own, 1));
        assert_eq!(a.len(), b.len());
        assert!(
            a.iter().any(|l| !b.contains(l)),
            "the executable's lines are each slot's own"
        );
        let common = a.iter().filter(|l| b.contains(l)).count();
        assert_eq!(
            common,
            20 + 4 + 22,
            "libc's pages, dentry, inode and the globals"
        );
    }
}
