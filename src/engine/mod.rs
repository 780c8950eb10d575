//! The discrete-event engine: simulated time, a deterministic event queue
//! ordered by (time, sequence number), and seeded random streams.
//!
//! Stale events are never searched for: each event carries the generation of
//! the object it targets, and the handler drops it when the generation moved on.

mod rng;

pub use rng::Rng;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Simulated time in nanoseconds.
pub type Time = u64;

pub const NSEC_PER_USEC: u64 = 1_000;
pub const NSEC_PER_MSEC: u64 = 1_000_000;
pub const NSEC_PER_SEC: u64 = 1_000_000_000;

/// What happens when an event fires. `idx` names a CPU or a task, `gen` is
/// that object's generation when the event was queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventKind {
    /// The current activity of a CPU (a run segment or a context switch) ends.
    CpuDone,
    /// The scheduler tick of a CPU.
    Tick,
    /// A task's hrtimer (sleep) expires.
    Timer,
    /// A reschedule IPI (or the end of an idle exit) reaches a CPU.
    Resched,
    /// A nohz idle-balance kick reaches an idle CPU.
    IdleBalance,
    /// The end of the simulation window.
    End,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Event {
    pub time: Time,
    seq: u64,
    pub kind: EventKind,
    pub idx: u32,
    pub gen: u32,
}

/// Binary heap of events keyed by (time, seq); `seq` makes equal-time events
/// fire in the order they were queued, so runs are reproducible.
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<Event>>,
    seq: u64,
    pub popped: u64,
}

impl EventQueue {
    pub fn push(&mut self, time: Time, kind: EventKind, idx: usize, gen: u32) {
        self.seq += 1;
        self.heap.push(Reverse(Event {
            time,
            seq: self.seq,
            kind,
            idx: idx as u32,
            gen,
        }));
    }

    pub fn pop(&mut self) -> Option<Event> {
        let ev = self.heap.pop().map(|Reverse(e)| e);
        if ev.is_some() {
            self.popped += 1;
        }
        ev
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_pop_in_queue_order() {
        let mut q = EventQueue::default();
        q.push(10, EventKind::Tick, 3, 0);
        q.push(5, EventKind::Timer, 1, 0);
        q.push(10, EventKind::CpuDone, 2, 0);
        q.push(10, EventKind::Tick, 1, 0);
        let order: Vec<_> = std::iter::from_fn(|| q.pop())
            .map(|e| (e.time, e.idx))
            .collect();
        assert_eq!(order, vec![(5, 1), (10, 3), (10, 2), (10, 1)]);
        assert_eq!(q.popped, 4);
    }
}
