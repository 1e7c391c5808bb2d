//! Exact advantages for ARMAC's ablations (`armac.exact_advantages`, small games only): the
//! values of one joint policy over the whole history tree, looked up by the actors in place of
//! a past critic's estimates. With them the mean-regret head is trained on the true
//! `q_{π^j}(h, a) − v_{π^j}(h)` at every sampled history, which separates the critic's error
//! from the regret head's.

use super::choices::AdvantageTarget;
use crate::game::Action;
use crate::tree::history::{HistoryKind, HistoryTree};
use crate::tree::{PublicTree, TreePolicy};
use std::sync::Arc;

/// Player 0's expected payoff of every history under one joint policy.
pub struct ExactValues {
    ht: Arc<HistoryTree>,
    /// `v_0(h)`, divided by the runs' reward scale (the units the critic learns in).
    v0: Vec<f32>,
    /// With [`AdvantageTarget::Infoset`]: per player, the advantages of every infoset action
    /// (indexed like a [`TreePolicy`]) averaged over the infoset's histories with the weights
    /// `π_{-i}(h)` of chance and the opponent, i.e. the counterfactual regret of the infoset
    /// divided by its counterfactual reach.
    infoset: Option<[Vec<f32>; 2]>,
}

impl ExactValues {
    /// Values of `policy` (indexed like a [`TreePolicy`] of `tree`) on `ht`, divided by
    /// `reward_scale`.
    pub fn new(
        ht: Arc<HistoryTree>,
        tree: &PublicTree,
        policy: &TreePolicy,
        reward_scale: f64,
        target: AdvantageTarget,
    ) -> Self {
        let mut v = vec![0.0; ht.len()];
        ht.values_into(tree, policy, &mut v);
        let infoset = (target == AdvantageTarget::Infoset).then(|| {
            std::array::from_fn(|p| {
                let reach = ht.opponent_reach(tree, policy, p);
                let sign = if p == 0 { 1.0 } else { -1.0 };
                let mut num = vec![0.0f64; policy[p].len()];
                let mut den = vec![0.0f64; policy[p].len()];
                for h in 0..ht.len() {
                    if ht.kind[h] != HistoryKind::Decision(p) {
                        continue;
                    }
                    let base = tree.infosets[p].offset[ht.infoset[h] as usize] as usize;
                    for (k, c) in ht.children(h).enumerate() {
                        num[base + k] += reach[h] * sign * (v[c] - v[h]);
                        den[base + k] += reach[h];
                    }
                }
                num.iter()
                    .zip(&den)
                    .map(|(n, d)| {
                        if *d > 0.0 {
                            (n / d / reward_scale) as f32
                        } else {
                            0.0
                        }
                    })
                    .collect()
            })
        });
        let v0 = v.iter().map(|x| (x / reward_scale) as f32).collect();
        Self { ht, v0, infoset }
    }

    /// The history reached by `actions` from the root, if the tree has it.
    pub fn history(&self, actions: &[Action]) -> Option<usize> {
        let mut h = 0usize;
        for &a in actions {
            h = self.ht.children(h).find(|&c| self.ht.action[c] == a)?;
        }
        Some(h)
    }

    /// `q(h, a) − v(h)` for the acting `player` at the history reached by `actions`, indexed by
    /// action (`num_actions` entries, 0 at illegal actions); `None` if the history is unknown.
    pub fn advantages(
        &self,
        actions: &[Action],
        player: usize,
        num_actions: usize,
    ) -> Option<Vec<f32>> {
        let h = self.history(actions)?;
        let sign = if player == 0 { 1.0 } else { -1.0 };
        let v = sign * self.v0[h];
        let mut out = vec![0.0; num_actions];
        for (k, c) in self.ht.children(h).enumerate() {
            out[self.ht.action[c]] = match (&self.infoset, self.ht.kind[h]) {
                (Some(agg), HistoryKind::Decision(p)) => {
                    agg[p][self.ht.steps[h].action_base as usize + k]
                }
                _ => sign * self.v0[c] - v,
            };
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::load_game;

    /// On Kuhn under the uniform policy the advantages are the exact action values minus the
    /// state value, and they average to zero under the policy.
    #[test]
    fn uniform_kuhn_advantages_match_a_direct_computation() {
        let game = load_game("kuhn_poker").unwrap();
        let tree = PublicTree::build(game.as_ref()).unwrap();
        let ht = Arc::new(HistoryTree::build(game.as_ref(), &tree).unwrap());
        let uniform = crate::tree::uniform_tree_policy(&tree);
        let ev = ExactValues::new(ht.clone(), &tree, &uniform, 2.0, AdvantageTarget::History);
        // Deal J (0) to player 0 and Q (1) to player 1: player 0 to act, pass (0) or bet (1).
        // Pass: player 1 with Q passes (J loses 1) or bets, then player 0 folds (-1) or calls
        // (-2): uniform gives 0.5·(-1) + 0.5·(0.5·(-1) + 0.5·(-2)) = -1.25.
        // Bet: player 1 folds (+1) or calls (-2): -0.5. Value: -0.875.
        let adv = ev.advantages(&[0, 1], 0, 2).unwrap();
        let want = [(-1.25 + 0.875) / 2.0, (-0.5 + 0.875) / 2.0];
        for (a, w) in adv.iter().zip(want) {
            assert!((*a as f64 - w).abs() < 1e-6, "{adv:?} vs {want:?}");
        }
        // Player 1's view after player 0 bets: call (-2 for J... here Q wins +2) or fold (-1).
        let adv1 = ev.advantages(&[0, 1, 1], 1, 2).unwrap();
        assert!(
            (adv1[0] as f64 - (-1.0 - 0.5) / 2.0).abs() < 1e-6,
            "{adv1:?}"
        );
        assert!(
            (adv1[1] as f64 - (2.0 - 0.5) / 2.0).abs() < 1e-6,
            "{adv1:?}"
        );
        assert!(
            ev.advantages(&[0, 0], 0, 2).is_none(),
            "dealing J twice is no history"
        );
        // Averaged over the infoset: player 0 holding J cannot tell Q from K, which chance deals
        // with equal probability before anyone acts, so the target is the mean of the two.
        let agg = ExactValues::new(ht, &tree, &uniform, 2.0, AdvantageTarget::Infoset);
        let (q, k) = (
            ev.advantages(&[0, 1], 0, 2).unwrap(),
            ev.advantages(&[0, 2], 0, 2).unwrap(),
        );
        for deal in [[0, 1], [0, 2]] {
            let a = agg.advantages(&deal, 0, 2).unwrap();
            for i in 0..2 {
                assert!(
                    (a[i] - (q[i] + k[i]) / 2.0).abs() < 1e-6,
                    "{a:?} {q:?} {k:?}"
                );
            }
        }
        // Player 1 holding K after a bet faces J or Q, each reached with probability
        // 1/3 · 1/2 (the deal, then the uniform bet): the mean again, and calling beats folding.
        let (j, q) = (
            ev.advantages(&[0, 2, 1], 1, 2).unwrap(),
            ev.advantages(&[1, 2, 1], 1, 2).unwrap(),
        );
        let a = agg.advantages(&[1, 2, 1], 1, 2).unwrap();
        for i in 0..2 {
            assert!(
                (a[i] - (j[i] + q[i]) / 2.0).abs() < 1e-6,
                "{a:?} {j:?} {q:?}"
            );
        }
        assert!(a[1] > a[0], "{a:?}");
    }
}
