//! Reports of a finished run: the perf-stat-like summary, the JSON file,
//! the HTML report and the completion/cgroup sections they share.
//!
//! Layer: reports, above `workload`, `trace` and `observe`. Reports read a
//! finished run through [`RunView`], which the run layer hands in, so
//! nothing here imports `run`, `scenario` or anything above them.

pub mod bins;
pub mod cgroup;
pub mod completion;
pub mod html;
pub mod json;
pub mod lanes;
pub mod meta;
pub mod summary;

use crate::kernel::task::Pid;
use crate::kernel::Kernel;
use crate::machine::Machine;
use crate::workload::Workload;

/// One finished run as the reports read it (`run::RunOutput::view`).
pub struct RunView<'a> {
    pub kernel: &'a Kernel,
    pub workloads: &'a [(Workload, Vec<Pid>)],
    /// The machine as the scenario names it (a preset or a spec).
    pub machine: &'a str,
    pub seed: u64,
    /// The resolved scenario as its TOML table (`Scenario::to_table`).
    pub scenario: toml::Table,
    pub wall_ns: u64,
}

/// 1234567 → "1,234,567"
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A group of CPUs the reports show together: whole LLCs of one socket,
/// merged until the group holds at least `GROUP_MIN` CPUs (POWER's SMT4
/// LLCs and Altra's 2-CPU clusters would give hundreds of tiny groups).
pub struct CpuGroup {
    /// "socket 0 · LLCs 0-3 · CPUs 0-15"
    pub label: String,
    /// "S0 LLC 0-3", for axes
    pub short: String,
    pub socket: usize,
    pub cpus: Vec<usize>,
}

const GROUP_MIN: usize = 16;

/// The machine's CPUs in groups of whole LLCs, in LLC order.
pub fn cpu_groups(m: &Machine) -> Vec<CpuGroup> {
    let mut out: Vec<(usize, Vec<usize>, Vec<usize>)> = Vec::new();
    for llc in 0..m.nr_llcs {
        let cpus = m.llc_cpus(llc);
        let Some(&first) = cpus.first() else { continue };
        let socket = m.cpus[first].socket;
        match out.last_mut() {
            Some((s, llcs, c)) if *s == socket && c.len() < GROUP_MIN => {
                llcs.push(llc);
                c.extend(cpus);
            }
            _ => out.push((socket, vec![llc], cpus.to_vec())),
        }
    }
    out.into_iter()
        .map(|(socket, llcs, mut cpus)| {
            cpus.sort_unstable();
            let (llc, short) = match llcs.as_slice() {
                [one] => (format!("LLC {one}"), format!("S{socket} LLC {one}")),
                many => (
                    format!("LLCs {}", ranges(many)),
                    format!("S{socket} LLC {}", ranges(many)),
                ),
            };
            CpuGroup {
                label: format!("socket {socket} · {llc} · CPUs {}", ranges(&cpus)),
                short,
                socket,
                cpus,
            }
        })
        .collect()
}

/// Sorted numbers as ranges: [0, 1, 2, 5, 7, 8] → "0-2,5,7-8".
pub fn ranges(v: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", v[i], v[j])
        } else {
            v[i].to_string()
        });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    #[test]
    fn ranges_join_runs() {
        assert_eq!(super::ranges(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(super::ranges(&[3]), "3");
    }

    #[test]
    fn groups_hold_whole_llcs_of_one_socket() {
        for (name, n) in [("xeon-8269cy", 2), ("power10-320", 20), ("vm-2", 1)] {
            let m = crate::machine::presets::build(name).unwrap().unwrap();
            let g = super::cpu_groups(&m);
            assert_eq!(g.len(), n, "{name}");
            let all: usize = g.iter().map(|g| g.cpus.len()).sum();
            assert_eq!(all, m.nr_cpus());
            for g in &g {
                assert!(g.cpus.iter().all(|&c| m.cpus[c].socket == g.socket));
            }
        }
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(1234), "1,234");
        assert_eq!(super::thousands(1234567), "1,234,567");
    }
}
