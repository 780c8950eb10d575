//! The discrete-event engine: simulated time, a deterministic event queue
//! ordered by (time, event source), and seeded random streams.
//!
//! Layer: bottom, beside `machine` and `util`; imports nothing of the crate.
//!
//! Every event source has one slot: each CPU's activity end, tick, resched
//! and idle-balance kick, each task's timer, and the end of the run. A slot
//! holds at most one pending event; arming it again replaces the pending
//! event (its position in an indexed heap is updated), which is how stale
//! events are cancelled. Benchmarked against a binary heap of all events
//! with per-object generation counters: the heap filled with stale entries
//! and its pops took half of the run time; the indexed heap stays as small
//! as the number of live sources.
//!
//! **Order-free rule** (issue 33, part 1). Nothing a run computes may
//! depend on the order in which the engine happened to handle or arm
//! events beyond their simulated times, so that a later change to how
//! events are batched (folding a task's consecutive operations into one
//! event) can change neither a random draw nor the order of simultaneous
//! events:
//! - events of the same instant fire in the order of what they are, not of
//!   when they were armed: the end of the run first, then each CPU's events
//!   by CPU number and, within a CPU, in `CPU_KINDS` order, then the
//!   timers by index: the tasks' by pid, then the deadline, bandwidth and
//!   slack timers (kernel/deadline.rs, bandwidth.rs: their index bases).
//!   The slot number is the tie-break;
//! - every random draw comes from a stream owned by one task or one CPU
//!   (task programs: `Rng` per task; sched_rng: `Rng` per CPU; the noise
//!   model: counter-based `Stream`s per task and per CPU, kernel/noise.rs),
//!   so a draw's value depends only on how many draws its owner made
//!   before, never on the draws of others in between.

mod heap;
mod rng;

use heap::{Entry, Heap};

pub use rng::{Rng, Stream};

/// Simulated time in nanoseconds.
pub type Time = u64;

pub const NSEC_PER_SEC: u64 = 1_000_000_000;

/// What happens when an event fires; `idx` names a CPU or a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// The current activity of a CPU (a run segment or a context switch) ends.
    CpuDone,
    /// The scheduler tick of a CPU.
    Tick,
    /// A reschedule IPI (or the end of an idle exit) reaches a CPU.
    Resched,
    /// A nohz idle-balance kick reaches an idle CPU.
    IdleBalance,
    /// A task's hrtimer (sleep) expires.
    Timer,
    /// A device interrupt (or the next step of its handler) on a CPU.
    Irq,
    /// A background interrupt of the noise model on a CPU.
    NoiseIrq,
    /// The end of the simulation window.
    End,
}

/// Per-CPU event kinds, in slot order (see `slot`).
const CPU_KINDS: [EventKind; PER_CPU] = [
    EventKind::CpuDone,
    EventKind::Tick,
    EventKind::Resched,
    EventKind::IdleBalance,
    EventKind::Irq,
    EventKind::NoiseIrq,
];

/// Event slots per CPU.
pub const PER_CPU: usize = 6;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub time: Time,
    pub kind: EventKind,
    pub idx: usize,
}

/// Bits of an entry's key that hold the slot id.
const SLOT_BITS: u32 = 20;
/// The slot of the end of the run: the first, so that the end comes before
/// any other event of its instant (the window is [0, end)).
const END_SLOT: usize = 0;
/// The most event sources (6 per CPU, 1 per task, the end) a run may have.
pub const MAX_SLOTS: usize = 1 << SLOT_BITS;

/// The pending events, popped in (time, slot) order from two indexed heaps:
/// `near` holds each CPU's activity end (re-armed at almost every event,
/// microseconds ahead), `far` the rest (ticks, timers, interrupts, the
/// end), which mostly lie further ahead and change seldom. A re-armed
/// segment end sifts through a heap of the busy CPUs' ends only, not
/// through their ticks and timers as well.
pub struct EventQueue {
    ncpus: usize,
    near: Heap,
    far: Heap,
    pub popped: u64,
}

impl EventQueue {
    pub fn new(ncpus: usize) -> Self {
        EventQueue {
            ncpus,
            near: Heap::default(),
            far: Heap::default(),
            popped: 0,
        }
    }

    /// The slot of (kind, idx), which is also the tie-break between
    /// events of one instant (see the order-free rule above): the end, then
    /// the CPUs' events (CPU-major, `CPU_KINDS` order), then the timers.
    /// The slot of (kind, idx): of two events of one instant, the one of
    /// the lower slot fires first.
    pub fn slot(&self, kind: EventKind, idx: usize) -> usize {
        let cpu = 1 + PER_CPU * idx;
        match kind {
            EventKind::End => END_SLOT,
            EventKind::Timer => 1 + PER_CPU * self.ncpus + idx,
            EventKind::CpuDone => cpu,
            EventKind::Tick => cpu + 1,
            EventKind::Resched => cpu + 2,
            EventKind::IdleBalance => cpu + 3,
            EventKind::Irq => cpu + 4,
            EventKind::NoiseIrq => cpu + 5,
        }
    }

    fn decode(&self, slot: usize) -> (EventKind, usize) {
        let base = 1 + PER_CPU * self.ncpus;
        if slot == END_SLOT {
            (EventKind::End, 0)
        } else if slot < base {
            (CPU_KINDS[(slot - 1) % PER_CPU], (slot - 1) / PER_CPU)
        } else {
            (EventKind::Timer, slot - base)
        }
    }

    /// The heap that holds `kind`'s events.
    fn heap(&mut self, kind: EventKind) -> &mut Heap {
        match kind {
            EventKind::CpuDone => &mut self.near,
            _ => &mut self.far,
        }
    }

    fn pending(&self, kind: EventKind, idx: usize) -> Option<Entry> {
        let slot = self.slot(kind, idx);
        match kind {
            EventKind::CpuDone => self.near.pending(slot),
            _ => self.far.pending(slot),
        }
    }

    /// Arm the slot of (kind, idx) to fire at `time`, replacing any event
    /// it already holds. Where it goes among the events of the same instant
    /// depends on (kind, idx) only, not on when it was armed.
    pub fn push(&mut self, time: Time, kind: EventKind, idx: usize) {
        let slot = self.slot(kind, idx);
        assert!(slot < MAX_SLOTS, "more than {MAX_SLOTS} event sources");
        let e = Entry {
            key: (time as u128) << 64 | slot as u128,
        };
        self.heap(kind).push(e);
    }

    /// Arm (kind, idx) at `time` unless it already fires no later: two
    /// interrupts on their way to one CPU are served by the first.
    pub fn push_earliest(&mut self, time: Time, kind: EventKind, idx: usize) {
        match self.pending(kind, idx) {
            Some(e) if e.time() <= time => {}
            _ => self.push(time, kind, idx),
        }
    }

    /// Whether (kind, idx) has a pending event.
    pub fn is_pending(&self, kind: EventKind, idx: usize) -> bool {
        self.pending(kind, idx).is_some()
    }

    /// When (kind, idx) fires, if it is pending.
    pub fn pending_time(&self, kind: EventKind, idx: usize) -> Option<Time> {
        self.pending(kind, idx).map(|e| e.time())
    }

    /// Drop the pending event of (kind, idx), if any.
    pub fn cancel(&mut self, kind: EventKind, idx: usize) {
        let slot = self.slot(kind, idx);
        self.heap(kind).cancel(slot);
    }

    pub fn pop(&mut self) -> Option<Event> {
        self.near.drop_taken();
        self.far.drop_taken();
        let (e, from) = match (self.near.first(), self.far.first()) {
            (Some(n), Some(f)) if f.key < n.key => (f, &mut self.far),
            (Some(n), _) => (n, &mut self.near),
            (None, f) => (f?, &mut self.far),
        };
        from.take_first();
        self.popped += 1;
        let (kind, idx) = self.decode(e.slot());
        Some(Event {
            time: e.time(),
            kind,
            idx,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether every pending event is of `kind` (true when none is).
    /// Costs O(pending events): call it only when the queue is short.
    pub fn only_pending(&self, kind: EventKind) -> bool {
        let all = self.near.entries().iter().chain(self.far.entries());
        all.copied().all(|e| self.decode(e.slot()).0 == kind)
    }

    /// The number of pending events.
    pub fn len(&self) -> usize {
        self.near.entries().len() + self.far.entries().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_pop_in_slot_order_and_rearming_replaces() {
        let mut q = EventQueue::new(4);
        q.push(10, EventKind::Tick, 3);
        q.push(5, EventKind::Timer, 1);
        q.push(10, EventKind::CpuDone, 2);
        q.push(10, EventKind::Tick, 1);
        q.push(7, EventKind::CpuDone, 0);
        q.push(12, EventKind::CpuDone, 0); // replaces the 7
        q.cancel(EventKind::Tick, 1);
        assert!(q.is_pending(EventKind::Tick, 3) && !q.is_pending(EventKind::Tick, 1));
        assert_eq!(q.pending_time(EventKind::CpuDone, 0), Some(12));
        assert_eq!(q.pending_time(EventKind::Tick, 1), None);
        let order: Vec<_> = std::iter::from_fn(|| q.pop())
            .map(|e| (e.time, e.kind, e.idx))
            .collect();
        assert_eq!(
            order,
            vec![
                (5, EventKind::Timer, 1),
                (10, EventKind::CpuDone, 2),
                (10, EventKind::Tick, 3),
                (12, EventKind::CpuDone, 0),
            ]
        );
        assert_eq!(q.popped, 4);
        assert!(q.is_empty());
    }

    #[test]
    fn simultaneous_events_pop_in_the_same_order_however_armed() {
        // Every kind on 3 CPUs, 2 timers and the end at one instant, armed
        // in 20 shuffled orders (and some re-armed from elsewhere): one pop
        // order, the end first, then CPU by CPU, then the timers.
        let mut sources: Vec<(EventKind, usize)> = (0..3)
            .flat_map(|c| CPU_KINDS.iter().map(move |&k| (k, c)))
            .chain([(EventKind::Timer, 1), (EventKind::Timer, 0)])
            .chain([(EventKind::End, 0)])
            .collect();
        let mut r = Rng::new(2, 0);
        let mut orders = Vec::new();
        for _ in 0..20 {
            for i in (1..sources.len()).rev() {
                sources.swap(i, r.range(0, i as u64) as usize);
            }
            let mut q = EventQueue::new(3);
            for &(k, i) in &sources {
                q.push(r.range(0, 20), k, i);
            }
            for &(k, i) in &sources {
                q.push(100, k, i);
            }
            let order: Vec<_> = std::iter::from_fn(|| q.pop())
                .map(|e| (e.kind, e.idx))
                .collect();
            orders.push(order);
        }
        assert!(orders.windows(2).all(|w| w[0] == w[1]));
        let o = &orders[0];
        assert_eq!(o.len(), sources.len());
        assert_eq!(o[0], (EventKind::End, 0));
        assert_eq!(o[1], (EventKind::CpuDone, 0));
        assert_eq!(o[PER_CPU + 1], (EventKind::CpuDone, 1));
        assert_eq!(
            o[o.len() - 2..],
            [(EventKind::Timer, 0), (EventKind::Timer, 1)]
        );
    }

    #[test]
    fn heap_order_survives_random_rearming() {
        let mut q = EventQueue::new(8);
        let mut r = Rng::new(5, 0);
        let mut want = std::collections::BTreeMap::new();
        for _ in 0..2000 {
            let cpu = r.range(0, 7) as usize;
            let t = r.range(0, 1000);
            if r.range(0, 4) == 0 {
                q.cancel(EventKind::Resched, cpu);
                want.remove(&cpu);
            } else {
                q.push(t, EventKind::Resched, cpu);
                want.insert(cpu, t);
            }
        }
        let mut got: Vec<(u64, usize)> = std::iter::from_fn(|| q.pop())
            .map(|e| (e.time, e.idx))
            .collect();
        let mut exp: Vec<(u64, usize)> = want.into_iter().map(|(c, t)| (t, c)).collect();
        assert!(got.windows(2).all(|w| w[0].0 <= w[1].0));
        got.sort();
        exp.sort();
        assert_eq!(got, exp);
    }

    #[test]
    fn pop_order_holds_for_events_far_apart_and_in_the_past() {
        // Against a model, as below, with 40 sources armed from the past
        // to 12 ms ahead, popped, cancelled and re-armed at random; half
        // are segment ends (the near heap), half timers (the far one).
        let mut q = EventQueue::new(40);
        let kind = |task: usize| {
            if task.is_multiple_of(2) {
                EventKind::Timer
            } else {
                EventKind::CpuDone
            }
        };
        let mut r = Rng::new(3, 0);
        let mut want = std::collections::BTreeMap::new();
        let mut now = 0u64;
        for _ in 0..40_000 {
            let task = r.range(0, 39) as usize;
            match r.range(0, 6) {
                0 => {
                    q.cancel(kind(task), task);
                    want.remove(&task);
                }
                1..=3 => {
                    let ahead = match r.range(0, 2) {
                        0 => r.range(0, 2_000),
                        1 => r.range(0, 300_000),
                        _ => r.range(0, 12_000_000),
                    };
                    let t = (now + ahead).saturating_sub(r.range(0, 1) * 300);
                    q.push(t, kind(task), task);
                    want.insert(task, (t, q.slot(kind(task), task)));
                }
                _ => {
                    let first = want.iter().min_by_key(|&(_, &k)| k).map(|(&c, &k)| (c, k));
                    let ev = q.pop();
                    assert!(ev.is_none_or(|e| e.kind == kind(e.idx)));
                    let got = ev.map(|e| (e.idx, e.time));
                    assert_eq!(got, first.map(|(c, (t, _))| (c, t)));
                    if let Some((c, (t, _))) = first {
                        want.remove(&c);
                        now = now.max(t);
                    }
                }
            }
            assert_eq!(q.len(), want.len());
        }
    }

    #[test]
    fn a_popped_event_is_gone_until_rearmed() {
        // Against a model: the BTreeMap of pending (time, cpu) per slot,
        // with pops, re-arms of the popped slot, cancels and other pushes
        // interleaved as a run does them.
        let mut q = EventQueue::new(8);
        let mut r = Rng::new(9, 0);
        let mut want = std::collections::BTreeMap::new();
        let mut now = 0;
        for _ in 0..5000 {
            let cpu = r.range(0, 7) as usize;
            match r.range(0, 5) {
                0 => {
                    q.cancel(EventKind::CpuDone, cpu);
                    want.remove(&cpu);
                }
                1 | 2 => {
                    // Now and then in the past: it must go before the taken root.
                    let t = (now + r.range(0, 50)).saturating_sub(5);
                    q.push(t, EventKind::CpuDone, cpu);
                    want.insert(cpu, (t, cpu));
                }
                _ => {
                    let first = want.iter().min_by_key(|&(_, &k)| k).map(|(&c, &k)| (c, k));
                    let got = q.pop().map(|e| (e.idx, e.time));
                    assert_eq!(got, first.map(|(c, (t, _))| (c, t)));
                    if let Some((c, (t, _))) = first {
                        want.remove(&c);
                        now = t;
                        assert!(!q.is_pending(EventKind::CpuDone, c));
                        assert_eq!(q.pending_time(EventKind::CpuDone, c), None);
                    }
                }
            }
            for c in 0..8 {
                let t = want.get(&c).map(|&(t, _)| t);
                assert_eq!(q.pending_time(EventKind::CpuDone, c), t);
            }
            assert_eq!(q.is_empty(), want.is_empty());
        }
    }
}
