//! Observers of the kernel model: the --check invariants.

pub mod check;
