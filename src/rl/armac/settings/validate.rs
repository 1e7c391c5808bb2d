//! [`ArmacSettings::validate`]: the bounds of every `[armac]` key, grouped by concern, with
//! the shared helpers of [`crate::util::check`] (one message per kind of bound).

use super::{ArmacSettings, PolyakScope, SettingsError};
use crate::nn::armac::RESIDENT_MAX_CAPACITY;
use crate::rl::armac::actor::{Behaviour, PastDraw};
use crate::rl::armac::memory::{DeviceMemory, MemoryKind, MemoryTargets};
use crate::util::check::{MAX_THREADS, Section};

/// The errors of `armac.*` keys.
const ARMAC: Section = Section("armac");

impl ArmacSettings {
    /// Checks every key's bounds and the keys that need each other; the error names the key
    /// (`armac.lambda`).
    pub fn validate(&self) -> Result<(), SettingsError> {
        check_sizes(self)?;
        check_requirements(self)?;
        check_memory(self)?;
        check_ranges(self)
    }
}

/// Counts and capacities, and the learning rate and λ.
fn check_sizes(a: &ArmacSettings) -> Result<(), SettingsError> {
    ARMAC.at_least_one(&[
        ("epochs", a.epochs as usize),
        ("episodes_per_epoch", a.episodes_per_epoch),
        ("learning_steps_per_epoch", a.learning_steps_per_epoch),
        ("batch_trajectories", a.batch_trajectories),
        ("reservoir_capacity", a.reservoir_capacity),
        ("snapshot_memory_mb", a.snapshot_memory_mb),
        ("actors", a.actors),
        ("games_per_group", a.games_per_group),
        ("hidden", a.hidden),
        ("layers", a.layers),
        ("unroll_length", a.unroll_length),
    ])?;
    ARMAC.require(
        a.learner_threads <= MAX_THREADS,
        "learner_threads",
        "must be at most 1024 (0: the cores the actors leave)",
    )?;
    ARMAC.at_most(&[
        ("actors", a.actors, MAX_THREADS, "threads"),
        (
            "episodes_per_epoch",
            a.episodes_per_epoch,
            1 << 24,
            "trajectories",
        ),
        (
            "replay_capacity",
            a.replay_capacity,
            1 << 24,
            "trajectories",
        ),
        (
            "batch_trajectories",
            a.batch_trajectories,
            1 << 16,
            "trajectories",
        ),
        ("games_per_group", a.games_per_group, 1 << 16, "games"),
        ("unroll_length", a.unroll_length, 1 << 16, "steps"),
        ("allin_runouts", a.allin_runouts, 1 << 16, "run-outs"),
        (
            "reservoir_capacity",
            a.reservoir_capacity,
            1 << 20,
            "networks",
        ),
        ("snapshot_memory_mb", a.snapshot_memory_mb, 1 << 20, "MiB"),
        ("memory_capacity", a.memory_capacity, 1 << 26, "samples"),
        ("memory_batch", a.memory_batch, 1 << 20, "samples"),
    ])?;
    ARMAC.network(("hidden", "layers"), a.hidden, a.layers)?;
    ARMAC.require(
        a.replay_capacity >= a.episodes_per_epoch,
        "replay_capacity",
        "must be at least episodes_per_epoch (one epoch of trajectories)",
    )?;
    ARMAC.positive("learning_rate", a.learning_rate)?;
    ARMAC.in_unit(&[("lambda", a.lambda)])
}

/// The options that need exact evaluation, a target kind or a network kind.
fn check_requirements(a: &ArmacSettings) -> Result<(), SettingsError> {
    ARMAC.require(
        !a.diagnostics || a.exact_eval,
        "diagnostics",
        "needs armac.exact_eval = true (diagnostics are exact, small games only)",
    )?;
    ARMAC.require(
        !a.exact_advantages || a.exact_eval,
        "exact_advantages",
        "needs armac.exact_eval = true (exact values exist for small games only)",
    )?;
    if a.tabular_w {
        let why = if !a.exact_eval {
            Some(
                "needs armac.exact_eval = true (the table is kept over the game tree, small games only)",
            )
        } else if a.memory != MemoryKind::Reservoir {
            Some("needs armac.memory = \"reservoir\" (the table holds the reservoir's means)")
        } else if a.behaviour != Behaviour::Uniform {
            Some(
                "needs armac.behaviour = \"uniform\" (only the latest and the previous \
                 epoch's tables are kept, and candidates can play older epochs)",
            )
        } else {
            None
        };
        if let Some(why) = why {
            return Err(ARMAC.error("tabular_w", why));
        }
    }
    if a.chance_baseline {
        let why = if !a.advantage_target.is_corrected() {
            Some("needs armac.advantage_target = \"corrected\" or \"corrected_infoset\"")
        } else if a.recurrent {
            Some("needs a feed-forward network (armac.recurrent = false)")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(ARMAC.error("chance_baseline", why));
        }
    }
    ARMAC.require(
        !(a.advantage_target.uses_infoset() && a.recurrent),
        "advantage_target",
        "\"infoset\" and \"corrected_infoset\" need a feed-forward network \
         (armac.recurrent = false)",
    )?;
    ARMAC.require(
        a.reward_scale.is_none_or(|x| x.is_finite() && x > 0.0),
        "reward_scale",
        "must be a positive number",
    )?;
    ARMAC.require(
        a.loss_weights.iter().all(|w| w.is_finite() && *w >= 0.0),
        "loss_weights",
        "must be four numbers >= 0",
    )?;
    ARMAC.require(
        a.lr_decay_epochs.is_finite() && a.lr_decay_epochs >= 0.0,
        "lr_decay_epochs",
        "must be a number >= 0 (0: constant rate)",
    )
}

/// The memory keys.
fn check_memory(a: &ArmacSettings) -> Result<(), SettingsError> {
    let reservoir = a.memory == MemoryKind::Reservoir;
    match (a.memory, a.past_draw) {
        (MemoryKind::Replay, _) | (MemoryKind::Reservoir, None | Some(PastDraw::Latest)) => {}
        (MemoryKind::Reservoir, Some(_)) => {
            return Err(ARMAC.error(
                "past_draw",
                "must be \"latest\" with armac.memory = \"reservoir\" (each epoch adds the \
                 advantages of the previous epoch's policy to the reservoir)",
            ));
        }
    }
    if reservoir {
        ARMAC.require(
            !a.recurrent,
            "memory",
            "\"reservoir\" needs the feed-forward network (armac.recurrent = false): \
             its samples are single decisions, not sequences",
        )?;
        ARMAC.require(
            a.memory_capacity != 0 && a.memory_batch != 0,
            "memory_capacity / memory_batch",
            "must be at least 1 with armac.memory = \"reservoir\"",
        )?;
    }
    ARMAC.require(
        reservoir || a.memory_targets == MemoryTargets::Sample,
        "memory_targets",
        "mean targets need armac.memory = \"reservoir\"",
    )?;
    ARMAC.require(
        a.device_memory != DeviceMemory::Device
            || (reservoir
                && a.memory_targets == MemoryTargets::Sample
                && a.memory_capacity <= RESIDENT_MAX_CAPACITY),
        "device_memory",
        "\"device\" needs armac.memory = \"reservoir\", memory_targets = \"sample\" \
         and memory_capacity <= 16777216",
    )?;
    Ok(())
}

/// Weights, exponents and decays.
fn check_ranges(a: &ArmacSettings) -> Result<(), SettingsError> {
    ARMAC.require(
        !(a.recurrent && a.separate_regret_encoder),
        "separate_regret_encoder",
        "needs the feed-forward network (armac.recurrent = false)",
    )?;
    ARMAC.require(
        a.memory_max_weight.is_finite() && a.memory_max_weight >= 1.0,
        "memory_max_weight",
        "must be a number >= 1",
    )?;
    for (key, v) in [
        ("memory_regret_power", a.memory_regret_power),
        ("memory_policy_power", a.memory_policy_power),
    ] {
        ARMAC.require(
            v.is_finite() && (0.0..=4.0).contains(&v),
            key,
            "must be a number in [0, 4]",
        )?;
    }
    ARMAC.below_one(&[("polyak", a.polyak)])?;
    if a.polyak_scope == PolyakScope::Regret {
        ARMAC.require(
            a.separate_regret_encoder,
            "polyak_scope",
            "\"regret\" needs separate_regret_encoder = true",
        )?;
        ARMAC.require(
            a.polyak != 0.0,
            "polyak_scope",
            "\"regret\" needs polyak > 0",
        )?;
    }
    ARMAC.below_one(&[
        ("adam_beta1", a.adam_beta1),
        ("eval_fraction", a.eval_fraction),
        ("play_threshold", a.play_threshold),
    ])
}
