//! A fixed-size set of CPU numbers as a bitmap (the kernel's `cpumask`):
//! finding the set members of a range costs a word per 64 CPUs, not a
//! look at each CPU.

#[derive(Clone, Debug, Default)]
pub struct CpuMask {
    words: Vec<u64>,
}

impl CpuMask {
    /// A mask of `n` CPUs, all set when `full`.
    pub fn new(n: usize, full: bool) -> Self {
        let mut m = CpuMask {
            words: vec![0; n.div_ceil(64)],
        };
        if full {
            (0..n).for_each(|c| m.set(c));
        }
        m
    }

    /// Set `cpu`, growing the mask if needed (so an empty mask, the
    /// `Default`, costs no allocation until its first member).
    pub fn set(&mut self, cpu: usize) {
        if cpu / 64 >= self.words.len() {
            self.words.resize(cpu / 64 + 1, 0);
        }
        self.words[cpu / 64] |= 1 << (cpu % 64);
    }

    pub fn clear(&mut self, cpu: usize) {
        if let Some(w) = self.words.get_mut(cpu / 64) {
            *w &= !(1 << (cpu % 64));
        }
    }

    pub fn test(&self, cpu: usize) -> bool {
        self.words
            .get(cpu / 64)
            .is_some_and(|w| (w >> (cpu % 64)) & 1 != 0)
    }

    /// The first set CPU from `from` to `hi` inclusive, if any
    /// (`cpumask_next` within a range): the scan stops at `hi`'s word, not
    /// at the end of the mask.
    fn next_set(&self, from: usize, hi: usize) -> Option<usize> {
        let last = (hi / 64).min(self.words.len().checked_sub(1)?);
        let mut w = from / 64;
        if from > hi || w > last {
            return None;
        }
        let mut bits = self.words[w] & (u64::MAX << (from % 64));
        loop {
            if bits != 0 {
                let c = w * 64 + bits.trailing_zeros() as usize;
                return (c <= hi).then_some(c);
            }
            if w == last {
                return None;
            }
            w += 1;
            bits = self.words[w];
        }
    }

    /// The set CPUs from `lo` to `hi` inclusive, ascending.
    pub fn iter_range(&self, lo: usize, hi: usize) -> impl Iterator<Item = usize> + '_ {
        let mut next = self.next_set(lo, hi);
        std::iter::from_fn(move || {
            let c = next?;
            next = self.next_set(c + 1, hi);
            Some(c)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_find_exactly_the_set_cpus_in_order() {
        let mut m = CpuMask::new(200, false);
        for c in [0, 5, 63, 64, 130, 199] {
            m.set(c);
        }
        m.clear(5);
        assert!(m.test(63) && !m.test(5) && !m.test(62));
        assert_eq!(
            m.iter_range(0, 199).collect::<Vec<_>>(),
            [0, 63, 64, 130, 199]
        );
        assert_eq!(m.iter_range(1, 130).collect::<Vec<_>>(), [63, 64, 130]);
        assert_eq!(m.iter_range(65, 129).count(), 0);
        assert_eq!(m.next_set(200, usize::MAX), None);
        assert_eq!(CpuMask::new(70, true).iter_range(0, 69).count(), 70);
        assert_eq!(
            m.iter_range(0, 4000).collect::<Vec<_>>(),
            [0, 63, 64, 130, 199]
        );
        assert_eq!(m.iter_range(199, 199).collect::<Vec<_>>(), [199]);
        assert_eq!(m.iter_range(200, 100).count(), 0);
    }

    #[test]
    fn an_empty_mask_grows_on_set() {
        let mut m = CpuMask::default();
        assert!(!m.test(4095));
        m.clear(4095);
        m.set(4095);
        assert!(m.test(4095) && !m.test(4094));
        assert_eq!(m.iter_range(0, 4095).collect::<Vec<_>>(), [4095]);
    }
}
