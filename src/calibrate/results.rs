//! Measured primitives: samples pooled over runs, with each run's median
//! kept to show the drift between runs.

/// One primitive's measurements.
pub struct Prim {
    pub id: String,
    pub what: String,
    pub unit: &'static str,
    pub samples: Vec<f64>,
    pub run_medians: Vec<f64>,
}

/// Median, 10th and 90th percentile and count of a sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub median: f64,
    pub p10: f64,
    pub p90: f64,
    pub n: usize,
}

/// Percentile `p` (0–100) of sorted data, nearest rank.
fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

pub fn summarize(samples: &[f64]) -> Option<Summary> {
    if samples.is_empty() {
        return None;
    }
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    Some(Summary {
        median: pct(&s, 50.0),
        p10: pct(&s, 10.0),
        p90: pct(&s, 90.0),
        n: s.len(),
    })
}

/// All primitives, in the order first measured.
#[derive(Default)]
pub struct Results {
    pub prims: Vec<Prim>,
    /// Benchmarks that could not run, with the reason.
    pub skipped: Vec<String>,
}

impl Results {
    /// Add one run's samples of a primitive.
    pub fn add(&mut self, id: &str, what: &str, unit: &'static str, samples: Vec<f64>) {
        let Some(run) = summarize(&samples) else {
            return;
        };
        let i = match self.prims.iter().position(|p| p.id == id) {
            Some(i) => i,
            None => {
                self.prims.push(Prim {
                    id: id.to_string(),
                    what: what.to_string(),
                    unit,
                    samples: Vec::new(),
                    run_medians: Vec::new(),
                });
                self.prims.len() - 1
            }
        };
        self.prims[i].samples.extend(samples);
        self.prims[i].run_medians.push(run.median);
    }

    /// Record a benchmark that failed, once per distinct reason.
    pub fn skip(&mut self, what: &str, why: &str) {
        let line = format!("{what}: {why}");
        if !self.skipped.contains(&line) {
            self.skipped.push(line);
        }
    }

    pub fn get(&self, id: &str) -> Option<&Prim> {
        self.prims.iter().find(|p| p.id == id)
    }

    pub fn summary(&self, id: &str) -> Option<Summary> {
        self.get(id).and_then(|p| summarize(&p.samples))
    }

    /// The median of a primitive over all its samples.
    pub fn median(&self, id: &str) -> Option<f64> {
        self.summary(id).map(|s| s.median)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_pooling() {
        let s = summarize(&(1..=11).rev().map(f64::from).collect::<Vec<_>>()).unwrap();
        assert_eq!((s.median, s.p10, s.p90, s.n), (6.0, 2.0, 10.0, 11));
        assert!(summarize(&[]).is_none());
        let mut r = Results::default();
        r.add("x", "x", "ns", vec![1.0, 2.0, 3.0]);
        r.add("x", "x", "ns", vec![10.0, 11.0, 12.0]);
        r.add("empty", "e", "ns", vec![]);
        let p = r.get("x").unwrap();
        assert_eq!(p.run_medians, vec![2.0, 11.0]);
        assert_eq!(r.summary("x").unwrap().n, 6);
        assert!(r.get("empty").is_none());
        r.skip("a", "b");
        r.skip("a", "b");
        assert_eq!(r.skipped.len(), 1);
    }
}
