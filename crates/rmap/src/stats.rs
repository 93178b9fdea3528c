//! Lock counters.
//!
//! Every design counts lock acquisitions and contended acquisitions (a
//! failed `try_lock` before blocking counts once). The counters of one lock
//! sit together on their own cache line ([`CachePadded`]) so that counting
//! never false-shares with the data the lock protects; sharded designs keep
//! one such line per shard, so counting adds no shared line to a modifier.

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicU64, AtomicUsize, Ordering, ReadGuard, RwLock, WriteGuard};

/// Counters of one lock, plus the entry count of what it protects (so that
/// `len()` never takes a lock).
#[derive(Debug, Default)]
pub(crate) struct LockCounters {
    acquisitions: AtomicU64,
    contended: AtomicU64,
    len: AtomicUsize,
}

/// [`LockCounters`] on a cache line of its own.
pub(crate) type PaddedCounters = CachePadded<LockCounters>;

impl LockCounters {
    pub(crate) fn new() -> Self {
        LockCounters {
            acquisitions: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            len: AtomicUsize::new(0),
        }
    }

    // Relaxed everywhere below: the counters are statistics; nothing is
    // published through them and readers accept any recent value. `len` is
    // only written while the lock it describes is held exclusively, so the
    // lock's own acquire/release orders it against the data it counts.

    #[inline]
    pub(crate) fn acquired(&self) {
        self.acquisitions.fetch_add(1, Ordering::Relaxed);
    }
    #[inline]
    pub(crate) fn contended(&self) {
        self.contended.fetch_add(1, Ordering::Relaxed);
    }
    #[inline]
    pub(crate) fn acquisitions(&self) -> u64 {
        self.acquisitions.load(Ordering::Relaxed)
    }
    #[inline]
    pub(crate) fn contended_count(&self) -> u64 {
        self.contended.load(Ordering::Relaxed)
    }
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }
    /// Call only with the counted lock held exclusively.
    #[inline]
    pub(crate) fn set_len(&self, n: usize) {
        self.len.store(n, Ordering::Relaxed);
    }

    /// Write-locks `lock`, counting the acquisition and a failed try first.
    #[inline]
    pub(crate) fn write<'a, T>(&self, lock: &'a RwLock<T>) -> WriteGuard<'a, T> {
        let g = match lock.try_write() {
            Some(g) => g,
            None => {
                self.contended();
                lock.write()
            }
        };
        self.acquired();
        g
    }

    /// Read-locks `lock`, counting the acquisition and a failed try first.
    #[inline]
    pub(crate) fn read<'a, T>(&self, lock: &'a RwLock<T>) -> ReadGuard<'a, T> {
        let g = match lock.try_read() {
            Some(g) => g,
            None => {
                self.contended();
                lock.read()
            }
        };
        self.acquired();
        g
    }
}

/// Lock counters of one map, summed over its locks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockStats {
    /// Lock acquisitions (shared or exclusive).
    pub acquisitions: u64,
    /// Acquisitions that found the lock taken (a failed try before blocking).
    pub contended: u64,
    /// Shards (independently locked parts) the map has now.
    pub shards: u32,
}

impl LockStats {
    pub(crate) fn add(&mut self, c: &LockCounters) {
        self.acquisitions += c.acquisitions();
        self.contended += c.contended_count();
    }
}
