//! Pipes (fs/pipe.c): a ring of 16 page-sized buffers, small writes merged
//! into the last page, exclusive waiters, and sync wakeups only on the
//! empty→non-empty (readers) and full→not-full (writers) transitions.

use super::cacheline::{data_lines, Lines, SharedLines, Use};
use super::fold_send::Stamped;
use super::lock::ContendedLock;
use super::task::Pid;
use super::wait::{WaitQueue, WaitQueueRef};
use super::Kernel;
use std::collections::VecDeque;

/// PIPE_DEF_BUFFERS
pub const PIPE_DEF_BUFFERS: usize = 16;
/// PIPE_BUF (include/uapi/linux/limits.h): writes up to this size are
/// atomic. 4096 on every architecture, whatever its page size.
pub const PIPE_BUF: u32 = 4096;

/// One pipe_buffer: unread bytes start at `offset` and run for `len`.
#[derive(Clone, Copy, Debug)]
struct PipeBuf {
    offset: u32,
    len: u32,
}

/// struct pipe_inode_info
#[derive(Clone, Debug, Default)]
pub struct Pipe {
    bufs: VecDeque<PipeBuf>,
    pub rd_wait: WaitQueue,
    pub wr_wait: WaitQueue,
    /// Someone poll()ed this pipe: writers then wake readers on every write.
    pub poll_usage: bool,
    /// The pipe's lines and its newest data's, as CPUs use them.
    lines: SharedLines,
    /// pipe->mutex, held by pipe_read and pipe_write for their whole work.
    mutex: ContendedLock,
    /// The CPU whose folded reads of this pipe are not all due yet
    /// (kernel/fold.rs).
    pub fold: Option<u32>,
    /// Folded writes not added yet, in their stamps' order
    /// (kernel/fold_send.rs).
    pub sends: VecDeque<Stamped>,
}

impl Pipe {
    pub fn is_empty(&self) -> bool {
        self.bufs.is_empty()
    }

    fn is_full(&self) -> bool {
        self.bufs.len() >= PIPE_DEF_BUFFERS
    }

    /// Bytes `n` can be added now without blocking (all or nothing for a
    /// write of at most PIPE_BUF), each buffer being a `page` of bytes.
    fn room_for(&self, n: u32, page: u32) -> bool {
        let merge = self
            .bufs
            .back()
            .is_some_and(|b| b.offset + b.len + n <= page);
        merge || (!self.is_full() && n <= page)
    }

    /// Append `n` bytes: into the last buffer if they fit in its `page`
    /// (pipe_write's merge into an anon_pipe_buf), else a new buffer.
    fn push(&mut self, n: u32, page: u32) {
        match self.bufs.back_mut() {
            Some(b) if b.offset + b.len + n <= page => b.len += n,
            _ => self.bufs.push_back(PipeBuf { offset: 0, len: n }),
        }
    }

    /// A read of `n` bytes now takes them from the front buffer and leaves
    /// bytes there: it frees no buffer (so wakes no writer) and leaves the
    /// pipe non-empty. Its outcome is certain, and a write before its
    /// instant finds the pipe as it would have (a write reads only the last
    /// buffer's end and the buffer count, which such a read leaves as they
    /// were: kernel/fold.rs).
    pub fn read_certain(&self, n: u32) -> bool {
        self.bufs.front().is_some_and(|b| b.len > n)
    }

    /// Undo a read that took `n` bytes from the front buffer and freed
    /// none: they go back to its front.
    pub fn unread(&mut self, n: u32) {
        let b = self
            .bufs
            .front_mut()
            .expect("a folded read left the buffer");
        b.offset -= n;
        b.len += n;
    }

    /// The buffers the pipe holds, with one for each folded write stamped
    /// on it later: at most what it will hold when they are added.
    pub fn buffers_promised(&self) -> usize {
        self.bufs.len() + self.sends.len()
    }

    /// A write on `cpu` adds `n` bytes, in `page`-sized buffers.
    pub fn queue_write(&mut self, cpu: usize, n: u32, page: u32) {
        self.push(n, page);
        self.lines.wrote(cpu);
    }

    /// Take up to `n` bytes; returns (bytes, whether a slot was freed).
    fn pop(&mut self, n: u32) -> (u32, bool) {
        let mut got = 0;
        let mut freed = false;
        while got < n {
            let Some(b) = self.bufs.front_mut() else {
                break;
            };
            let take = b.len.min(n - got);
            b.offset += take;
            b.len -= take;
            got += take;
            if b.len == 0 {
                self.bufs.pop_front();
                freed = true;
            }
        }
        (got, freed)
    }
}

/// The outcome of a pipe or socket operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Io {
    /// Transferred this many bytes.
    Done(u32),
    /// The task was queued on a wait queue and must sleep.
    Block,
}

impl Kernel {
    /// What a pipe_read or pipe_write of `bytes` on `cpu` pays for
    /// sharing pipe `i` with other CPUs, on top of its own `own` ns of
    /// kernel work starting at `at`: the pipe's lines if another CPU
    /// touched it last, a reader also the data's lines if another CPU
    /// wrote them, then the wait for pipe->mutex (__pipe_lock), which the
    /// op holds from after its syscall entry to before its exit, line
    /// transfers included. 0 where the machine does not model it
    /// (`pipe_xcpu_lines` = 0).
    #[inline]
    pub fn pipe_access(
        &mut self,
        i: usize,
        cpu: usize,
        at: u64,
        own: u64,
        read: Option<u32>,
    ) -> u64 {
        let c = &self.machine.cost;
        if c.pipe_xcpu_lines == 0 {
            return 0;
        }
        let (syscall, lines) = (c.syscall_ns, c.pipe_xcpu_lines);
        let mix = (c.pipe_mix_read_lines, c.pipe_mix_write_lines);
        let pipe = &mut self.pipes[i];
        let reads = read.filter(|_| !pipe.is_empty());
        let op = Use::of(read, !pipe.is_empty());
        let moved = pipe.lines.access(cpu, op);
        let n = Lines {
            object: lines,
            message: reads.map_or(0, data_lines),
            mix: op.mix(mix.0, mix.1),
        };
        let xfer = self.lines_moved(moved, cpu, n);
        let hold = own.saturating_sub(syscall) + xfer;
        // The hand-off is in `xfer`: the lock word moves with the lines.
        let wait = self.pipes[i].mutex.acquire(at + syscall / 2, hold, 0);
        self.stats.ipc_lock_wait_ns += wait;
        xfer + wait
    }

    /// pipe_write of `n` ≤ PIPE_BUF bytes.
    pub fn pipe_write(&mut self, p: Pid, cpu: usize, i: usize, n: u32) -> Io {
        self.pipe_settle(i);
        let page = self.machine.cost.page_size;
        let pipe = &mut self.pipes[i];
        if !pipe.room_for(n, page) {
            self.prepare_to_wait(WaitQueueRef::PipeWrite(i), p, true);
            return Io::Block;
        }
        let was_empty = pipe.is_empty();
        pipe.queue_write(cpu, n, page);
        self.sends_after_send(i, true);
        let pipe = &self.pipes[i];
        // wake_next_writer: only a writer that slept passes the baton on.
        let wake_next = self.tasks[p].prog.woken && !pipe.is_full();
        if was_empty || pipe.poll_usage {
            self.wake_up(WaitQueueRef::PipeRead(i), 1, true, cpu, p);
        }
        if wake_next && !self.pipes[i].wr_wait.is_empty() {
            self.wake_up(WaitQueueRef::PipeWrite(i), 1, true, cpu, p);
        }
        Io::Done(n)
    }

    /// Pipes cost the same whatever the pipe's state on this machine (no
    /// `pipe_xcpu_lines`, so no lines and no pipe->mutex): reads and
    /// writes of them may fold (kernel/fold.rs, kernel/fold_send.rs).
    pub fn pipes_fold(&self) -> bool {
        self.machine.cost.pipe_xcpu_lines == 0
    }

    /// pipe_read of up to `n` bytes.
    pub fn pipe_read(&mut self, p: Pid, cpu: usize, i: usize, n: u32) -> Io {
        self.fold_touch_read(self.pipes[i].fold, cpu);
        self.pipe_settle(i);
        let pipe = &mut self.pipes[i];
        if pipe.is_empty() {
            self.sends_wake_due(i, true);
            self.prepare_to_wait(WaitQueueRef::PipeRead(i), p, true);
            return Io::Block;
        }
        let was_full = pipe.is_full();
        let (got, freed) = pipe.pop(n);
        // wake_next_reader: only a reader that slept passes the baton on.
        let wake_next = self.tasks[p].prog.woken && !pipe.is_empty();
        if was_full && freed {
            self.wake_up(WaitQueueRef::PipeWrite(i), 1, true, cpu, p);
        }
        if wake_next && !self.pipes[i].rd_wait.is_empty() {
            self.wake_up(WaitQueueRef::PipeRead(i), 1, true, cpu, p);
        }
        Io::Done(got)
    }

    /// poll() for POLLIN: returns at once if data is there, else waits
    /// (non-exclusively) for the next write.
    pub fn pipe_poll_in(&mut self, p: Pid, i: usize) -> Io {
        self.pipe_settle(i);
        self.pipes[i].poll_usage = true;
        if !self.pipes[i].is_empty() {
            return Io::Done(0);
        }
        self.sends_wake_due(i, true);
        self.prepare_to_wait(WaitQueueRef::PipeRead(i), p, false);
        Io::Block
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hundred_byte_writes_pack_forty_per_page_and_fill_at_640() {
        let mut pipe = Pipe::default();
        let mut n = 0;
        while pipe.room_for(100, 4096) {
            pipe.push(100, 4096);
            n += 1;
        }
        assert_eq!(n, 640);
        assert!(pipe.is_full());
        // Reading 40 messages frees exactly one page.
        let mut freed = 0;
        for _ in 0..40 {
            let (got, f) = pipe.pop(100);
            assert_eq!(got, 100);
            freed += f as u32;
        }
        assert_eq!(freed, 1);
        assert!(pipe.room_for(100, 4096));
    }

    #[test]
    fn with_64k_pages_a_pipe_holds_sixteen_times_as_many_messages() {
        let mut pipe = Pipe::default();
        let mut n = 0;
        while pipe.room_for(100, 65536) {
            pipe.push(100, 65536);
            n += 1;
        }
        // 655 messages of 100 bytes in each 64 KiB page, 16 pages.
        assert_eq!(n, 16 * 655);
    }
}
