//! Head-to-head matches between two policies, both seats.
//!
//! * [`exact_match`]: on a game whose tree compiles (Kuhn, Leduc, Liar's Dice, ...), the exact
//!   expected payoff of policy A against B in each seat, from the tree's on-policy values.
//! * [`sampled_match`]: on any game, `deals` duplicate deals: each deal's chance outcomes are
//!   drawn once (from a stream seeded by `(seed, deal)`) and the hand is played twice with the
//!   seats swapped, so the card luck cancels in the pair. The per-deal mean of A's two returns
//!   is the sample; the report gives its mean and a 95% confidence interval
//!   (`1.96 · sd / √deals`).
//!
//! * [`sampled_match_with`]: the same hands, with an AIVAT estimate beside the plain mean when
//!   a value estimate is given ([`crate::eval::aivat`]): each hand's AIVAT value replaces its
//!   return in the same per-deal mean and interval, on the same deals.
//!
//! Returns are in the game's units (chips in poker); [`MatchReport::mbb_per_hand`] converts to
//! milli-big-blinds per hand where the game has a big blind.

use crate::eval::Watch;
use crate::eval::aivat::{AivatOptions, DecisionProbs, ValueEstimate, aivat_hand};
use crate::game::{Action, Game, State, Turn};
use crate::policy::{Policy, PolicyError};
use crate::tree::{PublicTree, TreePolicy};
use crate::util::SplitMix64;

/// The outcome of a match, from policy A's point of view.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MatchReport {
    /// A's mean return per hand over both seats.
    pub mean: f64,
    /// Half-width of the 95% confidence interval of `mean` (0 when exact).
    pub ci95: f64,
    /// A's mean return as player 0 and as player 1.
    pub seat_mean: [f64; 2],
    /// Hands played (2 per deal); 0 when exact.
    pub hands: u64,
    /// Whether the figures are exact expectations (no sampling).
    pub exact: bool,
    /// The AIVAT estimate of `mean` on the same hands, when a value estimate was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aivat: Option<AivatReport>,
    /// Whether the match was stopped (Ctrl-C) before all its deals: the figures then cover
    /// the `hands` played. Absent from JSON when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

/// AIVAT's estimate of A's mean return per hand ([`crate::eval::aivat`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct AivatReport {
    /// The mean of the hands' AIVAT values (A's side), an unbiased estimate of `mean`'s
    /// expectation.
    pub mean: f64,
    /// Half-width of its 95% confidence interval (per-deal values, as the plain interval).
    pub ci95: f64,
    /// The value estimate used.
    pub values: String,
}

/// A mean and the half-width of its 95% interval from per-deal values (NaN interval with one).
/// Running sums of a series, in constant memory: its mean and the 95% interval of the mean.
/// The variance is taken about the first value (exact, 0, for a constant series).
#[derive(Default)]
struct Running {
    n: u64,
    total: f64,
    shift: f64,
    diff: f64,
    diff2: f64,
}

impl Running {
    fn add(&mut self, x: f64) {
        if self.n == 0 {
            self.shift = x;
        }
        self.n += 1;
        self.total += x;
        let d = x - self.shift;
        self.diff += d;
        self.diff2 += d * d;
    }

    /// `(mean, ci95)`; the interval is NaN for fewer than two values.
    fn mean_ci(&self) -> (f64, f64) {
        let n = self.n as f64;
        let mean = self.total / n;
        if self.n < 2 {
            return (mean, f64::NAN);
        }
        let var = ((self.diff2 - self.diff * self.diff / n) / (n - 1.0)).max(0.0);
        (mean, 1.96 * (var / n).sqrt())
    }
}

impl MatchReport {
    /// `(mean, ci95)` in milli-big-blinds per hand for a big blind of `big_blind` chips.
    pub fn mbb_per_hand(&self, big_blind: f64) -> (f64, f64) {
        let k = 1000.0 / big_blind;
        (self.mean * k, self.ci95 * k)
    }
}

/// Errors of a match.
#[derive(Debug, thiserror::Error)]
pub enum MatchError {
    #[error("policy {name} failed at history {history:?}: {source}")]
    Policy {
        name: String,
        history: Vec<usize>,
        #[source]
        source: PolicyError,
    },
    #[error("policy {name} returned {got} probabilities for {legal} legal actions")]
    BadLength {
        name: String,
        got: usize,
        legal: usize,
    },
    #[error("a match needs at least one deal")]
    NoDeals,
    #[error("stopped before any hand was played")]
    Stopped,
    #[error("recording hand {number}: {source}")]
    Record {
        number: u64,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// One hand of a sampled match, as [`sampled_match_recorded`] hands it to its recorder.
#[derive(Clone, Copy, Debug)]
pub struct PlayedHand<'a> {
    /// The hand's number from 0: deal `d` is hands `2d` (A in seat 0) and `2d + 1`.
    pub number: u64,
    /// The seat policy A played (0 or 1).
    pub a_seat: usize,
    /// The whole history, chance outcomes included.
    pub history: &'a [Action],
    /// Both players' returns.
    pub returns: [f64; 2],
}

/// What receives every hand of a sampled match.
pub type HandRecorder<'r> =
    dyn FnMut(PlayedHand<'_>) -> Result<(), Box<dyn std::error::Error + Send + Sync>> + 'r;

/// Exact match on a compiled tree: `a` and `b` are flat tree policies of the same tree.
pub fn exact_match(tree: &PublicTree, a: &TreePolicy, b: &TreePolicy) -> MatchReport {
    let a_first: TreePolicy = [a[0].clone(), b[1].clone()];
    let b_first: TreePolicy = [b[0].clone(), a[1].clone()];
    let seat = [
        crate::eval::on_policy_values(tree, &a_first)[0],
        crate::eval::on_policy_values(tree, &b_first)[1],
    ];
    MatchReport {
        mean: 0.5 * (seat[0] + seat[1]),
        ci95: 0.0,
        seat_mean: seat,
        hands: 0,
        exact: true,
        aivat: None,
        partial: false,
    }
}

/// Plays one hand: `players[p]` acts for seat `p`; chance draws from `chance`, actions from
/// `actions`. Returns the final state and the acting policy's probabilities (normalised over
/// the legal actions) at each decision in order.
fn play_hand(
    game: &dyn Game,
    players: [&dyn Policy; 2],
    chance: &mut SplitMix64,
    actions: &mut SplitMix64,
) -> Result<(Box<dyn State>, Vec<DecisionProbs>), MatchError> {
    let mut state = game.new_initial_state();
    let mut decisions = Vec::new();
    loop {
        match state.turn() {
            Turn::Terminal => return Ok((state, decisions)),
            Turn::Chance => {
                let outcomes = state.chance_outcomes();
                let probs: Vec<f64> = outcomes.iter().map(|o| o.1).collect();
                state.apply_action(outcomes[chance.weighted(&probs)].0);
            }
            Turn::Player(p) => {
                let policy = players[p];
                let legal = state.legal_actions();
                let probs = policy
                    .action_probabilities(state.as_ref())
                    .map_err(|source| MatchError::Policy {
                        name: policy.name(),
                        history: state.history().to_vec(),
                        source,
                    })?;
                if probs.len() != legal.len() {
                    return Err(MatchError::BadLength {
                        name: policy.name(),
                        got: probs.len(),
                        legal: legal.len(),
                    });
                }
                let w: Vec<f64> = probs.iter().map(|&x| x.max(0.0)).collect();
                state.apply_action(legal[actions.weighted(&w)]);
                let total: f64 = w.iter().sum();
                decisions.push(w.iter().map(|x| x / total).collect());
            }
        }
    }
}

/// `deals` duplicate deals of `a` against `b` (2 hands each, seats swapped, same chance
/// outcomes); deal `d` draws its chance outcomes from a stream seeded by `(seed, d)`.
pub fn sampled_match(
    game: &dyn Game,
    a: &dyn Policy,
    b: &dyn Policy,
    deals: u64,
    seed: u64,
) -> Result<MatchReport, MatchError> {
    sampled_match_recorded(game, a, b, deals, seed, None)
}

/// [`sampled_match`], handing every hand to `record` (when given) as it ends, in the order
/// played: deal `d`'s hand with A in seat 0, then its hand with A in seat 1.
pub fn sampled_match_recorded(
    game: &dyn Game,
    a: &dyn Policy,
    b: &dyn Policy,
    deals: u64,
    seed: u64,
    record: Option<&mut HandRecorder<'_>>,
) -> Result<MatchReport, MatchError> {
    sampled_match_with(game, a, b, deals, seed, record, None, Watch::default())
}

/// The value estimates for AIVAT of the hands with A in seat 0 and with A in seat 1 (the
/// same estimate twice when it does not depend on the seating, as a critic), and how chance
/// expectations are taken.
pub type AivatWith<'v> = ([&'v dyn ValueEstimate; 2], AivatOptions);

/// [`sampled_match_recorded`], with the AIVAT estimate of the same hands
/// ([`MatchReport::aivat`]) when `aivat` gives a value estimate (the hands played are the same
/// with or without it), under `watch`: progress is reported per hand, and once `watch.stop` is
/// set no new deal starts; the report then covers the deals played (`partial` set), or is
/// [`MatchError::Stopped`] when none was.
#[allow(clippy::too_many_arguments)]
pub fn sampled_match_with(
    game: &dyn Game,
    a: &dyn Policy,
    b: &dyn Policy,
    deals: u64,
    seed: u64,
    mut record: Option<&mut HandRecorder<'_>>,
    aivat: Option<AivatWith<'_>>,
    watch: Watch<'_>,
) -> Result<MatchReport, MatchError> {
    if deals == 0 {
        return Err(MatchError::NoDeals);
    }
    let planned = deals;
    let mut deals = 0;
    let mut actions = SplitMix64::new(seed ^ 0xAC71_0A5E_u64);
    let (mut sum, mut sum_sq) = (0.0, 0.0);
    let mut seat_sum = [0.0; 2];
    let mut corrected = Running::default();
    for d in 0..planned {
        if watch.stopped() {
            break;
        }
        let deal_seed = SplitMix64::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ d).next_u64();
        let mut returns = [0.0; 2];
        let mut deal_aivat = 0.0;
        for (a_seat, seats) in [[a, b], [b, a]].into_iter().enumerate() {
            let (end, probs) =
                play_hand(game, seats, &mut SplitMix64::new(deal_seed), &mut actions)?;
            let r = end.returns();
            if let Some((values, opts)) = aivat {
                let value = values[a_seat];
                let hand_seed = SplitMix64::new(deal_seed ^ 0x5EED_A1FA ^ a_seat as u64).next_u64();
                let v0 = aivat_hand(game, end.history(), &probs, value, opts, hand_seed).map_err(
                    |source| MatchError::Policy {
                        name: value.name(),
                        history: end.history().to_vec(),
                        source,
                    },
                )?;
                deal_aivat += 0.5 * if a_seat == 0 { v0 } else { -v0 };
            }
            if let Some(record) = record.as_mut() {
                let number = 2 * d + a_seat as u64;
                let hand = PlayedHand {
                    number,
                    a_seat,
                    history: end.history(),
                    returns: r,
                };
                record(hand).map_err(|source| MatchError::Record { number, source })?;
            }
            returns[a_seat] = r[a_seat];
            watch.tick(1);
        }
        deals += 1;
        let [first, second] = returns;
        seat_sum[0] += first;
        seat_sum[1] += second;
        let x = 0.5 * (first + second);
        if aivat.is_some() {
            corrected.add(deal_aivat);
        }
        sum += x;
        sum_sq += x * x;
    }
    if deals == 0 {
        return Err(MatchError::Stopped);
    }
    let n = deals as f64;
    let mean = sum / n;
    let var = if deals > 1 {
        ((sum_sq - n * mean * mean) / (n - 1.0)).max(0.0)
    } else {
        f64::NAN
    };
    Ok(MatchReport {
        mean,
        ci95: 1.96 * (var / n).sqrt(),
        seat_mean: [seat_sum[0] / n, seat_sum[1] / n],
        hands: 2 * deals,
        exact: false,
        aivat: aivat.map(|(values, _)| {
            let (mean, ci95) = corrected.mean_ci();
            AivatReport {
                mean,
                ci95,
                values: values[0].name(),
            }
        }),
        partial: deals < planned,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::lbr::AlwaysFold;
    use crate::eval::tree_policy;
    use crate::games::load_game;
    use crate::policy::{FirstLegalPolicy, UniformPolicy};

    /// The exact value of a history for player 0 when `seats[p]` plays seat `p`
    /// (memoised expectation over the rest of the game), or a deliberately bad estimate.
    struct Values<'a> {
        seats: [&'a dyn Policy; 2],
        memo: std::sync::Mutex<std::collections::HashMap<Vec<Action>, f64>>,
        /// Return garbage instead (a hash of the history, up to ±10 chips).
        bad: bool,
    }

    impl<'a> Values<'a> {
        /// Exact values (garbage with `bad`) when `seats[p]` plays seat `p`.
        fn new(seats: [&'a dyn Policy; 2], bad: bool) -> Values<'a> {
            Values {
                seats,
                memo: Default::default(),
                bad,
            }
        }

        fn exact(&self, state: &dyn State) -> f64 {
            if let Some(&v) = self.memo.lock().unwrap().get(state.history()) {
                return v;
            }
            let v = match state.turn() {
                Turn::Terminal => state.returns()[0],
                Turn::Chance => state
                    .chance_outcomes()
                    .into_iter()
                    .map(|(a, q)| {
                        let mut c = state.clone_box();
                        c.apply_action(a);
                        q * self.exact(c.as_ref())
                    })
                    .sum(),
                Turn::Player(p) => {
                    let pi = self.seats[p].action_probabilities(state).unwrap();
                    state
                        .legal_actions()
                        .into_iter()
                        .zip(pi)
                        .map(|(a, q)| {
                            let mut c = state.clone_box();
                            c.apply_action(a);
                            q * self.exact(c.as_ref())
                        })
                        .sum()
                }
            };
            self.memo
                .lock()
                .unwrap()
                .insert(state.history().to_vec(), v);
            v
        }
    }

    impl ValueEstimate for Values<'_> {
        fn values(&self, states: &[&dyn State]) -> Result<Vec<f64>, PolicyError> {
            Ok(states
                .iter()
                .map(|s| {
                    if self.bad {
                        let h = s.history().iter().fold(7u64, |h, &a| h * 31 + a as u64);
                        SplitMix64::new(h).next_f64() * 20.0 - 10.0
                    } else {
                        self.exact(*s)
                    }
                })
                .collect())
        }

        fn name(&self) -> String {
            if self.bad { "garbage" } else { "exact" }.into()
        }
    }

    /// Leduc and the exact result of `a` against `b` on it.
    fn leduc_exact(a: &dyn Policy, b: &dyn Policy) -> (crate::game::GameRef, MatchReport) {
        let game = load_game("leduc_poker").unwrap();
        let tree = PublicTree::build(game.as_ref()).unwrap();
        let exact = exact_match(
            &tree,
            &tree_policy(&tree, game.as_ref(), a).unwrap(),
            &tree_policy(&tree, game.as_ref(), b).unwrap(),
        );
        (game, exact)
    }

    /// AIVAT on Leduc: with the pair's exact values every deal's AIVAT value is the game's
    /// value (zero variance); with garbage values it stays unbiased (the exact value within
    /// its interval) while its interval widens; the hands and the plain mean do not change.
    #[test]
    fn aivat_is_exact_with_exact_values_and_unbiased_with_bad_ones() {
        let (a, b): (&dyn Policy, &dyn Policy) = (&UniformPolicy, &FirstLegalPolicy);
        let (game, exact) = leduc_exact(a, b);
        let values = Values::new;
        let opts = AivatOptions::default();
        let deals = 3000;
        let plain = sampled_match(game.as_ref(), a, b, deals, 5).unwrap();
        // Player 0's exact values depend on who sits where: seat order (A, B) in the first
        // hand of each deal, (B, A) in the second.
        let good = [values([a, b], false), values([b, a], false)];
        let good: [&dyn ValueEstimate; 2] = [&good[0], &good[1]];
        let r = sampled_match_with(
            game.as_ref(),
            a,
            b,
            deals,
            5,
            None,
            Some((good, opts)),
            Watch::default(),
        )
        .unwrap();
        assert_eq!(
            (r.mean, r.ci95, r.hands),
            (plain.mean, plain.ci95, plain.hands)
        );
        let av = r.aivat.clone().unwrap();
        eprintln!("plain {plain:?}\naivat (exact values) {av:?}\nexact {exact:?}");
        assert!(exact.mean > 0.1, "{exact:?}");
        assert!(
            (av.mean - exact.mean).abs() < 1e-9 && av.ci95 < 1e-9,
            "{av:?} vs {exact:?}"
        );
        // Chance expectations sampled (4 runs, none expanded): no longer zero variance, still
        // unbiased.
        let sampled = AivatOptions {
            exact_runs: 1,
            samples: 4,
        };
        let r = sampled_match_with(
            game.as_ref(),
            a,
            b,
            deals,
            5,
            None,
            Some((good, sampled)),
            Watch::default(),
        );
        let av = r.unwrap().aivat.unwrap();
        eprintln!("aivat (exact values, sampled chance) {av:?}");
        assert!(av.ci95 > 1e-6, "{av:?}");
        assert!(
            (av.mean - exact.mean).abs() <= 2.0 * av.ci95,
            "{av:?} vs {exact:?}"
        );
        let bad = values([a, b], true);
        let r = sampled_match_with(
            game.as_ref(),
            a,
            b,
            deals,
            5,
            None,
            Some(([&bad, &bad], opts)),
            Watch::default(),
        )
        .unwrap();
        let av = r.aivat.unwrap();
        eprintln!("aivat (garbage values) {av:?}");
        assert!(
            (av.mean - exact.mean).abs() <= 2.0 * av.ci95,
            "{av:?} vs {exact:?}"
        );
        assert!(av.ci95 > plain.ci95, "{av:?} vs {plain:?}");
        // Self-consistent exact values, hand by hand: a hand's AIVAT value is the value of the
        // game for its seating, whatever the cards and actions.
        let mut chance = SplitMix64::new(1);
        let mut actions = SplitMix64::new(2);
        for (k, seats) in [[a, b], [b, a]].into_iter().enumerate() {
            let v = values(seats, false);
            let root = v.exact(game.new_initial_state().as_ref());
            for _ in 0..200 {
                let (end, probs) =
                    play_hand(game.as_ref(), seats, &mut chance, &mut actions).unwrap();
                let x = aivat_hand(game.as_ref(), end.history(), &probs, &v, opts, 9).unwrap();
                assert!((x - root).abs() < 1e-9, "seating {k}: {x} vs {root}");
            }
        }
    }

    /// The base of [`crate::eval::aivat_pair::PairValues`] from [`Values`]: each action's
    /// child valued exactly (or by garbage).
    impl crate::eval::aivat_pair::ActionValues for Values<'_> {
        fn action_values(&self, states: &[&dyn State]) -> Result<Vec<Vec<f64>>, PolicyError> {
            states
                .iter()
                .map(|s| {
                    let kids: Vec<Box<dyn State>> = s
                        .legal_actions()
                        .into_iter()
                        .map(|a| {
                            let mut c = s.clone_box();
                            c.apply_action(a);
                            c
                        })
                        .collect();
                    Ok(kids
                        .iter()
                        .map(|c| {
                            if self.bad {
                                let h = c.history().iter().fold(3u64, |h, &a| h * 31 + a as u64);
                                SplitMix64::new(h).next_f64() * 20.0 - 10.0
                            } else {
                                self.exact(c.as_ref())
                            }
                        })
                        .collect())
                })
                .collect()
        }

        fn name(&self) -> String {
            ValueEstimate::name(self)
        }
    }

    /// AIVAT with the pair-aware estimate on Leduc: over an exact base every hand's value is
    /// the game's value; over a garbage base, and with the walk's chance events sampled, the
    /// estimate is within about 3 standard errors of the exact value on every seed.
    #[test]
    fn pair_values_are_exact_over_exact_bases_and_unbiased_over_bad_ones() {
        use crate::eval::aivat_pair::{PairOptions, PairValues};
        let (a, b): (&dyn Policy, &dyn Policy) = (&UniformPolicy, &FirstLegalPolicy);
        let (game, exact) = leduc_exact(a, b);
        let values = Values::new;
        let bases = [
            values([a, b], false),
            values([b, a], false),
            values([a, b], true),
        ];
        let run = |base: [&Values<'_>; 2], opts: PairOptions, seed: u64, deals: u64| {
            let pair = [
                PairValues::new(game.as_ref(), [a, b], base[0], opts, 1),
                PairValues::new(game.as_ref(), [b, a], base[1], opts, 2),
            ];
            let v: [&dyn ValueEstimate; 2] = [&pair[0], &pair[1]];
            let w = Some((v, AivatOptions::default()));
            let r = sampled_match_with(game.as_ref(), a, b, deals, seed, None, w, Watch::default());
            let r = r.unwrap();
            (r.ci95, r.aivat.unwrap())
        };
        let (_, av) = run([&bases[0], &bases[1]], PairOptions::default(), 5, 500);
        assert!(
            (av.mean - exact.mean).abs() < 1e-9 && av.ci95 < 1e-9,
            "{av:?} vs {exact:?}"
        );
        let sampled = PairOptions {
            exact_runs: 1,
            samples: 3,
            ..PairOptions::default()
        };
        for (opts, base) in [
            (PairOptions::default(), [&bases[2], &bases[2]]),
            (sampled, [&bases[0], &bases[1]]),
            (sampled, [&bases[2], &bases[2]]),
        ] {
            for seed in [1, 2, 3] {
                let (plain, av) = run(base, opts, seed, 1500);
                eprintln!(
                    "{opts:?} seed {seed}: plain ± {plain:.3}, {av:?} vs {}",
                    exact.mean
                );
                // 1.5 half-widths: about 3 standard errors.
                assert!(
                    (av.mean - exact.mean).abs() <= 1.5 * av.ci95,
                    "seed {seed}: {av:?} vs {exact:?}"
                );
            }
        }
    }

    #[test]
    fn exact_match_is_antisymmetric_and_zero_against_itself() {
        let game = load_game("leduc_poker").unwrap();
        let tree = PublicTree::build(game.as_ref()).unwrap();
        let u = tree_policy(&tree, game.as_ref(), &UniformPolicy).unwrap();
        // First-legal folds to every raise (and never raises itself): uniform profits.
        let c = tree_policy(&tree, game.as_ref(), &FirstLegalPolicy).unwrap();
        let self_play = exact_match(&tree, &u, &u);
        assert!(self_play.mean.abs() < 1e-12, "{self_play:?}");
        let ab = exact_match(&tree, &u, &c);
        let ba = exact_match(&tree, &c, &u);
        assert!((ab.mean + ba.mean).abs() < 1e-12, "{ab:?} {ba:?}");
        assert!(ab.mean > 0.1, "uniform beats first-legal: {ab:?}");
    }

    #[test]
    fn sampled_match_agrees_with_the_exact_value_within_its_interval() {
        let game = load_game("leduc_poker").unwrap();
        let tree = PublicTree::build(game.as_ref()).unwrap();
        let (u, f) = (
            tree_policy(&tree, game.as_ref(), &UniformPolicy).unwrap(),
            tree_policy(&tree, game.as_ref(), &AlwaysFold).unwrap(),
        );
        let exact = exact_match(&tree, &u, &f);
        let r = sampled_match(game.as_ref(), &UniformPolicy, &AlwaysFold, 4000, 7).unwrap();
        assert_eq!(r.hands, 8000);
        assert!(r.ci95 > 0.0 && r.ci95 < 0.2, "{r:?}");
        assert!(
            (r.mean - exact.mean).abs() < 1.5 * r.ci95,
            "sampled {r:?} vs exact {exact:?}"
        );
        // Same seed, same result; duplicate deals cancel the cards in self-play.
        let again = sampled_match(game.as_ref(), &UniformPolicy, &AlwaysFold, 4000, 7).unwrap();
        assert_eq!(r, again);
        let mirror = sampled_match(game.as_ref(), &AlwaysFold, &AlwaysFold, 100, 1).unwrap();
        assert_eq!((mirror.mean, mirror.ci95), (0.0, 0.0));
    }
}
