//! `stress-ng --cpu N --cpu-load P [--cpu-ops K] [--timeout T]`: N workers
//! that each compute in slices of `cpu-load-slice` method calls (default 64,
//! stress-ng's −64) and, when P < 100, sleep after each slice for
//! (100−P)/P of the CPU time it took, corrected by the time spent waiting
//! for a CPU and by the previous oversleep (stress_cpu's self-correcting
//! delay). One method call is one bogo op and takes `op-time` of CPU time
//! on an uncontended CPU (SMT siblings slow it down). `cpu-ops` is the
//! total bogo ops, split over the workers as stress-ng splits it.

use super::params::{parse_duration, Params};
use super::program::{Dist, Mark, Op, ProgState};
use super::{marked_span, BenchResult, Builder, TaskSpec, MAX_TASKS};
use crate::kernel::task::Pid;
use crate::kernel::Kernel;
use serde_json::{json, Map};
use std::rc::Rc;

#[derive(Clone, Debug)]
pub struct StressNg {
    /// Workers; 0 or −1 in the spec mean one per CPU.
    pub cpu: Option<u64>,
    pub cpu_load: u32,
    pub cpu_ops: Option<u64>,
    /// Method calls per busy slice (stress-ng's negative --cpu-load-slice).
    pub slice_ops: u64,
    /// CPU time of one method call (one bogo op), ns: fixed, or a range
    /// drawn once per slice (methods, caches and clocks vary).
    pub op_time: Dist,
    pub timeout: Option<u64>,
    /// `taskset -c LIST`: the CPUs every worker may run on.
    pub cpus: Option<Vec<usize>>,
}

/// The default time per bogo op: see README (stress-ng's `cpu` stressor,
/// method `all`, one instance). Overridden per machine with op-time=.
const DEFAULT_OP_TIME: &str = "1ms";

/// Parse a CPU list such as `0-3,8,10-11`.
fn parse_cpulist(s: &str) -> Result<Vec<usize>, String> {
    let mut v = Vec::new();
    for part in s.split(['+', ' ']).filter(|p| !p.is_empty()) {
        let bad = || format!("`{part}` is not a CPU number or range (e.g. 0-3+8)");
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (
                a.trim().parse().map_err(|_| bad())?,
                b.trim().parse().map_err(|_| bad())?,
            ),
            None => {
                let n: usize = part.trim().parse().map_err(|_| bad())?;
                (n, n)
            }
        };
        if lo > hi {
            return Err(bad());
        }
        // No machine has more (checked before the list is built).
        let max = crate::machine::topology::MAX_CPUS;
        if hi >= max {
            return Err(format!(
                "CPU {hi} is above the limit of {max} CPUs (0-{})",
                max - 1
            ));
        }
        v.extend(lo..=hi);
    }
    v.sort_unstable();
    v.dedup();
    if v.is_empty() {
        return Err("empty CPU list".into());
    }
    Ok(v)
}

impl StressNg {
    pub fn parse(p: &Params) -> Result<Self, String> {
        let cpu = p.int("cpu", -1, -1, MAX_TASKS as i64)?;
        let op_time = p.dist("op-time", DEFAULT_OP_TIME)?;
        let timeout = match p.values.get("timeout") {
            Some(t) => Some(
                parse_duration(t)
                    .map_err(|e| format!("workload `stress-ng`: parameter `timeout`: {e}"))?,
            ),
            None => None,
        };
        let cpus = match p.values.get("cpus") {
            Some(l) => Some(
                parse_cpulist(l)
                    .map_err(|e| format!("workload `stress-ng`: parameter `cpus`: {e}"))?,
            ),
            None => None,
        };
        let w = StressNg {
            cpu: (cpu > 0).then_some(cpu as u64),
            cpu_load: p.int("cpu-load", 100, 0, 100)? as u32,
            cpu_ops: match p.values.contains_key("cpu-ops") {
                true => Some(p.count("cpu-ops", 1)?),
                false => None,
            },
            slice_ops: p.count_max("cpu-load-slice", 64, 1_000_000)?,
            op_time,
            timeout,
            cpus,
        };
        if w.timeout.is_none() && w.cpu_load == 0 {
            return Err(
                "workload `stress-ng`: parameter `cpu-load` = `0` only sleeps: give timeout="
                    .into(),
            );
        }
        Ok(w)
    }

    /// Affinity naming CPUs the machine does not have is bad input.
    pub fn check_machine(&self, ncpus: usize) -> Result<(), String> {
        match self.cpus.as_ref().and_then(|v| v.iter().find(|&&c| c >= ncpus)) {
            Some(c) => Err(format!(
                "workload `stress-ng`: parameter `cpus` names CPU {c}, but the machine has CPUs 0-{}",
                ncpus - 1
            )),
            None => Ok(()),
        }
    }

    /// Whether the workers stop by themselves.
    pub fn is_finite(&self) -> bool {
        self.cpu_ops.is_some() || self.timeout.is_some()
    }

    fn workers(&self, ncpus: usize) -> u64 {
        self.cpu.unwrap_or(ncpus as u64)
    }

    /// A slice's CPU time: slice_ops method calls.
    fn slice_time(&self) -> Dist {
        let k = self.slice_ops;
        match self.op_time {
            Dist::Fixed(t) => Dist::Fixed(k * t),
            Dist::Uniform(lo, hi) => Dist::Uniform(k * lo, k * hi),
            Dist::Exp(m) => Dist::Exp(k * m),
            Dist::LogNormal {
                median,
                sigma_milli,
            } => Dist::LogNormal {
                median: k * median,
                sigma_milli,
            },
        }
    }

    /// Worker i's share of cpu-ops (the first ones take the remainder).
    fn share(&self, i: u64, n: u64) -> Option<u64> {
        self.cpu_ops
            .map(|total| total / n + u64::from(i < total % n))
    }

    /// One worker's program: whole slices until its share of cpu-ops is
    /// reached (stress-ng checks the count between slices, so the last
    /// slice runs to the end and is followed by its sleep) or the timeout
    /// passes.
    fn program(&self, ops: Option<u64>) -> Vec<Op> {
        let count = ops.map_or(0, |n| n.div_ceil(self.slice_ops));
        let mut v = vec![Op::Mark(Mark::Start), Op::Loop { count }];
        let brk = v.len();
        if let Some(ns) = self.timeout {
            v.push(Op::BreakAfter { ns, to: 0 });
        }
        if self.cpu_load == 0 {
            v.push(Op::Sleep(Dist::Fixed(self.timeout.unwrap_or(0))));
        } else {
            v.extend([
                Op::SliceStart,
                Op::Run(self.slice_time()),
                Op::SliceEnd {
                    load: self.cpu_load,
                },
            ]);
        }
        v.push(Op::EndLoop);
        let after = v.len();
        if let Some(Op::BreakAfter { to, .. }) = v.get_mut(brk) {
            *to = after;
        }
        v.extend([Op::Mark(Mark::Stop), Op::Exit]);
        v
    }

    /// The stress-ng parent forks the workers one after another (each fork
    /// costs its time on the parent's CPU), then waits for them.
    pub fn build(&self, k: &mut Kernel, b: &mut Builder) {
        let n = self.workers(k.machine.nr_cpus());
        let parent = b.task(
            k,
            TaskSpec {
                comm: "stress-ng",
                group_of: None,
                nice: 0,
                allowed: self.cpus.clone(),
                ops: Rc::from(vec![]),
            },
        );
        let mut ops = Vec::new();
        for i in 0..n {
            let prog: Rc<[Op]> = Rc::from(self.program(self.share(i, n)));
            let child = b.task(
                k,
                TaskSpec {
                    comm: "stress-ng-cpu",
                    group_of: None,
                    nice: 0,
                    allowed: self.cpus.clone(),
                    ops: prog,
                },
            );
            ops.push(Op::Fork { child });
        }
        ops.extend([Op::Loop { count: n }, Op::WaitChild, Op::EndLoop, Op::Exit]);
        k.tasks[parent].prog = ProgState::new(Rc::from(ops));
        b.launch(k, parent);
    }

    /// stress-ng's metrics lines (--metrics-brief) and the run time.
    pub fn report(&self, k: &Kernel, all: &[Pid]) -> BenchResult {
        let pid = all.first().map_or(0, |&p| k.tasks[p].pid);
        let tasks = &all[1.min(all.len())..];
        let n = tasks.len();
        // Completed slices × calls per slice (like stress-ng's counter, it
        // may pass cpu-ops by up to a slice per worker).
        let bogo: u64 = tasks
            .iter()
            .map(|&p| k.tasks[p].prog.duty.slices * self.slice_ops)
            .sum();
        let real = marked_span(k, tasks).unwrap_or(k.now);
        let usr: u64 = tasks.iter().map(|&p| k.tasks[p].se.sum_exec_runtime).sum();
        let secs = real as f64 / 1e9;
        let usr_s = usr as f64 / 1e9;
        let per_real = if secs > 0.0 { bogo as f64 / secs } else { 0.0 };
        let per_cpu = if usr_s > 0.0 {
            bogo as f64 / usr_s
        } else {
            0.0
        };
        let cpu_used = if secs > 0.0 {
            usr_s * 100.0 / secs / n.max(1) as f64
        } else {
            0.0
        };
        let lines = vec![
            format!("stress-ng: info:  [{pid}] dispatching hogs: {n} cpu"),
            format!(
                "stress-ng: metrc: [{pid}] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s CPU used per"
            ),
            format!(
                "stress-ng: metrc: [{pid}]                           (secs)    (secs)    (secs)   (real time) (usr+sys time) instance (%)"
            ),
            format!(
                "stress-ng: metrc: [{pid}] cpu            {bogo:>8} {secs:>9.2} {usr_s:>9.2} {:>9.2} {per_real:>12.2} {per_cpu:>14.2} {cpu_used:>12.2}",
                0.0
            ),
            format!("stress-ng: info:  [{pid}] successful run completed in {secs:.2} secs"),
        ];
        let mut fields = Map::new();
        fields.insert("workers".into(), json!(n));
        fields.insert("cpu_load".into(), json!(self.cpu_load));
        fields.insert("bogo_ops".into(), json!(bogo));
        fields.insert("time_taken_s".into(), json!(secs));
        fields.insert("usr_time_s".into(), json!(usr_s));
        fields.insert("bogo_ops_per_s".into(), json!(per_real));
        fields.insert("cpu_used_per_instance_pct".into(), json!(cpu_used));
        BenchResult { lines, fields }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Through the kinds table, which checks the keys.
    fn parse(spec: &str) -> Result<StressNg, String> {
        match crate::workload::Workload::parse(&Params::parse_spec(spec).unwrap())? {
            crate::workload::Workload::StressNg(w) => Ok(w),
            w => panic!("{spec} parsed as {}", w.name()),
        }
    }

    #[test]
    fn spec_and_program() {
        let w = parse("stress-ng:cpu=4,cpu-load=50,cpu-ops=1000,op-time=1ms").unwrap();
        assert_eq!((w.cpu, w.cpu_load, w.cpu_ops), (Some(4), 50, Some(1000)));
        // 250 ops per worker: 4 whole slices of 64.
        let prog = w.program(Some(250));
        assert_eq!(prog[1], Op::Loop { count: 4 });
        assert_eq!(prog[3], Op::Run(Dist::Fixed(64 * 1_000_000)));
        assert_eq!((w.share(0, 3), w.share(2, 3)), (Some(334), Some(333)));
        assert!(parse("stress-ng:cpu=2,cpu-load=101").is_err());
        assert!(parse("stress-ng:cpu=2,cpu-load=0").is_err());
        assert!(parse("stress-ng:cpu=2,bogus=1").is_err());
        let w = parse("stress-ng:cpu=2,cpus=0-3+9").unwrap();
        assert_eq!(w.cpus, Some(vec![0, 1, 2, 3, 9]));
        assert!(w.check_machine(8).unwrap_err().contains("CPU 9"));
        assert!(parse("stress-ng:cpus=3-1").is_err());
        let e = parse("stress-ng:cpus=3-8446744073709551615").unwrap_err();
        assert!(e.contains("limit of 4096 CPUs"), "{e}");
    }

    #[test]
    fn timeout_breaks_out_of_the_loop() {
        let w = parse("stress-ng:cpu=1,cpu-load=100,timeout=1s").unwrap();
        let prog = w.program(None);
        let Op::BreakAfter { to, .. } = prog[2] else {
            panic!("{prog:?}")
        };
        assert_eq!(prog[to], Op::Mark(Mark::Stop));
        assert_eq!(prog[to - 1], Op::EndLoop);
    }
}
