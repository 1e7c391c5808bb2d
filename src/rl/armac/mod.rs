//! The ARMAC trainer above the networks: typed settings ([`settings`]), the transport between
//! learner and actors ([`transport`]) and the exact diagnostics of small games
//! ([`diagnostics`]).

pub mod diagnostics;
pub mod error;
pub mod settings;
pub mod transport;

pub use error::TrainError;
pub use settings::{ArmacSettings, PolyakScope, default_reward_scale, net_config, reward_scale};
