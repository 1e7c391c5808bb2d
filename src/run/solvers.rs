//! The `[solver]` algorithms: names, option parsing and construction. Every algorithm is a
//! [`TreeSolver`] on the compiled tree, so one driver ([`super::tabular`]) runs them all.
//!
//! Full-width CFR family (keys `updates`, `averaging`, `alpha`, `beta`, `gamma`): `cfr`, `cfr+`,
//! `lcfr`, `dcfr`. Sampling algorithms take their own keys in the same `[solver]` table; each
//! parses them with a typed, deny-unknown-keys options struct, so a misspelt key is an error
//! that names it.

use super::config::{ConfigError, SolverConfig};
use crate::cfr::{ALGORITHMS, SolverSpec, TabularSolver, TreeSolver};
use crate::game::Game;
use crate::tree::{PublicTree, TreeError};
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// Names of the sampling algorithms (see each module for its keys).
pub const SAMPLED: &[&str] = &[];

/// A validated `[solver]` choice.
#[derive(Clone, Debug, PartialEq)]
pub enum SolverChoice {
    /// Full-width CFR family.
    Cfr(SolverSpec),
}

/// Every algorithm name `[solver] algorithm` accepts.
pub fn algorithm_names() -> Vec<&'static str> {
    ALGORITHMS.iter().chain(SAMPLED).copied().collect()
}

/// Parses the algorithm-specific keys of `s` into `T` (a `deny_unknown_fields` options struct);
/// errors name the offending `solver.<key>`.
pub fn parse_options<T: DeserializeOwned>(s: &SolverConfig) -> Result<T, ConfigError> {
    let text = toml::to_string(&s.extra).map_err(|e| ConfigError::Value {
        key: "solver".into(),
        reason: e.to_string(),
    })?;
    toml::from_str::<T>(&text).map_err(|e| {
        let msg = e.message().to_string();
        // serde names unknown fields as "unknown field `x`"; point at `solver.x`.
        let key = msg
            .split('`')
            .nth(1)
            .filter(|_| msg.starts_with("unknown field"))
            .map(|k| format!("solver.{k}"))
            .unwrap_or_else(|| "solver".into());
        ConfigError::Value {
            key,
            reason: format!("{msg} (algorithm `{}`)", s.algorithm),
        }
    })
}

/// Validates the `[solver]` section of a sampling algorithm.
pub fn parse_sampled(s: &SolverConfig) -> Result<SolverChoice, ConfigError> {
    Err(ConfigError::Value {
        key: "solver.algorithm".into(),
        reason: format!(
            "unknown algorithm `{}`; expected one of {:?}",
            s.algorithm,
            algorithm_names()
        ),
    })
}

/// Builds the solver of a validated choice. `seed` seeds every random stream.
pub fn build(
    choice: &SolverChoice,
    seed: u64,
    game: &dyn Game,
    tree: Arc<PublicTree>,
) -> Result<Box<dyn TreeSolver>, TreeError> {
    let _ = (seed, game);
    Ok(match choice {
        SolverChoice::Cfr(spec) => Box::new(TabularSolver::new(tree, *spec)),
    })
}
