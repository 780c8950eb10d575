//! Task placement (kernel/sched/fair.c): select_task_rq_fair for wakeups
//! (wake_wide, wake_affine, select_idle_sibling) and a fork placement that
//! looks for the idlest CPU (the slow path, sched_balance_find_dst_cpu).

use super::balance::update_avg;
use super::core::WF_SYNC;
use super::features::{Feature, PeltModel};
use super::sched_domain::SD_SHARE_LLC;
use super::task::Pid;
use super::tracepoint::{Affine, PlaceWhy};
use super::Kernel;

/// imbalance_pct of the LLC (MC) sched domain, as sd_init sets it.
const LLC_IMBALANCE_PCT: i64 = 117;
/// imbalance_pct of the SMT sched domain (SD_SHARE_CPUCAPACITY).
const SMT_IMBALANCE_PCT: i64 = 110;
/// node_reclaim_distance: NUMA levels farther apart lose SD_WAKE_AFFINE.
const NODE_RECLAIM_DISTANCE: u32 = 30;

/// Where select_task_rq put a wakee and why (its decision record's
/// fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    pub cpu: usize,
    pub affine: Affine,
    pub why: PlaceWhy,
    /// CPUs select_idle_cpu visited.
    pub scanned: u32,
}

impl Placed {
    /// A placement made before wake_affine and the idle scan.
    pub fn at(cpu: usize, why: PlaceWhy) -> Placed {
        Placed {
            cpu,
            affine: Affine::Skipped,
            why,
            scanned: 0,
        }
    }
}

impl Kernel {
    /// select_task_rq_fair for a wakeup (WF_TTWU): the CPU and how it was
    /// chosen.
    pub fn select_task_rq(
        &mut self,
        p: Pid,
        prev: usize,
        wake_flags: u32,
        this: usize,
        waker: Option<Pid>,
    ) -> Placed {
        let ncpus = self.machine.nr_cpus();
        if self.tasks[p].nr_cpus_allowed(ncpus) == 1 {
            let cpu = self.tasks[p].allowed.as_ref().map_or(prev, |v| v[0]);
            return Placed::at(cpu, PlaceWhy::Pinned);
        }
        if self.is_dl(p) {
            return Placed::at(self.select_task_rq_dl(p, prev), PlaceWhy::Dl);
        }
        if self.is_rt(p) {
            return Placed::at(self.select_task_rq_rt(p, prev), PlaceWhy::Rt);
        }
        // A dying waker's CPU is about to free up: no sync bias
        // (`!(current->flags & PF_EXITING)`).
        let exiting = waker.is_some_and(|w| self.tasks[w].exiting);
        let sync = wake_flags & WF_SYNC != 0 && !exiting;
        if let Some(w) = waker {
            self.record_wakee(w, p);
        }
        let wide = waker.is_some_and(|w| self.wake_wide(w, p));
        let want_affine = waker.is_some() && !wide && self.tasks[p].is_allowed(this);
        let (mut new_cpu, mut affine) = (prev, Affine::Skipped);
        if wide {
            affine = Affine::Wide;
        }
        if want_affine && this != prev && self.wake_affine_spans(this, prev) {
            new_cpu = self.wake_affine(p, this, prev, sync, waker);
            affine = if new_cpu == this {
                Affine::Waker
            } else {
                Affine::Prev
            };
        }
        let (target, why, scanned) = self.select_idle_sibling(p, prev, new_cpu, this, waker);
        let (cpu, why) = match self.tasks[p].is_allowed(target) {
            true => (target, why),
            false => (self.first_allowed(p), PlaceWhy::Fallback),
        };
        Placed {
            cpu,
            affine,
            why,
            scanned,
        }
    }

    fn first_allowed(&self, p: Pid) -> usize {
        self.tasks[p].allowed.as_ref().map_or(0, |v| v[0])
    }

    /// record_wakee: count how often the waker switches between wakees;
    /// the count halves every second.
    fn record_wakee(&mut self, waker: Pid, p: Pid) {
        let now = self.now;
        let w = &mut self.tasks[waker];
        if now > w.wakee_flip_decay_ts + crate::engine::NSEC_PER_SEC {
            w.wakee_flips >>= 1;
            w.wakee_flip_decay_ts = now;
        }
        if w.last_wakee != Some(p) {
            w.last_wakee = Some(p);
            w.wakee_flips += 1;
        }
    }

    /// Whether a domain with SD_WAKE_AFFINE spans both CPUs: NUMA levels
    /// beyond node_reclaim_distance (30) drop the flag.
    fn wake_affine_spans(&self, this: usize, prev: usize) -> bool {
        self.machine
            .node_distance(self.machine.cpus[this].node, self.machine.cpus[prev].node)
            <= NODE_RECLAIM_DISTANCE
    }

    /// wake_wide: a waker juggling many wakees spreads them out.
    fn wake_wide(&self, waker: Pid, p: Pid) -> bool {
        let llc = self.machine.cpus[self.tasks[waker].cpu].llc;
        let factor = self.machine.llc_cpus(llc).len() as u32;
        let (a, b) = (self.tasks[waker].wakee_flips, self.tasks[p].wakee_flips);
        let (master, slave) = (a.max(b), a.min(b));
        !(slave < factor || master < slave * factor)
    }

    /// wake_affine: WA_IDLE, then WA_WEIGHT; the result is `this` or `prev`.
    fn wake_affine(
        &mut self,
        p: Pid,
        this: usize,
        prev: usize,
        sync: bool,
        waker: Option<Pid>,
    ) -> usize {
        let mut target = None;
        if self.cfg.features.enabled(Feature::WaIdle) {
            target = self.wake_affine_idle(this, prev, sync);
        }
        if target.is_none() && self.cfg.features.enabled(Feature::WaWeight) {
            target = match self.cfg.pelt {
                PeltModel::V316 => {
                    let pct = self.affine_imbalance_pct(this, prev);
                    let waker = waker.filter(|_| sync);
                    self.wake_affine_316(p, this, prev, waker, pct)
                        .then_some(this)
                }
                PeltModel::Current => self.wake_affine_weight(p, this, prev, sync, waker),
            };
        }
        match target {
            Some(t) if t == this => {
                self.stats.ttwu_move_affine += 1;
                self.ttwu_move_affine_stat(this, prev);
                this
            }
            _ => prev,
        }
    }

    /// wake_affine_idle
    fn wake_affine_idle(&self, this: usize, prev: usize, sync: bool) -> Option<usize> {
        if self.idle_cpu(this) && self.machine.shares_llc(this, prev) {
            return Some(if self.idle_cpu(prev) { prev } else { this });
        }
        // v6.15 counts delayed tasks here (v6.16 discounts them).
        if sync && self.rqs[this].nr_running == 1 {
            return Some(this);
        }
        if self.idle_cpu(prev) {
            return Some(prev);
        }
        None
    }

    /// imbalance_pct of the lowest domain spanning both CPUs.
    fn affine_imbalance_pct(&self, this: usize, prev: usize) -> i64 {
        if self.machine.smt_siblings(prev).contains(&this) {
            SMT_IMBALANCE_PCT
        } else {
            LLC_IMBALANCE_PCT
        }
    }

    /// wake_affine_weight: compare the loads the two CPUs would have.
    fn wake_affine_weight(
        &mut self,
        p: Pid,
        this: usize,
        prev: usize,
        sync: bool,
        waker: Option<Pid>,
    ) -> Option<usize> {
        let task_load = self.task_h_load(p);
        let mut this_eff = self.cpu_load(this);
        if sync {
            let current = waker.map_or(0, |w| self.task_h_load(w));
            if current > this_eff {
                return Some(this);
            }
            this_eff -= current;
        }
        this_eff += task_load;
        if self.cfg.features.enabled(Feature::WaBias) {
            this_eff *= 100;
        }
        this_eff *= self.capacity_of(prev);
        let mut prev_eff = self.cpu_load(prev) as i64 - task_load as i64;
        if self.cfg.features.enabled(Feature::WaBias) {
            prev_eff *= 100 + (self.affine_imbalance_pct(this, prev) - 100) / 2;
        }
        prev_eff *= self.capacity_of(this) as i64;
        if sync {
            prev_eff += 1;
        }
        ((this_eff as i64) < prev_eff).then_some(this)
    }

    pub fn core_idle(&self, cpu: usize) -> bool {
        self.machine
            .smt_siblings(cpu)
            .iter()
            .all(|&s| self.idle_cpu(s))
    }

    /// select_idle_sibling: target if idle, else prev, else the task's
    /// recent CPU, else an idle SMT sibling of prev (when no core is known
    /// idle), else a scan of the target's LLC (by the waking CPU `this`).
    /// The waker pays for the CPUs the scan visits. Returns the CPU, the rule that chose it and the
    /// CPUs the scan visited. A CPU that shares its cache with no other has
    /// no sd_llc (the only domain with SD_SHARE_LLC would span one CPU and
    /// degenerates), and the kernel returns the busy target unscanned
    /// (`if (!sd) return target;`).
    fn select_idle_sibling(
        &mut self,
        p: Pid,
        prev: usize,
        target: usize,
        this: usize,
        waker: Option<Pid>,
    ) -> (usize, PlaceWhy, u32) {
        if self.idle_cpu(target) {
            return (target, PlaceWhy::TargetIdle, 0);
        }
        if prev != target && self.machine.shares_llc(prev, target) && self.idle_cpu(prev) {
            return (prev, PlaceWhy::PrevIdle, 0);
        }
        let recent = self.tasks[p].recent_used_cpu;
        self.tasks[p].recent_used_cpu = prev;
        if recent != prev
            && recent != target
            && self.machine.shares_llc(recent, target)
            && self.idle_cpu(recent)
            && self.tasks[p].is_allowed(recent)
        {
            return (recent, PlaceWhy::RecentIdle, 0);
        }
        let llc = self.machine.cpus[target].llc;
        if self.machine.llc_cpus(llc).len() == 1 {
            return (target, PlaceWhy::NoIdle, 0);
        }
        let smt = self.machine.smt_width() > 1;
        let has_idle_core = smt && self.has_idle_cores[llc];
        if smt && !has_idle_core && self.machine.shares_llc(prev, target) {
            if let Some(c) = self.select_idle_smt(p, prev) {
                return (c, PlaceWhy::IdleSmt, 0);
            }
        }
        let (found, scanned) = self.select_idle_cpu(p, target, this, has_idle_core);
        self.stats.sis_scanned += scanned;
        let ns = scanned * self.machine.cost.sis_scan_per_cpu_ns;
        self.charge_waker(waker, ns);
        if let Some(w) = waker {
            self.tasks[w].prog.debt_ns += ns;
        }
        match found {
            Some(c) => (c, PlaceWhy::IdleScan, scanned as u32),
            None => (target, PlaceWhy::NoIdle, scanned as u32),
        }
    }

    /// select_idle_smt: an idle sibling of `prev` in its LLC.
    fn select_idle_smt(&self, p: Pid, prev: usize) -> Option<usize> {
        self.machine.smt_siblings(prev).iter().copied().find(|&c| {
            c != prev
                && self.machine.shares_llc(c, prev)
                && self.idle_cpu(c)
                && self.tasks[p].is_allowed(c)
        })
    }

    /// select_idle_cpu: scan the LLC from target + 1, wrapping. With the
    /// idle-core hint, look for a whole idle core (select_idle_core) and
    /// remember the first idle thread; otherwise take the first idle CPU
    /// within the scan's budget: SIS_PROP's (v5.19), then SIS_UTIL's
    /// nr_idle_scan in its place (none when the LLC is overloaded). With
    /// both on, as in v6.0-v6.6, SIS_UTIL's budget is used and SIS_PROP
    /// still ages and charges `this` CPU's state. Returns the CPU found and
    /// the number visited.
    fn select_idle_cpu(
        &mut self,
        p: Pid,
        target: usize,
        this: usize,
        has_idle_core: bool,
    ) -> (Option<usize>, u64) {
        let llc = self.machine.cpus[target].llc;
        // SIS_PROP's sd_llc of the waking CPU; without one, no scan (v6.6;
        // v5.19 tested it first, whatever the features and the hint).
        let this_sd = match self.cfg.features.enabled(Feature::SisProp) && !has_idle_core {
            true => match self.sd_llc_level(this) {
                Some(lvl) => Some(lvl),
                None => return (None, 0),
            },
            false => None,
        };
        let mut budget = match this_sd {
            Some(lvl) => self.sis_prop_budget(this, lvl, self.machine.llc_cpus(llc).len() as u64),
            None => u64::MAX,
        };
        if self.cfg.features.enabled(Feature::SisUtil) {
            budget = self.nr_idle_scan[llc] as u64;
            if budget == 0 {
                return (None, 0);
            }
        }
        let (found, scanned, ran_out) = self.scan_llc(p, target, has_idle_core, budget);
        // A scan stopped by its budget returns before SIS_PROP's accounting.
        if let (Some(lvl), false) = (this_sd, ran_out) {
            let time = scanned * self.machine.cost.sis_scan_per_cpu_ns;
            self.sis_prop_account(this, lvl, time);
        }
        (found, scanned)
    }

    /// select_idle_cpu's loop over the LLC, visiting at most `budget` CPUs
    /// when not looking for an idle core. Returns the CPU found, the
    /// number visited and whether the budget ran out.
    fn scan_llc(
        &mut self,
        p: Pid,
        target: usize,
        has_idle_core: bool,
        mut budget: u64,
    ) -> (Option<usize>, u64, bool) {
        // CPUs whose core was already examined carry this scan's stamp
        // (the kernel clears them from its scan mask).
        self.scan_gen += 1;
        let stamp = self.scan_gen;
        let llc = self.machine.llc_cpus(self.machine.cpus[target].llc);
        // llc_cpus is ascending and holds target: a search, not a walk of
        // a 4096-CPU LLC per wakeup.
        let pos = llc.binary_search(&target).unwrap_or(0);
        let mut idle_cpu = None;
        let mut scanned = 0;
        for i in 1..=llc.len() {
            let k = (pos + i) % llc.len();
            let cpu = llc[k];
            if self.scan_stamp[cpu] == stamp || !self.tasks[p].is_allowed(cpu) {
                continue;
            }
            if !has_idle_core {
                if budget == 0 {
                    return (None, scanned, true);
                }
                budget -= 1;
                scanned += 1;
                if self.idle_cpu(cpu) {
                    return (Some(cpu), scanned, false);
                }
                continue;
            }
            // select_idle_core: every sibling must be idle.
            let mut idle = true;
            for &s in self.machine.smt_siblings(cpu) {
                scanned += 1;
                self.scan_stamp[s] = stamp;
                if !self.idle_cpu(s) {
                    idle = false;
                    if idle_cpu.is_some() {
                        break;
                    }
                    continue;
                }
                if idle_cpu.is_none() && self.tasks[p].is_allowed(s) {
                    idle_cpu = Some(s);
                }
            }
            if idle {
                return (Some(cpu), scanned, false);
            }
        }
        // No wholly idle core: drop the LLC's hint (set_idle_cores false).
        if has_idle_core {
            self.has_idle_cores[self.machine.cpus[target].llc] = false;
        }
        (idle_cpu, scanned, false)
    }

    /// The level of `cpu`'s sd_llc: highest_flag_domain(cpu,
    /// SD_SHARE_LLC), the last of the lowest levels that share a cache.
    fn sd_llc_level(&self, cpu: usize) -> Option<usize> {
        let shared = self.sd.cpu[cpu]
            .iter()
            .take_while(|d| d.flags & SD_SHARE_LLC != 0)
            .count();
        shared.checked_sub(1)
    }

    /// select_idle_cpu's SIS_PROP budget (v5.14-v6.6): `this` CPU's
    /// wake_avg_idle, aged to now, spread over its sd_llc's average scan
    /// cost. The kernel stops at `!--nr`: nr - 1 CPUs are visited.
    fn sis_prop_budget(&mut self, this: usize, lvl: usize, span_weight: u64) -> u64 {
        let jiffies = self.jiffies();
        let rq = &mut self.lb.rq[this];
        (rq.wake_avg_idle, rq.wake_stamp) =
            wake_avg_idle_aged(rq.wake_avg_idle, rq.wake_stamp, jiffies);
        let avg_scan_cost = self.sd.cpu[this][lvl].avg_scan_cost;
        sis_prop_nr(span_weight, self.lb.rq[this].wake_avg_idle, avg_scan_cost) - 1
    }

    /// The end of select_idle_cpu under SIS_PROP: the scan's `time` (ns) is
    /// taken from `this` CPU's predicted idle time and averaged into its
    /// sd_llc's avg_scan_cost. The time is the scan's modelled cost, the
    /// CPUs visited times sis_scan_per_cpu_ns, where the kernel reads
    /// cpu_clock around the loop.
    fn sis_prop_account(&mut self, this: usize, lvl: usize, time: u64) {
        let rq = &mut self.lb.rq[this];
        rq.wake_avg_idle -= rq.wake_avg_idle.min(time);
        let sd = &mut self.sd.cpu[this][lvl];
        sd.avg_scan_cost = update_avg(sd.avg_scan_cost, time);
    }

    /// update_idle_cpu_scan: the SIS_UTIL budget of `cpu`'s LLC, from the
    /// LLC's summed cfs utilization x (per CPU, 0..1024): the fraction of
    /// the LLC to scan is 1 − x²·pct²/(10000·1024²), reaching 0 at
    /// x = 100/117 ≈ 85%. The kernel refreshes it during the periodic load
    /// balance at the LLC level; here every LLC-weight ms (the LLC
    /// domain's base balance interval) from the tick of one of its CPUs.
    pub fn update_idle_cpu_scan(&mut self, cpu: usize) {
        let llc = self.machine.cpus[cpu].llc;
        if self.now < self.idle_scan_next[llc] {
            return;
        }
        let cpus = self.machine.llc_cpus(llc);
        let weight = cpus.len() as u64;
        self.idle_scan_next[llc] = self.now + weight * 1_000_000;
        let sum_util: u64 = cpus.iter().map(|&c| self.cpu_util_cfs(c)).sum();
        self.nr_idle_scan[llc] = nr_idle_scan(sum_util, weight, LLC_IMBALANCE_PCT as u64);
    }

    /// cpu_util_cfs: the root cfs_rq's util_avg, or its util_est when
    /// higher (UTIL_EST), capped at the CPU's capacity.
    pub(super) fn cpu_util_cfs(&self, cpu: usize) -> u64 {
        let a = &self.rqs[cpu].cfs.avg;
        let mut util = a.util_avg;
        if self.cfg.features.enabled(Feature::UtilEst) {
            util = util.max(a.util_est as u64);
        }
        util.min(self.machine.cpus[cpu].capacity as u64)
    }

    /// Fork placement, sched_balance_find_dst_group/_cpu flattened onto the
    /// topology: descend node → LLC → core, at each level staying in the
    /// parent's group unless another group has more idle CPUs (the has_spare
    /// rule), then take the idle CPU in the shallowest idle state, else the
    /// CPU with the fewest tasks and least load.
    pub fn select_task_rq_fork(&self, p: Pid, parent_cpu: usize) -> usize {
        if self.is_rt(p) {
            return self.select_task_rq_rt(p, parent_cpu);
        }
        let m = &self.machine;
        let t = &self.tasks[p];
        let mut span: Vec<usize> = match &t.allowed {
            None => (0..m.nr_cpus()).collect(),
            Some(_) => (0..m.nr_cpus()).filter(|&c| t.is_allowed(c)).collect(),
        };
        if span.is_empty() {
            return parent_cpu;
        }
        let node = |c: usize| m.cpus[c].node;
        let llc = |c: usize| m.cpus[c].llc;
        let core = |c: usize| m.cpus[c].core;
        span = self.idlest_group(span, parent_cpu, node, m.nr_nodes, true);
        span = self.idlest_group(span, parent_cpu, llc, m.nr_llcs, false);
        span = self.idlest_group(span, parent_cpu, core, m.nr_cores, false);
        span.iter()
            .copied()
            .min_by_key(|&c| {
                let exit = match self.rqs[c].act {
                    super::core::Activity::Idle { since } if self.idle_cpu(c) => {
                        self.idle_state_at(self.now - since).exit_latency_ns
                    }
                    _ => u64::MAX,
                };
                (
                    !self.idle_cpu(c),
                    exit,
                    self.rqs[c].nr_running,
                    self.cpu_load(c),
                    c != parent_cpu,
                )
            })
            .unwrap_or(parent_cpu)
    }

    /// The CPUs of the group (by `group_of`, below `nr_groups`) within
    /// `span` to descend into: the local group (holding `local`, else the
    /// first) unless another has more idle CPUs, or as many idle CPUs and
    /// fewer tasks. Across NUMA nodes a lightly loaded local node is kept
    /// (allow_numa_imbalance with imb_numa_nr = a quarter of an LLC).
    fn idlest_group(
        &self,
        span: Vec<usize>,
        local: usize,
        group_of: impl Fn(usize) -> usize,
        nr_groups: usize,
        numa: bool,
    ) -> Vec<usize> {
        // A span within one group descends into it whatever its load.
        let g0 = group_of(span[0]);
        if nr_groups == 1 || span.iter().all(|&c| group_of(c) == g0) {
            return span;
        }
        let keep_local = |running: usize| {
            let llc_size = self.machine.llc_cpus(self.machine.cpus[local].llc).len();
            numa && running < (llc_size / 4).max(1)
        };
        let better = |a: (usize, usize), b: (usize, usize)| a.0 > b.0 || (a.0 == b.0 && a.1 < b.1);
        if nr_groups == self.machine.nr_cpus() {
            // One CPU per group (cores without SMT): the groups are the
            // span's CPUs, in its order, and the chosen one is its CPU.
            let stats = |c: usize| (self.idle_cpu(c) as usize, self.rqs[c].nr_running);
            let mut best = if span.contains(&local) {
                local
            } else {
                span[0]
            };
            let mut best_stats = stats(best);
            if !keep_local(best_stats.1) {
                for &c in &span {
                    // An idle CPU (no task: (1, 0)) is as good as it gets,
                    // and only a better one replaces the best.
                    if best_stats == (1, 0) {
                        break;
                    }
                    let s = stats(c);
                    if better(s, best_stats) {
                        (best, best_stats) = (c, s);
                    }
                }
            }
            return vec![best];
        }
        // Per group, in order of first appearance: (id, idle CPUs, tasks).
        // `index` maps a group id to its place, so this is O(span), with no
        // list of CPUs built per group.
        let mut groups: Vec<(usize, usize, usize)> = Vec::new();
        let mut index = vec![usize::MAX; nr_groups];
        for &c in &span {
            let g = group_of(c);
            if index[g] == usize::MAX {
                index[g] = groups.len();
                groups.push((g, 0, 0));
            }
            let s = &mut groups[index[g]];
            s.1 += self.idle_cpu(c) as usize;
            s.2 += self.rqs[c].nr_running;
        }
        let local_idx = if span.contains(&local) {
            index[group_of(local)]
        } else {
            0
        };
        let (mut best_id, idle, running) = groups[local_idx];
        let mut best_stats = (idle, running);
        if !keep_local(best_stats.1) {
            for &(g, idle, running) in &groups {
                if better((idle, running), best_stats) {
                    best_id = g;
                    best_stats = (idle, running);
                }
            }
        }
        span.into_iter()
            .filter(|&c| group_of(c) == best_id)
            .collect()
    }
}

/// SIS_PROP's nr (select_idle_cpu, v4.13-v6.6): the LLC's weight times
/// the predicted idle time over the average scan cost (+1: never 0), at
/// least 4.
fn sis_prop_nr(span_weight: u64, avg_idle: u64, avg_scan_cost: u64) -> u64 {
    let avg_cost = avg_scan_cost + 1;
    let span_avg = span_weight * avg_idle;
    if span_avg > 4 * avg_cost {
        span_avg / avg_cost
    } else {
        4
    }
}

/// wake_avg_idle and wake_stamp aged to jiffies `now` (select_idle_cpu,
/// v5.14-v6.6): "If we're busy, the assumption that the last idle period
/// predicts the future is flawed": halved per jiffy since the stamp, which
/// stops advancing once nothing is left.
fn wake_avg_idle_aged(mut avg: u64, mut stamp: u64, now: u64) -> (u64, u64) {
    while stamp < now && avg != 0 {
        stamp += 1;
        avg >>= 1;
    }
    (avg, stamp)
}

/// The SIS_UTIL scan budget of an LLC of `weight` CPUs whose cfs
/// utilizations sum to `sum_util` (update_idle_cpu_scan's arithmetic).
fn nr_idle_scan(sum_util: u64, weight: u64, pct: u64) -> u32 {
    let x = sum_util / weight;
    let tmp = (x * x * pct * pct / (10_000 * 1024)).min(1024);
    ((1024 - tmp) * weight / 1024) as u32
}

#[cfg(test)]
mod tests {
    use super::{nr_idle_scan, sis_prop_nr, update_avg, wake_avg_idle_aged};

    #[test]
    fn sis_prop_budget_is_the_span_times_idle_over_cost_at_least_4() {
        // 52 CPUs, 250 µs predicted idle, scans of 999 ns (+1): 13,000.
        assert_eq!(sis_prop_nr(52, 250_000, 999), 13_000);
        // A cost of 0 divides by 1.
        assert_eq!(sis_prop_nr(8, 3, 0), 24);
        // Integer division: 16 × 438 / 1000 = 7.008.
        assert_eq!(sis_prop_nr(16, 438, 999), 7);
        // Only above 4 × avg_cost does the quotient count: 41 > 40 gives
        // 41 / 10 = 4, 50 gives 5; 40 and below, and no idle time, 4.
        assert_eq!(sis_prop_nr(1, 50, 9), 5);
        assert_eq!(sis_prop_nr(1, 41, 9), 4);
        assert_eq!(sis_prop_nr(1, 40, 9), 4);
        assert_eq!(sis_prop_nr(52, 0, 0), 4);
    }

    #[test]
    fn wake_avg_idle_halves_per_jiffy_until_nothing_is_left() {
        assert_eq!(wake_avg_idle_aged(1000, 10, 10), (1000, 10));
        assert_eq!(wake_avg_idle_aged(1000, 10, 13), (125, 13));
        // A shift: 1001 / 2 rounds down.
        assert_eq!(wake_avg_idle_aged(1001, 10, 11), (500, 11));
        // 1000 >> 10 = 0: the stamp stops 10 jiffies on, not at now.
        assert_eq!(wake_avg_idle_aged(1000, 10, 100), (0, 20));
    }

    #[test]
    fn update_avg_moves_an_eighth_truncating_towards_zero() {
        assert_eq!(update_avg(800, 0), 700);
        assert_eq!(update_avg(0, 800), 100);
        // (3 - 10) / 8 is 0 in C, not -1: the average stays.
        assert_eq!(update_avg(10, 3), 10);
        assert_eq!(update_avg(10, 1), 9);
    }

    #[test]
    fn sis_util_budget_shrinks_with_utilization() {
        // Idle LLC: scan every CPU; half busy: 1024 - 512²·117²/(10⁴·1024)
        // = 1024 - 350 = 674 of 1024, i.e. 34 of 52 CPUs.
        assert_eq!(nr_idle_scan(0, 52, 117), 52);
        assert_eq!(nr_idle_scan(512 * 52, 52, 117), 34);
        // At 100/117 of capacity (875) and above, no scan at all.
        assert_eq!(nr_idle_scan(876 * 52, 52, 117), 0);
        assert_eq!(nr_idle_scan(1024 * 52, 52, 117), 0);
        assert!(nr_idle_scan(800 * 52, 52, 117) > 0);
    }
}
