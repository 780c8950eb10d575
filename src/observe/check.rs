//! `--check`: invariants verified after every event.

use crate::kernel::pelt::LOAD_AVG_MAX;
use crate::kernel::task::TaskState;
use crate::kernel::Kernel;
use crate::workload::program::Blocked;

/// The largest PELT sum per unit of input. LOAD_AVG_MAX is the truncated
/// value of the geometric series; the kernel's integer accumulation can end
/// a little above it (up to ≈47788, 0.1 %), so the check allows 0.1 %.
const PELT_SUM_LIMIT: u64 = LOAD_AVG_MAX + LOAD_AVG_MAX / 1000;

impl Kernel {
    pub fn check_invariants(&mut self) -> Result<(), String> {
        self.check_runqueues()?;
        self.check_tasks()?;
        // The wasted-cores invariant is counted by the balancer at each
        // tick (balance.rs); --check makes its first episode fatal.
        match &self.lb.wasted_first {
            Some(m) => Err(m.clone()),
            None => Ok(()),
        }
    }

    /// Each queued task is on exactly one run queue, and the counts agree.
    fn check_runqueues(&self) -> Result<(), String> {
        let mut seen = vec![0u32; self.tasks.len()];
        for rq in &self.rqs {
            let cfs = &rq.cfs;
            let curr_queued = cfs.curr.filter(|&c| self.tasks[c].se.on_rq);
            for &p in cfs.tree.iter().chain(curr_queued.iter()) {
                seen[p] += 1;
                if self.tasks[p].cpu != rq.cpu {
                    return Err(format!(
                        "task {} queued on cpu{} but task_cpu is {}",
                        self.tasks[p].pid, rq.cpu, self.tasks[p].cpu
                    ));
                }
            }
            let queued = cfs.tree.len() + curr_queued.is_some() as usize;
            for &p in &rq.rt.queue {
                seen[p] += 1;
            }
            if queued != cfs.nr_queued || queued + rq.rt.queue.len() != rq.nr_running {
                return Err(format!(
                    "cpu{}: {} queued entities but nr_queued {} and nr_running {}",
                    rq.cpu, queued, cfs.nr_queued, rq.nr_running
                ));
            }
            let runnable = cfs
                .tree
                .iter()
                .chain(curr_queued.iter())
                .filter(|&&p| !self.tasks[p].se.sched_delayed)
                .count();
            if runnable != cfs.h_nr_runnable {
                return Err(format!(
                    "cpu{}: h_nr_runnable {} but {} runnable",
                    rq.cpu, cfs.h_nr_runnable, runnable
                ));
            }
            let (sum, load) = cfs.tree.iter().fold((0i64, 0i64), |(s, l), &p| {
                let se = &self.tasks[p].se;
                let w = se.load.unscaled() as i64;
                (s + (se.vruntime - cfs.min_vruntime) * w, l + w)
            });
            if (sum, load) != (cfs.avg_vruntime, cfs.avg_load) {
                return Err(format!(
                    "cpu{}: avg_vruntime {}/{} but the tree sums to {sum}/{load}",
                    rq.cpu, cfs.avg_vruntime, cfs.avg_load
                ));
            }
            if rq.curr.is_none() && !rq.is_idle() && !self.irqs.in_handler(rq.cpu) {
                return Err(format!(
                    "cpu{}: nothing to run but not idle ({:?})",
                    rq.cpu, rq.act
                ));
            }
            if let Some(c) = rq.curr.filter(|&c| !self.is_rt(c)) {
                if rq.cfs.curr != Some(c) {
                    return Err(format!("cpu{}: rq->curr is not cfs_rq->curr", rq.cpu));
                }
            }
        }
        for (p, t) in self.tasks.iter().enumerate() {
            if t.on_rq as u32 != seen[p] {
                return Err(format!(
                    "task {} on_rq={} but queued {} times",
                    t.pid, t.on_rq, seen[p]
                ));
            }
        }
        Ok(())
    }

    /// No lost wakeups, and PELT sums within their bounds.
    fn check_tasks(&mut self) -> Result<(), String> {
        for p in 0..self.tasks.len() {
            let t = &self.tasks[p];
            let (pid, blocked) = (t.pid, t.prog.blocked);
            match t.state {
                TaskState::Running if !t.on_rq => {
                    return Err(format!(
                        "task {pid} is TASK_RUNNING but not queued (lost wakeup)"
                    ));
                }
                TaskState::Waking if t.on_rq || !self.rqs[t.cpu].wake_list.contains(&p) => {
                    return Err(format!(
                        "task {pid} is TASK_WAKING but not on CPU {}'s wakelist",
                        t.cpu
                    ));
                }
                TaskState::Interruptible if !t.on_rq || t.se.sched_delayed => {
                    let ok = match blocked {
                        Blocked::Queue(q) => self.is_waiting_on(q, p),
                        Blocked::Timer | Blocked::Child | Blocked::Scheduled => true,
                        Blocked::Completion(c) => self.completion_can_wake(p, c),
                        Blocked::Nothing => false,
                    };
                    if !ok {
                        return Err(format!(
                            "task {pid} sleeps with nothing to wake it (lost wakeup)"
                        ));
                    }
                }
                _ => {}
            }
            let a = &self.tasks[p].se.avg;
            if a.load_sum > PELT_SUM_LIMIT
                || a.util_sum > PELT_SUM_LIMIT << 10
                || a.runnable_sum > PELT_SUM_LIMIT << 10
            {
                return Err(format!(
                    "task {} PELT sums above LOAD_AVG_MAX: {a:?}",
                    self.tasks[p].pid
                ));
            }
        }
        Ok(())
    }
}
