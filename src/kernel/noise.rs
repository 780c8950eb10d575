//! Run-to-run noise (issue 20, part 5): what makes two runs of the same
//! benchmark on a real machine differ, drawn from one seeded stream of its
//! own, so a scenario and seed still give byte-identical output and turning
//! noise off does not change any task's own random draws.
//!
//! Sources, each with its own `noise.*` key (scenario `[noise]` table):
//! - `tick_phase`: where the tick falls relative to the workload's start.
//!   One global phase, uniform in [0, TICK_NSEC): ticks are not skewed per
//!   CPU (sched_skew_tick defaults to 0).
//! - `cost_cv`: every cost the kernel and the workloads charge (syscalls,
//!   pipe/socket work, context switches, wakeups, IPI latency and sending,
//!   idle exits, interrupt entry/exit, the tick) is multiplied by a
//!   lognormal factor of mean 1 and this coefficient of variation, so the
//!   mean costs (and everything fitted to them) do not move.
//! - `timer_slack`: a fair task's hrtimer sleep has soft expiry T and hard
//!   expiry T + timer_slack_ns (RT tasks: no slack). It fires at the first
//!   hrtimer interrupt on its CPU at or after T (__hrtimer_run_queues runs
//!   every timer whose soft expiry has passed), else at T + slack. With the
//!   source on, that interrupt is the CPU's tick when the tick runs there
//!   at arming time, or a background timer interrupt (the `irq_rate_hz`
//!   Poisson stream); off, always T + slack.
//! - `irq_rate_hz`, `irq_ns`: per CPU, Poisson-distributed interrupts and
//!   kworker bursts that steal `irq_ns` from the running task (irq time)
//!   or wake an idle CPU out of its idle state for nothing.

use super::Kernel;
use crate::engine::{EventKind, Rng, Time};
use serde::Serialize;

/// The RNG stream id of the noise (task streams are 0, 1, 2, ...).
const NOISE_STREAM: u64 = u64::MAX;
/// Cost factors: a table of lognormal quantiles in 16.16 fixed point, one
/// picked per charge (no transcendental function on the hot path).
const FACTORS: usize = 1024;
const FIX_SHIFT: u32 = 16;

/// The resolved `noise.*` settings (JSON `sim.noise`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NoiseConfig {
    /// Master switch; false gives exact runs (tests, debugging).
    pub enabled: bool,
    /// Random tick phase.
    pub tick_phase: bool,
    /// Coefficient of variation of each charged cost. Default 0.10 from
    /// this VM (2026-11-23, docs/host-measurements.md §12): a pinned pipe
    /// round trip (~10 kernel operations) spreads p10–p90 1.86–2.12 µs
    /// (cv ≈ 5 %, ≈ 15 % per operation if they varied independently), and
    /// getppid in batches of 10 79–84 ns (≈ 7 % per call).
    pub cost_cv: f64,
    /// Noise-driven firing inside the timer-slack window.
    pub timer_slack: bool,
    /// Background interrupts per CPU per second. Default 20 from this VM's
    /// /proc/interrupts (§12): device, IRQ-work and hypervisor interrupts
    /// ~2/s per CPU, plus the timer-driven housekeeping (vmstat, RCU,
    /// writeback kworkers) of an idle Linux system, estimated at ~20/s per
    /// CPU (the VM was loaded by builds, so LOC could not be split).
    pub irq_rate_hz: f64,
    /// Length of one background interrupt, ns. Default 5 µs (estimate: an
    /// injected interrupt with its VM exits ~2 µs, a short kworker pass).
    pub irq_ns: u64,
}

impl Default for NoiseConfig {
    fn default() -> Self {
        NoiseConfig {
            enabled: true,
            tick_phase: true,
            cost_cv: 0.10,
            timer_slack: true,
            irq_rate_hz: 20.0,
            irq_ns: 5_000,
        }
    }
}

impl NoiseConfig {
    /// The keys of `[noise]`.
    pub const KEYS: [&'static str; 6] = [
        "enabled",
        "tick_phase",
        "cost_cv",
        "timer_slack",
        "irq_rate_hz",
        "irq_ns",
    ];
}

/// The noise state of one run.
#[derive(Clone, Debug)]
pub struct Noise {
    pub cfg: NoiseConfig,
    rng: Rng,
    /// The tick's phase, ns after each jiffy boundary.
    pub phase: Time,
    /// Lognormal cost factors (empty: costs do not vary).
    factors: Vec<u32>,
    /// Background interrupts taken.
    pub irqs: u64,
}

impl Noise {
    /// The noise of a run with seed `seed`; `tick_ns` is TICK_NSEC.
    pub fn new(cfg: &NoiseConfig, seed: u64, tick_ns: u64) -> Self {
        let factors = if cfg.enabled && cfg.cost_cv > 0.0 {
            lognormal_table(cfg.cost_cv)
        } else {
            Vec::new()
        };
        Self::with_factors(cfg, seed, tick_ns, factors)
    }

    /// The same with the factor table of `cfg` already built.
    fn with_factors(cfg: &NoiseConfig, seed: u64, tick_ns: u64, factors: Vec<u32>) -> Self {
        let mut rng = Rng::new(seed, NOISE_STREAM);
        let phase = if cfg.enabled && cfg.tick_phase {
            rng.range(0, tick_ns - 1)
        } else {
            0
        };
        Noise {
            cfg: cfg.clone(),
            rng,
            phase,
            factors,
            irqs: 0,
        }
    }

    /// An exponential wait with mean 1/rate_hz seconds, ns (None: rate 0).
    fn exp_wait(&mut self, rate_hz: f64) -> Option<u64> {
        (rate_hz > 0.0).then(|| {
            let u = 1.0 - self.rng.next_f64();
            (-u.ln() / rate_hz * 1e9) as u64
        })
    }
}

/// FACTORS quantiles of the lognormal with mean 1 and coefficient of
/// variation `cv`, rescaled so their mean is exactly 1.
fn lognormal_table(cv: f64) -> Vec<u32> {
    let sigma = (1.0 + cv * cv).ln().sqrt();
    let mu = -sigma * sigma / 2.0;
    let q: Vec<f64> = (0..FACTORS)
        .map(|i| (mu + sigma * normal_quantile((i as f64 + 0.5) / FACTORS as f64)).exp())
        .collect();
    let mean = q.iter().sum::<f64>() / FACTORS as f64;
    q.iter()
        .map(|v| (v / mean * (1u64 << FIX_SHIFT) as f64).round() as u32)
        .collect()
}

/// The standard normal quantile of `p`, by bisection on Φ.
fn normal_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (-8.0f64, 8.0f64);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if 0.5 * (1.0 + erf(mid / std::f64::consts::SQRT_2)) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// erf (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7).
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let y = 1.0 - poly * (-x * x).exp();
    y.copysign(x)
}

impl Kernel {
    /// Seed the run's random streams (the scenario's `sim.seed`): its noise
    /// and each CPU's sched_rng.
    /// The factor table depends only on the configuration: it is kept
    /// unless that changed (building it is 61 k bisection steps, a few ms
    /// per run).
    pub fn seed(&mut self, seed: u64) {
        self.lb.seed(seed);
        let (old, cfg) = (&self.noise.cfg, &self.cfg.noise);
        if old.enabled != cfg.enabled || old.cost_cv != cfg.cost_cv {
            self.noise = Noise::new(cfg, seed, self.tick_ns);
            return;
        }
        let factors = std::mem::take(&mut self.noise.factors);
        self.noise = Noise::with_factors(&self.cfg.noise, seed, self.tick_ns, factors);
    }

    /// One charged cost with its run-to-run variation (`noise.cost_cv`):
    /// `ns` times a lognormal factor of mean 1; `ns` itself with noise off.
    /// Every cost the kernel or a workload charges goes through here.
    pub fn vary(&mut self, ns: u64) -> u64 {
        let n = self.noise.factors.len();
        if ns == 0 || n == 0 {
            return ns;
        }
        let f = self.noise.factors[self.noise.rng.range(0, n as u64 - 1) as usize];
        (ns * f as u64 + (1 << (FIX_SHIFT - 1))) >> FIX_SHIFT
    }

    /// The first tick boundary after now (ticks fall at `phase` + k·TICK).
    pub(crate) fn next_tick_after(&self, t: Time) -> Time {
        let phase = self.noise.phase;
        if t < phase {
            return phase;
        }
        phase + ((t - phase) / self.tick_ns + 1) * self.tick_ns
    }

    /// When an hrtimer with soft expiry `at` and `slack` fires on `cpu`:
    /// at the first hrtimer interrupt in [at, at + slack] (the CPU's tick
    /// if it runs, a background timer interrupt), else at the hard expiry.
    pub(crate) fn slack_expiry(&mut self, cpu: usize, at: Time, slack: u64) -> Time {
        let hard = at + slack;
        if slack == 0 || !self.noise.cfg.enabled || !self.noise.cfg.timer_slack {
            return hard;
        }
        let mut fire = hard;
        if self.rqs[cpu].tick_on {
            let tick = self.next_tick_after(at.saturating_sub(1));
            fire = fire.min(tick.max(at));
        }
        if let Some(w) = self.noise.exp_wait(self.noise.cfg.irq_rate_hz) {
            fire = fire.min(at + w);
        }
        fire
    }

    /// Arm every CPU's first background interrupt (at the start of a run).
    pub fn start_noise_irqs(&mut self) {
        for cpu in 0..self.rqs.len() {
            self.arm_noise_irq(cpu);
        }
    }

    fn arm_noise_irq(&mut self, cpu: usize) {
        if !self.noise.cfg.enabled {
            return;
        }
        if let Some(w) = self.noise.exp_wait(self.noise.cfg.irq_rate_hz) {
            self.events
                .push(self.now + w.max(1), EventKind::NoiseIrq, cpu);
        }
    }

    /// A background interrupt on `cpu`: the running task loses `irq_ns`
    /// (irq time; a preemption point on the way out), an idle CPU wakes
    /// from its idle state and its idle loop selects again, a CPU in the
    /// scheduler takes it when it next runs a task.
    pub fn on_noise_irq(&mut self, cpu: usize) {
        self.noise.irqs += 1;
        self.arm_noise_irq(cpu);
        let ns = self.noise.cfg.irq_ns;
        let ns = self.vary(ns);
        match (self.rqs[cpu].act, self.rqs[cpu].curr) {
            (super::core::Activity::Running { .. }, Some(p)) => {
                self.stop_segment(cpu);
                self.tasks[p].prog.overhead += ns;
                self.update_irq_load_avg(cpu, ns);
                self.dispatch(cpu);
            }
            (super::core::Activity::Idle { .. }, _) => self.cpuidle_irq(cpu),
            _ => self.rqs[cpu].irq_ns += ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_factors_have_mean_one_and_the_asked_spread() {
        let t = lognormal_table(0.10);
        let f: Vec<f64> = t.iter().map(|&v| v as f64 / 65536.0).collect();
        let mean = f.iter().sum::<f64>() / f.len() as f64;
        let sd = (f.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / f.len() as f64).sqrt();
        assert!((mean - 1.0).abs() < 1e-4, "{mean}");
        assert!((sd - 0.10).abs() < 0.01, "{sd}");
        assert!(f.windows(2).all(|w| w[0] <= w[1]));
        assert!((normal_quantile(0.975) - 1.96).abs() < 1e-3);
    }

    #[test]
    fn the_stream_is_its_own_and_off_is_exact() {
        let cfg = NoiseConfig::default();
        let a = Noise::new(&cfg, 7, 4_000_000);
        let b = Noise::new(&cfg, 7, 4_000_000);
        let c = Noise::new(&cfg, 8, 4_000_000);
        assert_eq!(a.phase, b.phase);
        assert_ne!(a.phase, c.phase);
        assert!(a.phase < 4_000_000);
        let off = NoiseConfig {
            enabled: false,
            ..cfg
        };
        let n = Noise::new(&off, 7, 4_000_000);
        assert_eq!((n.phase, n.factors.len()), (0, 0));
    }
}
