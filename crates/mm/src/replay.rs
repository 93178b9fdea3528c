//! Replaying a recorded run ([`crate::strace`]) through [`Mm`], process by process,
//! in trace order: `fork`/`clone` make address spaces (`CLONE_VM` threads share one),
//! a successful `execve` replaces one with the kernel's part of the new image (stack,
//! executable, interpreter, vdso; ld.so's own `mmap` calls follow in the trace), and
//! every memory call goes through the model.
//!
//! For each `mmap` without `MAP_FIXED` the model's choice (the [`Placement`] policy
//! on the model's current layout) is compared with the kernel's; the mapping is then
//! made at the kernel's address, so that one miss does not derail the rest.

use crate::placement::{self, Placement, Request};
use crate::strace::{map, Call, Event};
use crate::{
    align_up, Advice, AnonKind, Caller, Files, Mm, MmapOptions, MremapFlags, Program, Prot,
    RmapCalls, Vma, Why, PAGE_SIZE,
};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;
use std::sync::Arc;

/// What a replay did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Memory calls (mmap, munmap, mprotect, brk, mremap, madvise) replayed.
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
}

impl Report {
    /// Reverse-map lock holds per replayed memory call.
    pub fn lock_holds_per_call(&self) -> f64 {
        self.rmap.lock_holds() as f64 / self.calls.max(1) as f64
    }
}

/// The replay's state: the address space of each live pid, and each exited one's
/// last address space (for comparing with a `/proc/PID/maps` taken at exit).
pub struct Replay {
    files: Arc<Files>,
    placement: Placement,
    live: HashMap<u32, Arc<Mm>, BuildHasherDefault<PidHasher>>,
    /// Address spaces at their owner's exit (or execve), by pid; last one wins.
    pub exited: HashMap<u32, Vec<Vma>>,
    all: Vec<Arc<Mm>>,
    /// Files seen by path (saves the registry lookup and the size `stat`).
    file_cache: HashMap<String, Arc<crate::File>>,
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
            report: Report::default(),
        }
    }

    /// Drops every address space and the report, keeping the file cache: the state of
    /// a new replay into the same registry.
    pub fn reset(&mut self) {
        self.live.clear();
        self.exited.clear();
        self.all.clear();
        self.report = Report::default();
    }

    /// Starts `pid` from a recorded `/proc/PID/maps` (see [`Mm::build_from_maps`]),
    /// for a trace that begins while the process runs.
    pub fn start_from_maps(&mut self, pid: u32, maps_text: &str) -> Result<(), String> {
        let maps = parse_maps(maps_text).ok_or("not a /proc/PID/maps file")?;
        let shared: Vec<bool> = maps_text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                l.split_whitespace()
                    .nth(1)
                    .is_some_and(|p| p.ends_with('s'))
            })
            .collect();
        let m = Arc::new(Mm::new(self.files.clone()));
        m.build_from_maps(&maps, &shared)
            .map_err(|e| e.to_string())?;
        self.all.push(m.clone());
        self.live.insert(pid, m);
        Ok(())
    }

    /// The live address space of `pid`, if any.
    pub fn mm(&self, pid: u32) -> Option<&Arc<Mm>> {
        self.live.get(&pid)
    }

    /// Replays `events` in order and returns the report (reverse-map calls summed
    /// over every address space the run made).
    pub fn run(&mut self, events: &[Event]) -> &Report {
        for e in events {
            self.step(e);
        }
        self.finish()
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

    fn mm_of(&mut self, pid: u32) -> Arc<Mm> {
        if let Some(m) = self.live.get(&pid) {
            return m.clone();
        }
        let m = Arc::new(Mm::new(self.files.clone()));
        self.all.push(m.clone());
        self.live.insert(pid, m.clone());
        m
    }

    fn file(&mut self, path: &str, off: u64, len: u64) -> Arc<crate::File> {
        let need = (off / PAGE_SIZE).saturating_add(len.div_ceil(PAGE_SIZE));
        if let Some(f) = self.file_cache.get(path) {
            return f.clone();
        }
        let size = std::fs::metadata(path)
            .map(|m| m.len().div_ceil(PAGE_SIZE))
            .unwrap_or(0);
        let f = self.files.register(Path::new(path), size.max(need).max(1));
        self.file_cache.insert(path.to_string(), f.clone());
        f
    }

    fn differs(&mut self, line: usize, what: String) {
        self.report.result_differs.push((line, what));
    }

    /// Replays one event.
    pub fn step(&mut self, e: &Event) {
        let line = e.line;
        match &e.call {
            Call::Exit => {
                self.report.events += 1;
                if let Some(m) = self.live.remove(&e.pid) {
                    if !self.live.values().any(|o| Arc::ptr_eq(o, &m)) {
                        self.exited.insert(e.pid, m.vmas());
                    }
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
                let parent = self.mm_of(e.pid);
                let m = if *vm { parent } else { Arc::new(parent.fork()) };
                self.all.push(m.clone());
                self.live.insert(child, m);
            }
            Call::Execve { path, ret } => {
                self.report.events += 1;
                if ret.is_err() {
                    return;
                }
                let prog = match self.files.program(Path::new(path)) {
                    Ok(p) => p,
                    Err(err) => {
                        return self
                            .report
                            .not_expressed
                            .push((line, format!("execve {path}: {err}")));
                    }
                };
                let m = Arc::new(Mm::new(self.files.clone()));
                m.exec_kernel_part(&prog);
                if let Some(old) = self.live.insert(e.pid, m.clone()) {
                    old.exit();
                }
                self.all.push(m);
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
                let mm = self.mm_of(e.pid);
                self.memory_call(&mm, line, call);
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
                ret,
            } => {
                if flags & map::HUGETLB != 0 || flags & map::GROWSDOWN != 0 {
                    return self
                        .report
                        .not_expressed
                        .push((line, "mmap: MAP_HUGETLB/MAP_GROWSDOWN not modelled".into()));
                }
                let shared = flags & 0x3 == map::SHARED || flags & 0x3 == 0x3;
                let fixed = flags & map::FIXED != 0;
                let mut opts = MmapOptions {
                    fixed,
                    fixed_noreplace: flags & map::FIXED_NOREPLACE != 0,
                    shared,
                    noreserve: flags & map::NORESERVE != 0,
                    stack: flags & map::STACK != 0,
                    placement: self.placement,
                };
                if shared && file.is_none() {
                    return self.report.not_expressed.push((
                        line,
                        "mmap: shared anonymous memory (shmem) not modelled".into(),
                    ));
                }
                let f = file
                    .as_ref()
                    .map(|(p, off)| (self.file(p, *off, *len), off / PAGE_SIZE));
                let fref = f.as_ref().map(|(f, p)| (f, *p));
                let mut at = *addr;
                if let (Ok(real), false, false) = (ret, fixed, opts.fixed_noreplace) {
                    self.report.placed += 1;
                    let req = Request {
                        hint: *addr,
                        len: align_up(*len).unwrap_or(0),
                        pgoff: fref.map(|(_, p)| p),
                        shared,
                        nohugepage: opts.stack,
                    };
                    let guess =
                        placement::unmapped_area(&mm.tree, req, self.placement).unwrap_or(0);
                    if guess == *real {
                        self.report.placed_same += 1;
                    } else {
                        self.report.misplaced.push((line, *real, guess, *len));
                    }
                    // Follow the kernel.
                    opts.fixed = true;
                    at = *real;
                }
                let got = mm.mmap_with(at, *len, prot_of(*prot), opts, fref);
                match (got, ret) {
                    (Ok(a), Ok(r)) if a == *r => {}
                    (Err(_), Err(_)) => {}
                    (g, r) => self.differs(line, format!("mmap: model {g:?}, kernel {r:?}")),
                }
            }
            Call::Munmap { addr, len, ret } => {
                let got = mm.munmap(*addr, *len);
                if got.is_ok() != ret.is_ok() {
                    self.differs(line, format!("munmap: model {got:?}, kernel {ret:?}"));
                }
            }
            Call::Mprotect {
                addr,
                len,
                prot,
                ret,
            } => {
                let got = mm.mprotect(*addr, *len, prot_of(*prot));
                if got.is_ok() != ret.is_ok() {
                    self.differs(line, format!("mprotect: model {got:?}, kernel {ret:?}"));
                }
            }
            Call::Brk { addr, ret } => {
                let got = mm.brk(*addr);
                if Ok(got) != *ret {
                    self.differs(line, format!("brk: model {got:#x}, kernel {ret:x?}"));
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
                let fl = MremapFlags {
                    may_move: flags & 1 != 0,
                    fixed: flags & 2 != 0,
                    dont_unmap: flags & 4 != 0,
                };
                let got = mm.mremap(*old, *old_len, *new_len, fl, *new_addr, self.placement);
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
                    (g, r) => self.differs(line, format!("mremap: model {g:x?}, kernel {r:x?}")),
                }
            }
            Call::Madvise {
                addr,
                len,
                advice,
                ret,
            } => {
                let Some(a) = Advice::from_linux(*advice) else {
                    return self.report.not_expressed.push((
                        line,
                        format!("madvise advice {advice} changes VMA flags the model lacks"),
                    ));
                };
                let got = mm.madvise(*addr, *len, a);
                if got.is_ok() != ret.is_ok() {
                    self.differs(line, format!("madvise: model {got:?}, kernel {ret:?}"));
                }
            }
            _ => {}
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

/// Calls `trace=process` records that do not change an address space.
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
        let mut st = self.state.lock();
        self.teardown(&mut st);
        for step in prog.steps().iter().filter(|s| s.caller() == Caller::Kernel) {
            self.replay_step(&mut st, step);
        }
        st.brk_start = prog.brk_start();
        st.brk = prog.brk_start();
    }
}

impl Mm {
    /// Builds the layout `maps` describes (a recorded `/proc/PID/maps`) into this
    /// empty address space, so a replay can start from a running process: file
    /// lines become private file mappings (`s` in the permissions: shared) of files
    /// registered by path, `[heap]`, `[stack]`, `[vvar]`/`[vvar_vclock]` and `[vdso]`
    /// their anonymous kinds (the program break is set to the heap's end), other
    /// lines plain anonymous memory. `[vsyscall]` (above the user address space) is
    /// skipped. Two adjacent lines that would merge get different `VM_ACCOUNT` (see
    /// the code), so every line stays one VMA. Errors (`Invalid`, nothing changed): a non-empty address space, or a
    /// line that is unaligned, overlaps another or lies outside the user range.
    pub fn build_from_maps(&self, maps: &[MapsLine], shared: &[bool]) -> Result<(), crate::Error> {
        if !self.is_empty() {
            return Err(crate::Error::Invalid {
                what: "address space not empty",
            });
        }
        let mut list: Vec<Vma> = Vec::with_capacity(maps.len());
        let mut prev_end = 0;
        let mut brk = None;
        for (i, (start, end, prot, name, off)) in maps.iter().enumerate() {
            if name == "[vsyscall]" {
                continue;
            }
            if start % PAGE_SIZE != 0
                || end % PAGE_SIZE != 0
                || start >= end
                || *start < prev_end
                || *end > crate::layout::TASK_SIZE
                || off % PAGE_SIZE != 0
            {
                return Err(crate::Error::Invalid {
                    what: "bad or overlapping maps line",
                });
            }
            prev_end = *end;
            let is_shared = shared.get(i).copied().unwrap_or(false);
            let backing = match name.as_str() {
                "[heap]" => {
                    brk = Some((*start, *end));
                    crate::Backing::Anon(AnonKind::Heap)
                }
                "[stack]" => crate::Backing::Anon(AnonKind::Stack),
                "[vvar]" => crate::Backing::Anon(AnonKind::Vvar),
                "[vvar_vclock]" => crate::Backing::Anon(AnonKind::VvarVclock),
                "[vdso]" => crate::Backing::Anon(AnonKind::Vdso),
                n if n.starts_with('/') => {
                    let pages = (off / PAGE_SIZE) + (end - start) / PAGE_SIZE;
                    let size = std::fs::metadata(n)
                        .map(|m| m.len().div_ceil(PAGE_SIZE))
                        .unwrap_or(0);
                    crate::Backing::File {
                        file: self.files.register(Path::new(n), size.max(pages)),
                        pgoff: off / PAGE_SIZE,
                    }
                }
                _ => crate::Backing::Anon(AnonKind::Plain),
            };
            let mut v = Vma {
                start: *start,
                end: *end,
                prot: *prot,
                flags: crate::VmFlags {
                    shared: is_shared,
                    account: !is_shared && prot.write,
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
        if let Some((start, end)) = brk {
            st.brk_start = start;
            st.brk = end;
        }
        Ok(())
    }
}

/// One line of `/proc/PID/maps`: (start, end, prot, path or name, byte offset).
pub type MapsLine = (u64, u64, Prot, String, u64);

/// Parses `/proc/PID/maps` text; `None` for a malformed line.
///
/// With [`model_maps`] and [`diff_maps`], compares the model's layout with a
/// real process's:
///
/// ```
/// use mm::replay::{diff_maps, model_maps, parse_maps};
/// use mm::{CallPattern, Files, MapFlags, Mm, Prot, PAGE_SIZE};
/// use rmap::{Design, Topology};
///
/// let mm = Mm::new(Files::new(Design::Linux, Topology::Os, CallPattern::PerVma));
/// let fixed = MapFlags { fixed: true, shared: false };
/// mm.mmap(0x10_0000, 2 * PAGE_SIZE, Prot::RW, fixed, None)?;
/// let real = parse_maps("00100000-00102000 rw-p 00000000 00:00 0\n").unwrap();
/// let (model_only, kernel_only) = diff_maps(&model_maps(&mm.vmas()), &real);
/// assert!(model_only.is_empty() && kernel_only.is_empty());
/// assert_eq!(parse_maps("not a maps line"), None);
/// # Ok::<(), mm::Error>(())
/// ```
pub fn parse_maps(text: &str) -> Option<Vec<MapsLine>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut it = l.split_whitespace();
            let (s, e) = it.next()?.split_once('-')?;
            let perms = it.next()?;
            let off = u64::from_str_radix(it.next()?, 16).ok()?;
            let _dev = it.next()?;
            let _inode = it.next()?;
            let name = it.collect::<Vec<_>>().join(" ");
            Some((
                u64::from_str_radix(s, 16).ok()?,
                u64::from_str_radix(e, 16).ok()?,
                Prot::from_maps(perms)?,
                name,
                off,
            ))
        })
        .collect()
}

/// The model's layout as [`MapsLine`]s (anonymous areas get their `[name]` or "").
pub fn model_maps(vmas: &[Vma]) -> Vec<MapsLine> {
    vmas.iter()
        .map(|v| match &v.backing {
            crate::Backing::File { file, pgoff } => (
                v.start,
                v.end,
                v.prot,
                file.path().display().to_string(),
                pgoff * PAGE_SIZE,
            ),
            crate::Backing::Anon(k) => (
                v.start,
                v.end,
                v.prot,
                k.name().unwrap_or("").to_string(),
                0,
            ),
        })
        .collect()
}

/// The lines only one side has: (model only, kernel only). One known difference is
/// normalised on the kernel's side: `[vsyscall]` is dropped (the model has none: it
/// lies above the user address space, in no VMA tree).
pub fn diff_maps(model: &[MapsLine], real: &[MapsLine]) -> (Vec<MapsLine>, Vec<MapsLine>) {
    let mut norm: Vec<MapsLine> = Vec::with_capacity(real.len());
    for l in real {
        if l.3 == "[vsyscall]" {
            continue;
        }
        norm.push(l.clone());
    }
    let only_model = model
        .iter()
        .filter(|l| !norm.contains(l))
        .cloned()
        .collect();
    let only_real = norm
        .iter()
        .filter(|l| !model.contains(l))
        .cloned()
        .collect();
    (only_model, only_real)
}
