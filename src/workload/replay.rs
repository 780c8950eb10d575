//! Causal trace replay, after `perf sched replay`: a recorded trace becomes
//! one program per task of RUN bursts (recorded CPU time), WAKEUP edges
//! (the waker performs the wakeup at the same point of its own work) and
//! SLEEP atoms. A task that blocked waits for its recorded waker's wakeup,
//! whenever that happens in the new simulation; a task woken from an
//! interrupt or by an untraced task sleeps for its recorded time instead
//! (a timer stays a timer). Forks and exits are replayed where they were.
//! With the syscall events of reads and writes and `# fd` lines naming
//! their pipes and sockets, the replay is causal (docs/replay.md): a read
//! waits for the bytes it read to be written, a write for room in its
//! queue as the simulation filled it (the kernel's rule and writer
//! wakeup), and the wakeups those calls made are made by the bytes.

use crate::kernel::features::{Feature, Wakelist};
use crate::kernel::footprint::Footprint;
use crate::kernel::pipe::PIPE_DEF_BUFFERS;
use crate::kernel::task::{Pid, TaskState};
use crate::kernel::Kernel;
use crate::machine::cost::{TtwuPath, REFILL_LINES, REFILL_MLP};
use crate::trace::parse::{self, Event, FdUse, Parsed, Record, Task, UNKNOWN_PID};
use crate::workload::fork::SHARED_MM_EXIT_PCT;
use crate::workload::params::Params;
use crate::workload::program::{Blocked, Dist, Mark, Op};
use crate::workload::{BenchResult, Builder, TaskSpec};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::rc::Rc;

/// One step of a replayed task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Atom {
    /// Run this long, begun by this many switches to the task (whose
    /// cost the recorded time includes: a switch is traced before it is
    /// made, and the kernel starts the task's clock there).
    Run(u64, u32),
    /// Blocked, woken by edge n (another task's `Wake(n)`).
    Await(usize),
    /// Blocked, woken by a timer or interrupt after this long.
    Timer(u64),
    /// Placeholder for a block whose wakeup is not seen yet (since).
    Blocked(u64),
    /// Wake edge n, and where the recorded wakeup went.
    Wake(usize, Reach),
    /// Fork task n; the new task was woken onto another CPU (an IPI).
    Fork(usize, bool),
    Exit,
    /// A read or write on a queue (causal replay): wait until count c
    /// (`2q`: bytes written to queue q, `2q + 1`: bytes read from it)
    /// reaches this many (0: nothing to wait for).
    Want(usize, u64),
    /// A write to queue q: it waits while the queue is full, resolved
    /// into a `Room` once the trace is read (`Queue::full`).
    Fit(usize),
    /// A write to queue q, which holds `full` bytes and wakes its
    /// writers at `level` (`Op::AwaitRoom`).
    Room(usize, u64, u64),
    /// Add this many bytes to count c (a write or a read).
    Put(usize, u64),
    /// The waker's share of a recorded wakeup that the replay makes by a
    /// write (`Put`) rather than an edge.
    Woke(Reach),
}

/// The read or write system call a task is in (causal replay).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sys {
    write: bool,
    /// The queue its fd names (`# fd` lines), if any.
    queue: Option<usize>,
    /// Its `Want` (or `Fit`) atom.
    want: Option<usize>,
    /// Its `Put` atom, placed at its first wakeup of a task waiting on
    /// the queue's other side.
    put: Option<usize>,
    /// The bytes in the queue when it blocked (a write: the queue was
    /// full).
    full_at: Option<u64>,
}

/// A pipe or socket receive queue, and the bytes the trace moved through
/// it so far.
#[derive(Clone, Debug, Default)]
struct Queue {
    name: String,
    written: u64,
    read: u64,
    /// The bytes it holds when full, as far as the writes that blocked
    /// show: the least, over them, of the bytes in it then (a UNIX
    /// socket's sk_sndbuf over the truesize of its skbs: 278 skbs of
    /// 100 bytes, 768 bytes truesize, for 212,992 bytes on this VM; a
    /// pipe's 16 pages of 40 such writes).
    full: Option<u64>,
}

impl Queue {
    /// A pipe (`pipe:[N]`); anything else counts as a socket.
    fn is_pipe(&self) -> bool {
        self.name.starts_with("pipe:")
    }

    /// The bytes it holds when the kernel wakes the writers that waited
    /// for room: a UNIX socket's once sk_wmem_alloc is at most a quarter
    /// of sk_sndbuf (unix_write_space, unix_writable's `<< 2`), a pipe's
    /// once a read frees one of the full ring's buffers (pipe_read's
    /// wake_writer). Every writer that blocked in the recordings of
    /// docs/replay.md woke there (70 skbs of 278 before the read that
    /// woke it; 601 writes of 640).
    fn wake_level(&self, full: u64) -> u64 {
        if self.is_pipe() {
            full - full / PIPE_DEF_BUFFERS as u64
        } else {
            full / 4
        }
    }
}

/// Where a recorded wakeup went, for the waker's kernel work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reach {
    /// The waker's own CPU.
    Local,
    /// Another CPU's rq (`from` the waker's CPU, `to` the wakee's);
    /// `ipi`: it sent an IPI, `idle`: `to` was idle (see `ipi_pending`).
    Remote {
        from: usize,
        to: usize,
        ipi: bool,
        idle: bool,
    },
}

impl Reach {
    /// What the target CPU's next switch said of a remote wakeup.
    fn settle(&mut self, sent: bool, was_idle: bool) {
        if let Reach::Remote { ipi, idle, .. } = self {
            (*ipi, *idle) = (sent, was_idle);
        }
    }
}

/// What the trace recorded for one task, for --fidelity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    pub runtime: u64,
    pub switches: u64,
    pub migrations: u64,
    pub wait: u64,
}

#[derive(Clone, Debug)]
struct RTask {
    pid: u32,
    /// Its thread group, where the trace says (perf's `pid/tid`): threads
    /// of one process share its address space, so switching between them
    /// costs no switch_mm.
    tgid: Option<u32>,
    comm: String,
    prio: i32,
    /// The line of the trace that first names it.
    first_line: usize,
    /// Index of the replayed parent that forks it.
    parent: Option<usize>,
    /// How the task begins: runnable at `start`, or blocked (its first
    /// atom says until when).
    start: u64,
    start_blocked: bool,
    atoms: Vec<Atom>,
    rec: Recorded,
    // Reconstruction state.
    running_since: Option<u64>,
    runnable_since: Option<u64>,
    acc: u64,
    acc_switches: u32,
    /// Its switch-ins (indexes of `Replay::switch_ins`), in order: each
    /// `Atom::Run` holds the next `n` of them.
    switch_ins: Vec<u32>,
    started: bool,
    dead: bool,
    /// sched_process_exit seen: its pid may be reused by a fork.
    exiting: bool,
    /// The CPU it last ran on, and how often that changed between runs.
    last_cpu: Option<usize>,
    cpu_changes: u64,
    /// sched_migrate_task events.
    migrate_events: u64,
    /// Its last sched_wakeup.
    enqueued: Option<u64>,
    /// The tasks it woke since it last switched in, and the one of them
    /// that preempted it.
    woke: Vec<usize>,
    preempted_by: Option<usize>,
    /// The tasks it preempted right after they woke or forked it (with
    /// `handover`).
    waiters: Vec<usize>,
    /// The CPUs the trace shows it running on, ascending.
    cpus: Vec<usize>,
    /// The read or write it is in (causal replay).
    sys: Option<Sys>,
    /// Its recorded autogroup (`Replay::autogroups`).
    group: Option<usize>,
}

impl RTask {
    /// The process it belongs to: its thread group where the trace says,
    /// else its own.
    fn process(&self) -> u32 {
        self.tgid.unwrap_or(self.pid)
    }

    fn ran_on(&mut self, cpu: usize) {
        if let Err(at) = self.cpus.binary_search(&cpu) {
            self.cpus.insert(at, cpu);
        }
    }
}

/// How a trace is replayed (the `replay` workload's flags).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Compare with the recorded numbers (`--fidelity`).
    pub fidelity: bool,
    /// Infer handover edges (`--handover`).
    pub handover: bool,
    /// Keep each task on the CPUs the trace shows it on (`--pin`).
    pub pin: bool,
    /// Let any recorded waker of a task end its next wait (`--any-waker`).
    pub any_waker: bool,
    /// Put every task at the root, not in its recorded autogroup
    /// (`--no-autogroup`).
    pub no_autogroup: bool,
}

/// A trace turned into replayable tasks.
#[derive(Clone, Debug)]
pub struct Replay {
    pub file: String,
    tasks: Vec<RTask>,
    pub edges: usize,
    pub timers: usize,
    /// Switch-ins the trace lost, put back where the task reappeared.
    pub reconstructed: usize,
    /// Runs the trace never switched out, ended at the CPU's next record
    /// in another context.
    pub lost_switch_outs: usize,
    /// Edges inferred from a waker's preemption by its wakee (`handover`).
    pub handovers: usize,
    pub span: u64,
    t0: u64,
    pub warnings: Vec<String>,
    pub opts: Options,
    /// The pipes and sockets a causal replay counts bytes through (0: not
    /// causal).
    pub queues: usize,
    /// Which of them are pipes: their waiters queue exclusively, a
    /// socket's not (`Futex::nonexclusive`).
    queue_is_pipe: Vec<bool>,
    /// The recorded autogroups its tasks are in: path and nice, by path
    /// (none without `# autogroup` lines, with `enabled=0`, or with
    /// `no_autogroup`).
    pub autogroups: Vec<(String, i32)>,
    /// Every recorded switch-in of a replayed task, in trace order.
    switch_ins: Vec<SwitchIn>,
}

/// A recorded switch-in: what the model's context_switch cost depends on.
#[derive(Clone, Copy, Debug)]
struct SwitchIn {
    cpu: usize,
    task: usize,
    /// The CPU the task last ran on before.
    from: Option<usize>,
    /// Not a switch: the task was running there when the trace began (it
    /// is what the CPU's caches and mm hold; it costs nothing).
    seen: bool,
}

/// What the trace showed of one CPU so far.
#[derive(Clone, Copy, Debug)]
struct CpuSeen {
    /// Its first record.
    first: u64,
    /// Its last sched_switch.
    last_switch: Option<u64>,
    /// The replayed task last seen running on it.
    current: Option<usize>,
}

impl CpuSeen {
    /// The earliest a task found on the CPU without a traced switch-in can
    /// have started there.
    fn since(&self) -> u64 {
        self.last_switch.unwrap_or(self.first)
    }
}

struct Builder2 {
    tasks: Vec<RTask>,
    switch_ins: Vec<SwitchIn>,
    by_pid: BTreeMap<u32, usize>,
    select: Vec<String>,
    t0: u64,
    edges: usize,
    timers: usize,
    reconstructed: usize,
    /// Runs that ended without a traced switch-out (`end_lost_run`).
    lost_switch_outs: usize,
    handover: bool,
    handovers: usize,
    cpus: BTreeMap<usize, CpuSeen>,
    /// Wakeups onto another CPU not yet known to have sent an IPI, by
    /// target CPU: (waker, index of its Wake atom, wakee pid).
    ipi_pending: BTreeMap<usize, Vec<(usize, usize, u32)>>,
    /// Wakee → (waker, index of its wake atom, the waker's CPU) of a
    /// sched_waking whose sched_wakeup has not come yet: sched_waking's
    /// target_cpu is the CPU the wakee last ran on (try_to_wake_up traces
    /// it before select_task_rq), so where the wakeup went is settled by
    /// sched_wakeup's.
    waking: BTreeMap<usize, (usize, usize, usize)>,
    /// (pid, fd, which calls) → queue, from the trace's `# fd` lines: with
    /// them the replay is causal.
    fds: BTreeMap<(u32, u32, FdUse), usize>,
    queues: Vec<Queue>,
    /// pid → its autogroup's index, from the `# autogroup` lines.
    group_of: BTreeMap<u32, usize>,
}

impl Builder2 {
    /// The replayed task for `pid` (None: idle, or not selected). A pid
    /// whose task exited is a new task (the pid was reused); a pid not
    /// selected becomes one when it takes a selected comm (exec).
    fn task(&mut self, pid: u32, comm: &str, prio: i32, line: usize) -> Option<usize> {
        if pid == 0 || pid == UNKNOWN_PID {
            return None;
        }
        let selected = self.select.is_empty() || self.select.iter().any(|s| s == comm);
        match self.by_pid.get(&pid) {
            Some(&usize::MAX) if !selected => return None,
            Some(&i) if i != usize::MAX && !self.tasks[i].dead => return Some(i),
            None if !selected => {
                self.by_pid.insert(pid, usize::MAX);
                return None;
            }
            _ => {}
        }
        let i = self.tasks.len();
        self.tasks.push(RTask {
            pid,
            tgid: None,
            comm: comm.to_string(),
            prio,
            first_line: line,
            parent: None,
            start: self.t0,
            start_blocked: false,
            atoms: Vec::new(),
            rec: Recorded::default(),
            running_since: None,
            runnable_since: None,
            acc: 0,
            acc_switches: 0,
            switch_ins: Vec::new(),
            started: false,
            dead: false,
            exiting: false,
            last_cpu: None,
            cpu_changes: 0,
            migrate_events: 0,
            enqueued: None,
            woke: Vec::new(),
            preempted_by: None,
            waiters: Vec::new(),
            cpus: Vec::new(),
            sys: None,
            group: self.group_of.get(&pid).copied(),
        });
        self.by_pid.insert(pid, i);
        Some(i)
    }

    /// One queue per object the `# fd` lines name.
    fn name_queues(&mut self, fds: &BTreeMap<(u32, u32, FdUse), String>) {
        let mut by_name: BTreeMap<&str, usize> = BTreeMap::new();
        for (&key, name) in fds {
            let n = by_name.len();
            let q = *by_name.entry(name).or_insert(n);
            if q == self.queues.len() {
                self.queues.push(Queue {
                    name: name.clone(),
                    ..Queue::default()
                });
            }
            self.fds.insert(key, q);
        }
    }

    /// One group per autogroup the `# autogroup` lines name, in the order
    /// of their paths; each task's index into them.
    fn name_autogroups(&mut self, lines: &BTreeMap<u32, (String, i32)>) -> Vec<(String, i32)> {
        let groups: BTreeMap<&str, i32> = lines.values().map(|(p, n)| (p.as_str(), *n)).collect();
        let index: BTreeMap<&str, usize> =
            groups.keys().enumerate().map(|(i, p)| (*p, i)).collect();
        for (&pid, (path, _)) in lines {
            self.group_of.insert(pid, index[path.as_str()]);
        }
        groups
            .into_iter()
            .map(|(p, n)| (p.to_string(), n))
            .collect()
    }

    fn known(&self, pid: u32) -> Option<usize> {
        self.by_pid.get(&pid).copied().filter(|&i| i != usize::MAX)
    }

    /// The trace shows task `i` on `cpu` at `ts` (the context of a line,
    /// or the prev of a switch). First seen: it has run there since the
    /// CPU's last switch (or its first record). Seen before but not
    /// running: the trace lost its switch-in (this VM drops idle → task
    /// switches): it is put back at the later of its wakeup (or block)
    /// and the CPU's last switch.
    fn on_cpu(&mut self, i: usize, cpu: usize, ts: u64) {
        let since = self.cpus[&cpu].since();
        let t = &mut self.tasks[i];
        if t.dead || t.running_since.is_some() {
            return;
        }
        if !t.started {
            t.started = true;
            t.start = since;
            t.running_since = Some(since);
            t.last_cpu = Some(cpu);
            t.ran_on(cpu);
            self.switch_ins.push(SwitchIn {
                cpu,
                task: i,
                from: None,
                seen: true,
            });
            self.cpus.get_mut(&cpu).expect("seen").current = Some(i);
            return;
        }
        // sched_wakeup, when traced, is the enqueue: closer to the switch.
        let ready = match (t.runnable_since, t.atoms.last()) {
            (Some(r), _) => r.max(t.enqueued.unwrap_or(0)),
            (None, Some(Atom::Blocked(b))) => *b,
            _ => since,
        };
        self.reconstructed += 1;
        self.switch_in(i, cpu, since.max(ready).min(ts));
    }

    /// Close the running interval at `ts` and emit the accumulated burst.
    fn flush_run(&mut self, i: usize, ts: u64) {
        let t = &mut self.tasks[i];
        if let Some(s) = t.running_since {
            t.acc += ts.saturating_sub(s);
            t.rec.runtime += ts.saturating_sub(s);
            t.running_since = Some(ts);
        }
        if t.acc > 0 {
            let n = std::mem::take(&mut t.acc_switches);
            t.atoms.push(Atom::Run(std::mem::take(&mut t.acc), n));
        }
    }

    fn record(&mut self, r: &Record, use_wakeup: bool) -> Result<(), String> {
        let ts = r.ts;
        self.cpus.entry(r.cpu).or_insert(CpuSeen {
            first: ts,
            last_switch: None,
            current: None,
        });
        self.end_lost_run(r.cpu, r.ctx_pid, ts);
        if let Some(i) = self.known(r.ctx_pid) {
            self.on_cpu(i, r.cpu, ts);
            self.tasks[i].tgid = self.tasks[i].tgid.or(r.ctx_tgid);
        }
        match &r.ev {
            Event::Switch {
                prev,
                prev_state,
                next,
            } => {
                self.settle_ipis(r.cpu, prev.pid, prev_state, next.pid);
                let p = self.task(prev.pid, &prev.comm, prev.prio, r.line);
                let n = self.task(next.pid, &next.comm, next.prio, r.line);
                if let Some(i) = p {
                    self.on_cpu(i, r.cpu, ts);
                    self.switch_out(i, ts, prev_state, n);
                }
                self.cpus.get_mut(&r.cpu).expect("seen").last_switch = Some(ts);
                if let Some(i) = n {
                    self.switch_in(i, r.cpu, ts);
                }
            }
            Event::Waking {
                task,
                wakeup,
                target,
            } => {
                if let Some(i) = self.task(task.pid, &task.comm, task.prio, r.line) {
                    if !*wakeup {
                        // A sched_waking with no sched_wakeup after it
                        // (the task was still queued) settles nothing.
                        self.waking.remove(&i);
                    }
                    if *wakeup == use_wakeup {
                        self.wake(i, ts, r);
                    }
                    if *wakeup {
                        self.tasks[i].enqueued = Some(ts);
                        if let Some(c) = *target {
                            self.woken_onto(i, c);
                        }
                    }
                }
            }
            Event::WakeupNew { task, target } => {
                if let Some(i) = self.task(task.pid, &task.comm, task.prio, r.line) {
                    self.new_task_woken(i, r.cpu, *target);
                    let t = &mut self.tasks[i];
                    t.runnable_since = Some(ts);
                    if !t.started {
                        t.started = true;
                        t.start = ts;
                    }
                }
            }
            Event::Migrate { task } => {
                if let Some(i) = self.task(task.pid, &task.comm, task.prio, r.line) {
                    self.tasks[i].migrate_events += 1;
                }
            }
            Event::Fork { parent, child } => self.fork(r, parent, child)?,
            Event::SysEnter { write, fd } => {
                if let Some(i) = self.known(r.ctx_pid) {
                    self.sys_enter(i, ts, *write, *fd);
                }
            }
            Event::SysExit { write, ret } => {
                if let Some(i) = self.known(r.ctx_pid) {
                    self.sys_exit(i, ts, *write, *ret);
                }
            }
            // do_exit's own work runs until the final switch (prev_state
            // X or Z), which ends the task.
            Event::Exit { task } => {
                if let Some(i) = self.task(task.pid, &task.comm, task.prio, r.line) {
                    self.on_cpu(i, r.cpu, ts);
                    self.tasks[i].exiting = true;
                }
            }
        }
        Ok(())
    }

    /// Task `i` enters a read or write on `fd`. A read or write of a
    /// known queue waits, in the replay, for the bytes it will have read
    /// to be written, or for the room its bytes took (its `Want` or
    /// `Fit`, filled in at its exit): at its entry, since where a call
    /// that did not block would have blocked is not in the trace.
    fn sys_enter(&mut self, i: usize, ts: u64, write: bool, fd: u32) {
        let pid = self.tasks[i].pid;
        let how = if write { FdUse::Write } else { FdUse::Read };
        let queue = (self.fds.get(&(pid, fd, how)))
            .or_else(|| self.fds.get(&(pid, fd, FdUse::Both)))
            .copied();
        let want = queue.map(|q| {
            self.flush_run(i, ts);
            self.tasks[i].atoms.push(Atom::Want(2 * q, 0));
            self.tasks[i].atoms.len() - 1
        });
        self.tasks[i].sys = Some(Sys {
            write,
            queue,
            want,
            put: None,
            full_at: None,
        });
    }

    /// Task `i` blocks: a write blocked on a full queue tells its room.
    fn sys_block(&mut self, i: usize) {
        if let Some(s) = self.tasks[i].sys.as_mut().filter(|s| s.write) {
            if let Some(q) = s.queue {
                let queue = &self.queues[q];
                s.full_at = Some(queue.written.saturating_sub(queue.read));
            }
        }
    }

    /// Task `i`'s read or write returns `ret` bytes: counted on its queue.
    /// The n-th byte read from a queue needs the n-th byte written to it,
    /// by whichever task, and a write needs the room its bytes take: a
    /// read's `Want` is the queue's bytes read so far, a write's `Fit`
    /// its bytes written so far; each posts its bytes (at its first
    /// wakeup of a task on the queue's other side, or here).
    fn sys_exit(&mut self, i: usize, ts: u64, write: bool, ret: i64) {
        let Some(s) = self.tasks[i].sys.take() else {
            return;
        };
        let (Some(q), true) = (s.queue, s.write == write) else {
            return;
        };
        let n = ret.max(0) as u64;
        let queue = &mut self.queues[q];
        let (want, count) = if write {
            queue.written += n;
            if let Some(full) = s.full_at {
                queue.full = Some(queue.full.map_or(full, |f| f.min(full)));
            }
            (Atom::Fit(q), 2 * q)
        } else {
            queue.read += n;
            (Atom::Want(2 * q, queue.read), 2 * q + 1)
        };
        let t = &mut self.tasks[i];
        if let Some(a) = s.want.filter(|_| n > 0) {
            t.atoms[a] = want;
        }
        let put = Atom::Put(count, n);
        match s.put {
            Some(a) => t.atoms[a] = put,
            None => {
                self.flush_run(i, ts);
                self.tasks[i].atoms.push(put);
            }
        }
    }

    /// A wakeup by `w`, in a read or write on a queue, of `i`, in a call
    /// on the queue's other side: the replay makes it by `w`'s bytes (its
    /// `Put`, placed here if this is its first such wakeup), not by an
    /// edge.
    fn causal_wake(&mut self, w: usize, i: usize, r: &Record) -> bool {
        let (Some(ws), Some(is)) = (self.tasks[w].sys, self.tasks[i].sys) else {
            return false;
        };
        let Some(q) = ws
            .queue
            .filter(|_| ws.write != is.write && is.queue == ws.queue)
        else {
            return false;
        };
        self.flush_run(w, r.ts);
        if ws.put.is_none() {
            let t = &mut self.tasks[w];
            t.atoms.push(Atom::Put(2 * q + !ws.write as usize, 0));
            t.sys = Some(Sys {
                put: Some(t.atoms.len() - 1),
                ..ws
            });
        }
        self.waker_atom(w, i, r, None);
        true
    }

    /// A fork creates a task that did not exist: a child pid already seen
    /// is a reused pid (its task exited) or a trace that contradicts
    /// itself (an error naming the line).
    fn fork(&mut self, r: &Record, parent: &Task, child: &Task) -> Result<(), String> {
        if child.pid == parent.pid {
            return Err(format!(
                "sched_process_fork: child_pid {} is the forking task's pid",
                child.pid
            ));
        }
        match self.by_pid.get(&child.pid).copied() {
            Some(c) if c == usize::MAX || self.tasks[c].exiting => {
                self.by_pid.remove(&child.pid);
            }
            Some(c) if !self.tasks[c].dead => {
                return Err(format!(
                    "sched_process_fork: child_pid {} already exists (seen at line {})",
                    child.pid, self.tasks[c].first_line
                ))
            }
            _ => {}
        }
        let c = self.task(child.pid, &child.comm, child.prio, r.line);
        let p = self.task(parent.pid, &parent.comm, parent.prio, r.line);
        if let (Some(p), Some(c)) = (p, c) {
            self.on_cpu(p, r.cpu, r.ts);
            self.flush_run(p, r.ts);
            self.tasks[p].atoms.push(Atom::Fork(c, false));
            self.tasks[p].woke.push(c);
            self.tasks[c].parent = Some(p);
        }
        if let Some(c) = c {
            let t = &mut self.tasks[c];
            t.started = true;
            t.start = r.ts;
        }
        Ok(())
    }

    /// The fork of `c` put it on another CPU than its parent's: the
    /// parent's Fork atom says so.
    fn new_task_woken(&mut self, c: usize, cpu: usize, target: Option<usize>) {
        let remote = target.is_some_and(|t| t != cpu);
        let Some(p) = self.tasks[c].parent else {
            return;
        };
        let fork = self.tasks[p].atoms.iter_mut().rev().find_map(|a| match a {
            Atom::Fork(x, r) if *x == c => Some(r),
            _ => None,
        });
        if let Some(r) = fork {
            *r = remote;
        }
    }

    /// `i` leaves the CPU to `next`. With `handover`, a waker (or parent)
    /// preempted by its own wakee (or new child, both in `woke`) that has
    /// not run again when that wakee next leaves a CPU is taken to have
    /// waited for it: the wakee's switch-out is an edge to the waker's
    /// resumption (a pipe writer's next read needs the reply, a parent
    /// waits for its child's "ready"; no sched_waking shows that, since
    /// the waker never slept). An inference, off by default: see
    /// docs/replay.md.
    fn switch_out(&mut self, i: usize, ts: u64, state: &str, next: Option<usize>) {
        self.flush_run(i, ts);
        let t = &mut self.tasks[i];
        t.running_since = None;
        t.rec.switches += 1;
        if t.dead {
            return;
        }
        if state.starts_with('R') && self.handover {
            let by = next.filter(|x| t.woke.contains(x));
            t.preempted_by = by;
            if let Some(x) = by {
                self.tasks[x].waiters.push(i);
            }
        }
        for b in std::mem::take(&mut self.tasks[i].waiters) {
            if self.tasks[b].preempted_by == Some(i) {
                let e = self.edges;
                self.edges += 1;
                self.handovers += 1;
                self.tasks[i].atoms.push(Atom::Wake(e, Reach::Local));
                self.tasks[b].atoms.push(Atom::Await(e));
            }
        }
        let t = &mut self.tasks[i];
        match state.chars().next() {
            Some('R') => t.runnable_since = Some(ts),
            Some('X') | Some('Z') => {
                t.atoms.push(Atom::Exit);
                t.dead = true;
            }
            _ => {
                t.atoms.push(Atom::Blocked(ts));
                self.sys_block(i);
            }
        }
    }

    fn switch_in(&mut self, i: usize, cpu: usize, ts: u64) {
        let t = &mut self.tasks[i];
        if !t.started {
            // First seen here: runnable from now on (not since the trace
            // began, which nothing in the trace says).
            t.started = true;
            t.start = ts;
            t.runnable_since = Some(ts);
        }
        // A wakeup the trace did not show: the block lasted until now.
        if let Some(Atom::Blocked(since)) = t.atoms.last().copied() {
            *t.atoms.last_mut().expect("last") = Atom::Timer(ts - since);
            self.timers += 1;
            t.runnable_since = Some(ts);
        }
        if let Some(r) = t.runnable_since.take() {
            t.rec.wait += ts.saturating_sub(r);
        }
        t.running_since = Some(ts);
        t.acc_switches += 1;
        t.switch_ins.push(self.switch_ins.len() as u32);
        self.switch_ins.push(SwitchIn {
            cpu,
            task: i,
            from: t.last_cpu,
            seen: false,
        });
        let t = &mut self.tasks[i];
        t.woke.clear();
        t.preempted_by = None;
        if t.last_cpu.is_some_and(|c| c != cpu) {
            t.cpu_changes += 1;
        }
        t.last_cpu = Some(cpu);
        t.ran_on(cpu);
        if let Some(c) = self.cpus.get_mut(&cpu) {
            c.current = Some(i);
        }
    }

    /// A replayed task still running on `cpu` when a record there is in
    /// another context (another task's, or idle's) lost its switch-out:
    /// this VM's kernel traces nothing in the context of PID 1's threads,
    /// which are switched in and never out (docs/replay.md, "Recorded on
    /// this VM"). Its run ends at this record, the first sign that the CPU
    /// ran something else, and it blocks there; its next switch-in, or a
    /// traced wakeup, ends the block (as for any block).
    fn end_lost_run(&mut self, cpu: usize, ctx: u32, ts: u64) {
        let Some(x) = self.cpus[&cpu].current else {
            return;
        };
        let t = &self.tasks[x];
        if ctx == UNKNOWN_PID || ctx == t.pid {
            return;
        }
        self.cpus.get_mut(&cpu).expect("seen").current = None;
        if t.running_since.is_none() || t.last_cpu != Some(cpu) || t.dead {
            return;
        }
        self.lost_switch_outs += 1;
        self.switch_out(x, ts, "S", None);
        // Blocked now, whatever wakeup the trace showed while it ran: its
        // next switch-in is after this block, not after that wakeup.
        self.tasks[x].runnable_since = None;
    }

    /// The target was woken: by a replayed task running in its own context
    /// (an edge), else by an interrupt (a timer).
    ///
    /// The kernel traces sched_waking only for a task whose state is a
    /// sleeping one (`try_to_wake_up` checks `p->__state` first): one that
    /// blocked, or one still on its way to block, running or preempted
    /// there (`ttwu_runnable`). The latter waited for the same condition:
    /// it depends on the waker at the point where it is now, and blocks
    /// there in the replay if it arrives before the waker's post.
    fn wake(&mut self, i: usize, ts: u64, r: &Record) {
        if !self.tasks[i].started {
            // Blocked since before the trace.
            let t0 = self.t0;
            let t = &mut self.tasks[i];
            t.started = true;
            t.start_blocked = true;
            t.atoms.push(Atom::Blocked(t0));
        }
        let waker = if r.irq { None } else { self.known(r.ctx_pid) };
        let waker = waker.filter(|&w| w != i && !self.tasks[w].dead);
        if waker.is_some_and(|w| self.causal_wake(w, i, r)) {
            if let Some(Atom::Blocked(_)) = self.tasks[i].atoms.last() {
                self.tasks[i].atoms.pop();
                self.tasks[i].runnable_since = Some(ts);
                self.tasks[waker.expect("some")].woke.push(i);
            }
            return;
        }
        let Some(Atom::Blocked(since)) = self.tasks[i].atoms.last().copied() else {
            // On its way to block: an edge, no block to end.
            if let (Some(w), false) = (waker, self.tasks[i].dead) {
                self.flush_run(i, ts);
                let e = self.edge(w, i, r);
                self.tasks[i].atoms.push(Atom::Await(e));
            }
            return;
        };
        if let Some(w) = waker {
            self.tasks[w].woke.push(i);
        }
        let atom = match waker {
            Some(w) => Atom::Await(self.edge(w, i, r)),
            None => {
                self.timers += 1;
                Atom::Timer(ts - since)
            }
        };
        let t = &mut self.tasks[i];
        *t.atoms.last_mut().expect("last") = atom;
        t.runnable_since = Some(ts);
    }

    /// A new wakeup edge, posted by `w` for `wakee` at `ts` (record `r`).
    /// One onto another CPU is taken to have sent an IPI until that CPU's
    /// next switch says otherwise (settle_ipis).
    fn edge(&mut self, w: usize, wakee: usize, r: &Record) -> usize {
        let e = self.edges;
        self.edges += 1;
        self.waker_atom(w, wakee, r, Some(e));
        e
    }

    /// The waker's atom of a wakeup at record `r`: `Wake` of an edge, or
    /// `Woke` (made by a write).
    fn waker_atom(&mut self, w: usize, wakee: usize, r: &Record, edge: Option<usize>) {
        self.flush_run(w, r.ts);
        let at = self.tasks[w].atoms.len();
        let pending = (w, at, self.tasks[wakee].pid);
        let reach = match r.ev {
            Event::Waking {
                target: Some(c), ..
            } => self.reach_onto(c, r.cpu, pending),
            _ => Reach::Local,
        };
        if let Event::Waking { wakeup: false, .. } = r.ev {
            self.waking.insert(wakee, (w, at, r.cpu));
        }
        self.tasks[w].atoms.push(match edge {
            Some(e) => Atom::Wake(e, reach),
            None => Atom::Woke(reach),
        });
    }

    /// sched_wakeup of `wakee` onto `target`: where the wakeup its
    /// sched_waking began went. Onto the waker's own CPU it was local (a
    /// wakee pulled by wake_affine), else onto `target`'s rq, whose next
    /// switch says whether it sent an IPI.
    fn woken_onto(&mut self, wakee: usize, target: usize) {
        let Some((w, at, cpu)) = self.waking.remove(&wakee) else {
            return;
        };
        let pending = (w, at, self.tasks[wakee].pid);
        for list in self.ipi_pending.values_mut() {
            list.retain(|&p| p != pending);
        }
        let reach = self.reach_onto(target, cpu, pending);
        if let Some(Atom::Wake(_, r) | Atom::Woke(r)) = self.tasks[w].atoms.get_mut(at) {
            *r = reach;
        }
    }

    /// A wakeup from `from` onto `target`: local on the same CPU, else
    /// remote, with an IPI until `target`'s next switch says otherwise
    /// (`pending`: waker, index of its wake atom, wakee pid).
    fn reach_onto(&mut self, target: usize, from: usize, pending: (usize, usize, u32)) -> Reach {
        if target == from {
            return Reach::Local;
        }
        self.ipi_pending.entry(target).or_default().push(pending);
        Reach::Remote {
            from,
            to: target,
            ipi: true,
            idle: true,
        }
    }

    /// The next switch on a remote wakeup's target CPU tells whether the
    /// wakeup sent an IPI (ttwu_queue_cond, resched_curr): the CPU was
    /// idle (the wakelist, or the idle task's reschedule), or the wakee
    /// preempted the task running there. A wakee only queued behind a
    /// busy CPU's task cost the waker the remote enqueue, no IPI. Of the
    /// wakeups of an idle CPU only the first sent one: a later one found
    /// the wakelist not empty (llist_add's return value) or, once the
    /// IPI was handled, need-resched set (resched_curr returns early).
    fn settle_ipis(&mut self, cpu: usize, prev: u32, prev_state: &str, next: u32) {
        let idle = prev == 0;
        let pending = self.ipi_pending.remove(&cpu).unwrap_or_default();
        for (n, (w, at, wakee)) in pending.into_iter().enumerate() {
            let ipi = (idle && n == 0) || (next == wakee && prev_state.starts_with('R'));
            if let Some(Atom::Wake(_, reach) | Atom::Woke(reach)) = self.tasks[w].atoms.get_mut(at)
            {
                reach.settle(ipi, idle);
            }
        }
    }

    fn finish(&mut self, end: u64) {
        for i in 0..self.tasks.len() {
            if self.tasks[i].running_since.is_some() {
                self.flush_run(i, end);
            }
            let t = &mut self.tasks[i];
            if t.acc > 0 {
                let n = std::mem::take(&mut t.acc_switches);
                t.atoms.push(Atom::Run(std::mem::take(&mut t.acc), n));
            }
            // Still blocked at the end of the trace: the replay ends there.
            if let Some(Atom::Blocked(_)) = t.atoms.last() {
                t.atoms.pop();
            }
            for a in &mut t.atoms {
                *a = resolve(*a, &self.queues);
            }
            // Every migration is a sched_migrate_task event; a trace
            // without them (or with some lost) still shows the CPU changes
            // between runs, a lower bound.
            t.rec.migrations = t.migrate_events.max(t.cpu_changes);
        }
    }
}

impl Replay {
    /// Parse `file` and rebuild its tasks (only those whose comm is in
    /// `select`, when given).
    /// `-` reads it from stdin (`perf script | schedlab replay -`).
    pub fn load(file: &str, select: &[String], opts: Options) -> Result<Replay, String> {
        let (file, text) = if file == crate::util::sink::STDIO {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .map(|_| ("<stdin>", text))
        } else {
            std::fs::read_to_string(file).map(|text| (file, text))
        }
        .map_err(|e| format!("{file}: cannot read trace: {e}"))?;
        let parsed = parse::parse_all(file, &text)?;
        Self::from_records(file, &parsed, select, opts)
    }

    /// The replay of a parsed trace: causal when its `# fd` lines name
    /// the queues of its reads and writes (docs/replay.md), else by the
    /// recorded wakeups alone (its syscall events are then not used).
    pub fn from_records(
        file: &str,
        parsed: &Parsed,
        select: &[String],
        opts: Options,
    ) -> Result<Replay, String> {
        let recs = &parsed.recs;
        let (Some(first), Some(last)) = (recs.first(), recs.last()) else {
            return Err(format!("{file}: the trace has no scheduler events"));
        };
        let use_wakeup = !recs
            .iter()
            .any(|r| matches!(r.ev, Event::Waking { wakeup: false, .. }));
        let mut b = Builder2 {
            tasks: Vec::new(),
            switch_ins: Vec::new(),
            by_pid: BTreeMap::new(),
            select: select.to_vec(),
            t0: first.ts,
            edges: 0,
            timers: 0,
            reconstructed: 0,
            lost_switch_outs: 0,
            handover: opts.handover,
            handovers: 0,
            cpus: BTreeMap::new(),
            ipi_pending: BTreeMap::new(),
            waking: BTreeMap::new(),
            fds: BTreeMap::new(),
            queues: Vec::new(),
            group_of: BTreeMap::new(),
        };
        b.name_queues(&parsed.fds);
        let autogroups = if opts.no_autogroup || parsed.autogroup_enabled == Some(false) {
            Vec::new()
        } else {
            b.name_autogroups(&parsed.autogroups)
        };
        let causal = !b.queues.is_empty();
        for r in recs {
            if !causal && matches!(r.ev, Event::SysEnter { .. } | Event::SysExit { .. }) {
                continue;
            }
            b.record(r, use_wakeup)
                .map_err(|m| format!("{file}:{}: {m}", r.line))?;
        }
        b.finish(last.ts);
        if let Some(q) = b.queues.iter().find(|q| q.written > u32::MAX as u64) {
            return Err(format!(
                "{file}: {} bytes were written to {}, more than the replay counts (4 GiB)",
                q.written, q.name
            ));
        }
        if b.tasks.is_empty() {
            return Err(format!("{file}: no task to replay (check --select)"));
        }
        let mut warnings = Vec::new();
        if b.edges == 0 {
            warnings.push(format!(
                "{file}: no task wakes another (no sched_waking/sched_wakeup edges): \
                 every sleep is replayed with its recorded length"
            ));
        }
        let busy: u64 = b.tasks.iter().map(|t| t.rec.runtime).sum();
        let span = last.ts - first.ts;
        let capacity = span * b.cpus.len() as u64;
        if busy > capacity + capacity / 100 {
            warnings.push(format!(
                "{file}: its tasks ran {:.1} ms on {} CPUs in {:.1} ms, more than the CPUs \
                 have: the trace lost records (a task's switch-out), and its recorded \
                 CPU time and span cannot both be replayed",
                busy as f64 / 1e6,
                b.cpus.len(),
                span as f64 / 1e6
            ));
        }
        for w in &warnings {
            eprintln!("schedlab: warning: {w}");
        }
        Ok(Replay {
            file: file.to_string(),
            tasks: b.tasks,
            edges: b.edges,
            timers: b.timers,
            reconstructed: b.reconstructed,
            lost_switch_outs: b.lost_switch_outs,
            handovers: b.handovers,
            span,
            t0: first.ts,
            warnings,
            opts,
            queues: b.queues.len(),
            queue_is_pipe: b.queues.iter().map(Queue::is_pipe).collect(),
            autogroups,
            switch_ins: b.switch_ins,
        })
    }

    pub fn nr_tasks(&self) -> usize {
        self.tasks.len()
    }

    /// Create the tasks: a futex word per edge (or, with `any_waker`, a
    /// counting word per awaiting task), programs from the atoms.
    pub fn build(&self, k: &mut Kernel, b: &mut Builder) {
        let words = self.words(k);
        let queue0 = k.futexes.len();
        for &pipe in &self.queue_is_pipe {
            for _ in 0..2 {
                let f = k.futex_new(0);
                k.futexes[f].nonexclusive = !pipe;
            }
        }
        let base = k.tasks.len();
        let switch_ns = self.switch_costs(k);
        for t in &self.tasks {
            let mut ops = self.program(k, t, &words, queue0, base, &switch_ns);
            ops.push(Op::Mark(Mark::Stop));
            // A causal replay leaves the exit's work in the recorded
            // bursts, where it was: do_exit traces sched_process_exit
            // before exit_mm and exit_files and wakes the parent after
            // them, so taking it out of the bursts before the exit would
            // wake the parent early by that much.
            let exits = t.atoms.last() == Some(&Atom::Exit) && self.queues == 0;
            ops.push(if exits { Op::Exit } else { Op::TraceEnd });
            let nice = (t.prio - 120).clamp(-20, 19);
            let allowed = self.allowed(k, t);
            let placed = b.cgroup;
            b.cgroup = self.task_group(k, t, placed);
            b.task(
                k,
                TaskSpec {
                    comm: &t.comm,
                    group_of: None,
                    nice,
                    allowed,
                    ops: Rc::from(ops),
                },
            );
            b.cgroup = placed;
        }
        // The replay's time span starts with the trace.
        k.tasks[base].prog.marks.push((Mark::Start, 0));
        for (i, t) in self.tasks.iter().enumerate() {
            let p = base + i;
            // Its recorded process, else its own: a thread shares its
            // group's address space (no switch_mm between them) and exits
            // at a fifth of a process's cost (`model_cost` agrees).
            k.tasks[p].pid = t.pid;
            k.tasks[p].tgid = t.process();
            k.tasks[p].mm = t.process();
            // prio 0..99 is an RT task (written 99 - rt_priority).
            if (0..100).contains(&t.prio) {
                k.set_scheduler(p, crate::kernel::rt::Policy::Fifo, (99 - t.prio) as u32);
            }
            if t.parent.is_none() {
                self.start(k, b, p, t);
            }
        }
    }

    /// The task group a task starts in: the workload's placement where it
    /// has one (`cgroup=PATH`, a group other than the root: it wins), else
    /// the task's recorded autogroup, which the run created
    /// (`autogroups`), else the root.
    fn task_group(&self, k: &Kernel, t: &RTask, placed: usize) -> usize {
        match t.group {
            Some(g) if placed == 0 => k.groups.find(&self.autogroups[g].0).unwrap_or(0),
            _ => placed,
        }
    }

    /// Each edge's word and the count its await needs. By default edge e
    /// has its own word, posted once. With `any_waker`, the awaits of one
    /// task share a counting word and its k-th await needs k posts: any
    /// recorded waker of the task ends its next wait (a reader woken by
    /// whichever of its writers comes first), not only the one the
    /// recording happened to show.
    fn words(&self, k: &mut Kernel) -> Vec<(usize, u32)> {
        let first = k.futexes.len();
        let mut words: Vec<(usize, u32)> = (0..self.edges).map(|e| (first + e, 1)).collect();
        for _ in 0..self.edges {
            k.futex_new(0);
        }
        if !self.opts.any_waker {
            return words;
        }
        for t in &self.tasks {
            let word = k.futexes.len();
            k.futex_new(0);
            let awaits = t.atoms.iter().filter_map(|a| match a {
                Atom::Await(e) => Some(*e),
                _ => None,
            });
            for (n, e) in awaits.enumerate() {
                words[e] = (word, n as u32 + 1);
            }
        }
        words
    }

    /// With `pin`, the CPUs the trace shows the task on (those the machine
    /// has); otherwise, or when it never ran, every CPU.
    fn allowed(&self, k: &Kernel, t: &RTask) -> Option<Vec<usize>> {
        let n = k.machine.nr_cpus();
        let cpus: Vec<usize> = t.cpus.iter().copied().filter(|&c| c < n).collect();
        (self.opts.pin && !cpus.is_empty()).then_some(cpus)
    }

    /// A task's atoms as ops. A recorded burst already holds the kernel
    /// work of the atom that ends it (fork, exit) or, for a wakeup, of the
    /// atom before it (sched_waking fires as try_to_wake_up begins; the
    /// wakeup's work follows); the model charges that work again, so it
    /// is taken out of the burst that holds it, and what that burst
    /// cannot give (the recorded work was shorter than the model's mean
    /// cost: a noise draw, or a cheaper machine) out of the task's next
    /// bursts, so that the replay gives back what it charges on average.
    /// Count c of the queues is word `queue0 + c`; a causal replay's
    /// reads and writes are no ops of their own when they moved no bytes,
    /// and a wakeup made by a write only its waker's cost.
    fn program(
        &self,
        k: &Kernel,
        t: &RTask,
        words: &[(usize, u32)],
        queue0: usize,
        base: Pid,
        switch_ns: &[u64],
    ) -> Vec<Op> {
        let slack = k.cfg.timer_slack_ns;
        let mut ops = Vec::new();
        let mut debt = 0;
        let mut switch_ins = t.switch_ins.iter().map(|&s| switch_ns[s as usize]);
        for a in &t.atoms {
            let cost = self.model_cost(k, t, a);
            match a {
                Atom::Wake(..) => debt += cost,
                Atom::Woke(_) => {
                    debt += cost;
                    continue;
                }
                // wake_up_new_task follows the fork's trace line: its IPI
                // is in the burst after.
                Atom::Fork(_, remote) => {
                    if self.queues == 0 {
                        take_from_bursts(&mut ops, cost);
                    }
                    debt += k.machine.cost.ipi_send_ns * *remote as u64;
                }
                Atom::Exit if self.queues == 0 => {
                    take_from_bursts(&mut ops, cost);
                }
                Atom::Exit => {}
                Atom::Run(..)
                | Atom::Blocked(_)
                | Atom::Put(..)
                | Atom::Fit(_)
                | Atom::Want(..)
                | Atom::Room(..)
                | Atom::Await(_)
                | Atom::Timer(_) => {}
            }
            if let Atom::Want(_, 0) | Atom::Put(_, 0) = a {
                continue;
            }
            if let (Atom::Wake(e, _), Some(Op::PostWake { futex, n })) = (a, ops.last_mut()) {
                // Wakeups at one instant are one call (a write waking its
                // pollers): in a causal replay, posted together.
                if self.queues > 0 && *futex + *n as usize == words[*e].0 {
                    *n += 1;
                    continue;
                }
            }
            ops.push(match *a {
                Atom::Run(ns, n) => {
                    debt += switch_ins.by_ref().take(n as usize).sum::<u64>();
                    let ns = ns.max(1);
                    let paid = debt.min(ns - 1);
                    debt -= paid;
                    Op::RunBurst(ns - paid)
                }
                Atom::Timer(ns) => Op::Sleep(Dist::Fixed(ns.saturating_sub(slack))),
                Atom::Await(e) => Op::AwaitWake {
                    futex: words[e].0,
                    need: words[e].1,
                },
                Atom::Wake(e, _) => Op::PostWake {
                    futex: words[e].0,
                    n: 1,
                },
                // A causal replay leaves the fork's work in the recorded
                // bursts, like the exit's: it does not depend on the
                // schedule, and charging the model's (with its own noise)
                // for the recorded one's moves every later step.
                Atom::Fork(c, _) if self.queues > 0 => Op::ForkTraced { child: base + c },
                Atom::Fork(c, _) => Op::Fork { child: base + c },
                Atom::Want(c, n) => Op::AwaitWake {
                    futex: queue0 + c,
                    need: n as u32,
                },
                Atom::Room(q, full, level) => Op::AwaitRoom {
                    written: queue0 + 2 * q,
                    read: queue0 + 2 * q + 1,
                    full: full as u32,
                    level: level as u32,
                },
                Atom::Put(c, n) => Op::PostBytes {
                    futex: queue0 + c,
                    bytes: n as u32,
                },
                Atom::Exit | Atom::Blocked(_) | Atom::Woke(_) | Atom::Fit(_) => break,
            });
        }
        ops
    }

    /// The model's cost of each recorded switch-in, as `switch_cost`
    /// (kernel/core.rs) prices it on the recorded schedule: the register
    /// switch; a switch_mm where the CPU last switched to another process,
    /// with a TLB flush where that process lost its ASID (footprint.rs);
    /// the cache refill after a migration, or as the tasks run there
    /// since evicted it. The recorded burst after a switch-in holds the
    /// real one, and the model charges its own again, so the burst gives
    /// back this much. Noise aside, the closed loop (a simulated trace
    /// replayed on its machine) gets back exactly what it was charged.
    /// Tasks not replayed (`--select`, idle) leave no footprint here.
    fn switch_costs(&self, k: &Kernel) -> Vec<u64> {
        let (m, c) = (&k.machine, &k.machine.cost);
        // Each CPU's footprint and loaded mm (u32::MAX: none, as at boot).
        let mut cpus: BTreeMap<usize, (Footprint, u32)> = BTreeMap::new();
        let refill = |from: usize, to: usize| match from.max(to) < m.nr_cpus() {
            true => m.cache_refill_ns(from, to),
            // A recorded CPU the machine has not: priced as within an LLC.
            false => c.cache_refill_llc_ns,
        };
        let cost = |s: &SwitchIn, cpus: &mut BTreeMap<usize, (Footprint, u32)>| {
            let (fp, loaded) = cpus
                .entry(s.cpu)
                .or_insert_with(|| (Footprint::default(), u32::MAX));
            let task = (s.task, self.tasks[s.task].process());
            let cache = fp.switch_in_ns(c, loaded, task, s.from, s.cpu, |f| refill(f, s.cpu));
            match s.seen {
                true => 0,
                false => c.context_switch_ns + cache,
            }
        };
        self.switch_ins.iter().map(|s| cost(s, &mut cpus)).collect()
    }

    /// The cost the model charges for an atom's kernel work: for a wakeup
    /// the waker's share, local or (as recorded) onto another CPU's rq,
    /// with an IPI if it sent one; the recorded burst holds the real one.
    fn model_cost(&self, k: &Kernel, t: &RTask, a: &Atom) -> u64 {
        let c = &k.machine.cost;
        match a {
            Atom::Fork(..) => c.fork_ns,
            Atom::Exit if t.process() != t.pid => c.exit_ns * SHARED_MM_EXIT_PCT / 100,
            Atom::Exit => c.exit_ns,
            Atom::Wake(_, Reach::Local) | Atom::Woke(Reach::Local) => {
                c.ttwu_waker_ns(TtwuPath::Local)
            }
            Atom::Wake(_, r @ Reach::Remote { ipi, .. })
            | Atom::Woke(r @ Reach::Remote { ipi, .. }) => {
                c.ttwu_waker_ns(ttwu_path(k, *r)) + c.ipi_send_ns * *ipi as u64
            }
            _ => 0,
        }
    }

    /// Start a task that no replayed parent forks: runnable at its start
    /// time, or blocked on its first atom.
    fn start(&self, k: &mut Kernel, b: &Builder, p: Pid, t: &RTask) {
        let at = t.start - self.t0;
        let first = k.tasks[p].prog.ops.first().copied();
        if t.start_blocked {
            match first {
                Some(Op::AwaitWake { futex, .. }) => {
                    k.tasks[p].prog.phase = 1;
                    k.prepare_to_wait(crate::kernel::wait::WaitQueueRef::Futex(futex), p, true);
                    return;
                }
                Some(Op::Sleep(Dist::Fixed(ns))) => {
                    k.tasks[p].prog.pc = 1;
                    return timer_start(k, p, at + ns);
                }
                _ => {}
            }
        }
        if at == 0 {
            b.launch(k, p);
        } else {
            timer_start(k, p, at);
        }
    }

    /// The recorded numbers of each replayed task, in task order.
    pub fn recorded(&self) -> Vec<(u32, &str, Recorded)> {
        self.tasks
            .iter()
            .map(|t| (t.pid, t.comm.as_str(), t.rec))
            .collect()
    }
}

/// A causal atom once the whole trace is read. Bytes read that no traced
/// write put there were in the queue before the trace began (or came
/// from an untraced writer): a read needs that many fewer, and the
/// queue's thresholds count them as held. A write waits while the
/// queue, as the simulation filled it, is full, as the kernel decides
/// (sock_alloc_send_pskb, pipe_write): not while the bytes written
/// before it in the recording are unread, which held writers on queues
/// the simulation had not filled (until 2026-11-28: below). No fill
/// known (no write blocked): no wait.
fn resolve(a: Atom, queues: &[Queue]) -> Atom {
    match a {
        Atom::Want(c, n) if c % 2 == 0 => {
            let q = &queues[c / 2];
            Atom::Want(c, n.saturating_sub(q.read.saturating_sub(q.written)))
        }
        Atom::Fit(q) => match queues[q].full {
            Some(full) => {
                let before = queues[q].read.saturating_sub(queues[q].written);
                let level = queues[q].wake_level(full);
                Atom::Room(
                    q,
                    full.saturating_sub(before).max(1),
                    level.saturating_sub(before),
                )
            }
            None => Atom::Want(2 * q + 1, 0),
        },
        a => a,
    }
}

/// How a recorded remote wakeup reached its wakee, for the waker's share
/// of it (`CostModel::ttwu_waker_ns`): through the target's wakelist
/// where `ttwu_queue_cond` would send it there as the model decides (the
/// trace says whether the target was idle; a wakee still on its CPU,
/// `Wakelist::OnCpu*`, is not in the trace: taken as not), else the
/// target's rq lock.
fn ttwu_path(k: &Kernel, r: Reach) -> TtwuPath {
    let Reach::Remote { from, to, idle, .. } = r else {
        return TtwuPath::Local;
    };
    let (m, cfg) = (&k.machine, &k.cfg);
    let known = from.max(to) < m.nr_cpus();
    let cross_llc = known && !m.shares_llc(from, to);
    let queued = cfg.features.enabled(Feature::TtwuQueue)
        && ((cfg.wakelist_cross_llc && cross_llc) || (cfg.wakelist == Wakelist::Idle && idle));
    let line_ns = match known {
        true => m.line_transfer_ns(from, to),
        false => m.cost.cache_refill_llc_ns * REFILL_MLP / REFILL_LINES,
    };
    match queued {
        true => TtwuPath::Wakelist { line_ns },
        false => TtwuPath::RemoteRq,
    }
}

/// Take `cost` out of the bursts since the task last blocked, latest
/// first: a fork's or exit's work may span several (a wakeup it makes,
/// exit_notify's of the parent, and the switch after it split the burst
/// that holds it).
fn take_from_bursts(ops: &mut [Op], mut cost: u64) {
    for op in ops.iter_mut().rev() {
        match op {
            Op::RunBurst(ns) => {
                let paid = cost.min(*ns - 1);
                *ns -= paid;
                cost -= paid;
            }
            Op::PostWake { .. } => {}
            _ => break,
        }
        if cost == 0 {
            break;
        }
    }
}

/// A task that appears later in the trace, or was asleep when it began:
/// it sleeps on a timer until then (like a task woken after a long sleep).
fn timer_start(k: &mut Kernel, p: Pid, at: u64) {
    let t = &mut k.tasks[p];
    t.state = TaskState::Interruptible;
    t.prog.blocked = Blocked::Timer;
    k.arm_task_timer(p, 0, at);
}

/// Relative error of `sim` against `rec`, as a percentage string.
fn rel(sim: f64, rec: f64) -> String {
    if rec == 0.0 {
        return if sim == 0.0 {
            "0%".into()
        } else {
            "n/a".into()
        };
    }
    format!("{:+.0}%", (sim - rec) / rec * 100.0)
}

impl Replay {
    /// `replay:file=PATH,select=COMM|COMM,fidelity=BOOL,handover=BOOL,pin=BOOL,any_waker=BOOL,autogroup=BOOL`
    pub fn parse(p: &Params) -> Result<Replay, String> {
        let file = p
            .values
            .get("file")
            .ok_or("replay needs `file` (replay:file=PATH)")?;
        let select: Vec<String> = p
            .values
            .get("select")
            .map(|s| s.split('|').map(|x| x.trim().to_string()).collect())
            .unwrap_or_default();
        let flag = |k: &str| match p.values.get(k).map(String::as_str) {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(v) => Err(format!("`{k}`: `{v}` is not true or false")),
        };
        let opts = Options {
            fidelity: flag("fidelity")?,
            handover: flag("handover")?,
            pin: flag("pin")?,
            any_waker: flag("any_waker")?,
            // Default true: absent is not false.
            no_autogroup: p.values.contains_key("autogroup") && !flag("autogroup")?,
        };
        Replay::load(file, &select, opts)
    }

    /// What the replay did, and with `fidelity` the per-task and total
    /// comparison of simulated against recorded numbers.
    pub fn report(&self, k: &Kernel, tasks: &[Pid]) -> BenchResult {
        let sim_span = crate::workload::marked_span(k, tasks).unwrap_or(0);
        let mut lines = vec![format!(
            "# replay of {}: {} tasks, {} wakeup edges ({} handovers), {} timer sleeps, {} switch-ins reconstructed, {} lost switch-outs; recorded span {:.6} s, simulated {:.6} s",
            self.file,
            self.tasks.len(),
            self.edges,
            self.handovers,
            self.timers,
            self.reconstructed,
            self.lost_switch_outs,
            self.span as f64 / 1e9,
            sim_span as f64 / 1e9
        )];
        if self.queues > 0 {
            lines.push(format!(
                "# causal: each read waits for the bytes it read to be written, through {} pipes and sockets",
                self.queues
            ));
        }
        let grouped = self.in_autogroups(k, tasks);
        if !self.autogroups.is_empty() {
            lines.push(match grouped {
                0 => format!(
                    "# autogroups: {} recorded, not used: the replay is placed in a cgroup",
                    self.autogroups.len()
                ),
                n => format!(
                    "# autogroups: {n} tasks in {} recorded autogroups, each a task group at its nice's weight",
                    self.autogroups.len()
                ),
            });
        }
        let mut fields = Map::new();
        fields.insert("tasks".into(), json!(self.tasks.len()));
        fields.insert("edges".into(), json!(self.edges));
        fields.insert("timer_sleeps".into(), json!(self.timers));
        fields.insert("reconstructed_switch_ins".into(), json!(self.reconstructed));
        fields.insert("lost_switch_outs".into(), json!(self.lost_switch_outs));
        fields.insert("handover_edges".into(), json!(self.handovers));
        fields.insert("recorded_span_ns".into(), json!(self.span));
        fields.insert("simulated_span_ns".into(), json!(sim_span));
        if self.opts.fidelity {
            let (l, f) = self.fidelity(k, tasks);
            lines.extend(l);
            fields.insert("fidelity".into(), f);
        }
        BenchResult { lines, fields }
    }

    /// How many replayed tasks run in their recorded autogroup.
    fn in_autogroups(&self, k: &Kernel, tasks: &[Pid]) -> usize {
        let in_own = |t: &RTask, p: Pid| {
            let tg = k.tasks[p].tg;
            t.group
                .is_some_and(|g| tg != 0 && k.groups.tgs[tg].path == self.autogroups[g].0)
        };
        (self.tasks.iter().zip(tasks))
            .filter(|(t, &p)| in_own(t, p))
            .count()
    }

    fn fidelity(&self, k: &Kernel, tasks: &[Pid]) -> (Vec<String>, Value) {
        let mut lines = vec![format!(
            "{:>7} {:<16} {:>21} {:>17} {:>15} {:>21}",
            "pid",
            "comm",
            "runtime ms rec/sim",
            "switches rec/sim",
            "migr rec/sim",
            "wait ms rec/sim"
        )];
        let mut rows = Vec::new();
        let mut tot_rec = Recorded::default();
        let mut tot_sim = Recorded::default();
        for (t, &p) in self.tasks.iter().zip(tasks) {
            let kt = &k.tasks[p];
            let sim = Recorded {
                // On-CPU time as the trace shows it, like the recorded side.
                runtime: kt.stats.oncpu_at(k.now),
                switches: kt.stats.nr_switches,
                migrations: kt.stats.nr_migrations,
                // Waking (or preemption) to running, like the recorded side.
                wait: kt.stats.ready_ns,
            };
            let rec = t.rec;
            for (a, b) in [(&mut tot_rec, rec), (&mut tot_sim, sim)] {
                a.runtime += b.runtime;
                a.switches += b.switches;
                a.migrations += b.migrations;
                a.wait += b.wait;
            }
            lines.push(fid_line(&t.pid.to_string(), &t.comm, rec, sim));
            rows.push(json!({"pid": t.pid, "comm": t.comm, "recorded": rec_json(rec), "simulated": rec_json(sim)}));
        }
        lines.push(fid_line("total", "", tot_rec, tot_sim));
        let rel_err = |s: u64, r: u64| {
            if r == 0 {
                Value::Null
            } else {
                json!((s as f64 - r as f64) / r as f64)
            }
        };
        let total = json!({
            "recorded": rec_json(tot_rec),
            "simulated": rec_json(tot_sim),
            "relative_error": {
                "runtime": rel_err(tot_sim.runtime, tot_rec.runtime),
                "switches": rel_err(tot_sim.switches, tot_rec.switches),
                "migrations": rel_err(tot_sim.migrations, tot_rec.migrations),
                "wait": rel_err(tot_sim.wait, tot_rec.wait),
            }
        });
        (lines, json!({"tasks": rows, "total": total}))
    }
}

fn rec_json(r: Recorded) -> Value {
    json!({"runtime_ns": r.runtime, "switches": r.switches, "migrations": r.migrations, "wait_ns": r.wait})
}

fn fid_line(pid: &str, comm: &str, rec: Recorded, sim: Recorded) -> String {
    let ms = |ns: u64| ns as f64 / 1e6;
    let pair = |r: String, s: String, e: String| format!("{r}/{s} {e}");
    format!(
        "{pid:>7} {:<16} {:>21} {:>17} {:>15} {:>21}",
        comm.chars().take(16).collect::<String>(),
        pair(
            format!("{:.2}", ms(rec.runtime)),
            format!("{:.2}", ms(sim.runtime)),
            rel(sim.runtime as f64, rec.runtime as f64)
        ),
        pair(
            rec.switches.to_string(),
            sim.switches.to_string(),
            rel(sim.switches as f64, rec.switches as f64)
        ),
        pair(
            rec.migrations.to_string(),
            sim.migrations.to_string(),
            rel(sim.migrations as f64, rec.migrations as f64)
        ),
        pair(
            format!("{:.2}", ms(rec.wait)),
            format!("{:.2}", ms(sim.wait)),
            rel(sim.wait as f64, rec.wait as f64)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::pipe::Io;
    use crate::kernel::wait::WaitQueueRef;

    /// A replayed write to a queue that holds `full` bytes blocks, and
    /// sleeps until reads leave at most its wakeup level
    /// (unix_write_space), not until its bytes would fit; a write to a
    /// queue the simulation has not filled does not wait, whatever the
    /// recording's order of writes.
    #[test]
    fn a_write_waits_for_room_until_the_kernels_wakeup_level() {
        let m = crate::machine::from_spec("smp:cpus=2").unwrap();
        let mut k = Kernel::new(m, Default::default());
        let (written, read) = (k.futex_new(400), k.futex_new(0));
        let room = Op::AwaitRoom {
            written,
            read,
            full: 400,
            level: 100,
        };
        let mut b = Builder::new(0, 1);
        let spec = |ops| TaskSpec {
            comm: "w",
            group_of: None,
            nice: 0,
            allowed: None,
            ops,
        };
        let w = b.task(&mut k, spec(Rc::from([room])));
        let r = b.task(&mut k, spec(Rc::from([Op::Exit])));
        assert_eq!(k.futex_wait_room(w, written, read, 400), Io::Block);
        // 300 bytes left: room for the write, but not the kernel's wakeup.
        k.futex_post_count(read, 100, 0, r);
        assert!(k.is_waiting_on(WaitQueueRef::Futex(read), w));
        k.futex_post_count(read, 200, 0, r);
        assert!(!k.is_waiting_on(WaitQueueRef::Futex(read), w));
        assert_eq!(k.futex_wait_room(w, written, read, 400), Io::Done(0));
    }

    /// The level the kernel wakes a queue's writers at: a quarter of a
    /// UNIX socket's fill (unix_writable), one page of a pipe's 16.
    #[test]
    fn writers_wake_at_a_quarter_of_a_socket_and_a_page_of_a_pipe() {
        let q = |name: &str| Queue {
            name: name.into(),
            ..Queue::default()
        };
        assert_eq!(q("socket:[1]").wake_level(27_800), 6_950);
        assert_eq!(q("pipe:[1]").wake_level(64_000), 60_000);
    }

    /// Task "w" running `ops` alone on `machine` to its end, `prepare`d
    /// before its launch: the kernel it ran on and its pid.
    fn run_alone(
        machine: &str,
        ops: &[Op],
        prepare: impl FnOnce(&mut Kernel, Pid),
    ) -> (Kernel, Pid) {
        let m = crate::machine::from_spec(machine).unwrap();
        let mut k = Kernel::new(m, Default::default());
        let mut b = Builder::new(0, 1);
        let spec = TaskSpec {
            comm: "w",
            group_of: None,
            nice: 0,
            allowed: None,
            ops: Rc::from(ops),
        };
        let p = b.task(&mut k, spec);
        prepare(&mut k, p);
        b.launch(&mut k, p);
        k.run(None).unwrap();
        (k, p)
    }

    /// A recorded burst gives back the kernel time the model charged its
    /// task on top of the bursts (`debt_ns`: its wakeups' select_idle_cpu
    /// scans, interrupts), as much as it holds, and the next burst the
    /// rest: the task runs what is left of its recorded time.
    #[test]
    fn bursts_give_back_the_models_extra_kernel_time() {
        let user_ns = |debt: u64| {
            let ops = [Op::RunBurst(10_000), Op::RunBurst(10_000), Op::Exit];
            let (k, p) = run_alone("smp:cpus=1", &ops, |k, p| k.tasks[p].prog.debt_ns = debt);
            k.tasks[p].prog.user_ns
        };
        assert_eq!(user_ns(4_000), 6_000 + 10_000);
        assert_eq!(user_ns(14_000), 1 + 5_999);
    }

    /// A replayed burst holds the traced machine's interrupts: the model's
    /// ticks that land in it come out of it, so that its task is on the CPU
    /// for the recorded time, where the same time run as a workload's
    /// computation is stretched by every tick.
    #[test]
    fn ticks_in_a_burst_come_out_of_it() {
        let on_cpu = |op: Op| {
            let (k, p) = run_alone("vm-2", &[op, Op::Mark(Mark::Stop)], |_, _| {});
            k.tasks[p].se.sum_exec_runtime
        };
        // 100 ms hold 25 ticks at vm-2's HZ=250.
        let ms = 100_000_000;
        let burst = on_cpu(Op::RunBurst(ms));
        let run = on_cpu(Op::Run(Dist::Fixed(ms)));
        let c = crate::machine::from_spec("vm-2").unwrap().cost;
        // Both then exit (exit_ns, and what interrupts the exit's own work).
        assert!(burst < ms + c.exit_ns + 2 * c.tick_ns, "{burst} {run}");
        assert!(run > burst + 20 * c.tick_ns, "{burst} {run}");
    }

    /// A recorded switch-in's burst gives back what the model charges for
    /// that switch: a thread of the process the CPU last ran costs the
    /// register switch alone, another process a switch_mm too, and a task
    /// that last ran on another CPU the cache refill from there.
    #[test]
    fn each_switch_in_gives_back_the_models_cost_of_that_switch() {
        let t = "\
            a 10/10 [000] 1.000000: sched:sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=a next_pid=11 next_prio=120\n\
            a 10/11 [000] 1.000010: sched:sched_switch: prev_comm=a prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=b next_pid=12 next_prio=120\n\
            b 12 [000] 1.000020: sched:sched_switch: prev_comm=b prev_pid=12 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n\
            swapper 0 [001] 1.000030: sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=12 next_prio=120\n";
        let parsed = parse::parse_all("t", t).unwrap();
        let r = Replay::from_records("t", &parsed, &[], Options::default()).unwrap();
        let m = crate::machine::from_spec("vm-2").unwrap();
        let c = m.cost.clone();
        let k = Kernel::new(m, Default::default());
        let refill = k.machine.cache_refill_ns(0, 1);
        assert!(refill > 0);
        let (sw, mm) = (c.context_switch_ns, c.mm_switch_ns);
        // 10 first seen running (no switch-in: the CPU has its mm); 11
        // its thread; 12 another process; 12 again, now on CPU 1.
        let costs: Vec<u64> = r
            .tasks
            .iter()
            .flat_map(|t| t.switch_ins.iter())
            .map(|&i| r.switch_costs(&k)[i as usize])
            .collect();
        assert_eq!(costs, [sw, sw + mm, sw + mm + refill]);
    }

    /// Threads of one process (perf's `pid/tid`) replay in its address
    /// space, a task whose group the trace does not say in its own.
    #[test]
    fn threads_share_their_process_address_space() {
        let t = "\
            a 10/10 [000] 1.000000: sched:sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=a next_pid=11 next_prio=120\n\
            a 10/11 [000] 1.000010: sched:sched_switch: prev_comm=a prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=b next_pid=12 next_prio=120\n\
            b 12 [000] 1.000020: sched:sched_switch: prev_comm=b prev_pid=12 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n";
        let parsed = parse::parse_all("t", t).unwrap();
        let r = Replay::from_records("t", &parsed, &[], Options::default()).unwrap();
        let m = crate::machine::from_spec("smp:cpus=1").unwrap();
        let mut k = Kernel::new(m, Default::default());
        let mut b = Builder::new(0, 1);
        r.build(&mut k, &mut b);
        let ids: Vec<_> = k.tasks.iter().map(|t| (t.pid, t.tgid, t.mm)).collect();
        assert_eq!(ids, [(10, 10, 10), (11, 10, 10), (12, 12, 12)]);
    }

    /// A socket both read and written (`use=read` and `use=write` lines):
    /// its writes count into its peer's queue, its reads out of its own,
    /// so each side's read waits for the other's write.
    #[test]
    fn a_socket_used_both_ways_is_two_queues() {
        let t = "\
            # fd pid=1 fd=3 object=socket:[10] use=read\n\
            # fd pid=1 fd=3 object=socket:[11] use=write\n\
            # fd pid=2 fd=4 object=socket:[11] use=read\n\
            # fd pid=2 fd=4 object=socket:[10] use=write\n\
            swapper 0 [000] 0.999000: sched:sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=1 next_prio=120\n\
            swapper 0 [001] 0.999000: sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120\n\
            a 1 [000] 1.000000: syscalls:sys_enter_write: fd: 0x00000003, buf: 0x1, count: 0x00000064\n\
            a 1 [000] 1.000001: syscalls:sys_exit_write: 0x64\n\
            b 2 [001] 1.000002: syscalls:sys_enter_read: fd: 0x00000004, buf: 0x1, count: 0x00000064\n\
            b 2 [001] 1.000003: syscalls:sys_exit_read: 0x64\n\
            b 2 [001] 1.000004: syscalls:sys_enter_write: fd: 0x00000004, buf: 0x1, count: 0x00000064\n\
            b 2 [001] 1.000005: syscalls:sys_exit_write: 0x64\n\
            a 1 [000] 1.000006: syscalls:sys_enter_read: fd: 0x00000003, buf: 0x1, count: 0x00000064\n\
            a 1 [000] 1.000007: syscalls:sys_exit_read: 0x64\n\
            a 1 [000] 1.000008: sched:sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n\
            b 2 [001] 1.000009: sched:sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n";
        let parsed = parse::parse_all("t", t).unwrap();
        let r = Replay::from_records("t", &parsed, &[], Options::default()).unwrap();
        // Queues are numbered in the order of the `# fd` keys: pid 1's
        // read names socket:[10] first.
        assert_eq!(r.queues, 2);
        let (q10, q11) = (0, 1);
        let counts = |pid: u32| -> Vec<(usize, u64)> {
            let t = r.tasks.iter().find(|t| t.pid == pid).unwrap();
            (t.atoms.iter())
                .filter_map(|a| match *a {
                    Atom::Put(c, n) | Atom::Want(c, n) if n > 0 => Some((c, n)),
                    _ => None,
                })
                .collect()
        };
        // a writes 100 bytes into b's queue, then reads the 100 b wrote.
        assert_eq!(
            counts(1),
            [(2 * q11, 100), (2 * q10, 100), (2 * q10 + 1, 100)]
        );
        assert_eq!(
            counts(2),
            [(2 * q11, 100), (2 * q11 + 1, 100), (2 * q10, 100)]
        );
    }

    /// sched_waking's target_cpu is where the wakee last ran; the
    /// sched_wakeup after it says where it went: a wakee pulled onto the
    /// waker's CPU was a local wakeup, not a remote one with an IPI.
    /// Two wakees of an idle CPU, both through its wakelist: the waker
    /// gave back what `ttwu_queue_wakelist` charges (the wakeup less the
    /// activation, plus the llist line), not the remote rq lock, and the
    /// IPI for the first only (the second found the list not empty).
    #[test]
    fn wakees_of_an_idle_cpu_give_back_the_wakelist_and_one_ipi() {
        let t = "\
            <idle>-0 [000] d..2 0.999990: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=1 next_prio=120\n\
            b-2 [001] d..2 1.000000: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=c next_pid=3 next_prio=120\n\
            c-3 [001] d..2 1.000005: sched_switch: prev_comm=c prev_pid=3 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n\
            a-1 [000] d..2 1.000010: sched_waking: comm=b pid=2 prio=120 target_cpu=001\n\
            a-1 [000] d..2 1.000011: sched_waking: comm=c pid=3 prio=120 target_cpu=001\n\
            <idle>-0 [001] d..3 1.000020: sched_wakeup: comm=b pid=2 prio=120 target_cpu=001\n\
            <idle>-0 [001] d..3 1.000020: sched_wakeup: comm=c pid=3 prio=120 target_cpu=001\n\
            <idle>-0 [001] d..2 1.000030: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120\n\
            a-1 [000] d..2 1.000040: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n";
        let parsed = parse::parse_all("t", t).unwrap();
        let r = Replay::from_records("t", &parsed, &[], Options::default()).unwrap();
        let k = Kernel::new(
            crate::machine::from_spec("vm-2").unwrap(),
            Default::default(),
        );
        let a = r.tasks.iter().find(|t| t.pid == 1).unwrap();
        let costs: Vec<u64> = (a.atoms.iter())
            .filter(|x| matches!(x, Atom::Wake(..)))
            .map(|x| r.model_cost(&k, a, x))
            .collect();
        let (c, m) = (&k.machine.cost, &k.machine);
        let queue = c.wakeup_local_ns - c.activate_ns + m.line_transfer_ns(0, 1);
        assert_eq!(costs, [queue + c.ipi_send_ns, queue]);
    }

    #[test]
    fn a_wakee_pulled_to_the_wakers_cpu_is_a_local_wakeup() {
        let t = "\
            a-1 [000] d..2 1.000000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120\n\
            b-2 [000] d..2 1.000010: sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=a next_pid=1 next_prio=120\n\
            a-1 [000] d..2 1.000020: sched_waking: comm=b pid=2 prio=120 target_cpu=001\n\
            a-1 [000] d..3 1.000020: sched_wakeup: comm=b pid=2 prio=120 target_cpu=000\n\
            a-1 [000] d..2 1.000030: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120\n\
            <idle>-0 [001] d..2 1.000040: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=c next_pid=3 next_prio=120\n";
        let parsed = parse::parse_all("t", t).unwrap();
        let r = Replay::from_records("t", &parsed, &[], Options::default()).unwrap();
        let a = r.tasks.iter().find(|t| t.pid == 1).unwrap();
        let reach: Vec<Reach> = (a.atoms.iter())
            .filter_map(|x| match *x {
                Atom::Wake(_, reach) => Some(reach),
                _ => None,
            })
            .collect();
        assert_eq!(reach, [Reach::Local]);
    }
}
