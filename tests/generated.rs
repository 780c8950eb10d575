//! What schedlab generates from its own definitions: shell completions,
//! man pages, the list of scenario keys.

mod common;
use common::{schedlab, tmp};

#[test]
fn completions_name_every_subcommand_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let (rc, out, err) = schedlab(&["completions", shell]);
        assert_eq!(rc, 0, "{shell}: {err}");
        for sub in [
            "run",
            "compare",
            "repro",
            "sweep-report",
            "completions",
            "man",
        ] {
            assert!(out.contains(sub), "{shell} completion lacks {sub}");
        }
        // Flags of a subcommand and the values of an enum are offered too.
        assert!(out.contains("allow-unfinished"), "{shell}");
    }
    let (rc, _, err) = schedlab(&["completions", "tcsh"]);
    assert_eq!(rc, 2);
    assert!(err.contains("bash") && err.contains("zsh"), "{err}");
}

#[test]
fn completions_offer_presets_workload_kinds_and_keys() {
    let kinds = ::schedlab::workload::kinds::KINDS.iter().map(|k| k.name);
    let presets = ::schedlab::machine::presets::names().into_iter();
    let keys = [
        "sim.seed=",
        "kernel.hz=",
        "kernel.features.PLACE_LAG=",
        "workload.0.loops=",
        "cgroup.0.weight=",
    ];
    let words: Vec<&str> = presets.chain(kinds).chain(keys).collect();
    for shell in ["bash", "zsh", "fish"] {
        let (rc, out, err) = schedlab(&["completions", shell]);
        assert_eq!(rc, 0, "{shell}: {err}");
        for w in words.iter().chain(&["host", "perfetto", "periodic-64"]) {
            assert!(out.contains(w), "{shell} completion lacks {w}");
        }
    }
}

#[test]
fn zsh_and_fish_offer_files_beside_the_machine_presets() {
    let (_, out, _) = schedlab(&["completions", "fish"]);
    let run_machine = out
        .lines()
        .find(|l| l.contains("using_subcommand run\" -l machine "))
        .expect("run --machine in the fish script");
    assert!(run_machine.contains(" -r -F -a \"vm-2"), "{run_machine}");
    let (_, out, _) = schedlab(&["completions", "zsh"]);
    let alternatives = out
        .matches(":{_alternative \"values\\:value\\:((vm-2")
        .count();
    let files = out.matches("\" \"files\\:file\\:_files\"}").count();
    assert!(
        alternatives >= 4 && files == alternatives,
        "{alternatives} {files}"
    );
}

/// What bash's completion function offers for the command line `words`
/// (the last one being completed), or `None` without bash.
fn bash_completes(script: &std::path::Path, words: &[&str]) -> Option<String> {
    let driver = format!(
        ". {}\nCOMP_WORDS=({})\nCOMP_CWORD={}\n\
         _schedlab schedlab \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\" 2>/dev/null\n\
         echo \"${{COMPREPLY[*]}}\"",
        script.display(),
        words.iter().map(|w| format!("'{w}'")).collect::<Vec<_>>().join(" "),
        words.len() - 1
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &driver])
        .output()
        .ok()?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
fn bash_completes_the_values_of_machine_workload_and_set() {
    let (_, out, _) = schedlab(&["completions", "bash"]);
    let path = tmp("schedlab-values.bash");
    std::fs::write(&path, out).unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["schedlab", "run", "--machine", "x"], "xeon-8269cy"),
        (
            &["schedlab", "replay", "t.txt", "--machine", "po"],
            "power10-96 power10-320",
        ),
        (&["schedlab", "run", "-w", "hack"], "hackbench"),
        (
            &["schedlab", "compare", "--set-b", "kernel.h"],
            "kernel.hz=",
        ),
        (&["schedlab", "run", "--trace-format", "p"], "perfetto"),
    ];
    for (words, want) in cases {
        let Some(got) = bash_completes(&path, words) else {
            eprintln!("no bash here: skipped");
            return;
        };
        assert_eq!(got, want, "{words:?}");
    }
}

#[test]
fn completion_scripts_are_valid_bash_zsh_and_fish() {
    for shell in ["bash", "zsh", "fish"] {
        let (_, out, _) = schedlab(&["completions", shell]);
        let path = tmp(&format!("schedlab.{shell}"));
        std::fs::write(&path, out).unwrap();
        let Ok(st) = std::process::Command::new(shell)
            .arg("-n")
            .arg(&path)
            .status()
        else {
            eprintln!("no {shell} here: skipped the syntax check");
            continue;
        };
        assert!(st.success(), "{shell} -n rejects the completion script");
    }
}

#[test]
fn fish_completes_presets_and_files_for_machine_and_keys_for_set() {
    let (_, out, _) = schedlab(&["completions", "fish"]);
    let path = tmp("schedlab-values.fish");
    std::fs::write(&path, out).unwrap();
    let complete = |line: &str| {
        let cmd = format!("source {}; complete -C '{line}'", path.display());
        let out = std::process::Command::new("fish")
            .args(["-c", &cmd])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()?;
        Some(String::from_utf8_lossy(&out.stdout).to_string())
    };
    let Some(machine) = complete("schedlab run --machine ") else {
        eprintln!("no fish here: skipped");
        return;
    };
    for want in ["xeon-8269cy\t", "host\t", "scenarios/"] {
        assert!(machine.contains(want), "{want} not in {machine}");
    }
    let set = complete("schedlab run --set kernel.features=").unwrap_or_default();
    assert!(set.starts_with("kernel.features=\ta list like"), "{set}");
}

#[test]
fn man_page_on_stdout_and_one_page_per_command_in_a_directory() {
    let (rc, out, err) = schedlab(&["man"]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains(".TH schedlab 1"));
    assert!(out.contains("run") && out.contains("compare"));
    assert!(out.contains(env!("CARGO_PKG_VERSION")));

    let dir = tmp("man");
    let (rc, _, err) = schedlab(&["man", "--dir", &dir.display().to_string()]);
    assert_eq!(rc, 0, "{err}");
    for page in [
        "schedlab.1",
        "schedlab-run.1",
        "schedlab-repro-swb.1",
        "schedlab-man.1",
    ] {
        let text = std::fs::read_to_string(dir.join(page)).unwrap_or_default();
        assert!(text.contains(".TH"), "{page} missing or empty");
    }
    let run = std::fs::read_to_string(dir.join("schedlab-run.1")).unwrap();
    assert!(run.contains("allow\\-unfinished"), "{run}");

    // A directory that cannot be made is an error naming the flag.
    let file = tmp("man-not-a-dir");
    std::fs::write(&file, "").unwrap();
    let (rc, _, err) = schedlab(&["man", "--dir", &file.display().to_string()]);
    assert_eq!(rc, 2);
    assert!(err.contains("--dir"), "{err}");
}

#[test]
fn keys_lists_every_key_with_type_default_unit_and_meaning() {
    let (rc, out, err) = schedlab(&["keys"]);
    assert_eq!(rc, 0, "{err}");
    let line = |key: &str| {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("{key} not listed"))
            .to_string()
    };
    assert!(line("machine.preset").contains(" vm-2 "));
    let hz = line("kernel.hz");
    assert!(
        hz.contains("100|250|300|1000") && hz.contains(" Hz "),
        "{hz}"
    );
    assert!(line("kernel.base_slice_ns").contains(" ns "));
    // Every feature of `schedlab features` and every workload parameter.
    let (_, feats, _) = schedlab(&["features"]);
    for f in feats.lines().filter_map(|l| l.split_whitespace().next()) {
        line(&format!("kernel.features.{f}"));
    }
    for p in ["groups", "loops", "ipc", "cpu-ops", "file"] {
        line(&format!("workload.N.{p}"));
    }
}
