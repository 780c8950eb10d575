//! AF_UNIX stream sockets (net/unix/af_unix.c): one skb per write charged
//! to the sender's send buffer, a reader woken (sync, non-exclusive) for
//! every skb, and writers woken once the buffer drains below a quarter.

use super::cacheline::{data_lines, Lines, SharedLines, Use};
use super::fold_send::Stamped;
use super::lock::ContendedLock;
use super::pipe::Io;
use super::task::Pid;
use super::wait::WaitQueue;
use super::wait::WaitQueueRef;
use super::Kernel;
use std::collections::VecDeque;

/// net.core.wmem_default: the default sk_sndbuf.
pub const SK_SNDBUF: u64 = 212_992;

/// skb->truesize of a small unix stream skb: the data rounded to a cache
/// line plus the sk_buff and shared-info overhead (≈640 B on x86-64), so a
/// 100 B message costs 768 B of send buffer.
pub fn skb_truesize(bytes: u32) -> u64 {
    640 + (bytes as u64).next_multiple_of(64)
}

/// Cache lines of an skb beyond its data, as a reader on another CPU
/// pulls them: `struct sk_buff` (232 B on x86-64 in v6.x: 4 lines) and the
/// first line of `struct skb_shared_info` at the end of the data.
pub const SKB_LINES: u64 = 5;

/// A run of queued skbs of one length: the first has `unread` bytes left,
/// the other `count - 1` are whole.
#[derive(Clone, Copy, Debug, Default)]
struct Run {
    unread: u32,
    len: u32,
    count: u32,
}

/// A receive queue of skbs, kept as runs of equal length. The first run
/// lives inline, so a stream of equal messages (hackbench's) is a count in
/// the socket itself, not a buffer elsewhere that each read misses in the
/// cache.
#[derive(Clone, Debug, Default)]
struct SkbQueue {
    /// The front run; `count` 0 means the queue is empty.
    head: Run,
    rest: VecDeque<Run>,
}

impl SkbQueue {
    fn is_empty(&self) -> bool {
        self.head.count == 0
    }

    /// Queue an skb of `n` bytes.
    fn push(&mut self, n: u32) {
        let back = match self.rest.back_mut() {
            Some(r) => r,
            None => &mut self.head,
        };
        if back.count > 0 && back.len == n {
            back.count += 1;
            return;
        }
        let run = Run {
            unread: n,
            len: n,
            count: 1,
        };
        if self.is_empty() {
            self.head = run;
        } else {
            self.rest.push_back(run);
        }
    }

    /// Put a whole skb of `n` bytes back at the front.
    fn unread(&mut self, n: u32) {
        let h = &mut self.head;
        if h.count > 0 && h.len == n && h.unread == n {
            h.count += 1;
            return;
        }
        if h.count > 0 {
            self.rest.push_front(*h);
        }
        self.head = Run {
            unread: n,
            len: n,
            count: 1,
        };
    }

    /// Read up to `n` bytes of the front skb: the bytes taken, and the
    /// skb's length if it is now consumed (and dequeued).
    fn take_front(&mut self, n: u32) -> (u32, Option<u32>) {
        let h = &mut self.head;
        let take = h.unread.min(n);
        h.unread -= take;
        if h.unread > 0 {
            return (take, None);
        }
        let len = h.len;
        h.count -= 1;
        if h.count > 0 {
            h.unread = h.len;
        } else {
            self.head = self.rest.pop_front().unwrap_or_default();
        }
        (take, Some(len))
    }
}

/// A connected socket pair seen from the receiving side: its receive queue,
/// and the peer's send-buffer accounting (all writers share the peer end).
#[derive(Clone, Debug, Default)]
pub struct UnixSock {
    /// The queued skbs; each one's truesize is charged to the sender.
    queue: SkbQueue,
    /// sk_wmem_alloc of the sending end.
    wmem_alloc: u64,
    pub rd_wait: WaitQueue,
    pub wr_wait: WaitQueue,
    /// The socket's lines and its newest skb's (the CPU that allocated
    /// and wrote it), as CPUs use them.
    lines: SharedLines,
    /// unix_state_lock of the receiving socket with its receive queue's
    /// lock, as the senders take them.
    lock: ContendedLock,
    /// The CPU whose folded reads of this socket are not all due yet
    /// (kernel/fold.rs).
    pub fold: Option<u32>,
    /// Folded sends' skbs not queued yet, in their stamps' order, and
    /// their truesize (kernel/fold_send.rs).
    pub sends: VecDeque<Stamped>,
    pub sends_wmem: u64,
}

impl UnixSock {
    /// A read of `n` bytes now takes the front skb, whole and of `n`
    /// bytes, and wakes nobody (no writer waits): its outcome is certain.
    pub fn read_certain(&self, n: u32) -> bool {
        let h = &self.queue.head;
        h.count > 0 && h.len == n && h.unread == n && self.wr_wait.is_empty()
    }

    /// Undo a read that took a whole skb of `n` bytes: it goes back to
    /// the front, its truesize back to the send buffer.
    pub fn unread(&mut self, n: u32) {
        self.queue.unread(n);
        self.wmem_alloc += skb_truesize(n);
    }

    /// A message is queued.
    pub fn has_data(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Where a read on `cpu` now would pull message lines from (fold.rs).
    pub fn read_sources(&self, cpu: usize) -> (Option<usize>, Option<usize>) {
        self.lines.read_sources(cpu)
    }

    /// The reader on `cpu` touches the socket's lines again (fold.rs).
    pub fn retouch(&mut self, cpu: usize) {
        self.lines.retouch(cpu);
    }

    /// sk_wmem_alloc of the sending end.
    pub fn wmem_alloc(&self) -> u64 {
        self.wmem_alloc
    }

    /// A send on `cpu` queues an skb of `n` bytes (skb_queue_tail of
    /// unix_stream_sendmsg), charged to the send buffer.
    #[inline]
    pub fn queue_skb(&mut self, cpu: usize, n: u32) {
        self.wmem_alloc += skb_truesize(n);
        self.queue.push(n);
        self.lines.wrote(cpu);
    }
}

impl Kernel {
    /// What a unix_stream_sendmsg, or a recvmsg (`read`: its bytes), on
    /// `cpu` pays for sharing socket `i` with other CPUs, on top of its own
    /// `own` ns of kernel work starting at `at`: the socket's lines if
    /// another CPU touched it last, a reader also the skb's lines (the
    /// sk_buff, its shared info and the data: [`SKB_LINES`] more than the
    /// bytes) if another CPU wrote it. A sender then queues its skb under
    /// the receiver's unix_state_lock and queue lock, after its own work
    /// (skb allocation and copy happen before), waiting behind other
    /// senders. The receiver is not made to wait: on the 16-CPU host a
    /// read slowed by 36 ns per writer added where a write slowed by 233
    /// (scenarios/machines/emr-16.toml, `unix_writers_*`). 0 where the
    /// machine does not model it (`socket_xcpu_lines` = 0).
    #[inline]
    pub fn unix_access(
        &mut self,
        i: usize,
        cpu: usize,
        at: u64,
        own: u64,
        read: Option<u32>,
    ) -> u64 {
        let folder = self.fold_writer(i, cpu, read.is_some());
        let c = &self.machine.cost;
        if c.socket_xcpu_lines == 0 {
            return 0;
        }
        let (lines, hold) = (c.socket_xcpu_lines, c.socket_lock_hold_ns);
        let mix = (c.socket_mix_read_lines, c.socket_mix_write_lines);
        // A write sees the messages a fold read early as still queued, and
        // the lines as the fold's reads up to now left them.
        let early = folder.is_some_and(|f| self.fold_reads_due(f) > 0);
        if let Some(f) = folder {
            self.fold_settle(f);
        }
        let s = &mut self.socks[i];
        let reads = read.filter(|_| !s.queue.is_empty());
        let op = Use::of(read, !s.queue.is_empty() || early);
        let moved = s.lines.access(cpu, op);
        let n = Lines {
            object: lines,
            message: reads.map_or(0, |n| SKB_LINES + data_lines(n)),
            mix: op.mix(mix.0, mix.1),
        };
        let xfer = self.lines_moved(moved, cpu, n);
        if let Some(f) = folder {
            self.fold_after_write(f, Some(cpu));
        }
        if read.is_some() {
            return xfer;
        }
        // The hold is measured per sender added, hand-off included.
        let wait = self.socks[i].lock.acquire(at + own + xfer, hold, 0);
        self.stats.ipc_lock_wait_ns += wait;
        xfer + wait
    }

    /// The CPU folding reads of socket `i` (fold.rs), which `cpu` now
    /// touches: a write goes in behind the fold's reads; another reader
    /// cuts the fold (None then).
    fn fold_writer(&mut self, i: usize, cpu: usize, read: bool) -> Option<usize> {
        let f = self.socks[i].fold.filter(|&c| c as usize != cpu)? as usize;
        if read {
            self.fold_cut(f);
            return None;
        }
        Some(f)
    }

    /// unix_stream_sendmsg of one message of `n` bytes.
    pub fn unix_send(&mut self, p: Pid, cpu: usize, i: usize, n: u32) -> Io {
        self.sock_settle(i);
        // A fold's reads stamped later have not freed their skbs yet: a
        // send that would find the buffer used up cuts it and waits.
        if let Some(f) = self.fold_writer(i, cpu, false) {
            if self.fold_sndbuf_full(f, self.socks[i].wmem_alloc, SK_SNDBUF) {
                self.fold_cut(f);
            }
        }
        let s = &mut self.socks[i];
        // sock_alloc_send_pskb waits while the send buffer is used up.
        if s.wmem_alloc >= SK_SNDBUF {
            self.prepare_to_wait(WaitQueueRef::SockWrite(i), p, false);
            return Io::Block;
        }
        s.queue_skb(cpu, n);
        self.sends_after_send(i, false);
        if let Some(f) = self.socks[i].fold.filter(|&c| c as usize != cpu) {
            self.fold_after_write(f as usize, None);
        }
        // sk_data_ready → sock_def_readable: wake readers if any sleep.
        if !self.socks[i].rd_wait.is_empty() {
            self.wake_up(WaitQueueRef::SockRead(i), 1, true, cpu, p);
        }
        Io::Done(n)
    }

    /// unix_stream_recvmsg of up to `n` bytes.
    pub fn unix_recv(&mut self, p: Pid, cpu: usize, i: usize, n: u32) -> Io {
        self.fold_touch_read(self.socks[i].fold, cpu);
        self.sock_settle(i);
        let s = &mut self.socks[i];
        if s.queue.is_empty() {
            self.sends_wake_due(i, false);
            self.prepare_to_wait(WaitQueueRef::SockRead(i), p, false);
            return Io::Block;
        }
        let mut got = 0;
        let mut freed = false;
        while got < n && !s.queue.is_empty() {
            let (take, consumed) = s.queue.take_front(n - got);
            got += take;
            if let Some(len) = consumed {
                s.wmem_alloc -= skb_truesize(len);
                freed = true;
            }
        }
        // sock_wfree → unix_write_space: writable again below 25 % use.
        let writable = s.wmem_alloc * 4 <= SK_SNDBUF;
        if freed && writable && !self.socks[i].wr_wait.is_empty() {
            self.wake_up(WaitQueueRef::SockWrite(i), 0, true, cpu, p);
        }
        Io::Done(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hundred_byte_messages_fill_the_send_buffer_after_278() {
        assert_eq!(skb_truesize(100), 768);
        // Sends are allowed while wmem < sndbuf, so the last one overshoots.
        let n = SK_SNDBUF.div_ceil(skb_truesize(100));
        assert_eq!(n, 278);
    }

    #[test]
    fn an_unread_skb_goes_back_to_the_front() {
        // Reads of whole skbs undone newest first (a fold's cut) leave
        // the queue as it was, a later send behind them included.
        let mut q = SkbQueue::default();
        for n in [100, 100, 50, 100] {
            q.push(n);
        }
        let drain = |mut q: SkbQueue| {
            let mut v = Vec::new();
            while !q.is_empty() {
                v.push(q.take_front(u32::MAX).0);
            }
            v
        };
        let before = drain(q.clone());
        let mut read = q.clone();
        for want in [100, 100, 50] {
            assert_eq!(read.take_front(want), (want, Some(want)));
        }
        read.push(100);
        for n in [50, 100, 100] {
            read.unread(n);
        }
        let mut expected = before;
        expected.push(100);
        assert_eq!(drain(read), expected);
    }

    #[test]
    fn runs_read_like_a_queue_of_skbs() {
        // Against a plain queue of (unread, length) skbs: sends of a few
        // lengths (0 included), reads of any size, partial reads.
        let mut q = SkbQueue::default();
        let mut model: VecDeque<(u32, u32)> = VecDeque::new();
        let mut r = crate::engine::Rng::new(11, 0);
        for _ in 0..20_000 {
            if r.range(0, 2) > 0 {
                let n = [0, 50, 100, 100, 100][r.range(0, 4) as usize];
                q.push(n);
                model.push_back((n, n));
            } else if !model.is_empty() {
                assert!(!q.is_empty());
                let want = r.range(1, 260) as u32;
                let (got, consumed) = q.take_front(want);
                let front = model.front_mut().unwrap();
                let take = front.0.min(want);
                front.0 -= take;
                let done = (front.0 == 0).then_some(front.1);
                if done.is_some() {
                    model.pop_front();
                }
                assert_eq!((got, consumed), (take, done));
            }
            assert_eq!(q.is_empty(), model.is_empty());
        }
    }
}
