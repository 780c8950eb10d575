//! Workloads: benchmarks compiled to task programs, and their results in
//! the benchmark's own output format. `kinds.rs` is the table of kinds.
//!
//! Layer: above the kernel (and `trace`, whose parser replay reads); below
//! the reports. Imports no report, scenario, run, experiment or `cli`.

pub mod context1;
pub mod cyclictest;
pub mod fork;
pub mod hackbench;
pub mod irq_complete;
pub mod kernbench;
pub mod kinds;
pub mod kthread;
pub mod lenient_json;
pub mod params;
pub mod periodic;
pub mod pipe;
pub mod program;
pub mod replay;
pub mod rtapp;
pub mod schbench;
pub mod sched_attr;
pub mod stress_ng;

use crate::engine::Rng;
use crate::kernel::task::{Entity, Pid, Task, TaskState, TaskStats};
use crate::kernel::Kernel;
use params::Params;
use program::{Op, ProgState};
use serde_json::{Map, Value};
use std::rc::Rc;

/// A parsed workload.
#[derive(Clone, Debug)]
pub enum Workload {
    Hackbench(hackbench::Hackbench),
    Pipe(pipe::PipeBench),
    Periodic(periodic::Periodic),
    Schbench(schbench::Schbench),
    Context1(context1::Context1),
    Cyclictest(cyclictest::Cyclictest),
    Spawn(fork::Spawn),
    Forky(fork::Forky),
    IrqComplete(irq_complete::IrqComplete),
    Kernbench(kernbench::Kernbench),
    Kthread(kthread::KthreadBench),
    StressNg(stress_ng::StressNg),
    Replay(Rc<replay::Replay>),
    RtApp(Rc<rtapp::RtApp>),
}

/// A benchmark's result: its own output lines and its JSON fields.
pub struct BenchResult {
    pub lines: Vec<String>,
    pub fields: Map<String, Value>,
}

impl BenchResult {
    /// A benchmark cut off by the end of the run has no result: say so
    /// rather than print a partial one.
    fn unfinished(name: &str, now: u64) -> Self {
        let mut fields = Map::new();
        fields.insert("finished".into(), Value::Bool(false));
        BenchResult {
            lines: vec![format!(
                "{name}: did not finish within the simulated {:.6} s (no result; raise --duration)",
                now as f64 / 1e9
            )],
            fields,
        }
    }
}

impl Workload {
    /// Parse a workload spec: its kind from the table, its keys checked
    /// against the kind's parameters, then the kind's own parser.
    pub fn parse(p: &Params) -> Result<Workload, String> {
        let kind = kinds::kind(&p.kind).ok_or_else(|| {
            let names: Vec<&str> = kinds::KINDS.iter().map(|k| k.name).collect();
            format!(
                "unknown workload `{}`{} (known: {})",
                p.kind,
                crate::util::suggest::did_you_mean(&p.kind, names.iter().copied()),
                names.join(", ")
            )
        })?;
        p.check_keys(&kind.keys())?;
        (kind.parse)(p)
    }

    pub fn name(&self) -> &'static str {
        match self {
            Workload::Hackbench(_) => "hackbench",
            Workload::Pipe(_) => "pipe",
            Workload::Periodic(_) => "periodic",
            Workload::Schbench(w) => w.name(),
            Workload::Context1(_) => "context1",
            Workload::Cyclictest(_) => "cyclictest",
            Workload::Spawn(_) => "fork",
            Workload::Forky(_) => "forky",
            Workload::IrqComplete(_) => "irq-complete",
            Workload::Kernbench(_) => "kernbench",
            Workload::Kthread(_) => "kthread",
            Workload::StressNg(_) => "stress-ng",
            Workload::Replay(_) => "replay",
            Workload::RtApp(_) => "rtapp",
        }
    }

    /// Reject parameters the machine cannot honour (a pinned CPU it lacks).
    pub fn check_machine(&self, ncpus: usize) -> Result<(), String> {
        match self {
            Workload::Pipe(w) => w.check_machine(ncpus),
            Workload::IrqComplete(w) => w.check_machine(ncpus),
            Workload::StressNg(w) => w.check_machine(ncpus),
            Workload::RtApp(w) => w.check_machine(ncpus),
            _ => Ok(()),
        }
    }

    /// Admission control of the workload's SCHED_DEADLINE tasks against
    /// the root domain's bandwidth `rd` (what earlier workloads took).
    pub fn admit_dl(&self, rd: &mut crate::kernel::deadline::DlBw) -> Result<(), String> {
        match self {
            Workload::RtApp(w) => w.admit_dl(rd),
            Workload::Periodic(w) => w.attr.admit(rd, w.tasks),
            _ => Ok(()),
        }
    }

    /// Cgroups the workload's own input names (rt-app's `taskgroup`),
    /// which the run creates with the defaults unless declared.
    pub fn cgroups(&self) -> Vec<String> {
        match self {
            Workload::RtApp(w) => w.cgroups(),
            _ => Vec::new(),
        }
    }

    /// Autogroups the workload's tasks are in (a replay's recorded ones:
    /// path and nice), which the run creates unless a cgroup of that path
    /// is declared or the workload is placed in a cgroup.
    pub fn autogroups(&self) -> Vec<(String, i32)> {
        match self {
            Workload::Replay(w) => w.autogroups.clone(),
            _ => Vec::new(),
        }
    }

    /// Whether the workload ends by itself.
    pub fn is_finite(&self) -> bool {
        match self {
            Workload::RtApp(w) => w.is_finite(),
            Workload::StressNg(w) => w.is_finite(),
            w => matches!(
                w,
                Workload::Hackbench(_)
                    | Workload::Pipe(_)
                    | Workload::Replay(_)
                    | Workload::Spawn(_)
                    | Workload::Forky(_)
                    | Workload::Kernbench(_)
                    | Workload::Kthread(_)
            ),
        }
    }

    /// How long a workload that runs for a set time runs (schbench -r,
    /// UnixBench's alarm, rt-app's global.duration), unless the scenario
    /// says otherwise.
    pub fn run_for(&self) -> Option<u64> {
        match self {
            Workload::Schbench(w) => Some(w.r),
            Workload::Context1(w) => Some(w.duration),
            Workload::Cyclictest(w) => Some(w.duration),
            Workload::RtApp(w) => w.duration,
            _ => None,
        }
    }

    /// Create the workload's tasks and start its first ones.
    pub fn build(&self, k: &mut Kernel, b: &mut Builder) {
        match self {
            Workload::Hackbench(w) => w.build(k, b),
            Workload::Pipe(w) => w.build(k, b),
            Workload::Periodic(w) => w.build(k, b),
            Workload::Schbench(w) => w.build(k, b),
            Workload::Context1(w) => w.build(k, b),
            Workload::Cyclictest(w) => w.build(k, b),
            Workload::Spawn(w) => w.build(k, b),
            Workload::Forky(w) => w.build(k, b),
            Workload::IrqComplete(w) => w.build(k, b),
            Workload::Kernbench(w) => w.build(k, b),
            Workload::Kthread(w) => w.build(k, b),
            Workload::StressNg(w) => w.build(k, b),
            Workload::Replay(w) => w.build(k, b),
            Workload::RtApp(w) => w.build(k, b),
        }
    }

    /// Whether a finite workload got to its end: a replay when every
    /// task did (each replays its own part of the trace; some end early),
    /// another when its span ends.
    fn finished(&self, k: &Kernel, tasks: &[Pid]) -> bool {
        use program::Mark;
        match self {
            Workload::Replay(_) => tasks
                .iter()
                .all(|&p| k.tasks[p].prog.marks.iter().any(|m| m.0 == Mark::Stop)),
            _ => marked_span(k, tasks).is_some(),
        }
    }

    pub fn report(&self, k: &Kernel, tasks: &[Pid]) -> BenchResult {
        if self.is_finite() && !self.finished(k, tasks) {
            return BenchResult::unfinished(self.name(), k.now);
        }
        match self {
            Workload::Hackbench(w) => w.report(k, tasks),
            Workload::Pipe(w) => w.report(k, tasks),
            Workload::Periodic(w) => w.report(k, tasks),
            Workload::Schbench(w) => w.report(k, tasks),
            Workload::Context1(w) => w.report(k, tasks),
            Workload::Cyclictest(w) => w.report(k, tasks),
            Workload::Spawn(w) => w.report(k, tasks),
            Workload::Forky(w) => w.report(k, tasks),
            Workload::IrqComplete(w) => w.report(k, tasks),
            Workload::Kernbench(w) => w.report(k, tasks),
            Workload::Kthread(w) => w.report(k, tasks),
            Workload::StressNg(w) => w.report(k, tasks),
            Workload::Replay(w) => w.report(k, tasks),
            Workload::RtApp(w) => w.report(k, tasks),
        }
    }
}

/// Creates tasks for one workload with deterministic pids and RNG streams.
pub struct Builder {
    pub workload: usize,
    pub seed: u64,
    /// The task group every task of this workload starts in.
    pub cgroup: usize,
    pub tasks: Vec<Pid>,
}

/// What a new task looks like.
pub struct TaskSpec<'a> {
    pub comm: &'a str,
    /// Thread-group leader's pid index, None = a new process.
    pub group_of: Option<Pid>,
    pub nice: i32,
    pub allowed: Option<Vec<usize>>,
    pub ops: Rc<[Op]>,
}

/// The most tasks one workload may create.
pub const MAX_TASKS: u64 = 200_000;

/// Pids start here so they look like user tasks in traces.
const PID_BASE: u32 = 1000;

impl Builder {
    pub fn new(workload: usize, seed: u64) -> Self {
        Builder {
            workload,
            seed,
            cgroup: 0,
            tasks: Vec::new(),
        }
    }

    /// Add a task in the New state (it starts when forked or launched).
    pub fn task(&mut self, k: &mut Kernel, spec: TaskSpec) -> Pid {
        let idx = k.tasks.len();
        let pid = PID_BASE + idx as u32;
        let (tgid, mm) = match spec.group_of {
            Some(g) => (k.tasks[g].tgid, k.tasks[g].mm),
            None => (pid, pid),
        };
        let (comm, name) = crate::kernel::task::comm_of(spec.comm);
        k.tasks.push(Task {
            pid,
            tgid,
            comm,
            name,
            workload: self.workload,
            nice: spec.nice,
            policy: crate::kernel::rt::Policy::Normal,
            rt_prio: 0,
            rr_left: 0,
            state: TaskState::New,
            on_rq: false,
            cpu: 0,
            last_ran_cpu: None,
            mm,
            allowed: spec.allowed,
            se: Entity::new(spec.nice),
            dl: Default::default(),
            tg: self.cgroup,
            parent: None,
            clear_child_tid: None,
            zombies: 0,
            wakee_flips: 0,
            wakee_flip_decay_ts: 0,
            last_wakee: None,
            recent_used_cpu: 0,
            remote_wakeup: false,
            exiting: false,
            timer_cpu: 0,
            cfs_list_seq: 0,
            prog: ProgState::new(spec.ops),
            rng: Rng::new(self.seed, idx as u64),
            stats: TaskStats::default(),
        });
        k.alive += 1;
        self.tasks.push(idx);
        idx
    }

    /// pthread_create's CLONE_CHILD_CLEARTID: give thread `p` a tid word
    /// (non-zero while it lives) and return the op that joins it.
    pub fn joinable(&self, k: &mut Kernel, p: Pid) -> Op {
        let f = k.futex_new(1);
        k.tasks[p].clear_child_tid = Some(f);
        Op::FutexWait { futex: f, val: 1 }
    }

    /// Launch a task at time zero, as if a shell on CPU 0 forked it.
    pub fn launch(&self, k: &mut Kernel, p: Pid) {
        k.wake_up_new_task(p, 0);
    }
}

/// The time between the first Start mark and the last Stop mark.
pub fn marked_span(k: &Kernel, tasks: &[Pid]) -> Option<u64> {
    use program::Mark;
    let marks = tasks.iter().flat_map(|&p| k.tasks[p].prog.marks.iter());
    let start = marks
        .clone()
        .filter(|m| m.0 == Mark::Start)
        .map(|m| m.1)
        .min()?;
    let stop = marks.filter(|m| m.0 == Mark::Stop).map(|m| m.1).max()?;
    Some(stop.saturating_sub(start))
}
