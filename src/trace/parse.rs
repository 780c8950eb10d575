//! Trace text import: `perf script` output of `perf sched record` (the
//! default layout and `-F` field choices that keep the CPU; the kernel
//! field layout and the libtraceevent plugin layout), the kernel's ftrace
//! text (`trace`, `trace_pipe`), `trace-cmd report` text (with and without
//! `-R`) and Android's systrace/atrace text (its `TRACE:` wrapper).
//! Scheduler events are kept, and the syscall events of reads and writes
//! (`sys_enter_read`/`sys_exit_read`... in perf and trace-cmd text,
//! `sys_read(...)`/`sys_read -> 0x64` in ftrace text) with the `# fd`
//! lines that name each fd's pipe or socket and the `# autogroup` lines
//! that name each task's autogroup; other events
//! (`tracing_mark_write`...) are skipped. A line that cannot be read is
//! an error naming the file, the line and its text.

use std::collections::BTreeMap;

/// The context of a line whose task perf could not resolve (`:-1 -1`);
/// above the kernel's PID_MAX_LIMIT, so no task has it.
pub const UNKNOWN_PID: u32 = u32::MAX;

/// One scheduler event of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// 1-based line number in the file.
    pub line: usize,
    pub ts: u64,
    pub cpu: usize,
    /// The task the event was emitted in (0 = idle, `UNKNOWN_PID`: not
    /// known).
    pub ctx_pid: u32,
    /// Its thread group (process id), where the line says: perf script's
    /// `pid/tid`, ftrace's `comm-pid (tgid)` with `record-tgid`.
    pub ctx_tgid: Option<u32>,
    /// The flags column says hard or soft interrupt context.
    pub irq: bool,
    pub ev: Event,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Switch {
        prev: Task,
        prev_state: String,
        next: Task,
    },
    /// sched_waking (or sched_wakeup when the trace has no sched_waking).
    Waking {
        task: Task,
        wakeup: bool,
        /// The CPU it is woken onto (`target_cpu`), when the line says.
        target: Option<usize>,
    },
    WakeupNew {
        task: Task,
        /// The CPU the new task is put on (`target_cpu`), when the line says.
        target: Option<usize>,
    },
    Migrate {
        task: Task,
    },
    Fork {
        parent: Task,
        child: Task,
    },
    Exit {
        task: Task,
    },
    /// sys_enter of a read or write (read, readv, recvfrom, recvmsg;
    /// write, writev, sendto, sendmsg) on `fd`, in the context's task.
    SysEnter {
        write: bool,
        fd: u32,
    },
    /// Its sys_exit: `ret` bytes (negative: an error).
    SysExit {
        write: bool,
        ret: i64,
    },
}

/// A parsed trace: its events, and what each (pid, fd) names (`# fd
/// pid=P fd=F object=pipe:[I]` lines: the pipe, or the socket whose
/// receive queue the fd's reads drain or its writes fill), and each
/// task's autogroup (`# autogroup` lines, docs/replay.md "Autogroups").
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    pub recs: Vec<Record>,
    /// Keyed by (pid, fd, which calls the line is for).
    pub fds: BTreeMap<(u32, u32, FdUse), String>,
    /// `# autogroup pid=P group=PATH nice=N`: task P's autogroup and its nice.
    pub autogroups: BTreeMap<u32, (String, i32)>,
    /// `# autogroup enabled=0|1`: kernel.sched_autogroup_enabled when recorded.
    pub autogroup_enabled: Option<bool>,
}

/// Which calls on an fd a `# fd` line names the queue of: both, or (with
/// `use=read` / `use=write`) one kind, for a socket both read and
/// written, whose reads drain its own receive queue and whose writes
/// fill its peer's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FdUse {
    Both,
    Read,
    Write,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    pub pid: u32,
    pub comm: String,
    pub prio: i32,
}

/// How the `comm pid [cpu]` head of a line is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// `comm tid [cpu]` (perf script)
    Perf,
    /// `comm-pid [cpu]` (ftrace, trace-cmd)
    Ftrace,
}

/// Parse a whole trace's events. `name` is used in error messages.
pub fn parse(name: &str, text: &str) -> Result<Vec<Record>, String> {
    parse_all(name, text).map(|p| p.recs)
}

/// Parse a whole trace, with its `# fd` and `# autogroup` lines.
pub fn parse_all(name: &str, text: &str) -> Result<Parsed, String> {
    let mut p = Parsed::default();
    let mut layout = None;
    // Editors on Windows start UTF-8 files with a byte order mark.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        let err = |m: &str| format!("{name}:{}: {m}: `{}`", i + 1, truncate(line));
        if let Some(f) = line.trim_start().strip_prefix("# fd ") {
            let (key, object) = fd_line(f).map_err(|m| err(&m))?;
            p.fds.insert(key, object);
            continue;
        }
        if let Some(f) = line.trim_start().strip_prefix("# autogroup ") {
            autogroup_line(f, &mut p).map_err(|m| err(&m))?;
            continue;
        }
        if skip(line) {
            continue;
        }
        let (l, rec) = parse_line(i + 1, line).map_err(|m| err(&m))?;
        match layout {
            None => layout = Some(l),
            Some(first) if first != l => {
                return Err(err(
                    "mixed trace: this line is not in the layout of the first event line",
                ))
            }
            _ => {}
        }
        if let Some(r) = rec {
            p.recs.push(r);
        }
    }
    if layout.is_none() {
        return Err(format!(
            "{name}: no trace events found (expected perf script, ftrace or trace-cmd report text)"
        ));
    }
    // perf script and trace files are time-ordered; merge safely anyway.
    p.recs.sort_by_key(|r| r.ts);
    check_gaps(name, &p.recs)?;
    Ok(p)
}

/// `enabled=0|1`, or `pid=P group=PATH nice=N`: an autogroup's path is
/// one level under the root (`/autogroup-ID`), its nice the range
/// `/proc/PID/autogroup` takes (MIN_NICE..=MAX_NICE).
fn autogroup_line(f: &str, p: &mut Parsed) -> Result<(), String> {
    let f = kv(f);
    if let Ok(v) = field(&f, "enabled") {
        p.autogroup_enabled = Some(match v {
            "0" => false,
            "1" => true,
            _ => return Err(format!("`# autogroup` enabled=`{v}` is not 0 or 1")),
        });
        return Ok(());
    }
    let group = field(&f, "group")?;
    let one_level = group.len() > 1 && group.starts_with('/') && !group[1..].contains('/');
    if !one_level || group.contains(char::is_whitespace) {
        return Err(format!(
            "`# autogroup` group `{group}` is not a group under the root (/autogroup-ID)"
        ));
    }
    let nice: i32 = field(&f, "nice")?
        .parse()
        .map_err(|_| "`# autogroup` nice is not a number".to_string())?;
    if !(-20..=19).contains(&nice) {
        return Err(format!("`# autogroup` nice {nice} is outside -20..19"));
    }
    p.autogroups
        .insert(num(&f, "pid")?, (group.to_string(), nice));
    Ok(())
}

/// `pid=P fd=F object=NAME [use=read|write]`: what the fd of a task
/// names, for which of its calls.
fn fd_line(f: &str) -> Result<((u32, u32, FdUse), String), String> {
    let f = kv(f);
    let object = field(&f, "object")?;
    if object.is_empty() || object.contains(char::is_whitespace) {
        return Err(format!("`# fd` object `{object}` is not a name"));
    }
    let how = match f.iter().find(|(k, _)| *k == "use").map(|(_, v)| v.as_str()) {
        None => FdUse::Both,
        Some("read") => FdUse::Read,
        Some("write") => FdUse::Write,
        Some(other) => return Err(format!("`# fd` use `{other}` is neither read nor write")),
    };
    Ok(((num(&f, "pid")?, num(&f, "fd")?, how), object.to_string()))
}

/// The longest time two consecutive scheduler events of a trace may be
/// apart: a running system schedules something (a timer's kworker, RCU)
/// every few seconds, so a longer jump is a corrupt timestamp, which the
/// replay would otherwise simulate (584 years for one of all ones).
const MAX_GAP_NS: u64 = 3600 * 1_000_000_000;

/// Refuse a jump in time over [`MAX_GAP_NS`], naming the record on the
/// side of the jump with fewer records: the outlier.
fn check_gaps(name: &str, recs: &[Record]) -> Result<(), String> {
    let Some(i) = (recs.windows(2)).position(|w| w[1].ts - w[0].ts > MAX_GAP_NS) else {
        return Ok(());
    };
    let (bad, near) = if i + 1 < recs.len() - (i + 1) {
        (&recs[i], &recs[i + 1])
    } else {
        (&recs[i + 1], &recs[i])
    };
    let s = |ns: u64| format!("{}.{:06}", ns / 1_000_000_000, ns % 1_000_000_000 / 1000);
    Err(format!(
        "{name}:{}: timestamp {} s is {} s from the nearest event on the other side of the jump \
         (line {}, {} s), more than the {} s two scheduler events can be apart: a corrupt timestamp",
        bad.line,
        s(bad.ts),
        bad.ts.abs_diff(near.ts) / 1_000_000_000,
        near.line,
        s(near.ts),
        MAX_GAP_NS / 1_000_000_000
    ))
}

fn truncate(s: &str) -> String {
    s.chars().take(160).collect()
}

/// Comment and header lines of the formats, and the wrapper of Android's
/// atrace/systrace text (`capturing trace...`, `TRACE:`).
fn skip(line: &str) -> bool {
    let l = line.trim_start();
    l.is_empty()
        || l.starts_with('#')
        || l == "TRACE:"
        || l.starts_with("capturing trace")
        || l.starts_with("version =")
        || l.starts_with("cpus=")
        || l.starts_with("trace-cmd:")
        || (l.starts_with("CPU ") && l.ends_with("is empty"))
}

/// The largest CONFIG_NR_CPUS the kernel accepts: a CPU column beyond it is
/// garbage, not a machine.
const MAX_CPUS: usize = 8192;

/// Find ` [ddd]`: the CPU column. Returns (start of `[`, end after `]`, cpu).
pub(crate) fn find_cpu(line: &str) -> Option<(usize, usize, usize)> {
    let b = line.as_bytes();
    let mut from = 0;
    while let Some(off) = line[from..].find(" [") {
        let start = from + off + 1;
        let digits = b[start + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let close = start + 1 + digits;
        if digits > 0 && b.get(close) == Some(&b']') {
            let cpu = line[start + 1..close].parse().ok()?;
            return Some((start, close + 1, cpu));
        }
        from = start;
    }
    None
}

/// `comm-pid`, `comm-pid (tgid)`, `comm tid` or `comm pid/tid`: the
/// layout, the tid and, where the head says it, the thread group.
fn parse_head(head: &str) -> Result<(Layout, u32, Option<u32>), String> {
    let mut h = head.trim();
    let mut tgid = None;
    if h.ends_with(')') {
        if let Some(open) = h.rfind('(') {
            let inner = h[open + 1..h.len() - 1].trim();
            if inner.chars().all(|c| c.is_ascii_digit() || c == '-') {
                // `-----`: ftrace did not know the tgid.
                tgid = inner.parse().ok();
                h = h[..open].trim_end();
            }
        }
    }
    // perf script -F without comm: `tid` or `pid/tid` (-1: unresolved).
    let tid = h.rsplit('/').next().unwrap_or(h);
    if tid == "-1" {
        return Ok((Layout::Perf, UNKNOWN_PID, None));
    }
    if !tid.is_empty()
        && h.chars()
            .all(|c| c.is_ascii_digit() || c == '/' || c == '-')
    {
        let tid = tid.parse().map_err(|_| "bad tid")?;
        return Ok((Layout::Perf, tid, perf_pid(h)));
    }
    if let Some((comm, last)) = h.rsplit_once(char::is_whitespace) {
        let tid = last.rsplit('/').next().unwrap_or(last);
        // perf writes `:-1 -1` for a thread it could not resolve.
        if tid == "-1" {
            return Ok((Layout::Perf, UNKNOWN_PID, None));
        }
        if !comm.trim().is_empty() && !tid.is_empty() && tid.chars().all(|c| c.is_ascii_digit()) {
            let tid = tid.parse().map_err(|_| "bad tid")?;
            return Ok((Layout::Perf, tid, perf_pid(last)));
        }
    }
    let (_, pid) = h
        .rsplit_once('-')
        .ok_or("expected `comm-pid` or `comm tid` before the CPU column")?;
    let pid = pid.parse().map_err(|_| format!("`{pid}` is not a pid"))?;
    Ok((Layout::Ftrace, pid, tgid))
}

/// The pid of perf script's `pid/tid` (none for a bare tid or pid -1).
fn perf_pid(ids: &str) -> Option<u32> {
    ids.split_once('/').and_then(|(pid, _)| pid.parse().ok())
}

/// `123.456789` → ns.
pub(crate) fn parse_ts(s: &str) -> Option<u64> {
    let (sec, frac) = s.split_once('.').unwrap_or((s, ""));
    if frac.len() > 9 || !frac.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let sec: u64 = sec.parse().ok()?;
    let f: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    sec.checked_mul(1_000_000_000)?
        .checked_add(f * 10u64.pow(9 - frac.len() as u32))
}

fn parse_line(n: usize, line: &str) -> Result<(Layout, Option<Record>), String> {
    let (start, end, cpu) = find_cpu(line).ok_or("no `[cpu]` column")?;
    if cpu >= MAX_CPUS {
        return Err(format!(
            "CPU {cpu} is beyond the kernel's NR_CPUS limit ({MAX_CPUS})"
        ));
    }
    let (layout, ctx_pid, ctx_tgid) = parse_head(&line[..start])?;
    let mut rest = line[end..].trim_start();
    let mut irq = false;
    let mut tok = rest
        .split_whitespace()
        .next()
        .ok_or("nothing after the CPU")?;
    if !tok.ends_with(':') {
        // The flags column (ftrace, newer trace-cmd, perf with flags).
        if tok.len() > 5 || !tok.chars().all(|c| c.is_ascii_alphanumeric() || c == '.') {
            return Err(format!("`{tok}` is neither flags nor a timestamp"));
        }
        irq = tok.contains(['h', 's', 'H']);
        rest = rest[tok.len()..].trim_start();
        tok = rest.split_whitespace().next().ok_or("no timestamp")?;
    }
    let ts = tok
        .strip_suffix(':')
        .and_then(parse_ts)
        .ok_or_else(|| format!("`{tok}` is not a timestamp"))?;
    rest = rest[tok.len()..].trim_start();
    let record = |ev| Record {
        line: n,
        ts,
        cpu,
        ctx_pid,
        ctx_tgid,
        irq,
        ev,
    };
    if let Some(ev) = syscall(rest) {
        return Ok((layout, ev?.map(record)));
    }
    // perf names events `sched:sched_switch`.
    let rest = rest.strip_prefix("sched:").unwrap_or(rest);
    let (event, args) = rest.split_once(':').ok_or("no event name")?;
    let event = event.trim();
    let args = args.trim();
    let ev = match event {
        "sched_switch" => Some(switch(args)?),
        "sched_waking" => Some(Event::Waking {
            task: wake_task(args)?,
            wakeup: false,
            target: target_cpu(args),
        }),
        "sched_wakeup" => Some(Event::Waking {
            task: wake_task(args)?,
            wakeup: true,
            target: target_cpu(args),
        }),
        "sched_wakeup_new" => Some(Event::WakeupNew {
            task: wake_task(args)?,
            target: target_cpu(args),
        }),
        "sched_migrate_task" => Some(Event::Migrate {
            task: kv_task(&kv(args), "")?,
        }),
        "sched_process_fork" => {
            let f = kv(args);
            // Raw fields name the parent `parent_comm`, `parent_pid`.
            let parent = if field(&f, "parent_pid").is_ok() {
                "parent_"
            } else {
                ""
            };
            Some(Event::Fork {
                parent: kv_task(&f, parent)?,
                child: kv_task(&f, "child_")?,
            })
        }
        "sched_process_exit" => Some(Event::Exit {
            task: kv_task(&kv(args), "")?,
        }),
        e if e.is_empty() || e.contains(char::is_whitespace) => {
            return Err(format!("`{e}` is not an event name"))
        }
        _ => None,
    };
    Ok((layout, ev.map(record)))
}

/// A syscall event: None if `rest` is not one; Some(Ok(None)) for a call
/// the replay does not use. The forms: `syscalls:sys_enter_read: fd:
/// 0x00000003, ...` and `syscalls:sys_exit_read: 0x40` (perf script;
/// trace-cmd without `syscalls:`), `sys_read(fd: 3, ...)` and `sys_read
/// -> 0x40` (ftrace text).
fn syscall(rest: &str) -> Option<Result<Option<Event>, String>> {
    let rest = rest.strip_prefix("syscalls:").unwrap_or(rest);
    let (call, args, enter) = if let Some(r) = rest.strip_prefix("sys_enter_") {
        let (c, a) = r.split_once(':')?;
        (c, a, true)
    } else if let Some(r) = rest.strip_prefix("sys_exit_") {
        let (c, a) = r.split_once(':')?;
        (c, a, false)
    } else {
        let r = rest.strip_prefix("sys_")?;
        match (r.split_once('('), r.split_once(" -> ")) {
            (Some((c, a)), _) if !c.contains(' ') => (c, a.trim_end_matches(')'), true),
            (_, Some((c, a))) if !c.contains(' ') => (c, a, false),
            _ => return None,
        }
    };
    let write = match call {
        "read" | "readv" | "recvfrom" | "recvmsg" => false,
        "write" | "writev" | "sendto" | "sendmsg" => true,
        _ => return Some(Ok(None)),
    };
    Some(if enter {
        sys_args(args)
            .and_then(|f| {
                let fd = f
                    .iter()
                    .find(|(k, _)| *k == "fd")
                    .ok_or("missing argument `fd`")?
                    .1;
                u32::try_from(fd).map_err(|_| format!("fd {fd} is not a file descriptor"))
            })
            .map(|fd| Some(Event::SysEnter { write, fd }))
    } else {
        c_num(args.trim())
            .map(|ret| {
                Some(Event::SysExit {
                    write,
                    ret: ret as i64,
                })
            })
            .ok_or_else(|| format!("sys_exit_{call}: `{}` is not a return value", args.trim()))
    })
}

/// `fd: 0x00000003, buf: 0x7ffc..., count: 6`: a syscall's arguments.
fn sys_args(args: &str) -> Result<Vec<(&str, u64)>, String> {
    args.split(',')
        .map(|a| {
            let (k, v) = a
                .split_once(':')
                .ok_or(format!("`{}` is not `name: value`", a.trim()))?;
            let v = c_num(v.trim()).ok_or(format!(
                "argument `{}`: `{}` is not a number",
                k.trim(),
                v.trim()
            ))?;
            Ok((k.trim(), v))
        })
        .collect()
}

/// `0x1f` or `31`.
fn c_num(v: &str) -> Option<u64> {
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

/// `k=v k=v` fields; a token without `=` continues the previous value (a
/// comm with spaces).
fn kv(args: &str) -> Vec<(&str, String)> {
    let mut out: Vec<(&str, String)> = Vec::new();
    for tok in args.split_whitespace() {
        match tok.split_once('=') {
            Some((k, v))
                if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                out.push((k, v.to_string()))
            }
            _ => {
                if let Some(last) = out.last_mut() {
                    last.1.push(' ');
                    last.1.push_str(tok);
                }
            }
        }
    }
    out
}

fn field<'a>(f: &'a [(&str, String)], key: &str) -> Result<&'a str, String> {
    f.iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.as_str())
        .ok_or_else(|| format!("missing field `{key}`"))
}

fn num<T: std::str::FromStr>(f: &[(&str, String)], key: &str) -> Result<T, String> {
    let v = field(f, key)?;
    v.parse()
        .map_err(|_| format!("field `{key}`: `{v}` is not a number"))
}

/// comm/pid/prio fields with a key prefix (`prev_`, `child_`).
fn kv_task(f: &[(&str, String)], prefix: &str) -> Result<Task, String> {
    Ok(Task {
        comm: field(f, &format!("{prefix}comm"))?.to_string(),
        pid: num(f, &format!("{prefix}pid"))?,
        prio: num(f, &format!("{prefix}prio")).unwrap_or(120),
    })
}

/// The plugin form `comm:pid [prio]`.
fn plugin_task(s: &str) -> Result<Task, String> {
    let s = s.trim();
    let (who, prio) = match s.rfind(" [") {
        Some(i) => (&s[..i], s[i + 2..].trim_end_matches(']')),
        None => (s, "120"),
    };
    let (comm, pid) = who
        .trim()
        .rsplit_once(':')
        .ok_or_else(|| format!("`{who}` is not comm:pid"))?;
    Ok(Task {
        comm: comm.to_string(),
        pid: pid.parse().map_err(|_| format!("`{pid}` is not a pid"))?,
        prio: prio.trim().parse().unwrap_or(120),
    })
}

fn switch(args: &str) -> Result<Event, String> {
    let Some((l, r)) = args.split_once(" ==> ") else {
        // Raw fields (`trace-cmd report -R`): one list, a numeric state.
        let f = kv(args);
        if field(&f, "prev_pid").is_err() {
            return Err("sched_switch: neither ` ==> ` nor raw `prev_pid=` fields".into());
        }
        let state = field(&f, "prev_state")?;
        return Ok(Event::Switch {
            prev: kv_task(&f, "prev_")?,
            prev_state: state_letter(state)?.to_string(),
            next: kv_task(&f, "next_")?,
        });
    };
    if l.contains("prev_pid=") {
        let (lf, rf) = (kv(l), kv(r));
        return Ok(Event::Switch {
            prev: kv_task(&lf, "prev_")?,
            prev_state: field(&lf, "prev_state")?.to_string(),
            next: kv_task(&rf, "next_")?,
        });
    }
    // Plugin form: `comm:pid [prio] S ==> comm:pid [prio]`.
    let (who, state) = l
        .trim()
        .rsplit_once(' ')
        .ok_or("sched_switch: no prev state")?;
    Ok(Event::Switch {
        prev: plugin_task(who)?,
        prev_state: state.to_string(),
        next: plugin_task(r)?,
    })
}

/// `target_cpu=001` (kernel fields) or `CPU:001` (plugin form).
fn target_cpu(args: &str) -> Option<usize> {
    let f = kv(args);
    let v = match field(&f, "target_cpu") {
        Ok(v) => v,
        Err(_) => args.split_once(" CPU:")?.1.split_whitespace().next()?,
    };
    v.parse().ok().filter(|&c| c < MAX_CPUS)
}

/// A raw `prev_state` number as the letter the kernel prints: 0 is R, a
/// bit above the reportable states R+ (preempted, TASK_REPORT_MAX), else
/// the lowest bit of S D T t X Z P I (v4.14+; older kernels' numbers
/// differ above Z, which only matters for X and Z here).
fn state_letter(v: &str) -> Result<&'static str, String> {
    let n: u64 = match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
    .ok_or_else(|| format!("field `prev_state`: `{v}` is not a state"))?;
    const LETTERS: [&str; 8] = ["S", "D", "T", "t", "X", "Z", "P", "I"];
    Ok(match n {
        0 => "R",
        n if n >= 1 << LETTERS.len() => "R+",
        n => LETTERS[n.trailing_zeros() as usize],
    })
}

fn wake_task(args: &str) -> Result<Task, String> {
    if args.contains("pid=") {
        return kv_task(&kv(args), "");
    }
    // Plugin form: `comm:pid [prio] CPU:001` (maybe `success=1`).
    let end = args
        .find(" CPU:")
        .or_else(|| args.find(" success="))
        .unwrap_or(args.len());
    plugin_task(&args[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_three_layouts() {
        let perf = "  my prog  1234 [001]  66.846217: sched:sched_switch: prev_comm=my prog prev_pid=1234 prev_prio=120 prev_state=D ==> next_comm=perf next_pid=234 next_prio=120";
        let r = parse("p", perf).unwrap();
        assert_eq!(r[0].cpu, 1);
        assert_eq!(r[0].ts, 66_846_217_000);
        assert_eq!(r[0].ctx_pid, 1234);
        let Event::Switch {
            prev,
            prev_state,
            next,
        } = &r[0].ev
        else {
            panic!()
        };
        assert_eq!(
            (prev.comm.as_str(), prev.pid, prev_state.as_str()),
            ("my prog", 1234, "D")
        );
        assert_eq!(next.pid, 234);

        let plugin = "   perf_4.9  3005 [002]   10.000001: sched:sched_switch: perf_4.9:3005 [49] S ==> swapper/2:0 [120]";
        let r = parse("p", plugin).unwrap();
        let Event::Switch { prev, next, .. } = &r[0].ev else {
            panic!()
        };
        assert_eq!((prev.pid, prev.prio, next.pid), (3005, 49, 0));

        let tc = "version = 6\ncpus=2\n      <idle>-0     [001] 106439.675700: sched_wakeup:         trace-cmd:4731 [120] CPU:001";
        let r = parse("t", tc).unwrap();
        assert_eq!(
            r[0].ev,
            Event::Waking {
                task: Task {
                    pid: 4731,
                    comm: "trace-cmd".into(),
                    prio: 120
                },
                wakeup: true,
                target: Some(1)
            }
        );

        let ft = "  lto cgu.04-23946 (  23940) [000] dNh2.  6670.452841: sched_waking: comm=bash pid=7 prio=120 target_cpu=000";
        let r = parse("f", ft).unwrap();
        assert!(r[0].irq);
        assert_eq!((r[0].ctx_pid, r[0].ctx_tgid), (23946, Some(23940)));
        let unknown = ft.replace("(  23940)", "(-------)");
        assert_eq!(parse("f", &unknown).unwrap()[0].ctx_tgid, None);
    }

    #[test]
    fn raw_switch_fields_and_states() {
        let raw = "  a-1 [000]  1.000000: sched_switch:  prev_comm=a b prev_pid=1 prev_prio=120 prev_state=256 next_comm=c next_pid=2 next_prio=120";
        let r = parse("r", raw).unwrap();
        let Event::Switch {
            prev,
            prev_state,
            next,
        } = &r[0].ev
        else {
            panic!()
        };
        assert_eq!(
            (prev.comm.as_str(), prev_state.as_str(), next.pid),
            ("a b", "R+", 2)
        );
        let got: Vec<_> = ["0", "1", "2", "16", "32", "128", "0x1"]
            .iter()
            .map(|v| state_letter(v).unwrap())
            .collect();
        assert_eq!(got, ["R", "S", "D", "X", "Z", "I", "S"]);
        assert!(state_letter("S").is_err());
        let fork = "  a-1 [000]  1.0: sched_process_fork: parent_comm=a parent_pid=1 child_comm=a child_pid=3";
        assert!(
            matches!(&parse("f", fork).unwrap()[0].ev, Event::Fork { parent, .. } if parent.pid == 1)
        );
        let f = "16043/16044 [001]  1.0: sched:sched_waking: comm=a pid=1 prio=120 target_cpu=000";
        let r = parse("f", f).unwrap();
        assert_eq!(
            (r[0].ctx_pid, r[0].ctx_tgid, r[0].cpu),
            (16044, Some(16043), 1)
        );
        let named = format!("sched-messaging {f}");
        assert_eq!(parse("f", &named).unwrap()[0].ctx_tgid, Some(16043));
        let bare = f.replace("16043/", "");
        assert_eq!(parse("f", &bare).unwrap()[0].ctx_tgid, None);
    }

    #[test]
    fn reads_syscall_events_and_fd_lines() {
        let t = "# fd pid=7 fd=4 object=pipe:[12]\n\
            # fd pid=7 fd=5 object=socket:[20] use=read\n\
            # fd pid=7 fd=5 object=socket:[21] use=write\n\
            \x20 a-7 [001] ..... 1.000000: sys_write(fd: 4, buf: 0x7ffc, count: 0x64)\n\
            \x20 a-7 [001] ..... 1.000001: sys_write -> 0x64\n\
            \x20 a-7 [001] ..... 1.000002: sys_read(fd: 0xd, buf: 0, count: 1)\n\
            \x20 a-7 [001] ..... 1.000003: sys_read -> 0xfffffffffffffff5\n\
            \x20 a-7 [001] ..... 1.000004: sys_getppid()\n";
        let p = parse_all("t", t).unwrap();
        let name = |fd, how| p.fds.get(&(7, fd, how)).map(String::as_str);
        assert_eq!(name(4, FdUse::Both), Some("pipe:[12]"));
        assert_eq!(name(5, FdUse::Read), Some("socket:[20]"));
        assert_eq!(name(5, FdUse::Write), Some("socket:[21]"));
        let ev: Vec<_> = p.recs.iter().map(|r| r.ev.clone()).collect();
        assert_eq!(
            ev,
            [
                Event::SysEnter { write: true, fd: 4 },
                Event::SysExit {
                    write: true,
                    ret: 100
                },
                Event::SysEnter {
                    write: false,
                    fd: 13
                },
                Event::SysExit {
                    write: false,
                    ret: -11
                },
            ]
        );
        let perf = "a 7 [001] 1.0: syscalls:sys_enter_recvmsg: fd: 0x00000005, msg: 0x7ffc, flags: 0x00000000\n\
            a 7 [001] 1.1: syscalls:sys_exit_recvmsg: 0x64";
        let ev: Vec<_> = parse("p", perf)
            .unwrap()
            .into_iter()
            .map(|r| r.ev)
            .collect();
        assert_eq!(
            ev[0],
            Event::SysEnter {
                write: false,
                fd: 5
            }
        );
        assert_eq!(
            ev[1],
            Event::SysExit {
                write: false,
                ret: 100
            }
        );
        for bad in [
            "# fd pid=7 fd=x object=pipe:[1]",
            "# fd pid=7 fd=4",
            "# fd pid=7 fd=4 object=pipe:[1] use=both",
            "  a-7 [001] ..... 1.0: sys_write(fd: z, buf: 0, count: 1)",
            "  a-7 [001] ..... 1.0: sys_write -> what",
        ] {
            assert!(
                parse_all("b", bad).unwrap_err().starts_with("b:1: "),
                "{bad}"
            );
        }
    }

    #[test]
    fn reads_autogroup_lines() {
        let t = "# autogroup enabled=1\n# autogroup pid=7 group=/autogroup-12 nice=-3\n\
            a 7 [001] 1.0: sched:sched_waking: comm=a pid=7 prio=120 target_cpu=001\n";
        let p = parse_all("t", t).unwrap();
        assert_eq!(p.autogroup_enabled, Some(true));
        assert_eq!(p.autogroups.get(&7), Some(&("/autogroup-12".into(), -3)));
        let p = parse_all("t", &t.replace("enabled=1", "enabled=0")).unwrap();
        assert_eq!(p.autogroup_enabled, Some(false));
        let none = parse_all("t", &t[t.find("a 7").unwrap()..]).unwrap();
        assert_eq!((none.autogroup_enabled, none.autogroups.len()), (None, 0));
        for bad in [
            "# autogroup enabled=yes",
            "# autogroup pid=7 group=/autogroup-12",
            "# autogroup pid=7 group=/a/b nice=0",
            "# autogroup pid=7 group=/ nice=0",
            "# autogroup pid=7 group=/a nice=-21",
            "# autogroup pid=7 nice=0",
        ] {
            let e = parse_all("b", bad).unwrap_err();
            assert!(e.starts_with("b:1: "), "{bad}: {e}");
        }
    }

    #[test]
    fn bad_lines_name_file_line_and_text() {
        let t = "  a-1 [000] d..2 1.000000: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120\n  a-1 [000] d..2 1.000001: sched_switch: prev_comm=a prev_pid=1 prev_prio=1";
        let e = parse("x.txt", t).unwrap_err();
        assert!(e.starts_with("x.txt:2: "), "{e}");
        assert!(e.contains("prev_comm=a prev_pid=1"), "{e}");
        let mixed = "  a-1 [000] 1.0: sched_waking: comm=a pid=1 prio=120 target_cpu=000\n  a 1 [000] 1.1: sched:sched_waking: comm=a pid=1 prio=120 target_cpu=000";
        assert!(parse("m", mixed).unwrap_err().contains("m:2: mixed"));
        assert!(parse("g", "garbage here\n")
            .unwrap_err()
            .starts_with("g:1: "));
        assert!(parse("e", "# only comments\n").is_err());
    }
}
