//! Cache lines of shared kernel objects that move between CPUs.
//!
//! A pipe or a socket is written by one CPU and read by another: each
//! operation from a CPU other than the one that touched the object last
//! first pulls the object's lines over (its lock word, head/tail indices,
//! wait-queue heads, the data and, for a socket, the skb the other side
//! allocated or will free). The model keeps, per object, the CPU that
//! touched it last; an operation from another CPU pays the object's line
//! count times one line transfer at that distance
//! (`Machine::line_transfer_ns`, from calibrate's `line_*` primitive or the
//! preset's published core-to-core latency).
//!
//! The data itself moves too: a reader pulls each message's lines from
//! the CPU that wrote it. The model remembers the CPU that wrote an
//! object's newest data; a read from another CPU pays the message's lines
//! (its bytes, and for a socket the skb around them) on top of the
//! object's.
//!
//! Messages from mixed CPUs cost more again: a sender links its message
//! behind one another CPU wrote (the tail skb, the tail pipe buffer), and
//! a reader of messages from many CPUs frees each into another CPU's slab
//! (an skb's `struct slab` and memcg vector are rarely the previous one's).
//! The model remembers the CPU of the newest two messages: a send onto a
//! queued message of another CPU pays the write's mix lines, a read while
//! the newest two came from different CPUs the read's, from calibrate's
//! writers taking turns against one writer (`*_mix_*_lines`).

use super::Kernel;

impl Kernel {
    /// The time `moved`'s lines take to come to `cpu`: `n.object` of the
    /// object's, `n.message` of the message's and `n.mix` for messages
    /// from mixed CPUs, each from the CPU it comes from (none from `cpu`
    /// itself), counted in `ipc_line_ns`.
    #[inline]
    pub fn lines_moved(&mut self, moved: Moved, cpu: usize, n: Lines) -> u64 {
        let m = &self.machine;
        let ns = |from: Option<usize>, n: u64| from.map_or(0, |f| n * m.line_transfer_ns(f, cpu));
        let total =
            ns(moved.object, n.object) + ns(moved.message, n.message) + ns(moved.mix, n.mix);
        self.stats.ipc_line_ns += total;
        total
    }
}

/// A shared object's lines and its newest two messages', as CPUs use them.
#[derive(Clone, Copy, Debug, Default)]
pub struct SharedLines {
    /// The CPU that touched the object's lines last.
    object: LastTouch,
    /// The CPU that wrote its newest message.
    message: LastTouch,
    /// The CPU that wrote the message before it.
    before: LastTouch,
}

/// How many lines of each kind an operation touches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lines {
    pub object: u64,
    pub message: u64,
    pub mix: u64,
}

/// Where the lines an operation needs come from (None: from nowhere, they
/// are on its CPU already, or the operation does not need them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moved {
    pub object: Option<usize>,
    pub message: Option<usize>,
    /// Messages from mixed CPUs: the newest message's CPU.
    pub mix: Option<usize>,
}

/// What an operation does to a shared object's messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// A write; `queued`: messages wait in the object (it appends to one).
    Write { queued: bool },
    /// A read; `message`: it reads a queued message.
    Read { message: bool },
}

impl Use {
    /// A read (`read`: its bytes) or a write, on an object where messages
    /// are `queued` or not.
    #[inline]
    pub fn of(read: Option<u32>, queued: bool) -> Use {
        match read {
            Some(_) => Use::Read { message: queued },
            None => Use::Write { queued },
        }
    }

    /// Its mix lines: `read`'s or `write`'s.
    #[inline]
    pub fn mix(self, read: u64, write: u64) -> u64 {
        match self {
            Use::Read { .. } => read,
            Use::Write { .. } => write,
        }
    }
}

impl SharedLines {
    /// `cpu` uses the object: where the object's, the message's and the
    /// mixed messages' lines come from.
    #[inline]
    pub fn access(&mut self, cpu: usize, op: Use) -> Moved {
        let newest = self.message.other_than(cpu);
        let (message, mix) = match op {
            Use::Write { queued } => (None, newest.filter(|_| queued)),
            Use::Read { message: false } => (None, None),
            Use::Read { message: true } => (newest, newest.filter(|_| self.mixed())),
        };
        Moved {
            object: self.object.touch(cpu),
            message,
            mix,
        }
    }

    /// `cpu` is the object's last user again (a folded read after a
    /// write, kernel/fold.rs).
    pub fn retouch(&mut self, cpu: usize) {
        self.object.touch(cpu);
    }

    /// Where a read on `cpu` now would pull the newest message's lines
    /// from, and the mixed messages' (as `access` finds them, touching
    /// nothing).
    pub fn read_sources(&self, cpu: usize) -> (Option<usize>, Option<usize>) {
        let newest = self.message.other_than(cpu);
        (newest, newest.filter(|_| self.mixed()))
    }

    /// The newest two messages came from different CPUs.
    fn mixed(&self) -> bool {
        self.before.0 != u32::MAX && self.before != self.message
    }

    /// `cpu` wrote a message into the object.
    pub fn wrote(&mut self, cpu: usize) {
        self.before = self.message;
        self.message.touch(cpu);
    }
}

/// The CPU that touched a shared object's cache lines last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LastTouch(u32);

impl Default for LastTouch {
    /// Not touched yet: the first operation pays nothing (the object was
    /// just created by its first user).
    fn default() -> Self {
        LastTouch(u32::MAX)
    }
}

impl LastTouch {
    /// `cpu` touches the object: returns the CPU the lines come from, if
    /// it is another one.
    fn touch(&mut self, cpu: usize) -> Option<usize> {
        let from = self.other_than(cpu);
        self.0 = cpu as u32;
        from
    }

    /// The CPU that touched it last, if it is not `cpu`.
    fn other_than(&self, cpu: usize) -> Option<usize> {
        (self.0 != u32::MAX && self.0 as usize != cpu).then_some(self.0 as usize)
    }
}

/// Cache lines of a message of `bytes` bytes of data.
pub fn data_lines(bytes: u32) -> u64 {
    (bytes as u64).div_ceil(64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_come_from_the_last_other_cpu() {
        let mut t = LastTouch::default();
        assert_eq!(t.touch(3), None);
        assert_eq!(t.touch(3), None);
        assert_eq!(t.touch(5), Some(3));
        assert_eq!(t.touch(3), Some(5));
    }

    #[test]
    fn a_reader_pulls_the_message_from_its_writer() {
        let mut s = SharedLines::default();
        s.access(1, Use::Write { queued: false });
        s.wrote(1);
        let read = s.access(2, Use::Read { message: true });
        assert_eq!((read.object, read.message), (Some(1), Some(1)));
        // The reader's next look at the object finds its lines at home;
        // a message it reads again still comes from the writer.
        let again = s.access(2, Use::Read { message: true });
        assert_eq!((again.object, again.message), (None, Some(1)));
        assert_eq!(s.access(1, Use::Write { queued: true }).message, None);
    }

    #[test]
    fn messages_from_mixed_cpus_pay_the_mix_lines() {
        let mut s = SharedLines::default();
        let (w, r) = (Use::Write { queued: true }, Use::Read { message: true });
        // One writer: never mixed, on either side.
        for _ in 0..3 {
            assert_eq!(s.access(1, w).mix, None);
            s.wrote(1);
            assert_eq!(s.access(0, r).mix, None);
        }
        // A second writer appends behind the first's message, and the
        // reader then sees the newest two from different CPUs.
        assert_eq!(s.access(2, w).mix, Some(1));
        assert_eq!(s.access(2, Use::Write { queued: false }).mix, None);
        s.wrote(2);
        assert_eq!(s.access(0, r).mix, Some(2));
        // The writer appending to its own message pays nothing more.
        assert_eq!(s.access(2, w).mix, None);
    }
}
