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
//! [`SolverSnapshot`] continues exactly as the uninterrupted run.
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
use crate::cfr::team::{Buf, Team, walk_then_apply};
use crate::cfr::{
    Averaging, ROUNDING_NOISE, RegretRule, SolverSnapshot, TreeSolver, Updates, expected_value,
};
use crate::game::Game;
use crate::tree::TreePolicy;
use crate::tree::history::{HistoryKind, HistoryTree};
use crate::tree::{NodeKind, PublicTree, TreeError};
use crate::util::SplitMix64;
use crossbeam::utils::CachePadded;
use serde::Deserialize;
use std::ops::Range;
use std::sync::{Arc, RwLock};

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
            return Err(("baseline_alpha", format!("{a} must lie in (0, 1]")));
        }
        let e = self.exploration;
        if !(e.is_finite() && (0.0..=1.0).contains(&e)) {
            return Err(("exploration", format!("{e} must lie in [0, 1]")));
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

/// [`crate::tree::NONE`] as a `usize` (a [`PathStep::child_index`] that names no child).
const NONE_USIZE: usize = crate::tree::NONE as usize;

/// Reused buffers of the per-node update.
#[derive(Default)]
struct NodeScratch {
    cfq: Vec<f64>,
    err: Vec<f64>,
    cf_reach: Vec<f64>,
    own_reach: Vec<f64>,
    mass: Vec<f64>,
    /// The predictive baselines of one history's children as a deferred pass sees them.
    kids: Vec<f64>,
}

/// Clears `v` and fills it with `n` zeros, keeping its allocation.
fn zeroed(v: &mut Vec<f64>, n: usize) {
    v.clear();
    v.resize(n, 0.0);
}

/// What the solver learns (everything a snapshot saves besides the counters).
#[derive(Clone, Debug, PartialEq)]
struct Tables {
    regrets: [Vec<f64>; 2],
    cumulative: [Vec<f64>; 2],
    /// Regret matching of `regrets`, kept in step.
    current: [Vec<f64>; 2],
    /// Per history `c` (i.e. per edge `(h, a)` into it): learned baseline sum and weight; the
    /// predictive baseline keeps its value in `base_sum`.
    base_sum: Vec<f64>,
    base_w: Vec<f64>,
    /// Learned-infoset baseline per global action index: sum and weight.
    inf_sum: [Vec<f64>; 2],
    inf_w: [Vec<f64>; 2],
}

/// A baseline entry a pass feeds.
#[derive(Clone, Copy, Debug)]
enum Slot {
    /// The learned baseline of the edge into history `c`.
    History(u32),
    /// The learned-infoset baseline of player `p`'s global action `g`.
    Infoset(u8, u32),
    /// The predictive baseline of the edge into history `c` (set, not averaged).
    Predictive(u32),
}

impl Tables {
    /// Feeds sample `x` to baseline `slot`.
    #[inline(always)]
    fn learn(&mut self, slot: Slot, x: f64, opts: &PosOptions) {
        let (avg, alpha) = (opts.baseline_averaging, opts.baseline_alpha);
        match slot {
            Slot::History(c) => {
                let c = c as usize;
                learn_sample(avg, alpha, &mut self.base_sum[c], &mut self.base_w[c], x);
            }
            Slot::Infoset(p, g) => {
                let (p, g) = (p as usize, g as usize);
                learn_sample(
                    avg,
                    alpha,
                    &mut self.inf_sum[p][g],
                    &mut self.inf_w[p][g],
                    x,
                );
            }
            Slot::Predictive(c) => self.base_sum[c as usize] = x,
        }
    }
}

/// Folds one sample `x` into a learned baseline's (sum, weight).
#[inline]
fn learn_sample(averaging: BaselineAveraging, alpha: f64, sum: &mut f64, w: &mut f64, x: f64) {
    match averaging {
        BaselineAveraging::Simple => {
            *sum += x;
            *w += 1.0;
        }
        BaselineAveraging::Exponential => {
            *sum = (1.0 - alpha) * *sum + alpha * x;
            *w = (1.0 - alpha) * *w + alpha;
        }
    }
}

/// The scratch of one pass, indexed by history id (one per worker).
#[derive(Default)]
struct PassScratch {
    /// Both players' reaches per history, side by side (one cache line for the pair).
    reach: Vec<[f64; 2]>,
    values: Vec<f64>,
    next_values: Vec<f64>,
    action_values: Vec<f64>,
    path: Vec<PathStep>,
    /// Per-node buffers (local slices of a node's actions and infosets), kept between calls so
    /// a pass allocates nothing.
    node: NodeScratch,
    /// Histories entered since the owner last took the count.
    touched: u64,
}

impl PassScratch {
    fn new(histories: usize) -> PassScratch {
        PassScratch {
            reach: vec![[0.0; 2]; histories],
            values: vec![0.0; histories],
            next_values: vec![0.0; histories],
            action_values: vec![0.0; histories],
            ..PassScratch::default()
        }
    }
}

/// What only the sequential pass (`walks = 1`) fills: the variance measurement and the
/// sampled counterfactual values of [`PosSolver::sample_cf_values`].
#[derive(Default)]
struct Extras {
    /// Exact history values of the current strategy (with `measure_variance`).
    exact: Vec<f64>,
    /// [sum of squared errors, count] of the last iteration, then the exponential moving
    /// average of the per-iteration mean.
    var_stats: [f64; 3],
    /// Sampled counterfactual values of the last non-learning pass (per global action index).
    cf_sample: Vec<f64>,
}

/// Where a pass's updates go: straight into the tables (the sequential algorithm) or into a
/// [`Log`] applied after the iteration's walks (`walks > 1`).
trait Sink {
    /// Whether the tables stay as they were when the pass began.
    const DEFERRED: bool;
    fn tab(&self) -> &Tables;
    /// `cumulative[p][g] += w · current[p][g]` over the infoset's actions `r`.
    fn add_avg(&mut self, p: usize, r: Range<usize>, w: f64);
    /// Adds `delta(k)` (where `Some`) to the regret of action `r.start + k`, clamps at zero with
    /// `plus` and refreshes the infoset's policy.
    fn update_regrets(
        &mut self,
        p: usize,
        r: Range<usize>,
        delta: impl Fn(usize) -> Option<f64>,
        plus: bool,
    );
    /// Announces the action range `r` of player `p` whose regrets the node update is about to
    /// change (empty when none).
    fn begin_node(&mut self, p: usize, r: Range<usize>);
    /// The policy of actions `r` after this pass's own regret updates (σ_{t+1} at the node
    /// being updated).
    fn cur_next(&self, p: usize, r: Range<usize>) -> &[f64];
    fn learn(&mut self, slot: Slot, x: f64, opts: &PosOptions);
    /// Sets the predictive baseline of each history `c` of `cs` to `values[c]`.
    #[inline]
    fn set_predictive(&mut self, cs: &[u32], values: &[f64], opts: &PosOptions) {
        for &c in cs {
            self.learn(Slot::Predictive(c), values[c as usize], opts);
        }
    }
}

/// Updates applied as the pass makes them.
struct InPlace<'a> {
    tab: &'a mut Tables,
}

impl Sink for InPlace<'_> {
    const DEFERRED: bool = false;

    #[inline]
    fn tab(&self) -> &Tables {
        self.tab
    }

    #[inline]
    fn add_avg(&mut self, p: usize, r: Range<usize>, w: f64) {
        let tab = &mut *self.tab;
        let cur = &tab.current[p][r.clone()];
        for (c, &x) in tab.cumulative[p][r].iter_mut().zip(cur) {
            *c += w * x;
        }
    }

    #[inline]
    fn update_regrets(
        &mut self,
        p: usize,
        r: Range<usize>,
        delta: impl Fn(usize) -> Option<f64>,
        plus: bool,
    ) {
        let reg = &mut self.tab.regrets[p][r.clone()];
        for (k, x) in reg.iter_mut().enumerate() {
            if let Some(d) = delta(k) {
                *x += d;
            }
            if plus {
                *x = x.max(0.0);
            }
        }
        regret_match(&self.tab.regrets[p][r.clone()], &mut self.tab.current[p][r]);
    }

    #[inline]
    fn begin_node(&mut self, _p: usize, _r: Range<usize>) {}

    #[inline]
    fn cur_next(&self, p: usize, r: Range<usize>) -> &[f64] {
        &self.tab.current[p][r]
    }

    #[inline(always)]
    fn learn(&mut self, slot: Slot, x: f64, opts: &PosOptions) {
        self.tab.learn(slot, x, opts);
    }

    #[inline]
    fn set_predictive(&mut self, cs: &[u32], values: &[f64], _opts: &PosOptions) {
        let base_sum = &mut self.tab.base_sum[..];
        for &c in cs {
            base_sum[c as usize] = values[c as usize];
        }
    }
}

/// The updates of one worker's walks that fall in one shard of the tables (see
/// [`crate::cfr::team::shard_of`]: regret, policy and average entries by the first action of
/// their infoset, baseline entries by their slot), in the order the walks made them.
#[derive(Default)]
struct Bucket {
    /// `(player, first action, actions)` of every regret update; their increments, in order,
    /// in `deltas`.
    infosets: Vec<(u8, u32, u32)>,
    deltas: Vec<f64>,
    /// Per player, `(action, increment)` into the average-policy weights.
    avg: [Vec<(u32, f64)>; 2],
    /// Baseline samples and predictive values.
    baseline: Vec<(Slot, f64)>,
}

impl Bucket {
    fn clear(&mut self) {
        self.infosets.clear();
        self.deltas.clear();
        self.avg[0].clear();
        self.avg[1].clear();
        self.baseline.clear();
    }

    /// Applies the bucket through `t` in the order it was written (a changed infoset's
    /// policy is refreshed right after its regrets).
    ///
    /// # Safety
    /// `t` points at live tables and no other thread accesses this bucket's shard meanwhile
    /// (the shards' entries are disjoint).
    unsafe fn apply(&self, t: &TablePtrs, opts: &PosOptions) {
        let plus = opts.regret == RegretRule::Plus;
        let mut deltas = self.deltas.iter();
        unsafe {
            for &(p, start, n) in &self.infosets {
                let (p, start, n) = (p as usize, start as usize, n as usize);
                let reg = t.regrets[p].slice(start, n);
                for (x, d) in reg.iter_mut().zip(&mut deltas) {
                    *x += d;
                    if plus {
                        *x = x.max(0.0);
                    }
                }
                regret_match(reg, t.current[p].slice(start, n));
            }
            for (cum, avg) in t.cumulative.iter().zip(&self.avg) {
                for &(g, d) in avg {
                    *cum.at(g as usize) += d;
                }
            }
            let (avg, alpha) = (opts.baseline_averaging, opts.baseline_alpha);
            for &(slot, x) in &self.baseline {
                match slot {
                    Slot::History(c) => {
                        let c = c as usize;
                        learn_sample(avg, alpha, t.base_sum.at(c), t.base_w.at(c), x);
                    }
                    Slot::Infoset(p, g) => {
                        let (p, g) = (p as usize, g as usize);
                        learn_sample(avg, alpha, t.inf_sum[p].at(g), t.inf_w[p].at(g), x);
                    }
                    Slot::Predictive(c) => *t.base_sum.at(c as usize) = x,
                }
            }
        }
    }
}

/// The tables' buffers (see [`Bucket::apply`]).
#[derive(Clone, Copy)]
struct TablePtrs {
    regrets: [Buf; 2],
    cumulative: [Buf; 2],
    current: [Buf; 2],
    base_sum: Buf,
    base_w: Buf,
    inf_sum: [Buf; 2],
    inf_w: [Buf; 2],
}

// SAFETY: the pointers are only dereferenced under `Bucket::apply`'s contract (each thread
// touches the entries of its own shard only).
unsafe impl Send for TablePtrs {}
unsafe impl Sync for TablePtrs {}

impl TablePtrs {
    fn new(tab: &mut Tables) -> TablePtrs {
        let pair = |v: &mut [Vec<f64>; 2]| {
            let [a, b] = v;
            [Buf::of(a), Buf::of(b)]
        };
        TablePtrs {
            regrets: pair(&mut tab.regrets),
            cumulative: pair(&mut tab.cumulative),
            current: pair(&mut tab.current),
            base_sum: Buf::of(&mut tab.base_sum),
            base_w: Buf::of(&mut tab.base_w),
            inf_sum: pair(&mut tab.inf_sum),
            inf_w: pair(&mut tab.inf_w),
        }
    }
}

/// The updates of one worker's walks, bucketed by shard as they are logged.
#[derive(Default)]
struct Log {
    /// One bucket per shard.
    buckets: Vec<Bucket>,
    /// σ_{t+1} of the action range `next_at = (player, first action)` of the node being
    /// updated, and the updated regrets it is computed from.
    next: Vec<f64>,
    next_at: (usize, usize),
    regrets: Vec<f64>,
}

impl Log {
    /// Empties the log (keeping its buffers) for `shards` shards.
    fn clear(&mut self, shards: usize) {
        self.buckets.resize_with(shards.max(1), Default::default);
        for b in &mut self.buckets {
            b.clear();
        }
        self.next.clear();
    }

    /// The bucket of table index (infoset start or baseline slot) `key`.
    #[inline]
    fn bucket(&mut self, key: usize) -> &mut Bucket {
        let s = crate::cfr::team::shard_of(key, self.buckets.len());
        &mut self.buckets[s]
    }
}

/// Updates recorded in a [`Log`]; the pass reads tables that stay fixed.
struct Deferred<'a> {
    tab: &'a Tables,
    log: &'a mut Log,
}

impl Sink for Deferred<'_> {
    const DEFERRED: bool = true;

    #[inline]
    fn tab(&self) -> &Tables {
        self.tab
    }

    fn add_avg(&mut self, p: usize, r: Range<usize>, w: f64) {
        let cur = &self.tab.current[p];
        self.log.bucket(r.start).avg[p].extend(r.map(|g| (g as u32, w * cur[g])));
    }

    fn update_regrets(
        &mut self,
        p: usize,
        r: Range<usize>,
        delta: impl Fn(usize) -> Option<f64>,
        plus: bool,
    ) {
        let log = &mut *self.log;
        let s = crate::cfr::team::shard_of(r.start, log.buckets.len());
        let Log {
            buckets,
            next,
            next_at,
            regrets,
        } = log;
        let b = &mut buckets[s];
        b.infosets
            .push((p as u8, r.start as u32, (r.end - r.start) as u32));
        regrets.clear();
        for (k, &x) in self.tab.regrets[p][r.clone()].iter().enumerate() {
            let d = delta(k).unwrap_or(0.0);
            b.deltas.push(d);
            let x = x + d;
            regrets.push(if plus { x.max(0.0) } else { x });
        }
        let at = next_at.1;
        regret_match(regrets, &mut next[r.start - at..r.end - at]);
    }

    fn begin_node(&mut self, p: usize, r: Range<usize>) {
        self.log.next_at = (p, r.start);
        self.log.next.clear();
        self.log.next.extend_from_slice(&self.tab.current[p][r]);
    }

    fn cur_next(&self, p: usize, r: Range<usize>) -> &[f64] {
        let (q, at) = self.log.next_at;
        if q == p && r.start >= at && r.end <= at + self.log.next.len() {
            &self.log.next[r.start - at..r.end - at]
        } else {
            &self.tab.current[p][r]
        }
    }

    fn learn(&mut self, slot: Slot, x: f64, _opts: &PosOptions) {
        let key = match slot {
            Slot::History(c) | Slot::Predictive(c) | Slot::Infoset(_, c) => c as usize,
        };
        self.log.bucket(key).baseline.push((slot, x));
    }
}

/// Public Outcome Sampling MCCFR (see the module docs).
pub struct PosSolver {
    tree: Arc<PublicTree>,
    ht: Arc<HistoryTree>,
    spec: PosSpec,
    seed: u64,
    iteration: u64,
    touched: u64,
    tab: Tables,
    /// The sequential pass's scratch.
    sc: PassScratch,
    extras: Extras,
    /// When set, passes follow the path to this terminal public node instead of sampling (the
    /// importance weights stay those of the sampling distribution): enumerates outcomes.
    target: Option<u32>,
    /// Resolved `walks`.
    walks: usize,
    /// With `walks > 1`: one scratch and update log per chunk of walks, kept between
    /// iterations (each worker writes its own during the walks, then reads every log to apply
    /// its shard).
    /// Each on its own cache lines (the passes write their scratch all the time; workers
    /// sharing a line slow each other down).
    workers: Vec<CachePadded<RwLock<(PassScratch, Log)>>>,
    /// With `threads > 1` (and `walks > 1`): the workers.
    team: Option<Team>,
    /// Apply the parallel walks' logs on the calling thread, shard after shard, instead of on
    /// the workers (for the tests that compare the two).
    serial_apply: bool,
}

/// Exact expected value (player 0) of every history under `policy`, children before parents.
pub fn exact_history_values(
    tree: &PublicTree,
    ht: &HistoryTree,
    policy: &TreePolicy,
    out: &mut [f64],
) {
    ht.values_into(tree, policy, out);
}

/// Exact counterfactual action values `v(I,a) = Σ_{h∈I} π_{-p}(h) u(ha)` of player `p` (in
/// `p`'s own terms) under `policy`, per global action index.
pub fn exact_cf_values(
    tree: &PublicTree,
    ht: &HistoryTree,
    policy: &TreePolicy,
    p: usize,
) -> Vec<f64> {
    let mut u = vec![0.0; ht.len()];
    ht.values_into(tree, policy, &mut u);
    let r = ht.opponent_reach(tree, policy, p);
    let sign = if p == 0 { 1.0 } else { -1.0 };
    let mut out = vec![0.0; tree.infosets[p].num_actions_total()];
    for (h, &reach) in r.iter().enumerate() {
        if ht.kind[h] == HistoryKind::Decision(p) {
            let base = tree.infosets[p].offset[ht.infoset[h] as usize] as usize;
            for (k, c) in ht.children(h).enumerate() {
                out[base + k] += sign * reach * u[c];
            }
        }
    }
    out
}

use crate::cfr::regret_match_infoset as regret_match;

/// Writes `out[j] = value(j)` and returns, in the same pass, the history value a node update
/// needs: with `decision`, [`expected_value`]`(weights, out)` (the first value when all are
/// equal, else the dot product); at chance, `Σ_j weights[j] out[j]` — the same sums, in the same
/// order, as computing `out` first.
#[inline]
fn values_and_fill(
    weights: &[f64],
    out: &mut [f64],
    decision: bool,
    value: impl Fn(usize) -> f64,
) -> f64 {
    let first = value(0);
    let mut equal = true;
    let dot: f64 = out
        .iter_mut()
        .zip(weights)
        .enumerate()
        .map(|(j, (o, &w))| {
            let x = if j == 0 { first } else { value(j) };
            *o = x;
            equal &= x == first;
            w * x
        })
        .sum();
    if decision && equal { first } else { dot }
}

/// Sets `reach[c]` for the histories `c` of `next_hs` to `step(reach[parent], g)`, where `g` is
/// the global action index of the edge into `c`; clears `child_index` unless every `c` is the
/// `child_index`-th child of its parent.
#[inline(always)]
fn propagate_reach(
    ht: &HistoryTree,
    next_hs: &[u32],
    reach: &mut [[f64; 2]],
    child_index: &mut u32,
    step: impl Fn([f64; 2], usize) -> [f64; 2],
) {
    for &c in next_hs {
        let c = c as usize;
        let h = ht.parent[c] as usize;
        let st = ht.steps[h];
        let j = c - st.first_child as usize;
        if j as u32 != *child_index {
            *child_index = crate::tree::NONE;
        }
        reach[c] = step(reach[h], st.action_base as usize + j);
    }
}

/// What [`predictive_hit_values`] reads: the node's weights table (the acting player's
/// current policy, or the chance probabilities indexed by child), the baselines, the sampled
/// child index `hit` and its probability `q`.
struct PredictiveHit<'a> {
    ht: &'a HistoryTree,
    weights: &'a [f64],
    decision: bool,
    base_sum: &'a [f64],
    hit: usize,
    q: f64,
    /// Store each child's corrected action value in `action_values` (step 2 reads them).
    write_actions: bool,
    /// Also compute the values under σ_{t+1} into `next_values` (see `update_node`).
    fuse_next: bool,
}

/// Step 1 of the node update for the predictive baseline when every history of the node has
/// its `hit`-th child in the sampled successor: the same arithmetic as the general loop, with
/// the tables borrowed once as slices for the whole node (so their headers are not reloaded
/// per history) and the action values stored only where a later step reads them.
#[inline(always)]
fn predictive_hit_values(a: PredictiveHit<'_>, hs: &[u32], sc: &mut PassScratch) {
    let PredictiveHit {
        ht,
        weights,
        decision,
        base_sum,
        hit,
        q,
        write_actions,
        fuse_next,
    } = a;
    let steps = &ht.steps[..];
    let values = &mut sc.values[..];
    let next_values = &mut sc.next_values[..];
    let action_values = &mut sc.action_values[..];
    for &h in hs {
        let h = h as usize;
        let st = steps[h];
        let kids = st.children();
        let w0 = if decision {
            st.action_base as usize
        } else {
            kids.start
        };
        let w = &weights[w0..w0 + kids.len()];
        let bs = &base_sum[kids.clone()];
        let c = kids.start + hit;
        let b = bs[hit];
        let x = b + (values[c] - b) / q;
        if fuse_next {
            let xn = next_values[c];
            let (v, vn) = values_and_next(w, decision, hit, x, xn, bs);
            values[h] = v;
            next_values[h] = vn;
        } else if write_actions {
            let av = &mut action_values[kids];
            values[h] = values_and_fill(w, av, decision, |j| if j == hit { x } else { bs[j] });
        } else {
            values[h] = value_with_hit(w, decision, hit, x, bs);
        }
    }
}

/// [`values_and_fill`] with `value(j)` = `x` at `hit` and `bs[j]` elsewhere, storing nothing.
#[inline(always)]
fn value_with_hit(weights: &[f64], decision: bool, hit: usize, x: f64, bs: &[f64]) -> f64 {
    let first = if hit == 0 { x } else { bs[0] };
    let mut equal = true;
    let mut dot = -0.0;
    for (j, (&w, &b)) in weights.iter().zip(bs).enumerate() {
        let y = if j == hit { x } else { b };
        equal &= y == first;
        dot += w * y;
    }
    if decision && equal { first } else { dot }
}

/// [`values_and_fill`] for the predictive baseline when only the child `hit` lies in the
/// sampled successor (`value(j)` = `x` at `hit` and `bs[j]` elsewhere, nothing stored), and
/// with it, in the same loop, the value under σ_{t+1} = `weights` of the baselines after the
/// sampled child's takes `xn` (as `learn_baselines` computes it: [`expected_value`] with
/// `decision`, else `Σ_j weights[j] b_j`). Sums in action order from -0.0, as
/// `Iterator::sum` does.
#[inline(always)]
fn values_and_next(
    weights: &[f64],
    decision: bool,
    hit: usize,
    x: f64,
    xn: f64,
    bs: &[f64],
) -> (f64, f64) {
    let (first, first_n) = if hit == 0 { (x, xn) } else { (bs[0], bs[0]) };
    let (mut equal, mut equal_n) = (true, true);
    let (mut dot, mut dot_n) = (-0.0, -0.0);
    for (j, (&w, &b)) in weights.iter().zip(bs).enumerate() {
        let (y, z) = if j == hit { (x, xn) } else { (b, b) };
        equal &= y == first;
        equal_n &= z == first_n;
        dot += w * y;
        dot_n += w * z;
    }
    (
        if decision && equal { first } else { dot },
        if decision && equal_n { first_n } else { dot_n },
    )
}

/// The generator of iteration `t` (or of a measurement stream): a function of `(seed, t)` only.
pub(crate) fn stream(seed: u64, t: u64) -> SplitMix64 {
    let mut mix = SplitMix64::new(seed ^ t.wrapping_mul(0xD1B5_4A32_D192_ED03));
    SplitMix64::new(mix.next_u64())
}

/// The generator of walk `k` of pass `turn` (0, or 1 for player 1's turn of alternating
/// updates) of iteration `t` with `walks > 1`: a function of `(seed, t, turn, k)` only.
fn walk_stream(seed: u64, t: u64, turn: usize, k: usize) -> SplitMix64 {
    let id = ((turn as u64) << 32 | k as u64).wrapping_add(1);
    stream(seed ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15), t)
}

/// Index in `children` of `node`'s successor on the way to public node `target`.
fn successor_towards(tree: &PublicTree, node: u32, target: u32) -> usize {
    let nodes = &tree.nodes;
    let mut t = target;
    while nodes[t as usize].parent != node {
        t = nodes[t as usize].parent;
        assert!(
            t != crate::tree::NONE,
            "public node {target} is not below {node}"
        );
    }
    nodes[node as usize]
        .children
        .iter()
        .position(|&c| c == t)
        .unwrap()
}

/// The baseline `b(h, a)` of the edge into history `c` (`decision`: the acting player and
/// the global action index of that edge at decision histories).
#[inline]
fn baseline_of(opts: &PosOptions, tab: &Tables, c: usize, decision: Option<(usize, usize)>) -> f64 {
    let learned = |s: f64, w: f64| if w > 0.0 { s / w } else { 0.0 };
    match opts.baseline {
        Baseline::None | Baseline::Static => 0.0,
        Baseline::Predictive => tab.base_sum[c],
        Baseline::LearnedHistory => learned(tab.base_sum[c], tab.base_w[c]),
        Baseline::LearnedInfoset => match decision {
            Some((p, g)) => learned(tab.inf_sum[p][g], tab.inf_w[p][g]),
            None => learned(tab.base_sum[c], tab.base_w[c]),
        },
    }
}

impl PosSolver {
    /// A solver at iteration 0 (uniform strategies, zero baselines); builds the history tree
    /// grouped by public node ([`HistoryTree::build_grouped`]).
    pub fn from_game(
        game: &dyn Game,
        tree: Arc<PublicTree>,
        spec: PosSpec,
        seed: u64,
    ) -> Result<PosSolver, TreeError> {
        let ht = Arc::new(HistoryTree::build_grouped(game, &tree)?);
        Ok(PosSolver::new(tree, ht, spec, seed))
    }

    /// A solver at iteration 0 on an existing history tree of `tree`'s game. `spec`'s
    /// `threads` and `walks` are resolved here (invalid values fall back to one sequential
    /// walk; [`PosOptions::validate`] reports them).
    pub fn new(tree: Arc<PublicTree>, ht: Arc<HistoryTree>, spec: PosSpec, seed: u64) -> Self {
        let zeros = |p: usize| vec![0.0; tree.infosets[p].num_actions_total()];
        let n = ht.len();
        let (threads, walks) = spec.options.parallel().unwrap_or((1, 1));
        PosSolver {
            tab: Tables {
                regrets: [zeros(0), zeros(1)],
                cumulative: [zeros(0), zeros(1)],
                current: crate::tree::uniform_tree_policy(&tree),
                base_sum: vec![0.0; n],
                base_w: vec![0.0; n],
                inf_sum: [zeros(0), zeros(1)],
                inf_w: [zeros(0), zeros(1)],
            },
            sc: PassScratch::new(n),
            extras: Extras {
                exact: if spec.options.measure_variance {
                    vec![0.0; n]
                } else {
                    Vec::new()
                },
                ..Extras::default()
            },
            target: None,
            walks,
            workers: Vec::new(),
            team: (walks > 1 && threads.min(walks) > 1).then(|| Team::new(threads.min(walks))),
            serial_apply: false,
            tree,
            ht,
            spec,
            seed,
            iteration: 0,
            touched: 0,
        }
    }

    /// The solver's description.
    pub fn spec(&self) -> &PosSpec {
        &self.spec
    }

    /// The history tree it walks.
    pub fn history_tree(&self) -> &Arc<HistoryTree> {
        &self.ht
    }

    /// Cumulative regrets of player `p` (per global action index).
    pub fn regrets(&self, p: usize) -> &[f64] {
        &self.tab.regrets[p]
    }

    /// The public path of the last sequential pass.
    pub fn last_path(&self) -> &[PathStep] {
        &self.sc.path
    }

    /// Mean squared counterfactual-value error of the last iteration (needs
    /// `measure_variance`; 0 otherwise).
    pub fn last_cfv_variance(&self) -> f64 {
        let v = &self.extras.var_stats;
        if v[1] > 0.0 { v[0] / v[1] } else { 0.0 }
    }

    /// One sampled estimate of player `p`'s counterfactual action values under the current
    /// strategy and baselines, without learning anything: `1/π_q(S) · Σ_{h∈I} π_{-p}(h)
    /// û(h,a)` at the infosets of the sampled path, 0 elsewhere (an unbiased estimate of
    /// [`exact_cf_values`] by Theorem 1). `draw` picks the random stream.
    pub fn sample_cf_values(&mut self, p: usize, draw: u64) -> Vec<f64> {
        let mut rng = stream(self.seed ^ 0x5EED_0FC0_FFEE, draw);
        self.extras.cf_sample = vec![0.0; self.tree.infosets[p].num_actions_total()];
        let players = [p == 0, p == 1];
        self.pass(players, &mut rng, 0.0, false);
        std::mem::take(&mut self.extras.cf_sample)
    }

    /// Runs one iteration: one pass per player (alternating) or one pass for both; with
    /// `walks > 1`, that many passes per turn (see the module docs).
    pub fn step(&mut self) {
        if self.walks > 1 {
            self.step_walks();
            return;
        }
        self.iteration += 1;
        let t = self.iteration as f64;
        let weight = self.spec.averaging.weight(t);
        let mut rng = stream(self.seed, self.iteration);
        self.extras.var_stats[0] = 0.0;
        self.extras.var_stats[1] = 0.0;
        match self.spec.updates {
            Updates::Alternating => {
                self.pass([true, false], &mut rng, weight, true);
                self.pass([false, true], &mut rng, weight, true);
            }
            Updates::Simultaneous => self.pass([true, true], &mut rng, weight, true),
        }
        if self.spec.options.measure_variance {
            let v = self.last_cfv_variance();
            self.extras.var_stats[2] = if self.iteration == 1 {
                v
            } else {
                0.98 * self.extras.var_stats[2] + 0.02 * v
            };
        }
    }

    /// One sequential pass updating the tables in place.
    fn pass(&mut self, players: [bool; 2], rng: &mut SplitMix64, weight: f64, learn: bool) {
        let mut pass = Pass {
            tree: &self.tree,
            ht: &self.ht,
            opts: self.spec.options,
            sink: InPlace { tab: &mut self.tab },
            sc: &mut self.sc,
            extras: &mut self.extras,
            target: self.target,
        };
        pass.run(players, rng, weight, learn);
        self.touched += std::mem::take(&mut self.sc.touched);
    }

    /// One iteration with `walks > 1`: per turn, the walks read the tables as they stand, run
    /// in contiguous chunks over the workers (one dispatch of the team per turn), and after a
    /// barrier each worker applies its shard of every log, in walk order.
    fn step_walks(&mut self) {
        self.iteration += 1;
        let t = self.iteration;
        let weight = self.spec.averaging.weight(t as f64);
        let walks = self.walks;
        let chunks = self.team.as_ref().map_or(1, Team::size);
        let n = self.ht.len();
        self.workers.resize_with(chunks, || {
            CachePadded::new(RwLock::new((PassScratch::new(n), Log::default())))
        });
        let turns: &[[bool; 2]] = match self.spec.updates {
            Updates::Alternating => &[[true, false], [false, true]],
            Updates::Simultaneous => &[[true, true]],
        };
        for (turn, &players) in turns.iter().enumerate() {
            let PosSolver {
                tree,
                ht,
                spec,
                tab,
                workers,
                team,
                seed,
                target,
                serial_apply,
                ..
            } = self;
            let parallel_apply = !*serial_apply;
            let ptrs = TablePtrs::new(tab);
            let tab_ref: &Tables = tab;
            let workers: &[CachePadded<RwLock<(PassScratch, Log)>>] = workers;
            let walk_chunk = |c: usize| {
                let mut guard = workers[c].write().unwrap_or_else(|e| e.into_inner());
                let (sc, log) = &mut *guard;
                log.clear(chunks);
                let mut extras = Extras::default();
                for k in c * walks / chunks..(c + 1) * walks / chunks {
                    let mut rng = walk_stream(*seed, t, turn, k);
                    let mut pass = Pass {
                        tree,
                        ht,
                        opts: spec.options,
                        sink: Deferred { tab: tab_ref, log },
                        sc,
                        extras: &mut extras,
                        target: *target,
                    };
                    pass.run(players, &mut rng, weight, true);
                }
            };
            // Shard `s` of every log, in walk order.
            let apply_shard = |s: usize| {
                for w in workers {
                    let guard = w.read().unwrap_or_else(|e| e.into_inner());
                    // SAFETY: the walks are over (they read `tab_ref` only before the
                    // barrier) and each shard's entries are applied by one thread only.
                    unsafe { guard.1.buckets[s].apply(&ptrs, &spec.options) };
                }
            };
            walk_then_apply(
                team.as_ref(),
                chunks,
                parallel_apply,
                &walk_chunk,
                &apply_shard,
            );
            for w in workers {
                let mut guard = w.write().unwrap_or_else(|e| e.into_inner());
                self.touched += std::mem::take(&mut guard.0.touched);
            }
        }
    }

    /// Runs one iteration whose passes all follow the path to the terminal public node
    /// `target` (with the importance weights of the configured sampling): forces outcomes,
    /// e.g. to cover every terminal public state (Theorem 3) or to enumerate them.
    pub fn step_towards(&mut self, target: u32) {
        self.target = Some(target);
        self.step();
        self.target = None;
    }

    /// [`PosSolver::sample_cf_values`] along the path to terminal public node `target`; the
    /// returned probability is that of sampling this path (`π_q` of the terminal node).
    pub fn cf_values_towards(&mut self, p: usize, target: u32) -> (Vec<f64>, f64) {
        self.target = Some(target);
        let v = self.sample_cf_values(p, 0);
        self.target = None;
        (v, self.sc.path.last().map_or(0.0, |s| s.reach_q))
    }

    fn average(&self) -> TreePolicy {
        crate::cfr::normalized_average(&self.tree, &self.tab.cumulative)
    }
}

/// One pass: the trees and options, where its updates go, and its scratch.
struct Pass<'a, S: Sink> {
    tree: &'a PublicTree,
    ht: &'a HistoryTree,
    opts: PosOptions,
    sink: S,
    sc: &'a mut PassScratch,
    extras: &'a mut Extras,
    target: Option<u32>,
}

impl<S: Sink> Pass<'_, S> {
    /// Samples a public path top-down (reaches of every history on it), then evaluates and
    /// updates it bottom-up.
    fn run(&mut self, players: [bool; 2], rng: &mut SplitMix64, weight: f64, learn: bool) {
        let (tree, ht) = (self.tree, self.ht);
        if learn && self.opts.measure_variance {
            exact_history_values(tree, ht, &self.sink.tab().current, &mut self.extras.exact);
        }
        self.sc.path.clear();
        let mut node = ht.node[0];
        self.sc.reach[0] = [1.0, 1.0];
        let mut reach_q = 1.0;
        let mut mass = std::mem::take(&mut self.sc.node.mass);
        mass.clear();
        loop {
            let hs = ht.node_histories(node as usize);
            if learn {
                self.sc.touched += hs.len() as u64;
            }
            let pnode = &tree.nodes[node as usize];
            if pnode.kind == NodeKind::Terminal {
                self.sc.path.push(PathStep {
                    node,
                    reach_q,
                    q_next: 1.0,
                    child_index: crate::tree::NONE,
                });
                break;
            }
            let succ = &pnode.children;
            let (k, q) = if succ.len() == 1 {
                (0, 1.0)
            } else {
                match self.opts.sampling {
                    Sampling::Uniform => (rng.below(succ.len()), 1.0 / succ.len() as f64),
                    Sampling::OnPolicy => {
                        self.successor_mass(node, &mut mass);
                        let total: f64 = mass.iter().sum();
                        let eps = self.opts.exploration;
                        let u = 1.0 / succ.len() as f64;
                        if total > 0.0 {
                            mass.iter_mut()
                                .for_each(|m| *m = (1.0 - eps) * *m / total + eps * u);
                            let k = rng.weighted(&mass);
                            (k, mass[k])
                        } else {
                            (rng.below(succ.len()), u)
                        }
                    }
                }
            };
            let (k, q) = match self.target {
                None => (k, q),
                Some(t) => {
                    let k = successor_towards(tree, node, t);
                    let q = match self.opts.sampling {
                        _ if succ.len() == 1 => 1.0,
                        Sampling::Uniform => 1.0 / succ.len() as f64,
                        Sampling::OnPolicy => {
                            let total: f64 = mass.iter().sum();
                            if total > 0.0 {
                                mass[k]
                            } else {
                                1.0 / succ.len() as f64
                            }
                        }
                    };
                    (k, q)
                }
            };
            let next = succ[k];
            // Reaches of the histories of the sampled successor: they are exactly the children
            // of `node`'s histories that lie in `next`.
            let current = &self.sink.tab().current;
            let reach = &mut self.sc.reach;
            let next_hs = ht.node_histories(next as usize);
            let mut child_index = match next_hs.first() {
                Some(&c) => c - ht.steps[ht.parent[c as usize] as usize].first_child,
                None => crate::tree::NONE,
            };
            // Every history of `node` has the node's kind (the tree build checks it), so the
            // acting player is known once for all of them.
            let actor = match pnode.kind {
                NodeKind::Decision(p) => Some(p),
                _ => None,
            };
            match actor {
                Some(0) => propagate_reach(ht, next_hs, reach, &mut child_index, |[r0, r1], g| {
                    [r0 * current[0][g], r1]
                }),
                Some(_) => propagate_reach(ht, next_hs, reach, &mut child_index, |[r0, r1], g| {
                    [r0, r1 * current[1][g]]
                }),
                None => propagate_reach(ht, next_hs, reach, &mut child_index, |r, _| r),
            }
            if next_hs.len() != hs.len() {
                child_index = crate::tree::NONE;
            }
            self.sc.path.push(PathStep {
                node,
                reach_q,
                q_next: q,
                child_index,
            });
            reach_q *= q;
            node = next;
        }
        self.sc.node.mass = mass;
        // Bottom-up.
        let last = self.sc.path.last().expect("path has a terminal node").node as usize;
        for &h in ht.node_histories(last) {
            self.sc.values[h as usize] = ht.utility[h as usize];
            self.sc.next_values[h as usize] = ht.utility[h as usize];
        }
        for s in (0..self.sc.path.len() - 1).rev() {
            let step = self.sc.path[s];
            let next = self.sc.path[s + 1].node;
            self.update_node(step, next, players, weight, learn);
        }
    }

    /// Probability mass flowing into each successor of `node` (in `children` order) under the
    /// current strategies and chance.
    fn successor_mass(&self, node: u32, mass: &mut Vec<f64>) {
        let (tree, ht) = (self.tree, self.ht);
        let current = &self.sink.tab().current;
        let succ = &tree.nodes[node as usize].children;
        mass.clear();
        mass.resize(succ.len(), 0.0);
        for &h in ht.node_histories(node as usize) {
            let h = h as usize;
            let r = self.sc.reach[h][0] * self.sc.reach[h][1] * ht.chance_reach[h];
            if r == 0.0 {
                continue;
            }
            for (j, c) in ht.children(h).enumerate() {
                let p = match ht.kind[h] {
                    HistoryKind::Decision(p) => {
                        let g = tree.infosets[p].offset[ht.infoset[h] as usize] as usize + j;
                        current[p][g]
                    }
                    _ => ht.chance_prob[c],
                };
                let slot = succ
                    .iter()
                    .position(|&s| s == ht.node[c])
                    .expect("child node");
                mass[slot] += r * p;
            }
        }
    }

    /// The per-public-state update (Algorithms 3/4, lines 9-33) of `step.node`, whose sampled
    /// successor `next` already holds its values `û(h'|σ_t)` (and `û(h'|σ_{t+1})` for the
    /// predictive baseline). Touches only the histories of the node and its children and the
    /// action range of its infosets.
    fn update_node(
        &mut self,
        step: PathStep,
        next: u32,
        players: [bool; 2],
        weight: f64,
        learn: bool,
    ) {
        let (tree, ht) = (self.tree, self.ht);
        let node = step.node as usize;
        let hs = ht.node_histories(node);
        let q = step.q_next;
        let opts = self.opts;
        let actor = match tree.nodes[node].kind {
            NodeKind::Decision(p) => Some(p),
            _ => None,
        };
        // Where σ_{t+1} = σ_t at this node (chance, or a player this pass does not update) and
        // a public action was sampled, the predictive baseline's value `û(h | σ_{t+1})` of step
        // 4 is computed in step 1's loop over the children (in place only: a deferred pass
        // reads its baselines differently).
        let fuse_next = !S::DEFERRED
            && learn
            && opts.baseline == Baseline::Predictive
            && step.child_index != crate::tree::NONE
            && !actor.is_some_and(|p| players[p]);
        // 1. Baseline-corrected action values and history values under σ_t (Eq. 15/16).
        let tab = self.sink.tab();
        let sc = &mut *self.sc;
        let hit = step.child_index as usize;
        let predictive_hit = opts.baseline == Baseline::Predictive && hit != NONE_USIZE;
        if predictive_hit {
            predictive_hit_values(
                PredictiveHit {
                    ht,
                    weights: match actor {
                        Some(p) => &tab.current[p],
                        None => &ht.chance_prob,
                    },
                    decision: actor.is_some(),
                    base_sum: &tab.base_sum,
                    hit,
                    q,
                    // Only the updating player's node update (step 2) reads the action values.
                    write_actions: actor.is_some_and(|p| players[p]),
                    fuse_next,
                },
                hs,
                sc,
            );
        }
        let hs_general = if predictive_hit { &[][..] } else { hs };
        for &h in hs_general {
            let h = h as usize;
            let st = ht.steps[h];
            let kids = st.children();
            let base = actor.map(|p| (p, st.action_base as usize));
            // The history baselines (none, predictive) are slices, and the node's value is
            // accumulated in the same pass; the learned ones go through `baseline_of` per
            // action.
            let weights = match base {
                Some((p, g)) => &tab.current[p][g..g + kids.len()],
                None => &ht.chance_prob[kids.clone()],
            };
            let av = &mut sc.action_values[kids.clone()];
            let vals = &sc.values[kids.clone()];
            let nodes = &ht.node[kids.clone()];
            let corrected = |b: f64, v: f64, nd: u32| if nd == next { b + (v - b) / q } else { b };
            let fused = match opts.baseline {
                Baseline::None | Baseline::Static if hit != NONE_USIZE => {
                    Some(values_and_fill(weights, av, base.is_some(), |j| {
                        if j == hit { 0.0 + vals[j] / q } else { 0.0 }
                    }))
                }
                Baseline::None | Baseline::Static => {
                    Some(values_and_fill(weights, av, base.is_some(), |j| {
                        corrected(0.0, vals[j], nodes[j])
                    }))
                }
                // (Predictive with a public action sampled: `predictive_hit_values` above.)
                Baseline::Predictive => {
                    let bs = &tab.base_sum[kids.clone()];
                    Some(values_and_fill(weights, av, base.is_some(), |j| {
                        corrected(bs[j], vals[j], nodes[j])
                    }))
                }
                Baseline::LearnedHistory | Baseline::LearnedInfoset => None,
            };
            sc.values[h] = match fused {
                Some(v) => v,
                None => {
                    for (j, c) in kids.clone().enumerate() {
                        let b = baseline_of(&opts, tab, c, base.map(|(p, g)| (p, g + j)));
                        sc.action_values[c] = if ht.node[c] == next {
                            b + (sc.values[c] - b) / q
                        } else {
                            b
                        };
                    }
                    match base {
                        Some((p, g)) => expected_value(
                            &tab.current[p][g..g + kids.len()],
                            &sc.action_values[kids],
                        ),
                        None => kids.map(|c| ht.chance_prob[c] * sc.action_values[c]).sum(),
                    }
                }
            };
        }
        let Some(p) = actor else {
            // Chance node: only baselines learn.
            if learn {
                self.learn_baselines(hs, next, None, fuse_next);
            }
            return;
        };
        let (lo, hi) = tree.nodes[node].infoset_range;
        let inf = &tree.infosets[p];
        let g0 = inf.offset[lo as usize] as usize;
        let g1 = inf.offset[hi as usize] as usize;
        let updating = players[p];
        let sign = if p == 0 { 1.0 } else { -1.0 };
        let measure = learn && updating && opts.measure_variance;
        // 2. Counterfactual action values of the node's infosets (local slices).
        let sc = &mut *self.sc;
        let NodeScratch {
            cfq,
            err,
            cf_reach,
            own_reach,
            ..
        } = &mut sc.node;
        zeroed(cfq, g1 - g0);
        zeroed(err, if measure { g1 - g0 } else { 0 });
        zeroed(cf_reach, (hi - lo) as usize);
        zeroed(own_reach, (hi - lo) as usize);
        if updating {
            // The tables as slices for the whole loop (their headers are read once).
            let (cfq, cf_reach, own_reach) = (&mut cfq[..], &mut cf_reach[..], &mut own_reach[..]);
            let (reach, action_values) = (&sc.reach[..], &sc.action_values[..]);
            let (infoset, chance_reach, steps) =
                (&ht.infoset[..], &ht.chance_reach[..], &ht.steps[..]);
            for &h in hs {
                let h = h as usize;
                let i = infoset[h] as usize;
                let w = reach[h][1 - p] * chance_reach[h];
                own_reach[i - lo as usize] = reach[h][p];
                cf_reach[i - lo as usize] += w;
                if w == 0.0 {
                    continue;
                }
                // A decision history's `action_base` is its infoset's offset.
                let st = steps[h];
                let g = st.action_base as usize - g0;
                let kids = st.children();
                let av = &action_values[kids.clone()];
                for (q, &a) in cfq[g..g + av.len()].iter_mut().zip(av) {
                    *q += w * a;
                }
                if measure {
                    let exact = &self.extras.exact[kids];
                    for ((e, &a), &x) in err[g..g + av.len()].iter_mut().zip(av).zip(exact) {
                        *e += w * (a - x);
                    }
                }
            }
        }
        if updating && !learn && !self.extras.cf_sample.is_empty() {
            for (k, v) in cfq.iter().enumerate() {
                self.extras.cf_sample[g0 + k] = sign * v / step.reach_q;
            }
        }
        // 3. Average strategy (σ_t), regrets, next strategy σ_{t+1}.
        let learning = learn && updating;
        self.sink
            .begin_node(p, if learning { g0..g1 } else { g0..g0 });
        if learning {
            let plus = opts.regret == RegretRule::Plus;
            for i in lo as usize..hi as usize {
                let r = inf.range(i);
                let local = r.start - g0..r.end - g0;
                let own = own_reach[i - lo as usize];
                if own > 0.0 {
                    let wr = weight * own / step.reach_q;
                    self.sink.add_avg(p, r.clone(), wr);
                }
                if measure && cf_reach[i - lo as usize] > 0.0 {
                    for e in &err[local.clone()] {
                        self.extras.var_stats[0] += e * e;
                        self.extras.var_stats[1] += 1.0;
                    }
                }
                let qv = &cfq[local];
                let v = expected_value(&self.sink.tab().current[p][r.clone()], qv);
                let noise = ROUNDING_NOISE * qv.iter().fold(v.abs(), |m, x| m.max(x.abs()));
                let reach_q = step.reach_q;
                self.sink.update_regrets(
                    p,
                    r,
                    |k| {
                        let d = qv[k] - v;
                        (d.abs() > noise).then(|| sign * d / reach_q)
                    },
                    plus,
                );
            }
        }
        // 4. Baselines.
        if learn {
            self.learn_baselines(hs, next, Some(p), fuse_next);
        }
    }

    /// Baseline updates at a node whose successor `next` was sampled (`actor`: the acting
    /// player, `None` at chance), and for the predictive baseline the values under σ_{t+1}
    /// (unless `next_done`: the node update computed them).
    fn learn_baselines(&mut self, hs: &[u32], next: u32, actor: Option<usize>, next_done: bool) {
        let (tree, ht) = (self.tree, self.ht);
        let opts = self.opts;
        let history_samples = |pass: &mut Self| {
            for &h in hs {
                for c in ht.children(h as usize) {
                    if ht.node[c] == next {
                        let x = pass.sc.values[c];
                        pass.sink.learn(Slot::History(c as u32), x, &opts);
                    }
                }
            }
        };
        match opts.baseline {
            Baseline::None | Baseline::Static => {}
            Baseline::LearnedHistory => history_samples(self),
            Baseline::LearnedInfoset => match actor {
                None => history_samples(self),
                Some(p) => {
                    // Σ_h π_{-p}(h) û(ha) / Σ_h π_{-p}(h) per (I, a) of the sampled actions.
                    let node = ht.node[hs[0] as usize] as usize;
                    let (lo, hi) = tree.nodes[node].infoset_range;
                    let inf = &tree.infosets[p];
                    let g0 = inf.offset[lo as usize] as usize;
                    let g1 = inf.offset[hi as usize] as usize;
                    let sc = &mut *self.sc;
                    let (num, den) = (&mut sc.node.cfq, &mut sc.node.err);
                    zeroed(num, g1 - g0);
                    zeroed(den, g1 - g0);
                    for &h in hs {
                        let h = h as usize;
                        let w = sc.reach[h][1 - p] * ht.chance_reach[h];
                        let g = inf.offset[ht.infoset[h] as usize] as usize - g0;
                        for (j, c) in ht.children(h).enumerate() {
                            if ht.node[c] == next {
                                num[g + j] += w * sc.values[c];
                                den[g + j] += w;
                            }
                        }
                    }
                    for k in 0..g1 - g0 {
                        if den[k] > 0.0 {
                            let slot = Slot::Infoset(p as u8, (g0 + k) as u32);
                            self.sink.learn(slot, num[k] / den[k], &opts);
                        }
                    }
                }
            },
            Baseline::Predictive => {
                // b_{t+1}(h,a) = û((ha)|σ_{t+1}) for the sampled children, then
                // û(h|σ_{t+1}) = Σ_a σ_{t+1}(h,a) b_{t+1}(h,a).
                self.sink.set_predictive(
                    ht.node_histories(next as usize),
                    &self.sc.next_values,
                    &opts,
                );
                if next_done {
                    return;
                }
                let sc = &mut *self.sc;
                if !S::DEFERRED {
                    // In place: the policy is σ_{t+1} and `base_sum` holds the new values;
                    // the tables as slices for the whole loop.
                    let tab = self.sink.tab();
                    let base_sum = &tab.base_sum[..];
                    let cur: &[f64] = match actor {
                        Some(p) => &tab.current[p],
                        None => &[],
                    };
                    let next_values = &mut sc.next_values[..];
                    let (steps, chance_prob) = (&ht.steps[..], &ht.chance_prob[..]);
                    for &h in hs {
                        let h = h as usize;
                        let st = steps[h];
                        let kids = st.children();
                        let base = &base_sum[kids.clone()];
                        next_values[h] = match actor {
                            Some(_) => {
                                let g = st.action_base as usize;
                                expected_value(&cur[g..g + kids.len()], base)
                            }
                            None => chance_prob[kids]
                                .iter()
                                .zip(base)
                                .map(|(&c, &b)| c * b)
                                .sum(),
                        };
                    }
                    return;
                }
                for &h in hs {
                    let h = h as usize;
                    let st = ht.steps[h];
                    let kids = st.children();
                    // Deferred (the in-place pass returned above): the new values of the
                    // sampled children are in `next_values`, the others in the fixed tables.
                    let base = {
                        let tab = self.sink.tab();
                        let b = &mut sc.node.kids;
                        b.clear();
                        b.extend(kids.clone().map(|c| {
                            if ht.node[c] == next {
                                sc.next_values[c]
                            } else {
                                tab.base_sum[c]
                            }
                        }));
                        &b[..]
                    };
                    sc.next_values[h] = match actor {
                        Some(p) => {
                            let g = st.action_base as usize;
                            expected_value(self.sink.cur_next(p, g..g + kids.len()), base)
                        }
                        None => kids.zip(base).map(|(c, &b)| ht.chance_prob[c] * b).sum(),
                    };
                }
            }
        }
    }
}

impl TreeSolver for PosSolver {
    fn iterate(&mut self) {
        self.step();
    }

    fn iteration(&self) -> u64 {
        self.iteration
    }

    fn average_policy(&self) -> TreePolicy {
        self.average()
    }

    fn current_policy(&self) -> TreePolicy {
        self.tab.current.clone()
    }

    /// Histories evaluated: every history of every public node on the sampled paths.
    fn nodes_touched(&self) -> u64 {
        self.touched
    }

    fn scalars(&self) -> Vec<(String, f64)> {
        if !self.spec.options.measure_variance {
            return Vec::new();
        }
        vec![
            ("cfv_variance".into(), self.last_cfv_variance()),
            ("cfv_variance_ema".into(), self.extras.var_stats[2]),
        ]
    }

    fn snapshot(&self) -> SolverSnapshot {
        let mut arrays: Vec<Vec<f64>> = Vec::new();
        let tab = &self.tab;
        for a in [
            &tab.regrets,
            &tab.cumulative,
            &tab.current,
            &tab.inf_sum,
            &tab.inf_w,
        ] {
            arrays.extend(a.iter().cloned());
        }
        arrays.push(tab.base_sum.clone());
        arrays.push(tab.base_w.clone());
        arrays.push(self.extras.var_stats.to_vec());
        SolverSnapshot {
            iteration: self.iteration,
            // The per-history baselines are indexed by history id: record the numbering.
            counters: vec![self.touched, u64::from(self.ht.grouped)],
            arrays,
        }
    }

    fn restore(&mut self, snapshot: SolverSnapshot) -> Result<(), String> {
        let arrays: [Vec<f64>; 13] = snapshot.arrays.try_into().map_err(|a: Vec<Vec<f64>>| {
            format!(
                "expected 13 arrays in a pos-mccfr checkpoint, found {}",
                a.len()
            )
        })?;
        let n = [
            self.tree.infosets[0].num_actions_total(),
            self.tree.infosets[1].num_actions_total(),
        ];
        let want = [
            n[0],
            n[1],
            n[0],
            n[1],
            n[0],
            n[1],
            n[0],
            n[1],
            n[0],
            n[1],
            self.ht.len(),
            self.ht.len(),
            3,
        ];
        for (k, (a, w)) in arrays.iter().zip(want).enumerate() {
            if a.len() != w {
                return Err(format!(
                    "pos-mccfr checkpoint array {k} has {} entries; this game needs {w}",
                    a.len()
                ));
            }
        }
        // Checkpoints before the grouped numbering carry one counter (breadth-first ids).
        let (touched, grouped) = match snapshot.counters[..] {
            [touched] => (touched, false),
            [touched, g] => (touched, g == 1),
            _ => return Err("pos-mccfr checkpoint needs one or two counters".into()),
        };
        if grouped != self.ht.grouped {
            return Err(format!(
                "pos-mccfr checkpoint indexes its baselines by the {} history numbering; this \
                 solver uses the {} one (resume with the armac version that wrote it)",
                if grouped { "grouped" } else { "breadth-first" },
                if self.ht.grouped {
                    "grouped"
                } else {
                    "breadth-first"
                },
            ));
        }
        let [r0, r1, c0, c1, p0, p1, s0, s1, w0, w1, bs, bw, vs] = arrays;
        self.tab = Tables {
            regrets: [r0, r1],
            cumulative: [c0, c1],
            current: [p0, p1],
            base_sum: bs,
            base_w: bw,
            inf_sum: [s0, s1],
            inf_w: [w0, w1],
        };
        self.extras.var_stats = [vs[0], vs[1], vs[2]];
        self.iteration = snapshot.iteration;
        self.touched = touched;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
