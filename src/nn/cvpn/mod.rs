//! The counterfactual value-and-policy network (CVPN) of Student of Games: public belief state
//! in, both players' counterfactual values and the actor's policy per private state out.
//!
//! The input and the value normalisation are defined in [`crate::search::features`] (plain
//! data, no burn): `[public tensor | belief_0 | belief_1]` in, per player and private state the
//! CFV divided by the opponent's chance-weighted mass and by the game's largest payoff out.
//! [`CvpnLeaves`] answers a search's frontier queries with one forward for all of them.
//!
//! Network: `(Linear(hidden) → DoubleReLU) × layers`, then a value head `Linear(2P)` and a
//! policy head `Linear(P·A)` (logits of each private state's actions). Adam (β1 = 0.9).
//! Checkpoints: weights, Adam's state and a JSON record (config, steps, file lengths and
//! hashes), written atomically; a resumed learner continues with the same moments.

use crate::nn::armac::{
    FileCheck, NnError, NumberParams, double_relu, init_linear, read_file, write_all_atomic,
};
use crate::util::SplitMix64;
use burn::module::Module;
use burn::nn::Linear;
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer, OptimizerRecord};
use burn::store::ModuleRecord;
use burn::tensor::activation::log_softmax;
use burn::tensor::{Bytes, Device, Tensor, TensorData};
use serde::{Deserialize, Serialize};
use std::path::Path;

mod leaves;

pub use leaves::{CvpnLeaves, CvpnPokerLeaves, zero_sum_correct};

/// Weights file of a CVPN checkpoint directory.
pub const CVPN_MODEL_FILE: &str = "cvpn_model.bpk";
/// Metadata file of a CVPN checkpoint directory.
pub const CVPN_META_FILE: &str = "cvpn_meta.json";
/// Adam state file of a CVPN checkpoint directory.
pub const CVPN_OPTIMIZER_FILE: &str = "cvpn_optimizer.bin";
const CVPN_FORMAT: u32 = 1;

/// Sizes of a CVPN; stored in its checkpoints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CvpnConfig {
    /// The game's load string (checkpoints of another game are refused).
    pub game: String,
    /// Input length ([`crate::search::PbsEncoder::input_size`]).
    pub input_size: usize,
    /// Private states per player `P`.
    pub private_states: usize,
    /// Actions `A`.
    pub num_actions: usize,
    /// Width before each DoubleReLU.
    pub hidden: usize,
    /// Hidden layers (at least 1).
    pub layers: usize,
}

impl CvpnConfig {
    fn validate(&self) -> Result<(), NnError> {
        for (k, v) in [
            ("input_size", self.input_size),
            ("private_states", self.private_states),
            ("num_actions", self.num_actions),
            ("hidden", self.hidden),
            ("layers", self.layers),
        ] {
            if v == 0 {
                return Err(NnError::Config(format!("CVPN `{k}` must be at least 1")));
            }
        }
        Ok(())
    }
}

/// The network's weights.
#[derive(Module, Debug)]
pub struct CvpnModel {
    layers: Vec<Linear>,
    values: Linear,
    policy: Linear,
}

impl CvpnModel {
    fn init(cfg: &CvpnConfig, device: &Device, seed: u64) -> Self {
        let mut rng = SplitMix64::new(seed ^ 0xC5F9_0A11_D00D_F00D);
        let mut layers = Vec::with_capacity(cfg.layers);
        let mut width = cfg.input_size;
        for _ in 0..cfg.layers {
            layers.push(init_linear(&mut rng, width, cfg.hidden, true, device));
            width = 2 * cfg.hidden;
        }
        let values = init_linear(&mut rng, width, 2 * cfg.private_states, true, device);
        let policy = init_linear(
            &mut rng,
            width,
            cfg.private_states * cfg.num_actions,
            true,
            device,
        );
        NumberParams::apply(CvpnModel {
            layers,
            values,
            policy,
        })
    }

    /// `[B, input]` → (values `[B, 2P]`, policy logits `[B, P·A]`).
    fn forward(&self, x: Tensor<2>) -> (Tensor<2>, Tensor<2>) {
        let h = self.layers.iter().fold(x, |h, l| double_relu(l.forward(h)));
        (self.values.forward(h.clone()), self.policy.forward(h))
    }

    /// `[B, input]` → values `[B, 2P]` only (what leaf evaluation needs: the policy head is
    /// skipped).
    fn forward_values(&self, x: Tensor<2>) -> Tensor<2> {
        let h = self.layers.iter().fold(x, |h, l| double_relu(l.forward(h)));
        self.values.forward(h)
    }
}

/// Training examples, row-major.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CvpnBatch {
    /// `rows × input`.
    pub input: Vec<f32>,
    /// `rows × 2P` normalised value targets ([`crate::search::PbsEncoder::targets`]).
    pub values: Vec<f32>,
    /// `rows × 2P` value-loss weights (0 masks an entry).
    pub value_mask: Vec<f32>,
    /// `rows × P·A` policy targets (distributions over actions per private state), or empty
    /// for no policy loss.
    pub policy: Vec<f32>,
    /// `rows × P` policy-loss weights (0 masks a private state); empty with `policy`.
    pub policy_mask: Vec<f32>,
}

/// Losses of one step (before the step).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CvpnLosses {
    /// Mean squared error over unmasked value entries.
    pub value: f64,
    /// Cross-entropy per unmasked private state (0 without policy targets).
    pub policy: f64,
}

/// A CVPN with its optimizer.
pub struct Cvpn {
    cfg: CvpnConfig,
    device: Device,
    model: CvpnModel,
    optim: ModuleOptimizer,
    lr: f64,
    steps: u64,
}

impl std::fmt::Debug for Cvpn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cvpn")
            .field("cfg", &self.cfg)
            .field("lr", &self.lr)
            .field("steps", &self.steps)
            .finish_non_exhaustive()
    }
}

fn tensor2(data: Vec<f32>, rows: usize, cols: usize, device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(data, [rows, cols]), device)
}

fn to_vec(t: Tensor<2>) -> Vec<f32> {
    t.into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .expect("f32 tensor data")
}

fn check_len(what: &str, got: usize, want: usize) -> Result<(), NnError> {
    if got == want {
        Ok(())
    } else {
        Err(NnError::Batch(format!(
            "CVPN batch `{what}` has {got} entries, expected {want}"
        )))
    }
}

impl Cvpn {
    /// Fresh weights from `seed` on `device` (autodiff enabled on it), Adam with rate `lr`.
    pub fn new(cfg: CvpnConfig, device: &Device, lr: f64, seed: u64) -> Result<Cvpn, NnError> {
        cfg.validate()?;
        let device = device.clone().autodiff();
        let model = CvpnModel::init(&cfg, &device, seed);
        Ok(Cvpn {
            cfg,
            device,
            model,
            optim: AdamConfig::new().init(),
            lr,
            steps: 0,
        })
    }

    /// The network's sizes.
    pub fn config(&self) -> &CvpnConfig {
        &self.cfg
    }

    /// Adam steps taken.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    fn rows_of(&self, input: &[f32]) -> Result<usize, NnError> {
        if !input.len().is_multiple_of(self.cfg.input_size) {
            return Err(NnError::Batch(format!(
                "CVPN input has {} entries, not a multiple of the input size {}",
                input.len(),
                self.cfg.input_size
            )));
        }
        Ok(input.len() / self.cfg.input_size)
    }

    /// Normalised values (`rows × 2P`) and policy logits (`rows × P·A`) of `input` rows.
    pub fn predict(&self, input: &[f32]) -> Result<(Vec<f32>, Vec<f32>), NnError> {
        let b = self.rows_of(input)?;
        if b == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        let device = self.device.clone().without_autodiff();
        let x = tensor2(input.to_vec(), b, self.cfg.input_size, &device);
        let (v, p) = self.model.valid().forward(x);
        Ok((to_vec(v), to_vec(p)))
    }

    /// An inference copy of the current weights (see [`CvpnSnapshot`]).
    pub fn snapshot(&self) -> CvpnSnapshot {
        CvpnSnapshot {
            cfg: self.cfg.clone(),
            device: self.device.clone().without_autodiff(),
            model: self.model.valid(),
            version: self.steps,
        }
    }

    /// One Adam step on `batch`; returns the losses before the step.
    pub fn train_step(&mut self, batch: &CvpnBatch) -> Result<CvpnLosses, NnError> {
        let b = self.rows_of(&batch.input)?;
        let (p, a) = (self.cfg.private_states, self.cfg.num_actions);
        check_len("values", batch.values.len(), b * 2 * p)?;
        check_len("value_mask", batch.value_mask.len(), b * 2 * p)?;
        let with_policy = !batch.policy.is_empty();
        if with_policy {
            check_len("policy", batch.policy.len(), b * p * a)?;
            check_len("policy_mask", batch.policy_mask.len(), b * p)?;
        }
        if b == 0 {
            return Ok(CvpnLosses::default());
        }
        let d = &self.device;
        let x = tensor2(batch.input.clone(), b, self.cfg.input_size, d);
        let (v, logits) = self.model.forward(x);
        let n_value: f32 = batch.value_mask.iter().sum::<f32>().max(1.0);
        let y = tensor2(batch.values.clone(), b, 2 * p, d);
        let m = tensor2(batch.value_mask.clone(), b, 2 * p, d);
        let value = ((v - y).square() * m).sum().div_scalar(n_value);
        let mut total = value.clone();
        let policy = if with_policy {
            let n_policy: f32 = batch.policy_mask.iter().sum::<f32>().max(1.0);
            let logp = log_softmax(logits.reshape([b * p, a]), 1);
            let t = tensor2(batch.policy.clone(), b * p, a, d);
            let w = tensor2(batch.policy_mask.clone(), b * p, 1, d);
            let ce = (logp * t * w).sum().neg().div_scalar(n_policy);
            total = total + ce.clone();
            Some(ce)
        } else {
            None
        };
        let losses_now = |t: Tensor<1>| -> f64 {
            f64::from(
                t.detach()
                    .into_data()
                    .convert::<f32>()
                    .try_to_vec::<f32>()
                    .expect("f32 loss")[0],
            )
        };
        let out = CvpnLosses {
            value: losses_now(value),
            policy: policy.map_or(0.0, losses_now),
        };
        let grads = GradientsParams::from_grads(total.backward(), &self.model);
        self.model = self.optim.step(self.lr, self.model.clone(), grads);
        self.steps += 1;
        Ok(out)
    }

    /// Writes the weights, the optimizer's state and their record into `dir` (created if
    /// missing), atomically.
    pub fn save(&self, dir: &Path) -> Result<(), NnError> {
        let optim = crate::nn::pack::optimizer_bytes(self.optim.to_record()).map_err(|msg| {
            NnError::Serialize {
                what: "the CVPN optimizer",
                msg,
            }
        })?;
        self.write(dir, self.model.valid(), Some(optim))
    }

    /// Writes the weights alone, rounded to IEEE half precision, and their record into `dir`:
    /// a policy export of half the model file's bytes and no optimizer state. [`Self::load`]
    /// reads it back into f32 weights (equal to the rounded ones) with a fresh optimizer.
    pub fn save_weights_f16(&self, dir: &Path) -> Result<(), NnError> {
        let half = self.model.valid().map(&mut crate::nn::armac::CastFloats(
            burn::tensor::FloatDType::F16,
        ));
        self.write(dir, half, None)
    }

    fn write(&self, dir: &Path, model: CvpnModel, optim: Option<Vec<u8>>) -> Result<(), NnError> {
        std::fs::create_dir_all(dir).map_err(|source| NnError::Io {
            op: "cannot create",
            path: dir.to_path_buf(),
            source,
        })?;
        let bytes = model
            .into_record()
            .into_bytes()
            .map_err(|e| NnError::Serialize {
                what: "the CVPN",
                msg: e.to_string(),
            })?
            .to_vec();
        let meta = CvpnMeta {
            format: CVPN_FORMAT,
            config: self.cfg.clone(),
            steps: self.steps,
            model_file: FileCheck::of(&bytes),
            optimizer_file: optim.as_deref().map(FileCheck::of),
        };
        let meta = serde_json::to_vec_pretty(&meta).map_err(|e| NnError::Serialize {
            what: "the CVPN record",
            msg: e.to_string(),
        })?;
        let mut files = vec![(dir.join(CVPN_MODEL_FILE), bytes)];
        if let Some(optim) = optim {
            files.push((dir.join(CVPN_OPTIMIZER_FILE), optim));
        }
        files.push((dir.join(CVPN_META_FILE), meta));
        write_all_atomic(&files)
    }

    /// The configuration recorded in the checkpoint `dir` ([`Self::save`]), to check a
    /// checkpoint's game and sizes before loading it.
    pub fn recorded_config(dir: &Path) -> Result<CvpnConfig, NnError> {
        Ok(Self::read_meta(dir)?.1.config)
    }

    /// The checkpoint's metadata file (path and contents), refused as corrupt if unreadable.
    fn read_meta(dir: &Path) -> Result<(std::path::PathBuf, CvpnMeta), NnError> {
        let meta_path = dir.join(CVPN_META_FILE);
        let meta: CvpnMeta =
            serde_json::from_slice(&read_file(&meta_path)?).map_err(|e| NnError::Corrupt {
                path: meta_path.clone(),
                msg: e.to_string(),
            })?;
        Ok((meta_path, meta))
    }

    /// Loads a checkpoint written by [`Self::save`] onto `device`, checking that it is of
    /// `expected` (game and sizes) and that its files are intact. Adam's state is restored
    /// when the checkpoint has it (older ones start the optimizer afresh); the rate is `lr`.
    pub fn load(
        dir: &Path,
        expected: &CvpnConfig,
        device: &Device,
        lr: f64,
    ) -> Result<Cvpn, NnError> {
        let (meta_path, meta) = Self::read_meta(dir)?;
        if meta.format != CVPN_FORMAT {
            return Err(NnError::Corrupt {
                path: meta_path,
                msg: format!("format {} (this build reads {CVPN_FORMAT})", meta.format),
            });
        }
        if meta.config != *expected {
            return Err(NnError::Mismatch {
                path: meta_path,
                msg: format!("recorded {:?}, expected {:?}", meta.config, expected),
            });
        }
        let model_path = dir.join(CVPN_MODEL_FILE);
        let bytes = read_file(&model_path)?;
        meta.model_file.verify(&model_path, &bytes)?;
        let mut net = Cvpn::new(meta.config, device, lr, 0)?;
        let record = ModuleRecord::from_bytes(Bytes::from_bytes_vec(bytes))
            .map_err(|e| NnError::Corrupt {
                path: model_path.clone(),
                msg: e.to_string(),
            })?
            .cast_to_module_dtype();
        net.model = net
            .model
            .try_load_record(record)
            .map_err(|e| NnError::Mismatch {
                path: model_path,
                msg: e.to_string(),
            })?;
        net.steps = meta.steps;
        if let Some(check) = &meta.optimizer_file {
            let path = dir.join(CVPN_OPTIMIZER_FILE);
            let bytes = read_file(&path)?;
            check.verify(&path, &bytes)?;
            let record =
                OptimizerRecord::from_bytes(Bytes::from_bytes_vec(bytes)).map_err(|e| {
                    NnError::Corrupt {
                        path: path.clone(),
                        msg: e.to_string(),
                    }
                })?;
            net.optim = AdamConfig::new().init().load_record(record);
        }
        Ok(net)
    }
}

#[derive(Serialize, Deserialize)]
struct CvpnMeta {
    format: u32,
    config: CvpnConfig,
    steps: u64,
    model_file: FileCheck,
    #[serde(default)]
    optimizer_file: Option<FileCheck>,
}

/// Forward passes of a CVPN's weights: what a search's evaluator needs of a network, from the
/// learner's own [`Cvpn`] or from a broadcast [`CvpnSnapshot`].
pub trait CvpnForward: Send + Sync {
    /// The network's sizes.
    fn config(&self) -> &CvpnConfig;
    /// Normalised values (`rows × 2P`) and policy logits (`rows × P·A`) of `input` rows.
    fn predict(&self, input: &[f32]) -> Result<(Vec<f32>, Vec<f32>), NnError>;
    /// The values of [`Self::predict`] alone (implementations may skip the policy head).
    fn predict_values(&self, input: &[f32]) -> Result<Vec<f32>, NnError> {
        Ok(self.predict(input)?.0)
    }
}

impl<N: CvpnForward + ?Sized> CvpnForward for std::sync::Arc<N> {
    fn config(&self) -> &CvpnConfig {
        (**self).config()
    }
    fn predict(&self, input: &[f32]) -> Result<(Vec<f32>, Vec<f32>), NnError> {
        (**self).predict(input)
    }
    fn predict_values(&self, input: &[f32]) -> Result<Vec<f32>, NnError> {
        (**self).predict_values(input)
    }
}

impl CvpnForward for Cvpn {
    fn config(&self) -> &CvpnConfig {
        Cvpn::config(self)
    }
    fn predict(&self, input: &[f32]) -> Result<(Vec<f32>, Vec<f32>), NnError> {
        Cvpn::predict(self, input)
    }
}

/// An inference copy of a [`Cvpn`]'s weights (no autodiff, no optimiser state): what the
/// learner broadcasts to self-play actor and query-solver threads. Immutable; `version` is
/// the learner's step count when it was taken.
pub struct CvpnSnapshot {
    cfg: CvpnConfig,
    device: Device,
    model: CvpnModel,
    /// Learner steps of the weights.
    pub version: u64,
}

impl std::fmt::Debug for CvpnSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CvpnSnapshot")
            .field("cfg", &self.cfg)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl CvpnForward for CvpnSnapshot {
    fn config(&self) -> &CvpnConfig {
        &self.cfg
    }
    fn predict(&self, input: &[f32]) -> Result<(Vec<f32>, Vec<f32>), NnError> {
        Ok(match self.input_tensor(input)? {
            Some(x) => {
                let (v, p) = self.model.forward(x);
                (to_vec(v), to_vec(p))
            }
            None => (Vec::new(), Vec::new()),
        })
    }
    fn predict_values(&self, input: &[f32]) -> Result<Vec<f32>, NnError> {
        Ok(match self.input_tensor(input)? {
            Some(x) => to_vec(self.model.forward_values(x)),
            None => Vec::new(),
        })
    }
}

impl CvpnSnapshot {
    /// `input` as a `[B, input_size]` tensor (None for an empty batch); an error when its
    /// length is not a multiple of the input size.
    fn input_tensor(&self, input: &[f32]) -> Result<Option<Tensor<2>>, NnError> {
        let n = self.cfg.input_size;
        if !input.len().is_multiple_of(n) {
            return Err(NnError::Batch(format!(
                "CVPN input has {} entries, not a multiple of the input size {n}",
                input.len()
            )));
        }
        let b = input.len() / n;
        Ok((b > 0).then(|| tensor2(input.to_vec(), b, n, &self.device)))
    }
}

#[cfg(test)]
mod tests;
