//! Output files and exit codes: trace format and compression by
//! extension, trace-cmd's trace.dat (read back with `trace-cmd report`
//! when it is installed), Perfetto's protobuf trace (its framing and
//! sched_switch count read here; python/tests/test_perfetto.py decodes it
//! with Perfetto's own protos), `-` for stdout and stdin, exit 4 for an
//! unfinished benchmark, durations without a unit, and bad output flags.

mod common;
use common::{schedlab, tmp};
use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Command, Stdio};

const RUN: &[&str] = &[
    "run",
    "--machine",
    "vm-2",
    "--workload",
    "hackbench:groups=1,loops=20",
    "-q",
];

fn run_with(extra: &[&str]) -> (i32, String, String) {
    let mut args = RUN.to_vec();
    args.extend(extra);
    schedlab(&args)
}

fn path(name: &str) -> String {
    tmp(name).display().to_string()
}

/// Events per name in ftrace-style text (`... name: fields`).
fn count_events(text: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        if let Some(name) = l
            .split_whitespace()
            .find(|w| w.ends_with(':') && w.starts_with("sched_"))
        {
            *m.entry(name.trim_end_matches(':').to_string()).or_insert(0) += 1;
        }
    }
    m
}

#[test]
fn format_and_compression_follow_the_extension() {
    let (txt, json, gz, zst) = (
        path("e.txt"),
        path("e.json"),
        path("e.txt.gz"),
        path("e.json.zst"),
    );
    for p in [&txt, &json, &gz, &zst] {
        let (rc, _, err) = run_with(&["--trace", p]);
        assert_eq!(rc, 0, "{p}: {err}");
    }
    let text = std::fs::read_to_string(&txt).unwrap();
    assert!(text.starts_with("# tracer: nop"));
    assert!(std::fs::read_to_string(&json)
        .unwrap()
        .starts_with("{\"traceEvents\""));
    let mut unzipped = String::new();
    let raw = std::fs::read(&gz).unwrap();
    flate2::read::GzDecoder::new(&raw[..])
        .read_to_string(&mut unzipped)
        .unwrap();
    assert_eq!(unzipped, text, ".gz holds the same trace as the text");
    let raw = std::fs::read(&zst).unwrap();
    let mut unz = Vec::new();
    ruzstd::decoding::StreamingDecoder::new(&raw[..])
        .unwrap()
        .read_to_end(&mut unz)
        .unwrap();
    assert_eq!(unz, std::fs::read(&json).unwrap(), ".zst holds the JSON");
    // --trace-format wins over the extension.
    let odd = path("e2.json");
    let (rc, _, err) = run_with(&["--trace", &odd, "--trace-format", "ftrace"]);
    assert_eq!(rc, 0, "{err}");
    assert!(std::fs::read_to_string(&odd)
        .unwrap()
        .starts_with("# tracer"));
}

#[test]
fn trace_dat_reads_back_in_trace_cmd_with_the_text_traces_events() {
    let (dat, txt) = (path("t.dat"), path("t.txt"));
    let long = ["--workload", "periodic:tasks=3,run=1ms,sleep=300ms"];
    for p in [&dat, &txt] {
        let (rc, _, err) = run_with(&["--trace", p]);
        assert_eq!(rc, 0, "{err}");
        // Sleeps longer than a record's 27-bit delta need time extends.
        let mut args = vec!["run", "--machine", "smp:cpus=2", "--duration", "1s", "-q"];
        args.extend(long);
        let p2 = format!(
            "{p}.long.{}",
            if p.ends_with("dat") { "dat" } else { "txt" }
        );
        args.extend(["--trace", &p2]);
        let (rc, _, err) = schedlab(&args);
        assert_eq!(rc, 0, "{err}");
    }
    let raw = std::fs::read(&dat).unwrap();
    assert_eq!(&raw[..10], b"\x17\x08\x44tracing", "trace.dat magic");
    assert_eq!(raw.len() % 4096, 0, "page-aligned CPU data");
    let report = Command::new("trace-cmd")
        .args(["report", "-i", &dat])
        .stderr(Stdio::null())
        .output();
    let Some(report) = report.ok().filter(|o| o.status.success()) else {
        eprintln!("note: trace-cmd not installed: SKIPPING the trace-cmd report check");
        return;
    };
    let text = std::fs::read_to_string(&txt).unwrap();
    let want = count_events(&text);
    let got = count_events(&String::from_utf8_lossy(&report.stdout));
    assert!(want["sched_switch"] > 100, "{want:?}");
    assert_eq!(got, want, "trace-cmd report of the .dat vs the text trace");
    let long = Command::new("trace-cmd")
        .args(["report", "-i", &format!("{dat}.long.dat")])
        .output()
        .unwrap();
    let long_text = std::fs::read_to_string(format!("{txt}.long.txt")).unwrap();
    let last_ts = |s: &str| -> f64 {
        let l = s.lines().rfind(|l| l.contains("sched_switch")).unwrap();
        let ts = l
            .split_whitespace()
            .find(|w| w.ends_with(':') && w.contains('.'))
            .unwrap();
        ts.trim_end_matches(':').parse().unwrap()
    };
    let out = String::from_utf8_lossy(&long.stdout);
    assert_eq!(count_events(&out), count_events(&long_text));
    assert!((last_ts(&out) - last_ts(&long_text)).abs() < 2e-6);
    // No record at timestamp 0, which KernelShark reads as no record.
    let ns = Command::new("trace-cmd")
        .args(["report", "-t", "-i", &dat])
        .output()
        .unwrap();
    let ns = String::from_utf8_lossy(&ns.stdout);
    assert!(ns.contains("sched_wakeup_new"), "{ns}");
    assert!(!ns.contains(" 0.000000000:"), "{ns}");
}

/// The length-delimited fields numbered `field` in protobuf message `m`,
/// checking that every field of `m` is well framed.
fn proto_fields(m: &[u8], field: u64) -> Vec<&[u8]> {
    fn varint(m: &[u8], at: &mut usize) -> u64 {
        let mut v = 0;
        for shift in (0..64).step_by(7) {
            let b = m[*at];
            *at += 1;
            v |= ((b & 0x7f) as u64) << shift;
            if b < 0x80 {
                break;
            }
        }
        v
    }
    let (mut at, mut out) = (0, Vec::new());
    while at < m.len() {
        let key = varint(m, &mut at);
        match key & 7 {
            0 => drop(varint(m, &mut at)),
            1 => at += 8,
            2 => {
                let len = varint(m, &mut at) as usize;
                if key >> 3 == field {
                    out.push(&m[at..at + len]);
                }
                at += len;
            }
            w => panic!("wire type {w} at {at}"),
        }
    }
    assert_eq!(at, m.len(), "the last field ends at the message's end");
    out
}

/// sched_switch events (FtraceEvent field 4) in the ftrace bundles
/// (TracePacket field 1, bundle field 2) of a Perfetto trace.
fn perfetto_switches(trace: &[u8]) -> usize {
    let packets = proto_fields(trace, 1);
    let bundles = packets.iter().flat_map(|p| proto_fields(p, 1));
    let events: Vec<&[u8]> = bundles.flat_map(|b| proto_fields(b, 2)).collect();
    events.iter().map(|e| proto_fields(e, 4).len()).sum()
}

#[test]
fn perfetto_trace_by_extension_or_format_holds_the_text_traces_switches() {
    let (pf, odd, txt) = (path("p.pftrace"), path("p.txt"), path("p-text.txt"));
    for args in [
        &["--trace", &pf][..],
        &["--trace", &odd, "--trace-format", "perfetto"],
        &["--trace", &txt],
    ] {
        let (rc, _, err) = run_with(args);
        assert_eq!(rc, 0, "{args:?}: {err}");
    }
    let raw = std::fs::read(&pf).unwrap();
    assert_eq!(
        raw[0], 0x0a,
        "a Trace starts with a packet: field 1, length-delimited"
    );
    assert_eq!(raw, std::fs::read(&odd).unwrap(), "--trace-format perfetto");
    let text = std::fs::read_to_string(&txt).unwrap();
    let want = count_events(&text)["sched_switch"] as usize;
    assert!(want > 0);
    assert_eq!(perfetto_switches(&raw), want);
    let (rc, _, err) = run_with(&["--trace", &pf, "--trace-format", "protobuf"]);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains("--trace-format") && err.contains("perfetto"),
        "{err}"
    );
}

#[test]
fn html_and_trace_say_what_they_wrote_unless_quiet() {
    let (html, trace) = (path("said.html"), path("said.json"));
    let mut args = RUN[..RUN.len() - 1].to_vec();
    args.extend(["--html", &html, "--trace", &trace]);
    let (rc, _, err) = schedlab(&args);
    assert_eq!(rc, 0, "{err}");
    let size = |p: &str| std::fs::metadata(p).unwrap().len();
    assert!(
        size(&trace) < 1 << 20,
        "the KiB below assumes a small trace"
    );
    let kib = |p: &str| format!("{p} ({:.1} KiB)", size(p) as f64 / 1024.0);
    let want = format!("schedlab: wrote {}, {}\n", kib(&trace), kib(&html));
    assert!(err.ends_with(&want), "{err}");
    // -q: no notice.
    let (rc, _, err) = run_with(&["--html", &html, "--trace", &trace]);
    assert_eq!(rc, 0, "{err}");
    assert!(!err.contains("wrote"), "{err}");
}

#[test]
fn dash_is_stdout_and_stdin() {
    let (rc, out, err) = run_with(&["--json", "-"]);
    assert_eq!(rc, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("stdout is the JSON alone");
    assert!(v["totals"].is_object());
    assert!(err.contains("Time:"), "the benchmark's lines go to stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["run", "-", "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        child.stdin.as_mut().unwrap(),
        b"[machine]\npreset = \"vm-2\"\n[[workload]]\nkind = \"pipe\"\nloops = 100\n",
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("pipe operations"));
}

#[test]
fn unfinished_benchmark_exits_4_unless_allowed() {
    let args = [
        "--duration",
        "1ms",
        "--workload",
        "hackbench:groups=1,loops=2000",
    ];
    let (rc, _, err) = run_with(&args);
    assert_eq!(rc, 4, "{err}");
    assert!(err.contains("did not finish") || err.contains("--allow-unfinished"));
    let mut allowed = args.to_vec();
    allowed.push("--allow-unfinished");
    assert_eq!(run_with(&allowed).0, 0);
}

#[test]
fn bad_output_flags_exit_2_naming_the_flag() {
    let (dat, pf) = (path("b.dat"), path("b.pftrace"));
    let cases: &[(&[&str], &str)] = &[
        (&["--duration", "1"], "no time unit"),
        (&["--trace", "x.txt.xz"], "--trace"),
        (&["--json", "x.json.bz2"], "--json"),
        (&["--json", "-", "--trace", "-"], "--json and --trace"),
        (
            &["--trace", &dat, "--trace-pelt", "hackbench"],
            "--trace-pelt",
        ),
        (
            &["--trace", &pf, "--trace-pelt", "hackbench"],
            "--trace-pelt",
        ),
    ];
    for (extra, needle) in cases {
        let (rc, _, err) = run_with(extra);
        assert_eq!(rc, 2, "{extra:?}: {err}");
        assert!(err.contains(needle), "{extra:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
