//! A task's program as the kernel model sees it: the small instruction set
//! every workload compiles to (system calls and user-mode work), the
//! interpreter's per-task state, and what the interpreter asks of the CPU.
//! The interpreter itself (`Kernel::step`) is the workload layer's
//! (workload/program.rs); the types live here so that `Task` and the
//! kernel's sleep/wake paths need nothing from the layers above.

use super::completion::WaitHow;
use super::preempt::{ExecMode, Point};
use super::pthread::PthreadOp;
use super::task::Pid;
use super::wait::WaitQueueRef;
use crate::engine::Rng;
use std::rc::Rc;

/// A duration drawn per use from a distribution (ns).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dist {
    Fixed(u64),
    Uniform(u64, u64),
    /// Exponential with this mean.
    Exp(u64),
    /// Log-normal with this median and shape σ (in thousandths).
    LogNormal {
        median: u64,
        sigma_milli: u32,
    },
}

impl Dist {
    /// The typical longest draw: the value, the range's top, or the mean.
    pub fn longest(&self) -> u64 {
        match *self {
            Dist::Fixed(v) | Dist::Uniform(_, v) | Dist::Exp(v) => v,
            // The mean, median·e^(σ²/2).
            Dist::LogNormal {
                median,
                sigma_milli,
            } => {
                let s = sigma_milli as f64 / 1000.0;
                (median as f64 * (s * s / 2.0).exp()) as u64
            }
        }
    }

    pub fn sample(&self, rng: &mut Rng) -> u64 {
        match *self {
            Dist::Fixed(v) => v,
            Dist::Uniform(lo, hi) => rng.range(lo, hi),
            Dist::Exp(mean) => (-(1.0 - rng.next_f64()).ln() * mean as f64) as u64,
            Dist::LogNormal {
                median,
                sigma_milli,
            } => {
                // Box-Muller: one standard normal from two uniforms.
                let (u1, u2) = (1.0 - rng.next_f64(), rng.next_f64());
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                (median as f64 * (z * sigma_milli as f64 / 1000.0).exp()) as u64
            }
        }
    }
}

/// A point in a benchmark's timeline that its result is computed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// gettimeofday(start)
    Start,
    /// gettimeofday(stop)
    Stop,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// Compute in user mode.
    Run(Dist),
    /// Trace replay: a recorded burst of `ns` on the CPU, less what the
    /// task owes back (`ProgState::debt_ns`: the select_idle_cpu scans the
    /// model charged it as a waker, interrupts it took outside a burst's
    /// user part), at least 1 ns; what the burst cannot give back waits
    /// for the next. The recorded burst already holds the recording
    /// kernel's own work, which the model charges again.
    RunBurst(u64),
    /// Work in kernel mode (a syscall's long loop): a cond_resched() call
    /// every `cond_resched` ns of it (0 = none), or the whole section with
    /// preemption disabled (`atomic`).
    KernelRun {
        dist: Dist,
        cond_resched: u64,
        atomic: bool,
    },
    /// nanosleep: an hrtimer wakes the task.
    Sleep(Dist),
    /// write(2) of `bytes` ≤ PIPE_BUF to a pipe.
    PipeWrite {
        pipe: usize,
        bytes: u32,
    },
    /// read(2) from a pipe until `bytes` have arrived.
    PipeRead {
        pipe: usize,
        bytes: u32,
    },
    /// poll(2) for POLLIN on a pipe.
    PollIn {
        pipe: usize,
    },
    /// send(2) of `bytes` on a unix stream socket.
    SockSend {
        sock: usize,
        bytes: u32,
    },
    /// recv(2) until `bytes` have arrived.
    SockRecv {
        sock: usize,
        bytes: u32,
    },
    /// fork(2)/clone(2) the given (pre-built) task.
    Fork {
        child: Pid,
    },
    /// Causal trace replay: fork(2) at no cost of its own (the recorded
    /// bursts hold the fork's work, as recorded).
    ForkTraced {
        child: Pid,
    },
    /// fork(2) the next child of a fork pool (an rt-app fork event, which
    /// creates a new thread each time it runs); nothing once it is empty.
    ForkNext {
        pool: usize,
    },
    /// wait(2) for one child to exit and reap it.
    WaitChild,
    /// A user-space loop around FUTEX_WAIT: sleep while the word is `val`.
    FutexWait {
        futex: usize,
        val: u32,
    },
    /// Store `val` in the word, then FUTEX_WAKE up to `nr` waiters.
    FutexWake {
        futex: usize,
        val: u32,
        nr: u32,
    },
    /// pthread_barrier_wait
    Barrier {
        barrier: usize,
    },
    /// sched_yield(2)
    Yield,
    /// clock_nanosleep(TIMER_ABSTIME) to cyclictest thread `thread`'s next
    /// deadline (set one interval from now the first time).
    CyclicSleep {
        thread: usize,
    },
    /// cyclictest: record how late the wakeup was and step the deadline.
    CyclicWoke {
        thread: usize,
    },
    /// Record a benchmark timestamp.
    Mark(Mark),
    /// Store `val` in a futex word, waking nobody (a user-space store).
    FutexSet {
        futex: usize,
        val: u32,
    },
    /// schbench's fpost: CAS the word BLOCKED (0) → RUNNING (1) and, if
    /// that changed it, FUTEX_WAKE one waiter.
    Post {
        futex: usize,
    },
    /// xlist_add: push this task on shared list `list`.
    Enlist {
        list: usize,
    },
    /// xlist_wake_all: splice `list`, stamp every task on it with one
    /// timestamp (stamp slot 0), then fpost each one's futex in turn.
    WakeList {
        list: usize,
    },
    /// Remember now in this task's stamp `slot`.
    Stamp {
        slot: usize,
    },
    /// Record now − stamp `slot`, in µs, in histogram `hist` (unless the
    /// histogram's warmup is still running).
    Latency {
        slot: usize,
        hist: usize,
    },
    /// pthread_spin_lock on this CPU's lock of set `set` (schbench's
    /// per-CPU lock): spin, burning CPU, while another task holds it.
    CpuLock {
        set: usize,
    },
    CpuUnlock {
        set: usize,
    },
    /// Count one iteration of a benchmark loop.
    Count,
    /// schbench -R message thread: queue `count` requests round-robin over
    /// the workers of `list` (stamping and posting each; a worker with more
    /// than 128 pending is skipped after a 100 µs nap).
    RpsBurst {
        list: usize,
        count: u32,
    },
    /// schbench -R worker: take a pending request (its queue time becomes
    /// stamp 1); with none, wait on futex `own` until one is posted, and
    /// record the wakeup latency in `wake_hist`.
    TakeRequest {
        own: usize,
        wake_hist: usize,
    },
    /// Sleep until `after` ns past this task's stamp `slot`, if still ahead.
    SleepUntil {
        slot: usize,
        after: u64,
    },
    /// vfork(2): clone with CLONE_VFORK|CLONE_VM; the child's exec or exit
    /// completes `done`, which the parent waits on (next op).
    Vfork {
        child: Pid,
        done: usize,
    },
    /// clone(2) with CLONE_VM (the child shares the address space).
    CloneVm {
        child: Pid,
    },
    /// execve(2): mm_release of the old address space, a new one.
    Exec,
    /// wait_for_completion and its variants (in the kernel: no syscall).
    WaitForCompletion {
        c: usize,
        how: WaitHow,
    },
    /// complete() or complete_all() from process context.
    Complete {
        c: usize,
        all: bool,
    },
    /// reinit_completion
    ReinitCompletion {
        c: usize,
    },
    /// try_wait_for_completion (the result is counted).
    TryWaitForCompletion {
        c: usize,
    },
    /// completion_done (the result is counted).
    CompletionDone {
        c: usize,
    },
    /// Submit an I/O to a device: its interrupt follows after its latency.
    StartIo {
        dev: usize,
    },
    /// kill(2) of another task (fatal = SIGKILL).
    Signal {
        target: Pid,
        fatal: bool,
    },
    /// A kthread operation (kthread.c, kthreadd): an in-kernel call.
    Kthread(KthreadOp),
    /// Repeat the ops up to the matching EndLoop `count` times (0 = forever).
    Loop {
        count: u64,
    },
    EndLoop,
    /// Leave the innermost loop for op `to` once `ns` have passed since
    /// the task's first Start mark (a benchmark's --timeout).
    BreakAfter {
        ns: u64,
        to: usize,
    },
    /// Start a busy slice of a duty cycle: note wall and CPU time.
    SliceStart,
    /// End a busy slice and sleep so that CPU time is `load` % of the
    /// cycle (stress-ng --cpu-load's self-correcting sleep).
    SliceEnd {
        load: u32,
    },
    /// exit(2)
    Exit,
    /// Trace replay: the trace ends with the task alive. It leaves the
    /// simulation as if it exited, but at no cost: no exit was recorded.
    TraceEnd,
    /// Trace replay: sleep until the matching `PostWake` (a futex word per
    /// recorded waker→wakee edge), at no cost of its own (the recorded
    /// bursts include the syscalls).
    AwaitWake {
        futex: usize,
        /// Wait until the word counts this many posts.
        need: u32,
    },
    /// Trace replay: perform the recorded wakeups of the `n` edges whose
    /// words begin at `futex`, in one call (__wake_up_common waking
    /// several waiters of one wait queue).
    PostWake {
        futex: usize,
        n: u32,
    },
    /// Causal trace replay: a write to a queue that holds `written` −
    /// `read` bytes (two counting words): it waits while they are
    /// `full` or more, and once blocked sleeps until a read leaves at
    /// most `level` (the kernel's writer wakeup: a quarter of sk_sndbuf
    /// for a UNIX socket, a freed page for a pipe).
    AwaitRoom {
        written: usize,
        read: usize,
        full: u32,
        level: u32,
    },
    /// Causal trace replay: a recorded write of `bytes` to the queue
    /// whose byte count is word `futex`; it wakes each reader waiting
    /// (`AwaitWake`) for a count now reached.
    PostBytes {
        futex: usize,
        bytes: u32,
    },
    /// A futex-based pthread operation (rt-app workloads).
    Pthread(PthreadOp),
    /// sched_setaffinity(0, ...) to CPU set `set` of `Shm::cpusets`.
    SetAffinity {
        set: usize,
    },
    /// Write its own tid to task group `tg`'s cgroup.procs.
    MoveGroup {
        tg: usize,
    },
    /// sched_setscheduler(0, ...) (setpriority for the nice value): the
    /// policy (None: keep the current one) and the RT priority or nice.
    SetScheduler {
        policy: Option<super::rt::Policy>,
        prio: i32,
    },
}

/// The kthread ops: kthread_create/park/stop and kthreadd's side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KthreadOp {
    /// kthread_create_on_node's request to kthreadd for thread `k`, whose
    /// exit completes `exited` (the caller then waits on k's `done`).
    Create {
        k: Pid,
        exited: usize,
    },
    /// kthreadd's loop body: fork the next requested thread, or sleep.
    Kthreadd,
    /// set_current_state + schedule() until wake_up_process.
    SleepUntilWoken,
    /// wake_up_process (kthread_run's wakeup).
    WakeProcess {
        target: Pid,
    },
    /// kthread_park (then wait on the thread's `parked`).
    Park {
        k: Pid,
    },
    Unpark {
        k: Pid,
    },
    /// kthread_stop (then wait on the thread's `exited`).
    Stop {
        k: Pid,
    },
    /// In a kthread: exit if kthread_should_stop().
    ShouldStop,
    /// In a kthread: __kthread_parkme, completing `parked` and sleeping
    /// while the SHOULD_PARK bit is set.
    Parkme {
        parked: usize,
    },
}

/// What a task sleeps on, for diagnostics and the lost-wakeup check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocked {
    Nothing,
    Queue(WaitQueueRef),
    Timer,
    Child,
    /// In wait_for_completion on this completion.
    Completion(usize),
    /// In schedule() until wake_up_process (kthreads, kthreadd).
    Scheduled,
}

/// The interpreter state of one task. The fields every event reads and
/// writes come first and share one cache line (`repr(C)`, 64-byte
/// aligned), those of loops, sleeps and runs the second: with hundreds of
/// tasks, a cache miss per touched line is most of what interpreting an op
/// costs.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct ProgState {
    pub ops: Rc<[Op]>,
    pub pc: usize,
    /// Work (ns at full speed) left in the current run segment.
    pub work_left: u64,
    /// Kernel work charged to the task (wakeups it did, rq-lock waits), run
    /// before its program continues.
    pub overhead: u64,
    /// Bytes moved so far by the current read.
    pub progress: u32,
    /// 0: the op's cost has not been charged yet; 1: charged, effect
    /// pending; 2: a barrier was reached, waiting for release.
    pub phase: u8,
    /// The task slept (and was woken) inside the current op.
    pub woken: bool,
    /// Woken and not yet charged for the wait's own kernel work (the
    /// pipe/socket wait cycle).
    pub wait_cycle_due: bool,
    /// User or kernel mode, for the preemption points.
    pub mode: ExecMode,
    /// (index of the Loop op, iterations left; u64::MAX = forever)
    pub loops: Vec<(usize, u64)>,
    pub blocked: Blocked,
    /// User-mode work asked for by Run ops so far (ns at full speed).
    pub user_ns: u64,
    /// Kernel-mode work left in the current KernelRun op.
    pub kernel_left: u64,
    /// Iterations counted by Count ops.
    pub count: u64,
    /// Timestamps recorded by Mark ops.
    pub marks: Vec<(Mark, u64)>,
    pub duty: Duty,
    /// Kernel time the model charged the task that its recorded bursts
    /// already hold (the select_idle_cpu scans of its wakeups, and the
    /// interrupts it took outside a burst's user part), not yet taken out
    /// of one: its next `RunBurst`s give it back (read by replay only).
    pub debt_ns: u64,
}

/// The duty-cycle state of SliceStart/SliceEnd (stress-ng's cpu-load loop).
#[derive(Clone, Debug, Default)]
pub struct Duty {
    /// Wall and CPU time at the slice start.
    pub wall0: u64,
    pub cpu0: u64,
    /// Oversleep of the previous sleep, carried into the next delay (ns).
    pub bias: i64,
    /// When the last sleep began and how long it asked for (0 = none).
    pub sleep_from: u64,
    pub slept_delay: i64,
    /// Busy slices completed.
    pub slices: u64,
}

impl ProgState {
    /// The kernel work the task owes (interrupts taken, wakeups it made)
    /// becomes its next segment, all of it in kernel mode.
    pub fn run_overhead(&mut self) {
        self.work_left = std::mem::take(&mut self.overhead);
        self.mode.kern_tail = u64::MAX;
        self.mode.atomic = false;
    }

    /// Whether the current segment is a replayed burst's (`Op::RunBurst`,
    /// the op just passed).
    pub fn in_burst(&self) -> bool {
        self.pc > 0 && matches!(self.ops.get(self.pc - 1), Some(Op::RunBurst(_)))
    }

    pub fn new(ops: Rc<[Op]>) -> Self {
        ProgState {
            ops,
            pc: 0,
            work_left: 0,
            overhead: 0,
            phase: 0,
            progress: 0,
            loops: Vec::new(),
            blocked: Blocked::Nothing,
            woken: false,
            wait_cycle_due: false,
            marks: Vec::new(),
            count: 0,
            kernel_left: 0,
            mode: ExecMode::default(),
            user_ns: 0,
            duty: Duty::default(),
            debt_ns: 0,
        }
    }

    /// Called when the task is woken.
    pub fn wake(&mut self) {
        self.wait_cycle_due = matches!(self.blocked, Blocked::Queue(_));
        self.blocked = Blocked::Nothing;
        self.woken = true;
    }

    pub fn blocked_on(&self) -> String {
        match self.blocked {
            Blocked::Nothing => "runnable".into(),
            Blocked::Queue(q) => format!("waiting on {q:?}"),
            Blocked::Timer => "sleeping".into(),
            Blocked::Child => "in wait()".into(),
            Blocked::Completion(c) => format!("waiting for completion {c}"),
            Blocked::Scheduled => "asleep until wake_up_process".into(),
        }
    }

    /// The op is done: a syscall returns to user space here.
    pub fn advance(&mut self) {
        self.pc += 1;
        self.phase = 0;
        self.progress = 0;
        self.woken = false;
        self.wait_cycle_due = false;
        self.mode.at = Point::User;
    }
}

/// What the interpreter asks the CPU to do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Execute the task's `prog.work_left`.
    Run,
    /// The task went to sleep.
    Block,
    /// sched_yield()
    Yield,
    /// A pending need-resched is honoured where the task now is.
    Preempt,
}
