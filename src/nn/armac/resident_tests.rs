//! The device-resident reservoir rows ([`ArmacLearner::train_step_resident`]): the same
//! training as uploading the drawn rows, one upload per step, the changed rows written once.

use crate::nn::armac::tensors::cpu_device;
use burn::tensor::Device;

use super::io_tests::{assert_losses_close, close};
use super::synthetic::synthetic_legal;
use super::*;

fn small_cfg() -> ArmacNetConfig {
    ArmacNetConfig::new(7, 4)
        .with_encoder_hidden(16)
        .with_head_hidden(16)
}

/// A reservoir row: tensor, legal actions, target over every action.
#[derive(Clone)]
struct Row {
    own: Vec<f32>,
    legal: Vec<bool>,
    target: Vec<f32>,
}

fn random_row(cfg: &ArmacNetConfig, rng: &mut SplitMix64, policy: bool) -> Row {
    let a = cfg.num_actions;
    let legal = synthetic_legal(rng, a);
    let target = if policy {
        let mut p = vec![0.0; a];
        p[legal.iter().position(|&l| l).expect("one legal action")] = 1.0;
        p
    } else {
        rng.symmetric_vec_f32(a, 1.0)
    };
    Row {
        own: rng.symmetric_vec_f32(cfg.input_size, 1.0),
        legal,
        target,
    }
}

/// The row in the tables' layout: tensor, legal mask, target masked to the legal actions.
fn table_row(r: &Row) -> Vec<f32> {
    let mut v = r.own.clone();
    v.extend(r.legal.iter().map(|&l| f32::from(u8::from(l))));
    v.extend(
        r.target
            .iter()
            .zip(&r.legal)
            .map(|(&x, &l)| if l { x } else { 0.0 }),
    );
    v
}

/// `replay` plus the drawn rows as the host path uploads them (regret rows, then policy rows).
fn host_batch(replay: &TrainBatch, tables: &[Vec<Row>; 2], step: &ResidentStep) -> TrainBatch {
    let mut b = replay.clone();
    let a = tables[0][0].legal.len();
    let zeros = vec![0.0; a];
    for (k, table) in tables.iter().enumerate() {
        for (&slot, &w) in step.draws[k].slots.iter().zip(&step.draws[k].weights) {
            let r = &table[slot];
            let is_regret = k == 0;
            b.push(&TrainRow {
                own: &r.own,
                both0: &r.own,
                both1: &r.own,
                legal: &r.legal,
                action: 0,
                critic_target: [0.0; 2],
                critic_weight: 0.0,
                regret_target: if is_regret { &r.target } else { &zeros },
                regret_weight: if is_regret { w } else { 0.0 },
                immediate_target: &zeros,
                immediate_weight: 0.0,
                policy_target: if is_regret { &zeros } else { &r.target },
                policy_weight: if is_regret { 0.0 } else { w },
            });
        }
    }
    b
}

/// Three steps: the first writes every row, the second a few changed ones, the third none.
/// Returns the steps and the tables as they stand at each step.
fn scenario(cfg: &ArmacNetConfig, capacity: usize) -> Vec<(ResidentStep, [Vec<Row>; 2])> {
    let mut rng = SplitMix64::new(17);
    let mut tables: [Vec<Row>; 2] = [false, true].map(|p| {
        (0..capacity)
            .map(|_| random_row(cfg, &mut rng, p))
            .collect()
    });
    let mut out = Vec::new();
    for k in 0..3 {
        let changed: Vec<usize> = match k {
            0 => (0..capacity).collect(),
            1 => vec![1, 4, capacity - 1],
            _ => Vec::new(),
        };
        let updates = [0, 1].map(|t| {
            for &s in changed.iter().filter(|_| k > 0) {
                tables[t][s] = random_row(cfg, &mut rng, t == 1);
            }
            ResidentUpdate {
                slots: changed.clone(),
                rows: changed
                    .iter()
                    .flat_map(|&s| table_row(&tables[t][s]))
                    .collect(),
            }
        });
        let draws = [0, 1].map(|_| {
            let slots: Vec<usize> = (0..9).map(|_| rng.below(capacity)).collect();
            let weights = (0..9).map(|_| 0.5 + rng.next_f64() as f32).collect();
            ResidentDraw { slots, weights }
        });
        let step = ResidentStep { updates, draws };
        out.push((step, tables.clone()));
    }
    out
}

fn replay_batch(cfg: &ArmacNetConfig) -> TrainBatch {
    let mut b = synthetic_train_batch(cfg, 12, 5);
    b.regret_weight.iter_mut().for_each(|w| *w = 0.0);
    b.policy_weight.iter_mut().for_each(|w| *w = 0.0);
    b
}

/// Resident steps on `device`: one upload (after the catch-up uploads of a step that rewrites
/// more than a chunk) and no read-back each, the losses summed on the
/// device; returns the loss sums, the upload bytes of each step and the learner's outputs
/// afterwards on a probe batch.
fn resident_run(
    device: &Device,
    capacity: usize,
    chunk_rows: usize,
) -> ([f64; 4], Vec<u64>, ActOutput) {
    let cfg = small_cfg();
    let replay = replay_batch(&cfg);
    let mut learner = ArmacLearner::new(cfg.clone(), device, 1e-3, 9);
    learner
        .enable_resident_memory_in_chunks(capacity, chunk_rows)
        .unwrap();
    let mut bytes = Vec::new();
    let width = resident_width(&cfg);
    for (step, _) in scenario(&cfg, capacity) {
        let before = learner.io();
        learner.train_step_resident(&replay, &step);
        let io = learner.io() - before;
        let catch_up = resident_catch_up_uploads(&step.updates, chunk_rows, width) as u64;
        assert_eq!((io.uploads, io.readbacks), (1 + catch_up, 0), "{io:?}");
        bytes.push(io.upload_bytes);
    }
    let (sums, n) = learner.take_loss_sums();
    assert_eq!(n, 3);
    (
        sums,
        bytes,
        learner.evaluate(&synthetic_act_batch(&cfg, 5, 3)),
    )
}

/// The resident path trains exactly as uploading the drawn rows (the same losses and the same
/// weights afterwards, within `f32` summation order), and uploads the replay rows, the
/// changed rows and two floats per drawn row, no more; with the tables whole, in uneven
/// chunks (4 + 2 rows) and in chunks of one row.
#[test]
fn resident_rows_train_as_the_uploaded_rows_with_one_upload_per_step() {
    for chunk_rows in [6, 4, 1, 64] {
        resident_matches_the_host_path(chunk_rows);
    }
    // The first step rewrites both tables (6 + 6 rows of 15 floats): apart in chunks of 4
    // (three rows an upload) and of 1 (a row an upload), in the step's own upload with 64-row
    // chunks.
    let cfg = small_cfg();
    let first = &scenario(&cfg, 6)[0].0.updates;
    let width = resident_width(&cfg);
    assert_eq!(resident_catch_up_uploads(first, 4, width), 4);
    assert_eq!(resident_catch_up_uploads(first, 1, width), 12);
    assert_eq!(resident_catch_up_uploads(first, 64, width), 0);
}

fn resident_matches_the_host_path(chunk_rows: usize) {
    let cfg = small_cfg();
    let capacity = 6;
    let (sums, bytes, probe) = resident_run(&cpu_device(), capacity, chunk_rows);
    let replay = replay_batch(&cfg);
    let mut host = ArmacLearner::new(cfg.clone(), &cpu_device(), 1e-3, 9);
    let mut replay_only = ArmacLearner::new(cfg.clone(), &cpu_device(), 1e-3, 9);
    let before = replay_only.io();
    replay_only.train_step_deferred(&replay);
    let replay_bytes = (replay_only.io() - before).upload_bytes;
    for (k, (step, tables)) in scenario(&cfg, capacity).into_iter().enumerate() {
        host.train_step_deferred(&host_batch(&replay, &tables, &step));
        let width = resident_width(&cfg);
        let extra: usize = (0..2)
            .map(|t| step.updates[t].slots.len() * (1 + width) + step.draws[t].slots.len() * 2)
            .sum();
        assert_eq!(
            bytes[k],
            replay_bytes + 4 * extra as u64,
            "step {k}, chunks of {chunk_rows}"
        );
    }
    let (want, _) = host.take_loss_sums();
    let what = format!("chunks of {chunk_rows}, resident vs host rows");
    assert_losses_close(&sums, &want, 1e-5, &what);
    let got = host.evaluate(&synthetic_act_batch(&cfg, 5, 3));
    for (x, y) in probe.mean_regret.iter().zip(&got.mean_regret) {
        assert!(close(f64::from(*x), f64::from(*y), 1e-4), "{x} vs {y}");
    }
    for (x, y) in probe.avg_policy.iter().zip(&got.avg_policy) {
        assert!(close(f64::from(*x), f64::from(*y), 1e-4), "{x} vs {y}");
    }
}

/// Bad input is refused: capacity bounds, recurrent nets, a step without tables, slots out of
/// range, repeated update slots.
#[test]
fn resident_memory_refuses_what_it_cannot_hold() {
    let mut learner = ArmacLearner::new(small_cfg(), &cpu_device(), 1e-3, 1);
    assert!(learner.enable_resident_memory(0).is_err());
    assert!(learner.enable_resident_memory_in_chunks(4, 0).is_err());
    assert!(
        learner
            .enable_resident_memory(RESIDENT_MAX_CAPACITY + 1)
            .is_err()
    );
    let rec = small_cfg().with_recurrent(true);
    let mut r = ArmacLearner::new(rec, &cpu_device(), 1e-3, 1);
    assert!(r.enable_resident_memory(4).is_err());
    let replay = replay_batch(&small_cfg());
    let no_tables = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        learner.train_step_resident(&replay, &ResidentStep::default())
    }));
    assert!(no_tables.is_err());
    let width = resident_width(&small_cfg());
    for (slots, draw) in [(vec![0, 0], vec![]), (vec![], vec![4])] {
        let mut l = ArmacLearner::new(small_cfg(), &cpu_device(), 1e-3, 1);
        l.enable_resident_memory(4).unwrap();
        let step = ResidentStep {
            updates: [
                ResidentUpdate {
                    rows: vec![0.0; slots.len() * width],
                    slots,
                },
                ResidentUpdate::default(),
            ],
            draws: [
                ResidentDraw {
                    weights: vec![1.0; draw.len()],
                    slots: draw,
                },
                ResidentDraw::default(),
            ],
        };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            l.train_step_resident(&replay, &step)
        }));
        assert!(r.is_err());
    }
}

/// The resident path on the wgpu backend (CI: Mesa's software Vulkan driver): one upload and
/// no read-back per step, the same upload bytes and, within `f32` tolerance, the same losses
/// and trained weights as on flex. Opt-in: needs a Vulkan driver.
/// `cargo test --release --features wgpu --lib wgpu -- --ignored`
#[cfg(feature = "wgpu")]
#[test]
#[ignore = "needs a Vulkan driver"]
fn resident_rows_on_wgpu_upload_once_and_match_flex() {
    let gpu = crate::nn::select_device("wgpu").unwrap();
    let (on_gpu, gpu_bytes, gpu_probe) = resident_run(&gpu, 6, 4);
    let (on_cpu, cpu_bytes, cpu_probe) = resident_run(&cpu_device(), 6, 4);
    assert_eq!(gpu_bytes, cpu_bytes);
    assert_losses_close(&on_gpu, &on_cpu, 1e-4, "wgpu vs flex");
    for (x, y) in gpu_probe.mean_regret.iter().zip(&cpu_probe.mean_regret) {
        assert!(close(f64::from(*x), f64::from(*y), 1e-3), "{x} vs {y}");
    }
}

/// Tables larger than a device takes in one buffer (lavapipe refuses about 128 MiB; these are
/// 192 MB each: the FCPA network's 175-float rows at `nlhe_fcpa.toml`'s 2^18 slots) live in
/// chunks: a step that writes and draws rows in the first and the last chunk runs, and its
/// losses are finite. Opt-in: needs a Vulkan driver.
#[cfg(feature = "wgpu")]
#[test]
#[ignore = "needs a Vulkan driver"]
fn resident_tables_beyond_one_buffer_on_wgpu_train() {
    let gpu = crate::nn::select_device("wgpu").unwrap();
    let cfg = ArmacNetConfig::new(175, 4)
        .with_encoder_hidden(16)
        .with_head_hidden(16);
    let capacity = 1 << 18;
    let mut learner = ArmacLearner::new(cfg.clone(), &gpu, 1e-3, 3);
    learner.enable_resident_memory(capacity).unwrap();
    let mut rng = SplitMix64::new(4);
    let slots = vec![0, 1, capacity - 2, capacity - 1];
    let step = ResidentStep {
        updates: [false, true].map(|policy| ResidentUpdate {
            slots: slots.clone(),
            rows: (0..slots.len())
                .flat_map(|_| table_row(&random_row(&cfg, &mut rng, policy)))
                .collect(),
        }),
        draws: [0, 1].map(|_| ResidentDraw {
            slots: vec![capacity - 1, 0, capacity - 2, 1],
            weights: vec![1.0; 4],
        }),
    };
    learner.train_step_resident(&replay_batch(&cfg), &step);
    let (sums, n) = learner.take_loss_sums();
    assert_eq!(n, 1);
    assert!(sums.iter().all(|x| x.is_finite()), "{sums:?}");
    assert!(sums[1] > 0.0 && sums[3] > 0.0, "{sums:?}");
}
