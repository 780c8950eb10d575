//! rt-app JSON workloads (`--workload rtapp:FILE`): tasks with instances,
//! loops and phases of events, compiled to task programs. `run` is work in
//! µs at full capacity (rt-app's calibrated loop, which scales with the
//! CPU); `runtime` is modelled the same way. Events and keys the model
//! lacks are errors naming the file and line, never skipped.

use super::lenient_json::{self, Node, J};
use super::params::Params;
use super::program::{Dist, Mark, Op};
use super::{BenchResult, Builder, TaskSpec, MAX_TASKS};
use crate::kernel::futex::Barrier;
use crate::kernel::pthread::PthreadOp;
use crate::kernel::rt::Policy;
use crate::kernel::task::Pid;
use crate::kernel::Kernel;
use serde_json::{json, Map};
use std::collections::BTreeMap;
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
    Signal(String),
    Broad(String),
    Barrier(String),
    Yield,
    Fork(String),
    Suspend,
    Resume(String),
}

#[derive(Clone, Debug)]
struct Phase {
    loops: i64,
    events: Vec<Ev>,
}

#[derive(Clone, Debug)]
struct TaskDef {
    name: String,
    instances: u64,
    loops: i64,
    phases: Vec<Phase>,
    nice: i32,
    policy: Policy,
    rt_prio: u32,
    cpus: Option<Vec<usize>>,
    delay: u64,
}

#[derive(Clone, Debug)]
pub struct RtApp {
    file: String,
    tasks: Vec<TaskDef>,
    /// global.duration
    pub duration: Option<u64>,
}

/// Event keys by prefix, longest first (rt-app matches `run0`, `sleep1`...).
const EVENTS: &[&str] = &[
    "runtime", "barrier", "suspend", "resume", "signal", "unlock", "sleep", "timer", "broad",
    "yield", "lock", "wait", "fork", "run",
];

/// rt-app events the model does not have.
const UNSUPPORTED: &[&str] = &[
    "sem_post", "sem_wait", "memrun", "iorun", "sync", "mem", "iorun", "pi_",
];

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
    "io_device",
    "mem_buffer_size",
    "cumulative_slack",
];

struct Ctx<'a> {
    file: &'a str,
    default_policy: String,
}

const POLICIES: &str = "SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR";

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
        let Some(kind) = EVENTS.iter().find(|e| key.starts_with(**e)) else {
            if let Some(u) = UNSUPPORTED.iter().find(|e| key.starts_with(**e)) {
                return Err(self.err(n, path, format!("rt-app event `{u}` is not supported")));
            }
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
            "signal" => Ev::Signal(name(self)?),
            "broad" => Ev::Broad(name(self)?),
            "barrier" => Ev::Barrier(name(self)?),
            "yield" => Ev::Yield,
            "fork" => Ev::Fork(name(self)?),
            "suspend" => Ev::Suspend,
            "resume" => Ev::Resume(name(self)?),
            _ => unreachable!("EVENTS lists only these"),
        }))
    }

    /// A phase's (or a phase-less task's) events; `extra` keys are allowed
    /// and handled by the caller.
    fn events(&self, n: &Node, path: &str, extra: &[&str]) -> Result<Vec<Ev>, String> {
        let mut out = Vec::new();
        for (k, v) in self.obj(n, path)? {
            if extra.contains(&k.as_str()) {
                continue;
            }
            let p = format!("{path}.{k}");
            match self.event(k, v, &p)? {
                Some(e) => out.push(e),
                None => return Err(self.err(v, &p, format!("unknown or unsupported key `{k}`"))),
            }
        }
        Ok(out)
    }

    fn task(&self, name: &str, n: &Node) -> Result<TaskDef, String> {
        let path = format!("tasks.{name}");
        const TASK_KEYS: &[&str] = &[
            "instance", "loop", "phases", "policy", "priority", "cpus", "delay",
        ];
        let mut t = TaskDef {
            name: name.to_string(),
            instances: 1,
            loops: -1,
            phases: Vec::new(),
            nice: 0,
            policy: Policy::Normal,
            rt_prio: 0,
            cpus: None,
            delay: 0,
        };
        let mut policy = self.default_policy.to_string();
        let mut priority = None;
        let mut has_phases = false;
        for (k, v) in self.obj(n, &path)? {
            let p = format!("{path}.{k}");
            match k.as_str() {
                "instance" => t.instances = self.int(v, &p, 0, MAX_TASKS as i64)? as u64,
                "loop" => t.loops = self.int(v, &p, -1, i64::MAX)?,
                "policy" => policy = self.str(v, &p)?.to_string(),
                "priority" => priority = Some((v, p.clone())),
                "delay" => t.delay = self.usec(v, &p)?,
                "cpus" => {
                    let list = match &v.v {
                        J::Arr(items) => items
                            .iter()
                            .map(|c| self.int(c, &p, 0, 4095))
                            .collect::<Result<Vec<_>, _>>()?,
                        _ => vec![self.int(v, &p, 0, 4095)?],
                    };
                    t.cpus = Some(list.into_iter().map(|c| c as usize).collect());
                }
                "phases" => {
                    has_phases = true;
                    for (pk, pv) in self.obj(v, &p)? {
                        let pp = format!("{p}.{pk}");
                        let loops = match self.obj(pv, &pp)?.iter().rev().find(|(k, _)| k == "loop")
                        {
                            Some((_, l)) => self.int(l, &format!("{pp}.loop"), 1, i64::MAX)?,
                            None => 1,
                        };
                        let events = self.events(pv, &pp, &["loop"])?;
                        t.phases.push(Phase { loops, events });
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
        // priority: nice for OTHER/BATCH/IDLE [0], RT priority for FIFO/RR [10].
        match (priority, t.policy.is_rt()) {
            (Some((v, p)), true) => t.rt_prio = self.int(v, &p, 1, 99)? as u32,
            (None, true) => t.rt_prio = 10,
            (Some((v, p)), false) => t.nice = self.int(v, &p, -20, 19)? as i32,
            (None, false) => {}
        }
        if !has_phases {
            t.phases.push(Phase {
                loops: 1,
                events: self.events(n, &path, TASK_KEYS)?,
            });
        } else if let Some((k, v)) = self
            .obj(n, &path)?
            .iter()
            .find(|(k, _)| !TASK_KEYS.contains(&k.as_str()))
        {
            return Err(self.err(
                v,
                &format!("{path}.{k}"),
                "events next to `phases` are not supported",
            ));
        }
        if t.loops == 0 {
            t.loops = 1;
        }
        Ok(t)
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
        };
        // global.default_policy applies to every task: read it first.
        if let J::Obj(items) = &root.v {
            let g = items.iter().rev().find(|(k, _)| k == "global");
            if let Some(J::Obj(gi)) = g.map(|(_, g)| &g.v) {
                if let Some((_, p)) = gi.iter().rev().find(|(k, _)| k == "default_policy") {
                    c.default_policy = c.str(p, "global.default_policy")?.to_string();
                }
            }
        }
        let mut app = RtApp {
            file: file.to_string(),
            tasks: Vec::new(),
            duration: None,
        };
        for (k, v) in c.obj(&root, "")? {
            match k.as_str() {
                "tasks" => {
                    for (name, t) in c.obj(v, "tasks")? {
                        app.tasks.push(c.task(name, t)?);
                    }
                }
                "global" => app.global(&c, v)?,
                "resources" => {}
                _ => return Err(c.err(v, k, "unknown top-level key (tasks, global, resources)")),
            }
        }
        if app.tasks.is_empty() {
            return Err(c.err(&root, "tasks", "no tasks"));
        }
        app.check_forks(&c, &root)?;
        Ok(app)
    }

    fn global(&mut self, c: &Ctx, n: &Node) -> Result<(), String> {
        for (k, v) in c.obj(n, "global")? {
            let p = format!("global.{k}");
            match k.as_str() {
                "duration" => {
                    let d = c.int(v, &p, -1, 1 << 30)?;
                    self.duration = (d > 0).then_some(d as u64 * 1_000_000_000);
                }
                "default_policy" => {
                    let pol = c.str(v, &p)?;
                    if policy_of(pol).is_none() {
                        return Err(c.err(
                            v,
                            &p,
                            format!("policy `{pol}` is not modelled ({POLICIES})"),
                        ));
                    }
                }
                k if GLOBAL_IGNORED.contains(&k) => {}
                _ => return Err(c.err(v, &p, "unknown or unsupported global key")),
            }
        }
        Ok(())
    }

    /// A forked task is created once per fork event executed: each fork
    /// runs once per instance of its task, and a task forked N times has N
    /// instances, each started by one fork.
    fn check_forks(&self, c: &Ctx, root: &Node) -> Result<(), String> {
        let mut forks = BTreeMap::<&str, u64>::new();
        for t in &self.tasks {
            for e in t.phases.iter().flat_map(|p| &p.events) {
                if let Ev::Fork(name) = e {
                    *forks.entry(name).or_default() += t.instances;
                }
            }
        }
        for (name, n) in forks {
            if let Some(x) = self.tasks.iter().find(|x| x.name == name) {
                if x.instances != n {
                    return Err(c.err(
                        root,
                        &format!("tasks.{name}.instance"),
                        format!(
                            "is {} but the task is forked {n} times (one instance per fork)",
                            x.instances
                        ),
                    ));
                }
            }
        }
        for t in &self.tasks {
            for ph in &t.phases {
                for e in &ph.events {
                    if let Ev::Fork(name) = e {
                        if !self.tasks.iter().any(|x| &x.name == name) {
                            return Err(c.err(
                                root,
                                &format!("tasks.{}", t.name),
                                format!("fork of unknown task `{name}`"),
                            ));
                        }
                        if t.loops != 1 || ph.loops != 1 {
                            return Err(c.err(
                                root,
                                &format!("tasks.{}", t.name),
                                "fork inside a loop is not supported (it must run once)",
                            ));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether every task started at time zero ends by itself.
    pub fn is_finite(&self) -> bool {
        self.tasks.iter().all(|t| t.loops > 0)
    }

    fn forked(&self, name: &str) -> bool {
        self.tasks
            .iter()
            .flat_map(|t| &t.phases)
            .flat_map(|p| &p.events)
            .any(|e| *e == Ev::Fork(name.to_string()))
    }

    pub fn build(&self, k: &mut Kernel, b: &mut Builder) {
        let mut res = Resources::default();
        // Barrier users: every instance of a task naming the barrier.
        for t in &self.tasks {
            for name in t
                .phases
                .iter()
                .flat_map(|p| &p.events)
                .filter_map(|e| match e {
                    Ev::Barrier(n) => Some(n),
                    _ => None,
                })
            {
                let n = t.instances.max(1) as u32;
                *res.barrier_users.entry(name.clone()).or_default() += n;
            }
        }
        // Every instance first, so resume and fork can name them.
        let mut instances: BTreeMap<String, Vec<Pid>> = BTreeMap::new();
        for t in &self.tasks {
            for i in 0..t.instances {
                let comm = if t.instances > 1 {
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
                        allowed: t.cpus.clone(),
                        ops: Rc::from(Vec::new()),
                    },
                );
                k.set_scheduler(p, t.policy, t.rt_prio);
                instances.entry(t.name.clone()).or_default().push(p);
                res.suspend.insert(p, k.futex_new(0));
            }
        }
        for t in &self.tasks {
            for &p in &instances[&t.name] {
                let ops = self.program(k, t, p, &mut res, &instances);
                k.tasks[p].prog = crate::workload::program::ProgState::new(Rc::from(ops));
                if !self.forked(&t.name) {
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
        inst: &BTreeMap<String, Vec<Pid>>,
    ) -> Vec<Op> {
        let mut ops = Vec::new();
        if t.delay > 0 {
            ops.push(Op::Sleep(Dist::Fixed(t.delay)));
        }
        ops.push(Op::Mark(Mark::Start));
        let forever = |n: i64| if n < 0 { 0 } else { n as u64 };
        ops.push(Op::Loop {
            count: forever(t.loops),
        });
        for ph in &t.phases {
            ops.push(Op::Loop {
                count: ph.loops as u64,
            });
            for e in &ph.events {
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
                        ops.push(Op::Pthread(PthreadOp::Timer {
                            timer,
                            period: *period,
                            relative: *relative,
                        }));
                    }
                    Ev::Lock(m) => ops.push(Op::Pthread(PthreadOp::MutexLock {
                        futex: res.futex(k, m),
                    })),
                    Ev::Unlock(m) => ops.push(Op::Pthread(PthreadOp::MutexUnlock {
                        futex: res.futex(k, m),
                    })),
                    Ev::Wait { cond, mutex } => {
                        let (c, m) = (res.futex(k, cond), res.futex(k, mutex));
                        ops.push(Op::Pthread(PthreadOp::MutexUnlock { futex: m }));
                        ops.push(Op::Pthread(PthreadOp::CondWait { futex: c }));
                        ops.push(Op::Pthread(PthreadOp::MutexLock { futex: m }));
                    }
                    Ev::Signal(c) => ops.push(Op::Pthread(PthreadOp::CondWake {
                        futex: res.futex(k, c),
                        all: false,
                    })),
                    Ev::Broad(c) => ops.push(Op::Pthread(PthreadOp::CondWake {
                        futex: res.futex(k, c),
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
                        // The next instance of the forked task not yet taken.
                        let n = res.forks.entry(name.clone()).or_default();
                        ops.push(Op::Fork {
                            child: inst[name][*n],
                        });
                        *n += 1;
                    }
                    Ev::Suspend => ops.push(Op::Pthread(PthreadOp::CondWait {
                        futex: res.suspend[&me],
                    })),
                    Ev::Resume(name) => {
                        for p in &inst[name] {
                            ops.push(Op::Pthread(PthreadOp::CondWake {
                                futex: res.suspend[p],
                                all: true,
                            }));
                        }
                    }
                }
            }
            ops.push(Op::EndLoop);
        }
        ops.push(Op::EndLoop);
        ops.push(Op::Mark(Mark::Stop));
        ops.push(Op::Exit);
        ops
    }

    pub fn report(&self, k: &Kernel, tasks: &[Pid]) -> BenchResult {
        let mut lines = vec![format!("# rt-app {}: {} threads", self.file, tasks.len())];
        let mut threads = Vec::new();
        for &p in tasks {
            let t = &k.tasks[p];
            lines.push(format!(
                "{:<16} runtime {:>10.3} ms  switches {:>7}  wait_max {:>8.3} ms",
                t.comm,
                t.se.sum_exec_runtime as f64 / 1e6,
                t.stats.nr_switches,
                t.stats.wait_max as f64 / 1e6
            ));
            threads.push(json!({"comm": t.comm, "runtime_ns": t.se.sum_exec_runtime, "switches": t.stats.nr_switches, "wait_max_ns": t.stats.wait_max}));
        }
        let mut fields = Map::new();
        fields.insert("threads".into(), json!(threads));
        BenchResult { lines, fields }
    }
}

/// Named rt-app resources, created on first use.
#[derive(Default)]
struct Resources {
    futexes: BTreeMap<String, usize>,
    barriers: BTreeMap<String, usize>,
    barrier_users: BTreeMap<String, u32>,
    timers: BTreeMap<String, usize>,
    suspend: BTreeMap<Pid, usize>,
    /// Instances of each forked task handed out so far.
    forks: BTreeMap<String, usize>,
}

impl Resources {
    fn futex(&mut self, k: &mut Kernel, name: &str) -> usize {
        *self
            .futexes
            .entry(name.to_string())
            .or_insert_with(|| k.futex_new(0))
    }
}
