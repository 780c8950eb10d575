//! What a CPU's caches and TLB still hold of a task being switched in.
//!
//! `schedlab calibrate` times a token passed around a ring of K SCHED_BATCH
//! tasks on one CPU (one switch per hop). On the project VM (2026-11-25,
//! AMD EPYC host) a hop costs 2.7 µs with K = 2 and 3.3–3.5 µs from K = 3
//! on: once two or more other tasks ran in between, the incoming task
//! finds its cache footprint evicted. Processes pay 0.65 µs more at K = 7
//! and 8 than at K = 6: x86 keeps six address spaces' TLB entries per CPU
//! (TLB_NR_DYN_ASIDS) and a seventh takes a slot round-robin with a flush
//! (choose_new_asid in arch/x86/mm/tlb.c). The test of the model is
//! context1 with 1–8 pairs on one CPU (tests/timing.rs, docs/model.md).

use super::task::Pid;
use crate::machine::cost::CostModel;

/// Distinct tasks remembered per CPU: from the third one on nothing of
/// the incoming task's footprint is left.
const RECENT: usize = 3;

/// How much of the incoming task's cache footprint a CPU still holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Warmth {
    /// It ran here last, or just before the task it replaces.
    Hot,
    /// Two other tasks ran here since.
    Warm,
    /// Three or more did, or it never ran here.
    Cold,
}

/// Per-CPU footprint state.
#[derive(Clone, Debug, Default)]
pub struct Footprint {
    /// The last distinct tasks to run here, most recent first.
    recent: [Option<Pid>; RECENT],
    /// cpu_tlbstate.ctxs[]: the address space each dynamic ASID holds
    /// (None: init_mm's or unused).
    asids: Vec<Option<u32>>,
    /// cpu_tlbstate.next_asid: the slot the next miss takes.
    next_asid: usize,
}

impl Footprint {
    /// `p` is switched in: how warm this CPU's caches are for it.
    pub fn switch_in(&mut self, p: Pid) -> Warmth {
        let pos = self.recent.iter().position(|&q| q == Some(p));
        let end = pos.unwrap_or(RECENT - 1);
        self.recent.copy_within(0..end, 1);
        self.recent[0] = Some(p);
        match pos {
            Some(0 | 1) => Warmth::Hot,
            Some(2) => Warmth::Warm,
            _ => Warmth::Cold,
        }
    }

    /// choose_new_asid for a switch_mm to `mm` on a CPU with `nr` dynamic
    /// ASIDs (0: they never run out): whether the mm still holds one, so
    /// that its TLB entries survive; else it takes the next slot in turn.
    pub fn switch_mm(&mut self, mm: u32, nr: usize) -> bool {
        if nr == 0 {
            return true;
        }
        if self.asids.len() != nr {
            // Slot 0 is init_mm's at boot; allocation starts at 1.
            self.asids = vec![None; nr];
            self.next_asid = 1 % nr;
        }
        if self.asids.contains(&Some(mm)) {
            return true;
        }
        self.asids[self.next_asid] = Some(mm);
        self.next_asid = (self.next_asid + 1) % nr;
        false
    }

    /// What a switch-in costs on this CPU beyond the register switch, as
    /// context_switch prices it (`Kernel::switch_cost` for the model's own
    /// switches, the replay's `switch_costs` for a trace's): switch_mm
    /// where the CPU has another address space loaded (`loaded`, u32::MAX:
    /// none), with a TLB flush where `mm` lost its ASID; then task `p`'s
    /// footprint: pulled over from `last` after a migration to `cpu`
    /// (`refill(last)`), or what the tasks run here since evicted. Updates
    /// `loaded` and the footprint.
    #[inline]
    pub fn switch_in_ns(
        &mut self,
        c: &CostModel,
        loaded: &mut u32,
        (p, mm): (Pid, u32),
        last: Option<usize>,
        cpu: usize,
        refill: impl FnOnce(usize) -> u64,
    ) -> u64 {
        let mut ns = 0;
        if *loaded != mm {
            ns += c.mm_switch_ns;
            if !self.switch_mm(mm, c.tlb_dyn_asids as usize) {
                ns += c.tlb_asid_miss_ns;
            }
            *loaded = mm;
        }
        let warmth = self.switch_in(p);
        ns + match last {
            Some(from) if from != cpu => refill(from),
            Some(_) => match warmth {
                Warmth::Hot => 0,
                Warmth::Warm => c.switch_cache_warm_ns,
                Warmth::Cold => c.switch_cache_cold_ns,
            },
            None => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One lap of a ring of `k` tasks, `laps` times: the last lap's warmths.
    fn ring(k: usize, laps: usize) -> Vec<Warmth> {
        let mut f = Footprint::default();
        let mut w = Vec::new();
        for _ in 0..laps {
            w = (0..k).map(|p| f.switch_in(p)).collect();
        }
        w
    }

    #[test]
    fn a_ring_is_hot_at_two_warm_at_three_cold_from_four() {
        assert!(ring(2, 3).iter().all(|&w| w == Warmth::Hot));
        assert!(ring(3, 3).iter().all(|&w| w == Warmth::Warm));
        assert!(ring(4, 3).iter().all(|&w| w == Warmth::Cold));
        assert!(ring(40, 3).iter().all(|&w| w == Warmth::Cold));
        let mut f = Footprint::default();
        assert_eq!(f.switch_in(7), Warmth::Cold);
        assert_eq!(f.switch_in(7), Warmth::Hot);
    }

    #[test]
    fn six_address_spaces_keep_their_asids_a_seventh_flushes_every_switch() {
        let laps = |k: u32| {
            let mut f = Footprint::default();
            (0..3)
                .flat_map(|_| (0..k).collect::<Vec<_>>())
                .map(|mm| f.switch_mm(mm, 6))
                .collect::<Vec<_>>()
        };
        assert!(laps(6)[6..].iter().all(|&kept| kept));
        assert!(laps(7).iter().all(|&kept| !kept));
        let mut f = Footprint::default();
        assert!((0..100).all(|mm| f.switch_mm(mm, 0)));
    }
}
