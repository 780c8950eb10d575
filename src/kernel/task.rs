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

/// struct sched_entity (fair class). In `repr(C)` order: what enqueue,
/// pick, update_curr and PELT read on every switch comes first (160
/// bytes), the group-only and v3.16 fields last.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Entity {
    pub vruntime: i64,
    pub deadline: i64,
    pub vlag: i64,
    /// The vruntime up to which the entity keeps the CPU once picked
    /// (se->vprot, RUN_TO_PARITY's slice protection).
    pub vprot: i64,
    pub slice: u64,
    pub exec_start: u64,
    pub sum_exec_runtime: u64,
    pub prev_sum_exec_runtime: u64,
    pub load: LoadWeight,
    pub on_rq: bool,
    pub sched_delayed: bool,
    pub rel_deadline: bool,
    /// The slice was set by sched_setattr (sched_runtime), not the base one.
    pub custom_slice: bool,
    pub avg: SchedAvg,
    /// A group entity's runnable tasks (se->runnable_weight); unused for tasks.
    pub runnable_weight: u64,
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
/// In `repr(C)` order, by the event that touches them, so that each
/// touches few cache lines of a task that is cold on a big machine: a
/// wakeup the first 64 bytes, a switch (in or out) those and the next 64,
/// the switch's end the histogram.
#[derive(Clone, Debug, Default)]
#[repr(C)]
pub struct TaskStats {
    pub nr_wakeups: u64,
    /// When try_to_wake_up last claimed the task (sched_waking), until it
    /// next runs: wakeup → running latency is measured from here.
    pub waking_at: Option<u64>,
    pub ready_since: Option<u64>,
    /// Runnable since (on a runqueue, not running); 0 when not waiting.
    pub wait_start: u64,
    pub nvcsw: u64,
    pub nivcsw: u64,
    /// When the task last started running (sched_switch to it: the
    /// switch's start, after the interrupts pending then).
    pub oncpu_since: Option<u64>,
    /// Time on a CPU as a trace shows it (sched_switch in → out), unlike
    /// sum_exec_runtime (which a skipped rq clock update stretches).
    pub oncpu_ns: u64,
    /// Time runnable but not running as a trace shows it: from
    /// sched_waking, or a switch-out in state R, to the switch to it
    /// (unlike wait_sum, which starts at the enqueue).
    pub ready_ns: u64,
    pub wait_sum: u64,
    pub wait_max: u64,
    pub wait_count: u64,
    pub nr_switches: u64,
    /// sched_waking → running (the end of the switch to it), ns.
    pub wakeup_latency: crate::util::hist::Histogram,
    pub nr_wakeups_local: u64,
    pub nr_wakeups_remote: u64,
    pub nr_wakeups_sync: u64,
    pub nr_migrations: u64,
}

impl TaskStats {
    /// Time on a CPU up to `now`, the stint in progress included.
    pub fn oncpu_at(&self, now: u64) -> u64 {
        self.oncpu_ns + self.oncpu_since.map_or(0, |s| now.saturating_sub(s))
    }
}

/// TASK_COMM_LEN − 1: the bytes of a name the kernel keeps in `comm`.
pub const COMM_LEN: usize = 15;

/// struct task_struct. In `repr(C)` order, hot fields first: with
/// thousands of tasks each switch finds its tasks cold in the caches and
/// pays a miss per line it touches, so what the switch, wakeup and tick
/// paths touch shares as few 64-byte lines as it fits in (the program
/// state's first two, then 64 bytes of state and CPUs, the statistics, the
/// wakee fields, the entity, the random stream); names, the deadline
/// entity and the family fields come last. The test
/// `hot_fields_stay_on_their_lines` pins these offsets.
#[repr(C)]
pub struct Task {
    pub prog: ProgState,
    pub state: TaskState,
    /// p->on_rq: queued on a runqueue (including a delayed dequeue).
    pub on_rq: bool,
    /// Scheduling policy.
    pub policy: super::rt::Policy,
    /// p->sched_remote_wakeup: queued on a wakelist after a migration.
    pub remote_wakeup: bool,
    /// Address space: tasks of one process share it, so switching between
    /// them skips the mm switch.
    pub mm: u32,
    /// task_cpu(p)
    pub cpu: usize,
    /// The task group (cgroup) the task belongs to; 0 = the root.
    pub tg: usize,
    /// The CPU whose hrtimer base holds this task's sleep timer.
    pub timer_cpu: usize,
    pub recent_used_cpu: usize,
    /// Its place in rq->cfs_tasks: when it last went to the head (see
    /// `cfs_tasks_to_head`); a smaller value is nearer the tail.
    pub cfs_list_seq: u64,
    /// The CPU whose caches hold the task's working set.
    pub last_ran_cpu: Option<usize>,
    pub stats: TaskStats,
    pub wakee_flips: u32,
    pub pid: u32,
    pub wakee_flip_decay_ts: u64,
    pub last_wakee: Option<Pid>,
    pub se: Entity,
    pub rng: Rng,
    /// CPUs the task may run on; None means all.
    pub allowed: Option<Vec<usize>>,
    /// struct sched_dl_entity (a SCHED_DEADLINE task's; unused otherwise).
    pub dl: super::deadline::DlEntity,
    /// The name as the kernel keeps it: cut to [`COMM_LEN`] bytes, as
    /// set_task_comm (and pthread_setname_np) do.
    pub comm: String,
    /// The full name the workload gave, when `comm` cut it.
    pub name: Option<Box<str>>,
    pub workload: usize,
    /// SCHED_RR time slice left (ns).
    pub rr_left: u64,
    pub parent: Option<Pid>,
    /// CLONE_CHILD_CLEARTID: the futex word cleared and woken at exit
    /// (how pthread_join learns a thread ended).
    pub clear_child_tid: Option<usize>,
    /// rt_priority (1-99 for FIFO/RR, else 0).
    pub rt_prio: u32,
    pub nice: i32,
    pub tgid: u32,
    /// Exited children not yet reaped by wait().
    pub zombies: u32,
    /// PF_EXITING: in do_exit, past exit_signals (still TASK_RUNNING until
    /// do_task_dead).
    pub exiting: bool,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// The layout the doc comments of Task, TaskStats and Entity describe:
    /// a field added in the hot part, or a hot part moved off its line
    /// boundary, costs big machines a cache miss per touch.
    #[test]
    fn hot_fields_stay_on_their_lines() {
        assert_eq!(size_of::<Task>(), 1024);
        // The program state's first two lines, then one line from `state`
        // up to the statistics.
        assert_eq!(offset_of!(Task, prog), 0);
        assert_eq!(offset_of!(ProgState, marks), 128);
        assert_eq!(offset_of!(Task, state), 256);
        assert_eq!(offset_of!(Task, stats), 320);
        // A wakeup's line, a switch's line, then the histogram's.
        assert_eq!(offset_of!(TaskStats, oncpu_since), 64);
        assert_eq!(offset_of!(TaskStats, wakeup_latency), 128);
        assert_eq!(
            offset_of!(Task, stats) + size_of::<TaskStats>(),
            offset_of!(Task, wakee_flips)
        );
        // The entity's hot 160 bytes on three lines.
        assert_eq!(offset_of!(Task, se) % 64, 0);
        assert_eq!(offset_of!(Entity, runnable_weight), 160);
        assert!(offset_of!(Task, allowed) + size_of::<Option<Vec<usize>>>() <= 13 * 64);
    }
}
