//! The Perfetto exporter: a protobuf `Trace` (protos/perfetto/trace/
//! trace.proto: TracePackets, each in field 1) that ui.perfetto.dev and
//! trace_processor open. The sched tracepoints are ftrace events, as
//! traced_probes writes them (per-CPU FtraceEventBundles), so Perfetto
//! builds its CPU tracks and thread states from sched_switch and
//! sched_waking; ProcessTree packets name the tasks. Each waking by a task
//! is a flow from an instant on the waker's thread track to one on the
//! wakee's when it next runs, and with --trace-decisions the decision
//! records are instants with their numbers as args, on a track per CPU.
//!
//! Field numbers are those of google/perfetto's protos, named by file at
//! each group below. Timestamps are the simulated ns in both clocks:
//! ftrace events in the bundle's trace clock (unset: boot time) and
//! packets in their default clock, BOOTTIME (trace_packet.proto), so the
//! two line up.

use super::proto::{begin, bytes, end, fixed64, int, uint};
use super::{decision, prio, state_bits, Arg, TraceFile, SEND_AT};
use crate::kernel::task::{Pid, TaskState};
use crate::kernel::tracepoint::{TraceEvent, Tracer};
use crate::kernel::Kernel;
use std::io;

// protos/perfetto/trace/trace.proto
const TRACE_PACKET: u32 = 1;

// protos/perfetto/trace/trace_packet.proto
const PACKET_FTRACE_EVENTS: u32 = 1;
const PACKET_PROCESS_TREE: u32 = 2;
const PACKET_TIMESTAMP: u32 = 8;
const PACKET_SEQUENCE_ID: u32 = 10; // trusted_packet_sequence_id
const PACKET_TRACK_EVENT: u32 = 11;
const PACKET_SEQUENCE_FLAGS: u32 = 13;
const PACKET_TRACK_DESCRIPTOR: u32 = 60;
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;

// protos/perfetto/trace/ftrace/ftrace_event_bundle.proto
const BUNDLE_CPU: u32 = 1;
const BUNDLE_EVENT: u32 = 2;

// protos/perfetto/trace/ftrace/ftrace_event.proto (FtraceEvent; the
// numbers of the `event` oneof)
const EVENT_TIMESTAMP: u32 = 1;
const EVENT_PID: u32 = 2;
const SCHED_SWITCH: u32 = 4;
const SCHED_WAKEUP: u32 = 17;
const SCHED_WAKING: u32 = 20;
const SCHED_WAKEUP_NEW: u32 = 114;
const SCHED_PROCESS_EXIT: u32 = 238;
const SCHED_PROCESS_FORK: u32 = 239;
const SCHED_PROCESS_FREE: u32 = 240;
// In newer ftrace_event.proto versions (and the perfetto 0.59 PyPI
// package's protos); an older trace_processor skips it, unknown.
const SCHED_MIGRATE_TASK: u32 = 491;

// protos/perfetto/trace/ftrace/sched.proto: a task's (comm, pid, prio)
// fields in SchedSwitchFtraceEvent (prev and next), the wakeup events
// (SchedWaking/Wakeup/WakeupNewFtraceEvent, with success = 4 and
// target_cpu = 5), SchedProcessExitFtraceEvent (tgid = 3, prio = 4) and
// SchedProcessFreeFtraceEvent and SchedMigrateTaskFtraceEvent (orig_cpu
// = 4, dest_cpu = 5); SchedProcessForkFtraceEvent's parent and child
// (comm, pid).
const SWITCH_PREV: [u32; 3] = [1, 2, 3];
const SWITCH_PREV_STATE: u32 = 4;
const SWITCH_NEXT: [u32; 3] = [5, 6, 7];
const WHO: [u32; 3] = [1, 2, 3];
const WAKE_SUCCESS: u32 = 4;
const WAKE_TARGET_CPU: u32 = 5;
const EXIT_TGID: u32 = 3;
const EXIT_PRIO: u32 = 4;
const MIGRATE_ORIG_CPU: u32 = 4;
const MIGRATE_DEST_CPU: u32 = 5;
const FORK_PARENT: [u32; 2] = [1, 2];
const FORK_CHILD: [u32; 2] = [3, 4];

// protos/perfetto/trace/ps/process_tree.proto
const TREE_PROCESSES: u32 = 1;
const TREE_THREADS: u32 = 2;
const PROCESS_PID: u32 = 1;
const PROCESS_CMDLINE: u32 = 3;
const THREAD_TID: u32 = 1;
const THREAD_NAME: u32 = 2;
const THREAD_TGID: u32 = 3;

// protos/perfetto/trace/track_event/track_descriptor.proto and
// thread_descriptor.proto
const TRACK_UUID: u32 = 1;
const TRACK_NAME: u32 = 2;
const TRACK_THREAD: u32 = 4;
const THREAD_DESC_PID: u32 = 1;
const THREAD_DESC_TID: u32 = 2;
const THREAD_DESC_NAME: u32 = 5;

// protos/perfetto/trace/track_event/track_event.proto
const EVENT_DEBUG_ANNOTATIONS: u32 = 4;
const EVENT_TYPE: u32 = 9;
const EVENT_TRACK_UUID: u32 = 11;
const EVENT_CATEGORIES: u32 = 22;
const EVENT_NAME: u32 = 23;
const EVENT_FLOW_IDS: u32 = 47;
const EVENT_TERMINATING_FLOW_IDS: u32 = 48;
const TYPE_INSTANT: u64 = 3;

// protos/perfetto/trace/track_event/debug_annotation.proto
const ARG_BOOL: u32 = 2;
const ARG_INT: u32 = 4;
const ARG_STRING: u32 = 6;
const ARG_NAME: u32 = 10;

/// The packet sequences: the ftrace data and process tree (as
/// traced_probes writes them), and the track events.
const FTRACE_SEQ: u64 = 1;
const TRACK_SEQ: u64 = 2;

/// Track uuids: a task's thread track and a CPU's decision track.
const THREAD_TRACK: u64 = 1 << 32;
const CPU_TRACK: u64 = 2 << 32;

/// A CPU's bundle becomes a packet at this size: bundles stay small for
/// trace_processor and per-CPU memory stays bounded.
const BUNDLE_AT: usize = 1 << 16;

pub struct PerfettoWriter {
    out: TraceFile,
    /// Whole packets, each in Trace's field 1.
    buf: Vec<u8>,
    window: (u64, u64),
    decisions: bool,
    /// Per CPU: the fields of the FtraceEventBundle being filled.
    bundles: Vec<Vec<u8>>,
    /// Tasks named in ProcessTree packets so far.
    named: usize,
    /// Per task: whether its thread track has been described.
    described: Vec<bool>,
    /// Per task: the flow from the task that last woke it, until it runs.
    flows: Vec<Option<u64>>,
    next_flow: u64,
    /// Whether the track event sequence has been started (its first
    /// packet clears the incremental state, which trace_processor wants
    /// before it trusts a sequence).
    started: bool,
}

impl PerfettoWriter {
    pub fn new(out: TraceFile, window: Option<(u64, u64)>, decisions: bool, k: &Kernel) -> Self {
        let mut w = PerfettoWriter {
            out,
            buf: Vec::with_capacity(SEND_AT + BUNDLE_AT),
            window: window.unwrap_or((0, u64::MAX)),
            decisions,
            bundles: vec![Vec::new(); k.rqs.len()],
            named: 0,
            described: Vec::new(),
            flows: Vec::new(),
            next_flow: 1,
            started: false,
        };
        if decisions {
            for cpu in 0..k.rqs.len() {
                w.describe(
                    k.now,
                    CPU_TRACK + cpu as u64,
                    &format!("CPU {cpu} decisions"),
                    None,
                );
            }
        }
        w
    }

    /// Open a TracePacket on sequence `seq`, stamped `now` if given; its
    /// data follows and `end` closes it.
    fn open(&mut self, seq: u64, now: Option<u64>) -> usize {
        let b = &mut self.buf;
        let p = begin(b, TRACE_PACKET);
        uint(b, PACKET_SEQUENCE_ID, seq);
        if seq == TRACK_SEQ && !self.started {
            uint(b, PACKET_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
            self.started = true;
        }
        if let Some(t) = now {
            uint(b, PACKET_TIMESTAMP, t);
        }
        p
    }

    /// A ProcessTree packet naming the tasks created since the last one:
    /// each thread, and each process by its leader's comm.
    fn name_new_tasks(&mut self, k: &Kernel) {
        let p = self.open(FTRACE_SEQ, Some(k.now));
        let b = &mut self.buf;
        let tree = begin(b, PACKET_PROCESS_TREE);
        for t in &k.tasks[self.named..] {
            if t.pid == t.tgid {
                let m = begin(b, TREE_PROCESSES);
                int(b, PROCESS_PID, t.pid as i64);
                bytes(b, PROCESS_CMDLINE, t.comm.as_bytes());
                end(b, m);
            }
            let m = begin(b, TREE_THREADS);
            int(b, THREAD_TID, t.pid as i64);
            bytes(b, THREAD_NAME, t.comm.as_bytes());
            int(b, THREAD_TGID, t.tgid as i64);
            end(b, m);
        }
        end(b, tree);
        end(b, p);
        self.named = k.tasks.len();
        self.described.resize(self.named, false);
        self.flows.resize(self.named, None);
    }

    /// A TrackDescriptor: `uuid` named `name`, a thread's track if
    /// `thread` (tgid, pid) is given.
    fn describe(&mut self, now: u64, uuid: u64, name: &str, thread: Option<(u32, u32)>) {
        let p = self.open(TRACK_SEQ, Some(now));
        let b = &mut self.buf;
        let d = begin(b, PACKET_TRACK_DESCRIPTOR);
        uint(b, TRACK_UUID, uuid);
        bytes(b, TRACK_NAME, name.as_bytes());
        if let Some((tgid, pid)) = thread {
            let t = begin(b, TRACK_THREAD);
            int(b, THREAD_DESC_PID, tgid as i64);
            int(b, THREAD_DESC_TID, pid as i64);
            bytes(b, THREAD_DESC_NAME, name.as_bytes());
            end(b, t);
        }
        end(b, d);
        end(b, p);
    }

    /// The uuid of `p`'s thread track, described on first use.
    fn thread_track(&mut self, k: &Kernel, p: Pid) -> u64 {
        if !self.described[p] {
            let t = &k.tasks[p];
            self.describe(
                k.now,
                THREAD_TRACK + p as u64,
                &t.comm,
                Some((t.tgid, t.pid)),
            );
            self.described[p] = true;
        }
        THREAD_TRACK + p as u64
    }

    /// An instant TrackEvent on `track`; `fields` adds its flows and args.
    fn instant(&mut self, now: u64, track: u64, name: &str, fields: impl FnOnce(&mut Vec<u8>)) {
        let p = self.open(TRACK_SEQ, Some(now));
        let b = &mut self.buf;
        let e = begin(b, PACKET_TRACK_EVENT);
        uint(b, EVENT_TYPE, TYPE_INSTANT);
        uint(b, EVENT_TRACK_UUID, track);
        bytes(b, EVENT_CATEGORIES, b"sched");
        bytes(b, EVENT_NAME, name.as_bytes());
        fields(b);
        end(b, e);
        end(b, p);
    }

    /// Append one FtraceEvent of kind `event` to `cpu`'s bundle, in the
    /// context of `ctx` (None: the idle task); `fields` writes its fields.
    fn ftrace(
        &mut self,
        k: &Kernel,
        cpu: usize,
        ctx: Option<Pid>,
        event: u32,
        fields: impl FnOnce(&mut Vec<u8>),
    ) {
        let b = &mut self.bundles[cpu];
        if b.is_empty() {
            uint(b, BUNDLE_CPU, cpu as u64);
        }
        let e = begin(b, BUNDLE_EVENT);
        uint(b, EVENT_TIMESTAMP, k.now);
        uint(b, EVENT_PID, ctx.map_or(0, |p| k.tasks[p].pid) as u64);
        let f = begin(b, event);
        fields(b);
        end(b, f);
        end(b, e);
        if b.len() >= BUNDLE_AT {
            self.flush_bundle(cpu);
        }
    }

    /// Write `cpu`'s bundle, if any, as a packet.
    fn flush_bundle(&mut self, cpu: usize) {
        let mut body = std::mem::take(&mut self.bundles[cpu]);
        if !body.is_empty() {
            let p = self.open(FTRACE_SEQ, None);
            bytes(&mut self.buf, PACKET_FTRACE_EVENTS, &body);
            end(&mut self.buf, p);
            body.clear();
        }
        self.bundles[cpu] = body;
    }

    fn write(&mut self, k: &Kernel, ev: &TraceEvent) {
        match *ev {
            TraceEvent::Switch {
                cpu,
                prev,
                prev_state,
                next,
                preempt,
            } => self.switch(k, cpu, prev, next, prev_state, preempt),
            TraceEvent::Waking { cpu, p, waker } => {
                let target = k.tasks[p].cpu;
                self.ftrace(k, cpu, waker.or(k.trace_ctx(cpu)), SCHED_WAKING, |b| {
                    wake_fields(b, k, p, target)
                });
                self.flow_from(k, p, waker);
            }
            TraceEvent::Wakeup { cpu, p, target } => {
                self.ftrace(k, cpu, k.trace_ctx(cpu), SCHED_WAKEUP, |b| {
                    wake_fields(b, k, p, target)
                });
            }
            TraceEvent::WakeupNew { cpu, p, target } => {
                self.ftrace(k, cpu, k.trace_ctx(cpu), SCHED_WAKEUP_NEW, |b| {
                    wake_fields(b, k, p, target)
                });
            }
            TraceEvent::Fork { cpu, parent, child } => {
                self.ftrace(k, cpu, Some(parent), SCHED_PROCESS_FORK, |b| {
                    let (pa, ch) = (&k.tasks[parent], &k.tasks[child]);
                    bytes(b, FORK_PARENT[0], pa.comm.as_bytes());
                    int(b, FORK_PARENT[1], pa.pid as i64);
                    bytes(b, FORK_CHILD[0], ch.comm.as_bytes());
                    int(b, FORK_CHILD[1], ch.pid as i64);
                });
            }
            TraceEvent::Exit { p } => {
                self.ftrace(k, k.tasks[p].cpu, Some(p), SCHED_PROCESS_EXIT, |b| {
                    let t = &k.tasks[p];
                    bytes(b, WHO[0], t.comm.as_bytes());
                    int(b, WHO[1], t.pid as i64);
                    int(b, EXIT_TGID, t.tgid as i64);
                    int(b, EXIT_PRIO, prio(k, p) as i64);
                });
            }
            TraceEvent::Migrate { p, orig, dest } => {
                self.ftrace(k, dest, k.trace_ctx(dest), SCHED_MIGRATE_TASK, |b| {
                    task_fields(b, k, Some(p), dest, WHO);
                    int(b, MIGRATE_ORIG_CPU, orig as i64);
                    int(b, MIGRATE_DEST_CPU, dest as i64);
                });
            }
            _ if self.decisions => self.decision(k, ev),
            _ => {}
        }
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
        // Perfetto reads thread states from prev_state's TASK_REPORT bits.
        let st = prev.map_or(0, |p| state_bits(k, p, state, preempt));
        self.ftrace(k, cpu, prev, SCHED_SWITCH, |b| {
            task_fields(b, k, prev, cpu, SWITCH_PREV);
            int(b, SWITCH_PREV_STATE, st as i64);
            task_fields(b, k, next, cpu, SWITCH_NEXT);
        });
        if let Some(p) = prev.filter(|&p| k.tasks[p].state == TaskState::Dead) {
            // The last reference is dropped after the final switch.
            self.ftrace(k, cpu, next, SCHED_PROCESS_FREE, |b| {
                task_fields(b, k, Some(p), cpu, WHO)
            });
        }
        if let Some(p) = prev.filter(|_| state != TaskState::Interruptible) {
            // Preempted or gone, not asleep: a flow still pending came
            // from a waking that found it not yet switched out, and
            // belongs to no later run.
            self.flows[p] = None;
        }
        if let Some(n) = next {
            self.flow_to(k, n);
        }
    }

    /// A waking of `p` by task `waker` starts a flow at an instant on the
    /// waker's track; an interrupt's waking (no waker task) starts none.
    fn flow_from(&mut self, k: &Kernel, p: Pid, waker: Option<Pid>) {
        self.flows[p] = None;
        let Some(w) = waker else {
            return;
        };
        let id = self.next_flow;
        self.next_flow += 1;
        let track = self.thread_track(k, w);
        let wakee = format!("{}-{}", k.tasks[p].comm, k.tasks[p].pid);
        self.instant(k.now, track, "waking", |b| {
            fixed64(b, EVENT_FLOW_IDS, id);
            annotation(b, "wakee", Arg::Str(&wakee));
        });
        self.flows[p] = Some(id);
    }

    /// `n` runs: the flow from its waker, if any, ends at an instant on
    /// its track.
    fn flow_to(&mut self, k: &Kernel, n: Pid) {
        if let Some(id) = self.flows[n].take() {
            let track = self.thread_track(k, n);
            self.instant(k.now, track, "runs", |b| {
                fixed64(b, EVENT_TERMINATING_FLOW_IDS, id)
            });
        }
    }

    /// A decision record as an instant on its CPU's track, its fields as
    /// args named as in the ftrace text's records (docs/explain.md), but
    /// for the CPU, which the track is.
    fn decision(&mut self, k: &Kernel, ev: &TraceEvent) {
        let Some(d) = decision(k, ev) else { return };
        self.instant(k.now, CPU_TRACK + d.cpu as u64, d.name, |b| {
            for (key, v) in d.fields.into_iter().filter(|f| f.0 != "cpu") {
                annotation(b, key, v);
            }
        });
    }
}

/// A DebugAnnotation `name` = `v`.
fn annotation(b: &mut Vec<u8>, name: &str, v: Arg) {
    let a = begin(b, EVENT_DEBUG_ANNOTATIONS);
    bytes(b, ARG_NAME, name.as_bytes());
    match v {
        Arg::Int(i) => int(b, ARG_INT, i),
        Arg::Bool(x) => uint(b, ARG_BOOL, x as u64),
        Arg::Str(x) => bytes(b, ARG_STRING, x.as_bytes()),
    }
    end(b, a);
}

/// comm, pid and prio of `p` under the field numbers `f` (None: the idle
/// task of `cpu`, swapper/N, pid 0).
fn task_fields(b: &mut Vec<u8>, k: &Kernel, p: Option<Pid>, cpu: usize, f: [u32; 3]) {
    match p {
        Some(p) => {
            bytes(b, f[0], k.tasks[p].comm.as_bytes());
            int(b, f[1], k.tasks[p].pid as i64);
            int(b, f[2], prio(k, p) as i64);
        }
        None => {
            bytes(b, f[0], format!("swapper/{cpu}").as_bytes());
            int(b, f[1], 0);
            int(b, f[2], 120);
        }
    }
}

/// A wakeup event's fields: the task, success = 1 (as the kernel has
/// written since 4.x) and the target CPU.
fn wake_fields(b: &mut Vec<u8>, k: &Kernel, p: Pid, target: usize) {
    task_fields(b, k, Some(p), 0, WHO);
    int(b, WAKE_SUCCESS, 1);
    int(b, WAKE_TARGET_CPU, target as i64);
}

impl Tracer for PerfettoWriter {
    fn event(&mut self, k: &Kernel, ev: &TraceEvent) {
        if self.named < k.tasks.len() {
            self.name_new_tasks(k);
        }
        if k.now < self.window.0 || k.now >= self.window.1 {
            return;
        }
        self.write(k, ev);
        self.out.flush_full(&mut self.buf, k.now);
    }

    fn decisions(&self) -> bool {
        self.decisions
    }

    fn finish(mut self: Box<Self>, _k: &Kernel) -> io::Result<()> {
        for cpu in 0..self.bundles.len() {
            self.flush_bundle(cpu);
        }
        let PerfettoWriter { out, buf, .. } = *self;
        out.finish(&buf)
    }
}
