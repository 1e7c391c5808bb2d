//! Library errors as Python exceptions, and the panic guard.
//!
//! Classes (all importable from `armac`): `ConfigError` (a bad config, key or override; a
//! `ValueError`), `GameError` (unknown game, bad parameter, illegal action; a `ValueError`),
//! `PolicyError` (a policy that is malformed, for another game, or fails; a `ValueError`);
//! missing files raise `FileNotFoundError`, other I/O `OSError`, a non-empty run directory
//! `FileExistsError`, other bad input `ValueError`, and an internal failure (a panic, which
//! would be a bug) `RuntimeError`. Messages are the library's (the CLI's), with the chain of
//! causes joined by `: `.

use armac::eval::lbr::LbrError;
use armac::eval::matchup::MatchError;
use armac::game::GameError as LibGameError;
use armac::policy::PolicyError as LibPolicyError;
use armac::run::RunError;
use armac::run::config::ConfigError as LibConfigError;
use pyo3::exceptions::{
    PyFileExistsError, PyFileNotFoundError, PyOSError, PyRuntimeError, PyValueError,
};
use pyo3::prelude::*;
use std::error::Error;

pyo3::create_exception!(
    armac,
    ConfigError,
    PyValueError,
    "A bad config, key or override."
);
pyo3::create_exception!(
    armac,
    GameError,
    PyValueError,
    "An unknown game, a bad game parameter or an illegal action."
);
pyo3::create_exception!(
    armac,
    PolicyError,
    PyValueError,
    "A policy that is malformed, belongs to another game, or fails."
);

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("GameError", py.get_type::<GameError>())?;
    m.add("PolicyError", py.get_type::<PolicyError>())?;
    Ok(())
}

/// `error: cause: cause ...`, as `armac-eval` prints it.
pub fn chain(e: &(dyn Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.ends_with(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

/// The Python class of a library error (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Config,
    Game,
    Policy,
    Exists,
    NotFound,
    Os,
}

impl Class {
    fn err(self, text: String) -> PyErr {
        match self {
            Class::Config => ConfigError::new_err(text),
            Class::Game => GameError::new_err(text),
            Class::Policy => PolicyError::new_err(text),
            Class::Exists => PyFileExistsError::new_err(text),
            Class::NotFound => PyFileNotFoundError::new_err(text),
            Class::Os => PyOSError::new_err(text),
        }
    }
}

/// The exception class for the first error of the chain that has one.
fn class_of(e: &(dyn Error + 'static)) -> Option<Class> {
    if let Some(r) = e.downcast_ref::<RunError>() {
        return match r {
            RunError::Config(c) => class_of(c),
            RunError::Game(_) => Some(Class::Game),
            RunError::Policy(p) => class_of(p),
            RunError::RunExists(_) | RunError::NotARun { .. } => Some(Class::Exists),
            RunError::Io { source, .. } => class_of(source),
            RunError::Failed { source, .. } => class_of(source.as_ref()),
            _ => None,
        };
    }
    if let Some(c) = e.downcast_ref::<LibConfigError>() {
        return Some(match c {
            LibConfigError::NotFound { .. } => Class::NotFound,
            _ => Class::Config,
        });
    }
    if e.downcast_ref::<LibGameError>().is_some() {
        return Some(Class::Game);
    }
    if let Some(p) = e.downcast_ref::<LibPolicyError>() {
        return match p {
            LibPolicyError::Io { source, .. } => class_of(source),
            _ => Some(Class::Policy),
        };
    }
    // LBR and matches: the policy's failures and unusable answers are the policy's fault.
    if let Some(l) = e.downcast_ref::<LbrError>() {
        return match l {
            LbrError::Policy(p) => class_of(p),
            LbrError::BadProbabilities { .. } => Some(Class::Policy),
            LbrError::UnsupportedGame(_) => Some(Class::Game),
            LbrError::Options(_) | LbrError::Stopped => None,
        };
    }
    if let Some(m) = e.downcast_ref::<MatchError>() {
        return match m {
            MatchError::Policy { source, .. } => class_of(source),
            MatchError::BadLength { .. } => Some(Class::Policy),
            _ => e.source().and_then(class_of),
        };
    }
    if let Some(io) = e.downcast_ref::<std::io::Error>() {
        return Some(match io.kind() {
            std::io::ErrorKind::NotFound => Class::NotFound,
            _ => Class::Os,
        });
    }
    e.source().and_then(class_of)
}

/// A library error as a Python exception (see the module docs).
pub fn to_py(e: &(dyn Error + 'static)) -> PyErr {
    match class_of(e) {
        Some(class) => class.err(chain(e)),
        None => PyValueError::new_err(chain(e)),
    }
}

/// A failure to load a policy argument (a model, a run, a policy file, a policy name) as a
/// Python exception: `PolicyError`, except a file that is missing or unreadable
/// (`FileNotFoundError`, `OSError`).
pub fn policy_err(e: &(dyn Error + 'static)) -> PyErr {
    match class_of(e) {
        Some(class @ (Class::NotFound | Class::Os)) => class.err(chain(e)),
        _ => PolicyError::new_err(chain(e)),
    }
}

/// A [`RunError`] of loading a policy as a Python exception ([`policy_err`]).
pub fn policy_run_err(e: RunError) -> PyErr {
    policy_err(&e)
}

/// A [`RunError`] as a Python exception.
pub fn run_err(e: RunError) -> PyErr {
    to_py(&e)
}

/// Runs `f`, turning a panic into `RuntimeError` (with the panic's message) instead of letting
/// it unwind into Python.
pub fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(PyRuntimeError::new_err(format!(
                "internal error in armac (please report it): {msg}"
            )))
        }
    }
}
