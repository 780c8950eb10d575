//! The `--json` results file. Everything but `sim.wall_ns` and `meta`
//! (the build, command line and date) is a pure function of the scenario
//! and seed.

use super::RunView;
use crate::kernel::pelt;
use crate::util::hist::Histogram;
use serde_json::{json, Map, Value};

pub fn to_json(out: &RunView) -> Value {
    let k = out.kernel;
    let st = &k.stats;
    let pr = &st.preempt;
    let cpus: Vec<Value> = k
        .rqs
        .iter()
        .enumerate()
        .map(|(i, rq)| {
            json!({
                "cpu": i,
                "busy_ns": rq.stats.busy_ns,
                "idle_ns": rq.stats.idle_ns,
                "nr_switches": rq.stats.nr_switches,
                "sched_count": rq.stats.sched_count,
                "sched_goidle": rq.stats.sched_goidle,
                "ttwu_count": rq.stats.ttwu_count,
                "ttwu_local": rq.stats.ttwu_local,
                "ipis_received": rq.stats.ipis_received,
                "util_avg": rq.cfs.avg.util_avg,
                "load_avg": rq.cfs.avg.load_avg,
                "rt_util_avg": rq.pelt.avg_rt.util_avg,
                "dl_util_avg": rq.pelt.avg_dl.util_avg,
                "irq_util_avg": rq.pelt.avg_irq.util_avg,
                "cpu_capacity": k.capacity_of(i),
            })
        })
        .collect();
    let tasks: Vec<Value> = k
        .tasks
        .iter()
        .map(|t| {
            let a = &t.se.avg;
            json!({
                "pid": t.pid,
                "tgid": t.tgid,
                "comm": t.comm,
                "name": t.full_name(),
                "workload": t.workload,
                "sum_exec_ns": t.se.sum_exec_runtime,
                "wait_ns": t.stats.wait_sum,
                "wait_max_ns": t.stats.wait_max,
                "nr_switches": t.stats.nr_switches,
                "nr_voluntary_switches": t.stats.nvcsw,
                "nr_involuntary_switches": t.stats.nivcsw,
                "nr_migrations": t.stats.nr_migrations,
                "nr_wakeups": t.stats.nr_wakeups,
                "nr_wakeups_sync": t.stats.nr_wakeups_sync,
                "nr_wakeups_local": t.stats.nr_wakeups_local,
                "nr_wakeups_remote": t.stats.nr_wakeups_remote,
                "wakeup_latency_us": latency_summary_us(&t.stats.wakeup_latency),
                "oncpu_ns": t.stats.oncpu_at(k.now),
                "load_avg": a.load_avg,
                "runnable_avg": a.runnable_avg,
                "util_avg": a.util_avg,
                "util_est": pelt::task_util_est(a),
            })
        })
        .collect();
    let mut bench = Map::new();
    for (i, (w, pids)) in out.workloads.iter().enumerate() {
        let mut fields = Map::new();
        fields.insert("name".into(), json!(w.name()));
        fields.extend(w.report(k, pids).fields);
        if i == 0 {
            bench.extend(fields.clone());
        }
        let mut key = w.name().to_string();
        let mut n = 2;
        while bench.contains_key(&key) && i > 0 {
            key = format!("{}#{n}", w.name());
            n += 1;
        }
        bench.insert(key, Value::Object(fields));
    }
    let totals = totals_json(out);
    let completion = super::completion::to_json(k);
    json!({
        "meta": super::meta::meta(),
        "completion": completion,
        "sim": {
            "simulated_ns": k.now,
            "wall_ns": out.wall_ns,
            "events": k.events.popped,
            "seed": out.seed,
            "noise": serde_json::to_value(&k.noise.cfg).unwrap_or(Value::Null),
        },
        "machine": {
            "name": k.machine.name,
            "cpus": k.machine.nr_cpus(),
            "costs_from": k.machine.costs_from,
        },
        "totals": totals,
        "resched_latency_us": latency_us(&pr.resched_latency),
        "balance": k.balance_json(),
        "pelt": super::cgroup::pelt_json(k),
        "cgroups": super::cgroup::cgroups_json(k),
        "cpus": cpus,
        "tasks": tasks,
        "benchmark": bench,
        "scenario": serde_json::to_value(&out.scenario).unwrap_or(Value::Null),
    })
}

/// A histogram of ns as µs: count, p50, p99, max, mean, and its
/// non-empty buckets as [low ns, high ns, count].
pub fn latency_us(h: &Histogram) -> Value {
    let mut v = latency_summary_us(h);
    v["histogram_ns"] = json!(h
        .buckets()
        .iter()
        .map(|b| [b.0, b.1, b.2])
        .collect::<Vec<_>>());
    v
}

/// count, p50, p99, max and mean in µs, without the buckets (per task).
pub fn latency_summary_us(h: &Histogram) -> Value {
    let us = |ns: u64| ns as f64 / 1e3;
    json!({
        "count": h.count,
        "p50": us(h.quantile(0.50)),
        "p99": us(h.quantile(0.99)),
        "max": us(h.max),
        "mean": h.mean() / 1e3,
    })
}

/// The `totals` object: machine-wide counters (split out of `to_json`,
/// whose single `json!` would pass the macro's recursion limit).
fn totals_json(out: &RunView) -> Value {
    let k = out.kernel;
    let (st, pr) = (&k.stats, &k.stats.preempt);
    let (nvcsw, nivcsw) = k
        .tasks
        .iter()
        .fold((0, 0), |(v, i), t| (v + t.stats.nvcsw, i + t.stats.nivcsw));
    json!({
        "context_switches": k.task_switches(),
        "rq_switches": st.rq_switches,
        "voluntary_switches": nvcsw,
        "involuntary_switches": nivcsw,
        "cpu_migrations": st.cpu_migrations,
        "wakeups": st.wakeups,
        "ttwu_local": st.ttwu_local,
        "ttwu_remote": st.ttwu_remote,
        "ttwu_wakelist": st.ttwu_wakelist,
        "forks": st.forks,
        "ipis_sent": st.ipis_sent,
        "ipis_avoided_polling": st.ipis_avoided_polling,
        "rq_lock_wait_ns": st.rq_lock_wait_ns,
        "ipc_line_ns": st.ipc_line_ns,
        "ipc_lock_wait_ns": st.ipc_lock_wait_ns,
        "ttwu_move_affine": st.ttwu_move_affine,
        "ttwu_on_cpu": st.ttwu_on_cpu,
        "sis_cpus_scanned": st.sis_scanned,
        "newidle_pulls": st.newidle_pulls,
        "idle_balance_pulls": st.idle_balance_pulls,
        "noise_irqs": k.noise.irqs,
        "idle_ticks": st.idle_ticks,
        "nohz_tick_stopped": st.nohz_tick_stops,
        "idle_tick_balances": st.idle_tick_balances,
        "task_clock_ns": k.tasks.iter().map(|t| t.se.sum_exec_runtime).sum::<u64>(),
        "preempt_wakeup": pr.wakeup,
        "preempt_tick": pr.tick,
        "preempt_lazy_upgrade": pr.lazy_upgrade,
        "preempt_other": pr.other,
        "preempt_at_irq_return": pr.at_irq,
        "preempt_at_exit_to_user": pr.at_user,
        "preempt_at_cond_resched": pr.at_cond_resched,
        "preempt_at_kernel": pr.at_kernel,
        "resched_lazy_set": pr.lazy_set,
        "resched_lazy_upgraded": pr.lazy_upgraded,
        "rt_pushes": st.rt_pushes,
        "rt_pulls": st.rt_pulls,
        "rt_bandwidth_holds": st.rt_throttled,
        "cfs_throttled": st.cfs_throttled,
        "wakeup_latency_us": latency_us(&st.wakeup_latency),
    })
}
