//! `validate bench --real-from DIR`: real runs recorded earlier, perhaps on
//! another host, read instead of running perf. The layout is that of
//! ../shared/host16/raw (tests/data/host16/raw): per benchmark one file
//! `{s,sp,st,spt}_g{G}_l{L}.txt` (messaging: sockets, pipes `-p`, socket
//! threads `-t`, pipe threads `-p -t`) or `{unpinned,pinned}_l{L}.txt`
//! (`perf bench sched pipe`), each the output of `perf stat -x, -e
//! context-switches,cpu-migrations,task-clock -- perf bench sched … -l L`
//! run several times, stdout and stderr together.

use super::bench::Bench;
use super::perf::{parse_bench_at, parse_stat_csv_at, RealRun};
use std::path::{Path, PathBuf};

/// One benchmark's recording: the loops its file name gives, and its runs.
pub struct Recorded {
    pub path: PathBuf,
    pub loops: u64,
    pub runs: Vec<RealRun>,
}

/// The file name of a benchmark's recording, up to its loop count.
pub fn stem(b: &Bench) -> String {
    match *b {
        Bench::Pipe { pinned: true } => "pinned_l".into(),
        Bench::Pipe { pinned: false } => "unpinned_l".into(),
        Bench::Messaging {
            pipe,
            threads,
            groups,
        } => {
            let ipc = match (pipe, threads) {
                (false, false) => "s",
                (true, false) => "sp",
                (false, true) => "st",
                (true, true) => "spt",
            };
            format!("{ipc}_g{groups}_l")
        }
    }
}

/// Read the recording of `b` in `dir`; Err names the file (and line) and
/// what is wrong.
pub fn read(dir: &Path, b: &Bench) -> Result<Recorded, String> {
    let stem = stem(b);
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut found: Vec<(PathBuf, String)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let loops = name.strip_prefix(&stem)?.strip_suffix(".txt")?.to_string();
            Some((e.path(), loops))
        })
        .collect();
    found.sort();
    let (path, loops) = match found.as_slice() {
        [one] => one.clone(),
        [] => {
            return Err(format!(
                "{}: no such file (the recording of `{}`, L its loops)",
                dir.join(format!("{stem}L.txt")).display(),
                b.name()
            ))
        }
        [a, b, ..] => {
            return Err(format!(
                "{} and {}: two recordings of one benchmark",
                a.0.display(),
                b.0.display()
            ))
        }
    };
    let loops = loops
        .parse::<u64>()
        .ok()
        .filter(|&l| l > 0)
        .ok_or_else(|| {
            format!(
                "{}: the loops `{loops}` in the file name are not a positive number",
                path.display()
            )
        })?;
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let runs = parse_runs(&path.display().to_string(), &text, b)?;
    Ok(Recorded { path, loops, runs })
}

/// perf bench's first line of every run.
const RUN_START: &str = "# Running '";

/// Split a recording into its runs and read each; `name` labels errors.
pub fn parse_runs(name: &str, text: &str, b: &Bench) -> Result<Vec<RealRun>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with(RUN_START))
        .collect();
    let Some(&first) = starts.first() else {
        return Err(format!(
            "{name}: no `{RUN_START}…` line: not perf bench output"
        ));
    };
    if let Some(i) = (0..first).find(|&i| !lines[i].trim().is_empty()) {
        return Err(format!(
            "{name}, line {}: `{}` before the first `{RUN_START}…` line",
            i + 1,
            lines[i].trim()
        ));
    }
    let ends = starts.iter().skip(1).copied().chain([lines.len()]);
    starts
        .iter()
        .zip(ends)
        .map(|(&from, to)| parse_run(name, &lines[from..to], from + 1, b))
        .collect()
}

/// One run, lines `first` onwards of the file.
fn parse_run(name: &str, lines: &[&str], first: usize, b: &Bench) -> Result<RealRun, String> {
    let what = format!("{name}, the run at line {first}");
    let bench_name = match b {
        Bench::Pipe { .. } => "sched/pipe",
        Bench::Messaging { .. } => "sched/messaging",
    };
    if !lines[0].contains(&format!("'{bench_name}'")) {
        return Err(format!(
            "{name}, line {first}: `{}` is not a {bench_name} run",
            lines[0].trim()
        ));
    }
    if let Bench::Messaging { groups, .. } = *b {
        check_groups(name, lines, first, groups)?;
    }
    let text = lines.join("\n");
    let bench = parse_bench_at(&what, &text, first)?;
    let counters = parse_stat_csv_at(&what, &text, first)?;
    Ok(RealRun {
        counters,
        bench,
        // Not recorded: the benchmark's own time stands in; nothing else
        // is known to have run.
        wall_s: bench.total_s,
        other_cpu_s: 0.0,
        steal_s: 0.0,
    })
}

/// messaging's `# G groups == N processes run` line must agree with the
/// file name.
fn check_groups(name: &str, lines: &[&str], first: usize, groups: u64) -> Result<(), String> {
    for (i, line) in lines.iter().enumerate() {
        let Some((n, _)) = line.trim_start_matches('#').split_once(" groups ==") else {
            continue;
        };
        if n.trim().parse::<u64>().ok() != Some(groups) {
            return Err(format!(
                "{name}, line {}: `{}` where the file name says {groups} group(s)",
                first + i,
                line.trim()
            ));
        }
    }
    Ok(())
}

/// The first line of DIR/README.md without its `#`, if there is one.
pub fn readme_title(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("README.md")).ok()?;
    let line = text.lines().next()?.trim_start_matches('#').trim();
    (!line.is_empty()).then(|| line.to_string())
}
