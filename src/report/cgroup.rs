//! Task groups and PELT overhead in the reports: the JSON `pelt` section
//! and `cgroups[]` list, and the summary's cgroup block (like cpu.stat).

use crate::kernel::fair::PeltCounters;
use crate::kernel::Kernel;
use serde_json::{json, Value};
use std::fmt::Write;

impl Kernel {
    /// PELT overhead counters summed over every cfs_rq of every CPU.
    pub fn pelt_counters(&self) -> PeltCounters {
        let mut t = PeltCounters::default();
        for rq in &self.rqs {
            for q in std::iter::once(&rq.cfs).chain(rq.gcfs.iter().skip(1)) {
                t.update_load_avg_calls += q.pelt_stats.update_load_avg_calls;
                t.tg_load_avg_updates += q.pelt_stats.tg_load_avg_updates;
                t.propagations += q.pelt_stats.propagations;
            }
        }
        t
    }

    /// CPU time of the tasks in group `tg` and below (cpu.stat usage).
    fn group_exec_ns(&self, tg: usize) -> u64 {
        let present: u64 = self
            .tasks
            .iter()
            .filter(|t| self.groups.is_descendant(t.tg, tg))
            .map(|t| t.se.sum_exec_runtime)
            .sum();
        (present as i64 + self.groups.tgs[tg].usage_moved) as u64
    }

    /// Σ over CPUs of the group's cfs_rq util_avg.
    fn group_util_avg(&self, tg: usize) -> u64 {
        self.rqs.iter().map(|rq| rq.gcfs[tg].avg.util_avg).sum()
    }
}

/// The JSON `pelt` section.
pub fn pelt_json(k: &Kernel) -> Value {
    let c = k.pelt_counters();
    json!({
        "update_load_avg_calls": c.update_load_avg_calls,
        "tg_load_avg_updates": c.tg_load_avg_updates,
        "propagations": c.propagations,
        "group_level_ops": k.stats.group_level_ops,
        "tg_load_avg_ns": k.stats.tg_load_avg_ns,
        "tg_load_avg_filter": k.cfg.features.enabled(crate::kernel::features::Feature::TgLoadAvgFilter),
    })
}

/// The JSON `cgroups` list: one entry per declared group (and the
/// ancestors created for them), root excluded.
pub fn cgroups_json(k: &Kernel) -> Value {
    let list: Vec<Value> = (1..k.groups.count())
        .map(|g| {
            let tg = &k.groups.tgs[g];
            let b = &k.bandwidth[g];
            let mut v = json!({
                "path": tg.path,
                "weight": tg.weight,
                "sum_exec_ns": k.group_exec_ns(g),
                "load_avg": tg.load_avg,
                "util_avg": k.group_util_avg(g),
            });
            if let Some((q, p)) = tg.quota {
                v["max"] = json!(format!("{} {}", q / 1000, p / 1000));
                v["nr_periods"] = json!(b.nr_periods);
                v["nr_throttled"] = json!(b.nr_throttled);
                v["throttled_ns"] = json!(b.throttled_time);
                v["nr_slack_distributions"] = json!(b.nr_slack_distributions);
            }
            v
        })
        .collect();
    Value::Array(list)
}

/// Rows for the HTML report's counters table: per group its CPU time,
/// tg->load_avg and util, its throttling, then the PELT overhead counters.
pub fn counter_rows(k: &Kernel) -> Vec<(String, Value)> {
    if k.groups.count() == 1 {
        return Vec::new();
    }
    let mut rows = Vec::new();
    for g in 1..k.groups.count() {
        let tg = &k.groups.tgs[g];
        let name = format!("cgroup {} (weight {})", tg.path, tg.weight);
        let ms = k.group_exec_ns(g) as f64 / 1e6;
        rows.push((
            format!("{name} CPU time (ms)"),
            json!((ms * 1000.0).round() / 1000.0),
        ));
        let util = k.group_util_avg(g);
        rows.push((
            format!("{name} load_avg / util_avg"),
            json!(format!("{} / {util}", tg.load_avg)),
        ));
        if tg.quota.is_some() {
            let b = &k.bandwidth[g];
            let v = format!(
                "{}/{} periods, {:.3} ms",
                b.nr_throttled,
                b.nr_periods,
                b.throttled_time as f64 / 1e6
            );
            rows.push((format!("{name} throttled"), json!(v)));
        }
    }
    let c = k.pelt_counters();
    rows.push((
        "update_load_avg calls".into(),
        json!(c.update_load_avg_calls),
    ));
    rows.push(("tg->load_avg updates".into(), json!(c.tg_load_avg_updates)));
    rows.push(("PELT propagations".into(), json!(c.propagations)));
    rows
}

/// The summary's block: one line per group, then the PELT counters.
pub fn summary_block(s: &mut String, k: &Kernel) {
    if k.groups.count() == 1 {
        return;
    }
    let _ = writeln!(
        s,
        "\n cgroups (cpu.weight, CPU time, tg->load_avg, Σ util_avg):"
    );
    for g in 1..k.groups.count() {
        let tg = &k.groups.tgs[g];
        let mut line = format!(
            "  {:<20} weight {:>5}  {:>10.3} ms  load {:>6}  util {:>6}",
            tg.path,
            tg.weight,
            k.group_exec_ns(g) as f64 / 1e6,
            tg.load_avg,
            k.group_util_avg(g)
        );
        if let Some((q, p)) = tg.quota {
            let b = &k.bandwidth[g];
            let _ = write!(
                line,
                "  max {} {}: throttled {}/{} periods, {:.3} ms",
                q / 1000,
                p / 1000,
                b.nr_throttled,
                b.nr_periods,
                b.throttled_time as f64 / 1e6
            );
        }
        let _ = writeln!(s, "{line}");
    }
    let c = k.pelt_counters();
    let _ = writeln!(
        s,
        "  PELT: {} update_load_avg calls, {} tg->load_avg updates, {} propagations, {} group-level ops",
        super::thousands(c.update_load_avg_calls),
        super::thousands(c.tg_load_avg_updates),
        super::thousands(c.propagations),
        super::thousands(k.stats.group_level_ops)
    );
}
