//! `[armac]`: the section is [`ArmacSettings`], which `rl::armac` owns with every key's doc,
//! default and bounds; the config checks it ([`ArmacSettings::validate`], its error naming the
//! key) together with the run's schedule, and hands the trainer an [`ArmacRun`].

use super::{Config, ConfigError};
pub use crate::rl::armac::{ArmacRun, ArmacSettings, PolyakScope};

impl Config {
    /// Validates an ARMAC config into the settings the trainer runs with.
    pub fn armac(&self) -> Result<ArmacRun, ConfigError> {
        let a = self.armac.as_ref().ok_or_else(|| ConfigError::Value {
            key: "armac".into(),
            reason: "missing: add an [armac] section".into(),
        })?;
        a.validate()?;
        self.check_schedule()?;
        Ok(ArmacRun {
            game: self.game.clone(),
            eval_every: self.eval.every,
            settings: a.clone(),
        })
    }
}
