//! The Hold'em strategy chart: for the player to act after a betting history (and, past the
//! pre-flop, a chosen board), the action frequencies of each of the 169 hand classes.
//!
//! The policy is queried on real game states: the hole cards of both players are dealt, the
//! betting history is applied and the board's cards are dealt where the game deals them, so
//! the information-state tensor the network sees is the game's own. Every one of the 1326
//! hands that misses the board is asked for; a class's frequencies are the plain mean over
//! its suit combinations (6 for a pair, 4 suited, 12 offsuit, fewer where the board holds one
//! of the cards). The opponent's cards do not enter the acting player's information state,
//! but a queried hand must not share a card with them: the hands are split over three
//! disjoint opponent holdings (a hand meets at most two of them).
//!
//! The 13x13 grid is the usual one: rows and columns run A, K, ..., 2; pairs on the diagonal,
//! suited classes above it (row = high card), offsuit classes below (column = high card).

use super::ApiError;
use super::model::Head;
use crate::game::{Action, State, Turn};
use crate::games::cards::{HOLE_CARDS, HOLE_MASKS, card_to_string, rank, suit};
use crate::games::universal_poker::{UniversalPokerGame, UniversalPokerState};
use serde_json::{Value, json};

/// Rank characters by rank index (0 = deuce).
const RANKS: &[u8; 13] = b"23456789TJQKA";

/// The FCPA action names by action id.
pub const ACTION_NAMES: [&str; 4] = ["fold", "call", "pot", "all-in"];

/// The grid cell `(row, column)` of the class of hole cards `(a, b)` (row-major index).
pub fn class_cell(a: u8, b: u8) -> usize {
    let (hi, lo) = if rank(a) >= rank(b) {
        (rank(a), rank(b))
    } else {
        (rank(b), rank(a))
    };
    let (i_hi, i_lo) = (12 - hi as usize, 12 - lo as usize);
    if hi == lo || suit(a) == suit(b) {
        i_hi * 13 + i_lo
    } else {
        i_lo * 13 + i_hi
    }
}

/// The label of grid cell `cell` (`AA`, `AKs`, `AKo`, ...).
pub fn cell_label(cell: usize) -> String {
    let (row, col) = (cell / 13, cell % 13);
    let r = |i: usize| RANKS[12 - i] as char;
    match row.cmp(&col) {
        std::cmp::Ordering::Equal => format!("{}{}", r(row), r(row)),
        std::cmp::Ordering::Less => format!("{}{}s", r(row), r(col)),
        std::cmp::Ordering::Greater => format!("{}{}o", r(col), r(row)),
    }
}

/// Where a betting history leads.
enum Reached {
    /// A decision of the returned state.
    Decision(Box<UniversalPokerState>),
    /// A deal of board cards beyond those given: `round` is the betting round that follows.
    NeedsBoard { round: usize, dealt: usize },
    /// The hand is over.
    Terminal,
}

/// Deals the cards of `board` from index `*dealt` on at the chance nodes of `s` until a
/// player acts or the hand is over, advancing `*dealt`; returns `Reached::NeedsBoard` when
/// `board` runs out at a chance node.
fn deal_until_decision(
    s: &mut UniversalPokerState,
    board: &[u8],
    dealt: &mut usize,
) -> Option<Reached> {
    while s.turn() == Turn::Chance {
        let Some(&c) = board.get(*dealt) else {
            return Some(Reached::NeedsBoard {
                round: s.betting().round as usize,
                dealt: *dealt,
            });
        };
        s.apply(c as Action);
        *dealt += 1;
    }
    None
}

/// Deals `hole` (player 0's two cards, then player 1's), then plays `history`, dealing the
/// cards of `board` in order at every chance node after the hole cards.
fn reach(
    game: &UniversalPokerGame,
    hole: [[u8; 2]; 2],
    history: &[Action],
    board: &[u8],
) -> Result<Reached, ApiError> {
    let mut s = game.initial_state();
    for c in hole.iter().flatten() {
        s.apply(*c as Action);
    }
    let mut dealt = 0;
    for (k, &a) in history.iter().enumerate() {
        if let Some(needs) = deal_until_decision(&mut s, board, &mut dealt) {
            return Ok(needs);
        }
        if s.turn() == Turn::Terminal {
            return Err(ApiError::bad(format!(
                "`history` action #{k} ({a}) comes after the hand is over"
            )));
        }
        if !s.legal_actions().contains(&a) {
            return Err(ApiError::bad(format!(
                "`history` action #{k} ({a}) is not legal there; legal actions: {:?}",
                s.legal_actions()
            )));
        }
        s.apply(a);
    }
    if let Some(needs) = deal_until_decision(&mut s, board, &mut dealt) {
        return Ok(needs);
    }
    if s.turn() == Turn::Terminal {
        return Ok(Reached::Terminal);
    }
    Ok(Reached::Decision(Box::new(s)))
}

/// The chart of `head` after `history` on `board` as JSON (see the module docs): `status` is
/// `decision` (with `player`, `actions`, `cells`), `needs_board` (with `round` and `dealt`:
/// the board cards the history used) or `terminal`.
pub fn chart(
    game: &UniversalPokerGame,
    head: &Head,
    history: &[Action],
    board: &[u8],
) -> Result<Value, ApiError> {
    let board_mask = board.iter().fold(0u64, |m, &c| m | 1 << c);
    // Eight cards off the board: the acting player's base hand and three opponent holdings.
    let free: Vec<u8> = (0..52u8)
        .filter(|c| board_mask >> c & 1 == 0)
        .take(8)
        .collect();
    let mine = [free[0], free[1]];
    let theirs = [[free[2], free[3]], [free[4], free[5]], [free[6], free[7]]];
    let probe = match reach(game, [mine, theirs[0]], history, board)? {
        Reached::Decision(s) => s,
        Reached::NeedsBoard { round, dealt } => {
            return Ok(json!({"status": "needs_board", "round": round, "dealt": dealt}));
        }
        Reached::Terminal => return Ok(json!({"status": "terminal"})),
    };
    let Turn::Player(p) = probe.turn() else {
        unreachable!("reach returns decisions only")
    };
    let used = probe.board_cards().len();
    let used_mask = probe.board_cards().iter().fold(0u64, |m, &c| m | 1 << c);
    let mut groups: [Vec<u16>; 3] = Default::default();
    for (h, &mask) in HOLE_MASKS.iter().enumerate() {
        if mask & used_mask != 0 {
            continue;
        }
        let k = (0..3)
            .find(|&k| {
                let m = (1u64 << theirs[k][0]) | (1u64 << theirs[k][1]);
                mask & m == 0
            })
            .expect("two cards meet at most two of three disjoint holdings");
        groups[k].push(h as u16);
    }
    let mut sums = vec![[0.0f64; 4]; 169];
    let mut combos = vec![0u32; 169];
    for (k, hands) in groups.iter().enumerate() {
        if hands.is_empty() {
            continue;
        }
        let mut hole = [mine, theirs[k]];
        if p == 1 {
            hole.swap(0, 1);
        }
        let Reached::Decision(base) = reach(game, hole, history, &board[..used])? else {
            unreachable!("the hole cards do not change where the betting leads")
        };
        let probs = head
            .hand_probabilities(&base, hands)
            .map_err(|e| ApiError::bad(format!("the policy cannot answer here: {e}")))?;
        for (&h, pr) in hands.iter().zip(&probs) {
            let (a, b) = HOLE_CARDS[h as usize];
            let cell = class_cell(a, b);
            combos[cell] += 1;
            for (s, x) in sums[cell].iter_mut().zip(pr) {
                *s += x;
            }
        }
    }
    let legal = probe.legal_actions();
    let cells: Vec<Value> = (0..169)
        .map(|cell| {
            let n = combos[cell];
            let probs = (n > 0).then(|| {
                legal
                    .iter()
                    .map(|&a| sums[cell][a] / n as f64)
                    .collect::<Vec<_>>()
            });
            json!({"label": cell_label(cell), "combos": n, "probs": probs})
        })
        .collect();
    let actions: Vec<Value> = legal
        .iter()
        .map(|&a| json!({"action": a, "label": ACTION_NAMES.get(a).copied().unwrap_or("?")}))
        .collect();
    let board_text: Vec<String> = probe
        .board_cards()
        .iter()
        .map(|&c| card_to_string(c))
        .collect();
    Ok(json!({
        "status": "decision",
        "player": p,
        "round": probe.betting().round,
        // OpenSpiel's `[Pot: X]`: at a decision nobody has folded, so twice the largest bet.
        "pot": 2 * probe.contributions().iter().max().copied().unwrap_or(0),
        "contributions": probe.contributions(),
        "board": board_text.concat(),
        "history": history,
        "actions": actions,
        "cells": cells,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::cards::parse_card;

    fn cell_of(a: &str, b: &str) -> String {
        cell_label(class_cell(parse_card(a).unwrap(), parse_card(b).unwrap()))
    }

    #[test]
    fn hand_classes_sit_where_a_range_chart_puts_them() {
        assert_eq!(
            class_cell(parse_card("As").unwrap(), parse_card("Ah").unwrap()),
            0
        );
        assert_eq!(cell_of("As", "Ad"), "AA");
        assert_eq!(cell_of("Ks", "As"), "AKs");
        assert_eq!(cell_of("Kd", "As"), "AKo");
        assert_eq!(cell_of("2c", "3c"), "32s");
        assert_eq!(cell_of("2c", "2d"), "22");
        // Suited above the diagonal: AKs is row 0, column 1; AKo row 1, column 0.
        assert_eq!(cell_label(1), "AKs");
        assert_eq!(cell_label(13), "AKo");
        assert_eq!(cell_label(168), "22");
    }

    #[test]
    fn every_class_has_its_number_of_combos() {
        let mut n = [0u32; 169];
        for &(a, b) in HOLE_CARDS.iter() {
            n[class_cell(a, b)] += 1;
        }
        for (cell, &count) in n.iter().enumerate() {
            let label = cell_label(cell);
            let want = match label.len() {
                2 => 6,
                _ if label.ends_with('s') => 4,
                _ => 12,
            };
            assert_eq!(count, want, "{label}");
        }
    }
}
