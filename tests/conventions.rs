//! One set of conventions across subcommands: defaults and exit codes in
//! `--help`, `--runs`, `--scale`, `--json` and `-q` spelled and meant the
//! same everywhere, old spellings kept as hidden aliases.

mod common;
use common::{schedlab, tmp};

/// `schedlab repro`'s subcommands.
const REPROS: [&str; 6] = [
    "wakelist",
    "preempt",
    "completion",
    "swb",
    "pelt",
    "summary",
];

/// Every subcommand path, e.g. ["repro", "swb"].
fn subcommands() -> Vec<Vec<&'static str>> {
    let mut all: Vec<Vec<&str>> = [
        "run",
        "replay",
        "record",
        "demo",
        "machines",
        "workloads",
        "features",
        "compare",
        "explain",
        "sweep",
        "sweep-report",
        "repro",
        "bench",
        "validate",
        "calibrate",
        "completions",
        "man",
    ]
    .iter()
    .map(|s| vec![*s])
    .collect();
    for r in REPROS {
        all.push(vec!["repro", r]);
    }
    for v in ["pelt", "bench"] {
        all.push(vec!["validate", v]);
    }
    all
}

#[test]
fn every_help_lists_every_exit_code() {
    for mut path in subcommands().into_iter().chain([vec![]]) {
        path.push("--help");
        let (rc, out, err) = schedlab(&path);
        assert_eq!(rc, 0, "{path:?}: {err}");
        assert!(out.contains("Exit codes:"), "{path:?}");
        for code in ["  0 ", "  1 ", "  2 ", "  3 ", "  4 ", "  128+N "] {
            assert!(out.contains(code), "{path:?} lacks exit code {code}");
        }
    }
}

#[test]
fn help_shows_the_defaults() {
    let (_, out, _) = schedlab(&["run", "--help"]);
    assert!(out.contains("[default: vm-2]"), "{out}");
    assert!(out.contains("[default: 1]"), "{out}");
    let (_, out, _) = schedlab(&["compare", "--help"]);
    assert!(out.contains("[default: 5]"), "{out}");
}

#[test]
fn runs_scale_json_and_quiet_are_spelled_the_same_everywhere() {
    for r in REPROS {
        let (_, out, _) = schedlab(&["repro", r, "--help"]);
        assert!(out.contains("--json <PATH>"), "repro {r} has no --json");
        assert!(out.contains("-q, --quiet"), "repro {r}");
        assert!(
            !out.contains("--seeds") && !out.contains("--ops-scale") && !out.contains("--loops")
        );
    }
    for r in ["wakelist", "preempt", "completion", "swb", "summary"] {
        let (_, out, _) = schedlab(&["repro", r, "--help"]);
        assert!(out.contains("--runs <RUNS>"), "repro {r}");
    }
    for r in ["preempt", "swb", "pelt", "summary"] {
        let (_, out, _) = schedlab(&["repro", r, "--help"]);
        assert!(out.contains("--scale <SCALE>"), "repro {r}");
    }
    for cmd in [&["run"][..], &["compare"], &["repro"], &["sweep"]] {
        let mut a = cmd.to_vec();
        a.push("--help");
        let (_, out, _) = schedlab(&a);
        let q = out
            .lines()
            .find(|l| l.contains("-q, --quiet"))
            .unwrap_or("");
        assert!(q.contains("Quiet: no progress bar"), "{cmd:?}: {q}");
    }
}

#[test]
fn repro_preempt_new_and_old_spellings_run_the_same() {
    let (a, b) = (tmp("preempt-new.json"), tmp("preempt-old.json"));
    let new = [
        "repro", "preempt", "--scale", "100000", "--runs", "1", "-q", "--json",
    ];
    let old = [
        "repro", "preempt", "--loops", "1", "--seeds", "1", "-q", "--json",
    ];
    for (args, path) in [(&new, &a), (&old, &b)] {
        let mut args = args.to_vec();
        let p = path.display().to_string();
        args.push(&p);
        let (rc, out, err) = schedlab(&args);
        assert_eq!(rc, 0, "{err}");
        assert!(
            !out.contains("What the simulation explains"),
            "-q keeps the notes"
        );
    }
    let read = |p: &std::path::Path| {
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        v.as_object_mut().unwrap().remove("meta").expect("meta");
        v
    };
    let v = read(&a);
    assert_eq!(v["loops"], 1);
    assert_eq!(v["runs"].as_array().map(Vec::len), Some(6));
    assert_eq!(v, read(&b));
    // Old and new spelling of one setting together is an error.
    let (rc, _, err) = schedlab(&["repro", "preempt", "--scale", "10", "--loops", "1"]);
    assert_eq!(rc, 2, "{err}");
}

#[test]
fn compare_quiet_prints_the_table_without_notes() {
    let args = [
        "compare",
        "--machine",
        "smp:cpus=2",
        "-w",
        "pipe:loops=200",
        "--set",
        "noise.enabled=false",
        "--set-a",
        "kernel.hz=250",
        "--set-b",
        "kernel.hz=1000",
        "--runs",
        "2",
    ];
    let (rc, loud, err) = schedlab(&args);
    assert_eq!(rc, 0, "{err}");
    let mut q = args.to_vec();
    q.push("-q");
    let (rc, quiet, _) = schedlab(&q);
    assert_eq!(rc, 0);
    assert!(
        quiet.contains("A/B comparison") && quiet.contains("context_switches"),
        "{quiet}"
    );
    assert!(loud.contains("\nexact:"), "{loud}");
    assert!(!quiet.contains("\nexact:"), "{quiet}");
}

#[test]
fn json_dash_is_stdout_for_compare_and_refused_by_repro() {
    let (rc, out, err) = schedlab(&[
        "compare",
        "--machine",
        "smp:cpus=2",
        "-w",
        "pipe:loops=100",
        "--set-b",
        "kernel.hz=1000",
        "--runs",
        "2",
        "-q",
        "--json",
        "-",
    ]);
    assert_eq!(rc, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("stdout is the JSON alone");
    assert!(v["meta"].is_object());
    assert!(
        err.contains("A/B comparison"),
        "the table goes to stderr: {err}"
    );
    assert!(!std::path::Path::new("-").exists());
    let (rc, _, err) = schedlab(&[
        "repro", "preempt", "--scale", "100000", "--runs", "1", "--json", "-",
    ]);
    assert_eq!(rc, 2);
    assert!(err.contains("--json -"), "{err}");
}
