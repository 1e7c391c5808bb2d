//! The recursive walks of the four samplers over the history tree (see the module docs of
//! [`super`] for the estimators). All values are player 0's utility; regrets of player 1 are
//! updated with the negated differences.

use super::store::{InPlace, Store};
use super::{Fixed, MccfrSolver, MccfrSpec, OsSampling, Sampler, Tables};
use crate::cfr::baseline::Baseline;
use crate::tree::PublicTree;
use crate::tree::history::{HistoryKind, HistoryTree, Step};
use crate::util::{SplitMix64, prefetch};

/// One walk of the updating player `p`; `S` decides where its updates go (straight into the
/// tables, or into a log applied after a parallel batch of walks).
pub(super) struct Walk<'a, S: Store> {
    tree: &'a PublicTree,
    ht: &'a HistoryTree,
    spec: &'a MccfrSpec,
    fixed: &'a Fixed,
    st: S,
    rng: SplitMix64,
    p: usize,
    /// +1 for player 0, −1 for player 1.
    sign: f64,
    /// Change regrets and averages (false: estimation only).
    update: bool,
    /// Weight of average-policy increments (`t` with linear averaging).
    pub weight: f64,
    /// Histories entered.
    pub touched: u64,
    /// Scratch: per-frame action vectors, pushed and truncated like a call stack.
    stack: &'a mut Vec<f64>,
    /// Estimation mode: (infoset of `p`, accumulated sampled regret increments).
    pub probe: Option<(usize, Vec<f64>)>,
    /// Run outcome sampling without a baseline through the general walk [`Walk::os`] instead
    /// of [`Walk::os_plain`] (the tests compare the two).
    pub general: bool,
}

/// `b(h, a)` for the `k`-th child `c` of `h`, as player `p`'s walks see it.
pub(super) fn baseline_of(
    spec: &MccfrSpec,
    fixed: &Fixed,
    tab: &Tables,
    p: usize,
    h: usize,
    k: usize,
    c: usize,
) -> f64 {
    match spec.baseline {
        Baseline::None => 0.0,
        Baseline::Static => fixed.static_values[c],
        Baseline::LearnedHistory | Baseline::Predictive => tab.base[c],
        Baseline::LearnedInfoset => tab.ibase[p][fixed.islot[p][h] as usize + k],
    }
}

impl<'a> Walk<'a, InPlace<'a>> {
    /// A walk that updates `s`'s tables as it goes (the sequential algorithm).
    pub(super) fn new(s: &'a mut MccfrSolver, p: usize, rng: SplitMix64, update: bool) -> Self {
        let MccfrSolver {
            tree,
            ht,
            spec,
            fixed,
            tab,
            scratch,
            ..
        } = s;
        Walk::with_store(
            Parts {
                tree,
                ht,
                spec,
                fixed,
            },
            InPlace { tab },
            scratch,
            p,
            rng,
            update,
        )
    }
}

/// The read-only inputs of a walk.
pub(super) struct Parts<'a> {
    pub tree: &'a PublicTree,
    pub ht: &'a HistoryTree,
    pub spec: &'a MccfrSpec,
    pub fixed: &'a Fixed,
}

impl<'a, S: Store> Walk<'a, S> {
    /// A walk of player `p` writing through `st`, with `scratch` as its frame stack.
    pub(super) fn with_store(
        parts: Parts<'a>,
        st: S,
        scratch: &'a mut Vec<f64>,
        p: usize,
        rng: SplitMix64,
        update: bool,
    ) -> Self {
        let Parts {
            tree,
            ht,
            spec,
            fixed,
        } = parts;
        scratch.clear();
        Walk {
            tree,
            ht,
            spec,
            fixed,
            st,
            rng,
            p,
            sign: if p == 0 { 1.0 } else { -1.0 },
            update,
            weight: 1.0,
            touched: 0,
            stack: scratch,
            probe: None,
            general: false,
        }
    }

    /// Runs the spec's sampler from the root.
    pub(super) fn run(&mut self) {
        match self.spec.sampler {
            Sampler::Chance => {
                self.cs(0, 1.0, 1.0);
            }
            Sampler::External => {
                self.es(0);
            }
            Sampler::Outcome => {
                if self.spec.baseline == Baseline::None
                    && self.update
                    && self.probe.is_none()
                    && !self.general
                {
                    self.os_plain(0, 1.0, 1.0, 1.0);
                } else {
                    self.os(0, 1.0, 1.0, 1.0);
                }
            }
            Sampler::AverageStrategy => {
                self.avg_strategy(0, 1.0);
            }
        }
    }

    /// Global action index of the first action at decision history `h` of player `q`.
    #[inline]
    fn base(&self, q: usize, h: usize) -> usize {
        self.tree.infosets[q].offset[self.ht.infoset[h] as usize] as usize
    }

    /// Adds `scale · (values[k] − v)` to `p`'s regrets at the infoset starting at `base`
    /// (clamping for CFR+) and refreshes its current policy.
    fn add_regrets(&mut self, base: usize, off: usize, n: usize, v: f64, scale: f64) {
        let values = &self.stack[off..off + n];
        self.st
            .add_regrets(self.p, base, values, v, scale, self.spec.plus);
    }

    /// `avg[q][base + k] += w σ(q, base + k)` for the `n` actions of one infoset.
    #[inline]
    fn add_avg(&mut self, q: usize, base: usize, n: usize, w: f64) {
        self.st.add_avg(q, base, n, w);
    }

    #[inline]
    fn sigma_dot(&self, q: usize, base: usize, off: usize, n: usize) -> f64 {
        self.st.tab().cur[q][base..base + n]
            .iter()
            .zip(&self.stack[off..off + n])
            .map(|(s, x)| s * x)
            .sum()
    }

    /// Chance sampling: returns `u(h)` estimated with the sampled chance outcomes; `my` is
    /// `π_p(h)`, `opp` the opponent's reach `π_{-p}(h)` without chance.
    pub(super) fn cs(&mut self, h: usize, my: f64, opp: f64) -> f64 {
        self.touched += 1;
        let ht = self.ht;
        match ht.kind[h] {
            HistoryKind::Terminal => ht.utility[h],
            HistoryKind::Chance => {
                let ch = ht.children(h);
                let k = self.rng.weighted(&ht.chance_prob[ch.clone()]);
                self.cs(ch.start + k, my, opp)
            }
            HistoryKind::Decision(q) => {
                let base = self.base(q, h);
                let first = ht.first_child[h] as usize;
                let n = ht.num_children[h] as usize;
                if q == self.p {
                    let off = self.stack.len();
                    for k in 0..n {
                        let s = self.st.tab().cur[q][base + k];
                        let v = self.cs(first + k, my * s, opp);
                        self.stack.push(v);
                    }
                    let v = self.sigma_dot(q, base, off, n);
                    if self.update {
                        self.add_avg(q, base, n, self.weight * my);
                        self.add_regrets(base, off, n, v, self.sign * opp);
                    }
                    self.stack.truncate(off);
                    v
                } else {
                    let mut v = 0.0;
                    for k in 0..n {
                        let s = self.st.tab().cur[q][base + k];
                        v += s * self.cs(first + k, my, opp * s);
                    }
                    v
                }
            }
        }
    }

    /// External sampling: chance and the opponent sampled, the updating player walked in full.
    pub(super) fn es(&mut self, h: usize) -> f64 {
        self.touched += 1;
        let ht = self.ht;
        match ht.kind[h] {
            HistoryKind::Terminal => ht.utility[h],
            HistoryKind::Chance => {
                let ch = ht.children(h);
                let k = self.rng.weighted(&ht.chance_prob[ch.clone()]);
                self.es(ch.start + k)
            }
            HistoryKind::Decision(q) => {
                let base = self.base(q, h);
                let first = ht.first_child[h] as usize;
                let n = ht.num_children[h] as usize;
                if q == self.p {
                    let off = self.stack.len();
                    for k in 0..n {
                        let v = self.es(first + k);
                        self.stack.push(v);
                    }
                    let v = self.sigma_dot(q, base, off, n);
                    if self.update {
                        self.add_regrets(base, off, n, v, self.sign);
                    }
                    self.stack.truncate(off);
                    v
                } else {
                    if self.update {
                        self.add_avg(q, base, n, self.weight);
                    }
                    let k = self.rng.weighted(&self.st.tab().cur[q][base..base + n]);
                    self.es(first + k)
                }
            }
        }
    }

    /// Average strategy sampling; `q` is the updating player's sampling probability so far.
    pub(super) fn avg_strategy(&mut self, h: usize, qprob: f64) -> f64 {
        self.touched += 1;
        let ht = self.ht;
        match ht.kind[h] {
            HistoryKind::Terminal => ht.utility[h] / qprob,
            HistoryKind::Chance => {
                let ch = ht.children(h);
                let k = self.rng.weighted(&ht.chance_prob[ch.clone()]);
                self.avg_strategy(ch.start + k, qprob)
            }
            HistoryKind::Decision(q) => {
                let base = self.base(q, h);
                let first = ht.first_child[h] as usize;
                let n = ht.num_children[h] as usize;
                if q == self.p {
                    let (eps, tau, beta) = (self.spec.epsilon, self.spec.tau, self.spec.beta);
                    let total: f64 = self.st.tab().avg[q][base..base + n].iter().sum();
                    let off = self.stack.len();
                    for k in 0..n {
                        let rho = if beta + total <= 0.0 {
                            1.0
                        } else {
                            eps.max((beta + tau * self.st.tab().avg[q][base + k]) / (beta + total))
                        };
                        let v = if rho >= 1.0 || self.rng.next_f64() < rho {
                            self.avg_strategy(first + k, qprob * rho.min(1.0))
                        } else {
                            0.0
                        };
                        self.stack.push(v);
                    }
                    let v = self.sigma_dot(q, base, off, n);
                    if self.update {
                        self.add_regrets(base, off, n, v, self.sign);
                    }
                    self.stack.truncate(off);
                    v
                } else {
                    if self.update {
                        self.add_avg(q, base, n, self.weight / qprob);
                    }
                    let k = self.rng.weighted(&self.st.tab().cur[q][base..base + n]);
                    self.avg_strategy(first + k, qprob)
                }
            }
        }
    }

    #[inline]
    fn b(&self, h: usize, k: usize, c: usize) -> f64 {
        baseline_of(self.spec, self.fixed, self.st.tab(), self.p, h, k, c)
    }

    /// Feeds the sample of child `c = (h a_k)` to a learned or predictive baseline: `cv` is
    /// `û(ha | σ_t)`, `cn` is `û(ha | σ_{t+1})`.
    fn learn_baseline(&mut self, h: usize, k: usize, c: usize, cv: f64, cn: f64) {
        match self.spec.baseline {
            Baseline::LearnedHistory => self.st.learn_baseline(self.spec, self.p, c, cv),
            Baseline::LearnedInfoset => {
                let j = self.fixed.islot[self.p][h] as usize + k;
                self.st.learn_baseline(self.spec, self.p, j, cv);
            }
            Baseline::Predictive => self.st.learn_baseline(self.spec, self.p, c, cn),
            Baseline::None | Baseline::Static => {}
        }
    }

    /// Outcome sampling without a baseline (`b = 0`), updating as it goes: the estimates and
    /// updates of [`Walk::os`] with `baseline = "none"`, bit for bit, without its per-action
    /// frames. With `b = 0` the corrected value of an unsampled action is 0 and that of the
    /// sampled action `k` is `û(ha_k) / q(h, a_k)`, so `û(h) = σ(h, a_k) û(h, a_k)` and the regret
    /// increments need only `k`, `û(h, a_k)` and `û(h)`. Arguments and value as [`Walk::os`].
    pub(super) fn os_plain(&mut self, h: usize, my: f64, opp: f64, samp: f64) -> f64 {
        self.touched += 1;
        let ht = self.ht;
        let step = ht.steps[h];
        match step.kind {
            Step::TERMINAL => ht.utility[h],
            Step::CHANCE => {
                let ch = step.children();
                let k = self.rng.weighted(&ht.chance_prob[ch.clone()]);
                let c = ch.start + k;
                let pc = ht.chance_prob[c];
                self.os_plain(c, my, opp * pc, samp * pc)
            }
            kind => {
                let (p, q) = (self.p, kind as usize);
                let base = step.action_base as usize;
                let c0 = step.first_child as usize;
                let n = step.num_children as usize;
                let nf = n as f64;
                // The child's row of `steps` (16 bytes, four to a cache line) and, at the
                // updating player's histories, the regrets and average weights written on the
                // way back: start their cache misses now, while the policy row loads and the
                // action is drawn (prefetches only; no result changes).
                let steps = ht.steps.as_ptr();
                for j in (0..n).step_by(4) {
                    prefetch(steps.wrapping_add(c0 + j));
                }
                prefetch(steps.wrapping_add(c0 + n - 1));
                if q == p {
                    let tab = self.st.tab();
                    prefetch(tab.regrets[p].as_ptr().wrapping_add(base));
                    prefetch(tab.avg[p].as_ptr().wrapping_add(base));
                }
                let cur = &self.st.tab().cur[q][base..base + n];
                let eps = self.spec.epsilon;
                let (k, sk) = match (q == p, self.spec.sampling) {
                    (true, OsSampling::Epsilon) => self
                        .rng
                        .unit_weighted_by(n, |j| eps / nf + (1.0 - eps) * cur[j]),
                    (true, _) | (false, OsSampling::Uniform) => {
                        self.rng.unit_weighted_by(n, |_| 1.0 / nf)
                    }
                    (false, _) => self.rng.unit_weighted_by(n, |j| cur[j]),
                };
                // Its utility too, should the child be terminal.
                prefetch(ht.utility.as_ptr().wrapping_add(c0 + k));
                let sigma_k = cur[k];
                let (my2, opp2) = if q == p {
                    (my * sigma_k, opp)
                } else {
                    (my, opp * sigma_k)
                };
                let uk = self.os_plain(c0 + k, my2, opp2, samp * sk) / sk;
                let v = sigma_k * uk;
                if q == p {
                    self.add_avg(q, base, n, self.weight * my / samp);
                    let scale = self.sign * opp / samp;
                    let plus = self.spec.plus;
                    self.st.add_regrets_with(
                        p,
                        base,
                        n,
                        |j| if j == k { uk } else { 0.0 },
                        v,
                        scale,
                        plus,
                    );
                }
                v
            }
        }
    }

    /// Outcome sampling with baseline-corrected values. `my` = `π_p(h)`, `opp` = `π_{-p}(h)`
    /// (chance included), `samp` = `π_q(h)`, the probability the walk reached `h`. Returns
    /// `(û(h | σ_t), û(h | σ_{t+1}))`; the second is only computed for the predictive baseline
    /// (else it repeats the first).
    pub(super) fn os(&mut self, h: usize, my: f64, opp: f64, samp: f64) -> (f64, f64) {
        self.touched += 1;
        let ht = self.ht;
        let predictive = self.spec.baseline == Baseline::Predictive;
        let none = self.spec.baseline == Baseline::None;
        match ht.kind[h] {
            HistoryKind::Terminal => (ht.utility[h], ht.utility[h]),
            HistoryKind::Chance => {
                let ch = ht.children(h);
                let k = self.rng.weighted(&ht.chance_prob[ch.clone()]);
                let c = ch.start + k;
                let pc = ht.chance_prob[c];
                let (cv, cn) = self.os(c, my, opp * pc, samp * pc);
                if none {
                    return (cv, cn);
                }
                // q = σ_c: û(h) = Σ_a p(a) b(a) + (û(ha_k) − b(a_k)).
                let mut sum_b = 0.0;
                for (j, c2) in ch.enumerate() {
                    sum_b += ht.chance_prob[c2] * self.b(h, j, c2);
                }
                let bk = self.b(h, k, c);
                let v = sum_b + cv - bk;
                let vn = if predictive {
                    sum_b - pc * bk + pc * cn
                } else {
                    v
                };
                self.learn_baseline(h, k, c, cv, cn);
                (v, vn)
            }
            HistoryKind::Decision(q) => {
                let p = self.p;
                let base = self.base(q, h);
                let first = ht.first_child[h] as usize;
                let n = ht.num_children[h] as usize;
                let nf = n as f64;
                // Frame: sampling distribution s, then the corrected action values u.
                let off = self.stack.len();
                for j in 0..n {
                    let sigma = self.st.tab().cur[q][base + j];
                    let s = match (q == p, self.spec.sampling) {
                        (true, OsSampling::Epsilon) => {
                            self.spec.epsilon / nf + (1.0 - self.spec.epsilon) * sigma
                        }
                        (true, _) | (false, OsSampling::Uniform) => 1.0 / nf,
                        (false, _) => sigma,
                    };
                    self.stack.push(s);
                }
                let (k, sk) = {
                    let w = &self.stack[off..off + n];
                    self.rng.unit_weighted_by(n, |j| w[j])
                };
                let sigma_k = self.st.tab().cur[q][base + k];
                let c = first + k;
                let (my2, opp2) = if q == p {
                    (my * sigma_k, opp)
                } else {
                    (my, opp * sigma_k)
                };
                let (cv, cn) = self.os(c, my2, opp2, samp * sk);
                let uoff = off + n;
                for j in 0..n {
                    let b = self.b(h, j, first + j);
                    self.stack.push(b);
                }
                let bk = self.stack[uoff + k];
                self.stack[uoff + k] = bk + (cv - bk) / sk;
                let v = self.sigma_dot(q, base, uoff, n);
                if q == p {
                    let scale = self.sign * opp / samp;
                    if self.update {
                        self.add_avg(q, base, n, self.weight * my / samp);
                        self.add_regrets(base, uoff, n, v, scale);
                    } else if let Some((i, acc)) = self.probe.as_mut()
                        && *i == ht.infoset[h] as usize
                    {
                        for (j, a) in acc.iter_mut().enumerate() {
                            *a += scale * (self.stack[uoff + j] - v);
                        }
                    }
                }
                let vn = if predictive {
                    // σ_{t+1} (updated above if q == p); unsampled actions keep b_t, the
                    // sampled one takes b_{t+1}(h, a) = û(ha | σ_{t+1}).
                    self.stack[uoff + k] = cn;
                    if q == p && self.update {
                        self.st
                            .cur_after(q, base, n)
                            .iter()
                            .zip(&self.stack[uoff..uoff + n])
                            .map(|(s, x)| s * x)
                            .sum()
                    } else {
                        self.sigma_dot(q, base, uoff, n)
                    }
                } else {
                    v
                };
                self.learn_baseline(h, k, c, cv, cn);
                self.stack.truncate(off);
                (v, vn)
            }
        }
    }
}
