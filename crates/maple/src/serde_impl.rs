//! The optional `serde` feature: a tree serializes as a sequence of
//! `(first, last, value)` triples in increasing order, and deserializes from
//! one, refusing (with an error, never a panic) a range with `first > last`
//! and ranges that overlap.
//!
//! ```
//! # #[cfg(feature = "serde")] {
//! let tree: aspace_maple::MapleTree<String> =
//!     [(0..=9, "a".to_string()), (20..=29, "b".to_string())].into_iter().collect();
//! let json = serde_json::to_string(&tree).unwrap();
//! assert_eq!(json, r#"[[0,9,"a"],[20,29,"b"]]"#);
//! let back: aspace_maple::MapleTree<String> = serde_json::from_str(&json).unwrap();
//! assert_eq!(back, tree);
//! assert!(serde_json::from_str::<aspace_maple::MapleTree<u8>>("[[0,9,1],[5,6,2]]").is_err());
//! # }
//! ```

use std::fmt;
use std::marker::PhantomData;

use serde::de::{Error as _, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::value::Repr;
use crate::{MapleTree, Ref};

/// A value as the tree lends it: serialized as the value itself.
impl<'a, T: 'a, S: Repr<T>> Serialize for Ref<'a, T, S>
where
    <S::Ref<'a> as std::ops::Deref>::Target: Serialize,
{
    fn serialize<Z: Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        (**self).serialize(serializer)
    }
}

impl<T: Serialize> Serialize for MapleTree<T> {
    /// Serializes the entries a [`Reader`](crate::Reader) sees, in order.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let reader = self.reader();
        serializer.collect_seq(reader.iter().map(|(r, v)| (*r.start(), *r.end(), v)))
    }
}

impl<'de, T> Deserialize<'de> for MapleTree<T>
where
    T: Deserialize<'de> + Send + Sync + 'static,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Triples<T>(PhantomData<T>);
        impl<'de, T> Visitor<'de> for Triples<T>
        where
            T: Deserialize<'de> + Send + Sync + 'static,
        {
            type Value = MapleTree<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence of non-overlapping (first, last, value) triples")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut tree = MapleTree::new();
                {
                    let mut c = tree.cursor_mut();
                    while let Some((first, last, value)) = seq.next_element::<(u64, u64, T)>()? {
                        c.insert_range(first, last, value)
                            .map_err(|e| A::Error::custom(e.kind))?;
                    }
                }
                Ok(tree)
            }
        }
        deserializer.deserialize_seq(Triples(PhantomData))
    }
}
