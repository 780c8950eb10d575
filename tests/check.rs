//! `--check` (issue 16 part 3): the incremental check after an event sees
//! a broken invariant on the CPU it touched, the whole-machine sweep sees
//! broken bandwidth accounting, and `sim.check_every` is checked.

mod common;
use common::schedlab;
use schedlab::engine::EventKind;
use schedlab::kernel::Kernel;
use schedlab::scenario::{Scenario, Source};

const SCENARIO: &str = r#"
[sim]
duration = "30ms"
check = true
[machine]
preset = "smp:cpus=4"
[[cgroup]]
path = "/lim"
max = "2000 10000"
[[workload]]
kind = "stress-ng"
cpu = 8
cgroup = "/lim"
[[workload]]
kind = "periodic"
tasks = 6
run = "3ms"
sleep = "1ms"
"#;

/// The kernel after a clean checked run of `SCENARIO`.
fn kernel_after_run() -> Kernel {
    let (src, t) = Source::parse(Some("check.toml".into()), SCENARIO.into()).unwrap();
    let sc = Scenario::resolve(&src, &t).unwrap();
    let mut k = schedlab::run::run(&src, &sc).unwrap().kernel;
    // Only incremental checks from here on.
    k.marks.every = u64::MAX;
    k
}

#[test]
fn an_event_sees_a_queued_task_with_the_wrong_task_cpu() {
    let mut k = kernel_after_run();
    let p = (0..k.tasks.len())
        .find(|&p| k.tasks[p].on_rq && k.rqs[k.tasks[p].cpu].curr != Some(p))
        .expect("a queued task that is not running");
    let cpu = k.tasks[p].cpu;
    assert_eq!(k.check_event(EventKind::Tick, cpu), Ok(()));
    k.tasks[p].cpu = (cpu + 1) % k.rqs.len();
    let e = k.check_event(EventKind::Tick, cpu).unwrap_err();
    assert!(e.contains("task_cpu"), "{e}");
}

#[test]
fn the_sweep_sees_broken_bandwidth_accounting() {
    let mut k = kernel_after_run();
    assert_eq!(k.check_invariants(), Ok(()));
    assert!(k.stats.cfs_throttled > 0, "the quota never bit");
    k.bandwidth[1].runtime = -1;
    let e = k.check_invariants().unwrap_err();
    assert!(e.contains("bandwidth pool"), "{e}");
    k.bandwidth[1].runtime = 0;
    k.rqs[0].gcfs[1].runtime_remaining = 6_000_000;
    let e = k.check_invariants().unwrap_err();
    assert!(e.contains("more than one slice"), "{e}");
}

/// A cfs_rq's util_avg may reach what it earned running plus what its
/// attached tasks brought in, not more (a task attached twice, as issue 15
/// found at t = 0).
#[test]
fn the_sweep_bounds_a_cfs_rq_util_by_running_and_its_tasks() {
    let mut k = kernel_after_run();
    assert_eq!(k.check_invariants(), Ok(()));
    let cpu = 0;
    let tasks: u64 = k
        .tasks
        .iter()
        .filter(|t| t.se.avg.attached && t.cpu == cpu && t.tg == 0)
        .map(|t| t.se.avg.util_avg)
        .sum();
    // The group entity of /lim on this CPU is attached to the root too.
    use schedlab::kernel::fair::{SeStore, GROUP_SE};
    let lim = k.ents(cpu).se(GROUP_SE + 1).avg;
    let brought = tasks + if lim.attached { lim.util_avg } else { 0 };
    assert!(brought > 100, "util {brought}: too small to see");
    let ran = k.rqs[cpu]
        .cfs
        .running_avg
        .as_ref()
        .expect("tracked with --check")
        .util_avg;
    assert!(ran <= 1024, "{ran}");
    k.rqs[cpu].cfs.avg.util_avg = ran + brought;
    assert_eq!(k.check_invariants(), Ok(()));
    // Util removed by migrations and not yet taken off counts too.
    let removed = k.rqs[cpu].cfs.removed.util_avg;
    k.rqs[cpu].cfs.avg.util_avg = ran + 2 * (brought + removed) + 64;
    let e = k.check_invariants().unwrap_err();
    assert!(
        e.contains("cpu0 group 0") && e.contains("attached entities"),
        "{e}"
    );
}

#[test]
fn check_every_takes_tick_or_a_count() {
    for every in ["1", "1000", "\"tick\""] {
        let (rc, _, err) = schedlab(&[
            "run",
            "--check",
            "--machine",
            "vm-2",
            "-w",
            "pipe:loops=200",
            "--set",
            &format!("sim.check_every={every}"),
            "-q",
        ]);
        assert_eq!(rc, 0, "{every}: {err}");
    }
    let (rc, _, err) = schedlab(&["run", "-w", "pipe:loops=10", "--set", "sim.check_every=0"]);
    assert_eq!(rc, 2);
    assert!(
        err.contains("sim.check_every") && err.contains("tick"),
        "{err}"
    );
}
