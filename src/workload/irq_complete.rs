//! `irq-complete`: N tasks wait on one completion and a device interrupt
//! completes it every `period`: complete() (one waiter per interrupt) or,
//! with `all=true`, complete_all(), the case seed 003's v2 defers.
//!
//! With `all=true` the waiters meet twice at a barrier after each round:
//! between the two meetings the first waiter calls reinit_completion, so
//! nobody waits on a completion that is still done (the suspend/resume
//! pattern of drivers/base/power/main.c: reinit, then wait, then an
//! interrupt-side complete_all).

use super::params::{parse_duration, Params};
use super::program::{Dist, Op};
use super::{BenchResult, Builder, TaskSpec, MAX_TASKS};
use crate::kernel::completion::WaitHow;
use crate::kernel::futex::Barrier;
use crate::kernel::irq::{quantile, Device, IrqAction};
use crate::kernel::task::Pid;
use crate::kernel::Kernel;
use serde_json::{json, Map};
use std::rc::Rc;

#[derive(Clone, Debug)]
pub struct IrqComplete {
    pub waiters: u64,
    pub period: u64,
    pub all: bool,
    /// The CPU the interrupt is routed to.
    pub cpu: usize,
    /// What a waiter does with each event before waiting again.
    pub work: Dist,
}

impl IrqComplete {
    pub fn parse(p: &Params) -> Result<Self, String> {
        let period = parse_duration(p.values.get("period").map_or("1ms", |s| s))
            .map_err(|e| format!("workload `irq-complete`: parameter `period`: {e}"))?;
        if period < 1_000 {
            return Err(
                "workload `irq-complete`: parameter `period` must be at least 1us".to_string(),
            );
        }
        Ok(IrqComplete {
            waiters: p.count_max("waiters", 1, MAX_TASKS)?,
            period,
            all: p.flag("all", false)?,
            cpu: p.int("cpu", 0, 0, 65_535)? as usize,
            work: p.dist("work", "2us")?,
        })
    }

    pub fn check_machine(&self, ncpus: usize) -> Result<(), String> {
        if self.cpu >= ncpus {
            return Err(format!(
                "workload `irq-complete`: parameter `cpu` = {} but the machine has {ncpus} CPUs",
                self.cpu
            ));
        }
        Ok(())
    }

    pub fn build(&self, k: &mut Kernel, b: &mut Builder) {
        let c = k.completion_new("irq-complete");
        let action = if self.all {
            IrqAction::CompleteAll(c)
        } else {
            IrqAction::Complete(c)
        };
        k.irq_device_new(Device {
            name: "irq-complete".into(),
            cpu: self.cpu,
            period: Some(self.period),
            latency: 0,
            action,
            fired: 0,
        });
        let wait = Op::WaitForCompletion {
            c,
            how: WaitHow::PLAIN,
        };
        let mut ops = vec![Op::Loop { count: 0 }, wait, Op::Run(self.work)];
        let mut leader = ops.clone();
        if self.all {
            let mut barrier = || {
                k.barriers.push(Barrier {
                    count: self.waiters as u32,
                    ..Barrier::default()
                });
                Op::Barrier {
                    barrier: k.barriers.len() - 1,
                }
            };
            let (b1, b2) = (barrier(), barrier());
            ops.extend([b1, b2]);
            leader.extend([b1, Op::ReinitCompletion { c }, b2]);
        }
        ops.push(Op::EndLoop);
        leader.push(Op::EndLoop);
        let (ops, leader): (Rc<[Op]>, Rc<[Op]>) = (Rc::from(ops), Rc::from(leader));
        for i in 0..self.waiters {
            let p = b.task(
                k,
                TaskSpec {
                    comm: "irq-waiter",
                    group_of: None,
                    nice: 0,
                    allowed: None,
                    ops: if i == 0 { leader.clone() } else { ops.clone() },
                },
            );
            b.launch(k, p);
        }
    }

    pub fn report(&self, k: &Kernel, _tasks: &[Pid]) -> BenchResult {
        let mut off = k.irqs.cpus[self.cpu].off.clone();
        off.sort_unstable();
        let (p50, p99, max) = (
            quantile(&off, 0.5),
            quantile(&off, 0.99),
            off.last().copied().unwrap_or(0),
        );
        let fired = k.irqs.handled();
        let how = if self.all { "complete_all" } else { "complete" };
        let st = &k.completions.stats;
        let lines = vec![
            format!(
                "irq-complete: {} waiter(s), {fired} interrupt(s) on cpu{} every {} µs calling {how} ({})",
                self.waiters,
                self.cpu,
                self.period / 1000,
                k.completions.variant.name()
            ),
            format!(
                "  all completions: waits completed {}, slept {}, deferred wakeups {}, waiters over the limit {}",
                st.completed,
                st.waits_slept,
                st.deferred_wakeups,
                st.waiters_over_limit
            ),
            format!(
                "  interrupts off on cpu{}: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs ({} sections)",
                self.cpu,
                p50 as f64 / 1e3,
                p99 as f64 / 1e3,
                max as f64 / 1e3,
                off.len()
            ),
        ];
        let mut fields = Map::new();
        fields.insert("waiters".into(), json!(self.waiters));
        fields.insert("interrupts".into(), json!(fired));
        fields.insert(
            "irqs_off_ns".into(),
            json!({"p50": p50, "p99": p99, "max": max}),
        );
        BenchResult { lines, fields }
    }
}
