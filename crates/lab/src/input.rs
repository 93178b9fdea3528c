//! Input files and output paths, checked before any work starts.
//!
//! Every file the lab reads (a results file, a strace recording, a maps
//! file, a machine or host description) is opened as `--binary` is: its
//! metadata is read first, and anything that is not a regular file (a FIFO,
//! `/dev/zero`, a directory, a socket) is refused at once, without opening
//! it, so nothing hangs on a FIFO or reads a device without end; a file larger
//! than its cap is refused from its size, before a byte is read. The file is
//! then opened non-blocking, checked again (it may have been replaced in
//! between), and read through a limit of the cap, so a file that grows while
//! it is read still costs at most the cap.
//!
//! Every output is checked before the work: a directory is created, a
//! probe file written in it, and what was created removed again; an output file must be a regular file or absent
//! in a directory that exists, and is opened for appending (and removed
//! again if it was absent), so a path under `/proc` or in a missing directory
//! fails in a second, not after a run of minutes.

use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;

const MIB: u64 = 1 << 20;

/// The largest results file `aspace report` reads: a default bench on 2
/// cores writes about 0.1 MiB, one on 16 cores about 1 MiB.
pub const RESULTS_CAP: u64 = 64 * MIB;

/// The largest strace recording `aspace replay` reads (the whole trace is
/// parsed in memory).
pub const TRACE_CAP: u64 = 256 * MIB;

/// The largest `/proc/PID/maps` file `aspace replay --maps` reads.
pub const MAPS_CAP: u64 = 16 * MIB;

/// The largest machine or host description (`--machine`, `--host`,
/// `--predict-host`, calibrate's output): a few KiB in practice.
pub const MACHINE_CAP: u64 = MIB;

/// What a path is, for a refusal: "a directory", "a FIFO", ...
fn kind(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

fn size(b: u64) -> String {
    if b >= MIB {
        format!("{:.1} MiB", b as f64 / MIB as f64)
    } else {
        format!("{b} bytes")
    }
}

/// Reads the text file `path`, given as `what` (the option, for messages),
/// refusing at once anything that is not a regular file or is larger than
/// `cap` bytes, and any file that is not UTF-8.
pub fn read_text(path: &Path, what: &str, cap: u64) -> Result<String, String> {
    let bytes = read_bytes(path, what, cap)?;
    String::from_utf8(bytes)
        .map_err(|_| format!("{what}: {} is not a text file (not UTF-8)", path.display()))
}

fn read_bytes(path: &Path, what: &str, cap: u64) -> Result<Vec<u8>, String> {
    let p = path.display();
    let refuse = |t: std::fs::FileType| format!("{what}: {p} is {}; give a regular file", kind(t));
    let too_big = |len: u64| {
        format!(
            "{what}: {p} is {}, more than the {} this command reads",
            size(len),
            size(cap)
        )
    };
    // Metadata first: a FIFO is never opened, a device never read.
    let meta = std::fs::metadata(path).map_err(|e| format!("{what}: cannot read {p}: {e}"))?;
    if !meta.is_file() {
        return Err(refuse(meta.file_type()));
    }
    if meta.len() > cap {
        return Err(too_big(meta.len()));
    }
    // Non-blocking, in case it was swapped for a FIFO since; checked again.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("{what}: cannot open {p}: {e}"))?;
    let meta = f
        .metadata()
        .map_err(|e| format!("{what}: cannot read {p}: {e}"))?;
    if !meta.is_file() {
        return Err(refuse(meta.file_type()));
    }
    let mut buf = Vec::with_capacity(meta.len().min(cap) as usize);
    f.take(cap + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("{what}: cannot read {p}: {e}"))?;
    if buf.len() as u64 > cap {
        return Err(too_big(buf.len() as u64));
    }
    Ok(buf)
}

/// Checks that `dir` (option `what`) can hold output files: creates it,
/// writes and removes a probe file in it, and removes again the directories
/// it created, so that a command refused later leaves nothing behind (the
/// command creates the directory when it writes).
pub fn check_output_dir(dir: &Path, what: &str) -> Result<(), String> {
    let d = dir.display();
    if let Ok(m) = std::fs::metadata(dir) {
        if !m.is_dir() {
            return Err(format!("{what}: {d} is {}, not a directory", describe(&m)));
        }
    }
    // The levels that do not exist yet, deepest first.
    let created: Vec<&Path> = dir
        .ancestors()
        .filter(|a| !a.as_os_str().is_empty())
        .take_while(|a| std::fs::symlink_metadata(a).is_err())
        .collect();
    std::fs::create_dir_all(dir).map_err(|e| format!("{what}: cannot create {d}: {e}"))?;
    let probe = dir.join(format!(".aspace-write-test-{}", std::process::id()));
    let wrote = std::fs::write(&probe, b"");
    let _ = std::fs::remove_file(&probe);
    for c in &created {
        let _ = std::fs::remove_dir(c);
    }
    wrote.map_err(|e| format!("{what}: cannot write in {d}: {e}"))
}

fn describe(m: &std::fs::Metadata) -> &'static str {
    if m.is_file() {
        "a file"
    } else {
        kind(m.file_type())
    }
}

/// Checks that the file `path` (option `what`) can be written: a regular
/// file or nothing, in a directory that exists, or, with `create_parent`,
/// that can be created (the missing directories are created for the probe
/// and removed again). Leaves an existing file untouched and an absent one
/// absent.
pub fn check_output_file(path: &Path, what: &str, create_parent: bool) -> Result<(), String> {
    let p = path.display();
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => {
            // Opening a FIFO to write would wait for a reader.
            return Err(format!(
                "{what}: {p} is {}; give a file to write",
                describe(&m)
            ));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{what}: cannot write {p}: {e}")),
    }
    let parent = path.parent().filter(|d| !d.as_os_str().is_empty());
    // The parent's levels that do not exist yet, deepest first.
    let created: Vec<&Path> = match parent {
        Some(dir) if create_parent => dir
            .ancestors()
            .filter(|a| !a.as_os_str().is_empty())
            .take_while(|a| std::fs::symlink_metadata(a).is_err())
            .collect(),
        _ => Vec::new(),
    };
    if let (Some(dir), false) = (parent, created.is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("{what}: cannot create {}: {e}", dir.display()))?;
    }
    let existed = path.exists();
    let opened = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path);
    if opened.is_ok() && !existed {
        let _ = std::fs::remove_file(path);
    }
    for c in &created {
        let _ = std::fs::remove_dir(c);
    }
    opened
        .map(drop)
        .map_err(|e| format!("{what}: cannot write {p}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("aspace-input-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn regular_files_under_the_cap_are_read_others_refused() {
        let d = dir("read");
        let f = d.join("a.txt");
        std::fs::write(&f, "hello").unwrap();
        assert_eq!(read_text(&f, "--x", 5).unwrap(), "hello");
        let e = read_text(&f, "--x", 4).unwrap_err();
        assert!(e.contains("5 bytes, more than the 4 bytes"), "{e}");
        let e = read_text(&d, "--x", 100).unwrap_err();
        assert!(e.contains("is a directory"), "{e}");
        let e = read_text(Path::new("/dev/zero"), "--x", 100).unwrap_err();
        assert!(e.contains("is a character device"), "{e}");
        let e = read_text(&d.join("none"), "--x", 100).unwrap_err();
        assert!(e.starts_with("--x: cannot read"), "{e}");
        std::fs::write(&f, [0xff, 0xfe]).unwrap();
        assert!(read_text(&f, "--x", 100).unwrap_err().contains("not UTF-8"));
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_text(&fifo, "--x", 100).unwrap_err();
        assert!(e.contains("is a FIFO"), "{e}");
        let e = check_output_file(&fifo, "--json", false).unwrap_err();
        assert!(e.contains("is a FIFO"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn outputs_are_probed_and_left_as_they_were() {
        let d = dir("write");
        let f = d.join("out.json");
        check_output_file(&f, "--json", false).unwrap();
        assert!(!f.exists(), "an absent file stays absent");
        std::fs::write(&f, "kept").unwrap();
        check_output_file(&f, "--json", false).unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "kept");
        let e = check_output_file(&d.join("no/such.json"), "--json", false).unwrap_err();
        assert!(e.starts_with("--json: cannot write"), "{e}");
        check_output_file(&d.join("made/here.json"), "--out", true).unwrap();
        assert!(
            !d.join("made").exists(),
            "what the check created is removed"
        );
        let e = check_output_file(&d, "--json", false).unwrap_err();
        assert!(e.contains("is a directory"), "{e}");
        check_output_dir(&d.join("sub/dir"), "--out").unwrap();
        assert!(!d.join("sub").exists(), "what the check created is removed");
        std::fs::create_dir(d.join("kept")).unwrap();
        check_output_dir(&d.join("kept"), "--out").unwrap();
        assert!(
            d.join("kept").is_dir() && std::fs::read_dir(d.join("kept")).unwrap().next().is_none()
        );
        let e = check_output_dir(&f, "--out").unwrap_err();
        assert!(e.contains("is a file, not a directory"), "{e}");
        let e = check_output_dir(Path::new("/proc/x"), "--out").unwrap_err();
        assert!(e.starts_with("--out: cannot create /proc/x"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
