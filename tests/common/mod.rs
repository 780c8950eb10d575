//! Helpers shared by the integration tests.

use std::process::Command;

/// Run the schedlab binary: (exit code, stdout, stderr). `--machine host`
/// finds no calibration cache: results do not depend on this machine's.
pub fn schedlab(args: &[&str]) -> (i32, String, String) {
    let empty = tmp("empty-cache");
    std::fs::create_dir_all(&empty).unwrap();
    schedlab_with_cache(args, &empty)
}

/// [`schedlab`] with `--machine host`'s calibration cache in `cache`.
pub fn schedlab_with_cache(args: &[&str], cache: &std::path::Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(args)
        .env(::schedlab::machine::host::CACHE_DIR_VAR, cache)
        .output()
        .expect("run schedlab");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A per-process scratch path for a test's output file.
#[allow(dead_code)]
pub fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("schedlab-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A results file without the fields that depend on the wall clock and the
/// command line (`sim.wall_ns`, `meta`).
#[allow(dead_code)]
pub fn json_without_wall(path: &std::path::Path) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["sim"].as_object_mut().unwrap().remove("wall_ns");
    v.as_object_mut().unwrap().remove("meta");
    v
}

/// Run with `--json` to a scratch file and return the results.
#[allow(dead_code)]
pub fn json_of(args: &[&str], name: &str) -> serde_json::Value {
    let path = tmp(name);
    let mut all = args.to_vec();
    let p = path.display().to_string();
    all.extend(["--json", &p, "--quiet"]);
    let (rc, _, err) = schedlab(&all);
    assert_eq!(rc, 0, "{err}");
    json_without_wall(&path)
}

/// The timestamp of an ftrace text line, as written (`... 0.001234: event`).
#[allow(dead_code)]
pub fn line_ts(l: &str) -> String {
    let head = l.split(": ").next().unwrap_or("");
    head.rsplit(' ').next().unwrap_or("").to_string()
}

/// The value of `key` (e.g. `pid=`, `next_pid=`) among an ftrace text
/// line's space-separated fields; "" when the line has none.
#[allow(dead_code)]
pub fn line_field<'a>(l: &'a str, key: &str) -> &'a str {
    l.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key))
        .unwrap_or_default()
}

/// A task of `ops` pinned to `cpu`, built by `b` and launched.
#[allow(dead_code)]
pub fn pinned(
    k: &mut ::schedlab::kernel::Kernel,
    b: &mut ::schedlab::workload::Builder,
    cpu: usize,
    ops: Vec<::schedlab::workload::program::Op>,
) -> ::schedlab::kernel::task::Pid {
    pinned_nice(k, b, cpu, 0, ops)
}

/// A task of `ops` at `nice`, pinned to `cpu`, built by `b` and launched.
#[allow(dead_code)]
pub fn pinned_nice(
    k: &mut ::schedlab::kernel::Kernel,
    b: &mut ::schedlab::workload::Builder,
    cpu: usize,
    nice: i32,
    ops: Vec<::schedlab::workload::program::Op>,
) -> ::schedlab::kernel::task::Pid {
    let p = b.task(
        k,
        ::schedlab::workload::TaskSpec {
            comm: "t",
            group_of: None,
            nice,
            allowed: Some(vec![cpu]),
            ops: std::rc::Rc::from(ops),
        },
    );
    b.launch(k, p);
    p
}
