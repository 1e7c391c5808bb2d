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
use crate::sfo::{Minimizer, SfoOptions, SfoSolver, SfoSpec};
use crate::tree::history::HistoryTree;
use crate::tree::{PublicTree, TreeError};
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// Names of the sampling algorithms (see each module for its keys).
pub const SAMPLED: &[&str] = &["ftrl", "omd"];

/// A validated `[solver]` choice.
#[derive(Clone, Debug, PartialEq)]
pub enum SolverChoice {
    /// Full-width CFR family.
    Cfr(SolverSpec),
    /// Stochastic FTRL / OMD with the dilated entropy ([`crate::sfo`]).
    Sfo(SfoSpec),
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
    if let Some(m) = Minimizer::named(&s.algorithm) {
        return parse_sfo(m, s).map(SolverChoice::Sfo);
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

/// Builds the solver of a validated choice. `seed` seeds every random stream.
pub fn build(
    choice: &SolverChoice,
    seed: u64,
    game: &dyn Game,
    tree: Arc<PublicTree>,
) -> Result<Box<dyn TreeSolver>, TreeError> {
    Ok(match choice {
        SolverChoice::Cfr(spec) => Box::new(TabularSolver::new(tree, *spec)),
        SolverChoice::Sfo(spec) => {
            let histories = HistoryTree::build(game, &tree)?;
            Box::new(SfoSolver::new(tree, histories, *spec, seed))
        }
    })
}

/// `ftrl` / `omd`: keys `estimator`, `samples`, `step_size`, `weights`, `weight_scale` (see
/// [`SfoOptions`]) and the common `updates` (`simultaneous` is the paper's self-play).
fn parse_sfo(m: Minimizer, s: &SolverConfig) -> Result<SfoSpec, ConfigError> {
    let bad = |key: &str, reason: String| ConfigError::Value {
        key: format!("solver.{key}"),
        reason: format!("{reason} (algorithm `{}`)", s.algorithm),
    };
    for (key, set) in [
        ("alpha", s.alpha.is_some()),
        ("beta", s.beta.is_some()),
        ("gamma", s.gamma.is_some()),
    ] {
        if set {
            return Err(bad(key, "only applies to the CFR family".into()));
        }
    }
    if let Some(a) = &s.averaging
        && a != "uniform"
    {
        return Err(bad(
            "averaging",
            format!("`{a}`; FTRL/OMD average their iterates uniformly (`uniform`)"),
        ));
    }
    let simultaneous = match s.updates.as_str() {
        "simultaneous" => true,
        "alternating" => false,
        other => {
            return Err(bad(
                "updates",
                format!("`{other}`; expected `alternating` or `simultaneous`"),
            ));
        }
    };
    let options: SfoOptions = parse_options(s)?;
    SfoSpec::new(m, &options, simultaneous).map_err(|(key, reason)| bad(key, reason))
}

#[cfg(test)]
mod sfo_tests {
    use super::super::config::Config;
    use super::*;

    fn settle(extra: &str) -> Result<SolverChoice, String> {
        let text = format!(
            "game = \"kuhn_poker\"\n[solver]\nalgorithm = \"ftrl\"\niterations = 3\n{extra}"
        );
        let c = Config::from_table(text.parse().unwrap(), "x.toml").map_err(|e| e.to_string())?;
        c.tabular().map(|s| s.choice).map_err(|e| e.to_string())
    }

    #[test]
    fn ftrl_and_omd_keys_are_parsed_and_bad_ones_named() {
        let SolverChoice::Sfo(spec) = settle(
            "updates = \"simultaneous\"\nestimator = \"balanced-outcome\"\nsamples = 7\nstep_size = 2.5\nweights = \"uniform\"\n",
        )
        .unwrap() else {
            panic!("not an FTRL/OMD choice")
        };
        assert_eq!(spec.samples, 7);
        assert_eq!(spec.step_size, 2.5);
        assert!(spec.simultaneous);
        for (extra, key) in [
            ("stepsize = 1.0\n", "solver.stepsize"),
            ("samples = 0\n", "solver.samples"),
            ("step_size = -2.0\n", "solver.step_size"),
            ("estimator = \"outcome\"\n", "solver"),
            ("alpha = 1.0\n", "solver.alpha"),
            ("averaging = \"linear\"\n", "solver.averaging"),
            ("updates = \"sometimes\"\n", "solver.updates"),
        ] {
            let e = settle(extra).unwrap_err();
            assert!(e.contains(key), "{extra}: {e}");
        }
        // A run of the built solver works end to end.
        let choice = settle("estimator = \"external\"\n").unwrap();
        let game = crate::game::load_game("kuhn_poker").unwrap();
        let tree = Arc::new(PublicTree::build(game.as_ref()).unwrap());
        let mut s = build(&choice, 1, game.as_ref(), tree).unwrap();
        s.iterate();
        assert_eq!(s.iteration(), 1);
        assert!(s.nodes_touched() > 0);
    }
}
