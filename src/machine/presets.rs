//! Named machines: the ones the seeds ran on, and this VM.
//!
//! Each preset is a [`Shape`] (numbered the way Linux enumerates that
//! machine), a NUMA distance table and one cost model from [`super::cost`].
//! Where the scheduler's view differs from the hardware's (Altra's LLC,
//! POWER10's small cores) the preset follows the scheduler and says why.

use super::cost;
use super::topology::{uniform_distance, Enumeration, Machine, Shape};

/// The day `vm-2`'s costs ([`cost::kvm_guest`]) were fitted; its
/// description says it too.
pub const VM_2_FITTED: &str = "2026-11-23";

/// SLIT local distance (LOCAL_DISTANCE).
const LOCAL: u32 = 10;

struct Preset {
    name: &'static str,
    /// What the machine is and where it comes from; the topology summary is appended.
    about: &'static str,
    build: fn() -> Result<Machine, String>,
}

const PRESETS: &[Preset] = &[
    Preset {
        name: "vm-2",
        about: "this project's KVM guest as fitted on 2026-11-23 (Firecracker on a Sapphire Rapids-class host, cpuidle haltpoll); the VM has moved since: `schedlab calibrate` measures today's",
        build: vm_2,
    },
    Preset {
        name: "emr-16",
        about: "the project's 16-vCPU KVM guest on an Emerald Rapids-class Xeon, calibrated there on 2026-11-27 (scenarios/machines/emr-16.toml)",
        build: emr_16,
    },
    Preset {
        name: "xeon-8269cy",
        about: "Intel Xeon Platinum 8269CY, Cascade Lake (seed 000)",
        build: xeon_8269cy,
    },
    Preset {
        name: "altra-80",
        about: "Ampere Altra Q80, Neoverse N1; no shared LLC as the kernel sees it (arm64 defconfig: SCHED_CLUSTER not set) (seed 000)",
        build: altra_80,
    },
    Preset {
        name: "milan-256",
        about: "AMD EPYC Milan 2P, Zen 3, one L3 per 8-core CCX (seed 002)",
        build: milan_256,
    },
    Preset {
        name: "snb-32",
        about: "Intel Sandy Bridge-EP 2P, lkp-snb01 (seed 004)",
        build: snb_32,
    },
    Preset {
        name: "hsx-144",
        about: "Intel Haswell-EX 4P (Xeon E7 v3, Brickland), lkp-hsx03 (seed 004)",
        build: hsx_144,
    },
    Preset {
        name: "power10-96",
        about: "IBM POWER10 LPAR, 12 SMT8 cores as 24 SMT4 small cores; LLC = small core (seeds 001, 002)",
        build: power10_96,
    },
    Preset {
        name: "power10-320",
        about: "IBM POWER10 LPAR, 40 SMT8 cores as 80 SMT4 small cores on 2 sockets; LLC = small core (seed 002)",
        build: power10_320,
    },
];

/// Names of all presets, in listing order.
pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}

/// Build a preset by name; `None` if there is no such preset.
pub fn build(name: &str) -> Option<Result<Machine, String>> {
    PRESETS.iter().find(|p| p.name == name).map(|p| (p.build)())
}

/// One line per preset: (name, description with CPUs and topology).
pub fn presets() -> Vec<(&'static str, String)> {
    PRESETS
        .iter()
        .map(|p| {
            let desc = match (p.build)() {
                Ok(m) => m.description,
                Err(e) => format!("(broken preset: {e})"),
            };
            (p.name, desc)
        })
        .collect()
}

/// Build a machine whose description is `about` + its topology summary.
fn make(
    name: &str,
    about: &str,
    shape: &Shape,
    distance: Vec<Vec<u32>>,
    cost: cost::CostModel,
) -> Result<Machine, String> {
    let mut m = Machine::from_shape(name, "", shape, distance, cost)?;
    m.costs_from = format!("preset {name}");
    m.description = format!("{about}: {}", m.summary());
    Ok(m)
}

fn about(name: &str) -> &'static str {
    PRESETS
        .iter()
        .find(|p| p.name == name)
        .map_or("", |p| p.about)
}

/// The 16-CPU host of ../shared/host16, from its machine file: topology
/// from its sysfs, costs from `schedlab calibrate` and `xcpu` run there
/// (each value's source is in the file).
fn emr_16() -> Result<Machine, String> {
    const FILE: &str = "scenarios/machines/emr-16.toml";
    let text = include_str!("../../scenarios/machines/emr-16.toml");
    let mut m = super::file::parse(FILE, "emr-16", text)?;
    m.description = format!("{}: {}", about("emr-16"), m.summary());
    Ok(m)
}

/// 2 vCPUs, one socket, one shared L3 (sysfs: cache/index3 shared_cpu_list
/// 0-1), no SMT, one node — what /sys shows on the project's VM.
fn vm_2() -> Result<Machine, String> {
    let shape = Shape::new(1, 2, 1);
    let mut m = make(
        "vm-2",
        about("vm-2"),
        &shape,
        uniform_distance(1, LOCAL, LOCAL),
        cost::kvm_guest(),
    )?;
    m.costs_from = format!("preset vm-2 (fitted {VM_2_FITTED})");
    Ok(m)
}

/// 2 sockets × 26 cores × 2 threads, 35.75 MB L3 per socket, one node per
/// socket (sub-NUMA clustering off, the default). x86 numbering: CPUs n
/// and n+52 are siblings; socket 0 is 0-25,52-77.
fn xeon_8269cy() -> Result<Machine, String> {
    let shape = Shape::new(2, 26, 2);
    // SLIT on 2-socket Intel Xeon systems: 10 local, 21 remote
    make(
        "xeon-8269cy",
        about("xeon-8269cy"),
        &shape,
        uniform_distance(2, LOCAL, 21),
        cost::cascade_lake(),
    )
}

/// 80 cores, no SMT, linear numbering, one node (monolithic mode), and no
/// cache shared between cores as the scheduler sees it: every CPU is its
/// own LLC (sd_llc NULL), and there is no cluster level.
///
/// Ampere's ACPI PPTT describes 2-core clusters and, as the last cache,
/// each core's private L2 (the 32 MB SLC is not described), so
/// "cpu_coregroup_mask() will return a cpumask with weight 1" (Darren Hart,
/// db1e59483dfd "topology: make core_mask include at least
/// cluster_siblings", v5.18-rc5). Its message lists CPU 0's domains on a
/// 2-socket Altra: with CONFIG_SCHED_CLUSTER=y "CLS [0-1] / DIE [0-79] /
/// NUMA [0-159]" (sd_llc = the pair); with it not set "DIE [0-79] / NUMA
/// [0-159]": no domain has SD_SHARE_PKG_RESOURCES, so cpus_share_cache()
/// is false for any two CPUs. Seed 000 (tested on the v5.19 merge window's
/// scheduler) does not say which config it used. arm64's SCHED_CLUSTER has
/// no default (arch/arm64/Kconfig, v5.16 until at least August 2025) and
/// the arm64 defconfig does not set it (Huang Shijie, "arm64: defconfig:
/// enable CONFIG_SCHED_CLUSTER", 2025-08-08, proposes adding it): the
/// preset is that default, "not set". docs/machines.md, "Altra-80's LLC and
/// seed 000", has the evidence; the CONFIG_SCHED_CLUSTER=y kernel is a
/// machine file on this preset with 2-core clusters, LLCs and core groups.
fn altra_80() -> Result<Machine, String> {
    let shape = Shape {
        cores_per_cluster: 1,
        cores_per_llc: 1,
        cores_per_coregroup: 1,
        enumeration: Enumeration::SiblingsAdjacent,
        ..Shape::new(1, 80, 1)
    };
    make(
        "altra-80",
        about("altra-80"),
        &shape,
        uniform_distance(1, LOCAL, LOCAL),
        cost::altra(),
    )
}

/// 2 sockets × 64 cores × 2 threads; each 8-core CCX has its own 32 MB L3
/// (8 LLCs per socket, 16 in all); NPS1 → 2 nodes ("2 node, 256 cpu" in
/// seed 002). x86 numbering: sibling of n is n+128; socket 0 is
/// 0-63,128-191; CCX 0 is 0-7,128-135.
fn milan_256() -> Result<Machine, String> {
    let shape = Shape {
        cores_per_llc: 8,
        cores_per_coregroup: 8,
        ..Shape::new(2, 64, 2)
    };
    // SLIT on 2-socket EPYC in NPS1: 10 local, 32 remote socket
    make(
        "milan-256",
        about("milan-256"),
        &shape,
        uniform_distance(2, LOCAL, 32),
        cost::milan(),
    )
}

/// 2 sockets × 8 cores × 2 threads, one L3 and one node per socket.
/// x86 numbering: socket 0 is 0-7,16-23.
fn snb_32() -> Result<Machine, String> {
    let shape = Shape::new(2, 8, 2);
    // SLIT on 2-socket Sandy Bridge-EP: 10 local, 20 remote (some BIOSes report 21)
    make(
        "snb-32",
        about("snb-32"),
        &shape,
        uniform_distance(2, LOCAL, 20),
        cost::sandy_bridge_ep(),
    )
}

/// 4 sockets × 18 cores × 2 threads, one L3 and one node per socket
/// (E7 v3 has no cluster-on-die). x86 numbering: node 0 is 0-17,72-89.
fn hsx_144() -> Result<Machine, String> {
    let shape = Shape::new(4, 18, 2);
    // 4-socket E7 v3 is fully connected by QPI: SLIT 10 local, 21 to every other socket
    make(
        "hsx-144",
        about("hsx-144"),
        &shape,
        uniform_distance(4, LOCAL, 21),
        cost::haswell_ex(),
    )
}

/// POWER10 LPAR shape shared by both POWER presets: `big_cores` SMT8 cores
/// on `chips` chips. Linux splits each SMT8 core into two interleaved SMT4
/// small cores (seed 001: "Core0 has 0,2,4,6"); the small core is the SMT
/// domain and, since POWER10's L2 is per small core, also the LLC (upstream
/// "SMT (SMT4)[LLC] --> MC (Hemisphere) --> DIE"). The MC level (coregroup)
/// is a chip hemisphere; the hemisphere split of an LPAR's cores is not in
/// the seeds, so each chip's cores are split into two equal halves
/// (estimate).
fn power10(big_cores: usize, chips: usize) -> Shape {
    let small_per_chip = big_cores * 2 / chips;
    Shape {
        sockets: chips,
        nodes_per_socket: 1,
        cores_per_socket: small_per_chip,
        threads_per_core: 4,
        cores_per_cluster: 1,
        cores_per_llc: 1,
        cores_per_coregroup: small_per_chip / 2,
        enumeration: Enumeration::PowerBigCore,
    }
}

/// Seeds 001/002's smaller LPAR: "12 cores, i.e 24 small cores with SMT=4",
/// 96 CPUs. Core count per chip is not given: a 12-core dedicated LPAR fits
/// on one 15-core POWER10 chip, so one chip and one node (estimate).
fn power10_96() -> Result<Machine, String> {
    let shape = power10(12, 1);
    make(
        "power10-96",
        about("power10-96"),
        &shape,
        uniform_distance(1, LOCAL, LOCAL),
        cost::power10(),
    )
}

/// Seed 002's larger LPAR: "40 Cores, 320CPUS", SMT8. The seed gives no
/// lscpu or NUMA lines; it is taken to be POWER10 like the smaller one (same
/// author, same series) on 2 sockets of 20 cores, one node each, as issue 5
/// describes it. (An earlier `power-320` preset guessed 4 chips of 10 cores;
/// nothing documents that machine, so it was replaced.) PowerVM reports 20
/// between the chips of one drawer (distance doubles per associativity
/// level): an estimate.
fn power10_320() -> Result<Machine, String> {
    let shape = power10(40, 2);
    make(
        "power10-320",
        about("power10-320"),
        &shape,
        uniform_distance(2, LOCAL, 20),
        cost::power10(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(name: &str) -> Machine {
        build(name).expect("preset exists").expect("preset builds")
    }

    fn range(a: usize, b: usize) -> Vec<usize> {
        (a..=b).collect()
    }

    #[test]
    fn every_preset_builds_and_is_listed() {
        let list = presets();
        assert_eq!(list.len(), PRESETS.len());
        for (name, desc) in list {
            let m = get(name);
            assert_eq!(m.name, name);
            assert!(
                desc.contains(&format!("{} CPUs", m.nr_cpus())),
                "{name}: {desc}"
            );
            assert!(!desc.contains("broken"), "{desc}");
        }
        let mut names = names();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PRESETS.len(), "duplicate preset names");
        assert!(build("no-such").is_none());
    }

    #[test]
    fn vm_2() {
        let m = get("vm-2");
        assert_eq!(
            (
                m.nr_cpus(),
                m.nr_cores,
                m.nr_llcs,
                m.nr_nodes,
                m.smt_width()
            ),
            (2, 2, 1, 1, 1)
        );
        assert!(m.shares_llc(0, 1));
        assert!(!m.cost.has_polling_idle());
        // a named, dated preset: `machines` and `--json` say the day of its fit
        assert!(m.description.contains(VM_2_FITTED), "{}", m.description);
        assert_eq!(m.costs_from, format!("preset vm-2 (fitted {VM_2_FITTED})"));
    }

    #[test]
    fn xeon_8269cy() {
        let m = get("xeon-8269cy");
        assert_eq!(
            (m.nr_cpus(), m.nr_cores, m.nr_llcs, m.nr_nodes, m.nr_sockets),
            (104, 52, 2, 2, 2)
        );
        for n in 0..52 {
            assert_eq!(m.smt_siblings(n), &[n, n + 52]);
        }
        let s0: Vec<usize> = range(0, 25).into_iter().chain(range(52, 77)).collect();
        assert_eq!(m.llc_cpus(0), s0.as_slice());
        assert_eq!(m.node_cpus(0), s0.as_slice());
        assert_eq!(m.cpus[26].socket, 1);
        assert_eq!(m.node_distance(0, 1), 21);
        assert_eq!(m.cost.idle_states.len(), 4);
    }

    #[test]
    fn altra_80() {
        let m = get("altra-80");
        assert_eq!(
            (
                m.nr_cpus(),
                m.nr_cores,
                m.nr_llcs,
                m.nr_nodes,
                m.smt_width()
            ),
            (80, 80, 80, 1, 1)
        );
        assert_eq!(m.smt_siblings(5), &[5]);
        assert_eq!(m.llc_cpus(m.cpus[5].llc), &[5]);
        assert_eq!(m.cluster_cpus(m.cpus[5].cluster), &[5]);
        assert!(!m.shares_llc(4, 5) && !m.shares_llc(5, 6));
        assert!(!m.cost.has_polling_idle());
    }

    #[test]
    fn milan_256() {
        let m = get("milan-256");
        assert_eq!(
            (m.nr_cpus(), m.nr_cores, m.nr_llcs, m.nr_nodes, m.nr_sockets),
            (256, 128, 16, 2, 2)
        );
        assert_eq!(m.smt_siblings(3), &[3, 131]);
        assert_eq!(m.smt_siblings(200), &[72, 200]);
        let ccx0: Vec<usize> = range(0, 7).into_iter().chain(range(128, 135)).collect();
        assert_eq!(m.llc_cpus(0), ccx0.as_slice());
        assert!(m.llc_cpus_all_sized(16));
        assert_eq!(m.node_cpus(1)[0], 64);
        assert_eq!(m.node_cpus(1).len(), 128);
        assert_eq!(m.distance(0, 8), super::super::topology::Distance::Socket);
    }

    #[test]
    fn snb_32_and_hsx_144() {
        let m = get("snb-32");
        assert_eq!(
            (m.nr_cpus(), m.nr_cores, m.nr_llcs, m.nr_nodes),
            (32, 16, 2, 2)
        );
        assert_eq!(m.smt_siblings(7), &[7, 23]);
        let m = get("hsx-144");
        assert_eq!(
            (m.nr_cpus(), m.nr_cores, m.nr_llcs, m.nr_nodes, m.nr_sockets),
            (144, 72, 4, 4, 4)
        );
        let n0: Vec<usize> = range(0, 17).into_iter().chain(range(72, 89)).collect();
        assert_eq!(m.node_cpus(0), n0.as_slice());
        assert_eq!(m.smt_siblings(71), &[71, 143]);
        assert_eq!(m.numa_distance, uniform_distance(4, 10, 21));
    }

    #[test]
    fn power10_96() {
        let m = get("power10-96");
        assert_eq!(
            (
                m.nr_cpus(),
                m.nr_cores,
                m.nr_llcs,
                m.nr_nodes,
                m.smt_width()
            ),
            (96, 24, 24, 1, 4)
        );
        assert_eq!(m.smt_siblings(0), &[0, 2, 4, 6]);
        assert_eq!(m.smt_siblings(5), &[1, 3, 5, 7]);
        assert_eq!(m.smt_siblings(95), &[89, 91, 93, 95]);
        assert_eq!(m.smt_siblings(94), &[88, 90, 92, 94]);
        assert_eq!(m.llc_cpus(m.cpus[0].llc), &[0, 2, 4, 6]);
        assert!(!m.shares_llc(0, 1));
        assert_eq!(m.nr_coregroups(), 2);
        assert_eq!(m.coregroup_cpus(1), range(48, 95).as_slice());
        assert_eq!(m.cost.idle_states[0].name, "snooze");
    }

    #[test]
    fn power10_320() {
        let m = get("power10-320");
        assert_eq!(
            (
                m.nr_cpus(),
                m.nr_cores,
                m.nr_llcs,
                m.nr_nodes,
                m.nr_sockets,
                m.smt_width()
            ),
            (320, 80, 80, 2, 2, 4)
        );
        assert_eq!(m.smt_siblings(9), &[9, 11, 13, 15]);
        assert_eq!(m.node_cpus(1), range(160, 319).as_slice());
        assert_eq!(m.nr_coregroups(), 4);
    }

    impl Machine {
        fn llc_cpus_all_sized(&self, n: usize) -> bool {
            (0..self.nr_llcs).all(|l| self.llc_cpus(l).len() == n)
        }
    }
}
