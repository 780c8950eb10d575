//! Traces in and out. Export: the kernel's scheduler tracepoints
//! (include/trace/events/sched.h) written as ftrace text or Chrome JSON
//! while the simulation runs. Import: `perf script`, ftrace and trace-cmd
//! text, rebuilt into per-task programs for causal replay.

pub mod chrome;
pub mod ftrace;
pub mod hook;
pub mod parse;
pub mod replay;

use crate::kernel::task::{Pid, TaskState};
use crate::kernel::Kernel;
use crate::report::AtomicFile;
use crate::scenario::InputError;
use crate::workload::params::parse_duration;
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

/// `--trace-format`
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    #[default]
    Ftrace,
    Chrome,
}

impl Format {
    pub fn parse(s: &str) -> Result<Format, String> {
        match s {
            "ftrace" | "text" => Ok(Format::Ftrace),
            "chrome" | "json" => Ok(Format::Chrome),
            _ => Err(format!("unknown trace format `{s}` (ftrace or chrome)")),
        }
    }
}

/// `--trace-window 2s..3s`: the simulated time range kept, [start, end).
pub fn parse_window(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("trace window `{s}`: expected START..END, e.g. 2s..3s"))?;
    let start = if a.trim().is_empty() {
        0
    } else {
        parse_duration(a)?
    };
    let end = if b.trim().is_empty() {
        u64::MAX
    } else {
        parse_duration(b)?
    };
    if start >= end {
        return Err(format!("trace window `{s}` is empty"));
    }
    Ok((start, end))
}

/// What to trace and where.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceOptions {
    pub path: String,
    pub format: Format,
    pub window: Option<(u64, u64)>,
    /// Tasks (by pid or comm) whose PELT signals are written as counters.
    pub pelt: Vec<String>,
}

impl TraceOptions {
    /// Open the output file and build the tracer.
    pub fn open(&self, k: &Kernel) -> io::Result<Box<dyn Tracer>> {
        let file = AtomicFile::create(std::path::Path::new(&self.path))?;
        let sel = Selection {
            names: self.pelt.clone(),
        };
        Ok(match self.format {
            Format::Ftrace => Box::new(ftrace::FtraceWriter::new(file, self.window, sel, k)),
            Format::Chrome => Box::new(chrome::ChromeWriter::new(file, self.window, sel, k)),
        })
    }
}

/// The tasks whose PELT signals are traced, by comm or pid.
#[derive(Default)]
pub struct Selection {
    names: Vec<String>,
}

impl Selection {
    pub fn contains(&self, k: &Kernel, p: Pid) -> bool {
        let t = &k.tasks[p];
        self.names
            .iter()
            .any(|n| *n == t.comm || n.parse::<u32>() == Ok(t.pid))
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

/// A comm safe for space-separated `k=v` trace fields.
pub fn sanitize(comm: &str) -> String {
    comm.chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect()
}

/// p->prio: 99 - rt_priority for an RT task, 120 + nice otherwise.
pub fn prio(k: &Kernel, p: Pid) -> i32 {
    let t = &k.tasks[p];
    if t.policy.is_rt() {
        99 - t.rt_prio as i32
    } else {
        120 + t.nice
    }
}

/// The `[output]` keys for traces and the HTML report.
pub fn output_key(
    out: &mut crate::scenario::Output,
    key: &str,
    v: &toml::Value,
) -> Result<(), String> {
    let s = || {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| "must be a string".to_string())
    };
    let trace = || out.trace.clone().unwrap_or_default();
    match key {
        "trace" => {
            let path = s()?;
            out.trace = Some(TraceOptions { path, ..trace() });
        }
        "trace_format" => {
            let format = Format::parse(&s()?)?;
            out.trace = Some(TraceOptions { format, ..trace() });
        }
        "trace_window" => {
            let window = Some(parse_window(&s()?)?);
            out.trace = Some(TraceOptions { window, ..trace() });
        }
        "trace_pelt" => {
            let pelt = s()?.split(',').map(|x| x.trim().to_string()).collect();
            out.trace = Some(TraceOptions { pelt, ..trace() });
        }
        "html" => out.html = Some(s()?),
        _ => return Err(
            "unknown key (known: json, quiet, trace, trace_format, trace_window, trace_pelt, html)"
                .into(),
        ),
    }
    Ok(())
}

/// The tracers a run's `[output]` asks for (--trace, --html), if any.
pub fn open_tracers(
    out: &crate::scenario::Output,
    k: &Kernel,
) -> Result<Option<Box<dyn Tracer>>, InputError> {
    let mut list: Vec<Box<dyn Tracer>> = Vec::new();
    let opts = out.trace.clone().unwrap_or_default();
    if !opts.path.is_empty() {
        list.push(
            opts.open(k)
                .map_err(|e| InputError::new(format!("--trace {}: {e}", opts.path)))?,
        );
    } else if out.trace.is_some() && out.html.is_none() {
        return Err(InputError::new(
            "--trace-format/--trace-window/--trace-pelt need --trace PATH",
        ));
    }
    if let Some(path) = &out.html {
        let file = AtomicFile::create(std::path::Path::new(path))
            .map_err(|e| InputError::new(format!("--html {path}: {e}")))?;
        let sel = Selection { names: opts.pelt };
        let sink = crate::report::html::Sink::Page(file);
        list.push(Box::new(crate::report::html::HtmlReport::new(sink, sel, k)));
    }
    Ok(match list.len() {
        0 => None,
        1 => list.pop(),
        _ => Some(Box::new(Tee(list))),
    })
}

/// `extra` fed the same events as `t`, if any.
pub fn tee(t: Option<Box<dyn Tracer>>, extra: Box<dyn Tracer>) -> Box<dyn Tracer> {
    match t {
        Some(t) => Box::new(Tee(vec![t, extra])),
        None => extra,
    }
}

/// Several tracers fed the same events.
struct Tee(Vec<Box<dyn Tracer>>);

impl Tracer for Tee {
    fn event(&mut self, k: &Kernel, ev: &TraceEvent) {
        for t in &mut self.0 {
            t.event(k, ev);
        }
    }

    fn finish(self: Box<Self>, k: &Kernel) -> io::Result<()> {
        for t in self.0 {
            t.finish(k)?;
        }
        Ok(())
    }
}

/// Complete and commit the tracer's output after a successful run.
pub fn close_tracers(k: &mut Kernel) -> Result<(), InputError> {
    match k.tracer.take() {
        Some(t) => t
            .finish(k)
            .map_err(|e| InputError::new(format!("cannot write the trace: {e}"))),
        None => Ok(()),
    }
}

/// The trace and report flags of `run`, `demo` and `replay`.
#[derive(clap::Args, Default, Clone)]
pub struct TraceArgs {
    /// Write a scheduler trace (ftrace text, or Chrome JSON) to this file [output.trace]
    #[arg(long, value_name = "PATH")]
    pub trace: Option<String>,
    /// Trace format: ftrace or chrome [output.trace_format]
    #[arg(long, value_name = "FORMAT")]
    pub trace_format: Option<String>,
    /// Keep only this simulated time range in the trace, e.g. 2s..3s [output.trace_window]
    #[arg(long, value_name = "START..END")]
    pub trace_window: Option<String>,
    /// Tasks (pid or comm, comma-separated) whose PELT signals become trace counters [output.trace_pelt]
    #[arg(long, value_name = "TASKS")]
    pub trace_pelt: Option<String>,
    /// Write a self-contained HTML report to this file [output.html]
    #[arg(long, value_name = "PATH")]
    pub html: Option<String>,
}

impl TraceArgs {
    /// The `[output]` keys these flags set.
    pub fn keys(&self) -> Vec<(&'static str, String)> {
        [
            ("trace", &self.trace),
            ("trace_format", &self.trace_format),
            ("trace_window", &self.trace_window),
            ("trace_pelt", &self.trace_pelt),
            ("html", &self.html),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.clone().map(|v| (k, v)))
        .collect()
    }
}
