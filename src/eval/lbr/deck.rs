//! What LBR reads of a game's cards: the deck, the board schedule, and whether the game is
//! full Hold'em (the fast equity path of [`super::equity`]).

use crate::game::Action;
use crate::games::cards::CardSet;
use crate::games::cards::NUM_CARDS;
use crate::games::universal_poker::Config;

/// The cards of one `universal_poker` game as LBR sees them.
#[derive(Clone, Debug)]
pub(super) struct Deck {
    /// Full heads-up Hold'em: 52 cards, 2 hole cards, 4 rounds with boards 0, 3, 1, 1.
    pub(super) holdem: bool,
    /// Card ids (`rank * 4 + suit`) of the deck in chance-outcome order.
    pub(super) cards: Vec<u8>,
    /// The deck's cards as a set.
    pub(super) set: CardSet,
    /// The chance outcome that deals each card id (`u8::MAX` for cards not in the deck).
    outcome: [u8; NUM_CARDS],
    /// Board cards over all rounds.
    pub(super) total_board: usize,
    /// Betting rounds.
    pub(super) num_rounds: usize,
}

impl Deck {
    /// The deck of `cfg` (any `universal_poker` configuration).
    pub(super) fn new(cfg: &Config) -> Deck {
        let cards = cfg.deck[..cfg.deck_size].to_vec();
        let mut outcome = [u8::MAX; NUM_CARDS];
        for (i, &c) in cards.iter().enumerate() {
            outcome[c as usize] = i as u8;
        }
        Deck {
            holdem: is_holdem(cfg),
            set: CardSet::from_cards(&cards),
            cards,
            outcome,
            total_board: cfg.total_board,
            num_rounds: cfg.num_rounds,
        }
    }

    /// The chance outcome that deals card `card`; panics if the card is not in the deck.
    #[inline]
    pub(super) fn outcome(&self, card: u8) -> Action {
        let o = self.outcome[card as usize];
        assert!(o != u8::MAX, "card {card} is not in the deck");
        o as Action
    }

    /// Cards dealt in one hand: both players' hole cards and the whole board.
    pub(super) fn cards_per_hand(&self) -> usize {
        4 + self.total_board
    }
}

/// Whether `cfg` is full heads-up Texas Hold'em (52 cards, 2 hole cards, 4 rounds, board
/// 0 3 1 1), whatever its blinds, stacks and abstraction.
pub(super) fn is_holdem(cfg: &Config) -> bool {
    cfg.num_suits == 4
        && cfg.num_ranks == 13
        && cfg.num_hole == 2
        && cfg.num_rounds == 4
        && cfg.num_board[..4] == [0, 3, 1, 1]
        && cfg.deck_size == NUM_CARDS
        && cfg.deck.iter().enumerate().all(|(i, &c)| c as usize == i)
}
