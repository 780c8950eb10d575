//! Kernel threads (kernel/kthread.c): kthread_create through kthreadd,
//! kthread_run, kthread_park/unpark and kthread_stop, each handshake a
//! completion.
//!
//! kthread_create queues a request on kthread_create_list, wakes kthreadd
//! and waits (killable) on the request's `done`. kthreadd forks the
//! thread; the new thread completes `done` and sleeps until kthread_run
//! (wake_up_process) or kthread_stop. kthread_park sets the thread's
//! SHOULD_PARK bit, wakes it and waits on `parked`, which the thread
//! completes in __kthread_parkme before sleeping until kthread_unpark.
//! kthread_stop sets SHOULD_STOP, unparks, wakes it and waits on
//! `exited`, which the thread's exit completes from mm_release (it is the
//! thread's vfork_done).

use super::program::Blocked;
use super::task::{Pid, TaskState};
use super::Kernel;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// struct kthread, reduced to its KTHREAD_SHOULD_STOP/PARK bits.
#[derive(Clone, Copy, Debug, Default)]
pub struct Kthread {
    pub should_stop: bool,
    pub should_park: bool,
}

/// kthread_create_list, kthreadd, and the kthreads' flags.
#[derive(Clone, Debug, Default)]
pub struct Kthreads {
    pub create_list: VecDeque<Pid>,
    pub kthreadd: Option<Pid>,
    pub threads: BTreeMap<Pid, Kthread>,
    /// wake_up_process calls that found the task not yet asleep: its next
    /// sleep returns at once (it had set TASK_RUNNING again).
    woken_early: BTreeSet<Pid>,
}

impl Kernel {
    /// wake_up_process
    pub fn wake_up_process(&mut self, p: Pid, cpu: usize, waker: Pid) {
        let t = &self.tasks[p];
        let asleep = matches!(t.prog.blocked, Blocked::Scheduled | Blocked::Timer);
        if t.state == TaskState::Interruptible && asleep {
            self.try_to_wake_up(p, 0, cpu, Some(waker));
        } else {
            self.kthreads.woken_early.insert(p);
        }
    }

    /// set_current_state + schedule() until wake_up_process. Returns
    /// whether the task went to sleep.
    pub fn sleep_until_woken(&mut self, p: Pid) -> bool {
        if self.kthreads.woken_early.remove(&p) {
            return false;
        }
        let t = &mut self.tasks[p];
        t.state = TaskState::Interruptible;
        t.prog.blocked = Blocked::Scheduled;
        true
    }

    /// kthread_create_on_node's request: queue `k` and wake kthreadd.
    pub fn kthread_create(&mut self, k: Pid, exited: usize, cpu: usize, p: Pid) {
        self.kthreads.create_list.push_back(k);
        self.completions.vfork_done.insert(k, exited);
        self.kthreads.threads.insert(k, Kthread::default());
        if let Some(d) = self.kthreads.kthreadd {
            self.wake_up_process(d, cpu, p);
        }
    }

    /// Set or clear a kthread's bits and wake it (kthread_park,
    /// kthread_unpark, kthread_stop, which also unparks).
    pub fn kthread_signal(&mut self, k: Pid, park: Option<bool>, stop: bool, cpu: usize, p: Pid) {
        let t = self.kthreads.threads.entry(k).or_default();
        if let Some(park) = park {
            t.should_park = park;
        }
        if stop {
            t.should_stop = true;
            t.should_park = false;
        }
        self.wake_up_process(k, cpu, p);
    }

    pub fn kthread_flags(&self, k: Pid) -> Kthread {
        self.kthreads.threads.get(&k).copied().unwrap_or_default()
    }

    /// One pass of kthreadd's loop: fork the next requested thread, if any.
    pub fn kthreadd_fork_next(&mut self, cpu: usize, p: Pid) -> bool {
        let Some(k) = self.kthreads.create_list.pop_front() else {
            return false;
        };
        self.tasks[k].parent = Some(p);
        self.wake_up_new_task(k, cpu);
        true
    }
}
