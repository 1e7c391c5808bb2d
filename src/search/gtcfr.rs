//! Growing-tree CFR (GT-CFR, Student of Games §4.2).
//!
//! The tree starts as the root public belief state and its children (L⁰). The search then
//! alternates *regret updates* (CFR iterations on the current tree, frontier values from a
//! [`LeafValues`] evaluator) with *expansion simulations*: `c` simulations per update, or for
//! `c < 1` one simulation every ⌈1/c⌉ updates, until `s` simulations have run (a final round of
//! updates follows the last simulation, so new nodes are solved before the search answers).
//!
//! A simulation samples a history at the root from the beliefs (chance reach times both
//! ranges), then walks down the tree: chance by its odds; at a decision of player `p` with
//! private state `x` the action comes from the mixture ½·PUCT + ½·(current CFR policy), where
//! PUCT takes the argmax of `Q(a) + c_puct · prior(a) · √N / (1 + N(a))` with `Q` the action's
//! counterfactual value divided by the opponent's chance-weighted reach (an expected payoff),
//! `N(a)` the visit counts of the infostate's actions and a uniform prior (a policy network
//! replaces it later). The first frontier node met is expanded: all its children join the tree.
//!
//! The acting policy is the root's average strategy ([`Final::Average`]) or its current one.

use super::engine::{AnyEngine, EngineBuilder, RegretEngine, ScalarEngine};
use super::{LeafValues, Pbs, SearchError};
use crate::cfr::SolverSpec;
use crate::game::Player;
use crate::tree::history::HistoryTree;
use crate::tree::tensor::{TensorKind, TensorTree};
use crate::tree::{NONE, PublicTree};
use crate::util::SplitMix64;
use std::sync::Arc;
use std::time::Instant;

/// Which strategy a search answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Final {
    /// The average strategy (the one CFR's guarantees are about).
    Average,
    /// The last iterate.
    Current,
}

/// Settings of one GT-CFR search.
#[derive(Clone, Debug)]
pub struct GtCfrConfig {
    /// `s`: expansion simulations per search (at least 1).
    pub simulations: usize,
    /// `c`: simulations per regret update (> 0; below 1, one simulation per ⌈1/c⌉ updates).
    pub expansions_per_update: f64,
    /// PUCT exploration constant (≥ 0).
    pub puct: f64,
    /// Strategy the search answers with.
    pub final_policy: Final,
    /// The regret-update rule (CFR+ by default).
    pub spec: SolverSpec,
    /// Seed of the simulations' random stream.
    pub seed: u64,
    /// Ask the evaluator for a prior policy ([`LeafValues::policy_prior`]) at each decision
    /// node simulations pass, for PUCT (uniform where it gives none).
    pub policy_prior: bool,
    /// Top-k restriction of the simulations' selection: at a decision, only the `k` actions
    /// of highest current CFR probability (ties: lower action index first) can be picked,
    /// by PUCT and by the CFR sample alike. `None`: every action (at least 1 when set).
    pub top_k: Option<usize>,
    /// Builds the regret engine of searches that create their own (re-solving chains, PBS
    /// solves); `None`: the scalar `f64` engine ([`ScalarEngine`]). [`GtCfr::new`] always
    /// builds a scalar one.
    pub engine: Option<Arc<dyn EngineBuilder>>,
}

impl Default for GtCfrConfig {
    fn default() -> Self {
        GtCfrConfig {
            simulations: 100,
            expansions_per_update: 1.0,
            puct: 1.0,
            final_policy: Final::Average,
            spec: SolverSpec::named("cfr+").expect("cfr+ is a known algorithm"),
            seed: 0,
            policy_prior: false,
            top_k: None,
            engine: None,
        }
    }
}

impl GtCfrConfig {
    /// Checks every setting; the error names the key.
    pub fn validate(&self) -> Result<(), SearchError> {
        let bad = |key: &'static str, value: String, reason: &str| SearchError::BadSetting {
            key,
            value,
            reason: reason.into(),
        };
        if self.simulations == 0 {
            return Err(bad("s", "0".into(), "at least one simulation"));
        }
        let c = self.expansions_per_update;
        if !(c.is_finite() && c > 0.0) {
            return Err(bad("c", c.to_string(), "must be a positive number"));
        }
        if self.top_k == Some(0) {
            return Err(bad(
                "top_k",
                "0".into(),
                "at least 1 action (or unset for all)",
            ));
        }
        if !(self.puct.is_finite() && self.puct >= 0.0) {
            return Err(bad(
                "puct",
                self.puct.to_string(),
                "must be finite and >= 0",
            ));
        }
        Ok(())
    }

    /// (updates per round, simulations credited per round).
    fn schedule(&self) -> (usize, f64) {
        let c = self.expansions_per_update;
        if c >= 1.0 {
            (1, c)
        } else {
            ((1.0 / c).ceil() as usize, 1.0)
        }
    }
}

/// Wall-clock seconds a search (or a lock-step batch of searches) spent per phase.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PhaseTimes {
    /// Gathering the frontier queries of all searches before a lock-step update (reaches of
    /// the current strategies, query vectors); 0 for a search run alone.
    pub gather: f64,
    /// Regret updates (sweeps, accumulation, regret matching); for a search run alone this
    /// includes its leaf evaluations, for a lock-step batch it does not.
    pub updates: f64,
    /// The lock-step batch's leaf evaluator calls (one per single update for all searches);
    /// 0 for a search run alone (its evaluations are inside `updates`).
    pub evaluate: f64,
    /// Expansion simulations (prior-policy queries included).
    pub simulations: f64,
}

impl PhaseTimes {
    /// Adds `other`'s seconds to these.
    pub fn add(&mut self, other: &PhaseTimes) {
        self.gather += other.gather;
        self.updates += other.updates;
        self.evaluate += other.evaluate;
        self.simulations += other.simulations;
    }
}

/// What [`run_lockstep`] reports.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LockstepStats {
    /// Evaluator calls made for updates (one per single update while any search has a
    /// frontier).
    pub calls: u64,
    /// Frontier queries answered by those calls.
    pub queries: u64,
    /// The largest number of queries in one call.
    pub max_batch: usize,
    /// Seconds per phase, all searches together.
    pub times: PhaseTimes,
}

/// One GT-CFR search (see the module docs).
pub struct GtCfr<E: RegretEngine = ScalarEngine> {
    engine: E,
    config: GtCfrConfig,
    rng: SplitMix64,
    /// Per player, visit counts of `[decision x P x A]` rows.
    visits: [Vec<u32>; 2],
    simulations: usize,
    expansions: usize,
    /// Layout node where simulations start (0: the root).
    growth_root: usize,
    /// Prior policies by layout node, asked once per node (`policy_prior`).
    priors: std::collections::HashMap<usize, Option<Vec<Vec<f64>>>>,
    /// Seconds spent per phase by [`Self::run`].
    times: PhaseTimes,
}

/// Layouts of public subtrees by root node, built once and shared: a search's union layout
/// depends on its root node only, so searches rooted at the same public node (every chain's
/// first search, lock-step groups of self-play games) need not rebuild it. One cache serves
/// one compiled game (`tree`, `ht`); thread-safe; at most `capacity` layouts are kept (later
/// ones are built and not kept).
#[derive(Debug)]
pub struct LayoutCache {
    map: std::sync::Mutex<std::collections::HashMap<u32, Arc<TensorTree>>>,
    capacity: usize,
    builds: std::sync::atomic::AtomicU64,
}

impl LayoutCache {
    /// An empty cache keeping at most `capacity` layouts.
    pub fn new(capacity: usize) -> LayoutCache {
        LayoutCache {
            map: Default::default(),
            capacity,
            builds: Default::default(),
        }
    }

    /// The layout of the subtree below public node `node`, built on first use.
    pub fn get(
        &self,
        tree: &PublicTree,
        ht: &HistoryTree,
        node: u32,
    ) -> Result<Arc<TensorTree>, SearchError> {
        if let Some(l) = self.map.lock().expect("layout cache lock").get(&node) {
            return Ok(l.clone());
        }
        let l = Arc::new(TensorTree::build(tree, ht, node, None)?);
        self.builds
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut map = self.map.lock().expect("layout cache lock");
        if map.len() < self.capacity {
            map.entry(node).or_insert_with(|| l.clone());
        }
        Ok(l)
    }

    /// Layouts built so far (a hit builds none).
    pub fn builds(&self) -> u64 {
        self.builds.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The layout of the whole subtree below `pbs.node` and the root ranges it implies.
pub fn layout_for(
    tree: &PublicTree,
    ht: &HistoryTree,
    pbs: &Pbs,
) -> Result<(Arc<TensorTree>, [Vec<f64>; 2]), SearchError> {
    layout_cached(tree, ht, pbs, None)
}

/// [`layout_for`] through `cache` when given.
pub fn layout_cached(
    tree: &PublicTree,
    ht: &HistoryTree,
    pbs: &Pbs,
    cache: Option<&LayoutCache>,
) -> Result<(Arc<TensorTree>, [Vec<f64>; 2]), SearchError> {
    if pbs.node as usize >= tree.nodes.len() {
        return Err(SearchError::BadSetting {
            key: "node",
            value: pbs.node.to_string(),
            reason: format!("the public tree has {} nodes", tree.nodes.len()),
        });
    }
    let layout = match cache {
        Some(c) => c.get(tree, ht, pbs.node)?,
        None => Arc::new(TensorTree::build(tree, ht, pbs.node, None)?),
    };
    let p = layout.p;
    let ranges = std::array::from_fn(|i| {
        (0..p)
            .map(|x| pbs.ranges[i].get(x).copied().unwrap_or(0.0))
            .collect()
    });
    Ok((layout, ranges))
}

impl GtCfr<ScalarEngine> {
    /// A search rooted at `pbs` on the scalar engine (the layout covers the whole subtree; only
    /// L⁰ is in the tree at first).
    pub fn new(
        tree: &PublicTree,
        ht: &HistoryTree,
        pbs: &Pbs,
        config: GtCfrConfig,
    ) -> Result<Self, SearchError> {
        Self::new_cached(tree, ht, pbs, config, None)
    }

    /// [`Self::new`] with the layout taken from `cache` when given.
    pub fn new_cached(
        tree: &PublicTree,
        ht: &HistoryTree,
        pbs: &Pbs,
        config: GtCfrConfig,
        cache: Option<&LayoutCache>,
    ) -> Result<Self, SearchError> {
        config.validate()?;
        let (layout, ranges) = layout_cached(tree, ht, pbs, cache)?;
        let engine = ScalarEngine::new(layout, config.spec, ranges)?;
        Self::from_engine(engine, config)
    }
}

impl GtCfr<AnyEngine> {
    /// A search rooted at `pbs` on the engine `config.engine` builds (the scalar one when
    /// unset), its layout taken from `cache` when given.
    pub fn new_any(
        tree: &PublicTree,
        ht: &HistoryTree,
        pbs: &Pbs,
        config: GtCfrConfig,
        cache: Option<&LayoutCache>,
    ) -> Result<Self, SearchError> {
        config.validate()?;
        let (layout, ranges) = layout_cached(tree, ht, pbs, cache)?;
        let engine = AnyEngine::build(config.engine.as_deref(), layout, config.spec, ranges)?;
        Self::from_engine(engine, config)
    }
}

impl<E: RegretEngine> GtCfr<E> {
    /// A search over an existing engine (its expanded set is L⁰ or larger).
    pub fn from_engine(engine: E, config: GtCfrConfig) -> Result<Self, SearchError> {
        config.validate()?;
        let l = engine.layout().clone();
        let visits = std::array::from_fn(|i| vec![0u32; l.decisions[i].len() * l.p * l.a]);
        Ok(GtCfr {
            rng: SplitMix64::new(config.seed),
            engine,
            config,
            visits,
            simulations: 0,
            expansions: 0,
            growth_root: 0,
            priors: std::collections::HashMap::new(),
            times: PhaseTimes::default(),
        })
    }

    /// Makes simulations start at layout node `n` instead of the root, so that the tree grows
    /// only below `n` (continual re-solving: the search root is an earlier public state and
    /// `n` the current one). `n` must be an expanded node.
    pub fn set_growth_root(&mut self, n: usize) -> Result<(), SearchError> {
        if n >= self.engine.layout().len() || !self.engine.is_expanded(n) {
            return Err(SearchError::BadSetting {
                key: "growth_root",
                value: n.to_string(),
                reason: "must be an expanded node of the search tree".into(),
            });
        }
        self.growth_root = n;
        Ok(())
    }

    /// The layout node where simulations start.
    pub fn growth_root(&self) -> usize {
        self.growth_root
    }

    /// The engine.
    pub fn engine(&self) -> &E {
        &self.engine
    }

    /// The engine, mutably (e.g. to expand everything or to drive updates by hand).
    pub fn engine_mut(&mut self) -> &mut E {
        &mut self.engine
    }

    /// Simulations run so far.
    pub fn simulations(&self) -> usize {
        self.simulations
    }

    /// Nodes expanded by simulations so far.
    pub fn expansions(&self) -> usize {
        self.expansions
    }

    /// Seconds spent per phase by [`Self::run`] so far.
    pub fn times(&self) -> PhaseTimes {
        self.times
    }

    /// Runs the search to its budget of simulations (see the module docs).
    pub fn run(&mut self, leaves: &mut dyn LeafValues) -> Result<(), SearchError> {
        let (updates, credit_per_round) = self.config.schedule();
        let mut credit = 0.0;
        loop {
            let t = Instant::now();
            for _ in 0..updates {
                self.engine.iterate(leaves)?;
            }
            self.times.updates += t.elapsed().as_secs_f64();
            if self.simulations >= self.config.simulations {
                return Ok(());
            }
            credit += credit_per_round;
            let t = Instant::now();
            while credit >= 1.0 && self.simulations < self.config.simulations {
                self.simulate(leaves)?;
                credit -= 1.0;
            }
            self.times.simulations += t.elapsed().as_secs_f64();
        }
    }

    /// The strategy blocks the search answers with ([`GtCfrConfig::final_policy`]).
    pub fn policy_blocks(&self) -> [Vec<f64>; 2] {
        match self.config.final_policy {
            Final::Average => self.engine.average_blocks(),
            Final::Current => self.engine.current_blocks(),
        }
    }

    /// One expansion simulation; returns whether it expanded a node (`leaves` is asked only
    /// for prior policies, with `policy_prior` set).
    pub fn simulate(&mut self, leaves: &mut dyn LeafValues) -> Result<bool, SearchError> {
        self.simulations += 1;
        let l = self.engine.layout().clone();
        let (p, pp) = (l.p, l.p * l.p);
        let g = self.growth_root;
        // Beliefs at the start node: the root ranges there, the latest sweep's reaches below.
        let (r0, r1) = if g == 0 {
            (self.engine.root_range(0), self.engine.root_range(1))
        } else {
            (
                &self.engine.reach(0)[g * p..(g + 1) * p],
                &self.engine.reach(1)[g * p..(g + 1) * p],
            )
        };
        let mut weights: Vec<f64> = (0..pp)
            .map(|j| {
                if l.joint_valid[g * pp + j] {
                    l.chance_reach[g * pp + j] * r0[j / p] * r1[j % p]
                } else {
                    0.0
                }
            })
            .collect();
        if !weights.iter().any(|&w| w > 0.0) {
            // The beliefs reach no history of the start node (a gadget may switch the
            // opponent's range off, or the current strategies avoid the node): grow by chance
            // alone.
            for (j, w) in weights.iter_mut().enumerate() {
                if l.joint_valid[g * pp + j] {
                    *w = l.chance_reach[g * pp + j];
                }
            }
        }
        if !weights.iter().any(|&w| w > 0.0) {
            return Err(SearchError::BadRange {
                player: 0,
                reason: "the start node of simulations holds no history".into(),
            });
        }
        let mut js = g * pp + self.rng.weighted(&weights);
        let mut n = g;
        loop {
            match l.kind[n] {
                TensorKind::Terminal | TensorKind::Leaf => return Ok(false),
                _ if !self.engine.is_expanded(n) => {
                    let grew = self.engine.expand(n);
                    if grew {
                        self.expansions += 1;
                    }
                    return Ok(grew);
                }
                TensorKind::Chance => {
                    let kids = self.child_histories(&l, n, js, None);
                    if kids.is_empty() {
                        return Ok(false);
                    }
                    let w: Vec<f64> = kids.iter().map(|&c| l.edge_prob[c]).collect();
                    js = kids[self.rng.weighted(&w)];
                }
                TensorKind::Decision(actor) => {
                    let k = self.select(&l, n, js, actor, leaves)?;
                    let kids = self.child_histories(&l, n, js, Some(k));
                    if kids.is_empty() {
                        return Ok(false);
                    }
                    js = kids[0];
                }
            }
            n = js / pp;
        }
    }

    /// Joint slots of the children of history `js` at node `n` (only those behind action index
    /// `action` when given).
    fn child_histories(
        &self,
        l: &TensorTree,
        n: usize,
        js: usize,
        action: Option<usize>,
    ) -> Vec<usize> {
        let pp = l.p * l.p;
        let c0 = l.first_child[n] as usize;
        let mut out = Vec::new();
        for c in c0..c0 + l.num_children[n] as usize {
            if action.is_some_and(|k| l.action_index[c] as usize != k) {
                continue;
            }
            for local in 0..pp {
                let cjs = c * pp + local;
                if l.joint_valid[cjs] && l.up_joint[cjs] as usize == js {
                    out.push(cjs);
                }
            }
        }
        out
    }

    /// The action index chosen at history `js` of decision node `n` by ½·PUCT + ½·CFR, with the
    /// visit count of the chosen action incremented.
    fn select(
        &mut self,
        l: &TensorTree,
        n: usize,
        js: usize,
        actor: Player,
        leaves: &mut dyn LeafValues,
    ) -> Result<usize, SearchError> {
        let (p, pp) = (l.p, l.p * l.p);
        let local = js - n * pp;
        let (x0, x1) = (local / p, local % p);
        let x = if actor == 0 { x0 } else { x1 };
        let d = l.decision_index[n] as usize;
        let row = (d * p + x) * l.a;
        let na = l.num_actions[actor][d] as usize;
        let allowed = self
            .config
            .top_k
            .filter(|&k| k < na)
            .map(|k| top_k_mask(self.engine.current_row(actor, d, x), k));
        let ok = |k: usize| allowed.as_ref().is_none_or(|m| m[k]);
        let k = if self.rng.next_f64() < 0.5 {
            // PUCT: Q normalised by the opponent's chance-weighted reach of this infostate.
            let opp = self.engine.reach(1 - actor);
            let mass: f64 = (0..p)
                .map(|y| {
                    let (a0, a1) = if actor == 0 { (x, y) } else { (y, x) };
                    let j = n * pp + a0 * p + a1;
                    if l.joint_valid[j] {
                        l.chance_reach[j] * opp[n * p + y]
                    } else {
                        0.0
                    }
                })
                .sum();
            let q = self.engine.action_values(actor, d, x);
            let visits = &self.visits[actor][row..row + na];
            let total: f64 = visits.iter().map(|&v| v as f64).sum();
            if self.config.policy_prior && !self.priors.contains_key(&n) {
                // The beliefs at the node from the latest sweep (the node was in the tree then).
                let q = Pbs {
                    node: l.public_node[n],
                    ranges: std::array::from_fn(|i| {
                        self.engine.reach(i)[n * p..(n + 1) * p].to_vec()
                    }),
                };
                let prior = leaves.policy_prior(&q, actor)?;
                self.priors.insert(n, prior);
            }
            let uniform = 1.0 / na as f64;
            let prior_row = self
                .priors
                .get(&n)
                .and_then(|o| o.as_ref())
                .and_then(|rows| rows.get(x))
                .filter(|r| r.len() == na);
            let mut best = 0;
            let mut best_score = f64::NEG_INFINITY;
            for k in (0..na).filter(|&k| ok(k)) {
                let qa = if mass > 0.0 { q[k] / mass } else { 0.0 };
                let prior = prior_row.map_or(uniform, |r| r[k]);
                let score = qa + self.config.puct * prior * total.sqrt() / (1.0 + visits[k] as f64);
                if score > best_score {
                    best_score = score;
                    best = k;
                }
            }
            best
        } else {
            let sigma = self.engine.current_row(actor, d, x);
            match &allowed {
                None => self.rng.weighted(sigma),
                Some(m) => {
                    let w: Vec<f64> = sigma
                        .iter()
                        .zip(m)
                        .map(|(&s, &on)| if on { s } else { 0.0 })
                        .collect();
                    self.rng.weighted(&w)
                }
            }
        };
        self.visits[actor][row + k] += 1;
        debug_assert!(l.infoset[actor][d * p + x] != NONE);
        Ok(k)
    }
}

/// The `k` entries of `sigma` with the highest values (ties: lower index first), as a mask.
pub(crate) fn top_k_mask(sigma: &[f64], k: usize) -> Vec<bool> {
    let mut order: Vec<usize> = (0..sigma.len()).collect();
    // Stable sort: equal probabilities keep index order.
    order.sort_by(|&a, &b| sigma[b].total_cmp(&sigma[a]));
    let mut mask = vec![false; sigma.len()];
    for &i in order.iter().take(k) {
        mask[i] = true;
    }
    mask
}

/// Answers exactly one evaluation with answers computed beforehand (a search's share of a
/// lock-step batch).
struct Stash(Option<Vec<[Vec<f64>; 2]>>);

impl LeafValues for Stash {
    fn evaluate(&mut self, queries: &[Pbs]) -> Result<Vec<[Vec<f64>; 2]>, SearchError> {
        let answers = self.0.take().ok_or_else(|| {
            SearchError::Leaf("lock-step: a second evaluation in one update".into())
        })?;
        if answers.len() != queries.len() {
            return Err(SearchError::Leaf(format!(
                "lock-step: {} answers gathered for {} queries",
                answers.len(),
                queries.len()
            )));
        }
        Ok(answers)
    }
}

/// Runs `searches` (any engine, alternating updates, equal `s` and `c`) to their budgets
/// in lock-step: every single update (one player's half-iteration) of all searches is done
/// together, their frontier queries answered by **one** call of `leaves` (one CVPN forward
/// for all searches); simulations run search by search in between (`leaves` answers prior
/// queries there, with `policy_prior`). The result is that of running each search alone with
/// the same evaluator when the evaluator answers each query independently of the others in
/// its call (asserted by the search tests). Returns the evaluator calls made for updates and
/// the time per phase.
pub fn run_lockstep<E: RegretEngine>(
    searches: &mut [GtCfr<E>],
    leaves: &mut dyn LeafValues,
) -> Result<LockstepStats, SearchError> {
    let mut stats = LockstepStats::default();
    let Some(first) = searches.first() else {
        return Ok(stats);
    };
    let cfg = first.config.clone();
    for g in searches.iter() {
        if g.config.simulations != cfg.simulations
            || g.config.expansions_per_update != cfg.expansions_per_update
        {
            return Err(SearchError::BadSetting {
                key: "s",
                value: g.config.simulations.to_string(),
                reason: "searches in lock-step need equal `s` and `c`".into(),
            });
        }
        if !g.engine.alternating() {
            return Err(SearchError::BadSetting {
                key: "spec",
                value: format!("{:?}", g.config.spec.updates),
                reason: "searches in lock-step need alternating updates".into(),
            });
        }
    }
    let (updates, credit_per_round) = cfg.schedule();
    let mut credit = 0.0;
    loop {
        for _ in 0..updates {
            for p in 0..2 {
                let t = Instant::now();
                let pending: Vec<Vec<Pbs>> = searches
                    .iter_mut()
                    .map(|g| g.engine.pending_queries())
                    .collect();
                let all: Vec<Pbs> = pending.iter().flatten().cloned().collect();
                let t = lap(t, &mut stats.times.gather);
                let mut answers = if all.is_empty() {
                    Vec::new()
                } else {
                    stats.calls += 1;
                    stats.queries += all.len() as u64;
                    stats.max_batch = stats.max_batch.max(all.len());
                    leaves.evaluate(&all)?
                };
                let t = lap(t, &mut stats.times.evaluate);
                if answers.len() != all.len() {
                    return Err(SearchError::Leaf(format!(
                        "{} answers for {} queries",
                        answers.len(),
                        all.len()
                    )));
                }
                // Split the answers back, last search first.
                let mut shares = Vec::with_capacity(searches.len());
                for q in pending.iter().rev() {
                    shares.push(answers.split_off(answers.len() - q.len()));
                }
                for (g, share) in searches.iter_mut().zip(shares.into_iter().rev()) {
                    g.engine.update_player(p, &mut Stash(Some(share)))?;
                }
                lap(t, &mut stats.times.updates);
            }
        }
        if searches.iter().all(|g| g.simulations >= cfg.simulations) {
            return Ok(stats);
        }
        credit += credit_per_round;
        let t = Instant::now();
        while credit >= 1.0 && searches.iter().any(|g| g.simulations < cfg.simulations) {
            for g in searches.iter_mut() {
                if g.simulations < cfg.simulations {
                    g.simulate(leaves)?;
                }
            }
            credit -= 1.0;
        }
        lap(t, &mut stats.times.simulations);
    }
}

/// Runs `searches` to their budgets: in lock-step ([`run_lockstep`]) when their updates
/// alternate, one after the other otherwise (simultaneous updates cannot be split per player).
pub fn run_together<E: RegretEngine>(
    searches: &mut [GtCfr<E>],
    leaves: &mut dyn LeafValues,
) -> Result<(), SearchError> {
    if searches.iter().all(|g| g.engine.alternating()) {
        run_lockstep(searches, leaves)?;
    } else {
        for g in searches.iter_mut() {
            g.run(leaves)?;
        }
    }
    Ok(())
}

/// Adds the seconds since `t` to `acc` and returns now.
fn lap(t: Instant, acc: &mut f64) -> Instant {
    let now = Instant::now();
    *acc += (now - t).as_secs_f64();
    now
}
