//! The recursive walks of the four samplers over the history tree (see the module docs of
//! [`super`] for the estimators). All values are player 0's utility; regrets of player 1 are
//! updated with the negated differences.

use super::{Fixed, MccfrSolver, MccfrSpec, OsSampling, Tables};
use crate::cfr::baseline::{Baseline, BaselineAveraging};
use crate::tree::PublicTree;
use crate::tree::history::{HistoryKind, HistoryTree};
use crate::util::SplitMix64;

/// One walk of the updating player `p`.
pub(super) struct Walk<'a> {
    tree: &'a PublicTree,
    ht: &'a HistoryTree,
    spec: &'a MccfrSpec,
    fixed: &'a Fixed,
    tab: &'a mut Tables,
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

impl<'a> Walk<'a> {
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
        scratch.clear();
        Walk {
            tree,
            ht,
            spec,
            fixed,
            tab,
            rng,
            p,
            sign: if p == 0 { 1.0 } else { -1.0 },
            update,
            weight: 1.0,
            touched: 0,
            stack: scratch,
            probe: None,
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
        let p = self.p;
        let regrets = &mut self.tab.regrets[p][base..base + n];
        for (r, &x) in regrets.iter_mut().zip(&self.stack[off..off + n]) {
            *r += scale * (x - v);
            if self.spec.plus && *r < 0.0 {
                *r = 0.0;
            }
        }
        match_regrets(regrets, &mut self.tab.cur[p][base..base + n]);
    }

    #[inline]
    fn sigma_dot(&self, q: usize, base: usize, off: usize, n: usize) -> f64 {
        self.tab.cur[q][base..base + n]
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
                        let s = self.tab.cur[q][base + k];
                        let v = self.cs(first + k, my * s, opp);
                        self.stack.push(v);
                    }
                    let v = self.sigma_dot(q, base, off, n);
                    if self.update {
                        let w = self.weight * my;
                        for k in base..base + n {
                            self.tab.avg[q][k] += w * self.tab.cur[q][k];
                        }
                        self.add_regrets(base, off, n, v, self.sign * opp);
                    }
                    self.stack.truncate(off);
                    v
                } else {
                    let mut v = 0.0;
                    for k in 0..n {
                        let s = self.tab.cur[q][base + k];
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
                        for k in base..base + n {
                            self.tab.avg[q][k] += self.weight * self.tab.cur[q][k];
                        }
                    }
                    let k = self.rng.weighted(&self.tab.cur[q][base..base + n]);
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
                    let total: f64 = self.tab.avg[q][base..base + n].iter().sum();
                    let off = self.stack.len();
                    for k in 0..n {
                        let rho = if beta + total <= 0.0 {
                            1.0
                        } else {
                            eps.max((beta + tau * self.tab.avg[q][base + k]) / (beta + total))
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
                        let w = self.weight / qprob;
                        for k in base..base + n {
                            self.tab.avg[q][k] += w * self.tab.cur[q][k];
                        }
                    }
                    let k = self.rng.weighted(&self.tab.cur[q][base..base + n]);
                    self.avg_strategy(first + k, qprob)
                }
            }
        }
    }

    #[inline]
    fn b(&self, h: usize, k: usize, c: usize) -> f64 {
        baseline_of(self.spec, self.fixed, self.tab, self.p, h, k, c)
    }

    /// Feeds the sample of child `c = (h a_k)` to a learned or predictive baseline: `cv` is
    /// `û(ha | σ_t)`, `cn` is `û(ha | σ_{t+1})`.
    fn learn_baseline(&mut self, h: usize, k: usize, c: usize, cv: f64, cn: f64) {
        let (avg, alpha) = (self.spec.baseline_averaging, self.spec.baseline_alpha);
        match self.spec.baseline {
            Baseline::LearnedHistory => {
                averaged(
                    avg,
                    alpha,
                    &mut self.tab.base[c],
                    &mut self.tab.base_n[c],
                    cv,
                );
            }
            Baseline::LearnedInfoset => {
                let j = self.fixed.islot[self.p][h] as usize + k;
                let p = self.p;
                averaged(
                    avg,
                    alpha,
                    &mut self.tab.ibase[p][j],
                    &mut self.tab.ibase_n[p][j],
                    cv,
                );
            }
            Baseline::Predictive => self.tab.base[c] = cn,
            Baseline::None | Baseline::Static => {}
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
                    let sigma = self.tab.cur[q][base + j];
                    let s = match (q == p, self.spec.sampling) {
                        (true, OsSampling::Epsilon) => {
                            self.spec.epsilon / nf + (1.0 - self.spec.epsilon) * sigma
                        }
                        (true, _) | (false, OsSampling::Uniform) => 1.0 / nf,
                        (false, _) => sigma,
                    };
                    self.stack.push(s);
                }
                let k = self.rng.weighted(&self.stack[off..off + n]);
                let sk = self.stack[off + k];
                let sigma_k = self.tab.cur[q][base + k];
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
                        let w = self.weight * my / samp;
                        for j in base..base + n {
                            self.tab.avg[q][j] += w * self.tab.cur[q][j];
                        }
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
                    self.sigma_dot(q, base, uoff, n)
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
