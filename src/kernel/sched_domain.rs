//! Sched domains and groups (kernel/sched/topology.c): the per-CPU stack of
//! balancing levels built from the machine's topology, as `build_sched_domains`
//! builds it — SMT, CLS, MC (CACHE + MC where the LLC is smaller than the
//! core group, as on POWER), PKG, NODE and one NUMA level per distance —
//! with degenerate levels removed, the `sd_init` flags and tunables, the
//! groups (the child level's spans, local group first) and the per-domain
//! balancing state and schedstat counters.
//!
//! NUMA levels are built like the kernel's `sd_numa_mask` (all nodes within
//! the level's distance); their groups are the child spans of the CPUs in
//! the span, which is what the kernel's overlapping groups reduce to on the
//! fully connected machines of the presets. A group's balance mask is its
//! span.

use crate::machine::Machine;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::rc::Rc;
use std::sync::Arc;

/// SD_* flags (include/linux/sched/sd_flags.h), in bit order.
pub const SD_BALANCE_NEWIDLE: u32 = 1 << 0;
pub const SD_BALANCE_EXEC: u32 = 1 << 1;
pub const SD_BALANCE_FORK: u32 = 1 << 2;
pub const SD_BALANCE_WAKE: u32 = 1 << 3;
pub const SD_WAKE_AFFINE: u32 = 1 << 4;
pub const SD_ASYM_CPUCAPACITY: u32 = 1 << 5;
pub const SD_ASYM_CPUCAPACITY_FULL: u32 = 1 << 6;
pub const SD_SHARE_CPUCAPACITY: u32 = 1 << 7;
pub const SD_CLUSTER: u32 = 1 << 8;
pub const SD_SHARE_LLC: u32 = 1 << 9;
pub const SD_SERIALIZE: u32 = 1 << 10;
pub const SD_ASYM_PACKING: u32 = 1 << 11;
pub const SD_PREFER_SIBLING: u32 = 1 << 12;
pub const SD_NUMA: u32 = 1 << 13;

/// Flag names, in bit order (as /sys/kernel/debug/sched/domains/*/flags).
pub const SD_FLAG_NAMES: [&str; 14] = [
    "SD_BALANCE_NEWIDLE",
    "SD_BALANCE_EXEC",
    "SD_BALANCE_FORK",
    "SD_BALANCE_WAKE",
    "SD_WAKE_AFFINE",
    "SD_ASYM_CPUCAPACITY",
    "SD_ASYM_CPUCAPACITY_FULL",
    "SD_SHARE_CPUCAPACITY",
    "SD_CLUSTER",
    "SD_SHARE_LLC",
    "SD_SERIALIZE",
    "SD_ASYM_PACKING",
    "SD_PREFER_SIBLING",
    "SD_NUMA",
];

/// node_reclaim_distance: NUMA levels farther than this lose
/// SD_BALANCE_EXEC/FORK and SD_WAKE_AFFINE.
const NODE_RECLAIM_DISTANCE: u32 = 30;
/// sd_init's busy_factor.
const BUSY_FACTOR: u32 = 16;

/// The flag bit of a name such as `SD_SHARE_LLC`.
pub fn flag_by_name(name: &str) -> Option<u32> {
    SD_FLAG_NAMES
        .iter()
        .position(|&n| n == name)
        .map(|i| 1 << i)
}

/// `SD_A SD_B ...` for a flag word.
pub fn flag_names(flags: u32) -> String {
    let names: Vec<&str> = SD_FLAG_NAMES
        .iter()
        .enumerate()
        .filter(|(i, _)| flags & (1 << i) != 0)
        .map(|(_, n)| *n)
        .collect();
    names.join(" ")
}

/// Index of the idle type in schedstat arrays (enum cpu_idle_type, v16+).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleType {
    /// __CPU_NOT_IDLE: the balancing CPU is busy.
    NotIdle = 0,
    /// CPU_IDLE: periodic or nohz balance of an idle CPU.
    Idle = 1,
    /// CPU_NEWLY_IDLE: balance on the way into idle.
    NewlyIdle = 2,
}

/// Per-idle-type load-balance counters of one domain (schedstat v17).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LbCounters {
    pub lb_count: u64,
    pub lb_balanced: u64,
    pub lb_failed: u64,
    pub lb_imbalance_load: u64,
    pub lb_imbalance_util: u64,
    pub lb_imbalance_task: u64,
    pub lb_imbalance_misfit: u64,
    pub lb_gained: u64,
    pub lb_hot_gained: u64,
    pub lb_nobusyq: u64,
    pub lb_nobusyg: u64,
}

impl LbCounters {
    /// The 11 fields in /proc/schedstat order.
    pub fn fields(&self) -> [u64; 11] {
        [
            self.lb_count,
            self.lb_balanced,
            self.lb_failed,
            self.lb_imbalance_load,
            self.lb_imbalance_util,
            self.lb_imbalance_task,
            self.lb_imbalance_misfit,
            self.lb_gained,
            self.lb_hot_gained,
            self.lb_nobusyq,
            self.lb_nobusyg,
        ]
    }

    pub fn add(&mut self, o: &LbCounters) {
        let sum: Vec<u64> = self
            .fields()
            .iter()
            .zip(o.fields())
            .map(|(a, b)| a + b)
            .collect();
        *self = LbCounters {
            lb_count: sum[0],
            lb_balanced: sum[1],
            lb_failed: sum[2],
            lb_imbalance_load: sum[3],
            lb_imbalance_util: sum[4],
            lb_imbalance_task: sum[5],
            lb_imbalance_misfit: sum[6],
            lb_gained: sum[7],
            lb_hot_gained: sum[8],
            lb_nobusyq: sum[9],
            lb_nobusyg: sum[10],
        };
    }
}

/// A domain's schedstat counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SdStats {
    pub lb: [LbCounters; 3],
    pub alb_count: u64,
    pub alb_failed: u64,
    pub alb_pushed: u64,
    pub ttwu_wake_remote: u64,
    pub ttwu_move_affine: u64,
    pub ttwu_move_balance: u64,
}

impl SdStats {
    /// The 45 fields of a v17 domain line.
    pub fn fields(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.lb.iter().flat_map(|c| c.fields()).collect();
        // alb_*, then sbe_* and sbf_* (never incremented by the kernel).
        v.extend([self.alb_count, self.alb_failed, self.alb_pushed]);
        v.extend([0; 6]);
        v.extend([
            self.ttwu_wake_remote,
            self.ttwu_move_affine,
            self.ttwu_move_balance,
        ]);
        v
    }
}

/// struct sched_group: a child-level span within a domain, shared by every
/// CPU of the domain (like the kernel's sched_group and its sgc).
#[derive(Clone, Debug)]
pub struct SchedGroup {
    pub cpus: Vec<usize>,
    /// The child domain's flags (sg->flags).
    pub flags: u32,
    /// sgc->capacity: Σ CPU capacity.
    pub capacity: u64,
    /// sg->cores: the distinct cores among its CPUs.
    pub cores: usize,
    /// sgc->imbalance: a child balance failed because of pinned tasks.
    pub imbalance: bool,
}

/// struct sched_domain of one CPU at one level.
#[derive(Clone, Debug)]
pub struct SchedDomain {
    pub name: &'static str,
    /// Index into `SchedDomains::spans`.
    pub span: usize,
    pub flags: u32,
    /// The groups (indices into `SchedDomains::groups`) from `first` on,
    /// wrapping around: the local group first. The CPUs of one span share
    /// one ring, each starting at its own group (a list per CPU was 8 MB
    /// at smp:cpus=1024 and 128 MB at 4096).
    ring: Arc<[usize]>,
    first: usize,
    pub min_interval: u64,
    pub max_interval: u64,
    pub busy_factor: u32,
    pub imbalance_pct: u32,
    pub cache_nice_tries: u32,
    pub imb_numa_nr: u32,
    /// Current interval, ms.
    pub balance_interval: u64,
    /// jiffies of the last periodic balance.
    pub last_balance: u64,
    pub nr_balance_failed: u32,
    /// Newidle balance attempts and (weighted) successes over about the
    /// last 1,024, and their ratio out of 1,024 (NI_RANDOM).
    pub newidle_call: u32,
    pub newidle_success: u32,
    pub newidle_ratio: u32,
    /// Largest newidle balance cost seen, ns (decays 1 % per second).
    pub max_newidle_lb_cost: u64,
    /// jiffies of the last decay.
    pub last_decay_max_lb_cost: u64,
    /// avg_scan_cost (SIS_PROP, select_idle_cpu): the scans' time started
    /// from this CPU while this is its sd_llc, ns, averaged 1/8 per scan.
    pub avg_scan_cost: u64,
    pub stats: SdStats,
}

impl SchedDomain {
    pub fn nr_groups(&self) -> usize {
        self.ring.len()
    }

    /// The `i`-th group, the local one being 0.
    pub fn group(&self, i: usize) -> usize {
        // first + i < 2 × len: one subtraction, not a division (a scan of
        // a 4096-group domain asks for every group).
        let (j, n) = (self.first + i, self.ring.len());
        self.ring[if j >= n { j - n } else { j }]
    }

    /// The groups in order, the local one first.
    pub fn groups(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.ring.len()).map(|i| self.group(i))
    }
}

/// Every CPU's domain stack (index 0 = lowest level) and the shared groups.
#[derive(Clone, Debug, Default)]
pub struct SchedDomains {
    pub cpu: Vec<Vec<SchedDomain>>,
    pub groups: Vec<SchedGroup>,
    pub spans: Vec<Vec<usize>>,
}

/// A level the topology offers: name, topology flags, NUMA distance (0 for
/// non-NUMA levels) and the span of each CPU.
struct LevelDef {
    name: &'static str,
    flags: u32,
    distance: u32,
    /// Shared by the CPUs of one span (n copies of a 4096-CPU span were
    /// 134 MB a level).
    span_of: Vec<Rc<[usize]>>,
}

/// The topology levels in `sched_domain_topology` order.
fn level_defs(m: &Machine) -> Vec<LevelDef> {
    let n = m.nr_cpus();
    // Each CPU's span by `key` (a group number below 2n): one shared copy
    // per key.
    let by = |key: &dyn Fn(usize) -> usize, f: &dyn Fn(usize) -> Vec<usize>| {
        let mut made: Vec<Option<Rc<[usize]>>> = vec![None; 2 * n];
        (0..n)
            .map(|c| made[key(c)].get_or_insert_with(|| f(c).into()).clone())
            .collect::<Vec<_>>()
    };
    let llc = by(&|c| m.cpus[c].llc, &|c| m.llc_cpus(m.cpus[c].llc).to_vec());
    let coregroup = by(&|c| m.cpus[c].coregroup, &|c| {
        m.coregroup_cpus(m.cpus[c].coregroup).to_vec()
    });
    // arm64's cpu_clustergroup_mask falls back to the SMT mask when the
    // cluster is the whole core group: CLS then degenerates.
    let whole = |c: usize| m.cluster_cpus(m.cpus[c].cluster) == &*llc[c];
    let cluster = by(
        &|c| {
            if whole(c) {
                n + m.cpus[c].core
            } else {
                m.cpus[c].cluster
            }
        },
        &|c| {
            if whole(c) {
                m.smt_siblings(c).to_vec()
            } else {
                m.cluster_cpus(m.cpus[c].cluster).to_vec()
            }
        },
    );
    let mut defs = vec![
        LevelDef {
            name: "SMT",
            flags: SD_SHARE_CPUCAPACITY | SD_SHARE_LLC,
            distance: 0,
            span_of: by(&|c| m.cpus[c].core, &|c| m.smt_siblings(c).to_vec()),
        },
        LevelDef {
            name: "CLS",
            flags: SD_CLUSTER | SD_SHARE_LLC,
            distance: 0,
            span_of: cluster,
        },
    ];
    if llc != coregroup {
        // powerpc: a CACHE level for the shared cache below MC.
        defs.push(LevelDef {
            name: "CACHE",
            flags: SD_SHARE_LLC,
            distance: 0,
            span_of: llc,
        });
        defs.push(LevelDef {
            name: "MC",
            flags: 0,
            distance: 0,
            span_of: coregroup,
        });
    } else {
        defs.push(LevelDef {
            name: "MC",
            flags: SD_SHARE_LLC,
            distance: 0,
            span_of: llc,
        });
    }
    let node_span = |c: usize, d: u32| -> Vec<usize> {
        let home = m.cpus[c].node;
        (0..n)
            .filter(|&o| m.node_distance(home, m.cpus[o].node) <= d)
            .collect()
    };
    let local = m.node_distance(0, 0);
    defs.push(LevelDef {
        name: "PKG",
        flags: 0,
        distance: 0,
        span_of: by(&|c| m.cpus[c].node, &|c| {
            m.node_cpus(m.cpus[c].node).to_vec()
        }),
    });
    defs.push(LevelDef {
        name: "NODE",
        flags: 0,
        distance: 0,
        span_of: by(&|c| m.cpus[c].node, &|c| node_span(c, local)),
    });
    let mut dists: Vec<u32> = m.numa_distance.iter().flatten().copied().collect();
    dists.sort_unstable();
    dists.dedup();
    for d in dists.into_iter().filter(|&d| d > local) {
        defs.push(LevelDef {
            name: "NUMA",
            flags: SD_NUMA,
            distance: d,
            span_of: by(&|c| m.cpus[c].node, &|c| node_span(c, d)),
        });
    }
    defs
}

/// sd_init: flags and tunables of a level whose span has `weight` CPUs.
fn sd_init(name: &'static str, topo_flags: u32, distance: u32, weight: u64) -> SchedDomain {
    let mut flags = SD_BALANCE_NEWIDLE
        | SD_BALANCE_EXEC
        | SD_BALANCE_FORK
        | SD_WAKE_AFFINE
        | SD_PREFER_SIBLING
        | topo_flags;
    let (mut imbalance_pct, mut cache_nice_tries) = (117, 0);
    if flags & SD_SHARE_CPUCAPACITY != 0 {
        imbalance_pct = 110;
    } else if flags & SD_SHARE_LLC != 0 {
        imbalance_pct = 117;
        cache_nice_tries = 1;
    } else if flags & SD_NUMA != 0 {
        cache_nice_tries = 2;
        flags &= !SD_PREFER_SIBLING;
        flags |= SD_SERIALIZE;
        if distance > NODE_RECLAIM_DISTANCE {
            flags &= !(SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_WAKE_AFFINE);
        }
    } else {
        cache_nice_tries = 1;
    }
    SchedDomain {
        name,
        span: 0,
        flags,
        ring: Arc::from(Vec::new()),
        first: 0,
        min_interval: weight,
        max_interval: 2 * weight,
        busy_factor: BUSY_FACTOR,
        imbalance_pct,
        cache_nice_tries,
        imb_numa_nr: 0,
        balance_interval: weight,
        last_balance: 0,
        nr_balance_failed: 0,
        // sd_init: a 50 % success rate to start with.
        newidle_call: 512,
        newidle_success: 256,
        newidle_ratio: 512,
        max_newidle_lb_cost: 0,
        last_decay_max_lb_cost: 0,
        avg_scan_cost: 0,
        stats: SdStats::default(),
    }
}

/// A lowest-level span's ring of groups and each CPU's place in it.
type LowestRing = (Arc<[usize]>, HashMap<usize, usize>);

impl SchedDomains {
    /// build_sched_domains for every CPU of `m`.
    pub fn build(m: &Machine) -> SchedDomains {
        let defs = level_defs(m);
        let mut sd = SchedDomains::default();
        // Span ids by content, and by shared copy (looked up only).
        let mut span_ids: BTreeMap<Rc<[usize]>, usize> = BTreeMap::new();
        let mut copy_ids: HashMap<*const usize, usize> = HashMap::new();
        // Which levels survive (not degenerate), per CPU.
        for c in 0..m.nr_cpus() {
            let mut stack: Vec<SchedDomain> = Vec::new();
            let mut prev: &[usize] = &[c];
            for def in &defs {
                let span = &def.span_of[c];
                // sd_degenerate / sd_parent_degenerate: a level no wider
                // than the one below it has a single group and goes.
                if span.len() <= prev.len() {
                    continue;
                }
                let id = *copy_ids.entry(span.as_ptr()).or_insert_with(|| {
                    let next = sd.spans.len();
                    let id = *span_ids.entry(span.clone()).or_insert(next);
                    if id == next {
                        sd.spans.push(span.to_vec());
                    }
                    id
                });
                let mut d = sd_init(def.name, def.flags, def.distance, span.len() as u64);
                d.span = id;
                stack.push(d);
                prev = &span[..];
            }
            sd.cpu.push(stack);
        }
        sd.build_groups(m);
        sd.set_imb_numa_nr();
        sd
    }

    /// build_sched_groups: a domain's groups are the child spans of its
    /// CPUs, in wrap-around order from the CPU (local group first); the
    /// lowest level's groups are single CPUs. Groups are shared by all CPUs
    /// of one domain span.
    fn build_groups(&mut self, m: &Machine) {
        // A group is known by its domain's span and its single CPU (lowest
        // level) or its child span (spans are deduplicated, so an id stands
        // for its CPUs). Per (domain span, lowest or not), the group id of
        // the CPU at each position of the span is found once, when a walk
        // first reaches it, not once per CPU of the span.
        let mut group_ids: HashMap<(usize, bool, usize), usize> = HashMap::new();
        let mut at: HashMap<(usize, bool), Vec<usize>> = HashMap::new();
        // Per (domain span, lowest or not): the ring, the walk of the first
        // CPU that reaches it.
        let mut rings: HashMap<(usize, bool), Arc<[usize]>> = HashMap::new();
        let mut covered: Vec<bool> = vec![false; m.nr_cpus()];
        // Per lowest-level span: its ring and each CPU's place in it. The
        // lowest level's groups are the span's CPUs one by one, so every
        // CPU's walk is the first walk rotated to start at the CPU: found
        // here without walking (a walk per CPU of a flat 4096-CPU LLC is
        // 16 M steps).
        let mut lowest: HashMap<usize, LowestRing> = HashMap::new();
        for c in 0..self.cpu.len() {
            for lvl in 0..self.cpu[c].len() {
                let sid = self.cpu[c][lvl].span;
                let key = (sid, lvl == 0);
                if let Some((ring, place)) = lowest.get(&sid).filter(|_| key.1) {
                    let d = &mut self.cpu[c][lvl];
                    (d.ring, d.first) = (ring.clone(), place[&c]);
                    continue;
                }
                let span = self.spans[sid].clone();
                let ids = at
                    .entry(key)
                    .or_insert_with(|| vec![usize::MAX; span.len()]);
                let start = span.iter().position(|&x| x == c).unwrap_or(0);
                let mut groups = Vec::new();
                for k in 0..span.len() {
                    let pos = (start + k) % span.len();
                    if covered[span[pos]] {
                        continue;
                    }
                    if ids[pos] == usize::MAX {
                        ids[pos] = self.group_at(m, sid, &span, pos, key.1, &mut group_ids);
                    }
                    for &x in &self.groups[ids[pos]].cpus {
                        covered[x] = true;
                    }
                    groups.push(ids[pos]);
                }
                for &x in &span {
                    covered[x] = false;
                }
                let ring = rings
                    .entry(key)
                    .or_insert_with(|| Arc::from(groups.clone()));
                // Share the span's ring when this CPU's walk is a rotation
                // of it (so whenever the groups partition the span in
                // runs); otherwise keep the CPU's own list.
                let first = ring.iter().position(|&g| Some(&g) == groups.first());
                let rotated = first.filter(|&f| {
                    ring.len() == groups.len()
                        && groups
                            .iter()
                            .enumerate()
                            .all(|(i, &g)| ring[(f + i) % ring.len()] == g)
                });
                let ring = ring.clone();
                if key.1 {
                    let place = ring
                        .iter()
                        .enumerate()
                        .map(|(i, &g)| (self.groups[g].cpus[0], i))
                        .collect();
                    lowest.insert(sid, (ring.clone(), place));
                }
                let d = &mut self.cpu[c][lvl];
                match rotated {
                    Some(f) => {
                        d.ring = ring;
                        d.first = f;
                    }
                    None => {
                        d.ring = Arc::from(groups);
                        d.first = 0;
                    }
                }
            }
        }
    }

    /// The id of the group of the CPU at `pos` of span `sid`, made if new.
    fn group_at(
        &mut self,
        m: &Machine,
        sid: usize,
        span: &[usize],
        pos: usize,
        lowest: bool,
        group_ids: &mut HashMap<(usize, bool, usize), usize>,
    ) -> usize {
        let j = span[pos];
        let child = (!lowest).then(|| {
            let d = self.child_of(j, span);
            (d.span, d.flags)
        });
        let key = match child {
            None => (sid, false, j),
            Some((cs, _)) => (sid, true, cs),
        };
        let next = self.groups.len();
        let id = *group_ids.entry(key).or_insert(next);
        if id == next {
            let (cpus, flags) = match child {
                None => (vec![j], 0),
                Some((cs, f)) => (self.spans[cs].clone(), f),
            };
            let capacity = cpus.iter().map(|&x| m.cpus[x].capacity as u64).sum();
            let cores = m.cores_of(&cpus).len();
            self.groups.push(SchedGroup {
                cpus,
                flags,
                capacity,
                cores,
                imbalance: false,
            });
        }
        id
    }

    /// CPU j's widest domain strictly inside `span` (its child level there).
    fn child_of(&self, j: usize, span: &[usize]) -> &SchedDomain {
        self.cpu[j]
            .iter()
            .rev()
            .find(|d| self.spans[d.span].len() < span.len())
            .expect("a CPU of a domain above the lowest has a child domain")
    }

    /// imb_numa_nr: how many tasks a NUMA level lets run on a node before
    /// balancing across nodes (build_sched_domains).
    fn set_imb_numa_nr(&mut self) {
        for stack in &mut self.cpu {
            let (mut imb, mut imb_span) = (0u32, 1u64);
            for i in 0..stack.len() {
                let weight = self.spans[stack[i].span].len() as u64;
                let child_llc = i > 0 && stack[i - 1].flags & SD_SHARE_LLC != 0;
                if stack[i].flags & SD_SHARE_LLC == 0 && child_llc {
                    let nr_llcs = weight / self.spans[stack[i - 1].span].len() as u64;
                    imb = if nr_llcs == 1 { weight >> 3 } else { nr_llcs } as u32;
                    imb = imb.max(1);
                    stack[i].imb_numa_nr = imb;
                    imb_span = stack[i + 1..]
                        .iter()
                        .find(|d| d.flags & SD_NUMA != 0)
                        .map_or(weight, |d| self.spans[d.span].len() as u64);
                } else if imb > 0 {
                    let factor = (weight / imb_span).max(1) as u32;
                    stack[i].imb_numa_nr = imb * factor;
                }
            }
        }
    }

    /// The CPUs of a domain.
    pub fn span(&self, d: &SchedDomain) -> &[usize] {
        &self.spans[d.span]
    }

    /// Apply `+SD_X`, `-SD_X` or a full `SD_A|SD_B` list to every domain
    /// of level `name`. Errors name the unknown flag or level.
    pub fn set_level_flags(&mut self, name: &str, spec: &str) -> Result<(), String> {
        let (set, add, del) = parse_flags_spec(spec)?;
        let mut found = false;
        for d in self.cpu.iter_mut().flatten().filter(|d| d.name == name) {
            found = true;
            d.flags = (set.unwrap_or(d.flags) | add) & !del;
        }
        if !found {
            let mut names: Vec<&str> = self.cpu.iter().flatten().map(|d| d.name).collect();
            names.sort_unstable();
            names.dedup();
            return Err(format!(
                "this machine has no `{name}` sched domain (it has: {})",
                names.join(", ")
            ));
        }
        Ok(())
    }

    /// The kernel's boot-time sched_domain_debug output for one CPU.
    pub fn debug_text(&self, cpu: usize) -> String {
        let mut s = format!("CPU{cpu} attaching sched-domain(s):\n");
        for (lvl, d) in self.cpu[cpu].iter().enumerate() {
            let pad = " ".repeat(lvl);
            let _ = writeln!(
                s,
                "{pad} domain-{lvl}: span={} level={}",
                cpulist(self.span(d)),
                d.name
            );
            let groups: Vec<String> = d
                .groups()
                .map(|g| {
                    let g = &self.groups[g];
                    let cap = if g.capacity != 1024 {
                        format!(" cap={}", g.capacity)
                    } else {
                        String::new()
                    };
                    format!(" {}:{{ span={}{cap} }}", g.cpus[0], cpulist(&g.cpus))
                })
                .collect();
            let _ = writeln!(s, "{pad}  groups:{}", groups.join(","));
            let _ = writeln!(
                s,
                "{pad}  flags={} imbalance_pct={} busy_factor={} cache_nice_tries={} \
                 min_interval={} max_interval={} balance_interval={}ms imb_numa_nr={}",
                flag_names(d.flags),
                d.imbalance_pct,
                d.busy_factor,
                d.cache_nice_tries,
                d.min_interval,
                d.max_interval,
                d.balance_interval,
                d.imb_numa_nr
            );
        }
        s
    }
}

/// Parse a flags spec into (replacement set, flags to add, to remove).
pub fn parse_flags_spec(spec: &str) -> Result<(Option<u32>, u32, u32), String> {
    let mut add = 0;
    let mut del = 0;
    let mut set: Option<u32> = None;
    for tok in spec
        .split(['|', ',', ' '])
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        let (sign, fname) = match tok.as_bytes()[0] {
            b'+' | b'-' => (Some(tok.as_bytes()[0]), &tok[1..]),
            _ => (None, tok),
        };
        let bit = flag_by_name(fname).ok_or_else(|| {
            format!(
                "unknown domain flag `{fname}` (known: {})",
                SD_FLAG_NAMES.join(", ")
            )
        })?;
        match sign {
            Some(b'+') => add |= bit,
            Some(_) => del |= bit,
            None => *set.get_or_insert(0) |= bit,
        }
    }
    Ok((set, add, del))
}

/// A CPU list in the kernel's %*pbl form: `0-3,8,10-11`.
pub fn cpulist(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// A CPU mask in /proc/schedstat's hex form (32-bit words, comma-separated,
/// most significant first).
pub fn cpumask_hex(cpus: &[usize], nr_cpus: usize) -> String {
    let words = nr_cpus.div_ceil(32).max(1);
    let mut w = vec![0u32; words];
    for &c in cpus {
        w[c / 32] |= 1 << (c % 32);
    }
    let parts: Vec<String> = w.iter().rev().map(|x| format!("{x:08x}")).collect();
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine;

    fn names(sd: &SchedDomains, cpu: usize) -> Vec<&'static str> {
        sd.cpu[cpu].iter().map(|d| d.name).collect()
    }

    #[test]
    fn xeon_levels_groups_and_flags() {
        let m = machine::from_spec("xeon-8269cy").unwrap();
        let sd = SchedDomains::build(&m);
        // PKG and NODE equal MC's span there and degenerate.
        assert_eq!(names(&sd, 0), ["SMT", "MC", "NUMA"]);
        let smt = &sd.cpu[0][0];
        assert_eq!(sd.span(smt), &[0, 52]);
        assert_eq!(smt.imbalance_pct, 110);
        assert_eq!(smt.flags & SD_SHARE_CPUCAPACITY, SD_SHARE_CPUCAPACITY);
        let mc = &sd.cpu[3][1];
        assert_eq!(sd.span(mc).len(), 52);
        assert_eq!(mc.nr_groups(), 26);
        assert_eq!(sd.groups[mc.group(0)].cpus, vec![3, 55]);
        assert_eq!(sd.groups[mc.group(1)].cpus, vec![4, 56]);
        assert_eq!(sd.groups[mc.group(0)].flags, smt.flags);
        assert_eq!(
            (mc.cache_nice_tries, mc.balance_interval, mc.max_interval),
            (1, 52, 104)
        );
        let numa = &sd.cpu[0][2];
        assert_eq!(numa.nr_groups(), 2);
        assert_eq!(numa.flags & SD_PREFER_SIBLING, 0);
        assert_ne!(numa.flags & SD_SERIALIZE, 0);
        assert_ne!(
            numa.flags & SD_WAKE_AFFINE,
            0,
            "distance 21 keeps WAKE_AFFINE"
        );
        assert_eq!(numa.cache_nice_tries, 2);
        // imb_numa_nr: the level above the LLC spans 2 LLCs.
        assert_eq!(numa.imb_numa_nr, 2);
    }

    #[test]
    fn power10_96_is_smt_mc_pkg() {
        let m = machine::from_spec("power10-96").unwrap();
        let sd = SchedDomains::build(&m);
        assert_eq!(names(&sd, 0), ["SMT", "MC", "PKG"]);
        assert_eq!(sd.span(&sd.cpu[0][0]), &[0, 2, 4, 6]);
        let mc = &sd.cpu[0][1];
        assert_eq!(mc.flags & SD_SHARE_LLC, 0);
        assert_eq!(mc.nr_groups(), 12);
        assert_eq!(sd.groups[mc.group(0)].cpus, vec![0, 2, 4, 6]);
        assert_eq!(sd.groups[mc.group(0)].capacity, 4096);
        let pkg = &sd.cpu[50][2];
        assert_eq!(pkg.nr_groups(), 2);
        assert_eq!(sd.groups[pkg.group(0)].cpus, (48..96).collect::<Vec<_>>());
    }

    #[test]
    fn milan_and_altra_and_far_numa() {
        let sd = SchedDomains::build(&machine::from_spec("milan-256").unwrap());
        assert_eq!(names(&sd, 0), ["SMT", "MC", "PKG", "NUMA"]);
        let numa = &sd.cpu[0][3];
        assert_eq!(numa.flags & (SD_WAKE_AFFINE | SD_BALANCE_FORK), 0);
        // altra-80 as the arm64 defconfig builds it (SCHED_CLUSTER not set):
        // MC spans one CPU and degenerates; no level shares a cache.
        let sd = SchedDomains::build(&machine::from_spec("altra-80").unwrap());
        assert_eq!(names(&sd, 5), ["PKG"]);
        assert_eq!(sd.span(&sd.cpu[5][0]).len(), 80);
        assert_eq!(sd.cpu[5][0].flags & SD_SHARE_LLC, 0);
    }

    #[test]
    fn flag_overrides() {
        let mut sd = SchedDomains::build(&machine::from_spec("snb-32").unwrap());
        sd.set_level_flags("MC", "-SD_BALANCE_NEWIDLE").unwrap();
        assert_eq!(sd.cpu[0][1].flags & SD_BALANCE_NEWIDLE, 0);
        assert!(sd
            .set_level_flags("MC", "SD_BOGUS")
            .unwrap_err()
            .contains("unknown domain flag `SD_BOGUS`"));
        assert!(sd.set_level_flags("CLS", "+SD_NUMA").is_err());
    }

    #[test]
    fn masks_print_like_the_kernel() {
        assert_eq!(cpulist(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(cpumask_hex(&[0, 1, 33], 40), "00000002,00000003");
        assert_eq!(
            cpumask_hex(&[0, 52], 104),
            "00000000,00000000,00100000,00000001"
        );
    }
}
