//! The run queue's own load tracking (kernel/sched/pelt.c and pelt.h):
//! rq_clock_pelt, which runs slower on a CPU of smaller capacity and
//! catches up with the task clock while the CPU idles (capacity
//! invariance); the utilisation of the rt, dl and irq classes; and
//! scale_rt_capacity, the capacity they leave to the fair class.
//!
//! No CPU runs below its highest frequency here (no cpufreq model), so the
//! frequency factor (arch_scale_freq_capacity) is always 1024. avg_dl
//! follows SCHED_DEADLINE tasks; the fair server's time is accounted to the
//! fair tasks it runs, as in the kernel.

use super::pelt::{
    update_load_avg, update_load_sum, SchedAvg, LOAD_AVG_MAX, SCHED_CAPACITY_SCALE,
    SCHED_CAPACITY_SHIFT,
};
use super::Kernel;

/// Per-CPU PELT state beyond the cfs_rqs. In `repr(C)` order: the clock,
/// which every PELT update reads, last, beside the root cfs_rq's hot
/// fields that follow it in `Rq`.
#[derive(Clone, Debug, Default)]
#[repr(C)]
pub struct RqPelt {
    pub avg_rt: SchedAvg,
    pub avg_dl: SchedAvg,
    pub avg_irq: SchedAvg,
    /// rq->clock_pelt as of `at` (the last busy↔idle transition).
    clock_pelt: u64,
    at: u64,
    /// rq->lost_idle_time: the clock_pelt deficit of a CPU that was always
    /// running when it went idle.
    lost_idle_time: u64,
}

impl Kernel {
    fn arch_capacity(&self, cpu: usize) -> u64 {
        self.machine.cpus[cpu].capacity as u64
    }

    /// rq_clock_pelt before lost idle time is taken off: the task clock
    /// while idle, else scaled by the CPU's capacity since the last
    /// transition (update_rq_clock_pelt).
    fn raw_clock_pelt(&self, cpu: usize) -> u64 {
        let rq = &self.rqs[cpu];
        let cap = self.arch_capacity(cpu);
        if rq.is_idle() || cap == SCHED_CAPACITY_SCALE {
            return self.now;
        }
        let p = &rq.pelt;
        p.clock_pelt + (((self.now - p.at) * cap) >> SCHED_CAPACITY_SHIFT)
    }

    /// rq_clock_pelt: the clock of every PELT signal on `cpu`. On a CPU of
    /// full capacity it is the task clock.
    pub fn clock_pelt(&self, cpu: usize) -> u64 {
        self.raw_clock_pelt(cpu) - self.rqs[cpu].pelt.lost_idle_time
    }

    /// update_idle_rq_clock_pelt, on the way into idle: a CPU that had no
    /// idle time left (util_sum at its maximum) counts the gap between the
    /// task clock and its slower PELT clock as lost, so its utilisation can
    /// reach its full capacity; then the PELT clock catches up.
    pub(super) fn pelt_enter_idle(&mut self, cpu: usize) {
        let clock = self.raw_clock_pelt(cpu);
        let divider = ((LOAD_AVG_MAX - 1024) << SCHED_CAPACITY_SHIFT) - LOAD_AVG_MAX;
        let rq = &mut self.rqs[cpu];
        let p = &mut rq.pelt;
        let util_sum = rq.cfs.avg.util_sum + p.avg_rt.util_sum + p.avg_dl.util_sum;
        if util_sum >= divider {
            p.lost_idle_time += self.now - clock;
        }
        p.clock_pelt = self.now;
        p.at = self.now;
    }

    /// Leaving idle: the PELT clock starts from the task clock again.
    pub(super) fn pelt_leave_idle(&mut self, cpu: usize) {
        let p = &mut self.rqs[cpu].pelt;
        p.clock_pelt = self.now;
        p.at = self.now;
    }

    /// update_rt_rq_load_avg and update_dl_rq_load_avg: `rt_running`
    /// (`dl_running`) is whether an RT (DL) task ran on `cpu` since the
    /// last update.
    pub(super) fn update_rq_class_avgs(&mut self, cpu: usize, rt_running: bool, dl_running: bool) {
        let now = self.clock_pelt(cpu);
        let p = &mut self.rqs[cpu].pelt;
        let r = rt_running as u64;
        if update_load_sum(now, &mut p.avg_rt, r, r, r) {
            update_load_avg(&mut p.avg_rt, 1);
        }
        let d = dl_running as u64;
        if update_load_sum(now, &mut p.avg_dl, d, d, d) {
            update_load_avg(&mut p.avg_dl, 1);
        }
    }

    /// update_irq_load_avg (CONFIG_IRQ_TIME_ACCOUNTING): `running` ns of
    /// interrupt work just done on `cpu`, scaled to the CPU's capacity and,
    /// pessimistically, placed right before now.
    /// Inlined: every dispatch calls it, and with the accounting off (the
    /// default) it does nothing.
    #[inline]
    pub(super) fn update_irq_load_avg(&mut self, cpu: usize, running: u64) {
        if self.cfg.irq_time_accounting {
            self.update_irq_load_avg_on(cpu, running);
        }
    }

    /// update_irq_load_avg's body, with the accounting on.
    fn update_irq_load_avg_on(&mut self, cpu: usize, running: u64) {
        if running > 0 {
            self.rqs[cpu].blocked_clean = None;
        }
        let running = (running * self.arch_capacity(cpu)) >> SCHED_CAPACITY_SHIFT;
        let now = self.now;
        let sa = &mut self.rqs[cpu].pelt.avg_irq;
        let idle = update_load_sum(now.saturating_sub(running), sa, 0, 0, 0);
        let busy = update_load_sum(now, sa, 1, 1, 1);
        if idle || busy {
            update_load_avg(sa, 1);
        }
    }

    /// scale_rt_capacity: what the rt, dl and irq classes leave of the
    /// CPU's capacity to the fair class (rq->cpu_capacity, at least 1).
    pub fn capacity_of(&self, cpu: usize) -> u64 {
        let max = self.arch_capacity(cpu);
        let p = &self.rqs[cpu].pelt;
        let irq = p.avg_irq.util_avg;
        let used = p.avg_rt.util_avg + p.avg_dl.util_avg;
        if irq >= max || used >= max {
            return 1;
        }
        ((max - used) * (max - irq) / max).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's PELT clock on a half-capacity CPU busy for 10 ms
    /// advances 5 ms; idle, it catches up with the task clock.
    #[test]
    fn clock_pelt_runs_at_capacity_and_catches_up_in_idle() {
        let m = crate::machine::from_spec("smp:cpus=2").unwrap();
        let mut k = Kernel::new(m, Default::default());
        k.machine.cpus[1].capacity = 512;
        k.pelt_leave_idle(1);
        k.rqs[1].act = crate::kernel::core::Activity::Kernel;
        k.now += 10_000_000;
        assert_eq!(k.clock_pelt(1), 5_000_000);
        assert_eq!(k.clock_pelt(0), 10_000_000);
        k.pelt_enter_idle(1);
        k.rqs[1].act = crate::kernel::core::Activity::Idle { since: k.now };
        // util_sum was 0: nothing lost, the clock jumps to the task clock.
        assert_eq!(k.clock_pelt(1), 10_000_000);
    }
}
