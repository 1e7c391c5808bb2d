//! The distinct networks of a group and the batches they evaluate: rows built from game
//! states, the `tabular_w` table that replaces a network's mean-regret head, and the small
//! readers of their outputs.

use crate::game::State;
use crate::nn::armac::{ActBatch, ActOutput, ArmacPolicyNet, Heads};
use crate::rl::armac::table::PolicyTable;
use std::sync::Arc;

/// The learning player's information-state tensor of `state`.
pub(super) fn view(state: &dyn State, player: usize, size: usize) -> Vec<f32> {
    let mut v = vec![0.0; size];
    state.information_state_tensor(player, &mut v);
    v
}

/// Appends `state` as one row of `batch`, player `p` acting, `legal` its legal actions.
pub(super) fn push_row(
    batch: &mut ActBatch,
    state: &dyn State,
    p: usize,
    info_size: usize,
    legal: &[bool],
) {
    let i0 = view(state, 0, info_size);
    let i1 = view(state, 1, info_size);
    batch.own.extend_from_slice(if p == 0 { &i0 } else { &i1 });
    batch.both0.extend(i0);
    batch.both1.extend(i1);
    batch.legal.extend(legal.iter().map(|&m| m as u8 as f32));
}

/// `v(h) = Σ_a π(a) q(h, a)`: the value of a decision under policy `pi` and action values `q`.
pub(super) fn state_value(pi: &[f32], q: &[f32]) -> f32 {
    pi.iter().zip(q).map(|(a, b)| a * b).sum()
}

/// Row `cr` of the critic's `q_p` in `c`.
pub(super) fn q_of(c: &ActOutput, cr: usize, n: usize, p: usize) -> &[f32] {
    let r = cr * n..(cr + 1) * n;
    if p == 0 { &c.q0[r] } else { &c.q1[r] }
}

/// Which of the game's actions `state` allows.
pub(super) fn legal_mask(state: &dyn State, num_actions: usize) -> Vec<bool> {
    let mut mask = vec![false; num_actions];
    for a in state.legal_actions() {
        mask[a] = true;
    }
    mask
}

/// The distinct networks of a group, each with the table that replaces its mean-regret head
/// (the `tabular_w` ablation; a network plays one epoch's `π^j`, so at most one table).
pub(super) type Nets = Vec<(Arc<ArmacPolicyNet>, Option<Arc<PolicyTable>>)>;

/// Index of `net` in `nets`, appending it if new; `table` is recorded when given.
pub(super) fn slot(
    nets: &mut Nets,
    net: &Arc<ArmacPolicyNet>,
    table: Option<&Arc<PolicyTable>>,
) -> usize {
    let k = match nets.iter().position(|n| Arc::ptr_eq(&n.0, net)) {
        Some(k) => k,
        None => {
            nets.push((net.clone(), None));
            nets.len() - 1
        }
    };
    if let Some(t) = table {
        nets[k].1 = Some(t.clone());
    }
    k
}

/// Evaluates the outputs `heads` of `batch` with network `k` of `nets` (the other fields come
/// back empty), its table (if any) giving the mean-regret rows; `players[r]` acts at row `r`.
pub(super) fn evaluate_with_table(
    nets: &Nets,
    k: usize,
    batch: &ActBatch,
    players: &[usize],
    heads: Heads,
) -> ActOutput {
    let (net, table) = &nets[k];
    // A table replaces the mean-regret head, which then need not run.
    let from_net = Heads {
        mean_regret: heads.mean_regret && table.is_none(),
        ..heads
    };
    let mut out = net
        .evaluate_heads(batch, from_net)
        .expect("actor batches match the network");
    if let (Some(t), true) = (table, heads.mean_regret) {
        out.mean_regret = vec![0.0; out.rows * out.num_actions];
        t.overlay(&mut out, &batch.own, players);
    }
    out
}
