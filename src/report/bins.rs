//! Per-CPU signals averaged over time bins, for the heatmaps and the
//! timeline's overview: util_avg, nr_running and busy time, each weighted
//! by how long it held. The run's length is not known in advance, so the
//! bins start narrow and double in width (merging pairs) whenever the run
//! outgrows `MAX_BINS`: memory and page size stay bounded at any length.

use serde_json::{json, Value};

/// Never more than this many bins per CPU (even, so pairs merge).
const MAX_BINS: usize = 1024;
/// The first bin width (ns).
const FIRST_WIDTH: u64 = 1024;

/// One CPU: its current values since `last`, and the integrals per bin.
#[derive(Clone, Default)]
struct Cpu {
    last: u64,
    util: u64,
    nr: u64,
    busy: bool,
    /// Per bin: ∫util dt, ∫nr_running dt, busy ns.
    acc: Vec<[f64; 3]>,
}

pub struct Bins {
    /// Where bin 0 starts and where binning stops (the page's window).
    start: u64,
    stop: u64,
    width: u64,
    cpus: Vec<Cpu>,
}

impl Bins {
    pub fn new(ncpus: usize, (start, stop): (u64, u64)) -> Self {
        let cpu = Cpu {
            last: start,
            ..Cpu::default()
        };
        Bins {
            start,
            stop,
            width: FIRST_WIDTH,
            cpus: vec![cpu; ncpus],
        }
    }

    /// `cpu`'s values change at `now`.
    pub fn set(&mut self, cpu: usize, now: u64, util: u64, nr: u64, busy: bool) {
        self.advance(cpu, now);
        let c = &mut self.cpus[cpu];
        (c.util, c.nr, c.busy) = (util, nr, busy);
    }

    /// Account every CPU up to the end of the run.
    pub fn finish(&mut self, now: u64) {
        for cpu in 0..self.cpus.len() {
            self.advance(cpu, now);
        }
    }

    /// Add `cpu`'s current values from its `last` update to `now`.
    fn advance(&mut self, cpu: usize, now: u64) {
        let now = now.min(self.stop);
        let mut from = self.cpus[cpu].last.max(self.start);
        while from < now {
            let mut i = ((from - self.start) / self.width) as usize;
            while i >= MAX_BINS {
                self.widen();
                i = ((from - self.start) / self.width) as usize;
            }
            let to = now.min(self.start + (i as u64 + 1) * self.width);
            let c = &mut self.cpus[cpu];
            if c.acc.len() <= i {
                c.acc.resize(i + 1, [0.0; 3]);
            }
            let dt = (to - from) as f64;
            let b = &mut c.acc[i];
            b[0] += c.util as f64 * dt;
            b[1] += c.nr as f64 * dt;
            b[2] += if c.busy { dt } else { 0.0 };
            from = to;
        }
        let c = &mut self.cpus[cpu];
        c.last = c.last.max(now);
    }

    /// Double the bin width: merge each pair of bins on every CPU.
    fn widen(&mut self) {
        self.width *= 2;
        for c in &mut self.cpus {
            c.acc = c
                .acc
                .chunks(2)
                .map(|p| {
                    let mut m = p[0];
                    if let Some(q) = p.get(1) {
                        (0..3).for_each(|j| m[j] += q[j]);
                    }
                    m
                })
                .collect();
        }
    }

    /// `{start, width, util, nr, busy}`: per CPU the averages per bin up to
    /// `end`: util_avg, nr_running × 100 and busy % (integers, for size).
    pub fn to_json(&self, end: u64) -> Value {
        let n = end.saturating_sub(self.start).div_ceil(self.width) as usize;
        let span = |i: usize| {
            let b0 = self.start + i as u64 * self.width;
            (end.min(b0 + self.width) - b0).max(1) as f64
        };
        let series = |j: usize, scale: f64| -> Vec<Vec<u64>> {
            self.cpus
                .iter()
                .map(|c| {
                    (0..n)
                        .map(|i| {
                            let v = c.acc.get(i).map_or(0.0, |b| b[j]);
                            (v * scale / span(i)).round() as u64
                        })
                        .collect()
                })
                .collect()
        };
        json!({
            "start": self.start,
            "width": self.width,
            "util": series(0, 1.0),
            "nr": series(1, 100.0),
            "busy": series(2, 100.0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_average_over_time_and_widen() {
        let mut b = Bins::new(1, (0, u64::MAX));
        b.set(0, 0, 100, 1, true);
        b.set(0, 1024, 300, 3, false);
        b.finish(2048);
        let v = b.to_json(2048);
        assert_eq!(v["util"][0], json!([100, 300]));
        assert_eq!(v["busy"][0], json!([100, 0]));
        // A run far longer than MAX_BINS first bins: wider bins, same mean.
        b.finish(FIRST_WIDTH * MAX_BINS as u64 * 8);
        let v = b.to_json(FIRST_WIDTH * MAX_BINS as u64 * 8);
        assert!(v["util"][0].as_array().unwrap().len() <= MAX_BINS);
        assert_eq!(v["width"], FIRST_WIDTH * 8);
        // (100 × 1024 + 300 × 7168) / 8192, and 1024 of 8192 ns busy.
        assert_eq!(v["util"][0][0], 275);
        assert_eq!(v["busy"][0][0], 13);
    }
}
