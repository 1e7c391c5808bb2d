//! The ARMAC network (paper: Algorithm 1, sections 3.1-3.5, Appendices C and F), its CPU
//! inference handle for actor threads, and its learner.
//!
//! One network, several heads, all evaluated at a batch of decision points:
//!
//! * a shared **encoder** turns one player's information-state tensor into a representation
//!   `s` (feed-forward: `(Linear(hidden) → DoubleReLU) × layers`, width `2 · hidden`; recurrent:
//!   `Linear(2·hidden) → DoubleReLU → LSTM(2·hidden)` per Appendix F, which is exactly
//!   `Linear(256) → DoubleReLU → LSTM(256)` at the default `encoder_hidden = 128`);
//! * three **information-state heads** on the acting player's representation, each its own
//!   block `B(s)` followed by `Linear(num_actions)`: the mean-regret head `W̄(s, a)`, the
//!   immediate-regret head (the current epoch's advantage `q_θt(h, a) − v_θt(h)` regressed on `s`)
//!   and the average-policy head `π̄(s)` (logits). The same weights serve both players;
//! * the **global critic** on both players' representations: `a0 = nA(s0) + nB(s1)`,
//!   `a1 = nB(s0) + nA(s1)`, `h = B(concat(a0, a1))`, `q0 = Linear(A)(h)`, `q1 = Linear(A)(h)` —
//!   history-action values for player 0's and player 1's utility.
//!
//! `B(x)`: `h1 = Linear(head_hidden)(x)`, `h2 = DoubleReLU(h1)`, `h3 = h1 + Linear(head_hidden)(h2)`,
//! `B(x) = DoubleReLU(h3)` (width `2 · head_hidden`). `DoubleReLU(x) = concat(relu(x), relu(−x))`.
//!
//! Illegal actions are masked everywhere: the regret heads and the critic read `0` there, the
//! average-policy logits read [`ILLEGAL_LOGIT`], every loss ignores them, and the policies built
//! from the heads (`normalized_relu`, the masked softmax) give them probability exactly `0`.
//!
//! Everything that crosses this module's boundary outside [`ArmacNet`] itself is plain Rust data
//! ([`ActBatch`], [`ActOutput`], [`TrainBatch`], [`Losses`]), so the rest of the crate never sees a
//! tensor.
//!
//! Initialisation is reproducible: weights are drawn from a SplitMix64 stream seeded by the
//! caller's `seed` (uniform `±1/√fan_in`, PyTorch's `nn.Linear` default), independent of burn's
//! global, per-backend RNG.

mod batch;
mod checkpoint;
mod config;
mod forward;
mod grouped;
#[cfg(test)]
mod io_tests;
mod layers;
mod learner;
mod loss;
mod net;
mod onnx;
mod plain;
mod policy_net;
mod resident;
#[cfg(test)]
mod resident_tests;
mod step_targets;
#[cfg(test)]
mod step_targets_tests;
mod synthetic;
mod tensors;
#[cfg(test)]
mod tests;

pub use batch::{ActBatch, ActOutput, Heads, Losses, StepTargets, TrainBatch, TrainRow};
pub(crate) use checkpoint::{CastFloats, FileCheck, read_file, write_all_atomic};
pub use config::{ArmacNetConfig, NnError, SnapshotPrecision};
pub use grouped::train_step_flops;
pub use layers::{Head, LstmCell, LstmState, ResBlock, double_relu, feed_forward};
pub(crate) use layers::{NumberParams, init_linear};
pub use learner::{ArmacLearner, SeqTrainBatch};
pub use net::{ArmacNet, ArmacOutput};
pub use onnx::{
    ONNX_INPUT_INFO_STATE, ONNX_INPUT_LEGAL_MASK, ONNX_OUTPUT_PROBABILITIES, OnnxPolicy,
};
pub use plain::{PlainRangeNet, fast_sigmoid, fast_tanh};
pub use policy_net::{ArmacPolicyNet, RecurrentState, SeqInputs, StepBatch};
pub use resident::{
    RESIDENT_CHUNK_BYTES, RESIDENT_MAX_CAPACITY, ResidentDraw, ResidentStep, ResidentUpdate,
    resident_catch_up_uploads, resident_width,
};
pub use synthetic::{
    push_synthetic_memory_rows, synthetic_act_batch, synthetic_seq_batch, synthetic_step_targets,
    synthetic_train_batch,
};
pub use tensors::DeviceIo;

use crate::util::SplitMix64;

/// Value of the average-policy logits at illegal actions (before any softmax).
pub const ILLEGAL_LOGIT: f32 = -1.0e9;

/// Model weights of a learner checkpoint (a file inside the checkpoint directory).
pub const CHECKPOINT_MODEL_FILE: &str = "armac_model.bpk";
/// Optimizer (Adam moments) state of a learner checkpoint.
pub const CHECKPOINT_OPTIMIZER_FILE: &str = "armac_optimizer.bpk";
/// Config, step counter and file checks of a learner checkpoint (JSON).
pub const CHECKPOINT_META_FILE: &str = "armac_meta.json";
/// File name of the Polyak-averaged weights in a learner checkpoint (when averaging is on).
pub const CHECKPOINT_EMA_FILE: &str = "armac_ema.bpk";

const CHECKPOINT_FORMAT: u32 = 1;

/// The generator of a network's initial weights (and of synthetic batches) for `seed`: the
/// crate's SplitMix64, salted so that these streams differ from the samplers' for equal seeds.
fn init_rng(seed: u64) -> SplitMix64 {
    SplitMix64::new(seed ^ 0x5EED_A12A_C0DE_0001)
}
