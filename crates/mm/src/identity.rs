//! Which build of a file a recording was made against, and whether the file is still
//! that one.
//!
//! A replay maps the machine's files as they are now. If a library was upgraded
//! since the trace was recorded, its segments may differ, and the replayed layout
//! with them, by a few pages. So the recorder (`scripts/record.sh`) appends to the
//! trace one line per file the run mapped or executed:
//!
//! ```text
//! # aspace-file size=1922136 mtime=1720000000.000000000 dev=fe:00 ino=326269 build-id=4a1d... path=/usr/lib/x86_64-linux-gnu/libc.so.6
//! ```
//!
//! ([`crate::strace::parse`] reads them as [`crate::strace::Call::RecordedFile`]
//! events) and the replay compares each with the file now
//! ([`FileIdentity::changes_since`]), reporting "file X changed since it was
//! recorded" rather than a silent layout difference.

use crate::elf::ElfImage;
use crate::error::Error;
use crate::file::FileId;
use std::fmt;
use std::path::Path;

/// What identifies one version of a file: size, modification time, device and
/// inode, and for an ELF file its GNU build-id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileIdentity {
    /// Size in bytes.
    pub size: u64,
    /// Modification time: seconds and nanoseconds since the epoch.
    pub mtime: (i64, u32),
    /// Device and inode.
    pub id: FileId,
    /// The ELF build-id, if the file has one (and, in a recording, if the recorder
    /// could read it).
    pub build_id: Option<Vec<u8>>,
}

/// The prefix of a recorded file's line in a trace.
pub const RECORD_PREFIX: &str = "# aspace-file ";

impl FileIdentity {
    /// The identity of the file at `path` now (symlinks followed). The build-id is
    /// read only from an ELF file, with [`ElfImage::load`]'s bounded reads; an ELF
    /// file the loader cannot read has none.
    pub fn of(path: &Path) -> Result<FileIdentity, Error> {
        use std::os::unix::fs::MetadataExt as _;
        let meta = std::fs::metadata(path).map_err(|e| Error::from_io(path, &e))?;
        let build_id = if meta.is_file() {
            ElfImage::load(path).ok().and_then(|img| img.build_id)
        } else {
            None
        };
        Ok(FileIdentity {
            size: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec().clamp(0, 999_999_999) as u32),
            id: FileId::of(&meta),
            build_id,
        })
    }

    /// What differs in `self` (the file now) from `recorded`, in words, or `None` if
    /// it is the same file: size, modification time, device and inode, and the
    /// build-id where the recording has one.
    ///
    /// ```
    /// use mm::identity::FileIdentity;
    /// use mm::FileId;
    ///
    /// let then = FileIdentity {
    ///     size: 100,
    ///     mtime: (1_700_000_000, 0),
    ///     id: FileId { major: 0xfe, minor: 0, ino: 7 },
    ///     build_id: Some(vec![0xab, 0xcd]),
    /// };
    /// assert_eq!(then.changes_since(&then), None);
    /// let now = FileIdentity { size: 104, build_id: Some(vec![0xab, 0xce]), ..then.clone() };
    /// assert_eq!(
    ///     now.changes_since(&then).unwrap(),
    ///     "size 100 then, 104 now; build-id abcd then, abce now"
    /// );
    /// ```
    pub fn changes_since(&self, recorded: &FileIdentity) -> Option<String> {
        let mut what = Vec::new();
        if self.size != recorded.size {
            what.push(format!("size {} then, {} now", recorded.size, self.size));
        }
        if self.mtime != recorded.mtime {
            what.push(format!(
                "modified {} then, {} now",
                Mtime(recorded.mtime),
                Mtime(self.mtime)
            ));
        }
        if self.id != recorded.id {
            what.push(format!(
                "device and inode {} then, {} now",
                recorded.id, self.id
            ));
        }
        if let Some(then) = &recorded.build_id {
            if self.build_id.as_ref() != Some(then) {
                let now = self.build_id.as_deref().map_or("none".into(), hex);
                what.push(format!("build-id {} then, {now} now", hex(then)));
            }
        }
        (!what.is_empty()).then(|| what.join("; "))
    }

    /// The trace line that records this identity for `path` (see the module docs).
    pub fn record_line(&self, path: &str) -> String {
        let build_id = self
            .build_id
            .as_deref()
            .map_or(String::new(), |b| format!(" build-id={}", hex(b)));
        format!(
            "{RECORD_PREFIX}size={} mtime={} dev={:02x}:{:02x} ino={}{build_id} path={path}",
            self.size,
            Mtime(self.mtime),
            self.id.major,
            self.id.minor,
            self.id.ino
        )
    }

    /// Parses a line [`FileIdentity::record_line`] wrote (what follows
    /// [`RECORD_PREFIX`] included): the path and the identity. The path is the rest
    /// of the line after `path=`, so it may hold spaces.
    pub fn parse_record(line: &str) -> Result<(String, FileIdentity), String> {
        let body = line
            .strip_prefix(RECORD_PREFIX)
            .ok_or("not an aspace-file line")?;
        let (fields, path) = body
            .split_once("path=")
            .ok_or("aspace-file line without path=")?;
        if path.is_empty() {
            return Err("aspace-file line with an empty path".into());
        }
        let (mut size, mut mtime, mut dev, mut ino, mut build_id) = (None, None, None, None, None);
        for kv in fields.split_whitespace() {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("aspace-file field {kv:?} is not key=value"))?;
            let bad = || format!("aspace-file: bad {k} {v:?}");
            match k {
                "size" => size = Some(v.parse::<u64>().map_err(|_| bad())?),
                "mtime" => mtime = Some(parse_mtime(v).ok_or_else(bad)?),
                "dev" => dev = Some(v),
                "ino" => ino = Some(v),
                "build-id" => build_id = Some(parse_hex(v).ok_or_else(bad)?),
                // Fields a later recorder may add.
                _ => {}
            }
        }
        let missing = |k: &str| format!("aspace-file line without {k}=");
        let id = FileId::parse(
            dev.ok_or_else(|| missing("dev"))?,
            ino.ok_or_else(|| missing("ino"))?,
        )
        .ok_or("aspace-file: bad dev or ino")?;
        Ok((
            path.to_string(),
            FileIdentity {
                size: size.ok_or_else(|| missing("size"))?,
                mtime: mtime.ok_or_else(|| missing("mtime"))?,
                id,
                build_id,
            },
        ))
    }
}

/// A modification time printed as `seconds.nanoseconds` (what `stat -c %.9Y` prints).
struct Mtime((i64, u32));

impl fmt::Display for Mtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}", self.0 .0, self.0 .1)
    }
}

fn parse_mtime(s: &str) -> Option<(i64, u32)> {
    let (secs, frac) = s.split_once('.').unwrap_or((s, "0"));
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let nanos: u32 = format!("{frac:0<9}").parse().ok()?;
    Some((secs.parse().ok()?, nanos))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_hex(s: &str) -> Option<Vec<u8>> {
    if s.is_empty() || s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_line_reads_back_and_bad_ones_are_errors() {
        let me = FileIdentity::of(Path::new("/bin/sh")).expect("/bin/sh exists");
        assert!(me.build_id.is_some(), "/bin/sh has a build-id");
        let line = me.record_line("/bin/with space/sh");
        assert_eq!(
            FileIdentity::parse_record(&line),
            Ok(("/bin/with space/sh".to_string(), me.clone()))
        );
        // Without a build-id (the recorder found no readelf): still an identity.
        let plain = FileIdentity {
            build_id: None,
            ..me.clone()
        };
        assert_eq!(
            FileIdentity::parse_record(&plain.record_line("/x"))
                .unwrap()
                .1,
            plain
        );
        // The file now compared with a recording that has no build-id: same file.
        assert_eq!(me.changes_since(&plain), None);
        for bad in [
            "# aspace-file size=1 mtime=1.5 dev=fe:00 ino=1",
            "# aspace-file size=x mtime=1.5 dev=fe:00 ino=1 path=/x",
            "# aspace-file size=1 mtime=1.5.5 dev=fe:00 ino=1 path=/x",
            "# aspace-file size=1 mtime=1.5 dev=fe00 ino=1 path=/x",
            "# aspace-file size=1 mtime=1.5 dev=fe:00 ino=1 build-id=abc path=/x",
            "# aspace-file mtime=1.5 dev=fe:00 ino=1 path=/x",
            "# aspace-file size=1 mtime=1.5 dev=fe:00 ino=1 path=",
            "# aspace-file size=1 novalue dev=fe:00 ino=1 path=/x",
        ] {
            assert!(FileIdentity::parse_record(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_mtime("17.25"), Some((17, 250_000_000)));
        assert_eq!(parse_mtime("17"), Some((17, 0)));
    }

    #[test]
    fn every_changed_field_is_named() {
        let then = FileIdentity {
            size: 1,
            mtime: (10, 5),
            id: FileId {
                major: 1,
                minor: 2,
                ino: 3,
            },
            build_id: Some(vec![1]),
        };
        let now = FileIdentity {
            size: 2,
            mtime: (11, 0),
            id: FileId {
                major: 1,
                minor: 2,
                ino: 4,
            },
            build_id: None,
        };
        assert_eq!(
            now.changes_since(&then).unwrap(),
            "size 1 then, 2 now; modified 10.000000005 then, 11.000000000 now; \
             device and inode 01:02 3 then, 01:02 4 now; build-id 01 then, none now"
        );
    }
}
