//! `perf script` text and the fd samples → the file `replay` reads: the
//! text with the syscall lines of other tasks taken out, and a `# fd`
//! line for each fd the command's tasks read or wrote that names a pipe
//! or a socket's receive queue (docs/replay.md, "Causal replay"), and
//! the `# autogroup` lines (docs/replay.md, "Autogroups").

use super::autogroup::{self, Place};
use super::fds::{ipc_object, Seen};
use crate::trace::parse::{find_cpu, parse_all, parse_ts, Event, Record};
use std::collections::{BTreeMap, BTreeSet};

/// The converted text, and what it could not name.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Converted {
    /// `# fd` lines and the trace lines (no header).
    pub text: String,
    /// Tasks of the command's tree.
    pub tasks: usize,
    /// `# fd` lines written.
    pub named: usize,
    /// Why fds read or written were left unnamed, with how many.
    pub unnamed: BTreeMap<&'static str, usize>,
    /// Lines perf script printed twice in a row, dropped.
    pub duplicates: usize,
    /// What the `# autogroup` lines say (with autogroups enabled).
    pub autogroups: Autogroups,
}

/// The tasks of the trace by where they ran: in an autogroup (`# autogroup`
/// lines), in a cpu cgroup other than the root, or not known (they are
/// replayed at the root, as the others not in an autogroup).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Autogroups {
    /// `kernel.sched_autogroup_enabled` was 1.
    pub enabled: bool,
    pub tasks: usize,
    pub groups: usize,
    pub in_cgroup: usize,
    pub unknown: usize,
}

/// How a task used an fd in the trace.
const READ: u8 = 1;
const WRITE: u8 = 2;

/// Convert `perf` (perf script text) with what the samples saw. `name`
/// names the text in a parse error (a perf whose output the parser does
/// not read).
pub fn convert(name: &str, perf: &str, seen: &Seen) -> Result<Converted, String> {
    let parsed = parse_all(name, perf)?;
    let seen = &thread_groups(after_exec(seen, perf), perf);
    let tree = tree_tasks(seen, &parsed.recs);
    let forks: BTreeMap<u32, (u32, u64)> = (parsed.recs.iter())
        .filter_map(|r| match &r.ev {
            Event::Fork { parent, child } => Some((child.pid, (parent.pid, r.ts))),
            _ => None,
        })
        .collect();
    // (tid, fd) → how it was used, and the objects it named then.
    let mut uses: BTreeMap<(u32, u32), (u8, BTreeSet<&str>)> = BTreeMap::new();
    // The lines of calls on an fd that named no pipe or socket then (the
    // loader reading a library through the fd a socket takes later): an
    // `# fd` line names the fd for the whole trace, so they would replay
    // as reads of that socket. Without their lines they are CPU time.
    let mut unqueued: BTreeSet<usize> = BTreeSet::new();
    let mut in_unqueued: BTreeSet<u32> = BTreeSet::new();
    for r in &parsed.recs {
        match r.ev {
            Event::SysEnter { write, fd } if tree.contains(&r.ctx_pid) => {
                let u = uses.entry((r.ctx_pid, fd)).or_default();
                u.0 |= if write { WRITE } else { READ };
                let named = named_at(seen, &forks, r.ctx_pid, fd, r.ts);
                u.1.extend(named);
                if named.is_none() {
                    unqueued.insert(r.line);
                    in_unqueued.insert(r.ctx_pid);
                }
            }
            Event::SysExit { .. } if in_unqueued.remove(&r.ctx_pid) => {
                unqueued.insert(r.line);
            }
            _ => {}
        }
    }
    let mut out = Converted {
        tasks: tree.len(),
        ..Converted::default()
    };
    for (&(tid, fd), (how, objects)) in &uses {
        match object(seen, objects, *how) {
            Ok(names) => {
                for (object, only) in names {
                    out.text += &format!("# fd pid={tid} fd={fd} object={object}{only}\n");
                }
                out.named += 1;
            }
            Err(why) => *out.unnamed.entry(why).or_default() += 1,
        }
    }
    out.text += &autogroup_lines(seen, &parsed.recs, &mut out.autogroups);
    let mut last = "";
    for (i, line) in perf.lines().enumerate() {
        let other = is_syscall(line)
            && (unqueued.contains(&(i + 1)) || line_tid(line).is_some_and(|t| !tree.contains(&t)));
        // perf script (6.1 here) sometimes prints a run of records twice:
        // the same CPU, nanosecond and fields, which no kernel emits (a
        // second switch from a task already switched out). Replayed, each
        // copy would be a switch-out the trace lost.
        if line == last && line_ts(line).is_some() {
            out.duplicates += 1;
        } else if !other {
            out.text += line;
            out.text.push('\n');
        }
        last = line;
    }
    Ok(out)
}

/// `# autogroup enabled=0|1`, then with autogroups enabled `# autogroup
/// pid=TID group=PATH nice=N` for each task of the trace in an autogroup
/// (of the command or not), by its process's place when a poll first saw
/// it, else its forker's (autogroup::places).
fn autogroup_lines(seen: &Seen, recs: &[Record], n: &mut Autogroups) -> String {
    let mut text = format!("# autogroup enabled={}\n", u8::from(seen.autogroup));
    n.enabled = seen.autogroup;
    if !seen.autogroup {
        return text;
    }
    let tgid = |t: u32| seen.threads.get(&t).copied().unwrap_or(t);
    let forks = recs.iter().filter_map(|r| match &r.ev {
        Event::Fork { parent, child } => Some((parent.pid, child.pid)),
        _ => None,
    });
    let place = autogroup::places(&seen.groups, tgid, forks);
    let mut groups = BTreeSet::new();
    for tid in trace_tids(recs) {
        match place(tid) {
            Some(Place::Auto { path, nice }) => {
                text += &format!("# autogroup pid={tid} group={path} nice={nice}\n");
                groups.insert(path);
                n.tasks += 1;
            }
            Some(Place::Cgroup) => n.in_cgroup += 1,
            Some(Place::Root) => {}
            None => n.unknown += 1,
        }
    }
    n.groups = groups.len();
    text
}

/// Every task a record names (idle and unknown contexts aside).
fn trace_tids(recs: &[Record]) -> BTreeSet<u32> {
    let mut tids = BTreeSet::new();
    for r in recs {
        tids.insert(r.ctx_pid);
        match &r.ev {
            Event::Switch { prev, next, .. } => tids.extend([prev.pid, next.pid]),
            Event::Waking { task, .. }
            | Event::WakeupNew { task, .. }
            | Event::Migrate { task }
            | Event::Exit { task } => {
                tids.insert(task.pid);
            }
            Event::Fork { parent, child } => tids.extend([parent.pid, child.pid]),
            Event::SysEnter { .. } | Event::SysExit { .. } => {}
        }
    }
    tids.remove(&0);
    tids.remove(&crate::trace::parse::UNKNOWN_PID);
    tids
}

/// The command's tasks: the processes sampled and their threads, and
/// every task the trace shows one of them forking (a child that lived
/// less than a poll).
fn tree_tasks(seen: &Seen, recs: &[Record]) -> BTreeSet<u32> {
    let mut tree: BTreeSet<u32> = seen.tree.iter().copied().collect();
    let threads: Vec<u32> = (seen.threads.iter())
        .filter(|(_, p)| tree.contains(p))
        .map(|(&t, _)| t)
        .collect();
    tree.extend(threads);
    for r in recs {
        if let Event::Fork { parent, child } = &r.ev {
            if tree.contains(&parent.pid) {
                tree.insert(child.pid);
            }
        }
    }
    tree
}

/// What task `tid`'s `fd` named at `ts`, by its process's samples:
/// the last at or before `ts`, else the next (an fd made between two
/// samples). Before the process's first sample (a child that ran less
/// than the poller took to come round: a sender thread can start and
/// finish in 20 µs), its parent's last sample before the fork: `fork`
/// copies the table, and the child's own changes (a receiver closing
/// the end it does not use) do not rename the fds it keeps; else its
/// own first sample's. The command itself has no parent sampled: its
/// first calls (the dynamic loader reading libraries through fds its
/// sockets take later) are not named.
fn named_at<'a>(
    seen: &'a Seen,
    forks: &BTreeMap<u32, (u32, u64)>,
    tid: u32,
    fd: u32,
    ts: u64,
) -> Option<&'a str> {
    let pid = seen.threads.get(&tid).copied().unwrap_or(tid);
    let first = seen.sampled.get(&pid).and_then(|t| t.first());
    if first.is_none_or(|&t| t > ts) {
        let &(parent, at) = forks.get(&tid)?;
        let own = || seen.fds.get(&(pid, fd)).map(|n| n[0].1.as_str());
        return held_at(seen, parent, fd, at)
            .or_else(own)
            .filter(|n| !n.is_empty());
    }
    let names = seen.fds.get(&(pid, fd))?;
    let k = names.partition_point(|(t, _)| *t <= ts).max(1);
    Some(names[k - 1].1.as_str()).filter(|n| !n.is_empty())
}

/// The object process `pid`'s `fd` named at `ts`: the last sample's
/// at or before it (none before the first sample that shows the fd:
/// a child does not inherit an fd made after its fork).
fn held_at(seen: &Seen, pid: u32, fd: u32, ts: u64) -> Option<&str> {
    let pid = seen.threads.get(&pid).copied().unwrap_or(pid);
    let names = seen.fds.get(&(pid, fd))?;
    let k = names.partition_point(|(t, _)| *t <= ts).checked_sub(1)?;
    Some(names[k].1.as_str()).filter(|n| !n.is_empty())
}

/// What an fd that named `objects` while used as `how` says names for
/// the replay, with the calls each name is for: a pipe is one queue; a
/// socket's reads drain its own receive queue, its writes fill its
/// peer's, so an fd used both ways names two (`use=read`, `use=write`).
fn object(
    seen: &Seen,
    objects: &BTreeSet<&str>,
    how: u8,
) -> Result<Vec<(String, &'static str)>, &'static str> {
    let mut it = objects.iter();
    let first = match (it.next(), it.next()) {
        (Some(first), None) => *first,
        (None, _) => return Err("no sample saw a pipe or socket there (a file, a terminal, or an fd opened and closed between samples)"),
        _ => return Err("the fd named two objects while it was used (closed and reused)"),
    };
    let peer = |ino| {
        (seen.peers.get(&ino))
            .map(|p| format!("socket:[{p}]"))
            .ok_or("a socket written to whose peer sock_diag did not name (not a UNIX socket, or closed before it was asked)")
    };
    match ipc_object(first) {
        Some((false, _)) => Ok(vec![(first.to_string(), "")]),
        Some((true, ino)) => match how {
            READ => Ok(vec![(first.to_string(), "")]),
            WRITE => Ok(vec![(peer(ino)?, "")]),
            // Used both ways: reads drain its own queue, writes its peer's.
            _ => Ok(vec![
                (first.to_string(), " use=read"),
                (peer(ino)?, " use=write"),
            ]),
        },
        None => Err("not a pipe or socket"),
    }
}

/// The samples of each process taken after its last exec (a
/// `sched_process_exec` line): before it, its fds were the old
/// program's (perf's, for the command).
fn after_exec(seen: &Seen, perf: &str) -> Seen {
    let mut execs: BTreeMap<u32, u64> = BTreeMap::new();
    for l in perf
        .lines()
        .filter(|l| l.contains(" sched:sched_process_exec:"))
    {
        if let (Some(tid), Some(ts)) = (line_tid(l), line_ts(l)) {
            execs.insert(tid, ts);
        }
    }
    let mut s = seen.clone();
    for (&pid, &at) in &execs {
        if let Some(t) = s.sampled.get_mut(&pid) {
            t.retain(|&t| t >= at);
        }
        for (_, names) in s.fds.range_mut((pid, 0)..=(pid, u32::MAX)) {
            names.retain(|(t, _)| *t >= at);
        }
    }
    s.fds.retain(|_, names| !names.is_empty());
    s.sampled.retain(|_, t| !t.is_empty());
    s
}

/// `seen` with the thread group of every task the trace shows in its
/// own context (`perf script -F +pid` prints `pid/tid`, the sample's
/// PERF_SAMPLE_TID) that no sample listed: a thread that lived less than
/// a poll. Threads share their process's fd table (CLONE_FILES), so its
/// calls are named by its thread group's samples, at their time.
fn thread_groups(mut seen: Seen, perf: &str) -> Seen {
    for (pid, tid) in perf.lines().filter_map(line_ids) {
        if let Some(pid) = pid.filter(|&p| p != tid) {
            seen.threads.entry(tid).or_insert(pid);
        }
    }
    seen
}

/// The timestamp of a perf script line (`SECONDS.NANOSECONDS:` after
/// the CPU column), in ns.
fn line_ts(line: &str) -> Option<u64> {
    let (_, end, _) = find_cpu(line)?;
    let tok = line[end..].split_whitespace().next()?.strip_suffix(':')?;
    parse_ts(tok)
}

/// A `syscalls:` event line of perf script text.
fn is_syscall(line: &str) -> bool {
    line.contains(" syscalls:sys_")
}

/// The tid of a perf script line.
fn line_tid(line: &str) -> Option<u32> {
    line_ids(line).map(|(_, tid)| tid)
}

/// The process id (with `-F +pid`; none where perf printed -1) and the
/// tid of a perf script line: the last word before the ` [CPU]` column
/// (`comm tid` or `comm pid/tid`).
fn line_ids(line: &str) -> Option<(Option<u32>, u32)> {
    let (open, ..) = find_cpu(line)?;
    let word = line[..open].split_whitespace().last()?;
    let (pid, tid) = match word.split_once('/') {
        Some((pid, tid)) => (pid.parse().ok(), tid),
        None => (None, word),
    };
    Some((pid, tid.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen() -> Seen {
        let mut s = Seen {
            tree: vec![10],
            ..Seen::default()
        };
        s.threads.insert(10, 10);
        s.sampled.insert(10, vec![0, 1_000_000_500]);
        s.sampled.insert(11, vec![0, 1_000_008_500, 1_000_008_600]);
        let mut fd = |pid, fd, ns, o: &str| {
            s.fds
                .entry((pid, fd))
                .or_default()
                .push((ns, o.to_string()));
        };
        fd(10, 3, 1_000_000_500, "pipe:[100]");
        fd(11, 3, 0, "pipe:[100]");
        fd(10, 5, 0, "socket:[200]");
        fd(11, 6, 0, "socket:[201]");
        fd(11, 7, 0, "socket:[300]");
        // Reused between the two calls on it: two objects.
        fd(11, 8, 0, "pipe:[1]");
        fd(11, 8, 1_000_008_500, "pipe:[2]");
        // Reused before the call on it: the later object.
        fd(11, 9, 0, "pipe:[3]");
        fd(11, 9, 1_000_008_600, "pipe:[100]");
        // A file when sampled before its call: not a queue.
        fd(11, 10, 0, "");
        fd(11, 10, 1_000_009_500, "pipe:[100]");
        // First seen after its call, in a process sampled before it:
        // made between the two samples, the later one names it.
        fd(11, 11, 1_000_009_500, "pipe:[100]");
        s.peers.insert(200, 201);
        s.peers.insert(201, 200);
        s.peers.insert(300, 301);
        s
    }

    const PERF: &str = "\
perf 10 [000] 1.000000000: sched:sched_process_fork: comm=perf pid=10 child_comm=perf child_pid=11
a 10 [000] 1.000001000: syscalls:sys_enter_write: fd: 0x00000003, buf: 0x1, count: 0x00000001
a 10 [000] 1.000002000: syscalls:sys_exit_write: 0x1
a 11 [001] 1.000003000: syscalls:sys_enter_read: fd: 0x00000003, buf: 0x1, count: 0x00000001
a 11 [001] 1.000004000: syscalls:sys_exit_read: 0x1
a 10 [000] 1.000005000: syscalls:sys_enter_write: fd: 0x00000005, buf: 0x1, count: 0x00000064
a 11 [001] 1.000006000: syscalls:sys_enter_read: fd: 0x00000006, buf: 0x1, count: 0x00000064
a 11 [001] 1.000007000: syscalls:sys_enter_read: fd: 0x00000007, buf: 0x1, count: 0x00000064
a 11 [001] 1.000007100: syscalls:sys_enter_write: fd: 0x00000007, buf: 0x1, count: 0x00000064
a 11 [001] 1.000008000: syscalls:sys_enter_read: fd: 0x00000008, buf: 0x1, count: 0x00000064
a 11 [001] 1.000008900: syscalls:sys_enter_read: fd: 0x00000008, buf: 0x1, count: 0x00000064
a 11 [001] 1.000009000: syscalls:sys_enter_read: fd: 0x00000009, buf: 0x1, count: 0x00000064
a 11 [001] 1.000009100: syscalls:sys_enter_read: fd: 0x0000000a, buf: 0x1, count: 0x00000064
a 11 [001] 1.000009200: syscalls:sys_enter_read: fd: 0x0000000b, buf: 0x1, count: 0x00000064
a 11 [001] 1.000009300: syscalls:sys_enter_read: fd: 0x0000000c, buf: 0x1, count: 0x00000064
rustc 99 [001] 1.000010000: syscalls:sys_enter_read: fd: 0x00000003, buf: 0x1, count: 0x00000064
rustc 99 [001] 1.000011000: syscalls:sys_enter_futex: uaddr: 0x1, op: 0x00000080, val: 0x00000000, utime: 0x0, uaddr2: 0x0, val3: 0x00000000
rustc 99 [001] 1.000012000: sched:sched_waking: comm=a pid=11 prio=120 target_cpu=001
";

    #[test]
    fn names_each_fd_by_its_queue() {
        let c = convert("t", PERF, &seen()).unwrap();
        let fd_lines: Vec<&str> = c.text.lines().filter(|l| l.starts_with("# fd")).collect();
        // Both ends of the pipe are one queue; the socket written names
        // its peer's queue, the socket read its own, the socket both read
        // and written one for each. Pid 11 is in the tree by the fork
        // line, though no poll saw it as a child.
        assert_eq!(
            fd_lines,
            [
                "# fd pid=10 fd=3 object=pipe:[100]",
                "# fd pid=10 fd=5 object=socket:[201]",
                "# fd pid=11 fd=3 object=pipe:[100]",
                "# fd pid=11 fd=6 object=socket:[201]",
                "# fd pid=11 fd=7 object=socket:[300] use=read",
                "# fd pid=11 fd=7 object=socket:[301] use=write",
                "# fd pid=11 fd=9 object=pipe:[100]",
                "# fd pid=11 fd=11 object=pipe:[100]",
            ]
        );
        assert_eq!(c.tasks, 2);
        assert_eq!(c.named, 7);
        let why: Vec<usize> = c.unnamed.values().copied().collect();
        assert_eq!(c.unnamed.len(), 2, "{:?}", c.unnamed);
        assert_eq!(why.iter().sum::<usize>(), 3);
        // A call on an fd that named no queue then goes (fd 10, a file
        // when read); a named one stays (fd 9).
        assert!(!c.text.contains("1.000009100: syscalls:sys_enter_read"));
        assert!(c.text.contains("1.000009000: syscalls:sys_enter_read"));
        // Other tasks' syscall lines go, their scheduler lines stay.
        assert!(!c.text.contains("rustc 99 [001] 1.000010000"));
        assert!(!c.text.contains("sys_enter_futex"));
        assert!(c
            .text
            .contains("rustc 99 [001] 1.000012000: sched:sched_waking"));
        // The result parses, with its fd names.
        let p = parse_all("c", &c.text).unwrap();
        assert_eq!(p.fds.len(), 8);
    }

    #[test]
    fn a_threads_fds_are_its_process_fds() {
        let mut s = seen();
        s.threads.insert(12, 10);
        let t =
            "a 12 [000] 1.000001: syscalls:sys_enter_write: fd: 0x00000003, buf: 0x1, count: 0x1\n";
        let c = convert("t", t, &s).unwrap();
        assert!(
            c.text.starts_with("# fd pid=12 fd=3 object=pipe:[100]\n"),
            "{}",
            c.text
        );
    }

    /// A thread no sample listed (it lived less than a poll) is named by
    /// its thread group's samples at the time of its calls, not by its
    /// creator's before the clone: it shares the fd table. Fd 3 was
    /// first sampled after the clone; a child process would not have it.
    #[test]
    fn an_unlisted_thread_has_its_thread_groups_fds() {
        let t = "\
a 10/10 [000] 1.0: sched:sched_process_fork: comm=a pid=10 child_comm=a child_pid=13
a 10/13 [000] 1.5: syscalls:sys_enter_write: fd: 0x00000003, buf: 0x1, count: 0x1
a -1/14 [000] 1.5: syscalls:sys_enter_write: fd: 0x00000003, buf: 0x1, count: 0x1
";
        let c = convert("t", t, &seen()).unwrap();
        let fd_lines: Vec<&str> = c.text.lines().filter(|l| l.starts_with("# fd")).collect();
        assert_eq!(fd_lines, ["# fd pid=13 fd=3 object=pipe:[100]"]);
    }

    /// A child no poll saw has its parent's fds as sampled before the
    /// fork.
    #[test]
    fn an_unsampled_child_inherits_its_parents_fds() {
        let mut s = seen();
        s.sampled.insert(10, vec![0, 1_000_000_500, 3_000_000_000]);
        let t = "\
a 10 [000] 1.0: sched:sched_process_fork: comm=a pid=10 child_comm=a child_pid=20
a 10 [000] 4.0: sched:sched_process_fork: comm=a pid=10 child_comm=a child_pid=21
a 20 [000] 5.0: syscalls:sys_enter_write: fd: 0x00000005, buf: 0x1, count: 0x1
a 20 [000] 5.1: syscalls:sys_enter_write: fd: 0x00000003, buf: 0x1, count: 0x1
a 21 [000] 5.2: syscalls:sys_enter_write: fd: 0x00000005, buf: 0x1, count: 0x1
";
        let c = convert("t", t, &s).unwrap();
        let fd_lines: Vec<&str> = c.text.lines().filter(|l| l.starts_with("# fd")).collect();
        // Fd 3 was sampled first at 1.0000005 s, after the first fork:
        // not the first child's.
        assert_eq!(
            fd_lines,
            [
                "# fd pid=20 fd=5 object=socket:[201]",
                "# fd pid=21 fd=5 object=socket:[201]"
            ]
        );
    }

    /// Samples of a process before its exec are the old program's.
    #[test]
    fn samples_before_an_exec_are_dropped() {
        let mut s = seen();
        s.fds.get_mut(&(10, 5)).unwrap()[0].0 = 500_000_000;
        s.fds
            .get_mut(&(10, 3))
            .unwrap()
            .push((2_000_000_000, "pipe:[7]".into()));
        s.sampled
            .insert(10, vec![500_000_000, 1_000_000_500, 2_000_000_000]);
        let t = "\
a 10 [000] 1.5: sched:sched_process_exec: filename=/bin/a pid=10 old_pid=10
a 10 [000] 2.5: syscalls:sys_enter_write: fd: 0x00000003, buf: 0x1, count: 0x1
a 10 [000] 2.6: syscalls:sys_enter_write: fd: 0x00000005, buf: 0x1, count: 0x1
";
        let c = convert("t", t, &s).unwrap();
        let fd_lines: Vec<&str> = c.text.lines().filter(|l| l.starts_with("# fd")).collect();
        assert_eq!(fd_lines, ["# fd pid=10 fd=3 object=pipe:[7]"]);
        assert_eq!(line_ts("a 10 [000] 1.5: x"), Some(1_500_000_000));
    }

    #[test]
    fn tids_of_the_line_forms() {
        assert_eq!(line_tid("my prog 12 [003] 1.0: x"), Some(12));
        assert_eq!(line_tid("16043/16044 [001] 1.0: x"), Some(16044));
        assert_eq!(line_tid("a [b] 7 [000] 1.0: x"), Some(7));
        assert_eq!(line_tid("no cpu column"), None);
        assert_eq!(
            line_ids("x 16043/16044 [001] 1.0: x"),
            Some((Some(16043), 16044))
        );
        assert_eq!(line_ids("x -1/16044 [001] 1.0: x"), Some((None, 16044)));
        assert_eq!(line_ids("x 16044 [001] 1.0: x"), Some((None, 16044)));
    }

    /// A record perf script printed twice in a row is kept once; the
    /// same line after another is kept (it is not a copy).
    #[test]
    fn records_printed_twice_in_a_row_are_dropped() {
        let sw = "a 11 [001] 1.000020000: sched:sched_switch: prev_comm=a prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=b next_pid=12 next_prio=120";
        let other =
            "b 12 [001] 1.000021000: sched:sched_waking: comm=a pid=11 prio=120 target_cpu=001";
        let perf = format!("{PERF}{sw}\n{sw}\n{other}\n");
        let c = convert("t", &perf, &seen()).unwrap();
        assert_eq!(c.duplicates, 1);
        assert_eq!(c.text.matches(sw).count(), 1);
        let again = format!("{PERF}{sw}\n{other}\n{sw}\n");
        let c = convert("t", &again, &seen()).unwrap();
        assert_eq!((c.duplicates, c.text.matches(sw).count()), (0, 2));
    }

    /// Every task of the trace in an autogroup gets a line, the command's
    /// and other load's: by its process's place when polled, else (pid 11,
    /// forked by 10 and never polled) its forker's. The result parses.
    #[test]
    fn autogroup_lines_name_every_tasks_group() {
        let mut s = seen();
        s.autogroup = true;
        let ag = |path: &str, nice| Place::Auto {
            path: path.into(),
            nice,
        };
        s.groups.insert(10, ag("/autogroup-5", 0));
        s.groups.insert(99, ag("/autogroup-7", 3));
        let perf = format!(
            "{PERF}kworker 7 [000] 1.000013000: sched:sched_waking: comm=x pid=8 prio=120 target_cpu=000\n"
        );
        s.groups.insert(7, Place::Root);
        s.groups.insert(8, Place::Cgroup);
        let c = convert("t", &perf, &s).unwrap();
        let lines: Vec<&str> = (c.text.lines())
            .filter(|l| l.starts_with("# autogroup"))
            .collect();
        assert_eq!(
            lines,
            [
                "# autogroup enabled=1",
                "# autogroup pid=10 group=/autogroup-5 nice=0",
                "# autogroup pid=11 group=/autogroup-5 nice=0",
                "# autogroup pid=99 group=/autogroup-7 nice=3",
            ]
        );
        let n = &c.autogroups;
        assert_eq!((n.tasks, n.groups, n.in_cgroup, n.unknown), (3, 2, 1, 0));
        let p = parse_all("c", &c.text).unwrap();
        assert_eq!(p.autogroup_enabled, Some(true));
        assert_eq!(p.autogroups.get(&99), Some(&("/autogroup-7".into(), 3)));
        // Disabled: the one line that says so.
        s.autogroup = false;
        let c = convert("t", &perf, &s).unwrap();
        assert_eq!(c.text.matches("# autogroup").count(), 1);
        assert!(c.text.contains("# autogroup enabled=0\n"));
    }

    #[test]
    fn a_text_the_parser_refuses_is_an_error() {
        let e = convert("t", "garbage\n", &seen()).unwrap_err();
        assert!(e.starts_with("t:1: "), "{e}");
    }
}
