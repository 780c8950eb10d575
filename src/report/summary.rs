//! The text summary: each benchmark's own output, then counters laid out
//! like `perf stat`.

use super::{thousands, RunView};
use std::fmt::Write;

pub fn summary(out: &RunView) -> String {
    let k = out.kernel;
    let mut s = String::new();
    for (w, tasks) in out.workloads {
        for line in w.report(k, tasks).lines {
            let _ = writeln!(s, "{line}");
        }
        let _ = writeln!(s);
    }
    if super::completion::active(k) {
        for line in super::completion::swait_stat(k)
            .into_iter()
            .chain([String::new()])
            .chain(super::completion::irqs_off(k))
        {
            let _ = writeln!(s, "{line}");
        }
        let _ = writeln!(s);
    }
    let secs = k.now as f64 / 1e9;
    let task_clock: u64 = k.tasks.iter().map(|t| t.se.sum_exec_runtime).sum();
    let (nvcsw, nivcsw) = k
        .tasks
        .iter()
        .fold((0, 0), |(v, i), t| (v + t.stats.nvcsw, i + t.stats.nivcsw));
    let rate = |n: u64| {
        let r = if secs > 0.0 { n as f64 / secs } else { 0.0 };
        if r >= 1e6 {
            format!("{:8.3} M/sec", r / 1e6)
        } else {
            format!("{:8.3} K/sec", r / 1e3)
        }
    };
    let names: Vec<&str> = out.workloads.iter().map(|(w, _)| w.name()).collect();
    let _ = writeln!(
        s,
        " Performance counter stats for 'schedlab: {} on {} (seed {})':\n",
        names.join(" + "),
        out.machine,
        out.seed
    );
    let cpus_used = if k.now > 0 {
        task_clock as f64 / k.now as f64
    } else {
        0.0
    };
    let _ = writeln!(
        s,
        "{:>18} msec task-clock                #  {cpus_used:8.3} CPUs utilized",
        format!("{:.2}", task_clock as f64 / 1e6)
    );
    let st = &k.stats;
    let rows = [
        ("context-switches", k.task_switches(), true),
        ("voluntary-switches", nvcsw, false),
        ("involuntary-switches", nivcsw, false),
        ("preempt-wakeup", st.preempt.wakeup, false),
        ("preempt-tick", st.preempt.tick, false),
        ("preempt-lazy-upgrade", st.preempt.lazy_upgrade, false),
        ("cpu-migrations", st.cpu_migrations, true),
        ("wakeups", st.wakeups, true),
        ("ttwu-remote", st.ttwu_remote, false),
        ("ttwu-wakelist", st.ttwu_wakelist, false),
        ("forks", st.forks, false),
        ("ipis", st.ipis_sent, true),
        ("ipis-avoided-polling", st.ipis_avoided_polling, false),
        ("rq-lock-wait-ns", st.rq_lock_wait_ns, false),
        ("ipc-line-ns", st.ipc_line_ns, false),
        ("ipc-lock-wait-ns", st.ipc_lock_wait_ns, false),
    ];
    for (name, v, show_rate) in rows {
        let r = if show_rate {
            format!("#  {}", rate(v))
        } else {
            String::new()
        };
        let _ = writeln!(s, "{:>18}      {name:<22}  {r}", thousands(v));
    }
    let _ = writeln!(
        s,
        "{:>18}      need-resched → switch   #  {} ({})",
        "",
        resched_latency(&st.preempt.resched_latency),
        k.cfg.preempt.name()
    );
    let _ = writeln!(s, "\n{secs:>18.9} seconds time elapsed (simulated)\n");
    per_cpu_block(&mut s, k);
    balance_block(&mut s, k);
    super::cgroup::summary_block(&mut s, k);
    let wall = out.wall_ns as f64 / 1e9;
    let events = k.events.popped;
    let _ = writeln!(
        s,
        "\n sim: {} events in {wall:.3} s wall ({:.2} M events/s, {})",
        thousands(events),
        events as f64 / wall.max(1e-9) / 1e6,
        speed(secs, wall)
    );
    s
}

/// Percentiles of the need-resched → switch latency; a run with no
/// request has none, and zeros would read as instant switches.
fn resched_latency(h: &crate::util::hist::Histogram) -> String {
    if h.count == 0 {
        return "none measured".into();
    }
    format!(
        "p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
        h.quantile(0.5) as f64 / 1e3,
        h.quantile(0.99) as f64 / 1e3,
        h.max as f64 / 1e3
    )
}

/// Simulated seconds per wall second; below one it is turned around
/// (wall s per simulated s), where one decimal would print 0.0.
fn speed(simulated: f64, wall: f64) -> String {
    let ratio = simulated / wall.max(1e-9);
    if ratio >= 1.0 || simulated <= 0.0 {
        format!("{ratio:.1} simulated s per wall s")
    } else {
        format!("{:.1} wall s per simulated s", 1.0 / ratio)
    }
}

/// Above this many CPUs the per-CPU utilisation is one line per group of
/// LLCs (mean, min, max) instead of one number per CPU.
const CONDENSE_ABOVE: usize = 32;

/// Each CPU's busy share of the run: per CPU on small machines, per group
/// of LLCs (`cpu_groups`) above `CONDENSE_ABOVE` CPUs.
fn per_cpu_block(s: &mut String, k: &crate::kernel::Kernel) {
    let pct: Vec<f64> = k
        .rqs
        .iter()
        .map(|rq| {
            let total = (rq.stats.busy_ns + rq.stats.idle_ns).max(1);
            rq.stats.busy_ns as f64 * 100.0 / total as f64
        })
        .collect();
    if pct.len() > CONDENSE_ABOVE {
        let _ = writeln!(s, " per-CPU utilisation, by LLC group (mean, min .. max):");
        for g in super::cpu_groups(&k.machine) {
            let v: Vec<f64> = g.cpus.iter().map(|&c| pct[c]).collect();
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let (lo, hi) = v
                .iter()
                .fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
            let _ = writeln!(s, "   {mean:5.1}%  {lo:5.1}% .. {hi:5.1}%   {}", g.label);
        }
        return;
    }
    let _ = writeln!(s, " per-CPU utilisation:");
    for (row, chunk) in pct.chunks(8).enumerate() {
        let line: String = chunk
            .iter()
            .enumerate()
            .map(|(j, p)| format!(" cpu{:<3} {p:5.1}%", row * 8 + j))
            .collect();
        let _ = writeln!(s, "{line}");
    }
}

/// The load balancer's counters and should_we_balance's cost histogram.
fn balance_block(s: &mut String, k: &crate::kernel::Kernel) {
    let mut by_type = [0u64; 3];
    let mut gained = 0;
    for (_, t) in k.level_totals() {
        for (i, c) in t.lb.iter().enumerate() {
            by_type[i] += c.lb_count;
            gained += c.lb_gained;
        }
    }
    let _ = writeln!(
        s,
        "\n load balance: {} sched_balance_rq (busy {}, idle {}, newly idle {}), {} tasks pulled, \
         {} active, {} nohz kicks, {} wasted-core episodes",
        thousands(by_type.iter().sum()),
        thousands(by_type[0]),
        thousands(by_type[1]),
        thousands(by_type[2]),
        thousands(gained),
        thousands(k.lb.active_balances),
        thousands(k.lb.nohz_kicks),
        k.lb.wasted_episodes
    );
    if k.lb.swb.calls > 0 {
        let _ = write!(s, "\n{}", k.swb_histogram_text());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_runs_say_how_slow() {
        assert_eq!(speed(3.0, 1.0), "3.0 simulated s per wall s");
        assert_eq!(speed(0.012, 1.0), "83.3 wall s per simulated s");
        assert_eq!(speed(0.5, 1.0), "2.0 wall s per simulated s");
        assert_eq!(speed(0.0, 1.0), "0.0 simulated s per wall s");
    }

    #[test]
    fn latency_without_samples_says_none() {
        let mut h = crate::util::hist::Histogram::default();
        assert_eq!(resched_latency(&h), "none measured");
        h.add(2_000);
        assert!(
            resched_latency(&h).starts_with("p50 2."),
            "{}",
            resched_latency(&h)
        );
    }
}
