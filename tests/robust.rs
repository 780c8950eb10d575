//! Hostile input through the command line (issue 16): limits stated and
//! enforced, outputs never half-written, errors that keep their place.

mod common;
use common::schedlab;

/// Run and expect exit 2 with `want` in the error.
fn input_error(args: &[&str], want: &str) -> String {
    let (rc, _, err) = schedlab(args);
    assert_eq!(rc, 2, "{}: {err}", args[..3.min(args.len())].join(" "));
    assert!(err.contains(want), "want {want:?} in {err}");
    err
}

#[test]
fn machines_above_the_cpu_limit_fail_at_once() {
    for cpus in ["18446744073709551615", "4294967296", "100000", "8192"] {
        let m = format!("smp:cpus={cpus}");
        input_error(
            &["run", "--machine", &m, "-w", "pipe:loops=10"],
            "limit of 4096 CPUs",
        );
    }
    input_error(
        &["machines", "--domains", "smp:cpus=8192"],
        "limit of 4096 CPUs",
    );
}

#[test]
fn cgroup_limits_fail_at_once() {
    let deep = format!("{}:weight=100", "/d".repeat(33));
    input_error(
        &["run", "--cgroup", &deep, "-w", "pipe:loops=10"],
        "limit of 32",
    );
}

#[test]
fn too_many_tasks_fail_before_the_next_workload_is_built() {
    let w = "hackbench:groups=5000,fds=20,loops=1";
    let mut args = vec!["run", "--machine", "vm-2"];
    for _ in 0..6 {
        args.extend(["-w", w]);
    }
    input_error(&args, "event sources");
}

#[test]
fn a_trailing_slash_does_not_escape_declared_twice() {
    input_error(
        &[
            "run",
            "--cgroup",
            "/a:weight=200",
            "--cgroup",
            "/a/:weight=300",
            "-w",
            "pipe:loops=10",
        ],
        "declared twice",
    );
}

#[test]
fn an_undeclared_cgroup_error_lists_only_a_few() {
    let mut args = vec!["run".to_string()];
    for i in 0..200 {
        args.extend(["--cgroup".into(), format!("/g{i}")]);
    }
    args.extend(["-w".into(), "pipe:loops=10,cgroup=/nope".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let err = input_error(&args, "and 193 more");
    assert!(err.len() < 500, "{err}");
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> std::path::PathBuf {
    let d = common::tmp(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The names in `dir`, sorted.
fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A run long enough to be interrupted, writing JSON and a trace in `dir`.
fn long_run(dir: &std::path::Path) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .current_dir(dir)
        .args(["run", "--machine", "power10-96", "-q", "--json", "out.json"])
        .args(["-w", "hackbench:groups=8,loops=1000000", "--trace", "t.txt"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// Wait until the run's trace temporary holds some bytes (it is running).
fn wait_for_trace(dir: &std::path::Path, pid: u32) {
    let tmp = dir.join(format!(".t.txt.tmp{pid}"));
    while std::fs::metadata(&tmp).map_or(true, |m| m.len() == 0) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn an_unwritable_json_fails_before_the_run() {
    let (rc, out, err) = schedlab(&[
        "run",
        "--machine",
        "power10-96",
        "-w",
        "hackbench:groups=8,loops=1000000",
        "--json",
        "/nonexistent-dir/x.json",
    ]);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("--json: /nonexistent-dir/x.json"), "{err}");
    assert!(!out.contains("hackbench"), "the simulation ran: {out}");
}

#[test]
fn sigint_and_sigterm_remove_the_temporaries() {
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let d = scratch(&format!("sig{sig}"));
        std::fs::write(d.join("out.json"), "old").unwrap();
        let mut child = long_run(&d);
        wait_for_trace(&d, child.id());
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code), "signal {sig}");
        assert_eq!(names(&d), vec!["out.json"]);
        assert_eq!(std::fs::read_to_string(d.join("out.json")).unwrap(), "old");
    }
}

#[test]
fn after_sigkill_the_next_run_removes_the_stale_temporaries() {
    let d = scratch("kill9");
    let mut child = long_run(&d);
    wait_for_trace(&d, child.id());
    child.kill().unwrap();
    child.wait().unwrap();
    let left = names(&d);
    assert!(left.iter().all(|n| n.contains(".tmp")), "{left:?}");
    let p = |n: &str| d.join(n).display().to_string();
    let (rc, _, err) = schedlab(&[
        "run",
        "-w",
        "pipe:loops=10",
        "-q",
        "--json",
        &p("out.json"),
        "--trace",
        &p("t.txt"),
    ]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(names(&d), vec!["out.json", "t.txt"]);
}

#[test]
fn a_symlinked_output_is_written_through() {
    let d = scratch("symlink");
    std::os::unix::fs::symlink("real.json", d.join("link.json")).unwrap();
    let link = d.join("link.json").display().to_string();
    let (rc, _, err) = schedlab(&["run", "-w", "pipe:loops=10", "-q", "--json", &link]);
    assert_eq!(rc, 0, "{err}");
    let meta = std::fs::symlink_metadata(&link).unwrap();
    assert!(meta.file_type().is_symlink());
    let text = std::fs::read_to_string(d.join("real.json")).unwrap();
    assert!(text.contains("\"simulated_ns\""), "{text}");
}

#[test]
fn two_outputs_on_one_path_are_refused() {
    let d = scratch("twice");
    let p = d.join("x").display().to_string();
    input_error(
        &["run", "-w", "pipe:loops=10", "--json", &p, "--trace", &p],
        "two outputs",
    );
    // A character device takes any number of outputs.
    let null = "/dev/null";
    let twice = [
        "run",
        "-w",
        "pipe:loops=10",
        "--json",
        null,
        "--trace",
        null,
    ];
    let (rc, _, err) = schedlab(&[&twice[..], &["--schedstat", null]].concat());
    assert_eq!(rc, 0, "{err}");
}

#[test]
fn set_errors_name_set_not_the_scenario_file() {
    let err = input_error(
        &["run", "scenarios/hackbench.toml", "--set", "kernel.hz=7"],
        "--set kernel.hz=7: key `kernel.hz`",
    );
    assert!(!err.contains("hackbench.toml"), "{err}");
    input_error(
        &["run", "scenarios/hackbench.toml", "-w", "pipe:loopz=3"],
        "--workload pipe:loopz=3: key `workload.0.loopz`",
    );
}

#[test]
fn a_bad_value_in_the_file_is_an_error_though_a_flag_overrides_it() {
    let p = common::tmp("overridden.toml");
    let f = p.to_str().unwrap();
    let text = "[[workload]]\nkind = \"pipe\"\nloops = 10\n[sim]\nseed = 4\n[kernel]\nhz = 250\n";
    let flags = ["--set", "kernel.hz=1000", "--seed", "3"];
    let cases = [
        ("hz = 250", "hz = 7", ":7: key `kernel.hz`: must be one of"),
        (
            "seed = 4",
            "seed = -4",
            ":5: key `sim.seed`: must be an integer",
        ),
    ];
    for (good, bad, want) in cases {
        std::fs::write(&p, text.replace(good, bad)).unwrap();
        input_error(
            &[&["run", f][..], &flags].concat(),
            &format!("overridden.toml{want}"),
        );
    }
    std::fs::write(&p, text).unwrap();
    let (rc, _, err) = schedlab(&[&["run", f, "-q"][..], &flags].concat());
    assert_eq!(rc, 0, "{err}");
}

#[test]
fn errors_keep_their_line_in_a_shipped_scenario() {
    // scenarios/hackbench.toml has `[kernel.features]  # comment`.
    let text = std::fs::read_to_string("scenarios/hackbench.toml").unwrap();
    let (at, _) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.starts_with("[kernel.features]"))
        .unwrap();
    let bad = text.replacen("[kernel.features]", "[kernel.features]\nNOPE = true", 1);
    let p = common::tmp("features.toml");
    std::fs::write(&p, bad).unwrap();
    let want = format!("features.toml:{}: key `kernel.features.NOPE`", at + 2);
    input_error(&["run", p.to_str().unwrap()], &want);
}

#[test]
fn html_write_errors_name_the_html_file() {
    let d = scratch("html");
    std::fs::create_dir(d.join("page.html")).unwrap();
    let p = d.join("page.html").display().to_string();
    let err = input_error(&["run", "-w", "pipe:loops=10", "--html", &p], "--html: ");
    assert!(err.contains("page.html: is a directory"), "{err}");
}

#[test]
fn a_trace_window_with_three_dots_is_an_error() {
    let d = scratch("window");
    let p = d.join("t.txt").display().to_string();
    input_error(
        &[
            "run",
            "-w",
            "pipe:loops=10",
            "--trace",
            &p,
            "--trace-window",
            "0ms...10ms",
        ],
        "--trace-window 0ms...10ms: key `output.trace_window`",
    );
}

#[test]
fn a_machine_file_names_a_control_character_and_an_unknown_primitive() {
    let d = scratch("machine-file");
    let cases = [
        (
            "base = \"vm-2\"\n# a\u{1}b\n",
            ":2: malformed TOML: control character U+0001 at column 4",
        ),
        (
            "base = \"vm-2\"\n[measured]\ngetppid = { median = 1.0 }\nbogus = { median = 1.0 }\n",
            ":4: measured.bogus: not a primitive calibrate measures",
        ),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let p = d.join(format!("m{i}.toml"));
        std::fs::write(&p, text).unwrap();
        let want = format!("m{i}.toml{want}");
        input_error(
            &[
                "run",
                "--machine",
                p.to_str().unwrap(),
                "-w",
                "pipe:loops=10",
            ],
            &want,
        );
    }
}
