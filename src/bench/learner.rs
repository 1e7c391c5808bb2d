//! ARMAC learner and inference throughput on synthetic batches (the workloads behind
//! `armac-bench learner`; `scripts/bench_learner.sh` times the PyTorch peer beside them).

use crate::nn::Device;
use crate::nn::armac::{
    ArmacLearner, ArmacNetConfig, ArmacPolicyNet, DeviceIo, ResidentDraw, ResidentStep,
    ResidentUpdate, TrainBatch, push_synthetic_memory_rows, synthetic_act_batch,
    synthetic_seq_batch, synthetic_step_targets, synthetic_train_batch, train_step_flops,
};
use crate::util::SplitMix64;
use std::time::Instant;

use super::Result;
use serde_json::{Value, json};

/// What a timed block of learner steps measured.
#[derive(Clone, Copy, Debug, Default)]
pub struct TrainRate {
    /// Optimizer steps per second (the block ends with the read-back of its loss sums, so the
    /// device has finished every step it times).
    pub steps_per_second: f64,
    /// The learner's transfers and operations per step over the block, the final read-back
    /// of the losses included.
    pub io_per_step: [f64; 5],
    /// Matrix-product operations of one step ([`train_step_flops`]; 0 for recurrent nets).
    pub flops_per_step: f64,
}

/// `io / steps` as `[uploads, upload_bytes, readbacks, readback_bytes, ops]`.
fn per_step(io: DeviceIo, steps: usize) -> [f64; 5] {
    let n = steps.max(1) as f64;
    [
        io.uploads as f64 / n,
        io.upload_bytes as f64 / n,
        io.readbacks as f64 / n,
        io.readback_bytes as f64 / n,
        io.ops as f64 / n,
    ]
}

/// Training throughput of [`ArmacLearner::train_step_deferred`] at `batch_size` rows on
/// `device`, after two warm-up steps: `steps` steps, then one read-back of their losses. With
/// `in_step` > 0 the batch's critic and immediate-regret targets are computed in the step
/// ([`crate::nn::armac::StepTargets`], episodes of up to `in_step` rows), as a run's are.
///
/// # Panics
/// If `cfg` is invalid.
pub fn bench_train_steps(
    cfg: ArmacNetConfig,
    device: &Device,
    batch_size: usize,
    memory_rows: usize,
    steps: usize,
    in_step: usize,
) -> TrainRate {
    let mut batch = synthetic_train_batch(&cfg, batch_size, 2);
    with_step_targets(&mut batch, cfg.num_actions, in_step);
    push_synthetic_memory_rows(&cfg, &mut batch, memory_rows, 3);
    let flops_per_step = train_step_flops(&cfg, &batch);
    let mut learner = ArmacLearner::new(cfg, device, 1e-4, 1);
    for _ in 0..2 {
        learner.train_step(&batch);
    }
    let before = learner.io();
    let start = Instant::now();
    for _ in 0..steps {
        learner.train_step_deferred(&batch);
    }
    std::hint::black_box(learner.take_loss_sums());
    TrainRate {
        steps_per_second: steps as f64 / start.elapsed().as_secs_f64(),
        io_per_step: per_step(learner.io() - before, steps),
        flops_per_step,
    }
}

/// Gives the replay rows of `batch` step targets over episodes of up to `max_len` rows (none
/// for 0).
fn with_step_targets(batch: &mut TrainBatch, a: usize, max_len: usize) {
    if max_len > 0 {
        batch.step_targets = Some(synthetic_step_targets(batch, batch.rows(), a, max_len, 4));
    }
}

/// Where `armac-bench learner --device-memory` keeps its reservoir rows: tables of
/// `capacity` rows on the device, of which `changed` per table are rewritten every step.
#[derive(Clone, Copy, Debug)]
pub struct ResidentBench {
    pub capacity: usize,
    pub changed: usize,
}

/// [`bench_train_steps`] with the reservoir rows on the device
/// ([`ArmacLearner::train_step_resident`]): each step draws `memory_rows` slots of each table
/// and rewrites `r.changed` rows of each; the tables are filled before the timed steps.
///
/// # Panics
/// If `cfg` is invalid or recurrent, or `r.capacity` is 0.
pub fn bench_resident_steps(
    cfg: ArmacNetConfig,
    device: &Device,
    batch_size: usize,
    memory_rows: usize,
    steps: usize,
    r: ResidentBench,
    in_step: usize,
) -> TrainRate {
    let mut replay = synthetic_train_batch(&cfg, batch_size, 2);
    replay.regret_weight.iter_mut().for_each(|w| *w = 0.0);
    replay.policy_weight.iter_mut().for_each(|w| *w = 0.0);
    let mut flop_batch = replay.clone();
    with_step_targets(&mut replay, cfg.num_actions, in_step);
    push_synthetic_memory_rows(&cfg, &mut flop_batch, memory_rows, 3);
    let flops_per_step = train_step_flops(&cfg, &flop_batch);
    let a = cfg.num_actions;
    let mut rng = SplitMix64::new(5);
    let rows = |n: usize, rng: &mut SplitMix64| -> Vec<f32> {
        (0..n)
            .flat_map(|_| {
                let mut v = rng.symmetric_vec_f32(cfg.input_size, 1.0);
                v.extend(std::iter::repeat_n(1.0, a));
                v.extend(rng.symmetric_vec_f32(a, 1.0));
                v
            })
            .collect::<Vec<f32>>()
    };
    let step = |all: bool, rng: &mut SplitMix64| -> ResidentStep {
        let updates = [0, 1].map(|_| {
            let slots: Vec<usize> = if all {
                (0..r.capacity).collect()
            } else {
                let mut s: Vec<usize> = (0..r.changed).map(|_| rng.below(r.capacity)).collect();
                s.sort_unstable();
                s.dedup();
                s
            };
            ResidentUpdate {
                rows: rows(slots.len(), rng),
                slots,
            }
        });
        let draws = [0, 1].map(|_| ResidentDraw {
            slots: (0..memory_rows).map(|_| rng.below(r.capacity)).collect(),
            weights: vec![1.0; memory_rows],
        });
        ResidentStep { updates, draws }
    };
    let mut learner = ArmacLearner::new(cfg.clone(), device, 1e-4, 1);
    learner
        .enable_resident_memory(r.capacity)
        .expect("a feed-forward net and a valid capacity");
    let warm = step(true, &mut rng);
    learner.train_step_resident(&replay, &warm);
    learner.take_loss_sums();
    let plans: Vec<ResidentStep> = (0..steps).map(|_| step(false, &mut rng)).collect();
    let before = learner.io();
    let start = Instant::now();
    for p in &plans {
        learner.train_step_resident(&replay, p);
    }
    std::hint::black_box(learner.take_loss_sums());
    TrainRate {
        steps_per_second: steps as f64 / start.elapsed().as_secs_f64(),
        io_per_step: per_step(learner.io() - before, steps),
        flops_per_step,
    }
}

/// Recurrent training throughput: steps per second of [`ArmacLearner::train_step_seq`] on
/// `sequences × time` unrolls, after two warm-up steps. With `in_step` > 0 the critic and
/// immediate-regret targets are computed in the step (episodes of up to `in_step` rows), as a
/// run's are when its episodes fit one unroll; without, the batch carries them (and the
/// evaluation a run with host targets makes before each step is left out).
///
/// # Panics
/// If `cfg` is invalid or not recurrent.
pub fn bench_train_steps_seq(
    cfg: ArmacNetConfig,
    device: &Device,
    sequences: usize,
    time: usize,
    steps: usize,
    in_step: usize,
) -> TrainRate {
    let mut batch = synthetic_seq_batch(&cfg, sequences, time, 2);
    with_step_targets(&mut batch.targets, cfg.num_actions, in_step);
    let mut learner = ArmacLearner::new(cfg, device, 1e-4, 1);
    for _ in 0..2 {
        learner.train_step_seq(&batch).expect("recurrent config");
    }
    let before = learner.io();
    let start = Instant::now();
    for _ in 0..steps {
        learner
            .train_step_seq_deferred(&batch)
            .expect("recurrent config");
    }
    std::hint::black_box(learner.take_loss_sums());
    TrainRate {
        steps_per_second: steps as f64 / start.elapsed().as_secs_f64(),
        io_per_step: per_step(learner.io() - before, steps),
        flops_per_step: 0.0,
    }
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
/// --repeats timed blocks of --steps, with rows/s, achieved matrix-product FLOP/s and the
/// learner's transfers and operations per step.
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
    /// Keep the reservoir rows on the device (`armac.device_memory = "device"`): tables of
    /// this many rows each, from which every step draws `--memory-rows` slots; 0 uploads the
    /// drawn rows with each step.
    #[arg(long, default_value_t = 0)]
    pub device_memory: usize,
    /// With `--device-memory`: rows of each table rewritten per step (new reservoir samples).
    #[arg(long, default_value_t = 40)]
    pub changed_rows: usize,
    /// Compute the critic and immediate-regret targets inside the step (as a run
    /// does) over synthetic episodes of up to this many rows; 0: the batch carries
    /// them.
    #[arg(long, default_value_t = 0)]
    pub in_step: usize,
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
        device_memory,
        changed_rows,
        in_step,
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
        input_scale: Vec::new(),
    };
    let backend = device;
    let device = crate::nn::select_device(&backend)?;
    let mut rates: Vec<TrainRate> = (0..repeats.max(1))
        .map(|_| {
            if time > 0 {
                bench_train_steps_seq(cfg.clone(), &device, batch, time, steps, in_step)
            } else if device_memory > 0 {
                let r = ResidentBench {
                    capacity: device_memory,
                    changed: changed_rows,
                };
                bench_resident_steps(cfg.clone(), &device, batch, memory_rows, steps, r, in_step)
            } else {
                bench_train_steps(cfg.clone(), &device, batch, memory_rows, steps, in_step)
            }
        })
        .collect();
    rates.sort_by(|a, b| a.steps_per_second.total_cmp(&b.steps_per_second));
    let mid = rates[rates.len() / 2];
    let sps = mid.steps_per_second;
    let rows = if time > 0 {
        batch * time
    } else {
        batch + 2 * memory_rows
    };
    let [uploads, upload_bytes, readbacks, readback_bytes, ops] = mid.io_per_step;
    lines.push(
        json!({"bench": "learner", "backend": backend, "batch": batch, "hidden": hidden,
               "layers": layers, "time": time, "input": input, "actions": actions, "memory_rows": memory_rows,
               "device_memory": device_memory, "in_step": in_step,
               "steps_per_second": sps, "rows_per_second": sps * rows as f64,
               "flops_per_step": mid.flops_per_step, "flops_per_second": sps * mid.flops_per_step,
               "uploads_per_step": uploads, "upload_bytes_per_step": upload_bytes,
               "readbacks_per_step": readbacks, "readback_bytes_per_step": readback_bytes,
               "ops_per_step": ops}),
    );
    Ok(lines)
}
