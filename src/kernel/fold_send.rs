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

use super::task::Pid;
use super::unix_sock::skb_truesize;
use super::Kernel;
use crate::engine::{EventKind, Time};

/// A folded send's skb of `n` bytes, queued by `cpu` at `at`.
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

    /// The socket `i` as of now: the folded sends stamped up to now queue
    /// their skbs, in their stamps' order (sock_def_readable finds no
    /// reader asleep: a reader that slept first cut the fold).
    #[inline]
    pub fn sock_settle(&mut self, i: usize) {
        if !self.socks[i].sends.is_empty() {
            self.sock_settle_stamped(i);
        }
    }

    /// `sock_settle` of a socket with stamped sends.
    #[inline(never)]
    fn sock_settle_stamped(&mut self, i: usize) {
        while let Some(&s) = self.socks[i].sends.front() {
            if !self.stamp_due(&s) {
                break;
            }
            self.socks[i].sends.pop_front();
            self.socks[i].sends_wmem -= skb_truesize(s.n);
            self.sends_pending -= 1;
            self.socks[i].queue_skb(s.cpu as usize, s.n);
        }
    }

    /// A send on `cpu` folds: its skb of `n` bytes goes on socket `i`'s
    /// list, stamped `at` (after the skbs due now are queued, which keeps
    /// the list to the sends not yet due; a fold's stamps come in order,
    /// so mostly at the back).
    pub fn send_stamp(&mut self, i: usize, cpu: usize, n: u32, at: Time) {
        self.sock_settle(i);
        let s = Stamped {
            at,
            cpu: cpu as u32,
            n,
        };
        let q = &mut self.socks[i].sends;
        let key = |e: &Stamped| (e.at, e.cpu);
        if q.back().is_none_or(|b| key(b) <= key(&s)) {
            q.push_back(s);
        } else {
            let k = q.partition_point(|e| key(e) <= key(&s));
            q.insert(k, s);
        }
        self.socks[i].sends_wmem += skb_truesize(n);
        self.sends_pending += 1;
    }

    /// A send of `n` bytes on socket `i` at `at`, folded now, is certain:
    /// no reader sleeps, and its skb fits behind every skb queued or
    /// stamped (with the truesize a folded reader frees later counted as
    /// still used), so sock_alloc_send_pskb's wait for memory cannot
    /// happen whatever is read meanwhile.
    pub fn send_certain(&self, i: usize, n: u32) -> bool {
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

    /// A reader found socket `i` empty and sleeps: each send stamped on
    /// it later could wake it (sock_def_readable), as the first of them
    /// will. Each becomes its fold's last, taking effect at its segment's
    /// end, an event; the sends each fold stamped after it are undone.
    /// While a reader sleeps, no send on its socket is stamped: a send
    /// that wakes it, and one whose time depends on such a send (a fold
    /// undone later), is an event.
    pub fn sends_wake_due(&mut self, i: usize) {
        while let Some(&s) = self.socks[i].sends.front() {
            let cpu = s.cpu as usize;
            debug_assert!(self.folded(cpu), "a stamped send not due has its fold");
            let j = self.folds[cpu]
                .ops
                .iter()
                .position(|b| b.end == s.at && b.sock == i);
            self.fold_truncate(cpu, j.expect("the stamped send is its fold's"));
        }
    }

    /// A send from another CPU queued on socket `i`: cut the folds whose
    /// stamped skbs might no longer fit.
    #[inline]
    pub fn sends_after_send(&mut self, i: usize) {
        if self.socks[i].sends_wmem > 0 {
            self.sends_check_room(i);
        }
    }

    /// The stamped skbs on socket `i` fit in its send buffer still, or
    /// their folds are cut.
    #[inline(never)]
    fn sends_check_room(&mut self, i: usize) {
        if self.sndbuf_used(i) > super::unix_sock::SK_SNDBUF {
            while let Some(s) = self.socks[i].sends.back() {
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

    /// Undo folded sends `i..` of `cpu`'s fold (their stamped skbs leave
    /// their sockets' lists) and take `p` back to send `i` awaiting its
    /// effect. The sends stamped now and seen stay, and are queued.
    pub(crate) fn send_undo(&mut self, cpu: usize, p: Pid, i: usize) {
        let ops = std::mem::take(&mut self.folds[cpu].ops);
        for b in &ops[i..] {
            let q = &mut self.socks[b.sock].sends;
            let at = q.iter().rposition(|s| s.at == b.end && s.cpu == cpu as u32);
            let s = q
                .remove(at.expect("a folded send is stamped"))
                .expect("in range");
            self.socks[b.sock].sends_wmem -= skb_truesize(s.n);
            self.sends_pending -= 1;
        }
        let now = self.now;
        for b in ops[..i].iter().rev().take_while(|b| b.end == now) {
            self.sock_settle(b.sock);
        }
        let prog = &mut self.tasks[p].prog;
        prog.pc = ops[i].pc;
        prog.phase = 1;
        self.fold_rewind(p, &ops[i]);
        self.folds[cpu].ops = ops;
    }
}
