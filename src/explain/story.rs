//! The story `explain` prints, in one screen: the wait, the task's phases
//! around it, how the wait began (the wakeup and its placement, or the
//! preemption), who ran meanwhile, each pick on its CPU with the numbers
//! that decided it, and a one-line verdict.

use super::track::{Ended, Interval, Move, PickRec, Recorder, Wait, Woken};
use crate::engine::Time;
use crate::kernel::task::Pid;
use crate::kernel::tracepoint::{cause_name, idle_name, migration_name, LbWhy, PlaceWhy};
use crate::kernel::Kernel;
use crate::trace::phase::Phase;
use std::fmt::Write;

/// Which wait the story is about.
pub enum About {
    /// The longest of this many tasks' waits.
    Worst(usize),
    /// The one around this time.
    At(Time),
}

/// Picks listed in full; the rest are counted.
const PICKS_SHOWN: usize = 10;

/// `s.nnnnnnnnn`, as ftrace prints timestamps.
fn ts(t: Time) -> String {
    format!("{}.{:09}", t / 1_000_000_000, t % 1_000_000_000)
}

/// A duration in ms, exact to the ns.
fn dur(ns: u64) -> String {
    format!("{}.{:06} ms", ns / 1_000_000, ns % 1_000_000)
}

/// `comm-pid`, as ftrace names a task.
fn name(k: &Kernel, p: Pid) -> String {
    format!("{}-{}", k.tasks[p].comm, k.tasks[p].pid)
}

pub fn render(k: &Kernel, r: &Recorder, w: Wait, about: About) -> String {
    let mut s = String::new();
    let which = match about {
        About::Worst(1) => "its longest runnable wait".to_string(),
        About::Worst(n) => format!(
            "the longest runnable wait of the {n} tasks named {}",
            k.tasks[w.pid].comm
        ),
        About::At(t) => format!("its runnable wait around {}", ts(t)),
    };
    let _ = writeln!(
        s,
        "{} (pid {}), {which}: {} on CPU {}, from {} to {}\n",
        name(k, w.pid),
        k.tasks[w.pid].pid,
        dur(w.ns()),
        w.cpu,
        ts(w.start),
        ts(w.end)
    );
    phases(&mut s, k, r);
    if let Some(wait) = &r.wait {
        began(&mut s, k, wait, r.before.is_empty());
        for m in &r.moves {
            let _ = writeln!(
                s,
                "Moved from CPU {} to CPU {} at {} while it waited: {}.",
                m.from,
                m.to,
                ts(m.at),
                move_text(m)
            );
        }
        behind(&mut s, k, r, wait);
    }
    picks(&mut s, k, r, w.pid);
    let _ = writeln!(s, "\nWhy: {}", verdict(k, r, w.pid));
    s
}

/// The phases table: a few before the wait, the wait, the run after.
fn phases(s: &mut String, k: &Kernel, r: &Recorder) {
    let _ = writeln!(s, "  {:>14}  {:>14}  phase", "start (s)", "length");
    let all = r.before.iter().chain(&r.wait).chain(&r.after);
    for i in all {
        let len = i.end.map_or("?".into(), |e| dur(e - i.start));
        let mark = match Some(i) == r.wait.as_ref() {
            true => "   <== this wait",
            false => "",
        };
        let mut text = phase_text(k, i);
        if let (Some(m), false) = (r.moves.first(), mark.is_empty()) {
            text = format!("runnable on CPU {}, then CPU {}", m.from, i.cpu);
        }
        let _ = writeln!(s, "  {:>14}  {len:>14}  {text}{mark}", ts(i.start));
    }
}

fn phase_text(k: &Kernel, i: &Interval) -> String {
    match i.phase {
        Phase::Running => format!("running on CPU {}{}", i.cpu, ended_text(k, i.ended)),
        Phase::Runnable => format!("runnable on CPU {}", i.cpu),
        _ => "sleeping".into(),
    }
}

fn ended_text(k: &Kernel, e: Ended) -> String {
    match e {
        Ended::Slept => ", then slept".into(),
        Ended::Yielded => ", then yielded".into(),
        Ended::Exited => ", then exited".into(),
        Ended::Open => String::new(),
        Ended::Preempted(None) => ", preempted".into(),
        Ended::Preempted(Some(r)) => {
            let mut t = format!(
                ", preempted ({} request at {}{})",
                cause_name(r.cause),
                ts(r.at),
                if r.lazy { ", lazy" } else { "" }
            );
            if let Some((p, rule)) = r.wakee {
                let _ = write!(t, " by {} waking, rule {}", name(k, p), rule.name());
            }
            t
        }
    }
}

/// How the wait began: a wakeup and its placement, the task's creation
/// (`first`: nothing of it came before), or a preemption.
fn began(s: &mut String, k: &Kernel, wait: &Interval, first: bool) {
    let Some(Woken { waker, from, place }) = wait.woken else {
        let how = if first {
            "it was created (fork), runnable from the start"
        } else {
            "it was switched out still runnable (above)"
        };
        let _ = writeln!(s, "\nThe wait began when {how}.");
        return;
    };
    let by = waker.map_or("an interrupt (a timer)".into(), |p| name(k, p));
    let _ = writeln!(s, "\nWoken by {by} on CPU {from}.");
    if let Some(p) = place {
        let affine = match p.placed.affine.name() {
            "none" => "wake_affine not asked".to_string(),
            "wide" => "wake_wide: spread, wake_affine not asked".to_string(),
            v => format!("wake_affine chose the {v}'s CPU"),
        };
        let _ = writeln!(
            s,
            "Placed on CPU {} (prev CPU {}): {affine}; {}{}; {}.",
            p.placed.cpu,
            p.prev,
            why_text(p.placed.why),
            match p.placed.scanned {
                0 => String::new(),
                n => format!(" ({n} CPUs scanned)"),
            },
            if p.wakelist {
                "queued through its wakelist"
            } else {
                "enqueued directly"
            }
        );
    }
}

/// Why the task moved while it waited: the load balance that moved it,
/// from its decision record.
fn move_text(m: &Move) -> String {
    let Some((on, lb)) = m.by else {
        return "by no load balance (an RT or deadline push or pull, or an affinity change)".into();
    };
    let src = lb.src.map_or("?".into(), |c| c.to_string());
    if lb.why == LbWhy::Pushed {
        return format!(
            "CPU {src}'s stopper pushed it (an active balance for CPU {}, queued when balancing \
             its {} domain kept failing)",
            lb.dst, lb.domain
        );
    }
    let by = match on == lb.dst {
        true => String::new(),
        false => format!(", run by CPU {on} for it (nohz idle balance)"),
    };
    format!(
        "a load balance by CPU {} ({}) at its {} domain (level {}){by} found CPU {src} the \
         busiest: migrate_{}, imbalance {}; {} moved",
        lb.dst,
        idle_name(lb.idle),
        lb.domain,
        lb.level,
        migration_name(lb.migration),
        lb.imbalance,
        match lb.moved {
            1 => "it alone".to_string(),
            n => format!("{n} tasks"),
        }
    )
}

fn why_text(w: PlaceWhy) -> &'static str {
    match w {
        PlaceWhy::Pinned => "the only CPU it may run on",
        PlaceWhy::Rt => "the RT class placed it",
        PlaceWhy::Dl => "the deadline class placed it",
        PlaceWhy::TargetIdle => "the target CPU was idle",
        PlaceWhy::PrevIdle => "its previous CPU was idle",
        PlaceWhy::RecentIdle => "its recently used CPU was idle",
        PlaceWhy::IdleSmt => "an idle SMT sibling of its previous CPU",
        PlaceWhy::IdleScan => "the idle scan of the LLC found this CPU",
        PlaceWhy::NoIdle => "no idle CPU found, so the busy target",
        PlaceWhy::Fallback => "the target was not allowed: its first allowed CPU",
        PlaceWhy::Queued => "still queued (delayed dequeue): requeued in place",
        PlaceWhy::OnCpu => "still switching out: back to its previous CPU",
    }
}

/// Who ran on the CPU while it waited, longest first.
fn behind(s: &mut String, k: &Kernel, r: &Recorder, wait: &Interval) {
    let end = wait.end.unwrap_or(wait.start);
    let mut ran: Vec<(Option<Pid>, u64)> = Vec::new();
    for (i, &(who, from)) in r.behind.iter().enumerate() {
        let to = r.behind.get(i + 1).map_or(end, |x| x.1).min(end);
        match ran.iter_mut().find(|x| x.0 == who) {
            Some(x) => x.1 += to.saturating_sub(from),
            None => ran.push((who, to.saturating_sub(from))),
        }
    }
    ran.retain(|x| x.1 > 0);
    ran.sort_by_key(|x| std::cmp::Reverse(x.1));
    let list: Vec<String> = (ran.iter().take(6))
        .map(|(p, t)| {
            let who = p.map_or("(its CPU idle or switching)".into(), |p| name(k, p));
            format!("{who} {}", dur(*t))
        })
        .collect();
    let more = ran.len().saturating_sub(6);
    let _ = writeln!(
        s,
        "It waited behind: {}{}",
        if list.is_empty() {
            "nobody (the switch itself)".into()
        } else {
            list.join(", ")
        },
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    );
}

/// Why a pick went to another task, in the waiting task's numbers.
fn reason(pk: &PickRec) -> &'static str {
    match pk.waiter {
        None => "it was not queued there",
        Some((false, _, _)) => "it was not eligible (lag < 0)",
        Some(_) if pk.protected => "slice protection kept curr",
        Some((true, d, _)) if d > pk.deadline => "its deadline was later",
        Some((true, d, _)) if d == pk.deadline => "same deadline, queued before it",
        Some(_) => "another pick level decided (group or class)",
    }
}

fn picks(s: &mut String, k: &Kernel, r: &Recorder, me: Pid) {
    if r.picks.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nPicks on its CPU while it waited (deadline and lag in ns of vruntime):"
    );
    let shown = r.picks.len().min(PICKS_SHOWN);
    let skip = r.picks.len() - shown;
    if skip > 0 {
        let _ = writeln!(s, "  ... {skip} earlier picks (see the verdict)");
    }
    for pk in &r.picks[skip..] {
        let _ = writeln!(s, "  {}  {}", ts(pk.at), pick_text(k, pk, me));
    }
}

fn pick_text(k: &Kernel, pk: &PickRec, me: Pid) -> String {
    let mut t = format!(
        "{} picked of {} eligible: deadline {}, lag {}{}",
        name(k, pk.picked),
        pk.eligible,
        pk.deadline,
        pk.lag,
        if pk.protected {
            ", kept by slice protection"
        } else {
            ""
        }
    );
    if pk.picked == me {
        if let Some(u) = pk.runner_up {
            let _ = write!(t, "; runner-up {}", name(k, u));
        }
        return t;
    }
    if let Some((e, d, lag)) = pk.waiter {
        let el = if e { "eligible" } else { "not eligible" };
        let _ = write!(t, " | it: {el}, deadline {d}, lag {lag}");
    }
    let _ = write!(t, " -> {}", reason(pk));
    t
}

/// One line: how many picks passed it over, and why.
fn verdict(k: &Kernel, r: &Recorder, me: Pid) -> String {
    let others: Vec<&PickRec> = r.picks.iter().filter(|p| p.picked != me).collect();
    if others.is_empty() {
        return match r.picks.iter().any(|p| p.picked == me) {
            true => "it was the first pick on its CPU: the wait is the time until the CPU \
                     rescheduled (the running task's preemption point and the switch)"
                .into(),
            false => "no pick on its CPU was seen during the wait".into(),
        };
    }
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for pk in &others {
        let why = reason(pk);
        match counts.iter_mut().find(|c| c.0 == why) {
            Some(c) => c.1 += 1,
            None => counts.push((why, 1)),
        }
    }
    let parts: Vec<String> = counts.iter().map(|(w, n)| format!("{n}× {w}")).collect();
    let mut picked: Vec<(Pid, usize)> = Vec::new();
    for pk in &others {
        match picked.iter_mut().find(|x| x.0 == pk.picked) {
            Some(x) => x.1 += 1,
            None => picked.push((pk.picked, 1)),
        }
    }
    picked.sort_by_key(|x| std::cmp::Reverse(x.1));
    let top: Vec<String> = (picked.iter().take(3))
        .map(|(p, n)| format!("{} ({n})", name(k, *p)))
        .collect();
    let rest = picked.len().saturating_sub(3);
    format!(
        "{} on its CPU went to others first: {}. Most often {}{}.",
        match others.len() {
            1 => "1 pick".to_string(),
            n => format!("{n} picks"),
        },
        parts.join(", "),
        top.join(", "),
        if rest > 0 {
            format!(" and {rest} others")
        } else {
            String::new()
        }
    )
}
