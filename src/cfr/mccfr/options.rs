//! The `[solver]` keys of the MCCFR family and their validation into an [`MccfrSpec`].

use super::{MccfrSpec, NAMES, OsSampling, Sampler};
use crate::cfr::Averaging;
use crate::cfr::baseline::{Baseline, BaselineAveraging};
use crate::util::check::short_number;
use serde::Deserialize;

/// The algorithm-specific `[solver]` keys of the MCCFR family (all optional).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MccfrOptions {
    /// `plain` (default) or `plus`.
    pub regret: Option<String>,
    /// OS (`sampling = "epsilon"`) and AS: in (0, 1].
    pub epsilon: Option<f64>,
    /// OS: `epsilon` (default), `uniform` or `opponent-on-policy`.
    pub sampling: Option<String>,
    /// OS: `none` (default), `static`, `learned-history`, `learned-infoset`, `predictive`.
    pub baseline: Option<String>,
    /// OS learned baselines: `simple` (default) or `exponential`.
    pub baseline_averaging: Option<String>,
    /// Decay α of `exponential` baseline averaging, in (0, 1] (default 0.5).
    pub baseline_alpha: Option<f64>,
    /// AS threshold τ ≥ 1.
    pub tau: Option<f64>,
    /// Worker threads (default 1: the sequential algorithm). `threads = N > 1` runs each
    /// iteration's walks on `N` workers (with `walks` defaulting to
    /// [`crate::cfr::PARALLEL_WALKS_PER_THREAD`]` × N`), each applying its shard of the logged
    /// updates. The default stays 1 because on 2 cores two workers have not been measured
    /// faster than one in wall time (docs/results.md has the figures).
    pub threads: Option<usize>,
    /// Walks per player per iteration (default: 1 with one thread, else
    /// [`crate::cfr::PARALLEL_WALKS_PER_THREAD`] per thread).
    pub walks: Option<usize>,
}

/// A rejected option: the `[solver]` key at fault and why.
#[derive(Clone, Debug, PartialEq)]
pub struct OptionError {
    pub key: String,
    pub reason: String,
}

impl MccfrOptions {
    /// Validates the options of `sampler`; `averaging` and `beta` are the common `[solver]` keys
    /// of the same names. Keys that the sampler does not use are errors.
    pub fn validate(
        &self,
        sampler: Sampler,
        averaging: Option<&str>,
        beta: Option<f64>,
    ) -> Result<MccfrSpec, OptionError> {
        let err = |key: &str, reason: String| OptionError {
            key: key.to_string(),
            reason,
        };
        let name = NAMES[sampler as usize];
        let unused = |key: &str| err(key, format!("not an option of `{name}`"));
        // A value out of its range, echoed short (a huge one in scientific notation).
        let out = |key: &str, v: f64, rule: &str| err(key, format!("{} {rule}", short_number(v)));
        let mut spec = MccfrSpec::new(sampler);
        // One thread unless asked: the sequential walk is the algorithm the papers state, and
        // on 2 cores the parallel walks measured slower (see `threads`).
        (spec.threads, spec.walks) =
            crate::cfr::resolve_parallel(self.threads.or(Some(1)), self.walks)
                .map_err(|(key, reason)| err(key, reason))?;
        let os = sampler == Sampler::Outcome;
        let is_as = sampler == Sampler::AverageStrategy;
        spec.plus = match self.regret.as_deref() {
            None | Some("plain") => false,
            Some("plus") => true,
            Some(other) => {
                return Err(err(
                    "regret",
                    format!("`{other}`; expected `plain` or `plus`"),
                ));
            }
        };
        spec.averaging = match averaging {
            None | Some("uniform") => Averaging::Uniform,
            Some("linear") => Averaging::Linear,
            Some(other) => {
                return Err(err(
                    "averaging",
                    format!("`{other}`; expected `uniform` or `linear` for `{name}`"),
                ));
            }
        };
        if !os {
            for (key, set) in [
                ("sampling", self.sampling.is_some()),
                ("baseline", self.baseline.is_some()),
                ("baseline_averaging", self.baseline_averaging.is_some()),
                ("baseline_alpha", self.baseline_alpha.is_some()),
            ] {
                if set {
                    return Err(unused(key));
                }
            }
        }
        if !is_as {
            if self.tau.is_some() {
                return Err(unused("tau"));
            }
            if beta.is_some() {
                return Err(unused("beta"));
            }
        }
        if !os && !is_as && self.epsilon.is_some() {
            return Err(unused("epsilon"));
        }
        if let Some(e) = self.epsilon {
            if !(e > 0.0 && e <= 1.0) {
                return Err(out("epsilon", e, "must lie in (0, 1]"));
            }
            spec.epsilon = e;
        }
        if os {
            spec.sampling = match self.sampling.as_deref() {
                None | Some("epsilon") => OsSampling::Epsilon,
                Some("uniform") => OsSampling::Uniform,
                Some("opponent-on-policy") => OsSampling::OpponentOnPolicy,
                Some(other) => {
                    return Err(err(
                        "sampling",
                        format!("`{other}`; expected `epsilon`, `uniform` or `opponent-on-policy`"),
                    ));
                }
            };
            if spec.sampling != OsSampling::Epsilon && self.epsilon.is_some() {
                return Err(err(
                    "epsilon",
                    "only applies to sampling = \"epsilon\"".into(),
                ));
            }
            spec.baseline = match self.baseline.as_deref() {
                None => Baseline::None,
                Some(name) => Baseline::named(name).ok_or_else(|| {
                    err(
                        "baseline",
                        format!(
                            "`{name}`; expected `none`, `static`, `learned-history`, \
                             `learned-infoset` or `predictive`"
                        ),
                    )
                })?,
            };
            if !spec.baseline.is_learned() && self.baseline_averaging.is_some() {
                return Err(err(
                    "baseline_averaging",
                    "only applies to the learned baselines (learned-history, learned-infoset)"
                        .into(),
                ));
            }
            spec.baseline_averaging = match self.baseline_averaging.as_deref() {
                None | Some("simple") => {
                    if self.baseline_alpha.is_some() {
                        return Err(err(
                            "baseline_alpha",
                            "only applies to baseline_averaging = \"exponential\"".into(),
                        ));
                    }
                    BaselineAveraging::Simple
                }
                Some("exponential") => {
                    let a = self.baseline_alpha.unwrap_or(0.5);
                    if !(a > 0.0 && a <= 1.0) {
                        return Err(out("baseline_alpha", a, "must lie in (0, 1]"));
                    }
                    spec.baseline_alpha = a;
                    BaselineAveraging::Exponential
                }
                Some(other) => {
                    return Err(err(
                        "baseline_averaging",
                        format!("`{other}`; expected `simple` or `exponential`"),
                    ));
                }
            };
        }
        if is_as {
            if let Some(t) = self.tau {
                if !(t.is_finite() && t >= 1.0) {
                    return Err(out("tau", t, "must be a finite number ≥ 1"));
                }
                spec.tau = t;
            }
            if let Some(b) = beta {
                if !(b.is_finite() && b >= 0.0) {
                    return Err(out("beta", b, "must be a finite number ≥ 0"));
                }
                spec.beta = b;
            }
        }
        Ok(spec)
    }
}
