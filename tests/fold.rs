//! Folded reads and sends (kernel/fold.rs, kernel/fold_send.rs): a
//! reader's run of reads of messages queued on a socket or pipe, or a
//! sender's run of sends or pipe writes that neither block nor wake
//! anyone, is one event, and a fold
//! cut at any instant leaves the machine as the unfolded model would have
//! it then. The run made in one go, which folds freely, must end exactly
//! as the run with folding off, and as the run stopped and continued every
//! few microseconds (each stop cuts every fold, undoing the reads and
//! sends stamped after it).

mod common;
use common::pinned;

use schedlab::kernel::features::KernelConfig;
use schedlab::kernel::pipe::Pipe;
use schedlab::kernel::task::Pid;
use schedlab::kernel::unix_sock::UnixSock;
use schedlab::kernel::Kernel;
use schedlab::machine;
use schedlab::workload::program::{Dist, Op};
use schedlab::workload::Builder;

const US: u64 = 1_000;

/// A writer on CPU 0 sends 200 messages, sleeps, sends 200 more; a
/// reader on CPU 1 sleeps while the first 200 queue, then reads all 400:
/// it folds its reads of the backlog, and the writer's second burst
/// writes into the socket while it folds.
fn writer_and_reader() -> (Kernel, Vec<Pid>) {
    let mut k = Kernel::new(
        machine::from_spec("xeon-8269cy").unwrap(),
        KernelConfig::default(),
    );
    k.socks.push(UnixSock::default());
    let send = Op::SockSend {
        sock: 0,
        bytes: 100,
    };
    let recv = Op::SockRecv {
        sock: 0,
        bytes: 100,
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
        pids.push(pinned(&mut k, &mut b, cpu, ops));
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
fn run_whole(unfolded: bool) -> (Vec<u64>, u64) {
    let (mut k, pids) = writer_and_reader();
    k.syscalls = unfolded;
    k.run(None).unwrap();
    k.finish();
    (outcome(&k, &pids), k.events.popped)
}

/// The run stopped every `step` ns: each stop cuts the folds running.
fn run_stepped(step: u64) -> Vec<u64> {
    let (k, pids) = writer_and_reader();
    stepped(k, &pids, step)
}

/// Run `k` to its end, stopped every `step` ns: the outcome of `pids`.
fn stepped(mut k: Kernel, pids: &[Pid], step: u64) -> Vec<u64> {
    let mut at = step;
    while k.alive > 0 {
        k.run(Some(at)).unwrap();
        assert_eq!(k.folds_live, 0, "a stop cuts every fold");
        at += step;
    }
    k.finish();
    outcome(&k, pids)
}

#[test]
fn reads_of_a_backlog_fold_and_a_cut_fold_ends_as_the_unfolded_run() {
    let (whole, events) = run_whole(false);
    let (unfolded, unfolded_events) = run_whole(true);
    assert_eq!(whole, unfolded, "folding changed the run");
    // The reader's backlog of 200 reads took far fewer events.
    assert!(
        events + 150 < unfolded_events,
        "{events} events folded, {unfolded_events} unfolded"
    );
    for step in [3 * US + 7, 11 * US + 3, 50 * US] {
        assert_eq!(run_stepped(step), whole, "stopped every {step} ns");
    }
}

/// How the senders and readers of [`senders_and_readers`] go.
#[derive(Clone, Copy)]
struct Mix {
    senders: usize,
    socks: usize,
    rounds: u64,
    /// The readers sleep a while first and compute after each read.
    lagging: bool,
    /// Over pipes instead of sockets, with messages of this many bytes.
    pipe: bool,
    bytes: u32,
}

/// A backlog: six senders each send to four sockets in turn, 100 rounds;
/// each socket's reader sleeps a while first, so the send buffers fill
/// (the senders block, and a send from another CPU cuts the folds whose
/// stamped skbs might not fit), then reads all 600 messages.
const BACKLOG: Mix = Mix {
    senders: 6,
    socks: 4,
    rounds: 100,
    lagging: true,
    pipe: false,
    bytes: 100,
};

/// Hackbench's pattern: ten senders, twenty sockets, readers keeping up,
/// finding their socket empty while several folds have sends stamped on
/// it later (each becomes an event, and a fold whose send woke a reader
/// may be undone to before it by another reader).
const KEEPING_UP: Mix = Mix {
    senders: 10,
    socks: 20,
    rounds: 20,
    lagging: false,
    pipe: false,
    bytes: 100,
};

/// The backlog over pipes of 4 KiB pages with messages of 1000 bytes:
/// each holds 64, so the writers block on full pipes (and a write from
/// another CPU cuts the folds whose stamped writes might not find a free
/// buffer), and every fourth read takes its page's last bytes (it does
/// not fold: it frees a buffer).
const PIPE_BACKLOG: Mix = Mix {
    pipe: true,
    bytes: 1000,
    ..BACKLOG
};

/// Hackbench's pattern over pipes: readers keeping up, finding their pipe
/// empty while writes are stamped on it later.
const PIPE_KEEPING_UP: Mix = Mix {
    pipe: true,
    ..KEEPING_UP
};

/// The send and the read of `m` on socket or pipe `i`.
fn io(m: Mix, i: usize) -> (Op, Op) {
    let bytes = m.bytes;
    if m.pipe {
        let (send, recv) = (
            Op::PipeWrite { pipe: i, bytes },
            Op::PipeRead { pipe: i, bytes },
        );
        (send, recv)
    } else {
        (
            Op::SockSend { sock: i, bytes },
            Op::SockRecv { sock: i, bytes },
        )
    }
}

/// Senders on CPUs 0.., each sending `rounds` times to every socket in
/// turn, and a reader per socket on the CPUs after them.
fn senders_and_readers(m: Mix) -> (Kernel, Vec<Pid>) {
    let mut k = Kernel::new(
        machine::from_spec("xeon-8269cy").unwrap(),
        KernelConfig::default(),
    );
    for _ in 0..m.socks {
        k.socks.push(UnixSock::default());
        k.pipes.push(Pipe::default());
    }
    let mut sender = vec![Op::Loop { count: m.rounds }];
    sender.extend((0..m.socks).map(|i| io(m, i).0));
    sender.extend([Op::EndLoop, Op::Exit]);
    let mut b = Builder::new(0, 1);
    let mut pids = Vec::new();
    let mut add = |k: &mut Kernel, cpu: usize, ops: Vec<Op>| pids.push(pinned(k, &mut b, cpu, ops));
    for cpu in 0..m.senders {
        add(&mut k, cpu, sender.clone());
    }
    let reads = m.senders as u64 * m.rounds;
    for sock in 0..m.socks {
        // Lagging, socket 0's reader folds its reads; the others compute
        // a while after each read, falling behind or keeping up.
        let lag = m.lagging as u64 * sock as u64;
        let mut reader = vec![
            Op::Sleep(Dist::Fixed(m.lagging as u64 * (100 + 150 * lag) * US)),
            Op::Loop { count: reads },
            io(m, sock).1,
        ];
        if lag > 0 {
            reader.push(Op::Run(Dist::Fixed(300 * lag)));
        }
        reader.extend([Op::EndLoop, Op::Exit]);
        add(&mut k, m.senders + sock, reader);
    }
    (k, pids)
}

#[test]
fn sends_fold_and_a_cut_fold_ends_as_the_unfolded_run() {
    for m in [BACKLOG, KEEPING_UP, PIPE_BACKLOG, PIPE_KEEPING_UP] {
        let run = |unfolded: bool| {
            let (mut k, pids) = senders_and_readers(m);
            k.syscalls = unfolded;
            k.run(None).unwrap();
            k.finish();
            assert_eq!(k.sends_pending, 0, "every stamped skb is read");
            (outcome(&k, &pids), k.events.popped)
        };
        let (whole, events) = run(false);
        let (unfolded, unfolded_events) = run(true);
        assert_eq!(whole, unfolded, "folding changed the run");
        // Most of the sends fold.
        let sends = (m.senders * m.socks) as u64 * m.rounds;
        assert!(
            events + sends / 3 < unfolded_events,
            "{events} events folded, {unfolded_events} unfolded, {sends} sends"
        );
        for step in [3 * US + 7, 11 * US + 3, 50 * US] {
            let (k, pids) = senders_and_readers(m);
            assert_eq!(stepped(k, &pids, step), whole, "stopped every {step} ns");
        }
    }
}
