//! Observers of the kernel model: the --check invariants and histograms.

pub mod check;
pub mod hist;
