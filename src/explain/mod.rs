//! `schedlab explain`: why a task waited. The scenario runs twice, the
//! same way (runs are deterministic): first with a tracer (`Finder`) that
//! follows every task `--task` names and keeps the wait to explain (the
//! longest, or the one around `--at`); then with one (`Recorder`) that
//! asks the kernel for its decision records and keeps that task's story
//! around that wait: its phases, who woke it and how it was placed, who
//! ran and each pick on its CPU while it waited, what ended its runs.
//! `story.rs` prints it (docs/explain.md).

mod story;
mod track;

use crate::kernel::tracepoint::Tracer;
use crate::kernel::Kernel;
use crate::run::{run_with, RunError, RunOutput};
use crate::scenario::flags::{load_scenario, read_scenario, ScenarioArgs};
use crate::scenario::{InputError, Scenario, Source, DEMO};
use crate::util::suggest::did_you_mean;
use std::path::PathBuf;
use track::{Finder, Recorder, Selector, Slot, Wait};

#[derive(clap::Args)]
pub struct ExplainArgs {
    /// Scenario file (TOML; `-` reads it from stdin), or `demo` for the built-in demo's; flags
    /// below override its keys
    scenario: Option<PathBuf>,
    #[command(flatten)]
    common: ScenarioArgs,
    /// The task: a pid, or a comm (every task of that name, e.g. hackbench-recv)
    #[arg(long, value_name = "NAME|PID")]
    task: String,
    /// Tell the story around this simulated time, with a unit, e.g. 3ms: the task's wait
    /// covering it, else the next one
    #[arg(long, value_name = "TIME", conflicts_with = "worst_wait")]
    at: Option<String>,
    /// Tell the story of the longest runnable wait (wakeup or preemption to running) of the
    /// task, or of all tasks of the name [default without --at]
    #[arg(long)]
    worst_wait: bool,
}

/// An error and its exit status.
type Failure = (i32, String);

fn bad(msg: impl Into<String>) -> Failure {
    (2, msg.into())
}

pub fn main(a: &ExplainArgs) -> i32 {
    match explain(a) {
        Ok(text) => {
            print!("{text}");
            0
        }
        Err((rc, msg)) => {
            eprintln!("schedlab: error: {msg}");
            rc
        }
    }
}

fn explain(a: &ExplainArgs) -> Result<String, Failure> {
    let at = match &a.at {
        Some(s) => Some(
            crate::workload::params::parse_duration(s).map_err(|e| bad(format!("--at: {e}")))?,
        ),
        None => None,
    };
    let (src, sc) = load(a).map_err(|e| bad(e.to_string()))?;
    let sel = Selector::parse(&a.task);
    let found: Slot<Option<Wait>> = Default::default();
    let finder =
        |_: &Kernel| Box::new(Finder::new(sel.clone(), at, found.clone())) as Box<dyn Tracer>;
    let out = run_with(&src, &sc, Some(&finder)).map_err(run_failure)?;
    let named = (0..out.kernel.tasks.len())
        .filter(|&p| sel.matches(&out.kernel, p))
        .count();
    if named == 0 {
        return Err(bad(unknown_task(&a.task, &out)));
    }
    let Some(w) = take(&found).flatten() else {
        return Ok(format!("{}: never waited runnable in this run\n", a.task));
    };
    let rec: Slot<Recorder> = Default::default();
    let recorder =
        |k: &Kernel| Box::new(Recorder::new(w, k.rqs.len(), rec.clone())) as Box<dyn Tracer>;
    let out = run_with(&src, &sc, Some(&recorder)).map_err(run_failure)?;
    let r = take(&rec).ok_or_else(|| (3, "the second run did not finish".to_string()))?;
    let about = match at {
        Some(t) => story::About::At(t),
        None => story::About::Worst(named),
    };
    Ok(story::render(&out.kernel, &r, w, about))
}

fn take<T>(slot: &Slot<T>) -> Option<T> {
    slot.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// The scenario as `run` loads it (or the demo's), without its outputs:
/// explain writes no trace, JSON or page, and runs quietly.
fn load(a: &ExplainArgs) -> Result<(Source, Scenario), InputError> {
    let demo = a
        .scenario
        .as_ref()
        .is_some_and(|p| p.as_os_str() == "demo" && !p.exists());
    let file = match demo {
        true => (Some("<built-in demo>".to_string()), DEMO.to_string()),
        false => read_scenario(a.scenario.as_ref())?,
    };
    let (src, mut sc) = load_scenario(file, &a.common, false, None, &[])?;
    sc.output = Default::default();
    sc.output.quiet = true;
    Ok((src, sc))
}

fn run_failure(e: RunError) -> Failure {
    let rc = match e {
        RunError::Input(_) => 2,
        RunError::Invariant(_) | RunError::Budget(_) => 3,
    };
    (rc, e.to_string())
}

/// `--task X` names no task: say which names there are.
fn unknown_task(name: &str, out: &RunOutput) -> String {
    let mut comms: Vec<(&str, usize)> = Vec::new();
    for t in &out.kernel.tasks {
        match comms.iter_mut().find(|c| c.0 == t.comm) {
            Some(c) => c.1 += 1,
            None => comms.push((&t.comm, 1)),
        }
    }
    let hint = did_you_mean(name, comms.iter().map(|c| c.0));
    let list: Vec<String> = (comms.iter().take(8))
        .map(|(c, n)| match n {
            1 => c.to_string(),
            n => format!("{c} ({n} tasks)"),
        })
        .collect();
    format!(
        "--task {name}: no task has that name or pid{hint}; tasks in this run: {}",
        list.join(", ")
    )
}
