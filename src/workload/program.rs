//! Task programs: the small instruction set every workload compiles to, and
//! the interpreter that runs one task's program inside the kernel model.
//!
//! An operation first charges its kernel cost (syscall entry/exit, copies)
//! as a run segment, then takes effect; if the effect must wait (an empty
//! pipe, a full socket), the task sleeps and retries the effect when woken.

use crate::engine::Rng;
use crate::kernel::completion::WaitHow;
use crate::kernel::pipe::Io;
use crate::kernel::preempt::{ExecMode, Point};
use crate::kernel::task::{Pid, TaskState};
use crate::kernel::wait::WaitQueueRef;
use crate::kernel::Kernel;
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
    /// Record now − stamp `slot`, in µs, in histogram `hist`.
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
    /// kthread_create_on_node's request to kthreadd for thread `k`, whose
    /// exit completes `exited` (the caller then waits on k's `done`).
    KthreadCreate {
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
    KthreadPark {
        k: Pid,
    },
    KthreadUnpark {
        k: Pid,
    },
    /// kthread_stop (then wait on the thread's `exited`).
    KthreadStop {
        k: Pid,
    },
    /// In a kthread: exit if kthread_should_stop().
    KthreadShouldStop,
    /// In a kthread: __kthread_parkme, completing `parked` and sleeping
    /// while the SHOULD_PARK bit is set.
    KthreadParkme {
        parked: usize,
    },
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
    /// Trace replay: sleep until the matching `PostWake` (a futex word per
    /// recorded waker→wakee edge), at no cost of its own (the recorded
    /// bursts include the syscalls).
    AwaitWake {
        futex: usize,
    },
    /// Trace replay: perform the recorded wakeup of edge `futex`.
    PostWake {
        futex: usize,
    },
    /// A futex-based pthread operation (rt-app workloads).
    Pthread(crate::kernel::pthread::PthreadOp),
}

/// How long a spinner burns between two looks at a held lock: a few
/// hundred trylock + pause rounds (an estimate; pause is ~40–140 cycles).
const SPIN_CHUNK_NS: u64 = 1000;

/// schbench -R skips a worker with more requests than this queued.
const RPS_MAX_PENDING: usize = 128;

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

/// The interpreter state of one task.
#[derive(Clone, Debug)]
pub struct ProgState {
    pub ops: Rc<[Op]>,
    pub pc: usize,
    /// 0: the op's cost has not been charged yet; 1: charged, effect
    /// pending; 2: a barrier was reached, waiting for release.
    pub phase: u8,
    /// Bytes moved so far by the current read.
    pub progress: u32,
    /// (index of the Loop op, iterations left; u64::MAX = forever)
    pub loops: Vec<(usize, u64)>,
    pub blocked: Blocked,
    /// The task slept (and was woken) inside the current op.
    pub woken: bool,
    /// Timestamps recorded by Mark ops.
    pub marks: Vec<(Mark, u64)>,
    /// Iterations counted by Count ops.
    pub count: u64,
    /// Kernel-mode work left in the current KernelRun op.
    pub kernel_left: u64,
    /// User or kernel mode, for the preemption points.
    pub mode: ExecMode,
    /// User-mode work asked for by Run ops so far (ns at full speed).
    pub user_ns: u64,
    pub duty: Duty,
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
    pub fn new(ops: Rc<[Op]>) -> Self {
        ProgState {
            ops,
            pc: 0,
            phase: 0,
            progress: 0,
            loops: Vec::new(),
            blocked: Blocked::Nothing,
            woken: false,
            marks: Vec::new(),
            count: 0,
            kernel_left: 0,
            mode: ExecMode::default(),
            user_ns: 0,
            duty: Duty::default(),
        }
    }

    /// Called when the task is woken.
    pub fn wake(&mut self) {
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
    fn advance(&mut self) {
        self.pc += 1;
        self.phase = 0;
        self.progress = 0;
        self.woken = false;
        self.mode.at = Point::User;
    }
}

/// What the interpreter asks the CPU to do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Execute `work_left` of the task.
    Run,
    /// The task went to sleep.
    Block,
    /// sched_yield()
    Yield,
    /// A pending need-resched is honoured where the task now is.
    Preempt,
}

impl Kernel {
    /// Charge `ns` of kernel work to `p` and ask the CPU to run it; the
    /// task is then at `at`.
    fn charge(&mut self, p: Pid, ns: u64, at: Point) -> Action {
        self.charge_split(p, ns, u64::MAX, at)
    }

    /// Charge `ns` of work whose last `kern_tail` ns run in kernel mode.
    fn charge_split(&mut self, p: Pid, ns: u64, kern_tail: u64, at: Point) -> Action {
        let t = &mut self.tasks[p];
        t.work_left = ns.max(1);
        t.prog.mode = ExecMode {
            at,
            kern_tail,
            atomic: false,
        };
        Action::Run
    }

    /// Interpret `p`'s program on `cpu` until it needs the CPU for a while
    /// or sleeps.
    pub fn step(&mut self, p: Pid, cpu: usize) -> Action {
        loop {
            let t = &mut self.tasks[p];
            if t.work_left > 0 {
                return Action::Run;
            }
            if t.overhead > 0 {
                // Kernel work (wakeups done, interrupts) before the point.
                t.work_left = std::mem::take(&mut t.overhead);
                t.prog.mode.kern_tail = u64::MAX;
                t.prog.mode.atomic = false;
                return Action::Run;
            }
            if self.preempt_point(cpu, p) {
                return Action::Preempt;
            }
            let t = &self.tasks[p];
            let op = t.prog.ops.get(t.prog.pc).copied().unwrap_or(Op::Exit);
            if let Some(a) = self.exec(p, cpu, op) {
                return a;
            }
        }
    }

    /// The kernel time an op costs before it takes effect (syscall entry
    /// and exit, copies, fork/exit work); None for pure user-space ops.
    fn op_cost(&self, p: Pid, op: &Op) -> Option<u64> {
        use crate::workload::fork::{EXEC_FORK_PCT, SHARED_MM_EXIT_PCT, SHARED_MM_FORK_PCT};
        let c = &self.machine.cost;
        let copy = |bytes: u32, ps: u64| c.syscall_ns + bytes as u64 * ps / 1000;
        match *op {
            Op::Run(_)
            | Op::KernelRun { .. }
            | Op::Mark(_)
            | Op::Loop { .. }
            | Op::EndLoop
            | Op::FutexSet { .. }
            | Op::Post { .. }
            | Op::Enlist { .. }
            | Op::WakeList { .. }
            | Op::Stamp { .. }
            | Op::Latency { .. }
            | Op::CpuLock { .. }
            | Op::CpuUnlock { .. }
            | Op::RpsBurst { .. }
            | Op::TakeRequest { .. }
            | Op::SleepUntil { .. }
            | Op::Count
            | Op::CyclicWoke { .. }
            | Op::AwaitWake { .. }
            | Op::PostWake { .. }
            | Op::Pthread(_) => None,
            Op::WaitForCompletion { .. }
            | Op::Complete { .. }
            | Op::ReinitCompletion { .. }
            | Op::TryWaitForCompletion { .. }
            | Op::CompletionDone { .. }
            | Op::KthreadCreate { .. }
            | Op::Kthreadd
            | Op::SleepUntilWoken
            | Op::WakeProcess { .. }
            | Op::KthreadPark { .. }
            | Op::KthreadUnpark { .. }
            | Op::KthreadStop { .. }
            | Op::KthreadShouldStop
            | Op::KthreadParkme { .. } => None,
            Op::StartIo { .. } | Op::Signal { .. } => Some(c.syscall_ns),
            Op::Vfork { .. } | Op::CloneVm { .. } => Some(c.fork_ns * SHARED_MM_FORK_PCT / 100),
            Op::Exec => Some(c.fork_ns * EXEC_FORK_PCT / 100),
            Op::Exit if self.tasks[p].mm != self.tasks[p].pid => {
                Some(c.exit_ns * SHARED_MM_EXIT_PCT / 100)
            }
            Op::BreakAfter { .. } | Op::SliceStart => None,
            Op::SliceEnd { load } if load >= 100 => None,
            Op::SliceEnd { .. } => Some(c.syscall_ns),
            Op::Sleep(_)
            | Op::PollIn { .. }
            | Op::WaitChild
            | Op::FutexWait { .. }
            | Op::FutexWake { .. }
            | Op::Barrier { .. }
            | Op::Yield
            | Op::CyclicSleep { .. } => Some(c.syscall_ns),
            Op::PipeWrite { bytes, .. } | Op::PipeRead { bytes, .. } => {
                Some(copy(bytes, c.pipe_copy_ps_per_byte) + c.pipe_op_ns)
            }
            Op::SockSend { bytes, .. } | Op::SockRecv { bytes, .. } => {
                Some(copy(bytes, c.socket_copy_ps_per_byte) + c.socket_skb_ns / 2)
            }
            Op::Fork { .. } => Some(c.fork_ns),
            Op::Exit => Some(c.exit_ns),
        }
    }

    /// Execute one op: charge its cost first (phase 0), then its effect
    /// (phase 1, retried after a wakeup if it blocked). None means "go on
    /// with the next op".
    fn exec(&mut self, p: Pid, cpu: usize, op: Op) -> Option<Action> {
        if self.tasks[p].prog.phase == 0 {
            if let Some(ns) = self.op_cost(p, &op) {
                self.tasks[p].prog.phase = 1;
                let ns = self.vary(ns);
                return Some(self.charge(p, ns, Point::MightSleep));
            }
        }
        match op {
            Op::Run(d) => {
                let ns = d.sample(&mut self.tasks[p].rng);
                self.tasks[p].prog.user_ns += ns;
                self.tasks[p].prog.advance();
                // Fold the next op's entry cost into this segment: the CPU
                // goes straight from computing into the syscall.
                let t = &self.tasks[p];
                let next = t.prog.ops.get(t.prog.pc).copied().unwrap_or(Op::Exit);
                if let Some(cost) = self.op_cost(p, &next) {
                    self.tasks[p].prog.phase = 1;
                    let cost = self.vary(cost);
                    return Some(self.charge_split(p, ns + cost, cost, Point::MightSleep));
                }
                Some(self.charge_split(p, ns, 0, Point::User))
            }
            Op::KernelRun {
                dist,
                cond_resched,
                atomic,
            } => self.kernel_run(p, dist, cond_resched, atomic),
            Op::CyclicSleep { thread } => {
                let th = &mut self.shm.cyclic[thread];
                if th.next == 0 {
                    th.next = self.now + th.interval;
                }
                let at = th.next;
                self.tasks[p].prog.advance();
                if at <= self.now {
                    return None;
                }
                self.hrtimer_sleep_until(p, cpu, at);
                Some(Action::Block)
            }
            Op::CyclicWoke { thread } => {
                self.shm.cyclic[thread].woke(self.now);
                self.tasks[p].prog.advance();
                None
            }
            Op::Sleep(d) => {
                let ns = d.sample(&mut self.tasks[p].rng);
                self.tasks[p].prog.advance();
                self.hrtimer_sleep(p, cpu, ns);
                Some(Action::Block)
            }
            Op::PipeWrite { pipe, bytes } => {
                let io = self.pipe_write(p, cpu, pipe, bytes);
                self.io_done(p, io, bytes)
            }
            Op::PipeRead { pipe, bytes } => {
                let want = bytes - self.tasks[p].prog.progress;
                let io = self.pipe_read(p, cpu, pipe, want);
                self.io_done(p, io, bytes)
            }
            Op::PollIn { pipe } => {
                let io = self.pipe_poll_in(p, pipe);
                self.io_done(p, io, 0)
            }
            Op::SockSend { sock, bytes } => {
                let io = self.unix_send(p, cpu, sock, bytes);
                self.io_done(p, io, bytes)
            }
            Op::SockRecv { sock, bytes } => {
                let want = bytes - self.tasks[p].prog.progress;
                let io = self.unix_recv(p, cpu, sock, want);
                self.io_done(p, io, bytes)
            }
            Op::Fork { child } => {
                self.tasks[p].prog.advance();
                self.tasks[child].parent = Some(p);
                self.trace_fork(p, child, cpu);
                self.wake_up_new_task(child, cpu);
                None
            }
            Op::WaitChild => {
                let t = &mut self.tasks[p];
                if t.zombies > 0 {
                    t.zombies -= 1;
                    t.prog.advance();
                    return None;
                }
                t.state = TaskState::Interruptible;
                t.prog.blocked = Blocked::Child;
                Some(Action::Block)
            }
            Op::FutexWait { futex, val } => {
                let io = self.futex_wait(p, futex, val);
                self.io_done(p, io, 0)
            }
            Op::FutexWake { futex, val, nr } => {
                self.tasks[p].prog.advance();
                self.futex_store_wake(futex, val, nr as usize, cpu, p);
                None
            }
            Op::Barrier { barrier } => {
                if self.tasks[p].prog.phase == 1 {
                    self.tasks[p].prog.phase = 2;
                    if self.barrier_arrive(p, barrier, cpu) == Io::Block {
                        return Some(Action::Block);
                    }
                } else if !self.barrier_released(p, barrier) {
                    self.tasks[p].state = TaskState::Interruptible;
                    return Some(Action::Block);
                }
                self.tasks[p].prog.advance();
                None
            }
            Op::Yield => {
                self.tasks[p].prog.advance();
                Some(Action::Yield)
            }
            Op::FutexSet { futex, val } => {
                self.futexes[futex].val = val;
                self.tasks[p].prog.advance();
                None
            }
            Op::Post { futex } => self.fpost(p, cpu, futex),
            Op::Enlist { list } => {
                self.shm.lists[list].push(p);
                self.tasks[p].prog.advance();
                None
            }
            Op::WakeList { list } => self.wake_list_all(p, cpu, list),
            Op::Stamp { slot } => {
                self.shm.stamp(p, slot, self.now);
                self.tasks[p].prog.advance();
                None
            }
            Op::Latency { slot, hist } => {
                let us = (self.now - self.shm.stamp_of(p, slot)) / 1000;
                self.shm.hists[hist].add(us);
                self.tasks[p].prog.advance();
                None
            }
            Op::CpuLock { set } => self.cpu_lock(p, cpu, set),
            Op::CpuUnlock { set } => {
                let held = self.shm.stamp_of(p, 2) as usize;
                self.shm.cpu_locks[set][held] = None;
                self.tasks[p].prog.advance();
                None
            }
            Op::RpsBurst { list, count } => self.rps_burst(p, cpu, list, count),
            Op::TakeRequest { own, wake_hist } => self.take_request(p, own, wake_hist),
            Op::SleepUntil { slot, after } => {
                let at = self.shm.stamp_of(p, slot) + after;
                self.tasks[p].prog.advance();
                if at <= self.now {
                    return None;
                }
                self.hrtimer_sleep(p, cpu, at - self.now);
                Some(Action::Block)
            }
            Op::Count => {
                self.tasks[p].prog.count += 1;
                self.tasks[p].prog.advance();
                None
            }
            Op::Mark(m) => {
                let t = &mut self.tasks[p];
                t.prog.marks.push((m, self.now));
                t.prog.advance();
                None
            }
            Op::Loop { count } => {
                let t = &mut self.tasks[p];
                let left = if count == 0 { u64::MAX } else { count };
                t.prog.loops.push((t.prog.pc, left));
                t.prog.advance();
                None
            }
            Op::EndLoop => {
                let t = &mut self.tasks[p];
                let top = t.prog.loops.last_mut().expect("EndLoop without Loop");
                if top.1 != u64::MAX {
                    top.1 -= 1;
                }
                if top.1 == 0 {
                    t.prog.loops.pop();
                    t.prog.advance();
                } else {
                    t.prog.pc = top.0 + 1;
                    t.prog.phase = 0;
                }
                None
            }
            Op::BreakAfter { ns, to } => {
                let t = &mut self.tasks[p];
                let start = t.prog.marks.iter().find(|m| m.0 == Mark::Start);
                if start.is_some_and(|m| self.now >= m.1 + ns) {
                    t.prog.loops.pop();
                    t.prog.pc = to;
                    t.prog.phase = 0;
                } else {
                    t.prog.advance();
                }
                None
            }
            Op::SliceStart => {
                let cpu_time = self.task_cpu_time(p);
                let d = &mut self.tasks[p].prog.duty;
                if d.sleep_from != 0 {
                    d.bias = (self.now - d.sleep_from) as i64 - d.slept_delay;
                    d.sleep_from = 0;
                }
                d.wall0 = self.now;
                d.cpu0 = cpu_time;
                self.tasks[p].prog.advance();
                None
            }
            Op::SliceEnd { load } => self.slice_end(p, cpu, load),
            Op::Exit => {
                self.exit_task(p);
                Some(Action::Block)
            }
            Op::KthreadCreate { .. }
            | Op::Kthreadd
            | Op::SleepUntilWoken
            | Op::WakeProcess { .. }
            | Op::KthreadPark { .. }
            | Op::KthreadUnpark { .. }
            | Op::KthreadStop { .. }
            | Op::KthreadShouldStop
            | Op::KthreadParkme { .. } => self.exec_kthread_op(p, cpu, op),
            Op::AwaitWake { futex } => {
                let io = self.futex_wait(p, futex, 0);
                self.io_done(p, io, 0)
            }
            Op::Pthread(op) => {
                let io = self.pthread_op(p, cpu, op);
                self.io_done(p, io, 0)
            }
            Op::PostWake { futex } => {
                self.tasks[p].prog.advance();
                self.futexes[futex].val = 1;
                let q = crate::kernel::wait::WaitQueueRef::Futex(futex);
                self.wake_up(q, 1, true, cpu, p);
                None
            }
            _ => self.exec_completion_op(p, cpu, op),
        }
    }

    /// The kthread ops.
    fn exec_kthread_op(&mut self, p: Pid, cpu: usize, op: Op) -> Option<Action> {
        match op {
            Op::KthreadCreate { k, exited } => self.kthread_create(k, exited, cpu, p),
            Op::Kthreadd => {
                self.tasks[p].prog.advance();
                if self.kthreadd_fork_next(cpu, p) {
                    return Some(self.charge(p, self.machine.cost.fork_ns, Point::MightSleep));
                }
                if self.sleep_until_woken(p) {
                    return Some(Action::Block);
                }
                return None;
            }
            Op::SleepUntilWoken => {
                self.tasks[p].prog.advance();
                return self.sleep_until_woken(p).then_some(Action::Block);
            }
            Op::WakeProcess { target } => self.wake_up_process(target, cpu, p),
            Op::KthreadPark { k } => self.kthread_signal(k, Some(true), false, cpu, p),
            Op::KthreadUnpark { k } => self.kthread_signal(k, Some(false), false, cpu, p),
            Op::KthreadStop { k } => self.kthread_signal(k, None, true, cpu, p),
            Op::KthreadShouldStop => {
                if self.kthread_flags(p).should_stop {
                    let prog = &mut self.tasks[p].prog;
                    prog.pc = prog.ops.len();
                    prog.phase = 0;
                    return None;
                }
            }
            Op::KthreadParkme { parked } => {
                if self.kthread_flags(p).should_park {
                    // Complete `parked` once, then sleep while parked.
                    if self.tasks[p].prog.phase != 2 {
                        self.tasks[p].prog.phase = 2;
                        self.complete_from_task(parked, false, cpu, p);
                    }
                    return self.sleep_until_woken(p).then_some(Action::Block);
                }
            }
            _ => unreachable!("not a kthread op: {op:?}"),
        }
        self.tasks[p].prog.advance();
        None
    }

    /// fpost's compare-and-swap: flip futex `f` BLOCKED → RUNNING and pay
    /// the FUTEX_WAKE syscall, moving to `phase` for the wake; None when
    /// the word was already RUNNING (no syscall).
    fn fpost_flip(&mut self, p: Pid, f: usize, phase: u8) -> Option<Action> {
        if self.futexes[f].val != 0 {
            return None;
        }
        self.futexes[f].val = 1;
        self.tasks[p].prog.phase = phase;
        Some(self.charge(p, self.machine.cost.syscall_ns, Point::MightSleep))
    }

    /// fpost: phase 0 flips the word and pays the FUTEX_WAKE syscall if it
    /// was BLOCKED; phase 1 wakes.
    fn fpost(&mut self, p: Pid, cpu: usize, futex: usize) -> Option<Action> {
        if self.tasks[p].prog.phase == 0 {
            let posted = self.fpost_flip(p, futex, 1);
            if posted.is_none() {
                self.tasks[p].prog.advance();
            }
            return posted;
        }
        self.futex_store_wake(futex, 1, 1, cpu, p);
        self.tasks[p].prog.advance();
        None
    }

    /// xlist_wake_all: phase 0 splices the list and stamps it; then one
    /// fpost per queued task (`progress` counts them), phase 2 being the
    /// wake after a post's syscall cost.
    fn wake_list_all(&mut self, p: Pid, cpu: usize, list: usize) -> Option<Action> {
        let prog = &mut self.tasks[p].prog;
        match prog.phase {
            0 => {
                prog.phase = 1;
                prog.progress = 0;
                let batch = std::mem::take(&mut self.shm.lists[list]);
                for &w in &batch {
                    self.shm.stamp(w, 0, self.now);
                }
                self.shm.batches[list] = batch;
            }
            2 => {
                let w = self.shm.batches[list][prog.progress as usize];
                prog.phase = 1;
                prog.progress += 1;
                let f = self.shm.futex_of[w];
                self.futex_store_wake(f, 1, 1, cpu, p);
            }
            _ => {}
        }
        while let Some(&w) = self.shm.batches[list].get(self.tasks[p].prog.progress as usize) {
            if let Some(a) = self.fpost_flip(p, self.shm.futex_of[w], 2) {
                return Some(a);
            }
            self.tasks[p].prog.progress += 1;
        }
        self.tasks[p].prog.advance();
        None
    }

    /// schbench's RPS sender: phase 2 wakes the worker just posted, phase 3
    /// is the nap after finding a worker swamped; `progress` counts the
    /// requests queued this burst.
    fn rps_burst(&mut self, p: Pid, cpu: usize, list: usize, count: u32) -> Option<Action> {
        let n = self.shm.members[list].len();
        match self.tasks[p].prog.phase {
            2 => {
                let w = self.shm.members[list][self.shm.rr[list] % n];
                self.futex_store_wake(self.shm.futex_of[w], 1, 1, cpu, p);
                self.tasks[p].prog.progress += 1;
                self.shm.rr[list] += 1;
            }
            3 => self.shm.rr[list] += 1,
            _ => {}
        }
        self.tasks[p].prog.phase = 1;
        if self.tasks[p].prog.progress >= count {
            self.tasks[p].prog.advance();
            return None;
        }
        let w = self.shm.members[list][self.shm.rr[list] % n];
        if self.shm.pending(w).len() > RPS_MAX_PENDING {
            self.tasks[p].prog.phase = 3;
            self.hrtimer_sleep(p, cpu, 100_000);
            return Some(Action::Block);
        }
        self.shm.pending(w).push_back(self.now);
        self.shm.stamp(w, 0, self.now);
        if let Some(a) = self.fpost_flip(p, self.shm.futex_of[w], 2) {
            return Some(a);
        }
        self.tasks[p].prog.progress += 1;
        self.shm.rr[list] += 1;
        None
    }

    /// schbench's RPS worker side of msg_and_wait: phase 1 is the
    /// FUTEX_WAIT after finding no request.
    fn take_request(&mut self, p: Pid, own: usize, wake_hist: usize) -> Option<Action> {
        if self.tasks[p].prog.phase == 1 {
            if self.futex_wait(p, own, 0) == Io::Block {
                return Some(Action::Block);
            }
            let us = (self.now - self.shm.stamp_of(p, 0)) / 1000;
            self.shm.hists[wake_hist].add(us);
            self.tasks[p].prog.phase = 0;
        }
        if let Some(t) = self.shm.pending(p).pop_front() {
            self.shm.stamp(p, 1, t);
            self.tasks[p].prog.advance();
            return None;
        }
        self.futexes[own].val = 0;
        self.tasks[p].prog.phase = 1;
        Some(self.charge(p, self.machine.cost.syscall_ns, Point::MightSleep))
    }

    /// pthread_spin_lock on this CPU's lock: take it if free, else spin a
    /// while (trylock + pause) and retry.
    fn cpu_lock(&mut self, p: Pid, cpu: usize, set: usize) -> Option<Action> {
        let lock = &mut self.shm.cpu_locks[set][cpu];
        if lock.is_none() {
            *lock = Some(p);
            self.shm.stamp(p, 2, cpu as u64);
            self.tasks[p].prog.advance();
            return None;
        }
        Some(self.charge_split(p, SPIN_CHUNK_NS, 0, Point::User))
    }

    /// A kernel-mode section, run in pieces of `cond_resched` ns with a
    /// cond_resched() between them; an atomic section ends with the
    /// preempt_enable() that closes it.
    fn kernel_run(&mut self, p: Pid, dist: Dist, every: u64, atomic: bool) -> Option<Action> {
        let t = &mut self.tasks[p];
        if t.prog.phase == 0 {
            t.prog.kernel_left = dist.sample(&mut t.rng).max(1);
            t.prog.phase = 1;
        }
        let left = t.prog.kernel_left;
        if left == 0 {
            t.prog.advance();
            return None;
        }
        let piece = if every > 0 { every.min(left) } else { left };
        t.prog.kernel_left -= piece;
        let at = if every > 0 && piece < left {
            Point::CondResched
        } else {
            Point::Kernel
        };
        let a = self.charge(p, piece, at);
        self.tasks[p].prog.mode.atomic = atomic;
        Some(a)
    }

    /// The process-creation and completion ops.
    fn exec_completion_op(&mut self, p: Pid, cpu: usize, op: Op) -> Option<Action> {
        match op {
            Op::Vfork { child, done } => {
                self.tasks[p].prog.advance();
                self.reinit_completion(done);
                self.completions.vfork_done.insert(child, done);
                self.tasks[child].mm = self.tasks[p].mm;
                self.tasks[child].parent = Some(p);
                self.wake_up_new_task(child, cpu);
            }
            Op::CloneVm { child } => {
                self.tasks[p].prog.advance();
                self.tasks[child].mm = self.tasks[p].mm;
                self.tasks[child].parent = Some(p);
                self.wake_up_new_task(child, cpu);
            }
            Op::Exec => {
                self.tasks[p].prog.advance();
                self.mm_release(p, cpu);
                self.tasks[p].mm = self.tasks[p].pid;
            }
            Op::WaitForCompletion { c, how } => {
                use crate::kernel::completion::WaitResult;
                match self.wait_for_completion(p, c, how, cpu) {
                    None => return Some(Action::Block),
                    // A fatal signal: the task dies on its way out.
                    Some(WaitResult::Killed) => {
                        let prog = &mut self.tasks[p].prog;
                        prog.pc = prog.ops.len();
                        prog.phase = 0;
                    }
                    Some(_) => self.tasks[p].prog.advance(),
                }
            }
            Op::Complete { c, all } => {
                self.tasks[p].prog.advance();
                self.complete_from_task(c, all, cpu, p);
            }
            Op::ReinitCompletion { c } => {
                self.tasks[p].prog.advance();
                self.reinit_completion(c);
            }
            Op::TryWaitForCompletion { c } => {
                self.tasks[p].prog.advance();
                self.try_wait_for_completion(c);
            }
            Op::CompletionDone { c } => {
                self.tasks[p].prog.advance();
                self.completion_done(c);
            }
            Op::StartIo { dev } => {
                self.tasks[p].prog.advance();
                self.start_io(dev);
            }
            Op::Signal { target, fatal } => {
                self.tasks[p].prog.advance();
                self.send_signal(target, fatal, cpu, p);
            }
            _ => unreachable!("not a completion op: {op:?}"),
        }
        None
    }

    /// CPU time of a running task (what CLOCK_THREAD_CPUTIME_ID reads).
    fn task_cpu_time(&self, p: Pid) -> u64 {
        let se = &self.tasks[p].se;
        se.sum_exec_runtime + self.now.saturating_sub(se.exec_start)
    }

    /// stress-ng's cpu-load sleep: delay = (100−P)/P × cpu_busy +
    /// (cpu_busy − wall_busy) − bias; no sleep (and no bias) if negative.
    fn slice_end(&mut self, p: Pid, cpu: usize, load: u32) -> Option<Action> {
        let cpu_time = self.task_cpu_time(p);
        let now = self.now;
        let t = &mut self.tasks[p];
        t.prog.advance();
        let d = &mut t.prog.duty;
        d.slices += 1;
        if load >= 100 {
            return None;
        }
        let cpu_busy = cpu_time.saturating_sub(d.cpu0) as f64;
        let wall_busy = now.saturating_sub(d.wall0) as f64;
        let delay =
            (100 - load) as f64 / load as f64 * cpu_busy + (cpu_busy - wall_busy) - d.bias as f64;
        if delay <= 0.0 {
            d.bias = 0;
            return None;
        }
        d.sleep_from = now;
        d.slept_delay = delay as i64;
        self.hrtimer_sleep(p, cpu, delay as u64);
        Some(Action::Block)
    }

    /// Finish a read/write: advance when all `want` bytes moved, otherwise
    /// retry (after sleeping if it blocked).
    fn io_done(&mut self, p: Pid, io: Io, want: u32) -> Option<Action> {
        let prog = &mut self.tasks[p].prog;
        match io {
            Io::Block => Some(Action::Block),
            Io::Done(n) => {
                prog.progress += n;
                if prog.progress >= want {
                    prog.advance();
                }
                None
            }
        }
    }

    /// hrtimer_nanosleep: arm the task's timer on this CPU (with the
    /// default 50 µs timer slack of a normal task; where in the slack window
    /// it fires is noise.rs's `slack_expiry`) and sleep.
    pub fn hrtimer_sleep(&mut self, p: Pid, cpu: usize, ns: u64) {
        self.hrtimer_sleep_until(p, cpu, self.now + ns);
    }

    /// Arm an absolute hrtimer: an RT task has no timer slack
    /// (hrtimer_nanosleep uses 0 for rt_task), others the default.
    fn hrtimer_sleep_until(&mut self, p: Pid, cpu: usize, at: u64) {
        let slack = if self.is_rt(p) {
            0
        } else {
            self.cfg.timer_slack_ns
        };
        let at = self.slack_expiry(cpu, at, slack);
        let t = &mut self.tasks[p];
        t.timer_cpu = cpu;
        t.state = TaskState::Interruptible;
        t.prog.blocked = Blocked::Timer;
        self.events.push(at, crate::engine::EventKind::Timer, p);
    }

    /// A child of `parent` exited on `cpu`: wake the parent if it waits
    /// (do_notify_parent → __wake_up_parent, a sync wakeup).
    pub fn child_exited(&mut self, parent: Pid, cpu: usize, child: Pid) {
        if self.tasks[parent].prog.blocked == Blocked::Child {
            self.try_to_wake_up(parent, crate::kernel::core::WF_SYNC, cpu, Some(child));
        }
    }
}
