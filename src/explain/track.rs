//! The two in-process tracers of `explain`: `Finder` follows every task
//! the selector names and keeps the wait to explain; `Recorder` follows
//! that one task again, with the decision records, around that wait.
//!
//! A task's phases are the ones its ftrace trace shows (`trace::phase`).

use crate::engine::Time;
use crate::kernel::preempt::Cause;
use crate::kernel::task::{Pid, TaskState};
use crate::kernel::tracepoint::{LbDecision, Placement, TraceEvent, Tracer, WakeupRule};
use crate::kernel::Kernel;
use crate::trace::phase::{changes, out_phase, run_end, Phase, Phases, RunEnd};
use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex};

/// Where a tracer leaves what it found when the run finishes.
pub type Slot<T> = Arc<Mutex<Option<T>>>;

fn put<T>(slot: &Slot<T>, v: T) {
    *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
}

/// The tasks a `--task` names: a pid, or every task of a comm.
#[derive(Clone, Debug)]
pub enum Selector {
    Pid(u32),
    Comm(String),
}

impl Selector {
    pub fn parse(s: &str) -> Selector {
        match s.parse() {
            Ok(n) => Selector::Pid(n),
            Err(_) => Selector::Comm(s.to_string()),
        }
    }

    pub fn matches(&self, k: &Kernel, p: Pid) -> bool {
        match self {
            Selector::Pid(n) => k.tasks[p].pid == *n,
            Selector::Comm(c) => k.tasks[p].is_named(c),
        }
    }
}

/// One runnable wait: the task, on which CPU, from when to when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    pub pid: Pid,
    pub cpu: usize,
    pub start: Time,
    pub end: Time,
}

impl Wait {
    pub fn ns(&self) -> u64 {
        self.end - self.start
    }
}

/// Which wait to explain: the longest (`at` None) or the one around `at`.
fn better(w: &Wait, than: &Wait, at: Option<Time>) -> bool {
    let Some(t) = at else {
        return w.ns() > than.ns();
    };
    // Covering `at` (the longest), then the next to start, then the last.
    let key = |w: &Wait| match (w.start <= t, t < w.end) {
        (true, true) => (0, u64::MAX - w.ns()),
        (false, _) => (1, w.start),
        (true, false) => (2, u64::MAX - w.end),
    };
    key(w) < key(than)
}

/// Pass 1: every selected task's waits, keeping the one to explain.
pub struct Finder {
    sel: Selector,
    at: Option<Time>,
    phases: Phases,
    best: Option<Wait>,
    slot: Slot<Option<Wait>>,
}

impl Finder {
    pub fn new(sel: Selector, at: Option<Time>, slot: Slot<Option<Wait>>) -> Finder {
        Finder {
            sel,
            at,
            phases: Phases::default(),
            best: None,
            slot,
        }
    }

    fn set(&mut self, k: &Kernel, p: Pid, to: Phase) {
        if !self.sel.matches(k, p) {
            return;
        }
        if let Some(since) = self.phases.set(p, to, k.now) {
            let w = Wait {
                pid: p,
                cpu: k.tasks[p].cpu,
                start: since,
                end: k.now,
            };
            if self.best.is_none_or(|b| better(&w, &b, self.at)) {
                self.best = Some(w);
            }
        }
    }
}

impl Tracer for Finder {
    fn event(&mut self, k: &Kernel, ev: &TraceEvent) {
        for (p, to) in changes(ev).into_iter().flatten() {
            self.set(k, p, to);
        }
    }

    fn finish(self: Box<Self>, _k: &Kernel) -> io::Result<()> {
        put(&self.slot, self.best);
        Ok(())
    }
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// Switched out in state R without a preemption (a yield).
    Yielded,
    /// Preempted; the resched request that did it, if seen.
    Preempted(Option<Resched>),
    Slept,
    Exited,
    /// Still running when the record stops.
    Open,
}

/// A resched request's record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resched {
    pub at: Time,
    pub cause: Cause,
    pub lazy: bool,
    pub wakee: Option<(Pid, WakeupRule)>,
}

/// Who woke the task, from which CPU, and where it was placed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Woken {
    /// The waker task (None: an interrupt, e.g. a timer).
    pub waker: Option<Pid>,
    pub from: usize,
    pub place: Option<Placement>,
}

/// One phase of the task: start, end, CPU, and how it began or ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interval {
    pub phase: Phase,
    pub cpu: usize,
    pub start: Time,
    pub end: Option<Time>,
    /// A runnable wait that began with a wakeup: who and where.
    pub woken: Option<Woken>,
    /// A run: how it ended.
    pub ended: Ended,
}

/// The numbers of a pick on the waiting task's CPU, and the waiting
/// task's own at that moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PickRec {
    pub at: Time,
    pub picked: Pid,
    pub eligible: u32,
    pub deadline: i64,
    pub lag: i64,
    pub protected: bool,
    pub runner_up: Option<Pid>,
    /// The waiting task: eligible, deadline, lag (None: not a fair task
    /// queued on that CPU's cfs_rq, e.g. still on its way).
    pub waiter: Option<(bool, i64, i64)>,
}

/// A migration while the task waited, and the load balance that made it
/// (its record and the CPU that ran it), if one did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    pub at: Time,
    pub from: usize,
    pub to: usize,
    pub by: Option<(usize, LbDecision)>,
}

/// Intervals kept before the wait.
const BEFORE: usize = 4;

/// Pass 2: the story of one task around one wait.
pub struct Recorder {
    w: Wait,
    cur: Option<Interval>,
    pub before: VecDeque<Interval>,
    pub wait: Option<Interval>,
    pub after: Option<Interval>,
    /// Who ran on the wait's CPU from when (None: idle).
    pub behind: Vec<(Option<Pid>, Time)>,
    pub picks: Vec<PickRec>,
    /// Migrations during the wait.
    pub moves: Vec<Move>,
    woken: Option<Woken>,
    /// The last resched request per CPU.
    resched: Vec<Option<Resched>>,
    slot: Slot<Recorder>,
}

impl Recorder {
    pub fn new(w: Wait, ncpus: usize, slot: Slot<Recorder>) -> Recorder {
        Recorder {
            w,
            cur: None,
            before: VecDeque::new(),
            wait: None,
            after: None,
            behind: Vec::new(),
            picks: Vec::new(),
            moves: Vec::new(),
            woken: None,
            resched: vec![None; ncpus],
            slot,
        }
    }

    fn done(&self) -> bool {
        self.after.is_some()
    }

    /// The open interval is the wait to explain.
    fn in_wait(&self) -> bool {
        let c = self.cur.as_ref();
        self.wait.is_none()
            && c.is_some_and(|c| c.phase == Phase::Runnable && c.start == self.w.start)
    }

    /// The task enters `phase` on `cpu`: close the open interval.
    fn begin(&mut self, k: &Kernel, phase: Phase, cpu: usize, ended: Ended) {
        if let Some(mut c) = self.cur.take() {
            c.end = Some(k.now);
            if c.phase == Phase::Running {
                c.ended = ended;
            }
            self.file(c);
        }
        let woken = (phase == Phase::Runnable)
            .then(|| self.woken.take())
            .flatten();
        self.cur = Some(Interval {
            phase,
            cpu,
            start: k.now,
            end: None,
            woken,
            ended: Ended::Open,
        });
        if self.in_wait() {
            self.behind
                .push((k.rqs[cpu].curr.filter(|&c| c != self.w.pid), k.now));
        }
    }

    /// A finished interval goes before, as the wait, or after it.
    fn file(&mut self, c: Interval) {
        if self.wait.is_none() && c.phase == Phase::Runnable && c.start == self.w.start {
            self.wait = Some(c);
        } else if self.wait.is_none() {
            self.before.push_back(c);
            if self.before.len() > BEFORE {
                self.before.pop_front();
            }
        } else if self.after.is_none() {
            self.after = Some(c);
        }
    }

    fn switch(
        &mut self,
        k: &Kernel,
        cpu: usize,
        (prev, next): (Option<Pid>, Option<Pid>),
        st: TaskState,
        pre: bool,
    ) {
        let me = self.w.pid;
        if prev == Some(me) {
            let ended = match run_end(k, me, st, pre) {
                RunEnd::Exited => Ended::Exited,
                RunEnd::Preempted => Ended::Preempted(self.resched[cpu]),
                RunEnd::Yielded => Ended::Yielded,
                RunEnd::Slept => Ended::Slept,
            };
            self.begin(k, out_phase(st), cpu, ended);
        }
        if next == Some(me) {
            self.begin(k, Phase::Running, cpu, Ended::Open);
        } else if self.in_wait() && self.cur.as_ref().is_some_and(|c| c.cpu == cpu) {
            self.behind.push((next, k.now));
        }
    }

    fn pick(&mut self, k: &Kernel, ev: &TraceEvent) {
        let TraceEvent::Pick {
            cpu,
            p,
            eligible,
            deadline,
            lag,
            protected,
            runner_up,
            ..
        } = *ev
        else {
            return;
        };
        if !self.in_wait() || self.cur.as_ref().is_none_or(|c| c.cpu != cpu) {
            return;
        }
        self.picks.push(PickRec {
            at: k.now,
            picked: p,
            eligible,
            deadline,
            lag,
            protected,
            runner_up,
            waiter: waiter_view(k, self.w.pid, cpu),
        });
    }

    /// A balance's record comes after its sched_migrate_task lines: the
    /// one that just moved the task from src to dst made its last move.
    fn balance(&mut self, k: &Kernel, cpu: usize, lb: LbDecision) {
        let Some(m) = self.moves.last_mut() else {
            return;
        };
        if m.at == k.now && m.by.is_none() && Some(m.from) == lb.src && m.to == lb.dst {
            m.by = Some((cpu, lb));
        }
    }
}

/// The waiting task's eligibility, deadline and lag on `cpu`.
fn waiter_view(k: &Kernel, p: Pid, cpu: usize) -> Option<(bool, i64, i64)> {
    let t = &k.tasks[p];
    if !t.se.on_rq || t.cpu != cpu || k.is_rt(p) || k.is_dl(p) {
        return None;
    }
    let (cfs, ents) = (k.cfs_rq(cpu, t.tg), k.ents(cpu));
    let lag = cfs.avg_vruntime(&ents) - t.se.vruntime;
    Some((cfs.entity_eligible(&ents, p), t.se.deadline, lag))
}

impl Tracer for Recorder {
    fn event(&mut self, k: &Kernel, ev: &TraceEvent) {
        if self.done() {
            return;
        }
        let me = self.w.pid;
        match *ev {
            TraceEvent::Switch {
                cpu,
                prev,
                prev_state,
                next,
                preempt,
            } => self.switch(k, cpu, (prev, next), prev_state, preempt),
            TraceEvent::Waking { cpu, p, waker } if p == me => {
                self.woken = Some(Woken {
                    waker,
                    from: cpu,
                    place: None,
                })
            }
            TraceEvent::Place { p, place, .. } if p == me => {
                if let Some(w) = &mut self.woken {
                    w.place = Some(place);
                }
            }
            TraceEvent::Wakeup { p, target, .. } | TraceEvent::WakeupNew { p, target, .. }
                if p == me =>
            {
                let phase = self.cur.as_ref().map(|c| c.phase);
                if !matches!(phase, Some(Phase::Running | Phase::Runnable)) {
                    self.begin(k, Phase::Runnable, target, Ended::Open);
                }
            }
            TraceEvent::Migrate { p, orig, dest } if p == me => {
                if self.in_wait() {
                    self.behind.push((k.rqs[dest].curr, k.now));
                    self.moves.push(Move {
                        at: k.now,
                        from: orig,
                        to: dest,
                        by: None,
                    });
                }
                if let Some(c) = &mut self.cur {
                    c.cpu = dest;
                }
            }
            TraceEvent::Pick { .. } => self.pick(k, ev),
            TraceEvent::Balance { cpu, lb } => self.balance(k, cpu, lb),
            TraceEvent::Resched {
                cpu,
                cause,
                lazy,
                wakee,
                ..
            } => {
                self.resched[cpu] = Some(Resched {
                    at: k.now,
                    cause,
                    lazy,
                    wakee,
                })
            }
            _ => {}
        }
    }

    fn decisions(&self) -> bool {
        true
    }

    fn finish(mut self: Box<Self>, k: &Kernel) -> io::Result<()> {
        if let Some(mut c) = self.cur.take() {
            c.end = c.end.or(Some(k.now));
            self.file(c);
        }
        let slot = self.slot.clone();
        put(&slot, *self);
        Ok(())
    }
}
