//! `armac._armac`: the Python extension behind the `armac` package (python/armac). Thin
//! bindings over the library: games and states (`game`), policies (`policy`) and the
//! solvers, evaluators and training runs (`api`). Every entry point releases the GIL while
//! Rust computes, turns library errors into Python exceptions (`errors`) and catches panics
//! (`errors::guarded`) so that none crosses into Python.

mod api;
mod errors;
mod game;
mod policy;

use pyo3::prelude::*;

#[pymodule]
fn _armac(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<game::PyGame>()?;
    m.add_class::<game::PyState>()?;
    m.add_class::<policy::PyTabularPolicy>()?;
    m.add_class::<policy::PyModel>()?;
    m.add_function(wrap_pyfunction!(game::load_game, m)?)?;
    m.add_function(wrap_pyfunction!(api::solve, m)?)?;
    m.add_function(wrap_pyfunction!(api::nash_conv_report, m)?)?;
    m.add_function(wrap_pyfunction!(api::lbr, m)?)?;
    m.add_function(wrap_pyfunction!(api::play_match, m)?)?;
    m.add_function(wrap_pyfunction!(api::train, m)?)?;
    m.add_function(wrap_pyfunction!(policy::load_model, m)?)?;
    m.add_function(wrap_pyfunction!(policy::tabular_policy, m)?)?;
    m.add_function(wrap_pyfunction!(api::algorithms, m)?)?;
    Ok(())
}
