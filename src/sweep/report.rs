//! The sweep report: one self-contained HTML page (inline SVG, no script,
//! the run report's look) with, for each metric and each grid parameter,
//! the metric against the parameter's values, one line per combination of
//! the other parameters, mean and 95 % interval over seeds; and the table
//! of differences that stay significant after Holm's correction.

use super::plan::{self, Plan};
use super::results::{self, columns, pointer, PLAN};
use super::stats::{mean_ci95, p_value};
use crate::compare::holm;
use crate::scenario::InputError;
use crate::util::fs::write_atomic;
use serde_json::Value;
use std::fmt::Write;
use std::path::Path;

/// The points of one metric: (parameter values, the metric over seeds).
type Cells = Vec<(Vec<String>, Vec<f64>)>;

const STYLE: &str = "body { font: 13px system-ui, sans-serif; margin: 16px; color: #222; }
h1 { font-size: 18px; } h2 { font-size: 15px; margin-top: 22px; } h3 { font-size: 14px; margin: 4px 0; }
table { border-collapse: collapse; } td, th { border: 1px solid #ddd; padding: 2px 8px; } td.n { text-align: right; }
th { background: #f4f4f4; } .note { color: #666; } svg { border: 1px solid #ccc; }
.grid { display: flex; flex-wrap: wrap; gap: 16px; }";

const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// Read the results directory `dir` and write its report to `out`.
pub fn write(dir: &Path, out: &Path) -> Result<(), InputError> {
    let plan = load_plan(dir)?;
    let page = page(&plan, dir);
    write_atomic(out, page.as_bytes())
        .map_err(|e| InputError::new(format!("cannot write {}: {e}", out.display())))
}

/// The plan the results directory was written for (its plan.json).
fn load_plan(dir: &Path) -> Result<Plan, InputError> {
    let path = dir.join(PLAN);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        InputError::new(format!(
            "{}: cannot read (not a sweep's results directory?): {e}",
            path.display()
        ))
    })?;
    serde_json::from_str(&text)
        .map_err(|e| InputError::new(format!("{}: malformed: {e}", path.display())))
}

/// Each metric's values per point (means over seeds come later).
fn cells(plan: &Plan, dir: &Path) -> (Vec<String>, Vec<Cells>) {
    let loaded = results::load(dir, plan);
    let ok: Vec<Value> = loaded
        .iter()
        .filter_map(|r| r.clone().ok().flatten())
        .collect();
    let metrics: Vec<String> = columns(&plan.metrics, &ok)
        .into_iter()
        .filter(|m| !m.contains("wall"))
        .collect();
    let per_metric = metrics
        .iter()
        .map(|m| {
            let mut c: Cells = Vec::new();
            for (p, r) in plan.points.iter().zip(&loaded) {
                let Some(x) = r
                    .as_ref()
                    .ok()
                    .and_then(|r| r.as_ref()?.pointer(&pointer(m))?.as_f64())
                else {
                    continue;
                };
                match c.iter_mut().find(|(v, _)| *v == p.values) {
                    Some((_, xs)) => xs.push(x),
                    None => c.push((p.values.clone(), vec![x])),
                }
            }
            c
        })
        .collect();
    (metrics, per_metric)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn page(plan: &Plan, dir: &Path) -> String {
    let (metrics, per_metric) = cells(plan, dir);
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>schedlab sweep</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n<h1>schedlab sweep: {}</h1>\n<p class=\"note\">{} points × seeds = {} runs; parameters: {}. Mean over seeds with its 95 % interval (Student's t).</p>\n",
        esc(&plan.file),
        plan.points.len() / seeds_per_point(plan).max(1),
        plan.points.len(),
        esc(&plan.params.join(", "))
    );
    h += &significance_table(plan, &metrics, &per_metric);
    for (m, cells) in metrics.iter().zip(&per_metric) {
        let _ = write!(h, "<h2>{}</h2>\n<div class=\"grid\">\n", esc(m));
        for (pi, param) in plan.params.iter().enumerate() {
            h += &plot(plan, pi, param, m, cells);
        }
        h += "</div>\n";
    }
    h + "</body>\n</html>\n"
}

fn seeds_per_point(plan: &Plan) -> usize {
    let first = plan.points.first().map(|p| &p.values);
    plan.points
        .iter()
        .filter(|p| Some(&p.values) == first)
        .count()
}

/// The values of parameter `pi`, in the plan's order.
fn values_of(plan: &Plan, pi: usize) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for p in &plan.points {
        if !v.contains(&p.values[pi]) {
            v.push(p.values[pi].clone());
        }
    }
    v
}

/// The other parameters' values: the line a cell belongs to.
fn others(values: &[String], pi: usize) -> Vec<String> {
    values
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != pi)
        .map(|(_, v)| v.clone())
        .collect()
}

/// A plotted point: x index, mean, half-width of the interval.
type Mark = (usize, f64, f64);

/// One SVG: `metric` against parameter `pi`, a line per other combination.
fn plot(plan: &Plan, pi: usize, param: &str, metric: &str, cells: &Cells) -> String {
    let xs = values_of(plan, pi);
    let mut lines: Vec<(Vec<String>, Vec<Mark>)> = Vec::new();
    for (values, samples) in cells {
        let x = xs.iter().position(|v| *v == values[pi]).unwrap_or(0);
        let (m, ci) = mean_ci95(samples);
        let key = others(values, pi);
        match lines.iter_mut().find(|(k, _)| *k == key) {
            Some((_, pts)) => pts.push((x, m, ci)),
            None => lines.push((key, vec![(x, m, ci)])),
        }
    }
    let all = lines.iter().flat_map(|(_, p)| p.iter());
    let lo = all
        .clone()
        .map(|&(_, m, c)| m - c)
        .fold(f64::INFINITY, f64::min);
    let hi = all
        .map(|&(_, m, c)| m + c)
        .fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 0.0) };
    // A margin keeps the points off the axes; a flat line gets one too.
    let pad = ((hi - lo) * 0.08).max(lo.abs() * 0.01).max(1e-9);
    let (lo, hi) = (lo - pad, hi + pad);
    let (w, ht, left, top, bottom) = (420.0, 240.0, 70.0, 20.0, 40.0);
    let px = |x: usize| left + (x as f64 + 0.5) * (w - left - 10.0) / xs.len().max(1) as f64;
    let py = |y: f64| top + (hi - y) / (hi - lo) * (ht - top - bottom);
    let mut s = format!(
        "<div><h3>vs {}</h3><svg width=\"{w}\" height=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" font-size=\"11\">\n",
        esc(param),
        ht + 16.0 * lines.len() as f64
    );
    for (y, anchor) in [(hi, "hi"), (lo, "lo")] {
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" data-axis=\"{anchor}\">{}</text>",
            left - 4.0,
            py(y) + 4.0,
            fmt(y)
        );
    }
    for (i, v) in xs.iter().enumerate() {
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            px(i),
            ht - bottom + 16.0,
            esc(v)
        );
    }
    let _ = writeln!(
        s,
        "<line x1=\"{left}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#999\"/>",
        ht - bottom,
        w - 10.0,
        ht - bottom
    );
    for (li, (key, pts)) in lines.iter().enumerate() {
        let c = COLORS[li % COLORS.len()];
        let path: Vec<String> = pts
            .iter()
            .map(|&(x, m, _)| format!("{:.1},{:.1}", px(x), py(m)))
            .collect();
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{c}\" points=\"{}\"/>",
            path.join(" ")
        );
        for &(x, m, ci) in pts {
            let _ = writeln!(
                s,
                "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{2:.1}\" stroke=\"{c}\"/><circle cx=\"{0:.1}\" cy=\"{3:.1}\" r=\"3\" fill=\"{c}\"><title>{4} ± {5}</title></circle>",
                px(x), py(m - ci), py(m + ci), py(m), fmt(m), fmt(ci)
            );
        }
        let label = plan::describe(&others(&plan.params, pi), key);
        let _ = writeln!(
            s,
            "<text x=\"{left}\" y=\"{:.1}\" fill=\"{c}\">{}</text>",
            ht + 12.0 + 16.0 * li as f64,
            esc(&label)
        );
    }
    let _ = writeln!(s, "</svg><p class=\"note\">{}</p></div>", esc(metric));
    s
}

fn fmt(x: f64) -> String {
    if x.abs() >= 100.0 || x == x.trunc() {
        format!("{x:.0}")
    } else {
        format!("{x:.4}")
    }
}

/// Every value of each parameter against its first value, the other
/// parameters fixed, Welch-tested; Holm over all the tests on the page.
fn significance_table(plan: &Plan, metrics: &[String], per_metric: &[Cells]) -> String {
    struct Test {
        metric: String,
        param: String,
        base: String,
        other: String,
        fixed: String,
        means: (f64, f64),
        p: f64,
    }
    let mut tests = Vec::new();
    for (m, cells) in metrics.iter().zip(per_metric) {
        for (pi, param) in plan.params.iter().enumerate() {
            let first = &values_of(plan, pi)[0];
            for (values, ys) in cells.iter().filter(|(v, _)| v[pi] != *first) {
                let key = others(values, pi);
                let Some((_, xs)) = cells
                    .iter()
                    .find(|(v, _)| v[pi] == *first && others(v, pi) == key)
                else {
                    continue;
                };
                tests.push(Test {
                    metric: m.clone(),
                    param: param.clone(),
                    base: first.clone(),
                    other: values[pi].clone(),
                    fixed: plan::describe(&others(&plan.params, pi), &key),
                    means: (mean_ci95(xs).0, mean_ci95(ys).0),
                    p: p_value(xs, ys),
                });
            }
        }
    }
    let adj = holm(&tests.iter().map(|t| t.p).collect::<Vec<_>>());
    let mut rows = String::new();
    for (t, a) in tests.iter().zip(&adj).filter(|(_, a)| **a < 0.05) {
        let change = if t.means.0 != 0.0 {
            format!("{:+.1}%", (t.means.1 - t.means.0) / t.means.0.abs() * 100.0)
        } else {
            "from 0".into()
        };
        let _ = writeln!(
            rows,
            "<tr><td>{}</td><td>{}: {} → {}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{change}</td><td class=\"n\">{:.2e}</td><td class=\"n\">{:.2e}</td></tr>",
            esc(&t.metric), esc(&t.param), esc(&t.base), esc(&t.other), esc(&t.fixed), fmt(t.means.0), fmt(t.means.1), t.p, a
        );
    }
    let mut h = format!(
        "<h2>Significant differences (Welch's t-test, Holm-corrected over {} tests, adjusted p &lt; 0.05)</h2>\n",
        tests.len()
    );
    if rows.is_empty() {
        h += "<p class=\"note\">None.</p>\n";
    } else {
        h += "<table id=\"significant\"><tr><th>metric</th><th>change</th><th>other parameters</th><th>mean before</th><th>mean after</th><th>change</th><th>p</th><th>Holm p</th></tr>\n";
        h += &rows;
        h += "</table>\n";
    }
    h
}
