//! The nohz idle decision (issue 20, part 6): the cpuidle governor's
//! stop_tick answer decides whether an idle CPU keeps ticking, and an idle
//! CPU that ticks balances from its ticks.

mod common;
use common::json_of;
use serde_json::Value;

/// One task alternating 100 µs of work with `sleep` on a 2-CPU machine.
fn sleeper(machine: &str, sleep: &str, governor: Option<&str>, name: &str) -> Value {
    let w = format!("periodic:tasks=1,run=100us,sleep={sleep}");
    let g = governor.map(|g| format!("machine.cpuidle_governor=\"{g}\""));
    let mut args = vec!["run", "--machine", machine, "--workload", &w];
    args.extend(["--set", "sim.duration=2s"]);
    if let Some(g) = &g {
        args.extend(["--set", g]);
    }
    json_of(&args, name)
}

fn total(v: &Value, key: &str) -> u64 {
    v["totals"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("totals.{key}"))
}

/// Idle periods entered (schedstat sched_goidle over all CPUs).
fn idle_entries(v: &Value) -> u64 {
    let cpus = v["cpus"].as_array().unwrap();
    cpus.iter()
        .map(|c| c["sched_goidle"].as_u64().unwrap())
        .sum()
}

#[test]
fn menu_keeps_the_tick_for_short_sleeps_and_stops_it_for_long_ones() {
    let short = sleeper("smp:cpus=2", "1ms", None, "idle-menu-short.json");
    // 1 ms idle periods are shorter than a 4 ms tick: the tick keeps running
    // and the idle CPU runs the periodic balance from it.
    assert!(total(&short, "idle_ticks") > 0);
    assert!(total(&short, "idle_tick_balances") > 0);
    assert!(
        short["balance"]["should_we_balance"]["calls"]
            .as_u64()
            .unwrap()
            > 0
    );
    // 50 ms idle periods: after the first tick wakeups the history says
    // "long", the tick stops, and most periods see no tick at all.
    let long = sleeper("smp:cpus=2", "50ms", None, "idle-menu-long.json");
    let stops = total(&long, "nohz_tick_stopped");
    assert!(stops > 0);
    let ticks_per_period = total(&long, "idle_ticks") as f64 / idle_entries(&long) as f64;
    assert!(
        ticks_per_period < 2.0,
        "{ticks_per_period} idle ticks per 50 ms idle period"
    );
    assert!(
        total(&short, "idle_ticks") as f64 / idle_entries(&short) as f64 > 0.1,
        "short sleeps tick in idle"
    );
}

#[test]
fn teo_keeps_the_tick_for_short_sleeps() {
    let v = sleeper("smp:cpus=2", "1ms", Some("teo"), "idle-teo.json");
    assert!(total(&v, "idle_ticks") > 0);
    assert!(total(&v, "idle_tick_balances") > 0);
}

#[test]
fn haltpoll_without_a_poll_window_always_stops_the_tick() {
    // vm-2: haltpoll with guest_halt_poll_ns = 0 halts at once, stop_tick set.
    let v = sleeper("vm-2", "1ms", None, "idle-haltpoll.json");
    assert_eq!(total(&v, "idle_ticks"), 0);
    assert!(total(&v, "nohz_tick_stopped") > 0);
}

#[test]
fn without_a_governor_the_tick_stops_at_its_first_idle_wakeup() {
    let v = sleeper("smp:cpus=2", "50ms", Some("none"), "idle-none.json");
    let (ticks, entries) = (total(&v, "idle_ticks"), idle_entries(&v));
    // One tick per idle period at most, then it stops.
    assert!(
        ticks > 0 && ticks <= entries,
        "{ticks} ticks, {entries} periods"
    );
    assert!(total(&v, "nohz_tick_stopped") >= ticks);
}
