//! The fuzzer in CI (issue 16 part 2): a bounded, seeded run over every
//! input format ends each input in success or an input error within its
//! budget; the budget's event, CPU-time and memory caps each stop an
//! input that exceeds them; `schedlab fuzz` prints its counts.

mod common;
use common::schedlab;
use schedlab::fuzz::corpus::Corpus;
use schedlab::fuzz::exec::{execute, Limits, Outcome, Scratch};
use schedlab::fuzz::{fuzz, Config, Format};
use std::path::Path;
use std::time::Duration;

/// The simulated-time and event caps decide (they count work, the same on
/// any machine); the CPU-time caps are ten times `schedlab fuzz`'s, only a
/// watchdog against a hang: a debug build on a busy 2-core machine once
/// ran a 4096-CPU input past the command's own (issue 36, part 6).
const LIMITS: Limits = Limits {
    sim_ns: 5_000_000,
    events_per_entity: 25_000,
    time: Duration::from_secs(20),
    time_per_entity: Duration::from_millis(10),
    time_per_event: Duration::from_micros(100),
    time_per_swept: Duration::from_micros(10),
    memory_kib: 1 << 20,
};

/// The fuzzer forks: no other test of this file may hold a lock (output
/// capture, allocator, panic hook) at that moment, so they run one by one.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn corpus() -> Corpus {
    Corpus::load(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// Fuzz `formats` for `iterations` inputs; panics listing every failure.
fn fuzz_clean(formats: Vec<Format>, iterations: u64) {
    let _serial = serial();
    let cfg = Config {
        formats,
        iterations,
        seed: 16,
        out: None,
        limits: LIMITS,
        minimize_runs: 100,
    };
    let r = fuzz(&corpus(), &cfg, &|_, _| {});
    println!("{}", r.table());
    for (f, c) in &r.counts {
        // The generators reach both sides of every format's checks.
        assert!(c[0] * 20 > c[1] && c[1] * 20 > c[0], "{f:?}: {c:?}");
    }
    let failures: Vec<String> = (r.failures.iter())
        .map(|f| {
            let input = String::from_utf8_lossy(&f.input);
            format!("{:?} {}:\n{input}", f.format, f.outcome.describe())
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn scenarios_and_flag_strings_end_in_success_or_an_input_error() {
    fuzz_clean(vec![Format::Scenario, Format::Spec], 1000);
}

#[test]
fn rtapp_files_and_traces_end_in_success_or_an_input_error() {
    fuzz_clean(vec![Format::Rtapp, Format::Trace], 1000);
}

#[test]
fn known_cases_end_cleanly() {
    let _serial = serial();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/known");
    let scratch = Scratch::new().unwrap();
    let mut bad = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let f = match name.split('-').next() {
            Some("rtapp") => Format::Rtapp,
            Some("trace") => Format::Trace,
            Some("spec") => Format::Spec,
            _ => continue,
        };
        let o = execute(f, &std::fs::read(&p).unwrap(), &LIMITS, &scratch);
        if o.is_failure() {
            bad.push(format!("{name}: {}", o.describe()));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn budgets_stop_what_exceeds_them() {
    let _serial = serial();
    let scratch = Scratch::new().unwrap();
    // 100 ms of ping-pong: past the first budget check (8192 events).
    let spec = b"--machine vm-2\n-w pipe:loops=100000\n--duration 100ms\n";
    let long = Limits {
        sim_ns: 100_000_000,
        ..LIMITS
    };
    let ok = execute(Format::Spec, spec, &long, &scratch);
    assert_eq!(ok, Outcome::Ok);
    let few_events = Limits {
        events_per_entity: 100,
        ..long
    };
    let o = execute(Format::Spec, spec, &few_events, &scratch);
    assert!(
        matches!(&o, Outcome::Timeout(m) if m.contains("events")),
        "{o:?}"
    );
    let no_time = Limits {
        time: Duration::ZERO,
        time_per_entity: Duration::ZERO,
        time_per_event: Duration::ZERO,
        time_per_swept: Duration::ZERO,
        ..long
    };
    let o = execute(Format::Spec, spec, &no_time, &scratch);
    assert!(
        matches!(&o, Outcome::Timeout(m) if m.contains("time budget")),
        "{o:?}"
    );
    let no_memory = Limits {
        memory_kib: 1,
        ..long
    };
    // 20,000 tasks need megabytes the parent's heap does not have free.
    let many = b"--machine vm-2\n-w periodic:tasks=20000\n--duration 1ms\n";
    let o = execute(Format::Spec, many, &no_memory, &scratch);
    assert!(matches!(o, Outcome::Memory(k) if k > 1024), "{o:?}");
    let bad = execute(
        Format::Spec,
        b"--machine vm-3\n-w pipe\n",
        &LIMITS,
        &scratch,
    );
    assert_eq!(bad, Outcome::InputError);
}

/// The child beats at every budget check, so the parent's watchdog (silence
/// for 2 × time + 1 s) does not cut a run whose budget grows with its size.
#[test]
fn a_beating_run_outlasts_the_watchdog() {
    let _serial = serial();
    let scratch = Scratch::new().unwrap();
    let spec = b"--machine xeon-8269cy\n-w hackbench:groups=4,loops=5000\n";
    let lim = Limits {
        sim_ns: 1_000_000_000,
        events_per_entity: u64::MAX,
        time: Duration::ZERO,
        time_per_entity: Duration::from_secs(30),
        ..LIMITS
    };
    let t = std::time::Instant::now();
    let o = execute(Format::Spec, spec, &lim, &scratch);
    assert_eq!(o, Outcome::Ok);
    assert!(
        t.elapsed() > Duration::from_millis(1500),
        "{:?}: too short to show it",
        t.elapsed()
    );
}

#[test]
fn the_command_prints_counts_per_outcome() {
    let out = common::tmp("fuzz-out");
    let (rc, text, err) = schedlab(&[
        "fuzz",
        "--format",
        "spec",
        "--iterations",
        "40",
        "--seed",
        "3",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(rc, 0, "{text}{err}");
    let header = text.lines().find(|l| l.starts_with("format")).unwrap();
    for k in [
        "ok",
        "input error",
        "panic",
        "timeout",
        "memory",
        "invariant",
    ] {
        assert!(header.contains(k), "{header}");
    }
    let row: Vec<&str> = (text.lines())
        .find(|l| l.starts_with("spec "))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(row[1], "40", "{text}");
    let (rc, _, err) = schedlab(&["fuzz", "--root", "/nonexistent"]);
    assert_eq!(rc, 2, "{err}");
}
