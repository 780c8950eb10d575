//! What build this is: the crate version, the git commit and its date
//! (embedded by build.rs), for `--version`, JSON `meta` and the reports.

/// The crate version, e.g. "0.1.0".
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The git commit the binary was built from (12 hex digits), or "unknown".
pub const COMMIT: &str = env!("SCHEDLAB_GIT_COMMIT");
/// The commit's date (or SOURCE_DATE_EPOCH's), YYYY-MM-DD, or "unknown".
pub const BUILD_DATE: &str = env!("SCHEDLAB_BUILD_DATE");

/// "0.1.0 (commit 1e5fd8c0a1b2, 2026-11-23)": the long `--version` text.
pub const LONG: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("SCHEDLAB_GIT_COMMIT"),
    ", ",
    env!("SCHEDLAB_BUILD_DATE"),
    ")"
);
