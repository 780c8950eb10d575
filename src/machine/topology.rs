//! CPU topology: which CPUs share a core, a cluster, a last-level cache, a
//! NUMA node, a socket — the masks `kernel/sched/topology.c` builds its
//! sched domains from (`cpu_smt_mask`, `cpu_clustergroup_mask`,
//! `cpu_coregroup_mask`, `cpumask_of_node`, `topology_core_cpumask`).
//!
//! A [`Machine`] is immutable once built: [`Machine::new`] validates the
//! per-CPU records and caches the CPU lists of every group, so the lookups
//! the scheduler does on hot paths (`smt_siblings`, `llc_cpus`, ...) are
//! slices, not searches. Do not edit the public fields of a built machine;
//! build a new one.

use super::cost::CostModel;
use serde::Serialize;

/// Where one CPU sits. All ids are dense (0..count) machine-wide, numbered in
/// order of their lowest CPU.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CpuTopo {
    /// Logical CPU number, as Linux enumerates the machine.
    pub cpu: usize,
    /// Physical core (SMT siblings share it; POWER: the SMT4 "small core").
    pub core: usize,
    /// Cluster (arm64 CLS level: cores sharing an L2/SCU/mesh stop). Equal to
    /// the core's own group where the machine has no clusters.
    pub cluster: usize,
    /// Last-level-cache domain as the *scheduler* sees it (sd_llc, the
    /// highest domain with SD_SHARE_LLC).
    pub llc: usize,
    /// NUMA node.
    pub node: usize,
    /// Physical package.
    pub socket: usize,
    /// `arch_scale_cpu_capacity`: 1024 for the biggest CPUs.
    pub capacity: u32,
    /// The kernel's MC-level group (`cpu_coregroup_mask`). Equal to `llc`
    /// everywhere except POWER10 LPARs with coregroup support, where MC is
    /// a chip hemisphere above the SMT4 LLC.
    pub coregroup: usize,
}

/// How Linux numbers the logical CPUs of a regular machine.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
pub enum Enumeration {
    /// x86 (Intel and AMD, ACPI MADT order): the first thread of every core
    /// of every socket, then all the second threads, and so on. On a 2×26×2
    /// Xeon, CPUs n and n+52 are siblings.
    ThreadsLast,
    /// Consecutive CPUs are SMT siblings (arm64, generic); without SMT,
    /// simply linear.
    SiblingsAdjacent,
    /// POWER9/POWER10 big cores: each big core's 2×threads consecutive CPUs
    /// hold two small cores, interleaved — small core 0 has the even CPUs
    /// (0,2,4,6), small core 1 the odd ones (1,3,5,7).
    PowerBigCore,
}

/// A regular machine: every socket alike, every group the same size.
/// Group sizes are in cores and must nest: cluster ⊆ LLC ⊆ coregroup ⊆ node ⊆ socket.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Shape {
    pub sockets: usize,
    pub nodes_per_socket: usize,
    pub cores_per_socket: usize,
    pub threads_per_core: usize,
    pub cores_per_cluster: usize,
    pub cores_per_llc: usize,
    pub cores_per_coregroup: usize,
    pub enumeration: Enumeration,
}

impl Shape {
    /// A machine of `sockets` × `cores_per_socket` × SMT`threads`, one NUMA
    /// node and one LLC per socket, no clusters, x86 numbering.
    pub fn new(sockets: usize, cores_per_socket: usize, threads: usize) -> Shape {
        Shape {
            sockets,
            nodes_per_socket: 1,
            cores_per_socket,
            threads_per_core: threads,
            cores_per_cluster: 1,
            cores_per_llc: cores_per_socket,
            cores_per_coregroup: cores_per_socket,
            enumeration: Enumeration::ThreadsLast,
        }
    }

    pub fn nr_cpus(&self) -> usize {
        self.sockets * self.cores_per_socket * self.threads_per_core
    }

    /// The CPU count, or an error naming [`MAX_CPUS`] when it is above it
    /// (checked before anything is allocated, overflow included).
    fn checked_cpus(&self) -> Result<usize, String> {
        let n = self
            .sockets
            .checked_mul(self.cores_per_socket)
            .and_then(|n| n.checked_mul(self.threads_per_core));
        match n {
            Some(n) if n <= MAX_CPUS => Ok(n),
            _ => Err(format!(
                "shape: {} sockets × {} cores × {} threads is above the limit of {MAX_CPUS} CPUs",
                self.sockets, self.cores_per_socket, self.threads_per_core
            )),
        }
    }

    fn check(&self) -> Result<(), String> {
        let fields = [
            ("sockets", self.sockets),
            ("nodes_per_socket", self.nodes_per_socket),
            ("cores_per_socket", self.cores_per_socket),
            ("threads_per_core", self.threads_per_core),
            ("cores_per_cluster", self.cores_per_cluster),
            ("cores_per_llc", self.cores_per_llc),
            ("cores_per_coregroup", self.cores_per_coregroup),
        ];
        if let Some((name, _)) = fields.iter().find(|(_, v)| *v == 0) {
            return Err(format!("shape: {name} must be at least 1"));
        }
        self.checked_cpus()?;
        if !self.cores_per_socket.is_multiple_of(self.nodes_per_socket) {
            return Err(format!(
                "shape: {} cores per socket do not split into {} nodes",
                self.cores_per_socket, self.nodes_per_socket
            ));
        }
        let per_node = self.cores_per_socket / self.nodes_per_socket;
        let nest = [
            ("coregroup", self.cores_per_coregroup, "node", per_node),
            (
                "LLC",
                self.cores_per_llc,
                "coregroup",
                self.cores_per_coregroup,
            ),
            ("cluster", self.cores_per_cluster, "LLC", self.cores_per_llc),
        ];
        for (inner, n, outer, m) in nest {
            if !m.is_multiple_of(n) {
                return Err(format!(
                    "shape: a {outer} of {m} cores does not split into {inner}s of {n} cores"
                ));
            }
        }
        if self.enumeration == Enumeration::PowerBigCore && !self.cores_per_socket.is_multiple_of(2)
        {
            return Err(
                "shape: POWER big cores need an even number of small cores per socket".into(),
            );
        }
        Ok(())
    }

    /// The per-CPU records, in CPU order.
    pub fn build_cpus(&self) -> Result<Vec<CpuTopo>, String> {
        self.check()?;
        let n = self.nr_cpus();
        let threads = self.threads_per_core;
        let total_cores = self.sockets * self.cores_per_socket;
        let per_node = self.cores_per_socket / self.nodes_per_socket;
        let mut cpus: Vec<Option<CpuTopo>> = vec![None; n];
        for core in 0..total_cores {
            let socket = core / self.cores_per_socket;
            let in_socket = core % self.cores_per_socket;
            for t in 0..threads {
                let cpu = match self.enumeration {
                    Enumeration::ThreadsLast => t * total_cores + core,
                    Enumeration::SiblingsAdjacent => core * threads + t,
                    Enumeration::PowerBigCore => (core / 2) * 2 * threads + t * 2 + core % 2,
                };
                cpus[cpu] = Some(CpuTopo {
                    cpu,
                    core,
                    cluster: core / self.cores_per_cluster,
                    llc: core / self.cores_per_llc,
                    node: socket * self.nodes_per_socket + in_socket / per_node,
                    socket,
                    capacity: 1024,
                    coregroup: core / self.cores_per_coregroup,
                });
            }
        }
        Ok(cpus
            .into_iter()
            .map(|c| c.expect("every CPU numbered once"))
            .collect())
    }
}

/// NUMA distance table with `local` on the diagonal and `remote` elsewhere.
pub fn uniform_distance(nodes: usize, local: u32, remote: u32) -> Vec<Vec<u32>> {
    (0..nodes)
        .map(|a| {
            (0..nodes)
                .map(|b| if a == b { local } else { remote })
                .collect()
        })
        .collect()
}

/// How far apart two CPUs are, for cache-refill and lock costs.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub enum Distance {
    SameCpu,
    Smt,
    Llc,
    Socket,
    Numa,
}

/// A machine: its CPUs, their grouping, NUMA distances and its cost model.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    pub name: String,
    pub description: String,
    pub cpus: Vec<CpuTopo>,
    pub nr_cores: usize,
    pub nr_llcs: usize,
    pub nr_nodes: usize,
    pub nr_sockets: usize,
    /// SLIT distances between nodes (10 = local).
    pub numa_distance: Vec<Vec<u32>>,
    pub cost: CostModel,
    /// Where `cost` came from, in words ("preset vm-2", "calibrate of
    /// 2026-11-27 (PATH)", ...): `--json`'s `machine.costs_from`.
    pub costs_from: String,
    #[serde(skip)]
    core_cpus: Vec<Vec<usize>>,
    #[serde(skip)]
    cluster_cpus: Vec<Vec<usize>>,
    #[serde(skip)]
    llc_cpus: Vec<Vec<usize>>,
    #[serde(skip)]
    coregroup_cpus: Vec<Vec<usize>>,
    #[serde(skip)]
    node_cpus: Vec<Vec<usize>>,
    #[serde(skip)]
    socket_cpus: Vec<Vec<usize>>,
    #[serde(skip)]
    os_cpu_ids: Vec<usize>,
    #[serde(skip)]
    smt_width: usize,
}

/// The most CPUs a machine may have (the kernel's largest NR_CPUS on
/// x86 is 8192; the simulator's event sources and per-CPU tables are sized
/// for this many). Checked before anything per CPU is allocated.
pub const MAX_CPUS: usize = 4096;

/// The most CPUs one LLC may hold: a whole machine of [`MAX_CPUS`] may be
/// one flat LLC.
pub const MAX_LLC_CPUS: usize = MAX_CPUS;

/// Members of each group, given each CPU's group id; ids must be dense.
fn groups(
    cpus: &[CpuTopo],
    what: &str,
    id: impl Fn(&CpuTopo) -> usize,
) -> Result<Vec<Vec<usize>>, String> {
    let count = cpus.iter().map(&id).max().map_or(0, |m| m + 1);
    if count > cpus.len() {
        // Dense ids never exceed the CPU count; refuse before allocating.
        return Err(format!(
            "topology: {what} ids are not dense ({what} {} with only {} CPUs)",
            count - 1,
            cpus.len()
        ));
    }
    let mut g = vec![Vec::new(); count];
    for c in cpus {
        g[id(c)].push(c.cpu);
    }
    if let Some(empty) = g.iter().position(|m| m.is_empty()) {
        return Err(format!(
            "topology: {what} ids are not dense ({what} {empty} has no CPU)"
        ));
    }
    Ok(g)
}

/// Every CPU of each inner group must share the outer group of the first.
fn check_nested(
    cpus: &[CpuTopo],
    inner_groups: &[Vec<usize>],
    inner: &str,
    outer: &str,
    outer_id: impl Fn(&CpuTopo) -> usize,
) -> Result<(), String> {
    for (i, members) in inner_groups.iter().enumerate() {
        let want = outer_id(&cpus[members[0]]);
        if let Some(&bad) = members.iter().find(|&&c| outer_id(&cpus[c]) != want) {
            return Err(format!(
                "topology: {inner} {i} spans two {outer}s (CPUs {} and {bad})",
                members[0]
            ));
        }
    }
    Ok(())
}

impl Machine {
    /// Build and validate a machine. `cpus[i].cpu` must be `i`; group ids must
    /// be dense and nest (core ⊆ cluster ⊆ LLC ⊆ coregroup ⊆ node and socket).
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        cpus: Vec<CpuTopo>,
        numa_distance: Vec<Vec<u32>>,
        cost: CostModel,
    ) -> Result<Machine, String> {
        if cpus.is_empty() {
            return Err("topology: a machine needs at least one CPU".into());
        }
        if cpus.len() > MAX_CPUS {
            return Err(format!(
                "topology: {} CPUs is above the limit of {MAX_CPUS} CPUs",
                cpus.len()
            ));
        }
        if let Some((i, c)) = cpus.iter().enumerate().find(|(i, c)| c.cpu != *i) {
            return Err(format!("topology: CPU record {i} says it is CPU {}", c.cpu));
        }
        let max_cap = cpus.iter().map(|c| c.capacity).max().unwrap_or(0);
        if max_cap != 1024 || cpus.iter().any(|c| c.capacity == 0) {
            return Err(
                "topology: capacities must be in 1..=1024 with the biggest CPU at 1024".into(),
            );
        }
        let core_cpus = groups(&cpus, "core", |c| c.core)?;
        let cluster_cpus = groups(&cpus, "cluster", |c| c.cluster)?;
        let llc_cpus = groups(&cpus, "llc", |c| c.llc)?;
        if let Some(big) = llc_cpus.iter().find(|l| l.len() > MAX_LLC_CPUS) {
            return Err(format!(
                "topology: an LLC of {} CPUs is above the limit of {MAX_LLC_CPUS}",
                big.len()
            ));
        }
        let coregroup_cpus = groups(&cpus, "coregroup", |c| c.coregroup)?;
        let node_cpus = groups(&cpus, "node", |c| c.node)?;
        let socket_cpus = groups(&cpus, "socket", |c| c.socket)?;
        check_nested(&cpus, &core_cpus, "core", "cluster", |c| c.cluster)?;
        check_nested(&cpus, &cluster_cpus, "cluster", "LLC", |c| c.llc)?;
        check_nested(&cpus, &llc_cpus, "LLC", "coregroup", |c| c.coregroup)?;
        check_nested(&cpus, &coregroup_cpus, "coregroup", "node", |c| c.node)?;
        check_nested(&cpus, &coregroup_cpus, "coregroup", "socket", |c| c.socket)?;
        let nr_nodes = node_cpus.len();
        if numa_distance.len() != nr_nodes || numa_distance.iter().any(|r| r.len() != nr_nodes) {
            return Err(format!(
                "topology: numa_distance must be {nr_nodes}×{nr_nodes}"
            ));
        }
        for (a, row) in numa_distance.iter().enumerate() {
            if row.iter().any(|&d| d < row[a]) || row[a] == 0 {
                return Err(format!(
                    "topology: node {a}'s own distance must be the smallest and non-zero"
                ));
            }
        }
        cost.validate()?;
        let smt_width = core_cpus.iter().map(Vec::len).max().unwrap_or(1);
        let os_cpu_ids = (0..cpus.len()).collect();
        Ok(Machine {
            name: name.into(),
            description: description.into(),
            nr_cores: core_cpus.len(),
            nr_llcs: llc_cpus.len(),
            nr_nodes,
            nr_sockets: socket_cpus.len(),
            cpus,
            numa_distance,
            cost,
            costs_from: String::new(),
            core_cpus,
            cluster_cpus,
            llc_cpus,
            coregroup_cpus,
            node_cpus,
            socket_cpus,
            os_cpu_ids,
            smt_width,
        })
    }

    /// Build a regular machine from its shape.
    pub fn from_shape(
        name: impl Into<String>,
        description: impl Into<String>,
        shape: &Shape,
        numa_distance: Vec<Vec<u32>>,
        cost: CostModel,
    ) -> Result<Machine, String> {
        Machine::new(name, description, shape.build_cpus()?, numa_distance, cost)
    }

    /// Record the operating system's CPU numbers (when the machine's dense
    /// numbering skips offline CPUs of the real host).
    pub(crate) fn set_os_cpu_ids(&mut self, ids: Vec<usize>) {
        assert_eq!(ids.len(), self.cpus.len());
        self.os_cpu_ids = ids;
    }

    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    pub fn nr_coregroups(&self) -> usize {
        self.coregroup_cpus.len()
    }

    /// The CPU's SMT siblings, itself included, ascending (`cpu_smt_mask`).
    pub fn smt_siblings(&self, cpu: usize) -> &[usize] {
        &self.core_cpus[self.cpus[cpu].core]
    }

    /// CPUs of a core, ascending.
    pub fn core_cpus(&self, core: usize) -> &[usize] {
        &self.core_cpus[core]
    }

    /// CPUs of a cluster, ascending (`cpu_clustergroup_mask`).
    pub fn cluster_cpus(&self, cluster: usize) -> &[usize] {
        &self.cluster_cpus[cluster]
    }

    /// The distinct cores of `cpus`, in order.
    pub fn cores_of(&self, cpus: &[usize]) -> Vec<usize> {
        let mut cores: Vec<usize> = cpus.iter().map(|&c| self.cpus[c].core).collect();
        cores.sort_unstable();
        cores.dedup();
        cores
    }

    /// CPUs sharing an LLC, ascending (sd_llc span).
    pub fn llc_cpus(&self, llc: usize) -> &[usize] {
        &self.llc_cpus[llc]
    }

    /// CPUs of an MC-level group, ascending (`cpu_coregroup_mask`).
    pub fn coregroup_cpus(&self, coregroup: usize) -> &[usize] {
        &self.coregroup_cpus[coregroup]
    }

    /// CPUs of a NUMA node, ascending (`cpumask_of_node`).
    pub fn node_cpus(&self, node: usize) -> &[usize] {
        &self.node_cpus[node]
    }

    /// CPUs of a socket, ascending (`topology_core_cpumask`).
    pub fn socket_cpus(&self, socket: usize) -> &[usize] {
        &self.socket_cpus[socket]
    }

    /// `cpus_share_cache`.
    pub fn shares_llc(&self, a: usize, b: usize) -> bool {
        self.cpus[a].llc == self.cpus[b].llc
    }

    /// Most threads per core.
    pub fn smt_width(&self) -> usize {
        self.smt_width
    }

    /// SLIT distance between two nodes (`node_distance`).
    pub fn node_distance(&self, a: usize, b: usize) -> u32 {
        self.numa_distance[a][b]
    }

    /// The OS's number for a CPU (identity except for hosts with offline CPUs).
    pub fn os_cpu_id(&self, cpu: usize) -> usize {
        self.os_cpu_ids[cpu]
    }

    /// How far apart two CPUs are. A different node, or a different socket,
    /// counts as `Numa`.
    pub fn distance(&self, from: usize, to: usize) -> Distance {
        let (a, b) = (&self.cpus[from], &self.cpus[to]);
        if from == to {
            Distance::SameCpu
        } else if a.core == b.core {
            Distance::Smt
        } else if a.llc == b.llc {
            Distance::Llc
        } else if a.socket == b.socket && a.node == b.node {
            Distance::Socket
        } else {
            Distance::Numa
        }
    }

    /// Cache-refill penalty for a task that last ran on `from` and now runs
    /// on `to` (0 on the same CPU).
    pub fn cache_refill_ns(&self, from: usize, to: usize) -> u64 {
        let c = &self.cost;
        match self.distance(from, to) {
            Distance::SameCpu => 0,
            Distance::Smt => c.cache_refill_smt_ns,
            Distance::Llc => c.cache_refill_llc_ns,
            Distance::Socket => c.cache_refill_socket_ns,
            Distance::Numa => c.cache_refill_numa_ns,
        }
    }

    /// One cache-line transfer from `from`'s cache to `to` (a core-to-core
    /// latency): the per-line cost the refill penalties are built from.
    pub fn line_transfer_ns(&self, from: usize, to: usize) -> u64 {
        self.cache_refill_ns(from, to) * super::cost::REFILL_MLP / super::cost::REFILL_LINES
    }

    /// One line describing the topology, e.g. "104 CPUs: 2 sockets × 26
    /// cores × SMT2; 2 LLCs of 52 CPUs; 2 NUMA nodes".
    pub fn summary(&self) -> String {
        fn sizes(g: &[Vec<usize>]) -> String {
            let first = g[0].len();
            if g.iter().all(|m| m.len() == first) {
                first.to_string()
            } else {
                let lo = g.iter().map(Vec::len).min().unwrap_or(0);
                let hi = g.iter().map(Vec::len).max().unwrap_or(0);
                format!("{lo}-{hi}")
            }
        }
        fn plural(n: usize, what: &str) -> String {
            format!("{n} {what}{}", if n == 1 { "" } else { "s" })
        }
        let cores_per_socket: Vec<Vec<usize>> =
            self.socket_cpus.iter().map(|s| self.cores_of(s)).collect();
        let mut s = format!(
            "{} CPUs: {} × {} cores",
            self.nr_cpus(),
            plural(self.nr_sockets, "socket"),
            sizes(&cores_per_socket)
        );
        if self.smt_width > 1 {
            s += &format!(" × SMT{}", self.smt_width);
        }
        if self.cluster_cpus.len() != self.core_cpus.len() {
            s += &format!("; clusters of {} CPUs", sizes(&self.cluster_cpus));
        }
        if self.llc_cpus.iter().all(|l| l.len() == 1) && self.nr_cpus() > 1 {
            // No sd_llc: no two CPUs share a cache the scheduler knows of.
            s += "; no shared LLC";
        } else {
            s += &format!(
                "; {} of {} CPUs",
                plural(self.nr_llcs, "LLC"),
                sizes(&self.llc_cpus)
            );
        }
        if self.coregroup_cpus.len() != self.llc_cpus.len() {
            s += &format!("; MC groups of {} CPUs", sizes(&self.coregroup_cpus));
        }
        s += &format!("; {}", plural(self.nr_nodes, "NUMA node"));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::cost;

    fn machine(shape: &Shape) -> Machine {
        let nodes = shape.sockets * shape.nodes_per_socket;
        Machine::from_shape(
            "t",
            "t",
            shape,
            uniform_distance(nodes, 10, 20),
            cost::generic_x86(),
        )
        .unwrap()
    }

    #[test]
    fn x86_numbering_puts_second_threads_last() {
        let m = machine(&Shape::new(2, 4, 2));
        assert_eq!(m.nr_cpus(), 16);
        assert_eq!(m.smt_siblings(1), &[1, 9]);
        assert_eq!(m.smt_siblings(9), &[1, 9]);
        assert_eq!(m.socket_cpus(1), &[4, 5, 6, 7, 12, 13, 14, 15]);
        assert_eq!(m.llc_cpus(0), &[0, 1, 2, 3, 8, 9, 10, 11]);
        assert_eq!(m.smt_width(), 2);
        assert_eq!(m.nr_cores, 8);
    }

    #[test]
    fn adjacent_and_power_numbering() {
        let mut s = Shape::new(1, 4, 2);
        s.enumeration = Enumeration::SiblingsAdjacent;
        let m = machine(&s);
        assert_eq!(m.smt_siblings(3), &[2, 3]);
        s.threads_per_core = 4;
        s.enumeration = Enumeration::PowerBigCore;
        let m = machine(&s);
        assert_eq!(m.smt_siblings(0), &[0, 2, 4, 6]);
        assert_eq!(m.smt_siblings(7), &[1, 3, 5, 7]);
        assert_eq!(m.smt_siblings(8), &[8, 10, 12, 14]);
        assert_eq!(m.cpus[9].core, 3);
    }

    #[test]
    fn distances_and_refill() {
        let mut s = Shape::new(2, 8, 2);
        s.cores_per_llc = 4;
        s.cores_per_coregroup = 4;
        let m = machine(&s);
        let c = &m.cost;
        assert_eq!(m.cache_refill_ns(3, 3), 0);
        assert_eq!(m.distance(0, 16), Distance::Smt);
        assert_eq!(m.cache_refill_ns(0, 16), c.cache_refill_smt_ns);
        assert_eq!(m.cache_refill_ns(0, 3), c.cache_refill_llc_ns);
        assert_eq!(m.distance(0, 4), Distance::Socket);
        assert_eq!(m.cache_refill_ns(0, 4), c.cache_refill_socket_ns);
        assert_eq!(m.distance(0, 8), Distance::Numa);
        assert_eq!(m.cache_refill_ns(0, 8), c.cache_refill_numa_ns);
        assert!(m.shares_llc(0, 19) && !m.shares_llc(0, 4));
        assert_eq!(m.node_distance(0, 1), 20);
    }

    #[test]
    fn shape_errors() {
        let mut s = Shape::new(1, 6, 1);
        s.cores_per_llc = 4;
        assert!(s.build_cpus().unwrap_err().contains("does not split"));
        let mut s = Shape::new(1, 6, 1);
        s.nodes_per_socket = 4;
        assert!(s.build_cpus().unwrap_err().contains("nodes"));
        assert!(Shape::new(0, 6, 1)
            .build_cpus()
            .unwrap_err()
            .contains("sockets"));
        let mut s = Shape::new(1, 3, 4);
        s.enumeration = Enumeration::PowerBigCore;
        assert!(s.build_cpus().is_err());
    }

    #[test]
    fn machine_validation() {
        let cpus = Shape::new(1, 4, 1).build_cpus().unwrap();
        let d = uniform_distance(1, 10, 20);
        let mk =
            |c: Vec<CpuTopo>, d: Vec<Vec<u32>>| Machine::new("t", "t", c, d, cost::generic_x86());
        assert!(mk(cpus.clone(), d.clone()).is_ok());
        assert!(mk(vec![], d.clone()).is_err());
        let mut bad = cpus.clone();
        bad[1].llc = 2; // llc 1 empty
        assert!(mk(bad, d.clone()).unwrap_err().contains("dense"));
        let mut bad = cpus.clone();
        bad[1].core = 0; // core 0 = CPUs 0,1 but they are fine in one llc; make cluster differ
        bad[1].cluster = 1;
        bad.iter_mut().skip(2).for_each(|c| {
            c.core -= 1;
        });
        assert!(mk(bad, d.clone()).unwrap_err().contains("spans"));
        let mut bad = cpus.clone();
        bad[2].cpu = 7;
        assert!(mk(bad, d.clone()).is_err());
        let mut bad = cpus.clone();
        bad.iter_mut().for_each(|c| c.capacity = 512);
        assert!(mk(bad, d.clone()).unwrap_err().contains("1024"));
        assert!(mk(cpus.clone(), uniform_distance(2, 10, 20))
            .unwrap_err()
            .contains("numa_distance"));
        assert!(mk(cpus, vec![vec![0]]).is_err());
    }

    #[test]
    fn summary_mentions_shape() {
        let mut s = Shape::new(2, 64, 2);
        s.cores_per_llc = 8;
        s.cores_per_coregroup = 8;
        let m = machine(&s);
        assert_eq!(
            m.summary(),
            "256 CPUs: 2 sockets × 64 cores × SMT2; 16 LLCs of 16 CPUs; 2 NUMA nodes"
        );
        let mut s = Shape::new(1, 4, 1);
        s.cores_per_llc = 1;
        s.cores_per_coregroup = 1;
        let m = machine(&s);
        assert_eq!(
            m.summary(),
            "4 CPUs: 1 socket × 4 cores; no shared LLC; 1 NUMA node"
        );
    }
}
