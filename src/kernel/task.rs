//! struct task_struct and struct sched_entity, reduced to what the model uses.

use super::pelt::SchedAvg;
use super::prio::LoadWeight;
use super::program::ProgState;
use crate::engine::Rng;

/// Index of a task in the kernel's task table.
pub type Pid = usize;

/// p->__state, plus the two states around a task's life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// Created by the workload, not yet forked by its parent.
    New,
    /// TASK_RUNNING: runnable or running.
    Running,
    /// TASK_WAKING: claimed by try_to_wake_up, waiting on a CPU's wakelist.
    Waking,
    /// TASK_INTERRUPTIBLE: blocked on a wait queue or a timer.
    Interruptible,
    /// EXIT_DEAD after do_exit.
    Dead,
}

/// struct sched_entity (fair class).
#[derive(Clone, Debug)]
pub struct Entity {
    pub load: LoadWeight,
    pub vruntime: i64,
    pub deadline: i64,
    pub vlag: i64,
    /// The vruntime up to which the entity keeps the CPU once picked
    /// (se->vprot, RUN_TO_PARITY's slice protection).
    pub vprot: i64,
    pub slice: u64,
    /// The slice was set by sched_setattr (sched_runtime), not the base one.
    pub custom_slice: bool,
    pub exec_start: u64,
    pub sum_exec_runtime: u64,
    pub prev_sum_exec_runtime: u64,
    pub on_rq: bool,
    pub sched_delayed: bool,
    pub rel_deadline: bool,
    /// A group entity's runnable tasks (se->runnable_weight); unused for tasks.
    pub runnable_weight: u64,
    pub avg: SchedAvg,
    /// The v3.16 load tracking (`kernel.pelt = "v3.16"`).
    pub avg316: super::pelt316::EntityAvg,
}

impl Entity {
    pub fn new(nice: i32) -> Self {
        Entity {
            load: LoadWeight::from_nice(nice),
            vruntime: 0,
            deadline: 0,
            vlag: 0,
            vprot: 0,
            slice: 0,
            custom_slice: false,
            exec_start: 0,
            sum_exec_runtime: 0,
            prev_sum_exec_runtime: 0,
            on_rq: false,
            sched_delayed: false,
            rel_deadline: false,
            runnable_weight: 0,
            avg: SchedAvg::default(),
            avg316: Default::default(),
        }
    }
}

/// Per-task statistics, named as in /proc/PID/sched and /proc/PID/status.
#[derive(Clone, Debug, Default)]
pub struct TaskStats {
    pub nvcsw: u64,
    pub nivcsw: u64,
    pub nr_switches: u64,
    pub nr_migrations: u64,
    pub nr_wakeups: u64,
    pub nr_wakeups_sync: u64,
    pub nr_wakeups_local: u64,
    pub nr_wakeups_remote: u64,
    pub wait_sum: u64,
    pub wait_max: u64,
    pub wait_count: u64,
    /// Runnable since (on a runqueue, not running); 0 when not waiting.
    pub wait_start: u64,
    /// When try_to_wake_up last claimed the task (sched_waking), until it
    /// next runs: wakeup → running latency is measured from here.
    pub waking_at: Option<u64>,
    /// sched_waking → running (the end of the switch to it), ns.
    pub wakeup_latency: crate::util::hist::Histogram,
    /// Time on a CPU as a trace shows it (sched_switch in → out), unlike
    /// sum_exec_runtime (which a skipped rq clock update stretches).
    pub oncpu_ns: u64,
    /// When the task last started running (sched_switch to it: the
    /// switch's start, after the interrupts pending then).
    pub oncpu_since: Option<u64>,
    /// Time runnable but not running as a trace shows it: from
    /// sched_waking, or a switch-out in state R, to the switch to it
    /// (unlike wait_sum, which starts at the enqueue).
    pub ready_ns: u64,
    pub ready_since: Option<u64>,
}

impl TaskStats {
    /// Time on a CPU up to `now`, the stint in progress included.
    pub fn oncpu_at(&self, now: u64) -> u64 {
        self.oncpu_ns + self.oncpu_since.map_or(0, |s| now.saturating_sub(s))
    }
}

/// TASK_COMM_LEN − 1: the bytes of a name the kernel keeps in `comm`.
pub const COMM_LEN: usize = 15;

pub struct Task {
    pub pid: u32,
    pub tgid: u32,
    /// The name as the kernel keeps it: cut to [`COMM_LEN`] bytes, as
    /// set_task_comm (and pthread_setname_np) do.
    pub comm: String,
    /// The full name the workload gave, when `comm` cut it.
    pub name: Option<Box<str>>,
    pub workload: usize,
    pub nice: i32,
    /// Scheduling policy and rt_priority (1-99 for FIFO/RR, else 0).
    pub policy: super::rt::Policy,
    pub rt_prio: u32,
    /// SCHED_RR time slice left (ns).
    pub rr_left: u64,
    pub state: TaskState,
    /// p->on_rq: queued on a runqueue (including a delayed dequeue).
    pub on_rq: bool,
    /// task_cpu(p)
    pub cpu: usize,
    /// The CPU whose caches hold the task's working set.
    pub last_ran_cpu: Option<usize>,
    /// Address space: tasks of one process share it, so switching between
    /// them skips the mm switch.
    pub mm: u32,
    /// CPUs the task may run on; None means all.
    pub allowed: Option<Vec<usize>>,
    pub se: Entity,
    /// struct sched_dl_entity (a SCHED_DEADLINE task's; unused otherwise).
    pub dl: super::deadline::DlEntity,
    /// The task group (cgroup) the task belongs to; 0 = the root.
    pub tg: usize,
    pub parent: Option<Pid>,
    /// CLONE_CHILD_CLEARTID: the futex word cleared and woken at exit
    /// (how pthread_join learns a thread ended).
    pub clear_child_tid: Option<usize>,
    /// Exited children not yet reaped by wait().
    pub zombies: u32,
    pub wakee_flips: u32,
    pub wakee_flip_decay_ts: u64,
    pub last_wakee: Option<Pid>,
    pub recent_used_cpu: usize,
    /// p->sched_remote_wakeup: queued on a wakelist after a migration.
    pub remote_wakeup: bool,
    /// The CPU whose hrtimer base holds this task's sleep timer.
    pub timer_cpu: usize,
    /// Its place in rq->cfs_tasks: when it last went to the head (see
    /// `cfs_tasks_to_head`); a smaller value is nearer the tail.
    pub cfs_list_seq: u64,
    pub prog: ProgState,
    pub rng: Rng,
    pub stats: TaskStats,
}

impl Task {
    pub fn is_allowed(&self, cpu: usize) -> bool {
        match &self.allowed {
            None => true,
            Some(v) => v.contains(&cpu),
        }
    }

    pub fn nr_cpus_allowed(&self, ncpus: usize) -> usize {
        self.allowed.as_ref().map_or(ncpus, |v| v.len())
    }

    /// Whether the task is called `n`: its comm, or the full name it was
    /// given.
    pub fn is_named(&self, n: &str) -> bool {
        self.comm == n || self.name.as_deref() == Some(n)
    }

    /// The full name it was given.
    pub fn full_name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.comm)
    }
}

/// `name` as the kernel keeps it in comm, and the full name if that cut it.
pub fn comm_of(name: &str) -> (String, Option<Box<str>>) {
    if name.len() <= COMM_LEN {
        return (name.to_string(), None);
    }
    let mut end = COMM_LEN;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    (name[..end].to_string(), Some(name.into()))
}
