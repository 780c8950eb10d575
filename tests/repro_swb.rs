//! `schedlab repro swb`'s tables (seed 001): a cell for every row of the
//! seed's schbench(old) table (table 4, at a thirtieth of its runtime) and
//! hackbench table (table 2, every group count, a few loops), before and
//! after being the scenario file with SWB_SMT_SKIP off and on and nothing
//! else changed; table 1's ns are the scan plus funclatency's probe cost.
//! Which verdict the rows earn is not asserted.

mod common;
use common::{json_of, schedlab};
use schedlab::repro::seed_rows::{rows, PCTS};
use schedlab::repro::summary::Series;
use schedlab::repro::swb::{
    funclatency_cells, hackbench_cells, schbench_cells, schbench_sets, FUNCLATENCY_PROBE_NS,
};

const SCENARIO: &str = "scenarios/seed-001-swb/schbench-old.toml";
const IDLE: &str = "scenarios/seed-001-swb/swb-cost-idle.toml";
/// 1 s runs, the first 1/6 s warmup.
const SCALE: u64 = 30;

/// The swb cell keys the seed rows whose label starts with `prefix` name.
fn wanted_keys(prefix: &str) -> Vec<String> {
    let mut keys: Vec<String> = rows()
        .into_iter()
        .filter(|r| r.label.starts_with(prefix))
        .map(|r| match r.sim {
            Some((Series::Swb, key)) => key,
            _ => panic!("{} has no swb cell", r.label),
        })
        .collect();
    keys.sort();
    keys
}

#[test]
fn hackbench_cells_stand_for_every_seed_row() {
    let cells = hackbench_cells(2, 5).unwrap();
    let mut keys: Vec<&str> = cells.iter().map(|c| c.key.as_str()).collect();
    keys.sort_unstable();
    // The seed publishes 16 hackbench rows, 10 to 60 groups.
    assert_eq!(keys.len(), 16);
    assert_eq!(keys, wanted_keys("hackbench"));
    for c in &cells {
        assert_eq!((c.before.len(), c.after.len()), (2, 2), "{}", c.key);
        assert!(
            c.before.iter().chain(&c.after).all(|&v| v > 0.0),
            "{}",
            c.key
        );
    }
    // Each row runs its own group count: 60 groups take longer than 10.
    let time = |key: &str| cells.iter().find(|c| c.key == key).unwrap().before[0];
    for mode in ["Process", "Process(Pipe)"] {
        let (ten, sixty) = (format!("2 {mode} 10 groups"), format!("2 {mode} 60 groups"));
        assert!(time(&sixty) > 2.0 * time(&ten), "{mode}");
    }
}

/// should_we_balance's total ns and calls, from `schedlab run`'s summary
/// ("avg = .. nsecs, total: T nsecs, count: N").
fn swb_total_and_count(out: &str) -> (f64, f64) {
    let line = out.lines().find(|l| l.starts_with("avg = ")).expect(out);
    let num = |tag: &str| {
        let rest = &line[line.find(tag).unwrap() + tag.len()..];
        let end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        rest[..end].parse::<f64>().unwrap()
    };
    (num("total: "), num("count: "))
}

#[test]
fn funclatency_cells_are_the_scan_plus_the_probe_cost() {
    let cells = funclatency_cells(2).unwrap();
    let mut keys: Vec<&str> = cells.iter().map(|c| c.key.as_str()).collect();
    keys.sort_unstable();
    assert_eq!(keys, wanted_keys("should_we_balance (funclatency)"));
    let idle = cells.iter().find(|c| c.key == "1 idle system").unwrap();
    for (skip, side) in [("false", &idle.before), ("true", &idle.after)] {
        let feature = format!("kernel.features.SWB_SMT_SKIP={skip}");
        let args = ["run", IDLE, "--set", "sim.seed=1", "--set", &feature];
        let (rc, out, err) = schedlab(&args);
        assert_eq!(rc, 0, "{err}");
        let (total, count) = swb_total_and_count(&out);
        assert!(count > 0.0, "{out}");
        // funclatency times the probe's own work with the function's.
        let want = total / count + FUNCLATENCY_PROBE_NS;
        assert!(
            (side[0] - want).abs() < 1e-9,
            "{skip}: {} vs {want}",
            side[0]
        );
    }
}

#[test]
fn schbench_old_cells_stand_for_every_seed_row() {
    let cells = schbench_cells(2, SCALE).unwrap();
    let mut keys: Vec<&str> = cells.iter().map(|c| c.key.as_str()).collect();
    let wanted = wanted_keys("schbench(old)");
    assert_eq!(wanted.len(), 6 * PCTS.len());
    keys.sort_unstable();
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
