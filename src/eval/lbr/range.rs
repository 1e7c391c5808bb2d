//! Policies over ranges and the opponent range LBR keeps.

use super::ActionProbs;
use crate::game::Player;
use crate::game::State;
use crate::game::Turn;
use crate::games::cards::CardSet;
use crate::games::cards::HOLE_MASKS;
use crate::games::cards::NUM_HOLE_HANDS;
use crate::games::universal_poker::CALL;
use crate::games::universal_poker::FOLD;
use crate::games::universal_poker::UniversalPokerState;
use crate::policy::FirstLegalPolicy;
use crate::policy::Policy;
use crate::policy::PolicyError;
use crate::policy::UniformPolicy;

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

/// A shared range policy is a range policy.
impl<P: RangePolicy + ?Sized> RangePolicy for std::sync::Arc<P> {
    fn hand_action_probabilities(
        &self,
        state: &UniversalPokerState,
        hands: &[u16],
    ) -> Result<Vec<ActionProbs>, PolicyError> {
        (**self).hand_action_probabilities(state, hands)
    }

    fn name(&self) -> String {
        (**self).name()
    }
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
/// if the player's cards are not dealt yet, the hand holds a card outside the game's deck or
/// collides with another dealt card. The game must deal two hole cards.
pub fn with_hole_cards(
    state: &UniversalPokerState,
    player: Player,
    hand: usize,
) -> Option<UniversalPokerState> {
    debug_assert_eq!(
        state.config().num_hole,
        2,
        "with_hole_cards needs two hole cards"
    );
    state.with_private_cards(player, hand)
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
    pub(super) weights: Vec<f64>,
}

impl Range {
    /// Uniform over the hands that share no card with `known` (the observer's cards and the
    /// board), zero on the others.
    pub fn uniform(known: CardSet) -> Range {
        Range::uniform_in(CardSet::FULL, known)
    }

    /// Uniform over the hands of the deck `deck` that share no card with `known`, zero on
    /// the others (hands with a card outside the deck included).
    pub fn uniform_in(deck: CardSet, known: CardSet) -> Range {
        let out = known.0 | !deck.0;
        let mut r = Range {
            weights: HOLE_MASKS
                .iter()
                .map(|&m| if m & out == 0 { 1.0 } else { 0.0 })
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
