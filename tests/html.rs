//! `run --html` and `compare --html`: self-contained files whose script
//! draws without errors. In a headless Chromium when one is installed
//! (errors in the page or on its console fail the test; screenshots are
//! saved under target/tmp); otherwise under node with a DOM stub, and the
//! skip is printed (and by .ci/run).

mod common;
use common::tmp;
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

/// SOURCE_DATE_EPOCH of the tests' runs: 2023-11-14T22:13:20Z.
const EPOCH: &str = "1700000000";

/// Run schedlab with a fixed SOURCE_DATE_EPOCH: (exit code, stdout, stderr).
fn schedlab(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(args)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .output()
        .expect("run schedlab");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `run WORKLOAD --html NAME` with `extra` flags: the page and stderr.
fn report_with(name: &str, workload: &[&str], extra: &[&str]) -> (PathBuf, String) {
    let h = tmp(name);
    let mut args = vec!["run"];
    args.extend(workload);
    let p = h.display().to_string();
    args.extend(["--html", &p, "-q"]);
    args.extend(extra);
    let (rc, _, err) = schedlab(&args);
    assert_eq!(rc, 0, "{err}");
    (h, err)
}

fn run_report(name: &str) -> PathBuf {
    report_with(name, WORKLOAD, &["--trace-pelt", "1000"]).0
}

/// A 24-CPU machine: above 16 CPUs, so heatmaps, in two LLC groups.
const BIG: &[&str] = &[
    "--machine",
    "smp:cpus=24,llc=12",
    "--workload",
    "periodic:tasks=30,run=2ms,sleep=1ms",
    "--duration",
    "100ms",
];

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
    // The header: the benchmark's own lines, the seed, the scenario.
    let h = &v["header"];
    assert_eq!(h["title"], "periodic on vm-2 (2 CPUs)");
    assert!(h["results"][0].as_str().unwrap().starts_with("periodic:"));
    assert!(h["scenario"].as_str().unwrap().contains("[machine]"), "{h}");
    assert!(h["seed"].is_u64());
}

/// The slices (cpu, start, end, task) of a page's flat, delta-coded array.
fn slices(v: &Value) -> Vec<[u64; 4]> {
    let f: Vec<u64> = serde_json::from_value(v["slices"].clone()).unwrap();
    let mut t = 0;
    f.chunks(4)
        .map(|c| {
            t += c[1];
            [c[0], t, t + c[2], c[3]]
        })
        .collect()
}

/// `meta`: the build, the argument list and SOURCE_DATE_EPOCH's date.
fn assert_meta(m: &Value, flag: &str) {
    assert_eq!(m["version"], env!("CARGO_PKG_VERSION"));
    assert!(!m["commit"].as_str().unwrap().is_empty());
    assert_eq!(m["date"], "2023-11-14T22:13:20Z");
    let cmd: Vec<String> = serde_json::from_value(m["command"].clone()).unwrap();
    assert!(cmd.iter().any(|a| a == flag), "{cmd:?}");
}

#[test]
fn html_report_is_self_contained_with_data() {
    let text = std::fs::read_to_string(run_report("r.html")).unwrap();
    assert_self_contained(&text);
    assert!(text.contains("<title>schedlab: periodic on vm-2 (2 CPUs)</title>"));
    let v = page_data(&text, "D");
    assert_run_data(&v);
    assert_meta(&v["meta"], "--html");
    assert!(!v["task_series"].as_array().unwrap().is_empty());
    assert!(v["pelt_warning"].is_null());
    // Two CPUs: per-CPU lines, no heatmap.
    assert_eq!(v["cpu_series"].as_array().unwrap().len(), 2);
    // Each latency panel counts its samples: all tasks is the sum of the
    // comms (one comm here), and the three tasks' first runs are counted.
    let cdfs = v["cdfs"].as_array().unwrap();
    let n = cdfs[0]["n"].as_u64().unwrap();
    assert!(n > 100, "{n}");
    let by_comm: u64 = cdfs[1..].iter().map(|c| c["n"].as_u64().unwrap()).sum();
    assert_eq!(n, by_comm);
    assert_eq!(cdfs[0]["new"], 3);
}

#[test]
fn json_carries_meta() {
    let path = tmp("meta.json");
    let p = path.display().to_string();
    let mut args = vec!["run"];
    args.extend(WORKLOAD);
    args.extend(["--json", &p, "-q"]);
    let (rc, _, err) = schedlab(&args);
    assert_eq!(rc, 0, "{err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_meta(&v["meta"], "--json");
}

#[test]
fn compare_json_carries_meta() {
    let path = tmp("cmeta.json");
    let p = path.display().to_string();
    let mut args = vec!["compare"];
    args.extend(WORKLOAD);
    args.extend([
        "--set-b",
        "kernel.hz=1000",
        "--runs",
        "1",
        "--json",
        &p,
        "-q",
    ]);
    let (rc, _, err) = schedlab(&args);
    assert_eq!(rc, 0, "{err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_meta(&v["meta"], "--json");
}

#[test]
fn big_machines_get_heatmaps_by_llc_group() {
    let (page, _) = report_with("big.html", BIG, &[]);
    let v = page_data(&std::fs::read_to_string(page).unwrap(), "D");
    assert_eq!(v["ncpus"], 24);
    assert!(v["cpu_series"].as_array().unwrap().is_empty());
    let groups = v["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{groups:?}");
    let mut cpus: Vec<u64> = groups
        .iter()
        .flat_map(|g| serde_json::from_value::<Vec<u64>>(g["cpus"].clone()).unwrap())
        .collect();
    cpus.sort_unstable();
    assert_eq!(cpus, (0..24).collect::<Vec<u64>>());
    for key in ["util", "nr", "busy"] {
        let rows = v["bins"][key].as_array().unwrap();
        assert_eq!(rows.len(), 24);
        let n = rows[0].as_array().unwrap().len();
        assert!((100..=1024).contains(&n), "{n} bins");
    }
    // 30 tasks on 24 CPUs: every CPU was busy some of the time.
    for cpu in v["bins"]["busy"].as_array().unwrap() {
        assert!(cpu.as_array().unwrap().iter().any(|b| b.as_u64() > Some(0)));
    }
}

#[test]
fn trace_window_applies_to_the_page() {
    let (page, _) = report_with("win.html", WORKLOAD, &["--trace-window", "100ms..200ms"]);
    let v = page_data(&std::fs::read_to_string(page).unwrap(), "D");
    assert_eq!(
        (v["start"].as_u64(), v["end"].as_u64()),
        (Some(100_000_000), Some(200_000_000))
    );
    let s = slices(&v);
    assert!(s.len() > 50);
    assert!(s.iter().all(|s| s[1] >= 100_000_000 && s[2] <= 200_000_000));
    assert_eq!(v["bins"]["start"], 100_000_000);
}

#[test]
fn trace_pelt_of_tasks_that_never_ran_warns() {
    let (page, err) = report_with("pelt.html", WORKLOAD, &["--trace-pelt", "nosuchcomm"]);
    assert!(err.contains("warning: --trace-pelt nosuchcomm"), "{err}");
    assert!(err.contains("comms that ran: periodic"), "{err}");
    let v = page_data(&std::fs::read_to_string(page).unwrap(), "D");
    assert!(v["pelt_warning"].as_str().unwrap().contains("periodic"));
}

#[test]
fn summary_condenses_cpus_per_llc_above_32() {
    let (rc, out, err) = schedlab(&[
        "run",
        "--machine",
        "xeon-8269cy",
        "--workload",
        "periodic:tasks=8",
        "--duration",
        "20ms",
    ]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("by LLC group"), "{out}");
    assert!(
        out.contains("socket 1 · LLC 1 · CPUs 26-51,78-103"),
        "{out}"
    );
    assert!(!out.contains("cpu103"), "{out}");
}

#[test]
fn compare_html_has_both_sides_and_the_statistics() {
    let text = std::fs::read_to_string(compare_report("c.html")).unwrap();
    assert_self_contained(&text);
    let v = page_data(&text, "C");
    assert_meta(&v["meta"], "--html");
    assert!(v["title"].as_str().unwrap().contains("periodic on vm-2"));
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
    for k in [
        "a_mean",
        "b_mean",
        "a_stddev",
        "p_value",
        "p_holm",
        "significant",
    ] {
        assert!(!ctx[k].is_null(), "{k}");
    }
    // Same command (but the output's name), same page, byte for byte.
    let again = std::fs::read_to_string(compare_report("c2.html")).unwrap();
    assert!(
        again.replace("c2.html", "c.html") == text,
        "compare --html is not deterministic"
    );
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
/// Returns the page's DOM after its script ran.
fn check_in_chromium(chrome: &str, page: &Path, shot: &str) -> String {
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
    dom
}

/// A 104-CPU hackbench, the target of issue 35's per-task view: lanes
/// with runnable time and wake arrows, in a page of at most 10 MB.
const HACKBENCH_104: &[&str] = &["--machine", "xeon-8269cy", "--workload", "hackbench"];

/// The lanes' waits (task, start, length, CPU, how, waker + 1, lead,
/// record + 1) of a page's flat, delta-coded array.
fn lane_waits(v: &Value) -> Vec<[i64; 8]> {
    let f: Vec<i64> = serde_json::from_value(v["lanes"]["waits"].clone()).unwrap();
    let mut t = 0;
    f.chunks(8)
        .map(|c| {
            t += c[1];
            [c[0], t, c[2], c[3], c[4], c[5], c[6], c[7]]
        })
        .collect()
}

/// The decision record `id` (+ 1) of the lanes: its kind and fields by name.
fn lane_record(v: &Value, id: i64) -> (String, Vec<(String, i64)>) {
    let d = &v["lanes"]["decisions"];
    let r: Vec<i64> = serde_json::from_value(d["recs"][id as usize - 1].clone()).unwrap();
    let kind = &d["kinds"][r[0] as usize];
    let names = kind[1].as_array().unwrap().iter();
    let fields = names
        .zip(&r[1..])
        .map(|(f, &x)| (f[0].as_str().unwrap().to_string(), x));
    (kind[0].as_str().unwrap().to_string(), fields.collect())
}

#[test]
fn lanes_of_a_104_cpu_hackbench_fit_in_10_mb() {
    let (page, _) = report_with("hb104.html", HACKBENCH_104, &[]);
    let size = std::fs::metadata(&page).unwrap().len();
    assert!(size <= 10 << 20, "{size} bytes");
    let v = page_data(&std::fs::read_to_string(&page).unwrap(), "D");
    assert_eq!(v["ncpus"], 104);
    let lanes = &v["lanes"];
    let tasks = lanes["tasks"].as_array().unwrap();
    assert!(tasks.len() >= 16, "{} lanes", tasks.len());
    // Most runnable time first.
    let waited: Vec<u64> = tasks.iter().map(|t| t[1].as_u64().unwrap()).collect();
    assert!(waited.windows(2).all(|w| w[0] >= w[1]), "{waited:?}");
    let waits = lane_waits(&v);
    let woken = waits.iter().filter(|w| w[4] == 0 && w[5] > 0).count();
    assert!(woken > 1000, "{woken} waits woken by a task (the arrows)");
    // A woken wait's record is its placement, of that task.
    let w = waits.iter().find(|w| w[4] == 0 && w[7] > 0).unwrap();
    let (kind, fields) = lane_record(&v, w[7]);
    assert_eq!(kind, "place");
    assert_eq!(
        fields[0],
        ("pid".into(), v["tasks"][w[0] as usize][1].as_i64().unwrap())
    );
    // Each run of a lane points into the slices, most with a pick record.
    let runs: Vec<i64> = serde_json::from_value(lanes["runs"].clone()).unwrap();
    let picked = runs.chunks(4).filter(|r| r[1] > 0).count();
    assert!(
        picked * 10 > runs.len() / 4 * 9,
        "{picked} of {}",
        runs.len() / 4
    );
    assert!(
        runs.chunks(4).any(|r| r[2] == 3 && r[3] > 0),
        "no preemption with its record"
    );
    assert_eq!(lanes["tail"].as_array().unwrap().len(), 20);
}

/// The lanes and `schedlab explain` follow tasks the same way: the demo's
/// longest hackbench-recv wait is the same in both.
#[test]
fn lanes_agree_with_explain_on_the_worst_wait() {
    let h = tmp("demo-lanes.html");
    let (rc, _, err) = schedlab(&["demo", "--html", &h.display().to_string(), "-q"]);
    assert_eq!(rc, 0, "{err}");
    let v = page_data(&std::fs::read_to_string(&h).unwrap(), "D");
    let recv = |w: &&[i64; 8]| v["tasks"][w[0] as usize][0] == "hackbench-recv";
    let worst = lane_waits(&v)
        .iter()
        .filter(recv)
        .max_by_key(|w| w[2])
        .copied()
        .unwrap();
    let (rc, out, err) = schedlab(&[
        "explain",
        "demo",
        "--task",
        "hackbench-recv",
        "--worst-wait",
    ]);
    assert_eq!(rc, 0, "{err}");
    let pid = v["tasks"][worst[0] as usize][1].as_u64().unwrap();
    let line = out.lines().next().unwrap();
    assert!(
        line.starts_with(&format!("hackbench-recv-{pid} ")),
        "{line}"
    );
    let ms = format!("{:.6} ms", worst[2] as f64 / 1e6);
    let from = format!("from {:.9}", worst[1] as f64 / 1e9);
    assert!(
        line.contains(&ms) && line.contains(&from),
        "{line} vs {ms} {from}"
    );
}

/// A number the page's script wrote into `data-NAME` of the lanes canvas.
fn lanes_attr(dom: &str, name: &str) -> u64 {
    let canvas = dom
        .split("<canvas id=\"lanes\"")
        .nth(1)
        .expect("lanes canvas");
    let tag = &canvas[..canvas.find('>').unwrap()];
    let at = tag.find(&format!("data-{name}=\"")).expect(name) + name.len() + 7;
    tag[at..].split('"').next().unwrap().parse().unwrap()
}

#[test]
fn html_scripts_run_without_errors() {
    let pages = [
        (run_report("rb.html"), "run-report.png"),
        (
            report_with("bigb.html", BIG, &[]).0,
            "run-report-24cpus.png",
        ),
        (compare_report("cb.html"), "compare-report.png"),
    ];
    if let Some(chrome) = find(&["chromium", "chromium-browser", "google-chrome"]) {
        for (page, shot) in &pages {
            check_in_chromium(&chrome, page, shot);
        }
        lanes_in_chromium(&chrome);
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

/// The 104-CPU hackbench page opened at its longest wait (`#tail=0`): two
/// lanes (the task and its waker) with runnable time and a wake arrow.
fn lanes_in_chromium(chrome: &str) {
    let (page, _) = report_with("hb104b.html", HACKBENCH_104, &[]);
    let url = PathBuf::from(format!("{}#tail=0", page.display()));
    let dom = check_in_chromium(chrome, &url, "hackbench-104-lanes.png");
    assert_eq!(
        lanes_attr(&dom, "lanes"),
        2,
        "the wait's task and its waker"
    );
    assert!(lanes_attr(&dom, "waits") >= 1);
    assert!(lanes_attr(&dom, "arrows") >= 1);
}
