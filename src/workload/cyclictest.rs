//! `cyclictest` (rt-tests): threads that sleep to absolute deadlines
//! (clock_nanosleep TIMER_ABSTIME) and measure how late they wake up.

use super::params::Params;
use super::program::Op;
use super::sched_attr::SchedAttr;
use super::{BenchResult, Builder, TaskSpec};
use crate::kernel::shm::CyclicThread;
use crate::kernel::task::Pid;
use crate::kernel::Kernel;
use crate::util::hist::Histogram;
use serde_json::{json, Map};
use std::rc::Rc;

#[derive(Clone, Debug)]
pub struct Cyclictest {
    pub threads: u64,
    /// -i and -d: thread i sleeps interval + i × distance.
    pub interval: u64,
    pub distance: u64,
    /// -l (0 = until the run ends) and -D.
    pub loops: u64,
    pub duration: u64,
    /// -h: histogram size in µs (0 = none).
    pub histogram: u64,
    pub attr: SchedAttr,
}

impl Cyclictest {
    pub fn parse(p: &Params) -> Result<Self, String> {
        let interval = p.duration("interval", "1000us")?;
        if interval < 1000 {
            return Err(p.bad("interval", "must be at least 1us"));
        }
        Ok(Cyclictest {
            threads: p.count_max("threads", 1, 1024)?,
            interval,
            distance: p.duration("distance", "500us")?,
            loops: p.int("loops", 0, 0, i64::MAX)? as u64,
            duration: p.duration("duration", "1s")?.max(1),
            histogram: p.int("histogram", 0, 0, 10_000)? as u64,
            attr: SchedAttr::parse(p, "fifo", 80)?,
        })
    }

    pub fn build(&self, k: &mut Kernel, b: &mut Builder) {
        for i in 0..self.threads as usize {
            let slot = k.shm.cyclic.len();
            k.shm.cyclic.push(CyclicThread {
                interval: self.interval + i as u64 * self.distance,
                buckets: vec![0; self.histogram as usize],
                ..CyclicThread::default()
            });
            let ops: Rc<[Op]> = Rc::from(vec![
                Op::Loop { count: self.loops },
                Op::CyclicSleep { thread: slot },
                Op::CyclicWoke { thread: slot },
                Op::EndLoop,
                Op::Exit,
            ]);
            let p = b.task(
                k,
                TaskSpec {
                    comm: "cyclictest",
                    group_of: b.tasks.first().copied(),
                    nice: 0,
                    allowed: None,
                    ops,
                },
            );
            self.attr.apply(k, p);
            b.launch(k, p);
        }
    }

    fn stats<'a>(&self, k: &'a Kernel, tasks: &[Pid]) -> Vec<(Pid, &'a CyclicThread)> {
        tasks
            .iter()
            .filter_map(|&p| match k.tasks[p].prog.ops.get(1) {
                Some(Op::CyclicSleep { thread }) => Some((p, &k.shm.cyclic[*thread])),
                _ => None,
            })
            .collect()
    }

    pub fn report(&self, k: &Kernel, tasks: &[Pid]) -> BenchResult {
        let threads = self.stats(k, tasks);
        let mut lines = Vec::new();
        let mut all = Histogram::default();
        let mut per = Vec::new();
        for (i, (p, t)) in threads.iter().enumerate() {
            let h = &t.lat;
            lines.push(format!(
                "T:{i:2} ({:5}) P:{:2} I:{} C:{:7} Min:{:7} Act:{:5} Avg:{:5} Max:{:8}",
                k.tasks[*p].pid,
                self.attr.prio,
                t.interval / 1000,
                h.count,
                h.min,
                t.act,
                h.mean().round() as u64,
                h.max
            ));
            all.merge(h);
            per.push(json!({"thread": i, "cycles": h.count, "min": h.min, "avg": h.mean(), "max": h.max}));
        }
        if self.histogram > 0 {
            lines.extend(self.histogram_lines(&threads));
        }
        let mut fields = Map::new();
        fields.insert("threads".into(), json!(self.threads));
        fields.insert("interval_us".into(), json!(self.interval / 1000));
        fields.insert(
            "latency_us".into(),
            json!({
                "cycles": all.count,
                "min": all.min,
                "avg": all.mean(),
                "p50": all.quantile(0.5),
                "p99": all.quantile(0.99),
                "max": all.max,
            }),
        );
        fields.insert("per_thread".into(), json!(per));
        BenchResult { lines, fields }
    }

    /// cyclictest -h's histogram block.
    fn histogram_lines(&self, threads: &[(Pid, &CyclicThread)]) -> Vec<String> {
        let mut lines = vec!["# Histogram".to_string()];
        for us in 0..self.histogram as usize {
            let cols: Vec<String> = threads
                .iter()
                .map(|(_, t)| format!("{:06}", t.buckets[us]))
                .collect();
            lines.push(format!("{us:06} {}", cols.join("\t")));
        }
        let row = |name: &str, f: &dyn Fn(&CyclicThread) -> String| {
            let cols: Vec<String> = threads.iter().map(|(_, t)| f(t)).collect();
            format!("# {name}: {}", cols.join(" "))
        };
        lines.push(row("Total", &|t| {
            format!("{:09}", t.lat.count - t.overflows)
        }));
        lines.push(row("Min Latencies", &|t| format!("{:05}", t.lat.min)));
        lines.push(row("Avg Latencies", &|t| {
            format!("{:05}", t.lat.mean().round() as u64)
        }));
        lines.push(row("Max Latencies", &|t| format!("{:05}", t.lat.max)));
        lines.push(row("Histogram Overflows", &|t| {
            format!("{:05}", t.overflows)
        }));
        lines
    }
}
