//! The quiet path of the lock accounting: until some thread declares a call
//! site, records or times, operations skip the thread-local context byte;
//! the per-site counts must be exactly what they would be otherwise.
//!
//! One test function on purpose: the probe switches are process-wide, and
//! this binary's tests would otherwise race on them.

use rmap::stats::{set_call_site, set_hold_timing, CallSite};
use rmap::{Design, Interval, ReverseMap, Topology};

fn iv(a: u64, b: u64) -> Interval {
    Interval::new(a, b).unwrap()
}

/// Holds per site of `m`, as a vector in `CallSite::ALL` order.
fn holds(m: &dyn ReverseMap) -> Vec<u64> {
    m.stats().per_site.iter().map(|s| s.holds).collect()
}

fn only(site: CallSite, n: u64) -> Vec<u64> {
    let mut v = vec![0; CallSite::COUNT];
    v[site.index()] = n;
    v
}

#[test]
fn quiet_path_then_sites_then_timing_then_recording() {
    let maps: Vec<Box<dyn ReverseMap>> =
        Design::ALL.iter().map(|d| d.build(&Topology::Os)).collect();
    // `sharded` takes its outer lock too: two holds per modifier.
    let per = |m: &dyn ReverseMap| if m.design() == Design::Sharded { 2 } else { 1 };

    // 1. Nothing switched on yet in this process: every hold is `Other`.
    for m in &maps {
        let h = m.insert(iv(0, 9), 1).unwrap();
        m.remove(h).unwrap();
        let p = per(&**m);
        assert_eq!(holds(&**m), only(CallSite::Other, 2 * p), "{}", m.design());
        assert_eq!(m.stats().per_site.iter().map(|s| s.hold_ns).sum::<u64>(), 0);
    }

    // 2. A site declared on this thread: its holds go there, at once; after
    // the guard, `Other` again; another thread that declared nothing still
    // counts `Other` (its context byte is read now, and says so).
    for m in &maps {
        let p = per(&**m);
        let h = {
            let _s = set_call_site(CallSite::MmapLink);
            m.insert(iv(0, 9), 2).unwrap()
        };
        let mut want = only(CallSite::Other, 2 * p);
        want[CallSite::MmapLink.index()] = p;
        assert_eq!(holds(&**m), want, "{}", m.design());
        std::thread::scope(|s| {
            s.spawn(|| m.remove(h).unwrap());
        });
        want[CallSite::Other.index()] += p;
        assert_eq!(holds(&**m), want, "{}", m.design());
        let h = {
            let _s = set_call_site(CallSite::ExitUnlink);
            let h = m.insert(iv(0, 9), 3).unwrap();
            m.remove_batch(&[h]).unwrap();
            h
        };
        want[CallSite::ExitUnlink.index()] += 2 * p;
        assert_eq!(holds(&**m), want, "{}", m.design());
        assert!(m.remove(h).is_err());
    }

    // 3. Timing on: hold time is measured, per site, and stops again.
    let was = set_hold_timing(true);
    assert!(!was);
    for m in &maps {
        let before = m.stats().site(CallSite::Split);
        {
            let _s = set_call_site(CallSite::Split);
            for v in 0..100 {
                let h = m.insert(iv(v, v + 9), v).unwrap();
                m.remove(h).unwrap();
            }
        }
        let after = m.stats().site(CallSite::Split);
        assert_eq!(
            after.holds - before.holds,
            200 * per(&**m),
            "{}",
            m.design()
        );
        assert!(after.hold_ns > before.hold_ns, "{}", m.design());
    }
    assert!(set_hold_timing(false));
    for m in &maps {
        let before = m.stats().site(CallSite::Split).hold_ns;
        let _s = set_call_site(CallSite::Split);
        let h = m.insert(iv(0, 9), 4).unwrap();
        m.remove(h).unwrap();
        assert_eq!(m.stats().site(CallSite::Split).hold_ns, before);
    }

    // 4. Recording: one event per hold, with its site.
    for m in &maps {
        let events = rmap::trace::record(|| {
            let _s = set_call_site(CallSite::ForkInsertAfter);
            let h = m.insert(iv(0, 9), 5).unwrap();
            m.remove(h).unwrap();
        });
        assert_eq!(events.len() as u64, 2 * per(&**m), "{}", m.design());
        assert!(events.iter().all(|e| e.site == CallSite::ForkInsertAfter));
    }
}
