//! What a tree keeps of the memory it was given: a preallocation is given
//! back after the write that used it or when its cursor is dropped, and
//! every tree recycles its own nodes.

use aspace_maple::MapleTree;

/// Resident set size of this process in bytes (Linux), for the report;
/// `None` under Miri, whose isolation refuses the read.
fn rss() -> Option<u64> {
    if cfg!(miri) {
        return None;
    }
    let s = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = s.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

fn filled(n: u64) -> MapleTree<u64> {
    let t = MapleTree::new();
    {
        let mut c = t.cursor();
        for i in 0..n {
            c.store_range(i * 16, i * 16 + 9, i).unwrap();
        }
    }
    t
}

/// `preallocate(0, u64::MAX)` reserves a worst case for a store over every
/// leaf; dropping the cursor unused gives it all back.
#[test]
fn preallocation_dropped_unused_is_given_back() {
    let n = if cfg!(miri) { 300 } else { 200_000 };
    let t = filled(n);
    let before = rss();
    {
        let mut c = t.cursor();
        c.preallocate(0, u64::MAX);
        assert!(
            c.pooled_blocks() > 100,
            "the preallocation reserved {}",
            c.pooled_blocks()
        );
        eprintln!(
            "pool {} blocks, RSS held {:?} KiB",
            c.pooled_blocks(),
            rss().map(|r| r / 1024)
        );
    }
    // Given back to the allocator, not kept in the tree's pool.
    assert!(
        t.pooled_blocks() <= 64,
        "the tree kept {} blocks after the cursor was dropped",
        t.pooled_blocks()
    );
    if let (Some(b), Some(a)) = (before, rss()) {
        let usage = t.memory_usage();
        eprintln!(
            "tree {} KiB of nodes; RSS before preallocate {} KiB, after dropping it {} KiB",
            usage.node_bytes / 1024,
            b / 1024,
            a / 1024
        );
    }
}

/// A preallocated store keeps only what it used.
#[test]
fn preallocated_store_trims_the_pool() {
    for exclusive in [false, true] {
        let mut t = filled(if cfg!(miri) { 200 } else { 20_000 });
        {
            let mut c = if exclusive {
                t.cursor_mut()
            } else {
                t.cursor()
            };
            c.preallocate(0, u64::MAX);
            let misses = c.unreserved_allocations();
            c.store_range(5, 40_000, 7).unwrap();
            assert_eq!(
                c.unreserved_allocations(),
                misses,
                "the store missed the pool"
            );
            // Still inside the cursor: the write already gave the surplus back.
        }
        assert!(
            t.pooled_blocks() <= 64,
            "pool kept {} blocks",
            t.pooled_blocks()
        );
        t.validate().unwrap();
    }
}

/// Trees on different threads each write their own tree; every one stays
/// valid and its pool bounded (recycling never hands one tree's blocks to
/// another's writer while still reachable: validate and the values check it).
#[test]
fn trees_on_threads_recycle_their_own_nodes() {
    let rounds: u64 = if cfg!(miri) { 50 } else { 20_000 };
    let threads: Vec<_> = (0..3u64)
        .map(|k| {
            std::thread::spawn(move || {
                let t = MapleTree::new();
                for i in 0..rounds {
                    let at = (i * 7) % 4096;
                    t.store_range(at, at + 2, k * 1_000_000 + i).unwrap();
                    if i % 3 == 0 {
                        t.erase((i * 13) % 4096);
                    }
                    if let Some(e) = t.load(at) {
                        assert_eq!(*e / 1_000_000, k, "a value from another tree");
                    }
                }
                t.validate().unwrap();
                assert!(t.pooled_blocks() <= 64);
                t.len()
            })
        })
        .collect();
    for h in threads {
        assert!(h.join().unwrap() > 0);
    }
}
