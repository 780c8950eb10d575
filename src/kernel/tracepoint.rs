//! The kernel's tracepoints: the events, the hook a consumer implements
//! (the trace writers and the HTML report, in the layers above), and the
//! calls in the kernel model. Each call is one line in the model and costs
//! one predictable branch when tracing is off.

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
}

/// A consumer of trace events.
pub trait Tracer {
    fn event(&mut self, k: &Kernel, ev: &TraceEvent);
    /// Called once after the run: complete and commit the output.
    fn finish(self: Box<Self>, k: &Kernel) -> io::Result<()>;
}

impl Kernel {
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
}
