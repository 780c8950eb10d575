//! `schedlab calibrate`: a tiny measurement writes a machine file that
//! `--machine FILE.toml` loads; bad arguments exit 2. Nothing here checks a
//! timing: the host is shared.

mod common;
use common::{schedlab, tmp};
use schedlab::calibrate::{self, Cpus, Plan};

/// A very short calibration (a few % of `--quick`) runs here and its file
/// loads as a machine with this host's CPU count.
#[test]
fn tiny_calibration_writes_a_loadable_machine_file() {
    let out = tmp("calibrated.toml");
    let rc = calibrate::run(
        &Plan {
            scale: 0.03,
            runs: 1,
        },
        Some(&out),
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
