//! Every scenario key with its type, unit and meaning: `schedlab keys`,
//! and the "known here" lists of the unknown-key errors. The defaults are
//! not written here but read from a resolved default scenario
//! (`Scenario::to_table`), the feature switches come from the kernel's
//! `FEATURES` table and the workload parameters from `KINDS`, so the
//! listing cannot drift from what `resolve` does.

use super::{Scenario, Source};
use crate::kernel::completion::CompletionVariant;
use crate::kernel::features::{PeltModel, Wakelist, FEATURES};
use crate::kernel::preempt::MODELS;
use crate::machine::cost::Governor;
use crate::workload::kinds::{Ty, KINDS};

/// A key's type as `schedlab keys` prints it.
#[derive(Clone, Copy)]
pub enum KeyTy {
    Int,
    Float,
    Bool,
    Str,
    /// A time with a unit: ns, us, ms or s.
    Duration,
    /// One of these words.
    Words(fn() -> Vec<&'static str>),
}

/// One fixed scenario key.
pub struct KeyDoc {
    /// Dotted path; `N` stands for a list index, `LEVEL` for a domain name.
    pub key: &'static str,
    pub ty: KeyTy,
    pub unit: &'static str,
    /// The default when the default scenario does not hold the key
    /// (empty: read it from there).
    pub unset: &'static str,
    pub doc: &'static str,
}

const fn k(
    key: &'static str,
    ty: KeyTy,
    unit: &'static str,
    unset: &'static str,
    doc: &'static str,
) -> KeyDoc {
    KeyDoc {
        key,
        ty,
        unit,
        unset,
        doc,
    }
}

use KeyTy::*;

/// Every key but the per-feature and per-workload-kind ones.
pub const KEYS: &[KeyDoc] = &[
    k("sim.seed", Int, "", "", "seed of every random stream (tasks, noise); same seed, same output"),
    k("sim.duration", Duration, "", "until every workload finishes", "stop at this simulated time (--duration)"),
    k("sim.check", Bool, "", "", "verify the scheduler's invariants after every event (--check; exit 3)"),
    k("sim.check_every", Str, "events", "tick", "with --check, the whole-machine sweep every this many events, or \"tick\" (each event checks what it touched)"),
    k("machine.preset", Str, "", "", "preset (`schedlab machines`), smp:cpus=N,..., host or a machine FILE.toml (--machine)"),
    k("machine.max_cstate", Int, "", "all states", "disable idle states deeper than this index (intel_idle.max_cstate)"),
    k("machine.cpuidle_governor", Words(|| Governor::NAMES.to_vec()), "", "the machine's own", "cpuidle governor deciding whether an idle CPU stops its tick"),
    k("kernel.hz", Words(|| vec!["100", "250", "300", "1000"]), "Hz", "", "CONFIG_HZ: tick rate"),
    k("kernel.fair", Words(|| vec!["eevdf", "cfs"]), "", "", "fair class: EEVDF (v6.6+) or legacy CFS (v6.5)"),
    k("kernel.preempt", Words(|| MODELS.iter().map(|m| m.1).collect()), "", "", "preemption model (preempt=; auto-* are PREEMPT_AUTO v2, seed 002)"),
    k("kernel.rt_bandwidth", Words(|| vec!["fair_server", "throttle"]), "", "", "RT throttling: the fair deadline server (v6.12+) or sched_rt_runtime_us"),
    k("kernel.base_slice_ns", Int, "ns", "", "sysctl_sched_base_slice before tunable scaling (min 100000)"),
    k("kernel.tunable_scaling", Words(|| vec!["0", "1", "2"]), "", "", "sched_tunable_scaling: 0 none, 1 log2(1+CPUs), 2 linear"),
    k("kernel.migration_cost_ns", Int, "ns", "", "sysctl_sched_migration_cost: a task ran this recently is cache hot"),
    k("kernel.timer_slack_ns", Int, "ns", "", "timer slack added to a sleeping task's wakeup timer"),
    k("kernel.wakelist", Words(|| Wakelist::NAMES.to_vec()), "", "", "when a remote wakeup is queued on the wakelist (ttwu_queue_cond; seed 000)"),
    k("kernel.pelt", Words(|| PeltModel::NAMES.to_vec()), "", "", "per-entity load tracking: today's, or v3.16's before the v4.3 rewrite (seed 004)"),
    k("kernel.wakelist_cross_llc", Bool, "", "", "queue wakeups across LLCs on the wakelist (TTWU_QUEUE)"),
    k("kernel.irq_time_accounting", Bool, "", "", "CONFIG_IRQ_TIME_ACCOUNTING: interrupt time tracked (avg_irq)"),
    k("kernel.completion", Words(|| CompletionVariant::NAMES.to_vec()), "", "", "completions on wait queues (v4.6), swait (mainline) or swait with deferred wakeups (seed 003)"),
    k("kernel.features", Str, "", "each switch's own", "a list like the sched_features file: \"NO_PLACE_LAG RUN_TO_PARITY\""),
    k("kernel.domain.LEVEL.flags", Str, "", "the kernel's", "edit a sched domain level's flags (LEVEL: SMT, CLS, MC, PKG, NODE, NUMA): \"-SD_BALANCE_NEWIDLE\", \"+SD_X\", \"SD_A|SD_B\""),
    k("noise.enabled", Bool, "", "", "run-to-run noise on (off: exact, identical runs for every seed)"),
    k("noise.tick_phase", Bool, "", "", "random phase of each CPU's tick"),
    k("noise.cost_cv", Float, "fraction", "", "coefficient of variation of every modelled cost"),
    k("noise.timer_slack", Bool, "", "", "random timer slack on sleeps"),
    k("noise.irq_rate_hz", Float, "Hz", "", "background interrupts per CPU"),
    k("noise.irq_ns", Int, "ns", "", "duration of one background interrupt"),
    k("output.json", Str, "path", "none", "write results as JSON (--json; `-` stdout)"),
    k("output.quiet", Bool, "", "false", "no progress bar; print only the benchmark's own lines (-q)"),
    k("output.schedstat", Str, "path", "none", "write /proc/schedstat v17 at the end (--schedstat)"),
    k("output.trace", Str, "path", "none", "write a trace; .json Chrome, .dat trace-cmd, .pftrace Perfetto, else ftrace text; .gz/.zst compress (--trace)"),
    k("output.trace_format", Words(|| vec!["ftrace", "chrome", "dat", "perfetto"]), "", "by extension", "trace format (--trace-format)"),
    k("output.trace_window", Str, "START..END", "whole run", "keep only this time range in the trace and the page, e.g. \"2s..3s\""),
    k("output.trace_pelt", Str, "", "none", "tasks (pid or comm, comma-separated) whose PELT signals are traced"),
    k("output.trace_decisions", Bool, "", "false", "add the decision records (pick, placement, resched, balance) to an ftrace text or Perfetto trace (--trace-decisions)"),
    k("output.trace_syscalls", Bool, "", "false", "add the syscall events of pipe and socket reads and writes to an ftrace text trace, for a causal replay (--trace-syscalls)"),
    k("output.html", Str, "path", "none", "write the self-contained HTML report (--html)"),
    k("cgroup.N.path", Str, "", "required", "task group path, e.g. \"/a/b\" (ancestors are created; --cgroup)"),
    k("cgroup.N.weight", Int, "cpu.weight", "", "cgroup v2 cpu.weight, 1..10000"),
    k("cgroup.N.max", Str, "µs µs", "no limit", "cgroup v2 cpu.max: \"QUOTA PERIOD\" (CFS bandwidth)"),
    k("workload.N.kind", Words(|| KINDS.iter().map(|k| k.name).collect()), "", "required", "workload kind (`schedlab workloads`); its parameters follow"),
];

/// The last components of the keys directly under `section`, e.g.
/// `["seed", "duration", "check"]` for `sim`.
pub fn names_under(section: &str) -> Vec<&'static str> {
    let depth = section.split('.').count();
    KEYS.iter()
        .filter_map(|d| {
            let parts: Vec<&str> = d.key.split('.').collect();
            let under = parts.len() > depth && parts[..depth].join(".") == section;
            under.then(|| parts[depth])
        })
        .fold(Vec::new(), |mut v, n| {
            if !v.contains(&n) {
                v.push(n);
            }
            v
        })
}

/// One row of `schedlab keys`: key, type, default, unit, meaning.
pub struct Row {
    pub key: String,
    pub ty: String,
    pub default: String,
    pub unit: String,
    pub doc: String,
}

fn ty_name(t: KeyTy) -> String {
    match t {
        Int => "integer".into(),
        Float => "number".into(),
        Bool => "bool".into(),
        Str => "string".into(),
        Duration => "duration".into(),
        Words(f) => f().join("|"),
    }
}

/// The default scenario's value of `key` (`N` is the first entry), as
/// `--set` would take it.
fn default_of(defaults: &toml::Table, key: &str) -> Option<String> {
    let mut v = defaults.get(key.split('.').next()?)?;
    for part in key.split('.').skip(1) {
        v = match v {
            toml::Value::Array(a) if part == "N" => a.first()?,
            _ => v.as_table()?.get(part)?,
        };
    }
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Table(_) | toml::Value::Array(_) => None,
        other => Some(other.to_string()),
    }
}

/// The resolved default scenario as a table (one workload and one task
/// group, whose defaults the fixed keys do not depend on).
pub fn default_table() -> toml::Table {
    let text = "[[workload]]\nkind = \"pipe\"\n[[cgroup]]\npath = \"/a\"\n".to_string();
    Source::parse(None, text)
        .and_then(|(src, t)| Scenario::resolve(&src, &t))
        .map(|sc| sc.to_table())
        .unwrap_or_default()
}

/// Every key: the fixed ones, one per feature switch, then the parameters
/// of each workload kind (`workload.N.PARAM`, the kind named in the doc).
pub fn rows() -> Vec<Row> {
    let defaults = default_table();
    let mut out: Vec<Row> = KEYS
        .iter()
        .map(|d| Row {
            key: d.key.into(),
            ty: ty_name(d.ty),
            default: match d.unset {
                "" => default_of(&defaults, d.key).unwrap_or_else(|| "?".into()),
                unset => unset.into(),
            },
            unit: d.unit.into(),
            doc: d.doc.into(),
        })
        .collect();
    for (_, name, on, doc) in FEATURES {
        out.push(Row {
            key: format!("kernel.features.{name}"),
            ty: "bool".into(),
            default: on.to_string(),
            unit: String::new(),
            doc: format!("sched_feat({name}): {doc}"),
        });
    }
    for kind in KINDS {
        for p in kind.params {
            let (ty, unit) = match p.ty {
                Ty::Int => ("integer".to_string(), ""),
                Ty::Bool => ("bool".into(), ""),
                Ty::Duration => ("duration".into(), ""),
                Ty::Dist => ("distribution".into(), "8ms, 1ms..3ms, exp:2ms"),
                Ty::Choice(w) => (w.join("|"), ""),
                Ty::Path => ("string".into(), "path"),
                Ty::Comms => ("string".into(), "comm|comm"),
            };
            out.push(Row {
                key: format!("workload.N.{}", p.name),
                ty,
                default: p.default.into(),
                unit: unit.into(),
                doc: format!("{} parameter (kind = \"{}\")", kind.name, kind.name),
            });
        }
    }
    out
}

/// `schedlab keys`: one line per key, aligned.
pub fn listing() -> String {
    let rows = rows();
    let w = |f: fn(&Row) -> usize| rows.iter().map(f).max().unwrap_or(0);
    let (kw, tw, dw, uw) = (
        w(|r| r.key.len()),
        w(|r| r.ty.chars().count()).min(28),
        w(|r| r.default.chars().count()).min(20),
        w(|r| r.unit.chars().count()),
    );
    let mut s = format!(
        "{:<kw$}  {:<tw$}  {:<dw$}  {:<uw$}  meaning\n",
        "key", "type", "default", "unit"
    );
    for r in &rows {
        s += &format!(
            "{:<kw$}  {:<tw$}  {:<dw$}  {:<uw$}  {}\n",
            r.key, r.ty, r.default, r.unit, r.doc
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::{parse_set_value, set_key};
    use super::*;
    use crate::kernel::noise::NoiseConfig;

    /// A value for every fixed key: its default, or a sample for a key
    /// the default scenario leaves unset.
    fn sample(key: &str, defaults: &toml::Table) -> String {
        let given = [
            ("sim.duration", "\"1s\""),
            ("sim.check_every", "100"),
            ("machine.max_cstate", "1"),
            ("machine.cpuidle_governor", "\"menu\""),
            ("kernel.domain.LEVEL.flags", "\"-SD_BALANCE_NEWIDLE\""),
            ("kernel.features", "\"NO_PLACE_LAG\""),
            ("output.json", "\"x.json\""),
            ("output.quiet", "true"),
            ("output.schedstat", "\"x.schedstat\""),
            ("output.trace", "\"x.txt\""),
            ("output.trace_format", "\"ftrace\""),
            ("output.trace_window", "\"1ms..2ms\""),
            ("output.trace_pelt", "\"1\""),
            ("output.trace_decisions", "true"),
            ("output.trace_syscalls", "true"),
            ("output.html", "\"x.html\""),
            ("cgroup.N.path", "\"/a\""),
            ("cgroup.N.weight", "100"),
            ("cgroup.N.max", "\"50000 100000\""),
            ("workload.N.kind", "\"pipe\""),
        ];
        match given.iter().find(|g| g.0 == key) {
            Some((_, v)) => v.to_string(),
            None => match default_of(defaults, key) {
                Some(v) if defaults_is_str(defaults, key) => format!("\"{v}\""),
                Some(v) => v,
                None => panic!("{key}: no default and no sample"),
            },
        }
    }

    fn defaults_is_str(defaults: &toml::Table, key: &str) -> bool {
        let mut v = &toml::Value::Table(defaults.clone());
        for part in key.split('.') {
            v = &v[part];
        }
        v.is_str()
    }

    /// The scenario with every fixed key set, as `--set` would.
    fn everything() -> toml::Table {
        let defaults = default_table();
        let mut t: toml::Table = "[[workload]]\nkind = \"pipe\"\n[[cgroup]]\npath = \"/a\"\n"
            .parse()
            .unwrap();
        for d in KEYS {
            let key = d.key.replace(".N.", ".0.").replace("LEVEL", "MC");
            set_key(&mut t, &key, parse_set_value(&sample(d.key, &defaults))).unwrap();
        }
        t
    }

    #[test]
    fn every_listed_key_is_accepted_with_its_default_or_a_sample() {
        let (src, _) = Source::parse(None, String::new()).unwrap();
        if let Err(e) = Scenario::resolve(&src, &everything()) {
            panic!("{e}");
        }
    }

    /// Every key of a resolved scenario with every key set, as a pattern.
    fn leaves(prefix: &str, v: &toml::Value, out: &mut Vec<String>) {
        match v {
            toml::Value::Table(t) => {
                for (k, v) in t {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    leaves(&p, v, out);
                }
            }
            toml::Value::Array(a) => {
                for v in a {
                    leaves(&format!("{prefix}.N"), v, out);
                }
            }
            _ => out.push(prefix.to_string()),
        }
    }

    #[test]
    fn every_key_a_resolved_scenario_holds_is_listed_with_its_default() {
        let (src, _) = Source::parse(None, String::new()).unwrap();
        let sc = Scenario::resolve(&src, &everything()).unwrap();
        let mut keys = Vec::new();
        leaves("", &toml::Value::Table(sc.to_table()), &mut keys);
        let rows = rows();
        for key in keys {
            let key = key.replace("domain.MC.", "domain.LEVEL.");
            assert!(
                rows.iter().any(|r| r.key == key),
                "{key} is not in `schedlab keys`"
            );
        }
        // The defaults shown are the resolved scenario's.
        let d = default_table();
        let row = |k: &str| rows.iter().find(|r| r.key == k).unwrap().default.clone();
        assert_eq!(row("machine.preset"), super::super::DEFAULT_MACHINE);
        assert_eq!(row("kernel.hz"), d["kernel"]["hz"].to_string());
        assert_eq!(row("kernel.features.PLACE_LAG"), "true");
        assert_eq!(row("workload.N.groups"), "10");
    }

    #[test]
    fn every_default_is_found() {
        for r in rows() {
            assert!(
                r.default != "?" && !r.default.is_empty(),
                "{}: no default",
                r.key
            );
        }
    }

    #[test]
    fn sections_list_their_keys() {
        assert_eq!(
            names_under("sim"),
            ["seed", "duration", "check", "check_every"]
        );
        assert_eq!(names_under("cgroup.N"), ["path", "weight", "max"]);
        assert_eq!(names_under("noise"), NoiseConfig::KEYS);
    }
}
