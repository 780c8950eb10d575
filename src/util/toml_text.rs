//! Where and why a TOML text is malformed, for the error messages of
//! scenario and machine files.

/// The 1-based line of a TOML parse error, if the parser gave a place, and
/// its reason: for a line holding a control character, one that says so
/// (the parser's own message for one in a comment is empty).
pub fn malformed(text: &str, e: &toml::de::Error) -> (Option<usize>, String) {
    let line = e
        .span()
        .map(|s| text[..s.start.min(text.len())].lines().count().max(1));
    let reason = line
        .and_then(|l| control_char(text.lines().nth(l - 1)?))
        .unwrap_or_else(|| e.message().trim().to_string());
    (line, reason)
}

/// The reason a line is malformed when it holds a control character.
fn control_char(line: &str) -> Option<String> {
    let (col, c) = line
        .chars()
        .enumerate()
        .find(|&(_, c)| c.is_control() && c != '\t')?;
    Some(format!(
        "control character U+{:04X} at column {} (TOML allows only tab, in comments too)",
        c as u32,
        col + 1
    ))
}
