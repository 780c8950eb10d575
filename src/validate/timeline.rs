//! What the real task did, as recorded by itself on CLOCK_MONOTONIC: when it
//! ran, when it was runnable but another task ran, when the host took its
//! CPU away, and when it slept.

/// What the task was doing during a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// On the CPU, executing the busy loop.
    Run,
    /// Runnable, but switched out for another task (an involuntary switch).
    Preempted,
    /// Not running, not switched out, and not charged by the kernel: the
    /// host ran something else and reported it as steal, which
    /// CONFIG_PARAVIRT_TIME_ACCOUNTING leaves out of rq_clock_task, so PELT
    /// time stands still. (A stall the kernel charges, such as a guest
    /// interrupt without CONFIG_IRQ_TIME_ACCOUNTING, is recorded as Run.)
    Stolen,
    /// Blocked in clock_nanosleep, dequeued.
    Sleep,
}

/// One recorded interval, [start, end) in CLOCK_MONOTONIC ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub start: u64,
    pub end: u64,
    pub kind: Kind,
}

/// One phase of the duty-cycle program, as it actually ran.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseSpan {
    pub name: String,
    pub start: u64,
    pub end: u64,
    /// Samples from here on are the phase's steady state (duty phases only).
    pub steady_from: Option<u64>,
    /// False for the warm-up, which only sets the initial state.
    pub scored: bool,
}

/// The whole recording of one task.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    pub segments: Vec<Segment>,
    pub phases: Vec<PhaseSpan>,
}

impl Timeline {
    /// Append [start, end); empty intervals are dropped and a segment of the
    /// same kind as the last one extends it.
    pub fn push(&mut self, kind: Kind, start: u64, end: u64) {
        if end <= start {
            return;
        }
        if let Some(last) = self.segments.last_mut() {
            if last.kind == kind && last.end == start {
                last.end = end;
                return;
            }
        }
        self.segments.push(Segment { start, end, kind });
    }

    /// The segment containing instant `t`, if any.
    pub fn at(&self, t: u64) -> Option<&Segment> {
        let i = self.segments.partition_point(|s| s.end <= t);
        self.segments.get(i).filter(|s| s.start <= t)
    }

    /// Total time of each kind, in ns: (run, preempted, stolen, sleep).
    pub fn totals(&self) -> [u64; 4] {
        let mut t = [0; 4];
        for s in &self.segments {
            t[s.kind as usize] += s.end - s.start;
        }
        t
    }

    /// The time spent in segments of the given kinds, as a function of time.
    pub fn time_in(&self, kinds: &[Kind]) -> TimeIn {
        let mut spans = Vec::new();
        let mut before = 0;
        for s in self.segments.iter().filter(|s| kinds.contains(&s.kind)) {
            spans.push((s.start, s.end, before));
            before += s.end - s.start;
        }
        TimeIn { spans }
    }
}

/// See [`Timeline::time_in`].
pub struct TimeIn {
    /// (start, end, time in the kinds before start) of each such segment.
    spans: Vec<(u64, u64, u64)>,
}

impl TimeIn {
    /// The time in the kinds before instant `t`.
    pub fn before(&self, t: u64) -> u64 {
        let i = self.spans.partition_point(|&(start, _, _)| start <= t);
        i.checked_sub(1).map_or(0, |j| {
            let (start, end, before) = self.spans[j];
            before + t.min(end) - start
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_merges_and_drops_empty() {
        let mut tl = Timeline::default();
        tl.push(Kind::Run, 0, 10);
        tl.push(Kind::Run, 10, 20);
        tl.push(Kind::Stolen, 20, 25);
        tl.push(Kind::Sleep, 25, 25);
        tl.push(Kind::Run, 25, 40);
        tl.push(Kind::Preempted, 40, 43);
        tl.push(Kind::Sleep, 43, 50);
        assert_eq!(tl.segments.len(), 5);
        assert_eq!(tl.at(22).map(|s| s.kind), Some(Kind::Stolen));
        assert_eq!(tl.at(50), None);
        assert_eq!(tl.totals(), [35, 3, 5, 7]);
        let w = tl.time_in(&[Kind::Preempted, Kind::Stolen]);
        let got: Vec<u64> = [19, 22, 25, 41, 50].map(|t| w.before(t)).to_vec();
        assert_eq!(got, [0, 2, 5, 6, 8]);
    }
}
