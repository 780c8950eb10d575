//! SIS_PROP (select_idle_cpu, v5.14-v6.6; seed 000's kernel): the scan of
//! the LLC stops after nr - 1 CPUs, nr being the waking CPU's predicted
//! idle time over its average scan cost; a completed scan is charged to
//! both, a scan stopped by the budget to neither.

use schedlab::kernel::features::KernelConfig;
use schedlab::kernel::task::Pid;
use schedlab::kernel::Kernel;
use schedlab::machine;
use schedlab::workload::program::Op;
use schedlab::workload::{Builder, TaskSpec};
use std::rc::Rc;

/// The waking CPU, the wakee's previous CPU and the one idle CPU: the
/// scan starts at PREV + 1 and reaches IDLE on its 6th visit.
const THIS: usize = 0;
const PREV: usize = 3;
const IDLE: usize = 9;

/// 16 CPUs in one LLC, no SMT (no idle-core search), every CPU busy but
/// IDLE; SIS_PROP on, SIS_UTIL `util`. Returns the kernel and a wakee
/// (built, not launched) last run on PREV.
fn busy_llc(prop: bool, util: bool) -> (Kernel, Pid) {
    let mut cfg = KernelConfig::default();
    cfg.features.set("SIS_PROP", prop).unwrap();
    cfg.features.set("SIS_UTIL", util).unwrap();
    let mut k = Kernel::new(machine::from_spec("smp:cpus=16").unwrap(), cfg);
    let mut b = Builder::new(0, 1);
    let spec = TaskSpec {
        comm: "t",
        group_of: None,
        nice: 0,
        allowed: None,
        ops: Rc::from(vec![Op::Exit]),
    };
    let p = b.task(&mut k, spec);
    k.tasks[p].recent_used_cpu = PREV;
    for c in (0..16).filter(|&c| c != IDLE) {
        k.rqs[c].nr_running = 1;
    }
    (k, p)
}

/// The waking CPU's predicted idle time and its sd_llc's average scan cost.
fn set_prediction(k: &mut Kernel, wake_avg_idle: u64, avg_scan_cost: u64) {
    k.lb.rq[THIS].wake_avg_idle = wake_avg_idle;
    let llc = k.sd.cpu[THIS].len() - 1;
    k.sd.cpu[THIS][llc].avg_scan_cost = avg_scan_cost;
}

fn prediction(k: &Kernel) -> (u64, u64) {
    let llc = k.sd.cpu[THIS].len() - 1;
    (
        k.lb.rq[THIS].wake_avg_idle,
        k.sd.cpu[THIS][llc].avg_scan_cost,
    )
}

/// A wakeup of `p` from THIS with no waker task: no wake_affine, target =
/// PREV. Returns (CPU chosen, CPUs scanned).
fn wake(k: &mut Kernel, p: Pid) -> (usize, u32) {
    let placed = k.select_task_rq(p, PREV, 0, THIS, None);
    (placed.cpu, placed.scanned)
}

#[test]
fn the_scan_stops_at_the_budget_before_the_idle_cpu() {
    // nr = 16 × 375 / (999 + 1) = 6: five CPUs (4..8), IDLE is the sixth.
    let (mut k, p) = busy_llc(true, false);
    set_prediction(&mut k, 375, 999);
    assert_eq!(wake(&mut k, p), (PREV, 5));
    // Stopped by the budget: nothing charged (the kernel returns early).
    assert_eq!(prediction(&k), (375, 999));
    // nr = 16 × 438 / 1000 = 7: six CPUs, the sixth idle.
    set_prediction(&mut k, 438, 999);
    assert_eq!(wake(&mut k, p), (IDLE, 6));
    // The scan's modelled time comes off the prediction and into the cost.
    let time = 6 * k.machine.cost.sis_scan_per_cpu_ns;
    let cost = (999 + (time as i64 - 999) / 8) as u64;
    assert_eq!(prediction(&k), (438 - time.min(438), cost));
}

#[test]
fn a_busy_jiffy_halves_the_prediction_and_the_scan() {
    let (mut k, p) = busy_llc(true, false);
    // 876 ns would allow 16 × 876 / 1000 = 14 CPUs; one jiffy after its
    // stamp it is 438: six CPUs, enough for IDLE.
    set_prediction(&mut k, 876, 999);
    k.now = k.tick_ns;
    let stamp = k.lb.rq[THIS].wake_stamp;
    assert_eq!(wake(&mut k, p).0, IDLE);
    assert_eq!(k.lb.rq[THIS].wake_stamp, stamp + 1);
    // Two jiffies: 219 ns, 16 × 219 / 1000 = 3 < 4, so the floor of 4:
    // three CPUs.
    set_prediction(&mut k, 876, 999);
    k.now = 2 * k.tick_ns;
    k.lb.rq[THIS].wake_stamp = stamp;
    assert_eq!(wake(&mut k, p), (PREV, 3));
}

#[test]
fn without_sis_prop_or_under_sis_util_the_prediction_does_not_limit_the_scan() {
    for (prop, util) in [(false, false), (true, true)] {
        let (mut k, p) = busy_llc(prop, util);
        // An idle LLC's SIS_UTIL budget (nr_idle_scan) is the whole LLC.
        k.nr_idle_scan[0] = 16;
        set_prediction(&mut k, 0, 999);
        assert_eq!(
            wake(&mut k, p),
            (IDLE, 6),
            "SIS_PROP {prop} SIS_UTIL {util}"
        );
    }
}

#[test]
fn a_wakeup_ending_an_idle_period_resets_the_prediction_to_half_avg_idle() {
    let (mut k, _) = busy_llc(true, false);
    k.now = 10 * k.tick_ns;
    let rq = &mut k.lb.rq[IDLE];
    rq.idle_stamp = 1;
    rq.wake_avg_idle = 7;
    let avg_idle = rq.avg_idle;
    k.update_avg_idle(IDLE);
    let rq = &k.lb.rq[IDLE];
    // avg_idle moved an eighth of the way to the 10-jiffy idle period.
    let period = 10 * k.tick_ns - 1;
    let want = (avg_idle as i64 + (period as i64 - avg_idle as i64) / 8) as u64;
    assert_eq!(rq.avg_idle, want.min(2 * rq.max_idle_balance_cost));
    assert_eq!(rq.wake_avg_idle, rq.avg_idle / 2);
    assert_eq!(rq.idle_stamp, 0);
}
