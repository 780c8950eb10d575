//! Folded reads: a task reading, in a loop, messages already queued on a
//! unix socket runs its consecutive reads as one segment and one event
//! (issue 33, part 3).
//!
//! In the unfolded model each read is a segment (its syscall and copy
//! cost) followed by an event at the segment's end, where the read takes
//! effect and the next read's cost is charged. A fold charges those reads
//! one after the other at once, each at the instant the unfolded model
//! would (its cost drawn from the task's own noise stream, the socket's
//! cache lines as they stand then), and applies each read's effect early,
//! stamped with the instant its segment ends: the rest of the machine sees
//! it from then on.
//!
//! - Whatever touches the folded task (a reschedule request, an IPI, a
//!   timer interrupt's work), its CPU (any event there, a sibling changing
//!   its speed) or the socket as a reader first cuts the fold at that
//!   instant ([`Kernel::fold_cut`]): the reads stamped later are undone
//!   (their skbs go back to the front of the queue and their truesize to
//!   the send buffer; the task's loop counter, noise stream and the line
//!   counter return to what they were), and the task is left in the read
//!   whose segment spans the instant, as if it had run unfolded.
//! - A write goes in behind the fold's reads, which read only what was
//!   queued before it (the timestamped queue): it sees the messages read
//!   later than now as still queued (its cache lines' cost) and their skbs
//!   as still charged to the send buffer (a write that would find it used
//!   up cuts the fold and waits). The folded reads charged after the write
//!   are charged again as they then would be ([`Kernel::fold_after_write`]).
//!
//! A read folds only where its outcome is certain: a whole skb of the
//! read's size waits at the front, no writer waits (so no read wakes
//! one), the read is the only op of its loop, no reschedule request is
//! pending on the CPU and no throttle can become due (no CFS bandwidth),
//! and no tracer records the syscalls.
//!
//! Pipe reads fold the same way (issue 33, nineteenth session), where a
//! pipe op costs the same whatever the pipe's state (no `pipe_xcpu_lines`:
//! no lines and no pipe->mutex to wait for, every preset), and only reads
//! that take their bytes from the front buffer and leave some there
//! ([`super::pipe::Pipe::read_certain`]). Such a read frees no buffer, so
//! it wakes no writer, and it leaves the pipe non-empty; a write only
//! looks at the last buffer's end (to merge into it) and at the number of
//! buffers, which it leaves as they were. So a write before a folded
//! read's instant finds the pipe as the unfolded model would and needs no
//! cut, and a cut puts the bytes back at the front buffer's head
//! ([`super::pipe::Pipe::unread`]). Another reader of the pipe cuts the
//! fold. (The fifteenth session's pipe fold let every write cut it, for
//! pipe->mutex, and cost more than the events saved: hackbench over pipes
//! on power10-96 +5 % instructions. Where the machine models no pipe
//! lines, the mutex costs nothing and a write cannot change such a read.)

use super::cacheline::data_lines;
use super::core::segment_ns;
use super::task::Pid;
use super::unix_sock::{skb_truesize, SKB_LINES};
use super::Kernel;
use crate::engine::{EventKind, Time};

/// At most this many reads fold into one segment: bounds the undo work of
/// a cut and the reads a write to a folded socket charges again. Measured
/// (cachegrind, hackbench g10 l200 on xeon-8269cy / messaging g4 l200 on
/// emr-16, instructions against the unfolded build): 256 reads −6.0 % /
/// +11.9 %, 32 −9.7 % / −3.6 %, 16 −10.1 % / −5.5 %.
pub const MAX_FOLDED: usize = 16;

/// The fewest reads a CPU's next fold may take: a fold's length adapts to
/// how many reads the CPU's folds got done before a cut (twice that, or
/// twice the length after a fold that ran to its end), so that where
/// other CPUs touch the object often the reads undone stay few.
const MIN_SPAN: usize = 4;

/// One folded read: its segment, and what its effect and the next read's
/// charge changed, to undo them.
#[derive(Clone, Copy, Debug)]
pub struct Before {
    /// The end of the read's segment (its effect's instant) and its work.
    pub end: Time,
    pub work: u64,
    /// The task's loop counter and noise draws taken before the effect.
    pub loop_left: u64,
    pub draws: u64,
    /// What the next read's charge added to the run's line-transfer
    /// counter, and its shared cost (the lines; a reader takes no lock).
    pub line_ns: u64,
    pub xfer: u64,
    /// A message was queued when the next read was charged (it pulls the
    /// message's lines).
    pub queued: bool,
    /// A folded send's op and socket or pipe (kernel/fold_send.rs).
    pub pc: usize,
    pub sock: usize,
}

/// The fold running on one CPU, if any (`sock` None: none).
#[derive(Clone, Debug)]
pub struct Fold {
    pub p: Pid,
    /// The socket or pipe it reads (a fold of sends: the first send's).
    pub sock: Option<usize>,
    /// It folds sends (kernel/fold_send.rs), not reads.
    pub sends: bool,
    /// Its reads or sends are of pipes (`sock` and each op's `sock` are
    /// then pipes' indices).
    pub pipe: bool,
    /// Bytes of each read.
    pub n: u32,
    /// The segment's start and speed (work-ns per 1024 ns).
    pub start: Time,
    pub speed: u64,
    /// The reads whose effects are applied, oldest first.
    pub ops: Vec<Before>,
    /// The last read, whose effect is left to its segment's end event:
    /// its segment's end (the fold's) and work.
    pub end: Time,
    pub last_work: u64,
    /// The read (k: read k's charge follows `ops[k - 1]`) that pulls the
    /// socket's lines back from the CPU of the last write before it, and
    /// whether the socket has seen that read take them.
    pull: Option<(usize, usize)>,
    pulled: bool,
    /// How many reads the CPU's next fold may take.
    pub span: usize,
}

impl Default for Fold {
    fn default() -> Self {
        Fold {
            p: 0,
            sock: None,
            sends: false,
            pipe: false,
            n: 0,
            pull: None,
            pulled: false,
            start: 0,
            speed: 0,
            ops: Vec::new(),
            end: 0,
            last_work: 0,
            span: MIN_SPAN,
        }
    }
}

impl Fold {
    pub fn live(&self) -> bool {
        self.sock.is_some()
    }
}

impl Kernel {
    /// `cpu` runs a fold.
    #[inline]
    pub fn folded(&self, cpu: usize) -> bool {
        self.folds_live > 0 && self.folds[cpu].live()
    }

    /// Something touches `cpu` or its task at now: cut its fold.
    #[inline]
    pub fn fold_touch_cpu(&mut self, cpu: usize) {
        if self.folded(cpu) {
            self.fold_cut(cpu);
        }
    }

    /// `cpu` reads a socket or pipe at now (`owner`: the CPU folding reads
    /// of it): cut another CPU's fold on it.
    #[inline]
    pub fn fold_touch_read(&mut self, owner: Option<u32>, cpu: usize) {
        if let Some(c) = owner.filter(|&c| c as usize != cpu) {
            self.fold_cut(c as usize);
        }
    }

    /// An event of `kind` for `idx` is about to be handled: the end of a
    /// fold's segment completes it; any other event on its CPU cuts it.
    #[inline]
    pub(crate) fn fold_event(&mut self, kind: EventKind, idx: usize) {
        match kind {
            EventKind::CpuDone if self.folded(idx) => {
                let f = &mut self.folds[idx];
                f.span = (2 * f.span).min(MAX_FOLDED);
                self.fold_clear(idx);
            }
            EventKind::Tick
            | EventKind::Resched
            | EventKind::IdleBalance
            | EventKind::Irq
            | EventKind::NoiseIrq => self.fold_touch_cpu(idx),
            EventKind::End => {
                for cpu in 0..self.folds.len() {
                    self.fold_touch_cpu(cpu);
                }
            }
            _ => {}
        }
    }

    /// Start a fold on `cpu`: `p` reads socket `sock`, or pipe `sock` if
    /// `pipe` (`n` bytes a read), its first read's segment started now at
    /// `speed`.
    pub fn fold_begin(&mut self, cpu: usize, p: Pid, sock: usize, pipe: bool, n: u32, speed: u64) {
        if pipe {
            self.pipes[sock].fold = Some(cpu as u32);
        } else {
            self.socks[sock].fold = Some(cpu as u32);
        }
        self.fold_start(cpu, p, sock, n, speed, false);
        self.folds[cpu].pipe = pipe;
    }

    /// Start a fold of `p`'s sends on `cpu` (kernel/fold_send.rs), of
    /// pipe writes if `pipe`, its first send's segment started now at
    /// `speed`.
    pub fn fold_begin_sends(&mut self, cpu: usize, p: Pid, sock: usize, pipe: bool, speed: u64) {
        self.fold_start(cpu, p, sock, 0, speed, true);
        self.folds[cpu].pipe = pipe;
    }

    fn fold_start(&mut self, cpu: usize, p: Pid, sock: usize, n: u32, speed: u64, sends: bool) {
        let f = &mut self.folds[cpu];
        f.p = p;
        f.sock = Some(sock);
        f.sends = sends;
        f.pipe = false;
        f.n = n;
        f.pull = None;
        f.start = self.now;
        f.speed = speed;
        f.ops.clear();
        self.folds_live += 1;
    }

    /// The fold on `cpu` is over: the object is anyone's again.
    fn fold_clear(&mut self, cpu: usize) {
        self.fold_settle(cpu);
        let f = &mut self.folds[cpu];
        let sock = f.sock.take().expect("a live fold");
        f.ops.clear();
        let (sends, pipe) = (f.sends, f.pipe);
        self.folds_live -= 1;
        match (sends, pipe) {
            (true, _) => {}
            (false, true) => self.pipes[sock].fold = None,
            (false, false) => self.socks[sock].fold = None,
        }
    }

    /// Cut `cpu`'s fold at now: undo the reads whose effects are stamped
    /// later, newest first, and leave the task in the read whose segment
    /// spans now (its segment armed to end when it would have).
    pub fn fold_cut(&mut self, cpu: usize) {
        let now = self.now;
        let f = &self.folds[cpu];
        let (p, sock) = (f.p, f.sock.expect("a live fold"));
        // An effect of this instant is seen if its segment end fires first.
        let seen_now = self.events.slot(EventKind::CpuDone, cpu) < self.fold_slot;
        let i = f
            .ops
            .iter()
            .position(|b| b.end > now || (b.end == now && !seen_now));
        let (start, end, work) = match i {
            Some(i) => {
                let start = if i == 0 { f.start } else { f.ops[i - 1].end };
                (start, f.ops[i].end, f.ops[i].work)
            }
            None => (f.ops.last().map_or(f.start, |b| b.end), f.end, f.last_work),
        };
        if let Some(i) = i {
            if self.folds[cpu].sends {
                self.send_undo(cpu, p, i);
            } else {
                self.fold_undo(cpu, p, sock, i);
            }
            self.folds[cpu].span = (2 * i).clamp(MIN_SPAN, MAX_FOLDED);
        }
        let speed = self.folds[cpu].speed;
        self.rqs[cpu].act = super::core::Activity::Running { start, speed };
        self.tasks[p].prog.work_left = work;
        self.events.push(end, EventKind::CpuDone, cpu);
        self.fold_clear(cpu);
    }

    /// Undo folded reads `i..` of `cpu`'s fold, newest first, with the
    /// charges after them.
    fn fold_undo(&mut self, cpu: usize, p: Pid, sock: usize, i: usize) {
        let ops = std::mem::take(&mut self.folds[cpu].ops);
        let (n, pipe) = (self.folds[cpu].n, self.folds[cpu].pipe);
        for b in ops[i..].iter().rev() {
            if pipe {
                self.pipes[sock].unread(n);
            } else {
                self.socks[sock].unread(n);
            }
            self.stats.ipc_line_ns -= b.line_ns;
        }
        self.fold_rewind(p, &ops[i]);
        self.folds[cpu].ops = ops;
    }

    /// Take `p` back to folded op `b`: its loop counter and noise draws as
    /// they were before `b`'s effect (a read or a send undone).
    pub(crate) fn fold_rewind(&mut self, p: Pid, b: &Before) {
        if let Some(top) = self.tasks[p].prog.loops.last_mut() {
            top.1 = b.loop_left;
        }
        self.noise.rewind_task(p, b.draws);
    }

    /// Folded reads on `cpu` whose effects are stamped after now: their
    /// messages are still queued now, for a writer.
    pub fn fold_reads_due(&self, cpu: usize) -> u64 {
        let ops = &self.folds[cpu].ops;
        ops.iter().rev().take_while(|b| b.end > self.now).count() as u64
    }

    /// A writer touched socket lines the reader folding on `cpu` reads
    /// later: `from`, its CPU, if it took the socket's own lines (the
    /// send's start), None if it queued a message (its end). The folded
    /// reads charged after now are charged again as they would be then:
    /// the first pulls the socket's lines back from the last writer to
    /// take them, each that finds a message queued pulls it from its
    /// writer (and the mixed messages' lines); their segments end earlier or later by the
    /// difference. The reader is the socket lines' last user again once
    /// that read's charge is past ([`Kernel::fold_settle`]).
    pub fn fold_after_write(&mut self, cpu: usize, from: Option<usize>) {
        let f = &self.folds[cpu];
        let (Some(i), n) = (f.sock, f.n) else {
            unreachable!("a write touches a live fold")
        };
        // Read k's charge starts where read k − 1's segment ends. A machine
        // without the socket's lines charges none.
        let first = f.ops.iter().position(|b| b.end > self.now);
        let Some(first) = first.filter(|_| self.machine.cost.socket_xcpu_lines > 0) else {
            return;
        };
        if let Some(from) = from {
            let f = &mut self.folds[cpu];
            f.pull = Some((first + 1, from));
            f.pulled = false;
        }
        let c = &self.machine.cost;
        let lines = (
            c.socket_xcpu_lines,
            SKB_LINES + data_lines(n),
            c.socket_mix_read_lines,
        );
        let (newest, mix) = self.socks[i].read_sources(cpu);
        let m = &self.machine;
        let cost = |from: Option<usize>, n: u64| from.map_or(0, |f| n * m.line_transfer_ns(f, cpu));
        let each = cost(newest, lines.1) + cost(mix, lines.2);
        let pulled = self.folds[cpu]
            .pull
            .map(|(k, from)| (k, cost(Some(from), lines.0)));
        let f = &mut self.folds[cpu];
        let (len, speed) = (f.ops.len(), f.speed);
        let (mut shift, mut dwork, mut dline) = (0i64, 0i64, 0i64);
        for j in first..len {
            let b = &mut f.ops[j];
            b.end = b.end.wrapping_add_signed(shift);
            // A read charged after a message came finds one queued.
            b.queued |= from.is_none();
            let pull = pulled.filter(|p| p.0 == j + 1).map_or(0, |p| p.1);
            let xfer = pull + if b.queued { each } else { 0 };
            let d = xfer as i64 - b.xfer as i64;
            b.xfer = xfer;
            f.ops[j].line_ns = f.ops[j].line_ns.wrapping_add_signed(d);
            let work = if j + 1 < len {
                &mut f.ops[j + 1].work
            } else {
                &mut f.last_work
            };
            let new = work.wrapping_add_signed(d).max(1);
            shift += segment_ns(new, speed) as i64 - segment_ns(*work, speed) as i64;
            dwork += new as i64 - *work as i64;
            dline += d;
            *work = new;
        }
        f.end = f.end.wrapping_add_signed(shift);
        let (p, end) = (f.p, f.end);
        let prog = &mut self.tasks[p].prog;
        prog.work_left = prog.work_left.wrapping_add_signed(dwork);
        self.stats.ipc_line_ns = self.stats.ipc_line_ns.wrapping_add_signed(dline);
        if shift != 0 {
            self.events.push(end, EventKind::CpuDone, cpu);
        }
    }

    /// The socket's lines as of now: the folded read on `cpu` that pulls
    /// them back after a write has taken them if its charge is past.
    pub fn fold_settle(&mut self, cpu: usize) {
        let f = &mut self.folds[cpu];
        let (Some(i), Some((k, _))) = (f.sock, f.pull) else {
            return;
        };
        if !f.pulled && f.ops[k - 1].end <= self.now {
            f.pulled = true;
            self.socks[i].retouch(cpu);
        }
    }

    /// A send now on socket `i`, which `cpu` folds reads of, finds the send
    /// buffer used up once the frees stamped later are taken back.
    pub fn fold_sndbuf_full(&self, cpu: usize, wmem: u64, sndbuf: u64) -> bool {
        wmem + self.fold_reads_due(cpu) * skb_truesize(self.folds[cpu].n) >= sndbuf
    }
}
