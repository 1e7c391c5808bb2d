//! Continual re-solving (Student of Games §4.3; DeepStack's continual re-solving with the
//! modification SoG needs when the current public state lies outside the previous tree).
//!
//! One [`Resolver`] follows one player through one game. At each of the player's decisions it
//! runs a GT-CFR search and keeps a *summary* of it: the grown tree and, at every slot of it,
//! the player's own range (under the strategy it answered with), the opponent's range and the
//! opponent's counterfactual values (both players playing the search's answer, frontier
//! values from the evaluator). The next decision restarts from that summary:
//!
//! * the *restart node* is the deepest ancestor of the current public state (the state itself
//!   included) that lay in the previous search tree; between the two lie only opponent
//!   decisions and chance (the previous decision was expanded, so the restart node is below
//!   it), so the player's range there is exact;
//! * the new tree starts as the path from the restart node to the current state with every
//!   node on it expanded, so the off-path children of the path are frontier nodes whose values
//!   the evaluator supplies (they are needed: the gadget compares the opponent's value of the
//!   whole restart node with the value it was promised), plus the current state's children
//!   (L⁰); simulations start at the current state, so the tree grows only below it;
//! * the opponent enters through the CFR-D gadget at the restart node with the carried
//!   counterfactual values as terminate values and the carried opponent range as `r_prev`
//!   (opponent root range `α · follow + (1 − α) · r_prev`).
//!
//! The first search of a chain has no summary: it is rooted at the game's root with both
//! players' full ranges and no gadget, again grown only below the current state.
//!
//! # Which opponent values to carry
//! The gadget is safe when the promised values are at least what the opponent can get against
//! the previous answer. Three choices are offered ([`OpponentValues`]); measured on Leduc with
//! full-depth re-solves (`full_depth`, 51 / 201 / 801 iterations per step, whole-game
//! NashConv of the chain):
//! * averaged over the iterations (DeepStack; the default): 0.055, 0.0062, 0.00076;
//! * best response to the answer: 0.0083, 0.00088, 0.00023 at 201 / 801 / 3201;
//! * the answered profile's own values: 0.12, 0.069, 0.070 — it stalls: promises below the
//!   opponent's best response make the gadget's constraint infeasible.
//!
//! With depth-limited GT-CFR trees the best-response values are computed against strategies
//! of nodes expanded late in the search (few iterations), so they promise the opponent too
//! much and the chain degrades (Leduc, oracle leaves, s = 200: 0.62 against 0.17 averaged and
//! 0.26 profile); the average sits between the two and is the default.

use super::engine::{AnyEngine, Gadget, RegretEngine};
use super::gtcfr::{GtCfr, GtCfrConfig, LayoutCache, layout_cached};
use super::{LeafValues, Pbs, SearchError};
use crate::game::Player;
use crate::tree::history::HistoryTree;
use crate::tree::tensor::TensorTree;
use crate::tree::{NONE, NodeKind, PublicTree};
use std::collections::HashMap;
use std::sync::Arc;

/// Settings of a re-solving chain.
#[derive(Clone, Debug)]
pub struct ResolverConfig {
    /// Settings of every search (its `seed` is replaced per decision by the caller's seed).
    pub search: GtCfrConfig,
    /// Gadget mixing weight `α` in `[0, 1]` (SoG: 0.5; 1 is the plain CFR-D gadget).
    pub alpha: f64,
    /// The opponent values a search leaves for the next one.
    pub opponent_values: OpponentValues,
    /// Expand every node below the restart node before searching: each step is then a
    /// full-depth CFR+ re-solve (`simulations + 1` iterations, no evaluator), the reference
    /// against which depth-limited search is measured.
    pub full_depth: bool,
}

/// Which counterfactual values of the opponent a search leaves as the next search's gadget
/// values (see the module docs for the measurements behind the default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpponentValues {
    /// Averaged over the iterations each node spent in the tree, with the solver's averaging
    /// weights (DeepStack's choice).
    Average,
    /// The opponent's best response to the search's answer (evaluator values at the
    /// frontier).
    BestResponse,
    /// Both players playing the search's answer.
    Profile,
}

impl Default for ResolverConfig {
    fn default() -> Self {
        ResolverConfig {
            search: GtCfrConfig::default(),
            alpha: 0.5,
            opponent_values: OpponentValues::Average,
            full_depth: false,
        }
    }
}

impl ResolverConfig {
    /// Checks every setting; the error names the key.
    pub fn validate(&self) -> Result<(), SearchError> {
        self.search.validate()?;
        if !(0.0..=1.0).contains(&self.alpha) {
            return Err(SearchError::BadSetting {
                key: "alpha",
                value: self.alpha.to_string(),
                reason: "must lie in [0, 1]".into(),
            });
        }
        Ok(())
    }
}

/// What a search leaves for the next decision of the same player (see the module docs). All
/// slot vectors are `[layout node x P]`.
#[derive(Debug)]
struct Summary {
    layout: Arc<TensorTree>,
    /// Public node id → layout node.
    index: HashMap<u32, usize>,
    in_tree: Vec<bool>,
    own_reach: Vec<f64>,
    opp_reach: Vec<f64>,
    opp_cfvs: Vec<f64>,
}

/// The answer of one re-solving step.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    /// The public node decided at.
    pub node: u32,
    /// The public node the search was rooted at (the restart node).
    pub root: u32,
    /// Whether the opponent entered through the gadget (every search but a chain's first).
    pub gadget: bool,
    /// Whether a search ran: `false` when the player's own range at the restart node has no
    /// mass (its previous answers never lead here, so its policy here is irrelevant; the rows
    /// are uniform and the summary is kept).
    pub searched: bool,
    /// Per private state of the acting player (index as in the layout): the action
    /// probabilities at its infoset, empty where it has none.
    pub rows: Vec<Vec<f64>>,
    /// CFR iterations, expansions and final frontier size of the search.
    pub iterations: u64,
    pub expansions: usize,
    pub frontier: usize,
    /// The search's final frontier as public belief states: every frontier node with both
    /// players' reaches when both play the answered strategy (the opponent from its gadget
    /// range), in layout order, leaving out nodes neither player reaches. These are the
    /// queries sound self-play trains the value network on.
    pub queries: Vec<Pbs>,
    /// Both players' reaches at the decided node under the answered strategy (own range as
    /// carried, opponent's from the gadget): the public belief state the answer belongs to.
    /// Empty ranges when no search ran.
    pub beliefs: Pbs,
}

/// One player's continual re-solving chain along one game (see the module docs). Cloning is
/// cheap (the summary is shared), so a caller can branch a chain at a public node.
#[derive(Clone, Debug)]
pub struct Resolver {
    player: Player,
    tree: Arc<PublicTree>,
    ht: Arc<HistoryTree>,
    config: ResolverConfig,
    last: Option<Arc<Summary>>,
    layouts: Option<Arc<LayoutCache>>,
}

/// What [`Resolver::begin`] returns.
pub enum Begun {
    /// Answered without a search (the player has no range left).
    Done(Resolved),
    /// A search to run to its budget, then to pass to [`Resolver::finish`] with its context.
    Search(Box<GtCfr<AnyEngine>>, PendingSearch),
}

/// What [`Resolver::finish`] needs to know about a search [`Resolver::begin`] set up.
#[derive(Debug)]
pub struct PendingSearch {
    node: u32,
    root: u32,
    gadget: bool,
    layout: Arc<TensorTree>,
    here: usize,
    d: usize,
}

/// `v` padded with zeros or cut to `p` entries.
fn fit(v: &[f64], p: usize) -> Vec<f64> {
    (0..p).map(|x| v.get(x).copied().unwrap_or(0.0)).collect()
}

impl Resolver {
    /// A chain for `player` on the compiled game, before its first decision.
    pub fn new(
        player: Player,
        tree: Arc<PublicTree>,
        ht: Arc<HistoryTree>,
        config: ResolverConfig,
    ) -> Result<Resolver, SearchError> {
        config.validate()?;
        if player > 1 {
            return Err(SearchError::BadSetting {
                key: "player",
                value: player.to_string(),
                reason: "two-player games only (0 or 1)".into(),
            });
        }
        Ok(Resolver {
            player,
            tree,
            ht,
            config,
            last: None,
            layouts: None,
        })
    }

    /// Takes search layouts from `cache` (shared by the chains of one compiled game) instead
    /// of building one per search.
    pub fn with_layouts(mut self, cache: Arc<LayoutCache>) -> Resolver {
        self.layouts = Some(cache);
        self
    }

    /// The player this chain decides for.
    pub fn player(&self) -> Player {
        self.player
    }

    /// Public nodes of the last search tree (expanded or frontier or terminal), in layout
    /// order; empty before the first search.
    pub fn last_tree(&self) -> Vec<u32> {
        self.last.as_ref().map_or_else(Vec::new, |s| {
            (0..s.layout.len())
                .filter(|&l| s.in_tree[l])
                .map(|l| s.layout.public_node[l])
                .collect()
        })
    }

    /// Whether a search has run (the next one uses the gadget).
    pub fn has_summary(&self) -> bool {
        self.last.is_some()
    }

    /// Searches at public node `node`, a decision of this chain's player that follows its
    /// previous decision (if any) in the game, with simulation seed `seed`; returns the
    /// policy rows there and keeps the search's summary for the next decision.
    pub fn act(
        &mut self,
        node: u32,
        seed: u64,
        leaves: &mut dyn LeafValues,
    ) -> Result<Resolved, SearchError> {
        match self.begin(node, seed)? {
            Begun::Done(r) => Ok(r),
            Begun::Search(mut search, pending) => {
                search.run(leaves)?;
                self.finish(*search, pending, leaves)
            }
        }
    }

    /// The restart node of a search at `node` and what the chain carries into it: (root, own
    /// range, opponent's range, gadget values), the ranges `None` on the chain's first search.
    #[allow(clippy::type_complexity)]
    fn restart(
        &self,
        node: u32,
    ) -> Result<(u32, Option<Vec<f64>>, Option<Vec<f64>>, Option<Vec<f64>>), SearchError> {
        let tree = &self.tree;
        Ok(match &self.last {
            None => {
                let mut root = node;
                while tree.nodes[root as usize].parent != NONE {
                    root = tree.nodes[root as usize].parent;
                }
                (root, None, None, None)
            }
            Some(s) => {
                let mut a = node;
                let l = loop {
                    if let Some(&l) = s.index.get(&a)
                        && s.in_tree[l]
                    {
                        break l;
                    }
                    a = tree.nodes[a as usize].parent;
                    if a == NONE {
                        return Err(SearchError::BadSetting {
                            key: "node",
                            value: node.to_string(),
                            reason: "does not follow the previous search of this chain".into(),
                        });
                    }
                };
                let p = s.layout.p;
                let slots = l * p..(l + 1) * p;
                (
                    a,
                    Some(s.own_reach[slots.clone()].to_vec()),
                    Some(s.opp_reach[slots.clone()].to_vec()),
                    Some(s.opp_cfvs[slots].to_vec()),
                )
            }
        })
    }

    /// The first half of [`Self::act`]: sets the search at `node` up without running it (or
    /// answers at once where the player has no range left). Run the returned search to its
    /// budget (alone, or with others in [`super::run_lockstep`]) and pass it to
    /// [`Self::finish`]; `act` is `begin`, `run`, `finish`.
    pub fn begin(&mut self, node: u32, seed: u64) -> Result<Begun, SearchError> {
        let (me, opp) = (self.player, 1 - self.player);
        let tree = self.tree.clone();
        if node as usize >= tree.nodes.len()
            || tree.nodes[node as usize].kind != NodeKind::Decision(me)
        {
            return Err(SearchError::BadSetting {
                key: "node",
                value: node.to_string(),
                reason: format!("not a decision node of player {me}"),
            });
        }
        let (root, own, opp_range, cfvs) = self.restart(node)?;
        // Ranges given to the engine: carried or full; the gadget replaces the opponent's.
        let mut pbs = Pbs {
            node: root,
            ranges: [Vec::new(), Vec::new()],
        };
        let (layout, _) = layout_cached(&tree, &self.ht, &pbs, self.layouts.as_deref())?;
        let p = layout.p;
        let full = |i: usize| -> Vec<f64> {
            (0..p)
                .map(|x| if layout.valid[i][x] { 1.0 } else { 0.0 })
                .collect()
        };
        pbs.ranges[me] = own.as_deref().map_or_else(|| full(me), |r| fit(r, p));
        pbs.ranges[opp] = full(opp);
        let path = layout_path(&tree, &layout, root, node);
        let here = *path.last().unwrap();
        let d = layout.decision_index[here] as usize;
        let own_mass: f64 = pbs.ranges[me]
            .iter()
            .zip(&layout.valid[me][..p])
            .filter(|(_, v)| **v)
            .map(|(r, _)| *r)
            .sum();
        if own_mass <= 0.0 {
            let rows = (0..p)
                .map(|x| {
                    if layout.infoset[me][d * p + x] == NONE {
                        Vec::new()
                    } else {
                        let na = layout.num_actions[me][d] as usize;
                        vec![1.0 / na as f64; na]
                    }
                })
                .collect();
            return Ok(Begun::Done(Resolved {
                node,
                root,
                gadget: false,
                searched: false,
                rows,
                iterations: 0,
                expansions: 0,
                frontier: 0,
                queries: Vec::new(),
                beliefs: Pbs {
                    node,
                    ranges: [Vec::new(), Vec::new()],
                },
            }));
        }
        let mut engine = AnyEngine::build(
            self.config.search.engine.as_deref(),
            layout.clone(),
            self.config.search.spec,
            pbs.ranges,
        )?;
        let gadget = if let (Some(r_prev), Some(w)) = (opp_range, cfvs) {
            engine.set_gadget(Gadget::new(
                opp,
                fit(&w, p),
                fit(&r_prev, p),
                self.config.alpha,
            )?)?;
            true
        } else {
            false
        };
        for &n in &path {
            engine.expand(n);
        }
        if self.config.full_depth {
            engine.expand_all();
        }
        let config = GtCfrConfig {
            seed,
            ..self.config.search.clone()
        };
        let mut search = GtCfr::from_engine(engine, config)?;
        search.set_growth_root(here)?;
        Ok(Begun::Search(
            Box::new(search),
            PendingSearch {
                node,
                root,
                gadget,
                layout,
                here,
                d,
            },
        ))
    }

    /// The second half of [`Self::act`]: the policy rows of `search` (run to its budget, as
    /// set up by [`Self::begin`] of this chain) and the summary the next decision restarts
    /// from. `leaves` is asked only for the opponent values `best-response` and `profile`.
    pub fn finish(
        &mut self,
        mut search: GtCfr<AnyEngine>,
        pending: PendingSearch,
        leaves: &mut dyn LeafValues,
    ) -> Result<Resolved, SearchError> {
        let (me, opp) = (self.player, 1 - self.player);
        let PendingSearch {
            node,
            root,
            gadget,
            layout,
            here,
            d,
        } = pending;
        let p = layout.p;
        let blocks = search.policy_blocks();
        let a = layout.a;
        let na = layout.num_actions[me][d] as usize;
        let rows = (0..p)
            .map(|x| {
                if layout.infoset[me][d * p + x] == NONE {
                    Vec::new()
                } else {
                    let row = (d * p + x) * a;
                    blocks[me][row..row + na].to_vec()
                }
            })
            .collect();
        let (iterations, expansions) = (search.engine().iteration(), search.expansions());
        let engine = search.engine_mut();
        let frontier_nodes = engine.frontier();
        let frontier = frontier_nodes.len();
        let mut reach = engine.reaches_under(&blocks);
        let queries = frontier_nodes
            .iter()
            .map(|&f| Pbs {
                node: layout.public_node[f],
                ranges: std::array::from_fn(|i| reach[i][f * p..(f + 1) * p].to_vec()),
            })
            .filter(|q| q.ranges.iter().any(|r| r.iter().any(|&x| x > 0.0)))
            .collect();
        let beliefs = Pbs {
            node,
            ranges: std::array::from_fn(|i| reach[i][here * p..(here + 1) * p].to_vec()),
        };
        let opp_cfvs = match self.config.opponent_values {
            OpponentValues::Average => engine.average_cfvs(opp),
            OpponentValues::BestResponse => engine.best_response_values(opp, &blocks, leaves)?,
            OpponentValues::Profile => {
                let [v0, v1] = engine.values_under(&blocks, leaves)?;
                if opp == 0 { v0 } else { v1 }
            }
        };
        let in_tree = (0..layout.len()).map(|n| engine.in_tree(n)).collect();
        let index = layout
            .public_node
            .iter()
            .enumerate()
            .map(|(l, &pn)| (pn, l))
            .collect();
        self.last = Some(Arc::new(Summary {
            index,
            in_tree,
            own_reach: std::mem::take(&mut reach[me]),
            opp_reach: std::mem::take(&mut reach[opp]),
            opp_cfvs,
            layout,
        }));
        Ok(Resolved {
            node,
            root,
            gadget,
            searched: true,
            rows,
            iterations,
            expansions,
            frontier,
            queries,
            beliefs,
        })
    }
}

/// The path from the restart node `root` to `node`, as nodes of `layout` (rooted at `root`).
fn layout_path(tree: &PublicTree, layout: &TensorTree, root: u32, node: u32) -> Vec<usize> {
    let mut public_path = vec![node];
    while *public_path.last().unwrap() != root {
        let up = tree.nodes[*public_path.last().unwrap() as usize].parent;
        public_path.push(up);
    }
    public_path.reverse();
    let mut path = vec![0usize];
    for &next in &public_path[1..] {
        let cur = *path.last().unwrap();
        let c0 = layout.first_child[cur] as usize;
        let c = (c0..c0 + layout.num_children[cur] as usize)
            .find(|&c| layout.public_node[c] == next)
            .expect("the path lies in the restart node's subtree");
        path.push(c);
    }
    path
}
