//! Schedstats (kernel/sched/stats.c): the per-domain counters' wakeup
//! part, the /proc/schedstat v17 text, the should_we_balance cost
//! histogram printed like bcc's funclatency, and the `balance` JSON section.

use super::sched_domain::{cpumask_hex, LbCounters, SdStats};
use super::Kernel;
use serde_json::{json, Value};
use std::fmt::Write;

/// bcc's histogram width (stars_max).
const STARS: u64 = 40;

impl Kernel {
    /// ttwu_stat: a remote wakeup is counted on the waking CPU's lowest
    /// domain that spans the target.
    pub fn ttwu_wake_remote(&mut self, from: usize, cpu: usize) {
        let sd = &mut self.sd;
        let spans = &sd.spans;
        if let Some(d) = sd.cpu[from]
            .iter_mut()
            .find(|d| spans[d.span].binary_search(&cpu).is_ok())
        {
            d.stats.ttwu_wake_remote += 1;
        }
    }

    /// wake_affine moved a task to `this`: counted on this CPU's lowest
    /// domain spanning `prev` (the affine domain of select_task_rq_fair).
    pub fn ttwu_move_affine_stat(&mut self, this: usize, prev: usize) {
        let sd = &mut self.sd;
        let spans = &sd.spans;
        if let Some(d) = sd.cpu[this]
            .iter_mut()
            .find(|d| spans[d.span].binary_search(&prev).is_ok())
        {
            d.stats.ttwu_move_affine += 1;
        }
    }

    /// The /proc/schedstat text (version 17) at the end of the run.
    pub fn schedstat_text(&self) -> String {
        let n = self.machine.nr_cpus();
        let mut s = format!("version 17\ntimestamp {}\n", self.now / self.tick_ns);
        for (cpu, rq) in self.rqs.iter().enumerate() {
            let st = &rq.stats;
            // yld_count, legacy 0, sched_count, sched_goidle, ttwu_count,
            // ttwu_local, rq_cpu_time, run_delay, pcount
            let run_delay: u64 = 0;
            let _ = writeln!(
                s,
                "cpu{cpu} 0 0 {} {} {} {} {} {run_delay} {}",
                st.sched_count,
                st.sched_goidle,
                st.ttwu_count,
                st.ttwu_local,
                st.busy_ns,
                st.nr_switches
            );
            for (lvl, d) in self.sd.cpu[cpu].iter().enumerate() {
                let fields: Vec<String> = d.stats.fields().iter().map(u64::to_string).collect();
                let _ = writeln!(
                    s,
                    "domain{lvl} {} {} {}",
                    d.name,
                    cpumask_hex(self.sd.span(d), n),
                    fields.join(" ")
                );
            }
        }
        s
    }

    /// Domain counters summed over CPUs, per level (by level index).
    pub fn level_totals(&self) -> Vec<(&'static str, SdStats)> {
        let mut out: Vec<(&'static str, SdStats)> = Vec::new();
        for stack in &self.sd.cpu {
            for (lvl, d) in stack.iter().enumerate() {
                if out.len() <= lvl {
                    out.push((d.name, SdStats::default()));
                }
                let t = &mut out[lvl].1;
                for (a, b) in t.lb.iter_mut().zip(d.stats.lb.iter()) {
                    a.add(b);
                }
                t.alb_count += d.stats.alb_count;
                t.alb_failed += d.stats.alb_failed;
                t.alb_pushed += d.stats.alb_pushed;
                t.ttwu_wake_remote += d.stats.ttwu_wake_remote;
                t.ttwu_move_affine += d.stats.ttwu_move_affine;
            }
        }
        out
    }

    /// should_we_balance's per-call cost as bcc funclatency prints it.
    pub fn swb_histogram_text(&self) -> String {
        let sw = &self.lb.swb;
        let mut s = format!(
            "should_we_balance: {} calls, {} CPUs visited (cost model: {} ns per CPU)\n",
            sw.calls, sw.cpus_visited, self.machine.cost.sis_scan_per_cpu_ns
        );
        let max_idx = sw.hist.iter().rposition(|&v| v > 0).unwrap_or(0);
        let val_max = sw.hist.iter().copied().max().unwrap_or(0).max(1);
        if max_idx > 0 {
            let _ = writeln!(s, "     {:<19} : count     distribution", "nsecs");
        }
        for i in 1..=max_idx {
            let mut low = (1u64 << i) >> 1;
            let high = (1u64 << i) - 1;
            if low == high {
                low -= 1;
            }
            let v = sw.hist[i];
            let stars = (v * STARS / val_max) as usize;
            let _ = writeln!(
                s,
                "{low:>10} -> {high:<10} : {v:<8} |{:<40}|",
                "*".repeat(stars)
            );
        }
        let avg = sw.ns_total.checked_div(sw.calls).unwrap_or(0);
        let _ = writeln!(
            s,
            "\navg = {avg} nsecs, total: {} nsecs, count: {}",
            sw.ns_total, sw.calls
        );
        s
    }

    /// The `balance` section of --json.
    pub fn balance_json(&self) -> Value {
        let sw = &self.lb.swb;
        let levels: Vec<Value> = self
            .level_totals()
            .into_iter()
            .map(|(name, t)| {
                let mut sum = LbCounters::default();
                for c in &t.lb {
                    sum.add(c);
                }
                json!({
                    "level": name,
                    "lb_count": sum.lb_count,
                    "lb_balanced": sum.lb_balanced,
                    "lb_failed": sum.lb_failed,
                    "lb_imbalance_load": sum.lb_imbalance_load,
                    "lb_imbalance_util": sum.lb_imbalance_util,
                    "lb_imbalance_task": sum.lb_imbalance_task,
                    "lb_imbalance_misfit": sum.lb_imbalance_misfit,
                    "lb_gained": sum.lb_gained,
                    "lb_hot_gained": sum.lb_hot_gained,
                    "lb_nobusyq": sum.lb_nobusyq,
                    "lb_nobusyg": sum.lb_nobusyg,
                    "alb_count": t.alb_count,
                    "alb_failed": t.alb_failed,
                    "alb_pushed": t.alb_pushed,
                    "ttwu_wake_remote": t.ttwu_wake_remote,
                    "ttwu_move_affine": t.ttwu_move_affine,
                    "lb_count_by_idle_type": {
                        "busy": t.lb[0].lb_count,
                        "idle": t.lb[1].lb_count,
                        "newly_idle": t.lb[2].lb_count,
                    },
                })
            })
            .collect();
        json!({
            "should_we_balance": {
                "calls": sw.calls,
                "cpus_visited": sw.cpus_visited,
                "ns_total": sw.ns_total,
                "ns_avg": sw.ns_total.checked_div(sw.calls).unwrap_or(0),
                "hist_log2_ns": sw.hist[..=sw.hist.iter().rposition(|&v| v > 0).unwrap_or(0)].to_vec(),
            },
            "levels": levels,
            "nohz_kicks": self.lb.nohz_kicks,
            "active_balances": self.lb.active_balances,
            "wasted_cores": {
                "episodes": self.lb.wasted_episodes,
                "ns": self.lb.wasted_ns,
            },
        })
    }
}
