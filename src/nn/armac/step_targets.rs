//! Critic and immediate-regret targets computed inside a learning step, from the critic values
//! of the step's own forward pass.
//!
//! The Tree-Backup(λ) target of a replayed decision and the immediate-regret target read the
//! learner's critic at the weights before the step, which are the weights the step's forward
//! pass runs with. So instead of evaluating the critic first and building the targets on the
//! host (one more forward pass, one read-back per step), the host sends the coefficients of the
//! targets as linear functions of the critic ([`StepTargets`]) and the learner evaluates them
//! on its device from the forward pass's critic outputs, detached from the gradient.
//!
//! Unrolling Tree-Backup's recursion `G_k = V_{k+1} + c_{k+1}·(G_{k+1} − q_{k+1}(a_{k+1}))`,
//! `c_j = λ·π_j(a_j)`, `G_{T−1} = u`, over one trajectory gives
//!
//! ```text
//! G_k = Σ_{d = 0}^{T−2−k} (Π_{i=1}^{d} c_{k+i}) · s_{k+d+1}  +  (Π_{i=1}^{T−1−k} c_{k+i}) · u
//! s_j = Σ_a (π_j(a) − c_j·[a = a_j]) · q_j(a)
//! ```
//!
//! one gather of `s` with host-made indices and weights.

use super::batch::StepTargets;
use super::tensors::Block;
use super::tensors::Packed;
use super::tensors::Packer;
use burn::tensor::Int;
use burn::tensor::Tensor;

/// Where [`StepTargets`] lie in a [`Packer`], in the packed order of the rows.
pub(super) struct StepTargetBlocks {
    rows: usize,
    depth: usize,
    policy: Block,
    successor: Block,
    index: Block,
    weight: Block,
    base: Block,
    player: Block,
}

/// Packs `st` for a pass whose row `i` is the batch's row `order[i]`; rows not covered get
/// zero coefficients.
///
/// # Panics
/// If a covered row is not in `order` (validation guarantees it is).
pub(super) fn pack_step_targets(
    p: &mut Packer,
    st: &StepTargets,
    order: &[usize],
    a: usize,
) -> StepTargetBlocks {
    let (b, d) = (order.len(), st.depth.max(1));
    let mut pos = vec![usize::MAX; st.rows];
    for (i, &o) in order.iter().enumerate() {
        if o < st.rows {
            pos[o] = i;
        }
    }
    assert!(
        pos.iter().all(|&i| i != usize::MAX),
        "every row with step targets is in the pass"
    );
    let covered = |o: usize| (o < st.rows).then_some(o);
    let rows_of = |v: &[f32], width: usize| -> Vec<f32> {
        let mut out = Vec::with_capacity(b * width);
        for &o in order {
            match covered(o) {
                Some(o) => out.extend_from_slice(&v[o * width..(o + 1) * width]),
                None => out.extend(std::iter::repeat_n(0.0, width)),
            }
        }
        out
    };
    let policy = p.push(&rows_of(&st.policy, a), b, a);
    let successor = p.push(&rows_of(&st.successor, a), b, a);
    let weight = p.push(&rows_of(&st.weight, st.depth), b, d);
    let index = p.push_with(b, d, |v| {
        for &o in order {
            match covered(o) {
                Some(o) => v.extend(
                    st.index[o * st.depth..(o + 1) * st.depth]
                        .iter()
                        .map(|&j| pos[j] as f32),
                ),
                None => v.extend(std::iter::repeat_n(0.0, d)),
            }
        }
    });
    let base = p.push_with(b, 2, |v| {
        for &o in order {
            v.extend(covered(o).map_or([0.0; 2], |o| st.base[o]));
        }
    });
    let player = p.push_with(b, 1, |v| {
        v.extend(
            order
                .iter()
                .map(|&o| covered(o).map_or(0.0, |o| f32::from(st.player[o]))),
        )
    });
    StepTargetBlocks {
        rows: b,
        depth: d,
        policy,
        successor,
        index,
        weight,
        base,
        player,
    }
}

impl StepTargetBlocks {
    /// The critic targets `[B, 2]` and the immediate-regret targets `[B, A]` from the pass's
    /// critic `q` (detached: targets carry no gradient) and its legal mask `[B, A]`.
    pub(super) fn targets(
        &self,
        q: &[Tensor<2>; 2],
        legal: Tensor<2>,
        p: &Packed,
    ) -> (Tensor<2>, Tensor<2>) {
        let (b, d) = (self.rows, self.depth);
        let get = |blk: Block| p.get(blk).inner();
        let [q0, q1] = q.clone().map(|q| q.detach().inner());
        let successor = get(self.successor);
        let s = Tensor::cat(
            vec![
                (q0.clone() * successor.clone()).sum_dim(1),
                (q1.clone() * successor).sum_dim(1),
            ],
            1,
        ); // [B, 2]
        let index: Tensor<1, Int> = get(self.index).reshape([b * d]).int();
        let terms = s.select(0, index).reshape([b, d, 2]);
        let weight = get(self.weight).reshape([b, d, 1]);
        let critic = (terms * weight).sum_dim(1).reshape([b, 2]) + get(self.base);
        // The acting player's critic row: q0 + (q1 − q0)·player.
        let player = get(self.player);
        let own = q0.clone() + (q1 - q0) * player;
        let v = (own.clone() * get(self.policy)).sum_dim(1); // [B, 1]
        let immediate = (own - v) * legal.inner();
        (critic.autodiff(), immediate.autodiff())
    }
}
