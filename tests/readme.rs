//! Every `schedlab ...` line in README.md's code blocks runs as pasted and
//! exits 0. To keep the suite short, simulated time is capped and run
//! counts are cut (see `shorten`); commands that need perf, Ray, a
//! network or minutes of host measurements are skipped (see `SKIPPED`).
//! Lines run with `bash -o pipefail -c` in a scratch directory that links the
//! repository's `scenarios/` and `tests/`, with the built binary first on
//! PATH.

mod common;
use std::path::Path;
use std::process::Command;

/// Commands not run here, with the reason.
const SKIPPED: &[(&str, &str)] = &[
    (
        "schedlab bench",
        "minutes of wall-clock measurement (tests/bench.rs covers it)",
    ),
    (
        "schedlab validate",
        "needs perf and the host kernel (tests/validate*.rs cover it)",
    ),
    (
        "schedlab record",
        "needs perf and root on the host (tests/record.rs covers it)",
    ),
    (
        "schedlab calibrate",
        "measures the host for minutes (tests/calibrate.rs covers it)",
    ),
    ("--backend ray", "needs Ray (python/tests cover it)"),
    (
        "schedlab sweep",
        "a 40-run sweep; tests/sweep.rs covers sweeps",
    ),
    (
        "schedlab sweep-report",
        "needs the sweep's results (tests/sweep.rs)",
    ),
    (
        "schedlab repro swb",
        "62 runs on 96 CPUs at fixed size (tests/cli.rs runs repro; tests/repro_swb.rs its schbench table)",
    ),
    (
        "schedlab repro pelt",
        "32 runs of up to 640 tasks (tests/cli.rs runs repro)",
    ),
    (
        "schedlab repro completion",
        "kernbench over 10 seeds at least twice",
    ),
    (
        "schedlab repro summary",
        "every series over 5 seeds, minutes (tests/repro_summary.rs runs it smaller)",
    ),
];

/// The command lines of README.md's code blocks that start with
/// `schedlab` (or feed one through a pipe), continuation lines joined.
fn readme_commands() -> Vec<String> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let mut out = Vec::new();
    // None outside a code block, else the block's language.
    let mut block: Option<&str> = None;
    let mut pending = String::new();
    for line in text.lines() {
        if let Some(lang) = line.strip_prefix("```") {
            block = if block.is_some() { None } else { Some(lang) };
            continue;
        }
        if !matches!(block, Some("" | "sh" | "console")) {
            continue;
        }
        let l = line.trim();
        if pending.is_empty() && !(l.starts_with("schedlab ") || l.contains("| schedlab ")) {
            continue;
        }
        match l.strip_suffix('\\') {
            Some(head) => pending += head,
            None => {
                pending += l;
                out.push(std::mem::take(&mut pending));
            }
        }
    }
    out
}

/// The line without its trailing `# comment` (a `#` inside quotes stays).
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '#') if prev == ' ' => return line[..i].trim_end(),
            _ => {}
        }
        prev = c;
    }
    line.trim_end()
}

/// The same command, made short: simulated time capped at 50 ms (and an
/// unfinished benchmark allowed), at most 2 runs per side, repro at its
/// smallest size.
fn shorten(cmd: &str) -> String {
    let words: Vec<&str> = cmd.split(' ').collect();
    let sub = words
        .iter()
        .skip_while(|w| **w != "schedlab")
        .nth(1)
        .copied()
        .unwrap_or("");
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        match w {
            "--duration" if sub != "repro" => {
                out.extend(["--duration".into(), "50ms".into()]);
                i += 2;
                continue;
            }
            "--runs" => {
                let n: u64 = words.get(i + 1).and_then(|n| n.parse().ok()).unwrap_or(2);
                out.extend(["--runs".into(), n.min(2).to_string()]);
                i += 2;
                continue;
            }
            _ => out.push(w.to_string()),
        }
        i += 1;
    }
    let mut s = out.join(" ");
    let extra = match sub {
        "run" | "replay" if !cmd.contains("--duration") => " --duration 50ms --allow-unfinished",
        "run" | "replay" => " --allow-unfinished",
        "compare" if !cmd.contains("--duration") => " --duration 50ms",
        "repro" if cmd.contains("repro preempt") => " --scale 100000 --runs 1",
        "repro" if !cmd.contains("--runs") => " --runs 1",
        _ => "",
    };
    // The flags go right after the schedlab invocation's words, before a pipe.
    if let Some(pipe) = s
        .find(" | ")
        .filter(|p| s.find("schedlab").is_some_and(|q| q < *p))
    {
        s.insert_str(pipe, extra);
    } else {
        s += extra;
    }
    s
}

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn scratch_dir() -> std::path::PathBuf {
    let dir = common::tmp("readme");
    std::fs::create_dir_all(&dir).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for d in ["scenarios", "tests"] {
        let link = dir.join(d);
        if !link.exists() {
            std::os::unix::fs::symlink(repo.join(d), &link).unwrap();
        }
    }
    dir
}

#[test]
fn readme_has_the_walkthrough_and_commands() {
    let cmds = readme_commands();
    assert!(cmds.len() > 40, "{cmds:?}");
    for want in [
        "schedlab demo",
        "schedlab compare",
        "schedlab repro wakelist --runs 1",
        "schedlab keys",
    ] {
        assert!(
            cmds.iter().any(|c| c.starts_with(want)),
            "README lacks `{want}`"
        );
    }
    let dots = cmds.iter().find(|c| strip_comment(c).contains("..."));
    assert!(dots.is_none(), "a README command has `...`: {dots:?}");
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let setup: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "```")
        .skip(1)
        .take(2)
        .collect();
    assert!(setup[0].starts_with("cargo run --release") && setup[1].starts_with("scripts/test"));
}

#[test]
fn every_readme_command_runs_as_pasted() {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_schedlab")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let dir = scratch_dir();
    let mut skipped = Vec::new();
    let mut failed = Vec::new();
    for cmd in readme_commands() {
        let cmd = strip_comment(&cmd).to_string();
        if let Some((_, why)) = SKIPPED.iter().find(|(s, _)| cmd.contains(s)) {
            skipped.push(format!("{cmd}  ({why})"));
            continue;
        }
        if cmd.contains("| jq") && !have("jq") {
            skipped.push(format!("{cmd}  (no jq here)"));
            continue;
        }
        let short = shorten(&cmd);
        let out = Command::new("bash")
            .args(["-o", "pipefail", "-c", &short])
            .current_dir(&dir)
            .env("PATH", &path)
            .env(schedlab::machine::host::CACHE_DIR_VAR, dir.join("no-cache"))
            .output()
            .unwrap();
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            failed.push(format!(
                "{short}\n  -> {:?}: {}",
                out.status.code(),
                err.trim()
            ));
        }
    }
    eprintln!("README commands skipped:\n  {}", skipped.join("\n  "));
    assert!(
        failed.is_empty(),
        "README commands that fail:\n{}",
        failed.join("\n")
    );
}

#[test]
fn shorten_caps_time_and_runs_before_a_pipe() {
    assert_eq!(
        shorten("schedlab run x.toml --json - | jq .totals"),
        "schedlab run x.toml --json - --duration 50ms --allow-unfinished | jq .totals"
    );
    assert_eq!(
        shorten("schedlab compare a.toml --runs 5 --duration 3s"),
        "schedlab compare a.toml --runs 2 --duration 50ms"
    );
    assert_eq!(
        shorten("schedlab repro wakelist"),
        "schedlab repro wakelist --runs 1"
    );
    assert_eq!(shorten("schedlab machines"), "schedlab machines");
}

/// The walkthrough's step 3 says what its command shows: with wakeup
/// preemption off, `preempt-wakeup` is 0 and every involuntary switch is
/// a tick's (none from a wakeup), and some hundreds with it on (its
/// "about 1,700" is seed 1's, at full length).
#[test]
fn step_three_turns_wakeup_preemptions_to_zero() {
    let count = |out: &str, name: &str| -> u64 {
        let line = out
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no {name} line:\n{out}"));
        let n = line.split_whitespace().next().unwrap().replace(',', "");
        n.parse().unwrap()
    };
    let base = [
        "run",
        "--machine",
        "xeon-8269cy",
        "--workload",
        "hackbench:groups=8,loops=200,ipc=pipe",
    ];
    let (rc, on, err) = common::schedlab(&base);
    assert_eq!(rc, 0, "{err}");
    let mut off_args = base.to_vec();
    off_args.extend(["--set", "kernel.features.WAKEUP_PREEMPTION=false"]);
    let (rc, off, err) = common::schedlab(&off_args);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(count(&off, "preempt-wakeup"), 0, "with the switch off");
    let others = count(&off, "preempt-tick") + count(&off, "preempt-lazy-upgrade");
    assert_eq!(count(&off, "involuntary-switches"), others, "{off}");
    assert!(others <= 5, "{off}");
    for name in ["preempt-wakeup", "involuntary-switches"] {
        assert!(count(&on, name) > 100, "{name} with it on:\n{on}");
    }
}
