//! Passes that must equal the full forward pass: the recurrent step against the unroll, grouped
//! memory rows, critic rows, a separate mean-regret encoder, partial and head-selected
//! evaluations.

use super::*;

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
