//! Benchmark workloads, kept out of the library's hot modules. `armac-bench` parses its
//! subcommand into one of the `*Args` structs here and prints what the matching function
//! returns, one JSON object per line; the scripts in `scripts/` compare them with their peers.

pub mod actor;
pub mod batched;
pub mod learner;
pub mod poker;
pub mod reservoir;
pub mod search;
pub mod solvers;

/// A benchmark's failure (bad arguments, a game or solver that cannot be built).
pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The median of `v` (the upper one for an even count); `NaN` when empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// `f()` and its wall time in seconds.
pub fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = std::time::Instant::now();
    let out = f();
    (out, t.elapsed().as_secs_f64())
}
