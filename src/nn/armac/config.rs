//! Errors of the network layer and the network's hyper-parameters ([`ArmacNetConfig`]).

use serde::Deserialize;
use serde::Serialize;
use std::path::PathBuf;

/// Errors of the ARMAC network layer: configs, batches, checkpoints.
#[derive(Debug, thiserror::Error)]
pub enum NnError {
    /// The network config is unusable (a zero size, say).
    #[error("invalid ARMAC network config: {0}")]
    Config(String),
    /// A batch's vectors do not have the lengths its row count and the config imply.
    #[error("invalid batch: {0}")]
    Batch(String),
    /// A file could not be read or written.
    #[error("{op} `{}`: {source}", path.display())]
    Io {
        /// What was being done (`cannot read`, `cannot write`, ...).
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file exists but is not a readable checkpoint (truncated, garbage, wrong format).
    #[error("corrupt checkpoint file `{}`: {msg}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        msg: String,
    },
    /// A file is a valid checkpoint but of a different network (sizes, layers, config).
    #[error("checkpoint file `{}` does not match the network config: {msg}", path.display())]
    Mismatch {
        /// The file.
        path: PathBuf,
        /// What differed.
        msg: String,
    },
    /// Weights or optimizer state could not be serialised.
    #[error("cannot serialise {what}: {msg}")]
    Serialize {
        /// `the model` or `the optimizer`.
        what: &'static str,
        /// The underlying error.
        msg: String,
    },
    /// An operation that needs the recurrent encoder was called on a feed-forward net (or the
    /// reverse).
    #[error("{0}")]
    WrongEncoder(String),
}

/// Sizes of an [`ArmacNet`](super::ArmacNet). Serialised into learner checkpoints.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArmacNetConfig {
    /// Length of one player's information-state tensor (feed-forward) or per-step observation
    /// (recurrent).
    pub input_size: usize,
    /// Number of distinct actions `A` (heads output `A` values; illegal ones are masked).
    pub num_actions: usize,
    /// Width of each encoder linear layer; the encoder's output width is `2 · encoder_hidden`
    /// (DoubleReLU). Default 128.
    #[serde(default = "default_hidden")]
    pub encoder_hidden: usize,
    /// Number of `Linear → DoubleReLU` layers of the feed-forward encoder. Default 2. Ignored by
    /// the recurrent encoder.
    #[serde(default = "default_layers")]
    pub encoder_layers: usize,
    /// Width of the linear layers in each block `B(x)`; a block outputs `2 · head_hidden`.
    /// Default 128 (Appendix F).
    #[serde(default = "default_hidden")]
    pub head_hidden: usize,
    /// Use the recurrent encoder (`Linear(2h) → DoubleReLU → LSTM(2h)`, `h = encoder_hidden`)
    /// over per-step observations instead of the feed-forward one. Default false.
    #[serde(default)]
    pub recurrent: bool,
    /// Start the regret and average-policy heads' output layers at zero, so that `π^0`
    /// (regret matching of `W̄ = 0`) and `π̄^0` (softmax of zero logits) are uniform instead of
    /// the random policies random weights give.
    #[serde(default)]
    pub zero_init_heads: bool,
    /// Give the mean-regret head its own feed-forward encoder (same sizes as the shared one),
    /// so that the critic's and the other heads' losses do not move the features `W̄` reads.
    /// Feed-forward nets only. Default false.
    #[serde(default)]
    pub separate_regret_encoder: bool,
    /// What each input entry is divided by before the first layer reads it (the game's tensor
    /// scale, `Game::information_state_tensor_scale`): chip amounts then enter near 1, as
    /// the card bits do. Empty: the raw tensor (so load networks saved without this field).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_scale: Vec<f32>,
}

pub(super) fn default_hidden() -> usize {
    128
}

pub(super) fn default_layers() -> usize {
    2
}

impl ArmacNetConfig {
    /// A config with the given input and action sizes and the defaults for everything else
    /// (`encoder_hidden = 128`, `encoder_layers = 2`, `head_hidden = 128`, feed-forward).
    pub fn new(input_size: usize, num_actions: usize) -> Self {
        Self {
            input_size,
            num_actions,
            encoder_hidden: default_hidden(),
            encoder_layers: default_layers(),
            head_hidden: default_hidden(),
            recurrent: false,
            zero_init_heads: false,
            separate_regret_encoder: false,
            input_scale: Vec::new(),
        }
    }

    /// Sets `encoder_hidden`.
    pub fn with_encoder_hidden(mut self, n: usize) -> Self {
        self.encoder_hidden = n;
        self
    }

    /// Sets `encoder_layers`.
    pub fn with_encoder_layers(mut self, n: usize) -> Self {
        self.encoder_layers = n;
        self
    }

    /// Sets `head_hidden`.
    pub fn with_head_hidden(mut self, n: usize) -> Self {
        self.head_hidden = n;
        self
    }

    /// Sets `recurrent`.
    pub fn with_recurrent(mut self, recurrent: bool) -> Self {
        self.recurrent = recurrent;
        self
    }

    /// The same config with zero-initialised regret and policy output layers.
    pub fn with_zero_init_heads(mut self, zero: bool) -> Self {
        self.zero_init_heads = zero;
        self
    }

    /// Sets `separate_regret_encoder`.
    pub fn with_separate_regret_encoder(mut self, separate: bool) -> Self {
        self.separate_regret_encoder = separate;
        self
    }

    /// Sets `input_scale` (empty: the raw tensor).
    pub fn with_input_scale(mut self, scale: Vec<f32>) -> Self {
        self.input_scale = scale;
        self
    }
    /// The number of parameters (weights and biases) of a network of this config, counted
    /// from its shapes without building it: what its memory estimate scales with.
    pub fn num_params(&self) -> usize {
        let linear = |d_in: usize, d_out: usize| d_in * d_out + d_out;
        let (h, hh, a) = (self.encoder_hidden, self.head_hidden, self.num_actions);
        let rep = self.representation_size();
        let block = |d_in: usize| linear(d_in, hh) + linear(2 * hh, hh);
        let feed_forward = (0..self.encoder_layers)
            .map(|k| linear(if k == 0 { self.input_size } else { 2 * h }, h))
            .sum::<usize>();
        let encoder = if self.recurrent {
            // Input Linear(2h), whose DoubleReLU output (4h) feeds an LSTM of width 2h:
            // Linear(4h -> 4·2h) with bias and Linear(2h -> 4·2h) without.
            linear(self.input_size, rep) + linear(2 * rep, 4 * rep) + rep * 4 * rep
        } else {
            feed_forward
        };
        let regret_encoder = if self.separate_regret_encoder && !self.recurrent {
            feed_forward
        } else {
            0
        };
        let heads = 3 * (block(rep) + linear(2 * hh, a));
        let critic = 2 * linear(rep, hh) + block(2 * hh) + 2 * linear(2 * hh, a);
        encoder + regret_encoder + heads + critic
    }

    /// Width of the representation `s` the encoder produces: `2 · encoder_hidden` either way.
    pub fn representation_size(&self) -> usize {
        2 * self.encoder_hidden
    }

    /// Checks that every size is positive.
    pub fn validate(&self) -> Result<(), NnError> {
        let fields = [
            ("input_size", self.input_size),
            ("num_actions", self.num_actions),
            ("encoder_hidden", self.encoder_hidden),
            ("head_hidden", self.head_hidden),
        ];
        for (name, v) in fields {
            if v == 0 {
                return Err(NnError::Config(format!("{name} must be positive")));
            }
        }
        if !self.input_scale.is_empty() {
            if self.input_scale.len() != self.input_size {
                return Err(NnError::Config(format!(
                    "input_scale has {} entries for an input of {}",
                    self.input_scale.len(),
                    self.input_size
                )));
            }
            if let Some(i) = self
                .input_scale
                .iter()
                .position(|v| !(v.is_finite() && *v > 0.0))
            {
                return Err(NnError::Config(format!(
                    "input_scale[{i}] = {} is not a positive finite number",
                    self.input_scale[i]
                )));
            }
        }
        if self.recurrent && self.separate_regret_encoder {
            return Err(NnError::Config(
                "separate_regret_encoder needs the feed-forward encoder (recurrent = false)".into(),
            ));
        }
        if !self.recurrent && self.encoder_layers == 0 {
            return Err(NnError::Config(
                "encoder_layers must be at least 1 for the feed-forward encoder".into(),
            ));
        }
        Ok(())
    }
}

/// The precision of the past networks ARMAC keeps in its reservoir (files and the copies in
/// memory alike): `f16` halves their size on disk; `f32` stores them exactly as trained.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SnapshotPrecision {
    /// Weights rounded to IEEE half precision (relative error at most 2^-11).
    #[default]
    F16,
    /// Full single precision.
    F32,
}

impl SnapshotPrecision {
    /// Bytes per stored weight.
    pub fn bytes_per_weight(self) -> usize {
        match self {
            SnapshotPrecision::F16 => 2,
            SnapshotPrecision::F32 => 4,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ArmacNetConfig;
    use crate::nn::armac::tensors::cpu_device;
    use burn::module::Module;

    /// The count from shapes is the count of the network built from them.
    #[test]
    fn num_params_counts_the_built_network() {
        let d = cpu_device();
        let mut configs = Vec::new();
        for (layers, separate) in [(1, false), (2, false), (3, true)] {
            let mut c = ArmacNetConfig::new(37, 5)
                .with_encoder_hidden(24)
                .with_head_hidden(24);
            c.encoder_layers = layers;
            c.separate_regret_encoder = separate;
            configs.push(c);
        }
        let mut recurrent = ArmacNetConfig::new(11, 3)
            .with_encoder_hidden(8)
            .with_head_hidden(12);
        recurrent.recurrent = true;
        configs.push(recurrent);
        for c in configs {
            let net = c.init(&d, 1).unwrap();
            assert_eq!(c.num_params(), net.num_params(), "{c:?}");
        }
    }
}
