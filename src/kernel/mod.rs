//! The kernel model: run queues, tasks and the scheduler classes, driven by
//! the engine's events. Submodules mirror kernel/sched/ (and the parts of
//! kernel/ the scheduler meets: wait queues, completions, futexes, pipes,
//! sockets, kthreads, interrupts).
//!
//! Layer: the kernel, on `engine`, `machine` and `util` only. It imports no
//! workload, trace writer, report, scenario or command: what it calls above
//! itself it defines here and others implement: a task's program
//! (`program.rs`: the op set and interpreter state; the interpreter,
//! `Kernel::step`, is workload/program.rs), the tracepoint hook
//! (`tracepoint.rs`: `TraceEvent`, `Tracer`) and the [`ProgressHook`].

pub mod balance;
pub mod bandwidth;
pub mod cacheline;
pub mod cfs_legacy;
pub mod completion;
pub mod core;
pub mod deadline;
pub mod dl_server;
pub mod fair;
pub mod fair316;
pub mod fair_class;
pub mod features;
pub mod fold;
pub mod fold_send;
pub mod footprint;
pub mod futex;
pub mod idle;
pub mod irq;
pub mod kthread;
pub mod lock;
pub mod noise;
pub mod pelt;
pub mod pelt316;
pub mod pelt_rq;
pub mod pipe;
pub mod preempt;
pub mod prio;
pub mod program;
pub mod pthread;
pub mod rt;
pub mod sched_domain;
pub mod schedstat;
pub mod select;
pub mod setattr;
pub mod shm;
pub mod swait;
pub mod task;
pub mod task_group;
pub mod timeline;
pub mod tracepoint;
pub mod unix_sock;
pub mod wait;
pub mod wakelist;

use self::core::Rqs;
use crate::engine::{EventKind, EventQueue, Time};
use crate::machine::Machine;
use features::KernelConfig;
use futex::{Barrier, Futex};
use pipe::Pipe;
use task::{Task, TaskState};
use unix_sock::UnixSock;

/// Machine-wide counters (perf's software events and schedstat totals).
#[derive(Clone, Debug, Default)]
pub struct Counters {
    /// Switches of any CPU between two tasks or a task and idle
    /// (rq->nr_switches summed, /proc/stat `ctxt`).
    pub rq_switches: u64,
    pub cpu_migrations: u64,
    pub wakeups: u64,
    pub forks: u64,
    pub ipis_sent: u64,
    pub ipis_avoided_polling: u64,
    pub rq_lock_wait_ns: u64,
    /// Time pipe and socket operations spent pulling the object's cache
    /// lines from the CPU that touched it last (kernel/cacheline.rs).
    pub ipc_line_ns: u64,
    /// Time they waited for pipe->mutex or a socket's lock (kernel/lock.rs).
    pub ipc_lock_wait_ns: u64,
    pub ttwu_move_affine: u64,
    /// try_to_wake_up onto the waker's own CPU / another CPU (schedstat
    /// ttwu_local and the rest of ttwu_count); every wakeup is one of them.
    pub ttwu_local: u64,
    pub ttwu_remote: u64,
    /// Wakeups queued on the target's wakelist (a subset of the above).
    pub ttwu_wakelist: u64,
    /// Wakeups that found the task still switching out (p->on_cpu).
    pub ttwu_on_cpu: u64,
    pub sis_scanned: u64,
    pub newidle_pulls: u64,
    pub idle_balance_pulls: u64,
    /// Ticks taken by idle CPUs whose governor kept the tick, times an
    /// idle CPU's tick was stopped (tick_nohz_idle_stop_tick), and idle
    /// ticks that ran the periodic balance (SCHED_SOFTIRQ raised).
    pub idle_ticks: u64,
    pub nohz_tick_stops: u64,
    pub idle_tick_balances: u64,
    /// RT tasks pushed to and pulled by other CPUs; bandwidth holds (RT
    /// throttled, or a fair server queued by its timer).
    pub rt_pushes: u64,
    pub rt_pulls: u64,
    pub rt_throttled: u64,
    /// cfs_rqs throttled by their group's cpu.max.
    pub cfs_throttled: u64,
    /// Fair-class operations on a task group's per-CPU cfs_rq or entity
    /// (each charged `group_level_ns`).
    pub group_level_ops: u64,
    /// Time spent on tg->load_avg's cache line: transfers and waits
    /// behind other writers (ns).
    pub tg_load_avg_ns: u64,
    /// Preemptions by cause and point, need-resched latency.
    pub preempt: preempt::PreemptStats,
    /// sched_waking → running latency of every wakeup, ns.
    pub wakeup_latency: crate::util::hist::Histogram,
}

/// A progress reporter the event loop ticks with the simulated time (the
/// command line's progress bar). It must not feed back into the run.
pub trait ProgressHook {
    fn tick(&self, now: Time);
}

/// The event loop ticks the progress hook once per this many events.
pub const PROGRESS_TICK_EVERY: u32 = 8192;

/// Why a run stopped early.
#[derive(Debug)]
pub enum SimError {
    /// Every live task is blocked and nothing can wake one.
    Deadlock(String),
    /// A --check invariant failed.
    Invariant(String),
    /// The run used more events or time than its [`Budget`].
    Budget(String),
}

/// A cap on one run's cost (the fuzzer's per-input budget): events per CPU
/// and task, and time on `clock` (the fuzzer's: the process's CPU time, so
/// a loaded machine does not cut a run short) that grows with the CPUs and
/// tasks and with the events done (a valid input's cost grows with its
/// size and its events; what the time cap catches is a cost per event out
/// of bounds), both checked with the progress tick, where `heartbeat` also tells a watcher
/// the run is alive. Exceeding it stops the run; it never changes a
/// decision of a run that stays within it.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub events_per_entity: u64,
    /// The time for a run of no CPUs and tasks ...
    pub time: Option<std::time::Duration>,
    /// ... what each CPU and task adds to it ...
    pub time_per_entity: std::time::Duration,
    /// ... what each event done adds ...
    pub time_per_event: std::time::Duration,
    /// ... and what each CPU and task a `--check` sweep visits adds
    /// (`sim.check_every` sets how often the whole machine is swept).
    pub time_per_swept: std::time::Duration,
    /// Time spent so far.
    pub clock: fn() -> std::time::Duration,
    pub heartbeat: Option<fn()>,
}

impl Budget {
    /// Why the run must stop after `events` events among `entities` CPUs
    /// and tasks, if it must.
    fn exceeded(&self, events: u64, entities: usize, swept: u64) -> Option<String> {
        if let Some(beat) = self.heartbeat {
            beat();
        }
        let max = self.events_per_entity.saturating_mul(entities as u64);
        if events > max {
            return Some(format!(
                "more than {max} events ({} per CPU and task)",
                self.events_per_entity
            ));
        }
        let times =
            |d: std::time::Duration, n: u64| d.saturating_mul(n.min(u32::MAX as u64) as u32);
        let limit = self.time?
            + times(self.time_per_entity, entities as u64)
            + times(self.time_per_event, events)
            + times(self.time_per_swept, swept);
        ((self.clock)() > limit).then(|| {
            format!(
                "time budget ({limit:?} for {entities} CPUs and tasks, {events} events and {swept} swept) spent"
            )
        })
    }
}

/// What `--check` verifies after an event: the CPUs and tasks the event
/// touched (marked as the kernel goes, only while checking), and when the
/// next whole-machine sweep is due (observe/check.rs).
#[derive(Default)]
pub struct CheckMarks {
    pub cpus: Vec<usize>,
    pub tasks: Vec<task::Pid>,
    /// Sweep every this many events; 0: once per tick of simulated time.
    pub every: u64,
    pub events: u64,
    pub next_sweep: Time,
    /// CPUs and tasks visited by whole-machine sweeps so far.
    pub swept: u64,
    /// Per-task stamps of the check in progress, and its number.
    pub stamp: Vec<u64>,
    pub gen: u64,
}

pub struct Kernel {
    pub machine: Machine,
    pub cfg: KernelConfig,
    /// sysctl_sched_base_slice after boot scaling.
    pub base_slice: u64,
    /// Legacy CFS tunables after boot scaling, when `kernel.fair = "cfs"`.
    pub legacy_cfs: Option<cfs_legacy::CfsTunables>,
    pub tick_ns: u64,
    pub now: Time,
    pub events: EventQueue,
    pub rqs: Rqs,
    pub tasks: Vec<Task>,
    pub pipes: Vec<Pipe>,
    pub socks: Vec<UnixSock>,
    /// Each CPU's folded reads (kernel/fold.rs), and how many CPUs have
    /// one.
    pub folds: Vec<fold::Fold>,
    pub folds_live: u32,
    /// Folded sends' skbs not queued yet, on all sockets
    /// (kernel/fold_send.rs).
    pub sends_pending: u32,
    /// The slot of the event being handled while folds run: it sees the
    /// effects stamped at its instant by CPUs of lower slots.
    pub fold_slot: usize,
    pub futexes: Vec<Futex>,
    pub barriers: Vec<Barrier>,
    /// User-space memory the workloads' threads share.
    pub shm: shm::Shm,
    pub completions: completion::Completions,
    pub irqs: irq::Irqs,
    pub kthreads: kthread::Kthreads,
    /// Next expiry of each rt-app periodic timer (None: not started).
    pub timers: Vec<Option<Time>>,
    pub stats: Counters,
    /// Task groups (cgroup v2 cpu controller) and their bandwidth pools.
    pub groups: task_group::TaskGroups,
    pub bandwidth: Vec<bandwidth::CfsBandwidth>,
    /// Some group has a cpu.max quota.
    pub bandwidth_on: bool,
    /// The root domain's deadline bandwidth (deadline.rs).
    pub dl_bw: deadline::DlBw,
    /// Sched domains of every CPU, with their balancing state and schedstats.
    pub sd: sched_domain::SchedDomains,
    /// The load balancer's per-CPU state and counters.
    pub lb: balance::LoadBalance,
    /// sd_llc_shared->has_idle_cores, per LLC: a hint that some core of the
    /// LLC is wholly idle.
    pub has_idle_cores: Vec<bool>,
    /// The CPUs in the idle loop (`Activity::Idle`), so that scans for
    /// idle CPUs look only at them.
    pub idle_mask: crate::util::cpumask::CpuMask,
    /// Per core, how many of its SMT siblings are out of the idle loop (the
    /// complement of `idle_mask` counted per core): the run-speed check
    /// reads one number instead of walking the siblings.
    pub busy_in_core: Vec<u8>,
    /// Per LLC, how many of its CPUs are in `idle_mask`: the tick's
    /// wasted-core check skips the walk of the LLC's idle mask (64 words on
    /// a flat 4096-CPU LLC) when none is.
    pub idle_in_llc: Vec<u32>,
    /// Each CPU's cpuidle governor state (idle.rs).
    pub cpuidle: Vec<idle::GovCpu>,
    /// Task timers armed per CPU, earliest first (stale entries are dropped
    /// lazily, at a look-up and when the index fills its allocation; see
    /// `arm_task_timer`).
    cpu_timers: Vec<std::collections::BinaryHeap<std::cmp::Reverse<(Time, task::Pid)>>>,
    /// Run-to-run noise (noise.rs), seeded by `seed`.
    pub noise: noise::Noise,
    /// sd_llc_shared->nr_idle_scan per LLC (SIS_UTIL), and when the tick
    /// next refreshes it.
    pub nr_idle_scan: Vec<u32>,
    idle_scan_next: Vec<Time>,
    /// Per-CPU stamps of the idle-core scan in progress (no allocation per
    /// wakeup), and the current scan's number.
    scan_stamp: Vec<u64>,
    scan_gen: u64,
    /// Per CPU: the CPU cpumask_any_and_distribute handed out last.
    distribute_prev: Vec<usize>,
    /// Tasks forked or to be forked that have not exited.
    pub alive: usize,
    pub check: bool,
    pub marks: CheckMarks,
    /// The run's cost cap, if any (see [`Budget`]).
    pub budget: Option<Budget>,
    /// Set during a waker's remote enqueue: how far into its wakeup the
    /// reschedule IPI leaves (resched_curr adds it to the event time).
    resched_after: u64,
    /// Set while `wake_timed` wakes for an interrupt handler: the time its
    /// try_to_wake_up spends so far (what a waking task's overhead gets).
    irq_waker_ns: Option<u64>,
    /// The CPU in __schedule with a skipped clock update, and the clock it
    /// keeps (see `rq_clock`).
    clock_skipped: Option<(usize, Time)>,
    /// Where tracepoints go (--trace, the HTML report); None = off.
    pub tracer: Option<Box<dyn tracepoint::Tracer>>,
    /// The tracer wants the decision records (`Kernel::set_tracer`).
    pub decisions: bool,
    /// The tracer wants the syscall events (`Kernel::set_tracer`).
    pub syscalls: bool,
    /// While a wakeup preemption's resched is requested, with decision
    /// records on: the wakee and the rule that fired, for its record.
    wakeup_rule: Option<(task::Pid, tracepoint::WakeupRule)>,
    /// The progress bar, ticked every `PROGRESS_TICK_EVERY` events; None = off.
    pub progress: Option<Box<dyn ProgressHook>>,
}

impl Kernel {
    /// Context switches as `perf stat` counts them for the workload: each
    /// time one of its tasks is switched out (nvcsw + nivcsw).
    pub fn task_switches(&self) -> u64 {
        self.tasks.iter().map(|t| t.stats.nr_switches).sum()
    }

    pub fn new(machine: Machine, cfg: KernelConfig) -> Self {
        let n = machine.nr_cpus();
        let variant = cfg.completion;
        let dl_bw = deadline::DlBw::new(&machine, &cfg);
        Kernel {
            base_slice: cfg.scaled_base_slice(n),
            legacy_cfs: (cfg.fair == features::FairClass::Cfs)
                .then(|| cfs_legacy::CfsTunables::scaled(cfg.sysctl_factor(n))),
            tick_ns: cfg.tick_ns(),
            rqs: Rqs::new(n),
            sd: sched_domain::SchedDomains::build(&machine),
            lb: balance::LoadBalance::new(n, &cfg),
            has_idle_cores: vec![false; machine.nr_llcs],
            idle_mask: crate::util::cpumask::CpuMask::new(n, true),
            busy_in_core: vec![0; machine.cpus.iter().map(|c| c.core + 1).max().unwrap_or(0)],
            idle_in_llc: (0..machine.nr_llcs)
                .map(|l| machine.llc_cpus(l).len() as u32)
                .collect(),
            cpuidle: vec![Default::default(); n],
            cpu_timers: vec![Default::default(); n],
            noise: noise::Noise::new(&cfg.noise, 1, cfg.tick_ns(), n),
            // As an idle LLC computes it: scan all of it.
            nr_idle_scan: (0..machine.nr_llcs)
                .map(|l| machine.llc_cpus(l).len() as u32)
                .collect(),
            idle_scan_next: vec![0; machine.nr_llcs],
            scan_stamp: vec![0; n],
            scan_gen: 0,
            distribute_prev: vec![0; n],
            machine,
            cfg,
            now: 0,
            events: EventQueue::new(n),
            tasks: Vec::new(),
            pipes: Vec::new(),
            socks: Vec::new(),
            folds: vec![fold::Fold::default(); n],
            folds_live: 0,
            sends_pending: 0,
            fold_slot: 0,
            futexes: Vec::new(),
            barriers: Vec::new(),
            shm: Default::default(),
            completions: completion::Completions::new(variant),
            irqs: irq::Irqs::new(n),
            kthreads: Default::default(),
            timers: Vec::new(),
            stats: Counters::default(),
            groups: Default::default(),
            bandwidth: vec![Default::default()],
            bandwidth_on: false,
            dl_bw,
            alive: 0,
            check: false,
            marks: CheckMarks::default(),
            budget: None,
            resched_after: 0,
            irq_waker_ns: None,
            clock_skipped: None,
            tracer: None,
            decisions: false,
            syscalls: false,
            wakeup_rule: None,
            progress: None,
        }
    }

    /// Run until every task has exited or `end` is reached. May be called
    /// again with a later `end` to continue; call `finish` once at the end.
    pub fn run(&mut self, end: Option<Time>) -> Result<(), SimError> {
        if let Some(e) = end {
            self.events.push(e, EventKind::End, 0);
        }
        let entities = self.rqs.len() + self.tasks.len();
        let mut n: u64 = 0;
        while self.alive > 0 {
            let Some(ev) = self.events.pop() else {
                return Err(SimError::Deadlock(self.describe_blocked()));
            };
            self.now = ev.time;
            let i = ev.idx;
            if self.folds_live > 0 {
                self.fold_slot = self.events.slot(ev.kind, i);
                self.fold_event(ev.kind, i);
            } else if self.sends_pending > 0 {
                self.fold_slot = self.events.slot(ev.kind, i);
            }
            match ev.kind {
                EventKind::End => break,
                EventKind::CpuDone => self.on_cpu_done(i),
                EventKind::Tick => self.on_tick(i),
                EventKind::Timer if i >= dl_server::SERVER_TIMER_BASE => {
                    self.dl_server_timer(i - dl_server::SERVER_TIMER_BASE)
                }
                EventKind::Timer if i >= bandwidth::BW_SLACK_BASE => {
                    self.on_slack_timer(i - bandwidth::BW_SLACK_BASE)
                }
                EventKind::Timer if i >= bandwidth::BW_TIMER_BASE => {
                    self.on_bandwidth_timer(i - bandwidth::BW_TIMER_BASE)
                }
                EventKind::Timer if i >= deadline::DL_TIMER_BASE => {
                    self.dl_task_timer(i - deadline::DL_TIMER_BASE)
                }
                EventKind::Timer => self.on_timer(i),
                EventKind::Resched => self.on_resched(i),
                EventKind::IdleBalance => self.on_idle_balance(i),
                EventKind::Irq => self.on_irq(i),
                EventKind::NoiseIrq => {
                    self.on_noise_irq(i);
                    // Background interrupts wake no task: if nothing else
                    // is pending, the blocked tasks stay blocked forever.
                    if self.events.len() <= self.rqs.len()
                        && self.events.only_pending(EventKind::NoiseIrq)
                    {
                        return Err(SimError::Deadlock(self.describe_blocked()));
                    }
                }
            }
            if self.check {
                self.check_event(ev.kind, i).map_err(SimError::Invariant)?;
            }
            n += 1;
            if n.is_multiple_of(PROGRESS_TICK_EVERY as u64) {
                if let Some(p) = &self.progress {
                    p.tick(self.now);
                }
                if let Some(why) = self
                    .budget
                    .and_then(|b| b.exceeded(n, entities, self.marks.swept))
                {
                    return Err(SimError::Budget(why));
                }
            }
        }
        Ok(())
    }

    /// Close the books at the end: busy/idle time and PELT aged to now.
    pub fn finish(&mut self) {
        for cpu in 0..self.rqs.len() {
            let rq = &mut self.rqs[cpu];
            match rq.act {
                self::core::Activity::Idle { since } => rq.stats.idle_ns += self.now - since,
                _ => rq.stats.busy_ns += self.now - rq.busy_since,
            }
            rq.cfs.update_cfs_rq_load_avg(self.now);
            for g in rq.gcfs.iter_mut().skip(1) {
                g.update_cfs_rq_load_avg(self.now);
            }
        }
        for pid in 0..self.tasks.len() {
            let t = &self.tasks[pid];
            if t.state == TaskState::Dead || t.state == TaskState::New {
                continue;
            }
            // The task's cfs_rq clock, as its cfs_rq was aged above: time
            // its group spent throttled does not age it.
            let now = self.cfs_rq(t.cpu, t.tg).clock_pelt(self.now);
            let t = &mut self.tasks[pid];
            let w = prio::scale_load_down(t.se.load.weight);
            let running = self.rqs[t.cpu].curr == Some(pid);
            if t.se.avg.attached {
                let on_rq = t.se.on_rq;
                pelt::update_se(
                    now,
                    &mut t.se.avg,
                    w,
                    on_rq,
                    on_rq && !t.se.sched_delayed,
                    running,
                );
            }
        }
    }

    /// Install the task groups (before any task exists): one cfs_rq and
    /// group entity per group and CPU, and the bandwidth pools.
    pub fn set_groups(&mut self, groups: task_group::TaskGroups) {
        let n = groups.count();
        for rq in &mut self.rqs {
            rq.gcfs = (0..n).map(fair::CfsRq::new).collect();
            // online_fair_sched_group: each group entity is attached, empty,
            // when its group is created, before any task runs.
            rq.gse = (0..n)
                .map(|_| {
                    let mut e = task::Entity::new(0);
                    e.avg.attached = true;
                    e
                })
                .collect();
        }
        self.bandwidth = vec![Default::default(); n];
        self.groups = groups;
        self.init_bandwidth();
    }

    /// Mark a CPU whose run queue an event changed, for `--check`.
    #[inline]
    pub(crate) fn touch_cpu(&mut self, cpu: usize) {
        if self.check {
            self.marks.cpus.push(cpu);
        }
    }

    /// Mark a task whose state or queue an event changed, for `--check`.
    #[inline]
    pub(crate) fn touch_task(&mut self, p: task::Pid) {
        if self.check {
            self.marks.tasks.push(p);
        }
    }

    fn describe_blocked(&self) -> String {
        let blocked: Vec<String> = self
            .tasks
            .iter()
            .filter(|t| t.state != TaskState::Dead)
            .take(8)
            .map(|t| format!("{}-{} ({})", t.comm, t.pid, t.prog.blocked_on()))
            .collect();
        format!(
            "deadlock at {:.6}s: {} task(s) blocked with no timer pending, e.g. {}",
            self.now as f64 / 1e9,
            self.alive,
            blocked.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Budget;
    use std::time::Duration;

    fn ten_s() -> Duration {
        Duration::from_secs(10)
    }

    /// Each event done adds to the time cap: 10 s spent is over a 1 s
    /// budget for 2 entities, within it once 1 M events at 10 µs add 10 s.
    #[test]
    fn events_done_extend_the_time_budget() {
        let b = Budget {
            events_per_entity: u64::MAX / 4,
            time: Some(Duration::from_secs(1)),
            time_per_entity: Duration::from_millis(1),
            time_per_event: Duration::from_micros(10),
            time_per_swept: Duration::ZERO,
            clock: ten_s,
            heartbeat: None,
        };
        assert!(b.exceeded(1_000, 2, 0).is_some());
        assert_eq!(b.exceeded(1_000_000, 2, 0), None);
        let sweeps = Budget {
            time_per_swept: Duration::from_micros(1),
            ..b
        };
        assert_eq!(sweeps.exceeded(1_000, 2, 10_000_000), None);
    }
}
