//! The `[output]` table: where results, traces and the HTML report go.
//! Not part of the simulation: it changes no result.

use super::Output;
use crate::trace::{Format, TraceOptions};
use crate::workload::params::parse_duration;

/// `--trace-window 2s..3s`: the simulated time range kept, [start, end).
pub fn parse_window(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("trace window `{s}`: expected START..END, e.g. 2s..3s"))?;
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
            let path = s()?;
            out.trace = Some(TraceOptions { path, ..trace() });
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
        "html" => out.html = Some(s()?),
        _ => return Err(
            "unknown key (known: json, quiet, trace, trace_format, trace_window, trace_pelt, html)"
                .into(),
        ),
    }
    Ok(())
}
