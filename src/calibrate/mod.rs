//! `schedlab calibrate`: measure this host's kernel primitives with small
//! microbenchmarks of its own and write a machine file (topology + cost
//! model) that `--machine FILE.toml` accepts, and keep it in the cache
//! where `--machine host` finds it ([`store`], `machine::host::load`).
//!
//! Primitives (each: median, p10–p90, samples; pooled over `--runs`):
//! null syscall; same-CPU context switch (futex ping-pong of two
//! SCHED_BATCH threads, and of two processes); the wakeup of a task
//! blocked on another CPU, per CPU distance this machine has, with that CPU
//! idle (50 µs and 1 ms) or running a SCHED_IDLE or a normal spinner
//! (waker's timestamp → wakee's, through shared memory); pipe and AF_UNIX
//! streaming (write+read by one thread, nobody sleeps) at several sizes;
//! the CPU time a reader woken for each 100-byte message is charged for
//! its read, same CPU and cross-CPU; one-way cache-line transfer by
//! distance; cross-CPU streams of 100-byte messages, nobody sleeping
//! (`docs/host-tools/xcpu.c`, the tool the 16-CPU host was measured with): one writer per distance, and 2, 4, 8 and
//! all other CPUs writing into one reader, ns per successful read and write;
//! the 100-byte same-CPU stream on every CPU at once (reported only);
//! a 1 ms timer sleep on an idle CPU, the sleeper's CPU time (reported only); fork + exit + waitpid; the timer tick as a busy loop sees it;
//! a token passed around rings of 2–8 threads or processes on one CPU
//! (the wait cycles; cache footprint and TLB ASIDs, kernel/footprint.rs).
//! [`derive`] turns them into cost-model fields.

pub mod bench;
pub mod derive;
pub mod results;
pub mod sys;

use crate::machine::{self, host, Machine};
use bench::{Ipc, Target};
use clap::Args;
use results::{summarize, Results};
use std::path::{Path, PathBuf};
use sys::Policy;

/// Streaming sizes in bytes; the pipe and socket per-byte costs come from
/// the two largest, the per-operation costs from the smallest.
pub const STREAM_SIZES: [usize; 4] = [1, 100, 4096, 32768];

#[derive(Args)]
pub struct CalibrateArgs {
    /// Write the machine file (TOML) here, atomically
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Fewer samples, one run (under ~10 s)
    #[arg(long)]
    quick: bool,
    /// Repeat the whole set this many times and pool the samples [default: 3; 1 with --quick]
    #[arg(long, value_name = "N")]
    runs: Option<usize>,
}

/// How much to measure: sample counts are multiplied by `scale`.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub scale: f64,
    pub runs: usize,
}

impl Plan {
    fn n(&self, full: usize) -> usize {
        ((full as f64 * self.scale).round() as usize).max(5)
    }
}

/// The CPUs used: one for same-CPU tests, and one peer per distance.
pub struct Cpus {
    /// OS number of the CPU for same-CPU tests (None: pinning fails here).
    pub home: Option<usize>,
    /// (distance name, OS CPU) for each distance this machine has.
    pub peers: Vec<(&'static str, usize)>,
    /// Every other usable OS CPU, nearest to home first: the writers of
    /// the many-writer streams.
    pub others: Vec<usize>,
}

/// Does pinning a thread to `cpu` work (containers may forbid it)?
fn can_pin(cpu: usize) -> Result<(), String> {
    std::thread::spawn(move || sys::pin(cpu))
        .join()
        .unwrap_or_else(|_| Err("pin thread panicked".into()))
}

/// Pick the CPUs from the host topology and the affinity mask.
pub fn pick_cpus(m: &Machine, notes: &mut Vec<String>) -> Cpus {
    let allowed = crate::util::affinity::allowed_cpus();
    let os: Vec<usize> = (0..m.nr_cpus()).map(|c| m.os_cpu_id(c)).collect();
    let usable: Vec<usize> = (0..m.nr_cpus())
        .filter(|&c| allowed.contains(&os[c]))
        .collect();
    let Some(&home) = usable.first() else {
        notes.push("no CPU of the topology is in this process's affinity mask".into());
        return Cpus {
            home: None,
            peers: vec![],
            others: vec![],
        };
    };
    if let Err(e) = can_pin(os[home]) {
        notes.push(format!(
            "{e}: pinned benchmarks skipped, only unpinned ones run"
        ));
        return Cpus {
            home: None,
            peers: vec![],
            others: vec![],
        };
    }
    let mut peers = Vec::new();
    for (d, name) in [
        machine::Distance::Smt,
        machine::Distance::Llc,
        machine::Distance::Socket,
        machine::Distance::Numa,
    ]
    .into_iter()
    .zip(derive::DISTANCES)
    {
        let peer = usable
            .iter()
            .find(|&&c| m.distance(home, c) == d && can_pin(os[c]).is_ok());
        match peer {
            Some(&c) => peers.push((name, os[c])),
            None => notes.push(format!(
                "no usable CPU at distance {name} from CPU {}",
                os[home]
            )),
        }
    }
    let others = nearest_first(m, home, &usable)
        .into_iter()
        .map(|c| os[c])
        .filter(|&c| can_pin(c).is_ok())
        .collect();
    Cpus {
        home: Some(os[home]),
        peers,
        others,
    }
}

/// The CPUs of `cands` other than `home`, nearest to it first (by
/// distance, then in topology order): the first N take the writers.
pub fn nearest_first(m: &Machine, home: usize, cands: &[usize]) -> Vec<usize> {
    let mut v: Vec<usize> = cands.iter().copied().filter(|&c| c != home).collect();
    v.sort_by_key(|&c| (m.distance(home, c), c));
    v
}

/// Run every benchmark once, adding to `r`.
pub fn measure_once(cpus: &Cpus, plan: &Plan, r: &mut Results) {
    let any = cpus.home.unwrap_or(0);
    let [clock, getppid, wake_empty, wait_eagain, cputime] = bench::null_calls(any, plan.n(100));
    r.add(
        "clock",
        "clock_gettime(CLOCK_MONOTONIC) (vDSO)",
        "ns",
        clock,
    );
    r.add("getppid", "null syscall: getppid()", "ns", getppid);
    r.add(
        "futex_wake_empty",
        "futex_wake, no waiter",
        "ns",
        wake_empty,
    );
    r.add(
        "futex_wait_eagain",
        "futex_wait, value differs (EAGAIN)",
        "ns",
        wait_eagain,
    );
    r.add(
        "thread_cputime",
        "clock_gettime(CLOCK_THREAD_CPUTIME_ID)",
        "ns",
        cputime,
    );
    for ipc in [Ipc::Pipe, Ipc::Unix] {
        for size in STREAM_SIZES {
            let what = format!("{} write+read {size} B, never sleeps", ipc.name());
            let id = format!("{}_stream_{size}", ipc.name());
            match bench::stream(any, ipc, size, plan.n(60)) {
                Ok(s) => r.add(&id, &what, "ns", s),
                Err(e) => r.skip(&what, &e),
            }
        }
    }
    match bench::fork_exit(any, plan.n(150)) {
        Ok((fork, cycle)) => {
            r.add("fork", "fork(), in the parent", "ns", fork);
            r.add(
                "fork_exit_wait",
                "fork + child _exit + waitpid",
                "ns",
                cycle,
            );
        }
        Err(e) => r.skip("fork", &e),
    }
    let Some(home) = cpus.home else {
        return;
    };
    same_cpu(home, plan, r);
    for &(d, peer) in &cpus.peers {
        cross_cpu(home, d, peer, plan, r);
    }
    many_writers(home, &cpus.others, plan, r);
    rotating_writers(home, &cpus.others, plan, r);
    gated_writers(home, &cpus.others, plan, r);
    all_busy(home, &cpus.others, plan, r);
}

/// The 100-byte same-CPU streams on every usable CPU at once
/// (`{ipc}_stream_100_all`): against `{ipc}_stream_100`, what a machine
/// whose every CPU is busy costs each of them. Reported, not derived: the
/// model has no all-core speed yet (docs/model.md, issue 32's gaps).
fn all_busy(home: usize, others: &[usize], plan: &Plan, r: &mut Results) {
    if others.is_empty() {
        return;
    }
    let mut cpus = vec![home];
    cpus.extend(others);
    for ipc in [Ipc::Pipe, Ipc::Unix] {
        let name = ipc.name();
        let what = format!(
            "{name} write+read 100 B, never sleeps, on all {} CPUs at once",
            cpus.len()
        );
        match bench::stream_everywhere(&cpus, ipc, plan.n(60)) {
            Ok(s) => r.add(&format!("{name}_stream_100_all"), &what, "ns", s),
            Err(e) => r.skip(&what, &e),
        }
    }
}

/// Messages per cross-CPU stream at scale 1 (`Plan::n`).
const XCPU_MSGS: usize = 6000;

/// A cross-CPU stream's bench: bench::xcpu_stream or bench::xcpu_rotating.
type StreamFn = fn(usize, &[usize], Ipc, usize) -> Result<bench::Xcpu, String>;

/// A cross-CPU stream of 100-byte messages from `writers` to a reader on
/// `home` (`f`: bench::xcpu_stream or bench::xcpu_rotating): primitives
/// `{id}_read`, `{id}_write`. At least 2000 messages: three full pipe
/// buffers (16 pages of 40 messages), so that the timed three quarters
/// are the steady state.
#[allow(clippy::too_many_arguments)]
fn xcpu(
    f: StreamFn,
    home: usize,
    writers: &[usize],
    ipc: Ipc,
    id: &str,
    what: &str,
    plan: &Plan,
    r: &mut Results,
) {
    match f(home, writers, ipc, plan.n(XCPU_MSGS).max(2000)) {
        Ok(x) => {
            r.add(
                &format!("{id}_read"),
                &format!("{what}: per successful read"),
                "ns",
                x.read,
            );
            r.add(
                &format!("{id}_write"),
                "  the same: per successful write",
                "ns",
                x.write,
            );
        }
        Err(e) => r.skip(what, &e),
    }
}

/// The writer counts of the many-writer streams, given `avail` CPUs
/// besides the reader's: 2, 4, 8 and all, those that fit (all once, if it
/// is one of the others), and the labels of those that do not.
pub fn writer_counts(avail: usize) -> (Vec<usize>, Vec<&'static str>) {
    let (mut run, mut skipped) = (Vec::new(), Vec::new());
    for (label, n) in [("2", 2), ("4", 4), ("8", 8), ("all", avail)] {
        if n < 2 || n > avail {
            skipped.push(label);
        } else if !run.contains(&n) {
            run.push(n);
        }
    }
    (run, skipped)
}

/// N writers into one reader on `home` (`xcpu.c` with a CPU list): the
/// first N of `others`, the nearest CPUs.
fn many_writers(home: usize, others: &[usize], plan: &Plan, r: &mut Results) {
    let kind = Streams {
        f: bench::xcpu_stream,
        id: "writers",
        how: "",
    };
    counted_writers(kind, "streams", home, others, plan, r);
}

/// `kind`'s streams at each of [`writer_counts`] that fits, and a note
/// naming the `label` streams with the counts that do not.
fn counted_writers(
    kind: Streams,
    label: &str,
    home: usize,
    others: &[usize],
    plan: &Plan,
    r: &mut Results,
) {
    let (counts, skipped) = writer_counts(others.len());
    if !skipped.is_empty() {
        r.skip(
            &format!(
                "{label} with {} writers into one reader",
                skipped.join(", ")
            ),
            &format!("{} usable CPU(s) besides the reader's", others.len()),
        );
    }
    writer_streams(kind, home, others, &counts, plan, r);
}

/// A family of many-writer streams: the bench, its primitives' id word
/// (`{ipc}_{id}_{n}_*`) and how the writers write, for the table.
struct Streams {
    f: StreamFn,
    id: &'static str,
    how: &'static str,
}

/// `kind`'s streams into one reader on `home` from the first `n` of
/// `others` (the nearest CPUs), for each `n` of `counts`, pipe and unix.
fn writer_streams(
    kind: Streams,
    home: usize,
    others: &[usize],
    counts: &[usize],
    plan: &Plan,
    r: &mut Results,
) {
    for &n in counts {
        let w = &others[..n];
        let mut sorted = w.to_vec();
        sorted.sort_unstable();
        for ipc in [Ipc::Pipe, Ipc::Unix] {
            let name = ipc.name();
            let what = format!(
                "{name} stream, {n} writers on CPUs {}{} into one reader on {home}, non-blocking",
                crate::report::ranges(&sorted),
                kind.how
            );
            let id = format!("{name}_{}_{n}", kind.id);
            xcpu(kind.f, home, w, ipc, &id, &what, plan, r);
        }
    }
}

/// Writers taking turns, one message each, into one reader on `home`
/// (bench::xcpu_rotating): 2 and all the usable CPUs besides the reader's
/// (`{ipc}_rotate_{n}_read`, `_write`). Against the one-writer stream,
/// what messages from mixed CPUs cost without contention.
fn rotating_writers(home: usize, others: &[usize], plan: &Plan, r: &mut Results) {
    if others.len() < 2 {
        let why = format!("{} usable CPU(s) besides the reader's", others.len());
        return r.skip("streams of writers taking turns into one reader", &why);
    }
    let mut counts = vec![2, others.len()];
    counts.dedup();
    let kind = Streams {
        f: bench::xcpu_rotating,
        id: "rotate",
        how: " taking turns (one message each)",
    };
    writer_streams(kind, home, others, &counts, plan, r);
}

/// N writers at once into one reader on `home`, held back in user space
/// so that the buffer never fills (bench::xcpu_gated; `{ipc}_gated_{n}_*`,
/// the counts of the N-writer streams). Against the turn-taking streams,
/// what writers contending for one pipe or socket cost without the
/// EAGAIN retries of the N-writer streams. Reported, not derived yet: no
/// machine with three or more CPUs has measured it.
fn gated_writers(home: usize, others: &[usize], plan: &Plan, r: &mut Results) {
    let kind = Streams {
        f: bench::xcpu_gated,
        id: "gated",
        how: " at once, at most 2 messages each unread",
    };
    counted_writers(kind, "held-back streams", home, others, plan, r);
}

fn same_cpu(home: usize, plan: &Plan, r: &mut Results) {
    match bench::pingpong_threads(home, plan.n(3000)) {
        Ok(p) => {
            let what = "futex ping-pong, 2 SCHED_BATCH threads, one CPU: round trip";
            r.add("pingpong_thread", what, "ns", p.round_trip);
            let what = "futex_wake of a SCHED_BATCH waiter on the same CPU (+1 clock read)";
            r.add("futex_wake_local", what, "ns", p.wake);
        }
        Err(e) => r.skip("thread ping-pong", &e),
    }
    match bench::pingpong_processes(home, plan.n(3000)) {
        Ok(p) => {
            let what = "futex ping-pong, 2 SCHED_BATCH processes, one CPU: round trip";
            r.add("pingpong_process", what, "ns", p.round_trip);
        }
        Err(e) => r.skip("process ping-pong", &e),
    }
    for ipc in [Ipc::Pipe, Ipc::Unix] {
        let name = ipc.name();
        match bench::wake_cycle(home, home, ipc, 100, plan.n(1500)) {
            Ok(s) => r.add(
                &format!("{name}_cycle_same"),
                &format!("{name} read 100 B that slept, woken from the same CPU: reader CPU time"),
                "ns",
                s,
            ),
            Err(e) => r.skip("wake cycle", &e),
        }
    }
    let rings = [
        (2, false, Ipc::Pipe),
        (3, false, Ipc::Pipe),
        (8, false, Ipc::Pipe),
        (6, true, Ipc::Pipe),
        (8, true, Ipc::Pipe),
        (2, false, Ipc::Unix),
    ];
    for (k, processes, ipc) in rings {
        let kinds = if processes { "processes" } else { "threads" };
        let id = ring_id(ipc, processes, k);
        let what = format!(
            "token around a ring of {k} {kinds} on one CPU ({}): per hop",
            ipc.name()
        );
        match bench::ring(home, k, processes, ipc, plan.n(30)) {
            Ok(s) => r.add(&id, &what, "ns", s),
            Err(e) => r.skip(&what, &e),
        }
    }
    match bench::timer_wakeups(home, plan.n(2000)) {
        Ok(s) => {
            let what = "timer wakeup beside a SCHED_IDLE spinner: lateness past the deadline";
            r.add("timer_wake_busy", what, "ns", s);
        }
        Err(e) => r.skip("timer wakeup", &e),
    }
    // Reported, not derived yet: what the model charges for this cycle
    // (syscall, switch, hrtimer_irq_ns, nohz_idle_exit_ns) fell 38 µs short
    // of it on this VM (docs/host-measurements.md §20).
    match bench::timer_sleep_cpu(home, plan.n(300)) {
        Ok(s) => {
            let what =
                "1 ms timer sleep on an otherwise idle CPU: the sleeper's CPU time per sleep";
            r.add("timer_sleep_idle", what, "ns", s);
        }
        Err(e) => r.skip("timer sleep", &e),
    }
    let dur = (250_000_000.0 * plan.scale) as u64;
    match bench::clock_gaps(home, dur, 300) {
        Ok((gaps, ran)) => match bench::tick_gaps(&gaps, ran) {
            Some((hz, ticks)) => {
                let what = format!("timer tick as a busy loop sees it (HZ {hz} found)");
                r.add("tick_gap", &what, "ns", ticks);
            }
            None => r.skip("tick", "no periodic gap found in a busy loop's clock"),
        },
        Err(e) => r.skip("tick", &e),
    }
}

/// The primitive id of a ring of `k` tasks: pipe rings keep their first
/// names (`ring_thread_2`, `ring_process_8`), socket ones say `unix`.
pub fn ring_id(ipc: Ipc, processes: bool, k: usize) -> String {
    let kind = if processes { "process" } else { "thread" };
    match ipc {
        Ipc::Pipe => format!("ring_{kind}_{k}"),
        Ipc::Unix => format!("ring_unix_{kind}_{k}"),
    }
}

fn cross_cpu(home: usize, d: &str, peer: usize, plan: &Plan, r: &mut Results) {
    match bench::line_transfer(home, peer, plan.n(300)) {
        Ok(s) => r.add(
            &format!("line_{d}"),
            &format!("cache line one way, {d} (CPU {home}↔{peer})"),
            "ns",
            s,
        ),
        Err(e) => r.skip("line transfer", &e),
    }
    let cases = [
        ("idle_short", Target::Idle, 10_000, 1500, "idle for 10 µs"),
        ("idle", Target::Idle, 50_000, 1500, "idle for 50 µs"),
        ("idle_mid", Target::Idle, 200_000, 400, "idle for 200 µs"),
        ("idle_long", Target::Idle, 1_000_000, 150, "idle for 1 ms"),
        (
            "busy",
            Target::Spinner(Policy::Idle),
            50_000,
            1500,
            "running a SCHED_IDLE spinner",
        ),
        (
            "busy_normal",
            Target::Spinner(Policy::Normal),
            50_000,
            300,
            "running a normal spinner",
        ),
    ];
    for (id, target, gap, n, what) in cases {
        match bench::remote_wakeups(home, peer, target, gap, plan.n(n)) {
            Ok(w) => {
                let diff: Vec<f64> = w.latency.iter().zip(&w.wake).map(|(l, w)| l - w).collect();
                r.add(
                    &format!("wake_{id}_{d}"),
                    &format!("wakeup latency, target {what} ({d})"),
                    "ns",
                    w.latency,
                );
                r.add(
                    &format!("wake_{id}_target_{d}"),
                    "  the same less the waker's futex_wake",
                    "ns",
                    diff,
                );
                r.add(
                    &format!("waker_{id}_{d}"),
                    &format!("  waker's futex_wake, target {what}"),
                    "ns",
                    w.wake,
                );
            }
            Err(e) => r.skip("remote wakeup", &e),
        }
    }
    for ipc in [Ipc::Pipe, Ipc::Unix] {
        let name = ipc.name();
        match bench::wake_cycle(peer, home, ipc, 100, plan.n(1500)) {
            Ok(s) => r.add(
                &format!("{name}_cycle_{d}"),
                &format!(
                    "{name} read 100 B that slept, woken from CPU {peer} ({d}): reader CPU time"
                ),
                "ns",
                s,
            ),
            Err(e) => r.skip("wake cycle", &e),
        }
        let what =
            format!("{name} stream, writer on CPU {peer} ({d}) to reader on {home}, non-blocking");
        xcpu(
            bench::xcpu_stream,
            home,
            &[peer],
            ipc,
            &format!("{name}_xcpu_{d}"),
            &what,
            plan,
            r,
        );
    }
}

/// Facts about the host for the file's header and the report.
pub struct HostInfo {
    pub date: String,
    pub kernel: String,
    pub idle: derive::IdleInfo,
    pub governor: String,
    pub loadavg: String,
}

fn read_trim(p: &str) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

fn host_info() -> HostInfo {
    HostInfo {
        date: utc_date(),
        kernel: read_trim("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
        idle: derive::IdleInfo {
            driver: read_trim("/sys/devices/system/cpu/cpuidle/current_driver")
                .unwrap_or_else(|| "none".into()),
            guest_halt_poll_ns: read_trim("/sys/module/haltpoll/parameters/guest_halt_poll_ns")
                .and_then(|s| s.parse().ok()),
        },
        governor: read_trim("/sys/devices/system/cpu/cpuidle/current_governor")
            .or_else(|| read_trim("/sys/devices/system/cpu/cpuidle/current_governor_ro"))
            .unwrap_or_else(|| "none".into()),
        loadavg: read_trim("/proc/loadavg").unwrap_or_default(),
    }
}

/// Today's date (UTC) from the system clock, YYYY-MM-DD. Only labels the file.
fn utc_date() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (era * 400 + yoe + i64::from(m <= 2), m, d)
}

/// CPU time (ns) all CPUs spent busy, and stolen, from /proc/stat.
fn cpu_busy_ns() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let v: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let busy: u64 = v.iter().take(8).sum::<u64>() - v.get(3)? - v.get(4)?;
    Some((busy * 1_000_000_000 / hz, v.get(7)? * 1_000_000_000 / hz))
}

/// CPU time this process and its waited-for children used, in ns.
fn own_cpu_ns() -> u64 {
    let usage = |who| {
        // SAFETY: zeroed rusage is a valid out-buffer.
        let ru = unsafe {
            let mut ru: libc::rusage = std::mem::zeroed();
            libc::getrusage(who, &mut ru);
            ru
        };
        let t = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
        t(ru.ru_utime) + t(ru.ru_stime)
    };
    usage(libc::RUSAGE_SELF) + usage(libc::RUSAGE_CHILDREN)
}

/// What the measurement found, ready to print and write.
pub struct Calibration {
    pub results: Results,
    pub derived: derive::Derived,
    pub machine: Machine,
    pub base_name: String,
    pub info: HostInfo,
    pub cpus: Cpus,
    pub notes: Vec<String>,
    /// Other tasks' share of all CPUs' time during the measurement, and steal.
    pub others_pct: Option<f64>,
    pub steal_pct: Option<f64>,
    pub wall_s: f64,
}

/// Measure this host with `plan`.
pub fn measure(plan: &Plan) -> Result<Calibration, String> {
    let mut m = host::detect()?;
    let base_name = if host::is_virtual_machine() {
        "vm-2 (the host preset in a VM)"
    } else {
        "generic x86 (the host preset on bare metal)"
    };
    let mut notes = Vec::new();
    let cpus = pick_cpus(&m, &mut notes);
    let info = host_info();
    let t0 = sys::now_ns();
    let (busy0, own0) = (cpu_busy_ns(), own_cpu_ns());
    let mut results = Results::default();
    for _ in 0..plan.runs.max(1) {
        measure_once(&cpus, plan, &mut results);
    }
    let wall = (sys::now_ns() - t0).max(1);
    let total = wall as f64 * m.nr_cpus() as f64;
    let (busy1, own1) = (cpu_busy_ns(), own_cpu_ns());
    let delta = busy0.zip(busy1).map(|(a, b)| (b.0 - a.0, b.1 - a.1));
    let others_pct = delta.map(|(busy, _)| 100.0 * busy.saturating_sub(own1 - own0) as f64 / total);
    let steal_pct = delta.map(|(_, steal)| 100.0 * steal as f64 / total);
    let derived = derive::derive(&results, &m.cost, base_name, &info.idle);
    m.cost = derived.cost.clone();
    m.name = "calibrated".into();
    Ok(Calibration {
        results,
        derived,
        machine: m,
        base_name: base_name.into(),
        info,
        cpus,
        notes,
        others_pct,
        steal_pct,
        wall_s: wall as f64 / 1e9,
    })
}

/// The table of primitives.
pub fn table(c: &Calibration) -> String {
    let mut out = format!(
        "{:<26} {:>9} {:>19} {:>7}  {}\n",
        "primitive", "median", "p10–p90", "samples", "what (ns; run medians)"
    );
    for p in &c.results.prims {
        let Some(s) = summarize(&p.samples) else {
            continue;
        };
        let runs: Vec<String> = p.run_medians.iter().map(|m| format!("{m:.0}")).collect();
        out += &format!(
            "{:<26} {:>9.0} {:>19} {:>7}  {} [{}]\n",
            p.id,
            s.median,
            format!("{:.0}–{:.0}", s.p10, s.p90),
            s.n,
            p.what,
            runs.join(" ")
        );
    }
    out
}

/// The derived cost model next to the base.
fn derived_table(c: &Calibration, base: &crate::machine::CostModel) -> String {
    let new = toml::Table::try_from(&c.derived.cost).unwrap_or_default();
    let old = toml::Table::try_from(base).unwrap_or_default();
    let mut out = format!("{:<24} {:>9} {:>9}  from\n", "cost field", "value", "base");
    for (k, v) in &new {
        let note = c.derived.notes.get(k.as_str()).cloned().unwrap_or_default();
        let (v, b) = match (v, old.get(k)) {
            (toml::Value::Array(_), _) => (
                derive::describe_states(&c.derived.cost.idle_states),
                derive::describe_states(&base.idle_states),
            ),
            (v, b) => (v.to_string(), b.map_or("-".into(), |b| b.to_string())),
        };
        out += &format!("{k:<24} {v:>9} {b:>9}  {note}\n");
    }
    out
}

/// The machine file: header comments, topology, cost with a comment per
/// field, the raw primitives.
pub fn machine_file(c: &Calibration) -> String {
    let m = &c.machine;
    let mut out = format!(
        "# Machine file written by `schedlab calibrate` on {date} (UTC).\n\
         # Host: kernel {kernel}, cpuidle driver {driver} (governor {gov}), {summary}.\n\
         # Load average at the start: {load}; other tasks used {others} of all CPUs' time\n\
         # during the {wall:.0} s measurement, steal {steal}. CPUs used: {cpus}.\n\
         # Each cost says how it was derived from the primitives in [measured]\n\
         # (src/calibrate/derive.rs); fields not measurable from user space keep\n\
         # the base model's value ({base}) and say so.\n",
        date = c.info.date,
        kernel = c.info.kernel,
        driver = c.info.idle.driver,
        gov = c.info.governor,
        summary = m.summary(),
        load = c.info.loadavg,
        others = pct(c.others_pct),
        wall = c.wall_s,
        steal = pct(c.steal_pct),
        cpus = cpus_text(&c.cpus),
        base = c.base_name,
    );
    for n in c.notes.iter().chain(&c.results.skipped) {
        out += &format!("# Note: {n}\n");
    }
    out += &format!(
        "name = \"{}\"\ndescription = \"calibrated on {} ({}, kernel {})\"\ndate = \"{}\"\n\n",
        m.name, c.info.date, c.info.idle.driver, c.info.kernel, c.info.date
    );
    out += &format!(
        "# topology: read from /sys/devices/system/cpu\n{}\n",
        crate::machine::file::topology_toml(m)
    );
    out += &crate::machine::file::cost_toml(&m.cost, |k| c.derived.notes.get(k).cloned());
    out += "\n# Raw primitives (ns unless unit says otherwise); not read by the simulator.\n[measured]\n";
    for p in &c.results.prims {
        // A name the machine file does not know would make the file unloadable.
        debug_assert!(crate::machine::measured::is_primitive(&p.id), "{}", p.id);
        if let Some(s) = summarize(&p.samples) {
            out += &format!(
                "{} = {{ median = {:.1}, p10 = {:.1}, p90 = {:.1}, samples = {}, unit = \"{}\" }}  # {}\n",
                p.id, s.median, s.p10, s.p90, s.n, p.unit, p.what.trim()
            );
        }
    }
    out
}

fn pct(v: Option<f64>) -> String {
    v.map_or("unknown".into(), |p| format!("{p:.1} %"))
}

fn cpus_text(c: &Cpus) -> String {
    match c.home {
        None => "none pinned".into(),
        Some(h) => {
            let peers: Vec<String> = c.peers.iter().map(|(d, p)| format!("{p} ({d})")).collect();
            format!("home {h}, peers [{}]", peers.join(", "))
        }
    }
}

/// `schedlab calibrate`.
pub fn main(a: &CalibrateArgs) -> i32 {
    let plan = Plan {
        scale: if a.quick { 0.5 } else { 2.0 },
        runs: a.runs.unwrap_or(if a.quick { 1 } else { 3 }),
    };
    if plan.runs == 0 {
        eprintln!("schedlab calibrate: --runs must be at least 1");
        return 2;
    }
    if let Some(d) = a.output.as_ref().and_then(|p| p.parent()) {
        if !d.as_os_str().is_empty() && !d.is_dir() {
            eprintln!(
                "schedlab calibrate: --output: directory {} does not exist",
                d.display()
            );
            return 2;
        }
    }
    run(&plan, a.output.as_deref(), host::cache_dir().as_deref())
}

/// Keep a calibration where `--machine host` finds it: `dir`'s file for
/// this host ([`host::cache_path`]), written atomically. Its path.
pub fn store(c: &Calibration, dir: &Path) -> Result<PathBuf, String> {
    let path = host::cache_path(dir, c.machine.nr_cpus());
    std::fs::create_dir_all(dir)
        .and_then(|()| crate::util::fs::write_atomic(&path, machine_file(c).as_bytes()))
        .map_err(|e| {
            format!(
                "cannot write {} (set {} to another directory): {e}",
                path.display(),
                host::CACHE_DIR_VAR
            )
        })?;
    Ok(path)
}

/// Measure, print the tables, write the file if asked and keep the result
/// in the cache directory `cache` for `--machine host`. Exit code.
pub fn run(plan: &Plan, output: Option<&Path>, cache: Option<&Path>) -> i32 {
    eprintln!("schedlab calibrate: measuring ({} run(s))...", plan.runs);
    let mut c = match measure(plan) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("schedlab calibrate: cannot run: {e}");
            return 2;
        }
    };
    if let Some(stem) = output.and_then(Path::file_stem) {
        c.machine.name = stem.to_string_lossy().into_owned();
    }
    let base = host::detect()
        .map(|m| m.cost)
        .unwrap_or_else(|_| c.derived.cost.clone());
    println!(
        "schedlab calibrate: {} — kernel {}, cpuidle {} ({}), {}; {:.1} s, CPUs {}",
        c.info.date,
        c.info.kernel,
        c.info.idle.driver,
        c.info.governor,
        c.machine.summary(),
        c.wall_s,
        cpus_text(&c.cpus)
    );
    println!(
        "load average {}; other tasks used {} of all CPU time during the run, steal {}",
        c.info.loadavg,
        pct(c.others_pct),
        pct(c.steal_pct)
    );
    if c.others_pct.is_some_and(|p| p > 10.0) {
        println!("warning: the host was busy; medians resist it, the p90s do not");
    }
    for n in c.notes.iter().chain(&c.results.skipped) {
        println!("note: {n}");
    }
    println!("\n{}", table(&c));
    println!("{}", derived_table(&c, &base));
    match output {
        Some(p) => match crate::util::fs::write_atomic(p, machine_file(&c).as_bytes()) {
            Ok(()) => println!(
                "wrote {} (use it with --machine {})",
                p.display(),
                p.display()
            ),
            Err(e) => {
                eprintln!("schedlab calibrate: cannot write {}: {e}", p.display());
                return 2;
            }
        },
        None => println!("(--output FILE writes these as a machine file)"),
    }
    match cache.map(|d| store(&c, d)) {
        Some(Ok(p)) => println!("kept for --machine host in {}", p.display()),
        Some(Err(e)) => {
            eprintln!("schedlab calibrate: {e}");
            return 2;
        }
        None => println!(
            "not kept for --machine host: no ${}, $XDG_CACHE_HOME or $HOME",
            host::CACHE_DIR_VAR
        ),
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writer_counts_fit_the_cpus() {
        assert_eq!(writer_counts(15), (vec![2, 4, 8, 15], vec![]));
        // "all" is 8 here: measured once, not skipped.
        assert_eq!(writer_counts(8), (vec![2, 4, 8], vec![]));
        assert_eq!(writer_counts(3), (vec![2, 3], vec!["4", "8"]));
        assert_eq!(writer_counts(1), (vec![], vec!["2", "4", "8", "all"]));
    }

    /// Writers come nearest first: the SMT sibling, then the LLC, then
    /// the other socket; never the reader's own CPU.
    #[test]
    fn writers_nearest_first() {
        let m = crate::machine::presets::build("snb-32").unwrap().unwrap();
        let all: Vec<usize> = (0..m.nr_cpus()).collect();
        for home in [0, 9, 31] {
            let v = nearest_first(&m, home, &all);
            assert_eq!(v.len(), m.nr_cpus() - 1);
            assert!(!v.contains(&home));
            let d: Vec<_> = v.iter().map(|&c| m.distance(home, c)).collect();
            assert!(d.is_sorted(), "{home}: {d:?}");
            assert_eq!(d[0], machine::Distance::Smt);
            assert!(d.contains(&machine::Distance::Llc) && d.contains(&machine::Distance::Numa));
        }
        assert_eq!(nearest_first(&m, 4, &[4, 3]), vec![3]);
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }
}
