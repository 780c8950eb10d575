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

    /// Fork placement: the idlest allowed CPU, preferring an idle one in the
    /// shallowest idle state, then the parent's CPU, then the fewest tasks
    /// and the least load (sched_balance_find_dst_cpu, flattened).
    pub fn select_task_rq_fork(&self, p: Pid, parent_cpu: usize) -> usize {
        let ncpus = self.machine.nr_cpus();
        let order = (0..ncpus).map(|i| (parent_cpu + i) % ncpus);
        order
            .filter(|&c| self.tasks[p].is_allowed(c))
            .min_by_key(|&c| {
                let rq = &self.rqs[c];
                let exit = match rq.act {
                    super::core::Activity::Idle { since } if self.idle_cpu(c) => {
                        self.idle_state_at(self.now - since).exit_latency_ns
                    }
                    _ => u64::MAX,
                };
                (!self.idle_cpu(c), exit, rq.nr_running, self.cpu_load(c))
            })
            .unwrap_or(parent_cpu)
    }
}
