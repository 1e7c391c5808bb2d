//! The checks shared by the config sections: the helpers live in [`crate::util::check`] (so
//! that `rl::armac`'s settings validate with the same bounds and messages); the schedule's
//! keys are checked here.

use super::{Config, ConfigError};
pub(crate) use crate::util::check::{MAX_THREADS, Section};

impl Config {
    /// The `[eval]` and `[checkpoint]` keys: `eval.every` at least 1, `checkpoint.every_seconds`
    /// above 0 and `checkpoint.every_epochs` at least 1 (in every run kind).
    pub(crate) fn check_schedule(&self) -> Result<(), ConfigError> {
        Section("eval").at_least_one(&[("every", self.eval.every as usize)])?;
        let seconds = self.checkpoint.every_seconds;
        Section("checkpoint").require(
            !(seconds.is_nan() || seconds <= 0.0),
            "every_seconds",
            "must be positive",
        )?;
        // The same bound in every run kind, although only ARMAC and SoG count epochs.
        Section("checkpoint")
            .at_least_one(&[("every_epochs", self.checkpoint.every_epochs as usize)])?;
        Ok(())
    }
}
