//! Tree-Backup(λ) targets for ARMAC's history critic.
//!
//! Algorithm 1 trains the critic `q_θ(h, a)` on replayed trajectories with Tree-Backup(λ)
//! (Precup, Sutton & Singh, "Eligibility Traces for Off-Policy Policy Evaluation", ICML 2000;
//! reference \[30\] of the ARMAC paper). Tree-Backup corrects for the behaviour policy without
//! importance ratios: each bootstrapped step is weighted by the *target* policy's probability of
//! the action actually taken, so the target never divides by a behaviour probability (the point
//! of ARMAC: no importance sampling, section 3.1).
//!
//! # The recursion
//! A trajectory has decision steps `k = 0 .. T-1` (chance steps are not listed; they are part
//! of the environment's transition). At step `k` the inputs are the action taken `a_k`, the
//! target policy `π_k` (a distribution over all actions, zero on illegal ones) and the critic's
//! current estimates `q_k[p][a]` of both players' utilities `p ∈ {0, 1}`. Rewards are zero
//! except at the end, where player `p` receives `u[p]`, and `γ = 1`. The TB(λ) target for
//! `q_k[p][a_k]` is
//!
//! ```text
//! G_{T-1}[p] = u[p]
//! G_k[p]     = V_{k+1}[p] + λ · π_{k+1}(a_{k+1}) · (G_{k+1}[p] − q_{k+1}[p][a_{k+1}])
//! V_{k+1}[p] = Σ_a π_{k+1}(a) · q_{k+1}[p][a]
//! ```
//!
//! which is Precup et al.'s tree-backup return with the per-step reward folded into the final
//! `u`. With `λ = 0` it is the one-step expected-SARSA target `V_{k+1}`; with `λ = 1` and a
//! deterministic target policy that the trajectory followed it is the Monte Carlo return `u`.
//!
//! # Properties (tested below)
//! * The true action values `q_π` are a fixed point for every λ and every behaviour policy: if
//!   the critic is exact, `E[G_k | h_k, a_k] = q_π(h_k, a_k)` (expectation over the behaviour's
//!   continuation and chance).
//! * With an inexact critic and a *stochastic* target policy the λ = 1 target is still a
//!   bootstrapped quantity (the trace is cut by `π(a)`, not by `π/μ`), so it is not an unbiased
//!   Monte Carlo estimate even on-policy; only the fixed point above is guaranteed.

/// A trajectory in flat arrays, the layout a batched trainer already has in its tensors.
///
/// With `T = actions.len()` decision steps and `A = num_actions`:
/// `policy[k * A + a]` is `π_k(a)` and `q[(k * 2 + p) * A + a]` is `q_k[p][a]`.
#[derive(Clone, Copy, Debug)]
pub struct FlatTrajectory<'a> {
    /// Number of distinct actions `A` (the row stride of `policy` and `q`).
    pub num_actions: usize,
    /// The action taken at each decision step.
    pub actions: &'a [usize],
    /// Target policy rows, `T × A`.
    pub policy: &'a [f64],
    /// Critic rows, `T × 2 × A` (step, player, action).
    pub q: &'a [f64],
}

/// One decision step as owned vectors (convenient for tests and small callers).
#[derive(Clone, Debug, PartialEq)]
pub struct TbStep {
    /// The action taken, `a_k`.
    pub action: usize,
    /// The target policy `π_k` over all actions (zero on illegal ones).
    pub policy: Vec<f64>,
    /// The critic's estimates `q_k[p][a]` for both players.
    pub q: [Vec<f64>; 2],
}

/// Tree-Backup(λ) targets `G_k[p]` for `k = 0 .. T-1` (see the module docs for the equation).
///
/// # Panics
/// If `λ ∉ [0, 1]`, if an action is out of range or if row lengths disagree.
pub fn tree_backup_targets(
    traj: &FlatTrajectory<'_>,
    returns: [f64; 2],
    lambda: f64,
) -> Vec<[f64; 2]> {
    let a = traj.num_actions;
    let t = traj.actions.len();
    assert_eq!(traj.policy.len(), t * a, "policy must have T × A entries");
    assert_eq!(traj.q.len(), t * 2 * a, "q must have T × 2 × A entries");
    let mut out = vec![[0.0; 2]; t];
    backup(
        t,
        a,
        |k| traj.actions[k],
        |k| &traj.policy[k * a..(k + 1) * a],
        |k, p| &traj.q[(k * 2 + p) * a..(k * 2 + p + 1) * a],
        returns,
        lambda,
        &mut out,
    );
    out
}

/// [`tree_backup_targets`] over owned steps.
///
/// # Panics
/// As [`tree_backup_targets`]; every step's rows must have the length of step 0's policy.
pub fn tree_backup(steps: &[TbStep], returns: [f64; 2], lambda: f64) -> Vec<[f64; 2]> {
    let a = steps.first().map_or(0, |s| s.policy.len());
    for s in steps {
        assert!(
            s.policy.len() == a && s.q[0].len() == a && s.q[1].len() == a,
            "every step needs rows of {a} actions"
        );
    }
    let mut out = vec![[0.0; 2]; steps.len()];
    backup(
        steps.len(),
        a,
        |k| steps[k].action,
        |k| &steps[k].policy[..],
        |k, p| &steps[k].q[p][..],
        returns,
        lambda,
        &mut out,
    );
    out
}

/// `Σ_a π(a) q(a)`, skipping actions with `π(a) = 0` so that garbage (even NaN) critic outputs
/// on illegal actions never leak into the target.
fn expected(pi: &[f64], q: &[f64]) -> f64 {
    pi.iter()
        .zip(q)
        .filter(|(p, _)| **p != 0.0)
        .map(|(p, x)| p * x)
        .sum()
}

#[allow(clippy::too_many_arguments)]
fn backup<'a>(
    t: usize,
    num_actions: usize,
    action: impl Fn(usize) -> usize,
    policy: impl Fn(usize) -> &'a [f64],
    q: impl Fn(usize, usize) -> &'a [f64],
    returns: [f64; 2],
    lambda: f64,
    out: &mut [[f64; 2]],
) {
    assert!(
        (0.0..=1.0).contains(&lambda),
        "λ must be in [0, 1], got {lambda}"
    );
    for k in 0..t {
        assert!(
            action(k) < num_actions,
            "step {k}: action {} out of range (A = {num_actions})",
            action(k)
        );
    }
    if t == 0 {
        return;
    }
    out[t - 1] = returns;
    for k in (0..t - 1).rev() {
        let n = k + 1;
        let pi = policy(n);
        let an = action(n);
        let next = out[n];
        for (p, g) in out[k].iter_mut().enumerate() {
            let qn = q(n, p);
            let v = expected(pi, qn);
            let correction = if pi[an] == 0.0 {
                0.0
            } else {
                lambda * pi[an] * (next[p] - qn[an])
            };
            *g = v + correction;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::SplitMix64;
    use std::collections::HashMap;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * (1.0 + b.abs())
    }

    fn assert_targets(got: &[[f64; 2]], want: &[[f64; 2]]) {
        assert_eq!(got.len(), want.len());
        for (k, (g, w)) in got.iter().zip(want).enumerate() {
            for p in 0..2 {
                assert!(
                    close(g[p], w[p]),
                    "step {k} player {p}: got {}, want {}",
                    g[p],
                    w[p]
                );
            }
        }
    }

    /// Two steps: only step 1's data matters for G_0.
    /// Player 0: V_1 = 0.25·0.4 + 0.75·0.8 = 0.7, G_0 = 0.7 + λ·0.75·(1 − 0.8) = 0.7 + 0.15λ.
    /// Player 1: V_1 = 0.75·(−0.5) = −0.375, G_0 = −0.375 + λ·0.75·(−1 + 0.5) = −0.375 − 0.375λ.
    fn two_steps() -> Vec<TbStep> {
        vec![
            TbStep {
                action: 0,
                policy: vec![0.5, 0.5],
                q: [vec![9.0, 9.0], vec![9.0, 9.0]],
            },
            TbStep {
                action: 1,
                policy: vec![0.25, 0.75],
                q: [vec![0.4, 0.8], vec![0.0, -0.5]],
            },
        ]
    }

    #[test]
    fn two_step_hand_values() {
        let steps = two_steps();
        let u = [1.0, -1.0];
        assert_targets(&tree_backup(&steps, u, 0.0), &[[0.7, -0.375], u]);
        assert_targets(&tree_backup(&steps, u, 1.0), &[[0.85, -0.75], u]);
        assert_targets(&tree_backup(&steps, u, 0.5), &[[0.775, -0.5625], u]);
    }

    /// Three steps, three actions, the third illegal at step 2 (its critic output is garbage).
    /// Player 0: G_1 = 0 + λ·0.5·(3 − 2) = 0.5λ; V_1 = 0.2·1 + 0.8·0.5 = 0.6;
    ///           G_0 = 0.6 + λ·0.2·(0.5λ − 1) = 0.6 − 0.2λ + 0.1λ².
    /// Player 1: V_2 = −2, G_1 = −2 + λ·0.5·(−3 + 1) = −2 − λ; V_1 = −0.8;
    ///           G_0 = −0.8 + λ·0.2·(−2 − λ − 0) = −0.8 − 0.4λ − 0.2λ².
    fn three_steps() -> Vec<TbStep> {
        vec![
            TbStep {
                action: 2,
                policy: vec![0.1, 0.1, 0.8],
                q: [vec![5.0, 5.0, 5.0], vec![-5.0, -5.0, -5.0]],
            },
            TbStep {
                action: 0,
                policy: vec![0.2, 0.8, 0.0],
                q: [vec![1.0, 0.5, 0.0], vec![0.0, -1.0, 0.0]],
            },
            TbStep {
                action: 0,
                policy: vec![0.5, 0.5, 0.0],
                q: [vec![2.0, -2.0, f64::NAN], vec![-1.0, -3.0, f64::NAN]],
            },
        ]
    }

    #[test]
    fn three_step_hand_values() {
        let steps = three_steps();
        let u = [3.0, -3.0];
        assert_targets(&tree_backup(&steps, u, 0.0), &[[0.6, -0.8], [0.0, -2.0], u]);
        assert_targets(&tree_backup(&steps, u, 1.0), &[[0.5, -1.4], [0.5, -3.0], u]);
        assert_targets(
            &tree_backup(&steps, u, 0.5),
            &[[0.525, -1.05], [0.25, -2.5], u],
        );
    }

    #[test]
    fn flat_layout_matches_steps() {
        let steps = three_steps();
        let a = 3;
        let actions: Vec<usize> = steps.iter().map(|s| s.action).collect();
        let policy: Vec<f64> = steps.iter().flat_map(|s| s.policy.clone()).collect();
        let q: Vec<f64> = steps
            .iter()
            .flat_map(|s| s.q[0].iter().chain(&s.q[1]).copied().collect::<Vec<_>>())
            .collect();
        let traj = FlatTrajectory {
            num_actions: a,
            actions: &actions,
            policy: &policy,
            q: &q,
        };
        for lambda in [0.0, 0.3, 1.0] {
            let flat = tree_backup_targets(&traj, [3.0, -3.0], lambda);
            let owned = tree_backup(&steps, [3.0, -3.0], lambda);
            assert_eq!(flat, owned);
        }
    }

    #[test]
    fn single_step_and_empty() {
        let steps = &two_steps()[..1];
        assert_eq!(tree_backup(steps, [0.5, -0.5], 0.7), vec![[0.5, -0.5]]);
        assert!(tree_backup(&[], [1.0, -1.0], 0.7).is_empty());
    }

    #[test]
    #[should_panic(expected = "λ must be in [0, 1]")]
    fn rejects_bad_lambda() {
        tree_backup(&two_steps(), [1.0, -1.0], 1.5);
    }

    // ---- Expectation tests on a small random two-player game tree with chance. ----

    enum Node {
        Decision {
            children: Vec<usize>,
            policy: Vec<f64>,
        },
        Chance {
            children: Vec<(usize, f64)>,
        },
        Terminal {
            u: [f64; 2],
        },
    }

    /// A trajectory's probability, its decision steps `(node, action)` and its payoffs.
    type Path = (f64, Vec<(usize, usize)>, [f64; 2]);

    struct Tree {
        nodes: Vec<Node>,
        num_actions: usize,
    }

    /// A random tree: decision nodes with 2 or 3 actions (of `num_actions = 3`), chance nodes
    /// with 2 outcomes, terminals with random zero-sum payoffs. `deterministic` makes every
    /// decision policy one-hot.
    fn random_tree(seed: u64, depth: usize, deterministic: bool) -> Tree {
        fn build(
            nodes: &mut Vec<Node>,
            rng: &mut SplitMix64,
            depth: usize,
            deterministic: bool,
        ) -> usize {
            if depth == 0 {
                let u0 = rng.next_f64() * 4.0 - 2.0;
                nodes.push(Node::Terminal { u: [u0, -u0] });
                return nodes.len() - 1;
            }
            if rng.below(3) == 0 {
                let p = 0.2 + 0.6 * rng.next_f64();
                let a = build(nodes, rng, depth - 1, deterministic);
                let b = build(nodes, rng, depth - 1, deterministic);
                nodes.push(Node::Chance {
                    children: vec![(a, p), (b, 1.0 - p)],
                });
            } else {
                let n = 2 + rng.below(2);
                let children: Vec<usize> = (0..n)
                    .map(|_| build(nodes, rng, depth - 1, deterministic))
                    .collect();
                let mut policy = vec![0.0; 3];
                if deterministic {
                    policy[rng.below(n)] = 1.0;
                } else {
                    let w: Vec<f64> = (0..n).map(|_| 0.1 + rng.next_f64()).collect();
                    let s: f64 = w.iter().sum();
                    for (k, x) in w.iter().enumerate() {
                        policy[k] = x / s;
                    }
                }
                nodes.push(Node::Decision { children, policy });
            }
            nodes.len() - 1
        }
        let mut nodes = Vec::new();
        let mut rng = SplitMix64::new(seed);
        build(&mut nodes, &mut rng, depth, deterministic);
        Tree {
            nodes,
            num_actions: 3,
        }
    }

    impl Tree {
        fn root(&self) -> usize {
            self.nodes.len() - 1
        }

        /// True values `[u0, u1]` of a node under the tree's policies.
        fn value(&self, n: usize) -> [f64; 2] {
            match &self.nodes[n] {
                Node::Terminal { u } => *u,
                Node::Chance { children } => children.iter().fold([0.0; 2], |acc, &(c, p)| {
                    let v = self.value(c);
                    [acc[0] + p * v[0], acc[1] + p * v[1]]
                }),
                Node::Decision { children, policy } => {
                    children.iter().enumerate().fold([0.0; 2], |acc, (a, &c)| {
                        let v = self.value(c);
                        [acc[0] + policy[a] * v[0], acc[1] + policy[a] * v[1]]
                    })
                }
            }
        }

        /// True action values `q[p][a]` at a decision node (zero on missing actions).
        fn q(&self, n: usize) -> [Vec<f64>; 2] {
            let Node::Decision { children, .. } = &self.nodes[n] else {
                unreachable!()
            };
            let mut q = [vec![0.0; self.num_actions], vec![0.0; self.num_actions]];
            for (a, &c) in children.iter().enumerate() {
                let v = self.value(c);
                q[0][a] = v[0];
                q[1][a] = v[1];
            }
            q
        }

        /// Every trajectory under the tree's own policies (behaviour = target) with its
        /// probability: the decision steps `(node, action)` and the terminal payoffs.
        fn trajectories(&self) -> Vec<Path> {
            let mut out = Vec::new();
            self.walk(self.root(), 1.0, &mut Vec::new(), &mut out);
            out
        }

        fn walk(&self, n: usize, prob: f64, path: &mut Vec<(usize, usize)>, out: &mut Vec<Path>) {
            match &self.nodes[n] {
                Node::Terminal { u } => out.push((prob, path.clone(), *u)),
                Node::Chance { children } => {
                    for &(c, p) in children {
                        self.walk(c, prob * p, path, out);
                    }
                }
                Node::Decision { children, policy } => {
                    for (a, &c) in children.iter().enumerate() {
                        if policy[a] > 0.0 {
                            path.push((n, a));
                            self.walk(c, prob * policy[a], path, out);
                            path.pop();
                        }
                    }
                }
            }
        }
    }

    /// `E[G_k | h_k, a_k]` over all trajectories, per visited (node, action), with the critic
    /// `critic(node)`.
    fn expected_targets(
        tree: &Tree,
        lambda: f64,
        critic: &dyn Fn(usize) -> [Vec<f64>; 2],
    ) -> HashMap<(usize, usize), [f64; 2]> {
        let mut acc: HashMap<(usize, usize), ([f64; 2], f64)> = HashMap::new();
        for (prob, path, u) in tree.trajectories() {
            let steps: Vec<TbStep> = path
                .iter()
                .map(|&(n, a)| {
                    let Node::Decision { policy, .. } = &tree.nodes[n] else {
                        unreachable!()
                    };
                    TbStep {
                        action: a,
                        policy: policy.clone(),
                        q: critic(n),
                    }
                })
                .collect();
            let g = tree_backup(&steps, u, lambda);
            for (k, &(n, a)) in path.iter().enumerate() {
                let e = acc.entry((n, a)).or_insert(([0.0; 2], 0.0));
                e.0[0] += prob * g[k][0];
                e.0[1] += prob * g[k][1];
                e.1 += prob;
            }
        }
        acc.into_iter()
            .map(|(key, (s, p))| (key, [s[0] / p, s[1] / p]))
            .collect()
    }

    /// The fixed-point property: with an exact critic the expected TB(λ) target equals the true
    /// action value for every λ, in particular λ = 1 with behaviour = target.
    #[test]
    fn exact_critic_is_a_fixed_point() {
        for seed in 0..5 {
            let tree = random_tree(seed, 5, false);
            for lambda in [0.0, 0.5, 1.0] {
                let expect = expected_targets(&tree, lambda, &|n| tree.q(n));
                assert!(!expect.is_empty());
                for (&(n, a), g) in &expect {
                    let q = tree.q(n);
                    for p in 0..2 {
                        assert!(
                            (g[p] - q[p][a]).abs() < 1e-12,
                            "seed {seed} λ {lambda} node {n} action {a} player {p}: E[G] {} vs q {}",
                            g[p],
                            q[p][a]
                        );
                    }
                }
            }
        }
    }

    /// λ = 1 with a deterministic target policy that the behaviour follows: the target is the
    /// Monte Carlo return whatever the critic says, so its expectation is the true value.
    #[test]
    fn lambda_one_deterministic_is_monte_carlo() {
        for seed in 10..15 {
            let tree = random_tree(seed, 5, true);
            let mut rng = SplitMix64::new(seed);
            let noise: Vec<[Vec<f64>; 2]> = (0..tree.nodes.len())
                .map(|_| {
                    std::array::from_fn(|_| (0..3).map(|_| rng.next_f64() * 6.0 - 3.0).collect())
                })
                .collect();
            let wrong = |n: usize| noise[n].clone();
            for (_, path, u) in tree.trajectories() {
                let steps: Vec<TbStep> = path
                    .iter()
                    .map(|&(n, a)| {
                        let Node::Decision { policy, .. } = &tree.nodes[n] else {
                            unreachable!()
                        };
                        TbStep {
                            action: a,
                            policy: policy.clone(),
                            q: wrong(n),
                        }
                    })
                    .collect();
                for g in tree_backup(&steps, u, 1.0) {
                    assert!(close(g[0], u[0]) && close(g[1], u[1]), "{g:?} vs {u:?}");
                }
            }
            for (&(n, a), g) in &expected_targets(&tree, 1.0, &wrong) {
                let q = tree.q(n);
                assert!((g[0] - q[0][a]).abs() < 1e-12 && (g[1] - q[1][a]).abs() < 1e-12);
            }
        }
    }

    /// Documents the limit of the guarantee: with a stochastic target policy and a wrong
    /// critic, TB(1) is biased even on-policy (its trace is cut by π(a), not π/μ = 1).
    #[test]
    fn lambda_one_stochastic_wrong_critic_is_biased() {
        let tree = random_tree(3, 5, false);
        let wrong = |n: usize| {
            let mut q = tree.q(n);
            q[0].iter_mut().for_each(|x| *x += 1.0);
            q
        };
        let worst = expected_targets(&tree, 1.0, &wrong)
            .iter()
            .map(|(&(n, a), g)| (g[0] - tree.q(n)[0][a]).abs())
            .fold(0.0, f64::max);
        assert!(worst > 1e-3, "expected a visible bias, got {worst}");
    }
}
