//! Where the walks' updates go ([`Store`]): straight into the tables ([`InPlace`], the
//! sequential algorithm), or into a log applied after a parallel batch of walks ([`Deferred`]).

use super::{MccfrSpec, Tables};
use crate::cfr::baseline::{Baseline, BaselineAveraging};
use crate::cfr::deferred::{Deferrable, Logged, Rules, Shards, Slot, TablesMut};
use crate::cfr::regret_match_infoset as match_regrets;

#[inline]
fn averaged(avg: BaselineAveraging, alpha: f64, b: &mut f64, n: &mut f64, x: f64) {
    match avg {
        BaselineAveraging::Simple => {
            *n += 1.0;
            *b += (x - *b) / *n;
        }
        BaselineAveraging::Exponential => *b += alpha * (x - *b),
    }
}

/// Where a walk's updates go. Reads always see [`Store::tab`].
pub(super) trait Store {
    /// The tables the walk reads.
    fn tab(&self) -> &Tables;
    /// Adds `scale · (values[k] − v)` to player `p`'s regrets of the infoset starting at
    /// `base` (clamped at zero when `plus`) and brings its policy up to date.
    fn add_regrets(
        &mut self,
        p: usize,
        base: usize,
        values: &[f64],
        v: f64,
        scale: f64,
        plus: bool,
    ) {
        self.add_regrets_with(p, base, values.len(), |k| values[k], v, scale, plus);
    }
    /// [`Store::add_regrets`] for the `n` actions whose values `value(k)` gives.
    #[allow(clippy::too_many_arguments)]
    fn add_regrets_with(
        &mut self,
        p: usize,
        base: usize,
        n: usize,
        value: impl Fn(usize) -> f64,
        v: f64,
        scale: f64,
        plus: bool,
    );
    /// `avg[q][base + k] += w σ(q, base + k)` for `k < n`.
    fn add_avg(&mut self, q: usize, base: usize, n: usize, w: f64);
    /// Feeds sample `x` to slot `slot` of the learned or predictive baseline of player `p`.
    fn learn_baseline(&mut self, spec: &MccfrSpec, p: usize, slot: usize, x: f64);
    /// Player `q`'s policy at the infoset starting at `base` after this walk's last
    /// [`Store::add_regrets`] there.
    fn cur_after(&self, q: usize, base: usize, n: usize) -> &[f64];
}

/// Feeds sample `x` to the baseline slot `slot` (a child history for the history baselines,
/// an infoset slot of player `p` for `learned-infoset`).
fn apply_baseline(tab: &mut Tables, spec: &MccfrSpec, p: usize, slot: usize, x: f64) {
    let (avg, alpha) = (spec.baseline_averaging, spec.baseline_alpha);
    match spec.baseline {
        Baseline::LearnedHistory => {
            averaged(avg, alpha, &mut tab.base[slot], &mut tab.base_n[slot], x);
        }
        Baseline::LearnedInfoset => {
            averaged(
                avg,
                alpha,
                &mut tab.ibase[p][slot],
                &mut tab.ibase_n[p][slot],
                x,
            );
        }
        Baseline::Predictive => tab.base[slot] = x,
        Baseline::None | Baseline::Static => {}
    }
}

/// Updates applied to the tables as the walk makes them (the sequential algorithm: a walk
/// sees its own earlier updates).
pub(super) struct InPlace<'a> {
    pub tab: &'a mut Tables,
}

impl Store for InPlace<'_> {
    #[inline]
    fn tab(&self) -> &Tables {
        self.tab
    }

    #[inline]
    fn add_regrets_with(
        &mut self,
        p: usize,
        base: usize,
        n: usize,
        value: impl Fn(usize) -> f64,
        v: f64,
        scale: f64,
        plus: bool,
    ) {
        let Tables { regrets, cur, .. } = &mut *self.tab;
        let regrets = &mut regrets[p][base..base + n];
        // The update and regret matching's sum of the positive regrets in one pass: the same
        // additions in the same order as `match_regrets` after the update (`Iterator::sum`
        // starts from -0.0).
        let mut total = -0.0;
        for (k, r) in regrets.iter_mut().enumerate() {
            let mut x = *r + scale * (value(k) - v);
            if plus && x < 0.0 {
                x = 0.0;
            }
            *r = x;
            total += x.max(0.0);
        }
        crate::cfr::regret_match_with_total(regrets, total, &mut cur[p][base..base + n]);
    }

    #[inline]
    fn add_avg(&mut self, q: usize, base: usize, n: usize, w: f64) {
        let Tables { avg, cur, .. } = &mut *self.tab;
        for (a, s) in avg[q][base..base + n]
            .iter_mut()
            .zip(&cur[q][base..base + n])
        {
            *a += w * s;
        }
    }

    fn learn_baseline(&mut self, spec: &MccfrSpec, p: usize, slot: usize, x: f64) {
        apply_baseline(self.tab, spec, p, slot, x);
    }

    fn cur_after(&self, q: usize, base: usize, n: usize) -> &[f64] {
        &self.tab.cur[q][base..base + n]
    }
}

impl Rules for MccfrSpec {
    #[inline]
    fn clamp(&self, r: f64) -> f64 {
        if self.plus && r < 0.0 { 0.0 } else { r }
    }

    #[inline]
    fn learn(&self, value: &mut f64, weight: &mut f64, x: f64) {
        averaged(
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
            avg: [a0, a1],
            cur: [c0, c1],
            base,
            base_n,
            ibase: [i0, i1],
            ibase_n: [n0, n1],
        } = self;
        TablesMut {
            regrets: [r0, r1],
            avg: [a0, a1],
            cur: [c0, c1],
            base_value: base,
            base_weight: base_n,
            inf_value: [i0, i1],
            inf_weight: [n0, n1],
        }
    }
}

/// The updates of a run of walks of one player, bucketed by shard as they are logged.
#[derive(Debug, Default)]
pub(super) struct Log {
    pub shards: Shards,
    /// Histories entered.
    pub touched: u64,
    /// The walks' frame stack.
    pub stack: Vec<f64>,
    /// Scratch for [`Store::cur_after`]: updated regrets, then their regret matching.
    next: Vec<f64>,
}

impl Logged for Log {
    fn shards(&self) -> &Shards {
        &self.shards
    }

    fn shards_mut(&mut self) -> &mut Shards {
        &mut self.shards
    }
}

/// Updates recorded in a [`Log`] while the walk reads tables that stay fixed (so walks can run
/// in parallel; a walk does not see its own updates, except through [`Store::cur_after`]).
pub(super) struct Deferred<'a> {
    pub tab: &'a Tables,
    pub shards: &'a mut Shards,
    pub next: &'a mut Vec<f64>,
    /// Whether [`Store::cur_after`] will be asked (the predictive baseline only); if not,
    /// [`Store::add_regrets_with`] skips the regret matching of the updated regrets.
    pub need_next: bool,
}

impl<'a> Deferred<'a> {
    /// A store reading `tab` and writing into `log`; returns it with the log's frame stack.
    /// `need_next`: whether the walk reads [`Store::cur_after`].
    pub fn new(
        tab: &'a Tables,
        log: &'a mut Log,
        need_next: bool,
    ) -> (Deferred<'a>, &'a mut Vec<f64>) {
        let Log {
            shards,
            stack,
            next,
            ..
        } = log;
        (
            Deferred {
                tab,
                shards,
                next,
                need_next,
            },
            stack,
        )
    }
}

impl Store for Deferred<'_> {
    #[inline]
    fn tab(&self) -> &Tables {
        self.tab
    }

    fn add_regrets_with(
        &mut self,
        p: usize,
        base: usize,
        n: usize,
        value: impl Fn(usize) -> f64,
        v: f64,
        scale: f64,
        plus: bool,
    ) {
        let Deferred {
            tab,
            shards,
            next,
            need_next,
        } = self;
        if !*need_next {
            shards.regrets(p, base, n, |k| scale * (value(k) - v));
            return;
        }
        next.clear();
        let regrets = &tab.regrets[p];
        shards.regrets(p, base, n, |k| {
            let d = scale * (value(k) - v);
            let mut r = regrets[base + k] + d;
            if plus && r < 0.0 {
                r = 0.0;
            }
            next.push(r);
            d
        });
        next.resize(2 * n, 0.0);
        let (r, out) = next.split_at_mut(n);
        match_regrets(r, out);
    }

    #[inline]
    fn add_avg(&mut self, q: usize, base: usize, n: usize, w: f64) {
        self.shards
            .avg(q, base, &self.tab.cur[q][base..base + n], w);
    }

    fn learn_baseline(&mut self, spec: &MccfrSpec, p: usize, slot: usize, x: f64) {
        let slot = match spec.baseline {
            Baseline::LearnedHistory => Slot::History(slot as u32),
            Baseline::LearnedInfoset => Slot::Infoset(p as u8, slot as u32),
            Baseline::Predictive => Slot::Predictive(slot as u32),
            Baseline::None | Baseline::Static => return,
        };
        self.shards.baseline(slot, x);
    }

    fn cur_after(&self, _q: usize, _base: usize, n: usize) -> &[f64] {
        debug_assert!(self.need_next, "cur_after without need_next");
        &self.next[n..2 * n]
    }
}
