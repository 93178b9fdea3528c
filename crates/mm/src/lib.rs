//! An address-space model: processes whose VMAs live in a maple tree and whose file
//! mappings are linked into per-file reverse maps, driven by the machine's real ELF
//! files.
//!
//! - [`Mm`]: one process. `mmap` (top-down gap search, `MAP_FIXED` replaces),
//!   `munmap` (splits at the edges), `mprotect` (splits, merges neighbours),
//!   `madvise` and `mlock` ([`madvise`], [`mlock`]: VMA flags), `brk`,
//!   `exec` (the kernel's ELF loader plus ld.so's call sequence, planned and checked
//!   before the old image is touched: [`exec`]), `fork`, `exit`, `page_fault`.
//! - [`Process`]: a process's hold on an address space. `fork` copies the space;
//!   `clone_vm` (vfork, `posix_spawn`, threads) shares it, each [`Mm`] counting its
//!   users; `exec` gives the process a new space and exit releases it, the last user
//!   tearing it down ([`process`]).
//! - [`Files`]: the registry of files, each with its reverse map of the design chosen
//!   for the run, shared by every process of an experiment.
//! - [`elf`]: reading program headers (bounded reads, regular files only).
//! - [`ldso`]: resolving libraries as ld.so does (`LD_LIBRARY_PATH`, `DT_RPATH`,
//!   `DT_RUNPATH`, `/etc/ld.so.cache`, glibc-hwcaps, system directories).
//! - [`strace`], [`replay`], [`recording`]: real runs recorded with strace (and
//!   `scripts/record.sh`), replayed in the kernel's order; [`maps`]: their
//!   `/proc/PID/maps`, compared field by field with the model's layout, named as Linux
//!   names it; [`identity`]: which build of each file a recording was made against.
//!
//! Every failing operation returns an errno-like [`Error`] and leaves the address
//! space exactly as it was.
//!
//! ```
//! use mm::{CallPattern, Files, Mm};
//! use rmap::{Design, Topology};
//! let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
//! let mm = Mm::new(files.clone());
//! mm.exec(std::path::Path::new("/bin/sleep")).unwrap();
//! let libc = files.all().into_iter().find(|f| f.path().ends_with("libc.so.6")).unwrap();
//! assert!(libc.rmap().len() >= 4); // r--, r-x, r--, RELRO r--, rw-
//! mm.exit();
//! assert_eq!(libc.rmap().len(), 0);
//! ```

pub mod elf;
pub mod error;
pub mod exec;
pub mod file;
pub mod files;
pub mod identity;
pub mod ldso;
pub mod madvise;
pub mod maps;
pub mod mempolicy;
pub mod mlock;
pub mod placement;
pub mod process;
pub mod program;
pub mod protect;
pub mod recording;
pub mod remap;
pub mod replay;
pub mod seal;
pub mod split_stores;
pub mod strace;
pub mod vma;

pub use error::Error;
pub use file::{File, FileId};
pub use files::{CallPattern, Files};
pub use ldso::Linkage;
pub use madvise::{Advice, MmapOptions};
pub use placement::Placement;
pub use process::Process;
pub use program::{Caller, ExecStep, Program};
pub use protect::Grows;
pub use remap::MremapFlags;
pub use vma::{AnonKind, Backing, MemPolicy, Prot, VmFlags, Vma};

use aspace_maple::{Inline, MapleTree};
use files::DEV_ZERO;
use parking_lot::{Mutex, MutexGuard};
use rmap::stats::{set_call_site, CallSite};
use rmap::{Handle, Interval, VmaId};
use smallvec::SmallVec;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use vma::{merge_adjacent, Link};

/// This crate's README, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct CrateReadmeDoctests;

/// The page size (x86-64).
pub const PAGE_SIZE: u64 = 4096;

/// The x86-64 user address-space layout the model uses (4-level paging, ASLR off).
pub mod layout {
    /// One past the highest user address (`TASK_SIZE`).
    pub const TASK_SIZE: u64 = 0x7fff_ffff_f000;
    /// Top of the main thread's stack.
    pub const STACK_TOP: u64 = TASK_SIZE;
    /// Size of the initial `[stack]` VMA (what a fresh process shows) when the
    /// exec's strings take one page: [`initial_stack_size`] of up to 4,088 bytes.
    pub const STACK_SIZE: u64 = 0x21000;

    /// What `setup_arg_pages` adds below the strings' pages (`stack_expand`).
    const STACK_EXPAND: u64 = 128 << 10;

    /// The initial `[stack]` of an exec whose strings (the path, the environment and
    /// argument strings, with their NULs: [`crate::strace::exec_strings`]) take
    /// `strings` bytes: the pages holding them below the 8-byte end marker at the
    /// top (`bprm->p` starts at `STACK_TOP - sizeof(void *)`), then 128 KiB.
    /// `None` (not known): [`STACK_SIZE`].
    ///
    /// ```
    /// use mm::layout::{initial_stack_size, STACK_SIZE};
    /// assert_eq!(initial_stack_size(Some(1360)), STACK_SIZE);
    /// assert_eq!(initial_stack_size(Some(4088)), STACK_SIZE);
    /// // gcc's collect2 run by rustc: 6,969 bytes, two pages (Linux 6.18 showed 0x22000).
    /// assert_eq!(initial_stack_size(Some(6969)), 0x22000);
    /// assert_eq!(initial_stack_size(None), STACK_SIZE);
    /// ```
    pub fn initial_stack_size(strings: Option<u64>) -> u64 {
        match strings {
            Some(n) => STACK_EXPAND + (n + 8).div_ceil(super::PAGE_SIZE) * super::PAGE_SIZE,
            None => STACK_SIZE,
        }
    }
    /// Where the model puts `start_stack` after exec: the address of the first
    /// argument string, by which `/proc/PID/maps` names `[stack]`. The kernel's
    /// depends on the size of the arguments and environment; it is in the stack's
    /// top page while they take under 4 KiB (`0x7fffffffe6f0` for `cut` run by `sh`
    /// with 39 variables). The model takes the middle of that page.
    pub const START_STACK: u64 = STACK_TOP - super::PAGE_SIZE / 2;
    /// The lowest address mmap may use (`vm.mmap_min_addr`).
    pub const MMAP_MIN_ADDR: u64 = 0x10000;
    /// One past the highest address top-down mmap placement uses (below the stack and
    /// its gap): [`mmap_base`] under the default stack limit.
    pub const MMAP_BASE: u64 = 0x7fff_f7ff_f000;
    /// The default `RLIMIT_STACK` (8 MiB), what a process has unless a `setrlimit`
    /// or `prlimit64` of its own or an ancestor's changed it.
    pub const DEFAULT_STACK_LIMIT: u64 = 8 << 20;
    /// `stack_guard_gap`'s default: 256 pages.
    const STACK_GUARD_GAP: u64 = 256 * super::PAGE_SIZE;

    /// The top of the mmap area an exec gives a process whose stack limit is
    /// `stack_limit` (`None`: unlimited), with ASLR off: x86-64's `mmap_base`
    /// (Linux 6.12 `arch/x86/mm/mmap.c`) keeps the limit plus the guard gap free
    /// below the stack, at least 128 MiB and at most 5/6 of the address space (an
    /// unlimited limit, which would overflow, takes the most).
    ///
    /// ```
    /// use mm::layout::{mmap_base, DEFAULT_STACK_LIMIT, MMAP_BASE, TASK_SIZE};
    /// assert_eq!(mmap_base(Some(DEFAULT_STACK_LIMIT)), MMAP_BASE);
    /// // `ulimit -s unlimited`: ld.so ends there (Linux 6.18, bash running /bin/true).
    /// assert_eq!(mmap_base(None), 0x1555_5555_6000);
    /// // 1 GiB: that, and the guard gap, below the top.
    /// assert_eq!(mmap_base(Some(1 << 30)), TASK_SIZE - (1 << 30) - (1 << 20));
    /// ```
    pub fn mmap_base(stack_limit: Option<u64>) -> u64 {
        let max = TASK_SIZE / 6 * 5;
        let gap = stack_limit
            .and_then(|l| l.checked_add(STACK_GUARD_GAP))
            .map_or(max, |g| g.clamp(128 << 20, max));
        (TASK_SIZE - gap).next_multiple_of(super::PAGE_SIZE)
    }
    /// Where a PIE executable with 4 KiB alignment is loaded (`ELF_ET_DYN_BASE`
    /// rounded down to a page).
    pub const ELF_ET_DYN_BASE: u64 = 0x5555_5555_4000;
    /// The kernel's `ELF_ET_DYN_BASE` (2/3 of `TASK_SIZE`, not page aligned): a PIE's
    /// base is this rounded down to its largest `p_align`; a static-pie's brk starts at
    /// it rounded up to a page.
    pub const ELF_ET_DYN_BASE_RAW: u64 = 0x5555_5555_4aaa;
    /// The `[heap]` a process has after its first malloc (132 KiB).
    pub const HEAP_INITIAL: u64 = 0x21000;

    /// The vDSO's areas as an exec maps them, bottom to top, in pages: `[vvar]`
    /// (the kernel's time data), `[vvar_vclock]` (the paravirt clock pages, an area
    /// of its own since Linux 6.13; 0 before, when they are in `[vvar]`), then
    /// `[vdso]`'s code. The exec places them together, top-down below the
    /// interpreter, so their total size moves every later top-down placement: a
    /// replay takes the layout from the recorded maps
    /// ([`crate::maps::vdso_layout`]), the kernel that ran the program, and
    /// [`VdsoLayout::LINUX_6_13`] (this machine's) where there are none.
    ///
    /// ```
    /// use mm::layout::VdsoLayout;
    /// assert_eq!(VdsoLayout::default(), VdsoLayout::LINUX_6_13);
    /// assert_eq!(VdsoLayout::LINUX_6_13.pages(), 8);
    /// assert_eq!(VdsoLayout::LINUX_5_6.pages(), 6);
    /// ```
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct VdsoLayout {
        /// Pages of `[vvar]`.
        pub vvar: u64,
        /// Pages of `[vvar_vclock]` (0: no such area).
        pub vclock: u64,
        /// Pages of `[vdso]`.
        pub code: u64,
    }

    impl VdsoLayout {
        /// x86-64 from Linux 6.13 (this machine's 6.18): 4 + 2 + 2 pages.
        pub const LINUX_6_13: VdsoLayout = VdsoLayout {
            vvar: 4,
            vclock: 2,
            code: 2,
        };
        /// x86-64 from Linux 5.6 (the time-namespace page) to 6.12: a `[vvar]` of 4
        /// pages with the clock pages in it, and a `[vdso]` of 2.
        pub const LINUX_5_6: VdsoLayout = VdsoLayout {
            vvar: 4,
            vclock: 0,
            code: 2,
        };

        /// The pages of all three areas.
        pub fn pages(self) -> u64 {
            self.vvar + self.vclock + self.code
        }
    }

    impl Default for VdsoLayout {
        fn default() -> VdsoLayout {
            VdsoLayout::LINUX_6_13
        }
    }
}
use layout::*;

/// `mmap` flags the model understands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapFlags {
    /// `MAP_FIXED`: map exactly at `addr`, replacing whatever is there.
    pub fixed: bool,
    /// `MAP_SHARED` (else `MAP_PRIVATE`).
    pub shared: bool,
}

/// The kind of access a page fault makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A load.
    Read,
    /// A store.
    Write,
    /// An instruction fetch.
    Exec,
}

/// How many reverse-map calls one process made, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RmapCalls {
    /// `insert` calls (one lock hold each).
    pub insert: u64,
    /// `insert_batch` calls.
    pub insert_batch: u64,
    /// `insert_after` calls (fork, one lock hold per VMA as in Linux).
    pub insert_after: u64,
    /// `insert_after_batch` calls (fork, one lock hold per file: aspace).
    pub insert_after_batch: u64,
    /// `remove` calls.
    pub remove: u64,
    /// `remove_batch` calls.
    pub remove_batch: u64,
    /// VMAs linked, whatever the call.
    pub linked: u64,
    /// VMAs unlinked, whatever the call.
    pub unlinked: u64,
}

impl RmapCalls {
    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &RmapCalls) {
        self.insert += other.insert;
        self.insert_batch += other.insert_batch;
        self.insert_after += other.insert_after;
        self.insert_after_batch += other.insert_after_batch;
        self.remove += other.remove;
        self.remove_batch += other.remove_batch;
        self.linked += other.linked;
        self.unlinked += other.unlinked;
    }

    /// Calls that take a reverse-map lock (every kind counts once).
    pub fn lock_holds(&self) -> u64 {
        self.insert
            + self.insert_batch
            + self.insert_after
            + self.insert_after_batch
            + self.remove
            + self.remove_batch
    }
}

struct State {
    brk_start: u64,
    brk: u64,
    /// `mm->start_stack` (0: none yet); see [`maps`].
    start_stack: u64,
    /// A range holding every special mapping ([`Vma::is_special`]) placed since the
    /// last teardown (maybe more: one moved or unmapped leaves its old place in it),
    /// so that calls far from the vdso skip looking for one to refuse to split.
    special_span: Option<(u64, u64)>,
    /// The top of the mmap area, from the stack limit at the last exec
    /// ([`layout::mmap_base`]).
    mmap_base: u64,
    /// `mm->def_flags`: the flags every new mapping gets; only the lock bits
    /// (`mlockall(MCL_FUTURE)`: [`mlock`]) are ever set.
    def_flags: VmFlags,
    /// Where two adjacent VMAs that could merge are kept apart (the start of the
    /// second): a fork's child, whose copies lose the lock bits that told them
    /// apart, keeps the parent's boundaries (`dup_mmap` does not merge). A change
    /// whose range holds one inside forgets it (it merged what it could there).
    seams: Vec<u64>,
    /// `mm->exe_file`: the executable the last exec loaded (for a `#!` script, its
    /// interpreter), which `/proc/PID/exe` names; a fork's child has its parent's.
    exe_file: Option<Arc<File>>,
    next_id: u64,
    calls: RmapCalls,
}

static NEXT_MM: AtomicU64 = AtomicU64::new(1);

/// One process's address space (`mm_struct`).
///
/// # Concurrency
/// `Mm` is `Send + Sync`. Changes (`mmap`, `munmap`, `mprotect`, `brk`, `exec`,
/// `fork`, `exit`) serialise on an internal mutex, the model's `mmap_lock`, and
/// publish each VMA change to the maple tree; file VMAs are linked into their file's
/// reverse map under that map's own locking. [`Mm::page_fault`] and [`Mm::vmas`] read
/// the tree without the mutex (the lock-free path); a fault that finds nothing retries
/// under the mutex, as Linux falls back from a per-VMA-lock fault to `mmap_lock`, so a
/// fault racing a `MAP_FIXED` replacement never sees the transient hole.
///
/// # Cost
/// One maple tree entry (an `Arc<Vma>`, ~80 bytes) per VMA, plus one reverse-map entry
/// per file VMA. An exec of a typical dynamically linked binary makes ~25 VMAs.
///
/// Dropping an `Mm` unlinks every VMA (as `exit`).
///
/// ```
/// use mm::{CallPattern, Files, MapFlags, Mm, Prot};
/// use rmap::{Design, Topology};
///
/// let mm = Mm::new(Files::new(Design::Aspace, Topology::Os, CallPattern::Batched));
/// let len = 4 * mm::PAGE_SIZE;
/// let addr = mm.mmap(0, len, Prot::RW, MapFlags::default(), None).unwrap();
/// assert_eq!(mm.vmas().len(), 1);
/// mm.munmap(addr, len).unwrap();
/// assert!(mm.vmas().is_empty());
/// ```
pub struct Mm {
    id: u64,
    files: Arc<Files>,
    pattern: CallPattern,
    tree: VmaTree,
    state: Mutex<State>,
    /// The processes using this space (`mm_users`): see [`crate::process`].
    pub(crate) users: AtomicUsize,
}

/// The VMA tree: each `Arc<Vma>` stored in its slot word (no box per VMA; fork's
/// `dup` clones the `Arc`s).
pub(crate) type VmaTree = MapleTree<Arc<Vma>, Inline>;

/// The few items one change handles (VMAs it removes or adds, their call sites),
/// kept on the stack.
type Few<T> = SmallVec<[T; 4]>;

fn align_up(x: u64) -> Option<u64> {
    Some(x.checked_add(PAGE_SIZE - 1)? & !(PAGE_SIZE - 1))
}

/// Whether any VMA of `tree` intersects `[start, end)` (`start < end`): one `find`
/// descent.
pub(crate) fn occupied(tree: &VmaTree, start: u64, end: u64) -> bool {
    tree.reader()
        .find(start)
        .is_some_and(|(range, _)| *range.start() < end)
}

fn interval(v: &Vma, pgoff: u64) -> Interval {
    Interval::new(pgoff, pgoff + v.pages() - 1).expect("a VMA covers at least one page")
}

impl Mm {
    /// An empty address space whose file mappings go into `files`.
    pub fn new(files: Arc<Files>) -> Mm {
        Mm {
            id: NEXT_MM.fetch_add(1, Ordering::Relaxed),
            pattern: files.call_pattern(),
            files,
            tree: MapleTree::new_inline(),
            state: Mutex::new(State {
                brk_start: 0,
                brk: 0,
                start_stack: 0,
                special_span: None,
                mmap_base: layout::MMAP_BASE,
                def_flags: VmFlags::default(),
                seams: Vec::new(),
                exe_file: None,
                next_id: 0,
                calls: RmapCalls::default(),
            }),
            users: AtomicUsize::new(1),
        }
    }

    /// The executable the last exec loaded (`mm->exe_file`, what `/proc/PID/exe`
    /// names): for a `#!` script, its interpreter; a fork's child has its parent's,
    /// and an address space no exec has loaded (or one torn down), none.
    pub fn exe_file(&self) -> Option<Arc<File>> {
        self.state.lock().exe_file.clone()
    }

    /// The top of this address space's mmap area, set at exec from the stack limit
    /// ([`layout::mmap_base`]; [`layout::MMAP_BASE`] until an exec says otherwise).
    pub fn mmap_base(&self) -> u64 {
        self.state.lock().mmap_base
    }

    /// How many processes use this address space (the kernel's `mm_users`): 1 for a
    /// new one, one more per [`Process::clone_vm`], one less per release (exec, exit).
    /// A snapshot: another thread may change it at once.
    pub fn users(&self) -> usize {
        // Relaxed: a snapshot, ordered with nothing else.
        self.users.load(Ordering::Relaxed)
    }

    /// A process-unique id; the high bits of every [`VmaId`] this process links.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The file registry.
    pub fn files(&self) -> &Arc<Files> {
        &self.files
    }

    /// Whether `id` (from a reverse-map walk) belongs to this process.
    pub fn owns(&self, id: VmaId) -> bool {
        id >> 40 == self.id
    }

    /// The reverse-map calls this process has made so far.
    pub fn calls(&self) -> RmapCalls {
        self.state.lock().calls
    }

    /// Number of VMAs.
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    /// Whether the address space is empty.
    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }

    /// Every VMA, in address order. Takes no lock: a concurrent change may be
    /// seen in part (some VMAs old, some new), as the maple tree's readers see it;
    /// the VMAs returned never overlap (an old VMA a change is cutting is returned
    /// as the piece the tree still maps to it, with no [`Vma::rmap_id`]).
    pub fn vmas(&self) -> Vec<Vma> {
        self.tree
            .reader()
            .iter()
            .map(|(r, v)| as_seen(*r.start(), *r.end(), &v))
            .collect()
    }

    /// The VMA containing `addr`, if any (lock-free; see [`Mm::vmas`]).
    pub fn find(&self, addr: u64) -> Option<Vma> {
        self.tree
            .load(addr)
            .map(|e| as_seen(e.first(), e.last(), e.value()))
    }

    /// The program break and where the heap starts.
    pub fn brk_range(&self) -> (u64, u64) {
        let st = self.state.lock();
        (st.brk_start, st.brk)
    }

    // ---------------------------------------------------------------- rmap plumbing

    fn new_id(&self, st: &mut State) -> VmaId {
        st.next_id += 1;
        (self.id << 40) | (st.next_id & ((1 << 40) - 1))
    }

    /// Links every file VMA of `vmas` into its file's reverse map, with the registry's
    /// call pattern: one `insert` per VMA, or one `insert_batch` per file and call
    /// site. `sites[i]` is the call site `vmas[i]` is linked from (declared to the
    /// reverse map with [`rmap::stats::set_call_site`]).
    fn link(&self, st: &mut State, vmas: &mut [Vma], sites: &[CallSite]) {
        match self.pattern {
            CallPattern::PerVma => {
                for (v, &site) in vmas.iter_mut().zip(sites) {
                    if let Backing::File { file, pgoff } = &v.backing {
                        let id = self.new_id(st);
                        let handle = {
                            let _site = set_call_site(site);
                            file.rmap()
                                .insert(interval(v, *pgoff), id)
                                .expect("valid interval")
                        };
                        st.calls.insert += 1;
                        st.calls.linked += 1;
                        v.link = Some(Link { handle, id });
                    }
                }
            }
            CallPattern::Batched => {
                let keys = vmas
                    .iter()
                    .zip(sites)
                    .map(|(v, &s)| v.file().map(|f| (f.0, s)));
                for ((file, site), idx) in group_by_file_and_site(keys) {
                    let items: Vec<(Interval, VmaId)> = idx
                        .iter()
                        .map(|&i| {
                            let (_, pgoff) = vmas[i].file().expect("grouped file VMA");
                            (interval(&vmas[i], pgoff), self.new_id(st))
                        })
                        .collect();
                    let mut handles = Vec::with_capacity(items.len());
                    {
                        let _site = set_call_site(site);
                        file.rmap()
                            .insert_batch(&items, &mut handles)
                            .expect("valid intervals");
                    }
                    st.calls.insert_batch += 1;
                    st.calls.linked += items.len() as u64;
                    for ((&i, h), (_, id)) in idx.iter().zip(handles).zip(items) {
                        vmas[i].link = Some(Link { handle: h, id });
                    }
                }
            }
        }
    }

    /// Unlinks every file VMA of `vmas` (in address order) with the registry's call
    /// pattern: `Batched`, one `remove_batch` per file and call site; `PerVma`, one
    /// `remove_batch` per run of consecutive VMAs of one file and call site, at most
    /// 8 (anonymous VMAs neither join nor break a run), as Linux's
    /// `unlink_file_vma_batch`.
    fn unlink(&self, st: &mut State, vmas: &[Arc<Vma>], sites: &[CallSite]) {
        let keys = vmas
            .iter()
            .zip(sites)
            .map(|(v, &s)| v.file().map(|f| (f.0, s)));
        let groups = match self.pattern.unlink_run_limit() {
            None => group_by_file_and_site(keys),
            Some(limit) => runs_by_file_and_site(keys, limit),
        };
        for ((file, site), idx) in groups {
            let handles: Vec<Handle> = idx
                .iter()
                .filter_map(|&i| vmas[i].link.map(|l| l.handle))
                .collect();
            {
                let _site = set_call_site(site);
                file.rmap()
                    .remove_batch(&handles)
                    .expect("every file VMA in the tree is linked");
            }
            st.calls.remove_batch += 1;
            st.calls.unlinked += handles.len() as u64;
        }
    }

    // ------------------------------------------------------------------ tree plumbing

    /// Replaces `[start, end)` with `new` (sorted, inside `[start, end)`): VMAs that
    /// stick out are split, the pieces outside kept; everything removed is unlinked and
    /// everything added is linked. `why` and `core` (the range the system call asked
    /// for; `[start, end)` may be wider by merged neighbours) give each reverse-map
    /// call its call site:
    ///
    /// - the remainders of a VMA the range cuts, and for mprotect the cut VMA and its
    ///   changed piece: `Split` (`__split_vma`);
    /// - merged neighbours (their removal) and the VMA they merge into (its link):
    ///   `Merge` (Linux 6.12: `vma_merge_new_range` -> `vma_expand` ->
    ///   `commit_merge`, or `vma_merge_existing_range` -> `commit_merge`, one
    ///   `i_mmap_rwsem` hold that is not `__split_vma`);
    /// - a map whose merged neighbour is the rest of a VMA the map's own range cuts
    ///   (ld.so's `MAP_FIXED` of a segment over its reservation, when the segment
    ///   has the reservation's protection and offset: the rest of the reservation
    ///   is its neighbour): Linux first splits that VMA at the range's edge
    ///   (`vms_gather_munmap_vmas` -> `__split_vma`: the rest becomes a VMA of its
    ///   own, in the file's tree), then unlinks the replaced piece
    ///   (`vms_clean_up_area`), then merges the new mapping with the rest
    ///   (`vma_expand`); the model does the same three: links the rest (`Split`),
    ///   unlinks the cut VMA (`ReplaceUnlink`), unlinks the rest and links the
    ///   merged VMA (`Merge`);
    /// - the other removed VMAs, a VMA a map or unmap cuts included: `ReplaceUnlink`
    ///   for a map, `ExitUnlink` for an unmap (munmap, brk shrink), `Other` for a
    ///   protection change. Removing a cut VMA stands for the kernel's unlink of the
    ///   replaced piece after `__split_vma`, and linking its remainders for the split
    ///   itself, so a `MAP_FIXED` over part of a VMA counts one `ReplaceUnlink`, one
    ///   `Split` call per remainder and one `MmapLink`, as the kernel's profile does;
    /// - the other added VMAs: `MmapLink` for a map, `Other` for a protection change
    ///   (the model re-links a VMA whose protection changes; Linux does not touch
    ///   `i_mmap` there).
    ///
    /// Linux does a split's removal and its two inserts under one lock hold (a
    /// merge's removals and insert likewise); the reverse-map interface has no such
    /// call, so a split costs the model one `remove_batch` plus one `insert` per
    /// piece (per VMA) or one `insert_batch` (batched): the same entries touched,
    /// more holds.
    fn replace(
        &self,
        st: &mut State,
        start: u64,
        end: u64,
        new: Vec<Vma>,
        why: Why,
        core: (u64, u64),
    ) {
        let old = self.overlapping(start, end);
        if old.is_empty() && new.is_empty() {
            return;
        }
        if !st.seams.is_empty() {
            // The boundaries inside the range are the new VMAs' (merged where they
            // could); one at an edge stays between the VMA outside and a VMA with
            // the flags of the one it replaced there, or one that did not merge.
            st.seams.retain(|&s| s <= start || s >= end);
        }
        let inside_core = |s: u64, e: u64| s >= core.0 && e <= core.1;
        // An old VMA of a map that the range does not cut (it lies inside
        // `[start, end)`, the range widened by merged neighbours) but the core
        // does: Linux splits it at the core's edge before the merge.
        let straddles = |v: &Vma| {
            why == Why::Map
                && v.start >= start
                && v.end <= end
                && ((v.start < core.0 && core.0 < v.end) || (v.start < core.1 && core.1 < v.end))
        };
        let mut add: Few<Vma> = SmallVec::new();
        let mut add_sites: Few<CallSite> = SmallVec::new();
        if let Some(first) = old.first().filter(|v| v.start < start) {
            add.push(first.slice(first.start, start));
            add_sites.push(CallSite::Split);
        }
        // A piece of a VMA that the range cuts, with only its protection changed
        // (mprotect of part of a VMA), is a split; a new mapping over part of a VMA
        // is a link.
        let from_cut = |v: &Vma| {
            why == Why::Protect
                && old.iter().any(|o| {
                    o.start <= v.start && v.end <= o.end && (o.start < start || o.end > end)
                })
        };
        for v in new {
            add_sites.push(if !inside_core(v.start, v.end) {
                CallSite::Merge
            } else if from_cut(&v) {
                CallSite::Split
            } else {
                why.link_site()
            });
            add.push(v);
        }
        if let Some(last) = old.last().filter(|v| v.end > end) {
            add.push(last.slice(end, last.end));
            add_sites.push(CallSite::Split);
        }
        let old_sites: Few<CallSite> = old
            .iter()
            .map(|v| {
                let cut = v.start < start || v.end > end;
                if cut && why == Why::Protect {
                    CallSite::Split
                } else if !cut && !inside_core(v.start, v.end) && !straddles(v) {
                    CallSite::Merge
                } else {
                    why.unlink_site()
                }
            })
            .collect();
        // The kernel's split of a VMA that a merge then grows over (see above):
        // the piece outside the core on each straddled edge, linked as the split's
        // new VMA and unlinked again by the merge. Reverse-map calls only: the
        // process's tree never holds these pieces.
        let mut rests: Vec<Vma> = Vec::new();
        for v in old.iter().filter(|v| straddles(v)) {
            if v.start < core.0 && core.0 < v.end {
                rests.push(v.slice(v.start, core.0));
            }
            if v.start < core.1 && core.1 < v.end {
                rests.push(v.slice(core.1, v.end));
            }
        }
        // The stretches of `[lo, hi)` that old VMAs cover and no new one does.
        let lo = old.first().map_or(start, |v| v.start.min(start));
        let hi = old.last().map_or(end, |v| v.end.max(end));
        let mut clear: Few<(u64, u64)> = SmallVec::new();
        let mut at = lo;
        for (s, e) in add.iter().map(|v| (v.start, v.end)).chain([(hi, hi)]) {
            if at < s && old.iter().any(|o| o.start < s && at < o.end) {
                clear.push((at, s));
            }
            at = e;
        }
        for v in add.iter().filter(|v| v.is_special()) {
            let (lo, hi) = st.special_span.unwrap_or((v.start, v.end));
            st.special_span = Some((lo.min(v.start), hi.max(v.end)));
        }
        // Kernel-shaped split holds ([`Files::set_kernel_split_holds`]; a
        // protection change already removes the cut VMA and inserts its
        // pieces in its split hold): after linking each split piece, the cut
        // VMA's entry is removed and reinserted with the range it keeps, at
        // the split site, as Linux 6.12's `__split_vma` does between
        // `vma_prepare` (`__vma_link_file(new)`, `vma_interval_tree_remove`)
        // and `vma_complete` (`vma_interval_tree_insert`). `unlinked` holds
        // each old VMA as the reverse map then has it (the reinserted entry
        // replaces the old one), for the unlink of what the call replaces.
        let kernel = why != Why::Protect && self.files.kernel_split_holds();
        let mut unlinked: Few<Arc<Vma>> = old.clone();
        if rests.iter().any(|v| v.file().is_some()) {
            if kernel {
                // `vms_gather_munmap_vmas` -> `__split_vma` at the core's
                // edge, one hold per edge.
                for r in rests.iter_mut() {
                    self.link(st, std::slice::from_mut(r), &[CallSite::Split]);
                    if let Some(cur) = unlinked
                        .iter_mut()
                        .find(|o| o.start <= r.start && r.end <= o.end)
                    {
                        self.resplit(st, cur, r.start, r.end);
                    }
                }
            } else {
                let sites = vec![CallSite::Split; rests.len()];
                self.link(st, &mut rests, &sites);
            }
        }
        // With a cut VMA the kernel splits (each end one `__split_vma` hold)
        // before it unlinks the replaced piece (`vms_clean_up_area`), so the
        // kernel-shaped calls link first, the pieces one by one, each split
        // piece followed by its cut VMA's remove and reinsert, and unlink
        // after: the holds per site stay the kernel's (split, link, split,
        // unlink where the kernel makes split, split, unlink, link: two
        // split holds of one call in a row would be one after
        // `coalesce_splits`).
        let cut_first = old.first().is_some_and(|v| v.start < start);
        let cut_last = old.last().is_some_and(|v| v.end > end);
        let split_first = kernel && rests.is_empty() && (cut_first || cut_last);
        if split_first && add.iter().any(|v| v.file().is_some()) {
            let n = add.len();
            for i in 0..n {
                self.link(st, &mut add[i..i + 1], &add_sites[i..i + 1]);
                let (s, e) = (add[i].start, add[i].end);
                if i == 0 && cut_first {
                    self.resplit(st, &mut unlinked[0], s, e);
                } else if i + 1 == n && cut_last {
                    let k = unlinked.len() - 1;
                    self.resplit(st, &mut unlinked[k], s, e);
                }
            }
        }
        if old.iter().any(|v| v.link.is_some()) {
            self.unlink(st, &unlinked, &old_sites);
        }
        if rests.iter().any(|v| v.link.is_some()) {
            let rests: Vec<Arc<Vma>> = rests.into_iter().map(Arc::new).collect();
            self.unlink(st, &rests, &vec![CallSite::Merge; rests.len()]);
        }
        if !split_first && add.iter().any(|v| v.file().is_some()) {
            self.link(st, &mut add, &add_sites);
        }
        // Tree writes: first each cleared stretch emptied in one write (an erase when
        // it is exactly one old VMA), which leaves an old VMA that a stretch cuts on
        // its remainder's range, so that storing the remainder is then an exact fit
        // (one slot swapped); then each new VMA stored over its range, replacing
        // whatever is left there in the same write (a merge or a grow in place is one
        // write, not an erase and an insert). A lock-free reader may meanwhile see an
        // old VMA on part of its range (see [`Mm::vmas`]), and never a hole where
        // the change keeps something mapped. The same instruction count as storing
        // first and erasing the remains after, and less time: the range removal's
        // instructions are mostly a path buffer's clearing, cheap per byte.
        for (s, e) in clear {
            if old.iter().any(|o| o.start == s && o.end == e) {
                self.tree.erase(s);
            } else {
                drop(self.tree.remove_range(s, e - 1).expect("s < e"));
            }
        }
        for (v, &site) in add.into_iter().zip(&add_sites) {
            let (s, e) = (v.start, v.end);
            let v = Arc::new(v);
            // A split piece's store is timed for `aspace predict`
            // ([`split_stores`]); nothing else changes.
            split_stores::store(matches!(site, CallSite::Split | CallSite::Merge), || {
                self.tree
                    .store_range(s, e - 1, v)
                    .expect("a VMA's range is not inverted")
            });
        }
    }

    /// The second half of a kernel-shaped split ([`Files::set_kernel_split_holds`]):
    /// `cur`, a file VMA just split, loses the piece `[s, e)` (at one of its
    /// ends, already linked as the split's new VMA): its reverse-map entry is
    /// removed and the range it keeps inserted as a new entry, both at the
    /// split call site (Linux 6.12 `__split_vma`: `vma_prepare` ->
    /// `vma_interval_tree_remove(vma)`, `vma_complete` ->
    /// `vma_interval_tree_insert(vma)` with the new `vm_start`/`vm_pgoff` or
    /// `vm_end`). `cur` becomes the VMA with the kept range and the new entry
    /// (the process's tree is not touched: `replace` stores what stays).
    fn resplit(&self, st: &mut State, cur: &mut Arc<Vma>, s: u64, e: u64) {
        let Some(link) = cur.link else { return };
        let Some((file, _)) = cur.file() else { return };
        let (lo, hi) = if s == cur.start {
            (e, cur.end)
        } else {
            (cur.start, s)
        };
        if lo >= hi {
            return;
        }
        let mut kept = cur.slice(lo, hi);
        let (_, pgoff) = kept.file().expect("a slice of a file VMA");
        let id = self.new_id(st);
        let handle = {
            let _site = set_call_site(CallSite::Split);
            let rmap = file.rmap();
            rmap.remove_batch(&[link.handle])
                .expect("every file VMA in the tree is linked");
            rmap.insert(interval(&kept, pgoff), id)
                .expect("valid interval")
        };
        st.calls.remove_batch += 1;
        st.calls.unlinked += 1;
        st.calls.insert += 1;
        st.calls.linked += 1;
        kept.link = Some(Link { handle, id });
        *cur = Arc::new(kept);
    }

    /// The VMAs intersecting `[start, end)`, in address order: one `find` descent
    /// per VMA (a range iterator costs two root-to-leaf paths, 2 KiB to set up, for
    /// the zero to two VMAs a call usually touches).
    fn overlapping(&self, start: u64, end: u64) -> Few<Arc<Vma>> {
        let r = self.tree.reader();
        let mut out = SmallVec::new();
        let mut at = start;
        while at < end {
            match r.find(at) {
                Some((range, v)) if *range.start() < end => {
                    out.push(v.clone());
                    at = *range.end() + 1;
                }
                _ => break,
            }
        }
        out
    }

    /// `Invalid` (EINVAL) if a change of `[start, end)` would cut a special mapping
    /// ([`Vma::is_special`]) in two, as Linux refuses it; `cuts` says whether a VMA
    /// that sticks out of the range is cut (mprotect and madvise leave a VMA whose
    /// protection or flags stay the same uncut).
    fn refuse_special_split(
        &self,
        st: &State,
        start: u64,
        end: u64,
        cuts: impl Fn(&Vma) -> bool,
    ) -> Result<(), Error> {
        match st.special_span {
            Some((lo, hi)) if start < hi && lo < end => {}
            _ => return Ok(()),
        }
        let cut = self
            .overlapping(start, end)
            .iter()
            .any(|v| v.is_special() && (v.start < start || v.end > end) && cuts(v));
        if cut {
            return Err(Error::Invalid {
                what: "would split a special mapping ([vdso], [vvar])",
            });
        }
        Ok(())
    }

    /// Whether any VMA intersects `[start, end)`.
    fn occupied(&self, start: u64, end: u64) -> bool {
        occupied(&self.tree, start, end)
    }

    /// Puts `pieces` (sorted, covering `[old.start, old.end)` exactly) in place of
    /// the VMA `old`, merging nothing: the kernel changed that VMA where it stood (a
    /// split, flags cleared), so each boundary at which two areas could now merge,
    /// the edges with its neighbours included, is kept as a seam ([`Mm::keep_apart`],
    /// after [`Mm::replace`], which forgets the seams inside the range).
    fn replace_in_place(&self, st: &mut State, old: &Vma, pieces: Vec<Vma>) {
        let (start, end) = (old.start, old.end);
        self.replace(st, start, end, pieces, Why::Protect, (start, end));
        self.keep_apart(st, start.saturating_sub(1), end.saturating_add(1));
    }

    /// Records a seam between every two adjacent areas meeting `[start, end)` that
    /// could merge: areas the kernel made or changed where they stood without
    /// merging them (a change in place, a fork's copies).
    fn keep_apart(&self, st: &mut State, start: u64, end: u64) {
        let areas = self.overlapping(start, end);
        for w in areas.windows(2) {
            if w[0].can_merge(&w[1]) && !st.seams.contains(&w[1].start) {
                st.seams.push(w[1].start);
            }
        }
    }

    /// Places `list` (sorted, contiguous or not), merging its ends with compatible
    /// neighbours, as `vma_merge` does; `why` says what for (see [`Mm::replace`]).
    fn place(&self, st: &mut State, mut list: Vec<Vma>, why: Why) {
        let (mut lo, mut hi) = (list[0].start, list[list.len() - 1].end);
        let core = (lo, hi);
        if list.len() > 1 {
            merge_adjacent(&mut list);
        }
        {
            let r = self.tree.reader();
            // A mergeable neighbour's piece outside the range joins the list's end
            // VMA (what merge_adjacent would make of the two).
            if let Some((_, e)) = lo.checked_sub(1).and_then(|i| r.load(i)) {
                let left = e.slice(e.start, lo);
                if left.can_merge(&list[0]) {
                    lo = left.start;
                    list[0] = Vma {
                        end: list[0].end,
                        ..left
                    };
                }
            }
            if let Some(right) = r.load(hi).map(|(_, e)| e.slice(hi, e.end)) {
                let last = list.len() - 1;
                if list[last].can_merge(&right) {
                    hi = right.end;
                    list[last].end = hi;
                }
            }
        }
        self.replace(st, lo, hi, list, why, core);
    }

    /// Whether `[start, start + len)` is empty at a page-aligned `start`: `mprotect`
    /// and `madvise` return 0 for it without looking at the space
    /// (`do_mprotect_pkey`, `do_madvise`); `Invalid` for an unaligned `start`.
    fn empty_range(start: u64, len: u64) -> Result<bool, Error> {
        if start % PAGE_SIZE != 0 {
            return Err(Error::Invalid {
                what: "address not page aligned",
            });
        }
        Ok(len == 0)
    }

    fn check_range(start: u64, len: u64) -> Result<u64, Error> {
        if start % PAGE_SIZE != 0 {
            return Err(Error::Invalid {
                what: "address not page aligned",
            });
        }
        if len == 0 {
            return Err(Error::Invalid {
                what: "zero length",
            });
        }
        let len = align_up(len).ok_or(Error::Invalid {
            what: "length overflows",
        })?;
        let end = start.checked_add(len).ok_or(Error::Invalid {
            what: "range overflows",
        })?;
        if end > TASK_SIZE {
            return Err(Error::Invalid {
                what: "range beyond the user address space",
            });
        }
        Ok(end)
    }

    // ------------------------------------------------------------------ system calls

    /// `mmap(addr, len, prot, flags, file, pgoff)`. Returns the start address.
    ///
    /// Shared anonymous memory (`shared` without a file) maps a new shmem object of
    /// its own ([`Files::shmem`]), as Linux does.
    ///
    /// Without `MAP_FIXED` the area goes at the hint `addr` if that range is free,
    /// else in the highest gap below [`layout::MMAP_BASE`] that fits. With it, `[addr, addr + len)` replaces whatever
    /// was mapped there. `len` is rounded up to pages. The new VMA merges with
    /// compatible neighbours.
    ///
    /// Errors (nothing changed): `Invalid` for a zero, overflowing or unaligned request
    /// or one outside the user range, or a file range past `u64`; `NoSpace` when no
    /// gap fits.
    pub fn mmap(
        &self,
        addr: u64,
        len: u64,
        prot: Prot,
        flags: MapFlags,
        file: Option<(&Arc<File>, u64)>,
    ) -> Result<u64, Error> {
        self.mmap_with(addr, len, prot, MmapOptions::from(flags), file)
    }

    /// `mmap` with every flag the model knows ([`MmapOptions`]): as [`Mm::mmap`],
    /// plus `MAP_FIXED_NOREPLACE` (`Exists` if anything is mapped in the range,
    /// nothing replaced), `MAP_NORESERVE` (no `VM_ACCOUNT`), `MAP_STACK`
    /// (`VM_NOHUGEPAGE`) and `MAP_LOCKED` (`VM_LOCKED`). These flags take part in
    /// merging, as in Linux. The new area also gets the space's default flags
    /// ([`Mm::def_flags`]: locked after `mlockall(MCL_FUTURE)`), as `do_mmap` adds
    /// `mm->def_flags`.
    pub fn mmap_with(
        &self,
        addr: u64,
        len: u64,
        prot: Prot,
        opts: MmapOptions,
        file: Option<(&Arc<File>, u64)>,
    ) -> Result<u64, Error> {
        let at_addr = opts.fixed || opts.fixed_noreplace;
        let len = if at_addr {
            Self::check_range(addr, len)? - addr
        } else {
            if len == 0 {
                return Err(Error::Invalid {
                    what: "zero length",
                });
            }
            align_up(len).ok_or(Error::Invalid {
                what: "length overflows",
            })?
        };
        if at_addr && addr < MMAP_MIN_ADDR {
            return Err(Error::Invalid {
                what: "MAP_FIXED below mmap_min_addr",
            });
        }
        if opts.droppable && (opts.shared || file.is_some() || opts.locked) {
            // `do_mmap`: the map type 0x08 is known only for anonymous memory, and
            // "a locked area makes no sense to be droppable".
            return Err(Error::Invalid {
                what: "MAP_DROPPABLE of a file or shared memory, or with MAP_LOCKED",
            });
        }
        if let Some((_, pgoff)) = file {
            if pgoff.checked_add(len / PAGE_SIZE).is_none() {
                return Err(Error::Invalid {
                    what: "file offset overflows",
                });
            }
        }
        let mut st = self.state.lock();
        if opts.fixed_noreplace && !opts.fixed && self.occupied(addr, addr + len) {
            return Err(Error::Exists { start: addr, len });
        }
        if opts.fixed {
            self.refuse_special_split(&st, addr, addr + len, |_| true)?;
            self.refuse_sealed_unmap(&mut st, addr, addr + len)?;
        }
        let start = if at_addr {
            addr
        } else {
            let req = placement::Request {
                top: st.mmap_base,
                hint: addr,
                len,
                pgoff: file.map(|(_, p)| p),
                shared: opts.shared,
                nohugepage: opts.stack,
                low: opts.low32,
            };
            placement::unmapped_area(&self.tree, req, opts.placement)?
        };
        let backing = match file {
            // `mmap_zero`: a shared mapping of /dev/zero is shared anonymous memory
            // (`shmem_zero_setup`), which the maps name `/dev/zero (deleted)`; a
            // private one stays a mapping of the device, with anonymous pages.
            Some((f, pgoff)) if opts.shared && f.path() == Path::new(DEV_ZERO) => Backing::File {
                file: self.files.shmem(pgoff + len / PAGE_SIZE),
                pgoff,
            },
            Some((f, pgoff)) => Backing::File {
                file: f.clone(),
                pgoff,
            },
            // Shared anonymous memory is a shmem file of its own (`shmem_zero_setup`).
            None if opts.shared => Backing::File {
                file: self.files.shmem(len / PAGE_SIZE),
                pgoff: 0,
            },
            None => Backing::Anon(AnonKind::Plain),
        };
        // `do_mmap` ORs the space's default flags in (`mlockall(MCL_FUTURE)`).
        let flags = opts.vm_flags(prot).with_default_lock(st.def_flags);
        let vma = Vma {
            start,
            end: start + len,
            prot,
            flags,
            backing,
            link: None,
        };
        self.place(&mut st, vec![vma], Why::Map);
        Ok(start)
    }

    /// `munmap(start, len)`: removes every mapping in the range, splitting VMAs that
    /// stick out. A range with nothing mapped is `Ok` and changes nothing, as Linux
    /// returns 0. Errors (nothing changed): `Invalid` for a bad range or one that
    /// cuts a special mapping ([`Vma::is_special`]), `Sealed` for one that holds
    /// sealed memory ([`seal`]; the first area may be left split at `start`, as the
    /// kernel leaves it).
    pub fn munmap(&self, start: u64, len: u64) -> Result<(), Error> {
        let end = Self::check_range(start, len)?;
        let mut st = self.state.lock();
        self.refuse_special_split(&st, start, end, |_| true)?;
        self.refuse_sealed_unmap(&mut st, start, end)?;
        // Nothing mapped in the range: replace changes nothing.
        self.replace(&mut st, start, end, Vec::new(), Why::Unmap, (start, end));
        Ok(())
    }

    /// `brk(new)`: moves the program break and grows or shrinks `[heap]`. Returns the
    /// new break, or the old one if the request is below the heap start, overflows, or
    /// would run into another mapping (as Linux does). The growth gets the space's
    /// default flags ([`Mm::def_flags`]), so a heap grown after
    /// `mlockall(MCL_FUTURE)` is locked, and is a second `[heap]` area next to an
    /// unlocked one.
    pub fn brk(&self, new: u64) -> u64 {
        let mut st = self.state.lock();
        if st.brk_start == 0 || new < st.brk_start {
            return st.brk;
        }
        let (Some(old_end), Some(new_end)) = (align_up(st.brk), align_up(new)) else {
            return st.brk;
        };
        if new_end < old_end {
            if self.refuse_sealed(new_end, old_end).is_err() {
                return st.brk;
            }
            self.replace(
                &mut st,
                new_end,
                old_end,
                Vec::new(),
                Why::Unmap,
                (new_end, old_end),
            );
        } else if new_end > old_end {
            if new_end > MMAP_BASE || self.occupied(old_end, new_end) {
                return st.brk;
            }
            let mut heap = anon(old_end, new_end, Prot::RW, AnonKind::Heap);
            // `do_brk_flags` ORs `mm->def_flags` in, and grows the old heap only
            // if its flags are the same (else the growth is an area of its own).
            heap.flags = heap.flags.with_default_lock(st.def_flags);
            self.place(&mut st, vec![heap], Why::Map);
        }
        st.brk = new;
        new
    }

    /// `fork()`: a child with a copy of this address space. The tree is copied with
    /// the maple tree's `dup`, less the areas `madvise(MADV_DONTFORK)` marked
    /// (`VM_DONTCOPY`); then each file VMA is linked into its file's map right
    /// after the parent's (`insert_after` per VMA or `insert_after_batch` per file, by
    /// the registry's [`CallPattern`]) and the
    /// child's entry replaced with the linked copy. The copies lose their lock bits
    /// (`dup_mmap` clears `VM_LOCKED_MASK`) but keep the parent's boundaries, merged
    /// with nothing, and the child's default flags have no lock bits (`mm_init` keeps
    /// only `VM_NOHUGEPAGE` of them, which the model does not have).
    ///
    /// ```
    /// use mm::{CallPattern, Files, MapFlags, Mm, Prot, PAGE_SIZE};
    /// use rmap::{Design, Topology};
    ///
    /// let files = Files::new(Design::Aspace, Topology::Os, CallPattern::Batched);
    /// let lib = files.register(std::path::Path::new("/synthetic/libdemo.so"), 16);
    /// let parent = Mm::new(files.clone());
    /// let at = parent.mmap(0, 16 * PAGE_SIZE, Prot::RX, MapFlags::default(), Some((&lib, 0)))?;
    /// let child = parent.fork();
    /// assert_eq!(child.vmas().len(), 1);
    /// assert_eq!(lib.rmap().len(), 2); // the child's copy is in the file's reverse map
    /// parent.munmap(at, 16 * PAGE_SIZE)?;
    /// assert!(child.find(at).is_some()); // the child keeps its own mapping
    /// child.exit();
    /// assert_eq!(lib.rmap().len(), 0);
    /// # Ok::<(), mm::Error>(())
    /// ```
    pub fn fork(&self) -> Mm {
        let st = self.state.lock();
        let child = Mm {
            id: NEXT_MM.fetch_add(1, Ordering::Relaxed),
            files: self.files.clone(),
            pattern: self.pattern,
            tree: self.tree.dup(),
            state: Mutex::new(State {
                brk_start: st.brk_start,
                brk: st.brk,
                start_stack: st.start_stack,
                special_span: st.special_span,
                mmap_base: st.mmap_base,
                def_flags: VmFlags::default(),
                seams: Vec::new(),
                exe_file: st.exe_file.clone(),
                next_id: 0,
                calls: RmapCalls::default(),
            }),
            users: AtomicUsize::new(1),
        };
        // Areas marked VM_DONTCOPY (madvise(MADV_DONTFORK)) stay out of the child:
        // dup_mmap erases them from the tree it copied. The locked anonymous areas'
        // copies lose their lock bits (the file ones' below, with their link).
        let lock = |v: &Vma| v.flags.locked || v.flags.lockonfault;
        let mut dontcopy: Vec<(u64, u64)> = Vec::new();
        let mut locked: Vec<Arc<Vma>> = Vec::new();
        for (_, v) in child.tree.reader().iter() {
            if v.flags.dontcopy {
                dontcopy.push((v.start, v.end));
            } else if v.link.is_none() && lock(&v) {
                locked.push((*v).clone());
            }
        }
        for (start, end) in dontcopy {
            child
                .tree
                .remove_range(start, end - 1)
                .expect("a range the copied tree holds");
        }
        for v in &locked {
            let mut copy = (**v).clone();
            copy.flags = copy.flags.with_lock(VmFlags::default());
            child
                .tree
                .store_range(v.start, v.end - 1, Arc::new(copy))
                .expect("same range as the dup'd entry");
        }
        // The parent's mmap lock stays held until every child VMA is linked (as
        // dup_mmap holds the parent's mmap_lock): its handles cannot go away meanwhile.
        let file_vmas: Vec<Arc<Vma>> = child
            .tree
            .reader()
            .iter()
            .filter(|(_, v)| v.link.is_some())
            .map(|(_, v)| v.clone())
            .collect();
        let mut cst = child.state.lock();
        for (file, idx) in group_by_file(file_vmas.iter().map(|v| v.file().map(|f| f.0))) {
            let items: Vec<(Handle, Interval, VmaId)> = idx
                .iter()
                .map(|&i| {
                    let v = &file_vmas[i];
                    let (_, pgoff) = v.file().expect("file VMA");
                    let parent = v.link.expect("filtered on link").handle;
                    (parent, interval(v, pgoff), child.new_id(&mut cst))
                })
                .collect();
            // The parent's handles stay live while we hold its mmap lock.
            let handles: Vec<Handle> = match self.pattern {
                CallPattern::Batched => {
                    let mut out = Vec::with_capacity(items.len());
                    let _site = set_call_site(CallSite::ForkInsertAfter);
                    file.rmap()
                        .insert_after_batch(&items, &mut out)
                        .expect("the parent's handles are live while we hold its VMAs");
                    cst.calls.insert_after_batch += 1;
                    out
                }
                CallPattern::PerVma => items
                    .iter()
                    .map(|&(parent, iv, id)| {
                        cst.calls.insert_after += 1;
                        let _site = set_call_site(CallSite::ForkInsertAfter);
                        file.rmap()
                            .insert_after(parent, iv, id)
                            .expect("the parent's handle is live while we hold its VMA")
                    })
                    .collect(),
            };
            cst.calls.linked += items.len() as u64;
            for ((&i, handle), &(_, _, id)) in idx.iter().zip(handles).zip(&items) {
                let v = &file_vmas[i];
                let mut copy = (**v).clone();
                copy.link = Some(Link { handle, id });
                copy.flags = copy.flags.with_lock(VmFlags::default());
                child
                    .tree
                    .store_range(v.start, v.end - 1, Arc::new(copy))
                    .expect("same range as the dup'd entry");
            }
        }
        // Neighbours that only their lock bits (now gone) kept apart, and those
        // the parent kept apart so: the child keeps them apart too.
        if !locked.is_empty() || !st.seams.is_empty() || file_vmas.iter().any(|v| lock(v)) {
            child.keep_apart(&mut cst, 0, TASK_SIZE);
        }
        drop(cst);
        drop(st);
        child
    }

    /// Removes every VMA (unlinked as [`CallPattern`] says), whatever uses the space:
    /// the kernel's `exit_mmap`, what the last user's exit does. The `Mm` is empty
    /// afterwards and may exec again. A process that shares its space with others
    /// (`vfork`, threads) releases it with [`Process::exit`] instead, which tears it
    /// down only when no other process uses it.
    pub fn exit(&self) {
        let mut st = self.state.lock();
        self.teardown(&mut st);
    }

    fn teardown(&self, st: &mut MutexGuard<'_, State>) {
        let all: Vec<Arc<Vma>> = self.tree.reader().iter().map(|(_, v)| v.clone()).collect();
        self.tree.clear();
        let sites = vec![CallSite::ExitUnlink; all.len()];
        self.unlink(st, &all, &sites);
        st.brk_start = 0;
        st.brk = 0;
        st.start_stack = 0;
        st.special_span = None;
        // The next image's space starts with no default lock bits (`mm_init`).
        st.def_flags = VmFlags::default();
        st.seams.clear();
        st.exe_file = None;
    }

    /// A page fault at `addr`: finds the VMA on the lock-free read path and checks the
    /// access against its protection. Errors with `Fault` (SIGSEGV) when no VMA
    /// covers `addr` or it forbids the access.
    pub fn page_fault(&self, addr: u64, access: Access) -> Result<(), Error> {
        let prot = match self.tree.load(addr) {
            Some(e) => e.prot,
            // Retry under the mmap lock, so a concurrent replacement is not a miss.
            None => {
                let _st = self.state.lock();
                match self.tree.load(addr) {
                    Some(e) => e.prot,
                    None => return Err(Error::Fault { addr }),
                }
            }
        };
        let ok = match access {
            Access::Read => prot.read,
            Access::Write => prot.write,
            Access::Exec => prot.exec,
        };
        if ok {
            Ok(())
        } else {
            Err(Error::Fault { addr })
        }
    }

    /// Checks the model's invariants: VMAs sorted, page aligned, inside the user
    /// address space (at or above `mmap_min_addr`, below `TASK_SIZE`), non-overlapping,
    /// no two adjacent ones mergeable (but where a fork's child keeps its parent's
    /// boundary between areas that only their lock bits told apart), anonymous VMAs
    /// unlinked, and each file VMA in its own file's reverse map exactly once with its
    /// interval, and in no other file's map (no stray or duplicated entry of this
    /// process anywhere). Takes the mmap lock and walks every file's map; O(entries).
    /// Returns a description of the first violation found.
    pub fn check_invariants(&self) -> Result<(), String> {
        let st = self.state.lock();
        let vmas: Vec<Arc<Vma>> = self.tree.reader().iter().map(|(_, v)| v.clone()).collect();
        for w in vmas.windows(2) {
            if w[0].end > w[1].start {
                return Err(format!("overlap: {:#x} > {:#x}", w[0].end, w[1].start));
            }
            if w[0].can_merge(&w[1]) && !st.seams.contains(&w[1].start) {
                return Err(format!("unmerged neighbours at {:#x}", w[1].start));
            }
        }
        // id -> (the file it must be in, its interval)
        let mut expected: std::collections::HashMap<VmaId, (*const File, Interval)> =
            Default::default();
        for v in &vmas {
            if v.start >= v.end
                || v.start % PAGE_SIZE != 0
                || v.end % PAGE_SIZE != 0
                || v.end > TASK_SIZE
                || v.start < MMAP_MIN_ADDR
            {
                return Err(format!("bad VMA [{:#x}, {:#x})", v.start, v.end));
            }
            match (v.file(), v.link) {
                (Some((file, pgoff)), Some(l)) => {
                    let want = (Arc::as_ptr(file), interval(v, pgoff));
                    if expected.insert(l.id, want).is_some() {
                        return Err(format!("id {} used twice", l.id));
                    }
                }
                (Some(_), None) => return Err(format!("file VMA at {:#x} not linked", v.start)),
                (None, Some(_)) => return Err(format!("anon VMA at {:#x} linked", v.start)),
                (None, None) => {}
            }
        }
        let mut seen: std::collections::HashSet<VmaId> = Default::default();
        // Every registered file, and the unregistered ones this space maps (shared
        // anonymous memory: `Files::shmem`).
        let mut all = self.files.all();
        for v in &vmas {
            if let Some((f, _)) = v.file() {
                if !all.iter().any(|g| Arc::ptr_eq(g, f)) {
                    all.push(f.clone());
                }
            }
        }
        for f in all {
            let mut err = None;
            f.rmap().walk(Interval::FULL, &mut |iv, id| {
                if !self.owns(id) || err.is_some() {
                    return;
                }
                let path = f.path().display();
                match expected.get(&id) {
                    None => err = Some(format!("{path}: stray rmap entry {id} {iv:?}")),
                    Some(&(file, _)) if file != Arc::as_ptr(&f) => {
                        err = Some(format!("{path}: rmap entry {id} belongs to another file"))
                    }
                    Some(&(_, want)) if want != iv => {
                        err = Some(format!("{path}: rmap entry {id} is {iv:?}, VMA {want:?}"))
                    }
                    Some(_) if !seen.insert(id) => {
                        err = Some(format!("{path}: rmap entry {id} linked twice"))
                    }
                    Some(_) => {}
                }
            });
            if let Some(e) = err {
                return Err(e);
            }
        }
        if seen.len() != expected.len() {
            return Err(format!(
                "{} file VMAs but {} of them in a reverse map",
                expected.len(),
                seen.len()
            ));
        }
        Ok(())
    }
}

impl Drop for Mm {
    fn drop(&mut self) {
        self.exit();
    }
}

impl std::fmt::Debug for Mm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mm")
            .field("id", &self.id)
            .field("vmas", &self.tree.len())
            .finish()
    }
}

/// The VMA a reader found on the tree's range `[first, last]`: `v` itself, or,
/// while a change that cuts `v` is in flight (the tree already maps part of `v`'s
/// range elsewhere), the piece of `v` on that range, with no reverse-map id (no
/// reverse map holds that piece's interval).
fn as_seen(first: u64, last: u64, v: &Vma) -> Vma {
    if v.start == first && v.end == last + 1 {
        return v.clone();
    }
    v.slice(first.max(v.start), (last + 1).min(v.end))
}

fn anon(start: u64, end: u64, prot: Prot, kind: AnonKind) -> Vma {
    Vma {
        start,
        end,
        prot,
        flags: VmFlags {
            shared: false,
            account: prot.write,
            ..VmFlags::default()
        },
        backing: Backing::Anon(kind),
        link: None,
    }
}

/// Why [`Mm::replace`] runs: what the system call does to the range it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Why {
    /// mmap, exec, brk growth: new mappings replace what was there.
    Map,
    /// munmap, brk shrink: the range is emptied.
    Unmap,
    /// mprotect: the range's protection changes.
    Protect,
}

impl Why {
    /// The call site of linking a VMA this call adds (not a split piece or merge).
    fn link_site(self) -> CallSite {
        match self {
            Why::Map => CallSite::MmapLink,
            Why::Unmap | Why::Protect => CallSite::Other,
        }
    }

    /// The call site of unlinking a VMA inside the range (not cut, not merged).
    fn unlink_site(self) -> CallSite {
        match self {
            Why::Map => CallSite::ReplaceUnlink,
            Why::Unmap => CallSite::ExitUnlink,
            Why::Protect => CallSite::Other,
        }
    }
}

type FileSite<'a> = Option<(&'a Arc<File>, CallSite)>;

/// Item indices that go into one reverse-map call, with the file and call site.
type Groups = Vec<((Arc<File>, CallSite), Vec<usize>)>;

/// Splits items into runs of consecutive items of one file and call site (file by
/// pointer identity), each at most `limit` long; `None` items (anonymous VMAs) are
/// skipped without ending a run.
fn runs_by_file_and_site<'a>(keys: impl Iterator<Item = FileSite<'a>>, limit: usize) -> Groups {
    let mut runs: Groups = Vec::new();
    for (i, k) in keys.enumerate() {
        let Some((f, site)) = k else { continue };
        match runs.last_mut() {
            Some(((g, s), v)) if Arc::ptr_eq(g, f) && *s == site && v.len() < limit => v.push(i),
            _ => runs.push(((f.clone(), site), vec![i])),
        }
    }
    runs
}

/// Groups items by file (pointer identity) and call site, keeping first-seen order.
fn group_by_file_and_site<'a>(keys: impl Iterator<Item = FileSite<'a>>) -> Groups {
    let mut groups: Groups = Vec::new();
    for (i, k) in keys.enumerate() {
        let Some((f, site)) = k else { continue };
        match groups
            .iter_mut()
            .find(|((g, s), _)| Arc::ptr_eq(g, f) && *s == site)
        {
            Some((_, v)) => v.push(i),
            None => groups.push(((f.clone(), site), vec![i])),
        }
    }
    groups
}

/// Groups items by file (pointer identity), keeping first-seen order.
fn group_by_file<'a>(
    files: impl Iterator<Item = Option<&'a Arc<File>>>,
) -> Vec<(Arc<File>, Vec<usize>)> {
    group_by_file_and_site(files.map(|f| f.map(|f| (f, CallSite::Other))))
        .into_iter()
        .map(|((f, _), v)| (f, v))
        .collect()
}
