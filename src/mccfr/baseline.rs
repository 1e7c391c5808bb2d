//! Exact history values on the [`HistoryTree`] and the default policy of the static baseline.

use crate::eval::TreePolicy;
use crate::tree::PublicTree;
use crate::tree::history::{HistoryKind, HistoryTree};

/// `u(h | σ)` for every history `h` (player 0's utility).
pub fn history_values(ht: &HistoryTree, tree: &PublicTree, policy: &TreePolicy) -> Vec<f64> {
    let mut v = vec![0.0; ht.len()];
    ht.values_into(tree, policy, &mut v);
    v
}

/// `π_{-p}(h)` (chance and the opponent of `p`) for every history.
pub fn opponent_reach(
    ht: &HistoryTree,
    tree: &PublicTree,
    policy: &TreePolicy,
    p: usize,
) -> Vec<f64> {
    ht.opponent_reach(tree, policy, p)
}

/// Exact counterfactual regrets `Σ_{h∈I} π_{-p}(h) (u_p(ha) − u_p(h))` of player `p`'s infoset
/// `i` under `policy` (indexed by the infoset's actions; `u_p` is player `p`'s utility).
pub fn counterfactual_regrets(
    ht: &HistoryTree,
    tree: &PublicTree,
    policy: &TreePolicy,
    p: usize,
    i: usize,
) -> Vec<f64> {
    let v = history_values(ht, tree, policy);
    let reach = opponent_reach(ht, tree, policy, p);
    let n = tree.infosets[p].range(i).len();
    let mut out = vec![0.0; n];
    let sign = if p == 0 { 1.0 } else { -1.0 };
    for h in 0..ht.len() {
        if ht.kind[h] == HistoryKind::Decision(p) && ht.infoset[h] as usize == i {
            for (k, c) in ht.children(h).enumerate() {
                out[k] += sign * reach[h] * (v[c] - v[h]);
            }
        }
    }
    out
}

/// The fixed policy of the static baseline (pure, one action per infoset):
/// * `kuhn_poker…`: always check/call — Pass (0) unless the action that led here was a Bet (1)
///   by the other player, then Bet (= call);
/// * `leduc_poker…`, `universal_poker…`: Call/Check (action 1, always legal there);
/// * any other game: the first legal action.
pub fn default_policy(game_name: &str, ht: &HistoryTree, tree: &PublicTree) -> TreePolicy {
    let mut policy: TreePolicy = [
        vec![0.0; tree.infosets[0].num_actions_total()],
        vec![0.0; tree.infosets[1].num_actions_total()],
    ];
    let kuhn = game_name.starts_with("kuhn_poker");
    let call_is_one =
        game_name.starts_with("leduc_poker") || game_name.starts_with("universal_poker");
    for h in 0..ht.len() {
        let HistoryKind::Decision(p) = ht.kind[h] else {
            continue;
        };
        let inf = &tree.infosets[p];
        let i = ht.infoset[h] as usize;
        let r = inf.range(i);
        let k = if kuhn {
            let parent = ht.parent[h];
            let after_bet = parent != crate::tree::NONE
                && matches!(ht.kind[parent as usize], HistoryKind::Decision(_))
                && ht.action[h] == 1;
            usize::from(after_bet)
        } else if call_is_one {
            inf.actions[r.clone()]
                .iter()
                .position(|&a| a == 1)
                .unwrap_or(0)
        } else {
            0
        };
        policy[p][r.start + k] = 1.0;
    }
    policy
}
