//! `--check`: invariants verified after every event.

use crate::kernel::fair::{se_group, SeStore, GROUP_SE};
use crate::kernel::pelt::LOAD_AVG_MAX;
use crate::kernel::program::Blocked;
use crate::kernel::task::TaskState;
use crate::kernel::Kernel;

/// The largest PELT sum per unit of input. LOAD_AVG_MAX is the truncated
/// value of the geometric series; the kernel's integer accumulation can end
/// a little above it (up to ≈47788, 0.1 %), so the check allows 0.1 %.
const PELT_SUM_LIMIT: u64 = LOAD_AVG_MAX + LOAD_AVG_MAX / 1000;

impl Kernel {
    pub fn check_invariants(&mut self) -> Result<(), String> {
        self.check_runqueues()?;
        self.check_tasks()?;
        self.check_tg_load_avg()?;
        // The wasted-cores invariant is counted by the balancer at each
        // tick (balance.rs); --check makes its first episode fatal.
        match &self.lb.wasted_first {
            Some(m) => Err(m.clone()),
            None => Ok(()),
        }
    }

    /// tg->load_avg is the sum of what each CPU's cfs_rq of the group last
    /// published (tg_load_avg_contrib): every update adds exactly its delta.
    fn check_tg_load_avg(&self) -> Result<(), String> {
        for g in 1..self.groups.count() {
            let sum: i64 = self
                .rqs
                .iter()
                .map(|rq| rq.gcfs[g].tg_load_avg_contrib as i64)
                .sum();
            let tg = self.groups.tgs[g].load_avg;
            if tg != sum {
                return Err(format!(
                    "group {g}: tg->load_avg {tg} but its cfs_rqs' contributions sum to {sum}"
                ));
            }
        }
        Ok(())
    }

    /// Each queued task is on exactly one run queue, and the counts agree
    /// on every cfs_rq of the hierarchy.
    fn check_runqueues(&self) -> Result<(), String> {
        let mut seen = vec![0u32; self.tasks.len()];
        for rq in &self.rqs {
            let (queued, _) = self.check_cfs_rq(rq.cpu, 0, &mut seen)?;
            // Throttled groups hang off the hierarchy: check them apart.
            for (g, q) in rq.gcfs.iter().enumerate().skip(1) {
                if q.throttled && !rq.gse[g].on_rq {
                    self.check_cfs_rq(rq.cpu, g, &mut seen)?;
                }
            }
            for &p in &rq.rt.queue {
                seen[p] += 1;
            }
            if queued + rq.rt.queue.len() != rq.nr_running {
                return Err(format!(
                    "cpu{}: {} queued tasks but nr_running {}",
                    rq.cpu,
                    queued + rq.rt.queue.len(),
                    rq.nr_running
                ));
            }
            if rq.curr.is_none() && !rq.is_idle() && !self.irqs.in_handler(rq.cpu) {
                return Err(format!(
                    "cpu{}: nothing to run but not idle ({:?})",
                    rq.cpu, rq.act
                ));
            }
            if let Some(c) = rq.curr.filter(|&c| !self.is_rt(c)) {
                self.check_curr_chain(rq.cpu, c)?;
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

    /// One cfs_rq and, recursively, the groups queued on it: entity counts,
    /// the avg_vruntime sums, and h_nr_queued/h_nr_runnable. Returns the
    /// tasks queued below it and the runnable ones.
    fn check_cfs_rq(
        &self,
        cpu: usize,
        c: usize,
        seen: &mut [u32],
    ) -> Result<(usize, usize), String> {
        let q = self.cfs_rq(cpu, c);
        let ents = self.ents(cpu);
        let curr_queued = q.curr.filter(|&s| ents.se(s).on_rq);
        let (mut tasks, mut runnable) = (0, 0);
        for s in q.tree.iter().chain(curr_queued) {
            match se_group(s) {
                None => {
                    seen[s] += 1;
                    let t = &self.tasks[s];
                    if t.cpu != cpu || t.tg != c {
                        return Err(format!(
                            "task {} queued on cpu{cpu} group {c} but task_cpu is {} and its group {}",
                            t.pid, t.cpu, t.tg
                        ));
                    }
                    tasks += 1;
                    runnable += !t.se.sched_delayed as usize;
                }
                Some(g) => {
                    if self.groups.parent(g) != c {
                        return Err(format!("cpu{cpu}: group {g}'s entity queued on group {c}"));
                    }
                    let (t, r) = self.check_cfs_rq(cpu, g, seen)?;
                    tasks += t;
                    runnable += r;
                }
            }
        }
        let entities = q.tree.len() + curr_queued.is_some() as usize;
        if entities != q.nr_queued || (tasks, runnable) != (q.h_nr_queued, q.h_nr_runnable) {
            return Err(format!(
                "cpu{cpu} group {c}: {entities} entities, {tasks} tasks, {runnable} runnable but nr_queued {}, h_nr_queued {}, h_nr_runnable {}",
                q.nr_queued, q.h_nr_queued, q.h_nr_runnable
            ));
        }
        let (sum, load) = q.tree.iter().fold((0i64, 0i64), |(sm, l), s| {
            let se = ents.se(s);
            let w = se.load.unscaled() as i64;
            (sm + (se.vruntime - q.min_vruntime) * w, l + w)
        });
        if (sum, load) != (q.avg_vruntime, q.avg_load) {
            return Err(format!(
                "cpu{cpu} group {c}: avg_vruntime {}/{} but the tree sums to {sum}/{load}",
                q.avg_vruntime, q.avg_load
            ));
        }
        // A throttled group's tasks stay queued below it but no longer
        // count above it.
        Ok(if q.throttled {
            (0, 0)
        } else {
            (tasks, runnable)
        })
    }

    /// The running fair task and each of its ancestors is its cfs_rq's curr.
    fn check_curr_chain(&self, cpu: usize, p: usize) -> Result<(), String> {
        let mut se = p;
        loop {
            let c = self.cfs_of(se);
            if self.cfs_rq(cpu, c).curr != Some(se) {
                return Err(format!(
                    "cpu{cpu}: rq->curr's entity {se} is not group {c}'s curr"
                ));
            }
            if c == 0 {
                return Ok(());
            }
            se = GROUP_SE + c;
        }
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
