//! Provenance of a report: what ran, with which build, when. The `meta`
//! object of every `--json` and the header of every HTML page.

use super::RunView;
use crate::util::date::{now_secs, rfc3339};
use crate::util::version::{BUILD_DATE, COMMIT, VERSION};
use serde_json::{json, Value};

/// `{version, commit, build_date, command, date}`: the schedlab build, the
/// argument list it was started with and the date of the run.
pub fn meta() -> Value {
    json!({
        "version": VERSION,
        "commit": COMMIT,
        "build_date": BUILD_DATE,
        "command": std::env::args().collect::<Vec<_>>(),
        "date": run_date(),
    })
}

/// `v` (a JSON object) with `meta()` added: for every `--json` document.
pub fn with_meta(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.insert("meta".into(), meta());
    }
    v
}

/// What one run of a page was: its title, seed, resolved scenario (TOML)
/// and the benchmarks' own result lines (hackbench's `Time:`, …).
pub fn run_header(v: &RunView) -> Value {
    let k = v.kernel;
    let results: Vec<String> = v
        .workloads
        .iter()
        .flat_map(|(w, pids)| w.report(k, pids).lines)
        .collect();
    json!({
        "title": title(v),
        "seed": v.seed,
        "scenario": toml::to_string(&v.scenario).unwrap_or_default(),
        "results": results,
    })
}

/// "hackbench + periodic on xeon-8269cy (104 CPUs)".
pub fn title(v: &RunView) -> String {
    let names: Vec<&str> = v.workloads.iter().map(|(w, _)| w.name()).collect();
    format!(
        "{} on {} ({} CPUs)",
        names.join(" + "),
        v.machine,
        v.kernel.rqs.len()
    )
}

/// The run's date in UTC, `2026-11-23T18:52:43Z`: SOURCE_DATE_EPOCH when
/// it is set (reproducible pages and digests), else the wall clock.
fn run_date() -> String {
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or_else(now_secs);
    rfc3339(secs)
}
