//! The decision records (`--trace-decisions`) and `schedlab explain`.

mod common;
use common::{json_of, line_field, line_ts, schedlab, tmp};

const RUN: &[&str] = &[
    "run",
    "--machine",
    "vm-2",
    "-w",
    "hackbench:groups=1,loops=20",
];

/// The ftrace text of RUN, with extra flags.
fn trace_of(name: &str, extra: &[&str]) -> String {
    let path = tmp(name);
    let p = path.display().to_string();
    let mut args = RUN.to_vec();
    args.extend(["--trace", &p, "-q"]);
    args.extend(extra);
    let (rc, _, err) = schedlab(&args);
    assert_eq!(rc, 0, "{err}");
    std::fs::read_to_string(&path).unwrap()
}

#[test]
fn decision_lines_only_with_the_flag_and_nothing_else_changes() {
    let plain = trace_of("plain.txt", &[]);
    let with = trace_of("decisions.txt", &["--trace-decisions"]);
    assert!(
        !plain.contains("schedlab_"),
        "decision lines without the flag"
    );
    for ev in [
        "schedlab_pick: ",
        "schedlab_place: ",
        "schedlab_resched: ",
        "schedlab_balance: ",
    ] {
        assert!(with.contains(ev), "no {ev} line");
    }
    let pick = with
        .lines()
        .find(|l| l.contains("schedlab_pick: "))
        .unwrap();
    for key in [
        "cpu=",
        "pid=",
        "eligible=",
        "vruntime=",
        "deadline=",
        "lag=",
        "protected=",
        "runner_up=",
    ] {
        assert!(!line_field(pick, key).is_empty(), "{key} missing: {pick}");
    }
    // The records are extra lines: the rest is the trace without them.
    let rest: String = (with.lines())
        .filter(|l| !l.contains(": schedlab_"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(rest == plain, "the flag changed the kernel's own lines");
    // And building them changes no result.
    let p = tmp("d.txt").display().to_string();
    let mut traced = RUN[1..].to_vec();
    traced.extend(["--trace", &p, "--trace-decisions"]);
    let mut a = vec!["run"];
    a.extend(traced);
    assert_eq!(json_of(&a, "d.json"), json_of(RUN, "p.json"));
}

/// Three tasks that run 3 ms and sleep 1 ms on two CPUs: a CPU whose
/// task sleeps goes newly idle while the other runs two, and pulls one.
#[test]
fn balance_records_say_what_was_balanced_and_moved() {
    let path = tmp("balance.txt");
    let p = path.display().to_string();
    let (rc, _, err) = schedlab(&[
        "run",
        "--machine",
        "smp:cpus=2",
        "-w",
        "periodic:tasks=3,run=3ms,sleep=1ms",
        "--duration",
        "100ms",
        "-q",
        "--trace",
        &p,
        "--trace-decisions",
    ]);
    assert_eq!(rc, 0, "{err}");
    let text = std::fs::read_to_string(&path).unwrap();
    // The existing reader takes it (the records are lines it skips).
    let recs = schedlab::trace::parse::parse(&p, &text).unwrap();
    assert!(recs.len() > 100, "{} records", recs.len());
    let lines: Vec<&str> = text.lines().collect();
    let mut pulls = 0;
    for (i, l) in lines.iter().enumerate() {
        if !l.contains(": schedlab_balance: ") {
            continue;
        }
        check_balance_line(l);
        let f = |k| line_field(l, k);
        if f("idle=") == "newly-idle" && f("why=") == "moved" {
            pulls += 1;
            assert_eq!(f("moved="), "1", "newly idle pulls one task: {l}");
            assert_eq!(f("migration="), "task", "{l}");
            assert!(f("imbalance=").parse::<i64>().unwrap() > 0, "{l}");
            assert_ne!(f("src_cpu="), f("dst_cpu="), "{l}");
            // Its sched_migrate_task, just before it: the task named.
            let m = lines[i - 1];
            assert!(m.contains(": sched_migrate_task: "), "{m}\n{l}");
            assert_eq!(line_field(m, "pid="), f("pid="), "{m}\n{l}");
            assert_eq!(line_field(m, "orig_cpu="), f("src_cpu="), "{m}\n{l}");
            assert_eq!(line_field(m, "dest_cpu="), f("dst_cpu="), "{m}\n{l}");
            assert_eq!(line_ts(m), line_ts(l));
        }
    }
    assert!(pulls > 0, "no newly idle pull in:\n{text}");
}

/// One balance record's fields are all there and agree with its outcome.
fn check_balance_line(l: &str) {
    let f = |k| line_field(l, k);
    for key in [
        "dst_cpu=",
        "domain=",
        "level=",
        "idle=",
        "why=",
        "group=",
        "src_cpu=",
        "migration=",
        "imbalance=",
        "moved=",
        "pid=",
        "active=",
    ] {
        assert!(!f(key).is_empty(), "{key} missing: {l}");
    }
    assert_eq!(f("domain="), "MC", "{l}");
    assert!(
        ["idle", "newly-idle", "not-idle"].contains(&f("idle=")),
        "{l}"
    );
    let moved: u32 = f("moved=").parse().unwrap();
    match f("why=") {
        "moved" => assert!(moved > 0 && f("pid=") != "-1", "{l}"),
        "balanced" | "not-this-cpu" => {
            assert_eq!((f("src_cpu="), f("migration=")), ("-1", "-"), "{l}")
        }
        "no-busiest-rq" => assert_eq!(f("src_cpu="), "-1", "{l}"),
        "all-pinned" | "cache-hot" | "nothing-movable" => {
            assert!(moved == 0 && f("src_cpu=") != "-1", "{l}")
        }
        "pushed" | "push-failed" => {}
        why => panic!("why={why}: {l}"),
    }
}

/// The longest wakeup/preemption → switch-in wait of the tasks named
/// `comm` in an ftrace text trace: (wait ns, pid).
fn worst_wait_in(trace: &str, comm: &str) -> (u64, String) {
    let ns = |l: &str| {
        let (s, f) = line_ts(l)
            .split_once('.')
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .unwrap();
        s.trim().parse::<u64>().unwrap() * 1_000_000_000 + f.parse::<u64>().unwrap()
    };
    let mut since: std::collections::HashMap<String, Option<u64>> = Default::default();
    let mut running: std::collections::HashSet<String> = Default::default();
    let mut best = (0, String::new());
    for l in trace.lines() {
        if l.contains(": sched_wakeup") && line_field(l, "comm=") == comm {
            let pid = line_field(l, "pid=").to_string();
            if !running.contains(&pid) && since.get(&pid).copied().flatten().is_none() {
                since.insert(pid, Some(ns(l)));
            }
        } else if l.contains(": sched_switch: ") {
            let prev = line_field(l, "prev_pid=").to_string();
            if line_field(l, "prev_comm=") == comm {
                running.remove(&prev);
                let runnable = line_field(l, "prev_state=").starts_with('R');
                since.insert(prev, runnable.then(|| ns(l)));
            }
            let next = line_field(l, "next_pid=").to_string();
            if line_field(l, "next_comm=") == comm {
                if let Some(Some(t)) = since.insert(next.clone(), None) {
                    if ns(l) - t > best.0 {
                        best = (ns(l) - t, next.clone());
                    }
                }
                running.insert(next);
            }
        }
    }
    best
}

#[test]
fn explain_worst_wait_is_the_longest_wait_the_trace_shows() {
    let trace = trace_of("explain.txt", &[]);
    let (want, pid) = worst_wait_in(&trace, "hackbench-recv");
    assert!(want > 0);
    let mut args = vec!["explain"];
    args.extend(&RUN[1..]);
    args.extend(["--task", "hackbench-recv", "--worst-wait"]);
    let (rc, out, err) = schedlab(&args);
    assert_eq!(rc, 0, "{err}");
    let head = out.lines().next().unwrap();
    assert!(
        head.contains(&format!("(pid {pid})")),
        "{head}, want pid {pid}"
    );
    let ms = format!("{}.{:06} ms", want / 1_000_000, want % 1_000_000);
    assert!(
        head.contains(&format!(": {ms} on CPU")),
        "{head}, want {ms}"
    );
    // The table marks the same wait, and the picks end with the task's own.
    let row = out.lines().find(|l| l.contains("<== this wait")).unwrap();
    assert!(row.contains(&ms), "{row}");
    assert!(out.contains("\nWhy: "), "{out}");
    // --at inside that wait tells the same one.
    let start = head
        .split(", from ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let mut at = vec!["explain"];
    at.extend(&RUN[1..]);
    let t = format!("{}ns", start.replace('.', "").trim_start_matches('0'));
    at.extend(["--task", &pid, "--at", &t]);
    let (rc, out2, err) = schedlab(&at);
    assert_eq!(rc, 0, "{err}");
    assert!(out2.lines().next().unwrap().contains(&ms), "{out2}");
}

/// In RUN the worst wait of a receiver ends on CPU 1, where an idle
/// balance pulled it: the story names that balance and its numbers.
#[test]
fn explain_names_the_load_balance_that_moved_the_task() {
    let mut args = vec!["explain"];
    args.extend(&RUN[1..]);
    args.extend(["--task", "hackbench-recv"]);
    let (rc, out, err) = schedlab(&args);
    assert_eq!(rc, 0, "{err}");
    let moved = out
        .lines()
        .find(|l| l.starts_with("Moved from CPU "))
        .unwrap_or_else(|| panic!("no move in:\n{out}"));
    for part in [
        "while it waited: a load balance by CPU ",
        "at its MC domain (level 0)",
        " the busiest: migrate_",
        ", imbalance ",
    ] {
        assert!(moved.contains(part), "{part:?} not in {moved}");
    }
}

#[test]
fn explain_bad_input_exits_2() {
    let mut args = vec!["explain"];
    args.extend(&RUN[1..]);
    let run = |extra: &[&str]| {
        let mut a = args.clone();
        a.extend(extra);
        schedlab(&a)
    };
    let (rc, _, err) = run(&["--task", "hackbench-recx"]);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("did you mean `hackbench-recv`"), "{err}");
    assert!(err.contains("hackbench-send"), "{err}");
    let (rc, _, err) = run(&["--task", "hackbench-recv", "--at", "3"]);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("--at") && err.contains("unit"), "{err}");
    let (rc, _, _) = run(&["--task", "hackbench-recv", "--at", "3ms", "--worst-wait"]);
    assert_eq!(rc, 2);
    let (rc, _, err) = schedlab(&["explain", "--task", "x", "--set", "kernel.bogus=1"]);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("kernel.bogus"), "{err}");
}

/// Four tasks on two CPUs start together: the longest wait is a new
/// task's first, which no wakeup began and no preemption either. Without
/// noise (which moves the tick and every cost by seed) the two that wait
/// wait a whole 3 ms run; after that the 10 ms sleeps leave each pair's
/// runs apart, so no later wait is as long.
#[test]
fn a_wait_from_creation_says_so_and_counts_its_picks() {
    let (rc, out, err) = schedlab(&[
        "explain",
        "--machine",
        "smp:cpus=2",
        "-w",
        "periodic:tasks=4,run=3ms,sleep=10ms",
        "--duration",
        "100ms",
        "--set",
        "noise.enabled=false",
        "--task",
        "periodic",
        "--worst-wait",
    ]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("it was created (fork)"), "{out}");
    assert!(!out.contains("switched out still runnable"), "{out}");
    assert!(out.contains("1 pick on its CPU went to others"), "{out}");
}
