//! ARMAC's actors: threads that play many episodes in lock-step so that every network query is
//! one batched forward pass, and send finished trajectories to the learner.
//!
//! Each episode of a group draws its networks (Algorithm 1, section 3.3; each network
//! evaluates all the games that use it in one batch):
//! * a **learning episode**: the learning player `i` (alternating between episodes) follows the
//!   behaviour policy `μ_i` — an exploration candidate (section 3.3) computed from the exploring
//!   network, which is the latest network with probability 1/2 and otherwise a uniformly drawn
//!   past one — while the opponent plays `π^j = NormalizedReLU(W_j)` of a past network `j` drawn
//!   uniformly from the reservoir. At `i`'s decisions the step stores `q_j(h,·) − v_j(h)` (the
//!   mean-regret target); at the opponent's decisions it stores `π^j(s)` (the average-policy
//!   target).
//! * an **evaluation group**: the learning player plays one candidate of the latest network
//!   against the latest average policy `π̄`; the returns rank the candidates, and the
//!   trajectories train only the critic.
//!
//! The modules, by concern:
//! * `play` — the lock-step group: drawing each episode's networks, chance moves, one
//!   batched forward pass per network at every decision, and the finished trajectories;
//! * `roles` — which networks an episode plays with and the exploration candidates' policies;
//! * `nets` — the group's distinct networks and the batches they evaluate;
//! * `shadow` — the histories the learning player cannot tell from the played one
//!   ([`AdvantageTarget::Infoset`]);
//! * `chance` — chance-node values between decisions (`armac.chance_baseline`);
//! * `cv` — the baseline-corrected advantage targets ([`AdvantageTarget::Corrected`]).

mod chance;
mod cv;
mod nets;
mod play;
mod roles;
mod shadow;
#[cfg(test)]
mod target_tests;
#[cfg(test)]
mod tests;

pub use super::choices::{AdvantageTarget, Behaviour, PastDraw};
pub use cv::{CvStep, corrected_advantages};
pub use play::{play_group, play_group_all_heads};
pub use roles::candidate_policy;
pub use shadow::MAX_SHADOWS;

use super::candidates::Candidate;
use super::exact_values::ExactValues;
use super::table::PolicyTable;
use super::trajectory::Trajectory;
use crate::nn::armac::ArmacPolicyNet;
use std::sync::Arc;

/// A past epoch `j` as the actors replay it: its policy `π^j = NormalizedReLU(W_θj)` comes from
/// the network at the start of epoch `j`, and the critic that evaluates `π^j` from the network at
/// its end (the critic was trained towards `π^j` during epoch `j`).
#[derive(Clone)]
pub struct PastEpoch {
    pub policy: Arc<ArmacPolicyNet>,
    pub critic: Arc<ArmacPolicyNet>,
    /// Exact values of `π^j` (the `exact_advantages` ablation): when present, the stored
    /// advantages come from them instead of the critic.
    pub exact: Option<Arc<ExactValues>>,
    /// The `tabular_w` ablation: `π^j` from this table instead of the policy network's head.
    pub table: Option<Arc<PolicyTable>>,
}

/// The networks actors play with during one epoch.
pub struct Snapshots {
    /// The epoch `t`.
    pub epoch: u64,
    /// `θ^t`, the network at the start of the epoch (its `W` defines `π^t`).
    pub latest: Arc<ArmacPolicyNet>,
    /// The `tabular_w` ablation: `π^t` from this table instead of `latest`'s head.
    pub latest_table: Option<Arc<PolicyTable>>,
    /// The reservoir of past epochs `j < t` (empty in epoch 0: then episodes train only the
    /// critic).
    pub past: Vec<PastEpoch>,
    /// The previous epoch `t − 1` (`None` in epoch 0), which [`PastDraw::Latest`] plays.
    pub previous: Option<PastEpoch>,
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
    /// Whether each episode or each group draws its past epoch.
    pub past_draw: PastDraw,
    /// What the stored mean-regret targets average over.
    pub advantage_target: AdvantageTarget,
    /// The learning player's behaviour policy.
    pub behaviour: Behaviour,
    /// With [`AdvantageTarget::Corrected`] (feed-forward nets): a baseline at chance nodes
    /// between decisions too (see [`CvStep::chance_value`]).
    pub chance_baseline: bool,
    /// Returns of an episode that no player can act in again: the mean over the remaining
    /// chance moves, exact up to this many outcomes in sequence, else over this many sampled
    /// run-outs; 0 samples one run-out (see `chance::runout_returns`).
    pub allin_runouts: usize,
}

/// Test support: epoch 1's snapshots, `latest` playing against one past epoch of `policy`
/// and `critic`, uniform as the best candidate.
#[cfg(test)]
pub(crate) fn one_epoch_snapshots(
    latest: &ArmacPolicyNet,
    policy: &ArmacPolicyNet,
    critic: &ArmacPolicyNet,
) -> Snapshots {
    Snapshots {
        epoch: 1,
        latest: Arc::new(latest.clone()),
        latest_table: None,
        past: vec![PastEpoch {
            policy: Arc::new(policy.clone()),
            critic: Arc::new(critic.clone()),
            exact: None,
            table: None,
        }],
        previous: None,
        best: Candidate::Uniform,
    }
}

/// Test support: `games` learning episodes per group (no evaluation groups), each against a
/// past epoch drawn per episode, Algorithm 1's targets and behaviour.
#[cfg(test)]
pub(crate) fn episode_settings(games: usize, reward_scale: f64) -> ActorSettings {
    ActorSettings {
        games_per_group: games,
        eval_fraction: 0.0,
        reward_scale,
        past_draw: PastDraw::Episode,
        advantage_target: Default::default(),
        behaviour: Default::default(),
        chance_baseline: false,
        allin_runouts: 0,
    }
}
