//! `schedlab repro preempt`: seed 002 (PREEMPT_AUTO v2, June 2024).
//! `hackbench -pipe 60 process` under preempt=none on the baseline kernel
//! and on the PREEMPT_AUTO series, on the two POWER10 machines and the AMD
//! Milan of the thread, with the seed's perf-stat numbers beside the
//! simulated ones. The scenarios are the files in scenarios/seed-002-preempt.

use super::seed_rows;
use super::summary::Cell;
use clap::Args;
use serde_json::{json, Value};
use std::fmt::Write;
use std::path::PathBuf;

#[derive(Args)]
pub struct PreemptArgs {
    /// Divide the seed's 100000 hackbench loops by this (1000: 100 loops per run)
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    scale: u64,
    /// Old spelling: hackbench loops per run (100000 / --scale)
    #[arg(long, hide = true, conflicts_with = "scale")]
    loops: Option<u64>,
    /// Runs (seeds 1..=N) per configuration; counters are averaged (the seed averaged 20 runs)
    #[arg(long, alias = "seeds", default_value_t = 2)]
    runs: u64,
    /// Also write the results as JSON to this file, atomically
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
}

/// (file, machine, model, scenario text)
const SCENARIOS: &[(&str, &str, &str, &str)] = &[
    (
        "power10-96-none.toml",
        "power10-96",
        "none",
        include_str!("../../scenarios/seed-002-preempt/power10-96-none.toml"),
    ),
    (
        "power10-96-auto-none.toml",
        "power10-96",
        "auto-none",
        include_str!("../../scenarios/seed-002-preempt/power10-96-auto-none.toml"),
    ),
    (
        "power10-320-none.toml",
        "power10-320",
        "none",
        include_str!("../../scenarios/seed-002-preempt/power10-320-none.toml"),
    ),
    (
        "power10-320-auto-none.toml",
        "power10-320",
        "auto-none",
        include_str!("../../scenarios/seed-002-preempt/power10-320-auto-none.toml"),
    ),
    (
        "milan-256-none.toml",
        "milan-256",
        "none",
        include_str!("../../scenarios/seed-002-preempt/milan-256-none.toml"),
    ),
    (
        "milan-256-auto-none.toml",
        "milan-256",
        "auto-none",
        include_str!("../../scenarios/seed-002-preempt/milan-256-auto-none.toml"),
    ),
];

/// The seed's numbers for one configuration: hackbench time (s), context
/// switches and migrations of one run of 100000 loops (perf stat -a).
struct Reported {
    time_s: f64,
    switches: f64,
    migrations: f64,
}

const SEED_LOOPS: f64 = 100_000.0;

/// The POWER counts are sums over the 20 runs of `perf stat -r 20 -a`,
/// not means: the same lines say "6400.026 CPUs utilized" on the 320-CPU
/// LPAR and "1920.003" on the 96-CPU one, 20 times the machine (cpu-clock
/// summed over the runs, divided by one run's elapsed time), while the
/// elapsed time is the runs' mean ("20 iterations avg value"). Each
/// count is divided by these runs. Milan's lines give no CPUs utilized
/// and are taken as they are.
const POWER_RUNS_SUMMED: f64 = 20.0;

fn reported(machine: &str, model: &str) -> Reported {
    let seed = |counter: &str| {
        let (before, after) = seed_rows::perf_002(machine, counter)
            .unwrap_or_else(|| unreachable!("seed_rows lists {machine}'s {counter}"));
        if model == "none" {
            before
        } else {
            after
        }
    };
    let (time_s, switches, migrations) = (
        seed("time elapsed"),
        seed("context-switches"),
        seed("cpu-migrations"),
    );
    let runs = if machine.starts_with("power10") {
        POWER_RUNS_SUMMED
    } else {
        1.0
    };
    Reported {
        time_s,
        switches: switches / runs,
        migrations: migrations / runs,
    }
}

/// What one simulated configuration measured (means over the seeds).
#[derive(Default)]
struct Measured {
    time_s: f64,
    messages: f64,
    switches: f64,
    voluntary: f64,
    involuntary: f64,
    migrations: f64,
    preempt_wakeup: f64,
    preempt_tick: f64,
    preempt_lazy_upgrade: f64,
    at_irq: f64,
    at_user: f64,
    resched_p99_us: f64,
    /// Task time over elapsed time: how many CPUs the run kept busy.
    cpus_used: f64,
}

fn simulate(file: &str, text: &str, loops: u64, seed: u64) -> Result<Measured, String> {
    let path = format!("scenarios/seed-002-preempt/{file}");
    let sets = [
        ("workload.0.loops", loops.to_string()),
        ("sim.seed", seed.to_string()),
    ];
    let out = super::run_embedded(&path, text, &sets)?;
    let k = &out.kernel;
    let (w, pids) = &out.workloads[0];
    let fields = w.report(k, pids).fields;
    let num = |key: &str| fields.get(key).and_then(Value::as_f64).unwrap_or(0.0);
    let (v, i) = k
        .tasks
        .iter()
        .fold((0, 0), |(v, i), t| (v + t.stats.nvcsw, i + t.stats.nivcsw));
    let p = &k.stats.preempt;
    Ok(Measured {
        time_s: num("time_s"),
        messages: num("messages"),
        switches: k.task_switches() as f64,
        voluntary: v as f64,
        involuntary: i as f64,
        migrations: k.stats.cpu_migrations as f64,
        preempt_wakeup: p.wakeup as f64,
        preempt_tick: p.tick as f64,
        preempt_lazy_upgrade: p.lazy_upgrade as f64,
        at_irq: p.at_irq as f64,
        at_user: p.at_user as f64,
        resched_p99_us: p.resched_latency.quantile(0.99) as f64 / 1e3,
        cpus_used: k.tasks.iter().map(|t| t.se.sum_exec_runtime).sum::<u64>() as f64
            / k.now.max(1) as f64,
    })
}

/// Mean of the runs, field by field.
fn mean(runs: &[Measured]) -> Measured {
    let n = runs.len().max(1) as f64;
    let f = |g: fn(&Measured) -> f64| runs.iter().map(g).sum::<f64>() / n;
    Measured {
        time_s: f(|m| m.time_s),
        messages: f(|m| m.messages),
        switches: f(|m| m.switches),
        voluntary: f(|m| m.voluntary),
        involuntary: f(|m| m.involuntary),
        migrations: f(|m| m.migrations),
        preempt_wakeup: f(|m| m.preempt_wakeup),
        preempt_tick: f(|m| m.preempt_tick),
        preempt_lazy_upgrade: f(|m| m.preempt_lazy_upgrade),
        at_irq: f(|m| m.at_irq),
        at_user: f(|m| m.at_user),
        resched_p99_us: f(|m| m.resched_p99_us),
        cpus_used: f(|m| m.cpus_used),
    }
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}x", a / b)
    } else {
        "-".into()
    }
}

/// The table of one machine: simulated none, auto-none and ratio, then
/// the seed's. Per-message figures make the scaled-down runs comparable.
fn machine_table(machine: &str, none: &Measured, auto: &Measured) -> String {
    let (rn, ra) = (reported(machine, "none"), reported(machine, "auto-none"));
    let seed_msgs = 60.0 * 20.0 * 20.0 * SEED_LOOPS;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{machine}: hackbench -pipe 60 process, {} messages per simulated run",
        none.messages
    );
    let _ = writeln!(
        s,
        "  {:<26} {:>12} {:>12} {:>7} | {:>10} {:>10} {:>7}",
        "", "sim none", "sim auto", "ratio", "seed none", "seed auto", "ratio"
    );
    let row =
        |s: &mut String, name: &str, a: f64, b: f64, seed: Option<(f64, f64)>, prec: usize| {
            let seed_cols = match seed {
                Some((x, y)) => format!("{x:>10.prec$} {y:>10.prec$} {:>7}", ratio(y, x)),
                None => format!("{:>10} {:>10} {:>7}", "n/a", "n/a", ""),
            };
            let _ = writeln!(
                s,
                "  {name:<26} {a:>12.prec$} {b:>12.prec$} {:>7} | {seed_cols}",
                ratio(b, a)
            );
        };
    let per_msg = |m: &Measured, v: f64| v / m.messages.max(1.0);
    let time_per = |t: f64, msgs: f64| t / msgs * 1e9;
    row(
        &mut s,
        "time per message (ns)",
        time_per(none.time_s, none.messages),
        time_per(auto.time_s, auto.messages),
        Some((
            time_per(rn.time_s, seed_msgs),
            time_per(ra.time_s, seed_msgs),
        )),
        2,
    );
    row(
        &mut s,
        "switches per message",
        per_msg(none, none.switches),
        per_msg(auto, auto.switches),
        Some((rn.switches / seed_msgs, ra.switches / seed_msgs)),
        3,
    );
    row(
        &mut s,
        "  voluntary",
        per_msg(none, none.voluntary),
        per_msg(auto, auto.voluntary),
        None,
        3,
    );
    row(
        &mut s,
        "  involuntary",
        per_msg(none, none.involuntary),
        per_msg(auto, auto.involuntary),
        None,
        3,
    );
    row(
        &mut s,
        "migrations per message",
        per_msg(none, none.migrations),
        per_msg(auto, auto.migrations),
        Some((rn.migrations / seed_msgs, ra.migrations / seed_msgs)),
        4,
    );
    row(
        &mut s,
        "preempt: wakeup",
        none.preempt_wakeup,
        auto.preempt_wakeup,
        None,
        0,
    );
    row(
        &mut s,
        "preempt: slice (tick)",
        none.preempt_tick,
        auto.preempt_tick,
        None,
        0,
    );
    row(
        &mut s,
        "preempt: lazy upgrade",
        none.preempt_lazy_upgrade,
        auto.preempt_lazy_upgrade,
        None,
        0,
    );
    row(
        &mut s,
        "  honoured at irq return",
        none.at_irq,
        auto.at_irq,
        None,
        0,
    );
    row(
        &mut s,
        "  honoured at exit to user",
        none.at_user,
        auto.at_user,
        None,
        0,
    );
    row(
        &mut s,
        "CPUs utilized",
        none.cpus_used,
        auto.cpus_used,
        None,
        1,
    );
    row(
        &mut s,
        "need-resched→switch p99 µs",
        none.resched_p99_us,
        auto.resched_p99_us,
        None,
        1,
    );
    s
}

fn pct(a: f64, b: f64) -> f64 {
    (b / a.max(1e-12) - 1.0) * 100.0
}

/// What the simulation shows against what the seed reported, in numbers.
fn verdict(results: &[(&str, Measured, Measured)]) -> String {
    let mut s = String::from("What the simulation explains:\n");
    for (machine, none, auto) in results {
        let (rn, ra) = (reported(machine, "none"), reported(machine, "auto-none"));
        let _ = writeln!(
            s,
            "  {machine}: simulated time {:+.1} %, switches {:+.1} % (involuntary {:+.1} %), migrations {:+.1} %; \
             seed: time {:+.1} %, switches {:+.1} %, migrations {:+.1} %",
            pct(none.time_s, auto.time_s),
            pct(none.switches, auto.switches),
            pct(none.involuntary, auto.involuntary),
            pct(none.migrations, auto.migrations),
            pct(rn.time_s, ra.time_s),
            pct(rn.switches, ra.switches),
            pct(rn.migrations, ra.migrations),
        );
    }
    s.push_str(
        "  Read the CPUs-utilized row first: the machines have 96-320 CPUs, and hackbench's 2400 \
         tasks keep them all busy on the real kernels (the seed's perf stat says 1920 and 6400 CPUs \
         utilized: 20 runs' CPU time over one run's, so 96 and 320; its counts are divided by \
         those 20 runs here). The simulated runs are short by default (100 loops), so the \
         parent's forking of 2400 tasks weighs on the average; where few CPUs are busy the \
         per-message time and migration counts are not comparable with the seed's; the switch \
         split and preemption causes still are.\n",
    );
    s.push_str(
        "  The model has no architecture-specific entry code, and needs none for the lazy bit: \
         the v2 series' powerpc patch (20/35, arch/powerpc/kernel/interrupt.c) schedules on either \
         bit at exit to user, from a syscall or an interrupt, and on the full bit only at return \
         to kernel, as generic entry does (docs/repro/preempt-powerpc.md). Where the simulated \
         change is small on all three machines, the seed's POWER regression is explained neither \
         by the lazy bit's scheduling policy as modelled (lazy requests honoured at exit to user or \
         upgraded at the tick, no IPI for a remote lazy request) nor by powerpc's exit rules, and \
         points at what is not modelled: what the thread measured on POWER (no regression with \
         the 96 CPUs in one socket, more interrupt-controller IPIs and fewer same-core doorbells, \
         more RCU softirqs) and the real per-message costs (the simulated time per message is set \
         by the cost model, not fitted to these machines).\n",
    );
    s
}

/// What `repro summary` sets beside seed 002's rows: per machine, each
/// seed's (1..=runs) hackbench time, context switches and migrations under
/// preempt=none and PREEMPT_AUTO's none, keyed "MACHINE time_s" etc., all
/// runs on all cores.
pub fn summary_cells(runs: u64, loops: u64) -> Result<Vec<Cell>, String> {
    let n = runs as usize;
    let flat = crate::util::parallel::par_map(SCENARIOS.len() * n, |i| {
        let (file, _, _, text) = SCENARIOS[i / n];
        simulate(file, text, loops, (i % n) as u64 + 1)
    })?;
    let mut cells = Vec::new();
    for (pair, runs) in SCENARIOS.chunks(2).zip(flat.chunks(2 * n)) {
        let (none, auto) = runs.split_at(n);
        let machine = pair[0].1;
        cells.push(Cell::new(format!("{machine} time_s"), none, auto, |m| {
            m.time_s
        }));
        cells.push(Cell::new(format!("{machine} switches"), none, auto, |m| {
            m.switches
        }));
        cells.push(Cell::new(
            format!("{machine} migrations"),
            none,
            auto,
            |m| m.migrations,
        ));
    }
    Ok(cells)
}

/// `schedlab repro preempt`: one table per machine, then the verdict.
pub fn repro(args: &PreemptArgs, quiet: bool) -> Result<(), String> {
    let loops = args.loops.unwrap_or(100_000 / args.scale);
    if loops == 0 || args.runs == 0 {
        return Err("--loops and --runs must be at least 1".into());
    }
    println!(
        "Seed 002: hackbench -pipe 60 process, preempt=none on the baseline vs the PREEMPT_AUTO v2 series,\n\
         {loops} loops (the seed ran 100000), mean of {} seed(s); scenarios in scenarios/seed-002-preempt/\n",
        args.runs
    );
    let mut results = Vec::new();
    let mut json_rows = Vec::new();
    for pair in SCENARIOS.chunks(2) {
        let mut both = Vec::new();
        for (file, machine, model, text) in pair {
            let mut runs = Vec::new();
            for seed in 1..=args.runs {
                runs.push(simulate(file, text, loops, seed)?);
            }
            let m = mean(&runs);
            json_rows.push(json!({
                "machine": machine, "preempt": model, "scenario": file,
                "time_s": m.time_s, "messages": m.messages, "context_switches": m.switches,
                "voluntary_switches": m.voluntary, "involuntary_switches": m.involuntary,
                "cpu_migrations": m.migrations, "preempt_wakeup": m.preempt_wakeup,
                "preempt_tick": m.preempt_tick, "preempt_lazy_upgrade": m.preempt_lazy_upgrade,
                "resched_latency_p99_us": m.resched_p99_us,
                "seed_reported": {
                    "time_s": reported(machine, model).time_s,
                    "context_switches": reported(machine, model).switches,
                    "cpu_migrations": reported(machine, model).migrations,
                    "loops": SEED_LOOPS,
                },
            }));
            both.push(m);
        }
        let auto = both.pop().unwrap_or_default();
        let none = both.pop().unwrap_or_default();
        println!("{}", machine_table(pair[0].1, &none, &auto));
        results.push((pair[0].1, none, auto));
    }
    if !quiet {
        print!("{}", verdict(&results));
    }
    let results = json!({ "study": "seed-002-preempt", "loops": loops, "seeds": args.runs, "runs": json_rows });
    super::write_json(args.json.as_ref(), results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_counts_are_per_run() {
        // 60 groups × 20 senders × 20 receivers × 100000 loops.
        let messages = 60.0 * 400.0 * SEED_LOOPS;
        let per_msg = |m, p| reported(m, p).switches / messages;
        // 1,388,830,542 and 6,299,247,371 switches over 20 runs.
        assert!((per_msg("power10-96", "none") - 0.028934).abs() < 1e-5);
        assert!((per_msg("power10-320", "none") - 0.131234).abs() < 1e-5);
        // Milan's are one run's.
        assert!((per_msg("milan-256", "none") - 0.071133).abs() < 1e-5);
    }
}
