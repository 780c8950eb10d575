//! The discrete-event engine: simulated time, a deterministic event queue
//! ordered by (time, sequence number), and seeded random streams.
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

mod rng;

pub use rng::Rng;

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

const NONE: u32 = u32::MAX;
/// Children per heap node: a 4-ary heap is shallower than a binary one and
/// its children share a cache line.
const ARITY: usize = 4;

/// Bits of an entry's key that hold the slot id.
const SLOT_BITS: u32 = 20;
/// The most event sources (6 per CPU, 1 per task, the end) a run may have.
pub const MAX_SLOTS: usize = 1 << SLOT_BITS;

/// One heap entry, 16 bytes so four children share a cache line:
/// time << 64 | seq << 20 | slot. Comparing keys orders by time, then by
/// arming order (seq is unique); the slot rides along in the low bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    key: u128,
}

impl Entry {
    fn slot(&self) -> usize {
        (self.key as usize) & (MAX_SLOTS - 1)
    }
}

/// Indexed 4-ary min-heap of slots keyed by (time, seq).
///
/// A popped event stays at the root, marked `taken`, until the next heap
/// operation that needs it gone: most handlers re-arm the slot they were
/// called for (a CPU's next segment end), and replacing the root in place
/// is one sift-down instead of a removal plus an insertion. Every event
/// armed meanwhile is no earlier than the taken one (time never goes
/// back, and its seq is larger), so the heap order holds.
pub struct EventQueue {
    ncpus: usize,
    heap: Vec<Entry>,
    /// Per slot: index in `heap`, or NONE.
    pos: Vec<u32>,
    /// Whether heap[0] is an event already popped.
    taken: bool,
    seq: u64,
    pub popped: u64,
}

impl EventQueue {
    pub fn new(ncpus: usize) -> Self {
        EventQueue {
            ncpus,
            heap: Vec::new(),
            pos: Vec::new(),
            taken: false,
            seq: 0,
            popped: 0,
        }
    }

    fn slot(&self, kind: EventKind, idx: usize) -> usize {
        match kind {
            EventKind::End => PER_CPU * self.ncpus,
            EventKind::Timer => PER_CPU * self.ncpus + 1 + idx,
            EventKind::CpuDone => PER_CPU * idx,
            EventKind::Tick => PER_CPU * idx + 1,
            EventKind::Resched => PER_CPU * idx + 2,
            EventKind::IdleBalance => PER_CPU * idx + 3,
            EventKind::Irq => PER_CPU * idx + 4,
            EventKind::NoiseIrq => PER_CPU * idx + 5,
        }
    }

    fn decode(&self, slot: usize) -> (EventKind, usize) {
        let base = PER_CPU * self.ncpus;
        if slot < base {
            (CPU_KINDS[slot % PER_CPU], slot / PER_CPU)
        } else if slot == base {
            (EventKind::End, 0)
        } else {
            (EventKind::Timer, slot - base - 1)
        }
    }

    fn place(&mut self, i: usize, e: Entry) {
        self.heap[i] = e;
        self.pos[e.slot()] = i as u32;
    }

    fn sift_up(&mut self, mut i: usize) {
        let e = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let p = self.heap[parent];
            if e.key >= p.key {
                break;
            }
            self.place(i, p);
            i = parent;
        }
        self.place(i, e);
    }

    /// The index of the smallest of the children starting at `first`; with
    /// all four present, a tournament of independent comparisons.
    fn min_child(&self, first: usize, n: usize) -> usize {
        let h = &self.heap;
        if first + ARITY <= n {
            let a = if h[first + 1].key < h[first].key {
                first + 1
            } else {
                first
            };
            let b = if h[first + 3].key < h[first + 2].key {
                first + 3
            } else {
                first + 2
            };
            return if h[b].key < h[a].key { b } else { a };
        }
        let mut c = first;
        for k in first + 1..n {
            if h[k].key < h[c].key {
                c = k;
            }
        }
        c
    }

    fn sift_down(&mut self, mut i: usize) {
        let e = self.heap[i];
        let n = self.heap.len();
        loop {
            let first = ARITY * i + 1;
            if first >= n {
                break;
            }
            let c = self.min_child(first, n);
            let ce = self.heap[c];
            if ce.key >= e.key {
                break;
            }
            self.place(i, ce);
            i = c;
        }
        self.place(i, e);
    }

    /// Arm the slot of (kind, idx) to fire at `time`, replacing any event
    /// it already holds.
    pub fn push(&mut self, time: Time, kind: EventKind, idx: usize) {
        let slot = self.slot(kind, idx);
        assert!(slot < MAX_SLOTS, "more than {MAX_SLOTS} event sources");
        if slot >= self.pos.len() {
            self.pos.resize(slot + 1, NONE);
        }
        self.seq += 1;
        let e = Entry {
            key: (time as u128) << 64 | (self.seq as u128) << SLOT_BITS | slot as u128,
        };
        if self.taken && (self.pos[slot] == 0 || e.key < self.heap[0].key) {
            // Re-arming the taken slot replaces it (sift-down below); an
            // event in the past would go above it, so drop it first.
            self.taken = false;
            if self.pos[slot] != 0 {
                self.remove_at(0);
            }
        }
        match self.pos[slot] {
            NONE => {
                self.heap.push(e);
                let i = self.heap.len() - 1;
                self.sift_up(i);
            }
            i => {
                let i = i as usize;
                let old = self.heap[i];
                self.heap[i] = e;
                if e.key < old.key {
                    self.sift_up(i);
                } else {
                    self.sift_down(i);
                }
            }
        }
    }

    /// The heap index of `slot`'s pending event (not a taken one).
    fn pending_at(&self, slot: usize) -> Option<usize> {
        match self.pos.get(slot) {
            Some(&i) if i != NONE && !(i == 0 && self.taken) => Some(i as usize),
            _ => None,
        }
    }

    /// Arm (kind, idx) at `time` unless it already fires no later: two
    /// interrupts on their way to one CPU are served by the first.
    pub fn push_earliest(&mut self, time: Time, kind: EventKind, idx: usize) {
        match self.pending_at(self.slot(kind, idx)) {
            Some(i) if (self.heap[i].key >> 64) as Time <= time => {}
            _ => self.push(time, kind, idx),
        }
    }

    /// Whether (kind, idx) has a pending event.
    pub fn is_pending(&self, kind: EventKind, idx: usize) -> bool {
        self.pending_at(self.slot(kind, idx)).is_some()
    }

    /// When (kind, idx) fires, if it is pending.
    pub fn pending_time(&self, kind: EventKind, idx: usize) -> Option<Time> {
        self.pending_at(self.slot(kind, idx))
            .map(|i| (self.heap[i].key >> 64) as Time)
    }

    /// Drop the pending event of (kind, idx), if any. (Removing an entry
    /// below a taken root never lifts another entry above it.)
    pub fn cancel(&mut self, kind: EventKind, idx: usize) {
        if let Some(i) = self.pending_at(self.slot(kind, idx)) {
            self.remove_at(i);
        }
    }

    /// Remove the taken root, if there is one.
    fn drop_taken(&mut self) {
        if std::mem::take(&mut self.taken) {
            self.remove_at(0);
        }
    }

    /// Remove the entry at `i` (Floyd's method): walk the hole down along
    /// the smaller children to a leaf, then sift the last entry up from
    /// there; it usually belongs near the bottom, so this halves the
    /// comparisons of a plain sift-down.
    fn remove_at(&mut self, mut i: usize) {
        let e = self.heap[i];
        self.pos[e.slot()] = NONE;
        let last = self.heap.pop().expect("non-empty heap");
        let n = self.heap.len();
        if i == n {
            return;
        }
        loop {
            let first = ARITY * i + 1;
            if first >= n {
                break;
            }
            let c = self.min_child(first, n);
            let ce = self.heap[c];
            self.place(i, ce);
            i = c;
        }
        self.place(i, last);
        self.sift_up(i);
    }

    pub fn pop(&mut self) -> Option<Event> {
        self.drop_taken();
        let e = *self.heap.first()?;
        self.taken = true;
        self.popped += 1;
        let (kind, idx) = self.decode(e.slot());
        Some(Event {
            time: (e.key >> 64) as Time,
            kind,
            idx,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.heap.len() == self.taken as usize
    }

    /// Whether every pending event is of `kind` (true when none is).
    /// Costs O(pending events): call it only when the queue is short.
    pub fn only_pending(&self, kind: EventKind) -> bool {
        let skip = self.taken as usize;
        self.heap[skip.min(self.heap.len())..]
            .iter()
            .all(|e| self.decode(e.slot()).0 == kind)
    }

    /// The number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len() - self.taken as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_pop_in_arming_order_and_rearming_replaces() {
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
                (10, EventKind::Tick, 3),
                (10, EventKind::CpuDone, 2),
                (12, EventKind::CpuDone, 0),
            ]
        );
        assert_eq!(q.popped, 4);
        assert!(q.is_empty());
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
    fn a_popped_event_is_gone_until_rearmed() {
        // Against a model: the BTreeMap of pending (time, seq) per slot,
        // with pops, re-arms of the popped slot, cancels and other pushes
        // interleaved as a run does them.
        let mut q = EventQueue::new(8);
        let mut r = Rng::new(9, 0);
        let mut want = std::collections::BTreeMap::new();
        let (mut now, mut seq) = (0, 0);
        for _ in 0..5000 {
            seq += 1;
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
                    want.insert(cpu, (t, seq));
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
