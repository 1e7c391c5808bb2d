//! The body of one epoch (Algorithm 1): the actors' fresh trajectories go into the replay
//! memory while the learner takes its steps on batches drawn from it, in pace with acting.

use super::settings::ArmacSettings;
use super::state::ArmacState;
use super::transport::{EpochPlan, LearnerLink};
use crate::nn::armac::{ArmacLearner, ArmacPolicyNet, DeviceIo};
use crate::rl::armac::actor::{ActorMsg, Snapshots};
use crate::rl::armac::candidates::CandidateStats;
use crate::rl::armac::learner::{CriticTargets, act_batch, train_batch};
use crate::rl::armac::memory::Memory;
use crate::rl::armac::replay::Replay;
use crate::rl::armac::sequence::{SeqCritic, seq_inputs, seq_time, seq_train_batch};
use crate::rl::armac::trajectory::Trajectory;
use crate::rl::error::TrainError;
use crate::util::SplitMix64;
use std::time::Duration;

/// One learning step of the recurrent network on `picks`: every episode is unrolled from the
/// zero state (in unrolls of `armac.unroll_length` steps whose states carry over); targets are
/// the feed-forward path's. The losses stay on the learner's device
/// ([`ArmacLearner::take_loss_sums`]).
pub(crate) fn recurrent_step(
    learner: &mut ArmacLearner,
    snapshot: &ArmacPolicyNet,
    picks: &[&Trajectory],
    s: &ArmacSettings,
) -> Result<(), crate::nn::armac::NnError> {
    let cfg = learner.config().clone();
    let max_len = picks.iter().map(|t| t.len()).max().unwrap_or(0);
    let time = seq_time(max_len, s.unroll_length);
    let seqs: Vec<&[crate::rl::armac::trajectory::Step]> =
        picks.iter().map(|t| &t.steps[..]).collect();
    let inputs = seq_inputs(&seqs, time, cfg.input_size, cfg.num_actions);
    let (snap_out, _) = snapshot.evaluate_sequences(&inputs, time.max(1))?;
    let train = |critic| {
        seq_train_batch(
            picks,
            &inputs,
            critic,
            &snap_out,
            cfg.num_actions,
            s.lambda,
            s.unroll_length,
        )
    };
    // One unroll per episode: the step computes the critic targets from its own forward pass
    // (no evaluation or read-back before it). Several unrolls need the learner's states at
    // each unroll's start, so the learner evaluates the sequences first.
    let batch = if time <= s.unroll_length.max(1) {
        train(SeqCritic::InStep)
    } else {
        let (current, starts) = learner.evaluate_sequences(&inputs, s.unroll_length)?;
        train(SeqCritic::Host {
            current: &current,
            starts: &starts,
        })
    };
    learner.train_step_seq_deferred(&batch)
}

/// What one epoch's acting and learning produced.
pub struct EpochWork {
    /// Candidate returns reported by the actors' evaluation groups.
    pub stats: CandidateStats,
    /// Learning steps taken.
    pub steps_done: usize,
    /// Sums over the steps of the critic, mean-regret, immediate-regret and policy losses.
    pub losses_sum: [f64; 4],
    /// The learner's transfers and operations over the epoch (its steps, the critic
    /// evaluations of recurrent unrolls, and the one read-back of the loss sums).
    pub io: DeviceIo,
}

/// The body of one epoch: takes the actors' messages (the epoch's fresh trajectories into the
/// replay memory, candidate returns into the statistics) and interleaves `s.learning_steps_per_epoch`
/// learning steps on batches drawn from the replay memory, keeping learning in pace with acting.
#[allow(clippy::too_many_arguments)]
pub(crate) fn act_and_learn(
    s: &ArmacSettings,
    epoch: u64,
    link: &mut dyn LearnerLink,
    snaps: &Snapshots,
    learner: &mut ArmacLearner,
    replay: &mut Replay,
    mut memory: Option<&mut Memory>,
    st: &mut ArmacState,
    rng: &mut SplitMix64,
    na: usize,
) -> Result<EpochWork, TrainError> {
    let mut fresh = 0usize;
    let mut stats = CandidateStats::default();
    let mut steps_done = 0usize;
    let io_before = learner.io();
    // Losses of an earlier, interrupted epoch are not this epoch's.
    learner.take_loss_sums();
    while steps_done < s.learning_steps_per_epoch || fresh < s.episodes_per_epoch {
        // Take what the actors sent; block briefly when there is nothing to do. Learning
        // keeps pace with acting: step k of the epoch waits for k/K of its episodes.
        let need_more = fresh < s.episodes_per_epoch
            && (fresh * s.learning_steps_per_epoch) < (steps_done + 1) * s.episodes_per_epoch;
        let msg = if need_more || steps_done >= s.learning_steps_per_epoch {
            match link.recv_timeout(Duration::from_millis(20))? {
                Some(m) => Some(m),
                None => {
                    // Evaluation groups used part of the quota: let the actors play more.
                    if fresh < s.episodes_per_epoch {
                        link.top_up(epoch, s.games_per_group as i64)?;
                    }
                    None
                }
            }
        } else {
            link.try_recv()?
        };
        if let Some(m) = msg {
            match m {
                ActorMsg::Trajectory(t) if t.epoch == epoch => {
                    st.acting_steps += t.len() as u64;
                    st.episodes += 1;
                    if fresh < s.episodes_per_epoch {
                        fresh += 1;
                        if let Some(m) = memory.as_deref_mut() {
                            m.add(&t, rng);
                        }
                        replay.push(*t);
                    }
                }
                ActorMsg::CandidateReturn {
                    epoch: e,
                    candidate,
                    total,
                    count,
                } if e == epoch => {
                    stats.add(candidate, total, count);
                }
                _ => {}
            }
            continue;
        }
        if steps_done < s.learning_steps_per_epoch && !replay.items.is_empty() && !need_more {
            let picks: Vec<&Trajectory> = (0..s.batch_trajectories)
                .map(|_| &replay.items[rng.below(replay.items.len())])
                .collect();
            if s.recurrent {
                if let Err(e) = recurrent_step(learner, &snaps.latest, &picks, s) {
                    return Err(TrainError::context("recurrent learner")(e));
                }
            } else {
                let inputs = act_batch(&picks);
                // Only what the targets read: the snapshot's `π^t` and (unless the step
                // computes the targets itself) the learner's critic.
                let mut snap_out = snaps
                    .latest
                    .evaluate_mean_regret(&inputs)
                    .expect("the learner's batches match the feed-forward network");
                if let Some(t) = &snaps.latest_table {
                    // `tabular_w`: the critic learns the value of the table's π^t, the policy
                    // the actors play and evaluate advantages with.
                    let players: Vec<usize> = picks
                        .iter()
                        .flat_map(|t| t.steps.iter().map(|s| s.player))
                        .collect();
                    t.overlay(&mut snap_out, &inputs.own, &players);
                }
                // The critic's targets come from the step's own forward pass.
                let critic = CriticTargets::InStep;
                let mut batch = train_batch(&picks, inputs, critic, &snap_out, na, s.lambda);
                match memory.as_deref_mut() {
                    Some(m) => {
                        // The heads of W̄ and π̄ learn from the reservoirs; the replay's rows
                        // train the critic and the immediate-regret head.
                        batch.regret_weight.iter_mut().for_each(|w| *w = 0.0);
                        batch.policy_weight.iter_mut().for_each(|w| *w = 0.0);
                        if learner.has_resident_memory() {
                            let n_in = learner.config().input_size;
                            let step = m.resident_step(s.memory_batch, rng, n_in, na);
                            learner.train_step_resident(&batch, &step);
                        } else {
                            m.push_rows(&mut batch, s.memory_batch, rng);
                            learner.train_step_deferred(&batch);
                        }
                    }
                    None => learner.train_step_deferred(&batch),
                }
            }
            steps_done += 1;
            st.learning_steps += 1;
        }
    }
    // The one read-back of the epoch's losses, at its log point.
    let (losses_sum, _) = learner.take_loss_sums();
    Ok(EpochWork {
        stats,
        steps_done,
        losses_sum,
        io: learner.io() - io_before,
    })
}

/// The networks of epoch `st.epoch` by snapshot id, as [`super::residency::past_epochs`] and
/// [`super::residency::previous_epoch`] arrange them (what a broker publishes to remote actors).
pub(crate) fn epoch_plan(st: &ArmacState) -> EpochPlan {
    EpochPlan {
        epoch: st.epoch,
        latest: st.epoch,
        past: st
            .working_set
            .epochs()
            .iter()
            .map(|&j| (j, j + 1))
            .collect(),
        previous: st
            .epoch
            .checked_sub(1)
            .filter(|_| st.keep_previous)
            .map(|j| (j, st.epoch)),
        best: st.best,
    }
}
