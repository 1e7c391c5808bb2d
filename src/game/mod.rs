//! The game API: a game is a factory of states; a state is one history of play.
//!
//! The contract mirrors OpenSpiel's `Game`/`State` so that every string and tensor a
//! game produces can be compared bit for bit with OpenSpiel's, and adds the
//! public/private factorisation that range-vs-range algorithms need:
//!
//! * the **public state** ([`State::public_state_string`]) is everything both players
//!   know; histories that share it form one node of the public tree;
//! * a player's **private state** ([`State::private_state`]) is an index into the list of
//!   private states that are possible in that public state (a dealt card, a die roll, a
//!   sequence of hidden moves). The pair (public state, private state of the player to act)
//!   determines that player's information state, and the pair (public state, both private
//!   states) determines the history.
//!
//! Games know nothing of algorithms: everything in `tree`, `cfr`, `eval` and above is
//! written against these two traits only.

pub mod conformance;
pub mod params;

use std::fmt;
use std::sync::Arc;

pub use params::{GameParams, ParamValue};

/// An action id, `0..num_distinct_actions` for players and `0..max_chance_outcomes` for chance.
pub type Action = usize;

/// Player ids are `0` and `1`; every game in this crate is two-player zero-sum.
pub type Player = usize;

/// Who moves next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Turn {
    /// A chance node: [`State::chance_outcomes`] lists the outcomes.
    Chance,
    /// A decision node of the given player.
    Player(Player),
    /// The game is over: [`State::returns`] holds the payoffs.
    Terminal,
}

impl Turn {
    /// OpenSpiel's integer encoding: player id, -1 chance, -4 terminal.
    pub fn openspiel_id(self) -> i32 {
        match self {
            Turn::Chance => -1,
            Turn::Player(p) => p as i32,
            Turn::Terminal => -4,
        }
    }
}

/// Errors raised by games for bad input (unknown names, bad parameters, illegal moves).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum GameError {
    /// The game name is not in the registry.
    #[error("unknown game `{name}`; known games: {known}")]
    UnknownGame { name: String, known: String },
    /// A game string could not be parsed.
    #[error("cannot parse game string `{text}`: {reason}")]
    Parse { text: String, reason: String },
    /// A parameter is unknown to the game, has the wrong type or an unsupported value.
    #[error("game `{game}`: bad parameter `{param}`: {reason}")]
    BadParameter {
        game: String,
        param: String,
        reason: String,
    },
    /// An action that is not legal in the current state.
    #[error("illegal action {action} at history [{history}]; legal actions: {legal:?}")]
    IllegalAction {
        action: Action,
        history: String,
        legal: Vec<Action>,
    },
}

/// A game: static facts and a factory of initial states.
///
/// Implementations are immutable and shared between threads (`Arc<dyn Game>`).
pub trait Game: Send + Sync + fmt::Debug {
    /// OpenSpiel's short name, e.g. `leduc_poker`.
    fn short_name(&self) -> &str;
    /// The string that loads this exact game in OpenSpiel (`pyspiel.load_game(s)`), used in
    /// policy files; it includes every non-default parameter.
    fn load_string(&self) -> String;
    /// Number of players (always 2 here).
    fn num_players(&self) -> usize {
        2
    }
    /// Player actions are in `0..num_distinct_actions()`.
    fn num_distinct_actions(&self) -> usize;
    /// Chance actions are in `0..max_chance_outcomes()`.
    fn max_chance_outcomes(&self) -> usize;
    /// Longest number of player actions in one history (OpenSpiel's `MaxGameLength`).
    fn max_game_length(&self) -> usize;
    /// Smallest return any player can get.
    fn min_utility(&self) -> f64;
    /// Largest return any player can get.
    fn max_utility(&self) -> f64;
    /// Length of [`State::information_state_tensor`] buffers.
    fn information_state_tensor_size(&self) -> usize;
    /// Length of [`State::observation_tensor`] buffers.
    fn observation_tensor_size(&self) -> usize;
    /// The largest magnitude each entry of [`State::information_state_tensor`] takes, where
    /// some entries are far from 1 (chip amounts); `None` where every entry lies in [-1, 1].
    /// A learner may divide its inputs by it; the tensor itself stays as the game writes it.
    fn information_state_tensor_scale(&self) -> Option<Vec<f32>> {
        None
    }
    /// The same for [`State::observation_tensor`].
    fn observation_tensor_scale(&self) -> Option<Vec<f32>> {
        None
    }
    /// Length of [`State::public_state_tensor`] buffers; `0` where the game provides none.
    fn public_state_tensor_size(&self) -> usize {
        0
    }
    /// Whether [`State::observation_string`] is defined (OpenSpiel's Liar's Dice has none).
    fn provides_observation_string(&self) -> bool {
        true
    }
    /// The root of the game tree.
    fn new_initial_state(&self) -> Box<dyn State>;
}

/// One history of play. Cloning copies the whole history; states never share mutable data.
pub trait State: Send + Sync + fmt::Debug {
    /// Who moves next.
    fn turn(&self) -> Turn;

    /// Legal actions in ascending order: player actions at decision nodes, chance outcomes
    /// (with non-zero probability) at chance nodes, empty at terminals.
    fn legal_actions(&self) -> Vec<Action>;

    /// At chance nodes, the outcomes with their probabilities (ascending by action, summing to
    /// 1); empty elsewhere.
    fn chance_outcomes(&self) -> Vec<(Action, f64)>;

    /// Applies a legal action (a chance outcome at chance nodes).
    ///
    /// # Panics
    /// May panic on an illegal action; use [`State::try_apply`] for untrusted input.
    fn apply_action(&mut self, action: Action);

    /// Every action applied so far, chance outcomes included.
    fn history(&self) -> &[Action];

    /// Payoffs of both players at terminals (zero elsewhere).
    fn returns(&self) -> [f64; 2];

    /// OpenSpiel's `ToString()` of the state.
    fn to_string(&self) -> String;

    /// OpenSpiel's `ActionToString(player, action)`; `player` is `None` for chance.
    fn action_to_string(&self, player: Option<Player>, action: Action) -> String;

    /// OpenSpiel's `InformationStateString(player)`: the key of every tabular algorithm.
    fn information_state_string(&self, player: Player) -> String;

    /// Writes OpenSpiel's `InformationStateTensor(player)` into `out`, whose length is
    /// [`Game::information_state_tensor_size`]. Every entry is written.
    fn information_state_tensor(&self, player: Player, out: &mut [f32]);

    /// OpenSpiel's `ObservationString(player)` (empty where the game provides none).
    fn observation_string(&self, player: Player) -> String;

    /// Writes OpenSpiel's `ObservationTensor(player)` into `out`, whose length is
    /// [`Game::observation_tensor_size`]. Every entry is written.
    fn observation_tensor(&self, player: Player, out: &mut [f32]);

    /// What both players know: histories with equal strings are one public-tree node.
    /// Must change whenever either information state changes in a way both players see,
    /// and must be a function of each player's information state.
    fn public_state_string(&self) -> String;

    /// The key that identifies this history's node in the public tree among the children of
    /// its parent node (histories under one parent node with equal keys form one node).
    ///
    /// It must hold everything public that a player can still condition on later, so that two
    /// public histories the players can tell apart never share a node. The default is
    /// [`State::public_state_string`], which is enough when that string describes the public
    /// history. Games override it where OpenSpiel's public string forgets public facts: in
    /// `universal_poker` the board is printed as one set, so a flop `4h` with turn `7c` and a
    /// flop `7c` with turn `4h` print alike although the players saw different things. Keys of
    /// histories that differ only in the order of chance events inside one run of chance nodes
    /// should be equal, so that a tree built with merged chance runs groups them.
    fn public_tree_key(&self) -> String {
        self.public_state_string()
    }

    /// Writes a tensor of what both players know, a function of the public state alone (equal
    /// for every history of one public-tree node), into `out`, whose length is
    /// [`Game::public_state_tensor_size`]. Games whose size is `0` write nothing.
    fn public_state_tensor(&self, out: &mut [f32]) {
        debug_assert!(out.is_empty(), "this game has no public state tensor");
    }

    /// The player's private state: an index into the private states possible in this public
    /// state, in `0..num_private_states(player)`. Together with the public state it determines
    /// the player's information state.
    fn private_state(&self, player: Player) -> usize;

    /// How many private states `player` can be in at this public state (an upper bound on
    /// [`State::private_state`] + 1; indices need not all be reachable).
    fn num_private_states(&self, player: Player) -> usize;

    /// The other private states `player` could hold here given everything else dealt so far
    /// (the other player's private outcomes and the public ones), each as a
    /// [`State::private_state`] index, ascending; the player's own one is left out. Empty
    /// before the player's private deal, and in games that do not provide
    /// [`State::with_private_state`].
    fn private_state_alternatives(&self, player: Player) -> Vec<usize> {
        let _ = player;
        Vec::new()
    }

    /// This history with `player`'s private chance outcomes replaced by those of private state
    /// `private` and every other action the same (the history the other player cannot tell
    /// from this one, had chance dealt `player` differently); `None` where that deal is not
    /// possible or the game does not provide it. Every alternative in
    /// [`State::private_state_alternatives`] gives `Some`.
    fn with_private_state(&self, player: Player, private: usize) -> Option<Box<dyn State>> {
        let _ = (player, private);
        None
    }

    /// A boxed copy.
    fn clone_box(&self) -> Box<dyn State>;

    /// `true` at terminals.
    fn is_terminal(&self) -> bool {
        self.turn() == Turn::Terminal
    }

    /// `true` at chance nodes.
    fn is_chance(&self) -> bool {
        self.turn() == Turn::Chance
    }

    /// Whether some player makes a decision between this state and the end of the game,
    /// whatever chance deals: `Some` where the game can tell from the state alone, `None`
    /// (the default) where it cannot without playing on. In poker, `Some(false)` once a
    /// player folded or the betting is closed for good (players all in and called), when only
    /// board cards remain to come.
    fn player_acts_again(&self) -> Option<bool> {
        None
    }

    /// Applies `action` after checking that it is legal.
    fn try_apply(&mut self, action: Action) -> Result<(), GameError> {
        let legal = self.legal_actions();
        if legal.binary_search(&action).is_err() || self.is_terminal() {
            return Err(GameError::IllegalAction {
                action,
                history: history_string(self.history()),
                legal,
            });
        }
        self.apply_action(action);
        Ok(())
    }
}

impl Clone for Box<dyn State> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// `a,b,c` rendering of an action history (used in error messages).
pub fn history_string(history: &[Action]) -> String {
    history
        .iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// A shared, immutable game.
pub type GameRef = Arc<dyn Game>;

/// Replays `actions` from the initial state, checking each one.
pub fn replay(game: &dyn Game, actions: &[Action]) -> Result<Box<dyn State>, GameError> {
    let mut state = game.new_initial_state();
    for &a in actions {
        state.try_apply(a)?;
    }
    Ok(state)
}

/// Writes the entries of player 0's information-state tensor from `skip` on into `out`: the
/// public part for games whose information-state tensor lays out the player and the private
/// information first and public information after.
pub(crate) fn public_tail_of_infostate(
    game_tensor_size: usize,
    state: &dyn State,
    skip: usize,
    out: &mut [f32],
) {
    let mut all = vec![0.0; game_tensor_size];
    state.information_state_tensor(0, &mut all);
    assert_eq!(out.len(), game_tensor_size - skip, "public tensor length");
    out.copy_from_slice(&all[skip..]);
}

/// Information-state tensor of `player` as a fresh vector.
pub fn information_state_tensor_vec(
    game: &dyn Game,
    state: &dyn State,
    player: Player,
) -> Vec<f32> {
    let mut v = vec![0.0; game.information_state_tensor_size()];
    state.information_state_tensor(player, &mut v);
    v
}

/// Observation tensor of `player` as a fresh vector.
pub fn observation_tensor_vec(game: &dyn Game, state: &dyn State, player: Player) -> Vec<f32> {
    let mut v = vec![0.0; game.observation_tensor_size()];
    state.observation_tensor(player, &mut v);
    v
}
