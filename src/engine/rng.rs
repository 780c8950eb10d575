//! Seeded random streams.
//!
//! - [`Rng`]: xoshiro256** seeded through SplitMix64, a sequential stream
//!   per owner (each task's program draws, each CPU's sched_rng), derived
//!   from (run seed, stream id), so adding a task never changes the
//!   numbers another task draws.
//! - [`Stream`]: counter-based (SplitMix64's output function applied to a
//!   per-stream key plus the draw's number, in the manner of Philox): draw k
//!   of a stream is a pure function of (seed, stream id, k). The noise model
//!   draws from these, one stream per task and per CPU (kernel/noise.rs),
//!   so no draw depends on the global order in which events were handled:
//!   only on how many draws its own owner made before it.

#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

/// SplitMix64's increment (the golden ratio in 64 bits).
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function (Steele, Lea, Flood 2014, "mix64variant13"):
/// a bijection of u64 whose outputs, over consecutive multiples of GAMMA,
/// pass BigCrush.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(GAMMA);
    mix64(*x)
}

/// Uniform in [0, 1) from 64 random bits.
fn unit(v: u64) -> f64 {
    (v >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Uniform integer in [lo, hi] from 64 random bits (multiply-shift).
fn in_range(v: u64, lo: u64, hi: u64) -> u64 {
    if hi <= lo {
        return lo;
    }
    let span = hi - lo + 1;
    lo + ((v as u128 * span as u128) >> 64) as u64
}

/// A counter-based random stream: draw k is `mix64(key + (k + 1)·GAMMA)`,
/// with `key` a hash of (run seed, stream id). What a draw gives depends
/// only on the stream and on how many draws that stream gave before, never
/// on draws of other streams or on when (in the run's global order of
/// events) it is made; `at` reads any draw without taking it.
#[derive(Clone, Copy, Debug)]
pub struct Stream {
    key: u64,
    /// Draws taken so far.
    pub taken: u64,
}

impl Stream {
    /// Stream `id` under run seed `seed`. The id goes through a different
    /// multiplier than `Rng::new`'s, so a `Stream` and an `Rng` of equal
    /// ids do not share numbers.
    pub fn new(seed: u64, id: u64) -> Self {
        let key = mix64(seed ^ mix64(id.wrapping_mul(0xA076_1D64_78BD_642F)));
        Stream { key, taken: 0 }
    }

    /// Draw number `k` (from 0), 64 bits.
    pub fn at(&self, k: u64) -> u64 {
        mix64(self.key.wrapping_add(k.wrapping_add(1).wrapping_mul(GAMMA)))
    }

    pub fn next_u64(&mut self) -> u64 {
        let v = self.at(self.taken);
        self.taken += 1;
        v
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        unit(self.next_u64())
    }

    /// Uniform integer in [lo, hi].
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        in_range(self.next_u64(), lo, hi)
    }
}

impl Rng {
    /// A stream for `stream` under run seed `seed`.
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut x = seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03);
        let s = [
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
        ];
        Rng { s }
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        unit(self.next_u64())
    }

    /// Uniform integer in [lo, hi].
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        in_range(self.next_u64(), lo, hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..4).map(|_| Rng::new(1, 7).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut x = Rng::new(1, 7);
        let mut y = Rng::new(1, 8);
        assert_ne!(x.next_u64(), y.next_u64());
        let mut r = Rng::new(3, 0);
        for _ in 0..1000 {
            let v = r.range(10, 20);
            assert!((10..=20).contains(&v));
            let f = r.next_f64();
            assert!((0.0..1.0).contains(&f));
        }
    }

    #[test]
    fn a_counter_stream_draw_depends_on_its_number_only() {
        // Draw k is the same whether taken in order, read with `at`, or
        // taken while another stream is drawn from in between.
        let mut a = Stream::new(5, 3);
        let mut other = Stream::new(5, 4);
        let mut seen = Vec::new();
        for k in 0..50 {
            if k % 3 == 0 {
                other.next_u64();
            }
            seen.push(a.next_u64());
        }
        let fresh = Stream::new(5, 3);
        assert!((0..50).all(|k| fresh.at(k) == seen[k as usize]));
        assert_eq!(a.taken, 50);
        // Streams, seeds and the Rng of the same id differ.
        assert_ne!(Stream::new(5, 4).at(0), fresh.at(0));
        assert_ne!(Stream::new(6, 3).at(0), fresh.at(0));
        assert_ne!(Rng::new(5, 3).next_u64(), fresh.at(0));
    }

    #[test]
    fn counter_stream_draws_are_uniform() {
        // 64 bins of 64,000 draws: chi-square with 63 degrees of freedom
        // stays under 110 (p ≈ 2e-4) for a uniform source; the mean of
        // next_f64 within 4 standard errors of 1/2.
        let mut s = Stream::new(1, 0);
        let n = 64_000;
        let mut bins = [0u32; 64];
        let mut sum = 0.0;
        for _ in 0..n {
            bins[s.range(0, 63) as usize] += 1;
            sum += s.next_f64();
        }
        let e = n as f64 / 64.0;
        let chi2: f64 = bins.iter().map(|&b| (b as f64 - e).powi(2) / e).sum();
        assert!(chi2 < 110.0, "{chi2}");
        let se = (1.0 / 12.0 / n as f64).sqrt();
        assert!((sum / n as f64 - 0.5).abs() < 4.0 * se);
    }
}
