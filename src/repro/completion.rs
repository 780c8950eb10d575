//! `schedlab repro completion`: seed 003 (completions on simple wait
//! queues, v2 with deferred complete_all wakeups) across the three
//! `kernel.completion` variants, next to the figures the seed published.

use super::run_embedded;
use super::seed_rows::{FORKY_003, KERNBENCH_003};
use super::summary::Cell;
use crate::kernel::completion::CompletionVariant;
use crate::report::completion::swait_stat;
use crate::workload::fork::{mean_var, Forky};
use crate::workload::kernbench::Kernbench;
use clap::Args;
use serde_json::{json, Map, Value};
use std::fmt::Write;
use std::path::PathBuf;

#[derive(Args)]
pub struct CompletionArgs {
    /// Runs (seeds 1..=N) of kernbench per variant
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(2..=1000))]
    pub runs: u64,
    /// Machine preset to run on instead of each scenario's (xeon-8269cy)
    #[arg(long)]
    pub machine: Option<String>,
    /// Also write the results as JSON to this file, atomically
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
}

const DIR: &str = "scenarios/seed-003-completion";
const WAITERS: &str = include_str!("../../scenarios/seed-003-completion/waiters.toml");
const FORKY: &str = include_str!("../../scenarios/seed-003-completion/forky.toml");
const FORKY_VFORK: &str = include_str!("../../scenarios/seed-003-completion/forky-vfork.toml");
const KERNBENCH: &str = include_str!("../../scenarios/seed-003-completion/kernbench.toml");
const IRQ: [(u64, &str); 3] = [
    (
        1,
        include_str!("../../scenarios/seed-003-completion/irq-complete-1.toml"),
    ),
    (
        64,
        include_str!("../../scenarios/seed-003-completion/irq-complete-64.toml"),
    ),
    (
        1024,
        include_str!("../../scenarios/seed-003-completion/irq-complete-1024.toml"),
    ),
];

/// The seed's swait_stat rows (class, waker, 1 waiter; the 2/3/4+
/// columns are all 0).
const SEED_WAITERS: &[(&str, &str, u64)] = &[
    ("&rsp->gp_wq", "RCU grace-period kthread", 129_572),
    ("&x->wait#11", "_do_fork (vfork) / mm_release", 39_002),
    ("&rnp->nocb_gp_wq[1]", "kthread / kthread", 10_277),
    ("&rdp->nocb_wq", "kthread / wake_nocb_leader", 9_862),
    ("&x->wait#8", "xfs_buf_submit_wait / xfs_buf_ioend", 4_123),
    ("(wait).wait#98", "blk_execute_rq / blk_end_sync_rq", 1_594),
    ("&x->wait", "kthread_park, kthread_stop", 827),
    ("(done).wait#119", "kthread_create_on_node / kthread", 512),
];

const VARIANTS: [CompletionVariant; 3] = [
    CompletionVariant::WaitQueue,
    CompletionVariant::Swait,
    CompletionVariant::SwaitDefer,
];

fn sets(
    v: CompletionVariant,
    seed: Option<u64>,
    args: &CompletionArgs,
) -> Vec<(&'static str, String)> {
    let mut s = vec![("kernel.completion", format!("\"{}\"", v.name()))];
    if let Some(seed) = seed {
        s.push(("sim.seed", seed.to_string()));
    }
    if let Some(m) = &args.machine {
        s.push(("machine.preset", format!("\"{m}\"")));
    }
    s
}

/// mean, std, var, max, min (sample statistics).
fn stats(v: &[f64]) -> [f64; 5] {
    let (mean, var) = mean_var(v);
    let max = v.iter().copied().fold(f64::MIN, f64::max);
    let min = v.iter().copied().fold(f64::MAX, f64::min);
    [mean, var.sqrt(), var, max, min]
}

fn row(name: &str, s: [f64; 5]) -> String {
    format!(
        "  {name:<30} {:>10.4} {:>10.4} {:>10.5} {:>10.4} {:>10.4}",
        s[0], s[1], s[2], s[3], s[4]
    )
}

/// What `repro summary` sets beside seed 003's rows: each seed's
/// (1..=runs) fork time and kernbench times with kernel.completion
/// "waitqueue" (v4.6) and "swait-defer" (the seed's patch), keyed as the
/// rows name them, all runs on all cores.
pub fn summary_cells(runs: u64) -> Result<Vec<Cell>, String> {
    let args = CompletionArgs {
        runs,
        machine: None,
        json: None,
    };
    let sides = [CompletionVariant::WaitQueue, CompletionVariant::SwaitDefer];
    let n = runs as usize;
    let flat = crate::util::parallel::par_map(2 * n, |i| {
        let sets = sets(sides[i / n], Some((i % n) as u64 + 1), &args);
        let fork = run_embedded(&format!("{DIR}/forky.toml"), FORKY, &sets)?;
        let (_, tasks) = &fork.workloads[0];
        let (fork_ms, _) = mean_var(&Forky::samples_ms(&fork.kernel, tasks));
        let build = run_embedded(&format!("{DIR}/kernbench.toml"), KERNBENCH, &sets)?;
        let (_, tasks) = &build.workloads[0];
        let t = Kernbench::times(&build.kernel, tasks);
        let s = |ns: u64| ns as f64 / 1e9;
        let cpu_pct = 100.0 * (s(t.user) + s(t.sys)) / s(t.real).max(1e-9);
        Ok([fork_ms, s(t.user), s(t.sys), s(t.real), cpu_pct])
    })?;
    let (waitqueue, defer) = flat.split_at(n);
    let keys = ["fork ms", "user s", "system s", "elapsed s", "CPU %"];
    Ok(keys
        .iter()
        .enumerate()
        .map(|(k, key)| Cell::new(*key, waitqueue, defer, |m| m[k]))
        .collect())
}

/// `schedlab repro completion`: the four sections, then the note.
pub fn repro(args: &CompletionArgs, quiet: bool) -> Result<(), String> {
    let mut j = Map::new();
    print!("{}", report(args, quiet, &mut j)?);
    j.insert("study".into(), "seed-003-completion".into());
    j.insert("runs".into(), args.runs.into());
    super::write_json(args.json.as_ref(), Value::Object(j))
}

/// The report's text; its numbers also go into `j` (the `--json`).
fn report(
    args: &CompletionArgs,
    quiet: bool,
    j: &mut Map<String, Value>,
) -> Result<String, String> {
    let mut o = String::new();
    let machine = args.machine.as_deref().unwrap_or("xeon-8269cy");
    let _ = writeln!(
        o,
        "seed 003: completions on simple wait queues, on {machine}, kernel.completion = \
         waitqueue (v4.6) | swait (mainline) | swait-defer (the seed's v2)\n"
    );
    j.insert("machine".into(), machine.into());
    waiters(&mut o, args)?;
    j.insert("fork_ms".into(), forky(&mut o, args)?);
    j.insert("kernbench_s".into(), kernbench(&mut o, args)?);
    j.insert("irqs_off_max_us".into(), irqs_off(&mut o, args)?);
    if !quiet {
        let _ = writeln!(o, "{}", NOTE.trim());
    }
    Ok(o)
}

fn waiters(o: &mut String, args: &CompletionArgs) -> Result<(), String> {
    let _ = writeln!(
        o,
        "1. Waiters per complete()/complete_all() ({DIR}/waiters.toml: kernbench, a vfork loop, kthreads, one I/O waiter)\n"
    );
    let _ = writeln!(
        o,
        "  seed (mmtests scheduler-unbound + kernbench, swait): every class 1 waiter, never 2+:"
    );
    for (class, who, n) in SEED_WAITERS {
        let _ = writeln!(o, "  {class:>22} {n:>8} 0 0 0   {who}");
    }
    for v in VARIANTS {
        let out = run_embedded(
            &format!("{DIR}/waiters.toml"),
            WAITERS,
            &sets(v, None, args),
        )?;
        let _ = writeln!(o);
        for l in swait_stat(&out.kernel) {
            let _ = writeln!(o, "  {l}");
        }
    }
    let _ = writeln!(o);
    Ok(())
}

/// Section 2; returns the simulated rows (mode, variant, mean, SD).
fn forky(o: &mut String, args: &CompletionArgs) -> Result<Value, String> {
    let mut rows = Vec::new();
    let _ = writeln!(
        o,
        "2. Fork bomb, 1000 forks, time per call in ms ({DIR}/forky.toml, forky-vfork.toml)\n"
    );
    let _ = writeln!(o, "  {:<36} {:>10} {:>10}", "", "mean", "SD");
    for (k, mean, sd) in FORKY_003 {
        let _ = writeln!(o, "  {:<36} {mean:>10.6} {sd:>10.6}", format!("seed {k}"));
    }
    for (mode, text) in [("fork", FORKY), ("vfork", FORKY_VFORK)] {
        for v in VARIANTS {
            let out = run_embedded(&format!("{DIR}/forky.toml"), text, &sets(v, None, args))?;
            let (_, tasks) = &out.workloads[0];
            let (mean, var) = mean_var(&Forky::samples_ms(&out.kernel, tasks));
            let name = format!("sim {mode} {}", v.name());
            let _ = writeln!(o, "  {name:<36} {mean:>10.6} {:>10.6}", var.sqrt());
            rows.push(json!({"mode": mode, "variant": v.name(), "mean": mean, "sd": var.sqrt()}));
        }
    }
    let _ = writeln!(o);
    Ok(Value::Array(rows))
}

/// Section 3; returns per variant and metric (mean, std, var, max, min).
fn kernbench(o: &mut String, args: &CompletionArgs) -> Result<Value, String> {
    let mut rows = Vec::new();
    let _ = writeln!(
        o,
        "3. kernbench, `time make` in s: seed -j200 ×100 on its machine; sim {DIR}/kernbench.toml \
         (-j32, 500 files) over seeds 1..={}\n",
        args.runs
    );
    let mut sim = Vec::new();
    for v in VARIANTS {
        let mut t = [vec![], vec![], vec![]];
        for seed in 1..=args.runs {
            let out = run_embedded(
                &format!("{DIR}/kernbench.toml"),
                KERNBENCH,
                &sets(v, Some(seed), args),
            )?;
            let (_, tasks) = &out.workloads[0];
            let r = Kernbench::times(&out.kernel, tasks);
            for (i, ns) in [r.user, r.sys, r.real].into_iter().enumerate() {
                t[i].push(ns as f64 / 1e9);
            }
        }
        sim.push((v, t));
    }
    for (i, metric) in ["user", "system", "elapsed"].into_iter().enumerate() {
        let _ = writeln!(
            o,
            "  {metric:<30} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "mean", "std", "var", "max", "min"
        );
        for (_, k, s) in KERNBENCH_003.iter().filter(|r| r.0 == metric) {
            let _ = writeln!(o, "{}", row(&format!("seed {k}"), *s));
        }
        for (v, t) in &sim {
            let st = stats(&t[i]);
            let _ = writeln!(o, "{}", row(&format!("sim {}", v.name()), st));
            rows.push(json!({"metric": metric, "variant": v.name(),
                "mean": st[0], "std": st[1], "var": st[2], "max": st[3], "min": st[4]}));
        }
    }
    let _ = writeln!(o);
    Ok(Value::Array(rows))
}

/// Section 4; returns the maximum per variant and waiter count.
fn irqs_off(o: &mut String, args: &CompletionArgs) -> Result<Value, String> {
    let mut rows = Vec::new();
    let _ = writeln!(
        o,
        "4. Interrupts-off maximum on the interrupt's CPU, complete_all() from a handler every 10 ms \
         ({DIR}/irq-complete-N.toml), µs (the seed gives no figure)\n"
    );
    let _ = writeln!(o, "  {:<16} {:>10} {:>10} {:>10}", "", "1", "64", "1024");
    for v in VARIANTS {
        let mut l = format!("  {:<16}", v.name());
        for (n, text) in IRQ {
            let out = run_embedded(
                &format!("{DIR}/irq-complete-{n}.toml"),
                text,
                &sets(v, None, args),
            )?;
            let max = out.kernel.irqs.cpus[0]
                .off
                .iter()
                .copied()
                .max()
                .unwrap_or(0);
            let _ = write!(l, " {:>10.1}", max as f64 / 1e3);
            rows.push(json!({"variant": v.name(), "waiters": n, "max_us": max as f64 / 1e3}));
        }
        let _ = writeln!(o, "{l}");
    }
    let _ = writeln!(o);
    Ok(Value::Array(rows))
}

const NOTE: &str = "
Note. What agrees: the waiter counts. The seed found one waiter per call in every class; the
simulated vfork_done, kthread and I/O classes find one too, in all three variants, because each vfork
parent and each I/O waits alone. The seed's concern, complete_all() from an interrupt with many
waiters, shows up only in section 4: waitqueue and swait wake every waiter with interrupts off
(the handler grows with the waiter count), swait-defer wakes one and hands the rest to it, in
short sections. waitqueue and swait time the same: without PREEMPT_RT a spinlock_t costs what a
raw_spinlock_t does, and the waitqueue variant differs only when a second complete() comes
before the woken waiter has run (its entry is still queued). What does not: the fork bomb and kernbench differences. fork() takes no
completion at all (only vfork waits on one), so the simulated fork times are identical across
variants; with vfork the variants differ only in how a single waiter is woken, which costs the
same. The seed's +4% fork-bomb mean and its kernbench spread are within that machine's run-to-run
noise. The simulated per-call SD comes from the noise model's per-cost variation (noise.cost_cv),
not from page faults, allocator or cache state, and a seed draws the same costs in all three
variants, so their rows are identical. The seed's kernbench columns (user 9 s, system 1676 s)
also look transposed relative to `time` output; they are shown as published. Simulated system
time covers fork/exec/exit, syscalls and wakeups only (no page faults or file I/O), so it is far
below a real build's.
";
