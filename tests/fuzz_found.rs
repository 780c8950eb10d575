//! Inputs the fuzzer found (issue 16 part 2), each fed through the command
//! line: a clean exit 2 naming the key, never a panic.

mod common;
use common::schedlab;

/// Run and expect exit 2 with `want` in the error.
fn input_error(args: &[&str], want: &str) {
    let (rc, _, err) = schedlab(args);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains(want), "want {want:?} in {err}");
}

#[test]
fn hackbench_loops_times_fds_beyond_64_bits() {
    input_error(
        &["run", "-w", "hackbench:groups=1,loops=8446744073709551615"],
        "`loops`",
    );
}

#[test]
fn stress_ng_cpu_ranges_beyond_the_cpu_limit() {
    for r in ["3-8446744073709551615", "3-4294967296", "0-4096"] {
        input_error(
            &["run", "-w", &format!("stress-ng:cpus={r}")],
            "limit of 4096 CPUs",
        );
    }
}

#[test]
fn schbench_threads_above_the_task_limit() {
    input_error(
        &["run", "--machine", "hsx-144", "-w", "schbench:m=65536,t=8"],
        "limit of 200000",
    );
}

/// A quota the kernel refuses (above max_cfs_runtime, 2^44 - 1 µs) made the
/// bandwidth pool overflow; the kernel's limit now applies, and the largest
/// quota it accepts still runs with --check.
#[test]
fn cpu_max_quota_above_the_kernels_maximum() {
    input_error(
        &[
            "run",
            "--cgroup",
            "/d:max=\"9233036854775807 1000\"",
            "-w",
            "periodic:tasks=3,run=1s,sleep=3s,cgroup=/d",
        ],
        "max_cfs_runtime",
    );
    let (rc, _, err) = schedlab(&[
        "run",
        "-q",
        "--check",
        "--cgroup",
        "/d:max=\"17592186044415 1000\"",
        "-w",
        "periodic:tasks=3,run=10ms,sleep=30ms,cgroup=/d",
        "--duration",
        "100ms",
    ]);
    assert_eq!(rc, 0, "{err}");
}
