//! `periodic`: N tasks that each run, then sleep, forever. The plain duty
//! cycle that PELT is checked with against the real kernel.

use super::params::Params;
use super::program::{Dist, Op};
use super::{BenchResult, Builder, TaskSpec, MAX_TASKS};
use crate::kernel::futex::Barrier;
use crate::kernel::pelt;
use crate::kernel::task::Pid;
use crate::kernel::Kernel;
use serde_json::{json, Map};
use std::rc::Rc;

#[derive(Clone, Debug)]
pub struct Periodic {
    pub tasks: u64,
    pub run: Dist,
    pub sleep: Dist,
    pub nice: i32,
    pub pin: bool,
    /// All tasks meet at a pthread barrier before each activation.
    pub barrier: bool,
}

impl Periodic {
    pub fn parse(p: &Params) -> Result<Self, String> {
        p.check_keys(&["tasks", "run", "sleep", "nice", "pin", "barrier"])?;
        Ok(Periodic {
            tasks: p.count_max("tasks", 1, MAX_TASKS)?,
            run: p.dist("run", "8ms")?,
            sleep: p.dist("sleep", "8ms")?,
            nice: p.int("nice", 0, -20, 19)? as i32,
            pin: p.flag("pin", false)?,
            barrier: p.flag("barrier", false)?,
        })
    }

    pub fn build(&self, k: &mut Kernel, b: &mut Builder) {
        let mut ops = vec![Op::Loop { count: 0 }];
        if self.barrier {
            k.barriers.push(Barrier {
                count: self.tasks as u32,
                ..Barrier::default()
            });
            ops.push(Op::Barrier {
                barrier: k.barriers.len() - 1,
            });
        }
        ops.extend([Op::Run(self.run), Op::Sleep(self.sleep), Op::EndLoop]);
        let ops: Rc<[Op]> = Rc::from(ops);
        let ncpus = k.machine.nr_cpus();
        for i in 0..self.tasks as usize {
            let p = b.task(
                k,
                TaskSpec {
                    comm: "periodic",
                    group_of: None,
                    nice: self.nice,
                    allowed: self.pin.then(|| vec![i % ncpus]),
                    ops: ops.clone(),
                },
            );
            b.launch(k, p);
        }
    }

    pub fn report(&self, k: &Kernel, tasks: &[Pid]) -> BenchResult {
        let utils: Vec<u64> = tasks.iter().map(|&p| k.tasks[p].se.avg.util_avg).collect();
        let mean = utils.iter().sum::<u64>() as f64 / utils.len().max(1) as f64;
        let mut fields = Map::new();
        fields.insert("tasks".into(), json!(self.tasks));
        fields.insert("mean_util_avg".into(), json!(mean));
        let mut lines = vec![format!(
            "periodic: {} task(s), mean util_avg {mean:.1} at the end",
            self.tasks
        )];
        if let (Dist::Fixed(run), Dist::Fixed(sleep)) = (self.run, self.sleep) {
            let (hi, lo) = pelt::periodic_util_bounds(run, sleep);
            lines.push(format!(
                "closed-form PELT range for this duty cycle: {lo:.0} (after sleep) .. {hi:.0} (after run)"
            ));
            fields.insert("closed_form_util_range".into(), json!([lo, hi]));
        }
        BenchResult { lines, fields }
    }
}
