//! Folded reads: a task reading, in a loop, messages already queued on a
//! socket or pipe runs its consecutive reads as one segment and one event
//! (issue 33, part 3).
//!
//! In the unfolded model each read is a segment (its syscall and copy
//! cost) followed by an event at the segment's end, where the read takes
//! effect and the next read's cost is charged. A fold charges those reads
//! one after the other at once, each at the instant the unfolded model
//! would (its cost drawn from the task's own noise stream, its cache lines
//! and lock as they stand then), and applies each read's effect early,
//! stamped with the instant its segment ends: the rest of the machine sees
//! it from then on.
//!
//! - Whatever touches the folded task (a reschedule request, an IPI, a
//!   timer interrupt's work), its CPU (any event there, a sibling changing
//!   its speed) or, for a pipe, the pipe (a write, its mutex, its lines)
//!   first cuts the fold at that instant ([`Kernel::fold_cut`]): the reads
//!   stamped later are undone (their messages go back to the front of the
//!   queue, the send buffer, the pipe's lines and mutex, the task's loop
//!   counter, noise stream and the cost counters return to what they
//!   were), and the task is left in the read whose segment spans the
//!   instant, as if it had run unfolded.
//! - A write to a folded socket goes in behind the fold's reads, which
//!   read only what was queued before it (the timestamped queue): it sees
//!   the messages read later than now as still queued (its cache lines'
//!   cost) and their skbs as still charged to the send buffer (a write
//!   that would find it used up cuts the fold and waits). The first folded
//!   read charged after the write pays for pulling the socket's lines back
//!   from the writer, as an unfolded read would; its segment and the later
//!   ones end later by that much. The one difference from the unfolded
//!   model: with several writes between two reads, the lines come back
//!   from the first writer's CPU instead of the last's.
//! - Another reader of the object cuts the fold.
//!
//! A read folds only where its outcome is certain: a whole message of the
//! read's size waits at the front (a socket's skb; a pipe's front
//! buffer holds the bytes), nobody waits to write (a socket's wr_wait is
//! empty; a pipe is not full, so no read frees a slot a writer waits for),
//! the read is the only op of its loop, no reschedule request is pending
//! on the CPU and no throttle can become due (no CFS bandwidth), and no
//! tracer records the syscalls. Results then differ from the unfolded
//! model's only in the events counted, the source CPU of those lines, and
//! the order of two events of one instant on different CPUs where one of
//! them is a folded read's end (an event sees a folded read of its instant
//! if that read's segment end has the lower slot, as the queue orders them).

use super::cacheline::{data_lines, SharedLines};
use super::core::segment_ns;
use super::lock::ContendedLock;
use super::pipe::PipeMark;
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

/// The object a fold reads from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Obj {
    Sock(usize),
    Pipe(usize),
}

/// A pipe before a folded read: its front buffer, lines and mutex (a
/// writer cuts a pipe's fold, so these are still the pipe's at the cut).
#[derive(Clone, Copy, Debug)]
pub struct PipeBefore {
    pub front: PipeMark,
    pub lines: SharedLines,
    pub mutex: ContendedLock,
}

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
    /// What the next read's charge added to the run's line-transfer and
    /// lock-wait counters, and its shared cost (lines and lock).
    pub line_ns: u64,
    pub xfer: u64,
    /// A message was queued when the next read was charged (it pulls the
    /// message's lines).
    pub queued: bool,
    pub lock_wait_ns: u64,
    /// A pipe's state before the effect (None for a socket, whose read is
    /// undone by putting its skb back).
    pub pipe: Option<PipeBefore>,
}

/// The fold running on one CPU, if any (`obj` None: none).
#[derive(Clone, Debug)]
pub struct Fold {
    pub p: Pid,
    pub obj: Option<Obj>,
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
            obj: None,
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
        self.obj.is_some()
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

    /// `cpu` touches `obj` at now: cut another CPU's fold on it.
    #[inline]
    pub fn fold_touch_obj(&mut self, owner: Option<u32>, cpu: usize) {
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

    /// Start a fold on `cpu`: `p` reads `obj` (`n` bytes a read), its first read's segment
    /// started now at `speed`.
    pub fn fold_begin(&mut self, cpu: usize, p: Pid, obj: Obj, n: u32, speed: u64) {
        let f = &mut self.folds[cpu];
        f.p = p;
        f.obj = Some(obj);
        f.n = n;
        f.pull = None;
        f.start = self.now;
        f.speed = speed;
        f.ops.clear();
        self.folds_live += 1;
        self.set_fold_owner(obj, Some(cpu as u32));
    }

    /// The fold on `cpu` is over: the object is anyone's again.
    fn fold_clear(&mut self, cpu: usize) {
        self.fold_settle(cpu);
        let f = &mut self.folds[cpu];
        let obj = f.obj.take().expect("a live fold");
        f.ops.clear();
        self.folds_live -= 1;
        self.set_fold_owner(obj, None);
    }

    fn set_fold_owner(&mut self, obj: Obj, owner: Option<u32>) {
        match obj {
            Obj::Sock(i) => self.socks[i].fold = owner,
            Obj::Pipe(i) => self.pipes[i].fold = owner,
        }
    }

    /// Cut `cpu`'s fold at now: undo the reads whose effects are stamped
    /// later, newest first, and leave the task in the read whose segment
    /// spans now (its segment armed to end when it would have).
    pub fn fold_cut(&mut self, cpu: usize) {
        let now = self.now;
        let f = &self.folds[cpu];
        let (p, obj) = (f.p, f.obj.expect("a live fold"));
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
            self.fold_undo(cpu, p, obj, i);
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
    fn fold_undo(&mut self, cpu: usize, p: Pid, obj: Obj, i: usize) {
        let ops = std::mem::take(&mut self.folds[cpu].ops);
        let n = self.folds[cpu].n;
        for b in ops[i..].iter().rev() {
            match (obj, b.pipe) {
                (Obj::Sock(s), _) => self.socks[s].unread(n),
                (Obj::Pipe(s), Some(m)) => self.pipes[s].unread(&m),
                (Obj::Pipe(_), None) => unreachable!("a pipe's fold marks its reads"),
            }
            self.stats.ipc_line_ns -= b.line_ns;
            self.stats.ipc_lock_wait_ns -= b.lock_wait_ns;
        }
        let b = ops[i];
        if let (Obj::Pipe(s), Some(m)) = (obj, b.pipe) {
            self.pipes[s].restore(m.lines, m.mutex);
        }
        let prog = &mut self.tasks[p].prog;
        if let Some(top) = prog.loops.last_mut() {
            top.1 = b.loop_left;
        }
        self.noise.rewind_task(p, b.draws);
        self.folds[cpu].ops = ops;
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
        let (Some(Obj::Sock(i)), n) = (f.obj, f.n) else {
            unreachable!("only a socket's fold lets a write in")
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
        let (Some(Obj::Sock(i)), Some((k, _))) = (f.obj, f.pull) else {
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
