//! Reinforcement learning above the networks: the two learning algorithms, each in its own
//! module.
//!
//! * [`armac`] — ARMAC (Gruslys et al., "The Advantage Regret-Matching Actor-Critic", 2020): the
//!   trainer and its epoch loop, the actor threads, Tree-Backup(λ) targets, the replay and
//!   reservoir memories, the reservoir of past networks, the exploration candidates, the exact
//!   bookkeeping its tests compare against, and its typed settings.
//! * [`sog`] — Student of Games (Schmid et al. 2023): sound self-play with continual
//!   re-solving, the query buffer and the CVPN's example replay, on small games and on Hold'em.
//!
//! The networks themselves live in [`crate::nn`]; this module reaches them only through that
//! module's plain-data batches and inference handles.

pub mod armac;
pub mod error;
pub mod sog;

pub use error::TrainError;
