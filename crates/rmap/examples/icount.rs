//! Single-thread instruction-count harness for `scripts/callgrind-rmap.sh`.
//!
//! `cargo run --release -p aspace-rmap --example icount -- DESIGN churn|walk N`
//! (`-- list` prints every design's name, one a line.)
//!
//! Builds one map of `DESIGN`, maps 1200 resident processes of libc's five
//! segments (6000 entries; the page-offset ranges of this machine's
//! `libc.so.6`, see `shared/DOMAIN.md`), then runs the measured function:
//!
//! * `churn`: `N` ops, each = insert the 5 segments of one process (5
//!   `insert` calls, one lock hold each), then remove them (5 `remove` calls);
//! * `walk`: `N` walks of one page offset (`0x10`, inside the first segment:
//!   1200 hits each).
//!
//! `tree` in place of a design runs the same work on the bare interval tree
//! of the Linux-derived designs (no lock, no handle, no counters): the
//! like-for-like comparison with the kernel's `mm/interval_tree.c`.
//!
//! Only the `measured_*` functions are meant to be counted
//! (`valgrind --tool=callgrind --toggle-collect='*measured_*'`), so the setup
//! is excluded. Without valgrind the binary just runs and prints a checksum,
//! which keeps the work from being optimised away.

use std::hint::black_box;

use rmap::__bare_interval_tree::BareTree;
use rmap::{Design, Handle, Interval, ReverseMap, Topology, VmaId};

/// libc's page-offset ranges on the development machines (DOMAIN.md).
const LIBC: [(u64, u64); 5] = [
    (0, 0x25),
    (0x26, 0x17b),
    (0x17c, 0x1ce),
    (0x1cf, 0x1d2),
    (0x1d3, 0x1d4),
];
const RESIDENT_PROCESSES: u64 = 1200;
const WALK_PGOFF: u64 = 0x10;

fn segments() -> [Interval; 5] {
    LIBC.map(|(a, b)| Interval::new(a, b).expect("a valid libc segment"))
}

#[inline(never)]
fn measured_churn(map: &dyn ReverseMap, segs: &[Interval; 5], ops: u64) -> u64 {
    let mut hs: [Option<Handle>; 5] = [None; 5];
    let mut vma: VmaId = 1 << 40;
    for _ in 0..ops {
        for (h, &iv) in hs.iter_mut().zip(segs) {
            *h = Some(map.insert(iv, vma).expect("insert"));
            vma += 1;
        }
        for h in hs.iter_mut() {
            map.remove(h.take().expect("inserted")).expect("remove");
        }
    }
    vma
}

#[inline(never)]
fn measured_walk(map: &dyn ReverseMap, walks: u64) -> u64 {
    let mut hits = 0u64;
    let range = Interval::new(WALK_PGOFF, WALK_PGOFF).expect("a valid range");
    for _ in 0..walks {
        map.walk(black_box(range), &mut |_, vma| {
            hits += 1;
            black_box(vma);
        });
    }
    hits
}

#[inline(never)]
fn measured_tree_churn(t: &mut BareTree, ops: u64) -> u64 {
    let mut slots = [0u32; 5];
    let mut vma: VmaId = 1 << 40;
    for _ in 0..ops {
        for (s, &(a, b)) in slots.iter_mut().zip(&LIBC) {
            *s = t.insert(a, b, vma).expect("a valid segment");
            vma += 1;
        }
        for &s in &slots {
            assert!(t.remove(s), "inserted");
        }
    }
    vma
}

#[inline(never)]
fn measured_tree_walk(t: &BareTree, walks: u64) -> u64 {
    let mut hits = 0u64;
    for _ in 0..walks {
        let p = black_box(WALK_PGOFF);
        t.walk(p, p, |vma| {
            hits += 1;
            black_box(vma);
        });
    }
    hits
}

/// `tree churn|walk N`: the same work on the bare tree of the Linux-derived
/// designs (no lock, no handle, no counters).
fn bare_tree(what: &str, n: u64) -> u64 {
    let mut t = BareTree::new();
    let mut vma: VmaId = 1;
    for _ in 0..RESIDENT_PROCESSES {
        for &(a, b) in &LIBC {
            t.insert(a, b, vma).expect("a valid segment");
            vma += 1;
        }
    }
    let out = match what {
        "churn" => measured_tree_churn(&mut t, n),
        "walk" => {
            let hits = measured_tree_walk(&t, n);
            assert_eq!(hits, n * RESIDENT_PROCESSES, "every resident process hit");
            hits
        }
        _ => panic!("usage: icount tree churn|walk N"),
    };
    assert_eq!(t.len() as u64, RESIDENT_PROCESSES * 5);
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: icount list | icount DESIGN|tree churn|walk N";
    if args.first().map(String::as_str) == Some("list") {
        for d in Design::ALL {
            println!("{d}");
        }
        return;
    }
    let what = args.get(1).expect(usage).as_str();
    let n: u64 = args.get(2).and_then(|s| s.parse().ok()).expect(usage);
    if args[0] == "tree" {
        println!("tree {what} {n} {}", bare_tree(what, n));
        return;
    }
    let design: Design = args.first().expect(usage).parse().expect(usage);
    let map = design.build(&Topology::Os);
    let segs = segments();
    let mut vma: VmaId = 1;
    for _ in 0..RESIDENT_PROCESSES {
        for &iv in &segs {
            map.insert(iv, vma).expect("resident insert");
            vma += 1;
        }
    }
    let out = match what {
        "churn" => measured_churn(&*map, &segs, n),
        "walk" => {
            let hits = measured_walk(&*map, n);
            assert_eq!(hits, n * RESIDENT_PROCESSES, "every resident process hit");
            hits
        }
        _ => panic!("{usage}"),
    };
    assert_eq!(map.len() as u64, RESIDENT_PROCESSES * 5);
    println!("{design} {what} {n} {out}");
}
