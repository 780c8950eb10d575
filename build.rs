//! Build provenance: the git commit and its date, for `--version`, the JSON
//! `meta` block and the HTML report. The date is the commit's (or
//! SOURCE_DATE_EPOCH's), never the wall clock, so a rebuild of the same
//! commit embeds the same text. Outside a git checkout both read "unknown".
use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day).
fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn build_date() -> String {
    if let Some(secs) = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
    {
        let (y, m, d) = civil(secs.div_euclid(86_400));
        return format!("{y:04}-{m:02}-{d:02}");
    }
    git(&["log", "-1", "--date=short", "--format=%cd"]).unwrap_or_else(|| "unknown".into())
}

/// Rebuild when HEAD moves: the HEAD file (a worktree has its own), the
/// branch ref it names, and packed refs; only paths that exist, since
/// cargo reruns a build script on every build for a missing one.
fn watch_head() {
    let mut paths = vec!["HEAD".to_string(), "packed-refs".to_string()];
    paths.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for p in paths
        .iter()
        .filter_map(|p| git(&["rev-parse", "--git-path", p]))
    {
        if Path::new(&p).exists() {
            println!("cargo:rerun-if-changed={p}");
        }
    }
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=SCHEDLAB_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=SCHEDLAB_BUILD_DATE={}", build_date());
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    println!("cargo:rerun-if-changed=build.rs");
    watch_head();
}
