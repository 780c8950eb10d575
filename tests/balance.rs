//! The load balancer, should_we_balance's switch, stress-ng's duty cycle and
//! the command-line contract of issue 5.

mod common;
use common::schedlab;

use schedlab::kernel::features::KernelConfig;
use schedlab::kernel::preempt::{Cause, Req};
use schedlab::kernel::task::Pid;
use schedlab::kernel::tracepoint::PlaceWhy;
use schedlab::kernel::Kernel;
use schedlab::machine;
use schedlab::workload::params::Params;
use schedlab::workload::program::{Dist, Op};
use schedlab::workload::{Builder, TaskSpec, Workload};
use std::rc::Rc;

const MS: u64 = 1_000_000;

fn hog(k: &mut Kernel, b: &mut Builder) -> Pid {
    let p = b.task(
        k,
        TaskSpec {
            comm: "hog",
            group_of: None,
            nice: 0,
            allowed: None,
            ops: Rc::from(vec![
                Op::Loop { count: 0 },
                Op::Run(Dist::Fixed(50 * MS)),
                Op::EndLoop,
            ]),
        },
    );
    b.launch(k, p);
    p
}

#[test]
fn balancer_spreads_tasks_piled_on_one_cpu() {
    let mut k = Kernel::new(
        machine::from_spec("smp:cpus=8,smt=2").unwrap(),
        KernelConfig::default(),
    );
    k.check = true;
    let mut b = Builder::new(0, 1);
    let tasks: Vec<Pid> = (0..8).map(|_| hog(&mut k, &mut b)).collect();
    // Pile every task onto CPU 0 before anything runs.
    for &p in &tasks {
        let cpu = k.tasks[p].cpu;
        if cpu != 0 {
            k.move_queued_task(p, cpu, 0);
        }
    }
    k.run(Some(2_000 * MS)).unwrap();
    k.finish();
    for &p in &tasks {
        let ran = k.tasks[p].se.sum_exec_runtime;
        assert!(ran > 1_200 * MS, "task {p} ran only {ran} ns of 2 s");
    }
    let pulled = k.stats.idle_balance_pulls + k.stats.newidle_pulls;
    assert!(pulled >= 7, "only {pulled} pulls");
    assert!(k.lb.nohz_kicks > 0);
    assert_eq!(k.lb.wasted_episodes, 0);
}

/// Run 24 stress-ng workers on power10-96 with should_we_balance free of
/// cost, so the only difference between the variants is the scan itself.
fn swb_run(skip: bool) -> Kernel {
    let mut m = machine::from_spec("power10-96").unwrap();
    m.cost.sis_scan_per_cpu_ns = 0;
    let mut cfg = KernelConfig::default();
    cfg.features.set("SWB_SMT_SKIP", skip).unwrap();
    let mut k = Kernel::new(m, cfg);
    let w = Workload::parse(
        &Params::parse_spec("stress-ng:cpu=40,cpu-load=60,op-time=0.5ms..1.5ms").unwrap(),
    )
    .unwrap();
    let mut b = Builder::new(0, 3);
    w.build(&mut k, &mut b);
    k.run(Some(1_500 * MS)).unwrap();
    k.finish();
    k
}

#[test]
fn swb_smt_skip_changes_the_scan_not_the_decisions() {
    let (before, after) = (swb_run(false), swb_run(true));
    assert_eq!(before.lb.swb.calls, after.lb.swb.calls);
    assert!(before.lb.swb.calls > 100);
    assert!(
        after.lb.swb.cpus_visited < before.lb.swb.cpus_visited,
        "{} vs {}",
        after.lb.swb.cpus_visited,
        before.lb.swb.cpus_visited
    );
    assert_eq!(before.stats.cpu_migrations, after.stats.cpu_migrations);
    assert_eq!(before.schedstat_text(), after.schedstat_text());
}

#[test]
fn stress_ng_duty_cycle_holds_its_load() {
    for (load, spec) in [(30.0, "smp:cpus=2"), (70.0, "smp:cpus=2")] {
        let mut k = Kernel::new(machine::from_spec(spec).unwrap(), KernelConfig::default());
        let w = Workload::parse(
            &Params::parse_spec(&format!(
                "stress-ng:cpu=1,cpu-load={load},cpu-ops=2000,cpu-load-slice=16"
            ))
            .unwrap(),
        )
        .unwrap();
        let mut b = Builder::new(0, 1);
        w.build(&mut k, &mut b);
        k.run(None).unwrap();
        let r = w.report(&k, &b.tasks);
        let used = r.fields["cpu_used_per_instance_pct"].as_f64().unwrap();
        assert!((used - load).abs() < 3.0, "-l {load}: {used}% used");
        assert_eq!(r.fields["bogo_ops"], 2000);
    }
}

/// The CPUs whose run queue the balancer's group statistics read in the
/// first ticks of `cpus` CPUs running one periodic task each: every CPU's
/// first balance is due at the same tick, over one flat LLC of `cpus`
/// one-CPU groups.
fn first_ticks_cpus_read(cpus: usize) -> u64 {
    let mut k = Kernel::new(
        machine::from_spec(&format!("smp:cpus={cpus}")).unwrap(),
        KernelConfig::default(),
    );
    let spec = format!("periodic:tasks={cpus}");
    let w = Workload::parse(&Params::parse_spec(&spec).unwrap()).unwrap();
    let mut b = Builder::new(0, 1);
    w.build(&mut k, &mut b);
    let end = 2 * k.tick_ns;
    k.run(Some(end)).unwrap();
    k.lb.cpus_read
}

#[test]
fn first_tick_balance_reads_each_cpu_a_few_times_not_once_per_balancer() {
    // n balances of n groups each: only a group changed since an earlier
    // balance of the same instant is read again, so the reads grow with n
    // (4× from 256 to 1024 CPUs), not with n² (16×).
    let (small, big) = (first_ticks_cpus_read(256), first_ticks_cpus_read(1024));
    assert!(small >= 256, "every CPU is read at least once: {small}");
    assert!(big <= 5 * small, "{small} reads at 256 CPUs, {big} at 1024");
}

#[test]
fn bad_topology_flags_and_affinity_exit_2() {
    let cases: [(&[&str], &str); 3] = [
        (
            &["run", "--machine", "smp:cpus=7,smt=2", "-w", "periodic"],
            "does not split",
        ),
        (
            &[
                "run",
                "--machine",
                "snb-32",
                "-w",
                "periodic",
                "--set",
                "kernel.domain.MC.flags=+SD_BOGUS",
            ],
            "unknown domain flag `SD_BOGUS`",
        ),
        (
            &["run", "--machine", "vm-2", "-w", "stress-ng:cpu=2,cpus=0-4"],
            "names CPU 2",
        ),
    ];
    for (args, want) in cases {
        let (rc, out, err) = schedlab(args);
        assert_eq!(rc, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?} printed {out}");
    }
}

#[test]
fn domains_schedstat_and_balance_json() {
    let (rc, out, _) = schedlab(&["machines", "--domains", "power10-96"]);
    assert_eq!(rc, 0);
    assert!(out.contains(" domain-1: span=0-47 level=MC"), "{out}");
    assert!(
        out.contains("domain2 PKG ffffffff,ffffffff,ffffffff"),
        "{out}"
    );
    let dir = std::env::temp_dir().join(format!("schedlab-balance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ss, js) = (dir.join("schedstat"), dir.join("out.json"));
    let (rc, out, err) = schedlab(&[
        "run",
        "--machine",
        "power10-96",
        "-w",
        "stress-ng:cpu=48,cpu-load=100",
        "--duration",
        "300ms",
        "--check",
        "--schedstat",
        ss.to_str().unwrap(),
        "--json",
        js.to_str().unwrap(),
    ]);
    assert_eq!(rc, 0, "{err}");
    assert!(out.contains("avg = ") && out.contains("nsecs"), "{out}");
    let text = std::fs::read_to_string(&ss).unwrap();
    assert!(text.starts_with("version 17\ntimestamp "));
    let dom: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("domain1 "))
        .unwrap()
        .split(' ')
        .collect();
    assert_eq!(dom.len(), 3 + 45, "{dom:?}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&js).unwrap()).unwrap();
    let swb = &v["balance"]["should_we_balance"];
    assert!(swb["calls"].as_u64().unwrap() > 0);
    assert!(swb["cpus_visited"].as_u64().unwrap() >= swb["calls"].as_u64().unwrap());
    assert!(swb["ns_total"].as_u64().unwrap() > 0);
    assert_eq!(v["balance"]["levels"][1]["level"], "MC");
    assert!(v["balance"]["levels"][0]["lb_count"].as_u64().unwrap() > 0);
}

#[test]
fn two_hogs_on_one_core_are_split_across_cores() {
    let mut k = Kernel::new(
        machine::from_spec("smp:cpus=8,smt=2").unwrap(),
        KernelConfig::default(),
    );
    k.check = true;
    let mut b = Builder::new(0, 1);
    let (a, c) = (hog(&mut k, &mut b), hog(&mut k, &mut b));
    // CPUs 0 and 4 are the two threads of core 0.
    for (p, cpu) in [(a, 0), (c, 4)] {
        let from = k.tasks[p].cpu;
        if from != cpu {
            k.move_queued_task(p, from, cpu);
            k.resched_curr_lazy(cpu, None, Req::HigherClass, Cause::Other);
        }
    }
    k.run(Some(1_000 * MS)).unwrap();
    let core = |p: Pid| k.machine.cpus[k.tasks[p].cpu].core;
    assert_ne!(core(a), core(c), "both hogs still share a core");
    let pushed: u64 = k.level_totals().iter().map(|(_, t)| t.alb_pushed).sum();
    assert!(pushed + k.stats.idle_balance_pulls > 0);
}

/// detach_tasks takes tasks from the tail of rq->cfs_tasks, where each
/// enqueue puts a task at the head: of the workers hackbench's start
/// signal wakes onto one CPU in the same instant, the other CPU's first
/// pull takes the first one woken that is not running (the order of the
/// wakeups, not of the pids).
#[test]
fn newly_idle_pull_takes_the_first_woken_task() {
    let t = common::tmp("lborder.txt").display().to_string();
    let args = [
        "run",
        "--machine",
        "vm-2",
        "-w",
        "hackbench:groups=1,loops=20",
    ];
    let (rc, _, err) = schedlab(&[&args[..], &["-q", "--trace", &t]].concat());
    assert_eq!(rc, 0, "{err}");
    let text = std::fs::read_to_string(&t).unwrap();
    let field = |l: &str, k: &str| -> u32 { common::line_field(l, k).parse().unwrap() };
    let ts = common::line_ts;
    // The wake-all: the instant the parent wakes the most tasks.
    let wakeups: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("hackbench-1000") && l.contains("sched_wakeup:"))
        .collect();
    let mut by_ts = std::collections::BTreeMap::<String, Vec<u32>>::new();
    for l in &wakeups {
        by_ts.entry(ts(l)).or_default().push(field(l, "pid="));
    }
    let (at, woken) = by_ts.iter().max_by_key(|(_, v)| v.len()).unwrap();
    assert!(woken.len() >= 30, "{woken:?}");
    // After it: the tasks switched in, and the first pull between CPUs.
    let after = text
        .lines()
        .skip_while(|l| !(ts(l) == *at && l.contains("sched_wakeup:")))
        .skip(1);
    let mut ran = std::collections::BTreeSet::new();
    let mut pulled = None;
    for l in after {
        if l.contains("sched_switch:") {
            ran.insert(field(l, "next_pid="));
        } else if l.contains("sched_migrate_task:") && !l.contains("hackbench-1000 ") {
            pulled = Some(field(l, "pid="));
            break;
        }
    }
    let expected = woken.iter().find(|p| !ran.contains(p)).copied();
    assert_eq!(pulled, expected, "woken in order {woken:?}, ran {ran:?}");
    // Not merely the lowest pid (what a tie-break by pid would pull).
    assert_ne!(pulled, woken.iter().min().copied());
}

#[test]
fn the_other_node_balances_from_the_first_ticks() {
    // A machine that has been up and idle has every domain's last balance
    // far behind it, so the NUMA level (interval 256 ms on milan-256, and
    // no fork balancing across its nodes) balances as soon as a busy CPU
    // kicks the idle balancer. Its domains were built at t = 0, and the
    // second node stayed idle for 256 ms: all of this short run.
    let v = common::json_of(
        &[
            "run",
            "--machine",
            "milan-256",
            "-w",
            "hackbench:groups=10,loops=50",
        ],
        "numa-first-ticks.json",
    );
    let node1_busy = v["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| (64..128).contains(&c["cpu"].as_u64().unwrap()))
        .filter(|c| c["busy_ns"].as_u64().unwrap() > 0)
        .count();
    assert!(node1_busy >= 32, "{node1_busy} of node 1's 64 cores ran");
}

#[test]
fn newidle_balance_that_never_pulls_is_tried_ever_less() {
    // NI_RANDOM (6.18.5+): newidle balance tries a domain in proportion
    // to its recent success rate. CPU 1 holds two spinners pinned to it
    // (the root domain is overloaded, but nothing can be pulled); CPU 0
    // runs a task that sleeps 200 µs at a time, so it goes newly idle
    // about 5,000 times a second and every try fails.
    let tries = |ni_random: bool| {
        let mut cfg = KernelConfig::default();
        cfg.features.set("NI_RANDOM", ni_random).unwrap();
        let mut k = Kernel::new(machine::from_spec("smp:cpus=2").unwrap(), cfg);
        let mut b = Builder::new(0, 1);
        let mut task = |k: &mut Kernel, cpu: usize, ops: Vec<Op>| {
            common::pinned(k, &mut b, cpu, ops);
        };
        let spin = vec![
            Op::Loop { count: 0 },
            Op::Run(Dist::Fixed(50 * MS)),
            Op::EndLoop,
        ];
        task(&mut k, 1, spin.clone());
        task(&mut k, 1, spin);
        task(
            &mut k,
            0,
            vec![
                Op::Loop { count: 0 },
                Op::Run(Dist::Fixed(20_000)),
                Op::Sleep(Dist::Fixed(200_000)),
                Op::EndLoop,
            ],
        );
        k.run(Some(2_000 * MS)).unwrap();
        k.finish();
        let newidle = schedlab::kernel::sched_domain::IdleType::NewlyIdle as usize;
        k.sd.cpu[0][0].stats.lb[newidle].lb_count
    };
    let (on, off) = (tries(true), tries(false));
    assert!(
        off > 5_000,
        "every idle entry tries without NI_RANDOM: {off}"
    );
    assert!(on * 10 < off, "NI_RANDOM {on} tries, without {off}");
}

/// select_idle_cpu scans the target's LLC from the CPU after the target,
/// wrapping: on smp:cpus=16,llc=2 (LLCs 0-7 and 8-15), a wakee whose
/// previous CPU 13 is busy, with 14, 15, 9 and 10 busy too, lands on 8
/// (after the wrap), not on 11 (the first idle CPU from the LLC's start).
#[test]
fn idle_scan_starts_after_the_target_in_its_llc() {
    let mut k = Kernel::new(
        machine::from_spec("smp:cpus=16,llc=2").unwrap(),
        KernelConfig::default(),
    );
    let mut b = Builder::new(0, 1);
    let p = b.task(
        &mut k,
        TaskSpec {
            comm: "wakee",
            group_of: None,
            nice: 0,
            allowed: None,
            ops: Rc::from(vec![Op::Run(Dist::Fixed(MS))]),
        },
    );
    k.tasks[p].recent_used_cpu = 13;
    for c in [9, 10, 13, 14, 15] {
        k.rqs[c].nr_running = 1;
    }
    let placed = k.select_task_rq(p, 13, 0, 13, None);
    assert_eq!((placed.cpu, placed.why), (8, PlaceWhy::IdleScan));
    assert_eq!(placed.scanned, 3, "14, 15, then 8");
}
