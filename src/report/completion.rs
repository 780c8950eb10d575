//! Completion reports: the seed's `swait_stat` table, the interrupts-off
//! histogram, and the JSON `completion` section.

use crate::kernel::irq::quantile;
use crate::kernel::Kernel;
use serde_json::{json, Value};

const RULE: &str =
    "---------------------------------------------------------------------------------------------";

/// Whether the run used completions or interrupts at all.
pub fn active(k: &Kernel) -> bool {
    !k.completions.classes.is_empty() || !k.irqs.devices.is_empty()
}

/// The `swait_stat` table: per class, complete()/complete_all() calls that
/// found 1, 2, 3 and 4+ waiters (and, last, those that found none).
pub fn swait_stat(k: &Kernel) -> Vec<String> {
    let mut out = vec![
        format!(
            "swait_stat version 0.1 (kernel.completion = \"{}\")",
            k.completions.variant.name()
        ),
        RULE.to_string(),
        format!(
            "{:>28} {:>12} {:>12} {:>12} {:>12} {:>12}",
            "class name", "1 waiter", "2 waiters", "3 waiters", "4+ waiters", "no waiter"
        ),
        RULE.to_string(),
    ];
    for c in &k.completions.classes {
        let w = c.waiters;
        out.push(format!(
            "{:>28} {:>12} {:>12} {:>12} {:>12} {:>12}",
            c.name, w[0], w[1], w[2], w[3], c.no_waiter
        ));
    }
    out
}

/// Log2 buckets of interrupts-off sections in µs: <1, 1-2, 2-4, ... 512+.
const BUCKETS: usize = 11;

fn bucket(ns: u64) -> usize {
    let us = ns / 1000;
    if us == 0 {
        0
    } else {
        (us.ilog2() as usize + 1).min(BUCKETS - 1)
    }
}

/// The interrupts-off histogram: one row per CPU that had any section
/// (the eight with the longest first), then all CPUs together.
pub fn irqs_off(k: &Kernel) -> Vec<String> {
    let mut head = format!("{:>8} {:>8} {:>10}", "irqs-off", "sections", "max µs");
    for b in 0..BUCKETS {
        let label = match b {
            0 => "<1".to_string(),
            b if b == BUCKETS - 1 => format!("{}+", 1 << (b - 1)),
            b => format!("{}-{}", 1 << (b - 1), 1 << b),
        };
        head += &format!(" {label:>7}");
    }
    let mut out = vec![
        "interrupts-off sections (handlers, and completion locks that woke a task), µs:".into(),
        head,
    ];
    let row = |name: String, v: &[u64]| {
        let mut h = [0u64; BUCKETS];
        v.iter().for_each(|&ns| h[bucket(ns)] += 1);
        let max = v.iter().copied().max().unwrap_or(0);
        let mut l = format!("{name:>8} {:>8} {:>10.1}", v.len(), max as f64 / 1e3);
        for n in h {
            l += &format!(" {n:>7}");
        }
        l
    };
    let mut cpus: Vec<(u64, usize)> = k
        .irqs
        .cpus
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.off.is_empty())
        .map(|(i, c)| (c.off.iter().copied().max().unwrap_or(0), i))
        .collect();
    cpus.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, i) in cpus.iter().take(8) {
        out.push(row(format!("cpu{i}"), &k.irqs.cpus[i].off));
    }
    out.push(row("all".into(), &k.irqs.all_sorted()));
    out
}

/// The JSON `completion` section.
pub fn to_json(k: &Kernel) -> Value {
    let h = k.completions.waiters_hist();
    let all = k.irqs.all_sorted();
    let classes: Vec<Value> = k
        .completions
        .classes
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "waiters_hist": {"1": c.waiters[0], "2": c.waiters[1], "3": c.waiters[2], "4+": c.waiters[3]},
                "no_waiter": c.no_waiter,
            })
        })
        .collect();
    let per_cpu_max: Vec<u64> = k
        .irqs
        .cpus
        .iter()
        .map(|c| c.off.iter().copied().max().unwrap_or(0))
        .collect();
    json!({
        "variant": k.completions.variant.name(),
        "waiters_hist": {"1": h[0], "2": h[1], "3": h[2], "4+": h[3]},
        "classes": classes,
        "irqs_off_ns": {
            "p50": quantile(&all, 0.5),
            "p99": quantile(&all, 0.99),
            "max": all.last().copied().unwrap_or(0),
            "sections": all.len(),
            "per_cpu_max": per_cpu_max,
        },
        "interrupts": k.irqs.handled(),
        "stats": k.completions.stats,
    })
}
