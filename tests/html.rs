//! `run --html` and `compare --html`: self-contained files whose script
//! draws without errors. In a headless Chromium when one is installed
//! (errors in the page or on its console fail the test; screenshots are
//! saved under target/tmp); otherwise under node with a DOM stub, and the
//! skip is printed (and by .ci/run).

mod common;
use common::{schedlab, tmp};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const WORKLOAD: &[&str] = &[
    "--machine",
    "vm-2",
    "--workload",
    "periodic:tasks=3,run=2ms,sleep=1ms",
    "--duration",
    "300ms",
];

fn run_report(name: &str) -> PathBuf {
    let h = tmp(name);
    let mut args = vec!["run"];
    args.extend(WORKLOAD);
    let p = h.display().to_string();
    args.extend(["--html", &p, "--trace-pelt", "1000", "-q"]);
    let (rc, _, err) = schedlab(&args);
    assert_eq!(rc, 0, "{err}");
    h
}

fn compare_report(name: &str) -> PathBuf {
    let h = tmp(name);
    let mut args = vec!["compare"];
    args.extend(WORKLOAD);
    let p = h.display().to_string();
    args.extend([
        "--set-a",
        "kernel.hz=250",
        "--set-b",
        "kernel.hz=1000",
        "--runs",
        "2",
        "--html",
        &p,
    ]);
    let (rc, out, err) = schedlab(&args);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("A/B comparison"), "{out}");
    h
}

/// The page's inline data: the JSON on the line `const NAME = …;`.
fn page_data(text: &str, name: &str) -> Value {
    let prefix = format!("const {name} = ");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .expect("data line");
    serde_json::from_str(line.strip_suffix(';').unwrap()).unwrap()
}

fn assert_self_contained(text: &str) {
    assert!(text.starts_with("<!DOCTYPE html>"));
    for bad in ["http://", "https://", "<script src", "<link"] {
        assert!(!text.contains(bad), "not self-contained: {bad}");
    }
}

fn assert_run_data(v: &Value) {
    assert!(v["slices"].as_array().unwrap().len() > 100);
    assert_eq!(v["ncpus"], 2);
    assert!(!v["cdfs"][0]["q"].as_array().unwrap().is_empty());
    assert!(v["counters"].as_array().unwrap().len() > 5);
}

#[test]
fn html_report_is_self_contained_with_data() {
    let text = std::fs::read_to_string(run_report("r.html")).unwrap();
    assert_self_contained(&text);
    let v = page_data(&text, "D");
    assert_run_data(&v);
    assert!(!v["task_series"].as_array().unwrap().is_empty());
}

#[test]
fn compare_html_has_both_sides_and_the_statistics() {
    let text = std::fs::read_to_string(compare_report("c.html")).unwrap();
    assert_self_contained(&text);
    let v = page_data(&text, "C");
    for (side, label) in [("a", "kernel.hz=250"), ("b", "kernel.hz=1000")] {
        assert_eq!(v[side]["label"], label);
        assert_run_data(&v[side]["run"]);
    }
    // The sides differ in their tick, so their timelines differ.
    assert_ne!(v["a"]["run"]["slices"], v["b"]["run"]["slices"]);
    let rows = v["rows"].as_array().unwrap();
    let ctx = rows
        .iter()
        .find(|r| r["metric"] == "totals.context_switches")
        .expect("context switches row");
    for k in ["a_mean", "b_mean", "a_stddev", "p_value", "significant"] {
        assert!(!ctx[k].is_null(), "{k}");
    }
    // Same command, same page, byte for byte.
    let again = std::fs::read_to_string(compare_report("c2.html")).unwrap();
    assert!(again == text, "compare --html is not deterministic");
}

fn find(names: &[&str]) -> Option<String> {
    names.iter().find_map(|n| {
        Command::new("which")
            .arg(n)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    })
}

/// Run headless Chromium on `page` with `args`: (stdout, stderr).
fn chromium(chrome: &str, page: &Path, profile: &str, args: &[String]) -> (String, String) {
    let out = Command::new(chrome)
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", tmp(profile).display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Load `page` in Chromium: the script must run to its end with nothing
/// written to the console or the page's error box; save a screenshot.
fn check_in_chromium(chrome: &str, page: &Path, shot: &str) {
    let (dom, err) = chromium(chrome, page, shot, &["--dump-dom".into()]);
    let console: Vec<&str> = err.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console output: {console:#?}");
    assert!(
        dom.contains("data-rendered=\"yes\""),
        "script did not finish"
    );
    assert!(dom.contains("<pre id=\"errors\"></pre>"), "page errors");
    let png = Path::new(env!("CARGO_TARGET_TMPDIR")).join(shot);
    let _ = std::fs::remove_file(&png);
    chromium(
        chrome,
        page,
        shot,
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1400,2000".into(),
        ],
    );
    // A PNG of the window's size: width and height in the IHDR chunk.
    let bytes = std::fs::read(&png).expect("screenshot");
    assert_eq!(&bytes[1..4], b"PNG");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    assert_eq!((be(16), be(20)), (1400, 2000));
    println!("screenshot: {}", png.display());
}

#[test]
fn html_scripts_run_without_errors() {
    let pages = [
        (run_report("rb.html"), "run-report.png"),
        (compare_report("cb.html"), "compare-report.png"),
    ];
    if let Some(chrome) = find(&["chromium", "chromium-browser", "google-chrome"]) {
        for (page, shot) in &pages {
            check_in_chromium(&chrome, page, shot);
        }
        return;
    }
    println!(
        "SKIPPED: headless Chromium not found; checking the scripts under node with a DOM stub"
    );
    if find(&["node"]).is_none() {
        println!("SKIPPED: node not found either");
        return;
    }
    for (page, _) in &pages {
        let out = Command::new("node")
            .arg("tests/js/dom-stub.js")
            .arg(page)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            page.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
