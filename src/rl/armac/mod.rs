//! The ARMAC trainer (Gruslys et al. 2020, Algorithm 1) above the networks: [`ArmacTrainer`]
//! runs the learner's epochs, the reservoir of past networks and its in-memory working set
//! ([`residency`]), the adaptive exploration candidates and the exact evaluation and
//! diagnostics of small games ([`diagnostics`]); [`settings`] holds the typed settings it runs
//! with, [`transport`] the link between the learner and its actors.
//!
//! # Epochs
//! Epoch `t` publishes the snapshots `θ^t` (the learner's weights at the epoch's start) and the
//! reservoir; actors play with them and tag every trajectory with `t`. The learner keeps only
//! epoch-`t` data (Algorithm 1 resets `D` every epoch) and takes `learning_steps_per_epoch`
//! steps, paced so that step `k` waits for `k/K` of the epoch's `episodes_per_epoch` episodes.
//! At the end it saves `θ^{t+1}` into the reservoir (reservoir sampling) and ranks the
//! exploration candidates by their returns against the average policy.
//!
//! The run layer ([`crate::run::armac`]) drives a trainer: config, run directory, checkpoint
//! generations, metrics and the stopping rules.

pub mod diagnostics;
pub mod error;
mod exact;
mod learn;
pub mod memory_io;
pub mod residency;
pub mod settings;
pub mod start;
pub mod state;
mod trainer;
pub mod transport;

pub use error::TrainError;
pub use learn::EpochWork;
pub use residency::ResidentStats;
pub use settings::{
    ArmacSettings, InputScale, PolyakScope, default_reward_scale, net_config, reward_scale,
};
pub use start::{Start, fresh_state, resume_state};
pub use state::{ArmacState, Nets, Sums, read_state};
pub use trainer::{ArmacTrainer, EpochReport, ScalarSink};

#[cfg(test)]
mod critic_fit;
#[cfg(test)]
mod tests;
