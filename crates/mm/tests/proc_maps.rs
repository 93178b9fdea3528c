//! The model's exec against the real kernel and ld.so.
//!
//! Start a real process of a real binary, read its `/proc/PID/maps` once ld.so has
//! finished (libraries mapped, RELRO `mprotect` applied), and check that the model's
//! `exec` of the same binary gives the same file-backed mappings, library by library:
//! file, pgoff, length and protection. Absolute addresses are ignored (the kernel
//! randomizes them; the model does not).
//!
//! The child runs with an empty environment so that no locale archive or other data
//! file gets mapped (the model only maps what exec and ld.so map).

use mm::{CallPattern, Files, Mm, Prot};
use rmap::{Design, Topology};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// (pgoff in pages, length in pages, protection, shared) of one mapping.
type Piece = (u64, u64, Prot, bool);

/// File path -> the `[start, end)` of each of its mappings, in address order.
fn file_ranges(text: &str) -> BTreeMap<String, Vec<(u64, u64)>> {
    let mut out: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 6 || !f[5].starts_with('/') {
            continue;
        }
        let (s, e) = f[0].split_once('-').expect("range");
        let s = u64::from_str_radix(s, 16).unwrap();
        let e = u64::from_str_radix(e, 16).unwrap();
        out.entry(f[5..].join(" ")).or_default().push((s, e));
    }
    out
}

/// File path -> its pieces in address order.
fn parse_maps(text: &str) -> BTreeMap<String, Vec<Piece>> {
    let mut out: BTreeMap<String, Vec<Piece>> = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 6 || !f[5].starts_with('/') {
            continue; // anonymous, [heap], [stack], [vdso], ...
        }
        let (s, e) = f[0].split_once('-').expect("range");
        let s = u64::from_str_radix(s, 16).unwrap();
        let e = u64::from_str_radix(e, 16).unwrap();
        let pgoff = u64::from_str_radix(f[2], 16).unwrap() / 4096;
        let prot = Prot::from_maps(f[1]).unwrap();
        let shared = f[1].as_bytes()[3] == b's';
        out.entry(f[5..].join(" "))
            .or_default()
            .push((pgoff, (e - s) / 4096, prot, shared));
    }
    out
}

struct Killer(Child);
impl Drop for Killer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `argv` with an empty environment and stdin a pipe nobody writes, and returns
/// its maps once two reads 100 ms apart agree and the process is asleep.
fn real_maps(argv: &[&str]) -> String {
    let child = Command::new(argv[0])
        .args(&argv[1..])
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let child = Killer(child);
    let pid = child.0.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = String::new();
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).expect("maps");
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Field 3 (after the parenthesised name) is the state; S = sleeping in a
        // syscall (nanosleep or read), i.e. past ld.so and startup.
        let asleep = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('S'));
        if asleep && maps == last && maps.contains("libc.so.6") {
            return maps;
        }
        assert!(Instant::now() < deadline, "{argv:?} never settled:\n{maps}");
        last = maps;
    }
}

fn model_maps(path: &str) -> (BTreeMap<String, Vec<Piece>>, Mm) {
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let mm = Mm::new(files);
    mm.exec(Path::new(path)).expect("model exec");
    mm.check_invariants().expect("invariants after exec");
    let mut out: BTreeMap<String, Vec<Piece>> = BTreeMap::new();
    for v in mm.vmas() {
        if let Some((file, pgoff)) = v.file() {
            out.entry(file.path().display().to_string())
                .or_default()
                .push((pgoff, v.pages(), v.prot, v.flags.shared));
        }
    }
    (out, mm)
}

fn compare(argv: &[&str]) {
    let real = parse_maps(&real_maps(argv));
    let libc = real
        .iter()
        .find(|(p, _)| p.ends_with("/libc.so.6"))
        .expect("the real process maps libc");
    // r--, r-x, r--, RELRO r--, rw-: the kernel's view has the RELRO split.
    assert!(libc.1.len() >= 5, "{libc:?}");
    let (model, mm) = model_maps(argv[0]);
    let real_files: Vec<_> = real.keys().collect();
    let model_files: Vec<_> = model.keys().collect();
    assert_eq!(
        real_files, model_files,
        "{argv:?}: the kernel and the model map different files"
    );
    for (path, pieces) in &real {
        assert_eq!(
            &model[path], pieces,
            "{argv:?}: {path}: (pgoff, pages, prot, shared) differ, kernel vs model"
        );
    }
    // Every library the model maps, it maps with at least one executable piece, and
    // the anonymous areas a process has are there too.
    let names: Vec<_> = mm
        .vmas()
        .iter()
        .filter_map(|v| match v.backing {
            mm::Backing::Anon(k) => k.name(),
            _ => None,
        })
        .collect();
    for n in ["[stack]", "[heap]", "[vdso]", "[vvar]", "[vvar_vclock]"] {
        assert!(names.contains(&n), "{argv:?}: model lacks {n}");
    }
}

#[test]
fn sleep_matches_the_kernel() {
    compare(&["/bin/sleep", "30"]);
}

/// `sed` pulls libselinux, which pulls libpcre2: checks the breadth-first, transitive
/// library resolution as well as the segments.
#[test]
fn sed_with_transitive_libraries_matches_the_kernel() {
    compare(&["/bin/sed", "p"]);
}

/// A PIE linked with 64 KiB pages: holes between its segments (the kernel leaves
/// them unmapped) and a base aligned to 64 KiB. Built with the system C compiler;
/// skipped with a notice when there is none.
#[test]
fn pie_with_holes_matches_the_kernel() {
    let dir = std::env::temp_dir().join(format!("aspace-holes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("hole.c");
    std::fs::write(
        &src,
        "#include <unistd.h>\nint main(void){pause();return 0;}\n",
    )
    .unwrap();
    let bin = dir.join("hole_pie");
    let built = Command::new("cc")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .arg("-Wl,-z,max-page-size=0x10000")
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        eprintln!("NOTICE: no C compiler; hole_pie not compared");
        return;
    }
    compare(&[bin.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// With ASLR off (`setarch -R`) the kernel's and ld.so's placement is deterministic:
/// every file mapping of `/bin/sleep` (executable, ld.so, libc) sits at the address
/// the model gives it. Skipped with a notice when `setarch -R` cannot run.
#[test]
fn placement_matches_the_kernel_with_aslr_off() {
    let ok = Command::new("setarch")
        .args(["-R", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("NOTICE: setarch -R unavailable; placement not compared");
        return;
    }
    let real = file_ranges(&real_maps(&["setarch", "-R", "/bin/sleep", "30"]));
    let (_, mm) = model_maps("/bin/sleep");
    let mut model: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    for v in mm.vmas() {
        if let Some((file, _)) = v.file() {
            model
                .entry(file.path().display().to_string())
                .or_default()
                .push((v.start, v.end));
        }
    }
    assert_eq!(real.len(), 3, "{real:?}");
    assert_eq!(real, model, "file mappings at different addresses");
}
