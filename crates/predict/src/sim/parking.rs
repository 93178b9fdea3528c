//! `parking_lot::RwLock` (0.12), the lab's own lock, as the simulator runs
//! it: what `aspace bench` measures when it runs the model on many CPUs.
//! Checked rule by rule against parking_lot 0.12.5's `raw_rwlock.rs`
//! (`lock_common`, `unlock_exclusive_slow`, `wake_parked_threads`) and
//! parking_lot_core 0.9.12 (`park`, `unpark_filter`, `SpinWait`,
//! `FairTimeout`, `WordLock`, the Linux futex `ThreadParker`) in session
//! s37; what differs is said below.
//!
//! * **The parked bit** (`PARKED_BIT`, [`super::LockSt::parked_bit`]): set
//!   on the lock word by a thread that is about to park, before it takes
//!   the bucket; left set when its `park` finds the lock free
//!   (`validate` fails, `Invalid`); cleared only by a writer's slow
//!   unlock whose callback finds nobody left in the queue. (Before s37
//!   the simulator read "someone is in the queue" instead.)
//! * **Attempt.** A `cmpxchg` on the lock word takes a lock that no writer
//!   holds (a writer also needs no reader), even past the parked bit:
//!   newcomers barge (`lock_common`'s `try_lock`). A failed attempt takes
//!   the line too (the real one loads it and tries the `cmpxchg` only
//!   when the writer bit is clear; either way the holder's next write
//!   pays a transfer). The bench first calls `try_write`, a `cmpxchg`
//!   from 0, which fails on the parked bit even when the lock is free:
//!   such an acquisition is counted as contended, as the bench counts it
//!   (its lock is still taken at once).
//! * **Spin** (`SpinWait`), only while the parked bit is clear: after
//!   failure `k = 1, 2, 3` it spins `2^k` pauses ([`crate::Machine::pause`]),
//!   after `k = 4..=10` it calls `sched_yield` ([`crate::Machine::yield_cost`]),
//!   and tries again.
//! * **Park.** After ten failures, or at once when the parked bit is set:
//!   the bit is set, the parking bucket's lock taken (a line of its own,
//!   and a lock: one parker or unparker at a time; its `WordLock` waiter
//!   re-reads it at its own `SpinWait` steps and takes it at the first
//!   read that finds it free, and after ten steps sleeps until the
//!   holder wakes it, `wake_ns`; before s37 it got the bucket the
//!   instant it was free), `validate`
//!   checked (a load of the lock word, whose line it copies since s38;
//!   the bit still set and the lock still held; otherwise the thread
//!   tries again), then the thread's own `ThreadData` written and
//!   linked behind the queue's tail (the tail's `ThreadData` line:
//!   `parking_lot_core`'s `park`), and it sleeps on a futex (its entry
//!   costs a system call, taken as one `sched_yield`). A woken thread that
//!   loses parks again at the back of the queue, without spinning while
//!   the bit is set (`lock_common` resets its `SpinWait` but tests the
//!   bit first).
//! * **Unlock.** A writer's `cmpxchg` from the writer bit alone succeeds
//!   only without the parked bit. With it (even over an empty queue) the
//!   unlocker takes the bucket's lock and unparks, in queue order, the
//!   readers up to and including the first writer. A writer's unlock keeps
//!   the lock (writer bit set) until `unpark_filter`'s callback stores the
//!   new state, that is through the bucket, the queue's head and the
//!   thread after it (the filter stops there) and the lock word: each a
//!   transfer when another CPU wrote it last. The callback keeps the
//!   parked bit only when threads are left. Then it writes each wakee's
//!   unpark token (its `ThreadData` line), unlocks the bucket and makes
//!   the futex wake system call, whose cost to the unlocker is the
//!   hand-off measured under load where the machine has it
//!   ([`crate::Machine::unlock_wake`]), else the idle `futex_wake`; each
//!   wakee runs `wake_ns` later and first reads its token (its
//!   `ThreadData` line, which the unlocker wrote). The fair-timeout clock
//!   read (`FairTimeout::should_timeout`: `Instant::now`, a vDSO call,
//!   once per unlock that unparks a thread, after the queue walk and
//!   before the callback's store, so inside the held time of a writer's
//!   unlock) costs [`crate::Machine::clock_read_ns`] where the machine
//!   has it (session s38; nothing before, and nothing on a machine
//!   without the item). Not modelled: when the bucket's `WordLock` has a
//!   sleeper, its unlocker's wake system call. Normally the lock is released and the wakee
//!   must win it again; but when the lock's fair time has come
//!   (parking_lot's `FairTimeout`: a random 0-1 ms after the last fair
//!   unlock) the lock is handed to the wakees and stays held while they
//!   wake.
//! * **Readers.** The real `unlock_shared` wakes only a writer that holds
//!   the writer bit and waits for readers (`WRITER_PARKED_BIT`, a second
//!   queue); here the last reader's unlock wakes the main queue as a
//!   writer's does, and a writer takes the lock only when no reader holds
//!   it (the lab's holds are writes).

use super::{CpuState, Kind, Sim, NONE};

/// parking_lot's fair unlocks come a random time in `[0, 1 ms)` apart.
pub(super) const FAIR_TIMEOUT_MAX_NS: f64 = 1e6;

/// `SpinWait::spin` returns false after this many calls.
const SPIN_LIMIT: u32 = 10;

impl Sim<'_> {
    /// `SpinWait::spin`'s `k`-th step (`k` from 1): `2^k` pauses for the
    /// first three, then a `sched_yield`. The lock's spinners and the
    /// bucket's `WordLock` waiters both step by it.
    fn spin_wait_step(&self, k: u32) -> f64 {
        if k <= 3 {
            f64::from(1u32 << k) * self.pause_ns
        } else {
            self.yield_ns
        }
    }

    fn parking_free_for(&self, li: usize, write: bool) -> bool {
        let l = &self.locks[li];
        l.handoff == NONE && l.writer == NONE && (!write || l.readers == 0)
    }

    /// `c` tries its parking_lot lock at `t`.
    pub(super) fn parking_attempt(&mut self, c: u32, t: f64) {
        let h = self.cur_hold(c);
        let li = h.lock as usize;
        let line = self.locks[li].line;
        let mut t = t;
        if self.cpus[c as usize].state == CpuState::Waking {
            // Back from `futex_wait`: `park` returns the unpark token, which
            // the unlocker wrote into this thread's `ThreadData`.
            t = self.access(c, self.td_line[c as usize], false, t);
            if self.cpus[c as usize].handed {
                // A fair unlock handed the lock over while we slept.
                self.cpus[c as usize].handed = false;
                if self.locks[li].handoff == c {
                    self.locks[li].handoff = NONE;
                }
                let at = self.access(c, line, false, t);
                self.grant(c, at);
                return;
            }
            self.cpus[c as usize].spins = 0;
        }
        let at = self.access(c, line, true, t);
        self.lock_line_taken(li, at);
        let free = self.parking_free_for(li, h.write);
        // The bench's `try_write` (`try_lock_exclusive`: a `cmpxchg` from
        // 0) fails on a held lock and on the parked bit although the lock
        // is free (then `lock()` takes it past the sleepers): counted as
        // contended, as the bench counts it. A failed first try first adds
        // to the lab's `contended` counter (`rmap::stats`'s
        // `acquire_slow`), a line every failing thread writes, and only
        // then does `lock()` try again: meanwhile a free lock stays free.
        let fails = !free || (h.write && self.locks[li].parked_bit);
        if fails && !self.cpus[c as usize].contended {
            self.note_contended(c, t);
            let counter = self.locks[li].contended_line;
            if counter != NONE {
                let done = self.access(c, counter, true, at);
                if done > at {
                    self.cpus[c as usize].state = CpuState::Counting;
                    self.push(done, c, Kind::Attempt);
                    return;
                }
            }
        }
        if free {
            if !h.write {
                self.locks[li].readers += 1;
            }
            self.grant(c, at);
            return;
        }
        self.note_contended(c, t);
        let spins = self.cpus[c as usize].spins;
        if !self.locks[li].parked_bit && spins < SPIN_LIMIT {
            if self.cpus[c as usize].state != CpuState::Spinning {
                self.cpus[c as usize].state = CpuState::Spinning;
                self.locks[li].pollers += 1;
                self.locks[li].last_poller = c;
            }
            let k = spins + 1;
            self.cpus[c as usize].spins = k;
            self.push(at + self.spin_wait_step(k), c, Kind::Attempt);
            return;
        }
        // Park: the parked bit (on the word, taken above: from now on
        // newcomers skip spinning and unlocks take the slow path), the
        // bucket; under it (parking_lot_core's `park`) `validate`, then the
        // thread writes its own `ThreadData` (key, token, queue link) and
        // links it behind the queue's tail (the tail's `next_in_queue`);
        // then the futex system call.
        self.locks[li].parked_bit = true;
        let mut parked_at = self.lock_bucket(c, li, at);
        // `validate` (`lock_common`'s closure) loads the lock word under the
        // bucket's lock: a copy of its line, which a holder that wrote the
        // line since must invalidate again.
        parked_at = self.access(c, line, false, parked_at);
        self.lock_line_taken(li, parked_at);
        if self.parking_free_for(li, h.write) {
            // `validate` failed: the lock is free. `park` returns `Invalid`
            // and leaves the parked bit set; try again.
            self.locks[li].bucket_free_at = parked_at;
            self.cpus[c as usize].spins = 0;
            if self.cpus[c as usize].state != CpuState::Spinning {
                self.cpus[c as usize].state = CpuState::Spinning;
                self.locks[li].pollers += 1;
                self.locks[li].last_poller = c;
            }
            self.push(parked_at, c, Kind::Attempt);
            return;
        }
        parked_at = self.access(c, self.td_line[c as usize], true, parked_at);
        if let Some(&tail) = self.locks[li].waitq.back() {
            parked_at = self.access(c, self.td_line[tail as usize], true, parked_at);
        }
        self.locks[li].bucket_free_at = parked_at;
        parked_at += self.yield_ns;
        self.locks[li].waitq.push_back(c);
        self.sleep(c, parked_at);
    }

    /// `c` takes lock `li`'s parking bucket from `t`: once the bucket's own
    /// lock is free (one parker or unparker at a time) and `c` has its
    /// line; returns when it holds it. The caller sets `bucket_free_at`
    /// when it lets go.
    ///
    /// The bucket's lock is a `WordLock`: a thread that finds it taken
    /// re-reads it after each `SpinWait` step (2, 4, 8 pauses, then
    /// `sched_yield`s) and takes it at the first read that finds it free;
    /// after ten steps it sleeps on the `WordLock`'s own queue until the
    /// holder's unlock wakes it (a wake-up, `wake_ns`).
    fn lock_bucket(&mut self, c: u32, li: usize, t: f64) -> f64 {
        let free = self.locks[li].bucket_free_at;
        let mut from = t;
        if free > t {
            let mut k = 0;
            while from < free {
                if k == SPIN_LIMIT {
                    from = free + self.m.wake_ns;
                    break;
                }
                k += 1;
                from += self.spin_wait_step(k);
            }
        }
        self.access(c, self.locks[li].bucket_line, true, from)
    }

    /// `c` releases parking_lot lock `li` at `t`; returns when `c` may go
    /// on, or `None` when the release takes effect at a `Release` event
    /// pushed here.
    pub(super) fn parking_release(
        &mut self,
        c: u32,
        li: usize,
        write: bool,
        t: f64,
    ) -> Option<f64> {
        // The caller took the lock word's line for the unlock's atomic.
        let line = self.locks[li].line;
        if write && self.locks[li].parked_bit && !self.cpus[c as usize].unpark_walked {
            // `unlock_exclusive`'s `cmpxchg` (from the writer bit alone)
            // fails on the parked bit, even when the queue is empty (a
            // thread whose `park` found the lock free left the bit set);
            // the slow path (`unpark_filter`) takes the bucket and reads
            // the queue's first thread and the one after it (the filter
            // stops there: a writer was found) *before* its callback
            // stores the new state: the lock stays held, writer bit set,
            // until then.
            let mut at = self.lock_bucket(c, li, t);
            if let Some(&head) = self.locks[li].waitq.front() {
                at = self.access(c, self.td_line[head as usize], false, at);
            }
            if let Some(&next) = self.locks[li].waitq.get(1) {
                at = self.access(c, self.td_line[next as usize], false, at);
            }
            if !self.locks[li].waitq.is_empty() {
                // It unparks someone: `unpark_filter` reads the clock for
                // the fair timeout (`FairTimeout::should_timeout`,
                // `Instant::now`) before the callback stores the new state.
                at += self.clock_read_ns;
            }
            at = self.access(c, line, true, at);
            // The bucket stays locked until the wakee's token is written
            // (below); until then no other thread parks or unparks.
            self.locks[li].bucket_free_at = at;
            if at > t {
                let site = self.cur_hold(c).site as usize;
                self.lock_acc[li].hold += at - t;
                self.site_acc[site].hold += at - t;
                let cpu = &mut self.cpus[c as usize];
                cpu.unpark_walked = true;
                cpu.state = CpuState::Releasing;
                self.push(at, c, Kind::Release);
                return None;
            }
        }
        let walked = std::mem::replace(&mut self.cpus[c as usize].unpark_walked, false);
        {
            let l = &mut self.locks[li];
            if write {
                l.writer = NONE;
            } else {
                l.readers -= 1;
                if l.readers > 0 {
                    return Some(t);
                }
            }
        }
        if self.locks[li].waitq.is_empty() {
            if write {
                // The slow path's callback found nobody: it stores 0 (no
                // parked bit).
                self.locks[li].parked_bit = false;
            }
            return Some(t);
        }
        let mut at = if walked {
            t
        } else {
            self.lock_bucket(c, li, t)
        };
        // Unpark readers up to and including the first writer.
        let mut woken = Vec::new();
        let mut writer = NONE;
        while let Some(&w) = self.locks[li].waitq.front() {
            self.locks[li].waitq.pop_front();
            woken.push(w);
            if self.cur_hold(w).write {
                writer = w;
                break;
            }
        }
        // `have_more_threads`: the callback keeps the parked bit only
        // when someone is left in the queue.
        self.locks[li].parked_bit = !self.locks[li].waitq.is_empty();
        let fair = at >= self.locks[li].next_fair;
        if fair {
            let next = at + self.rand01() * FAIR_TIMEOUT_MAX_NS;
            self.locks[li].next_fair = next;
        }
        if !walked {
            // The fair-timeout clock read (see above), then the callback's
            // store.
            at += self.clock_read_ns;
            at = self.access(c, line, true, at);
        }
        for &w in &woken {
            // Its unpark token and futex word (`unpark_lock`), in its
            // `ThreadData`, before the bucket is unlocked.
            at = self.access(c, self.td_line[w as usize], true, at);
        }
        self.locks[li].bucket_free_at = at;
        for &w in &woken {
            // A fair unlock hands the lock to the readers it woke, or to
            // the writer when it woke no reader.
            let handed = fair && (woken.len() == 1 || w != writer);
            if handed {
                if w == writer {
                    self.locks[li].handoff = w;
                    self.locks[li].writer = w;
                } else {
                    self.locks[li].readers += 1;
                }
            }
            self.cpus[w as usize].handed = handed;
            self.wake(w, at);
        }
        // Then the futex wake system call, outside the bucket: the
        // unlocker's cost of a wake-up, measured under load where the
        // machine has it ([`crate::Machine::unlock_wake`]; less the clock
        // read charged above where both are measured:
        // [`crate::Machine::unlock_wake_after_release`]).
        Some(at + self.unlock_wake_ns)
    }
}
