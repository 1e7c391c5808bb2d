//! Sequences for ARMAC's recurrent network (Appendix F): the network reads, at every decision
//! of an episode, both players' per-step observation tensors (chance steps are not steps of
//! their own: their outcomes show up in the next decision's observations), and carries one LSTM
//! state per player from the start of the episode.
//!
//! * [`decision_path`] — the decisions along a history, as the actors would have recorded them
//!   (used to evaluate a recurrent network at an arbitrary state: exact evaluation, policies).
//! * [`seq_inputs`] — stacks step sequences into padded [`SeqInputs`].
//! * [`seq_train_batch`] — the learner's batch: the feed-forward path's targets
//!   ([`super::learner::train_batch`]: Tree-Backup(λ), advantages, average-policy targets) laid
//!   out as padded sequences, split into unrolls whose starting states carry over.

use super::learner::{CriticTargets, train_batch};
use super::trajectory::{Step, Trajectory};
use crate::game::{Action, Game, GameError, Turn};
use crate::nn::armac::{
    ActBatch, ActOutput, RecurrentState, SeqInputs, SeqTrainBatch, StepTargets, TrainBatch,
};

/// The decisions along `history` (from the root), each with both players' observation tensors,
/// the acting player, the legal actions and the action `history` takes there (`0` for a final
/// decision that `history` ends at). Chance nodes are skipped.
pub fn decision_path(game: &dyn Game, history: &[Action]) -> Result<Vec<Step>, GameError> {
    let n_obs = game.observation_tensor_size();
    let na = game.num_distinct_actions();
    let mut state = game.new_initial_state();
    let mut out = Vec::new();
    let mut record = |state: &dyn crate::game::State, action: usize| {
        if let Turn::Player(p) = state.turn() {
            let mut o0 = vec![0.0; n_obs];
            let mut o1 = vec![0.0; n_obs];
            state.observation_tensor(0, &mut o0);
            state.observation_tensor(1, &mut o1);
            let mut legal = vec![false; na];
            for a in state.legal_actions() {
                legal[a] = true;
            }
            out.push(Step {
                player: p,
                info: [o0, o1],
                legal,
                action,
                advantage: None,
                played_policy: None,
                reach: 1.0,
            });
        }
    };
    for &a in history {
        record(state.as_ref(), a);
        state.try_apply(a)?;
    }
    record(state.as_ref(), 0);
    Ok(out)
}

/// Number of steps of a padded batch whose longest sequence has `max_len` steps, unrolled
/// `chunk` steps at a time: `max_len` itself when one unroll covers it, else a whole number of
/// unrolls.
pub fn seq_time(max_len: usize, chunk: usize) -> usize {
    let chunk = chunk.max(1);
    if max_len <= chunk {
        max_len
    } else {
        max_len.div_ceil(chunk) * chunk
    }
}

/// Stacks `seqs` (each at most `time` steps) into [`SeqInputs`]; padding steps (at the end)
/// have zero observations, player 0 acting and every action legal.
pub fn seq_inputs(seqs: &[&[Step]], time: usize, input_size: usize, na: usize) -> SeqInputs {
    let n = seqs.len() * time;
    let mut x = SeqInputs {
        sequences: seqs.len(),
        time,
        obs0: Vec::with_capacity(n * input_size),
        obs1: Vec::with_capacity(n * input_size),
        acting_player: Vec::with_capacity(n),
        legal: Vec::with_capacity(n * na),
    };
    for seq in seqs {
        assert!(seq.len() <= time, "a sequence is longer than the batch");
        for s in seq.iter() {
            x.obs0.extend_from_slice(&s.info[0]);
            x.obs1.extend_from_slice(&s.info[1]);
            x.acting_player.push(s.player);
            x.legal
                .extend(s.legal.iter().map(|&l| f32::from(u8::from(l))));
        }
        let pad = time - seq.len();
        x.obs0.extend(std::iter::repeat_n(0.0, pad * input_size));
        x.obs1.extend(std::iter::repeat_n(0.0, pad * input_size));
        x.acting_player.extend(std::iter::repeat_n(0, pad));
        x.legal.extend(std::iter::repeat_n(1.0, pad * na));
    }
    x
}

/// The rows `rows` of `out`, in that order.
pub fn gather_rows(out: &ActOutput, rows: &[usize]) -> ActOutput {
    let a = out.num_actions;
    let pick = |f: &[f32]| -> Vec<f32> {
        rows.iter()
            .flat_map(|&r| f[r * a..(r + 1) * a].iter().copied())
            .collect()
    };
    ActOutput {
        rows: rows.len(),
        num_actions: a,
        q0: pick(&out.q0),
        q1: pick(&out.q1),
        mean_regret: pick(&out.mean_regret),
        immediate_regret: pick(&out.immediate_regret),
        avg_policy: pick(&out.avg_policy),
    }
}

/// Where a sequence batch's critic and immediate-regret targets come from.
#[derive(Clone, Copy)]
pub enum SeqCritic<'a> {
    /// The learner's outputs on the batch's inputs and its states at the start of each
    /// unroll (its `evaluate_sequences(inputs, chunk)`).
    Host {
        current: &'a ActOutput,
        starts: &'a [[RecurrentState; 2]],
    },
    /// Computed inside the learning step from its own forward pass ([`StepTargets`]); needs
    /// one unroll per episode (`inputs.time <= chunk`).
    InStep,
}

/// The recurrent learner's batch for `trajs` (stacked as `inputs` by [`seq_inputs`] with
/// `inputs.time` = [`seq_time`]`(max length, chunk)`): `snapshot` is the epoch snapshot's
/// outputs on `inputs`, `critic` the source of the critic targets.
///
/// Targets are exactly the feed-forward path's ([`train_batch`] on the real steps); padding rows
/// get zero weights. When the episodes need several unrolls, each unroll becomes one sequence
/// of the batch, starting from the carried state (truncated backpropagation through time).
///
/// # Panics
/// With [`SeqCritic::InStep`] when the episodes need several unrolls.
pub fn seq_train_batch(
    trajs: &[&Trajectory],
    inputs: &SeqInputs,
    critic: SeqCritic,
    snapshot: &ActOutput,
    na: usize,
    lambda: f64,
    chunk: usize,
) -> SeqTrainBatch {
    let t = inputs.time;
    let real: Vec<usize> = trajs
        .iter()
        .enumerate()
        .flat_map(|(s, tr)| (0..tr.len()).map(move |k| s * t + k))
        .collect();
    let host_current;
    let (flat_critic, starts) = match critic {
        SeqCritic::Host { current, starts } => {
            host_current = gather_rows(current, &real);
            (CriticTargets::Host(&host_current), starts)
        }
        SeqCritic::InStep => {
            assert!(
                t <= chunk.max(1),
                "step targets need one unroll per episode"
            );
            (CriticTargets::InStep, &[][..])
        }
    };
    // Only the flat batch's targets are read: the sequence batch lays out its own inputs.
    let flat = train_batch(
        trajs,
        ActBatch::default(),
        flat_critic,
        &gather_rows(snapshot, &real),
        na,
        lambda,
    );
    let mut tb = TrainBatch::default();
    tb.legal.clone_from(&inputs.legal);
    let mut r = 0;
    for tr in trajs {
        let n = tr.len();
        tb.action.extend_from_slice(&flat.action[r..r + n]);
        tb.critic_target
            .extend_from_slice(&flat.critic_target[r..r + n]);
        tb.critic_weight
            .extend_from_slice(&flat.critic_weight[r..r + n]);
        tb.regret_target
            .extend_from_slice(&flat.regret_target[r * na..(r + n) * na]);
        tb.regret_weight
            .extend_from_slice(&flat.regret_weight[r..r + n]);
        tb.immediate_target
            .extend_from_slice(&flat.immediate_target[r * na..(r + n) * na]);
        tb.immediate_weight
            .extend_from_slice(&flat.immediate_weight[r..r + n]);
        tb.policy_target
            .extend_from_slice(&flat.policy_target[r * na..(r + n) * na]);
        tb.policy_weight
            .extend_from_slice(&flat.policy_weight[r..r + n]);
        let pad = t - n;
        tb.action.extend(std::iter::repeat_n(0, pad));
        tb.critic_target.extend(std::iter::repeat_n([0.0; 2], pad));
        for w in [
            &mut tb.critic_weight,
            &mut tb.regret_weight,
            &mut tb.immediate_weight,
            &mut tb.policy_weight,
        ] {
            w.extend(std::iter::repeat_n(0.0, pad));
        }
        for v in [
            &mut tb.regret_target,
            &mut tb.immediate_target,
            &mut tb.policy_target,
        ] {
            v.extend(std::iter::repeat_n(0.0, pad * na));
        }
        r += n;
    }
    tb.step_targets = flat
        .step_targets
        .as_ref()
        .map(|st| pad_step_targets(st, &real, tb.rows(), na));
    let s = inputs.sequences;
    let chunks = starts.len().max(1);
    // Row-major [S, C·U] is [S·C, U]: unroll c of episode s is sequence s·C + c.
    let (sequences, time, initial_state) = if chunks == 1 {
        (s, t, None)
    } else {
        let u = chunk.max(1);
        assert_eq!(
            t,
            chunks * u,
            "the padded length must be a whole number of unrolls"
        );
        let state = std::array::from_fn(|p| {
            RecurrentState::stack(
                (0..s)
                    .flat_map(|q| (0..chunks).map(move |c| (q, c)))
                    .map(|(q, c)| starts[c][p].row(q))
                    .collect::<Vec<_>>()
                    .iter(),
            )
        });
        (s * chunks, u, Some(state))
    };
    SeqTrainBatch {
        sequences,
        time,
        obs0: inputs.obs0.clone(),
        obs1: inputs.obs1.clone(),
        acting_player: inputs.acting_player.clone(),
        initial_state,
        targets: tb,
    }
}

/// `st` over the flat rows of the real steps, moved to the padded rows `real` of a batch of
/// `rows` rows; padding rows get zero coefficients (their targets are 0 and weigh nothing).
fn pad_step_targets(st: &StepTargets, real: &[usize], rows: usize, na: usize) -> StepTargets {
    let d = st.depth;
    let mut out = StepTargets {
        rows,
        depth: d,
        policy: vec![0.0; rows * na],
        successor: vec![0.0; rows * na],
        index: (0..rows).flat_map(|r| std::iter::repeat_n(r, d)).collect(),
        weight: vec![0.0; rows * d],
        base: vec![[0.0; 2]; rows],
        player: vec![0; rows],
    };
    for (f, &r) in real.iter().enumerate() {
        out.policy[r * na..(r + 1) * na].copy_from_slice(&st.policy[f * na..(f + 1) * na]);
        out.successor[r * na..(r + 1) * na].copy_from_slice(&st.successor[f * na..(f + 1) * na]);
        for k in 0..d {
            out.index[r * d + k] = real[st.index[f * d + k]];
            out.weight[r * d + k] = st.weight[f * d + k];
        }
        out.base[r] = st.base[f];
        out.player[r] = st.player[f];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::load_game;
    use crate::nn::armac::{ArmacNetConfig, ArmacPolicyNet};
    use crate::policy::probs::normalized_relu;
    use crate::rl::armac::actor::{episode_settings, one_epoch_snapshots, play_group};
    use crate::rl::armac::candidates::Candidate;
    use crate::util::SplitMix64;

    fn kuhn_net(seed: u64) -> (crate::game::GameRef, ArmacPolicyNet) {
        let game = load_game("kuhn_poker").unwrap();
        let cfg = ArmacNetConfig::new(game.observation_tensor_size(), game.num_distinct_actions())
            .with_encoder_hidden(8)
            .with_head_hidden(8)
            .with_recurrent(true);
        (game, ArmacPolicyNet::init(cfg, seed).unwrap())
    }

    fn close(a: &[f32], b: &[f32]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-5)
    }

    /// Unrolls of 1 or 2 steps with carried states give the same outputs as one unroll, and a
    /// sequence padded inside a longer batch gives the same outputs as alone.
    #[test]
    fn carried_unrolls_and_padding_do_not_change_outputs() {
        let (game, net) = kuhn_net(3);
        let na = game.num_distinct_actions();
        let n_obs = game.observation_tensor_size();
        // Histories: deal 0/1, pass, bet, pass (3 decisions) and deal 2/0, bet (2 decisions).
        let long = decision_path(game.as_ref(), &[0, 1, 0, 1, 0]).unwrap();
        let short = decision_path(game.as_ref(), &[2, 0, 1]).unwrap();
        assert_eq!((long.len(), short.len()), (3, 2));
        assert_eq!(long[1].player, 1);
        assert_eq!(seq_time(3, 2), 4);
        assert_eq!(seq_time(3, 32), 3);
        let both = seq_inputs(&[&long, &short], 4, n_obs, na);
        let (one, starts1) = net.evaluate_sequences(&both, 4).unwrap();
        let (two, starts2) = net.evaluate_sequences(&both, 2).unwrap();
        let (unit, _) = net.evaluate_sequences(&both, 1).unwrap();
        assert_eq!((starts1.len(), starts2.len()), (1, 2));
        assert!(starts2[1][0].hidden.iter().any(|&x| x != 0.0));
        for f in [
            |o: &ActOutput| o.q0.clone(),
            |o: &ActOutput| o.mean_regret.clone(),
            |o: &ActOutput| o.avg_policy.clone(),
        ] {
            assert!(close(&f(&one), &f(&two)));
            assert!(close(&f(&one), &f(&unit)));
        }
        let alone = seq_inputs(&[&short], 2, n_obs, na);
        let (a, _) = net.evaluate_sequences(&alone, 2).unwrap();
        let in_batch = gather_rows(&one, &[4, 5]);
        assert!(close(&a.mean_regret, &in_batch.mean_regret));
        assert!(close(&a.q1, &in_batch.q1));
        // The recurrent state matters: the second decision of `long` differs from the same
        // observations seen from the zero state.
        let fresh = seq_inputs(&[&long[1..2]], 1, n_obs, na);
        let (f, _) = net.evaluate_sequences(&fresh, 1).unwrap();
        assert!(!close(&f.q0, &gather_rows(&one, &[1]).q0));
    }

    /// The actors carry each network's LSTM state per game: the advantages and policies they
    /// store equal those of the networks unrolled along each finished episode.
    #[test]
    fn actor_states_match_unrolled_episodes() {
        let (game, latest) = kuhn_net(1);
        let (_, policy) = kuhn_net(2);
        let (_, critic) = kuhn_net(3);
        let snaps = one_epoch_snapshots(&latest, &policy, &critic);
        let settings = episode_settings(16, 2.0);
        let mut rng = SplitMix64::new(9);
        let (trajs, _) = play_group(&game, &snaps, &settings, Candidate::all(), &mut rng);
        assert_eq!(trajs.len(), 16);
        let na = game.num_distinct_actions();
        let mut checked = 0;
        for t in &trajs {
            assert!(t.learning);
            let inputs = seq_inputs(&[&t.steps], t.len(), game.observation_tensor_size(), na);
            let (pj, _) = policy.evaluate_sequences(&inputs, t.len()).unwrap();
            let (qj, _) = critic.evaluate_sequences(&inputs, t.len()).unwrap();
            for (k, s) in t.steps.iter().enumerate() {
                let r = k * na..(k + 1) * na;
                let pi = normalized_relu(&pj.mean_regret[r.clone()], &s.legal);
                if let Some(adv) = &s.advantage {
                    let q = if s.player == 0 { &qj.q0[r] } else { &qj.q1[r] };
                    let v: f32 = pi.iter().zip(q).map(|(a, b)| a * b).sum();
                    let want: Vec<f32> = q
                        .iter()
                        .zip(&s.legal)
                        .map(|(x, &l)| if l { x - v } else { 0.0 })
                        .collect();
                    assert!(close(adv, &want), "{adv:?} vs {want:?}");
                    checked += 1;
                } else if let Some(p) = &s.played_policy {
                    assert!(close(p, &pi));
                    checked += 1;
                }
            }
        }
        assert!(checked > 16, "only {checked} steps checked");
    }

    /// The recurrent batch carries the feed-forward targets on real steps, zero weights on
    /// padding, and one sequence per unroll with its carried starting state.
    #[test]
    fn seq_train_batch_lays_out_targets_and_unrolls() {
        let (game, net) = kuhn_net(4);
        let snaps = one_epoch_snapshots(&net, &net, &net);
        let settings = episode_settings(8, 2.0);
        let mut rng = SplitMix64::new(5);
        let (trajs, _) = play_group(&game, &snaps, &settings, Candidate::all(), &mut rng);
        let picks: Vec<&Trajectory> = trajs.iter().collect();
        let na = game.num_distinct_actions();
        let max_len = picks.iter().map(|t| t.len()).max().unwrap();
        assert!(max_len >= 2);
        for chunk in [1, 32] {
            let time = seq_time(max_len, chunk);
            let seqs: Vec<&[Step]> = picks.iter().map(|t| &t.steps[..]).collect();
            let inputs = seq_inputs(&seqs, time, game.observation_tensor_size(), na);
            let (cur, starts) = net.evaluate_sequences(&inputs, chunk).unwrap();
            let host = SeqCritic::Host {
                current: &cur,
                starts: &starts,
            };
            let b = seq_train_batch(&picks, &inputs, host, &cur, na, 0.9, chunk);
            assert_eq!(b.sequences * b.time, picks.len() * time);
            assert_eq!(b.initial_state.is_some(), chunk == 1);
            if chunk == 1 {
                assert_eq!(b.sequences, picks.len() * max_len);
            }
            let real: Vec<usize> = (0..picks.len())
                .flat_map(|s| (0..picks[s].len()).map(move |k| s * time + k))
                .collect();
            let g = gather_rows(&cur, &real);
            let flat = train_batch(
                &picks,
                ActBatch::default(),
                CriticTargets::Host(&g),
                &g,
                na,
                0.9,
            );
            for (i, &r) in real.iter().enumerate() {
                assert_eq!(b.targets.critic_target[r], flat.critic_target[i]);
                assert_eq!(b.targets.regret_weight[r], flat.regret_weight[i]);
                assert_eq!(b.targets.action[r], flat.action[i]);
            }
            for r in (0..picks.len() * time).filter(|r| !real.contains(r)) {
                let t = &b.targets;
                let w = [
                    t.critic_weight[r],
                    t.regret_weight[r],
                    t.immediate_weight[r],
                    t.policy_weight[r],
                ];
                assert_eq!(w, [0.0; 4], "padding row {r}");
            }
        }
    }

    /// Unrolls of one step with carried states give the learner the same losses (before its
    /// step) as one unroll over the whole episodes: the carried states are the right ones.
    #[test]
    fn carried_unrolls_give_the_learner_the_same_losses() {
        use crate::nn::armac::ArmacLearner;
        let (game, net) = kuhn_net(6);
        let snaps = one_epoch_snapshots(&net, &net, &net);
        let settings = episode_settings(8, 2.0);
        let mut rng = SplitMix64::new(8);
        let (trajs, _) = play_group(&game, &snaps, &settings, Candidate::all(), &mut rng);
        let picks: Vec<&Trajectory> = trajs.iter().collect();
        let na = game.num_distinct_actions();
        let max_len = picks.iter().map(|t| t.len()).max().unwrap();
        let device = crate::nn::select_device("flex").unwrap();
        let losses: Vec<_> = [1, 32]
            .iter()
            .map(|&chunk| {
                let mut learner = ArmacLearner::new(net.config().clone(), &device, 1e-3, 42);
                let time = seq_time(max_len, chunk);
                let seqs: Vec<&[Step]> = picks.iter().map(|t| &t.steps[..]).collect();
                let inputs = seq_inputs(&seqs, time, game.observation_tensor_size(), na);
                let (cur, starts) = learner.evaluate_sequences(&inputs, chunk).unwrap();
                let (snap, _) = net.evaluate_sequences(&inputs, time).unwrap();
                let host = SeqCritic::Host {
                    current: &cur,
                    starts: &starts,
                };
                let b = seq_train_batch(&picks, &inputs, host, &snap, na, 0.9, chunk);
                learner.train_step_seq(&b).unwrap()
            })
            .collect();
        let (a, b) = (losses[0], losses[1]);
        assert!(a.total.is_finite() && a.total > 0.0);
        for (x, y) in [
            (a.critic, b.critic),
            (a.mean_regret, b.mean_regret),
            (a.immediate_regret, b.immediate_regret),
            (a.policy, b.policy),
        ] {
            assert!((x - y).abs() < 1e-4 * (1.0 + y.abs()), "{a:?} vs {b:?}");
        }
    }

    /// Critic targets computed inside the step train the recurrent learner as the host
    /// targets built from its evaluation before each step (Leduc episodes of up to 8
    /// decisions, λ = 0.9, 0 and 1, three steps each), and the step refuses them with carried
    /// unrolls.
    #[test]
    fn in_step_targets_train_as_host_targets() {
        use crate::nn::armac::ArmacLearner;
        let game = load_game("leduc_poker").unwrap();
        let na = game.num_distinct_actions();
        let cfg = ArmacNetConfig::new(game.observation_tensor_size(), na)
            .with_encoder_hidden(8)
            .with_head_hidden(8)
            .with_recurrent(true)
            .with_zero_init_heads(false);
        let net = ArmacPolicyNet::init(cfg.clone(), 5).unwrap();
        let snaps = one_epoch_snapshots(&net, &net, &net);
        let settings = episode_settings(16, 2.0);
        let mut rng = SplitMix64::new(11);
        let (trajs, _) = play_group(&game, &snaps, &settings, Candidate::all(), &mut rng);
        let picks: Vec<&Trajectory> = trajs.iter().collect();
        let max_len = picks.iter().map(|t| t.len()).max().unwrap();
        assert!(max_len >= 4 && picks.iter().any(|t| t.len() < max_len));
        let seqs: Vec<&[Step]> = picks.iter().map(|t| &t.steps[..]).collect();
        let time = seq_time(max_len, 32);
        let inputs = seq_inputs(&seqs, time, game.observation_tensor_size(), na);
        let (snap, _) = net.evaluate_sequences(&inputs, time).unwrap();
        let device = crate::nn::select_device("flex").unwrap();
        for lambda in [0.9, 0.0, 1.0] {
            let mut host = ArmacLearner::new(cfg.clone(), &device, 1e-2, 42);
            let mut in_step = ArmacLearner::new(cfg.clone(), &device, 1e-2, 42);
            for step in 0..3 {
                let (cur, starts) = host.evaluate_sequences(&inputs, 32).unwrap();
                let critic = SeqCritic::Host {
                    current: &cur,
                    starts: &starts,
                };
                let h = seq_train_batch(&picks, &inputs, critic, &snap, na, lambda, 32);
                let s = seq_train_batch(&picks, &inputs, SeqCritic::InStep, &snap, na, lambda, 32);
                assert!(h.targets.step_targets.is_none() && s.targets.step_targets.is_some());
                let (a, b) = (
                    host.train_step_seq(&h).unwrap(),
                    in_step.train_step_seq(&s).unwrap(),
                );
                assert!(a.critic > 0.0 && a.immediate_regret > 0.0, "{a:?}");
                for (x, y) in [
                    (a.critic, b.critic),
                    (a.mean_regret, b.mean_regret),
                    (a.immediate_regret, b.immediate_regret),
                    (a.policy, b.policy),
                ] {
                    assert!(
                        (x - y).abs() < 1e-5 * (1.0 + x.abs()),
                        "λ {lambda} step {step}: {a:?} vs {b:?}"
                    );
                }
            }
        }
        // Carried unrolls (an initial state) cannot take step targets.
        let mut learner = ArmacLearner::new(cfg, &device, 1e-2, 42);
        let mut s = seq_train_batch(&picks, &inputs, SeqCritic::InStep, &snap, na, 0.9, 32);
        let (_, starts) = learner.evaluate_sequences(&inputs, 32).unwrap();
        s.initial_state = Some(starts[0].clone());
        let e = learner.train_step_seq(&s).unwrap_err().to_string();
        assert!(e.contains("one unroll"), "{e}");
    }
}
