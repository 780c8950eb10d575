//! The fair deadline server (kernel/dl_server.rs, v6.18): deferred to its
//! zero-laxity time, 50 ms per 1 s period for fair tasks starved by RT or
//! DL tasks, charged with the fair tasks' own running and idle time,
//! competing by EDF with DL tasks, stopped a period after the last fair
//! task left.

use schedlab::kernel::deadline::DlParams;
use schedlab::kernel::features::KernelConfig;
use schedlab::kernel::rt::{Policy, RtBandwidth};
use schedlab::kernel::task::Pid;
use schedlab::kernel::Kernel;
use schedlab::machine;
use schedlab::workload::program::{Dist, Op};
use schedlab::workload::{Builder, TaskSpec};
use std::rc::Rc;

const MS: u64 = 1_000_000;

fn kernel() -> Kernel {
    let cfg = KernelConfig {
        rt_bandwidth: RtBandwidth::FairServer,
        ..KernelConfig::default()
    };
    let mut k = Kernel::new(machine::from_spec("smp:cpus=1").unwrap(), cfg);
    k.check = true;
    k
}

/// A task running `ops` under `policy` (FIFO at priority 50 for RT).
fn task(k: &mut Kernel, b: &mut Builder, policy: Policy, ops: Vec<Op>) -> Pid {
    let spec = TaskSpec {
        comm: "t",
        group_of: None,
        nice: 0,
        allowed: None,
        ops: Rc::from(ops),
    };
    let p = b.task(k, spec);
    k.set_scheduler(p, policy, 50);
    p
}

/// A loop running `run` ms, then sleeping `sleep` ms (none if 0).
fn periodic(run: u64, sleep: u64) -> Vec<Op> {
    let mut ops = vec![Op::Loop { count: 0 }, Op::Run(Dist::Fixed(run * MS))];
    if sleep > 0 {
        ops.push(Op::Sleep(Dist::Fixed(sleep * MS)));
    }
    ops.push(Op::EndLoop);
    ops
}

/// One CPU with a FIFO task running `rt` and a fair one running `fair`,
/// both launched: (kernel, rt, fair).
fn rt_beside_fair(rt: Vec<Op>, fair: Vec<Op>) -> (Kernel, Pid, Pid) {
    let mut k = kernel();
    let mut b = Builder::new(0, 1);
    let rt = task(&mut k, &mut b, Policy::Fifo, rt);
    let fair = task(&mut k, &mut b, Policy::Normal, fair);
    b.launch(&mut k, rt);
    b.launch(&mut k, fair);
    (k, rt, fair)
}

fn exec_ms(k: &Kernel, p: Pid) -> u64 {
    k.tasks[p].se.sum_exec_runtime / MS
}

#[test]
fn a_fifo_hog_leaves_a_fair_task_50ms_per_period_after_950ms_deferred() {
    let (mut k, rt, fair) = rt_beside_fair(periodic(100, 0), periodic(100, 0));
    k.run(Some(940 * MS)).unwrap();
    // Deferred: armed at deadline − runtime = 950 ms, nothing given yet.
    let s = &k.rqs[0].dl.server;
    assert!(
        s.active && s.defer_armed && s.dl.dl_throttled,
        "{s:?} fair {}",
        exec_ms(&k, fair)
    );
    assert_eq!(s.timer_at, Some(950 * MS));
    assert_eq!(exec_ms(&k, fair), 0);
    k.run(Some(1_100 * MS)).unwrap();
    let first = exec_ms(&k, fair);
    assert!((49..=55).contains(&first), "first service {first} ms");
    assert!(k.rqs[0].dl.server.defer_running);
    k.run(Some(5_000 * MS)).unwrap();
    k.finish();
    // Steady state: 50 ms at the start of each period, ~5 % in all.
    let (f, r) = (exec_ms(&k, fair), exec_ms(&k, rt));
    assert!((245..=275).contains(&f), "fair {f} ms, rt {r} ms in 5 s");
    assert!(r >= 4_700, "rt {r} ms");
    assert_eq!(k.stats.rt_throttled, 5, "one server run per period");
}

#[test]
fn a_fair_sleeper_in_the_gaps_of_rt_consumes_the_runtime_itself() {
    // RT leaves 10 ms of every 100 ms: the fair task's own running and the
    // idle time use the server's runtime up before its zero-laxity time,
    // so the server never runs and RT is never preempted.
    let (mut k, rt, fair) = rt_beside_fair(periodic(90, 10), periodic(1, 50));
    k.run(Some(3_000 * MS)).unwrap();
    k.finish();
    assert!(exec_ms(&k, fair) >= 20, "the sleeper ran in the gaps");
    assert_eq!(k.stats.rt_throttled, 0, "the server never ran");
    assert_eq!(k.tasks[rt].stats.nivcsw, 0, "RT never preempted");
    let s = &k.rqs[0].dl.server;
    assert!(s.active && !s.defer_running && !s.queued);
}

#[test]
fn the_server_stops_a_period_after_the_last_fair_task_left() {
    // 60 ms of work: 50 ms in the first server run, 10 in the second.
    let work = vec![Op::Run(Dist::Fixed(60 * MS))];
    let (mut k, rt, fair) = rt_beside_fair(periodic(100, 0), work);
    k.run(Some(2_500 * MS)).unwrap();
    assert_eq!(exec_ms(&k, fair), 60);
    // The pick that found no fair task marked it idle and yielded.
    let s = &k.rqs[0].dl.server;
    assert!(s.active && !s.queued && s.timer_at.is_some());
    k.run(Some(3_100 * MS)).unwrap();
    let s = &k.rqs[0].dl.server;
    assert!(!s.active && !s.queued && s.timer_at.is_none(), "{s:?}");
    let switches = k.tasks[rt].stats.nivcsw;
    k.run(Some(6_000 * MS)).unwrap();
    k.finish();
    assert_eq!(
        k.tasks[rt].stats.nivcsw, switches,
        "no server runs once stopped"
    );
    assert!(exec_ms(&k, rt) >= 5_800);
}

#[test]
fn a_dl_task_with_an_earlier_deadline_runs_before_the_running_server() {
    let mut k = kernel();
    let mut b = Builder::new(0, 1);
    let rt = task(&mut k, &mut b, Policy::Fifo, periodic(100, 0));
    let fair = task(&mut k, &mut b, Policy::Normal, periodic(100, 0));
    let dl = task(&mut k, &mut b, Policy::Normal, periodic(2, 8));
    let params = DlParams {
        runtime: 3 * MS,
        deadline: 10 * MS,
        period: 10 * MS,
    };
    k.set_scheduler_dl(dl, params);
    for p in [rt, fair, dl] {
        b.launch(&mut k, p);
    }
    k.run(Some(1_200 * MS)).unwrap();
    k.finish();
    // The server's deadline (~1.95 s) is later than every DL instance's,
    // so the DL task is never kept waiting by it...
    let w = k.tasks[dl].stats.wait_max;
    assert!(w < MS / 2, "DL task waited {w} ns");
    // ... and the server still gave its 50 ms, spread around the DL runs.
    let f = exec_ms(&k, fair);
    assert!((49..=55).contains(&f), "fair {f} ms");
    assert_eq!(k.stats.rt_throttled, 1);
}
