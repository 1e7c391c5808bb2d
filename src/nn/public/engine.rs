//! GT-CFR's regret engine as burn tensor operations ([`TensorEngine`]): the tensor counterpart
//! of [`crate::search::ScalarEngine`], on the same union layout ([`TensorTree`] of the whole
//! subtree + expanded mask), with the same arithmetic and update order.
//!
//! One single update of player `p` (half an alternating iteration) is, on the device:
//! 1. both players' reaches top-down, one `select`-multiply-`slice_assign` per level (the index
//!    tables of [`super::cfr::BatchedCfr`]), times the in-tree mask of the slots (nodes outside
//!    the grown tree keep reach 0, as in the scalar engine);
//! 2. `p`'s values: terminal nodes as one batched matrix product of the opponent's reaches with
//!    the payoff matrices, masked by the in-tree mask; frontier nodes from the [`LeafValues`]
//!    evaluator; then bottom-up one `select`-multiply-`select_assign(Add)` per level, each
//!    child's contribution multiplied by its in-tree mask;
//! 3. action values gathered into `[D·P, A]` blocks, instantaneous regrets, regret rule,
//!    average strategy and regret matching as elementwise operations, restricted to the rows
//!    of expanded decisions by a mask (the other rows keep zero regrets and uniform strategies,
//!    as in the scalar engine);
//! 4. averaged root and slot counterfactual values.
//!
//! The structure (expanded set, frontier, in-tree test) is kept on the host by a shadow
//! [`ScalarEngine`] that never iterates; its masks are uploaded again after expansions. The
//! one-shot analyses of a finished search ([`RegretEngine::reaches_under`],
//! [`RegretEngine::values_under`], [`RegretEngine::best_response_values`]) depend only on that
//! structure and the given strategies, so the shadow computes them in `f64` on the host.
//!
//! # Device→host traffic
//! * Frontier queries: the evaluator takes host [`Pbs`]es, so each single update with a
//!   non-empty frontier reads both players' reaches at the frontier slots (one read of
//!   `2·F·P` numbers), as the scalar engine gathers them from its reach arrays.
//! * A gadget reads the `R·P` root values of its player after that player's update (the gadget
//!   itself is host code, [`Gadget`]).
//! * The trait's accessors return `&[f64]`: current strategies, action values, reaches and
//!   root values are mirrored on the host by **one** read of all of them together, made lazily
//!   by the first accessor call after an update (so at most one per iterate; none while the
//!   caller only iterates).

use super::cfr::{Tables, apply_regret_rule, take};
use super::{Ctx, floats, instant_regrets, ints, range_times, regret_match, to_f64};
use crate::cfr::{Iteration, SolverSpec, Updates};
use crate::game::Player;
use crate::search::engine::{average_blocks, live_rows, row_span, slot_means, weighted_means};
use crate::search::{
    EngineBuilder, Gadget, LeafValues, Pbs, RegretEngine, ScalarEngine, SearchError,
};
use crate::tree::tensor::TensorTree;
use burn::tensor::{IndexingUpdateOp, Int, Tensor};
use std::cell::OnceCell;
use std::sync::Arc;

/// Masks of the grown tree (rebuilt after expansions).
struct Masks {
    /// Per level: `[1, width]` in-tree mask of the level's child slots.
    levels: Vec<Tensor<2>>,
    /// `[1, N·P + 1]` in-tree mask of the reach slots (the zero column 0).
    reach: Tensor<2>,
    /// `[1, T·P]` in-tree mask of the terminal slots.
    term: Tensor<2>,
    /// `[1, N]` in-tree mask of the nodes.
    nodes: Tensor<2>,
    /// Per player `[1, D·P, A]`: the legal actions of rows of expanded decisions.
    active: [Tensor<3>; 2],
    /// Frontier nodes (layout ids) and their `F·P` slots.
    frontier: Vec<usize>,
    frontier_slots: Option<Tensor<1, Int>>,
}

/// What the trait's accessors read (see the module docs).
#[derive(Debug)]
struct Mirror {
    current: [Vec<f64>; 2],
    q: [Vec<f64>; 2],
    reach: [Vec<f64>; 2],
    root_cfvs: [Vec<f64>; 2],
}

/// The tensor regret engine (see the module docs).
pub struct TensorEngine {
    /// Structure shadow: layout, root ranges, expanded set (never iterates).
    host: ScalarEngine,
    layout: Arc<TensorTree>,
    spec: SolverSpec,
    ctx: Ctx,
    tables: Tables,
    roots: usize,
    gadget: Option<Gadget>,
    /// Root ranges `[1, R·P]`.
    root: [Tensor<2>; 2],
    masks: Option<Masks>,
    iteration: u64,
    /// Per player `[1, D·P, A]` (`D` at least 1).
    regrets: [Tensor<3>; 2],
    cumulative: [Tensor<3>; 2],
    current: [Tensor<3>; 2],
    /// Latest reaches (`[1, N·P + 1]`), action values and root values per player.
    reach: [Tensor<2>; 2],
    q: [Tensor<3>; 2],
    root_values: [Tensor<2>; 2],
    /// Reaches (and frontier queries) of the current strategies from [`Self::pending`], for
    /// the next single update.
    fresh: Option<([Tensor<2>; 2], Vec<Pbs>)>,
    cfv_sum: [Tensor<2>; 2],
    cfv_weight: [f64; 2],
    slot_cfv_sum: [Tensor<2>; 2],
    slot_cfv_weight: [Tensor<2>; 2],
    leaf_queries: u64,
    reads: u64,
    mirror: OnceCell<Mirror>,
}

impl std::fmt::Debug for TensorEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorEngine")
            .field("nodes", &self.layout.len())
            .field("iteration", &self.iteration)
            .field("device", &self.ctx.device)
            .field("dtype", &self.ctx.dtype)
            .finish()
    }
}

impl TensorEngine {
    /// An engine at iteration 0 (uniform strategies) on `layout` with root ranges
    /// `root_range[i]` (`R x P` entries), tensors in `ctx`; only the roots are expanded.
    /// Every [`SolverSpec`] the scalar engine runs is supported; `f64` needs the CPU backend.
    pub fn new(
        layout: Arc<TensorTree>,
        spec: SolverSpec,
        root_range: [Vec<f64>; 2],
        ctx: &Ctx,
    ) -> Result<TensorEngine, SearchError> {
        let host = ScalarEngine::new(layout.clone(), spec, root_range)?;
        let (p, a, n) = (layout.p, layout.a, layout.len());
        if !layout.leaves.is_empty() {
            // Depth-limit leaves are frontier nodes that can never be expanded; the scalar
            // engine handles them, the tables here assume a full-depth layout.
            return Err(SearchError::BadSetting {
                key: "engine",
                value: "tensor".into(),
                reason: "the tensor engine needs a full-depth layout (no depth-limit leaves)"
                    .into(),
            });
        }
        let roots = layout.levels[0].1 as usize;
        let tables = Tables::new(&layout, ctx);
        let rows = |i: usize| layout.decisions[i].len().max(1) * p;
        let zeros3 = |i: usize| Tensor::<3>::zeros([1, rows(i), a], ctx);
        let root = std::array::from_fn(|i| {
            let r = host.root_range(i);
            floats(r, [1, r.len()], ctx)
        });
        let current = [
            tables.masks.uniform[0].clone(),
            tables.masks.uniform[1].clone(),
        ];
        Ok(TensorEngine {
            roots,
            gadget: None,
            root,
            masks: None,
            iteration: 0,
            regrets: [zeros3(0), zeros3(1)],
            cumulative: [zeros3(0), zeros3(1)],
            current,
            reach: std::array::from_fn(|_| Tensor::zeros([1, n * p + 1], ctx)),
            q: [zeros3(0), zeros3(1)],
            root_values: std::array::from_fn(|_| Tensor::zeros([1, roots * p], ctx)),
            fresh: None,
            cfv_sum: std::array::from_fn(|_| Tensor::zeros([1, roots * p], ctx)),
            cfv_weight: [0.0; 2],
            slot_cfv_sum: std::array::from_fn(|_| Tensor::zeros([1, n * p], ctx)),
            slot_cfv_weight: std::array::from_fn(|_| Tensor::zeros([1, n], ctx)),
            leaf_queries: 0,
            reads: 0,
            mirror: OnceCell::new(),
            tables,
            ctx: ctx.clone(),
            spec,
            layout,
            host,
        })
    }

    /// Leaf queries answered so far (one per frontier node per evaluation).
    pub fn leaf_queries(&self) -> u64 {
        self.leaf_queries
    }

    /// Device→host reads made so far (frontier queries, gadget values, mirrors, analyses).
    pub fn reads(&self) -> u64 {
        self.reads
    }

    /// Player `p`'s cumulative regrets as blocks (`[D x P x A]`; one read).
    pub fn regret_blocks(&self, p: Player) -> Vec<f64> {
        self.blocks_of(&self.regrets[p], p)
    }

    fn blocks_of(&self, t: &Tensor<3>, p: Player) -> Vec<f64> {
        let l = &*self.layout;
        let mut v = to_f64(t.clone());
        v.truncate(l.decisions[p].len() * l.p * l.a);
        v
    }

    /// Structure changed (expansion, gadget, root range): masks and cached reaches are stale.
    fn invalidate(&mut self) {
        self.masks = None;
        self.fresh = None;
        self.mirror = OnceCell::new();
    }

    fn masks(&mut self) -> &Masks {
        if self.masks.is_none() {
            self.masks = Some(self.build_masks());
        }
        self.masks.as_ref().expect("built above")
    }

    fn build_masks(&self) -> Masks {
        let l = &*self.layout;
        let (p, a, n) = (l.p, l.a, l.len());
        let ctx = &self.ctx;
        let in_tree: Vec<bool> = (0..n).map(|k| self.host.in_tree(k)).collect();
        let one = |b: bool| if b { 1.0 } else { 0.0 };
        let levels = l
            .levels
            .windows(2)
            .map(|w| {
                let (c0, c1) = (w[1].0 as usize, w[1].1 as usize);
                let m: Vec<f64> = (c0 * p..c1 * p).map(|s| one(in_tree[s / p])).collect();
                floats(&m, [1, m.len()], ctx)
            })
            .collect();
        let mut reach: Vec<f64> = (0..n * p).map(|s| one(in_tree[s / p])).collect();
        reach.push(0.0);
        let term: Vec<f64> = l
            .terminals
            .iter()
            .flat_map(|&t| std::iter::repeat_n(one(in_tree[t as usize]), p))
            .collect();
        let term = if term.is_empty() { vec![0.0; p] } else { term };
        let nodes: Vec<f64> = in_tree.iter().map(|&b| one(b)).collect();
        let active = std::array::from_fn(|i| {
            let d = l.decisions[i].len();
            let mut m = vec![0.0; d.max(1) * p * a];
            for (di, &node) in l.decisions[i].iter().enumerate() {
                if !self.host.is_expanded(node as usize) {
                    continue;
                }
                let na = l.num_actions[i][di] as usize;
                for (_, row) in live_rows(l, i, di) {
                    m[row..row + na].fill(1.0);
                }
            }
            floats(&m, [1, d.max(1) * p, a], ctx)
        });
        let frontier = self.host.frontier();
        let slots: Vec<u32> = frontier
            .iter()
            .flat_map(|&f| (0..p).map(move |x| (f * p + x) as u32))
            .collect();
        Masks {
            levels,
            reach: floats(&reach, [1, n * p + 1], ctx),
            term: floats(&term, [1, term.len()], ctx),
            nodes: floats(&nodes, [1, n], ctx),
            active,
            frontier_slots: (!slots.is_empty()).then(|| ints(&slots, &ctx.device)),
            frontier,
        }
    }

    /// `[σ₀, σ₁, 1]` flattened: what the level tables' `sig` entries index.
    fn strategy_vector(&self) -> Tensor<2> {
        Tensor::cat(
            vec![
                self.current[0].clone().reshape([1, -1]),
                self.current[1].clone().reshape([1, -1]),
                Tensor::ones([1, 1], &self.ctx),
            ],
            1,
        )
    }

    /// Both players' reaches at every slot (`[1, N·P + 1]`), zero outside the tree.
    fn reaches(&mut self, sigma: &Tensor<2>) -> [Tensor<2>; 2] {
        let (p, n) = (self.layout.p, self.layout.len());
        self.masks();
        let m = self.masks.as_ref().expect("built");
        std::array::from_fn(|i| {
            let mut r: Tensor<2> = Tensor::zeros([1, n * p + 1], &self.ctx);
            let rp = self.root[i].dims()[1];
            r = r.slice_assign([0..1, 0..rp], self.root[i].clone());
            for level in &self.tables.levels[i] {
                let vals = r
                    .clone()
                    .select(1, level.src.clone())
                    .mul(sigma.clone().select(1, level.sig.clone()));
                r = r.slice_assign([0..1, level.range.0..level.range.1], vals);
            }
            r * m.reach.clone()
        })
    }

    /// The frontier queries under `reach` (one read when the frontier is non-empty).
    fn queries(&mut self, reach: &[Tensor<2>; 2]) -> Vec<Pbs> {
        self.masks();
        let m = self.masks.as_ref().expect("built");
        let Some(slots) = &m.frontier_slots else {
            return Vec::new();
        };
        let p = self.layout.p;
        let f = m.frontier.len();
        let both = to_f64(Tensor::cat(
            vec![
                reach[0].clone().select(1, slots.clone()),
                reach[1].clone().select(1, slots.clone()),
            ],
            1,
        ));
        self.reads += 1;
        m.frontier
            .iter()
            .enumerate()
            .map(|(k, &node)| Pbs {
                node: self.layout.public_node[node],
                ranges: std::array::from_fn(|i| {
                    both[(i * f + k) * p..(i * f + k + 1) * p].to_vec()
                }),
            })
            .collect()
    }

    /// Player `p`'s values at every slot (`[1, N·P + 2]`) under `sigma` and `reach`.
    fn values(
        &mut self,
        p: Player,
        reach: &[Tensor<2>; 2],
        queries: &[Pbs],
        sigma: &Tensor<2>,
        leaves: &mut dyn LeafValues,
    ) -> Result<Tensor<2>, SearchError> {
        let l = self.layout.clone();
        let (pp, n) = (l.p, l.len());
        let mut v: Tensor<2> = Tensor::zeros([1, n * pp + 2], &self.ctx);
        let m = self.masks.as_ref().expect("reaches built the masks");
        let tb = &self.tables;
        let nt = l.terminals.len();
        if nt > 0 {
            let opp = reach[1 - p]
                .clone()
                .select(1, tb.term_slots.clone())
                .reshape([1, nt, pp]);
            let tv = range_times(opp, tb.payoff[p].clone()).reshape([1, nt * pp]) * m.term.clone();
            v = v.select_assign(1, tb.term_slots.clone(), tv, IndexingUpdateOp::Add);
        }
        if let Some(slots) = &m.frontier_slots {
            let answers = leaves.evaluate(queries)?;
            self.leaf_queries += queries.len() as u64;
            if answers.len() != queries.len() {
                return Err(SearchError::Leaf(format!(
                    "{} answers for {} queries",
                    answers.len(),
                    queries.len()
                )));
            }
            let mut vals = vec![0.0; m.frontier.len() * pp];
            for (k, (&node, ans)) in m.frontier.iter().zip(&answers).enumerate() {
                if ans[p].len() != pp || ans[p].iter().any(|x| !x.is_finite()) {
                    return Err(SearchError::Leaf(format!(
                        "public node {}: values must be {pp} finite numbers",
                        l.public_node[node]
                    )));
                }
                for x in 0..pp {
                    if l.valid[p][node * pp + x] {
                        vals[k * pp + x] = ans[p][x];
                    }
                }
            }
            let lv = floats(&vals, [1, vals.len()], &self.ctx);
            v = v.select_assign(1, slots.clone(), lv, IndexingUpdateOp::Add);
        }
        for (level, mask) in tb.levels[p].iter().zip(&m.levels).rev() {
            let contrib = v
                .clone()
                .slice([0..1, level.range.0..level.range.1])
                .mul(sigma.clone().select(1, level.sig.clone()))
                .mul(mask.clone());
            v = v.select_assign(1, level.dst.clone(), contrib, IndexingUpdateOp::Add);
        }
        Ok(v)
    }

    /// Action values, regrets, average strategy and regret matching of player `p`.
    fn update(&mut self, p: Player, v: &Tensor<2>, own_reach: &Tensor<2>, weight: f64, t: f64) {
        let l = &*self.layout;
        let rows = l.decisions[p].len().max(1) * l.p;
        let width = rows * l.a;
        let tb = &self.tables;
        let m = self.masks.as_ref().expect("reaches built the masks");
        let q: Tensor<2> = Tensor::zeros([1, width + 1], &self.ctx);
        let q = q
            .select_assign(
                1,
                tb.q_dst[p].clone(),
                v.clone().select(1, tb.q_src[p].clone()),
                IndexingUpdateOp::Add,
            )
            .slice([0..1, 0..width])
            .reshape([1, rows, l.a]);
        let sigma = self.current[p].clone();
        let active = m.active[p].clone();
        let d = instant_regrets(q.clone(), sigma.clone(), active.clone(), self.ctx.noise());
        let own = own_reach
            .clone()
            .select(1, tb.own[p].clone())
            .reshape([1, rows, 1]);
        let cum = take(&mut self.cumulative[p]);
        self.cumulative[p] = cum + own.mul_scalar(weight) * sigma * active;
        let r = apply_regret_rule(take(&mut self.regrets[p]) + d, self.spec.regrets, t);
        self.current[p] = regret_match(r.clone(), self.tables.masks.uniform[p].clone());
        self.regrets[p] = r;
        self.q[p] = q;
    }

    /// Keeps `p`'s root values, averages its CFVs and drives the gadget.
    fn record(&mut self, p: Player, v: &Tensor<2>, weight: f64) {
        let (pp, n) = (self.layout.p, self.layout.len());
        let rs = self.roots * pp;
        let m = self.masks.as_ref().expect("reaches built the masks");
        let root_v = v.clone().slice([0..1, 0..rs]);
        self.cfv_sum[p] = self.cfv_sum[p].clone() + root_v.clone().mul_scalar(weight);
        self.cfv_weight[p] += weight;
        self.slot_cfv_sum[p] =
            self.slot_cfv_sum[p].clone() + v.clone().slice([0..1, 0..n * pp]).mul_scalar(weight);
        self.slot_cfv_weight[p] =
            self.slot_cfv_weight[p].clone() + m.nodes.clone().mul_scalar(weight);
        self.root_values[p] = root_v.clone();
        if let Some(g) = self.gadget.as_mut()
            && g.player() == p
        {
            let follow = to_f64(root_v);
            self.reads += 1;
            g.update(&follow);
            let range = g.range();
            self.root[p] = floats(&range, [1, range.len()], &self.ctx);
            self.host
                .set_root_range(p, range)
                .expect("the gadget range has the root's length");
        }
    }

    /// Reaches and queries under the current strategies (from the cache when fresh).
    fn pending(&mut self) -> ([Tensor<2>; 2], Vec<Pbs>) {
        if let Some(f) = self.fresh.take() {
            return f;
        }
        let sigma = self.strategy_vector();
        let reach = self.reaches(&sigma);
        let q = self.queries(&reach);
        (reach, q)
    }

    fn single(&mut self, p: Player, leaves: &mut dyn LeafValues) -> Result<(), SearchError> {
        let it = Iteration::single(&mut self.iteration, p, self.spec.averaging);
        self.turn(&[p], it.t as f64, it.weight, leaves)
    }

    /// One turn of an iteration (`cfr::Iteration`): the values of each of `players` under the
    /// current strategies, then their regret and average updates.
    fn turn(
        &mut self,
        players: &[Player],
        t: f64,
        weight: f64,
        leaves: &mut dyn LeafValues,
    ) -> Result<(), SearchError> {
        let (reach, queries) = self.pending();
        let sigma = self.strategy_vector();
        let values = players
            .iter()
            .map(|&p| self.values(p, &reach, &queries, &sigma, leaves))
            .collect::<Result<Vec<_>, SearchError>>()?;
        for (&p, v) in players.iter().zip(&values) {
            self.update(p, v, &reach[p], weight, t);
        }
        for (&p, v) in players.iter().zip(&values) {
            self.record(p, v, weight);
        }
        self.reach = reach;
        self.mirror = OnceCell::new();
        Ok(())
    }

    fn mirror(&self) -> &Mirror {
        self.mirror.get_or_init(|| {
            let l = &*self.layout;
            let (p, a, n) = (l.p, l.a, l.len());
            let rs = self.roots * p;
            let parts = vec![
                self.current[0].clone().reshape([1, -1]),
                self.current[1].clone().reshape([1, -1]),
                self.q[0].clone().reshape([1, -1]),
                self.q[1].clone().reshape([1, -1]),
                self.reach[0].clone(),
                self.reach[1].clone(),
                self.root_values[0].clone(),
                self.root_values[1].clone(),
            ];
            let all = to_f64(Tensor::cat(parts, 1));
            let full = |i: usize| l.decisions[i].len().max(1) * p * a;
            let used = |i: usize| l.decisions[i].len() * p * a;
            let mut at = 0;
            let mut next = |len: usize, keep: usize| {
                let out = all[at..at + keep].to_vec();
                at += len;
                out
            };
            let current = [next(full(0), used(0)), next(full(1), used(1))];
            let q = [next(full(0), used(0)), next(full(1), used(1))];
            let reach = [next(n * p + 1, n * p), next(n * p + 1, n * p)];
            let root_cfvs = [next(rs, rs), next(rs, rs)];
            Mirror {
                current,
                q,
                reach,
                root_cfvs,
            }
        })
    }
}

impl RegretEngine for TensorEngine {
    fn layout(&self) -> &Arc<TensorTree> {
        &self.layout
    }

    fn is_expanded(&self, n: usize) -> bool {
        self.host.is_expanded(n)
    }

    fn in_tree(&self, n: usize) -> bool {
        self.host.in_tree(n)
    }

    fn expand(&mut self, n: usize) -> bool {
        let grew = self.host.expand(n);
        if grew {
            self.invalidate();
        }
        grew
    }

    fn iterate(&mut self, leaves: &mut dyn LeafValues) -> Result<(), SearchError> {
        let it = Iteration::new(self.iteration + 1, self.spec.updates, self.spec.averaging);
        self.iteration = it.t;
        for &turn in it.turns {
            let players: Vec<Player> = Iteration::updating(turn).collect();
            self.turn(&players, it.t as f64, it.weight, leaves)?;
        }
        Ok(())
    }

    fn iteration(&self) -> u64 {
        self.iteration
    }

    fn current_row(&self, p: Player, d: usize, x: usize) -> &[f64] {
        &self.mirror().current[p][row_span(&self.layout, p, d, x)]
    }

    fn action_values(&self, p: Player, d: usize, x: usize) -> &[f64] {
        &self.mirror().q[p][row_span(&self.layout, p, d, x)]
    }

    fn reach(&self, p: Player) -> &[f64] {
        &self.mirror().reach[p]
    }

    fn root_range(&self, p: Player) -> &[f64] {
        self.host.root_range(p)
    }

    fn root_cfvs(&self, p: Player) -> &[f64] {
        &self.mirror().root_cfvs[p]
    }

    fn average_root_cfvs(&self, p: Player) -> Vec<f64> {
        weighted_means(&to_f64(self.cfv_sum[p].clone()), self.cfv_weight[p])
    }

    fn average_blocks(&self) -> [Vec<f64>; 2] {
        std::array::from_fn(|i| {
            let cum = self.blocks_of(&self.cumulative[i], i);
            average_blocks(&self.layout, i, &cum, self.mirror().current[i].clone())
        })
    }

    fn current_blocks(&self) -> [Vec<f64>; 2] {
        self.mirror().current.clone()
    }

    fn set_gadget(&mut self, gadget: Gadget) -> Result<(), SearchError> {
        self.host.set_gadget(gadget.clone())?;
        let p = gadget.player();
        self.root[p] = floats(
            self.host.root_range(p),
            [1, self.roots * self.layout.p],
            &self.ctx,
        );
        self.gadget = Some(gadget);
        self.invalidate();
        Ok(())
    }

    fn expand_all(&mut self) {
        self.host.expand_all();
        self.invalidate();
    }

    fn frontier(&self) -> Vec<usize> {
        self.host.frontier()
    }

    fn alternating(&self) -> bool {
        matches!(self.spec.updates, Updates::Alternating)
    }

    fn update_player(&mut self, p: Player, leaves: &mut dyn LeafValues) -> Result<(), SearchError> {
        if !self.alternating() {
            return Err(SearchError::BadSetting {
                key: "spec",
                value: format!("{:?}", self.spec.updates),
                reason: "single updates need alternating updates".into(),
            });
        }
        self.single(p, leaves)
    }

    fn pending_queries(&mut self) -> Vec<Pbs> {
        let (reach, queries) = self.pending();
        self.fresh = Some((reach, queries.clone()));
        queries
    }

    fn average_cfvs(&self, p: Player) -> Vec<f64> {
        let sum = to_f64(self.slot_cfv_sum[p].clone());
        let w = to_f64(self.slot_cfv_weight[p].clone());
        slot_means(&sum, &w, self.layout.p)
    }

    fn reaches_under(&mut self, blocks: &[Vec<f64>; 2]) -> [Vec<f64>; 2] {
        self.host.reaches_under(blocks)
    }

    fn values_under(
        &mut self,
        blocks: &[Vec<f64>; 2],
        leaves: &mut dyn LeafValues,
    ) -> Result<[Vec<f64>; 2], SearchError> {
        self.host.values_under(blocks, leaves)
    }

    fn best_response_values(
        &mut self,
        p: Player,
        blocks: &[Vec<f64>; 2],
        leaves: &mut dyn LeafValues,
    ) -> Result<Vec<f64>, SearchError> {
        self.host.best_response_values(p, blocks, leaves)
    }
}

/// Builds [`TensorEngine`]s in one context (see [`EngineBuilder`]).
#[derive(Clone, Debug)]
pub struct TensorEngineBuilder {
    ctx: Ctx,
}

impl TensorEngineBuilder {
    /// Engines on `ctx`'s device and precision (`f64` only on the CPU backend).
    pub fn new(ctx: Ctx) -> TensorEngineBuilder {
        TensorEngineBuilder { ctx }
    }

    /// The context the engines use.
    pub fn ctx(&self) -> &Ctx {
        &self.ctx
    }
}

impl EngineBuilder for TensorEngineBuilder {
    fn name(&self) -> &str {
        "tensor"
    }

    fn build(
        &self,
        layout: Arc<TensorTree>,
        spec: SolverSpec,
        root_range: [Vec<f64>; 2],
    ) -> Result<Box<dyn RegretEngine + Send>, SearchError> {
        Ok(Box::new(TensorEngine::new(
            layout, spec, root_range, &self.ctx,
        )?))
    }
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
