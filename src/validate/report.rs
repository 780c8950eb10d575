//! The printed table and the `--json` file of `schedlab validate pelt`.

use super::quiet::Quiet;
use super::stats::{PhaseStats, Point, Range, RANGE_TOL_PCT, SAMPLE_TOL_PCT, SHARE_MIN_PCT};
use serde_json::{json, Value};

/// Everything a run measured.
pub struct Outcome {
    /// `uname -r`-like kernel release, for the record.
    pub kernel: String,
    pub worker_cpu: usize,
    pub sampler_cpu: usize,
    pub phases: Vec<PhaseStats>,
    /// (run, preempted, stolen, sleep) ns, as recorded by the task.
    pub totals: [u64; 4],
    /// CPU time while sampled: (kernel's sum_exec_runtime, task's own), ns.
    pub on_cpu_ns: (u64, u64),
    /// PELT time the kernel lost that the task did not see as a stall, ns.
    pub unseen_steal_ns: i64,
    /// What the rest of the host did meanwhile.
    pub quiet: Quiet,
    /// Why the run cannot be judged (empty: it can).
    pub disturbed: Vec<String>,
    /// All compared samples, t relative to the start.
    pub points: Vec<Point>,
}

impl Outcome {
    /// Every phase passes.
    pub fn pass(&self) -> bool {
        !self.phases.is_empty() && self.phases.iter().all(PhaseStats::pass)
    }
}

fn range_text(r: &Range) -> String {
    format!("{:>4} {:>4} {:>6.1}", r.min, r.max, r.mean)
}

/// The table, one row per phase, then the totals and the verdict.
pub fn text(o: &Outcome) -> String {
    let mut s = format!(
        "schedlab validate pelt: kernel {}, task pinned on CPU {}, sampler on CPU {}\n\
         criteria: steady-state min/max within {RANGE_TOL_PCT}% of 1024, \
         >= {SHARE_MIN_PCT}% of samples within {SAMPLE_TOL_PCT}% of 1024\n\n",
        o.kernel, o.worker_cpu, o.sampler_cpu
    );
    s += &format!(
        "{:<11} {:>7} {:>9} {:>8}  {:<16}  {:<16} {:>9}  result\n",
        "phase",
        "samples",
        "within",
        "max err",
        "real min max mean",
        "sim min max mean",
        "range err"
    );
    for p in &o.phases {
        let (real, sim) = match &p.steady {
            Some((r, m)) => (range_text(r), range_text(m)),
            None => ("-".into(), "-".into()),
        };
        let range = p.range_err_pct().map_or("-".into(), |e| format!("{e:.2}%"));
        s += &format!(
            "{:<11} {:>7} {:>8.1}% {:>7.2}%  {:<17} {:<16} {:>9}  {}\n",
            p.name,
            p.samples,
            p.within_pct(),
            p.max_err_pct,
            real,
            sim,
            range,
            if p.pass() { "ok" } else { "FAIL" }
        );
    }
    let ms = |ns: u64| ns as f64 / 1e6;
    let [run, pre, stolen, sleep] = o.totals;
    s += &format!(
        "\ntask recorded: ran {:.1} ms, preempted {:.1} ms, stolen (steal) {:.1} ms, slept {:.1} ms\n\
         kernel PELT clock: {:.1} ms behind CLOCK_MONOTONIC (steal reported by the host)\n\
         on the CPU while sampled: {:.1} ms by se.sum_exec_runtime, {:.1} ms recorded\n",
        ms(run),
        ms(pre),
        ms(stolen),
        ms(sleep),
        o.unseen_steal_ns as f64 / 1e6,
        ms(o.on_cpu_ns.0),
        ms(o.on_cpu_ns.1),
    );
    s += &quiet_text(&o.quiet);
    if !o.disturbed.is_empty() {
        s += "CANNOT JUDGE: the measurement was disturbed:\n";
        s += &o
            .disturbed
            .iter()
            .map(|r| format!("  {r}\n"))
            .collect::<String>();
    } else {
        s += if o.pass() { "PASS\n" } else { "FAIL\n" };
    }
    s
}

/// The host around the task: its waits for its CPU and others' use of it.
fn quiet_text(q: &Quiet) -> String {
    let ms =
        |ns: Option<u64>| ns.map_or("unknown".into(), |ns| format!("{:.1} ms", ns as f64 / 1e6));
    format!(
        "the task's CPU meanwhile: the task waited for it {} (schedstat run_delay), \
         other tasks used {} (/proc/stat)\n",
        ms(q.run_delay_ns),
        ms(q.others_ns)
    )
}

fn range_json(r: &Range) -> Value {
    json!({ "min": r.min, "max": r.max, "mean": r.mean })
}

/// The `--json` document: criteria, per-phase statistics and every sample
/// as `[t_us, real, sim]`.
pub fn to_json(o: &Outcome) -> Value {
    let phases: Vec<Value> = o
        .phases
        .iter()
        .map(|p| {
            json!({
                "name": p.name,
                "samples": p.samples,
                "within_pct": p.within_pct(),
                "max_err_pct": p.max_err_pct,
                "steady": p.steady.map(|(r, m)| json!({
                    "real": range_json(&r),
                    "sim": range_json(&m),
                    "range_err_pct": p.range_err_pct(),
                })),
                "pass": p.pass(),
            })
        })
        .collect();
    let t0 = o.points.first().map_or(0, |p| p.t);
    let [run, pre, stolen, sleep] = o.totals;
    json!({
        "kernel": o.kernel,
        "worker_cpu": o.worker_cpu,
        "sampler_cpu": o.sampler_cpu,
        "criteria": {
            "range_tol_pct": RANGE_TOL_PCT,
            "sample_tol_pct": SAMPLE_TOL_PCT,
            "share_min_pct": SHARE_MIN_PCT,
        },
        "phases": phases,
        "task_ns": { "run": run, "preempted": pre, "stolen": stolen, "sleep": sleep },
        "unseen_steal_ns": o.unseen_steal_ns,
        "on_cpu_ns": { "kernel": o.on_cpu_ns.0, "task": o.on_cpu_ns.1 },
        "run_delay_ns": o.quiet.run_delay_ns,
        "others_on_cpu_ns": o.quiet.others_ns,
        "disturbed": o.disturbed,
        "judged": o.disturbed.is_empty(),
        "pass": o.pass(),
        "samples": o.points.iter().map(|p| json!([(p.t - t0) / 1000, p.real, p.sim])).collect::<Vec<_>>(),
    })
}
