//! armac: near-equilibrium strategies for imperfect-information games.
//!
//! Layers, lowest first (dependencies point down): [`game`] (the game API), [`games`] (Kuhn,
//! Leduc, Liar's Dice, Goofspiel), [`policy`], [`tree`] (compiled public trees), [`cfr`]
//! (tabular solvers), [`eval`] (exact best response / NashConv), [`search`] (GT-CFR and
//! re-solving over public belief states, burn-free), [`nn`] (the only module that
//! uses burn), [`run`] (configs, run directories, TensorBoard, progress). The binaries in
//! `src/bin` only parse arguments and call [`run`].

pub mod cfr;
pub mod eval;
pub mod game;
pub mod games;

pub mod nn;
pub mod policy;

pub mod rl;
pub mod run;
pub mod search;

pub mod tree;
pub mod util;
