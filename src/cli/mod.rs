//! The command line: parse, call the library, print. The exit statuses
//! are [`EXIT_CODES`].

use crate::report::{json::to_json, summary::summary};
use crate::run::{run_in, RunError};
use crate::scenario::flags::{load_scenario, read_scenario, set_output, OutArgs, ScenarioArgs};
use crate::scenario::{feature_lines, InputError, Scenario, Source, DEMO};
use crate::util::fs::OutputSet;
use crate::util::sink::{Sink, STDIO};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::path::PathBuf;

mod complete;
mod generate;

#[derive(Parser)]
#[command(
    name = "schedlab",
    version = crate::util::version::LONG,
    about = "A fast, deterministic simulator of the Linux kernel's CPU scheduler",
    long_about = "A fast, deterministic simulator of the Linux kernel's CPU scheduler.\n\
        With no command it runs a built-in demo scenario.",
    after_help = "Examples:\n  schedlab run --machine xeon-8269cy --workload hackbench:groups=1,loops=1000 --seed 1\n  \
        schedlab run scenarios/hackbench.toml --set kernel.hz=1000 --json out.json\n  \
        schedlab run --cgroup /a:weight=300 -w stress-ng:cpu=4,cgroup=/a -w stress-ng:cpu=4\n  \
        schedlab repro pelt\n  schedlab machines"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run one simulation and print the benchmark's output and a perf-stat-like summary
    #[command(
        after_help = "Examples:\n  schedlab run --machine vm-2 --workload pipe:loops=100000 --json out.json\n  \
        schedlab run scenarios/hackbench.toml --set kernel.hz=1000 --set kernel.features.PLACE_LAG=false\n  \
        schedlab run --machine host --workload periodic:tasks=4,run=8ms,sleep=8ms --duration 3s"
    )]
    Run(RunArgs),
    /// Replay a recorded trace (perf script, ftrace or trace-cmd report text) causally
    #[command(
        after_help = "Examples:\n  perf sched record -- perf bench sched messaging -p -g 1 -l 100 && perf script > t.txt\n  \
        schedlab replay t.txt --fidelity --select sched-messaging\n  \
        schedlab replay t.txt --machine xeon-8269cy --set kernel.features.WAKEUP_PREEMPTION=false"
    )]
    Replay(ReplayArgs),
    /// Record a command on this machine (perf record -a: scheduler and syscall tracepoints, fds from /proc) into a trace that `replay` replays causally
    #[command(
        long_about = "Record a command on this machine into a trace that `replay` replays causally.\n\n\
        Runs CMD under `perf record -a` with the scheduler tracepoints and the syscall events of reads \
        and writes (and futex, poll and sleep calls), samples the pipes and sockets behind the fds of \
        CMD's processes from /proc/PID/fd every millisecond (socket peers from sock_diag), reads the \
        autogroup of every process (/proc/PID/autogroup, when a poll first sees it), and writes \
        perf script text with `# fd` and `# autogroup` lines (docs/replay.md, \"Recording a command\", \
        \"Autogroups\"). Needs perf on PATH \
        (or --perf), root or kernel.perf_event_paranoid = -1, tracefs with the sched and syscalls \
        tracepoints; otherwise it exits 2 saying which. The file is written only when complete; a \
        command that fails is recorded, and record exits 1.",
        after_help = "Examples:\n  schedlab record -o messaging.txt -- perf bench sched messaging -g 1 -l 100\n  \
        schedlab replay messaging.txt --fidelity"
    )]
    Record(crate::record::RecordArgs),
    /// Run the built-in demo scenario
    Demo(OutArgs),
    /// List machine presets (one line each), or one machine's sched domains
    #[command(
        after_help = "Examples:\n  schedlab machines\n  schedlab machines --domains power10-96"
    )]
    Machines(MachinesArgs),
    /// List workloads with their parameters and defaults
    #[command(after_help = "Example:\n  schedlab workloads")]
    Workloads,
    /// List scheduler features with their defaults
    #[command(after_help = "Examples:\n  schedlab features\n  \
            schedlab run -w hackbench:groups=2 --set kernel.features.RUN_TO_PARITY=false\n  \
            schedlab run -w hackbench:groups=2 --set kernel.features=\"NO_RUN_TO_PARITY NO_PLACE_LAG\"")]
    Features,
    /// Why did a task wait: re-run a scenario and tell the task's story around its longest wait (or a time), with the scheduler's decisions
    #[command(after_help = "Examples:\n  \
        schedlab explain demo --task hackbench-recv --worst-wait\n  \
        schedlab explain --machine vm-2 -w hackbench:groups=1,loops=50 --task 1012 --at 3ms")]
    Explain(crate::explain::ExplainArgs),
    /// Run two configurations N times each and test which metrics differ
    #[command(after_help = "Examples:\n  \
        schedlab compare scenarios/seed-000-wakelist/xeon-context1.toml --set-a kernel.wakelist=on_cpu_nr_le1 --set-b kernel.wakelist=idle --runs 5\n  \
        schedlab compare a.toml b.toml --runs 10 --json cmp.json")]
    Compare(crate::compare::CompareArgs),
    /// Run every grid point × seed of a sweep file into a results directory
    #[command(after_help = "Examples:\n  \
        schedlab sweep scenarios/sweeps/wakelist.toml --jobs 2 --out results/wakelist\n  \
        schedlab sweep scenarios/sweeps/wakelist.toml --out results/wakelist --resume --html results/wakelist/report.html")]
    Sweep(crate::sweep::SweepArgs),
    /// Write the HTML report of a sweep's results directory
    #[command(
        name = "sweep-report",
        after_help = "Example:\n  schedlab sweep-report results/wakelist"
    )]
    SweepReport(crate::sweep::ReportArgs),
    /// Reproduce a seed's experiment, before vs after, beside the seed's numbers
    #[command(after_help = "Examples:\n  schedlab repro wakelist --runs 3\n  schedlab repro swb")]
    Repro(crate::repro::ReproArgs),
    /// Measure simulator speed: events and context switches per wall second, peak RSS
    #[command(
        after_help = "Examples:\n  schedlab bench\n  schedlab bench --case hackbench --case periodic-64 --json bench.json\n  schedlab bench --digest\n  schedlab bench --distributions old/schedlab --seeds 30"
    )]
    Bench(crate::bench::BenchArgs),
    /// Fuzz the input formats: every input must end in success or an input error, within its budget
    #[command(
        after_help = "Examples:\n  schedlab fuzz --iterations 100000\n  schedlab fuzz --format rtapp --iterations 1000000 --seed 7 --out fuzz-out"
    )]
    Fuzz(crate::fuzz::FuzzArgs),
    /// Check the simulator against this host's real kernel (`validate pelt`, `validate bench`)
    #[command(
        after_help = "Examples:\n  schedlab validate pelt --quick\n  schedlab validate bench --quick"
    )]
    Validate(crate::validate::ValidateArgs),
    /// Measure this host's kernel primitives: a machine file for --machine FILE.toml, kept for --machine host
    #[command(
        after_help = "Examples:\n  schedlab calibrate --output my-host.toml\n  schedlab calibrate --quick"
    )]
    Calibrate(crate::calibrate::CalibrateArgs),
    /// List every scenario key (for a file, or --set KEY=VALUE) with type, default, unit and meaning
    #[command(
        after_help = "Examples:\n  schedlab keys\n  schedlab keys | grep wakelist\n  \
        schedlab run -w pipe --set kernel.wakelist=idle"
    )]
    Keys,
    /// Print the JSON Schema of `run --json` (docs/schema.json), inferred from runs of every workload kind
    #[command(after_help = "Example:\n  schedlab schema > docs/schema.json")]
    Schema,
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell): commands, flags and values (presets, workload kinds, keys)
    #[command(after_help = "Examples:\n  \
        schedlab completions bash > ~/.local/share/bash-completion/completions/schedlab\n  \
        schedlab completions zsh > ~/.zfunc/_schedlab\n  \
        schedlab completions fish > ~/.config/fish/completions/schedlab.fish")]
    Completions {
        /// The shell to complete for
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page schedlab(1), or write one page per command into a directory
    #[command(after_help = "Examples:\n  schedlab man | man -l -\n  schedlab man --dir man/man1")]
    Man {
        /// Write schedlab.1 and a page per subcommand (schedlab-run.1, ...) into this directory
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

#[derive(Args)]
struct MachinesArgs {
    /// Print this machine's sched domains like the kernel's boot-time
    /// sched_domain debug output and /proc/schedstat domain lines
    #[arg(long, value_name = "MACHINE")]
    domains: Option<String>,
}

#[derive(Args)]
struct RunArgs {
    /// Scenario file (TOML; `-` reads it from stdin); flags below override its keys
    scenario: Option<PathBuf>,
    #[command(flatten)]
    common: ScenarioArgs,
    /// Verify the scheduler's invariants: what each event touched, and the whole machine once per tick [sim.check, sim.check_every]
    #[arg(long)]
    check: bool,
    /// Exit 0, not 4, when a benchmark did not finish within --duration
    #[arg(long)]
    allow_unfinished: bool,
    #[command(flatten)]
    out: OutArgs,
}

#[derive(Args)]
struct ReplayArgs {
    /// The trace: `perf script` output of `perf sched record`, ftrace text, `trace-cmd report` (or -R) text or systrace text (`-` reads it from stdin)
    file: PathBuf,
    /// Compare the replay on the machine (default `host`) with the recorded numbers, per task and in total
    #[arg(long)]
    fidelity: bool,
    /// Replay only tasks with these comms, separated by `|` (others' wakeups become timers)
    #[arg(long, value_name = "COMM|COMM")]
    select: Option<String>,
    /// Infer an edge where a waker (or parent) preempted by its wakee (or new child) waits for that task's next switch-out (docs/replay.md)
    #[arg(long)]
    handover: bool,
    /// Keep each task on the CPUs the trace shows it running on (docs/replay.md)
    #[arg(long)]
    pin: bool,
    /// Let any recorded waker of a task end its next wait, not only the one the trace shows for it (docs/replay.md)
    #[arg(long)]
    any_waker: bool,
    /// Put every task at the root task group, not in the autogroup its `# autogroup` line names; without this each recorded autogroup is a task group at its nice's weight, unless the replay is placed in a cgroup (--set workload.0.cgroup=PATH: the placement wins) or --cgroup declares that autogroup's path (the declared weight wins) (docs/replay.md, "Autogroups")
    #[arg(long)]
    no_autogroup: bool,
    #[command(flatten)]
    run: RunArgs,
}

/// `replay FILE` is `run --workload replay:file=FILE,...` on `host` by default.
fn load_replay(args: &ReplayArgs) -> Result<(Source, Scenario), InputError> {
    let mut spec = format!("replay:file={}", args.file.display());
    if args.fidelity {
        spec += ",fidelity=true";
    }
    if let Some(s) = &args.select {
        spec += &format!(",select={s}");
    }
    if args.handover {
        spec += ",handover=true";
    }
    if args.pin {
        spec += ",pin=true";
    }
    if args.any_waker {
        spec += ",any_waker=true";
    }
    if args.no_autogroup {
        spec += ",autogroup=false";
    }
    if !args.run.common.workloads.is_empty() {
        return Err(InputError::new(
            "replay: --workload cannot be combined with a trace",
        ));
    }
    let stdin = std::path::Path::new(crate::util::sink::STDIO);
    if args.file == stdin && args.run.scenario.as_deref() == Some(stdin) {
        return Err(InputError::new(
            "replay: the trace and the scenario cannot both be read from stdin (-)",
        ));
    }
    let mut common = args.run.common.clone();
    common.workloads = vec![spec];
    common.machine = common.machine.or(Some("host".into()));
    let run = &args.run;
    load_scenario(
        read_scenario(run.scenario.as_ref())?,
        &common,
        run.check,
        Some(&run.out),
        &[],
    )
}

/// Load and merge a scenario from a file (or the demo) and flags.
fn load(args: &RunArgs) -> Result<(Source, Scenario), InputError> {
    load_scenario(
        read_scenario(args.scenario.as_ref())?,
        &args.common,
        args.check,
        Some(&args.out),
        &[],
    )
}

/// Exit status of a run whose benchmark did not finish (`--allow-unfinished`: 0).
pub const EXIT_UNFINISHED: i32 = 4;

fn run_and_report(src: &Source, sc: &Scenario, allow_unfinished: bool) -> i32 {
    // Every output is opened before the run: a bad path fails at once.
    let outs = OutputSet::new();
    let open = |flag: &str, path: &Option<String>| match path {
        Some(p) => Sink::open(p, Some(&outs))
            .map(Some)
            .map_err(|e| eprintln!("schedlab: error: {flag}: {e}")),
        None => Ok(None),
    };
    let (Ok(json), Ok(schedstat)) = (
        open("--json", &sc.output.json),
        open("--schedstat", &sc.output.schedstat),
    ) else {
        return 2;
    };
    let from_host = src.from_host();
    if !sc.output.quiet && !from_host.is_empty() {
        eprintln!("schedlab: from the host kernel: {}", from_host.join(", "));
    }
    crate::progress::install(crate::progress::Kind::SimTime, sc.output.quiet);
    let result = match run_in(src, sc, None, &outs) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("schedlab: error: {e}");
            return match e {
                RunError::Input(_) => 2,
                RunError::Invariant(_) | RunError::Budget(_) => 3,
            };
        }
    };
    if let Some(note) = crate::run::run_time_note(&result).filter(|_| !sc.output.quiet) {
        eprintln!("schedlab: {note}");
    }
    if sc.machine.trim() == "host" && !sc.output.quiet {
        use crate::machine::host;
        let note = host::costs_note(&result.kernel.machine, host::cache_dir().as_deref());
        eprintln!("schedlab: {note}");
    }
    let json_text =
        || serde_json::to_string_pretty(&to_json(&result.view())).unwrap_or_default() + "\n";
    let written = write_out(json, json_text)
        .and_then(|_| write_out(schedstat, || result.kernel.schedstat_text()))
        .and_then(|_| outs.commit());
    if let Err(e) = written {
        eprintln!("schedlab: error: cannot write {e}");
        return 2;
    }
    let reports: Vec<_> = (result.workloads.iter())
        .map(|(w, tasks)| w.report(&result.kernel, tasks))
        .collect();
    // With an output on stdout (`-`), the human-readable text goes to stderr.
    let text = if sc.output.quiet {
        reports
            .iter()
            .flat_map(|r| &r.lines)
            .map(|l| format!("{l}\n"))
            .collect()
    } else {
        summary(&result.view())
    };
    if stdout_taken(sc) {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    if let Some(notice) = wrote_notice(sc) {
        eprintln!("schedlab: {notice}");
    }
    let unfinished = reports
        .iter()
        .any(|r| r.fields.get("finished") == Some(&serde_json::Value::Bool(false)));
    if unfinished && !allow_unfinished {
        eprintln!(
            "schedlab: a benchmark did not finish (exit {EXIT_UNFINISHED}; raise --duration, or --allow-unfinished)"
        );
        return EXIT_UNFINISHED;
    }
    0
}

/// What --trace and --html wrote, unless quiet: the files worth opening
/// are easy to lose among a long summary.
fn wrote_notice(sc: &Scenario) -> Option<String> {
    let o = &sc.output;
    let trace = o.trace.as_ref().map(|t| t.path.as_str());
    let files: Vec<&str> = [trace, o.html.as_deref()]
        .into_iter()
        .flatten()
        .filter(|p| !p.is_empty())
        .collect();
    let text = crate::util::fs::written(&files);
    (!o.quiet && !text.is_empty()).then(|| format!("wrote {text}"))
}

/// Write and stage one output of the set, if it was asked for.
fn write_out(file: Option<Sink>, text: impl FnOnce() -> String) -> std::io::Result<()> {
    match file {
        Some(mut f) => {
            f.write_all(text().as_bytes())?;
            f.commit()
        }
        None => Ok(()),
    }
}

/// True when --json, --trace or --schedstat writes to stdout.
fn stdout_taken(sc: &Scenario) -> bool {
    let o = &sc.output;
    let trace = o.trace.as_ref().map(|t| t.path.as_str());
    [o.json.as_deref(), trace, o.schedstat.as_deref()].contains(&Some(STDIO))
}

/// Every exit status schedlab uses, listed at the end of each `--help`.
pub const EXIT_CODES: &str = "Exit codes:
  0      success
  1      a sweep run failed, a `validate` check did not pass, or the command `record` ran failed (the file is written)
  2      bad input (the file, line and key or flag are named), or an output that cannot be written
  3      --check found a broken scheduler invariant
  4      a benchmark did not finish within --duration (run, replay, demo; 0 with --allow-unfinished)
  128+N  stopped by signal N (130 Ctrl-C, 143 SIGTERM), temporary output files removed";

/// The command line as clap sees it: the derived definition with the
/// exit codes after every command's help.
pub fn command() -> clap::Command {
    fn with_codes(c: clap::Command) -> clap::Command {
        let help = match c.get_after_help() {
            Some(h) => format!("{h}\n\n{EXIT_CODES}"),
            None => EXIT_CODES.to_string(),
        };
        c.after_help(help).mut_subcommands(with_codes)
    }
    // `replay` runs on this host unless told otherwise.
    let host = "Machine preset (`schedlab machines`), `smp:cpus=N,...`, `host` or a machine file \
        `FILE.toml` [machine.preset] [default: host, the machine the trace was recorded on]";
    with_codes(Cli::command()).mut_subcommand("replay", |r| r.mut_arg("machine", |a| a.help(host)))
}

pub fn main() -> i32 {
    let cli = match Cli::from_arg_matches(&command().get_matches()) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    match cli.cmd {
        None => demo(&OutArgs {
            json: None,
            quiet: false,
            schedstat: None,
            trace: Default::default(),
        }),
        Some(Cmd::Demo(out)) => demo(&out),
        Some(Cmd::Replay(args)) => match load_replay(&args) {
            Ok((src, sc)) => run_and_report(&src, &sc, args.run.allow_unfinished),
            Err(e) => {
                eprintln!("schedlab: error: {e}");
                2
            }
        },
        Some(Cmd::Run(args)) => match load(&args) {
            Ok((src, sc)) => run_and_report(&src, &sc, args.allow_unfinished),
            Err(e) => {
                eprintln!("schedlab: error: {e}");
                2
            }
        },
        Some(Cmd::Machines(MachinesArgs {
            domains: Some(spec),
        })) => print_domains(&spec),
        Some(Cmd::Machines(_)) => {
            for (name, desc) in crate::machine::presets() {
                println!("{name:<14} {desc}");
            }
            println!(
                "{:<14} generic SMP machine: smp:cpus=N[,smt=S,llc=L,sockets=K]",
                "smp:"
            );
            let host = crate::machine::from_spec("host")
                .map(|m| m.description)
                .unwrap_or_else(|e| format!("unavailable here: {e}"));
            println!(
                "{:<14} this machine, read from /sys/devices/system/cpu: {host}",
                "host"
            );
            0
        }
        Some(Cmd::Workloads) => {
            for k in crate::workload::kinds::KINDS {
                println!("{:<10} {}:{}  # {}", k.name, k.name, k.usage(), k.doc);
            }
            0
        }
        Some(Cmd::Features) => {
            for l in feature_lines() {
                println!("{l}");
            }
            0
        }
        Some(Cmd::Record(args)) => crate::record::main(&args),
        Some(Cmd::Bench(args)) => crate::bench::main(&args),
        Some(Cmd::Fuzz(args)) => crate::fuzz::main(&args),
        Some(Cmd::Compare(args)) => crate::compare::main(&args),
        Some(Cmd::Explain(args)) => crate::explain::main(&args),
        Some(Cmd::Repro(args)) => crate::repro::main(&args),
        Some(Cmd::Sweep(args)) => crate::sweep::main(&args),
        Some(Cmd::SweepReport(args)) => crate::sweep::report_main(&args),
        Some(Cmd::Validate(args)) => crate::validate::main(&args),
        Some(Cmd::Calibrate(args)) => crate::calibrate::main(&args),
        Some(Cmd::Keys) => {
            print!("{}", crate::scenario::keys::listing());
            0
        }
        Some(Cmd::Schema) => generate::schema(),
        Some(Cmd::Completions { shell }) => generate::completions(command(), shell),
        Some(Cmd::Man { dir }) => generate::man(command(), dir.as_deref()),
    }
}

/// `schedlab machines --domains SPEC`.
fn print_domains(spec: &str) -> i32 {
    use crate::kernel::sched_domain::{cpumask_hex, SchedDomains};
    let m = match crate::machine::from_spec(spec) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("schedlab: error: --domains: {e}");
            return 2;
        }
    };
    let sd = SchedDomains::build(&m);
    println!("{}: {}\n", m.name, m.description);
    for cpu in 0..m.nr_cpus() {
        print!("{}", sd.debug_text(cpu));
    }
    println!("\n/proc/schedstat domain lines at boot (version 17: name, span, 45 counters):");
    for cpu in 0..m.nr_cpus() {
        println!("cpu{cpu}");
        for (lvl, d) in sd.cpu[cpu].iter().enumerate() {
            let zeros = vec!["0"; 45].join(" ");
            println!(
                "domain{lvl} {} {} {zeros}",
                d.name,
                cpumask_hex(sd.span(d), m.nr_cpus())
            );
        }
    }
    0
}

fn demo(out: &OutArgs) -> i32 {
    println!(
        "schedlab demo: hackbench -pipe, 4 groups × 40 tasks, on a simulated 104-CPU Xeon 8269CY\n"
    );
    let loaded =
        Source::parse(Some("<built-in demo>".into()), DEMO.into()).and_then(|(src, mut t)| {
            set_output(&mut t, out)?;
            Ok((src, t))
        });
    let (src, t) = match loaded {
        Ok(x) => x,
        Err(e) => {
            eprintln!("schedlab: error: {e}");
            return 2;
        }
    };
    match Scenario::resolve(&src, &t) {
        Ok(sc) => {
            let rc = run_and_report(&src, &sc, false);
            if rc == 0 && !sc.output.quiet {
                println!(
                    "\nNext: change one thing, then compare (README, \"Five minutes with schedlab\"):\n  \
                     schedlab run --machine xeon-8269cy --workload hackbench:groups=8,loops=200,ipc=pipe \
                     --set kernel.features.WAKEUP_PREEMPTION=false\n  \
                     schedlab compare --machine xeon-8269cy --workload hackbench:groups=8,loops=200,ipc=pipe \
                     --set-b kernel.features.WAKEUP_PREEMPTION=false --runs 10\n\
                     What there is to change: schedlab keys, schedlab features, schedlab machines, schedlab workloads"
                );
            }
            rc
        }
        Err(e) => {
            eprintln!("schedlab: error: {e}");
            2
        }
    }
}
