//! `schedlab bench --distributions OLD`: does a change that alters results
//! keep the model the same in distribution? Runs a set of scenarios over
//! many seeds with this build and with the OLD binary, and compares every
//! headline metric's two samples: means with their 95 % intervals, Welch's
//! test, and Holm's correction over all the tests (issue 33, part 6).
//!
//! Both builds run as child processes with the same command line, so the
//! OLD binary only has to understand `run --seed N -q --json FILE`.

use crate::compare::{holm, mean_sd, metrics, welch_p};
use crate::sweep::stats::mean_ci95;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// One scenario of the check: a name and `schedlab run`'s arguments.
pub struct DistCase {
    pub id: &'static str,
    args: &'static [&'static str],
}

/// Small, fast scenarios covering the model's parts: sockets and pipes
/// across CPUs, schbench's wakeup latency, periodic tasks, task groups
/// with a quota, pipe ping-pong, a big machine, and many tasks exiting
/// (`hackbench-exit-milan`: 1,200 tasks whose few loops leave their exits
/// a large part of the run, as in seed 002's short runs; it sees a dying
/// task's dequeue, docs/repro/preempt-exit.md).
pub const DIST_CASES: &[DistCase] = &[
    DistCase {
        id: "hackbench-xeon",
        args: &[
            "--machine",
            "xeon-8269cy",
            "-w",
            "hackbench:groups=2,loops=200",
        ],
    },
    DistCase {
        id: "hackbench-pipe-power10",
        args: &[
            "--machine",
            "power10-96",
            "-w",
            "hackbench:groups=4,loops=100,ipc=pipe",
        ],
    },
    DistCase {
        id: "hackbench-exit-milan",
        args: &[
            "--machine",
            "milan-256",
            "-w",
            "hackbench:groups=30,loops=5,ipc=pipe",
        ],
    },
    DistCase {
        id: "pipe-vm2",
        args: &["--machine", "vm-2", "-w", "pipe:loops=20000"],
    },
    DistCase {
        id: "schbench-xeon",
        args: &[
            "--machine",
            "xeon-8269cy",
            "-w",
            "schbench:m=2,t=8",
            "--duration",
            "300ms",
        ],
    },
    DistCase {
        id: "periodic-16",
        args: &[
            "--machine",
            "smp:cpus=16",
            "-w",
            "periodic:tasks=64,run=1ms,sleep=1ms",
            "--duration",
            "500ms",
        ],
    },
    DistCase {
        id: "cgroups",
        args: &[
            "--cgroup",
            "/a:weight=300",
            "--cgroup",
            "/b:max=20000 100000",
            "-w",
            "periodic:tasks=4,run=2ms,sleep=1ms,cgroup=/a",
            "-w",
            "periodic:tasks=4,cgroup=/b",
            "--duration",
            "500ms",
        ],
    },
];

/// One metric of one case: both builds' samples.
struct Tested {
    case: &'static str,
    metric: String,
    old: Vec<f64>,
    new: Vec<f64>,
    p: f64,
}

/// The case named `id`.
pub fn find(id: &str) -> Option<usize> {
    DIST_CASES.iter().position(|c| c.id == id)
}

/// Run `bin` on case `c` with `seed`: the run's metrics.
fn run_one(bin: &Path, c: &DistCase, seed: u32, dir: &Path, tag: &str) -> Result<Value, String> {
    let out = dir.join(format!("{}-{seed}-{tag}.json", c.id));
    let status = std::process::Command::new(bin)
        .arg("run")
        .args(c.args)
        .args([
            "--seed",
            &seed.to_string(),
            "-q",
            "--allow-unfinished",
            "--json",
        ])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    if !status.success() {
        return Err(format!(
            "{} run {} --seed {seed}: {status}",
            bin.display(),
            c.args.join(" ")
        ));
    }
    let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let _ = std::fs::remove_file(&out);
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(Value::Object(metrics(&v)))
}

/// Every (case, seed, build) run, in parallel: per case, per build, the
/// metrics of each seed.
fn run_all(
    old: &Path,
    new: &Path,
    cases: &[usize],
    seeds: u32,
) -> Result<Vec<[Vec<Value>; 2]>, String> {
    let dir = std::env::temp_dir().join(format!("schedlab-dist-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let per_case = 2 * seeds as usize;
    let runs = crate::util::parallel::par_map(cases.len() * per_case, |j| {
        let c = &DIST_CASES[cases[j / per_case]];
        let (side, seed) = ((j % per_case) % 2, (j % per_case) as u32 / 2 + 1);
        let bin = if side == 0 { old } else { new };
        run_one(bin, c, seed, &dir, if side == 0 { "old" } else { "new" })
    });
    let _ = std::fs::remove_dir_all(&dir);
    let mut runs = runs?.into_iter();
    Ok(cases
        .iter()
        .map(|_| {
            let mut sides = [Vec::new(), Vec::new()];
            for j in 0..per_case {
                sides[j % 2].push(runs.next().unwrap_or(Value::Null));
            }
            sides
        })
        .collect())
}

/// The metrics of one case worth testing: present in every run of both
/// builds and not the same constant in all of them.
fn tested(case: &'static str, sides: &[Vec<Value>; 2]) -> Vec<Tested> {
    let Some(first) = sides[0].first().and_then(Value::as_object) else {
        return Vec::new();
    };
    let sample = |side: &[Value], k: &str| -> Option<Vec<f64>> {
        side.iter()
            .map(|v| v.get(k).and_then(Value::as_f64))
            .collect()
    };
    let mut out = Vec::new();
    for k in first.keys() {
        let (Some(old), Some(new)) = (sample(&sides[0], k), sample(&sides[1], k)) else {
            continue;
        };
        if old.iter().chain(&new).all(|&x| x == old[0]) {
            continue;
        }
        let p = welch_p(&old, &new);
        out.push(Tested {
            case,
            metric: k.clone(),
            old,
            new,
            p,
        });
    }
    out
}

/// One printed row: means ± 95 % half-widths, change, p and Holm's p.
fn row(t: &Tested, adj: f64) -> String {
    let ((mo, ho), (mn, hn)) = (mean_ci95(&t.old), mean_ci95(&t.new));
    let change = if mo != 0.0 {
        format!("{:+.1}%", 100.0 * (mn - mo) / mo.abs())
    } else {
        "-".into()
    };
    format!(
        "{:<22} {:<40} {:>20} {:>20} {:>8} {:>8.4} {:>8.4}",
        t.case,
        t.metric,
        format!("{} ±{}", sig(mo), sig(ho)),
        format!("{} ±{}", sig(mn), sig(hn)),
        change,
        t.p,
        adj
    )
}

/// Four significant digits.
fn sig(x: f64) -> String {
    if x == 0.0 || (x.abs() >= 1e-3 && x.abs() < 1e5) {
        let digits = (3 - x.abs().log10().floor() as i32).clamp(0, 6) as usize;
        let digits = if x == 0.0 { 0 } else { digits };
        format!("{x:.digits$}")
    } else {
        format!("{x:.3e}")
    }
}

/// The check's verdicts: Holm-adjusted p per test, and how many differ.
fn verdicts(tests: &[Tested]) -> (Vec<f64>, usize) {
    let adj = holm(&tests.iter().map(|t| t.p).collect::<Vec<_>>());
    let differ = adj.iter().filter(|&&p| p < 0.05).count();
    (adj, differ)
}

/// `bench --distributions OLD`: exit 0 when no metric differs after Holm's
/// correction, 1 when some do (or a run failed), 2 on bad input.
pub fn main(old: &Path, cases: &[usize], seeds: u32, json_out: Option<&PathBuf>) -> i32 {
    if seeds < 2 {
        eprintln!("schedlab bench: --seeds: at least 2 (a spread needs two runs a side)");
        return 2;
    }
    if !old.is_file() {
        eprintln!(
            "schedlab bench: --distributions {}: no such file",
            old.display()
        );
        return 2;
    }
    let new = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("schedlab bench: {e}");
            return 1;
        }
    };
    let all = match run_all(old, &new, cases, seeds) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("schedlab bench: {e}");
            return 1;
        }
    };
    let tests: Vec<Tested> = cases
        .iter()
        .zip(&all)
        .flat_map(|(&i, sides)| tested(DIST_CASES[i].id, sides))
        .collect();
    let (adj, differ) = verdicts(&tests);
    report(old, &new, cases, seeds, &tests, &adj, differ);
    if let Some(path) = json_out {
        if let Err(e) = write_json(path, old, seeds, &tests, &adj) {
            eprintln!("schedlab bench: {}: {e}", path.display());
            return 1;
        }
    }
    i32::from(differ > 0)
}

/// The printed report: per case the metrics tested; the rows that differ,
/// or the five smallest p-values when none does.
fn report(
    old: &Path,
    new: &Path,
    cases: &[usize],
    seeds: u32,
    tests: &[Tested],
    adj: &[f64],
    differ: usize,
) {
    println!(
        "old {} vs new {}: {} case(s) × seeds 1..={seeds}; Welch's t-test per metric, Holm-corrected over all {} tests",
        old.display(),
        new.display(),
        cases.len(),
        tests.len()
    );
    for &i in cases {
        let id = DIST_CASES[i].id;
        let n = tests.iter().filter(|t| t.case == id).count();
        println!("  {id}: {n} metric(s) vary over the seeds");
    }
    println!(
        "{:<22} {:<40} {:>20} {:>20} {:>8} {:>8} {:>8}",
        "case", "metric", "old (95% CI)", "new (95% CI)", "change", "p", "Holm p"
    );
    let mut order: Vec<usize> = (0..tests.len()).collect();
    order.sort_by(|&a, &b| tests[a].p.total_cmp(&tests[b].p));
    let shown = if differ > 0 {
        differ
    } else {
        order.len().min(5)
    };
    for &i in &order[..shown] {
        println!("{}", row(&tests[i], adj[i]));
    }
    if differ > 0 {
        println!(
            "DIFFER: {differ} of {} metrics (Holm-adjusted p < 0.05)",
            tests.len()
        );
    } else {
        println!("same in distribution: no metric differs (Holm-adjusted p ≥ 0.05; the smallest p above)");
    }
}

fn write_json(
    path: &Path,
    old: &Path,
    seeds: u32,
    tests: &[Tested],
    adj: &[f64],
) -> std::io::Result<()> {
    let rows: Vec<Value> = tests
        .iter()
        .zip(adj)
        .map(|(t, &a)| {
            let (mo, so) = mean_sd(&t.old);
            let (mn, sn) = mean_sd(&t.new);
            json!({"case": t.case, "metric": t.metric, "old_mean": mo, "old_sd": so,
                   "new_mean": mn, "new_sd": sn, "p": t.p, "holm_p": a})
        })
        .collect();
    let doc = json!({"old": old.display().to_string(), "seeds": seeds, "tests": rows});
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n";
    crate::util::fs::write_atomic(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(metric: &str, old: &[f64], new: &[f64]) -> Tested {
        Tested {
            case: "c",
            metric: metric.into(),
            old: old.to_vec(),
            new: new.to_vec(),
            p: welch_p(old, new),
        }
    }

    #[test]
    fn a_shift_far_beyond_the_spread_differs_and_noise_does_not() {
        let a: Vec<f64> = (0..30).map(|i| 100.0 + (i % 7) as f64).collect();
        let same: Vec<f64> = (0..30).map(|i| 100.0 + ((i + 3) % 7) as f64).collect();
        let shifted: Vec<f64> = a.iter().map(|x| x + 10.0).collect();
        let tests = vec![
            t("same", &a, &same),
            t("shifted", &a, &shifted),
            t("x", &a, &a),
        ];
        let (adj, differ) = verdicts(&tests);
        assert_eq!(differ, 1);
        assert!(adj[1] < 0.05 && adj[0] >= 0.05 && adj[2] >= 0.05, "{adj:?}");
    }

    #[test]
    fn constants_are_not_tested_and_missing_metrics_are_skipped() {
        let v = |x: f64, y: Option<f64>| {
            let mut m = serde_json::Map::new();
            m.insert("k".into(), json!(x));
            if let Some(y) = y {
                m.insert("y".into(), json!(y));
            }
            m.insert("c".into(), json!(5));
            Value::Object(m)
        };
        let sides = [
            vec![v(1.0, Some(1.0)), v(2.0, None)],
            vec![v(1.5, Some(2.0)), v(2.5, Some(1.0))],
        ];
        let got = tested("case", &sides);
        assert_eq!(
            got.iter().map(|t| t.metric.as_str()).collect::<Vec<_>>(),
            ["k"]
        );
    }
}
