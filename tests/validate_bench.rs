//! `schedlab validate bench`: reading perf 6.1's real output, the targets
//! and the table, the exit code 2 when perf is missing, fails or prints
//! something unreadable, the 16-CPU host's recorded runs (`--real-from`),
//! and a short real run where perf works.

mod common;
use common::{schedlab, tmp};
use schedlab::validate::bench::{all, parse_groups, real_sample, Bench};
use schedlab::validate::bench_report::{metric_rows, ratio_row, score, table, Row, Sample, Target};
use schedlab::validate::perf::{parse_bench, parse_stat_csv, BenchOut, Counters, RealRun};
use std::process::Command;

const PIPE_OUT: &str = include_str!("data/perf-6.1-bench-pipe.stdout.txt");
const PIPE_ERR: &str = include_str!("data/perf-6.1-bench-pipe.stderr.txt");
const MSG_OUT: &str = include_str!("data/perf-6.1-messaging-p-t-g4.stdout.txt");
const MSG_ERR: &str = include_str!("data/perf-6.1-messaging-p-t-g4.stderr.txt");
const NOT_SUPPORTED: &str = include_str!("data/perf-6.1-stat-not-supported.stderr.txt");

#[test]
fn reads_perf_6_1_pipe_and_messaging_output() {
    let c = parse_stat_csv("pipe", PIPE_ERR).unwrap();
    let want = Counters {
        context_switches: 40007,
        cpu_migrations: 1,
        task_clock_ns: 51_710_000,
    };
    assert_eq!(c, want);
    let b = parse_bench("pipe", PIPE_OUT).unwrap();
    assert_eq!((b.total_s, b.usecs_per_op), (0.083, Some(4.17615)));
    let c = parse_stat_csv("msg", MSG_ERR).unwrap();
    assert_eq!(
        (c.context_switches, c.cpu_migrations, c.task_clock_ns),
        (2049, 27, 43_070_000)
    );
    let b = parse_bench("msg", MSG_OUT).unwrap();
    assert_eq!((b.total_s, b.usecs_per_op), (0.018, None));
    // Both streams in one text (perf stat's stderr may carry the
    // benchmark's messages): the counters are still found.
    let mixed = format!("{MSG_OUT}{MSG_ERR}");
    assert_eq!(
        parse_stat_csv("mixed", &mixed).unwrap().context_switches,
        2049
    );
}

#[test]
fn unreadable_perf_output_names_the_line_and_event() {
    let e = parse_stat_csv("f", NOT_SUPPORTED).unwrap_err();
    assert!(e.contains("no `cpu-migrations` count"), "{e}");
    let uncounted = PIPE_ERR.replace("40007,", "<not counted>,");
    let e = parse_stat_csv("f", &uncounted).unwrap_err();
    assert!(
        e.starts_with("f, line 1: context-switches is <not counted>"),
        "{e}"
    );
    let e = parse_stat_csv("f", &PIPE_ERR.replace("51.71,msec", "51.71,fortnights")).unwrap_err();
    assert!(
        e.contains("line 3: task-clock: unknown unit `fortnights`"),
        "{e}"
    );
    let e = parse_bench("out", &PIPE_OUT.replace("0.083", "O.083")).unwrap_err();
    assert!(
        e.starts_with("out, line 4: cannot read the total time"),
        "{e}"
    );
    let e = parse_bench("out", "# Running 'sched/pipe' benchmark:\n").unwrap_err();
    assert!(e.contains("no `Total time: X [sec]` line"), "{e}");
}

#[test]
fn real_numbers_per_operation() {
    let run = |total_s, usecs_per_op| RealRun {
        counters: Counters {
            context_switches: 8000,
            cpu_migrations: 40,
            task_clock_ns: 2_000_000_000,
        },
        bench: BenchOut {
            total_s,
            usecs_per_op,
        },
        wall_s: 1.0,
        other_cpu_s: 0.0,
        steal_s: 0.0,
    };
    let msg = Bench::Messaging {
        pipe: true,
        threads: false,
        groups: 4,
    };
    // 4 groups × 20 senders × 20 receivers × 50 loops = 80,000 messages.
    let s = real_sample(&msg, 50, &run(0.4, None));
    assert_eq!(
        (s.usecs, s.switches, s.migrations, s.cpu_us),
        (5.0, 0.1, 0.0005, 25.0)
    );
    // pipe's own usecs/op has more digits than its total time.
    let s = real_sample(&Bench::Pipe { pinned: false }, 1000, &run(0.004, Some(4.2)));
    assert_eq!((s.usecs, s.switches), (4.2, 8.0));
    let names: Vec<String> = all(&[1, 4]).iter().map(Bench::name).collect();
    assert_eq!(names.len(), 10);
    assert!(
        names.contains(&"messaging -p -t -g 4".to_string()),
        "{names:?}"
    );
    let names: Vec<String> = all(&[1, 4, 16]).iter().map(Bench::name).collect();
    assert_eq!(names.len(), 14);
    assert_eq!(names[13], "messaging -p -t -g 16");
    assert_eq!(parse_groups(" 1,4,16").unwrap(), [1, 4, 16]);
    for bad in ["1,1", "4,1", "0,4", "1,x", ""] {
        assert!(parse_groups(bad).is_err(), "{bad}");
    }
}

fn row(target: Target, real: f64, sim: f64) -> Row {
    Row {
        bench: "b".into(),
        metric: "m".into(),
        real: (real, 0.0),
        sim: (sim, 0.0),
        target,
    }
}

#[test]
fn targets_pass_and_miss() {
    let cases = [
        (Target::Within(25.0), 10.0, 12.4, true),
        (Target::Within(25.0), 10.0, 7.4, false),
        (Target::Factor(3.0), 0.001, 0.0029, true),
        (Target::Factor(3.0), 0.001, 0.00031, false),
        (Target::Factor(3.0), 0.0, 0.0, true),
        (Target::Factor(3.0), 0.0, 0.001, false),
        (Target::Trend(2.0), 0.5, 0.3, true),
        (Target::Trend(2.0), 0.5, 0.2, false),
        (Target::Trend(2.0), 0.5, 1.2, false),
        (Target::Trend(2.0), 1.5, 2.9, true),
        // A flat real curve must stay flat; a moving one move the same way.
        (Target::Shape(10.0), 0.93, 1.08, true),
        (Target::Shape(10.0), 0.93, 1.96, false),
        (Target::Shape(10.0), 1.27, 3.0, true),
        (Target::Shape(10.0), 1.27, 1.0, false),
        (Target::Shape(10.0), 0.85, 0.3, true),
        (Target::Shape(10.0), 0.85, 1.05, false),
    ];
    for (t, real, sim, want) in cases {
        assert_eq!(
            row(t, real, sim).verdict(),
            Some(want),
            "{t:?} real {real} sim {sim}"
        );
    }
    assert_eq!(row(Target::Info, 1.0, 9.0).verdict(), None);
    assert!((row(Target::Info, 4.0, 5.0).error_pct() - 25.0).abs() < 1e-9);
}

fn sample(usecs: f64, switches: f64) -> Sample {
    Sample {
        usecs,
        switches,
        migrations: 0.001,
        cpu_us: 2.0,
    }
}

#[test]
fn rows_score_and_table_say_which_target_missed() {
    let targets = [
        Target::Within(35.0),
        Target::Within(50.0),
        Target::Factor(3.0),
        Target::Info,
    ];
    let real = [sample(1.0, 0.10), sample(1.2, 0.14)];
    let g1 = metric_rows("msg -g 1", "msg", targets, &real, &[sample(1.1, 0.3)]);
    let (m, sd) = g1[0].real;
    assert!(
        (m - 1.1).abs() < 1e-12 && (sd - 0.02f64.sqrt()).abs() < 1e-12,
        "{m} {sd}"
    );
    assert_eq!(g1[1].metric, "switches/msg");
    assert_eq!(
        g1.iter().map(Row::verdict).collect::<Vec<_>>(),
        [Some(true), Some(false), Some(true), None]
    );
    let g4 = metric_rows(
        "msg -g 4",
        "msg",
        targets,
        &[sample(2.0, 0.06)],
        &[sample(2.0, 0.08)],
    );
    let trend = ratio_row("msg -g 1→4", &g1[1], &g4[1], Target::Trend(2.0));
    assert!((trend.real.0 - 0.5).abs() < 1e-9 && (trend.sim.0 - 0.08 / 0.3).abs() < 1e-9);
    assert_eq!(trend.verdict(), Some(true));
    let mut rows = g1.clone();
    rows.extend(g4);
    rows.push(trend);
    assert_eq!(score(&rows), (7, 1));
    let text = table(&rows);
    let miss: Vec<&str> = text.lines().filter(|l| l.ends_with("MISS")).collect();
    assert_eq!(miss.len(), 1, "{text}");
    assert!(
        miss[0].starts_with("msg -g 1 ") && miss[0].contains("switches/msg"),
        "{text}"
    );
    assert!(miss[0].contains("+150.0%"), "{text}");
}

/// A fake perf: `--version` answers, anything else prints `out` to stdout
/// and `err` to stderr and exits with `rc`.
fn fake_perf(name: &str, out: &str, err: &str, rc: i32) -> String {
    let path = tmp(name);
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'perf version 6.1.fake'; exit 0; fi\n\
         printf '%s' '{out}'\nprintf '%s' '{err}' >&2\nexit {rc}\n"
    );
    std::fs::write(&path, script).unwrap();
    Command::new("chmod").arg("+x").arg(&path).status().unwrap();
    path.display().to_string()
}

#[test]
fn missing_or_failing_perf_exits_2_with_the_reason() {
    let (rc, _, err) = schedlab(&[
        "validate",
        "bench",
        "--perf",
        "/nonexistent/perf",
        "--runs",
        "1",
    ]);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains("perf not found") && err.contains("linux-perf"),
        "{err}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["validate", "bench", "--runs", "1"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("perf not found (`perf`)"), "{err}");
    let denied =
        "Error:\nAccess to performance monitoring and observability operations is limited.\n\
                  Consider adjusting /proc/sys/kernel/perf_event_paranoid setting";
    let perf = fake_perf("perf-denied", "", denied, 255);
    let (rc, _, err) = schedlab(&["validate", "bench", "--perf", &perf, "--runs", "1"]);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains(&format!("`{perf} stat -x, -e context-switches")),
        "{err}"
    );
    assert!(
        err.contains("perf_event_paranoid setting") && err.contains("sysctl"),
        "{err}"
    );
    let perf = fake_perf("perf-garbled", "Total time: soon [sec]\n", PIPE_ERR, 0);
    let (rc, _, err) = schedlab(&["validate", "bench", "--perf", &perf, "--runs", "1"]);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains("line 1: cannot read the total time in `Total time: soon [sec]`"),
        "{err}"
    );
}

#[test]
fn bad_flags_exit_2_before_any_real_run() {
    for (args, want) in [
        (&["--runs", "0"][..], "--runs must be at least 1"),
        (
            &["--wait-idle=-1"][..],
            "--wait-idle -1: give 0 to 3600 seconds",
        ),
        (
            &["--machine", "nosuch-machine"][..],
            "unknown machine \"nosuch-machine\"",
        ),
        (&["--set", "kernel.nosuch=1"][..], "kernel.nosuch"),
        (&["--set", "kernel.hz"][..], "expected KEY=VALUE"),
        (
            &["--groups", "4,1"][..],
            "--groups `4,1`: give the counts increasing",
        ),
        (
            &["--json", "/nonexistent/dir/x.json"][..],
            "directory /nonexistent/dir does not exist",
        ),
    ] {
        let mut all = vec!["validate", "bench", "--perf", "/nonexistent/perf"];
        all.extend(args);
        let (rc, _, err) = schedlab(&all);
        assert_eq!(rc, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// Whether this host's perf can count a command's context switches.
fn perf_works() -> Result<(), String> {
    let out = Command::new("perf")
        .args(["stat", "-x,", "-e", "context-switches,task-clock", "true"])
        .output()
        .map_err(|e| format!("perf not runnable: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "perf stat fails: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

#[test]
fn quick_real_run_where_perf_works() {
    if let Err(why) = perf_works() {
        println!("skipped: {why}");
        return;
    }
    let path = tmp("validate-bench.json");
    let p = path.display().to_string();
    let (rc, out, err) = schedlab(&["validate", "bench", "--quick", "--runs", "1", "--json", &p]);
    assert!(rc == 0 || rc == 1, "rc {rc}: {err}");
    assert_eq!(
        out.ends_with("targets missed (rows marked MISS)\n"),
        rc == 1,
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let benches = v["benchmarks"].as_array().unwrap();
    assert_eq!(benches.len(), 10);
    for b in benches {
        let real = &b["real"][0];
        assert!(real["total_s"].as_f64().unwrap() > 0.0, "{b}");
        assert!(real["context_switches"].as_u64().unwrap() > 0, "{b}");
        assert!(real["per_op"]["usecs"].as_f64().unwrap() > 0.0, "{b}");
        assert!(b["sim"][0]["switches"].as_f64().unwrap() > 0.0, "{b}");
    }
    // 10 benchmarks × 4 metrics, and 4 g1 → g4 ratios.
    assert_eq!(v["rows"].as_array().unwrap().len(), 44);
    assert_eq!(v["pass"].as_bool(), Some(rc == 0));
    // `--machine host` is calibrated in the same run; the file is in the JSON.
    let cal = v["calibration"].as_str().unwrap();
    assert!(
        cal.contains("[cost]") && cal.contains("context_switch_ns"),
        "{cal}"
    );
    assert!(v["machine"]
        .as_str()
        .unwrap()
        .starts_with("host-calibrated"));
}

/// The recorded runs of the 16-CPU host (tests/data/host16/raw).
fn host16() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/host16/raw")
}

/// The `Total time: X [sec]` values of a recording, read plainly.
fn total_times(text: &str) -> Vec<f64> {
    text.lines()
        .filter_map(|l| l.split_once("Total time:"))
        .map(|(_, r)| r.trim().trim_end_matches("[sec]").trim().parse().unwrap())
        .collect()
}

#[test]
fn real_from_the_16_cpu_host_compares_every_group_count() {
    let dir = host16();
    let json = tmp("validate-bench-host16.json");
    let (rc, out, err) = schedlab(&[
        "validate",
        "bench",
        "--real-from",
        dir.to_str().unwrap(),
        "--machine",
        "vm-2",
        "--groups",
        "1,4,16",
        "--runs",
        "1",
        "--quick",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(rc == 0 || rc == 1, "rc {rc}: {err}");
    assert!(
        out.starts_with(&format!(
            "schedlab validate bench: real runs recorded in {} (16-vCPU KVM guest",
            dir.display()
        )),
        "{out}"
    );
    for bench in [
        "messaging -g 16 ",
        "messaging -p -t -g 16 ",
        "messaging -t -g 4→16 ",
    ] {
        assert!(out.lines().any(|l| l.starts_with(bench)), "{bench}: {out}");
    }
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // 2 pipes + 4 variants × 3 group counts, 4 metrics each; 4 × 2 ratios.
    assert_eq!(v["benchmarks"].as_array().unwrap().len(), 14);
    assert_eq!(v["rows"].as_array().unwrap().len(), 14 * 4 + 8);
    // The real mean is the files' own: 5 runs of 4 × 400 × 750 messages.
    let text = std::fs::read_to_string(dir.join("s_g4_l750.txt")).unwrap();
    let t = total_times(&text);
    assert_eq!(t.len(), 5);
    let want = t.iter().sum::<f64>() / 5.0 * 1e6 / (4.0 * 400.0 * 750.0);
    let row = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["benchmark"] == "messaging -g 4" && r["metric"] == "usecs/msg")
        .unwrap();
    let got = row["real_mean"].as_f64().unwrap();
    assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    let b = v["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "messaging -g 16")
        .unwrap();
    // Loops from the file name; --quick simulates a fifth of them.
    assert_eq!(
        (b["loops"].as_u64(), b["sim_loops"].as_u64()),
        (Some(187), Some(37))
    );
    assert_eq!(b["real"].as_array().unwrap().len(), 5);
}

#[test]
fn bad_recordings_exit_2_naming_the_file_and_line() {
    let dir = tmp("host16-bad");
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(host16()).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    let d = dir.to_str().unwrap().to_string();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "validate",
            "bench",
            "--real-from",
            &d,
            "--runs",
            "1",
            "--quick",
        ];
        args.extend(extra);
        schedlab(&args)
    };
    let (rc, _, err) = run(&[]);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains("--real-from: give --machine a preset"),
        "{err}"
    );
    let (rc, _, err) = run(&["--machine", "vm-2", "--groups", "1,8"]);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains(&format!("{d}/s_g8_lL.txt: no such file")),
        "{err}"
    );
    // The third run's migrations of a file spoilt (line 23 of 40).
    let path = dir.join("sp_g4_l750.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    assert!(lines[22].contains(",cpu-migrations,"), "{}", lines[22]);
    let spoilt = lines[22].replacen(|c: char| c.is_ascii_digit(), "x", 1);
    lines[22] = &spoilt;
    std::fs::write(&path, lines.join("\n")).unwrap();
    let (rc, _, err) = run(&["--machine", "vm-2"]);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains(&format!(
            "{}, the run at line 17, line 23: cpu-migrations: cannot read the value",
            path.display()
        )),
        "{err}"
    );
    std::fs::write(&path, text.replace("4 groups ==", "2 groups ==")).unwrap();
    let (rc, _, err) = run(&["--machine", "vm-2"]);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains("line 3: `# 2 groups == 160 processes run` where the file name says 4"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
