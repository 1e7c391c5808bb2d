//! Batched solvers over the public tree as burn tensor operations, so that the device that
//! trains networks also solves (CPU `flex` by default, `wgpu`, `cuda`).
//!
//! The tree comes from [`TensorTree`]: per public node a `[P]` vector per player, per infoset
//! a row of a `[decision x P x A]` block, per terminal a `[P x P]` payoff matrix. Every tensor
//! carries a leading batch dimension `B`: batch element `b` is an independent solver instance
//! (its own regrets, average and current strategy, its own random stream and its own root
//! ranges), and all `B` advance together, one tensor operation per tree level.
//!
//! * [`cfr::BatchedCfr`]: full-width CFR, CFR+, LCFR, DCFR (alternating or simultaneous
//!   updates), reproducing [`crate::cfr::TabularSolver`] in `f32`; roots with given ranges and
//!   depth limits whose leaves a [`LeafEvaluator`] values.
//! * [`pos::BatchedPos`]: public outcome sampling MCCFR with the predictive baseline,
//!   reproducing [`crate::cfr::pos::PosSolver`] sample for sample.
//! * [`factored::FactoredCfr`]: CFR on a factored Hold'em subgame
//!   ([`crate::tree::poker::PokerLayout`], one range over all hole-card hands per player and
//!   node, terminals through [`showdown::HandSweep`]), host `f64`.

pub mod cfr;
pub mod engine;
pub use crate::search::factored;
pub mod pos;
pub mod showdown;

use crate::tree::NONE;
use crate::tree::history::HistoryTree;
use crate::tree::tensor::TensorTree;
use burn::tensor::{DType, Device, Int, Tensor, TensorCreationOptions, TensorData};

/// Float precision of a batched solver's tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// `f32`: every backend; what GPUs run fast.
    F32,
    /// `f64`: the CPU backend only (Vulkan/WebGPU shaders have no `f64`); matches the `f64`
    /// tabular solvers to rounding for as many iterations as one likes.
    F64,
}

/// Where and in which precision a batched solver's float tensors live.
#[derive(Clone, Debug)]
pub struct Ctx {
    pub device: Device,
    pub dtype: DType,
}

impl Ctx {
    /// A context on `device` with `precision`.
    pub fn new(device: &Device, precision: Precision) -> Ctx {
        Ctx {
            device: device.clone(),
            dtype: match precision {
                Precision::F32 => DType::F32,
                Precision::F64 => DType::F64,
            },
        }
    }

    /// `f32` on `device`.
    pub fn f32(device: &Device) -> Ctx {
        Ctx::new(device, Precision::F32)
    }
}

impl From<&Ctx> for TensorCreationOptions {
    fn from(c: &Ctx) -> Self {
        TensorCreationOptions::new(c.device.clone()).with_dtype(c.dtype)
    }
}

/// Relative size below which an `f32` instantaneous regret is rounding noise (the `f32`
/// counterpart of [`crate::cfr::ROUNDING_NOISE`]): action values equal in exact arithmetic
/// differ by a few `f32` ulps after summation in another order.
pub const ROUNDING_NOISE_F32: f32 = 4e-6;

/// Supplies counterfactual values at the leaves of a depth-limited tree.
///
/// `ranges[i]` is `[B, L, P]`: player `i`'s reach of each private state at each leaf (in the
/// order of [`TensorTree::leaves`]); the answer is each player's counterfactual values in the
/// same shape — `v_i(x) = Σ_y π_{-i}(y) · P_chance(x, y) · u_i(x, y | below the leaf)`, the
/// quantity a terminal payoff matrix gives at a terminal node. An exact oracle serves tests; a
/// counterfactual value network will implement it for search.
pub trait LeafEvaluator: Send {
    fn evaluate(&mut self, ranges: [Tensor<3>; 2]) -> [Tensor<3>; 2];
}

/// The exact leaf evaluator of a fixed policy played below the leaves: each leaf holds the
/// `[P x P]` matrix of chance-weighted values of its histories under that policy, so the
/// evaluation is one batched matrix product per player, as at terminal nodes.
pub struct MatrixLeaves {
    /// `[1, L, P, P]`: transposed matrices for player 0 and negated ones for player 1.
    mats: [Tensor<4>; 2],
}

impl MatrixLeaves {
    /// Values under `history_values` (player 0's expected value of every history of `ht`, e.g.
    /// [`HistoryTree::values_into`] under a fixed policy).
    pub fn new(
        layout: &TensorTree,
        ht: &HistoryTree,
        history_values: &[f64],
        ctx: &Ctx,
    ) -> MatrixLeaves {
        let m: Vec<f64> = layout
            .leaves
            .iter()
            .flat_map(|&l| layout.value_matrix(ht, l as usize, history_values))
            .collect();
        MatrixLeaves {
            mats: payoff_tensors(&m, layout.leaves.len(), layout.p, ctx),
        }
    }
}

impl LeafEvaluator for MatrixLeaves {
    fn evaluate(&mut self, ranges: [Tensor<3>; 2]) -> [Tensor<3>; 2] {
        let [r0, r1] = ranges;
        [
            range_times(r1, self.mats[0].clone()),
            range_times(r0, self.mats[1].clone()),
        ]
    }
}

/// Player 0's and player 1's `[1, T, P, P]` payoff tensors from `T` row-major `[x₀, x₁]`
/// matrices of player 0's values: player 0's is transposed (`[t, x₁, x₀]`) so that a range row
/// of player 1 times it gives player 0's values; player 1's is the negation (zero-sum).
pub(crate) fn payoff_tensors(m: &[f64], t: usize, p: usize, ctx: &Ctx) -> [Tensor<4>; 2] {
    let t_len = t.max(1);
    let mut w0 = vec![0.0; t_len * p * p];
    let mut w1 = vec![0.0; t_len * p * p];
    for k in 0..t {
        for x0 in 0..p {
            for x1 in 0..p {
                let v = m[(k * p + x0) * p + x1];
                w0[(k * p + x1) * p + x0] = v;
                w1[(k * p + x0) * p + x1] = -v;
            }
        }
    }
    [
        floats(&w0, [1, t_len, p, p], ctx),
        floats(&w1, [1, t_len, p, p], ctx),
    ]
}

/// `[B, T, P]` opponent ranges times `[1, T, P, P]` payoff tensors: `[B, T, P]` values.
pub(crate) fn range_times(r: Tensor<3>, w: Tensor<4>) -> Tensor<3> {
    let [b, t, p] = r.dims();
    r.reshape([b, t, 1, p]).matmul(w).reshape([b, t, p])
}

/// A 1-d index tensor.
pub(crate) fn ints(v: &[u32], device: &Device) -> Tensor<1, Int> {
    let data: Vec<i64> = v.iter().map(|&x| x as i64).collect();
    Tensor::from_data(TensorData::new(data, [v.len()]), device)
}

/// A 2-d index tensor.
pub(crate) fn ints2(v: &[u32], shape: [usize; 2], device: &Device) -> Tensor<2, Int> {
    let data: Vec<i64> = v.iter().map(|&x| x as i64).collect();
    Tensor::from_data(TensorData::new(data, shape), device)
}

/// A float tensor from `f64`s.
pub(crate) fn floats<const D: usize>(v: &[f64], shape: [usize; D], ctx: &Ctx) -> Tensor<D> {
    // `from_data` converts the `f64` data into the context's precision.
    Tensor::from_data(TensorData::new(v.to_vec(), shape), ctx)
}

/// A float tensor's values as `f64`s.
pub(crate) fn to_f64<const D: usize>(t: Tensor<D>) -> Vec<f64> {
    t.into_data()
        .convert::<f64>()
        .try_into_vec::<f64>()
        .expect("float tensor data")
}

/// Per-player tables every batched solver needs: which infoset actions exist and the uniform
/// strategy over them, as `[1, D·P, A]` tensors.
pub(crate) struct BlockMasks {
    pub mask: [Tensor<3>; 2],
    pub uniform: [Tensor<3>; 2],
}

impl BlockMasks {
    pub fn new(t: &TensorTree, ctx: &Ctx) -> BlockMasks {
        let (p, a) = (t.p, t.a);
        let build = |i: usize| {
            let d = t.decisions[i].len();
            // A player without decisions in the layout gets one all-zero row block.
            let mut mask = vec![0.0; d.max(1) * p * a];
            let mut uni = vec![0.0; d.max(1) * p * a];
            for di in 0..d {
                let n = t.num_actions[i][di] as usize;
                for x in 0..p {
                    if t.infoset[i][di * p + x] == NONE {
                        continue;
                    }
                    for k in 0..n {
                        mask[(di * p + x) * a + k] = 1.0;
                        uni[(di * p + x) * a + k] = 1.0 / n as f64;
                    }
                }
            }
            (
                floats(&mask, [1, d.max(1) * p, a], ctx),
                floats(&uni, [1, d.max(1) * p, a], ctx),
            )
        };
        let (m0, u0) = build(0);
        let (m1, u1) = build(1);
        BlockMasks {
            mask: [m0, m1],
            uniform: [u0, u1],
        }
    }
}

/// Regret matching on `[B, D·P, A]` blocks: `R⁺ / Σ R⁺`, `uniform` where no regret is positive.
pub(crate) fn regret_match(regrets: Tensor<3>, uniform: Tensor<3>) -> Tensor<3> {
    let dims = regrets.dims();
    let pos = regrets.clamp_min(0.0);
    let total = pos.clone().sum_dim(2);
    let none = total.clone().lower_equal_elem(0.0);
    let denom = total.mask_fill(none.clone(), 1.0);
    (pos / denom).mask_where(none.expand(dims), uniform.expand(dims))
}

/// Instantaneous regrets `q − Σ σ q` of `[B, D·P, A]` action values, with entries below
/// `noise` times the block's value scale set to zero and absent actions masked.
pub(crate) fn instant_regrets(
    q: Tensor<3>,
    sigma: Tensor<3>,
    mask: Tensor<3>,
    noise: f64,
) -> Tensor<3> {
    let dims = q.dims();
    let v = (sigma * q.clone()).sum_dim(2);
    let scale = q.clone().abs().max_dim(2).max_pair(v.clone().abs());
    let d = q - v.expand(dims);
    let small = d
        .clone()
        .abs()
        .lower_equal(scale.mul_scalar(noise).expand(dims));
    d.mask_fill(small, 0.0) * mask
}

impl Ctx {
    /// The relative rounding noise of this precision (see [`ROUNDING_NOISE_F32`]).
    pub fn noise(&self) -> f64 {
        if self.dtype == DType::F64 {
            crate::cfr::ROUNDING_NOISE
        } else {
            ROUNDING_NOISE_F32 as f64
        }
    }
}

impl crate::cfr::TreeSolver for cfr::BatchedCfr {
    fn iterate(&mut self) {
        cfr::BatchedCfr::iterate(self);
    }

    fn iteration(&self) -> u64 {
        cfr::BatchedCfr::iteration(self)
    }

    /// Batch element 0's.
    fn average_policy(&self) -> crate::tree::TreePolicy {
        cfr::BatchedCfr::average_policy(self, 0, &self.uniform())
    }

    fn current_policy(&self) -> crate::tree::TreePolicy {
        cfr::BatchedCfr::current_policy(self, 0, &self.uniform())
    }

    /// Public-node updates over the whole batch: every node of the layout once per element
    /// and iteration.
    fn nodes_touched(&self) -> u64 {
        self.iteration() * (self.layout().len() * self.batch()) as u64
    }

    fn scalars(&self) -> Vec<(String, f64)> {
        vec![("batch".into(), self.batch() as f64)]
    }

    fn snapshot(&self) -> crate::cfr::SolverSnapshot {
        crate::cfr::SolverSnapshot {
            iteration: self.iteration(),
            counters: Vec::new(),
            arrays: self.state_arrays(),
        }
    }

    fn restore(&mut self, snapshot: crate::cfr::SolverSnapshot) -> Result<(), String> {
        self.restore_arrays(snapshot.iteration, &snapshot.arrays)
    }
}

impl crate::cfr::TreeSolver for pos::BatchedPos {
    fn iterate(&mut self) {
        pos::BatchedPos::iterate(self);
    }

    fn iteration(&self) -> u64 {
        pos::BatchedPos::iteration(self)
    }

    /// Batch element 0's.
    fn average_policy(&self) -> crate::tree::TreePolicy {
        pos::BatchedPos::average_policy(self, 0)
    }

    fn current_policy(&self) -> crate::tree::TreePolicy {
        pos::BatchedPos::current_policy(self, 0)
    }

    /// Public-node updates over the whole batch (every node on every sampled path).
    fn nodes_touched(&self) -> u64 {
        self.node_updates()
    }

    fn scalars(&self) -> Vec<(String, f64)> {
        vec![("batch".into(), self.batch() as f64)]
    }

    fn snapshot(&self) -> crate::cfr::SolverSnapshot {
        pos::BatchedPos::snapshot(self)
    }

    fn restore(&mut self, snapshot: crate::cfr::SolverSnapshot) -> Result<(), String> {
        pos::BatchedPos::restore(self, snapshot)
    }
}

#[cfg(test)]
mod tests;
