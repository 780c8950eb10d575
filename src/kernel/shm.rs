//! User-space memory that benchmark threads share: schbench's lock-free
//! wait lists, per-CPU spinlocks, per-thread timestamps and latency
//! histograms. It sits with the kernel model, which holds it for the tasks
//! as it holds their futex words, but the model's scheduling code never
//! looks inside; only the task-program interpreter does.

use super::task::Pid;
use crate::util::hist::Histogram;

/// fio's latency histogram as schbench keeps it (PLAT_BITS = 8, 19 groups):
/// exact below 512, then 256 buckets per power of two.
#[derive(Clone, Debug)]
pub struct PlatHist {
    buckets: Vec<u64>,
    pub nr: u64,
    pub min: u64,
    pub max: u64,
    pub sum: u64,
    /// Samples taken before this time (ns) are not recorded: the old
    /// schbench's warmup, after which main() zeroes every thread's stats.
    pub from_ns: u64,
}

const PLAT_BITS: u32 = 8;
const PLAT_VAL: u64 = 1 << PLAT_BITS;
const PLAT_GROUP_NR: u64 = 19;
const PLAT_NR: u64 = PLAT_GROUP_NR * PLAT_VAL;

impl Default for PlatHist {
    fn default() -> Self {
        PlatHist {
            buckets: vec![0; PLAT_NR as usize],
            nr: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            from_ns: 0,
        }
    }
}

impl PlatHist {
    /// plat_val_to_idx
    fn idx(val: u64) -> usize {
        let msb = 63 - val.max(1).leading_zeros();
        if msb <= PLAT_BITS {
            return val as usize;
        }
        let error_bits = msb - PLAT_BITS;
        let base = (error_bits as u64 + 1) << PLAT_BITS;
        let offset = (PLAT_VAL - 1) & (val >> error_bits);
        (base + offset).min(PLAT_NR - 1) as usize
    }

    /// plat_idx_to_val: the middle of the bucket.
    fn val(idx: usize) -> u64 {
        let idx = idx as u64;
        if idx < PLAT_VAL << 1 {
            return idx;
        }
        let error_bits = (idx >> PLAT_BITS) - 1;
        let base = 1u64 << (error_bits + PLAT_BITS as u64);
        let k = idx % PLAT_VAL;
        base + ((2 * k + 1) << error_bits) / 2
    }

    pub fn add(&mut self, v: u64) {
        self.buckets[Self::idx(v)] += 1;
        self.nr += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += v;
    }

    /// Percentile values as schbench's calc_percentiles reports them (the
    /// value of the bucket holding the p-th sample), each with the number
    /// of samples between it and the previous one.
    pub fn percentiles(&self, ps: &[f64]) -> Vec<(f64, u64, u64)> {
        let mut out = Vec::new();
        let (mut seen, mut i, mut prev_seen) = (0u64, 0usize, 0u64);
        for &p in ps {
            let want = ((p / 100.0) * self.nr as f64).ceil().max(1.0) as u64;
            while i < self.buckets.len() && seen + self.buckets[i] < want {
                seen += self.buckets[i];
                i += 1;
            }
            let upto = seen + self.buckets.get(i).copied().unwrap_or(0);
            out.push((
                p,
                Self::val(i.min(self.buckets.len() - 1)),
                upto - prev_seen,
            ));
            prev_seen = upto;
        }
        out
    }

    /// The value at percentile `p`.
    pub fn pct(&self, p: f64) -> u64 {
        self.percentiles(&[p])[0].1
    }
}

/// Everything the workloads of one run share in user space.
#[derive(Clone, Debug, Default)]
pub struct Shm {
    /// schbench's xlists: threads queued for their message thread.
    pub lists: Vec<Vec<Pid>>,
    /// The batch each list's waker is working through.
    pub batches: Vec<Vec<Pid>>,
    /// Per task: the futex word it waits on when queued on a list.
    pub futex_of: Vec<usize>,
    /// schbench -R: each list's workers, its round-robin position, and per
    /// task the queue times of its pending requests.
    pub members: Vec<Vec<Pid>>,
    pub rr: Vec<usize>,
    pub requests: Vec<std::collections::VecDeque<u64>>,
    /// Per-CPU pthread spinlocks (holder), one set per schbench instance.
    pub cpu_locks: Vec<Vec<Option<Pid>>>,
    pub hists: Vec<PlatHist>,
    /// Per task: the timestamp another thread left for it (schbench's
    /// wake_time), its own request start, and the CPU lock it holds.
    pub stamps: Vec<[u64; 3]>,
    /// cyclictest's measuring threads.
    pub cyclic: Vec<CyclicThread>,
    /// rt-app fork events: the pre-built children each still has to
    /// start, the next one last.
    pub fork_pools: Vec<Vec<Pid>>,
    /// CPU sets passed to sched_setaffinity (rt-app's per-phase `cpus`).
    pub cpusets: Vec<Vec<usize>>,
}

impl Shm {
    pub fn new_hist(&mut self) -> usize {
        self.hists.push(PlatHist::default());
        self.hists.len() - 1
    }

    /// A pool of children for a fork event, in the order it starts them.
    pub fn new_fork_pool(&mut self, mut children: Vec<Pid>) -> usize {
        children.reverse();
        self.fork_pools.push(children);
        self.fork_pools.len() - 1
    }

    /// A CPU set for sched_setaffinity.
    pub fn new_cpuset(&mut self, cpus: Vec<usize>) -> usize {
        self.cpusets.push(cpus);
        self.cpusets.len() - 1
    }

    /// A new list whose tasks wait on their `futex_of` words.
    pub fn new_list(&mut self) -> usize {
        self.lists.push(Vec::new());
        self.batches.push(Vec::new());
        self.members.push(Vec::new());
        self.rr.push(0);
        self.lists.len() - 1
    }

    pub fn set_futex(&mut self, p: Pid, futex: usize) {
        if self.futex_of.len() <= p {
            self.futex_of.resize(p + 1, 0);
        }
        self.futex_of[p] = futex;
    }

    /// Task `p`'s pending requests.
    pub fn pending(&mut self, p: Pid) -> &mut std::collections::VecDeque<u64> {
        if self.requests.len() <= p {
            self.requests.resize(p + 1, Default::default());
        }
        &mut self.requests[p]
    }

    pub fn stamp(&mut self, p: Pid, i: usize, t: u64) {
        if self.stamps.len() <= p {
            self.stamps.resize(p + 1, [0; 3]);
        }
        self.stamps[p][i] = t;
    }

    pub fn stamp_of(&self, p: Pid, i: usize) -> u64 {
        self.stamps.get(p).map_or(0, |s| s[i])
    }
}

#[cfg(test)]
mod tests {
    use super::PlatHist;

    #[test]
    fn plat_buckets_exact_below_512_then_log_linear() {
        for v in [0, 1, 255, 511] {
            assert_eq!(PlatHist::val(PlatHist::idx(v)), v);
        }
        // 1000 lies in the group of width 2 (512..1024): bucket value within 1.
        let v = PlatHist::val(PlatHist::idx(1000));
        assert!((999..=1001).contains(&v), "{v}");
        let mut h = PlatHist::default();
        for v in 1..=100 {
            h.add(v);
        }
        assert_eq!(h.pct(50.0), 50);
        assert_eq!(h.pct(99.0), 99);
        let p = h.percentiles(&[50.0, 90.0]);
        assert_eq!((p[0].2, p[1].2), (50, 40));
    }
}

/// One cyclictest measuring thread's state and statistics (µs, as cyclictest keeps).
#[derive(Clone, Debug, Default)]
pub struct CyclicThread {
    pub interval: u64,
    /// The next absolute wakeup time (ns); 0 before the first sleep.
    pub next: u64,
    pub act: u64,
    pub lat: Histogram,
    /// Counts per µs below the histogram size, and the overflows.
    pub buckets: Vec<u64>,
    pub overflows: u64,
}

impl CyclicThread {
    /// After a wakeup: record now − next, then step `next` past now
    /// (missed periods are skipped).
    pub fn woke(&mut self, now: u64) {
        let us = now.saturating_sub(self.next) / 1000;
        self.act = us;
        self.lat.add(us);
        match self.buckets.get_mut(us as usize) {
            Some(b) => *b += 1,
            None => self.overflows += 1,
        }
        self.next += self.interval;
        while self.next <= now {
            self.next += self.interval;
        }
    }
}
