//! The progress bar: never on a stderr that is not a terminal; on a
//! terminal (a pty from `script`) once the delay has passed, here forced to
//! 0 ms; never with --quiet.

mod common;
use common::schedlab;
use std::process::Command;

const RUN: &[&str] = &[
    "run",
    "--machine",
    "vm-2",
    "--workload",
    "periodic:tasks=3,run=2ms,sleep=1ms",
    "--duration",
    "4s",
];

const COMPARE: &[&str] = &[
    "compare",
    "--machine",
    "vm-2",
    "--workload",
    "periodic:tasks=3,run=2ms,sleep=1ms",
    "--duration",
    "2s",
    "--set-a",
    "kernel.hz=250",
    "--set-b",
    "kernel.hz=1000",
    "--runs",
    "2",
];

/// Run schedlab under a pty with the bar's delay at 0; everything the
/// terminal received, or None when `script` is missing.
fn on_pty(args: &[&str]) -> Option<String> {
    let cmd = std::iter::once(env!("CARGO_BIN_EXE_schedlab"))
        .chain(args.iter().copied())
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env("SCHEDLAB_PROGRESS_DELAY_MS", "0")
        .output()
        .ok()?;
    assert!(out.status.success(), "{out:?}");
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn with(args: &[&str], extra: &str) -> Vec<String> {
    let mut v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    v.insert(1, extra.to_string());
    v
}

#[test]
fn not_a_terminal_no_progress() {
    for args in [RUN, COMPARE] {
        let out = Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args(args)
            .env("SCHEDLAB_PROGRESS_DELAY_MS", "0")
            .output()
            .unwrap();
        assert!(out.status.success());
        assert!(out.stderr.is_empty(), "{:?}", out.stderr);
    }
}

#[test]
fn terminal_shows_sim_time_and_eta_unless_quiet() {
    let Some(tty) = on_pty(RUN) else {
        println!("SKIPPED: `script` not found, no pty to test on");
        return;
    };
    assert!(tty.contains("simulated "), "{tty}");
    assert!(tty.contains(" / 4.000 s"), "{tty}");
    assert!(tty.contains("ETA"), "{tty}");
    // The run's own report still arrives, after the bar was erased.
    assert!(tty.contains("\x1b[2Kperiodic: 3 task(s)"), "{tty}");
    let quiet = on_pty(
        &with(RUN, "-q")
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert!(
        !quiet.contains("simulated") && !quiet.contains("ETA"),
        "{quiet}"
    );
    assert!(quiet.contains("periodic: 3 task(s)"), "{quiet}");
}

#[test]
fn terminal_compare_counts_runs_unless_quiet() {
    let Some(tty) = on_pty(COMPARE) else {
        println!("SKIPPED: `script` not found, no pty to test on");
        return;
    };
    assert!(tty.contains("/4 ["), "{tty}");
    assert!(tty.contains("A/B comparison"), "{tty}");
    let quiet = on_pty(
        &with(COMPARE, "--quiet")
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert!(!quiet.contains("/4 ["), "{quiet}");
    assert!(quiet.contains("A/B comparison"), "{quiet}");
}

#[test]
fn quiet_exists_on_run_compare_and_repro() {
    for cmd in ["run", "compare", "repro"] {
        let (rc, help, _) = schedlab(&[cmd, "--help"]);
        assert_eq!(rc, 0);
        assert!(help.contains("-q, --quiet"), "{cmd}: {help}");
    }
}
