//! The file registry: every file any process maps, each with its reverse map.

use crate::error::Error;
use crate::file::{File, FileId};
use crate::layout::VdsoLayout;
use crate::ldso::SearchPath;
use crate::program::Program;
use crate::PAGE_SIZE;
use parking_lot::Mutex;
use rmap::{Design, LockStats, Topology};
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The device whose shared mappings are shared anonymous memory (`mmap_zero`).
pub(crate) const DEV_ZERO: &str = "/dev/zero";

/// How `mm` calls the reverse maps: chosen by the caller, the same for every design
/// (an axis of the experiment, not a property of a design).
///
/// What each pattern does, per call site (every "hold" is one call into the
/// reverse map, which takes its lock(s) once):
///
/// | call site | [`CallPattern::PerVma`] | [`CallPattern::Batched`] |
/// |---|---|---|
/// | link on mmap / exec (each new file VMA) | one `insert` per VMA | one `insert_batch` per file |
/// | link of the pieces of a split or merge | one `insert` per piece | one `insert_batch` per file |
/// | unlink of a replaced mapping, munmap, split | one `remove_batch` per run of consecutive VMAs of one file, at most 8 | one `remove_batch` per file |
/// | exit (and exec's teardown) unlink | one `remove_batch` per run of consecutive VMAs of one file, at most 8 | one `remove_batch` per file |
/// | fork | one `insert_after` per VMA | one `insert_after_batch` per file |
///
/// One operation can touch several call sites (a `MAP_FIXED` over part of a VMA
/// splits it, then links the new mapping): calls are never shared between call
/// sites, so "per file" reads "per file and call site", and a per-VMA unlink run
/// also ends where the call site changes. The call site of each call is declared to
/// the reverse map (`rmap::stats::set_call_site`), which counts its lock holds there.
///
/// `PerVma` is how Linux 6.12 calls `i_mmap`: `vma_link_file` and `dup_mmap` take
/// the lock once per VMA, while the unlink side (`free_pgtables` ->
/// `unlink_file_vma_batch`, since 2024) already batches runs of consecutive VMAs of
/// one file, up to 8, skipping anonymous ones. `Batched` is the reviewers' proposal:
/// every operation takes each file's lock once, as exit already does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallPattern {
    /// Linux 6.12's calls: link and fork one hold per VMA; unlink batched per run.
    PerVma,
    /// One hold per file per operation on every call site.
    Batched,
}

impl CallPattern {
    /// Both patterns, per-VMA first.
    pub const ALL: [CallPattern; 2] = [CallPattern::PerVma, CallPattern::Batched];

    /// The name used on the command line and in JSON: `per-vma` or `batched`.
    pub fn name(self) -> &'static str {
        match self {
            CallPattern::PerVma => "per-vma",
            CallPattern::Batched => "batched",
        }
    }

    /// The most VMAs one unlink call takes in this pattern (`None`: no limit).
    /// Linux's `unlink_file_vma_batch` holds 8.
    pub fn unlink_run_limit(self) -> Option<usize> {
        match self {
            CallPattern::PerVma => Some(8),
            CallPattern::Batched => None,
        }
    }

    /// A one-line description of what `mm` does with this pattern, per call site.
    pub fn describe(self) -> &'static str {
        match self {
            CallPattern::PerVma => {
                "per-vma (Linux 6.12): link on mmap/exec and of split pieces: insert x1 per VMA; \
                 fork: insert_after x1 per VMA; unlink (replace, munmap, split, exit): \
                 remove_batch x1 per run of <= 8 consecutive VMAs of one file and call site"
            }
            CallPattern::Batched => {
                "batched: link on mmap/exec and of split pieces: insert_batch x1 per file and \
                 call site; fork: insert_after_batch x1 per file; unlink (replace, munmap, \
                 split, exit): remove_batch x1 per file and call site"
            }
        }
    }
}

impl fmt::Display for CallPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for CallPattern {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "per-vma" => Ok(CallPattern::PerVma),
            "batched" => Ok(CallPattern::Batched),
            _ => Err(format!(
                "unknown call pattern {s:?} (expected per-vma or batched)"
            )),
        }
    }
}

/// The registry of files (the model's page cache and dentry cache), shared by every
/// process of one experiment, all of one rmap [`Design`].
///
/// Lookups by path take one internal mutex (the bench resolves once and then uses
/// [`Program`] handles, which touch no registry lock). Costs one `File` per path seen.
///
/// ```
/// use mm::{CallPattern, Files};
/// use rmap::{Design, Topology};
/// use std::path::Path;
/// use std::sync::Arc;
///
/// let files = Files::new(Design::Linux, Topology::Os, CallPattern::PerVma);
/// // A synthetic file (no file system access); the same path is the same file.
/// let a = files.register(Path::new("/synthetic/a.so"), 8);
/// assert!(Arc::ptr_eq(&a, &files.register(Path::new("/synthetic/a.so"), 8)));
/// assert_eq!(a.pages(), 8);
/// assert!(a.rmap().is_empty());
/// assert_eq!(files.all().len(), 1);
/// // A real file is opened by path; a missing one is an error, not a panic.
/// assert!(files.open(Path::new("/no/such/file")).is_err());
/// ```
pub struct Files {
    design: Design,
    pattern: CallPattern,
    topo: Topology,
    pub(crate) search: SearchPath,
    files: Mutex<HashMap<PathBuf, Arc<File>>>,
    /// Programs planned so far, by the path exec was given and the mmap base they
    /// were planned under ([`Files::program_with_base`]).
    pub(crate) programs: Mutex<HashMap<(PathBuf, u64, VdsoLayout), Arc<Program>>>,
    /// [`Files::set_vdso_layout`].
    vdso: Mutex<VdsoLayout>,
    /// [`Files::set_kernel_split_holds`].
    kernel_split_holds: std::sync::atomic::AtomicBool,
}

impl Files {
    /// An empty registry whose files use `design`, built for `topo`, and which every
    /// [`crate::Mm`] made on it calls with `pattern`.
    pub fn new(design: Design, topo: Topology, pattern: CallPattern) -> Arc<Files> {
        Arc::new(Files {
            design,
            pattern,
            topo,
            search: SearchPath::default(),
            files: Mutex::new(HashMap::new()),
            programs: Mutex::new(HashMap::new()),
            vdso: Mutex::new(VdsoLayout::default()),
            kernel_split_holds: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Makes every exec planned from now on lay the vDSO out as `layout` (the
    /// kernel a recording was made on: [`crate::maps::vdso_layout`]); until then,
    /// [`VdsoLayout::default`].
    pub fn set_vdso_layout(&self, layout: VdsoLayout) {
        *self.vdso.lock() = layout;
    }

    /// The vDSO layout execs are planned with ([`Files::set_vdso_layout`]).
    pub fn vdso_layout(&self) -> VdsoLayout {
        *self.vdso.lock()
    }

    /// Makes every split of a file VMA by a map or unmap of an [`crate::Mm`]
    /// on this registry also remove the cut VMA from its file's reverse map
    /// and reinsert it with its new range, at the split call site, as Linux
    /// 6.12's `__split_vma` does inside its one `i_mmap_rwsem` hold
    /// (`vma_prepare`: `__vma_link_file(new)`, `vma_interval_tree_remove(vma)`;
    /// `vma_complete`: `vma_interval_tree_insert(vma)`). For `aspace predict`'s
    /// kernel-cost recordings only: off by default, so the lab's designs are
    /// measured with their own calls (see `Mm::replace`).
    pub fn set_kernel_split_holds(&self, on: bool) {
        // Relaxed: set before the recording's threads start (their spawn
        // orders it) and never changed while they run.
        self.kernel_split_holds
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// [`Files::set_kernel_split_holds`].
    pub fn kernel_split_holds(&self) -> bool {
        self.kernel_split_holds
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The rmap design of every file here.
    pub fn design(&self) -> Design {
        self.design
    }

    /// How `mm` calls this registry's reverse maps.
    pub fn call_pattern(&self) -> CallPattern {
        self.pattern
    }

    /// The file at `path` (canonicalized), registered on first use.
    pub fn open(&self, path: &Path) -> Result<Arc<File>, Error> {
        let canon = std::fs::canonicalize(path).map_err(|e| Error::from_io(path, &e))?;
        if let Some(f) = self.files.lock().get(&canon) {
            return Ok(f.clone());
        }
        let meta = std::fs::metadata(&canon).map_err(|e| Error::from_io(path, &e))?;
        Ok(self.register_real(
            &canon,
            meta.len().div_ceil(PAGE_SIZE),
            Some(FileId::of(&meta)),
        ))
    }

    /// Registers (or returns) a file of `pages` pages under `path`, without touching
    /// the file system: for synthetic files in tests and benches.
    pub fn register(&self, path: &Path, pages: u64) -> Arc<File> {
        self.register_file(path, pages, None, false)
    }

    /// Registers (or returns) the file at `path`, whose size (`pages`) and inode
    /// (`id`) the caller read; a path registered before keeps what it was given then.
    pub(crate) fn register_real(&self, path: &Path, pages: u64, id: Option<FileId>) -> Arc<File> {
        self.register_file(path, pages, id, false)
    }

    fn register_file(
        &self,
        path: &Path,
        pages: u64,
        id: Option<FileId>,
        deleted: bool,
    ) -> Arc<File> {
        self.files
            .lock()
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                Arc::new(File::new(
                    path.to_path_buf(),
                    pages,
                    id,
                    deleted,
                    self.design.build(&self.topo),
                ))
            })
            .clone()
    }

    /// The file a trace or a maps line names, registered on first use with its real
    /// size and inode where the path exists, and at least `need_pages` pages (what
    /// the mapping that names it covers). A path that names no file now is taken for
    /// one deleted since it was mapped ([`File::deleted`]); a name that is no path
    /// (`anon_inode:[io_uring]`, which strace's `-y` and `/proc/PID/maps` print for an
    /// io_uring's rings, a perf buffer's) names a file of no file system, never
    /// deleted. The path is kept as given.
    ///
    /// `deleted`, where the caller knows it, says whether the name was unlinked
    /// when it was mapped, whether or not a file has the path now.
    pub(crate) fn register_named(
        &self,
        path: &Path,
        need_pages: u64,
        deleted: Option<bool>,
    ) -> Arc<File> {
        if let Some(f) = self.files.lock().get(path) {
            return f.clone();
        }
        let meta = std::fs::metadata(path).ok();
        let pages = meta.as_ref().map_or(0, |m| m.len().div_ceil(PAGE_SIZE));
        let id = meta.as_ref().map(FileId::of);
        let deleted = deleted.unwrap_or(meta.is_none() && path.is_absolute());
        self.register_file(path, pages.max(need_pages).max(1), id, deleted)
    }

    /// Drops the registry's entry for `path` (its name was unlinked): a later
    /// registration of the path is a new file; mappings of the old one keep it.
    pub(crate) fn forget(&self, path: &Path) {
        self.files.lock().remove(path);
    }

    /// A new shared anonymous memory object of `pages` pages (what `MAP_SHARED |
    /// MAP_ANONYMOUS` maps: the kernel's `shmem_zero_setup`), a file of its own that
    /// `/proc/PID/maps` names `/dev/zero (deleted)`, with no known device and inode.
    /// Not in the registry ([`Files::all`], [`Files::lock_stats`]): it goes with its
    /// last mapping, so a long run does not accumulate them.
    pub fn shmem(&self, pages: u64) -> Arc<File> {
        self.shmem_named(Path::new(DEV_ZERO), pages)
    }

    /// A new shared memory object of `pages` pages named `name` with no path (a System
    /// V segment's `/SYSV0000002a`: the maps show it `(deleted)`, with no known
    /// device and inode), not in the registry, as [`Files::shmem`].
    pub fn shmem_named(&self, name: &Path, pages: u64) -> Arc<File> {
        Arc::new(File::new(
            name.to_path_buf(),
            pages.max(1),
            None,
            true,
            self.design.build(&self.topo),
        ))
    }

    /// Every registered file.
    pub fn all(&self) -> Vec<Arc<File>> {
        let mut v: Vec<_> = self.files.lock().values().cloned().collect();
        v.sort_by(|a, b| a.path().cmp(b.path()));
        v
    }

    /// Lock statistics summed over every file's reverse map, per call site too.
    pub fn lock_stats(&self) -> LockStats {
        let mut s = LockStats::default();
        for f in self.all() {
            s.merge(&f.rmap().stats());
        }
        s
    }
}

impl fmt::Debug for Files {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Files")
            .field("design", &self.design)
            .field("pattern", &self.pattern)
            .field("files", &self.files.lock().len())
            .finish()
    }
}
