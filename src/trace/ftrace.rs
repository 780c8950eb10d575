//! The ftrace text exporter: the kernel's trace file format (`# tracer:
//! nop`, `comm-pid [cpu] flags timestamp: event: fields`) with 4-character
//! flags, which Perfetto, trace-cmd-style tools and this crate's importer
//! read. Simulator state goes in atrace counters written as
//! `tracing_mark_write: C|pid|name|value`. Lines are built in a reused
//! buffer and streamed out, so memory does not grow with the trace.

use super::{prev_state, prio, Selection, TraceFile, FLUSH_AT};
use crate::kernel::task::{Pid, TaskState};
use crate::kernel::tracepoint::{TraceEvent, Tracer};
use crate::kernel::Kernel;
use std::io::{self, Write};

/// Append the decimal digits of `v`, left-padded with `pad` to `width`
/// (core::fmt was most of the cost of tracing).
fn num(b: &mut Vec<u8>, v: u64, width: usize, pad: u8) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    let mut v = v;
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let digits = &tmp[i..];
    b.resize(b.len() + width.saturating_sub(digits.len()), pad);
    b.extend_from_slice(digits);
}

fn int(b: &mut Vec<u8>, v: i64) {
    if v < 0 {
        b.push(b'-');
    }
    num(b, v.unsigned_abs(), 0, b' ');
}

fn pad_right(b: &mut Vec<u8>, s: &[u8], width: usize) {
    b.resize(b.len() + width.saturating_sub(s.len()), b' ');
    b.extend_from_slice(s);
}

pub struct FtraceWriter {
    out: TraceFile,
    buf: Vec<u8>,
    window: (u64, u64),
    sel: Selection,
    /// Sanitised comm per task (no spaces: fields split on spaces), filled
    /// as tasks appear.
    comms: Vec<String>,
    /// Last counter values written per CPU: (nr_running, util_avg).
    cpu_last: Vec<(u64, u64)>,
    /// Last (util_avg, load_avg) written per selected task.
    task_last: Vec<(u64, u64)>,
    pub events: u64,
}

impl FtraceWriter {
    pub fn new(out: TraceFile, window: Option<(u64, u64)>, sel: Selection, k: &Kernel) -> Self {
        let mut w = FtraceWriter {
            out,
            buf: Vec::with_capacity(FLUSH_AT + 1024),
            window: window.unwrap_or((0, u64::MAX)),
            sel,
            comms: Vec::new(),
            cpu_last: vec![(u64::MAX, u64::MAX); k.rqs.len()],
            task_last: Vec::new(),
            events: 0,
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
    /// `ctx` (None: the idle task of `cpu`).
    fn prefix(
        &mut self,
        now: u64,
        ctx: Option<Pid>,
        cpu: usize,
        k: &Kernel,
        flags: &str,
        ev: &str,
    ) {
        self.events += 1;
        let b = &mut self.buf;
        let (comm, pid) = match ctx {
            Some(p) => (self.comms[p].as_bytes(), k.tasks[p].pid as u64),
            None => (&b"<idle>"[..], 0),
        };
        pad_right(b, comm, 16);
        b.push(b'-');
        let at = b.len();
        num(b, pid, 0, b' ');
        b.resize(b.len().max(at + 7), b' ');
        b.extend_from_slice(b" [");
        num(b, cpu as u64, 3, b'0');
        b.extend_from_slice(b"] ");
        b.extend_from_slice(flags.as_bytes());
        b.push(b' ');
        num(b, now / 1_000_000_000, 5, b' ');
        b.push(b'.');
        num(b, now % 1_000_000_000, 9, b'0');
        b.extend_from_slice(b": ");
        b.extend_from_slice(ev.as_bytes());
        b.extend_from_slice(b": ");
    }

    /// `{key}comm=... {key}pid=... {key}prio=...` of a task or the idle task.
    fn task_fields(&mut self, k: &Kernel, key: &str, p: Option<Pid>, cpu: usize) {
        let b = &mut self.buf;
        b.extend_from_slice(key.as_bytes());
        b.extend_from_slice(b"comm=");
        match p {
            Some(p) => b.extend_from_slice(self.comms[p].as_bytes()),
            None => {
                b.extend_from_slice(b"swapper/");
                num(b, cpu as u64, 0, b' ');
            }
        }
        b.push(b' ');
        b.extend_from_slice(key.as_bytes());
        b.extend_from_slice(b"pid=");
        num(b, p.map_or(0, |p| k.tasks[p].pid as u64), 0, b' ');
        b.push(b' ');
        b.extend_from_slice(key.as_bytes());
        b.extend_from_slice(b"prio=");
        int(b, p.map_or(120, |p| prio(k, p) as i64));
    }

    /// `comm=... pid=... prio=...` of task `p`.
    fn who(&mut self, k: &Kernel, p: Pid) {
        self.task_fields(k, "", Some(p), 0);
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
        self.prefix(k.now, prev, cpu, k, "d..2", "sched_switch");
        self.task_fields(k, "prev_", prev, cpu);
        let st = prev.map_or("R", |p| prev_state(k, p, state, preempt));
        self.buf.extend_from_slice(b" prev_state=");
        self.buf.extend_from_slice(st.as_bytes());
        self.buf.extend_from_slice(b" ==> ");
        self.task_fields(k, "next_", next, cpu);
        self.buf.push(b'\n');
        if let Some(p) = prev.filter(|&p| k.tasks[p].state == crate::kernel::task::TaskState::Dead)
        {
            // The last reference is dropped after the final switch.
            self.prefix(k.now, next, cpu, k, "....", "sched_process_free");
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
        let nr = rq.nr_running as u64;
        let util = rq.cfs.avg.util_avg;
        let (lnr, lutil) = self.cpu_last[cpu];
        if nr != lnr {
            self.counter(k, cpu, ctx, (0, b"cpu", cpu as u64), "nr_running", nr);
        }
        if util != lutil {
            self.counter(k, cpu, ctx, (0, b"cpu", cpu as u64), "util_avg", util);
        }
        self.cpu_last[cpu] = (nr, util);
    }

    /// util_avg and load_avg of a selected task, when they changed.
    fn task_counters(&mut self, k: &Kernel, cpu: usize, ctx: Option<Pid>, p: Pid) {
        let t = &k.tasks[p];
        let (util, load) = (t.se.avg.util_avg, t.se.avg.load_avg);
        let (lu, ll) = self.task_last[p];
        let (pid, tgid) = (t.pid, t.tgid);
        if util != lu {
            self.counter(k, cpu, ctx, (tgid, b"", pid as u64), "util_avg", util);
        }
        if load != ll {
            self.counter(k, cpu, ctx, (tgid, b"", pid as u64), "load_avg", load);
        }
        self.task_last[p] = (util, load);
    }

    /// `C|pid|<prefix><n> <name>|value`: an atrace counter.
    fn counter(
        &mut self,
        k: &Kernel,
        cpu: usize,
        ctx: Option<Pid>,
        (pid, prefix, n): (u32, &[u8], u64),
        name: &str,
        v: u64,
    ) {
        self.prefix(k.now, ctx, cpu, k, "....", "tracing_mark_write");
        let b = &mut self.buf;
        b.extend_from_slice(b"C|");
        num(b, pid as u64, 0, b' ');
        b.push(b'|');
        b.extend_from_slice(prefix);
        num(b, n, 0, b' ');
        b.push(b' ');
        b.extend_from_slice(name.as_bytes());
        b.push(b'|');
        num(b, v, 0, b' ');
        b.push(b'\n');
    }

    fn write(&mut self, k: &Kernel, ev: &TraceEvent) {
        let now = k.now;
        if self.comms.len() < k.tasks.len() {
            let n = self.comms.len();
            self.comms
                .extend(k.tasks[n..].iter().map(|t| super::sanitize(&t.comm)));
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
                let flags = if waker.is_none() { "d.h2" } else { "d..2" };
                self.prefix(now, ctx, cpu, k, flags, "sched_waking");
                self.who(k, p);
                self.buf.extend_from_slice(b" target_cpu=");
                num(&mut self.buf, k.tasks[p].cpu as u64, 3, b'0');
                self.buf.push(b'\n');
            }
            TraceEvent::Wakeup { cpu, p, target } | TraceEvent::WakeupNew { cpu, p, target } => {
                let name = if matches!(ev, TraceEvent::Wakeup { .. }) {
                    "sched_wakeup"
                } else {
                    "sched_wakeup_new"
                };
                let ctx = k.trace_ctx(cpu);
                let flags = if k.rqs[cpu].need_resched {
                    "dN.3"
                } else {
                    "d..3"
                };
                self.prefix(now, ctx, cpu, k, flags, name);
                self.who(k, p);
                self.buf.extend_from_slice(b" target_cpu=");
                num(&mut self.buf, target as u64, 3, b'0');
                self.buf.push(b'\n');
                let tctx = k.trace_ctx(target);
                self.cpu_counters(k, target, tctx);
            }
            TraceEvent::Migrate { p, orig, dest } => {
                let ctx = k.trace_ctx(dest);
                self.prefix(now, ctx, dest, k, "d..2", "sched_migrate_task");
                self.who(k, p);
                let _ = writeln!(self.buf, " orig_cpu={orig} dest_cpu={dest}");
            }
            TraceEvent::Fork { cpu, parent, child } => {
                self.prefix(now, Some(parent), cpu, k, "....", "sched_process_fork");
                let _ = writeln!(
                    self.buf,
                    "comm={} pid={} child_comm={} child_pid={}",
                    self.comms[parent], k.tasks[parent].pid, self.comms[child], k.tasks[child].pid
                );
            }
            TraceEvent::Exit { p } => {
                let cpu = k.tasks[p].cpu;
                self.prefix(now, Some(p), cpu, k, "....", "sched_process_exit");
                self.who(k, p);
                self.buf.push(b'\n');
            }
        }
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

    fn finish(self: Box<Self>, _k: &Kernel) -> io::Result<()> {
        let FtraceWriter { out, buf, .. } = *self;
        out.finish(&buf)
    }
}
