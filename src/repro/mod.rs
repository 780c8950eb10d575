//! `schedlab repro`: the seeds' experiments, before vs after, with the
//! seed's published numbers beside the simulated ones. One file per seed
//! series; [`run_embedded`] is the runner they share and [`table`] the
//! seed-vs-simulation table they print. [`summary`] sets every row the
//! seeds publish ([`seed_rows`]) beside the series' cells and judges it.
//!
//! Layer: experiments. Builds on `scenario`, `run`, `report` and the layers
//! below; never imports `cli`.

pub mod completion;
pub mod pelt;
pub mod preempt;
pub mod seed_rows;
pub mod summary;
pub mod swb;
pub mod table;
pub mod wakelist;

use crate::run::{run, RunOutput};
use crate::scenario::{parse_set_value, set_key, Scenario, Source};
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args)]
pub struct ReproArgs {
    /// Quiet: no progress bar, and only the results: the tables, no notes
    #[arg(long, short, global = true)]
    quiet: bool,
    #[command(subcommand)]
    which: Which,
}

/// The seed series, one per subcommand: `schedlab repro NAME`.
#[derive(Subcommand)]
enum Which {
    /// Seed 000: remote wakeups through the wakelist (kernel.wakelist on_cpu_nr_le1 → idle)
    Wakelist(wakelist::WakelistArgs),
    /// Seed 002: hackbench -pipe 60 process, preempt=none vs PREEMPT_AUTO's preempt=none
    Preempt(preempt::PreemptArgs),
    /// Seed 003: completions on simple wait queues (kernel.completion waitqueue | swait | swait-defer)
    Completion(completion::CompletionArgs),
    /// Seed 001: should_we_balance skips the siblings of a busy core (SWB_SMT_SKIP off → on)
    Swb(swb::SwbArgs),
    /// Seed 004: PELT rewrite, LKP hackbench top level vs 3 cgroup levels deep, TG_LOAD_AVG_FILTER off → on
    Pelt(pelt::PeltArgs),
    /// Every seed's published before/after rows beside the simulation, each judged by one rule
    Summary(summary::SummaryArgs),
}

/// Run the chosen series; each prints its tables and notes.
pub fn main(args: &ReproArgs) -> i32 {
    let json = match &args.which {
        Which::Wakelist(a) => &a.json,
        Which::Preempt(a) => &a.json,
        Which::Completion(a) => &a.json,
        Which::Swb(a) => &a.json,
        Which::Pelt(a) => &a.json,
        Which::Summary(a) => &a.json,
    };
    if json
        .as_ref()
        .is_some_and(|p| p.as_os_str() == crate::util::sink::STDIO)
    {
        eprintln!(
            "schedlab: error: --json -: repro prints its tables on stdout; give the JSON a file"
        );
        return 2;
    }
    crate::progress::install(crate::progress::Kind::Runs(None), args.quiet);
    let r = match &args.which {
        Which::Wakelist(a) => wakelist::repro(a, args.quiet),
        Which::Preempt(a) => preempt::repro(a, args.quiet),
        Which::Completion(a) => completion::repro(a, args.quiet),
        Which::Swb(a) => swb::repro(a, args.quiet),
        Which::Pelt(a) => pelt::repro(a, args.quiet),
        Which::Summary(a) => summary::repro(a, args.quiet),
    };
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("schedlab: error: {e}");
            2
        }
    }
}

/// The seeds of each cell for `--runs` and `--seed`: with one run, the
/// scenarios' own (None) unless --seed is given; else --seed (default 1)
/// and the next runs − 1.
pub fn run_seeds(runs: u64, seed: Option<u64>) -> Vec<Option<u64>> {
    match runs {
        1 => vec![seed],
        n => (0..n).map(|i| Some(seed.unwrap_or(1) + i)).collect(),
    }
}

/// How a series' header names the seeds `run_seeds` gives.
pub fn seeds_label(runs: u64, seed: Option<u64>) -> String {
    let first = seed.unwrap_or(1);
    match (runs, seed) {
        (1, None) => "1 (the scenarios')".to_string(),
        (1, Some(s)) => s.to_string(),
        (n, _) => format!("{first}..{} (mean of {n} runs per cell)", first + n - 1),
    }
}

/// Write a series' results as `--json` asks: `meta` added, atomically.
pub fn write_json(path: Option<&PathBuf>, results: serde_json::Value) -> Result<(), String> {
    let Some(p) = path else { return Ok(()) };
    let text = serde_json::to_string_pretty(&crate::report::meta::with_meta(results))
        .unwrap_or_default()
        + "\n";
    crate::util::fs::write_atomic(p, text.as_bytes())
        .map_err(|e| format!("--json: cannot write {}: {e}", p.display()))
}

/// Run a scenario file built into schedlab (`path` names it in errors)
/// with `key = value` overrides, as `--set` takes them.
pub fn run_embedded(path: &str, text: &str, sets: &[(&str, String)]) -> Result<RunOutput, String> {
    let (src, mut t) =
        Source::parse(Some(path.to_string()), text.to_string()).map_err(|e| e.to_string())?;
    for (k, v) in sets {
        set_key(&mut t, k, parse_set_value(v)).map_err(|e| e.to_string())?;
    }
    let sc = Scenario::resolve(&src, &t).map_err(|e| e.to_string())?;
    run(&src, &sc).map_err(|e| e.to_string())
}
