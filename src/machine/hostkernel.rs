//! The running kernel's preemption model and HZ: `--machine host` and
//! `validate bench` simulate the kernel this host runs, not the defaults.

use std::process::Command;

/// A `kernel.*` setting read from the host, and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct HostSetting {
    pub key: &'static str,
    pub value: String,
    pub source: &'static str,
}

/// kernel.preempt and kernel.hz of the running kernel, where they can be
/// read: the live preempt=dynamic model in debugfs, else `preempt=` on the
/// command line, else the build's CONFIG_PREEMPT_*; CONFIG_HZ.
pub fn detect() -> Vec<HostSetting> {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let config = kernel_config();
    let cmdline = read("/proc/cmdline").unwrap_or_default();
    let debugfs = read("/sys/kernel/debug/sched/preempt").unwrap_or_default();
    settings(&debugfs, &cmdline, config.as_deref().unwrap_or(""))
}

/// The decision of `detect` from the three texts (empty when unreadable).
pub fn settings(debugfs: &str, cmdline: &str, config: &str) -> Vec<HostSetting> {
    let dynamic = config.lines().any(|l| l == "CONFIG_PREEMPT_DYNAMIC=y");
    let live = debugfs
        .split_whitespace()
        .find_map(|w| w.strip_prefix('(')?.strip_suffix(')'))
        .map(|m| (m.to_string(), "/sys/kernel/debug/sched/preempt"));
    let boot = cmdline
        .split_whitespace()
        .find_map(|w| w.strip_prefix("preempt="))
        .filter(|_| dynamic)
        .map(|m| (m.to_string(), "preempt= on /proc/cmdline"));
    let built = [
        ("CONFIG_PREEMPT_NONE=y", "none"),
        ("CONFIG_PREEMPT_VOLUNTARY=y", "voluntary"),
        ("CONFIG_PREEMPT=y", "full"),
        ("CONFIG_PREEMPT_LAZY=y", "lazy"),
    ]
    .iter()
    .find(|(line, _)| config.lines().any(|l| l == *line))
    .map(|(_, m)| (m.to_string(), "CONFIG_PREEMPT_* in /proc/config.gz"));
    let mut out = Vec::new();
    if let Some((value, source)) = live.or(boot).or(built) {
        out.push(HostSetting {
            key: "kernel.preempt",
            value,
            source,
        });
    }
    let hz = config.lines().find_map(|l| l.strip_prefix("CONFIG_HZ="));
    if let Some(hz) = hz.filter(|v| v.parse::<u32>().is_ok()) {
        out.push(HostSetting {
            key: "kernel.hz",
            value: hz.to_string(),
            source: "CONFIG_HZ in /proc/config.gz",
        });
    }
    out
}

/// /proc/config.gz, decompressed by the system's gzip (absent without
/// CONFIG_IKCONFIG_PROC: then nothing is read from it).
fn kernel_config() -> Option<String> {
    let out = Command::new("gzip")
        .args(["-dc", "/proc/config.gz"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[HostSetting]) -> Vec<(&str, &str)> {
        v.iter().map(|s| (s.key, s.value.as_str())).collect()
    }

    #[test]
    fn live_model_then_cmdline_then_build() {
        let config = "CONFIG_PREEMPT_NONE=y\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_HZ=250\n";
        let both = [("kernel.preempt", "none"), ("kernel.hz", "250")];
        assert_eq!(pairs(&settings("", "quiet", config)), both);
        let boot = settings("", "quiet preempt=full", config);
        assert_eq!(pairs(&boot)[0], ("kernel.preempt", "full"));
        let live = settings("none voluntary (lazy) full\n", "preempt=full", config);
        assert_eq!(pairs(&live)[0], ("kernel.preempt", "lazy"));
        // preempt= means nothing to a kernel built without PREEMPT_DYNAMIC.
        let fixed = settings("", "preempt=full", "CONFIG_PREEMPT_VOLUNTARY=y\n");
        assert_eq!(pairs(&fixed), [("kernel.preempt", "voluntary")]);
        assert!(settings("", "", "").is_empty());
    }
}
