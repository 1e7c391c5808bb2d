//! ARMAC's actors: threads that play many episodes in lock-step so that every network query is
//! one batched forward pass, and send finished trajectories to the learner.
//!
//! Each *group* of episodes shares its networks (Algorithm 1, section 3.3):
//! * a **learning group**: the learning player `i` (alternating between episodes) follows the
//!   behaviour policy `μ_i` — an exploration candidate (section 3.3) computed from the exploring
//!   network, which is the latest network with probability 1/2 and otherwise a uniformly drawn
//!   past one — while the opponent plays `π^j = NormalizedReLU(W_j)` of a past network `j` drawn
//!   uniformly from the reservoir. At `i`'s decisions the step stores `q_j(h,·) − v_j(h)` (the
//!   mean-regret target); at the opponent's decisions it stores `π^j(s)` (the average-policy
//!   target).
//! * an **evaluation group**: the learning player plays one candidate of the latest network
//!   against the latest average policy `π̄`; the returns rank the candidates, and the
//!   trajectories train only the critic.

use super::candidates::Candidate;
use super::trajectory::{Step, Trajectory};
use crate::game::{GameRef, State, Turn};
use crate::nn::armac::{ActBatch, ActOutput, ArmacPolicyNet, RecurrentState, StepBatch};
use crate::policy::probs::{mix_epsilon, normalized_relu};
use crate::util::SplitMix64;
use std::sync::Arc;

/// A past epoch `j` as the actors replay it: its policy `π^j = NormalizedReLU(W_θj)` comes from
/// the network at the start of epoch `j`, and the critic that evaluates `π^j` from the network at
/// its end (the critic was trained towards `π^j` during epoch `j`).
#[derive(Clone)]
pub struct PastEpoch {
    pub policy: Arc<ArmacPolicyNet>,
    pub critic: Arc<ArmacPolicyNet>,
}

/// The networks actors play with during one epoch.
pub struct Snapshots {
    /// The epoch `t`.
    pub epoch: u64,
    /// `θ^t`, the network at the start of the epoch (its `W` defines `π^t`).
    pub latest: Arc<ArmacPolicyNet>,
    /// The reservoir of past epochs `j < t` (empty in epoch 0: then episodes train only the
    /// critic).
    pub past: Vec<PastEpoch>,
    /// The candidate that ranked best in the previous epoch.
    pub best: Candidate,
}

/// Messages from actors to the learner.
pub enum ActorMsg {
    /// A finished episode.
    Trajectory(Box<Trajectory>),
    /// Returns of an exploration candidate against the average policy (evaluation groups).
    CandidateReturn {
        epoch: u64,
        candidate: Candidate,
        total: f64,
        count: u64,
    },
}

/// Settings of the actors.
#[derive(Clone, Debug)]
pub struct ActorSettings {
    /// Episodes played in lock-step per group.
    pub games_per_group: usize,
    /// Probability that a group ranks candidates instead of producing learning data.
    pub eval_fraction: f64,
    /// Returns are divided by this before they are stored (networks learn values of order 1).
    pub reward_scale: f64,
}

fn sample(probs: &[f32], rng: &mut SplitMix64) -> usize {
    let w: Vec<f64> = probs.iter().map(|&p| p.max(0.0) as f64).collect();
    rng.weighted(&w)
}

/// The behaviour policy of candidate `c` for one row of network outputs.
pub fn candidate_policy(c: Candidate, out: &ActOutput, row: usize, legal: &[bool]) -> Vec<f32> {
    let a = legal.len();
    let r = row * a..(row + 1) * a;
    match c {
        Candidate::Uniform => normalized_relu(&vec![0.0; a], legal),
        Candidate::Immediate(_) => mix_epsilon(
            &normalized_relu(&out.immediate_regret[r], legal),
            legal,
            c.epsilon() as f32,
        ),
        Candidate::MeanRegret(_) => mix_epsilon(
            &normalized_relu(&out.mean_regret[r], legal),
            legal,
            c.epsilon() as f32,
        ),
        Candidate::Average => out.avg_policy[r].to_vec(),
    }
}

struct Live {
    state: Box<dyn State>,
    traj: Trajectory,
    /// Recurrent nets: per network of the group, both seats' LSTM states of this game.
    rnn: Vec<[RecurrentState; 2]>,
}

/// Plays one lock-step group of episodes and returns them with, for evaluation groups, the
/// candidate and its summed return.
pub fn play_group(
    game: &GameRef,
    snaps: &Snapshots,
    settings: &ActorSettings,
    candidates: &[Candidate],
    rng: &mut SplitMix64,
) -> (Vec<Trajectory>, Option<(Candidate, f64)>) {
    let num_actions = game.num_distinct_actions();
    // Recurrent nets read per-step observation tensors, feed-forward ones information states.
    let recurrent = snaps.latest.config().recurrent;
    let info_size = if recurrent {
        game.observation_tensor_size()
    } else {
        game.information_state_tensor_size()
    };
    let evaluation = rng.next_f64() < settings.eval_fraction;
    // Learning groups: exploring network and candidate; past epoch j for the opponent and the
    // advantages. Without a past epoch (epoch 0) the opponent plays π^t and no regret or policy
    // targets are stored.
    let past = (!evaluation && !snaps.past.is_empty())
        .then(|| snaps.past[rng.below(snaps.past.len())].clone());
    let (behaviour_net, candidate) = if evaluation {
        (
            snaps.latest.clone(),
            candidates[rng.below(candidates.len())],
        )
    } else {
        let b = if snaps.past.is_empty() || rng.next_f64() < 0.5 {
            snaps.latest.clone()
        } else {
            snaps.past[rng.below(snaps.past.len())].policy.clone()
        };
        let c = if rng.next_f64() < 0.5 {
            snaps.best
        } else {
            candidates[rng.below(candidates.len())]
        };
        (b, c)
    };
    let opponent_net = past
        .as_ref()
        .map_or_else(|| snaps.latest.clone(), |p| p.policy.clone());
    let learning = past.is_some();
    // The distinct networks of the group: the opponent's, the exploring one, the past critic.
    let mut nets = vec![opponent_net.clone()];
    let beh_slot = if Arc::ptr_eq(&behaviour_net, &opponent_net) {
        0
    } else {
        nets.push(behaviour_net.clone());
        nets.len() - 1
    };
    let critic_slot = past.as_ref().map(|p| {
        nets.push(p.critic.clone());
        nets.len() - 1
    });
    let zero_states: Vec<[RecurrentState; 2]> = if recurrent {
        nets.iter()
            .map(|n| n.initial_state(1).expect("recurrent net"))
            .collect()
    } else {
        Vec::new()
    };
    let mut live: Vec<Live> = (0..settings.games_per_group)
        .map(|g| Live {
            state: game.new_initial_state(),
            traj: Trajectory {
                epoch: snaps.epoch,
                learning_player: g % 2,
                learning,
                steps: Vec::new(),
                returns: [0.0; 2],
            },
            rnn: zero_states.clone(),
        })
        .collect();
    let mut done = Vec::with_capacity(live.len());
    while !live.is_empty() {
        // Chance moves and terminals.
        let mut k = 0;
        while k < live.len() {
            let st = &mut live[k].state;
            match st.turn() {
                Turn::Chance => {
                    let outcomes = st.chance_outcomes();
                    let w: Vec<f64> = outcomes.iter().map(|o| o.1).collect();
                    let a = outcomes[rng.weighted(&w)].0;
                    st.apply_action(a);
                }
                Turn::Terminal => {
                    let mut l = live.swap_remove(k);
                    let r = l.state.returns();
                    let k = settings.reward_scale;
                    l.traj.returns = [(r[0] / k) as f32, (r[1] / k) as f32];
                    done.push(l.traj);
                }
                Turn::Player(_) => k += 1,
            }
        }
        if live.iter().any(|l| l.state.is_chance()) || live.is_empty() {
            continue;
        }
        // Every live game is at a decision: one batch for all of them.
        let n = live.len();
        let mut batch = ActBatch {
            own: Vec::with_capacity(n * info_size),
            both0: Vec::with_capacity(n * info_size),
            both1: Vec::with_capacity(n * info_size),
            legal: Vec::with_capacity(n * num_actions),
        };
        let mut infos = Vec::with_capacity(n);
        let mut legals = Vec::with_capacity(n);
        let mut players = Vec::with_capacity(n);
        for l in &live {
            let p = match l.state.turn() {
                Turn::Player(p) => p,
                _ => unreachable!("only decisions remain"),
            };
            let mut i0 = vec![0.0; info_size];
            let mut i1 = vec![0.0; info_size];
            if recurrent {
                l.state.observation_tensor(0, &mut i0);
                l.state.observation_tensor(1, &mut i1);
            } else {
                l.state.information_state_tensor(0, &mut i0);
                l.state.information_state_tensor(1, &mut i1);
            }
            players.push(p);
            let mut mask = vec![false; num_actions];
            for a in l.state.legal_actions() {
                mask[a] = true;
            }
            batch.own.extend_from_slice(if p == 0 { &i0 } else { &i1 });
            batch.both0.extend_from_slice(&i0);
            batch.both1.extend_from_slice(&i1);
            batch.legal.extend(mask.iter().map(|&m| m as u8 as f32));
            infos.push([i0, i1]);
            legals.push(mask);
        }
        let outs: Vec<ActOutput> = if recurrent {
            // Every network advances both seats' LSTMs of every game by this decision's
            // observations (chance outcomes since the last decision are part of them).
            let step = StepBatch {
                rows: n,
                obs0: batch.both0.clone(),
                obs1: batch.both1.clone(),
                acting_player: players,
                legal: batch.legal.clone(),
            };
            let mut outs = Vec::with_capacity(nets.len());
            for (k, net) in nets.iter().enumerate() {
                let st: [RecurrentState; 2] = std::array::from_fn(|p| {
                    RecurrentState::stack(live.iter().map(|l| &l.rnn[k][p]))
                });
                let (out, next) = net.step(&step, &st).expect("recurrent step batch");
                for (g, l) in live.iter_mut().enumerate() {
                    l.rnn[k] = [next[0].row(g), next[1].row(g)];
                }
                outs.push(out);
            }
            outs
        } else {
            nets.iter().map(|net| net.evaluate(&batch)).collect()
        };
        let opp_out = &outs[0];
        let beh = &outs[beh_slot];
        let critic_out = critic_slot.map(|k| &outs[k]);
        for (row, (l, (info, legal))) in live
            .iter_mut()
            .zip(infos.into_iter().zip(legals))
            .enumerate()
        {
            let p = match l.state.turn() {
                Turn::Player(p) => p,
                _ => unreachable!(),
            };
            let r = row * num_actions..(row + 1) * num_actions;
            let learner_turn = p == l.traj.learning_player;
            let (probs, advantage, played) = if learner_turn {
                let mu = candidate_policy(candidate, beh, row, &legal);
                let adv = critic_out.as_ref().map(|c| {
                    // r = q_j(h, ·) − v_j(h), v_j(h) = Σ_a π^j(s, a) q_j(h, a).
                    let q = if p == 0 {
                        &c.q0[r.clone()]
                    } else {
                        &c.q1[r.clone()]
                    };
                    let pij = normalized_relu(&opp_out.mean_regret[r.clone()], &legal);
                    let v: f32 = pij.iter().zip(q).map(|(a, b)| a * b).sum();
                    q.iter()
                        .zip(&legal)
                        .map(|(x, &ok)| if ok { x - v } else { 0.0 })
                        .collect()
                });
                (mu, adv, None)
            } else if evaluation {
                (opp_out.avg_policy[r].to_vec(), None, None)
            } else {
                let pij = normalized_relu(&opp_out.mean_regret[r], &legal);
                (pij.clone(), None, learning.then_some(pij))
            };
            let action = sample(&probs, rng);
            debug_assert!(legal[action], "sampled an illegal action");
            l.traj.steps.push(Step {
                player: p,
                info,
                legal,
                action,
                advantage,
                played_policy: played,
            });
            l.state.apply_action(action);
        }
    }
    let eval = evaluation.then(|| {
        let total: f64 = done
            .iter()
            .map(|t| t.returns[t.learning_player] as f64)
            .sum();
        (candidate, total)
    });
    (done, eval)
}
