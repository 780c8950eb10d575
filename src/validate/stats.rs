//! LISA-style statistics of real vs simulated util_avg: per phase, the
//! steady-state range (min, max, mean over the phase's last half) and the
//! share of samples whose error is within a margin. Errors are in % of
//! SCHED_CAPACITY_SCALE (1024).

use super::timeline::PhaseSpan;
use crate::kernel::pelt::SCHED_CAPACITY_SCALE;

/// The steady-state min and max may differ by at most this (% of 1024).
pub const RANGE_TOL_PCT: f64 = 1.5;
/// A sample is good when real and simulated differ by at most this.
pub const SAMPLE_TOL_PCT: f64 = 7.0;
/// At least this share (%) of a phase's samples must be good.
pub const SHARE_MIN_PCT: f64 = 95.0;

/// One sample: its read time and the real and simulated util_avg.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Point {
    pub t: u64,
    pub real: u64,
    pub sim: u64,
}

/// min, max and mean of a set of util_avg values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    pub min: u64,
    pub max: u64,
    pub mean: f64,
}

impl Range {
    fn of(vals: impl Iterator<Item = u64> + Clone) -> Option<Range> {
        let n = vals.clone().count();
        Some(Range {
            min: vals.clone().min()?,
            max: vals.clone().max()?,
            mean: vals.sum::<u64>() as f64 / n as f64,
        })
    }
}

/// Statistics of one phase.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseStats {
    pub name: String,
    pub samples: usize,
    /// Samples within SAMPLE_TOL_PCT.
    pub within: usize,
    /// Largest |real - sim|, % of 1024.
    pub max_err_pct: f64,
    /// (real, simulated) steady-state ranges, for duty phases.
    pub steady: Option<(Range, Range)>,
}

/// `x` util units in % of capacity.
pub fn pct(x: f64) -> f64 {
    x * 100.0 / SCHED_CAPACITY_SCALE as f64
}

impl PhaseStats {
    /// The share of good samples, %.
    pub fn within_pct(&self) -> f64 {
        if self.samples == 0 {
            return 0.0;
        }
        self.within as f64 * 100.0 / self.samples as f64
    }

    /// The larger of the min and max errors of the steady-state range.
    pub fn range_err_pct(&self) -> Option<f64> {
        self.steady.map(|(r, s)| {
            let lo = r.min.abs_diff(s.min) as f64;
            let hi = r.max.abs_diff(s.max) as f64;
            pct(lo.max(hi))
        })
    }

    /// Both criteria hold (and there were samples to judge).
    pub fn pass(&self) -> bool {
        self.samples > 0
            && self.within_pct() >= SHARE_MIN_PCT
            && self.range_err_pct().is_none_or(|e| e <= RANGE_TOL_PCT)
    }
}

/// The statistics of the points read during `span`.
pub fn phase_stats(span: &PhaseSpan, points: &[Point]) -> PhaseStats {
    let inside: Vec<Point> = points
        .iter()
        .filter(|p| (span.start..span.end).contains(&p.t))
        .copied()
        .collect();
    let err = |p: &Point| pct(p.real.abs_diff(p.sim) as f64);
    let steady = span.steady_from.and_then(|from| {
        let tail = inside.iter().filter(move |p| p.t >= from);
        Some((
            Range::of(tail.clone().map(|p| p.real))?,
            Range::of(tail.map(|p| p.sim))?,
        ))
    });
    PhaseStats {
        name: span.name.clone(),
        samples: inside.len(),
        within: inside.iter().filter(|p| err(p) <= SAMPLE_TOL_PCT).count(),
        max_err_pct: inside.iter().map(err).fold(0.0, f64::max),
        steady,
    }
}
