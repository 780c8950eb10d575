//! Run-queue PELT: capacity invariance of the PELT clock and the rt
//! class's utilisation, which shrinks the capacity left to fair tasks.

mod common;
use common::json_of;
use serde_json::Value;

fn cpu(v: &Value, i: usize, key: &str) -> u64 {
    v["cpus"][i][key].as_u64().unwrap()
}

#[test]
fn util_of_the_same_work_is_the_same_on_a_little_cpu() {
    // Two pinned tasks doing 2 ms of work then sleeping 6 ms; CPU 1 runs
    // at half capacity, so its task is busy ~4 ms of every ~10 ms (40 %).
    let v = json_of(
        &[
            "run",
            "--machine",
            "smp:cpus=2,little=1",
            "--workload",
            "periodic:tasks=2,run=2ms,sleep=6ms,pin=true",
            "--duration",
            "2s",
            "--check",
        ],
        "pelt-little.json",
    );
    let (big, little) = (cpu(&v, 0, "util_avg"), cpu(&v, 1, "util_avg"));
    assert!(
        cpu(&v, 1, "busy_ns") > cpu(&v, 0, "busy_ns") * 3 / 2,
        "{v:#}"
    );
    // Without invariance the little CPU's util would be ~40 % (~410).
    assert!(little < 300 && big < 300, "big {big} little {little}");
    assert!(little.abs_diff(big) < 40, "big {big} little {little}");
}

#[test]
fn an_always_running_task_fills_a_little_cpu() {
    let v = json_of(
        &[
            "run",
            "--machine",
            "smp:cpus=2,little=1",
            "--workload",
            "periodic:tasks=2,run=100ms,sleep=1ms,pin=true",
            "--duration",
            "2s",
        ],
        "pelt-little-busy.json",
    );
    // lost_idle_time lets the slower PELT clock still reach the maximum.
    assert!(cpu(&v, 1, "util_avg") > 950, "{}", cpu(&v, 1, "util_avg"));
}

#[test]
fn rt_time_shrinks_the_capacity_left_to_the_fair_class() {
    let v = json_of(
        &[
            "run",
            "--machine",
            "smp:cpus=2",
            "--workload",
            "periodic:tasks=1,run=5ms,sleep=5ms,pin=true,policy=fifo",
            "--duration",
            "2s",
        ],
        "pelt-rt.json",
    );
    let rt = cpu(&v, 0, "rt_util_avg");
    assert!((400..600).contains(&rt), "rt_util_avg {rt}");
    assert_eq!(cpu(&v, 0, "cpu_capacity"), 1024 - rt);
    assert_eq!(cpu(&v, 1, "cpu_capacity"), 1024);
    assert_eq!(
        cpu(&v, 0, "irq_util_avg"),
        0,
        "irq time accounting is off by default"
    );
}

#[test]
fn a_task_started_at_time_zero_is_attached_once_and_ages() {
    // A task that starts at simulated time 0 and runs for 32 ms (one PELT
    // half-life) from post_init's 512: util ≈ 1024 - 512/2 = 768. Attached
    // twice (0 was both the PELT clock and "not attached"), it stayed at
    // 512 until its first wakeup and its CPU's util went above capacity,
    // which --check now refuses.
    let v = json_of(
        &[
            "run",
            "--machine",
            "vm-2",
            "--workload",
            "periodic:tasks=1,run=1s,sleep=1ms",
            "--duration",
            "32ms",
            "--check",
        ],
        "pelt-t0.json",
    );
    let util = v["tasks"][0]["util_avg"].as_u64().unwrap();
    assert!((730..800).contains(&util), "task util_avg {util}");
    let cpu_util = (0..2).map(|i| cpu(&v, i, "util_avg")).max().unwrap();
    assert!(cpu_util <= 1024, "cpu util_avg {cpu_util}");
}
