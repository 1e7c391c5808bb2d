//! The files of a checkpoint that hold the learner's data: the replay memory and the
//! reservoir memories of `armac.memory = "reservoir"`.

use super::settings::ArmacSettings;
use crate::nn::armac::ArmacNetConfig;
use crate::rl::armac::memory::{Memory, MemoryKind};
use crate::rl::armac::replay::Replay;
use crate::rl::armac::trajectory::encode_replay;
use crate::rl::error::{TrainError, io_err};
use serde::{Deserialize, Serialize};
use std::path::Path;

pub const REPLAY_FILE: &str = "replay.bin";
const MEMORY_REGRET_FILE: &str = "memory_regret.bin";
const MEMORY_POLICY_FILE: &str = "memory_policy.bin";
const MEMORY_COUNTS_FILE: &str = "memory.json";
/// The per-state sums of `memory_targets = "infoset_mean_all"`.
const MEMORY_MEANS_FILE: &str = "memory_means.bin";

/// How many samples each reservoir memory has been offered (`memory.json` of a checkpoint).
#[derive(Serialize, Deserialize)]
struct MemoryCounts {
    regret_seen: u64,
    policy_seen: u64,
}

/// An empty reservoir memory with the run's settings.
pub fn new_memory(s: &ArmacSettings) -> Memory {
    Memory::new(s.memory_capacity, s.memory_weights, s.memory_max_weight)
        .with_epoch_powers(s.memory_regret_power, s.memory_policy_power)
        .with_sampling(s.memory_sampling)
        .with_targets(s.memory_targets)
        .with_state_means(s.tabular_w)
}

/// The reservoir memories of `armac.memory = "reservoir"` from checkpoint directory `ckpt`:
/// empty when the checkpoint has none (a run that switches the memory on), an error naming
/// the file when one is missing or corrupt.
pub fn load_memory(
    ckpt: &Path,
    s: &ArmacSettings,
    net_cfg: &ArmacNetConfig,
) -> Result<Option<Memory>, TrainError> {
    if s.memory != MemoryKind::Reservoir {
        return Ok(None);
    }
    let mut m = new_memory(s);
    let counts_path = ckpt.join(MEMORY_COUNTS_FILE);
    if !counts_path.exists() {
        eprintln!(
            "note: checkpoint {} has no reservoir memory; armac.memory = \"reservoir\" starts \
             with an empty one",
            ckpt.display()
        );
        return Ok(Some(m));
    }
    let text = std::fs::read_to_string(&counts_path)
        .map_err(io_err("reservoir memory counts", &counts_path))?;
    let counts: MemoryCounts = serde_json::from_str(&text).map_err(|e| {
        TrainError::Usage(format!(
            "reservoir memory counts {} are corrupt: {e}",
            counts_path.display()
        ))
    })?;
    let read = |name: &str| -> Result<Vec<u8>, TrainError> {
        let path = ckpt.join(name);
        std::fs::read(&path).map_err(io_err("reservoir memory", &path))
    };
    let (regret, policy) = (read(MEMORY_REGRET_FILE)?, read(MEMORY_POLICY_FILE)?);
    m.decode(
        [(&regret, counts.regret_seen), (&policy, counts.policy_seen)],
        net_cfg.input_size,
        net_cfg.num_actions,
    )
    .map_err(|e| {
        TrainError::Usage(format!(
            "reservoir memory of checkpoint {} is unusable ({MEMORY_REGRET_FILE} / \
             {MEMORY_POLICY_FILE}): {e}",
            ckpt.display()
        ))
    })?;
    if s.memory_targets == crate::rl::armac::memory::MemoryTargets::InfosetMeanAll {
        let path = ckpt.join(MEMORY_MEANS_FILE);
        if path.exists() {
            let bytes = std::fs::read(&path).map_err(io_err("reservoir mean targets", &path))?;
            m.decode_means(&bytes).map_err(|e| {
                TrainError::Usage(format!(
                    "reservoir mean targets {} are unusable: {e}",
                    path.display()
                ))
            })?;
        } else {
            eprintln!(
                "note: checkpoint {} has no {MEMORY_MEANS_FILE}; the mean targets of \
                 memory_targets = \"infoset_mean_all\" start from the samples held",
                ckpt.display()
            );
        }
    }
    Ok(Some(m))
}

/// Whether the file of [`data_files`] named `name` is written by [`crate::util::seal`] (the
/// replay, the two reservoirs and the diagnostics; not the counts).
pub fn is_sealed(name: &str) -> bool {
    [
        REPLAY_FILE,
        MEMORY_REGRET_FILE,
        MEMORY_POLICY_FILE,
        MEMORY_MEANS_FILE,
        super::diagnostics::DIAGNOSTICS_FILE,
    ]
    .contains(&name)
}

/// The checkpoint files of `replay` and `memory`, by name, in the order they are written.
pub fn data_files(replay: &Replay, memory: Option<&Memory>) -> Vec<(&'static str, Vec<u8>)> {
    let mut files = vec![(
        REPLAY_FILE,
        encode_replay(replay.items.iter(), replay.info_len, replay.num_actions),
    )];
    if let Some(m) = memory {
        let [(regret, regret_seen), (policy, policy_seen)] =
            m.encode(replay.info_len, replay.num_actions);
        files.push((MEMORY_REGRET_FILE, regret));
        files.push((MEMORY_POLICY_FILE, policy));
        if let Some(means) = m.encode_means() {
            files.push((MEMORY_MEANS_FILE, means));
        }
        let counts = MemoryCounts {
            regret_seen,
            policy_seen,
        };
        files.push((
            MEMORY_COUNTS_FILE,
            serde_json::to_string_pretty(&counts).unwrap().into_bytes(),
        ));
    }
    files
}
