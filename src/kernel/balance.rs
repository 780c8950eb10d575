//! Keeping CPUs of one LLC from idling next to waiting tasks: a newly idle
//! pull (sched_balance_newidle) and a nohz idle-balance kick from the busy
//! tick (nohz_balancer_kick). This is a stand-in restricted to the LLC; the
//! full sched-domain load balancer replaces it.

use super::core::Activity;
use super::task::Pid;
use super::Kernel;
use crate::engine::EventKind;

impl Kernel {
    /// task_hot: the task ran on its CPU less than migration_cost ago.
    /// SMT siblings share caches, so nothing is hot between them.
    fn task_hot(&self, p: Pid, src: usize, dst: usize) -> bool {
        if self.machine.smt_siblings(src).contains(&dst) {
            return false;
        }
        let exec_start = self.tasks[p].se.exec_start;
        exec_start != 0 && self.now.saturating_sub(exec_start) < self.cfg.migration_cost_ns
    }

    /// The busiest run queue in `dst`'s LLC that has a task `dst` may take.
    fn find_pullable(&self, dst: usize, allow_hot: bool) -> Option<(usize, Pid)> {
        let llc = self.machine.llc_cpus(self.machine.cpus[dst].llc);
        let pos = llc.iter().position(|&c| c == dst).unwrap_or(0);
        let mut best: Option<(usize, usize, Pid)> = None;
        for i in 1..llc.len() {
            let src = llc[(pos + i) % llc.len()];
            let rq = &self.rqs[src];
            let waiting = rq.cfs.h_nr_runnable;
            if waiting < 2 || best.is_some_and(|(n, ..)| n >= waiting) {
                continue;
            }
            let ok = |t: &super::task::Task| t.is_allowed(dst);
            let Some(p) = rq.cfs.coldest_waiting(&self.tasks, ok) else {
                continue;
            };
            if allow_hot || !self.task_hot(p, src, dst) {
                best = Some((waiting, src, p));
            }
        }
        best.map(|(_, src, p)| (src, p))
    }

    /// sched_balance_newidle, within the LLC: pull one cache-cold waiting
    /// task from the busiest run queue. Returns whether a task was pulled.
    pub fn newidle_balance(&mut self, cpu: usize) -> bool {
        match self.find_pullable(cpu, false) {
            Some((src, p)) => {
                self.move_queued_task(p, src, cpu);
                self.stats.newidle_pulls += 1;
                true
            }
            None => false,
        }
    }

    /// nohz_balancer_kick: a busy CPU with waiting tasks kicks the first
    /// idle CPU of its LLC, which then balances on its own behalf.
    pub fn nohz_balancer_kick(&mut self, cpu: usize) {
        if self.rqs[cpu].cfs.h_nr_runnable < 2 {
            return;
        }
        let llc = self.machine.llc_cpus(self.machine.cpus[cpu].llc);
        let Some(&ilb) = llc
            .iter()
            .find(|&&c| c != cpu && self.rqs[c].is_idle() && self.idle_cpu(c))
        else {
            return;
        };
        let Activity::Idle { since } = self.rqs[ilb].act else {
            return;
        };
        if self.events.is_pending(EventKind::IdleBalance, ilb) {
            return;
        }
        self.stats.ipis_sent += 1;
        self.rqs[ilb].stats.ipis_received += 1;
        let exit = self.idle_state_at(self.now - since).exit_latency_ns;
        let at = self.now + self.machine.cost.ipi_latency_ns + exit;
        self.events.push(at, EventKind::IdleBalance, ilb);
    }

    /// The kicked idle CPU balances: cache hotness no longer protects a task
    /// that has waited a whole tick (nr_balance_failed > cache_nice_tries).
    pub fn on_idle_balance(&mut self, cpu: usize) {
        if !self.rqs[cpu].is_idle() || !self.idle_cpu(cpu) {
            return;
        }
        if let Some((src, p)) = self.find_pullable(cpu, true) {
            self.move_queued_task(p, src, cpu);
            self.stats.idle_balance_pulls += 1;
            self.rqs[cpu].need_resched = true;
            self.on_resched(cpu);
        }
    }
}
