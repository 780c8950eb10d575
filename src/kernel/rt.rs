//! The RT class (kernel/sched/rt.c): SCHED_FIFO and SCHED_RR with
//! priorities 1-99 above every fair task, the 100 ms RR slice, placement on
//! the CPU running the lowest priority (find_lowest_rq, the push at wakeup),
//! push of a preempted task and pull by a CPU about to run a lower class,
//! and RT bandwidth: classic throttling (950 ms per 1 s, before v6.12) or
//! the fair deadline server (50 ms per 1 s for starved fair tasks, v6.12+;
//! dl_server.rs).

use super::core::Activity;
use super::preempt::{Cause, Req};
use super::task::Pid;
use super::tracepoint::WakeupRule;
use super::Kernel;
use crate::engine::{EventKind, Time};

/// sched_rr_timeslice_ms = RR_TIMESLICE (100 ms).
pub const RR_TIMESLICE_NS: u64 = 100_000_000;
/// sched_rt_period_us and sched_rt_runtime_us.
pub const RT_PERIOD_NS: u64 = 1_000_000_000;
pub const RT_RUNTIME_NS: u64 = 950_000_000;
/// The fair server's runtime per period (debugfs fair_server/cpuN/runtime).
pub const FAIR_SERVER_RUNTIME_NS: u64 = 50_000_000;
/// cpupri's CPUPRI_HIGHER: a CPU running a DL task, above every RT one.
const CPUPRI_HIGHER: u32 = 101;

/// A task's scheduling policy (sched_setscheduler).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Policy {
    #[default]
    Normal,
    Batch,
    Idle,
    Fifo,
    Rr,
    /// SCHED_DEADLINE (deadline.rs).
    Deadline,
}

impl Policy {
    pub fn parse(s: &str) -> Option<Policy> {
        Some(match s {
            "normal" | "other" => Policy::Normal,
            "batch" => Policy::Batch,
            "idle" => Policy::Idle,
            "fifo" => Policy::Fifo,
            "rr" => Policy::Rr,
            "deadline" => Policy::Deadline,
            _ => return None,
        })
    }

    pub fn is_rt(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }
}

/// How RT tasks are kept from starving fair ones (`kernel.rt_bandwidth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtBandwidth {
    /// sched_rt_runtime_us throttling: after 950 ms of RT in a 1 s period,
    /// RT tasks wait for the next period (the CPU idles if nothing else).
    Throttle,
    /// v6.12+: a deferred deadline server per CPU gives fair tasks 50 ms
    /// per 1 s period once they have been starved to its zero laxity
    /// (dl_server.rs).
    FairServer,
}

/// struct rt_rq, reduced: queued RT tasks (curr included, as in the
/// kernel) by priority, FIFO within one, and the bandwidth state.
#[derive(Clone, Debug, Default)]
pub struct RtRq {
    pub queue: Vec<Pid>,
    /// RT runtime in the current period (throttling).
    pub rt_time: u64,
    pub period_start: Time,
    /// RT tasks may not run until this time (throttled).
    pub blocked_until: Time,
}

impl RtRq {
    /// enqueue_task_rt: behind tasks of higher or equal priority
    /// (`head`: in front of its equals, for a preempted task).
    fn enqueue(&mut self, prio: &impl Fn(Pid) -> u32, p: Pid, head: bool) {
        let pr = prio(p);
        let at = self
            .queue
            .iter()
            .position(|&q| if head { prio(q) <= pr } else { prio(q) < pr })
            .unwrap_or(self.queue.len());
        self.queue.insert(at, p);
    }

    fn dequeue(&mut self, p: Pid) {
        if let Some(i) = self.queue.iter().position(|&q| q == p) {
            self.queue.remove(i);
        }
    }
}

impl Kernel {
    pub fn is_rt(&self, p: Pid) -> bool {
        self.tasks[p].policy.is_rt()
    }

    /// The priority `cpu` runs at, for find_lowest_rq (cpupri): 0 idle,
    /// 1 a fair task, 1 + rt_priority for an RT one, above all for DL.
    fn cpu_prio(&self, cpu: usize) -> u32 {
        match self.rqs[cpu].curr {
            None if self.rqs[cpu].nr_running == 0 => 0,
            None => 1,
            Some(c) if self.is_rt(c) => 1 + self.tasks[c].rt_prio,
            Some(c) if self.is_dl(c) => CPUPRI_HIGHER,
            Some(_) => 1,
        }
    }

    /// enqueue_task_rt
    pub fn enqueue_rt(&mut self, cpu: usize, p: Pid, head: bool) {
        let prio = |q: Pid| self.tasks[q].rt_prio;
        let mut rt = std::mem::take(&mut self.rqs[cpu].rt);
        rt.enqueue(&prio, p, head);
        self.rqs[cpu].rt = rt;
        if self.tasks[p].rr_left == 0 {
            self.tasks[p].rr_left = RR_TIMESLICE_NS;
        }
    }

    /// dequeue_task_rt
    pub fn dequeue_rt(&mut self, cpu: usize, p: Pid) {
        self.update_curr_rt(cpu);
        self.rqs[cpu].rt.dequeue(p);
    }

    /// update_curr_rt: charge the running RT task and the rq's RT time.
    pub fn update_curr_rt(&mut self, cpu: usize) {
        let Some(c) = self.rqs[cpu].curr.filter(|&c| self.is_rt(c)) else {
            return;
        };
        let se = &mut self.tasks[c].se;
        let delta = self.now.saturating_sub(se.exec_start);
        se.exec_start = self.now;
        se.sum_exec_runtime += delta;
        let t = &mut self.tasks[c];
        t.rr_left = t.rr_left.saturating_sub(delta);
        self.rqs[cpu].rt.rt_time += delta;
    }

    /// pick_next_task_rt: the first queued RT task unless bandwidth control
    /// holds RT back. A fair prev is put back first.
    pub fn pick_next_rt(&mut self, cpu: usize, prev: Option<Pid>) -> Option<Pid> {
        let rt = &self.rqs[cpu].rt;
        let next = *rt.queue.first()?;
        if self.now < rt.blocked_until {
            return None;
        }
        if let Some(p) = prev.filter(|&p| !self.is_rt(p) && self.rqs[cpu].cfs.curr.is_some()) {
            self.put_prev_fair(cpu, p);
        }
        self.tasks[next].se.exec_start = self.now;
        if self.rqs[cpu].rt.queue.len() > 1 {
            self.push_rt_tasks(cpu, next);
        }
        Some(next)
    }

    /// sched_setscheduler for a task not yet started: SCHED_IDLE gets the
    /// idle weight (WEIGHT_IDLEPRIO 3, WMULT_IDLEPRIO).
    pub fn set_scheduler(&mut self, p: Pid, policy: Policy, rt_prio: u32) {
        let t = &mut self.tasks[p];
        t.policy = policy;
        t.rt_prio = if policy.is_rt() { rt_prio } else { 0 };
        if policy == Policy::Idle {
            t.se.load = super::prio::LoadWeight::idle();
        }
    }

    /// __setparam_fair for a task not yet started: sched_attr.sched_runtime
    /// becomes its custom slice, clamped to 0.1–100 ms.
    pub fn set_slice(&mut self, p: Pid, runtime_ns: u64) {
        let se = &mut self.tasks[p].se;
        se.custom_slice = true;
        se.slice = runtime_ns.clamp(100_000, 100_000_000);
    }

    /// The class test of wakeup_preempt: a fair wakee never preempts an RT
    /// or DL task (check_preempt_wakeup_fair weighs it against a fair one).
    pub fn fair_wakeup_may_preempt(&self, cpu: usize) -> bool {
        self.rqs[cpu]
            .curr
            .is_none_or(|c| !self.is_rt(c) && !self.is_dl(c))
    }

    /// wakeup_preempt across and within classes for an RT wakee: never a
    /// DL task; it preempts any fair task (a higher class: the full bit under the lazy
    /// models that distinguish it) and a lower-priority RT task.
    pub fn wakeup_preempt_rt(&mut self, cpu: usize, p: Pid, from: Option<usize>) {
        let preempt = match self.rqs[cpu].curr {
            None => true,
            Some(c) if self.is_rt(c) => self.tasks[p].rt_prio > self.tasks[c].rt_prio,
            Some(c) => !self.is_dl(c),
        };
        if preempt && self.now >= self.rqs[cpu].rt.blocked_until {
            let how = (Req::HigherClass, Cause::Wakeup);
            self.resched_for_wakee((cpu, from), p, how, self.class_rule(cpu, WakeupRule::Rt));
        }
    }

    /// select_task_rq_rt → find_lowest_rq: stay on the previous CPU if
    /// `p` would run there at once, else the allowed CPU running the lowest
    /// priority (an idle one first), the previous CPU breaking ties, then
    /// the one nearest it.
    pub fn select_task_rq_rt(&self, p: Pid, prev: usize) -> usize {
        let prio = 1 + self.tasks[p].rt_prio;
        if self.tasks[p].is_allowed(prev) && self.cpu_prio(prev) < prio {
            let idle_or_fair = self.cpu_prio(prev) <= 1;
            if idle_or_fair || self.rqs[prev].rt.queue.is_empty() {
                return prev;
            }
        }
        self.find_lowest_rq(p, prev, None).unwrap_or(prev)
    }

    /// find_lowest_rq: the allowed CPU (other than `skip`) running the
    /// lowest priority with the fewest RT tasks queued, nearest `near`.
    fn find_lowest_rq(&self, p: Pid, near: usize, skip: Option<usize>) -> Option<usize> {
        (0..self.machine.nr_cpus())
            .filter(|&c| self.tasks[p].is_allowed(c) && Some(c) != skip)
            .min_by_key(|&c| {
                let queued_rt = self.rqs[c].rt.queue.len();
                (self.cpu_prio(c), queued_rt, c != near, c.abs_diff(near))
            })
    }

    /// push_rt_tasks (the balance callback after a pick): queued RT tasks
    /// other than the one about to run move to a CPU running something of
    /// lower priority, which is told to reschedule.
    fn push_rt_tasks(&mut self, cpu: usize, next: Pid) {
        let waiting: Vec<Pid> = self.rqs[cpu]
            .rt
            .queue
            .iter()
            .copied()
            .filter(|&q| q != next && Some(q) != self.rqs[cpu].curr)
            .collect();
        for q in waiting {
            let Some(dst) = self.find_lowest_rq(q, cpu, Some(cpu)) else {
                continue;
            };
            if self.cpu_prio(dst) < 1 + self.tasks[q].rt_prio && self.rqs[dst].rt.queue.is_empty() {
                self.move_queued_task(q, cpu, dst);
                self.stats.rt_pushes += 1;
                self.wakeup_preempt_rt(dst, q, Some(cpu));
            }
        }
    }

    /// pull_rt_task: a CPU about to run a fair task or idle takes the
    /// highest-priority RT task waiting (queued, not running) elsewhere.
    pub fn pull_rt_task(&mut self, cpu: usize) -> bool {
        let mut best: Option<(u32, usize, Pid)> = None;
        for src in 0..self.rqs.len() {
            if src == cpu {
                continue;
            }
            let rq = &self.rqs[src];
            for &q in &rq.rt.queue {
                let better = best.is_none_or(|b| self.tasks[q].rt_prio > b.0);
                if Some(q) != rq.curr && self.tasks[q].is_allowed(cpu) && better {
                    best = Some((self.tasks[q].rt_prio, src, q));
                }
            }
        }
        let Some((_, src, q)) = best else {
            return false;
        };
        self.move_queued_task(q, src, cpu);
        self.stats.rt_pulls += 1;
        true
    }

    /// task_tick_rt and the bandwidth timer, at the tick: an RR task that
    /// used its slice goes behind its equals; RT time past the runtime
    /// throttles RT (`"throttle"`; the fair server is dl_server.rs).
    pub fn task_tick_rt(&mut self, cpu: usize) {
        self.update_curr_rt(cpu);
        self.rt_bandwidth_tick(cpu);
        let Some(c) = self.rqs[cpu].curr.filter(|&c| self.is_rt(c)) else {
            return;
        };
        let t = &mut self.tasks[c];
        if t.policy != Policy::Rr || t.rr_left > 0 {
            return;
        }
        t.rr_left = RR_TIMESLICE_NS;
        let prio = t.rt_prio;
        let equals = self.rqs[cpu]
            .rt
            .queue
            .iter()
            .filter(|&&q| self.tasks[q].rt_prio == prio)
            .count();
        if equals > 1 {
            self.touch_cpu(cpu);
            self.rqs[cpu].rt.dequeue(c);
            self.enqueue_rt(cpu, c, false);
            self.set_need_resched(cpu, Some(cpu), false, Cause::Tick);
        }
    }

    /// A CPU that idles while its RT tasks are held back still wakes when
    /// the hold ends (sched_rt_period_timer).
    pub fn arm_rt_period_timer(&mut self, cpu: usize) {
        let rt = &self.rqs[cpu].rt;
        if !rt.queue.is_empty() && rt.blocked_until > self.now {
            self.events
                .push_earliest(rt.blocked_until, EventKind::Resched, cpu);
        }
    }

    /// That timer on an idle CPU: lift the hold and reschedule.
    pub fn rt_period_expired(&mut self, cpu: usize) {
        let rq = &mut self.rqs[cpu];
        let due = rq.rt.blocked_until != 0 && self.now >= rq.rt.blocked_until;
        if due && !rq.rt.queue.is_empty() && rq.is_idle() {
            rq.rt.blocked_until = 0;
            rq.need_resched = true;
        }
    }

    /// The period timer (sched_rt_period_timer), checked at the tick:
    /// under `"throttle"`, RT past its runtime waits for the next period.
    fn rt_bandwidth_tick(&mut self, cpu: usize) {
        if self.cfg.rt_bandwidth != RtBandwidth::Throttle {
            return;
        }
        let now = self.now;
        // Before v6.12 DL time counted as RT time too (update_curr_dl).
        let rt_running = (self.rqs[cpu].curr).is_some_and(|c| self.is_rt(c) || self.is_dl(c));
        let rq = &mut self.rqs[cpu];
        if now >= rq.rt.period_start + RT_PERIOD_NS {
            rq.rt.period_start = now - now % RT_PERIOD_NS;
            rq.rt.rt_time = 0;
        }
        if rq.rt.rt_time >= RT_RUNTIME_NS && now >= rq.rt.blocked_until {
            rq.rt.blocked_until = rq.rt.period_start + RT_PERIOD_NS;
            self.stats.rt_throttled += 1;
            if rt_running {
                self.set_need_resched(cpu, Some(cpu), false, Cause::Other);
            }
        } else if self.rqs[cpu].rt.blocked_until != 0 && now >= self.rqs[cpu].rt.blocked_until {
            // Unthrottled: let queued RT tasks back on.
            self.rqs[cpu].rt.blocked_until = 0;
            let rt_waiting = !self.rqs[cpu].rt.queue.is_empty() && !rt_running;
            if rt_waiting && !matches!(self.rqs[cpu].act, Activity::Idle { .. }) {
                self.set_need_resched(cpu, Some(cpu), false, Cause::Other);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_orders_by_priority_then_arrival() {
        let prios = [10u32, 50, 10, 99, 50];
        let prio = |p: Pid| prios[p];
        let mut rq = RtRq::default();
        for p in 0..5 {
            rq.enqueue(&prio, p, false);
        }
        assert_eq!(rq.queue, vec![3, 1, 4, 0, 2]);
        rq.dequeue(1);
        rq.enqueue(&prio, 1, true);
        assert_eq!(rq.queue, vec![3, 1, 4, 0, 2]);
        rq.dequeue(1);
        rq.enqueue(&prio, 1, false);
        assert_eq!(rq.queue, vec![3, 4, 1, 0, 2]);
        assert_eq!(Policy::parse("rr"), Some(Policy::Rr));
        assert_eq!(Policy::parse("deadline"), Some(Policy::Deadline));
        assert!(Policy::parse("sporadic").is_none());
    }
}
