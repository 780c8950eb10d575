//! `perf bench sched pipe`: two tasks, two pipes, 4-byte messages.
//! `variant=current` (perf today): both tasks write then read, so two tokens
//! are in flight. `variant=pingpong` (older perf): one token bounces.

use super::params::Params;
use super::program::{Mark, Op};
use super::{marked_span, BenchResult, Builder, TaskSpec};
use crate::kernel::pipe::Pipe;
use crate::kernel::task::Pid;
use crate::kernel::Kernel;
use serde_json::{json, Map};
use std::rc::Rc;

#[derive(Clone, Debug)]
pub struct PipeBench {
    pub loops: u64,
    pub threads: bool,
    pub pingpong: bool,
    /// `taskset -c N`: every task of the benchmark pinned to this CPU.
    pub cpu: Option<usize>,
}

/// Bytes per message (an int).
const MSG: u32 = 4;

impl PipeBench {
    pub fn parse(p: &Params) -> Result<Self, String> {
        let cpu = match p.values.contains_key("cpu") {
            true => Some(p.int("cpu", 0, 0, i64::from(u32::MAX))? as usize),
            false => None,
        };
        Ok(PipeBench {
            cpu,
            loops: p.count("loops", 1_000_000)?,
            threads: p.flag("threads", false)?,
            pingpong: p.choice("variant", &["current", "pingpong"])? == "pingpong",
        })
    }

    fn worker(&self, nr: usize, pipe_in: usize, pipe_out: usize) -> Vec<Op> {
        let read = Op::PipeRead {
            pipe: pipe_in,
            bytes: MSG,
        };
        let write = Op::PipeWrite {
            pipe: pipe_out,
            bytes: MSG,
        };
        let body = if self.pingpong && nr == 0 {
            [read, write]
        } else {
            [write, read]
        };
        let mut ops = vec![Op::Loop { count: self.loops }];
        ops.extend(body);
        ops.push(Op::EndLoop);
        ops
    }

    /// The pinned CPU must exist on the machine.
    pub fn check_machine(&self, ncpus: usize) -> Result<(), String> {
        match self.cpu {
            Some(c) if c >= ncpus => Err(format!(
                "workload `pipe`: parameter `cpu` = `{c}` but the machine has {ncpus} CPUs"
            )),
            _ => Ok(()),
        }
    }

    pub fn build(&self, k: &mut Kernel, b: &mut Builder) {
        let p1 = k.pipes.len();
        let p2 = p1 + 1;
        k.pipes.push(Pipe::default());
        k.pipes.push(Pipe::default());
        let w0 = self.worker(0, p1, p2);
        let w1 = self.worker(1, p2, p1);
        // The main task is built last so the workers exist; it is the
        // first to run.
        let main = b.task(
            k,
            TaskSpec {
                comm: "sched-pipe",
                group_of: None,
                nice: 0,
                allowed: self.cpu.map(|c| vec![c]),
                ops: Rc::from(Vec::new()),
            },
        );
        let spec = |ops: Vec<Op>| TaskSpec {
            comm: "sched-pipe",
            group_of: if self.threads { Some(main) } else { None },
            nice: 0,
            allowed: self.cpu.map(|c| vec![c]),
            ops: Rc::from(ops),
        };
        let main_ops = if self.threads {
            let t0 = b.task(k, spec(w0));
            let t1 = b.task(k, spec(w1));
            vec![
                Op::Mark(Mark::Start),
                Op::Fork { child: t0 },
                Op::Fork { child: t1 },
                b.joinable(k, t0),
                b.joinable(k, t1),
                Op::Mark(Mark::Stop),
                Op::Exit,
            ]
        } else {
            let child = b.task(k, spec(w0));
            let mut ops = vec![Op::Mark(Mark::Start), Op::Fork { child }];
            ops.extend(w1);
            ops.extend([Op::WaitChild, Op::Mark(Mark::Stop), Op::Exit]);
            ops
        };
        k.tasks[main].prog = super::program::ProgState::new(Rc::from(main_ops));
        b.launch(k, main);
    }

    pub fn report(&self, k: &Kernel, tasks: &[Pid]) -> BenchResult {
        let ns = marked_span(k, tasks).unwrap_or(0);
        let mut fields = Map::new();
        fields.insert("finished".into(), json!(true));
        let secs = ns as f64 / 1e9;
        let usecs_per_op = ns as f64 / 1e3 / self.loops as f64;
        let ops_per_sec = if ns > 0 {
            (self.loops as f64 * 1e9 / ns as f64) as u64
        } else {
            0
        };
        let what = if self.threads { "threads" } else { "processes" };
        let lines = vec![
            "# Running 'sched/pipe' benchmark:".to_string(),
            format!(
                "# Executed {} pipe operations between two {what}",
                self.loops
            ),
            String::new(),
            format!("     Total time: {secs:.3} [sec]"),
            String::new(),
            format!("{usecs_per_op:>15.6} usecs/op"),
            format!("{ops_per_sec:>15} ops/sec"),
        ];
        fields.insert("loops".into(), json!(self.loops));
        fields.insert("time_s".into(), json!(secs));
        fields.insert("usecs_per_op".into(), json!(usecs_per_op));
        fields.insert("ops_per_sec".into(), json!(ops_per_sec));
        BenchResult { lines, fields }
    }
}
