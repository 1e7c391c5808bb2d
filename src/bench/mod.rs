//! Benchmark workloads, kept out of the library's hot modules; `armac-bench` dispatches to them
//! and the scripts in `scripts/` compare them with their peers.

pub mod learner;
