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

use super::batch::TrainBatch;
use super::batch::check_len;
use super::config::NnError;
use super::tensors::Block;
use super::tensors::Packed;
use super::tensors::Packer;
use burn::tensor::Int;
use burn::tensor::Tensor;

/// The critic and immediate-regret targets of a [`TrainBatch`]'s first `rows` rows as
/// coefficients of the learner's critic (see the module docs). With `q_p[j]` the critic row of
/// batch row `j` for player `p`'s utility and `s_p[j] = Σ_a successor[j, a] · q_p[j, a]`:
///
/// * critic target of row `r`: `base[r][p] + Σ_d weight[r, d] · s_p[index[r, d]]`;
/// * immediate-regret target of row `r` with acting player `p = player[r]`: at the legal
///   actions `q_p[r] − Σ_a policy[r, a] · q_p[r, a]`, 0 elsewhere.
///
/// The batch's `critic_target` and `immediate_target` of those rows are not read; rows from
/// `rows` on must weigh neither the critic nor the immediate-regret head. In a feed-forward
/// batch every row below `rows` must weigh the critic (so it is in the step's critic pass); a
/// recurrent batch computes every row's critic, so its padding rows may be covered, with zero
/// coefficients.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepTargets {
    /// Rows covered: the batch's first `rows`.
    pub rows: usize,
    /// Terms per row (the row stride of `index` and `weight`), at least 1 when `rows > 0`.
    pub depth: usize,
    /// `rows × A`: the target policy `π` at each row, 0 at illegal actions.
    pub policy: Vec<f32>,
    /// `rows × A`: the coefficients by which a row's critic enters the target of the rows
    /// before it on its trajectory (`π_j − c_j·onehot(a_j)`).
    pub successor: Vec<f32>,
    /// `rows × depth`: rows (below `rows`) whose `s` enter each row's critic target.
    pub index: Vec<usize>,
    /// `rows × depth`: their weights.
    pub weight: Vec<f32>,
    /// `rows`: the part of each critic target that the critic does not enter (the return's).
    pub base: Vec<[f32; 2]>,
    /// `rows`: the acting player (0 or 1), whose utility the immediate-regret target reads.
    pub player: Vec<u8>,
}

impl StepTargets {
    /// Checks the lengths and ranges against a batch `t` of `A = a` actions; `full_pass`: the
    /// step computes the critic of every row (recurrent batches).
    pub(super) fn validate(
        &self,
        t: &TrainBatch,
        a: usize,
        full_pass: bool,
    ) -> Result<(), NnError> {
        let (r, d) = (self.rows, self.depth);
        let bad = |what: String| Err(NnError::Config(format!("step_targets: {what}")));
        if r > t.rows() {
            return bad(format!("{r} rows in a batch of {}", t.rows()));
        }
        if r > 0 && d == 0 {
            return bad("depth 0".into());
        }
        check_len("step_targets.policy", self.policy.len(), r * a)?;
        check_len("step_targets.successor", self.successor.len(), r * a)?;
        check_len("step_targets.index", self.index.len(), r * d)?;
        check_len("step_targets.weight", self.weight.len(), r * d)?;
        check_len("step_targets.base", self.base.len(), r)?;
        check_len("step_targets.player", self.player.len(), r)?;
        if let Some(i) = self.index.iter().find(|&&i| i >= r) {
            return bad(format!("index {i} beyond its {r} rows"));
        }
        if let Some(p) = self.player.iter().find(|&&p| p > 1) {
            return bad(format!("player {p}"));
        }
        if let Some(i) = (0..r).find(|&i| !full_pass && t.critic_weight[i] == 0.0) {
            return bad(format!("row {i} has no critic weight"));
        }
        if let Some(i) =
            (r..t.rows()).find(|&i| t.critic_weight[i] != 0.0 || t.immediate_weight[i] != 0.0)
        {
            return bad(format!(
                "row {i} weighs the critic or the immediate-regret head but is not covered"
            ));
        }
        Ok(())
    }
}

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
