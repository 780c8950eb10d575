//! Folded reads (kernel/fold.rs): a reader's run of reads of queued
//! messages is one event, and a fold cut at any instant leaves the
//! machine as the unfolded model would have it then. The run made in one
//! go, which folds freely, must end exactly as the run with folding off,
//! and as the run stopped and continued every few microseconds (each stop
//! cuts every fold, undoing the reads stamped after it).

use schedlab::kernel::features::KernelConfig;
use schedlab::kernel::pipe::Pipe;
use schedlab::kernel::task::Pid;
use schedlab::kernel::unix_sock::UnixSock;
use schedlab::kernel::Kernel;
use schedlab::machine;
use schedlab::workload::program::{Dist, Op};
use schedlab::workload::{Builder, TaskSpec};
use std::rc::Rc;

const US: u64 = 1_000;

/// A writer on CPU 0 sends 200 messages, sleeps, sends 200 more; a
/// reader on CPU 1 sleeps while the first 200 queue, then reads all 400:
/// it folds its reads of the backlog and the writer's second burst cuts
/// the fold. `pipe` picks a pipe instead of a socket.
fn writer_and_reader(pipe: bool) -> (Kernel, Vec<Pid>) {
    let mut k = Kernel::new(
        machine::from_spec("xeon-8269cy").unwrap(),
        KernelConfig::default(),
    );
    let (send, recv) = if pipe {
        k.pipes.push(Pipe::default());
        (
            Op::PipeWrite {
                pipe: 0,
                bytes: 100,
            },
            Op::PipeRead {
                pipe: 0,
                bytes: 100,
            },
        )
    } else {
        k.socks.push(UnixSock::default());
        (
            Op::SockSend {
                sock: 0,
                bytes: 100,
            },
            Op::SockRecv {
                sock: 0,
                bytes: 100,
            },
        )
    };
    let burst = [Op::Loop { count: 200 }, send, Op::EndLoop];
    let mut writer = burst.to_vec();
    writer.push(Op::Sleep(Dist::Fixed(300 * US)));
    writer.extend(burst);
    writer.push(Op::Exit);
    let reader = vec![
        Op::Sleep(Dist::Fixed(200 * US)),
        Op::Loop { count: 400 },
        recv,
        Op::EndLoop,
        Op::Exit,
    ];
    let mut b = Builder::new(0, 1);
    let mut pids = Vec::new();
    for (cpu, ops) in [(0, writer), (1, reader)] {
        let p = b.task(
            &mut k,
            TaskSpec {
                comm: "t",
                group_of: None,
                nice: 0,
                allowed: Some(vec![cpu]),
                ops: Rc::from(ops),
            },
        );
        b.launch(&mut k, p);
        pids.push(p);
    }
    (k, pids)
}

/// What the run did: its end, each task's CPU time and switches, and the
/// cost counters the reads feed.
fn outcome(k: &Kernel, pids: &[Pid]) -> Vec<u64> {
    let mut v = vec![k.now, k.stats.ipc_line_ns, k.stats.ipc_lock_wait_ns];
    for &p in pids {
        let t = &k.tasks[p];
        v.extend([t.se.sum_exec_runtime, t.stats.nvcsw, t.stats.nivcsw]);
    }
    v
}

/// The run made in one go; `unfolded`: with the syscalls traced, which
/// turns folding off (each read's sys_enter and sys_exit have instants).
fn run_whole(pipe: bool, unfolded: bool) -> (Vec<u64>, u64) {
    let (mut k, pids) = writer_and_reader(pipe);
    k.syscalls = unfolded;
    k.run(None).unwrap();
    k.finish();
    (outcome(&k, &pids), k.events.popped)
}

/// The run stopped every `step` ns: each stop cuts the folds running.
fn run_stepped(pipe: bool, step: u64) -> Vec<u64> {
    let (mut k, pids) = writer_and_reader(pipe);
    let mut at = step;
    while k.alive > 0 {
        k.run(Some(at)).unwrap();
        assert_eq!(k.folds_live, 0, "a stop cuts every fold");
        at += step;
    }
    k.finish();
    outcome(&k, &pids)
}

#[test]
fn reads_of_a_backlog_fold_and_a_cut_fold_ends_as_the_unfolded_run() {
    for pipe in [false, true] {
        let (whole, events) = run_whole(pipe, false);
        let (unfolded, unfolded_events) = run_whole(pipe, true);
        assert_eq!(whole, unfolded, "pipe {pipe}: folding changed the run");
        // The reader's backlog of 200 reads took far fewer events.
        assert!(
            events + 150 < unfolded_events,
            "pipe {pipe}: {events} events folded, {unfolded_events} unfolded"
        );
        for step in [3 * US + 7, 11 * US + 3, 50 * US] {
            assert_eq!(
                run_stepped(pipe, step),
                whole,
                "pipe {pipe}: stopped every {step} ns"
            );
        }
    }
}
