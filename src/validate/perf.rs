//! The installed perf, for `validate bench`: run a benchmark under
//! `perf stat -x,`, read the counters and the benchmark's result, and
//! measure how much CPU the rest of the host used meanwhile (/proc/stat).

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The events every run counts, in `perf stat -e` syntax.
pub const EVENTS: &str = "context-switches,cpu-migrations,task-clock";

/// What perf stat counted for the benchmark's tasks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Counters {
    pub context_switches: u64,
    pub cpu_migrations: u64,
    pub task_clock_ns: u64,
}

/// What the benchmark printed: `Total time: X [sec]` and, for pipe,
/// `Y usecs/op` (more digits than the total).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BenchOut {
    pub total_s: f64,
    pub usecs_per_op: Option<f64>,
}

/// One real run: perf's numbers and the host around it.
#[derive(Clone, Copy, Debug)]
pub struct RealRun {
    pub counters: Counters,
    pub bench: BenchOut,
    /// Wall time of the whole `perf stat` command, s.
    pub wall_s: f64,
    /// CPU time of everything but the benchmark meanwhile, s.
    pub other_cpu_s: f64,
    /// Time the hypervisor gave this VM's vCPUs to others meanwhile, s.
    pub steal_s: f64,
}

/// Read the `perf stat -x,` lines among `text` (perf stat's stderr, where
/// the benchmark's own messages may also be). Fields: value, unit, event,
/// run time, percentage, …; a value may be `<not counted>`.
pub fn parse_stat_csv(what: &str, text: &str) -> Result<Counters, String> {
    parse_stat_csv_at(what, text, 1)
}

/// parse_stat_csv of a text that is line `first` onwards of a file.
pub fn parse_stat_csv_at(what: &str, text: &str, first: usize) -> Result<Counters, String> {
    let mut found: [Option<u64>; 3] = [None; 3];
    let names = ["context-switches", "cpu-migrations", "task-clock"];
    for (n, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split(',').collect();
        let Some(&event) = f.get(2) else { continue };
        // perf may append modifiers (`task-clock:u`).
        let event = event.split(':').next().unwrap_or(event).trim();
        let Some(i) = names.iter().position(|&e| e == event) else {
            continue;
        };
        let at = format!("{what}, line {}: {event}", n + first);
        let raw = f[0].trim();
        if raw.starts_with('<') {
            return Err(format!("{at} is {raw}: perf cannot count it here"));
        }
        let v: f64 = raw
            .parse()
            .map_err(|_| format!("{at}: cannot read the value `{raw}`"))?;
        found[i] = Some(match (i, f[1].trim()) {
            (2, unit) => {
                let per = ns_per(unit).ok_or_else(|| format!("{at}: unknown unit `{unit}`"))?;
                (v * per) as u64
            }
            _ => v as u64,
        });
    }
    let get = |i: usize| found[i].ok_or_else(|| format!("{what}: no `{}` count", names[i]));
    Ok(Counters {
        context_switches: get(0)?,
        cpu_migrations: get(1)?,
        task_clock_ns: get(2)?,
    })
}

/// Nanoseconds per unit of a task-clock value (`msec` in perf 6.1).
fn ns_per(unit: &str) -> Option<f64> {
    match unit {
        "" | "ns" | "nsec" => Some(1.0),
        "usec" | "us" => Some(1e3),
        "msec" | "ms" => Some(1e6),
        "sec" | "s" => Some(1e9),
        _ => None,
    }
}

/// Read `perf bench sched pipe|messaging` output (default format).
pub fn parse_bench(what: &str, text: &str) -> Result<BenchOut, String> {
    parse_bench_at(what, text, 1)
}

/// parse_bench of a text that is line `first` onwards of a file.
pub fn parse_bench_at(what: &str, text: &str, first: usize) -> Result<BenchOut, String> {
    let mut total_s = None;
    let mut usecs_per_op = None;
    for (n, line) in text.lines().enumerate() {
        let number = |s: &str, field: &str| {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| {
                    format!(
                        "{what}, line {}: cannot read {field} in `{}`",
                        n + first,
                        line.trim()
                    )
                })
        };
        if let Some((_, rest)) = line.split_once("Total time:") {
            let secs = rest.split('[').next().unwrap_or(rest);
            total_s = Some(number(secs, "the total time")?);
        } else if let Some(v) = line.trim().strip_suffix("usecs/op") {
            usecs_per_op = Some(number(v, "usecs/op")?);
        }
    }
    Ok(BenchOut {
        total_s: total_s.ok_or_else(|| format!("{what}: no `Total time: X [sec]` line"))?,
        usecs_per_op,
    })
}

/// How the user gets perf on this system.
const INSTALL: &str = "install it (Debian: `apt-get install linux-perf`) or give --perf PATH";

/// `perf --version`: the version string, or why perf cannot run.
pub fn version(bin: &Path) -> Result<String, String> {
    let out = spawn(Command::new(bin).arg("--version"), bin)?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || text.is_empty() {
        return Err(failed(&format!("{} --version", bin.display()), &out));
    }
    Ok(text)
}

/// `perf stat -x, -e EVENTS -- [taskset -c CPU] perf ARGS…`.
pub fn stat_command(bin: &Path, args: &[String], pin: Option<usize>) -> Command {
    let mut cmd = Command::new(bin);
    cmd.args(["stat", "-x,", "-e", EVENTS, "--"]);
    if let Some(cpu) = pin {
        cmd.args(["taskset", "-c", &cpu.to_string()]);
    }
    cmd.arg(bin).args(args);
    cmd
}

/// Run the benchmark once under perf stat.
pub fn run(bin: &Path, args: &[String], pin: Option<usize>) -> Result<RealRun, String> {
    let mut cmd = stat_command(bin, args, pin);
    let line = command_line(&cmd);
    let before = CpuStat::read()?;
    let start = Instant::now();
    let out = spawn(&mut cmd, bin)?;
    let wall_s = start.elapsed().as_secs_f64();
    let after = CpuStat::read()?;
    if !out.status.success() {
        return Err(failed(&line, &out));
    }
    let counters = parse_stat_csv(&format!("stderr of `{line}`"), &text(&out.stderr))?;
    let bench = parse_bench(&format!("output of `{line}`"), &text(&out.stdout))?;
    let busy = after.busy_s - before.busy_s;
    Ok(RealRun {
        counters,
        bench,
        wall_s,
        other_cpu_s: (busy - counters.task_clock_ns as f64 / 1e9).max(0.0),
        steal_s: after.steal_s - before.steal_s,
    })
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The command as a shell line, for messages.
pub fn command_line(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Run to completion; a missing perf says how to install it.
fn spawn(cmd: &mut Command, bin: &Path) -> Result<Output, String> {
    cmd.output().map_err(|e| match e.kind() {
        ErrorKind::NotFound => format!("perf not found (`{}`): {INSTALL}", bin.display()),
        _ => format!("cannot run `{}`: {e}", command_line(cmd)),
    })
}

/// A failed command: its exit status and stderr (perf_event_paranoid and
/// the like are explained there).
fn failed(line: &str, out: &Output) -> String {
    let err = text(&out.stderr);
    let err = err.trim();
    let hint = if err.contains("perf_event_paranoid") {
        "\n(as root, `sysctl kernel.perf_event_paranoid=1` allows it)"
    } else if err.contains("perf not found for kernel") {
        "\n(Debian's perf wrapper wants the perf of the running kernel: install `linux-perf`)"
    } else {
        ""
    };
    format!("`{line}` failed ({}):\n{err}{hint}", out.status)
}

/// Length of one idle check of `wait_idle`.
const IDLE_WINDOW: Duration = Duration::from_millis(500);
/// The host counts as idle when everything together used less CPU than
/// this during a window (about 4 % of one CPU; /proc/stat has 10 ms ticks).
const IDLE_BUSY_S: f64 = 0.02;

/// Wait until a whole IDLE_WINDOW passes with the host idle, at most
/// `max`; whether it did.
pub fn wait_idle(max: Duration) -> Result<bool, String> {
    let start = Instant::now();
    while start.elapsed() < max {
        let a = CpuStat::read()?;
        std::thread::sleep(IDLE_WINDOW);
        if CpuStat::read()?.busy_s - a.busy_s < IDLE_BUSY_S {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The host-wide CPU times of /proc/stat's `cpu` line, in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuStat {
    /// user + nice + system + irq + softirq (guest time is within user).
    pub busy_s: f64,
    pub steal_s: f64,
}

impl CpuStat {
    pub fn read() -> Result<CpuStat, String> {
        CpuStat::read_line("cpu")
    }

    /// The `cpuN` line of one CPU.
    pub fn read_cpu(cpu: usize) -> Result<CpuStat, String> {
        CpuStat::read_line(&format!("cpu{cpu}"))
    }

    fn read_line(name: &str) -> Result<CpuStat, String> {
        let path = PathBuf::from("/proc/stat");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("{}: {e} (needs a Linux host)", path.display()))?;
        CpuStat::parse_line(&text, name, clock_ticks())
    }

    /// The aggregate `cpu` line; `hz` is USER_HZ, its unit.
    pub fn parse(text: &str, hz: f64) -> Result<CpuStat, String> {
        CpuStat::parse_line(text, "cpu", hz)
    }

    /// The line named `name` (`cpu`, `cpu3`).
    pub fn parse_line(text: &str, name: &str, hz: f64) -> Result<CpuStat, String> {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .ok_or_else(|| format!("/proc/stat: no `{name}` line"))?;
        let v: Vec<f64> = line
            .split_whitespace()
            .skip(1)
            .map(|x| x.parse::<f64>().map(|t| t / hz))
            .collect::<Result<_, _>>()
            .map_err(|_| format!("/proc/stat: cannot read `{line}`"))?;
        if v.len() < 8 {
            return Err(format!("/proc/stat: `{line}` has fewer than 8 fields"));
        }
        // user nice system idle iowait irq softirq steal …
        Ok(CpuStat {
            busy_s: v[0] + v[1] + v[2] + v[5] + v[6],
            steal_s: v[7],
        })
    }
}

/// USER_HZ, the unit of /proc/stat.
fn clock_ticks() -> f64 {
    // SAFETY: sysconf only reads a constant of the C library.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_busy_and_steal() {
        let s = CpuStat::parse("cpu  100 2 30 900 5 1 4 7 0 0\ncpu0 1 2 3 4\n", 100.0).unwrap();
        assert_eq!(s.busy_s, 1.37);
        assert_eq!(s.steal_s, 0.07);
        assert!(CpuStat::parse("cpu0 1 2\n", 100.0).is_err());
        let s = CpuStat::parse_line(
            "cpu  1 1 1 1 1 1 1 1\ncpu1 0 0 50 0 0 0 0 3\n",
            "cpu1",
            100.0,
        );
        assert_eq!(
            s.unwrap(),
            CpuStat {
                busy_s: 0.5,
                steal_s: 0.03
            }
        );
        assert!(CpuStat::parse("cpu  1 x 3 4 5 6 7 8\n", 100.0)
            .unwrap_err()
            .contains("cannot read"));
    }
}
