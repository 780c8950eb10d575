//! `--check`: invariants verified as the run goes. After every event, the
//! CPUs and tasks it touched (the kernel marks them: `Kernel::touch_cpu`,
//! `touch_task`); every `sim.check_every` events, or once per tick of
//! simulated time by default, the whole machine.

use crate::engine::EventKind;
use crate::kernel::bandwidth::{BANDWIDTH_SLICE_NS, BW_TIMER_BASE};
use crate::kernel::deadline::DL_TIMER_BASE;
use crate::kernel::fair::{se_group, SeStore, GROUP_SE};
use crate::kernel::features::PeltModel;
use crate::kernel::pelt::LOAD_AVG_MAX;
use crate::kernel::program::Blocked;
use crate::kernel::task::{Pid, TaskState};
use crate::kernel::Kernel;

/// The largest PELT sum per unit of input. LOAD_AVG_MAX is the truncated
/// value of the geometric series; the kernel's integer accumulation can end
/// a little above it (up to ≈47788, 0.1 %), so the check allows 0.1 %.
const PELT_SUM_LIMIT: u64 = LOAD_AVG_MAX + LOAD_AVG_MAX / 1000;

/// The incremental check walks a touched CPU's queues only up to this many
/// tasks; longer ones wait for the sweep.
const INCREMENTAL_MAX_QUEUED: usize = 64;

/// SCHED_CAPACITY_SCALE: the most running earns a cfs_rq's util_avg.
const SCHED_CAPACITY: u64 = 1024;

impl Kernel {
    /// After the event `kind` on `idx` (a CPU, or a task for timers): the
    /// checks on what it touched, or the whole-machine sweep when due.
    pub fn check_event(&mut self, kind: EventKind, idx: usize) -> Result<(), String> {
        self.marks.events += 1;
        // The bandwidth timers refill and unthrottle a group on every CPU.
        let bandwidth = kind == EventKind::Timer && idx >= BW_TIMER_BASE;
        let sweep = bandwidth
            || match self.marks.every {
                0 => self.now >= self.marks.next_sweep,
                n => self.marks.events.is_multiple_of(n),
            };
        match kind {
            EventKind::Timer if idx >= DL_TIMER_BASE && !bandwidth => {
                self.touch_task(idx - DL_TIMER_BASE)
            }
            EventKind::Timer if !bandwidth => self.touch_task(idx),
            EventKind::Timer | EventKind::End => {}
            _ => self.touch_cpu(idx),
        }
        let r = if sweep {
            self.marks.next_sweep = self.now + self.tick_ns;
            self.marks.swept += (self.rqs.len() + self.tasks.len()) as u64;
            self.check_invariants()
        } else {
            self.check_touched()
        };
        self.marks.cpus.clear();
        self.marks.tasks.clear();
        r
    }

    /// The whole machine: every run queue, task, group and pool.
    pub fn check_invariants(&mut self) -> Result<(), String> {
        let gen = self.next_check_gen();
        let mut stamp = std::mem::take(&mut self.marks.stamp);
        let r = (0..self.rqs.len()).try_for_each(|cpu| self.check_rq(cpu, &mut stamp, gen));
        self.marks.stamp = stamp;
        r?;
        for p in 0..self.tasks.len() {
            self.check_queued(p, gen)?;
            self.check_task(p)?;
        }
        self.check_tg_load_avg()?;
        self.check_runnable_load_316()?;
        self.check_cfs_util()?;
        self.check_bandwidth()?;
        self.check_wasted()
    }

    /// The CPUs and tasks the last event touched, and the CPUs those tasks
    /// are on: a queued task must be found on its own CPU's queue.
    fn check_touched(&mut self) -> Result<(), String> {
        let gen = self.next_check_gen();
        let mut cpus = std::mem::take(&mut self.marks.cpus);
        let mut tasks = std::mem::take(&mut self.marks.tasks);
        tasks.sort_unstable();
        tasks.dedup();
        cpus.extend(tasks.iter().map(|&p| self.tasks[p].cpu));
        cpus.sort_unstable();
        cpus.dedup();
        // A long queue costs its length to walk: leave it to the sweep.
        cpus.retain(|&c| self.rqs[c].nr_running <= INCREMENTAL_MAX_QUEUED);
        let mut stamp = std::mem::take(&mut self.marks.stamp);
        let r = cpus
            .iter()
            .try_for_each(|&cpu| self.check_rq(cpu, &mut stamp, gen));
        self.marks.stamp = stamp;
        let r = r.and_then(|()| {
            tasks.iter().try_for_each(|&p| {
                if cpus.binary_search(&self.tasks[p].cpu).is_ok() {
                    self.check_queued(p, gen)?;
                }
                self.check_task(p)
            })
        });
        self.marks.cpus = cpus;
        self.marks.tasks = tasks;
        r?;
        self.check_wasted()
    }

    /// A new check's number, with a stamp slot for every task.
    fn next_check_gen(&mut self) -> u64 {
        self.marks.stamp.resize(self.tasks.len(), 0);
        self.marks.gen += 1;
        self.marks.gen
    }

    /// The wasted-cores invariant is counted by the balancer at each tick
    /// (balance.rs); --check makes its first episode fatal.
    fn check_wasted(&self) -> Result<(), String> {
        match &self.lb.wasted_first {
            Some(m) => Err(m.clone()),
            None => Ok(()),
        }
    }

    /// A task is queued exactly when a run queue holds it (stamped by
    /// `check_rq` in check `gen`).
    fn check_queued(&self, p: Pid, gen: u64) -> Result<(), String> {
        let t = &self.tasks[p];
        let found = self.marks.stamp[p] == gen;
        if t.on_rq != found {
            return Err(format!(
                "task {} on_rq={} but queued {} times (cpu{})",
                t.pid, t.on_rq, found as u32, t.cpu
            ));
        }
        Ok(())
    }

    /// Stamp a queued task as found, once.
    fn found(&self, stamp: &mut [u64], gen: u64, p: Pid, cpu: usize) -> Result<(), String> {
        if stamp[p] == gen {
            return Err(format!(
                "task {} queued twice (cpu{cpu})",
                self.tasks[p].pid
            ));
        }
        stamp[p] = gen;
        Ok(())
    }

    /// One CPU: its cfs_rqs' counts and sums, the RT queue and the
    /// wakelist hold tasks whose task_cpu is this CPU, nr_running, idle
    /// state and the chain of curr entities.
    fn check_rq(&self, cpu: usize, stamp: &mut [u64], gen: u64) -> Result<(), String> {
        let rq = &self.rqs[cpu];
        if self.idle_mask.test(cpu) != rq.is_idle() {
            return Err(format!("cpu{cpu}: idle mask disagrees with its activity"));
        }
        let core = self.machine.cpus[cpu].core;
        let busy = self.machine.smt_siblings(cpu).iter();
        let busy = busy.filter(|&&s| !self.rqs[s].is_idle()).count();
        if busy != self.busy_in_core[core] as usize {
            return Err(format!("cpu{cpu}: core {core}'s busy count is stale"));
        }
        let llc = self.machine.cpus[cpu].llc;
        let span = self.machine.llc_cpus(llc);
        if span[0] == cpu {
            let idle = span.iter().filter(|&&c| self.idle_mask.test(c)).count();
            if idle != self.idle_in_llc[llc] as usize {
                return Err(format!("llc {llc}: its idle count is stale"));
            }
        }
        let (queued, _) = self.check_cfs_rq(cpu, 0, stamp, gen)?;
        // Throttled groups hang off the hierarchy: check them apart.
        for (g, q) in rq.gcfs.iter().enumerate().skip(1) {
            if q.throttled && !rq.gse[g].on_rq {
                self.check_cfs_rq(cpu, g, stamp, gen)?;
            }
        }
        let (rt, dl) = (&rq.rt.queue, &rq.dl);
        for &p in rt.iter().chain(&dl.queue).chain(&dl.throttled) {
            self.found(stamp, gen, p, cpu)?;
            if self.tasks[p].cpu != cpu {
                return Err(format!(
                    "task {} on cpu{cpu}'s RT or DL queue but task_cpu is {}",
                    self.tasks[p].pid, self.tasks[p].cpu
                ));
            }
        }
        for &p in &rq.wake_list {
            let t = &self.tasks[p];
            if t.cpu != cpu || t.state != TaskState::Waking {
                return Err(format!(
                    "task {} on cpu{cpu}'s wakelist but task_cpu is {} and its state {:?}",
                    t.pid, t.cpu, t.state
                ));
            }
        }
        // Throttled DL tasks are on the run queue but not in nr_running.
        let queued = queued + rq.rt.queue.len() + rq.dl.queue.len();
        if queued != rq.nr_running {
            return Err(format!(
                "cpu{cpu}: {queued} queued tasks but nr_running {}",
                rq.nr_running
            ));
        }
        if rq.curr.is_none() && !rq.is_idle() && !self.irqs.in_handler(cpu) {
            return Err(format!(
                "cpu{cpu}: nothing to run but not idle ({:?})",
                rq.act
            ));
        }
        if let Some(c) = rq.curr.filter(|&c| !self.is_rt(c) && !self.is_dl(c)) {
            self.check_curr_chain(cpu, c)?;
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
        stamp: &mut [u64],
        gen: u64,
    ) -> Result<(usize, usize), String> {
        let q = self.cfs_rq(cpu, c);
        let ents = self.ents(cpu);
        let curr_queued = q.curr.filter(|&s| ents.se(s).on_rq);
        let (mut tasks, mut runnable) = (0, 0);
        for s in q.tree.iter().chain(curr_queued) {
            match se_group(s) {
                None => {
                    self.found(stamp, gen, s, cpu)?;
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
                    let (t, r) = self.check_cfs_rq(cpu, g, stamp, gen)?;
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

    /// One task: no lost wakeup, not queued while still on a wait queue,
    /// PELT sums within their bounds.
    fn check_task(&mut self, p: Pid) -> Result<(), String> {
        let t = &self.tasks[p];
        let (pid, blocked) = (t.pid, t.prog.blocked);
        match t.state {
            TaskState::Running if !t.on_rq => {
                return Err(format!(
                    "task {pid} is TASK_RUNNING but not queued (lost wakeup)"
                ));
            }
            TaskState::Running => {
                if let Blocked::Queue(q) = blocked {
                    if self.is_waiting_on(q, p) {
                        return Err(format!("task {pid} is queued and on a wait queue"));
                    }
                }
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
        // attach_entity_load_avg rebuilds load_sum as load_avg / weight
        // periods: an RT task switched to a lighter fair weight keeps its
        // fork-time load_avg, so its load_sum exceeds LOAD_AVG_MAX by that
        // ratio, in the kernel too.
        let w = crate::kernel::prio::scale_load_down(self.tasks[p].se.load.weight).max(1);
        let load_limit = PELT_SUM_LIMIT * (a.load_avg / w + 1);
        if a.load_sum > load_limit
            || a.util_sum > PELT_SUM_LIMIT << 10
            || a.runnable_sum > PELT_SUM_LIMIT << 10
        {
            return Err(format!("task {pid} PELT sums above LOAD_AVG_MAX: {a:?}"));
        }
        Ok(())
    }

    /// A cfs_rq's util_avg is what it earned running plus what attached
    /// entities brought in: attach adds an entity's util_avg; detach and
    /// the removed load take back what it brought, decayed, and what it
    /// earned there (up to a rounding unit or two each). So it is at most
    /// its `running_avg` (earned running and the detaches' rounding, aged;
    /// 1024, the most running earns, when not tracked) plus the stored
    /// util_avg of its attached entities (a blocked one's is stale, so at
    /// least its aged value), its pending removed util, and rounding (each
    /// entity's own PELT divider: 1/16 of the total and 2 per entity). Not
    /// "util_avg <= capacity": a migration's attach lifts a cfs_rq past
    /// its CPU's capacity (cpu_util() clamps, the average does not). A task
    /// attached twice (issue 15's bug at t = 0) breaks it.
    fn check_cfs_util(&self) -> Result<(), String> {
        let ng = self.groups.count();
        let mut sum = vec![(0u64, 0u64); self.rqs.len() * ng];
        for t in &self.tasks {
            if t.se.avg.attached {
                let s = &mut sum[t.cpu * ng + t.tg];
                *s = (s.0 + t.se.avg.util_avg, s.1 + 1);
            }
        }
        for cpu in 0..self.rqs.len() {
            let ents = self.ents(cpu);
            for g in 1..ng {
                let a = &ents.se(GROUP_SE + g).avg;
                if a.attached {
                    let s = &mut sum[cpu * ng + self.groups.parent(g)];
                    *s = (s.0 + a.util_avg, s.1 + 1);
                }
            }
        }
        for cpu in 0..self.rqs.len() {
            for c in 0..ng {
                let q = self.cfs_rq(cpu, c);
                let (util, n) = sum[cpu * ng + c];
                let (rm, rn) = (q.removed.util_avg, q.removed.nr as u64);
                let ran = q
                    .running_avg
                    .as_ref()
                    .map_or(SCHED_CAPACITY, |r| r.util_avg);
                let bound = ran + util + rm + (util + rm) / 16 + 2 * (n + rn + 1);
                if q.avg.util_avg > bound {
                    return Err(format!(
                        "cpu{cpu} group {c}: util_avg {} above what it earned running ({ran}) and its {n} attached entities brought ({util} + removed {rm} + rounding)",
                        q.avg.util_avg
                    ));
                }
            }
        }
        Ok(())
    }

    /// Track each cfs_rq's `running_avg` from now on (call before the run).
    pub fn track_running_util(&mut self) {
        for rq in &mut self.rqs {
            for q in std::iter::once(&mut rq.cfs).chain(rq.gcfs.iter_mut()) {
                let mut r = q.avg;
                (r.util_sum, r.util_avg) = (0, 0);
                q.running_avg = Some(Box::new(r));
            }
        }
    }

    /// `kernel.pelt = "v3.16"`: each cfs_rq's runnable_load_avg is the sum
    /// of its queued entities' load_avg_contrib (every change of a queued
    /// entity's contribution moves it by the same amount).
    fn check_runnable_load_316(&self) -> Result<(), String> {
        if self.cfg.pelt != PeltModel::V316 {
            return Ok(());
        }
        let n = self.groups.count();
        let mut sums = vec![0u64; self.rqs.len() * n];
        for t in self.tasks.iter().filter(|t| t.se.on_rq) {
            let s = &mut sums[t.cpu * n + t.tg];
            *s = s.wrapping_add(t.se.avg316.load_avg_contrib);
        }
        for (cpu, rq) in self.rqs.iter().enumerate() {
            for g in (1..n).filter(|&g| rq.gse[g].on_rq) {
                let s = &mut sums[cpu * n + self.groups.parent(g)];
                *s = s.wrapping_add(rq.gse[g].avg316.load_avg_contrib);
            }
            for c in 0..n {
                let have = self.cfs_rq(cpu, c).v316.runnable_load_avg;
                if have != sums[cpu * n + c] {
                    return Err(format!(
                        "cpu {cpu} cfs_rq of group {c}: runnable_load_avg {have} but its queued entities contribute {}",
                        sums[cpu * n + c]
                    ));
                }
            }
        }
        Ok(())
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

    /// CFS bandwidth accounting: runtime is accounted exactly on the
    /// groups with a quota; the pool is never negative; a cfs_rq holds at
    /// most one slice, is throttled only with no runtime left, and is on
    /// its pool's throttled list exactly when it is throttled.
    fn check_bandwidth(&self) -> Result<(), String> {
        for g in 1..self.groups.count() {
            let b = &self.bandwidth[g];
            let limited = self.groups.tgs[g].quota.is_some();
            if limited && b.runtime < 0 {
                return Err(format!("group {g}: bandwidth pool at {} ns", b.runtime));
            }
            for rq in &self.rqs {
                let q = &rq.gcfs[g];
                let listed = b.throttled.iter().filter(|&&c| c == rq.cpu).count();
                let bad = if !limited {
                    (q.runtime_enabled || q.throttled || listed > 0).then_some("no quota")
                } else if q.runtime_remaining > BANDWIDTH_SLICE_NS {
                    Some("more than one slice")
                } else if q.throttled && q.runtime_remaining > 0 {
                    Some("throttled with runtime left")
                } else if listed != q.throttled as usize {
                    Some("throttled list disagrees")
                } else {
                    None
                };
                if let Some(why) = bad {
                    return Err(format!(
                        "group {g} cpu{}: bandwidth accounting broken ({why}): runtime_remaining {}, throttled {}, listed {listed} times",
                        rq.cpu, q.runtime_remaining, q.throttled
                    ));
                }
            }
        }
        Ok(())
    }
}
