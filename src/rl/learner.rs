//! The learner side of ARMAC: turns sampled trajectories into one training batch.
//!
//! For every decision of the sampled trajectories (Algorithm 1, inner loop):
//! * the critic is trained towards Tree-Backup(λ) returns under the current joint policy
//!   `π^t = NormalizedReLU(W_θt)` (evaluated with the epoch's snapshot `θ^t`), bootstrapping on
//!   the learner's current critic;
//! * at the learning player's decisions (learning episodes), the mean-regret head `W` is trained
//!   towards the stored advantages of the past epoch `j`, and the immediate-regret head towards
//!   the current epoch's advantages `q_θ(h,·) − Σ_a π^t(a) q_θ(h,a)` (the critic being trained
//!   towards `π^t`);
//! * at the opponent's decisions, the average-policy head is trained towards the policy `π^j(s)`
//!   the opponent played.

use super::targets::{FlatTrajectory, tree_backup_targets};
use super::trajectory::Trajectory;
use crate::nn::armac::{ActBatch, ActOutput, TrainBatch};
use crate::policy::probs::normalized_relu;

/// Stacks the decisions of `trajs` into a network batch (rows in trajectory order).
pub fn act_batch(trajs: &[&Trajectory]) -> ActBatch {
    let mut b = ActBatch::default();
    for t in trajs {
        for s in &t.steps {
            b.own.extend_from_slice(&s.info[s.player]);
            b.both0.extend_from_slice(&s.info[0]);
            b.both1.extend_from_slice(&s.info[1]);
            b.legal.extend(s.legal.iter().map(|&l| l as u8 as f32));
        }
    }
    b
}

/// Builds the training batch for `trajs`, given the learner's current outputs `current` and the
/// epoch snapshot's outputs `snapshot` on [`act_batch`]`(trajs)`, and TB's `lambda`.
pub fn train_batch(
    trajs: &[&Trajectory],
    current: &ActOutput,
    snapshot: &ActOutput,
    num_actions: usize,
    lambda: f64,
) -> TrainBatch {
    let na = num_actions;
    let mut tb = TrainBatch::default();
    let inputs = act_batch(trajs);
    tb.own = inputs.own;
    tb.both0 = inputs.both0;
    tb.both1 = inputs.both1;
    tb.legal = inputs.legal;
    let mut row = 0;
    for t in trajs {
        let n = t.steps.len();
        let mut policy = Vec::with_capacity(n * na);
        let mut q = Vec::with_capacity(n * 2 * na);
        let mut actions = Vec::with_capacity(n);
        for (k, s) in t.steps.iter().enumerate() {
            let r = (row + k) * na..(row + k + 1) * na;
            policy.extend(
                normalized_relu(&snapshot.mean_regret[r.clone()], &s.legal)
                    .iter()
                    .map(|&x| x as f64),
            );
            q.extend(current.q0[r.clone()].iter().map(|&x| x as f64));
            q.extend(current.q1[r].iter().map(|&x| x as f64));
            actions.push(s.action);
        }
        let returns = [t.returns[0] as f64, t.returns[1] as f64];
        let flat = FlatTrajectory {
            num_actions: na,
            actions: &actions,
            policy: &policy,
            q: &q,
        };
        let targets = tree_backup_targets(&flat, returns, lambda);
        for (k, s) in t.steps.iter().enumerate() {
            let r = (row + k) * na..(row + k + 1) * na;
            tb.action.push(s.action);
            tb.critic_target
                .push([targets[k][0] as f32, targets[k][1] as f32]);
            tb.critic_weight.push(1.0);
            let learner_turn = t.learning && s.player == t.learning_player;
            match (&s.advantage, learner_turn) {
                (Some(adv), true) => {
                    tb.regret_target.extend_from_slice(adv);
                    tb.regret_weight.push(1.0);
                }
                _ => {
                    tb.regret_target.extend(std::iter::repeat_n(0.0, na));
                    tb.regret_weight.push(0.0);
                }
            }
            if learner_turn {
                // Current epoch's advantage q_θ(h,·) − v_θ(h) under π^t, with the critic being
                // trained towards π^t in this epoch.
                let qs = if s.player == 0 {
                    &current.q0[r.clone()]
                } else {
                    &current.q1[r.clone()]
                };
                let pi = normalized_relu(&snapshot.mean_regret[r.clone()], &s.legal);
                let v: f32 = pi.iter().zip(qs).map(|(a, b)| a * b).sum();
                tb.immediate_target.extend(
                    qs.iter()
                        .zip(&s.legal)
                        .map(|(x, &l)| if l { x - v } else { 0.0 }),
                );
                tb.immediate_weight.push(1.0);
            } else {
                tb.immediate_target.extend(std::iter::repeat_n(0.0, na));
                tb.immediate_weight.push(0.0);
            }
            match (
                &s.played_policy,
                t.learning && s.player != t.learning_player,
            ) {
                (Some(p), true) => {
                    tb.policy_target.extend_from_slice(p);
                    tb.policy_weight.push(1.0);
                }
                _ => {
                    tb.policy_target.extend(std::iter::repeat_n(0.0, na));
                    tb.policy_weight.push(0.0);
                }
            }
        }
        row += n;
    }
    tb
}
