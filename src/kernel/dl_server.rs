//! The fair deadline server (kernel/sched/deadline.c's dl_server_*, v6.18,
//! under `kernel.rt_bandwidth = "fair_server"`): each CPU's
//! `rq->fair_server`, a sched_dl_entity with dl_server and dl_defer set,
//! 50 ms of runtime per 1 s period, that runs the fair class when RT or DL
//! tasks starve it. Fair running time and idle time are charged to it, so
//! it stays throttled (deferred) while fair tasks get the CPU on their own;
//! only when its laxity reaches zero (the defer timer at deadline −
//! runtime) is it queued, and it then competes by EDF with DL tasks above
//! RT, running the fair class's pick until its runtime is used up, and
//! again at each following period while the starvation lasts. It stops
//! once a period passes with no fair task to run (v6.17+).

use super::core::Activity;
use super::fair::ENQUEUE_WAKEUP;
use super::noise::By;
use super::preempt::{Cause, Req};
use super::rt::{RtBandwidth, FAIR_SERVER_RUNTIME_NS};
use super::task::Pid;
use super::Kernel;
use crate::engine::{EventKind, Time};

use super::deadline::{before, DlEntity, DlParams, CAPACITY_SHIFT, ENQUEUE_REPLENISH};

/// The fair server's period (debugfs fair_server/cpuN/period, 1 s).
const FAIR_SERVER_PERIOD_NS: u64 = 1_000_000_000;
/// dl_server_min_res: the defer timer is not pushed back by less (1 ms).
const DL_SERVER_MIN_RES_NS: u64 = 1_000_000;
/// Timer ids of the fair servers' dl_timers (one per CPU) start here,
/// above the bandwidth slack timers (task groups < 1024).
pub const SERVER_TIMER_BASE: usize = super::bandwidth::BW_SLACK_BASE + (1 << 17);

/// rq->fair_server: the entity and the dl_server flags of struct
/// sched_dl_entity, with the model's bookkeeping of what was charged. In
/// `repr(C)` order: what a charge reads (the task seen, the flags, the
/// entity's runtime) shares one line.
#[derive(Clone, Debug, Default)]
#[repr(C)]
pub struct FairServer {
    /// The fair task on the CPU and its sum_exec_runtime as last charged.
    seen: Option<(Pid, u64)>,
    /// dl_server_active
    pub active: bool,
    /// On the dl_rq's tree (on_dl_rq).
    pub queued: bool,
    /// dl_defer_armed: the dl_timer is the zero-laxity (defer) timer.
    pub defer_armed: bool,
    /// dl_defer_running: the server serves a starvation, not deferred.
    pub defer_running: bool,
    /// dl_server_idle: picked once with no fair task to run.
    idle: bool,
    /// The entity (dl_runtime 0 until sched_init_dl_servers' parameters
    /// are applied at the first start: 0 runtime = no server).
    pub dl: DlEntity,
    /// The dl_timer's expiry, when armed (hrtimer_is_queued).
    pub timer_at: Option<Time>,
    /// Idle time before this is charged already.
    idle_from: Time,
}

impl Kernel {
    fn server(&mut self, cpu: usize) -> &mut FairServer {
        &mut self.rqs[cpu].dl.server
    }

    /// dl_server_start, from enqueue_task_fair: a fair task arrives on a
    /// CPU whose server is not active. The first start applies
    /// sched_init_dl_servers' parameters (50 ms / 1 s, dl_server_apply_params)
    /// and first period, as at boot (time 0).
    /// The server is then throttled until its zero-laxity time unless it
    /// was serving a starvation. (The kernel also reschedules curr here;
    /// that is left out when the server stays throttled, where the pick
    /// it causes finds what runs already.)
    pub fn dl_server_start(&mut self, cpu: usize) {
        if self.cfg.rt_bandwidth != RtBandwidth::FairServer || self.server(cpu).active {
            return;
        }
        let s = self.server(cpu);
        if s.dl.dl_runtime == 0 {
            s.dl = DlEntity::new(DlParams {
                runtime: FAIR_SERVER_RUNTIME_NS,
                deadline: FAIR_SERVER_PERIOD_NS,
                period: FAIR_SERVER_PERIOD_NS,
            });
            // setup_new_dl_entity at boot: the first period from time 0.
            self.server_new_period(cpu);
        }
        let s = self.server(cpu);
        s.active = true;
        self.enqueue_server(cpu, ENQUEUE_WAKEUP);
        if self.server(cpu).queued {
            self.resched_for_server(cpu);
        }
    }

    /// dl_server_stop: off the tree, the timer cancelled, inactive.
    fn dl_server_stop(&mut self, cpu: usize) {
        let s = self.server(cpu);
        s.queued = false;
        s.defer_armed = false;
        s.dl.dl_throttled = false;
        s.active = false;
        self.server_cancel_timer(cpu);
    }

    /// dl_server_stopped: a pick that found no fair task stops the server
    /// if the previous one found none either, with no fair running since.
    fn dl_server_stopped(&mut self, cpu: usize) -> bool {
        let s = self.server(cpu);
        if !s.active {
            return true;
        }
        if s.idle {
            self.dl_server_stop(cpu);
            return true;
        }
        s.idle = true;
        false
    }

    /// dl_server_update from the fair class's update_curr: the fair time
    /// the CPU's fair task was charged since the last call (its
    /// sum_exec_runtime moves only there) goes to the server.
    pub fn dl_server_charge(&mut self, cpu: usize) {
        let s = &self.rqs[cpu].dl.server;
        let Some((p, seen)) = s.seen else { return };
        let sum = self.tasks[p].se.sum_exec_runtime;
        self.server(cpu).seen = Some((p, sum));
        self.server_update(cpu, sum.saturating_sub(seen));
    }

    /// dl_server_update with `delta` ns of fair time.
    fn server_update(&mut self, cpu: usize, delta: u64) {
        let s = self.server(cpu);
        if delta == 0 || !s.active || s.dl.dl_runtime == 0 {
            return;
        }
        s.idle = false;
        self.update_curr_server(cpu, delta);
    }

    /// After a pick: charge what prev ran, then follow `next` if it is a
    /// fair task.
    pub fn dl_server_track(&mut self, cpu: usize, next: Option<Pid>) {
        if self.cfg.rt_bandwidth != RtBandwidth::FairServer {
            return;
        }
        self.dl_server_charge(cpu);
        let fair = next.filter(|&n| !self.is_rt(n) && !self.is_dl(n));
        self.server(cpu).seen = fair.map(|n| (n, self.tasks[n].se.sum_exec_runtime));
    }

    /// dl_server_update_idle (put_prev_task_idle → update_curr_idle): in
    /// defer mode idle time counts as time the fair tasks could have had.
    pub fn dl_server_idle_time(&mut self, cpu: usize, since: Time) {
        let now = self.now;
        let s = self.server(cpu);
        if !s.active || s.dl.dl_runtime == 0 {
            return;
        }
        let from = since.max(s.idle_from);
        s.idle_from = now;
        if now > from {
            self.update_curr_server(cpu, now - from);
        }
    }

    /// update_curr_dl_se for the server: take `delta` (scaled to the CPU's
    /// capacity, dl_scaled_delta_exec) from its runtime. Used up while
    /// deferred, it starts a new period and re-arms the defer timer (fair
    /// tasks got their share on their own); used up, or yielded, while
    /// queued, it is throttled until its next period and curr reschedules.
    fn update_curr_server(&mut self, cpu: usize, delta: u64) {
        let cap = self.machine.cpus[cpu].capacity as u64;
        let s = self.server(cpu);
        if delta > 0 {
            s.dl.runtime -= ((delta * cap) >> CAPACITY_SHIFT) as i64;
            if s.dl.dl_throttled && s.dl.runtime <= 0 {
                s.defer_running = false;
                self.server_cancel_timer(cpu);
                self.server_new_period(cpu);
                self.server_start_timer(cpu);
                return;
            }
        }
        let s = self.server(cpu);
        if s.dl.runtime > 0 && !s.dl.dl_yielded {
            return;
        }
        s.dl.dl_throttled = true;
        s.queued = false;
        if !self.server_start_timer(cpu) {
            self.server_new_period(cpu);
            self.server_start_timer(cpu);
        }
        self.resched_curr_lazy(cpu, Some(cpu), Req::HigherClass, Cause::Other);
    }

    /// replenish_dl_new_period: a new instance from now; a deferred server
    /// not serving a starvation waits (throttled) for its zero-laxity time.
    fn server_new_period(&mut self, cpu: usize) {
        let now = self.now;
        let s = self.server(cpu);
        s.dl.new_period(now);
        if !s.defer_running {
            s.dl.dl_throttled = true;
            s.defer_armed = true;
        }
    }

    /// update_dl_entity for the server (implicit deadline): a deadline
    /// past, or more runtime than fits before it, starts a new period;
    /// else the old one goes on, deferred unless serving.
    fn server_wakeup(&mut self, cpu: usize) {
        let now = self.now;
        let s = self.server(cpu);
        if before(s.dl.deadline, now) || s.dl.overflow(now) {
            self.server_new_period(cpu);
        } else if !s.defer_running {
            s.defer_armed = true;
            s.dl.dl_throttled = true;
        }
    }

    /// replenish_dl_entity for the server: a deferred activation that
    /// cannot fit its runtime before its deadline starts a new period;
    /// then runtime is added a period at a time. Replenished at a period
    /// boundary while not serving, it is deferred again (the defer timer).
    fn server_replenish(&mut self, cpu: usize) {
        let now = self.now;
        let s = self.server(cpu);
        if s.defer_armed && s.dl.overflow(now) {
            s.dl.new_period(now);
        }
        // A lagged replenishment's new period (replenish_dl_new_period)
        // arms the deferral when not serving, and its flag ends this
        // replenishment as an armed one does.
        let lagged = s.dl.replenish(now);
        let armed = std::mem::take(&mut s.defer_armed);
        if armed || (lagged && !s.defer_running) {
            return;
        }
        let zero_lax = s.dl.deadline.wrapping_sub(s.dl.runtime as u64);
        if !s.defer_running && before(now, zero_lax) {
            s.defer_armed = true;
            s.dl.dl_throttled = true;
            if !self.server_start_timer(cpu) {
                self.server_cancel_timer(cpu);
                let s = self.server(cpu);
                s.defer_armed = false;
                s.dl.dl_throttled = false;
            }
        }
    }

    /// enqueue_dl_entity for the server: the wakeup rule or the
    /// replenishment; a server still throttled waits for its timer,
    /// else it goes on the tree.
    fn enqueue_server(&mut self, cpu: usize, flags: u32) {
        if flags & ENQUEUE_WAKEUP != 0 {
            self.server_wakeup(cpu);
        } else if flags & ENQUEUE_REPLENISH != 0 {
            self.server_replenish(cpu);
        }
        if self.server(cpu).dl.dl_throttled {
            if self.server_start_timer(cpu) {
                return;
            }
            // The zero-laxity time is past: no deferral, queue it now.
            self.server_cancel_timer(cpu);
            let s = self.server(cpu);
            s.defer_armed = false;
            s.dl.dl_throttled = false;
        }
        self.server(cpu).queued = true;
    }

    /// start_dl_timer for the server: at the zero-laxity time (deadline −
    /// runtime) when deferred, else at the next period; false when that is
    /// over a µs past. An armed timer is left as it is.
    fn server_start_timer(&mut self, cpu: usize) -> bool {
        let now = self.now;
        let s = self.server(cpu);
        let act = if s.defer_armed {
            s.dl.deadline.wrapping_sub(s.dl.runtime as u64)
        } else {
            s.dl.next_period()
        };
        if (act.wrapping_sub(now) as i64) <= -1_000 {
            return false;
        }
        if s.timer_at.is_none() {
            s.timer_at = Some(act.max(now));
            self.server_timer_sync(cpu);
        }
        true
    }

    /// hrtimer_try_to_cancel of the server's dl_timer.
    fn server_cancel_timer(&mut self, cpu: usize) {
        self.server(cpu).timer_at = None;
        self.events
            .cancel(EventKind::Timer, SERVER_TIMER_BASE + cpu);
    }

    /// The engine holds an armed server timer only while RT or DL tasks
    /// are queued on the CPU: without them fair and idle time use the
    /// runtime up long before the zero-laxity time, so the timer would
    /// only be pushed back (see docs/model.md). Called when the timer is
    /// armed and when an RT or DL task is queued.
    pub fn server_timer_sync(&mut self, cpu: usize) {
        let Some(at) = self.rqs[cpu].dl.server.timer_at else {
            return;
        };
        let (rt, dl) = (&self.rqs[cpu].rt, &self.rqs[cpu].dl);
        let starving = !rt.queue.is_empty() || !dl.queue.is_empty() || !dl.throttled.is_empty();
        let id = SERVER_TIMER_BASE + cpu;
        if starving && self.events.pending_time(EventKind::Timer, id) != Some(at) {
            self.events.push(at, EventKind::Timer, id);
        }
    }

    /// The pending fair and idle time of curr, charged as the timer's
    /// update_curr of curr's class does (the model's update_curr charges
    /// the task later; `seen` moves on so that is not charged twice).
    fn server_charge_curr(&mut self, cpu: usize) {
        self.dl_server_charge(cpu);
        if let Activity::Idle { since } = self.rqs[cpu].act {
            return self.dl_server_idle_time(cpu, since);
        }
        let Some((p, seen)) = self.rqs[cpu].dl.server.seen else {
            return;
        };
        if self.rqs[cpu].curr == Some(p) {
            let pending = self.now.saturating_sub(self.tasks[p].se.exec_start);
            self.server(cpu).seen = Some((p, seen + pending));
            self.server_update(cpu, pending);
        }
    }

    /// dl_server_timer: the defer timer at zero laxity (pushed back when
    /// fair or idle time used part of the runtime meanwhile, by at least
    /// dl_server_min_res) marks the server running and queues it; the
    /// period timer replenishes a throttled one. Queued, it preempts curr
    /// unless curr is a DL task with an earlier deadline. The hrtimer
    /// interrupt costs `hrtimer_irq_ns`, and its return is a preemption
    /// point.
    pub fn dl_server_timer(&mut self, cpu: usize) {
        let now = self.now;
        let s = self.server(cpu);
        if s.timer_at.is_none_or(|t| t > now) {
            // Re-armed since this event was pushed.
            return self.server_timer_sync(cpu);
        }
        s.timer_at = None;
        if !s.dl.dl_throttled || s.dl.dl_runtime == 0 {
            return;
        }
        self.touch_cpu(cpu);
        self.fold_touch_cpu(cpu);
        let irq = self.vary(self.machine.cost.hrtimer_irq_ns, By::Cpu(cpu));
        self.rqs[cpu].irq_ns += irq;
        self.server_charge_curr(cpu);
        let s = self.server(cpu);
        if s.defer_armed {
            let zero_lax = s.dl.deadline.wrapping_sub(s.dl.runtime as u64);
            if before(now, zero_lax.wrapping_sub(DL_SERVER_MIN_RES_NS)) {
                s.timer_at = Some(zero_lax);
                return self.server_timer_sync(cpu);
            }
            s.defer_running = true;
        }
        self.enqueue_server(cpu, ENQUEUE_REPLENISH);
        if !self.server(cpu).queued {
            return;
        }
        self.stats.rt_throttled += 1;
        self.resched_for_server(cpu);
        if self.resched_pending(cpu) && matches!(self.rqs[cpu].act, Activity::Running { .. }) {
            self.stop_segment(cpu);
            self.dispatch(cpu);
        }
    }

    /// The resched after the server is queued: unless curr is a DL task
    /// with an earlier deadline (dl_entity_preempt).
    fn resched_for_server(&mut self, cpu: usize) {
        let d = self.rqs[cpu].dl.server.dl.deadline;
        let curr = self.rqs[cpu].curr;
        if curr.is_none_or(|c| !self.is_dl(c) || before(d, self.tasks[c].dl.deadline)) {
            self.resched_curr_lazy(cpu, Some(cpu), Req::HigherClass, Cause::Other);
        }
    }

    /// pick_next_dl_entity's test for the server: queued, and its deadline
    /// before the earliest DL task's.
    pub fn dl_server_leftmost(&self, cpu: usize) -> bool {
        let dl = &self.rqs[cpu].dl;
        dl.server.queued
            && (dl.queue.first())
                .is_none_or(|&t| before(dl.server.dl.deadline, self.tasks[t].dl.deadline))
    }

    /// __pick_task_dl with the server leftmost: server_pick_task, the fair
    /// class's pick. With no fair task the server stops (dl_server_stopped)
    /// or gives up this period (dl_yielded), and the caller picks again.
    pub fn dl_server_pick(&mut self, cpu: usize, prev: Option<Pid>) -> Option<Pid> {
        let next = match self.rqs[cpu].cfs.nr_queued {
            0 => None,
            _ => self.pick_task_fair(cpu),
        };
        if let Some(n) = next {
            self.put_prev_set_next_fair(cpu, prev, n);
            return Some(n);
        }
        if !self.dl_server_stopped(cpu) {
            self.server(cpu).dl.dl_yielded = true;
            self.update_curr_server(cpu, 0);
        }
        None
    }
}
