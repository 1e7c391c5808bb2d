//! Random, reproducible batches for tests and benchmarks (no game involved).

use super::batch::ActBatch;
use super::batch::StepTargets;
use super::batch::TrainBatch;
use super::batch::TrainRow;
use super::config::ArmacNetConfig;
use super::init_rng;
use super::learner::SeqTrainBatch;
use crate::util::SplitMix64;

pub(super) fn synthetic_legal(rng: &mut SplitMix64, a: usize) -> Vec<bool> {
    let mut legal: Vec<bool> = (0..a).map(|_| !rng.next_u64().is_multiple_of(4)).collect();
    if !legal.iter().any(|&l| l) {
        legal[(rng.next_u64() % a as u64) as usize] = true;
    }
    legal
}

/// A random [`ActBatch`] for `cfg` (inputs uniform in ±1, ~¾ of actions legal).
pub fn synthetic_act_batch(cfg: &ArmacNetConfig, rows: usize, seed: u64) -> ActBatch {
    let mut rng = init_rng(seed);
    let mut batch = ActBatch::new();
    for _ in 0..rows {
        let own = rng.symmetric_vec_f32(cfg.input_size, 1.0);
        let other = rng.symmetric_vec_f32(cfg.input_size, 1.0);
        let legal = synthetic_legal(&mut rng, cfg.num_actions);
        batch.push(&own, &own, &other, &legal);
    }
    batch
}

/// A random, learnable [`TrainBatch`] for `cfg`: random inputs, targets fixed per row, all
/// weights 1, deterministic (one-hot) policy targets.
pub fn synthetic_train_batch(cfg: &ArmacNetConfig, rows: usize, seed: u64) -> TrainBatch {
    let mut rng = init_rng(seed);
    let a = cfg.num_actions;
    let mut batch = TrainBatch::new();
    for _ in 0..rows {
        let own = rng.symmetric_vec_f32(cfg.input_size, 1.0);
        let other = rng.symmetric_vec_f32(cfg.input_size, 1.0);
        let legal = synthetic_legal(&mut rng, a);
        let legal_idx: Vec<usize> = (0..a).filter(|&i| legal[i]).collect();
        let pick =
            |rng: &mut SplitMix64| legal_idx[(rng.next_u64() % legal_idx.len() as u64) as usize];
        let action = pick(&mut rng);
        let mut policy = vec![0.0; a];
        policy[pick(&mut rng)] = 1.0;
        let regret = rng.symmetric_vec_f32(a, 1.0);
        let immediate = rng.symmetric_vec_f32(a, 1.0);
        let critic = [rng.symmetric_f32(1.0), rng.symmetric_f32(1.0)];
        batch.push(&TrainRow {
            own: &own,
            both0: &own,
            both1: &other,
            legal: &legal,
            action,
            critic_target: critic,
            critic_weight: 1.0,
            regret_target: &regret,
            regret_weight: 1.0,
            immediate_target: &immediate,
            immediate_weight: 1.0,
            policy_target: &policy,
            policy_weight: 1.0,
        });
    }
    batch
}

/// A random [`SeqTrainBatch`] of `sequences × time` steps for a recurrent `cfg`.
pub fn synthetic_seq_batch(
    cfg: &ArmacNetConfig,
    sequences: usize,
    time: usize,
    seed: u64,
) -> SeqTrainBatch {
    let mut rng = init_rng(seed);
    let n = sequences * time;
    let mut targets = synthetic_train_batch(cfg, n, seed ^ 0xABCD);
    targets.own.clear();
    targets.both0.clear();
    targets.both1.clear();
    SeqTrainBatch {
        sequences,
        time,
        obs0: rng.symmetric_vec_f32(n * cfg.input_size, 1.0),
        obs1: rng.symmetric_vec_f32(n * cfg.input_size, 1.0),
        acting_player: (0..n).map(|i| i % 2).collect(),
        initial_state: None,
        targets,
    }
}

/// Appends `n` mean-regret-only rows and `n` average-policy-only rows to `batch`, shaped like
/// the reservoir memory's rows (`both0 = both1 = own`, no critic or immediate-regret weight).
pub fn push_synthetic_memory_rows(
    cfg: &ArmacNetConfig,
    batch: &mut TrainBatch,
    n: usize,
    seed: u64,
) {
    let mut rng = init_rng(seed);
    let a = cfg.num_actions;
    let zeros = vec![0.0; a];
    for k in 0..2 * n {
        let own = rng.symmetric_vec_f32(cfg.input_size, 1.0);
        let legal = synthetic_legal(&mut rng, a);
        let regret = rng.symmetric_vec_f32(a, 1.0);
        let mut policy = vec![0.0; a];
        let first_legal = legal.iter().position(|&l| l).expect("one legal action");
        policy[first_legal] = 1.0;
        let is_regret = k < n;
        batch.push(&TrainRow {
            own: &own,
            both0: &own,
            both1: &own,
            legal: &legal,
            action: first_legal,
            critic_target: [0.0; 2],
            critic_weight: 0.0,
            regret_target: &regret,
            regret_weight: if is_regret { 1.5 } else { 0.0 },
            immediate_target: &zeros,
            immediate_weight: 0.0,
            policy_target: &policy,
            policy_weight: if is_regret { 0.0 } else { 0.5 },
        });
    }
}

/// Random [`StepTargets`] for the first `rows` rows of `batch` (of `a` actions), cut into
/// episodes of 1 to `max_len` rows: a target policy on each row's legal actions, random
/// successor coefficients, players and returns, and weights in [0, 1) on the later rows of
/// each episode.
pub fn synthetic_step_targets(
    batch: &TrainBatch,
    rows: usize,
    a: usize,
    max_len: usize,
    seed: u64,
) -> StepTargets {
    let mut rng = init_rng(seed);
    let depth = max_len.max(2) - 1;
    let mut st = StepTargets {
        rows,
        depth,
        ..StepTargets::default()
    };
    let mut start = 0;
    while start < rows {
        let len = (1 + rng.below(max_len.max(1))).min(rows - start);
        for r in start..start + len {
            let legal = &batch.legal[r * a..(r + 1) * a];
            let pi: Vec<f32> = legal.iter().map(|&l| l * rng.next_f64() as f32).collect();
            let sum: f32 = pi.iter().sum::<f32>().max(1e-6);
            st.policy.extend(pi.iter().map(|p| p / sum));
            st.successor.extend(rng.symmetric_vec_f32(a, 1.0));
            st.player.push(rng.below(2) as u8);
            for d in 0..depth {
                let j = r + d + 1;
                let live = j < start + len;
                st.index.push(if live { j } else { r });
                st.weight
                    .push(if live { rng.next_f64() as f32 } else { 0.0 });
            }
            st.base
                .push([rng.symmetric_f32(1.0), rng.symmetric_f32(1.0)]);
        }
        start += len;
    }
    st
}
