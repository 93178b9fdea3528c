//! The file registry: every file any process maps, each with its reverse map.

use crate::elf::{LoadPlan, SearchPath};
use crate::error::Error;
use crate::exec::Program;
use crate::PAGE_SIZE;
use parking_lot::Mutex;
use rmap::{Design, LockStats, ReverseMap, Topology};
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One file (an inode's `address_space`): its path, size, and reverse map.
///
/// Shared by every process that maps it (`Arc<File>`). The reverse map is the only
/// mutable part; its concurrency contract is the design's (see `rmap`). A `File` costs
/// its path plus whatever its reverse map holds.
pub struct File {
    path: PathBuf,
    pages: u64,
    rmap: Box<dyn ReverseMap>,
}

impl File {
    /// The canonical path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The size in pages (rounded up).
    pub fn pages(&self) -> u64 {
        self.pages
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
            .field("design", &self.rmap.design())
            .field("rmap_len", &self.rmap.len())
            .finish()
    }
}

/// How `mm` drives a reverse-map design, modelled on the code each design comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertPattern {
    /// One `insert` per VMA, each its own lock hold (Linux's `mmap_region` /
    /// `vma_link_file`).
    PerVma,
    /// One `insert_batch` per file per operation (aspace's batch API: all of one
    /// library's VMAs under one lock hold).
    BatchPerFile,
}

/// The call pattern one design gets; recorded by the lab in its JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallPattern {
    /// How new VMAs are linked (exec, mmap, and the pieces of a split or merge).
    pub insert: InsertPattern,
}

impl CallPattern {
    /// The pattern for `design`: `aspace` batches inserts, the Linux-derived designs
    /// insert one VMA at a time. Every design removes with one `remove_batch` per file
    /// per operation (Linux's exit path since 2024) and forks with one `insert_after`
    /// per VMA, grouped per file.
    pub fn for_design(design: Design) -> CallPattern {
        CallPattern {
            insert: if design == Design::Aspace {
                InsertPattern::BatchPerFile
            } else {
                InsertPattern::PerVma
            },
        }
    }

    /// A one-line description for reports.
    pub fn describe(&self) -> String {
        let ins = match self.insert {
            InsertPattern::PerVma => "insert x1 per VMA (own lock hold each)",
            InsertPattern::BatchPerFile => "insert_batch x1 per file (one lock hold)",
        };
        format!(
            "exec/mmap: {ins}; munmap/exit: remove_batch x1 per file; \
             fork: insert_after x1 per VMA, grouped per file"
        )
    }
}

/// The registry of files (the model's page cache and dentry cache), shared by every
/// process of one experiment, all of one rmap [`Design`].
///
/// Lookups by path take one internal mutex (the bench resolves once and then uses
/// [`Program`] handles, which touch no registry lock). Costs one `File` per path seen.
pub struct Files {
    design: Design,
    topo: Topology,
    search: SearchPath,
    files: Mutex<HashMap<PathBuf, Arc<File>>>,
    programs: Mutex<HashMap<PathBuf, Arc<Program>>>,
}

impl Files {
    /// An empty registry whose files use `design`, built for `topo`.
    pub fn new(design: Design, topo: Topology) -> Arc<Files> {
        Arc::new(Files {
            design,
            topo,
            search: SearchPath::default(),
            files: Mutex::new(HashMap::new()),
            programs: Mutex::new(HashMap::new()),
        })
    }

    /// The rmap design of every file here.
    pub fn design(&self) -> Design {
        self.design
    }

    /// How `mm` calls this registry's reverse maps.
    pub fn call_pattern(&self) -> CallPattern {
        CallPattern::for_design(self.design)
    }

    /// The file at `path` (canonicalized), registered on first use.
    pub fn open(&self, path: &Path) -> Result<Arc<File>, Error> {
        let canon = std::fs::canonicalize(path).map_err(|e| Error::from_io(path, &e))?;
        if let Some(f) = self.files.lock().get(&canon) {
            return Ok(f.clone());
        }
        let len = std::fs::metadata(&canon)
            .map_err(|e| Error::from_io(path, &e))?
            .len();
        Ok(self.register(&canon, len.div_ceil(PAGE_SIZE)))
    }

    /// Registers (or returns) a file of `pages` pages under `path`, without touching
    /// the file system: for synthetic files in tests and benches.
    pub fn register(&self, path: &Path, pages: u64) -> Arc<File> {
        self.files
            .lock()
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                Arc::new(File {
                    path: path.to_path_buf(),
                    pages,
                    rmap: self.design.build(&self.topo),
                })
            })
            .clone()
    }

    /// The program at `path` with its interpreter and libraries resolved (as ld.so
    /// would), registered, and its exec planned and checked (see [`Program::new`]);
    /// cached per path.
    pub fn program(&self, path: &Path) -> Result<Arc<Program>, Error> {
        if let Some(p) = self.programs.lock().get(path) {
            return Ok(p.clone());
        }
        let plan = LoadPlan::resolve(path, &self.search)?;
        let prog = Arc::new(Program::new(self, plan)?);
        self.programs
            .lock()
            .insert(path.to_path_buf(), prog.clone());
        Ok(prog)
    }

    /// Every registered file.
    pub fn all(&self) -> Vec<Arc<File>> {
        let mut v: Vec<_> = self.files.lock().values().cloned().collect();
        v.sort_by(|a, b| a.path.cmp(&b.path));
        v
    }

    /// Lock statistics summed over every file's reverse map.
    pub fn lock_stats(&self) -> LockStats {
        let mut s = LockStats::default();
        for f in self.all() {
            let t = f.rmap.stats();
            s.acquisitions += t.acquisitions;
            s.contended += t.contended;
            s.shards = s.shards.max(t.shards);
        }
        s
    }
}

impl fmt::Debug for Files {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Files")
            .field("design", &self.design)
            .field("files", &self.files.lock().len())
            .finish()
    }
}
