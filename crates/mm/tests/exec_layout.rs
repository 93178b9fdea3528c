//! exec plans and checks the whole new image before it touches the old one.
//!
//! Crafted ELF files (the reproducers of the issues, and every single-byte change of
//! the ELF header and program headers of `/bin/true` and of `libc.so.6`, each byte set
//! to several values) either fail with the old address space and every reverse map
//! exactly as they were, or succeed with `check_invariants` clean and leave no
//! reverse-map entry behind after `exit`. Files that are not regular files fail at
//! once.

use mm::elf::ElfImage;
use mm::layout::ELF_ET_DYN_BASE;
use mm::ldso::{LoadPlan, SearchPath};
use mm::{Backing, CallPattern, Error, Files, Linkage, Mm, Prot};
use rmap::{Design, Topology};
use std::path::{Path, PathBuf};
use std::sync::Arc;

type Shape = Vec<(u64, u64, Prot, Option<(PathBuf, u64)>, Option<u64>)>;

fn shape(mm: &Mm) -> Shape {
    mm.vmas()
        .iter()
        .map(|v| {
            (
                v.start,
                v.end,
                v.prot,
                v.file().map(|(f, p)| (f.path().to_path_buf(), p)),
                v.rmap_id(),
            )
        })
        .collect()
}

fn rmap_lens(files: &Files) -> Vec<(PathBuf, usize)> {
    files
        .all()
        .iter()
        .map(|f| (f.path().to_path_buf(), f.rmap().len()))
        .collect()
}

/// Linux's calls for the Linux design, batched for aspace: both patterns covered.
fn pattern_for(design: Design) -> CallPattern {
    if design == Design::Aspace {
        CallPattern::Batched
    } else {
        CallPattern::PerVma
    }
}

/// A process that has exec'd `/bin/sleep`: the old image every failed exec must keep.
fn old_image(design: Design) -> (Arc<Files>, Mm) {
    let files = Files::new(design, Topology::Os, pattern_for(design));
    let mm = Mm::new(files.clone());
    mm.exec(Path::new("/bin/sleep")).unwrap();
    (files, mm)
}

/// Execs `plan` (or reports the parse error `parsed`) in a process that ran sleep.
/// Returns whether exec succeeded. Panics on any broken promise.
fn try_exec(files: &Arc<Files>, mm: &Mm, plan: Result<LoadPlan, Error>, what: &str) -> bool {
    let before = shape(mm);
    let lens: Vec<_> = rmap_lens(files)
        .into_iter()
        .filter(|(p, _)| {
            before
                .iter()
                .any(|v| v.3.as_ref().is_some_and(|f| &f.0 == p))
        })
        .collect();
    let result = plan.and_then(|p| mm.exec_plan(p));
    match result {
        Err(e) => {
            assert!(e.errno() > 0 && !e.to_string().is_empty(), "{what}: {e:?}");
            assert_eq!(
                shape(mm),
                before,
                "{what}: failed exec ({e}) changed the space"
            );
            let after: Vec<_> = rmap_lens(files)
                .into_iter()
                .filter(|(p, _)| lens.iter().any(|(q, _)| q == p))
                .collect();
            assert_eq!(
                after, lens,
                "{what}: failed exec ({e}) changed a reverse map"
            );
            mm.check_invariants()
                .unwrap_or_else(|e| panic!("{what}: after failed exec: {e}"));
            false
        }
        Ok(()) => {
            mm.check_invariants()
                .unwrap_or_else(|e| panic!("{what}: after exec: {e}"));
            true
        }
    }
}

fn true_plan() -> LoadPlan {
    LoadPlan::resolve(Path::new("/bin/true"), &SearchPath::default()).unwrap()
}

/// `/bin/true`'s bytes and the file offset of its `PT_LOAD` program headers.
fn true_bytes() -> (Vec<u8>, Vec<usize>) {
    let data = std::fs::read("/bin/true").unwrap();
    (data.clone(), load_phdrs(&data))
}

fn load_phdrs(data: &[u8]) -> Vec<usize> {
    let phoff = u64::from_le_bytes(data[32..40].try_into().unwrap()) as usize;
    let phnum = u16::from_le_bytes(data[56..58].try_into().unwrap()) as usize;
    (0..phnum)
        .map(|i| phoff + 56 * i)
        .filter(|&o| u32::from_le_bytes(data[o..o + 4].try_into().unwrap()) == 1)
        .collect()
}

fn plan_with_exe(data: &[u8]) -> Result<LoadPlan, Error> {
    let path = std::fs::canonicalize("/bin/true").unwrap();
    let exe = ElfImage::parse(&path, data)?;
    LoadPlan::resolve_image(Arc::new(exe), &SearchPath::default())
}

#[test]
fn last_pt_load_vaddr_top_byte_0xff_fails_cleanly() {
    for design in [Design::Linux, Design::Aspace] {
        let (files, mm) = old_image(design);
        let (data, loads) = true_bytes();
        let last = *loads.last().unwrap();
        // p_vaddr is at +16; its top byte at +23.
        let mut one = data.clone();
        one[last + 23] = 0xff;
        assert!(!try_exec(&files, &mm, plan_with_exe(&one), "one 0xff byte"));
        // Three such bytes (p_vaddr, p_paddr, p_memsz high bytes).
        let mut three = one.clone();
        three[last + 22] = 0xff;
        three[last + 21] = 0xff;
        assert!(!try_exec(&files, &mm, plan_with_exe(&three), "three bytes"));
        let mut wrap = data.clone();
        for b in &mut wrap[last + 16..last + 24] {
            *b = 0xff; // p_vaddr = -1: the bias arithmetic would wrap
        }
        assert!(!try_exec(
            &files,
            &mm,
            plan_with_exe(&wrap),
            "wrapping vaddr"
        ));
        mm.exit();
        assert!(
            files.all().iter().all(|f| f.rmap().is_empty()),
            "no stray entry"
        );
    }
}

#[test]
fn et_exec_at_zero_is_below_mmap_min_addr() {
    let (files, mm) = old_image(Design::Linux);
    let (mut data, _) = true_bytes();
    data[16] = 2; // ET_EXEC: the segments go at their link addresses, from 0
    let e = plan_with_exe(&data)
        .and_then(|p| mm.exec_plan(p))
        .unwrap_err();
    assert!(matches!(e, Error::BadLayout { .. }), "{e}");
    assert!(!try_exec(&files, &mm, plan_with_exe(&data), "ET_EXEC at 0"));
}

/// Every byte of the ELF header and the program header table of an object, set to
/// each of a few values.
fn corruptions(data: &[u8]) -> Vec<(usize, u8)> {
    let phoff = u64::from_le_bytes(data[32..40].try_into().unwrap()) as usize;
    let phnum = u16::from_le_bytes(data[56..58].try_into().unwrap()) as usize;
    let mut out = Vec::new();
    for i in (0..64).chain(phoff..phoff + 56 * phnum) {
        for v in [
            0x00,
            0xff,
            0x7f,
            data[i] ^ 0x01,
            data[i] ^ 0x80,
            data[i] ^ 0x10,
        ] {
            if v != data[i] {
                out.push((i, v));
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[test]
fn every_single_byte_corruption_of_bin_true_headers() {
    let (files, mm) = old_image(Design::Linux);
    let (data, _) = true_bytes();
    let (mut ok, mut failed) = (0, 0);
    for (i, v) in corruptions(&data) {
        let mut d = data.clone();
        d[i] = v;
        if try_exec(
            &files,
            &mm,
            plan_with_exe(&d),
            &format!("byte {i} = {v:#x}"),
        ) {
            ok += 1;
            mm.exit();
            assert!(
                files.all().iter().all(|f| f.rmap().is_empty()),
                "byte {i} = {v:#x}: stray entry after exit"
            );
            mm.exec(Path::new("/bin/sleep")).unwrap();
        } else {
            failed += 1;
        }
    }
    eprintln!("/bin/true: {ok} corruptions exec'd, {failed} refused cleanly");
    assert!(ok > 0 && failed > 0);
}

#[test]
fn every_single_byte_corruption_of_libc_headers() {
    let (files, mm) = old_image(Design::Aspace);
    let base = true_plan();
    let li = base
        .libs
        .iter()
        .position(|l| l.path.ends_with("libc.so.6"))
        .unwrap();
    let path = base.libs[li].path.clone();
    // Only the headers are read: the first page holds them.
    let data = std::fs::read(&path).unwrap();
    let (mut ok, mut failed) = (0, 0);
    for (i, v) in corruptions(&data) {
        let mut d = data.clone();
        d[i] = v;
        let plan = ElfImage::parse(&path, &d).map(|lib| {
            let mut p = base.clone();
            p.libs[li] = Arc::new(lib);
            p
        });
        if try_exec(&files, &mm, plan, &format!("libc byte {i} = {v:#x}")) {
            ok += 1;
            mm.exit();
            assert!(files.all().iter().all(|f| f.rmap().is_empty()));
            mm.exec(Path::new("/bin/sleep")).unwrap();
        } else {
            failed += 1;
        }
    }
    eprintln!("libc: {ok} corruptions exec'd, {failed} refused cleanly");
    assert!(ok > 0 && failed > 0);
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("aspace-exec-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `/bin/true` with its `PT_INTERP` replaced by `interp` (which must fit).
fn with_interp(interp: &str) -> Vec<u8> {
    let mut data = std::fs::read("/bin/true").unwrap();
    let phoff = u64::from_le_bytes(data[32..40].try_into().unwrap()) as usize;
    let phnum = u16::from_le_bytes(data[56..58].try_into().unwrap()) as usize;
    let ph = (0..phnum)
        .map(|i| phoff + 56 * i)
        .find(|&o| u32::from_le_bytes(data[o..o + 4].try_into().unwrap()) == 3)
        .expect("PT_INTERP");
    let off = u64::from_le_bytes(data[ph + 8..ph + 16].try_into().unwrap()) as usize;
    let len = u64::from_le_bytes(data[ph + 32..ph + 40].try_into().unwrap()) as usize;
    assert!(interp.len() < len);
    data[off..off + interp.len()].copy_from_slice(interp.as_bytes());
    data[off + interp.len()] = 0;
    data
}

#[test]
fn non_regular_files_are_refused_at_once() {
    let (files, mm) = old_image(Design::Linux);
    // Short paths: they must fit in /bin/true's PT_INTERP.
    let dir = Path::new("/tmp").join(format!("asd{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = Path::new("/tmp").join(format!("asf{}", std::process::id()));
    let _ = std::fs::remove_file(&fifo);
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    let mut targets = vec![PathBuf::from("/dev/zero"), dir.clone()];
    if made {
        targets.push(fifo.clone());
    } else {
        eprintln!("mkfifo unavailable: FIFO case skipped");
    }
    for t in &targets {
        // As the binary.
        let before = shape(&mm);
        let e = mm.exec(t).unwrap_err();
        assert!(matches!(e, Error::NotRegular { .. }), "{t:?}: {e}");
        assert_eq!(e.errno(), mm::error::EACCES);
        assert_eq!(shape(&mm), before);
        // As PT_INTERP, directly and through a symlink.
        let link = Path::new("/tmp").join(format!("asl{}", std::process::id()));
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(t, &link).unwrap();
        for interp in [t.clone(), link.clone()] {
            let bin = dir.join("prog");
            std::fs::write(&bin, with_interp(interp.to_str().unwrap())).unwrap();
            let e = mm.exec(&bin).unwrap_err();
            assert!(matches!(e, Error::NotRegular { .. }), "{interp:?}: {e}");
            assert_eq!(shape(&mm), before);
        }
        std::fs::remove_file(&link).unwrap();
    }
    mm.check_invariants().unwrap();
    drop(files);
    let _ = std::fs::remove_file(&fifo);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn huge_sparse_files_are_answered_from_their_headers() {
    let (_files, mm) = old_image(Design::Linux);
    let dir = tmpdir("huge");
    // 64 GiB of zeros (sparse): reading it whole would exhaust memory.
    let zeros = dir.join("zeros");
    std::fs::File::create(&zeros)
        .unwrap()
        .set_len(64 << 30)
        .unwrap();
    let e = mm.exec(&zeros).unwrap_err();
    assert!(matches!(e, Error::NotElf { .. }), "{e}");
    // /bin/true's bytes followed by 64 GiB of holes: a valid program.
    let big = dir.join("big");
    std::fs::write(&big, std::fs::read("/bin/true").unwrap()).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&big)
        .unwrap()
        .set_len(64 << 30)
        .unwrap();
    mm.exec(&big).unwrap();
    mm.check_invariants().unwrap();
    mm.exit();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 14 items 1-3 on a crafted PIE with 64 KiB alignment (holes between its
/// segments) and on the machine's static-pie and ld.so.
#[test]
fn pie_alignment_holes_and_static_pie_placement() {
    let files = Files::new(Design::Linux, Topology::Os, CallPattern::PerVma);
    let mm = Mm::new(files.clone());
    let dir = tmpdir("pie");
    let src = dir.join("hole.c");
    std::fs::write(&src, "int main(void){return 0;}\n").unwrap();
    let bin = dir.join("hole_pie");
    let built = std::process::Command::new("cc")
        .args(["-x", "c", "-o"])
        .arg(&bin)
        .arg(&src)
        .arg("-Wl,-z,max-page-size=0x10000")
        .status()
        .is_ok_and(|s| s.success());
    if built {
        mm.exec(&bin).unwrap();
        mm.check_invariants().unwrap();
        let canon = std::fs::canonicalize(&bin).unwrap();
        let own: Vec<_> = mm
            .vmas()
            .into_iter()
            .filter(|v| v.file().is_some_and(|(f, _)| f.path() == canon))
            .collect();
        // The kernel's base: ELF_ET_DYN_BASE rounded down to 64 KiB.
        assert_eq!(own[0].start, 0x5555_5555_0000);
        assert!(
            own.iter().all(|v| v.prot != Prot::NONE),
            "the kernel leaves holes unmapped: {own:?}"
        );
        assert!(own.windows(2).any(|w| w[0].end < w[1].start), "holes stay");
    } else {
        eprintln!("no C compiler: hole_pie case skipped");
    }
    for p in ["/sbin/ldconfig", "/lib64/ld-linux-x86-64.so.2"] {
        if !Path::new(p).exists() {
            continue;
        }
        let prog = files.program(Path::new(p)).unwrap();
        assert_eq!(prog.linkage(), Linkage::StaticPie);
        mm.exec_program(&prog);
        mm.check_invariants().unwrap();
        let (brk_start, _) = mm.brk_range();
        assert_eq!(
            brk_start,
            ELF_ET_DYN_BASE + 0x1000,
            "{p}: brk at ELF_ET_DYN_BASE"
        );
        let first = mm
            .vmas()
            .into_iter()
            .find(|v| matches!(&v.backing, Backing::File { .. }))
            .unwrap();
        assert!(first.start > 0x7f00_0000_0000, "{p}: loaded top-down");
        // No RELRO at exec: nothing relocated the program yet.
        let ro_after_rw = mm.vmas().windows(2).any(|w| {
            w[0].file().is_some()
                && w[1].file().is_some()
                && w[0].prot == Prot::R
                && w[1].prot == Prot::RW
                && w[0].flags.account
        });
        assert!(!ro_after_rw, "{p}: RELRO applied at exec");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// PT_LOADs with no bytes in memory (p_filesz = p_memsz = 0; the mm_exec fuzz target
/// found one that made an empty reservation and panicked in the replay, see
/// `fuzz_found_empty_load_as_libc`): every PT_LOAD emptied, one among others, and
/// the only one, as the program and as libc: a clean error or a valid image.
#[test]
fn zero_size_pt_loads_map_nothing() {
    let (files, mm) = old_image(Design::Linux);
    let (data, loads) = true_bytes();
    let base = true_plan();
    let li = base
        .libs
        .iter()
        .position(|l| l.path.ends_with("libc.so.6"))
        .unwrap();
    let libc_path = base.libs[li].path.clone();
    let mut all = data.clone();
    for &o in &loads {
        all[o + 32..o + 48].fill(0); // p_filesz, p_memsz
    }
    let mut one = data.clone();
    one[loads[1] + 32..loads[1] + 48].fill(0);
    // A single PT_LOAD (the others made PT_NULL), empty.
    let mut single = all.clone();
    for &o in &loads[1..] {
        single[o..o + 4].fill(0);
    }
    let phoff = u64::from_le_bytes(data[32..40].try_into().unwrap()) as usize;
    let phnum = u16::from_le_bytes(data[56..58].try_into().unwrap()) as usize;
    for o in (0..phnum).map(|i| phoff + 56 * i) {
        if single[o..o + 4] == 0x6474_e552u32.to_le_bytes() {
            single[o..o + 4].fill(0); // no PT_GNU_RELRO either
        }
    }
    for (what, d) in [
        ("every PT_LOAD empty", &all),
        ("one PT_LOAD empty", &one),
        ("the only PT_LOAD empty", &single),
    ] {
        try_exec(&files, &mm, plan_with_exe(d), what);
        let plan = ElfImage::parse(&libc_path, d).map(|lib| {
            let mut p = base.clone();
            p.libs[li] = Arc::new(lib);
            p
        });
        if try_exec(&files, &mm, plan, what) {
            mm.exec(Path::new("/bin/sleep")).unwrap();
        }
    }
    let e = plan_with_exe(&all).unwrap_err();
    assert!(matches!(e, Error::Malformed { .. }), "{e}");
}

/// The mm_exec fuzz target's input itself (3.7 KB, as libc: a file as long as libc
/// whose first bytes these are).
#[test]
fn fuzz_found_empty_load_as_libc() {
    let (files, mm) = old_image(Design::Linux);
    let d = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz-exec-empty-load.elf"),
    )
    .unwrap();
    let base = true_plan();
    let li = base
        .libs
        .iter()
        .position(|l| l.path.ends_with("libc.so.6"))
        .unwrap();
    let path = base.libs[li].path.clone();
    let len = std::fs::metadata(&path).unwrap().len().max(d.len() as u64);
    let plan = ElfImage::parse_prefix(&path, &d, len).map(|lib| {
        let mut p = base.clone();
        p.libs[li] = Arc::new(lib);
        p
    });
    try_exec(&files, &mm, plan, "fuzz input as libc");
    let exe = ElfImage::parse_prefix(&std::fs::canonicalize("/bin/true").unwrap(), &d, len)
        .and_then(|e| LoadPlan::resolve_image(Arc::new(e), &SearchPath::default()));
    try_exec(&files, &mm, exe, "fuzz input as the program");
}

/// `Program::mapped_files` lists every file an exec maps, each once: after one
/// exec into a fresh registry, exactly those files' reverse maps were taken.
#[test]
fn mapped_files_are_the_files_an_exec_touches() {
    let files = Files::new(Design::Linux, Topology::Os, CallPattern::PerVma);
    let prog = files.program(Path::new("/bin/true")).unwrap();
    let mapped: Vec<PathBuf> = prog
        .mapped_files()
        .iter()
        .map(|f| f.path().to_path_buf())
        .collect();
    let mut once = mapped.clone();
    once.sort();
    once.dedup();
    assert_eq!(once.len(), mapped.len(), "listed twice: {mapped:?}");
    for f in prog.files() {
        assert!(mapped.contains(&f.path().to_path_buf()), "{f:?} missing");
    }
    if prog.linkage() == Linkage::Dynamic && Path::new("/etc/ld.so.cache").exists() {
        let cache = std::fs::canonicalize("/etc/ld.so.cache").unwrap();
        assert!(mapped.contains(&cache), "no ld.so.cache in {mapped:?}");
    }
    let mm = Mm::new(files.clone());
    mm.exec_program(&prog);
    let mut touched: Vec<PathBuf> = files
        .all()
        .iter()
        .filter(|f| f.rmap().stats().acquisitions > 0)
        .map(|f| f.path().to_path_buf())
        .collect();
    touched.sort();
    assert_eq!(touched, once);
}

/// `exec_program_part`: the parts of an exec, in order, leave the address
/// space and every reverse map as one `exec_program` does, even when another
/// address space runs its own parts in between (the predict recorder's
/// staggered turns); and a part out of range does nothing.
#[test]
fn an_exec_run_in_parts_leaves_what_one_exec_leaves() {
    let files = Files::new(Design::Linux, Topology::Os, CallPattern::PerVma);
    let prog = files.program(Path::new("/bin/true")).unwrap();
    let whole = Mm::new(files.clone());
    whole.exec_program(&prog);
    whole.exec_program(&prog);
    let (a, b) = (Mm::new(files.clone()), Mm::new(files.clone()));
    a.exec_program(&prog);
    b.exec_program(&prog);
    let before: Vec<u64> = files.all().iter().map(|f| f.rmap().len() as u64).collect();
    // `Vma` has no `PartialEq` (and its reverse-map handle differs from
    // process to process): compare each VMA's range, protection, flags and
    // backing, as printed.
    let image = |m: &Mm| {
        m.vmas()
            .iter()
            .map(|v| {
                format!(
                    "{:x}-{:x} {:?} {:?} {:?}",
                    v.start, v.end, v.prot, v.flags, v.backing
                )
            })
            .collect::<Vec<_>>()
    };
    let parts = 5;
    for p in 0..parts {
        a.exec_program_part(&prog, p, parts);
        // `b` is mid-exec, two parts behind.
        if p >= 2 {
            b.exec_program_part(&prog, p - 2, parts);
        }
    }
    a.exec_program_part(&prog, parts, parts);
    // Mid-exec, `b` differs from a finished image.
    assert_ne!(image(&b), image(&whole), "b is still mid-exec");
    for p in parts - 2..parts {
        b.exec_program_part(&prog, p, parts);
    }
    a.check_invariants().unwrap();
    b.check_invariants().unwrap();
    assert_eq!(image(&a), image(&whole));
    assert_eq!(image(&b), image(&whole));
    assert_eq!(a.brk_range(), whole.brk_range());
    let after: Vec<u64> = files.all().iter().map(|f| f.rmap().len() as u64).collect();
    assert_eq!(before, after, "every reverse map holds what it held");
}

/// A static-pie whose segments ask for an alignment above the page size (2 MiB,
/// 64 KiB) goes where Linux 6.12's `load_elf_binary` puts it: top-down in the mmap
/// area, where its whole span would go, aligned down to that alignment (not at
/// `ELF_ET_DYN_BASE`), its brk at `ELF_ET_DYN_BASE`. Checked against the kernel: the
/// program, run with ASLR off (`setarch -R`), prints where its own file is mapped,
/// and the model's exec must map its segments at the same addresses. Needs `cc`
/// with a static libc and `setarch` (without them it says so and checks nothing).
#[test]
fn a_static_pie_with_a_large_alignment_loads_where_the_kernel_loads_it() {
    for align in [0x20_0000u64, 0x1_0000] {
        if !static_pie_matches_the_kernel(align) {
            return;
        }
    }
}

/// One case of the test above; `false` (said) where it cannot run here.
fn static_pie_matches_the_kernel(align: u64) -> bool {
    let dir = tmpdir(&format!("spie{align:x}"));
    let src = dir.join("spie.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\n#include <string.h>\n\
         int main(void){ char l[512]; FILE *m = fopen(\"/proc/self/maps\", \"r\");\n\
         while (fgets(l, sizeof l, m)) if (strstr(l, \"/spie-aligned\")) fputs(l, stdout);\n\
         return 0; }\n",
    )
    .unwrap();
    let bin = dir.join("spie-aligned");
    let built = std::process::Command::new("cc")
        .args(["-O1", "-static-pie"])
        .arg(format!("-Wl,-z,max-page-size={align:#x}"))
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    let run = built
        .then(|| {
            std::process::Command::new("setarch")
                .args(["-R"])
                .arg(&bin)
                .output()
                .ok()
        })
        .flatten()
        .filter(|o| o.status.success());
    let Some(out) = run else {
        eprintln!("no cc with a static libc, or no setarch: case skipped");
        let _ = std::fs::remove_dir_all(&dir);
        return false;
    };
    let kernel: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| u64::from_str_radix(l.split('-').next().unwrap(), 16).unwrap())
        .collect();
    assert!(!kernel.is_empty());
    let files = Files::new(Design::Linux, Topology::Os, CallPattern::PerVma);
    let mm = Mm::new(files);
    mm.exec(&bin).unwrap();
    let canon = std::fs::canonicalize(&bin).unwrap();
    let model: Vec<u64> = mm
        .vmas()
        .iter()
        .filter(|v| v.file().is_some_and(|(f, _)| f.path() == canon))
        .map(|v| v.start)
        .collect();
    // The kernel's has one piece more: glibc's static startup applied RELRO (an
    // mprotect splitting the data segment), after exec.
    let why = format!("align {align:#x}: the model's {model:x?}, the kernel's {kernel:x?}");
    assert_eq!(model[0], kernel[0], "{why}");
    assert!(model.iter().all(|a| kernel.contains(a)), "{why}");
    assert_eq!(kernel.len(), model.len() + 1, "{why}");
    assert_eq!(kernel[0] % align, 0);
    assert_eq!(mm.brk_range().0, ELF_ET_DYN_BASE + 0x1000);
    let _ = std::fs::remove_dir_all(&dir);
    true
}

/// A program linked `-z execstack` (its `PT_GNU_STACK` has `PF_X`) gets an
/// executable `[stack]` from exec, as the kernel's `setup_arg_pages` gives it; one
/// linked `-z noexecstack` does not. Checked against the kernel: each program
/// prints its own `[stack]` line. Needs `cc` (without it says so and checks
/// nothing).
#[test]
fn the_stack_is_executable_when_the_program_asks_for_it() {
    let dir = tmpdir("execstack");
    let src = dir.join("stack.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\n#include <string.h>\n\
         int main(void){ char l[512]; FILE *m = fopen(\"/proc/self/maps\", \"r\");\n\
         while (fgets(l, sizeof l, m)) if (strstr(l, \"[stack]\")) fputs(l, stdout);\n\
         return 0; }\n",
    )
    .unwrap();
    for (flag, exec) in [("execstack", true), ("noexecstack", false)] {
        let bin = dir.join(flag);
        let built = std::process::Command::new("cc")
            .args(["-O1", "-z", flag, "-o"])
            .arg(&bin)
            .arg(&src)
            .status()
            .is_ok_and(|s| s.success());
        let Some(out) = built
            .then(|| std::process::Command::new(&bin).output().ok())
            .flatten()
        else {
            eprintln!("no C compiler: case skipped");
            break;
        };
        let line = String::from_utf8_lossy(&out.stdout).into_owned();
        let kernel_perms = line.split_whitespace().nth(1).unwrap_or("").to_string();
        assert_eq!(kernel_perms, if exec { "rwxp" } else { "rw-p" }, "{line}");
        let files = Files::new(Design::Linux, Topology::Os, CallPattern::PerVma);
        let mm = Mm::new(files);
        mm.exec(&bin).unwrap();
        let stack = mm
            .vmas()
            .into_iter()
            .find(|v| matches!(v.backing, Backing::Anon(mm::AnonKind::Stack)))
            .unwrap();
        assert_eq!(stack.prot, Prot::new(true, true, exec), "{flag}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
