//! The model tests of `tests/model.rs`, run for a tree whose values live in
//! the slot word itself: `MapleTree<ArcU, Inline>`, where `ArcU` is an
//! `Arc<u64>` behind an implementation of `InlineValue` written here (as a
//! user of the crate would write one) that delegates to `Arc`'s and lends
//! readers a `&u64`. Every write, split (a clone: a reference count), drop,
//! exact fit, `dup` and removal of the model sequences goes through the
//! inline path; `tests/inline.rs` checks the reference counts.

use std::ptr::NonNull;
use std::sync::Arc;

use aspace_maple::InlineValue;

#[path = "model.rs"]
mod model;

/// What `model.rs` runs against here.
mod kind {
    pub type S = aspace_maple::Inline;
    pub type V = super::ArcU;
    pub type Tree = aspace_maple::MapleTree<V, S>;
    pub fn mk(v: u64) -> V {
        super::ArcU(std::sync::Arc::new(v))
    }
    pub fn get(v: &V) -> u64 {
        *v.0
    }
}

/// An `Arc<u64>` stored inline, lending `&u64` to readers.
#[derive(Clone, Debug, PartialEq)]
pub struct ArcU(pub Arc<u64>);

// SAFETY: every method delegates to `Arc<u64>`'s implementation, which
// upholds the contract; the borrow is a shared reference to the Arc's
// value, alive while the Arc is (the word is `Arc::into_raw`, a pointer to
// the u64), built from the word, never from the slot.
unsafe impl InlineValue for ArcU {
    type Borrowed<'a> = &'a u64;

    fn into_word(self) -> NonNull<()> {
        self.0.into_word()
    }

    unsafe fn from_word(word: NonNull<()>) -> Self {
        // SAFETY: forwarded.
        ArcU(unsafe { Arc::from_word(word) })
    }

    unsafe fn borrow<'a>(word: NonNull<()>) -> &'a u64 {
        // SAFETY: the word points to the Arc's u64, alive for 'a (caller).
        unsafe { &*word.as_ptr().cast::<u64>() }
    }

    unsafe fn clone_word(word: NonNull<()>) -> NonNull<()> {
        // SAFETY: forwarded.
        unsafe { <Arc<u64> as InlineValue>::clone_word(word) }
    }
}
