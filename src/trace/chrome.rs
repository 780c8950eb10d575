//! The Chrome JSON (Trace Event Format) exporter: a "CPUs" pseudo-process
//! with one track per CPU holding task slices (`X`), the same slices on each
//! task's own track, wakeups as instants and nr_running/util_avg counters.
//! Streamed like the ftrace writer: one open slice per CPU is all it keeps.

use super::{prev_state, Selection, TraceFile, SEND_AT};
use crate::kernel::task::Pid;
use crate::kernel::tracepoint::{TraceEvent, Tracer};
use crate::kernel::Kernel;
use std::io::{self, Write};

pub struct ChromeWriter {
    out: TraceFile,
    buf: Vec<u8>,
    window: (u64, u64),
    sel: Selection,
    /// JSON-quoted "comm-pid" per task.
    names: Vec<String>,
    /// Per CPU: the task running and since when.
    running: Vec<Option<(Pid, u64)>>,
    cpu_last: Vec<(u64, u64)>,
}

/// ns → µs with three decimals, as the format wants.
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

impl ChromeWriter {
    pub fn new(out: TraceFile, window: Option<(u64, u64)>, sel: Selection, k: &Kernel) -> Self {
        let mut w = ChromeWriter {
            out,
            buf: Vec::with_capacity(SEND_AT + 4096),
            window: window.unwrap_or((0, u64::MAX)),
            sel,
            names: Vec::new(),
            running: vec![None; k.rqs.len()],
            cpu_last: vec![(u64::MAX, u64::MAX); k.rqs.len()],
        };
        w.header(k);
        w
    }

    fn header(&mut self, k: &Kernel) {
        let b = &mut self.buf;
        let _ = writeln!(b, "{{\"traceEvents\":[");
        let _ = write!(
            b,
            "{{\"ph\":\"M\",\"pid\":0,\"name\":\"process_name\",\"args\":{{\"name\":\"CPUs\"}}}}"
        );
        for cpu in 0..k.rqs.len() {
            let _ = write!(
                b,
                ",\n{{\"ph\":\"M\",\"pid\":0,\"tid\":{cpu},\"name\":\"thread_name\",\"args\":{{\"name\":\"CPU {cpu}\"}}}}\
                 ,\n{{\"ph\":\"M\",\"pid\":0,\"tid\":{cpu},\"name\":\"thread_sort_index\",\"args\":{{\"sort_index\":{cpu}}}}}"
            );
        }
    }

    /// Name tasks created since the last event.
    fn name_new_tasks(&mut self, k: &Kernel) {
        for t in &k.tasks[self.names.len()..] {
            let name = serde_json::to_string(&format!("{}-{}", t.comm, t.pid)).unwrap_or_default();
            let _ = write!(
                self.buf,
                ",\n{{\"ph\":\"M\",\"pid\":{},\"tid\":{},\"name\":\"thread_name\",\"args\":{{\"name\":{name}}}}}",
                t.tgid, t.pid
            );
            self.names.push(name);
        }
    }

    /// Close the slice running on `cpu` at `now`.
    fn close(&mut self, k: &Kernel, cpu: usize, state: &str) {
        let Some((p, since)) = self.running[cpu].take() else {
            return;
        };
        let (lo, hi) = self.window;
        let (start, end) = (since.max(lo), k.now.min(hi));
        if start >= end {
            return;
        }
        let t = &k.tasks[p];
        let dur = us(end - start);
        let ts = us(start);
        let name = &self.names[p];
        let _ = write!(
            self.buf,
            ",\n{{\"ph\":\"X\",\"cat\":\"sched\",\"pid\":0,\"tid\":{cpu},\"ts\":{ts},\"dur\":{dur},\"name\":{name},\"args\":{{\"pid\":{},\"end_state\":\"{state}\"}}}}\
             ,\n{{\"ph\":\"X\",\"cat\":\"task\",\"pid\":{},\"tid\":{},\"ts\":{ts},\"dur\":{dur},\"name\":\"CPU {cpu}\"}}",
            t.pid, t.tgid, t.pid
        );
    }

    fn in_window(&self, now: u64) -> bool {
        now >= self.window.0 && now < self.window.1
    }

    fn counters(&mut self, k: &Kernel, cpu: usize) {
        let rq = &k.rqs[cpu];
        let v = (rq.nr_running as u64, rq.cfs.avg.util_avg);
        if v == self.cpu_last[cpu] || !self.in_window(k.now) {
            return;
        }
        self.cpu_last[cpu] = v;
        let _ = write!(
            self.buf,
            ",\n{{\"ph\":\"C\",\"pid\":0,\"ts\":{},\"name\":\"cpu{cpu}\",\"args\":{{\"nr_running\":{},\"util_avg\":{}}}}}",
            us(k.now),
            v.0,
            v.1
        );
    }

    fn task_counters(&mut self, k: &Kernel, p: Pid) {
        let t = &k.tasks[p];
        let _ = write!(
            self.buf,
            ",\n{{\"ph\":\"C\",\"pid\":{},\"ts\":{},\"name\":\"pelt {}\",\"args\":{{\"util_avg\":{},\"load_avg\":{}}}}}",
            t.tgid,
            us(k.now),
            t.pid,
            t.se.avg.util_avg,
            t.se.avg.load_avg
        );
    }

    fn write(&mut self, k: &Kernel, ev: &TraceEvent) {
        if self.names.len() < k.tasks.len() {
            self.name_new_tasks(k);
        }
        match *ev {
            TraceEvent::Switch {
                cpu,
                prev,
                prev_state: st,
                next,
                preempt,
            } => {
                let state = prev.map_or("R", |p| prev_state(k, p, st, preempt));
                self.close(k, cpu, state);
                self.running[cpu] = next.map(|n| (n, k.now));
                self.counters(k, cpu);
                for p in [prev, next].into_iter().flatten() {
                    if self.sel.contains(k, p) && self.in_window(k.now) {
                        self.task_counters(k, p);
                    }
                }
            }
            TraceEvent::Wakeup { p, target, .. } | TraceEvent::WakeupNew { p, target, .. } => {
                if self.in_window(k.now) {
                    let _ = write!(
                        self.buf,
                        ",\n{{\"ph\":\"i\",\"s\":\"t\",\"pid\":0,\"tid\":{target},\"ts\":{},\"name\":\"wakeup\",\"args\":{{\"task\":{}}}}}",
                        us(k.now),
                        self.names[p]
                    );
                }
                self.counters(k, target);
            }
            _ => {}
        }
    }
}

impl Tracer for ChromeWriter {
    fn event(&mut self, k: &Kernel, ev: &TraceEvent) {
        self.write(k, ev);
        self.out.flush_full(&mut self.buf, k.now);
    }

    fn finish(mut self: Box<Self>, k: &Kernel) -> io::Result<()> {
        for cpu in 0..self.running.len() {
            self.close(k, cpu, "R");
        }
        let _ = writeln!(self.buf, "\n],\"displayTimeUnit\":\"ns\"}}");
        let ChromeWriter { out, buf, .. } = *self;
        out.finish(&buf)
    }
}
