//! What the solver learns, the scratch of a pass, and where a pass writes its updates: in
//! place, or into per-shard logs that are applied after parallel walks.

use super::{PathStep, PosOptions, regret_match};
use crate::cfr::RegretRule;
use crate::cfr::baseline::BaselineAveraging;
use crate::cfr::deferred::{Deferrable, Logged, Rules, Shards, TablesMut};
use std::ops::Range;

pub(super) use crate::cfr::deferred::Slot;

/// [`crate::tree::NONE`] as a `usize` (a [`PathStep::child_index`] that names no child).
pub(super) const NONE_USIZE: usize = crate::tree::NONE as usize;

/// Reused buffers of the per-node update.
#[derive(Default)]
pub(super) struct NodeScratch {
    pub(super) cfq: Vec<f64>,
    pub(super) err: Vec<f64>,
    pub(super) cf_reach: Vec<f64>,
    pub(super) own_reach: Vec<f64>,
    pub(super) mass: Vec<f64>,
    /// The predictive baselines of one history's children as a deferred pass sees them.
    pub(super) kids: Vec<f64>,
}

/// Clears `v` and fills it with `n` zeros, keeping its allocation.
pub(super) fn zeroed(v: &mut Vec<f64>, n: usize) {
    v.clear();
    v.resize(n, 0.0);
}

/// What the solver learns (everything a snapshot saves besides the counters).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Tables {
    pub(super) regrets: [Vec<f64>; 2],
    pub(super) cumulative: [Vec<f64>; 2],
    /// Regret matching of `regrets`, kept in step.
    pub(super) current: [Vec<f64>; 2],
    /// Per history `c` (i.e. per edge `(h, a)` into it): learned baseline sum and weight; the
    /// predictive baseline keeps its value in `base_sum`.
    pub(super) base_sum: Vec<f64>,
    pub(super) base_w: Vec<f64>,
    /// Learned-infoset baseline per global action index: sum and weight.
    pub(super) inf_sum: [Vec<f64>; 2],
    pub(super) inf_w: [Vec<f64>; 2],
}

impl Tables {
    /// Feeds sample `x` to baseline `slot`.
    #[inline(always)]
    pub(super) fn learn(&mut self, slot: Slot, x: f64, opts: &PosOptions) {
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
pub(super) fn learn_sample(
    averaging: BaselineAveraging,
    alpha: f64,
    sum: &mut f64,
    w: &mut f64,
    x: f64,
) {
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
pub(super) struct PassScratch {
    /// Both players' reaches per history, side by side (one cache line for the pair).
    pub(super) reach: Vec<[f64; 2]>,
    pub(super) values: Vec<f64>,
    pub(super) next_values: Vec<f64>,
    pub(super) action_values: Vec<f64>,
    pub(super) path: Vec<PathStep>,
    /// Per-node buffers (local slices of a node's actions and infosets), kept between calls so
    /// a pass allocates nothing.
    pub(super) node: NodeScratch,
    /// Histories entered since the owner last took the count.
    pub(super) touched: u64,
}

impl PassScratch {
    pub(super) fn new(histories: usize) -> PassScratch {
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
pub(super) struct Extras {
    /// Exact history values of the current strategy (with `measure_variance`).
    pub(super) exact: Vec<f64>,
    /// [sum of squared errors, count] of the last iteration, then the exponential moving
    /// average of the per-iteration mean.
    pub(super) var_stats: [f64; 3],
    /// Sampled counterfactual values of the last non-learning pass (per global action index).
    pub(super) cf_sample: Vec<f64>,
}

/// Where a pass's updates go: straight into the tables (the sequential algorithm) or into a
/// [`Log`] applied after the iteration's walks (`walks > 1`).
pub(super) trait Sink {
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
pub(super) struct InPlace<'a> {
    pub(super) tab: &'a mut Tables,
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

impl Rules for PosOptions {
    #[inline]
    fn clamp(&self, r: f64) -> f64 {
        if self.regret == RegretRule::Plus {
            r.max(0.0)
        } else {
            r
        }
    }

    #[inline]
    fn learn(&self, value: &mut f64, weight: &mut f64, x: f64) {
        learn_sample(
            self.baseline_averaging,
            self.baseline_alpha,
            value,
            weight,
            x,
        );
    }
}

impl Deferrable for Tables {
    fn tables_mut(&mut self) -> TablesMut<'_> {
        let Tables {
            regrets: [r0, r1],
            cumulative: [a0, a1],
            current: [c0, c1],
            base_sum,
            base_w,
            inf_sum: [i0, i1],
            inf_w: [w0, w1],
        } = self;
        TablesMut {
            regrets: [r0, r1],
            avg: [a0, a1],
            cur: [c0, c1],
            base_value: base_sum,
            base_weight: base_w,
            inf_value: [i0, i1],
            inf_weight: [w0, w1],
        }
    }
}

/// The updates of one worker's walks, bucketed by shard as they are logged.
#[derive(Default)]
pub(super) struct Log {
    pub(super) shards: Shards,
    /// σ_{t+1} of the action range `next_at = (player, first action)` of the node being
    /// updated, and the updated regrets it is computed from.
    pub(super) next: Vec<f64>,
    pub(super) next_at: (usize, usize),
    pub(super) regrets: Vec<f64>,
}

impl Log {
    /// Empties the log (keeping its buffers) for `shards` shards.
    #[cfg(test)]
    pub(super) fn clear(&mut self, shards: usize) {
        self.shards.clear(shards);
        self.next.clear();
    }
}

/// A worker of the parallel walks: its pass scratch and its log.
impl Logged for (PassScratch, Log) {
    fn shards(&self) -> &Shards {
        &self.1.shards
    }

    fn shards_mut(&mut self) -> &mut Shards {
        &mut self.1.shards
    }
}

/// Updates recorded in a [`Log`]; the pass reads tables that stay fixed.
pub(super) struct Deferred<'a> {
    pub(super) tab: &'a Tables,
    pub(super) log: &'a mut Log,
}

impl Sink for Deferred<'_> {
    const DEFERRED: bool = true;

    #[inline]
    fn tab(&self) -> &Tables {
        self.tab
    }

    fn add_avg(&mut self, p: usize, r: Range<usize>, w: f64) {
        let start = r.start;
        self.log.shards.avg(p, start, &self.tab.current[p][r], w);
    }

    fn update_regrets(
        &mut self,
        p: usize,
        r: Range<usize>,
        delta: impl Fn(usize) -> Option<f64>,
        plus: bool,
    ) {
        let Log {
            shards,
            next,
            next_at,
            regrets,
        } = &mut *self.log;
        regrets.clear();
        let old = &self.tab.regrets[p][r.clone()];
        shards.regrets(p, r.start, r.len(), |k| {
            let d = delta(k).unwrap_or(0.0);
            let x = old[k] + d;
            regrets.push(if plus { x.max(0.0) } else { x });
            d
        });
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
        self.log.shards.baseline(slot, x);
    }
}
