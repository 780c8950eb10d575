//! Provenance of a report: what ran, with which build, when. The `meta`
//! object of every `--json` and the header of every HTML page.

use super::RunView;
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
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        });
    rfc3339(secs)
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian).
fn rfc3339(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date, via 400-year eras that
    // start on March 1st (so the leap day is the era year's last day).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::rfc3339;

    #[test]
    fn dates_are_utc_civil_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_459_963), "2026-11-23T18:52:43Z");
    }
}
