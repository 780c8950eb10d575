//! Completions, interrupts and process creation checked through the
//! library and the command line: timeouts, signals, the variants' done
//! counting, interrupts-off time and the 16-bit waiter limit.

mod common;
use common::schedlab;

use schedlab::kernel::completion::{CompletionVariant, SleepState, WaitHow};
use schedlab::kernel::features::KernelConfig;
use schedlab::kernel::irq::{Device, IrqAction};
use schedlab::kernel::noise::NoiseConfig;
use schedlab::kernel::task::{Pid, TaskState};
use schedlab::kernel::Kernel;
use schedlab::machine;
use schedlab::machine::cost::TtwuPath;
use schedlab::workload::program::{Dist, Op};
use schedlab::workload::{Builder, TaskSpec};
use std::rc::Rc;

const MS: u64 = 1_000_000;

fn kernel(spec: &str, variant: CompletionVariant) -> Kernel {
    let cfg = KernelConfig {
        completion: variant,
        ..KernelConfig::default()
    };
    let mut k = Kernel::new(machine::from_spec(spec).unwrap(), cfg);
    k.check = true;
    k
}

/// Two CPUs, noise off (every cost its mean), invariants checked.
fn quiet_two_cpus() -> Kernel {
    let cfg = KernelConfig {
        noise: NoiseConfig {
            enabled: false,
            ..NoiseConfig::default()
        },
        ..KernelConfig::default()
    };
    let mut k = Kernel::new(machine::from_spec("smp:cpus=2").unwrap(), cfg);
    k.check = true;
    k
}

fn task(k: &mut Kernel, b: &mut Builder, ops: Vec<Op>) -> Pid {
    let p = b.task(
        k,
        TaskSpec {
            comm: "t",
            group_of: None,
            nice: 0,
            allowed: None,
            ops: Rc::from(ops),
        },
    );
    b.launch(k, p);
    p
}

fn wait(c: usize, state: SleepState, timeout: Option<u64>) -> Op {
    let how = WaitHow {
        state,
        io: false,
        timeout,
    };
    Op::WaitForCompletion { c, how }
}

#[test]
fn a_timeout_ends_the_wait_at_its_deadline() {
    let mut k = kernel("smp:cpus=2", CompletionVariant::Swait);
    let mut b = Builder::new(0, 1);
    let c = k.completion_new("t");
    task(
        &mut k,
        &mut b,
        vec![wait(c, SleepState::Uninterruptible, Some(3 * MS)), Op::Exit],
    );
    k.run(None).unwrap();
    assert_eq!(k.completions.stats.timeouts, 1);
    assert_eq!(k.completions.stats.completed, 0);
    assert!(k.now >= 3 * MS && k.now < 4 * MS, "ended at {}", k.now);
}

#[test]
fn signals_end_interruptible_and_killable_waits_as_the_kernel_does() {
    let mut k = kernel("smp:cpus=2", CompletionVariant::Swait);
    let mut b = Builder::new(0, 1);
    let c = k.completion_new("t");
    let intr = task(
        &mut k,
        &mut b,
        vec![wait(c, SleepState::Interruptible, None), Op::Exit],
    );
    let kill = task(
        &mut k,
        &mut b,
        vec![wait(c, SleepState::Killable, None), Op::Exit],
    );
    let plain = task(
        &mut k,
        &mut b,
        vec![wait(c, SleepState::Uninterruptible, None), Op::Exit],
    );
    task(
        &mut k,
        &mut b,
        vec![
            Op::Run(Dist::Fixed(MS)),
            Op::Signal {
                target: intr,
                fatal: false,
            },
            Op::Signal {
                target: kill,
                fatal: false,
            },
            Op::Signal {
                target: plain,
                fatal: true,
            },
            Op::Run(Dist::Fixed(MS)),
            // Only the killable waiter is still asleep (the uninterruptible
            // one ignores even SIGKILL); a fatal signal ends its wait.
            Op::Signal {
                target: kill,
                fatal: true,
            },
            Op::Run(Dist::Fixed(MS)),
            Op::Complete { c, all: false },
            Op::Exit,
        ],
    );
    k.run(None).unwrap();
    let st = &k.completions.stats;
    assert_eq!(st.interrupted, 2);
    assert_eq!(
        st.completed, 1,
        "the uninterruptible waiter takes the token"
    );
}

#[test]
fn complete_all_from_an_interrupt_holds_interrupts_off_per_variant() {
    let mut max = vec![];
    for v in [CompletionVariant::Swait, CompletionVariant::SwaitDefer] {
        let mut k = kernel("smp:cpus=8", v);
        let mut b = Builder::new(0, 1);
        let c = k.completion_new("t");
        for _ in 0..32 {
            task(
                &mut k,
                &mut b,
                vec![wait(c, SleepState::Uninterruptible, None), Op::Exit],
            );
        }
        k.irq_device_new(Device {
            name: "dev".into(),
            cpu: 0,
            period: Some(5 * MS),
            latency: 0,
            action: IrqAction::CompleteAll(c),
            fired: 0,
        });
        k.run(Some(20 * MS)).unwrap();
        assert_eq!(k.completions.stats.completed, 32, "{v:?}");
        assert_eq!(
            k.completions.classes[0].waiters[3], 1,
            "one call, 4+ waiters"
        );
        let handler = k.irqs.cpus[0].off[0];
        max.push(handler);
        if v == CompletionVariant::SwaitDefer {
            assert_eq!(k.completions.stats.deferred_wakeups, 31);
        }
    }
    assert!(
        max[1] * 5 < max[0],
        "defer keeps the handler short: {max:?}"
    );
}

#[test]
fn waiters_beyond_sixteen_bits_are_counted_not_fatal() {
    let mut k = kernel("smp:cpus=16", CompletionVariant::SwaitDefer);
    k.check = false;
    let mut b = Builder::new(0, 1);
    let c = k.completion_new("t");
    let n = 32_767 + 100;
    for _ in 0..n {
        task(
            &mut k,
            &mut b,
            vec![wait(c, SleepState::Uninterruptible, None), Op::Exit],
        );
    }
    task(
        &mut k,
        &mut b,
        vec![
            Op::Run(Dist::Fixed(50 * MS)),
            Op::Complete { c, all: true },
            Op::Exit,
        ],
    );
    k.run(Some(500 * MS)).unwrap();
    let st = &k.completions.stats;
    assert_eq!(st.waiters_over_limit, 100);
    assert_eq!(st.completed, 32_767);
    assert_eq!(k.completions.list[c].done, 0);
}

#[test]
fn vfork_parents_wait_for_the_child_to_exit() {
    let mut k = kernel("smp:cpus=4", CompletionVariant::Swait);
    let mut b = Builder::new(0, 1);
    let w = schedlab::workload::Workload::parse(
        &schedlab::workload::params::Params::parse_spec("fork:mode=vfork,loops=50").unwrap(),
    )
    .unwrap();
    w.build(&mut k, &mut b);
    k.run(None).unwrap();
    let st = &k.completions.stats;
    assert_eq!(st.waits, 50);
    assert_eq!(st.complete, 50);
    let class = &k.completions.classes[0];
    assert_eq!(class.waiters[0] + class.no_waiter, 50);
    assert!(st.waits_slept > 0);
}

#[test]
fn bad_variants_and_parameters_exit_2() {
    let (rc, _, err) = schedlab(&[
        "run",
        "--workload",
        "forky:count=10",
        "--set",
        "kernel.completion=swait-later",
    ]);
    assert_eq!(rc, 2);
    assert!(
        err.contains("kernel.completion") && err.contains("swait-defer"),
        "{err}"
    );
    let (rc, _, err) = schedlab(&["run", "--workload", "irq-complete:waiters=2,bogus=1"]);
    assert_eq!(rc, 2);
    assert!(err.contains("bogus"), "{err}");
    let (rc, _, err) = schedlab(&["run", "--workload", "fork:mode=spoon"]);
    assert_eq!(rc, 2);
    assert!(err.contains("fork|vfork|clone"), "{err}");
    let (rc, _, _) = schedlab(&["repro", "completions"]);
    assert_eq!(rc, 2);
}

#[test]
fn irq_complete_json_has_the_completion_section_and_is_deterministic() {
    let dir = std::env::temp_dir().join(format!("schedlab-c-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut seen = vec![];
    for name in ["a.json", "b.json"] {
        let p = dir.join(name);
        let (rc, _, err) = schedlab(&[
            "run",
            "--machine",
            "smp:cpus=8",
            "--workload",
            "irq-complete:waiters=16,period=2ms,all=true",
            "--duration",
            "20ms",
            "--set",
            "kernel.completion=swait-defer",
            "--check",
            "--json",
            p.to_str().unwrap(),
        ]);
        assert_eq!(rc, 0, "{err}");
        seen.push(common::json_without_wall(&p));
    }
    assert_eq!(seen[0], seen[1]);
    let c = &seen[0]["completion"];
    assert_eq!(c["variant"], "swait-defer");
    for key in ["1", "2", "3", "4+"] {
        assert!(c["waiters_hist"][key].is_u64(), "{key}");
    }
    assert!(c["waiters_hist"]["4+"].as_u64().unwrap() > 0);
    for key in ["p50", "p99", "max"] {
        assert!(c["irqs_off_ns"][key].as_u64().unwrap() > 0, "{key}");
    }
}

#[test]
fn kthreads_are_created_parked_and_stopped_through_completions() {
    let mut k = kernel("smp:cpus=4", CompletionVariant::SwaitDefer);
    let mut b = Builder::new(0, 1);
    let w = schedlab::workload::Workload::parse(
        &schedlab::workload::params::Params::parse_spec("kthread:count=20").unwrap(),
    )
    .unwrap();
    w.build(&mut k, &mut b);
    k.run(None).unwrap();
    let names: Vec<&str> = k
        .completions
        .classes
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    for c in &k.completions.classes {
        assert_eq!(c.waiters[0] + c.no_waiter, 20, "{}", c.name);
    }
    assert_eq!(k.completions.stats.completed, 60);
    assert_eq!(k.alive, 0, "kthreadd and every thread exited");
}

/// An interrupt handler's complete() pays for its remote wakeup what a
/// waking task pays (`CostModel::ttwu_waker_ns` for the path taken, plus
/// the IPI): try_to_wake_up has no in_interrupt() branch. Onto a busy CPU
/// the handler takes that CPU's rq lock; onto an idle one it goes through
/// the wakelist.
#[test]
fn an_interrupt_pays_for_a_remote_wakeup_what_a_task_does() {
    for busy in [true, false] {
        let mut k = quiet_two_cpus();
        let mut b = Builder::new(0, 1);
        let c = k.completion_new("t");
        let waiter = vec![wait(c, SleepState::Uninterruptible, None), Op::Exit];
        common::pinned(&mut k, &mut b, 1, waiter);
        if busy {
            let hog = vec![Op::Run(Dist::Fixed(50 * MS)), Op::Exit];
            common::pinned(&mut k, &mut b, 1, hog);
        }
        k.irq_device_new(Device {
            name: "dev".into(),
            cpu: 0,
            period: Some(5 * MS + 300_000),
            latency: 0,
            action: IrqAction::Complete(c),
            fired: 0,
        });
        k.run(Some(10 * MS)).unwrap();
        assert_eq!(k.completions.stats.completed, 1, "busy {busy}");
        let cost = &k.machine.cost;
        let path = if busy {
            TtwuPath::RemoteRq
        } else {
            TtwuPath::Wakelist {
                line_ns: k.machine.line_transfer_ns(0, 1),
            }
        };
        assert_eq!(k.stats.ttwu_wakelist, u64::from(!busy), "busy {busy}");
        // The busy CPU gets a reschedule IPI; the idle one polls
        // (TIF_POLLING_NRFLAG) and needs none.
        let ipi = if busy { cost.ipi_send_ns } else { 0 };
        let half = cost.irq_entry_exit_ns / 2;
        assert_eq!(
            k.irqs.cpus[0].off[0],
            2 * half + cost.ttwu_waker_ns(path) + ipi,
            "busy {busy}"
        );
    }
}

/// complete() onto a busy CPU sends one reschedule IPI, paid once by its
/// sender, as try_to_wake_up's other callers pay it (`count_ipi`): a
/// waking task in its overhead and its interrupts-off section; an
/// interrupt handler in its own time, with nothing left on the task it
/// interrupted.
#[test]
fn complete_pays_for_its_ipi_once() {
    for from_task in [true, false] {
        let mut k = quiet_two_cpus();
        let mut b = Builder::new(0, 1);
        let c = k.completion_new("t");
        let mut pinned =
            |k: &mut Kernel, cpu, nice, ops| common::pinned_nice(k, &mut b, cpu, nice, ops);
        let hog = || vec![Op::Run(Dist::Fixed(50 * MS)), Op::Exit];
        let waker = pinned(&mut k, 0, 0, hog());
        let waiter = pinned(
            &mut k,
            1,
            0,
            vec![wait(c, SleepState::Uninterruptible, None), Op::Exit],
        );
        pinned(&mut k, 1, 19, hog());
        k.run(Some(5 * MS + 300_000)).unwrap();
        assert_eq!(k.tasks[waiter].state, TaskState::Interruptible);
        assert_eq!(k.rqs[0].curr, Some(waker));
        let (before, ipis) = (k.tasks[waker].prog.overhead, k.stats.ipis_sent);
        let ns = if from_task {
            k.complete_from_task(c, false, 0, waker);
            *k.irqs.cpus[0]
                .off
                .last()
                .expect("an interrupts-off section")
        } else {
            let (woken, ns) = k.wake_timed(waiter, 0, None);
            assert!(woken);
            ns
        };
        assert_eq!(k.stats.ipis_sent - ipis, 1, "from_task {from_task}");
        assert_eq!(k.stats.ttwu_wakelist, 0);
        let cost = &k.machine.cost;
        let price = cost.ttwu_waker_ns(TtwuPath::RemoteRq) + cost.ipi_send_ns;
        assert_eq!(ns, price, "from_task {from_task}");
        let charged = k.tasks[waker].prog.overhead - before;
        let expect = if from_task { price } else { 0 };
        assert_eq!(charged, expect, "from_task {from_task}");
    }
}
