//! Per-call-site lock accounting, the event recorder, and the `exclude`
//! bound's documented subset of the conformance contract.

use rmap::stats::{set_call_site, set_hold_timing, CallSite};
use rmap::{Design, Interval, ReverseMap, RmapError, Topology};

fn iv(a: u64, b: u64) -> Interval {
    Interval::new(a, b).unwrap()
}

#[test]
fn holds_are_counted_per_call_site() {
    for d in Design::ALL {
        let m = d.build(&Topology::Os);
        let h = {
            let _s = set_call_site(CallSite::MmapLink);
            m.insert(iv(0, 9), 1).unwrap()
        };
        let c = {
            let _s = set_call_site(CallSite::ForkInsertAfter);
            m.insert_after(h, iv(0, 9), 2).unwrap()
        };
        {
            let _s = set_call_site(CallSite::ExitUnlink);
            m.remove_batch(&[h, c]).unwrap();
        }
        {
            let _s = set_call_site(CallSite::Walk);
            m.walk(Interval::FULL, &mut |_, _| {});
        }
        let st = m.stats();
        // `sharded` takes its outer lock too: two holds per modifier.
        let per = if d == Design::Sharded { 2 } else { 1 };
        assert_eq!(st.site(CallSite::MmapLink).holds, per, "{d}");
        assert_eq!(st.site(CallSite::ForkInsertAfter).holds, per, "{d}");
        assert_eq!(st.site(CallSite::ExitUnlink).holds, per, "{d}");
        assert!(st.site(CallSite::Walk).holds >= 1, "{d}");
        assert_eq!(st.site(CallSite::Other).holds, 0, "{d}");
        let sum: u64 = st.per_site.iter().map(|s| s.holds).sum();
        assert_eq!(sum, st.acquisitions, "{d}");
    }
}

#[test]
fn call_site_guards_nest_and_restore() {
    assert_eq!(rmap::stats::call_site(), CallSite::Other);
    {
        let _a = set_call_site(CallSite::Split);
        {
            let _b = set_call_site(CallSite::Walk);
            assert_eq!(rmap::stats::call_site(), CallSite::Walk);
        }
        assert_eq!(rmap::stats::call_site(), CallSite::Split);
    }
    assert_eq!(rmap::stats::call_site(), CallSite::Other);
    for (i, s) in CallSite::ALL.iter().enumerate() {
        assert_eq!(s.index(), i);
    }
}

#[test]
fn hold_timing_counts_time_only_while_on() {
    let m = Design::Linux.build(&Topology::Os);
    let _s = set_call_site(CallSite::Split);
    let was = set_hold_timing(true);
    for v in 0..100 {
        m.insert(iv(v, v + 3), v).unwrap();
    }
    set_hold_timing(was);
    let timed = m.stats().site(CallSite::Split);
    assert_eq!(timed.holds, 100);
    assert!(timed.hold_ns > 0, "{timed:?}");
    m.insert(iv(0, 1), 1000).unwrap();
    let after = m.stats().site(CallSite::Split);
    assert_eq!(after.holds, 101);
}

#[test]
fn recorder_sees_each_hold_with_its_lines() {
    for d in Design::ALL {
        let m = d.build(&Topology::Os);
        let resident: Vec<_> = (0..64)
            .map(|v| m.insert(iv(v, v + 10), v).unwrap())
            .collect();
        let events = rmap::trace::record(|| {
            let _s = set_call_site(CallSite::MmapLink);
            let h = m.insert(iv(3, 13), 100).unwrap();
            let _u = set_call_site(CallSite::ExitUnlink);
            m.remove(h).unwrap();
            let _w = set_call_site(CallSite::Walk);
            m.walk(iv(0, 5), &mut |_, _| {});
        });
        let writes: Vec<_> = events.iter().filter(|e| e.write).collect();
        let ins = writes
            .iter()
            .find(|e| e.site == CallSite::MmapLink)
            .unwrap_or_else(|| panic!("{d}: {events:?}"));
        // Lock word + counters + tree header + the node at least.
        assert!(ins.lines_written >= 3, "{d}: {ins:?}");
        assert!(writes.iter().any(|e| e.site == CallSite::ExitUnlink), "{d}");
        let walk: Vec<_> = events.iter().filter(|e| e.site == CallSite::Walk).collect();
        assert!(!walk.is_empty(), "{d}");
        // A walk only reads the tree (it writes the lock word and counters).
        // An empty per-node shard is walked without reading a tree line: on
        // a machine of 2 or more nodes (Miri's synthetic topology is one)
        // the residents sit on the inserting thread's node only.
        assert!(walk.iter().any(|e| e.lines_read >= 1), "{d}: {walk:?}");
        assert!(events.iter().all(|e| e.hold_ns > 0));
        // Not recording any more: nothing is collected.
        let none = rmap::trace::record(|| ());
        assert!(none.is_empty());
        m.remove_batch(&resident).unwrap();
    }
}

#[test]
fn recorder_is_per_thread_and_nests() {
    let m = Design::Linux.build(&Topology::Os);
    let outer = rmap::trace::record(|| {
        m.insert(iv(0, 1), 1).unwrap();
        let inner = rmap::trace::record(|| {
            m.insert(iv(0, 1), 2).unwrap();
        });
        assert_eq!(inner.len(), 1);
        std::thread::scope(|s| {
            s.spawn(|| m.insert(iv(0, 1), 3).unwrap());
        });
        m.insert(iv(0, 1), 4).unwrap();
    });
    assert_eq!(outer.len(), 2, "{outer:?}");
    assert_eq!(m.len(), 4);
}

#[test]
fn aspace_central_never_promotes() {
    let m = rmap::designs::aspace::Aspace::new_central(Topology::Os);
    m.promote();
    assert!(!m.is_promoted());
    assert_eq!(m.design(), Design::AspaceCentral);
    assert!(!Design::AspaceCentral.is_bound());
}

#[test]
fn exclude_is_a_bound_with_a_documented_subset() {
    assert!(Design::Exclude.is_bound());
    assert!(Design::ALL.iter().all(|d| !d.is_bound()));
    assert_eq!("exclude".parse::<Design>().unwrap(), Design::Exclude);
    assert_eq!(
        "aspace_central".parse::<Design>().unwrap(),
        Design::AspaceCentral
    );
    let m = Design::Exclude.build(&Topology::Os);
    let other = Design::Exclude.build(&Topology::Os);
    let h = m.insert(iv(0, 9), 1).unwrap();
    let c = m.insert_after(h, iv(0, 9), 2).unwrap();
    assert_ne!(h, c);
    let mut out = Vec::new();
    m.insert_batch(&[(iv(0, 1), 3), (iv(2, 3), 4)], &mut out)
        .unwrap();
    assert_eq!(out.len(), 2);
    assert_ne!(out[0], out[1]);
    // Bad input is still rejected.
    let inverted = Interval { first: 5, last: 1 };
    assert!(matches!(
        m.insert(inverted, 1),
        Err(RmapError::InvertedInterval { .. })
    ));
    let oh = other.insert(iv(0, 9), 1).unwrap();
    assert_eq!(m.remove(oh), Err(RmapError::ForeignHandle));
    assert_eq!(m.remove_batch(&[h, oh]), Err(RmapError::ForeignHandle));
    m.remove_batch(&[h, c]).unwrap();
    m.remove(out[0]).unwrap();
    // It cannot answer a walk, and says so.
    let mut n = 0;
    assert_eq!(
        m.try_walk(Interval::FULL, &mut |_, _| n += 1),
        Err(RmapError::NotTracked)
    );
    m.walk(Interval::FULL, &mut |_, _| n += 1);
    assert_eq!(n, 0);
    assert_eq!(m.len(), 0);
    assert_eq!(m.stats().acquisitions, 0);
    assert!(RmapError::NotTracked.to_string().contains("cannot answer"));
    // Every real design answers try_walk.
    for d in Design::ALL {
        let m = d.build(&Topology::Os);
        m.insert(iv(0, 9), 1).unwrap();
        let mut seen = 0;
        m.try_walk(Interval::FULL, &mut |_, _| seen += 1).unwrap();
        assert_eq!(seen, 1, "{d}");
    }
}

/// A batch is one hold that touches every entry it adds or removes: more
/// lines than one insert, in one event.
#[test]
fn recorded_batches_count_every_entry() {
    for d in Design::ALL {
        let m = d.build(&Topology::Os);
        for v in 0..200 {
            m.insert(iv(v % 7, v % 7 + 3), v).unwrap();
        }
        let one = rmap::trace::record(|| {
            m.insert(iv(50, 60), 1000).unwrap();
        });
        let items: Vec<(Interval, u64)> = (0..5).map(|k| (iv(50 + k, 60 + k), 2000 + k)).collect();
        let mut hs = Vec::new();
        let batch = rmap::trace::record(|| m.insert_batch(&items, &mut hs).unwrap());
        let gone = rmap::trace::record(|| m.remove_batch(&hs).unwrap());
        let modifier = |ev: &[rmap::trace::LockEvent]| {
            ev.iter()
                .filter(|e| e.write)
                .map(|e| e.lines_written)
                .max()
                .unwrap_or(0)
        };
        assert!(
            modifier(&batch) > modifier(&one),
            "{d}: batch {batch:?} vs one {one:?}"
        );
        assert!(modifier(&gone) > 2, "{d}: {gone:?}");
        assert_eq!(batch.iter().filter(|e| e.write).count(), 1, "{d}: one hold");
    }
}

/// The recorder counts every node a change writes: ascending inserts make
/// a red-black tree rotate, and a rotation writes nodes off the new entry's
/// path to the root (a sibling, a child that changes parent), which a trace
/// of the path alone would not see. Each written node is also reported by
/// identity, and the same node written by two holds has one identity.
#[test]
fn recorded_changes_include_rotations() {
    let m = Design::Linux.build(&Topology::Os);
    let (_, holds) = rmap::trace::record_lines(|| {
        let _s = rmap::stats::set_call_site(rmap::stats::CallSite::MmapLink);
        for v in 0..64 {
            m.insert(iv(v, v), v).unwrap();
        }
    });
    assert_eq!(holds.len(), 64);
    let written_nodes =
        |h: &rmap::trace::TracedHold| h.lines.iter().filter(|l| l.is_node() && l.written).count();
    // A rotation writes at least the entry, its parent and the grandparent.
    assert!(holds.iter().any(|h| written_nodes(h) >= 3));
    // Counts and identities agree; the lock word's line comes first.
    for h in &holds {
        let w = h.lines.iter().filter(|l| l.written).count() as u32;
        assert_eq!(w, h.event.lines_written);
        assert!(h.lines[0].written && !h.lines[0].is_node() && !h.lines[0].is_counter());
        assert!(h.lines.iter().any(|l| l.is_counter()));
    }
    // The root's node is on every later insert's path: one identity, read
    // by many holds.
    let mut seen = std::collections::HashMap::new();
    for h in &holds {
        for l in h.lines.iter().filter(|l| l.is_node()) {
            *seen.entry(l.line).or_insert(0) += 1;
        }
    }
    assert!(seen.values().any(|&n| n >= 32));
}
