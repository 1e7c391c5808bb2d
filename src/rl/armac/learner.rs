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
use crate::nn::armac::{ActBatch, ActOutput, StepTargets, TrainBatch};
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

/// Where a training batch's critic and immediate-regret targets come from.
#[derive(Clone, Copy)]
pub enum CriticTargets<'a> {
    /// Built here from the learner's critic outputs on the batch (an evaluation before the
    /// step).
    Host(&'a ActOutput),
    /// Sent as [`StepTargets`], coefficients that the learner evaluates on the critic values
    /// of the step's own forward pass (the same targets, no critic evaluation or read-back
    /// before the step).
    InStep,
}

/// The training batch of `trajs`, whose stacked decisions are `inputs` ([`act_batch`]), from
/// the epoch snapshot's outputs `snapshot` on them, TB's `lambda`, and the critic targets'
/// source.
pub fn train_batch(
    trajs: &[&Trajectory],
    inputs: ActBatch,
    critic: CriticTargets,
    snapshot: &ActOutput,
    num_actions: usize,
    lambda: f64,
) -> TrainBatch {
    let na = num_actions;
    let mut tb = TrainBatch {
        own: inputs.own,
        both0: inputs.both0,
        both1: inputs.both1,
        legal: inputs.legal,
        ..TrainBatch::default()
    };
    let rows: usize = trajs.iter().map(|t| t.len()).sum();
    // The critic's source, with the step targets being built when the step computes them.
    enum Source<'a> {
        Host(&'a ActOutput),
        InStep(StepTargets),
    }
    let mut source = match critic {
        CriticTargets::Host(c) => Source::Host(c),
        CriticTargets::InStep => {
            let depth = trajs.iter().map(|t| t.len()).max().unwrap_or(1).max(2) - 1;
            Source::InStep(StepTargets {
                rows,
                depth,
                ..StepTargets::default()
            })
        }
    };
    let current = match critic {
        CriticTargets::Host(c) => Some(c),
        CriticTargets::InStep => None,
    };
    let mut row = 0;
    for t in trajs {
        let n = t.steps.len();
        // The target policy π^t of every step.
        let policy: Vec<Vec<f32>> = t
            .steps
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let r = (row + k) * na..(row + k + 1) * na;
                normalized_relu(&snapshot.mean_regret[r], &s.legal)
            })
            .collect();
        let targets = match &mut source {
            Source::Host(cur) => host_targets(t, &policy, cur, row, na, lambda),
            Source::InStep(st) => {
                push_step_targets(st, t, &policy, row, lambda);
                vec![[0.0; 2]; n]
            }
        };
        for (k, s) in t.steps.iter().enumerate() {
            let r = (row + k) * na..(row + k + 1) * na;
            tb.action.push(s.action);
            tb.critic_target.push(targets[k]);
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
            match (learner_turn, current) {
                (true, Some(cur)) => {
                    // Current epoch's advantage q_θ(h,·) − v_θ(h) under π^t, with the critic
                    // being trained towards π^t in this epoch.
                    let qs = if s.player == 0 {
                        &cur.q0[r.clone()]
                    } else {
                        &cur.q1[r.clone()]
                    };
                    let v: f32 = policy[k].iter().zip(qs).map(|(a, b)| a * b).sum();
                    tb.immediate_target.extend(
                        qs.iter()
                            .zip(&s.legal)
                            .map(|(x, &l)| if l { x - v } else { 0.0 }),
                    );
                }
                _ => tb.immediate_target.extend(std::iter::repeat_n(0.0, na)),
            }
            tb.immediate_weight
                .push(if learner_turn { 1.0 } else { 0.0 });
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
    if let Source::InStep(st) = source {
        tb.step_targets = Some(st);
    }
    tb
}

/// Tree-Backup(λ) targets of trajectory `t` (its rows start at `row`) under `policy`, from the
/// learner's critic `current`.
fn host_targets(
    t: &Trajectory,
    policy: &[Vec<f32>],
    current: &ActOutput,
    row: usize,
    na: usize,
    lambda: f64,
) -> Vec<[f32; 2]> {
    let n = t.steps.len();
    let mut pi = Vec::with_capacity(n * na);
    let mut q = Vec::with_capacity(n * 2 * na);
    for (k, p) in policy.iter().enumerate() {
        let r = (row + k) * na..(row + k + 1) * na;
        pi.extend(p.iter().map(|&x| x as f64));
        q.extend(current.q0[r.clone()].iter().map(|&x| x as f64));
        q.extend(current.q1[r].iter().map(|&x| x as f64));
    }
    let actions: Vec<usize> = t.steps.iter().map(|s| s.action).collect();
    let flat = FlatTrajectory {
        num_actions: na,
        actions: &actions,
        policy: &pi,
        q: &q,
    };
    let returns = [t.returns[0] as f64, t.returns[1] as f64];
    tree_backup_targets(&flat, returns, lambda)
        .into_iter()
        .map(|g| [g[0] as f32, g[1] as f32])
        .collect()
}

/// Appends the [`StepTargets`] rows of trajectory `t` (its rows start at `row`): Tree-Backup's
/// recursion unrolled into weights of the later steps' critic values (see
/// [`crate::nn::armac::StepTargets`]).
fn push_step_targets(
    st: &mut StepTargets,
    t: &Trajectory,
    policy: &[Vec<f32>],
    row: usize,
    lambda: f64,
) {
    let (n, depth) = (t.steps.len(), st.depth);
    // c_j = λ·π_j(a_j): how much of step j's own return survives the backup.
    let c: Vec<f64> = t
        .steps
        .iter()
        .zip(policy)
        .map(|(s, p)| lambda * p[s.action] as f64)
        .collect();
    for (k, s) in t.steps.iter().enumerate() {
        st.policy.extend_from_slice(&policy[k]);
        st.successor
            .extend(policy[k].iter().enumerate().map(|(a, &p)| {
                if a == s.action {
                    (p as f64 - c[k]) as f32
                } else {
                    p
                }
            }));
        st.player.push(s.player as u8);
        // G_k = Σ_d (Π_{i=1..d} c_{k+i}) s_{k+d+1} + (Π_{i=1..n-1-k} c_{k+i}) u.
        let mut w = 1.0f64;
        for d in 0..depth {
            let j = k + d + 1;
            if j < n {
                st.index.push(row + j);
                st.weight.push(w as f32);
                w *= c[j];
            } else {
                st.index.push(row + k);
                st.weight.push(0.0);
            }
        }
        st.base.push([
            (w * t.returns[0] as f64) as f32,
            (w * t.returns[1] as f64) as f32,
        ]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::load_game;
    use crate::nn::armac::{ArmacLearner, ArmacNetConfig, ArmacPolicyNet, Losses};
    use crate::rl::armac::actor::{episode_settings, one_epoch_snapshots, play_group};
    use crate::rl::armac::candidates::Candidate;
    use crate::util::SplitMix64;

    /// Learning episodes of Leduc (up to 8 decisions) played by a random feed-forward net.
    fn leduc_episodes() -> (ArmacNetConfig, ArmacPolicyNet, Vec<Trajectory>) {
        let game = load_game("leduc_poker").unwrap();
        let cfg = ArmacNetConfig::new(
            game.information_state_tensor_size(),
            game.num_distinct_actions(),
        )
        .with_encoder_hidden(16)
        .with_head_hidden(16)
        .with_zero_init_heads(false);
        let net = ArmacPolicyNet::init(cfg.clone(), 3).unwrap();
        let snaps = one_epoch_snapshots(&net, &net, &net);
        let settings = episode_settings(24, 13.0);
        let (trajs, _) = play_group(
            &game,
            &snaps,
            &settings,
            Candidate::all(),
            &mut SplitMix64::new(7),
        );
        (cfg, net, trajs)
    }

    /// The batch with targets computed in the step holds the host batch's rows and weights,
    /// and trains the learner exactly as the host batch built from a critic evaluation before
    /// each step: Tree-Backup(λ) unrolled into weights of later critic values is the same
    /// target.
    #[test]
    fn targets_in_step_train_as_host_targets() {
        let (cfg, net, trajs) = leduc_episodes();
        let picks: Vec<&Trajectory> = trajs.iter().collect();
        assert!(picks.iter().map(|t| t.len()).max().unwrap() >= 4);
        assert!(picks.iter().any(|t| t.learning));
        let na = cfg.num_actions;
        let inputs = act_batch(&picks);
        let snap = net.evaluate_mean_regret(&inputs).unwrap();
        let flex = crate::nn::select_device("flex").unwrap();
        let mut host = ArmacLearner::new(cfg.clone(), &flex, 1e-2, 5);
        let mut in_step = ArmacLearner::new(cfg, &flex, 1e-2, 5);
        let sums = |l: &Losses| [l.critic, l.mean_regret, l.immediate_regret, l.policy];
        for lambda in [0.9, 0.0, 1.0] {
            for step in 0..3 {
                let current = host.evaluate_critic(&inputs);
                let host_targets = CriticTargets::Host(&current);
                let h = train_batch(&picks, inputs.clone(), host_targets, &snap, na, lambda);
                let s = train_batch(
                    &picks,
                    inputs.clone(),
                    CriticTargets::InStep,
                    &snap,
                    na,
                    lambda,
                );
                assert_eq!(
                    (
                        &h.action,
                        &h.regret_weight,
                        &h.immediate_weight,
                        &h.policy_weight
                    ),
                    (
                        &s.action,
                        &s.regret_weight,
                        &s.immediate_weight,
                        &s.policy_weight
                    )
                );
                assert_eq!(
                    (&h.regret_target, &h.policy_target),
                    (&s.regret_target, &s.policy_target)
                );
                let (want, got) = (host.train_step(&h), in_step.train_step(&s));
                assert!(want.critic > 0.0 && want.immediate_regret > 0.0, "{want:?}");
                for k in 0..4 {
                    let (g, w) = (sums(&got)[k], sums(&want)[k]);
                    assert!(
                        (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
                        "λ {lambda}, step {step}, loss {k}: {g} vs {w}"
                    );
                }
            }
        }
    }
}
