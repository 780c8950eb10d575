//! One simulation: resolve the machine and workloads of a scenario, build
//! the kernel, run it, and hand back everything the reports need.

use crate::engine::NSEC_PER_SEC;
use crate::kernel::deadline::DlBw;
use crate::kernel::task::Pid;
use crate::kernel::task_group::{CgroupSpec, TaskGroups, CGROUP_WEIGHT_DFL};
use crate::kernel::tracepoint::Tracer;
use crate::kernel::ProgressHook;
use crate::kernel::{Kernel, SimError};
use crate::machine;
use crate::report::html::{pelt_warning, run_page, HtmlReport, Slot};
use crate::report::RunView;
use crate::scenario::{InputError, Output, Scenario, Source};
use crate::trace::{tee_all, Selection};
use crate::util::fs::{AtomicFile, OutputSet};
use crate::workload::params::Params;
use crate::workload::{Builder, Workload};
use std::time::Instant;

/// The simulated time a run with an endless workload stops at by default.
pub const DEFAULT_DURATION: u64 = NSEC_PER_SEC;

pub struct RunOutput {
    pub scenario: Scenario,
    pub kernel: Kernel,
    pub workloads: Vec<(Workload, Vec<Pid>)>,
    pub wall_ns: u64,
}

impl RunOutput {
    /// The run as the reports read it.
    pub fn view(&self) -> RunView<'_> {
        RunView {
            kernel: &self.kernel,
            workloads: &self.workloads,
            machine: &self.scenario.machine,
            seed: self.scenario.seed,
            scenario: self.scenario.to_table(),
            wall_ns: self.wall_ns,
        }
    }
}

#[derive(Debug)]
pub enum RunError {
    /// Bad input, including a workload that deadlocks (exit 2).
    Input(InputError),
    /// A --check invariant failed (a simulator bug, exit 3).
    Invariant(String),
    /// The run spent its `Scenario::budget` (only the fuzzer sets one).
    Budget(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            RunError::Input(e) => write!(f, "{e}"),
            RunError::Invariant(m) => write!(f, "invariant violated: {m}"),
            RunError::Budget(m) => write!(f, "over budget: {m}"),
        }
    }
}

/// Attach the location of a workload parameter to its error.
fn workload_error(
    src: &Source,
    i: usize,
    w: &crate::workload::params::Params,
    msg: String,
) -> InputError {
    let key = w
        .values
        .keys()
        .find(|k| msg.contains(&format!("`{k}`")))
        .map_or(format!("workload.{i}"), |k| format!("workload.{i}.{k}"));
    src.err(&key, msg)
}

/// Split the `cgroup=PATH` key every workload takes off its parameters.
fn take_cgroup(p: &Params) -> (Params, Option<String>) {
    let mut p = p.clone();
    let cg = p.values.remove("cgroup");
    (p, cg)
}

/// The declared cgroups plus those the workloads name that are not
/// declared, with the defaults (the paths are normalized already), and
/// the autogroups of the workloads not placed in a cgroup that are not
/// declared either (a declared one keeps its cpu.weight: it wins), with
/// their nice.
fn with_workload_groups(
    declared: &[CgroupSpec],
    w: &[(Workload, Option<String>)],
) -> (Vec<CgroupSpec>, Vec<(String, i32)>) {
    let mut all = declared.to_vec();
    let mut auto = Vec::new();
    let unplaced = w.iter().filter(|(_, cg)| cg.is_none());
    let autogroups = unplaced.flat_map(|(w, _)| w.autogroups());
    let named = w.iter().flat_map(|(w, _)| w.cgroups()).map(|p| (p, None));
    for (path, nice) in named.chain(autogroups.map(|(p, n)| (p, Some(n)))) {
        if !all.iter().any(|c| c.path == path) {
            if let Some(n) = nice {
                auto.push((path.clone(), n));
            }
            all.push(CgroupSpec {
                path,
                weight: CGROUP_WEIGHT_DFL,
                max: None,
            });
        }
    }
    (all, auto)
}

/// The task groups of a run: the declared ones, the workloads', and the
/// autogroups, each at its nice's weight.
fn task_groups(
    declared: &[CgroupSpec],
    w: &[(Workload, Option<String>)],
    ncpus: usize,
) -> Result<TaskGroups, String> {
    let (specs, auto) = with_workload_groups(declared, w);
    let mut groups = TaskGroups::build(&specs)?;
    groups.check_machine(ncpus)?;
    for (path, nice) in auto {
        let tg = groups.lookup(&path)?;
        groups.set_autogroup_nice(tg, nice);
    }
    Ok(groups)
}

/// Run a resolved scenario.
pub fn run(src: &Source, sc: &Scenario) -> Result<RunOutput, RunError> {
    run_with(src, sc, None)
}

/// Makes a tracer for a run besides the ones its `[output]` asks for.
pub type ExtraTracer<'a> = &'a (dyn Fn(&Kernel) -> Box<dyn Tracer> + Sync);

/// Run a resolved scenario with an extra tracer (compare's HTML data);
/// its trace and HTML files are renamed into place at the end.
pub fn run_with(
    src: &Source,
    sc: &Scenario,
    extra: Option<ExtraTracer>,
) -> Result<RunOutput, RunError> {
    let outs = OutputSet::new();
    let out = run_in(src, sc, extra, &outs)?;
    outs.commit()
        .map_err(|e| RunError::Input(InputError::new(format!("cannot write {e}"))))?;
    Ok(out)
}

/// Run a resolved scenario, its trace and HTML files opened in `outs` and
/// left there, written, for the caller to commit with its other outputs.
pub fn run_in(
    src: &Source,
    sc: &Scenario,
    extra: Option<ExtraTracer>,
    outs: &OutputSet,
) -> Result<RunOutput, RunError> {
    let mut m = machine::from_spec(&sc.machine)
        .map_err(|e| RunError::Input(src.err("machine.preset", e)))?;
    if let Some(n) = sc.max_cstate {
        m.cost.idle_states.truncate(n + 1);
    }
    if let Some(g) = sc.governor {
        m.cost.governor = g;
    }
    let mut parsed = Vec::new();
    let mut rd = DlBw::new(&m, &sc.kernel);
    for (i, p) in sc.workloads.iter().enumerate() {
        let (p, cgroup) = take_cgroup(p);
        let w = Workload::parse(&p)
            .and_then(|w| w.check_machine(m.nr_cpus()).map(|_| w))
            .and_then(|w| w.admit_dl(&mut rd).map(|_| w))
            .map_err(|e| RunError::Input(workload_error(src, i, &p, e)))?;
        parsed.push((w, cgroup));
    }
    let groups = task_groups(&sc.cgroups, &parsed, m.nr_cpus())
        .map_err(|e| RunError::Input(src.err("cgroup", e)))?;
    let mut workloads = Vec::new();
    for (i, (w, cgroup)) in parsed.into_iter().enumerate() {
        let tg = match cgroup {
            None => 0,
            Some(path) => groups
                .lookup(&path)
                .map_err(|e| RunError::Input(src.err(&format!("workload.{i}.cgroup"), e)))?,
        };
        workloads.push((w, tg));
    }
    let mut k = Kernel::new(m, sc.kernel.clone());
    k.seed(sc.seed);
    k.set_groups(groups);
    k.check = sc.check;
    if sc.check {
        k.track_running_util();
    }
    k.marks.every = sc.check_every;
    k.budget = sc.budget;
    for (lvl, spec) in &sc.kernel.domain_flags {
        k.sd.set_level_flags(lvl, spec)
            .map_err(|e| RunError::Input(src.err(&format!("kernel.domain.{lvl}.flags"), e)))?;
    }
    let (tracer, page) =
        open_tracers(&sc.output, &k, outs, sc.duration).map_err(RunError::Input)?;
    k.set_tracer(match extra {
        Some(make) => Some(crate::trace::tee(tracer, make(&k))),
        None => tracer,
    });
    let mut built = Vec::new();
    for (i, (w, tg)) in workloads.into_iter().enumerate() {
        let mut b = Builder::new(i, sc.seed);
        b.cgroup = tg;
        w.build(&mut k, &mut b);
        built.push((w, b.tasks));
        // After each workload, so many large ones stop at the first too many.
        check_sources(src, &k).map_err(RunError::Input)?;
    }
    let endless = built.iter().any(|(w, _)| !w.is_finite());
    let timed = built.iter().filter_map(|(w, _)| w.run_for()).max();
    let end = sc
        .duration
        .or(timed)
        .or(endless.then_some(DEFAULT_DURATION));
    k.start_noise_irqs();
    let t0 = Instant::now();
    k.progress = crate::progress::for_run(end).map(|p| Box::new(p) as Box<dyn ProgressHook>);
    let result = k.run(end);
    k.progress = None;
    crate::progress::run_done();
    k.finish();
    if result.is_ok() {
        close_tracers(&mut k).map_err(RunError::Input)?;
    }
    let wall_ns = t0.elapsed().as_nanos() as u64;
    match result {
        Ok(()) => {
            let out = RunOutput {
                scenario: sc.clone(),
                kernel: k,
                workloads: built,
                wall_ns,
            };
            finish_outputs(&out, page).map_err(RunError::Input)?;
            Ok(out)
        }
        Err(SimError::Deadlock(m)) => Err(RunError::Input(InputError {
            file: src.file.clone(),
            line: None,
            key: None,
            msg: format!("the workload deadlocks: {m}"),
        })),
        Err(SimError::Invariant(m)) => Err(RunError::Invariant(m)),
        Err(SimError::Budget(m)) => Err(RunError::Budget(m)),
    }
}

/// Which run time applies when a workload has its own (rt-app's
/// global.duration, schbench -r, ...): sim.duration (--duration) wins.
pub fn run_time_note(out: &RunOutput) -> Option<String> {
    let duration = out.scenario.duration;
    let (own, kind) = (out.workloads.iter())
        .filter_map(|(w, _)| w.run_for().map(|t| (t, w.name())))
        .max()?;
    let s = |ns: u64| format!("{}s", ns as f64 / 1e9);
    Some(match duration {
        Some(d) => format!(
            "running for {} (--duration / sim.duration), not the {kind} workload's own {}",
            s(d),
            s(own)
        ),
        None => format!(
            "running for {}, the {kind} workload's own run time (--duration overrides it)",
            s(own)
        ),
    })
}

/// The tasks, CPUs and the end each need an event source; refuse more
/// than the event queue has.
fn check_sources(src: &Source, k: &Kernel) -> Result<(), InputError> {
    let sources = crate::engine::PER_CPU * k.machine.nr_cpus() + 1 + k.tasks.len();
    if sources <= crate::engine::MAX_SLOTS {
        return Ok(());
    }
    Err(src.err(
        "workload",
        format!(
            "{} tasks on {} CPUs is more than the simulator's {} event sources",
            k.tasks.len(),
            k.machine.nr_cpus(),
            crate::engine::MAX_SLOTS
        ),
    ))
}

/// The `--html` page still to write after the run: its file and the data
/// its tracer collects.
type Page = Option<(AtomicFile, Slot)>;

/// The tracers a run's `[output]` asks for (--trace, --html), if any, and
/// the HTML page to write once the run is over.
fn open_tracers(
    out: &Output,
    k: &Kernel,
    outs: &OutputSet,
    end: Option<u64>,
) -> Result<(Option<Box<dyn Tracer>>, Page), InputError> {
    let mut list: Vec<Box<dyn Tracer>> = Vec::new();
    let opts = out.trace.clone().unwrap_or_default();
    if !opts.path.is_empty() {
        list.push(
            opts.open(k, outs, end)
                .map_err(|e| InputError::new(format!("--trace: {e}")))?,
        );
    } else if out.trace.is_some() && out.html.is_none() {
        return Err(InputError::new(
            "--trace-format/--trace-window/--trace-pelt/--trace-decisions/--trace-syscalls need --trace PATH",
        ));
    }
    let mut page = None;
    if let Some(path) = &out.html {
        let file = outs
            .create(std::path::Path::new(path))
            .map_err(|e| InputError::new(format!("--html: {e}")))?;
        let sel = Selection { names: opts.pelt };
        let slot = Slot::default();
        list.push(Box::new(HtmlReport::new(slot.clone(), sel, opts.window, k)));
        page = Some((file, slot));
    }
    let tracer = match list.len() {
        0 => None,
        1 => list.pop(),
        _ => Some(tee_all(list)),
    };
    Ok((tracer, page))
}

/// After a run: warn about `--trace-pelt` names that select nothing that
/// ran, and write the HTML page with the run's header.
fn finish_outputs(out: &RunOutput, page: Page) -> Result<(), InputError> {
    if let Some(t) = &out.scenario.output.trace {
        let sel = Selection {
            names: t.pelt.clone(),
        };
        if let Some(w) = pelt_warning(&out.kernel, &sel) {
            eprintln!("schedlab: warning: {w}");
        }
    }
    let Some((mut file, slot)) = page else {
        return Ok(());
    };
    let mut data = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
    let Some(data) = data.as_mut() else {
        return Ok(());
    };
    data["header"] = crate::report::meta::run_header(&out.view());
    data["meta"] = crate::report::meta::meta();
    file.write_all(run_page(data).as_bytes())
        .and_then(|()| file.commit())
        .map_err(|e| InputError::new(format!("cannot write the --html page: {e}")))
}

/// Complete and commit the tracer's output after a successful run.
fn close_tracers(k: &mut Kernel) -> Result<(), InputError> {
    match k.tracer.take() {
        Some(t) => t
            .finish(k)
            .map_err(|e| InputError::new(format!("cannot write {e}"))),
        None => Ok(()),
    }
}
