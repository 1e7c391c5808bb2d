//! The learner: losses of every head, Adam (β1 = 0) steps, checkpoints ([`ArmacLearner`]).

use super::CHECKPOINT_EMA_FILE;
use super::CHECKPOINT_FORMAT;
use super::CHECKPOINT_META_FILE;
use super::CHECKPOINT_MODEL_FILE;
use super::CHECKPOINT_OPTIMIZER_FILE;
use super::batch::ActBatch;
use super::batch::ActOutput;
use super::batch::Heads;
use super::batch::Losses;
use super::batch::TrainBatch;
use super::batch::check_len;
use super::checkpoint::BlendFloats;
use super::checkpoint::CheckpointMeta;
use super::checkpoint::CollectFloats;
use super::checkpoint::EmaMeta;
use super::checkpoint::FileCheck;
use super::checkpoint::load_model_bytes;
use super::checkpoint::model_bytes;
use super::checkpoint::read_file;
use super::checkpoint::write_all_atomic;
use super::config::ArmacNetConfig;
use super::config::NnError;
use super::forward::evaluate_on;
use super::forward::evaluate_select_on;
#[cfg(test)]
use super::forward::forward_packed;
#[cfg(test)]
use super::forward::pack_inputs;
use super::grouped::grouped_terms;
use super::layers::LstmState;
use super::loss::pack_targets;
use super::net::ArmacNet;
use super::policy_net::ArmacPolicyNet;
use super::policy_net::RecurrentState;
use super::policy_net::SeqInputs;
use super::policy_net::evaluate_sequences_on;
use super::step_targets::pack_step_targets;
use super::tensors::DeviceIo;
use super::tensors::Packer;
use super::tensors::cpu_device;
use super::tensors::io_now;
use super::tensors::read_back;
use burn::module::Module;
use burn::optim::AdamConfig;
use burn::optim::GradientsParams;
use burn::optim::ModuleOptimizer;
use burn::optim::OptimizerRecord;
use burn::tensor::Bytes;
use burn::tensor::Device;
use burn::tensor::Tensor;
use std::path::Path;

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
    /// (leave them empty). Its `step_targets`, when set, cover rows in the same order and need
    /// one unroll per episode (`initial_state` `None`).
    pub targets: TrainBatch,
}

pub(super) fn adam() -> ModuleOptimizer {
    adam_with(0.0)
}

fn adam_with(beta_1: f64) -> ModuleOptimizer {
    AdamConfig::new()
        .with_beta_1(beta_1 as f32)
        .with_beta_2(0.999)
        .with_epsilon(1e-8)
        .init()
}

/// The ARMAC learner: the network on an autodiff device, Adam (β1 = 0, β2 = 0.999, ε = 1e-8),
/// a fixed learning rate and, optionally, a Polyak average of the weights that
/// [`Self::snapshot`] hands out (see [`Self::set_polyak`]).
pub struct ArmacLearner {
    pub(super) cfg: ArmacNetConfig,
    pub(super) device: Device,
    pub(super) model: ArmacNet,
    pub(super) optim: ModuleOptimizer,
    pub(super) lr: f64,
    pub(super) steps: u64,
    pub(super) ema: Option<Ema>,
    /// With `ema`: the snapshot takes only the mean-regret path (its own encoder and head)
    /// from the average and everything else from the current weights.
    pub(super) ema_regret_only: bool,
    /// Weights of the critic, mean-regret, immediate-regret and policy losses in the sum
    /// that is differentiated (all 1 by default).
    pub(super) loss_weights: [f64; 4],
    /// Sums of the four losses of the steps taken by [`Self::train_step_deferred`] and
    /// [`Self::train_step_seq_deferred`] since the last [`Self::take_loss_sums`], on the device.
    pub(super) pending: Option<Tensor<1>>,
    /// Number of steps in `pending`.
    pub(super) pending_steps: u64,
    /// Transfers and operations of this learner's calls so far.
    pub(super) io: std::sync::Mutex<DeviceIo>,
    /// The device copies of the regret and policy reservoirs
    /// ([`Self::enable_resident_memory`]).
    pub(super) resident: Option<ResidentTables>,
}

/// Exponential moving average of the learner's weights (plain tensors on its device).
pub(super) struct Ema {
    pub(super) decay: f64,
    pub(super) model: ArmacNet,
}

/// The device tables of [`ArmacLearner::enable_resident_memory`]: per table (regret, policy)
/// chunks of `chunk_rows` rows, slot `s` at row `s % chunk_rows` of chunk `s / chunk_rows`.
pub(super) struct ResidentTables {
    pub(super) chunk_rows: usize,
    pub(super) capacity: usize,
    pub(super) tables: [Vec<Tensor<2>>; 2],
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
            ema: None,
            ema_regret_only: false,
            loss_weights: [1.0; 4],
            pending: None,
            pending_steps: 0,
            io: Default::default(),
            resident: None,
        })
    }

    /// Polyak averaging: after every step the average moves towards the new weights,
    /// `avg ← d·avg + (1 − d)·θ` with `d = min(decay, (1 + n)/(10 + n))` after `n` steps (the
    /// ramp keeps the first steps from being dominated by the initial weights), and
    /// [`Self::snapshot`] returns the average. `decay = 0` turns averaging off; turning it on
    /// starts the average at the current weights.
    pub fn set_polyak(&mut self, decay: f64) {
        if decay <= 0.0 {
            self.ema = None;
        } else if let Some(e) = &mut self.ema {
            e.decay = decay;
        } else {
            self.ema = Some(Ema {
                decay,
                model: self.model.valid(),
            });
        }
    }

    /// Restricts what [`Self::snapshot`] takes from the Polyak average to the mean-regret
    /// path, the separate encoder of `separate_regret_encoder` and the `W̄` head: the policy
    /// `π^t` the actors play is smoothed while the critic, the immediate-regret and the
    /// average-policy heads stay the current weights (a critic averaged over past steps trails
    /// the policy it evaluates). Errors if the net has no separate regret encoder (the head
    /// would read features of the current shared encoder through averaged weights).
    pub fn set_polyak_regret_only(&mut self, only: bool) -> Result<(), NnError> {
        if only && !self.cfg.separate_regret_encoder {
            return Err(NnError::Config(
                "a Polyak average of the mean-regret head alone needs separate_regret_encoder"
                    .into(),
            ));
        }
        self.ema_regret_only = only;
        Ok(())
    }

    /// Adam's first-moment decay β1 (0, the paper's, by default): `β1 > 0` averages the
    /// gradients of about `1 / (1 − β1)` steps before the step is normalised. The optimizer's
    /// moments are kept (a resumed learner calls this after loading them).
    pub fn set_adam_beta1(&mut self, beta_1: f64) {
        let record = self.optim.to_record();
        self.optim = adam_with(beta_1).load_record(record);
    }

    /// Weights of the critic, mean-regret, immediate-regret and policy losses in the
    /// differentiated sum (the shared encoder's features follow the larger terms); the losses
    /// [`Self::train_step`] reports stay unweighted.
    pub fn set_loss_weights(&mut self, weights: [f64; 4]) {
        self.loss_weights = weights;
    }

    /// The Polyak decay (`0` when averaging is off).
    pub fn polyak(&self) -> f64 {
        self.ema.as_ref().map_or(0.0, |e| e.decay)
    }

    fn update_ema(&mut self) {
        let n = self.steps as f64;
        if let Some(e) = &mut self.ema {
            let keep = e.decay.min((1.0 + n) / (10.0 + n));
            let mut cur = CollectFloats(Vec::new());
            self.model.valid().visit(&mut cur);
            e.model = e.model.clone().map(&mut BlendFloats {
                other: cur.0.into_iter(),
                keep,
            });
        }
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
    /// before the step (one read-back; [`Self::train_step_deferred`] keeps them on the
    /// device). An empty batch is a no-op returning zeros.
    ///
    /// # Panics
    /// If the batch does not match the config (see [`TrainBatch::validate`]).
    pub fn train_step(&mut self, batch: &TrainBatch) -> Losses {
        let before = io_now();
        let out = self.checked_terms(batch).map(|t| {
            let values = self.apply(t);
            losses_of(&read_back(values))
        });
        self.add_io(before);
        out.unwrap_or_default()
    }

    /// [`Self::train_step`] without reading anything back: the host data of the step go to
    /// the device in one upload and the losses are added to sums on the device, which
    /// [`Self::take_loss_sums`] reads.
    ///
    /// # Panics
    /// As [`Self::train_step`].
    pub fn train_step_deferred(&mut self, batch: &TrainBatch) {
        let before = io_now();
        if let Some(t) = self.checked_terms(batch) {
            let values = self.apply(t);
            self.defer(values);
        }
        self.add_io(before);
    }

    /// The loss terms of a valid, non-empty batch (`None` when it is empty).
    fn checked_terms(&self, batch: &TrainBatch) -> Option<[Tensor<1>; 4]> {
        if let Err(e) = batch.validate(&self.cfg) {
            panic!("ArmacLearner::train_step: {e}");
        }
        (batch.rows() > 0).then(|| grouped_terms(&self.model, &self.device, &self.cfg, batch))
    }

    /// Adds one step's `[4]` losses to the sums on the device.
    pub(super) fn defer(&mut self, values: Tensor<1>) {
        self.pending = Some(match self.pending.take() {
            Some(sum) => sum + values,
            None => values,
        });
        self.pending_steps += 1;
    }

    /// The sums of the critic, mean-regret, immediate-regret and policy losses (in that order)
    /// over the deferred steps since the last call, and their number, in one read-back (none
    /// when no step was deferred); the sums restart at zero.
    pub fn take_loss_sums(&mut self) -> ([f64; 4], u64) {
        let before = io_now();
        let steps = std::mem::take(&mut self.pending_steps);
        let sums = match self.pending.take() {
            Some(sum) => {
                let v = read_back(sum);
                [0, 1, 2, 3].map(|k| f64::from(v[k]))
            }
            None => [0.0; 4],
        };
        self.add_io(before);
        (sums, steps)
    }

    /// Host-to-device transfers, read-backs and autodiff operations of this learner's steps,
    /// evaluations and loss reads so far (see [`DeviceIo`]); the difference of two readings is
    /// the traffic between them.
    pub fn io(&self) -> DeviceIo {
        *self.io.lock().expect("learner counters")
    }

    /// Adds the traffic on this thread since `before` (an [`io_now`] reading) to the counters.
    pub(super) fn add_io(&self, before: DeviceIo) {
        *self.io.lock().expect("learner counters") += io_now() - before;
    }

    /// [`Self::train_step`] with every row through the full forward pass (the reference the
    /// grouped pass is tested against).
    #[cfg(test)]
    pub(super) fn train_step_full(&mut self, batch: &TrainBatch) -> Losses {
        let d = &self.device;
        let (b, n_in) = (batch.rows(), self.cfg.input_size);
        let inputs = [&batch.own[..], &batch.both0[..], &batch.both1[..]];
        let mut p = Packer::default();
        let x = pack_inputs(&mut p, inputs, &batch.legal, b, n_in, Heads::ALL);
        assert!(
            batch.step_targets.is_none(),
            "train_step_full takes host targets"
        );
        let targets = pack_targets(&mut p, batch, self.cfg.num_actions, false);
        let p = p.upload(d);
        let terms = targets.losses(forward_packed(&self.model, &p, &x), &p, None);
        losses_of(&read_back(self.apply(terms)))
    }

    /// One Adam step on a batch of sequences (recurrent nets): both players' encoders are
    /// unrolled over `T` steps (backpropagation through time) and the per-step losses are those
    /// of [`TrainBatch`] over the `S·T` rows.
    pub fn train_step_seq(&mut self, batch: &SeqTrainBatch) -> Result<Losses, NnError> {
        let before = io_now();
        let out = self.seq_terms(batch).map(|t| {
            t.map(|t| {
                let values = self.apply(t);
                losses_of(&read_back(values))
            })
        });
        self.add_io(before);
        Ok(out?.unwrap_or_default())
    }

    /// [`Self::train_step_seq`] keeping the losses on the device (see
    /// [`Self::train_step_deferred`]).
    pub fn train_step_seq_deferred(&mut self, batch: &SeqTrainBatch) -> Result<(), NnError> {
        let before = io_now();
        let out = self.seq_terms(batch).map(|t| {
            if let Some(t) = t {
                let values = self.apply(t);
                self.defer(values);
            }
        });
        self.add_io(before);
        out
    }

    /// The loss terms of a batch of sequences (`None` when it has no step).
    fn seq_terms(&self, batch: &SeqTrainBatch) -> Result<Option<[Tensor<1>; 4]>, NnError> {
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
        if let Some(st) = &batch.targets.step_targets {
            st.validate(&batch.targets, a, true)?;
            if batch.initial_state.is_some() {
                return Err(NnError::Batch(
                    "step targets need one unroll per episode (no initial_state)".into(),
                ));
            }
        }
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
            return Ok(None);
        }
        let d = &self.device;
        let mut p = Packer::default();
        let obs = [
            p.push(&batch.obs0, s * t, n_in),
            p.push(&batch.obs1, s * t, n_in),
        ];
        let state = batch.initial_state.as_ref().map(|st| {
            st.clone()
                .map(|st| [p.push(&st.hidden, s, h), p.push(&st.cell, s, h)])
        });
        let acting = p.push_with(s * t, 1, |v| {
            v.extend(
                batch
                    .acting_player
                    .iter()
                    .map(|&p| if p == 1 { 1.0f32 } else { 0.0 }),
            )
        });
        let legal = p.push(&batch.targets.legal, s * t, a);
        let step_targets = batch.targets.step_targets.as_ref();
        let targets = pack_targets(&mut p, &batch.targets, a, step_targets.is_some());
        let order: Vec<usize> = (0..s * t).collect();
        let step = step_targets.map(|st| pack_step_targets(&mut p, st, &order, a));
        let p = p.upload(d);
        let obs = obs.map(|o| p.get(o).reshape([s, t, n_in]));
        let state = state.map(|st| {
            st.map(|[hidden, cell]| LstmState {
                hidden: p.get(hidden),
                cell: p.get(cell),
            })
        });
        let (out, _) = self
            .model
            .forward_sequence(obs, state, p.get(acting), p.get(legal));
        let in_step = step.map(|st| st.targets(&out.q, p.get(legal), &p));
        Ok(Some(targets.losses(out, &p, in_step)))
    }

    /// One Adam step on the weighted sum of `terms`; returns the unweighted terms as one
    /// `[4]` tensor (detached, on the device).
    pub(super) fn apply(&mut self, terms: [Tensor<1>; 4]) -> Tensor<1> {
        let [c, r, i, p] = terms;
        let [wc, wr, wi, wp] = self.loss_weights;
        let total = c.clone().mul_scalar(wc)
            + r.clone().mul_scalar(wr)
            + i.clone().mul_scalar(wi)
            + p.clone().mul_scalar(wp);
        let grads = GradientsParams::from_grads(total.backward(), &self.model);
        let values = Tensor::cat(vec![c, r, i, p], 0).detach();
        self.model = self.optim.step(self.lr, self.model.clone(), grads);
        self.update_ema();
        self.steps += 1;
        values
    }

    /// Evaluates the current weights on plain data (no gradient tracking).
    ///
    /// # Panics
    /// If the batch does not match the config.
    pub fn evaluate(&self, batch: &ActBatch) -> ActOutput {
        let before = io_now();
        let device = self.device.clone().without_autodiff();
        let out = evaluate_on(&self.model.valid(), &device, batch);
        self.add_io(before);
        out
    }

    /// The critic of the current weights alone (`q0`, `q1`; no gradient tracking), equal to
    /// those fields of [`Self::evaluate`] at a fraction of its cost. Feed-forward nets.
    ///
    /// # Panics
    /// If the batch does not match the config.
    pub fn evaluate_critic(&self, batch: &ActBatch) -> ActOutput {
        let before = io_now();
        let device = self.device.clone().without_autodiff();
        let out = evaluate_select_on(&self.model.valid(), &device, batch, Heads::CRITIC)
            .unwrap_or_else(|e| panic!("ArmacLearner evaluate_critic: {e}"));
        self.add_io(before);
        out
    }

    /// [`ArmacPolicyNet::evaluate_sequences`] with the current weights (no gradient tracking).
    pub fn evaluate_sequences(
        &self,
        inputs: &SeqInputs,
        chunk: usize,
    ) -> Result<(ActOutput, Vec<[RecurrentState; 2]>), NnError> {
        let before = io_now();
        let device = self.device.clone().without_autodiff();
        let out = evaluate_sequences_on(&self.model.valid(), &device, &self.cfg, inputs, chunk);
        self.add_io(before);
        out
    }

    /// A CPU inference copy of the current weights, or of their Polyak average when
    /// averaging is on (the learner may be on a GPU).
    pub fn snapshot(&self) -> ArmacPolicyNet {
        let device = cpu_device();
        let model = match &self.ema {
            Some(e) if self.ema_regret_only => {
                let mut m = self.model.valid();
                m.regret_encoder = e.model.regret_encoder.clone();
                m.mean_regret = e.model.mean_regret.clone();
                m
            }
            Some(e) => e.model.clone(),
            None => self.model.valid(),
        };
        ArmacPolicyNet {
            cfg: self.cfg.clone(),
            model: model.to_device(&device),
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
        let optim = crate::nn::pack::optimizer_bytes(self.optim.to_record()).map_err(|msg| {
            NnError::Serialize {
                what: "the optimizer",
                msg,
            }
        })?;
        let ema = match &self.ema {
            Some(e) => Some((e.decay, model_bytes(&e.model)?)),
            None => None,
        };
        let meta = serde_json::to_vec_pretty(&CheckpointMeta {
            format: CHECKPOINT_FORMAT,
            config: self.cfg.clone(),
            steps: self.steps,
            model_file: FileCheck::of(&model),
            optimizer_file: FileCheck::of(&optim),
            ema: ema.as_ref().map(|(decay, bytes)| EmaMeta {
                decay: *decay,
                file: FileCheck::of(bytes),
            }),
        })
        .expect("checkpoint metadata serialises");
        let mut files = vec![
            (dir.join(CHECKPOINT_MODEL_FILE), model),
            (dir.join(CHECKPOINT_OPTIMIZER_FILE), optim),
        ];
        if let Some((_, bytes)) = ema {
            files.push((dir.join(CHECKPOINT_EMA_FILE), bytes));
        }
        files.push((dir.join(CHECKPOINT_META_FILE), meta));
        write_all_atomic(&files)
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
        let ema = match &meta.ema {
            None => None,
            Some(e) => {
                let path = dir.join(CHECKPOINT_EMA_FILE);
                let bytes = read_file(&path)?;
                e.file.verify(&path, &bytes)?;
                let template = cfg.init(&device, 0)?.valid();
                Some(Ema {
                    decay: e.decay,
                    model: load_model_bytes(template, &path, bytes)?,
                })
            }
        };
        Ok(Self {
            cfg,
            device,
            model,
            optim,
            lr,
            steps: meta.steps,
            ema,
            ema_regret_only: false,
            loss_weights: [1.0; 4],
            pending: None,
            pending_steps: 0,
            io: Default::default(),
            resident: None,
        })
    }
}

/// The [`Losses`] of one step's `[4]` read-back (critic, mean regret, immediate regret,
/// policy).
fn losses_of(v: &[f32]) -> Losses {
    let [c, r, i, p] = [0, 1, 2, 3].map(|k| f64::from(v[k]));
    Losses {
        critic: c,
        mean_regret: r,
        immediate_regret: i,
        policy: p,
        total: c + r + i + p,
    }
}
