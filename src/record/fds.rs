//! What each fd of the recorded command names, read from `/proc` while
//! it runs: its pipes (`pipe:[INODE]`, both ends one inode) and sockets
//! (`socket:[INODE]`, one inode per end), and each UNIX socket's peer
//! from the kernel's `sock_diag` netlink interface (`UNIX_DIAG_PEER`, as
//! `ss -x` shows it). The syscall tracepoints give a read's fd, not its
//! object, and a `pipe2`/`socketpair` writes its fds to user memory,
//! which a tracepoint does not show: sampling is what there is without
//! kprobes.

use super::autogroup::{self, Place};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// What the samples saw of the command's tasks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// (process id, fd) → the pipe or socket it named from each sample
    /// on (CLOCK_MONOTONIC ns, the clock of `perf record -k mono`), one
    /// entry per change: an fd closed and reused names another object;
    /// "" is another kind of file.
    pub fds: BTreeMap<(u32, u32), Vec<(u64, String)>>,
    /// Process id → the times it was sampled (CLOCK_MONOTONIC ns).
    pub sampled: BTreeMap<u32, Vec<u64>>,
    /// Thread id → its process id (threads share the process's fds).
    pub threads: BTreeMap<u32, u32>,
    /// UNIX socket inode → its peer's inode.
    pub peers: BTreeMap<u64, u64>,
    /// The processes of the command's tree, first seen in this order.
    pub tree: Vec<u32>,
    /// `kernel.sched_autogroup_enabled` was 1 when the recording began.
    pub autogroup: bool,
    /// Every process's autogroup (or other place) when a poll first saw
    /// it, the command's and all others (with `autogroup` only).
    pub groups: BTreeMap<u32, Place>,
}

/// Samples the fds of the descendants of one process (perf, which
/// forks the command) from `/proc`.
pub struct Poller {
    parent: u32,
    /// Every pid read once (`/proc/PID/stat`), in the tree or not: a
    /// process's parent does not change but by reparenting to init.
    looked: BTreeSet<u32>,
    pub seen: Seen,
    /// Socket inodes whose peer has not been asked for yet.
    unpeered: BTreeSet<u64>,
    /// `sock_diag` failed once: it is not asked again.
    diag_error: Option<String>,
    /// Whether a process may be in a cpu cgroup other than the root
    /// (`autogroup::cpu_cgroups`).
    cpu_cgroups: Option<bool>,
}

impl Poller {
    pub fn new(parent: u32) -> Self {
        Poller {
            parent,
            looked: BTreeSet::new(),
            unpeered: BTreeSet::new(),
            diag_error: None,
            cpu_cgroups: autogroup::cpu_cgroups(),
            seen: Seen {
                autogroup: autogroup::enabled(),
                ..Seen::default()
            },
        }
    }

    /// One poll: find the new processes (their autogroups, of every
    /// process: the first poll reads all that run), those of the tree,
    /// and sample them and
    /// their parents (which made the fds a child inherits); sample again
    /// each process with a thread not seen before (every process with
    /// `threads`, else those that had threads); with `all`, every live
    /// process of the tree (its fds since).
    pub fn poll(&mut self, threads: bool, all: bool) {
        let mut again = BTreeSet::new();
        let mut sessions = Vec::new();
        for pid in proc_pids(Path::new("/proc")) {
            if !self.looked.insert(pid) {
                continue;
            }
            let Some((ppid, session)) = read_stat(pid) else {
                continue;
            };
            sessions.push((pid, session));
            if ppid == self.parent || self.seen.tree.contains(&ppid) {
                self.seen.tree.push(pid);
                again.insert(pid);
                if ppid != self.parent {
                    again.insert(ppid);
                }
            }
        }
        if all {
            again.extend(self.seen.tree.iter().copied());
        } else {
            // A process that has threads is likely to start more: its
            // threads are listed every poll, the others' with `threads`.
            let threaded: BTreeSet<u32> = (self.seen.threads.iter())
                .filter(|(t, p)| t != p)
                .map(|(_, &p)| p)
                .collect();
            let new_thread = |p: &u32| {
                let dir = Path::new("/proc").join(p.to_string()).join("task");
                proc_pids(&dir)
                    .iter()
                    .any(|t| !self.seen.threads.contains_key(t))
            };
            again.extend(
                (self.seen.tree.iter())
                    .filter(|p| threads || threaded.contains(p))
                    .filter(|p| new_thread(p)),
            );
        }
        for pid in again {
            self.sample(pid);
        }
        // After the samples, which a new worker's first calls need soon.
        if self.seen.autogroup {
            for (pid, session) in sessions {
                let place = autogroup::read(pid, session, self.cpu_cgroups);
                self.seen.groups.insert(pid, place);
            }
        }
        if !self.unpeered.is_empty() && self.diag_error.is_none() {
            self.ask_peers();
        }
    }

    /// The error of the `sock_diag` query, if it failed.
    pub fn diag_error(&self) -> Option<&str> {
        self.diag_error.as_deref()
    }

    /// Read process `pid`'s threads and its pipe and socket fds, at
    /// the time now.
    fn sample(&mut self, pid: u32) {
        let dir = Path::new("/proc").join(pid.to_string());
        let now = monotonic_ns();
        // perf's child before it execs the command: perf's fds, not the
        // command's (a sample then named the command's later pipe by
        // perf's fd of that number, and its replay deadlocked).
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim_end() == PERF_CHILD {
            return;
        }
        for tid in proc_pids(&dir.join("task")) {
            self.seen.threads.insert(tid, pid);
        }
        let Ok(fds) = std::fs::read_dir(dir.join("fd")) else {
            return;
        };
        self.seen.sampled.entry(pid).or_default().push(now);
        for e in fds.flatten() {
            let Some(fd) = e.file_name().to_str().and_then(|s| s.parse().ok()) else {
                continue;
            };
            let Ok(target) = std::fs::read_link(e.path()) else {
                continue;
            };
            // Another kind of file is kept as "": the fd was not a queue
            // then (the dynamic loader reads libraries through the fd
            // numbers the command's pipes take later).
            let object = target
                .to_str()
                .filter(|t| ipc_object(t).is_some())
                .unwrap_or("");
            if let Some((true, ino)) = ipc_object(object) {
                if !self.seen.peers.contains_key(&ino) {
                    self.unpeered.insert(ino);
                }
            }
            let names = self.seen.fds.entry((pid, fd)).or_default();
            if names.last().is_none_or(|(_, o)| o != object) {
                names.push((now, object.to_string()));
            }
        }
    }

    /// Ask the kernel for the peers of every UNIX socket (one dump) and
    /// keep those of the sockets sampled.
    fn ask_peers(&mut self) {
        match unix_peers() {
            Ok(all) => {
                for ino in std::mem::take(&mut self.unpeered) {
                    if let Some(&peer) = all.get(&ino) {
                        self.seen.peers.insert(ino, peer);
                    }
                }
            }
            Err(e) => self.diag_error = Some(format!("sock_diag (UNIX_DIAG_PEER): {e}")),
        }
    }
}

/// The name perf gives the child it forks for the command until the
/// exec (tools/perf/util/evlist.c, `evlist__prepare_workload`).
const PERF_CHILD: &str = "perf-exec";

/// CLOCK_MONOTONIC in ns, the clock `perf record -k mono` stamps
/// events with.
fn monotonic_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a live timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// `pipe:[123]` → (false, 123), `socket:[45]` → (true, 45); None for
/// anything else (files, terminals, eventfds: not queues a read waits on).
pub fn ipc_object(target: &str) -> Option<(bool, u64)> {
    let (socket, rest) = match target.strip_prefix("pipe:[") {
        Some(r) => (false, r),
        None => (true, target.strip_prefix("socket:[")?),
    };
    Some((socket, rest.strip_suffix(']')?.parse().ok()?))
}

/// The numeric entries of a `/proc` directory (pids, or a process's
/// thread ids under `task`).
fn proc_pids(dir: &Path) -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// The parent pid and the session id in `/proc/PID/stat`.
fn read_stat(pid: u32) -> Option<(u32, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat_ppid_session(&stat)
}

/// The fields after the `(comm)` (which may hold spaces and parentheses:
/// the last `)` ends it) are state, ppid, pgrp, session (proc(5)).
fn stat_ppid_session(stat: &str) -> Option<(u32, u32)> {
    let after = &stat[stat.rfind(')')? + 1..];
    let mut f = after.split_whitespace().skip(1);
    let ppid = f.next()?.parse().ok()?;
    Some((ppid, f.nth(1)?.parse().ok()?))
}

/// linux/sock_diag.h, linux/unix_diag.h (v6.18): the request and the
/// attribute this query uses.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const UDIAG_SHOW_PEER: u32 = 0x4;
const UNIX_DIAG_PEER: u16 = 2;
/// sizeof(struct nlmsghdr), sizeof(struct unix_diag_msg).
const NLMSG_HDR: usize = 16;
const UNIX_DIAG_MSG: usize = 16;

/// Every UNIX socket's peer: inode → peer inode, by one `sock_diag`
/// dump (NETLINK_SOCK_DIAG, AF_UNIX, all states, UDIAG_SHOW_PEER).
pub fn unix_peers() -> std::io::Result<BTreeMap<u64, u64>> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // SAFETY: a plain syscall; the descriptor is owned at once.
    let raw = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        )
    };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `raw` is a new descriptor that nothing else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(raw) };
    let req = dump_request();
    // SAFETY: `req` is a live buffer of the length passed.
    let sent = unsafe { libc::send(sock.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) };
    if sent < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut peers = BTreeMap::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        // SAFETY: `buf` is a live buffer of the length passed.
        let n = unsafe { libc::recv(sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if read_dump(&buf[..n as usize], &mut peers)? || n == 0 {
            return Ok(peers);
        }
    }
}

/// struct nlmsghdr + struct unix_diag_req, native endian.
fn dump_request() -> Vec<u8> {
    let mut r = Vec::with_capacity(NLMSG_HDR + 24);
    r.extend(((NLMSG_HDR + 24) as u32).to_ne_bytes());
    r.extend(SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    r.extend(((libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16).to_ne_bytes());
    r.extend(1u32.to_ne_bytes()); // nlmsg_seq
    r.extend(0u32.to_ne_bytes()); // nlmsg_pid: the kernel
    r.extend([libc::AF_UNIX as u8, 0, 0, 0]); // family, protocol, pad
    r.extend(u32::MAX.to_ne_bytes()); // udiag_states: all
    r.extend(0u32.to_ne_bytes()); // udiag_ino
    r.extend(UDIAG_SHOW_PEER.to_ne_bytes());
    r.extend([0u8; 8]); // udiag_cookie
    r
}

fn ne_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn ne_u16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

/// One datagram of the dump: each message's socket inode and its
/// `UNIX_DIAG_PEER` attribute. True at NLMSG_DONE.
fn read_dump(b: &[u8], peers: &mut BTreeMap<u64, u64>) -> std::io::Result<bool> {
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "a short netlink message");
    let mut at = 0;
    while at + NLMSG_HDR <= b.len() {
        let len = ne_u32(b, at).ok_or_else(bad)? as usize;
        let kind = ne_u16(b, at + 4).ok_or_else(bad)?;
        if len < NLMSG_HDR || at + len > b.len() {
            return Err(bad());
        }
        match kind as i32 {
            libc::NLMSG_DONE => return Ok(true),
            libc::NLMSG_ERROR => {
                let errno = ne_u32(b, at + NLMSG_HDR).ok_or_else(bad)? as i32;
                return Err(std::io::Error::from_raw_os_error(-errno));
            }
            _ => {}
        }
        let msg = &b[at + NLMSG_HDR..at + len];
        let ino = ne_u32(msg, 4).ok_or_else(bad)?;
        let mut a = UNIX_DIAG_MSG;
        while a + 4 <= msg.len() {
            let alen = ne_u16(msg, a).ok_or_else(bad)? as usize;
            if alen < 4 {
                break;
            }
            if ne_u16(msg, a + 2) == Some(UNIX_DIAG_PEER) {
                if let Some(peer) = ne_u32(msg, a + 4).filter(|&p| p != 0) {
                    peers.insert(u64::from(ino), u64::from(peer));
                }
            }
            a += (alen + 3) & !3;
        }
        at += (len + 3) & !3;
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_pipes_and_sockets_only() {
        assert_eq!(ipc_object("pipe:[123]"), Some((false, 123)));
        assert_eq!(ipc_object("socket:[45]"), Some((true, 45)));
        for other in [
            "/dev/pts/0",
            "anon_inode:[eventfd]",
            "pipe:[x]",
            "socket:[1",
        ] {
            assert_eq!(ipc_object(other), None, "{other}");
        }
        assert_eq!(stat_ppid_session("7 (a) b) S 3 7 5"), Some((3, 5)));
        assert_eq!(stat_ppid_session("7 (a) S 3 7"), None);
        assert_eq!(stat_ppid_session("7 (a"), None);
    }

    /// A socketpair's two ends are each other's peer in the dump.
    #[test]
    fn sock_diag_names_a_socketpairs_peer() {
        use std::os::unix::fs::MetadataExt;
        use std::os::unix::net::UnixStream;
        let (a, b) = UnixStream::pair().unwrap();
        let ino = |s: &UnixStream| {
            use std::os::fd::AsRawFd;
            let p = format!("/proc/self/fd/{}", s.as_raw_fd());
            std::fs::metadata(p).unwrap().ino()
        };
        let (ia, ib) = (ino(&a), ino(&b));
        match unix_peers() {
            Ok(peers) => {
                assert_eq!(peers.get(&ia), Some(&ib));
                assert_eq!(peers.get(&ib), Some(&ia));
            }
            // Kernels without CONFIG_UNIX_DIAG answer ENOENT.
            Err(e) => println!("SKIPPED: sock_diag unavailable here: {e}"),
        }
    }

    #[test]
    fn a_dump_reads_inode_and_peer() {
        let mut msg = Vec::new();
        let body: Vec<u8> = [
            vec![1, 1, 1, 0],
            7u32.to_ne_bytes().to_vec(),
            vec![0; 8],
            8u16.to_ne_bytes().to_vec(),
            UNIX_DIAG_PEER.to_ne_bytes().to_vec(),
            9u32.to_ne_bytes().to_vec(),
        ]
        .concat();
        msg.extend(((NLMSG_HDR + body.len()) as u32).to_ne_bytes());
        msg.extend(SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        msg.extend([0u8; 10]);
        msg.extend(&body);
        let mut peers = BTreeMap::new();
        assert!(!read_dump(&msg, &mut peers).unwrap());
        assert_eq!(peers.get(&7), Some(&9));
        assert!(read_dump(&msg[..20], &mut peers).is_err());
    }
}
