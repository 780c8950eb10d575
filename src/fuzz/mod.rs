//! `schedlab fuzz`: seeded fuzzing of every input format on stable Rust.
//! Structure-aware generators and byte-level mutators (`mutate`) over the
//! project's own inputs (`corpus`) drive the library entry points the
//! command line uses (`exec`), each input with `--check` on and within an
//! event, CPU-time and memory budget. Every input must end in success or
//! an input error; a panic, a budget overrun or a broken invariant is a
//! failure, written minimized to `--out`. docs/fuzz.md has the details.
//!
//! Layer: experiments (beside `bench`): it runs whole simulations.

pub mod corpus;
pub mod exec;
pub mod mutate;

use clap::{Args, ValueEnum};
use exec::{Limits, Outcome, Scratch, KINDS};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Rtapp,
    Scenario,
    Trace,
    /// Flag strings (`--machine`, `-w`, `--cgroup`, `--set`) and machine files.
    Spec,
    All,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::Rtapp => "rtapp",
            Format::Scenario => "scenario",
            Format::Trace => "trace",
            Format::Spec => "spec",
            Format::All => "all",
        }
    }

    fn ext(self) -> &'static str {
        match self {
            Format::Rtapp => "json",
            Format::Scenario => "toml",
            _ => "txt",
        }
    }

    /// The formats `--format` stands for.
    pub fn expand(self) -> Vec<Format> {
        match self {
            Format::All => vec![Format::Scenario, Format::Spec, Format::Rtapp, Format::Trace],
            f => vec![f],
        }
    }
}

#[derive(Args)]
pub struct FuzzArgs {
    /// Input format to fuzz
    #[arg(long, value_enum, default_value = "all")]
    format: Format,
    /// Number of inputs (spread evenly over the formats of `all`)
    #[arg(long, default_value_t = 10_000)]
    iterations: u64,
    /// Seed of the input stream: the same seed gives the same inputs
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write each failing input here, minimized, with a .why file
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// The repository root, holding tests/corpus and scenarios
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
}

pub struct Config {
    pub formats: Vec<Format>,
    pub iterations: u64,
    pub seed: u64,
    pub out: Option<PathBuf>,
    pub limits: Limits,
    /// Minimizer executions per failure.
    pub minimize_runs: usize,
}

/// The budget of `schedlab fuzz`: 20 ms simulated, 100,000 events per CPU
/// and task (5 per simulated µs), 10 s of CPU time plus 1 ms per CPU and
/// task, 10 µs per event done (the simulator spends about 1 µs) and 1 µs
/// per CPU and task a `--check` sweep visits (it spends about 60 ns), 2 GiB of peak RSS (the largest inputs the limits admit, a million
/// tasks, take 1.0-1.2 GB).
pub const CLI_LIMITS: Limits = Limits {
    sim_ns: 20_000_000,
    events_per_entity: 100_000,
    time: Duration::from_secs(10),
    time_per_entity: Duration::from_millis(1),
    time_per_event: Duration::from_micros(10),
    time_per_swept: Duration::from_micros(1),
    memory_kib: 2 << 20,
};

/// One failure: its format, the input (minimized) and the file it went to.
pub struct Failure {
    pub format: Format,
    pub input: Vec<u8>,
    pub outcome: Outcome,
    pub saved: Option<PathBuf>,
}

pub struct Report {
    /// Per format: inputs by outcome kind (`exec::KINDS`).
    pub counts: Vec<(Format, [u64; KINDS.len()])>,
    /// The first input of each distinct failure, per format.
    pub failures: Vec<Failure>,
    pub wall: Duration,
}

impl Report {
    pub fn failed(&self) -> u64 {
        self.counts
            .iter()
            .map(|(_, c)| c[2..].iter().sum::<u64>())
            .sum()
    }

    pub fn table(&self) -> String {
        let mut s = format!("{:<9} {:>10}", "format", "inputs");
        for k in KINDS {
            s += &format!(" {k:>11}");
        }
        s += "\n";
        for (f, c) in &self.counts {
            s += &format!("{:<9} {:>10}", f.name(), c.iter().sum::<u64>());
            for n in c {
                s += &format!(" {n:>11}");
            }
            s += "\n";
        }
        s
    }
}

/// Fuzz `cfg.iterations` inputs; `progress` is called now and then with
/// the inputs done and the report so far.
pub fn fuzz(corpus: &corpus::Corpus, cfg: &Config, progress: &dyn Fn(u64, &Report)) -> Report {
    let scratch = Scratch::new().expect("a scratch directory in the temp dir");
    let mut gen = mutate::Mutator::new(corpus, cfg.seed);
    let mut report = Report {
        counts: cfg.formats.iter().map(|&f| (f, [0; KINDS.len()])).collect(),
        failures: Vec::new(),
        wall: Duration::ZERO,
    };
    let t0 = Instant::now();
    let mut seen = Vec::new();
    for i in 0..cfg.iterations {
        let k = (i % cfg.formats.len() as u64) as usize;
        let f = cfg.formats[k];
        let input = gen.next(f);
        let o = exec::execute(f, &input, &cfg.limits, &scratch);
        report.counts[k].1[o.kind()] += 1;
        if o.is_failure() && !seen.contains(&(f, o.signature())) {
            seen.push((f, o.signature()));
            // A timeout costs up to its time budget per try.
            let runs = match o {
                Outcome::Timeout(_) => cfg.minimize_runs.min(3),
                _ => cfg.minimize_runs,
            };
            let min = exec::minimize(f, &input, &o, &cfg.limits, &scratch, runs);
            let name = format!("{}-{}-{i}.{}", f.name(), KINDS[o.kind()], f.ext());
            let saved = (cfg.out.as_ref()).and_then(|d| exec::save(d, &name, &min, &o).ok());
            report.failures.push(Failure {
                format: f,
                input: min,
                outcome: o,
                saved,
            });
        }
        if (i + 1) % 1000 == 0 {
            report.wall = t0.elapsed();
            progress(i + 1, &report);
        }
    }
    report.wall = t0.elapsed();
    report
}

/// `schedlab fuzz`: exit 0 when every input ended in success or an input
/// error within its budget, 1 otherwise, 2 when the corpus is missing.
pub fn main(args: &FuzzArgs) -> i32 {
    let corpus = match corpus::Corpus::load(&args.root) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("schedlab: error: fuzz: {e} (run from the repository, or --root DIR)");
            return 2;
        }
    };
    let cfg = Config {
        formats: args.format.expand(),
        iterations: args.iterations,
        seed: args.seed,
        out: args.out.clone(),
        limits: CLI_LIMITS,
        minimize_runs: 300,
    };
    println!(
        "schedlab fuzz: {} inputs, seed {}, budget per input: {} ms simulated, {} events per CPU and task, {:?} CPU + {:?} per CPU and task + {:?} per event + {:?} per CPU and task swept by --check, {} MiB peak RSS",
        cfg.iterations,
        cfg.seed,
        cfg.limits.sim_ns / 1_000_000,
        cfg.limits.events_per_entity,
        cfg.limits.time,
        cfg.limits.time_per_entity,
        cfg.limits.time_per_event,
        cfg.limits.time_per_swept,
        cfg.limits.memory_kib / 1024
    );
    // The workloads' warnings would drown the counts.
    let stderr = silence_stderr();
    let last = Mutex::new(Instant::now());
    let report = fuzz(&corpus, &cfg, &|n, r| {
        let mut l = last.lock().unwrap_or_else(|e| e.into_inner());
        if l.elapsed() >= Duration::from_secs(60) {
            *l = Instant::now();
            println!(
                "{n} inputs, {} failed, {:.0} s",
                r.failed(),
                r.wall.as_secs_f64()
            );
        }
    });
    restore_stderr(stderr);
    print!("{}", report.table());
    let n: u64 = report
        .counts
        .iter()
        .map(|(_, c)| c.iter().sum::<u64>())
        .sum();
    println!(
        "{n} inputs in {:.1} s ({:.0} per second)",
        report.wall.as_secs_f64(),
        n as f64 / report.wall.as_secs_f64().max(1e-9)
    );
    for f in &report.failures {
        let at = (f.saved.as_ref())
            .map_or(format!("{:?}", String::from_utf8_lossy(&f.input)), |p| {
                p.display().to_string()
            });
        println!("FAIL {} {}: {at}", f.format.name(), f.outcome.describe());
    }
    i32::from(report.failed() > 0)
}

/// Point stderr at /dev/null; returns the saved descriptor.
fn silence_stderr() -> Option<i32> {
    // SAFETY: plain descriptor calls on this process's own stderr.
    unsafe {
        let saved = libc::dup(2);
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
        if saved < 0 || null < 0 {
            return None;
        }
        libc::dup2(null, 2);
        libc::close(null);
        Some(saved)
    }
}

fn restore_stderr(saved: Option<i32>) {
    if let Some(fd) = saved {
        // SAFETY: `fd` is the descriptor `silence_stderr` duplicated.
        unsafe {
            libc::dup2(fd, 2);
            libc::close(fd);
        }
    }
}
