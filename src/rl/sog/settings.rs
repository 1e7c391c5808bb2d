//! The typed settings of a Student of Games run ([`SogSettings`], validated from the
//! `[sog]` sections of a config by the run layer) and the search configurations they give.

use crate::cfr::SolverSpec;
use crate::nn::public::engine::TensorEngineBuilder;
use crate::nn::public::{Ctx, Precision};
use crate::search::holdem::HoldemSearchConfig;
use crate::search::{EngineBuilder, Final, GtCfrConfig, ResolverConfig};
use std::sync::Arc;

/// Validated settings of a Student of Games run.
#[derive(Clone, Debug, PartialEq)]
pub struct SogSettings {
    pub game: String,
    pub seed: u64,
    pub rounds: u64,
    pub device: String,
    pub exact_eval: bool,
    pub simulations: usize,
    pub c: f64,
    pub puct: f64,
    pub alpha: f64,
    /// `true`: searches answer with the average strategy.
    pub final_average: bool,
    pub policy_prior: bool,
    /// Self-play games per actor in lock-step (`sog.search.batch`).
    pub search_batch: usize,
    /// The regret engine (`sog.search.engine`: `scalar` or `tensor`).
    pub search_engine: String,
    /// Where the tensor engine runs (`sog.search.device`).
    pub search_device: String,
    /// Top-k restriction of the simulations' selection (`sog.search.top_k`).
    pub top_k: Option<usize>,
    /// Node cap of a Hold'em search tree (`sog.search.max_nodes`; Hold'em only).
    pub max_nodes: Option<usize>,
    /// Run-outs per all-in leaf of a Hold'em search (`sog.search.runout_boards`; Hold'em
    /// only).
    pub runout_boards: Option<usize>,
    pub hidden: usize,
    pub layers: usize,
    pub learning_rate: f64,
    pub batch: usize,
    /// Zero-sum correction of frontier answers (`sog.net.zero_sum`).
    pub zero_sum: bool,
    pub epsilon: f64,
    pub games_per_round: usize,
    pub queries_per_search: usize,
    pub buffer: usize,
    pub solves_per_round: usize,
    pub solver_simulations: usize,
    pub random_queries: usize,
    pub p_rec: f64,
    pub replay: usize,
    pub steps_per_round: usize,
    pub actors: usize,
    pub solvers: usize,
    pub sync_every: usize,
    pub td1: f64,
    pub eval_every: u64,
    pub checkpoint_every: u64,
    pub checkpoint_seconds: f64,
}

/// The search settings of self-play and evaluation.
pub fn resolver_config(s: &SogSettings, simulations: usize) -> ResolverConfig {
    ResolverConfig {
        search: GtCfrConfig {
            simulations,
            expansions_per_update: s.c,
            puct: s.puct,
            final_policy: if s.final_average {
                Final::Average
            } else {
                Final::Current
            },
            spec: SolverSpec::named("cfr+").expect("cfr+ is a known algorithm"),
            seed: s.seed,
            policy_prior: s.policy_prior,
            top_k: s.top_k,
            engine: engine_builder(s),
        },
        alpha: s.alpha,
        ..ResolverConfig::default()
    }
}

/// The regret engine of `sog.search.engine`: `None` for the scalar one, a
/// [`TensorEngineBuilder`] on `sog.search.device` for `tensor` (`f64` on the flex CPU backend,
/// `f32` on wgpu and cuda, whose shaders have no `f64`).
pub fn engine_builder(s: &SogSettings) -> Option<Arc<dyn EngineBuilder>> {
    if s.search_engine != "tensor" {
        return None;
    }
    let device = crate::nn::select_device(&s.search_device)
        .expect("Config::sog checked that sog.search.device is available");
    let cpu = match s.search_device.as_str() {
        "cpu" | "flex" => true,
        "default" => crate::nn::compiled_backends().first() == Some(&"flex"),
        _ => false,
    };
    let precision = if cpu { Precision::F64 } else { Precision::F32 };
    Some(Arc::new(TensorEngineBuilder::new(Ctx::new(
        &device, precision,
    ))))
}

/// The Hold'em search settings of a run: `sog.search.s` (or `selfplay.solver_s`) CFR+
/// iterations per search, `alpha`, `max_nodes`.
pub fn holdem_search_config(s: &SogSettings, iterations: usize) -> HoldemSearchConfig {
    let d = HoldemSearchConfig::default();
    HoldemSearchConfig {
        iterations,
        alpha: s.alpha,
        max_nodes: s.max_nodes.unwrap_or(d.max_nodes),
        runout_boards: s.runout_boards.unwrap_or(d.runout_boards),
        ..d
    }
}
