//! Remote wakeups through the target CPU's wakelist (kernel/sched/core.c,
//! TTWU_QUEUE; seed 000).
//!
//! Instead of taking the target's rq lock and enqueueing there itself, a
//! waker pushes the task on the target's lock-free call-single list and
//! sends a function-call IPI, unless the target idles with
//! TIF_POLLING_NRFLAG set. The target activates its own wakees
//! (`sched_ttwu_pending`), touching only its own cache lines.

use super::core::WF_MIGRATED;
use super::fair::{ENQUEUE_MIGRATED, ENQUEUE_WAKEUP};
use super::features::{Feature, Wakelist};
use super::noise::By;
use super::task::{Pid, TaskState};
use super::Kernel;
use crate::machine::cost::TtwuPath;

impl Kernel {
    /// ttwu_queue_cond: whether a wakeup from `from` onto `cpu` goes through
    /// the wakelist. `on_cpu`: the wakee is still switching out there.
    pub fn ttwu_queue_cond(&self, cpu: usize, from: usize, on_cpu: bool) -> bool {
        if !self.cfg.features.enabled(Feature::TtwuQueue) {
            return false;
        }
        if self.cfg.wakelist_cross_llc && !self.machine.shares_llc(from, cpu) {
            return true;
        }
        if cpu == from {
            return false;
        }
        let nr = self.rqs[cpu].nr_running;
        match self.cfg.wakelist {
            Wakelist::OnCpuNrLe1 => on_cpu && nr <= 1,
            Wakelist::OnCpuNr0 => on_cpu && nr == 0,
            Wakelist::Idle => nr == 0,
        }
    }

    /// __ttwu_queue_wakelist: push `p` on `cpu`'s wakelist. The waker pays
    /// the wakeup minus the activation, one cache-line transfer for the
    /// llist_add, and the IPI if it must send one.
    pub fn ttwu_queue_wakelist(
        &mut self,
        p: Pid,
        cpu: usize,
        wake_flags: u32,
        from: usize,
        waker: Option<Pid>,
    ) {
        self.stats.ttwu_wakelist += 1;
        let line_ns = self.machine.line_transfer_ns(from, cpu);
        let queue = self
            .machine
            .cost
            .ttwu_waker_ns(TtwuPath::Wakelist { line_ns });
        let queue = self.vary(queue, waker.map_or(By::Cpu(from), By::Task));
        self.charge_waker(waker, queue);
        let t = &mut self.tasks[p];
        t.state = TaskState::Waking;
        t.remote_wakeup = wake_flags & WF_MIGRATED != 0;
        let rq = &mut self.rqs[cpu];
        let first = rq.wake_list.is_empty();
        rq.wake_list.push(p);
        rq.ttwu_pending = true;
        // The IPI goes out only when the list was empty: otherwise one is
        // already on its way (llist_add's return value).
        if first {
            let after = self.waker_elapsed(waker, queue);
            self.kick_cpu(cpu, Some(from), after);
        }
    }

    /// sched_ttwu_pending: the target CPU takes its own rq lock and
    /// activates every queued wakee in arrival order. The time it spends is
    /// charged to the CPU (rq.irq_ns) before it runs anything else.
    pub fn sched_ttwu_pending(&mut self, cpu: usize) {
        let list = std::mem::take(&mut self.rqs[cpu].wake_list);
        self.rqs[cpu].ttwu_pending = false;
        let c = &self.machine.cost;
        let hold = c.activate_ns * list.len() as u64;
        let hold = self.vary(hold, By::Cpu(cpu));
        let wait = self.take_rq_lock(cpu, hold);
        self.rqs[cpu].irq_ns += wait + hold;
        for &p in &list {
            let mut flags = ENQUEUE_WAKEUP;
            if std::mem::take(&mut self.tasks[p].remote_wakeup) {
                flags |= ENQUEUE_MIGRATED;
            }
            self.tasks[p].state = TaskState::Running;
            self.ttwu_do_activate(cpu, p, flags, cpu, 0);
        }
        self.rqs[cpu].wake_list = list;
        self.rqs[cpu].wake_list.clear();
    }
}
