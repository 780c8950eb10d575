//! Task programs: the interpreter that runs one task's program inside the
//! kernel model (the instruction set itself is kernel/program.rs).
//!
//! An operation first charges its kernel cost (syscall entry/exit, copies)
//! as a run segment, then takes effect; if the effect must wait (an empty
//! pipe, a full socket), the task sleeps and retries the effect when woken.

use crate::kernel::core::segment_ns;
use crate::kernel::fold::Before;
use crate::kernel::noise::By;
use crate::kernel::pipe::Io;
use crate::kernel::preempt::{ExecMode, Point};
use crate::kernel::task::{Pid, TaskState};
use crate::kernel::tracepoint::{IoQueue, SysIo};
use crate::kernel::Kernel;

/// The instruction set and interpreter state, defined in the kernel (a
/// task holds its program); workloads build programs from them.
pub use crate::kernel::program::{Action, Blocked, Dist, KthreadOp, Mark, Op, ProgState};

/// The read or write system call of a pipe or socket op.
fn sys_io(op: Op) -> Option<SysIo> {
    let (write, queue, count) = match op {
        Op::PipeWrite { pipe, bytes } => (true, IoQueue::Pipe(pipe), bytes),
        Op::PipeRead { pipe, bytes } => (false, IoQueue::Pipe(pipe), bytes),
        Op::SockSend { sock, bytes } => (true, IoQueue::Sock(sock), bytes),
        Op::SockRecv { sock, bytes } => (false, IoQueue::Sock(sock), bytes),
        _ => return None,
    };
    Some(SysIo {
        write,
        queue,
        count,
    })
}

/// A socket send's or pipe write's object, bytes, and whether it is a
/// pipe's.
fn sent(op: Op) -> Option<(usize, u32, bool)> {
    match op {
        Op::SockSend { sock, bytes } => Some((sock, bytes, false)),
        Op::PipeWrite { pipe, bytes } => Some((pipe, bytes, true)),
        _ => None,
    }
}

/// How long a spinner burns between two looks at a held lock: a few
/// hundred trylock + pause rounds (an estimate; pause is ~40–140 cycles).
const SPIN_CHUNK_NS: u64 = 1000;

/// `ProgState::phase` of a Sleep op whose timer has been armed.
const SLEPT: u8 = 3;

/// schbench -R skips a worker with more requests than this queued.
const RPS_MAX_PENDING: usize = 128;

impl Kernel {
    /// Charge `ns` of kernel work to `p` and ask the CPU to run it; the
    /// task is then at `at`.
    fn charge(&mut self, p: Pid, ns: u64, at: Point) -> Action {
        self.charge_split(p, ns, u64::MAX, at)
    }

    /// Charge `ns` of work whose last `kern_tail` ns run in kernel mode.
    fn charge_split(&mut self, p: Pid, ns: u64, kern_tail: u64, at: Point) -> Action {
        let t = &mut self.tasks[p];
        t.prog.work_left = ns.max(1);
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
            if t.prog.work_left > 0 {
                return Action::Run;
            }
            if t.prog.overhead > 0 {
                // Kernel work (wakeups done, interrupts) before the point.
                t.prog.run_overhead();
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

    /// do_exit, met twice. First exit_notify: the wakeups are made, and
    /// `step` runs what they cost (an IPI to a parent on another CPU) and
    /// meets write_unlock_irq's preempt_enable (`Point::Kernel`: honoured
    /// under full preemption, or a full bit under lazy; never under
    /// none/voluntary), where a woken parent may preempt the zombie (it
    /// leaves as R+ and meets the op again when next picked). Then
    /// do_task_dead: the task blocks for good. The kernel's earlier points
    /// in do_exit (mm_release's wakeups) are taken as this one.
    fn exit(&mut self, p: Pid) -> Option<Action> {
        if self.tasks[p].exiting {
            self.do_task_dead(p);
            return Some(Action::Block);
        }
        self.exit_notify(p);
        self.tasks[p].prog.mode.at = Point::Kernel;
        None
    }

    /// The kernel time an op costs before it takes effect (syscall entry
    /// and exit, copies, fork/exit work); None for pure user-space ops.
    fn op_cost(&self, p: Pid, op: &Op) -> Option<u64> {
        use crate::workload::fork::{EXEC_FORK_PCT, SHARED_MM_EXIT_PCT, SHARED_MM_FORK_PCT};
        let c = &self.machine.cost;
        let copy = |bytes: u32, ps: u64| c.syscall_ns + bytes as u64 * ps / 1000;
        match *op {
            Op::Run(_)
            | Op::RunBurst(_)
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
            | Op::AwaitRoom { .. }
            | Op::PostWake { .. }
            | Op::PostBytes { .. }
            | Op::ForkTraced { .. }
            | Op::TraceEnd
            | Op::Pthread(_) => None,
            Op::WaitForCompletion { .. }
            | Op::Complete { .. }
            | Op::ReinitCompletion { .. }
            | Op::TryWaitForCompletion { .. }
            | Op::CompletionDone { .. }
            | Op::Kthread(_) => None,
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
            // rt-app makes these calls only when the value changes.
            Op::SetAffinity { set } => {
                (!self.cpus_allowed_equal(p, &self.shm.cpusets[set])).then_some(c.syscall_ns)
            }
            Op::MoveGroup { tg } => (self.tasks[p].tg != tg).then_some(c.syscall_ns),
            Op::SetScheduler { policy, prio } => (!self
                .sched_param_equal(p, self.sched_param(p, policy, prio)))
            .then_some(c.syscall_ns),
            Op::PipeWrite { bytes, .. } | Op::PipeRead { bytes, .. } => {
                Some(copy(bytes, c.pipe_copy_ps_per_byte) + c.pipe_op_ns)
            }
            Op::SockSend { bytes, .. } | Op::SockRecv { bytes, .. } => {
                Some(copy(bytes, c.socket_copy_ps_per_byte) + c.socket_skb_ns / 2)
            }
            Op::Fork { .. } | Op::ForkNext { .. } => Some(c.fork_ns),
            Op::Exit => Some(c.exit_ns),
        }
    }

    /// What a pipe or socket op that blocked costs its task once woken,
    /// before the retry (pipe_read's and unix_stream_read_generic's wait
    /// loops: finish_wait, the lock again, the checks again).
    fn wait_cycle_cost(&self, op: &Op) -> Option<u64> {
        let c = &self.machine.cost;
        match *op {
            Op::PipeWrite { .. } | Op::PipeRead { .. } => Some(c.pipe_wait_cycle_ns),
            Op::SockSend { .. } | Op::SockRecv { .. } => Some(c.socket_wait_cycle_ns),
            _ => None,
        }
    }

    /// What op `op`'s kernel work of `own` ns, starting at `at` on `cpu`,
    /// pays for the pipe or socket it shares with other CPUs (lines moved,
    /// lock waited for); 0 for the other ops.
    fn shared_cost(&mut self, op: &Op, cpu: usize, at: u64, own: u64) -> u64 {
        match *op {
            Op::PipeWrite { pipe, .. } => self.pipe_access(pipe, cpu, at, own, None),
            Op::PipeRead { pipe, bytes } => self.pipe_access(pipe, cpu, at, own, Some(bytes)),
            Op::SockSend { sock, .. } => self.unix_access(sock, cpu, at, own, None),
            Op::SockRecv { sock, bytes } => self.unix_access(sock, cpu, at, own, Some(bytes)),
            _ => 0,
        }
    }

    /// Execute one op: charge its cost first (phase 0), then its effect
    /// (phase 1, retried after a wakeup if it blocked). None means "go on
    /// with the next op".
    fn exec(&mut self, p: Pid, cpu: usize, op: Op) -> Option<Action> {
        if self.tasks[p].prog.phase == 0 {
            if let Some(cost) = self.op_cost(p, &op) {
                self.tasks[p].prog.phase = 1;
                let ns = self.vary(cost, By::Task(p));
                let ns = ns + self.shared_cost(&op, cpu, self.now, ns);
                let a = self.charge(p, ns, Point::MightSleep);
                if let Some((obj, pipe, n)) = self.foldable(p, cpu, op) {
                    self.fold_reads(p, cpu, op, (obj, pipe), n, cost);
                } else if let Some(pipe) = self.send_foldable(p, cpu, op) {
                    self.fold_sends(p, cpu, pipe);
                }
                return Some(a);
            }
        }
        if std::mem::take(&mut self.tasks[p].prog.wait_cycle_due) {
            if let Some(ns) = self.wait_cycle_cost(&op) {
                let ns = self.vary(ns, By::Task(p));
                let ns = ns + self.shared_cost(&op, cpu, self.now, ns);
                return Some(self.charge(p, ns, Point::MightSleep));
            }
        }
        match op {
            Op::Run(d) => {
                let ns = d.sample(&mut self.tasks[p].rng);
                self.run_user(p, cpu, ns)
            }
            Op::RunBurst(ns) => {
                let prog = &mut self.tasks[p].prog;
                let back = prog.debt_ns.min(ns.saturating_sub(1));
                prog.debt_ns -= back;
                self.run_user(p, cpu, ns - back)
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
            // The op ends after the wakeup, so that the wakeup does not
            // count as one inside the next op (a timer or condition wait
            // would return at once).
            Op::Sleep(_) if self.tasks[p].prog.phase == SLEPT => {
                self.tasks[p].prog.advance();
                None
            }
            Op::Sleep(d) => {
                let ns = d.sample(&mut self.tasks[p].rng);
                self.tasks[p].prog.phase = SLEPT;
                self.hrtimer_sleep(p, cpu, ns);
                Some(Action::Block)
            }
            Op::PipeWrite { .. }
            | Op::PipeRead { .. }
            | Op::SockSend { .. }
            | Op::SockRecv { .. } => self.traced_io(p, cpu, op),
            Op::PollIn { pipe } => {
                let io = self.pipe_poll_in(p, pipe);
                self.io_done(p, io, 0)
            }
            Op::Fork { child } | Op::ForkTraced { child } => {
                self.tasks[p].prog.advance();
                self.fork_child(p, child, cpu);
                None
            }
            Op::ForkNext { pool } => {
                self.tasks[p].prog.advance();
                if let Some(child) = self.shm.fork_pools[pool].pop() {
                    self.fork_child(p, child, cpu);
                }
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
            Op::SetAffinity { set } => {
                self.tasks[p].prog.advance();
                let cpus = self.shm.cpusets[set].clone();
                self.set_cpus_allowed(p, cpu, cpus)
                    .then_some(Action::Preempt)
            }
            Op::MoveGroup { tg } => {
                self.tasks[p].prog.advance();
                self.sched_move_task(p, cpu, tg).then_some(Action::Preempt)
            }
            Op::SetScheduler { policy, prio } => {
                self.tasks[p].prog.advance();
                let param = self.sched_param(p, policy, prio);
                (!self.sched_param_equal(p, param) && self.sched_setscheduler(p, cpu, param))
                    .then_some(Action::Preempt)
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
                let h = &mut self.shm.hists[hist];
                if self.now >= h.from_ns {
                    h.add(us);
                }
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
            Op::Exit | Op::TraceEnd => self.exit(p),
            Op::Kthread(op) => self.exec_kthread_op(p, cpu, op),
            Op::AwaitWake { futex, need } => {
                let io = self.futex_wait_count(p, futex, need);
                self.io_done(p, io, 0)
            }
            Op::AwaitRoom {
                written,
                read,
                full,
                ..
            } => {
                let io = self.futex_wait_room(p, written, read, full);
                self.io_done(p, io, 0)
            }
            Op::Pthread(op) => {
                let io = self.pthread_op(p, cpu, op);
                self.io_done(p, io, 0)
            }
            Op::PostBytes { futex, bytes } => {
                self.tasks[p].prog.advance();
                self.futex_post_count(futex, bytes, cpu, p);
                None
            }
            Op::PostWake { futex, n } => {
                self.tasks[p].prog.advance();
                for f in futex..futex + n as usize {
                    self.futexes[f].val += 1;
                    let q = crate::kernel::wait::WaitQueueRef::Futex(f);
                    self.wake_up(q, 1, true, cpu, p);
                }
                None
            }
            _ => self.exec_completion_op(p, cpu, op),
        }
    }

    /// `ns` of user-mode work, then straight into the next op's syscall:
    /// its entry cost is folded into the same segment.
    fn run_user(&mut self, p: Pid, cpu: usize, ns: u64) -> Option<Action> {
        self.tasks[p].prog.user_ns += ns;
        self.tasks[p].prog.advance();
        let t = &self.tasks[p];
        let next = t.prog.ops.get(t.prog.pc).copied().unwrap_or(Op::Exit);
        if let Some(cost) = self.op_cost(p, &next) {
            self.tasks[p].prog.phase = 1;
            let cost = self.vary(cost, By::Task(p));
            let cost = cost + self.shared_cost(&next, cpu, self.now + ns, cost);
            return Some(self.charge_split(p, ns + cost, cost, Point::MightSleep));
        }
        Some(self.charge_split(p, ns, 0, Point::User))
    }

    /// The socket or pipe (true) and size of a read `p` may fold
    /// (kernel/fold.rs) from here: a socket read, or a pipe read on a
    /// machine whose pipe ops cost the same whatever the pipe's state, that
    /// is the only op of its loop, on a CPU with no reschedule request
    /// pending and no throttle to check, with no syscall tracer and no fold
    /// running.
    fn foldable(&self, p: Pid, cpu: usize, op: Op) -> Option<(usize, bool, u32)> {
        let (obj, pipe, bytes) = match op {
            Op::SockRecv { sock, bytes } => (sock, false, bytes),
            Op::PipeRead { pipe, bytes } if self.pipes_fold() => (pipe, true, bytes),
            _ => return None,
        };
        let prog = &self.tasks[p].prog;
        let alone = prog.pc > 0
            && prog.loops.last().is_some_and(|l| l.0 + 1 == prog.pc)
            && prog.ops.get(prog.pc + 1) == Some(&Op::EndLoop);
        let quiet = !self.syscalls && !self.bandwidth_on && !self.resched_pending(cpu);
        (alone && quiet && !prog.woken && !self.folded(cpu)).then_some((obj, pipe, bytes))
    }

    /// The next read of `n` bytes of socket or pipe `i` is certain now
    /// (what is stamped up to now settled).
    fn read_certain(&self, i: usize, pipe: bool, n: u32) -> bool {
        if pipe {
            self.pipes[i].read_certain(n)
        } else {
            self.socks[i].read_certain(n)
        }
    }

    /// Fold the reads after the one `p` was just charged for (`read` of
    /// `n` bytes of socket `sock`, or of pipe `sock` if `pipe`, costing
    /// `cost` before its variation): while the next read's outcome is
    /// certain and its loop goes on, apply the read's effect as at its
    /// segment's end and charge the next read there, each as the unfolded
    /// interpreter would (kernel/fold.rs).
    fn fold_reads(&mut self, p: Pid, cpu: usize, read: Op, obj: (usize, bool), n: u32, cost: u64) {
        let (sock, pipe) = obj;
        if pipe {
            self.pipe_settle(sock);
        } else {
            self.sock_settle(sock);
        }
        let speed = self.speed(cpu);
        let mut work = self.tasks[p].prog.work_left;
        let mut end = self.now + segment_ns(work, speed);
        let mut begun = false;
        loop {
            let left = self.tasks[p].prog.loops.last().map_or(0, |l| l.1);
            let f = &self.folds[cpu];
            let folds = if begun { f.ops.len() } else { 0 };
            if left < 2 || folds >= f.span || !self.read_certain(sock, pipe, n) {
                break;
            }
            if !begun {
                self.fold_begin(cpu, p, sock, pipe, n, speed);
                begun = true;
            }
            let before = self.fold_mark(p, end, work);
            self.folds[cpu].ops.push(before);
            // The read takes effect at `end`, and its loop goes round.
            let done = if pipe {
                self.pipe_read(p, cpu, sock, n)
            } else {
                self.unix_recv(p, cpu, sock, n)
            };
            debug_assert_eq!(done, Io::Done(n));
            if let Some(top) = self.tasks[p].prog.loops.last_mut() {
                top.1 -= (top.1 != u64::MAX) as u64;
            }
            // The next read's cost, charged at `end` (a pipe's costs
            // nothing shared where its reads fold).
            let line = self.stats.ipc_line_ns;
            let ns = self.vary(cost, By::Task(p));
            let xfer = if pipe {
                0
            } else {
                self.shared_cost(&read, cpu, end, ns)
            };
            work = (ns + xfer).max(1);
            let queued = pipe || self.socks[sock].has_data();
            let b = self.folds[cpu].ops.last_mut().expect("just pushed");
            b.xfer = xfer;
            b.queued = queued;
            b.line_ns = self.stats.ipc_line_ns - line;
            self.tasks[p].prog.work_left += work;
            end += segment_ns(work, speed);
        }
        if begun {
            let f = &mut self.folds[cpu];
            f.end = end;
            f.last_work = work;
        }
    }

    /// The state a read by `p`, taking effect at `end` after `work` ns of
    /// its own, undoes to.
    fn fold_mark(&mut self, p: Pid, end: u64, work: u64) -> Before {
        Before {
            end,
            work,
            loop_left: self.tasks[p].prog.loops.last().map_or(0, |l| l.1),
            draws: self.noise.task_draws(p),
            line_ns: 0,
            xfer: 0,
            queued: false,
            pc: 0,
            sock: 0,
        }
    }

    /// `p` may fold the sends from the one just charged (kernel/fold_send.rs):
    /// a socket send in a loop of socket sends only, on a machine whose
    /// sends cost the same whatever the socket's state, or likewise a pipe
    /// write (Some(true)), with the CPU and task as quiet as for a folded
    /// read.
    fn send_foldable(&self, p: Pid, cpu: usize, op: Op) -> Option<bool> {
        let pipe = match op {
            Op::SockSend { .. } if self.sends_fold() => false,
            Op::PipeWrite { .. } if self.pipes_fold() => true,
            _ => return None,
        };
        let prog = &self.tasks[p].prog;
        let &(start, _) = prog.loops.last()?;
        let body = &prog.ops[start + 1..];
        let sends = body
            .iter()
            .take_while(|o| sent(**o).is_some_and(|s| s.2 == pipe))
            .count();
        let quiet = !self.syscalls && !self.bandwidth_on && !self.resched_pending(cpu);
        (body.get(sends) == Some(&Op::EndLoop)
            && prog.pc <= start + sends
            && quiet
            && !prog.woken
            && !self.folded(cpu))
        .then_some(pipe)
    }

    /// Fold the sends (pipe writes if `pipe`) after the one `p` was just
    /// charged for: while the charged send's outcome is certain and its
    /// loop goes on, stamp its skb (its bytes) with its segment's end
    /// (unix_stream_sendmsg's or pipe_write's effect, seen by others from
    /// then on), go round the loop to the next send and charge it there,
    /// each as the unfolded interpreter would. Out of line: it runs once a
    /// fold, and inlined it keeps `exec` out of `step`.
    #[inline(never)]
    fn fold_sends(&mut self, p: Pid, cpu: usize, pipe: bool) {
        let speed = self.speed(cpu);
        let mode = self.tasks[p].prog.mode;
        let mut work = self.tasks[p].prog.work_left;
        let mut end = self.now + segment_ns(work, speed);
        let mut begun = false;
        loop {
            let prog = &self.tasks[p].prog;
            let (pc, Some(&(top, left))) = (prog.pc, prog.loops.last()) else {
                break;
            };
            let Some((obj, bytes, _)) = sent(prog.ops[pc]) else {
                unreachable!("a loop of sends")
            };
            let last = prog.ops[pc + 1] == Op::EndLoop;
            let folds = if begun { self.folds[cpu].ops.len() } else { 0 };
            if (last && left < 2)
                || folds >= self.folds[cpu].span
                || !self.send_certain(obj, pipe, bytes)
            {
                break;
            }
            if !begun {
                self.fold_begin_sends(cpu, p, obj, pipe, speed);
                begun = true;
            }
            let mut before = self.fold_mark(p, end, work);
            before.pc = pc;
            before.sock = obj;
            self.folds[cpu].ops.push(before);
            self.send_stamp(obj, pipe, cpu, bytes, end);
            // The send returns, and EndLoop goes round (left ≥ 2).
            let prog = &mut self.tasks[p].prog;
            prog.advance();
            if last {
                let l = prog.loops.last_mut().expect("in a loop");
                l.1 -= (l.1 != u64::MAX) as u64;
                prog.pc = top + 1;
            }
            // The next send's cost, charged at `end`.
            let next = prog.ops[prog.pc];
            let cost = self.op_cost(p, &next).expect("a send has a cost");
            let ns = self.vary(cost, By::Task(p));
            work = ns.max(1);
            let prog = &mut self.tasks[p].prog;
            prog.phase = 1;
            prog.mode = mode;
            prog.work_left += work;
            end += segment_ns(work, speed);
        }
        if begun {
            let f = &mut self.folds[cpu];
            f.end = end;
            f.last_work = work;
        }
    }

    /// A pipe or socket read or write, with its syscall tracepoints:
    /// sys_enter when the call first takes effect (the model charges its
    /// entry and copy cost as one segment before that, so the event is
    /// late by that cost), sys_exit when it returns (after any sleep).
    /// The model's read waits for all its bytes: the real program's loop
    /// of short reads is one call here.
    fn traced_io(&mut self, p: Pid, cpu: usize, op: Op) -> Option<Action> {
        let io = sys_io(op)?;
        let (pc, first) = {
            let prog = &self.tasks[p].prog;
            (prog.pc, !prog.woken && prog.progress == 0)
        };
        if first {
            self.trace_sys_enter(cpu, p, io);
        }
        let want = io.count - self.tasks[p].prog.progress;
        let done = match op {
            Op::PipeWrite { pipe, bytes } => self.pipe_write(p, cpu, pipe, bytes),
            Op::PipeRead { pipe, .. } => self.pipe_read(p, cpu, pipe, want),
            Op::SockSend { sock, bytes } => self.unix_send(p, cpu, sock, bytes),
            Op::SockRecv { sock, .. } => self.unix_recv(p, cpu, sock, want),
            _ => unreachable!("sys_io names only these ops"),
        };
        let action = self.io_done(p, done, io.count);
        if self.tasks[p].prog.pc != pc {
            self.trace_sys_exit(cpu, p, io, io.count);
        }
        action
    }

    /// fork(2): `child` (pre-built) starts as `p`'s child.
    fn fork_child(&mut self, p: Pid, child: Pid, cpu: usize) {
        self.tasks[child].parent = Some(p);
        self.trace_fork(p, child, cpu);
        self.wake_up_new_task(child, cpu);
    }

    /// The kthread ops.
    fn exec_kthread_op(&mut self, p: Pid, cpu: usize, op: KthreadOp) -> Option<Action> {
        match op {
            KthreadOp::Create { k, exited } => self.kthread_create(k, exited, cpu, p),
            KthreadOp::Kthreadd => {
                self.tasks[p].prog.advance();
                if self.kthreadd_fork_next(cpu, p) {
                    return Some(self.charge(p, self.machine.cost.fork_ns, Point::MightSleep));
                }
                if self.sleep_until_woken(p) {
                    return Some(Action::Block);
                }
                return None;
            }
            KthreadOp::SleepUntilWoken => {
                self.tasks[p].prog.advance();
                return self.sleep_until_woken(p).then_some(Action::Block);
            }
            KthreadOp::WakeProcess { target } => self.wake_up_process(target, cpu, p),
            KthreadOp::Park { k } => self.kthread_signal(k, Some(true), false, cpu, p),
            KthreadOp::Unpark { k } => self.kthread_signal(k, Some(false), false, cpu, p),
            KthreadOp::Stop { k } => self.kthread_signal(k, None, true, cpu, p),
            KthreadOp::ShouldStop => {
                if self.kthread_flags(p).should_stop {
                    let prog = &mut self.tasks[p].prog;
                    prog.pc = prog.ops.len();
                    prog.phase = 0;
                    return None;
                }
            }
            KthreadOp::Parkme { parked } => {
                if self.kthread_flags(p).should_park {
                    // Complete `parked` once, then sleep while parked.
                    if self.tasks[p].prog.phase != 2 {
                        self.tasks[p].prog.phase = 2;
                        self.complete_from_task(parked, false, cpu, p);
                    }
                    return self.sleep_until_woken(p).then_some(Action::Block);
                }
            }
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

    /// Arm an absolute hrtimer: an RT or DL task has no timer slack
    /// (hrtimer_nanosleep uses 0 for rt_or_dl_task_policy), others the
    /// default.
    fn hrtimer_sleep_until(&mut self, p: Pid, cpu: usize, at: u64) {
        let slack = if self.is_rt(p) || self.is_dl(p) {
            0
        } else {
            self.cfg.timer_slack_ns
        };
        let at = self.slack_expiry(p, cpu, at, slack);
        let t = &mut self.tasks[p];
        t.state = TaskState::Interruptible;
        t.prog.blocked = Blocked::Timer;
        self.arm_task_timer(p, cpu, at);
    }

    /// A child of `parent` exited on `cpu`: wake the parent if it waits
    /// (do_notify_parent → __wake_up_parent, a sync wakeup).
    pub fn child_exited(&mut self, parent: Pid, cpu: usize, child: Pid) {
        if self.tasks[parent].prog.blocked == Blocked::Child {
            self.try_to_wake_up(parent, crate::kernel::core::WF_SYNC, cpu, Some(child));
        }
    }
}
