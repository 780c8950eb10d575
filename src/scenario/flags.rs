//! The command-line flags that build a scenario, shared by `run`,
//! `replay`, `compare` and the experiments: each flag is a scenario key,
//! merged over a scenario file's table before it is resolved.

use super::{
    cgroup_table, parse_set_value, set_key, workload_table, InputError, Scenario, Source,
    HOST_LABEL,
};
use crate::trace::TraceArgs;
use clap::Args;
use std::path::PathBuf;
use toml::{Table, Value};

/// The flags that build a scenario, shared by `run` and `compare`.
#[derive(Args, Default, Clone)]
pub struct ScenarioArgs {
    /// Machine preset (`schedlab machines`), `smp:cpus=N[,smt=S,llc=L,sockets=K]`, `host` or a machine file `FILE.toml` [machine.preset] [default: vm-2]
    #[arg(long)]
    pub machine: Option<String>,
    /// Workload spec `name:key=value,...` (`schedlab workloads`); repeat for several [[workload]]
    #[arg(long = "workload", short = 'w')]
    pub workloads: Vec<String>,
    /// Task group `PATH[:weight=N,max="QUOTA PERIOD"]` (cgroup v2 cpu.weight, cpu.max in µs);
    /// repeat for several [[cgroup]]; a workload joins one with `cgroup=PATH`
    #[arg(long = "cgroup", value_name = "PATH:weight=N")]
    pub cgroups: Vec<String>,
    /// Random seed, 0 to 9223372036854775807 (TOML's largest integer) [sim.seed] [default: 1]
    #[arg(long, value_parser = clap::value_parser!(u64).range(..=i64::MAX as u64))]
    pub seed: Option<u64>,
    /// Stop after this much simulated time, with a unit (ns, us, ms, s), e.g. 3s; wins over a
    /// workload's own run time (rt-app's global.duration, schbench -r), and the run says which
    /// applies [sim.duration]
    /// [default: when every workload has finished]
    #[arg(long)]
    pub duration: Option<String>,
    /// Override any scenario key, e.g. kernel.hz=1000 (repeatable)
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
}

/// The output flags of `run`, `demo` and `replay`: the `[output]` keys.
#[derive(Args)]
pub struct OutArgs {
    /// Write results as JSON to this file (`-`: stdout), atomically [output.json]
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Quiet: no progress bar, and only the results: the benchmark's own lines, no summary [output.quiet]
    #[arg(long, short)]
    pub quiet: bool,
    /// Write the final /proc/schedstat (version 17) to this file [output.schedstat]
    #[arg(long, value_name = "PATH")]
    pub schedstat: Option<PathBuf>,
    #[command(flatten)]
    pub trace: TraceArgs,
}

/// A scenario file (or none) with the common flags, then `extra` --set
/// overrides applied last.
pub fn load_scenario(
    (file, text): (Option<String>, String),
    args: &ScenarioArgs,
    check: bool,
    out: Option<&OutArgs>,
    extra: &[String],
) -> Result<(Source, Scenario), InputError> {
    let (mut src, mut t) = Source::parse(file, text)?;
    let file_keys = t.clone();
    if let Some(m) = &args.machine {
        set_key(&mut t, "machine.preset", Value::String(m.clone()))?;
        src.set_by("machine.preset", format!("--machine {m}"));
    }
    if !args.workloads.is_empty() {
        let list = args
            .workloads
            .iter()
            .map(|w| workload_table(w))
            .collect::<Result<Vec<_>, _>>()?;
        t.insert("workload".into(), Value::Array(list));
        for (i, w) in args.workloads.iter().enumerate() {
            src.set_by(&format!("workload.{i}"), format!("--workload {w}"));
        }
    }
    if !args.cgroups.is_empty() {
        let mut list = match t.remove("cgroup") {
            Some(Value::Array(a)) => a,
            _ => Vec::new(),
        };
        for c in &args.cgroups {
            src.set_by(&format!("cgroup.{}", list.len()), format!("--cgroup {c}"));
            list.push(cgroup_table(c)?);
        }
        t.insert("cgroup".into(), Value::Array(list));
    }
    if let Some(s) = args.seed {
        set_key(&mut t, "sim.seed", Value::Integer(s as i64))?;
    }
    if let Some(d) = &args.duration {
        set_key(&mut t, "sim.duration", Value::String(d.clone()))?;
        src.set_by("sim.duration", format!("--duration {d}"));
    }
    if check {
        set_key(&mut t, "sim.check", Value::Boolean(true))?;
    }
    if let Some(out) = out {
        set_output(&mut t, out)?;
        for (k, v) in out.trace.keys() {
            let flag = format!("--{}", k.replace('_', "-"));
            let by = match v {
                Value::String(v) => format!("{flag} {v}"),
                _ => flag,
            };
            src.set_by(&format!("output.{k}"), by);
        }
    }
    for kv in args.sets.iter().chain(extra) {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| InputError::new(format!("--set `{kv}`: expected KEY=VALUE")))?;
        set_key(&mut t, k.trim(), parse_set_value(v.trim()))?;
        src.set_by(k.trim(), format!("--set {kv}"));
    }
    host_kernel(&mut src, &mut t)?;
    let sc = Scenario::resolve(&src, &t)?;
    check_file_values(&src, &file_keys, &t)?;
    Ok((src, sc))
}

/// A flag overriding a key does not make the file's own value valid (a
/// bad file is a bad file, whatever the command line): resolve the final
/// keys with the file's values put back, so that a bad one is an error
/// naming its line.
fn check_file_values(src: &Source, file_keys: &Table, merged: &Table) -> Result<(), InputError> {
    let mut with_file = merged.clone();
    put_back(&mut with_file, file_keys);
    if &with_file == merged {
        return Ok(());
    }
    let file_only = Source {
        file: src.file.clone(),
        text: src.text.clone(),
        overrides: Vec::new(),
    };
    Scenario::resolve(&file_only, &with_file).map(|_| ())
}

/// Set every key of `from` in `into`, tables merged key by key.
fn put_back(into: &mut Table, from: &Table) {
    for (k, v) in from {
        match (into.get_mut(k), v) {
            (Some(Value::Table(a)), Value::Table(b)) => put_back(a, b),
            _ => {
                into.insert(k.clone(), v.clone());
            }
        }
    }
}

/// `--machine host` simulates the host's kernel too: its preemption model
/// and HZ, where the scenario does not set them.
fn host_kernel(src: &mut Source, t: &mut Table) -> Result<(), InputError> {
    let preset = t.get("machine").and_then(|m| m.get("preset"));
    if preset.and_then(Value::as_str) != Some("host") {
        return Ok(());
    }
    for s in crate::machine::hostkernel::detect() {
        let (section, key) = s.key.split_once('.').expect("kernel.KEY");
        let set = t.get(section).and_then(|v| v.get(key)).is_some();
        if !set {
            set_key(t, s.key, parse_set_value(&s.value))?;
            let label = format!("{HOST_LABEL}{} = {} ({})", s.key, s.value, s.source);
            src.set_by(s.key, label);
        }
    }
    Ok(())
}

/// A scenario file's name and text; no file is an empty scenario.
pub fn read_scenario(path: Option<&PathBuf>) -> Result<(Option<String>, String), InputError> {
    let Some(p) = path else {
        return Ok((None, String::new()));
    };
    if p.as_os_str() == crate::util::sink::STDIO {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|e| InputError::new(format!("<stdin>: cannot read scenario: {e}")))?;
        return Ok((Some("<stdin>".into()), text));
    }
    let name = p.display().to_string();
    let text = std::fs::read_to_string(p)
        .map_err(|e| InputError::new(format!("{name}: cannot read scenario: {e}")))?;
    Ok((Some(name), text))
}

/// --json and --quiet are the `[output]` keys.
pub fn set_output(t: &mut toml::Table, out: &OutArgs) -> Result<(), InputError> {
    if let Some(p) = &out.json {
        set_key(t, "output.json", Value::String(p.display().to_string()))?;
    }
    if out.quiet {
        set_key(t, "output.quiet", Value::Boolean(true))?;
    }
    if let Some(p) = &out.schedstat {
        set_key(
            t,
            "output.schedstat",
            Value::String(p.display().to_string()),
        )?;
    }
    for (k, v) in out.trace.keys() {
        set_key(t, &format!("output.{k}"), v)?;
    }
    Ok(())
}
