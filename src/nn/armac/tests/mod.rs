//! Tests of the ARMAC network: shapes, masking, initialisation, the learner on synthetic data
//! and snapshots; checkpoints and weight averaging are in `checkpoints`, recurrent, grouped and
//! partial passes in `passes`.
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

mod checkpoints;
mod passes;
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

fn flat_weights(model: &ArmacNet) -> Vec<f32> {
    let mut c = CollectFloats(Vec::new());
    model.visit(&mut c);
    c.0.into_iter()
        .flat_map(|t| t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap())
        .collect()
}
