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
pub const SAMPLED: &[&str] = &["pos-mccfr"];

/// A validated `[solver]` choice.
#[derive(Clone, Debug, PartialEq)]
pub enum SolverChoice {
    /// Full-width CFR family.
    Cfr(SolverSpec),
    /// Public outcome sampling MCCFR with baselines ([`crate::pos`]).
    Pos(crate::pos::PosSpec),
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
    if s.algorithm == "pos-mccfr" {
        return parse_pos(s).map(SolverChoice::Pos);
    }
    Err(ConfigError::Value {
        key: "solver.algorithm".into(),
        reason: format!(
            "unknown algorithm `{}`; expected one of {:?}",
            s.algorithm,
            algorithm_names()
        ),
    })
}

/// `pos-mccfr`: its own keys (see [`crate::pos::PosOptions`]) plus the common `updates`,
/// `averaging` (default `linear` with `regret = "plus"`, else `uniform`) and `gamma`.
fn parse_pos(s: &SolverConfig) -> Result<crate::pos::PosSpec, ConfigError> {
    use crate::cfr::{Averaging, Updates};
    let bad = |key: &str, reason: String| ConfigError::Value {
        key: format!("solver.{key}"),
        reason,
    };
    let options: crate::pos::PosOptions = parse_options(s)?;
    options.validate().map_err(|(k, r)| bad(k, r))?;
    let updates = match s.updates.as_str() {
        "alternating" => Updates::Alternating,
        "simultaneous" => Updates::Simultaneous,
        other => {
            return Err(bad(
                "updates",
                format!("`{other}`; expected `alternating` or `simultaneous`"),
            ));
        }
    };
    for (key, v) in [("alpha", s.alpha), ("beta", s.beta)] {
        if v.is_some() {
            return Err(bad(
                key,
                "not a pos-mccfr key (the baseline's is `baseline_alpha`)".into(),
            ));
        }
    }
    let plus = options.regret == crate::pos::RegretRule::Plus;
    let averaging = match (s.averaging.as_deref(), s.gamma) {
        (None, None) if plus => Averaging::Linear,
        (None, None) => Averaging::Uniform,
        (Some("uniform"), None) => Averaging::Uniform,
        (Some("linear"), None) => Averaging::Linear,
        (Some("power") | None, g) => {
            let g = g.unwrap_or(2.0);
            if !(g.is_finite() && g >= 0.0) {
                return Err(bad(
                    "gamma",
                    format!("{g} must be a finite non-negative number"),
                ));
            }
            Averaging::Power(g)
        }
        (Some("uniform" | "linear"), Some(_)) => {
            return Err(bad("gamma", "gamma needs averaging = \"power\"".into()));
        }
        (Some(other), _) => {
            return Err(bad(
                "averaging",
                format!("`{other}`; expected `uniform`, `linear` or `power`"),
            ));
        }
    };
    Ok(crate::pos::PosSpec {
        options,
        updates,
        averaging,
    })
}

/// Builds the solver of a validated choice. `seed` seeds every random stream.
pub fn build(
    choice: &SolverChoice,
    seed: u64,
    game: &dyn Game,
    tree: Arc<PublicTree>,
) -> Result<Box<dyn TreeSolver>, TreeError> {
    Ok(match choice {
        SolverChoice::Cfr(spec) => Box::new(TabularSolver::new(tree, *spec)),
        SolverChoice::Pos(spec) => {
            Box::new(crate::pos::PosSolver::from_game(game, tree, *spec, seed)?)
        }
    })
}
