//! Stochastic FTRL and OMD with the dilated entropy (Farina, Kroer & Sandholm, "Stochastic
//! regret minimization in extensive-form games", ICML 2020).
//!
//! The framework: any regret minimiser over a player's sequence-form polytope, fed any unbiased
//! estimate of its loss vector, still drives the average strategy profile to equilibrium (with
//! high probability). Here the regret minimisers are
//!
//! * **FTRL**: `x_{t+1} = argmin_x η⟨L_t, x⟩ + d(x)` with `L_t` the sum of the estimated losses;
//! * **OMD**: `x_{t+1} = argmin_x η⟨ℓ_t, x⟩ + D(x ‖ x_t)`;
//!
//! with `d` the dilated entropy and the recursive infoset weights of Kroer et al. (2020)
//! ([`prox`]). These are the paper's update rules (2) (OMD) and (3) (FTRL), written with the
//! step size on the loss rather than its inverse on the regulariser (the same minimisers), with
//! a constant step size as in its experiments. With the dilated entropy the two rules produce
//! the same iterates (exactly in real arithmetic; the tests compare them): [`prox`] shows why
//! and discusses the gap between them that the paper reports. `omd` therefore is the paper's
//! OMD, not a different algorithm under its name. The loss estimators are external sampling, balanced outcome sampling
//! (averaged over `samples` draws) or the exact gradient ([`estimators`]).
//!
//! # Conventions
//! * The loss of player `p` is minus its utility gradient, `ℓ_p[σ] = −Σ_{z: σ_p(z)=σ} u_p(z)
//!   π_c(z) π_{−p}(z)`; the exact version is one sweep of the compiled tree.
//! * **Simultaneous updates** (the paper's self-play, figure 1): both losses are estimated at
//!   `(x_t, y_t)`, then both players update. **Alternating**: player 0 updates first and
//!   player 1's loss is estimated at `(x_{t+1}, y_t)`.
//! * The average strategy is the uniform average of the iterates `x_1 .. x_T` in sequence form
//!   (`x_1` uniform), turned into a behavioural policy infoset by infoset.
//! * Randomness: iteration `t`'s draws for player `p` come from a generator seeded by
//!   `(seed, t, p)`, so a run restored from a snapshot continues exactly like an uninterrupted
//!   one.
//! * `nodes_touched` counts the histories the estimators visit (a whole traversal per exact
//!   gradient).
//! * Randomness per draw: draw `k` of player `p`'s estimate in iteration `t` comes from a
//!   stream seeded by `(seed, t, p, k)` (draw 0's is the `(seed, t, p)` stream).
//! * Threads (`threads`, default every core): an estimate of several draws (`samples > 1`,
//!   e.g. the 100 of balanced outcome sampling) is split into contiguous ranges of draws, one
//!   per worker; each worker logs its draws' additions to the loss, and the logs are added in
//!   draw order, the order of the sequential estimate. With one draw per estimate and
//!   simultaneous updates the two players' losses are estimated concurrently instead. Either
//!   way the results are **bit-identical for every thread count**. The players' updates stay
//!   sequential (alternating updates estimate player 1's loss after player 0's step).

pub mod estimators;
pub mod prox;

use crate::cfr::{SolverSnapshot, TreeSolver};
use crate::tree::PublicTree;
use crate::tree::TreePolicy;
use crate::tree::history::HistoryTree;
use crate::util::SplitMix64;
use crossbeam::utils::CachePadded;
use estimators::{Estimator, Estimators};
use prox::{ProxScratch, WeightScheme};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A worker's estimator scratch and the log of its draws' additions to the loss.
type Worker = (Estimators, Vec<(u32, f64)>);

/// Algorithm names (the `[solver] algorithm` values).
pub const NAMES: &[&str] = &["ftrl", "omd"];

/// The regret minimiser.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Minimizer {
    Ftrl,
    Omd,
}

impl Minimizer {
    /// The minimiser of an algorithm name in [`NAMES`].
    pub fn named(name: &str) -> Option<Minimizer> {
        match name {
            "ftrl" => Some(Minimizer::Ftrl),
            "omd" => Some(Minimizer::Omd),
            _ => None,
        }
    }
}

/// The algorithm's own `[solver]` keys.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SfoOptions {
    /// `external` (default), `balanced-outcome` or `exact`.
    #[serde(default = "d_estimator")]
    pub estimator: Estimator,
    /// Draws averaged per loss estimate. Default: 100 for `balanced-outcome` (the paper's
    /// setting), 1 for `external` (the paper averages outcome samples only). Ignored by `exact`.
    #[serde(default)]
    pub samples: Option<usize>,
    /// The step size η.
    #[serde(default = "d_step")]
    pub step_size: f64,
    /// `kroer` (the recursive weights of Kroer et al. 2020, default) or `uniform`.
    #[serde(default = "d_weights")]
    pub weights: WeightScheme,
    /// Multiplies every infoset weight.
    #[serde(default = "d_scale")]
    pub weight_scale: f64,
    /// Worker threads (default: every core): an estimate's draws are split over them (or, with
    /// one draw and simultaneous updates, the two players' estimates). Never changes the
    /// results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
}

fn d_estimator() -> Estimator {
    Estimator::External
}
fn d_step() -> f64 {
    DEFAULT_STEP_SIZE
}
fn d_weights() -> WeightScheme {
    WeightScheme::Kroer
}
fn d_scale() -> f64 {
    1.0
}

/// Default step size η (see the crate's configs for tuned values).
pub const DEFAULT_STEP_SIZE: f64 = 1.0;

impl Default for SfoOptions {
    fn default() -> Self {
        SfoOptions {
            estimator: d_estimator(),
            samples: None,
            step_size: d_step(),
            weights: d_weights(),
            weight_scale: d_scale(),
            threads: None,
        }
    }
}

/// A validated solver description.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SfoSpec {
    pub minimizer: Minimizer,
    pub estimator: Estimator,
    pub samples: usize,
    pub step_size: f64,
    pub weights: WeightScheme,
    pub weight_scale: f64,
    /// `true`: simultaneous updates (the paper's); `false`: alternating.
    pub simultaneous: bool,
    /// Worker threads (see [`SfoOptions::threads`]).
    pub threads: usize,
}

impl SfoSpec {
    /// Checks the options; errors name the offending key (`(key, reason)`).
    pub fn new(
        minimizer: Minimizer,
        o: &SfoOptions,
        simultaneous: bool,
    ) -> Result<SfoSpec, (&'static str, String)> {
        let samples = o.samples.unwrap_or(match o.estimator {
            Estimator::BalancedOutcome => 100,
            _ => 1,
        });
        if samples == 0 {
            return Err(("samples", "must be at least 1".into()));
        }
        let (threads, _) = crate::cfr::resolve_parallel(o.threads, Some(1))?;
        if !(o.step_size.is_finite() && o.step_size > 0.0) {
            return Err((
                "step_size",
                format!(
                    "{} is not a positive number",
                    crate::util::check::short_number(o.step_size)
                ),
            ));
        }
        if !(o.weight_scale.is_finite() && o.weight_scale > 0.0) {
            return Err((
                "weight_scale",
                format!(
                    "{} is not a positive number",
                    crate::util::check::short_number(o.weight_scale)
                ),
            ));
        }
        Ok(SfoSpec {
            minimizer,
            estimator: o.estimator,
            samples,
            step_size: o.step_size,
            weights: o.weights,
            weight_scale: o.weight_scale,
            simultaneous,
            threads,
        })
    }
}

/// Stochastic FTRL / OMD with the dilated entropy over a compiled tree.
pub struct SfoSolver {
    tree: Arc<PublicTree>,
    spec: SfoSpec,
    seed: u64,
    /// Per player: the estimators with their scratch (the two players' losses can then be
    /// estimated on two threads).
    est: [Estimators; 2],
    /// With `threads > 1`: the workers.
    pool: Option<Arc<rayon::ThreadPool>>,
    /// With `threads > 1`: per worker, estimator scratch and the log of its draws' additions.
    /// Each on its own cache lines (a worker's log grows as its draws run; workers sharing
    /// a line slow each other down).
    workers: Vec<CachePadded<Worker>>,
    weights: [Vec<f64>; 2],
    iteration: u64,
    nodes_touched: u64,
    /// Current behavioural policy as log-probabilities.
    log_policy: [Vec<f64>; 2],
    /// FTRL: cumulative estimated loss per sequence (empty for OMD).
    cum_loss: [Vec<f64>; 2],
    /// Sum of the sequence-form iterates (global action indices).
    seq_sum: [Vec<f64>; 2],
    // Scratch.
    /// Per player: the estimated loss (indexed by the player's sequences).
    grad: [Vec<f64>; 2],
    seq: Vec<f64>,
    scratch: ProxScratch,
    last_loss_max: f64,
}

impl SfoSolver {
    /// A solver at iteration 0 (uniform policies). `histories` must belong to `tree`.
    pub fn new(tree: Arc<PublicTree>, histories: HistoryTree, spec: SfoSpec, seed: u64) -> Self {
        let est0 = Estimators::new(tree.clone(), histories);
        let est = [est0.clone(), est0];
        let weights = std::array::from_fn(|p| {
            prox::infoset_weights(&tree.infosets[p], spec.weights, spec.weight_scale)
        });
        let uniform = crate::tree::uniform_tree_policy(&tree);
        let log_policy = uniform.map(|v| v.into_iter().map(f64::ln).collect());
        let cum_loss = std::array::from_fn(|p| match spec.minimizer {
            Minimizer::Ftrl => vec![0.0; tree.num_sequences(p)],
            Minimizer::Omd => Vec::new(),
        });
        let seq_sum = std::array::from_fn(|p| vec![0.0; tree.infosets[p].num_actions_total()]);
        let max_seq = tree.num_sequences(0).max(tree.num_sequences(1));
        let tree_sequences = [tree.num_sequences(0), tree.num_sequences(1)];
        SfoSolver {
            tree,
            spec,
            seed,
            est,
            workers: Vec::new(),
            pool: crate::cfr::worker_pool(spec.threads),
            weights,
            iteration: 0,
            nodes_touched: 0,
            log_policy,
            cum_loss,
            seq_sum,
            grad: std::array::from_fn(|p| vec![0.0; tree_sequences[p]]),
            seq: vec![0.0; max_seq],
            scratch: ProxScratch::default(),
            last_loss_max: 0.0,
        }
    }

    /// The solver's description.
    pub fn spec(&self) -> &SfoSpec {
        &self.spec
    }

    /// The infoset weights `β_I` of player `p`.
    pub fn weights(&self, p: usize) -> &[f64] {
        &self.weights[p]
    }

    fn behavioural(&self) -> TreePolicy {
        std::array::from_fn(|p| self.log_policy[p].iter().map(|x| x.exp()).collect())
    }

    /// Estimates player `p`'s loss under `policy` into `self.grad[p]` (negated utility
    /// gradient); with workers and several draws, the draws are split over them.
    fn estimate_loss(&mut self, p: usize, policy: &TreePolicy) {
        let t = self.iteration + 1;
        let sampled = self.spec.estimator != Estimator::Exact;
        let (touched, m) = match &self.pool {
            Some(pool) if sampled && self.spec.samples > 1 => {
                use rayon::prelude::*;
                let chunks = self.spec.threads.min(self.spec.samples);
                let est = &self.est[p];
                self.workers
                    .resize_with(chunks, || CachePadded::new((est.clone(), Vec::new())));
                let (spec, seed, samples) = (&self.spec, self.seed, self.spec.samples);
                let touched: u64 = pool.install(|| {
                    self.workers
                        .par_iter_mut()
                        .enumerate()
                        .map(|(c, w)| {
                            let (est, log) = &mut **w;
                            log.clear();
                            let ks = c * samples / chunks..(c + 1) * samples / chunks;
                            let rng = |k| draw_stream(seed, t, p, k);
                            est.draws(spec.estimator, p, policy, ks, rng, log)
                        })
                        .sum()
                });
                let grad = &mut self.grad[p];
                grad.iter_mut().for_each(|v| *v = 0.0);
                for w in &self.workers {
                    let log = &w.1;
                    for &(i, v) in log {
                        grad[i as usize] += v;
                    }
                }
                let scale = 1.0 / samples as f64;
                grad.iter_mut().for_each(|v| *v *= scale);
                (touched, negate(grad))
            }
            _ => estimate(
                &self.spec,
                &mut self.est[p],
                p,
                policy,
                self.seed,
                t,
                &mut self.grad[p],
            ),
        };
        self.nodes_touched += touched;
        self.last_loss_max = self.last_loss_max.max(m);
    }

    /// Player `p`'s regret-minimiser step with the loss in `self.grad`.
    fn update(&mut self, p: usize) {
        let inf = &self.tree.infosets[p];
        let n = self.tree.num_sequences(p);
        let eta = self.spec.step_size;
        match self.spec.minimizer {
            Minimizer::Ftrl => {
                for (c, g) in self.cum_loss[p].iter_mut().zip(&self.grad[p][..n]) {
                    *c += g;
                }
                prox::prox(
                    inf,
                    &self.weights[p],
                    None,
                    &self.cum_loss[p],
                    eta,
                    &mut self.log_policy[p],
                    &mut self.scratch,
                );
            }
            Minimizer::Omd => {
                prox::prox_in_place(
                    inf,
                    &self.weights[p],
                    &self.grad[p][..n],
                    eta,
                    &mut self.log_policy[p],
                    &mut self.scratch,
                );
            }
        }
    }
}

/// The random stream of draw `k` of player `p`'s loss estimate in iteration `t` (draw 0's is
/// [`stream`]'s).
fn draw_stream(seed: u64, t: u64, p: usize, k: usize) -> SplitMix64 {
    let mut s = stream(seed, t, p);
    if k == 0 {
        return s;
    }
    SplitMix64::new(s.next_u64() ^ (k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// The random stream of player `p`'s loss estimate in iteration `t`.
fn stream(seed: u64, t: u64, p: usize) -> SplitMix64 {
    let mut m = SplitMix64::new(seed ^ 0x5F0_5F0_5F0);
    let a = m.next_u64();
    let mut m = SplitMix64::new(a ^ t.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let b = m.next_u64();
    SplitMix64::new(b ^ (p as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03))
}

/// Player `p`'s estimated loss under `policy` (the negated utility gradient) into `grad`;
/// returns the histories visited and the largest absolute loss entry.
fn estimate(
    spec: &SfoSpec,
    est: &mut Estimators,
    p: usize,
    policy: &TreePolicy,
    seed: u64,
    t: u64,
    grad: &mut [f64],
) -> (u64, f64) {
    let rng = |k| draw_stream(seed, t, p, k);
    let touched = est.gradient(spec.estimator, p, policy, spec.samples, rng, grad);
    (touched, negate(grad))
}

/// Negates the gradient into the loss; returns the largest absolute entry.
fn negate(grad: &mut [f64]) -> f64 {
    grad.iter_mut().for_each(|v| *v = -*v);
    grad.iter().fold(0.0f64, |m, v| m.max(v.abs()))
}

impl TreeSolver for SfoSolver {
    fn iterate(&mut self) {
        self.last_loss_max = 0.0;
        let mut policy = self.behavioural();
        // Average of the iterates played this round.
        for (p, flat) in policy.iter().enumerate() {
            let n = self.tree.num_sequences(p);
            self.tree.reach(p, flat, &mut self.seq[..n]);
            for (s, x) in self.seq_sum[p].iter_mut().zip(&self.seq[..n - 1]) {
                *s += x;
            }
        }
        if self.spec.simultaneous {
            // One draw per estimate: the two players' estimates on two workers; several
            // draws: each estimate's draws over all workers (`estimate_loss`).
            let one_draw = self.spec.samples == 1 || self.spec.estimator == Estimator::Exact;
            match self.pool.clone() {
                Some(pool) if one_draw => {
                    let t = self.iteration + 1;
                    let (spec, seed) = (&self.spec, self.seed);
                    let [e0, e1] = &mut self.est;
                    let [g0, g1] = &mut self.grad;
                    let policy = &policy;
                    let ((n0, m0), (n1, m1)) = pool.join(
                        || estimate(spec, e0, 0, policy, seed, t, g0),
                        || estimate(spec, e1, 1, policy, seed, t, g1),
                    );
                    self.nodes_touched += n0 + n1;
                    self.last_loss_max = self.last_loss_max.max(m0).max(m1);
                }
                _ => {
                    self.estimate_loss(0, &policy);
                    self.estimate_loss(1, &policy);
                }
            }
            self.update(1);
            self.update(0);
        } else {
            self.estimate_loss(0, &policy);
            self.update(0);
            policy[0] = self.log_policy[0].iter().map(|x| x.exp()).collect();
            self.estimate_loss(1, &policy);
            self.update(1);
        }
        self.iteration += 1;
    }

    fn iteration(&self) -> u64 {
        self.iteration
    }

    fn average_policy(&self) -> TreePolicy {
        crate::cfr::normalized_average(&self.tree, &self.seq_sum)
    }

    fn current_policy(&self) -> TreePolicy {
        self.behavioural()
    }

    fn nodes_touched(&self) -> u64 {
        self.nodes_touched
    }

    fn scalars(&self) -> Vec<(String, f64)> {
        vec![("sfo/loss_max_abs".into(), self.last_loss_max)]
    }

    fn snapshot(&self) -> SolverSnapshot {
        SolverSnapshot {
            iteration: self.iteration,
            counters: vec![self.nodes_touched],
            arrays: [&self.log_policy, &self.seq_sum, &self.cum_loss]
                .into_iter()
                .flat_map(|a| a.iter().cloned())
                .collect(),
        }
    }

    fn restore(&mut self, snapshot: SolverSnapshot) -> Result<(), String> {
        let [l0, l1, s0, s1, c0, c1]: [Vec<f64>; 6] =
            snapshot.arrays.try_into().map_err(|a: Vec<Vec<f64>>| {
                format!(
                    "expected 6 arrays in an FTRL/OMD checkpoint, found {}",
                    a.len()
                )
            })?;
        let [nodes]: [u64; 1] = snapshot.counters.try_into().map_err(|c: Vec<u64>| {
            format!(
                "expected 1 counter in an FTRL/OMD checkpoint, found {}",
                c.len()
            )
        })?;
        for (p, (l, s, c)) in [(&l0, &s0, &c0), (&l1, &s1, &c1)].into_iter().enumerate() {
            let n = self.tree.infosets[p].num_actions_total();
            if l.len() != n || s.len() != n || c.len() != self.cum_loss[p].len() {
                return Err(format!(
                    "FTRL/OMD checkpoint does not fit this game: player {p} has {n} infoset actions"
                ));
            }
        }
        self.iteration = snapshot.iteration;
        self.nodes_touched = nodes;
        self.log_policy = [l0, l1];
        self.seq_sum = [s0, s1];
        self.cum_loss = [c0, c1];
        Ok(())
    }
}

#[cfg(test)]
mod tests;
