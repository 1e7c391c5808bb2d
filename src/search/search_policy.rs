//! The whole-game policy of continual re-solving, for exact evaluation.
//!
//! Playing with search, each player runs its own [`Resolver`] chain along the game; what it
//! does at a public node depends only on the public path there (the chain's summaries are
//! functions of the path) and on the searches' seeds. Seeding each search by its public node
//! makes the chain a deterministic function of the path, so the policy of every infoset is
//! well defined and can be assembled once: a top-down walk over the public tree carries both
//! players' chains, branches them at every node, and at each decision node lets the acting
//! player's chain decide for all of its private states at once. The result is a
//! [`TreePolicy`] that [`crate::eval::nash_conv`] evaluates exactly; [`SearchPolicy`] also
//! answers through the [`Policy`] trait.
//!
//! Cost: one search per decision public node (a private state's policy is a row of its public
//! node's search).

use super::gtcfr::{LayoutCache, run_together};
use super::oracle::SubgameOracle;
use super::resolve::{Begun, Resolved, Resolver, ResolverConfig};
use super::{LeafValues, SearchError};
use crate::eval::{NashConvReport, nash_conv};
use crate::game::{Game, State, Turn};
use crate::policy::{Policy, PolicyError};
use crate::tree::history::HistoryTree;
use crate::tree::{NodeKind, PublicTree, TreePolicy, uniform_tree_policy};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// Counts of what building a [`SearchPolicy`] did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SearchPolicyStats {
    /// Decision public nodes visited (one re-solving step each).
    pub decisions: usize,
    /// Steps that ran a search (the others had no own range left and answer uniformly).
    pub searches: usize,
    /// Searches that used the gadget (all but each chain's first on a path).
    pub gadget_searches: usize,
    /// Searches whose restart node was the current state itself.
    pub restarts_at_current: usize,
    /// CFR iterations over all searches.
    pub iterations: u64,
    /// Nodes expanded by simulations over all searches.
    pub expansions: usize,
    /// Searches that ended with a frontier (leaf values were used).
    pub searches_with_frontier: usize,
    /// Wall-clock seconds of the walk.
    pub seconds: f64,
}

/// Continual re-solving for both players as one whole-game policy (see the module docs).
#[derive(Clone, Debug)]
pub struct SearchPolicy {
    tree: Arc<PublicTree>,
    policy: TreePolicy,
    index: [HashMap<String, usize>; 2],
    stats: SearchPolicyStats,
}

/// The seed of the search at public node `node` under run seed `seed`.
pub fn node_seed(seed: u64, node: u32) -> u64 {
    crate::util::SplitMix64::new(seed ^ (node as u64).wrapping_mul(0xA24B_AED4_963E_E407))
        .next_u64()
}

impl SearchPolicy {
    /// Walks the public tree of the compiled game top-down, re-solving at every decision node
    /// with `config` (the search seed of a node is [`node_seed`] of `config.search.seed`) and
    /// frontier values from `leaves`.
    pub fn build(
        tree: Arc<PublicTree>,
        ht: Arc<HistoryTree>,
        config: &ResolverConfig,
        leaves: &mut dyn LeafValues,
    ) -> Result<SearchPolicy, SearchError> {
        config.validate()?;
        let t0 = Instant::now();
        let mut policy = uniform_tree_policy(&tree);
        let mut stats = SearchPolicyStats::default();
        // One layout per restart node, shared by every chain of the walk.
        let layouts = Arc::new(LayoutCache::new(tree.nodes.len()));
        let chain = |i| {
            Resolver::new(i, tree.clone(), ht.clone(), config.clone())
                .map(|r| r.with_layouts(layouts.clone()))
        };
        let root = (0..tree.nodes.len() as u32)
            .find(|&n| tree.nodes[n as usize].parent == crate::tree::NONE)
            .expect("a public tree has a root");
        // Depth by depth: the searches of one depth are independent of each other (each node
        // has its own copy of the chains), so they run in lock-step, one evaluator call per
        // single update for all of them.
        let mut level = vec![(root, [chain(0)?, chain(1)?])];
        while !level.is_empty() {
            let mut answers: Vec<Option<Resolved>> = vec![None; level.len()];
            let mut waiting = Vec::new();
            let mut searches = Vec::new();
            for (k, (node, chains)) in level.iter_mut().enumerate() {
                if let NodeKind::Decision(me) = tree.nodes[*node as usize].kind {
                    let seed = node_seed(config.search.seed, *node);
                    match chains[me].begin(*node, seed)? {
                        Begun::Done(r) => answers[k] = Some(r),
                        Begun::Search(search, pending) => {
                            waiting.push((k, me, pending));
                            searches.push(*search);
                        }
                    }
                }
            }
            run_together(&mut searches, leaves)?;
            for ((k, me, pending), search) in waiting.into_iter().zip(searches) {
                answers[k] = Some(level[k].1[me].finish(search, pending, leaves)?);
            }
            let mut next = Vec::new();
            for ((node, chains), r) in level.into_iter().zip(answers) {
                let pn = &tree.nodes[node as usize];
                if let (NodeKind::Decision(me), Some(r)) = (pn.kind, r) {
                    stats.decisions += 1;
                    if r.searched {
                        stats.searches += 1;
                        stats.gadget_searches += r.gadget as usize;
                        stats.restarts_at_current += (r.root == node) as usize;
                        stats.iterations += r.iterations;
                        stats.expansions += r.expansions;
                        stats.searches_with_frontier += (r.frontier > 0) as usize;
                    }
                    let inf = &tree.infosets[me];
                    for g in pn.infoset_range.0..pn.infoset_range.1 {
                        let g = g as usize;
                        let row = &r.rows[inf.private[g] as usize];
                        let range = inf.range(g);
                        assert_eq!(row.len(), range.len(), "infoset {} row", inf.key[g]);
                        policy[me][range].copy_from_slice(row);
                    }
                }
                for &c in &pn.children {
                    next.push((c, chains.clone()));
                }
            }
            level = next;
        }
        stats.seconds = t0.elapsed().as_secs_f64();
        let index = std::array::from_fn(|i| {
            tree.infosets[i]
                .key
                .iter()
                .enumerate()
                .map(|(g, k)| (k.clone(), g))
                .collect()
        });
        Ok(SearchPolicy {
            tree,
            policy,
            index,
            stats,
        })
    }

    /// The policy as tree arrays.
    pub fn tree_policy(&self) -> &TreePolicy {
        &self.policy
    }

    /// What the walk did.
    pub fn stats(&self) -> &SearchPolicyStats {
        &self.stats
    }

    /// Exact NashConv of the policy.
    pub fn nash_conv(&self) -> NashConvReport {
        nash_conv(&self.tree, &self.policy)
    }
}

impl Policy for SearchPolicy {
    fn action_probabilities(&self, state: &dyn State) -> Result<Vec<f64>, PolicyError> {
        let p = match state.turn() {
            Turn::Player(p) => p,
            _ => return Err(PolicyError::NotADecision),
        };
        let key = state.information_state_string(p);
        let g = *self.index[p]
            .get(&key)
            .ok_or(PolicyError::MissingInfostate { key })?;
        Ok(self.policy[p][self.tree.infosets[p].range(g)].to_vec())
    }

    fn name(&self) -> String {
        format!("search({} decisions)", self.stats.decisions)
    }
}

/// Settings of [`search_nash_conv`].
#[derive(Clone, Debug)]
pub struct SearchEval {
    /// The re-solving chains' settings.
    pub resolver: ResolverConfig,
    /// CFR+ iterations of each exact leaf solve (≥ 1).
    pub oracle_iterations: usize,
    /// Refuse games with more histories than this (the exact tree and every search's layout
    /// must fit).
    pub max_histories: usize,
}

impl Default for SearchEval {
    fn default() -> Self {
        SearchEval {
            resolver: ResolverConfig::default(),
            oracle_iterations: 200,
            max_histories: 1_000_000,
        }
    }
}

/// The result of [`search_nash_conv`].
#[derive(Clone, Debug, Serialize)]
pub struct SearchNashConv {
    /// OpenSpiel load string of the game.
    pub game: String,
    pub simulations: usize,
    pub seed: u64,
    pub oracle_iterations: usize,
    pub nash_conv: f64,
    pub best_response_values: [f64; 2],
    pub on_policy_values: [f64; 2],
    /// Leaf subgames the oracle solved.
    pub oracle_solves: u64,
    pub stats: SearchPolicyStats,
}

/// NashConv of continual re-solving with the exact [`SubgameOracle`] at the frontier: the
/// whole-game [`SearchPolicy`] of `game` under `eval`, evaluated exactly. Errors name the
/// culprit: a setting out of range, a game over `eval.max_histories`, or a game the search
/// layout refuses.
pub fn search_nash_conv(game: &dyn Game, eval: &SearchEval) -> Result<SearchNashConv, SearchError> {
    eval.resolver.validate()?;
    if eval.oracle_iterations == 0 {
        return Err(SearchError::BadSetting {
            key: "oracle.iterations",
            value: "0".into(),
            reason: "at least one iteration".into(),
        });
    }
    super::check_supported(game)?;
    let tree = Arc::new(PublicTree::build_with_limit(game, eval.max_histories)?);
    let ht = Arc::new(HistoryTree::build(game, &tree)?);
    let mut oracle = SubgameOracle::new(tree.clone(), ht.clone(), eval.oracle_iterations)?;
    let sp = SearchPolicy::build(tree, ht, &eval.resolver, &mut oracle)?;
    let r = sp.nash_conv();
    Ok(SearchNashConv {
        game: game.load_string(),
        simulations: eval.resolver.search.simulations,
        seed: eval.resolver.search.seed,
        oracle_iterations: eval.oracle_iterations,
        nash_conv: r.nash_conv,
        best_response_values: r.best_response_values,
        on_policy_values: r.on_policy_values,
        oracle_solves: oracle.solves(),
        stats: sp.stats.clone(),
    })
}
