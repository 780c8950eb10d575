//! The EEVDF fair class (kernel/sched/fair.c, v6.15; slice protection,
//! wakeup preemption and yield as in 6.18.y), one cfs_rq at a time:
//! virtual runtime, the weighted average V, lag, eligibility, virtual
//! deadlines, placement, the pick, wakeup preemption, delayed dequeue,
//! reweighting and the per-entity PELT hooks, including the task-group parts
//! (group entity propagation, tg->load_avg, group shares).
//!
//! All arithmetic follows the kernel's integer forms. A run queue holds its
//! queued entities (curr aside) in a deadline-ordered timeline
//! (`timeline.rs`, the kernel's tasks_timeline): a pick walks it from the
//! earliest deadline to the first eligible entity, which gives the same
//! result as the kernel's augmented rb-tree walk (equal deadlines keep their
//! queueing order, as rb_add does).
//! Entities are tasks or group entities (see [`SeId`]); the walks up and
//! down the hierarchy live in `fair_class.rs`.

use super::cfs_legacy::CfsTunables;
use super::features::{Feature, Features};
use super::pelt::{self, RemovedLoad, SchedAvg};
use super::prio::{calc_delta_fair, scale_load_down, LoadWeight};
use super::task::{Entity, Task};
use super::timeline::Timeline;

/// Enqueue flags (ENQUEUE_*), the subset the model passes.
pub const ENQUEUE_WAKEUP: u32 = 0x01;
pub const ENQUEUE_MIGRATED: u32 = 0x40;
pub const ENQUEUE_INITIAL: u32 = 0x80;
/// Dequeue flags (DEQUEUE_*).
pub const DEQUEUE_SLEEP: u32 = 0x01;
pub const DEQUEUE_MIGRATING: u32 = 0x100;
pub const DEQUEUE_DELAYED: u32 = 0x200;
/// DEQUEUE_SPECIAL: never delay (a special task state: TASK_DEAD in
/// try_to_block_task; throttling uses it too).
pub const DEQUEUE_SPECIAL: u32 = 0x10000;

/// update_load_avg flags.
const UPDATE_TG: u32 = 0x1;
const SKIP_AGE_LOAD: u32 = 0x2;
const DO_ATTACH: u32 = 0x4;
const DO_DETACH: u32 = 0x8;

/// MIN_SHARES: the smallest weight a group entity gets (unscaled on purpose).
pub const MIN_SHARES: u64 = 2;

/// A scheduling entity: a task (its pid) or the entity of task group `tg`
/// on one CPU (`GROUP_SE + tg`).
pub type SeId = usize;
/// Group entities are numbered after every possible pid.
pub const GROUP_SE: SeId = 1 << 40;

/// The task group whose entity `se` is, or None for a task.
pub fn se_group(se: SeId) -> Option<usize> {
    se.checked_sub(GROUP_SE)
}

/// Read access to entities.
pub trait SeStore {
    fn se(&self, id: SeId) -> &Entity;
}

/// The entities of one CPU: all tasks and this CPU's group entities.
pub struct Ents<'a> {
    pub tasks: &'a mut [Task],
    pub groups: &'a mut [Entity],
}

impl Ents<'_> {
    #[inline]
    pub fn se_mut(&mut self, id: SeId) -> &mut Entity {
        match se_group(id) {
            None => &mut self.tasks[id].se,
            Some(g) => &mut self.groups[g],
        }
    }
}

impl SeStore for Ents<'_> {
    #[inline]
    fn se(&self, id: SeId) -> &Entity {
        match se_group(id) {
            None => &self.tasks[id].se,
            Some(g) => &self.groups[g],
        }
    }
}

/// Read-only entities of one CPU.
pub struct EntsRef<'a> {
    pub tasks: &'a [Task],
    pub groups: &'a [Entity],
}

impl SeStore for EntsRef<'_> {
    #[inline]
    fn se(&self, id: SeId) -> &Entity {
        match se_group(id) {
            None => &self.tasks[id].se,
            Some(g) => &self.groups[g],
        }
    }
}

/// What the fair class needs from the rest of the kernel for one call.
pub struct FairEnv<'a> {
    /// rq_clock_task.
    pub now: u64,
    /// rq_clock_pelt: clock_task scaled by the CPU's capacity while busy
    /// (equal to `now` on full-capacity CPUs).
    pub now_pelt: u64,
    /// sysctl_sched_base_slice after boot scaling.
    pub base_slice: u64,
    /// normalized_sysctl_sched_base_slice: the protected quantum without
    /// RUN_TO_PARITY.
    pub min_quantum: u64,
    pub tick_ns: u64,
    pub feat: &'a Features,
    /// `kernel.pelt = "v3.16"`: the v3.16 load tracking decides (fair316.rs).
    pub pelt316: bool,
    /// Legacy CFS tunables when `kernel.fair = "cfs"`, None for EEVDF.
    pub legacy: Option<CfsTunables>,
}

/// When a group entity is operated on: its own cfs_rq (se->my_q) and its
/// task group's shares and tg->load_avg, for propagation and reweighting.
pub struct GroupCtx<'a> {
    pub my_q: &'a mut CfsRq,
    /// tg->shares (scaled).
    pub shares: u64,
    /// tg->load_avg.
    pub tg_load_avg: i64,
    /// tg->runnable_avg (v3.16).
    pub tg_runnable_avg: i64,
}

/// PELT overhead counters of one cfs_rq.
#[derive(Clone, Copy, Debug, Default)]
pub struct PeltCounters {
    pub update_load_avg_calls: u64,
    pub tg_load_avg_updates: u64,
    pub propagations: u64,
}

/// struct cfs_rq: the root one of a CPU or a task group's on one CPU.
/// In `repr(C)` order: what enqueue, dequeue, pick, update_curr and PELT
/// touch on every switch comes first (about 300 bytes), the bandwidth,
/// group and v3.16 fields last.
#[derive(Clone, Debug, Default)]
#[repr(C)]
pub struct CfsRq {
    pub curr: Option<SeId>,
    /// Σ scaled weights of queued entities, curr included.
    pub load: u64,
    pub nr_queued: usize,
    /// Tasks queued below this cfs_rq (h_nr_queued), and those of them not
    /// delayed (h_nr_runnable).
    pub h_nr_queued: usize,
    pub h_nr_runnable: usize,
    pub min_vruntime: i64,
    /// Σ (v_i − min_vruntime)·w_i over the tree.
    pub avg_vruntime: i64,
    /// Σ w_i over the tree.
    pub avg_load: i64,
    /// Queued entities other than curr (tasks_timeline).
    pub tree: Timeline,
    pub avg: SchedAvg,
    pub removed: RemovedLoad,
    pub pelt_stats: PeltCounters,
    /// `--check` only, not a kernel field: what this cfs_rq earned running,
    /// aged with `avg` but never attached to, plus what the entities that
    /// left may have left behind (`allow_rounding`) (observe/check.rs's check_cfs_util).
    /// Boxed: every PELT update tests it, and a pointer keeps that test on
    /// the hot lines.
    pub running_avg: Option<Box<SchedAvg>>,
    pub throttled_clock_pelt_time: u64,
    /// The task group this cfs_rq belongs to (0 = the root group).
    pub tg: usize,
    /// This cfs_rq or an ancestor is throttled (its PELT clock stops).
    pub throttle_count: u32,
    /// An entity with a custom slice was queued here (cfs_rq_min_slice then
    /// looks at every queued entity; otherwise all have the base slice).
    pub has_custom: bool,
    /// resched_curr_lazy was requested by update_curr; the core drains it.
    pub resched_req: bool,
    /// Load changes to pass up to the parent's group entity.
    pub propagate: bool,
    /// CFS bandwidth: runtime left in this CPU's slice of the quota.
    pub runtime_enabled: bool,
    /// update_curr spent runtime since the last settle: the caller refills
    /// or throttles (account_cfs_rq_runtime runs only from update_curr).
    pub runtime_spent: bool,
    pub throttled: bool,
    pub prop_runnable_sum: i64,
    pub runtime_remaining: i64,
    pub throttled_clock_pelt: u64,
    /// When the throttle_count last fell to 0 (the wasted-core check does
    /// not count throttled time as waiting).
    pub unthrottled_at: u64,
    /// task_h_load's cached hierarchical load and when it was computed.
    pub h_load: u64,
    pub last_h_load_update: u64,
    /// This cfs_rq's share of tg->load_avg, when it last changed, and the
    /// change not yet applied to the task group (the caller adds it).
    pub tg_load_avg_contrib: u64,
    pub last_update_tg_load_avg: u64,
    pub tg_load_delta: i64,
    /// v3.16: the change to tg->runnable_avg not yet applied (the caller
    /// adds it), and the load tracking of that kernel.
    pub tg_runnable_delta: i64,
    pub v316: super::pelt316::CfsAvg,
}

fn weight(se: &Entity) -> i64 {
    scale_load_down(se.load.weight) as i64
}

impl CfsRq {
    pub fn new(tg: usize) -> Self {
        CfsRq {
            tg,
            ..Default::default()
        }
    }

    fn key(&self, se: &Entity) -> i64 {
        se.vruntime - self.min_vruntime
    }

    /// cfs_rq_clock_pelt: the rq's PELT clock less the time spent throttled.
    pub fn clock_pelt(&self, now_pelt: u64) -> u64 {
        if self.throttle_count > 0 {
            return self.throttled_clock_pelt - self.throttled_clock_pelt_time;
        }
        now_pelt - self.throttled_clock_pelt_time
    }

    /// avg_vruntime_add + __enqueue_entity
    fn tree_insert(&mut self, s: &impl SeStore, id: SeId) {
        let se = s.se(id);
        self.avg_vruntime += self.key(se) * weight(se);
        self.avg_load += weight(se);
        self.tree.insert(id, se.deadline, se.vruntime);
    }

    /// avg_vruntime_sub + __dequeue_entity
    fn tree_remove(&mut self, s: &impl SeStore, id: SeId) {
        let se = s.se(id);
        self.avg_vruntime -= self.key(se) * weight(se);
        self.avg_load -= weight(se);
        self.tree.remove(id, se.deadline, se.vruntime);
    }

    fn curr_on_rq<'a>(&self, s: &'a impl SeStore) -> Option<&'a Entity> {
        self.curr.map(|c| s.se(c)).filter(|se| se.on_rq)
    }

    /// cfs_rq_min_slice: the smallest slice of curr (if queued) and the
    /// queued entities; None when there are none.
    pub fn min_slice(&self, s: &impl SeStore, base_slice: u64) -> Option<u64> {
        let curr = self.curr_on_rq(s).map(|c| c.slice);
        if !self.has_custom {
            return (curr.is_some() || !self.tree.is_empty()).then_some(base_slice);
        }
        self.tree.iter().map(|q| s.se(q).slice).chain(curr).min()
    }

    /// The numerator and denominator of V − min_vruntime, curr included.
    fn avg_parts(&self, s: &impl SeStore) -> (i64, i64) {
        let (mut avg, mut load) = (self.avg_vruntime, self.avg_load);
        if let Some(c) = self.curr_on_rq(s) {
            avg += self.key(c) * weight(c);
            load += weight(c);
        }
        (avg, load)
    }

    /// avg_vruntime: V, rounded towards −∞ (a left bias, as the kernel does).
    pub fn avg_vruntime(&self, s: &impl SeStore) -> i64 {
        let (mut avg, load) = self.avg_parts(s);
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
    pub fn entity_eligible(&self, s: &impl SeStore, id: SeId) -> bool {
        self.vruntime_eligible(self.avg_parts(s), s.se(id).vruntime)
    }

    /// update_min_vruntime (v6.15: a monotonic reference that rebases the sum).
    fn update_min_vruntime(&mut self, s: &impl SeStore) {
        let mut v = self.min_vruntime;
        let curr = self.curr_on_rq(s).map(|c| c.vruntime);
        if let Some(c) = curr {
            v = c;
        }
        if let Some(m) = self.tree.min_vruntime() {
            v = if curr.is_some() { v.min(m) } else { m };
        }
        let delta = v - self.min_vruntime;
        if delta > 0 {
            self.avg_vruntime -= self.avg_load * delta;
            self.min_vruntime = v;
        }
    }

    /// update_entity_lag: vlag = V − v, clamped to ± one slice (or tick).
    fn update_entity_lag(&self, ents: &mut Ents, id: SeId, env: &FairEnv) {
        let v = self.avg_vruntime(ents);
        let se = ents.se_mut(id);
        let limit = calc_delta_fair((2 * se.slice).max(env.tick_ns), &se.load) as i64;
        se.vlag = (v - se.vruntime).clamp(-limit, limit);
    }

    /// place_entity
    fn place_entity(&self, ents: &mut Ents, id: SeId, flags: u32, env: &FairEnv) {
        if env.legacy.is_some() {
            return self.place_entity_legacy(ents, id, flags, env);
        }
        let v = self.avg_vruntime(ents);
        let mut load = self.avg_load;
        if let Some(c) = self.curr_on_rq(ents) {
            load += weight(c);
        }
        let se = ents.se_mut(id);
        let w = weight(se);
        if !se.custom_slice {
            se.slice = env.base_slice;
        }
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
    /// vruntime and deadline, spend the group's bandwidth, and request a
    /// lazy resched when its request is used up or its protected period is
    /// over (v6.17+). Returns the nanoseconds charged.
    pub fn update_curr(&mut self, ents: &mut Ents, env: &FairEnv) -> u64 {
        let Some(c) = self.curr else { return 0 };
        let se = ents.se_mut(c);
        let delta = env.now as i64 - se.exec_start as i64;
        if delta <= 0 {
            return 0;
        }
        let delta = delta as u64;
        se.exec_start = env.now;
        se.sum_exec_runtime += delta;
        se.vruntime += calc_delta_fair(delta, &se.load) as i64;
        let resched = env.legacy.is_none() && {
            let new_request = update_deadline(se, env);
            new_request || !protect_slice(se)
        };
        self.update_min_vruntime(ents);
        if self.runtime_enabled {
            // account_cfs_rq_runtime; the caller refills or throttles.
            self.runtime_remaining -= delta as i64;
            self.runtime_spent = true;
        }
        if self.nr_queued > 1 && resched {
            self.resched_req = true;
        }
        delta
    }

    /// update_load_avg: age the entity and this cfs_rq, take up a child
    /// group's propagated changes, attach or detach, and pass the change to
    /// the task group's load.
    fn update_load_avg(
        &mut self,
        ents: &mut Ents,
        id: SeId,
        g: Option<&mut GroupCtx>,
        flags: u32,
        env: &FairEnv,
    ) {
        self.pelt_stats.update_load_avg_calls += 1;
        let now = self.clock_pelt(env.now_pelt);
        let running = self.curr == Some(id);
        let se = ents.se_mut(id);
        let w = scale_load_down(se.load.weight);
        if se.avg.attached && flags & SKIP_AGE_LOAD == 0 {
            // se_runnable: a group entity counts its runnable tasks.
            let runnable = if se.sched_delayed {
                0
            } else if se_group(id).is_some() {
                se.runnable_weight
            } else {
                se.on_rq as u64
            };
            pelt::update_load_avg_se(now, &mut se.avg, w, se.on_rq, runnable, running);
        }
        let mut decayed = self.update_cfs_rq_load_avg_at(now);
        if let Some(g) = g {
            decayed |= self.propagate_entity_load_avg(&mut se.avg, w, g);
        }
        if !se.avg.attached && flags & DO_ATTACH != 0 {
            pelt::attach_entity(&mut self.avg, &mut se.avg, w);
            self.add_tg_cfs_propagate(se.avg.load_sum as i64);
            self.update_tg_load_avg(env);
        } else if flags & DO_DETACH != 0 {
            self.allow_rounding(1, se.avg.util_avg);
            pelt::detach_entity(&mut self.avg, &se.avg, w);
            self.add_tg_cfs_propagate(-(se.avg.load_sum as i64));
            self.update_tg_load_avg(env);
        } else if decayed && flags & UPDATE_TG != 0 {
            self.update_tg_load_avg(env);
        }
    }

    /// add_tg_cfs_propagate
    fn add_tg_cfs_propagate(&mut self, runnable_sum: i64) {
        self.propagate = true;
        self.prop_runnable_sum += runnable_sum;
    }

    /// propagate_entity_load_avg: copy a child group's util and runnable
    /// into its entity and re-derive the entity's load, adjusting this
    /// cfs_rq by the differences.
    fn propagate_entity_load_avg(&mut self, se: &mut SchedAvg, w: u64, g: &mut GroupCtx) -> bool {
        let gcfs = &mut *g.my_q;
        if !gcfs.propagate {
            return false;
        }
        gcfs.propagate = false;
        self.add_tg_cfs_propagate(gcfs.prop_runnable_sum);
        pelt::update_tg_cfs_util(&mut self.avg, se, &gcfs.avg);
        pelt::update_tg_cfs_runnable(&mut self.avg, se, &gcfs.avg);
        let gload = scale_load_down(gcfs.load);
        pelt::update_tg_cfs_load(
            &mut self.avg,
            se,
            w,
            &gcfs.avg,
            gload,
            gcfs.prop_runnable_sum,
        );
        gcfs.prop_runnable_sum = 0;
        self.pelt_stats.propagations += 1;
        true
    }

    /// update_tg_load_avg: publish this cfs_rq's load to tg->load_avg. With
    /// TG_LOAD_AVG_FILTER (the kernel's behaviour) at most once per ms and
    /// only when it moved by more than 1/64; without it, on every change.
    fn update_tg_load_avg(&mut self, env: &FairEnv) {
        if self.tg == 0 || env.pelt316 {
            return;
        }
        let filter = env.feat.enabled(Feature::TgLoadAvgFilter);
        if filter && env.now.saturating_sub(self.last_update_tg_load_avg) < 1_000_000 {
            return;
        }
        let delta = self.avg.load_avg as i64 - self.tg_load_avg_contrib as i64;
        let publish = if filter {
            delta.unsigned_abs() > self.tg_load_avg_contrib / 64
        } else {
            delta != 0
        };
        if publish {
            self.tg_load_delta += delta;
            self.tg_load_avg_contrib = self.avg.load_avg;
            self.last_update_tg_load_avg = env.now;
            self.pelt_stats.tg_load_avg_updates += 1;
        }
    }

    /// update_cfs_rq_load_avg at `now` on this cfs_rq's PELT clock: fold in
    /// removed load (passing it up as a negative propagation), then age.
    fn update_cfs_rq_load_avg_at(&mut self, now: u64) -> bool {
        if let Some(r) = &mut self.running_avg {
            // A load of 1: ___update_load_sum counts no running time at 0.
            pelt::update_cfs_rq(now, r, 1, 0, self.curr.is_some());
        }
        self.allow_rounding(self.removed.nr as u64, self.removed.util_avg);
        if self.removed.nr > 0 {
            let divider = pelt::pelt_divider(&self.avg);
            let r = (self.removed.runnable_avg * divider) as i64;
            self.add_tg_cfs_propagate(-r >> pelt::SCHED_CAPACITY_SHIFT);
        }
        pelt::update_cfs_rq_load_avg(
            now,
            &mut self.avg,
            &mut self.removed,
            scale_load_down(self.load),
            self.h_nr_runnable as u64,
            self.curr.is_some(),
        )
    }

    /// `--check`: `n` entities with `util` in all leave. Each takes back
    /// its util_avg, truncated and in its own PELT divider's terms, while
    /// its share of this cfs_rq's sum ages in this divider's: up to 1024/
    /// 46718 (2.2 %) of its util and a unit of truncation stay behind.
    fn allow_rounding(&mut self, n: u64, util: u64) {
        if let Some(r) = &mut self.running_avg {
            let add = 2 * n + util / 32;
            r.util_avg += add;
            r.util_sum += add * pelt::pelt_divider(r);
        }
    }

    /// update_cfs_rq_load_avg from outside the fair class (load balancer,
    /// wakeup placement): `now_pelt` is the rq's PELT clock.
    pub fn update_cfs_rq_load_avg(&mut self, now_pelt: u64) -> bool {
        self.update_cfs_rq_load_avg_at(self.clock_pelt(now_pelt))
    }

    /// cfs_rq_is_decayed, with nothing pending: no load, no removed load,
    /// no propagation, no published contribution, every PELT sum and
    /// average zero, and its clock not behind its window. Ageing it then
    /// only moves its PELT window, in whole 1024 ns periods, so one later
    /// update lands where a chain of updates would: __update_blocked_fair
    /// may pass it over, as the kernel, which takes it off the leaf list.
    pub fn is_decayed_at(&self, now_pelt: u64) -> bool {
        let a = &self.avg;
        self.load == 0
            && self.curr.is_none()
            && self.removed.nr == 0
            && !self.propagate
            && self.tg_load_avg_contrib == 0
            && a.load_sum | a.util_sum | a.runnable_sum | a.load_avg | a.util_avg | a.runnable_avg
                == 0
            && self.clock_pelt(now_pelt) >= a.last_update_time
    }

    /// The cfs_rq part of __update_blocked_fair: age it and publish its
    /// load to the task group when it decayed.
    pub fn update_blocked_load(&mut self, env: &FairEnv) {
        if self.update_cfs_rq_load_avg_at(self.clock_pelt(env.now_pelt)) {
            self.update_tg_load_avg(env);
        }
    }

    /// The entity part of __update_blocked_fair: update_load_avg(UPDATE_TG)
    /// of a group entity, taking up its group's pending propagation.
    pub fn update_blocked_entity(
        &mut self,
        ents: &mut Ents,
        id: SeId,
        g: Option<&mut GroupCtx>,
        env: &FairEnv,
    ) {
        self.update_load_avg(ents, id, g, UPDATE_TG, env);
    }

    /// remove_entity_load_avg: a task leaves this cfs_rq while not queued
    /// (wakeup migration or exit); its load is subtracted lazily.
    pub fn remove_entity_load_avg(&mut self, se: &mut SchedAvg, weight: u64) {
        let last = self.avg.last_update_time;
        pelt::update_blocked_se(last, se, weight);
        pelt::add_removed(&mut self.removed, se);
        se.last_update_time = 0;
        se.attached = false;
    }

    /// update_cfs_group: a group entity's weight follows its share of the
    /// group's load (calc_group_shares); an empty group keeps its weight.
    fn update_cfs_group(&mut self, ents: &mut Ents, id: SeId, g: Option<&GroupCtx>, env: &FairEnv) {
        let Some(g) = g else { return };
        if g.my_q.load == 0 || g.my_q.throttle_count > 0 {
            return;
        }
        let shares = match env.pelt316 {
            true => super::fair316::calc_cfs_shares(g.my_q, g.shares, g.tg_load_avg),
            false => calc_group_shares(g.my_q, g.shares, g.tg_load_avg),
        };
        if ents.se(id).load.weight != shares {
            self.reweight_entity(ents, id, shares, env);
        }
    }

    /// reweight_entity (v6.13+): keep the entity's lag and relative
    /// deadline across the weight change and re-place it.
    pub(super) fn reweight_entity(
        &mut self,
        ents: &mut Ents,
        id: SeId,
        shares: u64,
        env: &FairEnv,
    ) {
        let curr = self.curr == Some(id);
        let on_rq = ents.se(id).on_rq;
        if on_rq {
            self.update_curr(ents, env);
            self.update_entity_lag(ents, id, env);
            if !curr {
                self.tree_remove(ents, id);
            }
            let se = ents.se_mut(id);
            se.deadline -= se.vruntime;
            se.rel_deadline = true;
            self.nr_queued -= 1;
            self.load -= ents.se(id).load.weight;
        }
        let se = ents.se_mut(id);
        let old = scale_load_down(se.load.weight);
        pelt::dequeue_load_avg(&mut self.avg, &se.avg, old);
        let old_weight = se.load.weight as i128;
        let ratio = |v: i64| (v as i128 * old_weight / shares as i128) as i64;
        se.vlag = ratio(se.vlag);
        if se.rel_deadline {
            se.deadline = ratio(se.deadline);
        }
        se.load = LoadWeight::set(shares);
        let w = scale_load_down(shares);
        se.avg.load_avg = w * se.avg.load_sum / pelt::pelt_divider(&se.avg);
        pelt::enqueue_load_avg(&mut self.avg, &se.avg, w);
        if on_rq {
            self.place_entity(ents, id, 0, env);
            self.load += shares;
            if !curr {
                self.tree_insert(ents, id);
            }
            self.nr_queued += 1;
            self.update_min_vruntime(ents);
        }
    }

    /// enqueue_entity
    pub fn enqueue_entity(
        &mut self,
        ents: &mut Ents,
        id: SeId,
        mut g: Option<&mut GroupCtx>,
        flags: u32,
        env: &FairEnv,
    ) {
        let is_curr = self.curr == Some(id);
        if is_curr {
            self.place_entity(ents, id, flags, env);
        }
        self.update_curr(ents, env);
        self.update_load_avg(ents, id, g.as_deref_mut(), UPDATE_TG | DO_ATTACH, env);
        if env.pelt316 {
            let wakeup = flags & ENQUEUE_WAKEUP != 0;
            self.enqueue_entity_load_avg_316(ents, id, g.as_deref_mut(), wakeup, env);
        }
        self.se_update_runnable(ents, id, g.as_deref());
        self.update_cfs_group(ents, id, g.as_deref(), env);
        if !is_curr {
            self.place_entity(ents, id, flags, env);
        }
        self.load += ents.se(id).load.weight;
        self.nr_queued += 1;
        self.has_custom |= ents.se(id).custom_slice;
        if flags & ENQUEUE_MIGRATED != 0 {
            ents.se_mut(id).exec_start = 0;
        }
        if !is_curr {
            self.tree_insert(ents, id);
        }
        ents.se_mut(id).on_rq = true;
    }

    /// se_update_runnable: a group entity's runnable weight is its group's
    /// runnable task count.
    fn se_update_runnable(&self, ents: &mut Ents, id: SeId, g: Option<&GroupCtx>) {
        if let Some(g) = g {
            ents.se_mut(id).runnable_weight = g.my_q.h_nr_runnable as u64;
        }
    }

    /// The entity-level updates of enqueue_task_fair's second loop and
    /// dequeue_entities' second loop, for an ancestor that stays queued.
    pub fn update_queued_entity(
        &mut self,
        ents: &mut Ents,
        id: SeId,
        mut g: Option<&mut GroupCtx>,
        tg_update: bool,
        env: &FairEnv,
    ) {
        let flags = if tg_update { UPDATE_TG } else { 0 };
        self.update_load_avg(ents, id, g.as_deref_mut(), flags, env);
        if env.pelt316 {
            self.update_entity_load_avg_316(ents, id, g.as_deref_mut(), true, env);
        }
        self.se_update_runnable(ents, id, g.as_deref());
        if tg_update {
            self.update_cfs_group(ents, id, g.as_deref(), env);
        }
    }

    /// requeue_delayed_entity: a delayed entity is woken where it sits.
    pub fn requeue_delayed(
        &mut self,
        ents: &mut Ents,
        id: SeId,
        g: Option<&mut GroupCtx>,
        env: &FairEnv,
    ) {
        if env.feat.enabled(Feature::DelayZero) {
            self.update_entity_lag(ents, id, env);
            if ents.se(id).vlag > 0 {
                self.nr_queued -= 1;
                let in_tree = self.curr != Some(id);
                if in_tree {
                    self.tree_remove(ents, id);
                }
                ents.se_mut(id).vlag = 0;
                self.place_entity(ents, id, 0, env);
                if in_tree {
                    self.tree_insert(ents, id);
                }
                self.nr_queued += 1;
            }
        }
        self.update_load_avg(ents, id, g, 0, env);
        ents.se_mut(id).sched_delayed = false;
    }

    /// dequeue_entity. Returns false when DELAY_DEQUEUE kept the sleeping
    /// entity queued (sched_delayed); the caller adjusts the counts.
    pub fn dequeue_entity(
        &mut self,
        ents: &mut Ents,
        id: SeId,
        mut g: Option<&mut GroupCtx>,
        flags: u32,
        env: &FairEnv,
    ) -> bool {
        let sleep = flags & DEQUEUE_SLEEP != 0;
        self.update_curr(ents, env);
        let delay = flags & (DEQUEUE_DELAYED | DEQUEUE_SPECIAL) == 0
            && sleep
            && env.feat.enabled(Feature::DelayDequeue)
            && env.legacy.is_none();
        if delay && !self.entity_eligible(ents, id) {
            self.update_load_avg(ents, id, g.as_deref_mut(), 0, env);
            if env.pelt316 {
                // Still queued: v3.16 keeps it runnable (it had no delay).
                self.update_entity_load_avg_316(ents, id, g, true, env);
            }
            ents.se_mut(id).sched_delayed = true;
            return false;
        }
        let action = if flags & DEQUEUE_MIGRATING != 0 {
            UPDATE_TG | DO_DETACH
        } else {
            UPDATE_TG
        };
        self.update_load_avg(ents, id, g.as_deref_mut(), action, env);
        if env.pelt316 {
            self.dequeue_entity_load_avg_316(ents, id, g.as_deref_mut(), sleep, env);
        }
        self.se_update_runnable(ents, id, g.as_deref());
        if env.legacy.is_some() {
            self.dequeue_entity_legacy(ents, id);
        } else {
            self.update_entity_lag(ents, id, env);
        }
        // Out of the timeline before the deadline turns relative (it is
        // the key the timeline holds it by).
        if self.curr != Some(id) {
            self.tree_remove(ents, id);
        }
        if env.feat.enabled(Feature::PlaceRelDeadline) && !sleep && env.legacy.is_none() {
            let se = ents.se_mut(id);
            se.deadline -= se.vruntime;
            se.rel_deadline = true;
        }
        ents.se_mut(id).on_rq = false;
        self.load -= ents.se(id).load.weight;
        self.nr_queued -= 1;
        self.update_cfs_group(ents, id, g.as_deref(), env);
        self.update_min_vruntime(ents);
        if flags & DEQUEUE_DELAYED != 0 {
            let se = ents.se_mut(id);
            se.sched_delayed = false;
            if env.feat.enabled(Feature::DelayZero) && se.vlag > 0 {
                se.vlag = 0;
            }
        }
        true
    }

    /// __pick_eevdf (v6.18): the eligible entity with the earliest deadline;
    /// with `protect`, an eligible curr keeps the CPU within its protected
    /// period (protect_slice).
    pub fn pick_eevdf(&self, s: &impl SeStore, env: &FairEnv, protect: bool) -> Option<SeId> {
        if env.legacy.is_some() {
            return self.pick_legacy(s);
        }
        let leftmost = self.tree.first();
        if self.nr_queued == 1 {
            return self.curr_on_rq(s).and(self.curr).or(leftmost);
        }
        let parts = self.avg_parts(s);
        let curr = self
            .curr
            .filter(|&c| s.se(c).on_rq && self.vruntime_eligible(parts, s.se(c).vruntime));
        if let Some(c) = curr.filter(|&c| protect && protect_slice(s.se(c))) {
            return Some(c);
        }
        // The timeline is in deadline order: the first eligible one wins.
        let best = self
            .tree
            .iter()
            .find(|&q| self.vruntime_eligible(parts, s.se(q).vruntime));
        match (best, curr) {
            (None, c) => c,
            (Some(b), Some(c)) if s.se(c).deadline < s.se(b).deadline => Some(c),
            (b, _) => b,
        }
    }

    /// The numbers behind a pick, for its decision record (built only when
    /// traced; no kernel twin): the entities eligible (curr included), the
    /// earliest-deadline eligible task other than `picked`, picked's lag
    /// as the kernel computes it (avg_vruntime − vruntime), and whether
    /// slice protection kept curr where the unprotected pick differs.
    pub fn pick_detail(&self, s: &impl SeStore, env: &FairEnv, picked: SeId) -> PickDetail {
        let parts = self.avg_parts(s);
        let curr = self.curr.filter(|&c| s.se(c).on_rq);
        let eligible: Vec<SeId> = (self.tree.iter().chain(curr))
            .filter(|&q| self.vruntime_eligible(parts, s.se(q).vruntime))
            .collect();
        // min_by_key keeps the first of equal deadlines: the timeline's
        // queueing order, with curr last, as __pick_eevdf breaks ties.
        let runner_up = (eligible.iter().copied())
            .filter(|&q| q != picked && se_group(q).is_none())
            .min_by_key(|&q| s.se(q).deadline);
        PickDetail {
            eligible: eligible.len() as u32,
            runner_up,
            lag: self.avg_vruntime(s) - s.se(picked).vruntime,
            protected: curr == Some(picked) && self.pick_eevdf(s, env, false) != Some(picked),
        }
    }

    /// set_next_entity: take the picked entity out of the tree, set its
    /// protected period and start its execution clock.
    pub fn set_next_entity(
        &mut self,
        ents: &mut Ents,
        id: SeId,
        g: Option<&mut GroupCtx>,
        env: &FairEnv,
    ) {
        if ents.se(id).on_rq {
            self.tree_remove(ents, id);
            self.update_load_avg(ents, id, g, UPDATE_TG, env);
            let min_slice = self.min_slice(ents, env.base_slice);
            set_protect_slice(ents.se_mut(id), min_slice, env);
        }
        let se = ents.se_mut(id);
        se.exec_start = env.now;
        se.prev_sum_exec_runtime = se.sum_exec_runtime;
        self.curr = Some(id);
    }

    /// put_prev_entity: the previous entity goes back into the tree.
    pub fn put_prev_entity(
        &mut self,
        ents: &mut Ents,
        id: SeId,
        mut g: Option<&mut GroupCtx>,
        env: &FairEnv,
    ) {
        if ents.se(id).on_rq {
            self.update_curr(ents, env);
            self.tree_insert(ents, id);
            self.update_load_avg(ents, id, g.as_deref_mut(), 0, env);
            if env.pelt316 {
                self.update_entity_load_avg_316(ents, id, g, true, env);
            }
        }
        self.curr = None;
    }

    /// The EEVDF part of check_preempt_wakeup_fair (v6.18), on the cfs_rq
    /// where the waking entity `p` and curr's entity meet: preempt when `p`
    /// is the pick. A wakee with a shorter slice (PREEMPT_SHORT) is weighed
    /// against an unprotected curr; if it does not preempt, curr's
    /// protection is cut to the smallest queued slice (update_protect_slice).
    pub fn check_preempt_wakeup(&mut self, ents: &mut Ents, p: SeId, env: &FairEnv) -> bool {
        let Some(c) = self.curr else { return false };
        if c == p {
            return false;
        }
        self.update_curr(ents, env);
        if let Some(tun) = env.legacy {
            return self.wakeup_preempt_legacy(ents, p, &tun);
        }
        let short = env.feat.enabled(Feature::PreemptShort) && ents.se(p).slice < ents.se(c).slice;
        if self.pick_eevdf(ents, env, !short) == Some(p) {
            if short {
                cancel_protect_slice(ents.se_mut(c));
            }
            return true;
        }
        if short && env.feat.enabled(Feature::RunToParity) {
            let quantum = self.min_slice(ents, env.base_slice).unwrap_or(u64::MAX);
            update_protect_slice(ents.se_mut(c), quantum);
        }
        false
    }

    /// entity_tick
    pub fn entity_tick(&mut self, ents: &mut Ents, mut g: Option<&mut GroupCtx>, env: &FairEnv) {
        self.update_curr(ents, env);
        if let Some(c) = self.curr {
            self.update_load_avg(ents, c, g.as_deref_mut(), UPDATE_TG, env);
            if env.pelt316 {
                self.update_entity_load_avg_316(ents, c, g.as_deref_mut(), true, env);
                self.update_cfs_rq_blocked_load_316(true, env);
            }
            self.update_cfs_group(ents, c, g.as_deref(), env);
        }
        if let Some(tun) = env.legacy {
            if self.nr_queued > 1 && self.check_preempt_tick(ents, &tun) {
                self.resched_req = true;
            }
        }
    }

    /// yield_task_fair (v6.19, in 6.18.y stable as "Forfeit vruntime on
    /// yield"): an eligible curr gives up the rest of its request, its
    /// vruntime moved to its deadline and a new request begun; an
    /// ineligible one is left as it is (it is not the next pick anyway).
    pub fn yield_task(&mut self, ents: &mut Ents, nr_running: usize, env: &FairEnv) {
        let Some(c) = self.curr else { return };
        if nr_running == 1 {
            return;
        }
        self.update_curr(ents, env);
        if !self.entity_eligible(ents, c) {
            return;
        }
        let se = ents.se_mut(c);
        se.vruntime = se.deadline;
        se.deadline += calc_delta_fair(se.slice, &se.load) as i64;
        self.update_min_vruntime(ents);
    }
}

/// What `CfsRq::pick_detail` finds.
pub struct PickDetail {
    pub eligible: u32,
    pub runner_up: Option<SeId>,
    pub lag: i64,
    pub protected: bool,
}

/// calc_group_shares: tg->shares × this CPU's group load / the group's
/// load everywhere (tg->load_avg with this CPU's current value swapped in),
/// clamped to [MIN_SHARES, tg->shares].
pub fn calc_group_shares(gcfs: &CfsRq, tg_shares: u64, tg_load_avg: i64) -> u64 {
    let load = scale_load_down(gcfs.load).max(gcfs.avg.load_avg) as i64;
    let tg_weight = tg_load_avg - gcfs.tg_load_avg_contrib as i64 + load;
    let mut shares = tg_shares as i64 * load;
    if tg_weight != 0 {
        shares /= tg_weight;
    }
    shares.clamp(MIN_SHARES as i64, tg_shares as i64) as u64
}

/// set_protect_slice: a picked entity keeps the CPU up to its deadline, or
/// for the smallest slice still queued (`min_slice`) if that is shorter
/// (RUN_TO_PARITY); without RUN_TO_PARITY for the unscaled base slice at
/// most.
fn set_protect_slice(se: &mut Entity, min_slice: Option<u64>, env: &FairEnv) {
    let quantum = match env.feat.enabled(Feature::RunToParity) {
        true => min_slice.unwrap_or(u64::MAX),
        false => env.min_quantum,
    }
    .min(se.slice);
    se.vprot = se.deadline;
    if quantum != se.slice {
        update_protect_slice(se, quantum);
    }
}

/// update_protect_slice: protect no further than `quantum` from here.
fn update_protect_slice(se: &mut Entity, quantum: u64) {
    se.vprot = se
        .vprot
        .min(se.vruntime + calc_delta_fair(quantum, &se.load) as i64);
}

/// protect_slice: curr is within its protected period.
fn protect_slice(se: &Entity) -> bool {
    se.vruntime < se.vprot
}

/// cancel_protect_slice
pub(super) fn cancel_protect_slice(se: &mut Entity) {
    if protect_slice(se) {
        se.vprot = se.vruntime;
    }
}

/// update_deadline: a new request once the current one is consumed.
fn update_deadline(se: &mut Entity, env: &FairEnv) -> bool {
    if se.vruntime < se.deadline {
        return false;
    }
    if !se.custom_slice {
        se.slice = env.base_slice;
    }
    se.deadline = se.vruntime + calc_delta_fair(se.slice, &se.load) as i64;
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_shares_follow_the_local_share_of_the_group_load() {
        let mut g = CfsRq::new(1);
        let shares = 1024 << 10;
        // Alone on its CPU: the whole weight (the UP case of the kernel's
        // comment), however little PELT history there is.
        g.load = 1024 << 10;
        assert_eq!(calc_group_shares(&g, shares, 0), shares);
        // Half of the group's load is here: half of its weight.
        g.avg.load_avg = 1024;
        g.tg_load_avg_contrib = 1024;
        assert_eq!(calc_group_shares(&g, shares, 2048), shares / 2);
        // Nothing queued and no history: MIN_SHARES.
        let empty = CfsRq::new(1);
        assert_eq!(calc_group_shares(&empty, shares, 4096), MIN_SHARES);
    }
}
