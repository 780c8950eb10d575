//! Process creation: the UnixBench spawn loop (`fork`), the seed's fork
//! bomb (`forky`), and the costs of vfork, clone and exec.
//!
//! Measured on this VM (6.18, 2 vCPUs shared with other work; medians of
//! 5 runs of 1000): fork + _exit + waitpid 203 µs, vfork + _exit + waitpid
//! 42 µs, clone(CLONE_VM|SIGCHLD) + _exit + waitpid 22 µs, vfork + execve
//! (/bin/true) + waitpid 584 µs, fork + execve + waitpid 1014 µs.

/// A fork that shares the address space (vfork, clone(CLONE_VM)) costs
/// this % of a full fork: no page tables or VMAs to copy (22–42 µs
/// against 203 µs per cycle above).
pub const SHARED_MM_FORK_PCT: u64 = 20;
/// The exit of a task that shares its address space skips the mm
/// teardown: this % of `exit_ns` (same measurement).
pub const SHARED_MM_EXIT_PCT: u64 = 20;
/// execve of a small dynamically linked binary, kernel and ld.so startup
/// together, in % of `fork_ns`: 584 − 42 (the vfork cycle) − ~60 (the exit
/// of a process with its own mm) ≈ 480 µs ≈ 2.4 fork cycles; a fork cycle
/// is ~1.7 × `fork_ns` in the cost model, so ≈ 4 × `fork_ns`.
pub const EXEC_FORK_PCT: u64 = 400;

use super::params::Params;
use super::program::{Mark, Op};
use super::{marked_span, BenchResult, Builder, TaskSpec, MAX_TASKS};
use crate::kernel::completion::WaitHow;
use crate::kernel::task::Pid;
use crate::kernel::Kernel;
use serde_json::{json, Map};
use std::fmt::Write;
use std::rc::Rc;

/// How a parent creates its children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnMode {
    Fork,
    /// The parent sleeps on the vfork_done completion (killable) until the
    /// child execs or exits.
    Vfork,
    /// clone(CLONE_VM|SIGCHLD): shares the address space, no waiting.
    Clone,
}

impl SpawnMode {
    fn parse(p: &Params, options: &[&'static str]) -> Result<Self, String> {
        Ok(match p.choice("mode", options)? {
            "vfork" => SpawnMode::Vfork,
            "clone" => SpawnMode::Clone,
            _ => SpawnMode::Fork,
        })
    }

    fn name(&self) -> &'static str {
        match self {
            SpawnMode::Fork => "fork",
            SpawnMode::Vfork => "vfork",
            SpawnMode::Clone => "clone",
        }
    }

    /// The completion a vfork parent waits on (none for other modes).
    pub fn vfork_done(&self, k: &mut Kernel) -> usize {
        match self {
            SpawnMode::Vfork => k.completion_new("vfork_done"),
            _ => usize::MAX,
        }
    }

    /// The parent's ops that create `child` (`done` is its vfork_done).
    pub fn ops(&self, child: Pid, done: usize) -> Vec<Op> {
        match self {
            SpawnMode::Fork => vec![Op::Fork { child }],
            SpawnMode::Clone => vec![Op::CloneVm { child }],
            SpawnMode::Vfork => vec![
                Op::Vfork { child, done },
                Op::WaitForCompletion {
                    c: done,
                    how: WaitHow::KILLABLE,
                },
            ],
        }
    }
}

/// Create `n` children running `ops`, as processes of their own.
pub fn children(k: &mut Kernel, b: &mut Builder, n: u64, comm: &str, ops: &Rc<[Op]>) -> Vec<Pid> {
    (0..n)
        .map(|_| {
            b.task(
                k,
                TaskSpec {
                    comm,
                    group_of: None,
                    nice: 0,
                    allowed: None,
                    ops: ops.clone(),
                },
            )
        })
        .collect()
}

/// `fork:mode=fork|vfork|clone,loops=N`: UnixBench `spawn`, a loop of
/// create child, child exits at once, wait for it.
#[derive(Clone, Debug)]
pub struct Spawn {
    pub mode: SpawnMode,
    pub loops: u64,
}

impl Spawn {
    pub fn parse(p: &Params) -> Result<Self, String> {
        Ok(Spawn {
            mode: SpawnMode::parse(p, &["fork", "vfork", "clone"])?,
            loops: p.count_max("loops", 1000, MAX_TASKS - 1)?,
        })
    }

    pub fn build(&self, k: &mut Kernel, b: &mut Builder) {
        let done = self.mode.vfork_done(k);
        let parent = b.task(
            k,
            TaskSpec {
                comm: "spawn",
                group_of: None,
                nice: 0,
                allowed: None,
                ops: Rc::from(vec![]),
            },
        );
        let kids = children(k, b, self.loops, "spawn-child", &Rc::from(vec![Op::Exit]));
        let mut ops = vec![Op::Mark(Mark::Start)];
        for c in kids {
            ops.extend(self.mode.ops(c, done));
            ops.push(Op::WaitChild);
        }
        ops.extend([Op::Mark(Mark::Stop), Op::Exit]);
        k.tasks[parent].prog.ops = Rc::from(ops);
        b.launch(k, parent);
    }

    pub fn report(&self, k: &Kernel, tasks: &[Pid]) -> BenchResult {
        let ns = marked_span(k, tasks).unwrap_or(0).max(1);
        let lps = self.loops as f64 * 1e9 / ns as f64;
        let lines = vec![
            format!(
                "spawn ({}): {} loops in {:.6} s, {:.1} µs per loop",
                self.mode.name(),
                self.loops,
                ns as f64 / 1e9,
                ns as f64 / 1e3 / self.loops as f64
            ),
            format!("COUNT|{}|1|lps ({lps:.1} lps)", self.loops),
        ];
        let mut fields = Map::new();
        fields.insert("mode".into(), json!(self.mode.name()));
        fields.insert("loops".into(), json!(self.loops));
        fields.insert("time_s".into(), json!(ns as f64 / 1e9));
        fields.insert("lps".into(), json!(lps));
        BenchResult { lines, fields }
    }
}

/// `forky:count=1000[,mode=fork|vfork]`: the seed's fork bomb. One parent
/// creates `count` children back to back (each exits at once) and times
/// every fork() call; it reaps them at the end.
#[derive(Clone, Debug)]
pub struct Forky {
    pub count: u64,
    pub mode: SpawnMode,
}

impl Forky {
    pub fn parse(p: &Params) -> Result<Self, String> {
        Ok(Forky {
            count: p.count_max("count", 1000, MAX_TASKS - 1)?,
            mode: SpawnMode::parse(p, &["fork", "vfork", "clone"])?,
        })
    }

    pub fn build(&self, k: &mut Kernel, b: &mut Builder) {
        let done = self.mode.vfork_done(k);
        let parent = b.task(
            k,
            TaskSpec {
                comm: "forky",
                group_of: None,
                nice: 0,
                allowed: None,
                ops: Rc::from(vec![]),
            },
        );
        let kids = children(k, b, self.count, "forky-child", &Rc::from(vec![Op::Exit]));
        let mut ops = vec![];
        for c in kids {
            ops.push(Op::Mark(Mark::Start));
            ops.extend(self.mode.ops(c, done));
            ops.push(Op::Mark(Mark::Stop));
        }
        ops.extend((0..self.count).map(|_| Op::WaitChild));
        ops.push(Op::Exit);
        k.tasks[parent].prog.ops = Rc::from(ops);
        b.launch(k, parent);
    }

    /// Per-fork times in ms, in order.
    pub fn samples_ms(k: &Kernel, tasks: &[Pid]) -> Vec<f64> {
        let marks = &k.tasks[tasks[0]].prog.marks;
        marks
            .chunks(2)
            .filter(|m| m.len() == 2)
            .map(|m| (m[1].1 - m[0].1) as f64 / 1e6)
            .collect()
    }

    pub fn report(&self, k: &Kernel, tasks: &[Pid]) -> BenchResult {
        let samples = Self::samples_ms(k, tasks);
        let (mean, var) = mean_var(&samples);
        let mut lines = vec![format!(
            "forky: {} {}s, time per call in ms:",
            self.count,
            self.mode.name()
        )];
        lines.extend(histo(&samples));
        let mut fields = Map::new();
        fields.insert("count".into(), json!(self.count));
        fields.insert("mode".into(), json!(self.mode.name()));
        fields.insert("mean_ms".into(), json!(mean));
        fields.insert("sd_ms".into(), json!(var.sqrt()));
        BenchResult { lines, fields }
    }
}

/// Mean and sample variance (n − 1).
pub fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var)
}

/// A histogram in the layout of the `histo` perl script the seed used:
/// a header with count, extremes, mean, variance and SD, then one line
/// per bin with its count and a bar of stars (rounded up).
pub fn histo(v: &[f64]) -> Vec<String> {
    let (mean, var) = mean_var(v);
    let (min, max) = v
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    let mut out = vec![
        format!("# NumSamples = {}; Max = {max:.3}; Min = {min:.3}", v.len()),
        format!(
            "# Mean = {mean:.6}; Variance = {var:.9}; SD = {:.7}",
            var.sqrt()
        ),
    ];
    if v.is_empty() {
        return out;
    }
    // About 8 bins of a 1-2-5 width.
    let raw = ((max - min) / 8.0).max(1e-6);
    let mag = 10f64.powf(raw.log10().floor());
    let width = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|w| *w >= raw)
        .unwrap_or(10.0 * mag);
    let lo = (min / width).floor() * width;
    let nbins = (((max - lo) / width).floor() as usize + 1).min(1000);
    let mut counts = vec![0u64; nbins];
    for &x in v {
        counts[(((x - lo) / width) as usize).min(nbins - 1)] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(1);
    let scale = (top / 40).max(1);
    out.push(format!("# Each * represents a count of {scale}"));
    for (i, &n) in counts.iter().enumerate() {
        let a = lo + i as f64 * width;
        let mut l = format!("{a:.4} - {:.4} [{n:>4}]: ", a + width);
        let _ = write!(l, "{}", "*".repeat(n.div_ceil(scale) as usize));
        out.push(l);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histo_counts_every_sample_once() {
        let v: Vec<f64> = (0..100).map(|i| 0.12 + i as f64 * 0.0008).collect();
        let lines = histo(&v);
        assert!(lines[0].starts_with("# NumSamples = 100; Max = 0.199; Min = 0.120"));
        let total: u64 = lines[3..]
            .iter()
            .map(|l| {
                l.split('[')
                    .nth(1)
                    .unwrap()
                    .split(']')
                    .next()
                    .unwrap()
                    .trim()
            })
            .map(|n| n.parse::<u64>().unwrap())
            .sum();
        assert_eq!(total, 100);
        let (m, var) = mean_var(&[1.0, 2.0, 3.0]);
        assert_eq!((m, var), (2.0, 1.0));
    }
}
