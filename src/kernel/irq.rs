//! Device interrupts and interrupts-off time.
//!
//! A device raises its interrupt on one CPU, either periodically or a fixed
//! latency after a task starts an I/O. The handler runs with interrupts
//! off: entry, then its action (complete or complete_all on a
//! completion, waking the chosen waiters one after the other, each costing
//! the waker's share of try_to_wake_up), then exit; the interrupted task
//! resumes at irq exit, which is a preemption point. An interrupt that
//! arrives during a context switch waits for its end (interrupts are off
//! there too); one that arrives at an idle CPU first pays the idle state's
//! exit latency.
//!
//! Interrupts-off sections are recorded per CPU: every handler, and every
//! process-context hold of a completion's lock that woke someone.

use super::task::Pid;
use super::Kernel;
use crate::engine::{EventKind, Time};
use std::collections::{BTreeSet, VecDeque};

/// What a device's handler does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqAction {
    Complete(usize),
    CompleteAll(usize),
}

/// One simulated device.
#[derive(Clone, Debug)]
pub struct Device {
    pub name: String,
    /// The CPU its interrupt is routed to (/proc/irq/N/smp_affinity).
    pub cpu: usize,
    /// Fires every `period` when set.
    pub period: Option<u64>,
    /// From a task's start-I/O to the interrupt.
    pub latency: u64,
    pub action: IrqAction,
    pub fired: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Idle exit and irq entry; the action runs next.
    Entry,
    /// Waking the waiters the action chose.
    Waking,
    /// irq exit; the CPU resumes next.
    Exit,
}

/// A handler running on a CPU.
#[derive(Clone, Debug)]
struct Handler {
    dev: usize,
    /// When interrupts went off (handler entry).
    start: Time,
    stage: Stage,
    wakes: VecDeque<Pid>,
}

/// Per-CPU interrupt state.
#[derive(Clone, Debug, Default)]
pub struct IrqCpu {
    /// Raised interrupts: (time, sequence, device).
    pending: BTreeSet<(Time, u64, usize)>,
    active: Option<Handler>,
    /// Interrupts-off sections, ns.
    pub off: Vec<u64>,
}

/// All devices and per-CPU interrupt state.
#[derive(Clone, Debug, Default)]
pub struct Irqs {
    pub devices: Vec<Device>,
    pub cpus: Vec<IrqCpu>,
    seq: u64,
}

impl Irqs {
    pub fn new(ncpus: usize) -> Self {
        Irqs {
            cpus: vec![IrqCpu::default(); ncpus],
            ..Irqs::default()
        }
    }

    /// A CPU was in an interrupts-off section for `ns`.
    pub fn record_off(&mut self, cpu: usize, ns: u64) {
        self.cpus[cpu].off.push(ns);
    }

    /// Whether `cpu` is running (or entering) a handler.
    pub fn in_handler(&self, cpu: usize) -> bool {
        self.cpus[cpu].active.is_some()
    }

    /// Whether a running handler has `p` on its list still to wake.
    pub fn will_wake(&self, p: Pid) -> bool {
        self.cpus
            .iter()
            .any(|c| c.active.as_ref().is_some_and(|h| h.wakes.contains(&p)))
    }

    /// All sections of all CPUs, sorted.
    pub fn all_sorted(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .cpus
            .iter()
            .flat_map(|c| c.off.iter().copied())
            .collect();
        v.sort_unstable();
        v
    }

    pub fn handled(&self) -> u64 {
        self.devices.iter().map(|d| d.fired).sum()
    }
}

/// The `q`-quantile (0..=1) of sorted samples, nearest rank; 0 if empty.
pub fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

impl Kernel {
    /// Register a device; a periodic one first fires one period in.
    pub fn irq_device_new(&mut self, dev: Device) -> usize {
        let at = dev.period.map(|p| self.now + p);
        self.irqs.devices.push(dev);
        let d = self.irqs.devices.len() - 1;
        if let Some(at) = at {
            self.raise_irq(d, at);
        }
        d
    }

    /// A task started an I/O on device `d`: its interrupt follows.
    pub fn start_io(&mut self, d: usize) {
        let at = self.now + self.irqs.devices[d].latency;
        self.raise_irq(d, at);
    }

    fn raise_irq(&mut self, d: usize, at: Time) {
        let cpu = self.irqs.devices[d].cpu;
        self.irqs.seq += 1;
        let seq = self.irqs.seq;
        self.irqs.cpus[cpu].pending.insert((at, seq, d));
        self.arm_next_irq(cpu);
    }

    /// Point the CPU's interrupt event at its earliest pending interrupt
    /// (unless a handler runs: interrupts are off).
    fn arm_next_irq(&mut self, cpu: usize) {
        let ic = &self.irqs.cpus[cpu];
        if ic.active.is_some() {
            return;
        }
        if let Some(&(at, ..)) = ic.pending.first() {
            self.events.push(at.max(self.now), EventKind::Irq, cpu);
        }
    }

    /// The CPU's interrupt event: deliver a pending interrupt, or take the
    /// running handler's next step.
    pub fn on_irq(&mut self, cpu: usize) {
        if self.irqs.cpus[cpu].active.is_some() {
            return self.irq_step(cpu);
        }
        let Some(&(at, seq, d)) = self.irqs.cpus[cpu].pending.first() else {
            return;
        };
        use super::core::Activity;
        let start = match self.rqs[cpu].act {
            Activity::Switching { end, .. } => {
                self.events.push(end, EventKind::Irq, cpu);
                return;
            }
            Activity::Idle { since } => {
                let exit = self.idle_state_at(self.now - since).exit_latency_ns;
                self.leave_idle(cpu);
                self.now + exit
            }
            _ => {
                self.stop_segment(cpu);
                self.now
            }
        };
        self.irqs.cpus[cpu].pending.remove(&(at, seq, d));
        let dev = &mut self.irqs.devices[d];
        dev.fired += 1;
        if let Some(p) = dev.period {
            self.raise_irq(d, at + p);
        }
        self.irqs.cpus[cpu].active = Some(Handler {
            dev: d,
            start,
            stage: Stage::Entry,
            wakes: VecDeque::new(),
        });
        let half = self.machine.cost.irq_entry_exit_ns / 2;
        self.events.push(start + half, EventKind::Irq, cpu);
    }

    /// One step of the handler on `cpu`.
    fn irq_step(&mut self, cpu: usize) {
        let h = self.irqs.cpus[cpu].active.as_mut().expect("active handler");
        if h.stage == Stage::Entry {
            let (c, all) = match self.irqs.devices[h.dev].action {
                IrqAction::Complete(c) => (c, false),
                IrqAction::CompleteAll(c) => (c, true),
            };
            let tasks = &self.tasks;
            let wakes = self
                .completions
                .complete_locked(c, all, true, |q| super::completion::sleeps_on(tasks, q, c));
            let h = self.irqs.cpus[cpu].active.as_mut().expect("active handler");
            h.wakes = wakes.tasks;
            h.stage = Stage::Waking;
        }
        let h = self.irqs.cpus[cpu].active.as_mut().expect("active handler");
        if h.stage == Stage::Waking {
            while let Some(q) = self.irqs.cpus[cpu]
                .active
                .as_mut()
                .and_then(|h| h.wakes.pop_front())
            {
                let (woken, ns) = self.wake_timed(q, cpu, None);
                if woken {
                    self.events.push(self.now + ns, EventKind::Irq, cpu);
                    return;
                }
            }
            self.irqs.cpus[cpu].active.as_mut().expect("active").stage = Stage::Exit;
            let half = self.machine.cost.irq_entry_exit_ns / 2;
            self.events.push(self.now + half, EventKind::Irq, cpu);
            return;
        }
        let h = self.irqs.cpus[cpu].active.take().expect("active handler");
        self.irqs.record_off(cpu, self.now - h.start);
        self.irq_exit(cpu);
        self.arm_next_irq(cpu);
    }

    /// irq_exit: a preemption point. The interrupted task resumes (or is
    /// preempted); an idle CPU schedules whatever was woken onto it, or
    /// goes back to idle.
    fn irq_exit(&mut self, cpu: usize) {
        // A wakelist IPI that came in meanwhile is taken now.
        if self.rqs[cpu].ttwu_pending {
            self.sched_ttwu_pending(cpu);
        }
        if self.rqs[cpu].curr.is_none() {
            // An idle CPU: the switch to a woken task (if any) dispatches
            // it when it ends.
            self.schedule(cpu, super::core::SchedMode::Voluntary);
        } else {
            self.dispatch(cpu);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(quantile(&v, 0.5), 50);
        assert_eq!(quantile(&v, 0.99), 99);
        assert_eq!(quantile(&v, 1.0), 100);
        assert_eq!(quantile(&[], 0.5), 0);
        assert_eq!(quantile(&[7], 0.01), 7);
    }
}
