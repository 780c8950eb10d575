//! schedlab: a fast, deterministic simulator of the Linux kernel's CPU
//! scheduler. See README.md.

pub mod bench;
pub mod calibrate;
pub mod cli;
pub mod compare;
pub mod engine;
pub mod explain;
pub mod fuzz;
pub mod kernel;
pub mod machine;
pub mod observe;
pub mod progress;
pub mod record;
pub mod report;
pub mod repro;
pub mod run;
pub mod scenario;
pub mod sweep;
pub mod trace;
pub mod util;
pub mod validate;
pub mod workload;
