//! Address spaces shared by `CLONE_VM` children (vfork, posix_spawn, threads): each
//! process holds one use of its space; exec gives the process a new space and
//! releases the old one, exit releases it, and only the last user tears it down.

use mm::{CallPattern, Files, MapFlags, Mm, Process, Prot, PAGE_SIZE};
use rmap::{Design, Interval, Topology, VmaId};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

/// Everything about a space that its processes can see or that other spaces share:
/// each VMA in full (range, protection, flags, backing, reverse-map id), the
/// program break, and every reverse-map entry the space owns, file by file.
#[derive(Debug, PartialEq, Eq)]
struct Snapshot {
    vmas: Vec<String>,
    brk: (u64, u64),
    rmap: BTreeSet<(String, Interval, VmaId)>,
}

fn snapshot(files: &Files, mm: &Mm) -> Snapshot {
    let vmas = mm
        .vmas()
        .iter()
        .map(|v| {
            format!(
                "{:?} {:?} {:?}",
                (v.start, v.end, v.prot, v.flags),
                v.file().map(|(f, p)| (f.path().to_owned(), p)),
                v.rmap_id()
            )
        })
        .collect();
    let mut rmap = BTreeSet::new();
    for f in files.all() {
        f.rmap().walk(Interval::FULL, &mut |iv, id| {
            if mm.owns(id) {
                rmap.insert((f.path().display().to_string(), iv, id));
            }
        });
    }
    Snapshot {
        vmas,
        brk: mm.brk_range(),
        rmap,
    }
}

/// Reverse-map entries of every file, whoever owns them.
fn rmap_entries(files: &Files) -> usize {
    files.all().iter().map(|f| f.rmap().len()).sum()
}

/// A shell-like parent: exec'd, with a heap and a mapping of its own.
fn parent(files: &Arc<Files>) -> Process {
    let mut p = Process::new(files.clone());
    p.exec(Path::new("/bin/sh")).unwrap();
    let mm = p.mm();
    let (_, brk) = mm.brk_range();
    assert_eq!(mm.brk(brk + 3 * PAGE_SIZE), brk + 3 * PAGE_SIZE);
    mm.mmap(0, 5 * PAGE_SIZE, Prot::RW, MapFlags::default(), None)
        .unwrap();
    p
}

#[test]
fn vfork_then_exec_then_exit_leaves_the_parent_exactly_as_it_was() {
    for design in [Design::Linux, Design::Aspace] {
        for pattern in CallPattern::ALL {
            let files = Files::new(design, Topology::detect(), pattern);
            let shell = parent(&files);
            let before = snapshot(&files, shell.mm());
            let entries = rmap_entries(&files);

            let mut child = shell.clone_vm();
            assert!(Arc::ptr_eq(child.mm(), shell.mm()));
            assert_eq!(shell.mm().users(), 2);
            child.exec(Path::new("/bin/true")).unwrap();
            assert!(!Arc::ptr_eq(child.mm(), shell.mm()));
            assert_eq!((shell.mm().users(), child.mm().users()), (1, 1));
            assert_eq!(
                snapshot(&files, shell.mm()),
                before,
                "{design} {pattern}: exec"
            );
            assert!(child.mm().len() > 10, "the child's own image");
            child.mm().check_invariants().unwrap();
            assert!(rmap_entries(&files) > entries);

            let childs = child.mm().clone();
            child.exit();
            assert!(childs.is_empty(), "the child's space is its own: torn down");
            assert_eq!(
                snapshot(&files, shell.mm()),
                before,
                "{design} {pattern}: exit"
            );
            assert_eq!(rmap_entries(&files), entries);
            shell.mm().check_invariants().unwrap();
            // The parent goes on as before: brk and mmap work on its space.
            let (_, brk) = shell.mm().brk_range();
            assert_eq!(shell.mm().brk(brk + PAGE_SIZE), brk + PAGE_SIZE);

            let space = shell.mm().clone();
            shell.exit();
            assert!(space.is_empty());
            assert_eq!(rmap_entries(&files), 0, "{design} {pattern}");
        }
    }
}

#[test]
fn a_vfork_child_that_exits_without_exec_leaves_the_parent_alone() {
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let shell = parent(&files);
    let before = snapshot(&files, shell.mm());
    let child = shell.clone_vm();
    // What the child does before it exits is done to the shared space.
    let at = child
        .mm()
        .mmap(0, PAGE_SIZE, Prot::R, MapFlags::default(), None)
        .unwrap();
    assert!(shell.mm().find(at).is_some());
    shell.mm().munmap(at, PAGE_SIZE).unwrap();
    drop(child);
    assert_eq!(snapshot(&files, shell.mm()), before);
    assert_eq!(shell.mm().users(), 1);
}

#[test]
fn a_failed_exec_changes_nothing_and_keeps_sharing() {
    let files = Files::new(Design::Aspace, Topology::detect(), CallPattern::Batched);
    let shell = parent(&files);
    let before = snapshot(&files, shell.mm());
    let mut child = shell.clone_vm();
    assert!(child.exec(Path::new("/no/such/program")).is_err());
    assert!(Arc::ptr_eq(child.mm(), shell.mm()));
    assert_eq!(shell.mm().users(), 2);
    child.exit();
    assert_eq!(snapshot(&files, shell.mm()), before);
}

#[test]
fn threads_share_one_space_until_the_last_one_exits() {
    let files = Files::new(Design::Linux, Topology::detect(), CallPattern::PerVma);
    let main = parent(&files);
    let t1 = main.clone_vm();
    let t2 = t1.clone_vm();
    assert_eq!(main.mm().users(), 3);
    let space = main.mm().clone();
    let vmas = space.len();
    // The main thread exits first: the space stays for the other two.
    main.exit();
    assert_eq!((space.users(), space.len()), (2, vmas));
    // A fork copies the shared space; the copy is the child's own.
    let forked = t1.fork();
    assert_eq!(forked.mm().len(), vmas);
    assert_eq!(forked.mm().users(), 1);
    t1.exit();
    assert_eq!(space.len(), vmas);
    t2.exit();
    assert!(space.is_empty(), "the last user tears it down");
    assert_eq!(forked.mm().len(), vmas);
    forked.mm().check_invariants().unwrap();
    drop(forked);
    assert_eq!(rmap_entries(&files), 0);
}

/// Many children of one parent exec and exit on their own threads at once: the
/// parent's space is never torn down, each child's own space is, once.
#[test]
fn concurrent_exec_and_exit_of_vfork_children_release_exactly_once() {
    let files = Files::new(Design::Aspace, Topology::detect(), CallPattern::Batched);
    let shell = parent(&files);
    let before = snapshot(&files, shell.mm());
    let entries = rmap_entries(&files);
    for round in 0..4 {
        let children: Vec<Process> = (0..8).map(|_| shell.clone_vm()).collect();
        assert_eq!(shell.mm().users(), 9);
        std::thread::scope(|s| {
            for (i, mut c) in children.into_iter().enumerate() {
                s.spawn(move || {
                    if (i + round) % 3 != 0 {
                        c.exec(Path::new("/bin/true")).unwrap();
                        c.mm().check_invariants().unwrap();
                    }
                    c.exit();
                });
            }
        });
        assert_eq!(shell.mm().users(), 1);
        assert_eq!(snapshot(&files, shell.mm()), before, "round {round}");
        assert_eq!(rmap_entries(&files), entries, "round {round}");
    }
}
