//! `schedlab bench`: the simulator's own speed. Each case runs in a child
//! process so that its peak RSS (VmHWM) is its own.

use crate::run::run;
use crate::scenario::{Scenario, Source};
use clap::Args;

/// (name, machine, workload, simulated duration)
pub const CASES: &[(&str, &str, &str, Option<&str>)] = &[
    (
        "periodic-64 on smp:cpus=16",
        "smp:cpus=16",
        "periodic:tasks=64,run=1ms,sleep=1ms",
        Some("10s"),
    ),
    (
        "periodic-256 on smp:cpus=64",
        "smp:cpus=64",
        "periodic:tasks=256,run=1ms,sleep=1ms",
        Some("10s"),
    ),
    (
        "hackbench g10 l1000 on xeon-8269cy",
        "xeon-8269cy",
        "hackbench:groups=10,loops=1000",
        None,
    ),
    (
        "schbench -m 2 -t 8 on xeon-8269cy",
        "xeon-8269cy",
        "schbench:m=2,t=8",
        Some("2s"),
    ),
    (
        "hackbench pipe g60 process power10-96",
        "power10-96",
        "hackbench:groups=60,loops=20,ipc=pipe,mode=process",
        None,
    ),
    (
        "kernbench j32 on xeon-8269cy",
        "xeon-8269cy",
        "kernbench:jobs=32",
        None,
    ),
    (
        "stress-ng --cpu 320 -l 50 on power10-320",
        "power10-320",
        "stress-ng:cpu=320,cpu-load=50",
        Some("2s"),
    ),
    (
        "hackbench g10 on milan-256",
        "milan-256",
        "hackbench:groups=10",
        None,
    ),
    // The core's targets again, every task three cgroup levels deep.
    (
        "periodic-64 on smp:cpus=16, 3 levels deep",
        "smp:cpus=16",
        "periodic:tasks=64,run=1ms,sleep=1ms,cgroup=/bench/a/b",
        Some("10s"),
    ),
    (
        "periodic-256 on smp:cpus=64, 3 levels deep",
        "smp:cpus=64",
        "periodic:tasks=256,run=1ms,sleep=1ms,cgroup=/bench/a/b",
        Some("10s"),
    ),
    (
        "hackbench g10 l1000 on xeon, 3 levels deep",
        "xeon-8269cy",
        "hackbench:groups=10,loops=1000,cgroup=/bench/a/b",
        None,
    ),
];

/// The group the `cgroup=` cases run in.
const BENCH_CGROUP: &str = "[[cgroup]]\npath = \"/bench/a/b\"\n";

#[derive(Args)]
pub struct BenchArgs {
    /// Run only case N (used internally to measure each case's RSS)
    #[arg(long, hide = true)]
    case: Option<usize>,
    /// Print a digest of each case's results (its JSON without wall-clock
    /// fields) instead of speeds: equal digests mean equal results
    #[arg(long)]
    digest: bool,
}

/// FNV-1a, 64 bits: a stable hash (std's hashers may change between
/// releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The results of a run as a digest: its JSON without `sim.wall_ns`.
fn results_digest(out: &crate::run::RunOutput) -> u64 {
    let mut v = crate::report::json::to_json(&out.view());
    if let Some(sim) = v.get_mut("sim").and_then(|s| s.as_object_mut()) {
        sim.remove("wall_ns");
    }
    fnv1a(v.to_string().as_bytes())
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// The first case again with `--trace` (ftrace text to a temporary file):
/// the cost of tracing, and trace events written per wall second.
const TRACED: (&str, &str, &str, Option<&str>) = (
    "periodic-64 on smp:cpus=16 --trace",
    "smp:cpus=16",
    "periodic:tasks=64,run=1ms,sleep=1ms",
    Some("2s"),
);

fn run_case(i: usize, digest: bool) -> i32 {
    let (name, machine, workload, duration) = CASES.get(i).copied().unwrap_or(TRACED);
    let mut text = format!("[machine]\npreset = \"{machine}\"\n");
    if let Some(d) = duration {
        text += &format!("[sim]\nduration = \"{d}\"\n");
    }
    if workload.contains("cgroup=") {
        text += BENCH_CGROUP;
    }
    let trace_path =
        std::env::temp_dir().join(format!("schedlab-bench-{}.txt", std::process::id()));
    if i == CASES.len() {
        text += &format!("[output]\ntrace = {:?}\n", trace_path.display().to_string());
    }
    let (src, mut t) = Source::parse(None, text).expect("bench scenario");
    t.insert(
        "workload".into(),
        toml::Value::Array(vec![
            crate::scenario::workload_table(workload).expect("bench workload")
        ]),
    );
    let sc = Scenario::resolve(&src, &t).expect("bench scenario");
    let out = match run(&src, &sc) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{name}: {e}");
            return 1;
        }
    };
    let k = &out.kernel;
    if digest {
        let _ = std::fs::remove_file(&trace_path);
        println!("{name:<44} {:016x}", results_digest(&out));
        return 0;
    }
    let wall = out.wall_ns as f64 / 1e9;
    println!(
        "{name:<44} {:>8.3} {:>10.2} {:>9.0} {:>10.2} {:>9.1} {:>8}",
        wall,
        k.task_switches() as f64 / wall / 1e6,
        out.wall_ns as f64 / k.task_switches().max(1) as f64,
        k.events.popped as f64 / wall / 1e6,
        k.now as f64 / 1e9 / wall,
        peak_rss_kib() / 1024
    );
    if let Ok(t) = std::fs::read_to_string(&trace_path) {
        let lines = t.lines().filter(|l| !l.starts_with('#')).count();
        println!(
            "{:<36} {lines} trace events, {:.2} M events written per wall second",
            "",
            lines as f64 / wall / 1e6
        );
        let _ = std::fs::remove_file(&trace_path);
    }
    0
}

pub fn main(args: &BenchArgs) -> i32 {
    if let Some(i) = args.case {
        return if i <= CASES.len() {
            run_case(i, args.digest)
        } else {
            2
        };
    }
    if args.digest {
        return (0..=CASES.len())
            .map(|i| run_case(i, true))
            .max()
            .unwrap_or(0);
    }
    println!(
        "{:<44} {:>8} {:>10} {:>9} {:>10} {:>9} {:>8}",
        "case", "wall s", "M csw/s", "ns/csw", "M ev/s", "sim/wall", "RSS MiB"
    );
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("schedlab bench: {e}");
            return 1;
        }
    };
    let mut rc = 0;
    for i in 0..=CASES.len() {
        let status = std::process::Command::new(&exe)
            .args(["bench", "--case", &i.to_string()])
            .status();
        if !status.is_ok_and(|s| s.success()) {
            rc = 1;
        }
    }
    rc
}
