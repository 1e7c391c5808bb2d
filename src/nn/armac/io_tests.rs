//! The learner's transfer accounting ([`DeviceIo`]): one upload per step, losses kept on the
//! device until they are read at a log point, and the same losses on every backend.

use crate::nn::armac::tensors::cpu_device;
use burn::tensor::Device;

use super::*;

fn small_cfg() -> ArmacNetConfig {
    ArmacNetConfig::new(7, 4)
        .with_encoder_hidden(16)
        .with_head_hidden(16)
}

/// Trajectory rows and reservoir-memory rows (the grouped pass, several row groups).
fn mixed_batch(cfg: &ArmacNetConfig) -> TrainBatch {
    let mut batch = synthetic_train_batch(cfg, 24, 3);
    batch.regret_weight.iter_mut().for_each(|w| *w = 0.0);
    batch.policy_weight.iter_mut().for_each(|w| *w = 0.0);
    push_synthetic_memory_rows(cfg, &mut batch, 6, 4);
    batch
}

pub(super) fn close(x: f64, y: f64, tol: f64) -> bool {
    (x - y).abs() <= tol * (1.0 + x.abs().max(y.abs()))
}

/// Asserts that the four loss sums `got` and `want` agree within `tol` (relative, see
/// [`close`]); `what` names the comparison in the message.
pub(super) fn assert_losses_close(got: &[f64; 4], want: &[f64; 4], tol: f64, what: &str) {
    for k in 0..4 {
        assert!(
            close(got[k], want[k], tol),
            "loss {k}, {what}: {} vs {}",
            got[k],
            want[k]
        );
    }
}

/// `steps` deferred steps on `device`: asserts one upload and no read-back per step and one
/// read-back for the loss sums; returns those sums and the upload bytes per step.
fn deferred_steps(device: &Device, batch: &TrainBatch, steps: u64) -> ([f64; 4], u64) {
    let mut learner = ArmacLearner::new(small_cfg(), device, 1e-3, 9);
    let start = learner.io();
    let mut bytes = Vec::new();
    for step in 0..steps {
        let before = learner.io();
        learner.train_step_deferred(batch);
        let io = learner.io() - before;
        assert_eq!(io.uploads, 1, "step {step}: {io:?}");
        assert_eq!(io.readbacks, 0, "step {step}: {io:?}");
        assert!(io.ops > 0, "step {step}: {io:?}");
        bytes.push(io.upload_bytes);
    }
    let before = learner.io();
    let (sums, n) = learner.take_loss_sums();
    let read = learner.io() - before;
    assert_eq!(n, steps);
    assert_eq!(
        (read.uploads, read.readbacks, read.readback_bytes),
        (0, 1, 16)
    );
    let total = learner.io() - start;
    assert_eq!((total.uploads, total.readbacks), (steps, 1));
    assert!(bytes.windows(2).all(|w| w[0] == w[1]), "{bytes:?}");
    (sums, bytes[0])
}

/// Deferred steps upload each batch once, read nothing back until the loss sums are taken,
/// and train exactly as the steps that read their losses back; the upload is the batch's
/// host data (inputs of the rows' groups, targets and weights), no more.
#[test]
fn deferred_steps_upload_once_and_read_back_at_the_log_point() {
    let cfg = small_cfg();
    let batch = mixed_batch(&cfg);
    let (sums, bytes) = deferred_steps(&cpu_device(), &batch, 4);
    let mut eager = ArmacLearner::new(cfg.clone(), &cpu_device(), 1e-3, 9);
    let mut want = [0.0f64; 4];
    for _ in 0..4 {
        let before = eager.io();
        let l = eager.train_step(&batch);
        assert_eq!((eager.io() - before).readbacks, 1);
        for (w, x) in want
            .iter_mut()
            .zip([l.critic, l.mean_regret, l.immediate_regret, l.policy])
        {
            *w += x;
        }
    }
    for k in 0..4 {
        assert!(
            close(sums[k], want[k], 1e-6),
            "loss {k}: {} vs {}",
            sums[k],
            want[k]
        );
    }
    // The critic rows carry both players' tensors and the acting player, the memory rows only
    // their own tensor; every row carries its legal mask and 4 targets of A values and 6 scalars.
    let (n_in, a) = (cfg.input_size, cfg.num_actions);
    let (critic_rows, memory_rows) = (24, 12);
    let floats = critic_rows * (2 * n_in + 1) + memory_rows * n_in + 36 * (a + 4 * a + 6);
    assert_eq!(bytes, 4 * floats as u64);
    // Nothing deferred, nothing read.
    let before = eager.io();
    assert_eq!(eager.take_loss_sums(), ([0.0; 4], 0));
    assert_eq!(
        eager.io() - before,
        DeviceIo {
            ops: 0,
            ..DeviceIo::default()
        }
    );
}

/// A net that divides its inputs by `input_scale` sends the factor to a device once: the
/// first step uploads it beside the batch, every later step uploads the batch alone (the same
/// bytes as an unscaled net's), and evaluating on the device without autodiff adds one upload
/// there the first time only.
#[test]
fn the_input_scale_crosses_to_the_device_once() {
    let cfg = small_cfg();
    let batch = mixed_batch(&cfg);
    let scale: Vec<f32> = (0..cfg.input_size).map(|i| 1.0 + i as f32).collect();
    let scaled_cfg = cfg.clone().with_input_scale(scale);
    let mut plain = ArmacLearner::new(cfg, &cpu_device(), 1e-3, 9);
    let mut learner = ArmacLearner::new(scaled_cfg, &cpu_device(), 1e-3, 9);
    let mut uploads = Vec::new();
    for _ in 0..3 {
        let before = plain.io();
        plain.train_step_deferred(&batch);
        let plain_io = plain.io() - before;
        let before = learner.io();
        learner.train_step_deferred(&batch);
        let io = learner.io() - before;
        uploads.push(io.uploads);
        if uploads.len() > 1 {
            assert_eq!(io.upload_bytes, plain_io.upload_bytes, "{io:?}");
        }
    }
    assert_eq!(uploads, [2, 1, 1]);
    let act = synthetic_act_batch(learner.config(), 5, 3);
    let evals: Vec<u64> = (0..3)
        .map(|_| {
            let before = learner.io();
            learner.evaluate(&act);
            (learner.io() - before).uploads
        })
        .collect();
    assert_eq!(evals[0], evals[1] + 1, "{evals:?}");
    assert_eq!(evals[1], evals[2], "{evals:?}");
}

/// The recurrent learner's deferred steps upload once and read nothing back either.
#[test]
fn deferred_sequence_steps_upload_once() {
    let cfg = ArmacNetConfig::new(5, 3)
        .with_encoder_hidden(8)
        .with_head_hidden(8)
        .with_recurrent(true);
    let seq = synthetic_seq_batch(&cfg, 3, 4, 5);
    let mut deferred = ArmacLearner::new(cfg.clone(), &cpu_device(), 1e-3, 2);
    let mut eager = ArmacLearner::new(cfg, &cpu_device(), 1e-3, 2);
    let mut want = 0.0;
    for _ in 0..2 {
        let before = deferred.io();
        deferred.train_step_seq_deferred(&seq).unwrap();
        let io = deferred.io() - before;
        assert_eq!((io.uploads, io.readbacks), (1, 0), "{io:?}");
        want += eager.train_step_seq(&seq).unwrap().total;
    }
    let (sums, n) = deferred.take_loss_sums();
    assert_eq!(n, 2);
    assert!(close(sums.iter().sum(), want, 1e-6), "{sums:?} vs {want}");
}

/// The accounting on the wgpu backend (CI: Mesa's software Vulkan driver): one upload and no
/// read-back per step between two log points, one read-back at the log point, the same upload
/// bytes as flex, and the same losses as the flex learner from the same seed and batch within
/// `f32` tolerance. Opt-in: needs a Vulkan driver.
/// `cargo test --release --features wgpu --lib wgpu -- --ignored`
#[cfg(feature = "wgpu")]
#[test]
#[ignore = "needs a Vulkan driver"]
fn deferred_learner_on_wgpu_uploads_once_and_matches_flex() {
    let batch = mixed_batch(&small_cfg());
    let gpu = crate::nn::select_device("wgpu").unwrap();
    let (on_gpu, gpu_bytes) = deferred_steps(&gpu, &batch, 5);
    let (on_cpu, cpu_bytes) = deferred_steps(&cpu_device(), &batch, 5);
    assert_eq!(gpu_bytes, cpu_bytes);
    assert_losses_close(&on_gpu, &on_cpu, 1e-4, "wgpu vs flex");
}
