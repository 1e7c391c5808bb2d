//! ARMAC learner and inference throughput on synthetic batches (the workloads behind
//! `armac-bench learner`; `scripts/bench_learner.sh` times the PyTorch peer beside them).

use crate::nn::armac::{
    ArmacLearner, ArmacNetConfig, ArmacPolicyNet, push_synthetic_memory_rows, synthetic_act_batch,
    synthetic_seq_batch, synthetic_train_batch,
};
use burn::tensor::Device;
use std::time::Instant;

use super::{Result, median};
use serde_json::{Value, json};

/// Training throughput: optimizer steps per second of [`ArmacLearner::train_step`] at
/// `batch_size` rows on `device`, after two warm-up steps.
///
/// # Panics
/// If `cfg` is invalid.
pub fn bench_train_steps(
    cfg: ArmacNetConfig,
    device: &Device,
    batch_size: usize,
    memory_rows: usize,
    steps: usize,
) -> f64 {
    let mut batch = synthetic_train_batch(&cfg, batch_size, 2);
    push_synthetic_memory_rows(&cfg, &mut batch, memory_rows, 3);
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

/// ARMAC learner: optimizer steps per second of the feed-forward network (all heads and
/// losses) on a burn device (`--device flex|wgpu|cuda`, default the CPU backend), median of
/// --repeats timed blocks of --steps.
#[derive(clap::Args, Debug, Clone)]
pub struct LearnerArgs {
    /// Rows with every target (trajectory rows).
    #[arg(long, default_value_t = 2048)]
    pub batch: usize,
    /// Reservoir-memory rows added per head: this many mean-regret-only rows and as many
    /// average-policy-only rows (`armac.memory_batch`).
    #[arg(long, default_value_t = 0)]
    pub memory_rows: usize,
    #[arg(long, default_value_t = 20)]
    pub steps: usize,
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// Information-state tensor length (Leduc: 30).
    #[arg(long, default_value_t = 30)]
    pub input: usize,
    #[arg(long, default_value_t = 3)]
    pub actions: usize,
    #[arg(long, default_value_t = 128)]
    pub hidden: usize,
    #[arg(long, default_value_t = 2)]
    pub layers: usize,
    /// Recurrent network (Appendix F) trained on `--batch` sequences of this many steps each
    /// (`nlhe_fcpa_recurrent.toml`: 64 sequences of 32 steps, input 108); 0 = feed-forward.
    #[arg(long, default_value_t = 0)]
    pub time: usize,
    /// Burn device: flex (CPU), wgpu or cuda (when compiled in), or default.
    #[arg(long, default_value = "flex")]
    pub device: String,
}

/// Runs `armac-bench learner` (see [`LearnerArgs`]); one JSON object per output line.
pub fn learner(args: &LearnerArgs) -> Result<Vec<Value>> {
    let LearnerArgs {
        batch,
        memory_rows,
        steps,
        repeats,
        input,
        actions,
        hidden,
        layers,
        time,
        device,
    } = args.clone();
    let mut lines = Vec::new();
    use crate::nn::armac::ArmacNetConfig;
    let cfg = ArmacNetConfig {
        input_size: input,
        num_actions: actions,
        encoder_hidden: hidden,
        encoder_layers: layers,
        head_hidden: hidden,
        recurrent: time > 0,
        zero_init_heads: false,
        separate_regret_encoder: false,
    };
    let backend = device;
    let device = crate::nn::select_device(&backend)?;
    let rates: Vec<f64> = (0..repeats.max(1))
        .map(|_| {
            if time > 0 {
                bench_train_steps_seq(cfg.clone(), &device, batch, time, steps)
            } else {
                bench_train_steps(cfg.clone(), &device, batch, memory_rows, steps)
            }
        })
        .collect();
    lines.push(
        json!({"bench": "learner", "backend": backend, "batch": batch, "hidden": hidden,
               "layers": layers, "time": time, "input": input, "actions": actions, "memory_rows": memory_rows,
               "steps_per_second": median(rates)}),
    );
    Ok(lines)
}
