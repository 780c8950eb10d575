//! `schedlab repro pelt`: seed 004 (the per-entity load tracking rewrite,
//! v5, August 2014). LKP's hackbench on lkp-snb01 (snb-32) at a 50 % and a
//! 1600 % load factor, processes and threads, pipes and sockets; each at the
//! top level and three cgroup levels deep, with `TG_LOAD_AVG_FILTER` off
//! (tg->load_avg written on every change) and on (the 1/64 + 1 ms rule),
//! beside the throughput the seed published. The scenarios are the files in
//! scenarios/seed-004-pelt.

use super::run_embedded;
use super::table::SeedTable;
use clap::Args;
use serde_json::{json, Value};
use std::fmt::Write;
use std::path::PathBuf;

#[derive(Args)]
pub struct PeltArgs {
    /// Divide LKP's loop counts (30000 × nr_cpu / nr_threads) by this
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    scale: u64,
    /// Only the configurations whose name contains this (e.g. `50%` or `socket`)
    #[arg(long)]
    only: Option<String>,
    /// Also write the results as JSON to this file, atomically
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Random seed of every run (sim.seed; default: the scenario files' 1);
    /// with --runs, the first of the seeds
    #[arg(long)]
    seed: Option<u64>,
    /// Run every cell with this many seeds (--seed, +1, ...): the tables
    /// print means, and a spread table says which changes exceed it
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    runs: u64,
}

/// The group the deep runs put every hackbench task in.
const DEEP: &str = "/lkp/a/b";

/// One of the seed's eight hackbench rows.
struct Row {
    name: &'static str,
    file: &'static str,
    text: &'static str,
    /// LKP's hackbench.throughput (KB/s) on v3.16-rc5 and with the rewrite.
    seed: (f64, f64),
}

macro_rules! row {
    ($name:literal, $file:literal, $before:literal, $after:literal) => {
        Row {
            name: $name,
            file: $file,
            text: include_str!(concat!("../../scenarios/seed-004-pelt/", $file)),
            seed: ($before, $after),
        }
    };
}

const ROWS: [Row; 8] = [
    row!(
        "1600%-process-pipe",
        "1600pct-process-pipe.toml",
        150854.0,
        231234.0
    ),
    row!(
        "1600%-process-socket",
        "1600pct-process-socket.toml",
        150986.0,
        153470.0
    ),
    row!(
        "1600%-threads-pipe",
        "1600pct-threads-pipe.toml",
        174142.0,
        207396.0
    ),
    row!(
        "1600%-threads-socket",
        "1600pct-threads-socket.toml",
        156982.0,
        155706.0
    ),
    row!(
        "50%-process-pipe",
        "50pct-process-pipe.toml",
        95201.0,
        94492.0
    ),
    row!(
        "50%-process-socket",
        "50pct-process-socket.toml",
        85279.0,
        152428.0
    ),
    row!(
        "50%-threads-pipe",
        "50pct-threads-pipe.toml",
        89911.0,
        90477.0
    ),
    row!(
        "50%-threads-socket",
        "50pct-threads-socket.toml",
        78145.0,
        146505.0
    ),
];

/// LKP's loops for a load factor on 32 CPUs, scaled down (at least 1).
fn loops(name: &str, scale: u64) -> u64 {
    let groups = if name.starts_with("1600%") { 512 } else { 16 };
    (30_000 * 32 / groups + scale / 2) / scale
}

/// What one simulated run measured.
#[derive(Clone, Copy, Default)]
struct Measured {
    throughput: f64,
    time_s: f64,
    messages: f64,
    update_load_avg_calls: f64,
    tg_load_avg_updates: f64,
    propagations: f64,
    tg_load_avg_ns: f64,
    /// CPU time of all tasks (ns).
    cpu_ns: f64,
}

/// One run: a row's scenario at a depth (0 or 3) and filter setting.
fn simulate(
    row: &Row,
    loops: u64,
    (deep, filter): (bool, bool),
    seed: Option<u64>,
) -> Result<Measured, String> {
    let path = format!("scenarios/seed-004-pelt/{}", row.file);
    let mut sets = vec![
        ("workload.0.loops", loops.to_string()),
        ("kernel.features.TG_LOAD_AVG_FILTER", filter.to_string()),
    ];
    if let Some(seed) = seed {
        sets.push(("sim.seed", seed.to_string()));
    }
    if deep {
        sets.push(("workload.0.cgroup", format!("\"{DEEP}\"")));
        sets.push(("cgroup", format!("[{{ path = \"{DEEP}\", weight = 100 }}]")));
    }
    let out = run_embedded(&path, row.text, &sets)?;
    let k = &out.kernel;
    let (w, pids) = &out.workloads[0];
    let fields = w.report(k, pids).fields;
    let num = |key: &str| fields.get(key).and_then(Value::as_f64).unwrap_or(0.0);
    let pelt = k.pelt_counters();
    let time_s = num("time_s");
    let tasks = pids.len() as f64;
    Ok(Measured {
        throughput: tasks * loops as f64 * 100.0 / 1024.0 / time_s.max(1e-9),
        time_s,
        messages: num("messages"),
        update_load_avg_calls: pelt.update_load_avg_calls as f64,
        tg_load_avg_updates: pelt.tg_load_avg_updates as f64,
        propagations: pelt.propagations as f64,
        tg_load_avg_ns: k.stats.tg_load_avg_ns as f64,
        cpu_ns: k.tasks.iter().map(|t| t.se.sum_exec_runtime).sum::<u64>() as f64,
    })
}

/// The four cells of a row: (top off, top on, deep off, deep on), each the
/// mean over the seeds.
type Runs = [Measured; 4];

const SIDES: [(bool, bool); 4] = [(false, false), (false, true), (true, false), (true, true)];

/// Every (row, side, seed) run, on all cores: for each row its four cells'
/// runs, seed by seed.
fn run_all(rows: &[&Row], args: &PeltArgs) -> Result<Vec<[Vec<Measured>; 4]>, String> {
    let seeds = super::run_seeds(args.runs, args.seed);
    let per_row = SIDES.len() * seeds.len();
    let flat = crate::util::parallel::par_map(rows.len() * per_row, |i| {
        let row = rows[i / per_row];
        let side = SIDES[i % per_row / seeds.len()];
        simulate(
            row,
            loops(row.name, args.scale),
            side,
            seeds[i % seeds.len()],
        )
    })?;
    Ok(flat
        .chunks(per_row)
        .map(|c| std::array::from_fn(|k| c[k * seeds.len()..(k + 1) * seeds.len()].to_vec()))
        .collect())
}

/// The mean of each measure over a cell's runs.
fn mean(ms: &[Measured]) -> Measured {
    let n = ms.len() as f64;
    let avg = |f: fn(&Measured) -> f64| ms.iter().map(f).sum::<f64>() / n;
    Measured {
        throughput: avg(|m| m.throughput),
        time_s: avg(|m| m.time_s),
        messages: avg(|m| m.messages),
        update_load_avg_calls: avg(|m| m.update_load_avg_calls),
        tg_load_avg_updates: avg(|m| m.tg_load_avg_updates),
        propagations: avg(|m| m.propagations),
        tg_load_avg_ns: avg(|m| m.tg_load_avg_ns),
        cpu_ns: avg(|m| m.cpu_ns),
    }
}

/// Sample standard deviation of the throughput over a cell's runs.
fn sd(ms: &[Measured]) -> f64 {
    let xs: Vec<f64> = ms.iter().map(|m| m.throughput).collect();
    crate::compare::mean_sd(&xs).1
}

/// Does the filter's change of a depth (cells `off`, `on`) exceed twice its
/// standard error over the seeds?
fn beyond_spread(off: &[Measured], on: &[Measured]) -> bool {
    let n = off.len() as f64;
    let se = (sd(off).powi(2) / n + sd(on).powi(2) / n).sqrt();
    (mean(on).throughput - mean(off).throughput).abs() > 2.0 * se
}

/// With several seeds: each cell's sd of throughput, and whether the
/// filter's change at each depth is larger than the spread.
fn spread(rows: &[&Row], all: &[[Vec<Measured>; 4]]) -> String {
    let n = all.first().map_or(0, |c| c[0].len());
    let mut s = format!(
        "\nSpread over {n} seeds: sd of throughput (KB/s); the filter's change counts only beyond 2 standard errors\n"
    );
    let _ = writeln!(
        s,
        "{:<22} {:>9} {:>9} {:>9} {:>9} {:>12} {:>12}",
        "", "top off", "top on", "deep off", "deep on", "top change", "deep change"
    );
    for (row, c) in rows.iter().zip(all) {
        let verdict = |a: &[Measured], b: &[Measured]| {
            if beyond_spread(a, b) {
                pct(mean(a).throughput, mean(b).throughput)
            } else {
                "within sd".to_string()
            }
        };
        let _ = writeln!(
            s,
            "{:<22} {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>12} {:>12}",
            row.name,
            sd(&c[0]),
            sd(&c[1]),
            sd(&c[2]),
            sd(&c[3]),
            verdict(&c[0], &c[1]),
            verdict(&c[2], &c[3])
        );
    }
    s
}

fn pct(a: f64, b: f64) -> String {
    if a > 0.0 {
        format!("{:+.1}%", (b / a - 1.0) * 100.0)
    } else {
        "-".into()
    }
}

/// Seed, top level and 3 levels deep, each before/after and its change.
const TABLE: SeedTable = SeedTable {
    label_w: 22,
    seed_w: 8,
    sim_w: 9,
    sep: " | ",
    cell: |v| format!("{v:.0}"),
    change: pct,
};

/// The throughput table, seed beside simulation.
fn table(rows: &[&Row], runs: &[Runs]) -> String {
    let mut s = String::new();
    let top = [
        ["v3.16", "rewrite", ""],
        ["top", "top", ""],
        ["3 deep", "3 deep", ""],
    ];
    let _ = writeln!(s, "{}", TABLE.header("", &top));
    let filt = ["filt off", "filt on", "change"];
    let titles = [["seed", "seed", "change"], filt, filt];
    let _ = writeln!(s, "{}", TABLE.header("hackbench.throughput", &titles));
    let mut tot = [0.0; 6];
    for (row, m) in rows.iter().zip(runs) {
        let v = [
            row.seed.0,
            row.seed.1,
            m[0].throughput,
            m[1].throughput,
            m[2].throughput,
            m[3].throughput,
        ];
        tot.iter_mut().zip(v).for_each(|(t, x)| *t += x);
        let _ = writeln!(s, "{}", line(row.name, &v));
    }
    let _ = writeln!(s, "{}", line("TOTAL", &tot));
    s
}

fn line(name: &str, v: &[f64; 6]) -> String {
    TABLE.row(name, &[(v[0], v[1]), (v[2], v[3]), (v[4], v[5])])
}

/// The overhead counters that explain the deep rows, per message.
fn overhead(rows: &[&Row], runs: &[Runs]) -> String {
    let mut s = String::from("\nPELT overhead 3 levels deep, per message (filter off → on):\n");
    let _ = writeln!(
        s,
        "{:<22} {:>17} {:>17} {:>15} {:>19} {:>17}",
        "", "update_load_avg", "tg->load_avg upd", "propagations", "tg line ns", "line % of CPU"
    );
    for (row, m) in rows.iter().zip(runs) {
        let per = |r: &Measured, x: f64| x / r.messages.max(1.0);
        let cell = |f: fn(&Measured) -> f64| {
            format!("{:.2} → {:.2}", per(&m[2], f(&m[2])), per(&m[3], f(&m[3])))
        };
        let share = |r: &Measured| 100.0 * r.tg_load_avg_ns / r.cpu_ns.max(1.0);
        let _ = writeln!(
            s,
            "{:<22} {:>17} {:>17} {:>15} {:>19} {:>17}",
            row.name,
            cell(|r| r.update_load_avg_calls),
            cell(|r| r.tg_load_avg_updates),
            cell(|r| r.propagations),
            cell(|r| r.tg_load_avg_ns),
            format!("{:.2} → {:.2}", share(&m[2]), share(&m[3]))
        );
    }
    s
}

const NOTE: &str = "\
Read this with care. The seed's \"before\" is v3.16-rc5's load tracking (runnable averages
per entity, tg contributions rewritten on a different schedule, blocked load kept apart);
its \"after\" is the rewrite. The simulator implements only today's PELT, which descends
from the rewrite, so before vs after is modelled by the one rule of the rewrite that is a
switch here: TG_LOAD_AVG_FILTER off writes tg->load_avg on every change, on keeps the
1/64 + 1 ms filter. At the top level there is no task group, so the filter changes nothing
and the two columns must match. Three levels deep, every tg->load_avg write moves one
shared cache line between the CPUs (cost model: the machine's line transfer, plus the wait
behind writers still holding it), charged to whatever runs on the writing CPU. Where
that cost is a small share of the CPU time (last column) and throughput still moves, the
filter acted through decisions: group shares come from tg->load_avg, and the group
entities' weights feed task_h_load (wake_affine, load balancing) and the root's load.
Loops are LKP's divided by --scale; hackbench's Time excludes the fork of its tasks.";

fn to_json(rows: &[&Row], all: &[[Vec<Measured>; 4]], args: &PeltArgs) -> Value {
    let side = |ms: &Vec<Measured>| {
        let m = mean(ms);
        json!({
            "throughput_runs": ms.iter().map(|x| x.throughput).collect::<Vec<_>>(),
            "sd_throughput": sd(ms),
            "throughput_kb_s": m.throughput,
            "time_s": m.time_s,
            "messages": m.messages,
            "update_load_avg_calls": m.update_load_avg_calls,
            "tg_load_avg_updates": m.tg_load_avg_updates,
            "propagations": m.propagations,
            "tg_load_avg_ns": m.tg_load_avg_ns,
            "cpu_ns": m.cpu_ns,
        })
    };
    let rows: Vec<Value> = rows
        .iter()
        .zip(all)
        .map(|(r, m)| {
            json!({
                "config": r.name,
                "scenario": format!("scenarios/seed-004-pelt/{}", r.file),
                "seed": {"before": r.seed.0, "after": r.seed.1},
                "top": {"filter_off": side(&m[0]), "filter_on": side(&m[1]),
                        "change_beyond_spread": beyond_spread(&m[0], &m[1])},
                "deep": {"cgroup": DEEP, "filter_off": side(&m[2]), "filter_on": side(&m[3]),
                         "change_beyond_spread": beyond_spread(&m[2], &m[3])},
            })
        })
        .collect();
    json!({"seed": "004", "machine": "snb-32", "loops_divided_by": args.scale, "sim_seed": args.seed.unwrap_or(1), "runs": args.runs, "rows": rows})
}

/// `schedlab repro pelt`.
pub fn repro(args: &PeltArgs, quiet: bool) -> Result<(), String> {
    let rows: Vec<&Row> = ROWS
        .iter()
        .filter(|r| args.only.as_deref().is_none_or(|o| r.name.contains(o)))
        .collect();
    if rows.is_empty() {
        return Err(format!(
            "--only {}: no configuration matches (they are named like 1600%-process-pipe)",
            args.only.as_deref().unwrap_or_default()
        ));
    }
    let all = run_all(&rows, args)?;
    let runs: Vec<Runs> = all
        .iter()
        .map(|c| c.each_ref().map(|ms| mean(ms)))
        .collect();
    let seeds = super::seeds_label(args.runs, args.seed);
    println!(
        "Seed 004: PELT rewrite, LKP hackbench on lkp-snb01 → snb-32 (KB/s, higher is better; loops ÷ {}; sim.seed {seeds})\n",
        args.scale,
    );
    print!("{}", table(&rows, &runs));
    print!("{}", overhead(&rows, &runs));
    if args.runs > 1 {
        print!("{}", spread(&rows, &all));
    }
    if !quiet {
        println!("\n{NOTE}");
    }
    super::write_json(args.json.as_ref(), to_json(&rows, &all, args))
}

/// What `repro summary` sets beside seed 004's hackbench rows: each seed's
/// top-level throughput on the repro's before and after sides, keyed by
/// the configuration's name, all runs on all cores.
pub fn summary_cells(runs: u64, scale: u64) -> Result<Vec<super::summary::Cell>, String> {
    let seeds = super::run_seeds(runs, None);
    let n = seeds.len();
    let flat = crate::util::parallel::par_map(ROWS.len() * 2 * n, |i| {
        let row = &ROWS[i / (2 * n)];
        simulate(
            row,
            loops(row.name, scale).max(1),
            SIDES[i / n % 2],
            seeds[i % n],
        )
    })?;
    Ok(ROWS
        .iter()
        .zip(flat.chunks(2 * n))
        .map(|(row, c)| super::summary::Cell::new(row.name, &c[..n], &c[n..], |m| m.throughput))
        .collect())
}
