//! The ARMAC network: encoder, information-state heads and the global critic ([`ArmacNet`]).

use super::ILLEGAL_LOGIT;
use super::batch::Heads;
use super::config::ArmacNetConfig;
use super::config::NnError;
use super::init_rng;
use super::layers::Head;
use super::layers::LstmCell;
use super::layers::LstmState;
use super::layers::NumberParams;
use super::layers::ResBlock;
use super::layers::double_relu;
use super::layers::feed_forward;
use super::layers::init_linear;
use super::layers::zero_linear;
use super::tensors::upload;
use crate::util::SplitMix64;
use burn::module::Module;
use burn::nn::Linear;
use burn::tensor::Device;
use burn::tensor::Tensor;
use std::sync::{Arc, Mutex};

/// The ARMAC network: shared encoder, three information-state heads and the global critic.
/// Build it with `ArmacNetConfig::init`.
#[derive(Module, Debug)]
pub struct ArmacNet {
    /// What each input entry is multiplied by before the first layer (`1 / input_scale` of
    /// the config); empty: the raw input.
    #[module(skip)]
    pub(super) input_factor: Vec<f32>,
    /// `input_factor` as a `[1, input]` tensor on each device the net has read inputs on,
    /// uploaded once there (shared by the net's clones).
    #[module(skip)]
    pub(super) factor_on_device: FactorCache,
    /// Feed-forward: the `Linear` of each `Linear → DoubleReLU` layer. Recurrent: the single
    /// input `Linear(2h)` before the LSTM.
    pub(super) encoder: Vec<Linear>,
    /// The LSTM of the recurrent encoder (`None` for feed-forward).
    pub(super) lstm: Option<LstmCell>,
    /// Immediate-regret head (predicts `q_θt(h, a) − v_θt(h)` from `s`).
    pub(super) immediate_regret: Head,
    /// Mean-regret head `W̄(s, a)`.
    pub(super) mean_regret: Head,
    /// The mean-regret head's own feed-forward encoder (same shape as `encoder`) when the
    /// config asks for one (`separate_regret_encoder`); empty when the head reads the shared
    /// representation.
    pub(super) regret_encoder: Vec<Linear>,
    /// Average-policy head `π̄(s)` (logits).
    pub(super) avg_policy: Head,
    /// Critic `nA`.
    pub(super) critic_a: Linear,
    /// Critic `nB`.
    pub(super) critic_b: Linear,
    /// Critic block `B(concat(a0, a1))`.
    pub(super) critic_block: ResBlock,
    /// Critic output for player 0's utility.
    pub(super) critic_q0: Linear,
    /// Critic output for player 1's utility.
    pub(super) critic_q1: Linear,
}

/// The input factor of an [`ArmacNet`] as device tensors, one per device it was asked for, so
/// that the factor crosses to a device once, not with every batch.
#[derive(Clone, Debug, Default)]
pub(super) struct FactorCache(Arc<Mutex<Vec<Tensor<2>>>>);

impl FactorCache {
    /// The net reads inputs on its device and, for a learner, on the same device without
    /// autodiff: a few entries at most.
    const MAX_DEVICES: usize = 4;

    /// `factor` as a `[1, len]` tensor on `device`, uploaded on the first call there.
    fn get(&self, factor: &[f32], device: &Device) -> Tensor<2> {
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // Device equality ignores autodiff; a learner reads on its device with and without.
        let same = |d: &Device| d == device && d.is_autodiff() == device.is_autodiff();
        if let Some(t) = held.iter().find(|t| same(&t.device())) {
            return t.clone();
        }
        let t = upload(factor.to_vec(), [1, factor.len()], device);
        if held.len() == Self::MAX_DEVICES {
            held.remove(0);
        }
        held.push(t.clone());
        t
    }
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

impl ArmacOutput {
    /// Stacks the rows of `parts` in order.
    pub fn cat(parts: Vec<ArmacOutput>) -> ArmacOutput {
        let mut q0 = Vec::with_capacity(parts.len());
        let mut q1 = Vec::with_capacity(parts.len());
        let mut w = Vec::with_capacity(parts.len());
        let mut imm = Vec::with_capacity(parts.len());
        let mut logits = Vec::with_capacity(parts.len());
        for p in parts {
            let [a, b] = p.q;
            q0.push(a);
            q1.push(b);
            w.push(p.mean_regret);
            imm.push(p.immediate_regret);
            logits.push(p.avg_logits);
        }
        ArmacOutput {
            q: [Tensor::cat(q0, 0), Tensor::cat(q1, 0)],
            mean_regret: Tensor::cat(w, 0),
            immediate_regret: Tensor::cat(imm, 0),
            avg_logits: Tensor::cat(logits, 0),
        }
    }
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

    /// The input as the first layer reads it: each entry times its `input_factor`.
    fn scaled(&self, x: Tensor<2>) -> Tensor<2> {
        if self.input_factor.is_empty() {
            return x;
        }
        let factor = self.factor_on_device.get(&self.input_factor, &x.device());
        x * factor
    }

    /// The shared feed-forward encoder on raw input rows.
    fn shared_encoder(&self, x: Tensor<2>) -> Tensor<2> {
        feed_forward(&self.encoder, self.scaled(x))
    }

    /// The mean-regret head's own encoder on raw input rows.
    fn own_regret_encoder(&self, x: Tensor<2>) -> Tensor<2> {
        feed_forward(&self.regret_encoder, self.scaled(x))
    }

    /// Encodes independent rows. Feed-forward: the information-state encoder. Recurrent: each
    /// row is a one-step sequence from the zero state (use [`Self::encode_step`] /
    /// [`Self::unroll`] for real sequences).
    ///
    /// # Shapes
    /// - `x`: `[N, input]` → `[N, R]`
    pub fn encode(&self, x: Tensor<2>) -> Tensor<2> {
        match &self.lstm {
            None => self.shared_encoder(x),
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
        let x = double_relu(self.encoder[0].forward(self.scaled(obs))); // [N, 2H]
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
        self.select_heads(own, s0, s1, legal, Heads::ALL)
    }

    /// The heads `heads` asks for from already-encoded representations (shapes as in
    /// [`Self::heads`]); the others are zeros. The mean-regret head reads `own`, so this is
    /// for nets without a separate regret encoder (the recurrent net has none).
    pub fn select_heads(
        &self,
        own: Tensor<2>,
        s0: Tensor<2>,
        s1: Tensor<2>,
        legal: Tensor<2>,
        heads: Heads,
    ) -> ArmacOutput {
        debug_assert!(self.regret_encoder.is_empty() || !heads.mean_regret);
        self.assemble(Some(own.clone()), Some(own), Some([s0, s1]), legal, heads)
    }

    /// The representation the mean-regret head reads: its own encoder's output on
    /// `own_input` when it has one, else the shared `own_rep`.
    ///
    /// # Shapes
    /// - `own_input`: `[B, input]`, `own_rep`: `[B, R]` → `[B, R]`
    pub fn regret_representation(&self, own_input: Tensor<2>, own_rep: Tensor<2>) -> Tensor<2> {
        if self.regret_encoder.is_empty() {
            own_rep
        } else {
            self.own_regret_encoder(own_input)
        }
    }

    /// The outputs `heads` asks for, from the representations they read: `own` (the acting
    /// player's, for the immediate-regret and average-policy heads), `regret_rep` (the
    /// mean-regret head's, see [`Self::regret_representation`]) and `s` (both players', for
    /// the critic). Every other output is a constant zero (`avg_logits`: the masked zeros).
    ///
    /// # Panics
    /// If an output is asked for without the representation it reads.
    fn assemble(
        &self,
        own: Option<Tensor<2>>,
        regret_rep: Option<Tensor<2>>,
        s: Option<[Tensor<2>; 2]>,
        legal: Tensor<2>,
        heads: Heads,
    ) -> ArmacOutput {
        let [b, a] = legal.dims();
        let device = legal.device();
        let zeros = || Tensor::<2>::zeros([b, a], &device);
        let own_rep = || own.clone().expect("the acting player's representation");
        let mean_regret = if heads.mean_regret {
            let rep = regret_rep.expect("the mean-regret head's representation");
            self.mean_regret.forward(rep) * legal.clone()
        } else {
            zeros()
        }; // [B, A]
        let immediate_regret = if heads.immediate_regret {
            self.immediate_regret.forward(own_rep()) * legal.clone()
        } else {
            zeros()
        }; // [B, A]
        let logits = if heads.avg_policy {
            self.avg_policy.forward(own_rep())
        } else {
            zeros()
        }; // [B, A]
        let q = if heads.critic {
            let [s0, s1] = s.expect("both players' representations");
            self.critic(s0, s1, legal.clone())
        } else {
            [zeros(), zeros()]
        };
        ArmacOutput {
            q,
            mean_regret,
            immediate_regret,
            avg_logits: mask_logits(logits, legal),
        }
    }

    /// The critic `[q_0, q_1]` (`[B, A]` each, zero at illegal actions) on both players'
    /// representations `s0`, `s1` (`[B, R]` each).
    fn critic(&self, s0: Tensor<2>, s1: Tensor<2>, legal: Tensor<2>) -> [Tensor<2>; 2] {
        // Separate products rather than one over `cat(s0, s1)`: slicing a tracked tensor costs
        // a full-size zero gradient per slice in burn's autodiff.
        let a0 = self.critic_a.forward(s0.clone()) + self.critic_b.forward(s1.clone()); // [B, hh]
        let a1 = self.critic_b.forward(s0) + self.critic_a.forward(s1); // [B, hh]
        let h = self.critic_block.forward(Tensor::cat(vec![a0, a1], 1)); // [B, 2hh]
        let q0 = self.critic_q0.forward(h.clone()) * legal.clone(); // [B, A]
        let q1 = self.critic_q1.forward(h) * legal; // [B, A]
        [q0, q1]
    }

    /// The information-state heads `heads` asks for on the acting player's tensors `own` alone
    /// (no critic: it reads both players' tensors, see [`Self::forward_select`]); every other
    /// output is a constant zero. A reservoir-memory row, or a past network that only plays
    /// `π^j`, costs one encoder pass and the heads it reads this way, against two encoder
    /// passes, three heads and the critic through [`Self::forward_acting`].
    ///
    /// # Shapes
    /// - `own`: `[B, input]`, `legal`: `[B, A]` → [`ArmacOutput`] with `[B, A]` tensors
    ///
    /// # Panics
    /// If `heads` asks for the critic.
    pub fn forward_heads(&self, own: Tensor<2>, legal: Tensor<2>, heads: Heads) -> ArmacOutput {
        assert!(
            !heads.critic,
            "forward_heads: the critic needs both players' tensors (forward_select)"
        );
        let shared_regret = self.regret_encoder.is_empty();
        let shared =
            (heads.immediate_regret || heads.avg_policy || (heads.mean_regret && shared_regret))
                .then(|| self.encode(own.clone())); // [B, R]
        let regret_rep = heads.mean_regret.then(|| {
            if shared_regret {
                shared.clone().expect("encoded above")
            } else {
                self.own_regret_encoder(own)
            }
        }); // [B, R]
        self.assemble(shared, regret_rep, None, legal, heads)
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
        let own_s = self.encode(own.clone()); // [B, R]
        let regret_rep = self.regret_representation(own, own_s.clone()); // [B, R]
        let s0 = self.encode(both0); // [B, R]
        let s1 = self.encode(both1); // [B, R]
        self.assemble(
            Some(own_s),
            Some(regret_rep),
            Some([s0, s1]),
            legal,
            Heads::ALL,
        )
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
        self.forward_select(both, acting, legal, Heads::ALL)
    }

    /// [`Self::forward_acting`] computing only the outputs `heads` asks for (the others are
    /// constant zeros, `avg_logits` the masked zeros); the ones it computes are the same.
    /// Without the critic, only the acting player's tensors are encoded
    /// ([`Self::forward_heads`]); with it, both players' are, and the heads read the acting
    /// player's representation among them.
    ///
    /// # Shapes
    /// As [`Self::forward_acting`].
    pub fn forward_select(
        &self,
        both: [Tensor<2>; 2],
        acting: Tensor<2>,
        legal: Tensor<2>,
        heads: Heads,
    ) -> ArmacOutput {
        let [both0, both1] = both;
        if !heads.critic {
            // `acting` is exactly 0 or 1, so the selected inputs equal the acting player's.
            return self.forward_heads(select_acting(both0, both1, acting), legal, heads);
        }
        let own_input = (heads.mean_regret && !self.regret_encoder.is_empty())
            .then(|| select_acting(both0.clone(), both1.clone(), acting.clone())); // [B, input]
        let s0 = self.encode(both0); // [B, R]
        let s1 = self.encode(both1); // [B, R]
        let own = heads
            .any_infostate()
            .then(|| select_acting(s0.clone(), s1.clone(), acting)); // [B, R]
        let regret_rep = heads.mean_regret.then(|| match own_input {
            Some(x) => self.own_regret_encoder(x),
            None => own.clone().expect("selected above"),
        }); // [B, R]
        self.assemble(own, regret_rep, Some([s0, s1]), legal, heads)
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

impl ArmacNetConfig {
    /// The `Linear` layers of a feed-forward encoder (`encoder_layers` of `encoder_hidden`).
    fn feed_forward_encoder(&self, rng: &mut SplitMix64, device: &Device) -> Vec<Linear> {
        let mut d_in = self.input_size;
        (0..self.encoder_layers)
            .map(|_| {
                let layer = init_linear(rng, d_in, self.encoder_hidden, true, device);
                d_in = 2 * self.encoder_hidden;
                layer
            })
            .collect()
    }

    /// Builds a network with reproducible weights drawn from `seed`, on `device` (pass an
    /// autodiff device to train it).
    pub fn init(&self, device: &Device, seed: u64) -> Result<ArmacNet, NnError> {
        self.validate()?;
        let mut rng = init_rng(seed);
        let rep = self.representation_size();
        let a = self.num_actions;
        let hh = self.head_hidden;
        let (encoder, lstm) = if self.recurrent {
            let w = self.representation_size();
            let input = vec![init_linear(&mut rng, self.input_size, w, true, device)];
            let lstm = LstmCell::init(&mut rng, 2 * w, w, device);
            (input, Some(lstm))
        } else {
            (self.feed_forward_encoder(&mut rng, device), None)
        };
        let zero = self.zero_init_heads;
        let head = |rng: &mut SplitMix64| {
            let block = ResBlock::init(rng, rep, hh, device);
            let mut out = init_linear(rng, 2 * hh, a, true, device);
            if zero {
                out = zero_linear(out, device);
            }
            Head { block, out }
        };
        let immediate_regret = head(&mut rng);
        let mean_regret = head(&mut rng);
        let avg_policy = head(&mut rng);
        let critic_a = init_linear(&mut rng, rep, hh, true, device);
        let critic_b = init_linear(&mut rng, rep, hh, true, device);
        let critic_block = ResBlock::init(&mut rng, 2 * hh, hh, device);
        let critic_q0 = init_linear(&mut rng, 2 * hh, a, true, device);
        let critic_q1 = init_linear(&mut rng, 2 * hh, a, true, device);
        // Drawn last, so that the other weights do not depend on this option.
        let regret_encoder = if self.separate_regret_encoder {
            self.feed_forward_encoder(&mut rng, device)
        } else {
            Vec::new()
        };
        Ok(NumberParams::apply(ArmacNet {
            input_factor: self.input_scale.iter().map(|s| 1.0 / s).collect(),
            factor_on_device: FactorCache::default(),
            regret_encoder,
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
        }))
    }
}

/// Row-wise choice between two representations: `s0` where `acting` is 0, `s1` where it is 1.
///
/// # Shapes
/// - `s0`, `s1`: `[N, R]`, `acting`: `[N, 1]` → `[N, R]`
pub(super) fn select_acting(s0: Tensor<2>, s1: Tensor<2>, acting: Tensor<2>) -> Tensor<2> {
    s0 * acting.clone().neg().add_scalar(1.0) + s1 * acting
}

/// Masks logits: legal entries unchanged, illegal ones [`ILLEGAL_LOGIT`].
///
/// # Shapes
/// - `logits`, `legal`: `[B, A]` → `[B, A]`
pub(super) fn mask_logits(logits: Tensor<2>, legal: Tensor<2>) -> Tensor<2> {
    let offset = legal.clone().sub_scalar(1.0).mul_scalar(-ILLEGAL_LOGIT); // 0 legal, -1e9 illegal
    logits * legal + offset
}
