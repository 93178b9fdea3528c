//! What the dynamic loader (glibc's ld.so) does before it maps anything: find every
//! library a program needs, breadth-first over `DT_NEEDED`, each once, in ld.so's
//! search order.
//!
//! # Search order (glibc 2.36, `ld.so --help` on this machine)
//! For a `DT_NEEDED` name with no `/`:
//! 1. `DT_RPATH` of the object that needs it, then of the object that loaded that one,
//!    up to the executable, each only while the object has no `DT_RUNPATH`;
//! 2. `LD_LIBRARY_PATH` ([`SearchPath::library_path`]; empty unless built with
//!    [`SearchPath::from_env`]);
//! 3. `DT_RUNPATH` of the object that needs it;
//! 4. `/etc/ld.so.cache` (parsed: [`LdCache`]; the entries for x86-64 libc6 objects);
//! 5. the system directories ([`DEFAULT_LIB_DIRS`]).
//!
//! In steps 1-3 and 5 every directory `D` is searched as `D/glibc-hwcaps/x86-64-vN` for
//! each level the CPU supports (best first), then `D` itself. Not modelled: the legacy
//! hwcap subdirectories (`haswell`, `tls`, `x86_64`, ...; glibc 2.37 dropped them),
//! cache entries that only exist for a glibc-hwcaps subdirectory (they are skipped;
//! directory probing still finds those files), `DT_FLAGS_1` `NODEFLIB`, and
//! `LD_PRELOAD`.
//!
//! Reading costs one bounded header read per candidate file (see [`crate::elf`]) and
//! one read of the cache file per [`SearchPath`].

use crate::elf::{ElfImage, ElfKind};
use crate::error::Error;
use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// ld.so's system search directories on Debian x86-64, in its order (`ld.so --help`:
/// "system search path").
pub const DEFAULT_LIB_DIRS: [&str; 4] = [
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib",
    "/usr/lib",
];

/// The path of ld.so's cache.
pub const LD_SO_CACHE: &str = "/etc/ld.so.cache";

/// `/etc/ld.so.cache` (the "glibc-ld.so.cache1.1" format): library name -> path, for
/// the entries an x86-64 ld.so accepts, in the cache's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LdCache {
    entries: Vec<(String, PathBuf)>,
}

/// `FLAG_ELF_LIBC6 | FLAG_X8664_LIB64`: the entry kind x86-64 ld.so accepts.
const CACHE_FLAGS_X86_64: u32 = 0x0303;
const CACHE_MAGIC: &[u8] = b"glibc-ld.so.cache1.1";

impl LdCache {
    /// Reads and parses `path`; `None` if it is missing or not a cache ld.so would use.
    pub fn load(path: &Path) -> Option<LdCache> {
        let (f, meta) = crate::elf::open_regular(path).ok()?;
        let len = meta.len();
        if len > 64 << 20 {
            return None;
        }
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(f, len), &mut data).ok()?;
        LdCache::parse(&data)
    }

    /// Parses a cache image. Bad or truncated data gives `None` (ld.so ignores such a
    /// cache), never a panic.
    pub fn parse(data: &[u8]) -> Option<LdCache> {
        // An old-format header may come first; the new one follows it.
        let base = data
            .windows(CACHE_MAGIC.len())
            .take(4096)
            .position(|w| w == CACHE_MAGIC)?;
        let d = &data[base..];
        let u32_at = |off: usize| -> Option<u32> {
            Some(u32::from_le_bytes(d.get(off..off + 4)?.try_into().ok()?))
        };
        let u64_at = |off: usize| -> Option<u64> {
            Some(u64::from_le_bytes(d.get(off..off + 8)?.try_into().ok()?))
        };
        let nlibs = u32_at(20)? as usize;
        const HEADER: usize = 48;
        const ENTRY: usize = 24;
        let mut entries = Vec::new();
        for i in 0..nlibs {
            let at = HEADER.checked_add(i.checked_mul(ENTRY)?)?;
            let (flags, key, value) = (u32_at(at)?, u32_at(at + 4)?, u32_at(at + 8)?);
            let hwcap = u64_at(at + 16)?;
            if flags != CACHE_FLAGS_X86_64 || hwcap != 0 {
                continue;
            }
            let s = |off: u32| -> Option<&str> {
                let rest = d.get(off as usize..)?;
                let n = rest.iter().position(|&b| b == 0)?;
                std::str::from_utf8(&rest[..n]).ok()
            };
            entries.push((s(key)?.to_owned(), PathBuf::from(s(value)?)));
        }
        Some(LdCache { entries })
    }

    /// The path the cache gives for `name`, the first entry that names it.
    pub fn lookup(&self, name: &str) -> Option<&Path> {
        self.entries
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, p)| p.as_path())
    }

    /// Number of usable entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the cache has no usable entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The `glibc-hwcaps` subdirectories this CPU supports, best first (x86-64-v4, -v3,
/// -v2), from the flags in `/proc/cpuinfo`.
pub fn supported_hwcaps() -> Vec<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags: HashSet<&str> = info
        .lines()
        .find(|l| l.starts_with("flags"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, f)| f.split_whitespace().collect())
        .unwrap_or_default();
    let has = |need: &[&str]| need.iter().all(|f| flags.contains(f));
    let v2 = has(&["cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"]);
    let v3 = v2
        && has(&[
            "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave",
        ]);
    let v4 = v3 && has(&["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"]);
    [(v4, "x86-64-v4"), (v3, "x86-64-v3"), (v2, "x86-64-v2")]
        .into_iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| n.to_owned())
        .collect()
}

/// Where ld.so looks for a `DT_NEEDED` name that has no `/` in it (see the module
/// docs for the order). Immutable once built; share it freely.
#[derive(Clone, Debug)]
pub struct SearchPath {
    /// Searched last, like ld.so's system directories.
    pub default_dirs: Vec<PathBuf>,
    /// Searched after `DT_RPATH` and before `DT_RUNPATH`, like `LD_LIBRARY_PATH`.
    pub library_path: Vec<PathBuf>,
    /// The parsed `/etc/ld.so.cache`, searched after `DT_RUNPATH`.
    pub cache: Option<Arc<LdCache>>,
    /// The `glibc-hwcaps` subdirectories probed in every directory, best first.
    pub hwcaps: Vec<String>,
}

impl Default for SearchPath {
    /// The machine's ld.so as a process with an empty environment sees it: the cache,
    /// the supported hwcaps levels, the system directories, no `LD_LIBRARY_PATH`.
    fn default() -> Self {
        SearchPath {
            default_dirs: DEFAULT_LIB_DIRS.iter().map(PathBuf::from).collect(),
            library_path: Vec::new(),
            cache: LdCache::load(Path::new(LD_SO_CACHE)).map(Arc::new),
            hwcaps: supported_hwcaps(),
        }
    }
}

/// How ld.so found a library; decides whether it had to map its cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoundVia {
    /// A `DT_NEEDED` name with a `/` in it.
    Path,
    /// `DT_RPATH`, `LD_LIBRARY_PATH` or `DT_RUNPATH`.
    Dirs,
    /// `/etc/ld.so.cache` (ld.so mapped the cache to look it up).
    Cache,
    /// The system directories, after a cache lookup that missed.
    Default,
}

impl SearchPath {
    /// The default search path plus `LD_LIBRARY_PATH` from this process's environment
    /// (split at `:` and `;`, as ld.so splits it).
    pub fn from_env() -> SearchPath {
        let mut s = SearchPath::default();
        if let Some(v) = std::env::var_os("LD_LIBRARY_PATH") {
            s.library_path = v
                .to_string_lossy()
                .split([':', ';'])
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .collect();
        }
        s
    }

    fn try_dir(&self, dir: &Path, name: &str) -> Option<ElfImage> {
        for h in &self.hwcaps {
            if let Ok(img) = ElfImage::load(&dir.join("glibc-hwcaps").join(h).join(name)) {
                if usable_library(&img) {
                    return Some(img);
                }
            }
        }
        ElfImage::load(&dir.join(name)).ok().filter(usable_library)
    }

    /// Finds and loads `name` as needed by `by` (whose loaders, nearest first, are
    /// `chain`), the way ld.so does. A candidate that exists but is not a 64-bit
    /// x86-64 ELF object is skipped, as ld.so skips it.
    pub fn find(&self, name: &str, by: &ElfImage) -> Result<Arc<ElfImage>, Error> {
        self.find_via(name, by, &[]).map(|(img, _)| img)
    }

    /// [`SearchPath::find`], also saying how the library was found. `chain` lists the
    /// objects that loaded `by`, nearest first, ending with the executable: their
    /// `DT_RPATH`s are searched too while `by` has no `DT_RUNPATH`.
    pub fn find_via(
        &self,
        name: &str,
        by: &ElfImage,
        chain: &[&ElfImage],
    ) -> Result<(Arc<ElfImage>, FoundVia), Error> {
        if name.contains('/') {
            return ElfImage::load(Path::new(name)).map(|i| (Arc::new(i), FoundVia::Path));
        }
        let mut dirs: Vec<PathBuf> = Vec::new();
        if by.runpath.is_empty() {
            for obj in std::iter::once(by).chain(chain.iter().copied()) {
                if obj.runpath.is_empty() {
                    dirs.extend(obj.rpath.iter().map(PathBuf::from));
                }
            }
        }
        dirs.extend(self.library_path.iter().cloned());
        dirs.extend(by.runpath.iter().map(PathBuf::from));
        for dir in &dirs {
            if let Some(img) = self.try_dir(dir, name) {
                return Ok((Arc::new(img), FoundVia::Dirs));
            }
        }
        if let Some(cache) = &self.cache {
            if let Some(p) = cache.lookup(name) {
                if let Ok(img) = ElfImage::load(p) {
                    if usable_library(&img) {
                        return Ok((Arc::new(img), FoundVia::Cache));
                    }
                }
            }
        }
        for dir in &self.default_dirs {
            if let Some(img) = self.try_dir(dir, name) {
                return Ok((Arc::new(img), FoundVia::Default));
            }
        }
        Err(Error::LibraryNotFound {
            name: name.to_owned(),
            needed_by: by.path.clone(),
        })
    }
}

/// ld.so loads only shared objects (`ET_DYN`); an `ET_EXEC` candidate is skipped.
fn usable_library(img: &ElfImage) -> bool {
    img.kind == ElfKind::Dyn
}

/// How a program is linked, as the kernel and ld.so see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Linkage {
    /// A `PT_INTERP` names ld.so, which maps the libraries.
    Dynamic,
    /// `ET_EXEC` with no `PT_INTERP`: no ld.so, no libc mapping (a statically linked
    /// program shows none of the reverse-map contention of libraries).
    Static,
    /// `ET_DYN` with no `PT_INTERP`: a static-pie, or ld.so itself run as the program.
    /// The kernel loads it top-down in the mmap area.
    StaticPie,
}

impl Linkage {
    /// A short name for reports ("dynamic", "static", "static-pie").
    pub fn name(self) -> &'static str {
        match self {
            Linkage::Dynamic => "dynamic",
            Linkage::Static => "static",
            Linkage::StaticPie => "static-pie",
        }
    }

    /// The linkage of an executable image.
    pub fn of(exe: &ElfImage) -> Linkage {
        match (&exe.interp, exe.kind) {
            (Some(_), _) => Linkage::Dynamic,
            (None, ElfKind::Exec) => Linkage::Static,
            (None, ElfKind::Dyn) => Linkage::StaticPie,
        }
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
    /// Index into `libs` of the first library ld.so looked up in its cache: ld.so maps
    /// `/etc/ld.so.cache` just before loading it (and unmaps it once every library is
    /// loaded). `None` when no lookup reached the cache.
    pub first_cache_lookup: Option<usize>,
}

impl LoadPlan {
    /// Reads `path` and resolves its interpreter and libraries with `search`.
    ///
    /// Fails like execve (missing, non-regular or bad executable or interpreter) or
    /// ld.so (missing library). Cost: a few bounded reads per object.
    pub fn resolve(path: &Path, search: &SearchPath) -> Result<LoadPlan, Error> {
        let exe = Arc::new(ElfImage::load(path)?);
        LoadPlan::resolve_image(exe, search)
    }

    /// Resolves the interpreter and libraries of an executable image already read
    /// (for example a crafted one in a test or fuzz target).
    pub fn resolve_image(exe: Arc<ElfImage>, search: &SearchPath) -> Result<LoadPlan, Error> {
        let interp = match &exe.interp {
            Some(i) => Some(Arc::new(ElfImage::load(Path::new(i))?)),
            None => None,
        };
        // ld.so knows itself under its file name; it is never loaded twice.
        let mut seen: HashSet<PathBuf> = HashSet::new();
        let mut seen_names: HashSet<String> = HashSet::new();
        seen.insert(exe.path.clone());
        if let Some(i) = &interp {
            seen.insert(i.path.clone());
            if let Some(n) = i.path.file_name() {
                seen_names.insert(n.to_string_lossy().into_owned());
            }
        }
        let mut libs: Vec<Arc<ElfImage>> = Vec::new();
        // Which object loaded each library (index into libs, None = the executable).
        let mut loader: Vec<Option<usize>> = Vec::new();
        let mut first_cache_lookup = None;
        // A static program has no ld.so to load anything.
        let mut queue: VecDeque<Option<usize>> = VecDeque::new();
        if interp.is_some() {
            queue.push_back(None);
        }
        while let Some(at) = queue.pop_front() {
            let obj = match at {
                None => exe.clone(),
                Some(i) => libs[i].clone(),
            };
            let mut chain: Vec<&ElfImage> = Vec::new();
            let mut up = at.and_then(|i| loader[i]);
            while let Some(i) = up {
                chain.push(&libs[i]);
                up = loader[i];
            }
            if at.is_some() {
                chain.push(&exe);
            }
            let mut found = Vec::new();
            for name in &obj.needed {
                if !seen_names.insert(name.clone()) {
                    continue;
                }
                let (lib, via) = search.find_via(name, &obj, &chain)?;
                if via == FoundVia::Cache || via == FoundVia::Default {
                    first_cache_lookup.get_or_insert(libs.len() + found.len());
                }
                if seen.insert(lib.path.clone()) {
                    found.push(lib);
                }
            }
            drop(chain);
            for lib in found {
                libs.push(lib);
                loader.push(at);
                queue.push_back(Some(libs.len() - 1));
            }
        }
        if search.cache.is_none() {
            first_cache_lookup = None;
        }
        Ok(LoadPlan {
            exe,
            interp,
            libs,
            first_cache_lookup,
        })
    }

    /// How the executable is linked.
    pub fn linkage(&self) -> Linkage {
        Linkage::of(&self.exe)
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

    #[test]
    fn cache_parses_and_finds_libc() {
        let Some(cache) = LdCache::load(Path::new(LD_SO_CACHE)) else {
            eprintln!("no {LD_SO_CACHE}: skipped");
            return;
        };
        assert!(!cache.is_empty());
        let p = cache.lookup("libc.so.6").expect("libc in the cache");
        assert!(p.ends_with("libc.so.6"), "{p:?}");
        assert!(cache.lookup("libdoes-not-exist-aspace.so.9").is_none());
    }

    #[test]
    fn garbage_cache_is_none_or_ok_never_a_panic() {
        let data = std::fs::read(LD_SO_CACHE).unwrap_or_default();
        assert!(LdCache::parse(b"").is_none());
        assert!(LdCache::parse(b"glibc-ld.so.cache1.1").is_none());
        for cut in [0, 20, 47, 48, 60, 200, data.len() / 2] {
            let _ = LdCache::parse(&data[..cut.min(data.len())]);
        }
        let mut d = data.clone();
        if d.len() > 24 {
            d[20..24].copy_from_slice(&u32::MAX.to_le_bytes()); // nlibs
            let _ = LdCache::parse(&d);
        }
    }

    #[test]
    fn plan_of_sleep_loads_libc_once_through_the_cache() {
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
        assert_eq!(plan.linkage(), Linkage::Dynamic);
        if SearchPath::default().cache.is_some() {
            assert_eq!(plan.first_cache_lookup, Some(0));
        }
    }

    #[test]
    fn library_path_comes_before_the_cache() {
        let dir = std::env::temp_dir().join(format!("aspace-ldpath-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let real = std::fs::canonicalize("/lib/x86_64-linux-gnu/libc.so.6").unwrap();
        std::fs::copy(&real, dir.join("libc.so.6")).unwrap();
        let s = SearchPath {
            library_path: vec![dir.clone()],
            ..SearchPath::default()
        };
        let plan = LoadPlan::resolve(Path::new("/bin/true"), &s).unwrap();
        let libc = plan.libs.iter().find(|l| l.path.ends_with("libc.so.6"));
        assert_eq!(
            libc.unwrap().path,
            std::fs::canonicalize(dir.join("libc.so.6")).unwrap()
        );
        assert_eq!(plan.first_cache_lookup, None, "found before the cache");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn static_pie_and_ldso_are_reported() {
        for (path, want) in [
            ("/sbin/ldconfig", Linkage::StaticPie),
            ("/lib64/ld-linux-x86-64.so.2", Linkage::StaticPie),
            ("/bin/true", Linkage::Dynamic),
        ] {
            if !Path::new(path).exists() {
                continue;
            }
            let plan = LoadPlan::resolve(Path::new(path), &SearchPath::default()).unwrap();
            assert_eq!(plan.linkage(), want, "{path}");
            if want != Linkage::Dynamic {
                assert!(plan.libs.is_empty() && plan.interp.is_none());
            }
        }
    }
}
