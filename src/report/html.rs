//! `--html PATH`: one self-contained HTML file (no network) with a zoomable
//! per-CPU timeline, wakeup-latency CDFs, util_avg and nr_running over time
//! per CPU (heatmaps on big machines) and for the `--trace-pelt` tasks,
//! and the counters table. The data is collected by a tracer during the
//! run; the run layer adds the header (`meta::run_header`) and writes the
//! page. `compare --html` puts two runs' data side by side in another page
//! that shares the same script (report.js).

use super::bins::Bins;
use super::lanes::{End, Lanes};
use crate::kernel::task::Pid;
use crate::kernel::tracepoint::{TraceEvent, Tracer};
use crate::kernel::Kernel;
use crate::trace::Selection;
use serde_json::{json, Value};
use std::io;
use std::sync::{Arc, Mutex};

/// At most this many timeline slices (and as many wakeups) are kept; past
/// them the timeline shows the binned overview, and the page says so.
pub const MAX_SLICES: usize = 200_000;
/// At most this many samples per counter series.
const MAX_SAMPLES: usize = 20_000;
/// Above this many CPUs, per-CPU signals are heatmaps rather than lines
/// (and their per-CPU line samples are not kept).
pub const HEATMAP_ABOVE: usize = 16;

/// (time, a value, another value) samples of a counter pair.
type Series = Vec<(u64, u64, u64)>;

/// Where a finished report's data goes: the run layer writes the page of
/// `run --html` from it; compare puts two of them side by side.
pub type Slot = Arc<Mutex<Option<Value>>>;

pub struct HtmlReport {
    out: Slot,
    sel: Selection,
    /// The simulated time range the page shows (`--trace-window`).
    window: (u64, u64),
    /// Per CPU: (task, since, its pick record) running now.
    running: Vec<Option<(Pid, u64, Option<u32>)>>,
    slices: Vec<Slice>,
    /// (time, target cpu, task) of each sched_wakeup/_new, for the search.
    wakeups: Vec<(u64, u32, u32)>,
    cut_at: Option<u64>,
    /// When each task was last woken, and whether by sched_wakeup_new.
    woken_at: Vec<(u64, bool)>,
    /// Wakeup → running latency samples (ns) per task, and how many of
    /// them were a new task's first run.
    latency: Vec<(Vec<u64>, u64)>,
    /// Per CPU: (time, util_avg, nr_running) samples (small machines).
    cpu_series: Vec<Series>,
    /// Per CPU time-weighted util_avg, nr_running and busy time.
    bins: Bins,
    /// Per selected task: (time, util_avg, load_avg).
    task_series: Vec<(Pid, Series)>,
    lanes: Lanes,
}

/// A task's time on a CPU: from when to when, its pick record (in
/// `Lanes`) and how it ended.
pub struct Slice {
    pub cpu: u32,
    pub start: u64,
    pub end: u64,
    pub p: u32,
    pub pick: Option<u32>,
    pub how: End,
}

impl HtmlReport {
    pub fn new(out: Slot, sel: Selection, window: Option<(u64, u64)>, k: &Kernel) -> Self {
        let n = k.rqs.len();
        let window = window.unwrap_or((0, u64::MAX));
        HtmlReport {
            out,
            sel,
            window,
            running: vec![None; n],
            slices: Vec::new(),
            wakeups: Vec::new(),
            cut_at: None,
            woken_at: Vec::new(),
            latency: Vec::new(),
            cpu_series: vec![Vec::new(); if n > HEATMAP_ABOVE { 0 } else { n }],
            bins: Bins::new(n, window),
            task_series: Vec::new(),
            lanes: Lanes::new(window, n),
        }
    }

    fn grow(&mut self, n: usize) {
        if self.woken_at.len() < n {
            self.woken_at.resize(n, (u64::MAX, false));
            self.latency.resize(n, (Vec::new(), 0));
        }
    }

    fn in_window(&self, t: u64) -> bool {
        self.window.0 <= t && t < self.window.1
    }

    fn sample_cpu(&mut self, k: &Kernel, cpu: usize) {
        let rq = &k.rqs[cpu];
        let (util, nr) = (rq.cfs.avg.util_avg, rq.nr_running as u64);
        self.bins
            .set(cpu, k.now, util, nr, self.running[cpu].is_some());
        if !self.in_window(k.now) {
            return;
        }
        if let Some(s) = self.cpu_series.get_mut(cpu) {
            if s.last().is_none_or(|l| (l.1, l.2) != (util, nr)) {
                push_sample(s, (k.now, util, nr));
            }
        }
    }

    fn sample_task(&mut self, k: &Kernel, p: Pid) {
        if !self.in_window(k.now) {
            return;
        }
        let a = &k.tasks[p].se.avg;
        let v = (k.now, a.util_avg, a.load_avg);
        match self.task_series.iter_mut().find(|(q, _)| *q == p) {
            Some((_, s)) => push_sample(s, v),
            None => self.task_series.push((p, vec![v])),
        }
    }

    /// The slice running on `cpu` ends at `now`: keep its part inside the
    /// window, while there is room.
    fn close(&mut self, cpu: usize, now: u64, how: End) {
        let Some((p, since, pick)) = self.running[cpu].take() else {
            return;
        };
        let (a, b) = (since.max(self.window.0), now.min(self.window.1));
        if a >= b {
            return;
        }
        if self.slices.len() < MAX_SLICES && self.cut_at.is_none() {
            self.slices.push(Slice {
                cpu: cpu as u32,
                start: a,
                end: b,
                p: p as u32,
                pick,
                how,
            });
        } else if self.cut_at.is_none() {
            self.cut_at = Some(a);
            self.lanes.stop(a);
        }
    }

    /// sched_wakeup(_new) of `p` on `target`: for the search's markers.
    fn wakeup(&mut self, k: &Kernel, p: Pid, target: usize) {
        self.sample_cpu(k, target);
        if self.in_window(k.now) && self.cut_at.is_none() && self.wakeups.len() < MAX_SLICES {
            self.wakeups.push((k.now, target as u32, p as u32));
        }
    }

    fn data(&self, k: &Kernel) -> Value {
        let tasks: Vec<Value> = k.tasks.iter().map(|t| json!([t.comm, t.pid])).collect();
        let groups: Vec<Value> = super::cpu_groups(&k.machine)
            .into_iter()
            .map(
                |g| json!({"label": g.label, "short": g.short, "socket": g.socket, "cpus": g.cpus}),
            )
            .collect();
        let capacity: Vec<u32> = k.machine.cpus.iter().map(|c| c.capacity).collect();
        let end = k.now.min(self.window.1);
        json!({
            "title": format!("schedlab: {} CPUs of {}", k.rqs.len(), k.machine.name),
            "start": self.window.0.min(end),
            "window": self.window != (0, u64::MAX),
            "end": end,
            "ncpus": k.rqs.len(),
            "groups": groups,
            "capacity": capacity,
            "tasks": tasks,
            "slices": self.slices_flat(),
            "wakeups": wakeups_flat(&self.wakeups),
            "cut_at": self.cut_at,
            "cdfs": self.cdfs(k),
            "cpu_series": self.cpu_series,
            "bins": self.bins.to_json(end),
            "task_series": self.task_series.iter().map(|(p, s)| json!({"name": format!("{}-{}", k.tasks[*p].comm, k.tasks[*p].pid), "s": s})).collect::<Vec<_>>(),
            "pelt_warning": pelt_warning(k, &self.sel),
            "busy": k.rqs.iter().map(|rq| rq.stats.busy_ns as f64 / k.now.max(1) as f64).collect::<Vec<_>>(),
            "counters": counters(k),
            "lanes": self.lanes.to_json(k, &self.slices),
        })
    }

    /// The slices (by start time since `finish`) as one flat array of
    /// (cpu, start − the previous start, length, task): small numbers keep
    /// the page small.
    fn slices_flat(&self) -> Vec<u64> {
        let mut prev = 0;
        self.slices
            .iter()
            .flat_map(|s| {
                let d = s.start - std::mem::replace(&mut prev, s.start);
                [s.cpu as u64, d, s.end - s.start, s.p as u64]
            })
            .collect()
    }

    /// Latency CDFs: all tasks, then the five comms with most samples;
    /// each with its sample count and how many were a new task's first run.
    fn cdfs(&self, k: &Kernel) -> Vec<Value> {
        let mut by_comm: std::collections::BTreeMap<&str, (Vec<u64>, u64)> = Default::default();
        for (p, (l, new)) in self.latency.iter().enumerate() {
            let g = by_comm.entry(&k.tasks[p].comm).or_default();
            g.0.extend(l);
            g.1 += new;
        }
        let mut groups: Vec<(&str, (Vec<u64>, u64))> =
            by_comm.into_iter().filter(|g| !g.1 .0.is_empty()).collect();
        groups.sort_by_key(|g| std::cmp::Reverse(g.1 .0.len()));
        let mut all: Vec<u64> = groups.iter().flat_map(|g| g.1 .0.iter().copied()).collect();
        all.sort_unstable();
        let new: u64 = groups.iter().map(|g| g.1 .1).sum();
        let mut cdfs = vec![cdf("all tasks", &all, new)];
        for (name, (mut v, new)) in groups.into_iter().take(5) {
            v.sort_unstable();
            cdfs.push(cdf(name, &v, new));
        }
        cdfs
    }
}

/// The wakeups (in time order) as one flat array of (time − the previous
/// time, cpu, task).
fn wakeups_flat(w: &[(u64, u32, u32)]) -> Vec<u64> {
    let mut prev = 0;
    w.iter()
        .flat_map(|&(t, cpu, p)| [t - std::mem::replace(&mut prev, t), cpu as u64, p as u64])
        .collect()
}

fn cdf(name: &str, sorted: &[u64], new: u64) -> Value {
    json!({"name": name, "n": sorted.len(), "new": new, "q": quantiles(sorted)})
}

/// The machine-wide counters of the table, in order.
fn counters(k: &Kernel) -> Vec<Value> {
    let st = &k.stats;
    let rows = vec![
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
        ("pipe/socket cache lines moved (ns)", json!(st.ipc_line_ns)),
        ("pipe/socket lock wait (ns)", json!(st.ipc_lock_wait_ns)),
        ("wake_affine moves", json!(st.ttwu_move_affine)),
        ("wakeups of a task still on CPU", json!(st.ttwu_on_cpu)),
        ("select_idle_sibling CPUs scanned", json!(st.sis_scanned)),
        ("newidle pulls", json!(st.newidle_pulls)),
        ("idle balance pulls", json!(st.idle_balance_pulls)),
    ];
    rows.into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .chain(super::cgroup::counter_rows(k))
        .map(|(n, v)| json!([n, v]))
        .collect()
}

/// `--trace-pelt` patterns that select no task that ran (so their panel
/// would be empty), with the comms that did run, busiest first.
pub fn pelt_warning(k: &Kernel, sel: &Selection) -> Option<String> {
    let ran = |p: Pid| k.tasks[p].se.sum_exec_runtime > 0;
    let idle: Vec<&str> = sel
        .names
        .iter()
        .filter(|n| {
            let one = Selection {
                names: vec![n.to_string()],
            };
            !(0..k.tasks.len()).any(|p| one.contains(k, p) && ran(p))
        })
        .map(String::as_str)
        .collect();
    if idle.is_empty() {
        return None;
    }
    let mut by_comm: std::collections::BTreeMap<&str, u64> = Default::default();
    for t in &k.tasks {
        *by_comm.entry(&t.comm).or_default() += t.se.sum_exec_runtime;
    }
    let mut busy: Vec<(&str, u64)> = by_comm.into_iter().filter(|c| c.1 > 0).collect();
    busy.sort_by_key(|c| std::cmp::Reverse(c.1));
    let names: Vec<&str> = busy.iter().take(5).map(|c| c.0).collect();
    Some(format!(
        "--trace-pelt {}: no task of that comm or pid ever ran (it matches none, or only tasks \
         that never ran, e.g. sleeping parents); comms that ran: {}",
        idle.join(", "),
        names.join(", ")
    ))
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
                let (how, pick) = self.lanes.switch(k, ev);
                self.close(cpu, k.now, how);
                if let Some(n) = next {
                    self.running[cpu] = Some((n, k.now, pick));
                    let (w, new) = std::mem::replace(&mut self.woken_at[n], (u64::MAX, false));
                    if w != u64::MAX && self.in_window(w) {
                        self.latency[n].0.push(k.now - w);
                        self.latency[n].1 += u64::from(new);
                        self.lanes.latency(n, cpu, w, k.now);
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
            TraceEvent::Waking { p, .. } => self.woken_at[p] = (k.now, false),
            TraceEvent::WakeupNew { p, target, .. } => {
                self.woken_at[p] = (k.now, true);
                self.wakeup(k, p, target);
            }
            TraceEvent::Wakeup { p, target, .. } => self.wakeup(k, p, target),
            TraceEvent::Migrate { orig, dest, .. } => {
                self.sample_cpu(k, orig);
                self.sample_cpu(k, dest);
            }
            _ => {}
        }
        if !matches!(ev, TraceEvent::Switch { .. }) {
            self.lanes.event(k, ev);
        }
    }

    /// The lanes show the decision records behind each slice and wait.
    fn decisions(&self) -> bool {
        true
    }

    fn finish(mut self: Box<Self>, k: &Kernel) -> io::Result<()> {
        for cpu in 0..self.running.len() {
            self.close(cpu, k.now, End::Open);
        }
        self.slices.sort_unstable_by_key(|s| (s.start, s.cpu));
        self.bins.finish(k.now);
        let data = self.data(k);
        *self.out.lock().unwrap_or_else(|e| e.into_inner()) = Some(data);
        Ok(())
    }
}

/// The page of one run's report: the tracer's data with the run's header
/// (`meta::run_header`) under `header` and `meta::meta()` under `meta`.
pub fn run_page(data: &Value) -> String {
    let title = data["header"]["title"].as_str().unwrap_or("run");
    fill(
        include_str!("report.html"),
        &format!("schedlab: {title}"),
        data,
    )
}

/// The page of an A/B comparison: `{title, meta, a, b, rows}` with each
/// side's run data as `run_page` takes it.
pub fn compare_page(data: &Value) -> String {
    let title = data["title"].as_str().unwrap_or("schedlab compare");
    fill(include_str!("compare.html"), title, data)
}

/// The template with its title, the shared script and the data inlined.
fn fill(template: &str, title: &str, data: &Value) -> String {
    // No `<` at all in the data, so nothing in it can close or confuse
    // the inline script; `\u003c` is the same string to JSON.
    let data = serde_json::to_string(data)
        .unwrap_or_default()
        .replace('<', "\\u003c");
    let title = title
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    template
        .replacen("<title></title>", &format!("<title>{title}</title>"), 1)
        .replacen("/*JS*/", include_str!("report.js"), 1)
        .replacen("/*DATA*/null", &data, 1)
}
