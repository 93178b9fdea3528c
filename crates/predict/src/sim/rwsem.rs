//! Linux's `rw_semaphore` (`kernel/locking/rwsem.c`, `osq_lock.c`,
//! 6.12), as the simulator runs it. Also the kernel's `mutex`, whose
//! optimistic spinning and hand-off are the same for writers.
//!
//! The lock word (`count`, `owner`, the `osq` tail and `wait_lock` share
//! one line in `struct rw_semaphore`) is [`super::LockSt::line`]. Each CPU
//! also has three lines of its own that the lock's paths write: its `osq`
//! MCS node (`osq_node`, per CPU: `next`, `prev`, `locked`), its
//! `rwsem_waiter` (on its stack while it waits) and its task's wake-up
//! fields (`wake_q`, `usage`, `pi_lock`, `__state`).
//!
//! * **Writer, lock free.** `rwsem_write_trylock` / the spinner's
//!   `rwsem_try_write_lock_unqueued`: a `cmpxchg` takes it unless a
//!   hand-off is pending for another waiter.
//! * **Writer, writer owner: the `osq`.** `rwsem_optimistic_spin`. The
//!   newcomer's failed `cmpxchg`, `rwsem_can_spin_on_owner`'s read of
//!   `owner` and `osq_lock`'s `xchg` of the tail are back to back on the
//!   lock line (one write); then it writes its own node (`locked = 0`,
//!   `next = NULL`) and `prev->next` on the previous tail's node, which
//!   that CPU polls and re-reads. Only the head polls the lock
//!   (`rwsem_spin_on_owner` reads `owner`), so it keeps a shared copy of
//!   the lock line: every other CPU's write to the line is followed by the
//!   head's re-read, one transfer, and the owner's release must invalidate
//!   that copy. When the owner releases, the head reads the line (a
//!   transfer from the releaser) and then `cmpxchg`es it (a second access,
//!   invalidating the releaser's copy); this races any newcomer's fast
//!   path (the line decides: whoever's access comes first). On success
//!   `osq_unlock` runs before the critical section: its `cmpxchg` of the
//!   tail (the lock line, which it has: free), the `xchg` of its own
//!   `node->next` (a locked instruction on the line its successor wrote:
//!   the new owner waits for it), and the store to the successor's
//!   `node->locked` (the line the successor polls: a store, which the
//!   owner does not wait for, but its release, a locked instruction,
//!   does); the successor re-reads its node, is head, and reads the lock
//!   line to poll it. With one copy per CPU every owner is
//!   running, so spinners never give up on a writer owner.
//! * **Writer, reader owner.** Only the head checks the time: at most
//!   `reader_spin_ns` (`rwsem_rspin_threshold`) from when it first sees
//!   readers own the lock; then `rwsem_set_nonspinnable` (a `cmpxchg` of
//!   `owner`), `osq_unlock`, and the wait queue. Each next head sees
//!   `RWSEM_NONSPINNABLE` at its first poll and follows, and a writer that
//!   arrives while the flag is set does not spin; a writer that takes the
//!   lock (`rwsem_set_owner`) or the last reader leaving with waiters
//!   queued (`__up_read`) clears it.
//! * **Readers** take the lock with an atomic add unless a writer owns it,
//!   a hand-off is pending, or (with waiters queued, which fails the fast
//!   path) other readers hold it (`rwsem_down_read_slowpath` steals only
//!   a lock no reader holds); otherwise they queue and sleep (reader
//!   optimistic spinning was removed from the kernel).
//! * **Queueing** (`rwsem_add_waiter` under `wait_lock`): the waiter's own
//!   line and the previous last waiter's (`list_add_tail`).
//! * **Release.** The owner's atomic on the lock line (a transfer when a
//!   spinner polled it or a newcomer's failed attempt took it); the lock
//!   stays held until the owner has the line, so nobody takes it between.
//!   With waiters queued (`RWSEM_FLAG_WAITERS`), every release calls
//!   `rwsem_wake`: `wait_lock`, a read of the first waiter's line, then a
//!   writer first: `wake_q_add` on its task's line, and a wake-up
//!   ([`crate::Machine::futex_wake`] for the releaser, the wakee runs
//!   `wake_ns` later) only if it sleeps; a reader first: every queued
//!   reader up to `MAX_READERS_WAKEUP`, past any writers (the walk reads
//!   each waiter's line), each one's task and waiter lines written and
//!   one wake-up each (`wake_up_q`), granted as they are woken.
//! * **A woken writer** retries under `wait_lock` (one write to the lock
//!   line; on success `list_del` writes the next waiter's line); a woken
//!   reader reads its waiter (`waiter.task` cleared) and runs. A writer
//!   that has slept `RWSEM_WAIT_TIMEOUT` (4 ms) sets the hand-off bit,
//!   after which only it may take the lock, and only it spins on the
//!   owner before sleeping again.
//!
//! # Checked against the source (s38) and not charged
//!
//! * `owner_on_cpu(owner)` in `rwsem_can_spin_on_owner` and
//!   `rwsem_spin_on_owner` reads the owner's `task_struct` (`on_cpu`,
//!   its CPU): a line the owner writes only when it is scheduled, read
//!   once per new owner by a CPU that is waiting anyway: not charged.
//! * A CPU's accesses to one line within a few instructions of each other
//!   are charged as one (`clear_owner` + `fetch_add`; the `cmpxchg` +
//!   `set_owner`; `osq_unlock`'s tail `cmpxchg`; `wait_lock` + the count
//!   update + unlock in `rwsem_wake` and in a woken writer's retry): the
//!   real head's poll could take the line between them.
//! * `wait_lock` is a line access, never a lock that is held: a releaser's
//!   `rwsem_wake` and a woken writer's retry never wait for each other.
//! * The line model serves accesses in the order the simulator makes
//!   them, not in the order of their times: one at a time per line (a
//!   write, or the first read after a write, waits for the line's previous
//!   transfer, so N CPUs that want a line wait their turns; reads of a
//!   copy already shared do not queue), but an access made early for a
//!   later time can go before one made later for an earlier time. The
//!   rwsem makes its accesses when they happen where that decided a
//!   hand-off: a new head's first poll is an event at the time it learns
//!   it is head (made ahead, it held the line ahead of an earlier
//!   release), and a head not yet polling does not re-read the line after
//!   other CPUs' writes. A CPU's own chain of accesses (the `osq_unlock`,
//!   a hold's lines) is still made at once.
//! * `need_resched()` and a preempted vCPU (which end spinning and unqueue
//!   an `osq` member: `osq_wait_next`, steps A-C) do not occur: one copy
//!   per CPU, no preemption.
//! * `rwsem_rspin_threshold` is `(20 + readers) / 2` us (10-25 us) in the
//!   source; the description's `reader_spin_ns` is used instead.
//! * The wake-up costs are the description's (`wake_ns`, `futex_wake`), one
//!   waiter's on a quiet machine, not a function of the run-queue lines.

use super::{CpuState, Kind, Sim, NONE};

/// `RWSEM_WAIT_TIMEOUT`: a waiter that has waited this long gets the
/// lock handed to it.
pub(super) const HANDOFF_TIMEOUT_NS: f64 = 4e6;

/// `MAX_READERS_WAKEUP`: the most readers one `rwsem_mark_wake` grants.
const MAX_READERS_WAKEUP: usize = 0x100;

/// The waiters `rwsem_mark_wake` grants the lock to when the first waiter
/// is a reader (`write[i]`: the `i`-th waiter is a writer): every reader
/// in the queue, up to `MAX_READERS_WAKEUP`, whatever writers stand
/// between (the kernel's phase-fair reader phase); writers stay queued.
/// Also how many waiters its walk reads (the whole queue, or up to the
/// last reader granted when it stops at the limit).
fn readers_to_wake(write: &[bool]) -> (Vec<usize>, usize) {
    let mut grant = Vec::new();
    for (i, &w) in write.iter().enumerate() {
        if !w {
            grant.push(i);
            if grant.len() >= MAX_READERS_WAKEUP {
                return (grant, i + 1);
            }
        }
    }
    (grant, write.len())
}

impl Sim<'_> {
    fn rwsem_free_for(&self, li: usize, c: u32, write: bool) -> bool {
        let l = &self.locks[li];
        let handoff_ok = l.handoff == NONE || l.handoff == c;
        if write {
            l.writer == NONE && l.readers == 0 && handoff_ok
        } else {
            // `rwsem_down_read_slowpath`: with waiters queued
            // (`RWSEM_FLAG_WAITERS` fails the fast path) a reader steals
            // the lock only if no other reader holds it; otherwise it
            // queues ("to prevent a constant stream of readers from
            // starving a sleeping writer").
            l.writer == NONE && handoff_ok && (l.readers == 0 || l.waitq.is_empty())
        }
    }

    /// Arms the `osq` head `c`'s `rwsem_rspin_threshold` at `t` if lock
    /// `li` is reader-owned (the threshold is set each time the head sees
    /// the owner turn from not-reader to reader).
    fn arm_reader_spin(&mut self, li: usize, c: u32, t: f64) {
        let l = &self.locks[li];
        if l.osq.front() != Some(&c) || !(l.writer == NONE && l.readers > 0) {
            return;
        }
        self.push(t + self.m.reader_spin_ns, c, Kind::SpinTimeout);
    }

    /// Readers took lock `li` at `t` (the count went from 0): a spinning
    /// `osq` head sees `OWNER_READER` and arms its threshold.
    fn readers_took(&mut self, li: usize, t: f64) {
        if let Some(&h) = self.locks[li].osq.front() {
            let at = t.max(self.cpus[h as usize].osq_ready);
            self.arm_reader_spin(li, h, at);
        }
    }

    /// `c` tries its rwsem at `t` (a first attempt, an `osq` head that saw
    /// the release, or a woken waiter).
    pub(super) fn rwsem_attempt(&mut self, c: u32, t: f64) {
        let h = self.cur_hold(c);
        let li = h.lock as usize;
        let line = self.locks[li].line;
        // A spinner that polls the lock (the osq head in
        // `rwsem_spin_on_owner`, a first waiter spinning on the owner)
        // reads `owner` and `count` before its `cmpxchg`
        // (`rwsem_try_write_lock_unqueued`): the release invalidated its
        // copy, so the read fetches the line from the releaser and the
        // `cmpxchg` then invalidates the releaser's copy: two accesses.
        // A first attempt (`rwsem_write_trylock`) and a woken waiter
        // (`wait_lock`) start with their atomic.
        if !h.write && self.cpus[c as usize].state == CpuState::Waking {
            // A reader the releaser woke: `rwsem_mark_wake` added its
            // count and cleared `waiter.task`; the reader's loop in
            // `rwsem_down_read_slowpath` reads that (its waiter, which the
            // waker wrote) and returns without touching the lock line.
            let at = self.access(c, self.wait_line[c as usize], false, t);
            self.grant(c, at);
            return;
        }
        let polls = self.cpus[c as usize].state == CpuState::Spinning
            && (self.locks[li].osq.front() == Some(&c) || self.locks[li].first_spinner == c);
        let t = if polls {
            self.access(c, line, false, t)
        } else {
            t
        };
        // The attempt's atomic takes the lock line, whether it succeeds.
        let at = self.access(c, line, true, t);
        if self.rwsem_free_for(li, c, h.write) {
            let l = &mut self.locks[li];
            if l.handoff == c {
                l.handoff = NONE;
            }
            if l.first_spinner == c {
                l.first_spinner = NONE;
            }
            // A woken writer's `rwsem_try_write_lock` unlinks its waiter
            // (`list_del`): the next waiter's `prev` is on that waiter's
            // line.
            let at = self.waitq_remove(li, c, at);
            // `rwsem_optimistic_spin` calls `osq_unlock` after the lock is
            // taken and before it returns: the MCS hand-over is on the
            // new owner's path to its critical section.
            let at = self.osq_leave(li, c, at);
            if h.write {
                // `rwsem_set_owner` overwrites `owner`: the flag is gone.
                self.locks[li].nonspinnable = false;
            } else {
                self.locks[li].readers += 1;
                if self.locks[li].readers == 1 {
                    self.readers_took(li, at);
                }
            }
            self.grant(c, at);
            return;
        }
        self.note_contended(c, t);
        self.repoll(li, c, at);
        let st = self.cpus[c as usize].state;
        let l = &self.locks[li];
        let reader_owned = l.writer == NONE && l.readers > 0;
        if !h.write {
            // Readers do not spin: they queue and sleep.
            let at = if l.waitq.contains(&c) {
                at
            } else {
                self.waitq_add(li, c, at)
            };
            self.sleep(c, at);
            return;
        }
        let in_waitq = l.waitq.contains(&c);
        if in_waitq {
            // A woken writer that lost: the first waiter spins on a
            // running writer owner, and after RWSEM_WAIT_TIMEOUT asks for
            // the hand-off; the others sleep again.
            let first = l.waitq.front() == Some(&c);
            let slept = self.cpus[c as usize].slept_at;
            if first && slept >= 0.0 && t - slept >= HANDOFF_TIMEOUT_NS && l.handoff == NONE {
                self.locks[li].handoff = c;
            }
            // `rwsem_down_write_slowpath`: only a waiter that has set the
            // hand-off bit (`waiter.handoff_set`) spins on the owner
            // before sleeping again; `rwsem_spin_on_owner` returns at once
            // on a reader owner.
            if first && self.locks[li].handoff == c && !reader_owned {
                self.locks[li].first_spinner = c;
                self.cpus[c as usize].state = CpuState::Spinning;
            } else {
                self.sleep(c, at);
            }
            return;
        }
        if st != CpuState::Spinning {
            if self.locks[li].nonspinnable {
                // `rwsem_can_spin_on_owner` sees `RWSEM_NONSPINNABLE`:
                // straight to the wait queue (`wait_lock` on the line,
                // back to back with the failed `cmpxchg` above).
                let at = self.waitq_add(li, c, at);
                self.sleep(c, at);
                return;
            }
            // Join the osq (its tail is on the lock line: accessed above).
            self.cpus[c as usize].state = CpuState::Spinning;
            let joined = self.osq_join(li, c, at);
            self.cpus[c as usize].osq_ready = joined;
            // Only the head spins on the owner and keeps the threshold.
            self.arm_reader_spin(li, c, joined);
        }
        // An osq member waits for the next release (no event of its own).
    }

    /// The spinners polling lock `li` (the `osq` head, a first waiter
    /// spinning on the owner) keep a shared copy of its line: when `c`
    /// has just written it at `t` (a failed `cmpxchg`, an `osq` join, the
    /// `wait_lock`), each re-reads it, one transfer, and the next write
    /// (the owner's release) must invalidate that copy again.
    fn repoll(&mut self, li: usize, c: u32, t: f64) {
        let line = self.locks[li].line;
        let head = self.locks[li].osq.front().copied();
        let fs = self.locks[li].first_spinner;
        for p in [head.unwrap_or(NONE), fs] {
            if p == NONE || p == c || self.cpus[p as usize].state != CpuState::Spinning {
                continue;
            }
            if self.cpus[p as usize].osq_ready > t {
                // Not polling yet: its first poll (a `Poll` event) reads it.
                continue;
            }
            self.access(p, line, false, t);
        }
    }

    /// `c` joins lock `li`'s `osq` at `t`, after the `xchg` of its tail
    /// (on the lock line, charged by the caller); returns when `c` has
    /// written its node and linked it (`osq_lock`).
    fn osq_join(&mut self, li: usize, c: u32, t: f64) -> f64 {
        let own = self.osq_line[c as usize];
        let head = self.locks[li].osq.front().copied();
        let prev = self.locks[li].osq.back().copied();
        self.locks[li].osq.push_back(c);
        // `node->locked = 0; node->next = NULL;`: its own node, which the
        // CPUs around it in its last queue wrote.
        let mut at = self.access(c, own, true, t);
        if let Some(p) = prev {
            // `WRITE_ONCE(prev->next, node)`.
            let pl = self.osq_line[p as usize];
            at = self.access(c, pl, true, at);
            if Some(p) != head {
                // `prev` waits in `osq_lock` polling `locked`, on that
                // line: it re-reads it (the head polls the lock instead).
                self.access(p, pl, false, at);
            }
        }
        at
    }

    /// `c` leaves lock `li`'s `osq` at `t`, having taken the lock or given
    /// up spinning (only the head does either: it alone polls the lock);
    /// returns when `c` may go on. A member behind the head leaves only
    /// through `osq_lock`'s unqueue, on `need_resched()` or a preempted
    /// vCPU, which the model does not have.
    fn osq_leave(&mut self, li: usize, c: u32, t: f64) -> f64 {
        match self.locks[li].osq.iter().position(|&w| w == c) {
            Some(0) => {
                self.locks[li].osq.pop_front();
                self.osq_unlock(li, c, t)
            }
            Some(pos) => {
                debug_assert!(false, "osq member {c} at {pos} left the queue");
                self.locks[li].osq.remove(pos);
                t
            }
            None => t,
        }
    }

    /// `osq_unlock` by `c`, just removed from the head of lock `li`'s
    /// `osq`, at `t`; returns when `c` goes on. Its `cmpxchg` of the tail
    /// is on the lock line, which `c` has just written (free). With a
    /// successor `n`: `xchg` of `c`'s own `node->next` (the line `n` wrote
    /// when it queued behind `c`; a locked instruction, so `c` waits for
    /// it), then `WRITE_ONCE(next->locked, 1)` on `n`'s node, which `n`
    /// polls: a plain store, so `c` runs its critical section while it
    /// completes, and its release (a locked `fetch_add`, which drains the
    /// store buffer) waits for it; `n` re-reads its node, learns it is
    /// head, and starts polling `owner` (a copy of the lock line).
    fn osq_unlock(&mut self, li: usize, c: u32, t: f64) -> f64 {
        let Some(&n) = self.locks[li].osq.front() else {
            return t;
        };
        let own = self.osq_line[c as usize];
        let next = self.osq_line[n as usize];
        let t = self.access(c, own, true, t);
        let stored = self.access(c, next, true, t);
        self.cpus[c as usize].store_done = stored;
        let ready = self.access(n, next, false, stored);
        self.cpus[n as usize].osq_ready = ready;
        // Its first read of `owner` is an event at `ready`, so that the
        // line serves it in time order with the owner's release (made
        // now for `ready`, it would hold the line ahead of a release that
        // comes first).
        self.push(ready, n, Kind::Poll);
        t
    }

    /// `c`, a new `osq` head, reads the lock line at `t` for its first
    /// `rwsem_spin_on_owner`.
    pub(super) fn rwsem_poll(&mut self, c: u32, t: f64) {
        let li = self.cur_hold(c).lock as usize;
        if self.locks[li].osq.front() != Some(&c) {
            return;
        }
        let line = self.locks[li].line;
        let polled = self.access(c, line, false, t);
        if self.locks[li].nonspinnable {
            // `RWSEM_NONSPINNABLE` (`OWNER_NONSPINNABLE`): it leaves the
            // queue too.
            self.push(polled, c, Kind::SpinTimeout);
        } else {
            self.arm_reader_spin(li, c, t);
        }
    }

    /// `rwsem_add_waiter` by `c` at `t`, under `wait_lock` (the lock line,
    /// charged by the caller): `list_add_tail` writes `c`'s waiter and the
    /// previous last waiter's `next`; returns when done.
    fn waitq_add(&mut self, li: usize, c: u32, t: f64) -> f64 {
        let prev = self.locks[li].waitq.back().copied();
        self.locks[li].waitq.push_back(c);
        let mut at = self.access(c, self.wait_line[c as usize], true, t);
        if let Some(p) = prev {
            at = self.access(c, self.wait_line[p as usize], true, at);
        }
        at
    }

    /// `c` leaves lock `li`'s wait queue at `t` (it took the lock):
    /// `list_del` writes the next waiter's `prev` (the list head, on the
    /// lock line, is `c`'s already); returns when done.
    fn waitq_remove(&mut self, li: usize, c: u32, t: f64) -> f64 {
        let q = &mut self.locks[li].waitq;
        let Some(pos) = q.iter().position(|&w| w == c) else {
            return t;
        };
        q.remove(pos);
        match q.get(pos).copied() {
            Some(n) => self.access(c, self.wait_line[n as usize], true, t),
            None => t,
        }
    }

    /// A writer spinning on a reader-owned rwsem gives up and sleeps.
    pub(super) fn rwsem_spin_timeout(&mut self, c: u32, t: f64) {
        let li = self.cur_hold(c).lock as usize;
        let l = &self.locks[li];
        let line = l.line;
        let t = if l.nonspinnable {
            // The cascade: `OWNER_NONSPINNABLE`, no write.
            t
        } else if l.writer == NONE && l.readers > 0 && l.osq.front() == Some(&c) {
            // Past `rwsem_rspin_threshold`: `rwsem_set_nonspinnable`, a
            // `cmpxchg` of `owner` on the lock line.
            self.locks[li].nonspinnable = true;
            let at = self.access(c, line, true, t);
            self.repoll(li, c, at);
            at
        } else {
            return; // Not reader-owned (or not the head): keep spinning.
        };
        let t = self.osq_leave(li, c, t);
        // rwsem_down_write_slowpath: wait_lock and the list, on the line.
        let at = self.access(c, line, true, t);
        let at = self.waitq_add(li, c, at);
        self.sleep(c, at);
    }

    /// `c` releases rwsem `li` at `t` (it has the lock word's line);
    /// returns when `c` may go on.
    pub(super) fn rwsem_release(&mut self, c: u32, li: usize, write: bool, t: f64) -> f64 {
        let mut at = t;
        {
            let l = &mut self.locks[li];
            if write {
                l.writer = NONE;
            } else {
                l.readers -= 1;
            }
            if l.writer != NONE || l.readers > 0 {
                return at;
            }
        }
        // The osq head (and a woken first waiter spinning on the owner)
        // see the release and race for the lock.
        if let Some(&head) = self.locks[li].osq.front() {
            let when = at.max(self.cpus[head as usize].osq_ready);
            self.push(when, head, Kind::Attempt);
        }
        let fs = self.locks[li].first_spinner;
        if fs != NONE && self.cpus[fs as usize].state == CpuState::Spinning {
            self.push(at, fs, Kind::Attempt);
        }
        // `RWSEM_FLAG_WAITERS` is set while the queue is not empty, so the
        // release calls `rwsem_wake` whether or not its first waiter
        // sleeps: `wait_lock` (the lock line, just written by the
        // releaser: free unless another CPU took it between) and
        // `rwsem_mark_wake`, which reads the first waiter.
        let Some(&w) = self.locks[li].waitq.front() else {
            return at;
        };
        if !write {
            // `__up_read`'s `clear_nonspinnable` before `rwsem_wake`.
            self.locks[li].nonspinnable = false;
        }
        let line = self.locks[li].line;
        at = self.access(c, line, true, at);
        at = self.access(c, self.wait_line[w as usize], false, at);
        if self.cur_hold(w).write {
            // `wake_q_add` (a `cmpxchg` of the task's `wake_q`, and
            // `get_task_struct`): the task's line.
            at = self.access(c, self.task_line[w as usize], true, at);
            if self.cpus[w as usize].state == CpuState::Sleeping {
                self.wake(w, at);
                at += self.futex_wake_ns;
            }
            // Otherwise `try_to_wake_up` finds it awake (its `pi_lock` and
            // `__state`, on the line just taken): no wake-up.
            return at;
        }
        // A reader first: every reader in the queue is granted (up to
        // `MAX_READERS_WAKEUP`), writers stay; the walk reads each
        // waiter's line in turn (`list_for_each_entry_safe`).
        let queue: Vec<u32> = self.locks[li].waitq.iter().copied().collect();
        let writes: Vec<bool> = queue.iter().map(|&x| self.cur_hold(x).write).collect();
        let (grant, walked) = readers_to_wake(&writes);
        for &x in &queue[1..walked] {
            at = self.access(c, self.wait_line[x as usize], false, at);
        }
        let woken: Vec<u32> = grant.iter().map(|&i| queue[i]).collect();
        let mut sorted = woken.clone();
        sorted.sort_unstable();
        self.locks[li]
            .waitq
            .retain(|x| sorted.binary_search(x).is_err());
        self.locks[li].readers += woken.len() as u32;
        self.readers_took(li, at);
        // Second pass: `get_task_struct` and `wake_q_add_safe` (the task's
        // line), `smp_store_release(&waiter->task, NULL)` (its waiter);
        // then `wake_up_q` wakes them one after another, each a wake-up
        // for the releaser. Granted at wake-up (the waker added their
        // reader counts).
        for &r in &woken {
            at = self.access(c, self.task_line[r as usize], true, at);
            at = self.access(c, self.wait_line[r as usize], true, at);
        }
        for r in woken {
            at += self.futex_wake_ns;
            self.wake(r, at - self.futex_wake_ns);
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_phase_grants_every_queued_reader_past_writers() {
        // Queue: R W R R W R. `rwsem_mark_wake` moves all four readers to
        // its wake list and leaves both writers (the mutant that stops at
        // the first writer, the rule before s38, grants only the first).
        let q = [false, true, false, false, true, false];
        assert_eq!(readers_to_wake(&q), (vec![0, 2, 3, 5], 6));
        // At most MAX_READERS_WAKEUP per call; the walk stops there.
        let many = vec![false; MAX_READERS_WAKEUP + 5];
        let (g, walked) = readers_to_wake(&many);
        assert_eq!((g.len(), walked), (MAX_READERS_WAKEUP, MAX_READERS_WAKEUP));
    }
}
