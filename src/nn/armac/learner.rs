//! The learner: losses of every head, Adam (β1 = 0) steps, checkpoints ([`ArmacLearner`]).

use super::*;

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
}

/// Exponential moving average of the learner's weights (plain tensors on its device).
pub(super) struct Ema {
    pub(super) decay: f64,
    pub(super) model: ArmacNet,
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
        let terms = grouped_terms(&self.model, &self.device, &self.cfg, batch);
        self.apply(terms)
    }

    /// [`Self::train_step`] with every row through the full forward pass (the reference the
    /// grouped pass is tested against).
    #[cfg(test)]
    pub(super) fn train_step_full(&mut self, batch: &TrainBatch) -> Losses {
        let d = &self.device;
        let (b, n_in, a) = (batch.rows(), self.cfg.input_size, self.cfg.num_actions);
        let inputs = [&batch.own, &batch.both0, &batch.both1];
        let legal = tensor2(batch.legal.clone(), b, a, d);
        let out = forward_plain(&self.model, d, inputs, b, n_in, legal, Heads::ALL);
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
        let [wc, wr, wi, wp] = self.loss_weights;
        let total = c.clone().mul_scalar(wc)
            + r.clone().mul_scalar(wr)
            + i.clone().mul_scalar(wi)
            + p.clone().mul_scalar(wp);
        let grads = GradientsParams::from_grads(total.backward(), &self.model);
        let values: Vec<f32> = Tensor::cat(vec![c, r, i, p], 0)
            .detach()
            .into_data()
            .convert::<f32>()
            .try_to_vec::<f32>()
            .expect("f32 losses");
        self.model = self.optim.step(self.lr, self.model.clone(), grads);
        self.update_ema();
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

    /// The critic of the current weights alone (`q0`, `q1`; no gradient tracking), equal to
    /// those fields of [`Self::evaluate`] at a fraction of its cost. Feed-forward nets.
    ///
    /// # Panics
    /// If the batch does not match the config.
    pub fn evaluate_critic(&self, batch: &ActBatch) -> ActOutput {
        let device = self.device.clone().without_autodiff();
        evaluate_select_on(&self.model.valid(), &device, batch, Heads::CRITIC)
            .unwrap_or_else(|e| panic!("ArmacLearner evaluate_critic: {e}"))
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
        let optim = self
            .optim
            .to_record()
            .into_bytes()
            .map_err(|e| NnError::Serialize {
                what: "the optimizer",
                msg: e.to_string(),
            })?
            .to_vec();
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
        })
    }
}

/// The four weighted loss terms (`[1]` each): critic, mean regret, immediate regret, policy.
pub(super) fn loss_terms(out: ArmacOutput, t: &TrainBatch, a: usize, d: &Device) -> [Tensor<1>; 4] {
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

/// The four loss terms of a non-empty batch. Rows that train only information-state heads
/// (reservoir-memory rows) skip the critic's inputs and the heads they do not train, rows that
/// train only the critic and the immediate-regret head skip the other two heads; the losses are
/// the same sums over a permutation of the rows.
fn grouped_terms(
    model: &ArmacNet,
    d: &Device,
    cfg: &ArmacNetConfig,
    batch: &TrainBatch,
) -> [Tensor<1>; 4] {
    let (b, n_in, a) = (batch.rows(), cfg.input_size, cfg.num_actions);
    let Some(groups) = row_groups(batch) else {
        let inputs = [&batch.own, &batch.both0, &batch.both1];
        let legal = tensor2(batch.legal.clone(), b, a, d);
        let out = forward_plain(model, d, inputs, b, n_in, legal, Heads::ALL);
        return loss_terms(out, batch, a, d);
    };
    let mut parts = Vec::new();
    let mut order = Vec::with_capacity(b);
    for (heads, idx) in groups {
        let n = idx.len();
        let legal = tensor2(gather(&batch.legal, &idx, a), n, a, d);
        let own = gather(&batch.own, &idx, n_in);
        // Without the critic only `own` is read.
        let (both0, both1) = if heads.critic {
            (
                gather(&batch.both0, &idx, n_in),
                gather(&batch.both1, &idx, n_in),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        parts.push(forward_plain(
            model,
            d,
            [&own, &both0, &both1],
            n,
            n_in,
            legal,
            heads,
        ));
        order.extend(idx);
    }
    let out = ArmacOutput::cat(parts);
    loss_terms(out, &batch.select_targets(&order, a), a, d)
}

/// What the rows of one group need from the network: every output when a row has a critic
/// or immediate-regret target and a mean-regret or average-policy target too; the critic and
/// the immediate-regret head for the rows with only those targets (the replay's rows when the
/// reservoirs train the other two heads); the mean-regret and/or average-policy heads alone for
/// the others.
const ROW_GROUPS: [Heads; 5] = [
    Heads::ALL,
    Heads {
        critic: true,
        immediate_regret: true,
        ..Heads::NONE
    },
    Heads::MEAN_REGRET,
    Heads::AVG_POLICY,
    Heads {
        mean_regret: true,
        avg_policy: true,
        ..Heads::NONE
    },
];

/// The batch's rows grouped by what they need ([`ROW_GROUPS`]; rows without any weight are
/// left out), or `None` when every row needs the full pass (or none needs anything).
fn row_groups(t: &TrainBatch) -> Option<Vec<(Heads, Vec<usize>)>> {
    let mut groups: Vec<(Heads, Vec<usize>)> =
        ROW_GROUPS.iter().map(|&h| (h, Vec::new())).collect();
    for i in 0..t.rows() {
        let critic = t.critic_weight[i] != 0.0 || t.immediate_weight[i] != 0.0;
        let regret = t.regret_weight[i] != 0.0;
        let policy = t.policy_weight[i] != 0.0;
        let g = match (critic, regret, policy) {
            (false, false, false) => continue,
            (true, false, false) => 1,
            (true, _, _) => 0,
            (false, true, false) => 2,
            (false, false, true) => 3,
            (false, true, true) => 4,
        };
        groups[g].1.push(i);
    }
    let partial: usize = groups[1..].iter().map(|(_, v)| v.len()).sum();
    if partial == 0 {
        return None;
    }
    groups.retain(|(_, v)| !v.is_empty());
    Some(groups)
}

/// Number of row groups of `t` (0 when every row takes the full pass).
#[cfg(test)]
pub(super) fn row_groups_len(t: &TrainBatch) -> usize {
    row_groups(t).map_or(0, |g| g.len())
}

/// The `width`-long rows `idx` of the row-major `data`, in that order.
fn gather(data: &[f32], idx: &[usize], width: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(idx.len() * width);
    for &i in idx {
        out.extend_from_slice(&data[i * width..(i + 1) * width]);
    }
    out
}
