//! The RT class: FIFO above fair, RR slices, placement on the lowest-
//! priority CPU, and bandwidth control of RT hogs.

use schedlab::kernel::features::KernelConfig;
use schedlab::kernel::rt::{Policy, RtBandwidth};
use schedlab::kernel::task::Pid;
use schedlab::kernel::Kernel;
use schedlab::machine;
use schedlab::workload::program::{Dist, Op};
use schedlab::workload::{Builder, TaskSpec};
use std::rc::Rc;

const MS: u64 = 1_000_000;

fn hog(k: &mut Kernel, b: &mut Builder, policy: Policy, prio: u32, cpu: Option<usize>) -> Pid {
    let p = b.task(
        k,
        TaskSpec {
            comm: "hog",
            group_of: None,
            nice: 0,
            allowed: cpu.map(|c| vec![c]),
            ops: Rc::from(vec![
                Op::Loop { count: 0 },
                Op::Run(Dist::Fixed(100 * MS)),
                Op::EndLoop,
            ]),
        },
    );
    k.set_scheduler(p, policy, prio);
    b.launch(k, p);
    p
}

fn kernel(cpus: usize, bw: RtBandwidth) -> Kernel {
    let cfg = KernelConfig {
        rt_bandwidth: bw,
        ..KernelConfig::default()
    };
    let mut k = Kernel::new(
        machine::from_spec(&format!("smp:cpus={cpus}")).unwrap(),
        cfg,
    );
    k.check = true;
    k
}

fn exec(k: &Kernel, p: Pid) -> u64 {
    k.tasks[p].se.sum_exec_runtime
}

#[test]
fn fifo_starves_fair_except_for_the_bandwidth_share() {
    for (bw, lo, hi) in [
        (RtBandwidth::Throttle, 90, 110),
        (RtBandwidth::FairServer, 80, 110),
    ] {
        let mut k = kernel(1, bw);
        let mut b = Builder::new(0, 1);
        let rt = hog(&mut k, &mut b, Policy::Fifo, 50, None);
        let fair = hog(&mut k, &mut b, Policy::Normal, 0, None);
        k.run(Some(2_000 * MS)).unwrap();
        k.finish();
        // 50 ms of each 1 s period go to the fair task.
        let f = exec(&k, fair) / MS;
        assert!(
            (lo..=hi).contains(&f),
            "{bw:?}: fair ran {f} ms, rt {} ms",
            exec(&k, rt) / MS
        );
    }
}

#[test]
fn rr_tasks_of_one_priority_share_in_100ms_slices() {
    let mut k = kernel(1, RtBandwidth::FairServer);
    let mut b = Builder::new(0, 1);
    let a = hog(&mut k, &mut b, Policy::Rr, 10, None);
    let c = hog(&mut k, &mut b, Policy::Rr, 10, None);
    k.run(Some(1_000 * MS)).unwrap();
    k.finish();
    let (ea, ec) = (exec(&k, a) / MS, exec(&k, c) / MS);
    assert!(ea.abs_diff(ec) <= 110, "{ea} vs {ec} ms");
    let sw = k.tasks[a].stats.nivcsw + k.tasks[c].stats.nivcsw;
    assert!((8..=11).contains(&sw), "{sw} RR switches in 1 s");
    // FIFO of the same priority never gives way.
    let mut k = kernel(1, RtBandwidth::FairServer);
    let mut b = Builder::new(0, 1);
    let a = hog(&mut k, &mut b, Policy::Fifo, 10, None);
    let c = hog(&mut k, &mut b, Policy::Fifo, 10, None);
    k.run(Some(1_000 * MS)).unwrap();
    assert!(exec(&k, a) == 0 || exec(&k, c) == 0);
}

#[test]
fn rt_tasks_spread_to_cpus_running_lower_priorities() {
    let mut k = kernel(4, RtBandwidth::FairServer);
    let mut b = Builder::new(0, 1);
    for _ in 0..4 {
        hog(&mut k, &mut b, Policy::Normal, 0, None);
    }
    let rts: Vec<Pid> = (0..3)
        .map(|_| hog(&mut k, &mut b, Policy::Fifo, 20, None))
        .collect();
    k.run(Some(300 * MS)).unwrap();
    k.finish();
    // Each RT task gets a CPU of its own: nearly the whole 300 ms.
    for &p in &rts {
        assert!(
            exec(&k, p) > 280 * MS,
            "rt task ran {} ms",
            exec(&k, p) / MS
        );
    }
    let cpus: std::collections::BTreeSet<usize> = rts.iter().map(|&p| k.tasks[p].cpu).collect();
    assert_eq!(cpus.len(), 3);
}

#[test]
fn a_throttled_rt_hog_alone_idles_out_the_period_and_resumes() {
    let mut k = kernel(1, RtBandwidth::Throttle);
    let mut b = Builder::new(0, 1);
    let rt = hog(&mut k, &mut b, Policy::Fifo, 50, None);
    k.run(Some(2_000 * MS)).unwrap();
    k.finish();
    // 950 ms per period, to within a tick each.
    let ran = exec(&k, rt) / MS;
    assert!((1_880..=1_910).contains(&ran), "ran {ran} ms in 2 s");
    assert!(k.stats.rt_throttled >= 2);
}
