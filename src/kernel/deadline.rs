//! The deadline class (kernel/sched/deadline.c, v6.18): SCHED_DEADLINE
//! tasks above RT and fair ones, picked earliest absolute deadline first
//! (EDF), each a constant bandwidth server (CBS): `runtime` ns of CPU per
//! `period`, enforced by throttling a task that used it up until its next
//! period (the dl_timer), the CBS wakeup rule, admission control against
//! the root domain's bandwidth, and placement on a CPU running something
//! later (find_later_rq) at wakeup, push after a pick and pull by a CPU
//! whose DL task left. GRUB reclaiming, the inactive timer (running_bw),
//! HRTICK and priority inheritance are not modelled; docs/model.md says
//! what that changes.

use super::core::Activity;
use super::dl_server::FairServer;
use super::fair::{ENQUEUE_INITIAL, ENQUEUE_WAKEUP};
use super::features::KernelConfig;
use super::noise::By;
use super::preempt::{Cause, Req};
use super::rt::{Policy, RtBandwidth, FAIR_SERVER_RUNTIME_NS, RT_PERIOD_NS, RT_RUNTIME_NS};
use super::task::Pid;
use super::tracepoint::WakeupRule;
use super::Kernel;
use crate::engine::{EventKind, Time};
use crate::machine::Machine;

/// BW_SHIFT: bandwidths are fractions of 1 << 20.
const BW_SHIFT: u32 = 20;
/// DL_SCALE: the CBS overflow test drops this many low bits.
const DL_SCALE: u32 = 10;
/// SCHED_CAPACITY_SHIFT
pub(super) const CAPACITY_SHIFT: u32 = 10;
/// sysctl_sched_dl_period_min and _max (100 µs, 2^22 µs), in ns.
const PERIOD_MIN_NS: u64 = 100_000;
const PERIOD_MAX_NS: u64 = (1 << 22) * 1_000;
/// Timer ids of the tasks' dl_timers start here (tasks < 2^18; the
/// bandwidth timers start at 2^19, see bandwidth.rs).
pub const DL_TIMER_BASE: usize = 1 << 18;
/// ENQUEUE_REPLENISH
pub(super) const ENQUEUE_REPLENISH: u32 = 0x20;

/// to_ratio: `runtime` per `period` as a fraction of 1 << BW_SHIFT.
pub fn to_ratio(period: u64, runtime: u64) -> u64 {
    if period == 0 {
        return 0;
    }
    ((runtime as u128) << BW_SHIFT).div_euclid(period as u128) as u64
}

/// dl_time_before: `a` is earlier than `b` (wrap-safe, as the kernel).
pub(super) fn before(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// sched_attr's deadline parameters, ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DlParams {
    pub runtime: u64,
    pub deadline: u64,
    pub period: u64,
}

impl DlParams {
    /// __checkparam_dl: why sched_setattr would fail with EINVAL, if it would.
    pub fn check(&self) -> Result<(), String> {
        let period = if self.period == 0 {
            self.deadline
        } else {
            self.period
        };
        if self.deadline == 0 {
            return Err("a deadline of 0".into());
        }
        if self.runtime < 1 << DL_SCALE {
            return Err("a runtime under 1024 ns".into());
        }
        if period < self.deadline || self.deadline < self.runtime {
            return Err("runtime ≤ deadline ≤ period does not hold".into());
        }
        if !(PERIOD_MIN_NS..=PERIOD_MAX_NS).contains(&period) {
            return Err(
                "a period outside sched_deadline_period_min_us..max_us (100 µs..4.19 s)".into(),
            );
        }
        Ok(())
    }

    /// The bandwidth sched_dl_overflow adds: to_ratio(period, runtime).
    pub fn bw(&self) -> u64 {
        let period = if self.period == 0 {
            self.deadline
        } else {
            self.period
        };
        to_ratio(period, self.runtime)
    }
}

/// struct sched_dl_entity, reduced: the parameters, the current instance's
/// runtime left and absolute deadline, and the throttle and yield flags,
/// those first (`repr(C)`: the fair server's charge reads them, the
/// parameters seldom).
#[derive(Clone, Debug, Default)]
#[repr(C)]
pub struct DlEntity {
    pub runtime: i64,
    pub dl_runtime: u64,
    pub deadline: Time,
    pub dl_throttled: bool,
    pub(super) dl_yielded: bool,
    pub dl_deadline: u64,
    pub dl_period: u64,
    pub dl_bw: u64,
    dl_density: u64,
}

impl DlEntity {
    /// __setparam_dl
    pub fn new(p: DlParams) -> Self {
        let period = if p.period == 0 { p.deadline } else { p.period };
        DlEntity {
            dl_runtime: p.runtime,
            dl_deadline: p.deadline,
            dl_period: period,
            dl_bw: to_ratio(period, p.runtime),
            dl_density: to_ratio(p.deadline, p.runtime),
            ..Default::default()
        }
    }

    /// dl_next_period: the start of the next period (u64 arithmetic that
    /// wraps, as the kernel's, for an entity never started).
    pub(super) fn next_period(&self) -> Time {
        (self.deadline.wrapping_sub(self.dl_deadline)).wrapping_add(self.dl_period)
    }

    /// replenish_dl_new_period: a new instance starting now.
    pub(super) fn new_period(&mut self, now: Time) {
        self.deadline = now + self.dl_deadline;
        self.runtime = self.dl_runtime as i64;
    }

    /// dl_entity_overflow: would the runtime left, run from `t`, exceed
    /// the bandwidth before the current deadline (runtime / (deadline − t)
    /// > dl_runtime / dl_deadline, in DL_SCALE units)?
    pub(super) fn overflow(&self, t: Time) -> bool {
        let left = (self.dl_deadline >> DL_SCALE) as i128 * (self.runtime >> DL_SCALE) as i128;
        let right = (self.deadline.wrapping_sub(t) as i64 >> DL_SCALE) as i128
            * (self.dl_runtime >> DL_SCALE) as i128;
        right < left
    }

    /// update_dl_entity, the CBS wakeup rule: a task waking after its
    /// deadline, or with more runtime left than its bandwidth allows up to
    /// it, starts a new instance; a constrained task (deadline < period)
    /// before its deadline keeps it with the runtime its density allows
    /// (update_dl_revised_wakeup).
    pub fn update(&mut self, now: Time) {
        if !(before(self.deadline, now) || self.overflow(now)) {
            return;
        }
        if self.dl_deadline != self.dl_period && !before(self.deadline, now) {
            let laxity = self.deadline - now;
            self.runtime = ((self.dl_density as u128 * laxity as u128) >> BW_SHIFT) as i64;
            return;
        }
        self.new_period(now);
    }

    /// replenish_dl_entity: add runtime a period at a time, postponing the
    /// deadline by a period each, until some is left (an overrun is paid
    /// from the next periods); a deadline still past means a new instance
    /// (then true: "DL replenish lagged too much").
    pub fn replenish(&mut self, now: Time) -> bool {
        if self.dl_yielded && self.runtime > 0 {
            self.runtime = 0;
        }
        while self.runtime <= 0 {
            self.deadline += self.dl_period;
            self.runtime += self.dl_runtime as i64;
        }
        let lagged = before(self.deadline, now);
        if lagged {
            self.new_period(now);
        }
        self.dl_yielded = false;
        self.dl_throttled = false;
        lagged
    }
}

/// struct dl_rq, reduced: the queued DL tasks by absolute deadline (the
/// rb-tree; curr stays in it while it runs, as in the kernel), and the
/// throttled ones (still on the run queue, out of the tree, and not in
/// nr_running, until their dl_timer replenishes them); the CPU's fair
/// server (rq->fair_server, in the tree when `server.queued`). In
/// `repr(C)` order: the server's hot fields, which every update_curr of a
/// fair task reads, come right after the queue, which every pick reads,
/// on the same two lines of `Rq`.
#[derive(Clone, Debug, Default)]
#[repr(C)]
pub struct DlRq {
    pub queue: Vec<Pid>,
    pub throttled: Vec<Pid>,
    pub server: FairServer,
}

/// The root domain's struct dl_bw: the limit (sched_rt_runtime_us /
/// sched_rt_period_us as a ratio), the capacity it applies to, and the
/// bandwidth admitted so far (the fair servers' among it since v6.15).
#[derive(Clone, Debug)]
pub struct DlBw {
    bw: u64,
    cap: u64,
    pub total_bw: u64,
    /// The fair servers' share of total_bw.
    servers: u64,
}

impl DlBw {
    /// init_dl_bw and dl_bw_capacity for one root domain spanning the
    /// machine: CPUs × 1024 when all have full capacity, else the sum of
    /// their capacities; 6.18 starts with each CPU's fair server admitted
    /// (dl_server_apply_params), a kernel before v6.12 with nothing.
    pub fn new(m: &Machine, cfg: &KernelConfig) -> Self {
        let cap = m.cpus.iter().map(|c| c.capacity as u64).sum();
        let servers = match cfg.rt_bandwidth {
            RtBandwidth::FairServer => {
                m.nr_cpus() as u64 * to_ratio(RT_PERIOD_NS, FAIR_SERVER_RUNTIME_NS)
            }
            RtBandwidth::Throttle => 0,
        };
        DlBw {
            bw: to_ratio(RT_PERIOD_NS, RT_RUNTIME_NS),
            cap,
            total_bw: servers,
            servers,
        }
    }

    /// __dl_overflow: cap_scale(bw, cap) < total_bw + new_bw.
    fn overflow(&self, new_bw: u64) -> bool {
        (self.bw * self.cap) >> CAPACITY_SHIFT < self.total_bw + new_bw
    }

    /// sched_dl_overflow for a task becoming SCHED_DEADLINE: admit its
    /// bandwidth (__dl_add) unless the total would pass the limit (EBUSY).
    pub fn admit(&mut self, new_bw: u64) -> bool {
        if self.overflow(new_bw) {
            return false;
        }
        self.total_bw += new_bw;
        true
    }

    /// The limit and what is admitted, as % of one CPU, for messages.
    pub fn describe(&self, new_bw: u64) -> String {
        let pct = |bw: u64| 100.0 * bw as f64 / (1u64 << BW_SHIFT) as f64;
        let limit = pct((self.bw * self.cap) >> CAPACITY_SHIFT);
        format!(
            "{:.1} % admitted ({:.1} % of it the fair servers') + {:.1} % asked > the limit of {limit:.1} % (95 % of {} CPUs' capacity, sched_rt_runtime_us / sched_rt_period_us)",
            pct(self.total_bw),
            pct(self.servers),
            pct(new_bw),
            self.cap as f64 / 1024.0
        )
    }
}

impl Kernel {
    pub fn is_dl(&self, p: Pid) -> bool {
        self.tasks[p].policy == Policy::Deadline
    }

    /// sched_setattr(SCHED_DEADLINE) for a task not yet started: its
    /// parameters (__setparam_dl) and its bandwidth added to the root
    /// domain's. The caller checked admission (`DlBw::admit`) beforehand.
    pub fn set_scheduler_dl(&mut self, p: Pid, params: DlParams) {
        let t = &mut self.tasks[p];
        t.policy = Policy::Deadline;
        t.rt_prio = 0;
        t.dl = DlEntity::new(params);
        self.dl_bw.total_bw += t.dl.dl_bw;
    }

    /// task_dead_dl: an exiting task's bandwidth leaves the root domain.
    pub fn task_dead_dl(&mut self, p: Pid) {
        if self.is_dl(p) {
            self.dl_bw.total_bw -= self.tasks[p].dl.dl_bw;
            self.events.cancel(EventKind::Timer, DL_TIMER_BASE + p);
        }
    }

    /// enqueue_task_dl: a new task starts its first instance, a woken one
    /// passes the CBS wakeup rule, a replenished one gets its runtime; a
    /// throttled one waits for its timer apart. Returns whether it counts
    /// in nr_running (it does once in the tree).
    pub fn enqueue_dl(&mut self, cpu: usize, p: Pid, flags: u32) -> bool {
        let now = self.now;
        let dl = &mut self.tasks[p].dl;
        if flags & ENQUEUE_INITIAL != 0 {
            dl.new_period(now);
        }
        if !dl.dl_throttled && dl.dl_deadline != dl.dl_period {
            self.check_constrained_dl(p);
        }
        let dl = &mut self.tasks[p].dl;
        if dl.dl_throttled && flags & ENQUEUE_REPLENISH == 0 {
            self.rqs[cpu].dl.throttled.push(p);
            return false;
        }
        if flags & ENQUEUE_WAKEUP != 0 {
            dl.update(now);
        } else if flags & ENQUEUE_REPLENISH != 0 {
            dl.replenish(now);
        }
        self.insert_dl(cpu, p);
        true
    }

    /// __enqueue_dl_entity: into the tree behind tasks with an equal or
    /// earlier deadline.
    fn insert_dl(&mut self, cpu: usize, p: Pid) {
        let d = self.tasks[p].dl.deadline;
        let tasks = &self.tasks;
        let q = &mut self.rqs[cpu].dl.queue;
        let at = q.partition_point(|&x| !before(d, tasks[x].dl.deadline));
        q.insert(at, p);
    }

    /// dl_check_constrained_dl: a constrained task woken past its deadline
    /// but before its next period waits, throttled, for that period.
    fn check_constrained_dl(&mut self, p: Pid) {
        let (now, dl) = (self.now, &self.tasks[p].dl);
        if before(dl.deadline, now) && before(now, dl.next_period()) && self.start_dl_timer(p) {
            let dl = &mut self.tasks[p].dl;
            dl.dl_throttled = true;
            dl.runtime = dl.runtime.min(0);
        }
    }

    /// dequeue_task_dl: charge `p` if it runs, then out of the tree or the
    /// throttled list. Returns whether it counted in nr_running. (The
    /// kernel charges curr whichever task leaves; a push or pull here runs
    /// on another CPU's behalf, where throttling curr would need an IPI.)
    pub fn dequeue_dl(&mut self, cpu: usize, p: Pid) -> bool {
        if self.rqs[cpu].curr == Some(p) {
            self.update_curr_dl(cpu);
        }
        let dl = &mut self.rqs[cpu].dl;
        if let Some(i) = dl.queue.iter().position(|&q| q == p) {
            dl.queue.remove(i);
            return true;
        }
        dl.throttled.retain(|&q| q != p);
        false
    }

    /// update_curr_dl: charge the running DL task (scaled to the CPU's
    /// capacity, dl_scaled_delta_exec) and throttle it when its runtime is
    /// used up or it yielded (update_curr_dl_se).
    pub fn update_curr_dl(&mut self, cpu: usize) {
        let Some(c) = self.rqs[cpu].curr.filter(|&c| self.is_dl(c)) else {
            return;
        };
        if !self.rqs[cpu].dl.queue.contains(&c) {
            return;
        }
        let se = &mut self.tasks[c].se;
        let delta = self.now.saturating_sub(se.exec_start);
        se.exec_start = self.now;
        se.sum_exec_runtime += delta;
        // Before v6.12, DL time counted against the RT bandwidth too.
        if self.cfg.rt_bandwidth == RtBandwidth::Throttle {
            self.rqs[cpu].rt.rt_time += delta;
        }
        let cap = self.machine.cpus[cpu].capacity as u64;
        let dl = &mut self.tasks[c].dl;
        dl.runtime -= ((delta * cap) >> CAPACITY_SHIFT) as i64;
        if dl.runtime <= 0 || dl.dl_yielded {
            self.throttle_dl(cpu, c);
        }
    }

    /// The throttle of update_curr_dl_se: out of the tree until the
    /// dl_timer at the next period replenishes it (at once if that is
    /// already past), and curr reschedules.
    fn throttle_dl(&mut self, cpu: usize, c: Pid) {
        self.tasks[c].dl.dl_throttled = true;
        self.rqs[cpu].dl.queue.retain(|&q| q != c);
        self.rqs[cpu].nr_running -= 1;
        if self.start_dl_timer(c) {
            self.rqs[cpu].dl.throttled.push(c);
        } else {
            self.enqueue_dl(cpu, c, ENQUEUE_REPLENISH);
            self.rqs[cpu].nr_running += 1;
        }
        if self.rqs[cpu].dl.queue.first() != Some(&c) {
            self.resched_curr_lazy(cpu, Some(cpu), Req::HigherClass, Cause::Other);
        }
    }

    /// start_dl_timer: arm `p`'s dl_timer at its next period, unless that
    /// is over a µs past (ktime_us_delta < 0): then the caller replenishes
    /// at once.
    fn start_dl_timer(&mut self, p: Pid) -> bool {
        let act = self.tasks[p].dl.next_period();
        if act.saturating_add(1_000) <= self.now {
            return false;
        }
        let id = DL_TIMER_BASE + p;
        if !self.events.is_pending(EventKind::Timer, id) {
            self.events.push(act.max(self.now), EventKind::Timer, id);
        }
        true
    }

    /// dl_task_timer: the replenishment. A throttled task still queued
    /// goes back into the tree with its new runtime and deadline and is
    /// weighed against curr (resched if curr is of a lower class), then
    /// pushed if it cannot run here; a sleeping one is only replenished.
    /// The hrtimer interrupt costs the CPU `hrtimer_irq_ns`, and its
    /// return is a preemption point.
    pub fn dl_task_timer(&mut self, p: Pid) {
        if !self.is_dl(p) || !self.tasks[p].dl.dl_throttled {
            return;
        }
        let (cpu, now) = (self.tasks[p].cpu, self.now);
        self.touch_task(p);
        self.touch_cpu(cpu);
        if !self.tasks[p].on_rq {
            self.tasks[p].dl.replenish(now);
            return;
        }
        self.fold_touch_cpu(cpu);
        let irq = self.vary(self.machine.cost.hrtimer_irq_ns, By::Cpu(cpu));
        self.rqs[cpu].irq_ns += irq;
        self.rqs[cpu].dl.throttled.retain(|&q| q != p);
        self.enqueue_dl(cpu, p, ENQUEUE_REPLENISH);
        self.rqs[cpu].nr_running += 1;
        self.tasks[p].stats.wait_start = now;
        match self.rqs[cpu].curr {
            Some(c) if self.is_dl(c) => self.wakeup_preempt_dl(cpu, p, Some(cpu)),
            _ => self.resched_curr_lazy(cpu, Some(cpu), Req::HigherClass, Cause::Other),
        }
        self.push_dl_tasks(cpu, self.rqs[cpu].dl.queue[0]);
        if self.resched_pending(cpu) && matches!(self.rqs[cpu].act, Activity::Running { .. }) {
            self.stop_segment(cpu);
            self.dispatch(cpu);
        }
    }

    /// pick_next_task_dl: the earliest deadline in the tree; the fair
    /// server's turn runs the fair pick (dl_server.rs). A fair prev is put
    /// back first; queued DL tasks that could run earlier elsewhere are
    /// pushed (set_next_task_dl's balance callback).
    pub fn pick_next_dl(&mut self, cpu: usize, prev: Option<Pid>) -> Option<Pid> {
        // A server that found nothing to run left the tree: pick again.
        while self.dl_server_leftmost(cpu) {
            if let Some(n) = self.dl_server_pick(cpu, prev) {
                return Some(n);
            }
        }
        let next = *self.rqs[cpu].dl.queue.first()?;
        if let Some(p) = prev.filter(|_| self.rqs[cpu].cfs.curr.is_some()) {
            self.put_prev_fair(cpu, p);
        }
        self.tasks[next].se.exec_start = self.now;
        self.push_dl_tasks(cpu, next);
        Some(next)
    }

    /// task_tick_dl: charge curr (which may throttle it). Without HRTICK
    /// (off by default) the tick is where an overrun is caught.
    pub fn task_tick_dl(&mut self, cpu: usize) {
        self.update_curr_dl(cpu);
    }

    /// yield_task_dl: sched_yield gives up the rest of this instance's
    /// runtime; the task waits for its next period.
    pub fn yield_task_dl(&mut self, cpu: usize, p: Pid) {
        self.tasks[p].dl.dl_yielded = true;
        self.update_curr_dl(cpu);
    }

    /// wakeup_preempt_dl for a DL wakee (and the core's class test above
    /// it): it preempts curr of a lower class, or a DL curr with a later
    /// deadline.
    pub fn wakeup_preempt_dl(&mut self, cpu: usize, p: Pid, from: Option<usize>) {
        let preempt = match self.rqs[cpu].curr {
            Some(c) if self.is_dl(c) => {
                before(self.tasks[p].dl.deadline, self.tasks[c].dl.deadline)
            }
            _ => true,
        };
        if !preempt {
            return;
        }
        let how = (Req::HigherClass, Cause::Wakeup);
        self.resched_for_wakee((cpu, from), p, how, self.class_rule(cpu, WakeupRule::Dl));
    }

    /// The earliest deadline queued on `cpu` (earliest_dl.curr), if any.
    fn earliest_dl(&self, cpu: usize) -> Option<Time> {
        let q = self.rqs[cpu].dl.queue.first()?;
        Some(self.tasks[*q].dl.deadline)
    }

    /// dl_task_is_earliest_deadline: `p` would run first on `cpu`.
    fn is_earliest_on(&self, p: Pid, cpu: usize) -> bool {
        self.earliest_dl(cpu)
            .is_none_or(|d| before(self.tasks[p].dl.deadline, d))
    }

    /// select_task_rq_dl for a wakeup: stay on `prev` unless a DL task
    /// runs there that `p` would not preempt; then find_later_rq's CPU if
    /// `p` would be its earliest.
    pub fn select_task_rq_dl(&self, p: Pid, prev: usize) -> usize {
        let ncpus = self.machine.nr_cpus();
        let busy = self.rqs[prev]
            .curr
            .filter(|&c| self.is_dl(c))
            .is_some_and(|c| {
                self.tasks[c].nr_cpus_allowed(ncpus) < 2
                    || !before(self.tasks[p].dl.deadline, self.tasks[c].dl.deadline)
            });
        if !busy {
            return prev;
        }
        self.find_later_rq(p, prev, None)
            .filter(|&c| self.is_earliest_on(p, c))
            .unwrap_or(prev)
    }

    /// find_later_rq through cpudl_find: an allowed CPU (other than
    /// `skip`) with no DL task, `near` first, else the nearest; failing
    /// that, the CPU whose earliest deadline is the latest, if it is
    /// allowed and later than `p`'s.
    fn find_later_rq(&self, p: Pid, near: usize, skip: Option<usize>) -> Option<usize> {
        let t = &self.tasks[p];
        let ok = |c: usize| t.is_allowed(c) && Some(c) != skip;
        let free = (0..self.machine.nr_cpus())
            .filter(|&c| ok(c) && self.rqs[c].dl.queue.is_empty())
            .min_by_key(|&c| (c != near, c.abs_diff(near)));
        if free.is_some() {
            return free;
        }
        let latest = (0..self.machine.nr_cpus())
            .filter_map(|c| Some((self.earliest_dl(c)?, c)))
            .max_by(|a, b| match before(a.0, b.0) {
                true => std::cmp::Ordering::Less,
                false => a.0.cmp(&b.0).then(b.1.cmp(&a.1)),
            })?;
        (ok(latest.1) && before(t.dl.deadline, latest.0)).then_some(latest.1)
    }

    /// push_dl_tasks (the balance callback after a pick or replenishment):
    /// queued DL tasks other than the one to run move, earliest deadline
    /// first, to a CPU where they would run first, which reschedules.
    fn push_dl_tasks(&mut self, cpu: usize, next: Pid) {
        if self.rqs[cpu].dl.queue.len() < 2 {
            return;
        }
        let ncpus = self.machine.nr_cpus();
        let waiting: Vec<Pid> = (self.rqs[cpu].dl.queue.iter().copied())
            .filter(|&q| q != next && Some(q) != self.rqs[cpu].curr)
            .filter(|&q| self.tasks[q].nr_cpus_allowed(ncpus) > 1)
            .collect();
        for q in waiting {
            let dst = self.find_later_rq(q, cpu, Some(cpu));
            if let Some(dst) = dst.filter(|&d| self.is_earliest_on(q, d)) {
                self.move_queued_task(q, cpu, dst);
                self.wakeup_preempt_dl(dst, q, Some(cpu));
            }
        }
    }

    /// pull_dl_task: a CPU whose DL task blocked or was throttled takes the
    /// earliest-deadline DL task waiting (queued, not running) on another
    /// CPU, if it would run first here and not preempt the curr there.
    pub fn pull_dl_task(&mut self, cpu: usize) {
        let mut best: Option<(Time, usize, Pid)> = None;
        for src in (0..self.rqs.len()).filter(|&s| s != cpu) {
            let rq = &self.rqs[src];
            let waiting = rq.dl.queue.iter().copied().filter(|&q| Some(q) != rq.curr);
            let Some(q) = waiting.into_iter().find(|&q| self.tasks[q].is_allowed(cpu)) else {
                continue;
            };
            let d = self.tasks[q].dl.deadline;
            let curr_later = rq
                .curr
                .filter(|&c| self.is_dl(c))
                .is_none_or(|c| !before(d, self.tasks[c].dl.deadline));
            if curr_later && best.is_none_or(|b| before(d, b.0)) && self.is_earliest_on(q, cpu) {
                best = Some((d, src, q));
            }
        }
        if let Some((_, src, q)) = best {
            self.move_queued_task(q, src, cpu);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ent(runtime: u64, deadline: u64, period: u64) -> DlEntity {
        DlEntity::new(DlParams {
            runtime,
            deadline,
            period,
        })
    }

    #[test]
    fn replenish_pays_an_overrun_from_the_next_periods() {
        let mut e = ent(10_000_000, 100_000_000, 100_000_000);
        e.new_period(0);
        e.runtime = -15_000_000;
        e.replenish(50_000_000);
        assert_eq!((e.deadline, e.runtime), (300_000_000, 5_000_000));
    }

    #[test]
    fn wakeup_rule_keeps_a_deadline_the_runtime_fits_before() {
        let mut e = ent(10_000_000, 100_000_000, 100_000_000);
        e.new_period(0);
        e.runtime = 5_000_000;
        e.update(40_000_000);
        assert_eq!(e.deadline, 100_000_000, "5 ms in 60 ms fits 10 %");
        e.update(96_000_000);
        assert_eq!((e.deadline, e.runtime), (196_000_000, 10_000_000));
        // Constrained: before the deadline, the runtime is cut to the density.
        let mut c = ent(10_000_000, 50_000_000, 100_000_000);
        c.new_period(0);
        c.update(45_000_000);
        assert_eq!(c.deadline, 50_000_000);
        // 20 % of the 5 ms left, truncated as the kernel does.
        assert_eq!(c.runtime, 999_999);
    }

    #[test]
    fn params_are_checked_and_admission_counts_the_limit() {
        let p = |r, d, t| DlParams {
            runtime: r,
            deadline: d,
            period: t,
        };
        assert!(p(10_000, 100_000, 100_000).check().is_ok());
        assert!(p(200_000, 100_000, 100_000).check().is_err());
        assert!(p(10_000, 50_000, 50_000).check().is_err());
        assert_eq!(p(1, 4, 0).bw(), 1 << 18);
        let mut rd = DlBw {
            bw: to_ratio(RT_PERIOD_NS, RT_RUNTIME_NS),
            cap: 2048,
            total_bw: 0,
            servers: 0,
        };
        let half = to_ratio(2, 1);
        assert!(rd.admit(half) && rd.admit(half) && rd.admit(half));
        assert!(!rd.admit(half), "a fourth 50 % passes 95 % of 2 CPUs");
        assert!(rd.describe(half).contains("150.0 % admitted"));
    }
}
