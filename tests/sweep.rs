//! `schedlab sweep`: the results directory, kill + --resume, failures and
//! bad input.

mod common;
use common::{schedlab, tmp};
use std::path::{Path, PathBuf};
use std::process::Command;

/// 2 × 2 grid × 3 seeds of a short hackbench on small machines.
const SWEEP: &str = r#"
seeds = 3
[machine]
preset = "smp:cpus=4"
[[workload]]
kind = "hackbench"
groups = 1
loops = 40
[grid]
"kernel.wakelist" = ["on_cpu_nr_le1", "idle"]
"kernel.hz" = [250, 1000]
"#;

fn sweep_file(name: &str, text: &str) -> PathBuf {
    let p = tmp(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// summary.csv without its wall-clock columns (the only ones that vary).
fn summary(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
    let keep: Vec<bool> = rows[0].iter().map(|h| !h.contains("wall")).collect();
    rows.iter()
        .map(|r| {
            r.iter()
                .zip(&keep)
                .filter(|(_, k)| **k)
                .map(|(c, _)| *c)
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect()
}

fn point_files(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.filter(|e| {
            let n = e
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .into_owned();
            n.ends_with(".json") && !n.starts_with('.') && n != "manifest.json" && n != "plan.json"
        })
        .count()
    })
}

#[test]
fn a_sweep_writes_one_file_per_run_and_a_summary_row_each() {
    let f = sweep_file("grid.toml", SWEEP);
    let out = tmp("grid-out");
    let (rc, _, err) = schedlab(&["sweep", s(&f), "--out", s(&out), "--jobs", "2"]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(point_files(&out), 12);
    let rows = summary(&out);
    assert_eq!(rows.len(), 13);
    assert!(
        rows[0].starts_with("kernel.hz,kernel.wakelist,seed,benchmark.")
            && rows[0].contains(",benchmark.time_s,")
            && rows[0].contains("totals.context_switches")
            && !rows[0].contains("benchmark.loops"),
        "{}",
        rows[0]
    );
    assert!(rows[1].starts_with("250,on_cpu_nr_le1,1,") && rows[12].starts_with("1000,idle,3,"));
    // The same sweep on one thread gives the same rows.
    let one = tmp("grid-one");
    let (rc, _, err) = schedlab(&[
        "sweep",
        s(&f),
        "--out",
        s(&one),
        "--jobs",
        "1",
        "--html",
        s(&one.join("r.html")),
    ]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(summary(&one), rows);
    let html = std::fs::read_to_string(one.join("r.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("Holm"));
}

#[test]
fn killed_then_resumed_gives_the_uninterrupted_summary() {
    let f = sweep_file("kill.toml", SWEEP);
    let whole = tmp("kill-whole");
    let (rc, _, err) = schedlab(&["sweep", s(&f), "--out", s(&whole), "--jobs", "2"]);
    assert_eq!(rc, 0, "{err}");
    // Kill after 0, 1, then 5 results, each time resuming the same directory.
    let out = tmp("kill-out");
    for after in [0, 1, 5] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args([
                "sweep",
                s(&f),
                "--out",
                s(&out),
                "--jobs",
                "2",
                "--resume",
                "--quiet",
            ])
            .spawn()
            .unwrap();
        while point_files(&out) < after && child.try_wait().unwrap().is_none() {
            std::thread::yield_now();
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let (rc, _, err) = schedlab(&["sweep", s(&f), "--out", s(&out), "--resume"]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(summary(&out), summary(&whole));
}

#[test]
fn a_failing_point_is_recorded_and_the_sweep_exits_1() {
    // fds = 0 is a valid key but not a valid value: the run fails.
    let f = sweep_file(
        "fail.toml",
        r#"
seeds = 2
[machine]
preset = "smp:cpus=2"
[[workload]]
kind = "hackbench"
groups = 1
loops = 20
[grid]
"workload.0.fds" = [2, 0]
"#,
    );
    let out = tmp("fail-out");
    let (rc, _, err) = schedlab(&["sweep", s(&f), "--out", s(&out), "--quiet"]);
    assert_eq!(rc, 1, "{err}");
    assert!(
        err.contains("2 run(s) failed") && err.contains("workload.0.fds=0 seed=2"),
        "{err}"
    );
    let text = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("must be a whole number"))
            .count(),
        2
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("2,") && l.ends_with(','))
            .count(),
        2
    );
    // --resume runs the failed points again (and they fail again).
    let (rc, _, err) = schedlab(&["sweep", s(&f), "--out", s(&out), "--quiet", "--resume"]);
    assert_eq!(rc, 1, "{err}");
}

#[test]
fn bad_sweep_files_name_file_line_and_key() {
    let cases = [
        (
            "unknown.toml",
            "seeds = 2\n[[workload]]\nkind = \"hackbench\"\n[grid]\n\"kernel.nope\" = [1]\n",
            ":5: key `grid.\"kernel.nope\"`",
        ),
        (
            "empty.toml",
            "[[workload]]\nkind = \"hackbench\"\n[grid]\n\"kernel.hz\" = []\n",
            ":4: key `grid.\"kernel.hz\"`: empty list",
        ),
        ("malformed.toml", "seeds = 2\n[grid\n", ":2: malformed TOML"),
        (
            "seeds.toml",
            "seeds = 0\n[[workload]]\nkind = \"hackbench\"\n",
            ":1: key `seeds`",
        ),
        (
            "value.toml",
            "[[workload]]\nkind = \"hackbench\"\n[grid]\n\"kernel.hz\" = [250, 7]\n",
            ":4: key `grid.\"kernel.hz\"`",
        ),
    ];
    for (name, text, want) in cases {
        let f = sweep_file(name, text);
        let (rc, _, err) = schedlab(&["sweep", s(&f), "--out", s(&tmp("never"))]);
        assert_eq!(rc, 2, "{name}: {err}");
        assert!(err.contains(&format!("{name}{want}")), "{name}: {err}");
    }
    assert!(!tmp("never").exists());
}

#[test]
fn another_sweeps_directory_is_refused_unless_forced() {
    let a = sweep_file("a.toml", SWEEP);
    let b = sweep_file("b.toml", &SWEEP.replace("seeds = 3", "seeds = 1"));
    let out = tmp("shared-out");
    let (rc, _, err) = schedlab(&["sweep", s(&b), "--out", s(&out), "--quiet"]);
    assert_eq!(rc, 0, "{err}");
    let (rc, _, err) = schedlab(&["sweep", s(&a), "--out", s(&out), "--quiet"]);
    assert_eq!(rc, 2);
    assert!(
        err.contains("manifest.json") && err.contains("--force"),
        "{err}"
    );
    // --force reuses it; the one-seed runs are the same points and stay.
    let (rc, _, err) = schedlab(&[
        "sweep",
        s(&a),
        "--out",
        s(&out),
        "--quiet",
        "--force",
        "--resume",
    ]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(summary(&out).len(), 13);
}

#[test]
fn a_sweep_says_what_it_wrote_and_when_nothing_was_left_to_run() {
    let f = sweep_file("said.toml", &SWEEP.replace("seeds = 3", "seeds = 1"));
    let out = tmp("said-out");
    let (rc, _, err) = schedlab(&["sweep", s(&f), "--out", s(&out), "--jobs", "2"]);
    assert_eq!(rc, 0, "{err}");
    let summary = out.join("summary.csv");
    assert!(
        err.contains(&format!("wrote {} (", summary.display())),
        "{err}"
    );
    assert!(err.contains("all 4 run(s) (0 failed)"), "{err}");
    let (rc, _, err) = schedlab(&["sweep", s(&f), "--out", s(&out), "--resume"]);
    assert_eq!(rc, 0, "{err}");
    assert!(
        err.contains("is complete") && err.contains("without --resume"),
        "{err}"
    );
    let (rc, _, err) = schedlab(&["sweep", s(&f), "--out", s(&out), "--resume", "-q"]);
    assert_eq!(rc, 0, "{err}");
    assert!(err.is_empty(), "{err}");
}
