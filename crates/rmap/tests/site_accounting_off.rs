//! Without site accounting (its own test binary, so no other test turns it
//! on meanwhile), every hold counts under `CallSite::Other`; totals are
//! always counted; a guard turns the split on and off again.

use rmap::stats::{account_call_sites, call_sites_accounted, set_call_site, CallSite};
use rmap::{Design, Interval, Topology};

#[test]
fn holds_go_to_other_unless_accounting_is_on() {
    let m = Design::Aspace.build(&Topology::Os);
    let iv = Interval::new(1, 9).unwrap();
    assert!(!call_sites_accounted());
    {
        let _s = set_call_site(CallSite::MmapLink);
        m.insert(iv, 1).unwrap();
    }
    let st = m.stats();
    assert_eq!(st.acquisitions, 1);
    assert_eq!(st.site(CallSite::Other).holds, 1);
    assert_eq!(st.site(CallSite::MmapLink).holds, 0);
    {
        let _acct = account_call_sites();
        let _nested = account_call_sites();
        let _s = set_call_site(CallSite::MmapLink);
        m.insert(iv, 2).unwrap();
    }
    assert!(!call_sites_accounted());
    let st = m.stats();
    assert_eq!(st.site(CallSite::MmapLink).holds, 1);
    // Recording and timing turn it on while they last.
    let ev = rmap::trace::record(|| {
        let _s = set_call_site(CallSite::Split);
        m.insert(iv, 3).unwrap();
    });
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].site, CallSite::Split);
    assert!(!call_sites_accounted());
    rmap::stats::set_hold_timing(true);
    assert!(call_sites_accounted());
    rmap::stats::set_hold_timing(true);
    rmap::stats::set_hold_timing(false);
    assert!(!call_sites_accounted());
    assert_eq!(m.stats().acquisitions, 3);
    assert_eq!(m.stats().site(CallSite::Split).holds, 1);
}
