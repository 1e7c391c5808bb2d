//! The loss terms of a learning step: a batch's targets and weights packed for the upload
//! ([`pack_targets`], host arithmetic), and the four weighted losses evaluated against the
//! network's outputs on the device ([`TargetBlocks::losses`]).

use super::batch::TrainBatch;
use super::net::ArmacOutput;
use super::tensors::Block;
use super::tensors::Packed;
use super::tensors::Packer;
use burn::tensor::Tensor;
use burn::tensor::activation::log_softmax;

/// Where the targets and weights of a batch lie in a [`Packer`] ([`pack_targets`]).
pub(super) struct TargetBlocks {
    /// `[B, A]`: one-hot of the taken action.
    onehot: Block,
    /// `[B, 1]`: normalised critic weights, halved.
    critic_weight: Block,
    /// `[B, 2]`: the critic targets of both players (`None`: computed in the step).
    critic_target: Option<Block>,
    /// `[B, A]` masked targets and `[B, 1]` per-legal-action row weights of the mean-regret
    /// and immediate-regret heads (the immediate targets `None`: computed in the step).
    regret: [Block; 2],
    immediate_target: Option<Block>,
    immediate_weight: Block,
    /// `[B, A]` masked policy targets and `[B, 1]` normalised weights.
    policy: [Block; 2],
}

/// Packs the targets and weights of `t` (host arithmetic: normalised weights, masks, the
/// one-hot taken action); without the critic and immediate-regret targets when `in_step`
/// (the step computes them, [`StepTargets`]).
pub(super) fn pack_targets(
    p: &mut Packer,
    t: &TrainBatch,
    a: usize,
    in_step: bool,
) -> TargetBlocks {
    let b = t.rows();
    let normalise = |w: &[f32]| -> Vec<f32> {
        let sum: f32 = w.iter().sum();
        if sum > 0.0 {
            w.iter().map(|x| x / sum).collect()
        } else {
            vec![0.0; w.len()]
        }
    };
    let n_legal: Vec<f32> = t
        .legal
        .chunks_exact(a)
        .map(|r| r.iter().filter(|&&l| l > 0.5).count().max(1) as f32)
        .collect();
    let masked = |v: &[f32]| -> Vec<f32> {
        v.iter()
            .zip(&t.legal)
            .map(|(&x, &l)| if l > 0.5 { x } else { 0.0 })
            .collect()
    };
    let mut onehot = vec![0.0f32; b * a];
    for (i, &act) in t.action.iter().enumerate() {
        if act < a {
            onehot[i * a + act] = 1.0;
        }
    }
    let onehot = p.push(&onehot, b, a);
    let cw: Vec<f32> = normalise(&t.critic_weight)
        .iter()
        .map(|w| 0.5 * w)
        .collect();
    let critic_weight = p.push(&cw, b, 1);
    let critic_target =
        (!in_step).then(|| p.push_with(b, 2, |v| v.extend(t.critic_target.iter().flatten())));
    // Regret heads: mean over legal actions, weighted mean over rows.
    let mut per_legal = |w: &[f32]| -> Block {
        let col: Vec<f32> = normalise(w)
            .iter()
            .zip(&n_legal)
            .map(|(w, n)| w / n)
            .collect();
        p.push(&col, b, 1)
    };
    let regret_w = per_legal(&t.regret_weight);
    let imm_w = per_legal(&t.immediate_weight);
    let regret = [p.push(&masked(&t.regret_target), b, a), regret_w];
    let immediate_target = (!in_step).then(|| p.push(&masked(&t.immediate_target), b, a));
    let policy = [
        p.push(&masked(&t.policy_target), b, a),
        p.push(&normalise(&t.policy_weight), b, 1),
    ];
    TargetBlocks {
        onehot,
        critic_weight,
        critic_target,
        regret,
        immediate_target,
        immediate_weight: imm_w,
        policy,
    }
}

impl TargetBlocks {
    /// The four weighted loss terms (`[1]` each) of `out` against the packed targets: critic,
    /// mean regret, immediate regret, policy. `in_step` holds the critic (`[B, 2]`) and
    /// immediate-regret (`[B, A]`) targets computed in the step when they were not packed.
    pub(super) fn losses(
        &self,
        out: ArmacOutput,
        p: &Packed,
        in_step: Option<(Tensor<2>, Tensor<2>)>,
    ) -> [Tensor<1>; 4] {
        let (critic_target, immediate_target) = match in_step {
            Some((c, i)) => (c, i),
            None => (
                p.get(self.critic_target.expect("packed critic targets")),
                p.get(self.immediate_target.expect("packed immediate targets")),
            ),
        };
        // Critic at the taken action.
        let onehot = p.get(self.onehot); // [B, A]
        let cw = p.get(self.critic_weight); // [B, 1]
        let targets = critic_target; // [B, 2]
        let t0 = targets.clone().narrow(1, 0, 1); // [B, 1]
        let t1 = targets.narrow(1, 1, 1); // [B, 1]
        let [q0, q1] = out.q;
        let q0a = (q0 * onehot.clone()).sum_dim(1); // [B, 1]
        let q1a = (q1 * onehot).sum_dim(1); // [B, 1]
        let critic = (((q0a - t0).square() + (q1a - t1).square()) * cw).sum();
        // Heads are 0 at illegal actions and so are the masked targets, so illegal entries
        // contribute nothing.
        let mse = |head: Tensor<2>, [y, w]: [Block; 2]| weighted_sq_error(head, p.get(y), p.get(w));
        let mean_regret = mse(out.mean_regret, self.regret);
        let immediate = weighted_sq_error(
            out.immediate_regret,
            immediate_target,
            p.get(self.immediate_weight),
        );
        let [pt, pw] = self.policy.map(|b| p.get(b));
        let policy = policy_cross_entropy(out.avg_logits, pt, pw);
        [critic, mean_regret, immediate, policy]
    }
}

/// The regret heads' loss: `Σ_rows w · Σ_a (head − target)²` (`head` and `target` `[B, A]`,
/// `w` `[B, 1]`, already divided by the row's number of legal actions).
pub(super) fn weighted_sq_error(head: Tensor<2>, target: Tensor<2>, w: Tensor<2>) -> Tensor<1> {
    ((head - target).square() * w).sum()
}

/// The average-policy loss: the `w`-weighted cross-entropy of the masked softmax of `logits`
/// against the `target` distributions.
pub(super) fn policy_cross_entropy(
    logits: Tensor<2>,
    target: Tensor<2>,
    w: Tensor<2>,
) -> Tensor<1> {
    (log_softmax(logits, 1) * target * w).sum().neg()
}
