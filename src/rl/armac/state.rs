//! What an ARMAC run carries from epoch to epoch and saves in `checkpoint/state.json`.

use crate::nn::armac::ArmacPolicyNet;
use crate::rl::armac::candidates::{Candidate, CandidateStats};
use crate::rl::armac::reservoir::Reservoir;
use crate::rl::armac::working_set::WorkingSet;
use crate::rl::error::{TrainError, io_err};
use crate::util::FileSum;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// Counters and RNG state saved in `checkpoint/state.json`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ArmacState {
    pub epoch: u64,
    pub learning_steps: u64,
    pub acting_steps: u64,
    pub episodes: u64,
    /// States the actors visited: decisions, chance nodes and terminals of every episode
    /// taken in (the papers' "nodes touched"); absent (0) in older checkpoints.
    #[serde(default)]
    pub nodes_touched: u64,
    /// Decisions of the learning player in learning episodes taken in; absent (0) in older
    /// checkpoints.
    #[serde(default)]
    pub learning_decisions: u64,
    /// Rows the learner's steps trained on (trajectory steps and memory samples); absent (0)
    /// in older checkpoints.
    #[serde(default)]
    pub rows_learned: u64,
    pub elapsed_seconds: f64,
    /// CPU seconds of the processes that trained the run, all threads (absent in older
    /// checkpoints: 0, then counted from the resume on).
    #[serde(default)]
    pub cpu_seconds: f64,
    pub rng: u64,
    pub reservoir: Reservoir<u64>,
    /// The past epochs held in memory for the actors (all of the reservoir while it fits
    /// `armac.snapshot_memory_mb`); absent in checkpoints written before it existed.
    #[serde(default)]
    pub working_set: WorkingSet,
    /// The last epoch's candidate returns (their ranking picks `best`).
    #[serde(default)]
    pub candidate_stats: CandidateStats,
    pub best: Candidate,
    pub game: String,
    /// Whether the networks of the previous epoch `t − 1` are kept on disk and in memory
    /// whether or not the reservoir holds that epoch (`past_draw = "latest"`); absent (false)
    /// in checkpoints written before it existed.
    #[serde(default)]
    pub keep_previous: bool,
    /// `cluster.role = "learner"`: the last broker stream entry this state holds (see
    /// [`crate::cluster::redis`]); absent in-process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker_cursor: Option<String>,
    /// With `broker_cursor`: the highest `seq` handed to training per actor-thread token (see
    /// [`crate::cluster::LearnerLink::seen`]); absent in-process and in older checkpoints.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub broker_seen: std::collections::BTreeMap<String, u64>,
}

/// The networks a run holds in memory, by epoch.
pub type Nets = std::collections::HashMap<u64, Arc<ArmacPolicyNet>>;
/// The recorded sums of reservoir network files, by epoch.
pub type Sums = std::collections::HashMap<u64, FileSum>;

/// The counters and reservoir of a checkpoint (`<checkpoint>/state.json`).
pub fn read_state(state_path: &Path) -> Result<ArmacState, TrainError> {
    // Bytes, not text: a file that is not UTF-8 is a corrupt checkpoint, not an I/O failure.
    let bytes = std::fs::read(state_path).map_err(io_err("checkpoint state", state_path))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        TrainError::Usage(format!(
            "checkpoint {} is corrupt: {e}",
            state_path.display()
        ))
    })
}
