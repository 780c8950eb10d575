//! One fuzzed input through the library entry points the command line
//! uses (`load_scenario`, then `run_in` with `--check`), within its budget,
//! and the minimizer that shrinks a failing input while it fails the same way.

use super::Format;
use crate::kernel::Budget;
use crate::run::{run_in, RunError};
use crate::scenario::flags::{load_scenario, ScenarioArgs};
use crate::util::fs::OutputSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What one input may cost.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Simulated time: a longer (or endless) run is cut here.
    pub sim_ns: u64,
    /// Events per CPU and task (see `kernel::Budget`).
    pub events_per_entity: u64,
    /// CPU time for a run of no CPUs and tasks ...
    pub time: Duration,
    /// ... what each CPU and task adds to it ...
    pub time_per_entity: Duration,
    /// ... what each event done adds ...
    pub time_per_event: Duration,
    /// ... and what each CPU and task a `--check` sweep visits adds.
    pub time_per_swept: Duration,
    /// Growth of peak resident memory, KiB.
    pub memory_kib: u64,
}

/// How one input ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// Rejected with an error (the command line's exit 2).
    InputError,
    Panic(String),
    Timeout(String),
    Memory(u64),
    /// A `--check` invariant failed (exit 3): the model broke on this input.
    Invariant(String),
}

/// The outcomes, in the order they are counted and printed.
pub const KINDS: [&str; 6] = [
    "ok",
    "input error",
    "panic",
    "timeout",
    "memory",
    "invariant",
];

impl Outcome {
    /// Index into [`KINDS`].
    pub fn kind(&self) -> usize {
        match self {
            Outcome::Ok => 0,
            Outcome::InputError => 1,
            Outcome::Panic(_) => 2,
            Outcome::Timeout(_) => 3,
            Outcome::Memory(_) => 4,
            Outcome::Invariant(_) => 5,
        }
    }

    pub fn is_failure(&self) -> bool {
        self.kind() >= 2
    }

    /// What a smaller input must reproduce, and what tells two failures
    /// apart: for a panic its place; for an invariant or a timeout the
    /// message with its numbers (pids, CPUs, counts) left out.
    pub fn signature(&self) -> String {
        match self {
            Outcome::Panic(m) => m.rsplit(" at ").next().unwrap_or(m).to_string(),
            Outcome::Invariant(m) | Outcome::Timeout(m) => {
                let words = m.split(|c: char| c.is_ascii_digit());
                let shape: String = words
                    .filter(|w| !w.is_empty())
                    .collect::<Vec<_>>()
                    .join("#");
                format!("{}: {shape}", KINDS[self.kind()])
            }
            o => KINDS[o.kind()].to_string(),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Outcome::Panic(m) | Outcome::Timeout(m) | Outcome::Invariant(m) => {
                format!("{}: {m}", KINDS[self.kind()])
            }
            Outcome::Memory(kib) => format!("memory: peak RSS grew {} MiB", kib / 1024),
            o => KINDS[o.kind()].to_string(),
        }
    }
}

/// The last panic's message and place, kept by the child's panic hook.
static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

/// In the child: record a panic's message and place instead of printing it.
fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        let p = info.payload();
        let msg = (p.downcast_ref::<&str>().map(|s| s.to_string()))
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(non-string payload)".into());
        let at = info
            .location()
            .map_or(String::new(), |l| format!(" at {}:{}", l.file(), l.line()));
        *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = format!("{msg}{at}");
    }));
}

/// Where inputs that must be files (rt-app, traces, machine files) go.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new() -> std::io::Result<Scratch> {
        let d = std::env::temp_dir().join(format!("schedlab-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&d)?;
        Ok(Scratch(d))
    }

    fn file(&self, name: &str, bytes: &[u8]) -> Result<String, String> {
        let p = self.0.join(name);
        std::fs::write(&p, bytes).map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(p.display().to_string())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

static FORK: Mutex<()> = Mutex::new(());

/// Run one input in a child process (fork): a panic, an abort (stack
/// overflow, failed allocation) or a run stuck inside one event stays in
/// the child, and the child's peak RSS is the input's own.
pub fn execute(f: Format, bytes: &[u8], lim: &Limits, scratch: &Scratch) -> Outcome {
    // One child at a time: a child forked by another thread would hold
    // this one's pipe open (and the pipe is closed on exec for others).
    let _one = FORK.lock().unwrap_or_else(|e| e.into_inner());
    let base = crate::util::rss::current_kib();
    let mut fds = [0; 2];
    // SAFETY: pipe2() fills `fds`; fork() duplicates this process, whose
    // child only runs the input, writes to the pipe and leaves by _exit.
    let pid = unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Outcome::Panic("pipe() failed".into());
        }
        libc::fork()
    };
    if pid == 0 {
        // SAFETY: in the child: close the read end, report, _exit (no
        // destructors or buffered output of the parent run twice).
        unsafe {
            libc::close(fds[0]);
            HEARTBEAT_FD.store(fds[1], Ordering::Relaxed);
            let msg = encode(&child(f, bytes, lim, scratch));
            libc::write(fds[1], msg.as_ptr().cast(), msg.len());
            libc::_exit(0);
        }
    }
    // SAFETY: the parent closes the write end it does not use.
    unsafe { libc::close(fds[1]) };
    let silence = lim.time * 2 + Duration::from_secs(1);
    let (report, timed_out) = read_report(fds[0], pid, silence);
    let (status, peak_kib) = reap(pid);
    let grown = peak_kib.saturating_sub(base);
    if timed_out {
        return Outcome::Timeout(format!(
            "silent for {silence:?} of CPU time: stuck in one event"
        ));
    }
    if grown > lim.memory_kib {
        return Outcome::Memory(grown);
    }
    match decode_report(&report) {
        Some(o) => o,
        None => Outcome::Panic(format!(
            "the run died: {} (stack overflow or failed allocation)",
            describe_status(status)
        )),
    }
}

/// The child's end of the pipe, for [`heartbeat`].
static HEARTBEAT_FD: AtomicI32 = AtomicI32::new(-1);

/// The byte a child writes each time its run checks its budget: the
/// parent waits for silence, not for the whole run, so a large valid input
/// may use the budget that grows with its size. A report never starts
/// with it (its first byte is an outcome's index).
const BEAT: u8 = 0xff;

/// In the child, from the event loop's budget check: "still running".
fn heartbeat() {
    let fd = HEARTBEAT_FD.load(Ordering::Relaxed);
    // SAFETY: a one-byte write to the child's own pipe end.
    unsafe { libc::write(fd, [BEAT].as_ptr().cast(), 1) };
}

/// The CPU time of this process: in a forked child, its own (POSIX
/// resets a child's CPU-time clock at fork).
fn cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// In the child: the input's outcome, a panic caught.
fn child(f: Format, bytes: &[u8], lim: &Limits, scratch: &Scratch) -> Outcome {
    quiet_panics();
    match catch_unwind(AssertUnwindSafe(|| run_input(f, bytes, lim, scratch))) {
        Ok(o) => o,
        Err(_) => Outcome::Panic(std::mem::take(
            &mut LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()),
        )),
    }
}

/// An outcome as its kind's index and message.
fn encode(o: &Outcome) -> Vec<u8> {
    let msg = match o {
        Outcome::Panic(m) | Outcome::Timeout(m) | Outcome::Invariant(m) => m.clone(),
        Outcome::Memory(k) => k.to_string(),
        _ => String::new(),
    };
    let mut v = vec![o.kind() as u8];
    v.extend_from_slice(msg.as_bytes());
    v
}

fn decode_report(b: &[u8]) -> Option<Outcome> {
    let (&k, msg) = b.split_first()?;
    let m = String::from_utf8_lossy(msg).into_owned();
    Some(match k {
        0 => Outcome::Ok,
        1 => Outcome::InputError,
        2 => Outcome::Panic(m),
        3 => Outcome::Timeout(m),
        4 => Outcome::Memory(m.parse().unwrap_or(0)),
        _ => Outcome::Invariant(m),
    })
}

/// Everything the child writes before it exits, or (what came, true) when
/// it has been stuck for `wait` (see [`stuck`]); the child is then killed.
fn read_report(fd: i32, pid: i32, wait: Duration) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let mut heard = (Instant::now(), child_cpu_time(pid));
    loop {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll on the pipe's read end, owned here.
        if unsafe { libc::poll(&mut p, 1, wait.as_millis() as i32) } == 0 {
            if !stuck(pid, heard, wait) {
                continue;
            }
            // SAFETY: our own child, and the read end we own.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::close(fd);
            }
            return (out, true);
        }
        // SAFETY: a read into `buf` from the pipe's read end.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            // SAFETY: closing the read end once, at EOF.
            unsafe { libc::close(fd) };
            return (out, false);
        }
        heard = (Instant::now(), child_cpu_time(pid));
        let mut chunk = &buf[..n as usize];
        if out.is_empty() {
            let report = chunk.iter().position(|&c| c != BEAT);
            chunk = &chunk[report.unwrap_or(chunk.len())..];
        }
        out.extend_from_slice(chunk);
    }
}

/// Whether a child silent since `heard` (wall time, its CPU time) is stuck
/// in one event: it spent `wait` of CPU time since, or (should its CPU clock
/// be unreadable, or the child not run at all) 20 × `wait` of wall time. A
/// child that is merely starved (the fuzzer at nice 19 beside busy
/// compilers gets ~1.5 % of a CPU) is not stuck.
fn stuck(pid: i32, heard: (Instant, Option<Duration>), wait: Duration) -> bool {
    let spent = match (heard.1, child_cpu_time(pid)) {
        (Some(then), Some(now)) => now.saturating_sub(then),
        _ => wait,
    };
    spent >= wait || heard.0.elapsed() >= wait * 20
}

/// A child's CPU time so far (its POSIX CPU-time clock), if readable.
fn child_cpu_time(pid: i32) -> Option<Duration> {
    let mut clock: libc::clockid_t = 0;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: both calls only fill the values passed by pointer.
    let ok = unsafe {
        libc::clock_getcpuclockid(pid, &mut clock) == 0 && libc::clock_gettime(clock, &mut ts) == 0
    };
    ok.then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// The replay flags an input is run with: a subset of `handover`, `pin`
/// and `any_waker` drawn from its bytes (the same input, the same flags),
/// so that every combination meets mutated traces.
fn replay_flags(bytes: &[u8]) -> String {
    let bits = bytes
        .iter()
        .fold(0u32, |a, &b| a.wrapping_mul(31).wrapping_add(b as u32));
    ["handover", "pin", "any_waker"]
        .iter()
        .enumerate()
        .filter(|(i, _)| bits >> i & 1 == 1)
        .map(|(_, f)| format!(",{f}=true"))
        .collect()
}

/// Wait for the child: its status and peak RSS (KiB).
fn reap(pid: i32) -> (i32, u64) {
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    (status, ru.ru_maxrss.max(0) as u64)
}

fn describe_status(status: i32) -> String {
    if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("exit {} without a report", libc::WEXITSTATUS(status))
    }
}

/// The scenario text and flags an input stands for.
fn decode(
    f: Format,
    bytes: &[u8],
    scratch: &Scratch,
) -> Result<(String, String, ScenarioArgs), String> {
    let text = String::from_utf8_lossy(bytes).into_owned();
    let mut args = ScenarioArgs::default();
    match f {
        Format::Scenario | Format::All => return Ok(("fuzz.toml".into(), text, args)),
        Format::Rtapp => {
            args.machine = Some("vm-2".into());
            args.workloads = vec![format!("rtapp:file={}", scratch.file("fuzz.json", bytes)?)];
        }
        Format::Trace => {
            args.machine = Some("smp:cpus=4".into());
            let file = scratch.file("fuzz.txt", bytes)?;
            args.workloads = vec![format!("replay:file={file}{}", replay_flags(bytes))];
        }
        Format::Spec if text.trim_start().starts_with(['[', '#']) => {
            args.machine = Some(scratch.file("fuzz-machine.toml", bytes)?);
            args.workloads = vec!["pipe:loops=50".into()];
        }
        Format::Spec => {
            for line in text.lines() {
                let (flag, v) = line.split_once(' ').unwrap_or((line, ""));
                let v = v.to_string();
                match flag {
                    "--machine" => args.machine = Some(v),
                    "-w" => args.workloads.push(v),
                    "--cgroup" => args.cgroups.push(v),
                    "--duration" => args.duration = Some(v),
                    "--seed" => args.seed = Some(v.parse().map_err(|_| "bad --seed")?),
                    _ => args.sets.push(v),
                }
            }
        }
    }
    Ok(("fuzz".into(), String::new(), args))
}

fn run_input(f: Format, bytes: &[u8], lim: &Limits, scratch: &Scratch) -> Outcome {
    let Ok((file, text, args)) = decode(f, bytes, scratch) else {
        return Outcome::InputError;
    };
    let Ok((src, mut sc)) = load_scenario((Some(file), text), &args, true, None, &[]) else {
        return Outcome::InputError;
    };
    // No output files: a fuzzed path must not write anywhere.
    sc.output = Default::default();
    sc.output.quiet = true;
    sc.duration = Some(sc.duration.map_or(lim.sim_ns, |d| d.min(lim.sim_ns)));
    sc.budget = Some(Budget {
        events_per_entity: lim.events_per_entity,
        time: Some(lim.time),
        time_per_entity: lim.time_per_entity,
        time_per_event: lim.time_per_event,
        time_per_swept: lim.time_per_swept,
        clock: cpu_time,
        heartbeat: Some(heartbeat),
    });
    match run_in(&src, &sc, None, &OutputSet::new()) {
        Ok(_) => Outcome::Ok,
        Err(RunError::Input(_)) => Outcome::InputError,
        Err(RunError::Invariant(m)) => Outcome::Invariant(m),
        Err(RunError::Budget(m)) => Outcome::Timeout(m),
    }
}

/// Shrink a failing input, lines first, then bytes, while it still fails
/// with the same signature; at most `runs` executions.
pub fn minimize(
    f: Format,
    bytes: &[u8],
    want: &Outcome,
    lim: &Limits,
    scratch: &Scratch,
    mut runs: usize,
) -> Vec<u8> {
    let sig = want.signature();
    let mut cur = bytes.to_vec();
    for by_line in [true, false] {
        let mut chunk = units(&cur, by_line).len() / 2;
        while chunk >= 1 && runs > 0 {
            let mut i = 0;
            let mut shrunk = false;
            while i < units(&cur, by_line).len() && runs > 0 {
                let u = units(&cur, by_line);
                let end = (i + chunk).min(u.len());
                let cand: Vec<u8> = (u[..i].iter().chain(&u[end..]))
                    .flat_map(|s| s.iter().copied())
                    .collect();
                runs -= 1;
                if execute(f, &cand, lim, scratch).signature() == sig {
                    cur = cand;
                    shrunk = true;
                } else {
                    i += chunk;
                }
            }
            if !shrunk {
                chunk /= 2;
            }
        }
    }
    cur
}

/// An input cut into lines (each with its newline) or single bytes.
fn units(b: &[u8], by_line: bool) -> Vec<&[u8]> {
    if by_line {
        b.split_inclusive(|&c| c == b'\n').collect()
    } else {
        b.chunks(1).collect()
    }
}

/// Write a failing input and what happened to it into `dir`.
pub fn save(dir: &Path, name: &str, bytes: &[u8], o: &Outcome) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let p = dir.join(name);
    std::fs::write(&p, bytes)?;
    std::fs::write(p.with_extension("why"), o.describe() + "\n")?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::{child_cpu_time, stuck};
    use std::time::{Duration, Instant};

    /// Stuck means CPU time spent without a beat, not wall time: this
    /// process has spent more than 1 µs of CPU since its start, and not
    /// 100 s since now.
    #[test]
    fn stuck_counts_the_childs_cpu_time() {
        let me = std::process::id() as i32;
        let start = (Instant::now(), Some(Duration::ZERO));
        assert!(stuck(me, start, Duration::from_micros(1)));
        let now = (Instant::now(), child_cpu_time(me));
        assert!(now.1.is_some());
        assert!(!stuck(me, now, Duration::from_secs(100)));
    }
}
