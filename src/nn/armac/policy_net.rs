//! The inference handle actor threads hold ([`ArmacPolicyNet`]), including recurrent state
//! carried along episodes.

use super::batch::ActBatch;
use super::batch::ActOutput;
use super::batch::Heads;
use super::batch::check_len;
use super::checkpoint::load_model_bytes;
use super::checkpoint::model_bytes;
use super::checkpoint::model_bytes_as;
use super::checkpoint::read_file;
use super::checkpoint::round_model;
use super::checkpoint::write_all_atomic;
use super::config::ArmacNetConfig;
use super::config::NnError;
use super::config::SnapshotPrecision;
use super::forward::evaluate_on;
use super::forward::evaluate_select_on;
use super::forward::read_selected;
use super::layers::LstmState;
use super::net::ArmacNet;
use super::net::mask_logits;
use super::net::select_acting;
use super::tensors::cpu_device;
use super::tensors::tensor2;
use super::tensors::to_vec;
use burn::module::Module;
use burn::tensor::Device;
use burn::tensor::Tensor;
use burn::tensor::TensorData;
use burn::tensor::activation::softmax;
use std::path::Path;

/// An inference copy of the network on the CPU, cheap to clone into actor threads.
#[derive(Clone, Debug)]
pub struct ArmacPolicyNet {
    pub(super) cfg: ArmacNetConfig,
    pub(super) device: Device,
    pub(super) model: ArmacNet,
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

pub(super) fn lstm_to_plain(st: LstmState) -> RecurrentState {
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
pub(super) fn evaluate_sequences_on(
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
    let out = ActOutput::from_fields(s * t, a, fields);
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

    /// The outputs `heads` asks for on a batch (see [`Heads`]); the fields not asked for come
    /// back empty, the others equal [`Self::evaluate`]'s bit for bit. Without the critic only
    /// the `own` rows are read and encoded (`both0`/`both1` may be empty); with it, both
    /// players' rows are encoded as in [`Self::evaluate`], and the heads not asked for are
    /// skipped. What an actor needs from each network it plays with (a past `π^j`: the
    /// mean-regret head; a past critic: the critic).
    pub fn evaluate_heads(&self, batch: &ActBatch, heads: Heads) -> Result<ActOutput, NnError> {
        evaluate_select_on(&self.model, &self.device, batch, heads)
    }

    /// Feed-forward nets: the two policy outputs alone, `mean_regret` and `avg_policy`, on a
    /// batch whose `own` rows are the acting players' information-state tensors (`both0` and
    /// `both1` are not read); the critic and immediate-regret fields come back empty. Each row
    /// is encoded once and only the two heads run, so this costs well under half of
    /// [`Self::evaluate`], whose two fields it reproduces. What exact evaluations over every
    /// information state of a game need.
    pub fn evaluate_policies(&self, batch: &ActBatch) -> Result<ActOutput, NnError> {
        self.require_feed_forward("evaluate_policies")?;
        self.evaluate_heads(
            batch,
            Heads {
                mean_regret: true,
                avg_policy: true,
                ..Heads::NONE
            },
        )
    }

    /// Feed-forward nets: [`Self::evaluate_policies`] with the mean-regret head alone (what
    /// `π^t` needs); only `mean_regret` is filled.
    pub fn evaluate_mean_regret(&self, batch: &ActBatch) -> Result<ActOutput, NnError> {
        self.require_feed_forward("evaluate_mean_regret")?;
        self.evaluate_heads(batch, Heads::MEAN_REGRET)
    }

    fn require_feed_forward(&self, what: &str) -> Result<(), NnError> {
        if self.cfg.recurrent {
            Err(NnError::WrongEncoder(format!(
                "`{what}` needs a feed-forward ARMAC net (config `recurrent = false`)"
            )))
        } else {
            Ok(())
        }
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
        self.step_heads(batch, state, Heads::ALL)
    }

    /// [`Self::step`] computing only the outputs `heads` asks for (the others come back
    /// empty, as in [`Self::evaluate_heads`]); the encoders advance whatever `heads` is, so
    /// the next state is [`Self::step`]'s.
    pub fn step_heads(
        &self,
        batch: &StepBatch,
        state: &[RecurrentState; 2],
        heads: Heads,
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
            return Ok((ActOutput::empty(0, a), state.clone()));
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
        let out = if heads.any() {
            let acting: Vec<f32> = batch
                .acting_player
                .iter()
                .map(|&p| if p == 1 { 1.0 } else { 0.0 })
                .collect();
            let acting = tensor2(acting, b, 1, d);
            let own = select_acting(s0.clone(), s1.clone(), acting);
            let legal = tensor2(batch.legal.clone(), b, a, d);
            read_selected(
                self.model.select_heads(own, s0, s1, legal, heads),
                heads,
                b,
                a,
            )
        } else {
            ActOutput::empty(b, a)
        };
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

    /// One player's recurrent encoder advanced by one observation for `rows` sequences, with
    /// no head evaluated: the inference path of range queries between the decisions they ask
    /// about. `obs` is `rows × input`, `state` that player's state for the same rows; returns
    /// the next state (its `hidden` is the representation the heads read).
    pub fn encoder_step(
        &self,
        obs: &[f32],
        state: &RecurrentState,
    ) -> Result<RecurrentState, NnError> {
        self.require_recurrent("encoder_step")?;
        let (b, n_in) = (state.rows, self.cfg.input_size);
        let h = self.cfg.representation_size();
        check_len("obs", obs.len(), b * n_in)?;
        check_len("state.hidden", state.hidden.len(), b * h)?;
        check_len("state.cell", state.cell.len(), b * h)?;
        if b == 0 {
            return Ok(state.clone());
        }
        let d = &self.device;
        let st = LstmState {
            hidden: tensor2(state.hidden.clone(), b, h, d),
            cell: tensor2(state.cell.clone(), b, h, d),
        };
        let (_, next) = self
            .model
            .encode_step(tensor2(obs.to_vec(), b, n_in, d), st);
        Ok(RecurrentState {
            rows: b,
            hidden: to_vec(next.hidden),
            cell: to_vec(next.cell),
        })
    }

    /// The average-policy head `π̄` (softmax over the legal actions) on `rows` representations
    /// `rep` (`rows × R`: a recurrent state's `hidden`, or a feed-forward encoder's output);
    /// `legal` is `rows × A` (1.0 legal). Returns `rows × A` probabilities.
    pub fn avg_policy_head(
        &self,
        rep: &[f32],
        legal: &[f32],
        rows: usize,
    ) -> Result<Vec<f32>, NnError> {
        let (a, r) = (self.cfg.num_actions, self.cfg.representation_size());
        check_len("rep", rep.len(), rows * r)?;
        check_len("legal", legal.len(), rows * a)?;
        if rows == 0 {
            return Ok(Vec::new());
        }
        let d = &self.device;
        let logits = self
            .model
            .avg_policy
            .forward(tensor2(rep.to_vec(), rows, r, d));
        Ok(to_vec(softmax(
            mask_logits(logits, tensor2(legal.to_vec(), rows, a, d)),
            1,
        )))
    }

    /// Feed-forward nets: the average-policy head on `rows` information-state tensors `info`
    /// (`rows × input`) with legal masks `legal` (`rows × A`), encoding each row once and
    /// evaluating no other head. Returns `rows × A` probabilities, equal to
    /// [`Self::evaluate`]'s `avg_policy` on the same rows.
    pub fn avg_policy(
        &self,
        info: &[f32],
        legal: &[f32],
        rows: usize,
    ) -> Result<Vec<f32>, NnError> {
        self.require_feed_forward("avg_policy")?;
        check_len("info", info.len(), rows * self.cfg.input_size)?;
        check_len("legal", legal.len(), rows * self.cfg.num_actions)?;
        let batch = ActBatch {
            own: info.to_vec(),
            legal: legal.to_vec(),
            ..ActBatch::default()
        };
        Ok(self.evaluate_heads(&batch, Heads::AVG_POLICY)?.avg_policy)
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

    /// Saves the weights to `path` atomically in `precision` (see [`SnapshotPrecision`]).
    pub fn save_file_as(&self, path: &Path, precision: SnapshotPrecision) -> Result<(), NnError> {
        write_all_atomic(&[(path.to_path_buf(), model_bytes_as(&self.model, precision)?)])
    }

    /// This network with its weights rounded to `precision`: equal, weight for weight, to
    /// what [`Self::load_file`] reads back from a file saved with [`Self::save_file_as`].
    pub fn rounded(self, precision: SnapshotPrecision) -> Self {
        Self {
            model: round_model(self.model, precision),
            ..self
        }
    }

    /// Number of weights (parameters) of the network.
    pub fn num_weights(&self) -> usize {
        self.model.num_params()
    }

    /// Loads weights saved by [`Self::save_file`] (or a learner checkpoint's model file) for a
    /// network of config `cfg`, onto the CPU. Errors name the file: missing, corrupt, or
    /// saved from a different architecture.
    pub fn load_file(cfg: ArmacNetConfig, path: &Path) -> Result<Self, NnError> {
        Self::load_bytes(cfg, path, read_file(path)?)
    }

    /// [`Self::load_file`] for file contents already read (`path` names them in errors).
    pub fn load_bytes(cfg: ArmacNetConfig, path: &Path, bytes: Vec<u8>) -> Result<Self, NnError> {
        let device = cpu_device();
        let template = cfg.init(&device, 0)?;
        let model = load_model_bytes(template, path, bytes)?;
        Ok(Self { cfg, device, model })
    }
}
