//! CFS bandwidth control, cgroup v2 cpu.max (kernel/sched/fair.c, v6.15):
//! a group's quota per period in a global pool, handed to each CPU's
//! cfs_rq in 5 ms slices; a cfs_rq that runs out and finds the pool empty
//! is throttled (its group entity leaves the hierarchy) until the period
//! timer refills the pool and distributes it.
//!
//! Runtime a cfs_rq gives back on its last dequeue goes to the pool; when
//! the pool then holds more than a slice and some cfs_rq is throttled, the
//! slack timer hands it out 5 ms later.
//!
//! A task in the kernel when its group runs out is not stopped there: as
//! with 6.18's task-based throttling it runs on to its return to user
//! space, where the group is throttled (`check_cfs_rq_runtime`,
//! `throttle_due`). The rest is v6.15's whole-group model: the group
//! entity leaves the hierarchy then, rather than each task at its own
//! return to user space.
//!
//! Deviations: remote unthrottles happen at once instead of through an
//! async CSD, and there is no burst.

use super::fair::{
    se_group, DEQUEUE_DELAYED, DEQUEUE_SLEEP, DEQUEUE_SPECIAL, ENQUEUE_WAKEUP, GROUP_SE,
};
use super::preempt::{Cause, Point};
use super::task::Pid;
use super::Kernel;
use crate::engine::EventKind;

/// sysctl_sched_cfs_bandwidth_slice: 5 ms.
pub const BANDWIDTH_SLICE_NS: i64 = 5_000_000;
/// min_cfs_rq_runtime: a cfs_rq keeps 1 ms when it returns runtime.
const MIN_CFS_RQ_RUNTIME_NS: i64 = 1_000_000;
/// cfs_bandwidth_slack_period: 5 ms.
const SLACK_PERIOD_NS: u64 = 5_000_000;
/// min_bandwidth_expiration: no slack distribution this close to a refill.
const MIN_BANDWIDTH_EXPIRATION_NS: u64 = 2_000_000;
/// Timer ids of the bandwidth period timers start here (see engine slots).
pub const BW_TIMER_BASE: usize = 1 << 19;
/// ... and those of the slack timers here (task groups < 2^18).
pub const BW_SLACK_BASE: usize = BW_TIMER_BASE + (1 << 18);

/// struct cfs_bandwidth of one task group.
#[derive(Clone, Debug, Default)]
pub struct CfsBandwidth {
    pub quota: u64,
    pub period: u64,
    /// The pool left in this period.
    pub runtime: i64,
    pub timer_active: bool,
    /// When the period timer fires next.
    period_expires: u64,
    /// The slack timer is armed.
    slack_started: bool,
    /// No runtime was handed out since the last period (the timer stops).
    pub idle: bool,
    /// The CPUs whose cfs_rq of this group is throttled, in throttle order.
    pub throttled: Vec<usize>,
    pub nr_periods: u64,
    pub nr_throttled: u64,
    pub throttled_time: u64,
    /// Slack timer runs that handed out returned runtime.
    pub nr_slack_distributions: u64,
    /// When each CPU's cfs_rq was throttled (for throttled_time).
    throttled_at: Vec<u64>,
}

impl Kernel {
    /// Set up the pools of groups with a cpu.max quota and enable runtime
    /// accounting on their cfs_rqs.
    pub fn init_bandwidth(&mut self) {
        let n = self.rqs.len();
        for tg in 0..self.groups.count() {
            let Some((quota, period)) = self.groups.tgs[tg].quota else {
                continue;
            };
            self.bandwidth[tg] = CfsBandwidth {
                quota,
                period,
                runtime: quota as i64,
                throttled_at: vec![0; n],
                ..Default::default()
            };
            for rq in &mut self.rqs {
                rq.gcfs[tg].runtime_enabled = true;
            }
            self.bandwidth_on = true;
        }
    }

    /// assign_cfs_rq_runtime: top the cfs_rq up to one slice from the pool.
    /// Returns whether it has runtime left.
    fn assign_cfs_rq_runtime(&mut self, cpu: usize, c: usize) -> bool {
        let want = BANDWIDTH_SLICE_NS - self.rqs[cpu].gcfs[c].runtime_remaining;
        self.start_cfs_bandwidth(c);
        let b = &mut self.bandwidth[c];
        let mut amount = 0;
        if b.runtime > 0 {
            amount = b.runtime.min(want);
            b.runtime -= amount;
            b.idle = false;
        }
        let cfs = &mut self.rqs[cpu].gcfs[c];
        cfs.runtime_remaining += amount;
        cfs.runtime_remaining > 0
    }

    /// __account_cfs_rq_runtime once update_curr has run the slice out:
    /// refill, or have curr rescheduled so that the group gets throttled.
    pub(super) fn account_cfs_rq_runtime(&mut self, cpu: usize, c: usize) {
        if !self.assign_cfs_rq_runtime(cpu, c) && self.rqs[cpu].gcfs[c].curr.is_some() {
            self.set_need_resched(cpu, Some(cpu), false, Cause::Other);
        }
    }

    /// check_cfs_rq_runtime: throttle a cfs_rq whose runtime is gone,
    /// unless its running task is being preempted inside the kernel: as in
    /// 6.18's task-based throttling, that task runs on to its return to
    /// user space, where `throttle_due` has it throttled.
    pub(super) fn check_cfs_rq_runtime(&mut self, cpu: usize, c: usize) -> bool {
        let cfs = &self.rqs[cpu].gcfs[c];
        if !cfs.runtime_enabled || cfs.runtime_remaining > 0 {
            return false;
        }
        if cfs.throttled {
            return true;
        }
        if self.preempted_in_kernel(cpu, c) {
            return false;
        }
        self.throttle_cfs_rq(cpu, c)
    }

    /// The running task of group `c`'s hierarchy is still runnable and is
    /// being preempted at a point inside the kernel.
    fn preempted_in_kernel(&self, cpu: usize, c: usize) -> bool {
        let rq = &self.rqs[cpu];
        let Some(p) = rq.curr else { return false };
        let t = &self.tasks[p];
        let in_kernel = !matches!(rq.pre.point, Point::User | Point::IrqUser);
        t.on_rq && rq.need_resched && in_kernel && self.groups.is_descendant(t.tg, c)
    }

    /// On `p`'s way back to user space: a group of its hierarchy ran out of
    /// runtime and is not throttled yet (its throttle was put off while `p`
    /// was in the kernel). The task_work of 6.18's task-based throttling.
    pub(super) fn throttle_due(&self, cpu: usize, p: Pid) -> bool {
        let mut g = self.tasks[p].tg;
        while g != 0 {
            let cfs = &self.rqs[cpu].gcfs[g];
            if cfs.runtime_enabled && cfs.runtime_remaining <= 0 && !cfs.throttled {
                return true;
            }
            g = self.groups.parent(g);
        }
        false
    }

    /// check_enqueue_throttle: a group waking with no runtime left is
    /// throttled before it can run.
    pub(super) fn check_enqueue_throttle(&mut self, cpu: usize, c: usize) {
        let cfs = &self.rqs[cpu].gcfs[c];
        if !cfs.runtime_enabled || cfs.curr.is_some() || cfs.throttled {
            return;
        }
        if cfs.runtime_remaining <= 0 && !self.assign_cfs_rq_runtime(cpu, c) {
            self.throttle_cfs_rq(cpu, c);
        }
    }

    /// return_cfs_rq_runtime: the last entity left; give back all but 1 ms.
    pub(super) fn return_cfs_rq_runtime(&mut self, cpu: usize, c: usize) {
        let cfs = &mut self.rqs[cpu].gcfs[c];
        if !cfs.runtime_enabled || cfs.nr_queued > 0 {
            return;
        }
        let slack = cfs.runtime_remaining - MIN_CFS_RQ_RUNTIME_NS;
        if slack > 0 {
            cfs.runtime_remaining -= slack;
            let b = &mut self.bandwidth[c];
            b.runtime += slack;
            if b.runtime > BANDWIDTH_SLICE_NS && !b.throttled.is_empty() {
                self.start_cfs_slack_bandwidth(c);
            }
        }
    }

    /// runtime_refresh_within: the period timer refills the pool within
    /// `ns` (or is not running).
    fn runtime_refresh_within(&self, c: usize, ns: u64) -> bool {
        let b = &self.bandwidth[c];
        !b.timer_active || b.period_expires.saturating_sub(self.now) < ns
    }

    /// start_cfs_slack_bandwidth: arm the slack timer unless a refill
    /// comes soon or it is armed already.
    fn start_cfs_slack_bandwidth(&mut self, c: usize) {
        if self.runtime_refresh_within(c, SLACK_PERIOD_NS + MIN_BANDWIDTH_EXPIRATION_NS)
            || self.bandwidth[c].slack_started
        {
            return;
        }
        self.bandwidth[c].slack_started = true;
        let at = self.now + SLACK_PERIOD_NS;
        self.events.push(at, EventKind::Timer, BW_SLACK_BASE + c);
    }

    /// sched_cfs_slack_timer → do_sched_cfs_slack_timer: hand the returned
    /// runtime to the throttled cfs_rqs, unless the refill is about due.
    pub fn on_slack_timer(&mut self, c: usize) {
        self.bandwidth[c].slack_started = false;
        if self.runtime_refresh_within(c, MIN_BANDWIDTH_EXPIRATION_NS) {
            return;
        }
        if self.bandwidth[c].runtime > BANDWIDTH_SLICE_NS {
            self.bandwidth[c].nr_slack_distributions += 1;
            self.distribute_cfs_runtime(c);
        }
    }

    /// start_cfs_bandwidth: arm the period timer if it is not running.
    fn start_cfs_bandwidth(&mut self, c: usize) {
        let b = &mut self.bandwidth[c];
        if !b.timer_active {
            b.timer_active = true;
            b.idle = false;
            let at = self.now + b.period;
            b.period_expires = at;
            self.events.push(at, EventKind::Timer, BW_TIMER_BASE + c);
        }
    }

    /// sched_cfs_period_timer → do_sched_cfs_period_timer: refill the pool
    /// and hand it to the throttled cfs_rqs in the order they throttled.
    pub fn on_bandwidth_timer(&mut self, c: usize) {
        let b = &mut self.bandwidth[c];
        b.nr_periods += 1;
        let throttled = !b.throttled.is_empty();
        if b.idle && !throttled {
            b.timer_active = false;
            return;
        }
        b.runtime = b.quota as i64;
        if throttled {
            b.nr_throttled += 1;
        } else {
            b.idle = true;
        }
        let at = self.now + b.period;
        b.period_expires = at;
        self.events.push(at, EventKind::Timer, BW_TIMER_BASE + c);
        self.distribute_cfs_runtime(c);
        self.bandwidth[c].idle &= self.bandwidth[c].throttled.is_empty();
    }

    /// distribute_cfs_runtime
    fn distribute_cfs_runtime(&mut self, c: usize) {
        for cpu in std::mem::take(&mut self.bandwidth[c].throttled) {
            let pool = self.bandwidth[c].runtime;
            if pool <= 0 || !self.rqs[cpu].gcfs[c].throttled {
                self.bandwidth[c].throttled.push(cpu);
                continue;
            }
            let cfs = &mut self.rqs[cpu].gcfs[c];
            let give = (-cfs.runtime_remaining + 1).min(pool);
            cfs.runtime_remaining += give;
            self.bandwidth[c].runtime -= give;
            if self.rqs[cpu].gcfs[c].runtime_remaining > 0 {
                self.unthrottle_cfs_rq(cpu, c);
            } else {
                self.bandwidth[c].throttled.push(cpu);
            }
        }
    }

    /// The throttle_count of `c` and the groups below it on `cpu`
    /// (tg_throttle_down / tg_unthrottle_up); the PELT clock of a cfs_rq
    /// stops while its count is non-zero.
    fn throttle_counts(&mut self, cpu: usize, c: usize, down: bool) {
        let now = self.clock_pelt(cpu);
        for g in 1..self.groups.count() {
            if !self.groups.is_descendant(g, c) {
                continue;
            }
            let cfs = &mut self.rqs[cpu].gcfs[g];
            if down {
                if cfs.throttle_count == 0 {
                    cfs.throttled_clock_pelt = now;
                }
                cfs.throttle_count += 1;
            } else {
                cfs.throttle_count -= 1;
                if cfs.throttle_count == 0 {
                    cfs.throttled_clock_pelt_time += now - cfs.throttled_clock_pelt;
                    cfs.unthrottled_at = self.now;
                }
            }
        }
    }

    /// throttle_cfs_rq: take the group's entity (and ancestors it leaves
    /// empty) off the hierarchy; its tasks stop counting in nr_running.
    fn throttle_cfs_rq(&mut self, cpu: usize, c: usize) -> bool {
        if self.assign_cfs_rq_runtime(cpu, c) {
            return false;
        }
        self.touch_cpu(cpu);
        self.throttle_counts(cpu, c, true);
        let (queued, runnable) = {
            let q = &self.rqs[cpu].gcfs[c];
            (q.h_nr_queued as isize, q.h_nr_runnable as isize)
        };
        let counted = self.dequeue_group_se(cpu, c, queued, runnable);
        if counted {
            self.rqs[cpu].nr_running -= queued as usize;
        }
        self.rqs[cpu].gcfs[c].throttled = true;
        let b = &mut self.bandwidth[c];
        b.throttled.push(cpu);
        b.throttled_at[cpu] = self.now;
        self.stats.cfs_throttled += 1;
        true
    }

    /// The two dequeue walks of throttle_cfs_rq. Returns whether they
    /// reached the root.
    fn dequeue_group_se(&mut self, cpu: usize, c: usize, queued: isize, runnable: isize) -> bool {
        let mut se = Some(GROUP_SE + c);
        while let Some(s) = se {
            let g = se_group(s).expect("group entity");
            if !self.rqs[cpu].gse[g].on_rq {
                return false;
            }
            let mut flags = DEQUEUE_SLEEP | DEQUEUE_SPECIAL;
            if self.rqs[cpu].gse[g].sched_delayed {
                flags |= DEQUEUE_DELAYED;
            }
            self.dequeue_entity_at(cpu, s, flags);
            let p = self.cfs_of(s);
            self.add_h_counts(cpu, p, -queued, -runnable);
            se = (p != 0).then_some(GROUP_SE + p);
            if self.cfs_rq(cpu, p).load != 0 {
                break;
            }
        }
        while let Some(s) = se {
            let g = se_group(s).expect("group entity");
            if !self.rqs[cpu].gse[g].on_rq {
                return false;
            }
            self.update_queued_at(cpu, s, false);
            let p = self.cfs_of(s);
            self.add_h_counts(cpu, p, -queued, -runnable);
            se = (p != 0).then_some(GROUP_SE + p);
        }
        true
    }

    /// unthrottle_cfs_rq: put the group's entity back and wake an idle CPU.
    fn unthrottle_cfs_rq(&mut self, cpu: usize, c: usize) {
        self.touch_cpu(cpu);
        self.rqs[cpu].gcfs[c].throttled = false;
        let b = &mut self.bandwidth[c];
        b.throttled_time += self.now - b.throttled_at[cpu];
        self.throttle_counts(cpu, c, false);
        let q = &self.rqs[cpu].gcfs[c];
        if q.load == 0 {
            return;
        }
        let (queued, runnable) = (q.h_nr_queued as isize, q.h_nr_runnable as isize);
        if self.enqueue_group_se(cpu, c, queued, runnable) {
            self.rqs[cpu].nr_running += queued as usize;
            self.lb.rd_overloaded |= self.rqs[cpu].nr_running >= 2;
        }
        if self.rqs[cpu].curr.is_none() && self.rqs[cpu].cfs.nr_queued > 0 {
            let timer_cpu = self.bandwidth_timer_cpu(cpu);
            self.set_need_resched(cpu, Some(timer_cpu), false, Cause::Other);
        }
    }

    /// The CPU the period timer interrupts (the first one: hrtimers of the
    /// bandwidth pool stay where they were first armed).
    fn bandwidth_timer_cpu(&self, _cpu: usize) -> usize {
        0
    }

    /// The two enqueue walks of unthrottle_cfs_rq. Returns whether they
    /// reached the root.
    fn enqueue_group_se(&mut self, cpu: usize, c: usize, queued: isize, runnable: isize) -> bool {
        let mut se = Some(GROUP_SE + c);
        while let Some(s) = se {
            let g = se_group(s).expect("group entity");
            let (on_rq, delayed) = {
                let e = &self.rqs[cpu].gse[g];
                (e.on_rq, e.sched_delayed)
            };
            if delayed {
                self.dequeue_entity_at(cpu, s, DEQUEUE_SLEEP | DEQUEUE_DELAYED);
            } else if on_rq {
                break;
            }
            self.enqueue_entity_at(cpu, s, ENQUEUE_WAKEUP);
            let p = self.cfs_of(s);
            if self.add_h_counts(cpu, p, queued, runnable) {
                return false;
            }
            se = (p != 0).then_some(GROUP_SE + p);
        }
        while let Some(s) = se {
            self.update_queued_at(cpu, s, true);
            let p = self.cfs_of(s);
            if self.add_h_counts(cpu, p, queued, runnable) {
                return false;
            }
            se = (p != 0).then_some(GROUP_SE + p);
        }
        true
    }
}
