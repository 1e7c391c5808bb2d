//! How an ARMAC trainer starts ([`super::ArmacTrainer::open`]): a new run's learner and `θ^0`, or
//! everything a checkpoint holds of a run that resumes.

use super::diagnostics::DIAGNOSTICS_FILE;
use super::memory_io::{REPLAY_FILE, load_memory};
use super::residency::{load_resident, needed_snapshots, reservoir_rel, save_net};
use super::settings::{ArmacSettings, PolyakScope};
use super::state::{ArmacState, Nets, Sums, read_state};
use crate::game::GameRef;
use crate::nn::armac::{ArmacLearner, ArmacNetConfig};
use crate::rl::armac::actor::PastDraw;
use crate::rl::armac::candidates::{Candidate, CandidateStats};
use crate::rl::armac::memory::Memory;
use crate::rl::armac::reservoir::Reservoir;
use crate::rl::armac::trajectory::{Trajectory, decode_replay};
use crate::rl::armac::working_set::WorkingSet;
use crate::rl::error::{TrainError, io_err};
use crate::util::{FileSum, SplitMix64};
use std::path::Path;
use std::sync::Arc;

/// What a trainer starts from: learner, state, networks in memory, the replay memory's
/// trajectories, the recorded sums of reservoir networks and the reservoir memories.
pub struct Start {
    pub learner: ArmacLearner,
    pub state: ArmacState,
    pub nets: Nets,
    pub replay_items: Vec<Trajectory>,
    pub sums: Sums,
    pub memory: Option<Memory>,
    /// The checkpoint's `diagnostics.bin` as written (absent without `armac.diagnostics`).
    pub diagnostics: Option<Vec<u8>>,
}

/// A committed checkpoint a trainer resumes from: its directory (verified against its
/// manifest), the epoch the manifest records and the sums of the shared files it lists.
pub struct ResumePoint<'a> {
    pub ckpt_dir: &'a Path,
    pub step: u64,
    pub shared: &'a std::collections::BTreeMap<String, FileSum>,
}

/// Applies the settings a learner takes besides its network and step size.
fn configure_learner(learner: &mut ArmacLearner, s: &ArmacSettings) -> Result<(), TrainError> {
    learner.set_polyak(s.polyak);
    learner
        .set_polyak_regret_only(s.polyak_scope == PolyakScope::Regret)
        .map_err(TrainError::context("armac.polyak_scope"))?;
    learner.set_adam_beta1(s.adam_beta1);
    Ok(())
}

/// The learner, state, networks in memory, replay memory and the manifest's sums of every
/// reservoir network the state needs, of a run in `dir` resumed from checkpoint directory
/// `ckpt_dir` (already verified against its manifest, which says epoch `step` and lists the
/// sums of the shared files, `shared`). Only reads.
#[allow(clippy::too_many_arguments)]
pub fn resume_state(
    dir: &Path,
    ckpt_dir: &Path,
    step: u64,
    shared: &std::collections::BTreeMap<String, FileSum>,
    game: &GameRef,
    net_cfg: &ArmacNetConfig,
    device: &crate::nn::Device,
    s: &ArmacSettings,
    ws_capacity: usize,
) -> Result<Start, TrainError> {
    let state_path = ckpt_dir.join("state.json");
    let mut st = read_state(&state_path)?;
    st.keep_previous = s.past_draw() == PastDraw::Latest;
    if st.game != game.load_string() {
        return Err(TrainError::Usage(format!(
            "checkpoint {} is for game {}, the config says {}",
            state_path.display(),
            st.game,
            game.load_string()
        )));
    }
    if st.epoch != step {
        return Err(TrainError::Usage(format!(
            "checkpoint {} says epoch {}, its manifest {}",
            state_path.display(),
            st.epoch,
            step
        )));
    }
    let mut learner = ArmacLearner::load(
        net_cfg.clone(),
        device,
        s.learning_rate,
        &ckpt_dir.join("learner"),
    )
    .map_err(TrainError::context("resuming"))?;
    configure_learner(&mut learner, s)?;
    let mut sums = std::collections::HashMap::new();
    for id in needed_snapshots(&st) {
        match shared.get(&reservoir_rel(id)) {
            Some(sum) => sums.insert(id, sum.clone()),
            None => {
                return Err(TrainError::Usage(format!(
                    "checkpoint {} does not list the network {} its state needs",
                    ckpt_dir.display(),
                    reservoir_rel(id)
                )));
            }
        };
    }
    if let Some(&j) = st
        .working_set
        .epochs()
        .iter()
        .find(|j| !st.reservoir.items().contains(j))
    {
        return Err(TrainError::Usage(format!(
            "checkpoint {} is inconsistent: its working set holds past epoch {j}, its \
             reservoir does not",
            state_path.display()
        )));
    }
    // A no-op for a checkpoint of this run's settings; fills the working set of a checkpoint
    // written before working sets existed and fits it to a changed `snapshot_memory_mb` (from
    // a stream of its own, so the run's RNG state stays what the checkpoint recorded).
    let items = st.reservoir.items().to_vec();
    st.working_set.update(
        &items,
        ws_capacity,
        0,
        &mut SplitMix64::new(st.rng ^ 0x5157),
    );
    // Only the networks the working set needs are read (the manifest's sums of all of them
    // were checked when the generation was opened).
    let mut nets = std::collections::HashMap::new();
    load_resident(dir, &st, net_cfg, &mut nets, &sums)?;
    let path = ckpt_dir.join(REPLAY_FILE);
    let bytes = std::fs::read(&path).map_err(io_err("replay memory", &path))?;
    let items = decode_replay(&bytes, net_cfg.input_size, net_cfg.num_actions).map_err(|e| {
        TrainError::Usage(format!("replay memory {} is unusable: {e}", path.display()))
    })?;
    let memory = load_memory(ckpt_dir, s, net_cfg)?;
    let diag_path = ckpt_dir.join(DIAGNOSTICS_FILE);
    let diagnostics = if s.diagnostics && diag_path.exists() {
        Some(std::fs::read(&diag_path).map_err(io_err("diagnostics", &diag_path))?)
    } else {
        None
    };
    Ok(Start {
        learner,
        state: st,
        nets,
        replay_items: items,
        sums,
        memory,
        diagnostics,
    })
}

/// The learner, state and networks of a new run: θ^0 from `seed` (the config's), saved to the
/// reservoir.
pub fn fresh_state(
    dir: &Path,
    game: &GameRef,
    net_cfg: &ArmacNetConfig,
    device: &crate::nn::Device,
    s: &ArmacSettings,
    seed: u64,
) -> Result<(ArmacLearner, ArmacState, Nets), TrainError> {
    let mut learner = ArmacLearner::new(net_cfg.clone(), device, s.learning_rate, seed);
    configure_learner(&mut learner, s)?;
    let mut st = ArmacState {
        epoch: 0,
        learning_steps: 0,
        acting_steps: 0,
        episodes: 0,
        nodes_touched: 0,
        learning_decisions: 0,
        rows_learned: 0,
        elapsed_seconds: 0.0,
        cpu_seconds: 0.0,
        rng: seed ^ 0xA5A5_5A5A,
        reservoir: Reservoir::new(s.reservoir_capacity),
        working_set: WorkingSet::default(),
        candidate_stats: CandidateStats::default(),
        best: Candidate::Uniform,
        game: game.load_string(),
        keep_previous: s.past_draw() == PastDraw::Latest,
        broker_cursor: None,
        broker_seen: Default::default(),
    };
    // θ^0 is kept: it holds π^0, the policy of past epoch 0 once that epoch ends. Every
    // snapshot in memory is rounded like its file, so a resumed run plays the same networks.
    let net0 = learner.snapshot().rounded(s.snapshot_precision);
    std::fs::create_dir_all(dir.join("reservoir")).map_err(io_err("reservoir directory", dir))?;
    save_net(dir, 0, &net0, s.snapshot_precision)?;
    st.rng = SplitMix64::new(st.rng).next_u64();
    let mut nets = std::collections::HashMap::new();
    nets.insert(0u64, Arc::new(net0));
    Ok((learner, st, nets))
}
