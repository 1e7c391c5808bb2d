//! Checks of configuration values, shared by the config sections of every layer above
//! (`rl::armac::ArmacSettings::validate`, the run layer's `[sog]`, `[eval]` ...): one helper
//! per kind of bound, each with one message, so that a key has the same bounds and the same
//! error wherever it is read.

/// A value refused: the dotted key (`armac.lambda`) and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("config key `{key}`: {reason}")]
pub struct KeyError {
    /// The dotted key (`section.key`).
    pub key: String,
    /// Why the value is refused.
    pub reason: String,
}

/// Most threads one count key may ask for (`armac.actors`, `armac.learner_threads`,
/// `sog.selfplay.actors`, `sog.selfplay.solvers`): a fixed bound, far above the cores of any
/// machine the runs are meant for and far below what a kernel refuses.
pub const MAX_THREADS: usize = 1024;
/// Widest hidden layer of a network.
pub const MAX_HIDDEN: usize = 65_536;
/// Most hidden layers of a network.
pub const MAX_LAYERS: usize = 64;
/// Cap on the estimated f32 parameter bytes of one network (`hidden² × layers × 4`).
pub const MAX_NETWORK_BYTES: u128 = 8 << 30;

/// The keys of one section (`armac`, `sog`, ...): builds errors that name `section.key`.
#[derive(Clone, Copy, Debug)]
pub struct Section(pub &'static str);

impl Section {
    /// The error for `section.key`.
    pub fn error(self, key: &str, reason: &str) -> KeyError {
        KeyError {
            key: format!("{}.{key}", self.0),
            reason: reason.to_string(),
        }
    }

    /// Refuses `key` with `reason` unless `ok`.
    pub fn require(self, ok: bool, key: &str, reason: &str) -> Result<(), KeyError> {
        if ok {
            Ok(())
        } else {
            Err(self.error(key, reason))
        }
    }

    /// Every count must be at least 1 (the first one that is not is named).
    pub fn at_least_one(self, counts: &[(&str, usize)]) -> Result<(), KeyError> {
        counts
            .iter()
            .try_for_each(|&(key, v)| self.require(v != 0, key, "must be at least 1"))
    }

    /// Each `(key, value, max, what)` at most `max` (`what`: the unit or reason, in the message).
    pub fn at_most(self, values: &[(&str, usize, usize, &str)]) -> Result<(), KeyError> {
        values.iter().try_for_each(|&(key, v, max, what)| {
            self.require(v <= max, key, &format!("must be at most {max} ({what})"))
        })
    }

    /// A network's width and depth: `hidden` at most [`MAX_HIDDEN`], `layers` at most
    /// [`MAX_LAYERS`], and the estimated parameter bytes `hidden² × layers × 4` at most
    /// [`MAX_NETWORK_BYTES`] (8 GiB), so no config asks for an allocation the machine cannot
    /// make. `keys`: the two keys' names in this section.
    pub fn network(self, keys: (&str, &str), hidden: usize, layers: usize) -> Result<(), KeyError> {
        self.at_most(&[
            (keys.0, hidden, MAX_HIDDEN, "units per hidden layer"),
            (keys.1, layers, MAX_LAYERS, "hidden layers"),
        ])?;
        let bytes = (hidden as u128).pow(2) * layers as u128 * 4;
        self.require(
            bytes <= MAX_NETWORK_BYTES,
            keys.0,
            &format!(
                "with {} = {layers}, the network's parameters would take about {} MiB \
                 ({}² × {layers} × 4 bytes), over the cap of {} MiB",
                keys.1,
                bytes >> 20,
                hidden,
                MAX_NETWORK_BYTES >> 20
            ),
        )
    }

    /// A finite number above 0.
    pub fn positive(self, key: &str, v: f64) -> Result<(), KeyError> {
        self.require(v.is_finite() && v > 0.0, key, "must be a positive number")
    }

    /// A finite number of at least 0.
    pub fn non_negative(self, key: &str, v: f64) -> Result<(), KeyError> {
        self.require(v.is_finite() && v >= 0.0, key, "must be a number >= 0")
    }

    /// Each value in the closed interval [0, 1].
    pub fn in_unit(self, values: &[(&str, f64)]) -> Result<(), KeyError> {
        values.iter().try_for_each(|&(key, v)| {
            self.require((0.0..=1.0).contains(&v), key, "must be in [0, 1]")
        })
    }

    /// Each value in the half-open interval [0, 1) (decays and averaging weights).
    pub fn below_one(self, values: &[(&str, f64)]) -> Result<(), KeyError> {
        values.iter().try_for_each(|&(key, v)| {
            self.require((0.0..1.0).contains(&v), key, "must be in [0, 1)")
        })
    }
}

/// Most seconds a time limit may name (`--max-seconds`, `--max-cpu-seconds`,
/// `--poll-seconds`): about 31 years, beyond any run and well inside what a
/// `std::time::Duration` holds.
pub const MAX_SECONDS: f64 = 1e9;

/// Most hands one evaluation may play (`--hands`, `--match-hands`, `hands=` in Python).
pub const MAX_HANDS: u64 = 1_000_000_000;

/// A number of seconds for `what` (a flag's name): finite, at least 0, at most
/// [`MAX_SECONDS`].
pub fn seconds(what: &str, v: f64) -> Result<f64, String> {
    if v.is_finite() && (0.0..=MAX_SECONDS).contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "{what} must be a number of seconds from 0 to {MAX_SECONDS:e}, not {}",
            short_number(v)
        ))
    }
}

/// A number of hands for `what` (a flag's name): from 1 to [`MAX_HANDS`].
pub fn hands(what: &str, n: u64) -> Result<u64, String> {
    if (1..=MAX_HANDS).contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "{what} must be from 1 to {MAX_HANDS} hands, not {n}"
        ))
    }
}

/// `v` for a message: as written when short, otherwise in scientific notation (a huge value
/// is not printed with hundreds of digits).
pub fn short_number(v: f64) -> String {
    let plain = v.to_string();
    if plain.len() <= 16 {
        plain
    } else {
        format!("{v:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::{MAX_HANDS, hands, seconds, short_number};

    #[test]
    fn seconds_and_hands_have_one_range_and_a_short_message() {
        assert_eq!(seconds("--max-seconds", 2.5), Ok(2.5));
        assert_eq!(seconds("--max-seconds", 0.0), Ok(0.0));
        for bad in [1e20, -1.0, f64::NAN, f64::INFINITY] {
            let e = seconds("--max-seconds", bad).unwrap_err();
            assert!(e.contains("--max-seconds") && e.len() < 120, "{e}");
        }
        assert!(seconds("s", -1e308).unwrap_err().contains("-1e308"));
        assert_eq!(hands("--hands", 4), Ok(4));
        assert!(hands("--hands", 0).unwrap_err().contains("--hands"));
        assert!(hands("--hands", MAX_HANDS + 1).is_err());
        assert_eq!(short_number(3.0), "3");
    }
}
