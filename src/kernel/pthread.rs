//! User-space synchronisation built on futexes, as glibc does it, for
//! rt-app workloads: pthread mutexes (an uncontended lock never enters the
//! kernel; a contended one sleeps on the futex), condition variables, and
//! rt-app's periodic timer (clock_nanosleep with TIMER_ABSTIME).

use super::pipe::Io;
use super::task::Pid;
use super::wait::WaitQueueRef;
use super::Kernel;

/// One pthread operation; mutexes and condition variables are futex words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PthreadOp {
    MutexLock {
        futex: usize,
    },
    MutexUnlock {
        futex: usize,
    },
    /// pthread_cond_wait's sleep (the mutex is released just before and
    /// taken again after, by the surrounding ops).
    CondWait {
        futex: usize,
    },
    /// pthread_cond_signal (`all`: pthread_cond_broadcast).
    CondWake {
        futex: usize,
        all: bool,
    },
    /// rt-app's `timer`: the next expiry is the last one plus `period`
    /// (the first is counted from `first`, the thread's t_first); sleep
    /// until it, or if it has passed, go on (and in relative mode restart
    /// from now).
    Timer {
        timer: usize,
        period: u64,
        relative: bool,
        first: u64,
    },
}

impl Kernel {
    /// Execute a pthread op for `p` on `cpu`: Done to go on, Block to sleep
    /// (the op is retried when woken).
    pub fn pthread_op(&mut self, p: Pid, cpu: usize, op: PthreadOp) -> Io {
        match op {
            PthreadOp::MutexLock { futex } => {
                if self.futexes[futex].val == 0 {
                    self.futexes[futex].val = 1;
                    return Io::Done(0);
                }
                self.prepare_to_wait(WaitQueueRef::Futex(futex), p, true);
                Io::Block
            }
            PthreadOp::MutexUnlock { futex } => {
                self.futexes[futex].val = 0;
                self.wake_up(WaitQueueRef::Futex(futex), 1, false, cpu, p);
                Io::Done(0)
            }
            PthreadOp::CondWait { futex } => {
                if self.tasks[p].prog.woken {
                    return Io::Done(0);
                }
                self.prepare_to_wait(WaitQueueRef::Futex(futex), p, true);
                Io::Block
            }
            PthreadOp::CondWake { futex, all } => {
                let nr = if all { 0 } else { 1 };
                self.wake_up(WaitQueueRef::Futex(futex), nr, false, cpu, p);
                Io::Done(0)
            }
            PthreadOp::Timer {
                timer,
                period,
                relative,
                first,
            } => self.periodic_timer(p, cpu, timer, (first, period), relative),
        }
    }

    fn periodic_timer(
        &mut self,
        p: Pid,
        cpu: usize,
        timer: usize,
        (first, period): (u64, u64),
        relative: bool,
    ) -> Io {
        if self.tasks[p].prog.woken {
            return Io::Done(0);
        }
        let next = self.timers[timer].unwrap_or(first) + period;
        self.timers[timer] = Some(next);
        if self.now < next {
            self.hrtimer_sleep(p, cpu, next - self.now);
            return Io::Block;
        }
        if relative {
            self.timers[timer] = Some(self.now);
        }
        Io::Done(0)
    }
}
