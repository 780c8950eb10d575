//! The per-CPU run queue and the core scheduler (kernel/sched/core.c):
//! __schedule, try_to_wake_up, wakeup_preempt, resched_curr, sched_tick,
//! wake_up_new_task, and the CPU's execution of task segments.

use super::fair::{
    CfsRq, DEQUEUE_MIGRATING, DEQUEUE_SLEEP, DEQUEUE_SPECIAL, ENQUEUE_INITIAL, ENQUEUE_MIGRATED,
    ENQUEUE_WAKEUP,
};
use super::fair_class::Dequeued;
use super::features::Feature;
use super::noise::By;
use super::pelt;
use super::preempt::{Cause, Req, RqPreempt};
use super::program::Action;
use super::rt::{Policy, RtRq};
use super::select::Placed;
use super::task::Entity;
use super::task::{Pid, TaskState};
use super::tracepoint::{PlaceWhy, WakeupRule};
use super::Kernel;
use crate::engine::{EventKind, Time};
use crate::machine::cost::TtwuPath;

/// Wake flags (WF_*).
pub const WF_FORK: u32 = 0x04;
pub const WF_TTWU: u32 = 0x08;
pub const WF_SYNC: u32 = 0x10;
pub const WF_MIGRATED: u32 = 0x20;

/// What a CPU is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    /// Running the idle loop since `since`.
    Idle { since: Time },
    /// In the middle of a context switch to rq.curr, until `end`; `prev`
    /// is still on_cpu until then, in the state it had then. sched_switch
    /// fired at the switch's start, or fires once the interrupts pending
    /// at that start are done (`stamp`: Some(preempt) until then).
    Switching {
        prev: Option<Pid>,
        end: Time,
        prev_state: TaskState,
        stamp: Option<bool>,
    },
    /// Executing rq.curr's current segment, started at `start` at `speed`
    /// (work-ns per 1024 ns of wall time).
    Running { start: Time, speed: u64 },
    /// In the scheduler between two of the above (never seen by events).
    Kernel,
}

/// Wall ns that `work` ns of work take at `speed` (work-ns per 1024 ns);
/// at full speed (most CPUs, most of the time) no division is needed.
#[inline]
pub fn segment_ns(work: u64, speed: u64) -> u64 {
    if speed == 1024 {
        work
    } else {
        (work * 1024).div_ceil(speed)
    }
}

/// Why __schedule was entered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedMode {
    /// SM_NONE: the task blocks, exits or yields.
    Voluntary,
    /// SM_PREEMPT: a need-resched request was honoured.
    Preempt,
}

/// Per-CPU schedstat counters (/proc/schedstat cpu lines) and time split.
#[derive(Clone, Debug, Default)]
pub struct RqStats {
    pub sched_count: u64,
    pub sched_goidle: u64,
    pub ttwu_count: u64,
    pub ttwu_local: u64,
    pub nr_switches: u64,
    pub busy_ns: u64,
    pub idle_ns: u64,
    pub ipis_received: u64,
}

/// What the last update_blocked_averages of an idle CPU left.
#[derive(Clone, Copy, Debug)]
pub struct BlockedClean {
    pub at: Time,
    /// TaskGroups::load_epoch then.
    pub epoch: u64,
    /// Every signal at zero: later calls only move zero-sum windows.
    pub gone: bool,
    /// What a call at the same instant would count.
    pub calls: Option<BlockedCalls>,
    /// Rqs::seal right after the call.
    pub sealed: u64,
}

/// The counted work of an update_blocked_averages call that changes nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct BlockedCalls {
    /// Group-level ops (cfs_rqs aged, group entities updated).
    pub group_ops: u64,
    /// Bit g: group g's entity is updated (one update_load_avg call).
    pub entities: u64,
}

/// struct rq. In `repr(C)` order, 64-byte aligned, hot fields first:
/// with thousands of CPUs each event finds its run queue cold in the
/// caches and pays a miss per line it touches, so what every event touches
/// (the first two lines: curr, activity, clock and preemption state), what
/// a switch or wakeup touches (statistics, blocked_clean, footprint, the
/// rt and deadline queues, the fair server), and the PELT clock with the
/// root cfs_rq's hot fields (five lines from offset 768) are packed
/// together; the wakelist and the group cfs_rqs come last. The test
/// `hot_fields_stay_on_their_lines` pins these offsets.
#[repr(C, align(64))]
pub struct Rq {
    /// The epoch of its last mutable borrow (`Rqs`).
    stamp: u64,
    pub curr: Option<Pid>,
    /// rq->nr_running: queued tasks, delayed ones included.
    pub nr_running: usize,
    pub act: Activity,
    pub cpu: usize,
    /// RQCF_REQ_SKIP: the next __schedule keeps the rq clock as of this
    /// time (the last update since the request).
    pub clock_skip: Option<Time>,
    /// Interrupt work done on this CPU (IPI handlers, wakelist
    /// activations) not yet charged: it delays whatever runs next.
    pub irq_ns: u64,
    /// When the CPU last stopped being idle (for busy time).
    pub busy_since: Time,
    /// TIF_NEED_RESCHED_LAZY and the preemption counters' state.
    pub pre: RqPreempt,
    /// The address space currently loaded (switch_mm is skipped when equal).
    pub loaded_mm: u32,
    /// TIF_NEED_RESCHED of curr (or of the idle task).
    pub need_resched: bool,
    /// This CPU's own code asked it to reschedule while it was idle (its
    /// timer's wakeup, say, modelled at the interrupt's arrival):
    /// that code really runs once the CPU is out of its idle state, so the
    /// rq clock it read dates from the exit (leave_idle).
    pub woke_itself: bool,
    pub tick_on: bool,
    pub ttwu_pending: bool,
    pub stats: RqStats,
    /// Set by update_blocked_averages, cleared by anything that changes
    /// this CPU's PELT signals after it: when it ran, and whether it found
    /// them all at zero (rq->has_blocked_load false).
    pub blocked_clean: Option<BlockedClean>,
    /// rq->__lock, as remote wakers contend for it.
    pub lock: super::lock::ContendedLock,
    /// What this CPU's caches and TLB hold of recently run tasks.
    pub footprint: super::footprint::Footprint,
    pub rt: RtRq,
    pub dl: super::deadline::DlRq,
    /// rq_clock_pelt and the rt/dl/irq signals (pelt_rq.rs).
    pub pelt: super::pelt_rq::RqPelt,
    /// The root cfs_rq.
    pub cfs: CfsRq,
    /// The call-single wakelist: tasks woken onto this CPU that it has
    /// not activated yet (rq->ttwu_pending is `!wake_list.is_empty()`
    /// until sched_ttwu_pending runs).
    pub wake_list: Vec<Pid>,
    /// Each task group's cfs_rq and group entity on this CPU, by group id
    /// (index 0, the root group, is unused).
    pub gcfs: Vec<CfsRq>,
    pub gse: Vec<Entity>,
}

/// The run queues, one per CPU, each stamped with the epoch in which it
/// was last borrowed mutably. The balancer reuses a group's statistics at
/// a later balance of the same instant while no CPU of the group has been
/// borrowed mutably since they were read (`Rqs::seal`,
/// `Rqs::unchanged_since`): whatever changes a run queue goes through
/// `IndexMut` or `iter_mut`, so no change can slip past the stamps.
pub struct Rqs {
    v: Vec<Rq>,
    epoch: u64,
}

impl Rqs {
    /// One idle run queue per CPU.
    pub fn new(ncpus: usize) -> Self {
        Rqs {
            v: (0..ncpus).map(Rq::new).collect(),
            epoch: 0,
        }
    }

    /// Every run queue, mutably (each counts as changed).
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Rq> {
        for rq in &mut self.v {
            rq.stamp = self.epoch;
        }
        self.v.iter_mut()
    }

    /// The current epoch (what `seal` will return).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// End the current epoch and return it: any mutable borrow from now
    /// on stamps its run queue with a later one.
    pub fn seal(&mut self) -> u64 {
        self.epoch += 1;
        self.epoch - 1
    }

    /// Whether `cpu`'s run queue was not borrowed mutably after `seal`
    /// returned `epoch`.
    pub fn unchanged_since(&self, cpu: usize, epoch: u64) -> bool {
        self.v[cpu].stamp <= epoch
    }
}

impl std::ops::Deref for Rqs {
    type Target = [Rq];
    fn deref(&self) -> &[Rq] {
        &self.v
    }
}

impl std::ops::Index<usize> for Rqs {
    type Output = Rq;
    #[inline]
    fn index(&self, cpu: usize) -> &Rq {
        &self.v[cpu]
    }
}

impl std::ops::IndexMut<usize> for Rqs {
    #[inline]
    fn index_mut(&mut self, cpu: usize) -> &mut Rq {
        let rq = &mut self.v[cpu];
        rq.stamp = self.epoch;
        rq
    }
}

impl<'a> IntoIterator for &'a Rqs {
    type Item = &'a Rq;
    type IntoIter = std::slice::Iter<'a, Rq>;
    fn into_iter(self) -> Self::IntoIter {
        self.v.iter()
    }
}

impl<'a> IntoIterator for &'a mut Rqs {
    type Item = &'a mut Rq;
    type IntoIter = std::slice::IterMut<'a, Rq>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

impl Rq {
    pub fn new(cpu: usize) -> Self {
        Rq {
            cpu,
            stamp: 0,
            curr: None,
            nr_running: 0,
            cfs: CfsRq::default(),
            gcfs: vec![CfsRq::default()],
            gse: vec![Entity::new(0)],
            need_resched: false,
            clock_skip: None,
            woke_itself: false,
            pre: RqPreempt::default(),
            rt: RtRq::default(),
            dl: Default::default(),
            act: Activity::Idle { since: 0 },
            tick_on: false,
            lock: Default::default(),
            loaded_mm: u32::MAX,
            footprint: Default::default(),
            busy_since: 0,
            wake_list: Vec::new(),
            ttwu_pending: false,
            irq_ns: 0,
            pelt: Default::default(),
            blocked_clean: None,
            stats: RqStats::default(),
        }
    }

    pub fn is_idle(&self) -> bool {
        matches!(self.act, Activity::Idle { .. })
    }
}

impl Kernel {
    /// idle_cpu / available_idle_cpu: nothing running, queued or pending
    /// on the wakelist.
    pub fn idle_cpu(&self, cpu: usize) -> bool {
        let rq = &self.rqs[cpu];
        rq.curr.is_none() && rq.nr_running == 0 && !rq.ttwu_pending
    }

    /// CPU speed in work-ns per 1024 ns: capacity, slowed when an SMT
    /// sibling is busy.
    pub(crate) fn speed(&self, cpu: usize) -> u64 {
        let c = &self.machine.cpus[cpu];
        let cap = c.capacity as u64;
        let own = !self.idle_mask.test(cpu) as u8;
        let sibling_busy = self.busy_in_core[c.core] > own;
        // Alone on its core (the common case) a CPU runs at its capacity:
        // no multiply and divide by 100 per segment.
        if !sibling_busy {
            return cap.max(1);
        }
        (cap * self.machine.cost.smt_speed_pct as u64 / 100).max(1)
    }

    /// Run `p`'s remaining work on `cpu` at the CPU's current speed; a
    /// fold's segment ends where its last read's would (fold.rs).
    fn start_segment(&mut self, cpu: usize, p: Pid) {
        let speed = self.speed(cpu);
        let work = self.tasks[p].prog.work_left;
        let end = if self.folded(cpu) {
            self.folds[cpu].end
        } else {
            self.now + segment_ns(work, speed)
        };
        let rq = &mut self.rqs[cpu];
        rq.act = Activity::Running {
            start: self.now,
            speed,
        };
        self.events.push(end, EventKind::CpuDone, cpu);
    }

    /// Stop the running segment, keeping the work not yet done.
    pub(crate) fn stop_segment(&mut self, cpu: usize) {
        self.fold_touch_cpu(cpu);
        let rq = &mut self.rqs[cpu];
        if let Activity::Running { start, speed } = rq.act {
            let done = (self.now - start) * speed / 1024;
            if let Some(p) = rq.curr {
                let t = &mut self.tasks[p];
                t.prog.work_left -= done.min(t.prog.work_left);
            }
            rq.act = Activity::Kernel;
            self.events.cancel(EventKind::CpuDone, cpu);
        }
    }

    /// An SMT sibling of `cpu` changed between idle and busy: re-time the
    /// segments running on the other siblings at their new speed.
    fn smt_changed(&mut self, cpu: usize) {
        if self.machine.cost.smt_speed_pct >= 100 || self.machine.smt_width() < 2 {
            return;
        }
        for i in 0..self.machine.smt_siblings(cpu).len() {
            let s = self.machine.smt_siblings(cpu)[i];
            if s != cpu {
                if let (Activity::Running { .. }, Some(p)) = (self.rqs[s].act, self.rqs[s].curr) {
                    self.stop_segment(s);
                    self.start_segment(s, p);
                }
            }
        }
    }

    /// do_idle entry: the cpuidle governor decides whether the tick stops
    /// (idle.rs), and the core is marked idle for the LLC's idle-core hint
    /// (__update_idle_core).
    fn enter_idle(&mut self, cpu: usize) {
        self.take_irq_ns(cpu);
        self.pelt_enter_idle(cpu);
        let rq = &mut self.rqs[cpu];
        rq.blocked_clean = None;
        rq.stats.busy_ns += self.now - rq.busy_since;
        rq.act = Activity::Idle { since: self.now };
        rq.stats.sched_goidle += 1;
        self.idle_mask.set(cpu);
        self.busy_in_core[self.machine.cpus[cpu].core] -= 1;
        self.idle_in_llc[self.machine.cpus[cpu].llc] += 1;
        self.cpuidle_enter(cpu);
        self.smt_changed(cpu);
        // __update_idle_core: the last sibling to idle sets the LLC's hint.
        if self.machine.smt_width() > 1 && self.core_idle(cpu) {
            self.has_idle_cores[self.machine.cpus[cpu].llc] = true;
        }
        self.arm_rt_period_timer(cpu);
    }

    /// Leaving the idle loop: restart the tick (tick_nohz_idle_exit), which
    /// costs the CPU `nohz_idle_exit_ns` before it runs anything. A wakeup
    /// this CPU did while idle really ran now, after the idle state's exit
    /// latency (cpuidle_enter_state returns before the handler runs): the
    /// rq clock its enqueue read is now's, and the exit latency stays the
    /// idle task's time, in no task's sum_exec_runtime.
    pub(crate) fn leave_idle(&mut self, cpu: usize) {
        let Activity::Idle { since } = self.rqs[cpu].act else {
            return;
        };
        if std::mem::take(&mut self.rqs[cpu].woke_itself) {
            self.rq_clock(cpu);
        }
        self.pelt_leave_idle(cpu);
        self.cpuidle_exit(cpu);
        if !self.rqs[cpu].tick_on {
            let nohz = self.vary(self.machine.cost.nohz_idle_exit_ns, By::Cpu(cpu));
            self.rqs[cpu].irq_ns += nohz;
        }
        self.dl_server_idle_time(cpu, since);
        let rq = &mut self.rqs[cpu];
        rq.stats.idle_ns += self.now - since;
        rq.busy_since = self.now;
        rq.act = Activity::Kernel;
        self.idle_mask.clear(cpu);
        self.busy_in_core[self.machine.cpus[cpu].core] += 1;
        self.idle_in_llc[self.machine.cpus[cpu].llc] -= 1;
        self.start_tick(cpu);
        self.smt_changed(cpu);
    }

    /// The interrupt work pending on `cpu`, taken to be charged, and
    /// accounted to rq->avg_irq (update_irq_load_avg).
    fn take_irq_ns(&mut self, cpu: usize) -> u64 {
        let irq = std::mem::take(&mut self.rqs[cpu].irq_ns);
        self.update_irq_load_avg(cpu, irq);
        irq
    }

    /// Interrupt time `ns` taken while `p` runs, which it owes before it
    /// goes on. A replayed burst (`Op::RunBurst`) is a traced task's time on
    /// its CPU, interrupts included: what lands in its user part comes out
    /// of it, so that the burst still ends when traced and the replay does
    /// not charge the traced machine's interrupts a second time; what
    /// lands in the model's own kernel work between bursts (a wakeup's
    /// IPI, a switch) comes out of the task's next bursts (`debt_ns`).
    pub fn irq_on_task(&mut self, p: Pid, ns: u64) {
        if ns == 0 {
            return;
        }
        let prog = &mut self.tasks[p].prog;
        prog.overhead += ns;
        let mut owed = ns;
        if prog.in_burst() {
            let user_left = prog.work_left.saturating_sub(prog.mode.kern_tail);
            let now = ns.min(user_left.saturating_sub(1));
            prog.work_left -= now;
            owed -= now;
        }
        prog.debt_ns += owed;
    }

    /// Arm the tick at the next jiffy boundary (ticks are not skewed; their
    /// phase is the noise model's).
    fn start_tick(&mut self, cpu: usize) {
        let rq = &mut self.rqs[cpu];
        if rq.tick_on {
            return;
        }
        rq.tick_on = true;
        let next = self.next_tick_after(self.now);
        self.events.push(next, EventKind::Tick, cpu);
    }

    /// __resched_curr (resched_curr when `lazy` is false): set need-resched
    /// on `cpu`, the lazy bit if `lazy` (the idle task always gets the full
    /// one). The running CPU notices it
    /// at its next preemption point; for the full bit a remote CPU gets a
    /// reschedule IPI unless it is polling in idle (`kick_cpu`), and an idle
    /// CPU pays its idle-state exit latency. A lazy request never sends an IPI.
    pub fn set_need_resched(&mut self, cpu: usize, from: Option<usize>, lazy: bool, cause: Cause) {
        self.fold_touch_cpu(cpu);
        let rq = &mut self.rqs[cpu];
        let lazy = lazy && rq.curr.is_some();
        if rq.need_resched || (lazy && rq.pre.lazy) {
            return;
        }
        if self.decisions {
            self.trace_resched(cpu, lazy, cause);
        }
        let rq = &mut self.rqs[cpu];
        if !rq.pre.lazy {
            rq.pre.since = self.now;
        }
        if !rq.pre.lazy || cause == Cause::LazyUpgrade {
            rq.pre.cause = cause;
        }
        if lazy {
            rq.pre.lazy = true;
            self.stats.preempt.lazy_set += 1;
            return;
        }
        rq.need_resched = true;
        if from == Some(cpu) {
            // The local CPU honours it at its next preemption point (the
            // dispatch loop it is in, or the caller's: tick, timer irq); an
            // idle one once it is out of its idle state.
            let Activity::Idle { since } = self.rqs[cpu].act else {
                return;
            };
            let exit = self.idle_state_at(self.now - since).exit_latency_ns;
            self.rqs[cpu].woke_itself = true;
            return self.resched_at(cpu, self.resched_after, exit);
        }
        self.kick_cpu(cpu, from, self.resched_after);
    }

    /// Tell another CPU to look at its flags (resched_curr's
    /// set_nr_and_not_polling, and send_call_function_single_ipi's
    /// set_nr_if_polling for the wakelist): an idle CPU whose current state
    /// holds TIF_POLLING_NRFLAG (POLL, or an x86 MWAIT state) only needs
    /// NEED_RESCHED set and leaves its idle state, paying that state's exit
    /// latency; anyone else gets an IPI, sent `after` ns from now (once the
    /// sender's work before it is done).
    pub(super) fn kick_cpu(&mut self, cpu: usize, from: Option<usize>, after: u64) {
        let delay = match self.rqs[cpu].act {
            Activity::Idle { since } => {
                let st = self.idle_state_at(self.now - since);
                let (polling, exit) = (st.tif_polling(), st.exit_latency_ns);
                if polling {
                    self.rqs[cpu].need_resched = true;
                    self.stats.ipis_avoided_polling += 1;
                    exit
                } else {
                    self.count_ipi(cpu, from) + exit
                }
            }
            _ => self.count_ipi(cpu, from),
        };
        self.resched_at(cpu, after, delay);
    }

    /// The reschedule request reaches `cpu` `after` + `delay` ns from now
    /// (the delay with its run-to-run variation).
    fn resched_at(&mut self, cpu: usize, after: u64, delay: u64) {
        let at = self.now + after + self.vary(delay, By::Cpu(cpu));
        self.events.push_earliest(at, EventKind::Resched, cpu);
    }

    /// An IPI from `from` to `cpu`: the sender's current task pays for
    /// issuing it (an interrupt handler waking through `wake_timed` pays
    /// in its own time, not the task it interrupted: `charge_waker`), the
    /// receiver for the interrupt entry and exit. Returns
    /// how long after the send starts the target takes it: the send
    /// itself, then `ipi_latency_ns` in flight.
    pub fn count_ipi(&mut self, cpu: usize, from: Option<usize>) -> u64 {
        self.fold_touch_cpu(cpu);
        self.stats.ipis_sent += 1;
        let (entry, send) = (
            self.machine.cost.irq_entry_exit_ns,
            self.machine.cost.ipi_send_ns,
        );
        let entry = self.vary(entry, By::Cpu(cpu));
        let rq = &mut self.rqs[cpu];
        rq.stats.ipis_received += 1;
        rq.irq_ns += entry;
        let send = self.vary(send, By::Cpu(from.unwrap_or(cpu)));
        let sender = from
            .and_then(|f| self.rqs[f].curr)
            .filter(|_| self.irq_waker_ns.is_none());
        self.charge_waker(sender, send);
        send + self.machine.cost.ipi_latency_ns
    }

    /// The reschedule request (IPI, or idle exit) takes effect on `cpu`.
    /// The interrupt handler runs the wakelist (sched_ttwu_pending) first;
    /// a CPU in the middle of a context switch has interrupts off and takes
    /// it when the switch ends.
    pub fn on_resched(&mut self, cpu: usize) {
        self.rt_period_expired(cpu);
        let rq = &self.rqs[cpu];
        if !rq.need_resched && !rq.pre.lazy && !rq.ttwu_pending {
            return;
        }
        match rq.act {
            Activity::Idle { .. } => {
                self.leave_idle(cpu);
                if self.rqs[cpu].ttwu_pending {
                    self.sched_ttwu_pending(cpu);
                }
                // Coming from idle there is no task to continue: the
                // switch (or the return to idle) is all that happens now.
                self.schedule(cpu, SchedMode::Voluntary);
            }
            Activity::Running { .. } => {
                self.stop_segment(cpu);
                if self.rqs[cpu].ttwu_pending {
                    self.sched_ttwu_pending(cpu);
                }
                self.dispatch(cpu);
            }
            Activity::Switching { .. } | Activity::Kernel => {}
        }
    }

    /// The CPU's current activity ended: a segment completed or a context
    /// switch finished.
    pub fn on_cpu_done(&mut self, cpu: usize) {
        if self.switch_stamp(cpu) {
            return;
        }
        let rq = &self.rqs[cpu];
        if let (Activity::Running { .. }, Some(p)) = (rq.act, rq.curr) {
            self.tasks[p].prog.work_left = 0;
            if self.owed_work_follows(cpu, p) {
                return;
            }
        }
        let rq = &mut self.rqs[cpu];
        let (switched, dead) = match rq.act {
            Activity::Switching {
                prev, prev_state, ..
            } => (true, prev.filter(|_| prev_state == TaskState::Dead)),
            _ => (false, None),
        };
        rq.act = Activity::Kernel;
        rq.pre.switched_in = switched;
        if switched {
            self.finish_task_switch(cpu, dead);
            if self.rqs[cpu].ttwu_pending {
                self.sched_ttwu_pending(cpu);
            }
        }
        self.dispatch(cpu);
    }

    /// `p`'s segment on `cpu` ended and it owes interrupt work (its
    /// overhead, the CPU's pending interrupt time): where nothing can act
    /// at this boundary, run the owed work as its next segment at once.
    /// What `dispatch` → `step` → `start_segment` do there, without their
    /// tests: no preemption point acts (no bit pending, no throttle without
    /// CFS bandwidth), interrupt time is not accounted by PELT, and no fold
    /// runs. 23 % of periodic-64's events are this boundary (issue 33, part 2:
    /// folding it into the segment before it costs more heap work than the
    /// event it saves, BENCHMARKS.md).
    fn owed_work_follows(&mut self, cpu: usize, p: Pid) -> bool {
        let owed = self.tasks[p].prog.overhead + self.rqs[cpu].irq_ns;
        if owed == 0
            || self.bandwidth_on
            || self.cfg.irq_time_accounting
            || self.resched_pending(cpu)
            || self.folded(cpu)
        {
            return false;
        }
        let rq = &mut self.rqs[cpu];
        rq.pre.switched_in = false;
        let irq = std::mem::take(&mut rq.irq_ns);
        self.irq_on_task(p, irq);
        self.tasks[p].prog.run_overhead();
        self.start_segment(cpu, p);
        true
    }

    /// Run rq.curr's program until it starts a segment, or schedule when it
    /// blocks, exits, yields or must be preempted.
    pub fn dispatch(&mut self, cpu: usize) {
        loop {
            let Some(p) = self.rqs[cpu].curr else {
                return;
            };
            if self.preempt_point(cpu, p) {
                if !self.schedule(cpu, SchedMode::Preempt) {
                    return;
                }
                continue;
            }
            let irq = self.take_irq_ns(cpu);
            self.irq_on_task(p, irq);
            match self.step(p, cpu) {
                Action::Run => {
                    self.start_segment(cpu, p);
                    return;
                }
                Action::Block => {
                    if !self.schedule(cpu, SchedMode::Voluntary) {
                        return;
                    }
                }
                Action::Preempt => {
                    if !self.schedule(cpu, SchedMode::Preempt) {
                        return;
                    }
                }
                Action::Yield if self.is_dl(p) => {
                    self.yield_task_dl(cpu, p);
                    if !self.schedule(cpu, SchedMode::Preempt) {
                        return;
                    }
                }
                Action::Yield => {
                    self.yield_task_fair(cpu, p);
                    self.rqs[cpu].cfs.resched_req = false;
                    if !self.schedule(cpu, SchedMode::Preempt) {
                        return;
                    }
                }
            }
        }
    }

    /// __schedule. Returns true when the same task keeps running without a
    /// context switch (the caller continues it), false when the CPU is now
    /// switching or idle. A clock-skip request (rq_clock_skip_update) is
    /// acted on here and cleared, as RQCF_REQ_SKIP → RQCF_ACT_SKIP.
    pub fn schedule(&mut self, cpu: usize, mode: SchedMode) -> bool {
        self.clock_skipped = self.rqs[cpu].clock_skip.take().map(|t| (cpu, t));
        let same = self.schedule_locked(cpu, mode);
        self.clock_skipped = None;
        same
    }

    /// The body of __schedule, with the rq clock settled.
    fn schedule_locked(&mut self, cpu: usize, mode: SchedMode) -> bool {
        let now = self.now;
        let prev = self.rqs[cpu].curr;
        self.touch_cpu(cpu);
        if let Some(p) = prev {
            self.touch_task(p);
        }
        self.rqs[cpu].stats.sched_count += 1;
        let mut voluntary = false;
        if let Some(p) = prev {
            if mode == SchedMode::Voluntary && self.tasks[p].state != TaskState::Running {
                voluntary = true;
                self.block_task(cpu, p);
            }
        }
        self.active_balance_stop(cpu, prev);
        self.migration_cpu_stop(cpu, prev);
        let next = self.pick_next_task(cpu, prev);
        self.dl_server_track(cpu, next);
        self.rqs[cpu].cfs.resched_req = false;
        self.account_resched(cpu, prev, next != prev, mode);
        if next == prev {
            // An idle CPU woken for a task someone else took goes back to idle.
            if next.is_none() && !self.rqs[cpu].is_idle() {
                self.enter_idle(cpu);
            }
            return next.is_some();
        }
        // put_prev_task_rt/_dl and set_next_task_rt/_dl age rq->avg_rt
        // and avg_dl.
        let prev_rt = prev.is_some_and(|p| self.is_rt(p));
        let prev_dl = prev.is_some_and(|p| self.is_dl(p));
        let next_rt_dl = next.is_some_and(|p| self.is_rt(p) || self.is_dl(p));
        if prev_rt || prev_dl || next_rt_dl {
            self.update_rq_class_avgs(cpu, prev_rt, prev_dl);
        }
        let preempt = mode == SchedMode::Preempt;
        let prev_state = prev.map_or(TaskState::Running, |p| self.tasks[p].state);
        let rq = &mut self.rqs[cpu];
        rq.curr = next;
        rq.stats.nr_switches += 1;
        self.stats.rq_switches += 1;
        // __schedule traces sched_switch before context_switch: the
        // switch's cost is in next's time on the trace, as a replay of a
        // kernel's trace takes it (workload/replay.rs, switch_costs).
        if next.is_none() {
            self.trace_switch(cpu, prev, prev_state, next, preempt);
            self.account_switch_stamp(prev, prev_state, next, now);
            self.finish_task_switch(cpu, prev.filter(|_| prev_state == TaskState::Dead));
        }
        if let Some(p) = prev {
            let t = &mut self.tasks[p];
            t.stats.nr_switches += 1;
            if voluntary {
                t.stats.nvcsw += 1;
            } else {
                t.stats.nivcsw += 1;
            }
            if t.se.on_rq && !t.se.sched_delayed {
                t.stats.wait_start = now;
            }
        }
        let Some(n) = next else {
            self.enter_idle(cpu);
            return false;
        };
        self.account_wait_end(n);
        self.cfs_tasks_to_head(n);
        let switch = self.switch_cost(cpu, n);
        let irq = self.take_irq_ns(cpu);
        let cost = switch + irq;
        // A CPU runs the interrupts pending on it (an idle exit's) before
        // it calls __schedule: a tracer sees the switch after them.
        self.account_switch_stamp(prev, prev_state, next, now + irq);
        let stamp = (irq > 0 && self.tracer.is_some()).then_some(preempt);
        if stamp.is_none() {
            self.trace_switch(cpu, prev, prev_state, next, preempt);
        }
        self.rqs[cpu].act = Activity::Switching {
            prev,
            end: now + cost,
            prev_state,
            stamp,
        };
        let at = now + if stamp.is_some() { irq } else { cost };
        self.events.push(at, EventKind::CpuDone, cpu);
        false
    }

    /// The interrupts pending at a switch's start are done (traced runs
    /// only): sched_switch fires, and the switch goes on to its end.
    fn switch_stamp(&mut self, cpu: usize) -> bool {
        let rq = &mut self.rqs[cpu];
        let Activity::Switching {
            prev,
            end,
            prev_state,
            ref mut stamp,
        } = rq.act
        else {
            return false;
        };
        let Some(preempt) = stamp.take() else {
            return false;
        };
        let next = rq.curr;
        self.trace_switch(cpu, prev, prev_state, next, preempt);
        self.events.push(end, EventKind::CpuDone, cpu);
        // An event only a traced run has: not counted, so that its
        // results (sim.events with them) are an untraced run's.
        self.events.popped -= 1;
        true
    }

    /// The time on a CPU and the time ready that a trace shows change hands
    /// at sched_switch's stamp `at` (the switch's start, after the
    /// interrupts pending then), as the kernel's own accounting does at the
    /// pick, before context_switch().
    fn account_switch_stamp(
        &mut self,
        prev: Option<Pid>,
        prev_state: TaskState,
        next: Option<Pid>,
        at: Time,
    ) {
        if let Some(p) = prev {
            let t = &mut self.tasks[p].stats;
            if let Some(since) = t.oncpu_since.take() {
                t.oncpu_ns += at.saturating_sub(since);
            }
            if prev_state == TaskState::Running {
                t.ready_since = Some(at);
            }
        }
        if let Some(n) = next {
            let t = &mut self.tasks[n].stats;
            t.oncpu_since = Some(at);
            if let Some(s) = t.ready_since.take() {
                t.ready_ns += at.saturating_sub(s);
            }
        }
    }

    /// The switch to rq.curr (a task, or idle at once) is done and it starts
    /// running (the end of context_switch): a `dead` prev (TASK_DEAD) is
    /// put away, and a task woken since its last run has its wakeup →
    /// running latency taken.
    fn finish_task_switch(&mut self, cpu: usize, dead: Option<Pid>) {
        if let Some(p) = dead {
            self.task_dead(p, cpu);
        }
        let next = self.rqs[cpu].curr;
        if let Some(n) = next {
            let t = &mut self.tasks[n];
            if let Some(at) = t.stats.waking_at.take() {
                let lat = self.now - at;
                t.stats.wakeup_latency.add(lat);
                self.stats.wakeup_latency.add(lat);
            }
        }
    }

    /// The task a CPU's events are attributed to: curr, also while the
    /// switch to it is in progress (sched_switch has fired).
    pub fn trace_ctx(&self, cpu: usize) -> Option<Pid> {
        self.rqs[cpu].curr
    }

    /// update_stats_wait_end: the task stops waiting on the run queue.
    fn account_wait_end(&mut self, p: Pid) {
        let t = &mut self.tasks[p];
        if t.stats.wait_start != 0 {
            let w = self.now - t.stats.wait_start;
            t.stats.wait_sum += w;
            t.stats.wait_max = t.stats.wait_max.max(w);
            t.stats.wait_count += 1;
            t.stats.wait_start = 0;
        }
    }

    /// context_switch cost: register/stack switch, switch_mm when the
    /// address space changes (with a TLB flush when it holds none of the
    /// CPU's dynamic ASIDs), and refilling caches: after a migration from
    /// the other CPU's, else as far as other tasks evicted them here.
    fn switch_cost(&mut self, cpu: usize, next: Pid) -> u64 {
        let m = &self.machine;
        let rq = &mut self.rqs[cpu];
        let t = &mut self.tasks[next];
        let refill = |from| m.cache_refill_ns(from, cpu);
        let cache = rq.footprint.switch_in_ns(
            &m.cost,
            &mut rq.loaded_mm,
            (next, t.mm),
            t.last_ran_cpu,
            cpu,
            refill,
        );
        t.last_ran_cpu = Some(cpu);
        let cost = m.cost.context_switch_ns + cache;
        self.vary(cost, By::Cpu(cpu))
    }

    /// put_prev_task_fair for a fair prev that an RT task replaces.
    pub fn put_prev_fair(&mut self, cpu: usize, p: Pid) {
        self.put_prev_task_fair(cpu, p);
    }

    /// try_to_block_task: dequeue a task that is going to sleep (possibly
    /// delayed by DELAY_DEQUEUE). A special task state (of the model's,
    /// TASK_DEAD: is_special_task_state) adds DEQUEUE_SPECIAL, and
    /// dequeue_entity never delays such a dequeue: a dying task leaves its
    /// queue at its final switch, whatever its lag.
    fn block_task(&mut self, cpu: usize, p: Pid) {
        self.touch_cpu(cpu);
        self.touch_task(p);
        if self.is_dl(p) {
            if self.dequeue_dl(cpu, p) {
                self.rqs[cpu].nr_running -= 1;
            }
            self.tasks[p].on_rq = false;
            return;
        }
        if self.is_rt(p) {
            self.dequeue_rt(cpu, p);
            self.rqs[cpu].nr_running -= 1;
            self.tasks[p].on_rq = false;
            return;
        }
        let special = match self.tasks[p].state {
            TaskState::Dead => DEQUEUE_SPECIAL,
            _ => 0,
        };
        if let Dequeued::Done { counted } = self.dequeue_task_fair(cpu, p, DEQUEUE_SLEEP | special)
        {
            if counted {
                self.rqs[cpu].nr_running -= 1;
            }
            self.tasks[p].on_rq = false;
        }
    }

    /// pick_next_task in class order (deadline, RT, fair; a CPU whose DL
    /// or RT prev left its class's queue pulls first) → pick_next_task_fair:
    /// update curr, pick the EEVDF winner (finishing the dequeue of delayed tasks it meets), swap prev
    /// and next; with nothing queued, try a newidle pull, else go idle.
    fn pick_next_task(&mut self, cpu: usize, prev: Option<Pid>) -> Option<Pid> {
        self.update_curr_rt(cpu);
        self.update_curr_dl(cpu);
        self.dl_server_charge(cpu);
        if prev.is_some_and(|p| self.is_dl(p) && !self.rqs[cpu].dl.queue.contains(&p)) {
            self.pull_dl_task(cpu);
        }
        if prev.is_some_and(|p| self.is_rt(p)) && self.rqs[cpu].rt.queue.is_empty() {
            self.pull_rt_task(cpu);
        }
        loop {
            if let Some(n) = self.pick_next_dl(cpu, prev) {
                return Some(n);
            }
            if let Some(n) = self.pick_next_rt(cpu, prev) {
                return Some(n);
            }
            let next = match self.rqs[cpu].cfs.nr_queued {
                0 => None,
                _ => self.pick_task_fair(cpu),
            };
            let Some(next) = next else {
                if let Some(p) = prev.filter(|_| self.rqs[cpu].cfs.curr.is_some()) {
                    self.put_prev_task_fair(cpu, p);
                }
                if self.newidle_balance(cpu) {
                    continue;
                }
                return None;
            };
            self.put_prev_set_next_fair(cpu, prev, next);
            return Some(next);
        }
    }

    /// activate_task on `cpu` and check whether the new arrival preempts.
    fn activate_task(&mut self, cpu: usize, p: Pid, flags: u32) {
        self.touch_cpu(cpu);
        self.touch_task(p);
        let counted = if self.is_dl(p) {
            let counted = self.enqueue_dl(cpu, p, flags);
            self.server_timer_sync(cpu);
            counted
        } else if self.is_rt(p) {
            self.enqueue_rt(cpu, p, false);
            self.server_timer_sync(cpu);
            true
        } else {
            self.cfs_tasks_to_head(p);
            self.enqueue_task_fair(cpu, p, flags)
        };
        if counted {
            let rq = &mut self.rqs[cpu];
            rq.nr_running += 1;
            // add_nr_running: a second task marks the root domain overloaded.
            self.lb.rd_overloaded |= rq.nr_running == 2;
        }
        let t = &mut self.tasks[p];
        t.on_rq = true;
        t.cpu = cpu;
        t.stats.wait_start = self.now;
    }

    /// wakeup_preempt: the class decides; then, if curr is still queued and
    /// must reschedule, rq_clock_skip_update.
    pub(super) fn wakeup_preempt(&mut self, cpu: usize, p: Pid, from: Option<usize>) {
        self.wakeup_preempt_class(cpu, p, from);
        // The idle task counts as queued (init_idle sets its on_rq).
        let rq = &self.rqs[cpu];
        if rq.need_resched && rq.curr.is_none_or(|c| self.tasks[c].on_rq) {
            self.rqs[cpu].clock_skip = Some(self.now);
        }
    }

    /// rq_clock_task as the fair class reads it: inside a __schedule that
    /// honours a skip request, the clock as of the last update before it
    /// (so prev is charged up to the wakee's enqueue and the wakee from
    /// there); else now. A pending request follows later clock updates.
    pub(super) fn rq_clock(&mut self, cpu: usize) -> Time {
        if !matches!(self.clock_skipped, Some((c, _)) if c == cpu) {
            if let Some(t) = &mut self.rqs[cpu].clock_skip {
                *t = self.now;
            }
        }
        self.rq_clock_read(cpu)
    }

    /// `rq_clock` without counting as an update.
    pub(super) fn rq_clock_read(&self, cpu: usize) -> Time {
        match self.clock_skipped {
            Some((c, t)) if c == cpu => t,
            _ => self.now,
        }
    }

    /// The class part of wakeup_preempt: the idle task always yields; a
    /// running fair task is checked by check_preempt_wakeup_fair.
    fn wakeup_preempt_class(&mut self, cpu: usize, p: Pid, from: Option<usize>) {
        if self.is_dl(p) {
            return self.wakeup_preempt_dl(cpu, p, from);
        }
        if self.is_rt(p) {
            return self.wakeup_preempt_rt(cpu, p, from);
        }
        if !self.fair_wakeup_may_preempt(cpu) {
            return;
        }
        let preempt = match self.rqs[cpu].curr {
            None => true,
            Some(_) if self.rqs[cpu].need_resched => return,
            Some(c) => self.check_preempt_wakeup_fair(cpu, c, p),
        };
        let requested = std::mem::take(&mut self.rqs[cpu].cfs.resched_req);
        let cause = if preempt { Cause::Wakeup } else { Cause::Tick };
        if preempt || requested {
            let rule = (preempt && self.decisions).then(|| self.wakeup_rule_of(cpu, p));
            self.resched_for_wakee((cpu, from), p, (Req::Fair, cause), rule);
        }
    }

    /// Which rule of check_preempt_wakeup_fair made `p` preempt `cpu`'s
    /// curr, for the decision record (no kernel twin). The PREEMPT_SHORT
    /// test compares the tasks' slices; with task groups the kernel
    /// compares the entities where the hierarchies meet, whose slices are
    /// the smallest below them, so a group wakeup may be named `deadline`
    /// where the group's smaller slice made it `short`.
    #[cold]
    #[inline(never)]
    fn wakeup_rule_of(&self, cpu: usize, p: Pid) -> WakeupRule {
        let Some(c) = self.rqs[cpu].curr else {
            return WakeupRule::Idle;
        };
        let (curr, wakee) = (&self.tasks[c], &self.tasks[p]);
        if self.legacy_cfs.is_some() {
            WakeupRule::Legacy
        } else if curr.policy == Policy::Idle && wakee.policy != Policy::Idle {
            WakeupRule::SchedIdle
        } else if self.cfg.features.enabled(Feature::PreemptShort) && wakee.se.slice < curr.se.slice
        {
            WakeupRule::Short
        } else {
            WakeupRule::Deadline
        }
    }

    /// try_to_wake_up. `from` is the waking CPU and `waker` the task doing
    /// it (None for a timer interrupt). Returns whether `p` was woken.
    pub fn try_to_wake_up(
        &mut self,
        p: Pid,
        wake_flags: u32,
        from: usize,
        waker: Option<Pid>,
    ) -> bool {
        if self.tasks[p].state != TaskState::Interruptible {
            return false;
        }
        self.touch_task(p);
        self.touch_cpu(self.tasks[p].cpu);
        let mut wake_flags = wake_flags | WF_TTWU;
        self.stats.wakeups += 1;
        self.trace_waking(p, from, waker);
        let t = &mut self.tasks[p];
        t.state = TaskState::Running;
        t.prog.wake();
        t.stats.nr_wakeups += 1;
        t.stats.waking_at = Some(self.now);
        t.stats.ready_since.get_or_insert(self.now);
        if wake_flags & WF_SYNC != 0 {
            t.stats.nr_wakeups_sync += 1;
        }
        if t.on_rq {
            // ttwu_runnable: a delayed task is requeued where it sits.
            let cpu = t.cpu;
            self.count_ttwu(p, cpu, from);
            self.charge_rq_lock(cpu, from, waker);
            self.requeue_delayed_task(cpu, p);
            self.tasks[p].stats.wait_start = self.now;
            if self.decisions {
                self.trace_place(p, cpu, from, Placed::at(cpu, PlaceWhy::Queued), false);
            }
            self.trace_wakeup(p, cpu, from);
            if self.rqs[cpu].curr != Some(p) {
                self.wakeup_preempt(cpu, p, Some(from));
            } else {
                // Woken before it switched out: it never stopped running.
                self.tasks[p].stats.waking_at = None;
                self.tasks[p].stats.ready_since = None;
            }
            return true;
        }
        let prev = self.tasks[p].cpu;
        if let Some(end) = self.on_cpu_until(p, prev) {
            // Still switching out: hand it to its CPU's wakelist if the
            // variant allows, else spin until the switch is done.
            self.stats.ttwu_on_cpu += 1;
            if self.ttwu_queue_cond(prev, from, true) {
                self.count_ttwu(p, prev, from);
                if self.decisions {
                    self.trace_place(p, prev, from, Placed::at(prev, PlaceWhy::OnCpu), true);
                }
                self.ttwu_queue_wakelist(p, prev, wake_flags, from, waker);
                return true;
            }
            self.charge_waker(waker, end.saturating_sub(self.now));
        }
        let placed = self.select_task_rq(p, prev, wake_flags, from, waker);
        let cpu = placed.cpu;
        if cpu != prev {
            wake_flags |= WF_MIGRATED;
            self.set_task_cpu(p, cpu);
        }
        self.count_ttwu(p, cpu, from);
        if self.decisions {
            let wakelist = self.ttwu_queue_cond(cpu, from, false);
            self.trace_place(p, prev, from, placed, wakelist);
        }
        self.ttwu_queue(p, cpu, wake_flags, from, waker);
        true
    }

    /// p->on_cpu: `p` is still being switched out of `cpu`; until when.
    fn on_cpu_until(&self, p: Pid, cpu: usize) -> Option<Time> {
        match self.rqs[cpu].act {
            Activity::Switching {
                prev: Some(q), end, ..
            } if q == p => Some(end),
            _ => None,
        }
    }

    /// ttwu_stat: local and remote wakeup counters.
    fn count_ttwu(&mut self, p: Pid, cpu: usize, from: usize) {
        let rq = &mut self.rqs[cpu];
        rq.stats.ttwu_count += 1;
        if cpu == from {
            rq.stats.ttwu_local += 1;
            self.stats.ttwu_local += 1;
            self.tasks[p].stats.nr_wakeups_local += 1;
        } else {
            self.stats.ttwu_remote += 1;
            self.tasks[p].stats.nr_wakeups_remote += 1;
            self.ttwu_wake_remote(from, cpu);
        }
    }

    /// set_task_cpu for a task that is not queued (wakeup migration):
    /// migrate_task_rq_fair removes its load from the old CPU.
    fn set_task_cpu(&mut self, p: Pid, cpu: usize) {
        let old = self.tasks[p].cpu;
        self.touch_cpu(old);
        self.touch_cpu(cpu);
        self.touch_task(p);
        self.trace_migrate(p, old, cpu);
        self.remove_entity_load_avg(p, old);
        self.migrate_task_rq_fair_316(p, old);
        let t = &mut self.tasks[p];
        t.cpu = cpu;
        t.stats.nr_migrations += 1;
        self.stats.cpu_migrations += 1;
    }

    /// remove_entity_load_avg from the task's cfs_rq on `cpu`.
    fn remove_entity_load_avg(&mut self, p: Pid, cpu: usize) {
        let t = &self.tasks[p];
        let (w, tg, mut avg) = (t.se.load.unscaled(), t.tg, t.se.avg);
        self.cfs_rq_mut(cpu, tg).remove_entity_load_avg(&mut avg, w);
        self.tasks[p].se.avg = avg;
    }

    /// Move a queued, not running task between run queues (detach_task +
    /// attach_task of the load balancer).
    pub fn move_queued_task(&mut self, p: Pid, src: usize, dst: usize) {
        self.touch_cpu(src);
        self.touch_cpu(dst);
        self.touch_task(p);
        let counted = if self.is_dl(p) {
            self.dequeue_dl(src, p)
        } else if self.is_rt(p) {
            self.rqs[src].rt.queue.retain(|&q| q != p);
            true
        } else {
            self.dequeue_task_fair(src, p, DEQUEUE_MIGRATING) == (Dequeued::Done { counted: true })
        };
        if counted {
            self.rqs[src].nr_running -= 1;
        }
        self.migrate_task_rq_fair_316(p, src);
        self.rqs[src].cfs.resched_req = false;
        self.trace_migrate(p, src, dst);
        let t = &mut self.tasks[p];
        t.se.avg.last_update_time = 0;
        t.se.avg.attached = false;
        t.cpu = dst;
        t.stats.nr_migrations += 1;
        self.stats.cpu_migrations += 1;
        let wait_start = t.stats.wait_start;
        self.activate_task(dst, p, ENQUEUE_MIGRATED);
        self.tasks[p].stats.wait_start = wait_start;
        self.rqs[dst].cfs.resched_req = false;
    }

    /// raw_spin_rq_lock from another CPU, held for `hold` ns: returns how
    /// long the taker waits behind the holders before it (each hand-off
    /// costs a cache-line transfer more).
    pub fn take_rq_lock(&mut self, cpu: usize, hold: u64) -> u64 {
        let handoff = self.machine.cost.rq_lock_contention_ns;
        let wait = self.rqs[cpu].lock.acquire(self.now, hold, handoff);
        self.stats.rq_lock_wait_ns += wait;
        wait
    }

    /// The waker takes `cpu`'s rq lock and enqueues: cheap on its own CPU;
    /// remotely the rq's lines come over and it waits behind other wakers
    /// holding that lock. Returns the time the enqueue took.
    fn charge_rq_lock(&mut self, cpu: usize, from: usize, waker: Option<Pid>) -> u64 {
        let c = &self.machine.cost;
        let cost = if cpu == from {
            c.ttwu_waker_ns(TtwuPath::Local)
        } else {
            let hold = c.remote_rq_lock_ns + c.activate_ns;
            c.ttwu_waker_ns(TtwuPath::RemoteRq) + self.take_rq_lock(cpu, hold)
        };
        let cost = self.vary(cost, waker.map_or(By::Cpu(from), By::Task));
        self.charge_waker(waker, cost);
        cost
    }

    /// The waker spends `ns` in try_to_wake_up: a task as its kernel
    /// overhead; an interrupt handler (no waker) as its own time when
    /// `wake_timed` counts it. The kernel's try_to_wake_up does the same
    /// work in both contexts (it has no in_interrupt() branch).
    pub(super) fn charge_waker(&mut self, waker: Option<Pid>, ns: u64) {
        match waker {
            Some(w) => self.tasks[w].prog.overhead += ns,
            None => {
                if let Some(t) = &mut self.irq_waker_ns {
                    *t += ns;
                }
            }
        }
    }

    /// ttwu_queue: through the target's wakelist when ttwu_queue_cond says
    /// so, else take the target's rq lock (waiting behind other remote
    /// wakers), enqueue and check preemption, all paid by the waker.
    fn ttwu_queue(&mut self, p: Pid, cpu: usize, wake_flags: u32, from: usize, waker: Option<Pid>) {
        if self.ttwu_queue_cond(cpu, from, false) {
            self.ttwu_queue_wakelist(p, cpu, wake_flags, from, waker);
            return;
        }
        let took = self.charge_rq_lock(cpu, from, waker);
        let mut flags = ENQUEUE_WAKEUP;
        if wake_flags & WF_MIGRATED != 0 {
            flags |= ENQUEUE_MIGRATED;
        }
        let after = self.waker_elapsed(waker, took);
        self.ttwu_do_activate(cpu, p, flags, from, after);
    }

    /// How far into its current kernel work the waker is once this wakeup's
    /// `own` ns are done: a wakeup loop (wake_up_all, complete_all) issues
    /// its k-th wakeup after the k−1 before it, so its IPI leaves that late.
    pub(super) fn waker_elapsed(&self, waker: Option<Pid>, own: u64) -> u64 {
        waker.map_or(own, |w| self.tasks[w].prog.overhead.max(own))
    }

    /// ttwu_do_activate: enqueue and check preemption; a reschedule IPI
    /// leaves the waker `after` ns from now, once its enqueue is done.
    pub fn ttwu_do_activate(&mut self, cpu: usize, p: Pid, flags: u32, from: usize, after: u64) {
        self.activate_task(cpu, p, flags);
        self.trace_wakeup(p, cpu, from);
        self.resched_after = after;
        self.update_avg_idle(cpu);
        self.wakeup_preempt(cpu, p, Some(from));
        self.resched_after = 0;
    }

    /// wake_up_new_task: initialise the child's load, place it with
    /// WF_FORK, enqueue it with ENQUEUE_INITIAL and check preemption.
    pub fn wake_up_new_task(&mut self, p: Pid, parent_cpu: usize) {
        self.touch_task(p);
        let w = self.tasks[p].se.load.unscaled();
        pelt::init_entity_runnable_average(&mut self.tasks[p].se.avg, w);
        self.init_task_runnable_average_316(p);
        self.tasks[p].state = TaskState::Running;
        self.tasks[p].recent_used_cpu = parent_cpu;
        let cpu = self.select_task_rq_fork(p, parent_cpu);
        self.tasks[p].cpu = cpu;
        let cap = self.machine.cpus[cpu].capacity as u64;
        let now = self.clock_pelt(cpu);
        let cfs = self.cfs_rq_mut(cpu, self.tasks[p].tg);
        cfs.update_cfs_rq_load_avg(now);
        let (util, load) = (cfs.avg.util_avg, cfs.avg.load_avg);
        pelt::post_init_entity_util_avg(&mut self.tasks[p].se.avg, cap, util, load, w);
        self.tasks[p].se.avg.last_update_time = 0;
        self.tasks[p].se.avg.attached = false;
        self.activate_task(cpu, p, ENQUEUE_INITIAL);
        self.trace_wakeup_new(p, cpu, parent_cpu);
        self.stats.forks += 1;
        self.wakeup_preempt(cpu, p, Some(parent_cpu));
    }

    /// sched_tick: charge curr, age its load, request a resched when its
    /// slice is used up, and kick an idle sibling CPU to pull waiting tasks.
    pub fn on_tick(&mut self, cpu: usize) {
        if self.rqs[cpu].is_idle() {
            return self.idle_tick(cpu);
        }
        self.tick_upgrade_lazy(cpu);
        if self.rqs[cpu].curr.is_some_and(|p| self.is_rt(p)) {
            self.update_rq_class_avgs(cpu, true, false);
        } else if self.rqs[cpu].curr.is_some_and(|p| self.is_dl(p)) {
            self.update_rq_class_avgs(cpu, false, true);
        }
        self.task_tick_dl(cpu);
        self.task_tick_rt(cpu);
        if let Some(p) = self.rqs[cpu]
            .curr
            .filter(|_| self.rqs[cpu].cfs.curr.is_some())
        {
            self.task_tick_fair(cpu, p);
            self.dl_server_charge(cpu);
        }
        let resched = std::mem::take(&mut self.rqs[cpu].cfs.resched_req);
        self.events
            .push(self.now + self.tick_ns, EventKind::Tick, cpu);
        if resched {
            self.resched_curr_lazy(cpu, Some(cpu), Req::Fair, Cause::Tick);
        }
        self.update_idle_cpu_scan(cpu);
        // SCHED_SOFTIRQ's balance, on the way out of the tick: interrupt
        // time of the task it lands on, like the tick's own.
        let softirq = self.sched_balance_trigger(cpu).unwrap_or(0);
        match (self.rqs[cpu].act, self.rqs[cpu].curr) {
            (Activity::Running { speed, .. }, Some(p)) => {
                if self.tick_goes_on(cpu, p, speed) {
                    self.irq_on_task(p, softirq);
                    return self.tick_irq_goes_on(cpu, p);
                }
                self.stop_segment(cpu);
                let ns = self.vary(self.machine.cost.tick_ns, By::Cpu(cpu));
                self.irq_on_task(p, ns);
                self.update_irq_load_avg(cpu, ns);
                self.irq_on_task(p, softirq);
                self.dispatch(cpu);
            }
            (_, Some(p)) => self.irq_on_task(p, softirq),
            (_, None) => {}
        }
    }

    /// Whether the segment `p` runs on `cpu` at `speed` goes on across the
    /// tick's interrupt unchanged: no reschedule bit pending and no throttle
    /// to check (so dispatch's preemption point does not act), at full
    /// speed now and then (so stopping the segment and starting its rest
    /// would arm the same end: no rounding), no fold on the CPU, and not a
    /// replayed burst (whose interrupt time comes out of the work left).
    fn tick_goes_on(&self, cpu: usize, p: Pid, speed: u64) -> bool {
        let prog = &self.tasks[p].prog;
        speed == 1024
            && !self.bandwidth_on
            && !self.resched_pending(cpu)
            && !self.folded(cpu)
            && self.speed(cpu) == 1024
            && !prog.in_burst()
    }

    /// The tick's interrupt on a segment that goes on (`tick_goes_on`):
    /// what stop_segment → dispatch → step → start_segment would do there,
    /// without stopping and re-arming the segment (its end stays where it
    /// is): the tick's time and the CPU's pending interrupt time become
    /// `p`'s overhead, paid at the segment's end. (A quarter of
    /// periodic-64's switches see a tick; this saves its heap re-arm.)
    fn tick_irq_goes_on(&mut self, cpu: usize, p: Pid) {
        self.rqs[cpu].pre.switched_in = false;
        let ns = self.vary(self.machine.cost.tick_ns, By::Cpu(cpu));
        self.irq_on_task(p, ns);
        self.update_irq_load_avg(cpu, ns);
        let irq = self.take_irq_ns(cpu);
        self.irq_on_task(p, irq);
    }

    /// sched_tick on an idle CPU whose governor kept the tick: the periodic
    /// balance runs as CPU_IDLE (rq->idle_balance), then the idle loop's
    /// governor decides again whether the tick stops.
    fn idle_tick(&mut self, cpu: usize) {
        self.stats.idle_ticks += 1;
        self.events
            .push(self.now + self.tick_ns, EventKind::Tick, cpu);
        self.update_idle_cpu_scan(cpu);
        if self.sched_balance_trigger(cpu).is_some() {
            self.stats.idle_tick_balances += 1;
        }
        if self.rqs[cpu].is_idle() && !self.rqs[cpu].need_resched && self.cpuidle_tick(cpu) {
            self.stop_idle_tick(cpu);
        }
    }

    /// A task's sleep timer fired on the CPU that armed it: the hrtimer
    /// interrupt (hrtimer_interrupt → hrtimer_wakeup) wakes it at its start
    /// and takes `hrtimer_irq_ns` of the CPU, which whatever runs next
    /// (the wakee, if it preempts) waits for.
    pub fn on_timer(&mut self, p: Pid) {
        if !self.timer_wakes(p) {
            return;
        }
        let cpu = self.tasks[p].timer_cpu;
        self.fold_touch_cpu(cpu);
        let irq = self.vary(self.machine.cost.hrtimer_irq_ns, By::Cpu(cpu));
        self.rqs[cpu].irq_ns += irq;
        self.try_to_wake_up(p, 0, cpu, None);
        // Return from the timer interrupt: a preemption point.
        if self.resched_pending(cpu) && matches!(self.rqs[cpu].act, Activity::Running { .. }) {
            self.stop_segment(cpu);
            self.dispatch(cpu);
        }
    }

    /// do_exit up to the end of exit_notify: PF_EXITING (exit_signals),
    /// mm_release (a vfork parent's completion, clear_child_tid's futex
    /// wake) and exit_notify → do_notify_parent (the parent's wakeup, under
    /// write_lock_irq(&tasklist_lock)). The task is then a zombie still
    /// running (TASK_RUNNING, EXIT_ZOMBIE); write_unlock_irq's
    /// preempt_enable is a preemption point (the caller's `step`), and
    /// do_task_dead comes after it.
    pub fn exit_notify(&mut self, p: Pid) {
        let cpu = self.tasks[p].cpu;
        self.touch_cpu(cpu);
        self.touch_task(p);
        self.tasks[p].exiting = true;
        self.mm_release(p, cpu);
        self.trace_exit(p);
        if let Some(f) = self.tasks[p].clear_child_tid {
            self.futex_store_wake(f, 0, 1, cpu, p);
        }
        if let Some(parent) = self.tasks[p].parent {
            self.tasks[parent].zombies += 1;
            self.child_exited(parent, cpu, p);
        }
    }

    /// do_task_dead: set_special_state(TASK_DEAD); the caller's __schedule
    /// takes the task off its CPU for good.
    pub fn do_task_dead(&mut self, p: Pid) {
        self.touch_task(p);
        self.tasks[p].state = TaskState::Dead;
    }

    /// finish_task_switch for a prev in TASK_DEAD, on the CPU it died on:
    /// its class's task_dead (task_dead_fair's remove_entity_load_avg,
    /// task_dead_dl) and put_task_struct_rcu_user (the task is gone).
    fn task_dead(&mut self, p: Pid, cpu: usize) {
        self.touch_cpu(cpu);
        self.touch_task(p);
        self.alive -= 1;
        self.remove_entity_load_avg(p, cpu);
        self.task_dead_dl(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// The layout Rq's doc comment describes: a field added in a hot part,
    /// or a hot part moved off its lines, costs big machines a cache miss
    /// per touch.
    #[test]
    fn hot_fields_stay_on_their_lines() {
        assert_eq!(size_of::<Rq>(), 21 * 64);
        assert_eq!(offset_of!(Rq, stats), 128);
        assert_eq!(offset_of!(Rq, blocked_clean), 192);
        assert_eq!(offset_of!(Rq, footprint), 256);
        // The deadline queue and the fair server's hot part on two lines.
        use crate::kernel::{deadline::DlEntity, deadline::DlRq, dl_server::FairServer};
        let dl = offset_of!(Rq, dl);
        let server = offset_of!(DlRq, server) + offset_of!(FairServer, dl);
        assert_eq!(dl, 384);
        assert!(dl + server + offset_of!(DlEntity, dl_deadline) <= 512);
        // The PELT clock (RqPelt's last three words) and the root
        // cfs_rq's hot part: five lines from offset 768.
        let cfs = offset_of!(Rq, cfs);
        let pelt_end = offset_of!(Rq, pelt) + size_of::<crate::kernel::pelt_rq::RqPelt>();
        assert_eq!(pelt_end, cfs);
        assert_eq!(cfs - 3 * 8, 768);
        assert!(cfs + offset_of!(CfsRq, prop_runnable_sum) <= 768 + 5 * 64);
    }
}
