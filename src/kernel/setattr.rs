//! A running task changing its own placement: sched_setaffinity (core.c
//! `__set_cpus_allowed_ptr`, `affine_move_task`, `migration_cpu_stop`) and
//! a move to another cgroup (core.c `sched_move_task`, fair.c
//! `task_change_group_fair`). Both are made by the task on itself (rt-app's
//! per-phase `cpus` and `taskgroup`), so the task is always rq->curr here.

use super::fair::DEQUEUE_MIGRATING;
use super::fair_class::Dequeued;
use super::task::Pid;
use super::Kernel;

impl Kernel {
    /// `__set_cpus_allowed_ptr` for the running `p` on `cpu`: install the
    /// new mask; if `cpu` is still allowed nothing moves. Otherwise
    /// `affine_move_task` queues the stopper on `cpu`, which preempts `p`
    /// and moves it (`migration_cpu_stop`, in `schedule`). Returns whether
    /// `p` must give up the CPU for that.
    pub fn set_cpus_allowed(&mut self, p: Pid, cpu: usize, cpus: Vec<usize>) -> bool {
        self.touch_task(p);
        let all = (0..self.machine.nr_cpus()).all(|c| cpus.contains(&c));
        self.tasks[p].allowed = (!all).then_some(cpus);
        !self.tasks[p].is_allowed(cpu)
    }

    /// Whether `p`'s mask is exactly `cpus` (a set that changes nothing
    /// costs rt-app no system call: it compares first).
    pub fn cpus_allowed_equal(&self, p: Pid, cpus: &[usize]) -> bool {
        let t = &self.tasks[p];
        (0..self.machine.nr_cpus()).all(|c| t.is_allowed(c) == cpus.contains(&c))
    }

    /// `migration_cpu_stop`, run by the stopper on `cpu` right after it
    /// preempted `prev`: a runnable `prev` its mask no longer allows goes
    /// to `cpumask_any_and_distribute(active, mask)` (`move_queued_task`,
    /// which checks the destination for preemption).
    pub(super) fn migration_cpu_stop(&mut self, cpu: usize, prev: Option<Pid>) {
        let Some(p) = prev else { return };
        let t = &self.tasks[p];
        if !t.on_rq || t.se.sched_delayed || t.is_allowed(cpu) {
            return;
        }
        let dst = self.any_and_distribute(cpu, p);
        if self.is_rt(p) {
            self.update_curr_rt(cpu);
        } else {
            self.put_prev_task_fair(cpu, p);
        }
        self.move_queued_task(p, cpu, dst);
        self.wakeup_preempt(dst, p, Some(cpu));
    }

    /// `cpumask_any_and_distribute` on `cpu`: the first allowed CPU after
    /// the one this CPU handed out last (initially 0, so the first pick
    /// skips CPU 0), wrapping around.
    fn any_and_distribute(&mut self, cpu: usize, p: Pid) -> usize {
        let n = self.machine.nr_cpus();
        let prev = self.distribute_prev[cpu];
        let next = (1..=n)
            .map(|i| (prev + i) % n)
            .find(|&c| self.tasks[p].is_allowed(c))
            .expect("a mask allows at least one CPU");
        self.distribute_prev[cpu] = next;
        next
    }

    /// `sched_move_task` for the running `p` on `cpu`, into group `tg`:
    /// dequeue (its PELT averages leave the old cfs_rq, as
    /// `detach_task_cfs_rq`), put_prev, change the group, enqueue (attached
    /// to the new cfs_rq, `attach_task_cfs_rq`), set_next, and reschedule
    /// (the new group may be throttled). An RT task only changes group.
    /// Returns whether `p` must reschedule.
    pub fn sched_move_task(&mut self, p: Pid, cpu: usize, tg: usize) -> bool {
        self.touch_cpu(cpu);
        self.touch_task(p);
        if self.tasks[p].tg == tg {
            return false;
        }
        if self.is_rt(p) {
            self.update_curr_rt(cpu);
            self.change_group_usage(p, tg);
            return false;
        }
        if self.dequeue_task_fair(cpu, p, DEQUEUE_MIGRATING) == (Dequeued::Done { counted: true }) {
            self.rqs[cpu].nr_running -= 1;
        }
        self.put_prev_task_fair(cpu, p);
        self.change_group_usage(p, tg);
        self.tasks[p].se.avg.attached = false;
        if self.enqueue_task_fair(cpu, p, 0) {
            self.rqs[cpu].nr_running += 1;
        }
        self.put_prev_set_next_fair(cpu, None, p);
        true
    }

    /// Set `p`'s group, its CPU time so far staying with the old group and
    /// its ancestors (cpu.stat usage is charged as it is spent).
    fn change_group_usage(&mut self, p: Pid, tg: usize) {
        let spent = self.tasks[p].se.sum_exec_runtime as i64;
        let old = self.tasks[p].tg;
        for (g, sign) in [(old, 1), (tg, -1)] {
            let mut at = Some(g);
            while let Some(x) = at {
                self.groups.tgs[x].usage_moved += sign * spent;
                at = self.groups.tgs[x].parent;
            }
        }
        self.tasks[p].tg = tg;
    }
}
