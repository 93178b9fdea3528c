//! The ELF side of `exec`: what the kernel's loader and ld.so read from a file.
//!
//! [`ElfImage::load`] reads one file's program headers (with the `object` crate) into
//! page-aligned [`Segment`]s, its `PT_INTERP`, its `PT_GNU_RELRO` range and its
//! `DT_NEEDED` / `DT_RUNPATH` / `DT_RPATH` entries. [`LoadPlan::resolve`] then does what
//! ld.so does before it maps anything: find every needed library, breadth-first, each
//! once, in the standard search path.
//!
//! Everything here is plain data: an image is immutable once built, `Send + Sync`, and
//! costs a few hundred bytes plus its strings. Reading a file costs one `read` of the
//! whole file (the page cache makes that cheap for system libraries).
//!
//! Bad input never panics: a non-ELF file, a truncated one, a 32-bit or foreign one,
//! or a missing library each give an [`Error`] with the errno ld.so or execve would give.

use crate::error::Error;
use crate::vma::Prot;
use crate::PAGE_SIZE;
use object::elf;
use object::read::elf::{Dyn as _, FileHeader as _, ProgramHeader as _};
use object::Endianness;
use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Directories ld.so searches after `DT_RPATH` / `DT_RUNPATH`, in its order, on
/// Debian x86-64 (multiarch first).
pub const DEFAULT_LIB_DIRS: [&str; 5] = [
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/lib",
    "/usr/lib",
];

/// Whether a file is a fixed-address executable or position independent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElfKind {
    /// `ET_EXEC`: segments go at their link addresses.
    Exec,
    /// `ET_DYN`: a PIE or shared library, placed at a load bias.
    Dyn,
}

/// One `PT_LOAD` segment, page aligned as the loaders map it.
///
/// `[vaddr, vaddr + file_len)` maps the file from page `pgoff`; `[vaddr + file_len,
/// vaddr + mem_len)` is anonymous zero-fill (the bss pages past the file's last page).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Page-aligned link address of the first page (relative to the load bias).
    pub vaddr: u64,
    /// File offset of the first page, in pages.
    pub pgoff: u64,
    /// Bytes of file-backed mapping (page multiple, may be 0 for a pure-bss segment).
    pub file_len: u64,
    /// Bytes of the whole segment in memory (page multiple, at least `file_len`).
    pub mem_len: u64,
    /// Protection from `p_flags`.
    pub prot: Prot,
}

impl Segment {
    /// Bytes of anonymous bss after the file-backed part.
    pub fn bss_len(&self) -> u64 {
        self.mem_len - self.file_len
    }
}

/// What one ELF file tells the loaders. Immutable; share it with `Arc`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElfImage {
    /// The canonical path (symlinks resolved, as `/proc/PID/maps` prints it).
    pub path: PathBuf,
    /// `ET_EXEC` or `ET_DYN`.
    pub kind: ElfKind,
    /// `PT_LOAD` segments in file order.
    pub segments: Vec<Segment>,
    /// The page-aligned `[start, end)` link-address range ld.so makes read-only after
    /// relocation (`PT_GNU_RELRO`, start rounded down, end rounded down), if non-empty.
    pub relro: Option<(u64, u64)>,
    /// `PT_INTERP`, the program interpreter (ld.so), if any.
    pub interp: Option<String>,
    /// `DT_NEEDED` names, in order.
    pub needed: Vec<String>,
    /// `DT_RUNPATH` directories (after `$ORIGIN` substitution).
    pub runpath: Vec<String>,
    /// `DT_RPATH` directories (after `$ORIGIN` substitution); ld.so ignores them when
    /// `DT_RUNPATH` is present.
    pub rpath: Vec<String>,
    /// The file's size in pages (rounded up).
    pub file_pages: u64,
}

fn align_down(x: u64) -> u64 {
    x & !(PAGE_SIZE - 1)
}

fn align_up(x: u64) -> Option<u64> {
    Some(x.checked_add(PAGE_SIZE - 1)? & !(PAGE_SIZE - 1))
}

impl ElfImage {
    /// Reads and parses the file at `path`. The image's `path` is the canonical one.
    pub fn load(path: &Path) -> Result<ElfImage, Error> {
        let canon = std::fs::canonicalize(path).map_err(|e| Error::from_io(path, &e))?;
        let data = std::fs::read(&canon).map_err(|e| Error::from_io(path, &e))?;
        ElfImage::parse(&canon, &data)
    }

    /// Parses an ELF file already in memory; `path` is recorded as is and used for
    /// `$ORIGIN`.
    pub fn parse(path: &Path, data: &[u8]) -> Result<ElfImage, Error> {
        let p = || path.to_path_buf();
        if data.len() < 4 || data[..4] != elf::ELFMAG {
            return Err(Error::NotElf { path: p() });
        }
        if data.len() < 5 || data[4] != elf::ELFCLASS64 {
            return Err(Error::Unsupported {
                path: p(),
                what: "not a 64-bit ELF file",
            });
        }
        let hdr = match elf::FileHeader64::<Endianness>::parse(data) {
            Ok(h) => h,
            Err(_) if data.len() < std::mem::size_of::<elf::FileHeader64<Endianness>>() => {
                return Err(Error::Truncated {
                    path: p(),
                    what: "file header",
                })
            }
            Err(_) => {
                return Err(Error::Malformed {
                    path: p(),
                    what: "bad ELF identification bytes",
                })
            }
        };
        let endian = hdr.endian().map_err(|_| Error::Malformed {
            path: p(),
            what: "bad endianness byte",
        })?;
        if hdr.e_machine(endian) != elf::EM_X86_64 {
            return Err(Error::Unsupported {
                path: p(),
                what: "not an x86-64 file",
            });
        }
        let kind = match hdr.e_type(endian) {
            elf::ET_EXEC => ElfKind::Exec,
            elf::ET_DYN => ElfKind::Dyn,
            _ => {
                return Err(Error::Unsupported {
                    path: p(),
                    what: "neither an executable nor a shared object",
                })
            }
        };
        let phdrs = hdr
            .program_headers(endian, data)
            .map_err(|_| Error::Truncated {
                path: p(),
                what: "program header table",
            })?;

        let mut segments = Vec::new();
        let mut relro = None;
        let mut interp = None;
        let mut dynamic = None;
        for ph in phdrs {
            match ph.p_type(endian) {
                elf::PT_LOAD => segments.push(load_segment(path, data, endian, ph)?),
                elf::PT_GNU_RELRO => {
                    let start = ph.p_vaddr(endian);
                    let end = start
                        .checked_add(ph.p_memsz(endian))
                        .ok_or(Error::Malformed {
                            path: p(),
                            what: "PT_GNU_RELRO overflows",
                        })?;
                    let (s, e) = (align_down(start), align_down(end));
                    relro = (e > s).then_some((s, e));
                }
                elf::PT_INTERP => {
                    let bytes = ph
                        .interpreter(endian, data)
                        .map_err(|_| Error::Truncated {
                            path: p(),
                            what: "PT_INTERP",
                        })?
                        .unwrap_or_default();
                    let s = std::str::from_utf8(bytes).map_err(|_| Error::Malformed {
                        path: p(),
                        what: "PT_INTERP is not UTF-8",
                    })?;
                    interp = Some(s.to_owned());
                }
                elf::PT_DYNAMIC => {
                    dynamic = ph.dynamic(endian, data).map_err(|_| Error::Truncated {
                        path: p(),
                        what: "PT_DYNAMIC",
                    })?;
                }
                _ => {}
            }
        }
        if segments.is_empty() {
            return Err(Error::Malformed {
                path: p(),
                what: "no PT_LOAD segment",
            });
        }
        for w in segments.windows(2) {
            if w[1].vaddr < w[0].vaddr + w[0].mem_len {
                return Err(Error::Malformed {
                    path: p(),
                    what: "PT_LOAD segments overlap or are out of order",
                });
            }
        }

        let (mut needed, mut runpath, mut rpath) = (Vec::new(), Vec::new(), Vec::new());
        if let Some(dyns) = dynamic {
            let mut strtab = None;
            let mut strsz = None;
            for d in dyns {
                match d.tag32(endian) {
                    Some(elf::DT_STRTAB) => strtab = Some(d.d_val(endian)),
                    Some(elf::DT_STRSZ) => strsz = Some(d.d_val(endian)),
                    Some(elf::DT_NULL) => break,
                    _ => {}
                }
            }
            let table = match (strtab, strsz) {
                (Some(addr), Some(size)) => {
                    string_table(path, data, &segments_raw(data, endian, hdr)?, addr, size)?
                }
                _ => &[][..],
            };
            let origin = path
                .parent()
                .map(|d| d.to_string_lossy().into_owned())
                .unwrap_or_default();
            for d in dyns {
                let tag = d.tag32(endian);
                if tag == Some(elf::DT_NULL) {
                    break;
                }
                if !matches!(
                    tag,
                    Some(elf::DT_NEEDED) | Some(elf::DT_RUNPATH) | Some(elf::DT_RPATH)
                ) {
                    continue;
                }
                let off = usize::try_from(d.d_val(endian)).unwrap_or(usize::MAX);
                let s = c_str_at(table, off).ok_or(Error::Malformed {
                    path: p(),
                    what: "dynamic string out of the string table",
                })?;
                match tag {
                    Some(elf::DT_NEEDED) => needed.push(s.to_owned()),
                    Some(elf::DT_RUNPATH) => runpath.extend(split_path(s, &origin)),
                    _ => rpath.extend(split_path(s, &origin)),
                }
            }
        }

        Ok(ElfImage {
            path: path.to_path_buf(),
            kind,
            segments,
            relro,
            interp,
            needed,
            runpath,
            rpath,
            file_pages: (data.len() as u64).div_ceil(PAGE_SIZE),
        })
    }

    /// Bytes from the first segment's first page to the last segment's end: the size of
    /// the region a loader reserves before it places the segments.
    pub fn span(&self) -> u64 {
        let first = self.segments[0].vaddr;
        let last = self
            .segments
            .last()
            .expect("at least one segment, checked in parse");
        last.vaddr + last.mem_len - first
    }
}

/// The raw (file offset, vaddr, filesz) of every PT_LOAD, to translate a dynamic
/// address into a file offset.
fn segments_raw(
    data: &[u8],
    endian: Endianness,
    hdr: &elf::FileHeader64<Endianness>,
) -> Result<Vec<(u64, u64, u64)>, Error> {
    let phdrs = hdr.program_headers(endian, data).unwrap_or(&[]);
    Ok(phdrs
        .iter()
        .filter(|ph| ph.p_type(endian) == elf::PT_LOAD)
        .map(|ph| (ph.p_offset(endian), ph.p_vaddr(endian), ph.p_filesz(endian)))
        .collect())
}

fn string_table<'d>(
    path: &Path,
    data: &'d [u8],
    loads: &[(u64, u64, u64)],
    addr: u64,
    size: u64,
) -> Result<&'d [u8], Error> {
    let bad = || Error::Malformed {
        path: path.to_path_buf(),
        what: "DT_STRTAB is outside every PT_LOAD",
    };
    let &(off, vaddr, _) = loads
        .iter()
        .find(|&&(_, v, fsz)| addr >= v && addr.saturating_add(size) <= v.saturating_add(fsz))
        .ok_or_else(bad)?;
    let start = usize::try_from(addr - vaddr + off).map_err(|_| bad())?;
    let end = start.checked_add(usize::try_from(size).map_err(|_| bad())?);
    match end {
        Some(end) if end <= data.len() => Ok(&data[start..end]),
        _ => Err(Error::Truncated {
            path: path.to_path_buf(),
            what: "dynamic string table",
        }),
    }
}

fn c_str_at(table: &[u8], off: usize) -> Option<&str> {
    let rest = table.get(off..)?;
    let len = rest.iter().position(|&b| b == 0)?;
    std::str::from_utf8(&rest[..len]).ok()
}

fn split_path(s: &str, origin: &str) -> Vec<String> {
    s.split(':')
        .filter(|d| !d.is_empty())
        .map(|d| d.replace("${ORIGIN}", origin).replace("$ORIGIN", origin))
        .collect()
}

fn load_segment(
    path: &Path,
    data: &[u8],
    endian: Endianness,
    ph: &elf::ProgramHeader64<Endianness>,
) -> Result<Segment, Error> {
    let bad = |what| Error::Malformed {
        path: path.to_path_buf(),
        what,
    };
    let (vaddr, offset) = (ph.p_vaddr(endian), ph.p_offset(endian));
    let (filesz, memsz) = (ph.p_filesz(endian), ph.p_memsz(endian));
    if memsz < filesz {
        return Err(bad("PT_LOAD p_memsz < p_filesz"));
    }
    let in_page = vaddr & (PAGE_SIZE - 1);
    if offset & (PAGE_SIZE - 1) != in_page {
        return Err(bad(
            "PT_LOAD p_offset and p_vaddr differ modulo the page size",
        ));
    }
    match offset.checked_add(filesz) {
        Some(end) if end <= data.len() as u64 => {}
        Some(_) => {
            return Err(Error::Truncated {
                path: path.to_path_buf(),
                what: "PT_LOAD segment runs past the end of the file",
            })
        }
        None => return Err(bad("PT_LOAD file range overflows")),
    }
    let overflow = || bad("PT_LOAD address range overflows");
    let end = vaddr.checked_add(memsz).ok_or_else(overflow)?;
    let mem_len = align_up(end).ok_or_else(overflow)? - align_down(vaddr);
    let file_len = if filesz == 0 {
        0
    } else {
        align_up(in_page + filesz).ok_or_else(overflow)?
    };
    let f = ph.p_flags(endian);
    Ok(Segment {
        vaddr: align_down(vaddr),
        pgoff: align_down(offset) / PAGE_SIZE,
        file_len: file_len.min(mem_len),
        mem_len,
        prot: Prot {
            read: f & elf::PF_R != 0,
            write: f & elf::PF_W != 0,
            exec: f & elf::PF_X != 0,
        },
    })
}

/// Where ld.so looks for a `DT_NEEDED` name that has no `/` in it.
#[derive(Clone, Debug)]
pub struct SearchPath {
    /// Searched after `DT_RPATH`/`DT_RUNPATH`, like ld.so's trusted directories.
    pub default_dirs: Vec<PathBuf>,
    /// Searched before the object's own `DT_RUNPATH`, like `LD_LIBRARY_PATH` (empty
    /// by default: the model does not read the environment).
    pub library_path: Vec<PathBuf>,
}

impl Default for SearchPath {
    fn default() -> Self {
        SearchPath {
            default_dirs: DEFAULT_LIB_DIRS.iter().map(PathBuf::from).collect(),
            library_path: Vec::new(),
        }
    }
}

impl SearchPath {
    /// Finds and loads `name` as needed by `by`, the way ld.so does: a name with a `/`
    /// is a path; otherwise `DT_RPATH` (only when there is no `DT_RUNPATH`), the
    /// library path, `DT_RUNPATH`, then the default directories. A candidate that exists
    /// but is not a 64-bit x86-64 ELF object is skipped, as ld.so skips it.
    pub fn find(&self, name: &str, by: &ElfImage) -> Result<Arc<ElfImage>, Error> {
        if name.contains('/') {
            return ElfImage::load(Path::new(name)).map(Arc::new);
        }
        let mut dirs: Vec<PathBuf> = Vec::new();
        if by.runpath.is_empty() {
            dirs.extend(by.rpath.iter().map(PathBuf::from));
        }
        dirs.extend(self.library_path.iter().cloned());
        dirs.extend(by.runpath.iter().map(PathBuf::from));
        dirs.extend(self.default_dirs.iter().cloned());
        for dir in dirs {
            let candidate = dir.join(name);
            match ElfImage::load(&candidate) {
                Ok(img) => return Ok(Arc::new(img)),
                // Missing here, or the wrong kind of file: ld.so goes on searching.
                Err(_) => continue,
            }
        }
        Err(Error::LibraryNotFound {
            name: name.to_owned(),
            needed_by: by.path.clone(),
        })
    }
}

/// Everything one `exec` maps: the program, its interpreter, and every library it needs
/// transitively, in the order ld.so loads them (breadth-first over `DT_NEEDED`, each
/// library once).
#[derive(Clone, Debug)]
pub struct LoadPlan {
    /// The executable.
    pub exe: Arc<ElfImage>,
    /// Its `PT_INTERP`, if it has one.
    pub interp: Option<Arc<ElfImage>>,
    /// The libraries in load order, not counting the interpreter.
    pub libs: Vec<Arc<ElfImage>>,
}

impl LoadPlan {
    /// Reads `path` and resolves its interpreter and libraries with `search`.
    ///
    /// Fails like execve (missing or bad executable or interpreter) or ld.so (missing
    /// library). Cost: one file read per object.
    pub fn resolve(path: &Path, search: &SearchPath) -> Result<LoadPlan, Error> {
        let exe = Arc::new(ElfImage::load(path)?);
        let interp = match &exe.interp {
            Some(i) => Some(Arc::new(ElfImage::load(Path::new(i))?)),
            None => None,
        };
        // ld.so knows itself under its SONAME; its path is enough for the model.
        let mut seen: HashSet<PathBuf> = HashSet::new();
        let mut seen_names: HashSet<String> = HashSet::new();
        seen.insert(exe.path.clone());
        if let Some(i) = &interp {
            seen.insert(i.path.clone());
            if let Some(n) = i.path.file_name() {
                seen_names.insert(n.to_string_lossy().into_owned());
            }
        }
        let mut libs = Vec::new();
        let mut queue: VecDeque<Arc<ElfImage>> = VecDeque::from([exe.clone()]);
        while let Some(obj) = queue.pop_front() {
            for name in &obj.needed {
                if !seen_names.insert(name.clone()) {
                    continue;
                }
                let lib = search.find(name, &obj)?;
                if seen.insert(lib.path.clone()) {
                    libs.push(lib.clone());
                    queue.push_back(lib);
                }
            }
        }
        Ok(LoadPlan { exe, interp, libs })
    }

    /// The executable, the interpreter, then the libraries.
    pub fn objects(&self) -> impl Iterator<Item = &Arc<ElfImage>> {
        std::iter::once(&self.exe)
            .chain(self.interp.iter())
            .chain(self.libs.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sleep() -> ElfImage {
        ElfImage::load(Path::new("/bin/sleep")).expect("/bin/sleep parses")
    }

    #[test]
    fn sleep_has_interp_libc_and_aligned_segments() {
        let img = sleep();
        assert_eq!(img.kind, ElfKind::Dyn);
        assert_eq!(img.path, std::fs::canonicalize("/bin/sleep").unwrap());
        assert!(img.interp.as_deref().unwrap().contains("ld-linux-x86-64"));
        assert!(img.needed.iter().any(|n| n == "libc.so.6"));
        assert!(img.segments.len() >= 2);
        for s in &img.segments {
            assert_eq!(s.vaddr % PAGE_SIZE, 0);
            assert_eq!(s.file_len % PAGE_SIZE, 0);
            assert!(s.mem_len >= s.file_len && s.mem_len > 0);
            assert!(s.pgoff <= img.file_pages);
        }
        assert!(img.segments.iter().any(|s| s.prot.exec && !s.prot.write));
        assert!(img.segments.iter().any(|s| s.prot.write && !s.prot.exec));
        let (rs, re) = img.relro.expect("Debian builds with -z relro");
        assert!(rs < re && rs % PAGE_SIZE == 0 && re % PAGE_SIZE == 0);
    }

    #[test]
    fn plan_of_sleep_loads_libc_once() {
        let plan = LoadPlan::resolve(Path::new("/bin/sleep"), &SearchPath::default()).unwrap();
        let libc: Vec<_> = plan
            .libs
            .iter()
            .filter(|l| l.path.file_name().unwrap() == "libc.so.6")
            .collect();
        assert_eq!(libc.len(), 1);
        let interp = plan.interp.as_ref().unwrap();
        assert!(plan.libs.iter().all(|l| l.path != interp.path));
        let paths: HashSet<_> = plan.objects().map(|o| o.path.clone()).collect();
        assert_eq!(paths.len(), plan.objects().count(), "each object once");
    }

    #[test]
    fn not_elf_truncated_and_32bit_are_errors() {
        let p = Path::new("/x");
        assert!(matches!(
            ElfImage::parse(p, b"#!/bin/sh\n"),
            Err(Error::NotElf { .. })
        ));
        assert!(matches!(ElfImage::parse(p, b""), Err(Error::NotElf { .. })));
        let data = std::fs::read("/bin/sleep").unwrap();
        for cut in [5, 20, 63, 64, 100, 500, 4096, data.len() / 2] {
            let e = ElfImage::parse(p, &data[..cut]).unwrap_err();
            assert_eq!(e.errno(), crate::error::ENOEXEC, "cut at {cut}: {e}");
        }
        let mut d32 = data.clone();
        d32[4] = elf::ELFCLASS32;
        assert!(matches!(
            ElfImage::parse(p, &d32),
            Err(Error::Unsupported { .. })
        ));
    }

    #[test]
    fn missing_library_and_missing_file() {
        let mut img = sleep();
        img.needed = vec!["libdoes-not-exist-aspace.so.9".into()];
        let e = SearchPath::default()
            .find(&img.needed[0], &img)
            .unwrap_err();
        assert!(matches!(e, Error::LibraryNotFound { .. }), "{e}");
        assert_eq!(e.errno(), crate::error::ENOENT);
        let e =
            LoadPlan::resolve(Path::new("/no/such/binary"), &SearchPath::default()).unwrap_err();
        assert!(matches!(e, Error::NotFound { .. }));
    }

    #[test]
    fn runpath_origin_is_substituted() {
        assert_eq!(
            split_path("$ORIGIN/../lib:/opt/x::${ORIGIN}", "/a/bin"),
            vec!["/a/bin/../lib", "/opt/x", "/a/bin"]
        );
    }

    #[test]
    fn garbage_never_panics() {
        let data = std::fs::read("/bin/sleep").unwrap();
        // Flip bytes across the headers: every result is Ok or an ENOEXEC-ish error.
        for i in (0..data.len().min(1024)).step_by(3) {
            let mut d = data.clone();
            d[i] ^= 0xff;
            if let Err(e) = ElfImage::parse(Path::new("/x"), &d) {
                assert!(e.errno() == crate::error::ENOEXEC, "byte {i}: {e}");
            }
        }
    }
}
