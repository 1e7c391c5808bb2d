//! `solve`, `nash_conv`, `lbr`, `match` and `train`: argument conversion around the library's
//! entry points, with the GIL released while they run.

use crate::errors::{guarded, run_err, to_py};
use crate::game::{PyGame, load};
use crate::policy::{PolicyArg, PyTabularPolicy};
use armac::eval::Watch;
use armac::eval::lbr::{LbrOptions, run_lbr_watched};
use armac::game::{Game, GameRef};
use armac::run::evaluate::lbr_command::parse_variants;
use armac::run::evaluate::{MatchOptions, exact_tree, holdem_game};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// A game argument: an `armac.Game` or a game string.
fn game_of(obj: &Bound<'_, PyAny>) -> PyResult<GameRef> {
    if let Ok(g) = obj.extract::<PyRef<'_, PyGame>>() {
        return Ok(g.game.clone());
    }
    if let Ok(s) = obj.extract::<String>() {
        return load(&s);
    }
    Err(crate::errors::GameError::new_err(format!(
        "{obj} is not a game: pass an armac.Game or an OpenSpiel game string"
    )))
}

/// A result as a Python dict: the keys and values of its JSON form (`None` for JSON `null`,
/// which is also how a NaN is written), so every result reaches Python as it reaches a
/// `.json` file.
fn to_dict<'py>(py: Python<'py>, result: &impl serde::Serialize) -> PyResult<Bound<'py, PyDict>> {
    let value = serde_json::to_value(result)
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(format!("result: {e}")))?;
    json_to_py(py, &value)?
        .cast_into::<PyDict>()
        .map_err(|_| pyo3::exceptions::PyRuntimeError::new_err("result: not a JSON object"))
}

/// A JSON value as the Python value `json.loads` gives.
fn json_to_py<'py>(py: Python<'py>, value: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    use serde_json::Value;
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => u.into_pyobject(py)?.into_any(),
            (None, Some(i)) => i.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(json_to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let d = PyDict::new(py);
            for (k, v) in map {
                d.set_item(k, json_to_py(py, v)?)?;
            }
            d.into_any()
        }
    })
}

/// Runs `f` on a worker thread with the GIL released, checking for Python signals on this
/// thread every 50 ms while it runs (and returning as soon as it ends); on the first signal
/// (Ctrl-C: `KeyboardInterrupt`) `stop` is set, `f` is left to reach its next safe point, and
/// the signal's exception is returned beside `f`'s result.
fn interruptible<T: Send>(
    py: Python<'_>,
    stop: &AtomicBool,
    f: impl FnOnce() -> PyResult<T> + Send,
) -> (PyResult<T>, Option<PyErr>) {
    let mut signal = None;
    let done = (Mutex::new(false), Condvar::new());
    let result = std::thread::scope(|s| {
        let done = &done;
        let worker = s.spawn(move || {
            let r = guarded(f);
            *done.0.lock().unwrap_or_else(|e| e.into_inner()) = true;
            done.1.notify_all();
            r
        });
        loop {
            let finished = py.detach(|| {
                let guard = done.0.lock().unwrap_or_else(|e| e.into_inner());
                let (guard, _) = done
                    .1
                    .wait_timeout_while(guard, Duration::from_millis(50), |d| !*d)
                    .unwrap_or_else(|e| e.into_inner());
                *guard
            });
            if finished {
                break;
            }
            if signal.is_none()
                && let Err(e) = py.check_signals()
            {
                stop.store(true, Ordering::SeqCst);
                signal = Some(e);
            }
        }
        worker
            .join()
            .unwrap_or_else(|_| Err(pyo3::exceptions::PyRuntimeError::new_err("worker panicked")))
    });
    (result, signal)
}

/// [`interruptible`] with the library's interrupt flag (the one `armac-train` and the long
/// evaluations poll), cleared before and after: `f` gets the flag to poll.
fn with_stop_flag<T: Send>(
    py: Python<'_>,
    f: impl FnOnce(&AtomicBool) -> PyResult<T> + Send,
) -> (PyResult<T>, Option<PyErr>) {
    let stop = armac::run::external_interrupt_flag();
    stop.store(false, Ordering::SeqCst);
    let out = interruptible(py, &stop, || f(&stop));
    stop.store(false, Ordering::SeqCst);
    out
}

/// A Python value of a `[solver]` key as TOML.
fn toml_value(key: &str, v: &Bound<'_, PyAny>) -> PyResult<toml::Value> {
    if v.is_instance_of::<PyBool>() {
        return Ok(toml::Value::Boolean(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(toml::Value::Integer(v.extract()?));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(toml::Value::Float(v.extract()?));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(toml::Value::String(v.extract()?));
    }
    Err(crate::errors::ConfigError::new_err(format!(
        "key `solver.{key}`: {v} is not a bool, int, float or str"
    )))
}

/// Every `[solver] algorithm` name.
#[pyfunction]
pub fn algorithms() -> Vec<&'static str> {
    armac::run::solvers::algorithm_names()
}

/// Runs a `[solver]` algorithm in memory and returns its average policy as a table.
#[pyfunction]
#[pyo3(signature = (game, algorithm="cfr+", iterations=1000, seed=0, keys=None))]
pub fn solve(
    py: Python<'_>,
    game: &Bound<'_, PyAny>,
    algorithm: &str,
    iterations: u64,
    seed: u64,
    keys: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyTabularPolicy> {
    let game = game_of(game)?;
    let mut table = toml::Table::new();
    if let Some(keys) = keys {
        for (k, v) in keys.iter() {
            let k: String = k.extract()?;
            let value = toml_value(&k, &v)?;
            table.insert(k, value);
        }
    }
    let name = game.load_string();
    let algorithm = algorithm.to_string();
    let stop = AtomicBool::new(false);
    let (result, signal) = interruptible(py, &stop, || {
        let solved = armac::run::solvers::solve(&name, &algorithm, iterations, seed, table, &stop)
            .map_err(run_err)?;
        Ok(armac::run::tabular::to_tabular_policy(
            &solved.tree,
            solved.game.as_ref(),
            &solved.policy,
        ))
    });
    if let Some(e) = signal {
        return Err(e);
    }
    Ok(PyTabularPolicy {
        policy: Arc::new(result?),
    })
}

/// `(nash_conv, best_response_values, on_policy_values)` of a policy on a game whose tree
/// compiles.
#[pyfunction]
#[pyo3(signature = (game, policy, max_histories=armac::tree::DEFAULT_MAX_HISTORIES))]
pub fn nash_conv_report(
    py: Python<'_>,
    game: &Bound<'_, PyAny>,
    policy: &Bound<'_, PyAny>,
    max_histories: usize,
) -> PyResult<(f64, [f64; 2], [f64; 2])> {
    let game = game_of(game)?;
    let arg = PolicyArg::extract(py, policy, &game)?;
    let p = arg.policy(&game, "policy")?;
    let result = py.detach(|| {
        guarded(|| {
            let tree = exact_tree(game.as_ref(), max_histories).map_err(run_err)?;
            let flat = armac::eval::tree_policy(&tree, game.as_ref(), p.as_ref())
                .map_err(|e| to_py(&e))?;
            let r = armac::eval::nash_conv(&tree, &flat);
            Ok((r.nash_conv, r.best_response_values, r.on_policy_values))
        })
    });
    if let Some(e) = arg.raised() {
        return Err(e);
    }
    result
}

/// Local best response against a policy in heads-up no-limit Hold'em.
#[pyfunction]
#[pyo3(signature = (policy, variant="fcpa", hands=10_000, seed=0, threads=None, game="hunl_fcpa", preflop_samples=armac::eval::lbr::DEFAULT_PREFLOP_SAMPLES, rule="standard"))]
#[allow(clippy::too_many_arguments)]
pub fn lbr<'py>(
    py: Python<'py>,
    policy: &Bound<'py, PyAny>,
    variant: &str,
    hands: u64,
    seed: u64,
    threads: Option<usize>,
    game: &str,
    preflop_samples: usize,
    rule: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let variants = parse_variants(variant).map_err(run_err)?;
    let rule = armac::eval::lbr::LbrRule::parse(rule)
        .ok_or_else(|| PyValueError::new_err(format!("rule `{rule}`: standard or sharp")))?;
    let [variant] = variants[..] else {
        return Err(PyValueError::new_err(format!(
            "variant `{variant}`: one of fc, fcpa, fc12-fcpa34 per call"
        )));
    };
    armac::util::check::hands("hands", hands).map_err(PyValueError::new_err)?;
    if preflop_samples == 0 {
        return Err(PyValueError::new_err("preflop_samples must be positive"));
    }
    let poker = holdem_game(game, &variants, "LBR").map_err(run_err)?;
    let game_ref: GameRef = load(&poker.load_string())?;
    let arg = PolicyArg::extract(py, policy, &game_ref)?;
    // Callables run one at a time under the GIL: one worker unless asked for more.
    let threads = threads.unwrap_or(match arg {
        PolicyArg::Callable(_) => 1,
        _ => 0,
    });
    if threads > 1024 {
        return Err(PyValueError::new_err(format!(
            "threads {threads}: at most 1024 (None: one per core)"
        )));
    }
    let p = arg.range_policy(&poker.load_string())?;
    let opts = LbrOptions {
        variant,
        hands,
        seed,
        threads,
        preflop_samples,
        defer_range_updates: true,
        rule,
        keep_deal_means: false,
    };
    // Ctrl-C: the interpreter's signal is seen within 50 ms and stops LBR after the deals in
    // play; `KeyboardInterrupt` is raised instead of a partial result.
    let (result, signal) = with_stop_flag(py, |stop| {
        let watch = Watch {
            progress: None,
            stop: Some(stop),
        };
        run_lbr_watched(&poker, p.as_ref(), &opts, watch, false)
            .map(|r| r.0)
            .map_err(|e| to_py(&e))
    });
    if let Some(e) = signal {
        return Err(e);
    }
    if let Some(e) = arg.raised() {
        return Err(e);
    }
    let d = to_dict(py, &result?)?;
    d.set_item("game", poker.load_string())?;
    Ok(d)
}

/// Policy `a` against policy `b`, both seats (exact where the tree compiles).
#[pyfunction]
#[pyo3(signature = (a, b, game=None, hands=10_000, seed=0, sampled=false, max_histories=armac::tree::DEFAULT_MAX_HISTORIES, hands_out=None, aivat=false))]
#[allow(clippy::too_many_arguments)]
pub fn play_match<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    game: Option<&Bound<'py, PyAny>>,
    hands: u64,
    seed: u64,
    sampled: bool,
    max_histories: usize,
    hands_out: Option<std::path::PathBuf>,
    aivat: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let game = match game {
        Some(g) => game_of(g)?,
        None => load("hunl_fcpa")?,
    };
    let (arg_a, arg_b) = (
        PolicyArg::extract(py, a, &game)?,
        PolicyArg::extract(py, b, &game)?,
    );
    let (pa, pb) = (arg_a.policy(&game, "a")?, arg_b.policy(&game, "b")?);
    let opts = MatchOptions {
        hands,
        seed,
        sampled,
        max_histories,
        aivat,
        aivat_values: Default::default(),
    };
    let base = if aivat {
        let base = arg_a.aivat_base(&game).or_else(|| arg_b.aivat_base(&game));
        Some(base.ok_or_else(|| {
            PyValueError::new_err(
                "aivat=True values hands with an ARMAC network's critic or a Student of Games \
                 policy's value network, and neither a nor b is a feed-forward ARMAC network \
                 (a model, or a run, checkpoint or model directory) or a Hold'em sog:DIR",
            )
        })?)
    } else {
        None
    };
    let searching = arg_a.searches() || arg_b.searches();
    let estimates = base.as_ref().map(|base| {
        armac::run::evaluate::aivat_estimates(
            game.as_ref(),
            (pa.as_ref(), pb.as_ref()),
            base,
            opts.aivat_values,
            searching,
            seed,
        )
    });
    let values = estimates.as_ref().map(|[x, y]| [x.as_ref(), y.as_ref()]);
    // Ctrl-C stops the match after the deal in play (the library polls the flag) and raises
    // `KeyboardInterrupt` instead of a partial result.
    let (result, signal) = with_stop_flag(py, |_| {
        armac::run::evaluate::play_match_valued(
            game.as_ref(),
            pa.as_ref(),
            pb.as_ref(),
            &opts,
            hands_out.as_deref(),
            values,
        )
        .map_err(run_err)
    });
    if let Some(e) = signal {
        return Err(e);
    }
    if let Some(e) = arg_a.raised().or_else(|| arg_b.raised()) {
        return Err(e);
    }
    let out = result?;
    let mbb = out.big_blind.map(|bb| out.report.mbb_per_hand(bb));
    to_dict(
        py,
        &MatchResult {
            game: game.load_string(),
            a: pa.name(),
            b: pb.name(),
            seed,
            report: &out.report,
            mean_mbb: mbb.map(|m| m.0),
            ci95_mbb: mbb.map(|m| m.1),
            aivat_mean_mbb: out
                .report
                .aivat
                .as_ref()
                .zip(out.big_blind)
                .map(|(v, bb)| 1000.0 * v.mean / bb),
            aivat_ci95_mbb: out
                .report
                .aivat
                .as_ref()
                .zip(out.big_blind)
                .map(|(v, bb)| 1000.0 * v.ci95 / bb),
            hands_written: out.hands_written,
        },
    )
}

/// What `armac.match` returns: the match report with the game, the policies, the seed and,
/// in poker, the figures in milli-big-blinds per hand.
#[derive(serde::Serialize)]
struct MatchResult<'a> {
    game: String,
    a: String,
    b: String,
    seed: u64,
    #[serde(flatten)]
    report: &'a armac::eval::matchup::MatchReport,
    mean_mbb: Option<f64>,
    ci95_mbb: Option<f64>,
    /// The AIVAT estimate in milli-big-blinds per hand (poker, with `aivat=True`); in chips
    /// it is `aivat.mean`.
    #[serde(skip_serializing_if = "Option::is_none")]
    aivat_mean_mbb: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    aivat_ci95_mbb: Option<f64>,
    /// Hands written to `hands_out` (0 without it).
    hands_written: u64,
}

/// Runs a config as `armac-train` does; returns the run's summary as a dict.
#[pyfunction]
#[pyo3(signature = (config=None, out=None, max_seconds=None, max_cpu_seconds=None, overrides=Vec::new(), resume=false, overwrite=false, quiet=true))]
#[allow(clippy::too_many_arguments)]
pub fn train<'py>(
    py: Python<'py>,
    config: Option<String>,
    out: Option<std::path::PathBuf>,
    max_seconds: Option<f64>,
    max_cpu_seconds: Option<f64>,
    overrides: Vec<String>,
    resume: bool,
    overwrite: bool,
    quiet: bool,
) -> PyResult<Bound<'py, PyDict>> {
    for (name, v) in [
        ("max_seconds", max_seconds),
        ("max_cpu_seconds", max_cpu_seconds),
    ] {
        if let Some(v) = v
            && !(v.is_finite() && v > 0.0)
        {
            return Err(PyValueError::new_err(format!(
                "{name} must be a positive number of seconds, not {v}"
            )));
        }
    }
    let opts = armac::run::TrainOptions {
        out,
        max_seconds,
        max_cpu_seconds,
        resume,
        quiet,
        overwrite,
    };
    // The interpreter keeps its own signal handlers; Ctrl-C reaches the run through this flag.
    let stop = armac::run::external_interrupt_flag();
    stop.store(false, Ordering::SeqCst);
    let (result, signal) = interruptible(py, &stop, || {
        armac::run::train(config.as_deref(), &overrides, &opts).map_err(run_err)
    });
    stop.store(false, Ordering::SeqCst);
    let summary = result?;
    if let Some(e) = signal {
        return Err(e);
    }
    to_dict(py, &summary)
}
