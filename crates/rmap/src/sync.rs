//! Synchronisation primitives, swapped for loom's under `cfg(loom)` so that
//! the loom models in `tests/loom.rs` exercise the real lock and publication
//! protocols of the designs (the crossbeam approach).
//!
//! [`RwLock`] presents one API over `parking_lot::RwLock` (normal builds) and
//! `loom::sync::RwLock` (model checking): no poisoning, `try_*` return
//! `Option`.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

#[cfg(not(loom))]
mod imp {
    pub(crate) type ReadGuard<'a, T> = parking_lot::RwLockReadGuard<'a, T>;
    pub(crate) type WriteGuard<'a, T> = parking_lot::RwLockWriteGuard<'a, T>;

    /// A reader-writer lock (parking_lot: one word, adaptive spinning).
    #[derive(Debug, Default)]
    pub(crate) struct RwLock<T>(parking_lot::RwLock<T>);

    impl<T> RwLock<T> {
        pub(crate) fn new(t: T) -> Self {
            RwLock(parking_lot::RwLock::new(t))
        }
        #[inline]
        pub(crate) fn read(&self) -> ReadGuard<'_, T> {
            self.0.read()
        }
        #[inline]
        pub(crate) fn write(&self) -> WriteGuard<'_, T> {
            self.0.write()
        }
        #[inline]
        pub(crate) fn try_read(&self) -> Option<ReadGuard<'_, T>> {
            self.0.try_read()
        }
        #[inline]
        pub(crate) fn try_write(&self) -> Option<WriteGuard<'_, T>> {
            self.0.try_write()
        }
    }
}

#[cfg(loom)]
mod imp {
    pub(crate) type ReadGuard<'a, T> = loom::sync::RwLockReadGuard<'a, T>;
    pub(crate) type WriteGuard<'a, T> = loom::sync::RwLockWriteGuard<'a, T>;

    /// A reader-writer lock (loom's model).
    #[derive(Debug)]
    pub(crate) struct RwLock<T>(loom::sync::RwLock<T>);

    impl<T: Default> Default for RwLock<T> {
        fn default() -> Self {
            RwLock::new(T::default())
        }
    }

    impl<T> RwLock<T> {
        pub(crate) fn new(t: T) -> Self {
            RwLock(loom::sync::RwLock::new(t))
        }
        pub(crate) fn read(&self) -> ReadGuard<'_, T> {
            self.0.read().unwrap()
        }
        pub(crate) fn write(&self) -> WriteGuard<'_, T> {
            self.0.write().unwrap()
        }
        pub(crate) fn try_read(&self) -> Option<ReadGuard<'_, T>> {
            self.0.try_read().ok()
        }
        pub(crate) fn try_write(&self) -> Option<WriteGuard<'_, T>> {
            self.0.try_write().ok()
        }
    }
}

pub(crate) use imp::{ReadGuard, RwLock, WriteGuard};
