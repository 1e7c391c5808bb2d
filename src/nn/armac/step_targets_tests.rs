//! Targets computed inside the step ([`StepTargets`]) train exactly as the same targets built
//! on the host from a separate critic evaluation, with one upload and no read-back per step.

use crate::nn::armac::tensors::cpu_device;
use burn::tensor::Device;

use super::grouped::row_groups_len;
use super::io_tests::assert_losses_close;
use super::*;

fn small_cfg() -> ArmacNetConfig {
    ArmacNetConfig::new(7, 4)
        .with_encoder_hidden(16)
        .with_head_hidden(16)
}

/// A batch of `rows` critic rows cut into trajectories of 1 to 4 rows, some with mean-regret
/// and policy weights (so rows fall into several row groups), then reservoir-memory rows that
/// weigh neither the critic nor the immediate-regret head; with [`StepTargets`] of random
/// coefficients over the critic rows.
fn in_step_batch(cfg: &ArmacNetConfig, rows: usize, seed: u64) -> TrainBatch {
    in_step_batch_of(cfg, rows, seed, 5, false)
}

/// [`in_step_batch`] with `memory_rows` memory rows; with `all_heads` every critic row weighs
/// every head.
fn in_step_batch_of(
    cfg: &ArmacNetConfig,
    rows: usize,
    seed: u64,
    memory_rows: usize,
    all_heads: bool,
) -> TrainBatch {
    let a = cfg.num_actions;
    let mut batch = synthetic_train_batch(cfg, rows, seed);
    let mut rng = SplitMix64::new(seed ^ 0x77);
    for i in 0..rows {
        let heads = if all_heads { 3 } else { rng.below(3) };
        batch.regret_weight[i] = f32::from(heads == 1 || all_heads);
        batch.policy_weight[i] = f32::from(heads == 2 || all_heads);
        batch.immediate_weight[i] = f32::from(all_heads || rng.below(2) == 0);
        // Not read: the step computes these.
        batch.critic_target[i] = [f32::NAN; 2];
        batch.immediate_target[i * a..(i + 1) * a].fill(f32::NAN);
    }
    if memory_rows > 0 {
        push_synthetic_memory_rows(cfg, &mut batch, memory_rows, seed + 1);
    }
    batch.step_targets = Some(synthetic_step_targets(&batch, rows, a, 4, seed ^ 0x99));
    batch
}

/// The host batch that `batch`'s step targets stand for under `learner`'s current critic
/// (the module docs' formulas, in `f64`).
fn host_batch(learner: &ArmacLearner, batch: &TrainBatch) -> TrainBatch {
    let a = learner.config().num_actions;
    let st = batch.step_targets.as_ref().expect("step targets");
    let inputs = ActBatch {
        own: batch.own.clone(),
        both0: batch.both0.clone(),
        both1: batch.both1.clone(),
        legal: batch.legal.clone(),
    };
    let cur = learner.evaluate_critic(&inputs);
    let q = |p: usize, r: usize| -> &[f32] {
        let f = if p == 0 { &cur.q0 } else { &cur.q1 };
        &f[r * a..(r + 1) * a]
    };
    let dot =
        |x: &[f32], y: &[f32]| -> f64 { x.iter().zip(y).map(|(a, b)| *a as f64 * *b as f64).sum() };
    let mut host = batch.clone();
    host.step_targets = None;
    for r in 0..st.rows {
        for p in 0..2 {
            let mut g = st.base[r][p] as f64;
            for d in 0..st.depth {
                let j = st.index[r * st.depth + d];
                g += st.weight[r * st.depth + d] as f64
                    * dot(&st.successor[j * a..(j + 1) * a], q(p, j));
            }
            host.critic_target[r][p] = g as f32;
        }
        let own = q(usize::from(st.player[r]), r);
        let v = dot(&st.policy[r * a..(r + 1) * a], own);
        let legal = &batch.legal[r * a..(r + 1) * a];
        for ((t, &x), &l) in host.immediate_target[r * a..(r + 1) * a]
            .iter_mut()
            .zip(own)
            .zip(legal)
        {
            *t = if l > 0.5 { (x as f64 - v) as f32 } else { 0.0 };
        }
    }
    host
}

/// Losses of `steps` eager steps with the targets computed in the step, and of the same steps
/// with host targets from a critic evaluation before each (two learners from one seed).
fn both_ways(device: &Device, batch: &TrainBatch, steps: usize) -> (Vec<Losses>, Vec<Losses>) {
    let mut in_step = ArmacLearner::new(small_cfg(), device, 1e-2, 4);
    let mut host = ArmacLearner::new(small_cfg(), device, 1e-2, 4);
    let mut got = Vec::new();
    let mut want = Vec::new();
    for _ in 0..steps {
        let h = host_batch(&host, batch);
        want.push(host.train_step(&h));
        got.push(in_step.train_step(batch));
    }
    (got, want)
}

fn sums(l: &Losses) -> [f64; 4] {
    [l.critic, l.mean_regret, l.immediate_regret, l.policy]
}

#[test]
fn step_targets_train_as_host_targets() {
    let cfg = small_cfg();
    let batch = in_step_batch(&cfg, 23, 3);
    assert!(row_groups_len(&batch) > 1, "several row groups");
    let (got, want) = both_ways(&cpu_device(), &batch, 4);
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            g.critic > 0.0 && g.immediate_regret > 0.0,
            "step {k}: {g:?}"
        );
        assert_losses_close(&sums(g), &sums(w), 1e-5, &format!("step {k}"));
    }
    // Every row through the full pass (no row groups) too.
    let full = in_step_batch_of(&cfg, 9, 8, 0, true);
    assert_eq!(row_groups_len(&full), 0, "one full pass");
    let (got, want) = both_ways(&cpu_device(), &full, 2);
    for (g, w) in got.iter().zip(&want) {
        assert_losses_close(&sums(g), &sums(w), 1e-5, "full pass");
    }
}

/// With the reservoir rows on the device, the replay rows' step targets train as their host
/// targets too (the resident step packs the replay rows as the host step does).
#[test]
fn step_targets_train_as_host_targets_beside_resident_rows() {
    let cfg = small_cfg();
    let (n_in, a) = (cfg.input_size, cfg.num_actions);
    let mut replay = in_step_batch_of(&cfg, 14, 6, 0, false);
    replay.regret_weight.iter_mut().for_each(|w| *w = 0.0);
    replay.policy_weight.iter_mut().for_each(|w| *w = 0.0);
    let mut rng = SplitMix64::new(12);
    let width = resident_width(&cfg);
    let updates = [0, 1].map(|_| ResidentUpdate {
        slots: vec![0, 1, 2],
        rows: (0..3)
            .flat_map(|_| {
                let mut v = rng.symmetric_vec_f32(n_in, 1.0);
                v.extend(std::iter::repeat_n(1.0, a));
                v.extend(rng.symmetric_vec_f32(a, 1.0).iter().map(|x| x.abs()));
                v
            })
            .collect(),
    });
    assert_eq!(updates[0].rows.len(), 3 * width);
    let step = ResidentStep {
        updates,
        draws: [0, 1].map(|_| ResidentDraw {
            slots: vec![2, 0, 1, 0],
            weights: vec![1.0; 4],
        }),
    };
    let later = ResidentStep {
        draws: step.draws.clone(),
        ..ResidentStep::default()
    };
    let learner = || {
        let mut l = ArmacLearner::new(small_cfg(), &cpu_device(), 1e-2, 4);
        l.enable_resident_memory(8).unwrap();
        l
    };
    let (mut in_step, mut host) = (learner(), learner());
    for k in 0..3 {
        let plan = if k == 0 { &step } else { &later };
        let h = host_batch(&host, &replay);
        host.train_step_resident(&h, plan);
        in_step.train_step_resident(&replay, plan);
        let (got, want) = (in_step.take_loss_sums().0, host.take_loss_sums().0);
        assert!(got[0] > 0.0 && got[2] > 0.0, "step {k}: {got:?}");
        assert_losses_close(&got, &want, 1e-5, &format!("resident step {k}"));
    }
}

/// A deferred step with step targets makes one upload and reads nothing back.
#[test]
fn step_targets_upload_once_and_read_nothing_back() {
    let cfg = small_cfg();
    let batch = in_step_batch(&cfg, 16, 5);
    let mut learner = ArmacLearner::new(cfg, &cpu_device(), 1e-3, 1);
    for _ in 0..3 {
        let before = learner.io();
        learner.train_step_deferred(&batch);
        let io = learner.io() - before;
        assert_eq!((io.uploads, io.readbacks), (1, 0), "{io:?}");
    }
    assert_eq!(learner.take_loss_sums().1, 3);
}

/// Bad step targets are refused by name.
#[test]
fn bad_step_targets_are_refused() {
    let cfg = small_cfg();
    let batch = in_step_batch(&cfg, 6, 2);
    let check = |f: &dyn Fn(&mut TrainBatch), what: &str| {
        let mut b = batch.clone();
        f(&mut b);
        let e = b.validate(&cfg).unwrap_err().to_string();
        assert!(e.contains(what), "{what}: {e}");
    };
    check(
        &|b| b.step_targets.as_mut().unwrap().index[0] = 6,
        "index 6",
    );
    check(
        &|b| b.step_targets.as_mut().unwrap().player[1] = 2,
        "player 2",
    );
    check(
        &|b| {
            b.step_targets.as_mut().unwrap().base.pop();
        },
        "step_targets.base",
    );
    check(&|b| b.critic_weight[2] = 0.0, "row 2 has no critic weight");
    check(
        &|b| {
            let n = b.rows();
            b.immediate_weight[n - 1] = 1.0;
        },
        "not covered",
    );
    check(&|b| b.step_targets.as_mut().unwrap().depth = 0, "depth 0");
}

/// The step targets on the wgpu backend (CI: Mesa's software Vulkan driver): one upload and no
/// read-back per deferred step, and the losses of the flex learner on the same batch and seed
/// within `f32` tolerance. Opt-in: needs a Vulkan driver.
/// `cargo test --release --features wgpu --lib wgpu -- --ignored`
#[cfg(feature = "wgpu")]
#[test]
#[ignore = "needs a Vulkan driver"]
fn step_targets_on_wgpu_upload_once_and_match_flex() {
    let batch = in_step_batch(&small_cfg(), 23, 3);
    let gpu = crate::nn::select_device("wgpu").unwrap();
    let run = |device: &Device| {
        let mut learner = ArmacLearner::new(small_cfg(), device, 1e-2, 4);
        for _ in 0..4 {
            let before = learner.io();
            learner.train_step_deferred(&batch);
            let io = learner.io() - before;
            assert_eq!((io.uploads, io.readbacks), (1, 0), "{io:?}");
        }
        learner.take_loss_sums().0
    };
    assert_losses_close(&run(&gpu), &run(&cpu_device()), 1e-4, "wgpu vs flex");
}

/// A recurrent batch of `sequences × time` rows whose critic targets are computed in the step
/// (synthetic episodes of up to 4 rows).
fn seq_in_step_batch(cfg: &ArmacNetConfig, sequences: usize, time: usize) -> SeqTrainBatch {
    let mut batch = synthetic_seq_batch(cfg, sequences, time, 7);
    let rows = batch.targets.rows();
    batch.targets.step_targets = Some(synthetic_step_targets(
        &batch.targets,
        rows,
        cfg.num_actions,
        4,
        8,
    ));
    batch
}

/// A recurrent step with its critic targets in the step uploads once and reads nothing back,
/// and its losses depend on them.
#[test]
fn seq_step_targets_upload_once_and_read_nothing_back() {
    let cfg = small_cfg().with_recurrent(true);
    let batch = seq_in_step_batch(&cfg, 3, 5);
    let mut learner = ArmacLearner::new(cfg.clone(), &cpu_device(), 1e-3, 1);
    let mut other = batch.clone();
    other.targets.step_targets.as_mut().unwrap().base[0] = [5.0, -5.0];
    let mut twin = ArmacLearner::new(cfg, &cpu_device(), 1e-3, 1);
    let (a, b) = (
        learner.train_step_seq(&batch).unwrap(),
        twin.train_step_seq(&other).unwrap(),
    );
    assert!(
        a.critic != b.critic && a.mean_regret == b.mean_regret,
        "{a:?} {b:?}"
    );
    for _ in 0..3 {
        let before = learner.io();
        learner.train_step_seq_deferred(&batch).unwrap();
        let io = learner.io() - before;
        assert_eq!((io.uploads, io.readbacks), (1, 0), "{io:?}");
    }
    assert_eq!(learner.take_loss_sums().1, 3);
}

/// The recurrent step's in-step targets on the wgpu backend (CI: Mesa's software Vulkan
/// driver): one upload and no read-back per deferred step, and the flex learner's losses.
/// `cargo test --release --features wgpu --lib wgpu -- --ignored`
#[cfg(feature = "wgpu")]
#[test]
#[ignore = "needs a Vulkan driver"]
fn seq_step_targets_on_wgpu_upload_once_and_match_flex() {
    let cfg = small_cfg().with_recurrent(true);
    let batch = seq_in_step_batch(&cfg, 3, 5);
    let gpu = crate::nn::select_device("wgpu").unwrap();
    let run = |device: &Device| {
        let mut learner = ArmacLearner::new(cfg.clone(), device, 1e-2, 4);
        for _ in 0..4 {
            let before = learner.io();
            learner.train_step_seq_deferred(&batch).unwrap();
            let io = learner.io() - before;
            assert_eq!((io.uploads, io.readbacks), (1, 0), "{io:?}");
        }
        learner.take_loss_sums().0
    };
    assert_losses_close(&run(&gpu), &run(&cpu_device()), 1e-4, "wgpu vs flex");
}
