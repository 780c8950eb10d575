//! Preemption models (CONFIG_PREEMPT_NONE/VOLUNTARY/FULL/LAZY and the
//! PREEMPT_AUTO series of seed 002): which need-resched bit a request sets
//! (__resched_curr, get_lazy_tif_bit), where each bit is honoured
//! (exit_to_user_mode_loop, irqentry_exit_cond_resched, preempt_enable,
//! __cond_resched, might_resched), the lazy upgrade at the tick, and the
//! counters that tell voluntary from involuntary switches and why.

use super::core::SchedMode;
use super::task::Pid;
use super::tracepoint::WakeupRule;
use super::Kernel;
use crate::engine::Time;
use crate::util::hist::Histogram;

/// The preemption model of a run (`kernel.preempt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreemptModel {
    None,
    Voluntary,
    Full,
    /// Mainline PREEMPT_LAZY (v6.13+).
    Lazy,
    /// PREEMPT_AUTO v2 (seed 002) booted with preempt=none/voluntary/full.
    AutoNone,
    AutoVoluntary,
    AutoFull,
}

/// (model, name in `kernel.preempt`)
pub const MODELS: &[(PreemptModel, &str)] = &[
    (PreemptModel::None, "none"),
    (PreemptModel::Voluntary, "voluntary"),
    (PreemptModel::Full, "full"),
    (PreemptModel::Lazy, "lazy"),
    (PreemptModel::AutoNone, "auto-none"),
    (PreemptModel::AutoVoluntary, "auto-voluntary"),
    (PreemptModel::AutoFull, "auto-full"),
];

impl PreemptModel {
    pub fn parse(s: &str) -> Result<Self, String> {
        MODELS
            .iter()
            .find(|m| m.1 == s)
            .map(|m| m.0)
            .ok_or_else(|| {
                let names: Vec<&str> = MODELS.iter().map(|m| m.1).collect();
                format!(
                    "unknown preemption model `{s}` (one of {})",
                    names.join(", ")
                )
            })
    }

    pub fn name(self) -> &'static str {
        MODELS.iter().find(|m| m.0 == self).map_or("?", |m| m.1)
    }

    /// CONFIG_PREEMPTION: preempt_enable() and the return from an interrupt
    /// to kernel mode act on TIF_NEED_RESCHED. PREEMPT_AUTO always has it.
    pub fn preemptible(self) -> bool {
        !matches!(self, PreemptModel::None | PreemptModel::Voluntary)
    }

    /// The model sets TIF_NEED_RESCHED_LAZY for some requests (and so
    /// upgrades it at the tick).
    pub fn has_lazy(self) -> bool {
        matches!(
            self,
            PreemptModel::Lazy | PreemptModel::AutoNone | PreemptModel::AutoVoluntary
        )
    }
}

/// Who asks for the reschedule: the fair class (resched_curr_lazy in
/// update_curr and check_preempt_wakeup_fair) or a higher class preempting
/// a fair task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Req {
    Fair,
    HigherClass,
}

/// Whether a request sets the lazy bit: get_lazy_tif_bit in mainline
/// (lazy for the fair class under PREEMPT_LAZY); under PREEMPT_AUTO, the
/// seed's table: none → always lazy, voluntary → lazy unless a higher
/// class preempts, full → never lazy.
pub fn wants_lazy(model: PreemptModel, req: Req) -> bool {
    match model {
        PreemptModel::Lazy | PreemptModel::AutoVoluntary => req == Req::Fair,
        PreemptModel::AutoNone => true,
        _ => false,
    }
}

/// Where a task is when the CPU checks its need-resched bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Point {
    /// Returning to user space from a syscall, or between user-mode ops.
    #[default]
    User,
    /// Return from an interrupt that hit user mode.
    IrqUser,
    /// Return from an interrupt that hit preemptible kernel code.
    IrqKernel,
    /// Kernel code with preempt_count 0 (a preempt_enable(), the end of a
    /// preempt-disabled region).
    Kernel,
    /// A might_sleep() inside a syscall (might_resched in voluntary).
    MightSleep,
    /// An explicit cond_resched() call.
    CondResched,
    /// Inside a preempt-disabled region.
    Atomic,
    /// Back from __schedule while need_resched() is still set: schedule()
    /// and preempt_schedule() loop.
    Schedule,
}

/// Whether `point` acts on the bits that are set, under `model`.
pub fn honours(model: PreemptModel, point: Point, full: bool, lazy: bool) -> bool {
    match point {
        // exit_to_user_mode_loop: either bit.
        Point::User | Point::IrqUser => full || lazy,
        Point::Atomic => false,
        // __cond_resched in none/voluntary; in preemptible kernels the full
        // bit would have been taken at preempt_count 0 anyway.
        Point::CondResched | Point::Schedule => full,
        Point::MightSleep => full && (model.preemptible() || model == PreemptModel::Voluntary),
        Point::Kernel | Point::IrqKernel => full && model.preemptible(),
    }
}

/// Why need-resched was set (the first request since the last switch; a
/// tick upgrade of a lazy request overrides it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Cause {
    #[default]
    Other,
    Wakeup,
    /// The fair class's slice ran out (update_curr at the tick).
    Tick,
    /// A lazy request not yet honoured was made a full one at the tick.
    LazyUpgrade,
}

/// The run queue's preemption state: the lazy bit of curr (the full bit is
/// Rq::need_resched), and what the counters need.
#[derive(Clone, Debug, Default)]
pub struct RqPreempt {
    /// TIF_NEED_RESCHED_LAZY of curr.
    pub lazy: bool,
    /// When the first bit was set since the last schedule.
    pub since: Time,
    pub cause: Cause,
    /// The point at which the pending preemption is being honoured.
    pub point: Point,
    /// curr has just been switched in (still inside __schedule's loop).
    pub switched_in: bool,
}

/// Where a task's program is, for the preemption points: the boundary it
/// reaches when its current segment ends, and how that segment splits into
/// user and kernel mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExecMode {
    pub at: Point,
    /// The last `kern_tail` ns of the segment run in kernel mode (a user
    /// computation that ends in a syscall entry); u64::MAX: all kernel.
    pub kern_tail: u64,
    /// The segment runs with preemption disabled.
    pub atomic: bool,
}

/// Preemptions by cause and by the point that honoured them, and the
/// latency from setting need-resched to the switch.
#[derive(Clone, Debug, Default)]
pub struct PreemptStats {
    pub wakeup: u64,
    pub tick: u64,
    pub lazy_upgrade: u64,
    pub other: u64,
    /// Honoured on return from an interrupt (to user or kernel mode).
    pub at_irq: u64,
    pub at_user: u64,
    pub at_cond_resched: u64,
    /// preempt_enable, might_resched, or __schedule's loop.
    pub at_kernel: u64,
    /// Lazy requests made and lazy requests upgraded at the tick.
    pub lazy_set: u64,
    pub lazy_upgraded: u64,
    /// ns from the first need-resched bit to the switch away from curr.
    pub resched_latency: Histogram,
}

impl Kernel {
    /// resched_curr_lazy for waking task `p`; `rule`, given when decision
    /// records are on and the wakeup preempts, names it in the record.
    pub(super) fn resched_for_wakee(
        &mut self,
        (cpu, from): (usize, Option<usize>),
        p: Pid,
        (req, cause): (Req, Cause),
        rule: Option<WakeupRule>,
    ) {
        self.wakeup_rule = rule.map(|r| (p, r));
        self.resched_curr_lazy(cpu, from, req, cause);
        self.wakeup_rule = None;
    }

    /// The record's rule of a higher class's wakeup preemption, when
    /// records are on: `class`, or `Idle` when `cpu` ran nothing.
    pub(super) fn class_rule(&self, cpu: usize, class: WakeupRule) -> Option<WakeupRule> {
        let rule = self.rqs[cpu].curr.map_or(WakeupRule::Idle, |_| class);
        self.decisions.then_some(rule)
    }

    /// resched_curr_lazy: a request from the fair class (or a higher one),
    /// with the bit the model picks.
    pub fn resched_curr_lazy(&mut self, cpu: usize, from: Option<usize>, req: Req, cause: Cause) {
        let lazy = wants_lazy(self.cfg.preempt, req);
        self.set_need_resched(cpu, from, lazy, cause);
    }

    /// Either need-resched bit is set on `cpu`.
    pub fn resched_pending(&self, cpu: usize) -> bool {
        let rq = &self.rqs[cpu];
        rq.need_resched || rq.pre.lazy
    }

    /// sched_tick: a lazy request still pending at the tick becomes a full
    /// one (`if (dynamic_preempt_lazy() && tif_test_bit(LAZY)) resched_curr`),
    /// before the class's task_tick runs.
    pub fn tick_upgrade_lazy(&mut self, cpu: usize) {
        let rq = &self.rqs[cpu];
        if self.cfg.preempt.has_lazy() && rq.pre.lazy && !rq.need_resched {
            self.stats.preempt.lazy_upgraded += 1;
            self.set_need_resched(cpu, Some(cpu), false, Cause::LazyUpgrade);
        }
    }

    /// Whether `p`, curr of `cpu`, is at a point that honours the pending
    /// need-resched bits; records the point for the counters.
    /// Inlined: it runs 3–4 times per event, and the test that nothing is
    /// pending settles nearly all of them (issue 33, part 4).
    #[inline]
    pub fn preempt_point(&mut self, cpu: usize, p: Pid) -> bool {
        let switched_in = std::mem::take(&mut self.rqs[cpu].pre.switched_in);
        // Nothing pending and no throttle to check: no point honours
        // nothing, so the task's state need not be read (most calls).
        if !self.bandwidth_on && !self.resched_pending(cpu) {
            return false;
        }
        self.preempt_point_pending(cpu, p, switched_in)
    }

    /// The rest of `preempt_point`, when a bit is pending or a throttle
    /// may be due: which point `p` is at, and whether it honours the bits.
    #[inline(never)]
    fn preempt_point_pending(&mut self, cpu: usize, p: Pid, switched_in: bool) -> bool {
        let t = &self.tasks[p];
        let m = t.prog.mode;
        let point = if switched_in {
            Point::Schedule
        } else if t.prog.work_left > 0 {
            // An interrupt stopped the segment.
            if m.atomic {
                Point::Atomic
            } else if t.prog.work_left > m.kern_tail {
                Point::IrqUser
            } else {
                Point::IrqKernel
            }
        } else {
            m.at
        };
        let user = matches!(point, Point::User | Point::IrqUser);
        if self.bandwidth_on && user && self.throttle_due(cpu, p) {
            self.set_need_resched(cpu, Some(cpu), false, Cause::Other);
        }
        if !self.resched_pending(cpu) {
            return false;
        }
        let rq = &mut self.rqs[cpu];
        let ok = honours(self.cfg.preempt, point, rq.need_resched, rq.pre.lazy);
        if ok {
            rq.pre.point = point;
        }
        ok
    }

    /// Called by __schedule after the pick: clear both bits and, when
    /// `prev` is switched out, count the preemption and its latency.
    pub fn account_resched(
        &mut self,
        cpu: usize,
        prev: Option<Pid>,
        switched: bool,
        mode: SchedMode,
    ) {
        let rq = &mut self.rqs[cpu];
        let pending = rq.need_resched || rq.pre.lazy;
        rq.need_resched = false;
        rq.pre.lazy = false;
        if !pending || !switched || prev.is_none() {
            return;
        }
        let st = &mut self.stats.preempt;
        st.resched_latency.add(self.now - rq.pre.since);
        if mode != SchedMode::Preempt {
            return;
        }
        match rq.pre.cause {
            Cause::Wakeup => st.wakeup += 1,
            Cause::Tick => st.tick += 1,
            Cause::LazyUpgrade => st.lazy_upgrade += 1,
            Cause::Other => st.other += 1,
        }
        match rq.pre.point {
            Point::IrqUser | Point::IrqKernel => st.at_irq += 1,
            Point::User => st.at_user += 1,
            Point::CondResched => st.at_cond_resched += 1,
            _ => st.at_kernel += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PreemptModel as M;

    #[test]
    fn bits_follow_the_model_table() {
        for (m, name) in MODELS {
            assert_eq!(PreemptModel::parse(name), Ok(*m));
        }
        assert!(PreemptModel::parse("rt").is_err());
        assert!(!wants_lazy(M::None, Req::Fair));
        assert!(!wants_lazy(M::Full, Req::Fair));
        assert!(wants_lazy(M::Lazy, Req::Fair));
        assert!(!wants_lazy(M::Lazy, Req::HigherClass));
        assert!(wants_lazy(M::AutoNone, Req::HigherClass));
        assert!(!wants_lazy(M::AutoVoluntary, Req::HigherClass));
        assert!(!wants_lazy(M::AutoFull, Req::Fair));
    }

    #[test]
    fn points_honour_bits_as_the_entry_code_does() {
        // Exit to user takes either bit in every model.
        for (m, _) in MODELS {
            assert!(honours(*m, Point::User, false, true));
            assert!(honours(*m, Point::IrqUser, true, false));
            assert!(!honours(*m, Point::Atomic, true, true));
        }
        // Return to kernel: the full bit, only in preemptible models.
        assert!(!honours(M::None, Point::IrqKernel, true, false));
        assert!(!honours(M::Voluntary, Point::IrqKernel, true, false));
        assert!(honours(M::Full, Point::IrqKernel, true, false));
        assert!(honours(M::AutoNone, Point::IrqKernel, true, false));
        assert!(!honours(M::Lazy, Point::IrqKernel, false, true));
        // cond_resched acts on the full bit; might_sleep only in voluntary
        // among the non-preemptible models.
        assert!(honours(M::None, Point::CondResched, true, false));
        assert!(!honours(M::AutoNone, Point::CondResched, false, true));
        assert!(!honours(M::None, Point::MightSleep, true, false));
        assert!(honours(M::Voluntary, Point::MightSleep, true, false));
    }
}
