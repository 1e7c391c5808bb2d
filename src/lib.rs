//! armac: near-equilibrium strategies for imperfect-information games.
//!
//! Layers, lowest first (dependencies point down the list, never up):
//! [`util`] (RNG, hashing, atomic writes), [`game`] (the game API and conformance suite),
//! [`games`] (Kuhn, Leduc, Liar's Dice, Goofspiel, universal poker; the registry by name),
//! [`policy`], [`tree`] (compiled public trees, history trees, tensor layouts, [`tree::TreePolicy`]),
//! [`cfr`] (the CFR family: full-width, MCCFR, POS, FTRL/OMD) and [`eval`] (best response,
//! NashConv, LBR), [`search`] (GT-CFR and re-solving over public belief states, burn-free),
//! [`nn`] (the only module that uses burn: ARMAC's networks and the batched
//! public-tree solvers), [`rl`] (ARMAC's actors, targets, replay, reservoir), [`run`] (configs,
//! the typed solver registry, run directories, checkpoints, TensorBoard), [`bench`] (benchmark
//! workloads). The three binaries in `src/bin` (`armac-train`, `armac-eval`, `armac-bench`) only
//! parse arguments and call the library.

pub mod bench;
pub mod cfr;
pub mod cluster;
pub mod eval;
pub mod game;
pub mod games;
pub mod nn;
pub mod policy;
pub mod rl;
pub mod run;
pub mod search;
pub mod serve;
pub mod tree;
pub mod util;
