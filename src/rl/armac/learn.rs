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

/// What the body of an epoch has taken in and done so far.
#[derive(Default)]
struct Progress {
    /// The epoch's learning episodes taken in.
    fresh: usize,
    stats: CandidateStats,
    steps_done: usize,
}

/// Where one epoch's trajectories go and what the learner trains with: the settings, the
/// epoch's networks, the learner, its replay and reservoir memories, the run's counters and
/// the learner's random stream.
pub(crate) struct EpochBody<'a> {
    pub s: &'a ArmacSettings,
    pub epoch: u64,
    pub snaps: &'a Snapshots,
    pub learner: &'a mut ArmacLearner,
    pub replay: &'a mut Replay,
    pub memory: Option<&'a mut Memory>,
    pub st: &'a mut ArmacState,
    pub rng: &'a mut SplitMix64,
    pub na: usize,
    /// Asked between learning steps and between actor messages or groups: `true` abandons
    /// the epoch (its partial work must then not be committed).
    pub halt: &'a (dyn Fn() -> bool + Sync),
}

impl EpochBody<'_> {
    /// Takes one actor message: a trajectory of this epoch is counted and, while the epoch
    /// still needs episodes, goes into the replay (and reservoir) memory; a candidate's
    /// returns go into the statistics. Messages of other epochs are dropped.
    fn take(&mut self, m: ActorMsg, p: &mut Progress) {
        match m {
            ActorMsg::Trajectory(t) if t.epoch == self.epoch => {
                self.st.acting_steps += t.len() as u64;
                self.st.episodes += 1;
                self.st.nodes_touched += t.nodes();
                self.st.learning_decisions += t.learning_decisions();
                if p.fresh < self.s.episodes_per_epoch {
                    p.fresh += 1;
                    if let Some(m) = self.memory.as_deref_mut() {
                        m.add(&t, self.rng);
                    }
                    self.replay.push(*t);
                }
            }
            ActorMsg::CandidateReturn {
                epoch: e,
                candidate,
                total,
                count,
            } if e == self.epoch => {
                p.stats.add(candidate, total, count);
            }
            _ => {}
        }
    }

    /// One learning step on a batch drawn from the replay memory (and the reservoirs).
    fn learning_step(&mut self, p: &mut Progress) -> Result<(), TrainError> {
        let (s, na) = (self.s, self.na);
        let replay = &*self.replay;
        let picks: Vec<&Trajectory> = (0..s.batch_trajectories)
            .map(|_| &replay.items[self.rng.below(replay.items.len())])
            .collect();
        let mut rows = picks.iter().map(|t| t.len() as u64).sum::<u64>();
        if s.recurrent {
            if let Err(e) = recurrent_step(self.learner, &self.snaps.latest, &picks, s) {
                return Err(TrainError::context("recurrent learner")(e));
            }
        } else {
            let inputs = act_batch(&picks);
            // Only what the targets read: the snapshot's `π^t` and (unless the step
            // computes the targets itself) the learner's critic.
            let mut snap_out = self
                .snaps
                .latest
                .evaluate_mean_regret(&inputs)
                .expect("the learner's batches match the feed-forward network");
            if let Some(t) = &self.snaps.latest_table {
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
            let learner = &mut *self.learner;
            match self.memory.as_deref_mut() {
                Some(m) => {
                    // The heads of W̄ and π̄ learn from the reservoirs; the replay's rows
                    // train the critic and the immediate-regret head.
                    batch.regret_weight.iter_mut().for_each(|w| *w = 0.0);
                    batch.policy_weight.iter_mut().for_each(|w| *w = 0.0);
                    if learner.has_resident_memory() {
                        let n_in = learner.config().input_size;
                        let filled = [m.regret.len(), m.policy.len()];
                        rows += (s.memory_batch * filled.iter().filter(|&&n| n > 0).count()) as u64;
                        let step = m.resident_step(s.memory_batch, self.rng, n_in, na);
                        learner.train_step_resident(&batch, &step);
                    } else {
                        let before = batch.action.len();
                        m.push_rows(&mut batch, s.memory_batch, self.rng);
                        rows += (batch.action.len() - before) as u64;
                        learner.train_step_deferred(&batch);
                    }
                }
                None => learner.train_step_deferred(&batch),
            }
        }
        p.steps_done += 1;
        self.st.learning_steps += 1;
        self.st.rows_learned += rows;
        Ok(())
    }

    /// Whether learning step `p.steps_done + 1` is due: learning keeps pace with acting, step
    /// k of the epoch waits for k/K of its episodes.
    fn step_due(&self, p: &Progress) -> bool {
        let (e, k) = (self.s.episodes_per_epoch, self.s.learning_steps_per_epoch);
        p.steps_done < k
            && !self.replay.items.is_empty()
            && (p.fresh >= e || p.fresh * k >= (p.steps_done + 1) * e)
    }

    /// The epoch's work once its steps are taken: the one read-back of the epoch's losses.
    fn finish(self, p: Progress, io_before: DeviceIo) -> EpochWork {
        let (losses_sum, _) = self.learner.take_loss_sums();
        EpochWork {
            stats: p.stats,
            steps_done: p.steps_done,
            losses_sum,
            io: self.learner.io() - io_before,
        }
    }
}

/// The body of one epoch with concurrent actors: takes the actors' messages from `link` as
/// they arrive (the epoch's fresh trajectories into the replay memory, candidate returns into
/// the statistics) and interleaves `s.learning_steps_per_epoch` learning steps on batches
/// drawn from the replay memory, keeping learning in pace with acting. `None`: `b.halt`
/// abandoned the epoch.
pub(crate) fn act_and_learn(
    mut b: EpochBody<'_>,
    link: &mut dyn LearnerLink,
) -> Result<Option<EpochWork>, TrainError> {
    let (s, epoch) = (b.s, b.epoch);
    let mut p = Progress::default();
    let io_before = b.learner.io();
    // Losses of an earlier, interrupted epoch are not this epoch's.
    b.learner.take_loss_sums();
    let mut turns = 0u32;
    while p.steps_done < s.learning_steps_per_epoch || p.fresh < s.episodes_per_epoch {
        // Asked every 64 turns (each is a message, a learning step or a 20 ms wait).
        turns = turns.wrapping_add(1);
        if turns.is_multiple_of(64) && (b.halt)() {
            return Ok(None);
        }
        // Take what the actors sent; block briefly when there is nothing to do.
        let need_more = p.fresh < s.episodes_per_epoch
            && (p.fresh * s.learning_steps_per_epoch) < (p.steps_done + 1) * s.episodes_per_epoch;
        let msg = if need_more || p.steps_done >= s.learning_steps_per_epoch {
            match link.recv_timeout(Duration::from_millis(20))? {
                Some(m) => Some(m),
                None => {
                    // Evaluation groups used part of the quota: let the actors play more.
                    if p.fresh < s.episodes_per_epoch {
                        link.top_up(epoch, s.games_per_group as i64)?;
                    }
                    None
                }
            }
        } else {
            link.try_recv()?
        };
        if let Some(m) = msg {
            b.take(m, &mut p);
            continue;
        }
        if b.step_due(&p) {
            if (b.halt)() {
                return Ok(None);
            }
            b.learning_step(&mut p)?;
        }
    }
    Ok(Some(b.finish(p, io_before)))
}

/// The body of one epoch in lock-step: `play(first, n)` plays groups `first..first + n` of
/// the epoch and returns their messages in group order; waves of groups are played until the
/// epoch has its episodes, and the learner takes the messages in that order, taking each
/// learning step as soon as it is due (the pace of [`act_and_learn`], without its timing).
/// `play` returns `None` once `b.halt` stopped its wave; the result is then `None` too, as
/// when `b.halt` stops the learner between two steps.
pub(crate) fn act_and_learn_lockstep(
    mut b: EpochBody<'_>,
    play: &mut dyn FnMut(u64, usize) -> Option<Vec<ActorMsg>>,
) -> Result<Option<EpochWork>, TrainError> {
    let s = b.s;
    let mut p = Progress::default();
    let io_before = b.learner.io();
    b.learner.take_loss_sums();
    let mut next_group = 0u64;
    while p.fresh < s.episodes_per_epoch {
        // Enough groups for the missing episodes if none of them is an evaluation group.
        let groups = (s.episodes_per_epoch - p.fresh).div_ceil(s.games_per_group);
        let Some(msgs) = play(next_group, groups) else {
            return Ok(None);
        };
        for m in msgs {
            b.take(m, &mut p);
            while b.step_due(&p) {
                if (b.halt)() {
                    return Ok(None);
                }
                b.learning_step(&mut p)?;
            }
        }
        next_group += groups as u64;
    }
    while b.step_due(&p) {
        if (b.halt)() {
            return Ok(None);
        }
        b.learning_step(&mut p)?;
    }
    Ok(Some(b.finish(p, io_before)))
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
