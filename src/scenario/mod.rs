//! Scenarios: a TOML file, CLI flags and `--set key=value` overrides merged
//! into one table, then checked key by key into a resolved `Scenario`.
//! Every flag is a key: --machine is `machine.preset`, --workload adds a
//! `[[workload]]` table, --seed is `sim.seed`, --duration `sim.duration`.
//! The flags themselves are `flags.rs`; the `[output]` keys `output.rs`.
//!
//! Layer: scenario and run, above the reports. Builds on kernel
//! configuration, workload parameters and trace options; imports no
//! experiment (`compare`, `repro`, ...) and not `cli`.

pub mod flags;
pub mod keys;
pub mod output;

use crate::kernel::features::{
    FairClass, KernelConfig, PeltModel, PreemptModel, Wakelist, FEATURES,
};
use crate::kernel::noise::NoiseConfig;
use crate::kernel::rt::RtBandwidth;
use crate::kernel::task_group::{
    normalize, parse_cpu_max, CgroupSpec, CGROUP_WEIGHT_DFL, CGROUP_WEIGHT_MAX, CGROUP_WEIGHT_MIN,
};
use crate::workload::params::{parse_duration, Params};
use std::fmt;
use toml::{Table, Value};

/// Bad input: where it is and what is wrong. Exit code 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub file: Option<String>,
    pub line: Option<usize>,
    pub key: Option<String>,
    pub msg: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{file}:{line}: ")?,
            (Some(file), None) => write!(f, "{file}: ")?,
            _ => {}
        }
        if let Some(k) = &self.key {
            write!(f, "key `{k}`: ")?;
        }
        write!(f, "{}", self.msg)
    }
}

impl InputError {
    pub fn new(msg: impl Into<String>) -> Self {
        InputError {
            file: None,
            line: None,
            key: None,
            msg: msg.into(),
        }
    }
}

/// A fully resolved scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub seed: u64,
    /// Simulated time to stop at; None = until every workload finishes.
    pub duration: Option<u64>,
    pub check: bool,
    /// `sim.check_every`: the whole-machine sweep of `--check` every this
    /// many events; 0 ("tick", the default): once per tick.
    pub check_every: u64,
    pub machine: String,
    /// `intel_idle.max_cstate=N`-style limit: idle states deeper than
    /// index N (0 = the shallowest, POLL on x86) are disabled.
    pub max_cstate: Option<usize>,
    /// The cpuidle governor instead of the machine's own.
    pub governor: Option<crate::machine::cost::Governor>,
    pub kernel: KernelConfig,
    pub workloads: Vec<Params>,
    /// `[[cgroup]]` task groups (cgroup v2 cpu controller).
    pub cgroups: Vec<CgroupSpec>,
    /// Where results go (`[output]`: json, quiet). Not part of the
    /// simulation, so `to_table` leaves it out of the resolved scenario.
    pub output: Output,
    /// A cap on the run's cost (the fuzzer's); never read from a file.
    pub budget: Option<crate::kernel::Budget>,
}

/// The `[output]` table: --json and --quiet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    pub json: Option<String>,
    pub quiet: bool,
    /// Write the final /proc/schedstat (version 17) here.
    pub schedstat: Option<String>,
    /// --trace and its options (`trace`, `trace_format`, `trace_window`,
    /// `trace_pelt`).
    pub trace: Option<crate::trace::TraceOptions>,
    /// --html: the self-contained HTML report.
    pub html: Option<String>,
}

/// The machine of a scenario that names none (`--help` says so too).
pub const DEFAULT_MACHINE: &str = "vm-2";

/// The built-in demo: hackbench over pipes on the seed-000 Xeon.
pub const DEMO: &str = r#"
[machine]
preset = "xeon-8269cy"

[[workload]]
kind = "hackbench"
groups = 4
loops = 200
ipc = "pipe"
"#;

/// How `--machine host` labels the kernel settings it read from the host.
pub const HOST_LABEL: &str = "--machine host: ";

/// Where the table came from, for error messages.
pub struct Source {
    pub file: Option<String>,
    pub text: String,
    /// Keys set by flags, each with the flag that set it (`--set k=v`):
    /// an error at or below such a key names the flag, not the file.
    pub overrides: Vec<(String, String)>,
}

impl Source {
    pub fn parse(file: Option<String>, text: String) -> Result<(Source, Table), InputError> {
        match text.parse::<Table>() {
            Ok(t) => {
                let overrides = Vec::new();
                Ok((
                    Source {
                        file,
                        text,
                        overrides,
                    },
                    t,
                ))
            }
            Err(e) => {
                let (line, reason) = crate::util::toml_text::malformed(&text, &e);
                Err(InputError {
                    file,
                    line,
                    key: None,
                    msg: format!("malformed TOML: {reason}"),
                })
            }
        }
    }

    /// Record that flag `label` set `key` (and everything below it).
    pub fn set_by(&mut self, key: &str, label: impl Into<String>) {
        self.overrides.push((key.to_string(), label.into()));
    }

    /// What `--machine host` took from the running kernel, one
    /// `key = value (where it was read)` each, for the run to say so.
    pub fn from_host(&self) -> Vec<&str> {
        (self.overrides.iter())
            .filter_map(|(_, label)| label.strip_prefix(HOST_LABEL))
            .collect()
    }

    /// The line where `key` (a dotted path such as `kernel.hz` or
    /// `workload.1.loops`) is set, found by scanning the text: each line's
    /// table header (`[[workload]]` counted) joined with its key, dotted
    /// keys and trailing comments allowed.
    pub fn line_of(&self, path: &str) -> Option<usize> {
        let mut header = String::new();
        let mut arrays: Vec<(String, usize)> = Vec::new();
        for (i, raw) in self.text.lines().enumerate() {
            let l = strip_comment(raw).trim();
            if let Some(name) = l.strip_prefix("[[").and_then(|r| r.strip_suffix("]]")) {
                let name = dotted(name);
                let n = match arrays.iter_mut().find(|(a, _)| *a == name) {
                    Some((_, n)) => {
                        *n += 1;
                        *n
                    }
                    None => {
                        arrays.push((name.clone(), 0));
                        0
                    }
                };
                header = format!("{name}.{n}");
            } else if let Some(name) = l.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
                header = indexed(&dotted(name), &arrays);
            } else if let Some((key, _)) = l.split_once('=') {
                let key = dotted(key);
                let full = if header.is_empty() {
                    key
                } else {
                    format!("{header}.{key}")
                };
                if full == path {
                    return Some(i + 1);
                }
                continue;
            } else {
                continue;
            }
            if header == path {
                return Some(i + 1);
            }
        }
        None
    }

    /// An error about `key`, located in the file, or naming the flag that
    /// set it.
    pub fn err(&self, key: &str, msg: impl Into<String>) -> InputError {
        let by_flag = self
            .overrides
            .iter()
            .rev()
            .find(|(k, _)| key == k || key.starts_with(&format!("{k}.")));
        let (file, line) = match by_flag {
            Some((_, label)) => (Some(label.clone()), None),
            None => (self.file.clone(), self.line_of(key)),
        };
        InputError {
            file,
            line,
            key: Some(key.to_string()),
            msg: msg.into(),
        }
    }
}

/// A line without its `# comment` (a `#` inside a string is kept).
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '#') => return &line[..i],
            _ => {}
        }
    }
    line
}

/// A TOML key path in one spelling: `a . "b"` is `a.b`.
fn dotted(key: &str) -> String {
    key.split('.')
        .map(|p| p.trim().trim_matches(|c| c == '"' || c == '\''))
        .collect::<Vec<_>>()
        .join(".")
}

/// `[workload.x]` after the second `[[workload]]` is `workload.1.x`.
fn indexed(name: &str, arrays: &[(String, usize)]) -> String {
    for (a, n) in arrays {
        if let Some(rest) = name.strip_prefix(&format!("{a}.")) {
            return format!("{a}.{n}.{rest}");
        }
    }
    name.to_string()
}

/// Parse the value of a `--set key=value`: a TOML literal, else a string.
pub fn parse_set_value(v: &str) -> Value {
    format!("v = {v}")
        .parse::<Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(v.to_string()))
}

/// Set a dotted key (`kernel.features.PLACE_LAG`, `workload.0.loops`).
pub fn set_key(root: &mut Table, path: &str, value: Value) -> Result<(), InputError> {
    let parts: Vec<&str> = path.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(InputError::new(format!(
            "--set: `{path}` is not a key path"
        )));
    }
    let (leaf, inner) = parts.split_last().expect("non-empty");
    let mut cur = root;
    for (i, part) in inner.iter().enumerate() {
        let next = parts.get(i + 1).copied().unwrap_or("");
        let slot = cur
            .entry(part.to_string())
            .or_insert_with(|| Value::Table(Table::new()));
        cur = match slot {
            Value::Table(t) => t,
            Value::Array(a) => {
                let idx: usize = next.parse().map_err(|_| {
                    InputError::new(format!("--set {path}: `{part}` is a list; give an index"))
                })?;
                let len = a.len();
                match a.get_mut(idx) {
                    Some(Value::Table(t)) if i + 2 < parts.len() => {
                        return set_key(t, &parts[i + 2..].join("."), value);
                    }
                    Some(_) => {
                        return Err(InputError::new(format!(
                            "--set {path}: give a key inside `{part}.{idx}`"
                        )))
                    }
                    None => {
                        return Err(InputError::new(format!(
                            "--set {path}: index {idx} out of range ({len} entries)"
                        )))
                    }
                }
            }
            _ => {
                return Err(InputError::new(format!(
                    "--set {path}: `{part}` is a value, not a table"
                )))
            }
        };
    }
    cur.insert(leaf.to_string(), value);
    Ok(())
}

fn as_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn expect_table<'a>(src: &Source, key: &str, v: &'a Value) -> Result<&'a Table, InputError> {
    v.as_table().ok_or_else(|| src.err(key, "must be a table"))
}

fn unknown(src: &Source, key: &str, known: &[&str]) -> InputError {
    let last = key.rsplit('.').next().unwrap_or(key);
    let hint = crate::util::suggest::did_you_mean(last, known.iter().copied());
    src.err(
        key,
        format!("unknown key{hint} (known here: {})", known.join(", ")),
    )
}

/// A whole number from `min` up to TOML's largest integer, `i64::MAX`.
fn get_u64(src: &Source, key: &str, v: &Value, min: u64) -> Result<u64, InputError> {
    match v.as_integer() {
        Some(n) if n >= min as i64 => Ok(n as u64),
        _ => Err(src.err(key, format!("must be an integer in {min}..={}", i64::MAX))),
    }
}

/// `sim.check_every`: "tick" (0) or a number of events ≥ 1.
fn get_check_every(src: &Source, key: &str, v: &Value) -> Result<u64, InputError> {
    match v {
        Value::String(s) if s == "tick" => Ok(0),
        Value::Integer(n) if *n >= 1 => Ok(*n as u64),
        _ => Err(src.err(key, "must be \"tick\" or a number of events ≥ 1")),
    }
}

fn get_duration(src: &Source, key: &str, v: &Value) -> Result<u64, InputError> {
    let ns = match v {
        Value::String(s) => parse_duration(s),
        _ => Err(
            "must be a duration with a unit (ns, us, ms or s), such as \"3s\" or \"500ms\""
                .to_string(),
        ),
    }
    .map_err(|e| src.err(key, e))?;
    if ns == 0 {
        return Err(src.err(key, "must be a positive duration"));
    }
    Ok(ns)
}

impl Scenario {
    /// Check every key of the merged table and resolve it.
    pub fn resolve(src: &Source, root: &Table) -> Result<Scenario, InputError> {
        let mut sc = Scenario {
            seed: 1,
            duration: None,
            check: false,
            check_every: 0,
            machine: DEFAULT_MACHINE.into(),
            max_cstate: None,
            governor: None,
            kernel: KernelConfig::default(),
            workloads: Vec::new(),
            cgroups: Vec::new(),
            output: Output::default(),
            budget: None,
        };
        for (k, v) in root {
            match k.as_str() {
                "sim" => sc.resolve_sim(src, expect_table(src, "sim", v)?)?,
                "machine" => {
                    for (mk, mv) in expect_table(src, "machine", v)? {
                        let key = format!("machine.{mk}");
                        match mk.as_str() {
                            "preset" => sc.machine = as_str(mv),
                            "max_cstate" => {
                                sc.max_cstate = Some(get_u64(src, &key, mv, 0)? as usize)
                            }
                            "cpuidle_governor" => {
                                use crate::machine::cost::Governor;
                                let g = Governor::parse(&as_str(mv)).ok_or_else(|| {
                                    let names = Governor::NAMES.join("\", \"");
                                    src.err(&key, format!("must be one of \"{names}\""))
                                })?;
                                sc.governor = Some(g);
                            }
                            _ => return Err(unknown(src, &key, &keys::names_under("machine"))),
                        }
                    }
                }
                "kernel" => sc.resolve_kernel(src, expect_table(src, "kernel", v)?)?,
                "noise" => {
                    resolve_noise(src, &mut sc.kernel.noise, expect_table(src, "noise", v)?)?
                }
                "output" => {
                    for (ok, ov) in expect_table(src, "output", v)? {
                        let key = format!("output.{ok}");
                        match ok.as_str() {
                            "json" => sc.output.json = Some(as_str(ov)),
                            "schedstat" => sc.output.schedstat = Some(as_str(ov)),
                            "quiet" => {
                                sc.output.quiet = ov
                                    .as_bool()
                                    .ok_or_else(|| src.err(&key, "must be true or false"))?
                            }
                            _ => output::output_key(&mut sc.output, ok, ov)
                                .map_err(|e| src.err(&key, e))?,
                        }
                    }
                    output::check(&sc.output).map_err(|e| src.err("output", e))?;
                }
                "workload" => {
                    let list = v.as_array().ok_or_else(|| {
                        src.err("workload", "must be a list of [[workload]] tables")
                    })?;
                    for (i, w) in list.iter().enumerate() {
                        let key = format!("workload.{i}");
                        let t = expect_table(src, &key, w)?;
                        sc.workloads.push(workload_params(src, &key, t)?);
                    }
                }
                "cgroup" => {
                    let list = v
                        .as_array()
                        .ok_or_else(|| src.err("cgroup", "must be a list of [[cgroup]] tables"))?;
                    for (i, c) in list.iter().enumerate() {
                        let key = format!("cgroup.{i}");
                        let spec = cgroup_spec(src, &key, expect_table(src, &key, c)?)?;
                        if sc.cgroups.iter().any(|o| o.path == spec.path) {
                            return Err(src.err(
                                &format!("{key}.path"),
                                format!("cgroup `{}` is declared twice", spec.path),
                            ));
                        }
                        sc.cgroups.push(spec);
                    }
                }
                _ => {
                    return Err(unknown(
                        src,
                        k,
                        &[
                            "sim", "machine", "kernel", "noise", "workload", "cgroup", "output",
                        ],
                    ))
                }
            }
        }
        if sc.workloads.is_empty() {
            return Err(InputError {
                file: src.file.clone(),
                line: None,
                key: None,
                msg:
                    "no workload: add a [[workload]] table or --workload (see `schedlab workloads`)"
                        .into(),
            });
        }
        Ok(sc)
    }

    fn resolve_sim(&mut self, src: &Source, t: &Table) -> Result<(), InputError> {
        for (k, v) in t {
            let key = format!("sim.{k}");
            match k.as_str() {
                "seed" => self.seed = get_u64(src, &key, v, 0)?,
                "duration" => self.duration = Some(get_duration(src, &key, v)?),
                "check" => {
                    self.check = v
                        .as_bool()
                        .ok_or_else(|| src.err(&key, "must be true or false"))?
                }
                "check_every" => self.check_every = get_check_every(src, &key, v)?,
                _ => return Err(unknown(src, &key, &keys::names_under("sim"))),
            }
        }
        Ok(())
    }

    fn resolve_kernel(&mut self, src: &Source, t: &Table) -> Result<(), InputError> {
        let known = keys::names_under("kernel");
        let kc = &mut self.kernel;
        for (k, v) in t {
            let key = format!("kernel.{k}");
            match k.as_str() {
                "hz" => {
                    let hz = get_u64(src, &key, v, 1)?;
                    if ![100, 250, 300, 1000].contains(&hz) {
                        return Err(src.err(&key, "must be one of 100, 250, 300, 1000 (CONFIG_HZ)"));
                    }
                    kc.hz = hz as u32;
                }
                "fair" => match as_str(v).as_str() {
                    "eevdf" => kc.fair = FairClass::Eevdf,
                    "cfs" => kc.fair = FairClass::Cfs,
                    _ => {
                        return Err(src.err(&key, "must be \"eevdf\" or \"cfs\" (legacy CFS, v6.5)"))
                    }
                },
                "rt_bandwidth" => {
                    kc.rt_bandwidth = match as_str(v).as_str() {
                        "throttle" => RtBandwidth::Throttle,
                        "fair_server" => RtBandwidth::FairServer,
                        _ => {
                            return Err(src.err(
                                &key,
                                "must be \"fair_server\" (v6.12+) or \"throttle\" (sched_rt_runtime_us, before)",
                            ))
                        }
                    }
                }
                "preempt" => {
                    kc.preempt = PreemptModel::parse(&as_str(v)).map_err(|e| src.err(&key, e))?
                }
                "base_slice_ns" => kc.base_slice_ns = get_u64(src, &key, v, 100_000)?,
                "tunable_scaling" => {
                    let s = get_u64(src, &key, v, 0)?;
                    if s > 2 {
                        return Err(src.err(&key, "must be 0 (none), 1 (log) or 2 (linear)"));
                    }
                    kc.tunable_scaling = s as u32;
                }
                "migration_cost_ns" => kc.migration_cost_ns = get_u64(src, &key, v, 0)?,
                "timer_slack_ns" => kc.timer_slack_ns = get_u64(src, &key, v, 0)?,
                "wakelist" => {
                    kc.wakelist = Wakelist::parse(&as_str(v)).ok_or_else(|| {
                        let names = Wakelist::NAMES.map(|n| format!("\"{n}\"")).join(", ");
                        src.err(&key, format!("must be one of {names}"))
                    })?
                }
                "pelt" => {
                    kc.pelt = PeltModel::parse(&as_str(v)).ok_or_else(|| {
                        let names = PeltModel::NAMES.map(|n| format!("\"{n}\"")).join(", ");
                        src.err(&key, format!("must be one of {names}"))
                    })?
                }
                "wakelist_cross_llc" => {
                    kc.wakelist_cross_llc = v
                        .as_bool()
                        .ok_or_else(|| src.err(&key, "must be true or false"))?
                }
                "irq_time_accounting" => {
                    kc.irq_time_accounting = v
                        .as_bool()
                        .ok_or_else(|| src.err(&key, "must be true or false"))?
                }
                "completion" => {
                    use crate::kernel::completion::CompletionVariant as V;
                    kc.completion = V::parse(&as_str(v)).ok_or_else(|| {
                        src.err(
                            &key,
                            format!("must be one of \"{}\"", V::NAMES.join("\", \"")),
                        )
                    })?;
                }
                "domain" => {
                    for (lvl, lv) in expect_table(src, &key, v)? {
                        let lkey = format!("kernel.domain.{lvl}");
                        for (dk, dv) in expect_table(src, &lkey, lv)? {
                            let fkey = format!("{lkey}.{dk}");
                            if dk != "flags" {
                                return Err(unknown(src, &fkey, &["flags"]));
                            }
                            let spec = as_str(dv);
                            check_domain_flags(&spec).map_err(|e| src.err(&fkey, e))?;
                            kc.domain_flags.push((lvl.clone(), spec));
                        }
                    }
                }
                "features" if v.is_str() => {
                    kc.features
                        .set_list(&as_str(v))
                        .map_err(|e| src.err(&key, e))?;
                }
                "features" => {
                    for (f, fv) in expect_table(src, &key, v)? {
                        let fkey = format!("kernel.features.{f}");
                        let on = fv
                            .as_bool()
                            .ok_or_else(|| src.err(&fkey, "must be true or false"))?;
                        kc.features.set(f, on).map_err(|e| src.err(&fkey, e))?;
                    }
                }
                _ => return Err(unknown(src, &key, &known)),
            }
        }
        Ok(())
    }

    /// The resolved scenario as a table (every key, defaults included).
    pub fn to_table(&self) -> Table {
        let mut root = Table::new();
        let mut sim = Table::new();
        sim.insert("seed".into(), Value::Integer(self.seed as i64));
        if let Some(d) = self.duration {
            sim.insert("duration".into(), Value::String(format!("{d}ns")));
        }
        sim.insert("check".into(), Value::Boolean(self.check));
        if self.check {
            let every = match self.check_every {
                0 => Value::String("tick".into()),
                n => Value::Integer(n as i64),
            };
            sim.insert("check_every".into(), every);
        }
        root.insert("sim".into(), Value::Table(sim));
        let mut m = Table::new();
        m.insert("preset".into(), Value::String(self.machine.clone()));
        if let Some(n) = self.max_cstate {
            m.insert("max_cstate".into(), Value::Integer(n as i64));
        }
        if let Some(g) = self.governor {
            let name = crate::machine::cost::Governor::NAMES[g as usize];
            m.insert("cpuidle_governor".into(), Value::String(name.into()));
        }
        root.insert("machine".into(), Value::Table(m));
        let k = &self.kernel;
        let mut kt = Table::new();
        kt.insert(
            "fair".into(),
            Value::String(
                if k.fair == FairClass::Cfs {
                    "cfs"
                } else {
                    "eevdf"
                }
                .into(),
            ),
        );
        kt.insert("preempt".into(), Value::String(k.preempt.name().into()));
        let bw = match k.rt_bandwidth {
            RtBandwidth::Throttle => "throttle",
            RtBandwidth::FairServer => "fair_server",
        };
        kt.insert("rt_bandwidth".into(), Value::String(bw.into()));
        kt.insert("wakelist".into(), Value::String(k.wakelist.name().into()));
        kt.insert("pelt".into(), Value::String(k.pelt.name().into()));
        kt.insert(
            "wakelist_cross_llc".into(),
            Value::Boolean(k.wakelist_cross_llc),
        );
        kt.insert(
            "irq_time_accounting".into(),
            Value::Boolean(k.irq_time_accounting),
        );
        kt.insert(
            "completion".into(),
            Value::String(k.completion.name().into()),
        );
        let ints = [
            ("hz", k.hz as u64),
            ("base_slice_ns", k.base_slice_ns),
            ("tunable_scaling", k.tunable_scaling as u64),
            ("migration_cost_ns", k.migration_cost_ns),
            ("timer_slack_ns", k.timer_slack_ns),
        ];
        for (name, v) in ints {
            kt.insert(name.into(), Value::Integer(v as i64));
        }
        let feats: Table = k
            .features
            .to_map()
            .into_iter()
            .map(|(n, v)| (n, Value::Boolean(v)))
            .collect();
        kt.insert("features".into(), Value::Table(feats));
        if !k.domain_flags.is_empty() {
            let dom: Table = k
                .domain_flags
                .iter()
                .map(|(lvl, spec)| {
                    let mut t = Table::new();
                    t.insert("flags".into(), Value::String(spec.clone()));
                    (lvl.clone(), Value::Table(t))
                })
                .collect();
            kt.insert("domain".into(), Value::Table(dom));
        }
        root.insert("kernel".into(), Value::Table(kt));
        root.insert("noise".into(), noise_table(&k.noise));
        let wl: Vec<Value> = self
            .workloads
            .iter()
            .map(|p| {
                let mut t = Table::new();
                t.insert("kind".into(), Value::String(p.kind.clone()));
                for (k, v) in &p.values {
                    t.insert(k.clone(), parse_set_value(v));
                }
                Value::Table(t)
            })
            .collect();
        root.insert("workload".into(), Value::Array(wl));
        if !self.cgroups.is_empty() {
            let cg: Vec<Value> = self
                .cgroups
                .iter()
                .map(|c| {
                    let mut t = Table::new();
                    t.insert("path".into(), Value::String(c.path.clone()));
                    t.insert("weight".into(), Value::Integer(c.weight as i64));
                    if let Some((q, p)) = c.max {
                        t.insert("max".into(), Value::String(format!("{q} {p}")));
                    }
                    Value::Table(t)
                })
                .collect();
            root.insert("cgroup".into(), Value::Array(cg));
        }
        root
    }
}

/// The `[noise]` table (noise.rs): each source's knob; a negative or
/// unknown one is an error naming its line.
fn resolve_noise(src: &Source, n: &mut NoiseConfig, t: &Table) -> Result<(), InputError> {
    for (k, v) in t {
        let key = format!("noise.{k}");
        let flag = || {
            v.as_bool()
                .ok_or_else(|| src.err(&key, "must be true or false"))
        };
        match k.as_str() {
            "enabled" => n.enabled = flag()?,
            "tick_phase" => n.tick_phase = flag()?,
            "timer_slack" => n.timer_slack = flag()?,
            "cost_cv" => n.cost_cv = get_nonneg_f64(src, &key, v)?,
            "irq_rate_hz" => n.irq_rate_hz = get_nonneg_f64(src, &key, v)?,
            "irq_ns" => n.irq_ns = get_u64(src, &key, v, 0)?,
            _ => return Err(unknown(src, &key, &keys::names_under("noise"))),
        }
    }
    Ok(())
}

/// A finite number ≥ 0 (an integer is taken as one).
fn get_nonneg_f64(src: &Source, key: &str, v: &Value) -> Result<f64, InputError> {
    let x = match v {
        Value::Float(f) => Some(*f),
        Value::Integer(i) => Some(*i as f64),
        _ => None,
    };
    match x {
        Some(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(src.err(key, "must be a number ≥ 0")),
    }
}

/// The resolved noise settings as a `[noise]` table.
fn noise_table(n: &NoiseConfig) -> Value {
    let mut t = Table::new();
    t.insert("enabled".into(), Value::Boolean(n.enabled));
    t.insert("tick_phase".into(), Value::Boolean(n.tick_phase));
    t.insert("cost_cv".into(), Value::Float(n.cost_cv));
    t.insert("timer_slack".into(), Value::Boolean(n.timer_slack));
    t.insert("irq_rate_hz".into(), Value::Float(n.irq_rate_hz));
    t.insert("irq_ns".into(), Value::Integer(n.irq_ns as i64));
    Value::Table(t)
}

/// Every name in a domain flags spec (`+SD_X`, `-SD_X` or `SD_A|SD_B`) must
/// be a kernel SD_* flag.
fn check_domain_flags(spec: &str) -> Result<(), String> {
    crate::kernel::sched_domain::parse_flags_spec(spec).map(|_| ())
}

/// A `[[cgroup]]` table: path, weight (cpu.weight) and max (cpu.max).
fn cgroup_spec(src: &Source, key: &str, t: &Table) -> Result<CgroupSpec, InputError> {
    let mut spec = CgroupSpec {
        path: String::new(),
        weight: CGROUP_WEIGHT_DFL,
        max: None,
    };
    for (k, v) in t {
        let fk = format!("{key}.{k}");
        match k.as_str() {
            "path" => {
                let path = v
                    .as_str()
                    .ok_or_else(|| src.err(&fk, "must be a string such as \"/a/b\""))?;
                spec.path = normalize(path).map_err(|e| src.err(&fk, e))?;
            }
            "weight" => {
                let w = v
                    .as_integer()
                    .ok_or_else(|| src.err(&fk, "must be an integer (cpu.weight, 1..10000)"))?;
                if !(CGROUP_WEIGHT_MIN as i64..=CGROUP_WEIGHT_MAX as i64).contains(&w) {
                    return Err(src.err(&fk, format!("{w} is outside 1..10000 (cpu.weight)")));
                }
                spec.weight = w as u64;
            }
            "max" => spec.max = parse_cpu_max(&as_str(v)).map_err(|e| src.err(&fk, e))?,
            _ => return Err(unknown(src, &fk, &keys::names_under("cgroup.N"))),
        }
    }
    if spec.path.is_empty() {
        return Err(src.err(key, "needs `path = \"/a/b\"`"));
    }
    Ok(spec)
}

/// Turn `--cgroup /a/b:weight=300,max=50000 100000` into a `[[cgroup]]` table.
pub fn cgroup_table(spec: &str) -> Result<Value, InputError> {
    let (path, rest) = spec.split_once(':').unwrap_or((spec, ""));
    let mut t = Table::new();
    t.insert("path".into(), Value::String(path.trim().to_string()));
    for kv in rest.split(',').filter(|s| !s.trim().is_empty()) {
        let (k, v) = kv.split_once('=').ok_or_else(|| {
            InputError::new(format!(
                "--cgroup `{spec}`: expected PATH:weight=N,max=\"QUOTA PERIOD\""
            ))
        })?;
        t.insert(k.trim().to_string(), parse_set_value(v.trim()));
    }
    Ok(Value::Table(t))
}

/// A `[[workload]]` table → Params (validated later by the workload).
fn workload_params(src: &Source, key: &str, t: &Table) -> Result<Params, InputError> {
    let kind = t
        .get("kind")
        .and_then(Value::as_str)
        .ok_or_else(|| src.err(key, "needs `kind = \"hackbench\"` (or pipe, periodic)"))?;
    let values = t
        .iter()
        .filter(|(k, _)| k.as_str() != "kind")
        .map(|(k, v)| (k.clone(), as_str(v)))
        .collect();
    Ok(Params {
        kind: kind.to_string(),
        values,
    })
}

/// Turn a `--workload name:k=v,...` spec into a `[[workload]]` table.
pub fn workload_table(spec: &str) -> Result<Value, InputError> {
    let p = Params::parse_spec(spec).map_err(InputError::new)?;
    let mut t = Table::new();
    t.insert("kind".into(), Value::String(p.kind));
    for (k, v) in p.values {
        t.insert(k, parse_set_value(&v));
    }
    Ok(Value::Table(t))
}

/// Names of all features with defaults, for `schedlab features`.
pub fn feature_lines() -> Vec<String> {
    FEATURES
        .iter()
        .map(|(_, n, d, what)| format!("{n:<24} {:<5} {what}", if *d { "on" } else { "off" }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(text: &str) -> Result<Scenario, InputError> {
        let (src, t) = Source::parse(Some("t.toml".into()), text.into())?;
        Scenario::resolve(&src, &t)
    }

    #[test]
    fn resolves_keys_and_defaults() {
        let sc = resolve(DEMO).unwrap();
        assert_eq!(sc.machine, "xeon-8269cy");
        assert_eq!(sc.kernel.hz, 250);
        assert_eq!(sc.workloads[0].kind, "hackbench");
        assert_eq!(sc.workloads[0].values["groups"], "4");
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let e = resolve("[kernel]\nhz = 250\nbogus = 1\n").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert_eq!(e.key.as_deref(), Some("kernel.bogus"));
        assert!(e.to_string().starts_with("t.toml:3: key `kernel.bogus`"));
        let e = resolve("[kernel.features]\nPLACE_LAGG = true\n[[workload]]\nkind='pipe'\n")
            .unwrap_err();
        assert_eq!(e.line, Some(2));
        let e = resolve("[sim]\nduration = \"-3s\"\n").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("sim.duration"));
        let e = resolve("[sim\nseed=1").unwrap_err();
        assert!(e.msg.contains("malformed TOML") && e.line.is_some());
    }

    #[test]
    fn errors_keep_their_line_after_comments_and_dotted_keys() {
        let line = |text: &str| resolve(text).unwrap_err().line;
        let w = "[[workload]]\nkind = 'pipe'\n";
        // A header with a comment, as in scenarios/hackbench.toml.
        assert_eq!(
            line(&format!("[kernel.features]  # c\nNOPE = true\n{w}")),
            Some(2)
        );
        assert_eq!(line(&format!("[kernel] # c\nhz = 7 # c\n{w}")), Some(2));
        // Dotted keys, at the root and inside a table.
        assert_eq!(line(&format!("sim.seed = 1\nkernel.hz = 7\n{w}")), Some(2));
        assert_eq!(
            line(&format!("[kernel]\nfeatures.NOPE = true\n{w}")),
            Some(2)
        );
        assert_eq!(
            line(&format!("[ kernel . \"features\" ]\nNOPE = true\n{w}")),
            Some(2)
        );
        // The second workload's key, past a `#` inside a string.
        let two = "[[workload]]\nkind = 'pipe' # x\n[[workload]]\nkind = '#'\nloops = 1\n";
        let (src, _) = Source::parse(None, two.into()).unwrap();
        assert_eq!(src.line_of("workload.1.loops"), Some(5));
        assert_eq!(src.line_of("workload.1"), Some(3));
        assert_eq!(src.line_of("workload.0.loops"), None);
    }

    #[test]
    fn a_control_character_in_a_comment_has_a_reason() {
        let e = resolve("[sim]\nseed = 1 # a\u{1}b\n").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(
            e.msg.contains("control character U+0001 at column 13"),
            "{}",
            e.msg
        );
    }

    #[test]
    fn no_feature_spellings_turn_a_feature_off() {
        use crate::kernel::features::Feature;
        let lag = |text: &str| {
            resolve(&format!("{text}\n[[workload]]\nkind='pipe'\n"))
                .unwrap()
                .kernel
                .features
                .enabled(Feature::PlaceLag)
        };
        assert!(lag(""));
        assert!(!lag("[kernel.features]\nNO_PLACE_LAG = true"));
        assert!(lag("[kernel.features]\nNO_PLACE_LAG = false"));
        assert!(!lag("[kernel]\nfeatures = \"NO_PLACE_LAG RUN_TO_PARITY\""));
        let e = resolve("[kernel]\nfeatures = \"NO_PLACE_LAGG\"\n").unwrap_err();
        assert!(e.msg.contains("did you mean `PLACE_LAG`"), "{e}");
    }

    #[test]
    fn set_overrides_nested_and_indexed_keys() {
        let (src, mut t) = Source::parse(None, DEMO.into()).unwrap();
        set_key(
            &mut t,
            "kernel.features.PLACE_LAG",
            parse_set_value("false"),
        )
        .unwrap();
        set_key(&mut t, "workload.0.loops", parse_set_value("7")).unwrap();
        set_key(&mut t, "kernel.hz", parse_set_value("1000")).unwrap();
        let sc = Scenario::resolve(&src, &t).unwrap();
        assert!(!sc
            .kernel
            .features
            .enabled(crate::kernel::features::Feature::PlaceLag));
        assert_eq!(sc.workloads[0].values["loops"], "7");
        assert_eq!(sc.kernel.hz, 1000);
        assert!(set_key(&mut t, "workload.5.loops", Value::Integer(1)).is_err());
        // The resolved table resolves to the same scenario.
        let again = Scenario::resolve(&src, &sc.to_table()).unwrap();
        assert_eq!(again.to_table(), sc.to_table());
    }
}
