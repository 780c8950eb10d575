//! The `policy=`, `prio=`, `slice=` and `dl-runtime=`/`dl-deadline=`/
//! `dl-period=` parameters a workload's tasks are started with (chrt /
//! sched_setattr before the benchmark runs).

use super::params::Params;
use crate::kernel::deadline::{DlBw, DlParams};
use crate::kernel::rt::Policy;
use crate::kernel::task::Pid;
use crate::kernel::Kernel;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedAttr {
    pub policy: Policy,
    /// rt_priority 1-99 for fifo and rr.
    pub prio: u32,
    /// sched_attr.sched_runtime of a fair task: its custom slice, ns (0:
    /// the base slice).
    pub slice: u64,
    /// A SCHED_DEADLINE task's runtime, deadline and period.
    pub dl: Option<DlParams>,
}

impl SchedAttr {
    /// Read `policy=fifo|rr|normal|batch|idle` and `prio=1..99`, and
    /// `deadline` for a kind whose table lists the `dl-runtime` key.
    pub fn parse(p: &Params, policy: &str, prio: i64) -> Result<SchedAttr, String> {
        let name = p.values.get("policy").map_or(policy, |s| s.as_str());
        let kind = super::kinds::kind(&p.kind);
        let dl_ok = kind.is_some_and(|k| k.keys().contains(&"dl-runtime"));
        let policy = Policy::parse(name)
            .filter(|&x| x != Policy::Deadline || dl_ok)
            .ok_or_else(|| {
                format!(
                    "workload `{}`: parameter `policy`: `{name}` is not one of fifo, rr, normal, batch, idle{}",
                    p.kind,
                    if dl_ok { ", deadline" } else { "" }
                )
            })?;
        let slice = p.duration("slice", "0")?;
        if policy == Policy::Deadline {
            return Self::parse_dl(p);
        }
        if !policy.is_rt() {
            if p.values.contains_key("prio") {
                return Err(format!(
                    "workload `{}`: parameter `prio` needs policy=fifo or rr (use nice= for the others)",
                    p.kind
                ));
            }
            return Ok(SchedAttr {
                policy,
                prio: 0,
                slice,
                dl: None,
            });
        }
        if slice != 0 {
            return Err(format!(
                "workload `{}`: parameter `slice` is a fair task's (policy=normal, batch or idle)",
                p.kind
            ));
        }
        let prio = p.int("prio", prio, 1, 99)? as u32;
        Ok(SchedAttr {
            policy,
            prio,
            slice,
            dl: None,
        })
    }

    /// `policy=deadline`: `dl-runtime=` [10ms], `dl-period=` [20ms] (half
    /// a CPU, periodic's default duty cycle) and `dl-deadline=` [the
    /// period], checked as sched_setattr does (__checkparam_dl).
    fn parse_dl(p: &Params) -> Result<SchedAttr, String> {
        for key in ["prio", "slice"] {
            if p.values.contains_key(key) {
                return Err(p.bad(key, "does not apply to policy=deadline"));
            }
        }
        let runtime = p.duration("dl-runtime", "10ms")?;
        let period = p.duration("dl-period", "20ms")?;
        let deadline = p.duration("dl-deadline", &format!("{period}ns"))?;
        let dl = DlParams {
            runtime,
            deadline,
            period,
        };
        dl.check().map_err(|e| {
            p.bad(
                "dl-runtime",
                &format!("is refused by sched_setattr (EINVAL): {e}"),
            )
        })?;
        Ok(SchedAttr {
            policy: Policy::Deadline,
            prio: 0,
            slice: 0,
            dl: Some(dl),
        })
    }

    /// sched_dl_overflow for `n` tasks with these parameters, in order:
    /// the first one refused, if any, says how far the bandwidth got.
    pub fn admit(&self, rd: &mut DlBw, n: u64) -> Result<(), String> {
        let Some(dl) = self.dl else { return Ok(()) };
        for i in 0..n {
            if !rd.admit(dl.bw()) {
                return Err(format!(
                    "sched_setattr(SCHED_DEADLINE) of task {} of {n} refused (EBUSY): {}",
                    i + 1,
                    rd.describe(dl.bw())
                ));
            }
        }
        Ok(())
    }

    pub fn apply(&self, k: &mut Kernel, p: Pid) {
        if let Some(dl) = self.dl {
            return k.set_scheduler_dl(p, dl);
        }
        k.set_scheduler(p, self.policy, self.prio);
        if self.slice != 0 {
            k.set_slice(p, self.slice);
        }
    }

    /// apply, after setting a fair task's nice value (set_user_nice).
    pub fn apply_with_nice(&self, k: &mut Kernel, p: Pid, nice: i32) {
        let t = &mut k.tasks[p];
        t.nice = nice;
        t.se.load = crate::kernel::prio::LoadWeight::from_nice(nice);
        self.apply(k, p);
    }
}
