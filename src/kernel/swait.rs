//! Simple wait queues (kernel/sched/swait.c): a raw spinlock and a FIFO of
//! exclusive waiters, no custom wake functions. A woken waiter is taken off
//! the list by the waker (swake_up_locked's list_del_init).
//!
//! The list itself lives here; who is woken and what the lock hold costs
//! is decided by the caller (completion.rs), which knows whether it runs
//! with interrupts off.

use super::task::Pid;
use super::wait::WaiterIndex;
use std::collections::VecDeque;

/// struct swait_queue_head: the waiters in arrival order.
#[derive(Clone, Debug, Default)]
pub struct SwaitQueue {
    list: VecDeque<Pid>,
    index: WaiterIndex,
}

impl SwaitQueue {
    /// __prepare_to_swait: add at the tail unless already queued.
    pub fn prepare(&mut self, p: Pid) {
        if self.contains(p) {
            return;
        }
        self.list.push_back(p);
        self.index
            .added(p, self.list.len(), self.list.iter().copied());
    }

    /// __finish_swait: take the entry off the list if it is still queued.
    pub fn finish(&mut self, p: Pid) {
        if !self.index.removed(p) {
            return;
        }
        if let Some(i) = self.list.iter().position(|&q| q == p) {
            self.list.remove(i);
        }
        self.index.shrunk(self.list.len());
    }

    pub fn contains(&self, p: Pid) -> bool {
        self.index
            .contains(p)
            .unwrap_or_else(|| self.list.contains(&p))
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// swake_up_locked: the first waiter, removed from the list (the caller
    /// wakes it). None when nobody waits.
    pub fn swake_up_locked(&mut self) -> Option<Pid> {
        let p = self.list.pop_front()?;
        self.index.removed(p);
        self.index.shrunk(self.list.len());
        Some(p)
    }

    /// The list_splice_init of swake_up_all / swake_up_all_locked: every
    /// waiter, in order, leaving the list empty. swake_up_all then wakes
    /// them one at a time, dropping the lock between two wakeups.
    pub fn splice_all(&mut self) -> VecDeque<Pid> {
        self.index.shrunk(0);
        std::mem::take(&mut self.list)
    }

    /// The waiters in order (for the regular wait-queue variant, whose
    /// entries stay queued until the woken task removes itself).
    pub fn iter(&self) -> impl Iterator<Item = Pid> + '_ {
        self.list.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_and_exclusive() {
        let mut q = SwaitQueue::default();
        q.prepare(3);
        q.prepare(1);
        q.prepare(3);
        assert_eq!(q.len(), 2);
        assert_eq!(q.swake_up_locked(), Some(3));
        q.prepare(2);
        assert_eq!(q.splice_all(), VecDeque::from(vec![1, 2]));
        assert!(q.is_empty());
        assert_eq!(q.swake_up_locked(), None);
    }

    #[test]
    fn finish_removes_only_that_waiter() {
        let mut q = SwaitQueue::default();
        for p in [5, 6, 7] {
            q.prepare(p);
        }
        q.finish(6);
        q.finish(9);
        assert_eq!(q.iter().collect::<Vec<_>>(), vec![5, 7]);
    }
}
