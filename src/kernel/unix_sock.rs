//! AF_UNIX stream sockets (net/unix/af_unix.c): one skb per write charged
//! to the sender's send buffer, a reader woken (sync, non-exclusive) for
//! every skb, and writers woken once the buffer drains below a quarter.

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

/// A connected socket pair seen from the receiving side: its receive queue,
/// and the peer's send-buffer accounting (all writers share the peer end).
#[derive(Clone, Debug, Default)]
pub struct UnixSock {
    /// Each queued skb: its unread bytes and its length, whose truesize is
    /// charged to the sender. One queue, so a read touches one buffer.
    queue: VecDeque<(u32, u32)>,
    /// sk_wmem_alloc of the sending end.
    wmem_alloc: u64,
    pub rd_wait: WaitQueue,
    pub wr_wait: WaitQueue,
}

impl Kernel {
    /// unix_stream_sendmsg of one message of `n` bytes.
    pub fn unix_send(&mut self, p: Pid, cpu: usize, i: usize, n: u32) -> Io {
        let s = &mut self.socks[i];
        // sock_alloc_send_pskb waits while the send buffer is used up.
        if s.wmem_alloc >= SK_SNDBUF {
            self.prepare_to_wait(WaitQueueRef::SockWrite(i), p, false);
            return Io::Block;
        }
        let ts = skb_truesize(n);
        s.wmem_alloc += ts;
        s.queue.push_back((n, n));
        // sk_data_ready → sock_def_readable: wake readers if any sleep.
        if !self.socks[i].rd_wait.is_empty() {
            self.wake_up(WaitQueueRef::SockRead(i), 1, true, cpu, p);
        }
        Io::Done(n)
    }

    /// unix_stream_recvmsg of up to `n` bytes.
    pub fn unix_recv(&mut self, p: Pid, cpu: usize, i: usize, n: u32) -> Io {
        let s = &mut self.socks[i];
        if s.queue.is_empty() {
            self.prepare_to_wait(WaitQueueRef::SockRead(i), p, false);
            return Io::Block;
        }
        let mut got = 0;
        let mut freed = false;
        while got < n {
            let Some(front) = s.queue.front_mut() else {
                break;
            };
            let take = front.0.min(n - got);
            front.0 -= take;
            got += take;
            if front.0 == 0 {
                s.wmem_alloc -= skb_truesize(front.1);
                s.queue.pop_front();
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
}
