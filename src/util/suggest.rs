//! "Did you mean": the known name closest to a mistyped one.

/// ` (did you mean `X`?)` for the candidate closest to `name`, or "" when
/// none is close (edit distance at most a third of the length, ≥ 1).
pub fn did_you_mean<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    let limit = (name.chars().count() / 3).max(1);
    known
        .into_iter()
        .map(|k| (strsim::damerau_levenshtein(name, k), k))
        .filter(|&(d, k)| d <= limit || (name.len() >= 4 && k.starts_with(name)))
        .min()
        .map(|(_, k)| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::did_you_mean;

    #[test]
    fn close_names_are_suggested_far_ones_not() {
        let known = ["hackbench", "pipe", "schbench"];
        assert_eq!(
            did_you_mean("hackbensh", known),
            " (did you mean `hackbench`?)"
        );
        assert_eq!(did_you_mean("xyz", known), "");
        let m = ["xeon-8269cy", "vm-2"];
        assert_eq!(
            did_you_mean("xeon-8269", m),
            " (did you mean `xeon-8269cy`?)"
        );
        assert_eq!(
            did_you_mean("PLACE_LAGG", ["PLACE_LAG", "DELAY_ZERO"]),
            " (did you mean `PLACE_LAG`?)"
        );
    }
}
