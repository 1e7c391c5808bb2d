//! Where LBR's winnings come from: every hand LBR plays is put in one class by how it ended
//! (who folded and in which round, or a showdown, all in or not, and who made the last bet
//! or raise in which round), and LBR's winnings are summed per class. The classes' shares
//! add up to LBR's mean, so the table says which part of a policy's play LBR exploits:
//! folding too much (`policy folds`), betting too loosely (`showdown, last bet by policy`),
//! calling too much (`showdown, last bet by LBR`, only where LBR may raise).

use crate::game::Player;
use crate::game::State;
use crate::game::Turn;
use crate::games::universal_poker::ALL_IN;
use crate::games::universal_poker::BET;
use crate::games::universal_poker::FOLD;
use crate::games::universal_poker::UniversalPokerGame;
use crate::games::universal_poker::UniversalPokerState;
use serde::Serialize;
use std::collections::BTreeMap;

/// Who acted, seen from LBR's side of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The evaluated policy.
    Policy,
    /// The local best response.
    Lbr,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Policy => "policy",
            Side::Lbr => "LBR",
        }
    }
}

/// How one hand ended (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HandEnd {
    /// `by` folded in betting round `round` (0 = pre-flop).
    Fold {
        /// Who folded.
        by: Side,
        /// The round of the fold.
        round: u8,
    },
    /// Both hands were shown.
    Showdown {
        /// Both players had every chip of the shorter stack in.
        all_in: bool,
        /// Who made the last bet or raise (blinds do not count), and in which round; `None`
        /// when nobody bet: the hand was checked (or limped) down.
        last_bet: Option<(Side, u8)>,
    },
}

/// When in a game of `num_rounds` rounds betting round `round` is (Hold'em's streets when it
/// has four: `pre-flop`, `on the flop`, ...; `in round N` otherwise).
fn round_name(round: u8, num_rounds: usize) -> String {
    match (num_rounds, round) {
        (4, 0) => "pre-flop".into(),
        (4, 1) => "on the flop".into(),
        (4, 2) => "on the turn".into(),
        (4, 3) => "on the river".into(),
        _ => format!("in round {}", round + 1),
    }
}

impl HandEnd {
    /// A one-line description, e.g. `showdown, all in, last bet by policy on the river`.
    pub fn label(&self, num_rounds: usize) -> String {
        match *self {
            HandEnd::Fold { by, round } => {
                format!("{} folds {}", by.name(), round_name(round, num_rounds))
            }
            HandEnd::Showdown { all_in, last_bet } => {
                let stakes = if all_in { "all in" } else { "not all in" };
                match last_bet {
                    Some((by, round)) => format!(
                        "showdown, {stakes}, last bet by {} {}",
                        by.name(),
                        round_name(round, num_rounds)
                    ),
                    None => format!("showdown, {stakes}, no bet"),
                }
            }
        }
    }
}

/// Classifies the terminal state `end` of a hand of `game` in which LBR sat in `seat`, by
/// replaying its history from the root.
pub fn classify(game: &UniversalPokerGame, end: &UniversalPokerState, seat: Player) -> HandEnd {
    let side = |p: Player| if p == seat { Side::Lbr } else { Side::Policy };
    let mut state = game.initial_state();
    let mut last_bet = None;
    let mut fold = None;
    for &a in end.history() {
        if let Turn::Player(p) = state.turn() {
            let round = state.betting().round;
            match a {
                FOLD => fold = Some(HandEnd::Fold { by: side(p), round }),
                BET | ALL_IN => last_bet = Some((side(p), round)),
                _ => {}
            }
        }
        state.apply(a);
    }
    if let Some(f) = fold {
        return f;
    }
    let c = end.contributions();
    let stack = game.config().stack;
    HandEnd::Showdown {
        all_in: c[0] == c[1] && c[0] >= stack[0].min(stack[1]),
        last_bet,
    }
}

/// One class of a [`Breakdown`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BreakdownRow {
    /// How the hands of this class ended.
    pub end: HandEnd,
    /// [`HandEnd::label`].
    pub label: String,
    /// Hands in this class.
    pub hands: u64,
    /// LBR's winnings over them, in chips.
    pub chips: f64,
    /// Their share of LBR's mean: `chips / all hands` in mbb per hand (the rows add up to
    /// the run's mean).
    pub share_mbb: f64,
    /// LBR's mean winnings per hand of this class, in mbb.
    pub mean_mbb: f64,
}

/// Accumulates hands by class.
#[derive(Clone, Debug, Default)]
pub struct Breakdown {
    classes: BTreeMap<HandEnd, (u64, f64)>,
}

impl Breakdown {
    /// Adds one hand that ended as `end` with LBR winning `chips`.
    pub fn add(&mut self, end: HandEnd, chips: f64) {
        let e = self.classes.entry(end).or_default();
        e.0 += 1;
        e.1 += chips;
    }

    /// The rows, largest share of LBR's winnings (in absolute value) first; `big_blind`
    /// converts chips to mbb.
    pub fn rows(&self, num_rounds: usize, big_blind: f64) -> Vec<BreakdownRow> {
        let total: u64 = self.classes.values().map(|v| v.0).sum();
        let to_mbb = 1000.0 / big_blind;
        let mut rows: Vec<BreakdownRow> = self
            .classes
            .iter()
            .map(|(&end, &(hands, chips))| BreakdownRow {
                end,
                label: end.label(num_rounds),
                hands,
                chips,
                share_mbb: chips * to_mbb / total.max(1) as f64,
                mean_mbb: chips * to_mbb / hands as f64,
            })
            .collect();
        rows.sort_by(|a, b| b.share_mbb.abs().total_cmp(&a.share_mbb.abs()));
        rows
    }
}
