//! Search over public belief states, as in Student of Games (Schmid et al. 2023): growing-tree
//! CFR ([`gtcfr::GtCfr`]) on a public subtree rooted at a public belief state ([`Pbs`]), with
//! counterfactual values at the frontier supplied by a [`LeafValues`] evaluator (an exact
//! subgame oracle here, a value network later) and the CFR-D re-solving gadget at the root
//! ([`engine::Gadget`]); continual re-solving along a game ([`resolve::Resolver`]) and the
//! whole-game policy it defines ([`search_policy::SearchPolicy`]), evaluated exactly with the
//! oracle at the frontier.
//!
//! Everything here is plain `f64` code over the burn-free layout of [`crate::tree::tensor`]:
//! search never touches burn; networks enter through [`LeafValues`] only.
//!
//! # Conventions
//! * A *range* is a player's own reach probability of each private state (index
//!   [`crate::game::State::private_state`]), chance excluded; chance probabilities come from
//!   the layout (`chance_reach`, from the game's root).
//! * A *counterfactual value* (CFV) of player `i`'s private state `x` at a public node is
//!   `v_i(x) = Σ_y r_{-i}(y) · P_chance(x, y) · u_i(x, y)`, with `u_i` the expected payoff below
//!   the node: the quantity CFR's regrets are made of (it carries the opponent's reach and
//!   chance, not the player's own reach).
//! * A player's root value is `Σ_x r_i(x) v_i(x)`.

pub mod endgame;
pub mod engine;
pub mod factored;
pub mod features;
pub mod gtcfr;
pub mod hand_sweep;
pub mod holdem;
pub mod oracle;
pub mod resolve;
pub mod runout;
pub mod search_policy;
pub mod solve;

#[cfg(test)]
mod tests;

pub use engine::{AnyEngine, EngineBuilder, Gadget, NoLeaves, RegretEngine, ScalarEngine};
pub use features::{EncodedPbs, PbsEncoder};
pub use gtcfr::{
    Final, GtCfr, GtCfrConfig, LayoutCache, LockstepStats, PhaseTimes, run_lockstep, run_together,
};
pub use oracle::SubgameOracle;
pub use resolve::{Begun, OpponentValues, PendingSearch, Resolved, Resolver, ResolverConfig};
pub use search_policy::{
    SearchEval, SearchNashConv, SearchPolicy, SearchPolicyStats, search_nash_conv,
};
pub use solve::{SearchLabels, solve_pbs, solve_pbs_with_frontier};

/// A public belief state: a public node of the compiled [`crate::tree::PublicTree`] and both
/// players' ranges over their private states there (index = private state; entries past a
/// vector's end count as 0).
#[derive(Clone, Debug, PartialEq)]
pub struct Pbs {
    /// Public-tree node id.
    pub node: u32,
    /// Per player, reach of each private state.
    pub ranges: [Vec<f64>; 2],
}

/// Supplies counterfactual values of both players at frontier public belief states.
///
/// For each query the answer is `[v_0, v_1]`, each with one entry per private state of the
/// query's range vector (same length), in the CFV convention of the module docs.
pub trait LeafValues {
    /// Values of every query, in order.
    fn evaluate(&mut self, queries: &[Pbs]) -> Result<Vec<[Vec<f64>; 2]>, SearchError>;

    /// A prior policy of `player`, the actor at the decision node of `q`: per private state
    /// (index as in the ranges), one probability per legal action in the order of the node's
    /// infoset rows (empty where the player has no infoset). `None` (the default): no prior,
    /// searches use a uniform one.
    fn policy_prior(
        &mut self,
        _q: &Pbs,
        _player: crate::game::Player,
    ) -> Result<Option<Vec<Vec<f64>>>, SearchError> {
        Ok(None)
    }
}

/// Errors raised by search for bad input.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// A setting outside its domain; names the key.
    #[error("search setting `{key}` = {value}: {reason}")]
    BadSetting {
        key: &'static str,
        value: String,
        reason: String,
    },
    /// A root range that cannot start a search.
    #[error("root range of player {player}: {reason}")]
    BadRange { player: usize, reason: String },
    /// A frontier node was reached but no leaf evaluator exists, or it answered badly.
    #[error("leaf evaluation: {0}")]
    Leaf(String),
    /// A game search does not support (yet), with the reason.
    #[error("game `{game}`: {reason}")]
    Unsupported { game: String, reason: String },
    /// The public tree refused the layout (e.g. hidden actions).
    #[error(transparent)]
    Tree(#[from] crate::tree::TreeError),
}

/// Refuses games search cannot lay out yet, with the reason: `universal_poker` (Hold'em). Its
/// public tree compiles (nodes keyed by [`crate::game::State::public_tree_key`], which prints
/// the board per round, with chance runs optionally merged), but the dense search layout
/// needs one history per pair of private states and `P²` joint slots per node: hole cards
/// dealt in either order and `P = 1326` two-card hands break both, so Hold'em is searched with
/// the factored poker layout of [`holdem`] instead. Other games the layout cannot handle (e.g.
/// II-Goofspiel's hidden simultaneous moves) are refused where the tree or the layout is
/// built, with their own reasons.
pub fn check_supported(game: &dyn crate::game::Game) -> Result<(), SearchError> {
    if game.short_name() == "universal_poker" {
        return Err(SearchError::Unsupported {
            game: game.load_string(),
            reason: "universal_poker is not supported by search yet: its public tree \
                     compiles, but the dense search layout needs one history per pair of \
                     private states and P² joint slots per node, which hole cards dealt in \
                     either order and P = 1326 two-card hands break; Hold'em is searched with \
                     the factored poker layout (search::holdem) instead"
                .into(),
        });
    }
    Ok(())
}

/// Checks a root range: finite, non-negative, some mass on a valid private state.
pub(crate) fn check_range(player: usize, r: &[f64], valid: &[bool]) -> Result<(), SearchError> {
    if let Some(x) = r.iter().find(|x| !x.is_finite() || **x < 0.0) {
        return Err(SearchError::BadRange {
            player,
            reason: format!("entries must be finite and non-negative, found {x}"),
        });
    }
    let mass: f64 = r
        .iter()
        .zip(valid)
        .filter(|(_, v)| **v)
        .map(|(x, _)| *x)
        .sum();
    if mass <= 0.0 {
        return Err(SearchError::BadRange {
            player,
            reason: "no mass on any possible private state".into(),
        });
    }
    Ok(())
}
