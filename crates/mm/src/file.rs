//! One file of the model: its path, size, which inode it is, and its reverse map.
//!
//! The bottom of the crate's file handling: [`crate::vma`] points at a [`File`], the
//! registry ([`crate::Files`]) makes them.

use rmap::ReverseMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Which inode a file is, as `/proc/PID/maps` prints it: the device's major and minor
/// numbers and the inode number.
///
/// ```
/// use mm::FileId;
///
/// let id = FileId { major: 0xfe, minor: 0, ino: 247228 };
/// assert_eq!(id.to_string(), "fe:00 247228");
/// assert_eq!(FileId::parse("fe:00", "247228"), Some(id));
/// assert_eq!(FileId::parse("fe00", "1"), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileId {
    /// The device's major number.
    pub major: u32,
    /// The device's minor number.
    pub minor: u32,
    /// The inode number.
    pub ino: u64,
}

impl FileId {
    /// What an anonymous mapping shows: `00:00 0`.
    pub const NONE: FileId = FileId {
        major: 0,
        minor: 0,
        ino: 0,
    };

    /// The device and inode of `meta` (`st_dev` split as the kernel's
    /// `new_decode_dev` does: 12 bits of major, 20 of minor).
    pub fn of(meta: &std::fs::Metadata) -> FileId {
        use std::os::unix::fs::MetadataExt as _;
        let dev = meta.dev();
        FileId {
            major: (((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff)) as u32,
            minor: ((dev & 0xff) | ((dev >> 12) & !0xff)) as u32,
            ino: meta.ino(),
        }
    }

    /// Parses the device (`fe:00`, hexadecimal) and inode (decimal) fields of a
    /// `/proc/PID/maps` line.
    pub fn parse(dev: &str, ino: &str) -> Option<FileId> {
        let (major, minor) = dev.split_once(':')?;
        Some(FileId {
            major: u32::from_str_radix(major, 16).ok()?,
            minor: u32::from_str_radix(minor, 16).ok()?,
            ino: ino.parse().ok()?,
        })
    }
}

impl fmt::Display for FileId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02x}:{:02x} {}", self.major, self.minor, self.ino)
    }
}

/// One file (an inode's `address_space`): its path, size, and reverse map.
///
/// Shared by every process that maps it (`Arc<File>`). The reverse map is the only
/// mutable part; its concurrency contract is the design's (see `rmap`). A `File` costs
/// its path plus whatever its reverse map holds.
pub struct File {
    path: PathBuf,
    pages: u64,
    id: Option<FileId>,
    /// Unlinked (set once, never cleared): only what the maps print depends on it,
    /// so it is read and written `Relaxed`, ordering nothing else.
    deleted: AtomicBool,
    rmap: Box<dyn ReverseMap>,
}

impl File {
    pub(crate) fn new(
        path: PathBuf,
        pages: u64,
        id: Option<FileId>,
        deleted: bool,
        rmap: Box<dyn ReverseMap>,
    ) -> File {
        File {
            path,
            pages,
            id,
            deleted: AtomicBool::new(deleted),
            rmap,
        }
    }

    /// The canonical path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The size in pages (rounded up).
    pub fn pages(&self) -> u64 {
        self.pages
    }

    /// The device and inode of the real file this stands for, read when it was
    /// registered; `None` for a synthetic file.
    pub fn id(&self) -> Option<FileId> {
        self.id
    }

    /// Whether a recording named this path but no such file existed when it was
    /// registered: unlinked since it was mapped (a POSIX semaphore, a temporary
    /// file), so `/proc/PID/maps` shows it as `PATH (deleted)`.
    pub fn deleted(&self) -> bool {
        self.deleted.load(Ordering::Relaxed)
    }

    /// The file's name is unlinked now (a replayed `unlink`); its mappings stay.
    pub fn mark_deleted(&self) {
        self.deleted.store(true, Ordering::Relaxed);
    }

    /// The file's reverse map (`i_mmap`): every VMA of every process that maps it.
    pub fn rmap(&self) -> &dyn ReverseMap {
        &*self.rmap
    }
}

impl fmt::Debug for File {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("File")
            .field("path", &self.path)
            .field("pages", &self.pages)
            .field("id", &self.id)
            .field("deleted", &self.deleted())
            .field("design", &self.rmap.design())
            .field("rmap_len", &self.rmap.len())
            .finish()
    }
}
