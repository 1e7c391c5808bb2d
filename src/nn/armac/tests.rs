use super::*;
use crate::nn::armac::checkpoint::CollectFloats;
use crate::nn::armac::forward::acting_players;
use crate::nn::armac::grouped::row_groups_len;
use crate::nn::armac::learner::adam;
use crate::nn::armac::tensors::cpu_device;
use crate::nn::armac::tensors::tensor2;
use crate::nn::armac::tensors::to_vec;
use burn::module::Module;
use burn::tensor::Device;
use burn::tensor::Tensor;
use burn::tensor::TensorData;
use std::path::PathBuf;

fn small_cfg() -> ArmacNetConfig {
    ArmacNetConfig::new(7, 4)
        .with_encoder_hidden(16)
        .with_head_hidden(16)
}

fn cpu() -> Device {
    cpu_device()
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("armac_nn_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn assert_close(a: &[f32], b: &[f32], tol: f32, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= tol * (1.0 + x.abs().max(y.abs())),
            "{what}[{i}]: {x} vs {y}"
        );
    }
}

fn assert_outputs_close(a: &ActOutput, b: &ActOutput, tol: f32) {
    assert_close(&a.q0, &b.q0, tol, "q0");
    assert_close(&a.q1, &b.q1, tol, "q1");
    assert_close(&a.mean_regret, &b.mean_regret, tol, "mean_regret");
    assert_close(
        &a.immediate_regret,
        &b.immediate_regret,
        tol,
        "immediate_regret",
    );
    assert_close(&a.avg_policy, &b.avg_policy, tol, "avg_policy");
}

#[test]
fn forward_shapes() {
    let cfg = small_cfg();
    let d = cpu();
    let net = cfg.init(&d, 3).unwrap();
    let b = 5;
    let x = || Tensor::<2>::ones([b, cfg.input_size], &d);
    let legal = Tensor::<2>::ones([b, cfg.num_actions], &d);
    let out = net.forward(x(), [x(), x()], legal);
    for t in [
        &out.q[0],
        &out.q[1],
        &out.mean_regret,
        &out.immediate_regret,
        &out.avg_logits,
    ] {
        assert_eq!(t.dims(), [b, cfg.num_actions]);
    }
    assert_eq!(net.encode(x()).dims(), [b, cfg.representation_size()]);
    assert_eq!(net.num_actions(), 4);
    assert_eq!(net.input_size(), 7);

    let out = ArmacPolicyNet::init(cfg.clone(), 3)
        .unwrap()
        .evaluate(&synthetic_act_batch(&cfg, b, 1));
    assert_eq!(out.rows, b);
    for v in [
        &out.q0,
        &out.q1,
        &out.mean_regret,
        &out.immediate_regret,
        &out.avg_policy,
    ] {
        assert_eq!(v.len(), b * cfg.num_actions);
    }
    // An empty batch is fine.
    let empty = ArmacPolicyNet::init(cfg, 3)
        .unwrap()
        .evaluate(&ActBatch::new());
    assert_eq!(empty.rows, 0);
    assert!(empty.avg_policy.is_empty());
}

#[test]
fn forward_acting_equals_forward() {
    let cfg = small_cfg();
    let d = cpu();
    let net = cfg.init(&d, 4).unwrap();
    let mut batch = synthetic_act_batch(&cfg, 6, 3);
    // Rows 1 and 4 are player 1's decisions.
    for r in [1, 4] {
        let row = r * cfg.input_size..(r + 1) * cfg.input_size;
        let theirs = batch.both1[row.clone()].to_vec();
        batch.own[row].copy_from_slice(&theirs);
    }
    let acting = acting_players(&batch.own, &batch.both0, &batch.both1, cfg.input_size)
        .expect("every own row is a both row");
    assert_eq!(acting, vec![0.0, 1.0, 0.0, 0.0, 1.0, 0.0]);
    let t = |v: &Vec<f32>, w: usize| tensor2(v.clone(), 6, w, &d);
    let both = || [t(&batch.both0, 7), t(&batch.both1, 7)];
    let a = net.forward(t(&batch.own, 7), both(), t(&batch.legal, 4));
    let b = net.forward_acting(both(), tensor2(acting, 6, 1, &d), t(&batch.legal, 4));
    assert_close(&to_vec(a.mean_regret), &to_vec(b.mean_regret), 1e-6, "W");
    assert_close(&to_vec(a.avg_logits), &to_vec(b.avg_logits), 1e-6, "logits");
    assert_close(&to_vec(a.q[0].clone()), &to_vec(b.q[0].clone()), 1e-6, "q0");
    // A batch whose own rows match neither entry takes the general path.
    batch.own[0] += 1.0;
    assert!(acting_players(&batch.own, &batch.both0, &batch.both1, 7).is_none());
    let out = ArmacPolicyNet::init(cfg, 4).unwrap().evaluate(&batch);
    assert!(out.avg_policy.iter().all(|x| x.is_finite()));
}

#[test]
fn zero_initialised_heads_start_uniform() {
    let cfg = small_cfg();
    let batch = synthetic_act_batch(&cfg, 16, 4);
    let zero = ArmacPolicyNet::init(cfg.clone().with_zero_init_heads(true), 3)
        .unwrap()
        .evaluate(&batch);
    assert!(zero.mean_regret.iter().all(|&w| w == 0.0));
    assert!(zero.immediate_regret.iter().all(|&w| w == 0.0));
    for r in 0..16 {
        let legal = &batch.legal[r * 4..(r + 1) * 4];
        let n = legal.iter().filter(|&&l| l > 0.5).count() as f32;
        for (a, &l) in legal.iter().enumerate() {
            let p = zero.avg_policy[r * 4 + a];
            let want = if l > 0.5 { 1.0 / n } else { 0.0 };
            assert!((p - want).abs() < 1e-6, "row {r}: {p} vs {want}");
        }
    }
    // Random heads do not start uniform (the default of the network config).
    let random = ArmacPolicyNet::init(cfg, 3).unwrap().evaluate(&batch);
    assert!(random.mean_regret.iter().any(|&w| w.abs() > 1e-3));
}

#[test]
fn masking_gives_zero_probability_and_no_nan() {
    let cfg = small_cfg();
    let net = ArmacPolicyNet::init(cfg.clone(), 5).unwrap();
    let mut batch = synthetic_act_batch(&cfg, 64, 9);
    // Extreme inputs must not produce NaN either.
    for v in batch.own.iter_mut().take(7 * 8) {
        *v *= 1e6;
    }
    let out = net.evaluate(&batch);
    let a = cfg.num_actions;
    for i in 0..batch.rows(a) {
        let legal: Vec<bool> = batch.legal[i * a..(i + 1) * a]
            .iter()
            .map(|&x| x > 0.5)
            .collect();
        let pol = out.row(&out.avg_policy, i);
        let cur = out.current_policy(i, &legal);
        let sum: f32 = pol.iter().sum();
        assert!((sum - 1.0).abs() < 1e-5, "row {i} sums to {sum}");
        assert!((cur.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        for k in 0..a {
            for v in [&out.q0, &out.q1, &out.mean_regret, &out.immediate_regret] {
                assert!(v[i * a + k].is_finite());
                if !legal[k] {
                    assert_eq!(v[i * a + k], 0.0);
                }
            }
            assert!(pol[k].is_finite() && pol[k] >= 0.0);
            if !legal[k] {
                assert_eq!(pol[k], 0.0, "illegal action {k} of row {i}");
                assert_eq!(cur[k], 0.0);
            }
        }
    }
}

#[test]
fn initialisation_is_reproducible_from_the_seed() {
    let cfg = small_cfg();
    let batch = synthetic_act_batch(&cfg, 8, 2);
    let a = ArmacPolicyNet::init(cfg.clone(), 11)
        .unwrap()
        .evaluate(&batch);
    let b = ArmacPolicyNet::init(cfg.clone(), 11)
        .unwrap()
        .evaluate(&batch);
    let c = ArmacPolicyNet::init(cfg, 12).unwrap().evaluate(&batch);
    assert_eq!(a, b);
    assert_ne!(a.q0, c.q0);
}

#[test]
fn learner_fits_a_synthetic_regression() {
    let cfg = small_cfg().with_encoder_hidden(32).with_head_hidden(32);
    let batch = synthetic_train_batch(&cfg, 64, 4);
    let mut learner = ArmacLearner::new(cfg, &cpu(), 3e-3, 7);
    let first = learner.train_step(&batch);
    let mut last = first;
    for _ in 0..200 {
        last = learner.train_step(&batch);
    }
    let pairs = [
        ("critic", first.critic, last.critic),
        ("mean_regret", first.mean_regret, last.mean_regret),
        (
            "immediate_regret",
            first.immediate_regret,
            last.immediate_regret,
        ),
        ("policy", first.policy, last.policy),
        ("total", first.total, last.total),
    ];
    for (name, a, b) in pairs {
        assert!(a.is_finite() && b.is_finite());
        assert!(b < a / 10.0, "{name}: {a} -> {b}");
    }
    assert_eq!(learner.steps(), 201);
}

#[test]
fn zero_weights_give_zero_losses_and_bad_batches_are_rejected() {
    let cfg = small_cfg();
    let mut batch = synthetic_train_batch(&cfg, 6, 4);
    for w in [
        &mut batch.critic_weight,
        &mut batch.regret_weight,
        &mut batch.immediate_weight,
        &mut batch.policy_weight,
    ] {
        w.iter_mut().for_each(|x| *x = 0.0);
    }
    let mut learner = ArmacLearner::new(cfg.clone(), &cpu(), 1e-3, 1);
    assert_eq!(learner.train_step(&batch), Losses::default());

    let mut bad = synthetic_train_batch(&cfg, 3, 4);
    bad.regret_target.pop();
    let e = bad.validate(&cfg).unwrap_err().to_string();
    assert!(e.contains("regret_target"), "{e}");
    let mut bad = synthetic_train_batch(&cfg, 3, 4);
    bad.legal[bad.action[0]] = 0.0;
    let e = bad.validate(&cfg).unwrap_err().to_string();
    assert!(e.contains("illegal"), "{e}");
    assert!(ArmacNetConfig::new(0, 3).validate().is_err());
    assert!(ArmacLearner::try_new(ArmacNetConfig::new(3, 0), &cpu(), 1e-3, 1).is_err());
}

#[test]
fn snapshot_matches_the_learner() {
    let cfg = small_cfg();
    let mut learner = ArmacLearner::new(cfg.clone(), &cpu(), 1e-3, 3);
    let train = synthetic_train_batch(&cfg, 16, 1);
    for _ in 0..3 {
        learner.train_step(&train);
    }
    let batch = synthetic_act_batch(&cfg, 10, 2);
    let snap = learner.snapshot();
    assert_outputs_close(&learner.evaluate(&batch), &snap.evaluate(&batch), 1e-6);
    // The snapshot is frozen: training on does not change it.
    let before = snap.evaluate(&batch);
    learner.train_step(&train);
    assert_eq!(snap.evaluate(&batch), before);
    assert_ne!(learner.evaluate(&batch), before);
}

#[test]
fn policy_net_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<ArmacPolicyNet>();
    let cfg = small_cfg();
    let net = ArmacPolicyNet::init(cfg.clone(), 1).unwrap();
    let batch = synthetic_act_batch(&cfg, 4, 3);
    let expect = net.evaluate(&batch);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| assert_eq!(net.evaluate(&batch), expect));
        }
    });
}

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

/// All sixteen subsets of the outputs.
fn head_subsets() -> impl Iterator<Item = Heads> {
    (0..16u8).map(|m| Heads {
        critic: m & 1 != 0,
        mean_regret: m & 2 != 0,
        immediate_regret: m & 4 != 0,
        avg_policy: m & 8 != 0,
    })
}

/// `got`, computed for `heads`, holds `full`'s fields where `heads` asks for them and empty
/// ones elsewhere.
fn assert_selected(got: &ActOutput, full: &ActOutput, heads: Heads, name: &str) {
    let pick = |on: bool, v: &[f32]| if on { v.to_vec() } else { Vec::new() };
    let ctx = format!("{name}, {heads:?}");
    assert_eq!(got.q0, pick(heads.critic, &full.q0), "{ctx}");
    assert_eq!(got.q1, pick(heads.critic, &full.q1), "{ctx}");
    let w = pick(heads.mean_regret, &full.mean_regret);
    assert_eq!(got.mean_regret, w, "{ctx}");
    let imm = pick(heads.immediate_regret, &full.immediate_regret);
    assert_eq!(got.immediate_regret, imm, "{ctx}");
    let pi = pick(heads.avg_policy, &full.avg_policy);
    assert_eq!(got.avg_policy, pi, "{ctx}");
}

fn small_recurrent() -> ArmacNetConfig {
    ArmacNetConfig::new(5, 3)
        .with_encoder_hidden(8)
        .with_head_hidden(8)
        .with_recurrent(true)
}

#[test]
fn recurrent_step_matches_the_unroll() {
    let cfg = small_recurrent();
    let (s, t) = (3, 4);
    let seq = synthetic_seq_batch(&cfg, s, t, 5);
    let mut learner = ArmacLearner::new(cfg.clone(), &cpu(), 1e-3, 2);
    learner.train_step_seq(&seq).unwrap();
    let net = learner.snapshot();
    // Learner-side unroll (no grad) on the snapshot's model.
    let d = cpu();
    let (n_in, a) = (cfg.input_size, cfg.num_actions);
    let obs = |v: &Vec<f32>| Tensor::<3>::from_data(TensorData::new(v.clone(), [s, t, n_in]), &d);
    let acting: Vec<f32> = seq.acting_player.iter().map(|&p| p as f32).collect();
    let (out, _) = net.model().forward_sequence(
        [obs(&seq.obs0), obs(&seq.obs1)],
        None,
        tensor2(acting, s * t, 1, &d),
        tensor2(seq.targets.legal.clone(), s * t, a, &d),
    );
    let unrolled_w = to_vec(out.mean_regret);
    let unrolled_q1 = to_vec(out.q[1].clone());
    // Actor-side stepping.
    let mut state = net.initial_state(s).unwrap();
    for step in 0..t {
        let rows = |v: &Vec<f32>, w: usize| -> Vec<f32> {
            (0..s)
                .flat_map(|i| v[(i * t + step) * w..(i * t + step + 1) * w].to_vec())
                .collect()
        };
        let batch = StepBatch {
            rows: s,
            obs0: rows(&seq.obs0, n_in),
            obs1: rows(&seq.obs1, n_in),
            acting_player: (0..s).map(|i| seq.acting_player[i * t + step]).collect(),
            legal: rows(&seq.targets.legal, a),
        };
        let (out, next) = net.step(&batch, &state).unwrap();
        // Every subset of the outputs equals the full step's, and the state advances the same.
        for heads in head_subsets() {
            let (got, got_next) = net.step_heads(&batch, &state, heads).unwrap();
            assert_eq!(got_next, next, "{heads:?}");
            assert_eq!((got.rows, got.num_actions), (s, a));
            assert_selected(&got, &out, heads, "recurrent step");
        }
        state = next;
        for i in 0..s {
            let r = (i * t + step) * a..(i * t + step + 1) * a;
            assert_close(
                out.row(&out.mean_regret, i),
                &unrolled_w[r.clone()],
                1e-5,
                "W",
            );
            assert_close(out.row(&out.q1, i), &unrolled_q1[r], 1e-5, "q1");
        }
    }
    // Feed-forward nets refuse the recurrent entry points.
    let ff = ArmacPolicyNet::init(small_cfg(), 1).unwrap();
    assert!(ff.initial_state(1).is_err());
    let mut ffl = ArmacLearner::new(small_cfg(), &cpu(), 1e-3, 1);
    assert!(ffl.train_step_seq(&seq).is_err());
}

#[test]
fn recurrent_learner_fits_sequences() {
    let cfg = small_recurrent()
        .with_encoder_hidden(16)
        .with_head_hidden(16);
    let seq = synthetic_seq_batch(&cfg, 8, 6, 3);
    let mut learner = ArmacLearner::new(cfg, &cpu(), 3e-3, 1);
    let first = learner.train_step_seq(&seq).unwrap();
    let mut last = first;
    for _ in 0..150 {
        last = learner.train_step_seq(&seq).unwrap();
    }
    assert!(last.total < first.total / 4.0, "{first:?} -> {last:?}");
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

fn flat_weights(model: &ArmacNet) -> Vec<f32> {
    let mut c = CollectFloats(Vec::new());
    model.visit(&mut c);
    c.0.into_iter()
        .flat_map(|t| t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap())
        .collect()
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

/// Memory rows (no critic or immediate-regret weight) go through the cheaper grouped pass:
/// same losses and the same Adam steps as the full forward pass over every row.
#[test]
fn grouped_pass_equals_the_full_pass() {
    let cfg = small_cfg();
    let mut batch = synthetic_train_batch(&cfg, 12, 3);
    push_synthetic_memory_rows(&cfg, &mut batch, 5, 4);
    // Full rows after memory rows, and one row that trains both heads only.
    let tail = synthetic_train_batch(&cfg, 3, 5);
    for i in 0..tail.rows() {
        let (n_in, a) = (cfg.input_size, cfg.num_actions);
        let r = i * a..(i + 1) * a;
        let legal: Vec<bool> = tail.legal[r.clone()].iter().map(|&x| x > 0.5).collect();
        let head_only = i == 0;
        batch.push(&TrainRow {
            own: &tail.own[i * n_in..(i + 1) * n_in],
            both0: &tail.both0[i * n_in..(i + 1) * n_in],
            both1: &tail.both1[i * n_in..(i + 1) * n_in],
            legal: &legal,
            action: tail.action[i],
            critic_target: tail.critic_target[i],
            critic_weight: if head_only { 0.0 } else { 1.0 },
            regret_target: &tail.regret_target[r.clone()],
            regret_weight: 2.0,
            immediate_target: &tail.immediate_target[r.clone()],
            immediate_weight: if head_only { 0.0 } else { 1.0 },
            policy_target: &tail.policy_target[r],
            policy_weight: 1.0,
        });
    }
    assert!(
        row_groups_len(&batch) >= 3,
        "the batch must exercise several groups"
    );
    grouped_steps_equal_full_steps(cfg, &batch, "");
}

/// Three steps of the grouped pass and of the full pass from the same weights: the same
/// losses and the same weights after them.
fn grouped_steps_equal_full_steps(cfg: ArmacNetConfig, batch: &TrainBatch, what: &str) {
    let mut grouped = ArmacLearner::new(cfg.clone(), &cpu(), 1e-3, 9);
    let mut full = ArmacLearner::new(cfg, &cpu(), 1e-3, 9);
    for step in 0..3 {
        let g = grouped.train_step(batch);
        let f = full.train_step_full(batch);
        for (name, x, y) in [
            ("critic", g.critic, f.critic),
            ("mean_regret", g.mean_regret, f.mean_regret),
            ("immediate", g.immediate_regret, f.immediate_regret),
            ("policy", g.policy, f.policy),
        ] {
            assert!(
                (x - y).abs() <= 1e-5 * (1.0 + y.abs()),
                "{what} step {step} {name}: grouped {x}, full {y}"
            );
        }
    }
    assert_close(
        &flat_weights(grouped.model()),
        &flat_weights(full.model()),
        1e-4,
        &format!("{what} weights after three steps"),
    );
}

/// With the reservoirs, the replay's rows train only the critic and the immediate-regret head:
/// they skip the other two heads (the second of `ROW_GROUPS`), with the same losses and the same Adam
/// steps as the full pass, with a shared or a separate mean-regret encoder.
#[test]
fn critic_rows_skip_the_memory_heads_and_equal_the_full_pass() {
    for separate in [false, true] {
        let cfg = small_cfg().with_separate_regret_encoder(separate);
        let mut batch = synthetic_train_batch(&cfg, 12, 3);
        batch.regret_weight.iter_mut().for_each(|w| *w = 0.0);
        batch.policy_weight.iter_mut().for_each(|w| *w = 0.0);
        push_synthetic_memory_rows(&cfg, &mut batch, 5, 4);
        assert_eq!(row_groups_len(&batch), 3, "critic, regret and policy rows");
        grouped_steps_equal_full_steps(cfg, &batch, &format!("separate = {separate}"));
    }
}

/// With its own encoder the mean-regret head reads features no other loss moves: a step on
/// critic, immediate-regret and policy losses alone leaves `W̄`'s outputs unchanged, while the
/// shared encoder lets them move. The grouped pass still equals the full pass.
#[test]
fn separate_regret_encoder_isolates_the_mean_regret_head() {
    let mut batch = synthetic_train_batch(&small_cfg(), 16, 5);
    batch.regret_weight.iter_mut().for_each(|w| *w = 0.0);
    let probe = synthetic_act_batch(&small_cfg(), 8, 6);
    let moved = |separate: bool| -> f32 {
        let cfg = small_cfg().with_separate_regret_encoder(separate);
        let mut learner = ArmacLearner::new(cfg, &cpu(), 1e-2, 3);
        let before = learner.evaluate(&probe).mean_regret;
        for _ in 0..3 {
            learner.train_step(&batch);
        }
        let after = learner.evaluate(&probe).mean_regret;
        before
            .iter()
            .zip(&after)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max)
    };
    assert_eq!(moved(true), 0.0);
    assert!(moved(false) > 1e-4, "the shared encoder should move W");

    let cfg = small_cfg().with_separate_regret_encoder(true);
    let mut mixed = synthetic_train_batch(&cfg, 10, 7);
    push_synthetic_memory_rows(&cfg, &mut mixed, 6, 8);
    let mut grouped = ArmacLearner::new(cfg.clone(), &cpu(), 1e-3, 4);
    let mut full = ArmacLearner::new(cfg.clone(), &cpu(), 1e-3, 4);
    for _ in 0..2 {
        let (g, f) = (grouped.train_step(&mixed), full.train_step_full(&mixed));
        assert!((g.mean_regret - f.mean_regret).abs() <= 1e-5 * (1.0 + f.mean_regret.abs()));
    }
    assert_close(
        &flat_weights(grouped.model()),
        &flat_weights(full.model()),
        1e-4,
        "weights",
    );
    assert!(
        ArmacLearner::try_new(cfg.with_recurrent(true), &cpu(), 1e-3, 1).is_err(),
        "recurrent nets refuse a separate regret encoder"
    );
}

/// `set_polyak_regret_only`: the snapshot's mean-regret head is the Polyak average's (equal to
/// a full average's after the same steps, and not the current head), every other output is the
/// current weights', and a net whose `W̄` reads the shared encoder refuses it.
#[test]
fn polyak_regret_only_averages_the_mean_regret_path_alone() {
    let cfg = small_cfg().with_separate_regret_encoder(true);
    let batch = synthetic_train_batch(&cfg, 16, 5);
    let probe = synthetic_act_batch(&cfg, 8, 6);
    let trained = |regret_only: bool| {
        let mut l = ArmacLearner::new(cfg.clone(), &cpu(), 1e-2, 3);
        l.set_polyak(0.99);
        l.set_polyak_regret_only(regret_only).unwrap();
        for _ in 0..20 {
            l.train_step(&batch);
        }
        (l.snapshot().evaluate(&probe), l.evaluate(&probe))
    };
    let (all, _) = trained(false);
    let (snap, cur) = trained(true);
    assert_close(
        &snap.mean_regret,
        &all.mean_regret,
        1e-6,
        "W̄ is the average's",
    );
    let gap = snap
        .mean_regret
        .iter()
        .zip(&cur.mean_regret)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max);
    assert!(gap > 1e-3, "the average differs from the current W̄ ({gap})");
    assert_close(&snap.q0, &cur.q0, 1e-6, "critic q0 is the current one");
    assert_close(&snap.q1, &cur.q1, 1e-6, "critic q1 is the current one");
    assert_close(
        &snap.avg_policy,
        &cur.avg_policy,
        1e-6,
        "π̄ is the current one",
    );
    let mut shared = ArmacLearner::new(small_cfg(), &cpu(), 1e-2, 3);
    assert!(shared.set_polyak_regret_only(true).is_err());
}

/// `small_cfg` with a shared or separate regret encoder after three learning steps (so no head
/// is at its initial weights).
fn trained_small(separate: bool) -> (ArmacNetConfig, ArmacLearner) {
    let cfg = small_cfg().with_separate_regret_encoder(separate);
    let mut learner = ArmacLearner::new(cfg.clone(), &cpu(), 1e-3, 5);
    let train = synthetic_train_batch(&cfg, 16, 1);
    for _ in 0..3 {
        learner.train_step(&train);
    }
    (cfg, learner)
}

#[test]
fn partial_evaluations_equal_the_full_one() {
    for separate in [false, true] {
        let (cfg, learner) = trained_small(separate);
        let snap = learner.snapshot();
        let batch = synthetic_act_batch(&cfg, 37, 4);
        let full = snap.evaluate(&batch);
        let two = snap.evaluate_policies(&batch).unwrap();
        assert_eq!((two.rows, two.num_actions), (37, cfg.num_actions));
        assert_eq!(two.mean_regret, full.mean_regret, "separate = {separate}");
        assert_eq!(two.avg_policy, full.avg_policy, "separate = {separate}");
        assert!(two.q0.is_empty() && two.q1.is_empty() && two.immediate_regret.is_empty());
        // The learner's targets: the snapshot's mean-regret head and the learner's critic.
        let w = snap.evaluate_mean_regret(&batch).unwrap();
        assert_eq!(w.mean_regret, full.mean_regret, "separate = {separate}");
        assert!(w.avg_policy.is_empty() && w.q0.is_empty());
        let learner_full = learner.evaluate(&batch);
        let critic = learner.evaluate_critic(&batch);
        assert_eq!(critic.q0, learner_full.q0, "separate = {separate}");
        assert_eq!(critic.q1, learner_full.q1, "separate = {separate}");
        assert!(critic.mean_regret.is_empty() && critic.avg_policy.is_empty());
        assert_eq!(learner.evaluate_critic(&ActBatch::default()).rows, 0);
        let empty = snap.evaluate_policies(&ActBatch::default()).unwrap();
        assert_eq!(empty.rows, 0);
    }
    let rec = ArmacPolicyNet::init(small_recurrent(), 1).unwrap();
    for e in [
        rec.evaluate_policies(&ActBatch::default()).unwrap_err(),
        rec.evaluate_mean_regret(&ActBatch::default()).unwrap_err(),
    ] {
        assert!(e.to_string().contains("feed-forward"), "{e}");
    }
}

/// Every subset of outputs through `evaluate_heads` equals those fields of `evaluate` bit for
/// bit and leaves the others empty: rows where either player acts, with a shared and a separate
/// regret encoder and on a recurrent net (one-step sequences), and rows whose `own` tensor is
/// neither player's (the full pass's fallback).
#[test]
fn selected_heads_equal_the_full_evaluation() {
    let mut nets: Vec<(String, ArmacNetConfig, ArmacPolicyNet)> = [false, true]
        .into_iter()
        .map(|separate| {
            let (cfg, learner) = trained_small(separate);
            (format!("separate = {separate}"), cfg, learner.snapshot())
        })
        .collect();
    let rec = small_recurrent().with_zero_init_heads(false);
    nets.push((
        "recurrent".into(),
        rec.clone(),
        ArmacPolicyNet::init(rec, 2).unwrap(),
    ));
    for (name, cfg, snap) in &nets {
        let n = cfg.input_size;
        let mut mixed = synthetic_act_batch(cfg, 23, 4);
        // Player 1 acts at the odd rows: `own` is then `both1`.
        for r in (1..23).step_by(2) {
            let rows = r * n..(r + 1) * n;
            let b0 = mixed.both0[rows.clone()].to_vec();
            mixed.both0[rows.clone()].copy_from_slice(&mixed.both1[rows.clone()]);
            mixed.both1[rows].copy_from_slice(&b0);
        }
        let mut foreign = mixed.clone();
        foreign.own.iter_mut().for_each(|x| *x += 0.25);
        for batch in [&mixed, &foreign] {
            let full = snap.evaluate(batch);
            assert!(
                full.avg_policy.iter().any(|&p| p > 0.0 && p < 1.0),
                "{name}"
            );
            assert!(full.immediate_regret.iter().any(|&x| x != 0.0), "{name}");
            for heads in head_subsets() {
                let got = snap.evaluate_heads(batch, heads).unwrap();
                assert_eq!((got.rows, got.num_actions), (23, cfg.num_actions));
                assert_selected(&got, &full, heads, name);
            }
        }
        // Without the critic the other players' tensors are not read.
        let own_only = ActBatch {
            own: mixed.own.clone(),
            legal: mixed.legal.clone(),
            ..ActBatch::default()
        };
        let w = snap.evaluate_heads(&own_only, Heads::MEAN_REGRET).unwrap();
        assert_eq!(w.mean_regret, snap.evaluate(&mixed).mean_regret, "{name}");
        let e = snap.evaluate_heads(&own_only, Heads::CRITIC).unwrap_err();
        assert!(e.to_string().contains("both0"), "{e}");
        let mut short = own_only.clone();
        short.own.pop();
        let e = snap.evaluate_heads(&short, Heads::MEAN_REGRET).unwrap_err();
        assert!(e.to_string().contains("`own`"), "{e}");
    }
}
