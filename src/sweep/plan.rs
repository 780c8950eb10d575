//! A sweep file expanded into points: the base scenario (the file's own
//! scenario tables, or `scenario = "PATH"` with the file's tables merged
//! over it), every `[grid]` combination within every `[[variant]]`, and
//! every seed. Each point is resolved up front, so a bad key or value is
//! reported before anything runs.

use crate::scenario::{set_key, InputError, Scenario, Source};
use serde::{Deserialize, Serialize};
use std::path::Path;
use toml::{Table, Value};

/// The keys of a sweep file that are not scenario tables.
const SWEEP_KEYS: [&str; 5] = ["scenario", "seeds", "grid", "variant", "metrics"];

/// Collected when the file names no `metrics`. `benchmark.*` stands for
/// the benchmark's numeric results, its input parameters left out.
pub const DEFAULT_METRICS: [&str; 7] = [
    "benchmark.*",
    "totals.context_switches",
    "totals.cpu_migrations",
    "totals.wakeups",
    "totals.wakeup_latency_us.mean",
    "totals.wakeup_latency_us.p99",
    "sim.wall_ns",
];

/// One run of a sweep: a grid combination (and variant) with one seed.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Point {
    /// Stable hash of the resolved scenario: the results file's name.
    pub id: String,
    /// One value per `Plan::params` entry, as summary.csv writes it.
    pub values: Vec<String>,
    pub seed: u64,
    /// The resolved scenario as TOML text (every key, defaults included).
    pub scenario: String,
}

/// A sweep ready to run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Plan {
    /// The sweep file's name, for messages and the manifest.
    pub file: String,
    /// Hash of the parameters, metrics and points: a results directory
    /// belongs to one plan.
    pub identity: String,
    /// summary.csv's parameter columns: `variant` first when there are
    /// variants, then the grid keys (sorted).
    pub params: Vec<String>,
    /// JSON paths into a run's results (`totals.context_switches`).
    pub metrics: Vec<String>,
    pub points: Vec<Point>,
}

/// 64-bit FNV-1a: stable across builds and platforms, unlike std's hasher.
pub fn stable_hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Read and expand a sweep file.
pub fn from_file(path: &Path) -> Result<Plan, InputError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::new(format!("{name}: cannot read sweep file: {e}")))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    from_text(Some(name), text, dir)
}

/// Expand a sweep file's text; `dir` is where `scenario = "PATH"` is read from.
pub fn from_text(file: Option<String>, text: String, dir: &Path) -> Result<Plan, InputError> {
    let (src, table) = Source::parse(file, text)?;
    from_table(&src, table, dir)
}

/// Expand a parsed sweep table (a file's, or one built by the Python API).
pub fn from_table(src: &Source, mut t: Table, dir: &Path) -> Result<Plan, InputError> {
    let mut sweep = Table::new();
    for k in SWEEP_KEYS {
        if let Some(v) = t.remove(k) {
            sweep.insert(k.into(), v);
        }
    }
    let (base_src, base) = match sweep.get("scenario") {
        Some(Value::String(p)) => {
            let path = dir.join(p);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| src.err("scenario", format!("cannot read {}: {e}", path.display())))?;
            let (bsrc, mut b) = Source::parse(Some(path.display().to_string()), text)?;
            merge(&mut b, t);
            (bsrc, b)
        }
        Some(_) => return Err(src.err("scenario", "must be a path (a string)")),
        None => (
            Source {
                file: src.file.clone(),
                text: src.text.clone(),
                overrides: src.overrides.clone(),
            },
            t,
        ),
    };
    // The base must resolve on its own: its errors point into its file.
    Scenario::resolve(&base_src, &base)?;
    let seeds = seeds(src, sweep.get("seeds"))?;
    let grid = grid(src, sweep.get("grid"))?;
    let variants = variants(src, sweep.get("variant"))?;
    for (key, values) in &grid {
        for v in values {
            check_key(src, &base_src, &base, &grid_key(key), key, v)?;
        }
    }
    for (i, (_, keys)) in variants.iter().enumerate() {
        for (k, v) in keys {
            check_key(src, &base_src, &base, &format!("variant.{i}.{k}"), k, v)?;
        }
    }
    let metrics = metrics(src, sweep.get("metrics"))?;
    let mut params: Vec<String> = grid.iter().map(|(k, _)| k.clone()).collect();
    if !variants.is_empty() {
        params.insert(0, "variant".into());
    }
    let variants = if variants.is_empty() {
        vec![(None, Vec::new())]
    } else {
        variants.into_iter().map(|(n, k)| (Some(n), k)).collect()
    };
    let mut points = Vec::new();
    for (name, keys) in &variants {
        for combo in combinations(&grid) {
            let mut t = base.clone();
            let mut values: Vec<String> = name.iter().cloned().collect();
            for (k, v) in keys.iter().chain(&combo) {
                set_key(&mut t, k, v.clone())?;
            }
            values.extend(combo.iter().map(|(_, v)| display(v)));
            for &seed in &seeds {
                set_key(&mut t, "sim.seed", Value::Integer(seed as i64))?;
                let sc = Scenario::resolve(&base_src, &t).map_err(|e| {
                    let at = describe(&params, &values);
                    InputError {
                        msg: format!("point {at}: {}", e.msg),
                        ..e
                    }
                })?;
                points.push(point(&sc, values.clone(), seed));
            }
        }
    }
    let ids: Vec<&str> = points.iter().map(|p| p.id.as_str()).collect();
    let identity = stable_hash(&format!("{params:?}{metrics:?}{ids:?}"));
    Ok(Plan {
        file: src.file.clone().unwrap_or_else(|| "<sweep>".into()),
        identity,
        params,
        metrics,
        points,
    })
}

fn point(sc: &Scenario, values: Vec<String>, seed: u64) -> Point {
    let table = sc.to_table();
    let canonical = serde_json::to_string(&table).unwrap_or_default();
    Point {
        id: stable_hash(&canonical),
        values,
        seed,
        scenario: toml::to_string(&table).unwrap_or_default(),
    }
}

/// `kernel.hz=250 seed=3`, for messages.
pub fn describe(params: &[String], values: &[String]) -> String {
    let kv: Vec<String> = params
        .iter()
        .zip(values)
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if kv.is_empty() {
        "(base)".into()
    } else {
        kv.join(" ")
    }
}

/// Tables merge key by key; anything else replaces.
fn merge(into: &mut Table, from: Table) {
    for (k, v) in from {
        match (into.get_mut(&k), v) {
            (Some(Value::Table(a)), Value::Table(b)) => merge(a, b),
            (_, v) => {
                into.insert(k, v);
            }
        }
    }
}

/// A grid value as summary.csv shows it: strings bare, others as TOML.
fn display(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn grid_key(key: &str) -> String {
    format!("grid.\"{key}\"")
}

/// The line of `key = ...` in the sweep file's `[grid]` (keys may be quoted).
fn grid_line(src: &Source, key: &str) -> Option<usize> {
    let mut in_grid = false;
    for (i, line) in src.text.lines().enumerate() {
        let l = line.trim();
        if l.starts_with('[') {
            in_grid = l == "[grid]";
            continue;
        }
        let k = l.split('=').next().unwrap_or("").trim().trim_matches('"');
        if in_grid && k == key && l.contains('=') {
            return Some(i + 1);
        }
    }
    None
}

/// An error about the sweep key `key` (`grid."kernel.hz"`, `seeds`, ...).
fn sweep_err(src: &Source, key: &str, msg: impl Into<String>) -> InputError {
    let line = match key.strip_prefix("grid.\"") {
        Some(k) => grid_line(src, k.trim_end_matches('"')),
        None => src.line_of(key),
    };
    InputError {
        file: src.file.clone(),
        line,
        key: Some(key.to_string()),
        msg: msg.into(),
    }
}

/// `seeds = N` is 1..=N; a list is taken as given; none is seed 1.
fn seeds(src: &Source, v: Option<&Value>) -> Result<Vec<u64>, InputError> {
    let bad = || {
        sweep_err(
            src,
            "seeds",
            "must be a count N ≥ 1 or a non-empty list of seeds ≥ 0",
        )
    };
    match v {
        None => Ok(vec![1]),
        Some(Value::Integer(n)) if *n >= 1 => Ok((1..=*n as u64).collect()),
        Some(Value::Array(a)) if !a.is_empty() => a
            .iter()
            .map(|s| match s.as_integer() {
                Some(n) if n >= 0 => Ok(n as u64),
                _ => Err(bad()),
            })
            .collect(),
        Some(_) => Err(bad()),
    }
}

type Keys = Vec<(String, Value)>;

/// `[grid]`: key → non-empty list of values, in key order.
fn grid(src: &Source, v: Option<&Value>) -> Result<Vec<(String, Vec<Value>)>, InputError> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let t = v
        .as_table()
        .ok_or_else(|| sweep_err(src, "grid", "must be a table of key = [values]"))?;
    let mut keys = Keys::new();
    flatten("", t, &mut keys);
    keys.into_iter()
        .map(|(k, v)| match v {
            Value::Array(a) if !a.is_empty() => Ok((k, a)),
            Value::Array(_) => Err(sweep_err(
                src,
                &grid_key(&k),
                "empty list: give at least one value",
            )),
            _ => Err(sweep_err(
                src,
                &grid_key(&k),
                "must be a list of values, e.g. [250, 1000]",
            )),
        })
        .collect()
}

/// Nested tables as dotted keys: `kernel.wakelist = "idle"` inside a
/// table and `"kernel.wakelist" = "idle"` are the same key.
fn flatten(prefix: &str, t: &Table, out: &mut Keys) {
    for (k, v) in t {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            Value::Table(inner) => flatten(&key, inner, out),
            _ => out.push((key, v.clone())),
        }
    }
}

/// `[[variant]]`: a unique `name` and scenario keys.
fn variants(src: &Source, v: Option<&Value>) -> Result<Vec<(String, Keys)>, InputError> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let list = v
        .as_array()
        .ok_or_else(|| sweep_err(src, "variant", "must be a list of [[variant]] tables"))?;
    let mut out: Vec<(String, Keys)> = Vec::new();
    for (i, item) in list.iter().enumerate() {
        let key = format!("variant.{i}");
        let t = item
            .as_table()
            .ok_or_else(|| sweep_err(src, &key, "must be a table"))?;
        let name = match t.get("name") {
            Some(Value::String(n)) if !n.is_empty() => n.clone(),
            _ => {
                return Err(sweep_err(
                    src,
                    &format!("{key}.name"),
                    "every variant needs a name (a string)",
                ))
            }
        };
        if out.iter().any(|(n, _)| *n == name) {
            return Err(sweep_err(
                src,
                &format!("{key}.name"),
                format!("variant `{name}` is declared twice"),
            ));
        }
        let mut keys = Keys::new();
        let mut rest = t.clone();
        rest.remove("name");
        flatten("", &rest, &mut keys);
        out.push((name, keys));
    }
    Ok(out)
}

/// Setting `key` to `value` on the base must give a valid scenario; the
/// error names the sweep file's line for `at` and the scenario's message.
fn check_key(
    src: &Source,
    base_src: &Source,
    base: &Table,
    at: &str,
    key: &str,
    value: &Value,
) -> Result<(), InputError> {
    let mut t = base.clone();
    set_key(&mut t, key, value.clone())
        .and_then(|_| Scenario::resolve(base_src, &t).map(|_| ()))
        .map_err(|e| {
            let inner = e.key.map(|k| format!("key `{k}`: ")).unwrap_or_default();
            sweep_err(src, at, format!("{key} = {value}: {inner}{}", e.msg))
        })
}

/// `metrics = [...]`, or the defaults.
fn metrics(src: &Source, v: Option<&Value>) -> Result<Vec<String>, InputError> {
    let bad = || {
        sweep_err(
            src,
            "metrics",
            "must be a non-empty list of JSON paths such as \"totals.context_switches\"",
        )
    };
    match v {
        None => Ok(DEFAULT_METRICS.iter().map(|s| s.to_string()).collect()),
        Some(Value::Array(a)) if !a.is_empty() => a
            .iter()
            .map(|x| {
                x.as_str()
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .ok_or_else(bad)
            })
            .collect(),
        Some(_) => Err(bad()),
    }
}

/// Every combination of the grid's values, the last key fastest.
fn combinations(grid: &[(String, Vec<Value>)]) -> Vec<Keys> {
    let mut out: Vec<Keys> = vec![Vec::new()];
    for (k, values) in grid {
        out = out
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((k.clone(), v.clone()));
                    c
                })
            })
            .collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWEEP: &str = r#"
seeds = [3, 4]
[[workload]]
kind = "hackbench"
[grid]
"kernel.hz" = [250, 1000]
[[variant]]
name = "base"
[[variant]]
name = "nolist"
kernel.features.TTWU_QUEUE = false
"#;

    #[test]
    fn variants_cross_the_grid_and_points_round_trip() {
        let plan = from_text(Some("s.toml".into()), SWEEP.into(), Path::new(".")).unwrap();
        assert_eq!(plan.params, ["variant", "kernel.hz"]);
        assert_eq!(plan.points.len(), 2 * 2 * 2);
        assert_eq!(plan.points[7].values, ["nolist", "1000"]);
        assert_eq!(plan.points[7].seed, 4);
        let mut ids: Vec<&str> = plan.points.iter().map(|p| p.id.as_str()).collect();
        ids.dedup();
        assert_eq!(ids.len(), 8, "every point has its own id");
        // The stored scenario text resolves to the same scenario, same id.
        for p in &plan.points {
            let (src, t) = Source::parse(None, p.scenario.clone()).unwrap();
            let again = point(&Scenario::resolve(&src, &t).unwrap(), Vec::new(), p.seed);
            assert_eq!(again.id, p.id);
        }
        let same = from_text(None, SWEEP.into(), Path::new(".")).unwrap();
        assert_eq!(same.identity, plan.identity);
        let other = from_text(None, SWEEP.replace("[3, 4]", "[3]"), Path::new(".")).unwrap();
        assert_ne!(other.identity, plan.identity);
    }
}
