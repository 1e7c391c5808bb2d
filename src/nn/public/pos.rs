//! Batched public outcome sampling (POS) MCCFR with the predictive baseline over a
//! [`TensorTree`] (see the parent module and [`crate::cfr::pos`] for the algorithm).
//!
//! Batch element `b` is an independent POS solver with seed [`BatchedPos::element_seed`] (`seed`
//! itself for element 0). With uniform successor
//! sampling the sampled public path does not depend on the strategies, so the host draws every
//! element's path from exactly the random stream [`crate::cfr::pos::PosSolver`] uses, uploads it once
//! per iteration as small per-depth tables, and the device walks all `B` paths in lockstep, one
//! depth at a time (elements whose path is shorter idle in a scratch block):
//!
//! * top-down, the reaches of the sampled child's histories, `[B, P²]` per player, gathered
//!   from the parent's through the child's parent-slot table;
//! * bottom-up at each path node, as `[B, K, P²]` tensors over its `K` children: the
//!   baseline-corrected action values `b + 1[sampled] (û − b) / q`, the node's values (a
//!   scatter-add of edge weight × action value into the parent slots), the actor's
//!   counterfactual action values `[B, P, A]` (a contraction with the opponent's reach and the
//!   chance reach), then regret, average and regret-matching updates of the actor's
//!   `[P x A]` block, gathered from and scattered back into the state tensors, and the
//!   predictive baseline's values under the new strategy.
//!
//! The state of both players lives in one `[B, W]` tensor per quantity: player 0's decision
//! blocks, player 1's, a scratch block, and (for strategies) a constant-one entry that chance
//! edges read as their strategy weight.

use super::cfr::BatchedError;
use super::{Ctx, floats, instant_regrets, ints, ints2, regret_match, to_f64};
use crate::cfr::RegretRule;
use crate::cfr::baseline::Baseline;
use crate::cfr::pos::{PosSpec, Sampling};
use crate::cfr::{Iteration, SolverSnapshot};
use crate::tree::TreePolicy;
use crate::tree::tensor::{TensorKind, TensorTree};
use crate::tree::{NONE, PublicTree};
use burn::tensor::{IndexingUpdateOp, Int, Tensor};
use std::sync::Arc;

/// Host copies of the per-child tables on-policy path sampling reads, `[N, S]` by child node
/// and child joint slot: local parent slot (`S` when the slot is invalid), per-player strategy
/// entry (the constant one when the edge is not that player's action), chance reach.
struct HostTables {
    child_up: Vec<u32>,
    child_sig: [Vec<u32>; 2],
    chance: Vec<f64>,
}

/// Static tables, indexed by node (row `N` is a dummy row for idle elements).
struct Tables {
    /// `[N+1, K·S]`: per child `k` and child joint slot: baseline index to read (zero column if
    /// absent), local parent slot (`S`: sink), strategy-vector entry, chance/edge weight.
    base_read: Tensor<2, Int>,
    up_local: Tensor<2, Int>,
    sig: Tensor<2, Int>,
    edge: Tensor<2>,
    /// `[N+1, S]` per node as a child: local parent slot (`S`: zero), per-player strategy entry.
    child_up: Tensor<2, Int>,
    child_sig: [Tensor<2, Int>; 2],
    /// `[N+1, S]`: the node's own baseline slots for writing (sink if invalid).
    base_write: Tensor<2, Int>,
    /// `[N+1, S]`: utility at terminals, chance reach, validity.
    utility: Tensor<2>,
    chance: Tensor<2>,
    /// `[N+1, K]`: action index of each child (`A` when absent or at chance).
    child_action: Tensor<2, Int>,
    /// `[N+1, P·A]`: the actor's block entries in the state tensors (scratch block at non-decision
    /// nodes and the dummy row), the mask of existing actions and the uniform strategy.
    block: Tensor<2, Int>,
    mask: Tensor<2>,
    uniform: Tensor<2>,
    /// `[1, S]`: both players' reach at the root's histories (1 where a history exists).
    root_reach: Tensor<2>,
}

/// Per-depth host-side schedule of one pass for all batch elements.
struct Schedule {
    depth: usize,
    /// `[depth, B]`: node at the depth (0 when idle), sampled child (dummy row when none), block
    /// row (dummy unless the node is a decision node of an updating player).
    node: Vec<u32>,
    child: Vec<u32>,
    block_row: Vec<u32>,
    /// `[depth, F, B]` floats (one contiguous `[B]` row per quantity): see `F_*`.
    f: Vec<f64>,
    /// `[depth, B, K]`: one-hot of the sampled child.
    onehot: Vec<f64>,
    /// Public nodes updated (for throughput counters).
    updates: u64,
}

const F_INVQ: usize = 0;
const F_TERM: usize = 1;
const F_A0: usize = 2;
const F_A1: usize = 3;
const F_SIGN_INV_PIQ: usize = 4;
const F_W_INV_PIQ: usize = 5;
const F: usize = 6;

/// Batched POS (see the module docs).
pub struct BatchedPos {
    tree: Arc<PublicTree>,
    layout: Arc<TensorTree>,
    spec: PosSpec,
    seed: u64,
    ctx: Ctx,
    batch: usize,
    tables: Tables,
    /// Host copies of the tables on-policy path sampling reads.
    host: HostTables,
    iteration: u64,
    updates: u64,
    /// Block offsets: player 0 at 0, player 1 at `base1`, scratch at `scratch`, one at `one`.
    base1: usize,
    scratch: usize,
    one: usize,
    regrets: Tensor<2>,
    cumulative: Tensor<2>,
    /// Strategies plus the trailing constant one.
    sigma: Tensor<2>,
    /// Baselines per joint slot, plus sink and zero columns: `[B, N·S + 2]`.
    baselines: Tensor<2>,
}

impl BatchedPos {
    /// A solver at iteration 0 for `batch` independent POS runs (seeds [`BatchedPos::element_seed`])
    /// on a whole-game layout.
    pub fn new(
        tree: Arc<PublicTree>,
        layout: Arc<TensorTree>,
        spec: PosSpec,
        seed: u64,
        batch: usize,
        ctx: &Ctx,
    ) -> Result<BatchedPos, BatchedError> {
        if batch == 0 {
            return Err(BatchedError::EmptyBatch);
        }
        let o = spec.options;
        if !matches!(o.baseline, Baseline::None | Baseline::Predictive) {
            return Err(BatchedError::Unsupported(
                "the batched POS solver supports `solver.baseline` = \"none\" or \"predictive\""
                    .into(),
            ));
        }
        if o.measure_variance {
            return Err(BatchedError::Unsupported(
                "`solver.measure_variance` is not available in the batched POS solver".into(),
            ));
        }
        if !layout.leaves.is_empty() || layout.public_node[0] != 0 || layout.levels[0].1 != 1 {
            return Err(BatchedError::Unsupported(
                "the batched POS solver runs on the whole game (no root ranges, no depth limit)"
                    .into(),
            ));
        }
        let (p, a) = (layout.p, layout.a);
        let block = p * a;
        let base1 = layout.decisions[0].len() * block;
        let scratch = base1 + layout.decisions[1].len() * block;
        let one = scratch + block;
        let (tables, host) = Tables::new(&layout, base1, scratch, one, ctx);
        let n = layout.len();
        let s = p * p;
        // Uniform strategies: the mask table's rows normalised, laid into the state.
        let mut sigma0 = vec![0.0; one + 1];
        for (i, base) in [(0usize, 0usize), (1, base1)] {
            for d in 0..layout.decisions[i].len() {
                let na = layout.num_actions[i][d] as usize;
                for x in 0..p {
                    if layout.infoset[i][d * p + x] == NONE {
                        continue;
                    }
                    for k in 0..na {
                        sigma0[base + d * block + x * a + k] = 1.0 / na as f64;
                    }
                }
            }
        }
        sigma0[one] = 1.0;
        let sigma = floats(&sigma0, [1, one + 1], ctx).repeat_dim(0, batch);
        Ok(BatchedPos {
            regrets: Tensor::zeros([batch, one], ctx),
            cumulative: Tensor::zeros([batch, one], ctx),
            sigma,
            baselines: Tensor::zeros([batch, n * s + 2], ctx),
            tree,
            layout,
            spec,
            seed,
            ctx: ctx.clone(),
            batch,
            tables,
            host,
            iteration: 0,
            updates: 0,
            base1,
            scratch,
            one,
        })
    }

    /// The seed of batch element `b`: `seed` for element 0 (so a run reports the tabular
    /// solver's run with the same seed), a hash of `(seed, b)` for the others (so runs with
    /// nearby seeds share no streams).
    pub fn element_seed(seed: u64, b: usize) -> u64 {
        if b == 0 {
            seed
        } else {
            crate::util::SplitMix64::new(seed ^ (b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
                .next_u64()
        }
    }

    /// Batch size.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Iterations done.
    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    /// Public-node updates done so far, summed over the batch.
    pub fn node_updates(&self) -> u64 {
        self.updates
    }

    /// Runs one iteration for every batch element.
    pub fn iterate(&mut self) {
        self.iteration += 1;
        let it = Iteration::new(self.iteration, self.spec.updates, self.spec.averaging);
        let mut rngs: Vec<_> = (0..self.batch)
            .map(|b| crate::cfr::pos::stream(Self::element_seed(self.seed, b), self.iteration))
            .collect();
        // Alternating: player 1's path is drawn after player 0's pass; under on-policy
        // sampling it depends on the strategies that pass updated (as in the tabular solver).
        for &players in it.turns {
            let s = self.schedule(&mut rngs, players, it.weight);
            self.pass(&s);
        }
    }

    /// Draws every element's public path (the same draws as the tabular solver) and lays out
    /// the per-depth tables of one pass. Under on-policy sampling the strategies are read back
    /// to the host once per pass and every element's reaches follow its path there, so that
    /// `q(S, S')` is the tabular solver's: the chance- and strategy-weighted mass of each
    /// successor, mixed with `exploration · uniform`.
    fn schedule(
        &self,
        rngs: &mut [crate::util::SplitMix64],
        players: [bool; 2],
        weight: f64,
    ) -> Schedule {
        let l = &*self.layout;
        let b = self.batch;
        let depth = l.levels.len();
        let dummy = l.len() as u32;
        let mut s = Schedule {
            depth,
            node: vec![0; depth * b],
            child: vec![dummy; depth * b],
            block_row: vec![dummy; depth * b],
            f: vec![0.0; depth * b * F],
            onehot: vec![0.0; depth * b * l.k],
            updates: 0,
        };
        let on_policy = self.spec.options.sampling == Sampling::OnPolicy;
        let eps = self.spec.options.exploration;
        let sigma = if on_policy {
            to_f64(self.sigma.clone())
        } else {
            Vec::new()
        };
        let (ss, w) = (l.p * l.p, self.one + 1);
        let h = &self.host;
        let mut reach = [vec![0.0; ss], vec![0.0; ss]];
        let mut next_reach = [vec![0.0; ss], vec![0.0; ss]];
        let mut mass = Vec::with_capacity(l.k);
        for (e, rng) in rngs.iter_mut().enumerate() {
            let mut node = 0usize;
            let mut pi_q = 1.0f64;
            let sig = if on_policy {
                &sigma[e * w..(e + 1) * w]
            } else {
                &[][..]
            };
            if on_policy {
                for r in reach.iter_mut() {
                    for (j, x) in r.iter_mut().enumerate() {
                        *x = if l.joint_valid[j] { 1.0 } else { 0.0 };
                    }
                }
            }
            for d in 0..depth {
                let row = d * b + e;
                s.node[row] = node as u32;
                s.updates += 1;
                let mut f = |c: usize, v: f64| s.f[(d * F + c) * b + e] = v;
                if l.kind[node] == TensorKind::Terminal {
                    f(F_TERM, 1.0);
                    break;
                }
                let nc = l.num_children[node] as usize;
                let first = l.first_child[node] as usize;
                let (k, q) = if nc == 1 {
                    (0, 1.0)
                } else if on_policy {
                    // Mass of each successor: Σ over its histories of both reaches times
                    // the chance reach (the tabular solver's `successor_mass`).
                    mass.clear();
                    for c in first..first + nc {
                        let mut m = 0.0;
                        for j in 0..ss {
                            let t = c * ss + j;
                            let up = h.child_up[t] as usize;
                            if up == ss {
                                continue;
                            }
                            m += reach[0][up]
                                * sig[h.child_sig[0][t] as usize]
                                * reach[1][up]
                                * sig[h.child_sig[1][t] as usize]
                                * h.chance[t];
                        }
                        mass.push(m);
                    }
                    let total: f64 = mass.iter().sum();
                    let u = 1.0 / nc as f64;
                    if total > 0.0 {
                        mass.iter_mut()
                            .for_each(|m| *m = (1.0 - eps) * *m / total + eps * u);
                        let k = rng.weighted(&mass);
                        (k, mass[k])
                    } else {
                        (rng.below(nc), u)
                    }
                } else {
                    (rng.below(nc), 1.0 / nc as f64)
                };
                f(F_INVQ, 1.0 / q);
                if let TensorKind::Decision(p) = l.kind[node] {
                    f(if p == 0 { F_A0 } else { F_A1 }, 1.0);
                    let sign = if p == 0 { 1.0 } else { -1.0 };
                    f(F_SIGN_INV_PIQ, sign / pi_q);
                    f(F_W_INV_PIQ, weight / pi_q);
                    if players[p] {
                        s.block_row[row] = node as u32;
                    }
                }
                let child = first + k;
                if on_policy {
                    for (i, next) in next_reach.iter_mut().enumerate() {
                        for (j, r) in next.iter_mut().enumerate() {
                            let t = child * ss + j;
                            let up = h.child_up[t] as usize;
                            *r = if up == ss {
                                0.0
                            } else {
                                reach[i][up] * sig[h.child_sig[i][t] as usize]
                            };
                        }
                    }
                    std::mem::swap(&mut reach, &mut next_reach);
                }
                s.child[row] = child as u32;
                s.onehot[row * l.k + k] = 1.0;
                pi_q *= q;
                node = child;
            }
        }
        s
    }

    /// One pass over all elements' scheduled paths: reaches down, updates up.
    fn pass(&mut self, s: &Schedule) {
        let (b, l) = (self.batch, Arc::clone(&self.layout));
        let (p, k) = (l.p, l.k);
        let ss = p * p;
        let dev = self.ctx.clone();
        let tb = &self.tables;
        let nodes = ints(&s.node, &dev.device);
        let children = ints(&s.child, &dev.device);
        let rows = ints(&s.block_row, &dev.device);
        let fl = floats(&s.f, [s.depth, F, b], &dev);
        let onehot = floats(&s.onehot, [s.depth, b, k], &dev);
        let fcol =
            |d: usize, c: usize| fl.clone().slice([d..d + 1, c..c + 1, 0..b]).reshape([b, 1]);
        // Every depth's table rows in one gather per table (fewer, larger kernels); each depth
        // then takes its `B` rows.
        let by = |t: &Tensor<2, Int>, idx: &Tensor<1, Int>| t.clone().select(0, idx.clone());
        let byf = |t: &Tensor<2>, idx: &Tensor<1, Int>| t.clone().select(0, idx.clone());
        let child_up = by(&tb.child_up, &children);
        let child_sig = [
            by(&tb.child_sig[0], &children),
            by(&tb.child_sig[1], &children),
        ];
        let base_write = by(&tb.base_write, &children);
        let utility = byf(&tb.utility, &nodes);
        let chance_all = byf(&tb.chance, &nodes);
        let base_read = by(&tb.base_read, &nodes);
        let sig_all = by(&tb.sig, &nodes);
        let edge_all = byf(&tb.edge, &nodes);
        let up_all = by(&tb.up_local, &nodes);
        let act_all = by(&tb.child_action, &nodes);
        let blk_all = by(&tb.block, &rows);
        let mask_all = byf(&tb.mask, &rows);
        let uniform_all = byf(&tb.uniform, &rows);
        let rows_of = |t: &Tensor<2, Int>, d: usize| t.clone().narrow(0, d * b, b);
        let rowsf = |t: &Tensor<2>, d: usize| t.clone().narrow(0, d * b, b);
        // Top-down: joint reaches of each player at every depth.
        let r0 = tb.root_reach.clone().expand([b, ss]);
        let mut reach: Vec<[Tensor<2>; 2]> = vec![[r0.clone(), r0]];
        for d in 0..s.depth - 1 {
            let up = rows_of(&child_up, d);
            let [r0, r1] = reach[d].clone();
            let zero = Tensor::zeros([b, 1], &dev);
            let next = [(0usize, r0), (1, r1)].map(|(i, r)| {
                let ext = Tensor::cat(vec![r, zero.clone()], 1);
                let sig = rows_of(&child_sig[i], d);
                ext.gather(1, up.clone()) * self.sigma.clone().gather(1, sig)
            });
            reach.push(next);
        }
        // Bottom-up.
        let predictive = self.spec.options.baseline == Baseline::Predictive;
        let plus = self.spec.options.regret == RegretRule::Plus;
        let mut u_next: Tensor<2> = Tensor::zeros([b, ss], &dev);
        let mut nv_next: Tensor<2> = Tensor::zeros([b, ss], &dev);
        for d in (0..s.depth).rev() {
            let term = fcol(d, F_TERM);
            let util = rowsf(&utility, d);
            if d + 1 == s.depth {
                u_next = util.clone();
                nv_next = util;
                continue;
            }
            // 1. Baseline-corrected action values of the K children: [B, K, S].
            let bread = rows_of(&base_read, d);
            let bk = self.baselines.clone().gather(1, bread).reshape([b, k, ss]);
            let oh = onehot
                .clone()
                .slice([d..d + 1, 0..b, 0..k])
                .reshape([b, k, 1]);
            let invq = fcol(d, F_INVQ).reshape([b, 1, 1]);
            let q = bk.clone() + oh * (u_next.clone().reshape([b, 1, ss]) - bk) * invq;
            // 2. Node values under σ_t.
            let sig_idx = rows_of(&sig_all, d);
            let edge = rowsf(&edge_all, d);
            let up = rows_of(&up_all, d);
            let w = edge.clone() * self.sigma.clone().gather(1, sig_idx.clone());
            let u_n = Tensor::<2>::zeros([b, ss + 1], &dev)
                .scatter(
                    1,
                    up.clone(),
                    w * q.clone().reshape([b, k * ss]),
                    IndexingUpdateOp::Add,
                )
                .slice([0..b, 0..ss]);
            // 3. Counterfactual action values of the actor, [B, P, A], and the block update.
            let [r0, r1] = reach[d].clone();
            let (a0, a1) = (fcol(d, F_A0), fcol(d, F_A1));
            let chance = rowsf(&chance_all, d);
            let opp = (r1.clone() * a0.clone() + r0.clone() * a1.clone()) * chance;
            let z = (q * opp.reshape([b, 1, ss])).reshape([b, k, p, p]);
            let zr = z.clone().sum_dim(3).reshape([b, k, p]) * a0.clone().reshape([b, 1, 1])
                + z.sum_dim(2).reshape([b, k, p]) * a1.clone().reshape([b, 1, 1]);
            let act = rows_of(&act_all, d).reshape([b, 1, k]).expand([b, p, k]);
            let cfq = Tensor::<3>::zeros([b, p, l.a + 1], &dev)
                .scatter(2, act, zr.swap_dims(1, 2), IndexingUpdateOp::Add)
                .slice([0..b, 0..p, 0..l.a]);
            let blk = rows_of(&blk_all, d);
            let mask = rowsf(&mask_all, d).reshape([b, p, l.a]);
            let uniform = rowsf(&uniform_all, d).reshape([b, p, l.a]);
            let sigma_old = self
                .sigma
                .clone()
                .gather(1, blk.clone())
                .reshape([b, p, l.a]);
            let inst = instant_regrets(cfq, sigma_old.clone(), mask, self.ctx.noise());
            let sign = fcol(d, F_SIGN_INV_PIQ).reshape([b, 1, 1]);
            let r_old = self
                .regrets
                .clone()
                .gather(1, blk.clone())
                .reshape([b, p, l.a]);
            let mut r_new = r_old.clone() + inst * sign;
            if plus {
                r_new = r_new.clamp_min(0.0);
            }
            let own_joint = (r0 * a0.clone() + r1 * a1.clone()).reshape([b, p, p]);
            let own = own_joint.clone().max_dim(2).reshape([b, p, 1]) * a0.reshape([b, 1, 1])
                + own_joint.max_dim(1).reshape([b, p, 1]) * a1.reshape([b, 1, 1]);
            let wpiq = fcol(d, F_W_INV_PIQ).reshape([b, 1, 1]);
            let cum_delta = own * wpiq * sigma_old.clone();
            let sigma_new = regret_match(r_new.clone(), uniform);
            let flat = |t: Tensor<3>| t.reshape([b, p * l.a]);
            scatter_add_in_place(&mut self.regrets, blk.clone(), flat(r_new - r_old));
            scatter_add_in_place(&mut self.cumulative, blk.clone(), flat(cum_delta));
            scatter_add_in_place(&mut self.sigma, blk, flat(sigma_new - sigma_old));
            // 4. Predictive baseline: the sampled child's histories take their value under
            // σ_{t+1}; the node's value under σ_{t+1} follows from the updated baselines.
            let nv_n = if predictive {
                let bw = rows_of(&base_write, d);
                let old = self.baselines.clone().gather(1, bw.clone());
                scatter_add_in_place(&mut self.baselines, bw, nv_next.clone() - old);
                let bk = self.baselines.clone().gather(1, rows_of(&base_read, d));
                let w = edge * self.sigma.clone().gather(1, sig_idx);
                Tensor::<2>::zeros([b, ss + 1], &dev)
                    .scatter(1, up, w * bk, IndexingUpdateOp::Add)
                    .slice([0..b, 0..ss])
            } else {
                u_n.clone()
            };
            let live = term.clone().neg().add_scalar(1.0);
            u_next = util.clone() * term.clone() + u_n * live.clone();
            nv_next = util * term + nv_n * live;
        }
        self.updates += s.updates;
    }

    /// Batch element `b`'s average policy (normalised cumulative strategy).
    pub fn average_policy(&self, b: usize) -> TreePolicy {
        let cum = self.flat_policy(&self.cumulative, b);
        crate::cfr::normalized_average(&self.tree, &cum)
    }

    /// Batch element `b`'s current policy.
    pub fn current_policy(&self, b: usize) -> TreePolicy {
        let w = self.one;
        let s = self.sigma.clone().slice([0..self.batch, 0..w]);
        self.flat_policy(&s, b)
    }

    /// Batch element `b`'s cumulative regrets in the public tree's flat layout.
    pub fn regrets(&self, b: usize) -> TreePolicy {
        self.flat_policy(&self.regrets, b)
    }

    fn flat_policy(&self, t: &Tensor<2>, b: usize) -> TreePolicy {
        let row = to_f64(t.clone().slice([b..b + 1, 0..self.one]));
        let l = &self.layout;
        std::array::from_fn(|i| {
            let (lo, hi) = if i == 0 {
                (0, self.base1)
            } else {
                (self.base1, self.scratch)
            };
            let mut out = vec![0.0; self.tree.infosets[i].num_actions_total()];
            l.scatter_blocks(&self.tree, i, &row[lo..hi], &mut out);
            out
        })
    }

    /// Checkpoint state: regrets, cumulative, strategies, baselines (all elements).
    pub fn snapshot(&self) -> SolverSnapshot {
        SolverSnapshot {
            iteration: self.iteration,
            counters: vec![self.updates],
            arrays: vec![
                to_f64(self.regrets.clone()),
                to_f64(self.cumulative.clone()),
                to_f64(self.sigma.clone()),
                to_f64(self.baselines.clone()),
            ],
        }
    }

    /// Restores [`BatchedPos::snapshot`].
    pub fn restore(&mut self, snap: SolverSnapshot) -> Result<(), String> {
        let dims = [
            self.regrets.dims(),
            self.cumulative.dims(),
            self.sigma.dims(),
            self.baselines.dims(),
        ];
        if snap.arrays.len() != 4 {
            return Err(format!(
                "expected 4 arrays in a batched pos checkpoint, found {}",
                snap.arrays.len()
            ));
        }
        let [updates] = snap.counters[..] else {
            return Err("batched pos checkpoint needs exactly one counter".into());
        };
        for (k, (a, d)) in snap.arrays.iter().zip(dims).enumerate() {
            if a.len() != d[0] * d[1] {
                return Err(format!(
                    "batched pos checkpoint array {k} has {} entries; this game and batch need {}",
                    a.len(),
                    d[0] * d[1]
                ));
            }
        }
        let t: Vec<Tensor<2>> = snap
            .arrays
            .iter()
            .zip(dims)
            .map(|(a, d)| floats(a, d, &self.ctx))
            .collect();
        let [r, c, s, bl]: [Tensor<2>; 4] = t.try_into().expect("four arrays");
        self.regrets = r;
        self.cumulative = c;
        self.sigma = s;
        self.baselines = bl;
        self.iteration = snap.iteration;
        self.updates = updates;
        Ok(())
    }
}

/// `t[b, idx[b, j]] += v[b, j]`, moving `t` out first so that the backend may update it in
/// place (a shared handle forces a copy of the whole state tensor on every update).
fn scatter_add_in_place(t: &mut Tensor<2>, idx: Tensor<2, Int>, v: Tensor<2>) {
    let placeholder = Tensor::empty([1, 1], (&t.device(), t.dtype()));
    let owned = std::mem::replace(t, placeholder);
    *t = owned.scatter(1, idx, v, IndexingUpdateOp::Add);
}

impl Tables {
    fn new(
        l: &TensorTree,
        base1: usize,
        scratch: usize,
        one: usize,
        ctx: &Ctx,
    ) -> (Tables, HostTables) {
        let (p, a, k, n) = (l.p, l.a, l.k, l.len());
        let s = p * p;
        let rows = n + 1;
        let zero_col = (n * s + 1) as u32;
        let sink_col = (n * s) as u32;
        let mut base_read = vec![zero_col; rows * k * s];
        let mut up_local = vec![s as u32; rows * k * s];
        let mut sig = vec![one as u32; rows * k * s];
        let mut edge = vec![0.0; rows * k * s];
        let mut child_up = vec![s as u32; rows * s];
        let mut child_sig = [vec![one as u32; rows * s], vec![one as u32; rows * s]];
        let mut base_write = vec![sink_col; rows * s];
        let mut utility = vec![0.0; rows * s];
        let mut chance = vec![0.0; rows * s];
        let mut child_action = vec![a as u32; rows * k];
        let block_len = p * a;
        let mut block: Vec<u32> = (0..rows)
            .flat_map(|_| (0..block_len).map(|j| (scratch + j) as u32))
            .collect();
        let mut mask = vec![0.0; rows * block_len];
        let mut uniform = vec![0.0; rows * block_len];
        let base = [0usize, base1];
        let root_reach: Vec<f64> = (0..s)
            .map(|j| if l.joint_valid[j] { 1.0 } else { 0.0 })
            .collect();
        for c in 0..n {
            for j in 0..s {
                let js = c * s + j;
                if l.joint_valid[js] {
                    base_write[c * s + j] = js as u32;
                    chance[c * s + j] = l.chance_reach[js];
                    utility[c * s + j] = l.utility[js];
                }
            }
            let par = l.parent[c];
            if par == NONE {
                continue;
            }
            let par = par as usize;
            let kk = c - l.first_child[par] as usize;
            for j in 0..s {
                let js = c * s + j;
                if !l.joint_valid[js] {
                    continue;
                }
                let upj = l.up_joint[js] as usize - par * s;
                let entry = match l.kind[par] {
                    TensorKind::Decision(actor) => {
                        let d = l.decision_index[par] as usize;
                        let x = if actor == 0 { upj / p } else { upj % p };
                        (base[actor] + (d * p + x) * a + l.action_index[c] as usize) as u32
                    }
                    _ => one as u32,
                };
                let t = (par * k + kk) * s + j;
                base_read[t] = js as u32;
                up_local[t] = upj as u32;
                sig[t] = entry;
                edge[t] = l.edge_prob[js];
                child_up[c * s + j] = upj as u32;
                if let TensorKind::Decision(actor) = l.kind[par] {
                    child_sig[actor][c * s + j] = entry;
                }
            }
            if let TensorKind::Decision(_) = l.kind[par] {
                child_action[par * k + kk] = l.action_index[c];
            }
        }
        for (i, &b0) in base.iter().enumerate() {
            for (d, &node) in l.decisions[i].iter().enumerate() {
                let node = node as usize;
                let na = l.num_actions[i][d] as usize;
                for j in 0..block_len {
                    block[node * block_len + j] = (b0 + d * block_len + j) as u32;
                }
                for x in 0..p {
                    if l.infoset[i][d * p + x] == NONE {
                        continue;
                    }
                    for kk in 0..na {
                        mask[node * block_len + x * a + kk] = 1.0;
                        uniform[node * block_len + x * a + kk] = 1.0 / na as f64;
                    }
                }
            }
        }
        let host = HostTables {
            child_up: child_up[..n * s].to_vec(),
            child_sig: [
                child_sig[0][..n * s].to_vec(),
                child_sig[1][..n * s].to_vec(),
            ],
            chance: chance[..n * s].to_vec(),
        };
        let tables = Tables {
            base_read: ints2(&base_read, [rows, k * s], &ctx.device),
            up_local: ints2(&up_local, [rows, k * s], &ctx.device),
            sig: ints2(&sig, [rows, k * s], &ctx.device),
            edge: floats(&edge, [rows, k * s], ctx),
            child_up: ints2(&child_up, [rows, s], &ctx.device),
            child_sig: [
                ints2(&child_sig[0], [rows, s], &ctx.device),
                ints2(&child_sig[1], [rows, s], &ctx.device),
            ],
            base_write: ints2(&base_write, [rows, s], &ctx.device),
            utility: floats(&utility, [rows, s], ctx),
            chance: floats(&chance, [rows, s], ctx),
            child_action: ints2(&child_action, [rows, k], &ctx.device),
            block: ints2(&block, [rows, block_len], &ctx.device),
            mask: floats(&mask, [rows, block_len], ctx),
            uniform: floats(&uniform, [rows, block_len], ctx),
            root_reach: floats(&root_reach, [1, s], ctx),
        };
        (tables, host)
    }
}
