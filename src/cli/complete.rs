//! The values the completion scripts offer for flags whose words come
//! from a table: machine presets, workload kinds, scenario keys, trace
//! formats, bench cases. They are read from the tables the flags are
//! checked against, and put on a copy of the command that only the
//! generators see, so parsing keeps its own checks and did-you-mean
//! messages.

use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{Command, ValueHint};

/// The values of some flags.
struct Values {
    /// The flags' long names.
    longs: &'static [&'static str],
    values: fn() -> Vec<PossibleValue>,
    /// The value is usually typed on after completing it (`hackbench` then
    /// `:groups=2`, `kernel.hz=` then `1000`): bash adds no space.
    open: bool,
}

const VALUES: &[Values] = &[
    Values {
        longs: &["machine", "domains"],
        values: machines,
        open: false,
    },
    Values {
        longs: &["workload"],
        values: workloads,
        open: true,
    },
    Values {
        longs: &["set", "set-a", "set-b"],
        values: keys,
        open: true,
    },
    Values {
        longs: &["trace-format"],
        values: trace_formats,
        open: false,
    },
    Values {
        longs: &["case"],
        values: bench_cases,
        open: false,
    },
];

/// Flags that also take a file name (`--machine FILE.toml`): zsh and fish
/// offer files beside the values; bash does when no value matches (its
/// `-o default`).
const FILES_TOO: &[&str] = &["machine", "domains"];

/// `cmd` with the values on its flags and on its subcommands' flags.
pub fn with_values(cmd: Command) -> Command {
    let found: Vec<_> = cmd
        .get_arguments()
        .filter_map(|a| {
            let long = a.get_long()?;
            let v = VALUES.iter().find(|v| v.longs.contains(&long))?;
            Some((a.get_id().clone(), v))
        })
        .collect();
    let cmd = found.into_iter().fold(cmd, |c, (id, v)| {
        let hint = if v.open {
            ValueHint::Other
        } else {
            ValueHint::Unknown
        };
        c.mut_arg(id, |a| {
            a.value_parser(PossibleValuesParser::new((v.values)()))
                .value_hint(hint)
        })
    });
    cmd.mut_subcommands(with_values)
}

/// Fish's script with files offered beside the values of [`FILES_TOO`]
/// (clap_complete writes `-f`, no files, for a flag with values).
pub fn fish_files_too(script: &str) -> String {
    let takes_files = |line: &str| {
        FILES_TOO
            .iter()
            .any(|l| line.contains(&format!(" -l {l} ")))
    };
    script
        .lines()
        .map(|line| match takes_files(line) {
            true => line.replacen(" -r -f -a ", " -r -F -a ", 1),
            false => line.to_string(),
        })
        .map(|line| line + "\n")
        .collect()
}

/// A value with its help, whose `"` would end the string that zsh's and
/// fish's scripts put it in (clap_complete escapes `'` but not `"`), and
/// whose backquotes zsh's `_alternative` would run.
fn value(name: impl Into<clap::builder::Str>, help: &str) -> PossibleValue {
    PossibleValue::new(name).help(help.replace(['"', '`'], "'"))
}

/// Zsh's script with files offered beside the values of [`FILES_TOO`]:
/// each such flag's action `((VALUES))` becomes an `_alternative` of
/// the values and `_files`.
pub fn zsh_files_too(script: &str) -> String {
    let mut out = String::new();
    let mut rest = script;
    while let Some((head, action, tail)) = next_values_action(rest) {
        let values = action.replace('"', "\\\"").replace('\n', " ");
        out += head;
        // `:` ends an action in `_arguments`' spec: `\:` inside it.
        out += &format!("{{_alternative \"values\\:value\\:{values}\" \"files\\:file\\:_files\"}}");
        rest = tail;
    }
    out + rest
}

/// `s` cut around the `((VALUES))` action of its first flag of
/// [`FILES_TOO`]: before, the action, after.
fn next_values_action(s: &str) -> Option<(&str, &str, &str)> {
    let flag = FILES_TOO
        .iter()
        .filter_map(|l| s.find(&format!("'--{l}=[")))
        .min()?;
    let open = flag + s[flag..].find(":((")? + 1;
    let close = open + s[open..].find("))'")? + 2;
    Some((&s[..open], &s[open..close], &s[close..]))
}

/// The presets and `host`, as `schedlab machines` lists them.
fn machines() -> Vec<PossibleValue> {
    let presets = crate::machine::presets();
    let host = (
        "host",
        "this machine (`schedlab calibrate` keeps its costs)".into(),
    );
    presets
        .into_iter()
        .chain([host])
        .map(|(name, desc)| value(name, &desc))
        .collect()
}

fn workloads() -> Vec<PossibleValue> {
    crate::workload::kinds::KINDS
        .iter()
        .map(|k| value(k.name, k.doc))
        .collect()
}

/// Every key of `schedlab keys` as `KEY=`, the first list entry for `N`;
/// the domain flags, whose `LEVEL` depends on the machine, are left out.
fn keys() -> Vec<PossibleValue> {
    let mut seen = std::collections::BTreeSet::new();
    crate::scenario::keys::rows()
        .into_iter()
        .filter(|r| !r.key.contains("LEVEL"))
        .map(|r| (r.key.replace(".N.", ".0."), r.doc))
        .filter(|(key, _)| seen.insert(key.clone()))
        .map(|(key, doc)| value(format!("{key}="), &doc))
        .collect()
}

/// The words of `output.trace_format` in the key table.
fn trace_formats() -> Vec<PossibleValue> {
    use crate::scenario::keys::{KeyTy, KEYS};
    let words = KEYS.iter().find_map(|d| match d.ty {
        KeyTy::Words(f) if d.key == "output.trace_format" => Some(f()),
        _ => None,
    });
    words
        .unwrap_or_default()
        .into_iter()
        .map(PossibleValue::new)
        .collect()
}

/// `bench --case`: the speed cases and the --distributions scenarios.
fn bench_cases() -> Vec<PossibleValue> {
    let speed = crate::bench::CASES.iter().map(|c| (c.id, c.name));
    let dist = crate::bench::distributions::DIST_CASES
        .iter()
        .map(|c| (c.id, "a --distributions scenario"));
    let mut seen = std::collections::BTreeSet::new();
    speed
        .chain(dist)
        .filter(|(id, _)| seen.insert(*id))
        .map(|(id, help)| value(id, help))
        .collect()
}
