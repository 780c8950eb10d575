//! `schedlab validate bench`: the installed `perf bench sched pipe` (across
//! CPUs and pinned) and `perf bench sched messaging` (pipe/socket ×
//! thread/process × `--groups`, default 1 and 4) for real under `perf
//! stat`, or read from runs recorded earlier (`--real-from`), then the same
//! benchmarks simulated over several seeds, compared per operation against
//! the targets of issue 20 (or issue 32's for the 16-CPU host).

use super::bench_report::{self as report, Row, Sample, Target};
use super::perf::{self, RealRun};
use super::recorded;
use crate::compare::{run_side, Metrics};
use crate::machine::hostkernel::{self, HostSetting};
use crate::scenario::{parse_set_value, set_key, workload_table, Scenario, Source};
use crate::util::fs::write_atomic;
use clap::Args;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args)]
pub struct BenchArgs {
    /// Runs of each benchmark, real and simulated (seeds seed, seed+1, …)
    #[arg(long, default_value_t = 5)]
    runs: u64,
    /// A fifth of the loops (about 0.1 s per real run here), for CI
    #[arg(long)]
    quick: bool,
    /// The simulated machine: `host` (calibrated in this run unless
    /// --no-calibrate), a preset, or a machine file
    #[arg(long, value_name = "NAME|FILE.toml", default_value = "host")]
    machine: String,
    /// With `--machine host`, simulate with the host preset's costs
    /// (`vm-2` in a VM) instead of measuring this host's primitives first
    #[arg(long)]
    no_calibrate: bool,
    /// First seed of the simulated runs
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Override a simulated key (repeatable); kernel.preempt and kernel.hz
    /// are the host's by default
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Before each real run, wait up to this long for the host to be idle
    /// for 0.5 s (other tasks below ~4 % of a CPU); 0 does not wait
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    wait_idle: f64,
    /// The perf binary to run
    #[arg(long, value_name = "PATH", default_value = "perf")]
    perf: PathBuf,
    /// Write every run's numbers and the table as JSON to this file, atomically
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Messaging's group counts, increasing, comma-separated (`1,4,16` for
    /// a host with many CPUs)
    #[arg(long, value_name = "LIST", default_value = "1,4")]
    groups: String,
    /// The targets: `vm` (issue 20's, for the 2-vCPU VM) or `host16`
    /// (issue 32's, stricter, for the 16-CPU host)
    #[arg(long, value_enum, default_value_t = TargetSet::Vm)]
    targets: TargetSet,
    /// Read the real runs recorded in DIR (`{s,sp,st,spt}_g{G}_l{L}.txt`,
    /// `{unpinned,pinned}_l{L}.txt`) instead of running perf; needs a
    /// preset or machine file as --machine
    #[arg(long, value_name = "DIR")]
    real_from: Option<PathBuf>,
}

/// Which targets the rows are judged by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TargetSet {
    /// Issue 20's, for the 2-vCPU VM under this project.
    Vm,
    /// Issue 32's, for the 16-CPU host of tests/data/host16.
    Host16,
}

impl TargetSet {
    pub fn name(&self) -> &'static str {
        match self {
            TargetSet::Vm => "vm (issue 20)",
            TargetSet::Host16 => "host16 (issue 32)",
        }
    }
}

/// A compared benchmark.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bench {
    /// `perf bench sched pipe`, both processes on one CPU when pinned.
    Pipe { pinned: bool },
    /// `perf bench sched messaging [-p] [-t] -g GROUPS`.
    Messaging {
        pipe: bool,
        threads: bool,
        groups: u64,
    },
}

/// Every benchmark, in table order, messaging at each of `groups`.
pub fn all(groups: &[u64]) -> Vec<Bench> {
    let mut v = vec![Bench::Pipe { pinned: false }, Bench::Pipe { pinned: true }];
    for (pipe, threads) in [(false, false), (true, false), (false, true), (true, true)] {
        for &groups in groups {
            v.push(Bench::Messaging {
                pipe,
                threads,
                groups,
            });
        }
    }
    v
}

/// Messaging's senders and receivers per group (perf's num_fds).
const FDS: u64 = 20;
/// The CPU pinned pipe runs on.
const PIN_CPU: usize = 0;
/// A real run is disturbed when other tasks used more CPU than this share
/// of its wall time, and more than BUSY_MIN_S (/proc/stat counts in ticks).
pub(super) const BUSY_SHARE: f64 = 0.10;
const BUSY_MIN_S: f64 = 0.03;
/// Under `--targets host16`, a ratio of switches per message between two
/// group counts within this many % of 1 is a flat curve: the spread of
/// time per message between runs on that host is 1–5 % for sockets and
/// 4–10 % for pipes (tests/data/host16/raw/README.md).
const FLAT_PCT: f64 = 10.0;

/// `--groups`: positive group counts, increasing (the ratio rows compare
/// each with the next).
pub fn parse_groups(list: &str) -> Result<Vec<u64>, String> {
    let groups = list
        .split(',')
        .map(|g| g.trim().parse::<u64>().ok().filter(|&g| g > 0))
        .collect::<Option<Vec<u64>>>()
        .ok_or_else(|| format!("--groups `{list}`: give positive integers, e.g. 1,4,16"))?;
    if groups.windows(2).any(|w| w[0] >= w[1]) {
        return Err(format!("--groups `{list}`: give the counts increasing"));
    }
    Ok(groups)
}

impl Bench {
    pub fn name(&self) -> String {
        match *self {
            Bench::Pipe { pinned: false } => "pipe".into(),
            Bench::Pipe { pinned: true } => format!("pipe, taskset -c {PIN_CPU}"),
            Bench::Messaging {
                pipe,
                threads,
                groups,
            } => format!(
                "messaging{}{} -g {groups}",
                if pipe { " -p" } else { "" },
                if threads { " -t" } else { "" }
            ),
        }
    }

    /// Loops per run: about 0.5 s of real time on the 2-vCPU VM of
    /// docs/validate-bench.md, a fifth with `quick`. Messaging's fall as
    /// 1/groups, so that every group count sends about as many messages
    /// (as the 16-CPU host's recording did, with L = 3000/G).
    pub fn loops(&self, quick: bool) -> u64 {
        let full = match *self {
            Bench::Pipe { pinned: false } => 60_000,
            Bench::Pipe { pinned: true } => 200_000,
            Bench::Messaging { pipe, groups, .. } => (if pipe { 2000 } else { 1000 }) / groups,
        };
        quicker(full, quick)
    }

    /// Operations per run: round trips, or messages (each of a group's
    /// senders writes `loops` messages to each of its receivers).
    pub fn ops(&self, loops: u64) -> u64 {
        match *self {
            Bench::Pipe { .. } => loops,
            Bench::Messaging { groups, .. } => groups * FDS * FDS * loops,
        }
    }

    pub fn unit(&self) -> &'static str {
        match self {
            Bench::Pipe { .. } => "op",
            Bench::Messaging { .. } => "msg",
        }
    }

    /// perf's arguments after `perf`.
    pub fn perf_args(&self, loops: u64) -> Vec<String> {
        let mut a: Vec<String> = ["bench", "sched"].map(String::from).to_vec();
        match *self {
            Bench::Pipe { .. } => a.push("pipe".into()),
            Bench::Messaging {
                pipe,
                threads,
                groups,
            } => {
                a.push("messaging".into());
                a.extend(pipe.then(|| "-p".into()));
                a.extend(threads.then(|| "-t".into()));
                a.extend(["-g".into(), groups.to_string()]);
            }
        }
        a.extend(["-l".into(), loops.to_string()]);
        a
    }

    pub fn pin(&self) -> Option<usize> {
        matches!(self, Bench::Pipe { pinned: true }).then_some(PIN_CPU)
    }

    /// The schedlab workload. Pipe is perf 6.1's loop (one token bouncing).
    pub fn workload(&self, loops: u64) -> String {
        match *self {
            Bench::Pipe { pinned } => format!(
                "pipe:loops={loops},variant=pingpong{}",
                if pinned {
                    format!(",cpu={PIN_CPU}")
                } else {
                    String::new()
                }
            ),
            Bench::Messaging {
                pipe,
                threads,
                groups,
            } => format!(
                "hackbench:groups={groups},fds={FDS},loops={loops},ipc={},mode={},output=perf",
                if pipe { "pipe" } else { "socket" },
                if threads { "thread" } else { "process" }
            ),
        }
    }

    /// Targets of usecs, switches, migrations and CPU time per operation.
    pub fn targets(&self, set: TargetSet) -> [Target; 4] {
        match (self, set) {
            (Bench::Pipe { .. }, _) => [
                Target::Within(25.0),
                Target::Within(5.0),
                Target::Info,
                Target::Info,
            ],
            (Bench::Messaging { .. }, TargetSet::Vm) => [
                Target::Within(35.0),
                Target::Within(50.0),
                Target::Factor(3.0),
                Target::Info,
            ],
            (Bench::Messaging { .. }, TargetSet::Host16) => [
                Target::Within(25.0),
                Target::Within(35.0),
                Target::Factor(3.0),
                Target::Within(25.0),
            ],
        }
    }
}

/// A fifth of the loops with `quick` (at least one).
fn quicker(loops: u64, quick: bool) -> u64 {
    if quick {
        (loops / 5).max(1)
    } else {
        loops.max(1)
    }
}

/// The target of the switches-per-message ratio between two group counts.
pub fn trend_target(set: TargetSet) -> Target {
    match set {
        TargetSet::Vm => Target::Trend(2.0),
        TargetSet::Host16 => Target::Shape(FLAT_PCT),
    }
}

/// One real run per operation.
pub fn real_sample(b: &Bench, loops: u64, r: &RealRun) -> Sample {
    let ops = b.ops(loops) as f64;
    let c = &r.counters;
    Sample {
        usecs: r.bench.usecs_per_op.unwrap_or(r.bench.total_s * 1e6 / ops),
        switches: c.context_switches as f64 / ops,
        migrations: c.cpu_migrations as f64 / ops,
        cpu_us: c.task_clock_ns as f64 / 1e3 / ops,
    }
}

/// One simulated run per operation, from its flattened results.
pub fn sim_sample(b: &Bench, loops: u64, m: &Metrics) -> Result<Sample, String> {
    let ops = b.ops(loops) as f64;
    let get = |k: &str| {
        m.get(k)
            .and_then(Value::as_f64)
            .ok_or_else(|| format!("the simulated run has no `{k}`"))
    };
    Ok(Sample {
        usecs: get("benchmark.time_s")? * 1e6 / ops,
        switches: get("totals.context_switches")? / ops,
        migrations: get("totals.cpu_migrations")? / ops,
        cpu_us: get("totals.task_clock_ns")? / 1e3 / ops,
    })
}

/// Other tasks used enough CPU during the run to disturb it.
pub fn disturbed(r: &RealRun) -> bool {
    r.other_cpu_s > BUSY_MIN_S.max(BUSY_SHARE * r.wall_s)
}

/// The simulated scenario of a benchmark; Err is bad input.
fn scenario(
    a: &BenchArgs,
    machine: &str,
    host: &[HostSetting],
    workload: &str,
) -> Result<(Source, Scenario), String> {
    let (src, mut t) =
        Source::parse(Some("<validate bench>".into()), String::new()).map_err(|e| e.to_string())?;
    let mut sets: Vec<(String, toml::Value)> = vec![
        ("machine.preset".into(), toml::Value::String(machine.into())),
        ("sim.seed".into(), toml::Value::Integer(a.seed as i64)),
    ];
    sets.extend(
        host.iter()
            .map(|h| (h.key.to_string(), parse_set_value(&h.value))),
    );
    for kv in &a.sets {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("--set `{kv}`: expected KEY=VALUE"))?;
        sets.push((k.trim().to_string(), parse_set_value(v.trim())));
    }
    for (k, v) in sets {
        set_key(&mut t, &k, v).map_err(|e| e.to_string())?;
    }
    let w = workload_table(workload).map_err(|e| e.to_string())?;
    t.insert("workload".into(), toml::Value::Array(vec![w]));
    let sc = Scenario::resolve(&src, &t).map_err(|e| e.to_string())?;
    crate::machine::from_spec(&sc.machine).map_err(|e| format!("--machine: {e}"))?;
    Ok((src, sc))
}

/// Everything measured for one benchmark.
struct Measured {
    bench: Bench,
    /// Loops of the real runs and of the simulated ones (fewer with
    /// `--real-from … --quick`; the rows compare per operation).
    loops: u64,
    sim_loops: u64,
    real: Vec<RealRun>,
    sim: Vec<Sample>,
}

/// Run the check; Err is "cannot run" (exit 2).
pub fn main(a: &BenchArgs) -> Result<i32, String> {
    if a.runs == 0 {
        return Err("--runs must be at least 1".into());
    }
    if !(0.0..=3600.0).contains(&a.wait_idle) {
        return Err(format!(
            "--wait-idle {}: give 0 to 3600 seconds",
            a.wait_idle
        ));
    }
    let json_dir = a.json.as_ref().and_then(|p| p.parent());
    if let Some(d) = json_dir.filter(|d| !d.as_os_str().is_empty() && !d.is_dir()) {
        return Err(format!("--json: directory {} does not exist", d.display()));
    }
    let benches = all(&parse_groups(&a.groups)?);
    let (header, measured) = match &a.real_from {
        Some(dir) => from_recording(a, dir, &benches)?,
        None => live(a, &benches)?,
    };
    let rows = rows(&measured, a.targets);
    print!("{}", text(a, &header, &measured, &rows));
    if let Some(path) = &a.json {
        let v = to_json(a, &header, &measured, &rows);
        let text = serde_json::to_string_pretty(&crate::report::meta::with_meta(v))
            .unwrap_or_default()
            + "\n";
        write_atomic(path, text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(if report::score(&rows).1 == 0 { 0 } else { 1 })
}

/// perf run here (after this host is calibrated, with `--machine host`).
fn live(a: &BenchArgs, benches: &[Bench]) -> Result<(Header, Vec<Measured>), String> {
    let host = hostkernel::detect();
    let plan: Vec<Planned> = benches
        .iter()
        .map(|b| (*b, b.loops(a.quick), b.loops(a.quick)))
        .collect();
    // Every scenario is checked before perf runs, so bad flags cost nothing.
    let mut scenarios = scenarios(a, &a.machine, &host, &plan)?;
    let version = perf::version(&a.perf)?;
    let calibrated = calibrate_host(a)?;
    if let Some(c) = &calibrated {
        scenarios = self::scenarios(a, &c.path.display().to_string(), &host, &plan)?;
    }
    let real = measure_real(a, benches)?;
    let measured = simulate(a, &scenarios, &plan, real)?;
    let header = Header {
        real: format!(
            "{}, kernel {}, idle driver {}; {} run(s) each",
            version,
            read_line("/proc/sys/kernel/osrelease"),
            read_line("/sys/devices/system/cpu/cpuidle/current_driver"),
            a.runs
        ),
        perf: Some(version),
        host,
        machine: machine_text(&scenarios[0].1),
        calibration: calibrated.as_ref().map(|c| c.text.clone()),
        recorded: None,
    };
    Ok((header, measured))
}

/// The real runs read from `dir`, simulated with their loops (a fifth with
/// --quick) on a preset or machine file: this host's costs and kernel
/// settings are not the recorded host's.
fn from_recording(
    a: &BenchArgs,
    dir: &Path,
    benches: &[Bench],
) -> Result<(Header, Vec<Measured>), String> {
    if a.machine == "host" {
        return Err(
            "--real-from: give --machine a preset or a machine file of the host \
                    that recorded the runs (`host` is this host, and it is not calibrated \
                    in this mode)"
                .into(),
        );
    }
    let recordings = benches
        .iter()
        .map(|b| recorded::read(dir, b))
        .collect::<Result<Vec<_>, _>>()?;
    let plan: Vec<Planned> = benches
        .iter()
        .zip(&recordings)
        .map(|(b, r)| (*b, r.loops, quicker(r.loops, a.quick)))
        .collect();
    let scenarios = scenarios(a, &a.machine, &[], &plan)?;
    let real = recordings.iter().map(|r| r.runs.clone()).collect();
    let measured = simulate(a, &scenarios, &plan, real)?;
    let title = recorded::readme_title(dir);
    let runs: Vec<String> = recordings
        .iter()
        .map(|r| r.runs.len().to_string())
        .collect();
    let header = Header {
        real: format!(
            "real runs recorded in {}{}; {} run(s) each",
            dir.display(),
            title.as_ref().map_or(String::new(), |t| format!(" ({t})")),
            dedup_join(&runs)
        ),
        perf: None,
        host: Vec::new(),
        machine: machine_text(&scenarios[0].1),
        calibration: None,
        recorded: Some((dir.to_path_buf(), title)),
    };
    Ok((header, measured))
}

/// The distinct values in order, joined by `/`.
fn dedup_join(v: &[String]) -> String {
    let mut out: Vec<&str> = Vec::new();
    for s in v {
        if !out.contains(&s.as_str()) {
            out.push(s);
        }
    }
    out.join("/")
}

/// A benchmark with the loops of its real and of its simulated runs.
type Planned = (Bench, u64, u64);

/// The scenario of every planned benchmark on `machine`.
fn scenarios(
    a: &BenchArgs,
    machine: &str,
    host: &[HostSetting],
    plan: &[Planned],
) -> Result<Vec<(Source, Scenario)>, String> {
    plan.iter()
        .map(|(b, _, loops)| scenario(a, machine, host, &b.workload(*loops)))
        .collect()
}

fn machine_text(sc: &Scenario) -> String {
    crate::machine::from_spec(&sc.machine)
        .map_or_else(|e| e, |m| format!("{} ({})", m.name, m.description))
}

/// Simulate every benchmark over `--runs` seeds beside its real runs.
fn simulate(
    a: &BenchArgs,
    scenarios: &[(Source, Scenario)],
    plan: &[Planned],
    real: Vec<Vec<RealRun>>,
) -> Result<Vec<Measured>, String> {
    eprintln!("simulating {} benchmarks × {} seeds", plan.len(), a.runs);
    let mut measured = Vec::new();
    for ((&(b, loops, sim_loops), side), real) in plan.iter().zip(scenarios).zip(real) {
        let sim = run_side(side, a.runs)
            .map_err(|e| format!("simulating {}: {e}", b.name()))?
            .iter()
            .map(|m| sim_sample(&b, sim_loops, m))
            .collect::<Result<Vec<_>, _>>()?;
        measured.push(Measured {
            bench: b,
            loops,
            sim_loops,
            real,
            sim,
        });
    }
    Ok(measured)
}

/// The real runs, round by round (each benchmark once per round, so a busy
/// spell of the host spreads over benchmarks instead of spoiling one).
fn measure_real(a: &BenchArgs, benches: &[Bench]) -> Result<Vec<Vec<RealRun>>, String> {
    let mut out: Vec<Vec<RealRun>> = benches.iter().map(|_| Vec::new()).collect();
    for round in 1..=a.runs {
        eprintln!("real runs: round {round} of {}", a.runs);
        for (b, runs) in benches.iter().zip(&mut out) {
            let loops = b.loops(a.quick);
            if a.wait_idle > 0.0 && !perf::wait_idle(Duration::from_secs_f64(a.wait_idle))? {
                eprintln!(
                    "  {}: the host stayed busy for {} s; running anyway",
                    b.name(),
                    a.wait_idle
                );
            }
            runs.push(perf::run(&a.perf, &b.perf_args(loops), b.pin())?);
        }
    }
    Ok(out)
}

/// The metric rows of every benchmark, then the switch ratios between
/// consecutive group counts of each messaging variant.
fn rows(measured: &[Measured], set: TargetSet) -> Vec<Row> {
    let mut rows = Vec::new();
    for m in measured {
        let real: Vec<Sample> = m
            .real
            .iter()
            .map(|r| real_sample(&m.bench, m.loops, r))
            .collect();
        rows.extend(report::metric_rows(
            &m.bench.name(),
            m.bench.unit(),
            m.bench.targets(set),
            &real,
            &m.sim,
        ));
    }
    let switches = |b: &Bench| {
        rows.iter()
            .find(|r| r.bench == b.name() && r.metric.starts_with("switches"))
            .cloned()
    };
    let mut trends = Vec::new();
    for pair in measured.windows(2) {
        let (from, to) = (pair[0].bench, pair[1].bench);
        let (Bench::Messaging { groups: g, .. }, Bench::Messaging { groups: h, .. }) = (from, to)
        else {
            continue;
        };
        // Benchmarks are ordered variant by variant, groups increasing.
        if h <= g {
            continue;
        }
        if let (Some(a), Some(b)) = (switches(&from), switches(&to)) {
            let name = format!("{}→{h}", from.name());
            trends.push(report::ratio_row(&name, &a, &b, trend_target(set)));
        }
    }
    rows.extend(trends);
    rows
}

/// What the run was compared against.
struct Header {
    /// Where the real numbers came from, for the first line.
    real: String,
    /// perf's version, when perf ran.
    perf: Option<String>,
    host: Vec<HostSetting>,
    machine: String,
    /// The machine file of this run's calibration, if it made one.
    calibration: Option<String>,
    /// --real-from's directory and its README's first line.
    recorded: Option<(PathBuf, Option<String>)>,
}

/// This run's calibration of the host, as a machine file the simulated
/// scenarios load; the file is removed when this is dropped.
struct Calibrated {
    text: String,
    path: PathBuf,
}

impl Drop for Calibrated {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// `--machine host` (unless --no-calibrate): measure this host's
/// primitives now, as `schedlab calibrate` does with fewer samples, so that
/// the simulation runs with the costs of the machine the real runs see.
/// A VM's host, idle driver and load change from one day to the next: the
/// `vm-2` preset's constants are one day's.
fn calibrate_host(a: &BenchArgs) -> Result<Option<Calibrated>, String> {
    if a.no_calibrate || a.machine != "host" {
        return Ok(None);
    }
    let plan = crate::calibrate::Plan {
        scale: if a.quick { 0.25 } else { 1.0 },
        runs: if a.quick { 1 } else { 2 },
    };
    eprintln!(
        "calibrating this host ({} run(s) of `schedlab calibrate`'s primitives)",
        plan.runs
    );
    let mut c =
        crate::calibrate::measure(&plan).map_err(|e| format!("calibrating the host: {e}"))?;
    c.machine.name = "host-calibrated".into();
    let text = crate::calibrate::machine_file(&c);
    let path = std::env::temp_dir().join(format!("schedlab-validate-{}.toml", std::process::id()));
    write_atomic(&path, text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(Some(Calibrated { text, path }))
}

fn kernel_line(h: &Header, sets: &[String]) -> String {
    let mut parts: Vec<String> = h
        .host
        .iter()
        .map(|s| format!("{}={} ({})", s.key, s.value, s.source))
        .collect();
    if parts.is_empty() && h.recorded.is_some() {
        parts.push("schedlab's default kernel.preempt and kernel.hz".into());
    } else if parts.is_empty() {
        parts.push("the host's kernel.preempt and kernel.hz unreadable".into());
    }
    parts.extend(sets.iter().map(|kv| format!("--set {kv}")));
    parts.join(", ")
}

fn text(a: &BenchArgs, h: &Header, measured: &[Measured], rows: &[Row]) -> String {
    let mut s = format!(
        "schedlab validate bench: {}\n\
         simulated: machine {}, {}; seeds {}..{}\n\
         per op: pipe round trip, messaging message; targets {}\n\n",
        h.real,
        h.machine,
        kernel_line(h, &a.sets),
        a.seed,
        a.seed + a.runs - 1,
        a.targets.name(),
    );
    s += &report::table(rows);
    s += &busy_text(measured);
    let (judged, missed) = report::score(rows);
    s += &if missed == 0 {
        format!("\nPASS: all {judged} targets hold\n")
    } else {
        format!("\nMISS: {missed} of {judged} targets missed (rows marked MISS)\n")
    };
    s
}

/// The warning about disturbed real runs, like `validate pelt`'s.
fn busy_text(measured: &[Measured]) -> String {
    let hits: Vec<String> = measured
        .iter()
        .flat_map(|m| {
            m.real
                .iter()
                .enumerate()
                .filter(|(_, r)| disturbed(r))
                .map(|(i, r)| {
                    format!(
                        "  {} run {}: other tasks used {:.0} ms of CPU in {:.2} s\n",
                        m.bench.name(),
                        i + 1,
                        r.other_cpu_s * 1e3,
                        r.wall_s
                    )
                })
        })
        .collect();
    let total = measured.iter().map(|m| m.real.len()).sum::<usize>();
    let steal: f64 = measured
        .iter()
        .flat_map(|m| &m.real)
        .map(|r| r.steal_s)
        .sum();
    let mut s = String::new();
    if !hits.is_empty() {
        s += &format!(
            "\nwarning: the host was busy: {} of {total} real runs were disturbed (other tasks \
             above {:.0}% of the run's wall time, /proc/stat); re-run on an idle host or with \
             --wait-idle 60:\n",
            hits.len(),
            BUSY_SHARE * 100.0
        );
        s += &hits.concat();
    }
    if steal > 0.0 {
        s += &format!(
            "note: the hypervisor stole {:.0} ms from this VM during the real runs\n",
            steal * 1e3
        );
    }
    s
}

fn read_line(path: &str) -> String {
    std::fs::read_to_string(path).map_or_else(|_| "unknown".into(), |s| s.trim().to_string())
}

fn to_json(a: &BenchArgs, h: &Header, measured: &[Measured], rows: &[Row]) -> Value {
    let sample = |s: &Sample| json!({ "usecs": s.usecs, "switches": s.switches, "migrations": s.migrations, "cpu_usecs": s.cpu_us });
    let benches: Vec<Value> = measured
        .iter()
        .map(|m| {
            let real: Vec<Value> = m
                .real
                .iter()
                .map(|r| {
                    json!({
                        "per_op": sample(&real_sample(&m.bench, m.loops, r)),
                        "total_s": r.bench.total_s,
                        "context_switches": r.counters.context_switches,
                        "cpu_migrations": r.counters.cpu_migrations,
                        "task_clock_ns": r.counters.task_clock_ns,
                        "wall_s": r.wall_s,
                        "other_cpu_s": r.other_cpu_s,
                        "steal_s": r.steal_s,
                        "disturbed": disturbed(r),
                    })
                })
                .collect();
            json!({
                "name": m.bench.name(),
                "command": perf::command_line(&perf::stat_command(
                    &a.perf,
                    &m.bench.perf_args(m.loops),
                    m.bench.pin()
                )),
                "workload": m.bench.workload(m.sim_loops),
                "loops": m.loops,
                "sim_loops": m.sim_loops,
                "ops": m.bench.ops(m.loops),
                "unit": m.bench.unit(),
                "real": real,
                "sim": m.sim.iter().map(sample).collect::<Vec<_>>(),
            })
        })
        .collect();
    let (judged, missed) = report::score(rows);
    json!({
        "perf_version": h.perf,
        "kernel": h.perf.as_ref().map(|_| read_line("/proc/sys/kernel/osrelease")),
        "idle_driver": h.perf.as_ref().map(|_| read_line("/sys/devices/system/cpu/cpuidle/current_driver")),
        "real_from": h.recorded.as_ref().map(|(d, _)| d.display().to_string()),
        "real_from_readme": h.recorded.as_ref().and_then(|(_, t)| t.clone()),
        "groups": parse_groups(&a.groups).unwrap_or_default(),
        "targets": a.targets.name(),
        "runs": a.runs,
        "quick": a.quick,
        "wait_idle_s": a.wait_idle,
        "machine": h.machine,
        "calibration": h.calibration,
        "seeds": (a.seed..a.seed + a.runs).collect::<Vec<_>>(),
        "sim_settings": h.host.iter().map(|s| json!({"key": s.key, "value": s.value, "source": s.source})).collect::<Vec<_>>(),
        "extra_sets": a.sets,
        "busy_threshold": { "share_of_wall": BUSY_SHARE, "min_s": BUSY_MIN_S },
        "benchmarks": benches,
        "rows": rows.iter().map(Row::to_json).collect::<Vec<_>>(),
        "targets_judged": judged,
        "targets_missed": missed,
        "pass": missed == 0,
    })
}
