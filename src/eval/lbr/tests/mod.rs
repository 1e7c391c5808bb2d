//! Tests of Local Best Response: the policy adapters and the opponent range in play; equity
//! against brute force is in `equity`, whole runs (values, paired ratios, refusals, hand
//! breakdowns) in `runs`.
use super::decision::{HandCtx, decision_at, opponent_action, play_hand, update_range};
use super::deck::Deck;
use super::equity::{AliasTable, general_win_probability};
use super::play::{deal_cards, derive_seed};
use super::*;
use crate::game::Action;
use crate::game::State;
use crate::game::Turn;
use crate::games::cards::CardSet;
use crate::games::cards::HOLE_CARDS;
use crate::games::cards::HOLE_MASKS;
use crate::games::cards::NUM_HOLE_HANDS;
use crate::games::cards::{hole_index, parse_cards};
use crate::games::hand_eval::evaluate7;
use crate::games::universal_poker::UniversalPokerGame;
use crate::games::universal_poker::UniversalPokerState;
use crate::policy::Policy;
use crate::policy::UniformPolicy;
use crate::util::SplitMix64;

mod equity;
mod runs;
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
    let deck = Deck::new(g.config());
    let ctx = HandCtx {
        policy: &policy,
        deck: &deck,
        variant: LbrVariant::Fc,
        preflop_samples: 100,
        defer: true,
        rule: LbrRule::Standard,
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
    let deck = Deck::new(g.config());
    for variant in LbrVariant::ALL {
        let (lazy, eager) = (Hashed::default(), Hashed::default());
        let mut outcomes = std::collections::HashSet::new();
        for deal in 0..24u64 {
            let mut rng = SplitMix64::new(derive_seed(&[7, deal]));
            let cards = deal_cards(&deck, &mut rng);
            for seat in 0..2 {
                let seed = derive_seed(&[deal, seat as u64]);
                let play = |policy: &Hashed, defer: bool| {
                    let ctx = HandCtx {
                        policy,
                        deck: &deck,
                        variant,
                        preflop_samples: 200,
                        defer,
                        rule: LbrRule::Standard,
                    };
                    play_hand(&ctx, &g, seat, &cards, &mut SplitMix64::new(seed))
                        .unwrap()
                        .returns()[seat]
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

/// The small no-limit game of tests/lbr_exact.rs: 2 suits x 4 ranks, pre-flop and flop.
const SMALL: &str = "universal_poker(betting=nolimit,numPlayers=2,numRounds=2,blind=100 50,firstPlayer=2 1,numSuits=2,numRanks=4,numHoleCards=2,numBoardCards=0 3,stack=2000 2000,bettingAbstraction=fcpa)";

fn small() -> UniversalPokerGame {
    UniversalPokerGame::from_string(SMALL).unwrap()
}
