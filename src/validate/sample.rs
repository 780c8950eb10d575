//! Samples of the real signal: a thread on another CPU reads the task's sched
//! file every millisecond, and each sample is placed on the task clock.

use super::duty::now_ns;
use super::procfs::{parse, SchedFields};
use super::timeline::{Kind, Timeline};
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

/// Read `path` every INTERVAL_NS until `done` is set or the file goes away.
pub fn collect(path: &Path, done: &AtomicBool) -> Result<Vec<Sample>, String> {
    let name = path.display().to_string();
    let mut out = Vec::new();
    let mut next = now_ns();
    while !done.load(Ordering::Acquire) {
        let t = now_ns();
        let Ok(text) = std::fs::read_to_string(path) else {
            break;
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

/// Where each sample's `last_update_time` (the kernel's PELT clock) falls on
/// the task clock. A sample read while the task sleeps shows the update made
/// at its dequeue, which the task recorded as the start of that sleep: that
/// pair gives the offset between the two clocks. Each sample uses the latest
/// offset measured at or before it (the first one before any); an instant
/// is never later than the read itself. Also returns the offsets' drift
/// (last minus first, ns), which measures time the task clock mis-counts.
pub fn align(tl: &Timeline, samples: &[Sample]) -> Result<(Vec<u64>, i64), String> {
    let clock = tl.task_clock();
    let offsets: Vec<Option<i64>> = samples
        .iter()
        .map(|s| match tl.at(s.t) {
            Some(seg) if seg.kind == Kind::Sleep && s.t >= seg.start + 50_000 => {
                Some(s.f.last_update_time as i64 - clock.at(seg.start) as i64)
            }
            _ => None,
        })
        .collect();
    let first = offsets.iter().flatten().next().copied().ok_or(
        "no sample was read while the task slept: cannot align the kernel's PELT clock",
    )?;
    let last = offsets.iter().flatten().last().copied().unwrap_or(first);
    let mut off = first;
    let at = samples
        .iter()
        .zip(&offsets)
        .map(|(s, o)| {
            off = o.unwrap_or(off);
            let q = (s.f.last_update_time as i64 - off).max(0) as u64;
            q.min(clock.at(s.t))
        })
        .collect();
    Ok((at, last - first))
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
    fn align_uses_sleep_samples_and_never_passes_the_read() {
        let mut tl = Timeline::default();
        tl.push(Kind::Run, 0, 1_000_000);
        tl.push(Kind::Stolen, 1_000_000, 1_100_000);
        tl.push(Kind::Run, 1_100_000, 2_000_000);
        tl.push(Kind::Sleep, 2_000_000, 4_000_000);
        tl.push(Kind::Run, 4_000_000, 5_000_000);
        // kernel clock = task clock + 7 ms; the sleep starts at task 1.9 ms
        let k = 7_000_000;
        let s = [
            sample(500_000, k + 400_000),
            sample(2_500_000, k + 1_900_000),
            sample(4_500_000, k + 4_600_000), // later than the read
        ];
        let (at, drift) = align(&tl, &s).unwrap();
        assert_eq!(at, vec![400_000, 1_900_000, 4_400_000]);
        assert_eq!(drift, 0);
        assert!(align(&tl, &s[..1]).is_err());
    }
}
