//! Contended locks (kernel/locking/: qspinlock, and mutex with optimistic
//! spinning). One mechanism serves every lock the model times: the run
//! queue's `rq->__lock`, a pipe's `pipe->mutex`, an AF_UNIX socket's
//! `unix_state_lock` and receive-queue lock.
//!
//! A lock is a reservation: it remembers when its current holder lets go.
//! A taker that comes earlier waits until then plus one hand-off (the
//! lock word's cache line moving to it: qspinlock's MCS hand-off, or the
//! mutex owner field). The waiters spin, so the wait is CPU time of the
//! taker: the pipe mutex spins while its owner runs (mutex_optimistic_spin),
//! and the holders here never sleep holding it. Takers are served in the
//! order they arrive, as qspinlock's MCS queue and the mutex's OSQ do.

use crate::engine::Time;

/// One lock's contention state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContendedLock {
    /// When the last taker releases it.
    free_at: Time,
}

impl ContendedLock {
    /// Take the lock at `at` and hold it for `hold` ns: returns how long
    /// the taker waits first (0 when the lock is free at `at`; else until
    /// the holders before it are done, plus the `handoff` to it).
    pub fn acquire(&mut self, at: Time, hold: u64, handoff: u64) -> u64 {
        let mut wait = self.free_at.saturating_sub(at);
        if wait > 0 {
            wait += handoff;
        }
        self.free_at = at + wait + hold;
        wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takers_queue_behind_the_holder_and_pay_a_handoff_each() {
        let mut l = ContendedLock::default();
        assert_eq!(l.acquire(100, 50, 10), 0);
        // Two takers at once while the first holds it until 150.
        assert_eq!(l.acquire(120, 50, 10), 40);
        assert_eq!(l.acquire(120, 50, 10), 100);
        // Free again after 270: no wait, no hand-off.
        assert_eq!(l.acquire(300, 50, 10), 0);
    }
}
