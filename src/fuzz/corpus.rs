//! The fuzzer's seeds: every input the project ships, per format.
//!
//! - scenario: `scenarios/**.toml` (not machine files or sweeps) and
//!   `tests/corpus/scenario/`;
//! - spec: the flag strings of `tests/corpus/spec/` (machines, workloads,
//!   cgroups, `--set`), one per line, and the machine files of
//!   `scenarios/machines/`;
//! - rtapp: `tests/corpus/rtapp/` and `tests/data/*.json`;
//! - trace: `tests/corpus/trace/` (each layout: perf script, its sched
//!   plugin form, ftrace text, trace-cmd report).

use super::Format;
use std::path::{Path, PathBuf};

#[derive(Default)]
pub struct Corpus {
    pub scenario: Vec<Vec<u8>>,
    pub rtapp: Vec<Vec<u8>>,
    pub trace: Vec<Vec<u8>>,
    /// Machine files (spec format inputs of their own).
    pub machine_files: Vec<Vec<u8>>,
    /// Flag values by flag: `--machine`, `-w`, `--cgroup`, `--set`.
    pub machines: Vec<String>,
    pub workloads: Vec<String>,
    pub cgroups: Vec<String>,
    pub sets: Vec<String>,
}

impl Corpus {
    /// Read the corpus under the repository root `root`.
    pub fn load(root: &Path) -> Result<Corpus, String> {
        let corpus = root.join("tests/corpus");
        let mut scenario = files(&root.join("scenarios"), "toml")?;
        scenario.retain(|p| !p.starts_with(root.join("scenarios/machines")));
        scenario.retain(|p| !p.starts_with(root.join("scenarios/sweeps")));
        scenario.extend(files(&corpus.join("scenario"), "toml")?);
        let mut rtapp = files(&corpus.join("rtapp"), "json")?;
        rtapp.extend(files(&root.join("tests/data"), "json")?);
        let c = Corpus {
            scenario: read_all(&scenario)?,
            rtapp: read_all(&rtapp)?,
            trace: read_all(&files(&corpus.join("trace"), "txt")?)?,
            machine_files: read_all(&files(&root.join("scenarios/machines"), "toml")?)?,
            machines: lines(&corpus.join("spec/machines.txt"))?,
            workloads: lines(&corpus.join("spec/workloads.txt"))?,
            cgroups: lines(&corpus.join("spec/cgroups.txt"))?,
            sets: lines(&corpus.join("spec/sets.txt"))?,
        };
        if c.scenario.is_empty() || c.rtapp.is_empty() || c.trace.is_empty() {
            return Err(format!("{}: no corpus here", corpus.display()));
        }
        Ok(c)
    }

    /// The whole-file seeds of a format (spec: one line per flag kind).
    pub fn seeds(&self, f: Format) -> Vec<Vec<u8>> {
        match f {
            Format::Scenario => self.scenario.clone(),
            Format::Rtapp => self.rtapp.clone(),
            Format::Trace => self.trace.clone(),
            Format::Spec | Format::All => {
                let mut s = self.machine_files.clone();
                for (flag, list) in [
                    ("--machine", &self.machines),
                    ("-w", &self.workloads),
                    ("--cgroup", &self.cgroups),
                    ("--set", &self.sets),
                ] {
                    s.extend(list.iter().map(|v| format!("{flag} {v}\n").into_bytes()));
                }
                s
            }
        }
    }
}

/// Files with extension `ext` under `dir`, recursively, sorted.
fn files(dir: &Path, ext: &str) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let rd = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p, ext)?);
        } else if p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

fn read_all(paths: &[PathBuf]) -> Result<Vec<Vec<u8>>, String> {
    paths
        .iter()
        .map(|p| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display())))
        .collect()
}

fn lines(path: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(String::from)
        .collect())
}
