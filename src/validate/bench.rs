//! `schedlab validate bench`: the installed `perf bench sched pipe` (across
//! CPUs and pinned) and `perf bench sched messaging` (pipe/socket ×
//! thread/process × 1 and 4 groups) for real under `perf stat`, then the
//! same benchmarks simulated over several seeds, compared per operation
//! against the targets of issue 20.

use super::bench_report::{self as report, Row, Sample, Target};
use super::perf::{self, RealRun};
use crate::compare::{run_side, Metrics};
use crate::machine::hostkernel::{self, HostSetting};
use crate::scenario::{parse_set_value, set_key, workload_table, Scenario, Source};
use crate::util::fs::write_atomic;
use clap::Args;
use serde_json::{json, Value};
use std::path::PathBuf;
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

/// Every benchmark, in table order.
pub fn all() -> Vec<Bench> {
    let mut v = vec![Bench::Pipe { pinned: false }, Bench::Pipe { pinned: true }];
    for (pipe, threads) in [(false, false), (true, false), (false, true), (true, true)] {
        for groups in [1, 4] {
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
const BUSY_SHARE: f64 = 0.10;
const BUSY_MIN_S: f64 = 0.03;

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
    /// docs/validate-bench.md, a fifth with `quick`.
    pub fn loops(&self, quick: bool) -> u64 {
        let full = match *self {
            Bench::Pipe { pinned: false } => 60_000,
            Bench::Pipe { pinned: true } => 200_000,
            Bench::Messaging { pipe, groups, .. } => (if pipe { 2000 } else { 1000 }) / groups,
        };
        if quick {
            full / 5
        } else {
            full
        }
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
    pub fn targets(&self) -> [Target; 4] {
        match self {
            Bench::Pipe { .. } => [
                Target::Within(25.0),
                Target::Within(5.0),
                Target::Info,
                Target::Info,
            ],
            Bench::Messaging { .. } => [
                Target::Within(35.0),
                Target::Within(50.0),
                Target::Factor(3.0),
                Target::Info,
            ],
        }
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
    loops: u64,
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
    let host = hostkernel::detect();
    let benches = all();
    let scenarios_on = |machine: &str| {
        benches
            .iter()
            .map(|b| scenario(a, machine, &host, &b.workload(b.loops(a.quick))))
            .collect::<Result<Vec<_>, _>>()
    };
    let mut scenarios = scenarios_on(&a.machine)?;
    let version = perf::version(&a.perf)?;
    let calibrated = calibrate_host(a)?;
    if let Some(c) = &calibrated {
        scenarios = scenarios_on(&c.path.display().to_string())?;
    }
    let real = measure_real(a, &benches)?;
    eprintln!("simulating {} benchmarks × {} seeds", benches.len(), a.runs);
    let mut measured = Vec::new();
    for ((b, side), real) in benches.iter().zip(&scenarios).zip(real) {
        let loops = b.loops(a.quick);
        let sim = run_side(side, a.runs)
            .map_err(|e| format!("simulating {}: {e}", b.name()))?
            .iter()
            .map(|m| sim_sample(b, loops, m))
            .collect::<Result<Vec<_>, _>>()?;
        measured.push(Measured {
            bench: *b,
            loops,
            real,
            sim,
        });
    }
    let rows = rows(&measured);
    let machine = crate::machine::from_spec(&scenarios[0].1.machine)
        .map_or_else(|e| e, |m| format!("{} ({})", m.name, m.description));
    let header = Header {
        perf: version,
        host,
        machine,
        calibration: calibrated.as_ref().map(|c| c.text.clone()),
    };
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

/// The metric rows of every benchmark, then the g1 → g4 switch ratios.
fn rows(measured: &[Measured]) -> Vec<Row> {
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
            m.bench.targets(),
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
    for m in measured {
        let Bench::Messaging {
            pipe,
            threads,
            groups: 1,
        } = m.bench
        else {
            continue;
        };
        let g4 = Bench::Messaging {
            pipe,
            threads,
            groups: 4,
        };
        if let (Some(from), Some(to)) = (switches(&m.bench), switches(&g4)) {
            let name = m.bench.name().replace("-g 1", "-g 1→4");
            trends.push(report::ratio_row(&name, &from, &to, Target::Trend(2.0)));
        }
    }
    rows.extend(trends);
    rows
}

/// What the run was compared against.
struct Header {
    perf: String,
    host: Vec<HostSetting>,
    machine: String,
    /// The machine file of this run's calibration, if it made one.
    calibration: Option<String>,
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
    if parts.is_empty() {
        parts.push("the host's kernel.preempt and kernel.hz unreadable".into());
    }
    parts.extend(sets.iter().map(|kv| format!("--set {kv}")));
    parts.join(", ")
}

fn text(a: &BenchArgs, h: &Header, measured: &[Measured], rows: &[Row]) -> String {
    let mut s = format!(
        "schedlab validate bench: {}, kernel {}, idle driver {}; {} run(s) each\n\
         simulated: machine {}, {}; seeds {}..{}\n\
         per op: pipe round trip, messaging message; targets from issue 20\n\n",
        h.perf,
        read_line("/proc/sys/kernel/osrelease"),
        read_line("/sys/devices/system/cpu/cpuidle/current_driver"),
        a.runs,
        h.machine,
        kernel_line(h, &a.sets),
        a.seed,
        a.seed + a.runs - 1,
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
                "workload": m.bench.workload(m.loops),
                "loops": m.loops,
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
        "kernel": read_line("/proc/sys/kernel/osrelease"),
        "idle_driver": read_line("/sys/devices/system/cpu/cpuidle/current_driver"),
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
