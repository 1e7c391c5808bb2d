//! The dilated entropy distance-generating function on one player's sequence-form polytope,
//! and its closed-form prox step.
//!
//! # The function
//! For a sequence-form strategy `x` with behavioural probabilities `b(I, a) = x[Ia] / x[p(I)]`,
//!
//! ```text
//! d(x) = Σ_I β_I · x[p(I)] · ( log |A(I)| + Σ_a b(I, a) log b(I, a) )
//! ```
//!
//! i.e. every infoset contributes its weight times the reach of its parent sequence times the
//! relative entropy of its local policy to the uniform one (so `d ≥ 0`, `d(uniform) = 0`).
//!
//! # The prox step
//! Both regret minimisers reduce to one operation,
//!
//! ```text
//! argmin_x  η⟨ℓ, x⟩ + Σ_I β_I · x[p(I)] · KL(b_I ‖ π_I)        (π a behavioural "prior")
//! ```
//!
//! solved bottom-up over infosets (children before parents): with `W_σ` = the sum of the
//! optimal values of the infosets that follow sequence `σ`, action `a` of `I` costs
//! `q_a = η ℓ[Ia] + W_{Ia}`, the local optimum is `b(I, a) ∝ π(I, a) · exp(−q_a / β_I)` and its
//! value is `W_I = −β_I · log Σ_a π(I, a) exp(−q_a / β_I)` (a log-sum-exp, shifted by its
//! maximum for stability), which is added to `W_{p(I)}`. The returned `W_∅` is the optimal objective.
//!
//! * **FTRL** (`x_{t+1} = argmin η⟨L_t, x⟩ + d(x)`, `L_t` the cumulative loss): prior uniform —
//!   then the penalty is exactly `d(x)`.
//! * **OMD** (`x_{t+1} = argmin η⟨ℓ_t, x⟩ + D(x ‖ x_t)`, Bregman divergence of `d`): prior
//!   `π = b_t`. Expanding `D(x ‖ x_t) = d(x) − d(x_t) − ⟨∇d(x_t), x − x_t⟩` with
//!   `∂d/∂x[Ia] = β_I (1 + log b_t(I,a)) + Σ_{J after Ia} β_J (log|A(J)| − 1)`, the constant
//!   terms telescope and `D(x ‖ x_t) = Σ_I β_I x[p(I)] KL(b_I ‖ b_t(I))` exactly, the prior form
//!   above (the tests check this against a finite-difference Bregman divergence).
//!
//! Policies are kept as log-probabilities so that OMD's multiplicative updates never underflow
//! to an absorbing zero.
//!
//! # Why OMD's iterates equal FTRL's here
//! With a constant step size and constant weights the two coincide exactly (the tests compare
//! them), by induction from the leaves. At an infoset `J` with no infoset below it, OMD gives
//! `b_{t+1}(J, a) ∝ b_t(J, a) exp(−η ℓ_t[Ja] / β_J)`, which unrolls to
//! `exp(−η L_t[Ja] / β_J)`, FTRL's local policy; its value `W^t_J = −β_J log Σ_a b_t(J, a)
//! exp(−η ℓ_t[Ja] / β_J) = −β_J log(Z_{t+1} / Z_t)` with `Z_t = Σ_a exp(−η L_{t−1}[Ja] / β_J)`
//! telescopes, so `Σ_{s ≤ t} W^s_J = −β_J log(Z_{t+1} / |A(J)|)`, FTRL's value of `J` under
//! the cumulative loss. The parent infoset therefore sees, summed over the steps, the same
//! costs `η L[Ia] + W_{Ia}` under both rules, and the argument repeats upwards. OMD can only
//! part from FTRL through a changing step size or weights, or numerically: an implementation
//! that stores the probabilities `b_t` themselves (not their logarithms) loses every action
//! whose probability underflows to zero, for good, since the update is multiplicative, while
//! FTRL recomputes the policy from the cumulative loss. Large step sizes and high-variance
//! estimates are where that happens; it is our hypothesis (not checked against the authors'
//! code) for the gap the stochastic regret minimisation paper reports between OMD and FTRL,
//! which it describes as OMD's greater sensitivity to the step size. We keep logarithms, so
//! we do not reproduce that gap.
//!
//! # Weights
//! `β_I` follow the recursive scheme of Kroer, Waugh, Kılınç-Karzan & Sandholm (2020), which
//! makes `d` strongly convex on the treeplex: bottom-up,
//! `β_I = 2 + max_a Σ_{J after Ia} β_J`, then every weight is multiplied by
//! `M = max_x ‖x‖₁` (the largest number of sequences a pure strategy plays) for modulus 1 with
//! respect to the ℓ₁ norm. `uniform` gives every infoset weight 1. Both are scaled by the
//! `weight_scale` option.

use crate::tree::Infosets;

/// How the infoset weights `β_I` are chosen.
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WeightScheme {
    /// Kroer et al. (2020): `β_I = 2 + max_a Σ_{J after Ia} β_J`, times `max ‖x‖₁`.
    Kroer,
    /// Every infoset weight 1.
    Uniform,
}

/// Infoset weights of one player, multiplied by `scale`.
pub fn infoset_weights(inf: &Infosets, scheme: WeightScheme, scale: f64) -> Vec<f64> {
    let n = inf.len();
    match scheme {
        WeightScheme::Uniform => vec![scale; n],
        WeightScheme::Kroer => {
            let root = inf.root();
            // Per sequence: sum of the weights / ℓ1 depths of the infosets that follow it.
            let mut child_beta = vec![0.0; root + 1];
            let mut child_l1 = vec![0.0; root + 1];
            let mut beta = vec![0.0; n];
            let mut l1_total = 0.0;
            for i in (0..n).rev() {
                let r = inf.range(i);
                let max_beta = r.clone().map(|a| child_beta[a]).fold(0.0, f64::max);
                let max_l1 = r.map(|a| child_l1[a]).fold(0.0, f64::max);
                beta[i] = 2.0 + max_beta;
                let l1 = 1.0 + max_l1;
                let parent = inf.parent_seq[i] as usize;
                if parent == root {
                    l1_total += l1;
                } else {
                    child_beta[parent] += beta[i];
                    child_l1[parent] += l1;
                }
            }
            let m = l1_total.max(1.0);
            beta.iter().map(|b| b * m * scale).collect()
        }
    }
}

/// Scratch buffers of [`prox`] (one per sequence).
#[derive(Clone, Debug, Default)]
pub struct ProxScratch {
    w: Vec<f64>,
    z: Vec<f64>,
}

/// The prox step (see the module docs): writes the minimiser's behavioural log-probabilities
/// into `out_log` (indexed by global action index) and returns the optimal objective value.
///
/// `loss` is indexed by sequence (its root entry is ignored: the empty sequence is always
/// played). `log_prior` gives the prior's log-probabilities, or `None` for the uniform prior.
/// `out_log` may be the same buffer as the prior only through [`prox_in_place`].
pub fn prox(
    inf: &Infosets,
    weights: &[f64],
    log_prior: Option<&[f64]>,
    loss: &[f64],
    eta: f64,
    out_log: &mut [f64],
    scratch: &mut ProxScratch,
) -> f64 {
    if let Some(lp) = log_prior {
        out_log.copy_from_slice(lp);
    } else {
        for i in 0..inf.len() {
            let r = inf.range(i);
            let u = -(r.len() as f64).ln();
            out_log[r].iter_mut().for_each(|x| *x = u);
        }
    }
    prox_in_place(inf, weights, loss, eta, out_log, scratch)
}

/// [`prox`] with the prior's log-probabilities in `log_policy`, overwritten by the result.
pub fn prox_in_place(
    inf: &Infosets,
    weights: &[f64],
    loss: &[f64],
    eta: f64,
    log_policy: &mut [f64],
    scratch: &mut ProxScratch,
) -> f64 {
    let root = inf.root();
    scratch.w.clear();
    scratch.w.resize(root + 1, 0.0);
    let w = &mut scratch.w;
    for i in (0..inf.len()).rev() {
        let r = inf.range(i);
        let beta = weights[i];
        // z_a = log π_a − q_a / β; the optimum is softmax(z), the value −β · logsumexp(z).
        scratch.z.clear();
        scratch.z.extend(
            r.clone()
                .map(|a| log_policy[a] - (eta * loss[a] + w[a]) / beta),
        );
        // Shift by the maximum first so that the largest entry is exactly 0 and the
        // normalised log-probabilities keep full precision even for huge losses.
        let m = scratch.z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let log_z = scratch.z.iter().map(|z| (z - m).exp()).sum::<f64>().ln();
        for (a, z) in r.zip(&scratch.z) {
            log_policy[a] = (z - m) - log_z;
        }
        w[inf.parent_seq[i] as usize] += -beta * (m + log_z);
    }
    w[root]
}

/// The dilated entropy `d(x)` of a sequence-form strategy (entries indexed by sequence,
/// `x[root] = 1`); zero-reach infosets contribute nothing.
pub fn dilated_entropy(inf: &Infosets, weights: &[f64], x: &[f64]) -> f64 {
    let mut total = 0.0;
    for i in 0..inf.len() {
        let r = inf.range(i);
        let parent = x[inf.parent_seq[i] as usize];
        if parent <= 0.0 {
            continue;
        }
        let mut h = (r.len() as f64).ln();
        for a in r {
            let b = x[a] / parent;
            if b > 0.0 {
                h += b * b.ln();
            }
        }
        total += weights[i] * parent * h;
    }
    total
}

/// Sequence form of a behavioural policy (indexed by sequence, root entry 1).
pub fn sequence_form(inf: &Infosets, policy: &[f64]) -> Vec<f64> {
    let mut x = vec![0.0; inf.root() + 1];
    x[inf.root()] = 1.0;
    for i in 0..inf.len() {
        let px = x[inf.parent_seq[i] as usize];
        for a in inf.range(i) {
            x[a] = px * policy[a];
        }
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::load_game;
    use crate::tree::PublicTree;
    use crate::util::SplitMix64;

    /// A hand-made treeplex: infoset 0 (root, 2 actions), infoset 1 after action 0 (3 actions),
    /// infoset 2 after action 0 (2 actions), infoset 3 after action 1 (2 actions).
    fn small() -> Infosets {
        let mut inf = Infosets {
            offset: vec![0, 2, 5, 7, 9],
            actions: (0..9).collect(),
            ..Default::default()
        };
        let root = 9;
        inf.parent_seq = vec![root, 0, 0, 1];
        inf.key = (0..4).map(|i| format!("I{i}")).collect();
        inf.node = vec![0; 4];
        inf.private = vec![0; 4];
        inf.history = vec![Vec::new(); 4];
        inf
    }

    fn random_policy(inf: &Infosets, rng: &mut SplitMix64, floor: f64) -> Vec<f64> {
        let mut p = vec![0.0; inf.num_actions_total()];
        for i in 0..inf.len() {
            let r = inf.range(i);
            let raw: Vec<f64> = r.clone().map(|_| floor + rng.next_f64()).collect();
            let s: f64 = raw.iter().sum();
            for (a, v) in r.zip(raw) {
                p[a] = v / s;
            }
        }
        p
    }

    fn dot(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn one_infoset_prox_is_a_softmax() {
        // A single infoset: FTRL's argmin is softmax(−η L / β), OMD's is prior · exp(−η ℓ / β).
        let mut inf = Infosets {
            offset: vec![0, 4],
            actions: vec![0, 1, 2, 3],
            parent_seq: vec![4],
            ..Default::default()
        };
        inf.key = vec!["I".into()];
        let weights = vec![0.7];
        let loss = [0.3, -1.2, 2.0, 0.0, 123.0];
        let eta = 1.9;
        let mut out = vec![0.0; 4];
        let mut s = ProxScratch::default();
        let value = prox(&inf, &weights, None, &loss, eta, &mut out, &mut s);
        let e: Vec<f64> = loss[..4].iter().map(|l| (-eta * l / 0.7).exp()).collect();
        let z: f64 = e.iter().sum();
        for k in 0..4 {
            assert!((out[k].exp() - e[k] / z).abs() < 1e-12);
        }
        // The value is the objective at the optimum: η⟨L, b⟩ + β (log 4 + Σ b log b).
        let b: Vec<f64> = out.iter().map(|x| x.exp()).collect();
        let obj = eta * dot(&loss[..4], &b)
            + 0.7 * (4f64.ln() + b.iter().map(|p| p * p.ln()).sum::<f64>());
        assert!((value - obj).abs() < 1e-12, "{value} vs {obj}");
        // OMD form with a prior.
        let prior = [0.1f64, 0.2, 0.3, 0.4];
        let lp: Vec<f64> = prior.iter().map(|p| p.ln()).collect();
        prox(&inf, &weights, Some(&lp), &loss, eta, &mut out, &mut s);
        let e: Vec<f64> = (0..4)
            .map(|k| prior[k] * (-eta * loss[k] / 0.7).exp())
            .collect();
        let z: f64 = e.iter().sum();
        for k in 0..4 {
            assert!((out[k].exp() - e[k] / z).abs() < 1e-12);
        }
    }

    #[test]
    fn huge_losses_stay_finite_and_on_the_simplex() {
        let inf = small();
        let w = infoset_weights(&inf, WeightScheme::Kroer, 1.0);
        let loss = [1e6, -1e6, 3e5, 0.0, -7e5, 1e6, 1e6, -1e6, 2.0, 0.0];
        let mut out = vec![0.0; 9];
        let mut s = ProxScratch::default();
        let v = prox(&inf, &w, None, &loss, 10.0, &mut out, &mut s);
        assert!(v.is_finite());
        for i in 0..inf.len() {
            let total: f64 = inf.range(i).map(|a| out[a].exp()).sum();
            assert!((total - 1.0).abs() < 1e-12, "infoset {i}: {total}");
            assert!(inf.range(i).all(|a| out[a].is_finite()));
        }
    }

    #[test]
    fn kroer_weights_of_the_small_treeplex() {
        // Leaves: β = 2. Infoset 0: action 0 is followed by infosets 1, 2 (2 + 2), action 1 by
        // infoset 3 (2): β_0 = 2 + 4 = 6. M = 1 + max(1 + 1, 1) = 3.
        let w = infoset_weights(&small(), WeightScheme::Kroer, 1.0);
        assert_eq!(w, vec![18.0, 6.0, 6.0, 6.0]);
        let w = infoset_weights(&small(), WeightScheme::Uniform, 2.5);
        assert_eq!(w, vec![2.5; 4]);
    }

    /// The FTRL and OMD steps minimise their objectives: no random strategy or small
    /// perturbation does better, and the returned value is the objective at the minimiser.
    /// The OMD objective uses a Bregman divergence whose gradient is taken by finite
    /// differences of `d`, independently of the closed form.
    #[test]
    fn prox_minimises_the_ftrl_and_omd_objectives() {
        let inf = small();
        let mut rng = SplitMix64::new(7);
        for scheme in [WeightScheme::Kroer, WeightScheme::Uniform] {
            let w = infoset_weights(&inf, scheme, 0.5);
            for trial in 0..5 {
                let loss: Vec<f64> = (0..10).map(|_| 4.0 * rng.next_f64() - 2.0).collect();
                let eta = 0.5 + trial as f64;
                let prior = random_policy(&inf, &mut rng, 0.05);
                let y = sequence_form(&inf, &prior);
                let dy = dilated_entropy(&inf, &w, &y);
                // ∇d(y) by central differences in sequence-form coordinates.
                let grad: Vec<f64> = (0..9)
                    .map(|k| {
                        let h = 1e-6;
                        let (mut a, mut b) = (y.clone(), y.clone());
                        a[k] += h;
                        b[k] -= h;
                        (dilated_entropy(&inf, &w, &a) - dilated_entropy(&inf, &w, &b)) / (2.0 * h)
                    })
                    .collect();
                let ftrl =
                    |x: &[f64]| eta * dot(&loss[..9], &x[..9]) + dilated_entropy(&inf, &w, x);
                let omd = |x: &[f64]| {
                    let bregman = dilated_entropy(&inf, &w, x)
                        - dy
                        - (0..9).map(|k| grad[k] * (x[k] - y[k])).sum::<f64>();
                    eta * dot(&loss[..9], &x[..9]) + bregman
                };
                let lp: Vec<f64> = prior.iter().map(|p| p.ln()).collect();
                let mut s = ProxScratch::default();
                for (prior_log, objective) in [
                    (None, &ftrl as &dyn Fn(&[f64]) -> f64),
                    (Some(&lp[..]), &omd as &dyn Fn(&[f64]) -> f64),
                ] {
                    let mut out = vec![0.0; 9];
                    let value = prox(&inf, &w, prior_log, &loss, eta, &mut out, &mut s);
                    let b: Vec<f64> = out.iter().map(|v| v.exp()).collect();
                    let x = sequence_form(&inf, &b);
                    let best = objective(&x);
                    // The returned value is the objective at the minimiser (for OMD the
                    // Bregman divergence is exactly Σ_I β_I x[p(I)] KL(b_I ‖ π_I)).
                    assert!((value - best).abs() < 1e-6, "value {value} vs {best}");
                    for _ in 0..200 {
                        let z = sequence_form(&inf, &random_policy(&inf, &mut rng, 0.0));
                        assert!(objective(&z) >= best - 1e-6, "random point beats the prox");
                    }
                    // Small perturbations of the behavioural policy never improve.
                    for _ in 0..200 {
                        let mut pb = b.clone();
                        for i in 0..inf.len() {
                            let r = inf.range(i);
                            let s: f64 = r
                                .clone()
                                .map(|a| {
                                    pb[a] *= 1.0 + 0.01 * (rng.next_f64() - 0.5);
                                    pb[a]
                                })
                                .sum();
                            r.for_each(|a| pb[a] /= s);
                        }
                        let z = sequence_form(&inf, &pb);
                        assert!(objective(&z) >= best - 1e-9, "perturbation beats the prox");
                    }
                }
            }
        }
    }

    #[test]
    fn prox_on_leduc_is_a_valid_strategy() {
        let game = load_game("leduc_poker").unwrap();
        let tree = PublicTree::build(game.as_ref()).unwrap();
        let mut rng = SplitMix64::new(3);
        for p in 0..2 {
            let inf = &tree.infosets[p];
            let w = infoset_weights(inf, WeightScheme::Kroer, 1.0);
            // Leaves get 2·M; every weight is at least that.
            assert!(w.iter().all(|&b| b >= 2.0 - 1e-12));
            let loss: Vec<f64> = (0..=inf.root()).map(|_| rng.next_f64() - 0.5).collect();
            let mut out = vec![0.0; inf.num_actions_total()];
            let mut s = ProxScratch::default();
            prox(inf, &w, None, &loss, 50.0, &mut out, &mut s);
            for i in 0..inf.len() {
                let total: f64 = inf.range(i).map(|a| out[a].exp()).sum();
                assert!((total - 1.0).abs() < 1e-12);
            }
            // Zero loss: the uniform policy (the centre of d).
            let zero = vec![0.0; inf.root() + 1];
            prox(inf, &w, None, &zero, 1.0, &mut out, &mut s);
            for i in 0..inf.len() {
                let n = inf.range(i).len() as f64;
                assert!(inf.range(i).all(|a| (out[a].exp() - 1.0 / n).abs() < 1e-12));
            }
        }
    }
}
