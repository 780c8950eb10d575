//! The `[output]` table: where results, traces and the HTML report go.
//! Not part of the simulation: it changes no result.

use super::Output;
use crate::trace::{Format, TraceOptions};
use crate::util::sink::{compression, STDIO};
use crate::workload::params::parse_duration;

/// `--trace-window 2s..3s`: the simulated time range kept, [start, end).
pub fn parse_window(s: &str) -> Result<(u64, u64), String> {
    let bad = || format!("trace window `{s}`: expected START..END, e.g. 2s..3s");
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    // `0ms...10ms` is not a window from 0 to 0.10 ms.
    if b.starts_with('.') || b.contains("..") {
        return Err(bad());
    }
    let start = if a.trim().is_empty() {
        0
    } else {
        parse_duration(a)?
    };
    let end = if b.trim().is_empty() {
        u64::MAX
    } else {
        parse_duration(b)?
    };
    if start >= end {
        return Err(format!("trace window `{s}` is empty"));
    }
    Ok((start, end))
}

/// The `[output]` keys for traces and the HTML report.
pub fn output_key(out: &mut Output, key: &str, v: &toml::Value) -> Result<(), String> {
    let s = || {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| "must be a string".to_string())
    };
    let trace = || out.trace.clone().unwrap_or_default();
    match key {
        "trace" => {
            // Keys resolve in name order, so an explicit trace_format
            // comes after this and wins over the extension.
            let path = s()?;
            let format = Format::from_path(&path);
            out.trace = Some(TraceOptions {
                path,
                format,
                ..trace()
            });
        }
        "trace_format" => {
            let format = Format::parse(&s()?)?;
            out.trace = Some(TraceOptions { format, ..trace() });
        }
        "trace_window" => {
            let window = Some(parse_window(&s()?)?);
            out.trace = Some(TraceOptions { window, ..trace() });
        }
        "trace_pelt" => {
            let pelt = s()?.split(',').map(|x| x.trim().to_string()).collect();
            out.trace = Some(TraceOptions { pelt, ..trace() });
        }
        "trace_decisions" => {
            let decisions = v.as_bool().ok_or("must be true or false")?;
            out.trace = Some(TraceOptions {
                decisions,
                ..trace()
            });
        }
        "trace_syscalls" => {
            let syscalls = v.as_bool().ok_or("must be true or false")?;
            out.trace = Some(TraceOptions {
                syscalls,
                ..trace()
            });
        }
        "html" => out.html = Some(s()?),
        _ => {
            let known = super::keys::names_under("output").join(", ");
            return Err(format!("unknown key (known: {known})"));
        }
    }
    Ok(())
}

/// Checks across the `[output]` keys: at most one output on stdout,
/// known compressions, and a trace format that can hold what is traced.
pub fn check(out: &Output) -> Result<(), String> {
    let trace = out.trace.as_ref().map(|t| t.path.clone());
    let files = [
        ("--json", out.json.clone()),
        ("--trace", trace),
        ("--schedstat", out.schedstat.clone()),
    ];
    let stdout: Vec<&str> = files
        .iter()
        .filter(|(_, p)| p.as_deref() == Some(STDIO))
        .map(|(flag, _)| *flag)
        .collect();
    if stdout.len() > 1 {
        return Err(format!(
            "{} {} write to stdout (`-`): only one output can; give the others a file",
            stdout.join(" and "),
            if stdout.len() == 2 { "both" } else { "all" }
        ));
    }
    for (flag, path) in &files {
        if let Some(p) = path {
            compression(p).map_err(|e| format!("{flag} {e}"))?;
        }
    }
    if let Some(t) = &out.trace {
        let holds = match t.format {
            Format::Dat => "a trace.dat holds the sched tracepoints only",
            Format::Perfetto => {
                "a Perfetto trace holds the sched events, wakeup flows and decisions"
            }
            Format::Ftrace | Format::Chrome => "",
        };
        if t.syscalls && t.format != Format::Ftrace {
            return Err(format!(
                "--trace {} --trace-syscalls: only ftrace text holds the syscall events; \
                 use --trace-format ftrace",
                t.path
            ));
        }
        if !holds.is_empty() && !t.pelt.is_empty() {
            return Err(format!(
                "--trace {} --trace-pelt: {holds}, not PELT counters; \
                 use --trace-format ftrace or chrome for them",
                t.path
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_window;

    #[test]
    fn windows_parse_and_three_dots_are_refused() {
        assert_eq!(parse_window("2ms..3ms"), Ok((2_000_000, 3_000_000)));
        assert_eq!(parse_window("..3ms"), Ok((0, 3_000_000)));
        assert_eq!(parse_window("1ms.."), Ok((1_000_000, u64::MAX)));
        for bad in ["0ms...10ms", "1ms..2ms..3ms", "1ms", "3ms..2ms"] {
            assert!(parse_window(bad).is_err(), "{bad}");
        }
    }
}
