//! Load balancing (kernel/sched/fair.c, v6.15–v6.18): the periodic balance
//! raised from the tick (sched_balance_trigger → SCHED_SOFTIRQ →
//! sched_balance_domains), the newly-idle balance with its avg_idle and
//! max_newidle_lb_cost cut-offs, NOHZ idle balancing (nohz_balancer_kick,
//! find_new_ilb, _nohz_idle_balance), active balance through the stopper,
//! and sched_balance_rq itself: should_we_balance, update_sd_lb_stats with
//! group classification, find_src_group, calculate_imbalance, find_src_rq,
//! detach_tasks with can_migrate_task and task_hot.
//!
//! Time: balancing work is charged through the cost model. Every CPU whose
//! run-queue state is read (by should_we_balance or by the group statistics)
//! costs `sis_scan_per_cpu_ns`; every task moved costs `remote_rq_lock_ns`.
//! A busy CPU pays in its softirq (the running task's time); a newly idle
//! CPU pays before the task it pulled runs; an idle CPU's balancing is free.
//!
//! Not modelled: misfit tasks and ASYM_PACKING (every preset has symmetric
//! capacities and no RT/IRQ pressure, so those group types never arise),
//! moving sched_delayed tasks under migrate_load, the LBF_DST_PINNED retry
//! on another CPU of the local group, NUMA fbq types, and the SD_SERIALIZE
//! lock (balances are atomic in the simulation, so it is never contended).

use super::core::Activity;
use super::features::{Feature, KernelConfig};
use super::preempt::{Cause, Req};
use super::sched_domain::{
    IdleType, SchedDomain, SD_BALANCE_NEWIDLE, SD_NUMA, SD_PREFER_SIBLING, SD_SHARE_CPUCAPACITY,
    SD_SHARE_LLC,
};
use super::task::Pid;
use super::tracepoint::{LbDecision, LbWhy};
use super::Kernel;
use crate::engine::{EventKind, Rng};
use crate::util::cpumask::CpuMask;

/// sysctl_sched_nr_migrate (non-RT kernels).
const NR_MIGRATE: usize = 32;
/// MAX_PINNED_INTERVAL, ms.
const MAX_PINNED_INTERVAL: u64 = 512;
/// NUMA_IMBALANCE_MIN
const NUMA_IMBALANCE_MIN: i64 = 2;
/// SCHED_CAPACITY_SCALE
const SCALE: u64 = 1024;

/// LBF_* flags.
const LBF_ALL_PINNED: u32 = 0x01;
const LBF_SOME_PINNED: u32 = 0x08;
const LBF_ACTIVE_LB: u32 = 0x10;

/// enum group_type, in the kernel's order (higher = more in need).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum GroupType {
    #[default]
    HasSpare,
    FullyBusy,
    MisfitTask,
    SmtBalance,
    AsymPacking,
    Imbalanced,
    Overloaded,
}

/// enum migration_type
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrationType {
    Load,
    Util,
    Task,
    Misfit,
}

/// struct sg_lb_stats
#[derive(Clone, Copy, Debug, Default)]
struct SgStats {
    avg_load: u64,
    group_load: u64,
    group_capacity: u64,
    group_util: u64,
    group_runnable: u64,
    sum_nr_running: u64,
    sum_h_nr_running: u64,
    idle_cpus: u64,
    group_weight: u64,
    group_type: GroupType,
    smt_balance: bool,
    /// Some CPU of the group runs more than one task.
    overloaded_cpu: bool,
}

/// A group's sums (`SgStats` before classification) as a balance read
/// them, for the balances of other CPUs at the same instant: at the first
/// tick every CPU of a flat 4096-CPU LLC reads the same 4096 groups.
#[derive(Clone, Copy, Debug)]
struct SgMemo {
    at: u64,
    /// TaskGroups::load_epoch then.
    load_epoch: u64,
    /// Rqs::seal right after the read.
    sealed: u64,
    stats: SgStats,
}

/// struct sd_lb_stats (groups by index into SchedDomains::groups).
#[derive(Clone, Debug, Default)]
struct SdLbStats {
    busiest: Option<usize>,
    local: usize,
    total_load: u64,
    total_capacity: u64,
    avg_load: u64,
    prefer_sibling: bool,
    busiest_stat: SgStats,
    local_stat: SgStats,
}

/// struct lb_env
struct LbEnv {
    dst: usize,
    lvl: usize,
    idle: IdleType,
    /// CPUs taken out of env->cpus (all-pinned busiest queues).
    excluded: CpuMask,
    /// Each group's statistics from the previous pass over this domain,
    /// in group order. A redo after an all-pinned busiest queue changes
    /// only the group that queue is in (`sg_stale`), so the other groups
    /// are not re-read (their cost is still charged, as the kernel reads
    /// them again); without this a redo per pinned queue of a 4096-CPU
    /// LLC re-aged every CPU's PELT each time.
    sg_cache: Vec<SgStats>,
    sg_stale: Option<usize>,
    imbalance: i64,
    migration_type: MigrationType,
    flags: u32,
    src: usize,
    /// For the decision record: the busiest group found, the imbalance
    /// calculated, the first task moved, a task refused as cache hot, an
    /// active balance queued, and the outcome of an early exit.
    group: Option<usize>,
    imbalance0: i64,
    first: Option<Pid>,
    hot: bool,
    active: bool,
    why: Option<LbWhy>,
}

impl LbEnv {
    /// An environment to balance `dst` at domain level `lvl`.
    fn new(dst: usize, lvl: usize, idle: IdleType, sg_cache: Vec<SgStats>) -> LbEnv {
        LbEnv {
            dst,
            lvl,
            idle,
            excluded: CpuMask::default(),
            sg_cache,
            sg_stale: None,
            imbalance: 0,
            migration_type: MigrationType::Load,
            flags: 0,
            src: dst,
            group: None,
            imbalance0: 0,
            first: None,
            hot: false,
            active: false,
            why: None,
        }
    }

    /// The outcome: an early exit's, else what detach_tasks did.
    fn outcome(&self, moved: usize) -> LbWhy {
        match self.why {
            Some(w) => w,
            None if moved > 0 => LbWhy::Moved,
            None if self.flags & LBF_ALL_PINNED != 0 => LbWhy::AllPinned,
            None if self.hot => LbWhy::CacheHot,
            None => LbWhy::NothingMovable,
        }
    }
}

/// The per-CPU balancing fields of struct rq.
#[derive(Clone, Debug)]
pub struct LbRq {
    /// jiffies of the next periodic balance.
    pub next_balance: u64,
    pub avg_idle: u64,
    /// When the CPU went newly idle (0 = not idle).
    pub idle_stamp: u64,
    pub max_idle_balance_cost: u64,
    /// rq->wake_avg_idle (SIS_PROP): half of avg_idle when a wakeup ends
    /// an idle period, halved per jiffy the CPU stays busy, less the time
    /// its wakeups spend scanning.
    pub wake_avg_idle: u64,
    /// rq->wake_stamp: jiffies of wake_avg_idle's last reset or halving.
    pub wake_stamp: u64,
    /// An active balance (stopper work) is queued on this CPU, pushing to push_cpu.
    pub active_balance: bool,
    pub push_cpu: usize,
    /// The idle period already counted as a wasted-core episode.
    pub wasted_counted: Option<u64>,
}

/// What should_we_balance did, for its funclatency-style histogram.
#[derive(Clone, Debug, Default)]
pub struct SwbStats {
    pub calls: u64,
    /// CPUs and SMT siblings whose idle state was read.
    pub cpus_visited: u64,
    pub ns_total: u64,
    /// log2 buckets of per-call ns, as bcc's bpf_log2l (index 0 = 0 ns).
    pub hist: Vec<u64>,
}

/// Balancer state and counters beyond schedstat.
#[derive(Clone, Debug)]
pub struct LoadBalance {
    pub rq: Vec<LbRq>,
    /// rd->overloaded: some CPU had more than one task.
    pub rd_overloaded: bool,
    /// nohz.next_balance, jiffies.
    pub nohz_next_balance: u64,
    pub swb: SwbStats,
    pub nohz_kicks: u64,
    pub active_balances: u64,
    /// Balancing work done so far in the current softirq/newidle pass, ns.
    cost_ns: u64,
    /// The CPU doing the balancing (it sends the resched IPIs).
    acting: usize,
    /// Order of list_add/list_move to the head of rq->cfs_tasks
    /// (Task::cfs_list_seq).
    list_seq: u64,
    /// Wasted-core episodes (an idle CPU next to a waiting task it could
    /// run, for longer than the bound) and their total length.
    pub wasted_episodes: u64,
    pub wasted_ns: u64,
    /// The first episode, described (fatal under --check).
    pub wasted_first: Option<String>,
    /// sched_rnd_state: each CPU's random stream (sched_rng).
    sched_rng: Vec<Rng>,
    /// The group statistics buffer, kept between balances so that a scan
    /// of thousands of groups does not allocate (and fault in) a new one.
    sg_buf: Vec<SgStats>,
    /// Per group (SchedDomains::groups), its sums as last read.
    sg_memo: Vec<Option<SgMemo>>,
    /// When the last pass over a domain's groups began: a pass at the
    /// same instant keeps its groups' sums for the ones after it.
    last_pass_at: Option<u64>,
    /// Whether the current pass keeps them.
    keep_memos: bool,
    /// When the last memo was kept: none is fresh at another instant, and
    /// this spares a pass the read of a stale memo per group.
    memo_at: Option<u64>,
    /// CPUs whose run queue the group statistics read (not from a memo):
    /// the simulator's own work, which `bench` reports for start-up.
    pub cpus_read: u64,
}

/// The random streams of sched_rng, one per CPU, apart from every task's
/// and the noise's.
const SCHED_RNG_STREAM: u64 = 1 << 62;

impl LoadBalance {
    pub fn new(ncpus: usize, cfg: &KernelConfig) -> Self {
        let mc = cfg.migration_cost_ns;
        LoadBalance {
            rq: vec![
                LbRq {
                    next_balance: 0,
                    avg_idle: 2 * mc,
                    idle_stamp: 0,
                    max_idle_balance_cost: mc,
                    // sched_init: wake_avg_idle = avg_idle, stamped now.
                    wake_avg_idle: 2 * mc,
                    wake_stamp: JIFFIES_AT_START,
                    active_balance: false,
                    push_cpu: 0,
                    wasted_counted: None,
                };
                ncpus
            ],
            rd_overloaded: false,
            nohz_next_balance: 0,
            swb: SwbStats {
                hist: vec![0; 65],
                ..SwbStats::default()
            },
            nohz_kicks: 0,
            active_balances: 0,
            cost_ns: 0,
            acting: 0,
            list_seq: 0,
            wasted_episodes: 0,
            wasted_ns: 0,
            wasted_first: None,
            sched_rng: Self::sched_rng(ncpus, 1),
            sg_buf: Vec::new(),
            sg_memo: Vec::new(),
            last_pass_at: None,
            keep_memos: false,
            memo_at: None,
            cpus_read: 0,
        }
    }

    /// Seed each CPU's sched_rng stream from the run's seed.
    pub fn seed(&mut self, seed: u64) {
        self.sched_rng = Self::sched_rng(self.rq.len(), seed);
    }

    fn sched_rng(ncpus: usize, seed: u64) -> Vec<Rng> {
        (0..ncpus as u64)
            .map(|c| Rng::new(seed, SCHED_RNG_STREAM + c))
            .collect()
    }
}

/// update_newidle_stats: count a newidle attempt and its weighted success;
/// every 1,024 attempts the ratio is renewed and both counts halved.
fn update_newidle_stats(sd: &mut SchedDomain, success: u32) {
    sd.newidle_call += 1;
    sd.newidle_success += success;
    if sd.newidle_call >= 1024 {
        sd.newidle_ratio = sd.newidle_success;
        sd.newidle_call /= 2;
        sd.newidle_success /= 2;
    }
}

/// bcc's bpf_log2l bucket of a value.
pub fn log2_bucket(v: u64) -> usize {
    if v == 0 {
        0
    } else {
        64 - v.leading_zeros() as usize
    }
}

/// update_avg (sched.h): avg += (sample - avg) / 8, the difference signed
/// (C's division truncates towards zero, as Rust's does).
pub(super) fn update_avg(avg: u64, sample: u64) -> u64 {
    (avg as i64 + (sample as i64 - avg as i64) / 8) as u64
}

/// jiffies at simulated time 0: the machine has been up (and idle) long
/// enough that every domain's last balance, stamped 0 when the domains
/// were built, lies more than any balance interval back, as on a machine
/// that booted long before the benchmark started.
const JIFFIES_AT_START: u64 = 1 << 32;

impl Kernel {
    pub(super) fn jiffies(&self) -> u64 {
        JIFFIES_AT_START + self.now / self.tick_ns
    }

    fn msecs_to_jiffies(&self, ms: u64) -> u64 {
        (ms * self.cfg.hz as u64).div_ceil(1000)
    }

    fn sd(&self, cpu: usize, lvl: usize) -> &SchedDomain {
        &self.sd.cpu[cpu][lvl]
    }

    fn sd_mut(&mut self, cpu: usize, lvl: usize) -> &mut SchedDomain {
        &mut self.sd.cpu[cpu][lvl]
    }

    /// Charge reading `n` CPUs' run-queue state.
    fn scan_cost(&mut self, n: u64) {
        self.lb.cost_ns += n * self.machine.cost.sis_scan_per_cpu_ns;
    }

    /// get_sd_balance_interval, in jiffies.
    fn get_sd_balance_interval(&self, d: &SchedDomain, busy: bool) -> u64 {
        let mut ms = d.balance_interval;
        if busy {
            ms *= d.busy_factor as u64;
        }
        let mut j = self.msecs_to_jiffies(ms);
        if busy {
            j = j.saturating_sub(1);
        }
        let max = (self.cfg.hz as u64 * self.machine.nr_cpus() as u64 / 10).max(1);
        j.clamp(1, max)
    }

    /// update_newidle_cost: track the largest newidle cost of a domain,
    /// decaying it by 1 % once a second. Returns whether it decayed.
    fn update_newidle_cost(&mut self, cpu: usize, lvl: usize, cost: u64) -> bool {
        let (jiffies, hz) = (self.jiffies(), self.cfg.hz as u64);
        let d = self.sd_mut(cpu, lvl);
        if cost > d.max_newidle_lb_cost {
            d.max_newidle_lb_cost = cost;
            d.last_decay_max_lb_cost = jiffies;
        } else if jiffies > d.last_decay_max_lb_cost + hz {
            d.max_newidle_lb_cost = d.max_newidle_lb_cost * 253 / 256;
            d.last_decay_max_lb_cost = jiffies;
            return true;
        }
        false
    }

    /// sched_balance_trigger, from the tick: raise SCHED_SOFTIRQ when the
    /// CPU's next balance is due (the softirq runs on the way out of the
    /// tick, in the running task's time), then, on a busy CPU,
    /// consider kicking an idle CPU for NOHZ balancing (nohz_balancer_kick
    /// returns at once when rq->idle_balance). Returns the balance's cost
    /// when it balanced, for the caller to charge as the softirq's.
    pub fn sched_balance_trigger(&mut self, cpu: usize) -> Option<u64> {
        let due = self.jiffies() >= self.lb.rq[cpu].next_balance && !self.sd.cpu[cpu].is_empty();
        let idle = self.idle_cpu(cpu);
        let mut cost = None;
        if due {
            self.lb.cost_ns = 0;
            self.lb.acting = cpu;
            let kind = if idle {
                IdleType::Idle
            } else {
                IdleType::NotIdle
            };
            self.sched_balance_domains(cpu, kind);
            cost = Some(std::mem::take(&mut self.lb.cost_ns));
        }
        if !idle {
            self.nohz_balancer_kick(cpu);
        }
        self.count_wasted_cores(cpu);
        cost
    }

    /// sched_balance_domains: balance each domain whose interval is due,
    /// bottom-up, until should_we_balance says another CPU does it.
    fn sched_balance_domains(&mut self, cpu: usize, mut idle: IdleType) {
        let jiffies = self.jiffies();
        let mut busy = idle != IdleType::Idle;
        let mut next_balance = jiffies + 60 * self.cfg.hz as u64;
        let mut update_next_balance = false;
        let mut continue_balancing = true;
        let mut need_decay = false;
        let mut max_cost = 0;
        for lvl in 0..self.sd.cpu[cpu].len() {
            need_decay = self.update_newidle_cost(cpu, lvl, 0);
            max_cost += self.sd(cpu, lvl).max_newidle_lb_cost;
            if !continue_balancing {
                if need_decay {
                    continue;
                }
                break;
            }
            let mut interval = self.get_sd_balance_interval(self.sd(cpu, lvl), busy);
            if jiffies >= self.sd(cpu, lvl).last_balance + interval {
                if self.sched_balance_rq(cpu, lvl, idle, &mut continue_balancing) > 0 {
                    // The CPU is no longer idle after pulling.
                    let now_idle = self.idle_cpu(cpu);
                    idle = if now_idle {
                        IdleType::Idle
                    } else {
                        IdleType::NotIdle
                    };
                    busy = !now_idle;
                }
                self.sd_mut(cpu, lvl).last_balance = jiffies;
                interval = self.get_sd_balance_interval(self.sd(cpu, lvl), busy);
            }
            let due = self.sd(cpu, lvl).last_balance + interval;
            if next_balance > due {
                next_balance = due;
                update_next_balance = true;
            }
        }
        let rq = &mut self.lb.rq[cpu];
        if need_decay {
            rq.max_idle_balance_cost = max_cost.max(self.cfg.migration_cost_ns);
        }
        if update_next_balance {
            rq.next_balance = next_balance;
        }
    }

    /// should_we_balance: is `env.dst` the CPU of its local group that
    /// balances this domain? With SWB_SMT_SKIP (the seed's change) the
    /// scan skips the other siblings of a busy core once one idle sibling
    /// is found. Counts the CPUs it reads for the cost histogram.
    fn should_we_balance(&mut self, env: &LbEnv) -> bool {
        if env.excluded.test(env.dst) {
            return false;
        }
        if env.idle == IdleType::NewlyIdle {
            let rq = &self.rqs[env.dst];
            return rq.nr_running == 0 && !rq.ttwu_pending;
        }
        let d = self.sd(env.dst, env.lvl);
        let at_smt = d.flags & SD_SHARE_CPUCAPACITY != 0;
        let group = d.group(0);
        let skip = self.cfg.features.enabled(Feature::SwbSmtSkip);
        let mut skipped: Vec<usize> = Vec::new();
        let mut visited = 0u64;
        let mut idle_smt: Option<usize> = None;
        let mut decided: Option<usize> = None;
        for &cpu in &self.sd.groups[group].cpus {
            if env.excluded.test(cpu) || skipped.contains(&cpu) {
                continue;
            }
            visited += 1;
            if !self.idle_cpu(cpu) {
                continue;
            }
            if !at_smt {
                let (core_idle, seen) = self.is_core_idle(cpu);
                visited += seen;
                if !core_idle {
                    idle_smt.get_or_insert(cpu);
                    if skip {
                        skipped.extend_from_slice(self.machine.smt_siblings(cpu));
                    }
                    continue;
                }
            }
            decided = Some(cpu);
            break;
        }
        self.record_swb(visited);
        let first = self.sd.groups[group].cpus[0];
        decided.or(idle_smt).unwrap_or(first) == env.dst
    }

    /// is_core_idle: are all other SMT siblings idle? Returns the answer
    /// and how many siblings were read.
    fn is_core_idle(&self, cpu: usize) -> (bool, u64) {
        let mut seen = 0;
        for &s in self.machine.smt_siblings(cpu) {
            if s == cpu {
                continue;
            }
            seen += 1;
            if !self.idle_cpu(s) {
                return (false, seen);
            }
        }
        (true, seen)
    }

    fn record_swb(&mut self, visited: u64) {
        let ns = visited * self.machine.cost.sis_scan_per_cpu_ns;
        let s = &mut self.lb.swb;
        s.calls += 1;
        s.cpus_visited += visited;
        s.ns_total += ns;
        s.hist[log2_bucket(ns)] += 1;
        self.lb.cost_ns += ns;
    }

    /// sched_balance_rq (load_balance): move tasks from the busiest queue
    /// of the busiest group of this domain to `cpu`. Returns the number of
    /// tasks moved.
    fn sched_balance_rq(
        &mut self,
        cpu: usize,
        lvl: usize,
        idle: IdleType,
        continue_balancing: &mut bool,
    ) -> usize {
        let mut sg_cache = std::mem::take(&mut self.lb.sg_buf);
        sg_cache.clear();
        let mut env = LbEnv::new(cpu, lvl, idle, sg_cache);
        let moved = self.balance_env(&mut env, continue_balancing);
        if self.decisions {
            self.trace_lb(self.lb.acting, &env, moved);
        }
        self.lb.sg_buf = env.sg_cache;
        moved
    }

    /// The decision record of a balance (or a stopper's push), emitted on
    /// `on`, the CPU doing the work.
    #[cold]
    #[inline(never)]
    fn trace_lb(&mut self, on: usize, env: &LbEnv, moved: usize) {
        let why = env.outcome(moved);
        let found = !matches!(why, LbWhy::NotThisCpu | LbWhy::Balanced);
        let has_src = found && why != LbWhy::NoBusiestRq;
        let d = self.sd(env.dst, env.lvl);
        let lb = LbDecision {
            dst: env.dst,
            level: env.lvl,
            domain: d.name,
            idle: env.idle,
            group: (env.group.filter(|_| found)).map(|g| self.sd.groups[g].cpus[0]),
            src: has_src.then_some(env.src),
            migration: found.then_some(env.migration_type),
            imbalance: if found { env.imbalance0 } else { 0 },
            moved: moved as u32,
            first: env.first,
            why,
            active: env.active,
        };
        self.trace_balance(on, lb);
    }

    /// The body of sched_balance_rq over its environment.
    fn balance_env(&mut self, env: &mut LbEnv, continue_balancing: &mut bool) -> usize {
        let (cpu, lvl, it) = (env.dst, env.lvl, env.idle as usize);
        self.sd_mut(cpu, lvl).stats.lb[it].lb_count += 1;
        loop {
            if !self.should_we_balance(env) {
                *continue_balancing = false;
                env.why = Some(LbWhy::NotThisCpu);
                return self.lb_balanced(env);
            }
            let Some(group) = self.find_src_group(env) else {
                self.sd_mut(cpu, lvl).stats.lb[it].lb_nobusyg += 1;
                env.why = Some(LbWhy::Balanced);
                return self.lb_balanced(env);
            };
            (env.group, env.imbalance0) = (Some(group), env.imbalance);
            let Some(busiest) = self.find_src_rq(env, group) else {
                self.sd_mut(cpu, lvl).stats.lb[it].lb_nobusyq += 1;
                env.why = Some(LbWhy::NoBusiestRq);
                return self.lb_balanced(env);
            };
            env.src = busiest;
            let imb = env.imbalance.max(0) as u64;
            let c = &mut self.sd_mut(cpu, lvl).stats.lb[it];
            match env.migration_type {
                MigrationType::Load => c.lb_imbalance_load += imb,
                MigrationType::Util => c.lb_imbalance_util += imb,
                MigrationType::Task => c.lb_imbalance_task += imb,
                MigrationType::Misfit => c.lb_imbalance_misfit += imb,
            }
            let mut moved = 0;
            if self.rqs[busiest].nr_running > 1 {
                env.flags |= LBF_ALL_PINNED;
                moved = self.detach_attach(env);
                if env.flags & LBF_SOME_PINNED != 0 && env.imbalance > 0 {
                    // The parent's group of this domain is imbalanced by pinning.
                    if let Some(parent) = self.sd.cpu[cpu].get(lvl + 1) {
                        let g = parent.group(0);
                        self.sd.groups[g].imbalance = true;
                    }
                }
                if env.flags & LBF_ALL_PINNED != 0 && moved == 0 {
                    env.excluded.set(busiest);
                    env.sg_stale = Some(group);
                    let span = self.sd.span(self.sd(cpu, lvl));
                    let group_cpus = &self.sd.groups[self.sd(cpu, lvl).group(0)].cpus;
                    if span
                        .iter()
                        .any(|&c| !env.excluded.test(c) && !group_cpus.contains(&c))
                    {
                        continue;
                    }
                    env.why = Some(LbWhy::AllPinned);
                    return self.lb_balanced(env);
                }
            }
            return self.lb_finish(env, moved);
        }
    }

    /// The end of sched_balance_rq when a busiest queue was found.
    fn lb_finish(&mut self, env: &mut LbEnv, moved: usize) -> usize {
        let (cpu, lvl, it) = (env.dst, env.lvl, env.idle as usize);
        let mut active = false;
        if moved == 0 {
            self.sd_mut(cpu, lvl).stats.lb[it].lb_failed += 1;
            if env.idle != IdleType::NewlyIdle {
                self.sd_mut(cpu, lvl).nr_balance_failed += 1;
            }
            if self.need_active_balance(env) {
                let b = env.src;
                let curr_ok = self.rqs[b]
                    .curr
                    .is_some_and(|p| self.tasks[p].is_allowed(cpu));
                if !curr_ok {
                    return self.lb_out_one_pinned(env);
                }
                env.flags &= !LBF_ALL_PINNED;
                if !self.lb.rq[b].active_balance {
                    self.lb.rq[b].active_balance = true;
                    self.lb.rq[b].push_cpu = cpu;
                    (active, env.active) = (true, true);
                    // stop_one_cpu_nowait: the stopper preempts b's task.
                    self.resched_curr_lazy(b, Some(cpu), Req::HigherClass, Cause::Other);
                }
            }
        } else {
            self.sd_mut(cpu, lvl).nr_balance_failed = 0;
        }
        if !active || self.need_active_balance(env) {
            let d = self.sd_mut(cpu, lvl);
            d.balance_interval = d.min_interval;
        }
        moved
    }

    /// out_balanced: clear the parent's imbalance mark, count, and back off.
    fn lb_balanced(&mut self, env: &LbEnv) -> usize {
        let (cpu, lvl) = (env.dst, env.lvl);
        if env.flags & LBF_ALL_PINNED == 0 {
            if let Some(parent) = self.sd.cpu[cpu].get(lvl + 1) {
                let g = parent.group(0);
                self.sd.groups[g].imbalance = false;
            }
        }
        let d = self.sd_mut(cpu, lvl);
        d.stats.lb[env.idle as usize].lb_balanced += 1;
        d.nr_balance_failed = 0;
        self.lb_out_one_pinned(env)
    }

    /// out_one_pinned: double the interval (periodic balances only).
    fn lb_out_one_pinned(&mut self, env: &LbEnv) -> usize {
        if env.idle == IdleType::NewlyIdle {
            return 0;
        }
        let d = self.sd_mut(env.dst, env.lvl);
        if (env.flags & LBF_ALL_PINNED != 0 && d.balance_interval < MAX_PINNED_INTERVAL)
            || d.balance_interval < d.max_interval
        {
            d.balance_interval *= 2;
        }
        0
    }

    /// need_active_balance (symmetric capacities: only the
    /// repeated-failure rule for migrate_task applies).
    fn need_active_balance(&self, env: &LbEnv) -> bool {
        let d = self.sd(env.dst, env.lvl);
        env.migration_type == MigrationType::Task && d.nr_balance_failed > d.cache_nice_tries + 2
    }

    /// update_sg_lb_stats for one group. Idle CPUs' blocked load is aged
    /// first (what the NOHZ stats kick keeps up to date in the kernel).
    fn update_sg_lb_stats(&mut self, env: &LbEnv, g: usize, local: bool) -> SgStats {
        let mut s = match self.sg_memo(env, g) {
            Some(s) => s,
            None => self.sg_sums(env, g),
        };
        self.scan_cost(self.sd.groups[g].cpus.len() as u64);
        let grp = &self.sd.groups[g];
        // smt_balance: an idle dst should relieve an SMT group running >1 task.
        s.smt_balance = !local
            && env.idle != IdleType::NotIdle
            && grp.flags & SD_SHARE_CPUCAPACITY != 0
            && s.sum_h_nr_running > 1;
        let pct = self.sd(env.dst, env.lvl).imbalance_pct as u64;
        s.group_type = group_classify(pct, grp.imbalance, &s);
        if s.group_type == GroupType::Overloaded {
            s.avg_load = s.group_load * SCALE / s.group_capacity;
        }
        s
    }

    /// The sums of group `g` (its CPUs not excluded, blocked load aged
    /// first), kept in `sg_memo` when reading them again at this instant
    /// would change and count nothing, by a periodic balance (the CPUs'
    /// ticks share instants) or a newidle one after an earlier pass of this
    /// instant (one at an instant of its own, the common case, keeps
    /// nothing: the writes were a tenth of its cost on 1024 CPUs).
    fn sg_sums(&mut self, env: &LbEnv, g: usize) -> SgStats {
        let mut s = SgStats::default();
        let epoch = self.groups.load_epoch;
        let mut quiet = true;
        let n = self.sd.groups[g].cpus.len();
        for i in 0..n {
            let c = self.sd.groups[g].cpus[i];
            // update_group_capacity: what rt, dl and irq left of each CPU.
            s.group_capacity += self.capacity_of(c);
            if env.excluded.test(c) {
                quiet = false;
                continue;
            }
            self.update_blocked_averages(c);
            self.lb.cpus_read += 1;
            quiet &= self.blocked_quiet(c);
            let rq = &self.rqs[c];
            s.group_load += self.cpu_load(c);
            s.group_util += self.cpu_util_cfs(c);
            s.group_runnable += rq.cfs.avg.runnable_avg;
            s.sum_h_nr_running += rq.cfs.h_nr_runnable as u64;
            s.sum_nr_running += rq.nr_running as u64;
            s.overloaded_cpu |= rq.nr_running > 1;
            if rq.nr_running == 0 && self.idle_cpu(c) {
                s.idle_cpus += 1;
            }
        }
        s.group_weight = n as u64;
        if quiet && epoch == self.groups.load_epoch && self.lb.keep_memos {
            self.keep_sg_memo(g, s);
        }
        s
    }

    /// Whether another update_blocked_averages of `cpu` at this instant,
    /// with no task group's load changed, would change and count nothing:
    /// an idle CPU whose signals are all gone, or one whose call found no
    /// group to age or update (the rt, dl and irq signals and an idle
    /// root, aged to this instant, stay put).
    fn blocked_quiet(&self, cpu: usize) -> bool {
        self.rqs[cpu].blocked_clean.is_some_and(|b| {
            (b.gone && self.idle_cpu(cpu))
                || b.calls.is_some_and(|k| k.group_ops == 0 && k.entities == 0)
        })
    }

    /// Keep group `g`'s sums, just read, for the balances of this instant.
    fn keep_sg_memo(&mut self, g: usize, stats: SgStats) {
        let memo = SgMemo {
            at: self.now,
            load_epoch: self.groups.load_epoch,
            sealed: self.rqs.seal(),
            stats,
        };
        self.lb.memo_at = Some(self.now);
        let n = self.sd.groups.len();
        let m = &mut self.lb.sg_memo;
        if m.len() < n {
            m.resize(n, None);
        }
        m[g] = Some(memo);
    }

    /// Group `g`'s sums as an earlier balance of this instant read them,
    /// when none of its CPUs is excluded or has changed since and no task
    /// group's load moved: reading them again would give the same.
    fn sg_memo(&self, env: &LbEnv, g: usize) -> Option<SgStats> {
        if self.lb.memo_at != Some(self.now) {
            return None;
        }
        let m = self.lb.sg_memo.get(g)?.as_ref()?;
        let fresh = m.at == self.now
            && m.load_epoch == self.groups.load_epoch
            && self.sd.groups[g]
                .cpus
                .iter()
                .all(|&c| !env.excluded.test(c) && self.rqs.unchanged_since(c, m.sealed));
        fresh.then_some(m.stats)
    }

    /// update_sd_lb_stats: statistics of every group of the domain; pick
    /// the busiest non-local group.
    fn update_sd_lb_stats(&mut self, env: &mut LbEnv) -> SdLbStats {
        let ngroups = self.sd(env.dst, env.lvl).nr_groups();
        let is_root = env.lvl + 1 == self.sd.cpu[env.dst].len();
        let mut sg_overloaded = false;
        let mut sds = SdLbStats {
            busiest_stat: SgStats {
                idle_cpus: u64::MAX,
                ..SgStats::default()
            },
            ..SdLbStats::default()
        };
        let mut cache = std::mem::take(&mut env.sg_cache);
        self.lb.keep_memos =
            env.idle != IdleType::NewlyIdle || self.lb.last_pass_at == Some(self.now);
        self.lb.last_pass_at = Some(self.now);
        for i in 0..ngroups {
            let g = self.sd(env.dst, env.lvl).group(i);
            let local = i == 0;
            let s = match cache.get(i) {
                Some(&s) if env.sg_stale != Some(g) => {
                    self.scan_cost(self.sd.groups[g].cpus.len() as u64);
                    s
                }
                _ => self.update_sg_lb_stats(env, g, local),
            };
            if i < cache.len() {
                cache[i] = s;
            } else {
                cache.push(s);
            }
            sg_overloaded |= s.overloaded_cpu;
            if local {
                sds.local = g;
                sds.local_stat = s;
            } else if self.update_sd_pick_busiest(&sds, g, &s) {
                sds.busiest = Some(g);
                sds.busiest_stat = s;
            }
            sds.total_load += s.group_load;
            sds.total_capacity += s.group_capacity;
        }
        env.sg_cache = cache;
        if let Some(b) = sds.busiest {
            sds.prefer_sibling = self.sd.groups[b].flags & SD_PREFER_SIBLING != 0;
        }
        // The root domain's statistics set or clear rd->overloaded.
        if is_root {
            self.lb.rd_overloaded = sg_overloaded;
        }
        sds
    }

    /// update_sd_pick_busiest: is group `g` busier than the busiest so far?
    fn update_sd_pick_busiest(&self, sds: &SdLbStats, g: usize, s: &SgStats) -> bool {
        let b = &sds.busiest_stat;
        if s.sum_h_nr_running == 0 {
            return false;
        }
        if s.group_type != b.group_type {
            return s.group_type > b.group_type;
        }
        let smt = |grp: Option<usize>| {
            grp.is_some_and(|x| self.sd.groups[x].flags & SD_SHARE_CPUCAPACITY != 0)
        };
        let has_spare = || {
            !(s.idle_cpus > b.idle_cpus
                || (s.idle_cpus == b.idle_cpus && s.sum_nr_running <= b.sum_nr_running))
        };
        match s.group_type {
            GroupType::Overloaded => s.avg_load >= b.avg_load,
            GroupType::Imbalanced => false,
            GroupType::SmtBalance if s.idle_cpus != 0 || b.idle_cpus != 0 => has_spare(),
            GroupType::SmtBalance | GroupType::FullyBusy => {
                !(s.avg_load < b.avg_load || (s.avg_load == b.avg_load && smt(sds.busiest)))
            }
            GroupType::HasSpare => {
                // Don't pick an SMT group over one of plain CPUs.
                if smt(sds.busiest) && !smt(Some(g)) {
                    return false;
                }
                has_spare()
            }
            GroupType::MisfitTask | GroupType::AsymPacking => true,
        }
    }

    /// Number of cores in a group (sg->cores).
    fn group_cores(&self, g: usize) -> i64 {
        self.sd.groups[g].cores as i64
    }

    /// sibling_imbalance: tasks to move so both groups run the same number
    /// of tasks per core.
    fn sibling_imbalance(&self, env: &LbEnv, sds: &SdLbStats) -> i64 {
        let (b, l) = (&sds.busiest_stat, &sds.local_stat);
        if env.idle == IdleType::NotIdle || b.sum_nr_running == 0 {
            return 0;
        }
        let nb = self.group_cores(sds.busiest.expect("busiest group"));
        let nl = self.group_cores(sds.local);
        let (bn, ln) = (b.sum_nr_running as i64, l.sum_nr_running as i64);
        if nb == nl {
            return (bn - ln).max(0);
        }
        let mut imb = (nl * bn - nb * ln).max(0);
        imb = (2 * imb + nl + nb) / (nl + nb);
        if imb <= 1 && ln == 0 && bn > 1 {
            imb = 2;
        }
        imb
    }

    /// sched_balance_find_src_group (find_busiest_group): is there an
    /// imbalance worth acting on, and in which group?
    fn find_src_group(&mut self, env: &mut LbEnv) -> Option<usize> {
        let mut sds = self.update_sd_lb_stats(env);
        let busiest = sds.busiest?;
        let (b, l) = (sds.busiest_stat, sds.local_stat);
        let pct = self.sd(env.dst, env.lvl).imbalance_pct as u64;
        let force = match b.group_type {
            GroupType::MisfitTask | GroupType::AsymPacking | GroupType::Imbalanced => true,
            _ => {
                if l.group_type > b.group_type {
                    return None;
                }
                if l.group_type == GroupType::Overloaded {
                    if l.avg_load >= b.avg_load {
                        return None;
                    }
                    sds.avg_load = sds.total_load * SCALE / sds.total_capacity;
                    if l.avg_load >= sds.avg_load || 100 * b.avg_load <= pct * l.avg_load {
                        return None;
                    }
                }
                sds.prefer_sibling
                    && l.group_type == GroupType::HasSpare
                    && self.sibling_imbalance(env, &sds) > 1
            }
        };
        if !force && b.group_type != GroupType::Overloaded {
            if env.idle == IdleType::NotIdle {
                return None;
            }
            let smt_vs_nonsmt = (self.sd.groups[sds.local].flags & SD_SHARE_CPUCAPACITY)
                != (self.sd.groups[busiest].flags & SD_SHARE_CPUCAPACITY);
            if !(b.group_type == GroupType::SmtBalance && smt_vs_nonsmt) {
                if b.group_weight > 1 && l.idle_cpus <= b.idle_cpus + 1 {
                    return None;
                }
                if b.sum_h_nr_running == 1 {
                    return None;
                }
            }
        }
        self.calculate_imbalance(env, &mut sds);
        (env.imbalance > 0).then_some(busiest)
    }

    /// calculate_imbalance: how much to move, and of what.
    fn calculate_imbalance(&self, env: &mut LbEnv, sds: &mut SdLbStats) {
        let (b, mut l) = (sds.busiest_stat, sds.local_stat);
        let d = self.sd(env.dst, env.lvl);
        match b.group_type {
            GroupType::AsymPacking => {
                env.migration_type = MigrationType::Task;
                env.imbalance = b.sum_h_nr_running as i64;
                return;
            }
            GroupType::SmtBalance | GroupType::Imbalanced => {
                env.migration_type = MigrationType::Task;
                env.imbalance = 1;
                return;
            }
            _ => {}
        }
        if l.group_type == GroupType::HasSpare {
            if b.group_type > GroupType::FullyBusy && d.flags & SD_SHARE_LLC == 0 {
                env.migration_type = MigrationType::Util;
                env.imbalance = (l.group_capacity.max(l.group_util) - l.group_util) as i64;
                if env.idle != IdleType::NotIdle && env.imbalance == 0 {
                    env.migration_type = MigrationType::Task;
                    env.imbalance = 1;
                }
                return;
            }
            env.migration_type = MigrationType::Task;
            env.imbalance = if b.group_weight == 1 || sds.prefer_sibling {
                self.sibling_imbalance(env, sds)
            } else {
                (l.idle_cpus as i64 - b.idle_cpus as i64).max(0)
            };
            if d.flags & SD_NUMA != 0 {
                let dst_running = l.sum_nr_running as i64 + 1;
                if dst_running <= d.imb_numa_nr as i64 && env.imbalance <= NUMA_IMBALANCE_MIN {
                    env.imbalance = 0;
                }
            }
            env.imbalance >>= 1;
            return;
        }
        if l.group_type < GroupType::Overloaded {
            l.avg_load = l.group_load * SCALE / l.group_capacity;
            if l.avg_load >= b.avg_load {
                env.imbalance = 0;
                return;
            }
            sds.avg_load = sds.total_load * SCALE / sds.total_capacity;
            if l.avg_load >= sds.avg_load {
                env.imbalance = 0;
                return;
            }
        }
        env.migration_type = MigrationType::Load;
        let from_busiest = b.avg_load.saturating_sub(sds.avg_load) * b.group_capacity;
        let to_local = sds.avg_load.saturating_sub(l.avg_load) * l.group_capacity;
        env.imbalance = (from_busiest.min(to_local) / SCALE) as i64;
    }

    /// sched_balance_find_src_rq (find_busiest_queue).
    fn find_src_rq(&self, env: &LbEnv, g: usize) -> Option<usize> {
        let mut busiest = None;
        let (mut best_load, mut best_cap, mut best_util, mut best_nr) = (0u64, 1u64, 0u64, 0usize);
        for &c in &self.sd.groups[g].cpus {
            if env.excluded.test(c) {
                continue;
            }
            let rq = &self.rqs[c];
            let nr = rq.cfs.h_nr_runnable;
            if nr == 0 {
                continue;
            }
            let cap = self.capacity_of(c);
            match env.migration_type {
                MigrationType::Load => {
                    let load = self.cpu_load(c);
                    if nr == 1 && load as i64 > env.imbalance {
                        continue;
                    }
                    if load * best_cap > best_load * cap {
                        (best_load, best_cap, busiest) = (load, cap, Some(c));
                    }
                }
                MigrationType::Util => {
                    let util = self.cpu_util_cfs(c);
                    if nr > 1 && best_util < util {
                        (best_util, busiest) = (util, Some(c));
                    }
                }
                MigrationType::Task => {
                    if best_nr < nr {
                        (best_nr, busiest) = (nr, Some(c));
                    }
                }
                MigrationType::Misfit => {}
            }
        }
        busiest
    }

    /// task_hot: ran on its CPU less than migration_cost ago (never across
    /// SMT siblings).
    fn task_hot(&self, p: Pid, env: &LbEnv) -> bool {
        if self.sd(env.dst, env.lvl).flags & SD_SHARE_CPUCAPACITY != 0 {
            return false;
        }
        let mc = self.cfg.migration_cost_ns;
        if mc == 0 {
            return false;
        }
        let exec_start = self.tasks[p].se.exec_start;
        self.now.saturating_sub(exec_start) < mc
    }

    /// can_migrate_task
    fn can_migrate_task(&mut self, p: Pid, env: &mut LbEnv) -> bool {
        let t = &self.tasks[p];
        if t.se.sched_delayed {
            return false;
        }
        let nr_failed = self.sd(env.dst, env.lvl).nr_balance_failed;
        if self.cfg.features.enabled(Feature::PlaceLag)
            && nr_failed == 0
            && self.rqs[env.dst].cfs.nr_queued > 0
            && !self
                .cfs_rq(env.src, t.tg)
                .entity_eligible(&self.ents(env.src), p)
        {
            return false;
        }
        if self.throttled_lb_pair(p, env.src, env.dst) {
            return false;
        }
        if !self.tasks[p].is_allowed(env.dst) {
            env.flags |= LBF_SOME_PINNED;
            return false;
        }
        env.flags &= !LBF_ALL_PINNED;
        if self.rqs[env.src].curr == Some(p) {
            return false;
        }
        if env.flags & LBF_ACTIVE_LB != 0 {
            return true;
        }
        let hot = self.task_hot(p, env);
        if !hot {
            return true;
        }
        if nr_failed > self.sd(env.dst, env.lvl).cache_nice_tries {
            let it = env.idle as usize;
            self.sd_mut(env.dst, env.lvl).stats.lb[it].lb_hot_gained += 1;
            return true;
        }
        env.hot = true;
        false
    }

    /// The first `limit` of the source queue's CFS tasks from the tail of
    /// rq->cfs_tasks (least recently queued, picked or passed over first:
    /// each of those puts a task at the head), then the running task.
    /// detach_tasks never looks further than its loop limit, so only that
    /// many are ordered.
    fn cfs_tasks_from_tail(&self, cpu: usize, limit: usize) -> Vec<Pid> {
        let mut v: Vec<(u64, Pid)> = self
            .cfs_tasks(cpu)
            .map(|p| (self.tasks[p].cfs_list_seq, p))
            .collect();
        if v.len() > limit {
            v.select_nth_unstable(limit);
            v.truncate(limit);
        }
        // Keys are unique (the pid is in them): the order is deterministic.
        v.sort_unstable();
        let mut out: Vec<Pid> = v.into_iter().map(|(_, p)| p).collect();
        out.extend(self.rqs[cpu].curr);
        out
    }

    /// list_add / list_move to the head of rq->cfs_tasks: at enqueue
    /// (account_entity_enqueue), when picked (set_next_task_fair) and when
    /// detach_tasks passes a task over.
    pub(super) fn cfs_tasks_to_head(&mut self, p: Pid) {
        self.lb.list_seq += 1;
        self.tasks[p].cfs_list_seq = self.lb.list_seq;
    }

    /// detach_tasks + attach_tasks: move up to the imbalance from env.src
    /// to env.dst. Returns the number moved.
    fn detach_attach(&mut self, env: &mut LbEnv) -> usize {
        if env.imbalance <= 0 {
            return 0;
        }
        let nr_failed = self.sd(env.dst, env.lvl).nr_balance_failed;
        let loop_max = NR_MIGRATE.min(self.rqs[env.src].nr_running);
        let mut moved = 0;
        for (n, p) in self
            .cfs_tasks_from_tail(env.src, loop_max)
            .into_iter()
            .enumerate()
        {
            if env.idle != IdleType::NotIdle && self.rqs[env.src].nr_running <= 1 {
                break;
            }
            if n >= loop_max {
                break;
            }
            if !self.can_migrate_task(p, env) {
                self.cfs_tasks_to_head(p);
                continue;
            }
            match env.migration_type {
                MigrationType::Load => {
                    let load = self.task_h_load(p).max(1);
                    if (load >> nr_failed.min(63)) as i64 > env.imbalance {
                        self.cfs_tasks_to_head(p);
                        continue;
                    }
                    env.imbalance -= load as i64;
                }
                MigrationType::Util => {
                    let util = super::pelt::task_util_est(&self.tasks[p].se.avg);
                    if (util >> nr_failed.min(63)) as i64 > env.imbalance {
                        self.cfs_tasks_to_head(p);
                        continue;
                    }
                    env.imbalance -= util as i64;
                }
                MigrationType::Task => env.imbalance -= 1,
                MigrationType::Misfit => env.imbalance = 0,
            }
            self.migrate_to(p, env.src, env.dst, env.idle != IdleType::NewlyIdle);
            env.first.get_or_insert(p);
            moved += 1;
            // CONFIG_PREEMPTION: a newly idle CPU stops after one task.
            if env.idle == IdleType::NewlyIdle || env.imbalance <= 0 {
                break;
            }
        }
        let it = env.idle as usize;
        self.sd_mut(env.dst, env.lvl).stats.lb[it].lb_gained += moved as u64;
        match env.idle {
            IdleType::NewlyIdle => self.stats.newidle_pulls += moved as u64,
            IdleType::Idle => self.stats.idle_balance_pulls += moved as u64,
            IdleType::NotIdle => {}
        }
        moved
    }

    /// detach_task + attach_task: move `p` and, unless dst is newly idle
    /// and about to pick it itself, let it preempt dst's task.
    fn migrate_to(&mut self, p: Pid, src: usize, dst: usize, notify: bool) {
        self.move_queued_task(p, src, dst);
        self.lb.cost_ns += self.machine.cost.remote_rq_lock_ns;
        if notify {
            self.wakeup_preempt(dst, p, Some(self.lb.acting));
        }
    }

    /// sched_balance_newidle: on the way into idle, pull from the busiest
    /// queues domain by domain while the expected idle time (avg_idle)
    /// covers the cost of trying. Returns whether a task was pulled.
    pub fn newidle_balance(&mut self, cpu: usize) -> bool {
        if self.rqs[cpu].ttwu_pending {
            return false;
        }
        let jiffies = self.jiffies();
        self.lb.rq[cpu].idle_stamp = self.now.max(1);
        let mut next_balance = jiffies + self.cfg.hz as u64;
        let levels = self.sd.cpu[cpu].len();
        let avg_idle = self.lb.rq[cpu].avg_idle;
        let mut pulled = 0;
        if levels > 0 && self.lb.rd_overloaded && avg_idle >= self.sd(cpu, 0).max_newidle_lb_cost {
            self.lb.cost_ns = 0;
            self.lb.acting = cpu;
            let mut curr_cost = 0;
            let mut continue_balancing = true;
            for lvl in 0..levels {
                let due = self.sd(cpu, lvl).last_balance
                    + self.get_sd_balance_interval(self.sd(cpu, lvl), false);
                next_balance = next_balance.min(due);
                if avg_idle < curr_cost + self.sd(cpu, lvl).max_newidle_lb_cost {
                    break;
                }
                if self.sd(cpu, lvl).flags & SD_BALANCE_NEWIDLE != 0 {
                    let Some(weight) = self.newidle_dice(cpu, lvl) else {
                        continue;
                    };
                    let before = self.lb.cost_ns;
                    pulled = self.sched_balance_rq(
                        cpu,
                        lvl,
                        IdleType::NewlyIdle,
                        &mut continue_balancing,
                    );
                    let domain_cost = self.lb.cost_ns - before;
                    // The kernel's cost of an attempt is never 0 (it
                    // counts it only then); a modelled one can be.
                    update_newidle_stats(self.sd_mut(cpu, lvl), weight * (pulled > 0) as u32);
                    self.update_newidle_cost(cpu, lvl, domain_cost);
                    curr_cost += domain_cost;
                }
                if pulled > 0 || !continue_balancing {
                    break;
                }
            }
            let rq = &mut self.lb.rq[cpu];
            rq.max_idle_balance_cost = rq.max_idle_balance_cost.max(curr_cost);
            let cost = std::mem::take(&mut self.lb.cost_ns);
            let first = self.cfs_tasks_keyed(cpu).min_by_key(|&(k, _)| k);
            if let Some((_, p)) = first {
                self.tasks[p].prog.overhead += cost;
            }
        } else if levels > 0 {
            let due =
                self.sd(cpu, 0).last_balance + self.get_sd_balance_interval(self.sd(cpu, 0), false);
            next_balance = next_balance.min(due);
        }
        let rq = &mut self.lb.rq[cpu];
        rq.next_balance = rq.next_balance.min(next_balance);
        if pulled > 0 {
            rq.idle_stamp = 0;
        } else {
            // nohz_balance_enter_idle: nohz.next_balance covers this CPU.
            self.lb.nohz_next_balance = self.lb.nohz_next_balance.min(rq.next_balance);
        }
        pulled > 0
    }

    /// NI_RANDOM (6.18.5+): a 1,024-sided die decides whether newidle
    /// balance tries this domain, in proportion to its recent success
    /// rate; a skipped try counts as a failure. Returns the weight of a
    /// success (the inverse of the odds), or None to skip.
    fn newidle_dice(&mut self, cpu: usize, lvl: usize) -> Option<u32> {
        if !self.cfg.features.enabled(Feature::NiRandom) {
            return Some(1);
        }
        let d1k = (self.lb.sched_rng[cpu].next_u64() as u32) % 1024;
        let sd = self.sd_mut(cpu, lvl);
        let weight = 1 + sd.newidle_ratio;
        if d1k > weight {
            update_newidle_stats(sd, 0);
            return None;
        }
        Some((1024 + weight / 2) / weight)
    }

    /// ttwu_do_activate's avg_idle update when a wakeup ends an idle
    /// period, and (v5.14-v6.6) SIS_PROP's wake_avg_idle reset to half of
    /// it.
    pub fn update_avg_idle(&mut self, cpu: usize) {
        let (now, jiffies) = (self.now, self.jiffies());
        let rq = &mut self.lb.rq[cpu];
        if rq.idle_stamp != 0 {
            let delta = now.saturating_sub(rq.idle_stamp);
            let max = 2 * rq.max_idle_balance_cost;
            rq.avg_idle = update_avg(rq.avg_idle, delta).min(max);
            rq.wake_stamp = jiffies;
            rq.wake_avg_idle = rq.avg_idle / 2;
            rq.idle_stamp = 0;
        }
    }

    /// nohz_balancer_kick: a busy CPU asks an idle one to balance on behalf
    /// of all idle CPUs, when it has more than one task or its LLC has more
    /// than one busy CPU (at most once a jiffy).
    fn nohz_balancer_kick(&mut self, cpu: usize) {
        let jiffies = self.jiffies();
        if jiffies < self.lb.nohz_next_balance || self.sd.cpu[cpu].is_empty() {
            return;
        }
        // Two busy CPUs in the LLC are enough: stop counting at the second.
        let kick = self.rqs[cpu].nr_running >= 2 || {
            let llc = self.machine.llc_cpus(self.machine.cpus[cpu].llc);
            llc.iter()
                .filter(|&&c| !self.idle_mask.test(c))
                .nth(1)
                .is_some()
        };
        if !kick {
            return;
        }
        // kick_ilb
        self.lb.nohz_next_balance = jiffies + 1;
        let n = self.rqs.len();
        let Some(ilb) = self
            .idle_mask
            .iter_range(0, n - 1)
            .find(|&c| c != cpu && self.nohz_idle(c))
        else {
            return;
        };
        if self.events.is_pending(EventKind::IdleBalance, ilb) {
            return;
        }
        self.lb.nohz_kicks += 1;
        self.stats.ipis_sent += 1;
        self.rqs[ilb].stats.ipis_received += 1;
        let Activity::Idle { since } = self.rqs[ilb].act else {
            return;
        };
        let exit = self.idle_state_at(self.now - since).exit_latency_ns;
        let at = self.now + self.machine.cost.ipi_latency_ns + exit;
        self.events.push(at, EventKind::IdleBalance, ilb);
    }

    /// In nohz.idle_cpus_mask: idle with the tick stopped.
    fn nohz_idle(&self, cpu: usize) -> bool {
        let rq = &self.rqs[cpu];
        rq.is_idle() && !rq.tick_on && self.idle_cpu(cpu)
    }

    /// The kick reaches the idle CPU: _nohz_idle_balance over every idle
    /// CPU whose balance is due (starting after the kicked one, itself
    /// last), on their behalf.
    pub fn on_idle_balance(&mut self, ilb: usize) {
        if !self.nohz_idle(ilb) || self.rqs[ilb].need_resched {
            return;
        }
        let n = self.rqs.len();
        let jiffies = self.jiffies();
        let mut next = jiffies + 60 * self.cfg.hz as u64;
        self.lb.acting = ilb;
        for k in 1..=n {
            let c = (ilb + k) % n;
            if self.rqs[ilb].need_resched {
                break;
            }
            if !self.nohz_idle(c) {
                continue;
            }
            if jiffies >= self.lb.rq[c].next_balance {
                self.lb.cost_ns = 0;
                self.sched_balance_domains(c, IdleType::Idle);
            }
            next = next.min(self.lb.rq[c].next_balance);
        }
        self.lb.cost_ns = 0;
        self.lb.nohz_next_balance = next;
        if self.rqs[ilb].need_resched {
            self.on_resched(ilb);
        }
    }

    /// active_load_balance_cpu_stop, run by the stopper on the busiest CPU
    /// before it picks its next task (`prev` has just been preempted):
    /// push one task to push_cpu, the preempted one if nothing else may go.
    pub fn active_balance_stop(&mut self, cpu: usize, prev: Option<Pid>) {
        if !std::mem::take(&mut self.lb.rq[cpu].active_balance) {
            return;
        }
        let target = self.lb.rq[cpu].push_cpu;
        let Some(lvl) = (0..self.sd.cpu[target].len())
            .find(|&l| self.sd.span(self.sd(target, l)).contains(&cpu))
        else {
            return;
        };
        self.sd_mut(target, lvl).stats.alb_count += 1;
        self.lb.active_balances += 1;
        let mut env = LbEnv::new(target, lvl, IdleType::Idle, Vec::new());
        (env.migration_type, env.flags, env.src) = (MigrationType::Task, LBF_ACTIVE_LB, cpu);
        let running = prev.filter(|&p| self.tasks[p].se.on_rq && !self.tasks[p].se.sched_delayed);
        let mut cands: Vec<Pid> = self.cfs_tasks_from_tail(cpu, usize::MAX);
        cands.retain(|&p| Some(p) != self.rqs[cpu].curr);
        cands.extend(running);
        let pick = cands.into_iter().find(|&p| {
            let is_prev = Some(p) == running;
            (is_prev && self.tasks[p].is_allowed(target))
                || (!is_prev && self.can_migrate_task(p, &mut env))
        });
        let Some(p) = pick else {
            self.sd_mut(target, lvl).stats.alb_failed += 1;
            if self.decisions {
                env.why = Some(LbWhy::PushFailed);
                self.trace_lb(cpu, &env, 0);
            }
            return;
        };
        if Some(p) == running {
            self.put_prev_task_fair(cpu, p);
        }
        self.lb.acting = cpu;
        self.migrate_to(p, cpu, target, true);
        let d = self.sd_mut(target, lvl);
        d.stats.alb_pushed += 1;
        d.nr_balance_failed = 0;
        if self.decisions {
            (env.why, env.first) = (Some(LbWhy::Pushed), Some(p));
            self.trace_lb(cpu, &env, 1);
        }
    }

    /// The longest an idle CPU may sit next to a waiting task of its LLC
    /// before it counts as a wasted core: two of the LLC domain's longest
    /// balance intervals (a cache-hot task is only taken on the second
    /// failure) plus the kick, the IPI, the deepest idle exit and a switch.
    pub fn wasted_core_bound(&self, cpu: usize) -> u64 {
        let c = &self.machine.cost;
        let deepest = c.idle_states.iter().map(|s| s.exit_latency_ns).max();
        let llc_interval = self.sd.cpu[cpu]
            .iter()
            .take_while(|d| d.flags & SD_SHARE_LLC != 0 || d.name == "SMT")
            .last()
            .or(self.sd.cpu[cpu].first())
            .map_or(0, |d| d.max_interval * 1_000_000);
        2 * llc_interval
            + 2 * self.tick_ns
            + c.ipi_latency_ns
            + deepest.unwrap_or(0)
            + c.context_switch_ns
            + c.mm_switch_ns
    }

    /// The "wasted cores" invariant (Lozi et al., EuroSys 2016), checked at
    /// each tick of a CPU with waiting tasks: an idle CPU of the same LLC
    /// that one of them may run on, idle since before the task started
    /// waiting, for longer than the bound, is one wasted-core episode.
    fn count_wasted_cores(&mut self, cpu: usize) {
        let llc = self.machine.cpus[cpu].llc;
        if self.rqs[cpu].cfs.h_nr_runnable < 2 || self.idle_in_llc[llc] == 0 {
            return;
        }
        let bound = self.wasted_core_bound(cpu);
        let span = self.machine.llc_cpus(llc);
        let (lo, hi) = (span[0], span[span.len() - 1]);
        // The LLC's idle CPUs, ascending, from the idle mask (llc_cpus is
        // ascending too); the waiting tasks are listed only if one is idle.
        let mut next = self.idle_mask.iter_range(lo, hi).next();
        let mut waiting: Option<Vec<((usize, u64), Pid)>> = None;
        while let Some(o) = next {
            next = self.idle_mask.iter_range(o + 1, hi).next();
            let Activity::Idle { since } = self.rqs[o].act else {
                continue;
            };
            if self.machine.cpus[o].llc != llc
                || !self.idle_cpu(o)
                || self.lb.rq[o].wasted_counted == Some(since)
            {
                continue;
            }
            let waiting = waiting.get_or_insert_with(|| {
                self.cfs_tasks_keyed(cpu)
                    .filter(|&(_, p)| {
                        !self.tasks[p].se.sched_delayed && self.tasks[p].stats.wait_start > 0
                    })
                    .collect()
            });
            // The first queued that may run there (a throttled group's
            // tasks may not move: throttled_lb_pair).
            let Some((_, p)) = waiting
                .iter()
                .copied()
                .filter(|&(_, p)| self.tasks[p].is_allowed(o) && !self.throttled_lb_pair(p, cpu, o))
                .min_by_key(|&(k, _)| k)
            else {
                continue;
            };
            let tg = self.tasks[p].tg;
            let unthrottled = self.rqs[cpu].gcfs.get(tg).map_or(0, |g| g.unthrottled_at);
            let from = since.max(self.tasks[p].stats.wait_start).max(unthrottled);
            let len = self.now - from;
            if len > bound {
                self.lb.rq[o].wasted_counted = Some(since);
                self.lb.wasted_episodes += 1;
                self.lb.wasted_ns += len;
                self.lb.wasted_first.get_or_insert_with(|| {
                    format!(
                        "wasted core: cpu{o} idle for {len} ns (bound {bound} ns) while task {} \
                         waits on cpu{cpu} in the same LLC",
                        self.tasks[p].pid
                    )
                });
            }
        }
    }
}

/// group_is_overloaded / group_has_capacity / group_classify.
fn group_classify(pct: u64, imbalanced: bool, s: &SgStats) -> GroupType {
    let overloaded = s.sum_nr_running > s.group_weight
        && (s.group_capacity * 100 < s.group_util * pct
            || s.group_capacity * pct < s.group_runnable * 100);
    let has_capacity = s.sum_nr_running < s.group_weight
        || (s.group_capacity * pct >= s.group_runnable * 100
            && s.group_capacity * 100 > s.group_util * pct);
    if overloaded {
        GroupType::Overloaded
    } else if imbalanced {
        GroupType::Imbalanced
    } else if s.smt_balance {
        GroupType::SmtBalance
    } else if !has_capacity {
        GroupType::FullyBusy
    } else {
        GroupType::HasSpare
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_buckets_match_bcc() {
        assert_eq!(log2_bucket(0), 0);
        assert_eq!(log2_bucket(1), 1);
        assert_eq!(log2_bucket(3), 2);
        assert_eq!(log2_bucket(4), 3);
        assert_eq!(log2_bucket(1023), 10);
        assert_eq!(log2_bucket(1024), 11);
    }

    #[test]
    fn classification_follows_capacity_rules() {
        let s = SgStats {
            group_capacity: 4096,
            group_weight: 4,
            sum_nr_running: 5,
            group_util: 4000,
            group_runnable: 5000,
            ..SgStats::default()
        };
        assert_eq!(group_classify(117, false, &s), GroupType::Overloaded);
        let s = SgStats {
            sum_nr_running: 4,
            ..s
        };
        assert_eq!(group_classify(117, false, &s), GroupType::FullyBusy);
        assert_eq!(group_classify(117, true, &s), GroupType::Imbalanced);
        let s = SgStats {
            sum_nr_running: 3,
            ..s
        };
        assert_eq!(group_classify(117, false, &s), GroupType::HasSpare);
    }
}
