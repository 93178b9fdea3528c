//! `[stack]`, `[heap]`, `[vdso]` and `[vvar]` as the running kernel names them after
//! `MAP_FIXED`, `munmap` and `mremap` over them, against the model.
//!
//! Each scenario runs in a forked child of this test process. The child's main
//! stack, heap and vdso are its own copies and unused by it (it runs on the test
//! thread's stack and makes only system calls), so it may map over them, unmap or
//! move them. It reads its `/proc/self/maps`, makes the scenario's calls, reads its
//! maps again and exits. The model is built from the first maps
//! ([`mm::Mm::build_from_maps`], with the real `start_stack` from `/proc/self/stat`),
//! makes the same calls (each `mremap` to the address the kernel chose), and must
//! answer each call as the kernel did and end with the kernel's maps, line for line.
//!
//! Where the kernel cannot be probed (no fork, no `/proc`, no `[heap]`), the test
//! says why on stderr and checks nothing else; it fails only on a difference.

use mm::maps::{describe_differences, diff_maps, parse_maps, MapsLine};
use mm::{CallPattern, Files, MapFlags, Mm, MremapFlags, Placement, Prot, PAGE_SIZE};
use rmap::{Design, Topology};
use std::ffi::CString;

/// One call a scenario makes.
#[derive(Clone, Debug)]
enum Op {
    /// `mmap(addr, len, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_FIXED)`.
    MapAnon { addr: u64, len: u64 },
    /// `mmap(addr, len, PROT_READ, MAP_PRIVATE|MAP_FIXED, fd of /bin/sh, 0)`.
    MapFile { addr: u64, len: u64 },
    /// `munmap(addr, len)`.
    Unmap { addr: u64, len: u64 },
    /// `mprotect(addr, len, PROT_READ)`.
    Protect { addr: u64, len: u64 },
    /// `madvise(addr, len, MADV_DONTFORK)`.
    DontFork { addr: u64, len: u64 },
    /// A `PROT_NONE` placeholder of `new_len` where the kernel likes, then
    /// `mremap(addr, len, new_len, MREMAP_MAYMOVE|MREMAP_FIXED, placeholder)`.
    Move { addr: u64, len: u64, new_len: u64 },
}

const MAPS_BYTES: usize = 1 << 20;
const RESULTS: usize = 16;

/// What a child leaves in the shared buffer: per op its result (the address, or
/// -errno) and, for a move, the placeholder's address; then its maps before and after.
struct Shared {
    base: *mut u8,
    len: usize,
}

impl Shared {
    fn new() -> Option<Shared> {
        let len = RESULTS * 16 + 2 * (MAPS_BYTES + 8);
        // SAFETY: a fresh anonymous shared mapping; no Rust object lives there.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        (p != libc::MAP_FAILED).then_some(Shared {
            base: p.cast(),
            len,
        })
    }

    fn results(&self) -> *mut i64 {
        self.base.cast()
    }

    /// The maps area `i` (0 before, 1 after): an 8-byte length, then the text.
    fn maps_area(&self, i: usize) -> *mut u8 {
        // SAFETY: inside the mapping (see `new`'s length).
        unsafe { self.base.add(RESULTS * 16 + i * (MAPS_BYTES + 8)) }
    }

    fn maps_text(&self, i: usize) -> String {
        let area = self.maps_area(i);
        // SAFETY: the child wrote a length no larger than MAPS_BYTES, then the text;
        // the child has exited, so nothing writes meanwhile.
        unsafe {
            let n = (area as *const u64).read_unaligned() as usize;
            let bytes = std::slice::from_raw_parts(area.add(8), n.min(MAPS_BYTES));
            String::from_utf8_lossy(bytes).into_owned()
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: the mapping `new` made, no longer used.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// In the child: reads /proc/self/maps into maps area `i`. System calls only.
///
/// # Safety
/// Called in the forked child, with `shared` mapped.
unsafe fn read_maps(shared: &Shared, i: usize, path: &CString) -> bool {
    let fd = libc::open(path.as_ptr(), libc::O_RDONLY);
    if fd < 0 {
        return false;
    }
    let area = shared.maps_area(i);
    let mut n = 0usize;
    loop {
        let r = libc::read(fd, area.add(8 + n).cast(), MAPS_BYTES - n);
        if r <= 0 {
            break;
        }
        n += r as usize;
        if n == MAPS_BYTES {
            break;
        }
    }
    libc::close(fd);
    (area as *mut u64).write_unaligned(n as u64);
    true
}

fn errno() -> i64 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0) as i64
}

/// In the child: makes `op`, returns its result and the placeholder (for a move).
///
/// # Safety
/// Called in the forked child: it changes the child's address space.
unsafe fn run_op(op: &Op, file_fd: i32) -> (i64, i64) {
    let anon = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    let mapped = |p: *mut libc::c_void| {
        if p == libc::MAP_FAILED {
            -errno()
        } else {
            p as i64
        }
    };
    match *op {
        Op::MapAnon { addr, len } => {
            let p = libc::mmap(
                addr as *mut _,
                len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                anon | libc::MAP_FIXED,
                -1,
                0,
            );
            (mapped(p), 0)
        }
        Op::MapFile { addr, len } => {
            let p = libc::mmap(
                addr as *mut _,
                len as usize,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_FIXED,
                file_fd,
                0,
            );
            (mapped(p), 0)
        }
        Op::Unmap { addr, len } => {
            let r = libc::munmap(addr as *mut _, len as usize);
            (if r == 0 { 0 } else { -errno() }, 0)
        }
        Op::Protect { addr, len } => {
            let r = libc::mprotect(addr as *mut _, len as usize, libc::PROT_READ);
            (if r == 0 { 0 } else { -errno() }, 0)
        }
        Op::DontFork { addr, len } => {
            let r = libc::madvise(addr as *mut _, len as usize, libc::MADV_DONTFORK);
            (if r == 0 { 0 } else { -errno() }, 0)
        }
        Op::Move { addr, len, new_len } => {
            let hole = libc::mmap(
                std::ptr::null_mut(),
                new_len as usize,
                libc::PROT_NONE,
                anon,
                -1,
                0,
            );
            if hole == libc::MAP_FAILED {
                return (-errno(), 0);
            }
            let p = libc::mremap(
                addr as *mut _,
                len as usize,
                new_len as usize,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                hole,
            );
            let r = mapped(p);
            if r < 0 {
                // Nothing moved: the placeholder goes (the model cannot tell its
                // flags from a neighbour's, which the maps file does not show).
                libc::munmap(hole, new_len as usize);
            }
            (r, hole as i64)
        }
    }
}

/// What the kernel did: each op's (result, placeholder), the maps before and after.
struct Probe {
    results: Vec<(i64, i64)>,
    before: String,
    after: String,
}

/// Forks a child that runs `ops` (see the module docs); `Err` says why the kernel
/// could not be probed.
fn probe(ops: &[Op]) -> Result<Probe, String> {
    assert!(ops.len() <= RESULTS);
    let shared = Shared::new().ok_or("no shared anonymous memory")?;
    let maps = CString::new("/proc/self/maps").unwrap();
    let sh = CString::new("/bin/sh").unwrap();
    // SAFETY: open of a NUL-terminated path.
    let file_fd = unsafe { libc::open(sh.as_ptr(), libc::O_RDONLY) };
    if file_fd < 0 {
        return Err("cannot open /bin/sh".into());
    }
    // SAFETY: the child makes system calls only (no allocation, no lock, no
    // unwinding: a multi-threaded parent's child may do no more) and ends in _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: in the child; `shared` is mapped, `ops` was built before the fork.
        unsafe {
            if !read_maps(&shared, 0, &maps) {
                libc::_exit(3);
            }
            for (i, op) in ops.iter().enumerate() {
                let (r, hole) = run_op(op, file_fd);
                shared.results().add(2 * i).write(r);
                shared.results().add(2 * i + 1).write(hole);
            }
            let ok = read_maps(&shared, 1, &maps);
            libc::_exit(if ok { 0 } else { 3 });
        }
    }
    // SAFETY: closing our own descriptor.
    unsafe { libc::close(file_fd) };
    if pid < 0 {
        return Err(format!("fork failed (errno {})", errno()));
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    if unsafe { libc::waitpid(pid, &mut status, 0) } != pid {
        return Err("waitpid failed".into());
    }
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(format!(
            "the probe child did not finish (status {status:#x})"
        ));
    }
    let results = (0..ops.len())
        // SAFETY: the child wrote these before exiting.
        .map(|i| unsafe {
            (
                shared.results().add(2 * i).read(),
                shared.results().add(2 * i + 1).read(),
            )
        })
        .collect();
    Ok(Probe {
        results,
        before: shared.maps_text(0),
        after: shared.maps_text(1),
    })
}

/// `/proc/self/stat` field 28, `startstack` (the same in a forked child).
fn start_stack() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_comm = &stat[stat.rfind(')')? + 2..];
    // Field 3 is the first after the command; startstack is field 28.
    after_comm.split_whitespace().nth(25)?.parse().ok()
}

/// Runs one scenario on the kernel and on the model; returns the differences.
fn scenario(name: &str, ops: &[Op], start_stack: u64) -> Result<Vec<String>, String> {
    let k = probe(ops)?;
    let before = parse_maps(&k.before).ok_or("unparsable maps before")?;
    let after = parse_maps(&k.after).ok_or("unparsable maps after")?;
    let files = Files::new(Design::Linux, Topology::Os, CallPattern::PerVma);
    let mm = Mm::new(files.clone());
    mm.build_from_maps(&before)
        .map_err(|e| format!("the model cannot hold this process's maps: {e}"))?;
    mm.set_start_stack(start_stack);
    let sh = files.open(std::path::Path::new("/bin/sh")).unwrap();
    let fixed = MapFlags {
        fixed: true,
        shared: false,
    };
    let mut diffs = Vec::new();
    for (op, &(kernel, hole)) in ops.iter().zip(&k.results) {
        let model: Result<u64, mm::Error> = match *op {
            Op::MapAnon { addr, len } => mm.mmap(addr, len, Prot::RW, fixed, None),
            Op::MapFile { addr, len } => mm.mmap(addr, len, Prot::R, fixed, Some((&sh, 0))),
            Op::Unmap { addr, len } => mm.munmap(addr, len).map(|()| 0),
            Op::Protect { addr, len } => mm.mprotect(addr, len, Prot::R).map(|()| 0),
            Op::DontFork { addr, len } => mm.madvise(addr, len, mm::Advice::DontFork).map(|()| 0),
            Op::Move { addr, len, new_len } => mm
                .mmap(hole as u64, new_len, Prot::NONE, fixed, None)
                .and_then(|_| {
                    let f = MremapFlags {
                        may_move: true,
                        fixed: true,
                        dont_unmap: false,
                    };
                    let moved = mm.mremap(addr, len, new_len, f, hole as u64, Placement::default());
                    if moved.is_err() {
                        mm.munmap(hole as u64, new_len).unwrap();
                    }
                    moved
                }),
        };
        let same = match (&model, kernel) {
            (Ok(m), k) if k >= 0 => {
                matches!(
                    op,
                    Op::Unmap { .. } | Op::Protect { .. } | Op::DontFork { .. }
                ) || *m == k as u64
            }
            (Err(_), k) => k < 0,
            _ => false,
        };
        if !same {
            diffs.push(format!(
                "{name}: {op:x?}: kernel {kernel:#x}, model {model:x?}"
            ));
        }
    }
    mm.check_invariants().unwrap();
    let (model_only, kernel_only) = diff_maps(&mm.layout().maps(), &after);
    diffs.extend(
        describe_differences(&model_only, &kernel_only)
            .into_iter()
            .map(|d| format!("{name}: {d}")),
    );
    Ok(diffs)
}

fn area<'a>(maps: &'a [MapsLine], name: &str) -> Option<&'a MapsLine> {
    maps.iter().find(|l| l.name == name)
}

#[test]
fn names_after_map_fixed_munmap_and_mremap_are_the_running_kernels() {
    let skip = |why: &str| eprintln!("names: SKIPPED, the kernel cannot be probed here: {why}");
    let Some(ss) = start_stack() else {
        return skip("no /proc/self/stat startstack");
    };
    let Some(maps) = std::fs::read_to_string("/proc/self/maps")
        .ok()
        .and_then(|t| parse_maps(&t))
    else {
        return skip("no readable /proc/self/maps");
    };
    let Some(stack) = area(&maps, "[stack]").cloned() else {
        return skip("no [stack] line");
    };
    let p = PAGE_SIZE;
    let ss_page = ss & !(p - 1);
    if !(stack.start + 8 * p <= ss_page && ss < stack.end) {
        return skip("start_stack is not in the stack's upper part");
    }
    let top = ss_page - p; // an area from here up holds start_stack
    let mut scenarios: Vec<(&str, Vec<Op>)> = vec![
        (
            "anon over the stack's bottom",
            vec![Op::MapAnon {
                addr: stack.start,
                len: 4 * p,
            }],
        ),
        (
            "anon over the stack's top",
            vec![Op::MapAnon {
                addr: top,
                len: stack.end - top,
            }],
        ),
        (
            "anon over the whole stack",
            vec![Op::MapAnon {
                addr: stack.start,
                len: stack.end - stack.start,
            }],
        ),
        (
            "file over the stack's top",
            vec![Op::MapFile {
                addr: top,
                len: stack.end - top,
            }],
        ),
        (
            "munmap of the stack's bottom",
            vec![Op::Unmap {
                addr: stack.start,
                len: 4 * p,
            }],
        ),
        (
            "munmap of the stack's top",
            vec![Op::Unmap {
                addr: top,
                len: stack.end - top,
            }],
        ),
        (
            "mremap of the stack's top away",
            vec![Op::Move {
                addr: top,
                len: stack.end - top,
                new_len: stack.end - top + p,
            }],
        ),
        (
            "mremap of the stack's bottom away",
            vec![Op::Move {
                addr: stack.start,
                len: 2 * p,
                new_len: 3 * p,
            }],
        ),
    ];
    match area(&maps, "[heap]") {
        Some(heap) if heap.end - heap.start >= 4 * p => {
            let h = heap.start;
            scenarios.extend([
                (
                    "anon inside the heap",
                    vec![Op::MapAnon {
                        addr: h + p,
                        len: p,
                    }],
                ),
                (
                    "munmap of the heap's first page",
                    vec![Op::Unmap { addr: h, len: p }],
                ),
                (
                    "mremap of the heap's first page away",
                    vec![Op::Move {
                        addr: h,
                        len: p,
                        new_len: 2 * p,
                    }],
                ),
            ]);
        }
        _ => skip("no [heap] of 4 pages or more: its scenarios only"),
    }
    for name in ["[vdso]", "[vvar]"] {
        let Some(v) = area(&maps, name).cloned() else {
            skip(&format!("no {name}: its scenarios only"));
            continue;
        };
        let len = v.end - v.start;
        scenarios.extend([
            (
                "munmap of a whole special mapping",
                vec![Op::Unmap { addr: v.start, len }],
            ),
            (
                "anon over a whole special mapping",
                vec![Op::MapAnon { addr: v.start, len }],
            ),
            (
                "mremap of a whole special mapping",
                vec![Op::Move {
                    addr: v.start,
                    len,
                    new_len: len,
                }],
            ),
            (
                "munmap of a special mapping's first page",
                vec![Op::Unmap {
                    addr: v.start,
                    len: p,
                }],
            ),
            (
                "anon over a special mapping's first page",
                vec![Op::MapAnon {
                    addr: v.start,
                    len: p,
                }],
            ),
            (
                "anon over a special mapping's last page and past it",
                vec![Op::MapAnon {
                    addr: v.end - p,
                    len: 2 * p,
                }],
            ),
            (
                "mprotect of a special mapping's first page",
                vec![Op::Protect {
                    addr: v.start,
                    len: p,
                }],
            ),
            (
                "mprotect of a whole special mapping",
                vec![Op::Protect { addr: v.start, len }],
            ),
            (
                "madvise of a special mapping's first page",
                vec![Op::DontFork {
                    addr: v.start,
                    len: p,
                }],
            ),
            (
                "madvise of a whole special mapping",
                vec![Op::DontFork { addr: v.start, len }],
            ),
            (
                "mremap of a special mapping's first page",
                vec![Op::Move {
                    addr: v.start,
                    len: p,
                    new_len: p,
                }],
            ),
            (
                "mremap growing a special mapping",
                vec![Op::Move {
                    addr: v.start,
                    len,
                    new_len: len + p,
                }],
            ),
        ]);
    }
    let mut diffs = Vec::new();
    let mut ran = 0;
    for (name, ops) in &scenarios {
        match scenario(name, ops, ss) {
            Ok(d) => {
                ran += 1;
                diffs.extend(d);
            }
            Err(why) => skip(&format!("{name}: {why}")),
        }
    }
    eprintln!(
        "names: {ran} of {} scenarios compared with the running kernel",
        scenarios.len()
    );
    assert!(diffs.is_empty(), "{diffs:#?}");
}
