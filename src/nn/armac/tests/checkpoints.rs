//! Saving and loading the network: round trips, damaged files named, half-precision
//! snapshots, Polyak averaging and Adam's beta1 across a checkpoint.

use super::*;

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
    // Memory rows too, so that the grouped pass runs on the GPU backend.
    let mut train = synthetic_train_batch(&cfg, 32, 1);
    push_synthetic_memory_rows(&cfg, &mut train, 8, 3);
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

/// Reservoir snapshots in half precision: the file is about half the size of the f32 one,
/// loads back into exactly the network `rounded(F16)` holds in memory, and its acting policy
/// (normalised ReLU of the mean-regret head), average policy and critic values stay within
/// the stated tolerances of the full-precision network.
#[test]
fn half_precision_snapshots_round_trip_and_stay_close() {
    use crate::policy::probs::normalized_relu;
    let cfg = small_cfg();
    let dir = scratch_dir("f16");
    let mut learner = ArmacLearner::new(cfg.clone(), &cpu(), 3e-3, 7);
    let batch = synthetic_train_batch(&cfg, 64, 4);
    for _ in 0..30 {
        learner.train_step(&batch);
    }
    let full = learner.snapshot();
    let (p16, p32) = (dir.join("net16.bpk"), dir.join("net32.bpk"));
    full.save_file_as(&p16, SnapshotPrecision::F16).unwrap();
    full.save_file_as(&p32, SnapshotPrecision::F32).unwrap();
    let (n16, n32) = (
        std::fs::metadata(&p16).unwrap().len() as f64,
        std::fs::metadata(&p32).unwrap().len() as f64,
    );
    // Two bytes saved per weight (the rest of the file is the format's names and shapes).
    let saved = n32 - n16;
    let weights = full.num_weights() as f64;
    assert!(
        (saved - 2.0 * weights).abs() <= 0.05 * 2.0 * weights,
        "f16 file {n16} bytes, f32 file {n32} bytes, {weights} weights"
    );

    let probe = synthetic_act_batch(&cfg, 50, 9);
    let loaded = ArmacPolicyNet::load_file(cfg.clone(), &p16).unwrap();
    let rounded = full.clone().rounded(SnapshotPrecision::F16);
    let (lo, ro, fo) = (
        loaded.evaluate(&probe),
        rounded.evaluate(&probe),
        full.evaluate(&probe),
    );
    assert_eq!(
        lo, ro,
        "the f16 file loads into the rounded network exactly"
    );
    let exact32 = ArmacPolicyNet::load_file(cfg.clone(), &p32).unwrap();
    assert_eq!(exact32.evaluate(&probe), fo, "f32 files are exact");
    assert!(
        fo.mean_regret.iter().any(|&x| x.abs() > 1e-3),
        "the trained heads are not trivially zero"
    );

    // Tolerances: policies within 5e-3 in total variation per row, values within 5e-3 of
    // (1 + |q|).
    let a = cfg.num_actions;
    for row in 0..50 {
        let r = row * a..(row + 1) * a;
        let legal: Vec<bool> = probe.legal[r.clone()].iter().map(|&x| x > 0.5).collect();
        let tv = |x: &[f32], y: &[f32]| -> f32 {
            0.5 * x.iter().zip(y).map(|(p, q)| (p - q).abs()).sum::<f32>()
        };
        let pi_full = normalized_relu(&fo.mean_regret[r.clone()], &legal);
        let pi_half = normalized_relu(&lo.mean_regret[r.clone()], &legal);
        assert!(tv(&pi_full, &pi_half) <= 5e-3, "row {row}: π^j moved");
        assert!(tv(&fo.avg_policy[r.clone()], &lo.avg_policy[r.clone()]) <= 5e-3);
    }
    assert_close(&fo.q0, &lo.q0, 5e-3, "q0");
    assert_close(&fo.q1, &lo.q1, 5e-3, "q1");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The Polyak average is `avg ← d·avg + (1 − d)·θ` with the ramped `d` after every step,
/// the snapshot hands it out, and a checkpoint keeps it.
#[test]
fn polyak_average_follows_its_formula_and_survives_a_checkpoint() {
    let cfg = small_cfg();
    let train = synthetic_train_batch(&cfg, 16, 1);
    let probe = synthetic_act_batch(&cfg, 8, 2);
    let mut l = ArmacLearner::new(cfg.clone(), &cpu(), 1e-2, 4);
    l.set_polyak(0.9);
    let mut want = flat_weights(&l.model.valid());
    for n in 0..25u64 {
        l.train_step(&train);
        let d = 0.9f64.min((1.0 + n as f64) / (10.0 + n as f64)) as f32;
        let raw = flat_weights(&l.model.valid());
        for (w, r) in want.iter_mut().zip(&raw) {
            *w = d * *w + (1.0 - d) * r;
        }
    }
    let got = flat_weights(&l.snapshot().model);
    assert_close(&got, &want, 1e-5, "polyak weights");
    let raw = flat_weights(&l.model.valid());
    assert!(got.iter().zip(&raw).any(|(a, b)| (a - b).abs() > 1e-4));

    let dir = scratch_dir("polyak");
    l.save(&dir).unwrap();
    assert!(dir.join(CHECKPOINT_EMA_FILE).exists());
    let mut back = ArmacLearner::load(cfg.clone(), &cpu(), 1e-2, &dir).unwrap();
    assert_eq!(back.polyak(), 0.9);
    assert_eq!(
        back.snapshot().evaluate(&probe),
        l.snapshot().evaluate(&probe)
    );
    l.train_step(&train);
    back.train_step(&train);
    assert_outputs_close(
        &back.snapshot().evaluate(&probe),
        &l.snapshot().evaluate(&probe),
        1e-5,
    );
    // A corrupt average is an error naming its file.
    std::fs::write(dir.join(CHECKPOINT_EMA_FILE), b"garbage").unwrap();
    let e = ArmacLearner::load(cfg, &cpu(), 1e-2, &dir)
        .unwrap_err()
        .to_string();
    assert!(e.contains(CHECKPOINT_EMA_FILE), "{e}");
    // Turned off, the snapshot is the raw network again.
    l.set_polyak(0.0);
    assert_eq!(l.snapshot().evaluate(&probe), l.evaluate(&probe));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `set_adam_beta1` changes the steps (momentum) and keeps the optimizer's moments: a learner
/// saved, loaded and given β1 again continues exactly as the uninterrupted one.
#[test]
fn adam_beta1_changes_the_steps_and_survives_a_checkpoint() {
    let cfg = small_cfg();
    let train = synthetic_train_batch(&cfg, 16, 1);
    let probe = synthetic_act_batch(&cfg, 8, 2);
    let mut plain = ArmacLearner::new(cfg.clone(), &cpu(), 1e-2, 4);
    let mut momentum = ArmacLearner::new(cfg.clone(), &cpu(), 1e-2, 4);
    momentum.set_adam_beta1(0.9);
    assert_eq!(plain.evaluate(&probe), momentum.evaluate(&probe));
    for _ in 0..3 {
        plain.train_step(&train);
        momentum.train_step(&train);
    }
    assert_ne!(plain.evaluate(&probe), momentum.evaluate(&probe));

    let dir = scratch_dir("beta1");
    momentum.save(&dir).unwrap();
    let mut back = ArmacLearner::load(cfg, &cpu(), 1e-2, &dir).unwrap();
    back.set_adam_beta1(0.9);
    momentum.train_step(&train);
    back.train_step(&train);
    assert_outputs_close(&back.evaluate(&probe), &momentum.evaluate(&probe), 1e-6);
    let _ = std::fs::remove_dir_all(&dir);
}
