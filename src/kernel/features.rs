//! Scheduler features (kernel/sched/features.h) and the kernel configuration
//! of a run: HZ, the fair class, the preemption model and the sysctls.

use serde::Serialize;
use std::collections::BTreeMap;

/// A `sched_feat` this model consults, with the kernel's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    PlaceLag,
    PlaceDeadlineInitial,
    PlaceRelDeadline,
    RunToParity,
    PreemptShort,
    WakeupPreemption,
    DelayDequeue,
    DelayZero,
    WaIdle,
    WaWeight,
    WaBias,
    UtilEst,
    TtwuQueue,
    SisProp,
    SisUtil,
    SwbSmtSkip,
    TgLoadAvgFilter,
    NiRandom,
}

/// (feature, kernel name, default in 6.18.y, what it does)
pub const FEATURES: &[(Feature, &str, bool, &str)] = &[
    (
        Feature::PlaceLag,
        "PLACE_LAG",
        true,
        "keep an entity's lag across sleep and re-place it with it",
    ),
    (
        Feature::PlaceDeadlineInitial,
        "PLACE_DEADLINE_INITIAL",
        true,
        "new tasks start with half a virtual slice",
    ),
    (
        Feature::PlaceRelDeadline,
        "PLACE_REL_DEADLINE",
        true,
        "keep the deadline relative across a non-sleep dequeue",
    ),
    (
        Feature::RunToParity,
        "RUN_TO_PARITY",
        true,
        "a picked task keeps the CPU to its deadline (without: 0.70 ms at most)",
    ),
    (
        Feature::PreemptShort,
        "PREEMPT_SHORT",
        true,
        "a waking task with a shorter slice may cancel curr's protection",
    ),
    (
        Feature::WakeupPreemption,
        "WAKEUP_PREEMPTION",
        true,
        "a wakeup may preempt the running task",
    ),
    (
        Feature::DelayDequeue,
        "DELAY_DEQUEUE",
        true,
        "a sleeping task with negative lag stays queued until eligible",
    ),
    (
        Feature::DelayZero,
        "DELAY_ZERO",
        true,
        "clamp the positive lag of a delayed task to zero",
    ),
    (
        Feature::WaIdle,
        "WA_IDLE",
        true,
        "wake_affine prefers an idle waker or previous CPU",
    ),
    (
        Feature::WaWeight,
        "WA_WEIGHT",
        true,
        "wake_affine compares the waker's and previous CPU's load",
    ),
    (
        Feature::WaBias,
        "WA_BIAS",
        true,
        "wake_affine_weight biases towards the previous CPU",
    ),
    (
        Feature::UtilEst,
        "UTIL_EST",
        true,
        "keep util_est, the utilization estimate of sleeping tasks",
    ),
    (
        Feature::TtwuQueue,
        "TTWU_QUEUE",
        true,
        "remote wakeups may go through the target CPU's wakelist (see kernel.wakelist)",
    ),
    // 1ad3aaf3fcd2 (v4.13); wake_avg_idle since 94aafc3ee31d (v5.14); off
    // by default since SIS_UTIL, 70fb5ccf2ebb (v6.0); removed by
    // 984ffb6a4366 (v6.7).
    (
        Feature::SisProp,
        "SIS_PROP",
        false,
        "limit select_idle_cpu's scan by the waking CPU's predicted idle time over the scan's average cost (v4.13-v6.6, on by default until v6.0; the v5.14+ form, seed 000's kernel)",
    ),
    (
        Feature::SisUtil,
        "SIS_UTIL",
        true,
        "limit select_idle_cpu's scan by the LLC's utilization (nr_idle_scan)",
    ),
    (
        Feature::SwbSmtSkip,
        "SWB_SMT_SKIP",
        true,
        "should_we_balance skips the other siblings of a busy core (seed 001; off = before it)",
    ),
    (
        Feature::TgLoadAvgFilter,
        "TG_LOAD_AVG_FILTER",
        true,
        "publish a cfs_rq's load to tg->load_avg at most once per ms and only past a 1/64 change (seed 004; off = every change)",
    ),
    (
        Feature::NiRandom,
        "NI_RANDOM",
        true,
        "newidle balance tries a domain in proportion to its success rate (6.18.5+; off = every time)",
    ),
];

/// The set of enabled features, indexed by `Feature as usize`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Features {
    on: u32,
}

impl Default for Features {
    fn default() -> Self {
        let mut on = 0;
        for (f, _, def, _) in FEATURES {
            if *def {
                on |= 1 << *f as u32;
            }
        }
        Features { on }
    }
}

impl Features {
    pub fn enabled(&self, f: Feature) -> bool {
        self.on & (1 << f as u32) != 0
    }

    /// Set one feature; `NO_NAME` is NAME negated, as in the kernel's
    /// sched_features file.
    pub fn set(&mut self, name: &str, value: bool) -> Result<(), String> {
        let find = |n: &str| FEATURES.iter().find(|(_, k, ..)| *k == n);
        let (f, value) = match (find(name), name.strip_prefix("NO_").and_then(find)) {
            (Some((f, ..)), _) => (f, value),
            (None, Some((f, ..))) => (f, !value),
            (None, None) => {
                let hint = crate::util::suggest::did_you_mean(
                    name.strip_prefix("NO_").unwrap_or(name),
                    FEATURES.iter().map(|(_, n, ..)| *n),
                );
                return Err(format!(
                    "unknown feature `{name}`{hint} (see `schedlab features`)"
                ));
            }
        };
        if value {
            self.on |= 1 << *f as u32;
        } else {
            self.on &= !(1 << *f as u32);
        }
        Ok(())
    }

    /// `"NO_PLACE_LAG RUN_TO_PARITY"`: names to turn on and `NO_` names to
    /// turn off, separated by spaces, as written to sched_features.
    pub fn set_list(&mut self, list: &str) -> Result<(), String> {
        list.split_whitespace().try_for_each(|n| self.set(n, true))
    }

    /// Every feature with its value, in the table's order.
    pub fn to_map(&self) -> BTreeMap<String, bool> {
        FEATURES
            .iter()
            .map(|(f, n, ..)| (n.to_string(), self.enabled(*f)))
            .collect()
    }
}

/// The fair-class policy: EEVDF (v6.6+) or legacy CFS (`kernel.fair`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FairClass {
    Eevdf,
    /// Legacy CFS as in v6.5 (cfs_legacy.rs).
    Cfs,
}

pub use super::preempt::PreemptModel;

/// When `ttwu_queue_cond` sends a same-LLC wakeup through the target's
/// wakelist (seed 000): before the series, after its patch 1, after patch 2
/// (mainline since v6.0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Wakelist {
    /// Only a wakee still on_cpu (WF_ON_CPU), target nr_running <= 1.
    #[serde(rename = "on_cpu_nr_le1")]
    OnCpuNrLe1,
    /// Only a wakee still on_cpu, target nr_running == 0.
    #[serde(rename = "on_cpu_nr_0")]
    OnCpuNr0,
    /// Any wakeup whose target CPU has nr_running == 0.
    #[serde(rename = "idle")]
    Idle,
}

impl Wakelist {
    pub const NAMES: [&'static str; 3] = ["on_cpu_nr_le1", "on_cpu_nr_0", "idle"];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "on_cpu_nr_le1" => Some(Wakelist::OnCpuNrLe1),
            "on_cpu_nr_0" => Some(Wakelist::OnCpuNr0),
            "idle" => Some(Wakelist::Idle),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Which per-entity load tracking the fair class keeps (`kernel.pelt`):
/// today's (descended from the v4.3 rewrite) or v3.16's (seed 004's
/// "before", `pelt316.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum PeltModel {
    #[default]
    #[serde(rename = "current")]
    Current,
    #[serde(rename = "v3.16")]
    V316,
}

impl PeltModel {
    pub const NAMES: [&'static str; 2] = ["current", "v3.16"];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "current" => Some(PeltModel::Current),
            "v3.16" => Some(PeltModel::V316),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Everything the kernel model is configured with.
#[derive(Clone, Debug)]
pub struct KernelConfig {
    pub hz: u32,
    pub fair: FairClass,
    pub preempt: PreemptModel,
    pub rt_bandwidth: super::rt::RtBandwidth,
    /// sysctl_sched_base_slice before boot scaling (normalized), ns.
    pub base_slice_ns: u64,
    /// sysctl_sched_tunable_scaling: 0 none, 1 log (default), 2 linear.
    pub tunable_scaling: u32,
    pub migration_cost_ns: u64,
    /// Timer slack of a normal task (current->timer_slack_ns, 50 µs).
    pub timer_slack_ns: u64,
    /// ttwu_queue_cond's same-LLC rule (seed 000).
    pub wakelist: Wakelist,
    /// ttwu_queue_cond queues every wakeup across LLCs (all kernels since
    /// v5.8 do); off makes cross-LLC wakeups follow the same-LLC rule.
    pub wakelist_cross_llc: bool,
    /// The load tracking (`kernel.pelt`).
    pub pelt: PeltModel,
    /// CONFIG_IRQ_TIME_ACCOUNTING: interrupt time feeds rq->avg_irq and
    /// shrinks the capacity left to the fair class.
    pub irq_time_accounting: bool,
    pub features: Features,
    /// How completions are built (`kernel.completion`).
    pub completion: super::completion::CompletionVariant,
    /// Sched-domain flag changes per level name (`kernel.domain.MC.flags =
    /// "-SD_BALANCE_NEWIDLE"`), applied in order once domains are built.
    pub domain_flags: Vec<(String, String)>,
    /// Run-to-run noise (`[noise]`).
    pub noise: super::noise::NoiseConfig,
}

impl Default for KernelConfig {
    fn default() -> Self {
        KernelConfig {
            hz: 250,
            fair: FairClass::Eevdf,
            preempt: PreemptModel::Full,
            rt_bandwidth: super::rt::RtBandwidth::FairServer,
            base_slice_ns: 700_000,
            tunable_scaling: 1,
            migration_cost_ns: 500_000,
            timer_slack_ns: 50_000,
            wakelist: Wakelist::Idle,
            wakelist_cross_llc: true,
            pelt: PeltModel::Current,
            irq_time_accounting: false,
            features: Features::default(),
            completion: Default::default(),
            domain_flags: Vec::new(),
            noise: Default::default(),
        }
    }
}

impl KernelConfig {
    /// TICK_NSEC for the configured HZ.
    pub fn tick_ns(&self) -> u64 {
        (1_000_000_000 + self.hz as u64 / 2) / self.hz as u64
    }

    /// get_update_sysctl_factor: 1 + ilog2(min(ncpus, 8)) for log scaling.
    pub fn sysctl_factor(&self, ncpus: usize) -> u64 {
        let cpus = ncpus.clamp(1, 8) as u64;
        match self.tunable_scaling {
            0 => 1,
            2 => cpus,
            _ => 1 + cpus.ilog2() as u64,
        }
    }

    /// sysctl_sched_base_slice after boot-time scaling (update_sysctl).
    pub fn scaled_base_slice(&self, ncpus: usize) -> u64 {
        self.base_slice_ns * self.sysctl_factor(ncpus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_slice_scales_like_the_kernel() {
        let k = KernelConfig::default();
        assert_eq!(k.scaled_base_slice(1), 700_000);
        assert_eq!(k.scaled_base_slice(2), 1_400_000);
        assert_eq!(k.scaled_base_slice(4), 2_100_000);
        assert_eq!(k.scaled_base_slice(104), 2_800_000);
        assert_eq!(k.tick_ns(), 4_000_000);
    }

    #[test]
    fn features_toggle_by_kernel_name() {
        let mut f = Features::default();
        assert!(f.enabled(Feature::PlaceLag));
        f.set("PLACE_LAG", false).unwrap();
        assert!(!f.enabled(Feature::PlaceLag));
        assert!(f.set("NO_SUCH", true).is_err());
        assert_eq!(f.to_map().len(), FEATURES.len());
    }
}
