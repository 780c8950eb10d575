//! SCHED_DEADLINE (kernel/deadline.rs) through rt-app files and the
//! periodic workload: EDF order, CBS throttling, admission control, the
//! class order above RT and fair, placement across CPUs.

mod common;
use common::{schedlab, tmp};

/// Write `text` to a scratch file named `name`; its path.
fn write(name: &str, text: &str) -> String {
    let p = tmp(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// `schedlab run --machine vm-2 -w rtapp:FILE --check` and `flags`, which
/// must succeed: its stdout.
fn run_ok(file: &str, flags: &[&str]) -> String {
    let w = format!("rtapp:{file}");
    let mut args = vec!["run", "--machine", "vm-2", "--check", "-w", &w];
    args.extend_from_slice(flags);
    let (rc, out, err) = schedlab(&args);
    assert_eq!(rc, 0, "{file}: {err}");
    out
}

/// A thread's runtime (ms) from rt-app's summary line.
fn runtime_ms(out: &str, comm: &str) -> f64 {
    let l = out.lines().find(|l| l.starts_with(comm)).expect(comm);
    l.split_whitespace().nth(2).unwrap().parse().unwrap()
}

/// A thread's longest run-queue wait (ms) from the summary line.
fn wait_max_ms(out: &str, comm: &str) -> f64 {
    let l = out.lines().find(|l| l.starts_with(comm)).expect(comm);
    let w = l.split("wait_max").nth(1).unwrap();
    w.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn edf_runs_the_earliest_absolute_deadline_first() {
    // Three DL threads on CPU 0, released together, 3 ms of work each:
    // relative deadlines 30, 10 and 20 ms, so they finish early, middle,
    // late; sched_switch prints a DL task's prio as -1.
    let f = write(
        "edf.json",
        r#"{"tasks": {
        "late": {"loop": 1, "run": 3000, "cpus": [0], "policy": "SCHED_DEADLINE",
            "dl-runtime": 5000, "dl-deadline": 30000, "dl-period": 100000},
        "early": {"loop": 1, "run": 3000, "cpus": [0], "policy": "SCHED_DEADLINE",
            "dl-runtime": 5000, "dl-deadline": 10000, "dl-period": 100000},
        "middle": {"loop": 1, "run": 3000, "cpus": [0], "policy": "SCHED_DEADLINE",
            "dl-runtime": 5000, "dl-deadline": 20000, "dl-period": 100000}}}"#,
    );
    let t = tmp("edf.txt").display().to_string();
    run_ok(&f, &["--trace", &t]);
    let trace = std::fs::read_to_string(&t).unwrap();
    let exits: Vec<&str> = (trace.lines())
        .filter_map(|l| l.split("sched_process_exit: comm=").nth(1))
        .map(|s| s.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(exits, ["early", "middle", "late"], "{trace}");
    assert!(
        trace.contains("next_comm=early next_pid=1001 next_prio=-1"),
        "{trace}"
    );
}

#[test]
fn cbs_gives_a_task_asking_more_exactly_its_runtime_per_period() {
    // 30 ms of work every 100 ms with a 10 ms runtime: throttled to 10 ms
    // per period, 100 ms in 1 s; the overrun a tick lets through is paid
    // from the next period.
    let f = write(
        "cbs.json",
        r#"{"tasks": {"hog": {"loop": -1, "run": 30000,
            "timer": {"ref": "unique", "period": 100000},
            "policy": "SCHED_DEADLINE", "dl-runtime": 10000, "dl-period": 100000}},
        "global": {"duration": 1}}"#,
    );
    let got = runtime_ms(&run_ok(&f, &[]), "hog");
    assert!((got / 100.0 - 1.0).abs() < 0.01, "{got} ms");
}

#[test]
fn admission_refuses_more_than_the_root_domain_allows() {
    // Two threads of 92.5 % on 2 CPUs: 185 % fits 2 × 95 % but not with
    // the fair servers' 2 × 5 % that 6.18 counts too.
    let f = write(
        "over.json",
        r#"{"tasks": {"big": {"instance": 2, "loop": -1, "run": 1000,
            "timer": {"ref": "unique", "period": 10000},
            "policy": "SCHED_DEADLINE",
            "dl-runtime": 9250, "dl-period": 10000}},
        "global": {"duration": 1}}"#,
    );
    let (rc, _, err) = schedlab(&["run", "--machine", "vm-2", "-w", &format!("rtapp:{f}")]);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("over.json:4: `tasks.big.dl-runtime`"), "{err}");
    assert!(err.contains("thread 2 of 2 refused (EBUSY)"), "{err}");
    let out = run_ok(&f, &["--set", "kernel.rt_bandwidth=\"throttle\""]);
    assert!(runtime_ms(&out, "big-1") > 90.0, "{out}");
    // sched_setattr's own checks: runtime ≤ deadline ≤ period.
    let bad = write(
        "bad.json",
        r#"{"tasks": {"t": {"run": 1000, "policy": "SCHED_DEADLINE",
            "dl-runtime": 20000, "dl-period": 10000}}}"#,
    );
    let (rc, _, err) = schedlab(&["run", "--machine", "vm-2", "-w", &format!("rtapp:{bad}")]);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains("bad.json:2: `tasks.t.dl-runtime`") && err.contains("EINVAL"),
        "{err}"
    );
}

#[test]
fn a_dl_task_preempts_rt_and_fair_ones() {
    // CPU 0 holds a FIFO hog and a fair spinner; a DL thread running 2 ms
    // every 10 ms there still gets its 20 % at once, and the hog the rest.
    let f = write(
        "classes.json",
        r#"{"tasks": {
        "hog": {"loop": -1, "run": 100000, "cpus": [0], "policy": "SCHED_FIFO", "priority": 50},
        "fair": {"loop": -1, "run": 100000, "cpus": [0]},
        "dl": {"loop": -1, "run": 2000, "timer": {"ref": "unique", "period": 10000}, "cpus": [0],
            "policy": "SCHED_DEADLINE", "dl-runtime": 3000, "dl-period": 10000}},
        "global": {"duration": 1}}"#,
    );
    let out = run_ok(&f, &[]);
    let dl = runtime_ms(&out, "dl");
    assert!((dl / 200.0 - 1.0).abs() < 0.02, "{out}");
    assert!(wait_max_ms(&out, "dl") < 0.05, "{out}");
    assert!(runtime_ms(&out, "hog") > 750.0, "{out}");
}

#[test]
fn woken_dl_tasks_spread_to_cpus_running_later_deadlines() {
    // Three threads of 40 % on 2 CPUs need both: find_later_rq at wakeup,
    // push and pull keep each at its 400 ms in 1 s.
    let f = write(
        "spread.json",
        r#"{"tasks": {"dl": {"instance": 3, "loop": -1, "run": 4000,
            "timer": {"ref": "unique", "period": 10000},
            "policy": "SCHED_DEADLINE", "dl-runtime": 4500, "dl-period": 10000}},
        "global": {"duration": 1}}"#,
    );
    let out = run_ok(&f, &[]);
    for c in ["dl-0", "dl-1", "dl-2"] {
        let got = runtime_ms(&out, c);
        assert!((got / 400.0 - 1.0).abs() < 0.02, "{c}: {out}");
    }
}

#[test]
fn periodic_takes_policy_deadline_with_its_dl_keys() {
    let w = "periodic:tasks=3,run=2ms,sleep=8ms,policy=deadline,dl-runtime=3ms,dl-period=10ms";
    let (rc, _, err) = schedlab(&[
        "run",
        "--machine",
        "vm-2",
        "--check",
        "-w",
        w,
        "--duration",
        "1s",
    ]);
    assert_eq!(rc, 0, "{err}");
    let w = "periodic:tasks=4,policy=deadline";
    let (rc, _, err) = schedlab(&["run", "--machine", "vm-2", "-w", w, "--duration", "1s"]);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("task 4 of 4 refused (EBUSY)"), "{err}");
    let w = "periodic:policy=deadline,dl-runtime=5ms,dl-period=1ms";
    let (rc, _, err) = schedlab(&["run", "--machine", "vm-2", "-w", w]);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains("`dl-runtime`") && err.contains("EINVAL"),
        "{err}"
    );
    let w = "hackbench:policy=deadline";
    let (rc, _, err) = schedlab(&["run", "--machine", "vm-2", "-w", w]);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains("is not one of fifo, rr, normal, batch, idle"),
        "{err}"
    );
}

#[test]
fn sched_yield_ends_the_instance_and_a_constrained_task_keeps_its_bandwidth() {
    // run 1 ms, sched_yield, forever, with 5 ms per 10 ms: the yield gives
    // up the rest of each instance, so 1 ms per period (100 ms in 1 s).
    let f = write(
        "yield.json",
        r#"{"tasks": {"y": {"loop": -1, "run": 1000, "yield": "",
            "policy": "SCHED_DEADLINE", "dl-runtime": 5000, "dl-period": 10000}},
        "global": {"duration": 1}}"#,
    );
    let got = runtime_ms(&run_ok(&f, &[]), "y");
    assert!((got / 100.0 - 1.0).abs() < 0.05, "{got} ms");
    // 3 ms of work between 1 ms sleeps against 2 ms per 10 ms with a 4 ms
    // deadline: each wakeup is throttled or cut to the density (revised
    // wakeup rule, dl_check_constrained_dl): 20 % of 1 s.
    let f = write(
        "constrained.json",
        r#"{"tasks": {"c": {"loop": -1, "run": 3000, "sleep": 1000, "cpus": [0],
            "policy": "SCHED_DEADLINE", "dl-runtime": 2000, "dl-deadline": 4000, "dl-period": 10000}},
        "global": {"duration": 1}}"#,
    );
    let got = runtime_ms(&run_ok(&f, &[]), "c");
    assert!((got / 200.0 - 1.0).abs() < 0.02, "{got} ms");
}
