//! AIVAT: variance-reduced match results from value estimates (Burch, Schmid, Moravčík,
//! Morrill & Bowling, *AIVAT: A New Variance Reduction Technique for Agent Evaluation in
//! Imperfect Information Games*, AAAI 2018).
//!
//! # The estimator
//!
//! A hand's plain result is player 0's return `u(z)`. AIVAT adds one control variate per
//! chance event and per decision whose policy the evaluator knows (in an `armac` match both
//! policies are known: they are queried to play):
//!
//! ```text
//! chance, from node c to the next decision or terminal s:   V̂(c) − V(s)
//! decision at h, action a* taken with probability π(a*|h):   Σ_a π(a|h) V̂(h·a) − V̂(h·a*)
//! AIVAT(z) = u(z) + Σ (the terms along the hand)
//! ```
//!
//! where `V` is any value estimate of player 0's return at decisions (terminals give their
//! return), and `V̂(c)` at a chance node is the expectation of `V` over the chance events up to
//! the next decision or terminal, computed exactly (every run of chance outcomes with its
//! probability) when there are at most [`AivatOptions::exact_runs`] such runs, and otherwise
//! estimated from [`AivatOptions::samples`] runs drawn from the chance distribution with a
//! generator of its own.
//!
//! Each term has expectation 0 given the history before it: the chance term because the actual
//! run is drawn from the same distribution that `V̂(c)` averages over (a sampled `V̂(c)` is an
//! unbiased estimate drawn independently of the actual run), the decision term because the
//! action is drawn from `π(·|h)` and the children's values do not depend on which action was
//! drawn. So `E[AIVAT] = E[u]` **whatever `V` is**: a poor estimate only leaves more variance.
//! With the exact values of the policy pair and exact chance expectations the terms telescope
//! and every hand's AIVAT value equals the game's value. Both properties are checked in the
//! tests of [`crate::eval::matchup`].
//!
//! Unlike the AIVAT paper, which evaluates one agent against an unknown opponent, a match here
//! corrects at both players' decisions (both policies are the evaluator's).

use crate::game::{Game, State, Turn};
use crate::policy::PolicyError;
use crate::util::SplitMix64;

/// A value estimate for AIVAT: player 0's expected return at decision states.
pub trait ValueEstimate: Send + Sync {
    /// Player 0's estimated return at each state of `states` (all decisions: a player acts).
    fn values(&self, states: &[&dyn State]) -> Result<Vec<f64>, PolicyError>;

    /// A short name (for reports).
    fn name(&self) -> String;
}

impl<T: ValueEstimate + ?Sized> ValueEstimate for &T {
    fn values(&self, states: &[&dyn State]) -> Result<Vec<f64>, PolicyError> {
        (**self).values(states)
    }

    fn name(&self) -> String {
        (**self).name()
    }
}

/// How chance expectations are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AivatOptions {
    /// Chance nodes with at most this many runs to the next decision or terminal are
    /// expanded exactly (e.g. Leduc's deals, a Hold'em turn or river card).
    pub exact_runs: usize,
    /// Runs sampled at the other chance nodes (a Hold'em deal of hole cards or of the flop).
    pub samples: usize,
}

impl Default for AivatOptions {
    /// 64 exact runs, 64 samples.
    fn default() -> Self {
        AivatOptions {
            exact_runs: 64,
            samples: 64,
        }
    }
}

/// One decision of a played hand: the probabilities the acting policy gave its legal actions
/// (aligned with `legal_actions()`), recorded as the hand was played.
pub type DecisionProbs = Vec<f64>;

/// The evaluator of one hand.
struct Hand<'a> {
    value: &'a dyn ValueEstimate,
    opts: AivatOptions,
    /// Seed of this hand's sampled chance expectations.
    seed: u64,
}

impl Hand<'_> {
    /// `V` at each of `states` (decisions or terminals; chance nodes are expanded with their
    /// own seeds `seeds[i]`).
    fn values(&self, states: &[Box<dyn State>], seeds: &[u64]) -> Result<Vec<f64>, PolicyError> {
        // Every state becomes weighted end states (decisions or terminals).
        let mut ends: Vec<(usize, f64, Box<dyn State>)> = Vec::new();
        for (i, s) in states.iter().enumerate() {
            if s.turn() == Turn::Chance {
                let (exact, samples) = (self.opts.exact_runs, self.opts.samples);
                for (p, end) in chance_runs(s.as_ref(), exact, samples, || seeds[i]) {
                    ends.push((i, p, end));
                }
            } else {
                ends.push((i, 1.0, s.clone_box()));
            }
        }
        let decisions: Vec<&dyn State> = ends
            .iter()
            .filter(|(_, _, s)| !s.is_terminal())
            .map(|(_, _, s)| s.as_ref())
            .collect();
        let estimates = if decisions.is_empty() {
            Vec::new()
        } else {
            self.value.values(&decisions)?
        };
        if estimates.len() != decisions.len() {
            return Err(PolicyError::Failed {
                policy: self.value.name(),
                reason: format!("{} values for {} states", estimates.len(), decisions.len()),
            });
        }
        let mut next = estimates.into_iter();
        let mut out = vec![0.0; states.len()];
        for (i, p, s) in &ends {
            let v = if s.is_terminal() {
                s.returns()[0]
            } else {
                next.next().expect("one estimate per decision")
            };
            out[*i] += p * v;
        }
        Ok(out)
    }
}

/// The runs of chance from `state` to the next decision or terminal, with their weights
/// (summing to 1): every run with its probability when there are at most `exact_runs`, else
/// `samples` runs (at least one) drawn from a generator seeded by `seed()`, weight
/// `1 / samples` each.
pub(crate) fn chance_runs(
    state: &dyn State,
    exact_runs: usize,
    samples: usize,
    seed: impl FnOnce() -> u64,
) -> Vec<(f64, Box<dyn State>)> {
    let mut runs = Vec::new();
    if expand(state, 1.0, &mut runs, exact_runs) {
        return runs;
    }
    let mut rng = SplitMix64::new(seed());
    let n = samples.max(1);
    (0..n)
        .map(|_| {
            let mut s = state.clone_box();
            while s.turn() == Turn::Chance {
                let outcomes = s.chance_outcomes();
                let probs: Vec<f64> = outcomes.iter().map(|o| o.1).collect();
                s.apply_action(outcomes[rng.weighted(&probs)].0);
            }
            (1.0 / n as f64, s)
        })
        .collect()
}

/// Appends every run of chance from `state` (probability `p` so far) to `out`; `false` as soon
/// as there would be more than `limit` runs.
fn expand(state: &dyn State, p: f64, out: &mut Vec<(f64, Box<dyn State>)>, limit: usize) -> bool {
    if state.turn() != Turn::Chance {
        if out.len() >= limit {
            return false;
        }
        out.push((p, state.clone_box()));
        return true;
    }
    for (a, q) in state.chance_outcomes() {
        let mut child = state.clone_box();
        child.apply_action(a);
        if !expand(child.as_ref(), p * q, out, limit) {
            return false;
        }
    }
    true
}

/// A seed for the chance expectation below step `step` of a hand, child `k`.
fn seed_of(hand: u64, step: usize, k: usize) -> u64 {
    let mut r = SplitMix64::new(hand ^ 0xA1FA_7000_0000_0000 ^ ((step as u64) << 20) ^ k as u64);
    r.next_u64()
}

/// AIVAT's value of one played hand (module docs) for player 0: `history` is the whole hand
/// (chance outcomes included), `probs` the acting policy's probabilities at each decision in
/// order, `value` the estimate, `seed` the hand's seed for sampled expectations (drawn
/// independently of the hand's own chance outcomes).
pub fn aivat_hand(
    game: &dyn Game,
    history: &[usize],
    probs: &[DecisionProbs],
    value: &dyn ValueEstimate,
    opts: AivatOptions,
    seed: u64,
) -> Result<f64, PolicyError> {
    let hand = Hand { value, opts, seed };
    let mut state = game.new_initial_state();
    let mut decisions = probs.iter();
    let mut correction = 0.0;
    // V̂ of the current state, computed when it was reached.
    let mut current = hand.values(&[state.clone_box()], &[seed_of(hand.seed, 0, 0)])?[0];
    let mut step = 0;
    while !state.is_terminal() {
        step += 1;
        match state.turn() {
            Turn::Chance => {
                // Follow the actual run to the next decision or terminal.
                while state.turn() == Turn::Chance {
                    state.apply_action(history[state.history().len()]);
                }
                let reached = hand.values(&[state.clone_box()], &[0])?[0];
                correction += current - reached;
                current = reached;
            }
            Turn::Player(_) => {
                let legal = state.legal_actions();
                let pi = decisions.next().ok_or_else(|| PolicyError::Failed {
                    policy: value.name(),
                    reason: "fewer recorded decisions than the hand has".into(),
                })?;
                let taken = history[state.history().len()];
                let children: Vec<Box<dyn State>> = legal
                    .iter()
                    .map(|&a| {
                        let mut c = state.clone_box();
                        c.apply_action(a);
                        c
                    })
                    .collect();
                let seeds: Vec<u64> = (0..legal.len())
                    .map(|k| seed_of(hand.seed, step, k))
                    .collect();
                let v = hand.values(&children, &seeds)?;
                let expected: f64 = pi.iter().zip(&v).map(|(p, v)| p * v).sum();
                let k = legal
                    .iter()
                    .position(|&a| a == taken)
                    .expect("the taken action is legal");
                correction += expected - v[k];
                current = v[k];
                state.apply_action(taken);
            }
            Turn::Terminal => unreachable!(),
        }
    }
    Ok(state.returns()[0] + correction)
}
