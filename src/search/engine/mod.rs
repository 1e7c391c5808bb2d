//! The regret engine of search: CFR-family updates on a public subtree whose expanded part
//! grows (GT-CFR), with frontier values from a [`LeafValues`] evaluator and an optional CFR-D
//! re-solving gadget at the root.
//!
//! The engine works on a *union layout*: a [`TensorTree`] of the whole subtree below the search
//! root, plus a mask of expanded nodes. A node is *in the tree* if it is a root or its parent is
//! expanded; an in-tree node that is neither expanded nor terminal is a *frontier* node whose
//! counterfactual values the evaluator supplies for the current ranges. Expanding a node keeps
//! every regret and average accumulated so far (they are indexed by layout infoset rows, which
//! do not move), so the tree can grow between iterations.
//!
//! Per player the strategy data are `[decision x P x A]` rows, exactly the blocks of
//! [`TensorTree::scatter_blocks`]; ranges and counterfactual values are `[node x P]` slots. The
//! arithmetic and update order are those of [`crate::cfr::TabularSolver`], so with every node
//! expanded one iteration here is one iteration there (to rounding).
//!
//! # Gadget
//! Re-solving a subgame from (the re-solver's range, the opponent's counterfactual values `w`)
//! uses the CFR-D gadget (Burch, Johanson & Bowling 2014; DeepStack): per opponent private state
//! `y` the opponent chooses *follow* (enter the subgame) or *terminate* (take `w(y)`), with
//! regret matching+ over the two. The opponent's root range is then
//! `α · follow(y) + (1 − α) · r_prev(y)` (Student of Games uses α = 0.5; α = 1 is the plain
//! gadget).

use super::{LeafValues, Pbs, SearchError};
use crate::cfr::SolverSpec;
use crate::game::Player;
use crate::tree::tensor::TensorTree;
use std::sync::Arc;

/// What GT-CFR needs from a regret engine: the scalar `f64` implementation lives here, the
/// tensor one (burn) in `crate::nn::public::engine`.
pub trait RegretEngine {
    /// The union layout the engine runs on.
    fn layout(&self) -> &Arc<TensorTree>;
    /// Whether layout node `n` is expanded (its children are in the tree).
    fn is_expanded(&self, n: usize) -> bool;
    /// Whether layout node `n` is in the tree (a root, or the child of an expanded node).
    fn in_tree(&self, n: usize) -> bool;
    /// Expands in-tree chance or decision node `n`; `false` (and no change) otherwise.
    fn expand(&mut self, n: usize) -> bool;
    /// One iteration for both players.
    fn iterate(&mut self, leaves: &mut dyn LeafValues) -> Result<(), SearchError>;
    /// Iterations done.
    fn iteration(&self) -> u64;
    /// Current strategy of player `p` at decision `d` (index into `layout.decisions[p]`),
    /// private state `x`: one probability per action.
    fn current_row(&self, p: Player, d: usize, x: usize) -> &[f64];
    /// Action values of that row from `p`'s latest sweep (counterfactual, opponent reach and
    /// chance included).
    fn action_values(&self, p: Player, d: usize, x: usize) -> &[f64];
    /// Player `p`'s reach at every slot from the latest sweep (`[node x P]`).
    fn reach(&self, p: Player) -> &[f64];
    /// Player `p`'s range at the root slots (what the next sweep starts from).
    fn root_range(&self, p: Player) -> &[f64];
    /// Player `p`'s counterfactual values at the root slots from its latest sweep.
    fn root_cfvs(&self, p: Player) -> &[f64];
    /// Player `p`'s root counterfactual values averaged over iterations with the solver's
    /// averaging weights.
    fn average_root_cfvs(&self, p: Player) -> Vec<f64>;
    /// Average strategy blocks (`[decision x P x A]` per player), uniform where nothing was
    /// accumulated.
    fn average_blocks(&self) -> [Vec<f64>; 2];
    /// Current strategy blocks.
    fn current_blocks(&self) -> [Vec<f64>; 2];
    /// Installs the re-solving gadget: from now on the gadget sets its player's root range.
    fn set_gadget(&mut self, gadget: Gadget) -> Result<(), SearchError>;
    /// Expands every node of the layout (a full-depth solve).
    fn expand_all(&mut self);
    /// Frontier nodes (layout ids): in the tree, not expanded, not terminal.
    fn frontier(&self) -> Vec<usize>;
    /// Whether the engine alternates the players' updates (the lock-step batch needs it).
    fn alternating(&self) -> bool;
    /// Player `p`'s single update (half an alternating iteration); advances the iteration
    /// counter when `p == 0`.
    fn update_player(&mut self, p: Player, leaves: &mut dyn LeafValues) -> Result<(), SearchError>;
    /// The frontier queries the next single update will ask its evaluator, in order.
    fn pending_queries(&mut self) -> Vec<Pbs>;
    /// Player `p`'s counterfactual values at every slot averaged over the iterations its node
    /// spent in the tree (see [`ScalarEngine::average_cfvs`]).
    fn average_cfvs(&self, p: Player) -> Vec<f64>;
    /// Both players' reaches at every slot under `blocks` (see [`ScalarEngine::reaches_under`]).
    fn reaches_under(&mut self, blocks: &[Vec<f64>; 2]) -> [Vec<f64>; 2];
    /// Both players' values at every slot under `blocks` (see [`ScalarEngine::values_under`]).
    fn values_under(
        &mut self,
        blocks: &[Vec<f64>; 2],
        leaves: &mut dyn LeafValues,
    ) -> Result<[Vec<f64>; 2], SearchError>;
    /// Player `p`'s best-response values at every slot against `blocks` (see
    /// [`ScalarEngine::best_response_values`]).
    fn best_response_values(
        &mut self,
        p: Player,
        blocks: &[Vec<f64>; 2],
        leaves: &mut dyn LeafValues,
    ) -> Result<Vec<f64>, SearchError>;
}

/// Builds regret engines of another kind than [`ScalarEngine`] (the tensor engine of
/// `nn::public::engine`), so that search code that creates engines per search (the re-solving
/// chains of Student of Games) can run on it without knowing the backend.
pub trait EngineBuilder: Send + Sync + std::fmt::Debug {
    /// A short name (`tensor`).
    fn name(&self) -> &str;
    /// An engine at iteration 0 on `layout` with root ranges `root_range` (as
    /// [`ScalarEngine::new`]).
    fn build(
        &self,
        layout: Arc<TensorTree>,
        spec: SolverSpec,
        root_range: [Vec<f64>; 2],
    ) -> Result<Box<dyn RegretEngine + Send>, SearchError>;
}

/// The scalar engine, or an engine from an [`EngineBuilder`]: what re-solving chains run on.
// The scalar engine stays inline (its search is boxed once in `Begun::Search` already), so the
// default path keeps its one allocation per search.
#[allow(clippy::large_enum_variant)]
pub enum AnyEngine {
    Scalar(ScalarEngine),
    Boxed(Box<dyn RegretEngine + Send>),
}

impl AnyEngine {
    /// A scalar engine, or one from `builder` when given.
    pub fn build(
        builder: Option<&dyn EngineBuilder>,
        layout: Arc<TensorTree>,
        spec: SolverSpec,
        root_range: [Vec<f64>; 2],
    ) -> Result<AnyEngine, SearchError> {
        Ok(match builder {
            None => AnyEngine::Scalar(ScalarEngine::new(layout, spec, root_range)?),
            Some(b) => AnyEngine::Boxed(b.build(layout, spec, root_range)?),
        })
    }
}

macro_rules! any_engine {
    ($self:ident, $e:ident => $body:expr) => {
        match $self {
            AnyEngine::Scalar($e) => $body,
            AnyEngine::Boxed($e) => $body,
        }
    };
}

impl RegretEngine for AnyEngine {
    fn layout(&self) -> &Arc<TensorTree> {
        any_engine!(self, e => e.layout())
    }
    fn is_expanded(&self, n: usize) -> bool {
        any_engine!(self, e => e.is_expanded(n))
    }
    fn in_tree(&self, n: usize) -> bool {
        any_engine!(self, e => e.in_tree(n))
    }
    fn expand(&mut self, n: usize) -> bool {
        any_engine!(self, e => e.expand(n))
    }
    fn iterate(&mut self, leaves: &mut dyn LeafValues) -> Result<(), SearchError> {
        any_engine!(self, e => e.iterate(leaves))
    }
    fn iteration(&self) -> u64 {
        any_engine!(self, e => e.iteration())
    }
    fn current_row(&self, p: Player, d: usize, x: usize) -> &[f64] {
        any_engine!(self, e => e.current_row(p, d, x))
    }
    fn action_values(&self, p: Player, d: usize, x: usize) -> &[f64] {
        any_engine!(self, e => e.action_values(p, d, x))
    }
    fn reach(&self, p: Player) -> &[f64] {
        any_engine!(self, e => e.reach(p))
    }
    fn root_range(&self, p: Player) -> &[f64] {
        any_engine!(self, e => e.root_range(p))
    }
    fn root_cfvs(&self, p: Player) -> &[f64] {
        any_engine!(self, e => e.root_cfvs(p))
    }
    fn average_root_cfvs(&self, p: Player) -> Vec<f64> {
        any_engine!(self, e => e.average_root_cfvs(p))
    }
    fn average_blocks(&self) -> [Vec<f64>; 2] {
        any_engine!(self, e => e.average_blocks())
    }
    fn current_blocks(&self) -> [Vec<f64>; 2] {
        any_engine!(self, e => e.current_blocks())
    }
    fn set_gadget(&mut self, gadget: Gadget) -> Result<(), SearchError> {
        any_engine!(self, e => e.set_gadget(gadget))
    }
    fn expand_all(&mut self) {
        any_engine!(self, e => e.expand_all())
    }
    fn frontier(&self) -> Vec<usize> {
        any_engine!(self, e => e.frontier())
    }
    fn alternating(&self) -> bool {
        any_engine!(self, e => e.alternating())
    }
    fn update_player(&mut self, p: Player, leaves: &mut dyn LeafValues) -> Result<(), SearchError> {
        any_engine!(self, e => e.update_player(p, leaves))
    }
    fn pending_queries(&mut self) -> Vec<Pbs> {
        any_engine!(self, e => e.pending_queries())
    }
    fn average_cfvs(&self, p: Player) -> Vec<f64> {
        any_engine!(self, e => e.average_cfvs(p))
    }
    fn reaches_under(&mut self, blocks: &[Vec<f64>; 2]) -> [Vec<f64>; 2] {
        any_engine!(self, e => e.reaches_under(blocks))
    }
    fn values_under(
        &mut self,
        blocks: &[Vec<f64>; 2],
        leaves: &mut dyn LeafValues,
    ) -> Result<[Vec<f64>; 2], SearchError> {
        any_engine!(self, e => e.values_under(blocks, leaves))
    }
    fn best_response_values(
        &mut self,
        p: Player,
        blocks: &[Vec<f64>; 2],
        leaves: &mut dyn LeafValues,
    ) -> Result<Vec<f64>, SearchError> {
        any_engine!(self, e => e.best_response_values(p, blocks, leaves))
    }
}

/// An evaluator for trees without a frontier: any query is an error.
pub struct NoLeaves;

impl LeafValues for NoLeaves {
    fn evaluate(&mut self, queries: &[Pbs]) -> Result<Vec<[Vec<f64>; 2]>, SearchError> {
        Err(SearchError::Leaf(format!(
            "{} frontier node(s) but no leaf evaluator",
            queries.len()
        )))
    }
}

mod blocks;
mod gadget;
mod scalar;

pub use blocks::{average_blocks, live_rows, row_span, slot_means, weighted_means};
pub use gadget::Gadget;
pub use scalar::ScalarEngine;
