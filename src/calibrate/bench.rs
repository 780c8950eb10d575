//! The microbenchmarks. Each returns per-operation samples in ns (or ps/B
//! where said); the caller takes medians and percentiles. Threads pin
//! themselves to the OS CPUs they are given; the caller checked that
//! pinning works there.

use super::sys::{self, Channel, Policy, SharedMem};
use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::*};
use std::thread;

/// Pin, ignoring failure: the caller checked the CPU, and a protocol half
/// that stopped here would leave its partner waiting forever.
fn pin(cpu: usize) {
    let _ = sys::pin(cpu);
}

/// Time `batches` batches of `per` calls of `op`: ns per call.
pub fn batched(batches: usize, per: usize, mut op: impl FnMut()) -> Vec<f64> {
    (0..batches)
        .map(|_| {
            let t0 = sys::now_ns();
            for _ in 0..per {
                op();
            }
            (sys::now_ns() - t0) as f64 / per as f64
        })
        .collect()
}

/// The single-thread primitives, on `cpu`: (clock read, getppid, futex
/// wake without waiter, futex wait that returns EAGAIN, thread CPU clock).
pub fn null_calls(cpu: usize, batches: usize) -> [Vec<f64>; 5] {
    thread::scope(|s| {
        s.spawn(|| {
            pin(cpu);
            let w = AtomicU32::new(0);
            [
                batched(batches, 1000, || {
                    std::hint::black_box(sys::now_ns());
                }),
                batched(batches, 1000, sys::getppid),
                batched(batches, 1000, || sys::futex_wake(&w)),
                batched(batches, 1000, || sys::futex_wait(&w, 1)),
                batched(batches, 1000, || {
                    std::hint::black_box(sys::thread_cpu_ns());
                }),
            ]
        })
        .join()
        .unwrap_or_default()
    })
}

/// Round trips of a futex ping-pong between two SCHED_BATCH tasks on one
/// CPU (no wakeup preemption: each side wakes the other and then blocks),
/// and the waker's futex_wake time. Threads, or a forked process pair.
pub struct PingPong {
    pub round_trip: Vec<f64>,
    pub wake: Vec<f64>,
}

const WARM: usize = 200;

/// The waking side of the ping-pong: `n` round trips after a warm-up.
fn ping(turn: &AtomicU32, n: usize) -> PingPong {
    let mut starts = Vec::with_capacity(n + 1);
    let mut wake = Vec::with_capacity(n);
    for i in 0..n + WARM {
        let t0 = sys::now_ns();
        turn.store(1, SeqCst);
        sys::futex_wake(turn);
        let t1 = sys::now_ns();
        while turn.load(SeqCst) == 1 {
            sys::futex_wait(turn, 1);
        }
        if i >= WARM {
            starts.push(t0);
            wake.push((t1 - t0) as f64);
        }
    }
    starts.push(sys::now_ns());
    PingPong {
        round_trip: starts.windows(2).map(|w| (w[1] - w[0]) as f64).collect(),
        wake,
    }
}

/// The woken side: answers `n` + warm-up round trips.
fn pong(turn: &AtomicU32, n: usize) {
    for _ in 0..n + WARM {
        while turn.load(SeqCst) == 0 {
            sys::futex_wait(turn, 0);
        }
        turn.store(0, SeqCst);
        sys::futex_wake(turn);
    }
}

pub fn pingpong_threads(cpu: usize, n: usize) -> Result<PingPong, String> {
    let mem = SharedMem::new(4096)?;
    let turn = mem.word(0);
    thread::scope(|s| {
        let b = s.spawn(|| {
            pin(cpu);
            let _ = sys::set_policy(Policy::Batch);
            pong(turn, n)
        });
        let a = s.spawn(|| {
            pin(cpu);
            sys::set_policy(Policy::Batch)?;
            Ok(ping(turn, n))
        });
        let r = a
            .join()
            .map_err(|_| "ping-pong thread panicked".to_string());
        let _ = b.join();
        r?
    })
}

/// The same between two processes (the woken side forked, sharing only
/// the futex page): adds switch_mm to every switch.
pub fn pingpong_processes(cpu: usize, n: usize) -> Result<PingPong, String> {
    let mem = SharedMem::new(4096)?;
    let turn = mem.word(0);
    thread::scope(|s| {
        s.spawn(|| {
            pin(cpu);
            sys::set_policy(Policy::Batch)?;
            let pid = sys::fork_child(|| pong(turn, n))?;
            let r = ping(turn, n);
            sys::wait_child(pid);
            Ok(r)
        })
        .join()
        .map_err(|_| "ping-pong thread panicked".to_string())?
    })
}

/// What the target CPU runs while the wakee sleeps.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Target {
    /// Nothing: the CPU idles for `gap` ns before each wakeup.
    Idle,
    /// A busy loop of this policy.
    Spinner(Policy),
}

/// Remote wakeups: per wakeup, the latency from the waker's timestamp to
/// the wakee's first timestamp after its futex_wait returns, and the
/// waker's futex_wake time.
pub struct Wakeups {
    pub latency: Vec<f64>,
    pub wake: Vec<f64>,
}

/// A task on `to` blocks in futex_wait; a task on `from` sleeps `gap_ns`,
/// stamps the time in shared memory and wakes it; `n` times.
pub fn remote_wakeups(
    from: usize,
    to: usize,
    target: Target,
    gap_ns: u64,
    n: usize,
) -> Result<Wakeups, String> {
    let mem = SharedMem::new(4096)?;
    let (seq, ready, stamp) = (mem.word(0), mem.word(1), mem.u64_at(128));
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        if let Target::Spinner(p) = target {
            let stop = &stop;
            s.spawn(move || {
                pin(to);
                let _ = sys::set_policy(p);
                while !stop.load(Relaxed) {
                    spin_loop();
                }
            });
        }
        let wakee = s.spawn(|| {
            pin(to);
            let mut lat = Vec::with_capacity(n);
            for i in 0..n as u32 {
                ready.store(i + 1, SeqCst);
                while seq.load(SeqCst) == i {
                    sys::futex_wait(seq, i);
                }
                lat.push(sys::now_ns().saturating_sub(stamp.load(SeqCst)) as f64);
            }
            lat
        });
        let waker = s.spawn(|| {
            pin(from);
            sys::tight_timer_slack();
            let mut wake = Vec::with_capacity(n);
            for i in 0..n as u32 {
                while ready.load(SeqCst) != i + 1 {
                    spin_loop();
                }
                if gap_ns < 100_000 {
                    // Short gaps spin: a sleep's own timer wakeup would dwarf them.
                    let until = sys::now_ns() + gap_ns;
                    while sys::now_ns() < until {
                        spin_loop();
                    }
                } else {
                    sys::sleep_ns(gap_ns);
                }
                let t0 = sys::now_ns();
                stamp.store(t0, SeqCst);
                seq.store(i + 1, SeqCst);
                sys::futex_wake(seq);
                wake.push((sys::now_ns() - t0) as f64);
            }
            wake
        });
        let wake = waker.join();
        let latency = wakee.join();
        stop.store(true, Relaxed);
        match (latency, wake) {
            (Ok(latency), Ok(wake)) => Ok(Wakeups { latency, wake }),
            _ => Err("wakeup thread panicked".into()),
        }
    })
}

/// Timer wakeups on a busy CPU: a thread on `cpu` (timer slack 1 ns)
/// sleeps to absolute deadlines 200 µs apart beside a SCHED_IDLE spinner,
/// which any normal wakee preempts at once. Samples: how late it runs
/// (the hrtimer interrupt, the wakeup, the switch, the syscall's return).
pub fn timer_wakeups(cpu: usize, n: usize) -> Result<Vec<f64>, String> {
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        let stop = &stop;
        s.spawn(move || {
            pin(cpu);
            let _ = sys::set_policy(Policy::Idle);
            while !stop.load(Relaxed) {
                spin_loop();
            }
        });
        let sleeper = s.spawn(|| {
            pin(cpu);
            sys::tight_timer_slack();
            (0..n)
                .map(|_| {
                    let t = sys::now_ns() + 200_000;
                    sys::sleep_until_ns(t);
                    sys::now_ns().saturating_sub(t) as f64
                })
                .collect()
        });
        let lat = sleeper.join();
        stop.store(true, Relaxed);
        lat.map_err(|_| "timer thread panicked".to_string())
    })
}

/// Which IPC a streaming or wake-cycle benchmark uses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Ipc {
    Pipe,
    Unix,
}

impl Ipc {
    fn open(self) -> Result<Channel, String> {
        match self {
            Ipc::Pipe => Channel::pipe(),
            Ipc::Unix => Channel::socketpair(),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Ipc::Pipe => "pipe",
            Ipc::Unix => "unix",
        }
    }
}

/// Streaming: one thread on `cpu` writes `size` bytes and reads them back,
/// so no one ever sleeps: ns per write+read pair, `batches` × `per`.
pub fn stream(cpu: usize, ipc: Ipc, size: usize, batches: usize) -> Result<Vec<f64>, String> {
    let ch = ipc.open()?;
    let per = if size > 4096 { 20 } else { 100 };
    thread::scope(|s| {
        s.spawn(|| {
            pin(cpu);
            let mut buf = vec![7u8; size];
            for _ in 0..per {
                ch.send(&buf);
                ch.recv(&mut buf);
            }
            batched(batches, per, || {
                ch.send(&buf);
                ch.recv(&mut buf);
            })
        })
        .join()
        .map_err(|_| "stream thread panicked".to_string())
    })
}

/// The same-CPU stream of `stream` (100 bytes) on every CPU of `cpus` at
/// once, each CPU with its own pipe or socket pair, started together:
/// the samples of all of them pooled. Nothing is shared, so what it adds
/// to the lone stream is what a fully busy machine costs every CPU (the
/// all-core clock, the shared cache and memory traffic).
pub fn stream_everywhere(cpus: &[usize], ipc: Ipc, batches: usize) -> Result<Vec<f64>, String> {
    let chans = cpus
        .iter()
        .map(|_| ipc.open())
        .collect::<Result<Vec<_>, _>>()?;
    let start = std::sync::Barrier::new(cpus.len());
    thread::scope(|s| {
        let runs: Vec<_> = cpus
            .iter()
            .zip(&chans)
            .map(|(&cpu, ch)| {
                let start = &start;
                s.spawn(move || {
                    pin(cpu);
                    let mut buf = [7u8; 100];
                    start.wait();
                    batched(batches, 100, || {
                        ch.send(&buf);
                        ch.recv(&mut buf);
                    })
                })
            })
            .collect();
        let mut all = Vec::new();
        for run in runs {
            all.extend(
                run.join()
                    .map_err(|_| "stream thread panicked".to_string())?,
            );
        }
        Ok(all)
    })
}

/// A task's own 1 ms timer sleeps on `cpu`, nothing else running there:
/// the CPU time the kernel charges it across each sleep (arming the timer,
/// the switch to idle, and after the CPU's idle exit the timer interrupt,
/// the wakeup, the tick restart and the switch back), `n` sleeps.
pub fn timer_sleep_cpu(cpu: usize, n: usize) -> Result<Vec<f64>, String> {
    thread::scope(|s| {
        s.spawn(|| {
            pin(cpu);
            sys::tight_timer_slack();
            (0..n)
                .map(|_| {
                    let c0 = sys::thread_cpu_ns();
                    sys::sleep_ns(1_000_000);
                    (sys::thread_cpu_ns() - c0) as f64
                })
                .collect()
        })
        .join()
        .map_err(|_| "timer thread panicked".to_string())
    })
}

/// The sleep/wake cycle as the woken reader pays it: a reader on `to`
/// blocks in read(); a writer on `from` (the same CPU or another) sends a
/// `size`-byte message after a short sleep, then waits for a 1-byte reply.
/// Samples: the reader's CPU time across each read() that slept (its
/// voluntary switch count rose), `n` messages.
pub fn wake_cycle(
    from: usize,
    to: usize,
    ipc: Ipc,
    size: usize,
    n: usize,
) -> Result<Vec<f64>, String> {
    let (msg, reply) = (ipc.open()?, Channel::pipe()?);
    thread::scope(|s| {
        let reader = s.spawn(|| {
            pin(to);
            let mut buf = vec![0u8; size];
            let mut slept = Vec::with_capacity(n);
            for _ in 0..n {
                let nv = sys::thread_nvcsw();
                let c0 = sys::thread_cpu_ns();
                msg.recv(&mut buf);
                let c1 = sys::thread_cpu_ns();
                if sys::thread_nvcsw() > nv {
                    slept.push((c1 - c0) as f64);
                }
                reply.send(&[1]);
            }
            slept
        });
        s.spawn(|| {
            pin(from);
            sys::tight_timer_slack();
            let buf = vec![7u8; size];
            let mut ack = [0u8; 1];
            for _ in 0..n {
                sys::sleep_ns(20_000);
                msg.send(&buf);
                reply.recv(&mut ack);
            }
        });
        reader
            .join()
            .map_err(|_| "reader thread panicked".to_string())
    })
}

/// One-way cache-line transfer time between `a` and `b`: the two spin on
/// one shared word, each writing the value the other waits for;
/// `batches` batches of 200 round trips, ns per one-way hand-off.
pub fn line_transfer(a: usize, b: usize, batches: usize) -> Result<Vec<f64>, String> {
    const K: u32 = 200;
    let mem = SharedMem::new(4096)?;
    let flag = mem.word(0);
    let total = batches as u32 * K;
    thread::scope(|s| {
        s.spawn(|| {
            pin(b);
            for j in 0..total {
                while flag.load(Acquire) != 2 * j + 1 {
                    spin_loop();
                }
                flag.store(2 * j + 2, Release);
            }
        });
        s.spawn(|| {
            pin(a);
            (0..batches as u32)
                .map(|batch| {
                    let t0 = sys::now_ns();
                    for k in 0..K {
                        let v = 2 * (batch * K + k) + 1;
                        flag.store(v, Release);
                        while flag.load(Acquire) != v + 1 {
                            spin_loop();
                        }
                    }
                    (sys::now_ns() - t0) as f64 / (2 * K) as f64
                })
                .collect()
        })
        .join()
        .map_err(|_| "line-transfer thread panicked".to_string())
    })
}

/// A cross-CPU stream's samples: ns per successful read() (the reader's)
/// and per successful write() (all writers' pooled), one batch's mean each.
pub struct Xcpu {
    pub read: Vec<f64>,
    pub write: Vec<f64>,
}

/// Bytes per message: xcpu.c's, and `perf bench sched messaging`'s
/// (its DATASIZE).
const XCPU_MSG: usize = 100;
/// Successful calls per sample.
const XCPU_PER: usize = 25;

/// Phases of a stream, in one word every thread reads: the first quarter
/// of the reads (the buffer filling) is not timed, nor anything after the
/// first writer is done (less contention, then the reader drains).
const PH_WARM: u32 = 0;
const PH_TIMED: u32 = 1;
const PH_DONE: u32 = 2;

/// The error of a thread stopped because another one failed.
const STOPPED: &str = "stopped: another thread of the stream failed";

/// Samples of successful calls: each full batch of `per` gives its mean.
struct Batches {
    per: usize,
    sum: u64,
    n: usize,
    out: Vec<f64>,
}

impl Batches {
    fn new(per: usize) -> Batches {
        Batches {
            per,
            sum: 0,
            n: 0,
            out: Vec::new(),
        }
    }

    fn ok(&mut self, ns: u64) {
        self.sum += ns;
        self.n += 1;
        if self.n == self.per {
            self.out.push(self.sum as f64 / self.per as f64);
            (self.sum, self.n) = (0, 0);
        }
    }
}

/// Successful writes per sample for a writer that sends `msgs` messages:
/// [`XCPU_PER`], fewer when there are many writers, each sending few, so
/// that each still gives several samples.
fn writer_batch(msgs: usize) -> usize {
    (msgs / 8).clamp(1, XCPU_PER)
}

/// What the threads of a stream share (each word on its own cache line):
/// how many have pinned themselves, whether one failed, the phase.
#[derive(Clone, Copy)]
struct Gate<'a> {
    ready: &'a AtomicU32,
    abort: &'a AtomicU32,
    phase: &'a AtomicU32,
    threads: u32,
}

impl Gate<'_> {
    /// Pin to `cpu`, then wait until every thread has; Err if this one or
    /// another could not, so that no one spins forever on a missing peer.
    fn enter(&self, cpu: usize) -> Result<(), String> {
        sys::pin(cpu).map_err(|e| self.fail(e))?;
        self.ready.fetch_add(1, SeqCst);
        while self.ready.load(SeqCst) < self.threads {
            self.check()?;
            spin_loop();
        }
        Ok(())
    }

    fn fail(&self, e: String) -> String {
        self.abort.store(1, SeqCst);
        e
    }

    fn check(&self) -> Result<(), String> {
        match self.abort.load(Relaxed) {
            0 => Ok(()),
            _ => Err(STOPPED.into()),
        }
    }

    fn timed(&self) -> bool {
        self.phase.load(Relaxed) == PH_TIMED
    }
}

/// Writers that take turns (`xcpu_rotating`): writer `k` of `n` sends
/// only while the shared counter says `k`'s turn, then passes it on.
#[derive(Clone, Copy)]
struct Turns<'a> {
    word: &'a AtomicU32,
    k: u32,
    n: u32,
}

impl Turns<'_> {
    /// Spin (untimed, in user space) until it is this writer's turn.
    fn wait(&self, g: &Gate) -> Result<(), String> {
        while self.word.load(Acquire) % self.n != self.k {
            g.check()?;
            spin_loop();
        }
        Ok(())
    }

    fn pass(&self) {
        self.word.fetch_add(1, Release);
    }
}

/// Writers held back in user space (`xcpu_gated`): at most `limit` bytes
/// written and not yet read, counted in one shared word. The buffer never
/// fills, so no write fails with EAGAIN and retries at once (each retry
/// takes the pipe's mutex or the socket's lock too), yet up to
/// `limit / 100` writers may be writing at the same moment.
#[derive(Clone, Copy)]
struct InFlight<'a> {
    bytes: &'a AtomicU32,
    limit: u32,
}

impl InFlight<'_> {
    /// Spin (untimed, in user space) until fewer than `limit` bytes are in
    /// flight, then count `n` more.
    fn reserve(&self, n: u32, g: &Gate) -> Result<(), String> {
        loop {
            let cur = self.bytes.load(Acquire);
            if cur < self.limit
                && self
                    .bytes
                    .compare_exchange_weak(cur, cur + n, AcqRel, Relaxed)
                    .is_ok()
            {
                return Ok(());
            }
            g.check()?;
            spin_loop();
        }
    }

    fn release(&self, n: u32) {
        self.bytes.fetch_sub(n, Release);
    }
}

/// How a stream's writers pace themselves.
#[derive(Clone, Copy)]
enum Pace<'a> {
    /// As fast as they can, retrying at once on EAGAIN.
    Free,
    /// One message each, in turn.
    Turns(Turns<'a>),
    /// Held back while `InFlight` says the reader is behind.
    Gated(InFlight<'a>),
}

/// One writer: `bytes` in 100-byte non-blocking writes, paced by `pace`
/// (retried at once on EAGAIN); each successful write timed on its own.
fn xcpu_writer(
    ch: &Channel,
    cpu: usize,
    bytes: usize,
    per: usize,
    g: Gate,
    pace: Pace,
) -> Result<Vec<f64>, String> {
    g.enter(cpu)?;
    let buf = [1u8; XCPU_MSG];
    let mut b = Batches::new(per);
    let mut sent = 0;
    while sent < bytes {
        g.check()?;
        let len = XCPU_MSG.min(bytes - sent);
        match pace {
            Pace::Turns(t) => t.wait(&g)?,
            Pace::Gated(f) => f.reserve(len as u32, &g)?,
            Pace::Free => {}
        }
        let t0 = sys::now_ns();
        let n = ch.try_send(&buf[..len]);
        let t1 = sys::now_ns();
        let n = n.map_err(|e| g.fail(e))?;
        if n > 0 && g.timed() {
            b.ok(t1 - t0);
        }
        match pace {
            Pace::Turns(t) if n > 0 => t.pass(),
            Pace::Gated(f) => f.release((len - n) as u32),
            _ => {}
        }
        sent += n;
    }
    g.phase.store(PH_DONE, SeqCst);
    Ok(b.out)
}

/// The reader: non-blocking reads of up to 100 bytes until `bytes` came;
/// each successful read timed on its own; what it read leaves `gate`'s
/// count of bytes in flight.
fn xcpu_reader(
    ch: &Channel,
    cpu: usize,
    bytes: usize,
    g: Gate,
    gate: Option<InFlight>,
) -> Result<Vec<f64>, String> {
    g.enter(cpu)?;
    let mut buf = [0u8; XCPU_MSG];
    let mut b = Batches::new(XCPU_PER);
    let mut got = 0;
    while got < bytes {
        g.check()?;
        let t0 = sys::now_ns();
        let n = ch.try_recv(&mut buf);
        let t1 = sys::now_ns();
        let n = n.map_err(|e| g.fail(e))?;
        got += n;
        if let (Some(f), true) = (gate, n > 0) {
            f.release(n as u32);
        }
        if n > 0 && g.timed() {
            b.ok(t1 - t0);
        } else if got >= bytes / 4 {
            let _ = g.phase.compare_exchange(PH_WARM, PH_TIMED, SeqCst, Relaxed);
        }
    }
    Ok(b.out)
}

/// A cross-CPU stream, as `docs/host-tools/xcpu.c` measures it: writers
/// pinned to `writers` send `msgs` 100-byte messages in all (an equal share
/// each) through one pipe or AF_UNIX stream socket to a reader pinned to
/// `reader`; every end O_NONBLOCK and every thread busy-polling, so no one
/// ever sleeps (no wakeup or switch is in these numbers).
pub fn xcpu_stream(
    reader: usize,
    writers: &[usize],
    ipc: Ipc,
    msgs: usize,
) -> Result<Xcpu, String> {
    xcpu_streams(reader, writers, ipc, msgs, Mode::Free)
}

/// The same with the writers taking turns, one message each (writer 1,
/// 2, …, n, 1, …): never two writing at once, yet every message comes
/// from another CPU than the one before it, as in `perf bench sched
/// messaging`, where 20 senders on many CPUs write into each receiver.
/// Against the one-writer stream it isolates what mixed sources cost
/// (the previous skb a send links to, the slabs a read frees into),
/// without the writers' contention.
pub fn xcpu_rotating(
    reader: usize,
    writers: &[usize],
    ipc: Ipc,
    msgs: usize,
) -> Result<Xcpu, String> {
    xcpu_streams(reader, writers, ipc, msgs, Mode::Turns)
}

/// The same with the writers writing at once, as many as they like, but
/// never more than two messages per writer unread: the buffer never
/// fills, so no writer spins on EAGAIN as in `xcpu_stream` (where every
/// failed write takes the lock too). Against the turn-taking stream it
/// isolates what writers contending for one pipe's mutex or one
/// socket's locks cost, as messaging's 20 senders to each receiver do.
pub fn xcpu_gated(reader: usize, writers: &[usize], ipc: Ipc, msgs: usize) -> Result<Xcpu, String> {
    xcpu_streams(reader, writers, ipc, msgs, Mode::Gated)
}

/// Which pacing a stream's writers use (see [`Pace`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Free,
    Turns,
    Gated,
}

/// Unread messages allowed per writer in a gated stream: enough that
/// every writer may be writing at once, few enough that neither a pipe
/// (16 pages) nor a socket's send buffer ever fills.
const GATED_PER_WRITER: u32 = 2;

fn xcpu_streams(
    reader: usize,
    writers: &[usize],
    ipc: Ipc,
    msgs: usize,
    mode: Mode,
) -> Result<Xcpu, String> {
    let ch = ipc.open()?;
    ch.set_nonblocking()?;
    let mem = SharedMem::new(4096)?;
    let g = Gate {
        ready: mem.word(0),
        abort: mem.word(1),
        phase: mem.word(2),
        threads: writers.len() as u32 + 1,
    };
    let n = writers.len() as u32;
    let gate = (mode == Mode::Gated).then(|| InFlight {
        bytes: mem.word(4),
        limit: GATED_PER_WRITER * n * XCPU_MSG as u32,
    });
    let pace = |k: usize| match (mode, gate) {
        (Mode::Turns, _) => Pace::Turns(Turns {
            word: mem.word(3),
            k: k as u32,
            n,
        }),
        (Mode::Gated, Some(f)) => Pace::Gated(f),
        _ => Pace::Free,
    };
    let each = msgs.div_ceil(writers.len().max(1));
    let (ch, quota, per) = (&ch, each * XCPU_MSG, writer_batch(each));
    let all = thread::scope(|s| {
        // A thread that cannot be spawned aborts the others at once: they
        // wait in `Gate::enter` for it.
        let spawn = |f| {
            thread::Builder::new()
                .spawn_scoped(s, f)
                .map_err(|e| g.fail(format!("spawn: {e}")))
        };
        let mut threads: Vec<_> = writers
            .iter()
            .enumerate()
            .map(|(k, &cpu)| {
                let p = pace(k);
                spawn(Box::new(move || xcpu_writer(ch, cpu, quota, per, g, p)) as Job)
            })
            .collect();
        let total = quota * writers.len();
        threads.push(spawn(Box::new(move || {
            xcpu_reader(ch, reader, total, g, gate)
        })));
        threads
            .into_iter()
            .map(|t| {
                t?.join()
                    .unwrap_or_else(|_| Err(g.fail("stream thread panicked".into())))
            })
            .collect()
    });
    xcpu_collect(all)
}

/// One thread of a stream.
type Job<'a> = Box<dyn FnOnce() -> Result<Vec<f64>, String> + Send + 'a>;

/// A finished stream's samples from its threads' results (the reader's
/// last), or the first error that is a cause rather than a thread stopped
/// by another's failure.
fn xcpu_collect(all: Vec<Result<Vec<f64>, String>>) -> Result<Xcpu, String> {
    let mut oks = Vec::new();
    let mut err: Option<String> = None;
    for r in all {
        match r {
            Ok(v) => oks.push(v),
            Err(e) if err.as_deref().is_none_or(|x| x == STOPPED) => err = Some(e),
            Err(_) => {}
        }
    }
    if let Some(e) = err {
        return Err(e);
    }
    let read = oks.pop().unwrap_or_default();
    let write = oks.concat();
    if read.is_empty() || write.is_empty() {
        return Err("no call was timed in the steady state".into());
    }
    Ok(Xcpu { read, write })
}

/// A token passed around a ring of `k` SCHED_BATCH tasks on `cpu` through
/// one pipe or socket pair per task (each reads its own, writes the
/// next's; 1 byte, the lmbench lat_ctx loop): ns per hop,
/// one sample per `laps` laps, `batches` samples. Threads share an address
/// space; processes (forked) each have their own. Every hop is a wakeup,
/// a block and one switch (SCHED_BATCH: the wakee never preempts the
/// writer, which would add a switch to a third of the hops from k = 3 on);
/// what changes with `k` is how many other tasks ran on the CPU since the
/// one switched in last did.
pub fn ring(
    cpu: usize,
    k: usize,
    processes: bool,
    ipc: Ipc,
    batches: usize,
) -> Result<Vec<f64>, String> {
    let laps = (400 / k).max(20);
    let total = batches * laps;
    let pipes = (0..k).map(|_| ipc.open()).collect::<Result<Vec<_>, _>>()?;
    let member = |i: usize| {
        let mut b = [0u8; 1];
        for _ in 0..total {
            pipes[i].recv(&mut b);
            pipes[(i + 1) % k].send(&b);
        }
    };
    thread::scope(|s| {
        s.spawn(|| {
            pin(cpu);
            sys::set_policy(Policy::Batch)?;
            let mut kids = Vec::new();
            let mut threads = Vec::new();
            for i in 1..k {
                if processes {
                    kids.push(sys::fork_child(|| member(i))?);
                } else {
                    threads.push(s.spawn(move || {
                        pin(cpu);
                        let _ = sys::set_policy(Policy::Batch);
                        member(i)
                    }));
                }
            }
            let mut b = [1u8; 1];
            let samples = (0..batches)
                .map(|_| {
                    let t0 = sys::now_ns();
                    for _ in 0..laps {
                        pipes[1 % k].send(&b);
                        pipes[0].recv(&mut b);
                    }
                    (sys::now_ns() - t0) as f64 / (laps * k) as f64
                })
                .collect();
            kids.into_iter().for_each(sys::wait_child);
            for t in threads {
                t.join().map_err(|_| "ring thread panicked".to_string())?;
            }
            Ok(samples)
        })
        .join()
        .map_err(|_| "ring thread panicked".to_string())?
    })
}

/// fork + child `_exit` + waitpid from a thread on `cpu`: per cycle, the
/// parent's fork() time and the whole cycle.
pub fn fork_exit(cpu: usize, n: usize) -> Result<(Vec<f64>, Vec<f64>), String> {
    thread::scope(|s| {
        s.spawn(|| {
            pin(cpu);
            let mut fork = Vec::with_capacity(n);
            let mut cycle = Vec::with_capacity(n);
            for _ in 0..n {
                let t0 = sys::now_ns();
                let pid = sys::fork_child(|| {})?;
                let t1 = sys::now_ns();
                sys::wait_child(pid);
                fork.push((t1 - t0) as f64);
                cycle.push((sys::now_ns() - t0) as f64);
            }
            Ok((fork, cycle))
        })
        .join()
        .map_err(|_| "fork thread panicked".to_string())?
    })
}

/// Gaps a busy loop on `cpu` sees in its clock for `dur_ns`: the timer
/// tick and any other interrupt. Gaps between `min_ns` and 30 µs count;
/// longer ones are another task or a host-side preemption of the vCPU. Returns the gaps (when each
/// ended, its length) and how long the loop itself ran.
pub fn clock_gaps(cpu: usize, dur_ns: u64, min_ns: u64) -> Result<(Vec<(u64, u64)>, u64), String> {
    thread::scope(|s| {
        s.spawn(|| {
            pin(cpu);
            let start = sys::now_ns();
            let mut last = start;
            let mut gaps = Vec::new();
            let mut away = 0;
            while last - start < dur_ns {
                let t = sys::now_ns();
                match t - last {
                    d if d >= 30_000 => away += d,
                    d if d >= min_ns => gaps.push((t, d)),
                    _ => {}
                }
                last = t;
            }
            (gaps, last - start - away)
        })
        .join()
        .map_err(|_| "tick thread panicked".to_string())
    })
}

/// The timer tick among clock gaps: of the HZ values (100, 250, 300, 1000)
/// whose period collects at least 70 % of the ticks expected in `ran_ns`
/// into one phase (±20 µs), the one with the most gaps there (a faster
/// candidate sees the true ticks too, but as a small share of its own);
/// returns it and the gaps at that phase.
pub fn tick_gaps(gaps: &[(u64, u64)], ran_ns: u64) -> Option<(u64, Vec<f64>)> {
    const BIN: u64 = 20_000;
    let mut best: Option<(usize, u64, Vec<f64>)> = None;
    for hz in [100u64, 250, 300, 1000] {
        let period = 1_000_000_000 / hz;
        let bins = (period / BIN) as usize + 1;
        let mut count = vec![0usize; bins];
        for &(t, _) in gaps {
            count[((t % period) / BIN) as usize] += 1;
        }
        let near = |b: usize| {
            [b + bins - 1, b, b + 1]
                .map(|k| count[k % bins])
                .iter()
                .sum::<usize>()
        };
        let Some(b) = (0..bins).max_by_key(|&b| near(b)) else {
            continue;
        };
        let share = near(b) as f64 / (ran_ns as f64 * hz as f64 / 1e9);
        if share >= 0.7 && best.as_ref().is_none_or(|x| near(b) > x.0) {
            let at = |t: u64| ((t % period) / BIN) as usize;
            let phase = |t: u64| (at(t) + bins - b + 1) % bins <= 2;
            let picked = gaps
                .iter()
                .filter(|g| phase(g.0))
                .map(|g| g.1 as f64)
                .collect();
            best = Some((near(b), hz, picked));
        }
    }
    best.map(|(_, hz, g)| (hz, g))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ticks every 4 ms at phase 10 µs (2–4 µs long) among gaps every
    /// 1.37 ms (not a candidate period): HZ 250 is found, with the ticks.
    #[test]
    fn tick_found_among_other_interrupts() {
        let ran = 400_000_000;
        let mut gaps: Vec<(u64, u64)> = (0..100)
            .map(|i| (i * 4_000_000 + 10_000, 2_000 + (i % 3) * 1_000))
            .collect();
        gaps.extend((0..290).map(|i| (i * 1_370_000 + 700_000, 900)));
        let (hz, ticks) = tick_gaps(&gaps, ran).unwrap();
        assert_eq!(hz, 250);
        // a few of the others fall into the tick's phase by chance
        let strays = ticks.iter().filter(|&&t| t < 2_000.0).count();
        assert!(ticks.len() >= 100 && strays <= 10, "{ticks:?}");
        // Too few aligned gaps: no tick.
        assert!(tick_gaps(&gaps[100..], ran).is_none());
    }

    #[test]
    fn only_full_batches_are_samples() {
        let mut b = Batches::new(3);
        [10, 20, 30, 40].into_iter().for_each(|ns| b.ok(ns));
        assert_eq!(b.out, vec![20.0]);
        assert_eq!(
            (writer_batch(3000), writer_batch(80), writer_batch(3)),
            (25, 10, 1)
        );
    }

    /// The cause of a failure is reported, not the threads it stopped;
    /// a stream with nothing timed is an error too.
    #[test]
    fn stream_results_collected() {
        let stopped = || Err(STOPPED.to_string());
        let cause = || Err("sched_setaffinity(CPU 7): Invalid argument".to_string());
        for all in [
            vec![stopped(), cause(), stopped()],
            vec![cause(), stopped()],
        ] {
            assert_eq!(xcpu_collect(all).err().unwrap(), cause().unwrap_err());
        }
        assert_eq!(xcpu_collect(vec![stopped()]).err().unwrap(), STOPPED);
        let x = xcpu_collect(vec![Ok(vec![1.0]), Ok(vec![2.0, 3.0]), Ok(vec![4.0])]).unwrap();
        assert_eq!((x.read, x.write), (vec![4.0], vec![1.0, 2.0, 3.0]));
        assert!(xcpu_collect(vec![Ok(vec![1.0]), Ok(vec![])]).is_err());
    }

    /// A writer that cannot be pinned stops the stream at once (no thread
    /// waits for it forever) and names the CPU.
    #[test]
    fn unpinnable_writer_fails_the_stream() {
        let cpu = crate::util::affinity::allowed_cpus()[0];
        let bad = libc::CPU_SETSIZE as usize - 1;
        for ipc in [Ipc::Pipe, Ipc::Unix] {
            let e = xcpu_stream(cpu, &[cpu, bad], ipc, 2000).err().unwrap();
            assert!(e.contains(&format!("CPU {bad}")), "{e}");
        }
    }

    /// Reader and one or two writers on one CPU (always pinnable here):
    /// every sample is a positive time per successful call, and there are
    /// at most three quarters of the messages' worth of them.
    #[test]
    fn stream_on_one_cpu_gives_samples() {
        let cpu = crate::util::affinity::allowed_cpus()[0];
        for (ipc, writers) in [(Ipc::Pipe, 1), (Ipc::Unix, 1), (Ipc::Pipe, 2)] {
            let x = xcpu_stream(cpu, &vec![cpu; writers], ipc, 2000).unwrap();
            assert!(x.read.len() >= 5 && x.read.len() <= 60, "{}", x.read.len());
            assert!(!x.write.is_empty() && x.write.len() <= 60 * writers);
            assert!(x.read.iter().chain(&x.write).all(|&s| s > 0.0));
        }
    }

    /// Two writers taking turns, everyone on the CPUs this test may use:
    /// each writer's messages are all sent (none lost to a turn never
    /// passed), and every sample is a positive time per call.
    #[test]
    fn rotating_writers_take_turns_to_the_end() {
        let cpus = crate::util::affinity::allowed_cpus();
        let (a, b) = (cpus[0], *cpus.last().unwrap());
        for ipc in [Ipc::Pipe, Ipc::Unix] {
            let x = xcpu_rotating(a, &[a, b], ipc, 2000).unwrap();
            assert!(!x.read.is_empty() && !x.write.is_empty());
            assert!(x.read.iter().chain(&x.write).all(|&s| s > 0.0));
        }
    }

    #[test]
    fn gated_writers_reach_the_end() {
        let cpus = crate::util::affinity::allowed_cpus();
        let (a, b) = (cpus[0], *cpus.last().unwrap());
        for ipc in [Ipc::Pipe, Ipc::Unix] {
            let x = xcpu_gated(a, &[b, b, a], ipc, 900).unwrap();
            assert!(!x.read.is_empty() && !x.write.is_empty());
            assert!(x.read.iter().chain(&x.write).all(|&s| s > 0.0));
        }
    }

    #[test]
    fn in_flight_counts_what_is_written_and_not_read() {
        let mem = SharedMem::new(4096).unwrap();
        let g = Gate {
            ready: mem.word(0),
            abort: mem.word(1),
            phase: mem.word(2),
            threads: 1,
        };
        let f = InFlight {
            bytes: mem.word(4),
            limit: 200,
        };
        f.reserve(100, &g).unwrap();
        f.reserve(100, &g).unwrap();
        assert_eq!(f.bytes.load(SeqCst), 200);
        f.release(60);
        // Below the limit again: one more message may go, past the limit.
        f.reserve(100, &g).unwrap();
        assert_eq!(f.bytes.load(SeqCst), 240);
        // At the limit a writer waits; an aborted stream stops it.
        g.abort.store(1, SeqCst);
        assert_eq!(f.reserve(100, &g), Err(STOPPED.to_string()));
    }

    #[test]
    fn batched_averages_per_call() {
        let mut calls = 0;
        let s = batched(3, 10, || calls += 1);
        assert_eq!((s.len(), calls), (3, 30));
        assert!(s.iter().all(|&x| x >= 0.0));
    }
}
