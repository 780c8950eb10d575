//! Futexes (kernel/futex/): FUTEX_WAIT sleeps while the word still holds
//! the expected value, FUTEX_WAKE wakes waiters in FIFO order. Two users
//! are modelled on top: pthread_join through CLONE_CHILD_CLEARTID (the
//! kernel clears the tid word at thread exit and wakes the joiner), and
//! pthread_barrier_wait.

use super::pipe::Io;
use super::program::Op;
use super::task::Pid;
use super::wait::{WaitQueue, WaitQueueRef};
use super::Kernel;

/// A futex word and its hash-bucket waiters.
#[derive(Clone, Debug, Default)]
pub struct Futex {
    pub val: u32,
    pub wait: WaitQueue,
    /// A trace replay's count word that stands for a socket's wait queue:
    /// its waiters queue as sock_wait_for_wmem's and
    /// unix_stream_data_wait's prepare_to_wait does, non-exclusively, at
    /// the head (the last to wait is woken first). A futex's waiters, and
    /// a pipe's (wait_event_interruptible_exclusive), queue at the tail.
    pub nonexclusive: bool,
}

/// pthread_barrier_t: `count` threads meet, then all leave.
#[derive(Clone, Debug, Default)]
pub struct Barrier {
    pub count: u32,
    pub arrived: u32,
    pub wait: WaitQueue,
}

impl Kernel {
    /// A new futex word holding `val`.
    pub fn futex_new(&mut self, val: u32) -> usize {
        self.futexes.push(Futex {
            val,
            ..Futex::default()
        });
        self.futexes.len() - 1
    }

    /// futex_wait in a user-space loop: sleep while the word equals `val`.
    pub fn futex_wait(&mut self, p: Pid, f: usize, val: u32) -> Io {
        if self.futexes[f].val != val {
            return Io::Done(0);
        }
        self.prepare_to_wait(WaitQueueRef::Futex(f), p, true);
        Io::Block
    }

    /// Trace replay's wait on a counting word: return at once when it
    /// holds `need` posts, else sleep until a post wakes the task.
    pub fn futex_wait_count(&mut self, p: Pid, f: usize, need: u32) -> Io {
        if self.futexes[f].val >= need {
            return Io::Done(0);
        }
        let exclusive = !self.futexes[f].nonexclusive;
        self.prepare_to_wait(WaitQueueRef::Futex(f), p, exclusive);
        Io::Block
    }

    /// Trace replay's write waiting for room: return at once when queue
    /// words `written` − `read` hold fewer than `full` bytes
    /// (sock_alloc_send_pskb's sk_wmem_alloc < sk_sndbuf, pipe_write's
    /// ring not full), else sleep until a read wakes the task.
    pub fn futex_wait_room(&mut self, p: Pid, written: usize, read: usize, full: u32) -> Io {
        if self.futexes[written]
            .val
            .saturating_sub(self.futexes[read].val)
            < full
        {
            return Io::Done(0);
        }
        let exclusive = !self.futexes[read].nonexclusive;
        self.prepare_to_wait(WaitQueueRef::Futex(read), p, exclusive);
        Io::Block
    }

    /// Trace replay's write to a queue: add `n` to its byte count, then
    /// wake every reader whose count is there (pipe_write's and
    /// sock_def_readable's wake_up_interruptible_sync_poll; the kernel
    /// wakes one exclusive reader, who reads what is there: a replayed
    /// reader waits for the bytes it recorded reading). A read wakes the
    /// writers waiting for room once the queue holds at most their
    /// `level` (unix_write_space, pipe_read's wake_writer).
    pub fn futex_post_count(&mut self, f: usize, n: u32, cpu: usize, waker: Pid) {
        let val = self.futexes[f].val.saturating_add(n);
        self.futexes[f].val = val;
        self.wake_up_ready(WaitQueueRef::Futex(f), cpu, waker, |k, t| {
            let prog = &k.tasks[t].prog;
            match prog.ops.get(prog.pc) {
                Some(Op::AwaitWake { need, .. }) => *need <= val,
                Some(Op::AwaitRoom { written, level, .. }) => {
                    k.futexes[*written].val.saturating_sub(val) <= *level
                }
                _ => true,
            }
        });
    }

    /// Store `val` in the word, then futex_wake up to `nr` waiters.
    pub fn futex_store_wake(&mut self, f: usize, val: u32, nr: usize, cpu: usize, waker: Pid) {
        self.futexes[f].val = val;
        self.wake_up(WaitQueueRef::Futex(f), nr, false, cpu, waker);
    }

    /// pthread_barrier_wait: arrive; the last arrival wakes everyone.
    /// Returns Block when the caller must wait for the others.
    pub fn barrier_arrive(&mut self, p: Pid, b: usize, cpu: usize) -> Io {
        let bar = &mut self.barriers[b];
        bar.arrived += 1;
        if bar.arrived < bar.count {
            self.prepare_to_wait(WaitQueueRef::Barrier(b), p, true);
            return Io::Block;
        }
        bar.arrived = 0;
        self.wake_up(WaitQueueRef::Barrier(b), 0, false, cpu, p);
        Io::Done(0)
    }

    /// Whether a task that arrived at barrier `b` has been released.
    pub fn barrier_released(&mut self, p: Pid, b: usize) -> bool {
        !self.barriers[b].wait.contains(p)
    }
}
