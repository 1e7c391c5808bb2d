//! Local Best Response (LBR) for heads-up no-limit Hold'em (and any heads-up `universal_poker`
//! game with two hole cards, see "Other games"): a cheap lower bound on how much a policy can
//! be exploited, where exact best responses are out of reach.
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
//! the same `wp` against the whole range, as in the formula above (the sharp rule below
//! recomputes it against the hands that do not fold; the standard one does not). These are exact
//! chip accounting: winning a showdown after the raise gains `c_opp + x + c_me =
//! pot + x` over folding now, losing it costs the further `asked + x`, and a tie is worth the
//! average of the two, so counting ties as one half in `wp` is exact. LBR takes the action of
//! largest `U` among those its variant allows (first of call, pot, all-in on ties) if that
//! value is positive, and otherwise folds (checks when folding is not legal).
//!
//! # The sharp rule ([`LbrRule::Sharp`], not the default)
//!
//! Algorithm 1 assumes that a raise which is not folded to is called by the whole range.
//! A policy folds its weak hands and calls or re-raises with its strong ones, so LBR's
//! equity against the hands that continue is lower than against the whole range, and the
//! standard rule over-values raises against ranges that fold selectively. The sharp rule
//! splits the range at the state after the raise with the same batched policy query that
//! gives `fp`: with `f_h`, `c_h`, `b_h` the policy's probabilities of folding, calling and
//! making re-raise `b` with hand `h`,
//!
//! ```text
//! U(raise) = F * pot + C * S(wp_C, R) + Σ_b B_b * max(−(R − c_me), S(wp_b, R_b))
//! F = Σ_h r(h) f_h,   C = Σ_h r(h) c_h,   B_b = Σ_h r(h) b_h        (r normalised)
//! S(w, T) = w * (T + c_me) − (1 − w) * (T − c_me)
//! ```
//!
//! where `wp_C` is LBR's checked-down equity against the range weighted by `r(h) c_h` (the
//! hands that call), `wp_b` against `r(h) b_h` (the hands that re-raise with `b`), `R_b` the
//! opponent's total contribution after re-raise `b`, and `S(w, T)` the value relative to
//! folding now of a showdown where both players have put in `T` (the call formula with `T =
//! c_opp`). After a re-raise LBR is assumed to fold or call, whichever this lookahead values
//! more (in play it decides again with its own rule). Without re-raises and with `c_h = 1 −
//! f_h` this is the standard formula with `wp` replaced by the equity against the hands that
//! do not fold. Each split costs one more equity computation (two or three per raise). Calls
//! and folds are valued as above. The rule changes only raises, so sharp LBR-FC is LBR-FC.
//!
//! Both rules are pure strategies, so both can only bound the best response from below
//! (`tests/lbr_exact.rs` checks both against it); the sharp one is the tighter bound against
//! policies that fold their weak hands, the standard one is the number other papers report.
//!
//! Variants ([`LbrVariant`]): LBR-FC may only fold or call; LBR-FCPA uses all four FCPA
//! actions; LBR-FC12-FCPA34 folds or calls in the first two rounds (pre-flop, flop) and uses
//! FCPA on the turn and river (in general: fold or call in the first `numRounds / 2` rounds,
//! rounded down, FCPA in the others; refused for a one-round game). The opponent always plays
//! its full policy.
//!
//! # Computing `wp`
//!
//! `wp = Σ_h r(h) eq(h) / Σ_h r(h)` over hands `h` compatible with LBR's cards and the board,
//! where `eq(h)` is LBR's showdown equity against `h` with the rest of the board uniform over
//! the cards left:
//! * **river**: one comparison per opponent hand;
//! * **turn**: exact, all 44 rivers for each opponent hand;
//! * **flop**: exact, all 45 · 44 ordered (turn, river) runouts for each opponent hand, using
//!   the enumeration state machine of `HandStateMachine` (one contiguous row of 52 river
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
//! # Other games
//!
//! Any heads-up `universal_poker` game with two hole cards and the `fc` or `fcpa` abstraction
//! ([`check_game`]) is played the same way, with the deck, the rounds and the board schedule
//! read from the game: ranges keep the 1326 hole-card indices of the full deck, with weight 0
//! on the hands that hold a card outside the game's deck; deals draw from the game's deck (on
//! Hold'em the same cards as before for the same seed); and `wp` is exact, every completion of
//! the board for every compatible opponent hand, up to 2^20 (hand, completion) pairs, and
//! sampled like the Hold'em pre-flop beyond. Full Hold'em keeps the enumeration above.
//!
//! On a game whose tree compiles, [`exact_lbr`] gives LBR's exact expected winnings in each
//! seat: LBR is a pure strategy (its decision depends only on what it sees), evaluated on the
//! compiled tree with LBR's own decision at each infoset it reaches. With exact equities this
//! can never exceed the exact best response, which `tests/lbr_exact.rs` checks.
//!
//! # Checks
//!
//! Against a policy that always folds when facing a bet (and checks otherwise), every deal
//! is worth exactly: as big blind LBR wins the small blind (50 chips) at once; as small blind
//! LBR-FC calls and the hand is checked down, and the two card assignments of the deal cancel
//! exactly, so LBR-FC wins 25 chips = 250 mbb per hand; once LBR may raise it raises and wins
//! the big blind (100 chips), 75 chips = 750 mbb per hand (LBR-FC12-FCPA34 checks to the turn
//! and then bets, or checks down a hand that wins against every hand, also +100).

use crate::games::universal_poker::{ALL_IN, BET, CALL, FOLD};
use crate::policy::PolicyError;
use serde::Serialize;
use std::fmt;

/// Action probabilities of one decision indexed by action id (0 fold, 1 check/call, 2 pot
/// raise, 3 all-in); illegal actions have probability 0.
pub type ActionProbs = [f64; 4];

/// Default number of sampled (hand, board) pairs for pre-flop equities.
pub const DEFAULT_PREFLOP_SAMPLES: usize = 10_000;

/// Errors of an LBR evaluation.
#[derive(Debug, thiserror::Error)]
pub enum LbrError {
    /// The game is not a heads-up `universal_poker` game LBR can play (two hole cards, the FC
    /// or FCPA abstraction).
    #[error(
        "LBR needs a heads-up universal_poker game with 2 hole cards and fc or fcpa actions: {0}"
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
    /// Stopped (Ctrl-C) before any deal was played.
    #[error("stopped before any hand was played")]
    Stopped,
}

/// How LBR values a raise that the opponent does not fold to (module docs, "The sharp rule").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum LbrRule {
    /// Lisý & Bowling's Algorithm 1: a called raise is worth LBR's equity against the whole
    /// range, and the opponent never re-raises. The default.
    #[default]
    Standard,
    /// The raise is valued against the range split by the opponent's reply: the hands that
    /// call it (LBR's equity against them), and those that re-raise (LBR then folds or calls,
    /// whichever is worth more against them).
    Sharp,
}

impl LbrRule {
    /// Both rules, the standard one first.
    pub const ALL: [LbrRule; 2] = [LbrRule::Standard, LbrRule::Sharp];

    /// Parses `standard` (also `lisy-bowling`) or `sharp` (case-insensitive).
    pub fn parse(text: &str) -> Option<LbrRule> {
        match text.trim().to_ascii_lowercase().as_str() {
            "standard" | "lisy-bowling" => Some(LbrRule::Standard),
            "sharp" => Some(LbrRule::Sharp),
            _ => None,
        }
    }

    /// `standard` or `sharp`.
    pub fn name(self) -> &'static str {
        match self {
            LbrRule::Standard => "standard",
            LbrRule::Sharp => "sharp",
        }
    }

    /// How a row of results names LBR with this rule: `LBR-FCPA` for the standard rule,
    /// `sharp LBR-FCPA` for the sharp one.
    pub fn label(self, variant: LbrVariant) -> String {
        let base = format!("LBR-{}", variant.name().to_uppercase());
        match self {
            LbrRule::Standard => base,
            LbrRule::Sharp => format!("sharp {base}"),
        }
    }
}

impl fmt::Display for LbrRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
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

    /// Bits (`1 << action`) of the actions LBR may consider in `round` (0 = pre-flop) of a
    /// game with `num_rounds` betting rounds. LBR-FC12-FCPA34 folds or calls in the first
    /// `num_rounds / 2` rounds (rounded down: pre-flop and flop of Hold'em, pre-flop of a
    /// two- or three-round game) and may raise in the others.
    pub fn action_mask(self, round: usize, num_rounds: usize) -> u8 {
        const FC: u8 = (1 << FOLD) | (1 << CALL);
        const FCPA: u8 = FC | (1 << BET) | (1 << ALL_IN);
        match self {
            LbrVariant::Fc => FC,
            LbrVariant::Fcpa => FCPA,
            LbrVariant::Fc12Fcpa34 if round < num_rounds / 2 => FC,
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

mod breakdown;
mod decision;
mod deck;
mod equity;
mod exact;
mod play;
mod range;

pub use breakdown::{Breakdown, BreakdownRow, HandEnd, Side, classify};
pub use decision::lbr_utilities;
pub use equity::win_probability;
pub use exact::{ExactLbr, exact_lbr, exact_lbr_with_rule};
pub use play::{
    DEAL_MEAN_BYTES, LbrHand, LbrOptions, LbrRatio, LbrResult, check_game, paired_ratio, play_deal,
    run_lbr, run_lbr_hands, run_lbr_watched,
};
pub use range::{AlwaysCall, AlwaysFold, PerHand, Range, RangePolicy, with_hole_cards};

#[cfg(test)]
mod tests;
