//! Hostile input through the command line (issue 16): limits stated and
//! enforced, outputs never half-written, errors that keep their place.

mod common;
use common::schedlab;

/// Run and expect exit 2 with `want` in the error.
fn input_error(args: &[&str], want: &str) -> String {
    let (rc, _, err) = schedlab(args);
    assert_eq!(rc, 2, "{}: {err}", args[..3.min(args.len())].join(" "));
    assert!(err.contains(want), "want {want:?} in {err}");
    err
}

#[test]
fn machines_above_the_cpu_limit_fail_at_once() {
    for cpus in ["18446744073709551615", "4294967296", "100000", "8192"] {
        let m = format!("smp:cpus={cpus}");
        input_error(
            &["run", "--machine", &m, "-w", "pipe:loops=10"],
            "limit of 4096 CPUs",
        );
    }
    input_error(
        &["machines", "--domains", "smp:cpus=8192"],
        "limit of 4096 CPUs",
    );
}

#[test]
fn cgroup_limits_fail_at_once() {
    let deep = format!("{}:weight=100", "/d".repeat(33));
    input_error(
        &["run", "--cgroup", &deep, "-w", "pipe:loops=10"],
        "limit of 32",
    );
}

#[test]
fn too_many_tasks_fail_before_the_next_workload_is_built() {
    let w = "hackbench:groups=5000,fds=20,loops=1";
    let mut args = vec!["run", "--machine", "vm-2"];
    for _ in 0..6 {
        args.extend(["-w", w]);
    }
    input_error(&args, "event sources");
}

#[test]
fn a_trailing_slash_does_not_escape_declared_twice() {
    input_error(
        &[
            "run",
            "--cgroup",
            "/a:weight=200",
            "--cgroup",
            "/a/:weight=300",
            "-w",
            "pipe:loops=10",
        ],
        "declared twice",
    );
}

#[test]
fn an_undeclared_cgroup_error_lists_only_a_few() {
    let mut args = vec!["run".to_string()];
    for i in 0..200 {
        args.extend(["--cgroup".into(), format!("/g{i}")]);
    }
    args.extend(["-w".into(), "pipe:loops=10,cgroup=/nope".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let err = input_error(&args, "and 193 more");
    assert!(err.len() < 500, "{err}");
}
