//! `schedlab repro summary` on the two cheap series at a reduced size: its
//! table has every row of theirs, its JSON parses, and each verdict and
//! the count line follow from the numbers beside them. Which verdicts the
//! model earns is not asserted: that changes with the model.

mod common;
use common::{schedlab, tmp};
use schedlab::repro::seed_rows::rows;
use schedlab::repro::summary::{verdict, SimStats, Verdict};
use serde_json::Value;

const VERDICTS: [Verdict; 4] = [
    Verdict::Reproduced,
    Verdict::DirectionOnly,
    Verdict::NotReproduced,
    Verdict::NoEffect,
];

/// preempt and completion, 1 hackbench loop, 2 runs per side: about a
/// second of CPU.
fn run(name: &str) -> (String, Value) {
    let path = tmp(name);
    let p = path.display().to_string();
    let args = [
        "repro",
        "summary",
        "--only",
        "preempt,completion",
        "--runs",
        "2",
        "--scale",
        "100",
        "--json",
        &p,
    ];
    let (rc, out, err) = schedlab(&args);
    assert_eq!(rc, 0, "{err}");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("meta").expect("meta");
    (out, v)
}

fn side(v: &Value) -> (f64, f64) {
    (v["mean"].as_f64().unwrap(), v["sd"].as_f64().unwrap())
}

#[test]
fn summary_lists_every_row_and_judges_each_by_the_rule() {
    let (out, v) = run("summary.json");
    let listed = v["rows"].as_array().unwrap();
    let expected: Vec<_> = rows()
        .into_iter()
        .filter(|r| r.seed == "002" || r.seed == "003")
        .collect();
    assert_eq!(listed.len(), expected.len());
    for (j, r) in listed.iter().zip(&expected) {
        assert_eq!(j["label"], r.label.as_str());
        assert!(out.contains(&r.label), "table lacks {}", r.label);
        let name = j["verdict"].as_str().unwrap();
        let vd = VERDICTS.into_iter().find(|x| x.name() == name).unwrap();
        let sim = (!j["sim"].is_null()).then(|| SimStats {
            before: side(&j["sim"]["before"]),
            after: side(&j["sim"]["after"]),
            runs: j["sim"]["runs"].as_u64().unwrap() as usize,
        });
        assert_eq!(sim.is_some(), r.sim.is_some(), "{}", r.label);
        if let Some(s) = &sim {
            assert_eq!(s.runs, 2);
        }
        let seed_change = j["seed_change_pct"].as_f64().unwrap();
        assert_eq!(
            verdict(seed_change, r.moves(), sim.as_ref()),
            vd,
            "{}",
            r.label
        );
        let explained = matches!(vd, Verdict::Reproduced | Verdict::NoEffect);
        assert_eq!(j["cause"].is_null(), explained, "{}", r.label);
    }
    // The counts are the rows', and the table ends with the same line.
    let count = |name: &str| listed.iter().filter(|j| j["verdict"] == name).count();
    let c = &v["counts"];
    assert_eq!(c["rows"], listed.len());
    assert_eq!(c["reproduced"], count("reproduced"));
    assert_eq!(c["direction_only"], count("direction only"));
    assert_eq!(c["not_reproduced"], count("not reproduced"));
    assert_eq!(c["no_effect"], count("no effect on either side"));
    let unsimulated = listed.iter().filter(|j| j["sim"].is_null()).count();
    assert_eq!(c["not_simulated"], unsimulated);
    let line = v["count_line"].as_str().unwrap();
    assert_eq!(out.lines().last(), Some(line));
    assert!(line.contains(&format!("of {}", listed.len())), "{line}");
}

#[test]
fn summary_is_deterministic_and_refuses_a_single_run() {
    assert_eq!(run("a.json"), run("b.json"));
    let (rc, _, err) = schedlab(&["repro", "summary", "--runs", "1"]);
    assert_eq!(rc, 2, "{err}");
    let (rc, _, err) = schedlab(&["repro", "summary", "--only", "nosuch"]);
    assert_eq!(rc, 2, "{err}");
}
