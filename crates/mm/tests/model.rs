//! Model-based tests: `Mm`'s mmap (with `MAP_FIXED_NOREPLACE`, `MAP_NORESERVE`,
//! `MAP_STACK`, `MAP_LOCKED`) / munmap / mprotect / madvise / mremap / mlock2 /
//! munlock / mlockall / munlockall against a page-by-page reference, plus the
//! reverse-map invariants after every step.

use mm::layout::{MMAP_BASE, MMAP_MIN_ADDR};
use mm::{
    Advice, Backing, CallPattern, Error, File, Files, Mm, MmapOptions, MremapFlags, Placement,
    Prot, PAGE_SIZE,
};
use proptest::prelude::*;
use rmap::{Design, Topology};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Pages of the window the fixed operations use (just below MMAP_BASE, where top-down
/// placement also lands).
const WINDOW: u64 = 48;
const BASE_PAGE: u64 = MMAP_BASE / PAGE_SIZE - WINDOW;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PageAttr {
    prot: Prot,
    account: bool,
    shared: bool,
    noreserve: bool,
    huge: bool,
    nohuge: bool,
    dontcopy: bool,
    /// `VM_LOCKED`, `VM_LOCKONFAULT`.
    lock: (bool, bool),
    /// `VM_RAND_READ`, `VM_SEQ_READ`.
    read: (bool, bool),
    mergeable: bool,
    /// None = anonymous; Some((file, pgoff of this page)).
    file: Option<(usize, u64)>,
}

#[derive(Clone, Debug)]
enum Op {
    Mmap {
        fixed: Option<u64>,
        pages: u64,
        prot: Prot,
        shared: bool,
        file: Option<(usize, u64)>,
        noreplace: bool,
        noreserve: bool,
        stack: bool,
        locked: bool,
    },
    Madvise {
        page: u64,
        pages: u64,
        advice: u8,
    },
    Mremap {
        page: u64,
        old_pages: u64,
        new_pages: u64,
        may_move: bool,
        fixed: Option<u64>,
    },
    Munmap {
        page: u64,
        pages: u64,
    },
    Mprotect {
        page: u64,
        pages: u64,
        prot: Prot,
    },
    Mlock {
        page: u64,
        pages: u64,
        /// `MLOCK_ONFAULT`.
        onfault: bool,
    },
    Munlock {
        page: u64,
        pages: u64,
    },
    /// `mlockall(flags)`, flags 1..=7 (4, `MCL_ONFAULT` alone, is `EINVAL`).
    Mlockall {
        flags: u64,
    },
    Munlockall,
}

fn prot() -> impl Strategy<Value = Prot> {
    (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(r, w, x)| Prot::new(r, w, x))
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (
            proptest::option::of(0..WINDOW),
            1..8u64,
            prot(),
            any::<bool>(),
            proptest::option::of((0..2usize, 0..16u64)),
            (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>())
        )
            .prop_map(
                |(fixed, pages, prot, shared, file, (noreplace, noreserve, stack, locked))| {
                    Op::Mmap {
                        fixed,
                        pages,
                        prot,
                        shared,
                        file,
                        noreplace,
                        noreserve,
                        stack,
                        locked,
                    }
                }
            ),
        (0..WINDOW, 1..12u64, 0..9u8).prop_map(|(page, pages, advice)| Op::Madvise {
            page,
            pages,
            advice
        }),
        (
            0..WINDOW,
            1..8u64,
            1..10u64,
            any::<bool>(),
            proptest::option::of(0..WINDOW)
        )
            .prop_map(|(page, old_pages, new_pages, may_move, fixed)| Op::Mremap {
                page,
                old_pages,
                new_pages,
                may_move,
                fixed
            }),
        (0..WINDOW, 1..12u64).prop_map(|(page, pages)| Op::Munmap { page, pages }),
        (0..WINDOW, 1..12u64, prot()).prop_map(|(page, pages, prot)| Op::Mprotect {
            page,
            pages,
            prot
        }),
        (0..WINDOW, 1..12u64, any::<bool>()).prop_map(|(page, pages, onfault)| Op::Mlock {
            page,
            pages,
            onfault
        }),
        (0..WINDOW, 1..12u64).prop_map(|(page, pages)| Op::Munlock { page, pages }),
        (1..8u64).prop_map(|flags| Op::Mlockall { flags }),
        Just(Op::Munlockall),
    ]
}

#[derive(Default)]
struct Reference {
    pages: BTreeMap<u64, PageAttr>,
    /// Shared anonymous mappings made so far: each is a file of its own (a shmem
    /// object), numbered after the two test files in the order they were made.
    shmem: usize,
    /// The lock bits every new mapping gets (`mlockall(MCL_FUTURE)`).
    def_lock: (bool, bool),
}

fn advice(n: u8) -> Advice {
    [
        Advice::HugePage,
        Advice::NoHugePage,
        Advice::DontFork,
        Advice::DoFork,
        Advice::Random,
        Advice::Sequential,
        Advice::Normal,
        Advice::Mergeable,
        Advice::Unmergeable,
    ][n as usize]
}

impl Reference {
    fn top_down(&self, pages: u64) -> u64 {
        let mut s = MMAP_BASE / PAGE_SIZE - pages;
        while (s..s + pages).any(|p| self.pages.contains_key(&p)) {
            s -= 1;
            assert!(s >= MMAP_MIN_ADDR / PAGE_SIZE);
        }
        s
    }

    /// The maximal mergeable run (VMA) holding page `p`, as (first, end) pages.
    fn run_of(&self, p: u64) -> Option<(u64, u64)> {
        self.vmas()
            .into_iter()
            .map(|(s, e, _)| (s / PAGE_SIZE, e / PAGE_SIZE))
            .find(|&(s, e)| s <= p && p < e)
    }

    fn mremap(
        &mut self,
        page: u64,
        old_pages: u64,
        new_pages: u64,
        may_move: bool,
        fixed: Option<u64>,
    ) -> Result<Option<u64>, i32> {
        let old = BASE_PAGE + page;
        let old_end = old + old_pages;
        if fixed.is_some() && !may_move {
            return Err(mm::error::EINVAL);
        }
        if let Some(t) = fixed {
            let t = BASE_PAGE + t;
            if t < old_end && old < t + new_pages {
                return Err(mm::error::EINVAL);
            }
        }
        let Some((_, run_end)) = self.run_of(old) else {
            return Err(mm::error::EFAULT);
        };
        if fixed.is_none() && new_pages <= old_pages {
            for p in old + new_pages..old_end {
                self.pages.remove(&p);
            }
            return Ok(Some(old * PAGE_SIZE));
        }
        let keep = old_pages.min(new_pages);
        if old + keep > run_end {
            return Err(mm::error::EFAULT);
        }
        let extend = |a: PageAttr, i: u64| PageAttr {
            file: a.file.map(|(f, o)| (f, o + i)),
            ..a
        };
        if fixed.is_none() {
            if old_end == run_end
                && !(old_end..old + new_pages).any(|p| self.pages.contains_key(&p))
            {
                let last = self.pages[&(old_end - 1)];
                for (i, p) in (old_end..old + new_pages).enumerate() {
                    self.pages.insert(p, extend(last, i as u64 + 1));
                }
                return Ok(Some(old * PAGE_SIZE));
            }
            if !may_move {
                return Err(mm::error::ENOMEM);
            }
        }
        let target = match fixed {
            Some(t) => BASE_PAGE + t,
            None => self.top_down(new_pages),
        };
        let attrs: Vec<PageAttr> = (old..old + keep).map(|p| self.pages[&p]).collect();
        if fixed.is_some() {
            for p in target..target + new_pages {
                self.pages.remove(&p);
            }
        }
        for p in old..old_end {
            self.pages.remove(&p);
        }
        for i in 0..new_pages {
            let a = if i < keep {
                attrs[i as usize]
            } else {
                extend(attrs[keep as usize - 1], i - keep + 1)
            };
            self.pages.insert(target + i, a);
        }
        Ok(Some(target * PAGE_SIZE))
    }

    fn apply(&mut self, op: &Op) -> Result<Option<u64>, i32> {
        match *op {
            Op::Mmap {
                fixed,
                pages,
                prot,
                shared,
                file,
                noreplace,
                noreserve,
                stack,
                locked,
            } => {
                let start = match fixed {
                    Some(p) => BASE_PAGE + p,
                    None => self.top_down(pages),
                };
                if fixed.is_some()
                    && noreplace
                    && (start..start + pages).any(|p| self.pages.contains_key(&p))
                {
                    return Err(17); // EEXIST
                }
                let file = match file {
                    None if shared => {
                        self.shmem += 1;
                        Some((1 + self.shmem, 0))
                    }
                    f => f,
                };
                for (i, p) in (start..start + pages).enumerate() {
                    self.pages.insert(
                        p,
                        PageAttr {
                            prot,
                            account: !shared && prot.write && !noreserve,
                            shared,
                            noreserve,
                            huge: false,
                            nohuge: stack,
                            dontcopy: false,
                            lock: (locked || self.def_lock.0, self.def_lock.1),
                            read: (false, false),
                            mergeable: false,
                            file: file.map(|(f, off)| (f, off + i as u64)),
                        },
                    );
                }
                Ok(Some(start * PAGE_SIZE))
            }
            Op::Munmap { page, pages } => {
                let r = BASE_PAGE + page..BASE_PAGE + page + pages;
                for p in r {
                    self.pages.remove(&p);
                }
                Ok(None)
            }
            Op::Mprotect { page, pages, prot } => {
                let r = BASE_PAGE + page..BASE_PAGE + page + pages;
                if !r.clone().all(|p| self.pages.contains_key(&p)) {
                    return Err(mm::error::ENOMEM);
                }
                for p in r {
                    let a = self.pages.get_mut(&p).expect("checked");
                    a.prot = prot;
                    a.account |= !a.shared && prot.write && !a.noreserve;
                }
                Ok(None)
            }
            Op::Madvise {
                page,
                pages,
                advice,
            } => {
                let r = BASE_PAGE + page..BASE_PAGE + page + pages;
                if !r.clone().all(|p| self.pages.contains_key(&p)) {
                    return Err(mm::error::ENOMEM);
                }
                for p in r {
                    let a = self.pages.get_mut(&p).expect("checked");
                    match advice {
                        0 => (a.huge, a.nohuge) = (true, false),
                        1 => (a.huge, a.nohuge) = (false, true),
                        2 => a.dontcopy = true,
                        3 => a.dontcopy = false,
                        4 => a.read = (true, false),
                        5 => a.read = (false, true),
                        6 => a.read = (false, false),
                        // KSM leaves shared memory alone, without error.
                        7 => a.mergeable |= !a.shared,
                        _ => a.mergeable = false,
                    }
                }
                Ok(None)
            }
            Op::Mlock {
                page,
                pages,
                onfault,
            } => self.set_lock(page, pages, (true, onfault)),
            Op::Munlock { page, pages } => self.set_lock(page, pages, (false, false)),
            Op::Mlockall { flags } => {
                if flags == 4 {
                    return Err(mm::error::EINVAL);
                }
                let lock = (true, flags & 4 != 0);
                self.def_lock = if flags & 2 != 0 { lock } else { (false, false) };
                if flags & 1 != 0 {
                    for a in self.pages.values_mut() {
                        a.lock = lock;
                    }
                }
                Ok(None)
            }
            Op::Munlockall => {
                self.def_lock = (false, false);
                for a in self.pages.values_mut() {
                    a.lock = (false, false);
                }
                Ok(None)
            }
            Op::Mremap {
                page,
                old_pages,
                new_pages,
                may_move,
                fixed,
            } => self.mremap(page, old_pages, new_pages, may_move, fixed),
        }
    }

    /// `mlock2`/`munlock` of a range: every page mapped (else `ENOMEM`, nothing
    /// changed), each given `lock`.
    fn set_lock(&mut self, page: u64, pages: u64, lock: (bool, bool)) -> Result<Option<u64>, i32> {
        let r = BASE_PAGE + page..BASE_PAGE + page + pages;
        if !r.clone().all(|p| self.pages.contains_key(&p)) {
            return Err(mm::error::ENOMEM);
        }
        for p in r {
            self.pages.get_mut(&p).expect("checked").lock = lock;
        }
        Ok(None)
    }

    /// Maximal runs of mergeable pages: (start, end, attr of first page).
    fn vmas(&self) -> Vec<(u64, u64, PageAttr)> {
        let mut out: Vec<(u64, u64, PageAttr)> = Vec::new();
        for (&p, &a) in &self.pages {
            if let Some(last) = out.last_mut() {
                let (_, end, first) = *last;
                let n = end / PAGE_SIZE - last.0 / PAGE_SIZE;
                let follows = end == p * PAGE_SIZE
                    && first.prot == a.prot
                    && first.account == a.account
                    && first.shared == a.shared
                    && first.noreserve == a.noreserve
                    && (first.huge, first.nohuge, first.dontcopy) == (a.huge, a.nohuge, a.dontcopy)
                    && (first.lock, first.read, first.mergeable) == (a.lock, a.read, a.mergeable)
                    && match (first.file, a.file) {
                        (None, None) => true,
                        (Some((f1, o1)), Some((f2, o2))) => f1 == f2 && o1 + n == o2,
                        _ => false,
                    };
                if follows {
                    last.1 += PAGE_SIZE;
                    continue;
                }
            }
            out.push((p * PAGE_SIZE, (p + 1) * PAGE_SIZE, a));
        }
        out
    }
}

fn model_vmas(mm: &Mm, files: &[Arc<File>]) -> Vec<(u64, u64, PageAttr)> {
    mm.vmas()
        .iter()
        .map(|v| {
            let file = match &v.backing {
                Backing::File { file, pgoff } => Some((
                    files
                        .iter()
                        .position(|f| Arc::ptr_eq(f, file))
                        .expect("known"),
                    *pgoff,
                )),
                Backing::Anon(_) => None,
            };
            (
                v.start,
                v.end,
                PageAttr {
                    prot: v.prot,
                    account: v.flags.account,
                    shared: v.flags.shared,
                    noreserve: v.flags.noreserve,
                    huge: v.flags.hugepage,
                    nohuge: v.flags.nohugepage,
                    dontcopy: v.flags.dontcopy,
                    lock: (v.flags.locked, v.flags.lockonfault),
                    read: (v.flags.rand_read, v.flags.seq_read),
                    mergeable: v.flags.mergeable,
                    file,
                },
            )
        })
        .collect()
}

fn run(design: Design, pattern: CallPattern, ops: &[Op]) -> Result<(), TestCaseError> {
    let reg = Files::new(design, Topology::detect(), pattern);
    // The two test files, then each shmem object a shared anonymous mmap made.
    let mut files = vec![
        reg.register(Path::new("/model/a"), 64),
        reg.register(Path::new("/model/b"), 64),
    ];
    let mm = Mm::new(reg.clone());
    let mut reference = Reference::default();
    for op in ops {
        let before = model_vmas(&mm, &files);
        let got = match *op {
            Op::Mmap {
                fixed,
                pages,
                prot,
                shared,
                file,
                noreplace,
                noreserve,
                stack,
                locked,
            } => mm
                .mmap_with(
                    fixed.map_or(0, |p| (BASE_PAGE + p) * PAGE_SIZE),
                    pages * PAGE_SIZE,
                    prot,
                    MmapOptions {
                        fixed: fixed.is_some() && !noreplace,
                        fixed_noreplace: fixed.is_some() && noreplace,
                        shared,
                        noreserve,
                        stack,
                        locked,
                        placement: Placement::TOP_DOWN,
                        // (The window is below MMAP_BASE: no MAP_32BIT or droppable.)
                        ..MmapOptions::default()
                    },
                    file.map(|(f, off)| (&files[f], off)),
                )
                .map(Some),
            Op::Madvise {
                page,
                pages,
                advice: a,
            } => mm
                .madvise((BASE_PAGE + page) * PAGE_SIZE, pages * PAGE_SIZE, advice(a))
                .map(|()| None),
            Op::Mremap {
                page,
                old_pages,
                new_pages,
                may_move,
                fixed,
            } => mm
                .mremap(
                    (BASE_PAGE + page) * PAGE_SIZE,
                    old_pages * PAGE_SIZE,
                    new_pages * PAGE_SIZE,
                    MremapFlags {
                        may_move,
                        fixed: fixed.is_some(),
                        dont_unmap: false,
                    },
                    fixed.map_or(0, |p| (BASE_PAGE + p) * PAGE_SIZE),
                    Placement::TOP_DOWN,
                )
                .map(Some),
            Op::Munmap { page, pages } => mm
                .munmap((BASE_PAGE + page) * PAGE_SIZE, pages * PAGE_SIZE)
                .map(|()| None),
            Op::Mprotect { page, pages, prot } => mm
                .mprotect((BASE_PAGE + page) * PAGE_SIZE, pages * PAGE_SIZE, prot)
                .map(|()| None),
            Op::Mlock {
                page,
                pages,
                onfault,
            } => mm
                .mlock2(
                    (BASE_PAGE + page) * PAGE_SIZE,
                    pages * PAGE_SIZE,
                    u64::from(onfault) * mm::mlock::MLOCK_ONFAULT,
                )
                .map(|()| None),
            Op::Munlock { page, pages } => mm
                .munlock((BASE_PAGE + page) * PAGE_SIZE, pages * PAGE_SIZE)
                .map(|()| None),
            Op::Mlockall { flags } => mm.mlockall(flags).map(|()| None),
            Op::Munlockall => {
                mm.munlockall();
                Ok(None)
            }
        };
        let want = reference.apply(op);
        // A shmem object this op made: the one file of the space not seen before.
        for v in mm.vmas() {
            if let Some((f, _)) = v.file() {
                if !files.iter().any(|g| Arc::ptr_eq(g, f)) {
                    files.push(f.clone());
                }
            }
        }
        let linked: usize = files.iter().map(|f| f.rmap().len()).sum();
        let file_vmas = mm.vmas().iter().filter(|v| v.file().is_some()).count();
        prop_assert_eq!(
            linked,
            file_vmas,
            "rmap entries vs file VMAs after {:?}",
            op
        );
        prop_assert_eq!(got.clone().map_err(|e: Error| e.errno()), want, "{:?}", op);
        if got.is_err() {
            prop_assert_eq!(&model_vmas(&mm, &files), &before, "error changed state");
        }
        prop_assert_eq!(model_vmas(&mm, &files), reference.vmas(), "after {:?}", op);
        mm.check_invariants().map_err(TestCaseError::fail)?;
    }
    let linked: usize = files.iter().map(|f| f.rmap().len()).sum();
    let file_vmas = mm.vmas().iter().filter(|v| v.file().is_some()).count();
    prop_assert_eq!(linked, file_vmas);
    mm.exit();
    prop_assert_eq!(files.iter().map(|f| f.rmap().len()).sum::<usize>(), 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn linux_matches_reference(ops in proptest::collection::vec(op(), 1..40)) {
        run(Design::Linux, CallPattern::PerVma, &ops)?;
    }

    #[test]
    fn linux_batched_matches_reference(ops in proptest::collection::vec(op(), 1..40)) {
        run(Design::Linux, CallPattern::Batched, &ops)?;
    }

    #[test]
    fn aspace_matches_reference(ops in proptest::collection::vec(op(), 1..40)) {
        run(Design::Aspace, CallPattern::Batched, &ops)?;
    }

    #[test]
    fn aspace_per_vma_matches_reference(ops in proptest::collection::vec(op(), 1..40)) {
        run(Design::Aspace, CallPattern::PerVma, &ops)?;
    }
}
