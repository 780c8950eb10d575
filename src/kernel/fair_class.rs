//! The fair sched_class's task operations (kernel/sched/fair.c): the walks
//! up and down the entity hierarchy of enqueue_task_fair, dequeue_entities,
//! pick_task_fair, pick_next_task_fair's put/set path, put_prev_task_fair,
//! task_tick_fair and check_preempt_wakeup_fair's find_matching_se, plus
//! task_h_load. A task in the root group is one level deep and these walks
//! reduce to one call on the root cfs_rq.

use super::core::{BlockedCalls, BlockedClean};
use super::fair::{
    cancel_protect_slice, se_group, CfsRq, Ents, EntsRef, FairEnv, GroupCtx, SeId, DEQUEUE_DELAYED,
    DEQUEUE_SLEEP, DEQUEUE_SPECIAL, ENQUEUE_WAKEUP, GROUP_SE,
};
use super::features::{Feature, PeltModel};
use super::pelt;
use super::rt::Policy;
use super::task::Pid;
use super::tracepoint::TraceEvent;
use super::Kernel;

/// How dequeue_task_fair ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dequeued {
    /// DELAY_DEQUEUE kept the task queued (sched_delayed).
    Delayed,
    /// Off its cfs_rq; `counted` when the walk reached the root, so the
    /// task leaves rq->nr_running (a throttled hierarchy already left it).
    Done { counted: bool },
}

/// cfs_rq `c` of a CPU: the root or a group's.
fn cfs_mut<'a>(root: &'a mut CfsRq, groups: &'a mut [CfsRq], c: usize) -> &'a mut CfsRq {
    if c == 0 {
        root
    } else {
        &mut groups[c]
    }
}

/// cfs_rq `c` and group `g`'s own cfs_rq (g is a child of c).
fn cfs_pair<'a>(
    root: &'a mut CfsRq,
    groups: &'a mut [CfsRq],
    c: usize,
    g: usize,
) -> (&'a mut CfsRq, &'a mut CfsRq) {
    if c == 0 {
        (root, &mut groups[g])
    } else {
        let [a, b] = groups
            .get_disjoint_mut([c, g])
            .expect("parent and child differ");
        (a, b)
    }
}

impl Kernel {
    /// The FairEnv of `cpu` at the current instant.
    pub(super) fn fair_env(&self, cpu: usize) -> FairEnv<'_> {
        FairEnv {
            now: self.rq_clock_read(cpu),
            now_pelt: self.clock_pelt(cpu),
            base_slice: self.base_slice,
            min_quantum: self.cfg.base_slice_ns,
            tick_ns: self.tick_ns,
            feat: &self.cfg.features,
            pelt316: self.cfg.pelt == PeltModel::V316,
            legacy: self.legacy_cfs,
        }
    }

    /// cfs_rq_of(se) as a task group id.
    pub fn cfs_of(&self, se: SeId) -> usize {
        match se_group(se) {
            None => self.tasks[se].tg,
            Some(g) => self.groups.parent(g),
        }
    }

    /// parent_entity(se)
    fn parent_entity(&self, se: SeId) -> Option<SeId> {
        let c = self.cfs_of(se);
        (c != 0).then_some(GROUP_SE + c)
    }

    /// se->depth
    fn se_depth(&self, se: SeId) -> usize {
        self.groups.depth(self.cfs_of(se))
    }

    /// cfs_rq `c` of `cpu`.
    pub fn cfs_rq(&self, cpu: usize, c: usize) -> &CfsRq {
        let rq = &self.rqs[cpu];
        if c == 0 {
            &rq.cfs
        } else {
            &rq.gcfs[c]
        }
    }

    /// Mutable cfs_rq `c` of `cpu`.
    pub fn cfs_rq_mut(&mut self, cpu: usize, c: usize) -> &mut CfsRq {
        let rq = &mut self.rqs[cpu];
        rq.blocked_clean = None;
        cfs_mut(&mut rq.cfs, &mut rq.gcfs, c)
    }

    /// The entities of `cpu`, read-only.
    pub fn ents(&self, cpu: usize) -> EntsRef<'_> {
        EntsRef {
            tasks: &self.tasks,
            groups: &self.rqs[cpu].gse,
        }
    }

    /// Run `f` on cfs_rq `c` of `cpu` with the entity store and, when the
    /// entity operated on is group `g`'s, its group context; then charge
    /// `cpu` the level's cost when a task group is involved and settle what
    /// the call left for the task group.
    fn at_cfs<R>(
        &mut self,
        cpu: usize,
        c: usize,
        g: Option<usize>,
        f: impl FnOnce(&mut CfsRq, &mut Ents, Option<&mut GroupCtx>, &FairEnv) -> R,
    ) -> R {
        self.at_cfs_paid(cpu, c, g, Some(cpu), f)
    }

    /// at_cfs with the CPU that pays the level's costs: None when the work
    /// is done on `cpu`'s behalf by a CPU whose cost is modelled elsewhere.
    pub(super) fn at_cfs_paid<R>(
        &mut self,
        cpu: usize,
        c: usize,
        g: Option<usize>,
        payer: Option<usize>,
        f: impl FnOnce(&mut CfsRq, &mut Ents, Option<&mut GroupCtx>, &FairEnv) -> R,
    ) -> R {
        let env = FairEnv {
            now: self.rq_clock(cpu),
            now_pelt: self.clock_pelt(cpu),
            base_slice: self.base_slice,
            min_quantum: self.cfg.base_slice_ns,
            tick_ns: self.tick_ns,
            feat: &self.cfg.features,
            pelt316: self.cfg.pelt == PeltModel::V316,
            legacy: self.legacy_cfs,
        };
        let rq = &mut self.rqs[cpu];
        rq.blocked_clean = None;
        let mut ents = Ents {
            tasks: &mut self.tasks,
            groups: &mut rq.gse,
        };
        let r = match g {
            None => f(cfs_mut(&mut rq.cfs, &mut rq.gcfs, c), &mut ents, None, &env),
            Some(g) => {
                let tg = &self.groups.tgs[g];
                let (cfs, my_q) = cfs_pair(&mut rq.cfs, &mut rq.gcfs, c, g);
                let mut ctx = GroupCtx {
                    my_q,
                    shares: tg.shares,
                    tg_load_avg: tg.load_avg,
                    tg_runnable_avg: tg.runnable_avg,
                };
                f(cfs, &mut ents, Some(&mut ctx), &env)
            }
        };
        if c != 0 || g.is_some() {
            self.stats.group_level_ops += 1;
            if let Some(payer) = payer {
                self.charge_curr(payer, self.machine.cost.group_level_ns);
            }
        }
        if c != 0 {
            self.settle_group(cpu, c, payer);
        }
        if self.cfg.pelt == PeltModel::V316 {
            if c == 0 {
                self.settle_root_316(cpu, payer);
            }
            if let Some(g) = g {
                self.settle_runnable_316(cpu, g, payer);
            }
        }
        r
    }

    /// Run `f` on cfs_rq_of(se).
    fn at_level<R>(
        &mut self,
        cpu: usize,
        se: SeId,
        f: impl FnOnce(&mut CfsRq, &mut Ents, Option<&mut GroupCtx>, &FairEnv) -> R,
    ) -> R {
        let c = self.cfs_of(se);
        self.at_cfs(cpu, c, se_group(se), f)
    }

    /// After an operation on group cfs_rq `c`: publish its tg->load_avg
    /// change, pass a resched request to the root, and refill or throttle
    /// when its bandwidth ran out.
    fn settle_group(&mut self, cpu: usize, c: usize, payer: Option<usize>) {
        let cfs = &mut self.rqs[cpu].gcfs[c];
        let delta = std::mem::take(&mut cfs.tg_load_delta);
        let resched = std::mem::take(&mut cfs.resched_req);
        let spent = std::mem::take(&mut cfs.runtime_spent);
        let out_of_runtime = spent && cfs.runtime_remaining <= 0 && !cfs.throttled;
        if delta != 0 {
            self.tg_load_avg_add(cpu, c, delta, payer);
        }
        if resched {
            self.rqs[cpu].cfs.resched_req = true;
        }
        if out_of_runtime {
            self.account_cfs_rq_runtime(cpu, c);
        }
    }

    /// atomic_long_add on tg->load_avg: the cache line comes over from the
    /// CPU that wrote it last, waiting behind writers still holding it;
    /// `payer`'s task spends that time.
    pub(super) fn tg_load_avg_add(
        &mut self,
        cpu: usize,
        tg: usize,
        delta: i64,
        payer: Option<usize>,
    ) {
        self.groups.tgs[tg].load_avg += delta;
        self.tg_line_write(cpu, tg, payer);
    }

    /// atomic_add on tg->runnable_avg (v3.16), next to tg->load_avg in
    /// struct task_group: the same cache line.
    pub(super) fn tg_runnable_avg_add(
        &mut self,
        cpu: usize,
        tg: usize,
        delta: i64,
        payer: Option<usize>,
    ) {
        self.groups.tgs[tg].runnable_avg += delta;
        self.tg_line_write(cpu, tg, payer);
    }

    /// An atomic write to task group `tg`'s load line from `cpu`.
    fn tg_line_write(&mut self, cpu: usize, tg: usize, payer: Option<usize>) {
        let from = self.groups.tgs[tg].last_writer.unwrap_or(cpu);
        let line = self.machine.line_transfer_ns(from, cpu);
        let t = &mut self.groups.tgs[tg];
        self.groups.load_epoch += 1;
        let wait = t.line_free_at.saturating_sub(self.now);
        let cost = wait + line;
        t.line_free_at = self.now + cost;
        t.last_writer = Some(cpu);
        self.stats.tg_load_avg_ns += cost;
        if let Some(payer) = payer {
            self.charge_curr(payer, cost);
        }
    }

    /// Kernel work done on `cpu` on behalf of whatever runs there.
    fn charge_curr(&mut self, cpu: usize, ns: u64) {
        self.fold_touch_cpu(cpu);
        match self.rqs[cpu].curr {
            Some(p) => self.tasks[p].prog.overhead += ns,
            None => self.rqs[cpu].irq_ns += ns,
        }
    }

    /// Add to cfs_rq `c`'s hierarchical counts; returns whether it is
    /// throttled (the walk stops there).
    pub(super) fn add_h_counts(
        &mut self,
        cpu: usize,
        c: usize,
        queued: isize,
        runnable: isize,
    ) -> bool {
        let cfs = self.cfs_rq_mut(cpu, c);
        cfs.h_nr_queued = cfs.h_nr_queued.wrapping_add_signed(queued);
        cfs.h_nr_runnable = cfs.h_nr_runnable.wrapping_add_signed(runnable);
        cfs.throttled
    }

    /// set_delayed / clear_delayed: a task's runnable count up the hierarchy.
    fn delayed_counts(&mut self, cpu: usize, p: Pid, d: isize) {
        let mut se = Some(p);
        while let Some(s) = se {
            if self.add_h_counts(cpu, self.cfs_of(s), 0, d) {
                break;
            }
            se = self.parent_entity(s);
        }
    }

    /// enqueue_entity on cfs_rq_of(se), with check_enqueue_throttle when
    /// it is the group cfs_rq's first entity.
    pub(super) fn enqueue_entity_at(&mut self, cpu: usize, se: SeId, flags: u32) {
        self.at_level(cpu, se, |c, e, g, env| {
            c.enqueue_entity(e, se, g, flags, env)
        });
        let c = self.cfs_of(se);
        if c != 0 && self.rqs[cpu].gcfs[c].nr_queued == 1 {
            self.check_enqueue_throttle(cpu, c);
        }
    }

    /// dequeue_entity on cfs_rq_of(se), with return_cfs_rq_runtime.
    pub(super) fn dequeue_entity_at(&mut self, cpu: usize, se: SeId, flags: u32) -> bool {
        let done = self.at_level(cpu, se, |c, e, g, env| {
            c.dequeue_entity(e, se, g, flags, env)
        });
        let c = self.cfs_of(se);
        if done && c != 0 {
            self.return_cfs_rq_runtime(cpu, c);
        }
        done
    }

    /// The updates of an ancestor entity that stays queued.
    pub(super) fn update_queued_at(&mut self, cpu: usize, se: SeId, tg_update: bool) {
        self.at_level(cpu, se, |c, e, g, env| {
            c.update_queued_entity(e, se, g, tg_update, env)
        });
    }

    /// cfs_rq_min_slice of group cfs_rq `c` on `cpu`.
    fn cfs_min_slice(&self, cpu: usize, c: usize) -> Option<u64> {
        self.cfs_rq(cpu, c)
            .min_slice(&self.ents(cpu), self.base_slice)
    }

    /// A group entity takes the smallest slice of the cfs_rq it owns
    /// (enqueue_task_fair, dequeue_entities), so the group serves its
    /// entities in their time; it counts as custom only when that differs
    /// from the base slice.
    fn set_group_slice(&mut self, cpu: usize, se: SeId, slice: Option<u64>) {
        let (Some(g), Some(slice)) = (se_group(se), slice) else {
            return;
        };
        let custom = slice != self.base_slice;
        let e = &mut self.rqs[cpu].gse[g];
        e.slice = slice;
        e.custom_slice = custom;
        if custom {
            let c = self.cfs_of(se);
            self.cfs_rq_mut(cpu, c).has_custom = true;
        }
    }

    fn se_on(&self, cpu: usize, se: SeId) -> &super::task::Entity {
        match se_group(se) {
            None => &self.tasks[se].se,
            Some(g) => &self.rqs[cpu].gse[g],
        }
    }

    /// enqueue_task_fair: start the fair server if it is not active
    /// (dl_server_start), enqueue the task and each ancestor entity not yet
    /// queued, then update the queued ancestors. Returns false when a
    /// throttled cfs_rq stopped the walk (the task does not count in
    /// rq->nr_running).
    pub(super) fn enqueue_task_fair(&mut self, cpu: usize, p: Pid, flags: u32) -> bool {
        self.dl_server_start(cpu);
        if self.cfg.features.enabled(Feature::UtilEst) {
            pelt::util_est_enqueue(&mut self.rqs[cpu].cfs.avg, &self.tasks[p].se.avg);
        }
        let mut flags = flags;
        let mut se = Some(p);
        let mut slice = None;
        while let Some(s) = se {
            if self.se_on(cpu, s).on_rq {
                if self.se_on(cpu, s).sched_delayed {
                    self.at_level(cpu, s, |c, e, g, env| c.requeue_delayed(e, s, g, env));
                }
                break;
            }
            self.set_group_slice(cpu, s, slice);
            self.enqueue_entity_at(cpu, s, flags);
            slice = self.cfs_min_slice(cpu, self.cfs_of(s));
            if self.add_h_counts(cpu, self.cfs_of(s), 1, 1) {
                return false;
            }
            flags = ENQUEUE_WAKEUP;
            se = self.parent_entity(s);
        }
        while let Some(s) = se {
            self.update_queued_at(cpu, s, true);
            self.set_group_slice(cpu, s, slice);
            slice = self.cfs_min_slice(cpu, self.cfs_of(s));
            if self.add_h_counts(cpu, self.cfs_of(s), 1, 1) {
                return false;
            }
            se = self.parent_entity(s);
        }
        let runnable = self.rqs[cpu].nr_running != 0;
        self.update_rq_runnable_avg_316(cpu, runnable);
        true
    }

    /// ttwu_runnable for a delayed task: enqueue_task_fair(ENQUEUE_DELAYED).
    pub(super) fn requeue_delayed_task(&mut self, cpu: usize, p: Pid) {
        if self.cfg.features.enabled(Feature::UtilEst) {
            pelt::util_est_enqueue(&mut self.rqs[cpu].cfs.avg, &self.tasks[p].se.avg);
        }
        self.at_level(cpu, p, |c, e, _, env| c.requeue_delayed(e, p, None, env));
        self.delayed_counts(cpu, p, 1);
    }

    /// dequeue_task_fair: util_est, then dequeue_entities.
    pub(super) fn dequeue_task_fair(&mut self, cpu: usize, p: Pid, flags: u32) -> Dequeued {
        if flags & DEQUEUE_DELAYED == 0 && self.cfg.features.enabled(Feature::UtilEst) {
            let sleep = flags & DEQUEUE_SLEEP != 0;
            pelt::util_est_dequeue(&mut self.rqs[cpu].cfs.avg, &self.tasks[p].se.avg);
            pelt::util_est_update(&mut self.tasks[p].se.avg, sleep);
        }
        self.dequeue_entities(cpu, p, flags)
    }

    /// dequeue_entities: dequeue `se` and each ancestor left empty, then
    /// update the ancestors that stay queued.
    pub(super) fn dequeue_entities(&mut self, cpu: usize, se: SeId, flags: u32) -> Dequeued {
        let is_task = se_group(se).is_none();
        let delayed_now = self.se_on(cpu, se).sched_delayed;
        let (queued, runnable) = match is_task {
            // A delayed task left the runnable count when it was delayed.
            true if flags & DEQUEUE_DELAYED != 0 => (1, 0),
            true if flags & DEQUEUE_SLEEP != 0 || !delayed_now => (1, 1),
            true => (1, 0),
            false => (0, 0),
        };
        let mut flags = flags;
        let mut cur = Some(se);
        let mut slice = None;
        while let Some(s) = cur {
            if !self.dequeue_entity_at(cpu, s, flags) {
                if s == se && is_task {
                    self.delayed_counts(cpu, s, -1);
                    return Dequeued::Delayed;
                }
                break;
            }
            let c = self.cfs_of(s);
            if self.add_h_counts(cpu, c, -queued, -runnable) {
                return Dequeued::Done { counted: false };
            }
            cur = self.parent_entity(s);
            if self.cfs_rq(cpu, c).load != 0 {
                slice = self.cfs_min_slice(cpu, c);
                break;
            }
            flags = (flags | DEQUEUE_SLEEP) & !(DEQUEUE_DELAYED | DEQUEUE_SPECIAL);
        }
        while let Some(s) = cur {
            self.update_queued_at(cpu, s, true);
            self.set_group_slice(cpu, s, slice);
            slice = self.cfs_min_slice(cpu, self.cfs_of(s));
            if self.add_h_counts(cpu, self.cfs_of(s), -queued, -runnable) {
                return Dequeued::Done { counted: false };
            }
            cur = self.parent_entity(s);
        }
        if is_task {
            self.update_rq_runnable_avg_316(cpu, true);
        }
        Dequeued::Done { counted: true }
    }

    /// pick_task_fair: pick at the root and descend through the picked
    /// group entities; a delayed entity met on the way is dequeued for good
    /// and the pick restarts.
    pub(super) fn pick_task_fair(&mut self, cpu: usize) -> Option<Pid> {
        'again: loop {
            if self.rqs[cpu].cfs.nr_queued == 0 {
                return None;
            }
            let mut c = 0;
            loop {
                let cfs = self.cfs_rq(cpu, c);
                if cfs.curr.is_some_and(|s| self.se_on(cpu, s).on_rq) {
                    self.at_cfs(cpu, c, None, |q, e, _, env| q.update_curr(e, env));
                }
                if c != 0 && self.check_cfs_rq_runtime(cpu, c) {
                    continue 'again;
                }
                let env = self.fair_env(cpu);
                let picked = self.cfs_rq(cpu, c).pick_eevdf(&self.ents(cpu), &env, true);
                let Some(se) = picked else {
                    if c == 0 {
                        return None;
                    }
                    continue 'again;
                };
                if self.se_on(cpu, se).sched_delayed {
                    self.finish_delayed_dequeue(cpu, se);
                    continue 'again;
                }
                match se_group(se) {
                    None if self.decisions => return Some(self.trace_pick(cpu, c, se)),
                    None => return Some(se),
                    Some(g) => c = g,
                }
            }
        }
    }

    /// The pick's decision record: task `p`, picked on cfs_rq `c` of `cpu`.
    /// Returns `p`.
    #[cold]
    #[inline(never)]
    fn trace_pick(&mut self, cpu: usize, c: usize, p: Pid) -> Pid {
        let env = self.fair_env(cpu);
        let d = self.cfs_rq(cpu, c).pick_detail(&self.ents(cpu), &env, p);
        let se = &self.tasks[p].se;
        self.trace(TraceEvent::Pick {
            cpu,
            p,
            eligible: d.eligible,
            vruntime: se.vruntime,
            deadline: se.deadline,
            lag: d.lag,
            protected: d.protected,
            runner_up: d.runner_up,
        });
        p
    }

    /// The dequeue of a delayed entity the pick met: a task leaves its run
    /// queue (__block_task).
    fn finish_delayed_dequeue(&mut self, cpu: usize, se: SeId) {
        let r = self.dequeue_entities(cpu, se, DEQUEUE_SLEEP | DEQUEUE_DELAYED);
        if se_group(se).is_none() {
            if r == (Dequeued::Done { counted: true }) {
                self.rqs[cpu].nr_running -= 1;
            }
            self.tasks[se].on_rq = false;
        }
    }

    /// pick_next_task_fair's switch from `prev` to `next`: with a fair prev,
    /// put and set only the entities below the deepest common cfs_rq;
    /// otherwise set_next_task_fair on every level.
    pub(super) fn put_prev_set_next_fair(&mut self, cpu: usize, prev: Option<Pid>, next: Pid) {
        let fair_prev = prev.filter(|_| self.rqs[cpu].cfs.curr.is_some());
        let Some(p) = fair_prev else {
            let mut se = Some(next);
            while let Some(s) = se {
                self.set_next_entity_at(cpu, s);
                se = self.parent_entity(s);
            }
            return;
        };
        if p == next {
            return;
        }
        let (mut se, mut pse) = (next, p);
        while self.cfs_of(se) != self.cfs_of(pse) {
            let (sd, pd) = (self.se_depth(se), self.se_depth(pse));
            if sd <= pd {
                self.put_prev_entity_at(cpu, pse);
                pse = self.parent_entity(pse).expect("deeper entity has a parent");
            }
            if sd >= pd {
                self.set_next_entity_at(cpu, se);
                se = self.parent_entity(se).expect("deeper entity has a parent");
            }
        }
        self.put_prev_entity_at(cpu, pse);
        self.set_next_entity_at(cpu, se);
    }

    fn set_next_entity_at(&mut self, cpu: usize, se: SeId) {
        self.at_level(cpu, se, |c, e, g, env| c.set_next_entity(e, se, g, env));
    }

    /// put_prev_entity, with its check_cfs_rq_runtime.
    fn put_prev_entity_at(&mut self, cpu: usize, se: SeId) {
        self.at_level(cpu, se, |c, e, g, env| c.put_prev_entity(e, se, g, env));
        let c = self.cfs_of(se);
        if c != 0 {
            self.check_cfs_rq_runtime(cpu, c);
        }
    }

    /// reweight_task_fair for a dequeued task: its PELT load rescaled to
    /// the new weight, its lag and relative deadline kept (reweight_entity).
    pub(super) fn reweight_task_fair(&mut self, cpu: usize, p: Pid, lw: super::prio::LoadWeight) {
        self.at_level(cpu, p, |c, e, _, env| {
            c.reweight_entity(e, p, lw.weight, env)
        });
        self.tasks[p].se.load = lw;
    }

    /// put_prev_task_fair: every level of `p`'s hierarchy.
    pub(super) fn put_prev_task_fair(&mut self, cpu: usize, p: Pid) {
        let mut se = Some(p);
        while let Some(s) = se {
            self.put_prev_entity_at(cpu, s);
            se = self.parent_entity(s);
        }
    }

    /// task_tick_fair: entity_tick on every level of curr's hierarchy.
    pub(super) fn task_tick_fair(&mut self, cpu: usize, p: Pid) {
        let mut se = Some(p);
        while let Some(s) = se {
            let c = self.cfs_of(s);
            self.at_cfs(cpu, c, se_group(s), |q, e, g, env| q.entity_tick(e, g, env));
            se = self.parent_entity(s);
        }
        self.update_rq_runnable_avg_316(cpu, true);
    }

    /// check_preempt_wakeup_fair: compare the waking task and curr on the
    /// cfs_rq where their hierarchies meet (find_matching_se). A SCHED_IDLE
    /// entity there yields to any other at once; SCHED_BATCH and SCHED_IDLE
    /// wakees preempt nothing else.
    pub(super) fn check_preempt_wakeup_fair(&mut self, cpu: usize, curr: Pid, p: Pid) -> bool {
        if curr == p || self.cfs_rq(cpu, self.tasks[p].tg).throttle_count > 0 {
            return false;
        }
        if !self.cfg.features.enabled(Feature::WakeupPreemption) {
            return false;
        }
        let (mut se, mut pse) = (curr, p);
        let (mut sd, mut pd) = (self.se_depth(se), self.se_depth(pse));
        while sd > pd {
            se = self.parent_entity(se).expect("depth > 0");
            sd -= 1;
        }
        while pd > sd {
            pse = self.parent_entity(pse).expect("depth > 0");
            pd -= 1;
        }
        while self.cfs_of(se) != self.cfs_of(pse) {
            se = self.parent_entity(se).expect("not yet at the root");
            pse = self.parent_entity(pse).expect("not yet at the root");
        }
        let (se_idle, pse_idle) = (self.se_is_idle(se), self.se_is_idle(pse));
        if se_idle && !pse_idle {
            self.at_level(cpu, se, |_, e, _, _| cancel_protect_slice(e.se_mut(se)));
            return true;
        }
        if se_idle != pse_idle || self.tasks[p].policy != Policy::Normal {
            return false;
        }
        self.at_level(cpu, se, |c, e, _, env| c.check_preempt_wakeup(e, pse, env))
    }

    /// se_is_idle: a SCHED_IDLE task (group entities are never idle here:
    /// cpu.idle is not modelled).
    fn se_is_idle(&self, se: SeId) -> bool {
        se_group(se).is_none() && self.tasks[se].policy == Policy::Idle
    }

    /// yield_task_fair on the task's own cfs_rq.
    pub(super) fn yield_task_fair(&mut self, cpu: usize, p: Pid) {
        let nr = self.rqs[cpu].nr_running;
        self.at_level(cpu, p, |c, e, _, env| c.yield_task(e, nr, env));
    }

    /// The fair tasks queued on `cpu` and not running (rq->cfs_tasks less
    /// curr), across all its cfs_rqs, each with a key that orders them as
    /// they were queued (root cfs_rq first, then each group's).
    pub fn cfs_tasks_keyed(&self, cpu: usize) -> impl Iterator<Item = ((usize, u64), Pid)> + '_ {
        let rq = &self.rqs[cpu];
        std::iter::once(&rq.cfs)
            .chain(rq.gcfs.iter().skip(1))
            .enumerate()
            .flat_map(|(i, q)| q.tree.iter_queued().map(move |(seq, s)| ((i, seq), s)))
            .filter(|&(_, s)| se_group(s).is_none())
    }

    /// The same tasks in no particular (but a deterministic) order.
    pub fn cfs_tasks(&self, cpu: usize) -> impl Iterator<Item = Pid> + '_ {
        let rq = &self.rqs[cpu];
        std::iter::once(&rq.cfs)
            .chain(rq.gcfs.iter().skip(1))
            .flat_map(|q| q.tree.iter())
            .filter(|&s| se_group(s).is_none())
    }

    /// throttled_lb_pair: the task's group is throttled on either CPU.
    pub(super) fn throttled_lb_pair(&self, p: Pid, src: usize, dst: usize) -> bool {
        let tg = self.tasks[p].tg;
        tg != 0
            && (self.rqs[src].gcfs[tg].throttle_count > 0
                || self.rqs[dst].gcfs[tg].throttle_count > 0)
    }

    /// sched_balance_update_blocked_averages → __update_blocked_fair: decay
    /// the cfs_rqs of `cpu` children first, publish their load to the task
    /// groups and pass pending changes up through the group entities. The
    /// root is refreshed only while it holds something to decay. A fully
    /// decayed group cfs_rq is passed over, as the kernel walks only its
    /// leaf list and drops a cfs_rq from it once decayed.
    ///
    /// The load balancer calls this for every CPU it scans, standing in for
    /// the NOHZ stats kick (the idle load balancer updates idle CPUs; a busy
    /// CPU updates itself in its own balance softirq), so no task pays the
    /// levels' costs here: the scan's own cost is the balancer's.
    ///
    /// An idle CPU that nothing changed since an earlier call is skipped
    /// (what update_nohz_stats does with rq->has_blocked_load and its once
    /// a jiffy limit, kept here to the calls that change nothing) when that
    /// call found every signal at zero (this one would only move zero-sum
    /// windows forward, which the next update does the same in one step),
    /// or was at this same instant with no group's load_avg (which group
    /// entities' shares read) changed since: no time has passed to decay.
    pub(super) fn update_blocked_averages(&mut self, cpu: usize) {
        if self.cfg.pelt == PeltModel::V316 {
            self.update_blocked_signals(cpu, false);
            return self.update_blocked_averages_316(cpu);
        }
        if let Some(c) = self.rqs[cpu].blocked_clean.filter(|_| self.idle_cpu(cpu)) {
            if c.gone {
                debug_assert!(self.blocked_load_gone(cpu, false), "cpu {cpu}");
                return;
            }
            if let Some(calls) = c.calls.filter(|_| c.at == self.now) {
                if c.epoch == self.groups.load_epoch {
                    return self.count_blocked_calls(cpu, calls);
                }
            }
        }
        let groups_quiet = self.blocked_groups_quiet(cpu);
        self.update_blocked_signals(cpu, groups_quiet);
        let gone = self.idle_cpu(cpu) && self.blocked_load_gone(cpu, groups_quiet);
        let calls = match groups_quiet {
            true => Some(BlockedCalls::default()),
            false => self.blocked_calls(cpu),
        };
        // The write stamps the run queue with the current epoch; sealing
        // it lets the next call see whether anything touched it since.
        let sealed = self.rqs.epoch();
        self.rqs[cpu].blocked_clean = Some(BlockedClean {
            at: self.now,
            epoch: self.groups.load_epoch,
            gone,
            calls,
            sealed,
        });
        self.rqs.seal();
    }

    /// Whether every group cfs_rq and group entity of `cpu` is one that
    /// update_blocked_signals passes over, as the last call left them: it
    /// found none to age or update, and nothing borrowed the run queue
    /// mutably since. A decayed cfs_rq left alone stays decayed (its PELT
    /// clock only moves forward) and an entity with nothing to pass up
    /// keeps nothing, so the group walks may be skipped: on a machine of
    /// thousands of idle CPUs each balance reads every CPU, and those walks
    /// were most of the read (each group's cfs_rq and entity its own cache
    /// lines).
    fn blocked_groups_quiet(&self, cpu: usize) -> bool {
        self.rqs[cpu].blocked_clean.is_some_and(|c| {
            c.calls.is_some_and(|k| k.group_ops == 0 && k.entities == 0)
                && self.rqs.unchanged_since(cpu, c.sealed)
        })
    }

    /// What another update_blocked_averages of `cpu` now would count, as
    /// update_blocked_signals walks: a group-level op per cfs_rq it ages
    /// and per group entity it updates, and that entity's update_load_avg
    /// call. None with more groups than the mask holds.
    fn blocked_calls(&self, cpu: usize) -> Option<BlockedCalls> {
        let n = self.groups.count();
        if n == 1 {
            return Some(BlockedCalls::default());
        }
        if n > u64::BITS as usize {
            return None;
        }
        let now_pelt = self.clock_pelt(cpu);
        let rq = &self.rqs[cpu];
        let mut calls = BlockedCalls::default();
        for g in 1..n {
            let a = &rq.gse[g].avg;
            let aged = !rq.gcfs[g].is_decayed_at(now_pelt);
            let updated = a.load_avg != 0 || a.util_avg != 0 || rq.gcfs[g].propagate;
            calls.group_ops += aged as u64 + updated as u64;
            calls.entities |= (updated as u64) << g;
        }
        Some(calls)
    }

    /// Count the calls of an update_blocked_averages skipped (the counters
    /// report the model's calls, and stay as they were).
    fn count_blocked_calls(&mut self, cpu: usize, calls: BlockedCalls) {
        self.stats.group_level_ops += calls.group_ops;
        let mut mask = calls.entities;
        while mask != 0 {
            let g = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let c = self.cfs_of(GROUP_SE + g);
            let rq = &mut self.rqs[cpu];
            cfs_mut(&mut rq.cfs, &mut rq.gcfs, c)
                .pelt_stats
                .update_load_avg_calls += 1;
        }
    }

    /// Whether update_blocked_averages on `cpu` would only move zero-sum
    /// windows forward: every cfs_rq and group entity it would skip, the
    /// root cfs_rq decayed, the rt, dl and irq signals at zero.
    /// `groups_quiet`: the groups are known to be skipped (not read again).
    fn blocked_load_gone(&self, cpu: usize, groups_quiet: bool) -> bool {
        let rq = &self.rqs[cpu];
        let zero = |a: &pelt::SchedAvg| {
            a.load_sum | a.util_sum | a.runnable_sum | a.load_avg | a.util_avg | a.runnable_avg == 0
        };
        let cfs = &rq.cfs.avg;
        let root = cfs.load_sum | cfs.util_sum | cfs.runnable_sum == 0 && rq.cfs.removed.nr == 0;
        let p = &rq.pelt;
        // The root and the classes first: while they hold load, the
        // groups need not be read.
        if !(root && zero(&p.avg_rt) && zero(&p.avg_dl) && zero(&p.avg_irq)) {
            return false;
        }
        if groups_quiet {
            return true;
        }
        let now_pelt = self.clock_pelt(cpu);
        (1..self.groups.count()).all(|g| {
            let se = &rq.gse[g];
            rq.gcfs[g].is_decayed_at(now_pelt)
                && se.avg.load_avg == 0
                && se.avg.util_avg == 0
                && !rq.gcfs[g].propagate
        })
    }

    /// The body of update_blocked_averages: __update_blocked_fair, then
    /// __update_blocked_others. `groups_quiet`: every group would be
    /// passed over (blocked_groups_quiet), so they are not walked.
    fn update_blocked_signals(&mut self, cpu: usize, groups_quiet: bool) {
        let now_pelt = self.clock_pelt(cpu);
        let groups = if groups_quiet { 1 } else { self.groups.count() };
        for g in (1..groups).rev() {
            if !self.rqs[cpu].gcfs[g].is_decayed_at(now_pelt) {
                self.at_cfs_paid(cpu, g, None, None, |q, _, _, env| {
                    q.update_blocked_load(env)
                });
            }
            let se = &self.rqs[cpu].gse[g];
            let skip =
                se.avg.load_avg == 0 && se.avg.util_avg == 0 && !self.rqs[cpu].gcfs[g].propagate;
            if !skip {
                let s = GROUP_SE + g;
                let c = self.cfs_of(s);
                self.at_cfs_paid(cpu, c, Some(g), None, |q, e, gc, env| {
                    q.update_blocked_entity(e, s, gc, env)
                });
            }
        }
        // __update_blocked_others
        let curr = self.rqs[cpu].curr;
        let rt_running = curr.is_some_and(|p| self.is_rt(p));
        let dl_running = curr.is_some_and(|p| self.is_dl(p));
        self.update_rq_class_avgs(cpu, rt_running, dl_running);
        self.update_irq_load_avg(cpu, 0);
        let now = self.clock_pelt(cpu);
        let cfs = &mut self.rqs[cpu].cfs;
        let decayed = cfs.avg.load_sum | cfs.avg.util_sum | cfs.avg.runnable_sum == 0;
        if cfs.curr.is_none() && !(decayed && cfs.removed.nr == 0) {
            cfs.update_cfs_rq_load_avg(now);
        }
    }

    /// task_h_load: the task's load as seen from the root, through the
    /// group entities' shares (update_cfs_rq_h_load, cached per jiffy).
    pub fn task_h_load(&mut self, p: Pid) -> u64 {
        let cpu = self.tasks[p].cpu;
        let c = self.tasks[p].tg;
        self.update_cfs_rq_h_load(cpu, c);
        let cfs = self.cfs_rq(cpu, c);
        self.h_load_part(&self.tasks[p].se) * cfs.h_load / (self.h_load_base(cfs) + 1)
    }

    /// update_cfs_rq_h_load: recompute h_load top-down from the nearest
    /// cfs_rq already done this jiffy (or the root).
    fn update_cfs_rq_h_load(&mut self, cpu: usize, c: usize) {
        let jiffy = self.now / self.tick_ns + 1;
        if self.cfs_rq(cpu, c).last_h_load_update == jiffy {
            return;
        }
        let mut path = Vec::new();
        let mut g = c;
        let mut from_root = true;
        while g != 0 {
            path.push(g);
            g = self.groups.parent(g);
            if self.cfs_rq(cpu, g).last_h_load_update == jiffy {
                from_root = false;
                break;
            }
        }
        if from_root {
            let load = self.h_load_base(&self.rqs[cpu].cfs);
            let root = &mut self.rqs[cpu].cfs;
            root.h_load = load;
            root.last_h_load_update = jiffy;
        }
        for &g in path.iter().rev() {
            let pq = self.cfs_rq(cpu, self.groups.parent(g));
            let part = self.h_load_part(&self.rqs[cpu].gse[g]);
            let load = pq.h_load * part / (self.h_load_base(pq) + 1);
            let q = self.cfs_rq_mut(cpu, g);
            q.h_load = load;
            q.last_h_load_update = jiffy;
        }
    }
}
