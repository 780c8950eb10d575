//! Preemption models: where a need-resched request is honoured, measured by
//! how long a waking task waits next to a CPU hog in kernel or user mode.

use schedlab::kernel::features::KernelConfig;
use schedlab::kernel::preempt::PreemptModel;
use schedlab::kernel::task::{Pid, TaskState};
use schedlab::kernel::Kernel;
use schedlab::machine;
use schedlab::workload::program::{Dist, Op};
use schedlab::workload::{Builder, TaskSpec};
use std::rc::Rc;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

fn task(k: &mut Kernel, b: &mut Builder, ops: Vec<Op>) -> Pid {
    let p = b.task(
        k,
        TaskSpec {
            comm: "t",
            group_of: None,
            nice: 0,
            allowed: Some(vec![0]),
            ops: Rc::from(ops),
        },
    );
    b.launch(k, p);
    p
}

/// A hog running `hog` forever next to a task that sleeps 1 ms and runs
/// 50 µs, on one CPU for 1 s. Returns the kernel, the sleeper's mean
/// run-queue wait and the hog.
fn hog_and_sleeper(model: PreemptModel, hog: Op) -> (Kernel, u64, Pid) {
    let mut cfg = KernelConfig {
        preempt: model,
        ..KernelConfig::default()
    };
    // Without RUN_TO_PARITY the sleeper's wakeup preempts the hog (it has
    // positive lag and an earlier deadline); with it, the hog keeps its
    // slice until the tick in every model.
    cfg.features.set("RUN_TO_PARITY", false).unwrap();
    let mut k = Kernel::new(machine::from_spec("smp:cpus=1").unwrap(), cfg);
    k.check = true;
    let mut b = Builder::new(0, 1);
    let h = task(
        &mut k,
        &mut b,
        vec![Op::Loop { count: 0 }, hog, Op::EndLoop],
    );
    let s = task(
        &mut k,
        &mut b,
        vec![
            Op::Loop { count: 0 },
            Op::Sleep(Dist::Fixed(MS)),
            Op::Run(Dist::Fixed(50 * US)),
            Op::EndLoop,
        ],
    );
    k.run(Some(1_000 * MS)).unwrap();
    k.finish();
    let st = &k.tasks[s].stats;
    let wait = st.wait_sum / st.wait_count.max(1);
    (k, wait, h)
}

fn kernel_hog(cond_resched: u64, atomic: bool) -> Op {
    Op::KernelRun {
        dist: Dist::Fixed(100 * MS),
        cond_resched,
        atomic,
    }
}

#[test]
fn a_kernel_hog_is_preempted_only_where_the_model_allows() {
    use PreemptModel::*;
    // No preemption point inside 100 ms of kernel work under none and
    // voluntary: the sleeper waits for the section to end.
    for m in [None, Voluntary] {
        let (_, wait, _) = hog_and_sleeper(m, kernel_hog(0, false));
        assert!(wait > 50 * MS, "{m:?}: waited only {wait} ns");
    }
    // Full preemption: the timer interrupt's return preempts the hog.
    let (k, wait, hog) = hog_and_sleeper(Full, kernel_hog(0, false));
    assert!(wait < MS, "full: waited {wait} ns");
    assert!(k.stats.preempt.wakeup > 100 && k.stats.preempt.at_irq > 100);
    assert!(k.tasks[hog].stats.nivcsw > 100);
    // cond_resched() every 100 µs bounds the wait under none.
    let (k, wait, _) = hog_and_sleeper(None, kernel_hog(100 * US, false));
    assert!(wait < 500 * US, "none+cond_resched: waited {wait} ns");
    assert!(k.stats.preempt.at_cond_resched > 100);
    // A preempt-disabled section defeats even full preemption.
    let (_, wait, _) = hog_and_sleeper(Full, kernel_hog(0, true));
    assert!(wait > 50 * MS, "atomic: waited only {wait} ns");
}

#[test]
fn lazy_requests_wait_for_the_tick_in_the_kernel() {
    use PreemptModel::*;
    // The wakeup sets only the lazy bit; the kernel hog never returns to
    // user space, so the tick (4 ms at HZ=250) upgrades it.
    for m in [Lazy, AutoNone, AutoVoluntary] {
        let (k, wait, _) = hog_and_sleeper(m, kernel_hog(0, false));
        assert!(
            wait > MS && wait <= 4 * MS + 100 * US,
            "{m:?}: waited {wait} ns"
        );
        let p = &k.stats.preempt;
        assert!(
            p.lazy_upgrade > 100 && p.lazy_upgrade > 10 * p.wakeup,
            "{m:?}"
        );
        // cond_resched() is a no-op for a lazy request.
        let (_, wait2, _) = hog_and_sleeper(m, kernel_hog(100 * US, false));
        assert!(wait2 > MS, "{m:?}: cond_resched honoured a lazy bit");
    }
    // auto-full uses the full bit: preempted at once.
    let (_, wait, _) = hog_and_sleeper(AutoFull, kernel_hog(0, false));
    assert!(wait < MS, "auto-full: waited {wait} ns");
}

#[test]
fn a_user_mode_hog_is_preempted_at_once_by_a_full_request_only() {
    use PreemptModel::*;
    let user_hog = Op::Run(Dist::Fixed(100 * MS));
    // The timer interrupt returns to user mode: the full bit preempts in
    // every classic model.
    for m in [None, Voluntary, Full] {
        let (_, wait, _) = hog_and_sleeper(m, user_hog);
        assert!(wait < MS, "{m:?}: waited {wait} ns");
    }
    // A lazy bit is honoured on that same return to user: also at once.
    let (k, wait, _) = hog_and_sleeper(Lazy, user_hog);
    assert!(wait < MS, "lazy: waited {wait} ns");
    assert!(k.stats.preempt.resched_latency.count > 100);
    assert!(k.stats.preempt.resched_latency.quantile(0.99) < MS);
}

/// cyclictest at FIFO 80 next to fair kernel-mode hogs on 2 CPUs: its
/// latency is bounded by the hogs' kernel sections under none, by the
/// tick under auto-none (the RT wakeup only sets the lazy bit), and tiny
/// under full.
fn cyclictest_p99(model: &str) -> f64 {
    use schedlab::run::run;
    use schedlab::scenario::{Scenario, Source};
    let text = format!(
        "[machine]\npreset = \"smp:cpus=2\"\n[sim]\nduration = \"500ms\"\ncheck = true\n\
         [kernel]\npreempt = \"{model}\"\n\
         [[workload]]\nkind = \"cyclictest\"\nthreads = 2\n\
         [[workload]]\nkind = \"periodic\"\ntasks = 4\nrun = \"20ms\"\nsleep = \"1ms\"\nmode = \"kernel\"\n"
    );
    let (src, t) = Source::parse(None, text).unwrap();
    let sc = Scenario::resolve(&src, &t).unwrap();
    let out = run(&src, &sc).unwrap();
    let (w, pids) = &out.workloads[0];
    let f = w.report(&out.kernel, pids).fields;
    f["latency_us"]["p99"].as_f64().unwrap()
}

#[test]
fn cyclictest_latency_follows_the_preemption_model() {
    let none = cyclictest_p99("none");
    let auto = cyclictest_p99("auto-none");
    let full = cyclictest_p99("full");
    assert!(none > 10_000.0, "none p99 {none} µs");
    assert!(auto > 1_000.0 && auto <= 4_100.0, "auto-none p99 {auto} µs");
    assert!(full < 50.0, "full p99 {full} µs");
}

/// The child's sched_switch records, as prev_state strings.
struct ChildSwitches(Pid, Rc<std::cell::RefCell<Vec<&'static str>>>);

impl schedlab::kernel::tracepoint::Tracer for ChildSwitches {
    fn event(&mut self, k: &Kernel, ev: &schedlab::kernel::tracepoint::TraceEvent) {
        use schedlab::kernel::tracepoint::TraceEvent;
        if let TraceEvent::Switch {
            prev: Some(p),
            prev_state,
            preempt,
            ..
        } = *ev
        {
            if p == self.0 {
                let s = schedlab::trace::prev_state(k, p, prev_state, preempt);
                self.1.borrow_mut().push(s);
            }
        }
    }
    fn finish(self: Box<Self>, _: &Kernel) -> std::io::Result<()> {
        Ok(())
    }
}

/// A SCHED_FIFO parent forks a fair child on one CPU and waits for it;
/// the child runs 1 ms and exits, waking the parent, which then runs
/// 5 ms. Stopped at 3 ms: the kernel, the child, its switches so far.
fn exit_woken_parent(model: PreemptModel) -> (Kernel, Pid, Vec<&'static str>) {
    use schedlab::kernel::rt::Policy;
    let cfg = KernelConfig {
        preempt: model,
        ..KernelConfig::default()
    };
    let mut k = Kernel::new(machine::from_spec("smp:cpus=1").unwrap(), cfg);
    k.check = true;
    let mut b = Builder::new(0, 1);
    let spec = |ops: Vec<Op>| TaskSpec {
        comm: "t",
        group_of: None,
        nice: 0,
        allowed: Some(vec![0]),
        ops: Rc::from(ops),
    };
    let child = b.task(&mut k, spec(vec![Op::Run(Dist::Fixed(MS)), Op::Exit]));
    task(
        &mut k,
        &mut b,
        vec![
            Op::SetScheduler {
                policy: Some(Policy::Fifo),
                prio: 10,
            },
            Op::Fork { child },
            Op::WaitChild,
            Op::Run(Dist::Fixed(5 * MS)),
            Op::Exit,
        ],
    );
    let seen = Rc::new(std::cell::RefCell::new(Vec::new()));
    k.set_tracer(Some(Box::new(ChildSwitches(child, seen.clone()))));
    k.run(Some(3 * MS)).unwrap();
    let switches = seen.borrow().clone();
    (k, child, switches)
}

/// do_exit → exit_notify wakes the parent under write_lock_irq; the
/// write_unlock_irq's preempt_enable is a preemption point under full
/// preemption (and for a full bit under lazy), none under none/voluntary:
/// there the child dies first. A preempted zombie keeps its load and its
/// place in the alive count until do_task_dead's final switch.
#[test]
fn an_exiting_child_is_preempted_by_the_parent_it_woke_only_where_the_model_allows() {
    use PreemptModel::*;
    for m in [Full, Lazy] {
        let (mut k, c, sw) = exit_woken_parent(m);
        let t = &k.tasks[c];
        assert_eq!(sw, ["R+"], "{m:?}: the child leaves preempted");
        assert!(
            t.exiting && t.state == TaskState::Running && t.on_rq,
            "{m:?}"
        );
        assert!(
            t.se.avg.attached && t.se.avg.load_avg > 0,
            "{m:?}: load kept"
        );
        assert_eq!(k.alive, 2, "{m:?}");
        assert_eq!((t.stats.nivcsw, t.stats.nvcsw), (1, 0), "{m:?}");
        // The parent exits at about 6 ms; the zombie then runs again and dies.
        k.run(Some(20 * MS)).unwrap();
        let t = &k.tasks[c];
        assert_eq!(t.state, TaskState::Dead, "{m:?}");
        assert!(
            !t.se.avg.attached,
            "{m:?}: load removed at the final switch"
        );
        assert_eq!((t.stats.nivcsw, t.stats.nvcsw), (1, 1), "{m:?}");
        assert_eq!(k.alive, 0, "{m:?}");
    }
    for m in [None, Voluntary] {
        let (k, c, sw) = exit_woken_parent(m);
        let t = &k.tasks[c];
        assert_eq!(sw, ["Z"], "{m:?}: the child dies before the parent runs");
        assert!(!t.se.avg.attached, "{m:?}");
        assert_eq!((t.stats.nivcsw, t.stats.nvcsw), (0, 1), "{m:?}");
        assert_eq!(k.alive, 1, "{m:?}");
    }
}
