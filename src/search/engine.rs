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

use super::{LeafValues, Pbs, SearchError, check_range};
use crate::cfr::{ROUNDING_NOISE, RegretRule, SolverSpec, Updates, regret_match_infoset};
use crate::game::Player;
use crate::tree::tensor::{TensorKind, TensorTree};
use crate::tree::{NONE, PublicTree, TreePolicy, expected_value};
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

/// The CFR-D re-solving gadget at the root (see the module docs).
#[derive(Clone, Debug)]
pub struct Gadget {
    player: Player,
    cfvs: Vec<f64>,
    prev: Vec<f64>,
    alpha: f64,
    /// Per root slot: regrets of (follow, terminate).
    regrets: Vec<[f64; 2]>,
}

impl Gadget {
    /// A gadget for opponent `player` with terminate values `cfvs` and previous range `prev`
    /// (both one entry per root slot), mixing weight `alpha` in `[0, 1]`.
    pub fn new(
        player: Player,
        cfvs: Vec<f64>,
        prev: Vec<f64>,
        alpha: f64,
    ) -> Result<Gadget, SearchError> {
        if !(0.0..=1.0).contains(&alpha) {
            return Err(SearchError::BadSetting {
                key: "alpha",
                value: alpha.to_string(),
                reason: "must lie in [0, 1]".into(),
            });
        }
        if player > 1 || cfvs.len() != prev.len() || cfvs.iter().any(|v| !v.is_finite()) {
            return Err(SearchError::BadRange {
                player,
                reason: format!(
                    "gadget needs finite values and a previous range of equal length ({} vs {})",
                    cfvs.len(),
                    prev.len()
                ),
            });
        }
        let n = cfvs.len();
        Ok(Gadget {
            player,
            cfvs,
            prev,
            alpha,
            regrets: vec![[0.0; 2]; n],
        })
    }

    /// The terminate values, one per root slot.
    pub fn terminate_values(&self) -> &[f64] {
        &self.cfvs
    }

    /// The opponent whose range the gadget sets.
    pub fn player(&self) -> Player {
        self.player
    }

    /// Probability of *follow* per root slot (½ where neither option has positive regret).
    pub fn follow(&self) -> Vec<f64> {
        self.regrets
            .iter()
            .map(|r| {
                let (f, t) = (r[0].max(0.0), r[1].max(0.0));
                if f + t > 0.0 { f / (f + t) } else { 0.5 }
            })
            .collect()
    }

    /// The opponent's root range: `α · follow + (1 − α) · r_prev`.
    pub fn range(&self) -> Vec<f64> {
        self.follow()
            .iter()
            .zip(&self.prev)
            .map(|(f, r)| self.alpha * f + (1.0 - self.alpha) * r)
            .collect()
    }

    /// Regret-matching+ step from the opponent's root counterfactual values of following.
    pub fn update(&mut self, follow_values: &[f64]) {
        let pf = self.follow();
        for (k, r) in self.regrets.iter_mut().enumerate() {
            let (vf, vt) = (follow_values[k], self.cfvs[k]);
            let u = pf[k] * vf + (1.0 - pf[k]) * vt;
            r[0] = (r[0] + vf - u).max(0.0);
            r[1] = (r[1] + vt - u).max(0.0);
        }
    }
}

/// The scalar `f64` regret engine (see the module docs).
#[derive(Clone, Debug)]
pub struct ScalarEngine {
    layout: Arc<TensorTree>,
    spec: SolverSpec,
    /// Number of root nodes (`layout.levels[0]`).
    roots: usize,
    root_range: [Vec<f64>; 2],
    expanded: Vec<bool>,
    /// The in-tree nodes in ascending order (the layout is level-ordered, so parents come
    /// before children): sweeps visit these only, so an update costs what the grown tree
    /// holds, not the whole union layout. Slots of nodes outside the tree are never written
    /// and stay 0.
    active: Vec<u32>,
    /// Per player, the expanded decisions (indices into `layout.decisions[p]`): the rows
    /// updates touch (the others keep zero regrets and uniform strategies).
    active_decisions: [Vec<u32>; 2],
    /// Buffers of the previous values and action values, reused by the next sweep (only their
    /// in-tree entries are ever written, so only those need clearing).
    spare_v: Vec<f64>,
    spare_q: [Vec<f64>; 2],
    iteration: u64,
    regrets: [Vec<f64>; 2],
    cumulative: [Vec<f64>; 2],
    current: [Vec<f64>; 2],
    reach: [Vec<f64>; 2],
    values: [Vec<f64>; 2],
    q: [Vec<f64>; 2],
    cfv_sum: [Vec<f64>; 2],
    cfv_weight: [f64; 2],
    /// Per player: weighted sums of counterfactual values at every slot while its node was in
    /// the tree (`[node x P]`), and the weight each node collected.
    slot_cfv_sum: [Vec<f64>; 2],
    slot_cfv_weight: [Vec<f64>; 2],
    gadget: Option<Gadget>,
    leaf_queries: u64,
    /// `reach` holds the reaches of the current strategies, computed by
    /// [`Self::pending_queries`] and not invalidated since: the next single update uses them.
    reaches_fresh: bool,
}

impl ScalarEngine {
    /// An engine at iteration 0 (uniform strategies) on `layout` with root ranges
    /// `root_range[i]` (`R x P` entries, `R` the layout's roots); only the roots are expanded.
    pub fn new(
        layout: Arc<TensorTree>,
        spec: SolverSpec,
        root_range: [Vec<f64>; 2],
    ) -> Result<ScalarEngine, SearchError> {
        let (p, a, n) = (layout.p, layout.a, layout.len());
        let roots = layout.levels[0].1 as usize;
        for (i, r) in root_range.iter().enumerate() {
            if r.len() != roots * p {
                return Err(SearchError::BadRange {
                    player: i,
                    reason: format!("{} entries; the layout needs {}", r.len(), roots * p),
                });
            }
            check_range(i, r, &layout.valid[i][..roots * p])?;
        }
        let blocks = |i: usize| layout.decisions[i].len() * p * a;
        let mut current = [vec![0.0; blocks(0)], vec![0.0; blocks(1)]];
        for (i, cur) in current.iter_mut().enumerate() {
            for d in 0..layout.decisions[i].len() {
                let na = layout.num_actions[i][d] as usize;
                for x in 0..p {
                    if layout.infoset[i][d * p + x] != NONE {
                        let row = (d * p + x) * a;
                        cur[row..row + na].fill(1.0 / na as f64);
                    }
                }
            }
        }
        let mut expanded = vec![false; n];
        for (e, k) in expanded.iter_mut().zip(&layout.kind).take(roots) {
            *e = matches!(k, TensorKind::Chance | TensorKind::Decision(_));
        }
        let mut engine = ScalarEngine {
            spec,
            roots,
            root_range,
            expanded,
            active: Vec::new(),
            active_decisions: [Vec::new(), Vec::new()],
            spare_v: Vec::new(),
            spare_q: [Vec::new(), Vec::new()],
            iteration: 0,
            regrets: [vec![0.0; blocks(0)], vec![0.0; blocks(1)]],
            cumulative: [vec![0.0; blocks(0)], vec![0.0; blocks(1)]],
            current,
            reach: [vec![0.0; n * p], vec![0.0; n * p]],
            values: [vec![0.0; n * p], vec![0.0; n * p]],
            q: [vec![0.0; blocks(0)], vec![0.0; blocks(1)]],
            cfv_sum: [vec![0.0; roots * p], vec![0.0; roots * p]],
            cfv_weight: [0.0; 2],
            slot_cfv_sum: [vec![0.0; n * p], vec![0.0; n * p]],
            slot_cfv_weight: [vec![0.0; n], vec![0.0; n]],
            gadget: None,
            leaf_queries: 0,
            reaches_fresh: false,
            layout,
        };
        engine.rebuild_active();
        Ok(engine)
    }

    /// Recomputes the in-tree node list and the expanded decisions from `expanded`.
    fn rebuild_active(&mut self) {
        let l = &*self.layout;
        self.active = (0..l.len())
            .filter(|&n| n < self.roots || self.expanded[l.parent[n] as usize])
            .map(|n| n as u32)
            .collect();
        self.active_decisions = std::array::from_fn(|p| {
            l.decisions[p]
                .iter()
                .enumerate()
                .filter(|&(_, &n)| self.expanded[n as usize])
                .map(|(d, _)| d as u32)
                .collect()
        });
    }

    /// Installs the re-solving gadget: from now on the gadget sets its player's root range.
    pub fn set_gadget(&mut self, gadget: Gadget) -> Result<(), SearchError> {
        if gadget.cfvs.len() != self.roots * self.layout.p {
            return Err(SearchError::BadRange {
                player: gadget.player,
                reason: format!(
                    "gadget has {} values; the root has {} slots",
                    gadget.cfvs.len(),
                    self.roots * self.layout.p
                ),
            });
        }
        self.root_range[gadget.player] = gadget.range();
        self.gadget = Some(gadget);
        self.reaches_fresh = false;
        Ok(())
    }

    /// The gadget, if any.
    pub fn gadget(&self) -> Option<&Gadget> {
        self.gadget.as_ref()
    }

    /// Replaces player `p`'s root range (e.g. a caller-driven gadget).
    pub fn set_root_range(&mut self, p: Player, range: Vec<f64>) -> Result<(), SearchError> {
        if range.len() != self.roots * self.layout.p {
            return Err(SearchError::BadRange {
                player: p,
                reason: format!(
                    "{} entries; the root has {}",
                    range.len(),
                    self.root_range[p].len()
                ),
            });
        }
        self.root_range[p] = range;
        self.reaches_fresh = false;
        Ok(())
    }

    /// Expands every node of the layout (a full-depth solve).
    pub fn expand_all(&mut self) {
        self.reaches_fresh = false;
        for (e, k) in self.expanded.iter_mut().zip(&self.layout.kind) {
            *e = matches!(k, TensorKind::Chance | TensorKind::Decision(_));
        }
        self.rebuild_active();
    }

    /// Frontier nodes (layout ids): in the tree, not expanded, not terminal.
    pub fn frontier(&self) -> Vec<usize> {
        self.active
            .iter()
            .map(|&n| n as usize)
            .filter(|&n| !self.expanded[n] && self.layout.kind[n] != TensorKind::Terminal)
            .collect()
    }

    /// Leaf queries answered so far (one per frontier node per evaluation).
    pub fn leaf_queries(&self) -> u64 {
        self.leaf_queries
    }

    /// Player `p`'s single update (half an alternating iteration): sweep with the current
    /// strategies, update `p`'s regrets and average, regret-match `p`. Advances the
    /// iteration counter when `p == 0`. Drives the gadget after its player's update.
    pub fn update_player(
        &mut self,
        p: Player,
        leaves: &mut dyn LeafValues,
    ) -> Result<(), SearchError> {
        if p == 0 {
            self.iteration += 1;
        }
        let t = self.iteration.max(1) as f64;
        let weight = self.spec.averaging.weight(t);
        let strat = std::mem::take(&mut self.current);
        let r = if std::mem::take(&mut self.reaches_fresh) {
            Ok(())
        } else {
            self.compute_reaches(&strat)
        };
        let out = r.and_then(|_| self.compute_values(p, &strat, leaves, false));
        self.current = strat;
        let (v, q) = out?;
        self.accumulate(p, &q, weight);
        self.finish(p, t);
        self.record(p, v, q, weight);
        Ok(())
    }

    /// The frontier queries the next single update ([`Self::update_player`]) will ask its
    /// evaluator, in order: the reaches under the current strategies at every frontier node.
    /// Lock-step batches ([`super::gtcfr::run_lockstep`]) gather them from many searches,
    /// answer them with one evaluation and hand each search its answers.
    pub fn pending_queries(&mut self) -> Vec<Pbs> {
        let strat = std::mem::take(&mut self.current);
        self.compute_reaches(&strat)
            .expect("computing reaches cannot fail");
        self.current = strat;
        self.reaches_fresh = true;
        let pp = self.layout.p;
        self.frontier()
            .into_iter()
            .map(|n| Pbs {
                node: self.layout.public_node[n],
                ranges: std::array::from_fn(|i| self.reach[i][n * pp..(n + 1) * pp].to_vec()),
            })
            .collect()
    }

    /// Whether the engine alternates the players' updates (the lock-step batch needs it).
    pub fn alternating(&self) -> bool {
        matches!(self.spec.updates, Updates::Alternating)
    }

    /// Both players' counterfactual values at every slot (`[node x P]`) when both play
    /// `blocks` (e.g. [`RegretEngine::average_blocks`]); no state changes but the leaf counter.
    pub fn values_under(
        &mut self,
        blocks: &[Vec<f64>; 2],
        leaves: &mut dyn LeafValues,
    ) -> Result<[Vec<f64>; 2], SearchError> {
        let saved = self.reach.clone();
        let out = (|| {
            self.compute_reaches(blocks)?;
            let (v0, _) = self.compute_values(0, blocks, leaves, false)?;
            let (v1, _) = self.compute_values(1, blocks, leaves, false)?;
            Ok([v0, v1])
        })();
        self.reach = saved;
        out
    }

    /// Both players' reaches at every slot (`[node x P]`, the root ranges times each player's
    /// own action probabilities in `blocks`, in-tree nodes only); no state changes.
    pub fn reaches_under(&mut self, blocks: &[Vec<f64>; 2]) -> [Vec<f64>; 2] {
        let saved = self.reach.clone();
        self.compute_reaches(blocks)
            .expect("computing reaches cannot fail");
        std::mem::replace(&mut self.reach, saved)
    }

    /// Player `p`'s best-response counterfactual values at every slot (`[node x P]`) against
    /// the opponent's strategy in `blocks` (and the root ranges); `p`'s own entries of
    /// `blocks` are ignored. At frontier nodes the evaluator's values stand in.
    pub fn best_response_values(
        &mut self,
        p: Player,
        blocks: &[Vec<f64>; 2],
        leaves: &mut dyn LeafValues,
    ) -> Result<Vec<f64>, SearchError> {
        let saved = self.reach.clone();
        let out = (|| {
            self.compute_reaches(blocks)?;
            Ok(self.compute_values(p, blocks, leaves, true)?.0)
        })();
        self.reach = saved;
        out
    }

    /// Player 0's root value `Σ_x r_0(x) v_0(x)` from given slot values.
    pub fn root_value(&self, values0: &[f64]) -> f64 {
        self.root_range[0]
            .iter()
            .zip(values0)
            .map(|(r, v)| r * v)
            .sum()
    }

    /// Writes `blocks` of player `i` into a whole-game policy (entries outside the layout keep
    /// `base`'s values).
    pub fn to_policy(
        &self,
        tree: &PublicTree,
        blocks: &[Vec<f64>; 2],
        base: &TreePolicy,
    ) -> TreePolicy {
        std::array::from_fn(|i| {
            let mut out = base[i].clone();
            self.layout.scatter_blocks(tree, i, &blocks[i], &mut out);
            out
        })
    }

    /// Player `p`'s counterfactual values at every slot (`[node x P]`) averaged over the
    /// iterations its node spent in the tree, with the solver's averaging weights (0 for nodes
    /// never in the tree): DeepStack's carried opponent values.
    pub fn average_cfvs(&self, p: Player) -> Vec<f64> {
        let pp = self.layout.p;
        self.slot_cfv_sum[p]
            .iter()
            .enumerate()
            .map(|(s, x)| {
                let w = self.slot_cfv_weight[p][s / pp];
                if w > 0.0 { x / w } else { 0.0 }
            })
            .collect()
    }

    /// Player `p`'s cumulative regrets as blocks.
    pub fn regret_blocks(&self, p: Player) -> &[f64] {
        &self.regrets[p]
    }

    fn compute_reaches(&mut self, strat: &[Vec<f64>; 2]) -> Result<(), SearchError> {
        self.reaches_fresh = false;
        let l = &*self.layout;
        let (pp, a) = (l.p, l.a);
        for (i, reach) in self.reach.iter_mut().enumerate() {
            let rs = self.roots * pp;
            for ((r, &v), &x) in reach[..rs]
                .iter_mut()
                .zip(&l.valid[i][..rs])
                .zip(&self.root_range[i][..rs])
            {
                if v {
                    *r = x;
                }
            }
            for &n in &self.active[self.roots..] {
                let n = n as usize;
                let par = l.parent[n] as usize;
                for x in 0..pp {
                    let s = n * pp + x;
                    let up = l.up[i][s];
                    if up == NONE {
                        continue;
                    }
                    let f = match l.kind[par] {
                        TensorKind::Decision(actor) if actor == i => {
                            let d = l.decision_index[par] as usize;
                            let xp = up as usize - par * pp;
                            strat[i][(d * pp + xp) * a + l.action_index[n] as usize]
                        }
                        _ => 1.0,
                    };
                    reach[s] = reach[up as usize] * f;
                }
            }
        }
        Ok(())
    }

    /// Player `p`'s values at every slot and action values of its rows under `strat` (the
    /// reaches must be current).
    fn compute_values(
        &mut self,
        p: Player,
        strat: &[Vec<f64>; 2],
        leaves: &mut dyn LeafValues,
        best_response: bool,
    ) -> Result<(Vec<f64>, Vec<f64>), SearchError> {
        let mut v = std::mem::take(&mut self.spare_v);
        let mut q = std::mem::take(&mut self.spare_q[p]);
        let l = &*self.layout;
        let (pp, a, n_nodes) = (l.p, l.a, l.len());
        if v.len() == n_nodes * pp {
            for &n in &self.active {
                let n = n as usize;
                v[n * pp..(n + 1) * pp].fill(0.0);
            }
        } else {
            v = vec![0.0; n_nodes * pp];
        }
        if q.len() == l.decisions[p].len() * pp * a {
            for &d in &self.active_decisions[p] {
                let d = d as usize;
                q[d * pp * a..(d + 1) * pp * a].fill(0.0);
            }
        } else {
            q = vec![0.0; l.decisions[p].len() * pp * a];
        }
        let frontier = self.frontier();
        if !frontier.is_empty() {
            let queries: Vec<Pbs> = frontier
                .iter()
                .map(|&n| Pbs {
                    node: l.public_node[n],
                    ranges: std::array::from_fn(|i| self.reach[i][n * pp..(n + 1) * pp].to_vec()),
                })
                .collect();
            let answers = leaves.evaluate(&queries)?;
            self.leaf_queries += queries.len() as u64;
            if answers.len() != queries.len() {
                return Err(SearchError::Leaf(format!(
                    "{} answers for {} queries",
                    answers.len(),
                    queries.len()
                )));
            }
            for (&n, ans) in frontier.iter().zip(&answers) {
                if ans[p].len() != pp || ans[p].iter().any(|x| !x.is_finite()) {
                    return Err(SearchError::Leaf(format!(
                        "public node {}: values must be {pp} finite numbers",
                        l.public_node[n]
                    )));
                }
                for x in 0..pp {
                    if l.valid[p][n * pp + x] {
                        v[n * pp + x] = ans[p][x];
                    }
                }
            }
        }
        let opp = &self.reach[1 - p];
        for &n in &self.active {
            let n = n as usize;
            if l.kind[n] != TensorKind::Terminal {
                continue;
            }
            for x0 in 0..pp {
                for x1 in 0..pp {
                    let js = (n * pp + x0) * pp + x1;
                    if !l.joint_valid[js] {
                        continue;
                    }
                    let w = l.chance_reach[js] * l.utility[js];
                    if p == 0 {
                        v[n * pp + x0] += w * opp[n * pp + x1];
                    } else {
                        v[n * pp + x1] -= w * opp[n * pp + x0];
                    }
                }
            }
        }
        for &n in self.active.iter().rev() {
            let n = n as usize;
            if !self.expanded[n] {
                continue;
            }
            let c0 = l.first_child[n] as usize;
            let kids = c0..c0 + l.num_children[n] as usize;
            match l.kind[n] {
                TensorKind::Decision(actor) if actor == p => {
                    let d = l.decision_index[n] as usize;
                    for c in kids {
                        let k = l.action_index[c] as usize;
                        for x in 0..pp {
                            let up = l.up[p][c * pp + x];
                            if up != NONE {
                                let xp = up as usize - n * pp;
                                q[(d * pp + xp) * a + k] += v[c * pp + x];
                            }
                        }
                    }
                    let na = l.num_actions[p][d] as usize;
                    for x in 0..pp {
                        if l.infoset[p][d * pp + x] == NONE {
                            continue;
                        }
                        let row = (d * pp + x) * a;
                        let qr = &q[row..row + na];
                        v[n * pp + x] = if best_response {
                            qr.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                        } else {
                            expected_value(&strat[p][row..row + na], qr)
                        };
                    }
                }
                _ => {
                    for c in kids {
                        for x in 0..pp {
                            let up = l.up[p][c * pp + x];
                            if up != NONE {
                                v[up as usize] += v[c * pp + x];
                            }
                        }
                    }
                }
            }
        }
        Ok((v, q))
    }

    /// Regret and average-strategy accumulation of player `p` (expanded decisions only).
    fn accumulate(&mut self, p: Player, q: &[f64], weight: f64) {
        let l = &*self.layout;
        let (pp, a) = (l.p, l.a);
        for &d in &self.active_decisions[p] {
            let d = d as usize;
            let n = l.decisions[p][d] as usize;
            let na = l.num_actions[p][d] as usize;
            for x in 0..pp {
                if l.infoset[p][d * pp + x] == NONE {
                    continue;
                }
                let row = (d * pp + x) * a;
                let sigma = &self.current[p][row..row + na];
                let qr = &q[row..row + na];
                let v = expected_value(sigma, qr);
                let noise = ROUNDING_NOISE * qr.iter().fold(v.abs(), |m, y| m.max(y.abs()));
                let wr = weight * self.reach[p][n * pp + x];
                for k in 0..na {
                    let dk = qr[k] - v;
                    if dk.abs() > noise {
                        self.regrets[p][row + k] += dk;
                    }
                    self.cumulative[p][row + k] += wr * sigma[k];
                }
            }
        }
    }

    /// Regret rule and regret matching of player `p`.
    fn finish(&mut self, p: Player, t: f64) {
        // Rows of decisions outside the tree hold zero regrets (no rule changes them) and
        // uniform strategies (what regret matching of zeros gives): only the expanded
        // decisions' rows need the work.
        let l = &*self.layout;
        let (pp, a) = (l.p, l.a);
        let rule = self.spec.regrets;
        let (dp, dn) = match rule {
            RegretRule::Discounted { alpha, beta } => {
                let (ta, tb) = (t.powf(alpha), t.powf(beta));
                (ta / (ta + 1.0), tb / (tb + 1.0))
            }
            _ => (1.0, 1.0),
        };
        for &d in &self.active_decisions[p] {
            let d = d as usize;
            let na = l.num_actions[p][d] as usize;
            for x in 0..pp {
                if l.infoset[p][d * pp + x] == NONE {
                    continue;
                }
                let row = (d * pp + x) * a;
                let r = &mut self.regrets[p][row..row + na];
                match rule {
                    RegretRule::Plain => {}
                    RegretRule::Plus => r.iter_mut().for_each(|r| *r = r.max(0.0)),
                    RegretRule::Discounted { .. } => r
                        .iter_mut()
                        .for_each(|r| *r *= if *r >= 0.0 { dp } else { dn }),
                }
                regret_match_infoset(r, &mut self.current[p][row..row + na]);
            }
        }
    }

    /// Keeps `p`'s latest values, averages its root CFVs and drives the gadget.
    fn record(&mut self, p: Player, v: Vec<f64>, q: Vec<f64>, weight: f64) {
        let rs = self.roots * self.layout.p;
        for (s, x) in self.cfv_sum[p].iter_mut().zip(&v[..rs]) {
            *s += weight * x;
        }
        self.cfv_weight[p] += weight;
        let pp = self.layout.p;
        for &n in &self.active {
            let n = n as usize;
            self.slot_cfv_weight[p][n] += weight;
            let sl = n * pp..(n + 1) * pp;
            for (s, x) in self.slot_cfv_sum[p][sl.clone()].iter_mut().zip(&v[sl]) {
                *s += weight * x;
            }
        }
        if let Some(g) = self.gadget.as_mut()
            && g.player == p
        {
            g.update(&v[..rs]);
            self.root_range[p] = g.range();
        }
        self.spare_v = std::mem::replace(&mut self.values[p], v);
        self.spare_q[p] = std::mem::replace(&mut self.q[p], q);
    }

    fn blocks_average(&self, i: Player) -> Vec<f64> {
        let l = &*self.layout;
        let (pp, a) = (l.p, l.a);
        let mut out = self.current[i].clone();
        for d in 0..l.decisions[i].len() {
            let na = l.num_actions[i][d] as usize;
            for x in 0..pp {
                if l.infoset[i][d * pp + x] == NONE {
                    continue;
                }
                let row = (d * pp + x) * a;
                let c = &self.cumulative[i][row..row + na];
                let total: f64 = c.iter().sum();
                for k in 0..na {
                    out[row + k] = if total > 0.0 {
                        c[k] / total
                    } else {
                        1.0 / na as f64
                    };
                }
            }
        }
        out
    }
}

impl RegretEngine for ScalarEngine {
    fn layout(&self) -> &Arc<TensorTree> {
        &self.layout
    }

    fn is_expanded(&self, n: usize) -> bool {
        self.expanded[n]
    }

    fn in_tree(&self, n: usize) -> bool {
        n < self.roots || self.expanded[self.layout.parent[n] as usize]
    }

    fn expand(&mut self, n: usize) -> bool {
        if n >= self.layout.len()
            || self.expanded[n]
            || !self.in_tree(n)
            || !matches!(
                self.layout.kind[n],
                TensorKind::Chance | TensorKind::Decision(_)
            )
        {
            return false;
        }
        self.expanded[n] = true;
        self.reaches_fresh = false;
        // The children join the tree: one contiguous id range, kept in ascending order.
        let l = &*self.layout;
        let c0 = l.first_child[n];
        let kids = c0..c0 + l.num_children[n];
        let at = self.active.partition_point(|&x| x < c0);
        self.active.splice(at..at, kids);
        if let TensorKind::Decision(actor) = l.kind[n] {
            self.active_decisions[actor].push(l.decision_index[n]);
        }
        true
    }

    fn iterate(&mut self, leaves: &mut dyn LeafValues) -> Result<(), SearchError> {
        match self.spec.updates {
            Updates::Alternating => {
                self.update_player(0, leaves)?;
                self.update_player(1, leaves)
            }
            Updates::Simultaneous => {
                self.iteration += 1;
                let t = self.iteration as f64;
                let weight = self.spec.averaging.weight(t);
                let strat = std::mem::take(&mut self.current);
                let out = (|| {
                    self.compute_reaches(&strat)?;
                    let a = self.compute_values(0, &strat, leaves, false)?;
                    let b = self.compute_values(1, &strat, leaves, false)?;
                    Ok::<_, SearchError>((a, b))
                })();
                self.current = strat;
                let ((v0, q0), (v1, q1)) = out?;
                self.accumulate(0, &q0, weight);
                self.accumulate(1, &q1, weight);
                self.finish(0, t);
                self.finish(1, t);
                self.record(0, v0, q0, weight);
                self.record(1, v1, q1, weight);
                Ok(())
            }
        }
    }

    fn iteration(&self) -> u64 {
        self.iteration
    }

    fn current_row(&self, p: Player, d: usize, x: usize) -> &[f64] {
        let l = &*self.layout;
        let row = (d * l.p + x) * l.a;
        &self.current[p][row..row + l.num_actions[p][d] as usize]
    }

    fn action_values(&self, p: Player, d: usize, x: usize) -> &[f64] {
        let l = &*self.layout;
        let row = (d * l.p + x) * l.a;
        &self.q[p][row..row + l.num_actions[p][d] as usize]
    }

    fn reach(&self, p: Player) -> &[f64] {
        &self.reach[p]
    }

    fn root_range(&self, p: Player) -> &[f64] {
        &self.root_range[p]
    }

    fn root_cfvs(&self, p: Player) -> &[f64] {
        &self.values[p][..self.roots * self.layout.p]
    }

    fn average_root_cfvs(&self, p: Player) -> Vec<f64> {
        let w = self.cfv_weight[p];
        self.cfv_sum[p]
            .iter()
            .map(|s| if w > 0.0 { s / w } else { 0.0 })
            .collect()
    }

    fn average_blocks(&self) -> [Vec<f64>; 2] {
        [self.blocks_average(0), self.blocks_average(1)]
    }

    fn current_blocks(&self) -> [Vec<f64>; 2] {
        self.current.clone()
    }

    fn set_gadget(&mut self, gadget: Gadget) -> Result<(), SearchError> {
        ScalarEngine::set_gadget(self, gadget)
    }

    fn expand_all(&mut self) {
        ScalarEngine::expand_all(self)
    }

    fn frontier(&self) -> Vec<usize> {
        ScalarEngine::frontier(self)
    }

    fn alternating(&self) -> bool {
        ScalarEngine::alternating(self)
    }

    fn update_player(&mut self, p: Player, leaves: &mut dyn LeafValues) -> Result<(), SearchError> {
        ScalarEngine::update_player(self, p, leaves)
    }

    fn pending_queries(&mut self) -> Vec<Pbs> {
        ScalarEngine::pending_queries(self)
    }

    fn average_cfvs(&self, p: Player) -> Vec<f64> {
        ScalarEngine::average_cfvs(self, p)
    }

    fn reaches_under(&mut self, blocks: &[Vec<f64>; 2]) -> [Vec<f64>; 2] {
        ScalarEngine::reaches_under(self, blocks)
    }

    fn values_under(
        &mut self,
        blocks: &[Vec<f64>; 2],
        leaves: &mut dyn LeafValues,
    ) -> Result<[Vec<f64>; 2], SearchError> {
        ScalarEngine::values_under(self, blocks, leaves)
    }

    fn best_response_values(
        &mut self,
        p: Player,
        blocks: &[Vec<f64>; 2],
        leaves: &mut dyn LeafValues,
    ) -> Result<Vec<f64>, SearchError> {
        ScalarEngine::best_response_values(self, p, blocks, leaves)
    }
}
