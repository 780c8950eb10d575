//! hackbench (rt-tests) and `perf bench sched messaging`: per group, `fds`
//! receivers each reading from its own pipe or socket pair, and `fds`
//! senders each writing `loops` messages to every receiver. All children
//! report ready, the parent starts the clock and releases them with one
//! byte on a pipe they all poll, then reaps them all and stops the clock.

use super::params::Params;
use super::program::{Mark, Op, ProgState};
use super::sched_attr::SchedAttr;
use super::{marked_span, BenchResult, Builder, TaskSpec, MAX_TASKS};
use crate::kernel::pipe::{Pipe, PIPE_BUF};
use crate::kernel::task::Pid;
use crate::kernel::unix_sock::UnixSock;
use crate::kernel::Kernel;
use serde_json::{json, Map};
use std::rc::Rc;

#[derive(Clone, Debug)]
pub struct Hackbench {
    pub groups: u64,
    pub fds: u64,
    pub loops: u64,
    pub datasize: u32,
    pub pipe: bool,
    pub threads: bool,
    pub perf_output: bool,
    /// chrt/nice of the whole run (children inherit it at fork).
    pub attr: SchedAttr,
    pub nice: i32,
}

impl Hackbench {
    pub fn parse(p: &Params) -> Result<Self, String> {
        let datasize = p.count("datasize", 100)?;
        if datasize > PIPE_BUF as u64 {
            return Err(format!(
                "workload `hackbench`: parameter `datasize` = `{datasize}` is above PIPE_BUF ({PIPE_BUF}), which is not modelled"
            ));
        }
        let groups = p.count_max("groups", 10, MAX_TASKS)?;
        let fds = p.count_max("fds", 20, MAX_TASKS)?;
        if groups * fds * 2 > MAX_TASKS {
            return Err(format!(
                "workload `hackbench`: parameters `groups` × `fds` × 2 = {} tasks is above the limit of {MAX_TASKS}",
                groups * fds * 2
            ));
        }
        let loops = p.count("loops", 100)?;
        // Each receiver counts fds × loops messages.
        if fds.checked_mul(loops).is_none() {
            return Err(format!(
                "workload `hackbench`: parameter `loops` = `{loops}` is above {} (`fds` × `loops` messages per receiver must fit in 64 bits)",
                u64::MAX / fds.max(1)
            ));
        }
        Ok(Hackbench {
            groups,
            fds,
            loops,
            datasize: datasize as u32,
            pipe: p.choice("ipc", &["socket", "pipe"])? == "pipe",
            threads: p.choice("mode", &["process", "thread"])? == "thread",
            perf_output: p.choice("output", &["hackbench", "perf"])? == "perf",
            attr: SchedAttr::parse(p, "normal", 50)?,
            nice: p.int("nice", 0, -20, 19)? as i32,
        })
    }

    fn children(&self) -> u64 {
        self.groups * 2 * self.fds
    }

    fn send(&self, ch: usize) -> Op {
        let bytes = self.datasize;
        if self.pipe {
            Op::PipeWrite { pipe: ch, bytes }
        } else {
            Op::SockSend { sock: ch, bytes }
        }
    }

    fn recv(&self, ch: usize) -> Op {
        let bytes = self.datasize;
        if self.pipe {
            Op::PipeRead { pipe: ch, bytes }
        } else {
            Op::SockRecv { sock: ch, bytes }
        }
    }

    pub fn build(&self, k: &mut Kernel, b: &mut Builder) {
        let ready = k.pipes.len();
        let wake = ready + 1;
        k.pipes.push(Pipe::default());
        k.pipes.push(Pipe::default());
        let parent = b.task(
            k,
            TaskSpec {
                comm: "hackbench",
                group_of: None,
                nice: 0,
                allowed: None,
                ops: Rc::from(Vec::new()),
            },
        );
        let group_of = self.threads.then_some(parent);
        let mut ops = Vec::new();
        let mut reap = Vec::new();
        for _ in 0..self.groups {
            let channels: Vec<usize> = (0..self.fds)
                .map(|_| {
                    if self.pipe {
                        k.pipes.push(Pipe::default());
                        k.pipes.len() - 1
                    } else {
                        k.socks.push(UnixSock::default());
                        k.socks.len() - 1
                    }
                })
                .collect();
            let start = [
                Op::PipeWrite {
                    pipe: ready,
                    bytes: 1,
                },
                Op::PollIn { pipe: wake },
            ];
            for &ch in &channels {
                let mut r = start.to_vec();
                r.extend([
                    Op::Loop {
                        count: self.fds * self.loops,
                    },
                    self.recv(ch),
                    Op::EndLoop,
                    Op::Exit,
                ]);
                let child = b.task(k, self.spec("hackbench-recv", group_of, r));
                ops.push(Op::Fork { child });
                reap.push(child);
            }
            let mut s = start.to_vec();
            s.push(Op::Loop { count: self.loops });
            s.extend(channels.iter().map(|&ch| self.send(ch)));
            s.extend([Op::EndLoop, Op::Exit]);
            let body: Rc<[Op]> = Rc::from(s);
            for _ in 0..self.fds {
                let child = b.task(k, self.spec_rc("hackbench-send", group_of, body.clone()));
                ops.push(Op::Fork { child });
                reap.push(child);
            }
        }
        ops.extend([
            Op::PipeRead {
                pipe: ready,
                bytes: self.children() as u32,
            },
            Op::Mark(Mark::Start),
            Op::PipeWrite {
                pipe: wake,
                bytes: 1,
            },
        ]);
        // Process mode reaps with wait(); thread mode joins every thread.
        if self.threads {
            for child in reap {
                ops.push(b.joinable(k, child));
            }
        } else {
            ops.extend([
                Op::Loop {
                    count: self.children(),
                },
                Op::WaitChild,
                Op::EndLoop,
            ]);
        }
        ops.extend([Op::Mark(Mark::Stop), Op::Exit]);
        k.tasks[parent].prog = ProgState::new(Rc::from(ops));
        for &t in &b.tasks {
            self.attr.apply_with_nice(k, t, self.nice);
        }
        b.launch(k, parent);
    }

    fn spec(&self, comm: &'static str, group_of: Option<Pid>, ops: Vec<Op>) -> TaskSpec<'static> {
        self.spec_rc(comm, group_of, Rc::from(ops))
    }

    fn spec_rc(
        &self,
        comm: &'static str,
        group_of: Option<Pid>,
        ops: Rc<[Op]>,
    ) -> TaskSpec<'static> {
        TaskSpec {
            comm,
            group_of,
            nice: 0,
            allowed: None,
            ops,
        }
    }

    pub fn report(&self, k: &Kernel, tasks: &[Pid]) -> BenchResult {
        let ns = marked_span(k, tasks).unwrap_or(0);
        let mut fields = Map::new();
        fields.insert("finished".into(), json!(true));
        let secs = ns as f64 / 1e9;
        let mode = if self.threads { "thread" } else { "process" };
        let lines = if self.perf_output {
            let unit = if self.threads { "threads" } else { "processes" };
            vec![
                "# Running 'sched/messaging' benchmark:".to_string(),
                format!("# {} sender and receiver {unit} per group", self.fds),
                format!("# {} groups == {} {unit} run", self.groups, self.children()),
                String::new(),
                format!("     Total time: {secs:.3} [sec]"),
            ]
        } else {
            vec![
                format!(
                    "Running in {mode} mode with {} groups using {} file descriptors each (== {} tasks)",
                    self.groups,
                    2 * self.fds,
                    self.children()
                ),
                format!(
                    "Each sender will pass {} messages of {} bytes",
                    self.loops, self.datasize
                ),
                format!("Time: {secs:.3}"),
            ]
        };
        fields.insert("groups".into(), json!(self.groups));
        fields.insert("fds".into(), json!(self.fds));
        fields.insert("loops".into(), json!(self.loops));
        fields.insert(
            "ipc".into(),
            json!(if self.pipe { "pipe" } else { "socket" }),
        );
        fields.insert("mode".into(), json!(mode));
        fields.insert(
            "messages".into(),
            json!(self.groups * self.fds * self.fds * self.loops),
        );
        fields.insert("time_s".into(), json!(secs));
        BenchResult { lines, fields }
    }
}
