//! UnixBench "Pipe-based Context Switching" (context1.c): a parent and a
//! forked child pass an 8-byte counter back and forth through two pipes
//! until the alarm fires; the score is round trips per second. `copies=N`
//! runs N such pairs at once, like `Run -c N`, and sums their scores.
//! `stagger` starts copy i i×stagger after the first, as Run's
//! executeBenchmark forks its copies one after another; `pin` puts copy i's
//! parent on CPU i and its child on CPU i+1 (a forced cross-CPU ping-pong,
//! to set beside the placement the scheduler chooses).

use super::params::Params;
use super::program::{Dist, Op};
use super::{BenchResult, Builder, TaskSpec, MAX_TASKS};
use crate::kernel::pipe::Pipe;
use crate::kernel::task::Pid;
use crate::kernel::Kernel;
use serde_json::{json, Map};
use std::rc::Rc;

/// sizeof(unsigned long)
const MSG: u32 = 8;

#[derive(Clone, Debug)]
pub struct Context1 {
    pub copies: u64,
    /// The alarm: how long each copy runs (UnixBench: 10 s).
    pub duration: u64,
    /// Copy i's parent starts i × this after the first (0: all at once).
    pub stagger: u64,
    /// Parent i on CPU i, child i on CPU i+1 (mod the CPUs).
    pub pin: bool,
}

impl Context1 {
    pub fn parse(p: &Params) -> Result<Self, String> {
        let duration = match p.dist("duration", "10s")? {
            Dist::Fixed(d) if d > 0 => d,
            _ => {
                return Err(format!(
                    "workload `context1`: parameter `duration` = `{}` must be a positive duration",
                    p.values.get("duration").map_or("", String::as_str)
                ))
            }
        };
        Ok(Context1 {
            copies: p.count_max("copies", 1, MAX_TASKS / 2)?,
            duration,
            stagger: p.duration("stagger", "0")?,
            pin: p.flag("pin", false)?,
        })
    }

    pub fn build(&self, k: &mut Kernel, b: &mut Builder) {
        let ncpus = k.machine.nr_cpus() as u64;
        for i in 0..self.copies {
            let p1 = k.pipes.len();
            let p2 = p1 + 1;
            k.pipes.push(Pipe::default());
            k.pipes.push(Pipe::default());
            let read = |pipe| Op::PipeRead { pipe, bytes: MSG };
            let write = |pipe| Op::PipeWrite { pipe, bytes: MSG };
            let spec = |ops: Vec<Op>, cpu: u64| TaskSpec {
                comm: "context1",
                group_of: None,
                nice: 0,
                allowed: self.pin.then(|| vec![(cpu % ncpus) as usize]),
                ops: Rc::from(ops),
            };
            // Child (slave): read p1, write p2.
            let child_ops = vec![Op::Loop { count: 0 }, read(p1), write(p2), Op::EndLoop];
            let child = b.task(k, spec(child_ops, i + 1));
            // Parent (master): (its turn to start,) fork, then write p1,
            // read p2, iter++.
            let start = i * self.stagger;
            let wait = (start > 0).then_some(Op::Sleep(Dist::Fixed(start)));
            let parent_ops = wait
                .into_iter()
                .chain([
                    Op::Fork { child },
                    Op::Loop { count: 0 },
                    write(p1),
                    read(p2),
                    Op::Count,
                    Op::EndLoop,
                ])
                .collect();
            let parent = b.task(k, spec(parent_ops, i));
            b.launch(k, parent);
        }
    }

    /// Each copy prints `COUNT|iter|1|lps` at the alarm; the score is the
    /// sum over copies of iter / elapsed (the whole run: a staggered copy
    /// that started late counts its loops over it too).
    pub fn report(&self, k: &Kernel, tasks: &[Pid]) -> BenchResult {
        let secs = (k.now as f64 / 1e9).max(1e-9);
        let mut lines = Vec::new();
        let mut lps = 0.0;
        for &p in tasks {
            let t = &k.tasks[p];
            if t.prog.ops.iter().any(|op| matches!(op, Op::Fork { .. })) {
                lines.push(format!("COUNT|{}|1|lps", t.prog.count));
                lps += t.prog.count as f64 / secs;
            }
        }
        lines.push(format!(
            "Pipe-based Context Switching {lps:>20.1} lps   ({secs:.1} s, 1 samples)"
        ));
        let mut fields = Map::new();
        fields.insert("copies".into(), json!(self.copies));
        fields.insert("lps".into(), json!(lps));
        BenchResult { lines, fields }
    }
}
