//! A sweep's results directory: `manifest.json`, one `ID.json` per point
//! (named by the hash of its resolved scenario, written atomically as soon
//! as the run ends, so a killed sweep loses only the runs in flight) and
//! `summary.csv`, one row per point in the plan's order.

use super::plan::{describe, Plan, Point};
use crate::scenario::InputError;
use crate::util::fs::write_atomic;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

pub const MANIFEST: &str = "manifest.json";
pub const SUMMARY: &str = "summary.csv";
/// The expanded plan, for `sweep-report` and the Python package.
pub const PLAN: &str = "plan.json";

/// The results file of a point.
pub fn point_path(dir: &Path, p: &Point) -> PathBuf {
    dir.join(format!("{}.json", p.id))
}

fn io_err(path: &Path, what: &str, e: impl std::fmt::Display) -> InputError {
    InputError::new(format!("{}: cannot {what}: {e}", path.display()))
}

/// Make `dir` ready for `plan`: refuse a directory written by another
/// sweep (or holding other files) unless `force`; write the manifest.
/// The points to run: all, or with `resume` the missing and failed ones.
pub fn open(
    dir: &Path,
    plan: &Plan,
    resume: bool,
    force: bool,
    started: &str,
) -> Result<Vec<usize>, InputError> {
    let manifest = dir.join(MANIFEST);
    if let Ok(text) = std::fs::read_to_string(&manifest) {
        let theirs: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let id = theirs.get("identity").and_then(Value::as_str);
        if id != Some(plan.identity.as_str()) && !force {
            let file = theirs
                .get("sweep_file")
                .and_then(Value::as_str)
                .unwrap_or("?");
            return Err(InputError {
                file: Some(manifest.display().to_string()),
                line: None,
                key: Some("identity".into()),
                msg: format!(
                    "this results directory was written by another sweep ({file}, or an edited \
                     version of it); give another --out, or --force to reuse it for {}",
                    plan.file
                ),
            });
        }
    } else if !force && has_files(dir) {
        return Err(InputError {
            file: Some(dir.display().to_string()),
            line: None,
            key: Some("--out".into()),
            msg: "not empty and not a sweep's results directory; give another --out, or --force"
                .into(),
        });
    }
    std::fs::create_dir_all(dir).map_err(|e| io_err(dir, "create the directory", e))?;
    write_manifest(dir, plan, started, None)?;
    let path = dir.join(PLAN);
    let text = serde_json::to_string_pretty(plan).unwrap_or_default() + "\n";
    write_atomic(&path, text.as_bytes()).map_err(|e| io_err(&path, "write", e))?;
    Ok((0..plan.points.len())
        .filter(|&i| !resume || !done(&point_path(dir, &plan.points[i])))
        .collect())
}

/// Any file but the temporary ones a killed sweep may leave (`.NAME.tmpPID`).
fn has_files(dir: &Path) -> bool {
    dir.read_dir().is_ok_and(|d| {
        d.flatten()
            .any(|e| !e.file_name().to_string_lossy().starts_with('.'))
    })
}

/// A point's file exists and records no error.
fn done(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .is_some_and(|v| v.get("result").is_some() && v.get("error").is_none())
}

/// The manifest: which sweep, which build, when (`finished` once done).
pub fn write_manifest(
    dir: &Path,
    plan: &Plan,
    started: &str,
    finished: Option<&str>,
) -> Result<(), InputError> {
    let path = dir.join(MANIFEST);
    let v = json!({
        "sweep_file": plan.file,
        "identity": plan.identity,
        "schedlab_version": crate::util::version::LONG,
        "git_commit": crate::util::version::COMMIT,
        "started": started,
        "finished": finished,
        "params": plan.params,
        "metrics": plan.metrics,
        "points": plan.points.len(),
    });
    let text = serde_json::to_string_pretty(&v).unwrap_or_default() + "\n";
    write_atomic(&path, text.as_bytes()).map_err(|e| io_err(&path, "write", e))
}

/// Record one point's outcome: its results, or the error it failed with.
pub fn record(
    dir: &Path,
    plan: &Plan,
    p: &Point,
    outcome: Result<Value, String>,
) -> Result<(), InputError> {
    let params: Map<String, Value> = plan
        .params
        .iter()
        .zip(&p.values)
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    let mut v = json!({ "id": p.id, "params": params, "seed": p.seed, "scenario": p.scenario });
    match outcome {
        Ok(r) => v["result"] = r,
        Err(e) => v["error"] = json!(e),
    }
    let path = point_path(dir, p);
    let text = serde_json::to_string(&v).unwrap_or_default() + "\n";
    write_atomic(&path, text.as_bytes()).map_err(|e| io_err(&path, "write", e))
}

/// Every point's results (None: not run) and errors, in plan order.
pub fn load(dir: &Path, plan: &Plan) -> Vec<Result<Option<Value>, String>> {
    plan.points
        .iter()
        .map(|p| {
            let Ok(text) = std::fs::read_to_string(point_path(dir, p)) else {
                return Ok(None);
            };
            let v: Value = serde_json::from_str(&text).map_err(|e| format!("unreadable: {e}"))?;
            match (v.get("error"), v.get("result")) {
                (Some(e), _) => Err(e.as_str().unwrap_or("failed").to_string()),
                (None, Some(r)) => Ok(Some(r.clone())),
                _ => Err("no result".into()),
            }
        })
        .collect()
}

/// The metric columns: `benchmark.*` becomes the benchmark's numeric
/// fields (sorted, input parameters left out) seen in any result.
pub fn columns(metrics: &[String], results: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for m in metrics {
        let Some(prefix) = m.strip_suffix(".*") else {
            out.push(m.clone());
            continue;
        };
        let mut keys = std::collections::BTreeSet::new();
        for r in results {
            let Some(Value::Object(o)) = r.pointer(&pointer(prefix)) else {
                continue;
            };
            let inputs = crate::compare::input_params(r);
            for (k, v) in o {
                if v.is_number() && !inputs.contains(&k.as_str()) {
                    keys.insert(format!("{prefix}.{k}"));
                }
            }
        }
        out.extend(keys);
    }
    out
}

/// `totals.wakeup_latency_us.p99` as a JSON pointer.
pub fn pointer(path: &str) -> String {
    format!("/{}", path.replace('.', "/"))
}

fn cell(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(x) => x.to_string(),
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Write summary.csv (one row per point, plan order: parameters, `seed`,
/// metrics, `error`) and return the failures as "point: error".
pub fn summarize(dir: &Path, plan: &Plan) -> Result<Vec<String>, InputError> {
    let loaded = load(dir, plan);
    let ok: Vec<Value> = loaded
        .iter()
        .filter_map(|r| r.clone().ok().flatten())
        .collect();
    let cols = columns(&plan.metrics, &ok);
    let mut header: Vec<String> = plan.params.clone();
    header.push("seed".into());
    header.extend(cols.iter().cloned());
    header.push("error".into());
    let mut text = header
        .iter()
        .map(|h| csv_field(h))
        .collect::<Vec<_>>()
        .join(",")
        + "\n";
    let mut failures = Vec::new();
    for (p, r) in plan.points.iter().zip(&loaded) {
        let mut row: Vec<String> = p.values.clone();
        row.push(p.seed.to_string());
        let (result, error) = match r {
            Ok(Some(v)) => (Some(v), String::new()),
            Ok(None) => (None, "not run".to_string()),
            Err(e) => (None, e.clone()),
        };
        row.extend(
            cols.iter()
                .map(|c| cell(result.and_then(|v| v.pointer(&pointer(c))))),
        );
        if !error.is_empty() {
            failures.push(format!(
                "{} seed={}: {error}",
                describe(&plan.params, &p.values),
                p.seed
            ));
        }
        row.push(error);
        text += &(row
            .iter()
            .map(|c| csv_field(c))
            .collect::<Vec<_>>()
            .join(",")
            + "\n");
    }
    let path = dir.join(SUMMARY);
    write_atomic(&path, text.as_bytes()).map_err(|e| io_err(&path, "write", e))?;
    Ok(failures)
}

/// `2026-11-23T18:50:00Z` from the wall clock (manifest only; no result
/// depends on it).
pub fn utc_now() -> String {
    crate::util::date::rfc3339(crate::util::date::now_secs())
}
