//! `schedlab repro swb`'s schbench(old) table (seed 001, table 4) at a
//! thirtieth of its runtime: a cell for every row of the seed's table, and
//! before and after are the scenario file with SWB_SMT_SKIP off and on and
//! nothing else changed. Which verdict the rows earn is not asserted.

mod common;
use common::json_of;
use schedlab::repro::seed_rows::{rows, PCTS};
use schedlab::repro::summary::Series;
use schedlab::repro::swb::{schbench_cells, schbench_sets};

const SCENARIO: &str = "scenarios/seed-001-swb/schbench-old.toml";
/// 1 s runs, the first 1/6 s warmup.
const SCALE: u64 = 30;

#[test]
fn schbench_old_cells_stand_for_every_seed_row() {
    let cells = schbench_cells(2, SCALE).unwrap();
    let mut keys: Vec<&str> = cells.iter().map(|c| c.key.as_str()).collect();
    let mut wanted: Vec<String> = rows()
        .into_iter()
        .filter(|r| r.label.starts_with("schbench(old)"))
        .map(|r| match r.sim {
            Some((Series::Swb, key)) => key,
            _ => panic!("{} has no swb cell", r.label),
        })
        .collect();
    assert_eq!(wanted.len(), 6 * PCTS.len());
    keys.sort_unstable();
    wanted.sort();
    assert_eq!(keys, wanted);
    for c in &cells {
        assert_eq!((c.before.len(), c.after.len()), (2, 2), "{}", c.key);
        let all = c.before.iter().chain(&c.after);
        assert!(all.clone().all(|&v| v > 0.0 && v < 1e6), "{}", c.key);
    }
    // Per thread count and run, the percentiles rise with p.
    for per_threads in cells.chunks(PCTS.len()) {
        for run in 0..2 {
            let p = |k: usize| per_threads[k].before[run];
            assert!(
                (1..PCTS.len()).all(|k| p(k - 1) <= p(k)),
                "{}",
                per_threads[0].key
            );
        }
    }
}

#[test]
fn schbench_old_before_and_after_differ_only_by_the_feature() {
    let threads = 2;
    let cells = schbench_cells(2, SCALE).unwrap();
    let ours: Vec<_> = cells
        .iter()
        .filter(|c| c.key.starts_with(&format!("4 {threads} threads ")))
        .collect();
    assert_eq!(ours.len(), PCTS.len());
    let sets: Vec<String> = schbench_sets(threads, SCALE)
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for (skip, side) in [("false", 0), ("true", 1)] {
        let mut args = vec!["run", SCENARIO, "--set", "sim.seed=1"];
        let feature = format!("kernel.features.SWB_SMT_SKIP={skip}");
        args.extend(["--set", &feature]);
        for s in &sets {
            args.extend(["--set", s]);
        }
        let v = json_of(&args, &format!("swb-schbench-{skip}.json"));
        let lat = &v["benchmark"]["wakeup_latency_us"];
        assert!(lat["samples"].as_u64().unwrap() > 0);
        for ((_, key), cell) in PCTS.iter().zip(&ours) {
            let cell_side = if side == 0 { &cell.before } else { &cell.after };
            assert_eq!(lat[key].as_f64(), Some(cell_side[0]), "{} {skip}", cell.key);
        }
    }
}

#[test]
fn old_schbench_warmup_and_message_spin_take_effect() {
    let samples = |spec: &str| {
        let v = json_of(&["run", "--machine", "vm-2", "-w", spec], "swb-warmup.json");
        v["benchmark"]["wakeup_latency_us"]["samples"]
            .as_u64()
            .unwrap()
    };
    let plain = samples("schbench-old:m=1,t=1,r=1s");
    let warm = samples("schbench-old:m=1,t=1,r=1s,w=500ms");
    let spin = samples("schbench-old:m=1,t=1,r=1s,C=30ms");
    // Half the run is warmup: about half the samples are kept.
    assert!(
        warm > 0 && warm * 3 < plain * 2 && warm * 3 > plain,
        "{warm} of {plain}"
    );
    // Posted, the message thread spins 30 ms before its 30-37.5 ms sleep:
    // a round takes ~94 ms instead of ~64 ms.
    assert!(
        spin * 5 < plain * 4 && spin * 2 > plain,
        "{spin} vs {plain}"
    );
}
