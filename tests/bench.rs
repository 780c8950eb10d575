//! `schedlab bench`: case selection, its JSON and its errors (no timings
//! are asserted: the numbers depend on the machine).

mod common;
use common::{schedlab, tmp};

#[test]
fn an_unknown_case_exits_2_and_lists_the_cases() {
    let (rc, out, err) = schedlab(&["bench", "--case", "no-such-case"]);
    assert_eq!(rc, 2, "{out}{err}");
    assert!(err.contains("no-such-case"), "{err}");
    for id in ["periodic-64", "hackbench", "periodic-1024cpus"] {
        assert!(err.lines().any(|l| l.trim_start().starts_with(id)), "{err}");
    }
    assert!(out.is_empty(), "nothing runs: {out}");
}

#[test]
fn selected_cases_run_in_order_and_reach_the_json() {
    let p = tmp("bench.json");
    let (rc, out, err) = schedlab(&[
        "bench",
        "--case",
        "schbench",
        "--case",
        "kernbench j32 on xeon-8269cy",
        "--json",
        p.to_str().unwrap(),
    ]);
    assert_eq!(rc, 0, "{err}");
    // The header names the build and the host.
    assert!(out.lines().next().unwrap().contains("commit"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    assert!(v["host"]["build"].as_str().unwrap().contains("commit"));
    let cases = v["cases"].as_array().unwrap();
    let ids: Vec<_> = cases.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["schbench", "kernbench"]);
    for c in cases {
        assert!(c["switches"].as_u64().unwrap() > 0, "{c}");
        assert!(c["events"].as_u64().unwrap() >= c["switches"].as_u64().unwrap());
        assert!(c["peak_rss_kib"].as_u64().unwrap() > 0, "{c}");
        assert!(c["process_wall_ns"].as_u64() >= c["run_wall_ns"].as_u64());
        assert!(out.contains(c["name"].as_str().unwrap()), "{out}");
        // The half run, for the steady-state cost: cut at half the time.
        let half = &c["half"];
        assert_eq!(half["sim_ns"], c["sim_ns"].as_u64().unwrap() / 2, "{c}");
        let sw = half["switches"].as_u64().unwrap();
        assert!(sw > 0 && sw < c["switches"].as_u64().unwrap(), "{c}");
        // The start-up run: cut at the first tick.
        let st = &c["startup"];
        assert!(st["sim_ns"].as_u64() < c["sim_ns"].as_u64(), "{c}");
        let ev = st["events"].as_u64().unwrap();
        assert!(ev > 0 && ev < c["events"].as_u64().unwrap(), "{c}");
        assert!(st["wall_ns"].as_u64() >= st["run_wall_ns"].as_u64(), "{c}");
        assert!(st["balance_cpus_read"].as_u64().is_some(), "{c}");
    }
}

#[test]
fn distributions_of_a_build_against_itself_are_the_same_and_reach_the_json() {
    let p = tmp("dist.json");
    let me = env!("CARGO_BIN_EXE_schedlab");
    let (rc, out, err) = schedlab(&[
        "bench",
        "--distributions",
        me,
        "--seeds",
        "3",
        "--case",
        "pipe-vm2",
        "--json",
        p.to_str().unwrap(),
    ]);
    assert_eq!(rc, 0, "{out}{err}");
    assert!(out.contains("same in distribution"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    let tests = v["tests"].as_array().unwrap();
    // The pipe's time and switches vary with the seed; every p is 1.
    assert!(
        tests
            .iter()
            .any(|t| t["metric"] == "benchmark.usecs_per_op"),
        "{v}"
    );
    assert!(tests.iter().all(|t| t["holm_p"] == 1.0), "{v}");
}

#[test]
fn distributions_refuse_one_seed_a_missing_binary_and_an_unknown_case() {
    let me = env!("CARGO_BIN_EXE_schedlab");
    let (rc, _, err) = schedlab(&["bench", "--distributions", me, "--seeds", "1"]);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("--seeds"), "{err}");
    let (rc, _, err) = schedlab(&["bench", "--distributions", "/no/such/schedlab"]);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("/no/such/schedlab"), "{err}");
    let (rc, _, err) = schedlab(&["bench", "--distributions", me, "--case", "nope"]);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("pipe-vm2"), "lists the cases: {err}");
}
