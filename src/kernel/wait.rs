//! Kernel wait queues (kernel/sched/wait.c): exclusive waiters at the tail,
//! non-exclusive ones at the head, and __wake_up_common's walk that wakes
//! every non-exclusive waiter ahead of the first `nr_exclusive` exclusive ones.

use super::core::WF_SYNC;
use super::program::Blocked;
use super::task::{Pid, TaskState};
use super::Kernel;
use std::collections::{HashSet, VecDeque};

/// Above this many waiters a queue keeps a set of them, so that adding,
/// finding and removing one stays O(1) for a completion or barrier with
/// tens of thousands of waiters.
const INDEX_FROM: usize = 32;

/// The set of a long waiter list (membership only: nothing iterates it, so
/// its order cannot reach a decision). Shared by wait queues and simple
/// wait queues; the list itself stays with its owner.
#[derive(Clone, Debug, Default)]
pub struct WaiterIndex(Option<HashSet<Pid>>);

impl WaiterIndex {
    /// `p` joined the list, now `len` long with these `waiters`.
    pub fn added(&mut self, p: Pid, len: usize, waiters: impl Iterator<Item = Pid>) {
        match &mut self.0 {
            Some(set) => {
                set.insert(p);
            }
            None if len > INDEX_FROM => self.0 = Some(waiters.collect()),
            None => {}
        }
    }

    /// Whether `p` is on the list, when the set knows (None: scan it).
    pub fn contains(&self, p: Pid) -> Option<bool> {
        self.0.as_ref().map(|set| set.contains(&p))
    }

    /// `p` leaves the list; false when the set knows it was not on it.
    pub fn removed(&mut self, p: Pid) -> bool {
        self.0.as_mut().is_none_or(|set| set.remove(&p))
    }

    /// The list is now `len` long: an empty one drops its set.
    pub fn shrunk(&mut self, len: usize) {
        if len == 0 {
            self.0 = None;
        }
    }
}

/// Names one wait queue of a kernel object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitQueueRef {
    PipeRead(usize),
    PipeWrite(usize),
    SockRead(usize),
    SockWrite(usize),
    Futex(usize),
    Barrier(usize),
}

/// struct wait_queue_entry, with autoremove_wake_function semantics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitEntry {
    pub task: Pid,
    pub exclusive: bool,
}

/// struct wait_queue_head
#[derive(Clone, Debug, Default)]
pub struct WaitQueue {
    entries: VecDeque<WaitEntry>,
    index: WaiterIndex,
}

impl WaitQueue {
    /// prepare_to_wait / prepare_to_wait_exclusive (if not already queued).
    pub fn add(&mut self, task: Pid, exclusive: bool) {
        if self.contains(task) {
            return;
        }
        let e = WaitEntry { task, exclusive };
        if exclusive {
            self.entries.push_back(e);
        } else {
            self.entries.push_front(e);
        }
        let len = self.entries.len();
        self.index
            .added(task, len, self.entries.iter().map(|e| e.task));
    }

    /// finish_wait: drop the entry if still queued.
    pub fn remove(&mut self, task: Pid) {
        if !self.index.removed(task) {
            return;
        }
        self.entries.retain(|e| e.task != task);
        self.index.shrunk(self.entries.len());
    }

    pub fn contains(&self, task: Pid) -> bool {
        self.index
            .contains(task)
            .unwrap_or_else(|| self.entries.iter().any(|e| e.task == task))
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// __wake_up_common: the entries to wake, in order. `try_wake` performs
    /// try_to_wake_up and says whether the task was woken; woken entries are
    /// removed (autoremove). `nr_exclusive == 0` wakes everyone.
    pub fn wake_up(&mut self, nr_exclusive: usize, mut try_wake: impl FnMut(Pid) -> bool) -> usize {
        let mut left = nr_exclusive;
        let mut woken = 0;
        let mut i = 0;
        while i < self.entries.len() {
            let e = self.entries[i];
            if try_wake(e.task) {
                self.entries.remove(i);
                self.index.removed(e.task);
                woken += 1;
                if e.exclusive && nr_exclusive != 0 {
                    left -= 1;
                    if left == 0 {
                        break;
                    }
                }
            } else {
                i += 1;
            }
        }
        self.index.shrunk(self.entries.len());
        woken
    }
}

impl Kernel {
    /// Wake up to one exclusive waiter (and every non-exclusive one) of a
    /// wait queue, with WF_SYNC when `sync`.
    pub fn wake_up(
        &mut self,
        wq: WaitQueueRef,
        nr_exclusive: usize,
        sync: bool,
        cpu: usize,
        waker: Pid,
    ) {
        let mut q = std::mem::take(self.wait_queue(wq));
        let flags = if sync { WF_SYNC } else { 0 };
        q.wake_up(nr_exclusive, |t| {
            self.try_to_wake_up(t, flags, cpu, Some(waker))
        });
        *self.wait_queue(wq) = q;
    }

    /// Wake, with WF_SYNC, every waiter of a wait queue for which `ready`
    /// holds (a replayed reader whose bytes have been written).
    pub fn wake_up_ready(
        &mut self,
        wq: WaitQueueRef,
        cpu: usize,
        waker: Pid,
        ready: impl Fn(&Kernel, Pid) -> bool,
    ) {
        let mut q = std::mem::take(self.wait_queue(wq));
        q.wake_up(0, |t| {
            ready(self, t) && self.try_to_wake_up(t, WF_SYNC, cpu, Some(waker))
        });
        *self.wait_queue(wq) = q;
    }

    fn wait_queue(&mut self, wq: WaitQueueRef) -> &mut WaitQueue {
        match wq {
            WaitQueueRef::PipeRead(i) => &mut self.pipes[i].rd_wait,
            WaitQueueRef::PipeWrite(i) => &mut self.pipes[i].wr_wait,
            WaitQueueRef::SockRead(i) => &mut self.socks[i].rd_wait,
            WaitQueueRef::SockWrite(i) => &mut self.socks[i].wr_wait,
            WaitQueueRef::Futex(i) => &mut self.futexes[i].wait,
            WaitQueueRef::Barrier(i) => &mut self.barriers[i].wait,
        }
    }

    /// Queue `p` on a wait queue before it sleeps.
    pub fn prepare_to_wait(&mut self, wq: WaitQueueRef, p: Pid, exclusive: bool) {
        self.wait_queue(wq).add(p, exclusive);
        self.tasks[p].state = TaskState::Interruptible;
        self.tasks[p].prog.blocked = Blocked::Queue(wq);
    }

    /// Whether `p` sits on the wait queue `wq` (for the lost-wakeup check).
    pub fn is_waiting_on(&mut self, wq: WaitQueueRef, p: Pid) -> bool {
        self.wait_queue(wq).contains(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Past INDEX_FROM waiters the set answers for the list: every add,
    /// finish_wait and wakeup keeps the two equal.
    #[test]
    fn a_long_queue_keeps_its_set_in_step() {
        let mut q = WaitQueue::default();
        for p in 0..100 {
            q.add(p, true);
            q.add(p, true);
        }
        assert_eq!(q.entries.len(), 100);
        q.remove(7);
        assert!(!q.contains(7) && q.contains(8));
        assert_eq!(q.wake_up(10, |_| true), 10);
        assert!(!q.contains(5) && q.contains(50));
        assert_eq!(q.wake_up(0, |_| true), 89);
        assert!(q.is_empty() && q.index.0.is_none() && !q.contains(50));
    }

    #[test]
    fn wakes_non_exclusive_then_one_exclusive() {
        let mut q = WaitQueue::default();
        q.add(1, true);
        q.add(2, true);
        q.add(3, false);
        q.add(4, false);
        let mut order = vec![];
        let n = q.wake_up(1, |t| {
            order.push(t);
            true
        });
        assert_eq!(order, vec![4, 3, 1]);
        assert_eq!(n, 3);
        assert!(q.contains(2) && !q.contains(1));
    }

    #[test]
    fn failed_wake_does_not_consume_exclusive_slot() {
        let mut q = WaitQueue::default();
        q.add(1, true);
        q.add(2, true);
        let n = q.wake_up(1, |t| t == 2);
        assert_eq!(n, 1);
        assert!(q.contains(1) && !q.contains(2));
        assert_eq!(q.wake_up(0, |_| true), 1);
        assert!(q.is_empty());
    }
}
