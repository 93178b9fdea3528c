//! The `serde` feature: random trees round-trip through JSON unchanged, and
//! malformed input (inverted or overlapping ranges) is an error.
#![cfg(feature = "serde")]

use aspace_maple::MapleTree;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 2 } else { 128 }, ..ProptestConfig::default() })]

    #[test]
    fn round_trip(pairs in prop::collection::vec(((0u64..1000, 0u64..50), any::<i32>()), 0..40),
                  top in any::<bool>()) {
        let mut tree: MapleTree<i32> =
            pairs.iter().map(|&((a, l), v)| (a..=a + l, v)).collect();
        if top {
            tree.extend([(u64::MAX - 3..=u64::MAX, -1)]);
        }
        let json = serde_json::to_string(&tree).unwrap();
        let back: MapleTree<i32> = serde_json::from_str(&json).unwrap();
        prop_assert!(back == tree);
        let entries: Vec<_> = back.reader().iter().map(|(r, v)| (r, *v)).collect();
        let want: Vec<_> = tree.reader().iter().map(|(r, v)| (r, *v)).collect();
        prop_assert_eq!(entries, want);
    }
}

#[test]
fn malformed_input_is_an_error() {
    for bad in [
        "[[5,4,1]]",
        "[[0,9,1],[9,9,2]]",
        "[[0,9,1],[1,2]]",
        "{}",
        "[[0,18446744073709551616,1]]",
    ] {
        assert!(serde_json::from_str::<MapleTree<u8>>(bad).is_err(), "{bad}");
    }
    let ok: MapleTree<u8> = serde_json::from_str("[]").unwrap();
    assert!(ok.is_empty());
}
