//! Completions (kernel/sched/completion.c) in the three forms seed 003
//! compares, chosen by `kernel.completion`:
//!
//! - `waitqueue`: v4.6, before the seed. `done` is an unsigned int,
//!   complete_all adds UINT_MAX/2, waiters sit on a regular wait queue with
//!   default_wake_function: a woken entry stays queued until its task runs
//!   and removes itself, and complete_all wakes every waiter under the lock.
//! - `swait`: mainline today. Simple wait queue; complete_all sets done to
//!   UINT_MAX (sticky, saturating) and swake_up_all_locked wakes every
//!   waiter with the raw lock held and interrupts off.
//! - `swait-defer`: the seed's v2. `done` shrinks to an unsigned short next
//!   to a flags short; complete_all adds USHRT_MAX/2 (so at most 32767
//!   waiters get through), and with interrupts off (called from an
//!   interrupt handler) it sets COMPLETION_DEFER and wakes only the first
//!   waiter, which wakes the rest with swake_up_all once it returns.
//!
//! The waiter loop follows mainline's do_wait_for_common for all three: a
//! woken waiter that finds `done` at 0 queues itself again at the tail.
//! (v2 queued the entry once before the loop, so such a waiter slept off
//! the list; that loses it, and is not modelled.)

use super::program::Blocked;
use super::swait::SwaitQueue;
use super::task::{Pid, TaskState};
use super::Kernel;
use crate::engine::{EventKind, Time};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};

/// `kernel.completion`
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Default)]
pub enum CompletionVariant {
    WaitQueue,
    #[default]
    Swait,
    SwaitDefer,
}

impl CompletionVariant {
    pub const NAMES: [&'static str; 3] = ["waitqueue", "swait", "swait-defer"];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "waitqueue" => Some(Self::WaitQueue),
            "swait" => Some(Self::Swait),
            "swait-defer" => Some(Self::SwaitDefer),
            _ => None,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Self::WaitQueue => "waitqueue",
            Self::Swait => "swait",
            Self::SwaitDefer => "swait-defer",
        }
    }

    /// The largest value `done` can hold.
    fn done_max(&self) -> u32 {
        match self {
            Self::SwaitDefer => u16::MAX as u32,
            _ => u32::MAX,
        }
    }
}

/// struct completion
#[derive(Clone, Debug, Default)]
pub struct Completion {
    pub done: u32,
    /// COMPLETION_DEFER (swait-defer only).
    pub defer: bool,
    pub wait: SwaitQueue,
    /// Index into `Completions::classes`.
    pub class: usize,
}

/// The sleep state a wait_for_completion variant uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SleepState {
    /// TASK_UNINTERRUPTIBLE: wait_for_completion, _timeout, _io.
    Uninterruptible,
    /// TASK_INTERRUPTIBLE: _interruptible: any signal ends the wait.
    Interruptible,
    /// TASK_KILLABLE: _killable: only a fatal signal ends the wait.
    Killable,
}

/// Which wait_for_completion variant an op calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitHow {
    pub state: SleepState,
    /// _io: io_schedule, the sleep counts as iowait.
    pub io: bool,
    /// _timeout: give up after this long.
    pub timeout: Option<u64>,
}

impl WaitHow {
    pub const PLAIN: WaitHow = WaitHow {
        state: SleepState::Uninterruptible,
        io: false,
        timeout: None,
    };
    pub const KILLABLE: WaitHow = WaitHow {
        state: SleepState::Killable,
        io: false,
        timeout: None,
    };
}

/// How a wait ended (the return value's meaning).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitResult {
    Completed,
    /// 0 from a _timeout variant.
    TimedOut,
    /// -ERESTARTSYS from an interruptible variant (the signal is then
    /// handled and consumed).
    Interrupted,
    /// -ERESTARTSYS because of a fatal signal: the task exits.
    Killed,
}

/// A task inside do_wait_for_common.
#[derive(Clone, Copy, Debug)]
struct Waiting {
    how: WaitHow,
    deadline: Option<Time>,
}

/// A swait_stat class: per complete()/complete_all() call that found
/// waiters, how many (1, 2, 3, 4+).
#[derive(Clone, Debug, Default, Serialize)]
pub struct CompletionClass {
    pub name: String,
    pub waiters: [u64; 4],
    /// Calls that found nobody waiting (the token is kept in `done`).
    pub no_waiter: u64,
}

/// Completion counters of a run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CompletionStats {
    pub complete: u64,
    pub complete_all: u64,
    pub waits: u64,
    /// Waits that returned with the completion done.
    pub completed: u64,
    /// Waits that had to sleep.
    pub waits_slept: u64,
    pub io_waits: u64,
    pub timeouts: u64,
    pub interrupted: u64,
    pub try_wait_ok: u64,
    pub try_wait_failed: u64,
    pub done_checks: u64,
    /// complete_all calls that deferred the wakeups to the first waiter.
    pub deferred: u64,
    /// Wakeups done by a first waiter on behalf of complete_all.
    pub deferred_wakeups: u64,
    /// Waiters a complete_all could not release because `done` is too
    /// small (swait-defer: more than 32767): they keep sleeping.
    pub waiters_over_limit: u64,
    /// complete/complete_all calls whose addition wrapped `done`.
    pub done_wrapped: u64,
}

/// Every completion of a run, its classes and counters.
#[derive(Clone, Debug, Default)]
pub struct Completions {
    pub variant: CompletionVariant,
    pub list: Vec<Completion>,
    pub classes: Vec<CompletionClass>,
    pub stats: CompletionStats,
    waiting: BTreeMap<Pid, Waiting>,
    /// p->vfork_done: the completion a vfork parent waits on.
    pub vfork_done: BTreeMap<Pid, usize>,
    /// Pending signals: true when fatal (SIGKILL).
    pub signals: BTreeMap<Pid, bool>,
}

/// What complete()/complete_all() decided under the lock: whom to wake, in
/// order, and whether the lock (and interrupts) is dropped between two
/// wakeups.
pub struct Wakes {
    pub tasks: VecDeque<Pid>,
    pub lock_dropped_between: bool,
}

impl Completions {
    pub fn new(variant: CompletionVariant) -> Self {
        Completions {
            variant,
            ..Completions::default()
        }
    }

    /// The class named `name`, created on first use.
    fn class(&mut self, name: &str) -> usize {
        match self.classes.iter().position(|c| c.name == name) {
            Some(i) => i,
            None => {
                self.classes.push(CompletionClass {
                    name: name.to_string(),
                    ..CompletionClass::default()
                });
                self.classes.len() - 1
            }
        }
    }

    /// The swait_stat histogram summed over classes ("1", "2", "3", "4+").
    pub fn waiters_hist(&self) -> [u64; 4] {
        let mut h = [0; 4];
        for c in &self.classes {
            for (i, n) in c.waiters.iter().enumerate() {
                h[i] += n;
            }
        }
        h
    }

    fn record_waiters(&mut self, c: usize, n: usize) {
        let class = &mut self.classes[self.list[c].class];
        match n {
            0 => class.no_waiter += 1,
            n => class.waiters[n.min(4) - 1] += 1,
        }
    }

    /// Add `n` to `done` the way the variant's type does, counting wraps.
    fn add_done(&mut self, c: usize, n: u32) {
        let max = self.variant.done_max();
        let x = &mut self.list[c];
        let sum = x.done as u64 + n as u64;
        if sum > max as u64 {
            self.stats.done_wrapped += 1;
        }
        x.done = (sum & max as u64) as u32;
    }

    /// The consuming `done--` of a waiter or try_wait_for_completion
    /// (mainline leaves the saturated UINT_MAX alone).
    fn consume(&mut self, c: usize) {
        let x = &mut self.list[c];
        if self.variant != CompletionVariant::Swait || x.done != u32::MAX {
            x.done -= 1;
        }
    }

    /// Whether a signal pending for `p` ends a sleep in `state`
    /// (signal_pending_state).
    fn signal_pending_state(&self, state: SleepState, p: Pid) -> bool {
        match (state, self.signals.get(&p)) {
            (SleepState::Uninterruptible, _) | (_, None) => false,
            (SleepState::Interruptible, Some(_)) => true,
            (SleepState::Killable, Some(&fatal)) => fatal,
        }
    }

    /// complete() / complete_all() under x->wait.lock: update `done` and
    /// choose the waiters to wake. `irqs_disabled` is the
    /// irqs_disabled_flags(flags) test of the seed's v2: true in an
    /// interrupt handler. `sleeping(p)` says whether `p` still sleeps on it
    /// (whether try_to_wake_up would succeed).
    pub fn complete_locked(
        &mut self,
        c: usize,
        all: bool,
        irqs_disabled: bool,
        sleeping: impl Fn(Pid) -> bool,
    ) -> Wakes {
        use CompletionVariant::*;
        let n = self.list[c].wait.len();
        self.record_waiters(c, n);
        let mut lock_dropped_between = false;
        let v = self.variant;
        let tasks = if !all {
            self.stats.complete += 1;
            if v == Swait && self.list[c].done == u32::MAX {
                // saturated by complete_all: stays UINT_MAX
            } else {
                self.add_done(c, 1);
            }
            match v {
                // __wake_up_locked(nr_exclusive 1): the first entry whose
                // task is still asleep; woken entries stay queued.
                WaitQueue => self.list[c]
                    .wait
                    .iter()
                    .find(|&q| sleeping(q))
                    .into_iter()
                    .collect(),
                Swait | SwaitDefer => self.list[c].wait.swake_up_locked().into_iter().collect(),
            }
        } else {
            self.stats.complete_all += 1;
            match v {
                WaitQueue => {
                    self.add_done(c, u32::MAX / 2);
                    self.check_limit(c, n);
                    self.list[c].wait.iter().filter(|&q| sleeping(q)).collect()
                }
                Swait => {
                    self.list[c].done = u32::MAX;
                    self.list[c].wait.splice_all()
                }
                SwaitDefer => {
                    self.add_done(c, u16::MAX as u32 / 2);
                    self.check_limit(c, n);
                    if irqs_disabled {
                        self.stats.deferred += 1;
                        self.list[c].defer = true;
                        self.list[c].wait.swake_up_locked().into_iter().collect()
                    } else {
                        lock_dropped_between = true;
                        self.list[c].wait.splice_all()
                    }
                }
            }
        };
        Wakes {
            tasks,
            lock_dropped_between,
        }
    }

    /// complete_all with more waiters than `done` can release: the extra
    /// ones wake (or are woken later), find done at 0 and sleep again.
    fn check_limit(&mut self, c: usize, waiters: usize) {
        let done = self.list[c].done as usize;
        if waiters > done {
            self.stats.waiters_over_limit += (waiters - done) as u64;
        }
    }
}

/// Whether `p` sleeps in do_wait_for_common on `c` (whether
/// try_to_wake_up would succeed).
pub fn sleeps_on(tasks: &[super::task::Task], p: Pid, c: usize) -> bool {
    let t = &tasks[p];
    t.state == TaskState::Interruptible && t.prog.blocked == Blocked::Completion(c)
}

impl Kernel {
    /// init_completion with a swait_stat class name.
    pub fn completion_new(&mut self, class: &str) -> usize {
        let class = self.completions.class(class);
        self.completions.list.push(Completion {
            class,
            ..Completion::default()
        });
        self.completions.list.len() - 1
    }

    /// reinit_completion: done (and, in v2, the flags) back to 0.
    pub fn reinit_completion(&mut self, c: usize) {
        let x = &mut self.completions.list[c];
        x.done = 0;
        x.defer = false;
    }

    /// complete() or complete_all() from task `p` (process context, on
    /// `cpu`): the waker pays for the wakeups. The lock is held with
    /// interrupts off across all of them, except in v2's
    /// swake_up_all_locked, which drops it between two wakeups.
    pub fn complete_from_task(&mut self, c: usize, all: bool, cpu: usize, p: Pid) {
        let tasks = &self.tasks;
        let wakes = self
            .completions
            .complete_locked(c, all, false, |q| sleeps_on(tasks, q, c));
        self.wake_list(wakes, cpu, Some(p));
    }

    /// Wake `wakes` from `cpu` in process context, recording the
    /// interrupts-off sections.
    fn wake_list(&mut self, wakes: Wakes, cpu: usize, waker: Option<Pid>) {
        let mut section = 0;
        for q in wakes.tasks {
            let (_, ns) = self.wake_timed(q, cpu, waker);
            section += ns;
            if wakes.lock_dropped_between {
                self.irqs.record_off(cpu, section);
                section = 0;
            }
        }
        if section > 0 {
            self.irqs.record_off(cpu, section);
        }
    }

    /// try_wait_for_completion: take a token without sleeping.
    pub fn try_wait_for_completion(&mut self, c: usize) -> bool {
        if self.completions.list[c].done == 0 {
            self.completions.stats.try_wait_failed += 1;
            return false;
        }
        self.completions.consume(c);
        self.completions.stats.try_wait_ok += 1;
        true
    }

    /// completion_done: would a waiter pass without sleeping?
    pub fn completion_done(&mut self, c: usize) -> bool {
        self.completions.stats.done_checks += 1;
        self.completions.list[c].done != 0
    }

    /// wait_for_completion and its variants (do_wait_for_common), called
    /// when `p` first reaches the wait and again each time it is woken.
    /// None: `p` went to sleep.
    pub fn wait_for_completion(
        &mut self,
        p: Pid,
        c: usize,
        how: WaitHow,
        cpu: usize,
    ) -> Option<WaitResult> {
        let cs = &mut self.completions;
        let resumed = cs.waiting.get(&p).copied();
        if resumed.is_none() {
            cs.stats.waits += 1;
        }
        // The loop's order: `done` first; after a sleep the expired timeout
        // ends the loop before the signal check; before the first sleep the
        // signal is checked, then schedule_timeout(0) returns at once.
        let expired = resumed
            .and_then(|w| w.deadline)
            .is_some_and(|d| self.now >= d);
        let result = if cs.list[c].done > 0 {
            cs.consume(c);
            cs.stats.completed += 1;
            WaitResult::Completed
        } else if expired {
            cs.stats.timeouts += 1;
            WaitResult::TimedOut
        } else if cs.signal_pending_state(how.state, p) {
            cs.stats.interrupted += 1;
            match cs.signals.remove(&p) {
                Some(true) => WaitResult::Killed,
                _ => WaitResult::Interrupted,
            }
        } else if resumed.is_none() && how.timeout == Some(0) {
            cs.stats.timeouts += 1;
            WaitResult::TimedOut
        } else {
            self.completion_sleep(p, c, how, resumed, cpu);
            return None;
        };
        let cs = &mut self.completions;
        cs.list[c].wait.finish(p);
        if cs.waiting.remove(&p).is_some_and(|w| w.deadline.is_some()) {
            self.events.cancel(EventKind::Timer, p);
        }
        self.after_wait(c, cpu, p);
        Some(result)
    }

    /// Queue `p` at the tail (if not queued) and sleep, arming the timeout
    /// on the first sleep.
    fn completion_sleep(
        &mut self,
        p: Pid,
        c: usize,
        how: WaitHow,
        resumed: Option<Waiting>,
        cpu: usize,
    ) {
        let cs = &mut self.completions;
        cs.list[c].wait.prepare(p);
        let deadline = match resumed {
            Some(w) => w.deadline,
            None => {
                cs.stats.waits_slept += 1;
                cs.stats.io_waits += how.io as u64;
                how.timeout.map(|t| self.now + t)
            }
        };
        cs.waiting.insert(p, Waiting { how, deadline });
        let t = &mut self.tasks[p];
        t.state = TaskState::Interruptible;
        t.prog.blocked = Blocked::Completion(c);
        if let (None, Some(d)) = (resumed, deadline) {
            self.arm_task_timer(p, cpu, d);
        }
    }

    /// The v2 tail of __wait_for_common: the first waiter to return after a
    /// deferred complete_all wakes the others, lock dropped between two.
    fn after_wait(&mut self, c: usize, cpu: usize, p: Pid) {
        let x = &mut self.completions.list[c];
        if !x.defer {
            return;
        }
        x.defer = false;
        let tasks = x.wait.splice_all();
        self.completions.stats.deferred_wakeups += tasks.len() as u64;
        let wakes = Wakes {
            tasks,
            lock_dropped_between: true,
        };
        self.wake_list(wakes, cpu, Some(p));
    }

    /// Whether `p`'s timer event should wake it: a nanosleep, or a
    /// completion wait whose timeout has come.
    pub fn timer_wakes(&self, p: Pid) -> bool {
        match self.tasks[p].prog.blocked {
            Blocked::Timer => true,
            Blocked::Completion(_) => self
                .completions
                .waiting
                .get(&p)
                .and_then(|w| w.deadline)
                .is_some_and(|d| self.now >= d),
            _ => false,
        }
    }

    /// Whether `p` sleeps where a completion or a timeout will find it
    /// (for the lost-wakeup check).
    pub fn completion_can_wake(&self, p: Pid, c: usize) -> bool {
        self.completions.list[c].wait.contains(p)
            || self
                .completions
                .waiting
                .get(&p)
                .is_some_and(|w| w.deadline.is_some())
            || self.irqs.will_wake(p)
    }

    /// kill(2): make a signal pending for `target` and wake it if it sleeps
    /// in a state the signal interrupts (signal_wake_up). A signal only
    /// matters to completion waits in this model.
    pub fn send_signal(&mut self, target: Pid, fatal: bool, cpu: usize, sender: Pid) {
        let e = self.completions.signals.entry(target).or_insert(false);
        *e |= fatal;
        if let Some(w) = self.completions.waiting.get(&target).copied() {
            if self.completions.signal_pending_state(w.how.state, target) {
                self.try_to_wake_up(target, 0, cpu, Some(sender));
            }
        }
    }

    /// mm_release at exec or exit: complete_vfork_done wakes a vfork parent.
    pub fn mm_release(&mut self, p: Pid, cpu: usize) {
        if let Some(c) = self.completions.vfork_done.remove(&p) {
            self.complete_from_task(c, false, cpu, p);
        }
    }

    /// try_to_wake_up from `cpu` and the time the waker spends on it: what
    /// try_to_wake_up charges a waker (`CostModel::ttwu_waker_ns` for the
    /// path it took, the wait for another CPU's rq lock, the spin on a
    /// wakee still switching out, the select_idle_cpu scan, the IPI's send
    /// if one was needed, `count_ipi`).
    /// An interrupt handler (`waker` None: a timer or irq calling
    /// complete()) spends the same as a task: the kernel's try_to_wake_up
    /// (v4.13 core.c, read) has no in_interrupt() branch. A task pays it
    /// as its overhead; a handler's time is its caller's to account.
    pub fn wake_timed(&mut self, p: Pid, cpu: usize, waker: Option<Pid>) -> (bool, u64) {
        let before = waker.map_or(0, |w| self.tasks[w].prog.overhead);
        self.irq_waker_ns = waker.is_none().then_some(0);
        let woken = self.try_to_wake_up(p, 0, cpu, waker);
        let irq_ns = self.irq_waker_ns.take().unwrap_or(0);
        if !woken {
            return (false, 0);
        }
        let ns = match waker {
            Some(w) => self.tasks[w].prog.overhead - before,
            None => irq_ns,
        };
        (true, ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(variant: CompletionVariant, waiters: &[Pid]) -> Completions {
        let mut cs = Completions::new(variant);
        let class = cs.class("test");
        let mut x = Completion {
            class,
            ..Completion::default()
        };
        for &p in waiters {
            x.wait.prepare(p);
        }
        cs.list.push(x);
        cs
    }

    #[test]
    fn complete_all_saturates_or_adds_half_range() {
        let mut cs = with(CompletionVariant::Swait, &[]);
        cs.complete_locked(0, true, false, |_| true);
        assert_eq!(cs.list[0].done, u32::MAX);
        cs.complete_locked(0, false, false, |_| true);
        cs.consume(0);
        assert_eq!(cs.list[0].done, u32::MAX, "sticky until reinit");

        let mut cs = with(CompletionVariant::WaitQueue, &[]);
        cs.complete_locked(0, true, false, |_| true);
        assert_eq!(cs.list[0].done, u32::MAX / 2);
        cs.consume(0);
        assert_eq!(cs.list[0].done, u32::MAX / 2 - 1);

        let mut cs = with(CompletionVariant::SwaitDefer, &[]);
        cs.complete_locked(0, true, false, |_| true);
        assert_eq!(cs.list[0].done, 32767);
        cs.complete_locked(0, true, false, |_| true);
        cs.complete_locked(0, true, false, |_| true);
        assert_eq!(cs.list[0].done, (3 * 32767) & 0xffff, "16 bits wrap");
        assert_eq!(cs.stats.done_wrapped, 1);
    }

    #[test]
    fn defer_wakes_only_the_first_waiter_from_an_interrupt() {
        let mut cs = with(CompletionVariant::SwaitDefer, &[4, 5, 6]);
        let w = cs.complete_locked(0, true, true, |_| true);
        assert_eq!(w.tasks, VecDeque::from(vec![4]));
        assert!(cs.list[0].defer);
        assert_eq!(cs.list[0].wait.len(), 2);
        // From a task, v2 wakes everyone but drops the lock in between.
        let mut cs = with(CompletionVariant::SwaitDefer, &[4, 5, 6]);
        let w = cs.complete_locked(0, true, false, |_| true);
        assert_eq!(w.tasks.len(), 3);
        assert!(w.lock_dropped_between && !cs.list[0].defer);
        assert_eq!(cs.classes[0].waiters, [0, 0, 1, 0]);
    }

    #[test]
    fn waitqueue_entries_stay_until_the_waiter_leaves() {
        let mut cs = with(CompletionVariant::WaitQueue, &[1, 2]);
        let w = cs.complete_locked(0, false, false, |_| true);
        assert_eq!(w.tasks, VecDeque::from(vec![1]));
        assert_eq!(cs.list[0].wait.len(), 2);
        // Task 1 is awake but still queued: the next complete skips it.
        let w = cs.complete_locked(0, false, false, |p| p != 1);
        assert_eq!(w.tasks, VecDeque::from(vec![2]));
        assert_eq!(cs.classes[0].waiters, [0, 2, 0, 0]);
    }

    #[test]
    fn too_many_waiters_for_sixteen_bits_are_counted() {
        let waiters: Vec<Pid> = (0..40_000).collect();
        let mut cs = with(CompletionVariant::SwaitDefer, &waiters);
        cs.complete_locked(0, true, false, |_| true);
        assert_eq!(cs.stats.waiters_over_limit, 40_000 - 32_767);
        let mut cs = with(CompletionVariant::Swait, &waiters);
        cs.complete_locked(0, true, false, |_| true);
        assert_eq!(cs.stats.waiters_over_limit, 0);
    }

    #[test]
    fn signals_follow_the_sleep_state() {
        let mut cs = with(CompletionVariant::Swait, &[]);
        cs.signals.insert(7, false);
        assert!(cs.signal_pending_state(SleepState::Interruptible, 7));
        assert!(!cs.signal_pending_state(SleepState::Killable, 7));
        assert!(!cs.signal_pending_state(SleepState::Uninterruptible, 7));
        cs.signals.insert(7, true);
        assert!(cs.signal_pending_state(SleepState::Killable, 7));
    }
}
