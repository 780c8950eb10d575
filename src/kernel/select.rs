//! Task placement (kernel/sched/fair.c): select_task_rq_fair for wakeups
//! (wake_wide, wake_affine, select_idle_sibling) and a fork placement that
//! looks for the idlest CPU (the slow path, sched_balance_find_dst_cpu).

use super::core::WF_SYNC;
use super::features::Feature;
use super::task::Pid;
use super::Kernel;

/// imbalance_pct of the LLC (MC) sched domain, as sd_init sets it.
const LLC_IMBALANCE_PCT: u64 = 117;

impl Kernel {
    /// select_task_rq_fair for a wakeup (WF_TTWU).
    pub fn select_task_rq(
        &mut self,
        p: Pid,
        prev: usize,
        wake_flags: u32,
        this: usize,
        waker: Option<Pid>,
    ) -> usize {
        let ncpus = self.machine.nr_cpus();
        if self.tasks[p].nr_cpus_allowed(ncpus) == 1 {
            return self.tasks[p].allowed.as_ref().map_or(prev, |v| v[0]);
        }
        let sync = wake_flags & WF_SYNC != 0;
        if let Some(w) = waker {
            self.record_wakee(w, p);
        }
        let want_affine =
            waker.is_some_and(|w| !self.wake_wide(w, p)) && self.tasks[p].is_allowed(this);
        let mut new_cpu = prev;
        if want_affine && this != prev {
            new_cpu = self.wake_affine(p, this, prev, sync, waker);
        }
        let target = self.select_idle_sibling(p, prev, new_cpu);
        if self.tasks[p].is_allowed(target) {
            target
        } else {
            self.first_allowed(p)
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

    /// wake_wide: a waker juggling many wakees spreads them out.
    fn wake_wide(&self, waker: Pid, p: Pid) -> bool {
        let llc = self.machine.cpus[self.tasks[waker].cpu].llc;
        let factor = self.machine.llc_cpus(llc).len() as u32;
        let (a, b) = (self.tasks[waker].wakee_flips, self.tasks[p].wakee_flips);
        let (master, slave) = (a.max(b), a.min(b));
        !(slave < factor || master < slave * factor)
    }

    /// cpu_load: the root cfs_rq's load_avg.
    fn cpu_load(&self, cpu: usize) -> u64 {
        self.rqs[cpu].cfs.avg.load_avg
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
            target = self.wake_affine_weight(p, this, prev, sync, waker);
        }
        match target {
            Some(t) if t == this => {
                self.stats.ttwu_move_affine += 1;
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
        let rq = &self.rqs[this];
        let delayed = rq.cfs.nr_queued - rq.cfs.h_nr_runnable;
        if sync && rq.nr_running - delayed == 1 {
            return Some(this);
        }
        if self.idle_cpu(prev) {
            return Some(prev);
        }
        None
    }

    /// wake_affine_weight: compare the loads the two CPUs would have.
    fn wake_affine_weight(
        &self,
        p: Pid,
        this: usize,
        prev: usize,
        sync: bool,
        waker: Option<Pid>,
    ) -> Option<usize> {
        let task_load = self.tasks[p].se.avg.load_avg;
        let mut this_eff = self.cpu_load(this);
        if sync {
            let current = waker.map_or(0, |w| self.tasks[w].se.avg.load_avg);
            if current > this_eff {
                return Some(this);
            }
            this_eff -= current;
        }
        this_eff += task_load;
        if self.cfg.features.enabled(Feature::WaBias) {
            this_eff *= 100;
        }
        this_eff *= self.machine.cpus[prev].capacity as u64;
        let mut prev_eff = self.cpu_load(prev).saturating_sub(task_load);
        if self.cfg.features.enabled(Feature::WaBias) {
            prev_eff *= 100 + (LLC_IMBALANCE_PCT - 100) / 2;
        }
        prev_eff *= self.machine.cpus[this].capacity as u64;
        if sync {
            prev_eff += 1;
        }
        (this_eff < prev_eff).then_some(this)
    }

    fn core_idle(&self, cpu: usize) -> bool {
        self.machine
            .smt_siblings(cpu)
            .iter()
            .all(|&s| self.idle_cpu(s))
    }

    /// select_idle_sibling: target if idle, else prev, else the task's
    /// recent CPU, else a scan of the target's LLC for an idle core (SMT)
    /// or an idle CPU, starting after the target.
    fn select_idle_sibling(&mut self, p: Pid, prev: usize, target: usize) -> usize {
        if self.idle_cpu(target) {
            return target;
        }
        if prev != target && self.machine.shares_llc(prev, target) && self.idle_cpu(prev) {
            return prev;
        }
        let recent = self.tasks[p].recent_used_cpu;
        self.tasks[p].recent_used_cpu = prev;
        if recent != prev
            && recent != target
            && self.machine.shares_llc(recent, target)
            && self.idle_cpu(recent)
            && self.tasks[p].is_allowed(recent)
        {
            return recent;
        }
        let llc = self.machine.llc_cpus(self.machine.cpus[target].llc);
        let pos = llc.iter().position(|&c| c == target).unwrap_or(0);
        let scan = (1..=llc.len()).map(|i| llc[(pos + i) % llc.len()]);
        let smt = self.machine.smt_width() > 1;
        let mut first_idle = None;
        let mut scanned = 0;
        for cpu in scan {
            if !self.tasks[p].is_allowed(cpu) || !self.idle_cpu(cpu) {
                continue;
            }
            scanned += 1;
            if !smt || self.core_idle(cpu) {
                first_idle = Some(cpu);
                break;
            }
            first_idle.get_or_insert(cpu);
        }
        self.stats.sis_scanned += scanned;
        first_idle.unwrap_or(target)
    }

    /// Fork placement, sched_balance_find_dst_group/_cpu flattened onto the
    /// topology: descend node → LLC → core, at each level staying in the
    /// parent's group unless another group has more idle CPUs (the has_spare
    /// rule), then take the idle CPU in the shallowest idle state, else the
    /// CPU with the fewest tasks and least load.
    pub fn select_task_rq_fork(&self, p: Pid, parent_cpu: usize) -> usize {
        let m = &self.machine;
        let allowed: Vec<usize> = (0..m.nr_cpus())
            .filter(|&c| self.tasks[p].is_allowed(c))
            .collect();
        if allowed.is_empty() {
            return parent_cpu;
        }
        let levels: [&dyn Fn(usize) -> usize; 3] =
            [&|c| m.cpus[c].node, &|c| m.cpus[c].llc, &|c| m.cpus[c].core];
        let mut span = allowed;
        for (level, group_of) in levels.into_iter().enumerate() {
            span = self.idlest_group(&span, parent_cpu, group_of, level == 0);
        }
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

    /// The CPUs of the group (by `group_of`) within `span` to descend into:
    /// the local group (holding `local`, else the first) unless another has
    /// more idle CPUs, or as many idle CPUs and fewer tasks. Across NUMA
    /// nodes a lightly loaded local node is kept (allow_numa_imbalance with
    /// imb_numa_nr = a quarter of an LLC).
    fn idlest_group(
        &self,
        span: &[usize],
        local: usize,
        group_of: &dyn Fn(usize) -> usize,
        numa: bool,
    ) -> Vec<usize> {
        let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
        for &c in span {
            let g = group_of(c);
            match groups.iter_mut().find(|(id, _)| *id == g) {
                Some((_, v)) => v.push(c),
                None => groups.push((g, vec![c])),
            }
        }
        let stats = |cpus: &[usize]| {
            let idle = cpus.iter().filter(|&&c| self.idle_cpu(c)).count();
            let running: usize = cpus.iter().map(|&c| self.rqs[c].nr_running).sum();
            (idle, running)
        };
        let local_idx = groups
            .iter()
            .position(|(_, v)| v.contains(&local))
            .unwrap_or(0);
        let mut best = local_idx;
        let mut best_stats = stats(&groups[local_idx].1);
        let llc_size = self.machine.llc_cpus(self.machine.cpus[local].llc).len();
        if numa && best_stats.1 < (llc_size / 4).max(1) {
            return std::mem::take(&mut groups[local_idx].1);
        }
        for (i, (_, cpus)) in groups.iter().enumerate() {
            let (idle, running) = stats(cpus);
            if idle > best_stats.0 || (idle == best_stats.0 && running < best_stats.1) {
                best = i;
                best_stats = (idle, running);
            }
        }
        std::mem::take(&mut groups[best].1)
    }
}
