//! From measured primitives to cost-model fields.
//!
//! Every field is either computed from primitives measured in this run, or
//! kept from the base model (the `host` preset's: vm-2's in a VM) and
//! marked so. Benchmarks whose outcome depends on scheduling decisions
//! (`perf bench sched pipe`, messaging, hackbench) are never used: they are
//! what the model is tested against. The token rings are SCHED_BATCH (one
//! runnable task at a time, no preemption): primitives, lmbench's lat_ctx. The derivations, with `m(x)` the median of primitive `x`:
//!
//! - `syscall_ns` = m(getppid).
//! - `wakeup_local_ns` = m(futex_wake_local) − m(clock) − m(futex_wake_empty):
//!   a futex_wake that finds a SCHED_BATCH waiter on the waker's own CPU
//!   (try_to_wake_up: select_task_rq, enqueue, the preemption check, which
//!   a BATCH wakee never wins), less the same call with no waiter.
//! - `context_switch_ns` = m(pingpong_thread)/2 − m(futex_wake_local) −
//!   m(futex_wait_eagain): half a same-CPU futex round trip between two
//!   BATCH threads (each wakes the other, then blocks) less the wake and
//!   the futex_wait entry/exit; the rest is the block (dequeue) and
//!   `__schedule`. The clock reads in the loop cancel.
//! - `mm_switch_ns` = (m(pingpong_process) − m(pingpong_thread)) / 2.
//! - `remote_rq_lock_ns` and `rq_lock_contention_ns` = 2 × m(line_llc):
//!   vm-2's rules (lock + enqueue ≈ 2 line transfers; one hand-off plus the
//!   MCS node per queued waiter) applied to the measured line.
//! - `cache_refill_*_ns` = refill_ns(m(line_<distance>)); distances this
//!   machine lacks take the nearest nearer one (never charged).
//! - `ipi_send_ns`: a waker's futex_wake of a task on an idle CPU goes
//!   through the wakelist: m(waker_idle) − m(clock) − m(futex_wake_empty) −
//!   (wakeup_local − activate) − line; of a task beside a SCHED_IDLE
//!   spinner, through the remote rq: m(waker_busy) − m(clock) −
//!   m(futex_wake_empty) − wakeup_local − remote_rq_lock. The mean of both.
//! - `ipi_latency_ns` = m(wake_busy_target) − irq_entry_exit − context_switch
//!   − syscall/2, where wake_busy_target is, per wakeup, the wakee's
//!   latency less the waker's futex_wake time (what happens after the IPI
//!   is sent: flight, interrupt, reschedule at its return, switch, the
//!   wakee's return from futex_wait).
//! - the deepest idle state's `exit_latency_ns` = m(wake_idle_target) −
//!   m(wake_busy_target) − activate (an idle target also runs the queued
//!   activation itself), with a 50 µs idle gap; the 1 ms gap is reported.
//!   These idle-target rules (and `ipi_send_ns`'s waker_idle) assume an idle
//!   target that takes an IPI, as the guests calibrated so far do (HLT). On
//!   bare-metal x86 its states are MWAIT (`IdleState::mwait`, which `host`
//!   reads from sysfs) and no IPI is sent: the rules would need the IPI
//!   terms taken out there, which is not done.
//! - `pipe_op_ns` = c/2 − syscall, `pipe_copy_ps_per_byte` = 1000·s/2 for a
//!   write+read pair that never sleeps costing c + s·bytes: s from the 4 KiB
//!   and 32 KiB medians, c = m(1 byte) − s. Sockets: `socket_skb_ns` = c −
//!   2·syscall, `socket_copy_ps_per_byte` likewise.
//! - `fork_ns` = m(fork) − m(clock); `exit_ns` = m(fork_exit_wait) − m(fork)
//!   − 2·(context_switch + mm_switch) − wakeup_local − 2·syscall.
//! - `tick_ns` = m(tick_gap): the time a busy loop loses to each timer tick.
//! - `pipe_xcpu_lines` = ((m(pipe_xcpu_<d>_read) + m(pipe_xcpu_<d>_write) −
//!   m(pipe_stream_100)) / m(line_<d>) − 2) / 2 at the nearest distance d:
//!   a 100-byte stream from a writer on another CPU, never sleeping, costs
//!   that many lines a message more than on one CPU; 2 of them are the
//!   data, the rest is the pipe's, moved once by each side.
//!   `socket_xcpu_lines` the same from `unix_*`, less the skb's
//!   SKB_LINES + 2 data lines.
//! - `socket_lock_hold_ns` = (m(unix_writers_<N>_write) −
//!   m(unix_xcpu_<d>_write)) / (N − 1) for the most writers N measured:
//!   each sender added to one socket makes every send wait this much more.
//! - `pipe_mix_read_lines` = (m(pipe_rotate_<N>_read) − m(pipe_xcpu_<d>_read))
//!   / m(line_<d>) for the most writers N taking turns, and `_write` the
//!   same: what a message from another CPU than the one before it costs
//!   beyond one writer's stream, without contention; `socket_mix_*` the
//!   same from `unix_*`.
//! - `nohz_idle_exit_ns` = m(cycle_<distance>) − m(cycle_same) − irq entry/exit
//!   − activate − the read's line transfers (mean of pipe and unix): the
//!   reader's CPU time across a read that slept, woken from another CPU
//!   against from its own.
//! - `pipe_wait_cycle_ns` = m(ring_thread_2) − 2·(1-byte pipe op) −
//!   wakeup_local − context_switch, at least 0; `socket_wait_cycle_ns` the
//!   same from m(ring_unix_thread_2).
//! - `switch_cache_warm_ns` / `_cold_ns` = m(ring_thread_3) / m(ring_thread_8)
//!   − m(ring_thread_2); `tlb_asid_miss_ns` = m(ring_process_8) −
//!   m(ring_process_6).
//!
//! `activate_ns` = 4/7 of wakeup_local_ns (a profile ratio). Not measurable from user space, kept: irq_entry_exit_ns,
//! sis_scan_per_cpu_ns, group_level_ns, smt_speed_pct, and the shallower
//! idle states' latencies (from sysfs).

use super::bench::Ipc;
use super::results::Results;
use super::ring_id;
use crate::machine::cost::{refill_ns, CostModel, IdleState};
use std::collections::BTreeMap;

/// Cross-CPU distance names, nearest first, as primitive-id suffixes.
pub const DISTANCES: [&str; 4] = crate::machine::measured::DISTANCES;

/// A derived cost model and, per field, how its value was obtained.
pub struct Derived {
    pub cost: CostModel,
    pub notes: BTreeMap<&'static str, String>,
}

/// Idle-state facts read from sysfs that decide the file's idle states.
pub struct IdleInfo {
    pub driver: String,
    /// `guest_halt_poll_ns` of the haltpoll governor, when loaded.
    pub guest_halt_poll_ns: Option<u64>,
}

struct Ctx<'a> {
    r: &'a Results,
    base_name: &'a str,
    cost: CostModel,
    notes: BTreeMap<&'static str, String>,
}

impl Ctx<'_> {
    fn m(&self, id: &str) -> Option<f64> {
        self.r.median(id)
    }

    /// Set a field from a measurement (clamped at 0), or note why not.
    fn set(&mut self, field: &'static str, v: Option<f64>, how: String) {
        let Some(v) = v else {
            return self.keep(field, "its primitives were not measured here");
        };
        let v = v.max(0.0).round() as u64;
        if let Some(slot) = u64_field(&mut self.cost, field) {
            *slot = v;
        }
        self.notes.insert(field, how);
    }

    fn keep(&mut self, field: &'static str, why: &str) {
        self.notes
            .insert(field, format!("kept from {}: {why}", self.base_name));
    }
}

/// The u64 cost fields calibrate can set.
fn u64_field<'c>(c: &'c mut CostModel, field: &str) -> Option<&'c mut u64> {
    Some(match field {
        "context_switch_ns" => &mut c.context_switch_ns,
        "mm_switch_ns" => &mut c.mm_switch_ns,
        "syscall_ns" => &mut c.syscall_ns,
        "wakeup_local_ns" => &mut c.wakeup_local_ns,
        "remote_rq_lock_ns" => &mut c.remote_rq_lock_ns,
        "rq_lock_contention_ns" => &mut c.rq_lock_contention_ns,
        "ipi_send_ns" => &mut c.ipi_send_ns,
        "ipi_latency_ns" => &mut c.ipi_latency_ns,
        "cache_refill_smt_ns" => &mut c.cache_refill_smt_ns,
        "cache_refill_llc_ns" => &mut c.cache_refill_llc_ns,
        "cache_refill_socket_ns" => &mut c.cache_refill_socket_ns,
        "cache_refill_numa_ns" => &mut c.cache_refill_numa_ns,
        "pipe_op_ns" => &mut c.pipe_op_ns,
        "pipe_copy_ps_per_byte" => &mut c.pipe_copy_ps_per_byte,
        "socket_copy_ps_per_byte" => &mut c.socket_copy_ps_per_byte,
        "socket_skb_ns" => &mut c.socket_skb_ns,
        "fork_ns" => &mut c.fork_ns,
        "exit_ns" => &mut c.exit_ns,
        "tick_ns" => &mut c.tick_ns,
        "activate_ns" => &mut c.activate_ns,
        "hrtimer_irq_ns" => &mut c.hrtimer_irq_ns,
        "nohz_idle_exit_ns" => &mut c.nohz_idle_exit_ns,
        "pipe_wait_cycle_ns" => &mut c.pipe_wait_cycle_ns,
        "socket_wait_cycle_ns" => &mut c.socket_wait_cycle_ns,
        "switch_cache_warm_ns" => &mut c.switch_cache_warm_ns,
        "switch_cache_cold_ns" => &mut c.switch_cache_cold_ns,
        "tlb_asid_miss_ns" => &mut c.tlb_asid_miss_ns,
        "pipe_xcpu_lines" => &mut c.pipe_xcpu_lines,
        "socket_xcpu_lines" => &mut c.socket_xcpu_lines,
        "socket_lock_hold_ns" => &mut c.socket_lock_hold_ns,
        "pipe_mix_read_lines" => &mut c.pipe_mix_read_lines,
        "pipe_mix_write_lines" => &mut c.pipe_mix_write_lines,
        "socket_mix_read_lines" => &mut c.socket_mix_read_lines,
        "socket_mix_write_lines" => &mut c.socket_mix_write_lines,
        _ => return None,
    })
}

fn fmt(v: f64) -> String {
    format!("{v:.0}")
}

/// Derive a cost model from `r` over `base` (named `base_name`).
pub fn derive(r: &Results, base: &CostModel, base_name: &str, idle: &IdleInfo) -> Derived {
    let mut x = Ctx {
        r,
        base_name,
        cost: base.clone(),
        notes: BTreeMap::new(),
    };
    let clock = x.m("clock").unwrap_or(0.0);
    let syscall = x.m("getppid");
    x.set(
        "syscall_ns",
        syscall,
        format!("getppid() median {} ns", opt(syscall)),
    );
    let syscall = x.cost.syscall_ns as f64;
    let empty = x.m("futex_wake_empty").unwrap_or(0.0);
    let wake_local = x.m("futex_wake_local");
    let wl = wake_local.map(|w| w - clock - empty);
    x.set(
        "wakeup_local_ns",
        wl,
        format!(
            "futex_wake of a SCHED_BATCH waiter on the same CPU {} − clock {} − futex_wake without waiter {}",
            opt(wake_local), fmt(clock), fmt(empty)
        ),
    );
    let wl = x.cost.wakeup_local_ns as f64;
    x.set(
        "activate_ns",
        wake_local.map(|_| wl * 4.0 / 7.0),
        format!("4/7 of wakeup_local_ns {} (ttwu_do_activate's share of try_to_wake_up in function_graph profiles; not measurable from user space)", fmt(wl)),
    );
    derive_switches(&mut x, wake_local);
    let line = derive_lines(&mut x);
    derive_ipi(&mut x, clock, empty, line, syscall);
    derive_timer(&mut x, syscall);
    derive_ipc(&mut x, syscall);
    let read_lines = derive_xcpu(&mut x);
    derive_nohz(&mut x, read_lines);
    derive_idle(&mut x, idle);
    derive_wait_cycles(&mut x);
    derive_fork(&mut x, clock, syscall);
    derive_footprint(&mut x);
    let tick = x.m("tick_gap");
    x.set(
        "tick_ns",
        tick,
        format!(
            "median gap a busy loop sees at each timer interrupt {} ns",
            opt(tick)
        ),
    );
    for f in [
        "irq_entry_exit_ns",
        "sis_scan_per_cpu_ns",
        "group_level_ns",
        "smt_speed_pct",
    ] {
        x.keep(f, "not measurable from user space");
    }
    // The base is the host's model, which read it (machine::host).
    let page = "this kernel's PAGE_SIZE, sysconf(_SC_PAGESIZE)".to_string();
    x.notes.insert("page_size", page);
    Derived {
        cost: x.cost,
        notes: x.notes,
    }
}

/// The footprint costs from the token rings (bench::ring): a hop past
/// two other tasks against one past a single other; past seven address
/// spaces against six, both with caches already cold (TLB_NR_DYN_ASIDS).
fn derive_footprint(x: &mut Ctx) {
    let (t2, t3, t8) = (
        x.m("ring_thread_2"),
        x.m("ring_thread_3"),
        x.m("ring_thread_8"),
    );
    for (field, k, tk) in [
        ("switch_cache_warm_ns", 3, t3),
        ("switch_cache_cold_ns", 8, t8),
    ] {
        x.set(
            field,
            tk.zip(t2).map(|(a, b)| a - b),
            format!(
                "ring of {k} threads on one CPU {} − ring of 2 {} (ns per hop)",
                opt(tk),
                opt(t2)
            ),
        );
    }
    let (p6, p8) = (x.m("ring_process_6"), x.m("ring_process_8"));
    x.set(
        "tlb_asid_miss_ns",
        p8.zip(p6).map(|(a, b)| a - b),
        format!(
            "ring of 8 processes on one CPU {} − ring of 6 {} (ns per hop; {} dynamic ASIDs)",
            opt(p8),
            opt(p6),
            x.cost.tlb_dyn_asids
        ),
    );
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), fmt)
}

fn derive_switches(x: &mut Ctx, wake_local: Option<f64>) {
    let rt = x.m("pingpong_thread");
    let eagain = x.m("futex_wait_eagain");
    let cs = match (rt, wake_local, eagain) {
        (Some(rt), Some(w), Some(e)) => Some(rt / 2.0 - w - e),
        _ => None,
    };
    x.set(
        "context_switch_ns",
        cs,
        format!(
            "same-CPU futex round trip of two SCHED_BATCH threads {} / 2 − its futex_wake {} − futex_wait returning EAGAIN {}",
            opt(rt), opt(wake_local), opt(eagain)
        ),
    );
    let rp = x.m("pingpong_process");
    let mm = rt.zip(rp).map(|(t, p)| (p - t) / 2.0);
    x.set(
        "mm_switch_ns",
        mm,
        format!(
            "(process round trip {} − thread round trip {}) / 2",
            opt(rp),
            opt(rt)
        ),
    );
}

/// Cache lines by distance; returns the nearest measured line transfer.
fn derive_lines(x: &mut Ctx) -> Option<f64> {
    let fields = [
        "cache_refill_smt_ns",
        "cache_refill_llc_ns",
        "cache_refill_socket_ns",
        "cache_refill_numa_ns",
    ];
    let mut nearest: Option<(f64, &str)> = None;
    let mut prev = 0;
    for (d, field) in DISTANCES.iter().zip(fields) {
        match x.m(&format!("line_{d}")) {
            Some(ns) => {
                let v = refill_ns(ns.round() as u64) as f64;
                let how = format!("refill_ns(line transfer {d} {} ns)", fmt(ns));
                x.set(field, Some(v), how);
                nearest.get_or_insert((ns, d));
            }
            None if *d == "smt" => x.keep(field, "no SMT sibling to measure"),
            None => {
                // A distance this machine lacks is never charged; keep the order.
                if let Some(slot) = u64_field(&mut x.cost, field) {
                    *slot = prev;
                }
                let how = "no CPU at this distance here: never charged; as the nearer level";
                x.notes.insert(field, how.into());
            }
        }
        prev = u64_field(&mut x.cost, field).map_or(0, |v| *v);
    }
    let line = nearest.map(|(ns, _)| ns);
    let how = nearest.map_or(String::new(), |(ns, d)| {
        format!("2 × line transfer {d} {} ns (vm-2's rule)", fmt(ns))
    });
    x.set("remote_rq_lock_ns", line.map(|l| 2.0 * l), how.clone());
    x.set("rq_lock_contention_ns", line.map(|l| 2.0 * l), how);
    line
}

/// The nearest distance with wakeup measurements.
fn nearest(x: &Ctx, prefix: &str) -> Option<&'static str> {
    DISTANCES
        .iter()
        .copied()
        .find(|d| x.r.get(&format!("{prefix}_{d}")).is_some())
}

fn derive_ipi(x: &mut Ctx, clock: f64, empty: f64, line: Option<f64>, syscall: f64) {
    let wl = x.cost.wakeup_local_ns as f64;
    let act = x.cost.activate_ns as f64;
    let lock = x.cost.remote_rq_lock_ns as f64;
    let d_idle = nearest(x, "waker_idle");
    let d_busy = nearest(x, "waker_busy");
    let via_list = d_idle
        .and_then(|d| x.m(&format!("waker_idle_{d}")))
        .map(|w| w - clock - empty - (wl - act) - line.unwrap_or(0.0));
    let via_rq = d_busy
        .and_then(|d| x.m(&format!("waker_busy_{d}")))
        .map(|w| w - clock - empty - wl - lock);
    let send = match (via_list, via_rq) {
        (Some(a), Some(b)) => Some((a + b) / 2.0),
        (a, b) => a.or(b),
    };
    x.set(
        "ipi_send_ns",
        send,
        format!(
            "waker's futex_wake less its wakeup work: {} via the wakelist (idle target), {} via the remote rq (busy target); mean",
            opt(via_list), opt(via_rq)
        ),
    );
    let busy = d_busy.and_then(|d| x.m(&format!("wake_busy_target_{d}")));
    let irq = x.cost.irq_entry_exit_ns as f64;
    let cs = x.cost.context_switch_ns as f64;
    x.set(
        "ipi_latency_ns",
        busy.map(|b| b - irq - cs - syscall / 2.0),
        format!(
            "wakeup beside a SCHED_IDLE spinner, after the waker's call {} − irq entry/exit {} (kept) − context switch {} − syscall/2",
            opt(busy), fmt(irq), fmt(cs)
        ),
    );
}

fn derive_timer(x: &mut Ctx, syscall: f64) {
    let late = x.m("timer_wake_busy");
    let (wl, cs) = (
        x.cost.wakeup_local_ns as f64,
        x.cost.context_switch_ns as f64,
    );
    x.set(
        "hrtimer_irq_ns",
        late.map(|l| l - wl - cs - syscall / 2.0),
        format!(
            "timer wakeup beside a SCHED_IDLE spinner, lateness {} − wakeup_local {} − context switch {} − syscall/2",
            opt(late), fmt(wl), fmt(cs)
        ),
    );
}

/// The woken reader's own cost of a sleep (pipe/socket_wait_cycle_ns):
/// what a hop of a 2-thread SCHED_BATCH ring (a write that wakes, a read
/// that blocks, one switch) takes beyond the model's other costs of that
/// hop, which derive_ipc and derive_switches set first. Not the reader's
/// CPU time across a read that slept: with rq_clock_skip_update that also
/// holds the waker's work after its rq clock update, which the model
/// already spends as the waker's wakeup_local_ns (a pipe hop came out
/// 44 % slower than the ring measured beside it).
fn derive_wait_cycles(x: &mut Ctx) {
    let c = &x.cost;
    let (cs, wl) = (c.context_switch_ns as f64, c.wakeup_local_ns as f64);
    let one_byte = |ps: u64| c.syscall_ns as f64 + ps as f64 / 1000.0;
    let pipe_op = c.pipe_op_ns as f64 + one_byte(c.pipe_copy_ps_per_byte);
    let unix_op = c.socket_skb_ns as f64 / 2.0 + one_byte(c.socket_copy_ps_per_byte);
    for (ipc, op, field) in [
        (Ipc::Pipe, pipe_op, "pipe_wait_cycle_ns"),
        (Ipc::Unix, unix_op, "socket_wait_cycle_ns"),
    ] {
        let hop = x.m(&ring_id(ipc, false, 2));
        let ipc = ipc.name();
        x.set(
            field,
            hop.map(|h| (h - 2.0 * op - wl - cs).max(0.0)),
            format!(
                "ring of 2 threads on one CPU ({ipc}) {} ns per hop − 2 × {ipc} op of 1 B {} − wakeup_local {} − context switch {}, at least 0",
                opt(hop), fmt(op), fmt(wl), fmt(cs)
            ),
        );
    }
}

/// The cross-CPU stream costs (bench::xcpu): the pipe's and the socket's
/// own lines, and how long a sender holds the receiving socket. Returns
/// the ns of line transfers a 100-byte read that slept pays when woken from
/// the nearest other CPU (pipe and unix), for derive_nohz.
fn derive_xcpu(x: &mut Ctx) -> Option<[f64; 2]> {
    use crate::kernel::cacheline::data_lines;
    use crate::kernel::unix_sock::SKB_LINES;
    let d = DISTANCES.iter().copied().find(|d| {
        ["pipe", "unix"]
            .iter()
            .any(|i| x.r.get(&format!("{i}_xcpu_{d}_read")).is_some())
    });
    let line = d.and_then(|d| x.m(&format!("line_{d}")));
    let mut read_ns = [0.0; 2];
    let msg = [data_lines(100), SKB_LINES + data_lines(100)];
    for (k, (ipc, field)) in [("pipe", "pipe_xcpu_lines"), ("unix", "socket_xcpu_lines")]
        .into_iter()
        .enumerate()
    {
        let m = |s: &str| d.and_then(|d| x.m(&format!("{ipc}_xcpu_{d}_{s}")));
        let same = x.m(&format!("{ipc}_stream_100"));
        let total = match (m("read"), m("write"), same, line) {
            (Some(r), Some(w), Some(s), Some(l)) if l > 0.0 => Some((r + w - s) / l),
            _ => None,
        };
        let own = total.map(|t| (t - msg[k] as f64) / 2.0);
        x.set(
            field,
            own,
            format!(
                "({ipc} read {} + write {} with the writer on another CPU ({}) − same-CPU write+read {}) / line {} ns = {} lines a message, less the message's {}, halved",
                opt(m("read")), opt(m("write")), d.unwrap_or("-"), opt(same), opt(line), total.map_or("-".into(), |t| format!("{t:.1}")), msg[k]
            ),
        );
        let own = u64_field(&mut x.cost, field).map_or(0, |v| *v);
        read_ns[k] = ((own + msg[k]) as f64) * line.unwrap_or(0.0);
    }
    derive_socket_hold(x, d);
    derive_mix(x, d, line);
    line.map(|_| read_ns)
}

/// The mix lines (`{pipe,socket}_mix_{read,write}_lines`): writers taking
/// turns, one message each, against one writer (bench::xcpu_rotating), in
/// lines at the nearest distance. The turns' writers are the nearest CPUs
/// first, so on a machine with farther CPUs among them this is an upper
/// bound of the nearest distance's count.
fn derive_mix(x: &mut Ctx, d: Option<&str>, line: Option<f64>) {
    const FIELDS: [(&str, [(&str, &str); 2]); 2] = [
        (
            "pipe",
            [
                ("read", "pipe_mix_read_lines"),
                ("write", "pipe_mix_write_lines"),
            ],
        ),
        (
            "unix",
            [
                ("read", "socket_mix_read_lines"),
                ("write", "socket_mix_write_lines"),
            ],
        ),
    ];
    for (ipc, sides) in FIELDS {
        let most = (2..=1024)
            .rev()
            .find(|n| x.r.get(&format!("{ipc}_rotate_{n}_read")).is_some());
        for (side, name) in sides {
            let rot = most.and_then(|n| x.m(&format!("{ipc}_rotate_{n}_{side}")));
            let one = d.and_then(|d| x.m(&format!("{ipc}_xcpu_{d}_{side}")));
            let v = match (rot, one, line) {
                (Some(r), Some(o), Some(l)) if l > 0.0 => Some((r - o) / l),
                _ => None,
            };
            x.set(
                name,
                v,
                format!(
                    "{ipc} {side} with {} writers taking turns {} − with one writer {} ({}), / line {} ns",
                    most.map_or("-".into(), |n| n.to_string()),
                    opt(rot),
                    opt(one),
                    d.unwrap_or("-"),
                    opt(line)
                ),
            );
        }
    }
}

/// socket_lock_hold_ns: what each sender added to one socket adds to a
/// send, from the most writers measured against one (bench::xcpu).
fn derive_socket_hold(x: &mut Ctx, d: Option<&str>) {
    let one = d.and_then(|d| x.m(&format!("unix_xcpu_{d}_write")));
    let most = (2..=1024)
        .rev()
        .find_map(|n| Some((n, x.m(&format!("unix_writers_{n}_write"))?)));
    let hold = match (one, most) {
        (Some(w1), Some((n, wn))) => Some((wn - w1) / (n - 1) as f64),
        _ => None,
    };
    let Some(h) = hold else {
        return x.keep(
            "socket_lock_hold_ns",
            "no CPUs here for two writers into one socket",
        );
    };
    let (n, wn) = most.unwrap_or((0, 0.0));
    x.set(
        "socket_lock_hold_ns",
        Some(h),
        format!(
            "unix writes into one reader: (write with {n} writers {} − with 1 writer {}) / {} writers added",
            fmt(wn), opt(one), n - 1
        ),
    );
}

/// nohz_idle_exit_ns: the reader's CPU time across a read that slept,
/// woken from another CPU against from the same CPU, less the line
/// transfers that read pays (`read_lines`, pipe and unix, when measured).
/// derive_idle needs it.
fn derive_nohz(x: &mut Ctx, read_lines: Option<[f64; 2]>) {
    // Woken from another CPU the reader's CPU is idle: the wakee is charged
    // from its activation (rq_clock_skip_update: the idle task counts as
    // queued), through the IPI's exit, the tick restart and the switch.
    let (irq, act) = (x.cost.irq_entry_exit_ns as f64, x.cost.activate_ns as f64);
    let lines = read_lines.unwrap_or([0.0; 2]);
    let extra: Vec<(f64, f64)> = ["pipe", "unix"]
        .iter()
        .zip(lines)
        .filter_map(|(ipc, l)| {
            let d = nearest(x, &format!("{ipc}_cycle"))?;
            let e = x.m(&format!("{ipc}_cycle_{d}"))? - x.m(&format!("{ipc}_cycle_same"))?;
            Some((e, l))
        })
        .collect();
    let n = extra.len() as f64;
    let mean = (n > 0.0).then(|| extra.iter().map(|e| e.0).sum::<f64>() / n);
    let moved = if n > 0.0 {
        extra.iter().map(|e| e.1).sum::<f64>() / n
    } else {
        0.0
    };
    let lines_note = if read_lines.is_some() {
        format!(" − the read's line transfers {}", fmt(moved))
    } else {
        String::new()
    };
    x.set(
        "nohz_idle_exit_ns",
        mean.map(|e| e - irq - act - moved),
        format!(
            "read that slept, woken from another CPU − same CPU (mean of pipe and unix) {} − irq entry/exit {} − activate {}{lines_note}, at least 0",
            opt(mean), fmt(irq), fmt(act)
        ),
    );
}

fn derive_idle(x: &mut Ctx, idle: &IdleInfo) {
    let mut states = x.cost.idle_states.clone();
    let mut why = format!("sysfs cpuidle driver {:?}", idle.driver);
    if idle.driver == "haltpoll" && idle.guest_halt_poll_ns == Some(0) && states.len() > 1 {
        // haltpoll_select() returns the halt state while poll_limit_ns is 0,
        // and with guest_halt_poll_ns = 0 it never grows: POLL is never used.
        states.retain(|s| !s.polling);
        why += "; POLL dropped: the haltpoll governor never polls with guest_halt_poll_ns=0";
    }
    let d = nearest(x, "wake_idle_target");
    let idle_t = d.and_then(|d| x.m(&format!("wake_idle_target_{d}")));
    let long = d.and_then(|d| x.m(&format!("wake_idle_long_target_{d}")));
    let busy = nearest(x, "wake_busy_target").and_then(|d| x.m(&format!("wake_busy_target_{d}")));
    let act = x.cost.activate_ns as f64;
    if let (Some(i), Some(b), Some(deep)) =
        (idle_t, busy, states.iter_mut().rev().find(|s| !s.polling))
    {
        let nohz = x.cost.nohz_idle_exit_ns as f64;
        let exit = (i - b - act - nohz).max(0.0).round() as u64;
        deep.exit_latency_ns = exit;
        deep.target_residency_ns = deep.target_residency_ns.max(exit);
        why += &format!(
            "; {} exit = idle-target wakeup after 50 µs idle {} − busy-target {} − activate {} − nohz_idle_exit {} (after 1 ms idle: {} − busy); residency at least the exit",
            deep.name, fmt(i), fmt(b), fmt(act), fmt(nohz), opt(long)
        );
    } else {
        why += "; exit latencies from sysfs (idle wakeups not measured)";
    }
    let candidate = CostModel {
        idle_states: states,
        ..x.cost.clone()
    };
    if candidate.validate().is_ok() {
        x.cost = candidate;
    }
    x.notes.insert("idle_states", why);
}

/// Least-squares-free line through the streaming medians: slope from the
/// two largest sizes, intercept at the smallest.
fn line_fit(x: &Ctx, ipc: &str, sizes: &[usize]) -> Option<(f64, f64)> {
    let m = |s: usize| x.m(&format!("{ipc}_stream_{s}"));
    let (lo, a, b) = (sizes.first()?, sizes.get(sizes.len() - 2)?, sizes.last()?);
    let slope = (m(*b)? - m(*a)?) / (*b - *a) as f64;
    Some((m(*lo)? - slope * *lo as f64, slope))
}

fn derive_ipc(x: &mut Ctx, syscall: f64) {
    let sizes = super::STREAM_SIZES;
    let last = |i: &str| {
        format!(
            "{i} write+read that never sleeps: c + s·bytes with s from {} B and {} B, c at {} B",
            sizes[sizes.len() - 2],
            sizes[sizes.len() - 1],
            sizes[0]
        )
    };
    let p = line_fit(x, "pipe", &sizes);
    x.set(
        "pipe_op_ns",
        p.map(|(c, _)| c / 2.0 - syscall),
        format!(
            "{}: c/2 − syscall, c = {}",
            last("pipe"),
            opt(p.map(|p| p.0))
        ),
    );
    x.set(
        "pipe_copy_ps_per_byte",
        p.map(|(_, s)| s * 1000.0 / 2.0),
        format!(
            "{}: s/2, s = {} ps/B",
            last("pipe"),
            opt(p.map(|p| p.1 * 1000.0))
        ),
    );
    let u = line_fit(x, "unix", &sizes);
    x.set(
        "socket_skb_ns",
        u.map(|(c, _)| c - 2.0 * syscall),
        format!(
            "{}: c − 2·syscall, c = {}",
            last("AF_UNIX"),
            opt(u.map(|u| u.0))
        ),
    );
    x.set(
        "socket_copy_ps_per_byte",
        u.map(|(_, s)| s * 1000.0 / 2.0),
        format!(
            "{}: s/2, s = {} ps/B",
            last("AF_UNIX"),
            opt(u.map(|u| u.1 * 1000.0))
        ),
    );
}

fn derive_fork(x: &mut Ctx, clock: f64, syscall: f64) {
    let fork = x.m("fork");
    x.set(
        "fork_ns",
        fork.map(|f| f - clock),
        format!("parent's fork() of this process {} ns", opt(fork)),
    );
    let cycle = x.m("fork_exit_wait");
    let c = &x.cost;
    let switches = 2.0 * (c.context_switch_ns + c.mm_switch_ns) as f64 + c.wakeup_local_ns as f64;
    x.set(
        "exit_ns",
        cycle
            .zip(fork)
            .map(|(t, f)| t - f - switches - 2.0 * syscall),
        format!(
            "fork+_exit+waitpid {} − fork {} − 2 switches with mm − a local wakeup − 2 syscalls",
            opt(cycle),
            opt(fork)
        ),
    );
}

/// The idle state list a file keeps for a machine without cpuidle states.
pub fn describe_states(states: &[IdleState]) -> String {
    states
        .iter()
        .map(|s| {
            format!(
                "{} {}/{} ns",
                s.name, s.exit_latency_ns, s.target_residency_ns
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::cost::kvm_guest;

    fn results(pairs: &[(&str, f64)]) -> Results {
        let mut r = Results::default();
        for &(id, v) in pairs {
            r.add(id, id, "ns", vec![v]);
        }
        r
    }

    fn haltpoll(poll_ns: u64) -> IdleInfo {
        IdleInfo {
            driver: "haltpoll".into(),
            guest_halt_poll_ns: Some(poll_ns),
        }
    }

    #[test]
    fn formulas_and_kept_fields() {
        let r = results(&[
            ("clock", 20.0),
            ("getppid", 100.0),
            ("futex_wake_empty", 150.0),
            ("futex_wait_eagain", 200.0),
            ("futex_wake_local", 470.0),
            ("pingpong_thread", 3000.0),
            ("pingpong_process", 3400.0),
            ("line_llc", 80.0),
            ("pipe_stream_1", 500.0),
            ("pipe_stream_4096", 1000.0),
            ("pipe_stream_32768", 1000.0 + 28672.0 * 0.1),
            ("fork", 40_020.0),
            ("fork_exit_wait", 100_000.0),
        ]);
        let base = kvm_guest();
        let d = derive(&r, &base, "vm-2", &haltpoll(0));
        let c = &d.cost;
        assert_eq!(c.syscall_ns, 100);
        assert_eq!(c.wakeup_local_ns, 470 - 20 - 150);
        assert_eq!(c.context_switch_ns, 1500 - 470 - 200);
        assert_eq!(c.mm_switch_ns, 200);
        assert_eq!(c.remote_rq_lock_ns, 160);
        assert_eq!(c.cache_refill_llc_ns, refill_ns(80));
        assert_eq!(
            c.cache_refill_numa_ns,
            refill_ns(80),
            "absent level as the nearer one"
        );
        assert_eq!(c.cache_refill_smt_ns, base.cache_refill_smt_ns);
        assert_eq!(c.pipe_copy_ps_per_byte, 50);
        assert_eq!(c.pipe_op_ns, 500 / 2 - 100);
        assert_eq!(c.fork_ns, 40_000);
        let exit = 100_000 - 40_020 - 2 * (830 + 200) - 300 - 200;
        assert_eq!(c.exit_ns, exit);
        // not measured: the base's, and the note says so
        assert_eq!(c.socket_skb_ns, base.socket_skb_ns);
        assert_eq!(c.ipi_latency_ns, base.ipi_latency_ns);
        assert!(d.notes["socket_skb_ns"].contains("not measured"));
        assert!(d.notes["irq_entry_exit_ns"].contains("kept from vm-2"));
        assert!(c.validate().is_ok());
    }

    #[test]
    fn slept_reads_and_timers_set_wait_cycles_nohz_and_hrtimer() {
        let base = kvm_guest();
        let r = results(&[
            ("pipe_cycle_same", 1300.0),
            ("pipe_cycle_llc", 9300.0),
            ("unix_cycle_same", 1700.0),
            ("unix_cycle_llc", 10700.0),
            ("timer_wake_busy", 15000.0),
            ("ring_thread_2", 5000.0),
            ("ring_unix_thread_2", 100.0),
        ]);
        let d = derive(&r, &base, "vm-2", &haltpoll(0));
        let (c, cs) = (&d.cost, base.context_switch_ns);
        // A hop less two 1-byte ops, the wakeup and the switch.
        let pipe_op = base.syscall_ns + base.pipe_op_ns;
        let rest = 2 * pipe_op + base.wakeup_local_ns + cs;
        assert_eq!(c.pipe_wait_cycle_ns, 5000 - rest);
        assert_eq!(c.socket_wait_cycle_ns, 0, "a hop shorter than its parts");
        // cross − same: 8000 (pipe) and 9000 (unix), mean 8500
        let nohz = 8500 - base.irq_entry_exit_ns - base.activate_ns;
        assert_eq!(c.nohz_idle_exit_ns, nohz);
        let hr = 15000 - base.wakeup_local_ns - cs - base.syscall_ns / 2;
        assert_eq!(c.hrtimer_irq_ns, hr);
    }

    #[test]
    fn wakeups_set_ipi_and_idle_exit() {
        let mut base = kvm_guest();
        base.idle_states = vec![IdleState::poll(), IdleState::hw("haltpoll idle", 1, 1)];
        base.nohz_idle_exit_ns = 500;
        let r = results(&[
            ("wake_busy_target_llc", 6000.0),
            ("waker_busy_llc", 5000.0),
            ("wake_idle_target_llc", 8000.0),
            ("waker_idle_llc", 5000.0),
        ]);
        let d = derive(&r, &base, "vm-2", &haltpoll(0));
        let c = &d.cost;
        let expect = 6000 - base.irq_entry_exit_ns - base.context_switch_ns - base.syscall_ns / 2;
        assert_eq!(c.ipi_latency_ns, expect);
        assert_eq!(c.idle_states.len(), 1, "POLL dropped: haltpoll never polls");
        // The idle-target extra less activate and the (kept) tick restart.
        assert_eq!(
            c.idle_states[0].exit_latency_ns,
            2000 - base.activate_ns - 500
        );
        // With guest polling on, POLL stays.
        let d = derive(&r, &base, "vm-2", &haltpoll(200_000));
        assert!(d.cost.idle_states[0].polling);
        assert!(d.cost.ipi_send_ns > 0);
        // A tick restart measured in the same run is the one taken out.
        let both = results(&[
            ("wake_busy_target_llc", 6000.0),
            ("wake_idle_target_llc", 20000.0),
            ("pipe_cycle_same", 1000.0),
            ("pipe_cycle_llc", 9000.0),
        ]);
        let d = derive(&both, &base, "vm-2", &haltpoll(0));
        let nohz = 8000 - base.irq_entry_exit_ns - base.activate_ns;
        assert_eq!(d.cost.nohz_idle_exit_ns, nohz);
        let exit = 14000 - base.activate_ns - nohz;
        assert_eq!(d.cost.idle_states[0].exit_latency_ns, exit);
    }

    #[test]
    fn cross_cpu_streams_set_line_counts_and_the_socket_hold() {
        // emr-16's medians (scenarios/machines/emr-16.toml).
        let r = results(&[
            ("line_llc", 71.0),
            ("pipe_stream_100", 582.0),
            ("unix_stream_100", 1142.0),
            ("pipe_xcpu_llc_read", 639.0),
            ("pipe_xcpu_llc_write", 616.0),
            ("unix_xcpu_llc_read", 1045.0),
            ("unix_xcpu_llc_write", 910.0),
            ("unix_writers_4_write", 2006.0),
            ("unix_writers_15_write", 4168.0),
        ]);
        let d = derive(&r, &kvm_guest(), "vm-2", &haltpoll(0));
        // (639 + 616 − 582) / 71 = 9.48 lines, less 2 of data, halved: 3.7.
        assert_eq!(d.cost.pipe_xcpu_lines, 4);
        // (1045 + 910 − 1142) / 71 = 11.45, less 5 + 2 for the skb, halved: 2.2.
        assert_eq!(d.cost.socket_xcpu_lines, 2);
        // The most writers measured: (4168 − 910) / 14.
        assert_eq!(d.cost.socket_lock_hold_ns, 233);
        assert!(d.notes["socket_lock_hold_ns"].contains("15 writers"));
    }

    #[test]
    fn writers_taking_turns_set_the_mix_lines_from_the_most_writers() {
        let r = results(&[
            ("line_llc", 100.0),
            ("unix_xcpu_llc_read", 1000.0),
            ("unix_xcpu_llc_write", 900.0),
            ("unix_rotate_2_read", 5000.0),
            ("unix_rotate_15_read", 1320.0),
            ("unix_rotate_15_write", 1060.0),
            ("pipe_xcpu_llc_read", 600.0),
            ("pipe_xcpu_llc_write", 600.0),
            ("pipe_rotate_15_read", 580.0),
            ("pipe_rotate_15_write", 650.0),
        ]);
        let d = derive(&r, &kvm_guest(), "vm-2", &haltpoll(0));
        // (1320 − 1000) / 100 and (1060 − 900) / 100, rounded.
        assert_eq!(d.cost.socket_mix_read_lines, 3);
        assert_eq!(d.cost.socket_mix_write_lines, 2);
        assert!(d.notes["socket_mix_read_lines"].contains("15 writers"));
        // Cheaper than one writer: none, not negative.
        assert_eq!(d.cost.pipe_mix_read_lines, 0);
        assert_eq!(d.cost.pipe_mix_write_lines, 1);
    }

    #[test]
    fn without_other_writers_the_socket_hold_is_kept() {
        let r = results(&[
            ("line_llc", 57.0),
            ("unix_stream_100", 700.0),
            ("unix_xcpu_llc_read", 700.0),
            ("unix_xcpu_llc_write", 600.0),
        ]);
        let d = derive(&r, &kvm_guest(), "vm-2", &haltpoll(0));
        assert_eq!(d.cost.socket_lock_hold_ns, kvm_guest().socket_lock_hold_ns);
        assert!(d.notes["socket_lock_hold_ns"].starts_with("kept from vm-2"));
        assert!(d.notes["pipe_xcpu_lines"].starts_with("kept from vm-2"));
        assert_eq!(d.cost.socket_mix_read_lines, 0);
        assert!(d.notes["socket_mix_read_lines"].starts_with("kept from vm-2"));
    }
}
