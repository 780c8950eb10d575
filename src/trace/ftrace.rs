//! The ftrace text exporter: the kernel's trace file format (`# tracer:
//! nop`, `comm-pid [cpu] flags timestamp: event: fields`) with 4-character
//! flags, which Perfetto, trace-cmd-style tools and this crate's importer
//! read. Simulator state goes in atrace counters written as
//! `tracing_mark_write: C|pid|name|value`. Lines are built in a reused
//! buffer and streamed out, so memory does not grow with the trace. What
//! repeats is made once: a task's `comm-pid` and fields when it appears
//! (and again if its pid or prio changes), a CPU's ` [NNN] ` and idle
//! task's fields, a timestamp per simulated instant.

use super::{decision, prev_state, prio, Arg, Selection, TraceFile, SEND_AT};
use crate::kernel::task::{Pid, TaskState};
use crate::kernel::tracepoint::{IoQueue, SysIo, TraceEvent, Tracer};
use crate::kernel::Kernel;
use std::collections::BTreeSet;
use std::io::{self, Write};

/// "00".."99": a number takes one division per two digits (core::fmt,
/// and then a division per digit, were most of the cost of tracing).
const PAIRS: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// Append the decimal digits of `v`, left-padded with `pad` to `width`
/// (at most 20).
fn num(b: &mut Vec<u8>, v: u64, width: usize, pad: u8) {
    let mut d = [pad; 20];
    let mut i = d.len();
    let mut v = v;
    while v >= 100 {
        let r = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        d[i..i + 2].copy_from_slice(&PAIRS[r..r + 2]);
    }
    if v >= 10 {
        i -= 2;
        d[i..i + 2].copy_from_slice(&PAIRS[v as usize * 2..v as usize * 2 + 2]);
    } else {
        i -= 1;
        d[i] = b'0' + v as u8;
    }
    b.extend_from_slice(&d[i.min(d.len() - width)..]);
}

fn int(b: &mut Vec<u8>, v: i64) {
    if v < 0 {
        b.push(b'-');
    }
    num(b, v.unsigned_abs(), 0, b' ');
}

/// `comm-pid` as a line starts with it (`%16s-%-7d`).
fn ctx_text(comm: &[u8], pid: u32) -> Box<[u8]> {
    let mut b = vec![b' '; 16usize.saturating_sub(comm.len())];
    b.extend_from_slice(comm);
    b.push(b'-');
    let at = b.len();
    num(&mut b, pid as u64, 0, b' ');
    b.resize(b.len().max(at + 7), b' ');
    b.into_boxed_slice()
}

/// The names of a task's fields in an event: `comm=`, `prev_comm=`, ...
struct Keys {
    comm: &'static [u8],
    pid: &'static [u8],
    prio: &'static [u8],
}

const WHO: usize = 0;
const PREV: usize = 1;
const NEXT: usize = 2;

const KEYS: [Keys; 3] = [
    Keys {
        comm: b"comm=",
        pid: b" pid=",
        prio: b" prio=",
    },
    Keys {
        comm: b"prev_comm=",
        pid: b" prev_pid=",
        prio: b" prev_prio=",
    },
    Keys {
        comm: b"next_comm=",
        pid: b" next_pid=",
        prio: b" next_prio=",
    },
];

/// `{key}comm=C {key}pid=N {key}prio=P`: a task's fields.
fn fields_text(keys: &Keys, comm: &[u8], pid: &[u8], prio: &[u8]) -> Box<[u8]> {
    [keys.comm, comm, keys.pid, pid, keys.prio, prio]
        .concat()
        .into()
}

/// A task's text, made when it first appears in the trace: its comm
/// stays as it was then, as before; its pid and prio are checked on each
/// use (replay gives its tasks the trace's pids after creating them; a
/// task may change its nice or policy).
struct Names {
    /// The comm with whitespace replaced (fields split on spaces).
    comm: Box<[u8]>,
    pid: u32,
    prio: i32,
    pid_text: Box<[u8]>,
    /// `comm-pid` at the start of a line in its context.
    ctx: Box<[u8]>,
    /// Its fields under each of `KEYS`.
    fields: [Box<[u8]>; 3],
}

impl Names {
    fn new(k: &Kernel, p: Pid) -> Names {
        let t = &k.tasks[p];
        let comm = super::sanitize(&t.comm).into_bytes().into_boxed_slice();
        Names::with(comm, t.pid, prio(k, p))
    }

    fn with(comm: Box<[u8]>, pid: u32, prio: i32) -> Names {
        let mut pid_text = Vec::new();
        num(&mut pid_text, pid as u64, 0, b' ');
        let mut prio_text = Vec::new();
        int(&mut prio_text, prio as i64);
        Names {
            ctx: ctx_text(&comm, pid),
            fields: KEYS
                .each_ref()
                .map(|k| fields_text(k, &comm, &pid_text, &prio_text)),
            comm,
            pid,
            prio,
            pid_text: pid_text.into_boxed_slice(),
        }
    }
}

/// Task `p`'s text in `names`, redone if its pid or prio changed.
fn name<'a>(names: &'a mut [Names], k: &Kernel, p: Pid) -> &'a Names {
    let (pid, prio) = (k.tasks[p].pid, prio(k, p));
    if names[p].pid != pid || names[p].prio != prio {
        let comm = std::mem::take(&mut names[p].comm);
        names[p] = Names::with(comm, pid, prio);
    }
    &names[p]
}

/// A CPU's text: ` [NNN] ` after a line's `comm-pid`, its idle task's
/// fields as `prev_` and `next_`, ` target_cpu=NNN` ending a wakeup, and
/// its counters up to their value (`C|0|cpuN nr_running|`, `util_avg`).
struct CpuText {
    bracket: Box<[u8]>,
    idle: [Box<[u8]>; 2],
    target: Box<[u8]>,
    counters: [Box<[u8]>; 2],
}

impl CpuText {
    fn new(cpu: usize) -> CpuText {
        let (mut n, mut n3) = (Vec::new(), Vec::new());
        num(&mut n, cpu as u64, 0, b' ');
        num(&mut n3, cpu as u64, 3, b'0');
        let comm = [b"swapper/", &n[..]].concat();
        let idle = |key: usize| fields_text(&KEYS[key], &comm, b"0", b"120");
        let counter = |name: &[u8]| [b"C|0|cpu", &n[..], b" ", name, b"|"].concat().into();
        CpuText {
            bracket: [b" [", &n3[..], b"] "].concat().into(),
            idle: [idle(PREV), idle(NEXT)],
            target: [b" target_cpu=", &n3[..], b"\n"].concat().into(),
            counters: [counter(b"nr_running"), counter(b"util_avg")],
        }
    }
}

pub struct FtraceWriter {
    out: TraceFile,
    buf: Vec<u8>,
    window: (u64, u64),
    sel: Selection,
    /// Per task, filled as tasks appear.
    names: Vec<Names>,
    /// `comm-pid` of the idle task.
    idle_ctx: Box<[u8]>,
    cpus: Vec<CpuText>,
    /// The last timestamp written (`%5lu.%09lu: `) and its time: several
    /// lines share one simulated instant.
    stamp: (u64, Vec<u8>),
    /// Last counter values written per CPU: (nr_running, util_avg).
    cpu_last: Vec<(u64, u64)>,
    /// Last (util_avg, load_avg) written per selected task.
    task_last: Vec<(u64, u64)>,
    /// Write the decision records (--trace-decisions).
    decisions: bool,
    /// Write the syscall events (--trace-syscalls).
    syscalls: bool,
    /// The (pid, fd) pairs whose `# fd` line is written.
    fds_named: BTreeSet<(u32, u32)>,
}

impl FtraceWriter {
    pub fn new(
        out: TraceFile,
        window: Option<(u64, u64)>,
        sel: Selection,
        decisions: bool,
        syscalls: bool,
        k: &Kernel,
    ) -> Self {
        let mut w = FtraceWriter {
            out,
            buf: Vec::with_capacity(SEND_AT + 4096),
            window: window.unwrap_or((0, u64::MAX)),
            sel,
            names: Vec::new(),
            idle_ctx: ctx_text(b"<idle>", 0),
            cpus: (0..k.rqs.len()).map(CpuText::new).collect(),
            stamp: (u64::MAX, Vec::new()),
            cpu_last: vec![(u64::MAX, u64::MAX); k.rqs.len()],
            task_last: Vec::new(),
            decisions,
            syscalls,
            fds_named: BTreeSet::new(),
        };
        w.header(k.rqs.len());
        w
    }

    fn header(&mut self, ncpus: usize) {
        let _ = write!(
            self.buf,
            "# tracer: nop\n#\n# schedlab simulated trace   #P:{ncpus}\n#\n\
             #                              _-----=> irqs-off\n\
             #                             / _----=> need-resched\n\
             #                            | / _---=> hardirq/softirq\n\
             #                            || / _--=> preempt-depth\n\
             #                            ||| /     delay\n\
             #           TASK-PID   CPU#  ||||    TIMESTAMP  FUNCTION\n\
             #              | |       |   ||||       |         |\n"
        );
    }

    /// `comm-pid [cpu] flags secs.nanos: event: ` for the task running
    /// `ctx` (None: the idle task of `cpu`); `flags` ends in a space and
    /// `ev` in `: `.
    fn prefix(&mut self, k: &Kernel, ctx: Option<Pid>, cpu: usize, flags: &[u8; 5], ev: &[u8]) {
        let now = k.now;
        if self.stamp.0 != now {
            let s = &mut self.stamp.1;
            s.clear();
            num(s, now / 1_000_000_000, 5, b' ');
            s.push(b'.');
            num(s, now % 1_000_000_000, 9, b'0');
            s.extend_from_slice(b": ");
            self.stamp.0 = now;
        }
        let b = &mut self.buf;
        b.extend_from_slice(match ctx {
            Some(p) => &name(&mut self.names, k, p).ctx,
            None => &self.idle_ctx,
        });
        b.extend_from_slice(&self.cpus[cpu].bracket);
        b.extend_from_slice(flags);
        b.extend_from_slice(&self.stamp.1);
        b.extend_from_slice(ev);
    }

    /// `comm=... pid=... prio=...` under `KEYS[key]`'s names, of a task
    /// or the idle task of `cpu` (`PREV` or `NEXT` only).
    fn task_fields(&mut self, k: &Kernel, key: usize, p: Option<Pid>, cpu: usize) {
        let b = &mut self.buf;
        match p {
            Some(p) => b.extend_from_slice(&name(&mut self.names, k, p).fields[key]),
            None => b.extend_from_slice(&self.cpus[cpu].idle[key - PREV]),
        }
    }

    /// `comm=... pid=... prio=...` of task `p`.
    fn who(&mut self, k: &Kernel, p: Pid) {
        self.task_fields(k, WHO, Some(p), 0);
    }

    fn switch(
        &mut self,
        k: &Kernel,
        cpu: usize,
        prev: Option<Pid>,
        next: Option<Pid>,
        state: TaskState,
        preempt: bool,
    ) {
        self.prefix(k, prev, cpu, b"d..2 ", b"sched_switch: ");
        self.task_fields(k, PREV, prev, cpu);
        let st = prev.map_or("R", |p| prev_state(k, p, state, preempt));
        self.buf.extend_from_slice(b" prev_state=");
        self.buf.extend_from_slice(st.as_bytes());
        self.buf.extend_from_slice(b" ==> ");
        self.task_fields(k, NEXT, next, cpu);
        self.buf.push(b'\n');
        if let Some(p) = prev.filter(|&p| k.tasks[p].state == TaskState::Dead) {
            // The last reference is dropped after the final switch.
            self.prefix(k, next, cpu, b".... ", b"sched_process_free: ");
            self.who(k, p);
            self.buf.push(b'\n');
        }
        self.cpu_counters(k, cpu, next);
        for p in [prev, next].into_iter().flatten() {
            if self.sel.contains(k, p) {
                self.task_counters(k, cpu, next, p);
            }
        }
    }

    /// nr_running and util_avg of `cpu`, when they changed.
    fn cpu_counters(&mut self, k: &Kernel, cpu: usize, ctx: Option<Pid>) {
        let rq = &k.rqs[cpu];
        let now = (rq.nr_running as u64, rq.cfs.avg.util_avg);
        let last = self.cpu_last[cpu];
        for (i, (v, l)) in [(now.0, last.0), (now.1, last.1)].into_iter().enumerate() {
            if v != l {
                self.prefix(k, ctx, cpu, b".... ", b"tracing_mark_write: ");
                self.buf.extend_from_slice(&self.cpus[cpu].counters[i]);
                num(&mut self.buf, v, 0, b' ');
                self.buf.push(b'\n');
            }
        }
        self.cpu_last[cpu] = now;
    }

    /// util_avg and load_avg of a selected task, when they changed.
    fn task_counters(&mut self, k: &Kernel, cpu: usize, ctx: Option<Pid>, p: Pid) {
        let t = &k.tasks[p];
        let (util, load) = (t.se.avg.util_avg, t.se.avg.load_avg);
        let (lu, ll) = self.task_last[p];
        let ids = (t.tgid, t.pid);
        if util != lu {
            self.task_counter(k, cpu, ctx, ids, b"util_avg", util);
        }
        if load != ll {
            self.task_counter(k, cpu, ctx, ids, b"load_avg", load);
        }
        self.task_last[p] = (util, load);
    }

    /// `C|tgid|pid name|value`: an atrace counter of a task.
    fn task_counter(
        &mut self,
        k: &Kernel,
        cpu: usize,
        ctx: Option<Pid>,
        (tgid, pid): (u32, u32),
        name: &[u8],
        v: u64,
    ) {
        self.prefix(k, ctx, cpu, b".... ", b"tracing_mark_write: ");
        let b = &mut self.buf;
        b.extend_from_slice(b"C|");
        num(b, tgid as u64, 0, b' ');
        b.push(b'|');
        num(b, pid as u64, 0, b' ');
        b.push(b' ');
        b.extend_from_slice(name);
        b.push(b'|');
        num(b, v, 0, b' ');
        b.push(b'\n');
    }

    /// `comm=... pid=... prio=... target_cpu=NNN` and the line's end.
    fn wake_fields(&mut self, k: &Kernel, p: Pid, target: usize) {
        self.who(k, p);
        self.buf.extend_from_slice(&self.cpus[target].target);
    }

    fn write(&mut self, k: &Kernel, ev: &TraceEvent) {
        if self.names.len() < k.tasks.len() {
            let n = self.names.len();
            self.names
                .extend((n..k.tasks.len()).map(|p| Names::new(k, p)));
            self.task_last.resize(k.tasks.len(), (u64::MAX, u64::MAX));
        }
        match *ev {
            TraceEvent::Switch {
                cpu,
                prev,
                prev_state,
                next,
                preempt,
            } => self.switch(k, cpu, prev, next, prev_state, preempt),
            TraceEvent::Waking { cpu, p, waker } => {
                let ctx = waker.or(k.trace_ctx(cpu));
                let flags = if waker.is_none() { b"d.h2 " } else { b"d..2 " };
                self.prefix(k, ctx, cpu, flags, b"sched_waking: ");
                self.wake_fields(k, p, k.tasks[p].cpu);
            }
            TraceEvent::Wakeup { cpu, p, target } | TraceEvent::WakeupNew { cpu, p, target } => {
                let name: &[u8] = if matches!(ev, TraceEvent::Wakeup { .. }) {
                    b"sched_wakeup: "
                } else {
                    b"sched_wakeup_new: "
                };
                let ctx = k.trace_ctx(cpu);
                let flags = if k.rqs[cpu].need_resched {
                    b"dN.3 "
                } else {
                    b"d..3 "
                };
                self.prefix(k, ctx, cpu, flags, name);
                self.wake_fields(k, p, target);
                let tctx = k.trace_ctx(target);
                self.cpu_counters(k, target, tctx);
            }
            TraceEvent::Migrate { p, orig, dest } => {
                let ctx = k.trace_ctx(dest);
                self.prefix(k, ctx, dest, b"d..2 ", b"sched_migrate_task: ");
                self.who(k, p);
                let b = &mut self.buf;
                b.extend_from_slice(b" orig_cpu=");
                num(b, orig as u64, 0, b' ');
                b.extend_from_slice(b" dest_cpu=");
                num(b, dest as u64, 0, b' ');
                b.push(b'\n');
            }
            TraceEvent::Fork { cpu, parent, child } => {
                self.prefix(k, Some(parent), cpu, b".... ", b"sched_process_fork: ");
                name(&mut self.names, k, parent);
                name(&mut self.names, k, child);
                let (pa, ch) = (&self.names[parent], &self.names[child]);
                let b = &mut self.buf;
                b.extend_from_slice(b"comm=");
                b.extend_from_slice(&pa.comm);
                b.extend_from_slice(b" pid=");
                b.extend_from_slice(&pa.pid_text);
                b.extend_from_slice(b" child_comm=");
                b.extend_from_slice(&ch.comm);
                b.extend_from_slice(b" child_pid=");
                b.extend_from_slice(&ch.pid_text);
                b.push(b'\n');
            }
            TraceEvent::Exit { p } => {
                let cpu = k.tasks[p].cpu;
                self.prefix(k, Some(p), cpu, b".... ", b"sched_process_exit: ");
                self.who(k, p);
                self.buf.push(b'\n');
            }
            TraceEvent::SysEnter { cpu, p, io } => self.sys_enter(k, cpu, p, io),
            TraceEvent::SysExit { cpu, p, io, ret } => {
                self.prefix(k, Some(p), cpu, b".... ", sys_name(io));
                self.buf.extend_from_slice(b" -> 0x");
                let _ = write!(self.buf, "{ret:x}");
                self.buf.push(b'\n');
            }
            _ if self.decisions => self.decision(k, ev),
            _ => {}
        }
    }

    /// `sys_write(fd: 4, buf: 0, count: 0x64)`, as the kernel's
    /// print_syscall_enter writes it (a value below 10 in decimal); the
    /// first call of a task on an fd is preceded by a `# fd` line naming
    /// the fd's queue, which the trace does not say (a recorder reads it
    /// from /proc/PID/fd): schedlab numbers a pipe's read and write ends
    /// 3 + 4i and 4 + 4i, a socket's 5 + 4i and 6 + 4i. The model knows
    /// no user buffer: `buf` is 0.
    fn sys_enter(&mut self, k: &Kernel, cpu: usize, p: Pid, io: SysIo) {
        let (base, queue) = match io.queue {
            IoQueue::Pipe(i) => (3, format!("pipe:[{i}]")),
            IoQueue::Sock(i) => (5, format!("socket:[{i}]")),
        };
        let index = match io.queue {
            IoQueue::Pipe(i) | IoQueue::Sock(i) => i as u64,
        };
        let fd = base + 4 * index + io.write as u64;
        let pid = name(&mut self.names, k, p).pid;
        if self.fds_named.insert((pid, fd as u32)) {
            let _ = writeln!(self.buf, "# fd pid={pid} fd={fd} object={queue}");
        }
        self.prefix(k, Some(p), cpu, b".... ", sys_name(io));
        let _ = writeln!(
            self.buf,
            "(fd: {}, buf: 0, count: {})",
            c_arg(fd),
            c_arg(io.count as u64)
        );
    }

    /// A decision record (docs/explain.md): `schedlab_pick`,
    /// `schedlab_place`, `schedlab_resched` or `schedlab_balance`, its fields as `key=value`
    /// (a flag as 0 or 1).
    fn decision(&mut self, k: &Kernel, ev: &TraceEvent) {
        let Some(d) = decision(k, ev) else { return };
        let event = format!("schedlab_{}: ", d.name);
        self.prefix(k, k.trace_ctx(d.cpu), d.cpu, b"d..2 ", event.as_bytes());
        for (i, (key, v)) in d.fields.iter().enumerate() {
            let sep = if i == 0 { "" } else { " " };
            let _ = match v {
                Arg::Int(n) => write!(self.buf, "{sep}{key}={n}"),
                Arg::Bool(b) => write!(self.buf, "{sep}{key}={}", u8::from(*b)),
                Arg::Str(t) => write!(self.buf, "{sep}{key}={t}"),
            };
        }
        self.buf.push(b'\n');
    }
}

/// The event name of a read or write (hackbench and perf bench messaging
/// use read(2) and write(2) on their sockets too).
fn sys_name(io: SysIo) -> &'static [u8] {
    if io.write {
        b"sys_write"
    } else {
        b"sys_read"
    }
}

/// A syscall argument as print_syscall_enter writes it: below 10 in
/// decimal, else `0x` and hex.
fn c_arg(v: u64) -> String {
    if v < 10 {
        v.to_string()
    } else {
        format!("0x{v:x}")
    }
}

impl Tracer for FtraceWriter {
    fn event(&mut self, k: &Kernel, ev: &TraceEvent) {
        if k.now < self.window.0 || k.now >= self.window.1 {
            return;
        }
        self.write(k, ev);
        self.out.flush_full(&mut self.buf, k.now);
    }

    fn decisions(&self) -> bool {
        self.decisions
    }

    fn syscalls(&self) -> bool {
        self.syscalls
    }

    fn finish(self: Box<Self>, _k: &Kernel) -> io::Result<()> {
        let FtraceWriter { out, buf, .. } = *self;
        out.finish(&buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_padded_as_printf_would() {
        for (v, width, pad) in [
            (0, 0, b' '),
            (7, 3, b'0'),
            (42, 3, b'0'),
            (4095, 3, b'0'),
            (999_999_999, 9, b'0'),
            (1, 9, b'0'),
            (12, 5, b' '),
            (123_456, 5, b' '),
            (u64::MAX, 0, b' '),
            (100, 0, b' '),
            (10, 0, b' '),
        ] {
            let mut b = b"x".to_vec();
            num(&mut b, v, width, pad);
            let want = if pad == b'0' {
                format!("x{v:0width$}")
            } else {
                format!("x{v:width$}")
            };
            assert_eq!(String::from_utf8(b).unwrap(), want);
        }
    }

    #[test]
    fn line_start_is_comm_right_and_pid_left_aligned() {
        assert_eq!(&*ctx_text(b"<idle>", 0), b"          <idle>-0      ");
        assert_eq!(
            &*ctx_text(b"a_long_comm_of_20_ch", 1234567),
            b"a_long_comm_of_20_ch-1234567"
        );
    }
}
