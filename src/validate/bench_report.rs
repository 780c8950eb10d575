//! The verdicts, table and `--json` of `validate bench`: per benchmark and
//! metric, the real and simulated mean ± sd, the error and the target.

use serde_json::{json, Value};

/// One run's numbers per operation (per round trip for pipe, per message
/// for messaging).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    pub usecs: f64,
    pub switches: f64,
    pub migrations: f64,
    pub cpu_us: f64,
}

/// Reads one metric of a sample.
pub type Metric = fn(&Sample) -> f64;

/// The compared metrics: (name per op, value).
pub const METRICS: [(&str, Metric); 4] = [
    ("usecs", |s| s.usecs),
    ("switches", |s| s.switches),
    ("migrations", |s| s.migrations),
    ("CPU usecs", |s| s.cpu_us),
];

/// What a simulated mean must be to pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    /// Within this many % of the real mean.
    Within(f64),
    /// Within this factor of the real mean, either way.
    Factor(f64),
    /// A ratio that moves from 1 the same way as the real one, within
    /// this factor of it.
    Trend(f64),
    /// A ratio that stays within this many % of 1 where the real one does
    /// (a flat curve stays flat), else moves from 1 the same way.
    Shape(f64),
    /// Shown, not judged.
    Info,
}

impl Target {
    pub fn text(&self) -> String {
        match self {
            Target::Within(p) => format!("±{p}%"),
            Target::Factor(f) => format!("{f}×"),
            Target::Trend(f) => format!("same way, {f}×"),
            Target::Shape(p) => format!("shape ±{p}%"),
            Target::Info => "-".into(),
        }
    }

    /// Whether `sim` meets the target set by `real`; None for Info.
    pub fn holds(&self, real: f64, sim: f64) -> Option<bool> {
        let within_factor = |f: f64| match (real == 0.0, sim == 0.0) {
            (true, true) => true,
            (false, false) => (sim / real).max(real / sim) <= f,
            _ => false,
        };
        match *self {
            Target::Within(p) => Some((sim - real).abs() <= p / 100.0 * real.abs()),
            Target::Factor(f) => Some(within_factor(f)),
            Target::Trend(f) => {
                let same_way = (real - 1.0).signum() == (sim - 1.0).signum();
                Some(same_way && real > 0.0 && sim > 0.0 && within_factor(f))
            }
            Target::Shape(p) => {
                let flat = |x: f64| (x - 1.0).abs() <= p / 100.0;
                Some(if flat(real) {
                    flat(sim)
                } else {
                    (real - 1.0) * (sim - 1.0) > 0.0
                })
            }
            Target::Info => None,
        }
    }
}

/// One line of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub bench: String,
    pub metric: String,
    /// (mean, sd) over the real runs and over the simulated seeds.
    pub real: (f64, f64),
    pub sim: (f64, f64),
    pub target: Target,
}

impl Row {
    /// (sim − real) / real in %; NaN when the real mean is 0.
    pub fn error_pct(&self) -> f64 {
        if self.real.0 == 0.0 {
            return f64::NAN;
        }
        (self.sim.0 - self.real.0) / self.real.0.abs() * 100.0
    }

    pub fn verdict(&self) -> Option<bool> {
        self.target.holds(self.real.0, self.sim.0)
    }

    pub fn to_json(&self) -> Value {
        json!({
            "benchmark": self.bench,
            "metric": self.metric,
            "real_mean": self.real.0, "real_sd": self.real.1,
            "sim_mean": self.sim.0, "sim_sd": self.sim.1,
            "error_pct": finite(self.error_pct()),
            "target": self.target.text(),
            "pass": self.verdict(),
        })
    }
}

/// NaN and infinities are not JSON numbers.
pub fn finite(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

/// One row per metric of a benchmark, from its real and simulated samples.
pub fn metric_rows(
    bench: &str,
    unit: &str,
    targets: [Target; 4],
    real: &[Sample],
    sim: &[Sample],
) -> Vec<Row> {
    METRICS
        .iter()
        .zip(targets)
        .map(|(&(name, f), target)| Row {
            bench: bench.to_string(),
            metric: format!("{name}/{unit}"),
            real: mean_sd(real, f),
            sim: mean_sd(sim, f),
            target,
        })
        .collect()
}

/// A g1 → g4 row (or any two group counts): the ratio of two rows' means, its sd propagated to
/// first order from theirs.
pub fn ratio_row(bench: &str, from: &Row, to: &Row, target: Target) -> Row {
    let ratio = |a: (f64, f64), b: (f64, f64)| {
        let r = b.0 / a.0;
        let rel = ((a.1 / a.0).powi(2) + (b.1 / b.0).powi(2)).sqrt();
        (r, (r * rel).abs())
    };
    Row {
        bench: bench.to_string(),
        metric: format!("{} ratio", to.metric),
        real: ratio(from.real, to.real),
        sim: ratio(from.sim, to.sim),
        target,
    }
}

/// Mean and sample standard deviation of `f` over the samples.
fn mean_sd(samples: &[Sample], f: Metric) -> (f64, f64) {
    crate::compare::mean_sd(&samples.iter().map(f).collect::<Vec<_>>())
}

/// Decimals that give `x` four significant digits (0 for 0).
fn decimals(x: f64) -> usize {
    if x == 0.0 || !x.is_finite() {
        return 0;
    }
    (3 - x.abs().log10().floor() as i32).clamp(0, 6) as usize
}

/// The mean to four significant digits, the sd to the same decimals.
fn mean_text((m, sd): (f64, f64)) -> String {
    if !m.is_finite() {
        return "-".into();
    }
    let d = decimals(if m == 0.0 { sd } else { m });
    format!("{m:.d$} ± {sd:.d$}")
}

/// The table, one row per benchmark and metric.
pub fn table(rows: &[Row]) -> String {
    let mut s = format!(
        "{:<27} {:<20} {:>21} {:>21} {:>8}  {:<15} result\n",
        "benchmark", "metric", "real mean ± sd", "simulated mean ± sd", "error", "target"
    );
    for r in rows {
        let err = r.error_pct();
        let err = if err.is_finite() {
            format!("{err:+.1}%")
        } else {
            "-".into()
        };
        let verdict = match r.verdict() {
            Some(true) => "PASS",
            Some(false) => "MISS",
            None => "",
        };
        s += &format!(
            "{:<27} {:<20} {:>21} {:>21} {:>8}  {:<15} {verdict}\n",
            r.bench,
            r.metric,
            mean_text(r.real),
            mean_text(r.sim),
            err,
            r.target.text(),
        );
    }
    s
}

/// (judged, missed) rows.
pub fn score(rows: &[Row]) -> (usize, usize) {
    let judged: Vec<bool> = rows.iter().filter_map(Row::verdict).collect();
    (judged.len(), judged.iter().filter(|&&ok| !ok).count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn means_keep_four_significant_digits_and_sd_their_decimals() {
        assert_eq!(mean_text((7.43295, 0.1234)), "7.433 ± 0.123");
        assert_eq!(mean_text((0.071234, 0.002)), "0.07123 ± 0.00200");
        assert_eq!(mean_text((13.9, 1e-15)), "13.90 ± 0.00");
        assert_eq!(mean_text((40002.0, 3.4)), "40002 ± 3");
        assert_eq!(mean_text((0.0, 0.0)), "0 ± 0");
        assert_eq!(mean_text((f64::NAN, 0.0)), "-");
    }
}
