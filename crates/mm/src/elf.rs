//! The ELF side of `exec`: what the kernel's loader and ld.so read from a file.
//!
//! [`ElfImage::load`] reads one file's program headers (with the `object` crate's
//! header types) into page-aligned [`Segment`]s, its `PT_INTERP`, its `PT_GNU_RELRO`
//! range, its `DT_NEEDED` / `DT_RUNPATH` / `DT_RPATH` entries and its GNU build-id.
//! Library search and the load plan (what ld.so does before it maps anything) live in
//! [`crate::ldso`], which builds on this module.
//!
//! Everything here is plain data: an image is immutable once built, `Send + Sync`, and
//! costs a few hundred bytes plus its strings.
//!
//! # Bounded reads
//! `load` never reads a whole file. It checks first that the path names a regular file
//! (a FIFO, device, socket or directory is refused with [`Error::NotRegular`], EACCES,
//! as execve and ld.so refuse it, without opening it for reading), then reads only the
//! ELF header, the program header table (at most [`MAX_PHDR_BYTES`], the kernel's
//! limit), `PT_INTERP` (at most `PATH_MAX`), `PT_DYNAMIC` (at most [`MAX_DYNAMIC_BYTES`])
//! and the dynamic string table (at most [`MAX_DYNSTR_BYTES`]). So a huge file costs at
//! most a few MiB of memory and a file of any size is answered at once.
//!
//! Bad input never panics: a non-ELF file, a truncated one, a 32-bit or foreign one,
//! or a missing library each give an [`Error`] with the errno ld.so or execve would give.

use crate::error::Error;
use crate::file::FileId;
use crate::vma::Prot;
use crate::PAGE_SIZE;
use object::elf;
use object::read::elf::{Dyn as _, FileHeader as _, NoteIterator, ProgramHeader as _};
use object::Endianness;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// The largest program header table accepted, in bytes (the kernel's limit in
/// `elf_read_phdrs`).
pub const MAX_PHDR_BYTES: u64 = 65536;
/// The largest `PT_DYNAMIC` segment read, in bytes.
pub const MAX_DYNAMIC_BYTES: u64 = 1 << 20;
/// The largest dynamic string table read, in bytes.
pub const MAX_DYNSTR_BYTES: u64 = 16 << 20;
/// `PATH_MAX`: the longest `PT_INTERP` the kernel accepts, NUL included.
pub const PATH_MAX: u64 = 4096;
/// The largest `PT_NOTE` segment or `SHT_NOTE` section searched for the build-id, in
/// bytes.
pub const MAX_NOTE_BYTES: u64 = 64 << 10;
/// The largest section header table read (for a build-id in a note section only), in
/// bytes: 4,096 sections.
pub const MAX_SHDR_BYTES: u64 = 4096 * 64;

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

    /// One past the last byte of the segment in memory (page aligned).
    pub fn end(&self) -> u64 {
        self.vaddr + self.mem_len
    }
}

/// What one ELF file tells the loaders. Immutable; share it with `Arc`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElfImage {
    /// The canonical path (symlinks resolved, as `/proc/PID/maps` prints it).
    pub path: PathBuf,
    /// `ET_EXEC` or `ET_DYN`.
    pub kind: ElfKind,
    /// `PT_LOAD` segments in file order (checked: sorted, not overlapping, every
    /// address below 2^63).
    pub segments: Vec<Segment>,
    /// The unaligned `p_vaddr` of the first `PT_LOAD` (the kernel computes a PIE's
    /// load bias from it).
    pub first_vaddr: u64,
    /// The largest power-of-two `p_align` of the `PT_LOAD`s, at least the page size
    /// (the kernel aligns a PIE's base to it).
    pub max_align: u64,
    /// The page-aligned `[start, end)` link-address range ld.so makes read-only after
    /// relocation (`PT_GNU_RELRO`, start rounded down, end rounded down), if non-empty.
    pub relro: Option<(u64, u64)>,
    /// `PT_INTERP`, the program interpreter (ld.so), if any.
    pub interp: Option<String>,
    /// Whether its `PT_GNU_STACK` (the last one) asks for an executable stack
    /// (`PF_X`): the kernel then gives the executable's `[stack]` `rwx`
    /// (`EXSTACK_ENABLE_X`). Without one, x86-64 gives `rw-`.
    pub exec_stack: bool,
    /// Whether the file is set-user-ID or set-group-ID, for an image read from a
    /// file ([`ElfImage::load`]): its exec clears `ADDR_NO_RANDOMIZE`
    /// (`PER_CLEAR_ON_SETID`).
    pub set_id: bool,
    /// Whether the file has a `PT_DYNAMIC` segment (a static-pie has one, a static
    /// non-PIE binary does not).
    pub has_dynamic: bool,
    /// `DT_NEEDED` names, in order.
    pub needed: Vec<String>,
    /// `DT_RUNPATH` directories (after `$ORIGIN` substitution).
    pub runpath: Vec<String>,
    /// `DT_RPATH` directories (after `$ORIGIN` substitution); ld.so ignores them when
    /// `DT_RUNPATH` is present.
    pub rpath: Vec<String>,
    /// The file's size in pages (rounded up).
    pub file_pages: u64,
    /// The file's device and inode, for an image read from a file ([`ElfImage::load`]).
    pub file_id: Option<FileId>,
    /// The GNU build-id (`NT_GNU_BUILD_ID` in a `PT_NOTE`, else in a `SHT_NOTE`
    /// section), if the file has one: the linker's hash of the file's contents, which
    /// names one build of it.
    pub build_id: Option<Vec<u8>>,
}

fn align_down(x: u64) -> u64 {
    x & !(PAGE_SIZE - 1)
}

fn align_up(x: u64) -> Option<u64> {
    Some(x.checked_add(PAGE_SIZE - 1)? & !(PAGE_SIZE - 1))
}

/// Where the bytes come from: a slice in memory, or an open regular file read in
/// bounded pieces.
enum Source<'a> {
    /// The file's first bytes and its length; bytes past the slice read as zeros.
    Mem(&'a [u8], u64),
    File(&'a std::fs::File, u64),
}

impl Source<'_> {
    fn len(&self) -> u64 {
        match self {
            Source::Mem(_, len) | Source::File(_, len) => *len,
        }
    }

    /// `len` bytes at `off`, or `None` when the range is not inside the file.
    fn read(&self, off: u64, len: u64) -> Option<Cow<'_, [u8]>> {
        let end = off.checked_add(len)?;
        if end > self.len() {
            return None;
        }
        match self {
            Source::Mem(d, _) if end <= d.len() as u64 => {
                Some(Cow::Borrowed(&d[off as usize..end as usize]))
            }
            Source::Mem(d, _) => {
                let mut buf = vec![0; usize::try_from(len).ok()?];
                if let Some(have) = d.get(off as usize..) {
                    buf[..have.len()].copy_from_slice(have);
                }
                Some(Cow::Owned(buf))
            }
            Source::File(f, _) => {
                use std::os::unix::fs::FileExt as _;
                let mut buf = vec![0; usize::try_from(len).ok()?];
                f.read_exact_at(&mut buf, off).ok()?;
                Some(Cow::Owned(buf))
            }
        }
    }
}

/// `O_NONBLOCK` (x86-64 Linux): opening a FIFO that raced our type check must not wait
/// for a writer.
const O_NONBLOCK: i32 = 0o4000;

/// Opens `path` for reading if it is a regular file; anything else is
/// [`Error::NotRegular`] (EACCES), checked before the open and again on the open file.
/// Returns the file and its metadata.
pub(crate) fn open_regular(path: &Path) -> Result<(std::fs::File, std::fs::Metadata), Error> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let not_regular = || Error::NotRegular {
        path: path.to_path_buf(),
    };
    let meta = std::fs::metadata(path).map_err(|e| Error::from_io(path, &e))?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::from_io(path, &e))?;
    let meta = f.metadata().map_err(|e| Error::from_io(path, &e))?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    Ok((f, meta))
}

impl ElfImage {
    /// Reads and parses the file at `path` (bounded reads; see the module docs). The
    /// image's `path` is the canonical one.
    pub fn load(path: &Path) -> Result<ElfImage, Error> {
        let canon = std::fs::canonicalize(path).map_err(|e| Error::from_io(path, &e))?;
        let (file, meta) = open_regular(&canon)?;
        let mut img = ElfImage::parse_from(&canon, &Source::File(&file, meta.len()))?;
        img.file_id = Some(FileId::of(&meta));
        img.set_id = {
            use std::os::unix::fs::PermissionsExt as _;
            meta.permissions().mode() & 0o6000 != 0
        };
        Ok(img)
    }

    /// Parses an ELF file already in memory; `path` is recorded as is and used for
    /// `$ORIGIN`.
    pub fn parse(path: &Path, data: &[u8]) -> Result<ElfImage, Error> {
        ElfImage::parse_from(path, &Source::Mem(data, data.len() as u64))
    }

    /// Parses a file of `file_len` bytes of which `prefix` is the start (the rest
    /// reads as zeros): for fuzzing the headers of a big file without its body. A
    /// `prefix` longer than `file_len` is cut to it.
    pub fn parse_prefix(path: &Path, prefix: &[u8], file_len: u64) -> Result<ElfImage, Error> {
        let cut = &prefix[..prefix
            .len()
            .min(usize::try_from(file_len).unwrap_or(usize::MAX))];
        ElfImage::parse_from(path, &Source::Mem(cut, file_len))
    }

    fn parse_from(path: &Path, src: &Source<'_>) -> Result<ElfImage, Error> {
        let p = || path.to_path_buf();
        let ident = src.read(0, src.len().min(5)).unwrap_or_default();
        if ident.len() < 4 || ident[..4] != elf::ELFMAG {
            return Err(Error::NotElf { path: p() });
        }
        if ident.len() < 5 || ident[4] != elf::ELFCLASS64 {
            return Err(Error::Unsupported {
                path: p(),
                what: "not a 64-bit ELF file",
            });
        }
        let hsize = std::mem::size_of::<elf::FileHeader64<Endianness>>() as u64;
        let hbytes = src.read(0, hsize).ok_or(Error::Truncated {
            path: p(),
            what: "file header",
        })?;
        let hdr =
            elf::FileHeader64::<Endianness>::parse(&*hbytes).map_err(|_| Error::Malformed {
                path: p(),
                what: "bad ELF identification bytes",
            })?;
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
        let phsize = std::mem::size_of::<elf::ProgramHeader64<Endianness>>() as u64;
        if u64::from(hdr.e_phentsize(endian)) != phsize {
            return Err(Error::Malformed {
                path: p(),
                what: "e_phentsize is not the size of a program header",
            });
        }
        let table = u64::from(hdr.e_phnum(endian)) * phsize;
        if table == 0 || table > MAX_PHDR_BYTES {
            return Err(Error::Malformed {
                path: p(),
                what: "program header table empty or over 64 KiB",
            });
        }
        let pbytes = src
            .read(hdr.e_phoff(endian), table)
            .ok_or(Error::Truncated {
                path: p(),
                what: "program header table",
            })?;
        let phdrs: &[elf::ProgramHeader64<Endianness>] = object::pod::slice_from_all_bytes(&pbytes)
            .map_err(|_| Error::Truncated {
                path: p(),
                what: "program header table",
            })?;

        let mut segments = Vec::new();
        let mut relro = None;
        let mut exec_stack = false;
        let mut interp = None;
        let mut dynamic: Option<(u64, u64)> = None;
        let mut max_align = PAGE_SIZE;
        let mut first_vaddr = None;
        let mut notes = Vec::new();
        for ph in phdrs {
            match ph.p_type(endian) {
                // A PT_LOAD of no bytes in memory maps nothing (ld.so skips its
                // overlay and bss); it would only make empty ranges.
                elf::PT_LOAD if ph.p_memsz(endian) == 0 && ph.p_filesz(endian) == 0 => {}
                elf::PT_LOAD => {
                    segments.push(load_segment(path, src.len(), endian, ph)?);
                    first_vaddr.get_or_insert(ph.p_vaddr(endian));
                    let a = ph.p_align(endian);
                    if a.is_power_of_two() {
                        max_align = max_align.max(a);
                    }
                }
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
                elf::PT_GNU_STACK => exec_stack = ph.p_flags(endian) & elf::PF_X != 0,
                elf::PT_INTERP if interp.is_none() => {
                    let len = ph.p_filesz(endian);
                    if !(2..=PATH_MAX).contains(&len) {
                        return Err(Error::Malformed {
                            path: p(),
                            what: "PT_INTERP shorter than 2 bytes or longer than PATH_MAX",
                        });
                    }
                    let bytes = src.read(ph.p_offset(endian), len).ok_or(Error::Truncated {
                        path: p(),
                        what: "PT_INTERP",
                    })?;
                    let nul = bytes.iter().position(|&b| b == 0).ok_or(Error::Malformed {
                        path: p(),
                        what: "PT_INTERP is not NUL-terminated",
                    })?;
                    let s = std::str::from_utf8(&bytes[..nul]).map_err(|_| Error::Malformed {
                        path: p(),
                        what: "PT_INTERP is not UTF-8",
                    })?;
                    if s.is_empty() {
                        return Err(Error::Malformed {
                            path: p(),
                            what: "PT_INTERP is empty",
                        });
                    }
                    interp = Some(s.to_owned());
                }
                elf::PT_DYNAMIC => dynamic = Some((ph.p_offset(endian), ph.p_filesz(endian))),
                elf::PT_NOTE => notes.push(ph),
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
            if w[1].vaddr < w[0].end() {
                return Err(Error::Malformed {
                    path: p(),
                    what: "PT_LOAD segments overlap or are out of order",
                });
            }
        }

        let (mut needed, mut runpath, mut rpath) = (Vec::new(), Vec::new(), Vec::new());
        if let Some((off, len)) = dynamic {
            let truncated = Error::Truncated {
                path: p(),
                what: "PT_DYNAMIC",
            };
            if len > MAX_DYNAMIC_BYTES {
                return Err(Error::Malformed {
                    path: p(),
                    what: "PT_DYNAMIC over 1 MiB",
                });
            }
            let dsize = std::mem::size_of::<elf::Dyn64<Endianness>>() as u64;
            let dbytes = src.read(off, len - len % dsize).ok_or(truncated)?;
            let dyns: &[elf::Dyn64<Endianness>] = object::pod::slice_from_all_bytes(&dbytes)
                .map_err(|_| Error::Truncated {
                    path: p(),
                    what: "PT_DYNAMIC",
                })?;
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
                (Some(addr), Some(size)) => string_table(path, src, phdrs, endian, addr, size)?,
                _ => Cow::Borrowed(&[][..]),
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
                let s = c_str_at(&table, off).ok_or(Error::Malformed {
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
            first_vaddr: first_vaddr.unwrap_or(0),
            max_align,
            relro,
            exec_stack,
            set_id: false,
            interp,
            has_dynamic: dynamic.is_some(),
            needed,
            runpath,
            rpath,
            file_pages: src.len().div_ceil(PAGE_SIZE),
            file_id: None,
            build_id: notes
                .iter()
                .find_map(|ph| build_id(src, endian, ph))
                .or_else(|| section_build_id(src, endian, hdr)),
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
        last.end() - first
    }
}

/// The GNU build-id in the `PT_NOTE` segment `ph`, if it holds one. Notes only name
/// the build, so a note segment that is too big, outside the file or malformed is
/// skipped, not an error (the kernel and ld.so do not read it either).
fn build_id(
    src: &Source<'_>,
    endian: Endianness,
    ph: &elf::ProgramHeader64<Endianness>,
) -> Option<Vec<u8>> {
    let len = ph.p_filesz(endian);
    if len > MAX_NOTE_BYTES {
        return None;
    }
    let bytes = src.read(ph.p_offset(endian), len)?;
    gnu_build_id(endian, ph.p_align(endian), &bytes)
}

/// The GNU build-id in a `SHT_NOTE` section, for a file whose `PT_NOTE` segments do
/// not hold it: Go's linker puts `.note.gnu.build-id` in the text segment and only
/// `.note.go.buildid` in `PT_NOTE`, while `readelf -n` (which `scripts/record.sh`
/// uses) reads the sections. Skipped like [`build_id`]'s notes: a section table that
/// is absent, too big, outside the file or malformed, or in extended numbering
/// (`e_shnum` 0), names no build-id.
fn section_build_id(
    src: &Source<'_>,
    endian: Endianness,
    hdr: &elf::FileHeader64<Endianness>,
) -> Option<Vec<u8>> {
    let shsize = std::mem::size_of::<elf::SectionHeader64<Endianness>>() as u64;
    if u64::from(hdr.e_shentsize(endian)) != shsize {
        return None;
    }
    let table = u64::from(hdr.e_shnum(endian)) * shsize;
    if table == 0 || table > MAX_SHDR_BYTES {
        return None;
    }
    let sbytes = src.read(hdr.e_shoff(endian), table)?;
    let shdrs: &[elf::SectionHeader64<Endianness>] =
        object::pod::slice_from_all_bytes(&sbytes).ok()?;
    shdrs
        .iter()
        .filter(|sh| sh.sh_type.get(endian) == elf::SHT_NOTE)
        .find_map(|sh| {
            let len = sh.sh_size.get(endian);
            if len > MAX_NOTE_BYTES {
                return None;
            }
            let bytes = src.read(sh.sh_offset.get(endian), len)?;
            gnu_build_id(endian, sh.sh_addralign.get(endian), &bytes)
        })
}

/// The `NT_GNU_BUILD_ID` note's descriptor among the notes in `bytes` (aligned to
/// `align`), if there is one and the notes parse up to it.
fn gnu_build_id(endian: Endianness, align: u64, bytes: &[u8]) -> Option<Vec<u8>> {
    let mut notes =
        NoteIterator::<elf::FileHeader64<Endianness>>::new(endian, align, bytes).ok()?;
    while let Some(note) = notes.next().ok()? {
        if note.name() == elf::ELF_NOTE_GNU && note.n_type(endian) == elf::NT_GNU_BUILD_ID {
            return Some(note.desc().to_vec());
        }
    }
    None
}

/// The dynamic string table at link address `addr`, translated to a file offset
/// through the `PT_LOAD` that holds it.
fn string_table<'s>(
    path: &Path,
    src: &'s Source<'_>,
    phdrs: &[elf::ProgramHeader64<Endianness>],
    endian: Endianness,
    addr: u64,
    size: u64,
) -> Result<Cow<'s, [u8]>, Error> {
    let bad = || Error::Malformed {
        path: path.to_path_buf(),
        what: "DT_STRTAB is outside every PT_LOAD",
    };
    if size > MAX_DYNSTR_BYTES {
        return Err(Error::Malformed {
            path: path.to_path_buf(),
            what: "dynamic string table over 16 MiB",
        });
    }
    let ph = phdrs
        .iter()
        .filter(|ph| ph.p_type(endian) == elf::PT_LOAD)
        .find(|ph| {
            let (v, fsz) = (ph.p_vaddr(endian), ph.p_filesz(endian));
            addr >= v && addr.saturating_add(size) <= v.saturating_add(fsz)
        })
        .ok_or_else(bad)?;
    let off = (addr - ph.p_vaddr(endian))
        .checked_add(ph.p_offset(endian))
        .ok_or_else(bad)?;
    src.read(off, size).ok_or(Error::Truncated {
        path: path.to_path_buf(),
        what: "dynamic string table",
    })
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
    file_len: u64,
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
        Some(end) if end <= file_len => {}
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
    if end > crate::layout::TASK_SIZE {
        return Err(bad("PT_LOAD beyond the user address space"));
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ldso::{LoadPlan, SearchPath};

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

    /// `data` with every program header of type `from` set to `to`.
    fn retype_segments(data: &[u8], from: u32, to: u32) -> Vec<u8> {
        let mut d = data.to_vec();
        let le = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap());
        let phoff = le(&d[32..40]) as usize;
        let phentsize = usize::from(u16::from_le_bytes([d[54], d[55]]));
        let phnum = usize::from(u16::from_le_bytes([d[56], d[57]]));
        for i in 0..phnum {
            let at = phoff + i * phentsize;
            if u32::from_le_bytes(d[at..at + 4].try_into().unwrap()) == from {
                d[at..at + 4].copy_from_slice(&to.to_le_bytes());
            }
        }
        d
    }

    #[test]
    fn build_id_is_found_in_a_note_section_when_no_segment_holds_it() {
        // As Go's linker leaves it: `.note.gnu.build-id` in a section, no PT_NOTE.
        let p = Path::new("/x");
        let data = std::fs::read("/bin/sleep").unwrap();
        let id = ElfImage::parse(p, &data).unwrap().build_id;
        assert!(id.as_ref().is_some_and(|b| b.len() >= 8), "{id:?}");
        let no_note = retype_segments(&data, elf::PT_NOTE, elf::PT_NULL);
        assert_eq!(ElfImage::parse(p, &no_note).unwrap().build_id, id);
        // Neither a note segment nor a note section: no build-id, and no error.
        let mut neither = no_note.clone();
        let le = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap());
        let shoff = le(&neither[40..48]) as usize;
        let shnum = usize::from(u16::from_le_bytes([neither[60], neither[61]]));
        for i in 0..shnum {
            // sh_type is the second word of a 64-byte section header.
            let at = shoff + i * 64 + 4;
            if u32::from_le_bytes(neither[at..at + 4].try_into().unwrap()) == elf::SHT_NOTE {
                neither[at..at + 4].copy_from_slice(&elf::SHT_PROGBITS.to_le_bytes());
            }
        }
        assert_eq!(ElfImage::parse(p, &neither).unwrap().build_id, None);
        // A section table past the end of the file names no build-id either.
        let mut cut_table = no_note.clone();
        cut_table[40..48].copy_from_slice(&(data.len() as u64).to_le_bytes());
        assert_eq!(ElfImage::parse(p, &cut_table).unwrap().build_id, None);
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
