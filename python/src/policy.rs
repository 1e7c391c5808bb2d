//! Policies from Python: armac tables (`armac.TabularPolicy`), ARMAC models (`armac.load_model`),
//! named policies (`"uniform"`, a run or model directory, a policy file) and Python callables
//! `f(state) -> probabilities`, all seen by the library through its `Policy` / `RangePolicy`
//! traits.

use crate::errors::{guarded, policy_run_err, to_py};
use crate::game::{PyGame, PyState, f32_array};
use armac::eval::lbr::{PerHand, RangePolicy};
use armac::game::{GameRef, State};
use armac::policy::{Policy, PolicyError, TabularPolicy};
use armac::rl::armac::policy::ArmacAveragePolicy;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A table of action probabilities per information-state string, for one game.
#[pyclass(name = "TabularPolicy", module = "armac", frozen)]
pub struct PyTabularPolicy {
    pub policy: Arc<TabularPolicy>,
}

/// A table from a dict `{infostate: [(action, prob), ...]}` for the game with load string
/// `game` (entries validated: non-negative, summing to 1, no action twice).
#[pyfunction]
pub fn tabular_policy(
    game: &str,
    table: HashMap<String, Vec<(usize, f64)>>,
) -> PyResult<PyTabularPolicy> {
    let policy = TabularPolicy::from_entries(game, table).map_err(|e| to_py(&e))?;
    Ok(PyTabularPolicy {
        policy: Arc::new(policy),
    })
}

#[pymethods]
impl PyTabularPolicy {
    /// The OpenSpiel load string of the game the table is for.
    #[getter]
    fn game(&self) -> String {
        self.policy.game.clone()
    }

    /// `{infostate: [(action, prob), ...]}`.
    fn table(&self) -> HashMap<String, Vec<(usize, f64)>> {
        self.policy.table.clone()
    }

    /// OpenSpiel's policy JSON (`{"game": ..., "policy": {...}}`), as `armac-eval` writes it.
    fn to_json(&self) -> String {
        self.policy.to_json()
    }

    /// Reads a policy JSON file (as written by `to_json` or `armac-train`).
    #[staticmethod]
    fn load(path: std::path::PathBuf) -> PyResult<PyTabularPolicy> {
        let policy = TabularPolicy::load(&path).map_err(|e| to_py(&e))?;
        Ok(PyTabularPolicy {
            policy: Arc::new(policy),
        })
    }

    /// Probabilities of the legal actions at `state` (aligned with `state.legal_actions()`).
    fn action_probabilities(&self, state: &PyState) -> PyResult<Vec<f64>> {
        self.policy
            .action_probabilities(state.state.as_ref())
            .map_err(|e| to_py(&e))
    }

    fn __len__(&self) -> usize {
        self.policy.table.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "<armac.TabularPolicy of {} ({} infostates)>",
            self.policy.game,
            self.policy.table.len()
        )
    }
}

/// An ARMAC network (a shipped model, a run or checkpoint directory): its average policy.
#[pyclass(name = "_Model", module = "armac", frozen)]
pub struct PyModel {
    pub policy: Arc<ArmacAveragePolicy>,
    pub game: GameRef,
    pub path: String,
}

/// Loads the average policy of an ARMAC model or run directory (`current=True`: its current
/// policy pi^t; `play_threshold`: instead of the checkpoint's `armac.play_threshold`); the
/// files are verified against the manifest where there is one.
#[pyfunction]
#[pyo3(signature = (path, current=false, play_threshold=None))]
pub fn load_model(
    py: Python<'_>,
    path: std::path::PathBuf,
    current: bool,
    play_threshold: Option<f64>,
) -> PyResult<PyModel> {
    if let Some(t) = play_threshold.filter(|t| !(0.0..1.0).contains(t)) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "play_threshold {} is outside [0, 1) (0 plays the network's probabilities as they are)",
            armac::util::check::short_number(t)
        )));
    }
    if !path.exists() {
        return Err(pyo3::exceptions::PyFileNotFoundError::new_err(format!(
            "no model or run directory at {}",
            path.display()
        )));
    }
    let dir = path.clone();
    let (game, policy) = py.detach(move || {
        guarded(|| armac::run::armac::load_checkpoint_policy(&dir).map_err(policy_run_err))
    })?;
    let policy = match play_threshold {
        Some(t) => policy.with_threshold(t),
        None => policy,
    };
    Ok(PyModel {
        policy: Arc::new(policy.with_current_policy(current)),
        game,
        path: path.display().to_string(),
    })
}

/// Fails unless `load_string` names `game` (compared as the library compares policy files).
/// A string that armac loads as the same game also matches (pyspiel writes every parameter).
fn same_game(game: &GameRef, load_string: &str) -> Result<(), PolicyError> {
    TabularPolicy::new(&game.load_string())
        .check_game(load_string)
        .or_else(|e| match armac::games::load_game(load_string) {
            Ok(g) if g.load_string() == game.load_string() => Ok(()),
            _ => Err(e),
        })
}

impl PyModel {
    /// Fails unless `load_string` names the model's game.
    fn check_game(&self, load_string: &str) -> PyResult<()> {
        same_game(&self.game, load_string).map_err(|_| {
            to_py(&PolicyError::WrongGame {
                found: self.game.load_string(),
                expected: load_string.to_string(),
            })
        })
    }
}

#[pymethods]
impl PyModel {
    /// The game the model plays.
    #[getter]
    fn game(&self) -> PyGame {
        PyGame {
            game: self.game.clone(),
        }
    }

    /// The policy's name (`armac-average-policy(epoch N)`).
    #[getter]
    fn name(&self) -> String {
        Policy::name(&self.policy)
    }

    /// Raises `PolicyError` unless `load_string` is the model's game (parameter order and
    /// spacing do not matter).
    fn require_game(&self, load_string: &str) -> PyResult<()> {
        self.check_game(load_string)
    }

    /// `(legal actions, probabilities)` at the state reached by `history` (chance outcomes
    /// included) in the model's game.
    fn history_probabilities(
        &self,
        py: Python<'_>,
        history: Vec<usize>,
    ) -> PyResult<(Vec<usize>, Vec<f64>)> {
        let (game, policy) = (self.game.clone(), self.policy.clone());
        py.detach(move || {
            guarded(|| {
                let state = armac::game::replay(game.as_ref(), &history).map_err(|e| to_py(&e))?;
                let probs = policy
                    .action_probabilities(state.as_ref())
                    .map_err(|e| to_py(&e))?;
                Ok((state.legal_actions(), probs))
            })
        })
    }

    /// Probabilities of the legal actions at an `armac.State` of the model's game.
    fn action_probabilities(&self, state: &PyState) -> PyResult<Vec<f64>> {
        self.check_game(&state.game.load_string())?;
        guarded(|| {
            self.policy
                .action_probabilities(state.state.as_ref())
                .map_err(|e| to_py(&e))
        })
    }

    /// Batched query: `tensors` (float32 bytes of `rows × information_state_tensor_size`) and
    /// `legal` (bytes of `rows × num_distinct_actions`, nonzero where legal) to a float32
    /// array of `rows × num_distinct_actions` probabilities.
    fn tensor_probabilities<'py>(
        &self,
        py: Python<'py>,
        tensors: Vec<u8>,
        legal: Vec<u8>,
        rows: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let policy = self.policy.clone();
        let probs = py.detach(move || {
            guarded(|| {
                let info: Vec<f32> = tensors
                    .chunks_exact(4)
                    .map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                let mask: Vec<bool> = legal.iter().map(|&b| b != 0).collect();
                policy
                    .tensor_probabilities(&info, &mask, rows)
                    .map_err(|e| to_py(&e))
            })
        })?;
        let probs: Vec<f32> = probs.iter().map(|&p| p as f32).collect();
        f32_array(py, &probs)
    }

    /// The policy as an ONNX model (protobuf bytes): information-state tensors and legal
    /// masks in, the probabilities `tensor_probabilities` gives out. Feed-forward networks only.
    fn to_onnx<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let policy = self.policy.clone();
        let bytes = py.detach(move || guarded(|| policy.to_onnx().map_err(|e| to_py(&e))))?;
        Ok(pyo3::types::PyBytes::new(py, &bytes))
    }

    fn __repr__(&self) -> String {
        format!(
            "<armac model {} ({}) from {}>",
            Policy::name(&self.policy),
            self.game.load_string(),
            self.path
        )
    }
}

/// A Python callable `f(state) -> probabilities` as a library policy. `f` gets an
/// `armac.State` (a copy) and returns the probabilities of `state.legal_actions()` in order
/// (a sequence) or a dict `{action: probability}` (missing actions 0). Each call takes the GIL,
/// so calls from several threads are correct but run one at a time. An exception raised by `f`
/// is kept and re-raised by the entry point that called the library.
pub struct PyCallable {
    func: Py<PyAny>,
    name: String,
    game: GameRef,
    /// The first exception `f` raised (re-raised after the library returns).
    pub raised: Mutex<Option<PyErr>>,
}

impl PyCallable {
    pub fn new(py: Python<'_>, func: Py<PyAny>, game: GameRef) -> PyCallable {
        let name = func
            .bind(py)
            .getattr("__name__")
            .and_then(|n| n.extract::<String>())
            .unwrap_or_else(|_| "python-callable".into());
        PyCallable {
            func,
            name: format!("python:{name}"),
            game,
            raised: Mutex::new(None),
        }
    }

    /// The kept exception, if `f` raised one.
    pub fn take_raised(&self) -> Option<PyErr> {
        self.raised.lock().ok().and_then(|mut r| r.take())
    }

    fn call(&self, state: &dyn State) -> Result<Vec<f64>, String> {
        let legal = state.legal_actions();
        Python::attach(|py| {
            let arg = PyState {
                state: state.clone_box(),
                game: self.game.clone(),
            };
            let out = self.func.bind(py).call1((arg,)).map_err(|e| {
                let text = e.to_string();
                if let Ok(mut r) = self.raised.lock()
                    && r.is_none()
                {
                    *r = Some(e);
                }
                format!("raised {text}")
            })?;
            probabilities_from(&out, &legal)
        })
    }
}

/// The probabilities of `legal` from what a callable returned (a sequence aligned with
/// `legal`, or a dict by action), checked: finite, non-negative, summing to 1 within 1e-6.
fn probabilities_from(out: &Bound<'_, PyAny>, legal: &[usize]) -> Result<Vec<f64>, String> {
    let probs: Vec<f64> = if let Ok(d) = out.cast::<PyDict>() {
        let mut v = vec![0.0; legal.len()];
        for (k, p) in d.iter() {
            let a: usize = k
                .extract()
                .map_err(|_| format!("dict key {k} is not an action"))?;
            let p: f64 = p
                .extract()
                .map_err(|_| format!("probability {p} of action {a} is not a number"))?;
            match legal.binary_search(&a) {
                Ok(i) => v[i] = p,
                Err(_) if p == 0.0 => {}
                Err(_) => return Err(format!("action {a} is not legal (legal: {legal:?})")),
            }
        }
        v
    } else {
        let seq = out
            .call_method0("tolist")
            .unwrap_or_else(|_| out.clone())
            .extract::<Vec<f64>>()
            .map_err(|_| {
                format!("returned {out}, not a sequence of probabilities or a dict by action")
            })?;
        if seq.len() != legal.len() {
            return Err(format!(
                "returned {} probabilities for {} legal actions {legal:?}",
                seq.len(),
                legal.len()
            ));
        }
        seq
    };
    if probs.iter().any(|p| !p.is_finite() || *p < 0.0) {
        return Err(format!(
            "returned probabilities {probs:?} with a negative or non-finite one"
        ));
    }
    let sum: f64 = probs.iter().sum();
    if (sum - 1.0).abs() > 1e-6 {
        return Err(format!(
            "returned probabilities {probs:?} that sum to {sum}, not 1"
        ));
    }
    Ok(probs)
}

impl Policy for PyCallable {
    fn action_probabilities(&self, state: &dyn State) -> Result<Vec<f64>, PolicyError> {
        if state.is_terminal() || state.is_chance() {
            return Err(PolicyError::NotADecision);
        }
        self.call(state).map_err(|reason| PolicyError::Failed {
            policy: self.name.clone(),
            reason: format!(
                "at history [{}]: {reason}",
                armac::game::history_string(state.history())
            ),
        })
    }

    fn name(&self) -> String {
        self.name.clone()
    }
}

/// A policy argument of `armac.lbr` / `armac.match` / `armac.nash_conv`, resolved.
pub enum PolicyArg {
    /// `"uniform"`, a directory, a policy file: resolved by the library by name.
    Named(String),
    Tabular(Arc<TabularPolicy>),
    Model(Arc<ArmacAveragePolicy>, GameRef),
    Callable(Arc<PyCallable>),
}

impl PolicyArg {
    /// Reads a Python object: a str / path, an `armac.TabularPolicy`, a model, or a callable.
    pub fn extract(py: Python<'_>, obj: &Bound<'_, PyAny>, game: &GameRef) -> PyResult<PolicyArg> {
        if let Ok(t) = obj.extract::<PyRef<'_, PyTabularPolicy>>() {
            return Ok(PolicyArg::Tabular(t.policy.clone()));
        }
        if let Ok(m) = obj.extract::<PyRef<'_, PyModel>>() {
            return Ok(PolicyArg::Model(m.policy.clone(), m.game.clone()));
        }
        if let Ok(s) = obj.extract::<std::path::PathBuf>() {
            return Ok(PolicyArg::Named(s.display().to_string()));
        }
        if obj.is_callable() {
            let func = obj.clone().unbind();
            return Ok(PolicyArg::Callable(Arc::new(PyCallable::new(
                py,
                func,
                game.clone(),
            ))));
        }
        Err(crate::errors::PolicyError::new_err(format!(
            "{obj} is not a policy: pass \"uniform\", a model or run directory, a policy file, \
             an armac.TabularPolicy, a model from armac.load_model, or a callable f(state) -> \
             probabilities"
        )))
    }

    /// The exception a callable raised, if any.
    pub fn raised(&self) -> Option<PyErr> {
        match self {
            PolicyArg::Callable(c) => c.take_raised(),
            _ => None,
        }
    }

    /// Fails unless the policy is for the game with load string `game`.
    fn check_game(&self, game: &str, what: &str) -> Result<(), PolicyError> {
        match self {
            PolicyArg::Tabular(t) => t.check_game(game),
            PolicyArg::Model(_, g) => same_game(g, game).map_err(|_| PolicyError::WrongGame {
                found: format!("{} ({what})", g.load_string()),
                expected: game.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// The policy for matches and exact evaluations of `game`.
    pub fn policy(&self, game: &GameRef, flag: &str) -> PyResult<Box<dyn Policy>> {
        self.check_game(&game.load_string(), flag)
            .map_err(|e| to_py(&e))?;
        Ok(match self {
            PolicyArg::Named(name) => {
                armac::run::evaluate::match_policy(name, game.as_ref(), flag, Default::default())
                    .map_err(policy_run_err)?
            }
            PolicyArg::Tabular(t) => Box::new(t.clone()),
            PolicyArg::Model(m, _) => Box::new(m.clone()),
            PolicyArg::Callable(c) => Box::new(c.clone()),
        })
    }

    /// AIVAT's base value estimate from this argument: the critic of the ARMAC network it
    /// names or holds, or the value network of the Student of Games policy it names (`None`
    /// for other policies and for recurrent networks).
    pub fn aivat_base(&self, game: &GameRef) -> Option<armac::run::evaluate::AivatBase> {
        use armac::run::evaluate::AivatBase;
        match self {
            PolicyArg::Named(name) => AivatBase::of(name, "uniform", game.as_ref()),
            PolicyArg::Model(m, _) => m.critic().map(|c| AivatBase::Critic(Box::new(c))),
            _ => None,
        }
    }

    /// Whether this argument names a policy that searches at every decision (`sog:DIR`).
    pub fn searches(&self) -> bool {
        matches!(self, PolicyArg::Named(n) if n.starts_with("sog:"))
    }

    /// The policy for LBR on the Hold'em game with load string `game`: models answer whole
    /// ranges at once, tables and callables hand by hand.
    pub fn range_policy(&self, game: &str) -> PyResult<Box<dyn RangePolicy>> {
        self.check_game(game, "policy").map_err(|e| to_py(&e))?;
        Ok(match self {
            PolicyArg::Named(name) => {
                armac::run::evaluate::lbr_policy(name, game, false, Default::default())
                    .map_err(policy_run_err)?
            }
            PolicyArg::Tabular(t) => Box::new(PerHand(t.clone())),
            PolicyArg::Model(m, _) => Box::new(m.clone()),
            PolicyArg::Callable(c) => Box::new(PerHand(c.clone())),
        })
    }
}
