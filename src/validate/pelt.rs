//! Replay the recorded intervals through the simulator's own PELT code
//! (crate::kernel::pelt) and read the simulated util_avg at given instants.

use super::timeline::{Kind, Timeline};
use crate::kernel::pelt::{
    attach_entity, init_entity_runnable_average, post_init_entity_util_avg, update_se, SchedAvg,
    SCHED_CAPACITY_SCALE,
};

/// A nice-0 task's table weight.
const NICE_0: u64 = 1024;

/// (on_rq, runnable, running) of a task during a segment of this kind, as
/// __update_load_avg_se sees it.
fn flags(kind: Kind) -> (bool, bool, bool) {
    match kind {
        Kind::Run | Kind::Stolen => (true, true, true),
        Kind::Preempted => (true, true, false),
        Kind::Sleep => (false, false, false),
    }
}

/// A new task attached at `t` on an idle CPU: init_entity_runnable_average,
/// post_init_entity_util_avg (half the spare capacity), attach_entity_load_avg.
fn new_task(t: u64) -> SchedAvg {
    let mut se = SchedAvg::default();
    init_entity_runnable_average(&mut se, NICE_0);
    post_init_entity_util_avg(&mut se, SCHED_CAPACITY_SCALE, 0, 0, NICE_0);
    let mut cfs = SchedAvg {
        last_update_time: t,
        ..SchedAvg::default()
    };
    attach_entity(&mut cfs, &mut se, NICE_0);
    se
}

/// The simulated util_avg at each of `queries`, instants on the clock that
/// `clock` maps CLOCK_MONOTONIC to (the kernel's PELT clock). The task's
/// entity is updated at every segment boundary, as the kernel does at
/// enqueue, dequeue and context switch, and at each query, where the real
/// kernel last updated it. Queries before the first segment give None.
pub fn simulate(tl: &Timeline, clock: impl Fn(u64) -> u64, queries: &[u64]) -> Vec<Option<u64>> {
    let segs: Vec<(u64, u64, Kind)> = tl
        .segments
        .iter()
        .map(|s| (clock(s.start), clock(s.end), s.kind))
        .collect();
    let mut out = vec![None; queries.len()];
    let Some(&(t0, _, _)) = segs.first() else {
        return out;
    };
    let mut order: Vec<usize> = (0..queries.len()).collect();
    order.sort_by_key(|&i| queries[i]);
    let mut se = new_task(t0);
    let mut next = 0;
    for i in order.into_iter().filter(|&i| queries[i] >= t0) {
        let q = queries[i];
        while next < segs.len() && segs[next].1 <= q {
            let (_, end, kind) = segs[next];
            update(&mut se, end, kind);
            next += 1;
        }
        let kind = segs.get(next).map_or(Kind::Sleep, |s| s.2);
        update(&mut se, q, kind);
        out[i] = Some(se.util_avg);
    }
    out
}

/// __update_load_avg_se for a task in state `kind` since its last update.
fn update(se: &mut SchedAvg, now: u64, kind: Kind) {
    let (on_rq, runnable, running) = flags(kind);
    update_se(now, se, NICE_0, on_rq, runnable, running);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::pelt::periodic_util_bounds;

    #[test]
    fn steady_duty_cycle_reaches_the_closed_form() {
        let ms = 1_000_000;
        let mut tl = Timeline::default();
        for c in 0..200 {
            tl.push(Kind::Run, c * 16 * ms, c * 16 * ms + 8 * ms);
            tl.push(Kind::Sleep, c * 16 * ms + 8 * ms, (c + 1) * 16 * ms);
        }
        let last = 199 * 16 * ms;
        let got = simulate(&tl, |t| t, &[last + 8 * ms, last + 16 * ms, 0]);
        let (hi, lo) = periodic_util_bounds(8 * ms, 8 * ms);
        assert!((got[0].unwrap() as f64 - hi).abs() < 8.0, "{got:?} vs {hi}");
        assert!((got[1].unwrap() as f64 - lo).abs() < 8.0, "{got:?} vs {lo}");
        assert_eq!(got[2], Some(512)); // the new task's initial value
    }
}
