//! The public side of a `universal_poker` hand: a copy of a state that has forgotten the hole
//! cards, for walking the public tree (betting moves and board deals) without enumerating the
//! private deals. Factored solvers that keep one range over all hole-card hands per player
//! (`crate::tree::poker`) are built from it.
//!
//! A walk starts after the hole cards are dealt: a state still dealing hole cards (or not yet
//! started) gives the same public state as one whose hole cards are all out. Board cards are
//! dealt by card id, any card not already on the board being possible (the walk knows no hole
//! card); which private hands collide with a board is the caller's business.

use super::{Applied, Config, Core, UniversalPokerState, hand_eval};
use crate::game::{Action, Turn};
use std::sync::Arc;

/// A `universal_poker` state without hole cards (see the module docs).
#[derive(Clone, Debug)]
pub struct PublicWalk {
    cfg: Arc<Config>,
    core: Core,
}

/// Why a state cannot start a public walk, or a walk step was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WalkError {
    #[error(
        "the state is inside a board deal ({dealt} of the {needed} board cards of round {round} dealt); start from a state before or after the deal"
    )]
    InsideDeal {
        round: usize,
        dealt: usize,
        needed: usize,
    },
    #[error("action {action} is not legal here; legal actions: {legal:?}")]
    Illegal { action: Action, legal: Vec<Action> },
    #[error("card {card} cannot be dealt: {why}")]
    BadCard { card: u8, why: &'static str },
    #[error("the walk is at a {what}, not a {want}")]
    WrongTurn {
        what: &'static str,
        want: &'static str,
    },
}

fn turn_name(t: Turn) -> &'static str {
    match t {
        Turn::Chance => "chance node",
        Turn::Player(_) => "decision node",
        Turn::Terminal => "terminal",
    }
}

impl UniversalPokerState {
    /// The public part of this state, hole cards forgotten, ready to walk (see
    /// [`PublicWalk`]). Fails inside a board deal (some but not all of a round's cards out).
    pub fn public_walk(&self) -> Result<PublicWalk, WalkError> {
        let cfg = self.cfg.clone();
        let mut core = self.core;
        let holes = 2 * cfg.num_hole;
        if (core.hole_dealt as usize) < holes {
            // Nothing public has happened yet: the walk starts after the hole deals.
            core.hole_dealt = holes as u8;
            core.update_turn(&cfg, false);
        }
        core.hole = Default::default();
        let mut deck = (1u64 << cfg.deck_size) - 1;
        for &c in core.board_cards() {
            let o = cfg.outcome_of(c).expect("board cards are in the deck");
            deck &= !(1u64 << o);
        }
        core.deck = deck;
        let walk = PublicWalk { cfg, core };
        let dealt = walk.core.board_dealt as usize;
        if let Some(r) = (0..walk.cfg.num_rounds).find(|&r| {
            let lo = if r == 0 {
                0
            } else {
                walk.cfg.board_upto[r - 1] as usize
            };
            dealt > lo && dealt < walk.cfg.board_upto[r] as usize
        }) {
            return Err(WalkError::InsideDeal {
                round: r,
                dealt: dealt
                    - if r == 0 {
                        0
                    } else {
                        walk.cfg.board_upto[r - 1] as usize
                    },
                needed: walk.cfg.num_board[r] as usize,
            });
        }
        Ok(walk)
    }
}

impl PublicWalk {
    /// The game's configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Chance (a board deal), a player's decision, or the end of the hand.
    pub fn turn(&self) -> Turn {
        self.core.turn
    }

    /// Legal betting actions at a decision node, ascending (empty elsewhere).
    pub fn legal_actions(&self) -> Vec<Action> {
        match self.core.turn {
            Turn::Player(_) => self.core.legal_actions(&self.cfg),
            _ => Vec::new(),
        }
    }

    /// Applies a betting action.
    pub fn apply_action(&mut self, action: Action) -> Result<(), WalkError> {
        if !matches!(self.core.turn, Turn::Player(_)) {
            return Err(WalkError::WrongTurn {
                what: turn_name(self.core.turn),
                want: "decision node",
            });
        }
        if self.core.decode(&self.cfg, action).is_none() {
            return Err(WalkError::Illegal {
                action,
                legal: self.legal_actions(),
            });
        }
        let applied = self.core.apply(&self.cfg, action, false);
        debug_assert!(matches!(applied, Applied::Choice { .. }));
        Ok(())
    }

    /// How many board cards the next deal puts out (the rest of the current round's board):
    /// 0 unless at a chance node.
    pub fn deal_size(&self) -> usize {
        if self.core.turn != Turn::Chance {
            return 0;
        }
        let dealt = self.core.board_dealt as usize;
        let next = (0..self.cfg.num_rounds)
            .map(|r| self.cfg.board_upto[r] as usize)
            .find(|&u| u > dealt)
            .expect("a chance node has board cards left to deal");
        next - dealt
    }

    /// Card ids that may still come on the board (the deck minus the board), ascending.
    pub fn deck_cards(&self) -> Vec<u8> {
        let mut v: Vec<u8> = (0..self.cfg.deck_size)
            .filter(|&o| self.core.deck >> o & 1 == 1)
            .map(|o| self.cfg.deck[o])
            .collect();
        v.sort_unstable();
        v
    }

    /// Deals `cards` (card ids; exactly [`PublicWalk::deal_size`] of them) to the board.
    pub fn deal(&mut self, cards: &[u8]) -> Result<(), WalkError> {
        if self.core.turn != Turn::Chance {
            return Err(WalkError::WrongTurn {
                what: turn_name(self.core.turn),
                want: "chance node",
            });
        }
        let want = self.deal_size();
        if cards.len() != want {
            return Err(WalkError::BadCard {
                card: cards.first().copied().unwrap_or(0),
                why: "the deal has the wrong number of cards",
            });
        }
        for &c in cards {
            let Some(o) = self.cfg.outcome_of(c) else {
                return Err(WalkError::BadCard {
                    card: c,
                    why: "not in this game's deck",
                });
            };
            if self.core.deck >> o & 1 == 0 {
                return Err(WalkError::BadCard {
                    card: c,
                    why: "already on the board",
                });
            }
            self.core.deal(&self.cfg, o, false);
        }
        Ok(())
    }

    /// Board cards dealt so far (card ids, deal order).
    pub fn board(&self) -> &[u8] {
        self.core.board_cards()
    }

    /// Chips each player has put in.
    pub fn contributions(&self) -> [i32; 2] {
        self.core.bet.spent
    }

    /// Who has folded.
    pub fn folded(&self) -> [bool; 2] {
        self.core.bet.folded
    }

    /// The betting round.
    pub fn round(&self) -> usize {
        self.core.bet.round as usize
    }

    /// The showdown rank of `hole` (card ids) with the full board: higher is stronger, the
    /// same evaluation as the game's returns. Panics unless the whole board is out.
    pub fn hand_rank(&self, hole: &[u8]) -> u16 {
        assert_eq!(
            self.core.board_dealt as usize, self.cfg.total_board,
            "hand ranks need the whole board"
        );
        hand_rank(&self.cfg, hole, self.board())
    }
}

/// The showdown rank of `hole` with `board` (the game's evaluator: 7 cards by the fast path,
/// 5 or 6 by the general one).
pub fn hand_rank(cfg: &Config, hole: &[u8], board: &[u8]) -> u16 {
    let n = hole.len() + board.len();
    debug_assert_eq!(n, cfg.num_hole + cfg.total_board);
    let mut cards = [0u8; 7];
    cards[..hole.len()].copy_from_slice(hole);
    cards[hole.len()..n].copy_from_slice(board);
    if n == 7 {
        hand_eval::evaluate7(&cards)
    } else {
        hand_eval::evaluate(&cards[..n])
    }
}
