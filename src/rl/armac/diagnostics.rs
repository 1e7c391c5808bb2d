//! Exact diagnostics of an ARMAC run on a small game (`armac.diagnostics = true`).
//!
//! The run records the policy `π^j = NormalizedReLU(W_{θ^j})` its actors play in every epoch
//! `j` and keeps, exactly over the compiled game tree,
//! * the sum of the counterfactual regrets `r^j(I, a)` of every `π^j` (Eq. 3 of the paper up to
//!   a positive factor, which regret matching ignores), and
//! * the own-reach-weighted sum `Σ_j x^j(I) π^j(I, a)` that defines the exact average policy of
//!   the sequence.
//!
//! After epoch `t` the network `θ^{t+1}` is compared with these exact targets: its
//! mean-regret head against regret matching on the accumulated regrets (W error), its
//! average-policy head's NashConv against the NashConv of the exact average (π̄ error), and
//! `π^{t+1}` against `π^t` (policy movement). Distances are the total-variation distance
//! `½ Σ_a |p(a) − q(a)|` averaged over all infosets of both players (unweighted, so rarely
//! reached infosets count as much as frequent ones).

use crate::eval::nash_conv;
use crate::tree::history::{HistoryKind, HistoryTree};
use crate::tree::{PublicTree, TreePolicy};

/// One epoch's diagnostics (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiagnosticsRow {
    /// Mean total-variation distance between `π^{t+1}` and `π^t`.
    pub policy_change: f64,
    /// Mean total-variation distance between the head's `π^{t+1}` and regret matching on the
    /// exact regrets accumulated along `π^0 … π^t`.
    pub w_error: f64,
    /// NashConv of regret matching on the exact accumulated regrets (what a perfect W head
    /// would play).
    pub nash_conv_exact_rm: f64,
    /// NashConv of the exact own-reach-weighted average of `π^0 … π^t` (NaN when not asked).
    pub nash_conv_exact_avg: f64,
    /// Mean total-variation distance between regret matching on the per-infoset mean of the
    /// replay memory's mean-regret targets (what a regression of unlimited capacity would fit)
    /// and regret matching on the exact regrets: the error of the data (NaN when not asked).
    pub w_sampling_error: f64,
    /// Mean total-variation distance between the head's `π^{t+1}` and regret matching on the
    /// replay's per-infoset means: the error of the fit (NaN when not asked).
    pub w_fit_error: f64,
    /// Root mean square error of the next network's critic `q(h, a)` against the exact
    /// `q_{π^t}(h, a)` of the policy it was trained towards in epoch `t` (and evaluates
    /// advantages of for the actors), in the game's payoff units, weighted by the learning
    /// reach (see [`critic_error`]; NaN when not asked or for recurrent networks).
    pub critic_rmse: f64,
    /// The same for the critic's advantages (see [`CriticError::adv_rmse`]).
    pub critic_adv_rmse: f64,
    /// How far the critic's target moves in one epoch: the same weighted RMSE between the exact
    /// `q_{π^{t+1}}` and `q_{π^t}` (NaN when not asked). A critic that trails its target by a
    /// few epochs carries errors of this order times the lag.
    pub critic_drift: f64,
    /// Weighted share of the critic's advantages `q(h, a) − Σ_b π(b) q(h, b)` whose sign
    /// differs from the exact advantage's (see [`critic_error`]).
    pub critic_wrong_sign: f64,
    /// The same share weighted by the exact advantages' magnitudes: how much of the regret
    /// signal points the wrong way (see [`critic_error`]).
    pub critic_wrong_mass: f64,
}

impl DiagnosticsRow {
    /// A row of NaNs (diagnostics off).
    pub fn missing() -> Self {
        DiagnosticsRow {
            policy_change: f64::NAN,
            w_error: f64::NAN,
            nash_conv_exact_rm: f64::NAN,
            nash_conv_exact_avg: f64::NAN,
            w_sampling_error: f64::NAN,
            w_fit_error: f64::NAN,
            critic_rmse: f64::NAN,
            critic_adv_rmse: f64::NAN,
            critic_drift: f64::NAN,
            critic_wrong_sign: f64::NAN,
            critic_wrong_mass: f64::NAN,
        }
    }
}

/// How far a critic is from the exact action values of a policy (see [`critic_error`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CriticError {
    /// Weighted root mean square of `q̂(h, a) − q(h, a)` over decision histories and their
    /// actions.
    pub rmse: f64,
    /// The same for the advantages `q̂(h, a) − Σ_b π(b) q̂(h, b)` against the exact ones: what
    /// the mean-regret targets inherit (an error shared by every action of a history cancels).
    pub adv_rmse: f64,
    /// Weighted share of the actions with a nonzero exact advantage whose estimated advantage
    /// has the other sign (or is zero).
    pub wrong_sign: f64,
    /// As `wrong_sign`, each action also weighted by its exact advantage's magnitude `|A(h, a)|`:
    /// near zero when only the small advantages are wrong.
    pub wrong_mass: f64,
}

/// The exact action values of `policy` laid out as [`critic_error`] reads a critic: at every
/// child `c = (h a)` of a decision history `h` of player `p`, `q_p(h, a)` in `p`'s payoff.
pub fn exact_critic(ht: &HistoryTree, tree: &PublicTree, policy: &TreePolicy) -> Vec<f64> {
    let mut v = vec![0.0; ht.len()];
    ht.values_into(tree, policy, &mut v);
    let mut q = vec![0.0; ht.len()];
    for h in 0..ht.len() {
        if let HistoryKind::Decision(p) = ht.kind[h] {
            let sign = if p == 0 { 1.0 } else { -1.0 };
            for c in ht.children(h) {
                q[c] = sign * v[c];
            }
        }
    }
    q
}

/// Compares a critic with the exact action values of `policy`. `q[c]` is the critic's
/// `q_p(h, a)` for every child `c = (h a)` of a decision history `h` of player `p`, in `p`'s
/// payoff (game units); other entries are ignored. The exact `q_p(h, a)` is `p`'s expected
/// payoff of `c` when both players follow `policy`; advantages subtract
/// `v(h) = Σ_b policy(h, b) q(h, b)` on both sides (the estimated one with the critic's `q`),
/// as the actors do when they turn a past critic into mean-regret targets.
///
/// Every decision history of player `p` weighs the probability that an episode reaches it when
/// `p` explores uniformly and chance and the opponent follow `policy`: the distribution of
/// ARMAC's learning decisions with `behaviour = "uniform"`. An exact advantage counts as
/// nonzero above `1e-9` in absolute value.
pub fn critic_error(
    ht: &HistoryTree,
    tree: &PublicTree,
    policy: &TreePolicy,
    q: &[f64],
) -> CriticError {
    let mut v = vec![0.0; ht.len()];
    ht.values_into(tree, policy, &mut v);
    // Per learning player: reach with that player uniform, chance and the opponent on `policy`.
    let reach: [Vec<f64>; 2] =
        std::array::from_fn(|p| ht.reach_with_own(tree, policy, p, |n| 1.0 / n as f64));
    let (mut sq, mut n, mut wrong, mut signed) = (0.0, 0.0, 0.0, 0.0);
    let (mut wrong_mass, mut mass, mut adv_sq) = (0.0, 0.0, 0.0);
    for h in 0..ht.len() {
        let HistoryKind::Decision(p) = ht.kind[h] else {
            continue;
        };
        let w = reach[p][h];
        if w <= 0.0 {
            continue;
        }
        let sign = if p == 0 { 1.0 } else { -1.0 };
        let base = tree.infosets[p].offset[ht.infoset[h] as usize] as usize;
        let kids = ht.children(h);
        let pi = &policy[p][base..base + kids.len()];
        let v_hat: f64 = kids.clone().zip(pi).map(|(c, x)| x * q[c]).sum();
        for c in kids {
            let exact = sign * v[c];
            sq += w * (q[c] - exact).powi(2);
            n += w;
            let adv = exact - sign * v[h];
            adv_sq += w * (q[c] - v_hat - adv).powi(2);
            if adv.abs() > 1e-9 {
                signed += w;
                mass += w * adv.abs();
                if adv * (q[c] - v_hat) <= 0.0 {
                    wrong += w;
                    wrong_mass += w * adv.abs();
                }
            }
        }
    }
    CriticError {
        rmse: if n > 0.0 { (sq / n).sqrt() } else { f64::NAN },
        adv_rmse: if n > 0.0 {
            (adv_sq / n).sqrt()
        } else {
            f64::NAN
        },
        wrong_sign: if signed > 0.0 {
            wrong / signed
        } else {
            f64::NAN
        },
        wrong_mass: if mass > 0.0 {
            wrong_mass / mass
        } else {
            f64::NAN
        },
    }
}

/// Sums of sampled mean-regret targets per infoset and action (indexed like a [`TreePolicy`]):
/// regret matching on them is what a regression of unlimited capacity on those samples plays.
pub struct SampledRegrets {
    sums: TreePolicy,
}

impl SampledRegrets {
    /// No samples yet.
    pub fn new(tree: &PublicTree) -> Self {
        Self { sums: zeros(tree) }
    }

    /// Adds one target: player `p`'s infoset `i`, advantages indexed by action id.
    pub fn add(&mut self, tree: &PublicTree, p: usize, i: usize, advantages: &[f32]) {
        let inf = &tree.infosets[p];
        for k in inf.range(i) {
            self.sums[p][k] += advantages[inf.actions[k]] as f64;
        }
    }

    /// Regret matching on the sums (uniform at infosets without samples).
    pub fn policy(&self, tree: &PublicTree) -> TreePolicy {
        regret_matching(tree, &self.sums)
    }
}

/// The magic tag of a checkpoint's `diagnostics.bin` ([`Diagnostics::encode`]).
const DIAG_MAGIC: &[u8; 8] = b"ARMACDG1";

/// The checkpoint file that carries the accumulators of `armac.diagnostics`, so that a resumed
/// run's diagnostics cover the whole policy sequence.
pub const DIAGNOSTICS_FILE: &str = "diagnostics.bin";

/// Exact accumulators along the network's own policy sequence.
pub struct Diagnostics {
    ht: std::sync::Arc<HistoryTree>,
    /// Epoch powers `[γ_regret, γ_policy]`: `π^j` enters the regret sums with weight
    /// `(j + 1)^γ_regret` and the average with `(j + 1)^γ_policy`, as the reservoir memory
    /// weighs epoch `j`'s samples (`armac.memory_regret_power` / `memory_policy_power`).
    powers: [f64; 2],
    regret_sum: TreePolicy,
    avg_sum: TreePolicy,
    last: Option<TreePolicy>,
    recorded: u64,
}

fn zeros(tree: &PublicTree) -> TreePolicy {
    std::array::from_fn(|p| vec![0.0; tree.infosets[p].num_actions_total()])
}

/// Regret matching on `regrets` (indexed like a [`TreePolicy`]): positive parts normalised,
/// uniform where no action has a positive regret.
pub fn regret_matching(tree: &PublicTree, regrets: &TreePolicy) -> TreePolicy {
    normalised(tree, regrets, |x| x.max(0.0))
}

/// The policy proportional to `weight(v)` of each action's value `v` at every information
/// state, uniform where the weights sum to zero (regret matching and the average policy).
fn normalised(tree: &PublicTree, values: &TreePolicy, weight: impl Fn(f64) -> f64) -> TreePolicy {
    let mut out = zeros(tree);
    for (p, out_p) in out.iter_mut().enumerate() {
        let inf = &tree.infosets[p];
        for i in 0..inf.len() {
            let r = inf.range(i);
            let total: f64 = values[p][r.clone()].iter().map(|&x| weight(x)).sum();
            for k in r.clone() {
                out_p[k] = if total > 0.0 {
                    weight(values[p][k]) / total
                } else {
                    1.0 / r.len() as f64
                };
            }
        }
    }
    out
}

/// Mean over all infosets of both players of `½ Σ_a |a(I, ·) − b(I, ·)|`.
pub fn mean_tv(tree: &PublicTree, a: &TreePolicy, b: &TreePolicy) -> f64 {
    let mut total = 0.0;
    let mut n = 0usize;
    for p in 0..2 {
        let inf = &tree.infosets[p];
        for i in 0..inf.len() {
            let r = inf.range(i);
            total += 0.5 * r.map(|k| (a[p][k] - b[p][k]).abs()).sum::<f64>();
            n += 1;
        }
    }
    if n == 0 { 0.0 } else { total / n as f64 }
}

/// Exact counterfactual regrets `Σ_{h∈I} π_{-p}(h) (u_p(ha) − u_p(h))` of every infoset and
/// action of both players under `policy`, and each player's own reach `x_p(I)` of every
/// infoset.
fn regrets_and_reach(
    ht: &HistoryTree,
    tree: &PublicTree,
    policy: &TreePolicy,
) -> (TreePolicy, [Vec<f64>; 2]) {
    let mut v = vec![0.0; ht.len()];
    ht.values_into(tree, policy, &mut v);
    let mut regrets = zeros(tree);
    let mut own: [Vec<f64>; 2] = std::array::from_fn(|p| vec![0.0; tree.infosets[p].len()]);
    // Own reach of every history for both players at once (chance and the other player count 1).
    let mut own_h = vec![[0.0f64; 2]; ht.len()];
    own_h[0] = [1.0, 1.0];
    for h in 0..ht.len() {
        if let HistoryKind::Decision(q) = ht.kind[h] {
            let i = ht.infoset[h] as usize;
            own[q][i] = own_h[h][q];
            let base = tree.infosets[q].offset[i] as usize;
            for (k, c) in ht.children(h).enumerate() {
                own_h[c] = own_h[h];
                own_h[c][q] *= policy[q][base + k];
            }
        } else {
            for c in ht.children(h) {
                own_h[c] = own_h[h];
            }
        }
    }
    for (p, regrets_p) in regrets.iter_mut().enumerate() {
        let reach = ht.opponent_reach(tree, policy, p);
        let sign = if p == 0 { 1.0 } else { -1.0 };
        for h in 0..ht.len() {
            if ht.kind[h] != HistoryKind::Decision(p) {
                continue;
            }
            let base = tree.infosets[p].offset[ht.infoset[h] as usize] as usize;
            for (k, c) in ht.children(h).enumerate() {
                regrets_p[base + k] += sign * reach[h] * (v[c] - v[h]);
            }
        }
    }
    (regrets, own)
}

impl Diagnostics {
    /// Empty accumulators over `tree`, with the epoch `powers` of [`Diagnostics::record`]
    /// (`[0, 0]`: every policy weighs the same); `ht` is the game's history tree over `tree`.
    pub fn new(
        ht: std::sync::Arc<HistoryTree>,
        tree: &PublicTree,
        powers: [f64; 2],
    ) -> Diagnostics {
        Diagnostics {
            ht,
            powers,
            regret_sum: zeros(tree),
            avg_sum: zeros(tree),
            last: None,
            recorded: 0,
        }
    }

    /// The policy recorded last (`π^t` while epoch `t` runs: the policy the critic trains
    /// towards), if any.
    pub fn last(&self) -> Option<&TreePolicy> {
        self.last.as_ref()
    }

    /// Number of policies recorded so far.
    pub fn recorded(&self) -> u64 {
        self.recorded
    }

    /// Records `π^j`, the policy played in the next epoch.
    pub fn record(&mut self, tree: &PublicTree, pi: &TreePolicy) {
        let (r, own) = regrets_and_reach(&self.ht, tree, pi);
        let j = self.recorded as f64;
        let [wr, wp] = self.powers.map(|g| (j + 1.0).powf(g));
        for p in 0..2 {
            let inf = &tree.infosets[p];
            for (acc, x) in self.regret_sum[p].iter_mut().zip(&r[p]) {
                *acc += wr * x;
            }
            for (i, x) in own[p].iter().enumerate() {
                for k in inf.range(i) {
                    self.avg_sum[p][k] += wp * x * pi[p][k];
                }
            }
        }
        self.last = Some(pi.clone());
        self.recorded += 1;
    }

    /// The accumulators as the bytes of a checkpoint's `diagnostics.bin`, sealed
    /// ([`crate::util::seal`]): magic, the number of policies recorded, then per player the
    /// regret sums, the average sums and the last recorded policy, each as a length and
    /// little-endian `f64`s.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = DIAG_MAGIC.to_vec();
        out.extend_from_slice(&self.recorded.to_le_bytes());
        out.push(self.last.is_some() as u8);
        let empty: TreePolicy = [Vec::new(), Vec::new()];
        let last = self.last.as_ref().unwrap_or(&empty);
        for ((r, a), l) in self.regret_sum.iter().zip(&self.avg_sum).zip(last) {
            for v in [r, a, l] {
                out.extend_from_slice(&(v.len() as u64).to_le_bytes());
                for x in v.iter() {
                    out.extend_from_slice(&x.to_le_bytes());
                }
            }
        }
        crate::util::seal(&mut out);
        out
    }

    /// Accumulators over `tree` read back from [`Diagnostics::encode`]'s bytes (checksum trailer
    /// included); the error says what does not fit.
    pub fn decode(
        ht: std::sync::Arc<HistoryTree>,
        tree: &PublicTree,
        powers: [f64; 2],
        sealed: &[u8],
    ) -> Result<Diagnostics, String> {
        let (_, body) = crate::util::unseal(sealed, &[DIAG_MAGIC], 17, "diagnostics")?;
        let mut rest = &body[8..];
        let mut take = |n: usize| -> Result<&[u8], String> {
            if rest.len() < n {
                return Err("truncated diagnostics".into());
            }
            let (a, b) = rest.split_at(n);
            rest = b;
            Ok(a)
        };
        let recorded = u64::from_le_bytes(take(8)?.try_into().unwrap());
        let has_last = take(1)?[0] != 0;
        let mut d = Diagnostics::new(ht, tree, powers);
        let mut last = zeros(tree);
        for (p, inf) in tree.infosets.iter().enumerate() {
            let n = inf.num_actions_total();
            for (k, v) in [&mut d.regret_sum[p], &mut d.avg_sum[p], &mut last[p]]
                .into_iter()
                .enumerate()
            {
                let len = u64::from_le_bytes(take(8)?.try_into().unwrap()) as usize;
                let want = if k == 2 && !has_last { 0 } else { n };
                if len != want {
                    return Err(format!(
                        "diagnostics hold {len} values for player {p}, the game has {want}"
                    ));
                }
                for (x, b) in v.iter_mut().zip(take(8 * len)?.chunks_exact(8)) {
                    *x = f64::from_le_bytes(b.try_into().unwrap());
                }
            }
        }
        if !rest.is_empty() {
            return Err(format!("{} bytes after the diagnostics", rest.len()));
        }
        d.recorded = recorded;
        d.last = has_last.then_some(last);
        Ok(d)
    }

    /// The exact average of the recorded policies (uniform where no recorded policy reaches
    /// an infoset).
    pub fn exact_average(&self, tree: &PublicTree) -> TreePolicy {
        normalised(tree, &self.avg_sum, |x| x)
    }

    /// Compares the next network's `π^{t+1}` (`next`) with the recorded sequence; the exact
    /// average's NashConv is computed only when `with_average` (it costs two best responses).
    /// `sampled`: regret matching on the replay's targets, for the split of the W error into
    /// data and fit.
    pub fn compare(
        &self,
        tree: &PublicTree,
        next: &TreePolicy,
        with_average: bool,
        sampled: Option<&TreePolicy>,
    ) -> DiagnosticsRow {
        let rm = regret_matching(tree, &self.regret_sum);
        DiagnosticsRow {
            critic_rmse: f64::NAN,
            critic_adv_rmse: f64::NAN,
            critic_drift: f64::NAN,
            critic_wrong_sign: f64::NAN,
            critic_wrong_mass: f64::NAN,
            w_sampling_error: sampled.map_or(f64::NAN, |s| mean_tv(tree, s, &rm)),
            w_fit_error: sampled.map_or(f64::NAN, |s| mean_tv(tree, s, next)),
            policy_change: self
                .last
                .as_ref()
                .map_or(f64::NAN, |l| mean_tv(tree, l, next)),
            w_error: mean_tv(tree, &rm, next),
            nash_conv_exact_rm: if with_average {
                nash_conv(tree, &rm).nash_conv
            } else {
                f64::NAN
            },
            nash_conv_exact_avg: if with_average {
                nash_conv(tree, &self.exact_average(tree)).nash_conv
            } else {
                f64::NAN
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::uniform_tree_policy;

    fn kuhn() -> (crate::game::GameRef, PublicTree) {
        let g = crate::games::registry::load_game("kuhn_poker").unwrap();
        let t = PublicTree::build(g.as_ref()).unwrap();
        (g, t)
    }

    #[test]
    fn epoch_powers_weigh_the_sums_as_the_memory_weighs_its_samples() {
        // With powers [1, 2], π^0 enters the regret sums once and the average once, π^1 twice
        // and four times: at an infoset both players' own reach 1 (the first decision) the
        // exact average is (π^0 + 4 π^1) / 5, and the regret sums are r^0 + 2 r^1.
        let (g, t) = kuhn();
        let ht = std::sync::Arc::new(HistoryTree::build(g.as_ref(), &t).unwrap());
        let mut d = Diagnostics::new(ht.clone(), &t, [1.0, 2.0]);
        let p0 = uniform_tree_policy(&t);
        let mut p1 = uniform_tree_policy(&t);
        let r = t.infosets[0].range(0);
        p1[0][r.start] = 0.8;
        p1[0][r.start + 1] = 0.2;
        d.record(&t, &p0);
        d.record(&t, &p1);
        let avg = d.exact_average(&t);
        for k in r.clone() {
            let want = (p0[0][k] + 4.0 * p1[0][k]) / 5.0;
            assert!((avg[0][k] - want).abs() < 1e-12, "{} vs {want}", avg[0][k]);
        }
        let (r0, _) = regrets_and_reach(&ht, &t, &p0);
        let (r1, _) = regrets_and_reach(&ht, &t, &p1);
        for p in 0..2 {
            for (k, x) in d.regret_sum[p].iter().enumerate() {
                assert!((x - (r0[p][k] + 2.0 * r1[p][k])).abs() < 1e-12);
            }
        }
        // Unweighted, the same two policies average to (π^0 + π^1) / 2 there.
        let mut u = Diagnostics::new(ht, &t, [0.0, 0.0]);
        u.record(&t, &p0);
        u.record(&t, &p1);
        let k = r.start;
        assert!((u.exact_average(&t)[0][k] - 0.5 * (p0[0][k] + p1[0][k])).abs() < 1e-12);
    }

    #[test]
    fn accumulators_survive_a_checkpoint_and_bad_files_are_named() {
        let (g, t) = kuhn();
        let ht = std::sync::Arc::new(HistoryTree::build(g.as_ref(), &t).unwrap());
        let mut d = Diagnostics::new(ht.clone(), &t, [0.0, 0.0]);
        let mut pi = uniform_tree_policy(&t);
        d.record(&t, &pi);
        pi[0][0] = 0.9;
        pi[0][1] = 0.1;
        d.record(&t, &pi);
        let bytes = d.encode();
        let back = Diagnostics::decode(ht.clone(), &t, [0.0, 0.0], &bytes).unwrap();
        assert_eq!(back.recorded(), 2);
        assert_eq!(back.regret_sum, d.regret_sum);
        assert_eq!(back.avg_sum, d.avg_sum);
        assert_eq!(back.last, d.last);
        let next = uniform_tree_policy(&t);
        assert_eq!(
            format!("{:?}", back.compare(&t, &next, true, None)),
            format!("{:?}", d.compare(&t, &next, true, None))
        );
        // One flipped bit, a cut file and another game's accumulators are refused.
        let mut bad = bytes.clone();
        bad[20] ^= 1;
        assert!(Diagnostics::decode(ht.clone(), &t, [0.0, 0.0], &bad).is_err());
        assert!(
            Diagnostics::decode(ht.clone(), &t, [0.0, 0.0], &bytes[..bytes.len() - 9]).is_err()
        );
        let leduc = crate::games::registry::load_game("leduc_poker").unwrap();
        let lt = PublicTree::build(leduc.as_ref()).unwrap();
        let lht = std::sync::Arc::new(HistoryTree::build(leduc.as_ref(), &lt).unwrap());
        let e = Diagnostics::decode(lht, &lt, [0.0, 0.0], &bytes)
            .err()
            .unwrap();
        assert!(e.contains("the game has"), "{e}");
    }

    #[test]
    fn critic_error_is_zero_for_the_exact_values_and_sees_shifts_and_flips() {
        let (g, t) = kuhn();
        let ht = HistoryTree::build(g.as_ref(), &t).unwrap();
        let mut pi = uniform_tree_policy(&t);
        for pi_p in pi.iter_mut() {
            for (k, x) in pi_p.iter_mut().enumerate() {
                *x = if k % 2 == 0 { 0.7 } else { 0.3 };
            }
        }
        let q = exact_critic(&ht, &t, &pi);
        let e = critic_error(&ht, &t, &pi, &q);
        assert!(
            e.rmse < 1e-12 && e.adv_rmse < 1e-12 && e.wrong_sign == 0.0 && e.wrong_mass == 0.0,
            "{e:?}"
        );
        // A constant shift moves every q but no advantage.
        let shifted: Vec<f64> = q.iter().map(|x| x + 0.5).collect();
        let e = critic_error(&ht, &t, &pi, &shifted);
        assert!((e.rmse - 0.5).abs() < 1e-12 && e.adv_rmse < 1e-12, "{e:?}");
        assert_eq!(e.wrong_sign, 0.0, "{e:?}");
        // Negated values flip every nonzero advantage.
        let flipped: Vec<f64> = q.iter().map(|x| -x).collect();
        let e = critic_error(&ht, &t, &pi, &flipped);
        assert_eq!((e.wrong_sign, e.wrong_mass), (1.0, 1.0), "{e:?}");
        assert!(e.rmse > 0.1 && e.adv_rmse > 0.1, "{e:?}");
        // The drift diagnostic: another policy's exact values scored as a critic of `pi` are
        // off by the change of the target, and a policy is no distance from itself.
        let mut other = pi.clone();
        for pi_p in other.iter_mut() {
            for (k, x) in pi_p.iter_mut().enumerate() {
                *x = if k % 2 == 0 { 0.2 } else { 0.8 };
            }
        }
        let moved = critic_error(&ht, &t, &pi, &exact_critic(&ht, &t, &other));
        assert!(moved.rmse > 0.05 && moved.adv_rmse > 0.05, "{moved:?}");
        let still = critic_error(&ht, &t, &other, &exact_critic(&ht, &t, &other));
        assert!(still.rmse < 1e-12, "{still:?}");
        // A critic that is right at player 0's histories and flipped at player 1's is wrong
        // on the share of the weight that player 1's actions carry.
        let mut half = q.clone();
        for h in 0..ht.len() {
            if ht.kind[h] == HistoryKind::Decision(1) {
                for c in ht.children(h) {
                    half[c] = -q[c];
                }
            }
        }
        let e = critic_error(&ht, &t, &pi, &half);
        assert!(e.wrong_sign > 0.2 && e.wrong_sign < 0.8, "{e:?}");
        assert!(e.wrong_mass > 0.0 && e.wrong_mass < 1.0, "{e:?}");
    }

    #[test]
    fn regrets_match_the_per_infoset_reference() {
        let (g, t) = kuhn();
        let ht = HistoryTree::build(g.as_ref(), &t).unwrap();
        // A non-uniform policy: 0.7 on the first action everywhere.
        let mut pi = uniform_tree_policy(&t);
        for (p, pi_p) in pi.iter_mut().enumerate() {
            let inf = &t.infosets[p];
            for i in 0..inf.len() {
                let r = inf.range(i);
                pi_p[r.start] = 0.7;
                pi_p[r.start + 1] = 0.3;
            }
        }
        let (r, own) = regrets_and_reach(&ht, &t, &pi);
        for p in 0..2 {
            for i in 0..t.infosets[p].len() {
                let want = crate::cfr::baseline::counterfactual_regrets(&ht, &t, &pi, p, i);
                let got = &r[p][t.infosets[p].range(i)];
                for (a, b) in got.iter().zip(&want) {
                    assert!((a - b).abs() < 1e-12, "{p} {i}: {got:?} vs {want:?}");
                }
                // Kuhn: a player's first decision has own reach 1, the second 0.3 or 0.7.
                assert!(
                    [1.0, 0.7, 0.3]
                        .iter()
                        .any(|x| (own[p][i] - x).abs() < 1e-12)
                );
            }
        }
    }

    #[test]
    fn exact_sequence_of_regret_matching_is_cfr() {
        // Feeding regret matching on the accumulated regrets back in is vanilla CFR: the exact
        // average's NashConv must fall well below uniform's 0.9167, and the head that plays
        // exactly that policy has W error 0.
        let (g, t) = kuhn();
        let ht = std::sync::Arc::new(HistoryTree::build(g.as_ref(), &t).unwrap());
        let mut d = Diagnostics::new(ht, &t, [0.0, 0.0]);
        let mut pi = uniform_tree_policy(&t);
        let mut early = f64::NAN;
        for n in 0..200 {
            if n == 20 {
                early = d.compare(&t, &pi, true, None).nash_conv_exact_avg;
            }
            d.record(&t, &pi);
            pi = regret_matching(&t, &d.regret_sum);
        }
        // Samples whose sums are the exact regrets: regret matching on them is exact RM.
        let mut sampled = SampledRegrets::new(&t);
        for p in 0..2 {
            let inf = &t.infosets[p];
            for i in 0..inf.len() {
                let mut adv = vec![0.0f32; 2];
                for k in inf.range(i) {
                    adv[inf.actions[k]] = d.regret_sum[p][k] as f32;
                }
                sampled.add(&t, p, i, &adv);
            }
        }
        let sampled = sampled.policy(&t);
        let row = d.compare(&t, &pi, true, Some(&sampled));
        assert!(row.w_error.abs() < 1e-12, "{row:?}");
        assert!(
            row.w_sampling_error < 1e-6 && row.w_fit_error < 1e-6,
            "{row:?}"
        );
        // Simultaneous-update CFR's average after 200 iterations (measured 0.035).
        assert!(row.nash_conv_exact_avg < 0.05, "{row:?}");
        assert!(row.nash_conv_exact_avg < 0.5 * early, "{row:?} vs {early}");
        assert!(
            row.policy_change >= 0.0 && row.policy_change < 0.5,
            "{row:?}"
        );
        let uniform = d.compare(&t, &uniform_tree_policy(&t), false, None);
        assert!(uniform.w_error > 0.05, "{uniform:?}");
        assert_eq!(d.recorded(), 200);
    }
}
