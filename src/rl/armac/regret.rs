//! Regret matching on ARMAC's conditional advantages, and ARMAC's tabular limit.
//!
//! # Eq. 1: `NormalizedReLU`
//! `π(s, a) = W⁺(s, a) / Σ_b W⁺(s, b)` over the legal actions, or uniform over them when no
//! `W(s, b)` is positive (`normalized_relu`). ARMAC applies it to the mean-regret head
//! `W̄_θ(s)` to get the next joint policy (Algorithm 1, "Let π^t(s) = NormalizedReLU(W̄_θt(s))").
//!
//! # Eq. 3 and Lemma 1: the tabular limit
//! With exact critics and infinitely many trajectories, ARMAC's regression target for player
//! `i` at epoch `T` is the conditional expectation (Eq. 3; perfect recall gives the right-hand
//! form, which no longer depends on the exploratory policy `μ_i^T`)
//!
//! ```text
//! W_i^T(s, a) = Σ_{h∈s} (1/T) Σ_{j≤T} η_{-i}^{π^j}(h) A_{π^j,i}(h, a)  /  (1/T) Σ_{j≤T} η_{-i}^{π^j}(s)
//! A_{π,i}(h, a) = q_{π,i}(h, a) − v_{π,i}(h),     v_{π,i}(h) = Σ_a π(h, a) q_{π,i}(h, a)
//! ```
//!
//! where `η_{-i}(h)` is the reach probability of `h` due to chance and the opponent. Appendix D
//! shows that the numerator (times `T`) is exactly CFR's cumulative counterfactual regret
//! `R_i^T(s, a) = Σ_j q^c_{π^j,i}(s, a) − v^c_{π^j,i}(s)`, so `R_i^T = w^T(s) · W_i^T` with
//! `w^T(s) = Σ_j η_{-i}^{π^j}(s) > 0` a function of the infoset only. Regret matching is
//! invariant to a positive per-infoset factor, hence (Eq. 4, Lemma 1)
//! `NormalizedReLU(W_i^T) = NormalizedReLU(R_i^T) = π_i^{T+1}` of CFR.
//!
//! [`TabularArmac`] implements exactly that limit with lookup tables: each epoch it computes the
//! exact per-history advantages `A_{π^T,i}(h, a)` of the current joint policy by walking every
//! history of the game, adds `Σ_{h∈s} η_{-i}^{π^T}(h) A_{π^T,i}(h, a)` and `η_{-i}^{π^T}(s)` to
//! running sums, sets `W^T = sum / weight` (Eq. 3) and `π^{T+1} = NormalizedReLU(W^T)` for both
//! players.
//!
//! # Which CFR: simultaneous updates
//! Both players' `W^T` average over the *same* joint policies `π^1 … π^T` (the opponent plays
//! `π_{-i}^j`, and the critic evaluates the joint `π^j`), and both `π_0^{T+1}` and `π_1^{T+1}`
//! are produced at the end of epoch `T`. Player 1's epoch-`T` regret therefore never sees player
//! 0's `π_0^{T+1}`: the tabular limit is CFR with **simultaneous** updates (plain regret sums,
//! no CFR+ clamping, no discounting), starting from the uniform policy `π^1` (an all-zero
//! table). The tests check `π^1 … π^51` against
//! `TabularSolver::new(tree, SolverSpec::named("cfr")?.with_updates(Updates::Simultaneous))`
//! to 1e-9 on Kuhn and Leduc poker, and that it differs from alternating-update CFR.
//!
//! Indexing note: this follows section 3.2 (`π^{T+1}` uses `j = 1 … T`, the current policy
//! included). Algorithm 1 literally samples `j ∈ {0, …, t−1}` with critics `θ^j` saved at the end
//! of epoch `j`, i.e. the newest policy's advantages enter one epoch later; that delayed variant
//! is *not* CFR's sequence and is not what Lemma 1 describes.
//!
//! Floating point: like [`crate::cfr::TabularSolver`] (see [`crate::cfr::ROUNDING_NOISE`]), an
//! epoch's contribution to an entry is dropped when it is rounding noise relative to the
//! infoset's counterfactual values, and `v(h)` is exactly `q(h, ·)` when all action values tie
//! ([`crate::cfr::expected_value`]); regret matching is discontinuous at zero, so a 1e-17 residue
//! would otherwise turn a uniform policy pure.

use crate::cfr::{ROUNDING_NOISE, expected_value};
use crate::game::{Game, State, Turn};
use crate::policy::probs::normalized_relu_into;
use crate::tree::PublicTree;
use crate::tree::TreePolicy;
use std::collections::HashMap;
use std::sync::Arc;

/// Eq. 1 applied to every infoset of a tree: `w` is indexed by each player's global action
/// indices (all actions of an infoset are legal).
pub fn tree_policy_from_w(tree: &PublicTree, w: &[Vec<f64>; 2]) -> TreePolicy {
    std::array::from_fn(|p| {
        let inf = &tree.infosets[p];
        assert_eq!(
            w[p].len(),
            inf.num_actions_total(),
            "W table of player {p} has the wrong size"
        );
        let mut out = vec![0.0; w[p].len()];
        let width = (0..inf.len())
            .map(|i| inf.range(i).len())
            .max()
            .unwrap_or(0);
        let all_legal = vec![true; width];
        for i in 0..inf.len() {
            let r = inf.range(i);
            let n = r.len();
            normalized_relu_into(&w[p][r.clone()], &all_legal[..n], &mut out[r]);
        }
        out
    })
}

/// A node of the history tree that [`TabularArmac`] walks every epoch.
#[derive(Clone, Debug)]
enum HistoryNode {
    Terminal([f64; 2]),
    Chance(Vec<(u32, f64)>),
    Decision {
        player: usize,
        infoset: u32,
        /// One child per action of the infoset, in the tree's action order.
        children: Vec<u32>,
    },
}

/// Every history of the game, flattened once (children before parents; the root is last).
#[derive(Clone, Debug)]
struct HistoryTree {
    nodes: Vec<HistoryNode>,
    root: u32,
}

impl HistoryTree {
    fn build(game: &dyn Game, tree: &PublicTree) -> Result<HistoryTree, String> {
        let index: [HashMap<&str, usize>; 2] = std::array::from_fn(|p| {
            tree.infosets[p]
                .key
                .iter()
                .enumerate()
                .map(|(i, k)| (k.as_str(), i))
                .collect()
        });
        let mut nodes = Vec::new();
        let root = Self::add(tree, &index, game.new_initial_state().as_ref(), &mut nodes)?;
        Ok(HistoryTree { nodes, root })
    }

    fn add(
        tree: &PublicTree,
        index: &[HashMap<&str, usize>; 2],
        state: &dyn State,
        nodes: &mut Vec<HistoryNode>,
    ) -> Result<u32, String> {
        let child = |a, nodes: &mut Vec<HistoryNode>| {
            let mut s = state.clone_box();
            s.apply_action(a);
            Self::add(tree, index, s.as_ref(), nodes)
        };
        let node = match state.turn() {
            Turn::Terminal => HistoryNode::Terminal(state.returns()),
            Turn::Chance => {
                let mut children = Vec::new();
                for (a, p) in state.chance_outcomes() {
                    children.push((child(a, nodes)?, p));
                }
                HistoryNode::Chance(children)
            }
            Turn::Player(p) => {
                let key = state.information_state_string(p);
                let &i = index[p].get(key.as_str()).ok_or_else(|| {
                    format!(
                        "infostate {key:?} of player {p} is not in the tree of {}",
                        tree.game
                    )
                })?;
                let inf = &tree.infosets[p];
                let legal = state.legal_actions();
                if inf.actions[inf.range(i)] != legal[..] {
                    return Err(format!(
                        "infostate {key:?}: legal actions differ from the tree's"
                    ));
                }
                let mut children = Vec::with_capacity(legal.len());
                for a in legal {
                    children.push(child(a, nodes)?);
                }
                HistoryNode::Decision {
                    player: p,
                    infoset: i as u32,
                    children,
                }
            }
        };
        nodes.push(node);
        Ok(nodes.len() as u32 - 1)
    }
}

/// One epoch's exact sums over histories.
struct EpochSums {
    /// `Σ_{h∈s} η_{-i}(h) A_i(h, a)` per global action index.
    advantage: [Vec<f64>; 2],
    /// `Σ_{h∈s} η_{-i}(h) q_i(h, a)`: the counterfactual action values (noise scale only).
    cf_q: [Vec<f64>; 2],
    /// `η_{-i}(s) = Σ_{h∈s} η_{-i}(h)` per infoset.
    reach: [Vec<f64>; 2],
}

/// ARMAC in the tabular limit (exact critics, exact conditional expectations, lookup-table
/// `W`): see the module docs. Its policy sequence is that of simultaneous-update CFR.
#[derive(Clone, Debug)]
pub struct TabularArmac {
    tree: Arc<PublicTree>,
    histories: HistoryTree,
    epoch: u64,
    /// `Σ_{j≤T} Σ_{h∈s} η_{-i}^{π^j}(h) A_{π^j,i}(h, a)`: `T ×` the numerator of Eq. 3.
    advantage_sum: [Vec<f64>; 2],
    /// `w^T(s) = Σ_{j≤T} η_{-i}^{π^j}(s)`: `T ×` the denominator of Eq. 3.
    weight: [Vec<f64>; 2],
    /// `W^T(s, a)` (Eq. 3), zero before the first epoch.
    w: [Vec<f64>; 2],
    /// `π^{T+1} = NormalizedReLU(W^T)`.
    current: TreePolicy,
}

impl TabularArmac {
    /// ARMAC at epoch 0: `W = 0`, so the current policy `π^1` is uniform. Walks `game` once to
    /// flatten its histories and checks that they match `tree` (built from the same game).
    ///
    /// # Errors
    /// If a history's infostate or legal actions are not those of `tree`.
    pub fn new(game: &dyn Game, tree: Arc<PublicTree>) -> Result<TabularArmac, String> {
        let histories = HistoryTree::build(game, &tree)?;
        let zeros = |p: usize| vec![0.0; tree.infosets[p].num_actions_total()];
        let w = [zeros(0), zeros(1)];
        let current = tree_policy_from_w(&tree, &w);
        Ok(TabularArmac {
            advantage_sum: [zeros(0), zeros(1)],
            weight: [
                vec![0.0; tree.infosets[0].len()],
                vec![0.0; tree.infosets[1].len()],
            ],
            w,
            current,
            histories,
            tree,
            epoch: 0,
        })
    }

    /// The compiled tree.
    pub fn tree(&self) -> &Arc<PublicTree> {
        &self.tree
    }

    /// Epochs done so far (`T`).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The current joint policy `π^{T+1} = NormalizedReLU(W^T)` (uniform at epoch 0).
    pub fn current_policy(&self) -> &TreePolicy {
        &self.current
    }

    /// The lookup table `W^T(s, a)` of Eq. 3, per player over global action indices.
    pub fn w(&self) -> &[Vec<f64>; 2] {
        &self.w
    }

    /// `Σ_{j≤T} Σ_{h∈s} η_{-i}^{π^j}(h) A_{π^j,i}(h, a)`, which Appendix D shows is CFR's
    /// cumulative counterfactual regret `R^T(s, a)`.
    pub fn cumulative_advantage(&self) -> &[Vec<f64>; 2] {
        &self.advantage_sum
    }

    /// The infoset factor `w^T(s) = Σ_{j≤T} η_{-i}^{π^j}(s)` with `R^T = w^T(s) · W^T`.
    pub fn infoset_weight(&self) -> &[Vec<f64>; 2] {
        &self.weight
    }

    /// One epoch: exact advantages of the current joint policy `π^T` at every history, the
    /// updated tables, `W^T` (Eq. 3) and `π^{T+1} = NormalizedReLU(W^T)` for both players.
    pub fn step(&mut self) {
        let mut sums = EpochSums {
            advantage: self.advantage_sum.each_ref().map(|v| vec![0.0; v.len()]),
            cf_q: self.advantage_sum.each_ref().map(|v| vec![0.0; v.len()]),
            reach: self.weight.each_ref().map(|v| vec![0.0; v.len()]),
        };
        self.walk(self.histories.root, [1.0; 2], 1.0, &mut sums);
        self.epoch += 1;
        for p in 0..2 {
            let inf = &self.tree.infosets[p];
            let sigma = &self.current[p];
            for i in 0..inf.len() {
                let r = inf.range(i);
                let q = &sums.cf_q[p][r.clone()];
                let v = expected_value(&sigma[r.clone()], q);
                let noise = ROUNDING_NOISE * q.iter().fold(v.abs(), |m, x| m.max(x.abs()));
                for k in r.clone() {
                    let d = sums.advantage[p][k];
                    if d.abs() > noise {
                        self.advantage_sum[p][k] += d;
                    }
                }
                self.weight[p][i] += sums.reach[p][i];
                let wt = self.weight[p][i];
                for k in r {
                    self.w[p][k] = if wt > 0.0 {
                        self.advantage_sum[p][k] / wt
                    } else {
                        0.0
                    };
                }
            }
        }
        self.current = tree_policy_from_w(&self.tree, &self.w);
    }

    /// Runs `epochs` epochs.
    pub fn run(&mut self, epochs: u64) {
        for _ in 0..epochs {
            self.step();
        }
    }

    /// Values `[u_0, u_1]` of history `n` under the current policy; accumulates the acting
    /// player's reach-weighted advantages on the way. `reach[p]` is player `p`'s own reach of
    /// the history, `chance` chance's.
    fn walk(&self, n: u32, reach: [f64; 2], chance: f64, sums: &mut EpochSums) -> [f64; 2] {
        match &self.histories.nodes[n as usize] {
            HistoryNode::Terminal(u) => *u,
            HistoryNode::Chance(children) => {
                let mut v = [0.0; 2];
                for &(c, pr) in children {
                    let x = self.walk(c, reach, chance * pr, sums);
                    v[0] += pr * x[0];
                    v[1] += pr * x[1];
                }
                v
            }
            HistoryNode::Decision {
                player,
                infoset,
                children,
            } => {
                let i = *player;
                let r = self.tree.infosets[i].range(*infoset as usize);
                let sigma = &self.current[i][r.clone()];
                let mut q = [vec![0.0; children.len()], vec![0.0; children.len()]];
                for (a, &c) in children.iter().enumerate() {
                    let mut child_reach = reach;
                    child_reach[i] *= sigma[a];
                    let x = self.walk(c, child_reach, chance, sums);
                    q[0][a] = x[0];
                    q[1][a] = x[1];
                }
                let v = [expected_value(sigma, &q[0]), expected_value(sigma, &q[1])];
                let eta = chance * reach[1 - i];
                for (a, k) in r.enumerate() {
                    sums.advantage[i][k] += eta * (q[i][a] - v[i]);
                    sums.cf_q[i][k] += eta * q[i][a];
                }
                sums.reach[i][*infoset as usize] += eta;
                v
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cfr::{SolverSpec, TabularSolver, Updates};
    use crate::games::load_game;
    use crate::util::SplitMix64;

    fn setup(name: &str) -> (TabularArmac, Arc<PublicTree>) {
        let game = load_game(name).unwrap();
        let tree = Arc::new(PublicTree::build(game.as_ref()).unwrap());
        (
            TabularArmac::new(game.as_ref(), tree.clone()).unwrap(),
            tree,
        )
    }

    fn max_diff(a: &TreePolicy, b: &TreePolicy) -> f64 {
        (0..2)
            .flat_map(|p| a[p].iter().zip(&b[p]).map(|(x, y)| (x - y).abs()))
            .fold(0.0, f64::max)
    }

    /// Lemma 1 as a test: ARMAC's tabular limit produces, epoch by epoch, the current policies
    /// of simultaneous-update CFR, and its cumulative advantage is CFR's cumulative regret
    /// (`R^T = w^T(s) · W^T`, Appendix D).
    fn lemma1(name: &str, epochs: u64) {
        let (mut armac, tree) = setup(name);
        let spec = SolverSpec::named("cfr")
            .unwrap()
            .with_updates(Updates::Simultaneous);
        let mut cfr = TabularSolver::new(tree.clone(), spec);
        let mut worst_policy: f64 = 0.0;
        let mut worst_regret: f64 = 0.0;
        for t in 0..=epochs {
            assert_eq!(armac.epoch(), t);
            let d = max_diff(armac.current_policy(), cfr.current_policy());
            assert!(d <= 1e-9, "{name} epoch {t}: policies differ by {d:e}");
            worst_policy = worst_policy.max(d);
            for p in 0..2 {
                let inf = &tree.infosets[p];
                for i in 0..inf.len() {
                    for k in inf.range(i) {
                        let r = cfr.state().regrets[p][k];
                        let wr = armac.infoset_weight()[p][i] * armac.w()[p][k];
                        let e = (r - wr).abs() / (1.0 + r.abs());
                        assert!(
                            e <= 1e-9,
                            "{name} epoch {t} player {p} action {k}: R {r} vs w·W {wr}"
                        );
                        worst_regret = worst_regret.max(e);
                    }
                }
            }
            armac.step();
            cfr.iterate();
        }
        eprintln!(
            "{name}: {epochs} epochs, max |π_ARMAC − π_CFR(simultaneous)| = {worst_policy:.2e}, \
             max rel |R − w·W| = {worst_regret:.2e}"
        );
    }

    #[test]
    fn lemma1_kuhn_equals_simultaneous_cfr() {
        lemma1("kuhn_poker", 50);
    }

    #[test]
    fn lemma1_leduc_equals_simultaneous_cfr() {
        lemma1("leduc_poker", 50);
    }

    /// A game with many tied action values (win/loss returns): the rounding-noise handling
    /// keeps the limit on CFR's sequence.
    #[test]
    fn lemma1_goofspiel4_equals_simultaneous_cfr() {
        lemma1(
            "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=4,points_order=descending))",
            30,
        );
    }

    /// The tabular limit is not alternating-update CFR (OpenSpiel's default).
    #[test]
    fn tabular_armac_is_not_alternating_cfr() {
        let (mut armac, tree) = setup("kuhn_poker");
        let mut alt = TabularSolver::new(tree, SolverSpec::named("cfr").unwrap());
        let mut worst: f64 = 0.0;
        for _ in 0..10 {
            armac.step();
            alt.iterate();
            worst = worst.max(max_diff(armac.current_policy(), alt.current_policy()));
        }
        assert!(
            worst > 1e-3,
            "alternating CFR unexpectedly matches: {worst:e}"
        );
    }

    /// The content of Lemma 1: scaling `W` by a positive *infoset* factor leaves the policy
    /// unchanged, scaling by an *action*-dependent factor does not.
    #[test]
    fn infoset_factor_is_invisible_action_factor_is_not() {
        for name in ["kuhn_poker", "leduc_poker"] {
            let (mut armac, tree) = setup(name);
            armac.run(20);
            let base = tree_policy_from_w(&tree, armac.w());
            let mut rng = SplitMix64::new(42);
            let mut by_infoset = armac.w().clone();
            let mut by_action = armac.w().clone();
            for p in 0..2 {
                let inf = &tree.infosets[p];
                for i in 0..inf.len() {
                    let c = 0.01 + 100.0 * rng.next_f64();
                    for (a, k) in inf.range(i).enumerate() {
                        by_infoset[p][k] *= c;
                        by_action[p][k] *= 1.0 + 3.0 * a as f64;
                    }
                }
            }
            let same = max_diff(&base, &tree_policy_from_w(&tree, &by_infoset));
            assert!(
                same <= 1e-12,
                "{name}: infoset factor changed the policy by {same:e}"
            );
            let changed = max_diff(&base, &tree_policy_from_w(&tree, &by_action));
            assert!(
                changed > 1e-2,
                "{name}: action factor left the policy unchanged ({changed:e})"
            );
            // `base` is the learner's own current policy.
            assert!(max_diff(&base, armac.current_policy()) == 0.0);
        }
    }
}
