//! Synchronisation primitives, swapped for loom's under `cfg(loom)` so that
//! the loom models in `tests/loom.rs` exercise the real lock and publication
//! protocols of the designs (the crossbeam approach).
//!
//! [`RwLock`] presents one API over the lab's locks (normal builds) and
//! `loom::sync::RwLock` (model checking): no poisoning, `try_*` return
//! `Option`. Which lock a normal build's [`RwLock`] is, is chosen when the
//! lock is made ([`crate::set_lock_impl`]): `parking_lot`'s (the default),
//! or [`rwsem::RawRwsem`], which waits as Linux's `rw_semaphore` does.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

#[cfg(not(loom))]
pub(crate) mod rwsem;

#[cfg(not(loom))]
mod imp {
    use super::rwsem::RawRwsem;
    use crate::LockImpl;
    use parking_lot::lock_api::{self, GuardSend, RawRwLock};
    use std::sync::atomic::{AtomicU8, Ordering};

    /// [`crate::set_lock_impl`]'s choice, for locks made from now on.
    static IMPL: AtomicU8 = AtomicU8::new(0);

    pub(crate) fn set_lock_impl(l: LockImpl) -> LockImpl {
        // Relaxed: a setting read when a lock is made; a lock made by
        // another thread at the same moment may get either (both are
        // correct locks).
        from_u8(IMPL.swap(l as u8, Ordering::Relaxed))
    }

    pub(crate) fn lock_impl() -> LockImpl {
        // Relaxed: see `set_lock_impl`.
        from_u8(IMPL.load(Ordering::Relaxed))
    }

    fn from_u8(v: u8) -> LockImpl {
        if v == LockImpl::Rwsem as u8 {
            LockImpl::Rwsem
        } else {
            LockImpl::ParkingLot
        }
    }

    /// The raw lock: parking_lot's, or the rwsem-like one.
    pub(crate) enum RawLock {
        Parking(parking_lot::RawRwLock),
        Rwsem(RawRwsem),
    }

    impl RawLock {
        fn current() -> RawLock {
            match lock_impl() {
                LockImpl::ParkingLot => RawLock::Parking(parking_lot::RawRwLock::INIT),
                LockImpl::Rwsem => RawLock::Rwsem(RawRwsem::new()),
            }
        }
    }

    // SAFETY: every method forwards to the one raw lock the value holds,
    // which never changes after construction.
    unsafe impl RawRwLock for RawLock {
        #[allow(clippy::declare_interior_mutable_const)]
        const INIT: RawLock = RawLock::Parking(parking_lot::RawRwLock::INIT);
        type GuardMarker = GuardSend;

        #[inline]
        fn lock_shared(&self) {
            match self {
                RawLock::Parking(l) => l.lock_shared(),
                RawLock::Rwsem(l) => l.lock_shared(),
            }
        }
        #[inline]
        fn try_lock_shared(&self) -> bool {
            match self {
                RawLock::Parking(l) => l.try_lock_shared(),
                RawLock::Rwsem(l) => l.try_lock_shared(),
            }
        }
        #[inline]
        unsafe fn unlock_shared(&self) {
            // SAFETY: the caller holds a shared lock of this raw lock.
            unsafe {
                match self {
                    RawLock::Parking(l) => l.unlock_shared(),
                    RawLock::Rwsem(l) => l.unlock_shared(),
                }
            }
        }
        #[inline]
        fn lock_exclusive(&self) {
            match self {
                RawLock::Parking(l) => l.lock_exclusive(),
                RawLock::Rwsem(l) => l.lock_exclusive(),
            }
        }
        #[inline]
        fn try_lock_exclusive(&self) -> bool {
            match self {
                RawLock::Parking(l) => l.try_lock_exclusive(),
                RawLock::Rwsem(l) => l.try_lock_exclusive(),
            }
        }
        #[inline]
        unsafe fn unlock_exclusive(&self) {
            // SAFETY: the caller holds this raw lock exclusively.
            unsafe {
                match self {
                    RawLock::Parking(l) => l.unlock_exclusive(),
                    RawLock::Rwsem(l) => l.unlock_exclusive(),
                }
            }
        }
        fn is_locked(&self) -> bool {
            match self {
                RawLock::Parking(l) => l.is_locked(),
                RawLock::Rwsem(l) => l.is_locked(),
            }
        }
    }

    pub(crate) type ReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawLock, T>;
    pub(crate) type WriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawLock, T>;

    /// A reader-writer lock: parking_lot's (one word, adaptive spinning,
    /// then parking) or the rwsem-like one ([`super::rwsem`]), as chosen
    /// by [`crate::set_lock_impl`] when it was made.
    pub(crate) struct RwLock<T>(lock_api::RwLock<RawLock, T>);

    impl<T> RwLock<T> {
        pub(crate) fn new(t: T) -> Self {
            RwLock(lock_api::RwLock::from_raw(RawLock::current(), t))
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

    impl<T: Default> Default for RwLock<T> {
        fn default() -> Self {
            RwLock::new(T::default())
        }
    }

    impl<T: std::fmt::Debug> std::fmt::Debug for RwLock<T> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            self.0.fmt(f)
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

#[cfg(not(loom))]
pub(crate) use imp::{lock_impl, set_lock_impl};

/// Under loom every lock is loom's: the choice is recorded and ignored.
#[cfg(loom)]
pub(crate) fn set_lock_impl(l: crate::LockImpl) -> crate::LockImpl {
    let _ = l;
    crate::LockImpl::ParkingLot
}

/// Under loom every lock is loom's.
#[cfg(loom)]
pub(crate) fn lock_impl() -> crate::LockImpl {
    crate::LockImpl::ParkingLot
}
