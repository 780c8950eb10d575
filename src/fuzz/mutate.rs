//! Inputs for the fuzzer, all drawn from one seeded stream: byte-level
//! mutations of the seeds, line- and token-level mutations that keep most
//! of an input's structure, and inputs generated from each format's
//! grammar (rt-app tasks, flag sets, scenario tables, trace events).

use super::corpus::Corpus;
use super::Format;
use crate::engine::Rng;

/// Numbers at the edges: zero, negatives, type limits, floats, huge.
const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "-1",
    "1",
    "2",
    "7",
    "100",
    "4095",
    "4096",
    "65536",
    "2147483647",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "99999999999999999999999",
    "0.5",
    "1e308",
    "-1e-9",
    "NaN",
    "inf",
    "0x10",
];

/// Bytes that matter to one of the formats' syntax.
const SYNTAX: &[u8] = b"{}[]\",:=\n#-. \\/'*+|";

/// rt-app keys (task, phase and global level) for the generator.
const RTAPP_KEYS: &[&str] = &[
    "loop", "run", "runtime", "sleep", "timer", "lock", "unlock", "signal", "wait", "barrier",
    "fork", "suspend", "resume", "instance", "cpus", "priority", "policy", "yield", "phases",
    "iorun", "mem", "sync", "delay",
];

/// Task and resource names, few so that references meet.
const NAMES: &[&str] = &["t", "a", "b", "helper", "m", "c"];

pub struct Mutator<'a> {
    rng: Rng,
    corpus: &'a Corpus,
    seeds: Vec<(Format, Vec<Vec<u8>>)>,
}

impl<'a> Mutator<'a> {
    pub fn new(corpus: &'a Corpus, seed: u64) -> Self {
        let seeds = [Format::Scenario, Format::Spec, Format::Rtapp, Format::Trace]
            .into_iter()
            .map(|f| (f, corpus.seeds(f)))
            .collect();
        Mutator {
            rng: Rng::new(seed, 0xF022),
            corpus,
            seeds,
        }
    }

    fn pick<'b, T>(&mut self, v: &'b [T]) -> &'b T {
        &v[self.rng.range(0, v.len() as u64 - 1) as usize]
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.rng.range(1, 100) <= percent
    }

    fn seed_of(&mut self, f: Format) -> Vec<u8> {
        let seeds = &self.seeds.iter().find(|(g, _)| *g == f).unwrap().1;
        let i = self.rng.range(0, seeds.len() as u64 - 1) as usize;
        seeds[i].clone()
    }

    /// The next input of format `f`.
    pub fn next(&mut self, f: Format) -> Vec<u8> {
        let generated = self.chance(match f {
            Format::Spec => 70,
            _ => 30,
        });
        let mut b = match generated {
            true => self.generate(f),
            false => self.seed_of(f),
        };
        // Generated inputs are valid more often than not: keep some whole.
        let least = u64::from(!generated || self.chance(50));
        for _ in 0..self.rng.range(least, 3) {
            if self.chance(50) {
                self.mutate_lines(f, &mut b);
            } else {
                self.mutate_bytes(f, &mut b);
            }
        }
        b
    }

    fn generate(&mut self, f: Format) -> Vec<u8> {
        match f {
            Format::Rtapp => self.rtapp().into_bytes(),
            Format::Spec | Format::All => self.flag_set().into_bytes(),
            Format::Scenario => self.scenario().into_bytes(),
            Format::Trace => self.trace().into_bytes(),
        }
    }

    fn number(&mut self) -> String {
        if self.chance(50) {
            self.pick(NUMBERS).to_string()
        } else {
            self.rng.range(0, 5000).to_string()
        }
    }

    /// Byte-level: flips, syntax bytes, deletions, duplications, splices.
    fn mutate_bytes(&mut self, f: Format, b: &mut Vec<u8>) {
        let n = b.len() as u64;
        let at = self.rng.range(0, n) as usize;
        let len = self.rng.range(1, 16.min(n.max(1))) as usize;
        match self.rng.range(0, 5) {
            0 if at < b.len() => b[at] ^= 1 << self.rng.range(0, 7),
            1 if at < b.len() => b[at] = *self.pick(SYNTAX),
            2 => {
                let num = self.number();
                b.splice(at..at, num.bytes());
            }
            3 if at < b.len() => {
                b.drain(at..(at + len).min(b.len()));
            }
            4 if at < b.len() => {
                let piece = b[at..(at + len).min(b.len())].to_vec();
                b.splice(at..at, piece);
            }
            _ => {
                let other = self.seed_of(f);
                let from = self.rng.range(0, other.len() as u64) as usize;
                let to = (from + self.rng.range(1, 64) as usize).min(other.len());
                b.splice(at..at, other[from..to].iter().copied());
            }
        }
    }

    /// Line and token level: delete, repeat, swap or move lines (a trace
    /// event twice, out of order), change a number, drop a `key=value`.
    fn mutate_lines(&mut self, f: Format, b: &mut Vec<u8>) {
        let text = String::from_utf8_lossy(b).into_owned();
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        if lines.is_empty() {
            return;
        }
        let n = lines.len() as u64 - 1;
        let (i, j) = (self.rng.range(0, n) as usize, self.rng.range(0, n) as usize);
        match self.rng.range(0, 6) {
            0 => {
                lines.remove(i);
            }
            1 => {
                let l = lines[i].clone();
                lines.insert(j, l);
            }
            2 => lines.swap(i, j),
            3 => {
                let l = lines.remove(i);
                lines.insert(j.min(lines.len()), l);
            }
            4 => lines[i] = self.replace_number(&lines[i]),
            5 => lines[i] = self.drop_field(&lines[i]),
            _ => {
                let other = String::from_utf8_lossy(&self.seed_of(f)).into_owned();
                let ol: Vec<&str> = other.lines().collect();
                if !ol.is_empty() {
                    lines.insert(j, self.pick(&ol).to_string());
                }
            }
        }
        *b = (lines.join("\n") + "\n").into_bytes();
    }

    /// A line with one run of digits replaced by an edge number.
    fn replace_number(&mut self, line: &str) -> String {
        let starts: Vec<usize> = line
            .char_indices()
            .filter(|&(k, c)| {
                c.is_ascii_digit() && !line[..k].ends_with(|p: char| p.is_ascii_digit())
            })
            .map(|(k, _)| k)
            .collect();
        if starts.is_empty() {
            return line.to_string();
        }
        let s = *self.pick(&starts);
        let e = s + line[s..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(line.len() - s);
        format!("{}{}{}", &line[..s], self.number(), &line[e..])
    }

    /// A line without one of its space- or comma-separated fields.
    fn drop_field(&mut self, line: &str) -> String {
        let sep = if line.contains(',') && self.chance(50) {
            ','
        } else {
            ' '
        };
        let mut parts: Vec<&str> = line.split(sep).collect();
        if parts.len() > 1 {
            let k = self.rng.range(0, parts.len() as u64 - 1) as usize;
            parts.remove(k);
        }
        parts.join(&sep.to_string())
    }

    /// A workload spec with one parameter's value changed, sometimes.
    fn workload(&mut self) -> String {
        let w = self.pick(&self.corpus.workloads).clone();
        if self.chance(50) {
            self.replace_number(&w)
        } else {
            w
        }
    }

    /// Flag lines: a machine, workloads, cgroups, --set strings.
    fn flag_set(&mut self) -> String {
        let c = self.corpus;
        let mut s = format!("--machine {}\n", self.pick(&c.machines));
        for _ in 0..self.rng.range(1, 3) {
            s += &format!("-w {}\n", self.workload());
        }
        for _ in 0..self.rng.range(0, 2) {
            s += &format!("--cgroup {}\n", self.pick(&c.cgroups));
        }
        for _ in 0..self.rng.range(0, 3) {
            s += &format!("--set {}\n", self.pick(&c.sets));
        }
        if self.chance(30) {
            s += &format!("--duration {}ms\n", self.number());
        }
        s
    }

    /// A scenario file built from the flag vocabulary: `--set` strings as
    /// dotted keys, then [[cgroup]] and [[workload]] tables.
    fn scenario(&mut self) -> String {
        let c = self.corpus;
        let mut s = format!("machine.preset = \"{}\"\n", self.pick(&c.machines));
        for _ in 0..self.rng.range(0, 3) {
            let kv = self.pick(&c.sets).clone();
            if let Some((k, v)) = kv.split_once('=') {
                s += &format!("{k} = {}\n", crate::scenario::parse_set_value(v));
            }
        }
        for _ in 0..self.rng.range(0, 2) {
            if let Ok(t) = crate::scenario::cgroup_table(self.pick(&c.cgroups).as_str()) {
                s += &format!("[[cgroup]]\n{}\n", toml_table(&t));
            }
        }
        for _ in 0..self.rng.range(1, 3) {
            if let Ok(t) = crate::scenario::workload_table(&self.workload()) {
                s += &format!("[[workload]]\n{}\n", toml_table(&t));
            }
        }
        s
    }

    /// An rt-app file from its grammar: tasks with random keys and values.
    fn rtapp(&mut self) -> String {
        let tasks: Vec<String> = (0..self.rng.range(1, 3))
            .map(|k| format!("\"{}\": {}", NAMES[k as usize], self.rtapp_task(2)))
            .collect();
        let mut s = format!("{{\"tasks\": {{{}}}", tasks.join(", "));
        if self.chance(30) {
            s += &format!(", \"global\": {{\"duration\": {}}}", self.number());
        }
        s + "}\n"
    }

    fn rtapp_task(&mut self, depth: u32) -> String {
        let keys: Vec<String> = (0..self.rng.range(1, 5))
            .map(|_| {
                let k = *self.pick(RTAPP_KEYS);
                format!("\"{k}\": {}", self.rtapp_value(k, depth))
            })
            .collect();
        format!("{{{}}}", keys.join(", "))
    }

    fn rtapp_value(&mut self, key: &str, depth: u32) -> String {
        let name = format!("\"{}\"", self.pick(NAMES));
        match key {
            "phases" if depth > 0 => {
                let p: Vec<String> = (0..self.rng.range(0, 2))
                    .map(|k| format!("\"p{k}\": {}", self.rtapp_task(depth - 1)))
                    .collect();
                format!("{{{}}}", p.join(", "))
            }
            "cpus" => {
                let c: Vec<String> = (0..self.rng.range(0, 2)).map(|_| self.number()).collect();
                format!("[{}]", c.join(", "))
            }
            "timer" => format!("{{\"ref\": {name}, \"period\": {}}}", self.number()),
            "wait" if self.chance(50) => format!("{{\"ref\": {name}, \"mutex\": \"m\"}}"),
            "policy" => "\"SCHED_FIFO\"".into(),
            "lock" | "unlock" | "signal" | "wait" | "barrier" | "fork" | "suspend" | "resume"
            | "sync" => name,
            "yield" => "\"\"".into(),
            _ => self.number(),
        }
    }

    /// A trace of a few tasks on a few CPUs in the ftrace layout, events
    /// drawn at random: forks, wakeups, switches, migrations and exits.
    fn trace(&mut self) -> String {
        let mut s = String::from("# tracer: nop\n#\n");
        let mut ts = 1_000_000u64;
        for _ in 0..self.rng.range(1, 40) {
            ts += self.rng.range(0, 2000);
            let (cpu, p, q) = (
                self.rng.range(0, 4),
                self.rng.range(1, 6),
                self.rng.range(0, 6),
            );
            let head = format!(
                "t{p}-{p} [{cpu:03}] d..2. {}.{:06}: ",
                ts / 1_000_000,
                ts % 1_000_000
            );
            let ev = match self.rng.range(0, 5) {
                0 => format!("sched_process_fork: comm=t{p} pid={p} child_comm=t{q} child_pid={q}"),
                1 => format!("sched_wakeup_new: comm=t{q} pid={q} prio=120 target_cpu={cpu:03}"),
                2 => format!("sched_waking: comm=t{q} pid={q} prio=120 target_cpu={cpu:03}"),
                3 => format!(
                    "sched_switch: prev_comm=t{p} prev_pid={p} prev_prio=120 prev_state={} ==> next_comm=t{q} next_pid={q} next_prio=120",
                    self.pick(&["S", "R", "D", "R+", "X"])
                ),
                4 => format!(
                    "sched_migrate_task: comm=t{q} pid={q} prio=120 orig_cpu={cpu} dest_cpu={}",
                    self.rng.range(0, 4)
                ),
                _ => format!("sched_process_exit: comm=t{p} pid={p} prio=120"),
            };
            s += &format!("{head}{ev}\n");
        }
        s
    }
}

/// A `[[workload]]` table's body as TOML lines.
fn toml_table(t: &toml::Value) -> String {
    toml::to_string(t).unwrap_or_default()
}
