//! The idle loop (kernel/sched/idle.c do_idle, cpuidle_idle_call) and the
//! cpuidle governors' two answers: which idle state, and whether the tick
//! may stop (`stop_tick` → tick_nohz_idle_stop_tick, else
//! tick_nohz_idle_retain_tick).
//!
//! **The state** is modelled as a ladder: an idle CPU polls first (the
//! cpuidle POLL state, TIF_POLLING_NRFLAG set, so a wakeup needs no IPI),
//! and moves to each deeper state once it has been idle for that state's
//! target residency. The menu/teo governors predict the idle length instead;
//! the ladder is their behaviour when the prediction is "as long as so far".
//! On x86 bare metal the deeper states keep TIF_POLLING_NRFLAG as well
//! (MWAIT on the thread flags, `IdleState::mwait`), so a wakeup needs no
//! IPI there either, only the state's exit latency.
//!
//! **The tick** follows each governor's `stop_tick` as the kernel computes
//! it. It is decided when the CPU goes idle and again at every tick that
//! wakes it (each wakeup ends one cpuidle_enter and the idle loop selects
//! again); once stopped it stays stopped until the CPU leaves idle
//! (`stop_tick || tick_nohz_tick_stopped()`). An idle CPU whose tick runs
//! does the tick's balancing itself (sched_tick → sched_balance_trigger with
//! rq->idle_balance set) and is not in nohz.idle_cpus_mask.
//! - No cpuidle driver, or a driver with one state: the idle loop skips the
//!   governor and stops the tick only once the tick has woken the CPU in
//!   this idle period (mainline f4c31b07b136, 2026, also in 6.6/6.12
//!   stable; before it no driver always stopped the tick and one state
//!   never did).
//! - menu (menu_select): the prediction is the smaller of the time to the
//!   next timer armed on this CPU and get_typical_interval over the last 8
//!   measured idle intervals; the tick is kept when it is shorter than
//!   TICK_USEC or the state it picks polls. menu's per-bucket correction
//!   factor is taken as 1 (its initial value): the simulated timers are the
//!   workloads' own, exact, and the typical interval carries the history.
//!   A tick wakeup with no timer due within the tick is recorded as 45 ms
//!   (9/10 of MAX_INTERESTING), as menu_update does.
//! - teo (teo_select) reduced to its tick decision: the tick is kept when
//!   the next timer is within a tick, or when recent idle periods shorter
//!   than a tick ("intercepts") outweigh the longer ones in teo's decaying
//!   sums (DECAY_SHIFT 3, PULSE 1024). Only the TICK_NSEC bin boundary
//!   matters for the tick, so only those two bins are kept.
//! - haltpoll (haltpoll_select): with a poll window (`poll_limit_ns` > 0)
//!   it polls with the tick kept, then halts with the tick stopped; the
//!   window adapts as haltpoll_reflect → adjust_poll_limit does
//!   (grow ×2 from 50 µs up to guest_halt_poll_ns, shrink ÷2 after a long
//!   halt). With guest_halt_poll_ns = 0 (this VM) it always halts and
//!   stops the tick.

use super::Kernel;
use crate::engine::{EventKind, Time};
use crate::machine::cost::Governor;
use crate::machine::IdleState;

/// menu: INTERVALS, the measured idle intervals kept per CPU.
const INTERVALS: usize = 8;
/// menu_update: a tick wakeup when no timer was due within the tick counts
/// as 9/10 of MAX_INTERESTING (50 ms), in µs.
const MENU_TICK_WAKEUP_US: u64 = 45_000;
/// teo: PULSE added to the bin an idle period falls in; sums decay by
/// 1/2^DECAY_SHIFT per period.
const TEO_PULSE: u64 = 1024;
const TEO_DECAY_SHIFT: u32 = 3;
/// haltpoll: guest_halt_poll_grow_start (ns), grow and shrink factors.
const HALTPOLL_GROW_START_NS: u64 = 50_000;
const HALTPOLL_GROW: u64 = 2;
const HALTPOLL_SHRINK: u64 = 2;

/// One CPU's governor state (struct menu_device, teo_cpu, and the
/// cpuidle_device fields haltpoll uses).
#[derive(Clone, Debug, Default)]
pub struct GovCpu {
    /// menu: the last measured idle intervals in µs, and the next slot.
    intervals: [u64; INTERVALS],
    ptr: usize,
    /// Time to the next timer at the last select, µs (u64::MAX: none).
    next_timer_us: u64,
    /// When the current cpuidle_enter began.
    iter_start: Time,
    /// teo: decaying sums of idle periods shorter and not shorter than a tick.
    teo_short: u64,
    teo_long: u64,
    /// haltpoll: dev->poll_limit_ns, and when the current poll window ends
    /// (0: halting, no window).
    poll_limit_ns: u64,
    poll_until: Time,
}

impl Kernel {
    /// The idle state a CPU idle for `idle_for` ns is in.
    pub fn idle_state_at(&self, idle_for: u64) -> &IdleState {
        let states = &self.machine.cost.idle_states;
        states
            .iter()
            .rev()
            .find(|s| s.target_residency_ns <= idle_for)
            .unwrap_or(&states[0])
    }

    /// cpuidle_idle_call on entering the idle loop: the governor's first
    /// select decides whether the tick stops now.
    pub(crate) fn cpuidle_enter(&mut self, cpu: usize) {
        self.cpuidle[cpu].iter_start = self.now;
        if self.machine.cost.governor == Governor::Haltpoll {
            self.haltpoll_select(cpu);
        }
        if self.stop_tick(cpu, false) {
            self.stop_idle_tick(cpu);
        }
    }

    /// A tick woke the idle CPU: the governor reflects on the period that
    /// ended and selects again; true when the tick must stop now.
    pub(crate) fn cpuidle_tick(&mut self, cpu: usize) -> bool {
        if self.machine.cost.governor != Governor::Haltpoll {
            self.cpuidle_reflect(cpu, true);
        }
        self.stop_tick(cpu, true)
    }

    /// An interrupt woke the idle CPU without work for it: the idle loop
    /// goes round again (haltpoll's poll loop absorbs it).
    pub(crate) fn cpuidle_irq(&mut self, cpu: usize) {
        if self.machine.cost.governor == Governor::Haltpoll {
            return;
        }
        self.cpuidle_reflect(cpu, false);
        if self.rqs[cpu].tick_on && self.stop_tick(cpu, false) {
            self.stop_idle_tick(cpu);
        }
    }

    /// Leaving the idle loop: the governor reflects on the last period.
    pub(crate) fn cpuidle_exit(&mut self, cpu: usize) {
        if self.machine.cost.governor == Governor::Haltpoll {
            self.haltpoll_reflect(cpu);
        } else {
            self.cpuidle_reflect(cpu, false);
        }
    }

    /// tick_nohz_idle_stop_tick: the idle CPU's tick stops and it joins
    /// nohz.idle_cpus_mask.
    pub(crate) fn stop_idle_tick(&mut self, cpu: usize) {
        let rq = &mut self.rqs[cpu];
        if rq.tick_on {
            rq.tick_on = false;
            self.stats.nohz_tick_stops += 1;
            self.events.cancel(EventKind::Tick, cpu);
        }
    }

    /// The governor's `stop_tick` answer for an idle CPU; `got_tick`: a
    /// tick woke it in the previous iteration of the idle loop.
    fn stop_tick(&mut self, cpu: usize, got_tick: bool) -> bool {
        let c = &self.machine.cost;
        match c.governor {
            Governor::Haltpoll => {
                // Polling keeps the tick until the window ends.
                let next_tick = self.events.pending_time(EventKind::Tick, cpu);
                next_tick.is_none_or(|t| t >= self.cpuidle[cpu].poll_until)
            }
            _ if c.governor == Governor::None || c.idle_states.len() <= 1 => got_tick,
            Governor::Menu => self.menu_stop_tick(cpu),
            _ => self.teo_stop_tick(cpu),
        }
    }

    /// Arm task `p`'s timer (a sleep or a wait's timeout) on `cpu` for `at`,
    /// and index it under the CPU for the governors' next-timer lookup.
    pub fn arm_task_timer(&mut self, p: usize, cpu: usize, at: Time) {
        self.tasks[p].timer_cpu = cpu;
        self.events.push(at, EventKind::Timer, p);
        let timers = &self.cpu_timers[cpu];
        if timers.len() == timers.capacity() {
            self.sweep_stale_timers(cpu);
        }
        self.cpu_timers[cpu].push(std::cmp::Reverse((at, p)));
    }

    /// Whether `cpu`'s indexed timer (at, p) still stands (not fired,
    /// cancelled or re-armed).
    fn timer_stands(&self, cpu: usize, at: Time, p: usize) -> bool {
        self.events.pending_time(EventKind::Timer, p) == Some(at) && self.tasks[p].timer_cpu == cpu
    }

    /// Drop every stale timer of `cpu`'s index once it fills its
    /// allocation, and make room for twice the timers that stand, at
    /// least 8 more: O(1) per timer armed, in memory a few times the
    /// timers armed. (Popping
    /// the stale ones at each arm took 2 % of periodic-64's instructions,
    /// while the index is read only when the CPU goes idle.)
    #[cold]
    #[inline(never)]
    fn sweep_stale_timers(&mut self, cpu: usize) {
        let mut timers = std::mem::take(&mut self.cpu_timers[cpu]);
        timers.retain(|&std::cmp::Reverse((at, p))| self.timer_stands(cpu, at, p));
        timers.reserve(timers.len().max(8));
        self.cpu_timers[cpu] = timers;
    }

    /// Pop `cpu`'s earliest indexed timers that no longer stand.
    fn drop_stale_timers(&mut self, cpu: usize) {
        while let Some(&std::cmp::Reverse((at, p))) = self.cpu_timers[cpu].peek() {
            if self.timer_stands(cpu, at, p) {
                return;
            }
            self.cpu_timers[cpu].pop();
        }
    }

    /// The earliest task timer armed on `cpu` (tick_nohz_get_sleep_length
    /// without the tick), µs from now; u64::MAX if none.
    fn next_timer_us(&mut self, cpu: usize) -> u64 {
        self.drop_stale_timers(cpu);
        self.cpu_timers[cpu]
            .peek()
            .map_or(u64::MAX, |r| r.0 .0.saturating_sub(self.now) / 1000)
    }

    /// menu_select's stop_tick.
    fn menu_stop_tick(&mut self, cpu: usize) -> bool {
        let next = self.next_timer_us(cpu);
        self.cpuidle[cpu].next_timer_us = next;
        let states = &self.machine.cost.idle_states;
        if next < states[1].target_residency_ns / 1000 {
            // state[0] whatever the history; the tick stays if it polls.
            return !states[0].polling;
        }
        let predicted = next.min(typical_interval(&self.cpuidle[cpu].intervals, next));
        let pick = states
            .iter()
            .take_while(|s| s.target_residency_ns / 1000 <= predicted)
            .take_while(|s| s.exit_latency_ns / 1000 <= predicted)
            .last()
            .unwrap_or(&states[0]);
        predicted >= self.tick_ns / 1000 && !pick.polling
    }

    /// teo_select's stop_tick, from the two tick-sized bins.
    fn teo_stop_tick(&mut self, cpu: usize) -> bool {
        let next = self.next_timer_us(cpu);
        self.cpuidle[cpu].next_timer_us = next;
        let g = &self.cpuidle[cpu];
        next >= self.tick_ns / 1000 && 2 * g.teo_short <= g.teo_short + g.teo_long
    }

    /// menu_update / teo_update: record the idle period that just ended.
    fn cpuidle_reflect(&mut self, cpu: usize, tick_wakeup: bool) {
        let tick_us = self.tick_ns / 1000;
        let now = self.now;
        let g = &mut self.cpuidle[cpu];
        let long_timer = g.next_timer_us > tick_us;
        let measured = if tick_wakeup && long_timer {
            MENU_TICK_WAKEUP_US
        } else {
            now.saturating_sub(g.iter_start) / 1000
        };
        g.intervals[g.ptr] = measured;
        g.ptr = (g.ptr + 1) % INTERVALS;
        g.teo_short -= g.teo_short >> TEO_DECAY_SHIFT;
        g.teo_long -= g.teo_long >> TEO_DECAY_SHIFT;
        if measured < tick_us {
            g.teo_short += TEO_PULSE;
        } else {
            g.teo_long += TEO_PULSE;
        }
        g.iter_start = now;
    }

    /// haltpoll_select at idle entry: poll for the window if there is one,
    /// else halt.
    fn haltpoll_select(&mut self, cpu: usize) {
        let g = &mut self.cpuidle[cpu];
        g.poll_until = match g.poll_limit_ns {
            0 => 0,
            limit => self.now + limit,
        };
    }

    /// haltpoll_reflect: a wakeup inside the poll window changes nothing;
    /// after a halt, adjust_poll_limit by how long the halt lasted.
    fn haltpoll_reflect(&mut self, cpu: usize) {
        let max = self.machine.cost.guest_halt_poll_ns;
        let now = self.now;
        let g = &mut self.cpuidle[cpu];
        if now < g.poll_until {
            return;
        }
        let block_ns = now - g.poll_until.max(g.iter_start);
        if block_ns > g.poll_limit_ns && block_ns <= max {
            let grown = (g.poll_limit_ns * HALTPOLL_GROW).max(HALTPOLL_GROW_START_NS);
            g.poll_limit_ns = grown.min(max);
        } else if block_ns > max {
            g.poll_limit_ns /= HALTPOLL_SHRINK;
        }
    }
}

/// menu's get_typical_interval: the mean of the recorded intervals when
/// they are steady (stddev ≤ 20 µs, or mean > 6 stddev), discarding the
/// largest as outliers down to 3/4 of them; u64::MAX when there is no
/// typical interval or it would not beat `predicted`.
fn typical_interval(intervals: &[u64; INTERVALS], predicted: u64) -> u64 {
    let mut thresh = u64::MAX;
    loop {
        let kept = || intervals.iter().copied().filter(|&v| v <= thresh);
        let n = kept().count() as u128;
        let (min, max) = (kept().min().unwrap_or(0), kept().max().unwrap_or(0));
        if n == 0 || min >= predicted {
            return u64::MAX;
        }
        let avg = kept().map(u128::from).sum::<u128>() / n;
        let var = kept()
            .map(|v| (v as u128).abs_diff(avg).pow(2))
            .sum::<u128>()
            / n;
        let steady = (avg * avg > var * 36 && 4 * n >= 3 * INTERVALS as u128) || var <= 400;
        if steady {
            return avg as u64;
        }
        if 4 * n <= 3 * INTERVALS as u128 {
            return u64::MAX;
        }
        thresh = max - 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::core::Activity;

    const NOW: u64 = 1_000_000;

    /// CPU 0 kicks CPU 1 (a wakelist wakeup or resched_curr) after CPU 1
    /// has been idle `idle_ns`: the kernel, and how long until CPU 1 acts.
    fn kick_idle(spec: &str, idle_ns: u64) -> (Kernel, u64) {
        let m = crate::machine::from_spec(spec).unwrap();
        // Noise off: costs exactly as the machine gives them.
        let mut cfg = crate::kernel::features::KernelConfig::default();
        cfg.noise.enabled = false;
        let mut k = Kernel::new(m, cfg);
        k.now = NOW;
        k.rqs[1].act = Activity::Idle {
            since: NOW - idle_ns,
        };
        k.kick_cpu(1, Some(0), 0);
        let at = k.events.pending_time(EventKind::Resched, 1).unwrap();
        (k, at - NOW)
    }

    /// (IPIs sent, IPIs avoided, CPU 1's IPIs received, CPU 1's irq time)
    fn ipi_counts(k: &Kernel) -> (u64, u64, u64, u64) {
        let (st, rq) = (&k.stats, &k.rqs[1]);
        let received = rq.stats.ipis_received;
        (st.ipis_sent, st.ipis_avoided_polling, received, rq.irq_ns)
    }

    #[test]
    fn a_cpu_in_an_mwait_state_wakes_on_the_flag_write_without_an_ipi() {
        // 5 µs idle on xeon-8269cy: past POLL's window (C1's 2 µs
        // residency), short of C1E's 20 µs: intel_idle's C1, an MWAIT state.
        let (k, delay) = kick_idle("xeon-8269cy", 5_000);
        let c1 = k.idle_state_at(5_000).clone();
        assert_eq!(
            (c1.name.as_str(), c1.polling, c1.mwait),
            ("C1", false, true)
        );
        assert_eq!(ipi_counts(&k), (0, 1, 0, 0));
        assert!(k.rqs[1].need_resched);
        // Only C1's exit latency: no send, no flight, no irq entry/exit.
        assert_eq!(delay, c1.exit_latency_ns);
        // Milan's I/O-port C2 (idle 1 ms > its 800 µs residency) needs one.
        let (k, delay) = kick_idle("milan-256", 1_000_000);
        let c2 = k.idle_state_at(1_000_000).clone();
        assert_eq!((c2.name.as_str(), c2.mwait), ("C2", false));
        let c = &k.machine.cost;
        assert_eq!(ipi_counts(&k), (1, 0, 1, c.irq_entry_exit_ns));
        let ipi = c.ipi_send_ns + c.ipi_latency_ns;
        assert_eq!(delay, ipi + c2.exit_latency_ns);
        // Its FFH C1 does not.
        let (k, _) = kick_idle("milan-256", 100_000);
        assert_eq!(ipi_counts(&k), (0, 1, 0, 0));
    }

    #[test]
    fn a_halted_guest_cpu_takes_an_ipi() {
        let (k, delay) = kick_idle("vm-2", 5_000);
        let st = k.idle_state_at(5_000).clone();
        assert!(!st.tif_polling(), "{st:?}");
        let c = &k.machine.cost;
        assert_eq!(ipi_counts(&k), (1, 0, 1, c.irq_entry_exit_ns));
        let ipi = c.ipi_send_ns + c.ipi_latency_ns;
        assert_eq!(delay, ipi + st.exit_latency_ns);
    }

    #[test]
    fn typical_interval_like_menu() {
        // Steady 1 ms periods are typical.
        assert_eq!(typical_interval(&[1000; 8], u64::MAX), 1000);
        // Two long outliers are discarded; the other six are steady.
        let mixed = [1000, 1010, 45_000, 990, 1000, 45_000, 1000, 1000];
        assert_eq!(typical_interval(&mixed, u64::MAX), 1000);
        // What is left after discarding the largest is not steady either.
        let noisy = [1000, 45_000, 45_000, 3000, 1000, 45_000, 200, 1000];
        assert_eq!(typical_interval(&noisy, u64::MAX), u64::MAX);
        // A known timer sooner than every interval wins.
        assert_eq!(typical_interval(&[1000; 8], 500), u64::MAX);
    }
}
