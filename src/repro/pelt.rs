//! `schedlab repro pelt`: seed 004 (the per-entity load tracking rewrite,
//! v5, August 2014). LKP's hackbench on lkp-snb01 (snb-32) at a 50 % and a
//! 1600 % load factor, processes and threads, pipes and sockets; each at the
//! top level and three cgroup levels deep, with v3.16's load tracking
//! (`kernel.pelt = "v3.16"`, the seed's before) and today's, descended from
//! the rewrite (its after), beside the throughput the seed published. A
//! second experiment, three levels deep, turns `TG_LOAD_AVG_FILTER` off
//! (tg->load_avg written on every change) against on (the 1/64 + 1 ms
//! rule). The scenarios are the files in scenarios/seed-004-pelt.

use super::run_embedded;
use super::table::SeedTable;
use clap::Args;
use serde_json::{json, Value};
use std::fmt::Write;
use std::path::PathBuf;

#[derive(Args)]
pub struct PeltArgs {
    /// Divide LKP's loop counts (30000 × nr_cpu / nr_threads) by this; the
    /// 1600 % rows keep at least the 50 % rows' loops (at most LKP's own)
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
}

impl Row {
    /// LKP's hackbench.throughput (KB/s) on v3.16-rc5 and with the
    /// rewrite, as seed_rows lists it.
    fn seed(&self) -> (f64, f64) {
        super::seed_rows::lkp_004(&format!("lkp-snb01/hackbench/{}", self.name))
            .expect("every pelt row is one of seed 004's LKP lines")
    }
}

macro_rules! row {
    ($name:literal, $file:literal) => {
        Row {
            name: $name,
            file: $file,
            text: include_str!(concat!("../../scenarios/seed-004-pelt/", $file)),
        }
    };
}

const ROWS: [Row; 8] = [
    row!("1600%-process-pipe", "1600pct-process-pipe.toml"),
    row!("1600%-process-socket", "1600pct-process-socket.toml"),
    row!("1600%-threads-pipe", "1600pct-threads-pipe.toml"),
    row!("1600%-threads-socket", "1600pct-threads-socket.toml"),
    row!("50%-process-pipe", "50pct-process-pipe.toml"),
    row!("50%-process-socket", "50pct-process-socket.toml"),
    row!("50%-threads-pipe", "50pct-threads-pipe.toml"),
    row!("50%-threads-socket", "50pct-threads-socket.toml"),
];

/// LKP's loops for a load factor on lkp-snb01's 32 CPUs: tests/hackbench's
/// `30000 × nr_cpu / nr_threads`, nr_threads (hackbench's groups) being
/// 16 at 50 % and 512 at 1600 % (lkp-tests 8b9d2e6, Aug 2014).
fn lkp_loops(name: &str) -> u64 {
    let groups = if name.starts_with("1600%") { 512 } else { 16 };
    30_000 * 32 / groups
}

/// The loops of one run: LKP's ÷ `scale`, but no fewer than the 50 % rows'
/// ÷ `scale` (and never more than LKP's own). LKP gives every row the same
/// number of messages, so at 1600 % each of 32× the tasks sends 32× fewer:
/// 1875 ÷ 1000 would be 2 loops, 40 messages a receiver, far below a
/// pipe's 640, and Time would be mostly the start (one poll wakeup for
/// each of 20480 tasks) and the end (20480 exits reaped by one parent),
/// which LKP's 1875 loops amortise (docs/repro/pelt-loops.md). With
/// this floor every task does the same work at both load factors.
fn loops(name: &str, scale: u64) -> u64 {
    let scaled = |l: u64| (l + scale / 2) / scale;
    let own = lkp_loops(name);
    let floor = scaled(lkp_loops("50%")).min(own);
    scaled(own).max(floor).max(1)
}

/// The loops a `scale` gives each load factor, for the tables' titles.
pub(super) fn loops_label(scale: u64) -> String {
    format!(
        "LKP's loops ÷ {scale}, 1600 % raised to 50 %'s: {} and {} loops",
        loops("50%", scale),
        loops("1600%", scale)
    )
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

/// One simulated cell: at the top level or 3 deep, which load tracking,
/// and TG_LOAD_AVG_FILTER.
#[derive(Clone, Copy)]
struct Side {
    deep: bool,
    v316: bool,
    filter: bool,
}

/// One run: a row's scenario on one side.
fn simulate(row: &Row, loops: u64, side: Side, seed: Option<u64>) -> Result<Measured, String> {
    let path = format!("scenarios/seed-004-pelt/{}", row.file);
    let pelt = if side.v316 { "v3.16" } else { "current" };
    let mut sets = vec![
        ("workload.0.loops", loops.to_string()),
        ("kernel.pelt", format!("\"{pelt}\"")),
        (
            "kernel.features.TG_LOAD_AVG_FILTER",
            side.filter.to_string(),
        ),
    ];
    if let Some(seed) = seed {
        sets.push(("sim.seed", seed.to_string()));
    }
    if side.deep {
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
    // LKP's stats/hackbench: hackbench's "(== N tasks)", its children
    // (groups × 2 × fds), not the parent.
    let tasks = num("groups") * 2.0 * num("fds");
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

/// The cells of a row, each the mean over the seeds: [`TOP_V316`] ..
/// [`DEEP_FILTER_OFF`]. Today's kernel has the filter on.
type Runs = [Measured; 5];

const TOP_V316: usize = 0;
const TOP_NOW: usize = 1;
const DEEP_V316: usize = 2;
const DEEP_NOW: usize = 3;
const DEEP_FILTER_OFF: usize = 4;

const fn side(deep: bool, v316: bool, filter: bool) -> Side {
    Side { deep, v316, filter }
}

const SIDES: [Side; 5] = [
    side(false, true, true),
    side(false, false, true),
    side(true, true, true),
    side(true, false, true),
    side(true, false, false),
];

/// Every (row, side, seed) run, on all cores: for each row its cells'
/// runs, seed by seed.
fn run_all(rows: &[&Row], args: &PeltArgs) -> Result<Vec<[Vec<Measured>; 5]>, String> {
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

/// Does the change from cell `a` to cell `b` exceed twice its standard
/// error over the seeds?
fn beyond_spread(a: &[Measured], b: &[Measured]) -> bool {
    let n = a.len() as f64;
    let se = (sd(a).powi(2) / n + sd(b).powi(2) / n).sqrt();
    (mean(b).throughput - mean(a).throughput).abs() > 2.0 * se
}

/// With several seeds: each cell's sd of throughput, and whether the
/// rewrite's change at each depth, and the filter's 3 deep, are larger
/// than the spread.
fn spread(rows: &[&Row], all: &[[Vec<Measured>; 5]]) -> String {
    let n = all.first().map_or(0, |c| c[0].len());
    let mut s = format!(
        "\nSpread over {n} seeds: sd of throughput (KB/s); a change counts only beyond 2 standard errors\n"
    );
    let _ = writeln!(
        s,
        "{:<22} {:>8} {:>8} {:>8} {:>8} {:>8} {:>11} {:>11} {:>11}",
        "",
        "top 3.16",
        "top now",
        "deep3.16",
        "deep now",
        "deep off",
        "top 3.16→",
        "deep 3.16→",
        "deep filter"
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
            "{:<22} {:>8.0} {:>8.0} {:>8.0} {:>8.0} {:>8.0} {:>11} {:>11} {:>11}",
            row.name,
            sd(&c[TOP_V316]),
            sd(&c[TOP_NOW]),
            sd(&c[DEEP_V316]),
            sd(&c[DEEP_NOW]),
            sd(&c[DEEP_FILTER_OFF]),
            verdict(&c[TOP_V316], &c[TOP_NOW]),
            verdict(&c[DEEP_V316], &c[DEEP_NOW]),
            verdict(&c[DEEP_FILTER_OFF], &c[DEEP_NOW])
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

/// A throughput table, seed beside simulation: each group of `cells`
/// (before, after) pairs of a row's cells.
fn table(rows: &[&Row], runs: &[Runs], titles: &[[&str; 3]], cells: &[(usize, usize)]) -> String {
    let mut s = String::new();
    let seed = ["seed", "seed", "change"];
    let sub: Vec<[&str; 3]> = std::iter::once(seed)
        .chain(cells.iter().map(|_| ["before", "after", "change"]))
        .collect();
    let _ = writeln!(s, "{}", TABLE.header("", titles));
    let _ = writeln!(s, "{}", TABLE.header("hackbench.throughput", &sub));
    let mut tot = vec![(0.0, 0.0); cells.len() + 1];
    for (row, m) in rows.iter().zip(runs) {
        let pairs: Vec<(f64, f64)> = std::iter::once(row.seed())
            .chain(
                cells
                    .iter()
                    .map(|&(a, b)| (m[a].throughput, m[b].throughput)),
            )
            .collect();
        for (t, p) in tot.iter_mut().zip(&pairs) {
            (t.0, t.1) = (t.0 + p.0, t.1 + p.1);
        }
        let _ = writeln!(s, "{}", TABLE.row(row.name, &pairs));
    }
    let _ = writeln!(s, "{}", TABLE.row("TOTAL", &tot));
    s
}

/// The overhead counters that explain the deep rows, per message, for
/// v3.16, then today's with the filter off and on.
fn overhead(rows: &[&Row], runs: &[Runs]) -> String {
    let mut s = String::from(
        "\nPELT overhead 3 levels deep, per message (v3.16 / rewrite filter off / filter on):\n",
    );
    let _ = writeln!(
        s,
        "{:<22} {:>20} {:>20} {:>20} {:>23} {:>20}",
        "", "update_load_avg", "tg->load_avg upd", "propagations", "tg line ns", "line % of CPU"
    );
    let cells = [DEEP_V316, DEEP_FILTER_OFF, DEEP_NOW];
    for (row, m) in rows.iter().zip(runs) {
        let per = |r: &Measured, x: f64| x / r.messages.max(1.0);
        let cell = |f: &dyn Fn(&Measured) -> f64| {
            let v: Vec<String> = cells.iter().map(|&c| format!("{:.2}", f(&m[c]))).collect();
            v.join(" / ")
        };
        let share = |r: &Measured| 100.0 * r.tg_load_avg_ns / r.cpu_ns.max(1.0);
        let _ = writeln!(
            s,
            "{:<22} {:>20} {:>20} {:>20} {:>23} {:>20}",
            row.name,
            cell(&|r| per(r, r.update_load_avg_calls)),
            cell(&|r| per(r, r.tg_load_avg_updates)),
            cell(&|r| per(r, r.propagations)),
            cell(&|r| per(r, r.tg_load_avg_ns)),
            cell(&share)
        );
    }
    s
}

const NOTE: &str = "\
Read this with care. The seed's \"before\" is v3.16-rc5's load tracking and its \"after\" the
rewrite; here \"v3.16\" is kernel.pelt = \"v3.16\" (runnable averages per entity, runnable and
blocked load kept apart, tg->load_avg published beyond 1/8 or on every tick, tg->runnable_avg,
v3.16's shares from the queued weight) and \"after\" is today's PELT, which descends from the
rewrite (and, unlike v4.3, has skipped root_task_group's load_avg since v4.5). What changes
between the two is what the seed's kernels decided with: the group entities' weights, the load
the balancer and wake_affine read (v3.16: the runnable load only) and task_h_load; utilisation
is today's on both sides. Both run kernel.fair = \"cfs\" (the seed's kernels were CFS; the model's
is v6.5's) and today's balancer.
v3.16 also writes root_task_group's load_avg and runnable_avg from every CPU (one shared cache
line), so its overhead shows at the top level too (root line table). Three levels deep every
tg->load_avg write moves the group's line between CPUs (the machine's line transfer plus the
wait behind writers still holding it), charged to whatever runs on the writing CPU.
The second experiment keeps today's PELT and turns the rewrite's filter on tg->load_avg off
(every change written) against on (1/64 and once per ms), 3 deep only: at the top level there
is no group and it changes nothing.
Loops are LKP's divided by --scale, the 1600 % rows' raised to the 50 % rows' (at most LKP's own):
at ÷ 1000 LKP's 1875 would be 2, and 20480 tasks' start and end would make most of Time
(docs/repro/pelt-loops.md).
hackbench's Time excludes the fork of its tasks.";

/// v3.16's writes to root_task_group's line at the top level, per message.
fn root_line(rows: &[&Row], runs: &[Runs]) -> String {
    let mut s = String::from(
        "\nroot_task_group line at the top level (v3.16 / rewrite): ns per message, % of CPU\n",
    );
    for (row, m) in rows.iter().zip(runs) {
        let [a, b] = [&m[TOP_V316], &m[TOP_NOW]];
        let per = |r: &Measured| r.tg_load_avg_ns / r.messages.max(1.0);
        let share = |r: &Measured| 100.0 * r.tg_load_avg_ns / r.cpu_ns.max(1.0);
        let _ = writeln!(
            s,
            "{:<22} {:>9.2} / {:<9.2} {:>7.2} / {:.2}",
            row.name,
            per(a),
            per(b),
            share(a),
            share(b)
        );
    }
    s
}

fn to_json(rows: &[&Row], all: &[[Vec<Measured>; 5]], args: &PeltArgs) -> Value {
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
            let (before, after) = r.seed();
            json!({
                "config": r.name,
                "scenario": format!("scenarios/seed-004-pelt/{}", r.file),
                "seed": {"before": before, "after": after},
                "top": {"v3_16": side(&m[TOP_V316]), "rewrite": side(&m[TOP_NOW]),
                        "change_beyond_spread": beyond_spread(&m[TOP_V316], &m[TOP_NOW])},
                "deep": {"cgroup": DEEP, "v3_16": side(&m[DEEP_V316]), "rewrite": side(&m[DEEP_NOW]),
                         "change_beyond_spread": beyond_spread(&m[DEEP_V316], &m[DEEP_NOW]),
                         "filter_off": side(&m[DEEP_FILTER_OFF]),
                         "filter_change_beyond_spread": beyond_spread(&m[DEEP_FILTER_OFF], &m[DEEP_NOW])},
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
        "Seed 004: PELT rewrite, LKP hackbench on lkp-snb01 → snb-32 (KB/s, higher is better; {}; sim.seed {seeds})\n",
        loops_label(args.scale),
    );
    let both = [
        ["v3.16", "rewrite", ""],
        ["top", "level", ""],
        ["3", "deep", ""],
    ];
    print!(
        "{}",
        table(
            &rows,
            &runs,
            &both,
            &[(TOP_V316, TOP_NOW), (DEEP_V316, DEEP_NOW)]
        )
    );
    print!("{}", root_line(&rows, &runs));
    println!(
        "\nSecond experiment, 3 deep, rewrite: TG_LOAD_AVG_FILTER off (before) → on (after)\n"
    );
    let filt = [["v3.16", "rewrite", ""], ["filter", "3 deep", ""]];
    print!(
        "{}",
        table(&rows, &runs, &filt, &[(DEEP_FILTER_OFF, DEEP_NOW)])
    );
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
/// top-level throughput under v3.16's load tracking (before) and the
/// rewrite (after), keyed by the configuration's name, all runs on all
/// cores.
pub fn summary_cells(runs: u64, scale: u64) -> Result<Vec<super::summary::Cell>, String> {
    let seeds = super::run_seeds(runs, None);
    let n = seeds.len();
    let flat = crate::util::parallel::par_map(ROWS.len() * 2 * n, |i| {
        let row = &ROWS[i / (2 * n)];
        simulate(row, loops(row.name, scale), SIDES[i / n % 2], seeds[i % n])
    })?;
    Ok(ROWS
        .iter()
        .zip(flat.chunks(2 * n))
        .map(|(row, c)| super::summary::Cell::new(row.name, &c[..n], &c[n..], |m| m.throughput))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::loops;
    use crate::kernel::pipe::PIPE_DEF_BUFFERS;

    /// At the default ÷ 1000 every row's receivers get more messages
    /// than their pipe holds (senders block, as in LKP's runs), the
    /// 1600 % rows as many as the 50 % ones; at ÷ 1 the loops are LKP's.
    #[test]
    fn scaled_runs_fill_every_pipe_and_scale_1_is_lkp() {
        // 100-byte writes merge 40 to a 4 KiB page, 16 pages a pipe.
        let full = PIPE_DEF_BUFFERS as u64 * (4096 / 100);
        for r in &super::ROWS {
            let l = loops(r.name, 1000);
            assert!(20 * l > full, "{}: {l} loops, pipe holds {full}", r.name);
            assert_eq!(l, loops("50%-process-pipe", 1000), "{}", r.name);
        }
        assert_eq!(loops("1600%-process-pipe", 1), 1875);
        assert_eq!(loops("50%-threads-socket", 1), 60_000);
        assert_eq!(loops("1600%-threads-pipe", 100), 600);
        // The floor never exceeds LKP's own 1875, nor a run 1 loop.
        assert_eq!(loops("1600%-threads-pipe", 30), 1875);
        assert_eq!(loops("1600%-threads-pipe", 100_000), 1);
    }

    /// hackbench.throughput counts hackbench's "(== 640 tasks)" at 50 %,
    /// its children, as LKP's stats/hackbench does, not the parent too.
    #[test]
    fn throughput_counts_the_children_only() {
        let row = &super::ROWS[4];
        assert!(row.name.starts_with("50%"));
        let side = super::side(false, false, true);
        let m = super::simulate(row, 1, side, None).unwrap();
        let tasks = m.throughput * m.time_s * 1024.0 / 100.0;
        assert!((tasks - 640.0).abs() < 1e-6, "{tasks}");
    }

    /// Each row's numbers are seed 004's LKP line of the same name.
    #[test]
    fn every_row_finds_its_lkp_line() {
        for r in &super::ROWS {
            let (before, after) = r.seed();
            assert!(before > 0.0 && after > 0.0, "{}", r.name);
        }
        assert_eq!(super::ROWS[0].seed(), (150854.0, 231234.0));
    }
}
