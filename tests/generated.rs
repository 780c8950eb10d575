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
fn completion_script_is_valid_bash() {
    let (_, out, _) = schedlab(&["completions", "bash"]);
    let path = tmp("schedlab.bash");
    std::fs::write(&path, out).unwrap();
    let Ok(st) = std::process::Command::new("bash")
        .arg("-n")
        .arg(&path)
        .status()
    else {
        eprintln!("no bash here: skipped the syntax check");
        return;
    };
    assert!(st.success(), "bash -n rejects the completion script");
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
