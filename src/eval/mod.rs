//! Exact evaluation on the compiled public tree: best response, on-policy values, NashConv.
//!
//! A best response of player `p` to the opponent's fixed policy is computed with two sweeps
//! over range vectors ([`crate::tree`]): a top-down sweep gives the opponent's reach of every
//! sequence, terminal entries turn it into counterfactual values of `p`'s sequences, and a
//! bottom-up sweep over `p`'s infosets takes the maximum over actions (with perfect recall the
//! local maxima compose into the global best response). No history is visited and nothing
//! recurses.
//!
//! NashConv = sum over players of (best-response value − on-policy value), as in OpenSpiel.

pub mod aivat;
pub mod aivat_pair;
pub mod lbr;
pub mod matchup;
pub mod phh;

use crate::game::{Game, Player};
use crate::policy::{Policy, PolicyError};
use crate::tree::{PublicTree, TreePolicy};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};

/// What watches a long sampled evaluation (LBR, a sampled match): `progress` is told of every
/// hand finished (from worker threads, with the number just finished), and once `stop` is set
/// (Ctrl-C) no new deal starts: the result then covers the deals played so far and is marked
/// partial, or is an error when none was.
#[derive(Clone, Copy, Default)]
pub struct Watch<'a> {
    pub progress: Option<&'a (dyn Fn(u64) + Sync)>,
    pub stop: Option<&'a AtomicBool>,
}

impl Watch<'_> {
    /// Whether the evaluation is asked to stop.
    pub fn stopped(&self) -> bool {
        self.stop.is_some_and(|s| s.load(Ordering::Relaxed))
    }

    /// Reports `n` hands finished.
    pub fn tick(&self, n: u64) {
        if let Some(f) = self.progress {
            f(n);
        }
    }
}

/// The outcome of [`nash_conv`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NashConvReport {
    /// Sum over players of (best-response value − on-policy value).
    pub nash_conv: f64,
    /// Value a best response of each player achieves against the other's policy.
    pub best_response_values: [f64; 2],
    /// Expected payoff of each player when both follow the policy.
    pub on_policy_values: [f64; 2],
}

/// Converts any [`Policy`] into tree arrays by querying it once per infoset (rebuilding a
/// representative state from the infoset's stored history). A table with an information
/// state that the tree lacks is refused, naming the first such state (in sorted order).
pub fn tree_policy(
    tree: &PublicTree,
    game: &dyn Game,
    policy: &dyn Policy,
) -> Result<TreePolicy, PolicyError> {
    if let Some(keys) = policy.table_keys() {
        let known: std::collections::HashSet<&str> = tree
            .infosets
            .iter()
            .flat_map(|inf| inf.key.iter().map(String::as_str))
            .collect();
        if let Some(key) = keys.into_iter().filter(|k| !known.contains(k)).min() {
            return Err(PolicyError::UnknownInfostate {
                key: key.to_string(),
                game: game.load_string(),
            });
        }
    }
    let mut out: TreePolicy = [Vec::new(), Vec::new()];
    for (inf, flat_out) in tree.infosets.iter().zip(out.iter_mut()) {
        let mut flat = vec![0.0; inf.num_actions_total()];
        for i in 0..inf.len() {
            let state = crate::game::replay(game, &inf.history[i])
                .expect("stored infoset histories are legal");
            let probs = policy.action_probabilities(state.as_ref())?;
            let range = inf.range(i);
            if probs.len() != range.len() {
                return Err(PolicyError::BadEntry {
                    key: inf.key[i].clone(),
                    reason: format!(
                        "{} probabilities for {} legal actions",
                        probs.len(),
                        range.len()
                    ),
                });
            }
            flat[range].copy_from_slice(&probs);
        }
        *flat_out = flat;
    }
    Ok(out)
}

/// Value of a best response of player `p` against `opponent_policy` (the opponent's flat
/// array), and the chosen action index (global) of each of `p`'s infosets.
pub fn best_response(tree: &PublicTree, p: Player, opponent_policy: &[f64]) -> (f64, Vec<u32>) {
    let q = 1 - p;
    let mut opp_reach = vec![0.0; tree.num_sequences(q)];
    tree.reach(q, opponent_policy, &mut opp_reach);
    let inf = &tree.infosets[p];
    let mut values = vec![0.0; tree.num_sequences(p)];
    tree.terminal_values(p, &opp_reach, &mut values);
    let mut choice = vec![0u32; inf.len()];
    for i in (0..inf.len()).rev() {
        let r = inf.range(i);
        let mut best = r.start;
        for k in r {
            if values[k] > values[best] {
                best = k;
            }
        }
        choice[i] = best as u32;
        values[inf.parent_seq[i] as usize] += values[best];
    }
    (values[inf.root()], choice)
}

/// Expected payoffs of both players when they follow `policy`.
pub fn on_policy_values(tree: &PublicTree, policy: &TreePolicy) -> [f64; 2] {
    let mut r0 = vec![0.0; tree.num_sequences(0)];
    let mut r1 = vec![0.0; tree.num_sequences(1)];
    tree.reach(0, &policy[0], &mut r0);
    tree.reach(1, &policy[1], &mut r1);
    let v = tree.expected_value(&r0, &r1);
    [v, -v]
}

/// NashConv of `policy` with its parts.
pub fn nash_conv(tree: &PublicTree, policy: &TreePolicy) -> NashConvReport {
    let br = [
        best_response(tree, 0, &policy[1]).0,
        best_response(tree, 1, &policy[0]).0,
    ];
    let on = on_policy_values(tree, policy);
    NashConvReport {
        nash_conv: (br[0] - on[0]) + (br[1] - on[1]),
        best_response_values: br,
        on_policy_values: on,
    }
}

#[cfg(test)]
mod tests {
    use super::nash_conv;
    use crate::games::load_game;
    use crate::tree::{PublicTree, uniform_tree_policy};

    #[test]
    fn leduc_transfer_shifts_every_value_but_not_the_game() {
        let plain = load_game("leduc_poker").unwrap();
        let shifted = load_game("leduc_poker(transfer=100)").unwrap();
        assert_eq!(shifted.load_string(), "leduc_poker(transfer=100)");
        assert_eq!(
            load_game("leduc_poker(num_ranks=4,transfer=-3)")
                .unwrap()
                .load_string(),
            "leduc_poker(num_ranks=4,transfer=-3)"
        );
        assert!(load_game("leduc_poker(transfer=1.5)").is_err());
        let (a, b) = (
            PublicTree::build(plain.as_ref()).unwrap(),
            PublicTree::build(shifted.as_ref()).unwrap(),
        );
        let (ra, rb) = (
            nash_conv(&a, &uniform_tree_policy(&a)),
            nash_conv(&b, &uniform_tree_policy(&b)),
        );
        assert!((ra.nash_conv - rb.nash_conv).abs() < 1e-9);
        assert!((rb.on_policy_values[0] - ra.on_policy_values[0] - 100.0).abs() < 1e-9);
        assert!((rb.on_policy_values[1] - ra.on_policy_values[1] + 100.0).abs() < 1e-9);
    }
}
