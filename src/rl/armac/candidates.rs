//! Adaptive behaviour-policy selection (ARMAC section 3.3) as plain bookkeeping.
//!
//! Every epoch ARMAC keeps a pool of candidate behaviour policies built from four sources:
//! (i) uniform random; (ii) Eq. 1 applied to the current epoch's *immediate* regret
//! `q_θt(h, a) − v_θt(h)`, mixed with uniform exploration `ε ∈ {0, 0.01, 0.05}`; (iii) the
//! *mean-regret* policy `π^t = NormalizedReLU(W̄_θt)` of Algorithm 1 with the same `ε`s; (iv) the
//! average policy `π̄^t`. The candidates are ranked by their return against an opponent playing
//! `π̄_θt`, and "the one producing highest rewards is used half of the times".
//!
//! Our reading of that sentence ([`CandidateStats::choose`]): with probability 1/2 the best
//! candidate (highest *mean* return so far; means, not sums, because the best is run more often
//! than the others) is used, otherwise a candidate drawn uniformly from all eight (the best
//! included), so every candidate keeps being evaluated. Before any return is recorded every draw
//! is uniform. [`CandidateStats`] accumulates within one epoch; the caller resets it (or keeps
//! a copy of last epoch's) at epoch boundaries.
//!
//! Section 3.3 also says that μ_i^T uses "the most recent neural network with 50% probability
//! or otherwise … one of the past neural networks from replay memory uniformly", modulated by
//! the chosen candidate: that is [`pick_snapshot`]. And "when sub-optimal policies are run for
//! players −i, they are not used to train mean regrets for player i, but can be used to train the
//! critic" — the caller's data routing, helped by [`CandidateStats::best`].
//!
//! The neural heads themselves live elsewhere; [`Candidate::action_probabilities`] turns their
//! raw outputs at one state ([`PolicyHeads`]) into the candidate's action distribution.

use crate::policy::probs::{mix_epsilon, normalized_relu};
use crate::util::SplitMix64;
use serde::{Deserialize, Serialize};

/// The uniform-exploration levels of section 3.3: `ε ∈ {0, 0.01, 0.05}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Epsilon {
    /// ε = 0.
    Zero,
    /// ε = 0.01.
    OnePercent,
    /// ε = 0.05.
    FivePercent,
}

impl Epsilon {
    /// All levels in increasing order.
    pub const ALL: [Epsilon; 3] = [Epsilon::Zero, Epsilon::OnePercent, Epsilon::FivePercent];

    /// The mixing weight ε.
    pub fn value(self) -> f64 {
        match self {
            Epsilon::Zero => 0.0,
            Epsilon::OnePercent => 0.01,
            Epsilon::FivePercent => 0.05,
        }
    }
}

/// A candidate behaviour policy of section 3.3. The declaration order is the id order used for
/// ties: `Uniform, Immediate(0), Immediate(0.01), Immediate(0.05), MeanRegret(0),
/// MeanRegret(0.01), MeanRegret(0.05), Average`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Candidate {
    /// (i) Uniform over the legal actions.
    Uniform,
    /// (ii) Eq. 1 over the immediate regret `q_θt(h, ·) − v_θt(h)`, ε-mixed.
    Immediate(Epsilon),
    /// (iii) The mean-regret policy `NormalizedReLU(W̄_θt(s))`, ε-mixed.
    MeanRegret(Epsilon),
    /// (iv) The average policy `π̄^t`.
    Average,
}

/// Number of candidates.
pub const NUM_CANDIDATES: usize = 8;

impl Candidate {
    /// Every candidate in id order.
    pub const ALL: [Candidate; NUM_CANDIDATES] = [
        Candidate::Uniform,
        Candidate::Immediate(Epsilon::Zero),
        Candidate::Immediate(Epsilon::OnePercent),
        Candidate::Immediate(Epsilon::FivePercent),
        Candidate::MeanRegret(Epsilon::Zero),
        Candidate::MeanRegret(Epsilon::OnePercent),
        Candidate::MeanRegret(Epsilon::FivePercent),
        Candidate::Average,
    ];

    /// Every candidate in id order (the same as [`Candidate::ALL`]).
    pub fn all() -> &'static [Candidate] {
        &Candidate::ALL
    }

    /// Position in [`Candidate::ALL`].
    pub fn id(self) -> usize {
        let e = |x: Epsilon| x as usize;
        match self {
            Candidate::Uniform => 0,
            Candidate::Immediate(x) => 1 + e(x),
            Candidate::MeanRegret(x) => 4 + e(x),
            Candidate::Average => 7,
        }
    }

    /// The candidate with this id, if any.
    pub fn from_id(id: usize) -> Option<Candidate> {
        Candidate::ALL.get(id).copied()
    }

    /// Its exploration level ε (zero for `Uniform` and `Average`).
    pub fn epsilon(self) -> f64 {
        match self {
            Candidate::Immediate(x) | Candidate::MeanRegret(x) => x.value(),
            Candidate::Uniform | Candidate::Average => 0.0,
        }
    }

    /// A short stable name for logs and TensorBoard tags, e.g. `mean_regret_eps0.01`.
    pub fn name(self) -> String {
        match self {
            Candidate::Uniform => "uniform".into(),
            Candidate::Immediate(x) => format!("immediate_eps{}", x.value()),
            Candidate::MeanRegret(x) => format!("mean_regret_eps{}", x.value()),
            Candidate::Average => "average".into(),
        }
    }

    /// The candidate's action distribution at one state, from the raw head outputs there:
    /// uniform; `mix_epsilon(NormalizedReLU(immediate_advantage), ε)`;
    /// `mix_epsilon(NormalizedReLU(mean_regret), ε)`; or the average policy restricted to the
    /// legal actions (renormalised; uniform if it puts no mass there).
    ///
    /// # Panics
    /// If the head slices differ in length from `legal`.
    pub fn action_probabilities(self, legal: &[bool], heads: &PolicyHeads<'_>) -> Vec<f64> {
        match self {
            Candidate::Uniform => mix_epsilon(&vec![0.0; legal.len()], legal, 1.0),
            Candidate::Immediate(x) => mix_epsilon(
                &normalized_relu(heads.immediate_advantage, legal),
                legal,
                x.value(),
            ),
            Candidate::MeanRegret(x) => {
                mix_epsilon(&normalized_relu(heads.mean_regret, legal), legal, x.value())
            }
            Candidate::Average => mix_epsilon(heads.average, legal, 0.0),
        }
    }
}

/// Raw outputs of the policy-relevant heads at one state, over all actions.
#[derive(Clone, Copy, Debug)]
pub struct PolicyHeads<'a> {
    /// `q_θt(h, a) − v_θt(h)`: the current epoch's immediate regret (advantage).
    pub immediate_advantage: &'a [f64],
    /// `W̄_θt(s, a)`: the mean-regret head.
    pub mean_regret: &'a [f64],
    /// `π̄_θt(s, a)`: the average-policy head (probabilities).
    pub average: &'a [f64],
}

/// Returns of each candidate against the average policy within an epoch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CandidateStats {
    sum: [f64; NUM_CANDIDATES],
    /// Number of returns (a float: checkpoints written with the retired `armac.candidate_decay`
    /// hold fractional counts).
    count: [f64; NUM_CANDIDATES],
}

impl CandidateStats {
    /// No returns recorded.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one episode's return of `candidate` (the return of the player it controlled).
    pub fn record(&mut self, candidate: Candidate, ret: f64) {
        self.sum[candidate.id()] += ret;
        self.count[candidate.id()] += 1.0;
    }

    /// Merges partial results: `count` returns of `candidate` summing to `total` (e.g. one
    /// actor's tally).
    pub fn add(&mut self, candidate: Candidate, total: f64, count: u64) {
        self.sum[candidate.id()] += total;
        self.count[candidate.id()] += count as f64;
    }

    /// Adds every tally of `other` (merging several actors' stats).
    pub fn merge(&mut self, other: &CandidateStats) {
        for c in Candidate::ALL {
            self.sum[c.id()] += other.sum[c.id()];
            self.count[c.id()] += other.count[c.id()];
        }
    }

    /// Sum of `candidate`'s recorded returns.
    pub fn sum(&self, candidate: Candidate) -> f64 {
        self.sum[candidate.id()]
    }

    /// Number of `candidate`'s recorded returns.
    pub fn count(&self, candidate: Candidate) -> f64 {
        self.count[candidate.id()]
    }

    /// Mean recorded return of `candidate`, `None` if it has none.
    pub fn mean(&self, candidate: Candidate) -> Option<f64> {
        let n = self.count[candidate.id()];
        (n > 0.0).then(|| self.sum[candidate.id()] / n)
    }

    /// The candidate with the highest mean return among those with at least one return; ties go
    /// to the lowest id. `None` when nothing is recorded.
    pub fn best(&self) -> Option<Candidate> {
        let mut best: Option<(Candidate, f64)> = None;
        for c in Candidate::ALL {
            if let Some(m) = self.mean(c)
                && best.is_none_or(|(_, b)| m > b)
            {
                best = Some((c, m));
            }
        }
        best.map(|(c, _)| c)
    }

    /// Behaviour for the next episode: with probability 1/2 the [`CandidateStats::best`]
    /// candidate, otherwise one drawn uniformly from all of [`Candidate::ALL`] (uniform always
    /// when nothing is recorded). Consumes one coin and, when exploring, one index draw.
    pub fn choose(&self, rng: &mut SplitMix64) -> Candidate {
        if rng.next_f64() < 0.5
            && let Some(b) = self.best()
        {
            return b;
        }
        Candidate::ALL[rng.below(NUM_CANDIDATES)]
    }

    /// Forgets everything (start of an epoch).
    pub fn reset(&mut self) {
        *self = Self::default();
    }
}

/// Which network snapshot modulates the behaviour policy of an episode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SnapshotChoice {
    /// The most recent network.
    Latest,
    /// The past snapshot at this index of the reservoir.
    Past(usize),
}

/// Section 3.3: the most recent network with probability 1/2, otherwise a uniformly drawn one of
/// the `num_past` snapshots in the reservoir (always the latest when there is none).
pub fn pick_snapshot(rng: &mut SplitMix64, num_past: usize) -> SnapshotChoice {
    if num_past == 0 || rng.next_f64() < 0.5 {
        SnapshotChoice::Latest
    } else {
        SnapshotChoice::Past(rng.below(num_past))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approx(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn ids_round_trip_in_declaration_order() {
        for (i, c) in Candidate::ALL.iter().enumerate() {
            assert_eq!(c.id(), i);
            assert_eq!(Candidate::from_id(i), Some(*c));
        }
        assert_eq!(Candidate::from_id(NUM_CANDIDATES), None);
        let mut sorted = Candidate::ALL;
        sorted.sort();
        assert_eq!(sorted, Candidate::ALL, "derived Ord agrees with id order");
        assert_eq!(Candidate::MeanRegret(Epsilon::OnePercent).epsilon(), 0.01);
        assert_eq!(
            Candidate::Immediate(Epsilon::FivePercent).name(),
            "immediate_eps0.05"
        );
        assert_eq!(
            Candidate::MeanRegret(Epsilon::Zero).name(),
            "mean_regret_eps0"
        );
    }

    #[test]
    fn best_uses_means_and_breaks_ties_by_id() {
        let mut s = CandidateStats::new();
        assert_eq!(s.best(), None);
        s.record(Candidate::Average, 0.5);
        assert_eq!(s.best(), Some(Candidate::Average));
        // Higher sum but lower mean does not win.
        for _ in 0..10 {
            s.record(Candidate::Uniform, 0.2);
        }
        assert!((s.sum(Candidate::Uniform) - 2.0).abs() < 1e-12);
        assert_eq!(s.best(), Some(Candidate::Average));
        // A tie goes to the lower id; unplayed candidates (mean None) never win.
        s.record(Candidate::MeanRegret(Epsilon::Zero), 0.25);
        s.record(Candidate::MeanRegret(Epsilon::Zero), 0.75);
        assert_eq!(s.mean(Candidate::MeanRegret(Epsilon::Zero)), Some(0.5));
        assert_eq!(s.best(), Some(Candidate::MeanRegret(Epsilon::Zero)));
        s.record(Candidate::Immediate(Epsilon::Zero), -1.0);
        assert_eq!(s.best(), Some(Candidate::MeanRegret(Epsilon::Zero)));
        assert_eq!(s.count(Candidate::Immediate(Epsilon::OnePercent)), 0.0);
        assert_eq!(s.mean(Candidate::Immediate(Epsilon::OnePercent)), None);
        let mut merged = CandidateStats::new();
        merged.add(Candidate::Average, 3.0, 2);
        merged.merge(&s);
        assert_eq!(merged.count(Candidate::Average), 3.0);
        assert_eq!(merged.mean(Candidate::Average), Some(3.5 / 3.0));
        assert_eq!(Candidate::all(), &Candidate::ALL[..]);
        s.reset();
        assert_eq!(s, CandidateStats::default());
    }

    /// P(best) = 1/2 + 1/16, P(other) = 1/16 each; counts within 5 binomial sd.
    #[test]
    fn choose_frequencies() {
        let mut s = CandidateStats::new();
        s.record(Candidate::Immediate(Epsilon::OnePercent), 1.0);
        s.record(Candidate::Uniform, 0.0);
        let mut rng = SplitMix64::new(2024);
        let n = 160_000;
        let mut counts = [0u32; NUM_CANDIDATES];
        for _ in 0..n {
            counts[s.choose(&mut rng).id()] += 1;
        }
        for c in Candidate::ALL {
            let p = if c == Candidate::Immediate(Epsilon::OnePercent) {
                0.5 + 0.5 / 8.0
            } else {
                0.5 / 8.0
            };
            let mean = n as f64 * p;
            let sd = (n as f64 * p * (1.0 - p)).sqrt();
            let got = counts[c.id()] as f64;
            assert!(
                (got - mean).abs() < 5.0 * sd,
                "{c:?}: {got} vs {mean:.0} ± {sd:.0}"
            );
        }
        // Without data every draw is uniform.
        let empty = CandidateStats::new();
        let mut counts = [0u32; NUM_CANDIDATES];
        for _ in 0..n {
            counts[empty.choose(&mut rng).id()] += 1;
        }
        let mean = n as f64 / 8.0;
        let sd = (n as f64 / 8.0 * 7.0 / 8.0).sqrt();
        for c in counts {
            assert!((c as f64 - mean).abs() < 5.0 * sd, "{counts:?}");
        }
    }

    #[test]
    fn candidate_action_probabilities() {
        let legal = [true, true, false];
        let heads = PolicyHeads {
            immediate_advantage: &[1.0, 3.0, 50.0],
            mean_regret: &[-1.0, 2.0, 7.0],
            average: &[0.2, 0.6, 0.2],
        };
        let p = |c: Candidate| c.action_probabilities(&legal, &heads);
        assert!(approx(&p(Candidate::Uniform), &[0.5, 0.5, 0.0]));
        assert!(approx(
            &p(Candidate::Immediate(Epsilon::Zero)),
            &[0.25, 0.75, 0.0]
        ));
        assert!(approx(
            &p(Candidate::Immediate(Epsilon::FivePercent)),
            &[0.95 * 0.25 + 0.025, 0.95 * 0.75 + 0.025, 0.0]
        ));
        assert!(approx(
            &p(Candidate::MeanRegret(Epsilon::Zero)),
            &[0.0, 1.0, 0.0]
        ));
        assert!(approx(
            &p(Candidate::MeanRegret(Epsilon::OnePercent)),
            &[0.005, 0.99 + 0.005, 0.0]
        ));
        assert!(approx(&p(Candidate::Average), &[0.25, 0.75, 0.0]));
    }

    #[test]
    fn serde_round_trips() {
        let mut s = CandidateStats::new();
        s.record(Candidate::MeanRegret(Epsilon::FivePercent), 0.125);
        s.record(Candidate::Average, -2.0);
        let back: CandidateStats =
            serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        for c in Candidate::ALL {
            let back: Candidate =
                serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
            assert_eq!(back, c);
        }
        let snap = SnapshotChoice::Past(3);
        let back: SnapshotChoice =
            serde_json::from_str(&serde_json::to_string(&snap).unwrap()).unwrap();
        assert_eq!(back, snap);
    }

    #[test]
    fn pick_snapshot_half_latest() {
        let mut rng = SplitMix64::new(5);
        assert_eq!(pick_snapshot(&mut rng, 0), SnapshotChoice::Latest);
        let n = 100_000;
        let mut latest = 0;
        let mut past = [0u32; 4];
        for _ in 0..n {
            match pick_snapshot(&mut rng, 4) {
                SnapshotChoice::Latest => latest += 1,
                SnapshotChoice::Past(i) => past[i] += 1,
            }
        }
        let sd = (n as f64 * 0.25).sqrt();
        assert!((latest as f64 - n as f64 / 2.0).abs() < 5.0 * sd);
        let sd8 = (n as f64 / 8.0 * 7.0 / 8.0).sqrt();
        for c in past {
            assert!((c as f64 - n as f64 / 8.0).abs() < 5.0 * sd8, "{past:?}");
        }
    }
}
