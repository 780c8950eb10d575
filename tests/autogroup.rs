//! A replay puts each task in the autogroup its `# autogroup` line names
//! (docs/replay.md, "Autogroups"): the groups split the CPU by their
//! weights, whatever their task counts; without the lines, with
//! `--no-autogroup`, or with the replay placed in a cgroup, every task
//! shares one level.

mod common;
use common::{json_of, tmp};
use serde_json::Value;

/// One CPU shared round-robin in 1 ms slices by task 10 (comm `a`) and
/// tasks 20, 21, 22 (comm `b`), 100 slices each: each ran 100 ms of 400
/// and waited 300, as at one level. With `groups`, task 10 is alone in
/// `/autogroup-1` and the others in `/autogroup-2`.
fn trace(groups: bool) -> String {
    let mut t = String::new();
    if groups {
        t += "# autogroup enabled=1\n# autogroup pid=10 group=/autogroup-1 nice=0\n";
        for pid in [20, 21, 22] {
            t += &format!("# autogroup pid={pid} group=/autogroup-2 nice=0\n");
        }
    }
    let comm = |p: u32| if p == 10 { "a" } else { "b" };
    let order = [10u32, 20, 21, 22];
    let mut prev = 0u32;
    for slice in 0..400u64 {
        let next = order[slice as usize % 4];
        let (ctx, pc) = if prev == 0 {
            ("swapper", "swapper/0")
        } else {
            (comm(prev), comm(prev))
        };
        t += &format!(
            "{ctx} {prev} [000] {}.{:09}: sched:sched_switch: prev_comm={pc} prev_pid={prev} \
             prev_prio=120 prev_state=R ==> next_comm={} next_pid={next} next_prio=120\n",
            1 + slice / 1000,
            (slice % 1000) * 1_000_000,
            comm(next)
        );
        prev = next;
    }
    t
}

/// Replay `text` on one CPU with `flags`: the simulated wait of each
/// task (ms), by pid.
fn waits(text: &str, name: &str, flags: &[&str]) -> Vec<(u64, f64)> {
    let file = tmp(&format!("{name}.txt"));
    std::fs::write(&file, text).unwrap();
    let f = file.display().to_string();
    let mut args = vec!["replay", &f, "--fidelity", "--machine", "smp:cpus=1"];
    args.extend_from_slice(flags);
    let v = json_of(&args, &format!("{name}.json"));
    let tasks = v["benchmark"]["replay"]["fidelity"]["tasks"]
        .as_array()
        .unwrap();
    let wait = |t: &Value| t["simulated"]["wait_ns"].as_f64().unwrap() / 1e6;
    let run = |t: &Value| t["simulated"]["runtime_ns"].as_f64().unwrap() / 1e6;
    for t in tasks {
        // Each task replays its 100 ms, grouped or not.
        assert!((run(t) - 100.0).abs() < 5.0, "{t}");
    }
    tasks
        .iter()
        .map(|t| (t["pid"].as_u64().unwrap(), wait(t)))
        .collect()
}

fn wait_of(w: &[(u64, f64)], pid: u64) -> f64 {
    w.iter().find(|(p, _)| *p == pid).unwrap().1
}

/// Two autogroups of equal weight each get half the CPU: task 10, alone
/// in its group, runs its 100 ms in the first 200 (waits about 100 ms,
/// not the 300 of one level), and the three of the other group wait
/// about 300 ms each (100 ms each in 400).
#[test]
fn two_autogroups_split_the_cpu_between_them() {
    let grouped = waits(&trace(true), "grouped", &[]);
    let a = wait_of(&grouped, 10);
    assert!(
        (a - 100.0).abs() < 15.0,
        "task 10 waited {a:.1} ms: {grouped:?}"
    );
    for pid in [20, 21, 22] {
        let b = wait_of(&grouped, pid);
        assert!((b - 300.0).abs() < 30.0, "task {pid} waited {b:.1} ms");
    }
    // The same trace without the groups, or without its lines: one level,
    // where task 10 waits as long as the others.
    for (name, text, flags) in [
        ("off", trace(true), &["--no-autogroup"][..]),
        ("none", trace(false), &[][..]),
    ] {
        let flat = waits(&text, name, flags);
        let a = wait_of(&flat, 10);
        assert!(a > 250.0, "{name}: task 10 waited {a:.1} ms: {flat:?}");
    }
}

/// A cgroup placement of the replay wins over the autogroups (every task
/// in it: one level again); a declared cgroup of an autogroup's path
/// keeps its declared weight (300 against 100: task 10 gets 3/4 of the
/// CPU, waits about 33 ms); a recorded nice sets the group's weight
/// (nice 5 is 335 against nice 0's 1024: task 10 waits about 33 ms too).
#[test]
fn placements_and_declared_weights_win_and_nice_sets_the_weight() {
    let text = trace(true);
    let placed = waits(
        &text,
        "placed",
        &["--cgroup", "/x:weight=100", "--set", "workload.0.cgroup=/x"],
    );
    assert!(wait_of(&placed, 10) > 250.0, "{placed:?}");
    let declared = waits(&text, "declared", &["--cgroup", "/autogroup-1:weight=300"]);
    let a = wait_of(&declared, 10);
    assert!((a - 33.3).abs() < 10.0, "task 10 waited {a:.1} ms");
    let niced = text.replace("group=/autogroup-2 nice=0", "group=/autogroup-2 nice=5");
    let n = waits(&niced, "niced", &[]);
    // 100 ms × 335 / 1024 (sched_prio_to_weight of nice 5 and 0).
    let a = wait_of(&n, 10);
    assert!((a - 32.7).abs() < 10.0, "task 10 waited {a:.1} ms");
}

/// `# autogroup enabled=0` (the sysctl was 0 when recorded): the lines
/// are not used; a bad line exits 2 naming the file and line.
#[test]
fn disabled_autogroups_are_not_used_and_bad_lines_are_named() {
    let off = trace(true).replace("enabled=1", "enabled=0");
    let flat = waits(&off, "disabled", &[]);
    assert!(wait_of(&flat, 10) > 250.0, "{flat:?}");
    for bad in [
        "# autogroup pid=10 group=autogroup-1 nice=0",
        "# autogroup pid=10 group=/a/b nice=0",
        "# autogroup pid=10 group=/autogroup-1 nice=20",
        "# autogroup pid=x group=/autogroup-1 nice=0",
        "# autogroup enabled=2",
    ] {
        let file = tmp("bad.txt");
        std::fs::write(&file, format!("{bad}\n{}", trace(false))).unwrap();
        let (rc, _, err) = common::schedlab(&["replay", &file.display().to_string()]);
        assert_eq!(rc, 2, "{bad}: {err}");
        assert!(err.contains("bad.txt:1: "), "{bad}: {err}");
    }
}
