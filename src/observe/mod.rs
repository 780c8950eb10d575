//! Observers of the kernel model: the --check invariants.
//!
//! Layer: beside `trace`, right above the kernel: reads the kernel's state
//! only, never workloads, reports or anything above them.

pub mod check;
