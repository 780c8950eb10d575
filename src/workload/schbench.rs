//! schbench (Chris Mason): message threads waking workers through futexes,
//! reporting wakeup latency percentiles.
//!
//! `schbench` is the current version: a worker queues itself on its message
//! thread's list, posts the message thread and waits; once woken (wakeup
//! latency), it sleeps `s` µs, takes its CPU's spinlock, does `n` naive
//! matrix multiplies over its footprint, unlocks (request latency). The
//! message thread wakes every queued worker with one timestamp.
//! `schbench-old` is the 2016–2021 version the seed-000 numbers come from:
//! workers spin `c` µs then post and wait; the message thread, once posted,
//! sleeps `s` µs plus up to a quarter more, then wakes its queue. Its
//! defaults are those of the version before October 2020; the one that
//! stood from then until the April 2023 rewrite (masoncl/schbench at
//! 2eef447, the last commit before 91ea787 "get rid of the usec_spin based
//! think time") also has the message thread spin `C` (30 ms, which its -C
//! cannot change: parse_options assigns message_cputime to itself) before
//! its sleep, and main() zeroes the statistics once after `w` (5 s) of
//! warmup; give `C=30ms,w=5s` for that one.

use super::params::Params;
use super::program::{Dist, Op};
use super::{BenchResult, Builder, TaskSpec, MAX_TASKS};
use crate::kernel::shm::PlatHist;
use crate::kernel::task::Pid;
use crate::kernel::Kernel;
use serde_json::{json, Map, Value};
use std::rc::Rc;

/// Stamp slots (see Shm::stamps).
const WAKE_TIME: usize = 0;
const WORK_START: usize = 1;

/// Inner-loop cost of the naive u64 matrix multiply, in ps: an estimate of
/// ~2 cycles per iteration at ~3 GHz for an L2-resident footprint.
const MATRIX_PS_PER_ITER: u64 = 700;

#[derive(Clone, Debug)]
pub struct Schbench {
    pub old: bool,
    /// -m message threads
    pub m: u64,
    /// -t workers per message thread (0: ceil(ncpus / m))
    pub t: u64,
    /// -r runtime (ns)
    pub r: u64,
    /// -s sleep per request (ns); old: the message thread's sleep
    pub s: u64,
    /// -c worker spin (old only, ns)
    pub c: u64,
    /// -C the message thread's spin once posted, before its sleep (old
    /// only, ns; 0 before October 2020)
    pub msg_c: u64,
    /// -w warmup: samples before it are dropped (old only, ns; 0: none)
    pub warmup: u64,
    /// -F footprint KiB and -n matrix multiplies per request (current)
    pub footprint_kb: u64,
    pub n: u64,
    /// the per-CPU lock (current; -L turns it off)
    pub lock: bool,
    /// -R requests per second over all message threads (0: off)
    pub rps: u64,
}

/// Per-instance shared state indices, filled in by build.
#[derive(Clone, Copy, Debug, Default)]
struct Ids {
    wakeup_hist: usize,
    request_hist: usize,
}

impl Schbench {
    pub fn parse(p: &Params, old: bool) -> Result<Self, String> {
        let us = |key: &str, default: &str| -> Result<u64, String> {
            match p.dist(key, default)? {
                Dist::Fixed(v) => Ok(v),
                _ => Err(format!(
                    "workload `{}`: parameter `{key}` must be a single duration",
                    p.kind
                )),
            }
        };
        let (m_def, t_def, s_def) = if old {
            (2, 16, "30ms")
        } else {
            (1, 0, "100us")
        };
        let t = if p.values.contains_key("t") {
            p.count_max("t", 1, MAX_TASKS)?
        } else {
            t_def
        };
        let m = p.count_max("m", m_def, MAX_TASKS)?;
        // m message threads and t workers each (t = 0: ncpus/m in all).
        if m.saturating_mul(t + 1) > MAX_TASKS {
            return Err(format!(
                "workload `{}`: parameters `m` × (`t` + 1) = {} tasks is above the limit of {MAX_TASKS}",
                p.kind,
                m.saturating_mul(t + 1)
            ));
        }
        Ok(Schbench {
            old,
            m,
            t,
            r: us("r", "30s")?,
            s: us("s", s_def)?,
            c: if old { us("c", "30ms")? } else { 0 },
            msg_c: if old { p.duration("C", "0")? } else { 0 },
            warmup: if old { p.duration("w", "0")? } else { 0 },
            footprint_kb: if old { 0 } else { p.count("F", 256)? },
            n: if old {
                0
            } else {
                p.int("n", 5, 0, 1_000_000)? as u64
            },
            lock: if old { false } else { p.flag("lock", true)? },
            rps: if old {
                0
            } else {
                p.int("R", 0, 0, 100_000_000)? as u64
            },
        })
    }

    pub fn name(&self) -> &'static str {
        if self.old {
            "schbench-old"
        } else {
            "schbench"
        }
    }

    fn workers_per_thread(&self, ncpus: usize) -> u64 {
        match self.t {
            0 => (ncpus as u64).div_ceil(self.m),
            t => t,
        }
    }

    /// The matrix work of one request: n multiplies of msize³ iterations,
    /// msize = sqrt(F·1024 / 3 / 8) (three u64 matrices in the footprint).
    fn request_work_ns(&self) -> u64 {
        let msize = ((self.footprint_kb * 1024 / 3 / 8) as f64).sqrt() as u64;
        self.n * msize.pow(3) * MATRIX_PS_PER_ITER / 1000
    }

    pub fn build(&self, k: &mut Kernel, b: &mut Builder) {
        let ids = Ids {
            wakeup_hist: k.shm.new_hist(),
            request_hist: k.shm.new_hist(),
        };
        k.shm.hists[ids.wakeup_hist].from_ns = k.now + self.warmup;
        let lockset = k.shm.cpu_locks.len();
        k.shm.cpu_locks.push(vec![None; k.machine.nr_cpus()]);
        let workers = self.workers_per_thread(k.machine.nr_cpus());
        let comm = self.name();
        let spec = |ops: Vec<Op>, leader: Option<Pid>| TaskSpec {
            comm,
            group_of: leader,
            nice: 0,
            allowed: None,
            ops: Rc::from(ops),
        };
        let mut leader = None;
        for _ in 0..self.m {
            let list = k.shm.new_list();
            let mfutex = k.futex_new(0);
            let msg = b.task(k, spec(self.message_ops(list, mfutex), leader));
            let leader_pid = *leader.get_or_insert(msg);
            b.launch(k, msg);
            for _ in 0..workers {
                let own = k.futex_new(0);
                let ops = self.worker_ops(list, mfutex, own, ids, lockset);
                let w = b.task(k, spec(ops, Some(leader_pid)));
                k.shm.set_futex(w, own);
                k.shm.members[list].push(w);
                b.launch(k, w);
            }
        }
    }

    /// run_msg_thread, or run_rps_thread with -R: each second, queue this
    /// thread's share of requests, then sleep out the second.
    fn message_ops(&self, list: usize, own: usize) -> Vec<Op> {
        if self.rps > 0 {
            let count = (self.rps / self.m).max(1) as u32;
            return vec![
                Op::Loop { count: 0 },
                Op::Stamp { slot: WORK_START },
                Op::RpsBurst { list, count },
                Op::SleepUntil {
                    slot: WORK_START,
                    after: crate::engine::NSEC_PER_SEC,
                },
                Op::EndLoop,
            ];
        }
        let mut ops = vec![
            Op::Loop { count: 0 },
            Op::FutexSet { futex: own, val: 0 },
            Op::WakeList { list },
            Op::FutexWait { futex: own, val: 0 },
        ];
        if self.old {
            // usec_spin(message_cputime), then
            // usleep(sleeptime + rand() % (sleeptime / 4))
            if self.msg_c > 0 {
                ops.push(Op::Run(Dist::Fixed(self.msg_c)));
            }
            ops.push(Op::Sleep(Dist::Uniform(self.s, self.s + self.s / 4)));
        }
        ops.push(Op::EndLoop);
        ops
    }

    /// worker_thread: msg_and_wait (or, with -R, take a queued request),
    /// then the request: sleep, matrix work under the CPU's lock.
    fn worker_ops(
        &self,
        list: usize,
        mfutex: usize,
        own: usize,
        ids: Ids,
        lockset: usize,
    ) -> Vec<Op> {
        let mut ops = vec![Op::Loop { count: 0 }];
        if self.old {
            ops.push(Op::Run(Dist::Fixed(self.c)));
        }
        if self.rps > 0 {
            // TakeRequest sets stamp 1 to the request's queue time, so the
            // request latency includes the time it sat queued.
            ops.push(Op::TakeRequest {
                own,
                wake_hist: ids.wakeup_hist,
            });
        } else {
            ops.extend([
                Op::FutexSet { futex: own, val: 0 },
                Op::Enlist { list },
                Op::Post { futex: mfutex },
                Op::FutexWait { futex: own, val: 0 },
                Op::Latency {
                    slot: WAKE_TIME,
                    hist: ids.wakeup_hist,
                },
            ]);
            if !self.old {
                ops.push(Op::Stamp { slot: WORK_START });
            }
        }
        if !self.old {
            ops.push(Op::Sleep(Dist::Fixed(self.s)));
            if self.lock {
                ops.push(Op::CpuLock { set: lockset });
            }
            ops.push(Op::Run(Dist::Fixed(self.request_work_ns().max(1))));
            if self.lock {
                ops.push(Op::CpuUnlock { set: lockset });
            }
            ops.extend([
                Op::Latency {
                    slot: WORK_START,
                    hist: ids.request_hist,
                },
                Op::Count,
            ]);
        }
        ops.push(Op::EndLoop);
        ops
    }

    pub fn report(&self, k: &Kernel, tasks: &[Pid]) -> BenchResult {
        let (w, r) = hists_of(k, tasks);
        let (wake, req) = (&k.shm.hists[w], &k.shm.hists[r]);
        let secs = (k.now as f64 / 1e9).round() as u64;
        let mut lines = Vec::new();
        let mut fields = Map::new();
        fields.insert("wakeup_latency_us".into(), pct_json(wake));
        if self.old {
            lines.push("Latency percentiles (usec)".to_string());
            for (p, v, _) in wake.percentiles(&[50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9]) {
                let star = if p == 99.0 { "*" } else { "" };
                lines.push(format!("\t{star}{p:.4}th: {v}"));
            }
            lines.push(format!("\tmin={}, max={}", min0(wake), wake.max));
        } else {
            lat_table(&mut lines, "Wakeup", wake, secs);
            lat_table(&mut lines, "Request", req, secs);
            let loops: u64 = tasks.iter().map(|&p| k.tasks[p].prog.count).sum();
            let rps = loops as f64 / (k.now as f64 / 1e9).max(1e-9);
            lines.push(format!("average rps: {rps:.2}"));
            fields.insert("request_latency_us".into(), pct_json(req));
            fields.insert("rps".into(), json!(rps));
        }
        BenchResult { lines, fields }
    }
}

/// The histograms a worker of this instance records into, read back from
/// its program: (wakeup, request).
fn hists_of(k: &Kernel, tasks: &[Pid]) -> (usize, usize) {
    let mut found = (0, 0);
    for op in tasks.iter().flat_map(|&p| k.tasks[p].prog.ops.iter()) {
        match *op {
            Op::Latency {
                slot: WAKE_TIME,
                hist,
            }
            | Op::TakeRequest {
                wake_hist: hist, ..
            } => found.0 = hist,
            Op::Latency {
                slot: WORK_START,
                hist,
            } => found.1 = hist,
            _ => {}
        }
    }
    found
}

fn min0(h: &PlatHist) -> u64 {
    if h.nr == 0 {
        0
    } else {
        h.min
    }
}

/// The percentiles of the JSON: those today's schbench prints (50, 90, 99,
/// 99.9) and those the older one printed too (75, 95, 99.5), which seed 000
/// and seed 001 publish.
fn pct_json(h: &PlatHist) -> Value {
    json!({
        "p50": h.pct(50.0),
        "p75": h.pct(75.0),
        "p90": h.pct(90.0),
        "p95": h.pct(95.0),
        "p99": h.pct(99.0),
        "p99_5": h.pct(99.5),
        "p99_9": h.pct(99.9),
        "min": min0(h),
        "max": h.max,
        "samples": h.nr,
    })
}

/// show_latencies: schbench's percentile table.
fn lat_table(lines: &mut Vec<String>, what: &str, h: &PlatHist, secs: u64) {
    lines.push(format!(
        "{what} Latencies percentiles (usec) runtime {secs} (s) ({} total samples)",
        h.nr
    ));
    for (p, v, n) in h.percentiles(&[50.0, 90.0, 99.0, 99.9]) {
        let star = if p == 99.0 { "* " } else { "  " };
        lines.push(format!("\t{star}{p:.1}th: {v:<10} ({n} samples)"));
    }
    lines.push(format!("\t  min={}, max={}", min0(h), h.max));
}
