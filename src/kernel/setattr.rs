//! A running task changing its own placement and class: sched_setaffinity
//! (core.c `__set_cpus_allowed_ptr`, `affine_move_task`,
//! `migration_cpu_stop`), a move to another cgroup (core.c
//! `sched_move_task`, fair.c `task_change_group_fair`) and
//! sched_setscheduler (core.c `__sched_setscheduler`). All are made by the
//! task on itself (rt-app's per-phase `cpus`, `taskgroup`, `policy` and
//! `priority`), so the task is always rq->curr here.

use super::fair::DEQUEUE_MIGRATING;
use super::fair_class::Dequeued;
use super::prio::LoadWeight;
use super::rt::Policy;
use super::task::Pid;
use super::Kernel;

/// A scheduling class and priority to switch to: the RT priority for
/// FIFO/RR, the nice value otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedParam {
    pub policy: Policy,
    pub prio: i32,
}

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
        if self.is_dl(p) {
            self.update_curr_dl(cpu);
        } else if self.is_rt(p) {
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
    /// (the new group may be throttled). An RT or DL task only changes
    /// group.
    /// Returns whether `p` must reschedule.
    pub fn sched_move_task(&mut self, p: Pid, cpu: usize, tg: usize) -> bool {
        self.touch_cpu(cpu);
        self.touch_task(p);
        if self.tasks[p].tg == tg {
            return false;
        }
        if self.is_rt(p) || self.is_dl(p) {
            self.update_curr_rt(cpu);
            self.update_curr_dl(cpu);
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

    /// The parameters `policy` (None: `p`'s current one) and `prio` ask for.
    pub fn sched_param(&self, p: Pid, policy: Option<Policy>, prio: i32) -> SchedParam {
        SchedParam {
            policy: policy.unwrap_or(self.tasks[p].policy),
            prio,
        }
    }

    /// Whether `p` already runs with `param` (rt-app makes no call then).
    pub fn sched_param_equal(&self, p: Pid, param: SchedParam) -> bool {
        let t = &self.tasks[p];
        t.policy == param.policy
            && match param.policy.is_rt() {
                true => t.rt_prio as i32 == param.prio,
                false => param.policy == Policy::Idle || t.nice == param.prio,
            }
    }

    /// The kernel's p->prio: 99 - rt_priority for RT, 120 + nice otherwise.
    fn kernel_prio(&self, p: Pid) -> i32 {
        let t = &self.tasks[p];
        match t.policy.is_rt() {
            true => 99 - t.rt_prio as i32,
            false => 120 + t.nice,
        }
    }

    /// `__sched_setscheduler` for the running `p` on `cpu`: dequeue and
    /// put_prev in its old class, set the policy and priority (a fair
    /// weight change rescales its PELT load, `reweight_task_fair`; leaving
    /// or joining the fair class detaches or attaches its averages,
    /// `switched_from_fair`/`switched_to_fair`), enqueue in the new class
    /// (at the head of its RT list when its priority dropped) and
    /// set_next. Returns true: the caller reschedules, as the class change
    /// checks do when another task should now run. RT push/pull balance
    /// callbacks are not modelled.
    pub fn sched_setscheduler(&mut self, p: Pid, cpu: usize, param: SchedParam) -> bool {
        self.touch_cpu(cpu);
        self.touch_task(p);
        let (was_rt, to_rt) = (self.is_rt(p), param.policy.is_rt());
        let old_prio = self.kernel_prio(p);
        let counted = if was_rt {
            self.dequeue_rt(cpu, p);
            true
        } else {
            let flags = if to_rt { DEQUEUE_MIGRATING } else { 0 };
            let done = self.dequeue_task_fair(cpu, p, flags);
            self.put_prev_task_fair(cpu, p);
            done == (Dequeued::Done { counted: true })
        };
        if counted {
            self.rqs[cpu].nr_running -= 1;
        }
        let t = &mut self.tasks[p];
        t.policy = param.policy;
        match to_rt {
            true => t.rt_prio = param.prio as u32,
            false => {
                t.rt_prio = 0;
                if param.policy != Policy::Idle {
                    t.nice = param.prio;
                }
            }
        }
        if !to_rt {
            let lw = match param.policy {
                Policy::Idle => LoadWeight::idle(),
                _ => LoadWeight::from_nice(self.tasks[p].nice),
            };
            match was_rt {
                true => self.tasks[p].se.load = lw,
                false => self.reweight_task_fair(cpu, p, lw),
            }
        }
        let counted = if to_rt {
            self.tasks[p].se.avg.attached &= was_rt;
            let head = old_prio < self.kernel_prio(p);
            self.enqueue_rt(cpu, p, head);
            self.tasks[p].se.exec_start = self.now;
            true
        } else {
            self.tasks[p].se.avg.attached &= !was_rt;
            let counted = self.enqueue_task_fair(cpu, p, 0);
            self.put_prev_set_next_fair(cpu, None, p);
            counted
        };
        if counted {
            self.rqs[cpu].nr_running += 1;
        }
        true
    }
}
