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
//!
//! # Components
//! Plain `f64` arithmetic, tested exactly: [`targets`] (Tree-Backup(λ) returns for the history
//! critic), [`reservoir`] (Vitter's Algorithm R for the reservoir of past policies, §3.1),
//! [`regret`] (the tabular limit [`regret::TabularArmac`], whose regret-matching policy equals
//! CFR's: Lemma 1, Appendix D), [`candidates`] (the adaptive behaviour-policy selection of
//! §3.3). With the networks: [`trajectory`], [`actor`], [`learner`], [`sequence`] (the actor
//! threads' lock-step episode groups and the learner's feed-forward and recurrent batches),
//! [`replay`] and [`memory`] (the replay memory and the reservoir memories of the mean-regret
//! and average-policy targets), [`exact_values`] and [`table`] (the `exact_advantages` and
//! `tabular_w` ablations), [`policy`] (the average-policy head as a
//! [`crate::policy::Policy`] and an LBR range policy), [`choices`] (the actors' setting
//! enums), [`working_set`] (the in-memory working set of the reservoir), [`lockstep`] (the
//! actors of the deterministic schedule and the derivation of its random streams).

pub mod actor;
pub mod candidates;
pub mod checkpoint;
pub mod choices;
pub mod critic_values;
pub mod diagnostics;
mod exact;
pub mod exact_values;
mod learn;
pub mod learner;
pub mod lockstep;
pub mod memory;
pub mod memory_io;
pub mod policy;
pub mod regret;
pub mod replay;
pub mod reservoir;
pub mod residency;
pub mod sequence;
pub mod settings;
pub mod start;
pub mod state;
pub mod table;
pub mod targets;
mod trainer;
pub mod trajectory;
pub mod transport;
pub mod working_set;

pub use learn::EpochWork;
pub use residency::ResidentStats;
pub use settings::{
    ArmacRun, ArmacSettings, InputScale, PolyakScope, SettingsError, default_reward_scale,
    net_config, reward_scale,
};
pub use start::{ResumePoint, Start, fresh_state, resume_state};
pub use state::{ArmacState, Nets, Sums, read_state};
pub use trainer::{ArmacTrainer, EpochReport, ScalarSink};

#[cfg(test)]
mod critic_fit;
#[cfg(test)]
mod tests;
