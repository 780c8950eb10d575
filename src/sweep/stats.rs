//! The statistics of a sweep report: mean with a 95 % Student-t interval
//! over seeds and Welch's test between two parameter values (Holm's
//! correction, shared with `compare`, is `compare::holm`).

use crate::compare::{mean_sd, t_two_sided_p, welch_p};

/// Mean and the half-width of its 95 % interval (0 with one sample).
pub fn mean_ci95(xs: &[f64]) -> (f64, f64) {
    let (m, sd) = mean_sd(xs);
    if xs.len() < 2 {
        return (m, 0.0);
    }
    let n = xs.len() as f64;
    (m, t_quantile_975(n - 1.0) * sd / n.sqrt())
}

/// The t such that P(|T| > t) = 0.05 with `df` degrees of freedom, by
/// bisection on the two-sided p-value (decreasing in t).
fn t_quantile_975(df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, 1000.0);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if t_two_sided_p(mid, df) > 0.05 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// Welch's two-sided p-value.
pub fn p_value(xs: &[f64], ys: &[f64]) -> f64 {
    welch_p(xs, ys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantile_and_interval() {
        // Student's t 97.5 % points: df 1 → 12.706, df 9 → 2.262.
        assert!((t_quantile_975(1.0) - 12.706).abs() < 1e-2);
        assert!((t_quantile_975(9.0) - 2.262).abs() < 1e-3);
        let (m, h) = mean_ci95(&[1.0, 2.0, 3.0]);
        assert_eq!(m, 2.0);
        assert!((h - 4.303 * 1.0 / 3f64.sqrt()).abs() < 1e-2, "{h}");
        assert_eq!(mean_ci95(&[5.0]), (5.0, 0.0));
    }
}
