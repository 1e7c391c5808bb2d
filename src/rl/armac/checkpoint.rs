//! What a checkpoint generation of an ARMAC run holds, as the trainer hands it to the run
//! layer that writes and commits generations ([`crate::run::generation`]): the learner (its
//! own directory), `state.json`, the replay and reservoir memories, and references with sums
//! to the reservoir networks the state needs (files shared by later generations).

use super::diagnostics::{DIAGNOSTICS_FILE, Diagnostics};
use super::memory::Memory;
use super::memory_io::data_files;
use super::replay::Replay;
use super::residency::{needed_snapshots, reservoir_path, reservoir_rel};
use super::state::{ArmacState, Sums};
use crate::nn::armac::ArmacLearner;
use crate::rl::error::{TrainError, io_err};
use crate::util::FileSum;
use std::collections::BTreeSet;
use std::path::Path;

/// The contents of one checkpoint generation.
pub struct Checkpoint<'a> {
    /// The epoch the generation records.
    pub epoch: u64,
    /// The learner (weights and optimizer), saved into the generation's `learner/`.
    pub learner: &'a ArmacLearner,
    /// The generation's own files: `state.json`, then the replay and reservoir memories.
    pub files: Vec<(&'static str, Vec<u8>)>,
    /// The reservoir networks the state needs: path relative to the run directory, and sum.
    pub snapshots: Vec<(String, FileSum)>,
}

/// A checkpoint's own files, its network references and the ids of the networks referenced.
pub type Contents = (
    Vec<(&'static str, Vec<u8>)>,
    Vec<(String, FileSum)>,
    BTreeSet<u64>,
);

/// The files and network references of a checkpoint of `state` with `replay`, `memory` and the
/// accumulators of `diagnostics`, in the run in `dir`, and the ids of the networks referenced. `sums` caches the networks'
/// sums; one it lacks is read from the network's file and added.
pub fn contents(
    dir: &Path,
    state: &ArmacState,
    replay: &Replay,
    memory: Option<&Memory>,
    diagnostics: Option<&Diagnostics>,
    sums: &mut Sums,
) -> Result<Contents, TrainError> {
    let state_json =
        serde_json::to_string_pretty(state).map_err(TrainError::context("encoding the state"))?;
    let mut files = vec![("state.json", state_json.into_bytes())];
    files.extend(data_files(replay, memory));
    if let Some(d) = diagnostics {
        files.push((DIAGNOSTICS_FILE, d.encode()));
    }
    let needed = needed_snapshots(state);
    let mut snapshots = Vec::with_capacity(needed.len());
    for &id in &needed {
        let sum = match sums.get(&id) {
            Some(s) => s.clone(),
            None => {
                let path = reservoir_path(dir, id);
                let b = std::fs::read(&path).map_err(io_err("network snapshot", &path))?;
                FileSum::of(&b)
            }
        };
        snapshots.push((reservoir_rel(id), sum.clone()));
        sums.insert(id, sum);
    }
    Ok((files, snapshots, needed))
}
