//! Legacy CFS (`kernel.fair = "cfs"`): slices from sched_latency, the
//! weight split, and the sleeper credit that lets a waking task preempt.

use schedlab::kernel::features::{FairClass, KernelConfig};
use schedlab::kernel::task::Pid;
use schedlab::kernel::Kernel;
use schedlab::machine;
use schedlab::workload::program::{Dist, Op};
use schedlab::workload::{Builder, TaskSpec};
use std::rc::Rc;

const MS: u64 = 1_000_000;

fn kernel(fair: FairClass) -> Kernel {
    let cfg = KernelConfig {
        fair,
        hz: 1000,
        ..KernelConfig::default()
    };
    let mut k = Kernel::new(machine::from_spec("smp:cpus=1").unwrap(), cfg);
    k.check = true;
    k
}

fn task(k: &mut Kernel, b: &mut Builder, nice: i32, ops: Vec<Op>) -> Pid {
    let p = b.task(
        k,
        TaskSpec {
            comm: "t",
            group_of: None,
            nice,
            allowed: None,
            ops: Rc::from(ops),
        },
    );
    b.launch(k, p);
    p
}

fn hog() -> Vec<Op> {
    vec![
        Op::Loop { count: 0 },
        Op::Run(Dist::Fixed(100 * MS)),
        Op::EndLoop,
    ]
}

#[test]
fn two_hogs_alternate_every_half_latency_and_share_by_weight() {
    let mut k = kernel(FairClass::Cfs);
    let mut b = Builder::new(0, 1);
    let a = task(&mut k, &mut b, 0, hog());
    let c = task(&mut k, &mut b, 0, hog());
    k.run(Some(1_000 * MS)).unwrap();
    k.finish();
    // sched_slice = 6 ms / 2 on one CPU; check_preempt_tick acts at the
    // first 1 ms tick past it: a switch every 3-4 ms.
    let sw = k.tasks[a].stats.nivcsw + k.tasks[c].stats.nivcsw;
    assert!((240..=340).contains(&sw), "{sw} switches");
    // nice 0 vs nice 5: 1024 : 335.
    let mut k = kernel(FairClass::Cfs);
    let mut b = Builder::new(0, 1);
    let a = task(&mut k, &mut b, 0, hog());
    let c = task(&mut k, &mut b, 5, hog());
    k.run(Some(2_000 * MS)).unwrap();
    k.finish();
    let r = k.tasks[a].se.sum_exec_runtime as f64 / k.tasks[c].se.sum_exec_runtime as f64;
    assert!((2.7..3.4).contains(&r), "share {r}");
}

#[test]
fn a_long_sleeper_preempts_with_its_sleeper_credit() {
    let mut k = kernel(FairClass::Cfs);
    let mut b = Builder::new(0, 1);
    task(&mut k, &mut b, 0, hog());
    let s = task(
        &mut k,
        &mut b,
        0,
        vec![
            Op::Loop { count: 0 },
            Op::Sleep(Dist::Fixed(20 * MS)),
            Op::Run(Dist::Fixed(MS / 10)),
            Op::EndLoop,
        ],
    );
    k.run(Some(1_000 * MS)).unwrap();
    // Placed half a latency (3 ms) behind min_vruntime, more than the 1 ms
    // wakeup granularity: every wakeup preempts the hog at once.
    let st = &k.tasks[s].stats;
    assert!(st.wait_max < MS / 2, "waited up to {} ns", st.wait_max);
    assert!(k.stats.preempt.wakeup > 40, "{:?}", k.stats.preempt.wakeup);
}
