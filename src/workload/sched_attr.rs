//! The `policy=`, `prio=` and `slice=` parameters a workload's tasks are
//! started with (chrt / sched_setattr before the benchmark runs).

use super::params::Params;
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
}

impl SchedAttr {
    /// Read `policy=fifo|rr|normal|batch|idle` and `prio=1..99`.
    pub fn parse(p: &Params, policy: &str, prio: i64) -> Result<SchedAttr, String> {
        let name = p.values.get("policy").map_or(policy, |s| s.as_str());
        let policy = Policy::parse(name).ok_or_else(|| {
            format!(
                "workload `{}`: parameter `policy`: `{name}` is not one of fifo, rr, normal, batch, idle",
                p.kind
            )
        })?;
        let slice = p.duration("slice", "0")?;
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
        })
    }

    pub fn apply(&self, k: &mut Kernel, p: Pid) {
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
