//! `--html PATH`: one self-contained HTML file (no network) with a zoomable
//! per-CPU timeline, wakeup-latency CDFs, util_avg and nr_running over time
//! per CPU and for the `--trace-pelt` tasks, and the counters table. The
//! data is collected by a tracer during the run and drawn by inline
//! JavaScript on canvases. `compare --html` puts two runs' data side by
//! side in another page that shares the same script (report.js).

use crate::kernel::task::Pid;
use crate::kernel::tracepoint::{TraceEvent, Tracer};
use crate::kernel::Kernel;
use crate::trace::Selection;
use crate::util::fs::AtomicFile;
use serde_json::{json, Value};
use std::io;
use std::sync::{Arc, Mutex};

/// At most this many timeline slices are kept (the rest of the run is
/// summarised, and the page says the timeline was cut).
const MAX_SLICES: usize = 400_000;
/// At most this many samples per counter series.
const MAX_SAMPLES: usize = 20_000;

/// (time, a value, another value) samples of a counter pair.
type Series = Vec<(u64, u64, u64)>;

/// Where a finished report goes: a page of its own, or its data to a
/// caller that builds another page (compare).
pub enum Sink {
    Page(AtomicFile),
    Data(Arc<Mutex<Option<Value>>>),
}

pub struct HtmlReport {
    out: Sink,
    sel: Selection,
    /// Per CPU: (task, since) running now.
    running: Vec<Option<(Pid, u64)>>,
    /// (cpu, start, end, task)
    slices: Vec<(u32, u64, u64, u32)>,
    cut_at: Option<u64>,
    /// When each task was last woken (for wakeup latency).
    woken_at: Vec<u64>,
    /// Wakeup → running latency samples (ns) per task.
    latency: Vec<Vec<u64>>,
    /// Per CPU: (time, util_avg, nr_running) samples.
    cpu_series: Vec<Series>,
    /// Per selected task: (time, util_avg, load_avg).
    task_series: Vec<(Pid, Series)>,
}

impl HtmlReport {
    pub fn new(out: Sink, sel: Selection, k: &Kernel) -> Self {
        HtmlReport {
            out,
            sel,
            running: vec![None; k.rqs.len()],
            slices: Vec::new(),
            cut_at: None,
            woken_at: Vec::new(),
            latency: Vec::new(),
            cpu_series: vec![Vec::new(); k.rqs.len()],
            task_series: Vec::new(),
        }
    }

    fn grow(&mut self, n: usize) {
        if self.woken_at.len() < n {
            self.woken_at.resize(n, u64::MAX);
            self.latency.resize(n, Vec::new());
        }
    }

    fn sample_cpu(&mut self, k: &Kernel, cpu: usize) {
        let rq = &k.rqs[cpu];
        let s = &mut self.cpu_series[cpu];
        let v = (k.now, rq.cfs.avg.util_avg, rq.nr_running as u64);
        if s.last().is_none_or(|l| (l.1, l.2) != (v.1, v.2)) {
            push_sample(s, v);
        }
    }

    fn sample_task(&mut self, k: &Kernel, p: Pid) {
        let a = &k.tasks[p].se.avg;
        let v = (k.now, a.util_avg, a.load_avg);
        match self.task_series.iter_mut().find(|(q, _)| *q == p) {
            Some((_, s)) => push_sample(s, v),
            None => self.task_series.push((p, vec![v])),
        }
    }

    fn close(&mut self, cpu: usize, now: u64) {
        if let Some((p, since)) = self.running[cpu].take() {
            if self.slices.len() < MAX_SLICES {
                self.slices.push((cpu as u32, since, now, p as u32));
            } else if self.cut_at.is_none() {
                self.cut_at = Some(now);
            }
        }
    }

    fn data(&self, k: &Kernel) -> Value {
        let tasks: Vec<Value> = k.tasks.iter().map(|t| json!([t.comm, t.pid])).collect();
        // Latency CDFs: all tasks, then by comm (the five busiest comms).
        let mut by_comm: std::collections::BTreeMap<&str, Vec<u64>> = Default::default();
        for (p, l) in self.latency.iter().enumerate() {
            by_comm.entry(&k.tasks[p].comm).or_default().extend(l);
        }
        let mut groups: Vec<(&str, Vec<u64>)> =
            by_comm.into_iter().filter(|g| !g.1.is_empty()).collect();
        groups.sort_by_key(|g| std::cmp::Reverse(g.1.len()));
        let mut all: Vec<u64> = groups.iter().flat_map(|g| g.1.iter().copied()).collect();
        all.sort_unstable();
        let mut cdfs = vec![json!({"name": "all tasks", "q": quantiles(&all)})];
        for (name, mut v) in groups.into_iter().take(5) {
            v.sort_unstable();
            cdfs.push(json!({"name": name, "q": quantiles(&v)}));
        }
        let busy: Vec<f64> = k
            .rqs
            .iter()
            .map(|rq| rq.stats.busy_ns as f64 / k.now.max(1) as f64)
            .collect();
        let st = &k.stats;
        let counters = vec![
            ("simulated time (s)", json!(k.now as f64 / 1e9)),
            ("context switches (tasks)", json!(k.task_switches())),
            ("rq switches", json!(st.rq_switches)),
            ("cpu migrations", json!(st.cpu_migrations)),
            ("wakeups", json!(st.wakeups)),
            ("forks", json!(st.forks)),
            ("IPIs sent", json!(st.ipis_sent)),
            (
                "IPIs avoided (polling idle)",
                json!(st.ipis_avoided_polling),
            ),
            ("rq lock wait (ns)", json!(st.rq_lock_wait_ns)),
            ("wake_affine moves", json!(st.ttwu_move_affine)),
            ("wakeups of a task still on CPU", json!(st.ttwu_on_cpu)),
            ("select_idle_sibling CPUs scanned", json!(st.sis_scanned)),
            ("newidle pulls", json!(st.newidle_pulls)),
            ("idle balance pulls", json!(st.idle_balance_pulls)),
        ];
        let counters: Vec<(String, Value)> = counters
            .into_iter()
            .map(|(n, v)| (n.to_string(), v))
            .chain(super::cgroup::counter_rows(k))
            .collect();
        json!({
            "title": format!("schedlab: {} CPUs of {}", k.rqs.len(), k.machine.name),
            "end": k.now,
            "ncpus": k.rqs.len(),
            "tasks": tasks,
            "slices": self.slices.iter().map(|s| [s.0 as u64, s.1, s.2, s.3 as u64]).collect::<Vec<_>>(),
            "cut_at": self.cut_at,
            "cdfs": cdfs,
            "cpu_series": self.cpu_series,
            "task_series": self.task_series.iter().map(|(p, s)| json!({"name": format!("{}-{}", k.tasks[*p].comm, k.tasks[*p].pid), "s": s})).collect::<Vec<_>>(),
            "busy": busy,
            "counters": counters.into_iter().map(|(n, v)| json!([n, v])).collect::<Vec<_>>(),
        })
    }
}

/// Keep a series bounded: past the cap, drop every other sample.
fn push_sample(s: &mut Series, v: (u64, u64, u64)) {
    if s.len() >= MAX_SAMPLES {
        let mut i = 0;
        s.retain(|_| {
            i += 1;
            i % 2 == 1
        });
    }
    s.push(v);
}

/// 101 points of the CDF (the 0th..100th percentiles) of sorted samples.
fn quantiles(v: &[u64]) -> Vec<u64> {
    if v.is_empty() {
        return Vec::new();
    }
    (0..=100).map(|i| v[((v.len() - 1) * i) / 100]).collect()
}

impl Tracer for HtmlReport {
    fn event(&mut self, k: &Kernel, ev: &TraceEvent) {
        self.grow(k.tasks.len());
        match *ev {
            TraceEvent::Switch {
                cpu, prev, next, ..
            } => {
                self.close(cpu, k.now);
                if let Some(n) = next {
                    self.running[cpu] = Some((n, k.now));
                    let w = std::mem::replace(&mut self.woken_at[n], u64::MAX);
                    if w != u64::MAX {
                        self.latency[n].push(k.now - w);
                    }
                }
                self.sample_cpu(k, cpu);
                for p in [prev, next].into_iter().flatten() {
                    if self.sel.contains(k, p) {
                        self.sample_task(k, p);
                    }
                }
            }
            // Latency counts from sched_waking, as perf sched latency and
            // the seeds' tools do; a new task from its sched_wakeup_new.
            TraceEvent::Waking { p, .. } => self.woken_at[p] = k.now,
            TraceEvent::WakeupNew { p, target, .. } => {
                self.woken_at[p] = k.now;
                self.sample_cpu(k, target);
            }
            TraceEvent::Wakeup { target, .. } => self.sample_cpu(k, target),
            _ => {}
        }
    }

    fn finish(mut self: Box<Self>, k: &Kernel) -> io::Result<()> {
        for cpu in 0..self.running.len() {
            self.close(cpu, k.now);
        }
        let data = self.data(k);
        match self.out {
            Sink::Page(mut out) => {
                out.write_all(run_page(&data).as_bytes())?;
                out.commit()
            }
            Sink::Data(slot) => {
                *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(data);
                Ok(())
            }
        }
    }
}

/// The page of one run's report.
pub fn run_page(data: &Value) -> String {
    fill(include_str!("report.html"), data)
}

/// The page of an A/B comparison: `{title, a, b, rows}` with each side's
/// run data as `run_page` takes it.
pub fn compare_page(data: &Value) -> String {
    fill(include_str!("compare.html"), data)
}

/// The template with the shared script and the data inlined.
fn fill(template: &str, data: &Value) -> String {
    // No `<` at all in the data, so nothing in it can close or confuse
    // the inline script; `\u003c` is the same string to JSON.
    let data = serde_json::to_string(data)
        .unwrap_or_default()
        .replace('<', "\\u003c");
    template
        .replacen("/*JS*/", include_str!("report.js"), 1)
        .replacen("/*DATA*/null", &data, 1)
}
