//! Task groups: the cgroup v2 cpu controller's hierarchy (struct task_group,
//! kernel/sched/core.c and the cgroup files cpu.weight and cpu.max).
//!
//! Group 0 is the root task group. Every other group has one group entity
//! and one cfs_rq per CPU (kept in `Rq::gse` / `Rq::gcfs`, indexed by the
//! group's id) and, with a cpu.max quota, a CFS bandwidth pool
//! (`bandwidth.rs`).

use super::prio::scale_load;

/// cpu.weight's default and range (CGROUP_WEIGHT_*).
pub const CGROUP_WEIGHT_DFL: u64 = 100;
pub const CGROUP_WEIGHT_MIN: u64 = 1;
pub const CGROUP_WEIGHT_MAX: u64 = 10_000;
/// cpu.max's default period and its limits (max_cfs_quota_period,
/// min_cfs_quota_period), in µs.
pub const CFS_PERIOD_DFL_US: u64 = 100_000;
const CFS_PERIOD_MIN_US: u64 = 1_000;
const CFS_PERIOD_MAX_US: u64 = 1_000_000;
/// The largest quota tg_set_cfs_bandwidth accepts (max_cfs_runtime: MAX_BW,
/// 2^44 - 1 µs, "more than 203 days"), in µs.
const CFS_QUOTA_MAX_US: u64 = (1 << 44) - 1;
/// The most task groups a run may have, the root excluded (ancestors
/// created on the way count too).
pub const MAX_CGROUPS: usize = 1024;
/// The deepest group: `/a` is at depth 1.
pub const MAX_CGROUP_DEPTH: usize = 32;
/// The most group runqueues (groups × CPUs): each group has a cfs_rq and
/// a group entity on every CPU.
pub const MAX_GROUP_RQS: usize = 1 << 20;
/// How many declared groups an error lists before "and N more".
const LISTED_GROUPS: usize = 8;

/// A declared group: `[[cgroup]] path = "/a/b", weight = 100, max = "50000 100000"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupSpec {
    pub path: String,
    pub weight: u64,
    /// cpu.max as (quota µs, period µs); None = "max".
    pub max: Option<(u64, u64)>,
}

/// struct task_group
#[derive(Clone, Debug)]
pub struct TaskGroup {
    pub path: String,
    pub parent: Option<usize>,
    /// Root 0, its children 1, ...
    pub depth: usize,
    pub weight: u64,
    /// tg->shares: sched_weight_from_cgroup(cpu.weight), scaled.
    pub shares: u64,
    /// tg->load_avg: Σ of its cfs_rqs' published load (an atomic).
    pub load_avg: i64,
    /// tg->runnable_avg of v3.16: Σ of its cfs_rqs' CPU fractions (×1024).
    pub runnable_avg: i64,
    /// cpu.max as (quota ns, period ns).
    pub quota: Option<(u64, u64)>,
    /// The CPU that last wrote tg->load_avg and when its cache line is free
    /// (for the cost of the shared atomic).
    pub last_writer: Option<usize>,
    pub line_free_at: u64,
    /// CPU time tasks took in the group before they moved out, minus what
    /// tasks that moved in had taken before (so that its usage is this plus
    /// its present tasks' sum_exec_runtime, as cpu.stat charges the group
    /// the task is in at the time).
    pub usage_moved: i64,
}

/// All task groups of a run.
#[derive(Clone, Debug)]
pub struct TaskGroups {
    pub tgs: Vec<TaskGroup>,
    /// Bumped whenever a group's load_avg changes: a group entity's share
    /// computed before is stale after it.
    pub load_epoch: u64,
}

impl Default for TaskGroups {
    fn default() -> Self {
        TaskGroups {
            tgs: vec![TaskGroup {
                path: "/".into(),
                parent: None,
                depth: 0,
                weight: CGROUP_WEIGHT_DFL,
                shares: scale_load(1024),
                load_avg: 0,
                runnable_avg: 0,
                quota: None,
                last_writer: None,
                line_free_at: 0,
                usage_moved: 0,
            }],
            load_epoch: 0,
        }
    }
}

/// sched_weight_from_cgroup: cpu.weight 100 is nice 0's 1024, rounded to
/// the closest integer; then scale_load.
pub fn shares_from_weight(weight: u64) -> u64 {
    scale_load((weight * 1024 + 50) / 100)
}

/// sched_weight_to_cgroup: the cpu.weight a group of these (unscaled)
/// shares reads, rounded to the closest and clamped to the range.
fn weight_from_shares(shares: u64) -> u64 {
    ((shares * 100 + 512) / 1024).clamp(CGROUP_WEIGHT_MIN, CGROUP_WEIGHT_MAX)
}

/// Parse cpu.max: "max", "max PERIOD" or "QUOTA PERIOD" (µs), as the file
/// takes it.
pub fn parse_cpu_max(s: &str) -> Result<Option<(u64, u64)>, String> {
    let bad = || {
        format!("`{s}` is not a cpu.max value: use \"max\", \"max 100000\" or \"50000 100000\" (quota and period in µs)")
    };
    let mut it = s.split_whitespace();
    let quota = it.next().ok_or_else(bad)?;
    let period = match it.next() {
        Some(p) => p.parse::<u64>().map_err(|_| bad())?,
        None => CFS_PERIOD_DFL_US,
    };
    if it.next().is_some() {
        return Err(bad());
    }
    if !(CFS_PERIOD_MIN_US..=CFS_PERIOD_MAX_US).contains(&period) {
        return Err(format!(
            "cpu.max period {period} µs is outside {CFS_PERIOD_MIN_US}..{CFS_PERIOD_MAX_US}"
        ));
    }
    if quota == "max" {
        return Ok(None);
    }
    let q = quota.parse::<u64>().map_err(|_| bad())?;
    if q < CFS_PERIOD_MIN_US {
        return Err(format!(
            "cpu.max quota {q} µs is below the minimum of 1000 µs"
        ));
    }
    if q > CFS_QUOTA_MAX_US {
        return Err(format!(
            "cpu.max quota {q} µs is above the kernel's maximum of {CFS_QUOTA_MAX_US} µs (max_cfs_runtime)"
        ));
    }
    Ok(Some((q, period)))
}

/// The components of a cgroup path; `.`/`..` would make the tree loop.
fn components(path: &str) -> Result<Vec<&str>, String> {
    if !path.starts_with('/') {
        return Err(format!("cgroup path `{path}` must start with /"));
    }
    let parts: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    if parts.is_empty() {
        return Err("`/` is the root group: it has no cpu.weight or cpu.max".into());
    }
    if let Some(c) = parts.iter().find(|c| **c == "." || **c == "..") {
        return Err(format!(
            "cgroup path `{path}` has `{c}`: a group cannot be its own ancestor (cycle)"
        ));
    }
    if parts.len() > MAX_CGROUP_DEPTH {
        return Err(format!(
            "cgroup path `{path}` is {} levels deep, above the limit of {MAX_CGROUP_DEPTH}",
            parts.len()
        ));
    }
    Ok(parts)
}

/// A cgroup path in its one spelling: `/a//b/` is `/a/b`.
pub fn normalize(path: &str) -> Result<String, String> {
    Ok(format!("/{}", components(path)?.join("/")))
}

impl TaskGroups {
    /// Build the hierarchy; ancestors not declared themselves are created
    /// with the defaults, as `mkdir -p` would.
    pub fn build(specs: &[CgroupSpec]) -> Result<TaskGroups, String> {
        let mut g = TaskGroups::default();
        let mut declared: Vec<String> = Vec::new();
        for s in specs {
            let path = normalize(&s.path)?;
            if declared.contains(&path) {
                return Err(format!("cgroup `{}` is declared twice", s.path));
            }
            declared.push(path);
            if !(CGROUP_WEIGHT_MIN..=CGROUP_WEIGHT_MAX).contains(&s.weight) {
                return Err(format!(
                    "cgroup `{}`: weight {} is outside 1..10000",
                    s.path, s.weight
                ));
            }
            let id = g.ensure(&s.path)?;
            if g.count() - 1 > MAX_CGROUPS {
                return Err(format!(
                    "more than {MAX_CGROUPS} cgroups (the limit), ancestors included"
                ));
            }
            let tg = &mut g.tgs[id];
            tg.weight = s.weight;
            tg.shares = shares_from_weight(s.weight);
            tg.quota = s.max.map(|(q, p)| (q * 1000, p * 1000));
        }
        Ok(g)
    }

    /// proc_sched_autogroup_set_nice (kernel/sched/autogroup.c): an
    /// autogroup's shares are the weight of its nice,
    /// scale_load(sched_prio_to_weight[nice + 20]), set by
    /// sched_group_set_shares before any task runs in it.
    pub fn set_autogroup_nice(&mut self, tg: usize, nice: i32) {
        let w = super::prio::PRIO_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize];
        self.tgs[tg].shares = scale_load(w);
        self.tgs[tg].weight = weight_from_shares(w);
    }

    /// The id of `path`, creating it and its ancestors as needed.
    fn ensure(&mut self, path: &str) -> Result<usize, String> {
        let mut parent = 0;
        let mut prefix = String::new();
        for c in components(path)? {
            prefix.push('/');
            prefix.push_str(c);
            parent = match self.find(&prefix) {
                Some(i) => i,
                None => {
                    self.tgs.push(TaskGroup {
                        path: prefix.clone(),
                        parent: Some(parent),
                        depth: self.tgs[parent].depth + 1,
                        ..TaskGroups::default().tgs.remove(0)
                    });
                    self.tgs.len() - 1
                }
            };
        }
        Ok(parent)
    }

    /// The group at `path` ("/" is the root).
    pub fn find(&self, path: &str) -> Option<usize> {
        let norm = if path.len() > 1 {
            path.trim_end_matches('/')
        } else {
            path
        };
        self.tgs.iter().position(|t| t.path == norm)
    }

    /// A task's group by path, with an error naming the first declared ones.
    pub fn lookup(&self, path: &str) -> Result<usize, String> {
        self.find(path).ok_or_else(|| {
            let mut known: Vec<&str> = self.tgs.iter().map(|t| t.path.as_str()).collect();
            let more = known.len().saturating_sub(LISTED_GROUPS);
            known.truncate(LISTED_GROUPS);
            let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
            format!(
                "cgroup `{path}` is not declared (add [[cgroup]] path = \"{path}\" or --cgroup {path}:weight=100; declared: {}{tail})",
                known.join(", ")
            )
        })
    }

    /// Refuse more group runqueues (groups × CPUs) than [`MAX_GROUP_RQS`].
    pub fn check_machine(&self, ncpus: usize) -> Result<(), String> {
        let rqs = self.count().saturating_mul(ncpus);
        if rqs > MAX_GROUP_RQS {
            return Err(format!(
                "{} groups × {ncpus} CPUs = {rqs} group runqueues, above the limit of {MAX_GROUP_RQS}",
                self.count()
            ));
        }
        Ok(())
    }

    /// Number of groups, the root included.
    pub fn count(&self) -> usize {
        self.tgs.len()
    }

    pub fn parent(&self, tg: usize) -> usize {
        self.tgs[tg].parent.unwrap_or(0)
    }

    pub fn depth(&self, tg: usize) -> usize {
        self.tgs[tg].depth
    }

    /// Whether `tg` is `anc` or below it.
    pub fn is_descendant(&self, mut tg: usize, anc: usize) -> bool {
        loop {
            if tg == anc {
                return true;
            }
            match self.tgs[tg].parent {
                Some(p) => tg = p,
                None => return false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(path: &str, weight: u64) -> CgroupSpec {
        CgroupSpec {
            path: path.into(),
            weight,
            max: None,
        }
    }

    #[test]
    fn weights_map_to_shares_like_the_kernel() {
        assert_eq!(shares_from_weight(100), scale_load(1024));
        assert_eq!(shares_from_weight(1), scale_load(10));
        assert_eq!(shares_from_weight(10_000), scale_load(102_400));
        assert_eq!(shares_from_weight(300), scale_load(3072));
        assert_eq!(weight_from_shares(1024), 100);
        assert_eq!(weight_from_shares(15), 1);
        assert_eq!(weight_from_shares(88761), 8668);
    }

    #[test]
    fn hierarchy_creates_ancestors_and_rejects_bad_input() {
        let g = TaskGroups::build(&[spec("/a/b/c", 50), spec("/a", 200)]).unwrap();
        assert_eq!(g.count(), 4);
        let c = g.find("/a/b/c").unwrap();
        assert_eq!(g.depth(c), 3);
        assert!(g.is_descendant(c, g.find("/a").unwrap()));
        assert_eq!(g.tgs[g.find("/a").unwrap()].weight, 200);
        assert_eq!(g.tgs[g.find("/a/b").unwrap()].weight, 100);
        assert!(TaskGroups::build(&[spec("/a", 1), spec("/a", 2)])
            .unwrap_err()
            .contains("twice"));
        assert!(TaskGroups::build(&[spec("/a", 0)])
            .unwrap_err()
            .contains("1..10000"));
        assert!(TaskGroups::build(&[spec("/a/../a", 100)])
            .unwrap_err()
            .contains("cycle"));
        assert!(g.lookup("/x").unwrap_err().contains("not declared"));
        assert!(TaskGroups::build(&[spec("/a", 1), spec("/a/", 2)])
            .unwrap_err()
            .contains("twice"));
    }

    #[test]
    fn limits_are_checked() {
        let deep = "/d".repeat(MAX_CGROUP_DEPTH + 1);
        let e = TaskGroups::build(&[spec(&deep, 100)]).unwrap_err();
        assert!(e.contains("limit of 32"), "{e}");
        assert!(TaskGroups::build(&[spec(&"/d".repeat(MAX_CGROUP_DEPTH), 100)]).is_ok());
        let many: Vec<_> = (0..=MAX_CGROUPS)
            .map(|i| spec(&format!("/g{i}"), 100))
            .collect();
        let e = TaskGroups::build(&many).unwrap_err();
        assert!(e.contains("more than 1024 cgroups"), "{e}");
        let g = TaskGroups::build(&many[..MAX_CGROUPS]).unwrap();
        let e = g.lookup("/x").unwrap_err();
        assert!(e.contains("and 1017 more") && e.len() < 300, "{e}");
        assert!(g.check_machine(1023).is_ok() && g.check_machine(1024).is_err());
    }

    #[test]
    fn cpu_max_parses_like_the_file() {
        assert_eq!(parse_cpu_max("max"), Ok(None));
        assert_eq!(parse_cpu_max("50000 100000"), Ok(Some((50_000, 100_000))));
        assert_eq!(parse_cpu_max("20000"), Ok(Some((20_000, 100_000))));
        assert!(parse_cpu_max("50000 100000 3").is_err());
        assert!(parse_cpu_max("half").is_err());
        assert!(parse_cpu_max("500 100000").is_err());
        assert!(parse_cpu_max("50000 2000000").is_err());
    }
}
