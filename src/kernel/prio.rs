//! Nice levels to load weights: `sched_prio_to_weight` and
//! `sched_prio_to_wmult` (kernel/sched/core.c), and the fixed-point scaling
//! of load weights on 64-bit kernels.

/// SCHED_FIXEDPOINT_SHIFT: load weights carry 10 extra bits of resolution.
pub const SCHED_FIXEDPOINT_SHIFT: u32 = 10;
/// NICE_0_LOAD in the scaled representation (1 << 20).
pub const NICE_0_LOAD: u64 = 1024 << SCHED_FIXEDPOINT_SHIFT;
/// WMULT_CONST: the numerator of the inverse weights.
pub const WMULT_CONST: u64 = 0xffff_ffff;
pub const WMULT_SHIFT: u32 = 32;

/// Weight of nice -20..=19 (index nice + 20).
pub const PRIO_TO_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

/// 2^32 / weight for nice -20..=19.
pub const PRIO_TO_WMULT: [u32; 40] = [
    48388, 59856, 76040, 92818, 118348, 147320, 184698, 229616, 287308, 360437, 449829, 563644,
    704093, 875809, 1099582, 1376151, 1717300, 2157191, 2708050, 3363326, 4194304, 5237765,
    6557202, 8165337, 10153587, 12820798, 15790321, 19976592, 24970740, 31350126, 39045157,
    49367440, 61356676, 76695844, 95443717, 119304647, 148102320, 186737708, 238609294, 286331153,
];

/// struct load_weight: the scaled weight and its cached inverse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadWeight {
    pub weight: u64,
    pub inv_weight: u32,
}

impl LoadWeight {
    /// set_load_weight for a fair task of nice `nice`.
    pub fn from_nice(nice: i32) -> Self {
        let i = (nice.clamp(-20, 19) + 20) as usize;
        LoadWeight {
            weight: scale_load(PRIO_TO_WEIGHT[i]),
            inv_weight: PRIO_TO_WMULT[i],
        }
    }

    /// SCHED_IDLE's weight (WEIGHT_IDLEPRIO 3, WMULT_IDLEPRIO).
    pub fn idle() -> Self {
        LoadWeight {
            weight: scale_load(3),
            inv_weight: 1_431_655_765,
        }
    }

    /// update_load_set + __update_inv_weight: a group entity's new weight.
    pub fn set(weight: u64) -> Self {
        let w = scale_load_down(weight);
        let inv = if w >= WMULT_CONST {
            1
        } else {
            WMULT_CONST.checked_div(w).unwrap_or(WMULT_CONST)
        };
        LoadWeight {
            weight,
            inv_weight: inv as u32,
        }
    }

    /// The unscaled (table) weight used by EEVDF averages and PELT.
    pub fn unscaled(&self) -> u64 {
        scale_load_down(self.weight)
    }
}

/// scale_load
pub fn scale_load(w: u64) -> u64 {
    w << SCHED_FIXEDPOINT_SHIFT
}

/// scale_load_down: never below 2 for a non-zero weight.
pub fn scale_load_down(w: u64) -> u64 {
    if w == 0 {
        0
    } else {
        (w >> SCHED_FIXEDPOINT_SHIFT).max(2)
    }
}

fn fls(x: u32) -> u32 {
    32 - x.leading_zeros()
}

/// __calc_delta: delta * weight / lw.weight with the kernel's 32-bit
/// inverse-weight fixed point (the result differs from exact division in the
/// last bits exactly as the kernel's does).
pub fn calc_delta(delta: u64, weight: u64, lw: &LoadWeight) -> u64 {
    let mut fact = scale_load_down(weight);
    let mut shift = WMULT_SHIFT;
    let hi = (fact >> 32) as u32;
    if hi != 0 {
        let fs = fls(hi);
        shift -= fs;
        fact >>= fs;
    }
    fact = (fact as u32 as u64) * lw.inv_weight as u64;
    let hi = (fact >> 32) as u32;
    if hi != 0 {
        let fs = fls(hi);
        shift -= fs;
        fact >>= fs;
    }
    ((delta as u128 * fact as u128) >> shift) as u64
}

/// calc_delta_fair: wall time to virtual time for an entity of weight `lw`.
pub fn calc_delta_fair(delta: u64, lw: &LoadWeight) -> u64 {
    if lw.weight != NICE_0_LOAD {
        calc_delta(delta, NICE_0_LOAD, lw)
    } else {
        delta
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice0_is_identity_and_others_scale_by_weight() {
        let n0 = LoadWeight::from_nice(0);
        assert_eq!(n0.weight, NICE_0_LOAD);
        assert_eq!(calc_delta_fair(1_000_000, &n0), 1_000_000);
        // nice 5 (weight 335): virtual time runs 1024/335 ≈ 3.057x faster.
        let n5 = LoadWeight::from_nice(5);
        let v = calc_delta_fair(1_000_000, &n5);
        assert!((3_056_000..3_058_000).contains(&v), "{v}");
        // nice -20: much slower.
        let hi = LoadWeight::from_nice(-20);
        let v = calc_delta_fair(88_761_000, &hi);
        assert!((1_023_900..1_024_100).contains(&v), "{v}");
    }

    #[test]
    fn wmult_is_inverse_of_weight() {
        for i in 0..40 {
            let prod = PRIO_TO_WEIGHT[i] * PRIO_TO_WMULT[i] as u64;
            let err = (prod as i64 - (1i64 << 32)).abs();
            assert!(err < PRIO_TO_WEIGHT[i] as i64, "nice {}", i as i32 - 20);
        }
    }
}
