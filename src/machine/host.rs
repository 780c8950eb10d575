//! The machine we are running on, read from sysfs.
//!
//! [`from_sysfs`] mirrors how the kernel builds its topology masks from the
//! same information, so that a simulated `host` has the sched domains the
//! real kernel has:
//! - SMT: `topology/thread_siblings_list` (`core_cpus_list` on newer kernels).
//! - cluster: `topology/cluster_cpus_list` when present, else the core.
//! - LLC: the highest-level data/unified `cache/indexK/shared_cpu_list`,
//!   then the arm64 `cpu_coregroup_mask()` rules: the smallest of node,
//!   package and LLC siblings; extended to the cluster when smaller than it
//!   (Ampere Altra: private L2 only → LLC = 2-core cluster) where the
//!   kernel was built with CONFIG_SCHED_CLUSTER=y (db1e59483dfd; the host
//!   kernel's config from `/proc/config.gz` or `/boot/config-RELEASE`,
//!   assumed where neither is readable); never across a node or package
//!   (x86 sub-NUMA clustering splits the L3 per node).
//! - node: `../node/nodeN/cpulist`, distances from `nodeN/distance`.
//! - capacity: `cpu_capacity` (arm64 big.LITTLE), else 1024.
//!
//! Only online CPUs (`online`) are used, renumbered densely; the OS numbers
//! stay available through [`Machine::os_cpu_id`].

use super::cost::{self, CostModel, Governor, IdleState};
use super::topology::{CpuTopo, Machine};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The kernel's default SLIT remote distance (REMOTE_DISTANCE) when a
/// node's `distance` file is missing.
const REMOTE_DISTANCE: u32 = 20;
const LOCAL_DISTANCE: u32 = 10;
const SCHED_CAPACITY_SCALE: u64 = 1024;

/// Parse a kernel cpulist ("0-3,8,10-11"; also "0-10:2" strides).
pub fn parse_cpulist(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |t: &str| {
            t.trim()
                .parse::<usize>()
                .map_err(|_| format!("bad cpulist {s:?}"))
        };
        let (range, stride) = match part.split_once(':') {
            Some((r, st)) => (r, num(st.split('/').next().unwrap_or(st))?.max(1)),
            None => (part, 1),
        };
        match range.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(format!("bad cpulist {s:?}"));
                }
                out.extend((a..=b).step_by(stride));
            }
            None => out.push(num(range)?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

fn read(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn read_list(path: &Path) -> Option<Vec<usize>> {
    read(path).and_then(|s| parse_cpulist(&s).ok())
}

/// CPU directory numbers under `root` (cpu0, cpu1, ...), ascending.
fn numbered_dirs(root: &Path, prefix: &str) -> Vec<usize> {
    let mut v: Vec<usize> = fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix(prefix)?.parse().ok())
        .collect();
    v.sort_unstable();
    v
}

fn is_subset(a: &[usize], b: &[usize]) -> bool {
    a.iter().all(|x| b.binary_search(x).is_ok())
}

fn intersect(a: &[usize], b: &[usize]) -> Vec<usize> {
    a.iter()
        .copied()
        .filter(|x| b.binary_search(x).is_ok())
        .collect()
}

/// The highest-level data/unified cache's shared_cpu_list of one CPU.
fn last_level_cache(cpu_dir: &Path) -> Option<Vec<usize>> {
    let cache = cpu_dir.join("cache");
    let mut best: Option<(u32, Vec<usize>)> = None;
    for k in numbered_dirs(&cache, "index") {
        let dir = cache.join(format!("index{k}"));
        if read(&dir.join("type")).as_deref() == Some("Instruction") {
            continue;
        }
        let Some(level) = read(&dir.join("level")).and_then(|l| l.parse::<u32>().ok()) else {
            continue;
        };
        let Some(shared) = read_list(&dir.join("shared_cpu_list")) else {
            continue;
        };
        if best.as_ref().is_none_or(|(l, _)| level > *l) {
            best = Some((level, shared));
        }
    }
    best.map(|(_, s)| s)
}

/// Assigns dense ids to masks in order of first appearance.
#[derive(Default)]
struct Ids(BTreeMap<Vec<usize>, usize>);

impl Ids {
    fn id(&mut self, mask: &[usize]) -> usize {
        let next = self.0.len();
        *self.0.entry(mask.to_vec()).or_insert(next)
    }
}

/// Build a machine from a sysfs CPU tree (normally `/sys/devices/system/cpu`),
/// for a kernel built with CONFIG_SCHED_CLUSTER (`sched_cluster`) or not.
/// Its cost model is [`cost::generic_x86`]; [`detect`] picks a better one.
pub fn from_sysfs(cpu_root: &Path, sched_cluster: bool) -> Result<Machine, String> {
    if !cpu_root.is_dir() {
        return Err(format!("{}: not a directory", cpu_root.display()));
    }
    let online = match read_list(&cpu_root.join("online")) {
        Some(l) if !l.is_empty() => l,
        _ => numbered_dirs(cpu_root, "cpu")
            .into_iter()
            .filter(|n| cpu_root.join(format!("cpu{n}/topology")).is_dir())
            .collect(),
    };
    if online.is_empty() {
        return Err(format!("{}: no online CPUs found", cpu_root.display()));
    }
    let dir = |cpu: usize| cpu_root.join(format!("cpu{cpu}"));
    let only_online = |mask: Vec<usize>| intersect(&mask, &online);

    // Nodes: the node directory beside the cpu directory.
    let node_root: PathBuf = cpu_root
        .parent()
        .map(|p| p.join("node"))
        .unwrap_or_default();
    let all_nodes = numbered_dirs(&node_root, "node");
    let mut node_of: BTreeMap<usize, usize> = BTreeMap::new(); // os cpu → os node
    for &n in &all_nodes {
        for c in read_list(&node_root.join(format!("node{n}/cpulist"))).unwrap_or_default() {
            node_of.entry(c).or_insert(n);
        }
    }

    // Per-CPU raw masks (OS numbering, online CPUs only).
    struct Raw {
        core: Vec<usize>,
        cluster: Option<Vec<usize>>,
        package: Vec<usize>,
        node: Vec<usize>,
        llc: Option<Vec<usize>>,
        capacity: u64,
    }
    let package_id = |cpu: usize| -> i64 {
        read(&dir(cpu).join("topology/physical_package_id"))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
            .max(0)
    };
    let packages: Vec<i64> = online.iter().map(|&c| package_id(c)).collect();
    let node_id = |cpu: usize| node_of.get(&cpu).copied().unwrap_or(usize::MAX);
    let mut raw = Vec::with_capacity(online.len());
    for (i, &cpu) in online.iter().enumerate() {
        let topo = dir(cpu).join("topology");
        let core = read_list(&topo.join("thread_siblings_list"))
            .or_else(|| read_list(&topo.join("core_cpus_list")))
            .map(only_online)
            .unwrap_or_else(|| {
                // Old kernels: group by (package, core_id).
                let core_id = |c: usize| read(&dir(c).join("topology/core_id"));
                let Some(mine) = core_id(cpu) else {
                    return vec![cpu];
                };
                online
                    .iter()
                    .zip(&packages)
                    .filter(|(&c, &p)| p == packages[i] && core_id(c).as_ref() == Some(&mine))
                    .map(|(&c, _)| c)
                    .collect()
            });
        let package: Vec<usize> = online
            .iter()
            .zip(&packages)
            .filter(|(_, &p)| p == packages[i])
            .map(|(&c, _)| c)
            .collect();
        let node: Vec<usize> = online
            .iter()
            .copied()
            .filter(|&c| node_id(c) == node_id(cpu))
            .collect();
        let cluster = read_list(&topo.join("cluster_cpus_list")).map(only_online);
        let llc = last_level_cache(&dir(cpu)).map(only_online);
        let capacity = read(&dir(cpu).join("cpu_capacity"))
            .and_then(|s| s.parse().ok())
            .unwrap_or(SCHED_CAPACITY_SCALE);
        raw.push(Raw {
            core,
            cluster,
            package,
            node,
            llc,
            capacity,
        });
    }

    // Masks as the scheduler sees them.
    let mut ids = [
        Ids::default(),
        Ids::default(),
        Ids::default(),
        Ids::default(),
        Ids::default(),
    ];
    let max_cap = raw
        .iter()
        .map(|r| r.capacity)
        .max()
        .unwrap_or(SCHED_CAPACITY_SCALE)
        .max(1);
    let mut cpus = Vec::with_capacity(online.len());
    let mut node_os_ids: Vec<usize> = Vec::new();
    for (i, r) in raw.iter().enumerate() {
        let cpu = online[i];
        let mut core = r.core.clone();
        if !core.contains(&cpu) {
            core = vec![cpu];
        }
        // cpu_coregroup_mask(): smallest of node, package, LLC; at least the cluster.
        let mut llc = if is_subset(&r.package, &r.node) {
            r.package.clone()
        } else {
            r.node.clone()
        };
        if let Some(l) = r
            .llc
            .as_ref()
            .filter(|l| l.contains(&cpu) && is_subset(l, &llc))
        {
            llc = l.clone();
        }
        let cluster = r.cluster.clone().filter(|c| {
            c.contains(&cpu) && is_subset(&core, c) && is_subset(c, &intersect(&r.package, &r.node))
        });
        if let Some(c) = cluster
            .as_ref()
            .filter(|c| sched_cluster && is_subset(&llc, c))
        {
            llc = c.clone();
        }
        llc = intersect(&intersect(&llc, &r.package), &r.node);
        for &c in &core {
            if !llc.contains(&c) {
                llc.push(c);
            }
        }
        llc.sort_unstable();
        let cluster = cluster
            .filter(|c| is_subset(c, &llc))
            .unwrap_or_else(|| core.clone());
        let node = ids[3].id(&r.node);
        if node == node_os_ids.len() {
            node_os_ids.push(node_id(cpu));
        }
        cpus.push(CpuTopo {
            cpu: i,
            core: ids[0].id(&core),
            cluster: ids[1].id(&cluster),
            llc: ids[2].id(&llc),
            node,
            socket: ids[4].id(&r.package),
            capacity: ((r.capacity * SCHED_CAPACITY_SCALE) / max_cap).clamp(1, SCHED_CAPACITY_SCALE)
                as u32,
            coregroup: 0,
        });
    }
    for c in &mut cpus {
        c.coregroup = c.llc;
    }

    // NUMA distances: row of node N lists all sysfs nodes in id order.
    let nr_nodes = node_os_ids.len();
    let mut distance = vec![vec![REMOTE_DISTANCE; nr_nodes]; nr_nodes];
    for (a, &na) in node_os_ids.iter().enumerate() {
        let row: Vec<u32> = read(&node_root.join(format!("node{na}/distance")))
            .map(|s| {
                s.split_whitespace()
                    .filter_map(|t| t.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        for (b, &nb) in node_os_ids.iter().enumerate() {
            let col = all_nodes.iter().position(|&n| n == nb);
            distance[a][b] = match col.and_then(|c| row.get(c)) {
                Some(&d) => d,
                None if a == b => LOCAL_DISTANCE,
                None => REMOTE_DISTANCE,
            };
        }
    }

    let mut m = Machine::new("sysfs", "", cpus, distance, cost::generic_x86())
        .map_err(|e| format!("{}: {e}", cpu_root.display()))?;
    m.set_os_cpu_ids(online);
    m.description = format!("read from {}: {}", cpu_root.display(), m.summary());
    Ok(m)
}

/// Is this Linux running under a hypervisor? (x86 `hypervisor` CPU flag,
/// or a populated /sys/hypervisor.)
pub fn is_virtual_machine() -> bool {
    let flag = fs::read_to_string("/proc/cpuinfo").is_ok_and(|s| {
        s.lines()
            .filter(|l| l.starts_with("flags"))
            .any(|l| l.split_whitespace().any(|w| w == "hypervisor"))
    });
    flag || read(Path::new("/sys/hypervisor/type")).is_some_and(|t| !t.is_empty())
}

/// The CPU model name from /proc/cpuinfo ("model name" on x86, "cpu" on POWER).
pub fn model_name() -> Option<String> {
    let info = fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        matches!(k.trim(), "model name" | "cpu").then(|| v.trim().to_string())
    })
}

/// cpuidle states of one CPU from sysfs (`cpuN/cpuidle/stateK/{name,desc,latency,residency}`).
/// A state whose desc names MWAIT (intel_idle's "MWAIT 0x20", acpi_idle's
/// "ACPI FFH MWAIT 0x1") holds TIF_POLLING_NRFLAG ([`IdleState::mwait`]);
/// HLT ("ACPI HLT", a guest's haltpoll) and I/O-port states ("ACPI IOPORT
/// 0x414") do not.
pub fn sysfs_idle_states(cpu_dir: &Path) -> Vec<IdleState> {
    let root = cpu_dir.join("cpuidle");
    numbered_dirs(&root, "state")
        .into_iter()
        .filter_map(|k| {
            let d = root.join(format!("state{k}"));
            let name = read(&d.join("name"))?;
            let us = |f: &str| read(&d.join(f)).and_then(|s| s.parse::<u64>().ok());
            let mut s = IdleState::hw(&name, us("latency")?, us("residency")?);
            s.polling = name == "POLL" || name == "snooze";
            s.mwait = read(&d.join("desc")).is_some_and(|t| t.contains("MWAIT"));
            Some(s)
        })
        .collect()
}

/// Where haltpoll's module parameters are.
const HALTPOLL_PARAMS: &str = "/sys/module/haltpoll/parameters";

/// The cpuidle governor under a sysfs CPU tree (`cpuidle/current_governor_ro`,
/// or `current_governor` where it is writable), and haltpoll's
/// `guest_halt_poll_ns` from its module parameters in `params`. No driver
/// (`current_driver` "none" or absent) → None.
pub fn sysfs_governor(cpu_root: &Path, params: &Path) -> (Governor, u64) {
    let idle = cpu_root.join("cpuidle");
    let driver = read(&idle.join("current_driver")).unwrap_or_else(|| "none".into());
    let gov = read(&idle.join("current_governor_ro"))
        .or_else(|| read(&idle.join("current_governor")))
        .and_then(|g| Governor::parse(&g));
    let gov = match gov {
        Some(g) if driver != "none" => g,
        _ => Governor::None,
    };
    let poll_ns = read(&params.join("guest_halt_poll_ns"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    (gov, poll_ns)
}

/// This kernel's PAGE_SIZE (sysconf(_SC_PAGESIZE)); None if it is not one
/// the model takes.
fn page_size() -> Option<u32> {
    // SAFETY: sysconf only reads a configuration value.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u32::try_from(page)
        .ok()
        .filter(|&p| cost::page_size_ok(p.into()))
}

/// The cost model for this host: the measured KVM-guest model in a VM,
/// the generic bare-metal x86 model otherwise; the idle states and the
/// governor come from the host's cpuidle driver when it has one.
pub fn host_cost(cpu0_dir: &Path, virtual_machine: bool) -> CostModel {
    let mut c = if virtual_machine {
        cost::kvm_guest()
    } else {
        cost::generic_x86()
    };
    if let Some(root) = cpu0_dir.parent() {
        (c.governor, c.guest_halt_poll_ns) = sysfs_governor(root, Path::new(HALTPOLL_PARAMS));
    }
    if let Some(page) = page_size() {
        c.page_size = page;
    }
    let states = sysfs_idle_states(cpu0_dir);
    let candidate = CostModel {
        idle_states: states,
        ..c.clone()
    };
    if candidate.validate().is_ok() {
        c = candidate;
    }
    c
}

/// This host's topology from sysfs with the cost model it has before any
/// calibration ([`host_cost`]); `calibrate` measures against it.
pub fn detect() -> Result<Machine, String> {
    let root = Path::new("/sys/devices/system/cpu");
    let config = kernel_config();
    let sched_cluster = config.as_deref().is_none_or(sched_cluster_in);
    let mut m = from_sysfs(root, sched_cluster)?;
    let vm = is_virtual_machine();
    m.cost = host_cost(&root.join(format!("cpu{}", m.os_cpu_id(0))), vm);
    m.name = "host".into();
    let (base, base_cost) = if vm {
        let fitted = super::presets::VM_2_FITTED;
        (format!("preset vm-2 (fitted {fitted})"), cost::kvm_guest())
    } else {
        ("the generic x86 model".into(), cost::generic_x86())
    };
    let sysfs = if m.cost.idle_states == base_cost.idle_states {
        "governor"
    } else {
        "governor and states"
    };
    m.costs_from = format!("{base}, cpuidle {sysfs} from sysfs");
    describe(&mut m, vm);
    Ok(m)
}

/// The running kernel's build configuration: `/proc/config.gz`
/// (CONFIG_IKCONFIG_PROC), else `/boot/config-RELEASE` as distributions
/// install it; None where neither is readable.
fn kernel_config() -> Option<String> {
    use std::io::Read;
    let mut text = String::new();
    let gz = fs::File::open("/proc/config.gz").ok();
    if gz.is_some_and(|f| {
        flate2::read::GzDecoder::new(f)
            .read_to_string(&mut text)
            .is_ok()
    }) {
        return Some(text);
    }
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    fs::read_to_string(format!("/boot/config-{}", release.trim())).ok()
}

/// Whether a kernel config sets CONFIG_SCHED_CLUSTER, which makes
/// cpu_coregroup_mask() (drivers/base/arch_topology.c) at least the
/// cluster: without it, a CPU whose caches are private is an LLC alone.
fn sched_cluster_in(config: &str) -> bool {
    config.lines().any(|l| l.trim() == "CONFIG_SCHED_CLUSTER=y")
}

fn describe(m: &mut Machine, vm: bool) {
    m.description = format!(
        "this host, {} ({}), costs: {}: {}",
        model_name().unwrap_or_else(|| "unknown CPU".into()),
        if vm { "virtual machine" } else { "bare metal" },
        m.costs_from,
        m.summary()
    );
}

/// The environment variable that names the calibration cache's directory
/// (tests point it at an empty one).
pub const CACHE_DIR_VAR: &str = "SCHEDLAB_CACHE_DIR";

/// How [`Machine::costs_from`] starts when the costs are a cached calibration.
const FROM_CACHE: &str = "calibrate of ";

/// Where `schedlab calibrate` keeps its results for `--machine host`:
/// `$SCHEDLAB_CACHE_DIR`, else `$XDG_CACHE_HOME/schedlab` (the XDG Base
/// Directory spec: a relative `XDG_CACHE_HOME` is ignored), else
/// `$HOME/.cache/schedlab`; None without any of them.
pub fn cache_dir() -> Option<PathBuf> {
    cache_dir_from(|k| std::env::var_os(k))
}

fn cache_dir_from(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    let var = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var(CACHE_DIR_VAR)
        .or_else(|| {
            var("XDG_CACHE_HOME")
                .filter(|p| p.is_absolute())
                .map(|p| p.join("schedlab"))
        })
        .or_else(|| var("HOME").map(|h| h.join(".cache/schedlab")))
}

/// The cache file's name: `host-<CPU model>-<kernel release>-<CPUs>.toml`,
/// every run of characters other than letters, digits, `.` and `_` made
/// one `-`. A calibration holds for one CPU model, kernel and CPU count.
pub fn cache_file_name(model: &str, kernel: &str, nr_cpus: usize) -> String {
    let clean = |s: &str| {
        let words: Vec<&str> = s
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        if words.is_empty() {
            "unknown".to_string()
        } else {
            words.join("-")
        }
    };
    format!("host-{}-{}-{nr_cpus}.toml", clean(model), clean(kernel))
}

/// This host's cache file in `dir`: its CPU model, kernel release
/// (`uname -r`) and `nr_cpus` online CPUs.
pub fn cache_path(dir: &Path, nr_cpus: usize) -> PathBuf {
    let model = model_name().unwrap_or_default();
    let kernel = read(Path::new("/proc/sys/kernel/osrelease")).unwrap_or_default();
    dir.join(cache_file_name(&model, &kernel, nr_cpus))
}

thread_local! {
    /// Set while a cache file is read: its `base = "host"` then means the
    /// uncalibrated host rather than the cache again.
    static READING_CACHE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `--machine host`: [`detect`]'s topology, with the costs of this host's
/// calibration cached in `dir` ([`cache_path`]) when there is one, else
/// [`detect`]'s costs. The file's own topology is checked, not used: sysfs
/// holds the OS CPU numbers.
pub fn load(dir: Option<&Path>) -> Result<Machine, String> {
    let mut m = detect()?;
    let Some(path) = dir.map(|d| cache_path(d, m.nr_cpus())) else {
        return Ok(m);
    };
    if !path.exists() || READING_CACHE.get() {
        return Ok(m);
    }
    READING_CACHE.set(true);
    let cached = read_cache(&path);
    READING_CACHE.set(false);
    let (cost, date) = cached?;
    m.cost = cost;
    m.costs_from = format!("{FROM_CACHE}{date} ({})", path.display());
    describe(&mut m, is_virtual_machine());
    Ok(m)
}

/// A cache file's cost model and its `date` (a machine file; errors name
/// the file and line).
fn read_cache(path: &Path) -> Result<(CostModel, String), String> {
    let m = super::file::load(path)?;
    let text = fs::read_to_string(path).unwrap_or_default();
    let date = text
        .parse::<toml::Table>()
        .ok()
        .and_then(|t| t.get("date")?.as_str().map(str::to_string))
        .unwrap_or_else(|| "an unknown date".into());
    Ok((m.cost, date))
}

/// The line a run on `host` prints: where its costs came from, and, when
/// not from a calibration of this host, how to make one (kept in `dir`).
pub fn costs_note(m: &Machine, dir: Option<&Path>) -> String {
    let mut note = format!("machine host: costs from {}", m.costs_from);
    if !m.costs_from.starts_with(FROM_CACHE) {
        let kept = match dir {
            Some(d) => format!("keeps it in {}", cache_path(d, m.nr_cpus()).display()),
            None => format!("needs ${CACHE_DIR_VAR}, $XDG_CACHE_HOME or $HOME to keep it"),
        };
        note += &format!("; `schedlab calibrate` measures this host and {kept}");
    }
    note
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A scratch sysfs tree under the temp dir, removed on drop.
    struct FakeSys {
        root: PathBuf,
    }

    impl FakeSys {
        fn new(tag: &str) -> FakeSys {
            static N: AtomicUsize = AtomicUsize::new(0);
            let root = std::env::temp_dir().join(format!(
                "schedlab-sysfs-{tag}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&root);
            fs::create_dir_all(root.join("cpu")).unwrap();
            FakeSys { root }
        }
        fn cpu_root(&self) -> PathBuf {
            self.root.join("cpu")
        }
        fn write(&self, rel: &str, content: &str) {
            let p = self.root.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, format!("{content}\n")).unwrap();
        }
        fn cpu(
            &self,
            cpu: usize,
            package: usize,
            core_id: usize,
            siblings: &str,
            caches: &[(u32, &str, &str)],
        ) {
            let t = format!("cpu/cpu{cpu}/topology");
            self.write(&format!("{t}/physical_package_id"), &package.to_string());
            self.write(&format!("{t}/core_id"), &core_id.to_string());
            self.write(&format!("{t}/thread_siblings_list"), siblings);
            for (k, (level, kind, shared)) in caches.iter().enumerate() {
                let c = format!("cpu/cpu{cpu}/cache/index{k}");
                self.write(&format!("{c}/level"), &level.to_string());
                self.write(&format!("{c}/type"), kind);
                self.write(&format!("{c}/shared_cpu_list"), shared);
            }
        }
    }

    impl Drop for FakeSys {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.root);
        }
    }

    #[test]
    fn cpulists() {
        assert_eq!(
            parse_cpulist("0-3,8,10-11\n").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpulist("0-6:2").unwrap(), vec![0, 2, 4, 6]);
        assert_eq!(parse_cpulist("5").unwrap(), vec![5]);
        assert_eq!(parse_cpulist("").unwrap(), Vec::<usize>::new());
        assert!(parse_cpulist("3-1").is_err());
        assert!(parse_cpulist("a").is_err());
    }

    /// 2 sockets × 2 cores × SMT2, x86 numbering (siblings n, n+4), an L3
    /// per socket, two nodes, CPU 7 offline.
    #[test]
    fn fake_two_socket_x86() {
        let s = FakeSys::new("x86");
        s.write("cpu/online", "0-6");
        for cpu in 0..8 {
            let core = cpu % 4;
            let package = core / 2;
            let sib = format!("{},{}", core, core + 4);
            let l3 = if package == 0 { "0-1,4-5" } else { "2-3,6-7" };
            s.cpu(
                cpu,
                package,
                core % 2,
                &sib,
                &[
                    (1, "Data", &sib),
                    (1, "Instruction", &sib),
                    (2, "Unified", &sib),
                    (3, "Unified", l3),
                ],
            );
        }
        s.write("node/node0/cpulist", "0-1,4-5");
        s.write("node/node1/cpulist", "2-3,6-7");
        s.write("node/node0/distance", "10 21");
        s.write("node/node1/distance", "21 10");
        let m = from_sysfs(&s.cpu_root(), true).unwrap();
        assert_eq!(
            (m.nr_cpus(), m.nr_cores, m.nr_llcs, m.nr_nodes, m.nr_sockets),
            (7, 4, 2, 2, 2)
        );
        assert_eq!(m.smt_siblings(0), &[0, 4]);
        assert_eq!(m.smt_siblings(3), &[3]); // its sibling, CPU 7, is offline
        assert_eq!(m.llc_cpus(1), &[2, 3, 6]);
        assert_eq!(m.node_cpus(0), &[0, 1, 4, 5]);
        assert_eq!(m.numa_distance, vec![vec![10, 21], vec![21, 10]]);
        assert!(m.cpus.iter().all(|c| c.capacity == 1024));
        assert_eq!(m.os_cpu_id(6), 6);
        assert_eq!(m.smt_width(), 2);
        assert!(m.description.contains("7 CPUs"));
    }

    /// Altra-like: 4 CPUs, clusters of 2, only private caches described, no
    /// node directory: the LLC is extended to the cluster as the kernel does.
    #[test]
    fn fake_arm64_clusters_without_shared_cache() {
        let s = FakeSys::new("arm");
        s.write("cpu/online", "0-3");
        for cpu in 0..4 {
            let me = cpu.to_string();
            s.cpu(
                cpu,
                0,
                cpu,
                &me,
                &[
                    (1, "Data", &me),
                    (1, "Instruction", &me),
                    (2, "Unified", &me),
                ],
            );
            let pair = if cpu < 2 { "0-1" } else { "2-3" };
            s.write(&format!("cpu/cpu{cpu}/topology/cluster_cpus_list"), pair);
            s.write(
                &format!("cpu/cpu{cpu}/cpu_capacity"),
                if cpu < 2 { "1024" } else { "446" },
            );
        }
        let m = from_sysfs(&s.cpu_root(), true).unwrap();
        assert_eq!(
            (m.nr_cpus(), m.nr_cores, m.nr_llcs, m.nr_nodes),
            (4, 4, 2, 1)
        );
        assert_eq!(m.llc_cpus(0), &[0, 1]);
        assert_eq!(m.cluster_cpus(1), &[2, 3]);
        assert_eq!(m.cpus[3].capacity, 446);
        assert_eq!(m.numa_distance, vec![vec![10]]);
        // The arm64 defconfig's kernel (CONFIG_SCHED_CLUSTER not set): no
        // CPU shares a cache the scheduler knows of.
        let m = from_sysfs(&s.cpu_root(), false).unwrap();
        assert_eq!((m.nr_llcs, m.llc_cpus(0)), (4, &[0][..]));
        assert!(sched_cluster_in("# x\nCONFIG_SCHED_CLUSTER=y\n"));
        assert!(!sched_cluster_in("# CONFIG_SCHED_CLUSTER is not set\n"));
    }

    /// Sub-NUMA clustering: the L3 spans the socket but the kernel keeps the
    /// LLC inside each node. Missing cache info and online file are tolerated.
    #[test]
    fn fake_snc_and_fallbacks() {
        let s = FakeSys::new("snc");
        for cpu in 0..4 {
            s.cpu(cpu, 0, cpu, &cpu.to_string(), &[(3, "Unified", "0-3")]);
        }
        s.write("node/node0/cpulist", "0-1");
        s.write("node/node1/cpulist", "2-3");
        s.write("node/node2/cpulist", ""); // memory-only node
        s.write("node/node0/distance", "10 11 20");
        s.write("node/node1/distance", "11 10 20");
        let m = from_sysfs(&s.cpu_root(), true).unwrap();
        assert_eq!(
            (m.nr_cpus(), m.nr_llcs, m.nr_nodes, m.nr_sockets),
            (4, 2, 2, 1)
        );
        assert_eq!(m.llc_cpus(1), &[2, 3]);
        assert_eq!(m.numa_distance, vec![vec![10, 11], vec![11, 10]]);

        let bare = FakeSys::new("bare");
        for cpu in 0..2 {
            bare.write(&format!("cpu/cpu{cpu}/topology/physical_package_id"), "0");
        }
        let m = from_sysfs(&bare.cpu_root(), true).unwrap();
        assert_eq!((m.nr_cpus(), m.nr_cores, m.nr_llcs), (2, 2, 1));
    }

    #[test]
    fn sysfs_errors() {
        let missing = std::env::temp_dir().join("schedlab-sysfs-does-not-exist");
        assert!(from_sysfs(&missing, true)
            .unwrap_err()
            .contains("not a directory"));
        let empty = FakeSys::new("empty");
        assert!(from_sysfs(&empty.cpu_root(), true)
            .unwrap_err()
            .contains("no online CPUs"));
    }

    #[test]
    fn idle_states_from_sysfs() {
        let s = FakeSys::new("idle");
        let states = [
            ("POLL", "CPUIDLE CORE POLL IDLE", 0, 0),
            ("C1", "ACPI FFH MWAIT 0x0", 2, 2),
            ("C6", "ACPI IOPORT 0x415", 133, 600),
        ];
        for (k, (name, desc, lat, res)) in states.iter().enumerate() {
            s.write(&format!("cpu/cpu0/cpuidle/state{k}/name"), name);
            s.write(&format!("cpu/cpu0/cpuidle/state{k}/desc"), desc);
            s.write(
                &format!("cpu/cpu0/cpuidle/state{k}/latency"),
                &lat.to_string(),
            );
            s.write(
                &format!("cpu/cpu0/cpuidle/state{k}/residency"),
                &res.to_string(),
            );
        }
        s.write("cpu/cpuidle/current_driver", "intel_idle");
        s.write("cpu/cpuidle/current_governor_ro", "teo");
        let c = host_cost(&s.cpu_root().join("cpu0"), true);
        assert_eq!(c.governor, Governor::Teo);
        assert_eq!(c.idle_states.len(), 3);
        assert!(c.idle_states[0].polling && !c.idle_states[1].polling);
        let mwait: Vec<bool> = c.idle_states.iter().map(|s| s.mwait).collect();
        assert_eq!(mwait, [false, true, false]);
        assert_eq!(c.idle_states[2].exit_latency_ns, 133_000);
        assert_eq!(c.syscall_ns, cost::kvm_guest().syscall_ns);
        // no cpuidle directory → the model's own states
        let c = host_cost(&s.cpu_root().join("cpu1"), false);
        assert_eq!(c.idle_states, cost::generic_x86().idle_states);
        // a KVM guest with cpuidle-haltpoll, and one without a driver
        s.write("cpu/cpuidle/current_driver", "haltpoll");
        s.write("cpu/cpuidle/current_governor_ro", "haltpoll");
        s.write("module/haltpoll/parameters/guest_halt_poll_ns", "200000");
        let params = s.root.join("module/haltpoll/parameters");
        assert_eq!(
            sysfs_governor(&s.cpu_root(), &params),
            (Governor::Haltpoll, 200_000)
        );
        s.write("cpu/cpuidle/current_driver", "none");
        assert_eq!(sysfs_governor(&s.cpu_root(), &params).0, Governor::None);
    }

    #[test]
    fn cache_file_names() {
        assert_eq!(
            cache_file_name(
                "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz",
                "6.18.44-fc-v669",
                2
            ),
            "host-Intel-R-Xeon-R-Platinum-8481C-CPU-2.70GHz-6.18.44-fc-v669-2.toml"
        );
        assert_eq!(
            cache_file_name("AMD EPYC 9R14 96-Core Processor", "", 16),
            "host-AMD-EPYC-9R14-96-Core-Processor-unknown-16.toml"
        );
        assert_eq!(cache_file_name("../x/", "a b", 1), "host-..-x-a-b-1.toml");
    }

    #[test]
    fn cache_dir_follows_xdg() {
        fn env(vars: &[(&str, &str)]) -> Option<PathBuf> {
            cache_dir_from(|k| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            })
        }
        let all = [
            (CACHE_DIR_VAR, "/t/c"),
            ("XDG_CACHE_HOME", "/x"),
            ("HOME", "/h"),
        ];
        assert_eq!(env(&all), Some(PathBuf::from("/t/c")));
        assert_eq!(env(&all[1..]), Some(PathBuf::from("/x/schedlab")));
        assert_eq!(env(&all[2..]), Some(PathBuf::from("/h/.cache/schedlab")));
        // empty and relative values do not count
        let odd = [
            (CACHE_DIR_VAR, ""),
            ("XDG_CACHE_HOME", "rel"),
            ("HOME", "/h"),
        ];
        assert_eq!(env(&odd), Some(PathBuf::from("/h/.cache/schedlab")));
        assert_eq!(env(&[]), None);
    }

    /// A cached calibration gives `host` its costs and says so; a file
    /// whose base is `host` does not read itself again; a bad one is an
    /// error naming the file and line.
    #[test]
    fn host_takes_the_cached_calibration() {
        if !Path::new("/sys/devices/system/cpu/online").exists() {
            return;
        }
        let dir = FakeSys::new("cache");
        let plain = load(Some(&dir.root)).unwrap();
        assert_eq!(plain.costs_from, detect().unwrap().costs_from);
        assert!(costs_note(&plain, Some(&dir.root)).contains(&dir.root.display().to_string()));
        let path = cache_path(&dir.root, plain.nr_cpus());
        let cached = "base = \"host\"\ndate = \"2026-11-27\"\n[cost]\ncontext_switch_ns = 7777\n";
        fs::write(&path, cached).unwrap();
        let m = load(Some(&dir.root)).unwrap();
        assert_eq!(m.cost.context_switch_ns, 7777);
        assert_eq!(m.cost.syscall_ns, plain.cost.syscall_ns);
        let from = format!("calibrate of 2026-11-27 ({})", path.display());
        assert_eq!(m.costs_from, from);
        assert_eq!(
            costs_note(&m, Some(&dir.root)),
            format!("machine host: costs from {from}")
        );
        assert!(m.description.contains(&from));
        let bad = "base = \"vm-2\"\ndate = \"2026-11-27\"\n[cost]\nsyscall_ns = -1\n";
        fs::write(&path, bad).unwrap();
        let e = load(Some(&dir.root)).unwrap_err();
        assert!(
            e.starts_with(&format!("{}:4: cost.syscall_ns", path.display())),
            "{e}"
        );
    }

    /// The real host: works wherever /sys is mounted (2 CPUs on the project VM).
    #[test]
    fn real_host() {
        let root = Path::new("/sys/devices/system/cpu");
        let Some(online) = read_list(&root.join("online")) else {
            eprintln!("no /sys/devices/system/cpu/online: skipped");
            return;
        };
        let m = from_sysfs(root, true).unwrap();
        assert_eq!(m.nr_cpus(), online.len());
        assert!(m.nr_llcs >= 1 && m.nr_nodes >= 1 && m.smt_width() >= 1);
        let h = detect().unwrap();
        assert_eq!(h.name, "host");
        assert_eq!(h.nr_cpus(), online.len());
        eprintln!("{}", h.description);
    }
}
