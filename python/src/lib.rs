//! `schedlab._native`: the simulator for the Python package. Everything
//! crosses the boundary as JSON text (the `--json` documents of the CLI);
//! `schedlab/__init__.py` turns it into pandas DataFrames. Every call that
//! simulates releases the GIL.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use schedlab::kernel::tracepoint::{TraceEvent, Tracer};
use schedlab::kernel::Kernel;
use schedlab::report::json::to_json;
use schedlab::run::run_with;
use schedlab::scenario::flags::{load_scenario, read_scenario, ScenarioArgs};
use schedlab::scenario::{cgroup_table, parse_set_value, set_key, workload_table};
use schedlab::scenario::{InputError as RustInputError, Scenario, Source};
use schedlab::sweep::{self, plan::Plan, results};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

create_exception!(
    _native,
    InputError,
    PyValueError,
    "Bad input: the message names the file, line and key, as the CLI's (exit 2) does."
);

fn input(e: impl std::fmt::Display) -> PyErr {
    InputError::new_err(e.to_string())
}

fn parse(text: &str) -> PyResult<Value> {
    serde_json::from_str(text).map_err(|e| input(format!("malformed request: {e}")))
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The keywords of `run()` (a JSON object) as a resolved scenario.
fn scenario(spec: &Value) -> Result<(Source, Scenario), RustInputError> {
    let args = ScenarioArgs {
        machine: spec
            .get("machine")
            .and_then(Value::as_str)
            .map(String::from),
        workloads: strings(spec, "workloads"),
        cgroups: strings(spec, "cgroups"),
        seed: spec.get("seed").and_then(Value::as_u64),
        duration: duration(spec)?,
        sets: strings(spec, "set"),
    };
    let file = spec
        .get("scenario")
        .and_then(Value::as_str)
        .map(PathBuf::from);
    load_scenario(read_scenario(file.as_ref())?, &args, false, None, &[])
}

/// `duration`, which the package turns into a string with a unit; any
/// other value is refused, not silently left at the scenario's.
fn duration(spec: &Value) -> Result<Option<String>, RustInputError> {
    match spec.get("duration") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(RustInputError::new(format!(
            "duration: expected a time with a unit, e.g. \"3s\", not {v}"
        ))),
    }
}

/// A run's events as columns, for `Result.trace()`.
#[derive(Default)]
struct Collect {
    cols: std::collections::BTreeMap<&'static str, Vec<Value>>,
}

impl Collect {
    fn row(&mut self, fields: [(&'static str, Value); 8]) {
        for (k, v) in fields {
            self.cols.entry(k).or_default().push(v);
        }
    }
}

fn pid_of(k: &Kernel, p: Option<usize>) -> Value {
    p.map_or(json!(0), |p| json!(k.tasks[p].pid))
}

fn comm_of(k: &Kernel, p: Option<usize>) -> Value {
    p.map_or(json!("<idle>"), |p| json!(k.tasks[p].comm))
}

impl Tracer for Collect {
    fn event(&mut self, k: &Kernel, ev: &TraceEvent) {
        let n = Value::Null;
        let (name, cpu, p, other, a, b) = match *ev {
            TraceEvent::Switch {
                cpu, prev, next, ..
            } => ("sched_switch", json!(cpu), next, prev, n.clone(), n),
            TraceEvent::Waking { cpu, p, waker } => {
                ("sched_waking", json!(cpu), Some(p), waker, n.clone(), n)
            }
            TraceEvent::Wakeup { cpu, p, target } => {
                ("sched_wakeup", json!(cpu), Some(p), None, json!(target), n)
            }
            TraceEvent::WakeupNew { cpu, p, target } => (
                "sched_wakeup_new",
                json!(cpu),
                Some(p),
                None,
                json!(target),
                n,
            ),
            TraceEvent::Migrate { p, orig, dest } => (
                "sched_migrate_task",
                n.clone(),
                Some(p),
                None,
                json!(orig),
                json!(dest),
            ),
            TraceEvent::Fork { cpu, parent, child } => (
                "sched_process_fork",
                json!(cpu),
                Some(child),
                Some(parent),
                n.clone(),
                n,
            ),
            TraceEvent::Exit { p } => {
                ("sched_process_exit", n.clone(), Some(p), None, n.clone(), n)
            }
            // Decision records and syscall events: built only for a
            // tracer that asks for them, which this one does not.
            TraceEvent::Pick { .. }
            | TraceEvent::Place { .. }
            | TraceEvent::Resched { .. }
            | TraceEvent::Balance { .. }
            | TraceEvent::SysEnter { .. }
            | TraceEvent::SysExit { .. } => return,
        };
        self.row([
            ("time_ns", json!(k.now)),
            ("event", json!(name)),
            ("cpu", cpu),
            ("pid", pid_of(k, p)),
            ("comm", comm_of(k, p)),
            (
                "other_pid",
                other.map_or(Value::Null, |o| pid_of(k, Some(o))),
            ),
            ("target_cpu", a),
            ("dest_cpu", b),
        ]);
    }

    fn finish(self: Box<Self>, _k: &Kernel) -> std::io::Result<()> {
        Ok(())
    }
}

/// Run one scenario: the `--json` results; with `trace`, also the events as
/// JSON columns.
#[pyfunction]
#[pyo3(signature = (spec, trace=false))]
fn run(py: Python<'_>, spec: &str, trace: bool) -> PyResult<(String, Option<String>)> {
    let spec = parse(spec)?;
    let (src, sc) = scenario(&spec).map_err(input)?;
    py.allow_threads(|| {
        let slot = std::sync::Arc::new(std::sync::Mutex::new(None));
        let make =
            |_: &Kernel| -> Box<dyn Tracer> { Box::new(Shared(slot.clone(), Collect::default())) };
        let extra: Option<schedlab::run::ExtraTracer> = trace.then_some(&make);
        let r = run_with(&src, &sc, extra).map_err(input)?;
        let events = slot.lock().ok().and_then(|mut s| s.take());
        Ok((to_json(&r.view()).to_string(), events))
    })
}

/// A collector that hands its columns over when the run finishes.
struct Shared(std::sync::Arc<std::sync::Mutex<Option<String>>>, Collect);

impl Tracer for Shared {
    fn event(&mut self, k: &Kernel, ev: &TraceEvent) {
        self.1.event(k, ev)
    }

    fn finish(self: Box<Self>, _k: &Kernel) -> std::io::Result<()> {
        let text = serde_json::to_string(&self.1.cols)?;
        if let Ok(mut s) = self.0.lock() {
            *s = Some(text);
        }
        Ok(())
    }
}

/// Compare sides `[{"name": ..., "spec": {...}}, ...]`, `runs` seeds each:
/// the `compare --json` document.
#[pyfunction]
fn compare(py: Python<'_>, sides: &str, runs: u64) -> PyResult<String> {
    let list = parse(sides)?;
    let sides = list
        .as_array()
        .ok_or_else(|| input("sides must be a list"))?
        .iter()
        .map(|s| {
            let name = s
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string();
            Ok((name, scenario(&s["spec"])?))
        })
        .collect::<Result<Vec<_>, RustInputError>>()
        .map_err(input)?;
    py.allow_threads(|| schedlab::compare::compare_sides(&sides, runs))
        .map(|v| v.to_string())
        .map_err(input)
}

fn to_toml(v: &Value) -> Result<toml::Value, RustInputError> {
    Ok(match v {
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Array(a) => toml::Value::Array(a.iter().map(to_toml).collect::<Result<_, _>>()?),
        Value::Object(o) => toml::Value::Table(
            o.iter()
                .map(|(k, x)| Ok((k.clone(), to_toml(x)?)))
                .collect::<Result<_, RustInputError>>()?,
        ),
        Value::Null => return Err(RustInputError::new("None is not a value")),
    })
}

/// The keywords of `sweep()`, or `{"file": PATH}`, as a plan.
fn plan_of(spec: &Value) -> Result<Plan, RustInputError> {
    if let Some(f) = spec.get("file").and_then(Value::as_str) {
        return sweep::plan::from_file(Path::new(f));
    }
    let file = spec
        .get("scenario")
        .and_then(Value::as_str)
        .map(PathBuf::from);
    let (name, text) = read_scenario(file.as_ref())?;
    let (src, mut t) = Source::parse(name.or(Some("<sweep()>".into())), text)?;
    if let Some(m) = spec.get("machine").and_then(Value::as_str) {
        set_key(&mut t, "machine.preset", toml::Value::String(m.into()))?;
    }
    let w = strings(spec, "workloads");
    if !w.is_empty() {
        let list = w
            .iter()
            .map(|s| workload_table(s))
            .collect::<Result<_, _>>()?;
        t.insert("workload".into(), toml::Value::Array(list));
    }
    let c = strings(spec, "cgroups");
    if !c.is_empty() {
        let list = c
            .iter()
            .map(|s| cgroup_table(s))
            .collect::<Result<_, _>>()?;
        t.insert("cgroup".into(), toml::Value::Array(list));
    }
    for kv in strings(spec, "set") {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| RustInputError::new(format!("set `{kv}`: expected KEY=VALUE")))?;
        set_key(&mut t, k.trim(), parse_set_value(v.trim()))?;
    }
    for (key, name) in [
        ("seeds", "seeds"),
        ("grid", "grid"),
        ("variants", "variant"),
        ("metrics", "metrics"),
    ] {
        match spec.get(key) {
            None | Some(Value::Null) => {}
            Some(v) => {
                let v = to_toml(v).map_err(|e| RustInputError {
                    key: Some(key.into()),
                    ..e
                })?;
                t.insert(name.into(), v);
            }
        }
    }
    sweep::plan::from_table(&src, t, Path::new("."))
}

/// Expand a sweep: the plan as JSON.
#[pyfunction]
fn plan(spec: &str) -> PyResult<String> {
    let p = plan_of(&parse(spec)?).map_err(input)?;
    serde_json::to_string(&p).map_err(input)
}

fn plan_from(text: &str) -> PyResult<Plan> {
    serde_json::from_str(text).map_err(|e| input(format!("malformed plan: {e}")))
}

/// Run a plan on local threads: the failures.
#[pyfunction]
fn sweep_local(
    py: Python<'_>,
    plan: &str,
    out: &str,
    jobs: usize,
    resume: bool,
    force: bool,
) -> PyResult<Vec<String>> {
    let p = plan_from(plan)?;
    py.allow_threads(|| sweep::sweep_local(&p, Path::new(out), jobs.max(1), resume, force, true))
        .map_err(input)
}

/// Prepare the results directory: (start time, indices of points to run).
#[pyfunction]
fn open(plan: &str, out: &str, resume: bool, force: bool) -> PyResult<(String, Vec<usize>)> {
    let p = plan_from(plan)?;
    let started = results::utc_now();
    let todo = results::open(Path::new(out), &p, resume, force, &started).map_err(input)?;
    Ok((started, todo))
}

/// Run one point's scenario text: (ok, results JSON or the error).
#[pyfunction]
fn run_point(py: Python<'_>, scenario: &str) -> (bool, String) {
    match py.allow_threads(|| sweep::run_point(scenario)) {
        Ok(v) => (true, v.to_string()),
        Err(e) => (false, e),
    }
}

/// Record point `index`'s outcome in the results directory.
#[pyfunction]
fn record(plan: &str, out: &str, index: usize, ok: bool, text: &str) -> PyResult<()> {
    let p = plan_from(plan)?;
    let point = p.points.get(index).ok_or_else(|| input("no such point"))?;
    let outcome = if ok {
        serde_json::from_str(text).map_err(|e| e.to_string())
    } else {
        Err(text.to_string())
    };
    results::record(Path::new(out), &p, point, outcome).map_err(input)
}

/// Write summary.csv and the manifest's end: the failures.
#[pyfunction]
fn finish(plan: &str, out: &str, started: &str) -> PyResult<Vec<String>> {
    let p = plan_from(plan)?;
    sweep::finish(Path::new(out), &p, started).map_err(input)
}

/// Write the HTML report of a results directory.
#[pyfunction]
fn report(out: &str, html: &str) -> PyResult<()> {
    sweep::report::write(Path::new(out), Path::new(html)).map_err(input)
}

/// Machine presets: (name, description).
#[pyfunction]
fn machines() -> Vec<(String, String)> {
    schedlab::machine::presets()
        .into_iter()
        .map(|(n, d)| (n.to_string(), d))
        .collect()
}

/// Workloads: (name, usage `key=default,...`, description).
#[pyfunction]
fn workloads() -> Vec<(String, String, String)> {
    schedlab::workload::kinds::KINDS
        .iter()
        .map(|k| (k.name.to_string(), k.usage(), k.doc.to_string()))
        .collect()
}

/// Scheduler features: (name, default, description).
#[pyfunction]
fn features() -> Vec<(String, bool, String)> {
    schedlab::kernel::features::FEATURES
        .iter()
        .map(|(_, n, d, what)| (n.to_string(), *d, what.to_string()))
        .collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("InputError", m.py().get_type::<InputError>())?;
    m.add("VERSION", schedlab::util::version::LONG)?;
    for f in [
        wrap_pyfunction!(run, m)?,
        wrap_pyfunction!(compare, m)?,
        wrap_pyfunction!(plan, m)?,
        wrap_pyfunction!(sweep_local, m)?,
        wrap_pyfunction!(open, m)?,
        wrap_pyfunction!(run_point, m)?,
        wrap_pyfunction!(record, m)?,
        wrap_pyfunction!(finish, m)?,
        wrap_pyfunction!(report, m)?,
        wrap_pyfunction!(machines, m)?,
        wrap_pyfunction!(workloads, m)?,
        wrap_pyfunction!(features, m)?,
    ] {
        m.add_function(f)?;
    }
    Ok(())
}
