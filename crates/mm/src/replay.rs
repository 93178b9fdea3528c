//! Replaying a recorded run ([`crate::strace`]) through the model, process by
//! process, in the kernel's order: each pid is a [`Process`]; `fork`/`clone` copy its
//! address space, `vfork`, `posix_spawn` and threads (`CLONE_VM`) share it; a
//! successful `execve` gives the process a new space with the kernel's part of the
//! new image (stack, executable, interpreter, vdso; ld.so's own `mmap` calls follow
//! in the trace) and releases the old one, which its other users (a vfork parent)
//! keep as it was; `+++ exited` releases it; every memory call goes through the
//! model.
//!
//! For each `mmap` without `MAP_FIXED` the model's choice (the [`Placement`] policy
//! on the model's current layout) is compared with the kernel's; the mapping is then
//! made at the kernel's address, so that one miss does not derail the rest.
//!
//! The lock calls (`mlock`, `mlock2`, `munlock`, `mlockall`, `munlockall`) and
//! `madvise(MADV_MERGEABLE/MADV_UNMERGEABLE)` follow the recorded result: one that
//! failed in the trace is not done (the kernel's `RLIMIT_MEMLOCK`, its
//! `CAP_IPC_LOCK` and whether it has `CONFIG_KSM` are not modelled), one that
//! succeeded is, and a model that refuses it is a [`Report::result_differs`].
//!
//! Each file the recording says it was made against (`# aspace-file` lines,
//! [`crate::identity`]) is compared with the file now; a changed one is reported
//! ([`Report::files_changed`]).

use crate::identity::FileIdentity;
use crate::maps::Layout;
pub use crate::maps::{diff_maps, parse_maps, MapsLine};
use crate::placement::{self, Placement, Request};
use crate::strace::{self, map, shm, Call, Event, RecordedFile};
use crate::{
    align_up, Advice, AnonKind, Caller, ExecStep, Files, Grows, Mm, MmapOptions, MremapFlags,
    Process, Program, Prot, RmapCalls, Vma, Why, PAGE_SIZE,
};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;
use std::sync::Arc;

/// What a replay did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Memory calls (mmap, munmap, mprotect, brk, mremap, madvise, and the lock
    /// calls: mlock, mlock2, munlock, mlockall, munlockall) replayed.
    pub calls: u64,
    /// Process events replayed (fork/clone, execve, exit).
    pub events: u64,
    /// Calls the model could not express: (line, why).
    pub not_expressed: Vec<(usize, String)>,
    /// Calls whose result differs from the recorded one: (line, what).
    pub result_differs: Vec<(usize, String)>,
    /// Non-fixed mmaps that succeeded in the trace.
    pub placed: u64,
    /// Of those, how many got the kernel's address from the model's policy.
    pub placed_same: u64,
    /// The misses: (line, kernel's address, model's address, length).
    pub misplaced: Vec<(usize, u64, u64, u64)>,
    /// Reverse-map calls of every address space of the run.
    pub rmap: RmapCalls,
    /// Files the recording was made against that are not the same now: (line of
    /// the `# aspace-file` record, "file X changed since it was recorded: what").
    pub files_changed: Vec<(usize, String)>,
    /// Processes the kernel laid out at random: (line of the exec, what). An exec
    /// of a set-id program clears `ADDR_NO_RANDOMIZE` from the personality
    /// (`PER_CLEAR_ON_SETID`) even under `setarch -R`, so that program, and every
    /// one it and its children run after, gets random places the model cannot know:
    /// their placements and results are not compared (calls the model cannot
    /// express still count), nor their layouts ([`Replay::randomized`]).
    pub randomized: Vec<(usize, String)>,
}

impl Report {
    /// Reverse-map lock holds per replayed memory call.
    pub fn lock_holds_per_call(&self) -> f64 {
        self.rmap.lock_holds() as f64 / self.calls.max(1) as f64
    }
}

/// The replay's state: each live pid's process, and the layout each exited pid had
/// when it exited (for comparing with a `/proc/PID/maps` taken at exit).
pub struct Replay {
    files: Arc<Files>,
    placement: Placement,
    live: HashMap<u32, Process, BuildHasherDefault<PidHasher>>,
    /// The layout of each pid's address space when the pid exited; last one wins.
    pub exited: HashMap<u32, Layout>,
    /// Every address space the run made (for the reverse-map call totals).
    all: Vec<Arc<Mm>>,
    /// Files seen by path (saves the registry lookup and the size `stat`).
    file_cache: HashMap<String, Arc<crate::File>>,
    /// Paths the run being replayed unlinks somewhere ([`Replay::run`] looks ahead).
    unlinked_later: std::collections::HashSet<String>,
    /// What differs in each recorded file now (`None`: the same), by path: each file
    /// is read once per `Replay`, however many runs.
    file_checks: HashMap<String, Option<String>>,
    /// Each pid's `RLIMIT_STACK` (`None`: unlimited) where a call or an inheritance
    /// set it; the others have [`Replay::first_stack_limit`].
    stack_limits: HashMap<u32, Option<u64>>,
    /// Each System V shared memory segment the run made or found (`shmget`), by
    /// id: its key and the file of its pages, which every `shmat` of it maps.
    shm_segments: HashMap<u64, (u64, Arc<crate::File>)>,
    /// The limit the run started with (`# aspace-stack-limit`, else the default).
    first_stack_limit: Option<u64>,
    /// The pids the kernel lays out at random ([`Report::randomized`]): a set-id
    /// program's, and those after it.
    randomized: std::collections::HashSet<u32>,
    /// Whether the call being replayed is a randomized pid's: its placement and
    /// result are not compared.
    quiet: bool,
    /// The report so far.
    pub report: Report,
}

impl Replay {
    /// An empty replay into `files` (its design and call pattern are the run's).
    pub fn new(files: Arc<Files>, placement: Placement) -> Replay {
        Replay {
            files,
            placement,
            live: HashMap::default(),
            exited: HashMap::new(),
            all: Vec::new(),
            file_cache: HashMap::new(),
            unlinked_later: Default::default(),
            file_checks: HashMap::new(),
            stack_limits: HashMap::new(),
            shm_segments: HashMap::new(),
            first_stack_limit: Some(crate::layout::DEFAULT_STACK_LIMIT),
            randomized: Default::default(),
            quiet: false,
            report: Report::default(),
        }
    }

    /// Whether the kernel lays pid `pid` out at random ([`Report::randomized`]).
    pub fn randomized(&self, pid: u32) -> bool {
        self.randomized.contains(&pid)
    }

    /// The executable `path` names when it is `/proc/self/exe`,
    /// `/proc/thread-self/exe` or `/proc/PID/exe` (a link to the executable of the
    /// caller, or of that pid): `Err` where the model knows none (no exec of it
    /// replayed); `None` for any other path.
    fn proc_exe(&self, caller: u32, path: &str) -> Option<Result<String, String>> {
        let who = path.strip_prefix("/proc/")?.strip_suffix("/exe")?;
        let pid = match who {
            "self" | "thread-self" => caller,
            n => n.parse().ok()?,
        };
        let exe = self.live.get(&pid).and_then(|p| p.mm().exe_file());
        Some(
            exe.map(|f| f.path().to_string_lossy().into_owned())
                .ok_or_else(|| format!("execve {path}: no executable of pid {pid} replayed")),
        )
    }

    /// `pid`'s stack limit.
    fn stack_limit(&self, pid: u32) -> Option<u64> {
        self.stack_limits
            .get(&pid)
            .copied()
            .unwrap_or(self.first_stack_limit)
    }

    /// Drops every address space and the report, keeping the file caches: the state
    /// of a new replay into the same registry.
    pub fn reset(&mut self) {
        self.live.clear();
        self.exited.clear();
        self.all.clear();
        self.stack_limits.clear();
        self.shm_segments.clear();
        self.randomized.clear();
        self.first_stack_limit = Some(crate::layout::DEFAULT_STACK_LIMIT);
        self.report = Report::default();
    }

    /// Starts `pid` from a recorded `/proc/PID/maps` (see [`Mm::build_from_maps`]),
    /// for a trace that begins while the process runs.
    pub fn start_from_maps(&mut self, pid: u32, maps_text: &str) -> Result<(), String> {
        let maps = parse_maps(maps_text).ok_or("not a /proc/PID/maps file")?;
        let m = Mm::new(self.files.clone());
        m.build_from_maps(&maps).map_err(|e| e.to_string())?;
        let p = Process::from(m);
        self.all.push(p.mm().clone());
        self.live.insert(pid, p);
        Ok(())
    }

    /// The address space `pid` uses now, if it is live.
    pub fn mm(&self, pid: u32) -> Option<&Arc<Mm>> {
        self.live.get(&pid).map(Process::mm)
    }

    /// Replays `events` in order and returns the report (reverse-map calls summed
    /// over every address space the run made).
    ///
    /// One reordering: threads' non-fixed `mmap`s whose trace lines overlap were in
    /// the kernel at once, and took the address space's lock in an order the trace
    /// does not tell (strace lists each where it finished). When the model would
    /// place the one listed first at the very address the kernel gave such an
    /// overlapping one, that one took the lock first, and is replayed first
    /// (`ran_first`).
    pub fn run(&mut self, events: &[Event]) -> &Report {
        self.unlinked_later = events
            .iter()
            .filter_map(|e| match &e.call {
                Call::Unlink {
                    path: Some(p),
                    ret: Ok(_),
                } => Some(p.clone()),
                _ => None,
            })
            .collect();
        let mut done = vec![false; events.len()];
        for i in 0..events.len() {
            if done[i] {
                continue;
            }
            while let Some(j) = self.ran_first(events, i, &done) {
                self.step(&events[j]);
                done[j] = true;
            }
            self.step(&events[i]);
        }
        self.finish()
    }

    /// A later event of `events` that ran before event `i`, by the rule of
    /// [`Replay::run`]: `i` is a non-fixed `mmap` the model would place at an address
    /// other than the kernel's, and the event is a non-fixed `mmap` of the same
    /// address space, not yet replayed, that started before `i` finished and got that
    /// address from the kernel. Looks at most [`OVERLAP_WINDOW`] events ahead.
    fn ran_first(&self, events: &[Event], i: usize, done: &[bool]) -> Option<usize> {
        let e = &events[i];
        let mm = self.mm(e.pid)?;
        let (req, real) = non_fixed_placement(&e.call, mm)?;
        let guess = placement::unmapped_area(&mm.tree, req, self.placement).ok()?;
        if guess == real {
            return None;
        }
        let end = events.len().min(i + 1 + OVERLAP_WINDOW);
        (i + 1..end).find(|&j| {
            let o = &events[j];
            !done[j]
                && o.started < e.line
                && self.mm(o.pid).is_some_and(|m| Arc::ptr_eq(m, mm))
                && non_fixed_placement(&o.call, mm).is_some_and(|(_, r)| r == guess)
        })
    }

    /// The report after events replayed one by one with [`Replay::step`]: sums the
    /// reverse-map calls of every address space the run made.
    pub fn finish(&mut self) -> &Report {
        let mut total = RmapCalls::default();
        for mm in &self.all {
            total.add(&mm.calls());
        }
        self.report.rmap = total;
        &self.report
    }

    /// The process of `pid`; one with an empty address space for a pid the trace
    /// has not shown being made (the first one).
    fn process(&mut self, pid: u32) -> &mut Process {
        let (files, all) = (&self.files, &mut self.all);
        self.live.entry(pid).or_insert_with(|| {
            let p = Process::new(files.clone());
            all.push(p.mm().clone());
            p
        })
    }

    /// The file a `mmap` at `off`, `len` bytes, maps by `path`; `unlinked`: strace's
    /// `-y` showed the name unlinked then (`(deleted)`). A name the trace unlinks
    /// later ([`Replay::run`]'s look ahead) existed when it was mapped: it becomes
    /// `(deleted)` at that `unlink`, not before, though no such file exists now.
    fn file(&mut self, path: &str, off: u64, len: u64, unlinked: bool) -> Arc<crate::File> {
        let need = (off / PAGE_SIZE).saturating_add(len.div_ceil(PAGE_SIZE));
        if let Some(f) = self.file_cache.get(path) {
            return f.clone();
        }
        let deleted = if unlinked {
            Some(true)
        } else if self.unlinked_later.contains(path) {
            Some(false)
        } else {
            None
        };
        let f = self.files.register_named(Path::new(path), need, deleted);
        self.file_cache.insert(path.to_string(), f.clone());
        f
    }

    /// `path`'s name was unlinked (`unlink`, `unlinkat`, or a `rename` onto it):
    /// the file mapped by it shows `(deleted)` from now on, and the name, mapped
    /// again, is another file.
    fn unlinked(&mut self, path: &str) {
        if let Some(f) = self.file_cache.remove(path) {
            f.mark_deleted();
        }
        self.files.forget(Path::new(path));
    }

    /// Compares a recorded file with the file now (once per path and `Replay`).
    fn check_file(&mut self, line: usize, rec: &RecordedFile) {
        if rec.path.starts_with("/proc/") {
            // A per-process link (`/proc/self/exe`), which an older `record.sh`
            // identified as its own `stat` saw it: what it named is in the
            // recording under its own path.
            return;
        }
        let change = self.file_checks.entry(rec.path.clone()).or_insert_with(|| {
            match FileIdentity::of(Path::new(&rec.path)) {
                Ok(now) => now.changes_since(&rec.identity),
                Err(e) => Some(format!("it cannot be read now ({e})")),
            }
        });
        if let Some(what) = change {
            let msg = format!("file {} changed since it was recorded: {what}", rec.path);
            self.report.files_changed.push((line, msg));
        }
    }

    /// Notes that the model's result of the call at `line` is not the kernel's
    /// `ret`, unless the kernel's is unknown (`= ?`: the thread died in the call;
    /// the model does the call, as the kernel may have).
    fn differs(&mut self, line: usize, ret: &strace::Ret, what: impl FnOnce() -> String) {
        if !strace::result_unknown(ret) && !self.quiet {
            self.report.result_differs.push((line, what()));
        }
    }

    /// Replays one event.
    pub fn step(&mut self, e: &Event) {
        let line = e.line;
        match &e.call {
            Call::Exit => {
                self.report.events += 1;
                if let Some(p) = self.live.remove(&e.pid) {
                    // The space as the pid leaves it (what its maps showed at
                    // exit_group); released after, torn down if it was the last user.
                    self.exited.insert(e.pid, p.mm().layout());
                }
            }
            Call::Superseded { thread } => {
                self.report.events += 1;
                // The thread goes on as this pid; the leader's use of the space ends.
                if let Some(t) = self.live.remove(thread) {
                    self.live.insert(e.pid, t);
                }
                if let Some(l) = self.stack_limits.remove(thread) {
                    self.stack_limits.insert(e.pid, l);
                }
                if self.randomized.remove(thread) {
                    self.randomized.insert(e.pid);
                }
            }
            Call::StackLimit { target, limit, ret } => {
                self.report.events += 1;
                if e.pid == 0 {
                    self.first_stack_limit = *limit;
                } else if ret.is_ok() {
                    let who = if *target == 0 { e.pid } else { *target };
                    self.stack_limits.insert(who, *limit);
                }
            }
            Call::Clone { vm, ret } => {
                self.report.events += 1;
                let Ok(child) = ret else { return };
                let Ok(child) = u32::try_from(*child) else {
                    return self
                        .report
                        .not_expressed
                        .push((line, "child pid out of range".into()));
                };
                let limit = self.stack_limit(e.pid);
                self.stack_limits.insert(child, limit);
                // The personality, ASLR included, is inherited.
                if self.randomized.contains(&e.pid) {
                    self.randomized.insert(child);
                }
                let parent = self.process(e.pid);
                let p = if *vm {
                    parent.clone_vm()
                } else {
                    let p = parent.fork();
                    self.all.push(p.mm().clone());
                    p
                };
                self.live.insert(child, p);
            }
            Call::Execve { path, ret, strings } => {
                self.report.events += 1;
                if ret.is_err() {
                    return;
                }
                // `/proc/self/exe` (busybox running an applet, a re-exec of
                // oneself) is the caller's executable, not the replaying machine's.
                let path = match self.proc_exe(e.pid, path) {
                    Some(Ok(exe)) => exe,
                    Some(Err(why)) => return self.report.not_expressed.push((line, why)),
                    None => path.clone(),
                };
                // The new image's mmap area ends below a gap for the stack limit.
                let base = crate::layout::mmap_base(self.stack_limit(e.pid));
                let prog = match self.files.program_with_base(Path::new(&path), base) {
                    Ok(p) => p,
                    Err(err) => {
                        return self
                            .report
                            .not_expressed
                            .push((line, format!("execve {path}: {err}")));
                    }
                };
                // A script's strings change as binfmt_script swaps argv[0] for
                // the interpreter's line: not counted.
                let strings = strings.filter(|_| !prog.via_script);
                // The file exec loaded (a `#!` script's interpreter: the kernel
                // ignores a script's own set-id bits), as it was when planned.
                if prog.objects[0].0.set_id && self.randomized.insert(e.pid) {
                    self.report.randomized.push((
                        line,
                        format!(
                            "pid {} runs {path}, a set-id program: the kernel lays it out at \
                             random even with ASLR off (PER_CLEAR_ON_SETID), and so every \
                             program it and its children run after; their placements, results \
                             and layouts are not compared",
                            e.pid
                        ),
                    ));
                }
                let p = self.process(e.pid);
                p.exec_with(|mm| mm.exec_kernel_part_with_strings(&prog, strings));
                let new = p.mm().clone();
                self.all.push(new);
            }
            Call::RecordedFile(rec) => self.check_file(line, rec),
            Call::Unlink { path, ret } => {
                self.report.events += 1;
                if let (Some(p), Ok(_)) = (path, ret) {
                    self.unlinked(p);
                }
            }
            Call::ShmGet { key, size, ret } => {
                self.report.events += 1;
                if let Ok(id) = ret {
                    self.shm_get(*id, *key, *size);
                }
            }
            Call::Other { name } if NO_MEMORY_EFFECT.contains(&name.as_str()) => {
                // Process calls that leave the address space alone (the exit itself
                // is the `+++ exited` line that follows).
                self.report.events += 1;
            }
            Call::Other { name } => {
                self.report
                    .not_expressed
                    .push((line, format!("{name}: not a call the model has")));
            }
            call => {
                self.report.calls += 1;
                let mm = self.process(e.pid).mm().clone();
                self.quiet = self.randomized.contains(&e.pid);
                self.memory_call(&mm, line, call);
                self.quiet = false;
            }
        }
    }

    fn memory_call(&mut self, mm: &Mm, line: usize, call: &Call) {
        match call {
            Call::Mmap {
                addr,
                len,
                prot,
                flags,
                file,
                unlinked,
                ret,
            } => {
                if flags & map::HUGETLB != 0 || flags & map::GROWSDOWN != 0 {
                    if strace::result_refused(ret) {
                        // The kernel refused it (no huge pages reserved: PostgreSQL
                        // tries them first), so nothing changed.
                        return;
                    }
                    return self
                        .report
                        .not_expressed
                        .push((line, "mmap: MAP_HUGETLB/MAP_GROWSDOWN not modelled".into()));
                }
                let shared = shared_type(*flags);
                let fixed = flags & map::FIXED != 0;
                let mut opts = MmapOptions {
                    fixed,
                    fixed_noreplace: flags & map::FIXED_NOREPLACE != 0,
                    shared,
                    noreserve: flags & map::NORESERVE != 0,
                    stack: flags & map::STACK != 0,
                    locked: flags & map::LOCKED != 0,
                    droppable: flags & map::TYPE == map::DROPPABLE,
                    low32: flags & map::LOW32 != 0,
                    placement: self.placement,
                };
                let f = file
                    .as_ref()
                    .map(|(p, off)| (self.file(p, *off, *len, *unlinked), off / PAGE_SIZE));
                let fref = f.as_ref().map(|(f, p)| (f, *p));
                let mut at = *addr;
                if let Some((req, real)) = non_fixed_placement(call, mm) {
                    self.count_placement(mm, line, req, real, *len);
                    // Follow the kernel.
                    opts.fixed = true;
                    at = real;
                }
                let got = mm.mmap_with(at, *len, prot_of(*prot), opts, fref);
                match (got, ret) {
                    (Ok(a), Ok(r)) if a == *r => {}
                    (Err(_), Err(_)) => {}
                    (g, r) => self.differs(line, r, || format!("mmap: model {g:?}, kernel {r:?}")),
                }
            }
            Call::Munmap { addr, len, ret } => {
                let got = mm.munmap(*addr, *len);
                self.compare_result(line, ret, "munmap", &got);
            }
            Call::Mprotect {
                addr,
                len,
                prot,
                pkey,
                ret,
            } => {
                // `arch_validate_prot`: read, write, exec, PROT_SEM and the
                // direction bits; anything else is EINVAL (mmap does not check).
                const KNOWN: u64 = 0xf | Grows::PROT_GROWSDOWN | Grows::PROT_GROWSUP;
                let grows = match prot & (Grows::PROT_GROWSDOWN | Grows::PROT_GROWSUP) {
                    _ if prot & !KNOWN != 0 => Err(crate::Error::Invalid {
                        what: "a protection bit mprotect does not know",
                    }),
                    0 => Ok(None),
                    Grows::PROT_GROWSDOWN => Ok(Some(Grows::Down)),
                    Grows::PROT_GROWSUP => Ok(Some(Grows::Up)),
                    // Both at once: EINVAL before anything else is looked at.
                    _ => Err(crate::Error::Invalid {
                        what: "PROT_GROWSDOWN with PROT_GROWSUP",
                    }),
                };
                let key = i32::try_from(*pkey).unwrap_or(i32::MIN);
                let call =
                    || grows.and_then(|g| mm.pkey_mprotect(*addr, *len, prot_of(*prot), g, key));
                if *pkey == -1 {
                    self.compare_result(line, ret, "mprotect", &call());
                } else {
                    // Which keys pkey_alloc handed out is not modelled (nor whether
                    // the machine has protection keys).
                    self.unless_refused(line, ret, "pkey_mprotect", call);
                }
            }
            Call::Mbind {
                addr,
                len,
                mode,
                nodes,
                ret,
            } => {
                // The machine's nodes, which decide whether a mask is refused, are
                // not modelled.
                let policy = crate::MemPolicy::new(*mode as u16, *nodes);
                self.unless_refused(line, ret, "mbind", || mm.mbind(*addr, *len, policy));
            }
            Call::Mseal {
                addr,
                len,
                flags,
                ret,
            } => {
                let got = mm.mseal(*addr, *len, *flags);
                self.compare_result(line, ret, "mseal", &got);
            }
            Call::Brk { addr, ret } => {
                let got = mm.brk(*addr);
                if Ok(got) != *ret {
                    self.differs(line, ret, || {
                        format!("brk: model {got:#x}, kernel {ret:x?}")
                    });
                }
            }
            Call::Mremap {
                old,
                old_len,
                new_len,
                flags,
                new_addr,
                ret,
            } => {
                if flags & !7 != 0 {
                    // A flag besides MREMAP_MAYMOVE, MREMAP_FIXED and
                    // MREMAP_DONTUNMAP: EINVAL before anything is looked at.
                    if ret.is_ok() {
                        self.report.not_expressed.push((
                            line,
                            format!("mremap flags {flags:#x}: a flag the model does not know"),
                        ));
                    }
                    return;
                }
                let fl = MremapFlags {
                    may_move: flags & 1 != 0,
                    fixed: flags & 2 != 0,
                    dont_unmap: flags & 4 != 0,
                };
                // MREMAP_DONTUNMAP without MREMAP_FIXED takes a hint strace does
                // not print. Refused (maybe for the hint: the kernel checks its
                // alignment and overlap), nothing changed and the model cannot
                // tell why; done, the hint is taken to be where the area went
                // (where the kernel's search would have put it too if the hint
                // was NULL), so the model's layout goes on from the kernel's.
                let hint = match (new_addr, ret) {
                    (Some(a), _) => *a,
                    (None, Err(_)) if fl.dont_unmap => return,
                    (None, Ok(r)) if fl.dont_unmap => *r,
                    (None, _) => 0,
                };
                let got = mm.mremap(*old, *old_len, *new_len, fl, hint, self.placement);
                match (&got, ret) {
                    (Ok(a), Ok(r)) if a == r => {}
                    (Err(_), Err(_)) => {}
                    (Err(crate::Error::Invalid { what }), Ok(_))
                        if what.contains("not modelled") =>
                    {
                        self.report
                            .not_expressed
                            .push((line, format!("mremap: {what}")));
                    }
                    (g, r) => {
                        self.differs(line, r, || format!("mremap: model {g:x?}, kernel {r:x?}"))
                    }
                }
            }
            Call::ShmAt {
                id,
                addr,
                flags,
                ret,
            } => self.shm_at(mm, line, (*id, *addr, *flags), ret),
            Call::ShmDt { addr, ret } => {
                if ret.is_ok() && mm.find(*addr).is_none() {
                    // Its shmat was not expressed (no shmget in an older recording).
                    return self
                        .report
                        .not_expressed
                        .push((line, "shmdt of a segment the model never attached".into()));
                }
                let got = shm_dt(mm, *addr);
                self.compare_result(line, ret, "shmdt", &got);
            }
            Call::Madvise {
                addr,
                len,
                advice,
                ret,
            } => {
                let Some(a) = Advice::from_linux(*advice) else {
                    if strace::result_refused(ret) {
                        // An advice this kernel does not have either (EINVAL):
                        // refused before anything changed.
                        return;
                    }
                    return self.report.not_expressed.push((
                        line,
                        format!("madvise advice {advice} is not one the model has"),
                    ));
                };
                if matches!(a, Advice::Mergeable | Advice::Unmergeable) {
                    // A kernel without CONFIG_KSM, or KSM's own failure: not done.
                    return self
                        .unless_refused(line, ret, "madvise", || mm.madvise(*addr, *len, a));
                }
                self.compare_result(line, ret, "madvise", &mm.madvise(*addr, *len, a));
            }
            Call::Mlock {
                addr,
                len,
                flags,
                ret,
            } => self.unless_refused(line, ret, "mlock", || mm.mlock2(*addr, *len, *flags)),
            Call::Munlock { addr, len, ret } => {
                self.unless_refused(line, ret, "munlock", || mm.munlock(*addr, *len))
            }
            Call::Mlockall { flags, ret } => {
                self.unless_refused(line, ret, "mlockall", || mm.mlockall(*flags))
            }
            Call::Munlockall { ret } => self.unless_refused(line, ret, "munlockall", || {
                mm.munlockall();
                Ok(())
            }),
            _ => {}
        }
    }
}

impl Replay {
    /// Counts a placement the kernel made at `real` (`len` bytes asked for): the
    /// model's choice for `req` is the same, or a miss.
    fn count_placement(&mut self, mm: &Mm, line: usize, req: Request, real: u64, len: u64) {
        if self.quiet {
            return;
        }
        self.report.placed += 1;
        let guess = placement::unmapped_area(&mm.tree, req, self.placement).unwrap_or(0);
        if guess == real {
            self.report.placed_same += 1;
        } else {
            self.report.misplaced.push((line, real, guess, len));
        }
    }

    /// Notes that the model's result `got` of the call `name` at `line` is not the
    /// kernel's `ret` when one succeeded and the other failed ([`Replay::differs`]).
    fn compare_result<T: std::fmt::Debug>(
        &mut self,
        line: usize,
        ret: &strace::Ret,
        name: &str,
        got: &Result<T, crate::Error>,
    ) {
        if got.is_ok() != ret.is_ok() {
            self.differs(line, ret, || {
                format!("{name}: model {got:?}, kernel {ret:?}")
            });
        }
    }

    /// A call (`name`) whose refusals depend on what the model does not follow,
    /// with the recorded result `ret`: done by `call` if it succeeded in the trace
    /// (or its thread died in it; a model that refuses it differs), not done if it
    /// failed there. The lock calls (`RLIMIT_MEMLOCK` and `CAP_IPC_LOCK` are not
    /// modelled; an `ENOMEM` for a hole also comes after the kernel locked the
    /// areas before it), KSM advice, `mbind` and `pkey_mprotect` with a key.
    fn unless_refused(
        &mut self,
        line: usize,
        ret: &strace::Ret,
        name: &str,
        call: impl FnOnce() -> Result<(), crate::Error>,
    ) {
        if !strace::result_refused(ret) {
            let got = call();
            self.compare_result(line, ret, name, &got);
        }
    }
}

/// Hashes a pid by one multiplication (the replay looks one up per call; SipHash
/// cost more than the lookup).
#[derive(Default)]
struct PidHasher(u64);

impl Hasher for PidHasher {
    fn finish(&self) -> u64 {
        self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n);
    }
}

impl Replay {
    /// A segment `shmget` returned: the one already known under `id` if its key is
    /// the same named key (found again), else a new one of `size` bytes
    /// (`IPC_PRIVATE` always makes one; an id is reused after `IPC_RMID`). A size
    /// of 0 (a lookup of a segment the trace did not make) leaves it unknown.
    fn shm_get(&mut self, id: u64, key: u64, size: u64) {
        if let Some((k, _)) = self.shm_segments.get(&id) {
            if *k == key && key != 0 {
                return;
            }
        }
        if size == 0 {
            self.shm_segments.remove(&id);
            return;
        }
        // `newseg` names the segment's file `SYSV%08x` (the key); it has no path,
        // so the maps show it `(deleted)`.
        let file = self.files.shmem_named(
            Path::new(&format!("/SYSV{key:08x}")),
            size.div_ceil(PAGE_SIZE),
        );
        self.shm_segments.insert(id, (key, file));
    }

    /// `shmat(id, addr, flags) = ret`: `do_shmat` maps the whole segment shared,
    /// read-only with `SHM_RDONLY`, executable too with `SHM_EXEC`, at the kernel's
    /// address (with `addr` 0 the kernel chose it as for `mmap`: a placement).
    fn shm_at(
        &mut self,
        mm: &Mm,
        line: usize,
        (id, addr, flags): (u64, u64, u64),
        ret: &strace::Ret,
    ) {
        let Ok(at) = ret else {
            return;
        };
        let Some((_, file)) = self.shm_segments.get(&id).cloned() else {
            return self.report.not_expressed.push((
                line,
                format!("shmat of segment {id}, which no shmget in the trace made"),
            ));
        };
        let len = file.pages() * PAGE_SIZE;
        if addr == 0 {
            let req = Request {
                top: mm.mmap_base(),
                hint: 0,
                len,
                pgoff: Some(0),
                shared: true,
                nohugepage: false,
                low: false,
            };
            self.count_placement(mm, line, req, *at, len);
        }
        let prot = Prot::new(true, flags & shm::RDONLY == 0, flags & shm::EXEC != 0);
        let opts = MmapOptions {
            fixed: true,
            shared: true,
            placement: self.placement,
            ..MmapOptions::default()
        };
        let got = mm.mmap_with(*at, len, prot, opts, Some((&file, 0)));
        if got != Ok(*at) {
            self.differs(line, ret, || {
                format!("shmat: model {got:?}, kernel {ret:?}")
            });
        }
    }
}

/// `shmdt(addr)`: unmaps the System V segment attached at `addr` (its pages from
/// `addr` on, `do_shmdt`); `Invalid` if none starts there.
fn shm_dt(mm: &Mm, addr: u64) -> Result<(), crate::Error> {
    let seg = mm
        .find(addr)
        .and_then(|v| {
            let (f, pgoff) = v.file()?;
            let sysv = f.path().to_str()?.starts_with("/SYSV");
            (sysv && v.start - pgoff * PAGE_SIZE == addr).then(|| f.pages() * PAGE_SIZE)
        })
        .ok_or(crate::Error::Invalid {
            what: "no System V segment attached there",
        })?;
    mm.munmap(addr, seg)
}

/// Whether `mmap` flags have a shared map type (`MAP_SHARED`, `MAP_SHARED_VALIDATE`).
fn shared_type(flags: u64) -> bool {
    matches!(flags & map::TYPE, map::SHARED | map::SHARED_VALIDATE)
}

/// How many events past a non-fixed `mmap` [`Replay::ran_first`] looks for one that
/// overlapped it: about as many as a run's threads can have in flight at once.
const OVERLAP_WINDOW: usize = 64;

/// The placement request of a non-fixed `mmap` the kernel made (`MAP_FIXED` and
/// `MAP_FIXED_NOREPLACE` choose no address), in address space `mm`, and the address
/// the kernel chose; `None` for any other call.
fn non_fixed_placement(call: &Call, mm: &Mm) -> Option<(Request, u64)> {
    let Call::Mmap {
        addr,
        len,
        flags,
        file,
        ret: Ok(real),
        ..
    } = call
    else {
        return None;
    };
    // (MAP_HUGETLB and MAP_GROWSDOWN mappings are not modelled.)
    if flags & (map::FIXED | map::FIXED_NOREPLACE | map::HUGETLB | map::GROWSDOWN) != 0 {
        return None;
    }
    let req = Request {
        top: mm.mmap_base(),
        hint: *addr,
        len: align_up(*len).unwrap_or(0),
        pgoff: file.as_ref().map(|(_, off)| off / PAGE_SIZE),
        shared: shared_type(*flags),
        nohugepage: flags & map::STACK != 0,
        low: flags & map::LOW32 != 0,
    };
    Some((req, *real))
}

/// Calls `trace=process` (and `trace=memory`) records that do not change an address
/// space's areas.
const NO_MEMORY_EFFECT: &[&str] = &[
    "exit",
    "exit_group",
    "wait4",
    "waitid",
    "kill",
    "tkill",
    "tgkill",
    "pidfd_open",
    "pidfd_send_signal",
    "rt_sigqueueinfo",
    "rt_tgsigqueueinfo",
    // Another resource's limit, or a query (a stack limit is Call::StackLimit).
    "setrlimit",
    "prlimit64",
    // Calls of strace's memory class (`trace=memory`) that change no VMA: queries
    // (mincore, get_mempolicy), page work (msync, migrate_pages, move_pages), the
    // task's NUMA policy (set_mempolicy; only mbind gives an area one), buffers
    // io_uring pins (io_uring_register).
    "mincore",
    "msync",
    "get_mempolicy",
    "set_mempolicy",
    "migrate_pages",
    "move_pages",
    "io_uring_register",
    // Not in the memory class, and no VMA effect either: protection keys made
    // or freed (pkey_mprotect, which gives areas one, is not here), and
    // process_madvise, whose advice Linux 6.12 limits to page advice
    // (`process_madvise_behavior_valid`: MADV_COLD, MADV_PAGEOUT, MADV_WILLNEED,
    // MADV_COLLAPSE).
    "pkey_alloc",
    "pkey_free",
    "process_madvise",
    // RENAME_EXCHANGE swaps two names, unlinking none (the others: Call::Unlink).
    "renameat2",
];

fn prot_of(bits: u64) -> Prot {
    Prot::new(bits & 1 != 0, bits & 2 != 0, bits & 4 != 0)
}

impl Mm {
    /// The kernel's part of `execve` (what exists when ld.so starts): the old address
    /// space removed, then the [`Caller::Kernel`] steps of the planned exec (the
    /// stack, the executable's segments, the interpreter, the vvar/vdso pages; see
    /// [`crate::exec`]) and the program break right after the executable (no `[heap]`
    /// VMA until `brk` grows it). ld.so's mappings of the libraries are left to the
    /// replayed trace.
    pub fn exec_kernel_part(&self, prog: &Program) {
        self.exec_kernel_part_with_strings(prog, None);
    }

    /// [`Mm::exec_kernel_part`] with the `[stack]` sized for `strings` bytes of
    /// path, environment and arguments ([`crate::layout::initial_stack_size`]).
    pub fn exec_kernel_part_with_strings(&self, prog: &Program, strings: Option<u64>) {
        let mut st = self.state.lock();
        self.teardown(&mut st);
        st.mmap_base = prog.mmap_base();
        let top = crate::layout::STACK_TOP;
        let stack_start = top - crate::layout::initial_stack_size(strings);
        for step in prog.steps().iter().filter(|s| s.caller() == Caller::Kernel) {
            match step {
                ExecStep::Map {
                    start,
                    end,
                    backing: crate::Backing::Anon(AnonKind::Stack),
                    ..
                } if *end == top && *start != stack_start => {
                    let mut sized = step.clone();
                    if let ExecStep::Map { start, .. } = &mut sized {
                        *start = stack_start;
                    }
                    self.replay_step(&mut st, &sized);
                }
                _ => self.replay_step(&mut st, step),
            }
        }
        st.brk_start = prog.brk_start();
        st.brk = prog.brk_start();
        st.start_stack = crate::layout::START_STACK;
        st.exe_file = Some(prog.objects[0].1.clone());
    }
}

impl Mm {
    /// Builds the layout `maps` describes (a recorded `/proc/PID/maps`) into this
    /// empty address space, so a replay can start from a running process: file
    /// lines become file mappings (private or shared as the line says) of files
    /// registered by path, `[heap]`, `[stack]`, `[vvar]`/`[vvar_vclock]` and `[vdso]`
    /// their anonymous kinds, other lines plain anonymous memory. The program break
    /// is set to the heap's range, `start_stack` to [`crate::layout::START_STACK`]
    /// if the stack holds it, else to the middle of the stack's top page (set the real
    /// one with [`Mm::set_start_stack`]). `[vsyscall]` (above the user address space)
    /// is skipped. Two adjacent lines that would merge get different `VM_ACCOUNT`
    /// (see the code), so every line stays one VMA. Errors (`Invalid`, nothing
    /// changed): a non-empty address space, or a line that is unaligned, overlaps
    /// another or lies outside the user range.
    pub fn build_from_maps(&self, maps: &[MapsLine]) -> Result<(), crate::Error> {
        if !self.is_empty() {
            return Err(crate::Error::Invalid {
                what: "address space not empty",
            });
        }
        let mut list: Vec<Vma> = Vec::with_capacity(maps.len());
        let mut prev_end = 0;
        let mut heap: Option<(u64, u64)> = None;
        let mut stack = None;
        for l in maps {
            if l.name == "[vsyscall]" {
                continue;
            }
            if l.start % PAGE_SIZE != 0
                || l.end % PAGE_SIZE != 0
                || l.start >= l.end
                || l.start < prev_end
                || l.end > crate::layout::TASK_SIZE
                || l.offset % PAGE_SIZE != 0
            {
                return Err(crate::Error::Invalid {
                    what: "bad or overlapping maps line",
                });
            }
            prev_end = l.end;
            let backing = match l.name.as_str() {
                "[heap]" => {
                    heap = Some((heap.map_or(l.start, |h| h.0), l.end));
                    crate::Backing::Anon(AnonKind::Heap)
                }
                "[stack]" => {
                    stack = Some((l.start, l.end));
                    crate::Backing::Anon(AnonKind::Stack)
                }
                "[vvar]" => crate::Backing::Anon(AnonKind::Vvar),
                "[vvar_vclock]" => crate::Backing::Anon(AnonKind::VvarVclock),
                "[vdso]" => crate::Backing::Anon(AnonKind::Vdso),
                n if n.starts_with('/') => {
                    let pages = (l.offset / PAGE_SIZE) + (l.end - l.start) / PAGE_SIZE;
                    crate::Backing::File {
                        file: self.files.register_named(Path::new(n), pages, None),
                        pgoff: l.offset / PAGE_SIZE,
                    }
                }
                _ => crate::Backing::Anon(AnonKind::Plain),
            };
            let mut v = Vma {
                start: l.start,
                end: l.end,
                prot: l.prot,
                flags: crate::VmFlags {
                    shared: l.shared,
                    account: !l.shared && l.prot.write,
                    ..Default::default()
                },
                backing,
                link: None,
            };
            // Two lines the kernel keeps apart although they look mergeable differ
            // in a flag the maps file does not show (a RELRO piece was writable:
            // VM_ACCOUNT); the model marks the second with a different VM_ACCOUNT.
            if list.last().is_some_and(|p| p.can_merge(&v)) {
                v.flags.account = !v.flags.account;
            }
            list.push(v);
        }
        let mut st = self.state.lock();
        for v in list {
            // Lines are sorted and disjoint: each goes into an empty range. Kept one
            // by one so that two adjacent lines stay two VMAs, as the kernel shows them.
            let (s, e) = (v.start, v.end);
            self.replace(&mut st, s, e, vec![v], Why::Map, (s, e));
        }
        if let Some((start, end)) = heap {
            st.brk_start = start;
            st.brk = end;
        }
        if let Some((start, end)) = stack {
            let guess = crate::layout::START_STACK;
            st.start_stack = if (start..=end).contains(&guess) {
                guess
            } else {
                end - PAGE_SIZE / 2
            };
        }
        Ok(())
    }
}
