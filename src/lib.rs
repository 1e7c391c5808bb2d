//! armac: near-equilibrium strategies for imperfect-information games.
//!
//! Layers, lowest first (dependencies point down the list, never up; `tests/layers.rs`
//! checks it): [`util`] (RNG, hashing, atomic writes), [`game`] (the game API and conformance
//! suite), [`games`] (Kuhn, Leduc, Liar's Dice, Goofspiel, universal poker; the registry by
//! name), [`policy`], [`tree`] (compiled public trees, history trees, tensor layouts,
//! [`tree::TreePolicy`]), [`eval`] (best response, NashConv, LBR, matches), [`cfr`] (the CFR
//! family: full-width, MCCFR, POS, FTRL/OMD), [`search`] (GT-CFR and re-solving over public
//! belief states, burn-free), [`nn`] (the only module that uses burn: ARMAC's networks, the
//! CVPN, the batched public-tree solvers, devices), [`rl`] (the learning algorithms:
//! [`rl::armac`] and Student of Games in [`rl::sog`]), [`cluster`] (the Redis transport
//! between an ARMAC learner and remote actors), [`run`] (configs, run directories,
//! checkpoints, TensorBoard, the drivers of trainers and solvers), [`serve`] (the browser
//! viewer of `armac-eval serve`), [`bench`](mod@bench) (benchmark workloads). The four binaries in
//! `src/bin` (`armac-train`, `armac-eval`, `armac-bench`, `armac-actor`) parse arguments and
//! call the library.

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
