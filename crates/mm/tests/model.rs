//! Model-based tests: `Mm`'s mmap / munmap / mprotect against a page-by-page reference,
//! plus the reverse-map invariants after every step.

use mm::layout::{MMAP_BASE, MMAP_MIN_ADDR};
use mm::{Backing, CallPattern, Error, File, Files, MapFlags, Mm, Prot, PAGE_SIZE};
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
            proptest::option::of((0..2usize, 0..16u64))
        )
            .prop_map(|(fixed, pages, prot, shared, file)| Op::Mmap {
                fixed,
                pages,
                prot,
                shared,
                file
            }),
        (0..WINDOW, 1..12u64).prop_map(|(page, pages)| Op::Munmap { page, pages }),
        (0..WINDOW, 1..12u64, prot()).prop_map(|(page, pages, prot)| Op::Mprotect {
            page,
            pages,
            prot
        }),
    ]
}

#[derive(Default)]
struct Reference {
    pages: BTreeMap<u64, PageAttr>,
}

impl Reference {
    fn apply(&mut self, op: &Op) -> Result<Option<u64>, i32> {
        match *op {
            Op::Mmap {
                fixed,
                pages,
                prot,
                shared,
                file,
            } => {
                let start = match fixed {
                    Some(p) => BASE_PAGE + p,
                    None => {
                        let mut s = MMAP_BASE / PAGE_SIZE - pages;
                        while (s..s + pages).any(|p| self.pages.contains_key(&p)) {
                            s -= 1;
                            assert!(s >= MMAP_MIN_ADDR / PAGE_SIZE);
                        }
                        s
                    }
                };
                for (i, p) in (start..start + pages).enumerate() {
                    self.pages.insert(
                        p,
                        PageAttr {
                            prot,
                            account: !shared && prot.write,
                            shared,
                            file: file.map(|(f, off)| (f, off + i as u64)),
                        },
                    );
                }
                Ok(Some(start * PAGE_SIZE))
            }
            Op::Munmap { page, pages } => {
                let r = BASE_PAGE + page..BASE_PAGE + page + pages;
                if !r.clone().any(|p| self.pages.contains_key(&p)) {
                    return Err(mm::error::ENOMEM);
                }
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
                    a.account |= !a.shared && prot.write;
                }
                Ok(None)
            }
        }
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
                    file,
                },
            )
        })
        .collect()
}

fn run(design: Design, pattern: CallPattern, ops: &[Op]) -> Result<(), TestCaseError> {
    let reg = Files::new(design, Topology::detect(), pattern);
    let files = vec![
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
            } => mm
                .mmap(
                    fixed.map_or(0, |p| (BASE_PAGE + p) * PAGE_SIZE),
                    pages * PAGE_SIZE,
                    prot,
                    MapFlags {
                        fixed: fixed.is_some(),
                        shared,
                    },
                    file.map(|(f, off)| (&files[f], off)),
                )
                .map(Some),
            Op::Munmap { page, pages } => mm
                .munmap((BASE_PAGE + page) * PAGE_SIZE, pages * PAGE_SIZE)
                .map(|()| None),
            Op::Mprotect { page, pages, prot } => mm
                .mprotect((BASE_PAGE + page) * PAGE_SIZE, pages * PAGE_SIZE, prot)
                .map(|()| None),
        };
        let want = reference.apply(op);
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
