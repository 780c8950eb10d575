//! The simulated hardware: CPU topology, named machine presets, host
//! detection from /sys, and the cost model that says how long kernel work
//! takes (DESIGN.md, "Decisions exact, time modelled").
//!
//! A machine comes from a spec string (`--machine`):
//! - a preset name (`schedlab machines` lists them: [`presets`]),
//! - `smp:cpus=N[,smt=S,llc=L,sockets=K]` — a regular x86-style machine,
//! - `host` — this computer, read from /sys, with the costs `schedlab
//!   calibrate` cached for it ([`host::load`]),
//! - `FILE.toml` — a machine file ([`file`]), e.g. written by `schedlab calibrate`.
//!
//! Modules: [`topology`] (CPU records, masks, distances), [`presets`]
//! (named machines), [`host`] (sysfs), [`cost`] (cost models).
//!
//! Layer: bottom, beside `engine` and `util`; imports nothing of the crate
//! above them (the kernel reads the machine, never the reverse).

pub mod cost;
pub mod file;
pub mod host;
pub mod hostkernel;
pub mod measured;
pub mod presets;
pub mod topology;

pub use cost::{CostModel, IdleState};
pub use host::from_sysfs;
pub use presets::presets;
pub use topology::{CpuTopo, Distance, Enumeration, Machine, Shape};

/// SLIT distances used by `smp:` machines: local, and between sockets.
const SMP_LOCAL_DISTANCE: u32 = 10;
const SMP_REMOTE_DISTANCE: u32 = 21;

/// Parse a machine spec: a preset name, `smp:cpus=N[,smt=S,llc=L,sockets=K]`,
/// `host`, or a machine file `FILE.toml`.
pub fn from_spec(spec: &str) -> Result<Machine, String> {
    let spec = spec.trim();
    if file::is_file_spec(spec) {
        return file::load(std::path::Path::new(spec));
    }
    if spec == "host" {
        return host::load(host::cache_dir().as_deref());
    }
    if let Some(args) = spec.strip_prefix("smp:") {
        return smp(spec, args);
    }
    if spec == "smp" {
        return Err("smp: give at least cpus=N, e.g. smp:cpus=8,smt=2".into());
    }
    presets::build(spec).unwrap_or_else(|| {
        Err(format!(
            "unknown machine {spec:?}{}: use host, smp:cpus=N[,smt=S,llc=L,sockets=K], FILE.toml, or one of: {}",
            crate::util::suggest::did_you_mean(spec, presets::names().iter().copied()),
            presets::names().join(", ")
        ))
    })
}

/// `smp:cpus=N[,smt=S,llc=L,sockets=K,little=M,little_capacity=C]`: N CPUs
/// on K sockets (default 1), S threads per core (default 1), L LLCs per
/// socket (default 1), one NUMA node per socket, x86 numbering (the sibling
/// of CPU n is n + N/S), the generic bare-metal x86 cost model. The last M
/// CPUs (default 0) have capacity C (default 512) instead of 1024.
fn smp(spec: &str, args: &str) -> Result<Machine, String> {
    const KEYS: [&str; 6] = ["cpus", "smt", "llc", "sockets", "little", "little_capacity"];
    let mut vals: [Option<usize>; 6] = [None; 6];
    for part in args.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("smp: {part:?} is not key=value (keys: {})", KEYS.join(", ")))?;
        let i = KEYS
            .iter()
            .position(|&key| key == k.trim())
            .ok_or_else(|| {
                format!(
                    "smp: unknown key {:?} (keys: {})",
                    k.trim(),
                    KEYS.join(", ")
                )
            })?;
        if vals[i].is_some() {
            return Err(format!("smp: {} given twice", KEYS[i]));
        }
        let n: usize = v
            .trim()
            .parse()
            .map_err(|_| format!("smp: {}={:?} is not a whole number", KEYS[i], v.trim()))?;
        if n == 0 && i != 4 {
            return Err(format!("smp: {} must be at least 1", KEYS[i]));
        }
        vals[i] = Some(n);
    }
    let cpus = vals[0].ok_or("smp: cpus=N is required, e.g. smp:cpus=8")?;
    if cpus > topology::MAX_CPUS {
        return Err(format!(
            "smp: cpus={cpus} is above the limit of {} CPUs",
            topology::MAX_CPUS
        ));
    }
    if vals[1..4].iter().flatten().any(|&v| v > topology::MAX_CPUS) {
        return Err(format!(
            "smp: smt, llc and sockets must be at most {}",
            topology::MAX_CPUS
        ));
    }
    let smt = vals[1].unwrap_or(1);
    let llc = vals[2].unwrap_or(1);
    let sockets = vals[3].unwrap_or(1);
    let little = vals[4].unwrap_or(0);
    let little_cap = vals[5].unwrap_or(512);
    if little >= cpus || little_cap > 1024 {
        return Err(format!(
            "smp: little={little} must be below cpus={cpus} and little_capacity={little_cap} at most 1024"
        ));
    }
    if !cpus.is_multiple_of(smt * sockets) {
        return Err(format!(
            "smp: cpus={cpus} does not split into {sockets} socket(s) of SMT{smt} cores (need a multiple of {})",
            smt * sockets
        ));
    }
    let cores_per_socket = cpus / (smt * sockets);
    if !cores_per_socket.is_multiple_of(llc) {
        return Err(format!(
            "smp: {cores_per_socket} cores per socket do not split into llc={llc} equal LLCs"
        ));
    }
    let shape = Shape {
        cores_per_llc: cores_per_socket / llc,
        cores_per_coregroup: cores_per_socket / llc,
        ..Shape::new(sockets, cores_per_socket, smt)
    };
    let distance = topology::uniform_distance(sockets, SMP_LOCAL_DISTANCE, SMP_REMOTE_DISTANCE);
    let mut m = Machine::from_shape(spec, "", &shape, distance, cost::generic_x86())?;
    for c in &mut m.cpus[cpus - little..] {
        c.capacity = little_cap as u32;
    }
    m.costs_from = "the generic x86 model".into();
    m.description = format!("generic x86 SMP, generic cost model: {}", m.summary());
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smp_defaults_and_full_spec() {
        let m = from_spec("smp:cpus=8").unwrap();
        assert_eq!(
            (
                m.nr_cpus(),
                m.nr_cores,
                m.nr_llcs,
                m.nr_nodes,
                m.smt_width()
            ),
            (8, 8, 1, 1, 1)
        );
        assert_eq!(m.name, "smp:cpus=8");
        let m = from_spec("smp:cpus=32, smt=2, llc=2, sockets=2").unwrap();
        assert_eq!(
            (m.nr_cpus(), m.nr_cores, m.nr_llcs, m.nr_nodes, m.nr_sockets),
            (32, 16, 4, 2, 2)
        );
        assert_eq!(m.smt_siblings(3), &[3, 19]);
        assert_eq!(m.llc_cpus(0), &[0, 1, 2, 3, 16, 17, 18, 19]);
        assert_eq!(m.node_distance(0, 1), 21);
        assert!(m.description.contains("32 CPUs"));
    }

    #[test]
    fn smp_errors_are_clear() {
        let err = |s: &str| from_spec(s).unwrap_err();
        assert!(err("smp:").contains("cpus=N is required"));
        assert!(err("smp").contains("cpus=N"));
        assert!(err("smp:smt=2").contains("required"));
        assert!(err("smp:cpus=10,smt=4").contains("multiple of 4"));
        assert!(err("smp:cpus=12,sockets=5").contains("multiple of 5"));
        assert!(err("smp:cpus=12,llc=5").contains("llc=5"));
        assert!(err("smp:cpus=0").contains("at least 1"));
        assert!(err("smp:cpus=x").contains("whole number"));
        assert!(err("smp:cpus=-4").contains("whole number"));
        assert!(err("smp:cpus=4,numa=2").contains("unknown key \"numa\""));
        assert!(err("smp:cpus=4,cpus=8").contains("twice"));
        assert!(err("smp:cpus").contains("key=value"));
        for huge in ["18446744073709551615", "4294967296", "100000", "4097"] {
            assert!(err(&format!("smp:cpus={huge}")).contains("limit of 4096 CPUs"));
        }
        assert!(err("smp:cpus=8,smt=18446744073709551615").contains("at most 4096"));
        assert_eq!(from_spec("smp:cpus=4096,smt=2").unwrap().nr_cpus(), 4096);
    }

    #[test]
    fn presets_and_unknown_names() {
        for (name, _) in presets() {
            assert_eq!(from_spec(name).unwrap().name, name);
        }
        let e = from_spec("xeon").unwrap_err();
        assert!(e.contains("unknown machine") && e.contains("xeon-8269cy") && e.contains("smp:"));
    }

    #[test]
    fn host_spec() {
        if std::path::Path::new("/sys/devices/system/cpu/online").exists() {
            let m = from_spec("host").unwrap();
            assert!(m.nr_cpus() >= 1);
            assert_eq!(m.name, "host");
        }
    }
}
