//! The fair class's side of the v3.16 load tracking (`kernel.pelt =
//! "v3.16"`; arithmetic in `pelt316.rs`): kernel/sched/fair.c at the v3.16
//! tag, its update_entity_load_avg, enqueue/dequeue_entity_load_avg,
//! update_cfs_rq_blocked_load, migrate_task_rq_fair, update_rq_runnable_avg,
//! update_blocked_averages, calc_cfs_shares, weighted_cpuload and
//! task_h_load.
//!
//! Today's PELT keeps running beside it for what v3.16 did not have: the
//! utilisation signals (util_avg, runnable_avg, util_est) that schedutil,
//! wakeup placement and the balancer's utilisation paths read. What v3.16
//! decides with is its own: a group entity's weight (shares), the load the
//! balancer and wake_affine see, and task_h_load.
//!
//! v3.16 had no capacity-scaled PELT clock; its cfs_rq_clock_task is the
//! model's cfs_rq PELT clock, which is the same clock on full-capacity
//! CPUs (every preset but the big.LITTLE ones).

use super::fair::{CfsRq, Ents, FairEnv, GroupCtx, SeId, GROUP_SE, MIN_SHARES};
use super::features::PeltModel;
use super::pelt316::{self, EntityAvg};
use super::prio::{scale_load, scale_load_down};
use super::task::{Entity, Pid};
use super::Kernel;

/// __update_entity_load_avg_contrib's group part: __update_tg_runnable_avg
/// from the group entity's own sums, then __update_group_entity_contrib
/// with tg->load_avg and tg->runnable_avg as this call leaves them.
fn group_contrib(sa: &mut EntityAvg, g: &mut GroupCtx) {
    let q = &mut *g.my_q;
    q.tg_runnable_delta += pelt316::tg_runnable_delta(sa, &mut q.v316.tg_runnable_contrib);
    pelt316::group_entity_contrib(
        sa,
        q.tg_load_avg_contrib,
        scale_load_down(g.shares),
        g.tg_load_avg + q.tg_load_delta,
        g.tg_runnable_avg + q.tg_runnable_delta,
    );
}

/// calc_cfs_shares (v3.16, with calc_tg_weight): tg->shares × this CPU's
/// queued weight / the group's weight everywhere, where tg->load_avg (the
/// runnable + blocked averages the CPUs published) has this CPU's
/// published part replaced by its queued weight; clamped to
/// [MIN_SHARES, tg->shares]. Computed unscaled, as v3.16 was.
pub fn calc_cfs_shares(gcfs: &CfsRq, tg_shares: u64, tg_load_avg: i64) -> u64 {
    let load = scale_load_down(gcfs.load) as i64;
    let tg_weight = tg_load_avg - gcfs.tg_load_avg_contrib as i64 + load;
    let shares_max = scale_load_down(tg_shares) as i64;
    let mut shares = shares_max * load;
    if tg_weight != 0 {
        shares /= tg_weight;
    }
    scale_load(shares.clamp(MIN_SHARES as i64, shares_max) as u64)
}

impl CfsRq {
    /// cfs_rq_clock_task.
    fn clock_task_316(&self, env: &FairEnv) -> u64 {
        self.clock_pelt(env.now_pelt)
    }

    /// update_entity_load_avg: age the entity (a group entity on its own
    /// cfs_rq's clock), recompute its contribution and, with
    /// `update_cfs_rq`, move this cfs_rq's runnable or blocked load by the
    /// change.
    pub(super) fn update_entity_load_avg_316(
        &mut self,
        ents: &mut Ents,
        id: SeId,
        g: Option<&mut GroupCtx>,
        update_cfs_rq: bool,
        env: &FairEnv,
    ) {
        let now = match &g {
            Some(g) => g.my_q.clock_task_316(env),
            None => self.clock_task_316(env),
        };
        let se = ents.se_mut(id);
        if !pelt316::update_entity_runnable_avg(now, &mut se.avg316, se.on_rq) {
            return;
        }
        let old = se.avg316.load_avg_contrib;
        match g {
            None => pelt316::task_entity_contrib(&mut se.avg316, scale_load_down(se.load.weight)),
            Some(g) => group_contrib(&mut se.avg316, g),
        }
        if !update_cfs_rq {
            return;
        }
        let delta = se.avg316.load_avg_contrib.wrapping_sub(old) as i64;
        if se.on_rq {
            let v = &mut self.v316;
            v.runnable_load_avg = v.runnable_load_avg.wrapping_add(delta as u64);
        } else {
            pelt316::subtract_blocked_load_contrib(&mut self.v316, delta.wrapping_neg());
        }
    }

    /// update_cfs_rq_blocked_load: take off the load of entities that
    /// migrated away while blocked, decay the blocked load by the whole
    /// periods (2^20 ns) since the last decay, counting them, and publish
    /// to tg->load_avg (__update_cfs_rq_tg_load_contrib: beyond 1/8, or
    /// `force`). The root cfs_rq publishes too: root_task_group's
    /// load_avg was written, though read by nobody, until v4.5.
    pub(super) fn update_cfs_rq_blocked_load_316(&mut self, force: bool, env: &FairEnv) {
        let now = self.clock_task_316(env) >> pelt316::DECAY_SHIFT;
        let decays = now.wrapping_sub(self.v316.last_decay);
        if decays == 0 && !force {
            return;
        }
        let v = &mut self.v316;
        if v.removed_load != 0 {
            let removed = std::mem::take(&mut v.removed_load);
            pelt316::subtract_blocked_load_contrib(v, removed as i64);
        }
        if decays != 0 {
            v.blocked_load_avg = pelt316::decay_load(v.blocked_load_avg, decays);
            v.decay_counter = v.decay_counter.wrapping_add(decays);
            v.last_decay = now;
        }
        let d = pelt316::tg_load_contrib_delta(&self.v316, &mut self.tg_load_avg_contrib, force);
        if d != 0 {
            self.tg_load_delta += d;
            self.pelt_stats.tg_load_avg_updates += 1;
        }
    }

    /// enqueue_entity_load_avg: a new or migrated entity (decay_count ≤ 0)
    /// starts on this CPU's clock, a wakeup migration first aging it by the
    /// decays it carried; a local wakeup catches up with this cfs_rq's
    /// decays and leaves the blocked load. Its contribution joins the
    /// runnable load.
    pub(super) fn enqueue_entity_load_avg_316(
        &mut self,
        ents: &mut Ents,
        id: SeId,
        mut g: Option<&mut GroupCtx>,
        wakeup: bool,
        env: &FairEnv,
    ) {
        let mut wakeup = wakeup;
        let sa = &mut ents.se_mut(id).avg316;
        if sa.decay_count <= 0 {
            sa.last_runnable_update = env.now_pelt;
            if sa.decay_count != 0 {
                let missed = sa.decay_count.unsigned_abs() << pelt316::DECAY_SHIFT;
                sa.last_runnable_update = sa.last_runnable_update.wrapping_sub(missed);
                self.update_entity_load_avg_316(ents, id, g.as_deref_mut(), false, env);
                ents.se_mut(id).avg316.decay_count = 0;
            }
            wakeup = false;
        } else {
            pelt316::synchronize_entity_decay(sa, self.v316.decay_counter);
        }
        if wakeup {
            let contrib = ents.se(id).avg316.load_avg_contrib;
            pelt316::subtract_blocked_load_contrib(&mut self.v316, contrib as i64);
            self.update_entity_load_avg_316(ents, id, g, false, env);
        }
        let contrib = ents.se(id).avg316.load_avg_contrib;
        let v = &mut self.v316;
        v.runnable_load_avg = v.runnable_load_avg.wrapping_add(contrib);
        self.update_cfs_rq_blocked_load_316(!wakeup, env);
    }

    /// dequeue_entity_load_avg: the entity's contribution leaves the
    /// runnable load; a sleeping one joins the blocked load, remembering
    /// the decay counter.
    pub(super) fn dequeue_entity_load_avg_316(
        &mut self,
        ents: &mut Ents,
        id: SeId,
        g: Option<&mut GroupCtx>,
        sleep: bool,
        env: &FairEnv,
    ) {
        self.update_entity_load_avg_316(ents, id, g, true, env);
        self.update_cfs_rq_blocked_load_316(!sleep, env);
        let sa = &mut ents.se_mut(id).avg316;
        let v = &mut self.v316;
        v.runnable_load_avg = v.runnable_load_avg.wrapping_sub(sa.load_avg_contrib);
        if sleep {
            v.blocked_load_avg = v.blocked_load_avg.wrapping_add(sa.load_avg_contrib);
            sa.decay_count = v.decay_counter as i64;
        }
    }
}

use super::fair::SeStore;

impl Kernel {
    fn pelt316(&self) -> bool {
        self.cfg.pelt == PeltModel::V316
    }

    /// weighted_cpuload (v3.16: the root's runnable_load_avg) or cpu_load
    /// (today: its load_avg, blocked load included): a CPU's load as the
    /// balancer and wake_affine read it.
    pub fn cpu_load(&self, cpu: usize) -> u64 {
        let cfs = &self.rqs[cpu].cfs;
        match self.pelt316() {
            true => cfs.v316.runnable_load_avg,
            false => cfs.avg.load_avg,
        }
    }

    /// The load task_h_load divides by: a cfs_rq's runnable_load_avg
    /// (v3.16) or load_avg.
    pub(super) fn h_load_base(&self, cfs: &CfsRq) -> u64 {
        match self.pelt316() {
            true => cfs.v316.runnable_load_avg,
            false => cfs.avg.load_avg,
        }
    }

    /// An entity's part of it: load_avg_contrib (v3.16) or load_avg.
    pub(super) fn h_load_part(&self, se: &Entity) -> u64 {
        match self.pelt316() {
            true => se.avg316.load_avg_contrib,
            false => se.avg.load_avg,
        }
    }

    /// migrate_task_rq_fair (v3.16), from set_task_cpu: a blocked task
    /// leaving `old` takes the decays it missed along (as a negative
    /// decay_count) and its contribution is queued for removal from the
    /// old blocked load. A queued task (decay_count 0) carries nothing.
    pub(super) fn migrate_task_rq_fair_316(&mut self, p: Pid, old: usize) {
        if !self.pelt316() || self.tasks[p].se.avg316.decay_count == 0 {
            return;
        }
        let tg = self.tasks[p].tg;
        let counter = self.cfs_rq(old, tg).v316.decay_counter;
        let sa = &mut self.tasks[p].se.avg316;
        sa.decay_count = (pelt316::synchronize_entity_decay(sa, counter) as i64).wrapping_neg();
        let contrib = sa.load_avg_contrib;
        let v = &mut self.cfs_rq_mut(old, tg).v316;
        v.removed_load = v.removed_load.wrapping_add(contrib);
    }

    /// init_task_runnable_average (v3.16), from wake_up_new_task: one slice
    /// runnable out of one. v3.16 took CFS's sched_slice; the model's is
    /// the base slice (the new task's contribution is within 0.1 % of its
    /// weight either way).
    pub(super) fn init_task_runnable_average_316(&mut self, p: Pid) {
        if self.pelt316() {
            let se = &mut self.tasks[p].se;
            let w = scale_load_down(se.load.weight);
            pelt316::init_task_runnable_average(&mut se.avg316, self.base_slice, w);
        }
    }

    /// update_rq_runnable_avg (v3.16): the CPU's own runnable average and
    /// its publication to root_task_group.runnable_avg (1/64 filter), from
    /// enqueue_task_fair, dequeue_task_fair and task_tick_fair (v3.16 also
    /// calls it on idle entry and exit; the model does not, which changes
    /// the average only by the rounding of one update split in two).
    pub(super) fn update_rq_runnable_avg_316(&mut self, cpu: usize, runnable: bool) {
        if !self.pelt316() {
            return;
        }
        let now = self.clock_pelt(cpu);
        let v = &mut self.rqs[cpu].cfs.v316;
        pelt316::update_entity_runnable_avg(now, &mut v.rq_avg, runnable);
        let d = pelt316::tg_runnable_delta(&v.rq_avg, &mut v.tg_runnable_contrib);
        self.rqs[cpu].cfs.tg_runnable_delta += d;
        self.settle_root_316(cpu, Some(cpu));
    }

    /// update_blocked_averages (v3.16): every group cfs_rq of `cpu`, children
    /// first, decays its blocked load and publishes it, then its group
    /// entity is updated; then the root and rq->avg. v3.16 walks only the
    /// cfs_rqs on the leaf list (those with a queued or not fully decayed
    /// entity); the others' loads are zero or stay so.
    pub(super) fn update_blocked_averages_316(&mut self, cpu: usize) {
        for g in (1..self.groups.count()).rev() {
            if self.rqs[cpu].gcfs[g].throttle_count > 0 {
                continue;
            }
            self.at_cfs_paid(cpu, g, None, None, |q, _, _, env| {
                q.update_cfs_rq_blocked_load_316(true, env)
            });
            let (s, c) = (GROUP_SE + g, self.groups.parent(g));
            self.at_cfs_paid(cpu, c, Some(g), None, |q, e, gc, env| {
                q.update_entity_load_avg_316(e, s, gc, true, env)
            });
        }
        self.at_cfs_paid(cpu, 0, None, None, |q, _, _, env| {
            q.update_cfs_rq_blocked_load_316(true, env)
        });
        let runnable = self.rqs[cpu].nr_running != 0;
        self.update_rq_runnable_avg_316(cpu, runnable);
    }

    /// effective_load (v3.16): how adding `wl` of queued weight (and `wg`
    /// to the group's total) to group `tg` on `cpu` changes the root's
    /// weight, through each level's share computed as calc_cfs_shares does.
    fn effective_load_316(&self, tg: usize, cpu: usize, wl: i64, wg: i64) -> i64 {
        let (mut wl, mut wg, mut g) = (wl, wg, tg);
        while g != 0 {
            let (q, t) = (&self.rqs[cpu].gcfs[g], &self.groups.tgs[g]);
            let load = scale_load_down(q.load) as i64;
            let total = wg + t.load_avg - q.tg_load_avg_contrib as i64 + load;
            let w = load + wl;
            let shares = scale_load_down(t.shares) as i64;
            wl = match total > 0 && w < total {
                true => w * shares / total,
                false => shares,
            };
            wl = wl.max(MIN_SHARES as i64)
                - scale_load_down(self.rqs[cpu].gse[g].load.weight) as i64;
            wg = 0;
            g = self.groups.parent(g);
        }
        wl
    }

    /// wake_affine's weighing in v3.16, in WA_WEIGHT's place: `this` when
    /// its runnable load with p's weight added (through effective_load)
    /// is within half the domain's imbalance_pct of prev's runnable load,
    /// which p, blocked, is not part of. A sync wakeup first takes the
    /// waker's weight off `this`. Weights are load.weight, unscaled.
    pub(super) fn wake_affine_316(
        &self,
        p: Pid,
        this: usize,
        prev: usize,
        sync_waker: Option<Pid>,
        imbalance_pct: i64,
    ) -> bool {
        let weight = |t: Pid| scale_load_down(self.tasks[t].se.load.weight) as i64;
        let mut this_load = self.cpu_load(this) as i64;
        let mut load = self.cpu_load(prev) as i64;
        if let Some(w) = sync_waker {
            let (tg, wt) = (self.tasks[w].tg, weight(w));
            this_load += self.effective_load_316(tg, this, -wt, -wt);
            load += self.effective_load_316(tg, prev, 0, -wt);
        }
        let (tg, wt) = (self.tasks[p].tg, weight(p));
        let mut this_eff = 100 * self.capacity_of(prev) as i64;
        let mut prev_eff = (100 + (imbalance_pct - 100) / 2) * self.capacity_of(this) as i64;
        if this_load > 0 {
            this_eff *= this_load + self.effective_load_316(tg, this, wt, wt);
            prev_eff *= load + self.effective_load_316(tg, prev, 0, wt);
        }
        this_eff <= prev_eff
    }

    /// The root cfs_rq's writes to root_task_group's load_avg and
    /// runnable_avg (one cache line, as the group's own).
    pub(super) fn settle_root_316(&mut self, cpu: usize, payer: Option<usize>) {
        let cfs = &mut self.rqs[cpu].cfs;
        let load = std::mem::take(&mut cfs.tg_load_delta);
        let runnable = std::mem::take(&mut cfs.tg_runnable_delta);
        if load != 0 {
            self.tg_load_avg_add(cpu, 0, load, payer);
        }
        if runnable != 0 {
            self.tg_runnable_avg_add(cpu, 0, runnable, payer);
        }
    }

    /// Group `g`'s cfs_rq's pending write to tg->runnable_avg on `cpu`.
    pub(super) fn settle_runnable_316(&mut self, cpu: usize, g: usize, payer: Option<usize>) {
        let d = std::mem::take(&mut self.rqs[cpu].gcfs[g].tg_runnable_delta);
        if d != 0 {
            self.tg_runnable_avg_add(cpu, g, d, payer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v316_shares_follow_the_queued_weight() {
        let shares = scale_load(1024);
        let mut g = CfsRq::new(1);
        // Alone: tg->load_avg is what this CPU published, replaced by its
        // queued weight: the whole share.
        g.load = scale_load(1024);
        g.tg_load_avg_contrib = 700;
        assert_eq!(calc_cfs_shares(&g, shares, 700), shares);
        // Two more tasks' worth published by other CPUs: a third.
        assert_eq!(
            calc_cfs_shares(&g, shares, 700 + 2048),
            scale_load(1024 / 3)
        );
        // The blocked load others published counts (v3.16's tg_load_contrib
        // is runnable + blocked): a CPU with one queued task among much
        // sleeping load elsewhere gets a sliver.
        assert_eq!(calc_cfs_shares(&g, shares, 700 + 100_000), scale_load(10));
        // Nothing queued: MIN_SHARES, in v3.16's unscaled units.
        let empty = CfsRq::new(1);
        assert_eq!(
            calc_cfs_shares(&empty, shares, 4096),
            scale_load(MIN_SHARES)
        );
    }
}
