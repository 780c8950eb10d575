//! The per-entity load tracking of v3.16 (`kernel.pelt = "v3.16"`): the
//! arithmetic of kernel/sched/fair.c at the v3.16 tag, as merged in v3.8
//! and replaced in v4.3 by Yuyang Du's rewrite (seed 004's "before").
//!
//! An entity keeps `runnable_avg_sum` over `runnable_avg_period` (both
//! decayed by y per 1024 µs period, y^32 = 1/2) and derives from them its
//! `load_avg_contrib`; a cfs_rq keeps its queued entities' contributions
//! (`runnable_load_avg`) apart from its sleeping ones' (`blocked_load_avg`),
//! which it decays as a whole, counting the decays in `decay_counter` so a
//! waking entity can catch up (`decay_count`). A group entity's
//! contribution is its share of `tg->load_avg`, scaled down by
//! `tg->runnable_avg` when the group uses less than one CPU.
//!
//! Integer widths follow v3.16 on 64-bit: `u32` sums, the `u32` product of
//! `__update_task_entity_contrib`, decay_load's 64-bit product (no 128-bit
//! intermediate before the rewrite), and no load resolution
//! (SCHED_LOAD_RESOLUTION was 0 in v3.16): weights here are unscaled,
//! nice 0 is 1024. The kernel glue is in `fair316.rs`.

use super::pelt::{LOAD_AVG_PERIOD, RUNNABLE_AVG_YN_INV};

/// LOAD_AVG_MAX_N: the number of full periods that produce LOAD_AVG_MAX.
const LOAD_AVG_MAX_N: u64 = 345;
/// LOAD_AVG_MAX of v3.16: today's 47742, as the u32 of its sums.
pub const LOAD_AVG_MAX: u32 = super::pelt::LOAD_AVG_MAX as u32;
/// NICE_0_SHIFT and NICE_0_LOAD with SCHED_LOAD_RESOLUTION 0 (v3.16).
pub const NICE_0_SHIFT: u32 = 10;
pub const NICE_0_LOAD: i64 = 1 << NICE_0_SHIFT;
/// The period of the cfs_rq's blocked-load decay clock: clock_task >> 20.
pub const DECAY_SHIFT: u32 = 20;

/// runnable_avg_yN_sum (v3.16): floor(Σ 1024·y^k, 1 ≤ k ≤ n), n = 0..32.
const RUNNABLE_AVG_YN_SUM: [u32; 33] = [
    0, 1002, 1982, 2941, 3880, 4798, 5697, 6576, 7437, 8279, 9103, 9909, 10698, 11470, 12226,
    12966, 13690, 14398, 15091, 15769, 16433, 17082, 17718, 18340, 18949, 19545, 20128, 20698,
    21256, 21802, 22336, 22859, 23371,
];

/// The v3.16 struct sched_avg of an entity (the rq's own, rq->avg, too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EntityAvg {
    pub runnable_avg_sum: u32,
    pub runnable_avg_period: u32,
    /// ns, cfs_rq_clock_task
    pub last_runnable_update: u64,
    /// Positive: the cfs_rq's decay_counter when the entity blocked;
    /// negative: the decays it missed, carried across a wakeup migration;
    /// 0: queued, new or migrated.
    pub decay_count: i64,
    pub load_avg_contrib: u64,
}

/// The v3.16 load-tracking fields of a cfs_rq (the tg contribution itself,
/// tg_load_contrib, is `CfsRq::tg_load_avg_contrib`, its writes to
/// tg->load_avg going through `CfsRq::tg_load_delta`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CfsAvg {
    pub runnable_load_avg: u64,
    pub blocked_load_avg: u64,
    /// atomic64_t decay_counter: blocked-load decays so far.
    pub decay_counter: u64,
    /// clock_task >> 20 at the last decay.
    pub last_decay: u64,
    /// atomic_long_t removed_load: contributions of entities that migrated
    /// away while blocked, taken off blocked_load_avg at the next update.
    pub removed_load: u64,
    /// This cfs_rq's share of tg->runnable_avg (u32 in the kernel).
    pub tg_runnable_contrib: u32,
    /// rq->avg: the CPU's own runnable average (root cfs_rq only), which
    /// update_rq_runnable_avg publishes to root_task_group.runnable_avg.
    pub rq_avg: EntityAvg,
}

/// decay_load (v3.16): val · y^n, with the 64-bit product of that kernel
/// (the table of y^n is today's, unchanged since v3.8).
pub fn decay_load(val: u64, n: u64) -> u64 {
    if n == 0 {
        return val;
    }
    if n > LOAD_AVG_PERIOD * 63 {
        return 0;
    }
    let (mut val, mut n) = (val, n);
    if n >= LOAD_AVG_PERIOD {
        val >>= n / LOAD_AVG_PERIOD;
        n %= LOAD_AVG_PERIOD;
    }
    val.wrapping_mul(RUNNABLE_AVG_YN_INV[n as usize] as u64) >> 32
}

/// __compute_runnable_contrib: Σ 1024·y^k for 1 ≤ k ≤ n, from the table and
/// y^32 = 1/2.
pub fn compute_runnable_contrib(n: u64) -> u32 {
    if n <= LOAD_AVG_PERIOD {
        return RUNNABLE_AVG_YN_SUM[n as usize];
    }
    if n >= LOAD_AVG_MAX_N {
        return LOAD_AVG_MAX;
    }
    let (mut contrib, mut n) = (0u32, n);
    loop {
        contrib /= 2;
        contrib += RUNNABLE_AVG_YN_SUM[LOAD_AVG_PERIOD as usize];
        n -= LOAD_AVG_PERIOD;
        if n <= LOAD_AVG_PERIOD {
            break;
        }
    }
    decay_load(contrib as u64, n) as u32 + RUNNABLE_AVG_YN_SUM[n as usize]
}

/// __update_entity_runnable_avg: age the sums to `now` (ns), counting the
/// time as runnable or not. Returns true when a period boundary was
/// crossed. Unlike the rewrite, the sub-µs remainder is dropped
/// (last_runnable_update = now).
pub fn update_entity_runnable_avg(now: u64, sa: &mut EntityAvg, runnable: bool) -> bool {
    let delta = now.wrapping_sub(sa.last_runnable_update);
    if (delta as i64) < 0 {
        sa.last_runnable_update = now;
        return false;
    }
    let mut delta = delta >> 10;
    if delta == 0 {
        return false;
    }
    sa.last_runnable_update = now;
    let mut decayed = false;
    let delta_w = (sa.runnable_avg_period % 1024) as u64;
    if delta + delta_w >= 1024 {
        decayed = true;
        let delta_w = 1024 - delta_w;
        if runnable {
            sa.runnable_avg_sum = sa.runnable_avg_sum.wrapping_add(delta_w as u32);
        }
        sa.runnable_avg_period = sa.runnable_avg_period.wrapping_add(delta_w as u32);
        delta -= delta_w;
        let periods = delta / 1024;
        delta %= 1024;
        sa.runnable_avg_sum = decay_load(sa.runnable_avg_sum as u64, periods + 1) as u32;
        sa.runnable_avg_period = decay_load(sa.runnable_avg_period as u64, periods + 1) as u32;
        let contrib = compute_runnable_contrib(periods);
        if runnable {
            sa.runnable_avg_sum = sa.runnable_avg_sum.wrapping_add(contrib);
        }
        sa.runnable_avg_period = sa.runnable_avg_period.wrapping_add(contrib);
    }
    if runnable {
        sa.runnable_avg_sum = sa.runnable_avg_sum.wrapping_add(delta as u32);
    }
    sa.runnable_avg_period = sa.runnable_avg_period.wrapping_add(delta as u32);
    decayed
}

/// __synchronize_entity_decay: a blocked entity's contribution catches up
/// with the decays of its cfs_rq since it blocked. Returns the decays.
pub fn synchronize_entity_decay(sa: &mut EntityAvg, decay_counter: u64) -> u64 {
    let decays = decay_counter.wrapping_sub(sa.decay_count as u64);
    if decays == 0 {
        return 0;
    }
    sa.load_avg_contrib = decay_load(sa.load_avg_contrib, decays);
    sa.decay_count = 0;
    decays
}

/// __update_task_entity_contrib: weight × the runnable fraction, in the
/// kernel's u32 product ("avoid overflowing a 32-bit type").
pub fn task_entity_contrib(sa: &mut EntityAvg, weight: u64) {
    let contrib = sa.runnable_avg_sum.wrapping_mul(weight as u32);
    sa.load_avg_contrib = (contrib / sa.runnable_avg_period.wrapping_add(1).max(1)) as u64;
}

/// __update_tg_runnable_avg: this cfs_rq's fraction of a CPU (×1024, from
/// the group entity's or the rq's sums); returns the change to add to
/// tg->runnable_avg, 0 when it moved by no more than 1/64.
pub fn tg_runnable_delta(sa: &EntityAvg, tg_runnable_contrib: &mut u32) -> i64 {
    let frac = ((sa.runnable_avg_sum as u64) << NICE_0_SHIFT) / (sa.runnable_avg_period as u64 + 1);
    let contrib = frac as i64 - *tg_runnable_contrib as i64;
    if contrib.unsigned_abs() > (*tg_runnable_contrib / 64) as u64 {
        *tg_runnable_contrib = tg_runnable_contrib.wrapping_add(contrib as u32);
        return contrib;
    }
    0
}

/// __update_group_entity_contrib: the group's load here (tg_load_contrib)
/// as a share of tg->shares by tg->load_avg; below one CPU of use
/// (tg->runnable_avg < NICE_0_LOAD) scaled down by that use, so a group
/// counts like a task of equal weight. `shares` unscaled.
pub fn group_entity_contrib(
    sa: &mut EntityAvg,
    tg_load_contrib: u64,
    shares: u64,
    tg_load_avg: i64,
    tg_runnable_avg: i64,
) {
    let contrib = tg_load_contrib.wrapping_mul(shares);
    // div_u64 takes a u32 divisor.
    let div = (tg_load_avg.wrapping_add(1) as u32).max(1);
    sa.load_avg_contrib = contrib / div as u64;
    if tg_runnable_avg < NICE_0_LOAD {
        sa.load_avg_contrib = sa.load_avg_contrib.wrapping_mul(tg_runnable_avg as u64);
        sa.load_avg_contrib >>= NICE_0_SHIFT;
    }
}

/// __update_cfs_rq_tg_load_contrib: the change of this cfs_rq's runnable +
/// blocked load to add to tg->load_avg; only beyond 1/8 of what it last
/// published, unless forced. Updates `tg_load_contrib`.
pub fn tg_load_contrib_delta(cfs: &CfsAvg, tg_load_contrib: &mut u64, force: bool) -> i64 {
    let total = cfs.runnable_load_avg.wrapping_add(cfs.blocked_load_avg);
    let delta = total.wrapping_sub(*tg_load_contrib) as i64;
    if delta == 0 {
        return 0;
    }
    if force || delta.unsigned_abs() > *tg_load_contrib / 8 {
        *tg_load_contrib = tg_load_contrib.wrapping_add(delta as u64);
        return delta;
    }
    0
}

/// subtract_blocked_load_contrib: the comparison is unsigned, so a
/// negative amount (a blocked entity whose contribution grew) clears it.
pub fn subtract_blocked_load_contrib(cfs: &mut CfsAvg, load_contrib: i64) {
    if (load_contrib as u64) < cfs.blocked_load_avg {
        cfs.blocked_load_avg -= load_contrib as u64;
    } else {
        cfs.blocked_load_avg = 0;
    }
}

/// init_task_runnable_average: a new task starts with one slice (in µs
/// units) runnable out of one, so it counts its full weight.
pub fn init_task_runnable_average(sa: &mut EntityAvg, slice_ns: u64, weight: u64) {
    let slice = (slice_ns >> 10) as u32;
    sa.decay_count = 0;
    sa.runnable_avg_sum = slice;
    sa.runnable_avg_period = slice;
    task_entity_contrib(sa, weight);
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERIOD_NS: u64 = 1024 * 1024;

    #[test]
    fn runnable_contrib_table_and_series() {
        // Σ_{k=1..n} 1024 y^k, floor, against the closed form.
        let y = 0.5f64.powf(1.0 / 32.0);
        for n in [1u64, 5, 32, 33, 64, 100, 200, 344] {
            let exact: f64 = (1..=n).map(|k| 1024.0 * y.powi(k as i32)).sum();
            let got = compute_runnable_contrib(n) as f64;
            // The table is floor()ed and the halving loop truncates.
            assert!(
                got <= exact && got > exact * 0.998,
                "n={n}: {got} vs {exact}"
            );
        }
        assert_eq!(compute_runnable_contrib(32), 23371);
        assert_eq!(compute_runnable_contrib(345), LOAD_AVG_MAX);
        assert_eq!(compute_runnable_contrib(10_000), LOAD_AVG_MAX);
        assert_eq!(decay_load(1000, 0), 1000);
        // y^0 is 0xffffffff / 2^32: the halving loses one unit.
        assert_eq!(decay_load(1 << 20, 32), (1 << 19) - 1);
        assert_eq!(decay_load(u32::MAX as u64, 2017), 0);
    }

    #[test]
    fn always_running_entity_converges_to_load_avg_max() {
        // Updated once a period, the sums settle within one period's
        // contribution of LOAD_AVG_MAX. v3.16 takes the position in the
        // current period from runnable_avg_period % 1024, exact only until
        // the first decay: updated more often, the sums roll over (and
        // decay) more often than once a period and settle lower, about
        // 1/10 of it at 100 µs. The ratio, what the contribution reads,
        // stays 1 either way.
        let settle = |step_ns: u64| {
            let mut sa = EntityAvg::default();
            let mut now = 0;
            for _ in 0..4000u64 {
                now += step_ns;
                update_entity_runnable_avg(now, &mut sa, true);
            }
            assert_eq!(sa.runnable_avg_sum, sa.runnable_avg_period);
            sa.runnable_avg_sum
        };
        let per_period = settle(PERIOD_NS);
        assert!(per_period <= LOAD_AVG_MAX && per_period + 1024 > LOAD_AVG_MAX);
        let fast = settle(100_000);
        assert!(
            fast < LOAD_AVG_MAX / 8 && fast > LOAD_AVG_MAX / 16,
            "{fast}"
        );
        let mut sa = EntityAvg {
            runnable_avg_sum: 47_000,
            runnable_avg_period: 47_000,
            ..Default::default()
        };
        task_entity_contrib(&mut sa, 1024);
        // 1024 · sum / (sum + 1): one unit short of the weight.
        assert_eq!(sa.load_avg_contrib, 1023);
        // One call over 400 periods lands on LOAD_AVG_MAX exactly.
        let mut one = EntityAvg::default();
        update_entity_runnable_avg(400 * PERIOD_NS, &mut one, true);
        assert_eq!(one.runnable_avg_sum, LOAD_AVG_MAX);
    }

    #[test]
    fn half_runnable_entity_counts_half_its_weight() {
        let mut sa = EntityAvg::default();
        let mut now = 0;
        for _ in 0..1000 {
            now += PERIOD_NS / 2;
            update_entity_runnable_avg(now, &mut sa, true);
            now += PERIOD_NS / 2;
            update_entity_runnable_avg(now, &mut sa, false);
        }
        task_entity_contrib(&mut sa, 1024);
        assert!(
            sa.load_avg_contrib.abs_diff(512) <= 10,
            "{}",
            sa.load_avg_contrib
        );
        // Weight 3121 (nice -5): the u32 product does not overflow here.
        task_entity_contrib(&mut sa, 3121);
        assert!(sa.load_avg_contrib.abs_diff(1560) <= 30);
    }

    #[test]
    fn blocked_entity_decays_by_its_decay_count() {
        let mut sa = EntityAvg {
            load_avg_contrib: 1000,
            decay_count: 7,
            ..Default::default()
        };
        // The cfs_rq decayed 32 times since: y^32 = 1/2 (less the unit
        // that y^0 = 0xffffffff / 2^32 loses).
        assert_eq!(synchronize_entity_decay(&mut sa, 39), 32);
        assert_eq!(sa.load_avg_contrib, 499);
        assert_eq!(sa.decay_count, 0);
        // 10 decays: 1000 · 0xce248c14 >> 32 = 805 (y^10 = 0.806).
        let mut sb = EntityAvg {
            load_avg_contrib: 1000,
            decay_count: 5,
            ..Default::default()
        };
        synchronize_entity_decay(&mut sb, 15);
        assert_eq!(sb.load_avg_contrib, (1000 * 0xce248c14u64) >> 32);
        assert_eq!(sb.load_avg_contrib, 805);
        // No decay since: untouched, decay_count kept.
        let mut sc = EntityAvg {
            load_avg_contrib: 1000,
            decay_count: 5,
            ..Default::default()
        };
        assert_eq!(synchronize_entity_decay(&mut sc, 5), 0);
        assert_eq!((sc.load_avg_contrib, sc.decay_count), (1000, 5));
    }

    #[test]
    fn group_entity_contrib_single_cpu_group() {
        // A group of weight 1024 all on one CPU: tg->load_avg is this
        // cfs_rq's contribution, so the entity gets the whole share,
        // less the +1 of the divisor.
        let mut sa = EntityAvg::default();
        group_entity_contrib(&mut sa, 2048, 1024, 2048, 1024);
        assert_eq!(sa.load_avg_contrib, 2048 * 1024 / 2049);
        // Using half a CPU (tg->runnable_avg 512): a task's worth of it.
        group_entity_contrib(&mut sa, 2048, 1024, 2048, 512);
        assert_eq!(sa.load_avg_contrib, ((2048 * 1024 / 2049) * 512) >> 10);
        // Half of the group's load on this CPU: half of the shares.
        group_entity_contrib(&mut sa, 1000, 1024, 1999, 2048);
        assert_eq!(sa.load_avg_contrib, 512);
    }

    #[test]
    fn tg_contributions_filter() {
        let mut cfs = CfsAvg {
            runnable_load_avg: 1000,
            ..Default::default()
        };
        let mut contrib = 0;
        assert_eq!(tg_load_contrib_delta(&cfs, &mut contrib, false), 1000);
        cfs.runnable_load_avg = 1100; // +100 ≤ 1000/8: held back
        assert_eq!(tg_load_contrib_delta(&cfs, &mut contrib, false), 0);
        assert_eq!(tg_load_contrib_delta(&cfs, &mut contrib, true), 100);
        cfs.blocked_load_avg = 200; // +200 > 1100/8
        assert_eq!(tg_load_contrib_delta(&cfs, &mut contrib, false), 200);
        assert_eq!(contrib, 1300);
        // tg->runnable_avg: 1/64 filter on the CPU fraction.
        let sa = EntityAvg {
            runnable_avg_sum: 1000,
            runnable_avg_period: 1999,
            ..Default::default()
        };
        let mut rc = 0;
        assert_eq!(tg_runnable_delta(&sa, &mut rc), 512);
        let sb = EntityAvg {
            runnable_avg_sum: 1010,
            ..sa
        };
        assert_eq!(tg_runnable_delta(&sb, &mut rc), 0); // 517 - 512 ≤ 8
        assert_eq!(rc, 512);
    }

    #[test]
    fn blocked_subtraction_is_unsigned() {
        let mut cfs = CfsAvg {
            blocked_load_avg: 500,
            ..Default::default()
        };
        subtract_blocked_load_contrib(&mut cfs, 200);
        assert_eq!(cfs.blocked_load_avg, 300);
        subtract_blocked_load_contrib(&mut cfs, -5);
        assert_eq!(cfs.blocked_load_avg, 0);
    }

    #[test]
    fn new_task_counts_its_full_weight() {
        let mut sa = EntityAvg::default();
        init_task_runnable_average(&mut sa, 3_000_000, 1024);
        assert_eq!(sa.runnable_avg_sum, 2929);
        assert_eq!(sa.load_avg_contrib, 1024 * 2929 / 2930);
        // Sub-µs remainders are dropped, not carried.
        let mut sb = EntityAvg::default();
        update_entity_runnable_avg(5000, &mut sb, true);
        assert_eq!((sb.last_runnable_update, sb.runnable_avg_sum), (5000, 4));
        update_entity_runnable_avg(5900, &mut sb, true);
        assert_eq!((sb.last_runnable_update, sb.runnable_avg_sum), (5000, 4));
    }
}
