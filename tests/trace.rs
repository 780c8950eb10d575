//! Traces out (ftrace text, Chrome JSON) and in (perf script, ftrace),
//! causal replay and its fidelity report, and bad trace input.

mod common;
use common::schedlab;

fn tmp(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("schedlab-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name).display().to_string()
}

const PERF: &str = "tests/data/messaging-g1-l100.perf.txt";
const FTRACE: &str = "tests/data/messaging-g1-l20.ftrace.txt";

fn json(path: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `schedlab replay TRACE --machine vm-2 --fidelity --json NAME` and
/// `flags`, which must succeed: its stdout and the JSON's `benchmark.replay`.
fn replay_fidelity(trace: &str, name: &str, flags: &[&str]) -> (String, serde_json::Value) {
    let j = tmp(name);
    let mut args = vec![
        "replay",
        trace,
        "--machine",
        "vm-2",
        "--fidelity",
        "--json",
        &j,
    ];
    args.extend_from_slice(flags);
    let (rc, out, err) = schedlab(&args);
    assert_eq!(rc, 0, "{trace}: {err}");
    (out, json(&j)["benchmark"]["replay"].clone())
}

#[test]
fn ftrace_export_is_well_formed_and_does_not_perturb_the_run() {
    let t = tmp("p.txt");
    let run = [
        "run",
        "--machine",
        "vm-2",
        "--workload",
        "periodic:tasks=4,run=3ms,sleep=1ms",
        "--duration",
        "200ms",
    ];
    let (rc, plain, _) = schedlab(&run);
    assert_eq!(rc, 0);
    let (j1, j2) = (tmp("p1.json"), tmp("p2.json"));
    let mut traced = run.to_vec();
    traced.extend(["--trace", &t, "--trace-pelt", "1000", "--json", &j1]);
    let (rc, out, err) = schedlab(&traced);
    assert_eq!(rc, 0, "{err}");
    let strip = |s: &str| {
        s.lines()
            .filter(|l| !l.contains("wall"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip(&plain), strip(&out), "tracing changed the simulation");
    let text = std::fs::read_to_string(&t).unwrap();
    assert!(text.starts_with("# tracer: nop\n"));
    let mut switches = 0;
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        // `comm-pid [ccc] ffff ts: event: ...` with 4 flag characters.
        let cpu_end = l.find("] ").expect(l) + 2;
        let flags = &l[cpu_end..cpu_end + 4];
        assert!(
            flags.chars().all(|c| c.is_ascii_alphanumeric() || c == '.'),
            "{l}"
        );
        assert_eq!(&l[cpu_end + 4..cpu_end + 5], " ", "{l}");
        switches += l.contains(" sched_switch: ") as u64;
    }
    // Four tasks on two CPUs: ticks preempt them (R+), and they sleep (S).
    assert!(text.contains("prev_state=R+ ==>"));
    assert!(text.contains("prev_state=S ==>"));
    for ev in ["sched_waking:", "sched_wakeup:", "sched_wakeup_new:"] {
        assert!(text.contains(ev), "no {ev}");
    }
    assert!(text.contains("tracing_mark_write: C|0|cpu0 nr_running|"));
    assert!(text.contains("tracing_mark_write: C|0|cpu1 util_avg|"));
    assert!(text.contains(" util_avg|") && text.contains("|1000 load_avg|"));
    // One sched_switch line per switch the kernel counted.
    let (_, _, _) = schedlab(&[&run[..], &["--json", &j2]].concat());
    assert_eq!(
        switches,
        json(&j2)["totals"]["rq_switches"].as_u64().unwrap()
    );
    assert!(switches > 100);
}

#[test]
fn exported_trace_replays_to_the_same_work() {
    let t = tmp("h.txt");
    let (rc, _, err) = schedlab(&[
        "run",
        "--machine",
        "vm-2",
        "--workload",
        "hackbench:groups=2,loops=30,ipc=pipe",
        "--trace",
        &t,
    ]);
    assert_eq!(rc, 0, "{err}");
    let (out, w) = replay_fidelity(&t, "h.json", &[]);
    assert!(out.contains("# replay of"), "{out}");
    let f = &w["fidelity"];
    assert!(f.is_object(), "{w}");
    assert_eq!(f["tasks"].as_array().unwrap().len(), 81);
    assert!(w["edges"].as_u64().unwrap() > 50, "{w}");
    assert!(std::fs::read_to_string(&t)
        .unwrap()
        .contains("sched_process_fork:"));
    // The replay runs the recorded CPU time again: the kernel work it
    // charges itself (a cross-CPU wakeup's IPI included) is taken out of
    // the recorded bursts: within 10 % (measured +2 %: where the replay's
    // wakeup lands elsewhere than the recorded one, its cost differs).
    let e = f["total"]["relative_error"]["runtime"].as_f64().unwrap();
    assert!(e.abs() < 0.10, "runtime error {e}");
}

#[test]
fn chrome_export_is_valid_json_with_cpu_slices_and_window() {
    let t = tmp("c.json");
    let (rc, _, err) = schedlab(&[
        "run",
        "--machine",
        "vm-2",
        "--workload",
        "periodic:tasks=3,run=2ms,sleep=2ms",
        "--duration",
        "1s",
        "--trace",
        &t,
        "--trace-format",
        "chrome",
        "--trace-window",
        "200ms..300ms",
    ]);
    assert_eq!(rc, 0, "{err}");
    let v = json(&t);
    let evs = v["traceEvents"].as_array().unwrap();
    let xs: Vec<_> = evs
        .iter()
        .filter(|e| e["ph"] == "X" && e["pid"] == 0)
        .collect();
    assert!(xs.len() > 20);
    for x in &xs {
        let ts = x["ts"].as_f64().unwrap();
        let end = ts + x["dur"].as_f64().unwrap();
        assert!(
            (200_000.0..=300_000.0).contains(&ts) && end <= 300_000.0 + 1e-6,
            "{x}"
        );
    }
    assert!(evs.iter().any(|e| e["ph"] == "C"));
}

#[test]
fn trace_window_keeps_only_its_range() {
    let t = tmp("w.txt");
    let (rc, _, err) = schedlab(&[
        "run",
        "--machine",
        "vm-2",
        "--workload",
        "periodic:tasks=2,run=1ms,sleep=1ms",
        "--duration",
        "3s",
        "--trace",
        &t,
        "--trace-window",
        "2s..2.1s",
    ]);
    assert_eq!(rc, 0, "{err}");
    let text = std::fs::read_to_string(&t).unwrap();
    let ts: Vec<f64> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            l.split("] ").nth(1).unwrap()[5..]
                .trim_start()
                .split(':')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(ts.len() > 100);
    assert!(
        ts.iter().all(|&s| (2.0..2.1).contains(&s)),
        "{:?}",
        &ts[..3]
    );
}

/// The recorded numbers come from the file: switches are the sched_switch
/// lines of replayed tasks, counted here independently.
#[test]
fn replays_a_recorded_perf_trace_with_fidelity() {
    let j = tmp("r.json");
    let (rc, out, err) = schedlab(&[
        "replay",
        PERF,
        "--fidelity",
        "--select",
        "sched-messaging",
        "--machine",
        "vm-2",
        "--json",
        &j,
    ]);
    assert_eq!(rc, 0, "{err}");
    let text = std::fs::read_to_string(PERF).unwrap();
    let mut pids = std::collections::BTreeSet::new();
    for l in text
        .lines()
        .filter(|l| l.contains("child_comm=sched-messaging"))
    {
        pids.insert(l.split("child_pid=").nth(1).unwrap().trim().to_string());
        // The parent forks under the comm it took at exec: selected too.
        let parent = l.split(" pid=").nth(1).unwrap().split(' ').next().unwrap();
        pids.insert(parent.to_string());
    }
    let switched_out = text
        .lines()
        .filter(|l| l.contains("sched_switch: prev_comm=sched-messaging "))
        .filter(|l| {
            pids.contains(
                l.split("prev_pid=")
                    .nth(1)
                    .unwrap()
                    .split(' ')
                    .next()
                    .unwrap(),
            )
        })
        .count() as u64;
    let v = json(&j);
    let f = &v["benchmark"]["replay"]["fidelity"]["total"];
    assert_eq!(f["recorded"]["switches"].as_u64().unwrap(), switched_out);
    assert!(out.contains("total"), "{out}");
    assert_eq!(
        v["benchmark"]["replay"]["tasks"].as_u64().unwrap() as usize,
        pids.len()
    );
}

#[test]
fn replays_a_kernel_ftrace_file() {
    let (rc, out, err) = schedlab(&[
        "replay",
        FTRACE,
        "--select",
        "sched-messaging",
        "--machine",
        "vm-2",
        "-q",
    ]);
    assert_eq!(rc, 0, "{err}");
    // 40 workers and their parent (named sched-messaging from its exec).
    assert!(out.contains("41 tasks"), "{out}");
}

#[test]
fn bad_traces_exit_2_with_file_line_and_text() {
    let text = std::fs::read_to_string(FTRACE).unwrap();
    let cut = tmp("cut.txt");
    let n = text.len() * 2 / 3;
    let n = (n..text.len())
        .find(|&i| text.as_bytes()[i] == b'=')
        .unwrap();
    std::fs::write(&cut, &text[..n]).unwrap();
    let (rc, _, err) = schedlab(&["replay", &cut, "--machine", "vm-2"]);
    assert_eq!(rc, 2, "{err}");
    let nlines = text[..n].lines().count();
    assert!(err.contains(&format!("cut.txt:{nlines}: ")), "{err}");

    let mixed = tmp("mixed.txt");
    let perf: String = std::fs::read_to_string(PERF)
        .unwrap()
        .lines()
        .take(3)
        .map(|l| format!("{l}\n"))
        .collect();
    let head: String = text.lines().take(20).map(|l| format!("{l}\n")).collect();
    std::fs::write(&mixed, format!("{head}{perf}")).unwrap();
    let (rc, _, err) = schedlab(&["replay", &mixed, "--machine", "vm-2"]);
    assert_eq!(rc, 2);
    assert!(
        err.contains("mixed.txt:") && err.contains("mixed trace"),
        "{err}"
    );

    let garbled = tmp("garbled.txt");
    std::fs::write(&garbled, "# tracer: nop\n  a-1 [000] d..2 1.0: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120\n\u{1}\u{2}zz[[\n").unwrap();
    let (rc, _, err) = schedlab(&["replay", &garbled, "--machine", "vm-2"]);
    assert_eq!(rc, 2);
    assert!(err.contains("garbled.txt:3: "), "{err}");
}

#[test]
fn a_replay_cut_by_duration_exits_4_unless_allowed() {
    let base = ["replay", FTRACE, "--machine", "vm-2", "-q"];
    let (_, whole) = replay_fidelity(FTRACE, "whole.json", &[]);
    // Cut halfway: some tasks have ended, others not; the replay did not
    // finish and has no span to report.
    let half = format!("{}ns", whole["simulated_span_ns"].as_u64().unwrap() / 2);
    let (rc, out, err) = schedlab(&[&base[..], &["--duration", &half]].concat());
    assert_eq!(rc, 4, "{err}");
    assert!(out.starts_with("replay: did not finish within"), "{out}");
    assert!(err.contains("a benchmark did not finish (exit 4"), "{err}");
    let allowed = [&base[..], &["--duration", &half, "--allow-unfinished"]].concat();
    let (rc, out, err) = schedlab(&allowed);
    assert_eq!(rc, 0, "{err}");
    assert!(out.starts_with("replay: did not finish within"), "{out}");
}

#[test]
fn a_corrupt_timestamp_is_refused_naming_its_line() {
    // One timestamp of all ones (584 years) mid-trace, or one near zero at
    // the start: the line with the outlier is named, not its neighbour.
    let text = std::fs::read_to_string(FTRACE).unwrap();
    let events: Vec<usize> = (text.lines().enumerate())
        .filter(|(_, l)| l.contains(": sched_"))
        .map(|(i, _)| i)
        .collect();
    for (at, ts) in [(events[100], "18446744073.709551"), (events[0], "0.000001")] {
        let lines: Vec<String> = (text.lines().enumerate())
            .map(|(i, l)| {
                let old = l.split_whitespace().find(|w| w.starts_with("6670."));
                match old.filter(|_| i == at) {
                    Some(old) => l.replacen(old, &format!("{ts}:"), 1),
                    None => l.to_string(),
                }
            })
            .collect();
        let p = tmp("corrupt-ts.txt");
        std::fs::write(&p, lines.join("\n")).unwrap();
        let (rc, _, err) = schedlab(&["replay", &p, "--machine", "vm-2", "-q"]);
        assert_eq!(rc, 2, "{err}");
        let want = format!("corrupt-ts.txt:{}: timestamp {ts}", at + 1);
        assert!(
            err.contains(&want) && err.contains("corrupt timestamp"),
            "{err}"
        );
    }
}

#[test]
fn a_byte_order_mark_is_skipped() {
    // Its header's first line starts with the mark: it must still read as
    // a comment, and the replay be the file's.
    let p = tmp("bom.txt");
    let text = std::fs::read_to_string(FTRACE).unwrap();
    std::fs::write(&p, format!("\u{feff}{text}")).unwrap();
    let run = |f: &str| schedlab(&["replay", f, "--machine", "vm-2", "-q"]);
    let ((rc, with, err), (_, without, _)) = (run(&p), run(FTRACE));
    assert_eq!(rc, 0, "{err}");
    assert_eq!(with.replace(&p, FTRACE), without);
}

#[test]
fn replay_dash_reads_the_trace_from_stdin() {
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["replay", "-", "--machine", "vm-2", "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let text = std::fs::read(FTRACE).unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), &text).unwrap();
    let piped = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&piped.stderr);
    assert!(piped.status.success(), "{err}");
    let (_, from_file, _) = schedlab(&["replay", FTRACE, "--machine", "vm-2", "-q"]);
    let out = String::from_utf8_lossy(&piped.stdout);
    assert_eq!(out.replace("<stdin>", FTRACE), from_file);
    // One stdin cannot hold both the trace and the scenario.
    let (rc, _, err) = schedlab(&["replay", "-", "-"]);
    assert_eq!(rc, 2);
    assert!(err.contains("cannot both be read from stdin"), "{err}");
}

#[test]
fn a_trace_without_wakeups_is_replayed_as_recorded_with_a_warning() {
    let text = std::fs::read_to_string(FTRACE).unwrap();
    let nowake: String = text
        .lines()
        .filter(|l| !l.contains("sched_wak"))
        .map(|l| format!("{l}\n"))
        .collect();
    let p = tmp("nowake.txt");
    std::fs::write(&p, nowake).unwrap();
    let (rc, out, err) = schedlab(&[
        "replay",
        &p,
        "--machine",
        "vm-2",
        "-q",
        "--select",
        "sched-messaging",
    ]);
    assert_eq!(rc, 0, "{err}");
    assert!(
        err.contains("warning") && err.contains("recorded length"),
        "{err}"
    );
    assert!(out.contains("0 wakeup edges"), "{out}");
}

/// A stand-in for the cargo-fuzz targets in fuzz/ (cargo-fuzz needs a
/// nightly toolchain): truncated and byte-flipped traces and rt-app files
/// give a result or an error, never a panic.
#[test]
fn parsers_survive_damaged_input() {
    let inputs = [
        std::fs::read_to_string(FTRACE).unwrap(),
        std::fs::read_to_string(PERF).unwrap()[..20_000].to_string(),
        std::fs::read_to_string("tests/data/rtapp-example.json").unwrap(),
    ];
    let mut seed = 12345u64;
    for text in &inputs {
        for i in 0..300 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mut b = text.as_bytes().to_vec();
            let at = (seed >> 33) as usize % b.len();
            match i % 3 {
                0 => b.truncate(at),
                1 => b[at] = b"0 9:[]=>-.x{}\",\n"[(seed >> 20) as usize % 16],
                _ => {
                    b.insert(at, b'9');
                    b.insert(at, b'9');
                }
            }
            let t = String::from_utf8_lossy(&b);
            if let Ok(r) = schedlab::trace::parse::parse_all("f", &t) {
                let _ = schedlab::workload::replay::Replay::from_records(
                    "f",
                    &r,
                    &[],
                    Default::default(),
                );
            }
            let _ = schedlab::workload::rtapp::RtApp::from_text("f", &t);
        }
    }
    let big =
        "  a-1 [000] 99999999999999999999.5: sched_waking: comm=a pid=1 prio=120 target_cpu=000";
    assert!(schedlab::trace::parse::parse("f", big).is_err());
}

/// Issue 16: a trace that contradicts itself is an error naming its line,
/// or replays consistently (`--check` exit 0); never a corrupted model.
#[test]
fn a_repeated_fork_line_is_an_error_naming_its_line() {
    let fork = "  bash-10 [000] ..... 1.000000: sched_process_fork: comm=bash pid=10 child_comm=bash child_pid=11\n";
    let p = tmp("fork3.txt");
    std::fs::write(&p, fork.repeat(3)).unwrap();
    let (rc, _, err) = schedlab(&["replay", &p, "--machine", "vm-2", "--check", "-q"]);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains("fork3.txt:2: sched_process_fork: child_pid 11 already exists"),
        "{err}"
    );
    let own = "  bash-10 [000] ..... 1.000000: sched_process_fork: comm=bash pid=10 child_comm=bash child_pid=10\n";
    std::fs::write(&p, own).unwrap();
    let (rc, _, err) = schedlab(&["replay", &p, "--machine", "vm-2", "--check", "-q"]);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains("fork3.txt:1: ") && err.contains("child_pid 10"),
        "{err}"
    );
}

/// A pid reused after its task exited is a new task.
#[test]
fn a_pid_reused_after_exit_is_a_new_task() {
    let t = "\
  p-10 [000] ..... 1.000000: sched_process_fork: comm=p pid=10 child_comm=c child_pid=11
  p-10 [000] d..2. 1.000010: sched_wakeup_new: comm=c pid=11 prio=120 target_cpu=001
  c-11 [001] d..2. 1.000020: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=c next_pid=11 next_prio=120
  c-11 [001] ..... 1.000500: sched_process_exit: comm=c pid=11 prio=120
  c-11 [001] d..2. 1.000600: sched_switch: prev_comm=c prev_pid=11 prev_prio=120 prev_state=X ==> next_comm=swapper/1 next_pid=0 next_prio=120
  p-10 [000] ..... 1.001000: sched_process_fork: comm=p pid=10 child_comm=d child_pid=11
  p-10 [000] d..2. 1.001010: sched_wakeup_new: comm=d pid=11 prio=120 target_cpu=001
  d-11 [001] d..2. 1.001020: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=d next_pid=11 next_prio=120
  d-11 [001] d..2. 1.001500: sched_switch: prev_comm=d prev_pid=11 prev_prio=120 prev_state=X ==> next_comm=swapper/1 next_pid=0 next_prio=120
  p-10 [000] d..2. 1.002000: sched_switch: prev_comm=p prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
";
    let p = tmp("reuse.txt");
    std::fs::write(&p, t).unwrap();
    let (_, w) = replay_fidelity(&p, "reuse.json", &["--check"]);
    let rows = w["fidelity"]["tasks"].as_array().unwrap().clone();
    let mut comms: Vec<&str> = rows.iter().map(|r| r["comm"].as_str().unwrap()).collect();
    comms.sort();
    assert_eq!(comms, ["c", "d", "p"], "{rows:?}");
    // Each child runs its own recorded time (0.58 and 0.48 ms; the exit
    // the model charges varies with noise), not the pair's sum.
    for r in rows.iter().filter(|r| r["pid"] == 11) {
        let sim = r["simulated"]["runtime_ns"].as_u64().unwrap();
        let rec = r["recorded"]["runtime_ns"].as_u64().unwrap();
        assert!(sim.abs_diff(rec) < rec / 10, "{r}");
    }
}

/// Mutations of a recorded messaging trace (fork lines moved with their
/// timestamps, duplicated, fields dropped, pids changed): every one ends
/// in a consistent replay (`--check`) or exit 2 naming the file.
#[test]
fn mutated_messaging_traces_replay_consistently_or_exit_2() {
    let text = std::fs::read_to_string(FTRACE).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let forks: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains("sched_process_fork"))
        .collect();
    let ts = common::line_ts;
    let p = tmp("mut.txt");
    let mut seed = 7u64;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize % n
    };
    for round in 0..24 {
        let mut m: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        // A fork line moved later, carrying the timestamp of its new place.
        let f = forks[1 + next(forks.len() - 1)];
        let to = (f + 1 + next(400)).min(m.len() - 1);
        let stamp = ts(&m[to]);
        let moved = m.remove(f).replacen(&ts(lines[f]), &stamp, 1);
        m.insert(to, moved);
        // A repeated fork line, and a prev_prio field dropped.
        if round % 2 == 0 {
            let d = forks[next(forks.len())];
            m.insert(d + 1 + next(50), lines[d].to_string());
        }
        let sw = (0..m.len())
            .filter(|&i| m[i].contains("prev_prio="))
            .nth(next(300))
            .unwrap();
        m[sw] = m[sw].replacen(" prev_prio=120", "", 1);
        std::fs::write(&p, m.join("\n")).unwrap();
        let (rc, _, err) = schedlab(&["replay", &p, "--machine", "vm-2", "--check", "-q"]);
        assert!(rc == 0 || rc == 2, "round {round}: exit {rc}: {err}");
        assert!(!err.contains("invariant"), "round {round}: {err}");
        if rc == 2 {
            assert!(
                err.contains("mut.txt:") || err.contains("deadlock"),
                "round {round}: {err}"
            );
        }
    }
}

/// A task first seen in the middle of a trace starts there: not runnable
/// (waiting) since the trace began, and the replay spans the trace.
#[test]
fn a_task_first_seen_mid_trace_starts_there() {
    let t = "\
  a-10 [000] d..2. 1.000000: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=R ==> next_comm=a next_pid=10 next_prio=120
  a-10 [000] d..2. 1.100000: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=b next_pid=11 next_prio=120
  b-11 [000] d..2. 1.101000: sched_switch: prev_comm=b prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
";
    let p = tmp("late.txt");
    std::fs::write(&p, t).unwrap();
    let (_, w) = replay_fidelity(&p, "late.json", &["--check"]);
    let span = w["simulated_span_ns"].as_f64().unwrap();
    assert!((span / 101e6 - 1.0).abs() < 0.05, "{w}");
    let b = &w["fidelity"]["tasks"][1];
    assert_eq!(b["comm"], "b", "{w}");
    assert_eq!(b["recorded"]["wait_ns"], 0, "{b}");
    assert!(
        b["simulated"]["wait_ns"].as_u64().unwrap() < 1_000_000,
        "{b}"
    );
}

/// Recorded migrations count the CPU changes a trace shows, when it has
/// no sched_migrate_task events (systrace, light traces).
#[test]
fn recorded_migrations_count_visible_cpu_changes() {
    let mut t = String::new();
    for i in 0..6 {
        let (cpu, other) = (i % 2, 1 - i % 2);
        let ts = 1.0 + i as f64 * 0.001;
        t += &format!("  a-10 [{cpu:03}] d..2. {ts:.6}: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=swapper/{cpu} next_pid=0 next_prio=120\n");
        t += &format!("  <idle>-0 [{other:03}] d..2. {:.6}: sched_switch: prev_comm=swapper/{other} prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=10 next_prio=120\n", ts + 0.0005);
    }
    let p = tmp("migr.txt");
    std::fs::write(&p, t).unwrap();
    let (_, w) = replay_fidelity(&p, "migr.json", &[]);
    let f = &w["fidelity"]["total"];
    // First seen on CPU 0, then on 1, 0, 1, 0, 1, 0: six changes.
    assert_eq!(f["recorded"]["migrations"], 6, "{f}");
}

/// A trace whose CPU 1 lost its idle → task switches (this VM drops them)
/// replays: the switch-ins are put back where the task reappears, counted,
/// and the replay does the recorded work.
#[test]
fn lost_switch_ins_are_reconstructed_and_counted() {
    let full = tmp("pp.txt");
    let (rc, _, err) = schedlab(&[
        "run",
        "--machine",
        "vm-2",
        "-w",
        "pipe:loops=300",
        "--trace",
        &full,
        "-q",
    ]);
    assert_eq!(rc, 0, "{err}");
    let text = std::fs::read_to_string(&full).unwrap();
    let lost: String = text
        .lines()
        .filter(|l| {
            !(l.contains("[001]") && l.contains("sched_switch: prev_comm=swapper/1 prev_pid=0 "))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let dropped = text.lines().count() - lost.lines().count();
    assert!(dropped > 100, "{dropped}");
    let p = tmp("pp-lost.txt");
    std::fs::write(&p, lost).unwrap();
    let (out, w) = replay_fidelity(&p, "pp-lost.json", &["--check"]);
    assert!(
        out.contains(&format!("{dropped} switch-ins reconstructed")),
        "{out}"
    );
    assert_eq!(w["reconstructed_switch_ins"], dropped as u64, "{w}");
    let e = &w["fidelity"]["total"]["relative_error"];
    assert!(e["switches"].as_f64().unwrap().abs() < 0.05, "{e}");
}

/// The simulator's own trace replays to its own numbers: recorded bursts
/// lose the kernel work the replay charges again (a cross-CPU wakeup's
/// IPI included), and wait is measured as the trace shows it.
#[test]
fn an_exported_pipe_trace_replays_to_its_own_numbers() {
    let t = tmp("pp2.txt");
    let (rc, _, err) = schedlab(&[
        "run",
        "--machine",
        "vm-2",
        "-w",
        "pipe:loops=300",
        "--trace",
        &t,
        "-q",
    ]);
    assert_eq!(rc, 0, "{err}");
    let (_, w) = replay_fidelity(&t, "pp2.json", &[]);
    let e = &w["fidelity"]["total"]["relative_error"];
    for k in ["runtime", "switches", "wait"] {
        assert!(e[k].as_f64().unwrap().abs() < 0.05, "{k}: {e}");
    }
    let span = w["simulated_span_ns"].as_f64().unwrap() / w["recorded_span_ns"].as_f64().unwrap();
    assert!((span - 1.0).abs() < 0.05, "{w}");
}

/// The input formats, each from a file recorded on this VM (or, for
/// systrace, written in its layout): all replay, and the same recording in
/// two layouts gives the same replay.
#[test]
fn every_input_layout_replays() {
    let replay = |file: &str, name: &str| replay_fidelity(file, name, &["--check"]).1;
    // trace-cmd report, and -R (raw fields, numeric prev_state, no ==>).
    let tc = replay("tests/data/messaging-g1-l10.trace-cmd.txt", "tc.json");
    let raw = replay("tests/data/messaging-g1-l10.trace-cmd-R.txt", "tcr.json");
    assert_eq!(tc, raw);
    assert!(tc["edges"].as_u64().unwrap() > 100, "{tc}");
    // perf script -F tid,cpu,time,event,trace (no comm column).
    let pf = replay("tests/data/messaging-g1-l10.perf-F.txt", "pf.json");
    assert!(pf["tasks"].as_u64().unwrap() > 40, "{pf}");
    // trace_pipe: the trace file's lines without its header.
    let text = std::fs::read_to_string(FTRACE).unwrap();
    let pipe: String = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let p = tmp("trace_pipe.txt");
    std::fs::write(&p, pipe).unwrap();
    let mut a = replay(FTRACE, "ft.json");
    let mut b = replay(&p, "tp.json");
    a.as_object_mut().unwrap().remove("file");
    b.as_object_mut().unwrap().remove("file");
    assert_eq!(a, b);
    // systrace/atrace text: the TRACE: wrapper, a tgid column and
    // tracing_mark_write lines (skipped).
    let sys = replay("tests/data/systrace-pipe.txt", "sys.json");
    assert_eq!(sys["tasks"], 2, "{sys}");
    assert!(sys["edges"].as_u64().unwrap() > 20, "{sys}");
}

/// `--handover` infers the dependency of a waker preempted by its wakee on
/// that wakee (invisible to sched_waking): on the recorded messaging trace
/// it restores the recorded number of switches (without it, -96 %).
#[test]
fn handover_edges_restore_the_recorded_switches() {
    let flags = ["--select", "sched-messaging", "--handover"];
    let (out, w) = replay_fidelity(PERF, "ho.json", &flags);
    assert!(out.contains("handovers)"), "{out}");
    assert!(w["handover_edges"].as_u64().unwrap() > 1000, "{w}");
    let e = w["fidelity"]["total"]["relative_error"]["switches"]
        .as_f64()
        .unwrap();
    assert!(e.abs() < 0.20, "switches {e}");
}

/// The relative error of the simulated `key` against the recorded one in a
/// replay's fidelity total.
fn total_err(w: &serde_json::Value, key: &str) -> f64 {
    w["fidelity"]["total"]["relative_error"][key]
        .as_f64()
        .unwrap()
}

/// Per task: (comm, recorded, simulated) runtime in ns.
fn task_runtimes(w: &serde_json::Value) -> Vec<(String, f64, f64)> {
    let f = |t: &serde_json::Value, side: &str| t[side]["runtime_ns"].as_f64().unwrap();
    w["fidelity"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let comm = t["comm"].as_str().unwrap().to_string();
            (comm, f(t, "recorded"), f(t, "simulated"))
        })
        .collect()
}

fn span_err(w: &serde_json::Value) -> f64 {
    let s = |k: &str| w[k].as_f64().unwrap();
    s("simulated_span_ns") / s("recorded_span_ns") - 1.0
}

/// Migrations within 2× of the recorded count (a recorded 0 allows 1).
fn migrations_within_2x(w: &serde_json::Value) -> bool {
    let t = &w["fidelity"]["total"];
    let (r, s) = (
        t["recorded"]["migrations"].as_u64().unwrap(),
        t["simulated"]["migrations"].as_u64().unwrap(),
    );
    s <= 2 * r.max(1) && 2 * s >= r
}

/// Issue 15's targets on traces recorded on this VM, replayed with
/// `--pin --handover` (docs/replay.md has the table): what holds is
/// asserted, what does not (wait of the selected messaging trace, -49 %,
/// and of the whole trace with `--any-waker`, -34 %) is not.
#[test]
fn recorded_traces_replay_within_the_targets() {
    // perf bench sched pipe -l 500, every task of the trace.
    let pipe = "tests/data/pipe-l500.perf.txt";
    let (_, w) = replay_fidelity(pipe, "pl500.json", &["--pin", "--handover", "--check"]);
    assert!(total_err(&w, "runtime").abs() <= 0.05, "{w}");
    assert!(total_err(&w, "switches").abs() <= 0.20, "{w}");
    assert!(total_err(&w, "wait").abs() <= 0.30, "{w}");
    assert!(migrations_within_2x(&w), "{w}");
    assert!(span_err(&w).abs() <= 0.05, "{w}");
    for (comm, rec, sim) in task_runtimes(&w) {
        if comm == "sched-pipe" {
            assert!((sim / rec - 1.0).abs() <= 0.05, "{comm}: {rec} {sim}");
        }
    }
    // perf bench sched messaging -g 1 -l 100 (sockets), its 41 tasks.
    let flags = ["--select", "sched-messaging", "--pin", "--handover"];
    let (_, w) = replay_fidelity(PERF, "m100.json", &flags);
    for (comm, rec, sim) in task_runtimes(&w) {
        assert!((sim / rec - 1.0).abs() <= 0.05, "{comm}: {rec} {sim}");
    }
    assert!(total_err(&w, "switches").abs() <= 0.20, "{w}");
    assert!(migrations_within_2x(&w), "{w}");
    assert!(span_err(&w).abs() <= 0.05, "{w}");
    // The same trace, every task, with --any-waker too: four of the five
    // totals. Its wait was −29 % while the replay charged the traced
    // machine's ticks a second time inside the recorded bursts; with them
    // taken out (CPU +0.8 → +0.1 %) it is −34 %, and not asserted.
    let flags = ["--pin", "--handover", "--any-waker"];
    let (_, w) = replay_fidelity(PERF, "m100any.json", &flags);
    assert!(total_err(&w, "runtime").abs() <= 0.05, "{w}");
    assert!(total_err(&w, "switches").abs() <= 0.20, "{w}");
    assert!(migrations_within_2x(&w), "{w}");
    assert!(span_err(&w).abs() <= 0.05, "{w}");
}

/// `--any-waker` lets either writer end the reader's next wait: r's first
/// block was recorded as ended by w1 (10 ms of work) and its second by w2
/// (9 ms, queued behind w1 on the recorded CPU); on four CPUs both writers
/// run at once and w2's wakeup comes first, so with the flag it is w2's
/// that wakes r, and the replay ends earlier.
#[test]
fn any_waker_lets_the_first_writer_wake_the_reader() {
    let t = "\
  <idle>-0 [000] d..2. 0.999999: sched_waking: comm=w2 pid=11 prio=120 target_cpu=000
  r-30 [000] d..2. 1.000000: sched_switch: prev_comm=r prev_pid=30 prev_prio=120 prev_state=S ==> next_comm=w1 next_pid=10 next_prio=120
  w1-10 [000] d..2. 1.010000: sched_waking: comm=r pid=30 prio=120 target_cpu=000
  w1-10 [000] d..2. 1.010001: sched_switch: prev_comm=w1 prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=r next_pid=30 next_prio=120
  r-30 [000] d..2. 1.011000: sched_switch: prev_comm=r prev_pid=30 prev_prio=120 prev_state=S ==> next_comm=w2 next_pid=11 next_prio=120
  w2-11 [000] d..2. 1.020000: sched_waking: comm=r pid=30 prio=120 target_cpu=000
  w2-11 [000] d..2. 1.020001: sched_switch: prev_comm=w2 prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=r next_pid=30 next_prio=120
  r-30 [000] d..2. 1.021000: sched_switch: prev_comm=r prev_pid=30 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
";
    let p = tmp("anywaker.txt");
    std::fs::write(&p, t).unwrap();
    let first_waker_of_r = |flags: &[&str]| {
        let out = tmp("anywaker.out.txt");
        let mut args = vec!["replay", &p, "--machine", "smp:cpus=4", "--check", "-q"];
        args.extend_from_slice(&["--trace", &out]);
        args.extend_from_slice(flags);
        let (rc, _, err) = schedlab(&args);
        assert_eq!(rc, 0, "{err}");
        let text = std::fs::read_to_string(&out).unwrap();
        let line = text.lines().find(|l| l.contains("sched_waking: comm=r "));
        line.unwrap().split_whitespace().next().unwrap().to_string()
    };
    assert_eq!(first_waker_of_r(&[]), "w1-10");
    assert_eq!(first_waker_of_r(&["--any-waker"]), "w2-11");
}

/// Per pid, the CPUs a trace shows it running on (switched in, or the
/// context of an event).
fn cpus_by_pid(path: &str) -> std::collections::BTreeMap<u32, std::collections::BTreeSet<usize>> {
    use schedlab::trace::parse::{parse, Event};
    let text = std::fs::read_to_string(path).unwrap();
    let mut m = std::collections::BTreeMap::<u32, std::collections::BTreeSet<usize>>::new();
    for r in parse(path, &text).unwrap() {
        m.entry(r.ctx_pid).or_default().insert(r.cpu);
        if let Event::Switch { next, .. } = &r.ev {
            m.entry(next.pid).or_default().insert(r.cpu);
        }
    }
    m.remove(&0);
    m
}

/// `--pin`: every replayed task runs only where the trace shows it; without
/// it some do not (the simulation spreads the messaging workers).
#[test]
fn pinned_replay_runs_each_task_where_it_ran() {
    let recorded = cpus_by_pid(PERF);
    let strays = |flags: &[&str], name: &str| {
        let t = tmp(name);
        let mut args = vec!["replay", PERF, "--machine", "vm-2", "-q", "--trace", &t];
        args.extend_from_slice(flags);
        let (rc, _, err) = schedlab(&args);
        assert_eq!(rc, 0, "{err}");
        cpus_by_pid(&t)
            .iter()
            .filter(|(pid, cpus)| recorded.get(pid).is_some_and(|r| !cpus.is_subset(r)))
            .count()
    };
    assert_eq!(strays(&["--pin"], "pin.txt"), 0);
    assert!(strays(&[], "nopin.txt") > 0);
}

/// A trace whose tasks ran longer than its CPUs had time is replayed with
/// a warning saying so; a complete one is not. tracefs on this VM lost
/// CPU 1's switch-outs in messaging-g1-l20.ftrace.txt (157.1 ms of CPU
/// on 2 CPUs in 65.0 ms): the run it never switched out now ends at the
/// CPU's next record in another context, and no warning is left. Here a
/// switch-out and the next task's switch-in are both lost: one of them
/// overlaps the other.
#[test]
fn a_trace_with_more_cpu_time_than_cpus_warns_of_lost_records() {
    let mended = "tests/data/messaging-g1-l20.ftrace.txt";
    let (rc, out, err) = schedlab(&["replay", mended, "--machine", "vm-2"]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("1 lost switch-outs"), "{out}");
    assert!(!err.contains("lost records"), "{err}");
    let lost = tmp("overlap.txt");
    std::fs::write(
        &lost,
        "\
  a-10 [000] d..2 1.000000: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=x next_pid=20 next_prio=120
  b-11 [000] d..2 1.050000: sched_switch: prev_comm=b prev_pid=11 prev_prio=120 prev_state=R ==> next_comm=a next_pid=10 next_prio=120
  a-10 [000] d..2 1.100000: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
",
    )
    .unwrap();
    let (rc, _, err) = schedlab(&["replay", &lost, "--machine", "vm-2", "-q"]);
    assert_eq!(rc, 0, "{err}");
    assert!(err.contains("150.0 ms on 1 CPUs in 100.0 ms"), "{err}");
    assert!(err.contains("lost records"), "{err}");
    let (rc, _, err) = schedlab(&["replay", PERF, "--machine", "vm-2", "-q"]);
    assert_eq!(rc, 0, "{err}");
    assert!(!err.contains("lost records"), "{err}");
}

/// A task still alive when the trace ends leaves the replay at no cost: it
/// keeps its recorded CPU time (it paid an exit it never made). One that
/// exits in the trace pays the model's exit out of the burst that held it.
#[test]
fn a_task_alive_at_the_end_of_the_trace_pays_no_exit() {
    let t = "\
  <idle>-0 [000] d..2. 1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=alive next_pid=10 next_prio=120
  <idle>-0 [001] d..2. 1.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=dies next_pid=11 next_prio=120
  dies-11 [001] .... 1.000150: sched_process_exit: comm=dies pid=11 prio=120
  dies-11 [001] d..2. 1.000200: sched_switch: prev_comm=dies prev_pid=11 prev_prio=120 prev_state=Z ==> next_comm=swapper/1 next_pid=0 next_prio=120
  alive-10 [000] d..2. 1.000300: sched_switch: prev_comm=alive prev_pid=10 prev_prio=120 prev_state=R ==> next_comm=swapper/0 next_pid=0 next_prio=120
";
    let p = tmp("alive.txt");
    std::fs::write(&p, t).unwrap();
    let (_, w) = replay_fidelity(&p, "alive.json", &["--set", "noise.enabled=false"]);
    let tasks = w["fidelity"]["tasks"].as_array().unwrap();
    for (comm, recorded) in [("alive", 300_000), ("dies", 200_000)] {
        let t = tasks.iter().find(|t| t["comm"] == comm).unwrap();
        assert_eq!(t["recorded"]["runtime_ns"], recorded);
        // An exit costs 55 µs on vm-2: paying it once too often (or too
        // rarely) is far outside 2 µs.
        let sim = t["simulated"]["runtime_ns"].as_u64().unwrap();
        assert!(sim.abs_diff(recorded) < 2_000, "{comm}: {sim} ns simulated");
    }
}

/// A recorded wakeup onto another CPU holds an IPI in the waker's burst
/// only if it sent one: here the wakee's CPU is busy, and its task blocks
/// (until the wakee wakes it) before the wakee runs: no preemption, no
/// wakelist, so the waker's 50 wakeups cost it the remote enqueue only.
/// Taking vm-2's 12.9 µs IPI out of each of its 100 µs bursts lost 13 % of
/// its CPU time.
#[test]
fn a_remote_wakeup_that_sent_no_ipi_keeps_the_wakers_time() {
    let mut t = String::new();
    let line = |t: &mut String, ctx: &str, cpu: u32, us: u64, ev: &str| {
        let ts = 1_000_000 + us;
        let (s, frac) = (ts / 1_000_000, ts % 1_000_000);
        *t += &format!("  {ctx} [00{cpu}] d..2. {s}.{frac:06}: {ev}\n");
    };
    let switch = |p: (&str, u32, &str), n: (&str, u32)| {
        format!(
            "sched_switch: prev_comm={} prev_pid={} prev_prio=120 prev_state={} ==> next_comm={} next_pid={} next_prio=120",
            p.0, p.1, p.2, n.0, n.1
        )
    };
    line(
        &mut t,
        "<idle>-0",
        0,
        0,
        &switch(("swapper/0", 0, "R"), ("w", 10)),
    );
    line(
        &mut t,
        "<idle>-0",
        1,
        0,
        &switch(("swapper/1", 0, "R"), ("b", 20)),
    );
    for k in 0..50 {
        let at = 100 * k + 100;
        let waking = "sched_waking: comm=r pid=30 prio=120 target_cpu=001";
        line(&mut t, "w-10", 0, at, waking);
        line(
            &mut t,
            "b-20",
            1,
            at + 30,
            &switch(("b", 20, "S"), ("r", 30)),
        );
        let wakes_b = "sched_waking: comm=b pid=20 prio=120 target_cpu=001";
        line(&mut t, "r-30", 1, at + 35, wakes_b);
        line(
            &mut t,
            "r-30",
            1,
            at + 40,
            &switch(("r", 30, "S"), ("b", 20)),
        );
    }
    line(
        &mut t,
        "w-10",
        0,
        5200,
        &switch(("w", 10, "R"), ("swapper/0", 0)),
    );
    let p = tmp("remote-no-ipi.txt");
    std::fs::write(&p, t).unwrap();
    let flags = [
        "--pin",
        "--set",
        "noise.enabled=false",
        "--set",
        "kernel.features.WAKEUP_PREEMPTION=false",
    ];
    let (_, w) = replay_fidelity(&p, "remote-no-ipi.json", &flags);
    let tasks = w["fidelity"]["tasks"].as_array().unwrap();
    let waker = tasks.iter().find(|t| t["comm"] == "w").unwrap();
    let rec = waker["recorded"]["runtime_ns"].as_u64().unwrap();
    let sim = waker["simulated"]["runtime_ns"].as_u64().unwrap();
    assert_eq!(rec, 5_200_000);
    assert!(sim.abs_diff(rec) < rec / 50, "waker: {sim} ns simulated");
}

/// Issue 36 (the closed loop): schedlab's own trace with the syscall
/// events of its pipe and socket reads and writes (`--trace-syscalls`)
/// replays causally (a read waits for the bytes it read to be written, a
/// write for the room its bytes took), with default flags, to its
/// recorded switches within 10 % and run-queue wait within 20 %; CPU
/// time within 2 % where the replay places the tasks as recorded (pipe,
/// hackbench over pipes on 4 CPUs), within 5 % for hackbench over
/// sockets on vm-2 (−2.3 … +1.0 % over seeds 1..=8: the replay's wakeups
/// find idle CPUs where the recording's did not, whose IPIs cost 13 µs
/// each there; docs/replay.md). Without the `# fd`
/// lines the socket trace replays as before, by the recorded wakeups
/// alone, and loses most of its switches.
///
/// The hackbench cases run without noise, recording and replay alike: the
/// replay's tasks draw other cost factors than the recorded ones, and a
/// hackbench schedule is chaotic, so with noise on the replay drifts by
/// seed (over seeds 1..30 the socket case's switches were within 10 % for
/// 7 seeds with the one shared noise stream of 2026-11-27 and 3 with the
/// per-task streams since; the worst were +694 % and +781 %). The pipe
/// ping-pong does not diverge (within 1 % at every seed) and keeps its
/// noise. Forty tasks on two CPUs over sockets settle into long runs or
/// short ones, and a replay does not always settle where its recording
/// did (docs/replay.md, "The closed loop"): over seeds 1..=4 that case's
/// work (within 5 %) and wait (20 %) hold per seed, its switches within
/// 2× (the schedule kept: before the switch-in's and the interrupts'
/// costs were given back, seed 2 replayed its 260 switches as 2,647).
#[test]
fn a_simulated_trace_with_syscalls_replays_causally() {
    let exact: &[&str] = &["--set", "noise.enabled=false"];
    let cases = [
        // CPU −0.9 … +0.6 % over seeds 1..=8 (+2.4 % at the median
        // before the replay gave back the wakelist's cost as the model
        // charges it, carried what a noisy burst could not give into the
        // next ones, and gave back the ticks landing in the model's own
        // kernel work; docs/replay.md, "The pipe closed loop's CPU time").
        ("vm-2", "pipe:loops=500", 0.02, "cl-pipe", &[][..], "1"),
        (
            "smp:cpus=4",
            "hackbench:groups=1,loops=30,ipc=pipe",
            0.02,
            "cl-hbp",
            exact,
            "1",
        ),
        (
            "vm-2",
            "hackbench:groups=1,loops=20",
            0.05,
            "cl-hbs",
            exact,
            "1",
        ),
        (
            "vm-2",
            "hackbench:groups=1,loops=20",
            0.05,
            "cl-hbs2",
            exact,
            "2",
        ),
        (
            "vm-2",
            "hackbench:groups=1,loops=20",
            0.05,
            "cl-hbs3",
            exact,
            "3",
        ),
        (
            "vm-2",
            "hackbench:groups=1,loops=20",
            0.05,
            "cl-hbs4",
            exact,
            "4",
        ),
    ];
    for (machine, w, cpu, name, noise, seed) in cases {
        let noise = &[noise, &["--seed", seed]].concat()[..];
        let t = tmp(&format!("{name}.txt"));
        let run = [
            "run",
            "--machine",
            machine,
            "-w",
            w,
            "--trace",
            &t,
            "--trace-syscalls",
            "-q",
        ];
        let (rc, _, err) = schedlab(&[&run[..], noise].concat());
        assert_eq!(rc, 0, "{err}");
        let text = std::fs::read_to_string(&t).unwrap();
        assert!(
            text.contains(": sys_write(fd: ") && text.contains("# fd pid="),
            "{w}"
        );
        let replay = |file: &str, json_name: &str| {
            let j = tmp(json_name);
            let args = [
                "replay",
                file,
                "--machine",
                machine,
                "--fidelity",
                "--json",
                &j,
            ];
            let (rc, out, err) = schedlab(&[&args[..], noise].concat());
            assert_eq!(rc, 0, "{file}: {err}");
            (
                out,
                json(&j)["benchmark"]["replay"]["fidelity"]["total"]["relative_error"].clone(),
            )
        };
        let (out, e) = replay(&t, &format!("{name}.json"));
        assert!(out.contains("# causal:"), "{out}");
        for (k, bound) in [("wait", 0.20), ("runtime", cpu)] {
            let v = e[k].as_f64().unwrap();
            assert!(v.abs() < bound, "{w} on {machine}: {k} {v:+.3}: {e}");
        }
        let sw = e["switches"].as_f64().unwrap();
        let kept = match name.starts_with("cl-hbs") {
            true => (0.5..2.0).contains(&(1.0 + sw)),
            false => sw.abs() < 0.10,
        };
        assert!(
            kept,
            "{w} on {machine}, seed {seed}: switches {sw:+.3}: {e}"
        );
        if name == "cl-hbs" {
            let plain: String = text
                .lines()
                .filter(|l| !l.starts_with("# fd "))
                .map(|l| format!("{l}\n"))
                .collect();
            let p = tmp(&format!("{name}-plain.txt"));
            std::fs::write(&p, plain).unwrap();
            let (out, e) = replay(&p, &format!("{name}-plain.json"));
            assert!(!out.contains("# causal:"), "{out}");
            let v = e["switches"].as_f64().unwrap();
            assert!(v < -0.5, "by the wakeups alone: switches {v:+.3}");
        }
    }
}

/// `--trace-syscalls` is ftrace text only: another format is refused
/// (exit 2) naming the flag.
#[test]
fn trace_syscalls_needs_ftrace_text() {
    let t = tmp("sc.json");
    let (rc, _, err) = schedlab(&[
        "run",
        "-w",
        "pipe:loops=10",
        "--trace",
        &t,
        "--trace-syscalls",
        "-q",
    ]);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("--trace-syscalls"), "{err}");
}

/// A task the trace switches in and never out (this VM's kernel traces
/// nothing in the context of PID 1's threads) stops running at the next
/// record of its CPU in another context: without that, x below ran for
/// the whole trace, and one CPU held 400 ms of CPU time in 200 ms.
#[test]
fn a_run_the_trace_never_switched_out_ends_at_the_next_context() {
    let sw = |ts: &str, prev: (&str, u32), next: (&str, u32)| {
        format!(
            "{:>16}-{:<5} [000] d..2 {ts}: sched_switch: prev_comm={} prev_pid={} prev_prio=120 prev_state=S ==> next_comm={} next_pid={} next_prio=120\n",
            prev.0, prev.1, prev.0, prev.1, next.0, next.1
        )
    };
    let text = [
        "# tracer: nop\n".to_string(),
        sw("1.000000", ("a", 10), ("x", 20)),
        sw("1.001000", ("b", 11), ("a", 10)),
        "               a-10    [000] d..2 1.002000: sched_waking: comm=b pid=11 prio=120 target_cpu=000\n".into(),
        sw("1.100000", ("a", 10), ("b", 11)),
        sw("1.200000", ("b", 11), ("swapper/0", 0)),
    ]
    .concat();
    let p = tmp("lost-switch-out.txt");
    std::fs::write(&p, text).unwrap();
    let (out, r) = replay_fidelity(&p, "lost-switch-out.json", &[]);
    assert!(out.contains("1 lost switch-outs"), "{out}");
    assert_eq!(r["lost_switch_outs"], 1);
    let tasks = r["fidelity"]["tasks"].as_array().unwrap();
    let x = tasks.iter().find(|t| t["comm"] == "x").unwrap();
    assert_eq!(x["recorded"]["runtime_ns"], 1_000_000, "{x}");
    let cpu: u64 = (tasks.iter())
        .map(|t| t["recorded"]["runtime_ns"].as_u64().unwrap())
        .sum();
    assert!(cpu <= 201_000_000, "{cpu} ns of CPU on one CPU in 200 ms");
}

/// Found by the fuzzer: a task the trace shows woken while it ran, then
/// ending without a switch-out, then seen on another CPU. Its lost
/// switch-out blocks it; the wakeup before does not make it runnable
/// before that block (a replay that subtracted the two panicked).
#[test]
fn a_lost_switch_out_after_a_stray_wakeup_replays() {
    let p = tmp("stray-wakeup.txt");
    std::fs::write(&p, "\
t1-1 [000] d..2. 1.020559: sched_wakeup_new: comm=t0 pid=0 prio=120 target_cpu=000
t5-5 [002] d..2. 1.022608: sched_switch: prev_comm=t5 prev_pid=5 prev_prio=120 prev_state=D ==> next_comm=t2 next_pid=2 next_prio=120
t2-2 [004] d..2. 1.032108: sched_wakeup_new: comm=t2 pid=2 prio=120 target_cpu=004
t4-4 [002] d..2. 1.035844: sched_switch: prev_comm=t4 prev_pid=4 prev_prio=120 prev_state=D ==> next_comm=t6 next_pid=6 next_prio=120
t2-2 [000] d..2. 1.035957: sched_switch: prev_comm=t2 prev_pid=2 prev_prio=120 prev_state=X ==> next_comm=t6 next_pid=6 next_prio=120
").unwrap();
    let (rc, out, err) = schedlab(&["replay", &p, "--machine", "vm-2"]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("1 lost switch-outs"), "{out}");
}

/// The `sched_switch` lines of an ftrace text file: (ns, CPU, prev_pid,
/// prev_state, next_pid).
fn switches(text: &str) -> Vec<(u64, String, String, String, String)> {
    use common::{line_field, line_ts};
    text.lines()
        .filter(|l| l.contains(" sched_switch: "))
        .map(|l| {
            let ns = line_ts(l).replace('.', "").parse().unwrap();
            let cpu = l[l.find('[').unwrap() + 1..l.find(']').unwrap()].to_string();
            let f = |k| line_field(l, k).to_string();
            (ns, cpu, f("prev_pid="), f("prev_state="), f("next_pid="))
        })
        .collect()
}

/// The vm-2 preset, for its costs.
fn vm2() -> schedlab::machine::Machine {
    schedlab::machine::from_spec("vm-2").unwrap()
}

/// A simulated run traced to ftrace text, noise off, on vm-2.
fn traced_vm2(workload: &str, duration: &str, name: &str) -> String {
    let t = tmp(name);
    let (rc, _, err) = schedlab(&[
        "run",
        "--machine",
        "vm-2",
        "-w",
        workload,
        "--duration",
        duration,
        "--set",
        "noise.enabled=false",
        "--trace",
        &t,
        "-q",
    ]);
    assert_eq!(rc, 0, "{err}");
    std::fs::read_to_string(&t).unwrap()
}

/// __schedule traces sched_switch before context_switch(), and a CPU
/// leaving idle runs its pending interrupts (the timer's, the idle exit)
/// before it calls __schedule: a periodic task's time on the trace, from
/// its switch in from idle to its switch out, is its 1 ms of work and that
/// switch's cost, and no more.
#[test]
fn sched_switch_is_stamped_after_the_idle_exit_and_before_the_switch() {
    let text = traced_vm2("periodic:tasks=1,run=1ms,sleep=3ms", "30ms", "stamp.txt");
    let cs = vm2().cost.context_switch_ns;
    let sw = switches(&text);
    let mut n = 0;
    for w in sw.windows(2) {
        let ((t_in, _, from, _, to), (t_out, _, prev, _, _)) = (&w[0], &w[1]);
        if from == "0" && to == "1000" && prev == "1000" {
            let on = t_out - t_in - 1_000_000;
            assert!(on >= cs && on < cs + 2_000, "{on} ns beside the run");
            n += 1;
        }
    }
    assert!(n >= 5, "{n} runs from idle");
}

/// do_exit wakes the parent (exit_notify) before do_task_dead's __schedule:
/// a hackbench child that wakes its parent on the other CPU pays for that
/// wakeup's IPI between its sched_process_exit and its last switch.
#[test]
fn an_exiting_task_pays_for_waking_its_parent_before_it_leaves() {
    use common::{line_field, line_ts};
    // 50 loops: 4 of its 41 exits wake the parent on the other CPU with an
    // IPI (20 loops had 5 until a dead task's dequeue stopped being
    // delayed; now none).
    let text = traced_vm2("hackbench:groups=1,loops=50", "1s", "exit.txt");
    let ipi = vm2().cost.ipi_send_ns;
    let ns = |l: &str| -> u64 { line_ts(l).replace('.', "").parse().unwrap() };
    let lines: Vec<&str> = text.lines().collect();
    let mut paid = 0;
    for (i, l) in lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains(" sched_process_exit: "))
    {
        let pid = line_field(l, "pid=");
        let cpu = &l[l.find('[').unwrap()..=l.find(']').unwrap()];
        let rest = &lines[i + 1..];
        let woke_away = rest
            .iter()
            .take_while(|m| !m.contains(" sched_switch: "))
            .any(|m| {
                m.contains(" sched_wakeup: ") && !m.contains(&format!("target_cpu={}", &cpu[1..4]))
            });
        let out = rest
            .iter()
            .find(|m| m.contains(" sched_switch: ") && line_field(m, "prev_pid=") == pid)
            .unwrap();
        if woke_away && ns(out) - ns(l) >= ipi {
            paid += 1;
        }
    }
    assert!(paid >= 1, "no exit paid for an IPI to its parent");
}
