//! `armac.Game` and `armac.State`: pyspiel's names and values over armac's games.

use crate::errors::{guarded, to_py};
use armac::game::{Action, GameRef, Player, State, Turn};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A game (see `armac.load_game`).
#[pyclass(name = "Game", module = "armac", frozen)]
pub struct PyGame {
    pub game: GameRef,
}

/// `numpy.frombuffer` of `values` as float32 (a fresh, writable copy).
pub fn f32_array<'py>(py: Python<'py>, values: &[f32]) -> PyResult<Bound<'py, PyAny>> {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let np = py.import("numpy")?;
    np.getattr("frombuffer")?
        .call1((PyBytes::new(py, &bytes), "float32"))?
        .call_method0("copy")
}

/// Loads `name` (an OpenSpiel game string or one of armac's aliases such as `hunl_fcpa`).
pub fn load(name: &str) -> PyResult<GameRef> {
    guarded(|| armac::games::load_game(name).map_err(|e| to_py(&e)))
}

/// Loads a game by OpenSpiel game string (e.g. `leduc_poker`, `kuhn_poker()`,
/// `universal_poker(betting=nolimit,...)`) or armac alias (`hunl_fcpa`, `small_fcpa`).
#[pyfunction]
pub fn load_game(name: &str) -> PyResult<PyGame> {
    Ok(PyGame { game: load(name)? })
}

#[pymethods]
impl PyGame {
    /// The root state.
    fn new_initial_state(&self) -> PyState {
        PyState {
            state: self.game.new_initial_state(),
            game: self.game.clone(),
        }
    }

    /// OpenSpiel's short name (`leduc_poker`).
    fn short_name(&self) -> String {
        self.game.short_name().to_string()
    }

    /// The string that loads this exact game in OpenSpiel (`pyspiel.load_game(s)`).
    fn load_string(&self) -> String {
        self.game.load_string()
    }

    fn num_players(&self) -> usize {
        self.game.num_players()
    }

    fn num_distinct_actions(&self) -> usize {
        self.game.num_distinct_actions()
    }

    fn max_chance_outcomes(&self) -> usize {
        self.game.max_chance_outcomes()
    }

    fn max_game_length(&self) -> usize {
        self.game.max_game_length()
    }

    fn min_utility(&self) -> f64 {
        self.game.min_utility()
    }

    fn max_utility(&self) -> f64 {
        self.game.max_utility()
    }

    fn information_state_tensor_size(&self) -> usize {
        self.game.information_state_tensor_size()
    }

    fn observation_tensor_size(&self) -> usize {
        self.game.observation_tensor_size()
    }

    /// The state after replaying `actions` (chance outcomes included) from the root.
    fn state_from_history(&self, actions: Vec<Action>) -> PyResult<PyState> {
        let state = armac::game::replay(self.game.as_ref(), &actions).map_err(|e| to_py(&e))?;
        Ok(PyState {
            state,
            game: self.game.clone(),
        })
    }

    fn __str__(&self) -> String {
        self.game.load_string()
    }

    fn __repr__(&self) -> String {
        format!("armac.load_game({:?})", self.game.load_string())
    }
}

/// One history of play, with pyspiel's method names and values.
#[pyclass(name = "State", module = "armac")]
pub struct PyState {
    pub state: Box<dyn State>,
    pub game: GameRef,
}

impl PyState {
    /// `player`, or the player to move when `None`.
    fn player(&self, player: Option<Player>) -> PyResult<Player> {
        match (player, self.state.turn()) {
            (Some(p), _) if p < 2 => Ok(p),
            (Some(p), _) => Err(crate::errors::GameError::new_err(format!(
                "player {p} does not exist (players are 0 and 1)"
            ))),
            (None, Turn::Player(p)) => Ok(p),
            (None, _) => Err(crate::errors::GameError::new_err(
                "no player moves here (chance node or terminal); name the player",
            )),
        }
    }
}

#[pymethods]
impl PyState {
    /// The player to move: 0 or 1, -1 at chance nodes, -4 at terminals (pyspiel's ids).
    fn current_player(&self) -> i32 {
        self.state.turn().openspiel_id()
    }

    fn is_terminal(&self) -> bool {
        self.state.is_terminal()
    }

    fn is_chance_node(&self) -> bool {
        self.state.is_chance()
    }

    /// Legal actions in ascending order (chance outcomes at chance nodes). With `player`, the
    /// empty list unless that player is to move.
    #[pyo3(signature = (player=None))]
    fn legal_actions(&self, player: Option<Player>) -> Vec<Action> {
        match (player, self.state.turn()) {
            (Some(p), Turn::Player(q)) if p != q => Vec::new(),
            (Some(_), Turn::Chance | Turn::Terminal) => Vec::new(),
            _ => self.state.legal_actions(),
        }
    }

    /// `(outcome, probability)` pairs at a chance node.
    fn chance_outcomes(&self) -> Vec<(Action, f64)> {
        self.state.chance_outcomes()
    }

    /// Applies a legal action; an illegal one raises `GameError` naming the legal ones.
    fn apply_action(&mut self, action: Action) -> PyResult<()> {
        let state = &mut self.state;
        guarded(|| state.try_apply(action).map_err(|e| to_py(&e)))
    }

    /// A copy with `action` applied.
    fn child(&self, action: Action) -> PyResult<PyState> {
        let mut state = self.state.clone();
        guarded(|| state.try_apply(action).map_err(|e| to_py(&e)))?;
        Ok(PyState {
            state,
            game: self.game.clone(),
        })
    }

    /// Every action so far, chance outcomes included.
    fn history(&self) -> Vec<Action> {
        self.state.history().to_vec()
    }

    /// Both players' returns (0 before the end).
    fn returns(&self) -> Vec<f64> {
        self.state.returns().to_vec()
    }

    /// OpenSpiel's `InformationStateString(player)` (default: the player to move).
    #[pyo3(signature = (player=None))]
    fn information_state_string(&self, player: Option<Player>) -> PyResult<String> {
        Ok(self.state.information_state_string(self.player(player)?))
    }

    /// OpenSpiel's `InformationStateTensor(player)` as a float32 numpy array.
    #[pyo3(signature = (player=None))]
    fn information_state_tensor<'py>(
        &self,
        py: Python<'py>,
        player: Option<Player>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let p = self.player(player)?;
        let v =
            armac::game::information_state_tensor_vec(self.game.as_ref(), self.state.as_ref(), p);
        f32_array(py, &v)
    }

    /// OpenSpiel's `ObservationString(player)`.
    #[pyo3(signature = (player=None))]
    fn observation_string(&self, player: Option<Player>) -> PyResult<String> {
        Ok(self.state.observation_string(self.player(player)?))
    }

    /// OpenSpiel's `ObservationTensor(player)` as a float32 numpy array.
    #[pyo3(signature = (player=None))]
    fn observation_tensor<'py>(
        &self,
        py: Python<'py>,
        player: Option<Player>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let p = self.player(player)?;
        let v = armac::game::observation_tensor_vec(self.game.as_ref(), self.state.as_ref(), p);
        f32_array(py, &v)
    }

    /// OpenSpiel's `ActionToString(player, action)` (`player` -1 or None for chance).
    #[pyo3(signature = (player, action))]
    fn action_to_string(&self, player: Option<i64>, action: Action) -> String {
        let p = player.filter(|&p| p >= 0).map(|p| p as Player);
        self.state.action_to_string(p, action)
    }

    /// What both players know (armac's public-state string).
    fn public_state_string(&self) -> String {
        self.state.public_state_string()
    }

    /// The game this state belongs to.
    fn get_game(&self) -> PyGame {
        PyGame {
            game: self.game.clone(),
        }
    }

    fn clone(&self) -> PyState {
        PyState {
            state: self.state.clone(),
            game: self.game.clone(),
        }
    }

    fn __copy__(&self) -> PyState {
        self.clone()
    }

    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> PyState {
        self.clone()
    }

    fn __str__(&self) -> String {
        self.state.to_string()
    }

    fn __repr__(&self) -> String {
        format!(
            "<armac.State of {} at [{}]>",
            self.game.short_name(),
            armac::game::history_string(self.state.history())
        )
    }
}
