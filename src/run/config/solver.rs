//! `[solver]`: the raw keys of the tree solvers (their parsing lives in [`crate::run::solvers`]).

use serde::{Deserialize, Serialize};

/// `[solver]`: a solver over the compiled tree — full-width CFR family or a sampling algorithm
/// (see [`crate::run::solvers`] for the names and their keys).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SolverConfig {
    /// An algorithm name of [`crate::run::solvers::Algorithm`].
    pub algorithm: String,
    /// Number of iterations to run.
    pub iterations: u64,
    /// `alternating` (OpenSpiel's default) or `simultaneous`.
    #[serde(default = "default_updates")]
    pub updates: String,
    /// Override of the averaging: `uniform`, `linear` or `power` (weight t^gamma).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub averaging: Option<String>,
    /// DCFR's α (positive-regret discount exponent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// DCFR's β (negative-regret discount exponent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    /// DCFR's γ (averaging exponent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gamma: Option<f64>,
    /// The algorithm's own keys (sampling algorithms); the CFR family accepts none. Unknown
    /// keys are rejected by the algorithm's option parser, naming the key.
    #[serde(flatten)]
    pub extra: toml::Table,
}

fn default_updates() -> String {
    "alternating".into()
}
