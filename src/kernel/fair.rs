//! The EEVDF fair class (kernel/sched/fair.c, v6.15): virtual runtime,
//! the weighted average V, lag, eligibility, virtual deadlines, placement,
//! the pick, wakeup preemption, delayed dequeue and the per-entity PELT hooks.
//!
//! All arithmetic follows the kernel's integer forms. The run queue holds the
//! queued entities in a vector in insertion order: a pick scans it for the
//! earliest eligible deadline, which gives the same result as the kernel's
//! augmented rb-tree walk (ties go to the earlier insertion, as rb_add does).

use super::cfs_legacy::CfsTunables;
use super::features::{Feature, Features};
use super::pelt::{self, RemovedLoad, SchedAvg};
use super::prio::{calc_delta_fair, scale_load_down};
use super::task::{Pid, Task};

/// Enqueue flags (ENQUEUE_*), the subset the model passes.
pub const ENQUEUE_WAKEUP: u32 = 0x01;
pub const ENQUEUE_MIGRATED: u32 = 0x40;
pub const ENQUEUE_INITIAL: u32 = 0x80;
/// Dequeue flags (DEQUEUE_*).
pub const DEQUEUE_SLEEP: u32 = 0x01;
pub const DEQUEUE_MIGRATING: u32 = 0x100;
pub const DEQUEUE_DELAYED: u32 = 0x200;

/// update_load_avg flags.
const UPDATE_TG: u32 = 0x1;
const SKIP_AGE_LOAD: u32 = 0x2;
const DO_ATTACH: u32 = 0x4;
const DO_DETACH: u32 = 0x8;

/// What the fair class needs from the rest of the kernel for one call.
pub struct FairEnv<'a> {
    /// rq_clock_task (also the PELT clock: all modelled CPUs run at full
    /// capacity and frequency, so clock_pelt == clock_task).
    pub now: u64,
    /// sysctl_sched_base_slice after boot scaling.
    pub base_slice: u64,
    pub tick_ns: u64,
    pub feat: &'a Features,
    /// Legacy CFS tunables when `kernel.fair = "cfs"`, None for EEVDF.
    pub legacy: Option<CfsTunables>,
}

/// struct cfs_rq (the root one: task groups are not modelled yet).
#[derive(Clone, Debug, Default)]
pub struct CfsRq {
    /// Queued entities other than curr, in insertion order.
    pub tree: Vec<Pid>,
    pub curr: Option<Pid>,
    /// Σ scaled weights of queued entities, curr included.
    pub load: u64,
    pub nr_queued: usize,
    /// Queued and not delayed.
    pub h_nr_runnable: usize,
    pub min_vruntime: i64,
    /// Σ (v_i − min_vruntime)·w_i over the tree.
    pub avg_vruntime: i64,
    /// Σ w_i over the tree.
    pub avg_load: i64,
    /// min vruntime over the tree (the augmented root value).
    tree_min_vruntime: Option<i64>,
    pub avg: SchedAvg,
    pub removed: RemovedLoad,
    /// resched_curr_lazy was requested by update_curr; the core drains it.
    pub resched_req: bool,
}

fn weight(t: &Task) -> i64 {
    scale_load_down(t.se.load.weight) as i64
}

impl CfsRq {
    fn key(&self, t: &Task) -> i64 {
        t.se.vruntime - self.min_vruntime
    }

    /// avg_vruntime_add + __enqueue_entity
    fn tree_insert(&mut self, tasks: &[Task], p: Pid) {
        let t = &tasks[p];
        self.avg_vruntime += self.key(t) * weight(t);
        self.avg_load += weight(t);
        self.tree_min_vruntime = Some(
            self.tree_min_vruntime
                .map_or(t.se.vruntime, |m| m.min(t.se.vruntime)),
        );
        self.tree.push(p);
    }

    /// avg_vruntime_sub + __dequeue_entity
    fn tree_remove(&mut self, tasks: &[Task], p: Pid) {
        let t = &tasks[p];
        self.avg_vruntime -= self.key(t) * weight(t);
        self.avg_load -= weight(t);
        if let Some(i) = self.tree.iter().position(|&q| q == p) {
            self.tree.remove(i);
        }
        if self.tree_min_vruntime == Some(t.se.vruntime) {
            self.tree_min_vruntime = self.tree.iter().map(|&q| tasks[q].se.vruntime).min();
        }
    }

    fn curr_on_rq<'a>(&self, tasks: &'a [Task]) -> Option<&'a Task> {
        self.curr.map(|c| &tasks[c]).filter(|t| t.se.on_rq)
    }

    /// The numerator and denominator of V − min_vruntime, curr included.
    fn avg_parts(&self, tasks: &[Task]) -> (i64, i64) {
        let (mut avg, mut load) = (self.avg_vruntime, self.avg_load);
        if let Some(c) = self.curr_on_rq(tasks) {
            avg += self.key(c) * weight(c);
            load += weight(c);
        }
        (avg, load)
    }

    /// avg_vruntime: V, rounded towards −∞ (a left bias, as the kernel does).
    pub fn avg_vruntime(&self, tasks: &[Task]) -> i64 {
        let (mut avg, load) = self.avg_parts(tasks);
        if load != 0 {
            if avg < 0 {
                avg -= load - 1;
            }
            avg /= load;
        }
        self.min_vruntime + avg
    }

    /// vruntime_eligible: V ≥ v, evaluated without a division.
    fn vruntime_eligible(&self, parts: (i64, i64), v: i64) -> bool {
        parts.0 as i128 >= (v - self.min_vruntime) as i128 * parts.1 as i128
    }

    /// entity_eligible
    pub fn entity_eligible(&self, tasks: &[Task], p: Pid) -> bool {
        self.vruntime_eligible(self.avg_parts(tasks), tasks[p].se.vruntime)
    }

    /// update_min_vruntime (v6.15: a monotonic reference that rebases the sum).
    fn update_min_vruntime(&mut self, tasks: &[Task]) {
        let mut v = self.min_vruntime;
        let curr = self.curr_on_rq(tasks).map(|c| c.se.vruntime);
        if let Some(c) = curr {
            v = c;
        }
        if let Some(m) = self.tree_min_vruntime {
            v = if curr.is_some() { v.min(m) } else { m };
        }
        let delta = v - self.min_vruntime;
        if delta > 0 {
            self.avg_vruntime -= self.avg_load * delta;
            self.min_vruntime = v;
        }
    }

    /// update_entity_lag: vlag = V − v, clamped to ± one slice (or tick).
    fn update_entity_lag(&self, tasks: &mut [Task], p: Pid, env: &FairEnv) {
        let v = self.avg_vruntime(tasks);
        let se = &mut tasks[p].se;
        let limit = calc_delta_fair((2 * se.slice).max(env.tick_ns), &se.load) as i64;
        se.vlag = (v - se.vruntime).clamp(-limit, limit);
    }

    /// place_entity
    fn place_entity(&self, tasks: &mut [Task], p: Pid, flags: u32, env: &FairEnv) {
        if env.legacy.is_some() {
            return self.place_entity_legacy(tasks, p, flags, env);
        }
        let v = self.avg_vruntime(tasks);
        let mut load = self.avg_load;
        if let Some(c) = self.curr_on_rq(tasks) {
            load += weight(c);
        }
        let w = weight(&tasks[p]);
        let se = &mut tasks[p].se;
        se.slice = env.base_slice;
        let mut vslice = calc_delta_fair(se.slice, &se.load) as i64;
        let mut lag = 0i64;
        if env.feat.enabled(Feature::PlaceLag) && self.nr_queued > 0 && se.vlag != 0 {
            lag = se.vlag * (load + w);
            // The kernel divides with div_s64: truncation towards zero.
            lag /= load.max(1);
        }
        se.vruntime = v - lag;
        if se.rel_deadline {
            se.deadline += se.vruntime;
            se.rel_deadline = false;
            return;
        }
        if env.feat.enabled(Feature::PlaceDeadlineInitial) && flags & ENQUEUE_INITIAL != 0 {
            vslice /= 2;
        }
        se.deadline = se.vruntime + vslice;
    }

    /// update_curr: charge the running entity's execution, advance its
    /// vruntime and deadline, and request a lazy resched when its request is
    /// used up or it lost protection to a shorter-slice wakee. Returns the
    /// nanoseconds charged.
    pub fn update_curr(&mut self, tasks: &mut [Task], env: &FairEnv) -> u64 {
        let Some(c) = self.curr else { return 0 };
        let se = &mut tasks[c].se;
        let delta = env.now as i64 - se.exec_start as i64;
        if delta <= 0 {
            return 0;
        }
        let delta = delta as u64;
        se.exec_start = env.now;
        se.sum_exec_runtime += delta;
        se.vruntime += calc_delta_fair(delta, &se.load) as i64;
        let resched = env.legacy.is_none() && update_deadline(se, env);
        self.update_min_vruntime(tasks);
        if self.nr_queued > 1 && (resched || self.did_preempt_short(tasks, c, env)) {
            self.resched_req = true;
        }
        delta
    }

    /// did_preempt_short: curr lost its protection and is no longer eligible.
    fn did_preempt_short(&self, tasks: &[Task], c: Pid, env: &FairEnv) -> bool {
        if !env.feat.enabled(Feature::PreemptShort) || env.legacy.is_some() {
            return false;
        }
        let se = &tasks[c].se;
        if se.vlag == se.deadline {
            return false;
        }
        !self.entity_eligible(tasks, c)
    }

    /// update_load_avg for a task entity and this cfs_rq.
    fn update_load_avg(&mut self, tasks: &mut [Task], p: Pid, flags: u32, env: &FairEnv) {
        let running = self.curr == Some(p);
        let se = &mut tasks[p].se;
        let w = scale_load_down(se.load.weight);
        if se.avg.last_update_time != 0 && flags & SKIP_AGE_LOAD == 0 {
            let on_rq = se.on_rq;
            let runnable = on_rq && !se.sched_delayed;
            pelt::update_se(env.now, &mut se.avg, w, on_rq, runnable, running);
        }
        self.update_cfs_rq_load_avg(env.now);
        if se.avg.last_update_time == 0 && flags & DO_ATTACH != 0 {
            pelt::attach_entity(&mut self.avg, &mut se.avg, w);
        } else if flags & DO_DETACH != 0 {
            pelt::detach_entity(&mut self.avg, &se.avg, w);
        }
    }

    /// update_cfs_rq_load_avg: fold in removed load, then age the cfs_rq.
    pub fn update_cfs_rq_load_avg(&mut self, now: u64) -> bool {
        pelt::update_cfs_rq_load_avg(
            now,
            &mut self.avg,
            &mut self.removed,
            scale_load_down(self.load),
            self.h_nr_runnable as u64,
            self.curr.is_some(),
        )
    }

    /// remove_entity_load_avg: a task leaves this cfs_rq while not queued
    /// (wakeup migration or exit); its load is subtracted lazily.
    pub fn remove_entity_load_avg(&mut self, se: &mut SchedAvg, weight: u64) {
        let last = self.avg.last_update_time;
        pelt::update_blocked_se(last, se, weight);
        pelt::add_removed(&mut self.removed, se);
        se.last_update_time = 0;
    }

    /// enqueue_entity
    pub fn enqueue_entity(&mut self, tasks: &mut [Task], p: Pid, flags: u32, env: &FairEnv) {
        let is_curr = self.curr == Some(p);
        if is_curr {
            self.place_entity(tasks, p, flags, env);
        }
        self.update_curr(tasks, env);
        self.update_load_avg(tasks, p, UPDATE_TG | DO_ATTACH, env);
        if !is_curr {
            self.place_entity(tasks, p, flags, env);
        }
        self.load += tasks[p].se.load.weight;
        self.nr_queued += 1;
        if flags & ENQUEUE_MIGRATED != 0 {
            tasks[p].se.exec_start = 0;
        }
        if !is_curr {
            self.tree_insert(tasks, p);
        }
        tasks[p].se.on_rq = true;
    }

    /// enqueue_task_fair for a task that is not delayed.
    pub fn enqueue_task(&mut self, tasks: &mut [Task], p: Pid, flags: u32, env: &FairEnv) {
        if env.feat.enabled(Feature::UtilEst) {
            pelt::util_est_enqueue(&mut self.avg, &tasks[p].se.avg);
        }
        self.enqueue_entity(tasks, p, flags, env);
        self.h_nr_runnable += 1;
    }

    /// requeue_delayed_entity: a delayed task is woken where it sits.
    pub fn requeue_delayed(&mut self, tasks: &mut [Task], p: Pid, env: &FairEnv) {
        if env.feat.enabled(Feature::UtilEst) {
            pelt::util_est_enqueue(&mut self.avg, &tasks[p].se.avg);
        }
        if env.feat.enabled(Feature::DelayZero) {
            self.update_entity_lag(tasks, p, env);
            if tasks[p].se.vlag > 0 {
                self.nr_queued -= 1;
                let in_tree = self.curr != Some(p);
                if in_tree {
                    self.tree_remove(tasks, p);
                }
                tasks[p].se.vlag = 0;
                self.place_entity(tasks, p, 0, env);
                if in_tree {
                    self.tree_insert(tasks, p);
                }
                self.nr_queued += 1;
            }
        }
        self.update_load_avg(tasks, p, 0, env);
        tasks[p].se.sched_delayed = false;
        self.h_nr_runnable += 1;
    }

    /// dequeue_task_fair + dequeue_entity. Returns false when DELAY_DEQUEUE
    /// kept the sleeping task queued (sched_delayed).
    pub fn dequeue_task(&mut self, tasks: &mut [Task], p: Pid, flags: u32, env: &FairEnv) -> bool {
        let sleep = flags & DEQUEUE_SLEEP != 0;
        if flags & DEQUEUE_DELAYED == 0 && env.feat.enabled(Feature::UtilEst) {
            pelt::util_est_dequeue(&mut self.avg, &tasks[p].se.avg);
            pelt::util_est_update(&mut tasks[p].se.avg, sleep);
        }
        self.update_curr(tasks, env);
        let delay = flags & DEQUEUE_DELAYED == 0
            && sleep
            && env.feat.enabled(Feature::DelayDequeue)
            && env.legacy.is_none();
        if delay && !self.entity_eligible(tasks, p) {
            self.update_load_avg(tasks, p, 0, env);
            tasks[p].se.sched_delayed = true;
            self.h_nr_runnable -= 1;
            return false;
        }
        let action = if flags & DEQUEUE_MIGRATING != 0 {
            UPDATE_TG | DO_DETACH
        } else {
            UPDATE_TG
        };
        self.update_load_avg(tasks, p, action, env);
        if flags & DEQUEUE_DELAYED == 0 {
            self.h_nr_runnable -= 1;
        }
        if env.legacy.is_some() {
            self.dequeue_entity_legacy(tasks, p);
        } else {
            self.update_entity_lag(tasks, p, env);
        }
        if env.feat.enabled(Feature::PlaceRelDeadline) && !sleep && env.legacy.is_none() {
            let se = &mut tasks[p].se;
            se.deadline -= se.vruntime;
            se.rel_deadline = true;
        }
        if self.curr != Some(p) {
            self.tree_remove(tasks, p);
        }
        tasks[p].se.on_rq = false;
        self.load -= tasks[p].se.load.weight;
        self.nr_queued -= 1;
        if flags & DEQUEUE_DELAYED != 0 {
            let se = &mut tasks[p].se;
            se.sched_delayed = false;
            if env.feat.enabled(Feature::DelayZero) && se.vlag > 0 {
                se.vlag = 0;
            }
        }
        self.update_min_vruntime(tasks);
        true
    }

    /// __pick_eevdf (v6.15): the eligible entity with the earliest deadline,
    /// with RUN_TO_PARITY keeping curr while its protection stamp holds.
    pub fn pick_eevdf(&self, tasks: &[Task], env: &FairEnv) -> Option<Pid> {
        if env.legacy.is_some() {
            return self.pick_legacy(tasks);
        }
        let leftmost = self.leftmost(tasks);
        if self.nr_queued == 1 {
            return self
                .curr_on_rq(tasks)
                .map(|_| self.curr.unwrap())
                .or(leftmost);
        }
        let parts = self.avg_parts(tasks);
        let curr = self
            .curr
            .filter(|&c| tasks[c].se.on_rq && self.vruntime_eligible(parts, tasks[c].se.vruntime));
        if let Some(c) = curr {
            let se = &tasks[c].se;
            if env.feat.enabled(Feature::RunToParity) && se.vlag == se.deadline {
                return Some(c);
            }
        }
        let mut best: Option<Pid> = None;
        for &q in &self.tree {
            let se = &tasks[q].se;
            if best.is_some_and(|b| tasks[b].se.deadline <= se.deadline) {
                continue;
            }
            if self.vruntime_eligible(parts, se.vruntime) {
                best = Some(q);
            }
        }
        match (best, curr) {
            (None, c) => c,
            (Some(b), Some(c)) if tasks[c].se.deadline < tasks[b].se.deadline => Some(c),
            (b, _) => b,
        }
    }

    /// The tree's first entity by deadline.
    fn leftmost(&self, tasks: &[Task]) -> Option<Pid> {
        let mut best: Option<Pid> = None;
        for &q in &self.tree {
            if best.is_none_or(|b| tasks[q].se.deadline < tasks[b].se.deadline) {
                best = Some(q);
            }
        }
        best
    }

    /// set_next_entity: take the picked entity out of the tree, stamp its
    /// RUN_TO_PARITY protection and start its execution clock.
    pub fn set_next_entity(&mut self, tasks: &mut [Task], p: Pid, env: &FairEnv) {
        if tasks[p].se.on_rq {
            self.tree_remove(tasks, p);
            self.update_load_avg(tasks, p, UPDATE_TG, env);
        }
        let se = &mut tasks[p].se;
        se.vlag = se.deadline;
        se.exec_start = env.now;
        se.prev_sum_exec_runtime = se.sum_exec_runtime;
        self.curr = Some(p);
    }

    /// put_prev_entity: the previous task goes back into the tree.
    pub fn put_prev_entity(&mut self, tasks: &mut [Task], p: Pid, env: &FairEnv) {
        if tasks[p].se.on_rq {
            self.update_curr(tasks, env);
            self.tree_insert(tasks, p);
            self.update_load_avg(tasks, p, 0, env);
        }
        self.curr = None;
    }

    /// check_preempt_wakeup_fair (v6.15): should waking `p` preempt curr?
    pub fn check_preempt_wakeup(&mut self, tasks: &mut [Task], p: Pid, env: &FairEnv) -> bool {
        let Some(c) = self.curr else { return false };
        if c == p || !env.feat.enabled(Feature::WakeupPreemption) {
            return false;
        }
        self.update_curr(tasks, env);
        if let Some(tun) = env.legacy {
            return self.wakeup_preempt_legacy(tasks, p, &tun);
        }
        if self.do_preempt_short(tasks, p, c, env) {
            // cancel_protect_slice
            tasks[c].se.vlag = tasks[c].se.deadline + 1;
        }
        self.pick_eevdf(tasks, env) == Some(p)
    }

    /// do_preempt_short
    fn do_preempt_short(&self, tasks: &[Task], p: Pid, c: Pid, env: &FairEnv) -> bool {
        if !env.feat.enabled(Feature::PreemptShort) {
            return false;
        }
        if tasks[p].se.slice >= tasks[c].se.slice || !self.entity_eligible(tasks, p) {
            return false;
        }
        tasks[p].se.deadline < tasks[c].se.deadline || !self.entity_eligible(tasks, c)
    }

    /// entity_tick
    pub fn entity_tick(&mut self, tasks: &mut [Task], env: &FairEnv) {
        self.update_curr(tasks, env);
        if let Some(c) = self.curr {
            self.update_load_avg(tasks, c, UPDATE_TG, env);
        }
        if let Some(tun) = env.legacy {
            if self.nr_queued > 1 && self.check_preempt_tick(tasks, &tun) {
                self.resched_req = true;
            }
        }
    }

    /// yield_task_fair (v6.12–v6.16): push curr's deadline one slice out;
    /// its vruntime, and so its lag, is kept (v6.19 also forfeits that).
    pub fn yield_task(&mut self, tasks: &mut [Task], nr_running: usize, env: &FairEnv) {
        let Some(c) = self.curr else { return };
        if nr_running == 1 {
            return;
        }
        self.update_curr(tasks, env);
        let se = &mut tasks[c].se;
        se.deadline += calc_delta_fair(se.slice, &se.load) as i64;
    }

    /// The task the load balancer would take first: the least recently run
    /// queued, non-delayed task (the tail of rq->cfs_tasks).
    pub fn coldest_waiting(&self, tasks: &[Task], ok: impl Fn(&Task) -> bool) -> Option<Pid> {
        self.tree
            .iter()
            .copied()
            .filter(|&q| !tasks[q].se.sched_delayed && ok(&tasks[q]))
            .min_by_key(|&q| (tasks[q].se.exec_start, q))
    }
}

/// update_deadline: a new request once the current one is consumed.
fn update_deadline(se: &mut super::task::Entity, env: &FairEnv) -> bool {
    if se.vruntime < se.deadline {
        return false;
    }
    se.slice = env.base_slice;
    se.deadline = se.vruntime + calc_delta_fair(se.slice, &se.load) as i64;
    true
}
