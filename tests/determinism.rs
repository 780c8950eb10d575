//! Determinism under every feature (issue 16, part 8): each workload kind,
//! cgroups (nested, weighted, cpu.max-limited), RT policies, run-to-run
//! noise and replay run twice with the same seed give byte-identical JSON
//! (wall clock and meta aside) and byte-identical ftrace text.

mod common;
use common::{json_without_wall, schedlab, tmp};

/// One small case per workload kind `schedlab workloads` lists.
const KINDS: &[(&str, &str)] = &[
    ("hackbench", "hackbench:groups=1,fds=4,loops=20"),
    ("pipe", "pipe:loops=2000"),
    ("schbench", "schbench:m=1,t=3,r=30ms"),
    ("schbench-old", "schbench-old:m=1,t=3,r=60ms,s=5ms,c=5ms"),
    ("context1", "context1:duration=10ms"),
    (
        "cyclictest",
        "cyclictest:threads=2,interval=500us,duration=20ms",
    ),
    ("periodic", "periodic:tasks=3,run=1ms..3ms,sleep=exp:2ms"),
    ("fork", "fork:loops=20"),
    ("forky", "forky:count=20,mode=vfork"),
    ("kernbench", "kernbench:jobs=3,files=4"),
    ("kthread", "kthread:count=5"),
    ("irq-complete", "irq-complete:waiters=3,period=1ms,all=true"),
    ("stress-ng", "stress-ng:cpu=3,cpu-load=60,timeout=20ms"),
    ("rtapp", "rtapp:file=tests/data/rtapp-example.json"),
    (
        "replay",
        "replay:file=tests/data/messaging-g1-l20.ftrace.txt",
    ),
];

/// Run once: the JSON without wall-clock fields, and the ftrace text.
fn run_once(args: &[&str], name: &str, round: u32) -> (serde_json::Value, Vec<u8>) {
    let json = tmp(&format!("det-{name}-{round}.json"));
    let trace = tmp(&format!("det-{name}-{round}.txt"));
    let (j, t) = (json.display().to_string(), trace.display().to_string());
    let mut all = args.to_vec();
    all.extend(["--seed", "11", "--json", &j, "--trace", &t, "--quiet"]);
    let (rc, _, err) = schedlab(&all);
    assert!(rc == 0 || rc == 4, "{name}: rc {rc}: {err}");
    (json_without_wall(&json), std::fs::read(&trace).unwrap())
}

/// Two runs of `args` give the same bytes; returns the JSON for checks.
fn twice(args: &[&str], name: &str) -> serde_json::Value {
    let (j1, t1) = run_once(args, name, 1);
    let (j2, t2) = run_once(args, name, 2);
    assert!(t1.len() > 100, "{name}: trace of {} bytes", t1.len());
    assert!(t1 == t2, "{name}: ftrace text differs between two runs");
    let (s1, s2) = (j1.to_string(), j2.to_string());
    assert!(s1 == s2, "{name}: JSON differs between two runs");
    j1
}

#[test]
fn every_workload_kind_twice_same_bytes() {
    let (_, listed, _) = schedlab(&["workloads"]);
    let kinds: Vec<&str> = listed.lines().filter_map(|l| l.split(' ').next()).collect();
    let covered: Vec<&str> = KINDS.iter().map(|(k, _)| *k).collect();
    assert_eq!(kinds, covered, "a workload kind without a determinism case");
    for (kind, spec) in KINDS {
        let args = [
            "run",
            "--machine",
            "smp:cpus=4,smt=2",
            "-w",
            spec,
            "--duration",
            "60ms",
        ];
        let v = twice(&args, kind);
        assert_eq!(v["sim"]["noise"]["enabled"], true, "{kind}");
    }
}

#[test]
fn cgroups_rt_and_noise_twice_same_bytes() {
    let args = [
        "run",
        "--machine",
        "power10-96",
        "--cgroup",
        "/a:weight=300",
        "--cgroup",
        "/a/b:weight=50",
        "--cgroup",
        "/a/b/c:max=\"2000 10000\"",
        "--cgroup",
        "/lim:max=\"5000 20000\"",
        "-w",
        "stress-ng:cpu=40,cpu-load=70,cgroup=/a/b/c",
        "-w",
        "hackbench:groups=2,fds=5,loops=30,cgroup=/lim",
        "-w",
        "periodic:tasks=20,run=1ms,sleep=2ms,cgroup=/a",
        "-w",
        "periodic:tasks=4,run=500us,sleep=1ms,policy=fifo,prio=60",
        "-w",
        "cyclictest:threads=4,policy=rr,duration=40ms",
        "--duration",
        "40ms",
        "--set",
        "noise.cost_cv=0.2",
    ];
    let v = twice(&args, "mixed");
    // The features the case is about did take part.
    for counter in ["noise_irqs", "cfs_throttled", "rt_pushes", "rt_pulls"] {
        assert!(v["totals"][counter].as_u64().unwrap() > 0, "{counter}");
    }
}

#[test]
fn replay_command_twice_same_bytes() {
    let args = [
        "replay",
        "tests/data/messaging-g1-l100.perf.txt",
        "--machine",
        "xeon-8269cy",
    ];
    twice(&args, "replay-perf");
}
