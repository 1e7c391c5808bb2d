//! `[eval]` and `[checkpoint]`: the schedule keys every run kind reads.

use serde::{Deserialize, Serialize};

/// `[eval]`: how often the exact evaluation runs.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EvalConfig {
    /// Compute NashConv every this many iterations / epochs (and always at the end).
    #[serde(default = "default_eval_every")]
    pub every: u64,
}

fn default_eval_every() -> u64 {
    10
}

impl Default for EvalConfig {
    fn default() -> Self {
        EvalConfig {
            every: default_eval_every(),
        }
    }
}

/// `[checkpoint]`: how often the resumable state is written.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CheckpointConfig {
    /// Write a checkpoint at least this often (seconds of wall time), and at the end.
    #[serde(default = "default_checkpoint_seconds")]
    pub every_seconds: f64,
    /// ARMAC: also write a checkpoint every this many epochs.
    #[serde(default = "default_checkpoint_epochs")]
    pub every_epochs: u64,
}

fn default_checkpoint_epochs() -> u64 {
    10
}

fn default_checkpoint_seconds() -> f64 {
    60.0
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        CheckpointConfig {
            every_seconds: default_checkpoint_seconds(),
            every_epochs: default_checkpoint_epochs(),
        }
    }
}
