//! `kernbench:jobs=N,files=M`: a `make -j N` kernel build. make starts one
//! job per object file, at most N at once: it spawns `sh -c`, the shell
//! execs and runs the compiler (cc1) and then the assembler (as) as
//! children, waiting for each. Every process creation is a vfork-style
//! spawn by default (GNU make ≥ 4.3 and glibc's posix_spawn use
//! CLONE_VFORK), so each job waits on completions three times.
//!
//! CPU times are estimates: a defconfig x86-64 kernel (~2,900 objects)
//! takes roughly 1,000 CPU-seconds of compilation on one ~3 GHz server
//! core (public timed kernel-compilation results), ≈ 0.33 s per object,
//! with single files from tens of ms to several seconds: cc1 is drawn
//! log-normal with median 200 ms and σ = 1.0 (mean 0.33 s), as log-normal
//! with median 10 ms and σ = 0.5, make's own bookkeeping per job
//! exponential with mean 200 µs, the shell's startup 300 µs.

use super::fork::{children, SpawnMode};
use super::params::Params;
use super::program::{Dist, Mark, Op};
use super::{marked_span, BenchResult, Builder, TaskSpec, MAX_TASKS};
use crate::kernel::task::Pid;
use crate::kernel::Kernel;
use serde_json::{json, Map};
use std::rc::Rc;

const CC1: Dist = Dist::LogNormal {
    median: 200_000_000,
    sigma_milli: 1000,
};
const AS: Dist = Dist::LogNormal {
    median: 10_000_000,
    sigma_milli: 500,
};
const MAKE_PER_JOB: Dist = Dist::Exp(200_000);
const SH_STARTUP: Dist = Dist::Fixed(300_000);

#[derive(Clone, Debug)]
pub struct Kernbench {
    pub jobs: u64,
    pub files: u64,
    pub spawn: SpawnMode,
}

/// `time make`'s three numbers, in ns.
pub struct Times {
    pub real: u64,
    pub user: u64,
    pub sys: u64,
}

impl Kernbench {
    pub fn parse(p: &Params) -> Result<Self, String> {
        let spawn = match p.choice("spawn", &["vfork", "fork"])? {
            "fork" => SpawnMode::Fork,
            _ => SpawnMode::Vfork,
        };
        Ok(Kernbench {
            jobs: p.count_max("jobs", 32, 100_000)?,
            files: p.count_max("files", 500, (MAX_TASKS - 1) / 3)?,
            spawn,
        })
    }

    /// One program, one task per process of a job: (sh, cc1, as).
    fn job(&self, k: &mut Kernel, b: &mut Builder) -> Pid {
        let tool = |d: Dist| -> Rc<[Op]> { Rc::from(vec![Op::Exec, Op::Run(d), Op::Exit]) };
        let cc1 = children(k, b, 1, "cc1", &tool(CC1))[0];
        let asm = children(k, b, 1, "as", &tool(AS))[0];
        let done = self.spawn.vfork_done(k);
        let mut ops = vec![Op::Exec, Op::Run(SH_STARTUP)];
        for child in [cc1, asm] {
            ops.extend(self.spawn.ops(child, done));
            ops.push(Op::WaitChild);
        }
        ops.push(Op::Exit);
        children(k, b, 1, "sh", &Rc::from(ops))[0]
    }

    pub fn build(&self, k: &mut Kernel, b: &mut Builder) {
        let make = b.task(
            k,
            TaskSpec {
                comm: "make",
                group_of: None,
                nice: 0,
                allowed: None,
                ops: Rc::from(vec![]),
            },
        );
        let done = self.spawn.vfork_done(k);
        let mut ops = vec![Op::Mark(Mark::Start)];
        for i in 0..self.files {
            if i >= self.jobs {
                ops.push(Op::WaitChild);
            }
            let sh = self.job(k, b);
            ops.push(Op::Run(MAKE_PER_JOB));
            ops.extend(self.spawn.ops(sh, done));
        }
        ops.extend((0..self.jobs.min(self.files)).map(|_| Op::WaitChild));
        ops.extend([Op::Mark(Mark::Stop), Op::Exit]);
        k.tasks[make].prog.ops = Rc::from(ops);
        b.launch(k, make);
    }

    /// real (make's span), user (the Run work of every process) and sys
    /// (everything else they ran: syscalls, fork/exec/exit, wakeups, and
    /// any SMT slowdown of their user work).
    pub fn times(k: &Kernel, tasks: &[Pid]) -> Times {
        let user: u64 = tasks.iter().map(|&p| k.tasks[p].prog.user_ns).sum();
        let ran: u64 = tasks.iter().map(|&p| k.tasks[p].se.sum_exec_runtime).sum();
        Times {
            real: marked_span(k, tasks).unwrap_or(0),
            user,
            sys: ran.saturating_sub(user),
        }
    }

    pub fn report(&self, k: &Kernel, tasks: &[Pid]) -> BenchResult {
        let t = Self::times(k, tasks);
        let fmt = |ns: u64| {
            let s = ns as f64 / 1e9;
            format!("{}m{:.3}s", (s / 60.0).floor(), s % 60.0)
        };
        let lines = vec![
            format!(
                "kernbench: make -j{} of {} files ({} spawns)",
                self.jobs,
                self.files,
                if self.spawn == SpawnMode::Vfork {
                    "vfork"
                } else {
                    "fork"
                }
            ),
            String::new(),
            format!("real\t{}", fmt(t.real)),
            format!("user\t{}", fmt(t.user)),
            format!("sys\t{}", fmt(t.sys)),
        ];
        let mut fields = Map::new();
        fields.insert("jobs".into(), json!(self.jobs));
        fields.insert("files".into(), json!(self.files));
        fields.insert("elapsed_s".into(), json!(t.real as f64 / 1e9));
        fields.insert("user_s".into(), json!(t.user as f64 / 1e9));
        fields.insert("system_s".into(), json!(t.sys as f64 / 1e9));
        BenchResult { lines, fields }
    }
}
