//! `exec`: the whole new image is planned and checked first, then the old address
//! space is torn down and the plan is replayed.
//!
//! # Plan, then replace
//! [`Program::new`] turns a resolved [`LoadPlan`] into the exact sequence of calls the
//! kernel's ELF loader and ld.so make ([`ExecStep`]s: map, protect, unmap, each with
//! its address), simulating the new address space as it goes. Every step is checked
//! there: page alignment, no address arithmetic that wraps (load biases are computed
//! in 128 bits), every mapping inside `[mmap_min_addr, TASK_SIZE)`, no object placed
//! over another, room for each library, the brk and initial heap inside the mmap
//! area's floor. A plan that fails is an [`Error`] and the caller's address space was
//! never touched; [`Mm::exec_program`] of a built [`Program`] cannot fail, so the old
//! image and every reverse map are changed only once the whole new image is known to
//! fit (the kernel's "point of no return").
//!
//! # What is replayed (kernel 6.18, glibc 2.36, x86-64, ASLR off)
//! 1. The kernel: the `[stack]`; the executable: an `ET_EXEC` at its link addresses,
//!    a PIE (with `PT_INTERP`) at [`crate::layout::ELF_ET_DYN_BASE_RAW`] rounded down to its
//!    largest `p_align`, a static-pie or ld.so run directly top-down in the mmap area
//!    (with a `p_align` above the page size, where the whole span would go, aligned
//!    down to it: Linux 6.12's `load_elf_binary`).
//!    An `ET_DYN` object's first segment is mapped over the whole span and the rest
//!    unmapped (`elf_map` with `total_size`), then each further segment mapped at its
//!    address; holes between segments stay unmapped. Each segment's bss past its last
//!    file page is anonymous memory. Then the brk (right after the executable's bss,
//!    or at `ELF_ET_DYN_BASE` for an `ET_DYN` with no interpreter), the interpreter
//!    (placed like a static-pie), and the vvar/vdso pages, top-down.
//! 2. The model's initial `[heap]` ([`crate::layout::HEAP_INITIAL`] at the brk): what a
//!    process has after its first `malloc` (not part of exec proper).
//! 3. ld.so, for a dynamically linked program: one anonymous 8 KiB page pair (its
//!    first allocation), then, before the first library it looks up in its cache,
//!    `/etc/ld.so.cache` mapped read-only; then for each library in load order: one
//!    `mmap` reserving the whole span with the first segment's protection (placed
//!    top-down; one of 2 MiB or more at an address congruent to its file offset
//!    modulo 2 MiB, as the kernel's `thp_get_unmapped_area` does; or, when a
//!    segment asks for an alignment above the page size, an anonymous `PROT_NONE`
//!    reservation of span + alignment, the file mapped `MAP_FIXED` at the aligned
//!    address and both ends unmapped), a `PROT_NONE` `mprotect` from the first
//!    segment's end to the last segment's start when there are holes, a `MAP_FIXED`
//!    overlay of each further segment, and an anonymous `MAP_FIXED` bss after each
//!    segment that has one; then the `PT_GNU_RELRO` `mprotect`s (libraries in reverse
//!    load order, the executable, ld.so itself), and the cache unmapped. This is the
//!    order `strace -f -e trace=memory` shows, call for call, per file (the test
//!    `exec_ldso_sequence` checks it); ld.so's later anonymous mappings (TLS) are not
//!    modelled.
//!
//! # Fidelity (`scripts/exec-sweep.sh --all`, this machine)
//! All 727 dynamically linked executables of `/usr/bin` and `/usr/sbin`, stopped at
//! their entry point: every (binary, file) pair (6,238) has the same pieces (page
//! offset, length, protection, shared flag, count) as the kernel's `/proc/PID/maps`.
//! Addresses: 457 binaries have every file mapping at the kernel's address (ASLR
//! off); in 258, ld.so's minimal malloc ran out of its first page and mapped another
//! 8 KiB between two libraries (not modelled: its size depends on ld.so's internal
//! allocations), shifting the libraries below it; 12 are set-id binaries, which the
//! kernel randomizes even with ASLR off.
//!
//! RELRO is the runtime's choice: ld.so applies it to every object it relocates. A
//! program with no interpreter (static, static-pie, ld.so run as the program) gets
//! none at exec: glibc's static startup code applies it after the entry point, other
//! runtimes (Go) never do. [`Program::linkage`] reports which case a program is.

use crate::elf::{ElfImage, ElfKind};
use crate::error::Error;
use crate::file::File;
use crate::files::Files;
use crate::layout::*;
use crate::ldso::{Linkage, LoadPlan, LD_SO_CACHE};
use crate::program::{Caller, ExecStep, Program};
use crate::vma::{AnonKind, Backing, Prot, VmFlags, Vma};
use crate::{Mm, State, Why, PAGE_SIZE};

/// The size a huge page maps on x86-64 (2 MiB): non-fixed file mappings at least this
/// long are aligned to it. One constant with the placement policy's.
pub use crate::placement::PMD_SIZE;
use std::path::{Path, PathBuf};
use std::sync::Arc;

impl Files {
    /// The program at `path` with its interpreter and libraries resolved (as ld.so
    /// would), registered, and its exec planned and checked (see [`Program::new`]);
    /// cached per path.
    pub fn program(&self, path: &Path) -> Result<Arc<Program>, Error> {
        self.program_with_base(path, MMAP_BASE)
    }

    /// [`Files::program`] for a process whose mmap area ends at `mmap_base`
    /// ([`crate::layout::mmap_base`] of its stack limit): the interpreter and the
    /// vdso go top-down from there. Cached per path, base and vDSO layout
    /// ([`Files::set_vdso_layout`]).
    pub fn program_with_base(&self, path: &Path, mmap_base: u64) -> Result<Arc<Program>, Error> {
        let key = (path.to_path_buf(), mmap_base, self.vdso_layout());
        if let Some(p) = self.programs.lock().get(&key) {
            return Ok(p.clone());
        }
        let exe = script_interpreter(path)?;
        let plan = LoadPlan::resolve(&exe, &self.search)?;
        let prog = Arc::new(Program {
            via_script: exe != path,
            ..Program::new_with_base(self, plan, mmap_base)?
        });
        self.programs.lock().insert(key, prog.clone());
        Ok(prog)
    }
}

impl Program {
    /// Registers every object of `plan` in `files` and plans its exec; fails (with
    /// [`Error::BadLayout`] or [`Error::Malformed`]) when the image cannot be placed.
    /// Registering files changes no reverse map.
    pub fn new(files: &Files, plan: LoadPlan) -> Result<Program, Error> {
        Program::new_with_base(files, plan, MMAP_BASE)
    }

    /// [`Program::new`] with the mmap area ending at `mmap_base` (a page-aligned
    /// address in the user range; [`crate::layout::mmap_base`]).
    pub fn new_with_base(files: &Files, plan: LoadPlan, mmap_base: u64) -> Result<Program, Error> {
        let objects: Vec<(Arc<ElfImage>, Arc<File>)> = plan
            .objects()
            .map(|img| {
                let file = files.register_real(&img.path, img.file_pages, img.file_id);
                (img.clone(), file)
            })
            .collect();
        let cache = match plan.first_cache_lookup {
            Some(_) => Some(files.open(Path::new(LD_SO_CACHE))?),
            None => None,
        };
        let mut p = Planner {
            base: mmap_base,
            vdso: files.vdso_layout(),
            ..Planner::default()
        };
        p.plan(&plan, &objects, cache.as_ref())?;
        Ok(Program {
            plan,
            objects,
            steps: p.steps,
            brk_start: p.brk_start,
            heap_end: p.heap_end,
            mmap_base,
            via_script: false,
        })
    }
}

/// How many `#!` scripts may stand in a row before the program (the kernel's
/// `BINPRM_MAX_RECURSION`): past that exec fails with `ELOOP`.
const MAX_SCRIPT_LEVELS: usize = 4;
/// How much of a script's first line the kernel reads (`BINPRM_BUF_SIZE`).
const SCRIPT_LINE_MAX: usize = 256;

/// The kernel's `binfmt_script`: a file that starts with `#!` is run by the
/// interpreter its first line names, so what exec maps is that interpreter's image
/// (the script itself is only read, never mapped). Follows up to
/// [`MAX_SCRIPT_LEVELS`] scripts; returns `path` itself for anything else (an ELF
/// file, or a file exec will then reject). A `#!` line naming no interpreter is
/// `NotElf` (ENOEXEC, as the kernel answers); too many levels is `Unsupported`.
fn script_interpreter(path: &Path) -> Result<PathBuf, Error> {
    use std::io::Read as _;
    let mut cur = path.to_path_buf();
    for _ in 0..=MAX_SCRIPT_LEVELS {
        let (file, _) = crate::elf::open_regular(&cur)?;
        let mut head = Vec::with_capacity(SCRIPT_LINE_MAX);
        file.take(SCRIPT_LINE_MAX as u64)
            .read_to_end(&mut head)
            .map_err(|e| Error::from_io(&cur, &e))?;
        let Some(line) = head.strip_prefix(b"#!") else {
            return Ok(cur);
        };
        let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
        let interp = line
            .split(|&b| b == b' ' || b == b'\t')
            .find(|w| !w.is_empty())
            .and_then(|w| std::str::from_utf8(w).ok());
        match interp {
            Some(i) => cur = PathBuf::from(i),
            None => return Err(Error::NotElf { path: cur }),
        }
    }
    Err(Error::Unsupported {
        path: path.to_path_buf(),
        what: "more than 4 levels of #! interpreters (ELOOP)",
    })
}

/// The new address space while it is planned: sorted, disjoint `[start, end)` ranges.
struct Planner {
    /// Where top-down placement starts (the mmap base).
    base: u64,
    /// The vDSO's areas.
    vdso: VdsoLayout,
    used: Vec<(u64, u64)>,
    steps: Vec<ExecStep>,
    brk_start: u64,
    heap_end: Option<u64>,
}

impl Default for Planner {
    fn default() -> Planner {
        Planner {
            base: MMAP_BASE,
            vdso: VdsoLayout::default(),
            used: Vec::new(),
            steps: Vec::new(),
            brk_start: 0,
            heap_end: None,
        }
    }
}

fn page_up(x: u64) -> u64 {
    // Callers pass values below TASK_SIZE + a page: no overflow.
    (x + PAGE_SIZE - 1) & !(PAGE_SIZE - 1)
}

fn file_backing(file: &Arc<File>, pgoff: u64) -> Backing {
    Backing::File {
        file: file.clone(),
        pgoff,
    }
}

impl Planner {
    fn bad(path: &Path, what: &'static str) -> Error {
        Error::BadLayout {
            path: path.to_path_buf(),
            what,
        }
    }

    /// `[start, start + len)` as a checked user range.
    fn range(path: &Path, start: i128, len: u64) -> Result<(u64, u64), Error> {
        let end = start + i128::from(len);
        if start < i128::from(MMAP_MIN_ADDR) {
            return Err(Self::bad(path, "mapping below mmap_min_addr"));
        }
        if end > i128::from(TASK_SIZE) {
            return Err(Self::bad(path, "mapping past the user address space"));
        }
        if len == 0 || start % i128::from(PAGE_SIZE) != 0 || len % PAGE_SIZE != 0 {
            return Err(Self::bad(path, "mapping empty or not page aligned"));
        }
        Ok((start as u64, end as u64))
    }

    fn is_free(&self, s: u64, e: u64) -> bool {
        !self.used.iter().any(|&(a, b)| a < e && s < b)
    }

    fn is_covered(&self, s: u64, e: u64) -> bool {
        let mut at = s;
        for &(a, b) in &self.used {
            if a <= at && at < b {
                at = b;
            }
        }
        at >= e
    }

    fn occupy(&mut self, s: u64, e: u64) {
        self.release(s, e);
        let i = self.used.partition_point(|&(a, _)| a < s);
        self.used.insert(i, (s, e));
    }

    fn release(&mut self, s: u64, e: u64) {
        let mut out = Vec::with_capacity(self.used.len() + 1);
        for &(a, b) in &self.used {
            if b <= s || a >= e {
                out.push((a, b));
                continue;
            }
            if a < s {
                out.push((a, s));
            }
            if b > e {
                out.push((e, b));
            }
        }
        self.used = out;
    }

    /// The highest free `len` bytes below the mmap base (the kernel's top-down search
    /// with ASLR off), aligned to `align`.
    fn top_down(&self, path: &Path, len: u64, align: u64) -> Result<u64, Error> {
        let fit = |lo: u64, hi: u64| -> Option<u64> {
            if hi <= lo || hi - lo < len {
                return None;
            }
            let at = (hi - len) & !(align - 1);
            (at >= lo).then_some(at)
        };
        let mut hi = self.base;
        for &(a, b) in self.used.iter().rev() {
            if b < hi {
                if let Some(at) = fit(b.max(MMAP_MIN_ADDR), hi) {
                    return Ok(at);
                }
            }
            hi = hi.min(a);
        }
        fit(MMAP_MIN_ADDR, hi).ok_or_else(|| Self::bad(path, "no room in the mmap area"))
    }

    /// Where a non-fixed file mapping of `len` bytes from page `pgoff` goes: top-down,
    /// with the kernel's huge-page rule ([`crate::placement::thp_top_down`], the same
    /// function the placement policy uses): when it covers a whole PMD-aligned 2 MiB
    /// block of the file, the kernel searches for `len + PMD_SIZE` and moves the start
    /// up to the address congruent to the file offset modulo `PMD_SIZE` (the top of
    /// the padded area when the found start already is). With no padded gap, the
    /// plain search.
    fn top_down_file(&self, path: &Path, len: u64, pgoff: u64) -> Result<u64, Error> {
        let thp = pgoff.checked_mul(PAGE_SIZE).and_then(|off| {
            crate::placement::thp_top_down(off, len, 0, |len_pad| {
                self.top_down(path, len_pad, PAGE_SIZE).ok()
            })
        });
        match thp {
            Some(at) => Ok(at),
            None => self.top_down(path, len, PAGE_SIZE),
        }
    }

    /// Records a map of `[s, e)`; an empty range maps nothing (callers check spans,
    /// this keeps an empty VMA out of the tree whatever they missed).
    fn map(&mut self, s: u64, e: u64, prot: Prot, backing: Backing, fixed: bool, caller: Caller) {
        if s >= e {
            return;
        }
        self.occupy(s, e);
        self.steps.push(ExecStep::Map {
            start: s,
            end: e,
            prot,
            backing,
            fixed,
            caller,
        });
    }

    fn unmap(&mut self, s: u64, e: u64, caller: Caller) {
        if s < e {
            self.release(s, e);
            self.steps.push(ExecStep::Unmap {
                start: s,
                end: e,
                caller,
            });
        }
    }

    fn protect(&mut self, path: &Path, s: u64, e: u64, prot: Prot) -> Result<(), Error> {
        if s >= e {
            return Ok(());
        }
        if !self.is_covered(s, e) {
            return Err(Self::bad(path, "mprotect of a range that is not mapped"));
        }
        self.steps.push(ExecStep::Protect {
            start: s,
            end: e,
            prot,
            caller: Caller::LdSo,
        });
        Ok(())
    }

    fn plan(
        &mut self,
        plan: &LoadPlan,
        objects: &[(Arc<ElfImage>, Arc<File>)],
        cache: Option<&Arc<File>>,
    ) -> Result<(), Error> {
        let (exe, exe_file) = &objects[0];
        // `setup_arg_pages`: executable when the program's PT_GNU_STACK says so.
        let stack_prot = Prot::new(true, true, exe.exec_stack);
        let stack = (STACK_TOP - STACK_SIZE, STACK_TOP);
        self.map(
            stack.0,
            stack.1,
            stack_prot,
            Backing::Anon(AnonKind::Stack),
            true,
            Caller::Kernel,
        );
        let linkage = plan.linkage();
        // The executable.
        let exe_bias: i128 = match (exe.kind, linkage) {
            (ElfKind::Exec, _) => 0,
            (ElfKind::Dyn, Linkage::Dynamic) => {
                let base = ELF_ET_DYN_BASE_RAW & !(exe.max_align - 1);
                (i128::from(base) - i128::from(exe.first_vaddr)) & !i128::from(PAGE_SIZE - 1)
            }
            // No interpreter (a static-pie, ld.so run as the program): top-down in
            // the mmap area. With an alignment above the page size,
            // `load_elf_binary` maps the whole span at 0 to learn where it goes,
            // unmaps it, and loads it there aligned down to that alignment.
            (ElfKind::Dyn, _) => {
                let bias = self.kernel_top_down(exe)?;
                if exe.max_align > PAGE_SIZE {
                    let found = bias + i128::from(exe.first_vaddr);
                    let at = found & !i128::from(exe.max_align - 1);
                    (at - i128::from(exe.first_vaddr)) & !i128::from(PAGE_SIZE - 1)
                } else {
                    bias
                }
            }
        };
        self.kernel_load(exe, exe_file, exe_bias)?;
        let last = exe.segments.last().expect("parse checked: a PT_LOAD");
        let brk = if exe.kind == ElfKind::Dyn && linkage != Linkage::Dynamic {
            page_up(ELF_ET_DYN_BASE_RAW)
        } else {
            (exe_bias + i128::from(last.end())) as u64
        };
        self.brk_start = brk;
        // The interpreter, then the vdso.
        let mut interp_bias = None;
        if plan.interp.is_some() {
            let (img, file) = &objects[1];
            if img.kind != ElfKind::Dyn {
                return Err(Error::Unsupported {
                    path: img.path.clone(),
                    what: "the interpreter is not a shared object",
                });
            }
            let bias = self.kernel_top_down(img)?;
            self.kernel_load(img, file, bias)?;
            interp_bias = Some((img, bias));
        }
        let vdso = self.vdso.pages() * PAGE_SIZE;
        let at = self.top_down(&exe.path, vdso, PAGE_SIZE)?;
        let clock = at + self.vdso.vvar * PAGE_SIZE;
        let mid = clock + self.vdso.vclock * PAGE_SIZE;
        self.map(
            at,
            clock,
            Prot::R,
            Backing::Anon(AnonKind::Vvar),
            false,
            Caller::Kernel,
        );
        if mid > clock {
            self.map(
                clock,
                mid,
                Prot::R,
                Backing::Anon(AnonKind::VvarVclock),
                false,
                Caller::Kernel,
            );
        }
        self.map(
            mid,
            at + vdso,
            Prot::RX,
            Backing::Anon(AnonKind::Vdso),
            false,
            Caller::Kernel,
        );
        // The model's initial heap, where it fits.
        if brk
            .checked_add(HEAP_INITIAL)
            .is_some_and(|e| e <= MMAP_BASE)
            && self.is_free(brk, brk + HEAP_INITIAL)
        {
            self.map(
                brk,
                brk + HEAP_INITIAL,
                Prot::RW,
                Backing::Anon(AnonKind::Heap),
                false,
                Caller::Model,
            );
            self.heap_end = Some(brk + HEAP_INITIAL);
        }
        if linkage != Linkage::Dynamic {
            return Ok(());
        }
        // ld.so.
        let rw = Prot::RW;
        let first = self.top_down(&exe.path, 2 * PAGE_SIZE, PAGE_SIZE)?;
        self.map(
            first,
            first + 2 * PAGE_SIZE,
            rw,
            Backing::Anon(AnonKind::Plain),
            false,
            Caller::LdSo,
        );
        let libs = objects
            .get(1 + usize::from(plan.interp.is_some())..)
            .unwrap_or(&[]);
        let mut biases: Vec<i128> = Vec::with_capacity(libs.len());
        let mut cache_at = None;
        for (i, (img, file)) in libs.iter().enumerate() {
            if plan.first_cache_lookup == Some(i) {
                if let Some(c) = cache {
                    let len = c.pages() * PAGE_SIZE;
                    if len > 0 {
                        let at = self.top_down_file(c.path(), len, 0)?;
                        self.map(
                            at,
                            at + len,
                            Prot::R,
                            file_backing(c, 0),
                            false,
                            Caller::LdSo,
                        );
                        cache_at = Some((at, at + len));
                    }
                }
            }
            biases.push(self.ldso_load(img, file)?);
        }
        // RELRO: libraries in reverse load order, the executable, ld.so itself.
        let mut relro: Vec<(&ElfImage, i128)> = libs
            .iter()
            .zip(&biases)
            .rev()
            .map(|((img, _), &b)| (&**img, b))
            .collect();
        relro.push((exe, exe_bias));
        if let Some((img, bias)) = interp_bias {
            relro.push((img, bias));
        }
        for (img, bias) in relro {
            if let Some((rs, re)) = img.relro {
                let s = Self::range(&img.path, bias + i128::from(rs), re - rs)?;
                self.protect(&img.path, s.0, s.1, Prot::R)?;
            }
        }
        if let Some((s, e)) = cache_at {
            self.unmap(s, e, Caller::LdSo);
        }
        Ok(())
    }

    /// The kernel's placement of an `ET_DYN` with no fixed base: its span top-down.
    fn kernel_top_down(&self, img: &ElfImage) -> Result<i128, Error> {
        let at = self.top_down_file(&img.path, img.span(), img.segments[0].pgoff)?;
        Ok(i128::from(at) - i128::from(img.segments[0].vaddr))
    }

    /// The kernel's `elf_load` of every segment of `img` at `bias`.
    fn kernel_load(&mut self, img: &ElfImage, file: &Arc<File>, bias: i128) -> Result<(), Error> {
        let path = &img.path;
        let first = img.segments[0];
        let (base, span_end) = Self::range(path, bias + i128::from(first.vaddr), img.span())?;
        // Every segment inside the user range, checked before any step is recorded.
        for seg in &img.segments {
            Self::range(path, bias + i128::from(seg.vaddr), seg.mem_len)?;
        }
        let fixed = img.kind == ElfKind::Exec;
        if !self.is_free(base, span_end) {
            return Err(Self::bad(path, "segments overlap another mapping"));
        }
        let anon = Backing::Anon(AnonKind::Plain);
        for (i, seg) in img.segments.iter().enumerate() {
            let s = (bias + i128::from(seg.vaddr)) as u64;
            let fe = s + seg.file_len;
            if seg.file_len > 0 {
                if i == 0 && img.kind == ElfKind::Dyn {
                    // elf_map with total_size: the whole span, then the tail unmapped.
                    self.map(
                        s,
                        span_end,
                        seg.prot,
                        file_backing(file, seg.pgoff),
                        false,
                        Caller::Kernel,
                    );
                    self.unmap(fe, span_end, Caller::Kernel);
                } else {
                    self.map(
                        s,
                        fe,
                        seg.prot,
                        file_backing(file, seg.pgoff),
                        fixed || i > 0,
                        Caller::Kernel,
                    );
                }
            }
            if seg.bss_len() > 0 {
                let prot = Prot::new(true, true, seg.prot.exec);
                self.map(
                    fe,
                    s + seg.mem_len,
                    prot,
                    anon.clone(),
                    true,
                    Caller::Kernel,
                );
            }
        }
        Ok(())
    }

    /// ld.so's `_dl_map_segments` for one library: returns its bias.
    fn ldso_load(&mut self, img: &ElfImage, file: &Arc<File>) -> Result<i128, Error> {
        let path = &img.path;
        let first = img.segments[0];
        let last = *img.segments.last().expect("parse checked: a PT_LOAD");
        let span = img.span();
        if span == 0 {
            return Err(Self::bad(path, "segments span no memory"));
        }
        let align = img.max_align;
        let start = if align <= PAGE_SIZE {
            let at = self.top_down_file(path, span, first.pgoff)?;
            self.map(
                at,
                at + span,
                first.prot,
                file_backing(file, first.pgoff),
                false,
                Caller::LdSo,
            );
            at
        } else {
            let len = if span >= align {
                span.checked_add(align)
            } else {
                align.checked_mul(2)
            }
            .filter(|&l| l < TASK_SIZE)
            .ok_or_else(|| Self::bad(path, "alignment reservation too large"))?;
            let r = self.top_down(path, len, PAGE_SIZE)?;
            self.map(
                r,
                r + len,
                Prot::NONE,
                Backing::Anon(AnonKind::Plain),
                false,
                Caller::LdSo,
            );
            let at = (r + align - 1) & !(align - 1);
            self.map(
                at,
                at + span,
                first.prot,
                file_backing(file, first.pgoff),
                true,
                Caller::LdSo,
            );
            self.unmap(r, at, Caller::LdSo);
            self.unmap(at + span, r + len, Caller::LdSo);
            at
        };
        let bias = i128::from(start) - i128::from(first.vaddr);
        let at = |v: u64| (bias + i128::from(v)) as u64;
        let holes = img
            .segments
            .windows(2)
            .any(|w| w[0].vaddr + w[0].file_len != w[1].vaddr);
        if holes && img.segments.len() > 1 {
            let (s, e) = (at(first.vaddr + first.file_len), at(last.vaddr));
            self.protect(path, s, e, Prot::NONE)?;
        }
        let anon = Backing::Anon(AnonKind::Plain);
        for (i, seg) in img.segments.iter().enumerate() {
            let s = at(seg.vaddr);
            if i > 0 && seg.file_len > 0 {
                self.map(
                    s,
                    s + seg.file_len,
                    seg.prot,
                    file_backing(file, seg.pgoff),
                    true,
                    Caller::LdSo,
                );
            }
            if seg.bss_len() > 0 {
                let bss = s + seg.file_len;
                self.map(
                    bss,
                    s + seg.mem_len,
                    seg.prot,
                    anon.clone(),
                    true,
                    Caller::LdSo,
                );
            }
        }
        Ok(bias)
    }
}

impl Mm {
    /// `execve(path)`: resolves the program (as the kernel and ld.so would) through the
    /// registry, plans the whole new image, then replaces this address space with it
    /// (see [`Mm::exec_program`]). A missing, non-regular or bad executable,
    /// interpreter or library, or an image that does not fit, fails before anything
    /// changes.
    pub fn exec(&self, path: &Path) -> Result<(), Error> {
        let prog = self.files.program(path)?;
        self.exec_program(&prog);
        Ok(())
    }

    /// Plans `plan` (see [`Program::new`]) and, if it fits, replaces this address
    /// space with it; on error nothing changed.
    pub fn exec_plan(&self, plan: LoadPlan) -> Result<(), Error> {
        let prog = Program::new(&self.files, plan)?;
        self.exec_program(&prog);
        Ok(())
    }

    /// Replaces this address space with `prog`: the old VMAs are removed (one
    /// `remove_batch` per file), then every step of the exec sequence is replayed in
    /// order (see the [`crate::exec`] module docs), each one as the system call it
    /// stands for changes the tree and the reverse maps: a map links its VMA (merging
    /// with compatible neighbours, replacing what it overlays), an unmap or a protect
    /// splits what it cuts. Cannot fail: the plan was checked when `prog` was built.
    pub fn exec_program(&self, prog: &Program) {
        let mut st = self.state.lock();
        self.teardown(&mut st);
        for step in &prog.steps {
            self.replay_step(&mut st, step);
        }
        Self::set_new_image(&mut st, prog);
    }

    /// What an exec of `prog` leaves beside its areas: the executable's file, the
    /// mmap base, the program break and `start_stack`.
    fn set_new_image(st: &mut State, prog: &Program) {
        st.exe_file = Some(prog.objects[0].1.clone());
        st.mmap_base = prog.mmap_base;
        st.brk_start = prog.brk_start;
        st.brk = prog.heap_end.unwrap_or(prog.brk_start);
        st.start_stack = START_STACK;
    }

    /// Part `part` of [`Mm::exec_program`] cut into `parts` (at least 1)
    /// consecutive parts: part 0 tears the old image down, each part
    /// replays its share of the steps (`steps * part / parts` up to
    /// `steps * (part + 1) / parts`), and the last sets the heap and stack
    /// as the whole call does. Parts `0..parts` called in order change the
    /// maps exactly as one `exec_program` does; between two parts other
    /// address spaces may run theirs, as concurrent execs do (the predict
    /// recorder's staggered turns). `part >= parts` does nothing.
    pub fn exec_program_part(&self, prog: &Program, part: usize, parts: usize) {
        let parts = parts.max(1);
        if part >= parts {
            return;
        }
        let mut st = self.state.lock();
        if part == 0 {
            self.teardown(&mut st);
        }
        let n = prog.steps.len();
        for step in &prog.steps[n * part / parts..n * (part + 1) / parts] {
            self.replay_step(&mut st, step);
        }
        if part + 1 == parts {
            Self::set_new_image(&mut st, prog);
        }
    }

    pub(crate) fn replay_step(&self, st: &mut State, step: &ExecStep) {
        match step {
            ExecStep::Map {
                start,
                end,
                prot,
                backing,
                ..
            } => {
                let flags = VmFlags {
                    account: prot.write,
                    ..VmFlags::default()
                };
                let vma = Vma {
                    start: *start,
                    end: *end,
                    prot: *prot,
                    flags,
                    backing: backing.clone(),
                    link: None,
                };
                self.place(st, vec![vma], Why::Map);
            }
            ExecStep::Protect {
                start, end, prot, ..
            } => {
                let pieces: Vec<Vma> = self
                    .tree
                    .reader()
                    .range(*start, *end - 1)
                    .map(|(_, v)| {
                        let mut p = v.slice(v.start.max(*start), v.end.min(*end));
                        p.prot = *prot;
                        p.flags.account |= !p.flags.shared && prot.write;
                        p
                    })
                    .collect();
                if !pieces.is_empty() {
                    self.place(st, pieces, Why::Protect);
                }
            }
            ExecStep::Unmap { start, end, .. } => {
                self.replace(st, *start, *end, Vec::new(), Why::Unmap, (*start, *end))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_down_takes_the_highest_gap_that_fits() {
        let p = Path::new("/x");
        let mut pl = Planner::default();
        assert_eq!(
            pl.top_down(p, PAGE_SIZE, PAGE_SIZE).unwrap(),
            MMAP_BASE - PAGE_SIZE
        );
        pl.occupy(MMAP_BASE - 4 * PAGE_SIZE, MMAP_BASE);
        pl.occupy(MMAP_BASE - 10 * PAGE_SIZE, MMAP_BASE - 6 * PAGE_SIZE);
        // The 2-page hole between them fits 2 pages, not 3.
        assert_eq!(
            pl.top_down(p, 2 * PAGE_SIZE, PAGE_SIZE).unwrap(),
            MMAP_BASE - 6 * PAGE_SIZE
        );
        assert_eq!(
            pl.top_down(p, 3 * PAGE_SIZE, PAGE_SIZE).unwrap(),
            MMAP_BASE - 13 * PAGE_SIZE
        );
        assert!(matches!(
            pl.top_down(p, MMAP_BASE, PAGE_SIZE),
            Err(Error::BadLayout { .. })
        ));
        // Everything below taken: no room at all.
        pl.occupy(MMAP_MIN_ADDR, MMAP_BASE - 10 * PAGE_SIZE);
        assert!(pl.top_down(p, PAGE_SIZE, PAGE_SIZE).is_ok()); // the 2-page hole
        assert!(pl.top_down(p, 3 * PAGE_SIZE, PAGE_SIZE).is_err());
    }

    #[test]
    fn big_file_mappings_are_congruent_to_their_offset_mod_2mib() {
        let p = Path::new("/x");
        let pl = Planner::default();
        let at = pl.top_down_file(p, 3 << 20, 0).unwrap();
        assert_eq!(at % PMD_SIZE, 0);
        assert!(at + (3 << 20) <= MMAP_BASE);
        // Offset 1 MiB: the address is 1 MiB past a 2 MiB boundary.
        let at = pl.top_down_file(p, 4 << 20, 256).unwrap();
        assert_eq!(at % PMD_SIZE, 1 << 20);
        // Under 2 MiB: plain top-down.
        let at = pl.top_down_file(p, 1 << 20, 0).unwrap();
        assert_eq!(at, MMAP_BASE - (1 << 20));
        // The padded area's start already congruent: the mapping goes 2 MiB above
        // it, at the top of the padded area, as the kernel's top-down search does
        // (the address Linux 6.18 gave a 4 MiB request below 0x7ffff7c00000,
        // tests/remap.rs `thp_policy_reproduces_recorded_kernel_addresses`).
        let mut pl = Planner::default();
        pl.occupy(0x7fff_f7c0_0000, MMAP_BASE);
        assert_eq!(pl.top_down_file(p, 4 << 20, 0).unwrap(), 0x7fff_f780_0000);
        // A file range with no whole aligned 2 MiB block: plain top-down.
        assert_eq!(
            pl.top_down_file(p, 3 << 20, 1).unwrap(),
            0x7fff_f7c0_0000 - (3 << 20)
        );
        let pl = Planner::default();
        let at = pl.top_down_file(p, 1 << 20, 0).unwrap();
        assert_eq!(at, MMAP_BASE - (1 << 20));
    }

    #[test]
    fn occupy_and_release_keep_ranges_sorted_and_disjoint() {
        let mut pl = Planner::default();
        pl.occupy(0x10000, 0x20000);
        pl.occupy(0x30000, 0x40000);
        pl.occupy(0x18000, 0x38000);
        assert_eq!(
            pl.used,
            vec![(0x10000, 0x18000), (0x18000, 0x38000), (0x38000, 0x40000)]
        );
        assert!(pl.is_covered(0x10000, 0x40000));
        pl.release(0x20000, 0x30000);
        assert!(!pl.is_covered(0x10000, 0x40000));
        assert!(pl.is_free(0x20000, 0x30000));
        assert!(!pl.is_free(0x1f000, 0x21000));
    }
}
