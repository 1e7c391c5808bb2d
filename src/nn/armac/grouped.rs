//! A training batch's rows grouped by the heads they train: one packed upload of a batch's
//! inputs and targets ([`pack_grouped`]), and the matrix-product count of a step
//! ([`train_step_flops`]).

use super::batch::Heads;
use super::batch::TrainBatch;
use super::config::ArmacNetConfig;
use super::forward::InputBlocks;
use super::forward::acting_players;
use super::forward::forward_packed;
use super::forward::pack_inputs;
use super::loss::TargetBlocks;
use super::loss::pack_targets;
use super::net::ArmacNet;
use super::net::ArmacOutput;
use super::step_targets::StepTargetBlocks;
use super::step_targets::pack_step_targets;
use super::tensors::Packed;
use super::tensors::Packer;
use burn::tensor::Device;
use burn::tensor::Tensor;

/// The four loss terms of a non-empty batch, from one upload of its host data
/// ([`pack_grouped`]).
pub(super) fn grouped_terms(
    model: &ArmacNet,
    d: &Device,
    cfg: &ArmacNetConfig,
    batch: &TrainBatch,
) -> [Tensor<1>; 4] {
    let mut p = Packer::default();
    let g = pack_grouped(&mut p, cfg, batch);
    g.losses(model, &p.upload(d))
}

/// A batch's inputs and targets in a [`Packer`], its rows grouped by the heads they train.
pub(super) struct Grouped {
    blocks: Vec<InputBlocks>,
    targets: TargetBlocks,
    step: Option<StepTargetBlocks>,
}

/// Packs a non-empty batch. Rows that train only information-state heads (reservoir-memory
/// rows) skip the critic's inputs and the heads they do not train, rows that train only the
/// critic and the immediate-regret head skip the other two heads; the losses
/// ([`Grouped::losses`]) are the same sums over a permutation of the rows.
pub(super) fn pack_grouped(p: &mut Packer, cfg: &ArmacNetConfig, batch: &TrainBatch) -> Grouped {
    let (b, n_in, a) = (batch.rows(), cfg.input_size, cfg.num_actions);
    let in_step = batch.step_targets.is_some();
    let step_blocks = |p: &mut Packer, order: &[usize]| {
        batch
            .step_targets
            .as_ref()
            .map(|st| pack_step_targets(p, st, order, a))
    };
    let Some(groups) = row_groups(batch) else {
        let inputs = [&batch.own[..], &batch.both0[..], &batch.both1[..]];
        let x = pack_inputs(p, inputs, &batch.legal, b, n_in, Heads::ALL);
        let targets = pack_targets(p, batch, a, in_step);
        let order: Vec<usize> = (0..b).collect();
        return Grouped {
            blocks: vec![x],
            targets,
            step: step_blocks(p, &order),
        };
    };
    let mut blocks = Vec::with_capacity(groups.len());
    let mut order = Vec::with_capacity(b);
    for (heads, idx) in groups {
        let n = idx.len();
        let legal = gather(&batch.legal, &idx, a);
        let own = gather(&batch.own, &idx, n_in);
        // Without the critic only `own` is read.
        let (both0, both1) = if heads.critic {
            (
                gather(&batch.both0, &idx, n_in),
                gather(&batch.both1, &idx, n_in),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        blocks.push(pack_inputs(
            p,
            [&own, &both0, &both1],
            &legal,
            n,
            n_in,
            heads,
        ));
        order.extend(idx);
    }
    let targets = pack_targets(p, &batch.select_targets(&order, a), a, in_step);
    let step = step_blocks(p, &order);
    Grouped {
        blocks,
        targets,
        step,
    }
}

impl Grouped {
    /// The four loss terms on the uploaded buffer `p`.
    pub(super) fn losses(&self, model: &ArmacNet, p: &Packed) -> [Tensor<1>; 4] {
        let mut parts: Vec<ArmacOutput> = self
            .blocks
            .iter()
            .map(|x| forward_packed(model, p, x))
            .collect();
        let out = if parts.len() == 1 {
            parts.pop().expect("one part")
        } else {
            ArmacOutput::cat(parts)
        };
        let in_step = self.step.as_ref().map(|st| {
            let legal: Vec<Tensor<2>> = self.blocks.iter().map(|x| p.get(x.legal())).collect();
            st.targets(&out.q, Tensor::cat(legal, 0), p)
        });
        self.targets.losses(out, p, in_step)
    }
}

/// What the rows of one group need from the network: every output when a row has a critic
/// or immediate-regret target and a mean-regret or average-policy target too; the critic and
/// the immediate-regret head for the rows with only those targets (the replay's rows when the
/// reservoirs train the other two heads); the mean-regret and/or average-policy heads alone for
/// the others.
const ROW_GROUPS: [Heads; 5] = [
    Heads::ALL,
    Heads {
        critic: true,
        immediate_regret: true,
        ..Heads::NONE
    },
    Heads::MEAN_REGRET,
    Heads::AVG_POLICY,
    Heads {
        mean_regret: true,
        avg_policy: true,
        ..Heads::NONE
    },
];

/// The batch's rows grouped by what they need ([`ROW_GROUPS`]; rows without any weight are
/// left out), or `None` when every row needs the full pass (or none needs anything).
fn row_groups(t: &TrainBatch) -> Option<Vec<(Heads, Vec<usize>)>> {
    let mut groups: Vec<(Heads, Vec<usize>)> =
        ROW_GROUPS.iter().map(|&h| (h, Vec::new())).collect();
    for i in 0..t.rows() {
        let critic = t.critic_weight[i] != 0.0 || t.immediate_weight[i] != 0.0;
        let regret = t.regret_weight[i] != 0.0;
        let policy = t.policy_weight[i] != 0.0;
        let g = match (critic, regret, policy) {
            (false, false, false) => continue,
            (true, false, false) => 1,
            (true, _, _) => 0,
            (false, true, false) => 2,
            (false, false, true) => 3,
            (false, true, true) => 4,
        };
        groups[g].1.push(i);
    }
    let partial: usize = groups[1..].iter().map(|(_, v)| v.len()).sum();
    if partial == 0 {
        return None;
    }
    groups.retain(|(_, v)| !v.is_empty());
    Some(groups)
}

/// Number of row groups of `t` (0 when every row takes the full pass).
#[cfg(test)]
pub(super) fn row_groups_len(t: &TrainBatch) -> usize {
    row_groups(t).map_or(0, |g| g.len())
}

/// The `width`-long rows `idx` of the row-major `data`, in that order.
fn gather(data: &[f32], idx: &[usize], width: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(idx.len() * width);
    for &i in idx {
        out.extend_from_slice(&data[i * width..(i + 1) * width]);
    }
    out
}

/// Floating-point operations of the matrix products of one
/// [`ArmacLearner::train_step`](super::ArmacLearner::train_step) on
/// `batch` with a feed-forward net: `2·n·in·out` per `Linear` forward, three times that for
/// forward and backward, over the passes the step's row groups take (elementwise work, the
/// losses and Adam are not counted). A measure of achieved throughput, not of cost on the host.
pub fn train_step_flops(cfg: &ArmacNetConfig, batch: &TrainBatch) -> f64 {
    let (n_in, a) = (cfg.input_size, cfg.num_actions);
    let groups =
        row_groups(batch).unwrap_or_else(|| vec![(Heads::ALL, (0..batch.rows()).collect())]);
    groups
        .iter()
        .map(|(heads, idx)| {
            let own = gather(&batch.own, idx, n_in);
            let passes = if !heads.critic {
                0
            } else if acting_players(
                &own,
                &gather(&batch.both0, idx, n_in),
                &gather(&batch.both1, idx, n_in),
                n_in,
            )
            .is_some()
            {
                2
            } else {
                3
            };
            3.0 * forward_flops(cfg, *heads, passes, a) * idx.len() as f64
        })
        .sum()
}

/// Forward matrix-product operations per row: `passes` encoder passes when the critic is
/// computed (2 when `own` is one of `both`, else 3), one without it, and the heads asked for.
fn forward_flops(cfg: &ArmacNetConfig, heads: Heads, passes: usize, a: usize) -> f64 {
    let lin = |i: usize, o: usize| 2.0 * (i * o) as f64;
    let (eh, hh, r) = (
        cfg.encoder_hidden,
        cfg.head_hidden,
        cfg.representation_size(),
    );
    let encoder =
        lin(cfg.input_size, eh) + (cfg.encoder_layers.max(1) - 1) as f64 * lin(2 * eh, eh);
    let head = lin(r, hh) + lin(2 * hh, hh) + lin(2 * hh, a);
    let separate = heads.mean_regret && cfg.separate_regret_encoder;
    let shared = if heads.critic {
        passes
    } else {
        usize::from(heads.immediate_regret || heads.avg_policy || (heads.mean_regret && !separate))
    };
    let n_heads = [heads.mean_regret, heads.immediate_regret, heads.avg_policy]
        .iter()
        .filter(|&&h| h)
        .count();
    let critic = if heads.critic {
        4.0 * lin(r, hh) + 2.0 * lin(2 * hh, hh) + 2.0 * lin(2 * hh, a)
    } else {
        0.0
    };
    (shared + usize::from(separate)) as f64 * encoder + n_heads as f64 * head + critic
}
