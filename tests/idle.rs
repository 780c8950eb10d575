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

/// The costs of the machine file the CPU-time test runs on: one deep idle
/// state whose exit latency dwarfs everything else.
const EXIT_NS: u64 = 200_000;
const HRTIMER_IRQ_NS: u64 = 3_000;
const NOHZ_IDLE_EXIT_NS: u64 = 2_000;
const CONTEXT_SWITCH_NS: u64 = 1_000;
/// smp:'s (Cascade Lake's) mm_switch_ns: the most a switch adds beyond
/// context_switch_ns for this one-task workload (its mm is still loaded).
const MM_SWITCH_NS: u64 = 150;

fn deep_idle_machine() -> std::path::PathBuf {
    let path = common::tmp("idle-deep.toml");
    let file = format!(
        "base = \"smp:cpus=2\"\n[cost]\nhrtimer_irq_ns = {HRTIMER_IRQ_NS}\n\
         nohz_idle_exit_ns = {NOHZ_IDLE_EXIT_NS}\ncontext_switch_ns = {CONTEXT_SWITCH_NS}\n\
         [[cost.idle_states]]\nname = \"C6\"\nexit_latency_ns = {EXIT_NS}\n\
         target_residency_ns = 600000\npolling = false\n"
    );
    std::fs::write(&path, file).unwrap();
    path
}

/// Issue 32, part 6: a task woken by its own timer on an idle CPU is
/// charged, beyond its time on the CPU as a trace shows it (from the
/// sched_switch to it, which comes after the interrupts and before the
/// switch), what rq_clock_skip_update charges it from the enqueue in the
/// timer interrupt: the rest of that interrupt and the tick restart. The
/// idle state's exit latency comes before the handler runs: it delays the
/// wakee but is idle time, in no task's sum_exec_runtime.
#[test]
fn a_timer_wakeup_from_idle_charges_the_wakee_no_exit_latency() {
    let m = deep_idle_machine().display().to_string();
    let v = json_of(
        &[
            "run",
            "--machine",
            &m,
            "-w",
            "periodic:tasks=1,run=1ms,sleep=9ms",
            "--set",
            "sim.duration=2s",
            "--set",
            "noise.enabled=false",
        ],
        "idle-cputime.json",
    );
    let t = &v["tasks"][0];
    let field = |k: &str| t[k].as_u64().unwrap_or_else(|| panic!("tasks[0].{k}"));
    let (exec, oncpu, wakeups) = (field("sum_exec_ns"), field("oncpu_ns"), field("nr_wakeups"));
    assert!(wakeups > 150, "{wakeups} wakeups in 2 s");
    let charged = HRTIMER_IRQ_NS + NOHZ_IDLE_EXIT_NS;
    let per_wakeup = (exec - oncpu) / wakeups;
    assert!(
        (charged..=charged + MM_SWITCH_NS).contains(&per_wakeup),
        "{per_wakeup} ns of CPU time per wakeup off the CPU, want {charged} (+ {MM_SWITCH_NS})"
    );
    // The exit still delays the wakee: it runs after it, and after the rest.
    let p50_ns = t["wakeup_latency_us"]["p50"].as_f64().unwrap() * 1000.0;
    assert!(
        p50_ns >= (EXIT_NS + charged + CONTEXT_SWITCH_NS) as f64,
        "wakeup latency p50 {p50_ns} ns, exit latency {EXIT_NS}"
    );
}
