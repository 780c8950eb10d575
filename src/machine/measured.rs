//! The names of the primitives `schedlab calibrate` measures, which a
//! machine file's `[measured]` table holds: a name outside them is a typo
//! or not calibrate's, and the file is refused as for any unknown key.

/// Every primitive name, `{x}` standing for a word of [`WORDS`] and `{n}`
/// for a number. `{ipc}_read_cpu` is one calibrate wrote before: files
/// that hold it still load.
const PRIMITIVES: [&str; 28] = [
    "clock",
    "getppid",
    "futex_wake_empty",
    "futex_wait_eagain",
    "thread_cputime",
    "fork",
    "fork_exit_wait",
    "pingpong_thread",
    "pingpong_process",
    "futex_wake_local",
    "timer_wake_busy",
    "timer_sleep_idle",
    "tick_gap",
    "{ipc}_stream_{n}",
    "{ipc}_stream_{n}_all",
    "{ipc}_xcpu_{d}_{rw}",
    "{ipc}_writers_{n}_{rw}",
    "{ipc}_rotate_{n}_{rw}",
    "{ipc}_gated_{n}_{rw}",
    "{ipc}_cycle_same",
    "{ipc}_cycle_{d}",
    "{ipc}_read_cpu",
    "ring_{kind}_{n}",
    "ring_unix_{kind}_{n}",
    "line_{d}",
    "wake_{case}_{d}",
    "wake_{case}_target_{d}",
    "waker_{case}_{d}",
];

/// The distances between two CPUs calibrate measures across, nearest
/// first.
pub const DISTANCES: [&str; 4] = ["smt", "llc", "socket", "numa"];

/// The words a placeholder stands for: `{d}` a distance, `{case}` what
/// the wakee of a remote wakeup is doing.
const WORDS: [(&str, &[&str]); 5] = [
    ("{ipc}", &["pipe", "unix"]),
    ("{d}", &DISTANCES),
    ("{kind}", &["thread", "process"]),
    (
        "{case}",
        &[
            "idle_short",
            "idle",
            "idle_mid",
            "idle_long",
            "busy",
            "busy_normal",
        ],
    ),
    ("{rw}", &["read", "write"]),
];

/// Is `name` a primitive calibrate measures?
pub fn is_primitive(name: &str) -> bool {
    PRIMITIVES.iter().any(|p| matches(p, name))
}

/// Whether `name` is `pat` with its placeholders filled in.
fn matches(pat: &str, name: &str) -> bool {
    if let Some(rest) = pat.strip_prefix("{n}") {
        let digits = name.bytes().take_while(u8::is_ascii_digit).count();
        return (1..=digits).any(|k| matches(rest, &name[k..]));
    }
    if let Some((ph, words)) = WORDS.iter().find(|(ph, _)| pat.starts_with(ph)) {
        let rest = &pat[ph.len()..];
        return (words.iter()).any(|w| name.strip_prefix(w).is_some_and(|n| matches(rest, n)));
    }
    let literal = pat.split('{').next().unwrap_or_default();
    match name.strip_prefix(literal) {
        Some(n) if !literal.is_empty() => matches(&pat[literal.len()..], n),
        _ => pat.is_empty() && name.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::is_primitive;

    #[test]
    fn calibrates_names_and_nothing_else() {
        for ok in [
            "getppid",
            "pipe_stream_4096",
            "unix_stream_100_all",
            "unix_xcpu_llc_write",
            "pipe_writers_8_read",
            "unix_rotate_15_write",
            "pipe_gated_15_write",
            "ring_unix_process_16",
            "wake_idle_short_target_numa",
            "waker_busy_normal_smt",
            "pipe_read_cpu",
        ] {
            assert!(is_primitive(ok), "{ok}");
        }
        for bad in [
            "",
            "bogus",
            "getppid_",
            "pipe_stream_",
            "pipe_stream_x",
            "tcp_stream_1",
            "line_far",
            "wake_asleep_llc",
            "ring_thread_2x",
        ] {
            assert!(!is_primitive(bad), "{bad}");
        }
    }
}
