//! The cache-line model: every line the profile names remembers the CPU
//! that wrote it last and which CPUs hold a shared copy, and moves between
//! CPUs one transfer at a time.
//!
//! * A **write** by CPU `c` is free when `c` wrote the line last and nobody
//!   else holds a copy; otherwise it costs the machine's transfer latency
//!   from the farthest of the last writer and one other sharer (their
//!   invalidations go out in parallel), and leaves `c` the only owner.
//! * A **read** is free when `c` wrote the line last, holds a copy, or the
//!   line was never written; otherwise it costs the transfer from the last
//!   writer, and `c` keeps a shared copy until the next write.
//! * **One transfer at a time.** A line that must leave a modified copy
//!   (every write that is not free, and the first read after a write) is
//!   busy for the transfer: the next such access starts when the previous
//!   one has finished. This is what limits a line that many CPUs update
//!   (a reference count, a lock word that arrivals hammer with failed
//!   `cmpxchg`es): it moves at most `1 / latency` times a second, and every
//!   CPU that wants it waits its turn. Reads of a line already shared do
//!   not queue (the copy comes from the shared cache).
//!
//! Accesses of one CPU are charged one after another (a tree walk's loads
//! depend on each other; a critical section's stores are ordered by the
//! lock's release), which is an upper bound on what a core's memory-level
//! parallelism would overlap.
//!
//! **Overlap** (`SimConfig::overlap`, with a description that has the
//! calibrated factors `line_overlap` / `rmw_overlap`): which lines are
//! independent is decided from what the recorder keeps of a hold, its
//! lines read only, its lines written (a line both read and written is
//! recorded as written) and, of those, the ones it loaded before it wrote
//! them (`Hold::loaded_first`: `rmap::trace` sees each line's first touch):
//! * the lines a hold **only reads**, and the written lines it **loaded
//!   first** (a node on its path that the change then wrote), are its walk
//!   from the root, each node's address loaded from the node before: a
//!   dependent chain, charged one after another as above, first (a loaded
//!   written line is taken for writing at its load: one transfer);
//! * the **other written lines** (the lab's lock counters, a lock word's
//!   line written as data, nodes the change wrote without loading them
//!   first: a new entry, a rotated sibling) have addresses the hold
//!   already holds when it stores to them, so their ownership requests go
//!   out together: each is requested at once (queueing behind its line's
//!   current transfer as above), the longest wait counts in full and every
//!   other at the calibrated factor of itself;
//! * a touch outside the locks charges each line by its access kind
//!   (`Touch`, s40): its **locked updates** (reference counts, struct
//!   pages, a spinlock's acquisition) overlap by `rmw_overlap` the same
//!   way where it was measured, and are otherwise serial: on x86 a
//!   `lock`-prefixed instruction waits for every load and store before it
//!   to complete (Intel SDM vol. 3A, "Bus locking" and "Strengthening or
//!   weakening the memory-ordering model"), which is the documented rule;
//!   a core may still fetch the next line early (this host's AMD EPYC
//!   measured `rmw_overlap` 0.016), which only a calibration on the
//!   machine itself can say. Its **plain stores** (a list's links under a
//!   lock already held) retire into the store buffer and their ownership
//!   requests go out together: they overlap by `line_overlap` where
//!   measured (the calibration's stores are such a run), else by the
//!   core's documented fill buffers (`Machine::miss_slots`, a factor of
//!   1 / slots), else serially. Its **loads** stay serial.
//!
//! A profile recorded before s37 does not say which written lines were
//! loaded first (`Profile::loads_recorded` false): every written line
//! overlaps, a lower bound on its holds' transfers where the serial charge
//! is an upper bound. The factors are measured on one machine's idle pair
//! of CPUs with nothing else in flight (see `aspace calibrate`).

use super::NONE;

/// Line states, flat arrays indexed by line.
pub(super) struct Lines {
    last_writer: Vec<u32>,
    nsharers: Vec<u32>,
    /// Shared-copy bits: line `l`'s are `sharers[l * words..(l + 1) * words]`.
    sharers: Vec<u64>,
    words: usize,
    /// When the line's current transfer ends.
    busy_until: Vec<f64>,
}

impl Lines {
    pub(super) fn new(lines: usize, cpus: usize) -> Lines {
        let words = cpus.div_ceil(64).max(1);
        Lines {
            last_writer: vec![NONE; lines],
            nsharers: vec![0; lines],
            sharers: vec![0; lines * words],
            words,
            busy_until: vec![0.0; lines],
        }
    }

    /// The first CPU other than `c` holding a shared copy of `l`.
    fn other_sharer(&self, l: usize, c: u32) -> u32 {
        let w = (c / 64) as usize;
        let own = 1u64 << (c % 64);
        let base = l * self.words;
        for (i, &bits) in self.sharers[base..base + self.words].iter().enumerate() {
            let bits = if i == w { bits & !own } else { bits };
            if bits != 0 {
                return i as u32 * 64 + bits.trailing_zeros();
            }
        }
        NONE
    }

    /// CPU `c` accesses line `l` at `t`; returns when the access completes.
    /// `lat(a, b)` is the transfer latency between CPUs `a` and `b`.
    pub(super) fn access(
        &mut self,
        c: u32,
        l: u32,
        write: bool,
        t: f64,
        lat: &impl Fn(u32, u32) -> f64,
    ) -> f64 {
        let li = l as usize;
        let last = self.last_writer[li];
        if write {
            let mut cost = if last != c && last != NONE {
                lat(last, c)
            } else {
                0.0
            };
            if self.nsharers[li] > 0 {
                let other = self.other_sharer(li, c);
                if other != NONE {
                    cost = cost.max(lat(other, c));
                }
                let base = li * self.words;
                self.sharers[base..base + self.words].fill(0);
                self.nsharers[li] = 0;
            }
            self.last_writer[li] = c;
            if cost <= 0.0 {
                return t;
            }
            let start = t.max(self.busy_until[li]);
            let done = start + cost;
            self.busy_until[li] = done;
            done
        } else {
            if last == c || last == NONE {
                return t;
            }
            let i = li * self.words + (c / 64) as usize;
            let bit = 1u64 << (c % 64);
            if self.sharers[i] & bit != 0 {
                return t;
            }
            let first_copy = self.nsharers[li] == 0;
            self.sharers[i] |= bit;
            self.nsharers[li] += 1;
            let cost = lat(last, c);
            if first_copy {
                let start = t.max(self.busy_until[li]);
                let done = start + cost;
                self.busy_until[li] = done;
                done
            } else {
                t + cost
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_moves_one_transfer_at_a_time() {
        let lat = |_: u32, _: u32| 100.0;
        let mut l = Lines::new(2, 8);
        // Never written: free to read and to take.
        assert_eq!(l.access(0, 0, false, 0.0, &lat), 0.0);
        assert_eq!(l.access(0, 0, true, 0.0, &lat), 0.0);
        assert_eq!(l.access(0, 0, true, 5.0, &lat), 5.0, "own line: free");
        // Three CPUs want it at once: each waits for the one before.
        let a = l.access(1, 0, true, 10.0, &lat);
        let b = l.access(2, 0, true, 10.0, &lat);
        let c = l.access(3, 0, true, 10.0, &lat);
        assert_eq!((a, b, c), (110.0, 210.0, 310.0));
        // Readers: the first copy queues, later ones do not.
        let r1 = l.access(4, 0, false, 400.0, &lat);
        let r2 = l.access(5, 0, false, 400.0, &lat);
        assert_eq!((r1, r2), (500.0, 500.0));
        assert_eq!(l.access(4, 0, false, 600.0, &lat), 600.0, "a kept copy");
        // The next write invalidates the copies: one transfer.
        assert_eq!(l.access(3, 0, true, 700.0, &lat), 800.0);
        // An untouched line is unaffected.
        assert_eq!(l.access(6, 1, true, 0.0, &lat), 0.0);
    }
}
