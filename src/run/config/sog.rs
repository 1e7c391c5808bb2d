//! `[sog]`, `[sog.search]`, `[sog.net]`, `[sog.selfplay]`: Student of Games' raw keys, their
//! defaults, and their validation into [`SogSettings`].

use super::validate::{MAX_THREADS, Section};
use super::{
    Config, ConfigError, DeviceName, SearchEngine, SearchFinal, d_device, d_hidden, d_layers,
    d_true,
};
use crate::rl::sog::SogSettings;
use serde::{Deserialize, Serialize};

/// `[sog]`: Student of Games training (see `run::sog`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SogConfig {
    /// Rounds to run (one round: self-play games, query solves, learner steps).
    pub rounds: u64,
    /// Compute device of the network: `flex` (CPU), `wgpu`, `cuda` or `default`.
    #[serde(default = "d_device")]
    pub device: DeviceName,
    /// Compute the exact NashConv of the search policy every `eval.every` rounds (small games).
    #[serde(default = "d_true")]
    pub exact_eval: bool,
    #[serde(default)]
    pub search: SogSearchConfig,
    #[serde(default)]
    pub net: SogNetConfig,
    #[serde(default)]
    pub selfplay: SogSelfPlayConfig,
}

/// `[sog.search]`: GT-CFR and continual re-solving.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SogSearchConfig {
    /// Expansion simulations per search (at least 1).
    #[serde(default = "d_sog_s")]
    pub s: usize,
    /// Simulations per regret update (> 0; below 1: one simulation per ⌈1/c⌉ updates).
    #[serde(default = "d_one")]
    pub c: f64,
    /// PUCT exploration constant (>= 0).
    #[serde(default = "d_one")]
    pub puct: f64,
    /// Gadget mixing weight α in [0, 1] (SoG: 0.5).
    #[serde(default = "d_half")]
    pub alpha: f64,
    /// The strategy a search answers with: `average` or `current`.
    #[serde(default = "d_final")]
    pub r#final: SearchFinal,
    /// PUCT's prior from the CVPN's policy head (trained on the searches' policies) instead
    /// of a uniform one.
    #[serde(default)]
    pub policy_prior: bool,
    /// The regret engine: `scalar` (the `f64` reference engine, the default) or `tensor`
    /// (burn tensor operations, `crate::nn::public::engine`; Kuhn/Leduc/Liar's Dice only).
    #[serde(default = "d_engine")]
    pub engine: SearchEngine,
    /// Where the regret engine runs: `cpu` (the scalar engine's only place; for the tensor
    /// engine the flex backend in `f64`), `flex`, `wgpu` or `cuda` (`f32`), `default`.
    #[serde(default = "d_search_device")]
    pub device: DeviceName,
    /// Self-play games each actor plays together, their searches in lock-step (one CVPN
    /// forward per single update for all of them); at least 1.
    #[serde(default = "d_one_usize")]
    pub batch: usize,
    /// Top-k restriction of the simulations' selection (the k actions of highest current
    /// CFR probability); unset: all actions; at least 1.
    #[serde(default)]
    pub top_k: Option<usize>,
    /// Hold'em (`universal_poker`) only: cap on the public nodes of one search tree (the
    /// rest of a betting round); unset: 200,000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_nodes: Option<usize>,
    /// Hold'em (`universal_poker`) only: run-outs over which a search values a leaf where a
    /// player is all in (every run-out when there are at most this many; 0: the CVPN values
    /// those leaves too); unset: 64; at most 4,096.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runout_boards: Option<usize>,
}

fn d_search_device() -> DeviceName {
    DeviceName::Cpu
}

fn d_one_usize() -> usize {
    1
}

fn d_engine() -> SearchEngine {
    SearchEngine::Scalar
}

impl Default for SogSearchConfig {
    fn default() -> Self {
        SogSearchConfig {
            s: d_sog_s(),
            c: 1.0,
            puct: 1.0,
            alpha: 0.5,
            r#final: d_final(),
            policy_prior: false,
            engine: d_engine(),
            device: d_search_device(),
            batch: 1,
            top_k: None,
            max_nodes: None,
            runout_boards: None,
        }
    }
}

/// `[sog.net]`: the CVPN and its optimiser.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SogNetConfig {
    /// Width before each DoubleReLU.
    #[serde(default = "d_hidden")]
    pub hidden: usize,
    /// Hidden layers.
    #[serde(default = "d_layers")]
    pub layers: usize,
    /// Adam's step size.
    #[serde(default = "d_sog_lr")]
    pub learning_rate: f64,
    /// Rows per learner step.
    #[serde(default = "d_sog_batch")]
    pub batch: usize,
    /// Zero-sum correction of the CVPN's answers at search frontiers
    /// (`nn::cvpn::zero_sum_correct`).
    #[serde(default)]
    pub zero_sum: bool,
}

impl Default for SogNetConfig {
    fn default() -> Self {
        SogNetConfig {
            hidden: d_hidden(),
            layers: d_layers(),
            learning_rate: d_sog_lr(),
            batch: d_sog_batch(),
            zero_sum: false,
        }
    }
}

/// `[sog.selfplay]`: data generation and the learner/generator ratio.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SogSelfPlayConfig {
    /// Weight of the uniform policy in played actions, in [0, 1].
    #[serde(default = "d_epsilon")]
    pub epsilon: f64,
    /// Self-play games per round.
    #[serde(default = "d_sog_games")]
    pub games_per_round: usize,
    /// At most this many frontier queries of each search enter the query buffer.
    #[serde(default = "d_sog_qps")]
    pub queries_per_search: usize,
    /// Capacity of the FIFO query buffer (the oldest unsolved queries are dropped past it).
    #[serde(default = "d_sog_buffer")]
    pub buffer: usize,
    /// Queries the solver takes from the buffer (oldest first) and re-solves per round.
    #[serde(default = "d_sog_solves")]
    pub solves_per_round: usize,
    /// Simulations of each query re-solve (default: `sog.search.s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub solver_s: Option<usize>,
    /// Random PBS queries (ranges of random policies at random public nodes) re-solved per
    /// round besides the self-play ones; 0 (default) is pure self-play.
    #[serde(default)]
    pub random_queries: usize,
    /// Probability with which each frontier PBS of a query's re-solve re-enters the query
    /// buffer (recursive queries, SoG §4.9; the paper: 0.1 to 0.2), in [0, 1].
    #[serde(default = "d_p_rec")]
    pub p_rec: f64,
    /// Capacity of the learner's FIFO replay of labelled examples.
    #[serde(default = "d_sog_replay")]
    pub replay: usize,
    /// Learner steps per round.
    #[serde(default = "d_sog_steps")]
    pub steps_per_round: usize,
    /// Self-play actor threads; 0 (default): the sequential, deterministic round schedule
    /// (self-play, then solving, then learning, on the calling thread).
    #[serde(default)]
    pub actors: usize,
    /// Query-solver threads beside the actors (at least 1 when `actors` is; 0 with it).
    #[serde(default)]
    pub solvers: usize,
    /// With threads: the learner broadcasts its weights to actors and solvers every this many
    /// learner steps (and at every round start).
    #[serde(default = "d_sog_sync")]
    pub sync_every: usize,
    /// Weight in [0, 1] of TD(1) value targets (the game's outcome at each self-play decision,
    /// for both players' actual private states) beside the re-solve targets (weight 1);
    /// 0 (default): none.
    #[serde(default)]
    pub td1: f64,
}

impl Default for SogSelfPlayConfig {
    fn default() -> Self {
        SogSelfPlayConfig {
            epsilon: d_epsilon(),
            games_per_round: d_sog_games(),
            queries_per_search: d_sog_qps(),
            buffer: d_sog_buffer(),
            solves_per_round: d_sog_solves(),
            solver_s: None,
            random_queries: 0,
            p_rec: d_p_rec(),
            replay: d_sog_replay(),
            steps_per_round: d_sog_steps(),
            actors: 0,
            solvers: 0,
            sync_every: d_sog_sync(),
            td1: 0.0,
        }
    }
}

fn d_sog_sync() -> usize {
    10
}

fn d_sog_s() -> usize {
    50
}
fn d_one() -> f64 {
    1.0
}
fn d_half() -> f64 {
    0.5
}
fn d_final() -> SearchFinal {
    SearchFinal::Average
}
fn d_sog_lr() -> f64 {
    1e-3
}
fn d_sog_batch() -> usize {
    128
}
fn d_epsilon() -> f64 {
    0.1
}
fn d_sog_games() -> usize {
    32
}
fn d_sog_qps() -> usize {
    8
}
fn d_sog_buffer() -> usize {
    4096
}
fn d_sog_solves() -> usize {
    512
}
fn d_p_rec() -> f64 {
    0.0
}
fn d_sog_replay() -> usize {
    8192
}
fn d_sog_steps() -> usize {
    100
}

/// The errors of `sog.*` keys.
const SOG: Section = Section("sog");

impl Config {
    /// Validates a Student of Games config into settings; every error names its key.
    pub fn sog(&self) -> Result<SogSettings, ConfigError> {
        let g = self.sog.as_ref().ok_or_else(|| ConfigError::Value {
            key: "sog".into(),
            reason: "missing: add a [sog] section".into(),
        })?;
        check_numbers(g)?;
        check_search(&g.search)?;
        check_schedule(g)?;
        self.check_schedule()?;
        Ok(self.sog_settings(g))
    }

    /// The settings of a validated `[sog]` section with the run's schedule.
    fn sog_settings(&self, g: &SogConfig) -> SogSettings {
        let (se, net, sp) = (&g.search, &g.net, &g.selfplay);
        SogSettings {
            game: self.game.clone(),
            seed: self.seed,
            rounds: g.rounds,
            device: g.device.as_str().to_string(),
            exact_eval: g.exact_eval,
            simulations: se.s,
            c: se.c,
            puct: se.puct,
            alpha: se.alpha,
            final_average: se.r#final == SearchFinal::Average,
            policy_prior: se.policy_prior,
            search_batch: se.batch,
            search_engine: se.engine.as_str().to_string(),
            search_device: se.device.as_str().to_string(),
            top_k: se.top_k,
            max_nodes: se.max_nodes,
            runout_boards: se.runout_boards,
            hidden: net.hidden,
            layers: net.layers,
            learning_rate: net.learning_rate,
            batch: net.batch,
            zero_sum: net.zero_sum,
            epsilon: sp.epsilon,
            games_per_round: sp.games_per_round,
            queries_per_search: sp.queries_per_search,
            buffer: sp.buffer,
            solves_per_round: sp.solves_per_round,
            solver_simulations: sp.solver_s.unwrap_or(se.s),
            random_queries: sp.random_queries,
            p_rec: sp.p_rec,
            replay: sp.replay,
            steps_per_round: sp.steps_per_round,
            actors: sp.actors,
            solvers: sp.solvers,
            sync_every: sp.sync_every,
            td1: sp.td1,
            eval_every: self.eval.every,
            checkpoint_every: self.checkpoint.every_epochs,
            checkpoint_seconds: self.checkpoint.every_seconds,
        }
    }
}

/// Counts, sizes, constants and probabilities.
fn check_numbers(g: &SogConfig) -> Result<(), ConfigError> {
    let (se, net, sp) = (&g.search, &g.net, &g.selfplay);
    SOG.at_least_one(&[
        ("rounds", g.rounds as usize),
        ("search.s", se.s),
        ("net.hidden", net.hidden),
        ("net.layers", net.layers),
        ("net.batch", net.batch),
        ("selfplay.games_per_round", sp.games_per_round),
        ("selfplay.queries_per_search", sp.queries_per_search),
        ("selfplay.buffer", sp.buffer),
        ("selfplay.replay", sp.replay),
        ("selfplay.solver_s", sp.solver_s.unwrap_or(1)),
        ("selfplay.sync_every", sp.sync_every),
    ])?;
    SOG.at_most(&[
        ("search.s", se.s, 1 << 24, "simulations"),
        ("search.batch", se.batch, 1 << 16, "games"),
        ("net.batch", net.batch, 1 << 20, "samples"),
        (
            "selfplay.games_per_round",
            sp.games_per_round,
            1 << 24,
            "games",
        ),
        (
            "selfplay.queries_per_search",
            sp.queries_per_search,
            1 << 16,
            "queries",
        ),
        (
            "selfplay.solves_per_round",
            sp.solves_per_round,
            1 << 24,
            "solves",
        ),
        (
            "selfplay.random_queries",
            sp.random_queries,
            1 << 24,
            "queries",
        ),
        (
            "selfplay.steps_per_round",
            sp.steps_per_round,
            1 << 24,
            "learner steps",
        ),
        ("selfplay.buffer", sp.buffer, 1 << 26, "samples"),
        ("selfplay.replay", sp.replay, 1 << 26, "samples"),
        ("selfplay.actors", sp.actors, MAX_THREADS, "threads"),
        ("selfplay.solvers", sp.solvers, MAX_THREADS, "threads"),
    ])?;
    SOG.network(("net.hidden", "net.layers"), net.hidden, net.layers)?;
    SOG.positive("search.c", se.c)?;
    SOG.non_negative("search.puct", se.puct)?;
    SOG.in_unit(&[
        ("search.alpha", se.alpha),
        ("selfplay.epsilon", sp.epsilon),
        ("selfplay.p_rec", sp.p_rec),
        ("selfplay.td1", sp.td1),
    ])?;
    Ok(())
}

/// The regret engine and where it runs, and the search's optional limits.
fn check_search(se: &SogSearchConfig) -> Result<(), ConfigError> {
    match se.engine {
        SearchEngine::Scalar => SOG.require(
            se.device == DeviceName::Cpu,
            "search.device",
            "expected `cpu`: the scalar regret engine runs on the CPU (the CVPN's \
             device is `sog.device`; `engine = \"tensor\"` runs on flex, wgpu or cuda)",
        )?,
        SearchEngine::Tensor => {
            crate::nn::select_device(se.device.as_str())
                .map_err(|e| SOG.error("search.device", &e.to_string()))?;
        }
    }
    SOG.require(
        se.top_k != Some(0),
        "search.top_k",
        "must be at least 1 (leave it out to consider every action)",
    )?;
    SOG.require(
        se.max_nodes != Some(0),
        "search.max_nodes",
        "must be at least 1",
    )?;
    SOG.require(
        se.runout_boards
            .is_none_or(|b| b <= crate::search::holdem::MAX_RUNOUT_BOARDS),
        "search.runout_boards",
        "must be at most 4096 (run-outs per all-in leaf)",
    )?;
    SOG.require(
        se.batch != 0,
        "search.batch",
        "must be at least 1 (self-play games per actor in lock-step)",
    )?;
    Ok(())
}

/// The learner's step size and the round schedule's threads.
fn check_schedule(g: &SogConfig) -> Result<(), ConfigError> {
    let sp = &g.selfplay;
    SOG.positive("net.learning_rate", g.net.learning_rate)?;
    SOG.require(
        sp.solves_per_round != 0 || sp.random_queries != 0,
        "selfplay.solves_per_round",
        "must be at least 1 unless selfplay.random_queries is (nothing would be learnt)",
    )?;
    SOG.require(
        !(sp.actors > 0 && sp.solvers == 0),
        "selfplay.solvers",
        "must be at least 1 when selfplay.actors is (nothing would solve the queries)",
    )?;
    SOG.require(
        !(sp.actors == 0 && sp.solvers > 0),
        "selfplay.solvers",
        "solver threads need actor threads: set selfplay.actors >= 1, or solvers = 0 \
         for the sequential schedule",
    )?;
    Ok(())
}
