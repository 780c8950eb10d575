//! Run-to-run noise (issue 20, part 5): deterministic per seed, different
//! across seeds, off on request, and its keys checked.

mod common;
use common::{json_of, schedlab, tmp};

const PIPE: [&str; 5] = ["run", "--machine", "vm-2", "--workload", "pipe:loops=20000"];

fn usecs_per_op(v: &serde_json::Value) -> f64 {
    v["benchmark"]["usecs_per_op"]
        .as_f64()
        .unwrap_or_else(|| panic!("{}", v["benchmark"]))
}

#[test]
fn same_seed_same_bytes_with_noise_on() {
    let mut a = PIPE.to_vec();
    a.extend(["--seed", "5"]);
    let x = json_of(&a, "noise-same-1.json");
    let y = json_of(&a, "noise-same-2.json");
    assert_eq!(x, y);
    assert_eq!(x["sim"]["noise"]["enabled"], true);
    assert!(x["totals"]["noise_irqs"].as_u64().unwrap() > 0);
}

#[test]
fn seeds_give_a_distribution_and_off_is_exact() {
    let run = |seed: &str, extra: &[&str], name: &str| {
        let mut a = PIPE.to_vec();
        a.extend(["--seed", seed]);
        a.extend(extra);
        usecs_per_op(&json_of(&a, name))
    };
    let on: Vec<f64> = ["1", "2", "3"]
        .iter()
        .map(|s| run(s, &[], &format!("noise-on-{s}.json")))
        .collect();
    assert!(on[0] != on[1] || on[1] != on[2], "{on:?}");
    // The pipe benchmark draws no random numbers of its own: without noise
    // every seed gives the same run.
    let off = ["--set", "noise.enabled=false"];
    let a = run("1", &off, "noise-off-1.json");
    let b = run("2", &off, "noise-off-2.json");
    assert_eq!(a, b);
    // Noise keeps the mean costs: the seeds' mean stays near the exact run.
    let mean = on.iter().sum::<f64>() / on.len() as f64;
    assert!((mean / a - 1.0).abs() < 0.05, "{mean} vs {a}");
}

#[test]
fn bad_noise_keys_exit_2_naming_file_line_and_key() {
    let f = tmp("noise-bad.toml");
    std::fs::write(
        &f,
        "[noise]\ncost_cv = 0.1\nirq_hz = 3\n[[workload]]\nkind = \"pipe\"\n",
    )
    .unwrap();
    let (rc, _, err) = schedlab(&["run", f.to_str().unwrap()]);
    assert_eq!(rc, 2);
    assert!(
        err.contains("noise-bad.toml:3") && err.contains("noise.irq_hz"),
        "{err}"
    );
    let (rc, _, err) = schedlab(&["run", "--workload", "pipe", "--set", "noise.cost_cv=-0.5"]);
    assert_eq!(rc, 2);
    assert!(
        err.contains("noise.cost_cv") && err.contains("≥ 0"),
        "{err}"
    );
}
