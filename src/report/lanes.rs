//! The HTML report's per-task lanes: each task's runnable waits beside its
//! running slices, who woke it (the page draws waker → wakee arrows), and
//! the decision records behind them, in `trace::decision`'s fields and
//! names: the pick that chose a slice, the resched request that preempted
//! it, the placement of the wakeup that began a wait. Kept for every task
//! during the run; the page gets the tasks with most runnable time up to
//! a budget of records (a 100-CPU run's page stays a few MB), and the
//! tasks of the latency tail, whose longest waits the CDF links to.

use super::html::{Slice, MAX_SLICES};
use crate::engine::Time;
use crate::kernel::task::Pid;
use crate::kernel::tracepoint::TraceEvent;
use crate::kernel::Kernel;
use crate::trace::phase::{changes, run_end, Phase, Phases, RunEnd};
use crate::trace::{decision, Arg};
use serde_json::{json, Value};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Slices and waits the page's lanes hold at most, over all their tasks.
const LANE_RECORDS: usize = 30_000;
/// The longest wakeup latencies kept: the CDF's tail.
const TAIL: usize = 20;

/// How a slice ended; a preemption with its resched record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Still running at the end of the run or the window.
    Open,
    Ran(RunEnd, Option<u32>),
}

/// How a runnable wait began.
#[derive(Clone, Copy, Debug)]
enum Began {
    /// A wakeup: the waker (None: an interrupt) or for a new task the
    /// parent, when (sched_waking or the fork), its placement record.
    Woken {
        waker: Option<Pid>,
        at: Time,
        new: bool,
        place: Option<u32>,
    },
    /// Switched out still runnable: preempted (with the resched record)
    /// or yielded.
    Out(RunEnd, Option<u32>),
}

/// A wakeup seen (sched_waking, or a fork) whose sched_wakeup is to come.
#[derive(Clone, Copy)]
struct Wake {
    waker: Option<Pid>,
    at: Time,
    new: bool,
    place: Option<TraceEvent>,
}

struct Wait {
    p: Pid,
    cpu: usize,
    start: Time,
    end: Time,
    began: Began,
}

pub struct Lanes {
    window: (u64, u64),
    phases: Phases,
    /// Per task: its runnable time inside the window (kept or not).
    waited: Vec<u64>,
    /// Per task: the wakeup to come, and the wait under way (CPU, how).
    wake: Vec<Option<Wake>>,
    open: Vec<Option<(usize, Began)>>,
    /// Per CPU: the last pick and resched records, not yet used.
    pick: Vec<Option<TraceEvent>>,
    resched: Vec<Option<TraceEvent>>,
    /// The decision records slices and waits point to.
    recs: Vec<TraceEvent>,
    waits: Vec<Wait>,
    cut_at: Option<Time>,
    /// (latency, sched_waking time, task, CPU) of the longest latencies.
    tail: BinaryHeap<Reverse<(u64, Time, u32, u32)>>,
}

impl Lanes {
    pub fn new(window: (u64, u64), ncpus: usize) -> Self {
        Lanes {
            window,
            phases: Phases::default(),
            waited: Vec::new(),
            wake: Vec::new(),
            open: Vec::new(),
            pick: vec![None; ncpus],
            resched: vec![None; ncpus],
            recs: Vec::new(),
            waits: Vec::new(),
            cut_at: None,
            tail: BinaryHeap::new(),
        }
    }

    fn grow(&mut self, n: usize) {
        if self.waited.len() < n {
            self.waited.resize(n, 0);
            self.wake.resize(n, None);
            self.open.resize(n, None);
        }
    }

    /// Keep a record for a slice or wait to point to; past the cut none
    /// will.
    fn keep(&mut self, ev: Option<TraceEvent>) -> Option<u32> {
        let ev = ev.filter(|_| self.cut_at.is_none())?;
        self.recs.push(ev);
        Some(self.recs.len() as u32 - 1)
    }

    /// Every event but sched_switch (`switch`).
    pub fn event(&mut self, k: &Kernel, ev: &TraceEvent) {
        self.grow(k.tasks.len());
        let wake = |waker, new| Wake {
            waker,
            at: k.now,
            new,
            place: None,
        };
        match *ev {
            TraceEvent::Waking { p, waker, .. } => self.wake[p] = Some(wake(waker, false)),
            TraceEvent::Fork { parent, child, .. } => {
                self.wake[child] = Some(wake(Some(parent), true))
            }
            TraceEvent::Place { p, .. } => {
                if let Some(w) = &mut self.wake[p] {
                    w.place = Some(*ev);
                }
            }
            TraceEvent::Pick { cpu, .. } => self.pick[cpu] = Some(*ev),
            TraceEvent::Resched { cpu, .. } => self.resched[cpu] = Some(*ev),
            TraceEvent::Wakeup { p, target, .. } | TraceEvent::WakeupNew { p, target, .. } => {
                // No sched_waking or fork seen before it (a task the
                // workload created): woken by no task.
                let new = matches!(ev, TraceEvent::WakeupNew { .. });
                let w = self.wake[p].take().unwrap_or(wake(None, new));
                let began = Began::Woken {
                    waker: w.waker,
                    at: w.at,
                    new: w.new,
                    place: self.keep(w.place),
                };
                self.enter(k, p, Phase::Runnable, (target, began));
            }
            _ => {}
        }
    }

    /// A sched_switch on `cpu`: how prev's slice ended, and the pick
    /// record of next's (the CPU's last pick, if it picked next).
    pub fn switch(&mut self, k: &Kernel, ev: &TraceEvent) -> (End, Option<u32>) {
        self.grow(k.tasks.len());
        let TraceEvent::Switch {
            cpu,
            prev,
            prev_state,
            next,
            preempt,
        } = *ev
        else {
            return (End::Open, None);
        };
        let resched = self.resched[cpu].take();
        let end = prev.map(|p| run_end(k, p, prev_state, preempt));
        let rec = match end {
            Some(RunEnd::Preempted) => self.keep(resched),
            _ => None,
        };
        let pick = self.pick[cpu].take().filter(|e| picked(e) == next);
        let pick = self.keep(pick);
        for (p, to) in changes(ev).into_iter().flatten() {
            let out = Began::Out(end.unwrap_or(RunEnd::Yielded), rec);
            self.enter(k, p, to, (cpu, out));
        }
        (end.map_or(End::Open, |e| End::Ran(e, rec)), pick)
    }

    /// `p` enters phase `to`; `start` is where and how a wait it begins
    /// began.
    fn enter(&mut self, k: &Kernel, p: Pid, to: Phase, start: (usize, Began)) {
        let busy = matches!(self.phases.get(p), Phase::Running | Phase::Runnable);
        if let Some(since) = self.phases.set(p, to, k.now) {
            self.close(p, since, k.now);
        }
        if to == Phase::Runnable && !busy {
            self.open[p] = Some(start);
        }
    }

    /// `p`'s wait from `since` ends at `now`: its part inside the window.
    fn close(&mut self, p: Pid, since: Time, now: Time) {
        let Some((cpu, began)) = self.open[p].take() else {
            return;
        };
        let (start, end) = (since.max(self.window.0), now.min(self.window.1));
        if start >= end {
            return;
        }
        self.waited[p] += end - start;
        if self.cut_at.is_some() || self.waits.len() >= MAX_SLICES {
            self.stop(start);
            return;
        }
        self.waits.push(Wait {
            p,
            cpu,
            start,
            end,
            began,
        });
    }

    /// Keep no more waits or records from `at` on (the report keeps no
    /// more slices); the runnable time still counts.
    pub fn stop(&mut self, at: Time) {
        self.cut_at.get_or_insert(at);
    }

    /// A wakeup latency sample (sched_waking at `from` to running at
    /// `now` on `cpu`), for the tail.
    pub fn latency(&mut self, p: Pid, cpu: usize, from: Time, now: Time) {
        self.tail
            .push(Reverse((now - from, from, p as u32, cpu as u32)));
        if self.tail.len() > TAIL {
            self.tail.pop();
        }
    }

    /// The page's lanes: `slices` are the report's, in the page's order.
    pub fn to_json(&self, k: &Kernel, slices: &[Slice]) -> Value {
        let lanes = self.lane_tasks(slices);
        let mut on = vec![false; k.tasks.len()];
        lanes.iter().for_each(|&p| on[p] = true);
        let mut ids = Ids::new(self.recs.len());
        let runs = runs_flat(slices, &on, &mut ids);
        let waits = self.waits_flat(&on, &mut ids);
        let groups: Vec<&str> = k.groups.tgs.iter().map(|g| g.path.as_str()).collect();
        let task = |p: Pid| json!([p, self.waited[p], k.tasks[p].tg, k.tasks[p].workload]);
        json!({
            "tasks": lanes.iter().map(|&p| task(p)).collect::<Vec<_>>(),
            "of": self.waited.iter().filter(|&&w| w > 0).count(),
            "cgroups": groups,
            "runs": runs,
            "waits": waits,
            "decisions": ids.to_json(k, &self.recs),
            "cut_at": self.cut_at,
            "budget": LANE_RECORDS,
            "tail": self.tail_longest_first(),
        })
    }

    /// The tasks of the tail and their wakers, then those that waited
    /// most, while the budget of records lasts; most waited first.
    fn lane_tasks(&self, slices: &[Slice]) -> Vec<Pid> {
        let mut cost = vec![0usize; self.waited.len()];
        slices.iter().for_each(|s| cost[s.p as usize] += 1);
        self.waits.iter().for_each(|w| cost[w.p] += 1);
        let must = self.tail_tasks();
        // A tail task has a lane even if its wait took no time (woken and
        // run at the same ns): the page opens it from the tail.
        let mut order: Vec<Pid> = (0..cost.len())
            .filter(|&p| self.waited[p] > 0 || must.contains(&p))
            .collect();
        order.sort_by_key(|&p| (Reverse(self.waited[p]), p));
        let mut on = vec![false; cost.len()];
        let mut budget = LANE_RECORDS;
        for p in must.iter().chain(&order).copied() {
            if on[p] {
                continue;
            }
            if !must.contains(&p) && cost[p] > budget {
                break;
            }
            budget = budget.saturating_sub(cost[p]);
            on[p] = true;
        }
        order.retain(|&p| on[p]);
        order
    }

    /// The tail's tasks and the wakers of their tail waits.
    fn tail_tasks(&self) -> Vec<Pid> {
        let mut v = Vec::new();
        for &Reverse((lat, from, p, _)) in &self.tail {
            v.push(p as Pid);
            let end = from + lat;
            let w = self.waits.iter().find(|w| w.p == p as Pid && w.end == end);
            if let Some(Began::Woken { waker: Some(q), .. }) = w.map(|w| w.began) {
                v.push(q);
            }
        }
        v
    }

    fn tail_longest_first(&self) -> Vec<[u64; 4]> {
        let mut v: Vec<_> = self.tail.iter().map(|r| r.0).collect();
        v.sort_by_key(|x| Reverse(*x));
        v.iter()
            .map(|&(lat, from, p, cpu)| [p as u64, from, lat, cpu as u64])
            .collect()
    }

    /// The lane tasks' waits by start, as one flat array of (task, start
    /// − the previous start, length, CPU, how, waker, lead, record): how
    /// is 0 woken, 1 a new task, 2 preempted, 3 yielded; waker the task's
    /// index + 1 (0: an interrupt); lead the time from sched_waking (or
    /// the fork) to the wait's start; record the decision record + 1.
    fn waits_flat(&self, on: &[bool], ids: &mut Ids) -> Vec<i64> {
        let mut w: Vec<&Wait> = self.waits.iter().filter(|w| on[w.p]).collect();
        w.sort_by_key(|w| (w.start, w.p));
        let mut prev = 0;
        let mut out = Vec::with_capacity(w.len() * 8);
        for w in w {
            let d = w.start - std::mem::replace(&mut prev, w.start);
            let (how, waker, lead, rec) = match w.began {
                Began::Woken {
                    waker,
                    at,
                    new,
                    place,
                } => (
                    i64::from(new),
                    waker.map_or(0, |q| q as i64 + 1),
                    w.start.saturating_sub(at),
                    place,
                ),
                Began::Out(RunEnd::Preempted, r) => (2, 0, 0, r),
                Began::Out(_, r) => (3, 0, 0, r),
            };
            let head = [w.p as i64, d as i64, (w.end - w.start) as i64, w.cpu as i64];
            out.extend(head);
            out.extend([how, waker, lead as i64, ids.id(rec)]);
        }
        out
    }
}

/// The task a pick record picked.
fn picked(ev: &TraceEvent) -> Option<Pid> {
    match *ev {
        TraceEvent::Pick { p, .. } => Some(p),
        _ => None,
    }
}

/// The lane tasks' slices as one flat array of (index in the page's
/// slices, pick record + 1, end, resched record + 1): end is 0 still
/// running, 1 slept, 2 yielded, 3 preempted, 4 exited.
fn runs_flat(slices: &[Slice], on: &[bool], ids: &mut Ids) -> Vec<i64> {
    let mut out = Vec::new();
    for (i, s) in slices.iter().enumerate() {
        if !on[s.p as usize] {
            continue;
        }
        let (end, rec) = match s.how {
            End::Open => (0, None),
            End::Ran(RunEnd::Slept, r) => (1, r),
            End::Ran(RunEnd::Yielded, r) => (2, r),
            End::Ran(RunEnd::Preempted, r) => (3, r),
            End::Ran(RunEnd::Exited, r) => (4, r),
        };
        out.extend([i as i64, ids.id(s.pick), end, ids.id(rec)]);
    }
    out
}

/// The decision records the page uses, numbered in the order first used.
struct Ids {
    /// Per record: its number in the page + 1 (0: unused).
    map: Vec<u32>,
    order: Vec<u32>,
}

impl Ids {
    fn new(n: usize) -> Self {
        Ids {
            map: vec![0; n],
            order: Vec::new(),
        }
    }

    /// The page's number of record `r`, + 1 (0: none).
    fn id(&mut self, r: Option<u32>) -> i64 {
        let Some(r) = r else { return 0 };
        if self.map[r as usize] == 0 {
            self.order.push(r);
            self.map[r as usize] = self.order.len() as u32;
        }
        self.map[r as usize] as i64
    }

    /// `{kinds: [[name, [[field, type], ...]], ...], strs, recs: [[kind,
    /// value, ...], ...]}`: each record's fields as `trace::decision`
    /// gives them (the `--trace-decisions` text's), type i, b or s; a
    /// string value is its index in strs.
    fn to_json(&self, k: &Kernel, recs: &[TraceEvent]) -> Value {
        let mut kinds: Vec<(&str, Vec<(&str, &str)>)> = Vec::new();
        let mut strs: Vec<&str> = Vec::new();
        let mut out = Vec::with_capacity(self.order.len());
        for &r in &self.order {
            let Some(d) = decision(k, &recs[r as usize]) else {
                continue;
            };
            let kind = kinds.iter().position(|x| x.0 == d.name).unwrap_or_else(|| {
                kinds.push((
                    d.name,
                    d.fields.iter().map(|f| (f.0, arg_type(f.1))).collect(),
                ));
                kinds.len() - 1
            });
            let mut v = vec![kind as i64];
            v.extend(d.fields.iter().map(|f| match f.1 {
                Arg::Int(n) => n,
                Arg::Bool(b) => i64::from(b),
                Arg::Str(s) => intern(&mut strs, s) as i64,
            }));
            out.push(v);
        }
        json!({"kinds": kinds, "strs": strs, "recs": out})
    }
}

fn arg_type(a: Arg) -> &'static str {
    match a {
        Arg::Int(_) => "i",
        Arg::Bool(_) => "b",
        Arg::Str(_) => "s",
    }
}

fn intern<'a>(strs: &mut Vec<&'a str>, s: &'a str) -> usize {
    strs.iter().position(|x| *x == s).unwrap_or_else(|| {
        strs.push(s);
        strs.len() - 1
    })
}
