//! Folded sends: a task sending, in a loop, messages that neither block
//! nor wake anyone runs its consecutive sends as one segment and one event
//! (issue 33, part 3; the read side is kernel/fold.rs, whose `Fold` and
//! cut this shares).
//!
//! In the unfolded model each send is a segment (its syscall and copy
//! cost) followed by an event at the segment's end, where the send queues
//! its skb and the next send's cost is charged. A fold charges those sends
//! one after the other at once, each at the instant the unfolded model
//! would (its cost drawn from the task's own noise stream), and stamps
//! each send's skb with the instant its segment ends: the skb waits on the
//! socket's list of stamped sends and joins the receive queue only once
//! its stamp is past, when anything looks at the socket
//! ([`Kernel::sock_settle`], the timestamped queue). A reader at t reads
//! only skbs stamped up to t; so do other writers queue behind them.
//!
//! A send folds only where its outcome is certain: no reader sleeps on the
//! socket (the send wakes nobody) and its skb fits in the send buffer with
//! every stamped skb (it does not block). Whatever could make the outcome
//! differ cuts the fold at that instant ([`Kernel::fold_cut`]), undoing
//! the sends stamped later:
//! - what touches the sender's CPU or task (as for folded reads);
//! - a send from another CPU that leaves the buffer too full for the
//!   stamped skbs still to come.
//!
//! A reader that finds nothing queued while sends are stamped on its
//! socket later goes to sleep, and the first of them will wake it: each
//! fold's first send stamped there becomes that fold's last, an event at
//! its segment's end, and the sends after it are undone
//! ([`Kernel::sends_wake_due`]); the fold's sends before it stand.
//!
//! Sends fold only where their cost does not depend on the socket: on a
//! machine without the socket's cache lines and lock (`socket_xcpu_lines`
//! and `socket_lock_hold_ns` 0, every preset but emr-16). Where the
//! machine has them, a send's charge reads the socket's lines and lock as
//! other CPUs left them, and every touch of the socket between the fold's
//! start and a send's charge would change it.
//!
//! Pipe writes fold the same way (issue 33, nineteenth session), where a
//! pipe op's cost does not depend on the pipe (no `pipe_xcpu_lines`: every
//! preset): each write is stamped on the pipe's own list and joins its
//! buffers, merged into the last page or in a new buffer as pipe_write
//! would, when anything looks at the pipe from its stamp on
//! ([`Kernel::pipe_settle`]). A write is certain when no reader or poller
//! sleeps on the pipe (it wakes nobody: a write wakes readers only from
//! the wait queue) and the pipe has a free buffer for it and for every
//! write stamped there, each counted as needing a buffer of its own (it
//! does not block: reads only free buffers). A write from another CPU
//! that leaves too few buffers for the stamped writes cuts their folds,
//! and a reader or poller finding the pipe empty ends each fold at its
//! first write stamped there, as for sockets.

use super::pipe::PIPE_DEF_BUFFERS;
use super::task::Pid;
use super::unix_sock::skb_truesize;
use super::Kernel;
use crate::engine::{EventKind, Time};
use std::collections::VecDeque;

/// A folded send's skb, or a folded pipe write, of `n` bytes, queued by
/// `cpu` at `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamped {
    pub at: Time,
    pub cpu: u32,
    pub n: u32,
}

impl Kernel {
    /// Sends on this machine cost the same whatever the socket's state:
    /// they may fold.
    pub fn sends_fold(&self) -> bool {
        let c = &self.machine.cost;
        c.socket_xcpu_lines == 0 && c.socket_lock_hold_ns == 0
    }

    /// A stamped send's segment end has fired by now: before now, or now
    /// and before the event being handled (the order-free tie-break).
    fn stamp_due(&self, s: &Stamped) -> bool {
        s.at < self.now
            || (s.at == self.now
                && self.events.slot(EventKind::CpuDone, s.cpu as usize) < self.fold_slot)
    }

    /// The stamped writes not due yet of socket `i`, or of pipe `i` if
    /// `pipe`.
    fn stamps(&mut self, i: usize, pipe: bool) -> &mut VecDeque<Stamped> {
        if pipe {
            &mut self.pipes[i].sends
        } else {
            &mut self.socks[i].sends
        }
    }

    /// The socket `i` as of now: the folded sends stamped up to now queue
    /// their skbs, in their stamps' order (sock_def_readable finds no
    /// reader asleep: a reader that slept first cut the fold).
    #[inline]
    pub fn sock_settle(&mut self, i: usize) {
        self.settle(i, false);
    }

    /// The pipe `i` as of now: the folded writes stamped up to now add
    /// their bytes, in their stamps' order (they wake nobody, as for
    /// sockets).
    #[inline]
    pub fn pipe_settle(&mut self, i: usize) {
        self.settle(i, true);
    }

    /// `sock_settle` or `pipe_settle`: out of line only where the first
    /// stamped write may be due.
    #[inline]
    fn settle(&mut self, i: usize, pipe: bool) {
        let now = self.now;
        if self.stamps(i, pipe).front().is_some_and(|s| s.at <= now) {
            self.settle_stamped(i, pipe);
        }
    }

    /// `sock_settle` or `pipe_settle` of an object with stamped writes,
    /// the first stamped no later than now.
    #[inline(never)]
    fn settle_stamped(&mut self, i: usize, pipe: bool) {
        let page = self.machine.cost.page_size;
        while let Some(&s) = self.stamps(i, pipe).front() {
            if !self.stamp_due(&s) {
                break;
            }
            self.sends_pending -= 1;
            let cpu = s.cpu as usize;
            if pipe {
                let q = &mut self.pipes[i];
                q.sends.pop_front();
                q.queue_write(cpu, s.n, page);
            } else {
                let q = &mut self.socks[i];
                q.sends.pop_front();
                q.sends_wmem -= skb_truesize(s.n);
                q.queue_skb(cpu, s.n);
            }
        }
    }

    /// A send on `cpu` folds: its skb of `n` bytes goes on socket `i`'s
    /// list (pipe `i`'s if `pipe`), stamped `at` (after the writes due now
    /// are queued, which keeps the list to the writes not yet due; a
    /// fold's stamps come in order, so mostly at the back).
    pub fn send_stamp(&mut self, i: usize, pipe: bool, cpu: usize, n: u32, at: Time) {
        if pipe {
            self.pipe_settle(i);
        } else {
            self.sock_settle(i);
            self.socks[i].sends_wmem += skb_truesize(n);
        }
        let s = Stamped {
            at,
            cpu: cpu as u32,
            n,
        };
        let q = self.stamps(i, pipe);
        let key = |e: &Stamped| (e.at, e.cpu);
        if q.back().is_none_or(|b| key(b) <= key(&s)) {
            q.push_back(s);
        } else {
            let k = q.partition_point(|e| key(e) <= key(&s));
            q.insert(k, s);
        }
        self.sends_pending += 1;
    }

    /// A send of `n` bytes on socket `i` (a write on pipe `i` if `pipe`)
    /// at `at`, folded now, is certain: no reader sleeps, and it fits
    /// behind everything queued or stamped (for a socket, with the
    /// truesize a folded reader frees later counted as still used, so
    /// sock_alloc_send_pskb's wait for memory cannot happen whatever is
    /// read meanwhile; for a pipe, each stamped write counted as taking a
    /// buffer of its own).
    pub fn send_certain(&self, i: usize, pipe: bool, n: u32) -> bool {
        if pipe {
            let q = &self.pipes[i];
            return q.rd_wait.is_empty() && q.buffers_promised() < PIPE_DEF_BUFFERS;
        }
        let s = &self.socks[i];
        s.rd_wait.is_empty() && self.sndbuf_used(i) + skb_truesize(n) <= super::unix_sock::SK_SNDBUF
    }

    /// Socket `i`'s send buffer as the stamped sends will find it at most:
    /// what is charged now, the frees a folded reader stamped later, and
    /// the stamped skbs.
    fn sndbuf_used(&self, i: usize) -> u64 {
        let s = &self.socks[i];
        let due = s.fold.map_or(0, |f| {
            self.fold_reads_due(f as usize) * skb_truesize(self.folds[f as usize].n)
        });
        s.wmem_alloc() + due + s.sends_wmem
    }

    /// A reader found socket `i` (pipe `i` if `pipe`) empty and sleeps:
    /// each send stamped on it later could wake it (sock_def_readable,
    /// pipe_write's wake_up of the readers), as the first of them will.
    /// Each becomes its fold's last, taking effect at its segment's end,
    /// an event; the sends each fold stamped after it are undone. While a
    /// reader sleeps, no send on its socket is stamped: a send that wakes
    /// it, and one whose time depends on such a send (a fold undone
    /// later), is an event.
    pub fn sends_wake_due(&mut self, i: usize, pipe: bool) {
        while let Some(&s) = self.stamps(i, pipe).front() {
            let cpu = s.cpu as usize;
            debug_assert!(self.folded(cpu), "a stamped send not due has its fold");
            let j = self.folds[cpu]
                .ops
                .iter()
                .position(|b| b.end == s.at && b.sock == i);
            self.fold_truncate(cpu, j.expect("the stamped send is its fold's"));
        }
    }

    /// A send from another CPU queued on socket `i` (a write on pipe `i`
    /// if `pipe`): cut the folds whose stamped writes might no longer fit.
    #[inline]
    pub fn sends_after_send(&mut self, i: usize, pipe: bool) {
        if !self.stamps(i, pipe).is_empty() {
            self.sends_check_room(i, pipe);
        }
    }

    /// The stamped writes on socket or pipe `i` fit still, or their folds
    /// are cut.
    #[inline(never)]
    fn sends_check_room(&mut self, i: usize, pipe: bool) {
        let full = if pipe {
            self.pipes[i].buffers_promised() > PIPE_DEF_BUFFERS
        } else {
            self.sndbuf_used(i) > super::unix_sock::SK_SNDBUF
        };
        if full {
            while let Some(&s) = self.stamps(i, pipe).back() {
                self.fold_cut(s.cpu as usize);
            }
        }
    }

    /// End `cpu`'s fold of sends at its send `j`: the sends after it are
    /// undone, and the segment ends where send `j`'s does.
    fn fold_truncate(&mut self, cpu: usize, j: usize) {
        let f = &self.folds[cpu];
        let p = f.p;
        let later: u64 = f.ops[j + 1..].iter().map(|b| b.work).sum::<u64>() + f.last_work;
        let (end, work) = (f.ops[j].end, f.ops[j].work);
        self.send_undo(cpu, p, j);
        let f = &mut self.folds[cpu];
        f.ops.truncate(j);
        f.end = end;
        f.last_work = work;
        self.tasks[p].prog.work_left -= later;
        self.events.push(end, EventKind::CpuDone, cpu);
    }

    /// Undo folded sends `i..` of `cpu`'s fold (their stamped writes leave
    /// their objects' lists) and take `p` back to send `i` awaiting its
    /// effect. The sends stamped now and seen stay, and are queued.
    pub(crate) fn send_undo(&mut self, cpu: usize, p: Pid, i: usize) {
        let ops = std::mem::take(&mut self.folds[cpu].ops);
        let pipe = self.folds[cpu].pipe;
        for b in &ops[i..] {
            let q = self.stamps(b.sock, pipe);
            let at = q.iter().rposition(|s| s.at == b.end && s.cpu == cpu as u32);
            let s = q
                .remove(at.expect("a folded send is stamped"))
                .expect("in range");
            if !pipe {
                self.socks[b.sock].sends_wmem -= skb_truesize(s.n);
            }
            self.sends_pending -= 1;
        }
        let now = self.now;
        for b in ops[..i].iter().rev().take_while(|b| b.end == now) {
            if pipe {
                self.pipe_settle(b.sock);
            } else {
                self.sock_settle(b.sock);
            }
        }
        let prog = &mut self.tasks[p].prog;
        prog.pc = ops[i].pc;
        prog.phase = 1;
        self.fold_rewind(p, &ops[i]);
        self.folds[cpu].ops = ops;
    }
}
