//! Reports of a finished run: the perf-stat-like summary, the JSON file,
//! the HTML report and the completion/cgroup sections they share.
//!
//! Layer: reports, above `workload`, `trace` and `observe`. Reports read a
//! finished run through [`RunView`], which the run layer hands in, so
//! nothing here imports `run`, `scenario` or anything above them.

pub mod cgroup;
pub mod completion;
pub mod html;
pub mod json;
pub mod summary;

use crate::kernel::task::Pid;
use crate::kernel::Kernel;
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

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_groups_digits() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(1234), "1,234");
        assert_eq!(super::thousands(1234567), "1,234,567");
    }
}
