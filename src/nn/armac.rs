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
//! from the heads ([`normalized_relu`], the masked softmax) give them probability exactly `0`.
//!
//! Everything that crosses this module's boundary outside [`ArmacNet`] itself is plain Rust data
//! ([`ActBatch`], [`ActOutput`], [`TrainBatch`], [`Losses`]), so the rest of the crate never sees a
//! tensor.
//!
//! Initialisation is reproducible: weights are drawn from a SplitMix64 stream seeded by the
//! caller's `seed` (uniform `±1/√fan_in`, PyTorch's `nn.Linear` default), independent of burn's
//! global, per-backend RNG.

use std::path::{Path, PathBuf};
use std::time::Instant;

use burn::module::{Module, Param};
use burn::nn::Linear;
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer, OptimizerRecord};
use burn::store::ModuleRecord;
use burn::tensor::activation::{log_softmax, relu, sigmoid, softmax};
use burn::tensor::{Bytes, Device, Tensor, TensorData};
use serde::{Deserialize, Serialize};

/// Value of the average-policy logits at illegal actions (before any softmax).
pub const ILLEGAL_LOGIT: f32 = -1.0e9;

/// Model weights of a learner checkpoint (a file inside the checkpoint directory).
pub const CHECKPOINT_MODEL_FILE: &str = "armac_model.bpk";
/// Optimizer (Adam moments) state of a learner checkpoint.
pub const CHECKPOINT_OPTIMIZER_FILE: &str = "armac_optimizer.bpk";
/// Config, step counter and file checks of a learner checkpoint (JSON).
pub const CHECKPOINT_META_FILE: &str = "armac_meta.json";

const CHECKPOINT_FORMAT: u32 = 1;

// ---------------------------------------------------------------------------------------------
// Errors and config
// ---------------------------------------------------------------------------------------------

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

/// Sizes of an [`ArmacNet`]. Serialised into learner checkpoints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
}

fn default_hidden() -> usize {
    128
}

fn default_layers() -> usize {
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
        if !self.recurrent && self.encoder_layers == 0 {
            return Err(NnError::Config(
                "encoder_layers must be at least 1 for the feed-forward encoder".into(),
            ));
        }
        Ok(())
    }

    /// Builds a network with reproducible weights drawn from `seed`, on `device` (pass an
    /// autodiff device to train it).
    pub fn init(&self, device: &Device, seed: u64) -> Result<ArmacNet, NnError> {
        self.validate()?;
        let mut rng = SplitMix64::new(seed);
        let rep = self.representation_size();
        let a = self.num_actions;
        let hh = self.head_hidden;
        let (encoder, lstm) = if self.recurrent {
            let w = self.representation_size();
            let input = vec![init_linear(&mut rng, self.input_size, w, true, device)];
            let lstm = LstmCell::init(&mut rng, 2 * w, w, device);
            (input, Some(lstm))
        } else {
            let mut layers = Vec::with_capacity(self.encoder_layers);
            let mut d_in = self.input_size;
            for _ in 0..self.encoder_layers {
                layers.push(init_linear(
                    &mut rng,
                    d_in,
                    self.encoder_hidden,
                    true,
                    device,
                ));
                d_in = 2 * self.encoder_hidden;
            }
            (layers, None)
        };
        let head = |rng: &mut SplitMix64| Head {
            block: ResBlock::init(rng, rep, hh, device),
            out: init_linear(rng, 2 * hh, a, true, device),
        };
        let immediate_regret = head(&mut rng);
        let mean_regret = head(&mut rng);
        let avg_policy = head(&mut rng);
        let critic_a = init_linear(&mut rng, rep, hh, true, device);
        let critic_b = init_linear(&mut rng, rep, hh, true, device);
        let critic_block = ResBlock::init(&mut rng, 2 * hh, hh, device);
        let critic_q0 = init_linear(&mut rng, 2 * hh, a, true, device);
        let critic_q1 = init_linear(&mut rng, 2 * hh, a, true, device);
        Ok(ArmacNet {
            encoder,
            lstm,
            immediate_regret,
            mean_regret,
            avg_policy,
            critic_a,
            critic_b,
            critic_block,
            critic_q0,
            critic_q1,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Initialisation
// ---------------------------------------------------------------------------------------------

/// SplitMix64: a tiny, well-mixed, seedable generator for weight initialisation.
struct SplitMix64(u64);

impl SplitMix64 {
    fn new(seed: u64) -> Self {
        Self(seed ^ 0x5EED_A12A_C0DE_0001)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[-bound, bound)`.
    fn uniform(&mut self, bound: f32) -> f32 {
        let u = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        (2.0 * u - 1.0) * bound
    }

    fn uniform_vec(&mut self, n: usize, bound: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform(bound)).collect()
    }
}

/// A `Linear(d_in → d_out)` with weights and bias uniform in `±1/√d_in`.
fn init_linear(
    rng: &mut SplitMix64,
    d_in: usize,
    d_out: usize,
    bias: bool,
    device: &Device,
) -> Linear {
    let bound = 1.0 / (d_in as f32).sqrt();
    let weight = Param::from_data(
        TensorData::new(rng.uniform_vec(d_in * d_out, bound), [d_in, d_out]),
        device,
    );
    let bias = bias.then(|| {
        Param::from_data(
            TensorData::new(rng.uniform_vec(d_out, bound), [d_out]),
            device,
        )
    });
    Linear { weight, bias }
}

// ---------------------------------------------------------------------------------------------
// Building blocks
// ---------------------------------------------------------------------------------------------

/// `DoubleReLU(x) = concat(relu(x), relu(−x))` over the last dimension (doubles the width).
///
/// # Shapes
/// - `x`: `[..., n]` → `[..., 2n]`
pub fn double_relu<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    Tensor::cat(vec![relu(x.clone()), relu(x.neg())], D - 1)
}

/// Appendix F's block `B(x)`: `h1 = L1(x)`, `h3 = h1 + L2(DoubleReLU(h1))`, `DoubleReLU(h3)`.
#[derive(Module, Debug)]
pub struct ResBlock {
    /// `Linear(d_in → hidden)`.
    l1: Linear,
    /// `Linear(2·hidden → hidden)`.
    l2: Linear,
}

impl ResBlock {
    fn init(rng: &mut SplitMix64, d_in: usize, hidden: usize, device: &Device) -> Self {
        Self {
            l1: init_linear(rng, d_in, hidden, true, device),
            l2: init_linear(rng, 2 * hidden, hidden, true, device),
        }
    }

    /// # Shapes
    /// - `x`: `[N, d_in]` → `[N, 2·hidden]`
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let h1 = self.l1.forward(x); // [N, hidden]
        let h2 = double_relu(h1.clone()); // [N, 2·hidden]
        let h3 = h1 + self.l2.forward(h2); // [N, hidden]
        double_relu(h3) // [N, 2·hidden]
    }
}

/// An information-state head: its own `B(s)` then `Linear(num_actions)`.
#[derive(Module, Debug)]
pub struct Head {
    /// The head's block.
    block: ResBlock,
    /// `Linear(2·head_hidden → A)`.
    out: Linear,
}

impl Head {
    /// # Shapes
    /// - `s`: `[N, R]` → `[N, A]`
    pub fn forward(&self, s: Tensor<2>) -> Tensor<2> {
        self.out.forward(self.block.forward(s))
    }
}

/// One LSTM layer with fused gates (order `i, f, g, o`); the forget-gate bias starts at 1.
#[derive(Module, Debug)]
pub struct LstmCell {
    /// Input projection `Linear(d_in → 4H)` (carries the bias).
    wx: Linear,
    /// Recurrent projection `Linear(H → 4H)`, no bias.
    wh: Linear,
}

/// The recurrent state of one player's encoder for a batch of `N` sequences.
#[derive(Clone, Debug)]
pub struct LstmState {
    /// `[N, H]`
    pub hidden: Tensor<2>,
    /// `[N, H]`
    pub cell: Tensor<2>,
}

impl LstmCell {
    /// Uniform `±1/√H` for every weight and bias (PyTorch's LSTM init), forget bias 1.
    fn init(rng: &mut SplitMix64, d_in: usize, h: usize, device: &Device) -> Self {
        let bound = 1.0 / (h as f32).sqrt();
        let wx_w = rng.uniform_vec(d_in * 4 * h, bound);
        let mut bias = rng.uniform_vec(4 * h, bound);
        bias[h..2 * h].iter_mut().for_each(|b| *b = 1.0);
        let wh_w = rng.uniform_vec(h * 4 * h, bound);
        Self {
            wx: Linear {
                weight: Param::from_data(TensorData::new(wx_w, [d_in, 4 * h]), device),
                bias: Some(Param::from_data(TensorData::new(bias, [4 * h]), device)),
            },
            wh: Linear {
                weight: Param::from_data(TensorData::new(wh_w, [h, 4 * h]), device),
                bias: None,
            },
        }
    }

    /// Hidden width `H`.
    pub fn hidden_size(&self) -> usize {
        self.wh.weight.shape().dims::<2>()[0]
    }

    /// One step from precomputed input projections.
    ///
    /// # Shapes
    /// - `gx`: `[N, 4H]` (= `wx(x_t)`), state `[N, H]` each → hidden `[N, H]`, new state
    fn step_projected(&self, gx: Tensor<2>, state: LstmState) -> LstmState {
        let g = gx + self.wh.forward(state.hidden); // [N, 4H]
        let mut parts = g.chunk(4, 1).into_iter(); // 4 × [N, H]
        let (i, f, c, o) = (
            parts.next().expect("gate i"),
            parts.next().expect("gate f"),
            parts.next().expect("gate g"),
            parts.next().expect("gate o"),
        );
        let cell = sigmoid(f) * state.cell + sigmoid(i) * c.tanh(); // [N, H]
        let hidden = sigmoid(o) * cell.clone().tanh(); // [N, H]
        LstmState { hidden, cell }
    }
}

// ---------------------------------------------------------------------------------------------
// The network
// ---------------------------------------------------------------------------------------------

/// The ARMAC network: shared encoder, three information-state heads and the global critic.
/// Build it with [`ArmacNetConfig::init`].
#[derive(Module, Debug)]
pub struct ArmacNet {
    /// Feed-forward: the `Linear` of each `Linear → DoubleReLU` layer. Recurrent: the single
    /// input `Linear(2h)` before the LSTM.
    encoder: Vec<Linear>,
    /// The LSTM of the recurrent encoder (`None` for feed-forward).
    lstm: Option<LstmCell>,
    /// Immediate-regret head (predicts `q_θt(h, a) − v_θt(h)` from `s`).
    immediate_regret: Head,
    /// Mean-regret head `W̄(s, a)`.
    mean_regret: Head,
    /// Average-policy head `π̄(s)` (logits).
    avg_policy: Head,
    /// Critic `nA`.
    critic_a: Linear,
    /// Critic `nB`.
    critic_b: Linear,
    /// Critic block `B(concat(a0, a1))`.
    critic_block: ResBlock,
    /// Critic output for player 0's utility.
    critic_q0: Linear,
    /// Critic output for player 1's utility.
    critic_q1: Linear,
}

/// What [`ArmacNet::forward`] returns for a batch of `B` decision points (`A` actions).
#[derive(Clone, Debug)]
pub struct ArmacOutput {
    /// `q[p]`: `[B, A]`, critic value `q_p(h, a)` of each action for player `p`'s utility;
    /// `0` at illegal actions.
    pub q: [Tensor<2>; 2],
    /// `[B, A]`: mean-regret head `W̄(s, a)`; `0` at illegal actions.
    pub mean_regret: Tensor<2>,
    /// `[B, A]`: immediate-regret head; `0` at illegal actions.
    pub immediate_regret: Tensor<2>,
    /// `[B, A]`: average-policy logits; [`ILLEGAL_LOGIT`] at illegal actions.
    pub avg_logits: Tensor<2>,
}

impl ArmacNet {
    /// `true` if this net has the recurrent encoder.
    pub fn is_recurrent(&self) -> bool {
        self.lstm.is_some()
    }

    /// Number of actions `A`.
    pub fn num_actions(&self) -> usize {
        self.critic_q0.weight.shape().dims::<2>()[1]
    }

    /// Input width of the encoder.
    pub fn input_size(&self) -> usize {
        self.encoder[0].weight.shape().dims::<2>()[0]
    }

    /// Encodes independent rows. Feed-forward: the information-state encoder. Recurrent: each
    /// row is a one-step sequence from the zero state (use [`Self::encode_step`] /
    /// [`Self::unroll`] for real sequences).
    ///
    /// # Shapes
    /// - `x`: `[N, input]` → `[N, R]`
    pub fn encode(&self, x: Tensor<2>) -> Tensor<2> {
        match &self.lstm {
            None => self
                .encoder
                .iter()
                .fold(x, |h, layer| double_relu(layer.forward(h))),
            Some(_) => {
                let n = x.dims()[0];
                let state = self.initial_state(n, &x.device());
                self.encode_step(x, state).1.hidden
            }
        }
    }

    /// The zero state of the recurrent encoder for `n` sequences.
    ///
    /// # Panics
    /// On a feed-forward net.
    pub fn initial_state(&self, n: usize, device: &Device) -> LstmState {
        let h = self
            .lstm
            .as_ref()
            .expect("initial_state needs the recurrent encoder")
            .hidden_size();
        LstmState {
            hidden: Tensor::zeros([n, h], device),
            cell: Tensor::zeros([n, h], device),
        }
    }

    /// One recurrent step: returns the representation (the LSTM output) and the next state.
    ///
    /// # Shapes
    /// - `obs`: `[N, input]`, `state`: `[N, H]` each → `[N, H]`, next state `[N, H]` each
    ///
    /// # Panics
    /// On a feed-forward net.
    pub fn encode_step(&self, obs: Tensor<2>, state: LstmState) -> (Tensor<2>, LstmState) {
        let lstm = self
            .lstm
            .as_ref()
            .expect("encode_step needs the recurrent encoder");
        let x = double_relu(self.encoder[0].forward(obs)); // [N, 2H]
        let next = lstm.step_projected(lstm.wx.forward(x), state);
        (next.hidden.clone(), next)
    }

    /// Unrolls the recurrent encoder over `T` steps (the learner's path).
    ///
    /// `obs` is input data: each step's slice is taken from it directly. (Slicing a tensor
    /// that carries gradients costs a full-size gradient buffer per slice in burn's autodiff,
    /// which is why the input projections are computed step by step rather than all at once.)
    ///
    /// # Shapes
    /// - `obs`: `[N, T, input]`, `state`: `[N, H]` each → outputs `[N, T, H]`, final state
    ///
    /// # Panics
    /// On a feed-forward net.
    pub fn unroll(&self, obs: Tensor<3>, state: LstmState) -> (Tensor<3>, LstmState) {
        assert!(self.lstm.is_some(), "unroll needs the recurrent encoder");
        let [n, t, d_in] = obs.dims();
        let mut state = state;
        let mut outs = Vec::with_capacity(t);
        for step in 0..t {
            let obs_t = obs.clone().narrow(1, step, 1).reshape([n, d_in]); // [N, input]
            let (h, next) = self.encode_step(obs_t, state); // [N, H]
            state = next;
            outs.push(h);
        }
        (Tensor::stack(outs, 1), state) // [N, T, H]
    }

    /// All heads from already-encoded representations.
    ///
    /// # Shapes
    /// - `own`: `[B, R]` (the acting player's representation)
    /// - `s0`, `s1`: `[B, R]` (player 0's and player 1's representations at that history)
    /// - `legal`: `[B, A]` (1.0 legal, 0.0 illegal)
    /// - returns [`ArmacOutput`], `[B, A]` each
    pub fn heads(
        &self,
        own: Tensor<2>,
        s0: Tensor<2>,
        s1: Tensor<2>,
        legal: Tensor<2>,
    ) -> ArmacOutput {
        let mean_regret = self.mean_regret.forward(own.clone()) * legal.clone(); // [B, A]
        let immediate_regret = self.immediate_regret.forward(own.clone()) * legal.clone(); // [B, A]
        let logits = self.avg_policy.forward(own); // [B, A]
        let avg_logits = mask_logits(logits, legal.clone()); // [B, A]

        // Critic. (Separate products rather than one over `cat(s0, s1)`: slicing a tracked
        // tensor costs a full-size zero gradient per slice in burn's autodiff.)
        let a0 = self.critic_a.forward(s0.clone()) + self.critic_b.forward(s1.clone()); // [B, hh]
        let a1 = self.critic_b.forward(s0) + self.critic_a.forward(s1); // [B, hh]
        let h = self.critic_block.forward(Tensor::cat(vec![a0, a1], 1)); // [B, 2hh]
        let q0 = self.critic_q0.forward(h.clone()) * legal.clone(); // [B, A]
        let q1 = self.critic_q1.forward(h) * legal; // [B, A]
        ArmacOutput {
            q: [q0, q1],
            mean_regret,
            immediate_regret,
            avg_logits,
        }
    }

    /// The full forward pass for `B` decision points.
    ///
    /// # Shapes
    /// - `own`: `[B, input]`: the acting player's information-state tensor
    /// - `both`: `[B, input]` each: player 0's and player 1's tensors at that history (critic)
    /// - `legal`: `[B, A]`: 1.0 legal, 0.0 illegal
    /// - returns [`ArmacOutput`] with `[B, A]` tensors
    ///
    /// A recurrent net treats each row as a one-step sequence from the zero state.
    pub fn forward(&self, own: Tensor<2>, both: [Tensor<2>; 2], legal: Tensor<2>) -> ArmacOutput {
        let [both0, both1] = both;
        let own_s = self.encode(own); // [B, R]
        let s0 = self.encode(both0); // [B, R]
        let s1 = self.encode(both1); // [B, R]
        self.heads(own_s, s0, s1, legal)
    }

    /// [`Self::forward`] for the common case where each row's `own` tensor *is* the acting
    /// player's entry of `both`: encodes `2B` rows instead of `3B` and selects the acting
    /// player's representation. Same outputs and gradients as `forward(both[p], both, legal)`.
    ///
    /// # Shapes
    /// - `both`: `[B, input]` each
    /// - `acting`: `[B, 1]`: 0.0 where player 0 acts, 1.0 where player 1 acts
    /// - `legal`: `[B, A]`
    /// - returns [`ArmacOutput`] with `[B, A]` tensors
    pub fn forward_acting(
        &self,
        both: [Tensor<2>; 2],
        acting: Tensor<2>,
        legal: Tensor<2>,
    ) -> ArmacOutput {
        let [both0, both1] = both;
        let s0 = self.encode(both0); // [B, R]
        let s1 = self.encode(both1); // [B, R]
        let own = select_acting(s0.clone(), s1.clone(), acting); // [B, R]
        self.heads(own, s0, s1, legal)
    }

    /// Forward over `S` sequences of `T` steps: both players' encoders unrolled from `state`
    /// (zero when `None`), the acting player's representation selected per step, heads on
    /// every step. Output row `s·T + t` is step `t` of sequence `s`.
    ///
    /// # Shapes
    /// - `obs`: `[S, T, input]` each (player 0's, player 1's observations)
    /// - `acting`: `[S·T, 1]`: 0.0 where player 0 acts, 1.0 where player 1 acts
    /// - `legal`: `[S·T, A]`
    /// - returns [`ArmacOutput`] with `[S·T, A]` tensors and the final states
    ///
    /// # Panics
    /// On a feed-forward net.
    pub fn forward_sequence(
        &self,
        obs: [Tensor<3>; 2],
        state: Option<[LstmState; 2]>,
        acting: Tensor<2>,
        legal: Tensor<2>,
    ) -> (ArmacOutput, [LstmState; 2]) {
        let [o0, o1] = obs;
        let [s, t, _] = o0.dims();
        let device = o0.device();
        let state = match state {
            Some([a, b]) => LstmState {
                hidden: Tensor::cat(vec![a.hidden, b.hidden], 0),
                cell: Tensor::cat(vec![a.cell, b.cell], 0),
            },
            None => self.initial_state(2 * s, &device),
        };
        let (out, last) = self.unroll(Tensor::cat(vec![o0, o1], 0), state); // [2S, T, H]
        let r = out.dims()[2];
        let s0 = out.clone().narrow(0, 0, s).reshape([s * t, r]); // [S·T, H]
        let s1 = out.narrow(0, s, s).reshape([s * t, r]); // [S·T, H]
        let own = select_acting(s0.clone(), s1.clone(), acting); // [S·T, H]
        let split = |x: Tensor<2>| (x.clone().narrow(0, 0, s), x.narrow(0, s, s));
        let (h0, h1) = split(last.hidden);
        let (c0, c1) = split(last.cell);
        (
            self.heads(own, s0, s1, legal),
            [
                LstmState {
                    hidden: h0,
                    cell: c0,
                },
                LstmState {
                    hidden: h1,
                    cell: c1,
                },
            ],
        )
    }
}

/// Row-wise choice between two representations: `s0` where `acting` is 0, `s1` where it is 1.
///
/// # Shapes
/// - `s0`, `s1`: `[N, R]`, `acting`: `[N, 1]` → `[N, R]`
fn select_acting(s0: Tensor<2>, s1: Tensor<2>, acting: Tensor<2>) -> Tensor<2> {
    s0 * acting.clone().neg().add_scalar(1.0) + s1 * acting
}

/// Masks logits: legal entries unchanged, illegal ones [`ILLEGAL_LOGIT`].
///
/// # Shapes
/// - `logits`, `legal`: `[B, A]` → `[B, A]`
fn mask_logits(logits: Tensor<2>, legal: Tensor<2>) -> Tensor<2> {
    let offset = legal.clone().sub_scalar(1.0).mul_scalar(-ILLEGAL_LOGIT); // 0 legal, -1e9 illegal
    logits * legal + offset
}

// ---------------------------------------------------------------------------------------------
// Plain-data batches
// ---------------------------------------------------------------------------------------------

/// Regret matching on one row: positive parts of `row` normalised over legal actions; uniform
/// over legal actions when none is positive; `0` at illegal actions (whatever `row` says
/// there). All zeros if no action is legal.
pub fn normalized_relu(row: &[f32], legal: &[bool]) -> Vec<f32> {
    assert_eq!(
        row.len(),
        legal.len(),
        "normalized_relu: row and legal lengths differ"
    );
    let pos = |i: usize| {
        if legal[i] && row[i] > 0.0 && row[i].is_finite() {
            row[i]
        } else {
            0.0
        }
    };
    let total: f32 = (0..row.len()).map(pos).sum();
    if total > 0.0 && total.is_finite() {
        (0..row.len()).map(|i| pos(i) / total).collect()
    } else {
        let n = legal.iter().filter(|&&l| l).count();
        let u = if n > 0 { 1.0 / n as f32 } else { 0.0 };
        legal.iter().map(|&l| if l { u } else { 0.0 }).collect()
    }
}

/// A batch of decision points to evaluate, row-major plain data.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActBatch {
    /// `B × input`: the acting player's information-state tensor.
    pub own: Vec<f32>,
    /// `B × input`: player 0's tensor at that history.
    pub both0: Vec<f32>,
    /// `B × input`: player 1's tensor at that history.
    pub both1: Vec<f32>,
    /// `B × A`: 1.0 where the action is legal, 0.0 where it is not.
    pub legal: Vec<f32>,
}

impl ActBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one decision point.
    pub fn push(&mut self, own: &[f32], both0: &[f32], both1: &[f32], legal: &[bool]) {
        self.own.extend_from_slice(own);
        self.both0.extend_from_slice(both0);
        self.both1.extend_from_slice(both1);
        self.legal
            .extend(legal.iter().map(|&l| f32::from(u8::from(l))));
    }

    /// Number of rows: `legal.len() / num_actions`.
    pub fn rows(&self, num_actions: usize) -> usize {
        self.legal.len() / num_actions.max(1)
    }

    /// Checks every length against `cfg` (the row count comes from `legal`).
    pub fn validate(&self, cfg: &ArmacNetConfig) -> Result<(), NnError> {
        let rows = self.rows(cfg.num_actions);
        check_len("legal", self.legal.len(), rows * cfg.num_actions)?;
        let n_in = rows * cfg.input_size;
        check_len("own", self.own.len(), n_in)?;
        check_len("both0", self.both0.len(), n_in)?;
        check_len("both1", self.both1.len(), n_in)
    }
}

fn check_len(name: &str, got: usize, want: usize) -> Result<(), NnError> {
    if got == want {
        Ok(())
    } else {
        Err(NnError::Batch(format!(
            "`{name}` has {got} entries, expected {want}"
        )))
    }
}

/// Head outputs for an [`ActBatch`], row-major `B × A` each.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActOutput {
    /// Number of rows `B`.
    pub rows: usize,
    /// Number of actions `A`.
    pub num_actions: usize,
    /// Critic `q_0(h, a)` (0 at illegal actions).
    pub q0: Vec<f32>,
    /// Critic `q_1(h, a)` (0 at illegal actions).
    pub q1: Vec<f32>,
    /// Mean-regret head `W̄(s, a)` (0 at illegal actions).
    pub mean_regret: Vec<f32>,
    /// Immediate-regret head (0 at illegal actions).
    pub immediate_regret: Vec<f32>,
    /// Average policy `π̄(s)`: masked softmax, exactly 0 at illegal actions.
    pub avg_policy: Vec<f32>,
}

impl ActOutput {
    /// Row `i` of a `B × A` field.
    pub fn row<'a>(&self, field: &'a [f32], i: usize) -> &'a [f32] {
        &field[i * self.num_actions..(i + 1) * self.num_actions]
    }

    /// The current policy of row `i`: [`normalized_relu`] of its mean-regret head.
    pub fn current_policy(&self, i: usize, legal: &[bool]) -> Vec<f32> {
        normalized_relu(self.row(&self.mean_regret, i), legal)
    }
}

/// Training targets and inputs, row-major plain data. Each loss is a weighted mean over rows
/// (divided by the sum of its weights; 0 when they sum to 0):
///
/// * critic: `½ [(q0(h, a) − t0)² + (q1(h, a) − t1)²]` at the taken action `a`;
/// * mean regret / immediate regret: mean over the row's legal actions of `(head − target)²`;
/// * policy: cross-entropy `−Σ_a target(a) · log softmax(masked logits)(a)` (targets at illegal
///   actions are ignored).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrainBatch {
    /// `B × input`: the acting player's information-state tensor.
    pub own: Vec<f32>,
    /// `B × input`: player 0's tensor at that history.
    pub both0: Vec<f32>,
    /// `B × input`: player 1's tensor at that history.
    pub both1: Vec<f32>,
    /// `B × A`: 1.0 where the action is legal, 0.0 where it is not.
    pub legal: Vec<f32>,
    /// `B`: the action taken (must be legal where `critic_weight` ≠ 0). Its length is the
    /// batch's row count.
    pub action: Vec<usize>,
    /// `B`: Tree-Backup returns for `q0(h, action)` and `q1(h, action)`.
    pub critic_target: Vec<[f32; 2]>,
    /// `B`: critic loss weights.
    pub critic_weight: Vec<f32>,
    /// `B × A`: mean-regret head targets.
    pub regret_target: Vec<f32>,
    /// `B`: mean-regret loss weights.
    pub regret_weight: Vec<f32>,
    /// `B × A`: immediate-regret head targets.
    pub immediate_target: Vec<f32>,
    /// `B`: immediate-regret loss weights.
    pub immediate_weight: Vec<f32>,
    /// `B × A`: average-policy targets (distributions over legal actions).
    pub policy_target: Vec<f32>,
    /// `B`: average-policy loss weights.
    pub policy_weight: Vec<f32>,
}

/// One row of a [`TrainBatch`], borrowed.
#[derive(Clone, Copy, Debug)]
pub struct TrainRow<'a> {
    /// The acting player's information-state tensor.
    pub own: &'a [f32],
    /// Player 0's tensor at that history.
    pub both0: &'a [f32],
    /// Player 1's tensor at that history.
    pub both1: &'a [f32],
    /// Legal actions.
    pub legal: &'a [bool],
    /// The action taken.
    pub action: usize,
    /// Tree-Backup returns for both players.
    pub critic_target: [f32; 2],
    /// Critic loss weight.
    pub critic_weight: f32,
    /// Mean-regret targets (length `A`).
    pub regret_target: &'a [f32],
    /// Mean-regret loss weight.
    pub regret_weight: f32,
    /// Immediate-regret targets (length `A`).
    pub immediate_target: &'a [f32],
    /// Immediate-regret loss weight.
    pub immediate_weight: f32,
    /// Average-policy target (length `A`).
    pub policy_target: &'a [f32],
    /// Average-policy loss weight.
    pub policy_weight: f32,
}

impl TrainBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one row.
    pub fn push(&mut self, row: &TrainRow<'_>) {
        self.own.extend_from_slice(row.own);
        self.both0.extend_from_slice(row.both0);
        self.both1.extend_from_slice(row.both1);
        self.legal
            .extend(row.legal.iter().map(|&l| f32::from(u8::from(l))));
        self.action.push(row.action);
        self.critic_target.push(row.critic_target);
        self.critic_weight.push(row.critic_weight);
        self.regret_target.extend_from_slice(row.regret_target);
        self.regret_weight.push(row.regret_weight);
        self.immediate_target
            .extend_from_slice(row.immediate_target);
        self.immediate_weight.push(row.immediate_weight);
        self.policy_target.extend_from_slice(row.policy_target);
        self.policy_weight.push(row.policy_weight);
    }

    /// Number of rows: `action.len()`.
    pub fn rows(&self) -> usize {
        self.action.len()
    }

    /// Checks every length against `cfg`, and that each taken action is in range and legal.
    pub fn validate(&self, cfg: &ArmacNetConfig) -> Result<(), NnError> {
        let n_in = self.rows() * cfg.input_size;
        check_len("own", self.own.len(), n_in)?;
        check_len("both0", self.both0.len(), n_in)?;
        check_len("both1", self.both1.len(), n_in)?;
        self.validate_targets(cfg.num_actions)
    }

    /// The target half of [`Self::validate`] (inputs not checked).
    fn validate_targets(&self, a: usize) -> Result<(), NnError> {
        let (b, ba) = (self.rows(), self.rows() * a);
        check_len("legal", self.legal.len(), ba)?;
        check_len("action", self.action.len(), b)?;
        check_len("critic_target", self.critic_target.len(), b)?;
        check_len("critic_weight", self.critic_weight.len(), b)?;
        check_len("regret_target", self.regret_target.len(), ba)?;
        check_len("regret_weight", self.regret_weight.len(), b)?;
        check_len("immediate_target", self.immediate_target.len(), ba)?;
        check_len("immediate_weight", self.immediate_weight.len(), b)?;
        check_len("policy_target", self.policy_target.len(), ba)?;
        check_len("policy_weight", self.policy_weight.len(), b)?;
        for (i, &act) in self.action.iter().enumerate() {
            if self.critic_weight[i] != 0.0 && (act >= a || self.legal[i * a + act] <= 0.5) {
                return Err(NnError::Batch(format!(
                    "row {i}: action {act} is out of range or illegal"
                )));
            }
        }
        Ok(())
    }
}

/// The four losses of one training step and their sum.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Losses {
    /// Weighted critic MSE.
    pub critic: f64,
    /// Weighted mean-regret MSE.
    pub mean_regret: f64,
    /// Weighted immediate-regret MSE.
    pub immediate_regret: f64,
    /// Weighted average-policy cross-entropy.
    pub policy: f64,
    /// `critic + mean_regret + immediate_regret + policy` (the optimised objective).
    pub total: f64,
}

// ---------------------------------------------------------------------------------------------
// Tensor helpers
// ---------------------------------------------------------------------------------------------

fn tensor2(data: Vec<f32>, rows: usize, cols: usize, device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(data, [rows, cols]), device)
}

fn to_vec(t: Tensor<2>) -> Vec<f32> {
    t.into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .expect("f32 tensor data")
}

/// Forward on plain data, one read-back for all five outputs.
fn evaluate_on(model: &ArmacNet, device: &Device, batch: &ActBatch) -> ActOutput {
    let a = model.num_actions();
    let n_in = model.input_size();
    let b = batch.rows(a);
    if b == 0 {
        return ActOutput {
            rows: 0,
            num_actions: a,
            ..Default::default()
        };
    }
    let cfg_like = ArmacNetConfig::new(n_in, a);
    if let Err(e) = batch.validate(&cfg_like) {
        panic!("ArmacNet evaluate: {e}");
    }
    let inputs = [&batch.own, &batch.both0, &batch.both1];
    let legal = tensor2(batch.legal.clone(), b, a, device);
    let out = forward_plain(model, device, inputs, b, n_in, legal);
    let [q0, q1] = out.q;
    let policy = softmax(out.avg_logits, 1);
    let all = Tensor::cat(
        vec![q0, q1, out.mean_regret, out.immediate_regret, policy],
        1,
    ); // [B, 5A]
    split_output(to_vec(all), b, a, 5)
}

/// For each row, which entry of `both` its `own` tensor equals (0 or 1); `None` if some row's
/// `own` equals neither (then the net must encode `own` separately).
fn acting_players(own: &[f32], both0: &[f32], both1: &[f32], n_in: usize) -> Option<Vec<f32>> {
    own.chunks_exact(n_in)
        .zip(both0.chunks_exact(n_in).zip(both1.chunks_exact(n_in)))
        .map(|(o, (b0, b1))| {
            if o == b0 {
                Some(0.0)
            } else if o == b1 {
                Some(1.0)
            } else {
                None
            }
        })
        .collect()
}

/// Forward on plain row-major inputs `[own, both0, both1]` (`B × n_in` each): through
/// [`ArmacNet::forward_acting`] when every `own` row is one of its `both` rows, else
/// [`ArmacNet::forward`].
fn forward_plain(
    model: &ArmacNet,
    device: &Device,
    inputs: [&Vec<f32>; 3],
    b: usize,
    n_in: usize,
    legal: Tensor<2>,
) -> ArmacOutput {
    let [own, both0, both1] = inputs;
    let both = [
        tensor2(both0.clone(), b, n_in, device),
        tensor2(both1.clone(), b, n_in, device),
    ];
    match acting_players(own, both0, both1, n_in) {
        Some(acting) => model.forward_acting(both, tensor2(acting, b, 1, device), legal),
        None => model.forward(tensor2(own.clone(), b, n_in, device), both, legal),
    }
}

/// Splits a row-major `[B, k·A]` read-back into the `k` first `ActOutput` fields.
fn split_output(all: Vec<f32>, b: usize, a: usize, k: usize) -> ActOutput {
    let mut fields: Vec<Vec<f32>> = (0..k).map(|_| Vec::with_capacity(b * a)).collect();
    for row in all.chunks_exact(k * a) {
        for (f, field) in fields.iter_mut().enumerate() {
            field.extend_from_slice(&row[f * a..(f + 1) * a]);
        }
    }
    let mut it = fields.into_iter();
    let mut next = || it.next().unwrap_or_default();
    ActOutput {
        rows: b,
        num_actions: a,
        q0: next(),
        q1: next(),
        mean_regret: next(),
        immediate_regret: next(),
        avg_policy: next(),
    }
}

/// The CPU device inference snapshots live on: flex when compiled in, else the default one.
fn cpu_device() -> Device {
    #[cfg(feature = "flex")]
    {
        Device::flex()
    }
    #[cfg(not(feature = "flex"))]
    {
        Device::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------------

fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.tmp", std::process::id()));
    path.with_file_name(name)
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), NnError> {
    use std::io::Write;
    let io = |source| NnError::Io {
        op: "cannot write",
        path: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::File::create(path).map_err(io)?;
    f.write_all(bytes).map_err(io)?;
    f.sync_all().map_err(io)
}

/// Writes every `(path, bytes)` to a temporary sibling, then renames them all into place, so
/// a crash leaves either the old files or complete new ones (per file), never a partial file.
fn write_all_atomic(files: &[(PathBuf, Vec<u8>)]) -> Result<(), NnError> {
    let tmps: Vec<PathBuf> = files.iter().map(|(p, _)| tmp_path(p)).collect();
    let result = (|| {
        for ((_, bytes), tmp) in files.iter().zip(&tmps) {
            write_synced(tmp, bytes)?;
        }
        for ((path, _), tmp) in files.iter().zip(&tmps) {
            std::fs::rename(tmp, path).map_err(|source| NnError::Io {
                op: "cannot rename into place",
                path: path.clone(),
                source,
            })?;
        }
        if let Some(dir) = files.first().and_then(|(p, _)| p.parent())
            && let Ok(d) = std::fs::File::open(dir)
        {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        for tmp in &tmps {
            let _ = std::fs::remove_file(tmp);
        }
    }
    result
}

fn read_file(path: &Path) -> Result<Vec<u8>, NnError> {
    std::fs::read(path).map_err(|source| NnError::Io {
        op: "cannot read",
        path: path.to_path_buf(),
        source,
    })
}

fn model_bytes(model: &ArmacNet) -> Result<Vec<u8>, NnError> {
    let bytes = model
        .clone()
        .into_record()
        .into_bytes()
        .map_err(|e| NnError::Serialize {
            what: "the model",
            msg: e.to_string(),
        })?;
    Ok(bytes.to_vec())
}

/// Loads model weights from `path` into `template` (which fixes the architecture).
fn load_model_file(template: ArmacNet, path: &Path) -> Result<ArmacNet, NnError> {
    load_model_bytes(template, path, read_file(path)?)
}

/// Applies model-file `bytes` (read from `path`, named in errors) to `template`.
fn load_model_bytes(template: ArmacNet, path: &Path, bytes: Vec<u8>) -> Result<ArmacNet, NnError> {
    let record =
        ModuleRecord::from_bytes(Bytes::from_bytes_vec(bytes)).map_err(|e| NnError::Corrupt {
            path: path.to_path_buf(),
            msg: e.to_string(),
        })?;
    template
        .try_load_record(record)
        .map_err(|e| NnError::Mismatch {
            path: path.to_path_buf(),
            msg: e.to_string(),
        })
}

// ---------------------------------------------------------------------------------------------
// Inference handle
// ---------------------------------------------------------------------------------------------

/// An inference copy of the network on the CPU, cheap to clone into actor threads.
#[derive(Clone, Debug)]
pub struct ArmacPolicyNet {
    cfg: ArmacNetConfig,
    device: Device,
    model: ArmacNet,
}

/// The recurrent state of one player's encoder for `rows` sequences, plain data.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecurrentState {
    /// Number of sequences.
    pub rows: usize,
    /// `rows × H` LSTM hidden state.
    pub hidden: Vec<f32>,
    /// `rows × H` LSTM cell state.
    pub cell: Vec<f32>,
}

/// One recurrent step for `rows` sequences (both players observe, one acts), plain data.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepBatch {
    /// Number of sequences.
    pub rows: usize,
    /// `rows × input`: player 0's observation at this step.
    pub obs0: Vec<f32>,
    /// `rows × input`: player 1's observation at this step.
    pub obs1: Vec<f32>,
    /// `rows`: the acting player (0 or 1).
    pub acting_player: Vec<usize>,
    /// `rows × A`: 1.0 legal, 0.0 illegal.
    pub legal: Vec<f32>,
}

impl RecurrentState {
    /// Row `i` alone (a one-sequence state).
    pub fn row(&self, i: usize) -> RecurrentState {
        let h = self.hidden.len() / self.rows.max(1);
        RecurrentState {
            rows: 1,
            hidden: self.hidden[i * h..(i + 1) * h].to_vec(),
            cell: self.cell[i * h..(i + 1) * h].to_vec(),
        }
    }

    /// The rows of `parts`, stacked in order.
    pub fn stack<'a>(parts: impl IntoIterator<Item = &'a RecurrentState>) -> RecurrentState {
        let mut out = RecurrentState::default();
        for p in parts {
            out.rows += p.rows;
            out.hidden.extend_from_slice(&p.hidden);
            out.cell.extend_from_slice(&p.cell);
        }
        out
    }
}

/// Inputs of `S` sequences of `T` steps for recurrent evaluation, plain data, row `s·T + t`
/// being step `t` of sequence `s`. Pad shorter sequences at their end (padding never affects
/// earlier steps' outputs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeqInputs {
    /// Number of sequences `S`.
    pub sequences: usize,
    /// Steps per sequence `T`.
    pub time: usize,
    /// `S × T × input`: player 0's observations.
    pub obs0: Vec<f32>,
    /// `S × T × input`: player 1's observations.
    pub obs1: Vec<f32>,
    /// `S × T`: the acting player (0 or 1).
    pub acting_player: Vec<usize>,
    /// `S × T × A`: 1.0 legal, 0.0 illegal.
    pub legal: Vec<f32>,
}

impl SeqInputs {
    /// Checks every length against `cfg`.
    pub fn validate(&self, cfg: &ArmacNetConfig) -> Result<(), NnError> {
        let n = self.sequences * self.time;
        check_len("obs0", self.obs0.len(), n * cfg.input_size)?;
        check_len("obs1", self.obs1.len(), n * cfg.input_size)?;
        check_len("acting_player", self.acting_player.len(), n)?;
        check_len("legal", self.legal.len(), n * cfg.num_actions)
    }
}

fn lstm_to_plain(st: LstmState) -> RecurrentState {
    let rows = st.hidden.dims()[0];
    RecurrentState {
        rows,
        hidden: to_vec(st.hidden),
        cell: to_vec(st.cell),
    }
}

/// Runs a recurrent `model` over `inputs` from the zero state, in consecutive unrolls of at
/// most `chunk` steps whose states carry over. Returns every step's outputs (row `s·T + t`) and,
/// per unroll, both players' states at its start (`rows = S`).
fn evaluate_sequences_on(
    model: &ArmacNet,
    device: &Device,
    cfg: &ArmacNetConfig,
    inputs: &SeqInputs,
    chunk: usize,
) -> Result<(ActOutput, Vec<[RecurrentState; 2]>), NnError> {
    if !cfg.recurrent {
        return Err(NnError::WrongEncoder(
            "`evaluate_sequences` needs a recurrent ARMAC net (config `recurrent = true`)".into(),
        ));
    }
    inputs.validate(cfg)?;
    let (s, t, n_in, a) = (
        inputs.sequences,
        inputs.time,
        cfg.input_size,
        cfg.num_actions,
    );
    let h = cfg.representation_size();
    let chunk = chunk.max(1);
    let mut fields = vec![vec![0.0f32; s * t * a]; 5];
    let mut starts = Vec::new();
    let mut state: Option<[LstmState; 2]> = None;
    let mut t0 = 0;
    while t0 < t {
        let tc = chunk.min(t - t0);
        starts.push(match &state {
            None => {
                let z = RecurrentState {
                    rows: s,
                    hidden: vec![0.0; s * h],
                    cell: vec![0.0; s * h],
                };
                [z.clone(), z]
            }
            Some([x, y]) => [lstm_to_plain(x.clone()), lstm_to_plain(y.clone())],
        });
        let slice = |v: &[f32], w: usize| -> Vec<f32> {
            (0..s)
                .flat_map(|q| v[(q * t + t0) * w..(q * t + t0 + tc) * w].iter().copied())
                .collect()
        };
        let obs = |v: &[f32]| {
            Tensor::<3>::from_data(TensorData::new(slice(v, n_in), [s, tc, n_in]), device)
        };
        let acting: Vec<f32> = (0..s)
            .flat_map(|q| {
                inputs.acting_player[q * t + t0..q * t + t0 + tc]
                    .iter()
                    .map(|&p| if p == 1 { 1.0 } else { 0.0 })
            })
            .collect();
        let acting = tensor2(acting, s * tc, 1, device);
        let legal = tensor2(slice(&inputs.legal, a), s * tc, a, device);
        let (out, next) = model.forward_sequence(
            [obs(&inputs.obs0), obs(&inputs.obs1)],
            state.take(),
            acting,
            legal,
        );
        let [q0, q1] = out.q;
        let policy = softmax(out.avg_logits, 1);
        let all = to_vec(Tensor::cat(
            vec![q0, q1, out.mean_regret, out.immediate_regret, policy],
            1,
        )); // [S·tc, 5A]
        for (r, row) in all.chunks_exact(5 * a).enumerate() {
            let (q, k) = (r / tc, r % tc);
            let dst = (q * t + t0 + k) * a;
            for (f, field) in fields.iter_mut().enumerate() {
                field[dst..dst + a].copy_from_slice(&row[f * a..(f + 1) * a]);
            }
        }
        state = Some(next);
        t0 += tc;
    }
    let mut it = fields.into_iter();
    let mut next = || it.next().unwrap_or_default();
    let out = ActOutput {
        rows: s * t,
        num_actions: a,
        q0: next(),
        q1: next(),
        mean_regret: next(),
        immediate_regret: next(),
        avg_policy: next(),
    };
    Ok((out, starts))
}

impl ArmacPolicyNet {
    /// A freshly initialised network (weights from `seed`) on the CPU.
    pub fn init(cfg: ArmacNetConfig, seed: u64) -> Result<Self, NnError> {
        let device = cpu_device();
        let model = cfg.init(&device, seed)?;
        Ok(Self { cfg, device, model })
    }

    /// The network's config.
    pub fn config(&self) -> &ArmacNetConfig {
        &self.cfg
    }

    /// The underlying network (CPU, no autodiff).
    pub fn model(&self) -> &ArmacNet {
        &self.model
    }

    /// Evaluates every head on a batch of decision points (each row a one-step sequence from
    /// the zero state on a recurrent net).
    ///
    /// # Panics
    /// If the batch's lengths do not match the config (see [`ActBatch::validate`]).
    pub fn evaluate(&self, batch: &ActBatch) -> ActOutput {
        evaluate_on(&self.model, &self.device, batch)
    }

    /// The zero recurrent state of both players' encoders for `rows` sequences.
    pub fn initial_state(&self, rows: usize) -> Result<[RecurrentState; 2], NnError> {
        self.require_recurrent("initial_state")?;
        let h = self.cfg.representation_size();
        let zero = RecurrentState {
            rows,
            hidden: vec![0.0; rows * h],
            cell: vec![0.0; rows * h],
        };
        Ok([zero.clone(), zero])
    }

    /// Advances both players' recurrent encoders by one observation and evaluates the heads
    /// (information-state heads on the acting player's representation). Returns the outputs and
    /// the next state.
    pub fn step(
        &self,
        batch: &StepBatch,
        state: &[RecurrentState; 2],
    ) -> Result<(ActOutput, [RecurrentState; 2]), NnError> {
        self.require_recurrent("step")?;
        let (b, n_in, a) = (batch.rows, self.cfg.input_size, self.cfg.num_actions);
        let h = self.cfg.representation_size();
        check_len("obs0", batch.obs0.len(), b * n_in)?;
        check_len("obs1", batch.obs1.len(), b * n_in)?;
        check_len("acting_player", batch.acting_player.len(), b)?;
        check_len("legal", batch.legal.len(), b * a)?;
        for (p, st) in state.iter().enumerate() {
            check_len(&format!("state[{p}].hidden"), st.hidden.len(), b * h)?;
            check_len(&format!("state[{p}].cell"), st.cell.len(), b * h)?;
        }
        if b == 0 {
            return Ok((
                ActOutput {
                    num_actions: a,
                    ..Default::default()
                },
                state.clone(),
            ));
        }
        let d = &self.device;
        let mut obs = batch.obs0.clone();
        obs.extend_from_slice(&batch.obs1);
        let mut hid = state[0].hidden.clone();
        hid.extend_from_slice(&state[1].hidden);
        let mut cell = state[0].cell.clone();
        cell.extend_from_slice(&state[1].cell);
        let st = LstmState {
            hidden: tensor2(hid, 2 * b, h, d),
            cell: tensor2(cell, 2 * b, h, d),
        };
        let (rep, next) = self.model.encode_step(tensor2(obs, 2 * b, n_in, d), st); // [2B, H]
        let s0 = rep.clone().narrow(0, 0, b);
        let s1 = rep.narrow(0, b, b);
        let acting: Vec<f32> = batch
            .acting_player
            .iter()
            .map(|&p| if p == 1 { 1.0 } else { 0.0 })
            .collect();
        let acting = tensor2(acting, b, 1, d);
        let own = select_acting(s0.clone(), s1.clone(), acting);
        let legal = tensor2(batch.legal.clone(), b, a, d);
        let out = self.model.heads(own, s0, s1, legal);
        let [q0, q1] = out.q;
        let policy = softmax(out.avg_logits, 1);
        let all = Tensor::cat(
            vec![q0, q1, out.mean_regret, out.immediate_regret, policy],
            1,
        ); // [B, 5A]
        let out = split_output(to_vec(all), b, a, 5);
        let hc = to_vec(Tensor::cat(vec![next.hidden, next.cell], 1)); // [2B, 2H]
        let mut next_state = [RecurrentState::default(), RecurrentState::default()];
        for (p, st) in next_state.iter_mut().enumerate() {
            st.rows = b;
            for row in hc[p * b * 2 * h..(p + 1) * b * 2 * h].chunks_exact(2 * h) {
                st.hidden.extend_from_slice(&row[..h]);
                st.cell.extend_from_slice(&row[h..]);
            }
        }
        Ok((out, next_state))
    }

    /// Runs the recurrent encoders over whole sequences from the zero state, in consecutive
    /// unrolls of at most `chunk` steps (states carried over), and evaluates the heads at every
    /// step. Returns the outputs (row `s·T + t`) and each unroll's starting states.
    pub fn evaluate_sequences(
        &self,
        inputs: &SeqInputs,
        chunk: usize,
    ) -> Result<(ActOutput, Vec<[RecurrentState; 2]>), NnError> {
        evaluate_sequences_on(&self.model, &self.device, &self.cfg, inputs, chunk)
    }

    fn require_recurrent(&self, what: &str) -> Result<(), NnError> {
        if self.cfg.recurrent {
            Ok(())
        } else {
            Err(NnError::WrongEncoder(format!(
                "`{what}` needs a recurrent ARMAC net (config `recurrent = true`)"
            )))
        }
    }

    /// Saves the weights to `path` atomically (temporary sibling, then rename).
    pub fn save_file(&self, path: &Path) -> Result<(), NnError> {
        write_all_atomic(&[(path.to_path_buf(), model_bytes(&self.model)?)])
    }

    /// Loads weights saved by [`Self::save_file`] (or a learner checkpoint's model file) for a
    /// network of config `cfg`, onto the CPU. Errors name the file: missing, corrupt, or
    /// saved from a different architecture.
    pub fn load_file(cfg: ArmacNetConfig, path: &Path) -> Result<Self, NnError> {
        let device = cpu_device();
        let template = cfg.init(&device, 0)?;
        let model = load_model_file(template, path)?;
        Ok(Self { cfg, device, model })
    }
}

// ---------------------------------------------------------------------------------------------
// Learner
// ---------------------------------------------------------------------------------------------

/// A batch of `S` sequences of `T` steps for the recurrent learner.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeqTrainBatch {
    /// Number of sequences `S`.
    pub sequences: usize,
    /// Steps per sequence `T` (pad shorter ones and give the padding zero weights).
    pub time: usize,
    /// `S × T × input`: player 0's observations.
    pub obs0: Vec<f32>,
    /// `S × T × input`: player 1's observations.
    pub obs1: Vec<f32>,
    /// `S × T`: the acting player (0 or 1) at each step.
    pub acting_player: Vec<usize>,
    /// Both players' encoder states before the first step (zero when `None`).
    pub initial_state: Option<[RecurrentState; 2]>,
    /// Per-step targets, `rows = S·T`, row `s·T + t`; its `own`/`both0`/`both1` are unused
    /// (leave them empty).
    pub targets: TrainBatch,
}

#[derive(Serialize, Deserialize)]
struct CheckpointMeta {
    format: u32,
    config: ArmacNetConfig,
    steps: u64,
    /// Length and FNV-1a hash of the model file.
    model_file: FileCheck,
    /// Length and FNV-1a hash of the optimizer file.
    optimizer_file: FileCheck,
}

/// Size and content hash of a checkpoint file, recorded in the metadata so that a truncated or
/// altered file is caught even where its own format would not notice.
#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct FileCheck {
    len: u64,
    fnv1a: String,
}

impl FileCheck {
    fn of(bytes: &[u8]) -> Self {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        Self {
            len: bytes.len() as u64,
            fnv1a: format!("{h:016x}"),
        }
    }

    fn verify(&self, path: &Path, bytes: &[u8]) -> Result<(), NnError> {
        let got = Self::of(bytes);
        if got == *self {
            Ok(())
        } else {
            Err(NnError::Corrupt {
                path: path.to_path_buf(),
                msg: format!(
                    "{} bytes with hash {}, but the checkpoint metadata recorded {} bytes with \
                     hash {} (truncated or overwritten)",
                    got.len, got.fnv1a, self.len, self.fnv1a
                ),
            })
        }
    }
}

fn adam() -> ModuleOptimizer {
    AdamConfig::new()
        .with_beta_1(0.0)
        .with_beta_2(0.999)
        .with_epsilon(1e-8)
        .init()
}

/// The ARMAC learner: the network on an autodiff device, Adam (β1 = 0, β2 = 0.999, ε = 1e-8)
/// and a fixed learning rate.
pub struct ArmacLearner {
    cfg: ArmacNetConfig,
    device: Device,
    model: ArmacNet,
    optim: ModuleOptimizer,
    lr: f64,
    steps: u64,
}

impl std::fmt::Debug for ArmacLearner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArmacLearner")
            .field("cfg", &self.cfg)
            .field("device", &self.device)
            .field("lr", &self.lr)
            .field("steps", &self.steps)
            .finish_non_exhaustive()
    }
}

impl ArmacLearner {
    /// A learner with fresh weights drawn from `seed` on `device` (autodiff is enabled on it).
    ///
    /// # Panics
    /// If `cfg` is invalid (see [`ArmacNetConfig::validate`]; [`Self::try_new`] returns the
    /// error instead).
    pub fn new(cfg: ArmacNetConfig, device: &Device, lr: f64, seed: u64) -> Self {
        Self::try_new(cfg, device, lr, seed).unwrap_or_else(|e| panic!("ArmacLearner::new: {e}"))
    }

    /// [`Self::new`], returning an invalid config as an error.
    pub fn try_new(
        cfg: ArmacNetConfig,
        device: &Device,
        lr: f64,
        seed: u64,
    ) -> Result<Self, NnError> {
        let device = device.clone().autodiff();
        let model = cfg.init(&device, seed)?;
        Ok(Self {
            cfg,
            device,
            model,
            optim: adam(),
            lr,
            steps: 0,
        })
    }

    /// The network's config.
    pub fn config(&self) -> &ArmacNetConfig {
        &self.cfg
    }

    /// The learning rate.
    pub fn lr(&self) -> f64 {
        self.lr
    }

    /// Changes the learning rate for later steps.
    pub fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }

    /// Number of optimizer steps taken (survives save/load).
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The training model (autodiff device).
    pub fn model(&self) -> &ArmacNet {
        &self.model
    }

    /// One Adam step on the batch's weighted losses (see [`TrainBatch`]); returns the losses
    /// before the step. An empty batch is a no-op returning zeros.
    ///
    /// # Panics
    /// If the batch does not match the config (see [`TrainBatch::validate`]).
    pub fn train_step(&mut self, batch: &TrainBatch) -> Losses {
        if let Err(e) = batch.validate(&self.cfg) {
            panic!("ArmacLearner::train_step: {e}");
        }
        if batch.rows() == 0 {
            return Losses::default();
        }
        let d = &self.device;
        let (b, n_in, a) = (batch.rows(), self.cfg.input_size, self.cfg.num_actions);
        let inputs = [&batch.own, &batch.both0, &batch.both1];
        let legal = tensor2(batch.legal.clone(), b, a, d);
        let out = forward_plain(&self.model, d, inputs, b, n_in, legal);
        let terms = loss_terms(out, batch, a, d);
        self.apply(terms)
    }

    /// One Adam step on a batch of sequences (recurrent nets): both players' encoders are
    /// unrolled over `T` steps (backpropagation through time) and the per-step losses are those
    /// of [`TrainBatch`] over the `S·T` rows.
    pub fn train_step_seq(&mut self, batch: &SeqTrainBatch) -> Result<Losses, NnError> {
        if !self.cfg.recurrent {
            return Err(NnError::WrongEncoder(
                "`train_step_seq` needs a recurrent ARMAC net (config `recurrent = true`)".into(),
            ));
        }
        let (s, t, n_in, a) = (
            batch.sequences,
            batch.time,
            self.cfg.input_size,
            self.cfg.num_actions,
        );
        let h = self.cfg.representation_size();
        check_len("obs0", batch.obs0.len(), s * t * n_in)?;
        check_len("obs1", batch.obs1.len(), s * t * n_in)?;
        check_len("acting_player", batch.acting_player.len(), s * t)?;
        check_len("targets.action", batch.targets.rows(), s * t)?;
        batch.targets.validate_targets(a)?;
        if let Some(st) = &batch.initial_state {
            for (p, st) in st.iter().enumerate() {
                check_len(
                    &format!("initial_state[{p}].hidden"),
                    st.hidden.len(),
                    s * h,
                )?;
                check_len(&format!("initial_state[{p}].cell"), st.cell.len(), s * h)?;
            }
        }
        if s * t == 0 {
            return Ok(Losses::default());
        }
        let d = &self.device;
        let obs =
            |v: &Vec<f32>| Tensor::<3>::from_data(TensorData::new(v.clone(), [s, t, n_in]), d);
        let state = batch.initial_state.as_ref().map(|st| {
            st.clone().map(|p| LstmState {
                hidden: tensor2(p.hidden, s, h, d),
                cell: tensor2(p.cell, s, h, d),
            })
        });
        let acting: Vec<f32> = batch
            .acting_player
            .iter()
            .map(|&p| if p == 1 { 1.0 } else { 0.0 })
            .collect();
        let acting = tensor2(acting, s * t, 1, d);
        let legal = tensor2(batch.targets.legal.clone(), s * t, a, d);
        let (out, _) =
            self.model
                .forward_sequence([obs(&batch.obs0), obs(&batch.obs1)], state, acting, legal);
        let terms = loss_terms(out, &batch.targets, a, d);
        Ok(self.apply(terms))
    }

    fn apply(&mut self, terms: [Tensor<1>; 4]) -> Losses {
        let [c, r, i, p] = terms;
        let total = c.clone() + r.clone() + i.clone() + p.clone();
        let grads = GradientsParams::from_grads(total.backward(), &self.model);
        let values: Vec<f32> = Tensor::cat(vec![c, r, i, p], 0)
            .detach()
            .into_data()
            .convert::<f32>()
            .try_to_vec::<f32>()
            .expect("f32 losses");
        self.model = self.optim.step(self.lr, self.model.clone(), grads);
        self.steps += 1;
        let [c, r, i, p] = [0, 1, 2, 3].map(|k| f64::from(values[k]));
        Losses {
            critic: c,
            mean_regret: r,
            immediate_regret: i,
            policy: p,
            total: c + r + i + p,
        }
    }

    /// Evaluates the current weights on plain data (no gradient tracking).
    ///
    /// # Panics
    /// If the batch does not match the config.
    pub fn evaluate(&self, batch: &ActBatch) -> ActOutput {
        let device = self.device.clone().without_autodiff();
        evaluate_on(&self.model.valid(), &device, batch)
    }

    /// [`ArmacPolicyNet::evaluate_sequences`] with the current weights (no gradient tracking).
    pub fn evaluate_sequences(
        &self,
        inputs: &SeqInputs,
        chunk: usize,
    ) -> Result<(ActOutput, Vec<[RecurrentState; 2]>), NnError> {
        let device = self.device.clone().without_autodiff();
        evaluate_sequences_on(&self.model.valid(), &device, &self.cfg, inputs, chunk)
    }

    /// A CPU inference copy of the current weights (the learner may be on a GPU).
    pub fn snapshot(&self) -> ArmacPolicyNet {
        let device = cpu_device();
        ArmacPolicyNet {
            cfg: self.cfg.clone(),
            model: self.model.valid().to_device(&device),
            device,
        }
    }

    /// Writes a checkpoint into `dir` (created if needed): [`CHECKPOINT_MODEL_FILE`],
    /// [`CHECKPOINT_OPTIMIZER_FILE`] and [`CHECKPOINT_META_FILE`]. Every file is written to a
    /// temporary sibling first and renamed into place only once all three are on disk.
    pub fn save(&self, dir: &Path) -> Result<(), NnError> {
        std::fs::create_dir_all(dir).map_err(|source| NnError::Io {
            op: "cannot create directory",
            path: dir.to_path_buf(),
            source,
        })?;
        let model = model_bytes(&self.model.valid())?;
        let optim = self
            .optim
            .to_record()
            .into_bytes()
            .map_err(|e| NnError::Serialize {
                what: "the optimizer",
                msg: e.to_string(),
            })?
            .to_vec();
        let meta = serde_json::to_vec_pretty(&CheckpointMeta {
            format: CHECKPOINT_FORMAT,
            config: self.cfg.clone(),
            steps: self.steps,
            model_file: FileCheck::of(&model),
            optimizer_file: FileCheck::of(&optim),
        })
        .expect("checkpoint metadata serialises");
        write_all_atomic(&[
            (dir.join(CHECKPOINT_MODEL_FILE), model),
            (dir.join(CHECKPOINT_OPTIMIZER_FILE), optim),
            (dir.join(CHECKPOINT_META_FILE), meta),
        ])
    }

    /// Loads a checkpoint written by [`Self::save`] onto `device` (autodiff enabled), with
    /// learning rate `lr`. Errors name the offending file: missing, corrupt, or written for a
    /// different config.
    ///
    /// burn 0.22 materialises the restored Adam moments on `Device::default()` (the best
    /// compiled-in backend, or `BURN_DEVICE`) and moves them to the parameters' device at the
    /// first step: a binary built with `cuda` resuming on a machine without a CUDA driver must
    /// set `BURN_DEVICE=flex`.
    pub fn load(
        cfg: ArmacNetConfig,
        device: &Device,
        lr: f64,
        dir: &Path,
    ) -> Result<Self, NnError> {
        let meta_path = dir.join(CHECKPOINT_META_FILE);
        let meta: CheckpointMeta =
            serde_json::from_slice(&read_file(&meta_path)?).map_err(|e| NnError::Corrupt {
                path: meta_path.clone(),
                msg: e.to_string(),
            })?;
        if meta.format != CHECKPOINT_FORMAT {
            return Err(NnError::Corrupt {
                path: meta_path,
                msg: format!(
                    "checkpoint format {} (this build reads {CHECKPOINT_FORMAT})",
                    meta.format
                ),
            });
        }
        if meta.config != cfg {
            return Err(NnError::Mismatch {
                path: meta_path,
                msg: format!("saved {:?}, requested {:?}", meta.config, cfg),
            });
        }
        let device = device.clone().autodiff();
        let template = cfg.init(&device, 0)?;
        let model_path = dir.join(CHECKPOINT_MODEL_FILE);
        let model_bytes = read_file(&model_path)?;
        meta.model_file.verify(&model_path, &model_bytes)?;
        let model = load_model_bytes(template, &model_path, model_bytes)?;
        let optim_path = dir.join(CHECKPOINT_OPTIMIZER_FILE);
        let optim_bytes = read_file(&optim_path)?;
        meta.optimizer_file.verify(&optim_path, &optim_bytes)?;
        let record =
            OptimizerRecord::from_bytes(Bytes::from_bytes_vec(optim_bytes)).map_err(|e| {
                NnError::Corrupt {
                    path: optim_path.clone(),
                    msg: e.to_string(),
                }
            })?;
        let optim = adam().load_record(record);
        Ok(Self {
            cfg,
            device,
            model,
            optim,
            lr,
            steps: meta.steps,
        })
    }
}

/// The four weighted loss terms (`[1]` each): critic, mean regret, immediate regret, policy.
fn loss_terms(out: ArmacOutput, t: &TrainBatch, a: usize, d: &Device) -> [Tensor<1>; 4] {
    let b = t.rows();
    let normalise = |w: &[f32]| -> Vec<f32> {
        let sum: f32 = w.iter().sum();
        if sum > 0.0 {
            w.iter().map(|x| x / sum).collect()
        } else {
            vec![0.0; w.len()]
        }
    };
    let n_legal: Vec<f32> = t
        .legal
        .chunks_exact(a)
        .map(|r| r.iter().filter(|&&l| l > 0.5).count().max(1) as f32)
        .collect();
    let masked = |v: &[f32]| -> Vec<f32> {
        v.iter()
            .zip(&t.legal)
            .map(|(&x, &l)| if l > 0.5 { x } else { 0.0 })
            .collect()
    };
    let column = |v: Vec<f32>| tensor2(v, b, 1, d); // [B, 1]

    // Critic at the taken action.
    let mut onehot = vec![0.0f32; b * a];
    for (i, &act) in t.action.iter().enumerate() {
        if act < a {
            onehot[i * a + act] = 1.0;
        }
    }
    let onehot = tensor2(onehot, b, a, d); // [B, A]
    let cw = column(
        normalise(&t.critic_weight)
            .iter()
            .map(|w| 0.5 * w)
            .collect(),
    );
    let [q0, q1] = out.q;
    let q0a = (q0 * onehot.clone()).sum_dim(1); // [B, 1]
    let q1a = (q1 * onehot).sum_dim(1); // [B, 1]
    let t0 = column(t.critic_target.iter().map(|x| x[0]).collect());
    let t1 = column(t.critic_target.iter().map(|x| x[1]).collect());
    let critic = (((q0a - t0).square() + (q1a - t1).square()) * cw).sum();

    // Regret heads: mean over legal actions, weighted mean over rows. Heads are 0 at illegal
    // actions and so are the masked targets, so illegal entries contribute nothing.
    let per_legal = |w: &[f32]| -> Tensor<2> {
        column(
            normalise(w)
                .iter()
                .zip(&n_legal)
                .map(|(w, n)| w / n)
                .collect(),
        )
    };
    let regret_y = tensor2(masked(&t.regret_target), b, a, d);
    let mean_regret = ((out.mean_regret - regret_y).square() * per_legal(&t.regret_weight)).sum();
    let imm_y = tensor2(masked(&t.immediate_target), b, a, d);
    let immediate =
        ((out.immediate_regret - imm_y).square() * per_legal(&t.immediate_weight)).sum();

    // Average policy: cross-entropy against the masked softmax.
    let pt = tensor2(masked(&t.policy_target), b, a, d);
    let pw = column(normalise(&t.policy_weight));
    let policy = (log_softmax(out.avg_logits, 1) * pt * pw).sum().neg();
    [critic, mean_regret, immediate, policy]
}

// ---------------------------------------------------------------------------------------------
// Synthetic data and benchmarks
// ---------------------------------------------------------------------------------------------

fn synthetic_legal(rng: &mut SplitMix64, a: usize) -> Vec<bool> {
    let mut legal: Vec<bool> = (0..a).map(|_| !rng.next_u64().is_multiple_of(4)).collect();
    if !legal.iter().any(|&l| l) {
        legal[(rng.next_u64() % a as u64) as usize] = true;
    }
    legal
}

/// A random [`ActBatch`] for `cfg` (inputs uniform in ±1, ~¾ of actions legal).
pub fn synthetic_act_batch(cfg: &ArmacNetConfig, rows: usize, seed: u64) -> ActBatch {
    let mut rng = SplitMix64::new(seed);
    let mut batch = ActBatch::new();
    for _ in 0..rows {
        let own = rng.uniform_vec(cfg.input_size, 1.0);
        let other = rng.uniform_vec(cfg.input_size, 1.0);
        let legal = synthetic_legal(&mut rng, cfg.num_actions);
        batch.push(&own, &own, &other, &legal);
    }
    batch
}

/// A random, learnable [`TrainBatch`] for `cfg`: random inputs, targets fixed per row, all
/// weights 1, deterministic (one-hot) policy targets.
pub fn synthetic_train_batch(cfg: &ArmacNetConfig, rows: usize, seed: u64) -> TrainBatch {
    let mut rng = SplitMix64::new(seed);
    let a = cfg.num_actions;
    let mut batch = TrainBatch::new();
    for _ in 0..rows {
        let own = rng.uniform_vec(cfg.input_size, 1.0);
        let other = rng.uniform_vec(cfg.input_size, 1.0);
        let legal = synthetic_legal(&mut rng, a);
        let legal_idx: Vec<usize> = (0..a).filter(|&i| legal[i]).collect();
        let pick =
            |rng: &mut SplitMix64| legal_idx[(rng.next_u64() % legal_idx.len() as u64) as usize];
        let action = pick(&mut rng);
        let mut policy = vec![0.0; a];
        policy[pick(&mut rng)] = 1.0;
        let regret = rng.uniform_vec(a, 1.0);
        let immediate = rng.uniform_vec(a, 1.0);
        let critic = [rng.uniform(1.0), rng.uniform(1.0)];
        batch.push(&TrainRow {
            own: &own,
            both0: &own,
            both1: &other,
            legal: &legal,
            action,
            critic_target: critic,
            critic_weight: 1.0,
            regret_target: &regret,
            regret_weight: 1.0,
            immediate_target: &immediate,
            immediate_weight: 1.0,
            policy_target: &policy,
            policy_weight: 1.0,
        });
    }
    batch
}

/// A random [`SeqTrainBatch`] of `sequences × time` steps for a recurrent `cfg`.
pub fn synthetic_seq_batch(
    cfg: &ArmacNetConfig,
    sequences: usize,
    time: usize,
    seed: u64,
) -> SeqTrainBatch {
    let mut rng = SplitMix64::new(seed);
    let n = sequences * time;
    let mut targets = synthetic_train_batch(cfg, n, seed ^ 0xABCD);
    targets.own.clear();
    targets.both0.clear();
    targets.both1.clear();
    SeqTrainBatch {
        sequences,
        time,
        obs0: rng.uniform_vec(n * cfg.input_size, 1.0),
        obs1: rng.uniform_vec(n * cfg.input_size, 1.0),
        acting_player: (0..n).map(|i| i % 2).collect(),
        initial_state: None,
        targets,
    }
}

/// Training throughput: optimizer steps per second of [`ArmacLearner::train_step`] at
/// `batch_size` rows on `device`, after two warm-up steps.
///
/// # Panics
/// If `cfg` is invalid.
pub fn bench_train_steps(
    cfg: ArmacNetConfig,
    device: &Device,
    batch_size: usize,
    steps: usize,
) -> f64 {
    let batch = synthetic_train_batch(&cfg, batch_size, 2);
    let mut learner = ArmacLearner::new(cfg, device, 1e-4, 1);
    for _ in 0..2 {
        learner.train_step(&batch);
    }
    let start = Instant::now();
    for _ in 0..steps {
        learner.train_step(&batch);
    }
    steps as f64 / start.elapsed().as_secs_f64()
}

/// Recurrent training throughput: steps per second of [`ArmacLearner::train_step_seq`] on
/// `sequences × time` unrolls, after two warm-up steps.
///
/// # Panics
/// If `cfg` is invalid or not recurrent.
pub fn bench_train_steps_seq(
    cfg: ArmacNetConfig,
    device: &Device,
    sequences: usize,
    time: usize,
    steps: usize,
) -> f64 {
    let batch = synthetic_seq_batch(&cfg, sequences, time, 2);
    let mut learner = ArmacLearner::new(cfg, device, 1e-4, 1);
    for _ in 0..2 {
        learner.train_step_seq(&batch).expect("recurrent config");
    }
    let start = Instant::now();
    for _ in 0..steps {
        learner.train_step_seq(&batch).expect("recurrent config");
    }
    steps as f64 / start.elapsed().as_secs_f64()
}

/// Inference throughput on the CPU: rows per second of [`ArmacPolicyNet::evaluate`] at
/// `batch` rows, after one warm-up call.
///
/// # Panics
/// If `cfg` is invalid.
pub fn bench_inference(cfg: ArmacNetConfig, batch: usize, iters: usize) -> f64 {
    let data = synthetic_act_batch(&cfg, batch, 2);
    let net = ArmacPolicyNet::init(cfg, 1).expect("valid ARMAC config");
    net.evaluate(&data);
    let start = Instant::now();
    for _ in 0..iters {
        std::hint::black_box(net.evaluate(&data));
    }
    (batch * iters) as f64 / start.elapsed().as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small_cfg() -> ArmacNetConfig {
        ArmacNetConfig::new(7, 4)
            .with_encoder_hidden(16)
            .with_head_hidden(16)
    }

    fn cpu() -> Device {
        cpu_device()
    }

    fn scratch_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("armac_nn_{name}_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn assert_close(a: &[f32], b: &[f32], tol: f32, what: &str) {
        assert_eq!(a.len(), b.len(), "{what}: lengths");
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert!(
                (x - y).abs() <= tol * (1.0 + x.abs().max(y.abs())),
                "{what}[{i}]: {x} vs {y}"
            );
        }
    }

    fn assert_outputs_close(a: &ActOutput, b: &ActOutput, tol: f32) {
        assert_close(&a.q0, &b.q0, tol, "q0");
        assert_close(&a.q1, &b.q1, tol, "q1");
        assert_close(&a.mean_regret, &b.mean_regret, tol, "mean_regret");
        assert_close(
            &a.immediate_regret,
            &b.immediate_regret,
            tol,
            "immediate_regret",
        );
        assert_close(&a.avg_policy, &b.avg_policy, tol, "avg_policy");
    }

    #[test]
    fn forward_shapes() {
        let cfg = small_cfg();
        let d = cpu();
        let net = cfg.init(&d, 3).unwrap();
        let b = 5;
        let x = || Tensor::<2>::ones([b, cfg.input_size], &d);
        let legal = Tensor::<2>::ones([b, cfg.num_actions], &d);
        let out = net.forward(x(), [x(), x()], legal);
        for t in [
            &out.q[0],
            &out.q[1],
            &out.mean_regret,
            &out.immediate_regret,
            &out.avg_logits,
        ] {
            assert_eq!(t.dims(), [b, cfg.num_actions]);
        }
        assert_eq!(net.encode(x()).dims(), [b, cfg.representation_size()]);
        assert_eq!(net.num_actions(), 4);
        assert_eq!(net.input_size(), 7);

        let out = ArmacPolicyNet::init(cfg.clone(), 3)
            .unwrap()
            .evaluate(&synthetic_act_batch(&cfg, b, 1));
        assert_eq!(out.rows, b);
        for v in [
            &out.q0,
            &out.q1,
            &out.mean_regret,
            &out.immediate_regret,
            &out.avg_policy,
        ] {
            assert_eq!(v.len(), b * cfg.num_actions);
        }
        // An empty batch is fine.
        let empty = ArmacPolicyNet::init(cfg, 3)
            .unwrap()
            .evaluate(&ActBatch::new());
        assert_eq!(empty.rows, 0);
        assert!(empty.avg_policy.is_empty());
    }

    #[test]
    fn forward_acting_equals_forward() {
        let cfg = small_cfg();
        let d = cpu();
        let net = cfg.init(&d, 4).unwrap();
        let mut batch = synthetic_act_batch(&cfg, 6, 3);
        // Rows 1 and 4 are player 1's decisions.
        for r in [1, 4] {
            let row = r * cfg.input_size..(r + 1) * cfg.input_size;
            let theirs = batch.both1[row.clone()].to_vec();
            batch.own[row].copy_from_slice(&theirs);
        }
        let acting = acting_players(&batch.own, &batch.both0, &batch.both1, cfg.input_size)
            .expect("every own row is a both row");
        assert_eq!(acting, vec![0.0, 1.0, 0.0, 0.0, 1.0, 0.0]);
        let t = |v: &Vec<f32>, w: usize| tensor2(v.clone(), 6, w, &d);
        let both = || [t(&batch.both0, 7), t(&batch.both1, 7)];
        let a = net.forward(t(&batch.own, 7), both(), t(&batch.legal, 4));
        let b = net.forward_acting(both(), tensor2(acting, 6, 1, &d), t(&batch.legal, 4));
        assert_close(&to_vec(a.mean_regret), &to_vec(b.mean_regret), 1e-6, "W");
        assert_close(&to_vec(a.avg_logits), &to_vec(b.avg_logits), 1e-6, "logits");
        assert_close(&to_vec(a.q[0].clone()), &to_vec(b.q[0].clone()), 1e-6, "q0");
        // A batch whose own rows match neither entry takes the general path.
        batch.own[0] += 1.0;
        assert!(acting_players(&batch.own, &batch.both0, &batch.both1, 7).is_none());
        let out = ArmacPolicyNet::init(cfg, 4).unwrap().evaluate(&batch);
        assert!(out.avg_policy.iter().all(|x| x.is_finite()));
    }

    #[test]
    fn normalized_relu_cases() {
        let l = [true, true, false, true];
        assert_eq!(
            normalized_relu(&[1.0, 3.0, 100.0, -2.0], &l),
            vec![0.25, 0.75, 0.0, 0.0]
        );
        let third = 1.0 / 3.0;
        assert_eq!(
            normalized_relu(&[-1.0, 0.0, 5.0, -3.0], &l),
            vec![third, third, 0.0, third]
        );
        assert_eq!(
            normalized_relu(&[f32::NAN, 2.0, 1.0, f32::INFINITY], &l),
            vec![0.0, 1.0, 0.0, 0.0]
        );
        assert_eq!(
            normalized_relu(&[1.0, 2.0], &[false, false]),
            vec![0.0, 0.0]
        );
    }

    #[test]
    fn masking_gives_zero_probability_and_no_nan() {
        let cfg = small_cfg();
        let net = ArmacPolicyNet::init(cfg.clone(), 5).unwrap();
        let mut batch = synthetic_act_batch(&cfg, 64, 9);
        // Extreme inputs must not produce NaN either.
        for v in batch.own.iter_mut().take(7 * 8) {
            *v *= 1e6;
        }
        let out = net.evaluate(&batch);
        let a = cfg.num_actions;
        for i in 0..batch.rows(a) {
            let legal: Vec<bool> = batch.legal[i * a..(i + 1) * a]
                .iter()
                .map(|&x| x > 0.5)
                .collect();
            let pol = out.row(&out.avg_policy, i);
            let cur = out.current_policy(i, &legal);
            let sum: f32 = pol.iter().sum();
            assert!((sum - 1.0).abs() < 1e-5, "row {i} sums to {sum}");
            assert!((cur.iter().sum::<f32>() - 1.0).abs() < 1e-5);
            for k in 0..a {
                for v in [&out.q0, &out.q1, &out.mean_regret, &out.immediate_regret] {
                    assert!(v[i * a + k].is_finite());
                    if !legal[k] {
                        assert_eq!(v[i * a + k], 0.0);
                    }
                }
                assert!(pol[k].is_finite() && pol[k] >= 0.0);
                if !legal[k] {
                    assert_eq!(pol[k], 0.0, "illegal action {k} of row {i}");
                    assert_eq!(cur[k], 0.0);
                }
            }
        }
    }

    #[test]
    fn initialisation_is_reproducible_from_the_seed() {
        let cfg = small_cfg();
        let batch = synthetic_act_batch(&cfg, 8, 2);
        let a = ArmacPolicyNet::init(cfg.clone(), 11)
            .unwrap()
            .evaluate(&batch);
        let b = ArmacPolicyNet::init(cfg.clone(), 11)
            .unwrap()
            .evaluate(&batch);
        let c = ArmacPolicyNet::init(cfg, 12).unwrap().evaluate(&batch);
        assert_eq!(a, b);
        assert_ne!(a.q0, c.q0);
    }

    #[test]
    fn learner_fits_a_synthetic_regression() {
        let cfg = small_cfg().with_encoder_hidden(32).with_head_hidden(32);
        let batch = synthetic_train_batch(&cfg, 64, 4);
        let mut learner = ArmacLearner::new(cfg, &cpu(), 3e-3, 7);
        let first = learner.train_step(&batch);
        let mut last = first;
        for _ in 0..200 {
            last = learner.train_step(&batch);
        }
        let pairs = [
            ("critic", first.critic, last.critic),
            ("mean_regret", first.mean_regret, last.mean_regret),
            (
                "immediate_regret",
                first.immediate_regret,
                last.immediate_regret,
            ),
            ("policy", first.policy, last.policy),
            ("total", first.total, last.total),
        ];
        for (name, a, b) in pairs {
            assert!(a.is_finite() && b.is_finite());
            assert!(b < a / 10.0, "{name}: {a} -> {b}");
        }
        assert_eq!(learner.steps(), 201);
    }

    #[test]
    fn zero_weights_give_zero_losses_and_bad_batches_are_rejected() {
        let cfg = small_cfg();
        let mut batch = synthetic_train_batch(&cfg, 6, 4);
        for w in [
            &mut batch.critic_weight,
            &mut batch.regret_weight,
            &mut batch.immediate_weight,
            &mut batch.policy_weight,
        ] {
            w.iter_mut().for_each(|x| *x = 0.0);
        }
        let mut learner = ArmacLearner::new(cfg.clone(), &cpu(), 1e-3, 1);
        assert_eq!(learner.train_step(&batch), Losses::default());

        let mut bad = synthetic_train_batch(&cfg, 3, 4);
        bad.regret_target.pop();
        let e = bad.validate(&cfg).unwrap_err().to_string();
        assert!(e.contains("regret_target"), "{e}");
        let mut bad = synthetic_train_batch(&cfg, 3, 4);
        bad.legal[bad.action[0]] = 0.0;
        let e = bad.validate(&cfg).unwrap_err().to_string();
        assert!(e.contains("illegal"), "{e}");
        assert!(ArmacNetConfig::new(0, 3).validate().is_err());
        assert!(ArmacLearner::try_new(ArmacNetConfig::new(3, 0), &cpu(), 1e-3, 1).is_err());
    }

    #[test]
    fn snapshot_matches_the_learner() {
        let cfg = small_cfg();
        let mut learner = ArmacLearner::new(cfg.clone(), &cpu(), 1e-3, 3);
        let train = synthetic_train_batch(&cfg, 16, 1);
        for _ in 0..3 {
            learner.train_step(&train);
        }
        let batch = synthetic_act_batch(&cfg, 10, 2);
        let snap = learner.snapshot();
        assert_outputs_close(&learner.evaluate(&batch), &snap.evaluate(&batch), 1e-6);
        // The snapshot is frozen: training on does not change it.
        let before = snap.evaluate(&batch);
        learner.train_step(&train);
        assert_eq!(snap.evaluate(&batch), before);
        assert_ne!(learner.evaluate(&batch), before);
    }

    #[test]
    fn policy_net_is_shareable_across_threads() {
        fn assert_send_sync<T: Send + Sync + Clone>() {}
        assert_send_sync::<ArmacPolicyNet>();
        let cfg = small_cfg();
        let net = ArmacPolicyNet::init(cfg.clone(), 1).unwrap();
        let batch = synthetic_act_batch(&cfg, 4, 3);
        let expect = net.evaluate(&batch);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| assert_eq!(net.evaluate(&batch), expect));
            }
        });
    }

    #[test]
    fn save_load_round_trip_keeps_weights_and_optimizer_state() {
        let cfg = small_cfg();
        let dir = scratch_dir("roundtrip");
        let train = synthetic_train_batch(&cfg, 32, 1);
        let probe = synthetic_act_batch(&cfg, 8, 2);
        let mut a = ArmacLearner::new(cfg.clone(), &cpu(), 1e-3, 9);
        for _ in 0..5 {
            a.train_step(&train);
        }
        a.save(&dir).unwrap();
        let mut b = ArmacLearner::load(cfg.clone(), &cpu(), 1e-3, &dir).unwrap();
        assert_eq!(b.steps(), 5);
        assert_eq!(a.evaluate(&probe), b.evaluate(&probe));
        // Adam's moments survived: the next steps agree with the uninterrupted learner's.
        // (A fresh optimizer would take a very different first step at β1 = 0.)
        for _ in 0..2 {
            let la = a.train_step(&train);
            let lb = b.train_step(&train);
            assert!((la.total - lb.total).abs() <= 1e-5 * la.total.abs().max(1.0));
        }
        assert_outputs_close(&a.evaluate(&probe), &b.evaluate(&probe), 1e-5);
        let mut fresh_optim = ArmacLearner::load(cfg.clone(), &cpu(), 1e-3, &dir).unwrap();
        fresh_optim.optim = adam();
        let mut c = ArmacLearner::load(cfg.clone(), &cpu(), 1e-3, &dir).unwrap();
        c.train_step(&train);
        fresh_optim.train_step(&train);
        assert_ne!(c.evaluate(&probe), fresh_optim.evaluate(&probe));
        // No temporary files are left behind.
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");

        // Reservoir snapshots.
        let path = dir.join("theta_5.bpk");
        let snap = a.snapshot();
        snap.save_file(&path).unwrap();
        let loaded = ArmacPolicyNet::load_file(cfg, &path).unwrap();
        assert_eq!(snap.evaluate(&probe), loaded.evaluate(&probe));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn missing_corrupt_or_mismatched_files_are_errors_naming_the_file() {
        let cfg = small_cfg();
        let dir = scratch_dir("corrupt");
        // Untrained: its optimizer file holds an empty record, the hardest to tell from a
        // truncated one.
        let learner = ArmacLearner::new(cfg.clone(), &cpu(), 1e-3, 1);
        let load = |cfg: &ArmacNetConfig| {
            ArmacLearner::load(cfg.clone(), &cpu(), 1e-3, &dir)
                .unwrap_err()
                .to_string()
        };
        let e = load(&cfg);
        assert!(
            e.contains(CHECKPOINT_META_FILE) && e.contains("cannot read"),
            "{e}"
        );
        learner.save(&dir).unwrap();
        ArmacLearner::load(cfg.clone(), &cpu(), 1e-3, &dir).unwrap();

        let e = load(&cfg.clone().with_head_hidden(8));
        assert!(
            e.contains(CHECKPOINT_META_FILE) && e.contains("does not match"),
            "{e}"
        );

        for file in [
            CHECKPOINT_MODEL_FILE,
            CHECKPOINT_OPTIMIZER_FILE,
            CHECKPOINT_META_FILE,
        ] {
            learner.save(&dir).unwrap();
            let path = dir.join(file);
            let bytes = std::fs::read(&path).unwrap();
            // Truncated.
            std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
            let e = load(&cfg);
            assert!(
                e.contains(file) && e.contains("corrupt"),
                "truncated {file} ({} of {} bytes): {e}",
                bytes.len() / 2,
                bytes.len()
            );
            // Garbage.
            std::fs::write(&path, b"not a checkpoint at all").unwrap();
            let e = load(&cfg);
            assert!(
                e.contains(file) && e.contains("corrupt"),
                "garbage {file}: {e}"
            );
            // Missing.
            std::fs::remove_file(&path).unwrap();
            let e = load(&cfg);
            assert!(
                e.contains(file) && e.contains("cannot read"),
                "missing {file}: {e}"
            );
        }

        let path = dir.join("theta.bpk");
        let e = ArmacPolicyNet::load_file(cfg.clone(), &path)
            .unwrap_err()
            .to_string();
        assert!(e.contains("theta.bpk"), "{e}");
        learner.snapshot().save_file(&path).unwrap();
        for other in [
            ArmacNetConfig::new(8, 4)
                .with_encoder_hidden(16)
                .with_head_hidden(16),
            small_cfg().with_encoder_layers(3),
            ArmacNetConfig::new(7, 5)
                .with_encoder_hidden(16)
                .with_head_hidden(16),
        ] {
            let e = ArmacPolicyNet::load_file(other, &path)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("theta.bpk") && e.contains("does not match"),
                "{e}"
            );
        }
        std::fs::write(&path, b"garbage").unwrap();
        let e = ArmacPolicyNet::load_file(cfg, &path)
            .unwrap_err()
            .to_string();
        assert!(e.contains("theta.bpk") && e.contains("corrupt"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The learner on a GPU backend, inference snapshots on the CPU. Opt-in: needs a Vulkan
    /// driver (Mesa's `lvp` software driver works: `apt-get install mesa-vulkan-drivers`).
    /// `cargo test --release --features wgpu --lib nn::armac -- --ignored`
    #[cfg(feature = "wgpu")]
    #[test]
    #[ignore = "needs a Vulkan driver"]
    fn learner_on_wgpu_snapshots_to_the_cpu() {
        let cfg = small_cfg();
        let gpu = crate::nn::select_device("wgpu").unwrap();
        let dir = scratch_dir("wgpu");
        let train = synthetic_train_batch(&cfg, 32, 1);
        let probe = synthetic_act_batch(&cfg, 8, 2);
        let mut a = ArmacLearner::new(cfg.clone(), &gpu, 1e-3, 9);
        let first = a.train_step(&train);
        for _ in 0..20 {
            a.train_step(&train);
        }
        assert!(a.train_step(&train).total < first.total);
        let snap = a.snapshot();
        assert_outputs_close(&a.evaluate(&probe), &snap.evaluate(&probe), 1e-4);
        a.save(&dir).unwrap();
        let mut b = ArmacLearner::load(cfg, &gpu, 1e-3, &dir).unwrap();
        assert_outputs_close(&a.evaluate(&probe), &b.evaluate(&probe), 1e-6);
        a.train_step(&train);
        b.train_step(&train);
        assert_outputs_close(&a.evaluate(&probe), &b.evaluate(&probe), 1e-4);
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn small_recurrent() -> ArmacNetConfig {
        ArmacNetConfig::new(5, 3)
            .with_encoder_hidden(8)
            .with_head_hidden(8)
            .with_recurrent(true)
    }

    #[test]
    fn recurrent_step_matches_the_unroll() {
        let cfg = small_recurrent();
        let (s, t) = (3, 4);
        let seq = synthetic_seq_batch(&cfg, s, t, 5);
        let mut learner = ArmacLearner::new(cfg.clone(), &cpu(), 1e-3, 2);
        learner.train_step_seq(&seq).unwrap();
        let net = learner.snapshot();
        // Learner-side unroll (no grad) on the snapshot's model.
        let d = cpu();
        let (n_in, a) = (cfg.input_size, cfg.num_actions);
        let obs =
            |v: &Vec<f32>| Tensor::<3>::from_data(TensorData::new(v.clone(), [s, t, n_in]), &d);
        let acting: Vec<f32> = seq.acting_player.iter().map(|&p| p as f32).collect();
        let (out, _) = net.model().forward_sequence(
            [obs(&seq.obs0), obs(&seq.obs1)],
            None,
            tensor2(acting, s * t, 1, &d),
            tensor2(seq.targets.legal.clone(), s * t, a, &d),
        );
        let unrolled_w = to_vec(out.mean_regret);
        let unrolled_q1 = to_vec(out.q[1].clone());
        // Actor-side stepping.
        let mut state = net.initial_state(s).unwrap();
        for step in 0..t {
            let rows = |v: &Vec<f32>, w: usize| -> Vec<f32> {
                (0..s)
                    .flat_map(|i| v[(i * t + step) * w..(i * t + step + 1) * w].to_vec())
                    .collect()
            };
            let batch = StepBatch {
                rows: s,
                obs0: rows(&seq.obs0, n_in),
                obs1: rows(&seq.obs1, n_in),
                acting_player: (0..s).map(|i| seq.acting_player[i * t + step]).collect(),
                legal: rows(&seq.targets.legal, a),
            };
            let (out, next) = net.step(&batch, &state).unwrap();
            state = next;
            for i in 0..s {
                let r = (i * t + step) * a..(i * t + step + 1) * a;
                assert_close(
                    out.row(&out.mean_regret, i),
                    &unrolled_w[r.clone()],
                    1e-5,
                    "W",
                );
                assert_close(out.row(&out.q1, i), &unrolled_q1[r], 1e-5, "q1");
            }
        }
        // Feed-forward nets refuse the recurrent entry points.
        let ff = ArmacPolicyNet::init(small_cfg(), 1).unwrap();
        assert!(ff.initial_state(1).is_err());
        let mut ffl = ArmacLearner::new(small_cfg(), &cpu(), 1e-3, 1);
        assert!(ffl.train_step_seq(&seq).is_err());
    }

    #[test]
    fn recurrent_learner_fits_sequences() {
        let cfg = small_recurrent()
            .with_encoder_hidden(16)
            .with_head_hidden(16);
        let seq = synthetic_seq_batch(&cfg, 8, 6, 3);
        let mut learner = ArmacLearner::new(cfg, &cpu(), 3e-3, 1);
        let first = learner.train_step_seq(&seq).unwrap();
        let mut last = first;
        for _ in 0..150 {
            last = learner.train_step_seq(&seq).unwrap();
        }
        assert!(last.total < first.total / 4.0, "{first:?} -> {last:?}");
    }
}
