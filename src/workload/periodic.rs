//! `periodic`: N tasks that each run, then sleep, forever. The plain duty
//! cycle that PELT is checked with against the real kernel.

use super::params::Params;
use super::program::{Dist, Op};
use super::sched_attr::SchedAttr;
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
    /// The run segment is kernel-mode work (a long syscall) instead of
    /// user-mode computation.
    pub kernel: bool,
    /// ns between cond_resched() calls in a kernel segment (0 = none).
    pub cond_resched: u64,
    /// The kernel segment runs with preemption disabled.
    pub atomic: bool,
    pub attr: SchedAttr,
}

impl Periodic {
    pub fn parse(p: &Params) -> Result<Self, String> {
        let w = Periodic {
            tasks: p.count_max("tasks", 1, MAX_TASKS)?,
            run: p.dist("run", "8ms")?,
            sleep: p.dist("sleep", "8ms")?,
            nice: p.int("nice", 0, -20, 19)? as i32,
            pin: p.flag("pin", false)?,
            barrier: p.flag("barrier", false)?,
            kernel: p.choice("mode", &["user", "kernel"])? == "kernel",
            cond_resched: p.duration("cond_resched", "0")?,
            atomic: p.flag("atomic", false)?,
            attr: SchedAttr::parse(p, "normal", 50)?,
        };
        w.check_kernel_mode()?;
        Ok(w)
    }

    /// cond_resched and atomic only make sense in a kernel segment, and a
    /// cond_resched interval must fit in it.
    fn check_kernel_mode(&self) -> Result<(), String> {
        let needs_kernel =
            |key: &str| format!("workload `periodic`: parameter `{key}` needs `mode=kernel`");
        if !self.kernel && self.cond_resched > 0 {
            return Err(needs_kernel("cond_resched"));
        }
        if !self.kernel && self.atomic {
            return Err(needs_kernel("atomic"));
        }
        if self.atomic && self.cond_resched > 0 {
            return Err("workload `periodic`: parameter `cond_resched`: no cond_resched() in a preempt-disabled (`atomic`) segment".into());
        }
        let longest = self.run.longest();
        if self.cond_resched > longest {
            return Err(format!(
                "workload `periodic`: parameter `cond_resched`: {} ns is longer than the run segment ({longest} ns)",
                self.cond_resched
            ));
        }
        Ok(())
    }

    /// The run segment's op.
    fn run_op(&self) -> Op {
        if self.kernel {
            Op::KernelRun {
                dist: self.run,
                cond_resched: self.cond_resched,
                atomic: self.atomic,
            }
        } else {
            Op::Run(self.run)
        }
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
        ops.extend([self.run_op(), Op::Sleep(self.sleep), Op::EndLoop]);
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
            self.attr.apply(k, p);
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
