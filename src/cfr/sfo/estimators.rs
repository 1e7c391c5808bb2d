//! Gradient estimators of a player's sequence-form utility (Farina, Kroer & Sandholm,
//! "Stochastic regret minimization in extensive-form games", section 4).
//!
//! Player `p`'s expected utility is linear in its sequence-form strategy `x_p`:
//! `u_p = Σ_z u_p(z) π_c(z) π_{-p}(z) x_p[σ_p(z)]`, so its gradient is
//! `g_p[σ] = Σ_{z: σ_p(z) = σ} u_p(z) π_c(z) π_{-p}(z)` (the loss of the regret minimiser is
//! `−g_p`). Every estimator here writes an estimate of `g_p` indexed by `p`'s sequences:
//!
//! * **exact**: the full-width sweep of [`PublicTree`] (opponent reach top-down, then the
//!   terminal entries).
//! * **external sampling**: sample chance and the opponent's actions, branch on all of `p`'s;
//!   every terminal reached adds `u_p(z)` to `σ_p(z)`. Unbiased because a terminal is reached
//!   with probability `π_c(z) π_{-p}(z)`.
//! * **balanced outcome sampling**: sample one terminal with chance and the opponent following
//!   their strategies and `p` following the *balanced* strategy `β_p`, and add
//!   `u_p(z) / x^β_p[σ_p(z)]` to `σ_p(z)`. The balanced strategy plays, at every infoset, each
//!   action with probability proportional to the number of terminal sequences (sequences that
//!   no infoset of `p` follows) below it, which guarantees `x^β_p[σ] ≥ 1 / n(∅)` for every
//!   sequence (appendix A.3; a test checks it).
//!
//! Sampled estimators average `samples` independent draws. The walks run over the
//! [`HistoryTree`] arrays: no game code, no strings.

use crate::tree::PublicTree;
use crate::tree::TreePolicy;
use crate::tree::history::{HistoryKind, HistoryTree};
use crate::util::SplitMix64;
use std::sync::Arc;

/// Where a draw's additions go: straight into a gradient, or into a log of `(sequence,
/// value)` pairs that is added to the gradient later, in the same order (parallel draws).
pub trait Accumulate {
    fn add(&mut self, i: usize, v: f64);
}

impl Accumulate for [f64] {
    #[inline]
    fn add(&mut self, i: usize, v: f64) {
        self[i] += v;
    }
}

impl Accumulate for Vec<(u32, f64)> {
    #[inline]
    fn add(&mut self, i: usize, v: f64) {
        self.push((i as u32, v));
    }
}

/// Which gradient estimator a solver uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Estimator {
    /// Full-width gradient (deterministic).
    Exact,
    /// External sampling: chance and opponent sampled, own actions enumerated.
    External,
    /// Outcome sampling with the balanced strategy for the player's own actions.
    BalancedOutcome,
}

/// The number of terminal sequences below every sequence of player `p` (`n(σ)`, with
/// `n(σ) = 1` for sequences no infoset follows), indexed by sequence.
pub fn terminal_sequence_counts(tree: &PublicTree, p: usize) -> Vec<f64> {
    let inf = &tree.infosets[p];
    let mut n = vec![0.0f64; inf.root() + 1];
    for i in (0..inf.len()).rev() {
        let total: f64 = inf.range(i).map(|a| n[a].max(1.0)).sum();
        n[inf.parent_seq[i] as usize] += total;
    }
    n
}

/// The balanced behavioural strategy of player `p` (appendix A.3 of the paper).
pub fn balanced_strategy(tree: &PublicTree, p: usize) -> Vec<f64> {
    let inf = &tree.infosets[p];
    let n = terminal_sequence_counts(tree, p);
    let mut b = vec![0.0; inf.num_actions_total()];
    for i in 0..inf.len() {
        let r = inf.range(i);
        let total: f64 = r.clone().map(|a| n[a].max(1.0)).sum();
        for a in r {
            b[a] = n[a].max(1.0) / total;
        }
    }
    b
}

/// The gradient estimators of one game, with their precomputed tables and scratch (clones
/// share the trees, so one per worker thread is cheap).
#[derive(Clone)]
pub struct Estimators {
    tree: Arc<PublicTree>,
    pub histories: Arc<HistoryTree>,
    /// Balanced behavioural strategy of each player.
    pub balanced: [Vec<f64>; 2],
    /// Sequence form of the balanced strategies.
    balanced_seq: [Vec<f64>; 2],
    reach: Vec<f64>,
    stack: Vec<u32>,
}

impl Estimators {
    /// Tables for `tree`, whose histories are `histories`.
    pub fn new(tree: Arc<PublicTree>, histories: HistoryTree) -> Self {
        let balanced = [balanced_strategy(&tree, 0), balanced_strategy(&tree, 1)];
        let balanced_seq = std::array::from_fn(|p| {
            let mut s = vec![0.0; tree.num_sequences(p)];
            tree.reach(p, &balanced[p], &mut s);
            s
        });
        let max_seq = tree.num_sequences(0).max(tree.num_sequences(1));
        Estimators {
            tree,
            histories: Arc::new(histories),
            balanced,
            balanced_seq,
            reach: vec![0.0; max_seq],
            stack: Vec::new(),
        }
    }

    /// Writes the estimate of player `p`'s utility gradient under `policy` into `out` (indexed
    /// by `p`'s sequences), averaging `samples` draws of a sampled estimator, draw `k` from the
    /// generator `draw_rng(k)`. Returns the number of histories visited (a full traversal for
    /// [`Estimator::Exact`]).
    pub fn gradient(
        &mut self,
        estimator: Estimator,
        p: usize,
        policy: &TreePolicy,
        samples: usize,
        draw_rng: impl FnMut(usize) -> SplitMix64,
        out: &mut [f64],
    ) -> u64 {
        match estimator {
            Estimator::Exact => {
                let tree = self.tree.clone();
                let q = 1 - p;
                let reach = &mut self.reach[..tree.num_sequences(q)];
                tree.reach(q, &policy[q], reach);
                tree.terminal_values(p, reach, out);
                tree.stats.histories as u64
            }
            Estimator::External | Estimator::BalancedOutcome => {
                out.iter_mut().for_each(|v| *v = 0.0);
                let touched = self.draws(estimator, p, policy, 0..samples, draw_rng, out);
                let scale = 1.0 / samples as f64;
                out.iter_mut().for_each(|v| *v *= scale);
                touched
            }
        }
    }

    /// Adds the draws `ks` of a sampled estimator (draw `k` from `draw_rng(k)`), in order, to
    /// `out` (a slice indexed by `p`'s sequences, or a log of `(sequence, value)` additions);
    /// returns the histories visited.
    pub fn draws(
        &mut self,
        estimator: Estimator,
        p: usize,
        policy: &TreePolicy,
        ks: std::ops::Range<usize>,
        mut draw_rng: impl FnMut(usize) -> SplitMix64,
        out: &mut (impl Accumulate + ?Sized),
    ) -> u64 {
        let tree = self.tree.clone();
        let tree = &*tree;
        let mut touched = 0;
        for k in ks {
            let mut rng = draw_rng(k);
            touched += match estimator {
                Estimator::External => self.external(tree, p, policy, &mut rng, out),
                _ => self.outcome(tree, p, policy, &mut rng, out),
            };
        }
        touched
    }

    /// One external-sampling draw, added to `out`; returns the histories visited.
    fn external(
        &mut self,
        tree: &PublicTree,
        p: usize,
        policy: &TreePolicy,
        rng: &mut SplitMix64,
        out: &mut (impl Accumulate + ?Sized),
    ) -> u64 {
        let ht = &self.histories;
        let sign = if p == 0 { 1.0 } else { -1.0 };
        let mut touched = 0;
        self.stack.clear();
        self.stack.push(0);
        while let Some(h) = self.stack.pop() {
            let h = h as usize;
            touched += 1;
            match ht.kind[h] {
                HistoryKind::Terminal => {
                    out.add(ht.seq[h][p] as usize, sign * ht.utility[h]);
                }
                HistoryKind::Chance => {
                    let c = ht.children(h);
                    let k = rng.weighted(&ht.chance_prob[c.clone()]);
                    self.stack.push((c.start + k) as u32);
                }
                HistoryKind::Decision(q) => {
                    let c = ht.children(h);
                    if q == p {
                        self.stack.extend(c.map(|x| x as u32));
                    } else {
                        let base = tree.infosets[q].offset[ht.infoset[h] as usize] as usize;
                        let k = rng.weighted(&policy[q][base..base + c.len()]);
                        self.stack.push((c.start + k) as u32);
                    }
                }
            }
        }
        touched
    }

    /// One balanced-outcome-sampling draw, added to `out`; returns the histories visited.
    fn outcome(
        &mut self,
        tree: &PublicTree,
        p: usize,
        policy: &TreePolicy,
        rng: &mut SplitMix64,
        out: &mut (impl Accumulate + ?Sized),
    ) -> u64 {
        let ht = &self.histories;
        let mut h = 0usize;
        let mut touched = 1;
        loop {
            let c = ht.children(h);
            let k = match ht.kind[h] {
                HistoryKind::Terminal => break,
                HistoryKind::Chance => rng.weighted(&ht.chance_prob[c.clone()]),
                HistoryKind::Decision(q) => {
                    let base = tree.infosets[q].offset[ht.infoset[h] as usize] as usize;
                    let sampling = if q == p {
                        &self.balanced[p]
                    } else {
                        &policy[q]
                    };
                    rng.weighted(&sampling[base..base + c.len()])
                }
            };
            h = c.start + k;
            touched += 1;
        }
        let sigma = ht.seq[h][p] as usize;
        let u = if p == 0 {
            ht.utility[h]
        } else {
            -ht.utility[h]
        };
        out.add(sigma, u / self.balanced_seq[p][sigma]);
        touched
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::load_game;

    fn setup(name: &str) -> (Arc<PublicTree>, Estimators) {
        let game = load_game(name).unwrap();
        let tree = PublicTree::build(game.as_ref()).unwrap();
        let ht = HistoryTree::build(game.as_ref(), &tree).unwrap();
        let tree = Arc::new(tree);
        let est = Estimators::new(tree.clone(), ht);
        (tree, est)
    }

    /// A fixed non-uniform policy with full support.
    fn skewed_policy(tree: &PublicTree, seed: u64) -> TreePolicy {
        let mut rng = SplitMix64::new(seed);
        std::array::from_fn(|p| {
            let inf = &tree.infosets[p];
            let mut flat = vec![0.0; inf.num_actions_total()];
            for i in 0..inf.len() {
                let r = inf.range(i);
                let raw: Vec<f64> = r.clone().map(|_| 0.2 + rng.next_f64()).collect();
                let s: f64 = raw.iter().sum();
                for (a, v) in r.zip(raw) {
                    flat[a] = v / s;
                }
            }
            flat
        })
    }

    /// The exact gradient computed history by history (independent of the sequence-form
    /// sweep): Σ over terminals of u_p · π_c · π_{-p}, added at σ_p(z).
    fn brute_force_gradient(
        tree: &PublicTree,
        ht: &HistoryTree,
        p: usize,
        policy: &TreePolicy,
    ) -> Vec<f64> {
        let mut g = vec![0.0; tree.num_sequences(p)];
        let mut reach = vec![0.0; ht.len()];
        reach[0] = 1.0;
        for h in 0..ht.len() {
            match ht.kind[h] {
                HistoryKind::Terminal => {
                    let u = if p == 0 {
                        ht.utility[h]
                    } else {
                        -ht.utility[h]
                    };
                    g[ht.seq[h][p] as usize] += reach[h] * u;
                }
                HistoryKind::Chance => {
                    for c in ht.children(h) {
                        reach[c] = reach[h] * ht.chance_prob[c];
                    }
                }
                HistoryKind::Decision(q) => {
                    let base = tree.infosets[q].offset[ht.infoset[h] as usize] as usize;
                    for (k, c) in ht.children(h).enumerate() {
                        reach[c] = reach[h] * if q == p { 1.0 } else { policy[q][base + k] };
                    }
                }
            }
        }
        g
    }

    #[test]
    fn exact_estimator_matches_a_history_by_history_gradient() {
        for name in ["kuhn_poker", "leduc_poker"] {
            let (tree, mut est) = setup(name);
            let policy = skewed_policy(&tree, 11);
            for p in 0..2 {
                let want = brute_force_gradient(&tree, &est.histories, p, &policy);
                let mut got = vec![0.0; tree.num_sequences(p)];
                let mut rng = SplitMix64::new(0);
                est.gradient(
                    Estimator::Exact,
                    p,
                    &policy,
                    1,
                    |_| SplitMix64::new(rng.next_u64()),
                    &mut got,
                );
                for (a, b) in want.iter().zip(&got) {
                    assert!((a - b).abs() < 1e-12, "{name} p{p}: {a} vs {b}");
                }
            }
        }
    }

    /// Unbiasedness: the mean of many single-draw estimates equals the exact gradient in every
    /// coordinate within 5 standard errors (plus rounding slack).
    fn check_unbiased(name: &str, estimator: Estimator, draws: usize) {
        let (tree, mut est) = setup(name);
        let policy = skewed_policy(&tree, 5);
        for p in 0..2 {
            let n = tree.num_sequences(p);
            let mut exact = vec![0.0; n];
            let mut rng = SplitMix64::new(1);
            est.gradient(
                Estimator::Exact,
                p,
                &policy,
                1,
                |_| SplitMix64::new(rng.next_u64()),
                &mut exact,
            );
            let (mut sum, mut sum_sq) = (vec![0.0; n], vec![0.0; n]);
            let mut one = vec![0.0; n];
            let mut rng = SplitMix64::new(99 + p as u64);
            for _ in 0..draws {
                est.gradient(
                    estimator,
                    p,
                    &policy,
                    1,
                    |_| SplitMix64::new(rng.next_u64()),
                    &mut one,
                );
                for k in 0..n {
                    sum[k] += one[k];
                    sum_sq[k] += one[k] * one[k];
                }
            }
            let m = draws as f64;
            let mut worst: f64 = 0.0;
            for k in 0..n {
                let mean = sum[k] / m;
                let var = (sum_sq[k] / m - mean * mean).max(0.0);
                let se = (var / m).sqrt();
                let z = (mean - exact[k]).abs() / (se + 1e-12);
                worst = worst.max(z);
                assert!(
                    (mean - exact[k]).abs() <= 5.0 * se + 1e-12,
                    "{name} {estimator:?} p{p} seq {k}: mean {mean} exact {} se {se}",
                    exact[k]
                );
            }
            // The estimator is not trivially exact (it has variance somewhere).
            assert!(
                sum_sq
                    .iter()
                    .zip(&sum)
                    .any(|(s2, s)| s2 / m - (s / m).powi(2) > 1e-9)
            );
            eprintln!("{name} {estimator:?} p{p}: largest |z| = {worst:.2}");
        }
    }

    #[test]
    fn external_sampling_is_unbiased() {
        check_unbiased("kuhn_poker", Estimator::External, 20_000);
        check_unbiased("leduc_poker", Estimator::External, 20_000);
    }

    #[test]
    fn balanced_outcome_sampling_is_unbiased() {
        check_unbiased("kuhn_poker", Estimator::BalancedOutcome, 200_000);
        check_unbiased("leduc_poker", Estimator::BalancedOutcome, 400_000);
    }

    #[test]
    fn averaging_samples_divides_the_variance() {
        // The mean of S draws has variance (1/S) of one draw: compare the summed variances.
        let (tree, mut est) = setup("kuhn_poker");
        let policy = skewed_policy(&tree, 2);
        let n = tree.num_sequences(0);
        let total_var = |est: &mut Estimators, samples: usize, draws: usize| {
            let (mut s1, mut s2) = (vec![0.0; n], vec![0.0; n]);
            let mut g = vec![0.0; n];
            let mut rng = SplitMix64::new(samples as u64);
            for _ in 0..draws {
                est.gradient(
                    Estimator::BalancedOutcome,
                    0,
                    &policy,
                    samples,
                    |_| SplitMix64::new(rng.next_u64()),
                    &mut g,
                );
                for k in 0..n {
                    s1[k] += g[k];
                    s2[k] += g[k] * g[k];
                }
            }
            let m = draws as f64;
            (0..n).map(|k| s2[k] / m - (s1[k] / m).powi(2)).sum::<f64>()
        };
        let v1 = total_var(&mut est, 1, 40_000);
        let v10 = total_var(&mut est, 10, 8_000);
        let ratio = v1 / v10;
        assert!((7.0..14.0).contains(&ratio), "variance ratio {ratio}");
    }

    #[test]
    fn balanced_strategy_reaches_every_sequence_with_probability_at_least_one_over_n() {
        // Appendix A.3: x^β[σ] ≥ 1 / n(∅) for every sequence.
        for name in ["kuhn_poker", "leduc_poker", "goofspiel5"] {
            let (tree, est) = setup(name);
            for p in 0..2 {
                let n = terminal_sequence_counts(&tree, p);
                let inf = &tree.infosets[p];
                let n_root = n[inf.root()];
                let x = &est.balanced_seq[p];
                let min = x.iter().copied().fold(f64::INFINITY, f64::min);
                assert!(min * n_root >= 1.0 - 1e-9, "{name} p{p}: {min} * {n_root}");
                // Valid behavioural strategy.
                for i in 0..inf.len() {
                    let s: f64 = inf.range(i).map(|a| est.balanced[p][a]).sum();
                    assert!((s - 1.0).abs() < 1e-12);
                }
            }
        }
    }

    #[test]
    fn external_sampling_touches_fewer_histories_than_a_traversal() {
        let (tree, mut est) = setup("leduc_poker");
        let policy = skewed_policy(&tree, 3);
        let mut g = vec![0.0; tree.num_sequences(0)];
        let mut rng = SplitMix64::new(4);
        let es = est.gradient(
            Estimator::External,
            0,
            &policy,
            1,
            |_| SplitMix64::new(rng.next_u64()),
            &mut g,
        );
        let os = est.gradient(
            Estimator::BalancedOutcome,
            0,
            &policy,
            1,
            |_| SplitMix64::new(rng.next_u64()),
            &mut g,
        );
        let full = tree.stats.histories as u64;
        assert!(
            os >= 3 && os < es && es < full,
            "os {os} es {es} full {full}"
        );
    }
}
