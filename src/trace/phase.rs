//! A task's phases as its trace shows them, for the consumers that follow
//! tasks through the events (explain's finder, the HTML report's lanes):
//! running from its sched_switch in; runnable from its sched_wakeup (or
//! wakeup_new), or a switch out in state R; sleeping from a switch out in
//! any other state.

use crate::engine::Time;
use crate::kernel::task::{Pid, TaskState};
use crate::kernel::tracepoint::TraceEvent;
use crate::kernel::Kernel;

/// A task's phase, as its trace shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Unknown,
    Running,
    Runnable,
    Sleeping,
}

/// The phase a task switched out in `state` enters.
pub fn out_phase(state: TaskState) -> Phase {
    match state {
        TaskState::Running => Phase::Runnable,
        _ => Phase::Sleeping,
    }
}

/// The phases `ev` moves tasks into, in the order they happen (a
/// switch's prev before its next).
pub fn changes(ev: &TraceEvent) -> [Option<(Pid, Phase)>; 2] {
    match *ev {
        TraceEvent::Switch {
            prev,
            prev_state,
            next,
            ..
        } => [
            prev.map(|p| (p, out_phase(prev_state))),
            next.map(|n| (n, Phase::Running)),
        ],
        TraceEvent::Wakeup { p, .. } | TraceEvent::WakeupNew { p, .. } => {
            [Some((p, Phase::Runnable)), None]
        }
        _ => [None, None],
    }
}

/// Per task: its phase and since when.
#[derive(Default)]
pub struct Phases(Vec<(Phase, Time)>);

impl Phases {
    /// `p` enters `to` at `now`. A wakeup of a task already running or
    /// runnable changes nothing (it is still where it was). Returns when
    /// the runnable wait that this ends (runnable → running) began.
    pub fn set(&mut self, p: Pid, to: Phase, now: Time) -> Option<Time> {
        if self.0.len() <= p {
            self.0.resize(p + 1, (Phase::Unknown, 0));
        }
        let (was, since) = self.0[p];
        if !(to == Phase::Runnable && matches!(was, Phase::Running | Phase::Runnable)) {
            self.0[p] = (to, now);
        }
        (was == Phase::Runnable && to == Phase::Running).then_some(since)
    }

    /// `p`'s phase (Unknown before its first event).
    pub fn get(&self, p: Pid) -> Phase {
        self.0.get(p).map_or(Phase::Unknown, |x| x.0)
    }
}

/// How a run ended, as its switch out shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    Slept,
    /// Switched out in state R without a preemption (a yield).
    Yielded,
    Preempted,
    Exited,
}

/// How `p`'s run ended at a switch out in `state` (`preempt`: SM_PREEMPT).
pub fn run_end(k: &Kernel, p: Pid, state: TaskState, preempt: bool) -> RunEnd {
    match (out_phase(state), preempt) {
        _ if k.tasks[p].state == TaskState::Dead => RunEnd::Exited,
        (Phase::Runnable, true) => RunEnd::Preempted,
        (Phase::Runnable, false) => RunEnd::Yielded,
        _ => RunEnd::Slept,
    }
}
