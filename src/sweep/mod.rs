//! `schedlab sweep FILE --out DIR`: every grid point × seed of a sweep
//! file, run on all cores (or on a Ray cluster through the Python
//! package), each result written to the results directory as it ends;
//! `--resume` runs only what is missing or failed. `sweep-report DIR`
//! draws the results.
//!
//! Layer: an experiment, beside `compare`. The points are independent
//! deterministic runs, so which thread runs which point never changes a
//! result; the summary is written in the plan's order.

pub mod plan;
pub mod report;
pub mod results;
pub mod stats;

use crate::report::json::to_json;
use crate::run::run;
use crate::scenario::{InputError, Scenario, Source};
use clap::Args;
use plan::Plan;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Args)]
pub struct SweepArgs {
    /// The sweep file (TOML): a scenario, `seeds`, `[grid]`, `[[variant]]`, `metrics`
    file: PathBuf,
    /// The results directory
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Runs at a time (default: all cores)
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Run only the points whose results are missing or failed
    #[arg(long)]
    resume: bool,
    /// Reuse a results directory written by another sweep file
    #[arg(long)]
    force: bool,
    /// Where the runs go: `local` (threads) or `ray` (the Python package and Ray)
    #[arg(long, default_value = "local", value_name = "local|ray")]
    backend: String,
    /// Ray cluster address for --backend ray (`auto`, `ray://HOST:PORT`); default a local Ray
    #[arg(long, value_name = "ADDR")]
    address: Option<String>,
    /// Also write the HTML report (plots per metric and parameter, Holm-corrected differences)
    #[arg(long, value_name = "PATH")]
    html: Option<PathBuf>,
    /// Quiet: no progress bar (a sweep prints no results of its own; they go to --out)
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args)]
pub struct ReportArgs {
    /// A sweep's results directory
    dir: PathBuf,
    /// Where to write the page (default DIR/report.html)
    #[arg(long, value_name = "PATH")]
    html: Option<PathBuf>,
}

/// Exit 0, 1 when some points failed (named on stderr), 2 on bad input.
pub fn main(args: &SweepArgs) -> i32 {
    let outcome = match args.backend.as_str() {
        "local" => local(args),
        "ray" => return ray_backend(args),
        other => Err(InputError::new(format!(
            "--backend `{other}`: must be `local` or `ray`"
        ))),
    };
    match outcome {
        Ok(failures) if failures.is_empty() => 0,
        Ok(failures) => {
            eprintln!("schedlab: {} run(s) failed:", failures.len());
            for f in &failures {
                eprintln!("  {f}");
            }
            1
        }
        Err(e) => {
            eprintln!("schedlab: error: {e}");
            2
        }
    }
}

/// `--backend local`: the sweep on this machine's threads, then the
/// report; unless quiet, a line of what it wrote.
fn local(args: &SweepArgs) -> Result<Vec<String>, InputError> {
    let plan = plan::from_file(&args.file)?;
    let jobs = args.jobs.unwrap_or_else(all_cores);
    if jobs == 0 {
        return Err(InputError::new("--jobs must be at least 1"));
    }
    let failures = sweep_local(&plan, &args.out, jobs, args.resume, args.force, args.quiet)?;
    if let Some(html) = &args.html {
        report::write(&args.out, html)?;
    }
    if !args.quiet {
        let mut files = vec![args.out.join(results::SUMMARY)];
        files.extend(args.html.clone());
        eprintln!(
            "schedlab: {} holds all {} run(s) ({} failed); wrote {}",
            args.out.display(),
            plan.points.len(),
            failures.len(),
            crate::util::fs::written(&files)
        );
    }
    Ok(failures)
}

/// `schedlab sweep-report DIR`.
pub fn report_main(args: &ReportArgs) -> i32 {
    let out = args
        .html
        .clone()
        .unwrap_or_else(|| args.dir.join("report.html"));
    match report::write(&args.dir, &out) {
        Ok(()) => {
            eprintln!("schedlab: wrote {}", crate::util::fs::written(&[out]));
            0
        }
        Err(e) => {
            eprintln!("schedlab: error: {e}");
            2
        }
    }
}

fn all_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// One point: resolve its scenario text and run it; its JSON results.
pub fn run_point(scenario: &str) -> Result<Value, String> {
    let (src, t) = Source::parse(None, scenario.to_string()).map_err(|e| e.to_string())?;
    let sc = Scenario::resolve(&src, &t).map_err(|e| e.to_string())?;
    let r = run(&src, &sc).map_err(|e| e.to_string())?;
    Ok(to_json(&r.view()))
}

/// Run `plan` into `dir` on `jobs` threads; the failures, as "point: error".
pub fn sweep_local(
    plan: &Plan,
    dir: &Path,
    jobs: usize,
    resume: bool,
    force: bool,
    quiet: bool,
) -> Result<Vec<String>, InputError> {
    let started = results::utc_now();
    let todo = results::open(dir, plan, resume, force, &started)?;
    if todo.is_empty() && !quiet {
        eprintln!(
            "schedlab: {} is complete: all {} run(s) have results, none to run (without --resume \
             every run is done again)",
            dir.display(),
            plan.points.len()
        );
    }
    crate::progress::install(crate::progress::Kind::Runs(Some(todo.len() as u64)), quiet);
    let next = AtomicUsize::new(0);
    let worker = || -> Result<(), InputError> {
        while let Some(&i) = todo.get(next.fetch_add(1, Ordering::Relaxed)) {
            let p = &plan.points[i];
            results::record(dir, plan, p, run_point(&p.scenario))?;
            crate::progress::run_done();
        }
        Ok(())
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..jobs.min(todo.len())).map(|_| s.spawn(worker)).collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(InputError::new("a sweep thread panicked")))
            })
            .collect::<Result<Vec<()>, _>>()
    })?;
    finish(dir, plan, &started)
}

/// After the runs: summary.csv and the manifest's end time; the failures.
pub fn finish(dir: &Path, plan: &Plan, started: &str) -> Result<Vec<String>, InputError> {
    let failures = results::summarize(dir, plan)?;
    results::write_manifest(dir, plan, started, Some(&results::utc_now()))?;
    Ok(failures)
}

/// `--backend ray`: hand the sweep to the Python package (`python -m
/// schedlab sweep ...`), which submits each point as a Ray task.
fn ray_backend(args: &SweepArgs) -> i32 {
    let python = std::env::var("SCHEDLAB_PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = std::process::Command::new(&python)
        .args(["-c", "import schedlab, ray"])
        .output();
    let missing = match &probe {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
                .to_string(),
        ),
        Err(e) => Some(format!("cannot start `{python}`: {e}")),
    };
    if let Some(why) = missing {
        eprintln!(
            "schedlab: error: --backend ray needs the Python package and Ray in `{python}` \
             (set SCHEDLAB_PYTHON to choose another): {why}\n  install them with: \
             pip install ./python ray"
        );
        return 2;
    }
    let mut cmd = std::process::Command::new(&python);
    cmd.args(["-m", "schedlab", "sweep"])
        .arg(&args.file)
        .arg("--out")
        .arg(&args.out)
        .args(["--backend", "ray"]);
    for (flag, on) in [
        ("--resume", args.resume),
        ("--force", args.force),
        ("--quiet", args.quiet),
    ] {
        if on {
            cmd.arg(flag);
        }
    }
    if let Some(a) = &args.address {
        cmd.args(["--address", a]);
    }
    if let Some(h) = &args.html {
        cmd.arg("--html").arg(h);
    }
    match cmd.status() {
        Ok(s) => s.code().unwrap_or(2),
        Err(e) => {
            eprintln!("schedlab: error: cannot start `{python}`: {e}");
            2
        }
    }
}
