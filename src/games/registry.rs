//! Games by name: `load_game("leduc_poker")`, `load_game("liars_dice(numdice=2)")`, or one of
//! the aliases below (`goofspiel5`).

use super as games;
use crate::game::{GameError, GameParams, GameRef};

/// Short aliases for game strings used throughout the configs.
const ALIASES: &[(&str, &str)] = &[
    (
        "goofspiel5",
        "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=5,points_order=descending))",
    ),
    (
        "hunl_fcpa",
        "universal_poker(betting=nolimit,numPlayers=2,numRounds=4,blind=100 50,firstPlayer=2 1 1 1,numSuits=4,numRanks=13,numHoleCards=2,numBoardCards=0 3 1 1,stack=20000 20000,bettingAbstraction=fcpa)",
    ),
    (
        // No-limit FCPA small enough for exact evaluation (4,344,881 histories): 8 cards
        // (2 suits x 4 ranks), a pre-flop and a 3-card flop, stacks of 20 big blinds.
        "small_fcpa",
        "universal_poker(betting=nolimit,numPlayers=2,numRounds=2,blind=100 50,firstPlayer=2 1,numSuits=2,numRanks=4,numHoleCards=2,numBoardCards=0 3,stack=2000 2000,bettingAbstraction=fcpa)",
    ),
];

/// Names that [`load_game`] understands (aliases included).
pub fn registered_games() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = games::CONSTRUCTORS.iter().map(|(n, _)| *n).collect();
    v.extend(ALIASES.iter().map(|(a, _)| *a));
    v
}

/// Loads a game from a name or an OpenSpiel-style game string.
pub fn load_game(text: &str) -> Result<GameRef, GameError> {
    let text = text.trim();
    let expanded = ALIASES
        .iter()
        .find(|(a, _)| *a == text)
        .map(|(_, s)| *s)
        .unwrap_or(text);
    let params = GameParams::parse(expanded)?;
    load_params(&params)
}

/// Loads a game from parsed parameters.
pub fn load_params(params: &GameParams) -> Result<GameRef, GameError> {
    match games::CONSTRUCTORS.iter().find(|(n, _)| *n == params.name) {
        Some((_, ctor)) => ctor(params),
        None => Err(GameError::UnknownGame {
            name: params.name.clone(),
            known: registered_games().join(", "),
        }),
    }
}
