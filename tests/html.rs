//! `--html`: one self-contained file whose script draws without errors.
//! In a headless Chromium when one is installed (console errors fail the
//! test and a screenshot is saved); otherwise under node with a DOM stub,
//! and the skip is printed (and by .ci/run).

use std::process::Command;

fn tmp(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("schedlab-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name).display().to_string()
}

fn report() -> String {
    let h = tmp("r.html");
    let out = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args([
            "run",
            "--machine",
            "vm-2",
            "--workload",
            "periodic:tasks=3,run=2ms,sleep=1ms",
            "--duration",
            "300ms",
            "--html",
            &h,
            "--trace-pelt",
            "1000",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    h
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

#[test]
fn html_report_is_self_contained_with_data() {
    let h = report();
    let text = std::fs::read_to_string(&h).unwrap();
    assert!(text.starts_with("<!DOCTYPE html>"));
    for bad in ["http://", "https://", "<script src", "<link"] {
        assert!(!text.contains(bad), "not self-contained: {bad}");
    }
    let data = text
        .split("const D = ")
        .nth(1)
        .unwrap()
        .split(";\nconst COLORS")
        .next()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(data).unwrap();
    assert!(v["slices"].as_array().unwrap().len() > 100);
    assert_eq!(v["ncpus"], 2);
    assert!(!v["cdfs"][0]["q"].as_array().unwrap().is_empty());
    assert!(!v["task_series"].as_array().unwrap().is_empty());
    assert!(v["counters"].as_array().unwrap().len() > 5);
}

#[test]
fn html_report_script_runs_without_errors() {
    let h = report();
    if let Some(chrome) = find(&["chromium", "chromium-browser", "google-chrome"]) {
        let shot = tmp("report.png");
        let out = Command::new(chrome)
            .args([
                "--headless",
                "--disable-gpu",
                "--no-sandbox",
                "--enable-logging=stderr",
                "--v=0",
            ])
            .arg(format!("--screenshot={shot}"))
            .arg(format!("file://{h}"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("Uncaught") && !err.contains(":ERROR:CONSOLE"),
            "{err}"
        );
        assert!(std::path::Path::new(&shot).exists());
        println!("screenshot: {shot}");
        return;
    }
    println!("SKIPPED: headless Chromium not found; checked the script under node with a DOM stub");
    if find(&["node"]).is_none() {
        println!("SKIPPED: node not found either");
        return;
    }
    let out = Command::new("node")
        .args(["tests/js/dom-stub.js", &h])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
