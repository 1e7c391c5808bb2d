//! Public Outcome Sampling MCCFR with baseline-corrected values (Davis, Schmid & Bowling,
//! "Low-Variance and Zero-Variance Baselines for Extensive-Form Games", section 6 and
//! Appendix E, Algorithms 3 and 4).
//!
//! # The walk
//! One *pass* walks a single path of the public tree from the root to a terminal public node.
//! At every public node `S` on the path it samples one successor `S'` with probability
//! `q(S, S')` and propagates the reach of **every** history of `S` that leads into `S'`: hidden
//! information (private cards, unobserved actions) is never sampled, only what both players
//! observe. Walking back up, each history `h` of `S` and action `a` gets the baseline-corrected
//! value of Eq. 15/16:
//!
//! ```text
//! û(h,a) = b(h,a) + 1[(ha) ∈ S'] / q(S,S') · (û(ha) − b(h,a)),   û(h) = Σ_a σ(h,a) û(h,a)
//! ```
//!
//! and every infoset `I` of the acting player in `S` gets the regret increment
//! `r(I,a) = 1/π_q(S) · Σ_{h∈I} π_{-i}(h) · (û(h,a) − û(h))` (signed for player 1), where
//! `π_q(S)` is the product of the `q`'s above `S`. Values are kept in player 0's terms (the game
//! is zero-sum). The average strategy is accumulated with stochastic weighting:
//! `S(I,a) += w_t · π_i(I) / π_q(S) · σ(I,a)`, an unbiased sample of CFR's average update
//! (the paper's Algorithm 3 writes a plain running mean at sampled infosets; we keep CFR's
//! reach-weighted average so that the full-width and sampled solvers average the same thing).
//!
//! All work at one public node is done by [`PosSolver`]'s node update, which only reads and
//! writes the entries of that node's histories and of its infosets' contiguous action range —
//! the unit a batched (GPU) version would turn into tensor operations.
//!
//! # Options ([`PosOptions`])
//! * `sampling`: `uniform` (`q = 1/|T(S)|`) or `on-policy` (`q ∝` probability of reaching
//!   the successor under the current strategies and chance, mixed with `exploration · uniform`).
//!   **The paper's POS experiments (Fig. 2) use uniform sampling, simultaneous updates, CFR+
//!   regrets with linear averaging and exponential baseline averaging with α = 0.5.**
//!   Pure on-policy sampling (`exploration = 0`) never samples successors the current
//!   strategies avoid, so its counterfactual values there are not sampled at all (biased);
//!   keep `exploration > 0` for convergence guarantees.
//! * `regret`: `plain` (CFR) or `plus` (regret matching+: cumulative regrets clamped at 0).
//! * `baseline`: `none` (b = 0: plain POS), `learned-history` (Eq. 6 per history-action),
//!   `learned-infoset` (VR-MCCFR: per infoset-action, each sample the counterfactual-reach
//!   weighted mean `Σ_h π_{-i}(h) û(ha) / Σ_h π_{-i}(h)` over all histories of the infoset;
//!   at chance histories, which have no infoset, it falls back to the per-history value),
//!   `predictive` (Algorithm 4: after the regrets at `S` are updated, the sampled children are
//!   re-evaluated under the next strategy and that value becomes their baseline).
//! * `baseline_averaging`: `simple` (mean of all samples) or `exponential` (weights
//!   `α(1−α)^{n−j}`, renormalised to sum to one); `baseline_alpha` = α.
//! * `measure_variance`: also compute the exact values of the current strategy (one sweep over
//!   all histories per pass; small games only) and report `cfv_variance`: the mean over the
//!   updated (infoset, action) pairs (those with positive counterfactual reach) of
//!   `(Σ_{h∈I} π_{-i}(h) (û(h,a) − u(ha)))²`, the squared error of the sampled counterfactual
//!   value given that its public node was reached (cf. the paper's Appendix G).
//! * `threads`, `walks`: parallel passes (see "Threads" below).
//! * Common `[solver]` keys: `updates` (`alternating`: one pass per player, each updating only
//!   that player's regrets; `simultaneous`: one pass updating both), `averaging`, `gamma`.
//!
//! # Determinism
//! Iteration `t` draws from a generator seeded by `(seed, t)`, so a run restored from a
//! `SolverSnapshot` continues exactly as the uninterrupted run.
//!
//! # Threads (`threads`, `walks`)
//! With `walks = 1` (the default, and the default whenever `threads = 1`) an iteration is the
//! sequential algorithm above, bit for bit. With `walks = W > 1` each turn (player 0's and
//! player 1's pass with alternating updates, the one pass with simultaneous updates) runs `W`
//! independent passes that all read the tables as they stood when the turn began; pass `k`
//! draws from a stream seeded by `(seed, t, turn, k)`. The passes write nothing: each records
//! its regret increments, average-strategy increments and baseline samples in a log (its own
//! σ_{t+1}, which the predictive baseline needs at the node it is leaving, it computes
//! locally). The log buckets its entries by shard of the tables as it is written
//! ([`crate::cfr::team::shard_of`]). The `W` passes are split into contiguous chunks, one per
//! worker of a persistent [`crate::cfr::team::Team`] (one dispatch per turn); after a barrier
//! each worker applies, in pass order, its shard's entries from every chunk's log. Every table entry thus receives the
//! same floating-point operations in the same order whatever the number of threads: **results
//! are bit-identical for a given `(seed, walks)` across thread counts** (and a resumed run
//! repeats an uninterrupted one). `W > 1` is a mini-batched variant of POS (`W` sampled public
//! paths per turn from one strategy), not the sequential algorithm; `measure_variance` needs
//! `walks = 1`. Default `walks` with more than one thread:
//! [`crate::cfr::PARALLEL_WALKS_PER_THREAD`]` × threads`.

use crate::cfr::baseline::{Baseline, BaselineAveraging};
use crate::cfr::{Averaging, RegretRule, Updates};
use serde::Deserialize;

/// How the successor public state is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sampling {
    /// Uniform over successor public states.
    Uniform,
    /// Proportional to the successor's probability under the current strategies and chance.
    OnPolicy,
}

/// The algorithm's own `[solver]` keys.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PosOptions {
    #[serde(default = "default_sampling")]
    pub sampling: Sampling,
    /// Weight of the uniform distribution mixed into on-policy sampling.
    #[serde(default)]
    pub exploration: f64,
    #[serde(default = "default_regret")]
    pub regret: RegretRule,
    #[serde(default = "default_baseline")]
    pub baseline: Baseline,
    #[serde(default = "default_baseline_averaging")]
    pub baseline_averaging: BaselineAveraging,
    #[serde(default = "default_baseline_alpha")]
    pub baseline_alpha: f64,
    #[serde(default)]
    pub measure_variance: bool,
    /// Worker threads (default 1: the sequential algorithm); see "Threads" in the module docs.
    #[serde(default)]
    pub threads: Option<usize>,
    /// Passes per turn (default: 1 with one thread, else
    /// [`crate::cfr::PARALLEL_WALKS_PER_THREAD`] per thread).
    #[serde(default)]
    pub walks: Option<usize>,
}

fn default_sampling() -> Sampling {
    Sampling::Uniform
}
fn default_regret() -> RegretRule {
    RegretRule::Plus
}
fn default_baseline() -> Baseline {
    Baseline::Predictive
}
fn default_baseline_averaging() -> BaselineAveraging {
    BaselineAveraging::Exponential
}
fn default_baseline_alpha() -> f64 {
    0.5
}

impl Default for PosOptions {
    fn default() -> Self {
        PosOptions {
            sampling: default_sampling(),
            exploration: 0.0,
            regret: default_regret(),
            baseline: default_baseline(),
            baseline_averaging: default_baseline_averaging(),
            baseline_alpha: default_baseline_alpha(),
            measure_variance: false,
            threads: None,
            walks: None,
        }
    }
}

impl PosOptions {
    /// Checks the options; the error names the offending key.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if !matches!(self.regret, RegretRule::Plain | RegretRule::Plus) {
            return Err(("regret", "expected `plain` or `plus`".into()));
        }
        if self.baseline == Baseline::Static {
            return Err((
                "baseline",
                "`static` is outcome sampling's; pos-mccfr takes `none`, `learned-history`, \
                 `learned-infoset` or `predictive`"
                    .into(),
            ));
        }
        let a = self.baseline_alpha;
        if !(a.is_finite() && a > 0.0 && a <= 1.0) {
            return Err((
                "baseline_alpha",
                format!("{} must lie in (0, 1]", crate::util::check::short_number(a)),
            ));
        }
        let e = self.exploration;
        if !(e.is_finite() && (0.0..=1.0).contains(&e)) {
            return Err((
                "exploration",
                format!("{} must lie in [0, 1]", crate::util::check::short_number(e)),
            ));
        }
        let (_, walks) = self.parallel()?;
        if walks > 1 && self.measure_variance {
            return Err((
                "measure_variance",
                format!("measures the sequential pass only; this run has walks = {walks}"),
            ));
        }
        Ok(())
    }

    /// The resolved `(threads, walks)`: one thread unless asked (as for the MCCFR samplers:
    /// on 2 cores the parallel walks measured slower); `walks` defaults to 1 with one thread,
    /// else [`crate::cfr::PARALLEL_WALKS_PER_THREAD`]` × threads`. The error names the key.
    pub fn parallel(&self) -> Result<(usize, usize), (&'static str, String)> {
        crate::cfr::resolve_parallel(self.threads.or(Some(1)), self.walks)
    }
}

/// A complete description of a POS solver.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PosSpec {
    pub options: PosOptions,
    pub updates: Updates,
    pub averaging: Averaging,
}

impl Default for PosSpec {
    /// The paper's POS setting: uniform sampling, CFR+ with linear averaging, predictive
    /// baseline; alternating updates (the project's convention).
    fn default() -> Self {
        PosSpec {
            options: PosOptions::default(),
            updates: Updates::Alternating,
            averaging: Averaging::Linear,
        }
    }
}

/// One public node of the sampled path: the node, `π_q` of reaching it, and the probability
/// with which its successor on the path was drawn (1 at the terminal node).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathStep {
    pub node: u32,
    pub reach_q: f64,
    pub q_next: f64,
    /// When every history of the node has exactly one child in the sampled successor and it
    /// is the same child index `j` for all (a public action), `j`; else [`crate::tree::NONE`].
    pub child_index: u32,
}

mod pass;
mod solver;
mod tables;
mod values;

pub use solver::PosSolver;
pub(crate) use values::stream;
pub use values::{exact_cf_values, exact_history_values};

use crate::cfr::regret_match_infoset as regret_match;

#[cfg(test)]
mod tests;
