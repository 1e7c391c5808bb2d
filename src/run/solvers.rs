//! The `[solver]` registry: every algorithm by name ([`Algorithm`]), its option parsing into a
//! typed [`SolverChoice`], and construction. Every algorithm is a [`TreeSolver`] on the
//! compiled tree, so one driver ([`super::tabular`]) runs them all.
//!
//! Full-width CFR family (keys `updates`, `averaging`, `alpha`, `beta`, `gamma`): `cfr`, `cfr+`,
//! `lcfr`, `dcfr`. Sampling algorithms take their own keys in the same `[solver]` table; each
//! parses them with a typed, deny-unknown-keys options struct, so a misspelt key is an error
//! that names it. The batched public-tree solvers (`batched-cfr`, `batched-pos`) run the CFR
//! family and POS as tensor operations ([`crate::nn::public`]).
//!
//! Dependencies: this module reads [`super::config`]'s raw sections; `config` knows nothing of
//! the algorithms.

use super::config::{Config, ConfigError, SolverConfig};
use crate::cfr::mccfr::{MccfrOptions, MccfrSolver, MccfrSpec, Sampler};
use crate::cfr::pos::{PosOptions, PosSolver, PosSpec};
use crate::cfr::sfo::{Minimizer, SfoOptions, SfoSolver, SfoSpec};
use crate::cfr::{
    ALGORITHMS, Averaging, RegretRule, SolverSpec, TabularSolver, TreeSolver, Updates,
};
use crate::game::Game;
use crate::tree::PublicTree;
use crate::tree::history::HistoryTree;
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// Every `[solver] algorithm`, by family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// Full-width CFR family ([`crate::cfr::full_width`]).
    Cfr,
    CfrPlus,
    Lcfr,
    Dcfr,
    /// Monte-Carlo CFR ([`crate::cfr::mccfr`]).
    CsMccfr,
    EsMccfr,
    OsMccfr,
    AsMccfr,
    /// Public outcome sampling ([`crate::cfr::pos`]).
    PosMccfr,
    /// Stochastic FTRL / OMD ([`crate::cfr::sfo`]).
    Ftrl,
    Omd,
    /// Batched public-tree solvers as tensor operations ([`crate::nn::public`]).
    BatchedCfr,
    BatchedPos,
}

impl Algorithm {
    /// Every algorithm with its config name, in documentation order.
    pub const ALL: [(Algorithm, &'static str); 13] = [
        (Algorithm::Cfr, "cfr"),
        (Algorithm::CfrPlus, "cfr+"),
        (Algorithm::Lcfr, "lcfr"),
        (Algorithm::Dcfr, "dcfr"),
        (Algorithm::CsMccfr, "cs-mccfr"),
        (Algorithm::EsMccfr, "es-mccfr"),
        (Algorithm::OsMccfr, "os-mccfr"),
        (Algorithm::AsMccfr, "as-mccfr"),
        (Algorithm::PosMccfr, "pos-mccfr"),
        (Algorithm::Ftrl, "ftrl"),
        (Algorithm::Omd, "omd"),
        (Algorithm::BatchedCfr, "batched-cfr"),
        (Algorithm::BatchedPos, "batched-pos"),
    ];

    /// The algorithm a config name denotes.
    pub fn named(name: &str) -> Option<Algorithm> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(a, _)| *a)
    }

    /// The config name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(a, _)| *a == self)
            .map(|(_, n)| *n)
            .expect("every algorithm is listed in ALL")
    }
}

/// Every algorithm name `[solver] algorithm` accepts.
pub fn algorithm_names() -> Vec<&'static str> {
    Algorithm::ALL.iter().map(|(_, n)| *n).collect()
}

/// A validated `[solver]` choice.
#[derive(Clone, Debug, PartialEq)]
pub enum SolverChoice {
    /// Full-width CFR family.
    Cfr(SolverSpec),
    /// Stochastic FTRL / OMD with the dilated entropy ([`crate::cfr::sfo`]).
    Sfo(SfoSpec),
    /// Monte-Carlo CFR family ([`crate::cfr::mccfr`]).
    Mccfr(MccfrSpec),
    /// Public outcome sampling MCCFR with baselines ([`crate::cfr::pos`]).
    Pos(PosSpec),
    /// Batched public-tree solvers as tensor operations ([`crate::nn::public`]).
    Batched(BatchedChoice),
}

/// What a batched solver runs.
#[derive(Clone, Debug, PartialEq)]
pub enum BatchedKind {
    Cfr(SolverSpec),
    Pos(PosSpec),
}

/// A validated `batched-cfr` / `batched-pos` choice: the algorithm plus where it runs.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchedChoice {
    pub kind: BatchedKind,
    /// `flex` (CPU), `wgpu`, `cuda` or `default` (the best compiled in).
    pub device: String,
    /// Independent solver instances advanced together; the run reports instance 0.
    pub batch: usize,
    pub precision: crate::nn::public::Precision,
}

/// The batched solvers' own keys; everything else in `[solver]` belongs to the algorithm
/// they run (`variant`'s CFR-family keys, or `pos-mccfr`'s).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchedKeys {
    #[serde(default = "default_device")]
    device: String,
    #[serde(default = "default_batch")]
    batch: usize,
    #[serde(default = "default_precision")]
    precision: crate::nn::public::Precision,
    #[serde(default)]
    variant: Option<String>,
}

fn default_device() -> String {
    "default".into()
}
fn default_batch() -> usize {
    1
}
fn default_precision() -> crate::nn::public::Precision {
    crate::nn::public::Precision::F32
}

/// `batched-cfr` (keys `variant` = cfr/cfr+/lcfr/dcfr plus their keys) and `batched-pos`
/// (`pos-mccfr`'s keys), both with `device`, `batch` and `precision`.
fn parse_batched(algorithm: Algorithm, s: &SolverConfig) -> Result<BatchedChoice, ConfigError> {
    let bad = |key: &str, reason: String| ConfigError::Value {
        key: format!("solver.{key}"),
        reason: format!("{reason} (algorithm `{}`)", s.algorithm),
    };
    let own = ["device", "batch", "precision", "variant"];
    let mut inner = s.clone();
    let mut mine = toml::Table::new();
    for k in own {
        if let Some(v) = inner.extra.remove(k) {
            mine.insert(k.into(), v);
        }
    }
    let keys: BatchedKeys = toml::Value::Table(mine)
        .try_into()
        .map_err(|e: toml::de::Error| bad("device", e.message().to_string()))?;
    if keys.batch == 0 || keys.batch > 1 << 20 {
        return Err(bad(
            "batch",
            format!("{} must lie in 1..=1048576", keys.batch),
        ));
    }
    crate::nn::select_device(&keys.device).map_err(|e| bad("device", e.to_string()))?;
    let f64_ok = matches!(keys.device.as_str(), "flex" | "cpu")
        || (keys.device == "default"
            && crate::nn::compiled_backends().first().copied() == Some("flex"));
    if keys.precision == crate::nn::public::Precision::F64 && !f64_ok {
        return Err(bad(
            "precision",
            format!(
                "f64 needs the CPU device (`device = \"flex\"`); `{}` computes in f32",
                keys.device
            ),
        ));
    }
    let kind = if algorithm == Algorithm::BatchedCfr {
        let variant = keys.variant.clone().unwrap_or_else(|| "cfr+".into());
        let Some(spec) = SolverSpec::named(&variant) else {
            return Err(bad(
                "variant",
                format!("unknown `{variant}`; expected one of {ALGORITHMS:?}"),
            ));
        };
        inner.algorithm = variant;
        BatchedKind::Cfr(cfr_family_spec(&inner, spec)?)
    } else {
        if keys.variant.is_some() {
            return Err(bad("variant", "only `batched-cfr` has variants".into()));
        }
        inner.algorithm = "pos-mccfr".into();
        let spec = parse_pos(&inner)?;
        let o = spec.options;
        if !matches!(
            o.baseline,
            crate::cfr::baseline::Baseline::None | crate::cfr::baseline::Baseline::Predictive
        ) {
            return Err(bad(
                "baseline",
                "the batched solver supports `none` and `predictive`".into(),
            ));
        }
        if o.measure_variance {
            return Err(bad(
                "measure_variance",
                "not available in the batched solver".into(),
            ));
        }
        for (key, set) in [
            ("threads", o.threads.is_some()),
            ("walks", o.walks.is_some()),
        ] {
            if set {
                return Err(bad(
                    key,
                    "`pos-mccfr`'s key; the batched solver batches with `batch`".into(),
                ));
            }
        }
        BatchedKind::Pos(spec)
    };
    Ok(BatchedChoice {
        kind,
        device: keys.device,
        batch: keys.batch,
        precision: keys.precision,
    })
}

/// Parses the algorithm-specific keys of `s` into `T` (a `deny_unknown_fields` options struct);
/// errors name the offending `solver.<key>`.
pub fn parse_options<T: DeserializeOwned>(s: &SolverConfig) -> Result<T, ConfigError> {
    let text = toml::to_string(&s.extra).map_err(|e| ConfigError::Value {
        key: "solver".into(),
        reason: e.to_string(),
    })?;
    toml::from_str::<T>(&text).map_err(|e| {
        let msg = e.message().to_string();
        // serde names unknown fields as "unknown field `x`"; point at `solver.x`. A value of
        // the wrong type (`threads = 1.5`) is named by the line its span points into.
        let spanned = e.span().and_then(|span| {
            let start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
            let line = text[start..].lines().next()?;
            let (key, _) = line.split_once('=')?;
            let key = key.trim().trim_matches('"');
            (!key.is_empty() && !key.starts_with('[')).then(|| key.to_string())
        });
        let key = msg
            .split('`')
            .nth(1)
            .filter(|_| msg.starts_with("unknown field"))
            .map(str::to_string)
            .or(spanned)
            .map(|k| format!("solver.{k}"))
            .unwrap_or_else(|| "solver".into());
        ConfigError::Value {
            key,
            reason: format!("{msg} (algorithm `{}`)", s.algorithm),
        }
    })
}

/// Validates the `[solver]` section of `algorithm` into its typed choice.
fn parse_choice(algorithm: Algorithm, s: &SolverConfig) -> Result<SolverChoice, ConfigError> {
    use Algorithm as A;
    let cfr = |name: &str| {
        let defaults = SolverSpec::named(name).expect("CFR-family names are SolverSpec names");
        cfr_family_spec(s, defaults).map(SolverChoice::Cfr)
    };
    let mccfr = |sampler| parse_mccfr(s, sampler).map(SolverChoice::Mccfr);
    let sfo = |m| parse_sfo(m, s).map(SolverChoice::Sfo);
    match algorithm {
        A::Cfr | A::CfrPlus | A::Lcfr | A::Dcfr => cfr(algorithm.name()),
        A::CsMccfr => mccfr(Sampler::Chance),
        A::EsMccfr => mccfr(Sampler::External),
        A::OsMccfr => mccfr(Sampler::Outcome),
        A::AsMccfr => mccfr(Sampler::AverageStrategy),
        A::PosMccfr => parse_pos(s).map(SolverChoice::Pos),
        A::Ftrl => sfo(Minimizer::Ftrl),
        A::Omd => sfo(Minimizer::Omd),
        A::BatchedCfr | A::BatchedPos => parse_batched(algorithm, s).map(SolverChoice::Batched),
    }
}

/// The MCCFR family's keys: `regret`, `averaging`, and per sampler `epsilon`, `sampling`,
/// `baseline`, `baseline_averaging`, `baseline_alpha`, `tau`, `beta` (see [`MccfrOptions`]).
fn parse_mccfr(s: &SolverConfig, sampler: Sampler) -> Result<MccfrSpec, ConfigError> {
    let bad = |key: &str, reason: String| ConfigError::Value {
        key: format!("solver.{key}"),
        reason,
    };
    if s.updates != "alternating" {
        return Err(bad(
            "updates",
            format!(
                "`{}`; `{}` supports only `alternating`",
                s.updates, s.algorithm
            ),
        ));
    }
    for (key, set) in [("alpha", s.alpha.is_some()), ("gamma", s.gamma.is_some())] {
        if set {
            return Err(bad(key, format!("not an option of `{}`", s.algorithm)));
        }
    }
    let opts: MccfrOptions = parse_options(s)?;
    opts.validate(sampler, s.averaging.as_deref(), s.beta)
        .map_err(|e| {
            bad(
                &e.key,
                format!("{} (algorithm `{}`)", e.reason, s.algorithm),
            )
        })
}

/// `pos-mccfr`: its own keys (see [`PosOptions`]) plus the common `updates`,
/// `averaging` (default `linear` with `regret = "plus"`, else `uniform`) and `gamma`.
fn parse_pos(s: &SolverConfig) -> Result<PosSpec, ConfigError> {
    let bad = |key: &str, reason: String| ConfigError::Value {
        key: format!("solver.{key}"),
        reason,
    };
    let options: PosOptions = parse_options(s)?;
    options.validate().map_err(|(k, r)| bad(k, r))?;
    let updates = parse_updates(s)?;
    for (key, v) in [("alpha", s.alpha), ("beta", s.beta)] {
        if v.is_some() {
            return Err(bad(
                key,
                "not a pos-mccfr key (the baseline's is `baseline_alpha`)".into(),
            ));
        }
    }
    let plus = options.regret == crate::cfr::RegretRule::Plus;
    let averaging = match (s.averaging.as_deref(), s.gamma) {
        (None, None) if plus => Averaging::Linear,
        (None, None) => Averaging::Uniform,
        (Some("uniform"), None) => Averaging::Uniform,
        (Some("linear"), None) => Averaging::Linear,
        (Some("power") | None, g) => {
            let g = g.unwrap_or(2.0);
            if !(g.is_finite() && g >= 0.0) {
                return Err(bad(
                    "gamma",
                    format!(
                        "{} must be a finite non-negative number",
                        crate::util::check::short_number(g)
                    ),
                ));
            }
            Averaging::Power(g)
        }
        (Some("uniform" | "linear"), Some(_)) => {
            return Err(bad("gamma", "gamma needs averaging = \"power\"".into()));
        }
        (Some(other), _) => {
            return Err(bad(
                "averaging",
                format!("`{other}`; expected `uniform`, `linear` or `power`"),
            ));
        }
    };
    Ok(PosSpec {
        options,
        updates,
        averaging,
    })
}

/// Validated settings of a tabular run.
#[derive(Clone, Debug, PartialEq)]
pub struct TabularSettings {
    pub game: String,
    pub seed: u64,
    /// The validated algorithm and its options.
    pub choice: SolverChoice,
    /// The resolved `[solver]` section without `iterations` (checked on resume).
    pub fingerprint: String,
    pub iterations: u64,
    pub eval_every: u64,
    pub checkpoint_seconds: f64,
}

impl Config {
    /// Validates a `[solver]` config into settings (the algorithm, its options, the common
    /// schedule keys).
    pub fn tabular(&self) -> Result<TabularSettings, ConfigError> {
        let s = self.solver.as_ref().ok_or_else(|| ConfigError::Value {
            key: "solver".into(),
            reason: "missing: add a [solver] section (algorithm, iterations)".into(),
        })?;
        let algorithm = Algorithm::named(&s.algorithm).ok_or_else(|| ConfigError::Value {
            key: "solver.algorithm".into(),
            reason: format!(
                "unknown algorithm `{}`; expected one of {:?}",
                s.algorithm,
                algorithm_names()
            ),
        })?;
        let choice = parse_choice(algorithm, s)?;
        self.common_checks()?;
        let fingerprint = fingerprint(s, &choice);
        Ok(TabularSettings {
            game: self.game.clone(),
            seed: self.seed,
            choice,
            fingerprint,
            iterations: s.iterations,
            eval_every: self.eval.every,
            checkpoint_seconds: self.checkpoint.every_seconds,
        })
    }

    /// Checks shared by every `[solver]` algorithm.
    fn common_checks(&self) -> Result<(), ConfigError> {
        if self.solver.as_ref().is_some_and(|s| s.iterations == 0) {
            return Err(ConfigError::Value {
                key: "solver.iterations".into(),
                reason: "must be at least 1".into(),
            });
        }
        self.check_schedule()
    }
}

/// `solver.updates`: `alternating` or `simultaneous`.
pub fn parse_updates(s: &SolverConfig) -> Result<Updates, ConfigError> {
    match s.updates.as_str() {
        "alternating" => Ok(Updates::Alternating),
        "simultaneous" => Ok(Updates::Simultaneous),
        other => Err(ConfigError::Value {
            key: "solver.updates".into(),
            reason: format!("`{other}`; expected `alternating` or `simultaneous`"),
        }),
    }
}

/// The CFR family's `[solver]` keys (`updates`, `averaging`, `alpha`, `beta`, `gamma`; no
/// others) applied to the defaults `spec` of the named algorithm.
fn cfr_family_spec(s: &SolverConfig, mut spec: SolverSpec) -> Result<SolverSpec, ConfigError> {
    let bad = |key: &str, reason: String| ConfigError::Value {
        key: format!("solver.{key}"),
        reason,
    };
    if let Some(key) = s.extra.keys().next() {
        return Err(bad(
            key,
            format!(
                "unknown field `{key}` for algorithm `{}`, expected one of `algorithm`, \
                 `iterations`, `updates`, `averaging`, `alpha`, `beta`, `gamma`",
                s.algorithm
            ),
        ));
    }
    spec.updates = parse_updates(s)?;
    let discount = s.alpha.is_some() || s.beta.is_some();
    match (spec.regrets, discount) {
        (RegretRule::Discounted { alpha, beta }, _) => {
            spec.regrets = RegretRule::Discounted {
                alpha: s.alpha.unwrap_or(alpha),
                beta: s.beta.unwrap_or(beta),
            };
        }
        (_, true) => {
            return Err(bad(
                "alpha",
                "alpha/beta only apply to the discounted algorithms (lcfr, dcfr)".into(),
            ));
        }
        _ => {}
    }
    let gamma = s.gamma.or(match spec.averaging {
        Averaging::Power(g) => Some(g),
        _ => None,
    });
    if let Some(name) = &s.averaging {
        spec.averaging = match name.as_str() {
            "uniform" => Averaging::Uniform,
            "linear" => Averaging::Linear,
            "power" => Averaging::Power(gamma.unwrap_or(2.0)),
            other => {
                return Err(bad(
                    "averaging",
                    format!("`{other}`; expected `uniform`, `linear` or `power`"),
                ));
            }
        };
    } else if let (Some(g), Averaging::Power(_)) = (s.gamma, spec.averaging) {
        spec.averaging = Averaging::Power(g);
    } else if s.gamma.is_some() {
        return Err(bad(
            "gamma",
            "gamma needs averaging = \"power\" (or lcfr/dcfr)".into(),
        ));
    }
    for (k, v) in [("alpha", s.alpha), ("beta", s.beta), ("gamma", s.gamma)] {
        if let Some(v) = v
            && (!v.is_finite() || v < 0.0)
        {
            return Err(bad(
                k,
                format!(
                    "{} must be a finite non-negative number",
                    crate::util::check::short_number(v)
                ),
            ));
        }
    }
    Ok(spec)
}

/// The resolved `[solver]` section without its iteration budget (which a resume may raise) and
/// without `threads` (which never changes a sampler's results); a sampler's resolved `walks`
/// is written in when it is not 1, since its default depends on the thread count.
fn fingerprint(s: &SolverConfig, choice: &SolverChoice) -> String {
    let mut value = serde_json::to_value(s).expect("solver config serialises");
    if let Some(map) = value.as_object_mut() {
        map.remove("iterations");
        map.remove("threads");
        let walks = match choice {
            SolverChoice::Mccfr(spec) => spec.walks,
            SolverChoice::Pos(spec) => spec.options.parallel().map_or(1, |(_, w)| w),
            _ => 1,
        };
        if walks != 1 {
            map.insert("walks".into(), walks.into());
        }
    }
    value.to_string()
}

/// Builds the solver of a validated choice. `seed` seeds every random stream.
pub fn build(
    choice: &SolverChoice,
    seed: u64,
    game: &dyn Game,
    tree: Arc<PublicTree>,
) -> Result<Box<dyn TreeSolver>, super::RunError> {
    Ok(match choice {
        SolverChoice::Cfr(spec) => Box::new(TabularSolver::new(tree, *spec)),
        SolverChoice::Sfo(spec) => {
            let histories = HistoryTree::build(game, &tree)?;
            Box::new(SfoSolver::new(tree, histories, *spec, seed))
        }
        SolverChoice::Mccfr(spec) => Box::new(MccfrSolver::new(*spec, seed, game, tree)?),
        SolverChoice::Pos(spec) => Box::new(PosSolver::from_game(game, tree, *spec, seed)?),
        SolverChoice::Batched(b) => {
            use crate::nn::public::{Ctx, cfr::BatchedCfr, pos::BatchedPos};
            use crate::tree::tensor::TensorTree;
            let device = crate::nn::select_device(&b.device)
                .map_err(|e| super::RunError::Solver(format!("solver.device: {e}")))?;
            let ctx = Ctx::new(&device, b.precision);
            let ht = HistoryTree::build(game, &tree)?;
            let layout = Arc::new(TensorTree::build(&tree, &ht, 0, None)?);
            let failed = |e: crate::nn::public::cfr::BatchedError| {
                super::RunError::Solver(format!("batched solver: {e}"))
            };
            match &b.kind {
                BatchedKind::Cfr(spec) => Box::new(
                    BatchedCfr::new(tree, layout, *spec, b.batch, None, None, &ctx)
                        .map_err(failed)?,
                ),
                BatchedKind::Pos(spec) => Box::new(
                    BatchedPos::new(tree, layout, *spec, seed, b.batch, &ctx).map_err(failed)?,
                ),
            }
        }
    })
}

/// The result of [`solve`]: the game, its compiled tree and the solver's average policy.
pub struct Solved {
    pub game: crate::game::GameRef,
    pub tree: Arc<PublicTree>,
    /// The average policy after `iterations` iterations.
    pub policy: crate::tree::TreePolicy,
    /// Iterations done (fewer than asked when `stop` was set).
    pub iterations: u64,
}

/// Runs `[solver]` algorithm `algorithm` on `game` for `iterations` iterations in memory (no
/// run directory, no evaluations): the config `game = ..., seed = ..., [solver] algorithm,
/// iterations` plus the algorithm's own keys `keys`, validated as `armac-train` validates it
/// (errors name the key). Stops early, between iterations, once `stop` is set.
pub fn solve(
    game: &str,
    algorithm: &str,
    iterations: u64,
    seed: u64,
    keys: toml::Table,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Solved, super::RunError> {
    let mut solver_table = keys;
    solver_table.insert("algorithm".into(), algorithm.into());
    let iterations_value = i64::try_from(iterations)
        .map_err(|_| super::RunError::Usage(format!("iterations {iterations} is out of range")))?;
    solver_table.insert("iterations".into(), iterations_value.into());
    let mut table = toml::Table::new();
    table.insert("game".into(), game.into());
    let seed_value = i64::try_from(seed)
        .map_err(|_| super::RunError::Usage(format!("seed {seed} is out of range")))?;
    table.insert("seed".into(), seed_value.into());
    table.insert("solver".into(), toml::Value::Table(solver_table));
    let config = Config::from_table(table, "solve()")?;
    let settings = config.tabular()?;
    let game = crate::games::load_game(&settings.game)?;
    super::tabular_fits(game.as_ref(), &settings.choice)?;
    let tree = Arc::new(PublicTree::build(game.as_ref())?);
    let mut solver = build(&settings.choice, settings.seed, game.as_ref(), tree.clone())?;
    while solver.iteration() < settings.iterations
        && !stop.load(std::sync::atomic::Ordering::Relaxed)
    {
        solver.iterate();
    }
    Ok(Solved {
        game,
        tree,
        policy: solver.average_policy(),
        iterations: solver.iteration(),
    })
}

/// `ftrl` / `omd`: keys `estimator`, `samples`, `step_size`, `weights`, `weight_scale` (see
/// [`SfoOptions`]) and the common `updates` (`simultaneous` is the paper's self-play).
fn parse_sfo(m: Minimizer, s: &SolverConfig) -> Result<SfoSpec, ConfigError> {
    let bad = |key: &str, reason: String| ConfigError::Value {
        key: format!("solver.{key}"),
        reason: format!("{reason} (algorithm `{}`)", s.algorithm),
    };
    for (key, set) in [
        ("alpha", s.alpha.is_some()),
        ("beta", s.beta.is_some()),
        ("gamma", s.gamma.is_some()),
    ] {
        if set {
            return Err(bad(key, "only applies to the CFR family".into()));
        }
    }
    if let Some(a) = &s.averaging
        && a != "uniform"
    {
        return Err(bad(
            "averaging",
            format!("`{a}`; FTRL/OMD average their iterates uniformly (`uniform`)"),
        ));
    }
    let simultaneous = match s.updates.as_str() {
        "simultaneous" => true,
        "alternating" => false,
        other => {
            return Err(bad(
                "updates",
                format!("`{other}`; expected `alternating` or `simultaneous`"),
            ));
        }
    };
    let options: SfoOptions = parse_options(s)?;
    SfoSpec::new(m, &options, simultaneous).map_err(|(key, reason)| bad(key, reason))
}

#[cfg(test)]
#[path = "solvers_tests.rs"]
mod tests;
