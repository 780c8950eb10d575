//! `schedlab compare`: an A/B experiment. Both configurations run N times
//! with seeds seed, seed+1, …; every numeric benchmark and totals metric
//! gets mean ± stddev per side, the % change, and Welch's t-test, its
//! p-values Holm-corrected over the metrics of each side against A: with
//! some thirty metrics, an uncorrected 5 % test calls one or two of them
//! significant between identical configurations.
//!
//! Runs are spread over threads, each building its own kernel; results are
//! gathered by run index, so the output does not depend on thread timing.

use crate::kernel::tracepoint::Tracer;
use crate::kernel::Kernel;
use crate::report::html::{compare_page, HtmlReport, Slot};
use crate::report::json::to_json;
use crate::run::{run_with, ExtraTracer};
use crate::scenario::flags::{load_scenario, read_scenario, ScenarioArgs};
use crate::scenario::{InputError, Scenario, Source};
use crate::trace::Selection;
use crate::util::fs::write_atomic;
use crate::util::sink::STDIO;
use clap::Args;
use serde_json::{json, Map, Value};
use std::fmt::Write;
use std::path::PathBuf;

/// One run's flattened numeric results.
pub type Metrics = Map<String, Value>;

#[derive(Args)]
pub struct CompareArgs {
    /// Scenario file for side A (and for B when B is not given)
    a: Option<PathBuf>,
    /// Scenario file for side B
    b: Option<PathBuf>,
    #[command(flatten)]
    common: ScenarioArgs,
    /// Override a key on side A only (repeatable)
    #[arg(long = "set-a", value_name = "KEY=VALUE")]
    set_a: Vec<String>,
    /// Override a key on side B only (repeatable)
    #[arg(long = "set-b", value_name = "KEY=VALUE")]
    set_b: Vec<String>,
    /// One more side, named NAME, with these keys over the common flags
    /// (repeatable; each is tested against A)
    #[arg(long = "variant", value_name = "NAME:KEY=VALUE,...")]
    variants: Vec<String>,
    /// Runs per side, with seeds seed, seed+1, …
    #[arg(long, default_value_t = 5)]
    runs: u64,
    /// Write the comparison as JSON to this file (`-`: stdout, the table then on stderr), atomically
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Write an HTML page with A and B side by side: the first run of each
    /// (timelines, latency CDFs, util_avg, nr_running) and all the metrics
    #[arg(long, value_name = "PATH")]
    html: Option<PathBuf>,
    /// Quiet: no progress bar, and only the results: the table, no notes
    #[arg(long, short)]
    quiet: bool,
}

/// Two-sided confidence the significance verdict is stated at.
const CONFIDENCE: f64 = 0.95;

pub fn main(args: &CompareArgs) -> i32 {
    match compare(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("schedlab: error: {e}");
            2
        }
    }
}

/// A named configuration: A, B or a `--variant`.
pub type Side = (String, (Source, Scenario));

/// The sides: A, B when it differs from A (or is a file of its own),
/// then the variants. At least two, all different.
fn sides(args: &CompareArgs) -> Result<Vec<Side>, InputError> {
    let load = |file: Option<&PathBuf>, sets: &[String]| {
        load_scenario(read_scenario(file)?, &args.common, false, None, sets)
    };
    let mut out = vec![("A".to_string(), load(args.a.as_ref(), &args.set_a)?)];
    let b = load(args.b.as_ref().or(args.a.as_ref()), &args.set_b)?;
    if args.variants.is_empty() || args.b.is_some() || !args.set_b.is_empty() {
        out.push(("B".to_string(), b));
    }
    for v in &args.variants {
        let (name, keys) = v.split_once(':').ok_or_else(|| {
            InputError::new(format!("--variant `{v}`: expected NAME:KEY=VALUE,..."))
        })?;
        let name = name.trim();
        if name.is_empty() || out.iter().any(|(n, _)| n == name) {
            return Err(InputError::new(format!(
                "--variant `{v}`: give each side a new, non-empty name (A and B are taken)"
            )));
        }
        let sets: Vec<String> = keys.split(',').map(str::to_string).collect();
        out.push((name.to_string(), load(args.a.as_ref(), &sets)?));
    }
    check_sides(&out)?;
    Ok(out)
}

/// Two sides that are the same scenario cannot be compared.
pub fn check_sides(sides: &[Side]) -> Result<(), InputError> {
    for (i, (x, (_, a))) in sides.iter().enumerate() {
        for (y, (_, b)) in &sides[..i] {
            if a.to_table() == b.to_table() {
                return Err(InputError::new(format!(
                    "sides {y} and {x} are the same scenario: give two files or --set-a/--set-b/--variant that differ"
                )));
            }
        }
    }
    if sides.len() < 2 {
        return Err(InputError::new("give at least two sides to compare"));
    }
    Ok(())
}

fn compare(args: &CompareArgs) -> Result<(), InputError> {
    if args.runs == 0 {
        return Err(InputError::new("--runs must be at least 1"));
    }
    let sides = sides(args)?;
    let n = sides.len() as u64;
    crate::progress::install(crate::progress::Kind::Runs(Some(n * args.runs)), args.quiet);
    let html = args.html.is_some();
    let mut results = Vec::new();
    for (i, (_, side)) in sides.iter().enumerate() {
        results.push(run_side_html(side, args.runs, html && i < 2)?);
    }
    let values: Vec<Vec<Metrics>> = results.iter().map(|r| r.0.clone()).collect();
    let rows = all_rows(&sides, &values);
    let (a, b) = (&sides[0].1 .1, &sides[1].1 .1);
    let mut text = String::new();
    for (i, (name, (_, sc))) in sides.iter().enumerate().skip(1) {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.side == *name).collect();
        if i > 1 {
            text.push('\n');
        }
        text += &table(&mine, args.runs, (a, sc, name), args.quiet);
    }
    // With the JSON on stdout (`--json -`), the table goes to stderr.
    let json_to_stdout = args.json.as_ref().is_some_and(|p| p.as_os_str() == STDIO);
    if json_to_stdout {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    let second = &sides[1].0;
    if let (Some(path), Some(ha), Some(hb)) = (&args.html, results[0].1.take(), results[1].1.take())
    {
        let what = ha["header"]["title"].as_str().unwrap_or("").to_string();
        let pair = [(a, b, ha), (b, a, hb)]
            .map(|(s, o, run)| json!({ "label": differences(s, o), "run": run }));
        let [sa, sb] = pair;
        let first: Vec<Value> = rows
            .iter()
            .filter(|r| r.side == *second)
            .map(Row::to_json)
            .collect();
        let v = json!({
            "title": format!("schedlab compare: {what}, {} run(s) per side, seeds {}..", args.runs, a.seed),
            "meta": crate::report::meta::meta(),
            "runs": args.runs,
            "a": sa,
            "b": sb,
            "rows": first,
        });
        write_atomic(path, compare_page(&v).as_bytes())
            .map_err(|e| InputError::new(format!("cannot write {}: {e}", path.display())))?;
        if !args.quiet {
            eprintln!("schedlab: wrote {}", crate::util::fs::written(&[path]));
        }
    }
    if let Some(path) = &args.json {
        let v = crate::report::meta::with_meta(compare_json(&sides, args.runs, &values, &rows));
        let text = serde_json::to_string_pretty(&v).unwrap_or_default() + "\n";
        if json_to_stdout {
            print!("{text}");
        } else {
            write_atomic(path, text.as_bytes())
                .map_err(|e| InputError::new(format!("cannot write {}: {e}", path.display())))?;
        }
    }
    Ok(())
}

/// Every side after the first against the first.
fn all_rows(sides: &[Side], values: &[Vec<Metrics>]) -> Vec<Row> {
    let noise = |sc: &Scenario| sc.kernel.noise.enabled;
    let a = &sides[0].1 .1;
    sides
        .iter()
        .zip(values)
        .skip(1)
        .flat_map(|((name, (_, sc)), vs)| {
            metric_rows(&values[0], vs, !noise(a) && !noise(sc))
                .into_iter()
                .map(move |mut r| {
                    r.side = name.clone();
                    r
                })
        })
        .collect()
}

/// The comparison as JSON: each side's scenario and every run's values,
/// and the statistics of each side against the first (A).
fn compare_json(sides: &[Side], runs: u64, values: &[Vec<Metrics>], rows: &[Row]) -> Value {
    let table = |sc: &Scenario| serde_json::to_value(sc.to_table()).unwrap_or(Value::Null);
    let per_side: Vec<Value> = sides
        .iter()
        .zip(values)
        .map(|((name, (_, sc)), vs)| {
            let runs: Vec<Value> = vs
                .iter()
                .enumerate()
                .map(|(i, m)| json!({ "seed": sc.seed + i as u64, "metrics": m }))
                .collect();
            json!({ "name": name, "scenario": table(sc), "runs": runs })
        })
        .collect();
    json!({
        "runs": runs,
        "confidence": CONFIDENCE,
        // `significant` compares `p_holm`, Holm-corrected per side.
        "correction": "holm",
        "a": table(&sides[0].1 .1),
        "b": table(&sides[1].1 .1),
        "sides": per_side,
        "metrics": rows.iter().map(Row::to_json).collect::<Vec<_>>(),
    })
}

/// Run every side `runs` times and compare each with the first: the
/// `--json` document. For the Python package.
pub fn compare_sides(sides: &[Side], runs: u64) -> Result<Value, InputError> {
    if runs == 0 {
        return Err(InputError::new("runs must be at least 1"));
    }
    check_sides(sides)?;
    let values = sides
        .iter()
        .map(|(_, s)| run_side(s, runs))
        .collect::<Result<Vec<_>, _>>()?;
    let rows = all_rows(sides, &values);
    Ok(compare_json(sides, runs, &values, &rows))
}

/// Run one side `runs` times in parallel; the flattened numeric metrics of
/// each run, in seed order.
pub fn run_side(side: &(Source, Scenario), runs: u64) -> Result<Vec<Metrics>, InputError> {
    run_side_html(side, runs, false).map(|r| r.0)
}

/// `run_side`, and with `html` the HTML report data of the first run.
fn run_side_html(
    (src, sc): &(Source, Scenario),
    runs: u64,
    html: bool,
) -> Result<(Vec<Metrics>, Option<Value>), InputError> {
    let slot = Slot::default();
    let report = |k: &Kernel| -> Box<dyn Tracer> {
        Box::new(HtmlReport::new(slot.clone(), Selection::default(), None, k))
    };
    let metrics = crate::util::parallel::par_map(runs as usize, |i| {
        let mut sc = sc.clone();
        sc.seed += i as u64;
        let extra = (html && i == 0).then_some(&report as ExtraTracer);
        let r = run_with(src, &sc, extra).map_err(|e| e.to_string())?;
        if let (Some(d), true) = (
            slot.lock().unwrap_or_else(|e| e.into_inner()).as_mut(),
            i == 0,
        ) {
            d["header"] = crate::report::meta::run_header(&r.view());
            // The compare page draws no per-task lanes: keep it small.
            d.as_object_mut().map(|o| o.remove("lanes"));
        }
        Ok(metrics(&to_json(&r.view())))
    })
    .map_err(InputError::new)?;
    let data = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
    Ok((metrics, data))
}

/// The numbers worth comparing: the benchmark's and the totals, flattened
/// to dotted keys (`benchmark.wakeup_latency_us.p99`).
pub fn metrics(v: &Value) -> Map<String, Value> {
    let mut m = Map::new();
    for section in ["benchmark", "totals"] {
        if let Some(x) = v.get(section) {
            flatten(section, x, &mut m);
        }
    }
    // The first workload's fields also stand at the top of `benchmark`.
    if let Some(name) = v.pointer("/benchmark/name").and_then(Value::as_str) {
        let nested = format!("benchmark.{name}.");
        m.retain(|k, _| !k.starts_with(&nested));
    }
    // Its parameters are inputs, not results.
    for p in input_params(v) {
        m.remove(&format!("benchmark.{p}"));
    }
    m
}

/// The first workload's parameter names (a run's JSON): inputs, not results.
pub fn input_params(result: &Value) -> Vec<&'static str> {
    result
        .pointer("/benchmark/name")
        .and_then(Value::as_str)
        .and_then(crate::workload::kinds::kind)
        .map(|k| k.keys())
        .unwrap_or_default()
}

fn flatten(prefix: &str, v: &Value, out: &mut Map<String, Value>) {
    match v {
        Value::Number(_) => {
            out.insert(prefix.to_string(), v.clone());
        }
        Value::Object(o) => o
            .iter()
            .for_each(|(k, x)| flatten(&format!("{prefix}.{k}"), x, out)),
        _ => {}
    }
}

struct Row {
    metric: String,
    /// The side compared with A.
    side: String,
    a: (f64, f64),
    b: (f64, f64),
    /// None for a change from a mean of 0 (not a percentage).
    change_pct: Option<f64>,
    p: f64,
    /// `p` after Holm's correction over the tested rows of this side; the
    /// verdict uses it.
    p_holm: f64,
    /// Both sides ran without noise (`noise.enabled = false`).
    noise_off: bool,
}

impl Row {
    fn significant(&self) -> bool {
        self.p_holm < 1.0 - CONFIDENCE
    }

    /// Noise off on both sides and every run of each side gave the same
    /// value (a workload without randomness): the difference, if any, is
    /// exact, not a test's verdict. With noise on, equal runs are one sample
    /// of a chaotic system, never exact.
    fn exact(&self) -> bool {
        self.noise_off && self.a.1 == 0.0 && self.b.1 == 0.0
    }

    fn to_json(&self) -> Value {
        json!({
            "metric": self.metric,
            "side": self.side,
            "a_mean": self.a.0, "a_stddev": self.a.1,
            "b_mean": self.b.0, "b_stddev": self.b.1,
            "change_pct": self.change_pct,
            "p_value": self.p,
            "p_holm": self.p_holm,
            "significant": self.significant(),
            "exact": self.exact(),
        })
    }
}

fn metric_rows(ra: &[Map<String, Value>], rb: &[Map<String, Value>], noise_off: bool) -> Vec<Row> {
    let keys = ra[0].keys().filter(|k| rb[0].contains_key(*k));
    let mut rows: Vec<Row> = keys
        .filter_map(|k| {
            let xs: Vec<f64> = ra.iter().filter_map(|m| m.get(k)?.as_f64()).collect();
            let ys: Vec<f64> = rb.iter().filter_map(|m| m.get(k)?.as_f64()).collect();
            if xs.iter().chain(&ys).all(|&v| v == 0.0) || k.ends_with(".cpus") {
                return None;
            }
            let (a, b) = (mean_sd(&xs), mean_sd(&ys));
            let change_pct = (a.0 != 0.0).then(|| (b.0 - a.0) / a.0.abs() * 100.0);
            let p = welch_p(&xs, &ys);
            Some(Row {
                metric: k.clone(),
                side: "B".into(),
                a,
                b,
                change_pct,
                p,
                p_holm: p,
                noise_off,
            })
        })
        .collect();
    correct(&mut rows);
    rows
}

/// Holm's correction over the rows that are tests: an exact row's verdict
/// is no test's, so it neither counts nor changes.
fn correct(rows: &mut [Row]) {
    let mut tested: Vec<&mut Row> = rows.iter_mut().filter(|r| !r.exact()).collect();
    let adj = holm(&tested.iter().map(|r| r.p).collect::<Vec<_>>());
    for (r, p) in tested.iter_mut().zip(adj) {
        r.p_holm = p;
    }
}

/// How many rows Holm's correction ran over.
fn tests(rows: &[&Row]) -> usize {
    rows.iter().filter(|r| !r.exact()).count()
}

/// The table of one side against A; `quiet` leaves out the closing note.
fn table(
    rows: &[&Row],
    runs: u64,
    (a, b, bname): (&Scenario, &Scenario, &str),
    quiet: bool,
) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "A/{bname} comparison, {runs} run(s) per side (seeds {}..), Welch's t-test at {:.0}% confidence",
        a.seed,
        CONFIDENCE * 100.0
    );
    let _ = match tests(rows) {
        _ if runs < 2 => writeln!(o),
        1 => writeln!(o, ", one metric tested"),
        n => writeln!(o, ", Holm-corrected over the {n} metrics tested"),
    };
    for (name, side, other) in [("A", a, b), (bname, b, a)] {
        let _ = writeln!(o, "  {name}: {}", differences(side, other));
    }
    let _ = writeln!(
        o,
        "\n{:<40} {:>24} {:>24} {:>9}  significant",
        "metric",
        "A mean ± sd",
        format!("{bname} mean ± sd"),
        "change"
    );
    for r in rows {
        let verdict = if runs < 2 {
            "n/a (1 run)".to_string()
        } else if r.exact() {
            let same = r.a.0 == r.b.0;
            (if same {
                "no (identical runs)"
            } else {
                "exact (sd 0 both sides)"
            })
            .to_string()
        } else if r.significant() {
            format!("yes (p={:.3}, Holm {:.3})", r.p, r.p_holm)
        } else {
            format!("not significant (p={:.2}, Holm {:.2})", r.p, r.p_holm)
        };
        let change = match r.change_pct {
            Some(c) => format!("{c:.1}%"),
            None if r.b.0 == 0.0 => "0.0%".into(),
            None => "from 0".into(),
        };
        let _ = writeln!(
            o,
            "{:<40} {:>24} {:>24} {change:>9}  {verdict}",
            r.metric,
            fmt_ms(r.a),
            fmt_ms(r.b),
        );
    }
    if !quiet && runs >= 2 && rows.iter().any(|r| r.exact()) {
        let _ = writeln!(o,
            "\nexact: noise is off on both sides and every seed gave the same value (the workload\n\
             draws no random numbers), so the difference is the configuration's own; more runs\n\
             will not change it."
        );
    }
    o
}

fn fmt_ms((m, sd): (f64, f64)) -> String {
    let prec = if m.abs() >= 100.0 { 0 } else { 3 };
    format!("{m:.prec$} ± {sd:.prec$}")
}

/// The keys where one side's resolved scenario differs from the other's.
fn differences(side: &Scenario, other: &Scenario) -> String {
    let (mut x, mut y) = (Map::new(), Map::new());
    flatten_all(
        "",
        &serde_json::to_value(side.to_table()).unwrap_or(Value::Null),
        &mut x,
    );
    flatten_all(
        "",
        &serde_json::to_value(other.to_table()).unwrap_or(Value::Null),
        &mut y,
    );
    let d: Vec<String> = x
        .iter()
        .filter(|(k, v)| y.get(*k) != Some(v))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    d.join(" ")
}

fn flatten_all(prefix: &str, v: &Value, out: &mut Map<String, Value>) {
    match v {
        Value::Object(o) => o.iter().for_each(|(k, x)| {
            let key = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            flatten_all(&key, x, out)
        }),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| flatten_all(&format!("{prefix}.{i}"), x, out)),
        _ => {
            out.insert(prefix.to_string(), v.clone());
        }
    }
}

/// Mean and sample standard deviation.
pub fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let var = if xs.len() > 1 {
        xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (m, var.sqrt())
}

/// Two-sided p-value of Welch's unequal-variances t-test. Identical
/// constant samples give 1; different constant samples give 0.
pub fn welch_p(xs: &[f64], ys: &[f64]) -> f64 {
    let (n1, n2) = (xs.len() as f64, ys.len() as f64);
    if n1 < 2.0 || n2 < 2.0 {
        return 1.0;
    }
    let ((m1, s1), (m2, s2)) = (mean_sd(xs), mean_sd(ys));
    let (v1, v2) = (s1 * s1 / n1, s2 * s2 / n2);
    if v1 + v2 == 0.0 {
        return if m1 == m2 { 1.0 } else { 0.0 };
    }
    let t = (m1 - m2) / (v1 + v2).sqrt();
    let df = (v1 + v2).powi(2) / (v1 * v1 / (n1 - 1.0) + v2 * v2 / (n2 - 1.0));
    t_two_sided_p(t, df)
}

/// Holm-adjusted p-values, in the input order: sort ascending, multiply
/// the i-th smallest by (m − i), keep them monotone, cap at 1.
pub fn holm(ps: &[f64]) -> Vec<f64> {
    let m = ps.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| ps[a].total_cmp(&ps[b]));
    let mut adj = vec![0.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max((ps[i] * (m - rank) as f64).min(1.0));
        adj[i] = running;
    }
    adj
}

/// P(|T| > t) for Student's t with `df` degrees of freedom:
/// I_{df/(df+t²)}(df/2, 1/2).
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    inc_beta(df / 2.0, 0.5, df / (df + t * t))
}

/// The regularized incomplete beta function I_x(a, b) by its continued
/// fraction (modified Lentz).
fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    if x > (a + 1.0) / (a + b + 2.0) {
        return 1.0 - inc_beta(b, a, 1.0 - x);
    }
    let ln_front = a * x.ln() + b * (1.0 - x).ln() - ln_beta(a, b) - a.ln();
    let tiny = 1e-300;
    let (mut c, mut d) = (1.0, 1.0 - (a + b) * x / (a + 1.0));
    d = 1.0 / if d.abs() < tiny { tiny } else { d };
    let mut f = d;
    for m in 1..300 {
        let m = m as f64;
        for num in [
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + num * d;
            d = 1.0 / if d.abs() < tiny { tiny } else { d };
            c = 1.0 + num / c;
            c = if c.abs() < tiny { tiny } else { c };
            f *= c * d;
        }
        if (c * d - 1.0).abs() < 1e-12 {
            break;
        }
    }
    ln_front.exp() * f
}

fn ln_beta(a: f64, b: f64) -> f64 {
    ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b)
}

/// Lanczos approximation (g = 7, n = 9).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welch_matches_known_values() {
        // t = 2.228 with 10 df is the two-sided 5% point of Student's t.
        let p = inc_beta(5.0, 0.5, 10.0 / (10.0 + 2.228f64.powi(2)));
        assert!((p - 0.05).abs() < 1e-3, "{p}");
        let same = welch_p(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]);
        assert!((same - 1.0).abs() < 1e-9);
        let apart = welch_p(&[1.0, 1.1, 0.9, 1.0], &[2.0, 2.1, 1.9, 2.0]);
        assert!(apart < 1e-4, "{apart}");
        assert_eq!(mean_sd(&[2.0, 4.0]), (3.0, 2f64.sqrt()));
    }

    #[test]
    fn exact_only_without_noise() {
        let m = |v: f64| {
            let mut m = Map::new();
            m.insert("x".into(), json!(v));
            m
        };
        let (ra, rb) = ([m(1.0), m(1.0)], [m(2.0), m(2.0)]);
        assert!(metric_rows(&ra, &rb, true)[0].exact());
        // With noise on, equal runs are not exact: Welch decides.
        let rows = metric_rows(&ra, &rb, false);
        assert!(!rows[0].exact() && rows[0].significant());
        let (ra, rb) = ([m(1.0), m(1.2)], [m(1.1), m(1.0)]);
        let rows = metric_rows(&ra, &rb, false);
        assert!(!rows[0].exact() && !rows[0].significant());
    }

    #[test]
    fn verdicts_use_holm_over_the_tested_rows() {
        let row = |p: f64, sd: f64| Row {
            metric: String::new(),
            side: "B".into(),
            a: (1.0, sd),
            b: (2.0, sd),
            change_pct: None,
            p,
            p_holm: p,
            noise_off: true,
        };
        // Four tests below 0.05 each; Holm keeps 0.005 (·4) and 0.01 (·3).
        // The exact row (sd 0, noise off) is no test: it counts for none.
        let mut rows =
            [0.01, 0.04, 0.03, 0.005, 0.0].map(|p| row(p, if p > 0.0 { 0.1 } else { 0.0 }));
        correct(&mut rows);
        let sig: Vec<bool> = rows.iter().map(Row::significant).collect();
        assert_eq!(sig, [true, false, false, true, true]);
        assert!((rows[1].p_holm - 0.06).abs() < 1e-12 && rows[4].p_holm == 0.0);
        assert_eq!(tests(&rows.iter().collect::<Vec<_>>()), 4);
    }

    #[test]
    fn holm_matches_the_textbook_example() {
        // p = 0.01, 0.04, 0.03, 0.005 → sorted 0.005·4, 0.01·3, 0.03·2, 0.04·1
        let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
        let want = [0.03, 0.06, 0.06, 0.02];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
        assert!(holm(&[]).is_empty());
    }
}
