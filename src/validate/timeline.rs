//! What the real task did, as recorded by itself on CLOCK_MONOTONIC: when it
//! ran, when it was runnable but another task ran, when it stalled without
//! a switch, and when it slept.

/// What the task was doing during a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// On the CPU, executing the busy loop.
    Run,
    /// Runnable, but switched out for another task (an involuntary switch).
    Preempted,
    /// The loop stalled without a context switch: a long guest interrupt or
    /// the host running something else (steal). Without
    /// CONFIG_IRQ_TIME_ACCOUNTING the kernel counts the first as the task's
    /// running time, and the host reports only part of the second as steal
    /// (see `KernelClock`), so a stall counts as running.
    Stalled,
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

    /// Total time of each kind, in ns: (run, preempted, stalled, sleep).
    pub fn totals(&self) -> [u64; 4] {
        let mut t = [0; 4];
        for s in &self.segments {
            t[s.kind as usize] += s.end - s.start;
        }
        t
    }

    /// Move every run's edges out by `edge_ns` into a neighbouring sleep or
    /// preemption (at most half of it): CPU time the kernel counts on both
    /// sides of what the task can time itself (the syscall into sleep, the
    /// return from the switch back to it).
    pub fn widen_runs(&mut self, edge_ns: u64) {
        let segs = &mut self.segments;
        let room = |s: &Segment| match s.kind {
            Kind::Sleep | Kind::Preempted => edge_ns.min((s.end - s.start) / 2),
            Kind::Run | Kind::Stalled => 0,
        };
        for i in 0..segs.len() {
            if segs[i].kind != Kind::Run {
                continue;
            }
            if let Some(p) = i.checked_sub(1) {
                let d = room(&segs[p]);
                segs[p].end -= d;
                segs[i].start -= d;
            }
            if let Some(d) = segs.get(i + 1).map(room) {
                segs[i].end += d;
                segs[i + 1].start += d;
            }
        }
    }

    /// The number of runs that start in [from, to).
    pub fn runs_in(&self, from: u64, to: u64) -> u64 {
        let n = self.segments.iter().filter(|s| s.kind == Kind::Run);
        n.filter(|s| (from..to).contains(&s.start)).count() as u64
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
        tl.push(Kind::Stalled, 20, 25);
        tl.push(Kind::Sleep, 25, 25);
        tl.push(Kind::Run, 25, 40);
        tl.push(Kind::Preempted, 40, 43);
        tl.push(Kind::Sleep, 43, 50);
        assert_eq!(tl.segments.len(), 5);
        assert_eq!(tl.at(22).map(|s| s.kind), Some(Kind::Stalled));
        assert_eq!(tl.at(50), None);
        assert_eq!(tl.totals(), [35, 3, 5, 7]);
        let w = tl.time_in(&[Kind::Preempted, Kind::Stalled]);
        let got: Vec<u64> = [19, 22, 25, 41, 50].map(|t| w.before(t)).to_vec();
        assert_eq!(got, [0, 2, 5, 6, 8]);
        assert_eq!(tl.runs_in(0, 25), 1);
    }

    #[test]
    fn widen_runs_takes_from_sleeps_and_preemptions_only() {
        let mut tl = Timeline::default();
        tl.push(Kind::Sleep, 0, 10);
        tl.push(Kind::Run, 10, 20);
        tl.push(Kind::Stalled, 20, 25);
        tl.push(Kind::Run, 25, 40);
        tl.push(Kind::Preempted, 40, 43);
        tl.push(Kind::Run, 43, 50);
        tl.push(Kind::Sleep, 50, 60);
        tl.widen_runs(2);
        let edges: Vec<(u64, u64)> = tl.segments.iter().map(|s| (s.start, s.end)).collect();
        let want = [
            (0, 8),
            (8, 20),
            (20, 25),
            (25, 41),
            (41, 42),
            (42, 52),
            (52, 60),
        ];
        assert_eq!(edges, want);
    }
}
