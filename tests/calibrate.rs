//! `schedlab calibrate`: a tiny measurement writes a machine file that
//! `--machine FILE.toml` loads; bad arguments exit 2. Nothing here checks a
//! timing: the host is shared.

mod common;
use common::{json_without_wall, schedlab, schedlab_with_cache, tmp};
use schedlab::calibrate::{self, Cpus, Plan};
use schedlab::machine::host;

/// A very short calibration (a few % of `--quick`) runs here and its file
/// loads as a machine with this host's CPU count.
#[test]
fn tiny_calibration_writes_a_loadable_machine_file() {
    let out = tmp("calibrated.toml");
    let cache = tmp("calibrate-cache");
    let rc = calibrate::run(
        &Plan {
            scale: 0.03,
            runs: 1,
        },
        Some(&out),
        Some(&cache),
    );
    assert_eq!(rc, 0);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("syscall_ns = ") && text.contains("[measured]"));
    let m = schedlab::machine::from_spec(out.to_str().unwrap()).unwrap();
    let host = schedlab::machine::from_spec("host").unwrap();
    assert_eq!(m.nr_cpus(), host.nr_cpus());
    assert!(m.cost.syscall_ns > 0);
    let (rc, _, err) = schedlab(&[
        "run",
        "--machine",
        out.to_str().unwrap(),
        "-w",
        "pipe:loops=200",
        "-q",
    ]);
    assert_eq!(rc, 0, "{err}");
    // The same file is kept for `--machine host`, which says it used it.
    let kept = host::cache_path(&cache, host.nr_cpus());
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), text);
    let (rc, _, err) =
        schedlab_with_cache(&["run", "--machine", "host", "-w", "pipe:loops=20"], &cache);
    assert_eq!(rc, 0, "{err}");
    let date = text.lines().find(|l| l.starts_with("date = ")).unwrap();
    let said = format!(
        "costs from calibrate of {} ({})",
        &date[8..18],
        kept.display()
    );
    assert!(err.contains(&said), "{err}");
}

/// A cache dir holding `cost` as this host's calibration, and its file.
fn fake_cache(tag: &str, cost: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = tmp(tag);
    std::fs::create_dir_all(&dir).unwrap();
    let cpus = schedlab::machine::from_sysfs(std::path::Path::new("/sys/devices/system/cpu"), true)
        .unwrap()
        .nr_cpus();
    let file = host::cache_path(&dir, cpus);
    let text = format!("base = \"vm-2\"\ndate = \"2026-11-27\"\n[cost]\n{cost}\n");
    std::fs::write(&file, text).unwrap();
    (dir, file)
}

/// `--machine host` takes its costs from the cache file `calibrate` keeps
/// for this host, says so on stderr and in `--json`; without one it says
/// which preset's costs it used and how to calibrate. Other machines do not
/// read the cache: their results are the same with and without it.
#[test]
fn machine_host_uses_the_cached_calibration() {
    if !std::path::Path::new("/sys/devices/system/cpu/online").exists() {
        return;
    }
    let (dir, file) = fake_cache("cache-slow", "context_switch_ns = 40000");
    let run = |machine: &str, cache: &std::path::Path, name: &str| {
        let json = tmp(name);
        let j = json.to_str().unwrap();
        let args = [
            "run",
            "--machine",
            machine,
            "-w",
            "pipe:loops=200",
            "--json",
            j,
        ];
        let (rc, _, err) = schedlab_with_cache(&args, cache);
        assert_eq!(rc, 0, "{err}");
        (err, json_without_wall(&json))
    };
    let (err, cached) = run("host", &dir, "host-cached.json");
    let from = format!("calibrate of 2026-11-27 ({})", file.display());
    assert!(
        err.contains(&format!("machine host: costs from {from}")),
        "{err}"
    );
    assert_eq!(cached["machine"]["costs_from"], from.as_str());
    let empty = tmp("cache-empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (err, plain) = run("host", &empty, "host-plain.json");
    assert!(
        err.contains("`schedlab calibrate` measures this host"),
        "{err}"
    );
    assert!(err.contains(&empty.display().to_string()), "{err}");
    let preset = plain["machine"]["costs_from"].as_str().unwrap();
    assert!(
        preset.starts_with("preset vm-2 (fitted 2026-11-23)")
            || preset.starts_with("the generic x86"),
        "{preset}"
    );
    // 40 µs switches slow the pipe down
    let took = |v: &serde_json::Value| v["sim"]["simulated_ns"].as_u64().unwrap();
    assert!(
        took(&cached) > 2 * took(&plain),
        "{} vs {}",
        took(&cached),
        took(&plain)
    );
    let (err, a) = run("vm-2", &dir, "vm2-cached.json");
    assert!(!err.contains("machine host"), "{err}");
    let (_, b) = run("vm-2", &empty, "vm2-plain.json");
    assert_eq!(a, b);
    assert_eq!(
        a["machine"]["costs_from"],
        "preset vm-2 (fitted 2026-11-23)"
    );
}

/// A malformed cache file stops a `host` run with exit 2 naming the file
/// and the line.
#[test]
fn a_bad_cache_file_is_an_input_error() {
    if !std::path::Path::new("/sys/devices/system/cpu/online").exists() {
        return;
    }
    let (dir, file) = fake_cache("cache-bad", "context_switch_ns = \"fast\"");
    let (rc, _, err) =
        schedlab_with_cache(&["run", "--machine", "host", "-w", "pipe:loops=20"], &dir);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains(&format!("{}:4: cost.context_switch_ns", file.display())),
        "{err}"
    );
}

/// Without a usable CPU to pin to (a container's cpuset), the unpinned
/// primitives are still measured and nothing panics.
#[test]
fn unpinned_measurement_degrades() {
    let mut r = calibrate::results::Results::default();
    let none = Cpus {
        home: None,
        peers: vec![],
        others: vec![],
    };
    calibrate::measure_once(
        &none,
        &Plan {
            scale: 0.02,
            runs: 1,
        },
        &mut r,
    );
    assert!(r.median("getppid").is_some());
    assert!(r.median("pingpong_thread").is_none());
}

/// A cache directory that cannot be made is an error (exit 2) naming it.
#[test]
fn an_unwritable_cache_exits_2() {
    let plan = Plan {
        scale: 0.02,
        runs: 1,
    };
    let cache = std::path::Path::new("/proc/schedlab-cache");
    assert_eq!(calibrate::run(&plan, None, Some(cache)), 2);
}

#[test]
fn bad_arguments_exit_2() {
    let (rc, _, err) = schedlab(&["calibrate", "--output", "/nonexistent/dir/x.toml"]);
    assert_eq!(rc, 2);
    assert!(err.contains("/nonexistent/dir"), "{err}");
    let (rc, _, err) = schedlab(&["calibrate", "--runs", "0"]);
    assert_eq!(rc, 2);
    assert!(err.contains("--runs"), "{err}");
}

#[test]
fn shipped_machine_files_load() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/machines");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let (rc, _, err) = schedlab(&["machines", "--domains", p.to_str().unwrap()]);
            assert_eq!(rc, 0, "{}: {err}", p.display());
            n += 1;
        }
    }
    assert!(n >= 2, "{n} machine files");
}
