//! The trace-cmd exporter: a `trace.dat` (version 6, trace-cmd.dat.v6(5))
//! that `trace-cmd report` and KernelShark open. The file holds the ring
//! buffer's page and event headers, the format of each sched event (as the
//! kernel's tracefs `format` files describe include/trace/events/sched.h),
//! saved_cmdlines (pid → comm) and per CPU the ring-buffer pages: a 16-byte
//! page header (timestamp, commit) and 4-byte-headed records with 27-bit
//! time deltas (kernel/trace/ring_buffer.c's layout).
//!
//! The header's pid → comm table and the per-CPU data's offsets are known
//! only at the end, so full pages go to an unlinked scratch file as they
//! fill and are copied out per CPU in `finish`: memory stays one page per CPU.

use super::{prio, state_bits, TraceFile};
use crate::kernel::task::{Pid, TaskState};
use crate::kernel::tracepoint::{TraceEvent, Tracer};
use crate::kernel::Kernel;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

/// The ring buffer's page size (and the file's page alignment).
const PAGE: usize = 4096;
/// Page header: u64 timestamp, then the commit (bytes used) as a 64-bit local_t.
const PAGE_HDR: usize = 16;
/// Largest time delta a record header holds (27 bits).
const MAX_DELTA: u64 = (1 << 27) - 1;
/// type_len of a time-extend record (ring_buffer.c RINGBUF_TYPE_TIME_EXTEND).
const TIME_EXTEND: u32 = 30;

const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
    \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
    \tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
    \tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";

const HEADER_EVENT: &str = "# compressed entry header\n\
    \ttype_len    :    5 bits\n\
    \ttime_delta  :   27 bits\n\
    \tarray       :   32 bits\n\n\
    \tpadding     : type == 29\n\
    \ttime_extend : type == 30\n\
    \ttime_stamp : type == 31\n\
    \tdata max type_len  == 28\n";

/// The events written, with their ids (common_type) and fields after the
/// 8 common bytes, as (C declaration, size); and the print format.
struct EventFormat {
    name: &'static str,
    id: u16,
    fields: &'static [(&'static str, usize)],
    print: &'static str,
}

const SWITCH: u16 = 300;
const WAKING: u16 = 301;
const WAKEUP: u16 = 302;
const WAKEUP_NEW: u16 = 303;
const MIGRATE: u16 = 304;
const FORK: u16 = 305;
const EXIT: u16 = 306;
const FREE: u16 = 307;

const TASK: &[(&str, usize)] = &[("char comm[16]", 16), ("pid_t pid", 4), ("int prio", 4)];
const WAKE: &[(&str, usize)] = &[
    ("char comm[16]", 16),
    ("pid_t pid", 4),
    ("int prio", 4),
    ("int target_cpu", 4),
];
const WAKE_FMT: &str =
    "\"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio, REC->target_cpu";
const TASK_FMT: &str = "\"comm=%s pid=%d prio=%d\", REC->comm, REC->pid, REC->prio";

const EVENTS: &[EventFormat] = &[
    EventFormat {
        name: "sched_switch",
        id: SWITCH,
        fields: &[
            ("char prev_comm[16]", 16),
            ("pid_t prev_pid", 4),
            ("int prev_prio", 4),
            ("long prev_state", 8),
            ("char next_comm[16]", 16),
            ("pid_t next_pid", 4),
            ("int next_prio", 4),
        ],
        print: "\"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d\", \
            REC->prev_comm, REC->prev_pid, REC->prev_prio, \
            (REC->prev_state & 0xff) ? __print_flags(REC->prev_state & 0xff, \"|\", { 0x01, \"S\" }, { 0x02, \"D\" }, { 0x10, \"X\" }, { 0x20, \"Z\" }) : \"R\", \
            REC->prev_state & 0x100 ? \"+\" : \"\", REC->next_comm, REC->next_pid, REC->next_prio",
    },
    EventFormat { name: "sched_waking", id: WAKING, fields: WAKE, print: WAKE_FMT },
    EventFormat { name: "sched_wakeup", id: WAKEUP, fields: WAKE, print: WAKE_FMT },
    EventFormat { name: "sched_wakeup_new", id: WAKEUP_NEW, fields: WAKE, print: WAKE_FMT },
    EventFormat {
        name: "sched_migrate_task",
        id: MIGRATE,
        fields: &[
            ("char comm[16]", 16),
            ("pid_t pid", 4),
            ("int prio", 4),
            ("int orig_cpu", 4),
            ("int dest_cpu", 4),
        ],
        print: "\"comm=%s pid=%d prio=%d orig_cpu=%d dest_cpu=%d\", REC->comm, REC->pid, REC->prio, REC->orig_cpu, REC->dest_cpu",
    },
    EventFormat {
        name: "sched_process_fork",
        id: FORK,
        fields: &[
            ("char parent_comm[16]", 16),
            ("pid_t parent_pid", 4),
            ("char child_comm[16]", 16),
            ("pid_t child_pid", 4),
        ],
        print: "\"comm=%s pid=%d child_comm=%s child_pid=%d\", REC->parent_comm, REC->parent_pid, REC->child_comm, REC->child_pid",
    },
    EventFormat { name: "sched_process_exit", id: EXIT, fields: TASK, print: TASK_FMT },
    EventFormat { name: "sched_process_free", id: FREE, fields: TASK, print: TASK_FMT },
];

/// The tracefs `format` file of `e`.
fn format_file(e: &EventFormat) -> String {
    let mut s = format!(
        "name: {}\nID: {}\nformat:\n\
         \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
         \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
         \tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
         \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n",
        e.name, e.id
    );
    let mut off = 8;
    for (decl, size) in e.fields {
        let signed = u8::from(!decl.starts_with("char"));
        s += &format!("\tfield:{decl};\toffset:{off};\tsize:{size};\tsigned:{signed};\n");
        off += size;
    }
    s + &format!("\nprint fmt: {}\n", e.print)
}

/// One CPU's ring buffer: the page being filled and the full pages'
/// indices in the scratch file.
struct CpuBuf {
    page: Vec<u8>,
    /// Time of the last record on the page (deltas are from it).
    last: u64,
    spilled: Vec<u64>,
}

impl CpuBuf {
    fn new() -> Self {
        CpuBuf {
            page: Vec::with_capacity(PAGE),
            last: 0,
            spilled: Vec::new(),
        }
    }
}

pub struct DatWriter {
    out: TraceFile,
    window: (u64, u64),
    cpus: Vec<CpuBuf>,
    scratch: File,
    pages: u64,
    rec: Vec<u8>,
}

/// A file in the temporary directory, unlinked at once: it disappears
/// with the process, however that ends.
fn scratch_file() -> io::Result<File> {
    let path = std::env::temp_dir().join(format!(".schedlab-dat-{}", std::process::id()));
    let f = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    std::fs::remove_file(&path)?;
    Ok(f)
}

/// `s` as a NUL-padded char[16] (TASK_COMM_LEN: 15 bytes and a NUL).
fn comm16(b: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let n = bytes.len().min(15);
    b.extend_from_slice(&bytes[..n]);
    b.resize(b.len() + 16 - n, 0);
}

impl DatWriter {
    pub fn new(out: TraceFile, window: Option<(u64, u64)>, k: &Kernel) -> io::Result<Self> {
        Ok(DatWriter {
            out,
            window: window.unwrap_or((0, u64::MAX)),
            cpus: (0..k.rqs.len()).map(|_| CpuBuf::new()).collect(),
            scratch: scratch_file()?,
            pages: 0,
            rec: Vec::with_capacity(128),
        })
    }

    /// Start a record: the common fields of the task running `ctx` on `cpu`.
    fn begin(&mut self, k: &Kernel, id: u16, flags: u8, preempt_count: u8, ctx: Option<Pid>) {
        let r = &mut self.rec;
        r.clear();
        r.extend_from_slice(&id.to_le_bytes());
        r.push(flags);
        r.push(preempt_count);
        let pid = ctx.map_or(0, |p| k.tasks[p].pid as i32);
        r.extend_from_slice(&pid.to_le_bytes());
    }

    /// comm, pid and prio of `p` (None: the idle task of `cpu`).
    fn task(&mut self, k: &Kernel, p: Option<Pid>, cpu: usize) {
        match p {
            Some(p) => {
                comm16(&mut self.rec, &k.tasks[p].comm);
                self.int(k.tasks[p].pid as i32);
                self.int(prio(k, p));
            }
            None => {
                comm16(&mut self.rec, &format!("swapper/{cpu}"));
                self.int(0);
                self.int(120);
            }
        }
    }

    fn int(&mut self, v: i32) {
        self.rec.extend_from_slice(&v.to_le_bytes());
    }

    /// Append the record built in `rec` to `cpu`'s ring buffer at `now`.
    fn commit(&mut self, cpu: usize, now: u64) -> io::Result<()> {
        debug_assert!(self.rec.len().is_multiple_of(4) && self.rec.len() <= 28 * 4);
        // A record at time 0 (the first fork's wakeup) is one KernelShark
        // takes for none (pick_next_cpu reads a 0 timestamp as unset, and
        // leaves that CPU empty until its next record): it goes at 1 ns,
        // which trace-cmd report's microseconds do not show.
        let now = now.max(1);
        let c = &mut self.cpus[cpu];
        let mut delta = now - c.last.min(now);
        let extend = if delta > MAX_DELTA { 8 } else { 0 };
        if c.page.is_empty() || c.page.len() + extend + 4 + self.rec.len() > PAGE {
            self.spill(cpu)?;
            let c = &mut self.cpus[cpu];
            c.page.extend_from_slice(&now.to_le_bytes());
            c.page.extend_from_slice(&0u64.to_le_bytes());
            c.last = now;
            delta = 0;
        }
        let c = &mut self.cpus[cpu];
        if delta > MAX_DELTA {
            let hdr = TIME_EXTEND | ((delta & MAX_DELTA) as u32) << 5;
            c.page.extend_from_slice(&hdr.to_le_bytes());
            c.page
                .extend_from_slice(&((delta >> 27) as u32).to_le_bytes());
            delta = 0;
        }
        let hdr = (self.rec.len() / 4) as u32 | (delta as u32) << 5;
        c.page.extend_from_slice(&hdr.to_le_bytes());
        c.page.extend_from_slice(&self.rec);
        c.last = now;
        self.out.count(4 + self.rec.len(), now);
        Ok(())
    }

    /// Write `cpu`'s current page (if any) to the scratch file.
    fn spill(&mut self, cpu: usize) -> io::Result<()> {
        let c = &mut self.cpus[cpu];
        if c.page.is_empty() {
            return Ok(());
        }
        let commit = (c.page.len() - PAGE_HDR) as u64;
        c.page[8..16].copy_from_slice(&commit.to_le_bytes());
        c.page.resize(PAGE, 0);
        self.scratch.write_all(&c.page)?;
        c.page.clear();
        c.spilled.push(self.pages);
        self.pages += 1;
        Ok(())
    }

    fn write(&mut self, k: &Kernel, ev: &TraceEvent) -> io::Result<()> {
        let now = k.now;
        match *ev {
            TraceEvent::Switch {
                cpu,
                prev,
                prev_state,
                next,
                preempt,
            } => {
                self.begin(k, SWITCH, 0x01, 2, prev);
                self.task(k, prev, cpu);
                let st = prev.map_or(0, |p| state_bits(k, p, prev_state, preempt));
                self.rec.extend_from_slice(&st.to_le_bytes());
                self.task(k, next, cpu);
                self.commit(cpu, now)?;
                if let Some(p) = prev.filter(|&p| k.tasks[p].state == TaskState::Dead) {
                    self.begin(k, FREE, 0, 0, next);
                    self.task(k, Some(p), cpu);
                    self.commit(cpu, now)?;
                }
            }
            TraceEvent::Waking { cpu, p, waker } => {
                // An interrupt (a timer) is the waker when there is none.
                let flags = if waker.is_none() { 0x09 } else { 0x01 };
                self.begin(k, WAKING, flags, 2, waker.or(k.trace_ctx(cpu)));
                self.task(k, Some(p), cpu);
                self.int(k.tasks[p].cpu as i32);
                self.commit(cpu, now)?;
            }
            TraceEvent::Wakeup { cpu, p, target } | TraceEvent::WakeupNew { cpu, p, target } => {
                let id = if matches!(ev, TraceEvent::Wakeup { .. }) {
                    WAKEUP
                } else {
                    WAKEUP_NEW
                };
                let flags = if k.rqs[cpu].need_resched { 0x05 } else { 0x01 };
                self.begin(k, id, flags, 3, k.trace_ctx(cpu));
                self.task(k, Some(p), cpu);
                self.int(target as i32);
                self.commit(cpu, now)?;
            }
            TraceEvent::Migrate { p, orig, dest } => {
                self.begin(k, MIGRATE, 0x01, 2, k.trace_ctx(dest));
                self.task(k, Some(p), dest);
                self.int(orig as i32);
                self.int(dest as i32);
                self.commit(dest, now)?;
            }
            TraceEvent::Fork { cpu, parent, child } => {
                self.begin(k, FORK, 0, 0, Some(parent));
                comm16(&mut self.rec, &k.tasks[parent].comm);
                self.int(k.tasks[parent].pid as i32);
                comm16(&mut self.rec, &k.tasks[child].comm);
                self.int(k.tasks[child].pid as i32);
                self.commit(cpu, now)?;
            }
            TraceEvent::Exit { p } => {
                let cpu = k.tasks[p].cpu;
                self.begin(k, EXIT, 0, 0, Some(p));
                self.task(k, Some(p), cpu);
                self.commit(cpu, now)?;
            }
            // A trace.dat holds the kernel's tracepoints only.
            _ => {}
        }
        Ok(())
    }

    /// Everything before the CPU data: the initial format, the headers,
    /// the event formats, kallsyms and printk formats (empty), the
    /// saved_cmdlines, the CPU count and the flyrecord table.
    fn header(&self, k: &Kernel, sizes: &[u64]) -> Vec<u8> {
        let mut h = Vec::new();
        h.extend_from_slice(b"\x17\x08\x44tracing6\0");
        h.push(0); // little endian
        h.push(8); // userspace long size
        h.extend_from_slice(&(PAGE as u32).to_le_bytes());
        for (name, text) in [("header_page", HEADER_PAGE), ("header_event", HEADER_EVENT)] {
            h.extend_from_slice(name.as_bytes());
            h.push(0);
            h.extend_from_slice(&(text.len() as u64).to_le_bytes());
            h.extend_from_slice(text.as_bytes());
        }
        h.extend_from_slice(&0u32.to_le_bytes()); // no ftrace (plugin) event formats
        h.extend_from_slice(&1u32.to_le_bytes()); // one event system
        h.extend_from_slice(b"sched\0");
        h.extend_from_slice(&(EVENTS.len() as u32).to_le_bytes());
        for e in EVENTS {
            let f = format_file(e);
            h.extend_from_slice(&(f.len() as u64).to_le_bytes());
            h.extend_from_slice(f.as_bytes());
        }
        h.extend_from_slice(&0u32.to_le_bytes()); // kallsyms
        h.extend_from_slice(&0u32.to_le_bytes()); // printk formats
        let cmdlines: String = k
            .tasks
            .iter()
            .map(|t| format!("{} {}\n", t.pid, super::sanitize(&t.comm)))
            .collect();
        h.extend_from_slice(&(cmdlines.len() as u64).to_le_bytes());
        h.extend_from_slice(cmdlines.as_bytes());
        h.extend_from_slice(&(sizes.len() as u32).to_le_bytes());
        h.extend_from_slice(b"flyrecord\0");
        let table_end = h.len() + 16 * sizes.len();
        let mut offset = table_end.div_ceil(PAGE) * PAGE;
        for &size in sizes {
            h.extend_from_slice(&(offset as u64).to_le_bytes());
            h.extend_from_slice(&size.to_le_bytes());
            offset += size as usize;
        }
        h.resize(table_end.div_ceil(PAGE) * PAGE, 0);
        h
    }
}

impl Tracer for DatWriter {
    fn event(&mut self, k: &Kernel, ev: &TraceEvent) {
        if k.now < self.window.0 || k.now >= self.window.1 {
            return;
        }
        if let Err(e) = self.write(k, ev) {
            self.out.fail(e);
        }
    }

    fn finish(mut self: Box<Self>, k: &Kernel) -> io::Result<()> {
        for cpu in 0..self.cpus.len() {
            self.spill(cpu)?;
        }
        let sizes: Vec<u64> = self
            .cpus
            .iter()
            .map(|c| (c.spilled.len() * PAGE) as u64)
            .collect();
        let header = self.header(k, &sizes);
        let DatWriter {
            mut out,
            cpus,
            mut scratch,
            ..
        } = *self;
        out.write(&header);
        let mut page = vec![0u8; PAGE];
        for c in &cpus {
            for &i in &c.spilled {
                scratch.seek(SeekFrom::Start(i * PAGE as u64))?;
                scratch.read_exact(&mut page)?;
                out.write(&page);
            }
        }
        out.finish(&[])
    }
}
