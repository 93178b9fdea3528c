//! The rest of what a real exec shares, beside the reverse map: the lines
//! every copy of an exec loop writes, as [`predict::Step::Touch`]es of a
//! kernel-cost profile and as real atomics in `aspace bench --cost kernel`.
//!
//! Measured on this host, for the binary being exec'd
//! ([`measure_exec`]): the binary is run under `ptrace` and stopped as it
//! exits, and `/proc/PID/smaps` gives, for each file it maps, the pages
//! that were mapped (`Rss`), and its anonymous pages and page tables.
//!
//! **Touches, not writes** (s39). What costs a transfer is a *touch*: a
//! burst of locked updates of one line by one CPU (a fault's
//! `folio_try_get`, `folio_trylock`, `_mapcount` increment, `folio_ref_add`,
//! `folio_unlock`, `folio_put` of one small folio are one touch: the line
//! stays in this CPU's cache between them). Two touches of a line are two
//! transfers when another copy writes the line between them, which, at
//! several copies, is what happens between the [`Phase`]s of one exec. Each
//! touch is placed at its phase (see [`add_exec_share`]). From Linux 6.12's
//! code (`~/.cache/aspace-kernel/linux.git`, 6.12.117), per exec:
//!
//! | line | touches | where (6.12) |
//! |---|---|---|
//! | one per mapped page of a file (its `struct page`: `_refcount`, `flags`, `_mapcount` of a small folio) | 3: map, unmap, release | map: `filemap_map_pages` -> `next_uptodate_folio` (`folio_try_get`, `folio_trylock`), `filemap_map_order0_folio` -> `set_pte_range` -> `__folio_add_rmap` (`atomic_inc_and_test(&folio->_mapcount)`), `folio_ref_inc`, `folio_unlock`, `folio_put`; unmap: `exit_mmap` -> `unmap_vmas` -> `zap_present_folio_ptes` -> `folio_remove_rmap_ptes` (`atomic_add_negative(-1, ...)`); release: the reference the mapping held, dropped by the mmu_gather (`__tlb_remove_folio_pages` batches it; `tlb_finish_mmu`, after `free_pgtables`, puts it) |
//! | a library's dentry, inode | 2 each: map, release | `openat` by ld.so: `legitimize_path` -> `lockref_get_not_dead` (dentry), `do_dentry_open` -> `i_readcount_inc` (`CONFIG_FILE_LOCKING` or `CONFIG_IMA`); the last `fput` when the old image's VMAs go: `dput`, `i_readcount_dec` |
//! | the executable's dentry, inode | 2 each: start, release | `do_open_execat` (dentry; `exe_file_deny_write_access` and `i_readcount_inc` on the inode, one line), released with the old image (`exe_file_allow_write_access`, `fput`) |
//! | `binfmt_lock` | 2: start, release | `search_binary_handler`: `read_lock` before `load_binary`, `read_unlock` after it (the old image went inside it, `begin_new_exec`) |
//! | `pcpu_alloc_mutex` | 1: start | `mm_init`: `percpu_counter_init_many` (rss_stat) and `mm_alloc_cid`, two `pcpu_alloc`s back to back, each `mutex_lock_killable` and unlock |
//! | `pcpu_lock` | 2: start, release | the same two allocations; `free_percpu` of both when the old `mm` is dropped (`__mmdrop`) |
//! | `pgd_lock`, `pgd_list` | 2 and 1: start, release | x86-64 has `SHARED_KERNEL_PMD` 0 (`pgtable_64_types.h`): `pgd_alloc` -> `pgd_ctor` -> `pgd_list_add` under `pgd_lock`; `pgd_free` -> `pgd_dtor` -> `pgd_list_del` under it (the list head stands in for the neighbour a deletion writes) |
//! | the credentials' `group_info`, `user_struct`, `user_namespace`, `ucounts` | 2 each: start, release | `prepare_exec_creds` -> `prepare_creds`: `get_group_info`, `get_uid`, `get_user_ns`, `get_ucounts`; the old creds' `put_cred_rcu`: the four puts. Every copy runs as the same user, so all copies share them |
//! | the memory cgroup's `page_counter` | 1 per 64 private pages at map, 1 at release | `try_charge_memcg`: `consume_stock`, else `page_counter_try_charge` of `MEMCG_CHARGE_BATCH` (64) pages and `refill_stock`; the old image's pages are uncharged by the mmu_gather's `folios_put_refs` -> `mem_cgroup_uncharge_folios` -> `uncharge_batch` (`page_counter_uncharge`), a batch of 31 folios at a time, back to back. One level of the hierarchy counted (each ancestor's counter is another line; a task in the root cgroup charges none) |
//! | the zone's `lock` | 0 | the page allocator's per-CPU lists: an exec frees on its CPU about as many pages as it allocates, far below `pcp->high` (1,865 pages a CPU on this host, `/proc/zoneinfo`), so `rmqueue_bulk` / `free_pcppages_bulk` take the zone lock only when a list runs dry or overflows: not the common case |
//!
//! **Access kinds** (s40, [`Access`]): every touch above takes its line by
//! a locked read-modify-write except `pgd_list`'s, whose links are plain
//! stores under `pgd_lock`; the simulator charges locked updates one after
//! another unless the machine measured `rmw_overlap`, plain stores
//! overlapped ([`exec_access`], `predict::Touch`).
//!
//! A lock's own hold time is not modelled (its line is). Libraries and their
//! pages are shared by every copy; with `own_binary` the executable's lines
//! are each CPU's own. The page counts come from this host's smaps, which
//! for the same binary and C library are what any machine maps; small
//! folios are assumed (this host's page cache holds libc in order-0 folios,
//! `/proc/kpageflags`; a large folio would add its head's and `_large_mapcount`'s
//! lines per folio and keep the per-page `_mapcount`s: 6.12's `__folio_add_rmap`).

use predict::{LineKind, Profile, Site, Step, Touch};
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
    /// The program run ([`measure_exec`]'s `binary`, as given).
    pub program: PathBuf,
    /// Where: this host's name and kernel release
    /// (`/proc/sys/kernel/hostname`, `osrelease`).
    pub host: String,
    /// When: seconds since 1970-01-01 UTC.
    pub measured_unix_s: u64,
}

impl ExecShare {
    /// [`ExecShare::measured_unix_s`] as `YYYY-MM-DD HH:MM:SS UTC`.
    pub fn measured_utc(&self) -> String {
        let s = self.measured_unix_s;
        let t = s % 86_400;
        format!(
            "{} {:02}:{:02}:{:02} UTC",
            super::validate::date_of(s),
            t / 3600,
            t / 60 % 60,
            t % 60
        )
    }
}

/// The file of an `aspace predict --save-profiles` folder that keeps the
/// exec's measurement ([`ExecShare`]) its kernel-cost profiles were
/// finished with, so that `--profiles` simulates them again with the same
/// one ([`load_exec_share`]) instead of running the program again (its
/// count of mapped pages differs from run to run under ptrace).
pub const SAVED_EXEC_SHARE: &str = "exec-share.json";

/// Writes `share` into a `--save-profiles` folder ([`SAVED_EXEC_SHARE`]).
pub fn save_exec_share(dir: &Path, share: &ExecShare) -> Result<(), String> {
    let f = dir.join(SAVED_EXEC_SHARE);
    let text = serde_json::to_string_pretty(share).map_err(|e| e.to_string())?;
    std::fs::write(&f, text + "\n").map_err(|e| format!("cannot write {}: {e}", f.display()))
}

/// The exec's measurement saved in a `--profiles` folder, `None` when the
/// folder has none (saved before session s40, or by a model-cost run that
/// needed none); an unreadable or malformed one is an error.
pub fn load_exec_share(dir: &Path) -> Result<Option<ExecShare>, String> {
    let f = dir.join(SAVED_EXEC_SHARE);
    if !f.exists() {
        return Ok(None);
    }
    let text = crate::input::read_text(&f, "--profiles", crate::input::RESULTS_CAP)?;
    let share: ExecShare = serde_json::from_str(&text).map_err(|e| {
        format!(
            "--profiles: {} is not a saved exec measurement: {e}",
            f.display()
        )
    })?;
    if share.files.is_empty() {
        return Err(format!(
            "--profiles: {} maps no file: not a measurement of a real exec",
            f.display()
        ));
    }
    Ok(Some(share))
}

/// Private pages per memory-cgroup charge (`MEMCG_BATCH`).
const MEMCG_BATCH: u64 = 64;

/// The chunks an exec's map-phase touches are spread over, in the
/// prediction ([`add_exec_share`]: after evenly spaced work steps) and in
/// `aspace bench --cost kernel` (between the pieces of its spin).
pub const MAP_CHUNKS: usize = 8;

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
        program: binary.to_path_buf(),
        host: this_host(),
        measured_unix_s: super::validate::unix_now_s(),
    })
}

/// This host's name and kernel release, for [`ExecShare::host`].
fn this_host() -> String {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| "unknown".into())
    };
    format!(
        "{} (Linux {})",
        read("/proc/sys/kernel/hostname"),
        read("/proc/sys/kernel/osrelease")
    )
}

/// One exec's touches of its shared lines grouped by [`Phase`], each group
/// in [`exec_touches`]'s order, and the number of lines: what
/// [`add_exec_share`] places in a profile and what `aspace bench --cost
/// kernel` writes (one source for both).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhaseLines {
    /// Touched as the exec begins.
    pub start: Vec<u32>,
    /// Just before the old image's exit unlinks.
    pub unmap: Vec<u32>,
    /// Just after them.
    pub release: Vec<u32>,
    /// Over the new image's faults, in [`MAP_CHUNKS`] chunks.
    pub map: Vec<u32>,
    /// Lines numbered.
    pub lines: u32,
}

impl PhaseLines {
    /// [`exec_touches`] of `share`, grouped.
    pub fn of(share: &ExecShare) -> PhaseLines {
        let (t, lines) = exec_touches(share);
        PhaseLines::group(&t, lines)
    }

    /// `touches` (as [`exec_touches`] gives them, over `lines` lines)
    /// grouped by phase, each group in order.
    fn group(t: &[(Phase, u32)], lines: u32) -> PhaseLines {
        let at = |ph: Phase| -> Vec<u32> {
            t.iter()
                .filter(|(p, _)| *p == ph)
                .map(|&(_, l)| l)
                .collect()
        };
        PhaseLines {
            start: at(Phase::Start),
            unmap: at(Phase::Unmap),
            release: at(Phase::Release),
            map: at(Phase::Map),
            lines,
        }
    }

    /// The map phase's touches in [`MAP_CHUNKS`] chunks (fewer when there
    /// are fewer touches), as [`add_exec_share`] places them.
    pub fn map_chunks(&self, chunks: usize) -> std::slice::Chunks<'_, u32> {
        map_chunks(&self.map, chunks)
    }
}

/// `map` in at most `chunks` chunks of equal size (the last shorter).
fn map_chunks<E>(map: &[E], chunks: usize) -> std::slice::Chunks<'_, E> {
    map.chunks(map.len().div_ceil(chunks.max(1)).max(1))
}

/// Where in an exec a shared line is touched (the module docs name the
/// kernel code of each). One exec of the loop runs them in this cyclic
/// order: `Start`, `Unmap`, `Release`, `Map`, then the next exec's
/// `Start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The exec system call begins (`bprm`: the executable opened, the new
    /// `mm` allocated, the credentials prepared), before the old image
    /// goes.
    Start,
    /// The old image's pages unmapped (`exit_mmap` -> `unmap_vmas`), before
    /// its file VMAs are unlinked (the exit-unlink holds that begin a
    /// recorded iteration).
    Unmap,
    /// After those holds: the mmu_gather's reference drops
    /// (`tlb_finish_mmu`), the old `mm` freed, the old image's files and
    /// credentials released.
    Release,
    /// The new image runs: ld.so opens the libraries and the page faults
    /// map the files' pages (`filemap_map_pages`), over the rest of the
    /// exec.
    Map,
}

/// Touches per exec of each line of a mapped page, a library's dentry and
/// inode, the executable's dentry and inode (see the module docs).
const PAGE_TOUCHES: &[Phase] = &[Phase::Map, Phase::Unmap, Phase::Release];
const LIBRARY_TOUCHES: &[Phase] = &[Phase::Map, Phase::Release];
const EXECUTABLE_TOUCHES: &[Phase] = &[Phase::Start, Phase::Release];
/// How a touch accesses its line (s40), from Linux 6.12's code on x86-64;
/// the simulator charges each kind its own way (`predict::Touch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A locked read-modify-write (`lock`-prefixed: `atomic_inc`,
    /// `refcount_inc`, `atomic_add_negative`, `cmpxchg` of `lockref` or a
    /// mutex, a spinlock's or rwlock's acquisition): it waits for every
    /// memory operation before it, so the touches of a phase are charged
    /// one after another unless the machine measured `rmw_overlap`.
    Rmw,
    /// Plain stores (no lock prefix) to a line no locked update of the
    /// touch takes: they retire into the store buffer and their
    /// transfers overlap.
    Store,
}

/// The access kind of every line of a touch of each kind of line (the
/// module docs name the code): a mapped page's `struct page` (map:
/// `folio_try_get`'s `cmpxchg`, `folio_trylock`'s `lock bts`, the
/// `_mapcount` `lock inc`; unmap: `atomic_add_negative`; release:
/// `folio_ref_sub_and_test`: each phase's first access to the line that
/// needs ownership is locked; the plain load of `flags` before it in each
/// phase is on the same line, charged as that one transfer), a dentry
/// (`lockref` `cmpxchg`), an inode (`i_readcount` `atomic_inc` / `dec`,
/// `i_writecount`'s `atomic_dec_unless_positive`), the memory cgroup's
/// `page_counter` (`atomic_long_add_return` / `sub_return`): all locked.
const FILE_ACCESS: Access = Access::Rmw;

/// The global lines an exec touches outside the memory cgroup, and where:
/// `binfmt_lock`, `pcpu_alloc_mutex`, `pcpu_lock`, `pgd_lock`,
/// `pgd_list`, the credentials' `group_info`, `user_struct`,
/// `user_namespace` and `ucounts`.
const GLOBAL_TOUCHES: [&[Phase]; 9] = [
    &[Phase::Start, Phase::Release],
    &[Phase::Start],
    &[Phase::Start, Phase::Release],
    &[Phase::Start, Phase::Release],
    &[Phase::Start],
    &[Phase::Start, Phase::Release],
    &[Phase::Start, Phase::Release],
    &[Phase::Start, Phase::Release],
    &[Phase::Start, Phase::Release],
];
/// Their access kinds, in the same order: `read_lock` / `read_unlock`
/// (`lock xadd`), `mutex_lock` / `mutex_unlock` (`cmpxchg`), `spin_lock`
/// (`cmpxchg`; the unlock's plain store finds the line owned), `pgd_lock`
/// likewise, `pgd_list`: **plain stores** (`pgd_list_add` / `pgd_list_del`
/// write the list links under `pgd_lock`, no lock prefix), the four
/// credential counts (`refcount_inc` / `refcount_dec_and_test`,
/// `get_ucounts`' `atomic_add_negative`: `lock xadd`).
const GLOBAL_ACCESS: [Access; 9] = [
    Access::Rmw,
    Access::Rmw,
    Access::Rmw,
    Access::Rmw,
    Access::Store,
    Access::Rmw,
    Access::Rmw,
    Access::Rmw,
    Access::Rmw,
];

/// The access kind of each line [`exec_touches`] numbers, indexed by line.
pub fn exec_access(share: &ExecShare) -> Vec<Access> {
    let file_lines: u64 = share.files.iter().map(|f| f.pages + 2).sum();
    let mut out = vec![FILE_ACCESS; file_lines as usize];
    out.extend(GLOBAL_ACCESS);
    // The memory cgroup's counter.
    out.push(FILE_ACCESS);
    out
}

/// One exec's touches of its shared lines, by phase: `(phase, line)`, line
/// indices from 0 (each file's pages, dentry and inode in turn; then the nine globals of [`GLOBAL_TOUCHES`]; then the
/// memory cgroup's counter), and the number of lines. The memory cgroup's counter is
/// touched once per [`MEMCG_BATCH`] private pages at `Map` and once at
/// `Release`.
pub fn exec_touches(share: &ExecShare) -> (Vec<(Phase, u32)>, u32) {
    let mut next = 0u32;
    let mut out = Vec::new();
    let mut line = |phases: &[Phase], out: &mut Vec<(Phase, u32)>| {
        out.extend(phases.iter().map(|&p| (p, next)));
        next += 1;
    };
    for f in &share.files {
        for _ in 0..f.pages {
            line(PAGE_TOUCHES, &mut out);
        }
        let own = if f.executable {
            EXECUTABLE_TOUCHES
        } else {
            LIBRARY_TOUCHES
        };
        line(own, &mut out); // dentry
        line(own, &mut out); // inode
    }
    for phases in GLOBAL_TOUCHES {
        line(phases, &mut out);
    }
    // Charges through the per-CPU stock, one per 64 pages over the run; the
    // uncharges of the old image's pages all at its release, back to back.
    let charges = share.private_pages.div_ceil(MEMCG_BATCH) as usize;
    let memcg: Vec<Phase> = std::iter::repeat(Phase::Map)
        .take(charges)
        .chain(std::iter::once(Phase::Release))
        .collect();
    line(&memcg, &mut out);
    // The charges fall over the run: each in the middle of its share of the
    // map phase's other touches (so that, placed in chunks, two charges
    // share a touch only when there are more charges than chunks).
    let memcg_line = next - 1;
    let is_charge = |e: &(Phase, u32)| e.0 == Phase::Map && e.1 == memcg_line;
    let rest: Vec<(Phase, u32)> = out.iter().copied().filter(|e| !is_charge(e)).collect();
    let map_n = rest.iter().filter(|e| e.0 == Phase::Map).count();
    let mut placed = 0usize;
    let mut m = 0usize;
    let mut ordered = Vec::with_capacity(out.len());
    for e in rest {
        if e.0 == Phase::Map {
            while placed < charges && (2 * placed + 1) * map_n / (2 * charges) <= m {
                ordered.push((Phase::Map, memcg_line));
                placed += 1;
            }
            m += 1;
        }
        ordered.push(e);
    }
    ordered.extend(std::iter::repeat((Phase::Map, memcg_line)).take(charges - placed));
    (ordered, next)
}

/// Adds the exec's other shared lines to a kernel-cost profile: each
/// slot's iteration gets one [`Step::Touch`] per [`Phase`] (the map phase's
/// spread over the work of the new image), so that a line touched at two
/// phases costs two transfers when another copy wrote it in between. With
/// `own_binary`, each slot's executable lines are its own.
pub fn add_exec_share(p: &Profile, share: &ExecShare, own_binary: bool) -> Profile {
    let mut out = p.clone();
    let (touches, n) = exec_touches(share);
    let phases = PhaseLines::group(&touches, n);
    let access = exec_access(share);
    // Which of the numbered lines belong to the executable.
    let mut exe_lines = vec![false; n as usize];
    let mut at = 0usize;
    for f in &share.files {
        let k = f.pages as usize + 2;
        if f.executable {
            exe_lines[at..at + k].fill(true);
        }
        at += k;
    }
    let own = |l: u32| own_binary && exe_lines[l as usize];
    let base = out.lines.len() as u32;
    let shared_n = (0..n).filter(|&l| !own(l)).count() as u32;
    out.lines
        .extend(std::iter::repeat(LineKind::ExecShared).take(shared_n as usize));
    // Shared lines get one index each; a slot's own lines get their own.
    let mut shared_index = vec![u32::MAX; n as usize];
    for (k, l) in (base..).zip((0..n).filter(|&l| !own(l))) {
        shared_index[l as usize] = k;
    }
    let own_n = n - shared_n;
    let slots = out.slots.len();
    out.lines
        .extend(std::iter::repeat(LineKind::ExecShared).take(own_n as usize * slots));
    let mut own_index = vec![u32::MAX; n as usize];
    for (k, l) in (0u32..).zip((0..n).filter(|&l| own(l))) {
        own_index[l as usize] = k;
    }
    for (s, slot) in out.slots.iter_mut().enumerate() {
        let index = |l: u32| {
            if own(l) {
                base + shared_n + s as u32 * own_n + own_index[l as usize]
            } else {
                shared_index[l as usize]
            }
        };
        let of = |lines: &[u32]| -> Vec<(u32, Access)> {
            lines
                .iter()
                .map(|&l| (index(l), access[l as usize]))
                .collect()
        };
        place_touches(
            &mut slot.steps,
            [of(&phases.start), of(&phases.unmap), of(&phases.release)],
            of(&phases.map),
        );
    }
    let shared_touches = touches.iter().filter(|(_, l)| !own(*l)).count();
    let stores = touches
        .iter()
        .filter(|(_, l)| !own(*l) && access[*l as usize] == Access::Store)
        .count();
    out.notes = format!(
        "{}; the exec's other shared lines added: {} touches of {} lines per exec ({} locked updates, {} plain stores), at 4 places in it (exec start, the old image's unmap, its release after the exit unlinks, the new image's faults; Linux 6.12's code, kernel.rs) ({})",
        out.notes,
        shared_touches,
        shared_n,
        shared_touches - stores,
        stores,
        share.source
    );
    out
}

/// Where the old image's teardown falls in a recorded iteration: the
/// indices of the first and the last of the exit-unlink holds that begin
/// it (the recorder's iteration starts with the exec, whose `exec_mmap`
/// tears the old image down before anything of the new one is mapped).
/// `None` when the iteration's first hold is not an exit unlink.
fn teardown(steps: &[Step]) -> Option<(usize, usize)> {
    let mut first = None;
    let mut last = None;
    for (i, s) in steps.iter().enumerate() {
        if let Step::Hold(h) = s {
            if h.site != Site::ExitUnlink {
                break;
            }
            first.get_or_insert(i);
            last = Some(i);
        }
    }
    Some((first?, last?))
}

/// Inserts an iteration's touches: `start` before its first step, `unmap`
/// just before the teardown's first exit-unlink hold, `release` just after
/// its last, and `map` in up to 8 chunks after evenly spaced work steps
/// of the rest. Without a teardown in the recording ([`teardown`]), the
/// three go before the first step and after the first and second work
/// steps (or at the end), and `map` is spread over the whole iteration.
fn place_touches(
    steps: &mut Vec<Step>,
    [start, unmap, release]: [Vec<(u32, Access)>; 3],
    map: Vec<(u32, Access)>,
) {
    let work_at: Vec<usize> = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s, Step::Work(_)))
        .map(|(i, _)| i)
        .collect();
    let (unmap_at, release_at) = match teardown(steps) {
        Some((a, b)) => (a, b + 1),
        None => (
            work_at.first().map_or(steps.len(), |&i| i + 1),
            work_at.get(1).map_or(steps.len(), |&i| i + 1),
        ),
    };
    let map_work: Vec<usize> = work_at
        .iter()
        .copied()
        .filter(|&i| teardown(steps).is_none() || i >= release_at)
        .collect();
    let mut inserts: Vec<(usize, Vec<(u32, Access)>)> = Vec::new();
    if !map.is_empty() {
        let chunks = MAP_CHUNKS.min(map_work.len().max(1));
        for (k, c) in map_chunks(&map, chunks).enumerate() {
            let at = map_work
                .get(k * map_work.len() / chunks)
                .map_or(steps.len(), |&i| i + 1);
            inserts.push((at, c.to_vec()));
        }
    }
    inserts.push((release_at, release));
    inserts.push((unmap_at, unmap));
    inserts.push((0, start));
    // Insert from the back so that earlier positions stay valid; of two at
    // one position the later phase goes in first (it ends up after).
    inserts.retain(|(_, w)| !w.is_empty());
    inserts.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    for (at, w) in inserts {
        let of = |k: Access| w.iter().filter(|e| e.1 == k).map(|e| e.0).collect();
        steps.insert(
            at.min(steps.len()),
            Step::Touch(Touch {
                written: of(Access::Rmw),
                read: Vec::new(),
                stored: of(Access::Store),
            }),
        );
    }
}

#[cfg(test)]
pub(crate) mod tests {
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

    pub(crate) fn profile(slots: u32) -> Profile {
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

    pub(crate) fn share() -> ExecShare {
        ExecShare {
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
            program: "/x/exe".into(),
            host: "test".into(),
            measured_unix_s: 0,
        }
    }

    /// Each slot's touches in step order: (step index, lines written).
    fn touches(p: &Profile, slot: usize) -> Vec<(usize, Vec<u32>)> {
        p.slots[slot]
            .steps
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                Step::Touch(t) => Some((i, [t.written.clone(), t.stored.clone()].concat())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn an_exec_touches_each_line_once_per_phase_as_linux_6_12_does() {
        let (t, n) = exec_touches(&share());
        let at = |ph: Phase| t.iter().filter(|(p, _)| *p == ph).count();
        // 13 pages (3 each), 2 files' dentry and inode (2 each), 9 globals,
        // the memory cgroup's counter: 27 lines; no zone lock.
        assert_eq!(n, 13 + 4 + 9 + 1);
        // Start: the executable's dentry and inode, binfmt_lock,
        // pcpu_alloc_mutex, pcpu_lock, pgd_lock, pgd_list, 4 credentials.
        assert_eq!(at(Phase::Start), 2 + 9);
        // Unmap: every mapped page's rmap removal.
        assert_eq!(at(Phase::Unmap), 13);
        // Release: every page's reference drop, both files' dentry and
        // inode, 7 globals, the uncharges.
        assert_eq!(at(Phase::Release), 13 + 4 + 7 + 1);
        // Map: every page's fault, libc's open, 2 charges.
        assert_eq!(at(Phase::Map), 13 + 2 + 2);
        // A page's line is touched at three phases, once each.
        let page: Vec<Phase> = t.iter().filter(|(_, l)| *l == 0).map(|(p, _)| *p).collect();
        assert_eq!(page, vec![Phase::Map, Phase::Unmap, Phase::Release]);
    }

    #[test]
    fn only_the_pgd_list_links_are_plain_stores() {
        let share = share();
        let (t, n) = exec_touches(&share);
        let access = exec_access(&share);
        assert_eq!(access.len(), n as usize, "one kind per line");
        // Files: 13 pages and 2 x (dentry, inode) = 17 lines; the globals
        // follow: binfmt_lock, pcpu_alloc_mutex, pcpu_lock, pgd_lock,
        // pgd_list (17 + 4 = 21).
        let stores: Vec<usize> = (0..access.len())
            .filter(|&l| access[l] == Access::Store)
            .collect();
        assert_eq!(stores, vec![21]);
        assert_eq!(
            t.iter().filter(|e| e.1 == 21).collect::<Vec<_>>(),
            vec![&(Phase::Start, 21)],
            "pgd_list: the head written at the start (pgd_list_add)"
        );
        // In the profile: the start's touch writes the others by locked
        // updates and stores to pgd_list.
        let out = add_exec_share(&profile(2), &share, false);
        out.validate().unwrap();
        let Step::Touch(start) = &out.slots[0].steps[0] else {
            panic!("exec start first")
        };
        let pgd_list = out.lines.len() as u32 - n + 21;
        assert_eq!(start.stored, vec![pgd_list]);
        assert_eq!(start.written.len(), 2 + 9 - 1);
        assert!(!start.written.contains(&pgd_list));
    }

    /// [`profile`] with an iteration as the recorder gives it: the old
    /// image's exit unlink (a copy of the link's hold), work, then the new
    /// image's mmap link, work.
    pub(crate) fn profile_with_teardown(slots: u32) -> Profile {
        let mut p = profile(slots);
        for s in &mut p.slots {
            let mut exit = s.steps[1].clone();
            if let Step::Hold(h) = &mut exit {
                h.site = Site::ExitUnlink;
            }
            s.steps.insert(1, exit);
            s.steps.insert(2, Step::Work(50.0));
        }
        p
    }

    #[test]
    fn the_teardown_separates_a_pages_unmap_from_its_release() {
        let p = profile_with_teardown(2);
        let out = add_exec_share(&p, &share(), false);
        out.validate().unwrap();
        let steps = &out.slots[0].steps;
        let exit_at = steps
            .iter()
            .position(|s| matches!(s, Step::Hold(h) if h.site == Site::ExitUnlink))
            .unwrap();
        let first_page = p.lines.len() as u32;
        let with_page: Vec<usize> = touches(&out, 0)
            .into_iter()
            .filter(|(_, w)| w.contains(&first_page))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(with_page.len(), 3, "map, unmap, release: {steps:?}");
        // Cyclic order Start, Unmap, Release, Map: the unmap comes before
        // the exit unlink hold, the release and the map after it.
        assert!(with_page[0] < exit_at, "{with_page:?} {exit_at}");
        assert!(with_page[1] > exit_at && with_page[2] > with_page[1]);
        assert!(matches!(steps[0], Step::Touch(_)), "exec start first");
        // No touch writes a line twice (that would be one transfer, not two).
        for (_, w) in touches(&out, 0) {
            let mut d = w.clone();
            d.sort_unstable();
            d.dedup();
            assert_eq!(d.len(), w.len());
        }
        assert_eq!(out.times(), p.times(), "no time added");
    }

    #[test]
    fn shared_pages_are_shared_and_own_binaries_are_not() {
        let share = share();
        let lines_of = |p: &Profile, slot: usize| -> Vec<u32> {
            touches(p, slot).into_iter().flat_map(|(_, w)| w).collect()
        };
        let shared = add_exec_share(&profile(2), &share, false);
        shared.validate().unwrap();
        assert_eq!(lines_of(&shared, 0), lines_of(&shared, 1));
        assert_eq!(lines_of(&shared, 0).len(), exec_touches(&share).0.len());
        assert_eq!(shared.times(), profile(2).times(), "no time added");
        let own = add_exec_share(&profile(2), &share, true);
        own.validate().unwrap();
        let (a, b) = (lines_of(&own, 0), lines_of(&own, 1));
        assert_eq!(a.len(), b.len());
        assert!(
            a.iter().any(|l| !b.contains(l)),
            "the executable's lines are each slot's own"
        );
        let mut common: Vec<u32> = a.iter().copied().filter(|l| b.contains(l)).collect();
        common.sort_unstable();
        common.dedup();
        assert_eq!(
            common.len(),
            10 + 2 + 9 + 1,
            "libc's pages, dentry, inode, the globals and the memory cgroup's counter"
        );
    }
}
