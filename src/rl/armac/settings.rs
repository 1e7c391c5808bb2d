//! Typed settings of an ARMAC run, validated from a config's `[armac]` section, and the
//! quantities derived from them that learner and actors must agree on (network shape, reward
//! scale).

use crate::game::GameRef;
use crate::nn::armac::{ArmacNetConfig, SnapshotPrecision};
use crate::rl::armac::actor::{AdvantageTarget, Behaviour, PastDraw};
use crate::rl::armac::memory::{
    DeviceMemory, MemoryKind, MemorySampling, MemoryTargets, MemoryWeights,
};
use serde::{Deserialize, Serialize};

/// What `armac.polyak` averages (see `armac.polyak_scope`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolyakScope {
    /// Every network the actors play and the run saves.
    #[default]
    All,
    /// Only the mean-regret path (its own encoder and the `W̄` head).
    Regret,
}

/// What the network's inputs are divided by (`armac.input_scale`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputScale {
    /// Nothing: the game's tensor as it is (chip amounts in chips).
    None,
    /// The game's per-entry magnitudes (`Game::information_state_tensor_scale`, or the
    /// observation tensor's for the recurrent net): every entry enters within [-1, 1]
    /// (default: on the no-limit testbed raw inputs left NashConv at 1,013 / 744 chips
    /// against 420 / 368, docs/results.md; games whose tensors lie in [-1, 1] give no scale).
    #[default]
    Game,
}

/// Validated settings of an ARMAC run.
#[derive(Clone, Debug, PartialEq)]
pub struct ArmacSettings {
    pub game: String,
    pub epochs: u64,
    pub episodes_per_epoch: usize,
    pub learning_steps: usize,
    pub batch_trajectories: usize,
    pub learning_rate: f64,
    pub lambda: f64,
    pub reservoir_capacity: usize,
    pub replay_capacity: usize,
    pub snapshot_memory_mb: usize,
    pub snapshot_precision: SnapshotPrecision,
    pub past_draw: PastDraw,
    pub memory: MemoryKind,
    pub memory_capacity: usize,
    pub memory_batch: usize,
    pub memory_weights: MemoryWeights,
    pub memory_sampling: MemorySampling,
    pub memory_targets: MemoryTargets,
    pub device_memory: DeviceMemory,
    pub behaviour: Behaviour,
    pub memory_max_weight: f64,
    pub memory_regret_power: f64,
    pub memory_policy_power: f64,
    pub polyak: f64,
    pub polyak_scope: PolyakScope,
    pub adam_beta1: f64,
    pub lr_decay_epochs: f64,
    pub reward_scale: Option<f64>,
    pub loss_weights: [f64; 4],
    pub exact_advantages: bool,
    pub tabular_w: bool,
    pub advantage_target: AdvantageTarget,
    pub chance_baseline: bool,
    pub allin_runouts: usize,
    /// Thresholding of the trained policy when it is played (`armac.play_threshold`); not
    /// used in training.
    pub play_threshold: f64,
    pub actors: usize,
    pub learner_threads: usize,
    pub games_per_group: usize,
    pub eval_fraction: f64,
    pub hidden: usize,
    pub layers: usize,
    pub recurrent: bool,
    pub zero_init_heads: bool,
    pub separate_regret_encoder: bool,
    pub input_scale: InputScale,
    pub unroll_length: usize,
    pub device: String,
    pub exact_eval: bool,
    pub diagnostics: bool,
    pub eval_every: u64,
    pub checkpoint_every: u64,
    pub checkpoint_seconds: f64,
}

impl ArmacSettings {
    /// Adam's step size in epoch `t` (see `armac.lr_decay_epochs`).
    pub fn learning_rate_at(&self, epoch: u64) -> f64 {
        if self.lr_decay_epochs > 0.0 {
            self.learning_rate / (1.0 + epoch as f64 / self.lr_decay_epochs).sqrt()
        } else {
            self.learning_rate
        }
    }
}

/// The network of a run: feed-forward over information-state tensors, or (`armac.recurrent`)
/// recurrent over per-step observation tensors.
pub fn net_config(game: &GameRef, s: &ArmacSettings) -> ArmacNetConfig {
    ArmacNetConfig {
        input_size: if s.recurrent {
            game.observation_tensor_size()
        } else {
            game.information_state_tensor_size()
        },
        num_actions: game.num_distinct_actions(),
        encoder_hidden: s.hidden,
        encoder_layers: s.layers,
        head_hidden: s.hidden,
        recurrent: s.recurrent,
        zero_init_heads: s.zero_init_heads,
        separate_regret_encoder: s.separate_regret_encoder,
        input_scale: match s.input_scale {
            InputScale::None => None,
            InputScale::Game if s.recurrent => game.observation_tensor_scale(),
            InputScale::Game => game.information_state_tensor_scale(),
        }
        .unwrap_or_default(),
    }
}

/// What returns are divided by: `armac.reward_scale`, or by default the largest absolute
/// utility (networks learn values of order 1).
pub fn reward_scale(game: &GameRef, s: &ArmacSettings) -> f64 {
    s.reward_scale.unwrap_or_else(|| default_reward_scale(game))
}

/// The reward scale when the config sets none: the game's largest absolute payoff.
pub fn default_reward_scale(game: &GameRef) -> f64 {
    game.max_utility()
        .abs()
        .max(game.min_utility().abs())
        .max(1e-9)
}
