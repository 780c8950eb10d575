//! Resident memory of this process, from /proc/self (Linux): now and at
//! its peak (VmHWM).

/// Peak resident set size in KiB (0 where /proc is unavailable).
pub fn peak_kib() -> u64 {
    status_kib("VmHWM:")
}

/// Current resident set size in KiB (0 where /proc is unavailable).
pub fn current_kib() -> u64 {
    status_kib("VmRSS:")
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}
