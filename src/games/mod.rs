//! The games. Each matches OpenSpiel bit for bit (see the golden tests) and is registered
//! by its OpenSpiel short name in [`CONSTRUCTORS`].

pub mod cards;
pub(crate) mod common;
pub mod goofspiel;
pub mod hand_eval;
pub mod kuhn;
pub mod leduc;
pub mod liars_dice;
pub mod registry;
pub mod universal_poker;

#[cfg(test)]
pub(crate) mod test_support;

pub use registry::{load_game, load_params, registered_games};

use crate::game::{GameError, GameParams, GameRef};

/// A constructor from parsed parameters.
pub type Constructor = fn(&GameParams) -> Result<GameRef, GameError>;

/// Every registered game, by OpenSpiel short name.
pub const CONSTRUCTORS: &[(&str, Constructor)] = &[
    ("kuhn_poker", kuhn::load),
    ("leduc_poker", leduc::load),
    ("liars_dice", liars_dice::load),
    ("goofspiel", goofspiel::load_goofspiel),
    ("turn_based_simultaneous_game", goofspiel::load_turn_based),
    ("universal_poker", universal_poker::load),
];
