//! Legacy CFS (v6.5 fair.c, before EEVDF) for `kernel.fair = "cfs"`: pick
//! by smallest vruntime, sched_slice from sched_latency, START_DEBIT and
//! GENTLE_FAIR_SLEEPERS placement, check_preempt_tick and the wakeup
//! granularity test. PELT and the rest of the class are shared with EEVDF.

use super::fair::{
    CfsRq, Ents, FairEnv, SeId, SeStore, ENQUEUE_INITIAL, ENQUEUE_MIGRATED, ENQUEUE_WAKEUP,
};
use super::prio::{calc_delta, calc_delta_fair, scale_load_down, LoadWeight, WMULT_CONST};

/// sched_nr_latency: above this many tasks the period stretches.
const SCHED_NR_LATENCY: u64 = 8;

/// The v6.5 tunables after boot scaling (update_sysctl: each normalized
/// value times 1 + ilog2(min(ncpus, 8)) under the default log scaling).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CfsTunables {
    /// sysctl_sched_latency (6 ms normalized)
    pub latency: u64,
    /// sysctl_sched_min_granularity (0.75 ms normalized)
    pub min_granularity: u64,
    /// sysctl_sched_wakeup_granularity (1 ms normalized)
    pub wakeup_granularity: u64,
}

impl CfsTunables {
    pub fn scaled(factor: u64) -> Self {
        CfsTunables {
            latency: 6_000_000 * factor,
            min_granularity: 750_000 * factor,
            wakeup_granularity: 1_000_000 * factor,
        }
    }
}

/// A load_weight for a run queue's summed weight, with its inverse as
/// __update_inv_weight computes it.
fn rq_weight(w: u64) -> LoadWeight {
    let down = scale_load_down(w).max(1);
    LoadWeight {
        weight: w,
        inv_weight: (WMULT_CONST / down).min(WMULT_CONST) as u32,
    }
}

impl CfsRq {
    /// __sched_period
    fn sched_period(nr: u64, tun: &CfsTunables) -> u64 {
        if nr > SCHED_NR_LATENCY {
            nr * tun.min_granularity
        } else {
            tun.latency
        }
    }

    /// sched_slice: the period shared by weight, counting `p` as queued if
    /// it is not yet, and at least min_granularity (BASE_SLICE).
    pub fn sched_slice_legacy(&self, s: &impl SeStore, p: SeId, tun: &CfsTunables) -> u64 {
        let se = s.se(p);
        let mut nr = self.nr_queued as u64;
        let mut load = self.load;
        if !se.on_rq {
            nr += 1;
            load += se.load.weight;
        }
        let slice = calc_delta(
            Self::sched_period(nr, tun),
            se.load.weight,
            &rq_weight(load),
        );
        slice.max(tun.min_granularity)
    }

    /// place_entity (v6.5) with the migration renormalisation of
    /// enqueue_entity: a new task starts one vslice after min_vruntime
    /// (START_DEBIT); a waking one gets at most half a latency of credit
    /// (GENTLE_FAIR_SLEEPERS) and never moves backwards. A task that moved
    /// CPUs keeps its vruntime relative to min_vruntime (`vlag` holds it,
    /// taken when it left; the kernel takes it when it migrates).
    pub fn place_entity_legacy(&self, ents: &mut Ents, p: SeId, flags: u32, env: &FairEnv) {
        let Some(tun) = env.legacy else { return };
        let min = self.min_vruntime;
        if flags & ENQUEUE_INITIAL != 0 {
            let vslice = calc_delta_fair(self.sched_slice_legacy(ents, p, &tun), &ents.se(p).load);
            ents.se_mut(p).vruntime = min + vslice as i64;
            return;
        }
        let se = ents.se_mut(p);
        let mut v = se.vruntime;
        if flags & ENQUEUE_MIGRATED != 0 || flags & ENQUEUE_WAKEUP == 0 {
            v = min + se.vlag;
        }
        if flags & ENQUEUE_WAKEUP != 0 {
            v = v.max(min - (tun.latency / 2) as i64);
        }
        se.vruntime = v;
    }

    /// Leaving the run queue: remember vruntime relative to min_vruntime.
    pub fn dequeue_entity_legacy(&self, ents: &mut Ents, p: SeId) {
        let se = ents.se_mut(p);
        se.vlag = se.vruntime - self.min_vruntime;
    }

    /// pick_next_entity (v6.5, without buddies): the leftmost entity by
    /// vruntime, or curr if it is further left.
    pub fn pick_legacy(&self, s: &impl SeStore) -> Option<SeId> {
        let mut best = self.tree.iter().min_by_key(|&q| (s.se(q).vruntime, q));
        if let Some(c) = self.curr.filter(|&c| s.se(c).on_rq) {
            if best.is_none_or(|b| s.se(c).vruntime < s.se(b).vruntime) {
                best = Some(c);
            }
        }
        best
    }

    /// check_preempt_tick: curr has run its ideal slice, or has run at
    /// least min_granularity and is more than a slice of vruntime ahead of
    /// the leftmost waiting entity.
    pub fn check_preempt_tick(&self, s: &impl SeStore, tun: &CfsTunables) -> bool {
        let Some(c) = self.curr else { return false };
        let se = s.se(c);
        let ideal = self.sched_slice_legacy(s, c, tun);
        let ran = se.sum_exec_runtime - se.prev_sum_exec_runtime;
        if ran > ideal {
            return true;
        }
        if ran < tun.min_granularity {
            return false;
        }
        let Some(first) = self.tree.iter().min_by_key(|&q| (s.se(q).vruntime, q)) else {
            return false;
        };
        let delta = se.vruntime - s.se(first).vruntime;
        delta > ideal as i64
    }

    /// wakeup_preempt_entity == 1: curr is ahead of the wakee by more than
    /// the wakeup granularity in the wakee's virtual time.
    pub fn wakeup_preempt_legacy(&self, s: &impl SeStore, p: SeId, tun: &CfsTunables) -> bool {
        let Some(c) = self.curr else { return false };
        let vdiff = s.se(c).vruntime - s.se(p).vruntime;
        let gran = calc_delta_fair(tun.wakeup_granularity, &s.se(p).load) as i64;
        vdiff > gran
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::prio::{scale_load, NICE_0_LOAD};

    #[test]
    fn tunables_and_period_scale_like_v6_5() {
        // 1 + ilog2(8) = 4 on a machine with 8 or more CPUs.
        let t = CfsTunables::scaled(4);
        assert_eq!(t.latency, 24_000_000);
        assert_eq!(t.min_granularity, 3_000_000);
        assert_eq!(t.wakeup_granularity, 4_000_000);
        assert_eq!(CfsRq::sched_period(8, &t), 24_000_000);
        assert_eq!(CfsRq::sched_period(10, &t), 30_000_000);
        // Two nice-0 tasks share the period evenly.
        let half = calc_delta(24_000_000, NICE_0_LOAD, &rq_weight(2 * scale_load(1024)));
        assert!((11_999_000..=12_000_000).contains(&half), "{half}");
    }
}
