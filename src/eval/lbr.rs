//! Local Best Response (LBR) for heads-up no-limit Hold'em: a cheap lower bound on how much
//! a policy can be exploited, where exact best responses are out of reach.
//!
//! LBR is the exploiter of Lisý & Bowling, *Equilibrium Approximation Quality of Current
//! No-Limit Poker Bots* (2017, arXiv:1612.07547), as used by the ARMAC paper (Gruslys et al.,
//! *The Advantage Regret-Matching Actor-Critic*, 2020, section 4.1) to evaluate FCPA policies:
//! LBR plays real hands against the policy and at each of its decisions takes the action that
//! maximises a one-step lookahead value, computed from the opponent's range and the policy.
//!
//! # The opponent range (Bayes' rule)
//!
//! LBR keeps a weight `r(h)` for each of the 1326 opponent hole-card hands `h`. At the start of
//! a hand `r(h) = 1` for every hand that shares no card with LBR's hole cards, 0 otherwise;
//! every dealt board card zeroes the hands that hold it (card removal). When the opponent
//! takes action `a` at state `s`, the policy is queried for every hand of the range in one
//! batched call ([`RangePolicy`]) and
//!
//! ```text
//! r'(h) = r(h) * π(a | s, h) / Σ_g r(g) * π(a | s, g)        (Bayes' rule)
//! ```
//!
//! The range is read only by LBR's decisions that can fold or raise, so these updates are
//! deferred until such a decision comes (in order; the product is the same). The opponent's
//! decisions after the last of them in a hand (all of them when LBR-FC never faces a bet)
//! cost one query for the opponent's actual hand and none for the range.
//!
//! # The decision (Lisý & Bowling 2017, Algorithm 1)
//!
//! Let `pot = c_me + c_opp` be the chips both players have put in, `asked = c_opp − c_me`
//! what LBR must add to call, and `wp` LBR's probability of winning at a showdown (ties count
//! one half) against the current range when no more chips go in ("checked down"). Values are
//! measured relative to folding now, whose value is 0 (a decision where LBR can neither fold
//! nor raise is a call, with no `wp` computed):
//!
//! ```text
//! U(fold)  = 0
//! U(call)  = wp * pot − (1 − wp) * asked
//! U(raise) = fp * pot + (1 − fp) * (wp * (pot + x) − (1 − wp) * (asked + x))
//! ```
//!
//! where a raise makes LBR's total contribution `R` (read from the game engine after applying
//! the raise), `x = R − c_opp` is what the opponent must add to call it, and
//! `fp = Σ_h r(h) π(fold | s·raise, h) / Σ_h r(h)` is the range's fold probability, from one
//! batched policy query at the state after the raise. A raise that is called is valued with
//! the same `wp` against the whole range, as in the formula above (some implementations
//! recompute `wp` against the hands that do not fold; this one does not). These are exact
//! chip accounting: winning a showdown after the raise gains `c_opp + x + c_me =
//! pot + x` over folding now, losing it costs the further `asked + x`, and a tie is worth the
//! average of the two, so counting ties as one half in `wp` is exact. LBR takes the action of
//! largest `U` among those its variant allows (first of call, pot, all-in on ties) if that
//! value is positive, and otherwise folds (checks when folding is not legal).
//!
//! Variants ([`LbrVariant`]): LBR-FC may only fold or call; LBR-FCPA uses all four FCPA
//! actions; LBR-FC12-FCPA34 folds or calls in the first two rounds (pre-flop, flop) and uses
//! FCPA on the turn and river. The opponent always plays its full policy.
//!
//! # Computing `wp`
//!
//! `wp = Σ_h r(h) eq(h) / Σ_h r(h)` over hands `h` compatible with LBR's cards and the board,
//! where `eq(h)` is LBR's showdown equity against `h` with the rest of the board uniform over
//! the cards left:
//! * **river**: one comparison per opponent hand;
//! * **turn**: exact, all 44 rivers for each opponent hand;
//! * **flop**: exact, all 45 · 44 ordered (turn, river) runouts for each opponent hand, using
//!   the enumeration state machine of [`HandStateMachine`] (one contiguous row of 52 river
//!   ranks per hand and turn card), about 50,000 rows per decision;
//! * **pre-flop**: sampled. [`LbrOptions::preflop_samples`] (default 10,000) independent pairs
//!   (opponent hand `h ~ r`, five board cards uniform from the 48 left) give an unbiased
//!   estimate with standard error at most `0.5 / sqrt(samples)` (0.005 by default); an error
//!   `δ` in `wp` can only change a decision whose values differ by less than `δ` times the
//!   stakes. The samples come from a generator seeded by the hand's seed, so results are
//!   reproducible. (Exact pre-flop enumeration, 1.7 million boards per opponent hand, is out of
//!   reach per decision, and a tabulated hand-vs-hand table would need as much to build.)
//!
//! # Play and results
//!
//! Hands are played with the real game engine: chance deals, the opponent samples its action
//! from the policy's probabilities for its actual hand, LBR acts as above. Hands come in
//! groups of four sharing one deal (two hole-card pairs `X`, `Y` and a five-card board): LBR
//! plays both seats with both card assignments (`P0 = X, P1 = Y` and `P0 = Y, P1 = X`), which
//! balances seats and cards and cancels much of the luck of the deal. The number of hands is
//! rounded up to a multiple of 4. Each deal has its own seed derived from the run seed and the
//! deal index, and deals are played in parallel (rayon), so results do not depend on the
//! number of threads. The result is the mean of LBR's winnings in chips per hand and in
//! milli-big-blinds per hand (`mbb = 1000 * chips / big blind`), with a 95% confidence
//! interval `1.96 * sd / sqrt(n)` where `n` is the number of deals and `sd` the sample
//! standard deviation of the per-deal means (the four hands of a deal are not independent).
//!
//! # Checks
//!
//! Against a policy that always folds when facing a bet (and checks otherwise), every deal
//! is worth exactly: as big blind LBR wins the small blind (50 chips) at once; as small blind
//! LBR-FC calls and the hand is checked down, and the two card assignments of the deal cancel
//! exactly, so LBR-FC wins 25 chips = 250 mbb per hand; once LBR may raise it raises and wins
//! the big blind (100 chips), 75 chips = 750 mbb per hand (LBR-FC12-FCPA34 checks to the turn
//! and then bets, or checks down a hand that wins against every hand, also +100).

use crate::game::{Action, Player, State, Turn};
use crate::games::cards::{CardSet, HOLE_CARDS, HOLE_MASKS, NUM_CARDS, NUM_HOLE_HANDS};
use crate::games::hand_eval::{HandKey, HandStateMachine};
use crate::games::universal_poker::{
    ALL_IN, Abstraction, BET, CALL, Config, FOLD, UniversalPokerGame, UniversalPokerState,
};
use crate::policy::{FirstLegalPolicy, Policy, PolicyError, UniformPolicy};
use crate::util::SplitMix64;
use rayon::prelude::*;
use serde::Serialize;
use std::fmt;
use std::time::Instant;

/// Action probabilities of one decision indexed by action id (0 fold, 1 check/call, 2 pot
/// raise, 3 all-in); illegal actions have probability 0.
pub type ActionProbs = [f64; 4];

/// Default number of sampled (hand, board) pairs for pre-flop equities.
pub const DEFAULT_PREFLOP_SAMPLES: usize = 10_000;

/// Errors of an LBR evaluation.
#[derive(Debug, thiserror::Error)]
pub enum LbrError {
    /// The game is not heads-up Hold'em with the FC or FCPA abstraction.
    #[error(
        "LBR needs heads-up Texas Hold'em (universal_poker with 4 suits, 13 ranks, 2 hole cards, 4 rounds, board 0 3 1 1, fc or fcpa actions): {0}"
    )]
    UnsupportedGame(String),
    /// The policy failed (e.g. a tabular policy misses an information state).
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The policy returned probabilities that cannot be used.
    #[error(
        "policy {policy} returned unusable probabilities {probs:?} at history [{history}]: {reason}"
    )]
    BadProbabilities {
        /// The policy's name.
        policy: String,
        /// The offending probabilities.
        probs: ActionProbs,
        /// Where.
        history: String,
        /// What is wrong.
        reason: String,
    },
    /// Bad options (zero hands, a thread pool that cannot start).
    #[error("{0}")]
    Options(String),
}

/// Which actions LBR may take in each round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum LbrVariant {
    /// Fold or call in every round.
    Fc,
    /// Fold, call, pot raise or all-in in every round.
    Fcpa,
    /// Fold or call pre-flop and on the flop; FCPA on the turn and river.
    Fc12Fcpa34,
}

impl LbrVariant {
    /// All variants.
    pub const ALL: [LbrVariant; 3] = [LbrVariant::Fc, LbrVariant::Fcpa, LbrVariant::Fc12Fcpa34];

    /// Parses `fc`, `fcpa` or `fc12-fcpa34` (case-insensitive, `lbr-` prefix optional).
    pub fn parse(text: &str) -> Option<LbrVariant> {
        let t = text.trim().to_ascii_lowercase();
        let t = t.strip_prefix("lbr-").unwrap_or(&t);
        match t {
            "fc" => Some(LbrVariant::Fc),
            "fcpa" => Some(LbrVariant::Fcpa),
            "fc12-fcpa34" | "fc12fcpa34" | "fc12_fcpa34" => Some(LbrVariant::Fc12Fcpa34),
            _ => None,
        }
    }

    /// The short name: `fc`, `fcpa` or `fc12-fcpa34`.
    pub fn name(self) -> &'static str {
        match self {
            LbrVariant::Fc => "fc",
            LbrVariant::Fcpa => "fcpa",
            LbrVariant::Fc12Fcpa34 => "fc12-fcpa34",
        }
    }

    /// Bits (`1 << action`) of the actions LBR may consider in `round` (0 = pre-flop).
    pub fn action_mask(self, round: usize) -> u8 {
        const FC: u8 = (1 << FOLD) | (1 << CALL);
        const FCPA: u8 = FC | (1 << BET) | (1 << ALL_IN);
        match self {
            LbrVariant::Fc => FC,
            LbrVariant::Fcpa => FCPA,
            LbrVariant::Fc12Fcpa34 if round < 2 => FC,
            LbrVariant::Fc12Fcpa34 => FCPA,
        }
    }

    /// Whether LBR ever raises.
    pub fn raises(self) -> bool {
        self != LbrVariant::Fc
    }
}

impl fmt::Display for LbrVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

// ---------------------------------------------------------------------------------------
// Policies over ranges.
// ---------------------------------------------------------------------------------------

/// A policy queried for many hands at once: what range-based evaluators such as LBR need.
/// Networks implement it directly to evaluate a whole range in one batch; any [`Policy`] can
/// be used through [`PerHand`].
pub trait RangePolicy: Send + Sync {
    /// For each hole-card index in `hands` (see [`crate::games::cards::hole_index`]), the
    /// action probabilities of the player to move at `state` if that player held that hand,
    /// indexed by action id with 0 for illegal actions. Hands must not share a card with the
    /// board or the other player's hole cards.
    fn hand_action_probabilities(
        &self,
        state: &UniversalPokerState,
        hands: &[u16],
    ) -> Result<Vec<ActionProbs>, PolicyError>;

    /// A short human-readable name (for logs).
    fn name(&self) -> String;
}

/// Adapts any [`Policy`] to [`RangePolicy`]: for each hand, the hand's cards replace the
/// player's hole cards in a replay of the state ([`with_hole_cards`]) and the policy is
/// queried on that state.
#[derive(Clone, Debug, Default)]
pub struct PerHand<P>(pub P);

impl<P: Policy> RangePolicy for PerHand<P> {
    fn hand_action_probabilities(
        &self,
        state: &UniversalPokerState,
        hands: &[u16],
    ) -> Result<Vec<ActionProbs>, PolicyError> {
        let player = match state.turn() {
            Turn::Player(p) => p,
            _ => return Err(PolicyError::NotADecision),
        };
        let mut out = Vec::with_capacity(hands.len());
        for &h in hands {
            let s = with_hole_cards(state, player, h as usize).ok_or_else(|| {
                PolicyError::BadEntry {
                    key: format!("hand {h}"),
                    reason: "the hand collides with cards already dealt".into(),
                }
            })?;
            let legal = s.legal_actions();
            let probs = self.0.action_probabilities(&s)?;
            if probs.len() != legal.len() {
                return Err(PolicyError::BadEntry {
                    key: s.information_state_string(player),
                    reason: format!(
                        "{} probabilities for {} legal actions",
                        probs.len(),
                        legal.len()
                    ),
                });
            }
            let mut row = [0.0; 4];
            for (&a, &p) in legal.iter().zip(&probs) {
                if a < 4 {
                    row[a] = p;
                }
            }
            out.push(row);
        }
        Ok(out)
    }

    fn name(&self) -> String {
        self.0.name()
    }
}

/// The state with `player`'s hole cards replaced by hand `hand` (a hole-card index), replayed
/// from the root: the other player's cards, the board and the betting are unchanged. `None`
/// if the player's cards are not dealt yet or the hand collides with another dealt card.
/// Needs a full 52-card deck (chance outcome = card id).
pub fn with_hole_cards(
    state: &UniversalPokerState,
    player: Player,
    hand: usize,
) -> Option<UniversalPokerState> {
    let (a, b) = HOLE_CARDS[hand];
    let history = state.history();
    let (i0, i1) = (2 * player, 2 * player + 1);
    if history.len() <= i1 {
        return None;
    }
    let mut s = state.clone();
    s.reset();
    for (i, &x) in history.iter().enumerate() {
        let x = if i == i0 {
            a as Action
        } else if i == i1 {
            b as Action
        } else {
            x
        };
        if s.turn() == Turn::Chance && (x >= 64 || s.chance_mask() >> x & 1 == 0) {
            return None;
        }
        s.apply(x);
    }
    Some(s)
}

/// Probabilities of a hand-independent policy, copied for every hand.
fn same_for_all(row: ActionProbs, n: usize) -> Vec<ActionProbs> {
    vec![row; n]
}

fn require_decision(state: &UniversalPokerState) -> Result<u8, PolicyError> {
    match state.turn() {
        Turn::Player(_) => Ok(state.legal_mask()),
        _ => Err(PolicyError::NotADecision),
    }
}

impl RangePolicy for UniformPolicy {
    fn hand_action_probabilities(
        &self,
        state: &UniversalPokerState,
        hands: &[u16],
    ) -> Result<Vec<ActionProbs>, PolicyError> {
        let mask = require_decision(state)?;
        let n = mask.count_ones() as f64;
        let row = std::array::from_fn(|a| if mask >> a & 1 == 1 { 1.0 / n } else { 0.0 });
        Ok(same_for_all(row, hands.len()))
    }

    fn name(&self) -> String {
        Policy::name(self)
    }
}

impl RangePolicy for FirstLegalPolicy {
    fn hand_action_probabilities(
        &self,
        state: &UniversalPokerState,
        hands: &[u16],
    ) -> Result<Vec<ActionProbs>, PolicyError> {
        let mask = require_decision(state)?;
        let mut row = [0.0; 4];
        row[mask.trailing_zeros() as usize] = 1.0;
        Ok(same_for_all(row, hands.len()))
    }

    fn name(&self) -> String {
        Policy::name(self)
    }
}

/// Always checks or calls (poker's "calling station").
#[derive(Clone, Copy, Debug, Default)]
pub struct AlwaysCall;

impl Policy for AlwaysCall {
    fn action_probabilities(&self, state: &dyn State) -> Result<Vec<f64>, PolicyError> {
        if !matches!(state.turn(), Turn::Player(_)) {
            return Err(PolicyError::NotADecision);
        }
        Ok(state
            .legal_actions()
            .iter()
            .map(|&a| if a == CALL { 1.0 } else { 0.0 })
            .collect())
    }

    fn name(&self) -> String {
        "always-call".into()
    }
}

impl RangePolicy for AlwaysCall {
    fn hand_action_probabilities(
        &self,
        state: &UniversalPokerState,
        hands: &[u16],
    ) -> Result<Vec<ActionProbs>, PolicyError> {
        require_decision(state)?;
        Ok(same_for_all([0.0, 1.0, 0.0, 0.0], hands.len()))
    }

    fn name(&self) -> String {
        Policy::name(self)
    }
}

/// Folds whenever folding is legal (facing a bet), checks otherwise.
#[derive(Clone, Copy, Debug, Default)]
pub struct AlwaysFold;

impl Policy for AlwaysFold {
    fn action_probabilities(&self, state: &dyn State) -> Result<Vec<f64>, PolicyError> {
        if !matches!(state.turn(), Turn::Player(_)) {
            return Err(PolicyError::NotADecision);
        }
        let legal = state.legal_actions();
        let target = if legal.contains(&FOLD) { FOLD } else { CALL };
        Ok(legal
            .iter()
            .map(|&a| if a == target { 1.0 } else { 0.0 })
            .collect())
    }

    fn name(&self) -> String {
        "always-fold".into()
    }
}

impl RangePolicy for AlwaysFold {
    fn hand_action_probabilities(
        &self,
        state: &UniversalPokerState,
        hands: &[u16],
    ) -> Result<Vec<ActionProbs>, PolicyError> {
        let mask = require_decision(state)?;
        let row = if mask & (1 << FOLD) != 0 {
            [1.0, 0.0, 0.0, 0.0]
        } else {
            [0.0, 1.0, 0.0, 0.0]
        };
        Ok(same_for_all(row, hands.len()))
    }

    fn name(&self) -> String {
        Policy::name(self)
    }
}

// ---------------------------------------------------------------------------------------
// Ranges.
// ---------------------------------------------------------------------------------------

/// The opponent's range: a non-negative weight per hole-card index (normalised to sum 1).
#[derive(Clone, Debug, PartialEq)]
pub struct Range {
    weights: Vec<f64>,
}

impl Range {
    /// Uniform over the hands that share no card with `known` (the observer's cards and the
    /// board), zero on the others.
    pub fn uniform(known: CardSet) -> Range {
        let mut r = Range {
            weights: HOLE_MASKS
                .iter()
                .map(|&m| if m & known.0 == 0 { 1.0 } else { 0.0 })
                .collect(),
        };
        r.normalize();
        r
    }

    /// The weights, indexed by hole-card index (1326 of them).
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// Card removal: zeroes every hand holding a card of `cards`, then renormalises.
    pub fn remove_cards(&mut self, cards: CardSet) {
        for (w, &m) in self.weights.iter_mut().zip(HOLE_MASKS.iter()) {
            if m & cards.0 != 0 {
                *w = 0.0;
            }
        }
        self.normalize();
    }

    /// Bayes' rule after an observed action: `r(h) ← r(h) * likelihood[i]` for `h =
    /// hands[i]` (hands not listed must have weight 0), then renormalises. Returns the
    /// probability of the observation under the prior, `Σ r(h) * likelihood(h)`; when it is
    /// 0 the range is left unchanged.
    pub fn update(&mut self, hands: &[u16], likelihood: &[f64]) -> f64 {
        assert_eq!(hands.len(), likelihood.len());
        let evidence: f64 = hands
            .iter()
            .zip(likelihood)
            .map(|(&h, &l)| self.weights[h as usize] * l)
            .sum();
        if evidence > 0.0 && evidence.is_finite() {
            for (&h, &l) in hands.iter().zip(likelihood) {
                self.weights[h as usize] *= l / evidence;
            }
        }
        evidence
    }

    /// The hands with positive weight, ascending.
    pub fn support(&self) -> Vec<u16> {
        (0..NUM_HOLE_HANDS as u16)
            .filter(|&h| self.weights[h as usize] > 0.0)
            .collect()
    }

    /// `Σ r(h) * p(h) / Σ r(h)` over `hands` (e.g. the range's fold probability).
    pub fn average(&self, hands: &[u16], p: impl Fn(usize) -> f64) -> f64 {
        let (mut num, mut den) = (0.0, 0.0);
        for (i, &h) in hands.iter().enumerate() {
            let w = self.weights[h as usize];
            num += w * p(i);
            den += w;
        }
        if den > 0.0 { num / den } else { 0.0 }
    }

    fn normalize(&mut self) {
        let total: f64 = self.weights.iter().sum();
        if total > 0.0 {
            self.weights.iter_mut().for_each(|w| *w /= total);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Equity.
// ---------------------------------------------------------------------------------------

/// Twice the showdown result of ranks `ours` vs `theirs`: 2 win, 1 tie, 0 loss.
#[inline(always)]
fn pair_score(ours: u16, theirs: u16) -> u32 {
    2 * (ours > theirs) as u32 + (ours == theirs) as u32
}

/// `Σ_r valid[r] * pair_score(ours[r], theirs[r])` over the 52 river cards.
#[inline(always)]
fn row_score(ours: &[u16; 52], theirs: &[u16; 52], valid: &[u16; 52]) -> u32 {
    let mut s = 0u32;
    for r in 0..NUM_CARDS {
        let v = valid[r] as u32;
        s += v * (2 * (ours[r] > theirs[r]) as u32 + (ours[r] == theirs[r]) as u32);
    }
    s
}

fn machine_state(m: &HandStateMachine, cards: &[u8]) -> usize {
    cards
        .iter()
        .fold(HandStateMachine::ROOT, |s, &c| m.step(s, c))
}

fn row52(row: &[u16]) -> &[u16; 52] {
    row.try_into().expect("state machine rows have 52 entries")
}

/// LBR's probability `wp` of winning a checked-down showdown (ties one half) with `hole`
/// on `board` (0, 3, 4 or 5 cards) against the opponent range `range` (1326 weights, need
/// not be normalised; hands colliding with `hole` or `board` are ignored). Exact from the
/// flop on; pre-flop estimated from `preflop_samples` sampled (hand, board) pairs drawn with
/// `rng` (see the module docs). Returns 0.5 when no hand of the range is compatible.
pub fn win_probability(
    hole: (u8, u8),
    board: &[u8],
    range: &[f64],
    preflop_samples: usize,
    rng: &mut SplitMix64,
) -> f64 {
    assert_eq!(range.len(), NUM_HOLE_HANDS, "a range has 1326 weights");
    let dead = CardSet::from_cards(board).with(hole.0).with(hole.1);
    let m = HandStateMachine::get();
    let mut valid = [0u16; 52];
    for (c, v) in valid.iter_mut().enumerate() {
        *v = (!dead.contains(c as u8)) as u16;
    }
    let alive: Vec<u8> = (0..NUM_CARDS as u8)
        .filter(|&c| !dead.contains(c))
        .collect();
    // Numerator and denominator of Σ r(h) eq(h) / Σ r(h).
    let (mut num, mut den) = (0.0f64, 0.0f64);
    let compatible = |h: usize| range[h] > 0.0 && HOLE_MASKS[h] & dead.0 == 0;
    match board.len() {
        5 => {
            let s5 = machine_state(m, board);
            let ours = m.rank7(m.step(s5, hole.0), hole.1);
            for h in (0..NUM_HOLE_HANDS).filter(|&h| compatible(h)) {
                let (a, b) = HOLE_CARDS[h];
                let theirs = m.rank7(m.step(s5, a), b);
                num += range[h] * pair_score(ours, theirs) as f64 / 2.0;
                den += range[h];
            }
        }
        4 => {
            let s4 = machine_state(m, board);
            let ours = row52(m.rank7_row(m.step(m.step(s4, hole.0), hole.1)));
            let rivers = (alive.len() - 2) as f64; // 44
            for h in (0..NUM_HOLE_HANDS).filter(|&h| compatible(h)) {
                let (a, b) = HOLE_CARDS[h];
                let theirs = row52(m.rank7_row(m.step(m.step(s4, a), b)));
                let mut s = row_score(ours, theirs, &valid);
                for r in [a, b] {
                    s -= pair_score(ours[r as usize], theirs[r as usize]);
                }
                num += range[h] * s as f64 / (2.0 * rivers);
                den += range[h];
            }
        }
        3 => {
            let s3 = machine_state(m, board);
            let s5 = m.step(m.step(s3, hole.0), hole.1);
            let mut ours = vec![[0u16; 52]; NUM_CARDS];
            for &t in &alive {
                ours[t as usize] = *row52(m.rank7_row(m.step(s5, t)));
            }
            let runouts = ((alive.len() - 2) * (alive.len() - 3)) as f64; // 45 * 44
            for h in (0..NUM_HOLE_HANDS).filter(|&h| compatible(h)) {
                let (a, b) = HOLE_CARDS[h];
                let sh = m.step(m.step(s3, a), b);
                let mut s = 0u32;
                for &t in &alive {
                    if t == a || t == b {
                        continue;
                    }
                    let o = &ours[t as usize];
                    let theirs = row52(m.rank7_row(m.step(sh, t)));
                    s += row_score(o, theirs, &valid);
                    for r in [a, b, t] {
                        s -= pair_score(o[r as usize], theirs[r as usize]);
                    }
                }
                num += range[h] * s as f64 / (2.0 * runouts);
                den += range[h];
            }
        }
        0 => return preflop_win_probability(hole, range, preflop_samples, rng),
        n => panic!("win_probability: a board has 0, 3, 4 or 5 cards, not {n}"),
    }
    if den > 0.0 { num / den } else { 0.5 }
}

/// Pre-flop `wp` by sampling (opponent hand ~ range, board uniform): see the module docs.
fn preflop_win_probability(
    hole: (u8, u8),
    range: &[f64],
    samples: usize,
    rng: &mut SplitMix64,
) -> f64 {
    let ours_mask = CardSet::EMPTY.with(hole.0).with(hole.1);
    let mut hands = Vec::with_capacity(NUM_HOLE_HANDS);
    let mut weights = Vec::with_capacity(NUM_HOLE_HANDS);
    for h in 0..NUM_HOLE_HANDS {
        if range[h] > 0.0 && HOLE_MASKS[h] & ours_mask.0 == 0 {
            hands.push(h as u16);
            weights.push(range[h]);
        }
    }
    if hands.is_empty() || samples == 0 {
        return 0.5;
    }
    let alias = AliasTable::new(&weights);
    // Keys are drawn in batches and ranked in a second loop, so that the rank-table look-ups
    // (cache misses in a 37 MB table) of a batch overlap instead of waiting on each other.
    const BATCH: usize = 64;
    let mut keys = [(HandKey::EMPTY, HandKey::EMPTY); BATCH];
    let mut score = 0u64;
    let mut done = 0;
    while done < samples {
        let n = BATCH.min(samples - done);
        for k in &mut keys[..n] {
            let (a, b) = HOLE_CARDS[hands[alias.sample(rng)] as usize];
            let mut dead = ours_mask.with(a).with(b);
            let mut board = HandKey::EMPTY;
            for _ in 0..5 {
                let c = loop {
                    let c = rng.below(NUM_CARDS) as u8;
                    if !dead.contains(c) {
                        break c;
                    }
                };
                dead.insert(c);
                board = board.with(c);
            }
            *k = (board.with(hole.0).with(hole.1), board.with(a).with(b));
        }
        for &(ours, theirs) in &keys[..n] {
            score += pair_score(ours.rank(), theirs.rank()) as u64;
        }
        done += n;
    }
    score as f64 / (2.0 * samples as f64)
}

/// Walker's alias method: O(1) draws from a fixed discrete distribution.
struct AliasTable {
    prob: Vec<f64>,
    alias: Vec<u32>,
}

impl AliasTable {
    /// A table for non-negative `weights` with a positive sum.
    fn new(weights: &[f64]) -> AliasTable {
        let n = weights.len();
        let total: f64 = weights.iter().sum();
        let mut prob: Vec<f64> = weights.iter().map(|w| w * n as f64 / total).collect();
        let mut alias: Vec<u32> = (0..n as u32).collect();
        let (mut small, mut large): (Vec<u32>, Vec<u32>) =
            (0..n as u32).partition(|&i| prob[i as usize] < 1.0);
        while let (Some(s), Some(&l)) = (small.pop(), large.last()) {
            alias[s as usize] = l;
            prob[l as usize] -= 1.0 - prob[s as usize];
            if prob[l as usize] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        // Leftovers are 1 up to rounding.
        for i in small.into_iter().chain(large) {
            prob[i as usize] = 1.0;
        }
        AliasTable { prob, alias }
    }

    /// An index drawn with probability proportional to its weight.
    #[inline]
    fn sample(&self, rng: &mut SplitMix64) -> usize {
        let x = rng.next_f64() * self.prob.len() as f64;
        let i = (x as usize).min(self.prob.len() - 1);
        if x - (i as f64) < self.prob[i] {
            i
        } else {
            self.alias[i] as usize
        }
    }
}

// ---------------------------------------------------------------------------------------
// The LBR decision.
// ---------------------------------------------------------------------------------------

/// Lisý & Bowling's values of calling and of raises (module docs), relative to folding now.
/// `raises` lists `(x, fp)`: what the opponent must add to call the raise and the range's
/// fold probability. Returns `U(call)` and one `U` per raise.
pub fn lbr_utilities(pot: f64, asked: f64, wp: f64, raises: &[(f64, f64)]) -> (f64, Vec<f64>) {
    let call = wp * pot - (1.0 - wp) * asked;
    let raise = raises
        .iter()
        .map(|&(x, fp)| fp * pot + (1.0 - fp) * (wp * (pot + x) - (1.0 - wp) * (asked + x)))
        .collect();
    (call, raise)
}

/// Everything one LBR hand needs besides the state.
struct HandCtx<'a> {
    policy: &'a dyn RangePolicy,
    variant: LbrVariant,
    preflop_samples: usize,
    /// [`LbrOptions::defer_range_updates`].
    defer: bool,
}

/// LBR's action at `state` (LBR = `me` to move, holding `hole`, opponent range `range`).
fn lbr_action(
    ctx: &HandCtx,
    state: &UniversalPokerState,
    me: Player,
    hole: (u8, u8),
    range: &Range,
    rng: &mut SplitMix64,
) -> Result<Action, LbrError> {
    let round = state.betting().round as usize;
    let legal = state.legal_mask();
    let allowed = legal & ctx.variant.action_mask(round);
    let c = state.contributions();
    let (c_me, c_opp) = (c[me] as f64, c[1 - me] as f64);
    let pot = c_me + c_opp;
    let asked = c_opp - c_me;
    let wp = win_probability(
        hole,
        state.board_cards(),
        range.weights(),
        ctx.preflop_samples,
        rng,
    );
    let mut raises = Vec::new();
    let mut raise_actions = Vec::new();
    for a in [BET, ALL_IN] {
        if allowed >> a & 1 == 0 {
            continue;
        }
        let mut child = state.clone();
        child.apply(a);
        let x = child.contributions()[me] as f64 - c_opp;
        let hands = range.support();
        let probs = ctx.policy.hand_action_probabilities(&child, &hands)?;
        check_len(ctx, &child, &hands, &probs)?;
        let fp = range.average(&hands, |i| probs[i][FOLD]);
        raises.push((x, fp));
        raise_actions.push(a);
    }
    let (u_call, u_raise) = lbr_utilities(pot, asked, wp, &raises);
    let (mut best, mut best_u) = (CALL, u_call);
    for (&a, &u) in raise_actions.iter().zip(&u_raise) {
        if u > best_u {
            best = a;
            best_u = u;
        }
    }
    if best_u > 0.0 || legal & (1 << FOLD) == 0 {
        Ok(best)
    } else {
        Ok(FOLD)
    }
}

fn check_len(
    ctx: &HandCtx,
    state: &UniversalPokerState,
    hands: &[u16],
    probs: &[ActionProbs],
) -> Result<(), LbrError> {
    if probs.len() == hands.len() {
        return Ok(());
    }
    Err(LbrError::BadProbabilities {
        policy: ctx.policy.name(),
        probs: [f64::NAN; 4],
        history: crate::game::history_string(state.history()),
        reason: format!("{} rows for {} hands", probs.len(), hands.len()),
    })
}

/// Whether LBR's decision at `state` reads the opponent's range: it does when LBR may fold
/// (it faces a bet) or its variant lets it raise; otherwise LBR calls (checks).
fn needs_range(variant: LbrVariant, state: &UniversalPokerState) -> bool {
    let legal = state.legal_mask();
    let round = state.betting().round as usize;
    legal & (1 << FOLD) != 0
        || legal & variant.action_mask(round) & ((1 << BET) | (1 << ALL_IN)) != 0
}

/// The opponent's move: its action sampled from the policy's probabilities for its actual
/// hand `actual` (a query for that hand alone; the range's update waits, see [`update_range`]).
fn opponent_action(
    ctx: &HandCtx,
    state: &UniversalPokerState,
    actual: u16,
    rng: &mut SplitMix64,
) -> Result<Action, LbrError> {
    let hands = [actual];
    let probs = ctx.policy.hand_action_probabilities(state, &hands)?;
    check_len(ctx, state, &hands, &probs)?;
    let legal = state.legal_mask();
    let mut own = probs[0];
    let bad = |reason: &str| LbrError::BadProbabilities {
        policy: ctx.policy.name(),
        probs: probs[0],
        history: crate::game::history_string(state.history()),
        reason: reason.to_string(),
    };
    for (a, p) in own.iter_mut().enumerate() {
        if !p.is_finite() || *p < 0.0 {
            return Err(bad("negative or non-finite probability"));
        }
        if legal >> a & 1 == 0 {
            *p = 0.0;
        }
    }
    if own.iter().sum::<f64>() <= 0.0 {
        return Err(bad("no probability on a legal action"));
    }
    Ok(rng.weighted(&own))
}

/// Bayes' update of the opponent's range for its action `action` at `state` (one batched
/// query for the range's hands), `actual` being the hand it holds.
fn update_range(
    ctx: &HandCtx,
    state: &UniversalPokerState,
    action: Action,
    actual: u16,
    range: &mut Range,
) -> Result<(), LbrError> {
    let hands = range.support();
    let probs = ctx.policy.hand_action_probabilities(state, &hands)?;
    check_len(ctx, state, &hands, &probs)?;
    let likelihood: Vec<f64> = probs.iter().map(|p| p[action].max(0.0)).collect();
    if range.update(&hands, &likelihood) <= 0.0 {
        // Only the actual hand can have taken the action with positive probability, but the
        // range gave it no weight (underflow): restart from the actual hand alone.
        range.weights.fill(0.0);
        range.weights[actual as usize] = 1.0;
    }
    Ok(())
}

/// Plays one hand with the dealt cards `cards` (P0's two hole cards, P1's two, then the five
/// board cards in deal order); LBR sits in `seat`. Returns LBR's winnings in chips.
fn play_hand(
    ctx: &HandCtx,
    game: &UniversalPokerGame,
    seat: Player,
    cards: &[u8; 9],
    rng: &mut SplitMix64,
) -> Result<f64, LbrError> {
    let mut state = game.initial_state();
    let opp = 1 - seat;
    let hole = (cards[2 * seat], cards[2 * seat + 1]);
    let opp_hand = crate::games::cards::hole_index(cards[2 * opp], cards[2 * opp + 1]) as u16;
    let mut range = Range::uniform(CardSet::EMPTY.with(hole.0).with(hole.1));
    // The opponent's decisions (state, action) not yet folded into the range.
    let mut pending: Vec<(UniversalPokerState, Action)> = Vec::new();
    let mut dealt = 0usize;
    loop {
        match state.turn() {
            Turn::Terminal => return Ok(state.returns()[seat]),
            Turn::Chance => {
                let c = cards[dealt];
                dealt += 1;
                state.apply(c as Action);
                if dealt > 4 {
                    range.remove_cards(CardSet::single(c));
                }
            }
            Turn::Player(p) if p == seat => {
                let a = if needs_range(ctx.variant, &state) {
                    for (s, a) in pending.drain(..) {
                        update_range(ctx, &s, a, opp_hand, &mut range)?;
                    }
                    lbr_action(ctx, &state, seat, hole, &range, rng)?
                } else {
                    CALL
                };
                state.apply(a);
            }
            Turn::Player(_) => {
                let a = opponent_action(ctx, &state, opp_hand, rng)?;
                if ctx.defer {
                    pending.push((state.clone(), a));
                } else {
                    update_range(ctx, &state, a, opp_hand, &mut range)?;
                }
                state.apply(a);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Runs.
// ---------------------------------------------------------------------------------------

/// Options of an LBR evaluation.
#[derive(Clone, Debug)]
pub struct LbrOptions {
    /// Which actions LBR may take.
    pub variant: LbrVariant,
    /// Number of hands (rounded up to a multiple of 4).
    pub hands: u64,
    /// Run seed; every deal's seed is derived from it.
    pub seed: u64,
    /// Worker threads; 0 = one per core.
    pub threads: usize,
    /// Sampled (hand, board) pairs per pre-flop equity.
    pub preflop_samples: usize,
    /// Fold the opponent's decisions into the range only when an LBR decision reads it (the
    /// default; see the module docs). `false` updates it at every opponent decision (the
    /// benchmark's peer): the same hands are played, with more range queries.
    pub defer_range_updates: bool,
}

impl LbrOptions {
    /// Defaults: [`DEFAULT_PREFLOP_SAMPLES`] pre-flop samples, seed 0, all cores.
    pub fn new(variant: LbrVariant, hands: u64) -> LbrOptions {
        LbrOptions {
            variant,
            hands,
            seed: 0,
            threads: 0,
            preflop_samples: DEFAULT_PREFLOP_SAMPLES,
            defer_range_updates: true,
        }
    }
}

/// The outcome of [`run_lbr`]: LBR's winnings against the policy, averaged over both seats.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LbrResult {
    /// The LBR variant.
    pub variant: String,
    /// The policy's name.
    pub policy: String,
    /// Hands played (a multiple of 4).
    pub hands: u64,
    /// Mean winnings of LBR in chips per hand.
    pub mean_chips: f64,
    /// Half-width of the 95% confidence interval of `mean_chips` (NaN with a single deal).
    pub ci95_chips: f64,
    /// Mean winnings in milli-big-blinds per hand.
    pub mean_mbb: f64,
    /// Half-width of the 95% confidence interval in mbb per hand.
    pub ci95_mbb: f64,
    /// Mean winnings in chips per hand with LBR as player 0 and as player 1.
    pub seat_mean_chips: [f64; 2],
    /// Wall-clock seconds, including building the hand-evaluation tables if this is their
    /// first use in the process (about a second).
    pub seconds: f64,
    /// The run seed.
    pub seed: u64,
    /// LBR's mean winnings in chips over the four hands of each deal, in deal order (deal `d`
    /// is the same cards for every policy evaluated with the same seed).
    #[serde(skip)]
    pub deal_means: Vec<f64>,
}

/// LBR against one policy relative to LBR against a reference policy on the same deals (see
/// [`paired_ratio`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LbrRatio {
    /// `mean(policy) / mean(reference)`.
    pub ratio: f64,
    /// Half-width of its 95% confidence interval (delta method over the paired deals).
    pub ci95: f64,
}

/// The ratio of two LBR results obtained with the same variant, seed and number of hands, so
/// that deal `d` holds the same cards in both, with a 95% confidence interval that uses the
/// pairing: with `x_d`, `y_d` the per-deal means against the policy and the reference and
/// `r = x̄ / ȳ`, the delta method gives `se(r) = sd(x_d − r y_d) / (sqrt(n) |ȳ|)`. Deals that
/// are good for LBR against one policy tend to be good against the other, so this interval is
/// narrower than one built from the two results' own intervals (NaN with a single deal).
/// `None` when the two results do not pair up (other seed, variant or deals) or the
/// reference's mean is 0.
pub fn paired_ratio(result: &LbrResult, reference: &LbrResult) -> Option<LbrRatio> {
    let (x, y) = (&result.deal_means, &reference.deal_means);
    if result.seed != reference.seed
        || result.variant != reference.variant
        || x.len() != y.len()
        || x.is_empty()
    {
        return None;
    }
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    if my == 0.0 {
        return None;
    }
    let ratio = mx / my;
    let var = x
        .iter()
        .zip(y)
        .map(|(a, b)| (a - ratio * b).powi(2))
        .sum::<f64>()
        / (n - 1.0);
    Some(LbrRatio {
        ratio,
        ci95: if x.len() > 1 {
            1.96 * var.sqrt() / (n.sqrt() * my.abs())
        } else {
            f64::NAN
        },
    })
}

/// Checks that LBR can play `game` with `variant`.
pub fn check_game(cfg: &Config, variant: LbrVariant) -> Result<(), LbrError> {
    let holdem = cfg.num_suits == 4
        && cfg.num_ranks == 13
        && cfg.num_hole == 2
        && cfg.num_rounds == 4
        && cfg.num_board == [0, 3, 1, 1]
        && cfg.deck_size == NUM_CARDS
        && cfg.deck.iter().enumerate().all(|(i, &c)| c as usize == i);
    if !holdem {
        return Err(LbrError::UnsupportedGame(cfg.load_string.clone()));
    }
    match cfg.abstraction {
        Abstraction::Fcpa => Ok(()),
        Abstraction::Fc if !variant.raises() => Ok(()),
        Abstraction::Fc => Err(LbrError::UnsupportedGame(format!(
            "variant lbr-{variant} raises, but {} has only fold and call",
            cfg.load_string
        ))),
        Abstraction::FullGame => Err(LbrError::UnsupportedGame(format!(
            "{} uses the fullgame abstraction",
            cfg.load_string
        ))),
    }
}

/// A seed derived from `parts` (SplitMix64 chained over the parts).
fn derive_seed(parts: &[u64]) -> u64 {
    parts.iter().fold(0x243F_6A88_85A3_08D3u64, |acc, &p| {
        SplitMix64::new(acc ^ p.wrapping_mul(0x9E37_79B9_7F4A_7C15)).next_u64()
    })
}

/// Nine distinct cards for a deal: two hole pairs and a board.
fn deal_cards(rng: &mut SplitMix64) -> [u8; 9] {
    let mut used = CardSet::EMPTY;
    std::array::from_fn(|_| {
        loop {
            let c = rng.below(NUM_CARDS) as u8;
            if !used.contains(c) {
                used.insert(c);
                break c;
            }
        }
    })
}

/// Plays deal `deal` of a run (four hands, see the module docs); returns LBR's winnings in
/// chips of the hands (LBR as P0, LBR as P1) with cards as dealt, then the same with the two
/// hole pairs swapped.
pub fn play_deal(
    game: &UniversalPokerGame,
    policy: &dyn RangePolicy,
    opts: &LbrOptions,
    deal: u64,
) -> Result<[f64; 4], LbrError> {
    let ctx = HandCtx {
        policy,
        variant: opts.variant,
        preflop_samples: opts.preflop_samples,
        defer: opts.defer_range_updates,
    };
    let mut rng = SplitMix64::new(derive_seed(&[opts.seed, deal]));
    let cards = deal_cards(&mut rng);
    let mut swapped = cards;
    swapped[..2].copy_from_slice(&cards[2..4]);
    swapped[2..4].copy_from_slice(&cards[..2]);
    let mut out = [0.0; 4];
    for (k, v) in out.iter_mut().enumerate() {
        let deck = if k < 2 { &cards } else { &swapped };
        let mut hand_rng = SplitMix64::new(derive_seed(&[opts.seed, deal, k as u64 + 1]));
        *v = play_hand(&ctx, game, k % 2, deck, &mut hand_rng)?;
    }
    Ok(out)
}

/// Runs LBR against `policy` on `game` (see the module docs). `progress`, if given, is called
/// with the number of hands just finished (from worker threads).
pub fn run_lbr(
    game: &UniversalPokerGame,
    policy: &dyn RangePolicy,
    opts: &LbrOptions,
    progress: Option<&(dyn Fn(u64) + Sync)>,
) -> Result<LbrResult, LbrError> {
    check_game(game.config(), opts.variant)?;
    if opts.hands == 0 {
        return Err(LbrError::Options(
            "the number of hands must be positive".into(),
        ));
    }
    let start = Instant::now();
    HandStateMachine::get();
    let deals = opts.hands.div_ceil(4);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.threads)
        .build()
        .map_err(|e| LbrError::Options(format!("cannot start the thread pool: {e}")))?;
    let values: Vec<[f64; 4]> = pool.install(|| {
        (0..deals)
            .into_par_iter()
            .map(|d| {
                let v = play_deal(game, policy, opts, d);
                if let Some(f) = progress {
                    f(4);
                }
                v
            })
            .collect::<Result<Vec<_>, _>>()
    })?;
    let n = deals as f64;
    let deal_means: Vec<f64> = values.iter().map(|v| v.iter().sum::<f64>() / 4.0).collect();
    let mean = deal_means.iter().sum::<f64>() / n;
    let ci = if deals > 1 {
        let var = deal_means.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (n - 1.0);
        1.96 * var.sqrt() / n.sqrt()
    } else {
        f64::NAN
    };
    let seat = |s: usize| values.iter().map(|v| v[s] + v[s + 2]).sum::<f64>() / (2.0 * n);
    let to_mbb = 1000.0 / game.config().big_blind as f64;
    Ok(LbrResult {
        variant: opts.variant.name().to_string(),
        policy: policy.name(),
        hands: 4 * deals,
        mean_chips: mean,
        ci95_chips: ci,
        mean_mbb: mean * to_mbb,
        ci95_mbb: ci * to_mbb,
        seat_mean_chips: [seat(0), seat(1)],
        seconds: start.elapsed().as_secs_f64(),
        seed: opts.seed,
        deal_means,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::cards::{hole_index, parse_cards};
    use crate::games::hand_eval::evaluate7;

    fn game() -> UniversalPokerGame {
        UniversalPokerGame::hunl_fcpa()
    }

    fn cards(s: &str) -> Vec<u8> {
        parse_cards(s).unwrap()
    }

    fn hole(s: &str) -> (u8, u8) {
        let c = cards(s);
        (c[0], c[1])
    }

    /// A non-uniform range: weight depends on the hand index, some hands zero.
    fn skewed_range(seed: u64) -> Vec<f64> {
        let mut rng = SplitMix64::new(seed);
        (0..NUM_HOLE_HANDS)
            .map(|_| {
                let x = rng.next_f64();
                if x < 0.2 { 0.0 } else { x * x }
            })
            .collect()
    }

    /// Brute force: every compatible opponent hand, every completion of the board, evaluate7.
    fn brute_force_wp(hole: (u8, u8), board: &[u8], range: &[f64]) -> f64 {
        let dead = CardSet::from_cards(board).with(hole.0).with(hole.1);
        let (mut num, mut den) = (0.0, 0.0);
        for h in 0..NUM_HOLE_HANDS {
            if range[h] == 0.0 || HOLE_MASKS[h] & dead.0 != 0 {
                continue;
            }
            let (a, b) = HOLE_CARDS[h];
            let left: Vec<u8> = (0..52u8)
                .filter(|&c| !dead.contains(c) && c != a && c != b)
                .collect();
            let mut completions: Vec<Vec<u8>> = vec![vec![]];
            for _ in board.len()..5 {
                completions = completions
                    .into_iter()
                    .flat_map(|v| {
                        let start = v.last().map_or(0, |&l| l + 1);
                        left.iter()
                            .filter(move |&&c| c >= start)
                            .map(move |&c| {
                                let mut w = v.clone();
                                w.push(c);
                                w
                            })
                            .collect::<Vec<_>>()
                    })
                    .collect();
            }
            let mut score = 0.0;
            for extra in &completions {
                let mut full = board.to_vec();
                full.extend(extra);
                let mut ours = [0u8; 7];
                let mut theirs = [0u8; 7];
                ours[..5].copy_from_slice(&full);
                theirs[..5].copy_from_slice(&full);
                (ours[5], ours[6]) = hole;
                (theirs[5], theirs[6]) = (a, b);
                let (x, y) = (evaluate7(&ours), evaluate7(&theirs));
                score += if x > y {
                    1.0
                } else if x == y {
                    0.5
                } else {
                    0.0
                };
            }
            num += range[h] * score / completions.len() as f64;
            den += range[h];
        }
        num / den
    }

    #[test]
    fn equity_matches_brute_force_river_turn_flop() {
        let mut rng = SplitMix64::new(1);
        let spots = [
            ("AsKd", "2c7h9dTsJc", 3),
            ("7c7d", "2c7h9dTs", 4),
            ("Qh2h", "3h8hKc", 5),
        ];
        for (h, b, seed) in spots {
            let range = skewed_range(seed);
            let fast = win_probability(hole(h), &cards(b), &range, 0, &mut rng);
            let slow = brute_force_wp(hole(h), &cards(b), &range);
            assert!((fast - slow).abs() < 1e-12, "{h} on {b}: {fast} vs {slow}");
        }
        // A river tie: the board plays for everyone.
        let uniform = vec![1.0; NUM_HOLE_HANDS];
        let wp = win_probability(hole("2c3d"), &cards("AsKsQsJsTs"), &uniform, 0, &mut rng);
        assert_eq!(wp, 0.5);
    }

    #[test]
    fn preflop_equity_is_close_to_known_values() {
        let mut rng = SplitMix64::new(7);
        let uniform = vec![1.0; NUM_HOLE_HANDS];
        // AA vs a random hand: 85.2%; 72o: 34.6%; AA vs KK (no shared suits): about 82%.
        let aa = win_probability(hole("AsAh"), &[], &uniform, 40_000, &mut rng);
        assert!((aa - 0.852).abs() < 0.01, "{aa}");
        let trash = win_probability(hole("7c2d"), &[], &uniform, 40_000, &mut rng);
        assert!((trash - 0.346).abs() < 0.01, "{trash}");
        let mut kk = vec![0.0; NUM_HOLE_HANDS];
        kk[hole_index(cards("Kc")[0], cards("Kd")[0])] = 1.0;
        let aa_kk = win_probability(hole("AsAh"), &[], &kk, 40_000, &mut rng);
        assert!((aa_kk - 0.823).abs() < 0.012, "{aa_kk}");
        // Seeded: the same generator state gives the same estimate.
        let a = win_probability(hole("9s8s"), &[], &uniform, 1000, &mut SplitMix64::new(3));
        let b = win_probability(hole("9s8s"), &[], &uniform, 1000, &mut SplitMix64::new(3));
        assert_eq!(a, b);
    }

    #[test]
    fn alias_table_draws_in_proportion() {
        let weights = [0.5, 0.0, 3.0, 1.5, 1e-3, 5.0];
        let table = AliasTable::new(&weights);
        let mut rng = SplitMix64::new(11);
        let n = 400_000;
        let mut counts = [0usize; 6];
        for _ in 0..n {
            counts[table.sample(&mut rng)] += 1;
        }
        let total: f64 = weights.iter().sum();
        for (c, w) in counts.iter().zip(weights) {
            let p = w / total;
            let sd = (p * (1.0 - p) / n as f64).sqrt();
            assert!(
                (*c as f64 / n as f64 - p).abs() <= 5.0 * sd + 1e-12,
                "{counts:?}"
            );
        }
        assert_eq!(counts[1], 0);
    }

    #[test]
    fn card_removal_and_bayes() {
        let mine = CardSet::from_cards(&cards("AsKd"));
        let mut r = Range::uniform(mine);
        assert_eq!(r.support().len(), 1225); // C(50, 2)
        assert!((r.weights().iter().sum::<f64>() - 1.0).abs() < 1e-12);
        r.remove_cards(CardSet::from_cards(&cards("2c7h9d")));
        assert_eq!(r.support().len(), 1081); // C(47, 2)
        for h in r.support() {
            assert_eq!(
                HOLE_MASKS[h as usize] & CardSet::from_cards(&cards("AsKd2c7h9d")).0,
                0
            );
        }
        // Posterior ∝ prior × likelihood.
        let prior = r.clone();
        let hands = r.support();
        let like: Vec<f64> = hands.iter().map(|&h| (h % 7) as f64 / 6.0).collect();
        let evidence = r.update(&hands, &like);
        let expected_evidence: f64 = hands
            .iter()
            .zip(&like)
            .map(|(&h, &l)| prior.weights()[h as usize] * l)
            .sum();
        assert!((evidence - expected_evidence).abs() < 1e-15);
        for (&h, &l) in hands.iter().zip(&like) {
            let want = prior.weights()[h as usize] * l / expected_evidence;
            assert!((r.weights()[h as usize] - want).abs() < 1e-15);
        }
        assert!(r.weights().iter().all(|&w| w >= 0.0));
        // Impossible observation: unchanged.
        let before = r.clone();
        assert_eq!(r.update(&hands, &vec![0.0; hands.len()]), 0.0);
        assert_eq!(r, before);
    }

    /// Folds with probability 1 holding an ace, else calls; reads its cards from the state.
    struct FoldAces;
    impl Policy for FoldAces {
        fn action_probabilities(&self, state: &dyn State) -> Result<Vec<f64>, PolicyError> {
            let Turn::Player(p) = state.turn() else {
                return Err(PolicyError::NotADecision);
            };
            let (a, b) = HOLE_CARDS[state.private_state(p)];
            let ace = a >= 48 || b >= 48;
            let legal = state.legal_actions();
            let target = if ace && legal.contains(&FOLD) {
                FOLD
            } else {
                CALL
            };
            Ok(legal.iter().map(|&x| (x == target) as u8 as f64).collect())
        }
        fn name(&self) -> String {
            "fold-aces".into()
        }
    }

    #[test]
    fn per_hand_adapter_substitutes_hole_cards() {
        let g = game();
        let mut s = g.initial_state();
        for c in cards("AsKd2c3d") {
            s.apply(c as Action);
        }
        // P1 (small blind) to act, facing the big blind.
        assert_eq!(s.turn(), Turn::Player(1));
        let same = with_hole_cards(&s, 1, hole_index(cards("2c")[0], cards("3d")[0])).unwrap();
        assert_eq!(
            same.information_state_string(1),
            s.information_state_string(1)
        );
        assert_eq!(
            same.information_state_string(0),
            s.information_state_string(0)
        );
        assert!(with_hole_cards(&s, 1, hole_index(cards("As")[0], cards("4d")[0])).is_none());
        let hands: Vec<u16> = (0..NUM_HOLE_HANDS as u16)
            .filter(|&h| HOLE_MASKS[h as usize] & CardSet::from_cards(&cards("AsKd")).0 == 0)
            .collect();
        let probs = PerHand(FoldAces)
            .hand_action_probabilities(&s, &hands)
            .unwrap();
        for (&h, p) in hands.iter().zip(&probs) {
            let (a, b) = HOLE_CARDS[h as usize];
            let want = if a >= 48 || b >= 48 {
                [1.0, 0.0, 0.0, 0.0]
            } else {
                [0.0, 1.0, 0.0, 0.0]
            };
            assert_eq!(*p, want, "hand {h}");
        }
        // The hand-independent policies agree with their per-hand adapters.
        for (direct, adapted) in [
            (
                &UniformPolicy as &dyn RangePolicy,
                &PerHand(UniformPolicy) as &dyn RangePolicy,
            ),
            (&AlwaysFold, &PerHand(AlwaysFold)),
            (&AlwaysCall, &PerHand(AlwaysCall)),
        ] {
            let x = direct.hand_action_probabilities(&s, &hands[..50]).unwrap();
            let y = adapted.hand_action_probabilities(&s, &hands[..50]).unwrap();
            assert_eq!(x, y, "{}", direct.name());
        }
    }

    #[test]
    fn opponent_range_follows_bayes_in_play() {
        // LBR (P0, big blind) watches P1 call pre-flop with FoldAces: afterwards no hand
        // with an ace is left in the range.
        let g = game();
        let policy = PerHand(FoldAces);
        let ctx = HandCtx {
            policy: &policy,
            variant: LbrVariant::Fc,
            preflop_samples: 100,
            defer: true,
        };
        let mut s = g.initial_state();
        for c in cards("KsKd2c3d") {
            s.apply(c as Action);
        }
        let mut range = Range::uniform(CardSet::from_cards(&cards("KsKd")));
        let mut rng = SplitMix64::new(0);
        let actual = hole_index(cards("2c")[0], cards("3d")[0]) as u16;
        let a = opponent_action(&ctx, &s, actual, &mut rng).unwrap();
        assert_eq!(a, CALL);
        update_range(&ctx, &s, a, actual, &mut range).unwrap();
        let support = range.support();
        let no_ace = |h: &u16| HOLE_CARDS[*h as usize].1 < 48;
        assert!(support.iter().all(no_ace));
        // 50 cards left, 46 of them not aces: C(46, 2) hands, uniform.
        assert_eq!(support.len(), 1035);
        let w = range.weights()[actual as usize];
        assert!(
            support
                .iter()
                .all(|&h| (range.weights()[h as usize] - w).abs() < 1e-15)
        );
    }

    /// Hand- and history-dependent probabilities with folds and raises (a hash of the hand,
    /// the public history and the action); counts the rows it is asked for.
    #[derive(Default)]
    struct Hashed {
        rows: std::sync::atomic::AtomicU64,
    }

    impl RangePolicy for Hashed {
        fn hand_action_probabilities(
            &self,
            state: &UniversalPokerState,
            hands: &[u16],
        ) -> Result<Vec<ActionProbs>, PolicyError> {
            self.rows
                .fetch_add(hands.len() as u64, std::sync::atomic::Ordering::Relaxed);
            let legal = state.legal_mask();
            // The public history: everything after the four hole-card deals.
            let history: Vec<u64> = state.history()[4..].iter().map(|&a| a as u64).collect();
            let public = derive_seed(&history);
            Ok(hands
                .iter()
                .map(|&h| {
                    let mut row = [0.0; 4];
                    for (a, x) in row.iter_mut().enumerate() {
                        if legal >> a & 1 != 0 {
                            *x = 1.0 + (derive_seed(&[public, h as u64, a as u64]) % 9) as f64;
                        }
                    }
                    let total: f64 = row.iter().sum();
                    row.map(|x| x / total)
                })
                .collect())
        }
        fn name(&self) -> String {
            "hashed".into()
        }
    }

    /// Deferring the range's updates to LBR's next decision that reads it changes no hand's
    /// result (every variant, both seats), and asks the policy for fewer rows.
    #[test]
    fn deferred_range_updates_play_the_same_hands() {
        let g = game();
        for variant in LbrVariant::ALL {
            let (lazy, eager) = (Hashed::default(), Hashed::default());
            let mut outcomes = std::collections::HashSet::new();
            for deal in 0..24u64 {
                let mut rng = SplitMix64::new(derive_seed(&[7, deal]));
                let cards = deal_cards(&mut rng);
                for seat in 0..2 {
                    let seed = derive_seed(&[deal, seat as u64]);
                    let play = |policy: &Hashed, defer: bool| {
                        let ctx = HandCtx {
                            policy,
                            variant,
                            preflop_samples: 200,
                            defer,
                        };
                        play_hand(&ctx, &g, seat, &cards, &mut SplitMix64::new(seed)).unwrap()
                    };
                    let (x, y) = (play(&lazy, true), play(&eager, false));
                    assert_eq!(x, y, "{variant}, deal {deal}, seat {seat}");
                    outcomes.insert(x.to_bits());
                }
            }
            // The hands are not all alike (folds, showdowns, different pots).
            assert!(outcomes.len() > 5, "{variant}: {outcomes:?}");
            let rows = |p: &Hashed| p.rows.load(std::sync::atomic::Ordering::Relaxed);
            assert!(
                rows(&lazy) < rows(&eager),
                "{variant}: {} rows vs {}",
                rows(&lazy),
                rows(&eager)
            );
        }
    }

    #[test]
    fn utilities_follow_lisy_bowling() {
        // Pot 300 (150 each), nothing asked, wp 0.6; a pot bet x = 300 folded to half the time.
        let (call, raises) = lbr_utilities(300.0, 0.0, 0.6, &[(300.0, 0.5)]);
        assert!((call - 180.0).abs() < 1e-12);
        let want = 0.5 * 300.0 + 0.5 * (0.6 * 600.0 - 0.4 * 300.0);
        assert!((raises[0] - want).abs() < 1e-12);
        // Facing a bet: pot 400 (100 vs 300), asked 200: calling needs wp > 1/3.
        let (call, _) = lbr_utilities(400.0, 200.0, 1.0 / 3.0, &[]);
        assert!(call.abs() < 1e-12);
    }

    fn run(policy: &dyn RangePolicy, variant: LbrVariant, hands: u64, threads: usize) -> LbrResult {
        let mut opts = LbrOptions::new(variant, hands);
        opts.seed = 42;
        opts.threads = threads;
        opts.preflop_samples = 5000;
        run_lbr(&game(), policy, &opts, None).unwrap()
    }

    #[test]
    fn always_fold_exact_values() {
        // LBR-FC: +50 as big blind, 0 as small blind (checked down, the swapped deal
        // cancels): 25 chips = 250 mbb per hand. Raising variants: +50 and +100: 750 mbb.
        for (variant, mbb, seats) in [
            (LbrVariant::Fc, 250.0, [50.0, 0.0]),
            (LbrVariant::Fcpa, 750.0, [50.0, 100.0]),
            (LbrVariant::Fc12Fcpa34, 750.0, [50.0, 100.0]),
        ] {
            let r = run(&AlwaysFold, variant, 40, 2);
            assert_eq!(r.hands, 40);
            assert!((r.mean_mbb - mbb).abs() < 1e-9, "{variant}: {r:?}");
            assert!(r.ci95_mbb.abs() < 1e-9, "{variant}: {r:?}");
            assert_eq!(r.seat_mean_chips, seats, "{variant}");
        }
    }

    #[test]
    fn paired_ratio_delta_method() {
        let result = |seed, deal_means: Vec<f64>| LbrResult {
            variant: "fcpa".into(),
            policy: "p".into(),
            hands: 4 * deal_means.len() as u64,
            mean_chips: 0.0,
            ci95_chips: 0.0,
            mean_mbb: 0.0,
            ci95_mbb: 0.0,
            seat_mean_chips: [0.0; 2],
            seconds: 0.0,
            seed,
            deal_means,
        };
        // By hand: r = 2 / 2, x − r y = (−1, 1), sd = sqrt(2), se = sqrt(2) / (sqrt(2) · 2).
        let r = paired_ratio(&result(1, vec![1.0, 3.0]), &result(1, vec![2.0, 2.0])).unwrap();
        assert_eq!(r.ratio, 1.0);
        assert!((r.ci95 - 1.96 * 0.5).abs() < 1e-12, "{r:?}");
        // A policy worth exactly half the reference on every deal: no uncertainty at all,
        // however much the deals themselves vary.
        let y = vec![10.0, -4.0, 30.0, 7.0];
        let x: Vec<f64> = y.iter().map(|v| 0.5 * v).collect();
        let r = paired_ratio(&result(1, x.clone()), &result(1, y.clone())).unwrap();
        assert!((r.ratio - 0.5).abs() < 1e-15 && r.ci95 < 1e-12, "{r:?}");
        // Results that do not pair up.
        assert!(paired_ratio(&result(1, x.clone()), &result(2, y.clone())).is_none());
        assert!(paired_ratio(&result(1, x[..3].to_vec()), &result(1, y)).is_none());
        assert!(paired_ratio(&result(1, vec![1.0, 2.0]), &result(1, vec![1.0, -1.0])).is_none());
        // One deal: a ratio without an interval.
        let r = paired_ratio(&result(1, vec![3.0]), &result(1, vec![4.0])).unwrap();
        assert!(r.ratio == 0.75 && r.ci95.is_nan(), "{r:?}");
    }

    #[test]
    fn paired_ratio_of_real_runs_is_the_ratio_of_their_means() {
        let a = run(&AlwaysCall, LbrVariant::Fcpa, 64, 2);
        let b = run(&UniformPolicy, LbrVariant::Fcpa, 64, 2);
        assert_eq!(a.deal_means.len(), 16);
        let mean = |r: &LbrResult| r.deal_means.iter().sum::<f64>() / 16.0;
        assert!((mean(&a) - a.mean_chips).abs() < 1e-9);
        let r = paired_ratio(&a, &b).unwrap();
        assert!(
            (r.ratio - a.mean_chips / b.mean_chips).abs() < 1e-12,
            "{r:?}"
        );
        assert!(r.ci95.is_finite() && r.ci95 > 0.0, "{r:?}");
    }

    #[test]
    fn deterministic_across_threads_and_rounds_hands_up() {
        let a = run(&UniformPolicy, LbrVariant::Fcpa, 22, 1);
        let b = run(&UniformPolicy, LbrVariant::Fcpa, 24, 2);
        assert_eq!(a.hands, 24);
        assert_eq!(
            (a.mean_chips, a.ci95_chips, a.seat_mean_chips),
            (b.mean_chips, b.ci95_chips, b.seat_mean_chips)
        );
        let c = LbrOptions {
            seed: 43,
            ..LbrOptions::new(LbrVariant::Fcpa, 24)
        };
        let c = run_lbr(&game(), &UniformPolicy, &c, None).unwrap();
        assert_ne!(a.mean_chips, c.mean_chips);
    }

    #[test]
    fn beats_uniform_random() {
        for variant in LbrVariant::ALL {
            let r = run(&UniformPolicy, variant, 400, 0);
            assert!(r.mean_mbb - r.ci95_mbb > 0.0, "{variant}: {r:?}");
        }
    }

    #[test]
    fn rejects_games_it_cannot_play() {
        let leduc_like = UniversalPokerGame::from_string(
            "universal_poker(betting=nolimit,numPlayers=2,numRounds=2,blind=100 100,numSuits=2,numRanks=6,numHoleCards=1,numBoardCards=0 1,stack=1200 1200)",
        );
        if let Ok(g) = leduc_like {
            let e = run_lbr(
                &g,
                &UniformPolicy,
                &LbrOptions::new(LbrVariant::Fc, 4),
                None,
            )
            .unwrap_err();
            assert!(matches!(e, LbrError::UnsupportedGame(_)), "{e}");
        }
        let fc = UniversalPokerGame::from_string(
            &crate::games::universal_poker::HUNL_FCPA.replace("fcpa", "fc"),
        )
        .unwrap();
        assert!(check_game(fc.config(), LbrVariant::Fc).is_ok());
        assert!(check_game(fc.config(), LbrVariant::Fcpa).is_err());
        let e = run_lbr(
            &game(),
            &UniformPolicy,
            &LbrOptions::new(LbrVariant::Fc, 0),
            None,
        );
        assert!(matches!(e, Err(LbrError::Options(_))));
    }

    #[test]
    fn missing_infostate_is_an_error() {
        let p = PerHand(crate::policy::TabularPolicy::new(
            crate::games::universal_poker::HUNL_FCPA,
        ));
        let e = run_lbr(&game(), &p, &LbrOptions::new(LbrVariant::Fc, 4), None).unwrap_err();
        assert!(
            e.to_string().contains("no entry for information state"),
            "{e}"
        );
    }
}
