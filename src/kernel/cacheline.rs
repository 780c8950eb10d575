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

use super::Kernel;

impl Kernel {
    /// `lines` cache lines coming to `cpu` from `from` (None: they are
    /// here already), counted in `ipc_line_ns`.
    pub fn lines_from(&mut self, from: Option<usize>, cpu: usize, lines: u64) -> u64 {
        let ns = from.map_or(0, |f| lines * self.machine.line_transfer_ns(f, cpu));
        self.stats.ipc_line_ns += ns;
        ns
    }
}

/// The CPU that touched a shared object's cache lines last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LastTouch(u32);

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
    pub fn touch(&mut self, cpu: usize) -> Option<usize> {
        let from = self.other_than(cpu);
        self.0 = cpu as u32;
        from
    }

    /// The CPU that touched it last, if it is not `cpu`.
    pub fn other_than(&self, cpu: usize) -> Option<usize> {
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
}
