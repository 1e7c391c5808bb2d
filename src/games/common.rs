//! Rules several games share: the two-player parameter check, and the private state of a
//! player who holds one dealt card (Kuhn and Leduc poker).

use crate::game::{GameError, GameParams};

/// A card slot no card has been dealt to.
pub(crate) const NO_CARD: u8 = u8::MAX;

/// Refuses a `players` parameter other than 2 (the default), naming the value given.
pub(crate) fn require_two_players(params: &GameParams) -> Result<(), GameError> {
    let players = params.int("players", 2)?;
    if players != 2 {
        return Err(params.bad(
            "players",
            &format!("only 2 players are supported, got {players}"),
        ));
    }
    Ok(())
}

/// The private state of a player holding `card` ([`NO_CARD`] before the deal): the card, or
/// 0 before the deal.
pub(crate) fn dealt_card_state(card: u8) -> usize {
    match card {
        NO_CARD => 0,
        c => c as usize,
    }
}

/// The number of private states of a player holding `card` from a deck of `num_cards`: one
/// before the deal, one per card after it.
pub(crate) fn dealt_card_states(card: u8, num_cards: usize) -> usize {
    if card == NO_CARD { 1 } else { num_cards }
}
