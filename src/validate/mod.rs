//! `schedlab validate`: check the simulator against the real kernel of this
//! host. `validate pelt` runs duty-cycle tasks for real, samples their PELT
//! signals from /proc, replays the same recorded intervals through the
//! simulator's PELT code and compares. `validate bench` runs perf's
//! scheduler benchmarks for real and simulated. Exit 0 pass, 1 fail, 2
//! cannot run (or, for `validate pelt`, cannot judge: the host disturbed
//! the measurement).
//!
//! Layer: experiments, beside `compare`, `repro` and `bench`. Uses the
//! layers below (kernel, workload, report, scenario, run); never `cli`.

pub mod bench;
pub mod bench_report;
pub mod duty;
pub mod pelt;
pub mod perf;
pub mod procfs;
pub mod quiet;
pub mod recorded;
pub mod report;
pub mod sample;
pub mod stats;
pub mod timeline;

use crate::util::fs::write_atomic;
use clap::{Args, Subcommand};
use perf::CpuStat;
use quiet::Quiet;
use sample::Sample;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use timeline::Timeline;

#[derive(Args)]
pub struct ValidateArgs {
    #[command(subcommand)]
    cmd: ValidateCmd,
}

#[derive(Subcommand)]
enum ValidateCmd {
    /// Run 25/50/75 % duty-cycle tasks, a ramp and a decay for real, and
    /// compare their /proc util_avg with the simulated PELT signal
    #[command(after_help = "Examples:\n  schedlab validate pelt\n  \
        schedlab validate pelt --quick --json pelt.json")]
    Pelt(PeltArgs),
    /// Run `perf bench sched pipe` and `messaging` for real under `perf
    /// stat` and simulated, and compare time, switches, migrations and CPU
    /// time per operation against the fidelity targets
    #[command(after_help = "Examples:\n  schedlab validate bench\n  \
        schedlab validate bench --quick --runs 2 --json bench.json\n  \
        schedlab validate bench --machine vm-2 --set kernel.preempt=full")]
    Bench(bench::BenchArgs),
}

#[derive(Args)]
pub struct PeltArgs {
    /// Short phases (0.6 s each), for CI
    #[arg(long)]
    quick: bool,
    /// Length of each duty-cycle phase, e.g. 3s [default: 2s]
    #[arg(long, conflicts_with = "quick")]
    duration: Option<String>,
    /// Where procfs is mounted
    #[arg(long, value_name = "DIR", default_value = "/proc")]
    proc_root: PathBuf,
    /// Write the statistics and every sample as JSON to this file, atomically
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
}

pub fn main(args: &ValidateArgs) -> i32 {
    match &args.cmd {
        ValidateCmd::Pelt(a) => match pelt_main(a) {
            Ok(rc) => rc,
            Err(why) => {
                eprintln!("schedlab validate pelt: cannot run: {why}");
                2
            }
        },
        ValidateCmd::Bench(a) => bench::main(a).unwrap_or_else(|why| {
            eprintln!("schedlab validate bench: cannot run: {why}");
            2
        }),
    }
}

/// Run the check; Err is "cannot run" (exit 2).
fn pelt_main(a: &PeltArgs) -> Result<i32, String> {
    let len_ns = match (&a.duration, a.quick) {
        (Some(d), _) => {
            crate::workload::params::parse_duration(d).map_err(|e| format!("--duration: {e}"))?
        }
        (None, true) => 600_000_000,
        (None, false) => 2_000_000_000,
    };
    if len_ns < 200_000_000 {
        return Err("--duration: a phase needs at least 200ms to settle".into());
    }
    let json_dir = a.json.as_ref().and_then(|p| p.parent());
    if let Some(d) = json_dir.filter(|d| !d.as_os_str().is_empty() && !d.is_dir()) {
        return Err(format!("--json: directory {} does not exist", d.display()));
    }
    preflight(&a.proc_root)?;
    let cpus = crate::util::affinity::allowed_cpus();
    let (&sampler_cpu, &worker_cpu) = match cpus.as_slice() {
        [first, .., last] => (first, last),
        _ => return Err(format!("needs 2 CPUs, this process may use {cpus:?}")),
    };
    let program = duty::program(len_ns);
    let (tl, samples, quiet) = measure(&a.proc_root, worker_cpu, sampler_cpu, &program)?;
    let outcome = compare(&tl, &samples, worker_cpu, sampler_cpu, quiet)?;
    print!("{}", report::text(&outcome));
    if let Some(path) = &a.json {
        let text = serde_json::to_string_pretty(&crate::report::meta::with_meta(report::to_json(
            &outcome,
        )))
        .unwrap_or_default();
        write_atomic(path, (text + "\n").as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if !outcome.disturbed.is_empty() {
        eprintln!(
            "schedlab validate pelt: cannot judge: the measurement was disturbed: {}; \
             re-run on a quiet host",
            outcome.disturbed.join("; ")
        );
        return Ok(2);
    }
    Ok(if outcome.pass() { 0 } else { 1 })
}

/// The host must expose a task's PELT signals in /proc/self/sched (absent
/// on kernels built without CONFIG_SCHED_DEBUG, where that option exists).
fn preflight(proc_root: &Path) -> Result<(), String> {
    let path = proc_root.join("self/sched");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e} (this needs a Linux host with /proc/PID/sched)",
            path.display()
        )
    })?;
    procfs::parse(&path.display().to_string(), &text).map(|_| ())
}

/// Run the program on a thread pinned to `worker_cpu` while this thread,
/// pinned to `sampler_cpu`, samples it; and what the rest of the host did
/// meanwhile (the stolen time is filled in by `compare`).
fn measure(
    proc_root: &Path,
    worker_cpu: usize,
    sampler_cpu: usize,
    program: &[duty::Phase],
) -> Result<(Timeline, Vec<Sample>, Quiet), String> {
    duty::pin(sampler_cpu)?;
    let done = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let cpu_before = CpuStat::read_cpu(worker_cpu).ok();
    let worker = {
        let (done, program) = (done.clone(), program.to_vec());
        let schedstat = proc_root.join("thread-self/schedstat");
        std::thread::spawn(move || {
            let pinned = duty::pin(worker_cpu);
            let ok = pinned.is_ok();
            let _ = tx.send(pinned.map(|_| duty::gettid()));
            let run_delay = || quiet::run_delay(&std::fs::read_to_string(&schedstat).ok()?);
            let (t0, cpu0, wait0) = (duty::now_ns(), duty::thread_cpu_ns(), run_delay());
            let tl = if ok {
                duty::run(&program)
            } else {
                Timeline::default()
            };
            let (t1, cpu1, wait1) = (duty::now_ns(), duty::thread_cpu_ns(), run_delay());
            done.store(true, Ordering::Release);
            let waited = wait0.zip(wait1).map(|(a, b)| b.saturating_sub(a));
            (tl, t1 - t0, cpu1 - cpu0, waited)
        })
    };
    let tid = rx.recv().map_err(|e| e.to_string())??;
    let samples = sample::collect(&procfs::task_path(proc_root, tid), &done);
    done.store(true, Ordering::Release);
    let (tl, wall_ns, task_cpu_ns, run_delay_ns) = worker
        .join()
        .map_err(|_| "the duty-cycle thread panicked".to_string())?;
    let others_ns = cpu_before
        .zip(CpuStat::read_cpu(worker_cpu).ok())
        .map(|(a, b)| ((b.busy_s - a.busy_s) * 1e9) as u64)
        .map(|busy| busy.saturating_sub(task_cpu_ns));
    let quiet = Quiet {
        wall_ns,
        run_delay_ns,
        others_ns,
        stolen_recorded_ns: 0,
        stolen_kernel_ns: 0,
    };
    Ok((tl, samples?, quiet))
}

/// Simulate the recorded timeline, pair each sample with its simulated
/// value and compute the statistics.
fn compare(
    tl: &Timeline,
    samples: &[Sample],
    worker_cpu: usize,
    sampler_cpu: usize,
    quiet: Quiet,
) -> Result<report::Outcome, String> {
    let clock = sample::KernelClock::new(tl, samples)?;
    let quiet = Quiet {
        stolen_recorded_ns: tl.totals()[timeline::Kind::Stolen as usize],
        stolen_kernel_ns: clock.unseen_ns(),
        ..quiet
    };
    // A sample shows the value of the kernel's last update, at its
    // last_update_time, which cannot be later than the read.
    let at: Vec<u64> = samples
        .iter()
        .map(|s| s.f.last_update_time.min(clock.at(s.t)))
        .collect();
    let sim = pelt::simulate(tl, |t| clock.at(t), &at);
    let points: Vec<stats::Point> = samples
        .iter()
        .zip(sim)
        .filter_map(|(s, sim)| {
            Some(stats::Point {
                t: s.t,
                real: s.f.util_avg,
                sim: sim?,
            })
        })
        .collect();
    let phases = tl
        .phases
        .iter()
        .filter(|p| p.scored)
        .map(|p| stats::phase_stats(p, &points))
        .collect();
    Ok(report::Outcome {
        kernel: kernel_release(),
        worker_cpu,
        sampler_cpu,
        phases,
        totals: tl.totals(),
        on_cpu_ns: on_cpu(tl, samples),
        unseen_steal_ns: clock.unseen_ns(),
        disturbed: quiet.reasons(),
        quiet,
        points,
    })
}

/// CPU time between the first and last samples: (the kernel's
/// se.sum_exec_runtime, the recorded runs), a check on the recording.
fn on_cpu(tl: &Timeline, samples: &[Sample]) -> (u64, u64) {
    let (Some(a), Some(b)) = (samples.first(), samples.last()) else {
        return (0, 0);
    };
    let kernel =
        b.f.sum_exec_runtime_ns
            .saturating_sub(a.f.sum_exec_runtime_ns);
    let ran = tl.time_in(&[timeline::Kind::Run]);
    (kernel, ran.before(b.t) - ran.before(a.t))
}

/// The running kernel's release string, or "unknown".
fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}
