//! exec replays ld.so's real calls: compared with `strace -f -e trace=memory` of the
//! same binary on this machine, per file (every call that creates, splits or removes
//! a mapping of that file, in order: kind, length in pages, protection, file page
//! offset, `MAP_FIXED`), the model's exec sequence is the same.
//!
//! A call is attributed to a file when it maps the file, or when its address falls in
//! a mapping of the file (an anonymous `MAP_FIXED` bss over a library's reservation,
//! an `mprotect` of RELRO or of holes, the `munmap` of the cache). Calls made after
//! ld.so hands over (the program's own, the locale files libc maps) are on files the
//! model does not map, or on anonymous memory, and are not compared.
//!
//! Skipped, with a notice, when `strace` cannot run here (not installed, or ptrace
//! not permitted).

use mm::{Backing, CallPattern, Caller, ExecStep, Files, Prot};
use rmap::{Design, Topology};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// (call, pages, prot, file page offset or none, MAP_FIXED)
type Call = (&'static str, u64, Prot, Option<u64>, bool);

fn pages(len: u64) -> u64 {
    len.div_ceil(4096)
}

/// Per-file call lists, given a stream of (kind, start, len, prot, file+pgoff, fixed).
#[derive(Default)]
struct Attributor {
    maps: Vec<(u64, u64, PathBuf)>,
    calls: BTreeMap<PathBuf, Vec<Call>>,
}

impl Attributor {
    fn owner(&self, addr: u64) -> Option<PathBuf> {
        self.maps
            .iter()
            .rev()
            .find(|(s, e, _)| *s <= addr && addr < *e)
            .map(|(_, _, p)| p.clone())
    }

    fn mmap(
        &mut self,
        start: u64,
        len: u64,
        prot: Prot,
        file: Option<(PathBuf, u64)>,
        fixed: bool,
    ) {
        match file {
            Some((path, pgoff)) => {
                self.calls.entry(path.clone()).or_default().push((
                    "mmap",
                    pages(len),
                    prot,
                    Some(pgoff),
                    fixed,
                ));
                self.maps.push((start, start + pages(len) * 4096, path));
            }
            None if fixed => {
                if let Some(p) = self.owner(start) {
                    self.calls
                        .entry(p)
                        .or_default()
                        .push(("mmap", pages(len), prot, None, true));
                }
            }
            None => {}
        }
    }

    fn other(&mut self, kind: &'static str, start: u64, len: u64, prot: Prot) {
        if let Some(p) = self.owner(start) {
            self.calls
                .entry(p)
                .or_default()
                .push((kind, pages(len), prot, None, false));
        }
    }
}

fn parse_prot(s: &str) -> Prot {
    Prot::new(
        s.contains("PROT_READ"),
        s.contains("PROT_WRITE"),
        s.contains("PROT_EXEC"),
    )
}

fn num(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None if s == "NULL" => Some(0),
        None => s.parse().ok(),
    }
}

/// Runs `argv` under strace with ASLR off (`setarch -R`); `None` when strace cannot
/// run here. `kernel` are the file mappings the kernel made at exec (invisible to
/// strace), taken from the model: with ASLR off the real ones are at the same
/// addresses, so calls on them (RELRO of the executable and of ld.so) are attributed
/// only if the model placed them where the kernel did.
fn strace(argv: &[&str], kernel: &[(u64, u64, PathBuf)]) -> Option<BTreeMap<PathBuf, Vec<Call>>> {
    let out = std::env::temp_dir().join(format!(
        "aspace-strace-{}-{}",
        std::process::id(),
        argv[0].replace('/', "_")
    ));
    let status = Command::new("setarch")
        .args([
            "-R",
            "strace",
            "-f",
            "-e",
            "trace=memory,openat,close",
            "-o",
        ])
        .arg(&out)
        .args(argv)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    let text = std::fs::read_to_string(&out).ok()?;
    let _ = std::fs::remove_file(&out);
    if !status.success() || !text.contains("mmap(") {
        return None;
    }
    let mut fds: BTreeMap<i64, PathBuf> = BTreeMap::new();
    let mut a = Attributor {
        maps: kernel.to_vec(),
        ..Attributor::default()
    };
    for line in text.lines() {
        // "PID call(args) = ret" (strace -f prefixes the pid).
        let line = line.split_once(' ').map_or(line, |(pid, rest)| {
            if pid.chars().all(|c| c.is_ascii_digit()) {
                rest.trim_start()
            } else {
                line
            }
        });
        let Some((call, rest)) = line.split_once('(') else {
            continue;
        };
        // strace pads short calls: "munmap(0x7f.., 33763)     = 0".
        let Some((args, ret)) = rest.rsplit_once(')') else {
            continue;
        };
        let Some(ret) = ret.trim_start().strip_prefix("= ") else {
            continue;
        };
        let ret = ret.split_whitespace().next().unwrap_or("");
        if ret.starts_with('-') {
            continue; // failed call
        }
        let args: Vec<&str> = args.split(", ").collect();
        match call {
            "openat" => {
                let path = args[1].trim_matches('"');
                if let (Some(fd), Ok(p)) = (num(ret), std::fs::canonicalize(path)) {
                    fds.insert(fd as i64, p);
                }
            }
            "close" => {
                if let Some(fd) = num(args[0]) {
                    fds.remove(&(fd as i64));
                }
            }
            "mmap" if args.len() == 6 => {
                let (Some(start), Some(len)) = (num(ret), num(args[1])) else {
                    continue;
                };
                let fixed = args[3].contains("MAP_FIXED");
                let fd: i64 = args[4].parse().unwrap_or(-1);
                let file = fds
                    .get(&fd)
                    .map(|p| (p.clone(), num(args[5]).unwrap_or(0) / 4096));
                a.mmap(start, len, parse_prot(args[2]), file, fixed);
            }
            "mprotect" => {
                if let (Some(s), Some(l)) = (num(args[0]), num(args[1])) {
                    a.other("mprotect", s, l, parse_prot(args[2]));
                }
            }
            "munmap" => {
                if let (Some(s), Some(l)) = (num(args[0]), num(args[1])) {
                    a.other("munmap", s, l, Prot::NONE);
                }
            }
            _ => {}
        }
    }
    Some(a.calls)
}

/// The model's per-file calls, and the kernel's file mappings.
#[allow(clippy::type_complexity)]
fn model(path: &str) -> (BTreeMap<PathBuf, Vec<Call>>, Vec<(u64, u64, PathBuf)>) {
    let files = Files::new(Design::Linux, Topology::Os, CallPattern::PerVma);
    let prog = files.program(Path::new(path)).unwrap();
    let mut a = Attributor::default();
    let mut kernel = Vec::new();
    for step in prog.steps() {
        // The kernel's own mappings are not system calls strace sees, but later
        // calls on them (RELRO of the executable and of ld.so) are attributed.
        match step {
            ExecStep::Map {
                start,
                end,
                prot,
                backing,
                fixed,
                caller,
            } => {
                let file = match backing {
                    Backing::File { file, pgoff } => Some((file.path().to_path_buf(), *pgoff)),
                    Backing::Anon(_) => None,
                };
                if *caller == Caller::LdSo {
                    a.mmap(*start, end - start, *prot, file, *fixed);
                } else if let Some((p, _)) = file {
                    a.maps.push((*start, *end, p.clone()));
                    kernel.push((*start, *end, p));
                }
            }
            ExecStep::Protect {
                start,
                end,
                prot,
                caller: Caller::LdSo,
            } => a.other("mprotect", *start, end - start, *prot),
            ExecStep::Unmap {
                start,
                end,
                caller: Caller::LdSo,
            } => a.other("munmap", *start, end - start, Prot::NONE),
            _ => {}
        }
    }
    (a.calls, kernel)
}

fn compare(argv: &[&str]) {
    let (model, kernel) = model(argv[0]);
    let libc = model
        .iter()
        .find(|(p, _)| p.ends_with("libc.so.6"))
        .expect("the model's ld.so maps libc");
    // reserve, 3 overlays, bss, RELRO mprotect
    assert!(libc.1.len() >= 6, "{libc:?}");
    let mut kfiles: Vec<_> = kernel.iter().map(|k| &k.2).collect();
    kfiles.dedup();
    assert_eq!(kfiles.len(), 2, "the executable and ld.so: {kernel:?}");
    let Some(real) = strace(argv, &kernel) else {
        eprintln!("NOTICE: strace cannot run here; {argv:?} not compared");
        return;
    };
    assert!(!model.is_empty());
    for (path, calls) in &model {
        assert_eq!(
            real.get(path),
            Some(calls),
            "{argv:?}: {}: ld.so's calls (strace) vs the model's",
            path.display()
        );
    }
    // Every file the model's ld.so touches, the real one touches, and vice versa
    // for the files the model maps at all.
    let mapped: Vec<PathBuf> = {
        let files = Files::new(Design::Linux, Topology::Os, CallPattern::PerVma);
        let prog = files.program(Path::new(argv[0])).unwrap();
        prog.files().map(|f| f.path().to_path_buf()).collect()
    };
    let cache = std::fs::canonicalize(mm::ldso::LD_SO_CACHE).ok();
    for p in real
        .keys()
        .filter(|p| mapped.contains(p) || Some(*p) == cache.as_ref())
    {
        assert!(
            model.contains_key(p),
            "{argv:?}: model makes no call on {p:?}"
        );
    }
}

#[test]
fn bin_true_matches_strace() {
    compare(&["/bin/true"]);
}

/// `ls` loads libselinux and libpcre2 besides libc: several libraries, each with
/// its own reserve / overlay / bss / RELRO sequence.
#[test]
fn ls_matches_strace() {
    compare(&["/bin/ls", "-d", "/"]);
}

/// `listres` loads libXdmcp, whose segments ask for 2 MiB alignment: ld.so reserves
/// span + alignment anonymously, maps the file at the aligned address, unmaps both
/// ends, makes the hole between the segments PROT_NONE, then overlays the data
/// segment. Skipped when the binary is not installed.
#[test]
fn aligned_library_matches_strace() {
    if !Path::new("/usr/bin/listres").exists() {
        eprintln!("NOTICE: /usr/bin/listres not installed; not compared");
        return;
    }
    let (model, _) = model("/usr/bin/listres");
    let xdmcp = model
        .iter()
        .find(|(p, _)| p.to_string_lossy().contains("libXdmcp"))
        .map(|(_, c)| c.clone())
        .expect("listres needs libXdmcp");
    // The file's calls (the anonymous reservation and its trimmed ends belong to
    // no file): a MAP_FIXED map at the aligned address, the holes' PROT_NONE, the
    // data overlay, RELRO.
    let kinds: Vec<(&str, bool)> = xdmcp.iter().map(|c| (c.0, c.4)).collect();
    assert_eq!(
        kinds,
        [
            ("mmap", true),
            ("mprotect", false),
            ("mmap", true),
            ("mprotect", false)
        ],
        "{xdmcp:?}"
    );
    compare(&["/usr/bin/listres", "-help"]);
}
