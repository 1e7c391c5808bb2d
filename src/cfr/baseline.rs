//! Control-variate baselines shared by outcome sampling ([`super::mccfr`]) and public outcome
//! sampling ([`super::pos`]) (Davis, Schmid & Bowling 2019): which baseline `b(h, a)` a solver
//! uses, how learned baselines average their samples, and the exact history values and
//! default policy behind the static baseline and the tests.

use crate::tree::history::{HistoryKind, HistoryTree};
use crate::tree::{PublicTree, TreePolicy};
use serde::Deserialize;

/// The baseline `b(h, a)` subtracted from sampled values (config names in kebab-case).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Baseline {
    /// `b = 0`: plain sampled values.
    None,
    /// The exact value of `(h a)` when both players follow a fixed default policy from there
    /// on ([`default_policy`]), computed once. Outcome sampling only.
    Static,
    /// Average of the past baseline-corrected values `û(ha)` sampled at `(h, a)` (Eq. 6).
    LearnedHistory,
    /// VR-MCCFR: one value per (updating player's augmented infoset, action), the average of
    /// the values `û(h'a)` sampled at any history `h'` of it (Eq. 7). The augmented infoset of
    /// player `p` at `h` is the pair (public node, `p`'s private state).
    LearnedInfoset,
    /// `b_{t+1}(h,a) = û((ha) | σ_{t+1})` on the sampled path (Eq. 8, Algorithm 2).
    Predictive,
}

impl Baseline {
    /// The config names, in declaration order.
    pub const NAMES: [&'static str; 5] = [
        "none",
        "static",
        "learned-history",
        "learned-infoset",
        "predictive",
    ];

    /// The baseline of a config name.
    pub fn named(name: &str) -> Option<Baseline> {
        const ALL: [Baseline; 5] = [
            Baseline::None,
            Baseline::Static,
            Baseline::LearnedHistory,
            Baseline::LearnedInfoset,
            Baseline::Predictive,
        ];
        Baseline::NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| ALL[i])
    }

    /// Whether the baseline averages samples (and so takes `baseline_averaging`).
    pub fn is_learned(self) -> bool {
        matches!(self, Baseline::LearnedHistory | Baseline::LearnedInfoset)
    }
}

/// How a learned baseline averages its samples; the exponential decay `α` is the solver's
/// `baseline_alpha`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BaselineAveraging {
    /// The mean of the samples.
    Simple,
    /// `b ← b + α (x − b)` from `b = 0`, i.e. weights `α(1−α)^(n−j)` as in the paper.
    Exponential,
}

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
