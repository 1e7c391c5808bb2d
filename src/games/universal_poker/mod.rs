//! Heads-up `universal_poker`: OpenSpiel 2.0.2's ACPC-based poker engine, reimplemented to
//! match it bit for bit, with the FCPA no-limit Hold'em abstraction (`hunl_fcpa`) as the
//! main target.
//!
//! # Rules
//! A hand has `numRounds` betting rounds. Before any action each player posts its `blind`;
//! then chance deals `numHoleCards` cards to player 0, then to player 1, one chance node per
//! card, and at the start of round `r` (after the betting of round `r - 1` closes)
//! `numBoardCards[r]` board cards, again one per chance node. Chance outcomes are uniform
//! over the cards left in the deck. The deck holds the `numRanks` lowest ranks in
//! `numSuits` suits; chance outcome `i` is the `i`-th card ordered by rank then suit, which
//! for four suits is the card id `rank * 4 + suit` (ranks `23456789TJQKA`, suits `cdhs`).
//!
//! In each round `firstPlayer[r]` (1-based) acts first unless it is all-in; players alternate.
//! A round closes once every player who can still act has called the last raise (or
//! checked). A fold ends the hand; when at most one player can still bet (the other is
//! all-in) the betting is over, the round jumps to the last one and the remaining board
//! cards are still dealt before the showdown. At the showdown the best five-card hand among
//! the hole and board cards wins `min(spent)` from the other player; equal hands split, so
//! both get 0 heads-up. Returns are in chips.
//!
//! Betting (`betting`): `nolimit` raises to any total between the minimum raise (the current
//! bet plus the last raise increment, at least the big blind) and the player's stack;
//! `limit` raises by `raiseSize[r]`, at most `maxRaises[r]` times per round.
//!
//! # Actions (`bettingAbstraction`)
//! * `fc`: 0 fold, 1 check/call.
//! * `fcpa` (the FCPA game): 0 fold, 1 check/call, 2 pot raise (raise *to* the current bet
//!   plus the pot after calling, `sum(spent) + 2 * max_spent - spent[me]`), 3 all-in (raise
//!   to the whole stack). Fold is legal only when facing a bet; the pot raise only when
//!   raising is allowed and the pot raise-to lies within the legal raise range; all-in
//!   whenever raising is allowed and the pot raise-to is not already the whole stack. In
//!   limit games action 2 is the fixed raise and there is no all-in.
//! * `fullgame` (no-limit only): 0 fold, 1 check/call, `N >= 2` raise to `N` chips, for every
//!   `N` in the legal raise range.
//!
//! # Parameters
//! `betting` (`nolimit`), `numPlayers` (2, the only value supported), `numRounds` (2, at
//! most 4), `blind` (`"100 100"`), `raiseSize` (`"100 100"`, limit only), `firstPlayer`
//! (`"1 1"`), `maxRaises` (none), `numSuits` (4), `numRanks` (6), `numHoleCards` (1),
//! `numBoardCards` (`"0 1"`), `stack` (`"1200 1200"`, no-limit only), `bettingAbstraction`
//! (`fcpa`); lists are space-separated. The subgame parameters `potSize`, `boardCards` and
//! `handReaches` are accepted only at their neutral values, `calcOddsNumSims` is accepted and
//! has no effect here, `fchpa` is not supported, and a showdown must rank 5 to 7 cards (the
//! shared [`hand_eval`] evaluator), so OpenSpiel's default game
//! (one hole card, one board card) is refused. Every refusal names the parameter.
//!
//! # Strings
//! `to_string`, `action_to_string`, the information-state and observation strings follow
//! OpenSpiel exactly, quirks included: the `[Pot: X]` of the information state is the
//! largest contribution times the number of players who have not folded, card sets are
//! printed by descending rank then suit (`s h d c`), and the ACPC state line prints cards in
//! deal order with undealt slots as `2c`.
//!
//! # Tensors
//! With `D = numSuits * numRanks` cards and `L` = [`Game::max_game_length`]:
//!
//! Information state (`2 + 2D + 3L`, 175 for FCPA):
//! * `[0, 2)`: one-hot of the observing player;
//! * `[2, 2 + D)`: the player's hole cards (by chance outcome index);
//! * `[2 + D, 2 + 2D)`: the board cards;
//! * `[2 + 2D, 2 + 2D + 2L)`: two bits per history entry (deals included): call `10`, pot
//!   raise or fullgame raise `01`, all-in `11`, fold and deal `00`;
//! * `[2 + 2D + 2L, 2 + 2D + 3L)`: per history entry, the raise-to size of a raise (0 for
//!   deals, checks, calls, folds and limit raises).
//!
//! Observation (`2 + 2D + 2`, 108 for FCPA): the player one-hot, hole cards, board cards,
//! then the two players' contributions in chips.
//!
//! Public state (`D + R + 8 + 3L` with `R = numRounds`, 133 for FCPA; the input of a
//! counterfactual value network, an armac extension), chip amounts divided by
//! `S = max(|max utility|, 1)` (the short stack in no-limit, the largest possible
//! contribution in limit games):
//! * `[0, D)`: the board cards (by chance outcome index; a set, whatever the deal order);
//! * `[D, D + R)`: one-hot of the betting round;
//! * `[D + R, D + R + 3)`: who acts: player 0, player 1, nobody (chance node or terminal);
//! * `D + R + 3`, `D + R + 4`: the players' contributions / `S`;
//! * `D + R + 5`: the amount the player to act must call / `S` (0 when nobody acts);
//! * `D + R + 6`, `D + R + 7`: whether player 0, player 1 folded;
//! * `[D + R + 8, D + R + 8 + 2L)`: the information state's two bits per history entry;
//! * `[D + R + 8 + 2L, D + R + 8 + 3L)`: its raise-to sizes / `S`.
//!
//! Hole-card deals are history entries with code `00` at fixed positions, so the tensor is
//! the same for every deal of hole cards and every order of one round's board cards.
//!
//! # Public and private states
//! The public state is the information-state string without its `[Private: ...]` part:
//! round, player to move, pot, stacks, board (as a set) and the betting of every round.
//! Because the board is one set, two boards dealt in different rounds (flop `4h`, turn `7c`
//! against flop `7c`, turn `4h`) print alike, and so do the information states that follow,
//! although the players saw different public events and may have acted on them. The
//! public-tree key ([`State::public_tree_key`]) therefore prints the board per round (each
//! round as a set) and the public tree tells those histories apart; OpenSpiel's string stays
//! the infoset's label.
//! While hole cards are being dealt it does not change, because neither player can tell how
//! many cards the other has received. A player's private state indexes its hole cards:
//! none dealt is 0 of 1, one card is its card id (of 52), two cards are the
//! [`hole_index`](crate::games::cards::hole_index) of the pair (of 1326), three cards are the
//! colexicographic rank of the triple (of 22100).

mod betting;
mod config;
mod playouts;
mod public;
mod render;
mod state;
#[cfg(test)]
mod tests;

pub use betting::{Betting, Move};
pub use config::{Abstraction, BettingType, Config};
pub use playouts::{random_playouts, random_playouts_dyn};
pub use public::{PublicWalk, WalkError, hand_rank};
pub use state::UniversalPokerState;

use crate::game::{Action, Game, GameError, GameParams, GameRef, State, Turn};
use crate::games::hand_eval;
use config::{MAX_BOARD_CARDS, MAX_HOLE_CARDS};
use std::sync::Arc;

/// OpenSpiel's FCPA heads-up no-limit Hold'em game string (`pyspiel.hunl_game_string("fcpa")`).
pub const HUNL_FCPA: &str = "universal_poker(betting=nolimit,numPlayers=2,numRounds=4,blind=100 50,firstPlayer=2 1 1 1,numSuits=4,numRanks=13,numHoleCards=2,numBoardCards=0 3 1 1,stack=20000 20000,bettingAbstraction=fcpa)";

/// Action id of fold.
pub const FOLD: Action = 0;
/// Action id of check/call.
pub const CALL: Action = 1;
/// Action id of the pot raise (the fixed raise in limit games).
pub const BET: Action = 2;
/// Action id of all-in.
pub const ALL_IN: Action = 3;

/// Loads `universal_poker(...)` from its parameters.
pub fn load(params: &GameParams) -> Result<GameRef, GameError> {
    Ok(Arc::new(UniversalPokerGame::from_params(params)?))
}

/// The game: a validated configuration shared by all its states.
#[derive(Debug)]
pub struct UniversalPokerGame {
    cfg: Arc<Config>,
}

impl UniversalPokerGame {
    /// Builds the game from parsed parameters.
    pub fn from_params(params: &GameParams) -> Result<UniversalPokerGame, GameError> {
        let mut params = params.clone();
        params.name = "universal_poker".to_string();
        Ok(UniversalPokerGame {
            cfg: Arc::new(Config::from_params(&params)?),
        })
    }

    /// Builds the game from a `universal_poker(...)` game string.
    pub fn from_string(text: &str) -> Result<UniversalPokerGame, GameError> {
        let params = GameParams::parse(text)?;
        if params.name != "universal_poker" {
            return Err(GameError::Parse {
                text: text.to_string(),
                reason: "expected universal_poker(...)".to_string(),
            });
        }
        UniversalPokerGame::from_params(&params)
    }

    /// The FCPA heads-up no-limit Hold'em game ([`HUNL_FCPA`]).
    pub fn hunl_fcpa() -> UniversalPokerGame {
        UniversalPokerGame::from_string(HUNL_FCPA).expect("the FCPA game string is valid")
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The root state as a concrete type (no boxing).
    pub fn initial_state(&self) -> UniversalPokerState {
        UniversalPokerState::new(self.cfg.clone())
    }
}

impl Game for UniversalPokerGame {
    fn short_name(&self) -> &str {
        "universal_poker"
    }
    fn load_string(&self) -> String {
        self.cfg.load_string.clone()
    }
    fn num_distinct_actions(&self) -> usize {
        self.cfg.num_distinct_actions
    }
    fn max_chance_outcomes(&self) -> usize {
        self.cfg.deck_size
    }
    fn max_game_length(&self) -> usize {
        self.cfg.max_game_length
    }
    fn min_utility(&self) -> f64 {
        self.cfg.min_utility
    }
    fn max_utility(&self) -> f64 {
        self.cfg.max_utility
    }
    fn information_state_tensor_size(&self) -> usize {
        self.cfg.information_state_tensor_size()
    }
    fn observation_tensor_size(&self) -> usize {
        self.cfg.observation_tensor_size()
    }
    fn information_state_tensor_scale(&self) -> Option<Vec<f32>> {
        Some(self.cfg.information_state_tensor_scale())
    }
    fn observation_tensor_scale(&self) -> Option<Vec<f32>> {
        Some(self.cfg.observation_tensor_scale())
    }
    fn public_state_tensor_size(&self) -> usize {
        self.cfg.public_state_tensor_size()
    }
    fn new_initial_state(&self) -> Box<dyn State> {
        Box::new(self.initial_state())
    }
}

/// Inline history capacity; FCPA histories are at most 23 long.
const INLINE_HISTORY: usize = 32;

/// The action history, inline up to [`INLINE_HISTORY`] entries and on the heap beyond.
#[derive(Clone)]
struct History {
    len: usize,
    inline: [Action; INLINE_HISTORY],
    spill: Vec<Action>,
}

impl History {
    fn new() -> History {
        History {
            len: 0,
            inline: [0; INLINE_HISTORY],
            spill: Vec::new(),
        }
    }

    #[inline]
    fn push(&mut self, a: Action) {
        if self.len < INLINE_HISTORY {
            self.inline[self.len] = a;
        } else {
            if self.len == INLINE_HISTORY {
                self.spill.reserve(2 * INLINE_HISTORY);
                self.spill.extend_from_slice(&self.inline);
            }
            self.spill.push(a);
        }
        self.len += 1;
    }

    #[inline]
    fn as_slice(&self) -> &[Action] {
        if self.len <= INLINE_HISTORY {
            &self.inline[..self.len]
        } else {
            &self.spill
        }
    }
}

/// Legal-action bits of a decision node (FC/FCPA/limit): bit `a` set iff action `a` is legal.
const FOLD_BIT: u8 = 1 << FOLD;
const CALL_BIT: u8 = 1 << CALL;
const BET_BIT: u8 = 1 << BET;
const ALL_IN_BIT: u8 = 1 << ALL_IN;

/// What one applied action was, for replays that rebuild the betting record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Applied {
    /// A card was dealt.
    Deal,
    /// A player moved; `code` is OpenSpiel's action-sequence letter and `size` its recorded
    /// bet size.
    Choice { mv: Move, code: u8, size: i32 },
}

/// Everything about a state except the shared configuration and the history.
#[derive(Clone, Copy, Debug)]
struct Core {
    bet: Betting,
    hole: [[u8; MAX_HOLE_CARDS]; 2],
    board: [u8; MAX_BOARD_CARDS],
    hole_dealt: u8,
    board_dealt: u8,
    /// Bit `i` set iff chance outcome `i` is still in the deck.
    deck: u64,
    turn: Turn,
    /// Legal actions at a decision node, as bits (not used by `fullgame` raises).
    legal: u8,
    /// Legal raise-to range when raising is allowed (`raise_ok`).
    raise_min: i32,
    raise_max: i32,
    raise_ok: bool,
    /// The pot raise-to of the player to act.
    pot_to: i32,
    returns: [f64; 2],
}

impl Core {
    fn new(cfg: &Config) -> Core {
        let mut core = Core {
            bet: Betting::new(cfg),
            hole: [[0; MAX_HOLE_CARDS]; 2],
            board: [0; MAX_BOARD_CARDS],
            hole_dealt: 0,
            board_dealt: 0,
            deck: (1u64 << cfg.deck_size) - 1,
            turn: Turn::Chance,
            legal: 0,
            raise_min: 0,
            raise_max: 0,
            raise_ok: false,
            pot_to: 0,
            returns: [0.0; 2],
        };
        core.update_turn(cfg, true);
        core
    }

    /// Decides who moves next and, at decision nodes, what is legal; at terminals computes
    /// the returns when `with_returns` (replays skip the showdown).
    fn update_turn(&mut self, cfg: &Config, with_returns: bool) {
        self.legal = 0;
        self.raise_ok = false;
        let round = self.bet.round as usize;
        let board_needed = cfg.board_upto[round];
        if self.bet.finished {
            if self.bet.num_folded() == 0 && self.board_dealt < board_needed {
                self.turn = Turn::Chance;
            } else {
                self.turn = Turn::Terminal;
                if with_returns {
                    self.returns = self.final_returns(cfg);
                }
            }
            return;
        }
        if (self.hole_dealt as usize) < 2 * cfg.num_hole || self.board_dealt < board_needed {
            self.turn = Turn::Chance;
            return;
        }
        let p = self.bet.current_player(cfg);
        self.turn = Turn::Player(p);
        self.legal = CALL_BIT;
        if self.bet.can_fold(cfg, p) {
            self.legal |= FOLD_BIT;
        }
        if let Some((min, max)) = self.bet.raise_range(cfg, p) {
            self.raise_ok = true;
            self.raise_min = min;
            self.raise_max = max;
            if cfg.abstraction != Abstraction::Fc {
                if cfg.betting == BettingType::Limit {
                    self.legal |= BET_BIT;
                } else {
                    let pot_to = self.bet.pot_raise_to(p);
                    self.pot_to = pot_to;
                    if pot_to >= min && pot_to <= max {
                        self.legal |= BET_BIT;
                    }
                    if pot_to != max {
                        self.legal |= ALL_IN_BIT;
                    }
                }
            }
        }
    }

    /// Payoffs of a finished hand.
    fn final_returns(&self, cfg: &Config) -> [f64; 2] {
        let spent = self.bet.spent;
        for p in 0..2 {
            if self.bet.folded[p] {
                let mut r = [0.0; 2];
                r[p] = (-spent[p]) as f64;
                r[1 - p] = spent[p] as f64;
                return r;
            }
        }
        let ranks: [u16; 2] = std::array::from_fn(|p| {
            public::hand_rank(
                cfg,
                &self.hole[p][..cfg.num_hole],
                &self.board[..cfg.total_board],
            )
        });
        let pot = spent[0].min(spent[1]) as f64;
        match ranks[0].cmp(&ranks[1]) {
            std::cmp::Ordering::Greater => [pot, -pot],
            std::cmp::Ordering::Less => [-pot, pot],
            std::cmp::Ordering::Equal => [0.0, 0.0],
        }
    }

    /// Deals chance outcome `outcome`.
    #[inline]
    fn deal(&mut self, cfg: &Config, outcome: usize, with_returns: bool) {
        assert!(
            outcome < 64 && self.deck >> outcome & 1 == 1,
            "universal_poker: card outcome {outcome} is not in the deck"
        );
        let card = cfg.deck[outcome];
        self.deck &= !(1u64 << outcome);
        let holes = 2 * cfg.num_hole;
        if (self.hole_dealt as usize) < holes {
            let i = self.hole_dealt as usize;
            self.hole[i / cfg.num_hole][i % cfg.num_hole] = card;
            self.hole_dealt += 1;
            if (self.hole_dealt as usize) < holes {
                // Still dealing hole cards: nothing else can change.
                return;
            }
        } else {
            self.board[self.board_dealt as usize] = card;
            self.board_dealt += 1;
        }
        self.update_turn(cfg, with_returns);
    }

    /// Translates player action `a` into an ACPC move, or `None` if it is illegal.
    #[inline]
    fn decode(&self, cfg: &Config, a: Action) -> Option<(Move, u8, i32)> {
        if cfg.abstraction == Abstraction::FullGame {
            return match a {
                FOLD => (self.legal & FOLD_BIT != 0).then_some((Move::Fold, b'f', 0)),
                CALL => Some((Move::Call, b'c', 0)),
                _ => {
                    let size = i32::try_from(a).ok()?;
                    (self.raise_ok && size >= self.raise_min && size <= self.raise_max).then_some((
                        Move::Raise(size),
                        b'p',
                        size,
                    ))
                }
            };
        }
        if a > ALL_IN || self.legal & (1 << a) == 0 {
            return None;
        }
        Some(match a {
            FOLD => (Move::Fold, b'f', 0),
            CALL => (Move::Call, b'c', 0),
            BET if cfg.betting == BettingType::Limit => (Move::Raise(0), b'p', 0),
            BET => (Move::Raise(self.pot_to), b'p', self.pot_to),
            _ => (Move::Raise(self.raise_max), b'a', self.raise_max),
        })
    }

    /// Applies any action (deal or move); panics on an illegal one.
    #[inline]
    fn apply(&mut self, cfg: &Config, a: Action, with_returns: bool) -> Applied {
        match self.turn {
            Turn::Chance => {
                self.deal(cfg, a, with_returns);
                Applied::Deal
            }
            Turn::Player(_) => {
                let Some((mv, code, size)) = self.decode(cfg, a) else {
                    panic!("universal_poker: illegal action {a}");
                };
                self.bet.apply(cfg, mv);
                self.update_turn(cfg, with_returns);
                Applied::Choice { mv, code, size }
            }
            Turn::Terminal => panic!("universal_poker: action {a} applied at a terminal state"),
        }
    }

    /// Legal actions at a decision node, ascending.
    fn legal_actions(&self, cfg: &Config) -> Vec<Action> {
        if cfg.abstraction == Abstraction::FullGame {
            let mut v = Vec::new();
            if self.legal & FOLD_BIT != 0 {
                v.push(FOLD);
            }
            v.push(CALL);
            if self.raise_ok {
                v.extend(self.raise_min as Action..=self.raise_max as Action);
            }
            v
        } else {
            let mut v = Vec::with_capacity(4);
            let mut m = self.legal;
            while m != 0 {
                v.push(m.trailing_zeros() as Action);
                m &= m - 1;
            }
            v
        }
    }

    /// Cards of player `p` dealt so far, in deal order.
    #[inline]
    fn hole_cards(&self, cfg: &Config, p: usize) -> &[u8] {
        let dealt = self.hole_dealt as usize;
        let n = dealt.saturating_sub(p * cfg.num_hole).min(cfg.num_hole);
        &self.hole[p][..n]
    }

    /// Board cards dealt so far, in deal order.
    #[inline]
    fn board_cards(&self) -> &[u8] {
        &self.board[..self.board_dealt as usize]
    }
}
