//! How ARMAC's actors and learner talk: a [`LearnerLink`] on the learner's side, an
//! [`ActorLink`] on each actor's. This module holds the traits, the actor loop and the
//! in-process implementation ([`LocalLearner`], [`LocalActor`]: actor threads, a bounded
//! crossbeam channel for their messages, the epoch's networks behind an `RwLock` and an atomic
//! episode quota); [`crate::cluster`] adds the one through a Redis broker.
//!
//! The actor loop ([`actor_loop`]) is the same for both: ask the link for the next group's
//! networks (or to wait, or to stop), play the group with [`play_group`], hand the messages to
//! the link.

use super::settings::{ArmacSettings, reward_scale};
use crate::game::GameRef;
use crate::rl::armac::actor::{ActorMsg, ActorSettings, Snapshots, play_group};
use crate::rl::armac::candidates::Candidate;
use crate::rl::armac::trajectory::Trajectory;
use crate::rl::error::TrainError;
use crate::util::SplitMix64;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The networks of one epoch by snapshot id, as [`Snapshots`] arranges them (the learner's
/// view, published to remote actors).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct EpochPlan {
    pub epoch: u64,
    /// `θ^t`.
    pub latest: u64,
    /// Past epochs as (policy id, critic id).
    pub past: Vec<(u64, u64)>,
    /// The previous epoch (policy id, critic id), for `past_draw = "latest"`.
    pub previous: Option<(u64, u64)>,
    pub best: Candidate,
}

/// The learner's end of the transport.
pub trait LearnerLink {
    /// The next message, waiting at most `timeout`; `None` when nothing arrived.
    fn recv_timeout(&mut self, timeout: Duration) -> Result<Option<ActorMsg>, TrainError>;
    /// The next message if one is there.
    fn try_recv(&mut self) -> Result<Option<ActorMsg>, TrainError>;
    /// Grants `n` more episodes of `epoch` if the actors' quota is used up (evaluation groups
    /// consume quota without producing the epoch's learning episodes).
    fn top_up(&mut self, epoch: u64, n: i64) -> Result<(), TrainError>;
    /// Opens epoch `plan.epoch` with a quota of `episodes` (the networks are already in the
    /// in-process snapshots; a broker publishes them).
    fn begin_epoch(&mut self, plan: &EpochPlan, episodes: i64) -> Result<(), TrainError>;
    /// The position in the message stream that a checkpoint records (`None` in-process).
    fn cursor(&self) -> Option<String>;
    /// The highest sequence number handed to the training loop per actor-thread token, which
    /// a checkpoint records beside [`LearnerLink::cursor`] so that a resumed learner still
    /// recognises copies of entries it acknowledged before (empty in-process).
    fn seen(&self) -> std::collections::BTreeMap<String, u64> {
        std::collections::BTreeMap::new()
    }
    /// Whether the learner should checkpoint now to acknowledge what it has read.
    fn wants_checkpoint(&self) -> bool;
    /// A checkpoint recording [`LearnerLink::cursor`] is committed: everything read up to it
    /// can be acknowledged.
    fn committed(&mut self) -> Result<(), TrainError>;
    /// Tells the actors to stop.
    fn close(&mut self) -> Result<(), TrainError>;
    /// Messages sent but not read yet, when the transport can tell.
    fn queue_depth(&mut self) -> Option<u64>;
    /// Acting steps and trajectories handed to the training loop since the last call, per
    /// named remote actor (empty in-process: the actor threads are not told apart).
    fn actor_counts(&mut self) -> Vec<(String, u64, u64)> {
        Vec::new()
    }
}

/// What an actor does next.
pub enum Next {
    /// Play one group with these networks.
    Play(Arc<Snapshots>),
    /// Nothing to do now; ask again after this long.
    Wait(Duration),
    /// The run is over.
    Stop,
}

/// The actor's end of the transport.
pub trait ActorLink {
    /// What a failed exchange reports.
    type Error;
    /// Takes the quota for a group of `games` episodes and returns the networks to play it
    /// with, or says to wait or stop.
    fn next_group(&mut self, games: usize) -> Result<Next, Self::Error>;
    /// Sends a group's messages in order; `false` when the learner is gone.
    fn send(&mut self, msgs: Vec<ActorMsg>) -> Result<bool, Self::Error>;
}

/// What one actor loop did.
#[derive(Clone, Copy, Debug, Default)]
pub struct ActorTotals {
    pub groups: u64,
    pub trajectories: u64,
    pub steps: u64,
}

/// Plays groups for as long as `link` hands out quota, until it says stop or the learner is
/// gone.
pub fn actor_loop<L: ActorLink + ?Sized>(
    link: &mut L,
    game: &GameRef,
    settings: &ActorSettings,
    rng: &mut SplitMix64,
) -> Result<ActorTotals, L::Error> {
    let candidates = Candidate::all().to_vec();
    let mut totals = ActorTotals::default();
    loop {
        let snaps = match link.next_group(settings.games_per_group)? {
            Next::Stop => return Ok(totals),
            Next::Wait(d) => {
                std::thread::sleep(d);
                continue;
            }
            Next::Play(s) => s,
        };
        let (trajs, eval) = play_group(game, &snaps, settings, &candidates, rng);
        totals.groups += 1;
        totals.trajectories += trajs.len() as u64;
        totals.steps += trajs.iter().map(|t| t.len() as u64).sum::<u64>();
        let msgs = group_messages(trajs, eval, snaps.epoch, settings.games_per_group);
        if !link.send(msgs)? {
            return Ok(totals);
        }
    }
}

/// The messages of a group played in `epoch`, in order: its trajectories, then, for an
/// evaluation group of `games` episodes, its candidate's summed return.
pub(crate) fn group_messages(
    trajs: Vec<Trajectory>,
    eval: Option<(Candidate, f64)>,
    epoch: u64,
    games: usize,
) -> Vec<ActorMsg> {
    let mut msgs: Vec<ActorMsg> = trajs
        .into_iter()
        .map(|t| ActorMsg::Trajectory(Box::new(t)))
        .collect();
    if let Some((candidate, total)) = eval {
        msgs.push(ActorMsg::CandidateReturn {
            epoch,
            candidate,
            total,
            count: games as u64,
        });
    }
    msgs
}

/// An actor thread's end of the in-process transport.
pub struct LocalActor {
    pub snapshots: Arc<RwLock<Arc<Snapshots>>>,
    pub stop: Arc<AtomicBool>,
    pub quota: Arc<AtomicI64>,
    pub tx: crossbeam::channel::Sender<ActorMsg>,
}

impl ActorLink for LocalActor {
    /// The in-process link cannot fail.
    type Error = std::convert::Infallible;

    fn next_group(&mut self, games: usize) -> Result<Next, Self::Error> {
        if self.stop.load(Ordering::Relaxed) {
            return Ok(Next::Stop);
        }
        if self.quota.load(Ordering::Relaxed) <= 0 {
            return Ok(Next::Wait(Duration::from_millis(1)));
        }
        self.quota.fetch_sub(games as i64, Ordering::Relaxed);
        Ok(Next::Play(
            self.snapshots.read().expect("snapshot lock").clone(),
        ))
    }

    fn send(&mut self, msgs: Vec<ActorMsg>) -> Result<bool, Self::Error> {
        for m in msgs {
            if self.tx.send(m).is_err() {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The learner's end of the in-process transport.
pub struct LocalLearner {
    /// `None` once closed (the actors then see a disconnected channel).
    pub rx: Option<crossbeam::channel::Receiver<ActorMsg>>,
    pub quota: Arc<AtomicI64>,
}

fn actors_gone() -> TrainError {
    TrainError::Usage("all actor threads stopped (an actor panicked); see the message above".into())
}

impl LearnerLink for LocalLearner {
    fn recv_timeout(&mut self, timeout: Duration) -> Result<Option<ActorMsg>, TrainError> {
        let rx = self.rx.as_ref().ok_or_else(actors_gone)?;
        match rx.recv_timeout(timeout) {
            Ok(m) => Ok(Some(m)),
            Err(crossbeam::channel::RecvTimeoutError::Timeout) => Ok(None),
            Err(crossbeam::channel::RecvTimeoutError::Disconnected) => Err(actors_gone()),
        }
    }

    fn try_recv(&mut self) -> Result<Option<ActorMsg>, TrainError> {
        Ok(self.rx.as_ref().and_then(|rx| rx.try_recv().ok()))
    }

    fn top_up(&mut self, _epoch: u64, n: i64) -> Result<(), TrainError> {
        if self.quota.load(Ordering::Relaxed) <= 0 {
            self.quota.fetch_add(n, Ordering::Relaxed);
        }
        Ok(())
    }

    fn begin_epoch(&mut self, _plan: &EpochPlan, episodes: i64) -> Result<(), TrainError> {
        self.quota.store(episodes, Ordering::Relaxed);
        Ok(())
    }

    fn cursor(&self) -> Option<String> {
        None
    }

    fn wants_checkpoint(&self) -> bool {
        false
    }

    fn committed(&mut self) -> Result<(), TrainError> {
        Ok(())
    }

    fn close(&mut self) -> Result<(), TrainError> {
        self.rx = None;
        Ok(())
    }

    fn queue_depth(&mut self) -> Option<u64> {
        // Not logged in-process (the channel is short and TensorBoard stays as it was).
        None
    }
}

/// The actor settings of a run's ARMAC settings (`reward_scale` as the learner computes it).
pub fn actor_settings(game: &GameRef, s: &ArmacSettings) -> ActorSettings {
    ActorSettings {
        games_per_group: s.games_per_group,
        eval_fraction: s.eval_fraction,
        reward_scale: reward_scale(game, s),
        past_draw: s.past_draw(),
        advantage_target: s.advantage_target,
        behaviour: s.behaviour,
        chance_baseline: s.chance_baseline,
        allin_runouts: s.allin_runouts,
    }
}
