//! Generic helpers below the kernel model: a latency histogram, atomic
//! results files and a thread pool for independent runs.
//!
//! Layer: bottom, beside `engine` and `machine`. Imports nothing of the
//! crate: no kernel, workload or report type appears here.

pub mod fs;
pub mod hist;
pub mod parallel;
