//! Depth-limited continual re-solving on Hold'em: Student of Games' search step, in the form
//! DeepStack used, on the factored layout ([`PokerLayout`], one range per player over all
//! `C(D, 2)` hands).
//!
//! # One search
//! At a public state `s` the search tree is the rest of the current betting round
//! ([`PokerLayout::from_state_limited`] with leaves at board deals); a [`HoldemLeaves`]
//! source supplies the values of those leaves (a CVPN, or an exact oracle in tests). The
//! searching player enters with its own range; the opponent enters through the CFR-D
//! re-solving gadget ([`Gadget`]): per opponent hand `y`, *follow* into the subgame or
//! *terminate* with the counterfactual value `w(y)` the previous search promised it; its root
//! range is `α · follow(y) + (1 − α) · r_prev(y)` (SoG §4.3, α = 0.5 by default). `N`
//! iterations of a CFR variant ([`FactoredCfr`]; CFR+ by default) follow, and the acting
//! policy is the average policy at the acting node for every own hand.
//!
//! # The chain
//! One [`HoldemResolver`] follows one player through one hand. Each search leaves a summary:
//! the layout, both players' reaches under the average profile, and the opponent's
//! counterfactual values at every node averaged over the iterations (DeepStack's choice; see
//! [`super::resolve`] for why averaged values are carried). At the next decision the resolver
//! finds the current public state in that layout:
//! * inside it (our action and the opponent's since then are edges of the previous tree): the
//!   new search is rooted at the current state with our reach there (our range times our
//!   search policy) and the opponent's reach and averaged values there;
//! * beyond a leaf (a board was dealt): the new search is rooted right after the deal (the
//!   first state of the new round, so opponent actions of the new round before ours lie in
//!   its tree), with both reaches at the leaf; the leaf's value is a sum over every deal, so
//!   the gadget's values for *this* board are asked of the leaf source at the new root
//!   ([`HoldemLeaves::root_values`]; exact for an exact oracle, an estimate for a network).
//!
//! The chain's first search is rooted at the start of the hand (both ranges uniform, no
//! gadget), whichever decision of the first round it is asked at. Values carried across a
//! root change are rescaled by the ratio of the nodes' chance weights
//! ([`crate::tree::poker::PokerNode::weight`]).
//!
//! # Deviations from Student of Games
//! * No GT-CFR growth: the tree is the whole rest of the round, solved full-width (as in
//!   DeepStack); leaves sit at round ends only.
//! * No expansion simulations, no PUCT, no policy prior.
//! * The first search of a round is rooted at the round's first state, not at the current
//!   state (SoG's "restart node" rule gives the same root here, since the previous tree ends
//!   at the deal).

use super::Gadget;
use super::factored::{FactoredCfr, FactoredError, PokerLeaves};
use crate::cfr::SolverSpec;
use crate::game::{Action, GameError, Player, State, Turn};
use crate::games::universal_poker::UniversalPokerState;
use crate::tree::poker::{PokerEdge, PokerKind, PokerLayout, PokerLayoutError};
use std::sync::Arc;

/// Errors of Hold'em search, each naming its culprit.
#[derive(Debug, thiserror::Error)]
pub enum HoldemSearchError {
    #[error("Hold'em search setting `{key}` = {value}: {reason}")]
    BadSetting {
        key: &'static str,
        value: String,
        reason: String,
    },
    #[error("player {player} is asked to act, but {turn}")]
    NotToAct { player: Player, turn: String },
    #[error("the state is not in this resolver's chain: {0}")]
    NotInChain(String),
    #[error("leaf values: {0}")]
    Leaf(String),
    #[error(transparent)]
    Layout(#[from] PokerLayoutError),
    #[error(transparent)]
    Solver(#[from] FactoredError),
    #[error(transparent)]
    Game(#[from] GameError),
}

/// Run-outs per all-in leaf unless configured (see [`HoldemSearchConfig::runout_boards`]).
pub const DEFAULT_RUNOUT_BOARDS: usize = 64;
/// The most run-outs per all-in leaf a search may ask for (each holds one sweep over the
/// hands, about 10 KB on the full deck).
pub const MAX_RUNOUT_BOARDS: usize = 4096;

/// Settings of one search.
#[derive(Clone, Copy, Debug)]
pub struct HoldemSearchConfig {
    /// The CFR variant (CFR+ by default).
    pub spec: SolverSpec,
    /// Iterations per search.
    pub iterations: usize,
    /// Gadget mixing weight `α` in `[0, 1]`.
    pub alpha: f64,
    /// Cap on the public nodes of one search tree.
    pub max_nodes: usize,
    /// Leaves where a player is all in are valued from the cards (the mean showdown over the
    /// rest of the board, [`super::runout`]): over every run-out when there are at most this
    /// many, else over this many drawn; 0 leaves them to the leaf source (the CVPN).
    pub runout_boards: usize,
}

impl Default for HoldemSearchConfig {
    fn default() -> Self {
        HoldemSearchConfig {
            spec: SolverSpec::named("cfr+").expect("cfr+ is a named solver"),
            iterations: 200,
            alpha: 0.5,
            max_nodes: 200_000,
            runout_boards: DEFAULT_RUNOUT_BOARDS,
        }
    }
}

impl HoldemSearchConfig {
    /// Checks every setting; the error names the key.
    pub fn validate(&self) -> Result<(), HoldemSearchError> {
        let bad = |key, value: String, reason: &str| {
            Err(HoldemSearchError::BadSetting {
                key,
                value,
                reason: reason.into(),
            })
        };
        if self.iterations == 0 {
            return bad("iterations", "0".into(), "must be at least 1");
        }
        if !(0.0..=1.0).contains(&self.alpha) {
            return bad("alpha", self.alpha.to_string(), "must lie in [0, 1]");
        }
        if self.max_nodes == 0 {
            return bad("max_nodes", "0".into(), "must be at least 1");
        }
        if self.runout_boards > MAX_RUNOUT_BOARDS {
            return bad(
                "runout_boards",
                self.runout_boards.to_string(),
                &format!("must be at most {MAX_RUNOUT_BOARDS} (one showdown sweep per run-out)"),
            );
        }
        Ok(())
    }
}

/// Where a search's depth-limit values come from: one [`PokerLeaves`] evaluator per search
/// tree, plus values at the root of a new round's tree (see the module docs).
pub trait HoldemLeaves {
    /// An evaluator for the leaves of `layout`, a layout built from `root`.
    fn leaves_for(
        &mut self,
        layout: &Arc<PokerLayout>,
        root: &UniversalPokerState,
    ) -> Result<Box<dyn PokerLeaves>, HoldemSearchError>;

    /// Both players' counterfactual values at the root of `layout` (built from `root`, the
    /// first state of a betting round) when they arrive with `ranges`, on the scale of
    /// [`PokerLeaves::evaluate`] at that root.
    fn root_values(
        &mut self,
        layout: &Arc<PokerLayout>,
        root: &UniversalPokerState,
        ranges: [&[f64]; 2],
    ) -> Result<[Vec<f64>; 2], HoldemSearchError>;
}

/// The public edges of `state` from the start of the hand (hole cards left out; each round's
/// board cards as one [`PokerEdge::Deal`], ascending). Errors inside a board deal.
pub fn public_edges(state: &UniversalPokerState) -> Result<Vec<PokerEdge>, HoldemSearchError> {
    let cfg = state.config();
    let holes = 2 * cfg.num_hole;
    let mut s = state.clone();
    s.reset();
    let mut edges = Vec::new();
    let mut deal: Vec<u8> = Vec::new();
    let mut chance = 0usize;
    for &a in state.history() {
        if s.turn() == Turn::Chance {
            chance += 1;
            if chance > holes {
                deal.push(cfg.deck[a]);
            }
        } else {
            if !deal.is_empty() {
                deal.sort_unstable();
                edges.push(PokerEdge::Deal(std::mem::take(&mut deal)));
            }
            edges.push(PokerEdge::Action(a));
        }
        s.try_apply(a)?;
    }
    if !deal.is_empty() {
        if s.turn() == Turn::Chance {
            return Err(HoldemSearchError::NotInChain(format!(
                "the state is inside a board deal ({} board card(s) dealt so far); search before or after the deal",
                deal.len()
            )));
        }
        deal.sort_unstable();
        edges.push(PokerEdge::Deal(deal));
    }
    Ok(edges)
}

/// A state of `template`'s game with public history `edges` and hole cards that avoid every
/// board card of `edges` (the lowest free cards: the factored layout ignores hole cards).
pub fn state_at(
    template: &UniversalPokerState,
    edges: &[PokerEdge],
) -> Result<UniversalPokerState, HoldemSearchError> {
    let cfg = template.config();
    let board: u64 = edges
        .iter()
        .filter_map(|e| match e {
            PokerEdge::Deal(c) => Some(c.iter().fold(0u64, |m, &c| m | 1 << c)),
            _ => None,
        })
        .fold(0, |a, b| a | b);
    let mut s = template.clone();
    s.reset();
    let free: Vec<usize> = (0..cfg.deck_size)
        .filter(|&o| board >> cfg.deck[o] & 1 == 0)
        .take(2 * cfg.num_hole)
        .collect();
    for o in free {
        s.try_apply(o)?;
    }
    for e in edges {
        match e {
            PokerEdge::Action(a) => s.try_apply(*a)?,
            PokerEdge::Deal(cards) => {
                for &c in cards {
                    let o = cfg.outcome_of(c).ok_or_else(|| {
                        HoldemSearchError::NotInChain(format!("card {c} is not in the deck"))
                    })?;
                    s.try_apply(o)?;
                }
            }
            PokerEdge::Root => {}
        }
    }
    Ok(s)
}

/// Follows `edges` from node `from` of `layout`: `Ok(node)` when all are edges of the tree,
/// `Err(k)` when edge `k` leaves it (the node reached before edge `k` is a leaf, or has no
/// such child).
fn descend(
    layout: &PokerLayout,
    from: usize,
    edges: &[PokerEdge],
) -> Result<usize, (usize, usize)> {
    let mut n = from;
    for (k, e) in edges.iter().enumerate() {
        match layout.children(n).find(|&c| &layout.nodes[c].edge == e) {
            Some(c) => n = c,
            None => return Err((k, n)),
        }
    }
    Ok(n)
}

/// What a search leaves for the next one of the same chain (all `[N·P]`).
#[derive(Debug)]
struct Summary {
    root_edges: Vec<PokerEdge>,
    layout: Arc<PokerLayout>,
    own_reach: Vec<f64>,
    opp_reach: Vec<f64>,
    opp_cfvs: Vec<f64>,
}

/// The answer of one re-solving step.
#[derive(Clone, Debug)]
pub struct HoldemDecision {
    /// The legal actions at the acting node.
    pub actions: Vec<Action>,
    /// Per hand (the layout's order): action probabilities; uniform for hands impossible
    /// here and when no search ran.
    pub rows: Vec<Vec<f64>>,
    /// Whether the opponent entered through the gadget.
    pub gadget: bool,
    /// Whether a search ran (`false` when our range has no mass at the search root).
    pub searched: bool,
    /// Public nodes and depth-limit leaves of the search tree.
    pub nodes: usize,
    pub leaves: usize,
    /// The search root's public edges from the start of the hand.
    pub root_edges: Vec<PokerEdge>,
    /// Both players' root counterfactual values under the average profile (empty when no
    /// search ran).
    pub root_cfvs: [Vec<f64>; 2],
    /// Both players' root ranges the search ended with (the opponent's from the gadget).
    pub root_ranges: [Vec<f64>; 2],
}

/// Continual re-solving for one player through one hand (see the module docs).
#[derive(Clone, Debug)]
pub struct HoldemResolver {
    player: Player,
    config: HoldemSearchConfig,
    last: Option<Arc<Summary>>,
}

impl HoldemResolver {
    /// A chain for `player` (0 or 1) with validated settings.
    pub fn new(player: Player, config: HoldemSearchConfig) -> Result<Self, HoldemSearchError> {
        config.validate()?;
        if player > 1 {
            return Err(HoldemSearchError::BadSetting {
                key: "player",
                value: player.to_string(),
                reason: "two-player Hold'em has players 0 and 1".into(),
            });
        }
        Ok(HoldemResolver {
            player,
            config,
            last: None,
        })
    }

    /// The player it acts for.
    pub fn player(&self) -> Player {
        self.player
    }

    /// Bytes the chain holds: its latest search's tree and ranges (the tree counted in full
    /// even where another holder shares it).
    pub fn heap_bytes(&self) -> usize {
        let summary = self.last.as_ref().map_or(0, |s| {
            let edges: usize = s.root_edges.iter().map(PokerEdge::heap_bytes).sum();
            std::mem::size_of::<Summary>()
                + s.layout.heap_bytes()
                + s.root_edges.capacity() * std::mem::size_of::<PokerEdge>()
                + edges
                + (s.own_reach.capacity() + s.opp_reach.capacity() + s.opp_cfvs.capacity())
                    * std::mem::size_of::<f64>()
        });
        std::mem::size_of::<Self>() + summary
    }

    /// The chain's latest search: its tree, the public edges of its root and both players'
    /// reaches (player 0's, then player 1's, `[N·P]` each) under its average profile, the
    /// opponent's starting from the gadget's range. `None` before the first search. A
    /// decision that did not search (`searched == false`) leaves the previous one here.
    #[allow(clippy::type_complexity)]
    pub fn last_search(&self) -> Option<(&Arc<PokerLayout>, &[PokerEdge], [&[f64]; 2])> {
        self.last.as_ref().map(|s| {
            let reaches = if self.player == 0 {
                [s.own_reach.as_slice(), s.opp_reach.as_slice()]
            } else {
                [s.opp_reach.as_slice(), s.own_reach.as_slice()]
            };
            (&s.layout, s.root_edges.as_slice(), reaches)
        })
    }

    /// Searches at `state` (where this player acts) and returns its policy for every hand;
    /// the chain keeps the search's summary for the next decision.
    pub fn act(
        &mut self,
        state: &UniversalPokerState,
        source: &mut dyn HoldemLeaves,
    ) -> Result<HoldemDecision, HoldemSearchError> {
        let me = self.player;
        if state.turn() != Turn::Player(me) {
            return Err(HoldemSearchError::NotToAct {
                player: me,
                turn: format!("the state's turn is {:?}", state.turn()),
            });
        }
        let edges = public_edges(state)?;
        let (root_edges, carry) = self.restart(&edges)?;
        let root_state = state_at(state, &root_edges)?;
        let layout = Arc::new(PokerLayout::from_state_limited(
            &root_state,
            self.config.max_nodes,
            true,
        )?);
        let np = layout.num_hands();
        let here = descend(&layout, 0, &edges[root_edges.len()..]).map_err(|(j, _)| {
            HoldemSearchError::NotInChain(format!(
                "edge {:?} is not in the search tree",
                edges[root_edges.len() + j]
            ))
        })?;
        let actions = layout.nodes[here].actions.clone();
        let na = actions.len();
        let (own, gadget_parts) = self.start_ranges(carry, &layout, &root_state, source)?;
        let mass: f64 = (0..np)
            .filter(|&x| layout.possible(0, x))
            .map(|x| own[x])
            .sum();
        if mass <= 0.0 {
            // Our chain never reaches here: any policy will do; keep the summary.
            return Ok(HoldemDecision {
                actions,
                rows: vec![vec![1.0 / na as f64; na]; np],
                gadget: gadget_parts.is_some(),
                searched: false,
                nodes: layout.len(),
                leaves: layout.leaves().len(),
                root_edges,
                root_cfvs: [Vec::new(), Vec::new()],
                root_ranges: [Vec::new(), Vec::new()],
            });
        }
        self.search(
            layout,
            &root_state,
            root_edges,
            here,
            actions,
            own,
            gadget_parts,
            source,
        )
    }

    /// Where the next search starts given the public `edges` of the decision: the search
    /// root's public edges, and what the previous search carries to it.
    fn restart(&self, edges: &[PokerEdge]) -> Result<(Vec<PokerEdge>, Carry), HoldemSearchError> {
        let Some(sum) = &self.last else {
            // Start of the hand: the public edges of the first round.
            let first_deal = edges
                .iter()
                .position(|e| matches!(e, PokerEdge::Deal(_)))
                .unwrap_or(edges.len());
            if first_deal < edges.len() {
                return Err(HoldemSearchError::NotInChain(
                    "a chain must start in the hand's first betting round".into(),
                ));
            }
            return Ok((Vec::new(), Carry::Fresh));
        };
        let k = sum.root_edges.len();
        if edges.len() < k || edges[..k] != sum.root_edges[..] {
            return Err(HoldemSearchError::NotInChain(
                "the state does not continue the previous search's root".into(),
            ));
        }
        let np = sum.layout.num_hands();
        let slot = |v: &[f64], n: usize| v[n * np..(n + 1) * np].to_vec();
        match descend(&sum.layout, 0, &edges[k..]) {
            Ok(n) => Ok((
                edges.to_vec(),
                Carry::Inside {
                    own: slot(&sum.own_reach, n),
                    prev: slot(&sum.opp_reach, n),
                    cfvs: slot(&sum.opp_cfvs, n),
                    weight: sum.layout.nodes[n].weight,
                },
            )),
            Err((j, n))
                if sum.layout.nodes[n].kind == PokerKind::Leaf
                    && matches!(edges[k + j], PokerEdge::Deal(_)) =>
            {
                Ok((
                    edges[..k + j + 1].to_vec(),
                    Carry::NewRound {
                        own: slot(&sum.own_reach, n),
                        prev: slot(&sum.opp_reach, n),
                    },
                ))
            }
            Err((j, _)) => Err(HoldemSearchError::NotInChain(format!(
                "edge {:?} is not in the previous search tree",
                edges[k + j]
            ))),
        }
    }

    /// Our range at the search root of `layout` (at `root_state`), and the gadget's opponent
    /// range and values (`None` at the start of the hand).
    #[allow(clippy::type_complexity)]
    fn start_ranges(
        &self,
        carry: Carry,
        layout: &Arc<PokerLayout>,
        root_state: &UniversalPokerState,
        source: &mut dyn HoldemLeaves,
    ) -> Result<(Vec<f64>, Option<(Vec<f64>, Vec<f64>)>), HoldemSearchError> {
        let (me, opp) = (self.player, 1 - self.player);
        let np = layout.num_hands();
        Ok(match carry {
            Carry::Fresh => (layout.uniform_root_range(), None),
            Carry::Inside {
                own,
                prev,
                cfvs,
                weight,
            } => {
                let ratio = layout.nodes[0].weight / weight;
                let w: Vec<f64> = cfvs.iter().map(|v| v * ratio).collect();
                (own, Some((prev, w)))
            }
            Carry::NewRound { own, prev } => {
                let mask = |r: &[f64]| -> Vec<f64> {
                    (0..np)
                        .map(|x| if layout.possible(0, x) { r[x] } else { 0.0 })
                        .collect()
                };
                let (own, prev) = (mask(&own), mask(&prev));
                let ranges = if me == 0 {
                    [own.as_slice(), prev.as_slice()]
                } else {
                    [prev.as_slice(), own.as_slice()]
                };
                let [v0, v1] = source.root_values(layout, root_state, ranges)?;
                let w = if opp == 0 { v0 } else { v1 };
                if w.len() != np || w.iter().any(|v| !v.is_finite()) {
                    return Err(HoldemSearchError::Leaf(format!(
                        "root values need {np} finite entries, got {}",
                        w.len()
                    )));
                }
                (own, Some((prev, w)))
            }
        })
    }

    /// Runs the search on `layout` from our range `own` (the gadget's parts when given) and
    /// answers the decision at layout node `here`; keeps the search's summary.
    #[allow(clippy::too_many_arguments)]
    fn search(
        &mut self,
        layout: Arc<PokerLayout>,
        root_state: &UniversalPokerState,
        root_edges: Vec<PokerEdge>,
        here: usize,
        actions: Vec<Action>,
        own: Vec<f64>,
        gadget_parts: Option<(Vec<f64>, Vec<f64>)>,
        source: &mut dyn HoldemLeaves,
    ) -> Result<HoldemDecision, HoldemSearchError> {
        let (me, opp) = (self.player, 1 - self.player);
        let np = layout.num_hands();
        let na = actions.len();
        let d = layout.nodes[here].decision as usize;
        let with_gadget = gadget_parts.is_some();
        let evaluator = if layout.leaves().is_empty() {
            None
        } else {
            Some(source.leaves_for(&layout, root_state)?)
        };
        let uniform = layout.uniform_root_range();
        let mut ranges = [uniform.clone(), uniform];
        ranges[me] = own;
        let mut solver =
            FactoredCfr::with_leaves(layout.clone(), self.config.spec, Some(ranges), evaluator)?;
        if let Some((prev, w)) = gadget_parts {
            solver.set_gadget(Gadget::new(opp, w, prev, self.config.alpha).map_err(|e| {
                HoldemSearchError::BadSetting {
                    key: "alpha",
                    value: self.config.alpha.to_string(),
                    reason: e.to_string(),
                }
            })?)?;
        }
        solver.track_average_cfvs();
        for _ in 0..self.config.iterations {
            solver.iterate();
        }
        let avg = [solver.average(0), solver.average(1)];
        let o = layout.offsets[me][d];
        let rows = (0..np)
            .map(|x| {
                if layout.possible(here, x) {
                    (0..na).map(|a| avg[me][o + a * np + x]).collect()
                } else {
                    vec![1.0 / na as f64; na]
                }
            })
            .collect();
        let [r0, r1] = solver.reaches_under([&avg[0], &avg[1]]);
        let opp_cfvs = solver
            .average_cfvs(opp)
            .expect("averaged values are kept and iterations ran");
        let root_ranges = [solver.root_range(0).to_vec(), solver.root_range(1).to_vec()];
        solver.set_current(0, &avg[0])?;
        solver.set_current(1, &avg[1])?;
        let root_cfvs = [solver.root_cfvs(0), solver.root_cfvs(1)];
        let (own_reach, opp_reach) = if me == 0 { (r0, r1) } else { (r1, r0) };
        let nodes = layout.len();
        let leaves = layout.leaves().len();
        self.last = Some(Arc::new(Summary {
            root_edges: root_edges.clone(),
            layout,
            own_reach,
            opp_reach,
            opp_cfvs,
        }));
        Ok(HoldemDecision {
            actions,
            rows,
            gadget: with_gadget,
            searched: true,
            nodes,
            leaves,
            root_edges,
            root_cfvs,
            root_ranges,
        })
    }
}

/// What the previous search of a chain carries to the next search's root.
enum Carry {
    /// The hand's first search.
    Fresh,
    /// The new root lies inside the previous search tree: our range, the opponent's range
    /// and values there, and that node's weight (values are rescaled to the new root's).
    Inside {
        own: Vec<f64>,
        prev: Vec<f64>,
        cfvs: Vec<f64>,
        weight: f64,
    },
    /// The new root starts a betting round below a depth-limit leaf of the previous search:
    /// the ranges there (the opponent's values come from the leaf evaluator).
    NewRound { own: Vec<f64>, prev: Vec<f64> },
}

/// A search layout and the evaluator of its depth-limit leaves.
type LimitedLayout = (Arc<PokerLayout>, Option<Box<dyn PokerLeaves>>);

/// The depth-limited layout of a search from `root` (at most `config.max_nodes` nodes, leaves
/// at board deals) and the evaluator of its leaves (none when it has no leaves).
fn limited_layout(
    root: &UniversalPokerState,
    config: &HoldemSearchConfig,
    source: &mut dyn HoldemLeaves,
) -> Result<LimitedLayout, HoldemSearchError> {
    let layout = Arc::new(PokerLayout::from_state_limited(
        root,
        config.max_nodes,
        true,
    )?);
    let evaluator = if layout.leaves().is_empty() {
        None
    } else {
        Some(source.leaves_for(&layout, root)?)
    };
    Ok((layout, evaluator))
}

/// One re-solve of the public state `root` with explicit inputs (no chain): `own` is
/// `player`'s range; `gadget = Some((r_prev, w))` puts the opponent behind the CFR-D gadget
/// with values `w` (on the scale of `root`'s layout), `None` gives the opponent the uniform
/// range. Returns the solver after `config.iterations` iterations.
pub fn resolve_once(
    root: &UniversalPokerState,
    player: Player,
    own: Vec<f64>,
    gadget: Option<(Vec<f64>, Vec<f64>)>,
    config: &HoldemSearchConfig,
    source: &mut dyn HoldemLeaves,
) -> Result<FactoredCfr, HoldemSearchError> {
    config.validate()?;
    let (layout, evaluator) = limited_layout(root, config, source)?;
    let mut ranges = [layout.uniform_root_range(), layout.uniform_root_range()];
    ranges[player] = own;
    let mut solver = FactoredCfr::with_leaves(layout, config.spec, Some(ranges), evaluator)?;
    if let Some((prev, w)) = gadget {
        let g = Gadget::new(1 - player, w, prev, config.alpha).map_err(|e| {
            HoldemSearchError::BadSetting {
                key: "alpha",
                value: config.alpha.to_string(),
                reason: e.to_string(),
            }
        })?;
        solver.set_gadget(g)?;
    }
    solver.track_average_cfvs();
    for _ in 0..config.iterations {
        solver.iterate();
    }
    Ok(solver)
}

/// Both players' root counterfactual values (under the average profile) of a depth-limited
/// solve of the public state `root` in which both enter with the given `ranges` (no gadget):
/// the value targets of a query. Returns the layout it solved on with the values.
pub fn solve_ranges(
    root: &UniversalPokerState,
    ranges: [Vec<f64>; 2],
    config: &HoldemSearchConfig,
    source: &mut dyn HoldemLeaves,
) -> Result<(Arc<PokerLayout>, [Vec<f64>; 2]), HoldemSearchError> {
    config.validate()?;
    let (layout, evaluator) = limited_layout(root, config, source)?;
    let mut solver =
        FactoredCfr::with_leaves(layout.clone(), config.spec, Some(ranges), evaluator)?;
    for _ in 0..config.iterations {
        solver.iterate();
    }
    let avg = [solver.average(0), solver.average(1)];
    solver.set_current(0, &avg[0])?;
    solver.set_current(1, &avg[1])?;
    Ok((layout, [solver.root_cfvs(0), solver.root_cfvs(1)]))
}
