//! Generic helpers below the kernel model: a latency histogram, atomic
//! results files, a thread pool for independent runs, the host's CPU
//! affinity, this process's resident memory, UTC dates and the reasons
//! for malformed TOML.
//!
//! Layer: bottom, beside `engine` and `machine`. Imports nothing of the
//! crate: no kernel, workload or report type appears here.

pub mod affinity;
pub mod cpumask;
pub mod date;
pub mod fs;
pub mod hist;
pub mod json_schema;
pub mod parallel;
pub mod rss;
pub mod sink;
pub mod suggest;
pub mod toml_text;
pub mod version;
