//! An indexed 4-ary min-heap of event slots keyed by (time, slot). The
//! queue keeps two (mod.rs): one for the events a CPU re-arms all the time
//! and one for the rest.

/// Per slot: not in the heap.
const NONE: u32 = u32::MAX;
/// Children per heap node: a 4-ary heap is shallower than a binary one and
/// its children share a cache line.
const ARITY: usize = 4;

/// One heap entry, 16 bytes so four children share a cache line:
/// time << 64 | slot. Comparing keys orders by time, then by slot, which
/// names the event's source (mod.rs: the order-free tie-break); keys are
/// unique, since a slot holds one event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    pub key: u128,
}

impl Entry {
    pub fn slot(&self) -> usize {
        (self.key as usize) & (super::MAX_SLOTS - 1)
    }

    pub fn time(&self) -> super::Time {
        (self.key >> 64) as super::Time
    }
}

/// Indexed 4-ary min-heap of slots keyed by (time, slot).
///
/// A popped event stays at the root, marked `taken`, until the next heap
/// operation that needs it gone: most handlers re-arm the slot they were
/// called for (a CPU's next segment end), and replacing the root in place
/// is one sift-down instead of a removal plus an insertion. An event armed
/// meanwhile with a smaller key than the taken one (its instant, a lower
/// slot) drops the taken root first (`push`), so the heap order holds.
#[derive(Default)]
pub(super) struct Heap {
    heap: Vec<Entry>,
    /// Per slot: index in `heap`, or NONE.
    pos: Vec<u32>,
    /// Whether heap[0] is an event already popped.
    taken: bool,
}

impl Heap {
    #[inline]
    fn place(&mut self, i: usize, e: Entry) {
        self.heap[i] = e;
        self.pos[e.slot()] = i as u32;
    }

    /// Fill the hole at `i` with `e`, moving the parents it beats down
    /// (each entry is written once, where it ends up).
    fn sift_up(&mut self, mut i: usize, e: Entry) {
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

    /// The index and entry of the smallest of the children starting at
    /// `first`; with all four present, a tournament of independent
    /// comparisons. (Inlined, over one bounds-checked slice of the four: it
    /// runs at every level of every sift-down.)
    #[inline]
    fn min_child(&self, first: usize, n: usize) -> (usize, Entry) {
        let h = &self.heap;
        if let Some(q) = h.get(first..).and_then(|r| r.first_chunk::<ARITY>()) {
            let a = (q[1].key < q[0].key) as usize;
            let b = 2 + (q[3].key < q[2].key) as usize;
            let m = if q[b].key < q[a].key { b } else { a };
            return (first + m, q[m & (ARITY - 1)]);
        }
        let mut c = first;
        for k in first + 1..n {
            if h[k].key < h[c].key {
                c = k;
            }
        }
        (c, h[c])
    }

    /// Fill the hole at `i` with `e`, moving the children that beat it up.
    fn sift_down(&mut self, mut i: usize, e: Entry) {
        let n = self.heap.len();
        loop {
            let first = ARITY * i + 1;
            if first >= n {
                break;
            }
            let (c, ce) = self.min_child(first, n);
            if ce.key >= e.key {
                break;
            }
            self.place(i, ce);
            i = c;
        }
        self.place(i, e);
    }

    /// Arm `e`'s slot with it, replacing the event the slot holds.
    pub fn push(&mut self, e: Entry) {
        let slot = e.slot();
        if slot >= self.pos.len() {
            self.pos.resize(slot + 1, NONE);
        }
        if self.taken && (self.pos[slot] == 0 || e.key < self.heap[0].key) {
            // Re-arming the taken slot replaces it (sift-down below); an
            // event keyed below it (the same instant, a lower slot, or in
            // the past) would go above it, so drop it first.
            self.taken = false;
            if self.pos[slot] != 0 {
                self.remove_at(0);
            }
        }
        match self.pos[slot] {
            NONE => {
                let i = self.heap.len();
                self.heap.push(e);
                self.sift_up(i, e);
            }
            i => {
                let i = i as usize;
                if e.key < self.heap[i].key {
                    self.sift_up(i, e);
                } else {
                    self.sift_down(i, e);
                }
            }
        }
    }

    /// `slot`'s pending entry (not a taken one).
    pub fn pending(&self, slot: usize) -> Option<Entry> {
        match self.pos.get(slot) {
            Some(&i) if i != NONE && !(i == 0 && self.taken) => Some(self.heap[i as usize]),
            _ => None,
        }
    }

    /// Drop `slot`'s pending event, if any. (Removing an entry below a
    /// taken root never lifts another entry above it.)
    pub fn cancel(&mut self, slot: usize) {
        if self.pending(slot).is_some() {
            self.remove_at(self.pos[slot] as usize);
        }
    }

    /// Remove the taken root, if there is one.
    pub fn drop_taken(&mut self) {
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
            let (c, ce) = self.min_child(first, n);
            self.place(i, ce);
            i = c;
        }
        self.sift_up(i, last);
    }

    /// The earliest pending entry (after `drop_taken`).
    pub fn first(&self) -> Option<Entry> {
        debug_assert!(!self.taken);
        self.heap.first().copied()
    }

    /// Mark the root, just returned by `first`, as popped.
    pub fn take_first(&mut self) {
        self.taken = true;
    }

    /// The pending entries.
    pub fn entries(&self) -> &[Entry] {
        let skip = self.taken as usize;
        &self.heap[skip.min(self.heap.len())..]
    }
}
