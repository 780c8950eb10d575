//! Traces in and out. Export: the kernel's scheduler tracepoints
//! (include/trace/events/sched.h, the hook in kernel/tracepoint.rs) written
//! as ftrace text, Chrome JSON, a trace-cmd trace.dat or a Perfetto
//! protobuf trace while the simulation runs. Import:
//! `perf script`, ftrace and trace-cmd text parsed into records
//! (`parse.rs`); workload/replay.rs rebuilds them into task programs.
//!
//! Layer: beside `observe`, right above the kernel and below `workload`
//! (whose replay reads the parser). Imports only the kernel and `util`:
//! no workload, report, scenario or run; the run layer opens the tracers.

pub mod chrome;
pub mod dat;
pub mod ftrace;
pub mod parse;
pub mod perfetto;
pub mod phase;
mod proto;

use crate::kernel::task::{Pid, TaskState};
use crate::kernel::tracepoint::{
    cause_name, idle_name, migration_name, LbDecision, TraceEvent, Tracer,
};
use crate::kernel::Kernel;
use crate::util::fs::OutputSet;
use crate::util::sink::Sink;
use std::io;
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// `--trace-format`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    #[default]
    Ftrace,
    Chrome,
    /// trace-cmd's binary trace.dat (`dat.rs`).
    Dat,
    /// Perfetto's protobuf trace (`perfetto.rs`).
    Perfetto,
}

impl Format {
    pub fn parse(s: &str) -> Result<Format, String> {
        match s {
            "ftrace" | "text" => Ok(Format::Ftrace),
            "chrome" | "json" => Ok(Format::Chrome),
            "dat" | "trace-cmd" => Ok(Format::Dat),
            "perfetto" | "pftrace" => Ok(Format::Perfetto),
            _ => Err(format!(
                "unknown trace format `{s}` (ftrace, chrome, dat or perfetto)"
            )),
        }
    }

    /// The format a trace path's extension names (past any `.gz`/`.zst`):
    /// `.json` Chrome JSON, `.dat` trace-cmd, `.pftrace` Perfetto,
    /// anything else ftrace text.
    pub fn from_path(path: &str) -> Format {
        let name = crate::util::sink::uncompressed_name(path);
        match std::path::Path::new(name)
            .extension()
            .and_then(|e| e.to_str())
        {
            Some("json") => Format::Chrome,
            Some("dat") => Format::Dat,
            Some("pftrace") => Format::Perfetto,
            _ => Format::Ftrace,
        }
    }
}

/// What to trace and where.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceOptions {
    pub path: String,
    pub format: Format,
    pub window: Option<(u64, u64)>,
    /// Tasks (by pid or comm) whose PELT signals are written as counters.
    pub pelt: Vec<String>,
    /// Write the decision records (ftrace text and Perfetto).
    pub decisions: bool,
    /// Write the syscall events of pipe and socket reads and writes
    /// (ftrace text).
    pub syscalls: bool,
}

impl TraceOptions {
    /// Open the output file (one of `outs`) and build the tracer; `end` is
    /// the run's simulated end, if known, for the size warning.
    pub fn open(
        &self,
        k: &Kernel,
        outs: &OutputSet,
        end: Option<u64>,
    ) -> io::Result<Box<dyn Tracer>> {
        let file = TraceFile::new(
            Sink::open(&self.path, Some(outs))?,
            SizeWatch {
                path: self.path.clone(),
                end: end.map(|e| e.min(self.window.map_or(e, |w| w.1))),
                bytes: 0,
                warned: false,
            },
        );
        let sel = Selection {
            names: self.pelt.clone(),
        };
        Ok(match self.format {
            Format::Ftrace => Box::new(ftrace::FtraceWriter::new(
                file,
                self.window,
                sel,
                self.decisions,
                self.syscalls,
                k,
            )),
            Format::Chrome => Box::new(chrome::ChromeWriter::new(file, self.window, sel, k)),
            Format::Dat => Box::new(dat::DatWriter::new(file, self.window, k)?),
            Format::Perfetto => Box::new(perfetto::PerfettoWriter::new(
                file,
                self.window,
                self.decisions,
                k,
            )),
        })
    }
}

/// A writer's buffer is counted (for the size warning) each time this
/// many more bytes are in it.
const FLUSH_AT: usize = 1 << 16;

/// Bytes handed to the writer thread at once: each handoff may wake the
/// thread (futex calls and context switches cost more than the write
/// syscall of 64 KiB to /dev/null, measured), so a few large ones.
pub const SEND_AT: usize = 1 << 18;

/// Full buffers on their way to the writer thread: the simulation waits
/// for the thread when this many are queued, so memory stays bounded.
const QUEUED: usize = 4;

/// The file a trace writer's buffers go to. A thread of its own writes
/// them (and compresses, for .gz/.zst), so the write syscalls overlap the
/// simulation: it only moves bytes, in order, and decides nothing. The
/// first error is kept for the end of the run.
pub struct TraceFile {
    to_writer: Option<SyncSender<Vec<u8>>>,
    /// Buffers the thread has written, emptied, for reuse.
    spare: Receiver<Vec<u8>>,
    writer: Option<JoinHandle<io::Result<Sink>>>,
    /// Bytes given to `write`, sent once `SEND_AT` are there.
    pending: Vec<u8>,
    /// Bytes of the writer's buffer counted so far.
    counted: usize,
    error: Option<io::Error>,
    size: SizeWatch,
}

impl TraceFile {
    fn new(out: Sink, size: SizeWatch) -> TraceFile {
        let (to_writer, from_sim) = sync_channel::<Vec<u8>>(QUEUED);
        let (to_sim, spare) = channel();
        let writer = std::thread::spawn(move || {
            let mut out = out;
            for mut buf in from_sim {
                out.write_all(&buf)?;
                buf.clear();
                let _ = to_sim.send(buf);
            }
            Ok(out)
        });
        TraceFile {
            to_writer: Some(to_writer),
            spare,
            writer: Some(writer),
            pending: Vec::new(),
            counted: 0,
            error: None,
            size,
        }
    }

    /// Count the bytes of `len` in a writer's buffer since the last count,
    /// once there are `FLUSH_AT` of them (as when each 64 KiB was written
    /// out: the size warning is the same); true when the buffer is due
    /// to the thread.
    fn due(&mut self, len: usize, now: u64) -> bool {
        if len - self.counted < FLUSH_AT {
            return false;
        }
        self.count(len - self.counted, now);
        self.counted = len;
        if len < SEND_AT {
            return false;
        }
        self.counted = 0;
        true
    }

    /// Hand `buf` to the writer thread when due, leaving an empty buffer
    /// in its place.
    pub fn flush_full(&mut self, buf: &mut Vec<u8>, now: u64) {
        if self.due(buf.len(), now) {
            let empty = self.spare(buf.capacity());
            self.send(std::mem::replace(buf, empty));
        }
    }

    /// An empty buffer: one the thread has written, or a new one.
    fn spare(&mut self, capacity: usize) -> Vec<u8> {
        self.spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(capacity))
    }

    /// Queue `buf` for the writer thread. A thread that stopped has met a
    /// write error: `finish` reports it, later bytes are dropped.
    fn send(&mut self, buf: Vec<u8>) {
        if let Some(tx) = &self.to_writer {
            if tx.send(buf).is_err() {
                self.to_writer = None;
            }
        }
    }

    /// Write `data` after what was written before.
    pub fn write(&mut self, data: &[u8]) {
        self.pending.extend_from_slice(data);
        if self.pending.len() >= SEND_AT {
            let full = std::mem::take(&mut self.pending);
            self.send(full);
        }
    }

    /// Keep the first error for `finish`.
    pub fn fail(&mut self, e: io::Error) {
        self.error.get_or_insert(e);
    }

    /// `n` more bytes of trace at simulated time `now` (for the warning).
    pub fn count(&mut self, n: usize, now: u64) {
        self.size.add(n as u64, now);
    }

    /// Write the rest, wait for the thread and commit the file, or return
    /// the first error.
    pub fn finish(mut self, rest: &[u8]) -> io::Result<()> {
        self.write(rest);
        let last = std::mem::take(&mut self.pending);
        self.send(last);
        let out = self.join();
        match (self.error.take(), out) {
            (Some(e), _) | (None, Err(e)) => Err(e),
            (None, Ok(out)) => out.commit(),
        }
    }

    /// Close the queue and wait for the thread: its file, or its error.
    fn join(&mut self) -> io::Result<Sink> {
        self.to_writer = None;
        match self.writer.take().map(|w| w.join()) {
            Some(Ok(out)) => out,
            Some(Err(_)) => Err(io::Error::other("the trace writer thread panicked")),
            None => Err(io::Error::other("the trace was already closed")),
        }
    }
}

impl Drop for TraceFile {
    /// A run that failed: wait for the thread, whose dropped file removes
    /// its temporary.
    fn drop(&mut self) {
        if self.writer.is_some() {
            let _ = self.join();
        }
    }
}

/// Bytes of trace after which the expected total is estimated once.
const WARN_AFTER: u64 = 64 << 20;
/// Expected totals at or above this are warned about.
const WARN_TOTAL: u64 = 256 << 20;

/// The expected size of a trace, from its bytes so far and the simulated
/// time left: a warning on stderr when it is large.
struct SizeWatch {
    path: String,
    end: Option<u64>,
    bytes: u64,
    warned: bool,
}

impl SizeWatch {
    fn add(&mut self, n: u64, now: u64) {
        self.bytes += n;
        if self.warned || self.bytes < WARN_AFTER || now == 0 {
            return;
        }
        self.warned = true;
        let mib = |b: f64| b / (1u64 << 20) as f64;
        let per_s = self.bytes as f64 / now as f64 * 1e9;
        let expect = match self.end {
            Some(end) if (self.bytes as f64 * end as f64 / now as f64) < WARN_TOTAL as f64 => {
                return
            }
            Some(end) => format!(
                "about {:.0} MiB by the end at {:.3} s",
                mib(self.bytes as f64 * end as f64 / now as f64),
                end as f64 / 1e9
            ),
            None => format!(
                "{:.0} MiB per simulated second until the benchmark ends",
                mib(per_s)
            ),
        };
        eprintln!(
            "schedlab: warning: --trace {}: {:.0} MiB after {:.3} simulated s, expect {expect} \
             (uncompressed); narrow it with --trace-window or compress it with .gz/.zst",
            self.path,
            mib(self.bytes as f64),
            now as f64 / 1e9
        );
    }
}

/// The tasks whose PELT signals are traced, by comm or pid.
#[derive(Default)]
pub struct Selection {
    pub names: Vec<String>,
}

impl Selection {
    pub fn contains(&self, k: &Kernel, p: Pid) -> bool {
        let t = &k.tasks[p];
        self.names
            .iter()
            .any(|n| t.is_named(n) || n.parse::<u32>() == Ok(t.pid))
    }
}

/// sched_switch's prev_state letter for a task being switched out
/// (__trace_sched_switch_state): R+ when preempted, R when still runnable,
/// S when sleeping, Z (process) or X (thread, auto-reaped) after exit.
pub fn prev_state(k: &Kernel, p: Pid, state: TaskState, preempt: bool) -> &'static str {
    let t = &k.tasks[p];
    match state {
        TaskState::Running | TaskState::Waking | TaskState::New if preempt => "R+",
        TaskState::Running | TaskState::Waking | TaskState::New => "R",
        TaskState::Interruptible => "S",
        TaskState::Dead if t.tgid == t.pid => "Z",
        TaskState::Dead => "X",
    }
}

/// prev_state as the kernel reports it (TASK_REPORT bits; 0x100 is
/// TASK_REPORT_MAX, "+", for a preempted task), for the binary formats.
pub fn state_bits(k: &Kernel, p: Pid, state: TaskState, preempt: bool) -> u64 {
    match prev_state(k, p, state, preempt) {
        "R+" => 0x100,
        "S" => 0x01,
        "X" => 0x10,
        "Z" => 0x20,
        _ => 0,
    }
}

/// A comm safe for space-separated `k=v` trace fields.
pub fn sanitize(comm: &str) -> String {
    comm.chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect()
}

/// p->prio: -1 for a DL task, 99 - rt_priority for an RT one, 120 + nice
/// otherwise.
pub fn prio(k: &Kernel, p: Pid) -> i32 {
    let t = &k.tasks[p];
    if k.is_dl(p) {
        -1
    } else if t.policy.is_rt() {
        99 - t.rt_prio as i32
    } else {
        120 + t.nice
    }
}

/// `extra` fed the same events as `t`, if any.
pub fn tee(t: Option<Box<dyn Tracer>>, extra: Box<dyn Tracer>) -> Box<dyn Tracer> {
    match t {
        Some(t) => Box::new(Tee(vec![t, extra])),
        None => extra,
    }
}

/// Several tracers fed the same events, as one.
pub fn tee_all(list: Vec<Box<dyn Tracer>>) -> Box<dyn Tracer> {
    Box::new(Tee(list))
}

/// Several tracers fed the same events.
struct Tee(Vec<Box<dyn Tracer>>);

impl Tracer for Tee {
    fn event(&mut self, k: &Kernel, ev: &TraceEvent) {
        for t in &mut self.0 {
            t.event(k, ev);
        }
    }

    fn decisions(&self) -> bool {
        self.0.iter().any(|t| t.decisions())
    }

    fn syscalls(&self) -> bool {
        self.0.iter().any(|t| t.syscalls())
    }

    fn finish(self: Box<Self>, k: &Kernel) -> io::Result<()> {
        for t in self.0 {
            t.finish(k)?;
        }
        Ok(())
    }
}

/// The trace and report flags of `run`, `demo` and `replay`.
#[derive(clap::Args, Default, Clone)]
pub struct TraceArgs {
    /// Write a scheduler trace to this file (`-`: stdout); the format follows the
    /// extension (.json Chrome JSON, .dat trace-cmd trace.dat, .pftrace Perfetto, else ftrace text),
    /// compressed when it ends in .gz or .zst [output.trace]
    #[arg(long, value_name = "PATH")]
    pub trace: Option<String>,
    /// Trace format: ftrace, chrome, dat (trace-cmd) or perfetto [output.trace_format]
    /// [default: by the --trace extension]
    #[arg(long, value_name = "FORMAT")]
    pub trace_format: Option<String>,
    /// Keep only this simulated time range in the trace, e.g. 2s..3s [output.trace_window]
    #[arg(long, value_name = "START..END")]
    pub trace_window: Option<String>,
    /// Tasks (pid or comm, comma-separated) whose PELT signals become trace counters [output.trace_pelt]
    #[arg(long, value_name = "TASKS")]
    pub trace_pelt: Option<String>,
    /// Add schedlab's decision records to an ftrace text or Perfetto trace: each pick, wakeup
    /// placement, resched request and load balance with its numbers (docs/explain.md) [output.trace_decisions]
    #[arg(long)]
    pub trace_decisions: bool,
    /// Add the syscall events of the modelled pipe and socket reads and writes to an ftrace
    /// text trace (sys_read/sys_write with fd and byte count, and a `# fd` line naming each
    /// fd's pipe or socket), which `schedlab replay` uses to replay them causally
    /// (docs/replay.md) [output.trace_syscalls]
    #[arg(long)]
    pub trace_syscalls: bool,
    /// Write a self-contained HTML report to this file [output.html]
    #[arg(long, value_name = "PATH")]
    pub html: Option<String>,
}

impl TraceArgs {
    /// The `[output]` keys these flags set.
    pub fn keys(&self) -> Vec<(&'static str, toml::Value)> {
        let mut keys: Vec<_> = [
            ("trace", &self.trace),
            ("trace_format", &self.trace_format),
            ("trace_window", &self.trace_window),
            ("trace_pelt", &self.trace_pelt),
            ("html", &self.html),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.clone().map(|v| (k, toml::Value::String(v))))
        .collect();
        if self.trace_decisions {
            keys.push(("trace_decisions", toml::Value::Boolean(true)));
        }
        if self.trace_syscalls {
            keys.push(("trace_syscalls", toml::Value::Boolean(true)));
        }
        keys
    }
}

/// A field value of a trace record (a decision record's, a Perfetto
/// track event's arg).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg<'a> {
    Int(i64),
    Bool(bool),
    Str(&'a str),
}

/// A decision record (docs/explain.md) as every writer gives it: its CPU,
/// its name (`pick`, `place`, `resched`, `balance`) and its fields in the ftrace
/// text's order, pids as the trace's.
pub struct Decision {
    pub cpu: usize,
    pub name: &'static str,
    pub fields: Vec<(&'static str, Arg<'static>)>,
}

/// `ev`'s decision record, if it is one.
pub fn decision(k: &Kernel, ev: &TraceEvent) -> Option<Decision> {
    let pid = |p: Pid| Arg::Int(k.tasks[p].pid as i64);
    let opt = |p: Option<Pid>| p.map_or(Arg::Int(-1), pid);
    let int = |n: i64| Arg::Int(n);
    let (cpu, name, fields) = match *ev {
        TraceEvent::Pick {
            cpu,
            p,
            eligible,
            vruntime,
            deadline,
            lag,
            protected,
            runner_up,
        } => (
            cpu,
            "pick",
            vec![
                ("cpu", int(cpu as i64)),
                ("pid", pid(p)),
                ("eligible", int(eligible as i64)),
                ("vruntime", int(vruntime)),
                ("deadline", int(deadline)),
                ("lag", int(lag)),
                ("protected", Arg::Bool(protected)),
                ("runner_up", opt(runner_up)),
            ],
        ),
        TraceEvent::Place { cpu, p, place } => (
            cpu,
            "place",
            vec![
                ("pid", pid(p)),
                ("prev_cpu", int(place.prev as i64)),
                ("waker_cpu", int(cpu as i64)),
                ("target_cpu", int(place.placed.cpu as i64)),
                ("affine", Arg::Str(place.placed.affine.name())),
                ("why", Arg::Str(place.placed.why.name())),
                ("scanned", int(place.placed.scanned as i64)),
                ("wakelist", Arg::Bool(place.wakelist)),
            ],
        ),
        TraceEvent::Resched {
            cpu,
            curr,
            cause,
            lazy,
            wakee,
        } => (
            cpu,
            "resched",
            vec![
                ("cpu", int(cpu as i64)),
                ("curr", curr.map_or(Arg::Int(0), pid)),
                ("cause", Arg::Str(cause_name(cause))),
                ("lazy", Arg::Bool(lazy)),
                ("wakee", opt(wakee.map(|w| w.0))),
                ("rule", Arg::Str(wakee.map_or("-", |w| w.1.name()))),
            ],
        ),
        TraceEvent::Balance { cpu, lb } => (cpu, "balance", balance_fields(k, &lb)),
        _ => return None,
    };
    Some(Decision { cpu, name, fields })
}

/// A load balance record's fields (sched_balance_rq's lb_env and
/// outcome): a CPU or pid -1 for none; `group` is the busiest group's
/// first CPU.
fn balance_fields(k: &Kernel, lb: &LbDecision) -> Vec<(&'static str, Arg<'static>)> {
    let cpu = |c: Option<usize>| Arg::Int(c.map_or(-1, |c| c as i64));
    vec![
        ("dst_cpu", Arg::Int(lb.dst as i64)),
        ("domain", Arg::Str(lb.domain)),
        ("level", Arg::Int(lb.level as i64)),
        ("idle", Arg::Str(idle_name(lb.idle))),
        ("why", Arg::Str(lb.why.name())),
        ("group", cpu(lb.group)),
        ("src_cpu", cpu(lb.src)),
        ("migration", Arg::Str(migration_name(lb.migration))),
        ("imbalance", Arg::Int(lb.imbalance)),
        ("moved", Arg::Int(lb.moved as i64)),
        (
            "pid",
            Arg::Int(lb.first.map_or(-1, |p| k.tasks[p].pid as i64)),
        ),
        ("active", Arg::Bool(lb.active)),
    ]
}
