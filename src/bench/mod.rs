//! `schedlab bench`: the simulator's own speed. Each case runs in a child
//! process so that its peak RSS (VmHWM) is its own; the child reports one
//! JSON line, the parent prints the table (or writes `--json`).

pub(crate) mod distributions;

use crate::run::run;
use crate::scenario::{Scenario, Source};
use clap::Args;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Instant;

/// One bench case: a short id for `--case`, its display name, the machine,
/// the workload and the simulated duration (None: until the workload ends).
pub struct Case {
    pub id: &'static str,
    pub name: &'static str,
    machine: &'static str,
    workload: &'static str,
    duration: Option<&'static str>,
    /// Extra scenario text (kernel settings).
    extra: &'static str,
}

const fn case(
    id: &'static str,
    name: &'static str,
    machine: &'static str,
    workload: &'static str,
    duration: Option<&'static str>,
) -> Case {
    Case {
        id,
        name,
        machine,
        workload,
        duration,
        extra: "",
    }
}

/// The cases, in the order printed. The last one writes an ftrace text
/// trace to a temporary file: the cost of tracing, and trace events
/// written per wall second.
pub const CASES: &[Case] = &[
    case(
        "periodic-64",
        "periodic-64 on smp:cpus=16",
        "smp:cpus=16",
        "periodic:tasks=64,run=1ms,sleep=1ms",
        Some("10s"),
    ),
    case(
        "periodic-256",
        "periodic-256 on smp:cpus=64",
        "smp:cpus=64",
        "periodic:tasks=256,run=1ms,sleep=1ms",
        Some("10s"),
    ),
    case(
        "hackbench",
        "hackbench g10 l1000 on xeon-8269cy",
        "xeon-8269cy",
        "hackbench:groups=10,loops=1000",
        None,
    ),
    case(
        "schbench",
        "schbench -m 2 -t 8 on xeon-8269cy",
        "xeon-8269cy",
        "schbench:m=2,t=8",
        Some("2s"),
    ),
    case(
        "hackbench-pipe-power10-96",
        "hackbench pipe g60 process power10-96",
        "power10-96",
        "hackbench:groups=60,loops=20,ipc=pipe,mode=process",
        None,
    ),
    case(
        "kernbench",
        "kernbench j32 on xeon-8269cy",
        "xeon-8269cy",
        "kernbench:jobs=32",
        None,
    ),
    case(
        "stress-ng-power10-320",
        "stress-ng --cpu 320 -l 50 on power10-320",
        "power10-320",
        "stress-ng:cpu=320,cpu-load=50",
        Some("2s"),
    ),
    case(
        "hackbench-milan",
        "hackbench g10 on milan-256",
        "milan-256",
        "hackbench:groups=10",
        None,
    ),
    // The core's targets again, every task three cgroup levels deep.
    case(
        "periodic-64-deep",
        "periodic-64 on smp:cpus=16, 3 levels deep",
        "smp:cpus=16",
        "periodic:tasks=64,run=1ms,sleep=1ms,cgroup=/bench/a/b",
        Some("10s"),
    ),
    case(
        "periodic-256-deep",
        "periodic-256 on smp:cpus=64, 3 levels deep",
        "smp:cpus=64",
        "periodic:tasks=256,run=1ms,sleep=1ms,cgroup=/bench/a/b",
        Some("10s"),
    ),
    case(
        "hackbench-deep",
        "hackbench g10 l1000 on xeon, 3 levels deep",
        "xeon-8269cy",
        "hackbench:groups=10,loops=1000,cgroup=/bench/a/b",
        None,
    ),
    case(
        "periodic-64-trace",
        "periodic-64 on smp:cpus=16 --trace",
        "smp:cpus=16",
        "periodic:tasks=64,run=1ms,sleep=1ms",
        Some("2s"),
    ),
    // Big machines, 4 tasks per CPU (issue 17).
    case(
        "periodic-1024cpus",
        "periodic-4096 on smp:cpus=1024",
        "smp:cpus=1024",
        "periodic:tasks=4096,run=1ms,sleep=1ms",
        Some("200ms"),
    ),
    case(
        "periodic-4096cpus",
        "periodic-16384 on smp:cpus=4096",
        "smp:cpus=4096",
        "periodic:tasks=16384,run=1ms,sleep=1ms",
        Some("20ms"),
    ),
    // Seed 002's workload on its biggest machine (hz=100, preempt=none),
    // at 0.1 % of the seed's 100000 loops: ×1000 is one side of the full
    // run (the cost is linear in loops once the groups are forked).
    Case {
        extra: "[kernel]\nhz = 100\npreempt = \"none\"\n",
        ..case(
            "hackbench-pipe-power10-320",
            "hackbench pipe g60 l100 process power10-320",
            "power10-320",
            "hackbench:groups=60,fds=20,loops=100,ipc=pipe,mode=process",
            None,
        )
    },
    // The cross-CPU line and lock bookkeeping at work (issue 32): the
    // 16-CPU host's own machine, messaging over sockets as measured there.
    Case {
        extra: "[kernel]\nhz = 250\npreempt = \"none\"\n",
        ..case(
            "messaging-emr-16",
            "messaging g4 l750 sockets on emr-16",
            "emr-16",
            "hackbench:groups=4,fds=20,loops=750,output=perf",
            None,
        )
    },
];

/// The index of the traced case in CASES.
const TRACED: usize = 11;

/// The group the `cgroup=` cases run in.
const BENCH_CGROUP: &str = "[[cgroup]]\npath = \"/bench/a/b\"\n";

#[derive(Args)]
pub struct BenchArgs {
    /// Run only this case, by id or name (repeatable); an unknown one lists them
    #[arg(long = "case", value_name = "NAME")]
    cases: Vec<String>,
    /// Also write the results as JSON to this file, atomically
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Print a digest of each case's results (its JSON without wall-clock
    /// fields, and the traced case's ftrace text) instead of speeds: equal
    /// digests mean equal results
    #[arg(long)]
    digest: bool,
    /// Compare this build's results with those of the binary OLD in
    /// distribution: each of a set of small scenarios over --seeds seeds
    /// with both, Welch's test per metric, Holm-corrected (`--case`
    /// picks among these scenarios); exit 1 when a metric differs
    #[arg(long, value_name = "OLD")]
    distributions: Option<PathBuf>,
    /// Seeds per scenario and build for --distributions (1..=N)
    #[arg(long, value_name = "N", default_value_t = 30)]
    seeds: u32,
    /// Run case N in this process and print its numbers as JSON (the
    /// parent runs each case so, to measure its own peak RSS)
    #[arg(long, hide = true)]
    child: Option<usize>,
}

/// FNV-1a, 64 bits: a stable hash (std's hashers may change between
/// releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The results of a run as a digest: its JSON without `sim.wall_ns` and
/// `meta` (build, command line, date).
fn results_digest(out: &crate::run::RunOutput) -> u64 {
    let mut v = crate::report::json::to_json(&out.view());
    if let Some(o) = v.as_object_mut() {
        o.remove("meta");
    }
    if let Some(sim) = v.get_mut("sim").and_then(|s| s.as_object_mut()) {
        sim.remove("wall_ns");
    }
    fnv1a(v.to_string().as_bytes())
}

/// The scenario of case `c`, tracing to `trace` for the traced case, cut
/// at `cut_ns` of simulated time when given.
fn scenario(i: usize, trace: &std::path::Path, cut_ns: Option<u64>) -> (Source, Scenario) {
    let c = &CASES[i];
    let mut text = format!("[machine]\npreset = \"{}\"\n{}", c.machine, c.extra);
    match (cut_ns, c.duration) {
        (Some(ns), _) => text += &format!("[sim]\nduration = \"{ns}ns\"\n"),
        (None, Some(d)) => text += &format!("[sim]\nduration = \"{d}\"\n"),
        (None, None) => {}
    }
    if c.workload.contains("cgroup=") {
        text += BENCH_CGROUP;
    }
    if i == TRACED {
        text += &format!("[output]\ntrace = {:?}\n", trace.display().to_string());
    }
    let (src, mut t) = Source::parse(None, text).expect("bench scenario");
    t.insert(
        "workload".into(),
        toml::Value::Array(vec![
            crate::scenario::workload_table(c.workload).expect("bench workload")
        ]),
    );
    let sc = Scenario::resolve(&src, &t).expect("bench scenario");
    (src, sc)
}

/// Run case `i` here; print its digest line(s), or its numbers as one JSON
/// line for the parent.
fn run_case(i: usize, digest: bool) -> i32 {
    let t0 = Instant::now();
    let c = &CASES[i];
    let trace_path =
        std::env::temp_dir().join(format!("schedlab-bench-{}.txt", std::process::id()));
    let (src, sc) = scenario(i, &trace_path, None);
    let out = match run(&src, &sc) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{}: {e}", c.name);
            return 1;
        }
    };
    // Before the trace file is read back, which would count in it.
    let rss = crate::util::rss::peak_kib();
    let trace = std::fs::read(&trace_path).ok();
    let _ = std::fs::remove_file(&trace_path);
    if digest {
        println!("{:<44} {:016x}", c.name, results_digest(&out));
        if let Some(t) = trace {
            println!("{:<44} {:016x}", format!("{} (ftrace)", c.id), fnv1a(&t));
        }
        return 0;
    }
    let k = &out.kernel;
    let trace_events = trace.map(|t| {
        t.split(|&b| b == b'\n')
            .filter(|l| !l.is_empty() && l[0] != b'#')
            .count()
    });
    let process_wall_ns = t0.elapsed().as_nanos() as u64;
    let half = (i != TRACED).then(|| half_run(i, k.now)).flatten();
    let startup = (i != TRACED).then(|| startup_run(i)).flatten();
    let line = json!({
        "id": c.id,
        "name": c.name,
        "machine": c.machine,
        "workload": c.workload,
        "duration": c.duration,
        "run_wall_ns": out.wall_ns,
        "process_wall_ns": process_wall_ns,
        "switches": k.task_switches(),
        "events": k.events.popped,
        "sim_ns": k.now,
        "peak_rss_kib": rss,
        "trace_events": trace_events,
        "half": half,
        "startup": startup,
    });
    println!("{line}");
    0
}

/// The same case cut at half its simulated time (`sim_ns`): its run loop's
/// wall time, switches and events, from which the row's steady-state cost
/// per switch is the second half's (start-up and the first ticks' balance
/// storm fall in the first).
fn half_run(i: usize, sim_ns: u64) -> Option<Value> {
    let (src, sc) = scenario(i, std::path::Path::new(""), Some(sim_ns / 2));
    let out = run(&src, &sc).ok()?;
    let k = &out.kernel;
    Some(json!({
        "run_wall_ns": out.wall_ns,
        "switches": k.task_switches(),
        "events": k.events.popped,
        "sim_ns": k.now,
    }))
}

/// The same case's start-up: the process's work from the scenario to the
/// end of the first tick (machine and sched domains built, tasks forked
/// and placed, every CPU's first balance, all due at once), as the whole
/// wall time, that of its run loop (`run_wall_ns`, from the first event),
/// its events and the CPUs whose run queue the balancer read.
fn startup_run(i: usize) -> Option<Value> {
    let t0 = Instant::now();
    let (_, sc) = scenario(i, std::path::Path::new(""), Some(1));
    let tick_ns = 1_000_000_000 / sc.kernel.hz as u64;
    let (src, sc) = scenario(i, std::path::Path::new(""), Some(tick_ns));
    let out = run(&src, &sc).ok()?;
    let k = &out.kernel;
    Some(json!({
        "wall_ns": t0.elapsed().as_nanos() as u64,
        "run_wall_ns": out.wall_ns,
        "events": k.events.popped,
        "sim_ns": k.now,
        "balance_cpus_read": k.lb.cpus_read,
    }))
}

/// Wall ns per switch of the second half of the run (None without a
/// half run or without switches in the second half).
fn steady_ns_per_switch(v: &Value) -> Option<f64> {
    let f = |v: &Value, k: &str| v[k].as_f64();
    let h = &v["half"];
    let wall = f(v, "run_wall_ns")? - f(h, "run_wall_ns")?;
    let sw = f(v, "switches")? - f(h, "switches")?;
    (sw > 0.0).then(|| wall.max(0.0) / sw)
}

/// The case named `name` (its id or its name).
fn find_case(name: &str) -> Option<usize> {
    CASES.iter().position(|c| c.id == name || c.name == name)
}

/// This host and this build, as printed above the table.
fn host() -> Value {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    json!({
        "build": crate::util::version::LONG,
        "cpu": crate::machine::host::model_name().unwrap_or_else(|| "unknown".into()),
        "cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "kernel": kernel,
    })
}

/// A case's row from the child's numbers: per wall second of the run loop,
/// and the whole process (start-up included).
fn row(v: &Value) -> String {
    let f = |k: &str| v[k].as_f64().unwrap_or(0.0);
    let (wall, proc_wall) = (f("run_wall_ns") / 1e9, f("process_wall_ns") / 1e9);
    let sw = f("switches");
    let steady = steady_ns_per_switch(v).map_or("-".into(), |n| format!("{n:.0}"));
    let mut s = format!(
        "{:<44} {:>8.3} {:>8.3} {:>8.2} {:>8.2} {:>8.0} {:>8} {:>8.2} {:>9.1} {:>8.1} {:>8}",
        v["name"].as_str().unwrap_or(""),
        wall,
        proc_wall,
        sw / wall / 1e6,
        sw / proc_wall / 1e6,
        wall * 1e9 / sw.max(1.0),
        steady,
        f("events") / wall / 1e6,
        f("sim_ns") / 1e9 / wall,
        f("peak_rss_kib") / 1024.0,
        v["startup"]["wall_ns"]
            .as_f64()
            .map_or("-".into(), |n| format!("{:.3}", n / 1e9))
    );
    if let Some(n) = v["trace_events"].as_f64() {
        s += &format!(
            "\n{:<44} {n} trace events, {:.2} M events written per wall second",
            "",
            n / wall / 1e6
        );
    }
    s
}

/// Run case `i` in a child process and read its JSON line.
fn child(exe: &std::path::Path, i: usize) -> Option<Value> {
    let out = std::process::Command::new(exe)
        .args(["bench", "--child", &i.to_string()])
        .stderr(std::process::Stdio::inherit())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

pub fn main(args: &BenchArgs) -> i32 {
    if let Some(i) = args.child {
        return if i < CASES.len() {
            run_case(i, args.digest)
        } else {
            2
        };
    }
    if let Some(old) = &args.distributions {
        return distributions_main(args, old);
    }
    let mut selected = Vec::new();
    for name in &args.cases {
        match find_case(name) {
            Some(i) => selected.push(i),
            None => {
                eprintln!("schedlab bench: unknown case {name:?}; the cases (id: name):");
                for c in CASES {
                    eprintln!("  {:<28} {}", c.id, c.name);
                }
                return 2;
            }
        }
    }
    if selected.is_empty() {
        selected = (0..CASES.len()).collect();
    }
    if args.digest {
        return selected
            .iter()
            .map(|&i| run_case(i, true))
            .max()
            .unwrap_or(0);
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("schedlab bench: {e}");
            return 1;
        }
    };
    let host = host();
    println!(
        "schedlab {} on {} ({} CPUs, Linux {})",
        host["build"].as_str().unwrap_or(""),
        host["cpu"].as_str().unwrap_or(""),
        host["cpus"],
        host["kernel"].as_str().unwrap_or("")
    );
    println!(
        "{:<44} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>8} {:>8}",
        "case",
        "run s",
        "proc s",
        "M csw/s",
        "proc",
        "ns/csw",
        "steady",
        "M ev/s",
        "sim/wall",
        "RSS MiB",
        "start s"
    );
    let mut rc = 0;
    let mut results = Vec::new();
    for &i in &selected {
        match child(&exe, i) {
            Some(v) => {
                println!("{}", row(&v));
                results.push(v);
            }
            None => rc = 1,
        }
    }
    if let Some(path) = &args.json {
        let doc = json!({"host": host, "cases": results});
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n";
        if let Err(e) = crate::util::fs::write_atomic(path, text.as_bytes()) {
            eprintln!("schedlab bench: {}: {e}", path.display());
            return 1;
        }
    }
    rc
}

/// `--distributions OLD`, with `--case` naming its scenarios.
fn distributions_main(args: &BenchArgs, old: &std::path::Path) -> i32 {
    let mut cases = Vec::new();
    for name in &args.cases {
        match distributions::find(name) {
            Some(i) => cases.push(i),
            None => {
                eprintln!("schedlab bench: unknown --distributions case {name:?}; the cases:");
                for c in distributions::DIST_CASES {
                    eprintln!("  {}", c.id);
                }
                return 2;
            }
        }
    }
    if cases.is_empty() {
        cases = (0..distributions::DIST_CASES.len()).collect();
    }
    distributions::main(old, &cases, args.seeds, args.json.as_ref())
}
