//! Run-to-run noise (issue 20, part 5): what makes two runs of the same
//! benchmark on a real machine differ, drawn from seeded streams of its
//! own, so a scenario and seed still give byte-identical output and turning
//! noise off does not change any task's own random draws.
//!
//! The streams are order-free (issue 33, part 1; engine/mod.rs's rule):
//! counter-based `Stream`s, one per task, one per CPU for the costs its
//! interrupts and switches are charged, one per CPU for its background
//! interrupts' arrivals, each seeded from (run seed, owner). A cost of a
//! task's own doing (its syscalls and pipe/socket work, the wakeups it
//! does, its timer slack) draws from that task's stream; a cost of a CPU's
//! (tick, interrupt entry, idle exit, context switch, a wakelist's
//! activations, an IPI's sending and latency, a wakeup from interrupt
//! context) from that CPU's. So a draw depends on how many draws its
//! owner made before, never on what other tasks and CPUs did in between or
//! in which order the engine handled simultaneous events; and each CPU's
//! background interrupts fall at instants fixed by the seed alone.
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

use super::task::Pid;
use super::Kernel;
use crate::engine::{EventKind, Stream, Time};
use serde::Serialize;

mod quantiles;

/// Stream ids (`Stream`, apart from the `Rng` ids of the tasks' programs,
/// 0, 1, 2, ..., and of sched_rng, 2^62 + cpu): the tick phase, then a
/// base per family plus the task's pid or the CPU's number.
const PHASE_STREAM: u64 = u64::MAX;
const TASK_STREAMS: u64 = 2 << 62;
const CPU_STREAMS: u64 = 3 << 62;
const IRQ_STREAMS: u64 = (3 << 62) | (1 << 61);
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

/// Whose noise stream a draw comes from: who pays the cost drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    Task(Pid),
    Cpu(usize),
}

/// The noise state of one run.
#[derive(Clone, Debug)]
pub struct Noise {
    pub cfg: NoiseConfig,
    seed: u64,
    /// Per task (by pid; grown as tasks appear): its costs and timer slack.
    task: Vec<Stream>,
    /// Per CPU: the costs it pays.
    cpu: Vec<Stream>,
    /// Per CPU: its background interrupts' arrivals.
    irq: Vec<Stream>,
    /// The tick's phase, ns after each jiffy boundary.
    pub phase: Time,
    /// Lognormal cost factors (empty: costs do not vary).
    factors: Vec<u32>,
    /// Background interrupts taken.
    pub irqs: u64,
    /// A timer slack (ns) and the uniform draw at or below which a
    /// background interrupt's wait is surely that long or longer
    /// (`slack_floor`).
    floor: (u64, f64),
}

impl Noise {
    /// The noise of a run with seed `seed` on `ncpus` CPUs; `tick_ns` is
    /// TICK_NSEC.
    pub fn new(cfg: &NoiseConfig, seed: u64, tick_ns: u64, ncpus: usize) -> Self {
        let factors = if cfg.enabled && cfg.cost_cv > 0.0 {
            lognormal_table(cfg.cost_cv)
        } else {
            Vec::new()
        };
        Self::with_factors(cfg, seed, tick_ns, ncpus, factors)
    }

    /// The same with the factor table of `cfg` already built.
    fn with_factors(
        cfg: &NoiseConfig,
        seed: u64,
        tick_ns: u64,
        ncpus: usize,
        factors: Vec<u32>,
    ) -> Self {
        let phase = if cfg.enabled && cfg.tick_phase {
            Stream::new(seed, PHASE_STREAM).range(0, tick_ns - 1)
        } else {
            0
        };
        let per_cpu = |base: u64| {
            (0..ncpus as u64)
                .map(|c| Stream::new(seed, base + c))
                .collect()
        };
        Noise {
            cfg: cfg.clone(),
            seed,
            task: Vec::new(),
            cpu: per_cpu(CPU_STREAMS),
            irq: per_cpu(IRQ_STREAMS),
            phase,
            factors,
            irqs: 0,
            floor: (0, 0.0),
        }
    }

    /// The uniform draw u (of `1 - next_f64`) at or below which
    /// `exp_wait`'s wait, `-ln(u) / rate`, is `slack` ns or longer, with a
    /// margin of a millionth for the rounding of `ln` and `exp`: a sleep
    /// timer's draw needs its logarithm only above it (one in a thousand
    /// at 20 Hz and 50 µs). Kept for the last slack asked.
    fn slack_floor(&mut self, slack: u64) -> f64 {
        if self.floor.0 != slack {
            let rate = self.cfg.irq_rate_hz;
            let floor = (-(slack as f64) * rate / 1e9).exp() * (1.0 - 1e-6);
            self.floor = (slack, floor);
        }
        self.floor.1
    }

    /// The stream of `by`.
    fn stream(&mut self, by: By) -> &mut Stream {
        match by {
            By::Cpu(c) => &mut self.cpu[c],
            By::Task(p) => {
                if p >= self.task.len() {
                    self.add_task_streams(p);
                }
                &mut self.task[p]
            }
        }
    }

    /// Draws taken so far from task `p`'s stream (a folded read's undo
    /// point, kernel/fold.rs).
    pub fn task_draws(&mut self, p: usize) -> u64 {
        self.stream(By::Task(p)).taken
    }

    /// Take task `p`'s stream back to `taken` draws: the draws after it
    /// will be made again, with the same values.
    pub fn rewind_task(&mut self, p: usize, taken: u64) {
        self.stream(By::Task(p)).taken = taken;
    }

    /// Give tasks up to `p` their streams (once per task: kept out of
    /// `stream`, which runs at every cost drawn).
    #[cold]
    fn add_task_streams(&mut self, p: usize) {
        let seed = self.seed;
        let ids = self.task.len() as u64..=p as u64;
        self.task
            .extend(ids.map(|i| Stream::new(seed, TASK_STREAMS + i)));
    }
}

/// An exponential wait with mean 1/rate_hz seconds, ns, from `s` (None:
/// rate 0, and no draw).
fn exp_wait(s: &mut Stream, rate_hz: f64) -> Option<u64> {
    (rate_hz > 0.0).then(|| wait_ns(1.0 - s.next_f64(), rate_hz))
}

/// The exponential wait (ns) of uniform draw `u` in (0, 1] at `rate_hz`.
fn wait_ns(u: f64, rate_hz: f64) -> u64 {
    (-u.ln() / rate_hz * 1e9) as u64
}

/// FACTORS quantiles of the lognormal with mean 1 and coefficient of
/// variation `cv`, rescaled so their mean is exactly 1 (the normal
/// quantiles from `quantiles::Z`: 1024 `exp`s per run).
fn lognormal_table(cv: f64) -> Vec<u32> {
    let sigma = (1.0 + cv * cv).ln().sqrt();
    let mu = -sigma * sigma / 2.0;
    let q: Vec<f64> = quantiles::Z
        .iter()
        .map(|z| (mu + sigma * z).exp())
        .collect();
    let mean = q.iter().sum::<f64>() / FACTORS as f64;
    q.iter()
        .map(|v| (v / mean * (1u64 << FIX_SHIFT) as f64).round() as u32)
        .collect()
}

/// The standard normal quantile of `p`, by bisection on Φ (how
/// `quantiles::Z` was made).
#[cfg(test)]
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
#[cfg(test)]
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
    /// unless that changed.
    pub fn seed(&mut self, seed: u64) {
        self.lb.seed(seed);
        let ncpus = self.rqs.len();
        let (old, cfg) = (&self.noise.cfg, &self.cfg.noise);
        if old.enabled != cfg.enabled || old.cost_cv != cfg.cost_cv {
            self.noise = Noise::new(cfg, seed, self.tick_ns, ncpus);
            return;
        }
        let factors = std::mem::take(&mut self.noise.factors);
        self.noise = Noise::with_factors(&self.cfg.noise, seed, self.tick_ns, ncpus, factors);
    }

    /// One charged cost with its run-to-run variation (`noise.cost_cv`):
    /// `ns` times a lognormal factor of mean 1, drawn from the stream of
    /// `by`, who pays it; `ns` itself (and no draw) with noise off or a
    /// zero cost. Every cost the kernel or a workload charges goes through
    /// here.
    pub fn vary(&mut self, ns: u64, by: By) -> u64 {
        let n = self.noise.factors.len();
        if ns == 0 || n == 0 {
            return ns;
        }
        let i = self.noise.stream(by).range(0, n as u64 - 1) as usize;
        let f = self.noise.factors[i];
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

    /// When task `p`'s hrtimer with soft expiry `at` and `slack` fires on
    /// `cpu`: at the first hrtimer interrupt in [at, at + slack] (the CPU's
    /// tick if it runs, a background timer interrupt, drawn from `p`'s
    /// stream), else at the hard expiry.
    pub(crate) fn slack_expiry(&mut self, p: Pid, cpu: usize, at: Time, slack: u64) -> Time {
        let hard = at + slack;
        if slack == 0 || !self.noise.cfg.enabled || !self.noise.cfg.timer_slack {
            return hard;
        }
        let mut fire = hard;
        if self.rqs[cpu].tick_on {
            let tick = self.next_tick_after(at.saturating_sub(1));
            fire = fire.min(tick.max(at));
        }
        let rate = self.noise.cfg.irq_rate_hz;
        if rate > 0.0 {
            // exp_wait's draw; a wait of `slack` or longer leaves `fire`
            // (at most `hard`) as it is, so its logarithm is not needed.
            let floor = self.noise.slack_floor(slack);
            let u = 1.0 - self.noise.stream(By::Task(p)).next_f64();
            if u > floor {
                fire = fire.min(at + wait_ns(u, rate));
            }
        }
        fire
    }

    /// Arm every CPU's first background interrupt (at the start of a run).
    pub fn start_noise_irqs(&mut self) {
        for cpu in 0..self.rqs.len() {
            self.arm_noise_irq(cpu);
        }
    }

    /// Arm `cpu`'s next background interrupt, an exponential wait from its
    /// own arrival stream: the k-th interrupt's instant depends on the seed
    /// and the CPU only.
    fn arm_noise_irq(&mut self, cpu: usize) {
        if !self.noise.cfg.enabled {
            return;
        }
        let rate = self.noise.cfg.irq_rate_hz;
        if let Some(w) = exp_wait(&mut self.noise.irq[cpu], rate) {
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
        let ns = self.vary(ns, By::Cpu(cpu));
        match (self.rqs[cpu].act, self.rqs[cpu].curr) {
            (super::core::Activity::Running { .. }, Some(p)) => {
                self.stop_segment(cpu);
                self.irq_on_task(p, ns);
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
    fn the_stored_quantiles_are_the_bisections_bit_for_bit() {
        for (i, z) in quantiles::Z.iter().enumerate() {
            let p = (i as f64 + 0.5) / FACTORS as f64;
            assert_eq!(z.to_bits(), normal_quantile(p).to_bits(), "Z[{i}]");
        }
    }

    #[test]
    fn the_stream_is_its_own_and_off_is_exact() {
        let cfg = NoiseConfig::default();
        let a = Noise::new(&cfg, 7, 4_000_000, 4);
        let b = Noise::new(&cfg, 7, 4_000_000, 4);
        let c = Noise::new(&cfg, 8, 4_000_000, 4);
        assert_eq!(a.phase, b.phase);
        assert_ne!(a.phase, c.phase);
        assert!(a.phase < 4_000_000);
        let off = NoiseConfig {
            enabled: false,
            ..cfg
        };
        let n = Noise::new(&off, 7, 4_000_000, 4);
        assert_eq!((n.phase, n.factors.len()), (0, 0));
    }

    #[test]
    fn a_draw_depends_on_its_owner_only() {
        // Task 5's and CPU 2's draws are the same whatever other tasks and
        // CPUs draw in between (a task that appears late included), and
        // differ between owners.
        let cfg = NoiseConfig::default();
        let draws =
            |n: &mut Noise, by: By| (0..20).map(|_| n.stream(by).next_u64()).collect::<Vec<_>>();
        let mut alone = Noise::new(&cfg, 7, 4_000_000, 4);
        let (t_alone, c_alone) = (
            draws(&mut alone, By::Task(5)),
            draws(&mut alone, By::Cpu(2)),
        );
        let mut mixed = Noise::new(&cfg, 7, 4_000_000, 4);
        let (mut t, mut c) = (Vec::new(), Vec::new());
        for k in 0..20 {
            mixed.stream(By::Cpu([0, 1, 3][k % 3])).next_u64();
            t.push(mixed.stream(By::Task(5)).next_u64());
            mixed.stream(By::Task(40 + k)).next_u64();
            c.push(mixed.stream(By::Cpu(2)).next_u64());
        }
        assert_eq!((t, c), (t_alone.clone(), c_alone.clone()));
        assert_ne!(t_alone, c_alone);
        assert_ne!(alone.irq[2].at(0), alone.cpu[2].at(0));
    }

    #[test]
    fn a_draw_at_or_below_the_slack_floor_waits_the_slack_or_longer() {
        // Every draw the floor lets skip its logarithm gives a wait of at
        // least the slack (so the timer's expiry cannot move), and draws
        // just above it give shorter ones: the floor is within a millionth
        // of the exact boundary, on the safe side.
        for (rate, slack) in [(20.0, 50_000), (1000.0, 50_000), (20.0, 1), (5e5, 100_000)] {
            let cfg = NoiseConfig {
                irq_rate_hz: rate,
                ..NoiseConfig::default()
            };
            let mut n = Noise::new(&cfg, 7, 4_000_000, 4);
            let floor = n.slack_floor(slack);
            let mut s = Stream::new(3, 0);
            for k in 0..20_000 {
                let u = floor * (1.0 - s.next_f64() * [1e-3, 1e-9][k % 2]);
                assert!(wait_ns(u, rate) >= slack, "{rate} Hz, {slack} ns: u {u}");
            }
            assert!(wait_ns(floor, rate) >= slack);
            let above = floor * (1.0 + 2e-6);
            assert!(
                above > 1.0 || wait_ns(above, rate) < slack,
                "{rate} {slack}"
            );
        }
    }
}
