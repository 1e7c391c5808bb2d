//! Full-width batched CFR over a [`TensorTree`] (see the parent module).
//!
//! Each player's reaches live in one `[B, N·P + 1]` tensor (slot `n·P + x`, plus a zero
//! column that invalid slots read) and its counterfactual values in a `[B, N·P + 2]` tensor
//! (plus a sink column that invalid slots write to, and a zero column). One iteration for the
//! updating player `p`:
//! 1. reaches top-down, one `select`-multiply-`slice_assign` per level and player: a child slot
//!    takes its parent slot's reach, times the acting player's action probability;
//! 2. values of terminal nodes as one batched matrix product `[B, T, 1, P] x [1, T, P, P]` of
//!    the opponent's ranges with the chance-weighted payoff matrices, and of depth-limit leaves
//!    from the [`LeafEvaluator`];
//! 3. values bottom-up, one `select`-multiply-`select_assign(Add)` per level;
//! 4. action values of all of `p`'s infosets gathered into `[B, D·P, A]` blocks, then regrets,
//!    average strategy and regret matching as elementwise operations on those blocks.
//!
//! The arithmetic and the update order are those of [`crate::cfr::TabularSolver`] (alternating
//! updates recompute the reaches after player 0's update), so batch element `b` reproduces the
//! tabular solver up to `f32` rounding.

use super::{
    BlockMasks, Ctx, LeafEvaluator, floats, instant_regrets, ints, payoff_tensors, range_times,
    regret_match, to_f64,
};
use crate::cfr::{Iteration, RegretRule, SolverSpec};
use crate::tree::TreePolicy;
use crate::tree::tensor::{TensorKind, TensorTree};
use crate::tree::{NONE, PublicTree};
use burn::tensor::{IndexingUpdateOp, Int, Tensor};
use std::sync::Arc;

/// Index tables of one level for one player.
pub(super) struct Level {
    /// Child slots `c0·P .. c1·P`.
    pub range: (usize, usize),
    /// Parent slot of each child slot (the zero column if invalid), for reaches.
    pub src: Tensor<1, Int>,
    /// Parent slot of each child slot (the sink column if invalid), for values.
    pub dst: Tensor<1, Int>,
    /// Entry of the strategy vector multiplying each child slot (the constant-one entry
    /// unless this player acts at the parent).
    pub sig: Tensor<1, Int>,
}

/// Static index tensors of a layout (shared with the search engine, [`super::engine`]).
pub(super) struct Tables {
    pub levels: [Vec<Level>; 2],
    /// Slots of terminal nodes (`[T·P]`) and their payoff tensors.
    pub term_slots: Tensor<1, Int>,
    pub payoff: [Tensor<4>; 2],
    pub leaf_slots: Tensor<1, Int>,
    /// Per player: the child slots feeding each action value and the block entry they feed.
    pub q_src: [Tensor<1, Int>; 2],
    pub q_dst: [Tensor<1, Int>; 2],
    /// Per player: the slot of each `(decision, x)` (own reach).
    pub own: [Tensor<1, Int>; 2],
    pub masks: BlockMasks,
}

/// Batched full-width CFR (see the module docs).
pub struct BatchedCfr {
    tree: Arc<PublicTree>,
    layout: Arc<TensorTree>,
    spec: SolverSpec,
    ctx: Ctx,
    batch: usize,
    tables: Tables,
    leaves: Option<Box<dyn LeafEvaluator>>,
    /// Root ranges `[B, P]` per player.
    root: [Tensor<2>; 2],
    iteration: u64,
    /// Per player `[B, D·P, A]`.
    regrets: [Tensor<3>; 2],
    cumulative: [Tensor<3>; 2],
    current: [Tensor<3>; 2],
    /// Reaches of each player under its current strategy, while it is unchanged.
    reach_cache: [Option<Tensor<2>>; 2],
}

/// Errors setting up a batched solver.
#[derive(Debug, thiserror::Error)]
pub enum BatchedError {
    #[error("the layout has depth-limit leaves but no leaf evaluator was given")]
    MissingLeafEvaluator,
    #[error("root ranges of player {player} have {got} entries; expected batch x P = {want}")]
    RootRanges {
        player: usize,
        got: usize,
        want: usize,
    },
    #[error("batch must be at least 1")]
    EmptyBatch,
    #[error("{0}")]
    Unsupported(String),
}

impl BatchedCfr {
    /// A solver at iteration 0 (uniform strategies) for `batch` copies of the layout's roots
    /// (`R` = `layout.levels[0]` roots: one public state, or a forest of several).
    /// `root_ranges[i]` holds `batch x R x P` reaches of player `i` at the roots (`None`: 1 at
    /// every valid private state, the right choice at the game's root).
    pub fn new(
        tree: Arc<PublicTree>,
        layout: Arc<TensorTree>,
        spec: SolverSpec,
        batch: usize,
        root_ranges: Option<[Vec<f64>; 2]>,
        leaves: Option<Box<dyn LeafEvaluator>>,
        ctx: &Ctx,
    ) -> Result<BatchedCfr, BatchedError> {
        if batch == 0 {
            return Err(BatchedError::EmptyBatch);
        }
        if !layout.leaves.is_empty() && leaves.is_none() {
            return Err(BatchedError::MissingLeafEvaluator);
        }
        let p = layout.p;
        let rp = layout.levels[0].1 as usize * p;
        let root = match root_ranges {
            Some(r) => {
                for (i, v) in r.iter().enumerate() {
                    if v.len() != batch * rp {
                        return Err(BatchedError::RootRanges {
                            player: i,
                            got: v.len(),
                            want: batch * rp,
                        });
                    }
                    if v.iter().any(|x| !x.is_finite() || *x < 0.0) {
                        return Err(BatchedError::Unsupported(format!(
                            "root ranges of player {i} must be finite and non-negative"
                        )));
                    }
                }
                r
            }
            None => std::array::from_fn(|i| {
                let row: Vec<f64> = (0..rp)
                    .map(|s| if layout.valid[i][s] { 1.0 } else { 0.0 })
                    .collect();
                row.repeat(batch)
            }),
        };
        let root = [
            floats(&root[0], [batch, rp], ctx),
            floats(&root[1], [batch, rp], ctx),
        ];
        let tables = Tables::new(&layout, ctx);
        let zeros =
            |i: usize| Tensor::zeros([batch, layout.decisions[i].len().max(1) * p, layout.a], ctx);
        let current = [
            tables.masks.uniform[0].clone().repeat_dim(0, batch),
            tables.masks.uniform[1].clone().repeat_dim(0, batch),
        ];
        Ok(BatchedCfr {
            tree,
            spec,
            ctx: ctx.clone(),
            batch,
            leaves,
            root,
            iteration: 0,
            regrets: [zeros(0), zeros(1)],
            cumulative: [zeros(0), zeros(1)],
            current,
            reach_cache: [None, None],
            tables,
            layout,
        })
    }

    /// Batch size.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Iterations done.
    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    /// The uniform policy of the whole game (the base the policies are written over).
    pub(crate) fn uniform(&self) -> TreePolicy {
        crate::tree::uniform_tree_policy(&self.tree)
    }

    /// The layout it solves.
    pub fn layout(&self) -> &Arc<TensorTree> {
        &self.layout
    }

    /// Runs one iteration for every batch element.
    pub fn iterate(&mut self) {
        self.iteration += 1;
        let it = Iteration::new(self.iteration, self.spec.updates, self.spec.averaging);
        let t = it.t as f64;
        // Alternating: player 1's update sees player 0's new strategy; only player 0's reaches
        // change in between (the cache keeps player 1's), and across iterations only player
        // 1's.
        for &turn in it.turns {
            let sigma = self.strategy_vector();
            let reach = self.reaches(&sigma);
            let values: Vec<_> = Iteration::updating(turn)
                .map(|p| (p, self.values(p, &reach, &sigma)))
                .collect();
            for (p, v) in values {
                self.update(p, v, &reach[p], it.weight, t);
            }
        }
    }

    /// `[σ₀, σ₁, 1]` flattened: what the level tables' `sig` entries index.
    fn strategy_vector(&self) -> Tensor<2> {
        let b = self.batch;
        Tensor::cat(
            vec![
                self.current[0].clone().reshape([b as i32, -1]),
                self.current[1].clone().reshape([b as i32, -1]),
                Tensor::ones([b, 1], &self.ctx),
            ],
            1,
        )
    }

    /// Both players' reaches at every slot: `[B, N·P + 1]` each (from the cache where the
    /// player's strategy has not changed since).
    fn reaches(&mut self, sigma: &Tensor<2>) -> [Tensor<2>; 2] {
        for i in 0..2 {
            if self.reach_cache[i].is_none() {
                self.reach_cache[i] = Some(self.reach_of(i, sigma));
            }
        }
        std::array::from_fn(|i| self.reach_cache[i].clone().expect("filled above"))
    }

    /// Player `i`'s reaches at every slot, computed level by level.
    fn reach_of(&self, i: usize, sigma: &Tensor<2>) -> Tensor<2> {
        let (b, p, n) = (self.batch, self.layout.p, self.layout.len());
        {
            let mut r = Tensor::zeros([b, n * p + 1], &self.ctx);
            let rp = self.root[i].dims()[1];
            r = r.slice_assign([0..b, 0..rp], self.root[i].clone());
            for level in &self.tables.levels[i] {
                let vals = r
                    .clone()
                    .select(1, level.src.clone())
                    .mul(sigma.clone().select(1, level.sig.clone()));
                r = r.slice_assign([0..b, level.range.0..level.range.1], vals);
            }
            r
        }
    }

    /// Player `p`'s counterfactual values at every slot: `[B, N·P + 2]`.
    fn values(&mut self, p: usize, reach: &[Tensor<2>; 2], sigma: &Tensor<2>) -> Tensor<2> {
        let (b, pp, n) = (self.batch, self.layout.p, self.layout.len());
        let tb = &self.tables;
        let mut v: Tensor<2> = Tensor::zeros([b, n * pp + 2], &self.ctx);
        let nt = self.layout.terminals.len();
        if nt > 0 {
            let opp = reach[1 - p]
                .clone()
                .select(1, tb.term_slots.clone())
                .reshape([b, nt, pp]);
            let tv = range_times(opp, tb.payoff[p].clone()).reshape([b, nt * pp]);
            v = v.select_assign(1, tb.term_slots.clone(), tv, IndexingUpdateOp::Add);
        }
        let nl = self.layout.leaves.len();
        if nl > 0 {
            let ranges = [0, 1].map(|i| {
                reach[i]
                    .clone()
                    .select(1, tb.leaf_slots.clone())
                    .reshape([b, nl, pp])
            });
            let eval = self.leaves.as_mut().expect("checked in new");
            let [l0, l1] = eval.evaluate(ranges);
            let lv = if p == 0 { l0 } else { l1 };
            v = v.select_assign(
                1,
                tb.leaf_slots.clone(),
                lv.reshape([b, nl * pp]),
                IndexingUpdateOp::Add,
            );
        }
        for level in tb.levels[p].iter().rev() {
            let contrib = v
                .clone()
                .slice([0..b, level.range.0..level.range.1])
                .mul(sigma.clone().select(1, level.sig.clone()));
            v = v.select_assign(1, level.dst.clone(), contrib, IndexingUpdateOp::Add);
        }
        v
    }

    /// Regrets, average strategy and regret matching of player `p` from its values.
    fn update(&mut self, p: usize, v: Tensor<2>, own_reach: &Tensor<2>, weight: f64, t: f64) {
        let b = self.batch;
        let l = &self.layout;
        let rows = l.decisions[p].len().max(1) * l.p;
        let width = rows * l.a;
        let tb = &self.tables;
        let q: Tensor<2> = Tensor::zeros([b, width + 1], &self.ctx);
        let q = q
            .select_assign(
                1,
                tb.q_dst[p].clone(),
                v.select(1, tb.q_src[p].clone()),
                IndexingUpdateOp::Add,
            )
            .slice([0..b, 0..width])
            .reshape([b, rows, l.a]);
        let sigma = self.current[p].clone();
        let d = instant_regrets(q, sigma.clone(), tb.masks.mask[p].clone(), self.ctx.noise());
        let own = own_reach
            .clone()
            .select(1, tb.own[p].clone())
            .reshape([b, rows, 1]);
        // Moving the state out (instead of cloning a shared handle) lets the backend add in place.
        let cum = take(&mut self.cumulative[p]);
        self.cumulative[p] = cum + own.mul_scalar(weight) * sigma;
        let r = apply_regret_rule(take(&mut self.regrets[p]) + d, self.spec.regrets, t);
        self.current[p] = regret_match(r.clone(), self.tables.masks.uniform[p].clone());
        self.regrets[p] = r;
        self.reach_cache[p] = None;
    }

    /// Batch element `b`'s policy from per-player block arrays (normalised if `normalise`),
    /// written over `base` (entries of infosets outside the layout keep `base`'s values).
    fn policy_of(&self, which: &[Tensor<3>; 2], b: usize, base: &TreePolicy) -> TreePolicy {
        let l = &self.layout;
        std::array::from_fn(|i| {
            let all = to_f64(which[i].clone());
            let per = l.decisions[i].len().max(1) * l.p * l.a;
            let mut out = base[i].clone();
            l.scatter_blocks(&self.tree, i, &all[b * per..(b + 1) * per], &mut out);
            out
        })
    }

    /// Batch element `b`'s average policy, written over `base` (a policy of the whole game;
    /// infosets outside the layout keep `base`'s values).
    pub fn average_policy(&self, b: usize, base: &TreePolicy) -> TreePolicy {
        let avg =
            crate::cfr::normalized_average(&self.tree, &self.policy_of(&self.cumulative, b, base));
        let mut out = base.clone();
        for (i, row) in out.iter_mut().enumerate() {
            for (_, g) in self.layout.block_entries(&self.tree, i) {
                row[g] = avg[i][g];
            }
        }
        out
    }

    /// Batch element `b`'s current policy, written over `base`.
    pub fn current_policy(&self, b: usize, base: &TreePolicy) -> TreePolicy {
        self.policy_of(&self.current, b, base)
    }

    /// Batch element `b`'s cumulative regrets in the public tree's flat layout.
    pub fn regrets(&self, b: usize) -> TreePolicy {
        let zero = [
            vec![0.0; self.tree.infosets[0].num_actions_total()],
            vec![0.0; self.tree.infosets[1].num_actions_total()],
        ];
        self.policy_of(&self.regrets, b, &zero)
    }

    /// Root values `[B x R]`: `Σ_x r_0(x) v_0(x)` at each root, player 0's expected value of
    /// the current strategies there (chance included).
    pub fn root_values(&mut self) -> Vec<f64> {
        let sigma = self.strategy_vector();
        let reach = self.reaches(&sigma);
        let v = self.values(0, &reach, &sigma);
        let (b, p) = (self.batch, self.layout.p);
        let r = self.layout.levels[0].1 as usize;
        let v0 = v.slice([0..b, 0..r * p]);
        to_f64((v0 * self.root[0].clone()).reshape([b, r, p]).sum_dim(2))
    }

    /// Flat state for checkpoints: per player regrets, cumulative, current (all elements).
    pub fn state_arrays(&self) -> Vec<Vec<f64>> {
        let mut out = Vec::new();
        for which in [&self.regrets, &self.cumulative, &self.current] {
            for t in which.iter() {
                out.push(to_f64(t.clone()));
            }
        }
        out
    }

    /// Restores [`BatchedCfr::state_arrays`].
    pub fn restore_arrays(&mut self, iteration: u64, arrays: &[Vec<f64>]) -> Result<(), String> {
        if arrays.len() != 6 {
            return Err(format!(
                "expected 6 arrays in a batched cfr checkpoint, found {}",
                arrays.len()
            ));
        }
        let l = &self.layout;
        let mut tensors = Vec::new();
        for (k, a) in arrays.iter().enumerate() {
            let i = k % 2;
            let rows = l.decisions[i].len().max(1) * l.p;
            let want = self.batch * rows * l.a;
            if a.len() != want {
                return Err(format!(
                    "batched cfr checkpoint array {k} has {} entries; this game and batch need {want}",
                    a.len()
                ));
            }
            tensors.push(floats(a, [self.batch, rows, l.a], &self.ctx));
        }
        let mut it = tensors.into_iter();
        let mut next = || it.next().unwrap();
        self.regrets = [next(), next()];
        self.cumulative = [next(), next()];
        self.current = [next(), next()];
        self.reach_cache = [None, None];
        self.iteration = iteration;
        Ok(())
    }
}

/// Cumulative regrets `r` after iteration `t`'s update under `rule`: unchanged (plain),
/// clipped at 0 (CFR+), or discounted by DCFR's `t^α / (t^α + 1)` (non-negative entries) and
/// `t^β / (t^β + 1)` (negative ones).
pub(super) fn apply_regret_rule(r: Tensor<3>, rule: RegretRule, t: f64) -> Tensor<3> {
    match rule {
        RegretRule::Plain => r,
        RegretRule::Plus => r.clamp_min(0.0),
        RegretRule::Discounted { alpha, beta } => {
            let (ta, tb) = (t.powf(alpha), t.powf(beta));
            let (dp, dn) = (ta / (ta + 1.0), tb / (tb + 1.0));
            let nonneg = r.clone().greater_equal_elem(0.0);
            r.clone()
                .mul_scalar(dn)
                .mask_where(nonneg, r.mul_scalar(dp))
        }
    }
}

/// Moves a tensor out of its slot, leaving a 1-element placeholder.
pub(super) fn take(t: &mut Tensor<3>) -> Tensor<3> {
    let placeholder = Tensor::empty([1, 1, 1], (&t.device(), t.dtype()));
    std::mem::replace(t, placeholder)
}

impl Tables {
    pub(super) fn new(l: &TensorTree, ctx: &Ctx) -> Tables {
        let (p, a, n) = (l.p, l.a, l.len());
        let zero_r = (n * p) as u32;
        let sink_v = (n * p) as u32;
        let zero_v = (n * p + 1) as u32;
        let base = [0usize, l.decisions[0].len().max(1) * p * a];
        let one = (base[1] + l.decisions[1].len().max(1) * p * a) as u32;
        let levels = std::array::from_fn(|i| {
            let mut out = Vec::new();
            for w in l.levels.windows(2) {
                let (c0, c1) = (w[1].0 as usize, w[1].1 as usize);
                let mut src = Vec::new();
                let mut dst = Vec::new();
                let mut sig = Vec::new();
                for c in c0..c1 {
                    let par = l.parent[c] as usize;
                    for x in 0..p {
                        let s = c * p + x;
                        let up = l.up[i][s];
                        src.push(if up == NONE { zero_r } else { up });
                        dst.push(if up == NONE { sink_v } else { up });
                        let entry = match l.kind[par] {
                            TensorKind::Decision(actor) if actor == i && up != NONE => {
                                let d = l.decision_index[par] as usize;
                                let xp = up as usize - par * p;
                                (base[i] + (d * p + xp) * a + l.action_index[c] as usize) as u32
                            }
                            _ => one,
                        };
                        sig.push(entry);
                    }
                }
                out.push(Level {
                    range: (c0 * p, c1 * p),
                    src: ints(&src, &ctx.device),
                    dst: ints(&dst, &ctx.device),
                    sig: ints(&sig, &ctx.device),
                });
            }
            out
        });
        let slots = |nodes: &[u32]| -> Vec<u32> {
            nodes
                .iter()
                .flat_map(|&t| (0..p).map(move |x| t * p as u32 + x as u32))
                .collect()
        };
        let term: Vec<f64> = l
            .terminals
            .iter()
            .flat_map(|&t| {
                let pp = p * p;
                (0..pp).map(move |s| (t as usize, s))
            })
            .map(|(t, s)| {
                let js = t * p * p + s;
                l.chance_reach[js] * l.utility[js]
            })
            .collect();
        let q = std::array::from_fn(|i| {
            let mut src = Vec::new();
            let mut dst = Vec::new();
            for (d, &node) in l.decisions[i].iter().enumerate() {
                let node = node as usize;
                let c0 = l.first_child[node] as usize;
                for c in c0..c0 + l.num_children[node] as usize {
                    for x in 0..p {
                        if l.infoset[i][d * p + x] == NONE {
                            continue;
                        }
                        src.push((c * p + x) as u32);
                        dst.push(((d * p + x) * a + l.action_index[c] as usize) as u32);
                    }
                }
            }
            if src.is_empty() {
                // A player without decisions here: one harmless entry keeps the tables non-empty.
                let rows = l.decisions[i].len().max(1) * p;
                src.push(zero_v);
                dst.push((rows * a) as u32);
            }
            (ints(&src, &ctx.device), ints(&dst, &ctx.device))
        });
        let [(qs0, qd0), (qs1, qd1)] = q;
        let own = std::array::from_fn(|i| {
            let mut v: Vec<u32> = l.decisions[i]
                .iter()
                .flat_map(|&node| (0..p).map(move |x| node * p as u32 + x as u32))
                .collect();
            if v.is_empty() {
                v = vec![zero_r; p];
            }
            ints(&v, &ctx.device)
        });
        Tables {
            levels,
            term_slots: ints(&slots(&l.terminals), &ctx.device),
            payoff: payoff_tensors(&term, l.terminals.len(), p, ctx),
            leaf_slots: ints(&slots(&l.leaves), &ctx.device),
            q_src: [qs0, qs1],
            q_dst: [qd0, qd1],
            own,
            masks: BlockMasks::new(l, ctx),
        }
    }
}
