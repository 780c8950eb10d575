//! Parse `/proc/PID/task/TID/sched` (proc_sched_show_task in
//! kernel/sched/debug.c): `name : value` lines. Field sets differ between
//! kernel versions and configs, so unknown lines are skipped; only the PELT
//! fields this check needs are required.

/// One reading of a task's sched file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedFields {
    /// se.avg.last_update_time: the PELT clock (ns) of the last update.
    pub last_update_time: u64,
    pub util_avg: u64,
    pub load_avg: u64,
    pub runnable_avg: u64,
    /// se.avg.util_est (absent on some configs: 0).
    pub util_est: u64,
    /// se.sum_exec_runtime, printed in ms with 6 decimals, kept in ns.
    pub sum_exec_runtime_ns: u64,
    pub nr_switches: u64,
    pub nr_involuntary_switches: u64,
}

/// The fields without which the check cannot run.
const REQUIRED: [&str; 2] = ["se.avg.util_avg", "se.avg.last_update_time"];

/// Parse the text of a sched file; `name` labels errors as `name:line`.
pub fn parse(name: &str, text: &str) -> Result<SchedFields, String> {
    let mut f = SchedFields::default();
    let mut seen = [false; REQUIRED.len()];
    for (i, line) in text.lines().enumerate() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        let slot = match key {
            "se.avg.last_update_time" => &mut f.last_update_time,
            "se.avg.util_avg" => &mut f.util_avg,
            "se.avg.load_avg" => &mut f.load_avg,
            "se.avg.runnable_avg" => &mut f.runnable_avg,
            "se.avg.util_est" | "se.avg.util_est.enqueued" => &mut f.util_est,
            "nr_switches" => &mut f.nr_switches,
            "nr_involuntary_switches" => &mut f.nr_involuntary_switches,
            "se.sum_exec_runtime" => {
                f.sum_exec_runtime_ns = ms_to_ns(value)
                    .ok_or_else(|| format!("{name}:{}: {key}: `{value}` is not ms.µs", i + 1))?;
                continue;
            }
            _ => continue,
        };
        *slot = value
            .parse()
            .map_err(|_| format!("{name}:{}: {key}: `{value}` is not a number", i + 1))?;
        if let Some(r) = REQUIRED.iter().position(|r| *r == key) {
            seen[r] = true;
        }
    }
    match REQUIRED.iter().zip(seen).find(|(_, s)| !s) {
        Some((missing, _)) => Err(format!("{name}: no `{missing}` line")),
        None => Ok(f),
    }
}

/// `SPLIT_NS` output (`%Ld.%06ld` milliseconds) to nanoseconds, exactly.
fn ms_to_ns(s: &str) -> Option<u64> {
    let (ms, frac) = s.split_once('.').unwrap_or((s, "0"));
    if frac.len() > 6 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_ns: u64 = format!("{frac:0<6}").parse().ok()?;
    ms.parse::<u64>()
        .ok()?
        .checked_mul(1_000_000)?
        .checked_add(frac_ns)
}

/// The sched file of thread `tid` of this process under `proc_root`.
pub fn task_path(proc_root: &std::path::Path, tid: i32) -> std::path::PathBuf {
    proc_root
        .join("self/task")
        .join(tid.to_string())
        .join("sched")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ms_fraction_is_exact() {
        assert_eq!(ms_to_ns("507834.369129"), Some(507_834_369_129));
        assert_eq!(ms_to_ns("0.5"), Some(500_000));
        assert_eq!(ms_to_ns("12"), Some(12_000_000));
        assert_eq!(ms_to_ns("1.1234567"), None);
        assert_eq!(ms_to_ns("-1.0"), None);
    }
}
