//! The errno-like error type shared by the ELF loader and the address-space model.

use std::fmt;
use std::path::PathBuf;

/// `EPERM`: operation not permitted (a change to sealed memory).
pub const EPERM: i32 = 1;
/// `ENOENT`: no such file or directory.
pub const ENOENT: i32 = 2;
/// `EIO`: input/output error.
pub const EIO: i32 = 5;
/// `ENOEXEC`: exec format error.
pub const ENOEXEC: i32 = 8;
/// `ENOMEM`: out of address space, or a range that is not mapped.
pub const ENOMEM: i32 = 12;
/// `EACCES`: permission denied.
pub const EACCES: i32 = 13;
/// `EFAULT`: bad address (a page fault no VMA allows).
pub const EFAULT: i32 = 14;
/// `EINVAL`: invalid argument.
pub const EINVAL: i32 = 22;
/// File exists (`MAP_FIXED_NOREPLACE` over a mapping).
pub const EEXIST: i32 = 17;

/// Everything that can go wrong in `mm`: loading an ELF file, resolving its libraries,
/// or changing an address space.
///
/// Every operation that returns this error has left the address space exactly as it was
/// before the call (see [`crate::Mm`]). [`Error::errno`] gives the errno the Linux call
/// would have returned.
///
/// ```
/// use mm::{CallPattern, Error, Files, MapFlags, Mm, Prot, PAGE_SIZE};
/// use rmap::{Design, Topology};
///
/// let mm = Mm::new(Files::new(Design::Linux, Topology::Os, CallPattern::PerVma));
/// let e = mm.munmap(1, PAGE_SIZE).unwrap_err(); // not page aligned
/// assert!(matches!(e, Error::Invalid { .. }));
/// assert_eq!(e.errno(), 22); // EINVAL
/// assert!(mm.is_empty()); // nothing changed
/// let a = mm.mmap(0, PAGE_SIZE, Prot::R, MapFlags::default(), None)?;
/// assert_eq!(mm.mprotect(a, 2 * PAGE_SIZE, Prot::RW).unwrap_err().errno(), 12); // ENOMEM
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The file does not exist (`ENOENT`).
    NotFound {
        /// The path that was opened.
        path: PathBuf,
    },
    /// The file exists but could not be read (`EACCES` or `EIO`).
    Io {
        /// The path that was read.
        path: PathBuf,
        /// What the OS said.
        kind: std::io::ErrorKind,
    },
    /// The path names a FIFO, device, socket or directory, not a regular file
    /// (`EACCES`, as execve and ld.so answer); refused before it is opened for reading.
    NotRegular {
        /// The path.
        path: PathBuf,
    },
    /// The new image does not fit the address space: a segment below `mmap_min_addr`
    /// or past `TASK_SIZE`, load-bias arithmetic that wraps, objects that overlap, or
    /// no room left (`ENOMEM`, as the kernel's or ld.so's `mmap` fails). Raised before
    /// the old image is touched.
    BadLayout {
        /// The file whose placement failed.
        path: PathBuf,
        /// What is wrong.
        what: &'static str,
    },
    /// The file does not start with the ELF magic bytes (`ENOEXEC`).
    NotElf {
        /// The file.
        path: PathBuf,
    },
    /// The file ends before a header, program header or segment it declares (`ENOEXEC`).
    Truncated {
        /// The file.
        path: PathBuf,
        /// Which part is cut short.
        what: &'static str,
    },
    /// A valid ELF file this model cannot run: not 64-bit, not x86-64, not an
    /// executable or shared object (`ENOEXEC`).
    Unsupported {
        /// The file.
        path: PathBuf,
        /// Why.
        what: &'static str,
    },
    /// An ELF file whose headers contradict each other (`ENOEXEC`).
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: &'static str,
    },
    /// A `DT_NEEDED` library that no search directory holds (`ENOENT`, as ld.so's
    /// "cannot open shared object file").
    LibraryNotFound {
        /// The `DT_NEEDED` name.
        name: String,
        /// The object that needs it.
        needed_by: PathBuf,
    },
    /// An unaligned, empty or overflowing range, or a bad flag combination (`EINVAL`).
    Invalid {
        /// What is wrong with the request.
        what: &'static str,
    },
    /// No gap of the requested size between the minimum address and the mmap base
    /// (`ENOMEM`).
    NoSpace {
        /// The requested length in bytes.
        len: u64,
    },
    /// The range holds no mapping at all (munmap of nothing), or, for mprotect, a
    /// page in it is not mapped (`ENOMEM`).
    NotMapped {
        /// Start of the range.
        start: u64,
        /// Length of the range in bytes.
        len: u64,
    },
    /// `MAP_FIXED_NOREPLACE` over a range where something is mapped (`EEXIST`).
    Exists {
        /// Start of the requested range.
        start: u64,
        /// Length of the requested range in bytes.
        len: u64,
    },
    /// A page fault at an address no VMA covers, or that the VMA's protection does
    /// not allow (`EFAULT`; SIGSEGV in a real process).
    Fault {
        /// The faulting address.
        addr: u64,
    },
    /// A change to memory sealed by `mseal` (`EPERM`): [`crate::seal`].
    Sealed {
        /// Start of the requested range.
        start: u64,
        /// Length of the requested range in bytes.
        len: u64,
    },
}

impl Error {
    /// The errno Linux would return for this failure.
    pub fn errno(&self) -> i32 {
        match self {
            Error::NotFound { .. } | Error::LibraryNotFound { .. } => ENOENT,
            Error::Io { kind, .. } => {
                if *kind == std::io::ErrorKind::PermissionDenied {
                    EACCES
                } else {
                    EIO
                }
            }
            Error::NotElf { .. }
            | Error::Truncated { .. }
            | Error::Unsupported { .. }
            | Error::Malformed { .. } => ENOEXEC,
            Error::Invalid { .. } => EINVAL,
            Error::NoSpace { .. } | Error::NotMapped { .. } | Error::BadLayout { .. } => ENOMEM,
            Error::NotRegular { .. } => EACCES,
            Error::Fault { .. } => EFAULT,
            Error::Exists { .. } => EEXIST,
            Error::Sealed { .. } => EPERM,
        }
    }

    pub(crate) fn from_io(path: &std::path::Path, e: &std::io::Error) -> Error {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::NotFound {
                path: path.to_path_buf(),
            }
        } else {
            Error::Io {
                path: path.to_path_buf(),
                kind: e.kind(),
            }
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotFound { path } => write!(f, "{}: no such file (ENOENT)", path.display()),
            Error::Io { path, kind } => write!(f, "{}: cannot read: {kind}", path.display()),
            Error::NotRegular { path } => {
                write!(f, "{}: not a regular file (EACCES)", path.display())
            }
            Error::BadLayout { path, what } => {
                write!(f, "{}: cannot be placed: {what} (ENOMEM)", path.display())
            }
            Error::NotElf { path } => {
                write!(f, "{}: not an ELF file (ENOEXEC)", path.display())
            }
            Error::Truncated { path, what } => {
                write!(
                    f,
                    "{}: truncated ELF file: {what} (ENOEXEC)",
                    path.display()
                )
            }
            Error::Unsupported { path, what } => {
                write!(
                    f,
                    "{}: unsupported ELF file: {what} (ENOEXEC)",
                    path.display()
                )
            }
            Error::Malformed { path, what } => {
                write!(
                    f,
                    "{}: malformed ELF file: {what} (ENOEXEC)",
                    path.display()
                )
            }
            Error::LibraryNotFound { name, needed_by } => write!(
                f,
                "{name}: cannot open shared object file, needed by {} (ENOENT)",
                needed_by.display()
            ),
            Error::Invalid { what } => write!(f, "invalid argument: {what} (EINVAL)"),
            Error::NoSpace { len } => {
                write!(
                    f,
                    "no free gap of {len:#x} bytes in the address space (ENOMEM)"
                )
            }
            Error::NotMapped { start, len } => {
                write!(f, "[{start:#x}, +{len:#x}) is not mapped (ENOMEM)")
            }
            Error::Fault { addr } => write!(f, "segmentation fault at {addr:#x} (EFAULT)"),
            Error::Exists { start, len } => {
                write!(f, "[{start:#x}, +{len:#x}) is already mapped (EEXIST)")
            }
            Error::Sealed { start, len } => {
                write!(f, "[{start:#x}, +{len:#x}) holds sealed memory (EPERM)")
            }
        }
    }
}

impl std::error::Error for Error {}
