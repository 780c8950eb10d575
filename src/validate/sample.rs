//! Samples of the real signal: a thread on another CPU reads the task's sched
//! file every millisecond, and each sample is placed on the task clock.

use super::duty::now_ns;
use super::procfs::{parse, SchedFields};
use super::timeline::{Kind, TimeIn, Timeline};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Sampling interval.
const INTERVAL_NS: u64 = 1_000_000;

/// One reading: `t` is CLOCK_MONOTONIC when the read started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub t: u64,
    pub f: SchedFields,
}

/// Read `path` every INTERVAL_NS until `done` is set or the file goes away
/// (an error if it was never there).
pub fn collect(path: &Path, done: &AtomicBool) -> Result<Vec<Sample>, String> {
    let name = path.display().to_string();
    let mut out = Vec::new();
    let mut next = now_ns();
    while !done.load(Ordering::Acquire) {
        let t = now_ns();
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            // The thread has exited.
            Err(_) if !out.is_empty() => break,
            Err(e) => return Err(format!("{name}: {e}")),
        };
        out.push(Sample {
            t,
            f: parse(&name, &text)?,
        });
        next += INTERVAL_NS;
        let wait = next.saturating_sub(now_ns());
        std::thread::sleep(std::time::Duration::from_nanos(wait));
    }
    Ok(out)
}

/// The kernel's PELT clock as a function of CLOCK_MONOTONIC. A sample read
/// while the task sleeps shows the update made at its dequeue, which the task
/// recorded as the start of that sleep: each such pair is an anchor. With
/// CONFIG_PARAVIRT_TIME_ACCOUNTING the kernel leaves the steal the host
/// reports out of rq_clock_task, and so out of PELT time. Between two anchors
/// the time it left out is taken from the task's stolen time first, then
/// from when it was switched out (steal then hits the other task), then from
/// its sleeps (a halted vCPU waiting for the host to deliver the wake-up),
/// and only what is still left evenly from everything.
pub struct KernelClock {
    /// (monotonic, kernel clock) at each anchor, increasing.
    anchors: Vec<(u64, u64)>,
    /// Where lost time is taken from, in order; the last holds every kind.
    buckets: [TimeIn; 4],
}

impl KernelClock {
    /// Anchor the recording `tl` to the kernel clock seen in `samples`.
    pub fn new(tl: &Timeline, samples: &[Sample]) -> Result<Self, String> {
        let mut anchors: Vec<(u64, u64)> = Vec::new();
        for s in samples {
            let Some(seg) = tl.at(s.t) else { continue };
            if seg.kind != Kind::Sleep || s.t < seg.start + 50_000 {
                continue;
            }
            let a = (seg.start, s.f.last_update_time);
            if anchors.last().is_none_or(|l| a.0 > l.0 && a.1 > l.1) {
                anchors.push(a);
            }
        }
        if anchors.is_empty() {
            return Err("no sample was read while the task slept: cannot align \
                        the kernel's PELT clock"
                .into());
        }
        Ok(KernelClock {
            anchors,
            buckets: [
                tl.time_in(&[Kind::Stolen]),
                tl.time_in(&[Kind::Preempted]),
                tl.time_in(&[Kind::Sleep]),
                tl.time_in(&[Kind::Run, Kind::Preempted, Kind::Stolen, Kind::Sleep]),
            ],
        })
    }

    /// The kernel clock at monotonic instant `x`.
    pub fn at(&self, x: u64) -> u64 {
        let i = self.anchors.partition_point(|a| a.0 <= x);
        let ((x0, k0), next) = match i {
            0 => (self.anchors[0], None),
            _ => (self.anchors[i - 1], self.anchors.get(i)),
        };
        let Some(&(x1, k1)) = next else {
            return (k0 as i64 + (x as i64 - x0 as i64)).max(0) as u64;
        };
        let mut lost = (x1 - x0) as f64 - (k1 - k0) as f64;
        let mut k = (x - x0) as f64;
        for (i, b) in self.buckets.iter().enumerate() {
            let total = (b.before(x1) - b.before(x0)) as f64;
            let last = i == self.buckets.len() - 1;
            let take = if last { lost } else { lost.clamp(0.0, total) };
            if total > 0.0 {
                k -= take / total * (b.before(x) - b.before(x0)) as f64;
                lost -= take;
            }
        }
        k0 + k.round().max(0.0) as u64
    }

    /// PELT time the kernel left out between the first and last anchors,
    /// against CLOCK_MONOTONIC (ns): the steal it was told about.
    pub fn unseen_ns(&self) -> i64 {
        let (a, b) = (self.anchors[0], self.anchors[self.anchors.len() - 1]);
        (b.0 - a.0) as i64 - (b.1 - a.1) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t: u64, lut: u64) -> Sample {
        let f = SchedFields {
            last_update_time: lut,
            ..Default::default()
        };
        Sample { t, f }
    }

    #[test]
    fn kernel_clock_takes_lost_time_from_waiting_first() {
        let ms = 1_000_000;
        let mut tl = Timeline::default();
        tl.push(Kind::Run, 0, 2 * ms);
        tl.push(Kind::Sleep, 2 * ms, 4 * ms);
        tl.push(Kind::Run, 4 * ms, 5 * ms);
        tl.push(Kind::Stolen, 5 * ms, 5 * ms + ms / 2);
        tl.push(Kind::Run, 5 * ms + ms / 2, 6 * ms);
        tl.push(Kind::Sleep, 6 * ms, 8 * ms);
        tl.push(Kind::Run, 8 * ms, 10 * ms);
        tl.push(Kind::Sleep, 10 * ms, 12 * ms);
        // kernel = monotonic + 5.1 ms at the first dequeue; it leaves out
        // 0.4 ms of the 0.5 ms stolen, then 0.2 ms with no steal seen
        let k = 5_100_000;
        let s = [
            sample(500_000, k + 400_000),
            sample(2_500_000, k + 2_000_000),
            sample(2_600_000, k + 2_000_000),
            sample(7_000_000, k + 5_600_000),
            sample(11_000_000, k + 9_400_000),
        ];
        let c = KernelClock::new(&tl, &s).unwrap();
        assert_eq!(c.anchors.len(), 3);
        let at = |t| c.at(t) - k;
        assert_eq!(at(2 * ms), 2_000_000);
        assert_eq!(at(5 * ms), 5_000_000); // nothing lost while running
        assert_eq!(at(5_250_000), 5_050_000); // 80 % of the stall
        assert_eq!(at(6 * ms), 5_600_000);
        assert_eq!(at(7 * ms), 6_500_000); // from the sleep when nobody waited
        assert_eq!(at(8 * ms), 7_400_000);
        assert_eq!(at(10 * ms), 9_400_000);
        assert_eq!(at(13 * ms), 12_400_000);
        assert_eq!(at(0), 0);
        assert_eq!(c.unseen_ns(), 600_000);
        assert!(KernelClock::new(&tl, &s[..1]).is_err());
    }
}
