//! The kernel's tracepoints: the events, the hook a consumer implements
//! (the trace writers and the HTML report, in the layers above), and the
//! calls in the kernel model. Each call is one line in the model and costs
//! one predictable branch when tracing is off.
//!
//! Besides the kernel's tracepoints there are schedlab's decision records
//! (`Pick`, `Place`, `Resched`, `Balance`): why the model chose what it
//! chose. They
//! are built only when the tracer asks for them ([`Tracer::decisions`]),
//! behind one more branch on `Kernel::decisions`, and change nothing.

use super::balance::MigrationType;
use super::preempt::Cause;
use super::sched_domain::IdleType;
use super::select::Placed;
use super::task::{Pid, TaskState};
use super::Kernel;
use std::io;

/// One scheduler tracepoint. `cpu` is the CPU the event is emitted on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// trace_sched_switch in __schedule, emitted when next starts;
    /// `prev_state` is prev's state as the switch began and `preempt` is
    /// true for SM_PREEMPT.
    Switch {
        cpu: usize,
        prev: Option<Pid>,
        prev_state: TaskState,
        next: Option<Pid>,
        preempt: bool,
    },
    /// trace_sched_waking, in the waker's context (`waker` None: an
    /// interrupt, e.g. a sleep timer, on `cpu`).
    Waking {
        cpu: usize,
        p: Pid,
        waker: Option<Pid>,
    },
    /// trace_sched_wakeup: `p` is runnable on `target`.
    Wakeup { cpu: usize, p: Pid, target: usize },
    /// trace_sched_wakeup_new
    WakeupNew { cpu: usize, p: Pid, target: usize },
    /// trace_sched_migrate_task
    Migrate { p: Pid, orig: usize, dest: usize },
    /// trace_sched_process_fork
    Fork { cpu: usize, parent: Pid, child: Pid },
    /// trace_sched_process_exit
    Exit { p: Pid },
    /// The raw_syscalls/syscalls sys_enter tracepoint of a read(2) or
    /// write(2) on a pipe or socket (only when the tracer asks for the
    /// syscalls, [`Tracer::syscalls`]).
    SysEnter { cpu: usize, p: Pid, io: SysIo },
    /// Its sys_exit, returning `ret` bytes.
    SysExit {
        cpu: usize,
        p: Pid,
        io: SysIo,
        ret: u32,
    },
    /// Decision record of pick_task_fair (__pick_eevdf) on the cfs_rq
    /// where task `p` was picked: how many entities there were eligible,
    /// p's vruntime, deadline and lag (avg_vruntime − vruntime), whether
    /// slice protection kept curr against an earlier eligible deadline,
    /// and the best other eligible task (a group entity there counts
    /// toward `eligible` but is no runner-up).
    Pick {
        cpu: usize,
        p: Pid,
        eligible: u32,
        vruntime: i64,
        deadline: i64,
        lag: i64,
        protected: bool,
        runner_up: Option<Pid>,
    },
    /// Decision record of a wakeup's placement (select_task_rq_fair and
    /// ttwu_queue): the woken task's previous CPU, the waking CPU `cpu`,
    /// the CPU chosen, wake_affine's verdict, the rule that chose the CPU,
    /// the CPUs select_idle_cpu visited, and whether the wakeup went
    /// through the target's wakelist.
    Place {
        cpu: usize,
        p: Pid,
        place: Placement,
    },
    /// Decision record of a need-resched bit newly set on `cpu` (full or
    /// `lazy`), with its cause; for a wakeup preemption the wakee and the
    /// rule of check_preempt_wakeup_fair that fired.
    Resched {
        cpu: usize,
        curr: Option<Pid>,
        cause: Cause,
        lazy: bool,
        wakee: Option<(Pid, WakeupRule)>,
    },
    /// Decision record of one load balance of a domain
    /// (sched_balance_rq, the kernel's load_balance) or of the stopper's
    /// push that one queued (active_load_balance_cpu_stop), emitted on
    /// the CPU doing the work (`cpu`: a nohz idle balancer balances for
    /// other idle CPUs).
    Balance { cpu: usize, lb: LbDecision },
}

/// A read or write system call on a pipe or socket, as its syscall
/// tracepoints give it: the direction, the queue it moves bytes through
/// and the byte count asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SysIo {
    pub write: bool,
    pub queue: IoQueue,
    pub count: u32,
}

/// The queue a read or write moves bytes through: a pipe, or the receive
/// queue of a unix socket (what a socketpair's write on one end fills
/// and a read on the other end drains).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum IoQueue {
    Pipe(usize),
    Sock(usize),
}

/// A load balance's decision as its record gives it: who balanced what,
/// what it found, and what it moved or why nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LbDecision {
    /// The CPU pulling (env->dst_cpu).
    pub dst: usize,
    /// The sched_domain: its level (0 = lowest) and name.
    pub level: usize,
    pub domain: &'static str,
    pub idle: IdleType,
    /// The busiest group (its first CPU) and queue, when found.
    pub group: Option<usize>,
    pub src: Option<usize>,
    /// calculate_imbalance's verdict, before the moves consume it (None:
    /// no busiest group).
    pub migration: Option<MigrationType>,
    pub imbalance: i64,
    pub moved: u32,
    /// The first task moved (each has its sched_migrate_task).
    pub first: Option<Pid>,
    pub why: LbWhy,
    /// An active balance was queued: the busiest CPU's stopper will push.
    pub active: bool,
}

/// The outcome of a load balance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LbWhy {
    /// detach_tasks moved at least one task.
    Moved,
    /// should_we_balance: another CPU of the local group balances this
    /// domain (or a newly idle CPU got a task meanwhile).
    NotThisCpu,
    /// find_busiest_group: no imbalance worth acting on.
    Balanced,
    /// find_busiest_queue: no queue of the busiest group qualifies.
    NoBusiestRq,
    /// Every task of the busiest queues may not run on dst.
    AllPinned,
    /// Nothing moved, and a task was refused as cache hot (task_hot).
    CacheHot,
    /// Nothing moved otherwise: only the running task, a delayed or not
    /// eligible one, one too heavy for the imbalance, a throttled group.
    NothingMovable,
    /// The stopper pushed a task (active_load_balance_cpu_stop).
    Pushed,
    /// The stopper found no task it could push.
    PushFailed,
}

/// wake_affine's part in a placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Affine {
    /// Not asked: no waker task, the waker's CPU is prev or not allowed,
    /// or no SD_WAKE_AFFINE domain spans both.
    Skipped,
    /// wake_wide: the waker has many wakees; spread them.
    Wide,
    /// wake_affine chose the waker's CPU.
    Waker,
    /// wake_affine kept prev.
    Prev,
}

/// Which rule chose the CPU of a placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlaceWhy {
    /// One allowed CPU.
    Pinned,
    /// The RT class placed it (select_task_rq_rt).
    Rt,
    /// The deadline class placed it (select_task_rq_dl).
    Dl,
    /// select_idle_sibling: the target (prev or the waker's CPU) is idle.
    TargetIdle,
    /// select_idle_sibling: prev is idle and shares the target's LLC.
    PrevIdle,
    /// select_idle_sibling: the task's recent_used_cpu is idle.
    RecentIdle,
    /// select_idle_smt: an idle SMT sibling of prev.
    IdleSmt,
    /// select_idle_cpu found an idle CPU (or core) in the LLC.
    IdleScan,
    /// No idle CPU found: the target, busy.
    NoIdle,
    /// The target is not allowed: the first allowed CPU.
    Fallback,
    /// Still queued (a delayed dequeue): requeued where it is
    /// (ttwu_runnable).
    Queued,
    /// Still switching out of prev: queued on prev's wakelist.
    OnCpu,
}

/// The rule of check_preempt_wakeup_fair (or the class check) that made
/// a wakeup preempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeupRule {
    /// The CPU was idle.
    Idle,
    /// curr is SCHED_IDLE and the wakee is not.
    SchedIdle,
    /// PREEMPT_SHORT: the wakee's shorter slice overrides curr's
    /// protection and it is the pick.
    Short,
    /// The wakee is eligible with an earlier deadline than curr (and curr
    /// is not protected): it is the pick.
    Deadline,
    /// Pre-EEVDF CFS: wakeup_preempt_entity's vruntime gap.
    Legacy,
    /// An RT wakee preempts a fair task or a lower-priority RT one.
    Rt,
    /// A DL wakee preempts a lower class or a later deadline.
    Dl,
}

impl Affine {
    pub fn name(self) -> &'static str {
        match self {
            Affine::Skipped => "none",
            Affine::Wide => "wide",
            Affine::Waker => "waker",
            Affine::Prev => "prev",
        }
    }
}

impl PlaceWhy {
    pub fn name(self) -> &'static str {
        match self {
            PlaceWhy::Pinned => "pinned",
            PlaceWhy::Rt => "rt",
            PlaceWhy::Dl => "dl",
            PlaceWhy::TargetIdle => "target-idle",
            PlaceWhy::PrevIdle => "prev-idle",
            PlaceWhy::RecentIdle => "recent-idle",
            PlaceWhy::IdleSmt => "idle-smt",
            PlaceWhy::IdleScan => "idle-scan",
            PlaceWhy::NoIdle => "no-idle",
            PlaceWhy::Fallback => "fallback",
            PlaceWhy::Queued => "queued",
            PlaceWhy::OnCpu => "on-cpu",
        }
    }
}

impl WakeupRule {
    pub fn name(self) -> &'static str {
        match self {
            WakeupRule::Idle => "idle",
            WakeupRule::SchedIdle => "sched-idle",
            WakeupRule::Short => "short",
            WakeupRule::Deadline => "deadline",
            WakeupRule::Legacy => "cfs",
            WakeupRule::Rt => "rt",
            WakeupRule::Dl => "dl",
        }
    }
}

impl LbWhy {
    pub fn name(self) -> &'static str {
        match self {
            LbWhy::Moved => "moved",
            LbWhy::NotThisCpu => "not-this-cpu",
            LbWhy::Balanced => "balanced",
            LbWhy::NoBusiestRq => "no-busiest-rq",
            LbWhy::AllPinned => "all-pinned",
            LbWhy::CacheHot => "cache-hot",
            LbWhy::NothingMovable => "nothing-movable",
            LbWhy::Pushed => "pushed",
            LbWhy::PushFailed => "push-failed",
        }
    }
}

/// The name of an idle type in balance records (CPU_IDLE,
/// CPU_NEWLY_IDLE, __CPU_NOT_IDLE).
pub fn idle_name(i: IdleType) -> &'static str {
    match i {
        IdleType::Idle => "idle",
        IdleType::NewlyIdle => "newly-idle",
        IdleType::NotIdle => "not-idle",
    }
}

/// The name of a migration type (enum migration_type's migrate_*).
pub fn migration_name(m: Option<MigrationType>) -> &'static str {
    match m {
        Some(MigrationType::Load) => "load",
        Some(MigrationType::Util) => "util",
        Some(MigrationType::Task) => "task",
        Some(MigrationType::Misfit) => "misfit",
        None => "-",
    }
}

/// The name of a resched cause in decision records.
pub fn cause_name(c: Cause) -> &'static str {
    match c {
        Cause::Wakeup => "wakeup",
        Cause::Tick => "tick",
        Cause::LazyUpgrade => "lazy-upgrade",
        Cause::Other => "other",
    }
}

/// A wakeup's placement as its record gives it: the previous CPU, what
/// select_task_rq chose and why, and whether the wakeup went through the
/// target's wakelist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub prev: usize,
    pub placed: Placed,
    pub wakelist: bool,
}

/// A consumer of trace events.
pub trait Tracer {
    fn event(&mut self, k: &Kernel, ev: &TraceEvent);
    /// Whether it wants the decision records (read once, when installed).
    fn decisions(&self) -> bool {
        false
    }
    /// Whether it wants the syscall events of pipe and socket reads and
    /// writes (read once, when installed).
    fn syscalls(&self) -> bool {
        false
    }
    /// Called once after the run: complete and commit the output.
    fn finish(self: Box<Self>, k: &Kernel) -> io::Result<()>;
}

impl Kernel {
    /// Install `t` as the tracer; the decision records are built from now
    /// on if it asks for them.
    pub fn set_tracer(&mut self, t: Option<Box<dyn Tracer>>) {
        self.decisions = t.as_ref().is_some_and(|t| t.decisions());
        self.syscalls = t.as_ref().is_some_and(|t| t.syscalls());
        self.tracer = t;
    }

    /// Hand `ev` to the tracer, if any.
    #[inline(always)]
    pub fn trace(&mut self, ev: TraceEvent) {
        if self.tracer.is_some() {
            self.trace_slow(ev);
        }
    }

    #[cold]
    #[inline(never)]
    fn trace_slow(&mut self, ev: TraceEvent) {
        if let Some(mut t) = self.tracer.take() {
            t.event(self, &ev);
            self.tracer = Some(t);
        }
    }

    /// trace_sched_switch
    #[inline(always)]
    pub fn trace_switch(
        &mut self,
        cpu: usize,
        prev: Option<Pid>,
        prev_state: TaskState,
        next: Option<Pid>,
        preempt: bool,
    ) {
        self.trace(TraceEvent::Switch {
            cpu,
            prev,
            prev_state,
            next,
            preempt,
        });
    }

    /// trace_sched_waking, in the waker's context.
    #[inline(always)]
    pub fn trace_waking(&mut self, p: Pid, cpu: usize, waker: Option<Pid>) {
        self.trace(TraceEvent::Waking { cpu, p, waker });
    }

    /// trace_sched_wakeup, emitted on the waking CPU `cpu`.
    #[inline(always)]
    pub fn trace_wakeup(&mut self, p: Pid, target: usize, cpu: usize) {
        self.trace(TraceEvent::Wakeup { cpu, p, target });
    }

    /// trace_sched_wakeup_new, emitted on the parent's CPU `cpu`.
    #[inline(always)]
    pub fn trace_wakeup_new(&mut self, p: Pid, target: usize, cpu: usize) {
        self.trace(TraceEvent::WakeupNew { cpu, p, target });
    }

    /// trace_sched_migrate_task
    #[inline(always)]
    pub fn trace_migrate(&mut self, p: Pid, orig: usize, dest: usize) {
        self.trace(TraceEvent::Migrate { p, orig, dest });
    }

    /// trace_sched_process_fork
    #[inline(always)]
    pub fn trace_fork(&mut self, parent: Pid, child: Pid, cpu: usize) {
        self.trace(TraceEvent::Fork { cpu, parent, child });
    }

    /// trace_sched_process_exit
    #[inline(always)]
    pub fn trace_exit(&mut self, p: Pid) {
        self.trace(TraceEvent::Exit { p });
    }

    /// sys_enter of a read or write on a pipe or socket, when the tracer
    /// asks for the syscalls.
    #[inline(always)]
    pub fn trace_sys_enter(&mut self, cpu: usize, p: Pid, io: SysIo) {
        if self.syscalls {
            self.trace(TraceEvent::SysEnter { cpu, p, io });
        }
    }

    /// sys_exit of that call, returning `ret` bytes.
    #[inline(always)]
    pub fn trace_sys_exit(&mut self, cpu: usize, p: Pid, io: SysIo, ret: u32) {
        if self.syscalls {
            self.trace(TraceEvent::SysExit { cpu, p, io, ret });
        }
    }

    /// A wakeup's placement record: `p` woken from `from` with previous
    /// CPU `prev`, placed as `placed`.
    #[cold]
    #[inline(never)]
    pub fn trace_place(
        &mut self,
        p: Pid,
        prev: usize,
        from: usize,
        placed: Placed,
        wakelist: bool,
    ) {
        let place = Placement {
            prev,
            placed,
            wakelist,
        };
        self.trace(TraceEvent::Place {
            cpu: from,
            p,
            place,
        });
    }

    /// A newly set need-resched bit's record; a wakeup preemption's wakee
    /// and rule come from `wakeup_rule`.
    #[cold]
    #[inline(never)]
    pub(super) fn trace_resched(&mut self, cpu: usize, lazy: bool, cause: Cause) {
        let wakee = self.wakeup_rule.filter(|_| cause == Cause::Wakeup);
        self.trace(TraceEvent::Resched {
            cpu,
            curr: self.rqs[cpu].curr,
            cause,
            lazy,
            wakee,
        });
    }

    /// A load balance's record, emitted on `cpu`.
    #[cold]
    #[inline(never)]
    pub(super) fn trace_balance(&mut self, cpu: usize, lb: LbDecision) {
        self.trace(TraceEvent::Balance { cpu, lb });
    }
}
