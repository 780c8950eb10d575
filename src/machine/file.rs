//! Machine files: a machine described in TOML, accepted by `--machine
//! FILE.toml` wherever a preset name is. `schedlab calibrate` writes them;
//! they can also be written by hand.
//!
//! ```toml
//! name = "my-vm"          # optional; default: the file's stem
//! description = "..."     # optional
//! date = "2026-11-27"     # optional: when it was measured (calibrate writes it)
//! base = "vm-2"           # optional: a preset, smp:... or host, supplying
//!                         # the topology and every cost the file leaves out
//! [topology]              # replaces the base's; required without a base
//! sockets = 1             # compact keys (a regular machine, see Shape) ...
//! cores_per_socket = 2
//! threads_per_core = 1
//! # ... or one record per CPU, as `host` reads them from /sys:
//! # cpus = [{ core = 0, llc = 0, node = 0, socket = 0 }, ...]
//! numa_distance = [[10]]  # optional; default 10 local, 20 remote
//! [cost]                  # CostModel fields; without a base, every one
//! syscall_ns = 180
//! [[cost.idle_states]]    # replaces the base's list when given
//! name = "HLT"
//! exit_latency_ns = 1000
//! target_residency_ns = 2000
//! polling = false         # the cpuidle POLL state
//! mwait = false           # optional: x86 MWAIT, TIF_POLLING_NRFLAG held
//! [measured]              # informational: calibrate's raw results
//! syscall = { median = 178.0, p10 = 170.0, p90 = 190.0, samples = 600, unit = "ns" }
//! ```
//!
//! Errors name the file, the line and the key.

use super::cost::{self, CostModel, Governor};
use super::topology::{uniform_distance, CpuTopo, Enumeration, Machine, Shape};
use std::path::Path;
use toml::{Table, Value};

const TOP_KEYS: [&str; 7] = [
    "name",
    "description",
    "date",
    "base",
    "topology",
    "cost",
    "measured",
];
const SHAPE_KEYS: [&str; 8] = [
    "sockets",
    "nodes_per_socket",
    "cores_per_socket",
    "threads_per_core",
    "cores_per_cluster",
    "cores_per_llc",
    "cores_per_coregroup",
    "enumeration",
];
const CPU_KEYS: [&str; 7] = [
    "core",
    "cluster",
    "llc",
    "coregroup",
    "node",
    "socket",
    "capacity",
];
const MEASURED_KEYS: [&str; 5] = ["median", "p10", "p90", "samples", "unit"];
/// SLIT distances when a file gives no `numa_distance`.
const LOCAL: u32 = 10;
const REMOTE: u32 = 20;

/// Is this `--machine` spec a machine file?
pub fn is_file_spec(spec: &str) -> bool {
    spec.ends_with(".toml")
}

/// Load a machine file.
pub fn load(path: &Path) -> Result<Machine, String> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{file}: cannot read machine file: {e}"))?;
    let stem = path
        .file_stem()
        .map_or("machine".into(), |s| s.to_string_lossy().into_owned());
    parse(&file, &stem, &text)
}

/// Parse a machine file's text; `file` names it in errors, `stem` is the
/// default name.
pub fn parse(file: &str, stem: &str, text: &str) -> Result<Machine, String> {
    let f = MachineFile { file, text };
    let t: Table = text.parse().map_err(|e: toml::de::Error| {
        let (line, reason) = crate::util::toml_text::malformed(text, &e);
        format!("{file}:{}: malformed TOML: {reason}", line.unwrap_or(1))
    })?;
    f.build(stem, &t)
}

/// The file being loaded: its name and text, for error locations.
struct MachineFile<'a> {
    file: &'a str,
    text: &'a str,
}

/// The most cache lines a cost field may count: 256 KiB of 64-byte lines.
const MAX_LINES: i64 = 4096;

impl MachineFile<'_> {
    /// The line where `key` of table `section` ("" = top level) is set,
    /// else that table's header, else 1.
    fn line_of(&self, section: &str, key: &str) -> usize {
        let mut header = String::new();
        let mut header_line = None;
        let full = dotted(section, key);
        for (i, line) in self.text.lines().enumerate() {
            let l = line.trim();
            if l.starts_with('[') {
                header = l.trim_matches(|c| c == '[' || c == ']').trim().to_string();
                if header == full {
                    return i + 1;
                }
                if header == section && header_line.is_none() {
                    header_line = Some(i + 1);
                }
                continue;
            }
            let Some((lhs, _)) = l.split_once('=') else {
                continue;
            };
            let lhs = lhs.trim().trim_matches('"');
            let at = if header.is_empty() {
                lhs.to_string()
            } else {
                format!("{header}.{lhs}")
            };
            if at == full {
                return i + 1;
            }
        }
        header_line.unwrap_or(1)
    }

    /// Table `key` of the top level, if present.
    fn table<'t>(&self, t: &'t Table, key: &str) -> Option<Result<&'t Table, String>> {
        t.get(key).map(|v| match v {
            Value::Table(x) => Ok(x),
            _ => Err(self.err("", key, "expected a table")),
        })
    }

    fn err(&self, section: &str, key: &str, msg: impl std::fmt::Display) -> String {
        let line = self.line_of(section, key);
        format!("{}:{line}: {}: {msg}", self.file, dotted(section, key))
    }

    fn build(&self, stem: &str, t: &Table) -> Result<Machine, String> {
        for k in t.keys() {
            if !TOP_KEYS.contains(&k.as_str()) {
                return Err(self.err("", k, unknown(&TOP_KEYS)));
            }
        }
        let string = |k: &str| match t.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.err("", k, "expected a string")),
        };
        let base = match string("base")? {
            Some(b) if is_file_spec(&b) => {
                return Err(self.err("", "base", "must be a preset, smp:... or host, not a file"))
            }
            Some(b) => Some(super::from_spec(&b).map_err(|e| self.err("", "base", e))?),
            None => None,
        };
        let (cpus, distance) = match (self.table(t, "topology"), &base) {
            (Some(topo), _) => self.topology(topo?)?,
            (None, Some(b)) => (b.cpus.clone(), b.numa_distance.clone()),
            (None, None) => {
                return Err(format!(
                    "{}:1: topology: missing: give [topology] or base = \"PRESET\"",
                    self.file
                ))
            }
        };
        let cost = match self.table(t, "cost") {
            Some(c) => self.cost(c?, base.as_ref().map(|b| &b.cost))?,
            None => match &base {
                Some(b) => b.cost.clone(),
                None => {
                    return Err(format!(
                        "{}:1: cost: missing: give [cost] or base = \"PRESET\"",
                        self.file
                    ))
                }
            },
        };
        if let Some(m) = self.table(t, "measured") {
            self.measured(m?)?;
        }
        string("date")?; // informational here; `host` prints it (host::read_cache)
        let name = string("name")?.unwrap_or_else(|| stem.to_string());
        let mut m = Machine::new(name, "", cpus, distance, cost)
            .map_err(|e| format!("{}:{}: {e}", self.file, self.line_of("topology", "")))?;
        let about = string("description")?.unwrap_or_else(|| format!("machine file {}", self.file));
        m.description = format!("{about}: {}", m.summary());
        m.costs_from = match (&base, t.contains_key("cost")) {
            (Some(b), false) => format!("machine file {} (base: {})", self.file, b.costs_from),
            (Some(b), true) => format!("machine file {} over {}", self.file, b.costs_from),
            (None, _) => format!("machine file {}", self.file),
        };
        Ok(m)
    }

    /// `[topology]`: compact shape keys or per-CPU records, and distances.
    fn topology(&self, t: &Table) -> Result<(Vec<CpuTopo>, Vec<Vec<u32>>), String> {
        const S: &str = "topology";
        for k in t.keys() {
            let known = SHAPE_KEYS.contains(&k.as_str()) || k == "cpus" || k == "numa_distance";
            if !known {
                let mut keys = SHAPE_KEYS.to_vec();
                keys.extend(["cpus", "numa_distance"]);
                return Err(self.err(S, k, unknown(&keys)));
            }
        }
        let cpus = match t.get("cpus") {
            Some(v) => {
                if let Some(k) = SHAPE_KEYS.iter().find(|k| t.contains_key(**k)) {
                    return Err(self.err(S, k, "give either cpus = [...] or the shape keys"));
                }
                self.cpu_records(v)?
            }
            None => self
                .shape(t)?
                .build_cpus()
                .map_err(|e| self.err(S, "", e))?,
        };
        // Capped so a sparse node id fails as "not dense", not as a huge table.
        let nodes = (cpus.iter().map(|c| c.node).max().unwrap_or(0) + 1).min(cpus.len());
        let distance = match t.get("numa_distance") {
            None => uniform_distance(nodes, LOCAL, REMOTE),
            Some(v) => self.distance(v)?,
        };
        Ok((cpus, distance))
    }

    fn shape(&self, t: &Table) -> Result<Shape, String> {
        const S: &str = "topology";
        let num = |k: &str| -> Result<Option<usize>, String> {
            match t.get(k) {
                None => Ok(None),
                Some(v) => self.count(S, k, v).map(Some),
            }
        };
        let need = |k: &str| {
            num(k)?.ok_or_else(|| self.err(S, k, "missing (or give cpus = [...] instead)"))
        };
        let (sockets, cores, threads) = (
            need("sockets")?,
            need("cores_per_socket")?,
            need("threads_per_core")?,
        );
        let nodes = num("nodes_per_socket")?.unwrap_or(1);
        let llc = num("cores_per_llc")?.unwrap_or(cores / nodes.max(1));
        let enumeration = match t.get("enumeration") {
            None => Enumeration::ThreadsLast,
            Some(Value::String(s)) => match s.as_str() {
                "threads-last" => Enumeration::ThreadsLast,
                "siblings-adjacent" => Enumeration::SiblingsAdjacent,
                "power-big-core" => Enumeration::PowerBigCore,
                _ => return Err(self.err(S, "enumeration", ENUMERATIONS)),
            },
            Some(_) => return Err(self.err(S, "enumeration", ENUMERATIONS)),
        };
        Ok(Shape {
            sockets,
            nodes_per_socket: nodes,
            cores_per_socket: cores,
            threads_per_core: threads,
            cores_per_cluster: num("cores_per_cluster")?.unwrap_or(1),
            cores_per_llc: llc,
            cores_per_coregroup: num("cores_per_coregroup")?.unwrap_or(llc),
            enumeration,
        })
    }

    /// `cpus = [{ core = 0, llc = 0, node = 0, socket = 0 }, ...]`; cluster
    /// defaults to the core, coregroup to the LLC, capacity to 1024.
    fn cpu_records(&self, v: &Value) -> Result<Vec<CpuTopo>, String> {
        const S: &str = "topology";
        let Value::Array(list) = v else {
            return Err(self.err(S, "cpus", "expected a list of tables"));
        };
        let mut cpus = Vec::with_capacity(list.len());
        for (i, e) in list.iter().enumerate() {
            let key = format!("cpus[{i}]");
            let Value::Table(r) = e else {
                return Err(self.err(S, "cpus", format!("{key}: expected a table")));
            };
            if let Some(k) = r.keys().find(|k| !CPU_KEYS.contains(&k.as_str())) {
                let msg = format!("{key}.{k}: {}", unknown(&CPU_KEYS));
                return Err(self.err(S, "cpus", msg));
            }
            let get = |k: &str| -> Result<Option<usize>, String> {
                r.get(k)
                    .map(|v| {
                        self.count(S, "cpus", v)
                            .map_err(|e| format!("{e} ({key}.{k})"))
                    })
                    .transpose()
            };
            let need =
                |k: &str| get(k)?.ok_or_else(|| self.err(S, "cpus", format!("{key}.{k}: missing")));
            let core = need("core")?;
            let llc = need("llc")?;
            cpus.push(CpuTopo {
                cpu: i,
                core,
                cluster: get("cluster")?.unwrap_or(core),
                llc,
                node: need("node")?,
                socket: need("socket")?,
                capacity: get("capacity")?.unwrap_or(1024) as u32,
                coregroup: get("coregroup")?.unwrap_or(llc),
            });
        }
        Ok(cpus)
    }

    fn distance(&self, v: &Value) -> Result<Vec<Vec<u32>>, String> {
        let bad = || {
            self.err(
                "topology",
                "numa_distance",
                "expected a square list of lists of whole numbers",
            )
        };
        let Value::Array(rows) = v else {
            return Err(bad());
        };
        rows.iter()
            .map(|r| match r {
                Value::Array(cells) => cells
                    .iter()
                    .map(|c| match c {
                        Value::Integer(d) if (1..=255).contains(d) => Ok(*d as u32),
                        _ => Err(bad()),
                    })
                    .collect(),
                _ => Err(bad()),
            })
            .collect()
    }

    /// `[cost]` over the base's model (or alone, then complete).
    /// A `*_lines` field is at most [`MAX_LINES`].
    fn cost(&self, t: &Table, base: Option<&CostModel>) -> Result<CostModel, String> {
        const S: &str = "cost";
        let template = Table::try_from(base.cloned().unwrap_or_else(cost::kvm_guest))
            .map_err(|e| format!("{}: cost model: {e}", self.file))?;
        let mut merged = if base.is_some() {
            template.clone()
        } else {
            Table::new()
        };
        for (k, v) in t {
            let Some(like) = template.get(k) else {
                let keys: Vec<&str> = template.keys().map(String::as_str).collect();
                return Err(self.err(S, k, unknown(&keys)));
            };
            match (like, v) {
                (Value::Array(_), _) => self.idle_states(v)?,
                (Value::Integer(_), Value::Integer(n)) if *n < 0 => {
                    return Err(self.err(S, k, format!("negative cost {n}")))
                }
                // A line count beyond a 256 KiB object is a typo, and would
                // stall a run in one operation of hours.
                (Value::Integer(_), Value::Integer(n))
                    if k.ends_with("_lines") && *n > MAX_LINES =>
                {
                    let msg = format!("{n} cache lines: at most {MAX_LINES} (256 KiB)");
                    return Err(self.err(S, k, msg));
                }
                (Value::Integer(_), Value::Integer(n))
                    if k == "page_size" && !u64::try_from(*n).is_ok_and(cost::page_size_ok) =>
                {
                    let msg = format!("{n} bytes: a power of two from 4096 to 262144");
                    return Err(self.err(S, k, msg));
                }
                (Value::Integer(_), Value::Integer(_)) => {}
                (Value::String(_), Value::String(g)) if k == "governor" => {
                    if Governor::parse(g).is_none() {
                        let msg = format!(
                            "unknown governor `{g}` (one of {})",
                            Governor::NAMES.join(", ")
                        );
                        return Err(self.err(S, k, msg));
                    }
                }
                (Value::String(_), _) => return Err(self.err(S, k, "expected a string")),
                _ => return Err(self.err(S, k, "expected a whole number (ns)")),
            }
            merged.insert(k.clone(), v.clone());
        }
        let required = |k: &&String| !cost::OPTIONAL.contains(&k.as_str());
        if let Some(k) = template
            .keys()
            .filter(required)
            .find(|k| !merged.contains_key(*k))
        {
            let msg = "missing (give every cost, or base = \"PRESET\" for the rest)";
            return Err(self.err(S, k, msg));
        }
        Value::Table(merged)
            .try_into()
            .map_err(|e: toml::de::Error| self.err(S, "", e.message().trim()))
    }

    fn idle_states(&self, v: &Value) -> Result<(), String> {
        const S: &str = "cost";
        const KEYS: [&str; 4] = ["name", "exit_latency_ns", "target_residency_ns", "polling"];
        // Optional (machine files written before 2026-11-28 lack it): false.
        const MWAIT: &str = "mwait";
        const ALL: [&str; 5] = [KEYS[0], KEYS[1], KEYS[2], KEYS[3], MWAIT];
        let Value::Array(list) = v else {
            return Err(self.err(S, "idle_states", "expected a list of tables"));
        };
        for (i, e) in list.iter().enumerate() {
            let at = |k: &str, msg: &str| self.err(S, "idle_states", format!("[{i}].{k}: {msg}"));
            let Value::Table(s) = e else {
                return Err(at("", "expected a table"));
            };
            for k in KEYS {
                let ok = match (k, s.get(k)) {
                    (_, None) => return Err(at(k, "missing")),
                    ("name", Some(v)) => v.is_str(),
                    ("polling", Some(v)) => v.is_bool(),
                    (_, Some(Value::Integer(n))) if *n < 0 => {
                        return Err(at(k, &format!("negative latency {n}")))
                    }
                    (_, Some(v)) => v.is_integer(),
                };
                if !ok {
                    return Err(at(k, "wrong type"));
                }
            }
            if s.get(MWAIT).is_some_and(|v| !v.is_bool()) {
                return Err(at(MWAIT, "wrong type"));
            }
            if let Some(k) = s.keys().find(|k| !ALL.contains(&k.as_str())) {
                return Err(at(k, &unknown(&ALL)));
            }
        }
        Ok(())
    }

    /// `[measured]`: checked for names and shape only; the simulator does
    /// not read it.
    fn measured(&self, t: &Table) -> Result<(), String> {
        const S: &str = "measured";
        for (k, v) in t {
            if !super::measured::is_primitive(k) {
                let msg = "not a primitive calibrate measures (such as getppid, pipe_stream_100, line_llc)";
                return Err(self.err(S, k, msg));
            }
            let Value::Table(r) = v else {
                return Err(self.err(
                    S,
                    k,
                    "expected { median = .., p10 = .., p90 = .., samples = .. }",
                ));
            };
            for (f, x) in r {
                let ok = match f.as_str() {
                    "unit" => x.is_str(),
                    "samples" => x.as_integer().is_some_and(|n| n >= 0),
                    _ if MEASURED_KEYS.contains(&f.as_str()) => x.is_float() || x.is_integer(),
                    _ => return Err(self.err(S, k, format!("{f}: {}", unknown(&MEASURED_KEYS)))),
                };
                if !ok {
                    return Err(self.err(S, k, format!("{f}: wrong type")));
                }
            }
        }
        Ok(())
    }

    fn count(&self, section: &str, key: &str, v: &Value) -> Result<usize, String> {
        match v {
            Value::Integer(n) if *n >= 0 => Ok(*n as usize),
            Value::Integer(n) => Err(self.err(section, key, format!("negative value {n}"))),
            _ => Err(self.err(section, key, "expected a whole number")),
        }
    }
}

const ENUMERATIONS: &str = "expected \"threads-last\", \"siblings-adjacent\" or \"power-big-core\"";

/// `section.key`, or whichever of the two is not empty.
fn dotted(section: &str, key: &str) -> String {
    match (section.is_empty(), key.is_empty()) {
        (true, _) => key.to_string(),
        (false, true) => section.to_string(),
        (false, false) => format!("{section}.{key}"),
    }
}

fn unknown(keys: &[&str]) -> String {
    format!("unknown key (keys: {})", keys.join(", "))
}

/// `[topology]` for a machine: compact shape keys when a [`Shape`]
/// rebuilds its CPUs exactly, else one record per CPU; then the distances.
pub fn topology_toml(m: &Machine) -> String {
    let mut out = String::from("[topology]\n");
    match regular_shape(m) {
        Some(s) => {
            let e = match s.enumeration {
                Enumeration::ThreadsLast => "threads-last",
                Enumeration::SiblingsAdjacent => "siblings-adjacent",
                Enumeration::PowerBigCore => "power-big-core",
            };
            out += &format!(
                "sockets = {}\nnodes_per_socket = {}\ncores_per_socket = {}\nthreads_per_core = {}\n\
                 cores_per_cluster = {}\ncores_per_llc = {}\ncores_per_coregroup = {}\nenumeration = \"{e}\"\n",
                s.sockets,
                s.nodes_per_socket,
                s.cores_per_socket,
                s.threads_per_core,
                s.cores_per_cluster,
                s.cores_per_llc,
                s.cores_per_coregroup
            );
        }
        None => {
            out += "cpus = [\n";
            for c in &m.cpus {
                out += &format!(
                    "  {{ core = {}, cluster = {}, llc = {}, coregroup = {}, node = {}, socket = {}, capacity = {} }}, # CPU {}\n",
                    c.core, c.cluster, c.llc, c.coregroup, c.node, c.socket, c.capacity, c.cpu
                );
            }
            out += "]\n";
        }
    }
    let rows: Vec<String> = m.numa_distance.iter().map(|r| format!("{r:?}")).collect();
    out += &format!("numa_distance = [{}]\n", rows.join(", "));
    out
}

/// The shape that rebuilds `m`'s CPU records exactly, if there is one.
fn regular_shape(m: &Machine) -> Option<Shape> {
    let n = |x: usize| x.max(1);
    let sockets = m.nr_sockets;
    let cores = m.nr_cores / n(sockets);
    let llc = m.nr_cores / n(m.nr_llcs);
    let cluster = m.nr_cores / n(m.cpus.iter().map(|c| c.cluster).max()? + 1);
    let coregroup = m.nr_cores / n(m.nr_coregroups());
    [
        Enumeration::ThreadsLast,
        Enumeration::SiblingsAdjacent,
        Enumeration::PowerBigCore,
    ]
    .into_iter()
    .map(|enumeration| Shape {
        sockets,
        nodes_per_socket: m.nr_nodes / n(sockets),
        cores_per_socket: cores,
        threads_per_core: m.smt_width(),
        cores_per_cluster: cluster,
        cores_per_llc: llc,
        cores_per_coregroup: coregroup,
        enumeration,
    })
    .find(|s| s.build_cpus().is_ok_and(|c| c == m.cpus))
}

/// `[cost]` for a cost model: every field in declaration order, each
/// followed by the comment `note(field)` gives, then the idle states as
/// `[[cost.idle_states]]`.
pub fn cost_toml(c: &CostModel, note: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::from("[cost]\n");
    let mut states_noted = false;
    for line in toml::to_string(c).unwrap_or_default().lines() {
        let key = line.split(" = ").next().unwrap_or("");
        if line == "[[idle_states]]" {
            if let Some(n) = note("idle_states").filter(|_| !states_noted) {
                out += &format!("# idle_states: {n}\n");
            }
            states_noted = true;
            out += "[[cost.idle_states]]\n";
        } else if let Some(n) = note(key).filter(|_| line.contains(" = ") && !states_noted) {
            out += &format!("{line}  # {n}\n");
        } else {
            out += &format!("{line}\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str) -> Result<Machine, String> {
        parse("m.toml", "m", text)
    }

    fn full(m: &Machine) -> String {
        format!(
            "name = \"copy\"\n{}\n{}",
            topology_toml(m),
            cost_toml(&m.cost, |k| Some(format!("from {k}")))
        )
    }

    #[test]
    fn every_preset_round_trips_through_a_file() {
        for name in super::super::presets::names() {
            let m = super::super::from_spec(name).unwrap();
            let text = full(&m);
            let back = load_text(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
            assert_eq!(back.cpus, m.cpus, "{name}");
            assert_eq!(back.numa_distance, m.numa_distance, "{name}");
            assert_eq!(
                serde_json::to_string(&back.cost).unwrap(),
                serde_json::to_string(&m.cost).unwrap(),
                "{name}"
            );
            assert_eq!(back.name, "copy");
        }
    }

    #[test]
    fn mwait_key_is_optional_and_round_trips() {
        let state = |extra: &str| {
            format!("base = \"vm-2\"\n[[cost.idle_states]]\nname = \"C1\"\nexit_latency_ns = 1000\ntarget_residency_ns = 2000\npolling = false\n{extra}")
        };
        // A file written before the key existed parses as before: no MWAIT.
        let old = load_text(&state("")).unwrap();
        assert!(!old.cost.idle_states[0].mwait);
        let m = load_text(&state("mwait = true\n")).unwrap();
        assert!(m.cost.idle_states[0].mwait && m.cost.idle_states[0].tif_polling());
        // Written back only where set, and read back the same.
        let text = full(&m);
        assert_eq!(text.matches("mwait = true").count(), 1, "{text}");
        assert!(!full(&old).contains("mwait"));
        let back = load_text(&text).unwrap();
        assert_eq!(back.cost.idle_states, m.cost.idle_states);
    }

    #[test]
    fn huge_machines_fail_on_the_limit_before_allocating() {
        let cost = cost_toml(&super::super::cost::generic_x86(), |_| None);
        let shape = "[topology]\nsockets = 4294967296\ncores_per_socket = 4294967296\nthreads_per_core = 2\n";
        let e = load_text(&format!("{shape}{cost}")).unwrap_err();
        assert!(e.contains("limit of 4096 CPUs"), "{e}");
        let sparse =
            "[topology]\ncpus = [{ core = 0, llc = 0, node = 1000000000000, socket = 0 }]\n";
        let e = load_text(&format!("{sparse}{cost}")).unwrap_err();
        assert!(e.contains("node ids are not dense"), "{e}");
    }

    #[test]
    fn irregular_topology_is_written_per_cpu() {
        let mut m = super::super::from_spec("smp:cpus=4,little=1").unwrap();
        m.cpus[3].capacity = 512;
        let text = full(&m);
        assert!(text.contains("cpus = ["), "{text}");
        let back = load_text(&text).unwrap();
        assert_eq!(back.cpus[3].capacity, 512);
    }

    #[test]
    fn base_with_partial_cost() {
        let m = load_text("base = \"vm-2\"\n[cost]\nsyscall_ns = 999\n").unwrap();
        let vm = super::super::from_spec("vm-2").unwrap();
        assert_eq!(m.cost.syscall_ns, 999);
        assert_eq!(m.cost.context_switch_ns, vm.cost.context_switch_ns);
        assert_eq!(m.cpus, vm.cpus);
        assert_eq!(m.name, "m");
        let m = load_text(
            "base = \"vm-2\"\n[topology]\nsockets = 2\ncores_per_socket = 4\nthreads_per_core = 2\n",
        )
        .unwrap();
        assert_eq!(
            (m.nr_cpus(), m.nr_nodes, m.numa_distance[0][1]),
            (16, 2, 20)
        );
    }

    /// (file text, expected line, text the error must contain)
    #[test]
    fn bad_files_name_line_and_key() {
        let cases = [
            ("base = \"vm-2\"\n[cost\n", 2, "malformed TOML"),
            ("base = \"vm-2\"\n[cost]\nsyscal_ns = 5\n", 3, "cost.syscal_ns: unknown key"),
            ("base = \"vm-2\"\n[cost]\n\nsyscall_ns = -5\n", 4, "cost.syscall_ns: negative cost -5"),
            ("base = \"vm-2\"\n[cost]\nsocket_mix_read_lines = 99999\n", 3, "cost.socket_mix_read_lines: 99999 cache lines: at most 4096"),
            ("base = \"vm-2\"\n[cost]\nsyscall_ns = 1.5\n", 3, "cost.syscall_ns: expected a whole number"),
            ("base = \"vm-2\"\n[cost]\npage_size = 8000\n", 3, "cost.page_size: 8000 bytes: a power of two"),
            ("base = \"vm-2\"\n[cost]\npage_size = 1048576\n", 3, "cost.page_size: 1048576 bytes"),
            ("[topology]\nsockets = 1\ncores_per_socket = 2\nthreads_per_core = 1\n[cost]\nsyscall_ns = 5\n", 5, "missing (give every cost"),
            ("[cost]\nsyscall_ns = 5\n", 1, "topology: missing"),
            ("base = \"nope\"\n", 1, "base: unknown machine"),
            ("bases = \"vm-2\"\n", 1, "bases: unknown key"),
            ("base = \"vm-2\"\n[topology]\nsockets = 1\n", 2, "topology.cores_per_socket: missing"),
            ("base = \"vm-2\"\n[topology]\nsockets = 1\ncores_per_socket = 3\nthreads_per_core = 1\ncores_per_llc = 2\n", 2, "does not split"),
            ("base = \"vm-2\"\n[[cost.idle_states]]\nname = \"C1\"\nexit_latency_ns = -1\ntarget_residency_ns = 0\npolling = false\n", 2, "idle_states: [0].exit_latency_ns: negative"),
            ("base = \"vm-2\"\n[[cost.idle_states]]\nname = \"C1\"\nexit_latency_ns = 1\ntarget_residency_ns = 2\npolling = false\nmwait = 1\n", 2, "idle_states: [0].mwait: wrong type"),
            ("base = \"vm-2\"\n[[cost.idle_states]]\nname = \"C1\"\nexit_latency_ns = 1\ntarget_residency_ns = 2\npolling = false\nmwiat = true\n", 2, "idle_states: [0].mwiat: unknown key"),
            ("base = \"vm-2\"\n[measured]\nclock = { median = 1, foo = 2 }\n", 3, "measured.clock: foo: unknown key"),
            ("base = \"vm-2\"\n[measured]\nclock = {}\nbogus = { median = 1 }\n", 4, "measured.bogus: not a primitive calibrate measures"),
            ("base = \"vm-2\"\n# a\u{1}b\n", 2, "control character U+0001 at column 4"),
        ];
        for (text, line, want) in cases {
            let e = load_text(text).unwrap_err();
            assert!(
                e.starts_with(&format!("m.toml:{line}: ")),
                "{e:?} for\n{text}"
            );
            assert!(e.contains(want), "{e:?} lacks {want:?}");
        }
    }

    #[test]
    fn from_spec_reads_files_and_reports_missing_ones() {
        let e = super::super::from_spec("/nonexistent/x.toml").unwrap_err();
        assert!(
            e.contains("/nonexistent/x.toml") && e.contains("cannot read"),
            "{e}"
        );
        let dir = std::env::temp_dir().join(format!("schedlab-mfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("tiny.toml");
        std::fs::write(&p, "base = \"smp:cpus=4\"\n").unwrap();
        let m = super::super::from_spec(p.to_str().unwrap()).unwrap();
        assert_eq!((m.name.as_str(), m.nr_cpus()), ("tiny", 4));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
