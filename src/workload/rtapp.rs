//! rt-app JSON workloads (`--workload rtapp:FILE`): tasks with instances,
//! loops and phases of events, compiled to task programs. `run` is work in
//! µs at full capacity (rt-app's calibrated loop, which scales with the
//! CPU); `runtime` is modelled the same way. Features the model lacks
//! (memrun, semaphores, a phase's deadline parameters, uclamp, external
//! workloads) are errors naming the file, line and feature; keys rt-app
//! itself ignores are ignored with a warning. docs/rtapp.md has the table.

use super::lenient_json::{self, Node, J};
use super::params::Params;
use super::program::{Dist, Mark, Op};
use super::sched_attr::SchedAttr;
use super::{BenchResult, Builder, TaskSpec, MAX_TASKS};
use crate::kernel::deadline::{DlBw, DlParams};
use crate::kernel::futex::Barrier;
use crate::kernel::pthread::PthreadOp;
use crate::kernel::rt::Policy;
use crate::kernel::task::Pid;
use crate::kernel::Kernel;
use serde_json::{json, Map};
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

#[derive(Clone, Debug, PartialEq)]
enum Ev {
    Run(u64),
    Sleep(u64),
    Timer {
        name: String,
        period: u64,
        relative: bool,
    },
    Lock(String),
    Unlock(String),
    Wait {
        cond: String,
        mutex: String,
    },
    /// pthread_cond_signal, then pthread_cond_wait on the same condition
    /// (rt-app's sig_and_wait; the file holds the mutex around it).
    Sync {
        cond: String,
        mutex: String,
    },
    Signal(String),
    Broad(String),
    Barrier(String),
    Yield,
    Fork(String),
    /// Wait on the named condition (rt-app fills an empty name with the
    /// task's own), until a `resume` of that name.
    Suspend(String),
    /// Broadcast the named condition; a name nobody suspends on is a no-op.
    Resume(String),
    /// memset of this many bytes over the thread's buffer (rt-app's memload).
    Mem(u64),
    /// write(2) of this many bytes to `io_device`, a buffer at a time
    /// (rt-app's ioload).
    IoRun(u64),
}

#[derive(Clone, Debug)]
struct Phase {
    name: String,
    /// The line of its `loop` key, or of the phase.
    line: usize,
    loops: i64,
    /// Each event with the line of its key.
    events: Vec<(Ev, usize)>,
    /// The phase's own affinity and the line of its key.
    cpus: Option<(Vec<usize>, usize)>,
    /// The cgroup the thread moves to at the phase's start.
    taskgroup: Option<String>,
    /// The policy and priority it switches to at the phase's start.
    sched: Option<PhaseSched>,
}

/// A phase's `policy` (None: rt-app's "same", the current one) and
/// `priority` (None: the policy's default) with the line of its key.
#[derive(Clone, Debug)]
struct PhaseSched {
    policy: Option<Policy>,
    prio: Option<(i64, usize)>,
    /// The line of its `policy` key, else of its `priority`.
    line: usize,
}

impl PhaseSched {
    /// The priority to set under `policy`: the given one, or rt-app's
    /// default (RT priority 10, nice 0).
    fn prio(&self, policy: Policy) -> i32 {
        match self.prio {
            Some((v, _)) => v as i32,
            None if policy.is_rt() => 10,
            None => 0,
        }
    }
}

#[derive(Clone, Debug)]
struct TaskDef {
    name: String,
    instances: u64,
    loops: i64,
    /// The line of the task's `loop` key, or of the task.
    loop_line: usize,
    phases: Vec<Phase>,
    nice: i32,
    policy: Policy,
    rt_prio: u32,
    /// `dl-runtime` of a fair task: its custom slice, ns (0: none).
    slice: u64,
    /// A SCHED_DEADLINE task's parameters, with the line of `dl-runtime`
    /// (or of the task).
    dl: Option<(DlParams, usize)>,
    /// The affinity and the line of its key.
    cpus: Option<(Vec<usize>, usize)>,
    /// The cgroup the threads start in.
    taskgroup: Option<String>,
    delay: u64,
}

/// A task's keys that are not events.
const TASK_KEYS: &[&str] = &[
    "instance",
    "loop",
    "phases",
    "policy",
    "priority",
    "cpus",
    "delay",
    "taskgroup",
    "dl-runtime",
    "dl-period",
    "dl-deadline",
];

/// More iterations than this of a loop that takes no time are a hang.
const MAX_IDLE_ITERATIONS: u128 = 1_000_000;
const NO_PROGRESS: &str = "loop makes no progress (its events take no time)";
/// rt-app's limit on distinct taskgroups (max_nbr_tgs).
const MAX_TASKGROUPS: usize = 32;

#[derive(Clone, Debug)]
pub struct RtApp {
    file: String,
    tasks: Vec<TaskDef>,
    /// Threads per task: its instances, then the ones its forks create.
    threads: Vec<u64>,
    /// global.duration
    pub duration: Option<u64>,
    /// global.mem_buffer_size: the bytes one `iorun` write moves at most.
    mem_buffer: u64,
}

/// rt-app's default `mem_buffer_size` (DEFAULT_MEM_BUF_SIZE, 4 MiB).
const MEM_BUFFER: u64 = 4 << 20;
/// The one `io_device` modelled: its write_null copies nothing.
const DEV_NULL: &str = "/dev/null";

/// A fork event: the task whose phase holds it, the phase's loops and
/// the event's line.
struct ForkSite {
    by: usize,
    phase_loops: i64,
    line: usize,
}

/// The depth-first count of `RtApp::thread_counts`, on its own stack.
struct CountDfs<'a> {
    app: &'a RtApp,
    file: &'a str,
    /// The fork events naming each task.
    forks: &'a BTreeMap<&'a str, Vec<ForkSite>>,
    /// Each task's threads, once counted.
    counts: Vec<Option<u64>>,
    /// The tasks being counted: a fork by one of them is a cycle.
    on_path: Vec<bool>,
    /// (task, its next fork site, its threads so far)
    stack: Vec<(usize, usize, u128)>,
}

impl<'a> CountDfs<'a> {
    /// Count task `root` and every task whose forks it depends on.
    fn count(&mut self, root: usize) -> Result<(), String> {
        if self.counts[root].is_none() {
            self.push(root);
        }
        while let Some(&(task, next, n)) = self.stack.last() {
            let Some(site) = self.sites(task).get(next) else {
                self.stack.pop();
                self.on_path[task] = false;
                self.counts[task] = Some(n as u64);
                if let Some(&(parent, at, _)) = self.stack.last() {
                    self.add(n, &self.sites(parent)[at])?;
                }
                continue;
            };
            let forker = &self.app.tasks[site.by];
            if forker.loops < 0 {
                return Err(self.at(
                    site,
                    "fork in an endless loop (rt-app stops at 1024 forks); give the task a `loop`",
                ));
            }
            if self.on_path[site.by] {
                let msg = format!(
                    "tasks `{}` and `{}` fork each other without end",
                    self.app.tasks[task].name, forker.name
                );
                return Err(self.at(site, &msg));
            }
            match self.counts[site.by] {
                Some(k) => self.add(k as u128, site)?,
                None => self.push(site.by),
            }
        }
        Ok(())
    }

    /// The fork events naming `task`.
    fn sites(&self, task: usize) -> &'a [ForkSite] {
        self.forks
            .get(self.app.tasks[task].name.as_str())
            .map_or(&[], Vec::as_slice)
    }

    fn push(&mut self, task: usize) {
        self.on_path[task] = true;
        let instances = self.app.tasks[task].instances as u128;
        self.stack.push((task, 0, instances));
    }

    /// The top task gains `forkers` threads times the times the fork at
    /// `site` runs; on to its next fork site.
    fn add(&mut self, forkers: u128, site: &ForkSite) -> Result<(), String> {
        let runs = self.app.tasks[site.by].loops as u128 * site.phase_loops as u128;
        let top = self.stack.last_mut().expect("a task being counted");
        top.2 += forkers * runs;
        top.1 += 1;
        if top.2 > MAX_TASKS as u128 {
            return Err(self.at(site, &format!("forks more than {MAX_TASKS} threads")));
        }
        Ok(())
    }

    fn at(&self, site: &ForkSite, msg: &str) -> String {
        let name = &self.app.tasks[site.by].name;
        format!("{}:{}: `tasks.{name}.fork`: {msg}", self.file, site.line)
    }
}

/// Event keys by prefix, longest first (rt-app matches `run0`, `sleep1`...).
const EVENTS: &[&str] = &[
    "runtime", "barrier", "suspend", "resume", "signal", "unlock", "iorun", "sleep", "timer",
    "broad", "yield", "lock", "wait", "sync", "fork", "run", "mem",
];

/// rt-app events the model does not have, matched before `EVENTS` (rt-app
/// reads `memrun` before `mem`).
const UNSUPPORTED: &[&str] = &["sem_post", "sem_wait", "memrun", "pi_", "external_workload"];

/// Global keys about rt-app's own logging and setup, which do not change
/// the schedule.
const GLOBAL_IGNORED: &[&str] = &[
    "calibration",
    "pi_enabled",
    "lock_pages",
    "logdir",
    "log_basename",
    "log_size",
    "ftrace",
    "gnuplot",
    "cumulative_slack",
];

struct Ctx<'a> {
    file: &'a str,
    default_policy: String,
    /// Keys ignored, printed on stderr once the file is read.
    warnings: std::cell::RefCell<Vec<String>>,
}

const POLICIES: &str = "SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR, SCHED_DEADLINE";

/// rt-app's policy names.
fn policy_of(s: &str) -> Option<Policy> {
    Policy::parse(&s.trim_start_matches("SCHED_").to_ascii_lowercase())
}

impl Ctx<'_> {
    fn err(&self, n: &Node, path: &str, msg: impl std::fmt::Display) -> String {
        format!("{}:{}: `{path}`: {msg}", self.file, n.line)
    }

    fn int(&self, n: &Node, path: &str, lo: i64, hi: i64) -> Result<i64, String> {
        match n.v {
            J::Num(v) if v.fract() == 0.0 && v >= lo as f64 && v <= hi as f64 => Ok(v as i64),
            J::Num(v) => Err(self.err(n, path, format!("{v} is not an integer in {lo}..={hi}"))),
            _ => Err(self.err(n, path, format!("expected an integer, found {}", n.kind()))),
        }
    }

    /// µs → ns
    fn usec(&self, n: &Node, path: &str) -> Result<u64, String> {
        Ok(self.int(n, path, 0, i64::MAX / 1000)? as u64 * 1000)
    }

    fn str<'n>(&self, n: &'n Node, path: &str) -> Result<&'n str, String> {
        match &n.v {
            J::Str(s) => Ok(s),
            _ => Err(self.err(n, path, format!("expected a string, found {}", n.kind()))),
        }
    }

    fn obj<'n>(&self, n: &'n Node, path: &str) -> Result<&'n [(String, Node)], String> {
        match &n.v {
            J::Obj(items) => Ok(items),
            _ => Err(self.err(n, path, format!("expected an object, found {}", n.kind()))),
        }
    }

    fn field<'n>(&self, n: &'n Node, path: &str, key: &str) -> Result<&'n Node, String> {
        self.obj(n, path)?
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .ok_or_else(|| self.err(n, path, format!("missing `{key}`")))
    }

    fn event(&self, key: &str, n: &Node, path: &str) -> Result<Option<Ev>, String> {
        if let Some(u) = UNSUPPORTED.iter().find(|e| key.starts_with(**e)) {
            return Err(self.err(n, path, format!("rt-app event `{u}` is not supported")));
        }
        let Some(kind) = EVENTS.iter().find(|e| key.starts_with(**e)) else {
            return Ok(None);
        };
        let name = |s: &Self| s.str(n, path).map(str::to_string);
        Ok(Some(match *kind {
            "run" | "runtime" => Ev::Run(self.usec(n, path)?),
            "sleep" => Ev::Sleep(self.usec(n, path)?),
            "timer" => {
                let mode = match self.obj(n, path)?.iter().rev().find(|(k, _)| k == "mode") {
                    Some((_, m)) => self.str(m, &format!("{path}.mode"))?,
                    None => "relative",
                };
                if mode != "relative" && mode != "absolute" {
                    return Err(self.err(
                        n,
                        path,
                        format!("timer mode `{mode}` is not relative or absolute"),
                    ));
                }
                Ev::Timer {
                    name: self
                        .str(self.field(n, path, "ref")?, &format!("{path}.ref"))?
                        .to_string(),
                    period: self.usec(self.field(n, path, "period")?, &format!("{path}.period"))?,
                    relative: mode == "relative",
                }
            }
            "lock" => Ev::Lock(name(self)?),
            "unlock" => Ev::Unlock(name(self)?),
            "wait" => Ev::Wait {
                cond: self.str(self.field(n, path, "ref")?, path)?.to_string(),
                mutex: self.str(self.field(n, path, "mutex")?, path)?.to_string(),
            },
            "sync" => Ev::Sync {
                cond: self.str(self.field(n, path, "ref")?, path)?.to_string(),
                mutex: self.str(self.field(n, path, "mutex")?, path)?.to_string(),
            },
            // rt-app reads the count with json_object_get_int.
            "mem" => Ev::Mem(self.int(n, path, 0, i32::MAX as i64)? as u64),
            "iorun" => Ev::IoRun(self.int(n, path, 0, i32::MAX as i64)? as u64),
            "signal" => Ev::Signal(name(self)?),
            "broad" => Ev::Broad(name(self)?),
            "barrier" => Ev::Barrier(name(self)?),
            "yield" => Ev::Yield,
            "fork" => Ev::Fork(name(self)?),
            "suspend" => Ev::Suspend(name(self)?),
            "resume" => Ev::Resume(name(self)?),
            _ => unreachable!("EVENTS lists only these"),
        }))
    }

    /// A phase's (or a phase-less task's) events; `extra` keys are allowed
    /// and handled by the caller.
    fn events(&self, n: &Node, path: &str, extra: &[&str]) -> Result<Vec<(Ev, usize)>, String> {
        let mut out = Vec::new();
        for (k, v) in self.obj(n, path)? {
            if extra.contains(&k.as_str()) {
                continue;
            }
            let p = format!("{path}.{k}");
            if self.property(k, v, &p)? {
                continue;
            }
            match self.event(k, v, &p)? {
                Some(e) => out.push((e, v.line)),
                None => self.warn(v, &p, "unknown key, ignored (as rt-app does)"),
            }
        }
        Ok(out)
    }

    /// A task or phase property the model lacks: an error naming the
    /// feature, a warning if it does not change the schedule, or false if
    /// `k` is no property at all. Properties it has are read by `task`.
    fn property(&self, k: &str, v: &Node, p: &str) -> Result<bool, String> {
        let unsupported = |what: &str| Err(self.err(v, p, format!("{what} is not supported")));
        match k {
            "dl-runtime" | "dl-period" | "dl-deadline" => {
                unsupported("a phase's dl-runtime, dl-period or dl-deadline")
            }
            "util_min" | "util_max" => unsupported("utilization clamping (uclamp)"),
            "dl-reclaim" => {
                let msg = "rt-app never reads it (no SCHED_FLAG_RECLAIM, no GRUB), ignored";
                self.warn(v, p, msg);
                Ok(true)
            }
            "membind_nodes" => {
                self.warn(v, p, "NUMA memory binding is not modelled, ignored");
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn warn(&self, n: &Node, path: &str, msg: &str) {
        self.warnings.borrow_mut().push(self.err(n, path, msg));
    }

    fn task(&self, name: &str, n: &Node) -> Result<TaskDef, String> {
        let path = format!("tasks.{name}");
        let mut t = TaskDef {
            name: name.to_string(),
            instances: 1,
            loops: -1,
            loop_line: n.line,
            phases: Vec::new(),
            nice: 0,
            policy: Policy::Normal,
            rt_prio: 0,
            slice: 0,
            dl: None,
            cpus: None,
            taskgroup: None,
            delay: 0,
        };
        let mut policy = self.default_policy.to_string();
        let mut priority = None;
        let mut runtime = None;
        let mut dl_keys = Vec::new();
        let mut has_phases = false;
        for (k, v) in self.obj(n, &path)? {
            let p = format!("{path}.{k}");
            match k.as_str() {
                "instance" => t.instances = self.int(v, &p, 0, MAX_TASKS as i64)? as u64,
                "loop" => {
                    t.loops = self.int(v, &p, -1, i64::MAX)?;
                    t.loop_line = v.line;
                }
                "policy" => policy = self.str(v, &p)?.to_string(),
                "priority" => priority = Some((v, p.clone())),
                "dl-runtime" => runtime = Some((v, p.clone())),
                "dl-period" | "dl-deadline" => dl_keys.push((k.as_str(), v, p.clone())),
                "delay" => t.delay = self.usec(v, &p)?,
                "cpus" => t.cpus = Some((self.cpus(v, &p)?, v.line)),
                "taskgroup" => t.taskgroup = self.taskgroup(v, &p)?,
                "phases" => {
                    has_phases = true;
                    for (pk, pv) in self.obj(v, &p)? {
                        t.phases.push(self.phase(pk, pv, &format!("{p}.{pk}"))?);
                    }
                }
                _ => {}
            }
        }
        t.policy = policy_of(&policy).ok_or_else(|| {
            self.err(
                n,
                &format!("{path}.policy"),
                format!("policy `{policy}` is not modelled ({POLICIES})"),
            )
        })?;
        if t.policy == Policy::Deadline {
            t.dl = Some(self.dl_params(n, &path, priority, runtime, &dl_keys)?);
            return self.task_rest(t, n, &path, has_phases);
        }
        for (_, v, p) in &dl_keys {
            self.warn(
                v,
                p,
                "used only by SCHED_DEADLINE, ignored (as rt-app does)",
            );
        }
        // priority: nice for OTHER/BATCH/IDLE [0], RT priority for FIFO/RR [10].
        match (priority, t.policy.is_rt()) {
            (Some((v, p)), true) => t.rt_prio = self.int(v, &p, 1, 99)? as u32,
            (None, true) => t.rt_prio = 10,
            (Some((v, p)), false) => t.nice = self.int(v, &p, -20, 19)? as i32,
            (None, false) => {}
        }
        // dl-runtime of a fair task: rt-app's sched_attr.sched_runtime, a
        // custom slice; of an RT task, nothing the kernel reads.
        if let Some((v, p)) = runtime {
            if t.policy.is_rt() {
                return Err(self.err(v, &p, "dl-runtime of an RT task is not supported"));
            }
            t.slice = self.usec(v, &p)?;
        }
        self.task_rest(t, n, &path, has_phases)
    }

    /// A SCHED_DEADLINE task's `dl-runtime` [0], `dl-period` [the runtime]
    /// and `dl-deadline` [the period] in µs, as rt-app defaults them, and
    /// its `priority`, which must be 0; checked as sched_setattr does.
    fn dl_params(
        &self,
        n: &Node,
        path: &str,
        priority: Option<(&Node, String)>,
        runtime: Option<(&Node, String)>,
        keys: &[(&str, &Node, String)],
    ) -> Result<(DlParams, usize), String> {
        if let Some((v, p)) = priority {
            if self.int(v, &p, i64::MIN, i64::MAX)? != 0 {
                return Err(self.err(
                    v,
                    &p,
                    "a SCHED_DEADLINE task's priority must be 0 (sched_setattr: EINVAL)",
                ));
            }
        }
        let (runtime, at) = match &runtime {
            Some((v, p)) => (self.usec(v, p)?, *v),
            None => (0, n),
        };
        let mut dl = DlParams {
            runtime,
            deadline: 0,
            period: runtime,
        };
        for (_, v, p) in keys.iter().filter(|k| k.0 == "dl-period") {
            dl.period = self.usec(v, p)?;
        }
        dl.deadline = dl.period;
        for (_, v, p) in keys.iter().filter(|k| k.0 == "dl-deadline") {
            dl.deadline = self.usec(v, p)?;
        }
        dl.check().map_err(|e| {
            let what = format!("sched_setattr(SCHED_DEADLINE) refuses {e} (EINVAL)");
            self.err(at, &format!("{path}.dl-runtime"), what)
        })?;
        Ok((dl, at.line))
    }

    /// The rest of a task: its phases (or its own events as one phase),
    /// the loop count, suspend names and the per-phase policy checks.
    fn task_rest(
        &self,
        mut t: TaskDef,
        n: &Node,
        path: &str,
        has_phases: bool,
    ) -> Result<TaskDef, String> {
        if !has_phases {
            t.phases.push(Phase {
                name: "0".into(),
                line: n.line,
                loops: 1,
                events: self.events(n, path, TASK_KEYS)?,
                cpus: None,
                taskgroup: None,
                sched: None,
            });
        } else if let Some(&(_, line)) = self.events(n, path, TASK_KEYS)?.first() {
            return Err(format!(
                "{}:{line}: `{path}`: events next to `phases` are not supported",
                self.file
            ));
        }
        if t.loops == 0 {
            t.loops = 1;
        }
        // Suspend on "" waits on the task's own name (workgen fills it in).
        for (e, _) in t.phases.iter_mut().flat_map(|p| &mut p.events) {
            if let Ev::Suspend(s) = e {
                if s.is_empty() {
                    s.clone_from(&t.name);
                }
            }
        }
        self.check_phase_sched(&t)?;
        let fork = t.phases.iter().flat_map(|p| &p.events);
        let mut fork = fork.filter(|(e, _)| matches!(e, Ev::Fork(_)));
        if let Some((_, line)) = fork.next().filter(|_| t.policy == Policy::Deadline) {
            return Err(format!(
                "{}:{line}: `{path}`: a SCHED_DEADLINE thread cannot fork (sched_fork fails with EAGAIN)",
                self.file
            ));
        }
        Ok(t)
    }

    /// A phase: its `loop`, `cpus`, `taskgroup` and events.
    fn phase(&self, name: &str, n: &Node, path: &str) -> Result<Phase, String> {
        let key = |k: &str| {
            self.obj(n, path)
                .map(|o| o.iter().rev().find(|(x, _)| x == k))
        };
        let (loops, line) = match key("loop")? {
            Some((_, l)) => (self.int(l, &format!("{path}.loop"), 1, i64::MAX)?, l.line),
            None => (1, n.line),
        };
        let cpus = match key("cpus")? {
            Some((_, v)) => Some((self.cpus(v, &format!("{path}.cpus"))?, v.line)),
            None => None,
        };
        let taskgroup = match key("taskgroup")? {
            Some((_, v)) => self.taskgroup(v, &format!("{path}.taskgroup"))?,
            None => None,
        };
        let (policy, mut sched_line) = match key("policy")? {
            Some((_, v)) => (Some(self.policy(v, &format!("{path}.policy"))?), v.line),
            None => (None, n.line),
        };
        let prio = match key("priority")? {
            Some((_, v)) => Some((self.int(v, &format!("{path}.priority"), -20, 99)?, v.line)),
            None => None,
        };
        if let (None, Some((_, l))) = (policy, prio) {
            sched_line = l;
        }
        Ok(Phase {
            name: name.to_string(),
            line,
            loops,
            events: self.events(
                n,
                path,
                &["loop", "cpus", "taskgroup", "policy", "priority"],
            )?,
            cpus,
            taskgroup,
            sched: (policy.is_some() || prio.is_some()).then_some(PhaseSched {
                policy,
                prio,
                line: sched_line,
            }),
        })
    }

    /// A policy name.
    fn policy(&self, v: &Node, p: &str) -> Result<Policy, String> {
        let s = self.str(v, p)?;
        policy_of(s)
            .ok_or_else(|| self.err(v, p, format!("policy `{s}` is not modelled ({POLICIES})")))
    }

    /// Each phase's priority must fit the policy it runs under, which for a
    /// phase without `policy` is the one before it (twice round the phases:
    /// the first phase follows the last from the second loop on).
    fn check_phase_sched(&self, t: &TaskDef) -> Result<(), String> {
        let mut cur = t.policy;
        for ph in t.phases.iter().chain(&t.phases) {
            let Some(s) = &ph.sched else { continue };
            if cur == Policy::Deadline || s.policy == Some(Policy::Deadline) {
                return Err(format!(
                    "{}:{}: `tasks.{}.phases.{}`: a phase's policy or priority change from or to SCHED_DEADLINE is not supported",
                    self.file, s.line, t.name, ph.name
                ));
            }
            cur = s.policy.unwrap_or(cur);
            let Some((v, line)) = s.prio else { continue };
            let (lo, hi) = if cur.is_rt() { (1, 99) } else { (-20, 19) };
            if v < lo || v > hi {
                return Err(format!(
                    "{}:{line}: `tasks.{}.phases.{}.priority`: {v} is not in {lo}..={hi}, the range of the policy it applies to ({cur:?})",
                    self.file, t.name, ph.name
                ));
            }
        }
        Ok(())
    }

    /// A cgroup path under the cpu controller's root (`""`: none, `/`: the
    /// root group).
    fn taskgroup(&self, v: &Node, p: &str) -> Result<Option<String>, String> {
        let s = self.str(v, p)?;
        if s.is_empty() {
            return Ok(None);
        }
        if s.starts_with('/') && s.trim_matches('/').is_empty() {
            return Ok(Some("/".into()));
        }
        crate::kernel::task_group::normalize(s)
            .map(Some)
            .map_err(|e| self.err(v, p, e))
    }

    /// An affinity: a non-empty list of CPU numbers (checked against the
    /// machine by `RtApp::check_machine`); rt-app refuses a lone number
    /// (parse_cpuset_data: `assure_type_is(..., json_type_array)`).
    fn cpus(&self, v: &Node, p: &str) -> Result<Vec<usize>, String> {
        let J::Arr(items) = &v.v else {
            let msg = format!("expected a list of CPUs, e.g. [0, 1], found {}", v.kind());
            return Err(self.err(v, p, msg));
        };
        let list = (items.iter())
            .map(|c| self.int(c, p, 0, 4095).map(|c| c as usize))
            .collect::<Result<Vec<_>, _>>()?;
        if list.is_empty() {
            return Err(self.err(v, p, "an empty CPU list allows no CPU"));
        }
        Ok(list)
    }

    /// A loop whose events take no time would spin the simulator at one
    /// instant: refuse one that repeats endlessly or more than
    /// MAX_IDLE_ITERATIONS times (rt-app itself would busy-loop). A
    /// barrier takes time only if another thread uses it.
    fn check_progress(&self, t: &TaskDef, users: &BTreeMap<String, u32>) -> Result<(), String> {
        let path = format!("tasks.{}", t.name);
        let waits = |e: &Ev| match e {
            Ev::Barrier(name) => users[name] > 1,
            e => takes_time(e),
        };
        let idle = |p: &Phase| !p.events.iter().any(|(e, _)| waits(e));
        let mut idle_iters: u128 = 0;
        for ph in &t.phases {
            if !idle(ph) {
                continue;
            }
            if ph.loops as u128 > MAX_IDLE_ITERATIONS {
                return Err(format!(
                    "{}:{}: `{path}.phases.{}.loop`: {NO_PROGRESS}",
                    self.file, ph.line, ph.name
                ));
            }
            idle_iters += ph.loops as u128;
        }
        if t.phases.iter().all(idle)
            && (t.loops < 0 || idle_iters.max(1) * t.loops as u128 > MAX_IDLE_ITERATIONS)
        {
            return Err(format!(
                "{}:{}: `{path}.loop`: {NO_PROGRESS}",
                self.file, t.loop_line
            ));
        }
        Ok(())
    }
}

/// The last `key` of the last `global` object, if any.
fn global_key<'n>(root: &'n Node, key: &str) -> Option<&'n Node> {
    let J::Obj(items) = &root.v else { return None };
    let (_, g) = items.iter().rev().find(|(k, _)| k == "global")?;
    let J::Obj(gi) = &g.v else { return None };
    gi.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// Whether an event always lets simulated time pass: work, a sleep, a
/// timer, or a wait for another task (a barrier: if it has other users).
fn takes_time(e: &Ev) -> bool {
    match e {
        Ev::Run(ns) | Ev::Sleep(ns) => *ns > 0,
        Ev::Timer { period, .. } => *period > 0,
        Ev::Mem(bytes) | Ev::IoRun(bytes) => *bytes > 0,
        Ev::Wait { .. } | Ev::Sync { .. } | Ev::Suspend(_) => true,
        Ev::Barrier(_)
        | Ev::Lock(_)
        | Ev::Unlock(_)
        | Ev::Signal(_)
        | Ev::Broad(_)
        | Ev::Yield
        | Ev::Fork(_)
        | Ev::Resume(_) => false,
    }
}

impl RtApp {
    /// `rtapp:FILE` or `rtapp:file=FILE`.
    pub fn parse(p: &Params) -> Result<RtApp, String> {
        let file = p
            .values
            .get("file")
            .ok_or("rtapp needs a file (rtapp:FILE)")?;
        let text =
            std::fs::read_to_string(file).map_err(|e| format!("{file}: cannot read: {e}"))?;
        Self::from_text(file, &text)
    }

    pub fn from_text(file: &str, text: &str) -> Result<RtApp, String> {
        let root = lenient_json::parse(text)
            .map_err(|(l, m)| format!("{file}:{l}: malformed JSON: {m}"))?;
        let mut c = Ctx {
            file,
            default_policy: "SCHED_OTHER".into(),
            warnings: Default::default(),
        };
        // global.default_policy applies to every task: read it first.
        if let Some(p) = global_key(&root, "default_policy") {
            let path = "global.default_policy";
            let pol = c.str(p, path)?;
            if policy_of(pol).is_none() {
                let msg = format!("policy `{pol}` is not modelled ({POLICIES})");
                return Err(c.err(p, path, msg));
            }
            c.default_policy = pol.to_string();
        }
        let mut app = RtApp {
            file: file.to_string(),
            tasks: Vec::new(),
            threads: Vec::new(),
            duration: None,
            mem_buffer: MEM_BUFFER,
        };
        for (k, v) in c.obj(&root, "")? {
            match k.as_str() {
                "tasks" => {
                    let tasks = c.obj(v, "tasks")?;
                    // Each task is a thread or more, or a fork target:
                    // refuse too many before reading them.
                    if tasks.len() as u64 > MAX_TASKS {
                        let msg =
                            format!("{} tasks, more than the limit of {MAX_TASKS}", tasks.len());
                        return Err(c.err(v, "tasks", msg));
                    }
                    for (name, t) in tasks {
                        app.tasks.push(c.task(name, t)?);
                    }
                }
                "global" => app.global(&c, v)?,
                "resources" => {}
                _ => c.warn(v, k, "unknown top-level key, ignored (as rt-app does)"),
            }
        }
        if app.tasks.is_empty() {
            return Err(c.err(&root, "tasks", "no tasks"));
        }
        if let Some(dev) = global_key(&root, "io_device") {
            app.io_device(&c, dev, "global.io_device")?;
        }
        if app.cgroups().len() > MAX_TASKGROUPS {
            return Err(c.err(
                &root,
                "taskgroup",
                format!("more than rt-app's {MAX_TASKGROUPS} taskgroups"),
            ));
        }
        app.threads = app.thread_counts(&c)?;
        let users = app.barrier_users();
        for t in &app.tasks {
            c.check_progress(t, &users)?;
        }
        for w in c.warnings.take() {
            eprintln!("schedlab: warning: {w}");
        }
        Ok(app)
    }

    fn global(&mut self, c: &Ctx, n: &Node) -> Result<(), String> {
        for (k, v) in c.obj(n, "global")? {
            let p = format!("global.{k}");
            match k.as_str() {
                "duration" => {
                    let d = c.int(v, &p, -1, 1 << 30)?;
                    self.duration = (d > 0).then(|| d as u64 * 1_000_000_000);
                }
                "default_policy" => {}
                "mem_buffer_size" => self.mem_buffer = c.int(v, &p, 1, i32::MAX as i64)? as u64,
                "io_device" => {}
                k if GLOBAL_IGNORED.contains(&k) => {}
                _ => c.warn(v, &p, "unknown global key, ignored (as rt-app does)"),
            }
        }
        Ok(())
    }

    /// `iorun` writes to /dev/null, which copies nothing (write_null); a
    /// file or device behind it (page cache, writeback) is not modelled.
    /// Called once the tasks are read (`global` may come first).
    fn io_device(&self, c: &Ctx, v: &Node, p: &str) -> Result<(), String> {
        let dev = c.str(v, p)?;
        let writes = (self.tasks.iter().flat_map(|t| &t.phases))
            .flat_map(|ph| &ph.events)
            .any(|(e, _)| matches!(e, Ev::IoRun(_)));
        if dev != DEV_NULL && writes {
            let msg = format!("`iorun` to `{dev}` is not modelled (only {DEV_NULL})");
            return Err(c.err(v, p, msg));
        }
        Ok(())
    }

    /// How many threads of each task run: its instances, started at time
    /// zero, plus one per fork event executed (rt-app's fork creates a new
    /// thread of the named task each time). A fork must run a bounded
    /// number of times and forks must not form a cycle. Linear in the
    /// tasks and fork events: each task is counted once, depth first
    /// without recursion (a chain of forks may be as long as the tasks).
    fn thread_counts(&self, c: &Ctx) -> Result<Vec<u64>, String> {
        let forks = self.forks_by_target(c)?;
        let mut dfs = CountDfs {
            app: self,
            file: c.file,
            forks: &forks,
            counts: vec![None; self.tasks.len()],
            on_path: vec![false; self.tasks.len()],
            stack: Vec::new(),
        };
        for i in 0..self.tasks.len() {
            dfs.count(i)?;
        }
        if self.tasks.iter().all(|t| t.instances == 0) {
            return Err(format!(
                "{}: `tasks`: no thread starts: every task has instance 0",
                self.file
            ));
        }
        let counts: Vec<u64> = dfs.counts.into_iter().map(|n| n.unwrap_or(0)).collect();
        let total: u128 = counts.iter().map(|&n| n as u128).sum();
        if total > MAX_TASKS as u128 {
            return Err(format!(
                "{}: `tasks`: {total} threads (instances and forks), more than the limit of {MAX_TASKS}",
                self.file
            ));
        }
        Ok(counts)
    }

    /// Each task's index by name (the first, if a name repeats).
    fn index(&self) -> BTreeMap<&str, usize> {
        let mut by_name = BTreeMap::new();
        for (i, t) in self.tasks.iter().enumerate() {
            by_name.entry(t.name.as_str()).or_insert(i);
        }
        by_name
    }

    /// The fork events naming each task, in file order; a fork of a task
    /// the file lacks is an error.
    fn forks_by_target(&self, c: &Ctx) -> Result<BTreeMap<&str, Vec<ForkSite>>, String> {
        let known = self.index();
        let mut forks: BTreeMap<&str, Vec<ForkSite>> = BTreeMap::new();
        for (by, t) in self.tasks.iter().enumerate() {
            for ph in &t.phases {
                for (e, line) in &ph.events {
                    let Ev::Fork(name) = e else { continue };
                    if !known.contains_key(name.as_str()) {
                        return Err(format!(
                            "{}:{line}: `tasks.{}.fork`: fork of unknown task `{name}`",
                            c.file, t.name
                        ));
                    }
                    let site = ForkSite {
                        by,
                        phase_loops: ph.loops,
                        line: *line,
                    };
                    forks.entry(name.as_str()).or_default().push(site);
                }
            }
        }
        Ok(forks)
    }

    /// Whether every thread ends by itself.
    pub fn is_finite(&self) -> bool {
        self.tasks
            .iter()
            .zip(&self.threads)
            .all(|(t, &n)| t.loops > 0 || n == 0)
    }

    /// Admission control (sched_dl_overflow) of the SCHED_DEADLINE threads,
    /// in file order, as if all lived at once (forked threads and ones that
    /// end release their bandwidth in the kernel: the check is the
    /// stricter one).
    pub fn admit_dl(&self, rd: &mut DlBw) -> Result<(), String> {
        for (t, &n) in self.tasks.iter().zip(&self.threads) {
            let Some((dl, line)) = t.dl else { continue };
            for i in 0..n {
                if !rd.admit(dl.bw()) {
                    return Err(format!(
                        "{}:{line}: `tasks.{}.dl-runtime`: sched_setattr(SCHED_DEADLINE) of thread {} of {n} refused (EBUSY): {}",
                        self.file,
                        t.name,
                        i + 1,
                        rd.describe(dl.bw())
                    ));
                }
            }
        }
        Ok(())
    }

    /// Reject an affinity naming a CPU the machine lacks.
    pub fn check_machine(&self, ncpus: usize) -> Result<(), String> {
        for t in &self.tasks {
            let phases = t.phases.iter().filter_map(|ph| {
                let at = format!("tasks.{}.phases.{}.cpus", t.name, ph.name);
                ph.cpus.as_ref().map(|c| (c, at))
            });
            let own = t
                .cpus
                .as_ref()
                .map(|c| (c, format!("tasks.{}.cpus", t.name)));
            for ((cpus, line), at) in own.into_iter().chain(phases) {
                if let Some(c) = cpus.iter().find(|&&c| c >= ncpus) {
                    return Err(format!(
                        "{}:{line}: `{at}`: CPU {c} is not on this machine (CPUs 0-{})",
                        self.file,
                        ncpus - 1
                    ));
                }
            }
        }
        Ok(())
    }

    /// The cgroups the file's `taskgroup` keys name, which the run creates
    /// if the scenario does not declare them (as rt-app creates them under
    /// the cpu controller's mount point); the root group always exists.
    pub fn cgroups(&self) -> Vec<String> {
        let mut all = std::collections::BTreeSet::new();
        for t in &self.tasks {
            all.extend(t.taskgroup.iter().cloned());
            all.extend(t.phases.iter().filter_map(|ph| ph.taskgroup.clone()));
        }
        all.remove("/");
        all.into_iter().collect()
    }

    /// Barrier users: every thread of a task naming the barrier.
    fn barrier_users(&self) -> BTreeMap<String, u32> {
        let mut users = BTreeMap::new();
        for (t, &n) in self.tasks.iter().zip(&self.threads) {
            for (e, _) in t.phases.iter().flat_map(|p| &p.events) {
                if let Ev::Barrier(name) = e {
                    *users.entry(name.clone()).or_default() += n as u32;
                }
            }
        }
        users
    }

    pub fn build(&self, k: &mut Kernel, b: &mut Builder) {
        let mut res = Resources {
            barrier_users: self.barrier_users(),
            ..Default::default()
        };
        // Every thread first, so that resume and fork can name them.
        let mut threads: Vec<Vec<Pid>> = Vec::new();
        for (t, &n) in self.tasks.iter().zip(&self.threads) {
            let mut pids = Vec::new();
            let workload_group = b.cgroup;
            if let Some(tg) = &t.taskgroup {
                b.cgroup = k.groups.find(tg).expect("created by the run");
            }
            for i in 0..n {
                let comm = if n > 1 {
                    format!("{}-{i}", t.name)
                } else {
                    t.name.clone()
                };
                let p = b.task(
                    k,
                    TaskSpec {
                        comm: &comm,
                        group_of: None,
                        nice: t.nice,
                        allowed: t.cpus.as_ref().map(|c| c.0.clone()),
                        ops: Rc::from(Vec::new()),
                    },
                );
                let attr = SchedAttr {
                    policy: t.policy,
                    prio: t.rt_prio,
                    slice: t.slice,
                    dl: t.dl.map(|d| d.0),
                };
                attr.apply(k, p);
                pids.push(p);
            }
            b.cgroup = workload_group;
            threads.push(pids);
        }
        // The threads past a task's instances start when forked, handed
        // to the fork events in file order (a fork names the first task
        // of its name).
        let mut spare: BTreeMap<&str, VecDeque<Pid>> = (self.index().into_iter())
            .map(|(name, i)| {
                let pids = &threads[i][self.tasks[i].instances as usize..];
                (name, pids.iter().copied().collect())
            })
            .collect();
        for (t, pids) in self.tasks.iter().zip(&threads) {
            for (i, &p) in pids.iter().enumerate() {
                let ops = self.program(k, t, p, &mut res, &mut spare);
                k.tasks[p].prog = crate::workload::program::ProgState::new(Rc::from(ops));
                if i < t.instances as usize {
                    b.launch(k, p);
                }
            }
        }
    }

    fn program(
        &self,
        k: &mut Kernel,
        t: &TaskDef,
        me: Pid,
        res: &mut Resources,
        spare: &mut BTreeMap<&str, VecDeque<Pid>>,
    ) -> Vec<Op> {
        let mut ops = Vec::new();
        if t.delay > 0 {
            // clock_nanosleep(TIMER_ABSTIME) to t_zero + delay: a private
            // absolute timer started at 0 (a thread forked later may not
            // sleep at all).
            k.timers.push(None);
            ops.push(Op::Pthread(PthreadOp::Timer {
                timer: k.timers.len() - 1,
                period: t.delay,
                relative: false,
                first: 0,
            }));
        }
        ops.push(Op::Mark(Mark::Start));
        let forever = |n: i64| if n < 0 { 0 } else { n as u64 };
        ops.push(Op::Loop {
            count: forever(t.loops),
        });
        let phase_cpus = t.phases.iter().any(|ph| ph.cpus.is_some());
        for ph in &t.phases {
            if phase_cpus {
                // At each phase's start: its own cpus, else the task's,
                // else every CPU (rt-app's set_thread_affinity).
                let cpus = match (&ph.cpus, &t.cpus) {
                    (Some((c, _)), _) | (None, Some((c, _))) => c.clone(),
                    (None, None) => (0..k.machine.nr_cpus()).collect(),
                };
                ops.push(Op::SetAffinity {
                    set: res.cpuset(k, cpus),
                });
            }
            // A phase without policy or priority keeps the current ones.
            if let Some(s) = &ph.sched {
                let prio = s.prio(s.policy.unwrap_or(t.policy));
                ops.push(Op::SetScheduler {
                    policy: s.policy,
                    prio,
                });
            }
            // A phase without a taskgroup stays in the current one.
            if let Some(tg) = &ph.taskgroup {
                ops.push(Op::MoveGroup {
                    tg: k.groups.find(tg).expect("created by the run"),
                });
            }
            ops.push(Op::Loop {
                count: ph.loops as u64,
            });
            for (e, _) in &ph.events {
                match e {
                    Ev::Run(ns) => ops.push(Op::Run(Dist::Fixed(*ns))),
                    Ev::Sleep(ns) => ops.push(Op::Sleep(Dist::Fixed(*ns))),
                    Ev::Timer {
                        name,
                        period,
                        relative,
                    } => {
                        let key = if name.starts_with("unique") {
                            format!("{name}#{me}")
                        } else {
                            name.clone()
                        };
                        let timer = *res.timers.entry(key).or_insert_with(|| {
                            k.timers.push(None);
                            k.timers.len() - 1
                        });
                        // rt-app starts every timer at t_first: the first
                        // thread's start plus the task's delay, for forked
                        // threads too.
                        ops.push(Op::Pthread(PthreadOp::Timer {
                            timer,
                            period: *period,
                            relative: *relative,
                            first: t.delay,
                        }));
                    }
                    Ev::Lock(m) => ops.push(Op::Pthread(PthreadOp::MutexLock {
                        futex: res.futex(k, "mutex", m),
                    })),
                    Ev::Unlock(m) => ops.push(Op::Pthread(PthreadOp::MutexUnlock {
                        futex: res.futex(k, "mutex", m),
                    })),
                    Ev::Wait { cond, mutex } => res.cond_wait(k, cond, mutex, &mut ops),
                    Ev::Sync { cond, mutex } => {
                        ops.push(Op::Pthread(PthreadOp::CondWake {
                            futex: res.futex(k, "cond", cond),
                            all: false,
                        }));
                        res.cond_wait(k, cond, mutex, &mut ops);
                    }
                    Ev::Mem(bytes) => ops.extend(self.mem_op(k, *bytes)),
                    Ev::IoRun(bytes) => ops.extend(self.io_op(k, *bytes)),
                    Ev::Signal(c) => ops.push(Op::Pthread(PthreadOp::CondWake {
                        futex: res.futex(k, "cond", c),
                        all: false,
                    })),
                    Ev::Broad(c) => ops.push(Op::Pthread(PthreadOp::CondWake {
                        futex: res.futex(k, "cond", c),
                        all: true,
                    })),
                    Ev::Barrier(n) => {
                        let count = res.barrier_users[n];
                        let barrier = *res.barriers.entry(n.clone()).or_insert_with(|| {
                            k.barriers.push(Barrier {
                                count,
                                ..Default::default()
                            });
                            k.barriers.len() - 1
                        });
                        ops.push(Op::Barrier { barrier });
                    }
                    Ev::Yield => ops.push(Op::Yield),
                    Ev::Fork(name) => {
                        // This event's children: one per time it runs.
                        let pool = spare.get_mut(name.as_str()).expect("checked at parse");
                        let runs = (t.loops.max(1) * ph.loops) as usize;
                        let children: Vec<Pid> = pool.drain(..runs.min(pool.len())).collect();
                        ops.push(Op::ForkNext {
                            pool: k.shm.new_fork_pool(children),
                        });
                    }
                    Ev::Suspend(name) => ops.push(Op::Pthread(PthreadOp::CondWait {
                        futex: res.futex(k, "suspend", name),
                    })),
                    Ev::Resume(name) => ops.push(Op::Pthread(PthreadOp::CondWake {
                        futex: res.futex(k, "suspend", name),
                        all: true,
                    })),
                }
            }
            ops.push(Op::EndLoop);
        }
        ops.push(Op::EndLoop);
        ops.push(Op::Mark(Mark::Stop));
        ops.push(Op::Exit);
        ops
    }

    /// rt-app's memload: `bytes` of memset in user space, at the machine's
    /// memory write cost; none for 0 bytes. At least 1 ns, as
    /// `takes_time` counts on.
    fn mem_op(&self, k: &Kernel, bytes: u64) -> Option<Op> {
        let ns = bytes.saturating_mul(k.machine.cost.mem_ps_per_byte()) / 1000;
        (bytes > 0).then_some(Op::Run(Dist::Fixed(ns.max(1))))
    }

    /// rt-app's ioload: one write(2) to /dev/null per `mem_buffer_size`
    /// bytes or part of it, each a syscall entry and exit (write_null
    /// copies nothing); none for 0 bytes.
    fn io_op(&self, k: &Kernel, bytes: u64) -> Option<Op> {
        let writes = bytes.div_ceil(self.mem_buffer);
        (writes > 0).then_some(Op::KernelRun {
            dist: Dist::Fixed(writes.saturating_mul(k.machine.cost.syscall_ns)),
            cond_resched: 0,
            atomic: false,
        })
    }

    pub fn report(&self, k: &Kernel, tasks: &[Pid]) -> BenchResult {
        let mut lines = vec![format!("# rt-app {}: {} threads", self.file, tasks.len())];
        let mut threads = Vec::new();
        for &p in tasks {
            let t = &k.tasks[p];
            // rt-app's own log names a thread in full; the kernel's comm
            // keeps 15 bytes of it.
            lines.push(format!(
                "{:<16} runtime {:>10.3} ms  switches {:>7}  wait_max {:>8.3} ms",
                t.full_name(),
                t.se.sum_exec_runtime as f64 / 1e6,
                t.stats.nr_switches,
                t.stats.wait_max as f64 / 1e6
            ));
            threads.push(json!({"comm": t.comm, "name": t.full_name(), "runtime_ns": t.se.sum_exec_runtime, "switches": t.stats.nr_switches, "wait_max_ns": t.stats.wait_max}));
        }
        let mut fields = Map::new();
        fields.insert("threads".into(), json!(threads));
        BenchResult { lines, fields }
    }
}

/// Named rt-app resources, created on first use.
#[derive(Default)]
struct Resources {
    /// Futex words by (kind, name): mutexes, conditions, suspend points.
    futexes: BTreeMap<(&'static str, String), usize>,
    barriers: BTreeMap<String, usize>,
    barrier_users: BTreeMap<String, u32>,
    timers: BTreeMap<String, usize>,
    cpusets: BTreeMap<Vec<usize>, usize>,
}

impl Resources {
    fn cpuset(&mut self, k: &mut Kernel, mut cpus: Vec<usize>) -> usize {
        cpus.sort_unstable();
        cpus.dedup();
        *self
            .cpusets
            .entry(cpus.clone())
            .or_insert_with(|| k.shm.new_cpuset(cpus))
    }

    /// pthread_cond_wait: release the mutex, sleep on the condition, take
    /// the mutex again.
    fn cond_wait(&mut self, k: &mut Kernel, cond: &str, mutex: &str, ops: &mut Vec<Op>) {
        let (c, m) = (self.futex(k, "cond", cond), self.futex(k, "mutex", mutex));
        ops.push(Op::Pthread(PthreadOp::MutexUnlock { futex: m }));
        ops.push(Op::Pthread(PthreadOp::CondWait { futex: c }));
        ops.push(Op::Pthread(PthreadOp::MutexLock { futex: m }));
    }

    fn futex(&mut self, k: &mut Kernel, kind: &'static str, name: &str) -> usize {
        *self
            .futexes
            .entry((kind, name.to_string()))
            .or_insert_with(|| k.futex_new(0))
    }
}
