//! The layers depend only downward (docs/ARCHITECTURE.md). Every
//! `crate::MODULE` path in a top-level module's files must name a module
//! of the same layer or a lower one.

use std::collections::BTreeMap;
use std::path::Path;

/// Bottom to top; modules in one row may use each other.
const LAYERS: &[&[&str]] = &[
    &["engine", "machine", "util"],
    &["kernel"],
    &["observe", "trace"],
    &["workload"],
    &["report"],
    &["scenario", "run", "progress"],
    &[
        "bench",
        "calibrate",
        "compare",
        "explain",
        "fuzz",
        "record",
        "repro",
        "sweep",
        "validate",
    ],
    &["cli"],
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level modules named by `crate::NAME` in `text`.
fn crate_paths(text: &str) -> Vec<String> {
    text.match_indices("crate::")
        .filter(|(i, _)| !text[..*i].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
        .map(|(i, m)| {
            text[i + m.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

/// (module, file) for every source file: `src/kernel/core.rs` is `kernel`.
fn modules() -> Vec<(String, std::path::PathBuf)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .into_iter()
        .filter_map(|f| {
            let rel = f.strip_prefix(&src).unwrap();
            let first = rel.components().next()?.as_os_str().to_str()?;
            let m = first.trim_end_matches(".rs").to_string();
            (m != "lib" && m != "main").then_some((m, f))
        })
        .collect()
}

#[test]
fn every_top_level_module_has_a_layer() {
    for (m, f) in modules() {
        assert!(
            layer(&m).is_some(),
            "{}: module `{m}` is in no layer; add it to LAYERS here and to docs/ARCHITECTURE.md",
            f.display()
        );
    }
}

#[test]
fn no_module_imports_a_higher_layer() {
    let mut bad = BTreeMap::new();
    for (m, f) in modules() {
        let Some(own) = layer(&m) else { continue };
        let text = std::fs::read_to_string(&f).unwrap();
        for used in crate_paths(&text) {
            if layer(&used).is_some_and(|l| l > own) {
                bad.insert(
                    format!("{}", f.display()),
                    format!("{m} uses crate::{used}"),
                );
            }
        }
    }
    assert!(bad.is_empty(), "imports that point up a layer: {bad:#?}");
}

#[test]
fn the_scan_sees_paths_inside_use_lists_and_expressions() {
    let text =
        "use crate::kernel::Kernel;\nlet x = crate::report::html::Sink::Page(f);\n// notcrate::cli";
    assert_eq!(crate_paths(text), ["kernel", "report"]);
}
