//! Random mmap / munmap / mprotect / brk / fork / vfork (`clone_vm`) / exec /
//! exit sequences over a few processes sharing three synthetic files (and, when
//! present, the real /bin/true). After every operation:
//! - each address space passes `Mm::check_invariants` (no two VMAs overlap; every
//!   file VMA is in its own file's reverse map exactly once, in no other);
//! - each space's user count is the number of live processes using it;
//! - the reverse maps hold exactly the live spaces' file VMAs (nothing left
//!   behind by munmap, exit, exec out of a shared space, or a dropped process);
//! - a failed call changed nothing.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mm::layout::{ELF_ET_DYN_BASE, MMAP_BASE, MMAP_MIN_ADDR};
use mm::{CallPattern, Files, MapFlags, Mm, Process, Prot, PAGE_SIZE};
use rmap::{Design, Interval, Topology};
use std::path::Path;

/// An address: a page in one of three windows where mappings collide (the
/// bottom of the mmap range, just below `MMAP_BASE` where top-down mmap
/// places things, the PIE/heap area), or any raw value.
#[derive(Arbitrary, Clone, Copy, Debug)]
enum Addr {
    Low(u8),
    Top(u8),
    Heap(u8),
    Raw(u64),
}

impl Addr {
    fn get(self) -> u64 {
        match self {
            Addr::Low(p) => MMAP_MIN_ADDR + u64::from(p) * PAGE_SIZE,
            Addr::Top(p) => MMAP_BASE - (u64::from(p) + 1) * PAGE_SIZE,
            Addr::Heap(p) => ELF_ET_DYN_BASE + u64::from(p) * PAGE_SIZE,
            Addr::Raw(a) => a,
        }
    }
}

#[derive(Arbitrary, Clone, Copy, Debug)]
enum Len {
    Pages(u8),
    Raw(u64),
}

impl Len {
    fn get(self) -> u64 {
        match self {
            Len::Pages(p) => u64::from(p % 32) * PAGE_SIZE,
            Len::Raw(l) => l,
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Op {
    Mmap {
        p: u8,
        addr: Addr,
        len: Len,
        prot: u8,
        fixed: bool,
        shared: bool,
        file: Option<(u8, u64)>,
    },
    Munmap {
        p: u8,
        addr: Addr,
        len: Len,
    },
    Mprotect {
        p: u8,
        addr: Addr,
        len: Len,
        prot: u8,
    },
    Brk {
        p: u8,
        delta: i16,
    },
    BrkRaw {
        p: u8,
        to: u64,
    },
    Fork {
        p: u8,
    },
    CloneVm {
        p: u8,
    },
    Exec {
        p: u8,
    },
    Exit {
        p: u8,
    },
    /// `Mm::exit`: the space emptied whatever uses it.
    Teardown {
        p: u8,
    },
    Fault {
        p: u8,
        addr: Addr,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    design: u8,
    ops: Vec<Op>,
}

fn prot(bits: u8) -> Prot {
    Prot::new(bits & 1 != 0, bits & 2 != 0, bits & 4 != 0)
}

fn shape(mm: &Mm) -> Vec<(u64, u64, Prot, Option<u64>)> {
    mm.vmas()
        .iter()
        .map(|v| (v.start, v.end, v.prot, v.rmap_id()))
        .collect()
}

fn check_all(files: &Files, procs: &[Process]) {
    let mut linked = 0usize;
    let mut spaces: Vec<&std::sync::Arc<Mm>> = Vec::new();
    for p in procs {
        if spaces.iter().any(|s| std::sync::Arc::ptr_eq(s, p.mm())) {
            continue;
        }
        spaces.push(p.mm());
        let mm = p.mm();
        if let Err(e) = mm.check_invariants() {
            panic!("process {}: {e}", mm.id());
        }
        let users = procs
            .iter()
            .filter(|q| std::sync::Arc::ptr_eq(q.mm(), mm))
            .count();
        assert_eq!(mm.users(), users, "space {}: user count", mm.id());
        linked += mm.vmas().iter().filter(|v| v.file().is_some()).count();
    }
    let mut entries = 0usize;
    // Registered files, and the shmem objects (shared anonymous memory) the spaces
    // map, which are not registered.
    let mut all = files.all();
    for mm in &spaces {
        for v in mm.vmas() {
            if let Some((f, _)) = v.file() {
                if !all.iter().any(|g| std::sync::Arc::ptr_eq(g, f)) {
                    all.push(f.clone());
                }
            }
        }
    }
    for f in all {
        f.rmap().walk(Interval::FULL, &mut |_, _| entries += 1);
        assert_eq!(f.rmap().len(), {
            let mut n = 0;
            f.rmap().walk(Interval::FULL, &mut |_, _| n += 1);
            n
        });
    }
    assert_eq!(entries, linked, "reverse-map entries vs live file VMAs");
}

fn run(input: Input) {
    let design = Design::ALL[usize::from(input.design) % Design::ALL.len()];
    let pattern = CallPattern::ALL[usize::from(input.design / 128)];
    let files = Files::new(design, Topology::Os, pattern);
    let synth: Vec<_> = (0..3)
        .map(|i| files.register(Path::new(&format!("/fuzz/file{i}")), 64))
        .collect();
    let mut procs: Vec<Process> = vec![Process::new(files.clone())];
    let mut prog = None;
    let pick = |procs: &[Process], p: u8| usize::from(p) % procs.len().max(1);
    for op in input.ops.iter().take(64) {
        if procs.is_empty() {
            procs.push(Process::new(files.clone()));
        }
        let i = match *op {
            Op::Mmap { p, .. }
            | Op::Munmap { p, .. }
            | Op::Mprotect { p, .. }
            | Op::Brk { p, .. }
            | Op::BrkRaw { p, .. }
            | Op::Fork { p }
            | Op::CloneVm { p }
            | Op::Exec { p }
            | Op::Exit { p }
            | Op::Teardown { p }
            | Op::Fault { p, .. } => pick(&procs, p),
        };
        let space = procs[i].mm().clone();
        let mm = &*space;
        let before = shape(mm);
        let mut child = None;
        let mut remove = false;
        let failed = match *op {
            Op::Mmap {
                addr,
                len,
                prot: pr,
                fixed,
                shared,
                file,
                ..
            } => {
                let file = file.map(|(f, off)| (&synth[usize::from(f) % synth.len()], off % 256));
                let r = mm.mmap(
                    addr.get(),
                    len.get(),
                    prot(pr),
                    MapFlags { fixed, shared },
                    file,
                );
                if let Ok(start) = r {
                    let v = mm.find(start).expect("the new mapping is there");
                    assert_eq!(v.prot, prot(pr));
                }
                r.is_err()
            }
            Op::Munmap { addr, len, .. } => {
                let (a, l) = (addr.get(), len.get());
                let r = mm.munmap(a, l);
                if r.is_ok() {
                    assert!(mm.find(a).is_none(), "munmap left {a:#x} mapped");
                }
                r.is_err()
            }
            Op::Mprotect {
                addr,
                len,
                prot: pr,
                ..
            } => {
                let (a, l) = (addr.get(), len.get());
                let r = mm.mprotect(a, l, prot(pr));
                if r.is_ok() {
                    assert_eq!(
                        mm.find(a).expect("mprotected page is mapped").prot,
                        prot(pr)
                    );
                }
                r.is_err()
            }
            Op::Brk { delta, .. } => {
                let (_, cur) = mm.brk_range();
                let want = cur.wrapping_add_signed(i64::from(delta) * 512);
                let got = mm.brk(want);
                assert!(
                    got == want || got == cur,
                    "brk returns the new or the old break"
                );
                false
            }
            Op::BrkRaw { to, .. } => {
                let (_, cur) = mm.brk_range();
                let got = mm.brk(to);
                assert!(got == to || got == cur);
                false
            }
            Op::Fork { .. } => {
                if procs.len() < 6 {
                    let c = procs[i].fork();
                    assert_eq!(shape(c.mm()).len(), before.len());
                    child = Some(c);
                }
                false
            }
            Op::CloneVm { .. } => {
                if procs.len() < 6 {
                    child = Some(procs[i].clone_vm());
                }
                false
            }
            Op::Exec { .. } => {
                if prog.is_none() {
                    prog = Some(files.program(Path::new("/bin/true")).ok());
                }
                if let Some(Some(p)) = &prog {
                    let others = procs[i].mm().users() - 1;
                    procs[i].exec_program(p);
                    assert!(!procs[i].mm().is_empty());
                    // A space another process uses is left as it was.
                    if others > 0 {
                        assert_eq!(shape(mm), before, "exec changed a shared space");
                    }
                }
                false
            }
            Op::Exit { .. } => {
                remove = true;
                false
            }
            Op::Teardown { .. } => {
                mm.exit();
                assert!(mm.is_empty());
                false
            }
            Op::Fault { addr, .. } => {
                let _ = mm.page_fault(addr.get(), mm::Access::Read);
                false
            }
        };
        if failed {
            assert_eq!(shape(mm), before, "a failed call changed the address space");
        }
        if let Some(c) = child {
            procs.push(c);
        }
        if remove {
            let shared = mm.users() > 1;
            procs.swap_remove(i).exit();
            // Released by its last user, a space is empty; else untouched.
            if shared {
                assert_eq!(shape(mm), before, "an exit changed a shared space");
            } else {
                assert!(mm.is_empty());
            }
        }
        check_all(&files, &procs);
    }
    drop(procs);
    for f in files.all() {
        assert!(
            f.rmap().is_empty(),
            "{}: entries left after every process went",
            f.path().display()
        );
    }
}

fuzz_target!(|input: Input| run(input));
