//! Exact diagnostics of ARMAC runs; they live in [`crate::rl::armac::diagnostics`].

pub use crate::rl::armac::diagnostics::*;
